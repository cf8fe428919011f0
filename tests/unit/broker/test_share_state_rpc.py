"""The share-state RPCs end to end in memory: the persister, the wire, the handlers, the coordinators.

A :class:`World` is a few brokers, each with its own
:class:`~mafka.share.coordinator.ShareCoordinator`, sharing one
``__share_group_state`` log (what replication gives them), a metadata cache
that names the leader of each state partition, and connections that carry
requests through the real codec into the real handlers
(:mod:`mafka.broker.handlers.share_state`).  Broker 1's
:class:`~mafka.broker.share_persister.SharePersister` is under test; time is a
Twisted ``Clock``.
"""

from __future__ import annotations

from collections.abc import Callable
from types import SimpleNamespace
from typing import Any

import pytest
from twisted.internet import defer
from twisted.internet.task import Clock

from mafka.broker.handlers import share_state
from mafka.broker.share_persister import SharePersister
from mafka.errors import ErrorCode
from mafka.group.share.partition_state import StateBatch
from mafka.interbroker.connection import ConnectionLostError
from mafka.share.coordinator import ShareCoordinator, ShareCoordinatorConfig, share_partition_for
from mafka.share.state_types import (
    InitializeData,
    PartitionResult,
    ReadResult,
    SummaryResult,
    WriteData,
)
from mafka.wire.codec import decode_request, decode_response, encode_request, encode_response

TOPIC = bytes(range(1, 17))
GROUP = "queue"
N = 50
STATE = "__share_group_state"


class SharedLog:
    """One log per state partition, shared by every broker (replication); appends answer at once."""

    def __init__(self) -> None:
        self.partitions: dict[int, list[tuple[bytes, bytes | None]]] = {}

    def append(self, partition: int, records: Any, done: Callable[[int, int | None], None]) -> None:
        log = self.partitions.setdefault(partition, [])
        base = len(log)
        log.extend(records)
        done(ErrorCode.NONE, base)

    def loaded(self, partition: int) -> list[tuple[int, bytes, bytes | None]]:
        return [(i, k, v) for i, (k, v) in enumerate(self.partitions.get(partition, []))]


class FakeBroker:
    def __init__(self, world: World, broker_id: int) -> None:
        self.world = world
        self.broker_id = broker_id
        self.reactor = world.clock
        self.config = SimpleNamespace(request_timeout_ms=2000, inter_broker_listener="INTERNAL")
        self.metadata_cache = world.cache
        self.authorizer: Any = None
        self.interbroker_security = None
        self.coordinator = ShareCoordinator(ShareCoordinatorConfig(N), lambda: int(world.clock.seconds() * 1000),
                                            world.log, lambda t: 8 if t == TOPIC else None)
        self.share_coordinator_service = self
        self.ensured = 0
        self.handlers = share_state.handlers(self)
        self.epoch = 0

    # the service's surface the handlers and the persister use
    def checked_coordinator(self) -> ShareCoordinator:
        return self.coordinator

    def ensure_state_topic(self) -> None:
        self.ensured += 1


class Cache:
    def __init__(self, world: World) -> None:
        self.world = world
        self.unreachable: frozenset[int] = frozenset()

    def has_topic(self, topic: str) -> bool:
        return topic == STATE and self.world.topic_exists

    def partition(self, topic: str, index: int) -> Any:
        if not self.has_topic(topic):
            return None
        return SimpleNamespace(leader=self.world.leaders.get(index, self.world.default_leader))

    def endpoint(self, broker_id: int, listener: str) -> tuple[str, int] | None:
        return ("127.0.0.1", 9000 + broker_id) if broker_id in self.world.brokers else None

    def topic_name(self, topic_id: bytes) -> str | None:
        return "jobs" if topic_id == TOPIC else None

    def partition_count(self, name: str) -> int:
        return 8


class Conn:
    """A connection to broker ``to``: the request goes through the codec into its handler."""

    def __init__(self, world: World, to: int) -> None:
        self.world = world
        self.to = to
        self.closed = False
        self.sent: list[tuple[int, int, dict[str, Any]]] = []

    def request(self, api_key: int, version: int, body: dict[str, Any]) -> defer.Deferred:
        self.sent.append((api_key, version, body))
        self.world.requests.append((self.to, api_key, version))
        if self.to in self.world.down:
            return defer.fail(ConnectionLostError("connection refused"))
        if self.to in self.world.silent:
            return defer.Deferred()  # never answered
        request = decode_request(encode_request(api_key, version, 5, "broker-1-share-persister", body)[4:])
        answer = self.world.brokers[self.to].handlers[api_key](request, SimpleNamespace(listener="INTERNAL"))
        d = defer.maybeDeferred(lambda: answer)
        return d.addCallback(lambda resp: decode_response(api_key, version,
                                                          encode_response(request.header, resp)[4:])[1])

    def close(self) -> None:
        self.closed = True


