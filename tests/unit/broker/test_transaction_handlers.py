"""InitProducerId, AddPartitionsToTxn, AddOffsetsToTxn, EndTxn and WriteTxnMarkers: requests to coordinator calls and back."""

from __future__ import annotations

from types import SimpleNamespace

from twisted.internet import defer

from mafka.broker.dispatcher import Dispatcher, collect_handlers
from mafka.errors import ErrorCode
from mafka.wire.codec import decode_request, decode_response, encode_request


class _Coordinator:
    def __init__(self) -> None:
        self.calls: list = []
        self.error = ErrorCode.NONE

    def handle_init_producer_id(self, txn_id, timeout_ms, expected, respond):
        self.calls.append(("init", txn_id, timeout_ms, expected))
        respond(self.error, 42 if self.error == ErrorCode.NONE else -1, 3 if self.error == ErrorCode.NONE else -1)

    def handle_add_partitions(self, txn_id, pid, epoch, partitions, respond):
        self.calls.append(("add", txn_id, pid, epoch, partitions))
        respond({tp: self.error for tp in partitions})

    def handle_add_offsets_to_txn(self, txn_id, pid, epoch, offsets_partition, respond):
        self.calls.append(("offsets", txn_id, pid, epoch, offsets_partition))
        respond(self.error)

    def handle_end_transaction(self, txn_id, pid, epoch, commit, respond):
        self.calls.append(("end", txn_id, pid, epoch, commit))
        respond(self.error)


class _Cache:
    known = {("a", 0), ("a", 1), ("b", 0)}

    def partition(self, topic, index):
        return SimpleNamespace(leader=1) if (topic, index) in self.known else None


def _broker():
    coordinator = _Coordinator()
    completed: list = []
    appended: list = []

    def append_txn_markers(entries, timeout_ms):
        appended.append((list(entries), timeout_ms))
        return defer.succeed({
            (t, p): ErrorCode.NOT_LEADER_OR_FOLLOWER if t == "b" else ErrorCode.NONE for t, p, *_ in entries
        })

    broker = SimpleNamespace(
        metadata_cache=_Cache(),
        transaction_service=SimpleNamespace(coordinator=coordinator, checked_coordinator=lambda: coordinator),
        group_service=SimpleNamespace(coordinator=SimpleNamespace(
            partition_for=lambda g: 7,
            complete_transaction=lambda partition, pid, commit: completed.append((partition, pid, commit)),
        )),
        producer_ids=SimpleNamespace(generate=lambda: defer.succeed(99)),
        replica_manager=SimpleNamespace(append_txn_markers=append_txn_markers),
        config=SimpleNamespace(request_timeout_ms=30000),
    )
    return broker, coordinator, completed, appended


def _ask(broker, api_key: int, version: int, body: dict):
    dispatcher = Dispatcher(collect_handlers(broker))
    request = decode_request(encode_request(api_key, version, 3, "c", body)[4:])
    result = dispatcher.dispatch(request, SimpleNamespace(listener="PLAINTEXT"))
    chunks = []
    if isinstance(result, defer.Deferred):
        result.addCallback(chunks.append)
        assert chunks, "the handler did not answer"
        result = chunks[0]
    _, response = decode_response(api_key, version, b"".join(result)[4:])
    return response


def test_init_producer_id_without_a_transactional_id_is_a_plain_producer_id():
    broker, coordinator, _, _ = _broker()
    r = _ask(broker, 22, 4, {"transactional_id": None, "transaction_timeout_ms": 60000})
    assert (r.error_code, r.producer_id, r.producer_epoch) == (ErrorCode.NONE, 99, 0)
    assert coordinator.calls == []


def test_init_producer_id_with_a_transactional_id_goes_to_the_coordinator():
    broker, coordinator, _, _ = _broker()
    for version in (0, 1, 2, 3, 4):
        r = _ask(broker, 22, version, {"transactional_id": "t", "transaction_timeout_ms": 5000})
        assert (r.error_code, r.producer_id, r.producer_epoch) == (ErrorCode.NONE, 42, 3)
    assert coordinator.calls[-1] == ("init", "t", 5000, None)
    _ask(broker, 22, 4, {"transactional_id": "t", "transaction_timeout_ms": 5000, "producer_id": 42, "producer_epoch": 3})
    assert coordinator.calls[-1] == ("init", "t", 5000, (42, 3))
    r = _ask(broker, 22, 3, {"transactional_id": "t", "transaction_timeout_ms": 5000, "producer_id": 42, "producer_epoch": -1})
    assert r.error_code == ErrorCode.INVALID_REQUEST


