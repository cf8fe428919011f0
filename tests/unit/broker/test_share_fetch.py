"""ShareFetch (78) / ShareAcknowledge (79) at a share-partition leader, through the dispatcher.

Real logs in tmp dirs and a real replica manager; the share coordinator is the real plain-Python
one over an in-memory ``__share_group_state`` log, reached through a fake persister with the
broker persister's Deferred API; a ``task.Clock`` is the reactor (long polls, lock timers,
wake-ups a turn later); worker-thread work runs inline.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from types import SimpleNamespace
from typing import Any

import pytest
from twisted.internet import defer, task

from mafka.broker.dispatcher import Dispatcher, collect_handlers
from mafka.broker.metadata_cache import PartitionInfo
from mafka.broker.replica_manager import ReplicaManager
from mafka.broker.share_fetch import ShareFetchService, scan_batches, share_initializer
from mafka.errors import ErrorCode
from mafka.group.share.group_types import InitializeRequest
from mafka.group.share.partition_manager import READ_COMMITTED, ShareGroupSettings
from mafka.group.share.partition_state import RecordState
from mafka.log.config import LogConfig
from mafka.log.manager import LogManager
from mafka.log.segment import FileRegion
from mafka.share.coordinator import ShareCoordinator, ShareCoordinatorConfig
from mafka.share.state_types import PartitionResult, ReadResult
from mafka.wire.codec import decode_request, decode_response, encode_request
from mafka.wire.records import Record, build_batch, iter_records
from tests.unit.broker.test_replica_manager import leader_and_isr

TOPIC_ID = bytes(range(1, 17))
ELSEWHERE_ID = bytes(range(0x41, 0x51))  # topic "u", led by broker 2
GROUP = "queue"
ACCEPT, RELEASE = 1, 2
A = 1000  # a transactional producer id


class Metadata:
    """The metadata cache's answers the share handlers use."""

    brokers = {1: SimpleNamespace(rack=None), 2: SimpleNamespace(rack="rack-2")}

    def topic_name(self, topic_id: bytes) -> str | None:
        return {TOPIC_ID: "t", ELSEWHERE_ID: "u"}.get(bytes(topic_id))

    def topic_id(self, topic: str) -> bytes:
        return {"t": TOPIC_ID, "u": ELSEWHERE_ID}.get(topic, bytes(16))

    def partition(self, topic: str, index: int) -> PartitionInfo | None:
        if topic == "u" and index == 0:
            return PartitionInfo(2, 7, (2,), (2,), (), 0, 1)
        return None

    def endpoint(self, broker_id: int, listener: str) -> tuple[str, int] | None:
        return (f"broker{broker_id}", 9090 + broker_id) if listener == "PLAINTEXT" else None


class Persister:
    """The broker persister's API (Deferreds of {topic id: {partition: result}}) over a share coordinator."""

    def __init__(self, coordinator: ShareCoordinator) -> None:
        self.coordinator = coordinator

    def _each(self, group_id: str, topics: Any, call: Any) -> defer.Deferred:
        out: dict[bytes, dict[int, Any]] = {}
        for topic_id, parts in topics.items():
            for p, data in (parts.items() if isinstance(parts, dict) else ((p, None) for p in parts)):
                call(group_id, topic_id, p, data, lambda r, t=topic_id, p=p: out.setdefault(t, {}).__setitem__(p, r))
        return defer.succeed(out)

    def initialize(self, group_id: str, topics: Any) -> defer.Deferred:
        return self._each(group_id, topics, self.coordinator.initialize)

    def read(self, group_id: str, topics: Any) -> defer.Deferred:
        return self._each(group_id, topics, self.coordinator.read)

    def write(self, group_id: str, topics: Any) -> defer.Deferred:
        return self._each(group_id, topics, self.coordinator.write)


class StateLog:
    def __init__(self) -> None:
        self.records: list = []

    def append(self, partition: int, records: Any, done: Any) -> None:
        self.records.extend(records)
        done(ErrorCode.NONE, len(self.records) - 1)


class Closable:
    """What a connection's ``close`` is bound to at the network edge: it knows whether it closed."""

    def __init__(self) -> None:
        self.closed = False

    def close(self) -> None:
        self.closed = True


