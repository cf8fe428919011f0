"""The share coordinator's edge on a broker: ``__share_group_state`` I/O, leadership, upkeep.

:class:`~mafka.share.coordinator.ShareCoordinator` is plain Python; this
module gives it what a broker has, as :mod:`mafka.broker.group_service` does
for the group coordinator:

* a state log (:class:`ShareStateTopicLog`) that wraps each record in one
  RecordBatch v2 (``share.coordinator.state.topic.compression.codec``) and
  appends it through the replica manager with acks=all within
  ``share.coordinator.write.timeout.ms``;
* leadership: when this broker becomes leader of a ``__share_group_state``
  partition the partition is read in a worker thread (never on the reactor)
  from its log start to its end, ``share.coordinator.load.buffer.size`` at a
  time, and replayed on the reactor; when it becomes follower (or the replica
  is stopped) the partition is unloaded; a stall longer than the ZooKeeper
  session resigns every partition until the controller confirms them
  (:class:`~mafka.broker.internal_topics.StallGuard`);
* the topic itself, created on first use (a share-state RPC or the
  persister) with ``share.coordinator.state.topic.num.partitions`` partitions,
  ``share.coordinator.state.topic.replication.factor`` capped at the live
  brokers, and Kafka's topic configs (``ShareCoordinatorService.shareGroupStateTopicConfigs``):
  ``cleanup.policy=delete``, ``retention.ms=-1``, ``compression.type=producer``,
  ``segment.bytes`` = ``share.coordinator.state.topic.segment.bytes`` and
  ``min.insync.replicas`` = ``share.coordinator.state.topic.min.isr`` (capped
  at the replication factor, so a one-broker cluster works).  Not compacted:
  a share-partition's snapshot and its updates have different keys, so
  compaction would keep the last update and drop the ones before it;
* upkeep, as Kafka's periodic jobs: every ``share.coordinator.state.topic.prune.interval.ms``
  each partition led here is pruned (its log start offset moved up, as
  DeleteRecords does) to its :meth:`~mafka.share.coordinator.ShareCoordinator.last_redundant_offset`,
  never past the high watermark; every ``share.coordinator.cold.partition.snapshot.interval.ms``
  share-partitions not snapshotted for that long are (so that pruning moves on).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from mafka.errors import ConfigError, KafkaError
from mafka.share.coordinator import LoadedRecord, ShareCoordinator, ShareCoordinatorConfig
from mafka.topics import SHARE_GROUP_STATE_TOPIC
from mafka.wire.records import Record, build_batch

from .internal_topics import (
    InternalTopic,
    StallGuard,
    append_coordinator_batch,
    load_on_leadership,
    scan_log,
)

__all__ = ["ShareCoordinatorService", "ShareStateTopicLog", "read_share_state_records"]

log = logging.getLogger("mafka.broker.share_coordinator")

#: Kafka's ``ShareCoordinatorConfig``: snapshot.update.records.per.snapshot is ``between(0, 500)``
_MAX_RECORDS_PER_SNAPSHOT = 500
#: how often the stall guard looks (as the group and transaction coordinators' ticks)
_TICK_S = 0.1


class ShareStateTopicLog:
    """Appends share coordinator records to ``__share_group_state`` through the replica manager
    (:class:`~mafka.share.coordinator.StateLog`)."""

    def __init__(self, broker: Any) -> None:
        self.broker = broker

    def append(self, partition: int, records: Sequence[tuple[bytes, bytes | None]], done: Any) -> None:
        config = self.broker.config
        now = int(time.time() * 1000)
        batch = build_batch(
            [Record(offset=i, timestamp=now, key=k, value=v) for i, (k, v) in enumerate(records)],
            compression=config.share_coordinator_state_topic_compression_codec,
        )
        append_coordinator_batch(
            self.broker, SHARE_GROUP_STATE_TOPIC, partition, batch, done,
            acks=-1, timeout_ms=config.share_coordinator_write_timeout_ms, logger=log,
        )


def read_share_state_records(log_: Any, buffer_bytes: int) -> list[LoadedRecord]:
    """What a load replays (:meth:`ShareCoordinator.complete_load`): every keyed record of a
    log, from its start to its end, as ``(offset, key, value)`` in log order.  Control batches
    and keyless records are skipped.  Blocking (it reads segment files): run it in a worker thread."""
    out: list[LoadedRecord] = []
    for header, batch, from_offset in scan_log(log_, buffer_bytes):
        if header.is_control:
            continue
        for record in batch.data_records():
            if record.offset >= from_offset and record.key is not None:
                out.append((record.offset, bytes(record.key), None if record.value is None else bytes(record.value)))
    return out


class ShareCoordinatorService:
    """Owns the broker's :class:`ShareCoordinator` and connects it to the broker.

    Raises:
        ConfigError: ``share.coordinator.snapshot.update.records.per.snapshot`` above 500.
    """

    def __init__(self, broker: Any) -> None:
        self.broker = broker
        config = broker.config
        per_snapshot = config.share_coordinator_snapshot_update_records_per_snapshot
        if per_snapshot > _MAX_RECORDS_PER_SNAPSHOT:
            raise ConfigError.for_key("share.coordinator.snapshot.update.records.per.snapshot",
                                      f"Value must be no more than {_MAX_RECORDS_PER_SNAPSHOT}", value=per_snapshot)
        self.coordinator = ShareCoordinator(
            ShareCoordinatorConfig(
                state_topic_num_partitions=config.share_coordinator_state_topic_num_partitions,
                snapshot_update_records_per_snapshot=per_snapshot,
                cold_partition_snapshot_interval_ms=config.share_coordinator_cold_partition_snapshot_interval_ms,
            ),
            lambda: int(broker.reactor.seconds() * 1000),
            ShareStateTopicLog(broker),
            self._partition_count,
        )
        self._topic = InternalTopic(broker, SHARE_GROUP_STATE_TOPIC, log)
        self._stall = StallGuard(broker, self.coordinator, SHARE_GROUP_STATE_TOPIC, self.on_leadership, log,
                                 "share coordinator")
        #: partition → the offset it was last pruned to (Kafka's ``lastPrunedOffsets``)
        self._pruned: dict[int, int] = {}

    def _partition_count(self, topic_id: bytes) -> int | None:
        """Kafka's metadata image check: the topic's partition count, None for an unknown topic."""
        cache = self.broker.metadata_cache
        name = cache.topic_name(topic_id)
        count = cache.partition_count(name) if name is not None else 0
        return count or None

    def startup(self) -> None:
        """Starts the stall check and Kafka's periodic jobs (pruning, cold snapshots) as broker passes."""
        config = self.broker.config
        bg = self.broker.background
        bg.every("share-coordinator-tick", _TICK_S, self.tick)
        bg.every("share-coordinator-prune", config.share_coordinator_state_topic_prune_interval_ms / 1000, self.prune)
        bg.every("share-coordinator-cold-snapshots",
                 config.share_coordinator_cold_partition_snapshot_interval_ms / 1000, self.snapshot_cold_partitions)

    # ------------------------------------------------------------------ stalls

    def tick(self) -> None:
        """Every 100 ms: the reactor is running (see :meth:`checked_coordinator`)."""
        self._stall.check()

    def checked_coordinator(self) -> ShareCoordinator:
        """The coordinator, once this broker is known not to be a zombie: as
        :meth:`GroupService.checked_coordinator <mafka.broker.group_service.GroupService.checked_coordinator>`,
        a broker frozen for longer than its ZooKeeper session resigns every
        ``__share_group_state`` partition (NOT_COORDINATOR) until the controller
        confirms it still leads them, so no state is read or written from memory
        a newer leader has moved past."""
        self._stall.check()
        return self.coordinator

    def on_metadata_update(self) -> None:
        """The controller's metadata arrived: partitions resigned after a stall may be taken back."""
        self._stall.on_metadata_update()

    # ------------------------------------------------------------------ leadership

    def on_leadership(self, topic: str, index: int, is_leader: bool, leader_epoch: int | None) -> None:
        """The replica manager applied a role change for ``topic``-``index``."""
        if topic == SHARE_GROUP_STATE_TOPIC:
            if not is_leader:
                self._pruned.pop(index, None)
            load_on_leadership(self.broker, self.coordinator, topic, index, is_leader, leader_epoch,
                               read_share_state_records, self.broker.config.share_coordinator_load_buffer_size, log)

    # ------------------------------------------------------------------ the topic

    def ensure_state_topic(self) -> None:
        """Create ``__share_group_state`` unless it exists or is being created (fire and forget)."""
        config = self.broker.config
        self._topic.ensure(
            config.share_coordinator_state_topic_num_partitions,
            config.share_coordinator_state_topic_replication_factor,
            lambda rf: {
                "cleanup.policy": "delete",
                "retention.ms": "-1",
                "compression.type": "producer",
                "segment.bytes": str(config.share_coordinator_state_topic_segment_bytes),
                "min.insync.replicas": str(min(config.share_coordinator_state_topic_min_isr, rf)),
            },
        )

    # ------------------------------------------------------------------ upkeep

    def prune(self) -> None:
        """Kafka's record pruning: each partition led here loses the records every share-partition
        has superseded (its log start offset moves up to the last redundant offset, at most the
        high watermark)."""
        rm = self.broker.replica_manager
        for index in sorted(self.coordinator.owned_partitions()):
            target = self.coordinator.last_redundant_offset(index)
            partition = rm.partitions.get((SHARE_GROUP_STATE_TOPIC, index))
            if target is None or partition is None or not partition.is_leader:
                continue
            target = min(target, partition.high_watermark)
            if target <= partition.log.log_start_offset or self._pruned.get(index) == target:
                continue
            try:
                rm.delete_records(SHARE_GROUP_STATE_TOPIC, index, target)
            except KafkaError as exc:
                log.info("pruning %s-%d to offset %d failed: %s", SHARE_GROUP_STATE_TOPIC, index, target, exc)
                continue
            self._pruned[index] = target
            log.debug("pruned %s-%d to offset %d", SHARE_GROUP_STATE_TOPIC, index, target)

    def snapshot_cold_partitions(self) -> None:
        """Kafka's cold-partition snapshots (after a stall check: a zombie writes nothing)."""
        self._stall.check()
        started = self.coordinator.snapshot_cold_partitions()
        if started:
            log.debug("snapshotting %d cold share partitions", started)

    def shutdown(self) -> None:
        self._stall.shutdown()
        self.coordinator.shutdown()
