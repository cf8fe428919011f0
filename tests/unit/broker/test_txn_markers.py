"""TxnMarkerChannel: markers go to each partition's leader, are retried until written, then complete."""

from __future__ import annotations

from types import SimpleNamespace

from twisted.internet import defer
from twisted.internet.task import Clock

from mafka.broker.txn_markers import TxnMarkerChannel
from mafka.errors import ErrorCode


class _Conn:
    def __init__(self, broker_id: int, log: list) -> None:
        self.broker_id = broker_id
        self.log = log
        self.closed = False

    def request(self, api_key: int, version: int, body: dict) -> defer.Deferred:
        d: defer.Deferred = defer.Deferred()
        self.log.append((self.broker_id, api_key, version, body, d))
        return d

    def close(self) -> None:
        self.closed = True


def _answer(body: dict, errors: dict[tuple[str, int], ErrorCode]) -> SimpleNamespace:
    marker = body["markers"][0]
    return SimpleNamespace(markers=[SimpleNamespace(
        producer_id=marker["producer_id"],
        topics=[
            SimpleNamespace(name=t["name"], partitions=[
                SimpleNamespace(partition_index=p, error_code=errors.get((t["name"], p), ErrorCode.NONE))
                for p in t["partition_indexes"]
            ])
            for t in marker["topics"]
        ],
    )])


class _World:
    def __init__(self, leaders: dict[tuple[str, int], int]) -> None:
        self.clock = Clock()
        self.leaders = leaders
        self.sent: list = []
        self.conns: list[_Conn] = []
        self.completed: list[str] = []
        self.current = True
        self.channel = TxnMarkerChannel(
            self.clock, lambda t, p: self.leaders.get((t, p)), lambda b: ("h", 9000 + b), self._connect,
            request_timeout_s=5, retry_backoff_s=0.1,
        )

    def _connect(self, broker_id: int, host: str, port: int) -> _Conn:
        conn = _Conn(broker_id, self.sent)
        self.conns.append(conn)
        return conn

    def send(self, partitions, commit=True) -> None:
        self.channel.send(
            transactional_id="t", coordinator_epoch=3, producer_id=7, producer_epoch=1, commit=commit,
            partitions=partitions, on_complete=lambda: self.completed.append("t"), is_current=lambda: self.current,
        )

    def take(self):
        out, self.sent[:] = list(self.sent), []
        return out


def test_markers_are_grouped_per_leader_and_complete_once_all_are_written():
    w = _World({("a", 0): 1, ("a", 1): 2, ("b", 0): 1})
    w.send([("a", 0), ("a", 1), ("b", 0)])
    sent = w.take()
    assert sorted((b, k, v) for b, k, v, _, _ in sent) == [(1, 27, 1), (2, 27, 1)]
    by_broker = {b: body for b, _, _, body, _ in sent}
    marker = by_broker[1]["markers"][0]
    assert (marker["producer_id"], marker["producer_epoch"], marker["transaction_result"], marker["coordinator_epoch"]) == (7, 1, True, 3)
    assert marker["topics"] == [{"name": "a", "partition_indexes": [0]}, {"name": "b", "partition_indexes": [0]}]
    for _b, _, _, body, d in sent:
        assert w.completed == []
        d.callback(_answer(body, {}))
    assert w.completed == ["t"]
    assert w.channel.pending == 0


def test_a_retriable_error_resends_to_the_new_leader():
    w = _World({("a", 0): 1})
    w.send([("a", 0)], commit=False)
    (b, _, _, body, d), = w.take()
    assert body["markers"][0]["transaction_result"] is False
    w.leaders[("a", 0)] = 2
    d.callback(_answer(body, {("a", 0): ErrorCode.NOT_LEADER_OR_FOLLOWER}))
    assert w.take() == [] and w.completed == []
    w.clock.advance(0.1)
    (b, _, _, body, d), = w.take()
    assert b == 2
    d.callback(_answer(body, {}))
    assert w.completed == ["t"]


def test_no_leader_waits_and_a_deleted_partition_is_dropped():
    w = _World({("a", 0): -1, ("gone", 0): None})
    del w.leaders[("gone", 0)]
    w.send([("a", 0), ("gone", 0)])
    assert w.take() == []
    w.clock.advance(0.1)
    assert w.take() == []
    w.leaders[("a", 0)] = 3
    w.clock.advance(0.1)
    (b, _, _, body, d), = w.take()
    assert b == 3 and body["markers"][0]["topics"] == [{"name": "a", "partition_indexes": [0]}]
    d.callback(_answer(body, {}))
    assert w.completed == ["t"]


def test_a_lost_connection_is_replaced_and_the_request_retried():
    w = _World({("a", 0): 1})
    w.send([("a", 0)])
    (_, _, _, _, d), = w.take()
    d.errback(ConnectionError("lost"))
    assert w.conns[0].closed
    w.clock.advance(0.1)
    (_, _, _, body, d), = w.take()
    assert len(w.conns) == 2
    d.callback(_answer(body, {}))
    assert w.completed == ["t"]


def test_an_unanswered_request_times_out_and_is_retried():
    w = _World({("a", 0): 1})
    w.send([("a", 0)])
    assert len(w.take()) == 1
    w.clock.advance(5)
    w.clock.advance(0.1)
    (_, _, _, body, d), = w.take()
    d.callback(_answer(body, {}))
    assert w.completed == ["t"]


def test_fencing_errors_abandon_the_delivery():
    for error in (ErrorCode.TRANSACTION_COORDINATOR_FENCED, ErrorCode.INVALID_PRODUCER_EPOCH):
        w = _World({("a", 0): 1, ("a", 1): 1})
        w.send([("a", 0), ("a", 1)])
        (_, _, _, body, d), = w.take()
        d.callback(_answer(body, {("a", 1): error}))
        w.clock.advance(1)
        assert w.take() == [] and w.completed == [] and w.channel.pending == 0


def test_unsupported_message_format_is_skipped():
    w = _World({("a", 0): 1})
    w.send([("a", 0)])
    (_, _, _, body, d), = w.take()
    d.callback(_answer(body, {("a", 0): ErrorCode.UNSUPPORTED_FOR_MESSAGE_FORMAT}))
    assert w.completed == ["t"]


def test_a_coordinator_that_lost_the_transaction_stops_retrying():
    w = _World({("a", 0): 1})
    w.send([("a", 0)])
    (_, _, _, body, d), = w.take()
    w.current = False
    d.callback(_answer(body, {("a", 0): ErrorCode.REQUEST_TIMED_OUT}))
    w.clock.advance(1)
    assert w.take() == [] and w.completed == [] and w.channel.pending == 0


def test_shutdown_abandons_and_closes():
    w = _World({("a", 0): 1})
    w.send([("a", 0)])
    w.channel.shutdown()
    assert w.conns[0].closed and w.channel.pending == 0
