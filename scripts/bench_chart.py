"""Charts of the benchmarks' result tables: the same figures as a PNG, for every ``bench_*.py``.

Each benchmark that prints a table takes ``--chart PATH.png`` (:func:`add_chart_argument`)
and, after printing, hands its figures to :func:`draw`::

    from bench_chart import Panel, add_chart_argument, draw

    add_chart_argument(parser)
    ...
    if args.chart:
        draw(args.chart, "kcat -C of 1,000,000 x 100 B, 1 partition", [
            Panel("consume records/s", labels, {"Mafka": mafka, "Tansu": tansu}, ratio=("Mafka", "Tansu")),
            Panel("broker CPU-s per million", labels, {"Mafka": mafka_cpu, "Tansu": tansu_cpu}),
        ])

A chart is one figure with one panel per :class:`Panel`, stacked:

* ``bars``: one group per label, one bar per series (Mafka beside its peer); with
  ``ratio=(a, b)`` each group carries ``a ÷ b`` above it (``0.93×``), with
  ``baseline=(series, label)`` the series' value ÷ its value at that label
  (``÷ PLAINTEXT``);
* ``hbars``: the same, lying down, for long labels or many of them;
* ``lines``: one line per series over numeric labels (time, size, clients).

matplotlib is imported by :func:`draw` only (the Agg canvas, no display, no pyplot
state), so a benchmark that is not asked for a chart starts as fast as before.
Run from the repository root as the benchmarks are (``scripts/`` is on ``sys.path``).
"""

from __future__ import annotations

import argparse
import math
import textwrap
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

__all__ = ["Panel", "add_chart_argument", "draw"]

KINDS = ("bars", "hbars", "lines")


@dataclass
class Panel:
    """One table's figures: ``series`` name → one value per label (None: not measured).

    Attributes:
        title: What the values are, with their unit (``consume records/s``).
        labels: The groups (bars) or the x values (lines, numbers).
        series: Values per series, in the order of ``labels``; the legend shows the names.
        kind: ``bars``, ``hbars`` or ``lines``.
        ratio: ``(a, b)``: annotate each group with series ``a`` ÷ series ``b``.
        baseline: ``(series, label)``: annotate each group with that series' value ÷ its value
            at ``label`` (a table's "÷ PLAINTEXT" column); not with ``ratio``.
        xlabel: What the labels are (``clients``), shown under the axis.
        log: A logarithmic value axis (figures spanning decades).
    """

    title: str
    labels: Sequence[Any]
    series: Mapping[str, Sequence[float | None]]
    kind: str = "bars"
    ratio: tuple[str, str] | None = None
    baseline: tuple[str, Any] | None = None
    xlabel: str = ""
    log: bool = False
    colors: Mapping[str, str] = field(default_factory=dict)

    def check(self) -> None:
        """Raises ValueError for a panel that cannot be drawn as asked (a bug in its benchmark)."""
        if self.kind not in KINDS:
            raise ValueError(f"panel {self.title!r}: kind {self.kind!r} is none of {', '.join(KINDS)}")
        if not self.series:
            raise ValueError(f"panel {self.title!r}: no series")
        for name, values in self.series.items():
            if len(values) != len(self.labels):
                raise ValueError(f"panel {self.title!r}: series {name!r} has {len(values)} values "
                                 f"for {len(self.labels)} labels")
        if self.ratio is not None and not set(self.ratio) <= set(self.series):
            raise ValueError(f"panel {self.title!r}: ratio {self.ratio} names a series it does not have")
        if self.baseline is not None:
            if self.ratio is not None:
                raise ValueError(f"panel {self.title!r}: ratio and baseline both given")
            name, label = self.baseline
            if name not in self.series or label not in list(self.labels):
                raise ValueError(f"panel {self.title!r}: baseline {self.baseline} is not one of its bars")


def add_chart_argument(parser: argparse.ArgumentParser) -> None:
    """``--chart PATH.png``: also draw the printed table there."""
    parser.add_argument("--chart", type=Path, metavar="PATH.png",
                        help="also draw the result table as a PNG chart (matplotlib) at PATH.png")


def draw(path: str | Path, title: str, panels: Sequence[Panel], note: str = "") -> Path:
    """Draws ``panels`` one above the other under ``title`` (and ``note`` at the foot) into the PNG ``path``.

    Returns:
        The path written (its directory is created if needed).
    """
    from matplotlib.backends.backend_agg import FigureCanvasAgg
    from matplotlib.figure import Figure

    if not panels:
        raise ValueError("nothing to draw: no panels")
    for p in panels:
        p.check()
    heights = [_height(p) for p in panels]
    width = max(_width(p) for p in panels)
    fig = Figure(figsize=(width, sum(heights) + 0.8 + (0.3 if note else 0.0)), layout="constrained")
    FigureCanvasAgg(fig)
    axes = fig.subplots(len(panels), 1, squeeze=False, height_ratios=heights)[:, 0]
    for ax, panel in zip(axes, panels, strict=True):
        {"bars": _bars, "hbars": _hbars, "lines": _lines}[panel.kind](ax, panel)
        ax.set_title(panel.title, fontsize=10, loc="left")
        if len(panel.series) > 1:
            ax.legend(fontsize=8, frameon=False)
    fig.suptitle(title, fontsize=11)
    if note:
        fig.supxlabel(note, fontsize=7, color="0.35")  # in the layout, under the last panel
    out = Path(path)
    out.parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=110, format="png")
    return out


