"""KazooStore's batches without a server: kazoo_batch's pieces, and KazooStore over a scripted kazoo client.

The behaviour suite of ``test_memory_store`` (``test_store_get_many_*``,
``test_store_transactions_*``) runs against a real ZooKeeper in
``tests/integration/test_kazoo_store.py``; here are the paths a healthy
ZooKeeper 3.8 does not take: a server without multiRead, a grouped multi
that fails, a batch that gets no answer.
"""

from __future__ import annotations

import socket
import struct
from typing import Any

import pytest
from kazoo import exceptions as kz
from kazoo.protocol.states import ZnodeStat
from twisted.internet.defer import Deferred
from twisted.internet.task import Clock
from twisted.python.failure import Failure

from mafka.coordination import kazoo_batch
from mafka.coordination.kazoo_batch import (
    Batch,
    MultiRead,
    PollHandler,
    transaction_groups,
)
from mafka.coordination.kazoo_store import KazooStore
from mafka.coordination.store import (
    BadVersionError,
    CheckOp,
    ConnectionLossError,
    CreateOp,
    NodeExistsError,
    SetOp,
    Stat,
)

# --------------------------------------------------------------------------- pieces


def test_transaction_groups_respect_the_op_and_byte_budgets(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kazoo_batch, "MULTI_OPS", 4)
    monkeypatch.setattr(kazoo_batch, "MULTI_BYTES", 1000)
    small = [CheckOp("/e", 1), SetOp("/p", b"x")]
    assert transaction_groups([small] * 5) == [range(0, 2), range(2, 4), range(4, 5)]
    big = [SetOp("/big", b"x" * 2000)]
    assert transaction_groups([small, big, small, small]) == [range(0, 1), range(1, 2), range(2, 4)]
    assert transaction_groups([[CheckOp("/e", 1)] * 6, small]) == [range(0, 1), range(1, 2)]
    assert transaction_groups([]) == []


def test_multi_read_request_and_answer() -> None:
    request = MultiRead(("/a", "/bb"))
    assert request.type == 22
    body = bytes(request.serialize())
    # header(getData=4, done=0, err=-1) path watch=0, twice, then the done header
    expected = b"".join(
        struct.pack("!iBi", 4, 0, -1) + struct.pack("!i", len(p)) + p.encode() + b"\0" for p in ("/a", "/bb")
    ) + struct.pack("!iBi", -1, 1, -1)
    assert body == expected
    stat = (1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)
    answer = (
        struct.pack("!iBi", 4, 0, 0)
        + struct.pack("!i", 3)
        + b"abc"
        + struct.pack("!qqqqiiiqiiq", *stat)
        + struct.pack("!iBi", -1, 0, -101)
        + struct.pack("!i", -101)
        + struct.pack("!iBi", -1, 1, -1)
    )
    first, second = MultiRead.deserialize(b"xx" + answer, 2)
    assert first == (b"abc", ZnodeStat(*stat))
    assert isinstance(second, kz.NoNodeError)


def test_poll_handler_select() -> None:
    a, b = socket.socketpair()
    try:
        handler = PollHandler()
        assert handler.select([a], [], [], 0) == ([], [], [])
        b.send(b"x")
        assert handler.select([a, b], [b], [], 1) == ([a], [b], [])
        with pytest.raises(ValueError):
            handler.select([a], [], [], -1)
    finally:
        a.close()
        b.close()


class _Answer:
    """A kazoo AsyncResult as the batch sees it."""

    def __init__(self) -> None:
        self.links: list[Any] = []
        self.outcome: tuple[Any, BaseException | None] | None = None

    def rawlink(self, callback: Any) -> None:
        self.links.append(callback)
        if self.outcome is not None:
            callback(self)

    # kazoo's AsyncResult reads (mafka reads them, never get_nowait(): see outcome_of)
    @property
    def exception(self) -> BaseException | None:
        assert self.outcome is not None
        return self.outcome[1]

    @property
    def value(self) -> Any:
        assert self.outcome is not None
        return self.outcome[0]

    def set(self, value: Any) -> None:
        self._settle((value, None))

    def set_exception(self, error: BaseException) -> None:
        self._settle((None, error))

    def _settle(self, outcome: tuple[Any, BaseException | None]) -> None:
        self.outcome = outcome
        for callback in self.links:
            callback(self)


