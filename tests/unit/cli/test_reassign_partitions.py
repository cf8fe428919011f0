"""``mafka reassign-partitions``: JSON in and out, throttle arithmetic, argument errors (Kafka 2.8's)."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from mafka.cli import reassign_partitions_common as rpc
from mafka.cli.main import main
from mafka.errors import ErrorCode
from tests.unit.cli.fake_wire import WireFake


def test_reassignment_json_is_kafkas_byte_for_byte() -> None:
    text = rpc.format_reassignment_json({("b", 0): [2, 1], ("a", 10): [3], ("a", 2): [1, 2]})
    assert text == (
        '{"version":1,"partitions":['
        '{"topic":"a","partition":2,"replicas":[1,2],"log_dirs":["any","any"]},'
        '{"topic":"a","partition":10,"replicas":[3],"log_dirs":["any"]},'
        '{"topic":"b","partition":0,"replicas":[2,1],"log_dirs":["any","any"]}]}'
    )
    assert rpc.parse_reassignment_json(text) == {("b", 0): [2, 1], ("a", 10): [3], ("a", 2): [1, 2]}


@pytest.mark.parametrize(
    ("doc", "message"),
    [
        ({"version": 1, "partitions": []}, "Partition reassignment list cannot be empty"),
        (
            {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": []}]},
            "Partition replica list cannot be empty",
        ),
        (
            {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1]}] * 2},
            "Partition reassignment contains duplicate topic partitions: t-0",
        ),
        (
            {"version": 1, "partitions": [{"topic": "t", "partition": 0, "replicas": [1, 1, 2]}]},
            "Partition replica lists may not contain duplicate entries: t-0 contains multiple entries for 1",
        ),
    ],
)
def test_reassignment_json_errors(doc: dict, message: str) -> None:
    with pytest.raises(rpc.CommandError, match=message):
        rpc.parse_reassignment_json(json.dumps(doc))


def test_topics_to_move_json() -> None:
    assert rpc.parse_topics_to_move_json(
        '{"topics":[{"topic":"foo"},{"topic":"bar"}],"version":1}'
    ) == ["foo", "bar"]
    with pytest.raises(rpc.CommandError, match="duplicate entries: foo"):
        rpc.parse_topics_to_move_json('{"topics":[{"topic":"foo"},{"topic":"foo"}],"version":1}')


def test_throttles_as_kafka_computes_them() -> None:
    current = {("t", 0): [1, 2], ("t", 1): [2, 3], ("u", 0): [1]}
    proposed = {("t", 0): [1, 3], ("t", 1): [2, 3], ("u", 0): [2]}
    in_flight = {("t", 1): ([4, 2, 3], [4])}  # an earlier move of t-1 towards 4
    moves = rpc.proposed_move_map(in_flight, proposed, current)
    assert moves["t"][0] == ({1, 2}, {1, 3})
    assert moves["t"][1] == ({2, 3}, {2, 3}), "sources of the running move are kept"
    assert rpc.leader_throttles(moves) == {"t": "0:1,0:2,1:2,1:3", "u": "0:1"}
    assert rpc.follower_throttles(moves) == {"t": "0:3", "u": "0:2"}
    assert rpc.reassigning_brokers(moves) == {1, 2, 3}


def test_exactly_one_action(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["reassign-partitions", "--bootstrap-server", "localhost:1"]) == 1
    assert "exactly one action" in capsys.readouterr().err


def test_generate_needs_its_files(capsys: pytest.CaptureFixture[str]) -> None:
    assert (
        main(
            [
                "reassign-partitions",
                "--bootstrap-server",
                "localhost:1",
                "--generate",
                "--timeout",
                "100",
            ]
        )
        == 1
    )
    out = capsys.readouterr().out
    assert out.startswith("Error: If --generate option is used, command must include both")


# -- against a fake cluster (AdminClient's reassignment calls on the wire) -------------------------


class ReassignCluster(WireFake):
    """Brokers 1–3; the controller was 2 and is 1 now (2 answers NOT_CONTROLLER)."""

    def __init__(self) -> None:
        super().__init__({1: ("b1", 9092), 2: ("b2", 9093), 3: ("b3", 9094)})
        self.controller = 2
        self.topics: dict[str, dict[int, list[int]]] = {"t": {0: [1, 2], 1: [2, 3]}}
        # partition -> (replicas, adding, removing)
        self.moving: dict[tuple[str, int], tuple[list[int], list[int], list[int]]] = {}
        self.configs: list[tuple[int, str, list[tuple[str, int, str | None]], int]] = []

    def _Metadata(self, req: Any, broker: int) -> dict[str, Any]:
        controller, self.controller = self.controller, 1
        names = sorted(self.topics) if req.topics is None else [t.name for t in req.topics]
        return {
            "brokers": [{"node_id": n, "host": h, "port": p, "rack": None} for n, (h, p) in self.brokers.items()],
            "cluster_id": "c", "controller_id": controller,
            "topics": [{"error_code": 0 if t in self.topics else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "name": t,
                        "is_internal": False,
                        "partitions": [{"error_code": 0, "partition_index": p, "leader_id": r[0], "replica_nodes": r,
                                        "isr_nodes": r, "offline_replicas": []}
                                       for p, r in sorted(self.topics.get(t, {}).items())]} for t in names],
        }

    def _ListPartitionReassignments(self, req: Any, broker: int) -> dict[str, Any]:
        if broker != 1:
            return {"error_code": ErrorCode.NOT_CONTROLLER, "error_message": None, "topics": []}
        wanted = None if req.topics is None else {(t.name, p) for t in req.topics for p in t.partition_indexes}
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for (t, p), (replicas, adding, removing) in sorted(self.moving.items()):
            if wanted is None or (t, p) in wanted:
                by_topic.setdefault(t, []).append({"partition_index": p, "replicas": replicas,
                                                   "adding_replicas": adding, "removing_replicas": removing})
        return {"error_code": 0, "error_message": None,
                "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}

    def _AlterPartitionReassignments(self, req: Any, broker: int) -> dict[str, Any]:
        assert broker == 1, "to the controller"
        responses = []
        for t in req.topics:
            parts = []
            for p in t.partitions:
                tp, code = (t.name, p.partition_index), 0
                if tp[1] not in self.topics.get(t.name, {}):
                    code = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                elif p.replicas is None:
                    code = 0 if self.moving.pop(tp, None) else ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
                else:
                    current, target = self.topics[t.name][tp[1]], list(p.replicas)
                    removing = [r for r in current if r not in target]
                    self.moving[tp] = (target + removing, [r for r in target if r not in current], removing)
                parts.append({"partition_index": p.partition_index, "error_code": code, "error_message": None})
            responses.append({"name": t.name, "partitions": parts})
        return {"error_code": 0, "error_message": None, "responses": responses}

    def _IncrementalAlterConfigs(self, req: Any, broker: int) -> dict[str, Any]:
        out = []
        for r in req.resources:
            self.configs.append((r.resource_type, r.resource_name,
                                 [(c.name, c.config_operation, c.value) for c in r.configs], broker))
            out.append({"error_code": 0, "error_message": None, "resource_type": r.resource_type,
                        "resource_name": r.resource_name})
        return {"responses": out}


@pytest.fixture
def fake(monkeypatch: pytest.MonkeyPatch) -> ReassignCluster:
    cluster = ReassignCluster()
    cluster.install(monkeypatch)
    return cluster


def reassign(*argv: str) -> int:
    return main(["reassign-partitions", "--bootstrap-server", "b1:9092", *argv])


def test_execute_with_a_throttle_then_verify_until_complete(fake: ReassignCluster, tmp_path: Path,
                                                           capsys: pytest.CaptureFixture[str]) -> None:
    plan = tmp_path / "plan.json"
    plan.write_text(rpc.format_reassignment_json({("t", 0): [1, 3]}))
    assert reassign("--execute", "--reassignment-json-file", str(plan), "--throttle", "1000") == 0
    assert capsys.readouterr().out.splitlines() == [
        "Current partition replica assignment",
        "",
        '{"version":1,"partitions":[{"topic":"t","partition":0,"replicas":[1,2],"log_dirs":["any","any"]}]}',
        "",
        "Save this to use as the --reassignment-json-file option during rollback",
        rpc.RUN_VERIFY_PERIODICALLY,
        "The inter-broker throttle limit was set to 1000 B/s",
        "Successfully started partition reassignment for t-0",
    ]
    assert fake.moving == {("t", 0): ([1, 3, 2], [3], [2])}
    assert [b for _, b in fake.api_calls(46)] == [2, 1], "NOT_CONTROLLER: asked the new controller"
    (alter, broker), = fake.api_calls(45)
    assert broker == 1 and [(t.name, [(p.partition_index, list(p.replicas)) for p in t.partitions])
                            for t in alter.topics] == [("t", [(0, [1, 3])])]
    topic_ops = [(name, ops) for kind, name, ops, _ in fake.configs if kind == 2]
    assert topic_ops == [("t", [(rpc.TOPIC_LEADER_THROTTLE, 0, "0:1,0:2"), (rpc.TOPIC_FOLLOWER_THROTTLE, 0, "0:3")])]
    broker_ops = [(name, ops, to) for kind, name, ops, to in fake.configs if kind == 4]
    assert broker_ops == [
        (str(b), [(rpc.BROKER_LEADER_THROTTLE, 0, "1000"), (rpc.BROKER_FOLLOWER_THROTTLE, 0, "1000")], b)
        for b in (1, 2, 3)
    ], "each broker's rate is set at that broker"

    assert reassign("--execute", "--reassignment-json-file", str(plan)) == 1
    assert capsys.readouterr().out == rpc.CANNOT_EXECUTE_BECAUSE_OF_EXISTING + "\n"
    assert reassign("--list") == 0
    assert capsys.readouterr().out == "Current partition reassignments:\nt-0: replicas: 1,3,2. adding: 3. removing: 2.\n"

    fake.configs.clear()
    assert reassign("--verify", "--reassignment-json-file", str(plan)) == 0
    out, err = capsys.readouterr()
    assert out == "Status of partition reassignment:\nReassignment of partition t-0 is still in progress.\n"
    assert re.fullmatch(r"reassign-partitions: 0/1 partitions moved \(0%\) in \d+\.\d s\n", err), err
    assert fake.configs == [], "throttles stay while anything moves"

    fake.moving.clear()
    fake.topics["t"][0] = [1, 3]
    assert reassign("--verify", "--reassignment-json-file", str(plan)) == 0
    out, err = capsys.readouterr()
    assert re.fullmatch(r"reassign-partitions: 1/1 partitions moved \(100%\) in \d+\.\d s\n", err), err
    assert out.splitlines() == [
        "Status of partition reassignment:",
        "Reassignment of partition t-0 is complete.",
        "Clearing broker-level throttles on brokers 1,2,3",
        "Clearing topic-level throttles on topic t",
    ]
    assert sorted((kind, name, [op for _, op, _ in ops]) for kind, name, ops, _ in fake.configs) == [
        (2, "t", [1, 1]), (4, "1", [1, 1, 1]), (4, "2", [1, 1, 1]), (4, "3", [1, 1, 1])]


def test_cancel_and_a_failed_partition(fake: ReassignCluster, tmp_path: Path,
                                       capsys: pytest.CaptureFixture[str]) -> None:
    fake.moving[("t", 1)] = ([3, 1, 2], [1], [2])
    plan = tmp_path / "plan.json"
    plan.write_text(rpc.format_reassignment_json({("t", 1): [3, 1]}))
    assert reassign("--cancel", "--reassignment-json-file", str(plan), "--preserve-throttles") == 0
    assert capsys.readouterr().out == "Successfully cancelled partition reassignment for: t-1\n"
    assert fake.moving == {}
    assert reassign("--cancel", "--reassignment-json-file", str(plan), "--preserve-throttles") == 0
    assert capsys.readouterr().out == "None of the specified partition reassignments are active.\n"

    plan.write_text(rpc.format_reassignment_json({("t", 0): [3, 1], ("u", 0): [1]}))
    assert reassign("--execute", "--reassignment-json-file", str(plan)) == 1
    assert capsys.readouterr().out == (
        "Error: org.apache.kafka.common.errors.UnknownTopicOrPartitionException: Topic 'u' not found.\n")


def test_generate_proposes_kafkas_assignment(fake: ReassignCluster, tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    topics = tmp_path / "topics.json"
    topics.write_text('{"topics":[{"topic":"t"}],"version":1}')
    assert reassign("--generate", "--topics-to-move-json-file", str(topics), "--broker-list", "3") == 1
    assert capsys.readouterr().out == "Error: Replication factor: 2 larger than available brokers: 1.\n"
    assert reassign("--generate", "--topics-to-move-json-file", str(topics), "--broker-list", "2,3") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[:3] == ["Current partition replica assignment",
                         rpc.format_reassignment_json({("t", 0): [1, 2], ("t", 1): [2, 3]}), ""]
    assert lines[3] == "Proposed partition reassignment configuration"
    proposed = rpc.parse_reassignment_json(lines[4])
    assert sorted(proposed) == [("t", 0), ("t", 1)]
    assert all(sorted(r) == [2, 3] for r in proposed.values())
    assert fake.api_calls(45) == [], "generate changes nothing"
