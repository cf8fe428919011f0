"""A window of recent latencies and their percentiles (plain Python, thread-safe, time passed in).

Used wherever Mafka keeps a Yammer-style histogram over the last minute: the broker's request
times, the controller's leader elections, log flushes, ZooKeeper requests.  A window's samples
are only iterated under its lock (:meth:`LatencyWindow.snapshot` copies them); sorting for
percentiles works on such a copy (:func:`percentiles_of`).
"""

from __future__ import annotations

import threading
from collections import deque
from collections.abc import Sequence

__all__ = ["LatencyWindow", "percentiles_of"]


def percentiles_of(latencies: Sequence[float], *qs: float) -> list[float | None]:
    """The ``qs`` quantiles (0–1) of *latencies* (any order; not changed); None each when empty."""
    data = sorted(latencies)
    if not data:
        return [None for _ in qs]
    return [data[min(len(data) - 1, int(q * len(data)))] for q in qs]


class LatencyWindow:
    """The latencies recorded within the last ``window_ms`` (thread-safe)."""

    def __init__(self, window_ms: int = 60_000, max_samples: int = 20_000) -> None:
        self.window_ms = window_ms
        self._samples: deque[tuple[int, float]] = deque(maxlen=max_samples)
        self._lock = threading.Lock()
        self.count = 0

    def record(self, now_ms: int, latency_ms: float) -> None:
        with self._lock:
            self._samples.append((now_ms, latency_ms))
            self.count += 1

    def samples(self, now_ms: int) -> int:
        """How many latencies the window holds now."""
        with self._lock:
            self._expire(now_ms)
            return len(self._samples)

    def _expire(self, now_ms: int) -> None:
        samples = self._samples
        while samples and samples[0][0] < now_ms - self.window_ms:
            samples.popleft()

    def snapshot(self, now_ms: int) -> list[float]:
        """A copy of the window's latencies now, in recording order."""
        with self._lock:
            self._expire(now_ms)
            return [latency for _, latency in self._samples]

    def percentiles(self, now_ms: int, *qs: float) -> list[float | None]:
        """The ``qs`` quantiles (0–1) of the window's latencies; None each when it is empty."""
        return percentiles_of(self.snapshot(now_ms), *qs)
