"""Request latencies per API, for TP50/TP99 over a sliding window (plain Python, time injected).

Kafka's ``RequestMetrics`` names: ``Produce``, ``FetchConsumer``, ``FetchFollower``
and the other APIs by name.  A latency is the time from the dispatcher
receiving the request to its response being ready — Kafka's TotalTimeMs, long
polls and acks=all waits included (so a fetch that waited ``fetch.max.wait.ms``
for data counts that wait; the slow-node flag therefore looks at Produce).
Memory is bounded: at most ``max_samples`` per API, the oldest dropped first.

Thread-safe: the reactor records request latencies, the cold-read pool
threads record ``read:<dir>`` ones, and readers may be anywhere; a window's
samples are only ever iterated under its lock (:meth:`LatencyWindow.snapshot`
copies them), and the sorting for percentiles works on such a copy
(:func:`percentiles_of`) — e.g. the monitor copies on the reactor and
computes in a worker thread.
"""

from __future__ import annotations

import threading

from mafka.latency import LatencyWindow, percentiles_of

__all__ = ["LatencyWindow", "RequestLatencies", "SLOW_MIN_SAMPLES", "is_slow", "percentiles_of"]

#: a TP99 over fewer requests than this is one unlucky request, not a slow node
SLOW_MIN_SAMPLES = 100


def is_slow(p99: float | None, samples: int, threshold_ms: int) -> bool:
    """The slow-node rule: Produce TP99 above ``mafka.slow.node.threshold.ms`` over at least 100 requests."""
    return p99 is not None and samples >= SLOW_MIN_SAMPLES and p99 > threshold_ms


class RequestLatencies:
    """One :class:`LatencyWindow` per request name."""

    def __init__(self, window_ms: int = 60_000) -> None:
        self.window_ms = window_ms
        self.windows: dict[str, LatencyWindow] = {}
        self._lock = threading.Lock()

    def record(self, name: str, now_ms: int, latency_ms: float) -> None:
        window = self.windows.get(name)
        if window is None:
            with self._lock:  # two threads' first samples of one name: one window
                window = self.windows.get(name)
                if window is None:
                    window = self.windows[name] = LatencyWindow(self.window_ms)
        window.record(now_ms, latency_ms)

    def snapshot(self, name: str, now_ms: int) -> list[float]:
        """A copy of ``name``'s latencies in the window now (empty if none were recorded)."""
        window = self.windows.get(name)
        return window.snapshot(now_ms) if window is not None else []

    def percentiles(self, name: str, now_ms: int, *qs: float) -> list[float | None]:
        window = self.windows.get(name)
        return window.percentiles(now_ms, *qs) if window is not None else [None for _ in qs]

    def samples(self, name: str, now_ms: int) -> int:
        window = self.windows.get(name)
        return window.samples(now_ms) if window is not None else 0


def request_name(api_name: str, api_key: int, body: object) -> str:
    """Kafka's metric name of a request: Fetch splits into FetchConsumer and FetchFollower."""
    if api_key == 1:
        return "FetchFollower" if getattr(body, "replica_id", -1) >= 0 else "FetchConsumer"
    return api_name