class World:
    def __init__(self, broker_ids: tuple[int, ...] = (1, 2, 3), default_leader: int = 2) -> None:
        self.clock = Clock()
        self.log = SharedLog()
        self.cache = Cache(self)
        self.topic_exists = True
        self.leaders: dict[int, int] = {}
        self.default_leader = default_leader
        self.down: set[int] = set()
        self.silent: set[int] = set()
        self.requests: list[tuple[int, int, int]] = []
        self.conns: list[Conn] = []
        self.brokers = {b: FakeBroker(self, b) for b in broker_ids}
        for index in range(N):
            self.elect(index, self.leaders.get(index, default_leader))
        self.persister = SharePersister(self.brokers[1], connect=self._connect, backoff_s=0.1, max_backoff_s=0.4,
                                        deadline_s=2.0, request_timeout_s=0.5)

    def _connect(self, broker_id: int, host: str, port: int) -> Conn:
        assert port == 9000 + broker_id
        conn = Conn(self, broker_id)
        self.conns.append(conn)
        return conn

    def elect(self, index: int, leader: int) -> None:
        """Leadership of state partition ``index`` moves to ``leader``, which loads it."""
        self.leaders[index] = leader
        for b, broker in self.brokers.items():
            broker.epoch += 1
            if b == leader:
                if broker.coordinator.on_elected(index, broker.epoch):
                    assert broker.coordinator.complete_load(index, broker.epoch, self.log.loaded(index))
            else:
                broker.coordinator.on_resigned(index, broker.epoch)


def index_of(partition: int = 0) -> int:
    return share_partition_for(GROUP, TOPIC, partition, N)


def result(d: defer.Deferred) -> Any:
    """The value a Deferred fired with (it must have fired)."""
    got: list[Any] = []
    d.addBoth(got.append)
    assert got, "the call has not finished"
    if isinstance(got[0], Exception) or hasattr(got[0], "raiseException"):
        got[0].raiseException()
    return got[0]


def settle(world: World, seconds: float = 5.0) -> None:
    for _ in range(int(seconds / 0.05)):
        world.clock.advance(0.05)


# ---------------------------------------------------------------------------------- the persister


def test_remote_coordinator_over_the_wire() -> None:
    w = World(default_leader=2)
    p = w.persister
    assert result(p.initialize(GROUP, {TOPIC: {0: InitializeData(3, -1), 1: InitializeData(3, 100)}})) == \
        {TOPIC: {0: PartitionResult(), 1: PartitionResult()}}
    got = result(p.read(GROUP, {TOPIC: {0: 1, 1: 1}}))
    assert got[TOPIC][0] == ReadResult(ErrorCode.NONE, None, 3, -1, ())
    assert got[TOPIC][1].start_offset == 100
    batches = (StateBatch(100, 104, 2, 1), StateBatch(105, 109, 0, 1))
    assert result(p.write(GROUP, {TOPIC: {1: WriteData(3, 1, 100, batches, 5)}})) == {TOPIC: {1: PartitionResult()}}
    assert result(p.read(GROUP, {TOPIC: {1: 1}}))[TOPIC][1].state_batches == batches
    assert result(p.read_summary(GROUP, {TOPIC: {1: 1}}))[TOPIC][1] == SummaryResult(ErrorCode.NONE, None, 3, 1, 100, 5)
    assert result(p.delete(GROUP, {TOPIC: [0, 1]})) == {TOPIC: {0: PartitionResult(), 1: PartitionResult()}}
    assert result(p.read_summary(GROUP, {TOPIC: {1: 1}}))[TOPIC][1].start_offset == -1
    # every request went to broker 2, in the versions Kafka 4.4's persister sends
    assert {(to, key, version) for to, key, version in w.requests} == {
        (2, 83, 0), (2, 84, 0), (2, 85, 1), (2, 87, 1), (2, 86, 0)}
    # one request per call: the share-partitions of a coordinator go together
    assert len([r for r in w.requests if r[1] == 83]) == 1
    assert w.brokers[2].coordinator.state(GROUP, TOPIC, 1) is None  # deleted there


