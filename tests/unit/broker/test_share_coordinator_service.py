"""The share coordinator's edge on a broker: ``__share_group_state`` reads, appends, loads, creation, pruning.

* :func:`read_share_state_records` over a real :class:`~mafka.log.log.Log`;
* :class:`ShareStateTopicLog` against a fake replica manager whose appends
  land in real logs, so that a second service (another broker) loading the
  same log after a "failover" must rebuild the same state;
* :meth:`ShareCoordinatorService.on_leadership` with a fake ``run_blocking``
  whose Deferreds the test fires (a Twisted ``task.Clock``, no threads);
* :meth:`ShareCoordinatorService.ensure_state_topic` with ZooKeeper creation patched out;
* :meth:`ShareCoordinatorService.prune` moving the log start offset.
"""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

import pytest
from twisted.internet import defer, task

from mafka.broker.config import BrokerConfig
from mafka.broker.replica_manager import ProduceResult
from mafka.broker.share_coordinator_service import (
    ShareCoordinatorService,
    ShareStateTopicLog,
    read_share_state_records,
)
from mafka.errors import ConfigError
from mafka.errors import ErrorCode as E
from mafka.group.share.partition_state import StateBatch
from mafka.log.config import LogConfig
from mafka.log.log import Log
from mafka.log.validation import validate_produce_batch
from mafka.share.state_types import InitializeData, PartitionResult, ReadResult, WriteData
from mafka.wire.compression import CompressionType
from mafka.wire.records import (
    ControlRecordType,
    Record,
    build_batch,
    build_control_batch,
    decode_batch,
)

TOPIC = "__share_group_state"
DATA_TOPIC = bytes(range(1, 17))
GROUP = "queue"


class LogClock:
    def __call__(self) -> int:
        return 1_000_000


def batch_of(pairs: list[tuple[bytes | None, bytes | None]], compression: int = 0) -> bytes:
    return build_batch([Record(offset=i, timestamp=1_000_000, key=k, value=v) for i, (k, v) in enumerate(pairs)],
                       compression=compression)


# ------------------------------------------------------------------ read_share_state_records


@pytest.mark.parametrize("buffer_bytes", [1, 100, 1 << 20])
def test_read_returns_every_keyed_record_with_its_offset(tmp_path: Any, buffer_bytes: int) -> None:
    log = Log.open(tmp_path / f"{TOPIC}-0", LogConfig(segment_bytes=200), LogClock(), log_start_offset=10)
    log.append_as_leader(batch_of([(b"k1", b"v1"), (b"k2", None)]), 0)
    log.append_as_leader(batch_of([(None, b"keyless"), (b"k3", b"v3" * 40)], CompressionType.GZIP), 0)
    log.append_as_follower(build_control_batch(ControlRecordType.COMMIT, producer_id=1, producer_epoch=0,
                                               base_offset=log.next_offset, timestamp=1_000_000))
    log.append_as_leader(batch_of([(b"k4", b"v4")]), 0)
    expected = [(10, b"k1", b"v1"), (11, b"k2", None), (13, b"k3", b"v3" * 40), (15, b"k4", b"v4")]
    assert read_share_state_records(log, buffer_bytes) == expected
    assert log.increment_log_start_offset(11)  # pruned inside the first batch
    assert read_share_state_records(log, buffer_bytes) == expected[1:]


# ------------------------------------------------------------------ a broker around the service


