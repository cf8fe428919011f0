"""The group coordinator's edge on a broker: reading ``__consumer_offsets``, appending to it, leadership, creation.

* :func:`read_partition_records` over a real :class:`~mafka.log.log.Log`;
* :class:`OffsetsTopicLog` against a fake replica manager;
* :meth:`GroupService.on_leadership` with a fake ``run_blocking`` whose
  Deferreds the test fires (no threads, no reactor: a Twisted ``task.Clock``);
* :meth:`GroupService.ensure_offsets_topic` with ZooKeeper creation patched out.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from twisted.internet import defer, task

from mafka.broker.config import BrokerConfig
from mafka.broker.group_service import (
    GroupService,
    OffsetsTopicLog,
    ReactorTimers,
    read_partition_records,
)
from mafka.broker.replica_manager import ProduceResult
from mafka.errors import ErrorCode as E
from mafka.group.coordinator import JoinResult
from mafka.group.offsets import LogRecord, OffsetAndMetadata, TxnMarker
from mafka.group.offsets_records import (
    OffsetKey,
    OffsetValue,
    decode_record,
    encode_key,
    encode_value,
)
from mafka.log.config import LogConfig
from mafka.log.log import Log
from mafka.log.validation import validate_produce_batch
from mafka.wire.compression import CompressionType
from mafka.wire.records import (
    ControlRecordType,
    Record,
    build_batch,
    build_control_batch,
    decode_batch,
)

TOPIC = "__consumer_offsets"
GROUP = "group"


class LogClock:
    def __init__(self) -> None:
        self.now = 1_000_000

    def __call__(self) -> int:
        return self.now


def records_batch(pairs, *, compression: int = 0) -> bytes:
    return build_batch(
        [Record(offset=i, timestamp=1_000_000 + i, key=k, value=v) for i, (k, v) in enumerate(pairs)],
        compression=compression,
    )


# ------------------------------------------------------------------ read_partition_records


def plain_records(pairs, batch_offset: int) -> list[LogRecord]:
    return [LogRecord(k, v, -1, False, batch_offset) for k, v in pairs]


def filled_log(tmp_path, *, start: int = 100, segment_bytes: int = 1 << 20):
    """A log starting at ``start`` with plain, compressed, tombstone, keyless, transactional
    and control batches; returns it and what :func:`read_partition_records` must read."""
    log = Log.open(tmp_path / f"{TOPIC}-0", LogConfig(segment_bytes=segment_bytes), LogClock(), log_start_offset=start)
    assert (log.log_start_offset, log.next_offset) == (start, start)
    plain = [(b"k1", b"v1"), (b"k2", b"v2"), (b"k3", b"v3")]
    compressed = [(b"k4", b"v4" * 50), (b"k5", b"v5" * 50), (b"k2", b"v2-again")]
    tombstones = [(b"k1", None), (b"k6", b"v6"), (b"k4", None)]
    txn = [(b"k9", b"v9"), (b"k10", b"v10")]
    log.append_as_leader(records_batch(plain), 0)
    log.append_as_leader(records_batch(compressed, compression=CompressionType.GZIP), 0)
    log.append_as_leader(records_batch(tombstones), 0)
    log.append_as_leader(records_batch([(None, b"keyless"), (b"k7", b"v7")]), 0)
    log.append_as_follower(build_control_batch(
        ControlRecordType.COMMIT, producer_id=1, producer_epoch=0, base_offset=log.next_offset, timestamp=1_000_000))
    log.append_as_leader(records_batch([(b"k8", b"")]), 0)
    log.append_as_leader(build_batch(
        [Record(offset=i, timestamp=1_000_000, key=k, value=v) for i, (k, v) in enumerate(txn)],
        producer_id=5, producer_epoch=2, base_sequence=0, is_transactional=True), 0)
    log.append_as_follower(build_control_batch(
        ControlRecordType.ABORT, producer_id=5, producer_epoch=2, base_offset=log.next_offset, timestamp=1_000_000))
    base = start
    expected = [
        *plain_records(plain, base), *plain_records(compressed, base + 3), *plain_records(tombstones, base + 6),
        LogRecord(b"k7", b"v7", -1, False, base + 9),
        TxnMarker(1, True, base + 11),
        LogRecord(b"k8", b"", -1, False, base + 12),
        LogRecord(b"k9", b"v9", 5, True, base + 13), LogRecord(b"k10", b"v10", 5, True, base + 13),
        TxnMarker(5, False, base + 15),
    ]
    return log, expected


@pytest.mark.parametrize("buffer_bytes", [1, 100, 1 << 20])
def test_read_partition_records_returns_every_keyed_record_in_order(tmp_path, buffer_bytes):
    log, expected = filled_log(tmp_path)
    assert log.next_offset == 100 + 16
    assert read_partition_records(log, buffer_bytes) == expected


def test_read_partition_records_across_segments(tmp_path):
    log, expected = filled_log(tmp_path, segment_bytes=150)
    assert len(log.segments) > 2
    assert read_partition_records(log, 1) == expected
    assert read_partition_records(log, 10_000) == expected


def test_read_partition_records_starts_at_the_log_start_offset_inside_a_batch(tmp_path):
    log, expected = filled_log(tmp_path)
    assert log.increment_log_start_offset(101)  # inside the first batch
    assert read_partition_records(log, 1 << 20) == expected[1:]
    assert log.increment_log_start_offset(104)  # inside the compressed batch
    assert read_partition_records(log, 1) == expected[4:]


def test_read_partition_records_of_an_empty_log(tmp_path):
    log = Log.open(tmp_path / f"{TOPIC}-3", LogConfig(), LogClock(), log_start_offset=7)
    assert read_partition_records(log, 1 << 20) == []


# ------------------------------------------------------------------ OffsetsTopicLog


class FakeReplicaManager:
    def __init__(self) -> None:
        self.calls: list[dict] = []
        self.deferreds: list[defer.Deferred] = []
        self.raise_error: Exception | None = None
        self.partitions: dict = {}

    def append_records(self, entries, *, acks, timeout_ms, produce_version, max_message_bytes, **extra):
        if self.raise_error is not None:
            raise self.raise_error
        self.calls.append({
            "entries": list(entries), "acks": acks, "timeout_ms": timeout_ms,
            "produce_version": produce_version, "max_message_bytes": max_message_bytes, "extra": extra,
        })
        d: defer.Deferred = defer.Deferred()
        self.deferreds.append(d)
        return d


def append_broker(**config):
    return SimpleNamespace(
        config=BrokerConfig(**config),
        replica_manager=FakeReplicaManager(),
        max_message_bytes=lambda topic: 1_000_012,
    )


def test_offsets_topic_log_appends_one_batch_with_the_commit_acks_and_timeout():
    broker = append_broker(offsets_commit_required_acks=1, offsets_commit_timeout_ms=1234)
    done = []
    records = [(b"key-1", b"value-1"), (b"key-2", None), (b"key-3", b"value-3")]
    OffsetsTopicLog(broker).append(7, records, lambda error, offset: done.append((error, offset)))
    (call,) = broker.replica_manager.calls
    assert (call["acks"], call["timeout_ms"]) == (1, 1234)
    assert call["max_message_bytes"](TOPIC) == 1_000_012
    ((topic, partition, batch),) = call["entries"]
    assert (topic, partition) == (TOPIC, 7)
    decoded = decode_batch(batch)
    assert [(r.offset, r.key, r.value) for r in decoded.records] == [
        (0, b"key-1", b"value-1"), (1, b"key-2", None), (2, b"key-3", b"value-3")]
    assert decoded.header.compression == CompressionType.NONE
    # The batch passes the produce validation the replica manager applies.
    validate_produce_batch(batch, produce_version=call["produce_version"], max_message_bytes=1_000_012)
    assert done == []  # nothing until the append completes
    broker.replica_manager.deferreds[0].callback({(TOPIC, 7): ProduceResult(E.NONE, 42)})
    assert done == [(E.NONE, 42)]


def test_offsets_topic_log_plain_appends_carry_no_producer_and_no_origin():
    broker = append_broker()
    OffsetsTopicLog(broker).append(0, [(b"k", b"v")], lambda *_: None)
    (call,) = broker.replica_manager.calls
    assert call["extra"] == {}
    header = decode_batch(call["entries"][0][2]).header
    assert (header.producer_id, header.producer_epoch, header.base_sequence, header.is_transactional) == (-1, -1, -1, False)


def test_offsets_topic_log_appends_a_transactional_batch_as_the_coordinator():
    """Kafka's storeOffsets: producer id and epoch, base sequence 0, transactional bit;
    appended with the coordinator's origin (epoch fenced, sequence not checked)."""
    broker = append_broker()
    done = []
    records = [(b"key-1", b"value-1"), (b"key-2", b"value-2")]
    OffsetsTopicLog(broker).append(4, records, lambda error, offset: done.append((error, offset)),
                                   producer_id=1234, producer_epoch=7)
    (call,) = broker.replica_manager.calls
    assert call["extra"] == {"origin": "coordinator"}
    ((_, _, batch),) = call["entries"]
    decoded = decode_batch(batch)
    header = decoded.header
    assert (header.producer_id, header.producer_epoch, header.base_sequence) == (1234, 7, 0)
    assert header.is_transactional and not header.is_control
    assert [(r.key, r.value) for r in decoded.records] == records
    validate_produce_batch(batch, produce_version=call["produce_version"], max_message_bytes=1_000_012)
    broker.replica_manager.deferreds[0].callback({(TOPIC, 4): ProduceResult(E.NONE, 9)})
    assert done == [(E.NONE, 9)]


