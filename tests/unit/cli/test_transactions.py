"""``mafka transactions``: Kafka 3.0's ``kafka-transactions.sh`` (arguments, tables, errors, fake wire)."""

from __future__ import annotations

import io
from typing import Any

import pytest

from mafka.cli import transactions as tx
from mafka.cli.main import main
from mafka.errors import ErrorCode as E
from tests.unit.cli.fake_wire import WireFake

BOOT = ("--bootstrap-server", "b1:9092")
NOW = 1_700_000_000_000
HINT = ". Enable debug logging for additional detail."


def producer(pid: int, epoch: int = 0, seq: int = 4, ts: int = NOW - 1000, coordinator_epoch: int = -1,
             start: int = -1) -> dict[str, Any]:
    return {"producer_id": pid, "producer_epoch": epoch, "last_sequence": seq, "last_timestamp": ts,
            "coordinator_epoch": coordinator_epoch, "current_txn_start_offset": start}


def txn_state(tid: str, error: int = 0, state: str = "Ongoing", pid: int = 7, epoch: int = 1, start: int = NOW - 500,
              topics: dict[str, list[int]] | None = None) -> dict[str, Any]:
    return {"error_code": error, "transactional_id": tid, "transaction_state": state,
            "transaction_timeout_ms": 60000, "transaction_start_time_ms": start, "producer_id": pid,
            "producer_epoch": epoch,
            "topics": [{"topic": t, "partitions": p} for t, p in (topics or {}).items()]}


class TxnCluster(WireFake):
    """Brokers 1–3; topic t: t-0 led by 2 (replicas 2, 3), t-1 led by 3 (replicas 3, 1)."""

    def __init__(self) -> None:
        super().__init__({1: ("b1", 9092), 2: ("b2", 9093), 3: ("b3", 9094)})
        self.partitions = {("t", 0): (2, [2, 3]), ("t", 1): (3, [3, 1])}
        self.coordinators: dict[str, int] = {}
        self.find_errors: list[int] = []
        self.listings: dict[int, list[dict[str, Any]]] = {1: [], 2: [], 3: []}
        self.list_errors: dict[int, list[int]] = {}
        self.described: dict[str, list[dict[str, Any]]] = {}
        self.producers: dict[tuple[int, str, int], list[dict[str, Any]] | int] = {}
        self.marker_errors: list[int] = []

    def _Metadata(self, req: Any, broker: int) -> dict[str, Any]:
        names = sorted({t for t, _ in self.partitions}) if req.topics is None else [t.name for t in req.topics]
        topics = []
        for name in names:
            parts = [{"error_code": 0, "partition_index": p, "leader_id": leader, "replica_nodes": replicas,
                      "isr_nodes": replicas, "offline_replicas": []}
                     for (t, p), (leader, replicas) in sorted(self.partitions.items()) if t == name]
            topics.append({"error_code": 0 if parts else E.UNKNOWN_TOPIC_OR_PARTITION, "name": name,
                           "is_internal": False, "partitions": parts})
        return {"brokers": [{"node_id": n, "host": h, "port": p, "rack": None} for n, (h, p) in self.brokers.items()],
                "cluster_id": "c", "controller_id": 1, "topics": topics}

    def _FindCoordinator(self, req: Any, broker: int) -> dict[str, Any]:
        assert req.key_type == 1
        error = self.find_errors.pop(0) if self.find_errors else 0
        node = self.coordinators.get(req.key, 1)
        host, port = self.brokers[node]
        return {"throttle_time_ms": 0, "error_code": error, "error_message": None, "node_id": node,
                "host": host, "port": port}

    def _ListTransactions(self, req: Any, broker: int) -> dict[str, Any]:
        errors = self.list_errors.get(broker)
        if errors:
            return {"throttle_time_ms": 0, "error_code": errors.pop(0), "unknown_state_filters": [],
                    "transaction_states": []}
        pids = set(req.producer_id_filters)
        states = [s for s in self.listings[broker] if not pids or s["producer_id"] in pids]
        return {"throttle_time_ms": 0, "error_code": 0, "unknown_state_filters": [], "transaction_states": states}

    def _DescribeTransactions(self, req: Any, broker: int) -> dict[str, Any]:
        out = []
        for tid in req.transactional_ids:
            answers = self.described.get(tid)
            if self.coordinators.get(tid, 1) != broker:
                out.append(txn_state(tid, E.NOT_COORDINATOR))
            elif not answers:
                out.append(txn_state(tid, E.TRANSACTIONAL_ID_NOT_FOUND))
            else:
                out.append(answers.pop(0) if len(answers) > 1 else answers[0])
        return {"throttle_time_ms": 0, "transaction_states": out}

    def _DescribeProducers(self, req: Any, broker: int) -> dict[str, Any]:
        topics = []
        for t in req.topics:
            parts = []
            for p in t.partition_indexes:
                found = self.producers.get((broker, t.name, p), E.NOT_LEADER_OR_FOLLOWER)
                if isinstance(found, int):
                    parts.append({"partition_index": p, "error_code": found, "error_message": None,
                                  "active_producers": []})
                else:
                    parts.append({"partition_index": p, "error_code": 0, "error_message": None,
                                  "active_producers": found})
            topics.append({"name": t.name, "partitions": parts})
        return {"throttle_time_ms": 0, "topics": topics}

    def _WriteTxnMarkers(self, req: Any, broker: int) -> dict[str, Any]:
        error = self.marker_errors.pop(0) if self.marker_errors else 0
        return {"markers": [{"producer_id": m.producer_id, "topics": [
            {"name": t.name, "partitions": [{"partition_index": p, "error_code": error} for p in t.partition_indexes]}
            for t in m.topics]} for m in req.markers]}