class ReplicaManager:
    """Appends land in real logs at once; the answer waits until the test fires it (``auto``: at once)."""

    def __init__(self, tmp_path: Any) -> None:
        self.tmp_path = tmp_path
        self.partitions: dict[tuple[str, int], Any] = {}
        self.calls: list[dict[str, Any]] = []
        self.auto = True
        self.waiting: list[tuple[defer.Deferred, dict[tuple[str, int], ProduceResult]]] = []
        self.deleted: list[tuple[str, int, int]] = []

    def partition(self, index: int) -> Any:
        tp = (TOPIC, index)
        if tp not in self.partitions:
            log = Log.open(self.tmp_path / f"{TOPIC}-{index}", LogConfig(), LogClock())
            self.partitions[tp] = SimpleNamespace(log=log, is_leader=True, high_watermark=0)
        return self.partitions[tp]

    def append_records(self, entries: Any, *, acks: int, timeout_ms: int, produce_version: int,
                       max_message_bytes: Any, **extra: Any) -> defer.Deferred:
        ((topic, index, batch),) = list(entries)
        self.calls.append({"acks": acks, "timeout_ms": timeout_ms, "produce_version": produce_version,
                           "batch": batch, "extra": extra})
        validate_produce_batch(batch, produce_version=produce_version, max_message_bytes=1_000_012)
        p = self.partition(index)
        base = p.log.next_offset
        p.log.append_as_leader(batch, 0)
        p.high_watermark = p.log.next_offset
        results = {(topic, index): ProduceResult(E.NONE, base)}
        if self.auto:
            return defer.succeed(results)
        d: defer.Deferred = defer.Deferred()
        self.waiting.append((d, results))
        return d

    def delete_records(self, topic: str, index: int, offset: int) -> int:
        self.deleted.append((topic, index, offset))
        log = self.partitions[(topic, index)].log
        log.increment_log_start_offset(offset)
        return log.log_start_offset


class Cache:
    def __init__(self, brokers: int = 3) -> None:
        self.topics: set[str] = {TOPIC}
        self.brokers = {i: SimpleNamespace(rack=None) for i in range(1, brokers + 1)}

    def has_topic(self, topic: str) -> bool:
        return topic in self.topics

    def topic_name(self, topic_id: bytes) -> str | None:
        return "jobs" if topic_id == DATA_TOPIC else None

    def partition_count(self, name: str) -> int:
        return 4 if name == "jobs" else 0


class Broker:
    def __init__(self, tmp_path: Any, rm: ReplicaManager | None = None, **config: Any) -> None:
        self.config = BrokerConfig(**config)
        self.reactor = task.Clock()
        self.reactor.advance(1_700_000_000)
        self.replica_manager = rm or ReplicaManager(tmp_path)
        self.metadata_cache = Cache()
        self.zk = object()
        self.broker_id = 1
        self.broker_epoch = 1
        self.loads: list[tuple[Any, tuple[Any, ...], defer.Deferred]] = []

    def max_message_bytes(self, topic: str) -> int:
        return 1_000_012

    def run_blocking(self, fn: Any, *args: Any) -> defer.Deferred:
        d: defer.Deferred = defer.Deferred()
        self.loads.append((fn, args, d))
        return d


def lead(broker: Broker, service: ShareCoordinatorService, index: int, epoch: int = 1) -> None:
    """Become leader of ``index`` and run its load for real."""
    broker.replica_manager.partition(index)
    service.on_leadership(TOPIC, index, True, epoch)
    fn, args, d = broker.loads[-1]
    d.callback(fn(*args))


def ask(op: Any, *args: Any) -> Any:
    got: list[Any] = []
    op(*args, got.append)
    assert got, "no answer"
    return got[0]


# ------------------------------------------------------------------ ShareStateTopicLog


def test_the_state_log_appends_one_batch_with_acks_all_and_the_write_timeout(tmp_path: Any) -> None:
    broker = Broker(tmp_path, share_coordinator_write_timeout_ms=1234,
                    share_coordinator_state_topic_compression_codec=CompressionType.GZIP)
    broker.replica_manager.auto = False
    done: list[tuple[int, int | None]] = []
    ShareStateTopicLog(broker).append(3, [(b"key", b"value")], lambda e, o: done.append((e, o)))
    (call,) = broker.replica_manager.calls
    assert (call["acks"], call["timeout_ms"], call["extra"]) == (-1, 1234, {})
    decoded = decode_batch(call["batch"])
    assert decoded.header.compression == CompressionType.GZIP
    assert [(r.key, r.value) for r in decoded.data_records()] == [(b"key", b"value")]
    assert done == []  # not before the append is replicated
    d, results = broker.replica_manager.waiting.pop()
    d.callback(results)
    assert done == [(E.NONE, 0)]