def test_offsets_topic_log_defaults_and_compression():
    broker = append_broker(offsets_topic_compression_codec=CompressionType.GZIP)
    OffsetsTopicLog(broker).append(0, [(b"k", b"v" * 100)], lambda *_: None)
    (call,) = broker.replica_manager.calls
    assert (call["acks"], call["timeout_ms"]) == (-1, 5000)  # Kafka's defaults
    ((_, _, batch),) = call["entries"]
    decoded = decode_batch(batch)
    assert decoded.header.compression == CompressionType.GZIP
    assert [(r.key, r.value) for r in decoded.records] == [(b"k", b"v" * 100)]


def test_offsets_topic_log_maps_errors_and_failures():
    broker = append_broker()
    done = []
    log = OffsetsTopicLog(broker)
    for _ in range(2):
        log.append(3, [(b"k", b"v")], lambda error, offset: done.append((error, offset)))
    first, second = broker.replica_manager.deferreds
    first.callback({(TOPIC, 3): ProduceResult(E.NOT_ENOUGH_REPLICAS)})
    second.errback(RuntimeError("replica manager broke"))
    broker.replica_manager.raise_error = RuntimeError("no partition")
    log.append(3, [(b"k", b"v")], lambda error, offset: done.append((error, offset)))
    assert done == [(E.NOT_ENOUGH_REPLICAS, None), (E.UNKNOWN_SERVER_ERROR, None), (E.UNKNOWN_SERVER_ERROR, None)]


