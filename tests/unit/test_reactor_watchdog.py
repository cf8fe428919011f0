"""ReactorWatchdog: a stuck reactor's stack is logged while it is stuck, and the stall's length after."""

from __future__ import annotations

import logging

import pytest
from twisted.internet import task

from mafka.reactor_watchdog import ReactorWatchdog


class FakeTime:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def a_slow_handler(dog: ReactorWatchdog) -> str | None:
    return dog.check()  # stands for the watcher looking while this frame holds the reactor


def test_a_stuck_reactor_is_named_once_per_repeat_and_measured_after(caplog: pytest.LogCaptureFixture) -> None:
    clock, now = task.Clock(), FakeTime()
    dog = ReactorWatchdog(clock, threshold_s=2.0, beat_s=0.25, repeat_s=5.0, clock=now)
    dog.start()
    dog._stop.set()
    with caplog.at_level(logging.WARNING, logger="mafka.reactor"):
        now.now += 1.0
        assert dog.check() is None  # 1 s: not a stall
        now.now += 1.5
        stack = a_slow_handler(dog)
        assert stack is not None and "a_slow_handler" in stack
        now.now += 1.0
        assert dog.check() is None  # logged 1 s ago: not again yet
        now.now += 5.0
        assert dog.check() is not None  # still stuck 5 s later: the stack again
        clock.advance(0.25)  # the reactor runs again: the stall's length is logged
    assert dog.stalls == 1 and dog.longest_stall_s == pytest.approx(8.5)
    assert "the reactor has not run for 2.5 s" in caplog.text
    assert "the reactor did not run for 8.5 s" in caplog.text
    now.now += 0.25
    clock.advance(0.25)
    assert dog.stalls == 1 and dog.check() is None  # beating: nothing to report
    dog.stop()