# ------------------------------------------------------------------ leadership and failover


def test_a_new_leader_loads_what_the_old_one_wrote(tmp_path: Any) -> None:
    broker = Broker(tmp_path, share_coordinator_load_buffer_size=4096)
    service = ShareCoordinatorService(broker)
    c = service.coordinator
    index = c.partition_for(GROUP, DATA_TOPIC, 2)
    assert ask(c.initialize, GROUP, DATA_TOPIC, 2, InitializeData(1, 0)).error == E.NOT_COORDINATOR
    broker.replica_manager.partition(index)
    service.on_leadership(TOPIC, index, True, 4)
    ((fn, args, d),) = broker.loads
    assert fn is read_share_state_records and args[1] == 4096
    assert ask(c.initialize, GROUP, DATA_TOPIC, 2, InitializeData(1, 0)).error == E.COORDINATOR_LOAD_IN_PROGRESS
    d.callback(fn(*args))
    assert ask(c.initialize, GROUP, DATA_TOPIC, 2, InitializeData(1, 0)) == PartitionResult()
    assert ask(c.read, GROUP, DATA_TOPIC, 2, 4).error == E.NONE
    batches = (StateBatch(0, 9, 2, 1), StateBatch(10, 19, 0, 2))
    assert ask(c.write, GROUP, DATA_TOPIC, 2, WriteData(1, 4, 0, batches)) == PartitionResult()
    before = ask(c.read, GROUP, DATA_TOPIC, 2, 4)
    assert before == ReadResult(E.NONE, None, 1, 0, batches)
    # the partition moves to another broker, which reads the same (replicated) log
    service.on_leadership(TOPIC, index, False, 5)
    assert ask(c.read, GROUP, DATA_TOPIC, 2, 4).error == E.NOT_COORDINATOR
    other_broker = Broker(tmp_path, rm=broker.replica_manager)
    other = ShareCoordinatorService(other_broker)
    lead(other_broker, other, index, 5)
    assert ask(other.coordinator.read, GROUP, DATA_TOPIC, 2, 4) == before
    assert ask(other.coordinator.read, GROUP, DATA_TOPIC, 2, 3).error == E.FENCED_LEADER_EPOCH


def test_unknown_topics_come_from_the_metadata_cache(tmp_path: Any) -> None:
    broker = Broker(tmp_path)
    service = ShareCoordinatorService(broker)
    c = service.coordinator
    for topic_id, partition in ((DATA_TOPIC, 4), (bytes(16), 0)):
        index = c.partition_for(GROUP, topic_id, partition)
        lead(broker, service, index)
        assert ask(c.initialize, GROUP, topic_id, partition, InitializeData(0)).error == E.UNKNOWN_TOPIC_OR_PARTITION


def test_records_per_snapshot_above_500_is_a_config_error(tmp_path: Any) -> None:
    with pytest.raises(ConfigError, match="share.coordinator.snapshot.update.records.per.snapshot"):
        ShareCoordinatorService(Broker(tmp_path, share_coordinator_snapshot_update_records_per_snapshot=501))


# ------------------------------------------------------------------ the topic


@pytest.fixture
def creations(monkeypatch: Any) -> list[dict[str, Any]]:
    calls: list[dict[str, Any]] = []

    def create(zk: Any, name: str, partitions: int, replication_factor: int, racks: Any = None, configs: Any = None,
               **kw: Any) -> defer.Deferred:
        d: defer.Deferred = defer.Deferred()
        calls.append({"name": name, "partitions": partitions, "rf": replication_factor, "configs": configs, "d": d})
        return d

    monkeypatch.setattr("mafka.controller.admin.create_topic_in_zookeeper", create)
    return calls