# ------------------------------------------------------------------ GroupService


class Cache:
    def __init__(self, brokers: int = 1) -> None:
        self.topics: set[str] = set()
        self.brokers = {i: SimpleNamespace(rack=None) for i in range(1, brokers + 1)}

    def has_topic(self, topic: str) -> bool:
        return topic in self.topics


class ServiceBroker:
    def __init__(self, brokers: int = 1, **config) -> None:
        config.setdefault("group_initial_rebalance_delay_ms", 100)
        self.config = BrokerConfig(**config)
        self.reactor = task.Clock()
        self.reactor.advance(1_700_000_000)
        self.replica_manager = FakeReplicaManager()
        self.metadata_cache = Cache(brokers)
        self.zk = object()
        self.loads: list[tuple] = []

    def max_message_bytes(self, topic: str) -> int:
        return 1_000_012

    def run_blocking(self, fn, *args) -> defer.Deferred:
        d: defer.Deferred = defer.Deferred()
        self.loads.append((fn, args, d))
        return d


def offsets_log(tmp_path, name: str, commits: dict[tuple[str, int], int]) -> Log:
    log = Log.open(tmp_path / name, LogConfig(), LogClock())
    pairs = [
        (encode_key(OffsetKey(GROUP, topic, index)), encode_value(OffsetValue(offset, -1, "", 1_000, None)))
        for (topic, index), offset in commits.items()
    ]
    if pairs:
        log.append_as_leader(records_batch(pairs), 0)
    return log


