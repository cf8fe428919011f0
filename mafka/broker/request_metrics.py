"""Kafka's per-request timings (``kafka.network:type=RequestMetrics``), plain Python, thread-safe.

Each answered request is recorded once, when its response has been written,
with Kafka's five times (milliseconds):

* ``RequestQueueTimeMs`` — from the whole request being read off the socket to
  its handler starting (decoding, and in Mafka a big controller request decoded
  in a worker thread);
* ``LocalTimeMs`` — the handler's own work on the reactor;
* ``RemoteTimeMs`` — waiting on others: acks=all replication, a long poll, a
  coordinator's append (Kafka's purgatory);
* ``ResponseSendTimeMs`` — from the response being ready to its last byte
  handed to the kernel (a fetch's ``sendfile`` regions included);
* ``TotalTimeMs`` — all of it.

Kafka keeps each as a Yammer histogram over a 1028-sample reservoir; here each
is a :class:`~mafka.broker.request_latency.LatencyWindow` of the last minute
holding at most 1028 samples, and ``RequestsPerSec`` counts per request name
and version.  The reactor records; the metrics endpoint reads from its worker
thread (windows are locked, the dictionaries are only ever added to).
"""

from __future__ import annotations

import threading
from collections.abc import Callable

from mafka.latency import LatencyWindow

__all__ = ["RequestMetrics", "TIMES"]

#: Kafka's timer names, in the order :meth:`RequestMetrics.record` takes them
TIMES = ("RequestQueueTimeMs", "LocalTimeMs", "RemoteTimeMs", "ResponseSendTimeMs", "TotalTimeMs")

#: Kafka's histogram reservoir size
RESERVOIR = 1028


class RequestMetrics:
    """Counts and timing windows per request name (``Produce``, ``FetchConsumer``, ``FetchFollower`` …)."""

    def __init__(self, clock_ms: Callable[[], int], window_ms: int = 60_000) -> None:
        self.clock_ms = clock_ms
        self.window_ms = window_ms
        #: (request name, version) → requests answered
        self.requests: dict[tuple[str, int], int] = {}
        #: request name → one window per :data:`TIMES` entry
        self.timers: dict[str, tuple[LatencyWindow, ...]] = {}
        self._lock = threading.Lock()

    def record(self, name: str, version: int, queue_ms: float, local_ms: float, remote_ms: float,
               send_ms: float, total_ms: float) -> None:
        key = (name, version)
        self.requests[key] = self.requests.get(key, 0) + 1
        windows = self.timers.get(name)
        if windows is None:
            with self._lock:
                windows = self.timers.setdefault(
                    name, tuple(LatencyWindow(self.window_ms, RESERVOIR) for _ in TIMES))
        now = self.clock_ms()
        for window, value in zip(windows, (queue_ms, local_ms, remote_ms, send_ms, total_ms), strict=True):
            window.record(now, value)

    def counts(self) -> list[tuple[str, int, int]]:
        """``(name, version, requests)`` for every pair seen (any thread)."""
        return [(name, version, n) for (name, version), n in list(self.requests.items())]

    def quantiles(self, *qs: float) -> list[tuple[str, str, int, list[float | None]]]:
        """``(name, timer, count, [quantile values])`` over the last minute (any thread)."""
        now = self.clock_ms()
        out = []
        for name, windows in list(self.timers.items()):
            for timer, window in zip(TIMES, windows, strict=True):
                out.append((name, timer, window.count, window.percentiles(now, *qs)))
        return out
