"""``mafka preferred-replica-election``: Kafka 2.8's deprecated tool, both forms (in-memory ZooKeeper, fake wire)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from mafka.cli import preferred_replica_election as pre
from mafka.cli.main import main
from mafka.coordination.znodes import PreferredReplicaElectionZNode
from mafka.errors import ErrorCode
from tests.unit.cli.fake_zk import FakeZk
from tests.unit.cli.test_leader_election import ElectionCluster

DEPRECATED = "This tool is deprecated. Please use kafka-leader-election tool. Tracking issue: KAFKA-8405"
ZK_WARNING = [
    "Warning: --zookeeper is deprecated and will be removed in a future version of Kafka.",
    "Use --bootstrap-server instead to specify a broker to connect to.",
]


@pytest.fixture
def zk(monkeypatch: pytest.MonkeyPatch) -> FakeZk:
    fake = FakeZk()
    for b in (1, 2, 3):
        fake.add_broker(b)
    fake.add_topic("t", {0: [1, 2], 1: [2, 3], 2: [3, 1]})
    fake.add_topic("u", {0: [2]})
    fake.install(monkeypatch, pre)
    return fake


def elect(*argv: str) -> int:
    return main(["preferred-replica-election", *argv])


def json_file(tmp_path: Path, partitions: list[tuple[str, int]]) -> str:
    path = tmp_path / "election.json"
    path.write_text(json.dumps({"partitions": [{"topic": t, "partition": p} for t, p in partitions]}))
    return str(path)


def pending(zk: FakeZk) -> list[dict] | None:
    data = zk.get(PreferredReplicaElectionZNode.PATH)
    return None if data is None else json.loads(data)["partitions"]


@pytest.mark.parametrize("argv", [(), ("--zookeeper", "zk:1", "--bootstrap-server", "b:1")])
def test_exactly_one_of_bootstrap_server_or_zookeeper(argv: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    assert elect(*argv) == 1
    assert capsys.readouterr() == (
        DEPRECATED + "\n", "Exactly one of '[bootstrap-server]' or '[zookeeper]' must be provided\n")


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("not json", "kafka.admin.AdminOperationException: Preferred replica election data is empty"),
        ('{"version":1}', "kafka.admin.AdminOperationException: Preferred replica election data is empty"),
        ('{"partitions":[{"topic":"t","partition":0},{"topic":"t","partition":0}]}',
         "kafka.admin.AdminOperationException: Preferred replica election data contains duplicate partitions: t-0"),
        ('{"partitions":[{"topic":"t"}]}',
         "com.fasterxml.jackson.databind.JsonMappingException: No such field exists: `partition`"),
    ],
)
def test_json_file_errors(zk: FakeZk, tmp_path: Path, text: str, message: str,
                          capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "bad.json"
    path.write_text(text)
    assert elect("--zookeeper", "zk:2181", "--path-to-json-file", str(path)) == 1
    assert capsys.readouterr() == (DEPRECATED + "\n", message + "\n")
    assert pending(zk) is None


def test_scala_set_strings() -> None:
    assert pre.scala_set([]) == "Set()"
    assert pre.scala_set([("t", 1), ("a", 0)]) == "Set(a-0, t-1)"
    assert pre.scala_set([("t", p) for p in range(5)]) == "HashSet(t-0, t-1, t-2, t-3, t-4)"


def test_zookeeper_form_writes_the_election_znode(zk: FakeZk, tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    f = json_file(tmp_path, [("t", 2), ("t", 9), ("u", 0), ("gone", 0)])
    assert elect("--zookeeper", "zk:2181/chroot", "--path-to-json-file", f) == 0
    assert capsys.readouterr().out.splitlines() == [
        DEPRECATED, *ZK_WARNING,
        "Created preferred replica election path with t-2,u-0",
        "Successfully started preferred replica election for partitions Set(t-2, u-0)",
        "Skipping preferred replica leader election for partition gone-0 since it doesn't exist.",
        "Skipping preferred replica leader election for partition t-9 since it doesn't exist.",
    ]
    assert zk.connects == ["zk:2181/chroot"]
    assert pending(zk) == [{"topic": "t", "partition": 2}, {"topic": "u", "partition": 0}]


def test_zookeeper_form_without_a_file_elects_every_partition(zk: FakeZk, capsys: pytest.CaptureFixture[str]) -> None:
    assert elect("--zookeeper", "zk:2181") == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[3:] == [
        "Created preferred replica election path with t-0,t-1,t-2,u-0",
        "Successfully started preferred replica election for partitions Set(t-0, t-1, t-2, u-0)",
    ]
    assert [(p["topic"], p["partition"]) for p in pending(zk) or []] == [("t", 0), ("t", 1), ("t", 2), ("u", 0)]


def test_zookeeper_form_refuses_while_an_election_is_pending(zk: FakeZk, capsys: pytest.CaptureFixture[str]) -> None:
    zk.call(zk.zk.create_preferred_replica_election, [("t", 1)])
    assert elect("--zookeeper", "zk:2181") == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [DEPRECATED, *ZK_WARNING]
    assert err.splitlines() == [
        "kafka.common.AdminCommandFailedException: Admin command failed",
        "Caused by: kafka.admin.AdminOperationException: Preferred replica leader election currently in "
        "progress for t-1. Aborting operation",
    ]
    assert pending(zk) == [{"topic": "t", "partition": 1}], "left as it was"


def test_zookeeper_unreachable(zk: FakeZk, capsys: pytest.CaptureFixture[str]) -> None:
    zk.unreachable = True
    assert elect("--zookeeper", "zk:2181") == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        "Caused by: kafka.zookeeper.ZooKeeperClientTimeoutException: "
        "Timed out waiting for connection while in state: CONNECTING")


# -- --bootstrap-server: ElectLeaders (PREFERRED) at the controller -----------------------------------


def test_bootstrap_form_reports_as_kafka_28(monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    cluster = ElectionCluster()
    cluster.install(monkeypatch)
    cluster.results = {
        ("t", 0): (ErrorCode.NONE, None),
        ("t", 2): (ErrorCode.NONE, None),
        ("t", 1): (ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition."),
    }
    f = json_file(tmp_path, [("t", 2), ("t", 1), ("t", 0)])
    assert elect("--bootstrap-server", "b1:9092", "--path-to-json-file", f) == 0
    assert capsys.readouterr() == ("\n".join([
        DEPRECATED,
        "Successfully completed preferred leader election for partitions t-0, t-2",
        # Kafka 2.8 lists the succeeded partitions on this line too.
        "Preferred replica already elected for partitions t-0, t-2",
    ]) + "\n", "")
    body, broker = cluster.api_calls(43)[-1]
    assert (broker, body.election_type) == (3, 0)
    assert sorted((t.topic, p) for t in body.topic_partitions for p in t.partitions) == [("t", 0), ("t", 1), ("t", 2)]


def test_bootstrap_form_without_a_file_and_a_failure(monkeypatch: pytest.MonkeyPatch,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    cluster = ElectionCluster()
    cluster.install(monkeypatch)
    cluster.results = {
        ("t", 0): (ErrorCode.ELECTION_NOT_NEEDED, None),
        ("u", 0): (ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, "Failed to elect leader for partition u-0"),
    }
    assert elect("--bootstrap-server", "b1:9092") == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        DEPRECATED,
        "Preferred replica already elected for partitions ",
        "Error completing preferred leader election for partition: u-0: "
        "org.apache.kafka.common.errors.PreferredLeaderNotAvailableException: Failed to elect leader for partition u-0",
    ]
    assert err == "kafka.common.AdminCommandFailedException: 1 preferred replica(s) could not be elected\n"
    assert all(body.topic_partitions is None for body, _ in cluster.api_calls(43)), "null = every partition"


def test_bootstrap_form_timeout(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = ElectionCluster()
    cluster.install(monkeypatch)
    cluster.down = {1, 2, 3}
    assert elect("--bootstrap-server", "b1:9092", "--timeout", "0.5") == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [DEPRECATED, "Timeout waiting for election results"]
    assert err == "kafka.common.AdminCommandFailedException: Timeout waiting for election results\n"
