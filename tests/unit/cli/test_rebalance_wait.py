"""``mafka rebalance --wait``: follows a plan in ``/mafka/rebalancer/state`` to its end, progress on stderr."""

from __future__ import annotations

import io
import json
import re

import pytest

from mafka.cli import rebalance
from mafka.cli.main import main
from mafka.rebalancer.execution import Execution
from mafka.rebalancer.plan import Move
from tests.unit.cli.fake_zk import FakeSession, FakeZk

MOVES = [Move("a", 0, 1, 3, 100, (3, 2), "broker 1 full"), Move("a", 1, 1, 2, 100, (2, 3), "broker 1 full")]
SUMMARY = re.compile(r"rebalance: (\d+)/(\d+) moves finished \((\d+)%\)(?: in|, stopped after) \d+\.\d s\n")


class Controller:
    """Stands in for the controller's rebalancer: each ``sleep`` is one pass that settles and starts moves."""

    def __init__(self, fake: FakeZk, ex: Execution, outcomes: list[tuple[int, ...]]) -> None:
        self.fake, self.ex, self.now = fake, ex, 1_000
        self.outcomes = outcomes  # the replicas each move ends with, in order
        self.sleeps: list[float] = []
        self.ex.step(set(), {}, self.now)
        self.version = self.fake.call(self.fake.zk.write_rebalancer_state, self._data(), None)

    def _data(self) -> bytes:
        return json.dumps(self.ex.to_json()).encode()

    def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += 1_000
        replicas = {m.tp: self.outcomes[i] for i, m in enumerate(self.ex.moves) if m.state == "running"}
        self.ex.step(set(), replicas, self.now)
        self.version = self.fake.call(self.fake.zk.write_rebalancer_state, self._data(), self.version)


def start(max_concurrent: int = 1) -> Execution:
    return Execution.start("p1", MOVES, 1_000, max_concurrent=max_concurrent, pipelined=True, origin="manual")


def test_wait_follows_the_plan_until_done_and_prints_its_status(capsys: pytest.CaptureFixture[str]) -> None:
    fake = FakeZk()
    controller = Controller(fake, start(), [(3, 2), (2, 3)])
    out = io.StringIO()
    with FakeSession(fake, "zk:2181") as zk:
        assert rebalance.wait_for_plan(zk, "p1", out, poll_s=0.25, sleep=controller.sleep) == 0
    # one move at a time: a pass settles move 0 and starts move 1, the next settles move 1 and ends the plan
    assert controller.sleeps == [0.25, 0.25]
    assert out.getvalue().startswith("Plan p1 (manual, pipelined of 1): done; 2 done\n"), out.getvalue()
    captured = capsys.readouterr()
    assert captured.out == "", "the status goes to the given stream, progress to stderr"
    assert (m := SUMMARY.fullmatch(captured.err)) and m.groups() == ("2", "2", "100"), captured.err


def test_wait_exits_1_when_a_move_failed(capsys: pytest.CaptureFixture[str]) -> None:
    fake = FakeZk()
    controller = Controller(fake, start(max_concurrent=2), [(3, 2), (1, 2)])  # a-1 ended elsewhere
    out = io.StringIO()
    with FakeSession(fake, "zk:2181") as zk:
        assert rebalance.wait_for_plan(zk, "p1", out, sleep=controller.sleep) == 1
    assert "a-1: broker 1 -> 2 (100 bytes): failed" in out.getvalue()
    assert (m := SUMMARY.fullmatch(capsys.readouterr().err)) and m.groups() == ("2", "2", "100")


def test_wait_stops_when_another_plan_replaces_it(capsys: pytest.CaptureFixture[str]) -> None:
    fake = FakeZk()
    controller = Controller(fake, start(), [(3, 2), (2, 3)])

    def replaced(_: float) -> None:
        other = Execution.start("p2", MOVES[:1], 5_000, max_concurrent=1, pipelined=True, origin="auto")
        fake.call(fake.zk.write_rebalancer_state, json.dumps(other.to_json()).encode(), controller.version)

    gone = r"plan p1 is no longer the rebalancer.s plan \(now p2\)"
    with FakeSession(fake, "zk:2181") as zk, pytest.raises(RuntimeError, match=gone):
        rebalance.wait_for_plan(zk, "p1", io.StringIO(), sleep=replaced)
    err = capsys.readouterr().err
    assert (m := SUMMARY.fullmatch(err)) and m.groups() == ("0", "2", "0") and "stopped after" in err


def test_status_wait_on_a_finished_plan_returns_at_once(monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    fake = FakeZk()
    controller = Controller(fake, start(max_concurrent=2), [(3, 2), (2, 3)])
    controller.sleep(0)  # the controller finishes the plan before anyone waits
    fake.install(monkeypatch, rebalance)
    assert main(["rebalance", "--zookeeper", "zk:2181", "--status", "--wait"]) == 0
    captured = capsys.readouterr()
    assert captured.out.startswith("Plan p1 (manual, pipelined of 2): done; 2 done\n")
    assert (m := SUMMARY.fullmatch(captured.err)) and m.groups() == ("2", "2", "100")


def test_wait_only_goes_with_execute_or_status(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["rebalance", "--zookeeper", "zk:2181", "--plan", "--wait"]) == 1
    assert capsys.readouterr() == ("", "Error: --wait goes with --execute or --status\n")
