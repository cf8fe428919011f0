"""FindCoordinator: a group's (a transactional id's) coordinator leads its __consumer_offsets (__transaction_state) partition."""

from __future__ import annotations

from types import SimpleNamespace

from mafka.broker.dispatcher import Dispatcher, collect_handlers
from mafka.errors import ErrorCode
from mafka.group.offsets_records import offsets_partition_for
from mafka.wire.codec import decode_request, decode_response, encode_request


class _Cache:
    def __init__(self, leaders: dict[int, int] | None, txn_leaders: dict[int, int] | None = None) -> None:
        self.leaders = leaders  # None: no __consumer_offsets topic
        self.txn_leaders = txn_leaders  # None: no __transaction_state topic
        self.unreachable: frozenset[int] = frozenset()  # peers whose listener refused (mafka.broker.peer_liveness)

    def _of(self, topic: str) -> dict[int, int] | None:
        return {"__consumer_offsets": self.leaders, "__transaction_state": self.txn_leaders}.get(topic)

    def has_topic(self, topic: str) -> bool:
        return self._of(topic) is not None

    def partition(self, topic: str, index: int):
        leader = (self._of(topic) or {}).get(index)
        return None if leader is None else SimpleNamespace(leader=leader)

    def endpoint(self, broker_id: int, listener: str):
        return {1: ("h1", 9091), 2: ("h2", 9092)}.get(broker_id) if listener == "PLAINTEXT" else None


def _broker(leaders: dict[int, int] | None, txn_leaders: dict[int, int] | None = None):
    created = []
    service = SimpleNamespace(
        coordinator=SimpleNamespace(partition_for=lambda g: offsets_partition_for(g, 50)),
        ensure_offsets_topic=lambda: created.append(True),
    )
    txn_service = SimpleNamespace(
        coordinator=SimpleNamespace(partition_for=lambda t: offsets_partition_for(t, 50)),
        ensure_transaction_topic=lambda: created.append("txn"),
    )
    broker = SimpleNamespace(metadata_cache=_Cache(leaders, txn_leaders), group_service=service, transaction_service=txn_service)
    return broker, created


def _ask(broker, version: int, key: str, key_type: int = 0):
    dispatcher = Dispatcher(collect_handlers(broker))
    request = decode_request(encode_request(10, version, 3, "c", {"key": key, "key_type": key_type})[4:])
    chunks = dispatcher.dispatch(request, SimpleNamespace(listener="PLAINTEXT"))
    _, body = decode_response(10, version, b"".join(chunks)[4:])
    return body


def test_first_request_creates_the_offsets_topic_and_answers_coordinator_not_available():
    broker, created = _broker(None)
    for version in (0, 1, 2):
        body = _ask(broker, version, "group")
        assert (body.error_code, body.node_id) == (ErrorCode.COORDINATOR_NOT_AVAILABLE, -1)
    assert created == [True, True, True]


def test_coordinator_is_the_leader_of_the_groups_partition():
    p = offsets_partition_for("my-group", 50)
    broker, created = _broker({p: 2, (p + 1) % 50: 1})
    for version in (0, 1, 2):
        body = _ask(broker, version, "my-group")
        assert (body.error_code, body.node_id, body.host, body.port) == (ErrorCode.NONE, 2, "h2", 9092)
    assert created == []


def test_no_live_leader_is_coordinator_not_available():
    broker, _ = _broker({offsets_partition_for("g", 50): -1})
    assert _ask(broker, 2, "g").error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    broker, _ = _broker({offsets_partition_for("g", 50): 7})  # leader without an endpoint here
    assert _ask(broker, 2, "g").error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    broker, _ = _broker({offsets_partition_for("g", 50): 2})
    broker.metadata_cache.unreachable = frozenset({2})  # its listener refused this broker: the process is gone
    assert _ask(broker, 2, "g").error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_transaction_coordinator_creates_the_transaction_state_topic_then_is_its_partition_leader():
    broker, created = _broker({offsets_partition_for("g", 50): 1})
    assert _ask(broker, 1, "txn", key_type=1).error_code == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert created == ["txn"]
    p = offsets_partition_for("txn", 50)
    broker, created = _broker(None, {p: 1, (p + 1) % 50: 2})
    body = _ask(broker, 2, "txn", key_type=1)
    assert (body.error_code, body.node_id, body.host, body.port) == (ErrorCode.NONE, 1, "h1", 9091)
    assert created == []


def test_empty_transactional_id_and_unknown_key_types_are_invalid_requests():
    broker, _ = _broker({offsets_partition_for("g", 50): 1})
    assert _ask(broker, 1, "", key_type=1).error_code == ErrorCode.INVALID_REQUEST
    assert _ask(broker, 1, "x", key_type=5).error_code == ErrorCode.INVALID_REQUEST