def run_load(broker: ServiceBroker, index: int = -1, records=None) -> None:
    """Run the queued blocking read (for real, unless ``records`` is given) and deliver its result."""
    fn, args, d = broker.loads[index]
    d.callback(fn(*args) if records is None else records)


def service_with_partition(tmp_path, commits=None, **kw):
    broker = ServiceBroker(**kw)
    service = GroupService(broker)
    p = service.coordinator.partition_for(GROUP)
    log = offsets_log(tmp_path, f"{TOPIC}-{p}", commits if commits is not None else {("foo", 0): 42})
    broker.replica_manager.partitions[(TOPIC, p)] = SimpleNamespace(log=log)
    return broker, service, p


def fetch(service: GroupService):
    error, entries = service.coordinator.fetch_offsets(GROUP, [("foo", 0)])
    return error, {tp: e.offset for tp, e in entries.items()}


def test_becoming_leader_loads_the_partition_through_run_blocking_then_serves_it(tmp_path):
    broker, service, p = service_with_partition(tmp_path, offsets_load_buffer_size=4096)
    assert fetch(service)[0] == E.NOT_COORDINATOR
    service.on_leadership(TOPIC, p, True, 3)
    ((fn, args, _),) = broker.loads
    assert fn is read_partition_records
    assert args == (broker.replica_manager.partitions[(TOPIC, p)].log, 4096)
    assert fetch(service)[0] == E.COORDINATOR_LOAD_IN_PROGRESS  # loading in the worker
    run_load(broker)
    assert fetch(service) == (E.NONE, {("foo", 0): 42})
    assert p in service.coordinator.owned_partitions()
    # The same leadership again: nothing to reload.
    service.on_leadership(TOPIC, p, True, 3)
    assert len(broker.loads) == 1


def test_a_stale_load_is_ignored(tmp_path):
    broker, service, p = service_with_partition(tmp_path)
    service.on_leadership(TOPIC, p, True, 3)
    service.on_leadership(TOPIC, p, False, 4)
    service.on_leadership(TOPIC, p, True, 5)
    assert len(broker.loads) == 2
    stale = [(encode_key(OffsetKey(GROUP, "foo", 0)), encode_value(OffsetValue(7, -1, "", 1_000, None)))]
    run_load(broker, 0, stale)  # epoch 3's read finishes late: ignored
    assert fetch(service)[0] == E.COORDINATOR_LOAD_IN_PROGRESS
    run_load(broker, 1)
    assert fetch(service) == (E.NONE, {("foo", 0): 42})


def test_a_new_epoch_while_loading_keeps_the_running_load(tmp_path):
    broker, service, p = service_with_partition(tmp_path)
    service.on_leadership(TOPIC, p, True, 3)
    service.on_leadership(TOPIC, p, True, 4)  # still the leader: no second read
    assert len(broker.loads) == 1
    run_load(broker)
    assert fetch(service) == (E.NONE, {("foo", 0): 42})
    service.on_leadership(TOPIC, p, True, 5)  # loaded, new epoch: groups kept, no reload
    assert len(broker.loads) == 1 and fetch(service) == (E.NONE, {("foo", 0): 42})
    service.on_leadership(TOPIC, p, False, 4)  # an older epoch's resignation is fenced
    assert fetch(service) == (E.NONE, {("foo", 0): 42})


def test_a_load_finishing_after_resignation_is_ignored(tmp_path):
    broker, service, p = service_with_partition(tmp_path)
    service.on_leadership(TOPIC, p, True, 3)
    service.on_leadership(TOPIC, p, False, 4)
    run_load(broker)
    assert fetch(service)[0] == E.NOT_COORDINATOR
    assert p not in service.coordinator.owned_partitions()


