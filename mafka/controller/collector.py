"""Pausing Python's cyclic garbage collector while the controller does bulk work.

Why: the controller runs in the broker's process, whose heap grows with the
partitions it hosts (logs, segments, indexes: millions of objects with
thousands of partitions).  The controller's bulk work — a failover, a
broker's failure or controlled shutdown, thousands of new partitions —
allocates an object or more per partition, and enough of them survive to
set off the collector's full collections, each of which walks that whole
heap: on a 3-broker cluster with 4,000 partitions a controller failover
spent more time in them than in its own work (3.3 s against 1.3 s with the
collector paused).  Reference counting still frees everything that is not
in a reference cycle while paused; cycles wait for the next collection.

:class:`CollectorPause` is nesting-safe, restores the collector only if it
was running before (someone else may have paused it), and resumes it after
``max_pause_s`` whatever happens (a block waiting on an unreachable
ZooKeeper must not keep it off for good).

It stands aside while a :class:`mafka.heap_freezer.HeapFreezer` runs (as in
every broker process started by ``mafka server-start``): full collections
then walk only what survived since the last one, not the heap, and a pause
would only let garbage pile up (at 100,000 partitions a 30 s pause left
millions of young objects for the first collection after it).
"""

from __future__ import annotations

import contextlib
import gc
from collections.abc import Iterator
from typing import Any

from mafka.heap_freezer import freezing

__all__ = ["MAX_PAUSE_S", "CollectorPause"]

#: The longest pause: the collector runs again after this many seconds even inside a block.
MAX_PAUSE_S = 30.0


class CollectorPause:
    """Pauses the cyclic garbage collector during :meth:`paused` blocks (see the module doc).

    Args:
        reactor: ``IReactorTime`` for the ``max_pause_s`` guard.
        max_pause_s: The longest pause.
    """

    def __init__(self, reactor: Any, max_pause_s: float = MAX_PAUSE_S) -> None:
        self._reactor = reactor
        self._max_pause_s = max_pause_s
        self._depth = 0
        self._resume_collector = False
        self._guard: Any = None

    @property
    def active(self) -> bool:
        """True while the collector is paused by this object."""
        return self._resume_collector

    @contextlib.contextmanager
    def paused(self) -> Iterator[None]:
        """The collector is off inside the block (and blocks nested in it), back on after."""
        self._depth += 1
        if self._depth == 1 and gc.isenabled() and not freezing():
            gc.disable()
            self._resume_collector = True
            self._guard = self._reactor.callLater(self._max_pause_s, self._resume)
        try:
            yield
        finally:
            self._depth -= 1
            if self._depth == 0:
                self._resume()

    def _resume(self) -> None:
        if self._guard is not None and self._guard.active():
            self._guard.cancel()
        self._guard = None
        if self._resume_collector:
            self._resume_collector = False
            gc.enable()