def test_producer_fenced_is_invalid_producer_epoch_for_older_versions():
    broker, coordinator, _, _ = _broker()
    coordinator.error = ErrorCode.PRODUCER_FENCED
    assert _ask(broker, 22, 3, {"transactional_id": "t", "transaction_timeout_ms": 1}).error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert _ask(broker, 22, 4, {"transactional_id": "t", "transaction_timeout_ms": 1}).error_code == ErrorCode.PRODUCER_FENCED
    end = {"transactional_id": "t", "producer_id": 1, "producer_epoch": 0, "committed": True}
    assert _ask(broker, 26, 1, end).error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert _ask(broker, 26, 2, end).error_code == ErrorCode.PRODUCER_FENCED
    offsets = {"transactional_id": "t", "producer_id": 1, "producer_epoch": 0, "group_id": "g"}
    assert _ask(broker, 25, 1, offsets).error_code == ErrorCode.INVALID_PRODUCER_EPOCH
    assert _ask(broker, 25, 3, offsets).error_code == ErrorCode.PRODUCER_FENCED


def _add_body(topics: dict[str, list[int]]) -> dict:
    return {
        "v3_and_below_transactional_id": "t", "v3_and_below_producer_id": 5, "v3_and_below_producer_epoch": 1,
        "v3_and_below_topics": [{"name": n, "partitions": ps} for n, ps in topics.items()],
    }


def _errors(response) -> dict[tuple[str, int], int]:
    return {
        (t.name, p.partition_index): p.partition_error_code
        for t in response.results_by_topic_v3_and_below for p in t.results_by_partition
    }


def test_add_partitions_answers_every_partition_with_the_coordinators_error():
    broker, coordinator, _, _ = _broker()
    for version in (0, 3):
        r = _ask(broker, 24, version, _add_body({"a": [0, 1], "b": [0]}))
        assert _errors(r) == {("a", 0): 0, ("a", 1): 0, ("b", 0): 0}
    assert coordinator.calls[-1] == ("add", "t", 5, 1, {("a", 0), ("a", 1), ("b", 0)})
    coordinator.error = ErrorCode.CONCURRENT_TRANSACTIONS
    r = _ask(broker, 24, 2, _add_body({"a": [0]}))
    assert _errors(r) == {("a", 0): ErrorCode.CONCURRENT_TRANSACTIONS}


def test_an_unknown_partition_fails_the_whole_add_without_asking_the_coordinator():
    broker, coordinator, _, _ = _broker()
    r = _ask(broker, 24, 1, _add_body({"a": [0, 9], "nope": [0]}))
    assert _errors(r) == {
        ("a", 0): ErrorCode.OPERATION_NOT_ATTEMPTED,
        ("a", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("nope", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    }
    assert coordinator.calls == []


def test_add_offsets_adds_the_groups_offsets_partition_and_end_txn_passes_the_result():
    broker, coordinator, _, _ = _broker()
    r = _ask(broker, 25, 0, {"transactional_id": "t", "producer_id": 5, "producer_epoch": 1, "group_id": "g"})
    assert r.error_code == ErrorCode.NONE
    assert coordinator.calls[-1] == ("offsets", "t", 5, 1, 7)
    for committed in (True, False):
        r = _ask(broker, 26, 3, {"transactional_id": "t", "producer_id": 5, "producer_epoch": 1, "committed": committed})
        assert r.error_code == ErrorCode.NONE
        assert coordinator.calls[-1] == ("end", "t", 5, 1, committed)


def test_write_txn_markers_appends_and_completes_offsets_partitions():
    broker, _, completed, appended = _broker()
    body = {"markers": [
        {"producer_id": 5, "producer_epoch": 1, "transaction_result": True, "coordinator_epoch": 4,
         "topics": [{"name": "a", "partition_indexes": [0]}, {"name": "__consumer_offsets", "partition_indexes": [7]},
                    {"name": "b", "partition_indexes": [0]}]},
        {"producer_id": 6, "producer_epoch": 0, "transaction_result": False, "coordinator_epoch": 4,
         "topics": [{"name": "__consumer_offsets", "partition_indexes": [2]}]},
    ]}
    for version in (0, 1):
        completed.clear()
        r = _ask(broker, 27, version, body)
        answers = {
            (m.producer_id, t.name, p.partition_index): p.error_code for m in r.markers for t in m.topics for p in t.partitions
        }
        assert answers == {
            (5, "a", 0): 0, (5, "__consumer_offsets", 7): 0, (5, "b", 0): ErrorCode.NOT_LEADER_OR_FOLLOWER,
            (6, "__consumer_offsets", 2): 0,
        }
        assert completed == [(7, 5, True), (2, 6, False)]
    entries, timeout = appended[0]
    assert timeout == 30000
    assert ("a", 0, 5, 1, 4, True) in entries