def test_becoming_follower_unloads_the_groups(tmp_path):
    broker, service, p = service_with_partition(tmp_path)
    service.on_leadership(TOPIC, p, True, 3)
    run_load(broker)
    joined: list[JoinResult] = []
    service.coordinator.join_group(GROUP, "", None, False, "cli", "/127.0.0.1", 10_000, 10_000, "consumer",
                                   [("range", b"")], joined.append)
    assert joined == [] and broker.reactor.getDelayedCalls()  # parked for the initial delay
    service.on_leadership(TOPIC, p, False, 4)
    assert [r.error for r in joined] == [E.NOT_COORDINATOR]
    assert fetch(service)[0] == E.NOT_COORDINATOR
    assert broker.reactor.getDelayedCalls() == []  # its timers were cancelled
    # Leader again, later: loads again.
    service.on_leadership(TOPIC, p, True, 5)
    run_load(broker)
    assert fetch(service) == (E.NONE, {("foo", 0): 42})


def test_other_topics_are_ignored(tmp_path):
    broker, service, p = service_with_partition(tmp_path)
    service.on_leadership("foo", p, True, 1)
    assert broker.loads == [] and fetch(service)[0] == E.NOT_COORDINATOR
    service.on_leadership(TOPIC, p, True, 1)
    run_load(broker)
    service.on_leadership("foo", p, False, 2)
    assert fetch(service) == (E.NONE, {("foo", 0): 42})


def test_a_missing_partition_or_a_failed_read_gives_up_the_load(tmp_path):
    broker, service, p = service_with_partition(tmp_path)
    other = (p + 1) % broker.config.offsets_topic_num_partitions
    service.on_leadership(TOPIC, other, True, 1)  # no such replica here
    assert broker.loads == [] and other not in service.coordinator.owned_partitions()
    assert not service.coordinator.is_loading()
    service.on_leadership(TOPIC, p, True, 1)
    broker.loads[0][2].errback(OSError("disk"))
    assert fetch(service)[0] == E.NOT_COORDINATOR and not service.coordinator.is_loading()


def test_group_service_commits_reach_the_replica_manager(tmp_path):
    broker, service, p = service_with_partition(tmp_path, commits={})
    service.on_leadership(TOPIC, p, True, 1)
    run_load(broker)
    answers = []
    service.coordinator.commit_offsets(GROUP, "", None, -1, {("foo", 1): OffsetAndMetadata(9, -1, "m", 5, None)},
                                       answers.append)
    ((call_entries, d),) = [(c["entries"], d) for c, d in zip(broker.replica_manager.calls,
                                                                 broker.replica_manager.deferreds, strict=True)]
    ((topic, partition, batch),) = call_entries
    assert (topic, partition) == (TOPIC, p)
    ((key, value),) = [(r.key, r.value) for r in decode_batch(batch).records]
    assert decode_record(key, value) == (OffsetKey(GROUP, "foo", 1), OffsetValue(9, -1, "m", 5, None))
    assert answers == []
    d.callback({(TOPIC, p): ProduceResult(E.NONE, 0)})
    assert answers == [{("foo", 1): E.NONE}]
    error, entries = service.coordinator.fetch_offsets(GROUP, [("foo", 1)])
    assert (error, entries[("foo", 1)].offset) == (E.NONE, 9)


def test_reactor_timers_fire_in_milliseconds_and_cancel():
    reactor = task.Clock()
    timers = ReactorTimers(reactor)
    fired = []
    timers.call_later(1500, lambda: fired.append("a"))
    cancelled = timers.call_later(1000, lambda: fired.append("b"))
    timers.call_later(-5, lambda: fired.append("now"))
    cancelled.cancel()
    reactor.advance(0)
    assert fired == ["now"]
    reactor.advance(1.499)
    assert fired == ["now"]
    reactor.advance(0.001)
    assert fired == ["now", "a"]
    cancelled.cancel()  # twice: harmless
    assert reactor.getDelayedCalls() == []


# ------------------------------------------------------------------ ensure_offsets_topic


@pytest.fixture
def creations(monkeypatch):
    calls: list[dict] = []

    def create(zk, name, partitions, replication_factor, racks=None, configs=None, **kw):
        d: defer.Deferred = defer.Deferred()
        calls.append({"zk": zk, "name": name, "partitions": partitions, "rf": replication_factor,
                      "racks": racks, "configs": configs, "kw": kw, "d": d})
        return d

    monkeypatch.setattr("mafka.controller.admin.create_topic_in_zookeeper", create)
    return calls


