"""mafka.controller.collector: the cyclic garbage collector paused during the controller's bulk work."""

from __future__ import annotations

import gc
from collections.abc import Iterator

import pytest
from twisted.internet.task import Clock

from mafka.controller.collector import CollectorPause


@pytest.fixture(autouse=True)
def collector_on() -> Iterator[None]:
    was = gc.isenabled()
    gc.enable()
    yield
    if was:
        gc.enable()
    else:
        gc.disable()


def test_paused_inside_nested_blocks_and_resumed_after() -> None:
    pause = CollectorPause(Clock())
    with pause.paused():
        assert not gc.isenabled() and pause.active
        with pause.paused():
            assert not gc.isenabled()
        assert not gc.isenabled(), "still inside the outer block"
    assert gc.isenabled() and not pause.active


def test_resumed_when_the_block_raises() -> None:
    pause = CollectorPause(Clock())
    with pytest.raises(RuntimeError), pause.paused():
        raise RuntimeError("boom")
    assert gc.isenabled()


def test_a_collector_paused_by_someone_else_stays_paused() -> None:
    pause = CollectorPause(Clock())
    gc.disable()
    with pause.paused():
        assert not pause.active
    assert not gc.isenabled()


def test_the_pause_ends_after_max_pause_s_even_inside_a_block() -> None:
    clock = Clock()
    pause = CollectorPause(clock, max_pause_s=30)
    with pause.paused():
        clock.advance(29)
        assert not gc.isenabled()
        clock.advance(1)
        assert gc.isenabled() and not pause.active
    assert gc.isenabled()
    assert not clock.getDelayedCalls()


def test_it_stands_aside_while_the_heap_is_frozen() -> None:
    from mafka.heap_freezer import HeapFreezer

    freezer = HeapFreezer(Clock(), full_interval_s=0)
    freezer.start()
    try:
        with CollectorPause(Clock()).paused():
            assert gc.isenabled(), "a frozen heap's full collections walk only its growth"
    finally:
        freezer.stop()
    with CollectorPause(Clock()).paused():
        assert not gc.isenabled()