def make_env(tmp_path: Any, settings: ShareGroupSettings, max_sessions: int = 10) -> SimpleNamespace:
    clock = task.Clock()
    manager = LogManager([tmp_path / "d1"], LogConfig(), lambda: 1_000_000, broker_id=1, cluster_id="c")
    manager.startup()
    rm = ReplicaManager(1, manager, clock)
    rm.become_leader_or_follower(leader_and_isr(partitions=(0, 1)))
    coordinator = ShareCoordinator(ShareCoordinatorConfig(state_topic_num_partitions=1),
                                   lambda: int(clock.seconds() * 1000), StateLog())
    coordinator.on_elected(0, 0)
    coordinator.complete_load(0, 0, [])
    persister = Persister(coordinator)
    broker = SimpleNamespace(
        reactor=clock, replica_manager=rm, metadata_cache=Metadata(), share_persister=persister,
        run_blocking=lambda fn, *args: defer.maybeDeferred(fn, *args),
        config=SimpleNamespace(group_share_max_share_sessions=max_sessions, group_coordinator_rebalance_protocols=(
            "classic", "consumer", "share"), fetch_max_bytes=1 << 20),
    )
    broker.share_fetch = ShareFetchService(broker, settings=lambda _group: settings)
    # The group coordinator's part: the share-partition is initialized before it is assigned.
    done: list[bool] = []
    share_initializer(persister)(InitializeRequest(GROUP, 0, {TOPIC_ID: {0: -1, 1: -1}}), done.append)
    assert done == [True]
    return SimpleNamespace(clock=clock, rm=rm, manager=manager, broker=broker, coordinator=coordinator,
                           service=broker.share_fetch, dispatcher=Dispatcher(collect_handlers(broker)))


@pytest.fixture
def env(tmp_path: Any) -> Iterator[SimpleNamespace]:
    e = make_env(tmp_path, ShareGroupSettings(record_lock_duration_ms=2000, auto_offset_reset="earliest"))
    yield e
    e.manager.shutdown()


def connection(closable: Closable | None = None) -> SimpleNamespace:
    return SimpleNamespace(listener="PLAINTEXT", peer="127.0.0.1:5000", host="127.0.0.1",
                           close=(closable or Closable()).close)


def send(env: SimpleNamespace, api_key: int, version: int, body: dict, conn: Any = None) -> list:
    """Dispatches a request; returns a list that holds the decoded response once it is answered."""
    request = decode_request(encode_request(api_key, version, 5, "c", body)[4:])
    out: list = []

    def decoded(chunks: list) -> None:
        data = b"".join(c if isinstance(c, bytes) else c.read() for c in chunks)
        out.append(decode_response(api_key, version, data[4:])[1])

    result = env.dispatcher.dispatch(request, conn or connection())
    if hasattr(result, "addCallback"):
        result.addCallback(decoded)
    else:
        decoded(result)
    pump(env)
    return out


def pump(env: SimpleNamespace) -> None:
    """Runs what is due now (wake-ups run a reactor turn later), without moving time."""
    for _ in range(10):
        env.clock.advance(0)


def share_fetch(member: str, epoch: int, *, acks: tuple = (), max_wait_ms: int = 500, max_records: int = 500,
                topic_id: bytes = TOPIC_ID) -> dict:
    return {
        "group_id": GROUP, "member_id": member, "share_session_epoch": epoch, "max_wait_ms": max_wait_ms,
        "min_bytes": 1, "max_bytes": 1 << 20, "max_records": max_records, "batch_size": 500,
        "topics": [{"topic_id": topic_id, "partitions": [{"partition_index": 0, "acknowledgement_batches": [
            {"first_offset": f, "last_offset": last, "acknowledge_types": [t]} for f, last, t in acks]}]}],
        "forgotten_topics_data": [],
    }


def append(env: SimpleNamespace, records: bytes, partition: int = 0) -> None:
    out: list = []
    env.rm.append_records([("t", partition, records)], acks=1, timeout_ms=1000, produce_version=8,
                          max_message_bytes=lambda t: 1 << 20).addCallback(out.append)
    assert out[0][("t", partition)].error == ErrorCode.NONE


