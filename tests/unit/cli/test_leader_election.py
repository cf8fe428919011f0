"""``mafka leader-election``: argument checks, the JSON file and Kafka's output lines."""

from __future__ import annotations

from typing import Any

import pytest

from mafka.cli import leader_election as le
from mafka.cli.main import main
from mafka.errors import ErrorCode
from tests.unit.cli.fake_wire import WireFake


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (("--all-topic-partitions",), "Missing required option(s) [election-type]"),
        (("--election-type", "bogus", "--all-topic-partitions"), "Unknown election type: bogus"),
        (("--election-type", "preferred"), "One and only one of the following options is required"),
        (
            ("--election-type", "preferred", "--all-topic-partitions", "--topic", "t"),
            "One and only one of the following options is required",
        ),
        (
            ("--election-type", "preferred", "--topic", "t"),
            "Missing required option(s) [partition]",
        ),
    ],
)
def test_argument_errors(
    argv: tuple[str, ...], message: str, capsys: pytest.CaptureFixture[str]
) -> None:
    assert main(["leader-election", "--bootstrap-server", "localhost:1", *argv]) == 1
    assert message in capsys.readouterr().err


def test_election_json() -> None:
    text = '{"partitions": [{"topic": "foo", "partition": 1}, {"topic": "bar", "partition": 0}]}'
    assert le.parse_election_json(text) == [("foo", 1), ("bar", 0)]
    with pytest.raises(le.CommandError, match="duplicate partitions: foo-1"):
        le.parse_election_json(
            '{"partitions": [{"topic": "foo", "partition": 1}, {"topic": "foo", "partition": 1}]}'
        )
    with pytest.raises(le.CommandError, match='missing "partitions"'):
        le.parse_election_json("{}")


def test_report_lines(capsys: pytest.CaptureFixture[str]) -> None:
    results = {
        ("t", 1): (ErrorCode.NONE, None),
        ("t", 0): (ErrorCode.NONE, None),
        ("u", 0): (
            ErrorCode.ELECTION_NOT_NEEDED,
            "Leader election not needed for topic partition.",
        ),
        ("v", 2): (
            ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE,
            "Failed to elect leader for partition v-2 under strategy preferred",
        ),
    }
    assert le.report(0, results) == 1
    assert capsys.readouterr().out.splitlines() == [
        "Successfully completed leader election (PREFERRED) for partitions t-0, t-1",
        "Valid replica already elected for partitions u-0",
        "Error completing leader election (PREFERRED) for partition: v-2: "
        "org.apache.kafka.common.errors.PreferredLeaderNotAvailableException: "
        "Failed to elect leader for partition v-2 under strategy preferred",
    ]
    assert le.report(1, {("t", 0): (ErrorCode.NONE, None)}) == 0
    assert "(UNCLEAN)" in capsys.readouterr().out


# -- against a fake cluster (AdminClient.elect_leaders on the wire) ------------------------------


class ElectionCluster(WireFake):
    """Three brokers; broker 2 was the controller, 3 is now (2 answers NOT_CONTROLLER)."""

    def __init__(self) -> None:
        super().__init__({1: ("b1", 9092), 2: ("b2", 9093), 3: ("b3", 9094)})
        self.controller = 2
        self.results: dict[tuple[str, int], tuple[int, str | None]] = {}

    def _Metadata(self, req: Any, broker: int) -> dict[str, Any]:
        controller = self.controller
        self.controller = 3  # whoever asks next learns that 3 took over
        return {"brokers": [{"node_id": n, "host": h, "port": p, "rack": None} for n, (h, p) in self.brokers.items()],
                "cluster_id": "c", "controller_id": controller, "topics": []}

    def _ElectLeaders(self, req: Any, broker: int) -> dict[str, Any]:
        wanted = sorted(self.results) if req.topic_partitions is None else sorted(
            (t.topic, p) for t in req.topic_partitions for p in t.partitions)
        by_topic: dict[str, list[dict[str, Any]]] = {}
        for t, p in wanted:
            code, message = (ErrorCode.NOT_CONTROLLER, None) if broker != 3 else self.results.get(
                (t, p), (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, None))
            by_topic.setdefault(t, []).append({"partition_id": p, "error_code": code, "error_message": message})
        return {"error_code": ErrorCode.NONE,
                "replica_election_results": [{"topic": t, "partition_result": ps} for t, ps in by_topic.items()]}


def test_preferred_election_of_every_partition_at_the_controller(monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    cluster = ElectionCluster()
    cluster.install(monkeypatch)
    cluster.results = {
        ("t", 0): (ErrorCode.NONE, None),
        ("t", 1): (ErrorCode.ELECTION_NOT_NEEDED, "Leader election not needed for topic partition."),
        ("u", 0): (ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE, "Failed to elect leader for partition u-0 under strategy PreferredReplicaPartitionLeaderElectionStrategy"),
    }
    assert main(["leader-election", "--bootstrap-server", "b1:9092", "--election-type", "preferred",
                 "--all-topic-partitions"]) == 1
    out, err = capsys.readouterr()
    assert out.splitlines() == [
        "Successfully completed leader election (PREFERRED) for partitions t-0",
        "Valid replica already elected for partitions t-1",
        "Error completing leader election (PREFERRED) for partition: u-0: "
        "org.apache.kafka.common.errors.PreferredLeaderNotAvailableException: "
        "Failed to elect leader for partition u-0 under strategy PreferredReplicaPartitionLeaderElectionStrategy",
    ]
    assert err == "kafka.common.AdminCommandFailedException: 1 replica(s) could not be elected\n"
    sent = cluster.api_calls(43)
    assert [broker for _, broker in sent] == [2, 3], "NOT_CONTROLLER: sent again to the new controller"
    assert all(body.election_type == 0 and body.topic_partitions is None for body, _ in sent)


def test_unclean_election_of_one_partition(monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> None:
    cluster = ElectionCluster()
    cluster.install(monkeypatch)
    cluster.results = {("t", 2): (ErrorCode.NONE, None)}
    assert main(["leader-election", "--bootstrap-server", "b1:9092", "--election-type", "unclean",
                 "--topic", "t", "--partition", "2", "--timeout", "10"]) == 0
    assert capsys.readouterr() == ("Successfully completed leader election (UNCLEAN) for partitions t-2\n", "")
    body, broker = cluster.api_calls(43)[-1]
    assert (broker, body.election_type) == (3, 1)
    assert [(t.topic, list(t.partitions)) for t in body.topic_partitions] == [("t", [2])]
    assert 0 < body.timeout_ms <= 10_000


def test_no_controller_in_time_is_kafkas_timeout(monkeypatch: pytest.MonkeyPatch,
                                                 capsys: pytest.CaptureFixture[str]) -> None:
    cluster = ElectionCluster()
    cluster.install(monkeypatch)
    cluster.down = {1, 2, 3}
    assert main(["leader-election", "--bootstrap-server", "b1:9092", "--election-type", "preferred",
                 "--all-topic-partitions", "--timeout", "0.5"]) == 1
    out, err = capsys.readouterr()
    assert out == "Timeout waiting for election results\n"
    assert err.startswith("kafka.common.AdminCommandFailedException: ")
