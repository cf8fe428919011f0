"""A plan's execution: pipelined vs batches, completion and failure, cancel, JSON round trip."""

from __future__ import annotations

import json

from mafka.rebalancer.execution import Execution
from mafka.rebalancer.plan import Move


def moves(n: int) -> list[Move]:
    return [Move("t", p, 1, 2, 100, (2, 3), "full") for p in range(n)]


def test_pipelined_starts_the_next_move_as_soon_as_one_finishes():
    ex = Execution.start("p1", moves(4), 0, max_concurrent=2, pipelined=True, origin="auto")
    started = ex.step(set(), {}, 0)
    assert [m.partition for m in started] == [0, 1]
    # partition 0 finished, 1 still reassigning: one slot opens at once
    started = ex.step({("t", 1)}, {("t", 0): (2, 3)}, 1000)
    assert [m.partition for m in started] == [2]
    assert ex.moves[0].state == "done" and ex.moves[0].finished_ms == 1000


def test_batches_wait_for_their_slowest_member():
    ex = Execution.start("p1", moves(4), 0, max_concurrent=2, pipelined=False, origin="auto")
    assert [m.partition for m in ex.step(set(), {}, 0)] == [0, 1]
    assert ex.step({("t", 1)}, {("t", 0): (2, 3)}, 1000) == []
    assert [m.partition for m in ex.step(set(), {("t", 0): (2, 3), ("t", 1): (2, 3)}, 2000)] == [2, 3]


def test_a_move_ending_elsewhere_fails_and_the_plan_ends_done():
    ex = Execution.start("p1", moves(2), 0, max_concurrent=2, pipelined=True, origin="manual")
    ex.step(set(), {}, 0)
    ex.step(set(), {("t", 0): (2, 3), ("t", 1): (1, 3)}, 500)
    assert [m.state for m in ex.moves] == ["done", "failed"]
    assert "not [2, 3]" in ex.moves[1].note
    assert ex.status == "done" and ex.finished
    assert "1 moved, 1 failed" in ex.log[-1][1]


def test_cancel_lets_running_moves_finish_and_starts_none():
    ex = Execution.start("p1", moves(3), 0, max_concurrent=1, pipelined=True, origin="auto")
    ex.step(set(), {}, 0)
    ex.cancel(10)
    assert ex.step({("t", 0)}, {}, 20) == [] and ex.status == "cancelling"
    assert ex.step(set(), {("t", 0): (2, 3)}, 30) == []
    assert [m.state for m in ex.moves] == ["done", "cancelled", "cancelled"] and ex.status == "cancelled"


def test_a_move_not_submitted_is_failed_with_the_reason():
    ex = Execution.start("p1", moves(1), 0, max_concurrent=1, pipelined=True, origin="auto")
    ex.step(set(), {}, 0)
    ex.fail(("t", 0), 5, "INVALID_REPLICA_ASSIGNMENT")
    assert ex.moves[0].state == "failed" and ex.step(set(), {}, 6) == [] and ex.status == "done"


def test_json_round_trip_resumes_where_it_stopped():
    ex = Execution.start("p1", moves(3), 0, max_concurrent=2, pipelined=True, origin="auto", decisions=["why"])
    ex.step(set(), {}, 0)
    again = Execution.from_json(json.loads(json.dumps(ex.to_json())))
    assert again.to_json() == ex.to_json()
    assert [m.partition for m in again.step({("t", 1)}, {("t", 0): (2, 3)}, 100)] == [2]


def test_a_move_between_dirs_is_done_when_its_broker_reports_the_new_dir():
    m = Move("t", 0, 5, 5, 100, (), "dir full", "/d1", "/d2")
    ex = Execution.start("p1", [m], 0, max_concurrent=1, pipelined=True, origin="auto")
    assert ex.step(set(), {("t", 0): (5, 6)}, 0) == [m]
    assert ex.running_dir_moves(5) == [m] and ex.running_dir_moves(6) == []
    ex.step(set(), {("t", 0): (5, 6)}, 10, {(("t", 0), 5): "/d1"})
    assert ex.moves[0].state == "running"
    ex.step(set(), {("t", 0): (5, 6)}, 20, {(("t", 0), 5): "/d2"})
    assert ex.moves[0].state == "done" and ex.status == "done"
    again = Execution.from_json(json.loads(json.dumps(ex.to_json())))
    assert again.moves[0].move == m
