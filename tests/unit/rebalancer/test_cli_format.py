"""``mafka rebalance`` output: plans and status name every move, its state and the decisions."""

from __future__ import annotations

import io

from mafka.cli.rebalance import format_plan, format_status
from mafka.rebalancer.execution import Execution
from mafka.rebalancer.plan import Move, Plan


def test_plan_and_status_show_broker_and_dir_moves_with_reasons():
    moves = [Move("a", 0, 1, 3, 2048, (3, 2), "broker 1 full"), Move("b", 1, 2, 2, 10, (), "dir full", "/x", "/y")]
    plan = Plan(moves, ["broker 1 is at 90.0% of its disk, above 80%"], {1: 0.9, 2: 0.3}, {1: 0.7, 2: 0.3})
    out = io.StringIO()
    format_plan(plan, ["the report of broker 3 is stale or malformed: ignored"], out)
    text = out.getvalue()
    assert "Ignored: the report of broker 3" in text and "broker 1: 90.0% -> 70.0%" in text
    assert "a-0: broker 1 -> 3, 2048 bytes, replicas [3, 2]" in text
    assert "b-1: broker 2 log dir /x -> /y, 10 bytes" in text and "above 80%" in text
    ex = Execution.start("p9", moves, 1_000, max_concurrent=2, pipelined=False, origin="manual")
    ex.step(set(), {}, 2_000)
    ex.step(set(), {("a", 0): (3, 2), ("b", 1): (2,)}, 5_000, {(("b", 1), 2): "/y"})
    out = io.StringIO()
    format_status(ex, out)
    text = out.getvalue()
    assert text.startswith("Plan p9 (manual, batches of 2): done; 2 done")
    assert "a-0: broker 1 -> 3 (2048 bytes): done in 3.0 s" in text
    assert "moved on broker 2 from /x to /y" in text
