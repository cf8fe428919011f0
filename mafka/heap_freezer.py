"""Keeping Python's full garbage collections proportional to what changed, not to the whole heap.

Why: a broker's heap grows with the partitions it hosts (logs, segments,
indexes, partition and metadata state: ~100 objects a partition, ~10 million
at 100,000 partitions).  CPython's cyclic collector runs a full collection
whenever the objects that survived into the oldest generation since the
last one reach a quarter of those already there, and a full collection
walks every tracked object while holding the GIL.  With 100,000 partitions
being created a broker spent three quarters of its time in them, its
ZooKeeper session thread could not send a heartbeat for seconds (the GIL was
held), and every broker's session expired again and again: the cluster
never settled.  An idle broker pays for them too.

What :class:`HeapFreezer` does: after every full collection it moves the
survivors into the collector's permanent generation (``gc.freeze()``), so
the next full collection walks only what survived since -- the heap's
growth, not the heap.  Reference counting still frees every frozen object
that is not in a reference cycle; frozen objects in a cycle that becomes
garbage (a closed connection, a deleted partition) are freed only by the
periodic whole collection (``mafka.gc.full.collection.interval.ms``:
``gc.unfreeze()``, ``gc.collect()``, ``gc.freeze()``), which bounds that
garbage to what one interval makes.  Instagram's servers freeze their heap
for the same reason (``gc.freeze`` was added to CPython for them).

Every collection's pause is measured (:attr:`HeapFreezer.pauses`), and one
longer than ``slow_pause_s`` is logged: nothing else in the broker runs
during it.

Process-wide (``gc`` is): the broker's entry point starts one
(:mod:`mafka.cli.server_start`); brokers run inside a test process do not.
"""

from __future__ import annotations

import gc
import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CollectionPauses", "HeapFreezer"]

log = logging.getLogger("mafka.gc")


@dataclass(slots=True)
class CollectionPauses:
    """Per generation (0, 1, 2): collections run, seconds paused in them, the longest pause."""

    count: list[int] = field(default_factory=lambda: [0, 0, 0])
    seconds: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])
    longest: list[float] = field(default_factory=lambda: [0.0, 0.0, 0.0])

    def add(self, generation: int, pause_s: float) -> None:
        self.count[generation] += 1
        self.seconds[generation] += pause_s
        self.longest[generation] = max(self.longest[generation], pause_s)


class HeapFreezer:
    """Freezes the heap after each full collection; collects everything every ``full_interval_s``.

    Args:
        clock: ``IReactorTime`` (``callLater``) for the periodic whole collection.
        full_interval_s: Seconds between whole collections; <= 0: never (frozen cyclic garbage stays).
        slow_pause_s: A collection pausing the process this long is logged as a warning.
        timer: Seconds, monotonic (tests inject one).
    """

    def __init__(self, clock: Any, full_interval_s: float, slow_pause_s: float = 1.0,
                 timer: Callable[[], float] = time.perf_counter) -> None:
        self._clock = clock
        self._full_interval_s = full_interval_s
        self._slow_pause_s = slow_pause_s
        self._timer = timer
        self._started_at = 0.0
        self._whole = False
        self._call: Any = None
        self.running = False
        self.pauses = CollectionPauses()
        #: whole collections run (:meth:`collect_everything`), and the objects they found unreachable
        self.whole_collections = 0
        self.whole_collected = 0

    def start(self) -> None:
        """Collects and freezes what is alive now (the loaded broker), then keeps it so."""
        if self.running:
            return
        self.running = True
        gc.callbacks.append(self._on_collection)
        self.collect_everything()

    def stop(self) -> None:
        """Back to Python's own collector: the callback goes and the heap thaws."""
        if not self.running:
            return
        self.running = False
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None
        if self._on_collection in gc.callbacks:
            gc.callbacks.remove(self._on_collection)
        gc.unfreeze()

    def collect_everything(self) -> int:
        """Thaws, collects every generation, freezes the survivors; returns the objects collected."""
        self._whole = True
        try:
            gc.unfreeze()
            collected = gc.collect()
        finally:
            self._whole = False
            gc.freeze()
        self.whole_collections += 1
        self.whole_collected += collected
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None
        if self.running and self._full_interval_s > 0:
            self._call = self._clock.callLater(self._full_interval_s, self.collect_everything)
        return collected

    def _on_collection(self, phase: str, info: dict[str, int]) -> None:
        # Called by CPython around every collection, automatic or explicit, on the thread that
        # triggered it (with the GIL): keep it short and never raise.
        if phase == "start":
            self._started_at = self._timer()
            return
        generation = info.get("generation", 0)
        pause = self._timer() - self._started_at
        self.pauses.add(generation, pause)
        if generation == 2 and not self._whole:
            gc.freeze()  # the survivors of this full collection are not walked again
        if pause >= self._slow_pause_s:
            log.warning("garbage collection (generation %d) paused the process for %.1f s (%d unreachable objects "
                        "found, %d frozen objects)", generation, pause, info.get("collected", 0),
                        gc.get_freeze_count())