def test_ensure_state_topic_creates_it_with_kafkas_configs(tmp_path: Any, creations: list[dict[str, Any]]) -> None:
    broker = Broker(tmp_path, share_coordinator_state_topic_num_partitions=12,
                    share_coordinator_state_topic_segment_bytes=1 << 20, share_coordinator_state_topic_min_isr=2)
    broker.metadata_cache.topics.clear()
    service = ShareCoordinatorService(broker)
    service.ensure_state_topic()
    service.ensure_state_topic()  # one creation at a time
    (call,) = creations
    assert (call["name"], call["partitions"], call["rf"]) == (TOPIC, 12, 3)
    assert call["configs"] == {"cleanup.policy": "delete", "retention.ms": "-1", "compression.type": "producer",
                               "segment.bytes": str(1 << 20), "min.insync.replicas": "2"}
    broker.metadata_cache.brokers = {1: SimpleNamespace(rack=None)}  # one broker: rf and min ISR capped
    call["d"].errback(RuntimeError("lost a race"))
    service.ensure_state_topic()
    assert (creations[1]["rf"], creations[1]["configs"]["min.insync.replicas"]) == (1, "1")


# ------------------------------------------------------------------ pruning


def test_prune_moves_the_log_start_to_the_last_redundant_offset_and_a_reload_keeps_the_state(tmp_path: Any) -> None:
    broker = Broker(tmp_path, share_coordinator_snapshot_update_records_per_snapshot=1)
    service = ShareCoordinatorService(broker)
    c = service.coordinator
    index = c.partition_for(GROUP, DATA_TOPIC, 0)
    lead(broker, service, index)
    ask(c.initialize, GROUP, DATA_TOPIC, 0, InitializeData(0, 0))
    ask(c.read, GROUP, DATA_TOPIC, 0, 1)
    for i in range(5):
        assert ask(c.write, GROUP, DATA_TOPIC, 0, WriteData(0, 1, 0, (StateBatch(i, i, 2, 1),))) == PartitionResult()
    target = c.last_redundant_offset(index)
    assert target is not None and target > 0
    service.prune()
    assert broker.replica_manager.deleted == [(TOPIC, index, target)]
    service.prune()
    assert len(broker.replica_manager.deleted) == 1  # nothing new to prune
    before = ask(c.read, GROUP, DATA_TOPIC, 0, 1)
    assert before.state_batches == (StateBatch(0, 4, 2, 1),)
    other_broker = Broker(tmp_path, rm=broker.replica_manager, share_coordinator_snapshot_update_records_per_snapshot=1)
    other = ShareCoordinatorService(other_broker)
    lead(other_broker, other, index, 2)
    assert ask(other.coordinator.read, GROUP, DATA_TOPIC, 0, 1) == before


def test_prune_never_passes_the_high_watermark_or_prunes_a_follower(tmp_path: Any) -> None:
    broker = Broker(tmp_path, share_coordinator_snapshot_update_records_per_snapshot=0)
    service = ShareCoordinatorService(broker)
    c = service.coordinator
    index = c.partition_for(GROUP, DATA_TOPIC, 0)
    lead(broker, service, index)
    ask(c.initialize, GROUP, DATA_TOPIC, 0, InitializeData(0, 0))
    ask(c.read, GROUP, DATA_TOPIC, 0, 1)
    ask(c.read, GROUP, DATA_TOPIC, 0, 2)
    assert c.last_redundant_offset(index) == 2
    partition = broker.replica_manager.partitions[(TOPIC, index)]
    partition.high_watermark = 1
    service.prune()
    assert broker.replica_manager.deleted == [(TOPIC, index, 1)]
    partition.is_leader = False
    partition.high_watermark = 3
    service.prune()
    assert len(broker.replica_manager.deleted) == 1