def test_this_broker_as_coordinator_is_called_directly() -> None:
    w = World(default_leader=1)
    p = w.persister
    assert result(p.initialize(GROUP, {TOPIC: {0: InitializeData(0, 7)}}))[TOPIC][0] == PartitionResult()
    assert result(p.read(GROUP, {TOPIC: {0: 0}}))[TOPIC][0].start_offset == 7
    assert w.requests == []  # no RPC
    assert w.brokers[1].coordinator.state(GROUP, TOPIC, 0) is not None


def test_share_partitions_of_one_call_go_to_their_own_coordinators() -> None:
    w = World(default_leader=2)
    i0, others = index_of(0), [q for q in range(8) if index_of(q) != index_of(0)]
    w.elect(i0, 1)
    q = others[0]
    w.elect(index_of(q), 3)
    got = result(w.persister.initialize(GROUP, {TOPIC: {0: InitializeData(1, 0), q: InitializeData(1, 5)}}))
    assert got == {TOPIC: {0: PartitionResult(), q: PartitionResult()}}
    assert w.brokers[1].coordinator.state(GROUP, TOPIC, 0) is not None
    assert w.brokers[3].coordinator.state(GROUP, TOPIC, q) is not None
    assert [to for to, _, _ in w.requests] == [3]


def test_the_topic_is_created_on_first_use_and_the_call_waits_for_it() -> None:
    w = World(default_leader=2)
    w.topic_exists = False
    d = w.persister.initialize(GROUP, {TOPIC: {0: InitializeData(0)}})
    assert not d.called
    assert w.brokers[1].ensured == 1
    w.clock.advance(0.1)
    assert w.brokers[1].ensured == 2  # still missing: asked again on the retry
    w.topic_exists = True
    settle(w, 0.5)
    assert result(d) == {TOPIC: {0: PartitionResult()}}


def test_not_coordinator_is_retried_at_the_new_leader() -> None:
    w = World(default_leader=2)
    result(w.persister.initialize(GROUP, {TOPIC: {0: InitializeData(0, 0)}}))
    idx = index_of()
    # broker 2 resigns, but the metadata still names it: NOT_COORDINATOR until it names broker 3
    w.brokers[2].coordinator.on_resigned(idx, 99)
    d = w.persister.write(GROUP, {TOPIC: {0: WriteData(0, 0, 0, (StateBatch(0, 0, 2, 1),))}})
    assert not d.called
    w.elect(idx, 3)
    settle(w, 1.0)
    assert result(d) == {TOPIC: {0: PartitionResult()}}
    assert [to for to, key, _ in w.requests if key == 85] == [2, 3]
    state = w.brokers[3].coordinator.state(GROUP, TOPIC, 0)
    assert state is not None and state.state_batches == (StateBatch(0, 0, 2, 1),)


def test_a_lost_connection_is_retried_on_a_new_connection() -> None:
    w = World(default_leader=2)
    w.down.add(2)
    d = w.persister.initialize(GROUP, {TOPIC: {0: InitializeData(0, 0)}})
    assert not d.called
    first = w.conns[0]
    assert first.closed  # a failed connection is dropped
    w.down.clear()
    settle(w, 1.0)
    assert result(d) == {TOPIC: {0: PartitionResult()}}
    assert len(w.conns) == 2


def test_an_unanswered_request_times_out_and_is_retried() -> None:
    w = World(default_leader=2)
    w.silent.add(2)
    d = w.persister.initialize(GROUP, {TOPIC: {0: InitializeData(0, 0)}})
    w.clock.advance(0.5)  # the request timeout
    assert not d.called and w.conns[0].closed
    w.silent.clear()
    settle(w, 1.0)
    assert result(d) == {TOPIC: {0: PartitionResult()}}


def test_fencing_errors_are_final_at_once() -> None:
    w = World(default_leader=2)
    result(w.persister.initialize(GROUP, {TOPIC: {0: InitializeData(5, 0)}}))
    result(w.persister.read(GROUP, {TOPIC: {0: 3}}))
    before = len(w.requests)
    got = result(w.persister.write(GROUP, {TOPIC: {0: WriteData(4, 3, 0)}}))
    assert got[TOPIC][0].error == ErrorCode.FENCED_STATE_EPOCH
    got = result(w.persister.read(GROUP, {TOPIC: {0: 2}}))
    assert got[TOPIC][0].error == ErrorCode.FENCED_LEADER_EPOCH
    assert len(w.requests) == before + 2  # no retry