def test_ensure_offsets_topic_creates_it_once_while_in_flight(creations):
    broker = ServiceBroker(brokers=2)
    service = GroupService(broker)
    service.ensure_offsets_topic()
    service.ensure_offsets_topic()
    (call,) = creations
    assert (call["zk"], call["name"], call["partitions"], call["rf"]) == (broker.zk, TOPIC, 50, 2)
    assert call["racks"] == {1: None, 2: None}
    assert call["configs"]["cleanup.policy"] == "compact"
    assert call["configs"]["segment.bytes"] == str(broker.config.offsets_topic_segment_bytes)
    # Finished (here: lost a race with another broker): the next call may try again.
    call["d"].errback(RuntimeError("topic already exists"))
    service.ensure_offsets_topic()
    assert len(creations) == 2
    creations[1]["d"].callback(None)
    broker.metadata_cache.topics.add(TOPIC)
    service.ensure_offsets_topic()
    assert len(creations) == 2


def test_ensure_offsets_topic_replication_factor_and_partitions_follow_the_config(creations):
    service = GroupService(ServiceBroker(brokers=5, offsets_topic_num_partitions=7))
    service.ensure_offsets_topic()
    assert (creations[0]["partitions"], creations[0]["rf"]) == (7, 3)
    service = GroupService(ServiceBroker(brokers=1))
    service.ensure_offsets_topic()
    assert (creations[1]["partitions"], creations[1]["rf"]) == (50, 1)


def test_ensure_offsets_topic_does_nothing_when_it_exists(creations):
    broker = ServiceBroker()
    broker.metadata_cache.topics.add(TOPIC)
    GroupService(broker).ensure_offsets_topic()
    assert creations == []


def test_subscribed_topics_come_from_the_members_consumer_subscriptions():
    """KIP-211 expiry asks which topics a Stable consumer group subscribes to."""
    from mafka.broker.group_service import _subscribed_topics
    from mafka.group.consumer_protocol import Subscription, encode_subscription
    from mafka.group.state import GroupMetadata, MemberMetadata

    def member(member_id: str, metadata: bytes, protocol_type: str = "consumer") -> MemberMetadata:
        return MemberMetadata(member_id, None, "c", "/h", 1000, 10000, protocol_type, [("range", metadata)])

    group = GroupMetadata("g", protocol_name="range")
    group.add(member("a", encode_subscription(Subscription(topics=["t1", "t2"]))))
    group.add(member("b", encode_subscription(Subscription(topics=["t3"]))))
    assert _subscribed_topics(group) == {"t1", "t2", "t3"}

    broken = GroupMetadata("g", protocol_name="range")
    broken.add(member("a", b"\x00"))  # not a subscription: nothing may expire on a guess
    assert _subscribed_topics(broken) is None

    connect = GroupMetadata("g", protocol_name="range")
    connect.add(member("a", b"whatever", protocol_type="connect"))
    assert _subscribed_topics(connect) is None


def _stalled_service(tmp_path):
    broker, service, p = service_with_partition(tmp_path, zookeeper_session_timeout_ms=6000)
    broker.broker_id, broker.broker_epoch = 1, 100
    service.on_leadership(TOPIC, p, True, 3)
    run_load(broker)
    partition = broker.replica_manager.partitions[(TOPIC, p)]
    partition.is_leader, partition.leader_epoch = True, 3
    broker.metadata_cache.partition = lambda topic, index: SimpleNamespace(leader=1) if index == p else None
    service.tick()
    assert service.checked_coordinator().fetch_offsets(GROUP, [("foo", 0)])[0] == E.NONE
    broker.reactor.advance(7)  # frozen past the session: no tick ran
    return broker, service, p


def test_a_broker_frozen_past_its_session_stops_coordinating_until_it_is_confirmed_leader(tmp_path):
    broker, service, p = _stalled_service(tmp_path)
    assert fetch_checked(service)[0] == E.NOT_COORDINATOR  # the first request after waking is refused
    service.on_metadata_update()  # metadata from before it registered again: not evidence
    assert fetch_checked(service)[0] == E.NOT_COORDINATOR
    broker.broker_epoch = 200  # registered again; the controller still names it leader
    service.on_metadata_update()
    run_load(broker)
    assert fetch_checked(service) == (E.NONE, {("foo", 0): 42})