class _Reactor(Clock):
    def callFromThread(self, f: Any, *args: Any, **kwargs: Any) -> None:  # noqa: N802 - Twisted's name
        f(*args, **kwargs)


def test_batch_delivers_once_in_order_after_start() -> None:
    delivered: list[Any] = []
    batch = Batch(_Reactor(), 3, delivered.append)
    answers = [_Answer() for _ in range(3)]
    for i, answer in enumerate(answers):
        answer.rawlink(lambda r, i=i: batch.collect(i, r))
    answers[2].set("c")
    answers[0].set_exception(kz.NoNodeError())
    batch.answer(1, "b", None)
    assert delivered == []  # not started: more requests may come
    batch.start()
    assert len(delivered) == 1
    (first_value, first_error), second, third = delivered[0]
    assert first_value is None and isinstance(first_error, kz.NoNodeError)
    assert (second, third) == (("b", None), ("c", None))
    batch.give_up(RuntimeError("late"))
    assert len(delivered) == 1


def test_a_failed_answer_leaves_no_reference_cycle() -> None:
    # Raising an async result's stored error (get_nowait) gave it a traceback through get_nowait's
    # frame, whose self is the async result: a cycle holding the batch's outcomes (a controller's
    # multiRead: tens of thousands of znodes), freed only by a full collection.  kazoo's own
    # AsyncResult here, and a negative control that the check catches that cycle.
    from kazoo.handlers.threading import SequentialThreadingHandler

    from tests.cyclic_garbage import cyclic_garbage

    handler = SequentialThreadingHandler()  # not started: callbacks run at once

    def fail_one(read: Any) -> None:
        delivered: list[Any] = []
        batch = Batch(_Reactor(), 2, delivered.append)
        ok, missing = handler.async_result(), handler.async_result()
        ok.rawlink(lambda r: read(batch, 0, r))
        missing.rawlink(lambda r: read(batch, 1, r))
        batch.start()
        ok.set((b"data", ZnodeStat(*range(11))))
        missing.set_exception(kz.NoNodeError())
        assert len(delivered) == 1 and isinstance(delivered[0][1][1], kz.NoNodeError)

    def by_raising(batch: Batch, index: int, result: Any) -> None:
        try:
            batch.answer(index, result.get_nowait(), None)
        except Exception as exc:  # noqa: BLE001
            batch.answer(index, None, exc)

    assert cyclic_garbage(lambda: fail_one(lambda b, i, r: b.collect(i, r))) == {}
    assert cyclic_garbage(lambda: fail_one(by_raising))["kazoo.protocol.states.ZnodeStat"] == 1, "the check sees the old cycle"


def test_batch_give_up_fills_the_unanswered() -> None:
    delivered: list[Any] = []
    batch = Batch(_Reactor(), 2, delivered.append)
    batch.start()
    batch.answer(0, "a", None)
    error = kz.OperationTimeoutError()
    batch.give_up(error)
    assert delivered == [[("a", None), (None, error)]]
    batch.answer(1, "late", None)
    assert len(delivered) == 1


# --------------------------------------------------------------------------- KazooStore over a scripted client


class _Txn:
    def __init__(self, client: _Client) -> None:
        self.client = client
        self.ops: list[tuple[str, str]] = []

    def check(self, path: str, version: int) -> None:
        self.ops.append(("check", path))

    def create(self, path: str, value: bytes = b"", **_: Any) -> None:
        self.ops.append(("create", path))

    def set_data(self, path: str, value: bytes, version: int = -1) -> None:
        self.ops.append(("set", path))

    def delete(self, path: str, version: int = -1) -> None:
        self.ops.append(("delete", path))

    def commit_async(self) -> _Answer:
        answer = _Answer()
        self.client.sent.append(("multi", self.ops, answer))
        return answer


