"""The reactor thread's idle share: Mafka's ``RequestHandlerAvgIdlePercent``.

Kafka's request handler pool reports the fraction of time its threads sat
idle (one minute's rate, 0–1).  A Mafka broker's request handling all runs on
one reactor thread, so the honest equivalent is the share of wall time that
thread was *not* on a CPU: :meth:`ReactorIdle.sample` runs on the reactor once
a second, reading the thread's own CPU clock (``time.thread_time``, which only
the thread itself can read); the idle share is ``1 − ΔCPU / Δwall`` over the
samples of the last minute.  (Time the reactor spends blocked in a system call
other than its poll counts as idle here, as a blocked Kafka handler thread
counts as busy there — Mafka keeps blocking calls off the reactor.)
"""

from __future__ import annotations

import time
from collections import deque
from collections.abc import Callable

__all__ = ["ReactorIdle"]


class ReactorIdle:
    """Samples of (wall, reactor CPU) seconds; call :meth:`sample` on the reactor thread only."""

    def __init__(self, window_s: float = 60.0, wall: Callable[[], float] = time.monotonic,
                 cpu: Callable[[], float] = time.thread_time) -> None:
        self.window_s = window_s
        self.wall = wall
        self.cpu = cpu
        self._samples: deque[tuple[float, float]] = deque()

    def sample(self) -> None:
        now = self.wall()
        self._samples.append((now, self.cpu()))
        while len(self._samples) > 2 and now - self._samples[1][0] >= self.window_s:
            self._samples.popleft()

    def idle_fraction(self) -> float | None:
        """1 − the reactor's CPU share over the window (None before two samples); any thread."""
        samples = list(self._samples)
        if len(samples) < 2:
            return None
        (w0, c0), (w1, c1) = samples[0], samples[-1]
        if w1 <= w0:
            return None
        return min(1.0, max(0.0, 1.0 - (c1 - c0) / (w1 - w0)))
