"""mafka.background: supervised periodic passes (a ``task.Clock``; thread passes run synchronously)."""

from __future__ import annotations

import logging

import pytest
from prometheus_client import CollectorRegistry, generate_latest
from twisted.internet import defer, task

from mafka.background import FAILURES_METRIC, BackgroundPasses


class Boom(Exception):
    pass


def passes(clock: task.Clock | None = None, **kw) -> tuple[task.Clock, BackgroundPasses]:
    clock = clock or task.Clock()
    return clock, BackgroundPasses(clock, run_in_thread=kw.pop("run_in_thread", defer.maybeDeferred), **kw)


def test_an_exception_is_logged_with_its_traceback_counted_and_the_pass_runs_again(caplog) -> None:
    clock, bg = passes()
    calls = []

    def shrink(arg: str) -> None:
        calls.append((clock.seconds(), arg))
        raise Boom("one bad partition")

    p = bg.every("isr-shrink", 2.0, shrink, "x")
    with caplog.at_level(logging.ERROR, logger="mafka.background"):
        for _ in range(3):
            clock.advance(2)
    assert calls == [(2.0, "x"), (4.0, "x"), (6.0, "x")]
    assert (p.runs, p.failures) == (3, 3)
    assert bg.failure_count("isr-shrink") == 3
    failures = [r for r in caplog.records if "isr-shrink" in r.getMessage()]
    assert len(failures) == 3
    assert failures[0].exc_info is not None and failures[0].exc_info[0] is Boom
    assert "one bad partition" in caplog.text and "in shrink" in caplog.text  # the traceback's frame


@pytest.mark.parametrize("kind", ["deferred", "coroutine", "thread"])
def test_a_failed_deferred_coroutine_or_thread_pass_is_survived(kind: str, caplog) -> None:
    clock, bg = passes()
    runs = []

    def work() -> None:
        runs.append(clock.seconds())
        raise Boom(kind)

    if kind == "deferred":
        bg.every("p", 1.0, lambda: defer.maybeDeferred(work))
    elif kind == "coroutine":
        async def coro() -> None:
            await defer.succeed(None)
            work()

        bg.every("p", 1.0, coro)
    else:
        bg.every_in_thread("p", 1.0, work)
    with caplog.at_level(logging.ERROR, logger="mafka.background"):
        clock.advance(1)
        clock.advance(1)
    assert runs == [1.0, 2.0]
    assert bg.failure_count("p") == 2
    assert caplog.records[0].exc_info[0] is Boom


def test_a_thread_pass_gets_the_snapshot_taken_on_the_reactor_at_each_run() -> None:
    clock = task.Clock()
    handed: list = []

    def run_in_thread(fn, *args):
        handed.append(args)
        return defer.maybeDeferred(fn, *args)

    _, bg = passes(clock, run_in_thread=run_in_thread)
    state = {"hw": 1}
    seen = []
    bg.every_in_thread("hw-checkpoint", 5.0, lambda hws: seen.append(hws),
                       snapshot=lambda: (dict(state),))
    clock.advance(5)
    state["hw"] = 2
    clock.advance(5)
    assert seen == [{"hw": 1}, {"hw": 2}]
    assert handed == [({"hw": 1},), ({"hw": 2},)]


def test_a_run_still_in_progress_is_not_started_again_and_the_next_run_is_on_the_next_boundary() -> None:
    clock, bg = passes()
    pending: list[defer.Deferred] = []

    def slow() -> defer.Deferred:
        d: defer.Deferred = defer.Deferred()
        pending.append(d)
        return d

    p = bg.every("monitor", 10.0, slow)
    clock.advance(10)
    assert len(pending) == 1 and p.in_progress
    clock.advance(25)  # 35 s: two boundaries passed while it ran
    assert len(pending) == 1
    pending[0].errback(Boom("zookeeper went away"))
    assert bg.failure_count("monitor") == 1 and not p.in_progress
    clock.advance(4.9)  # 39.9 s
    assert len(pending) == 1
    clock.advance(0.1)  # 40 s: the next boundary of the 10 s cadence
    assert len(pending) == 2
    pending[1].callback(None)
    clock.advance(10)
    assert len(pending) == 3 and bg.failure_count("monitor") == 1


