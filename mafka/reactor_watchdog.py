"""Naming what blocks the reactor: a thread that logs the reactor thread's stack while it is stuck.

Why: everything a broker does for its clients and peers runs on one reactor
thread; a call that holds it for seconds delays every request and, past
``zookeeper.session.timeout.ms``, makes the group and transaction
coordinators resign.  The coordinators notice such a gap afterwards
("the broker did not run for 8.6 s") but not what caused it; a profiler
shows where time goes on average, not which single call took seconds.

:class:`ReactorWatchdog` has the reactor stamp a heartbeat every
``beat_s``; a daemon thread looks every ``beat_s`` and, once the heartbeat
is older than ``threshold_s``, logs the reactor thread's current stack
(``sys._current_frames``), again every ``repeat_s`` while it stays stuck
(the stacks show what the stall went through), and, when the reactor
beats again, how long it was stuck.  Reading another thread's frames costs
microseconds and needs only the GIL, which a stuck Python call releases every
switch interval; a stall inside C code that holds the GIL (a full garbage
collection) is logged once it ends, by its length alone.
"""

from __future__ import annotations

import logging
import sys
import threading
import time
import traceback
from collections.abc import Callable
from typing import Any

__all__ = ["ReactorWatchdog"]

log = logging.getLogger("mafka.reactor")


class ReactorWatchdog:
    """Logs where the reactor thread is while it has not run for ``threshold_s`` (see the module doc).

    Args:
        reactor: ``IReactorTime``; :meth:`start` must be called on its thread.
        threshold_s: A heartbeat older than this is a stall.
        beat_s: How often the reactor beats and the watcher looks.
        repeat_s: While one stall lasts, its stack is logged again this often.
        clock: Seconds, monotonic (tests inject one).
    """

    def __init__(self, reactor: Any, threshold_s: float = 2.0, beat_s: float = 0.25, repeat_s: float = 5.0,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self._reactor = reactor
        self._threshold_s = threshold_s
        self._beat_s = beat_s
        self._repeat_s = repeat_s
        self._clock = clock
        self._last_beat = clock()
        self._reported_at: float | None = None  # when the current stall was last logged
        self._thread_id: int | None = None
        self._call: Any = None
        self._stop = threading.Event()
        self._watcher: threading.Thread | None = None
        #: stalls seen (logged when they ended) and the longest, in seconds
        self.stalls = 0
        self.longest_stall_s = 0.0

    def start(self) -> None:
        """Starts beating (on the reactor thread, which is the one watched) and the watcher thread."""
        self._thread_id = threading.get_ident()
        self._last_beat = self._clock()
        self._stop.clear()
        self._beat()
        self._watcher = threading.Thread(target=self._watch, name="reactor-watchdog", daemon=True)
        self._watcher.start()

    def stop(self) -> None:
        self._stop.set()
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None

    def _beat(self) -> None:
        now = self._clock()
        gap = now - self._last_beat
        if gap >= self._threshold_s:
            self.stalls += 1
            self.longest_stall_s = max(self.longest_stall_s, gap)
            log.warning("the reactor did not run for %.1f s", gap)
        self._last_beat = now
        self._reported_at = None
        self._call = self._reactor.callLater(self._beat_s, self._beat)

    def _watch(self) -> None:
        while not self._stop.wait(self._beat_s):
            self.check()

    def check(self) -> str | None:
        """One look (the watcher thread's loop body): the stack logged, if the reactor is stuck."""
        now = self._clock()
        stuck_for = now - self._last_beat
        if stuck_for < self._threshold_s:
            return None
        if self._reported_at is not None and now - self._reported_at < self._repeat_s:
            return None
        frame = sys._current_frames().get(self._thread_id) if self._thread_id is not None else None
        if frame is None:
            return None
        stack = "".join(traceback.format_stack(frame, limit=40))
        self._reported_at = now
        log.warning("the reactor has not run for %.1f s; it is in:\n%s", stuck_for, stack)
        return stack