def batch(first: int, n: int, **kw: Any) -> bytes:
    return build_batch([Record(first + i, 1000 + i, None, b"v%d" % (first + i)) for i in range(n)],
                       base_offset=first, **kw)


def only(response: Any) -> Any:
    (topic,) = response.responses
    (p,) = topic.partitions
    return p


def acquired(p: Any) -> list[tuple[int, int, int]]:
    return [(r.first_offset, r.last_offset, r.delivery_count) for r in p.acquired_records]


def offsets(p: Any) -> list[int]:
    return [r.offset for r in iter_records(bytes(p.records))]


# ------------------------------------------------------------------------------ reading headers


def test_scan_batches_reads_whole_batches_only_and_stops_at_the_window(tmp_path: Any) -> None:
    data = batch(0, 2) + batch(2, 3) + batch(5, 1)
    cut = data + batch(6, 4)[:30]  # a batch the read's size limit cut short
    assert [(b.first_offset, b.last_offset) for b in scan_batches(cut, 100)] == [(0, 1), (2, 4), (5, 5)]
    path = tmp_path / "seg"
    path.write_bytes(b"x" * 7 + cut)
    fd = os.open(path, os.O_RDONLY)
    try:
        region = FileRegion(fd, 7, len(cut))
        scanned = scan_batches(region, 100)
        assert [(b.first_offset, b.position, b.size) for b in scanned] == [
            (0, 0, len(batch(0, 2))), (2, len(batch(0, 2)), len(batch(2, 3))),
            (5, len(batch(0, 2)) + len(batch(2, 3)), len(batch(5, 1)))]
        assert [b.first_offset for b in scan_batches(region, 3)] == [0, 2]  # past offset 3 nothing can be taken
    finally:
        os.close(fd)


# ------------------------------------------------------------------------------ fetching


def test_a_share_fetch_waits_for_an_append_and_gets_the_new_records(env: SimpleNamespace) -> None:
    out = send(env, 78, 1, share_fetch("a", 0))
    env.clock.advance(0)
    assert out == []  # loaded, nothing to acquire: parked
    append(env, batch(0, 3))
    env.clock.advance(0)  # the append's wake-up runs a turn later, well before max_wait_ms
    (response,) = out
    assert response.error_code == ErrorCode.NONE and response.acquisition_lock_timeout_ms == 2000
    p = only(response)
    assert acquired(p) == [(0, 2, 1)]
    assert offsets(p) == [0, 1, 2]


def test_a_parked_share_fetch_answers_empty_at_max_wait(env: SimpleNamespace) -> None:
    out = send(env, 78, 1, share_fetch("a", 0, max_wait_ms=500))
    env.clock.advance(0.499)
    assert out == []
    env.clock.advance(0.001)
    assert acquired(only(out[0])) == [] and bytes(only(out[0]).records) == b""  # a new session lists its partitions


def test_the_records_sent_are_the_batches_holding_the_acquired_offsets(env: SimpleNamespace) -> None:
    for first in (0, 2, 4):
        append(env, batch(first, 2))
    a = only(send(env, 78, 1, share_fetch("a", 0, max_records=3))[0])
    assert acquired(a) == [(0, 2, 1)]
    assert offsets(a) == [0, 1, 2, 3]  # two whole batches; the client keeps the acquired offsets
    b = only(send(env, 78, 1, share_fetch("b", 0))[0])
    assert acquired(b) == [(3, 5, 1)] and offsets(b) == [2, 3, 4, 5]


def test_acknowledgements_piggyback_and_the_final_epoch_releases_what_is_held(env: SimpleNamespace) -> None:
    append(env, batch(0, 4))
    assert acquired(only(send(env, 78, 1, share_fetch("a", 0))[0])) == [(0, 3, 1)]
    out = send(env, 78, 1, share_fetch("a", 1, acks=((0, 1, ACCEPT),), max_wait_ms=0))
    assert only(out[0]).acknowledge_error_code == ErrorCode.NONE
    final = send(env, 78, 1, share_fetch("a", -1, max_wait_ms=0))
    assert final[0].error_code == ErrorCode.NONE
    assert env.service.sessions.get(GROUP, "a") is None
    # 2-3 were held by a when its session closed: b gets them, 0-1 are finished.
    assert acquired(only(send(env, 78, 1, share_fetch("b", 0))[0])) == [(2, 3, 2)]


