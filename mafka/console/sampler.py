"""The console's background sampling: lag history for the group pages' charts, topics' rates.

Every ``interval`` seconds (a daemon thread; :meth:`Sampler.sample` is one pass, and what
the unit tests call):

1. the brokers' Prometheus endpoints are scraped (:mod:`mafka.console.metrics`); the
   latest scrapes serve the brokers page (slow flag, cold dirs);
2. each consumer group's lag per partition is recorded: from the scrapes'
   ``kafka_consumergroup_lag{consumergroup,topic,partition}`` for the groups they report,
   computed from committed and log end offsets (through the admin client) for the others;
3. topics' messages/s: from the difference of ``kafka_server_brokertopicmetrics_messagesin_total``
   between the last two scrapes when the endpoints report it, else of the summed log end
   offsets between the last two samples.

A pass that fails (the cluster down) is logged and the next one runs as usual; history
keeps the last ``keep`` samples of each group (an hour at the default 5 s), and a group not
seen for that long is forgotten.
"""

from __future__ import annotations

import logging
import threading
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from . import metrics as prom
from .cluster import ClusterReader
from .errors import ConsoleError

__all__ = ["Sampler", "LagPoint"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class LagPoint:
    at_ms: int
    source: str  # "metrics" or "offsets"
    lags: dict[tuple[str, int], int]

    @property
    def total(self) -> int:
        return sum(self.lags.values())


class Sampler:
    """See the module docstring.  ``reader`` None: metrics only (a SASL console without
    credentials of its own)."""

    def __init__(self, reader: ClusterReader | None, targets: list[prom.Target], interval: float = 5.0,
                 keep: int = 720, scrape_timeout: float = 2.0,
                 fetch: Callable[[str, float], str] | None = None) -> None:
        self.reader = reader
        self.targets = list(targets)
        self.interval = interval
        self.keep = keep
        self.scrape_timeout = scrape_timeout
        self._fetch = fetch
        self._lock = threading.Lock()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._scrapes: list[prom.Scrape] = []
        self._history: dict[str, deque[LagPoint]] = {}
        self._last_seen: dict[str, int] = {}
        self._passes = 0
        self._totals: deque[tuple[float, str, dict[str, float]]] = deque(maxlen=2)
        self._rates: dict[str, float] = {}

    # -- what the pages read -----------------------------------------------------------

    def scrapes(self) -> list[prom.Scrape]:
        with self._lock:
            return list(self._scrapes)

    def rates(self) -> dict[str, float]:
        with self._lock:
            return dict(self._rates)

    def lag_history(self, group: str) -> list[LagPoint]:
        with self._lock:
            return list(self._history.get(group, ()))

    # -- sampling ------------------------------------------------------------------------

    def sample(self) -> None:
        """One pass (see the module docstring); never raises for a cluster that is down."""
        scrapes = self._scrape()
        now = time.time()
        lags, source_of = self._lags(scrapes)
        totals, kind = self._topic_totals(scrapes)
        with self._lock:
            self._passes += 1
            self._scrapes = scrapes
            at_ms = int(now * 1000)
            for group, per_partition in lags.items():
                history = self._history.setdefault(group, deque(maxlen=self.keep))
                history.append(LagPoint(at_ms, source_of[group], per_partition))
                self._last_seen[group] = self._passes
            for group in [g for g, seen in self._last_seen.items() if self._passes - seen > self.keep]:
                self._history.pop(group, None)
                self._last_seen.pop(group, None)
            if totals is not None:
                if self._totals and self._totals[-1][1] != kind:
                    self._totals.clear()  # the counters changed meaning: no rate across them
                self._totals.append((now, kind, totals))
                self._rates = self._rate()

    def _scrape(self) -> list[prom.Scrape]:
        if not self.targets:
            return []
        if self._fetch is not None:
            return prom.scrape_all(self.targets, self.scrape_timeout, self._fetch)
        return prom.scrape_all(self.targets, self.scrape_timeout)

    def _lags(self, scrapes: list[prom.Scrape]) -> tuple[dict[str, dict[tuple[str, int], int]], dict[str, str]]:
        from_metrics = prom.lag_from(s for s in scrapes if s.error is None)
        lags = dict(from_metrics)
        source = dict.fromkeys(from_metrics, "metrics")
        if self.reader is not None:
            try:
                others = [g for g in self.reader.group_ids() if g not in from_metrics]
                computed = self.reader.group_lags(others)
            except ConsoleError as exc:
                log.info("console sampler: group lag not computed: %s", exc)
                computed = {}
            lags.update(computed)
            source.update(dict.fromkeys(computed, "offsets"))
        return lags, source

    def _topic_totals(self, scrapes: list[prom.Scrape]) -> tuple[dict[str, float] | None, str]:
        counted = prom.messages_in_from(s for s in scrapes if s.error is None)
        if counted is not None:
            return counted, "metrics"
        if self.reader is None:
            return None, "offsets"
        try:
            return {t: float(n) for t, n in self.reader.end_offsets().items()}, "offsets"
        except ConsoleError as exc:
            log.info("console sampler: end offsets not read: %s", exc)
            return None, "offsets"

    def _rate(self) -> dict[str, float]:
        if len(self._totals) < 2:
            return {}
        (t0, _, before), (t1, _, after) = self._totals
        if t1 <= t0:
            return {}
        return {topic: max(0.0, (n - before[topic]) / (t1 - t0)) for topic, n in after.items() if topic in before}

    # -- the thread ----------------------------------------------------------------------

    def _run(self) -> None:
        while not self._stop.is_set():
            started = time.monotonic()
            try:
                self.sample()
            except Exception:  # noqa: BLE001 - the sampler must outlive any one bad pass
                log.exception("console sampler: pass failed")
            self._stop.wait(max(0.1, self.interval - (time.monotonic() - started)))

    def start(self) -> None:
        self._thread = threading.Thread(target=self._run, name="console-sampler", daemon=True)
        self._thread.start()

    def stop(self, timeout: float = 5.0) -> None:
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def lag_json(self, group: str) -> dict[str, Any]:
        """The chart's data: per sample the time, total lag, source, and lag per partition."""
        points = self.lag_history(group)
        note = None
        if self.reader is None and not self.targets:
            note = ("no lag history: the console samples lag with credentials of its own (in --command-config) "
                    "or from the brokers' metrics (--metrics, --cluster-json)")
        return {
            "group": group,
            "interval_s": self.interval,
            "note": note,
            "points": [{"t": p.at_ms, "total": p.total, "source": p.source,
                        "partitions": {f"{t}-{n}": lag for (t, n), lag in sorted(p.lags.items())}}
                       for p in points],
        }