class _Client:
    """What KazooStore's batches use of a KazooClient; records every request sent."""

    chroot = ""

    def __init__(self) -> None:
        self.sent: list[tuple[str, Any, _Answer]] = []
        self.handler = self

    def async_result(self) -> _Answer:
        return _Answer()

    def _call(self, request: Any, answer: _Answer) -> None:
        self.sent.append(("multiRead", request.paths, answer))

    def get_async(self, path: str) -> _Answer:
        answer = _Answer()
        self.sent.append(("get", path, answer))
        return answer

    def transaction(self) -> _Txn:
        return _Txn(self)

    def take(self) -> list[tuple[str, Any, _Answer]]:
        sent, self.sent = self.sent, []
        return sent


_STAT = ZnodeStat(1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11)


@pytest.fixture
def scripted() -> tuple[KazooStore, _Client, _Reactor]:
    reactor = _Reactor()
    store = KazooStore("127.0.0.1:1", reactor=reactor, operation_timeout_s=5)
    client = _Client()
    store._client = client  # type: ignore[assignment]
    return store, client, reactor


def _outcome(d: Deferred[Any]) -> Any:
    box: list[Any] = []
    d.addBoth(box.append)
    assert box, "not fired"
    if isinstance(box[0], Failure):
        box[0].raiseException()
    return box[0]


