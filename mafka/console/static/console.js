// The Mafka console's only script (served from the package; the page's CSP allows no other).
// It draws the group page's lag-over-time chart as SVG from the JSON at the chart's
// data-lag-url, refreshing it at the sampling interval, and submits a form when a select
// marked data-autosubmit changes.  Everything shown comes from the JSON and is put in the
// page with textContent and SVG attributes only: never as HTML.
"use strict";

(function () {
  var SVG = "http://www.w3.org/2000/svg";
  var COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f"];
  var PAD = { left: 56, right: 230, top: 12, bottom: 28 };
  var LABEL = 30;  // legend labels longer than this are cut (the full name is the tooltip)

  function el(name, attrs, parent) {
    var node = document.createElementNS(SVG, name);
    Object.keys(attrs).forEach(function (k) { node.setAttribute(k, String(attrs[k])); });
    if (parent) { parent.appendChild(node); }
    return node;
  }

  function text(parent, x, y, content, cls) {
    var node = el("text", { x: x, y: y, "class": cls || "" }, parent);
    node.textContent = content;
    return node;
  }

  function clock(ms) {
    var d = new Date(ms);
    function two(n) { return (n < 10 ? "0" : "") + n; }
    return two(d.getHours()) + ":" + two(d.getMinutes()) + ":" + two(d.getSeconds());
  }

  function draw(figure, svg, data) {
    while (svg.firstChild) { svg.removeChild(svg.firstChild); }
    var points = Array.isArray(data.points) ? data.points : [];
    var caption = document.getElementById("lag-caption");
    var width = svg.viewBox.baseVal.width || 800;
    var height = svg.viewBox.baseVal.height || 260;
    if (points.length === 0) {
      if (caption) { caption.textContent = typeof data.note === "string" && data.note ? data.note : "no samples yet"; }
      figure.setAttribute("data-samples", "0");
      return;
    }
    var t0 = points[0].t;
    var t1 = points[points.length - 1].t;
    var span = Math.max(1, t1 - t0);
    var top = 1;
    points.forEach(function (p) { top = Math.max(top, p.total); });
    var plotW = width - PAD.left - PAD.right;
    var plotH = height - PAD.top - PAD.bottom;
    function x(t) { return PAD.left + plotW * (t - t0) / span; }
    function y(v) { return PAD.top + plotH * (1 - v / top); }

    el("line", { x1: PAD.left, y1: PAD.top, x2: PAD.left, y2: PAD.top + plotH, "class": "axis" }, svg);
    el("line", { x1: PAD.left, y1: PAD.top + plotH, x2: PAD.left + plotW, y2: PAD.top + plotH, "class": "axis" }, svg);
    text(svg, PAD.left - 6, y(top) + 4, String(top), "tick y");
    text(svg, PAD.left - 6, y(0) + 4, "0", "tick y");
    text(svg, PAD.left, height - 8, clock(t0), "tick x");
    text(svg, PAD.left + plotW, height - 8, clock(t1), "tick x end");

    // The partitions with the largest latest lag get their own lines (at most 7), under the total.
    var last = points[points.length - 1].partitions || {};
    var names = Object.keys(last).sort(function (a, b) { return last[b] - last[a]; }).slice(0, COLORS.length - 1);
    var series = [{ name: "total", value: function (p) { return p.total; }, color: COLORS[0], cls: "total" }];
    names.forEach(function (name, i) {
      series.push({
        name: name,
        value: function (p) { return (p.partitions && typeof p.partitions[name] === "number") ? p.partitions[name] : 0; },
        color: COLORS[i + 1],
        cls: "partition"
      });
    });
    series.slice().reverse().forEach(function (s) {
      var coords = points.map(function (p) { return x(p.t).toFixed(1) + "," + y(s.value(p)).toFixed(1); });
      el("polyline", { points: coords.join(" "), stroke: s.color, fill: "none", "class": "series " + s.cls }, svg);
    });
    series.forEach(function (s, i) {
      var ly = PAD.top + 14 + i * 16;
      el("rect", { x: width - PAD.right + 10, y: ly - 9, width: 10, height: 10, fill: s.color }, svg);
      var name = s.name.length > LABEL ? s.name.slice(0, LABEL - 1) + "\u2026" : s.name;
      var label = text(svg, width - PAD.right + 26, ly, name + " " + s.value(points[points.length - 1]), "legend");
      el("title", {}, label).textContent = s.name;
    });
    var latest = points[points.length - 1];
    figure.setAttribute("data-samples", String(points.length));
    figure.setAttribute("data-latest-total", String(latest.total));
    if (caption) {
      caption.textContent = "total lag " + latest.total + " at " + clock(latest.t) + " (" + points.length +
        " samples, from " + (latest.source === "metrics" ? "the brokers' metrics" : "committed and end offsets") + ")";
    }
  }

  function chart(figure) {
    var svg = figure.querySelector("svg");
    var url = figure.getAttribute("data-lag-url");
    if (!svg || !url) { return; }
    var every = 5000;
    function refresh() {
      fetch(url, { credentials: "same-origin", headers: { "Accept": "application/json" } })
        .then(function (r) { if (!r.ok) { throw new Error("HTTP " + r.status); } return r.json(); })
        .then(function (data) {
          if (typeof data.interval_s === "number" && data.interval_s > 0) { every = Math.max(1000, data.interval_s * 1000); }
          draw(figure, svg, data);
        })
        .catch(function (err) {
          var caption = document.getElementById("lag-caption");
          if (caption) { caption.textContent = "lag history unavailable: " + err.message; }
        })
        .then(function () { window.setTimeout(refresh, every); });
    }
    refresh();
  }

  document.addEventListener("DOMContentLoaded", function () {
    var figure = document.getElementById("lag-chart");
    if (figure) { chart(figure); }
    Array.prototype.forEach.call(document.querySelectorAll("select[data-autosubmit]"), function (select) {
      select.addEventListener("change", function () { if (select.form) { select.form.submit(); } });
    });
  });
})();
