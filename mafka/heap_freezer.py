"""Keeping Python's full garbage collections proportional to what changed, not to the whole heap.

Why: a broker's heap grows with the partitions it hosts (logs, segments,
indexes, partition and metadata state: ~35 tracked objects a replica, 3.4
million at 100,000 partitions).  CPython's cyclic collector runs a full collection
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
garbage (a closed connection, a ZooKeeper request that was in flight
during a full collection, a deleted partition) are freed only by a whole
collection (``gc.unfreeze()``, ``gc.collect()``, ``gc.freeze()``).  One runs
when the heap has grown by half since the last one (so frozen garbage stays
below half the live heap, and whole collections cost, in all, time
proportional to the heap's growth, as CPython's own rule intends), and
at least every ``mafka.gc.full.collection.interval.ms`` (an hour) for the
garbage of a heap that no longer grows.  The growth that makes one due
adapts to what they find: a whole collection that frees less than 1 % of
the objects it walked doubles it (up to 8: the heap nine times as large),
one that frees more than 10 % sets it back to a half.  The broker's own
code makes next to no cyclic garbage (tests check the paths that run per
request and per ZooKeeper answer: ``tests/cyclic_garbage.py``), and at
100,000 partitions whole collections that found nothing came every minute
while the heap grew, each a pause of seconds.  A whole collection still walks
everything: at 100,000 partitions it pauses a broker for seconds, once an
hour when idle.  Instagram's servers freeze their heap for the same
reason (``gc.freeze`` was added to CPython for them).

Every collection's pause is measured (:attr:`HeapFreezer.pauses`), and one
longer than ``slow_pause_s`` is logged: nothing else in the broker runs
during it.

Process-wide (``gc`` is): the broker's entry point starts one
(:mod:`mafka.cli.server_start`); brokers run inside a test process do not.
:func:`freezing` says whether one runs (the controller's collector pause
then stands aside: a full collection walks only the growth, and pausing
the collector would only let young garbage pile up).

A census of the garbage a whole collection finds (the types of the frozen
objects that became cyclic garbage, the ones worth not making) is logged
when ``MAFKA_GC_CENSUS=1`` is in the environment: it costs a second
collection each time.
"""

from __future__ import annotations

import collections
import gc
import logging
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

__all__ = ["CollectionPauses", "HeapFreezer", "freezing", "garbage_census"]

log = logging.getLogger("mafka.gc")

#: The most the due growth adapts to: a whole collection once the heap is nine times as large.
MAX_GROWTH = 8.0

#: HeapFreezers running in this process (0 or 1 in a broker)
_running = 0


def freezing() -> bool:
    """True while a :class:`HeapFreezer` runs in this process."""
    return _running > 0


def garbage_census() -> collections.Counter[str]:
    """Collects everything, counting the unreachable objects by type (``module.qualname``).

    The garbage is kept for counting (``gc.DEBUG_SAVEALL``) and freed by a second collection.
    """
    previous = gc.get_debug()
    gc.set_debug(previous | gc.DEBUG_SAVEALL)
    try:
        gc.collect()
        counts = collections.Counter(f"{type(o).__module__}.{type(o).__qualname__}" for o in gc.garbage)
        gc.garbage.clear()
    finally:
        gc.set_debug(previous)
    gc.collect()
    return counts


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
    """Freezes the heap after each full collection and collects everything when due (see the module doc).

    Args:
        clock: ``IReactorTime`` (``seconds``, ``callLater``): the checks run on its thread.
        full_interval_s: The longest time between whole collections; <= 0: only on growth.
        growth: A whole collection runs once the heap grew by this share since the last one (at first:
            it adapts, see the module doc).
        check_every_s: How often the reactor looks whether a whole collection is due.
        slow_pause_s: A collection pausing the process this long is logged as a warning.
        timer: Seconds, monotonic, for the pauses (tests inject one).
        census: Log the types of what each whole collection frees (default: ``MAFKA_GC_CENSUS=1``).
    """

    def __init__(self, clock: Any, full_interval_s: float, growth: float = 0.5, check_every_s: float = 10.0,
                 slow_pause_s: float = 1.0, timer: Callable[[], float] = time.perf_counter,
                 census: bool | None = None) -> None:
        self._clock = clock
        self._full_interval_s = full_interval_s
        self._growth = growth
        self._initial_growth = growth
        self._check_every_s = check_every_s
        self._slow_pause_s = slow_pause_s
        self._timer = timer
        self._census = os.environ.get("MAFKA_GC_CENSUS") == "1" if census is None else census
        self._started_at = 0.0
        self._whole = False
        self._blocks_after_whole = 0
        self._last_whole_s = 0.0
        self._call: Any = None
        self.running = False
        self.pauses = CollectionPauses()
        #: whole collections run (:meth:`collect_everything`), and the objects they found unreachable
        self.whole_collections = 0
        self.whole_collected = 0

    def start(self) -> None:
        """Collects and freezes what is alive now (the loaded broker), then keeps it so."""
        global _running
        if self.running:
            return
        self.running = True
        _running += 1
        gc.callbacks.append(self._on_collection)
        self.collect_everything()
        self._call = self._clock.callLater(self._check_every_s, self._check)

    def stop(self) -> None:
        """Back to Python's own collector: the callback goes and the heap thaws."""
        global _running
        if not self.running:
            return
        self.running = False
        _running -= 1
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None
        if self._on_collection in gc.callbacks:
            gc.callbacks.remove(self._on_collection)
        gc.unfreeze()

    @property
    def whole_collection_due(self) -> bool:
        """The heap grew by ``growth``, or ``full_interval_s`` passed, since the last whole collection.

        The heap's size is the memory blocks Python's allocator holds (``sys.getallocatedblocks``: it
        counts arenas, not objects): frozen garbage, the thing a whole collection frees, is part of
        it, and counting frozen objects (``gc.get_freeze_count``) walks them all.
        """
        if sys.getallocatedblocks() >= self._blocks_after_whole * (1 + self._growth):
            return True
        return self._full_interval_s > 0 and self._clock.seconds() - self._last_whole_s >= self._full_interval_s

    def collect_everything(self) -> int:
        """Thaws, collects every generation, freezes the survivors; returns the objects collected."""
        self._whole = True
        try:
            gc.unfreeze()
            if self._census:
                started = self._timer()
                counts = garbage_census()
                collected = counts.total()
                log.info("whole collection: %d unreachable objects in %.2f s (census, collected twice): %s",
                         collected, self._timer() - started,
                         ", ".join(f"{n} {t}" for t, n in counts.most_common(15)))
            else:
                collected = gc.collect()
        finally:
            self._whole = False
            gc.freeze()
        self._blocks_after_whole = sys.getallocatedblocks()
        self._last_whole_s = self._clock.seconds()
        self.whole_collections += 1
        self.whole_collected += collected
        walked = collected + gc.get_freeze_count()  # once per whole collection: a walk in C
        if collected < 0.01 * walked:
            self._growth = min(self._growth * 2, MAX_GROWTH)
        elif collected > 0.1 * walked:
            self._growth = self._initial_growth
        return collected

    @property
    def growth(self) -> float:
        """The growth that makes the next whole collection due (it adapts)."""
        return self._growth

    def _check(self) -> None:
        self._call = None
        if not self.running:
            return
        try:
            if self.whole_collection_due:
                self.collect_everything()
        finally:
            self._call = self._clock.callLater(self._check_every_s, self._check)

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
            log.warning("garbage collection (generation %d%s) paused the process for %.1f s (%d unreachable "
                        "objects found)", generation, ", everything" if self._whole else "", pause,
                        info.get("collected", 0))
