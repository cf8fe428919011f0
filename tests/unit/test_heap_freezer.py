"""HeapFreezer: full collections walk only what survived since the last one; whole ones free frozen cycles."""

from __future__ import annotations

import gc
import logging
import sys
import weakref
from collections.abc import Iterator

import pytest
from twisted.internet import task

from mafka.heap_freezer import HeapFreezer


class Node:
    def __init__(self) -> None:
        self.other: Node | None = None


def cycle() -> tuple[Node, weakref.ref[Node]]:
    a, b = Node(), Node()
    a.other, b.other = b, a
    return a, weakref.ref(a)


@pytest.fixture
def freezer() -> Iterator[tuple[HeapFreezer, task.Clock]]:
    clock = task.Clock()
    f = HeapFreezer(clock, full_interval_s=600)
    try:
        yield f, clock
    finally:
        f.stop()
        gc.collect()


def test_start_freezes_the_living_heap_and_stop_thaws_it(freezer: tuple[HeapFreezer, task.Clock]) -> None:
    f, _ = freezer
    f.start()
    assert gc.get_freeze_count() > 0 and f.whole_collections == 1
    f.stop()
    assert gc.get_freeze_count() == 0
    assert f._on_collection not in gc.callbacks


def test_a_full_collection_freezes_its_survivors(freezer: tuple[HeapFreezer, task.Clock]) -> None:
    f, _ = freezer
    f.start()
    frozen = gc.get_freeze_count()
    survivors = [Node() for _ in range(1000)]
    gc.collect()  # a full collection, as CPython starts by itself
    assert gc.get_freeze_count() >= frozen + len(survivors)
    assert f.pauses.count[2] >= 1 and f.pauses.seconds[2] >= 0.0
    assert gc.get_objects(generation=2) == []  # nothing left for the next one to walk


def test_frozen_cyclic_garbage_waits_for_the_whole_collection(freezer: tuple[HeapFreezer, task.Clock]) -> None:
    f, clock = freezer
    node, alive = cycle()
    f.start()  # the cycle is alive now: frozen
    del node  # garbage, but frozen: a full collection does not see it
    gc.collect()
    assert alive() is not None
    clock.advance(590)
    assert alive() is not None and f.whole_collections == 1
    clock.advance(10)  # the hour (here 600 s) is up: the next check collects everything
    assert alive() is None
    assert f.whole_collections == 2 and f.whole_collected >= 2


def test_a_heap_grown_by_half_is_collected_whole_at_the_next_check(freezer: tuple[HeapFreezer, task.Clock]) -> None:
    f, clock = freezer
    f.start()
    node, alive = cycle()
    gc.collect()  # the cycle survives a full collection: frozen
    del node
    assert not f.whole_collection_due
    # the heap larger by the due growth (it adapted after start()'s whole collection, see below)
    growth = [Node() for _ in range(int(sys.getallocatedblocks() * f.growth) + 1000)]
    assert f.whole_collection_due and alive() is not None
    clock.advance(10)
    assert alive() is None and f.whole_collections == 2 and not f.whole_collection_due
    del growth


def test_young_cyclic_garbage_is_still_collected(freezer: tuple[HeapFreezer, task.Clock]) -> None:
    f, _ = freezer
    f.start()
    node, alive = cycle()
    del node
    gc.collect(0)
    assert alive() is None


def test_a_long_pause_is_logged(caplog: pytest.LogCaptureFixture) -> None:
    ticks = iter(float(t) for t in range(0, 1000, 3))  # every collection "takes" 3 s
    f = HeapFreezer(task.Clock(), full_interval_s=0, timer=lambda: next(ticks))
    try:
        with caplog.at_level(logging.WARNING, logger="mafka.gc"):
            f.start()
            gc.collect()
    finally:
        f.stop()
    assert "paused the process for 3.0 s" in caplog.text
    assert f.pauses.longest[2] == 3.0
    assert not f.whole_collection_due  # interval 0: only growth makes one due


class Dropped:
    """A type only the census test makes: the census must name it."""

    def __init__(self) -> None:
        self.me = self


def test_the_census_names_the_types_of_frozen_garbage(caplog: pytest.LogCaptureFixture) -> None:
    f = HeapFreezer(task.Clock(), full_interval_s=600, census=True)
    try:
        f.start()
        garbage = [Dropped() for _ in range(500)]
        alive = weakref.ref(garbage[0])
        gc.collect()  # survivors: frozen
        del garbage  # 500 frozen cycles
        with caplog.at_level(logging.INFO, logger="mafka.gc"):
            collected = f.collect_everything()
    finally:
        f.stop()
    assert alive() is None, "the census frees what it counted"
    assert collected >= 500
    assert "500 tests.unit.test_heap_freezer.Dropped" in caplog.text, caplog.text


def test_freezing_says_whether_one_runs(freezer: tuple[HeapFreezer, task.Clock]) -> None:
    from mafka.heap_freezer import freezing

    f, _ = freezer
    assert not freezing()
    f.start()
    assert freezing()
    f.stop()
    assert not freezing()


def test_the_due_growth_doubles_while_whole_collections_find_nothing_and_resets_when_one_finds_much(
    freezer: tuple[HeapFreezer, task.Clock],
) -> None:
    from mafka.heap_freezer import MAX_GROWTH

    f, _ = freezer
    gc.collect()
    f.start()  # finds next to nothing: the next whole collection waits for twice the growth
    assert f.growth == 1.0
    for expected in (2.0, 4.0, MAX_GROWTH, MAX_GROWTH):
        f.collect_everything()
        assert f.growth == expected
    garbage = [Dropped() for _ in range(gc.get_freeze_count() // 4)]
    gc.collect()  # survivors: frozen
    del garbage  # a fifth of the heap is frozen garbage now
    assert f.collect_everything() >= gc.get_freeze_count() // 8
    assert f.growth == 0.5, "back to the initial growth"