def test_a_closed_connection_releases_its_members_records(env: SimpleNamespace) -> None:
    append(env, batch(0, 2))
    closable = Closable()
    assert acquired(only(send(env, 78, 1, share_fetch("a", 0), connection(closable))[0])) == [(0, 1, 1)]
    env.service.sweep_connections()
    assert env.service.sessions.get(GROUP, "a") is not None  # still open
    closable.close()
    env.service.sweep_connections()
    assert env.service.sessions.get(GROUP, "a") is None
    assert acquired(only(send(env, 78, 1, share_fetch("b", 0))[0])) == [(0, 1, 2)]


def test_a_member_gone_from_the_group_releases_its_records(env: SimpleNamespace) -> None:
    append(env, batch(0, 2))
    send(env, 78, 1, share_fetch("a", 0))
    env.service.member_gone(GROUP, "a")  # what the group coordinator calls
    assert acquired(only(send(env, 78, 1, share_fetch("b", 0))[0])) == [(0, 1, 2)]


def test_an_expired_lock_wakes_a_waiting_fetch(env: SimpleNamespace) -> None:
    append(env, batch(0, 2))
    send(env, 78, 1, share_fetch("a", 0))
    out = send(env, 78, 1, share_fetch("b", 0, max_wait_ms=5000))
    env.clock.advance(1.999)
    assert out == []
    env.clock.advance(0.001)  # a's lock expires
    env.clock.advance(0)
    assert acquired(only(out[0])) == [(0, 1, 2)]


def test_read_committed_never_delivers_aborted_or_undecided_records(tmp_path: Any) -> None:
    env = make_env(tmp_path, ShareGroupSettings(auto_offset_reset="earliest", isolation_level=READ_COMMITTED))
    try:
        append(env, build_batch([Record(0, 1000, None, b"t0"), Record(1, 1001, None, b"t1")], producer_id=A,
                                producer_epoch=0, base_sequence=0, is_transactional=True))
        append(env, batch(2, 1))
        out = send(env, 78, 1, share_fetch("a", 0, max_wait_ms=500))
        env.clock.advance(0)
        assert out == []  # the transaction is undecided: the LSO is 0
        markers: list = []
        env.rm.append_txn_markers([("t", 0, A, 0, 0, False)], 1000).addCallback(markers.append)  # ABORT
        assert markers == [{("t", 0): ErrorCode.NONE}]
        env.clock.advance(0)
        p = only(out[0])
        assert acquired(p) == [(2, 2, 1)]  # 0-1 aborted, 3 the marker: archived, never delivered
        state = env.service.manager.partitions()[0].state
        assert (state.start_offset, state.end_offset) == (2, 4)  # 0-1 finished (archived): below the SPSO
        assert state.record(3).state is RecordState.ARCHIVED
    finally:
        env.manager.shutdown()


def test_a_group_config_change_applies_to_share_partitions_already_loaded(tmp_path: Any) -> None:
    """Kafka reads a share group's configs at each use: librdkafka's 0177 switches a consuming group
    from read_uncommitted to read_committed and expects the next aborted transaction unseen."""
    current = [ShareGroupSettings(record_lock_duration_ms=2000, auto_offset_reset="earliest")]
    env = make_env(tmp_path, current[0])
    env.service.settings = lambda _group: current[0]
    try:
        append(env, batch(0, 1))
        assert acquired(only(send(env, 78, 1, share_fetch("a", 0))[0])) == [(0, 0, 1)]  # loaded, uncommitted
        current[0] = ShareGroupSettings(record_lock_duration_ms=5000, auto_offset_reset="earliest",
                                        isolation_level=READ_COMMITTED)
        append(env, build_batch([Record(1, 1000, None, b"t1"), Record(2, 1001, None, b"t2")], producer_id=A,
                                producer_epoch=0, base_offset=1, base_sequence=0, is_transactional=True))
        markers: list = []
        env.rm.append_txn_markers([("t", 0, A, 0, 0, False)], 1000).addCallback(markers.append)  # ABORT
        append(env, batch(4, 1))
        out = send(env, 78, 1, share_fetch("a", 1, acks=((0, 0, ACCEPT),)))
        response = out[0]
        assert acquired(only(response)) == [(4, 4, 1)]  # 1-2 aborted, 3 the marker: never delivered now
        assert response.acquisition_lock_timeout_ms == 5000
        sp = env.service.manager.partitions()[0]
        assert sp.settings == current[0] and sp.state is not None
        assert sp.state.config.record_lock_duration_ms == 5000
        env.clock.advance(4.999)
        assert sp.state.record(4).state is RecordState.ACQUIRED  # locked for the new duration
        env.clock.advance(0.001)
        assert sp.state.record(4).state is RecordState.AVAILABLE
    finally:
        env.manager.shutdown()