@pytest.fixture
def cluster(monkeypatch: pytest.MonkeyPatch) -> TxnCluster:
    c = TxnCluster()
    c.install(monkeypatch)
    monkeypatch.setattr(tx, "_now_ms", lambda: NOW)
    return c


def lines(text: str) -> list[str]:
    return text.splitlines()


# --------------------------------------------------------------------------- table, arguments


def test_pretty_print_table_pads_and_ends_every_value_with_a_tab() -> None:
    out = io.StringIO()
    tx.pretty_print_table(("A", "Bee"), [["long-value", "x"], ["y", "z"]], out)
    assert out.getvalue() == "A         \tBee\t\nlong-value\tx  \t\ny         \tz  \t\n"


@pytest.mark.parametrize(
    ("argv", "error"),
    [
        ((*BOOT,), "too few arguments"),
        (("list",), "argument --bootstrap-server is required"),
        ((*BOOT, "describe"), "argument --transactional-id is required"),
        ((*BOOT, "--describe-producers", "--topic", "t"), "argument --partition is required"),
        ((*BOOT, "--list", "describe", "--transactional-id", "x"), "argument --list: not allowed with command describe"),
        ((*BOOT, "--topic", "t", "list"), "unrecognized arguments: '--topic'"),
    ],
)
def test_usage_errors(argv: tuple[str, ...], error: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["transactions", *argv]) == 1
    out, err = capsys.readouterr()
    assert out == "" and err.startswith("usage: mafka transactions ")
    assert err.endswith(f"mafka transactions: error: {error}\n")


def test_producer_epoch_is_a_short(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit):
        main(["transactions", *BOOT, "abort", "--topic", "t", "--partition", "0", "--producer-id", "1",
              "--producer-epoch", "40000", "--coordinator-epoch", "0"])
    assert "could not convert '40000' to Short" in capsys.readouterr().err


# --------------------------------------------------------------------------- list


