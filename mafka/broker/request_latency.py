"""Request latencies per API, for TP50/TP99 over a sliding window (plain Python, time injected).

Kafka's ``RequestMetrics`` names: ``Produce``, ``FetchConsumer``, ``FetchFollower``
and the other APIs by name.  A latency is the time from the dispatcher
receiving the request to its response being ready — Kafka's TotalTimeMs, long
polls and acks=all waits included (so a fetch that waited ``fetch.max.wait.ms``
for data counts that wait; the slow-node flag therefore looks at Produce).
Memory is bounded: at most ``max_samples`` per API, the oldest dropped first.
"""

from __future__ import annotations

from collections import deque

__all__ = ["LatencyWindow", "RequestLatencies", "SLOW_MIN_SAMPLES", "is_slow"]

#: a TP99 over fewer requests than this is one unlucky request, not a slow node
SLOW_MIN_SAMPLES = 100


def is_slow(p99: float | None, samples: int, threshold_ms: int) -> bool:
    """The slow-node rule: Produce TP99 above ``mafka.slow.node.threshold.ms`` over at least 100 requests."""
    return p99 is not None and samples >= SLOW_MIN_SAMPLES and p99 > threshold_ms


class LatencyWindow:
    """The latencies recorded within the last ``window_ms``."""

    def __init__(self, window_ms: int = 60_000, max_samples: int = 20_000) -> None:
        self.window_ms = window_ms
        self._samples: deque[tuple[int, float]] = deque(maxlen=max_samples)
        self.count = 0

    def record(self, now_ms: int, latency_ms: float) -> None:
        self._samples.append((now_ms, latency_ms))
        self.count += 1

    def samples(self, now_ms: int) -> int:
        """How many latencies the window holds now."""
        self._expire(now_ms)
        return len(self._samples)

    def _expire(self, now_ms: int) -> None:
        samples = self._samples
        while samples and samples[0][0] < now_ms - self.window_ms:
            samples.popleft()

    def percentiles(self, now_ms: int, *qs: float) -> list[float | None]:
        """The ``qs`` quantiles (0–1) of the window's latencies; None each when it is empty."""
        self._expire(now_ms)
        samples = self._samples
        data = sorted(latency for _, latency in samples)
        if not data:
            return [None for _ in qs]
        return [data[min(len(data) - 1, int(q * len(data)))] for q in qs]


class RequestLatencies:
    """One :class:`LatencyWindow` per request name."""

    def __init__(self, window_ms: int = 60_000) -> None:
        self.window_ms = window_ms
        self.windows: dict[str, LatencyWindow] = {}

    def record(self, name: str, now_ms: int, latency_ms: float) -> None:
        window = self.windows.get(name)
        if window is None:
            window = self.windows[name] = LatencyWindow(self.window_ms)
        window.record(now_ms, latency_ms)

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