def test_the_first_run_may_come_after_its_own_delay() -> None:
    clock, bg = passes()
    runs = []
    bg.every("auto-rebalance", 300.0, lambda: runs.append(clock.seconds()), first_delay_s=5)
    clock.advance(5)
    clock.advance(299)
    clock.advance(1)
    assert runs == [5.0, 305.0]


def test_stop_cancels_the_next_run_and_waits_for_the_one_in_progress() -> None:
    clock, bg = passes()
    pending: list[defer.Deferred] = []
    p = bg.every("rebalancer", 1.0, lambda: pending.append(defer.Deferred()) or pending[-1])
    clock.advance(1)
    stopped = p.stop()
    assert not stopped.called and not p.running and "rebalancer" not in bg.passes
    pending[0].errback(Boom("late"))  # still counted: it ran
    assert stopped.called and bg.failure_count("rebalancer") == 1
    clock.advance(10)
    assert len(pending) == 1
    assert p.stop().called  # idempotent

    idle = bg.every("idle", 1.0, lambda: None)
    assert idle.stop().called  # nothing in progress: at once
    clock.advance(5)
    assert idle.runs == 0


def test_stop_all_and_a_name_is_free_again_once_its_pass_stopped() -> None:
    clock, bg = passes()
    bg.every("a", 1.0, lambda: None)
    with pytest.raises(ValueError):
        bg.every("a", 1.0, lambda: None)
    bg.every("b", 1.0, lambda: None)
    assert bg.stop_all().called
    assert bg.passes == {}
    again = bg.every("a", 1.0, lambda: None)
    clock.advance(1)
    assert again.runs == 1
    with pytest.raises(ValueError):
        bg.every("bad", 0, lambda: None)


def test_a_pass_that_stops_itself_is_not_rescheduled() -> None:
    clock, bg = passes()
    p = None

    def once() -> None:
        p.stop()

    p = bg.every("once", 1.0, once)
    clock.advance(1)
    clock.advance(5)
    assert p.runs == 1


def test_base_exceptions_are_not_swallowed() -> None:
    clock, bg = passes()

    def exit_now() -> None:
        raise SystemExit(70)

    bg.every("crash-hook", 1.0, exit_now)
    with pytest.raises(SystemExit):
        clock.advance(1)


def test_the_failure_counter_is_per_instance_and_exposed_with_its_pass_label() -> None:
    clock = task.Clock()
    first, second = BackgroundPasses(clock), BackgroundPasses(clock)  # two brokers in one process
    first.every("group-coordinator-tick", 0.1, lambda: 1 / 0)
    second.every("group-coordinator-tick", 0.1, lambda: None)
    second.every("delayed-delivery", 0.02, lambda: None)
    clock.advance(0.1)
    assert first.failure_count("group-coordinator-tick") == 1
    assert second.failure_count("group-coordinator-tick") == 0
    registries = []
    for bg in (first, second):
        registry = CollectorRegistry(auto_describe=False)
        registry.register(bg.failures)  # no duplicate-registration error across brokers
        registries.append(generate_latest(registry).decode())
    assert f'{FAILURES_METRIC}{{pass="group-coordinator-tick"}} 1.0' in registries[0]
    assert f'{FAILURES_METRIC}{{pass="delayed-delivery"}} 0.0' in registries[1]  # exposed from the start


def test_a_short_interval_on_todays_clock_runs_once_per_interval() -> None:
    """At seconds-since-1970 a 20 ms boundary is not exact in floats: a run that lands on its own
    boundary must not be taken for one before the next (that ran it again at once, and for ever
    on a clock that does not move)."""
    clock = task.Clock()
    clock.advance(1_700_000_000)
    runs: list[float] = []
    bg = BackgroundPasses(clock)

    def run() -> None:
        runs.append(clock.seconds())
        if len(runs) > 100:  # the bug: runs again at once; stop it so the test fails instead of hanging
            bg.passes["short"].stop()

    bg.every("short", 0.02, run, first_delay_s=0)
    clock.advance(0)
    for _ in range(50):
        clock.advance(0.02)
    assert len(runs) == 51
