"""Replication throttles (KIP-73): ``follower.replication.throttled.rate`` over ``…throttled.replicas``.

Plain Python with an injected clock.  A follower fetching a throttled
replica leaves it out of its Fetch requests while the bytes it fetched for
throttled replicas over the last ``replication.quota.window.num`` (11)
windows of ``replication.quota.window.size.seconds`` (1 s) exceed the rate —
Kafka's follower-side ``ReplicationQuotaManager``.  Which replicas are
throttled comes from the topic config ``follower.replication.throttled.replicas``:
``*`` or a list of ``partition:broker`` entries naming the followers.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable

__all__ = ["ReplicationQuota", "is_throttled_replica"]


def is_throttled_replica(setting: str | None, partition: int, broker_id: int) -> bool:
    """Whether *setting* (``*`` or ``p:b,p:b``) names replica (*partition*, *broker_id*)."""
    if not setting:
        return False
    setting = setting.strip()
    if setting == "*":
        return True
    wanted = f"{partition}:{broker_id}"
    return any(entry.strip() == wanted for entry in setting.split(","))


class ReplicationQuota:
    """A byte rate over sliding windows.

    Args:
        now: seconds (monotonic or reactor time).
        rate: the bound in bytes per second, or a callable returning it (None = unlimited).
        window_s, windows: Kafka's ``replication.quota.window.size.seconds`` / ``.window.num``.
    """

    def __init__(
        self, now: Callable[[], float], rate: Callable[[], float | None], *, window_s: float = 1.0, windows: int = 11
    ) -> None:
        self.now = now
        self.rate = rate
        self.window_s = window_s
        self.windows = windows
        self._samples: deque[list[float]] = deque()  # [window start, bytes]

    def _expire(self, now: float) -> None:
        horizon = now - self.window_s * self.windows
        while self._samples and self._samples[0][0] + self.window_s <= horizon:
            self._samples.popleft()

    def record(self, size: int) -> None:
        """Counts *size* fetched bytes of throttled replicas."""
        now = self.now()
        self._expire(now)
        if not self._samples or now >= self._samples[-1][0] + self.window_s:
            self._samples.append([now, 0.0])
        self._samples[-1][1] += size

    def observed_rate(self) -> float:
        """Bytes per second over the retained windows (at least ``windows − 1`` windows long, as Kafka's Rate)."""
        now = self.now()
        self._expire(now)
        if not self._samples:
            return 0.0
        elapsed = max(now - self._samples[0][0], self.window_s * (self.windows - 1))
        return sum(s[1] for s in self._samples) / elapsed

    def exceeded(self) -> bool:
        limit = self.rate()
        return limit is not None and self.observed_rate() > limit