def test_list_asks_every_broker(cluster: TxnCluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.listings[3] = [{"transactional_id": "app-1", "producer_id": 12, "transaction_state": "Ongoing"}]
    cluster.listings[1] = [{"transactional_id": "a", "producer_id": 3, "transaction_state": "CompleteCommit"},
                           {"transactional_id": "dead", "producer_id": 4, "transaction_state": "Dead"}]
    cluster.list_errors[2] = [E.COORDINATOR_LOAD_IN_PROGRESS]  # retried
    assert main(["transactions", *BOOT, "list"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert lines(out) == [
        "TransactionalId\tCoordinator\tProducerId\tTransactionState\t",
        "a              \t1          \t3         \tCompleteCommit  \t",
        "dead           \t1          \t4         \tUnknown         \t",
        "app-1          \t3          \t12        \tOngoing         \t",
    ]
    assert sorted(b for _, b in cluster.api_calls(66)) == [1, 2, 2, 3]
    assert all(list(r.state_filters) == [] and list(r.producer_id_filters) == [] for r, _ in cluster.api_calls(66))


def test_list_spelled_as_a_flag_with_options_after_it(cluster: TxnCluster, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["transactions", "--list", *BOOT]) == 0
    assert lines(capsys.readouterr().out) == ["TransactionalId\tCoordinator\tProducerId\tTransactionState\t"]
    assert main(["transactions", "list", *BOOT]) == 0
    assert capsys.readouterr().err == ""


def test_list_fails_when_a_coordinator_shuts_down(cluster: TxnCluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.list_errors[2] = [E.COORDINATOR_NOT_AVAILABLE]
    assert main(["transactions", *BOOT, "list"]) == 1
    assert capsys.readouterr() == ("", "Failed to list transactions: ListTransactions request sent to broker 2 failed "
                                       f"because the coordinator is shutting down{HINT}\n")


# --------------------------------------------------------------------------- describe


def test_describe_at_the_coordinator(cluster: TxnCluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.coordinators["app"] = 3
    cluster.find_errors = [E.COORDINATOR_NOT_AVAILABLE]  # retried
    cluster.described["app"] = [txn_state("app", E.COORDINATOR_LOAD_IN_PROGRESS),
                                txn_state("app", pid=7, epoch=2, topics={"t": [1, 0], "a": [3]})]
    assert main(["transactions", *BOOT, "--describe", "--transactional-id", "app"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert lines(out) == [
        "CoordinatorId\tTransactionalId\tProducerId\tProducerEpoch\tTransactionState\tTransactionTimeoutMs\t"
        "CurrentTransactionStartTimeMs\tTransactionDurationMs\tTopicPartitions\t",
        f"3            \tapp            \t7         \t2            \tOngoing         \t60000               \t"
        f"{NOW - 500}                \t500                  \ta-3,t-0,t-1    \t",
    ]
    assert [b for _, b in cluster.api_calls(65)] == [3, 3]
    assert [(r.key, r.key_type) for r, _ in cluster.api_calls(10)] == [("app", 1), ("app", 1), ("app", 1)]


def test_describe_an_empty_transaction(cluster: TxnCluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.described["idle"] = [txn_state("idle", state="Empty", start=-1)]
    assert main(["transactions", *BOOT, "describe", "--transactional-id", "idle"]) == 0
    row = lines(capsys.readouterr().out)[1].split("\t")
    assert [v.strip() for v in row] == ["1", "idle", "7", "1", "Empty", "60000", "None", "None", "", ""]


def test_describe_moves_with_the_coordinator(cluster: TxnCluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.coordinators["app"] = 2
    cluster.described["app"] = [txn_state("app")]
    real = cluster._FindCoordinator
    answers = iter([1, 2])

    def find(req: Any, broker: int) -> dict[str, Any]:
        cluster.coordinators["app"] = next(answers)
        answer = real(req, broker)
        cluster.coordinators["app"] = 2
        return answer

    cluster._FindCoordinator = find  # type: ignore[method-assign]
    assert main(["transactions", *BOOT, "describe", "--transactional-id", "app"]) == 0
    assert [b for _, b in cluster.api_calls(65)] == [1, 2], "NOT_COORDINATOR: found again"
    assert lines(capsys.readouterr().out)[1].startswith("2 ")


def test_describe_an_unknown_id(cluster: TxnCluster, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["transactions", *BOOT, "describe", "--transactional-id", "nope"]) == 1
    assert capsys.readouterr() == ("", "Failed to describe transaction state of transactional-id `nope`: "
                                       "DescribeTransactions request for transactionalId `nope` failed because the "
                                       f"ID could not be found{HINT}\n")


def test_describe_times_out_without_a_coordinator(cluster: TxnCluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.find_errors = [E.COORDINATOR_NOT_AVAILABLE] * 1000
    assert main(["transactions", *BOOT, "describe", "--transactional-id", "x", "--timeout", "0.5"]) == 1
    err = capsys.readouterr().err
    assert err.startswith("Failed to describe transaction state of transactional-id `x`: Call(callName="
                          "describeTransactions(api=FIND_COORDINATOR), deadlineMs=")
    assert f"attempt(s){HINT}\n" in err


# --------------------------------------------------------------------------- describe-producers


def test_describe_producers_at_the_leader(cluster: TxnCluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.producers[(2, "t", 0)] = [producer(1000, 0, 9, NOW - 5, 3, 42), producer(1001, 5, 0, NOW - 7)]
    assert main(["transactions", *BOOT, "describe-producers", "--topic", "t", "--partition", "0"]) == 0
    assert lines(capsys.readouterr().out) == [
        "ProducerId\tProducerEpoch\tLatestCoordinatorEpoch\tLastSequence\tLastTimestamp\tCurrentTransactionStartOffset\t",
        f"1000      \t0            \t3                     \t9           \t{NOW - 5}\t42                           \t",
        f"1001      \t5            \t-1                    \t0           \t{NOW - 7}\tNone                         \t",
    ]
    assert [b for _, b in cluster.api_calls(61)] == [2]


def test_describe_producers_on_a_replica(cluster: TxnCluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.producers[(3, "t", 0)] = [producer(1000)]
    argv = ["transactions", *BOOT, "describe-producers", "--topic", "t", "--partition", "0"]
    assert main([*argv, "--broker-id", "3"]) == 0
    assert len(lines(capsys.readouterr().out)) == 2
    assert main([*argv, "--broker-id", "1"]) == 1
    assert capsys.readouterr().err == (
        "Failed to describe producers for partition t-0 on broker 1: Failed to describe active producers for "
        f"partition t-0 on brokerId 1{HINT}\n")


def test_describe_producers_of_an_unknown_topic_waits_then_times_out(
        cluster: TxnCluster, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["transactions", *BOOT, "describe-producers", "--topic", "nope", "--partition", "0",
                 "--timeout", "0.4"]) == 1
    assert capsys.readouterr().err.startswith(
        "Failed to describe producers for partition nope-0 on leader: Call(callName=describeProducers(api=METADATA)")


# --------------------------------------------------------------------------- abort


def test_abort_by_start_offset(cluster: TxnCluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.producers[(3, "t", 1)] = [producer(5, 2, start=10), producer(6, 4, coordinator_epoch=7, start=20)]
    cluster.partitions[("t", 1)] = (1, [3, 1])  # moved: the marker goes to the new leader
    cluster.producers[(1, "t", 1)] = cluster.producers[(3, "t", 1)]
    cluster.marker_errors = [E.NOT_LEADER_OR_FOLLOWER]  # retried
    assert main(["transactions", *BOOT, "abort", "--topic", "t", "--partition", "1", "--start-offset", "20"]) == 0
    assert capsys.readouterr() == ("", "")
    calls = cluster.api_calls(27)
    assert [b for _, b in calls] == [1, 1]
    [marker] = calls[0][0].markers
    assert (marker.producer_id, marker.producer_epoch, marker.transaction_result, marker.coordinator_epoch) == (
        6, 4, False, 7)
    assert [(t.name, list(t.partition_indexes)) for t in marker.topics] == [("t", [1])]


def test_abort_by_start_offset_without_a_coordinator_epoch(
        cluster: TxnCluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.producers[(2, "t", 0)] = [producer(5, 2, start=10)]
    assert main(["transactions", *BOOT, "--abort", "--topic", "t", "--partition", "0", "--start-offset", "10"]) == 0
    [marker] = cluster.api_calls(27)[0][0].markers
    assert (marker.producer_id, marker.producer_epoch, marker.coordinator_epoch) == (5, 2, 0)


def test_abort_by_producer(cluster: TxnCluster, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["transactions", *BOOT, "abort", "--topic", "t", "--partition", "0", "--producer-id", "9"]
    assert main([*argv, "--producer-epoch", "3", "--coordinator-epoch", "-1"]) == 0
    [marker] = cluster.api_calls(27)[0][0].markers
    assert (marker.producer_id, marker.producer_epoch, marker.coordinator_epoch) == (9, 3, 0)
    assert cluster.api_calls(61) == [], "no DescribeProducers without --start-offset"
    assert main(argv) == 1
    assert capsys.readouterr().err == "Missing required argument --producer-epoch\n"
    assert main([*argv, "--producer-epoch", "3"]) == 1
    assert capsys.readouterr().err == "Missing required argument --coordinator-epoch\n"


@pytest.mark.parametrize(
    ("error", "message"),
    [
        (E.INVALID_PRODUCER_EPOCH, "failed due an invalid producer epoch"),
        (E.TRANSACTION_COORDINATOR_FENCED,
         "failed since the provided coordinator epoch 2 has been fenced by the active coordinator"),
        (E.CORRUPT_MESSAGE, "failed due to unexpected error: "),
    ],
)
def test_abort_errors(error: int, message: str, cluster: TxnCluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.marker_errors = [error]
    assert main(["transactions", *BOOT, "abort", "--topic", "t", "--partition", "0", "--producer-id", "9",
                 "--producer-epoch", "3", "--coordinator-epoch", "2"]) == 1
    spec = "AbortTransactionSpec(topicPartition=t-0, producerId=9, producerEpoch=3, coordinatorEpoch=2)"
    err = capsys.readouterr().err
    assert err.startswith(f"Failed to abort transaction {spec}: WriteTxnMarkers request with {spec} {message}")
    assert err.endswith(f"{HINT}\n")


def test_abort_needs_a_transaction(cluster: TxnCluster, capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["transactions", *BOOT, "abort", "--topic", "t", "--partition", "0"]
    assert main(argv) == 1
    assert capsys.readouterr().err == (
        "The transaction to abort must be identified either with --start-offset (for brokers on 3.0 or above) or "
        "with --producer-id, --producer-epoch, and --coordinator-epoch (for older brokers)\n")
    cluster.producers[(2, "t", 0)] = [producer(5, start=10)]
    assert main([*argv, "--start-offset", "11"]) == 1
    assert capsys.readouterr().err == "Could not find any open transactions starting at offset 11 on partition t-0\n"
    assert cluster.api_calls(27) == []


# --------------------------------------------------------------------------- find-hanging


def test_find_hanging(cluster: TxnCluster, capsys: pytest.CaptureFixture[str]) -> None:
    old = NOW - 20 * 60_000
    cluster.producers[(2, "t", 0)] = [
        producer(1, 0, ts=old, start=5),          # no transactional id lists it: hanging
        producer(2, 0, ts=old, start=6),          # its transaction counts t-0: not hanging
        producer(3, 0, ts=NOW - 1000, start=7),   # too recent to judge
        producer(4, 1, ts=old),                   # no open transaction
    ]
    cluster.producers[(3, "t", 1)] = [producer(2, 0, ts=old, coordinator_epoch=4, start=9)]  # not in it: hanging
    cluster.listings[2] = [{"transactional_id": "app", "producer_id": 2, "transaction_state": "Ongoing"}]
    cluster.coordinators["app"] = 2
    cluster.described["app"] = [txn_state("app", pid=2, topics={"t": [0]})]
    assert main(["transactions", *BOOT, "find-hanging", "--topic", "t"]) == 0
    out, err = capsys.readouterr()
    assert err == ""
    assert lines(out) == [
        "Topic\tPartition\tProducerId\tProducerEpoch\tCoordinatorEpoch\tStartOffset\tLastTimestamp\tDuration(min)\t",
        f"t    \t0        \t1         \t0            \t-1              \t5          \t{old}\t20           \t",
        f"t    \t1        \t2         \t0            \t4               \t9          \t{old}\t20           \t",
    ]
    assert sorted(r.producer_id_filters for r, _ in cluster.api_calls(66)) == [[1, 2]] * 3


def test_find_hanging_by_broker_and_its_checks(cluster: TxnCluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.producers[(1, "t", 1)] = [producer(1, ts=NOW - 2 * 60_000, start=5)]
    assert main(["transactions", *BOOT, "find-hanging", "--broker-id", "1", "--max-transaction-timeout", "1"]) == 0
    out = lines(capsys.readouterr().out)
    assert len(out) == 2 and out[1].startswith("t    \t1        \t1 ")
    assert [[(t.name, list(t.partition_indexes)) for t in r.topics] for r, _ in cluster.api_calls(61)] == [[("t", [1])]]
    assert main(["transactions", *BOOT, "find-hanging"]) == 1
    assert capsys.readouterr().err == ("The `find-hanging` command requires either --topic or --broker-id to limit "
                                       "the scope of the search\n")
    assert main(["transactions", *BOOT, "find-hanging", "--broker-id", "1", "--partition", "0"]) == 1
    assert capsys.readouterr().err == "The --partition argument requires --topic to be provided\n"


def test_find_hanging_nothing(cluster: TxnCluster, capsys: pytest.CaptureFixture[str]) -> None:
    cluster.producers[(2, "t", 0)] = []
    assert main(["transactions", *BOOT, "find-hanging", "--topic", "t", "--partition", "0"]) == 0
    assert lines(capsys.readouterr().out) == [
        "Topic\tPartition\tProducerId\tProducerEpoch\tCoordinatorEpoch\tStartOffset\tLastTimestamp\tDuration(min)\t"]
    assert cluster.api_calls(66) == []