def test_get_many_reads_in_multi_read_chunks(scripted: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    store, client, _ = scripted
    monkeypatch.setattr("mafka.coordination.kazoo_store.MULTI_READ_PATHS", 2)
    d = store.get_many(["/a", "/b", "/c"])
    sent = client.take()
    assert [(kind, paths) for kind, paths, _ in sent] == [("multiRead", ("/a", "/b")), ("multiRead", ("/c",))]
    sent[1][2].set([kz.NoNodeError()])
    assert not d.called  # one answer per chunk, all needed
    sent[0][2].set([(b"A", _STAT), (None, _STAT)])
    got = _outcome(d)
    assert [g if g is None else g[0] for g in got] == [b"A", b"", None]
    assert isinstance(got[0][1], Stat) and got[0][1].version == _STAT.version


def test_get_many_falls_back_to_pipelined_reads_without_multi_read(scripted: Any) -> None:
    store, client, _ = scripted
    d = store.get_many(["/a", "/b"])
    (request,) = client.take()
    request[2].set_exception(kz.UnimplementedError())  # ZooKeeper < 3.6
    sent = client.take()
    assert [(kind, path) for kind, path, _ in sent] == [("get", "/a"), ("get", "/b")]
    sent[0][2].set((b"A", _STAT))
    sent[1][2].set_exception(kz.NoNodeError())
    assert [g if g is None else g[0] for g in _outcome(d)] == [b"A", None]
    # remembered: the next batch goes straight to pipelined reads
    d = store.get_many(["/c"])
    (request,) = client.take()
    assert request[0] == "get"
    request[2].set_exception(kz.ConnectionLoss())
    with pytest.raises(ConnectionLossError):
        _outcome(d)


def test_transactions_go_as_one_multi_and_are_split_back(scripted: Any) -> None:
    store, client, _ = scripted
    d = store.transactions([[CheckOp("/e", 1), SetOp("/p0", b"x", 0)], [CheckOp("/e", 1), CreateOp("/p1")]])
    (request,) = client.take()
    assert request[0] == "multi" and [op for op, _ in request[1]] == ["check", "set", "check", "create"]
    request[2].set([True, _STAT, True, "/p1"])
    first, second = _outcome(d)
    assert first[0] is True and isinstance(first[1], Stat)
    assert second == [True, "/p1"]


def test_a_failed_group_is_resent_one_transaction_each(scripted: Any) -> None:
    store, client, _ = scripted
    lists = [[SetOp(f"/p{i}", b"x", 0)] for i in range(3)]
    d = store.transactions(lists)
    (group,) = client.take()
    # the second set failed: ZooKeeper applied none of the group
    group[2].set([kz.RolledBackError(), kz.BadVersionError(), kz.RuntimeInconsistency()])
    sent = client.take()
    assert [ops for _, ops, _ in sent] == [[("set", "/p0")], [("set", "/p1")], [("set", "/p2")]]
    sent[0][2].set([_STAT])
    sent[1][2].set([kz.BadVersionError()])
    sent[2][2].set([_STAT])
    outcomes = _outcome(d)
    assert isinstance(outcomes[0][0], Stat) and isinstance(outcomes[2][0], Stat)
    assert isinstance(outcomes[1], BadVersionError)


def test_groups_go_one_after_the_other_and_a_lost_group_is_not_resent(
    scripted: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, client, _ = scripted
    monkeypatch.setattr(kazoo_batch, "MULTI_OPS", 2)
    d = store.transactions([[CreateOp(f"/n{i}")] for i in range(4)])
    (first,) = client.take()  # the second group waits for the first's answer
    first[2].set_exception(kz.ConnectionLoss())
    (second,) = client.take()
    assert [path for _, path in second[1]] == ["/n2", "/n3"]
    second[2].set([kz.NodeExistsError(), kz.RuntimeInconsistency()])
    resent = client.take()
    assert [ops for _, ops, _ in resent] == [[("create", "/n2")], [("create", "/n3")]]
    resent[0][2].set([kz.NodeExistsError()])
    resent[1][2].set(["/n3"])
    outcomes = _outcome(d)
    assert [type(o) for o in outcomes[:2]] == [ConnectionLossError, ConnectionLossError]  # outcome unknown
    assert isinstance(outcomes[2], NodeExistsError) and outcomes[3] == ["/n3"]


def test_groups_of_independent_compare_and_sets_go_at_once(
    scripted: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    store, client, _ = scripted
    monkeypatch.setattr(kazoo_batch, "MULTI_OPS", 4)
    lists = [[CheckOp("/epoch", 3), SetOp(f"/state{i}", b"x", 0)] for i in range(5)]
    d = store.transactions(lists)
    sent = client.take()  # every group at once: their order cannot matter
    assert [len(ops) for _, ops, _ in sent] == [4, 4, 2]
    sent[2][2].set([True, _STAT])
    sent[1][2].set([kz.RolledBackError(), kz.RolledBackError(), kz.RuntimeInconsistency(), kz.BadVersionError()])
    resent = client.take()
    assert [ops for _, ops, _ in resent] == [
        [("check", "/epoch"), ("set", "/state2")],
        [("check", "/epoch"), ("set", "/state3")],
    ]
    resent[0][2].set([True, _STAT])
    resent[1][2].set([kz.RolledBackError(), kz.BadVersionError()])
    sent[0][2].set([True, _STAT, True, _STAT])
    outcomes = _outcome(d)
    assert [type(o) for o in outcomes] == [list, list, list, BadVersionError, list]


def test_independence() -> None:
    check = CheckOp("/epoch", 1)
    assert kazoo_batch.independent([[check, SetOp("/a", b"")], [check, SetOp("/b", b"")]])
    assert not kazoo_batch.independent([[SetOp("/a", b"")], [SetOp("/a", b"")]])  # one znode twice
    assert not kazoo_batch.independent([[CheckOp("/a", 1)], [SetOp("/a", b"")]])  # a check sees a set
    assert not kazoo_batch.independent([[check, CreateOp("/c")]])


def test_a_batch_gives_up_only_when_no_answer_comes(scripted: Any) -> None:
    store, client, reactor = scripted
    d = store.transactions([[CreateOp("/a")], [CreateOp("/b")]])
    (group,) = client.take()
    group[2].set([kz.NodeExistsError(), kz.RuntimeInconsistency()])
    first, second = client.take()
    reactor.advance(4)
    first[2].set(["/a"])
    reactor.advance(1)  # 5 s: the check sees progress and waits another 5 s
    reactor.advance(4.5)
    assert not d.called
    reactor.advance(0.5)  # 10 s: nothing for a whole interval
    outcomes = _outcome(d)
    assert outcomes[0] == ["/a"]
    assert isinstance(outcomes[1], ConnectionLossError) and "no answer within 5 s" in str(outcomes[1])
    second[2].set(["/b"])  # too late: ignored


def test_a_stopped_store_refuses_batches(scripted: Any) -> None:
    store, _, _ = scripted
    store._closing = True
    for d in (store.get_many(["/a"]), store.transactions([[CreateOp("/a")]])):
        with pytest.raises(ConnectionLossError):
            _outcome(d)
