"""A hierarchical timing wheel: the near future of one partition's pending deliveries, in memory.

Level 0 has one bucket per millisecond; level *L* buckets span
``size ** L`` ms, and the top level takes whatever is further out.  An entry
sits in the lowest level whose window (``size`` buckets from the current
time) reaches its due time.  Advancing the clock cascades every bucket whose
start has passed one level down, so an entry reaches level 0 — where its due
millisecond is exact — before it expires: nothing is ever handed out early,
and entries due in the same millisecond come out in key order (offset order
for deliveries).  Each level keeps a heap of its occupied bucket numbers, so
advancing costs per occupied bucket, not per millisecond (Kafka's
``TimingWheel`` uses a ``DelayQueue`` of buckets for the same reason).

Plain Python, no clock of its own: the caller says what time it is.
"""

from __future__ import annotations

import heapq
from collections.abc import Hashable
from typing import Generic, TypeVar

__all__ = ["TimingWheel"]

K = TypeVar("K", bound=Hashable)


class TimingWheel(Generic[K]):
    """Entries ``(due_ms, key)``; :meth:`advance` hands out those due, earliest first, then by key.

    Keys must be unique and orderable; :meth:`remove` drops one before it is due.
    """

    def __init__(self, now_ms: int, *, size: int = 256, levels: int = 4) -> None:
        if size < 2 or levels < 1:
            raise ValueError("a wheel needs size >= 2 and levels >= 1")
        self.now_ms = now_ms
        self.size = size
        self._ticks = [size ** level for level in range(levels)]
        #: per level: bucket number → {key: due_ms}
        self._buckets: list[dict[int, dict[K, int]]] = [{} for _ in range(levels)]
        self._heaps: list[list[int]] = [[] for _ in range(levels)]
        #: key → (level, bucket number): where each entry is
        self._where: dict[K, tuple[int, int]] = {}
        #: entries already due when added, handed out by the next advance
        self._ready: dict[K, int] = {}

    def __len__(self) -> int:
        return len(self._where) + len(self._ready)

    def __contains__(self, key: object) -> bool:
        return key in self._where or key in self._ready

    def next_due_ms(self) -> int | None:
        """A time at or before the earliest entry's due time (exact for level 0); None when empty."""
        if self._ready:
            return self.now_ms
        best: int | None = None
        for level, heap in enumerate(self._heaps):
            if heap:
                start = heap[0] * self._ticks[level]
                best = start if best is None else min(best, start)
        return None if best is None else max(best, self.now_ms)

    def add(self, due_ms: int, key: K) -> None:
        """Schedules ``key`` at ``due_ms`` (due now or in the past: handed out by the next advance)."""
        if key in self:
            raise KeyError(f"{key!r} is already scheduled")
        self._place(due_ms, key)

    def _place(self, due_ms: int, key: K) -> None:
        if due_ms <= self.now_ms:
            self._ready[key] = due_ms
            return
        top = len(self._ticks) - 1
        for level, tick in enumerate(self._ticks):
            bucket = due_ms // tick
            if level == top or bucket - self.now_ms // tick < self.size:
                break
        slots = self._buckets[level]
        if bucket not in slots:
            slots[bucket] = {}
            heapq.heappush(self._heaps[level], bucket)
        slots[bucket][key] = due_ms
        self._where[key] = (level, bucket)

    def remove(self, key: K) -> bool:
        """Drops ``key``; False if it is not scheduled."""
        if self._ready.pop(key, None) is not None:
            return True
        where = self._where.pop(key, None)
        if where is None:
            return False
        level, bucket = where
        slot = self._buckets[level][bucket]
        del slot[key]
        # an emptied bucket stays in the heap until its time comes; advance skips it
        return True

    def advance(self, now_ms: int) -> list[tuple[int, K]]:
        """Moves the clock to ``now_ms`` (never back) and returns every entry due by then, in (due, key) order."""
        if now_ms > self.now_ms:
            self.now_ms = now_ms
        for level in range(len(self._ticks) - 1, 0, -1):
            tick, heap, slots = self._ticks[level], self._heaps[level], self._buckets[level]
            while heap and heap[0] * tick <= self.now_ms:
                for key, due in slots.pop(heapq.heappop(heap)).items():
                    del self._where[key]
                    self._place(due, key)
        out = [(due, key) for key, due in self._ready.items()]
        self._ready.clear()
        heap, slots = self._heaps[0], self._buckets[0]
        while heap and heap[0] <= self.now_ms:
            for key, due in slots.pop(heapq.heappop(heap)).items():
                del self._where[key]
                out.append((due, key))
        out.sort()
        return out