def test_retries_end_at_the_deadline_with_the_last_error() -> None:
    w = World(default_leader=2)
    w.elect(index_of(), -1)  # no leader
    d = w.persister.read(GROUP, {TOPIC: {0: 1}})
    settle(w, 1.9)
    assert not d.called
    settle(w, 0.5)
    assert result(d)[TOPIC][0].error == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_close_answers_what_is_pending_and_refuses_new_calls() -> None:
    w = World(default_leader=2)
    w.down.add(2)
    d = w.persister.initialize(GROUP, {TOPIC: {0: InitializeData(0, 0)}})
    w.persister.close()
    assert result(d)[TOPIC][0].error == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert result(w.persister.read(GROUP, {TOPIC: {0: 1}}))[TOPIC][0].error == ErrorCode.COORDINATOR_NOT_AVAILABLE


def test_invalid_arguments_fail_the_deferred() -> None:
    w = World()
    with pytest.raises(ValueError):
        result(w.persister.read("", {TOPIC: {0: 1}}))
    with pytest.raises(ValueError):
        result(w.persister.read(GROUP, {b"short": {0: 1}}))
    assert result(w.persister.read(GROUP, {})) == {}


# ---------------------------------------------------------------------------------- the handlers


def _request(api_key: int, version: int, body: dict[str, Any]) -> Any:
    return decode_request(encode_request(api_key, version, 9, "peer", body)[4:])


class Refusing:
    enabled = True

    def authorize_cluster(self, connection: Any, operation: Any) -> bool:
        return False


def test_without_cluster_action_every_partition_is_refused_and_nothing_happens() -> None:
    w = World(default_leader=2)
    broker = w.brokers[2]
    broker.authorizer = Refusing()
    body = {"group_id": GROUP, "topics": [{"topic_id": TOPIC, "partitions": [
        {"partition": 0, "state_epoch": 0, "start_offset": 0}, {"partition": 1, "state_epoch": 0, "start_offset": 0}]}]}
    answer = broker.handlers[83](_request(83, 0, body), SimpleNamespace())
    assert [(p["partition"], p["error_code"]) for p in answer["results"][0]["partitions"]] == \
        [(0, ErrorCode.CLUSTER_AUTHORIZATION_FAILED), (1, ErrorCode.CLUSTER_AUTHORIZATION_FAILED)]
    assert w.log.partitions == {}


def test_empty_requests_get_kafkas_empty_response() -> None:
    broker = World(default_leader=2).brokers[2]
    for body in ({"group_id": "", "topics": [{"topic_id": TOPIC, "partitions": [{"partition": 0}]}]},
                 {"group_id": GROUP, "topics": []},
                 {"group_id": GROUP, "topics": [{"topic_id": TOPIC, "partitions": []}]}):
        assert broker.handlers[86](_request(86, 0, body), SimpleNamespace()) == {"results": []}


def test_before_the_topic_exists_the_handler_creates_it() -> None:
    w = World(default_leader=2)
    w.topic_exists = False
    broker = w.brokers[2]
    body = {"group_id": GROUP, "topics": [{"topic_id": TOPIC, "partitions": [{"partition": 0, "leader_epoch": 0}]}]}
    answer = broker.handlers[87](_request(87, 1, body), SimpleNamespace())
    assert answer["results"][0]["partitions"][0]["error_code"] == ErrorCode.COORDINATOR_NOT_AVAILABLE
    assert broker.ensured == 1


def test_results_are_grouped_by_topic_in_request_order() -> None:
    w = World(default_leader=2)
    broker = w.brokers[2]
    other = bytes(range(0xA1, 0xB1))
    body = {"group_id": GROUP, "topics": [
        {"topic_id": TOPIC, "partitions": [{"partition": 3, "leader_epoch": 0}]},
        {"topic_id": other, "partitions": [{"partition": 0, "leader_epoch": 0}]},
        {"topic_id": TOPIC, "partitions": [{"partition": 9, "leader_epoch": 0}]},
    ]}
    answer = broker.handlers[87](_request(87, 1, body), SimpleNamespace())
    results = [(r["topic_id"], [(p["partition"], p["error_code"]) for p in r["partitions"]])
               for r in answer["results"]]
    not_here = {q for q in (3, 9) if w.leaders.get(index_of(q), 2) != 2}
    assert results == [
        (TOPIC, [(3, ErrorCode.NOT_COORDINATOR if 3 in not_here else ErrorCode.NONE),
                 (9, ErrorCode.NOT_COORDINATOR if 9 in not_here else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]),
        (other, [(0, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]),
    ]