def test_the_overdue_tick_after_a_freeze_resigns_before_any_request_is_read(tmp_path):
    # After SIGCONT the reactor may run the overdue 100 ms tick before it reads the requests
    # that queued during the freeze: the tick must not hide the gap (a CI run answered an
    # OffsetFetch from the stale cache in that order).
    broker, service, p = _stalled_service(tmp_path)
    service.tick()
    assert fetch_checked(service)[0] == E.NOT_COORDINATOR


def test_a_frozen_broker_that_lost_leadership_stays_resigned(tmp_path):
    broker, service, p = _stalled_service(tmp_path)
    assert fetch_checked(service)[0] == E.NOT_COORDINATOR
    broker.broker_epoch = 200
    broker.metadata_cache.partition = lambda topic, index: SimpleNamespace(leader=2)
    service.on_metadata_update()
    for _ in range(200):  # the fallback re-check finds nothing to take back either
        service.tick()
        broker.reactor.advance(0.1)
    assert len(broker.loads) == 1
    assert fetch_checked(service)[0] == E.NOT_COORDINATOR


def test_a_broker_whose_session_survived_takes_its_partitions_back_after_twice_the_session(tmp_path):
    broker, service, p = _stalled_service(tmp_path)
    assert fetch_checked(service)[0] == E.NOT_COORDINATOR
    for _ in range(125):  # running again, ticking; the registration never changed
        service.tick()
        broker.reactor.advance(0.1)
    run_load(broker)
    assert fetch_checked(service) == (E.NONE, {("foo", 0): 42})


def test_regular_ticks_never_resign(tmp_path):
    broker, service, p = service_with_partition(tmp_path, zookeeper_session_timeout_ms=6000)
    service.on_leadership(TOPIC, p, True, 3)
    run_load(broker)
    for _ in range(200):
        service.tick()
        broker.reactor.advance(0.1)
    assert fetch_checked(service) == (E.NONE, {("foo", 0): 42})


def fetch_checked(service: GroupService):
    error, entries = service.checked_coordinator().fetch_offsets(GROUP, [("foo", 0)])
    return error, {tp: e.offset for tp, e in entries.items()}


def test_a_load_replays_transactional_offsets_and_their_markers(tmp_path):
    """Committed transactions apply, aborted ones vanish, an open one stays pending (KIP-98)."""
    broker, service, p = service_with_partition(tmp_path, {("foo", 0): 42})
    log = broker.replica_manager.partitions[(TOPIC, p)].log

    def txn(producer_id, commits):
        pairs = [
            (encode_key(OffsetKey(GROUP, topic, index)), encode_value(OffsetValue(offset, -1, "", 1_000, None)))
            for (topic, index), offset in commits.items()
        ]
        log.append_as_leader(build_batch(
            [Record(offset=i, timestamp=1_000_000, key=k, value=v) for i, (k, v) in enumerate(pairs)],
            producer_id=producer_id, producer_epoch=0, base_sequence=0, is_transactional=True), 0)

    def marker(producer_id, kind):
        log.append_as_follower(build_control_batch(
            kind, producer_id=producer_id, producer_epoch=0, base_offset=log.next_offset, timestamp=1_000_000))

    txn(5, {("foo", 0): 50, ("foo", 1): 51})
    txn(6, {("foo", 0): 60})
    marker(5, ControlRecordType.COMMIT)
    marker(6, ControlRecordType.ABORT)
    txn(7, {("foo", 1): 70})  # no marker yet
    service.on_leadership(TOPIC, p, True, 1)
    run_load(broker)
    c = service.coordinator
    error, entries = c.fetch_offsets(GROUP, [("foo", 0), ("foo", 1)])
    assert error == E.NONE and {tp: e.offset for tp, e in entries.items()} == {("foo", 0): 50, ("foo", 1): 51}
    _, stable = c.fetch_offsets(GROUP, [("foo", 0), ("foo", 1)], require_stable=True)
    assert [e.error for e in stable.values()] == [E.NONE, E.UNSTABLE_OFFSET_COMMIT]
    c.complete_transaction(p, 7, True)
    _, entries = c.fetch_offsets(GROUP, [("foo", 1)], require_stable=True)
    assert (entries[("foo", 1)].offset, entries[("foo", 1)].error) == (70, E.NONE)