# ------------------------------------------------------------------------------ refusals


def test_sessions_refuse_bad_epochs(env: SimpleNamespace) -> None:
    assert send(env, 78, 1, share_fetch("a", 1))[0].error_code == ErrorCode.SHARE_SESSION_NOT_FOUND
    send(env, 78, 1, share_fetch("a", 0, max_wait_ms=0))
    assert send(env, 78, 1, share_fetch("a", 5))[0].error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    opening_with_acks = send(env, 78, 1, share_fetch("b", 0, acks=((0, 0, ACCEPT),)))[0]
    assert opening_with_acks.error_code == ErrorCode.INVALID_REQUEST
    ack_epoch_0 = {"group_id": GROUP, "member_id": "a", "share_session_epoch": 0, "topics": []}
    assert send(env, 79, 1, ack_epoch_0)[0].error_code == ErrorCode.INVALID_SHARE_SESSION_EPOCH
    assert send(env, 78, 1, share_fetch("", 0))[0].error_code == ErrorCode.INVALID_REQUEST  # no member id


def test_the_session_limit_is_answered_after_max_wait(tmp_path: Any) -> None:
    env = make_env(tmp_path, ShareGroupSettings(auto_offset_reset="earliest"), max_sessions=1)
    try:
        send(env, 78, 1, share_fetch("a", 0, max_wait_ms=0))
        out = send(env, 78, 1, share_fetch("b", 0, max_wait_ms=300))
        env.clock.advance(0.299)
        assert out == []
        env.clock.advance(0.001)
        assert out[0].error_code == ErrorCode.SHARE_SESSION_LIMIT_REACHED
    finally:
        env.manager.shutdown()


def test_a_partition_led_elsewhere_names_its_leader(env: SimpleNamespace) -> None:
    response = send(env, 78, 1, share_fetch("a", 0, topic_id=ELSEWHERE_ID, max_wait_ms=0))[0]
    p = only(response)
    assert p.error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    assert (p.current_leader.leader_id, p.current_leader.leader_epoch) == (2, 7)
    assert [(e.node_id, e.host, e.port, e.rack) for e in response.node_endpoints] == [(2, "broker2", 9092, "rack-2")]
    unknown = only(send(env, 78, 1, share_fetch("b", 0, topic_id=bytes(16), max_wait_ms=0))[0])
    assert unknown.error_code == ErrorCode.UNKNOWN_TOPIC_ID


def test_share_acknowledge_answers_per_partition(env: SimpleNamespace) -> None:
    append(env, batch(0, 3))
    send(env, 78, 1, share_fetch("a", 0))

    def ack(epoch: int, first: int, last: int, kind: int, topic_id: bytes = TOPIC_ID) -> Any:
        body = {"group_id": GROUP, "member_id": "a", "share_session_epoch": epoch, "topics": [
            {"topic_id": topic_id, "partitions": [{"partition_index": 0, "acknowledgement_batches": [
                {"first_offset": first, "last_offset": last, "acknowledge_types": [kind]}]}]}]}
        return send(env, 79, 1, body)[0]

    assert only(ack(1, 0, 5, ACCEPT)).error_code == ErrorCode.INVALID_RECORD_STATE  # 3-5 not held
    assert only(ack(2, 2, 1, ACCEPT)).error_code == ErrorCode.INVALID_REQUEST
    elsewhere = ack(3, 0, 0, ACCEPT, ELSEWHERE_ID)
    assert only(elsewhere).error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER and elsewhere.node_endpoints[0].node_id == 2
    assert only(ack(4, 0, 2, RELEASE)).error_code == ErrorCode.NONE
    assert acquired(only(send(env, 78, 1, share_fetch("b", 0))[0])) == [(0, 2, 2)]