# ------------------------------------------------------------------ the three kinds


def _values(values: Sequence[float | None]) -> list[float]:
    return [math.nan if v is None else float(v) for v in values]


def _label(text: Any, width: int = 18) -> str:
    if not isinstance(text, str):
        return str(text)
    return textwrap.fill(text, width, break_long_words=False, break_on_hyphens=False)


def _number(v: float) -> str:
    if v >= 10_000:
        return f"{v:,.0f}"
    if v >= 100:
        return f"{v:.0f}"
    return f"{v:.3g}"


def _value_axis(axis: Any) -> None:
    from matplotlib.ticker import FuncFormatter

    axis.set_major_formatter(FuncFormatter(lambda v, _: f"{v:,.0f}" if abs(v) >= 1000 else f"{v:g}"))


def _ratio(panel: Panel, i: int) -> str | None:
    """The annotation of group ``i``: series a ÷ series b, or the value ÷ the baseline's; None if none."""
    if panel.ratio is not None:
        a, b = (panel.series[name][i] for name in panel.ratio)
    elif panel.baseline is not None:
        name, label = panel.baseline
        a, b = panel.series[name][i], panel.series[name][list(panel.labels).index(label)]
    else:
        return None
    if a is None or b is None or b == 0:
        return None
    return f"{a / b:.2f}×"


def _bars(ax: Any, panel: Panel) -> None:
    n = len(panel.series)
    width = 0.8 / n
    xs = list(range(len(panel.labels)))
    for k, (name, values) in enumerate(panel.series.items()):
        offset = (k - (n - 1) / 2) * width
        bars = ax.bar([x + offset for x in xs], _values(values), width, label=name, color=panel.colors.get(name))
        ax.bar_label(bars, labels=["" if v is None else _number(v) for v in values], fontsize=6, padding=1)
    if panel.log:
        ax.set_yscale("log")
    else:
        _value_axis(ax.yaxis)
    ax.set_xticks(xs, [_label(lb) for lb in panel.labels], fontsize=8)
    if panel.xlabel:
        ax.set_xlabel(panel.xlabel, fontsize=8)
    tops = [max((v for v in (panel.series[s][i] for s in panel.series) if v is not None), default=0.0) for i in xs]
    if panel.ratio is not None or panel.baseline is not None:
        if not panel.log:
            ax.set_ylim(top=max(tops, default=1.0) * 1.25 or 1.0)
        for x, top in zip(xs, tops, strict=True):
            text = _ratio(panel, x)
            if text:
                ax.annotate(text, (x, top), xytext=(0, 12), textcoords="offset points", ha="center",
                            fontsize=8, fontweight="bold")
    ax.grid(axis="y", alpha=0.3)


def _hbars(ax: Any, panel: Panel) -> None:
    n = len(panel.series)
    height = 0.8 / n
    ys = list(range(len(panel.labels)))
    for k, (name, values) in enumerate(panel.series.items()):
        offset = (k - (n - 1) / 2) * height
        bars = ax.barh([y + offset for y in ys], _values(values), height, label=name, color=panel.colors.get(name))
        ax.bar_label(bars, labels=["" if v is None else _number(v) for v in values], fontsize=6, padding=2)
    if panel.log:
        ax.set_xscale("log")
    else:
        _value_axis(ax.xaxis)
    ax.set_yticks(ys, [_label(lb, 50) for lb in panel.labels], fontsize=7)
    ax.invert_yaxis()  # the table's first row on top
    if panel.xlabel:
        ax.set_xlabel(panel.xlabel, fontsize=8)
    # room for the value labels at the bars' ends
    ax.set_xlim(right=ax.get_xlim()[1] * (2.0 if panel.log else 1.1))
    if panel.ratio is not None or panel.baseline is not None:
        # the ratio just outside the right edge, one per row
        for y in ys:
            text = _ratio(panel, y)
            if text:
                ax.annotate(text, (1.0, y), xycoords=("axes fraction", "data"), xytext=(4, 0),
                            textcoords="offset points", ha="left", va="center", fontsize=7, fontweight="bold")
    ax.grid(axis="x", alpha=0.3)


def _lines(ax: Any, panel: Panel) -> None:
    xs = [float(x) for x in panel.labels]
    for name, values in panel.series.items():
        ax.plot(xs, _values(values), marker="o", label=name, color=panel.colors.get(name))
    if panel.log:
        ax.set_yscale("log")
    else:
        _value_axis(ax.yaxis)
        ax.set_ylim(bottom=0)
    ax.set_xticks(xs, [_label(x) for x in panel.labels], fontsize=8)
    if panel.xlabel:
        ax.set_xlabel(panel.xlabel, fontsize=8)
    ax.grid(alpha=0.3)


# ------------------------------------------------------------------ sizes (inches)


def _width(p: Panel) -> float:
    if p.kind == "bars":
        return min(16.0, max(6.4, 1.0 + len(p.labels) * (0.5 + 0.45 * len(p.series))))
    return 8.0


def _height(p: Panel) -> float:
    if p.kind == "hbars":
        return max(2.2, 0.9 + len(p.labels) * (0.14 + 0.16 * len(p.series)))
    return 3.2