def test_share_groups_off_is_unsupported_version(env: SimpleNamespace) -> None:
    env.broker.config.group_coordinator_rebalance_protocols = ("classic", "consumer")
    assert send(env, 78, 1, share_fetch("a", 0))[0].error_code == ErrorCode.UNSUPPORTED_VERSION


def test_persister_adapter_hands_over_one_share_partitions_result(env: SimpleNamespace) -> None:
    from mafka.broker.share_fetch import PersisterAdapter
    from mafka.group.share.state_records import SharePartitionKey

    got: list = []
    PersisterAdapter(env.broker.share_persister).read(SharePartitionKey(GROUP, TOPIC_ID, 0), 1, got.append)
    assert got == [ReadResult(ErrorCode.NONE, None, 0, -1, ())]
    missing: list = []
    adapter = PersisterAdapter(SimpleNamespace(write=lambda g, t: defer.succeed({})))
    adapter.write(SharePartitionKey(GROUP, TOPIC_ID, 0), None, missing.append)  # type: ignore[arg-type]
    assert [r.error for r in missing] == [ErrorCode.UNKNOWN_SERVER_ERROR]
    assert isinstance(missing[0], PartitionResult)


def test_acls_read_on_the_group_and_on_each_topic(env: SimpleNamespace) -> None:
    from mafka.security.acl import AclOperation, ResourceType

    allowed = {(ResourceType.GROUP, GROUP), (ResourceType.TOPIC, "u")}
    env.broker.authorizer = SimpleNamespace(
        enabled=True,
        authorize=lambda _conn, op, rtype, name: op == AclOperation.READ and (rtype, name) in allowed,
    )
    append(env, batch(0, 1))
    p = only(send(env, 78, 1, share_fetch("a", 0))[0])
    assert p.error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED and acquired(p) == []
    ack = {"group_id": GROUP, "member_id": "a", "share_session_epoch": 1, "topics": [
        {"topic_id": TOPIC_ID, "partitions": [{"partition_index": 0, "acknowledgement_batches": [
            {"first_offset": 0, "last_offset": 0, "acknowledge_types": [ACCEPT]}]}]}]}
    assert only(send(env, 79, 1, ack)[0]).error_code == ErrorCode.TOPIC_AUTHORIZATION_FAILED
    allowed.discard((ResourceType.GROUP, GROUP))
    assert send(env, 78, 1, share_fetch("b", 0))[0].error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    assert send(env, 79, 1, {**ack, "share_session_epoch": 2})[0].error_code == ErrorCode.GROUP_AUTHORIZATION_FAILED
    allowed.update({(ResourceType.GROUP, GROUP), (ResourceType.TOPIC, "t")})
    assert acquired(only(send(env, 78, 1, share_fetch("b", 0))[0])) == [(0, 0, 1)]  # nothing was read before


def test_max_records_is_shared_round_robin_over_the_partitions(env: SimpleNamespace) -> None:
    append(env, batch(0, 5), partition=0)
    append(env, batch(0, 5), partition=1)
    body = share_fetch("a", 0, max_records=2)
    body["topics"][0]["partitions"].append({"partition_index": 1, "acknowledgement_batches": []})
    first = send(env, 78, 1, body)[0]
    got = {p.partition_index: acquired(p) for p in first.responses[0].partitions}
    assert got == {0: [(0, 1, 1)], 1: []}  # a new session: every partition listed
    second = send(env, 78, 1, {**share_fetch("a", 1, max_records=2), "topics": []})[0]
    got = {p.partition_index: acquired(p) for p in second.responses[0].partitions}
    assert got == {1: [(0, 1, 1)]}  # epoch 1 starts at the second partition; only news is listed
