"""The group coordinator's edge on a broker: timers, ``__consumer_offsets`` I/O, leadership.

:class:`~mafka.group.coordinator.GroupCoordinator` is plain Python; this
module gives it what a broker has:

* a :class:`ReactorTimers` (``reactor.callLater`` in milliseconds);
* an offsets log (:class:`OffsetsTopicLog`) that wraps ``(key, value)``
  records in one RecordBatch v2 and appends it through the replica manager
  with ``offsets.commit.required.acks`` (−1 by default, so a commit is
  acknowledged only once replicated) within ``offsets.commit.timeout.ms``;
  a TxnOffsetCommit's batch is transactional, stamped with the producer's id
  and epoch and base sequence 0 (as Kafka's ``storeOffsets`` builds it), and
  appended with ``origin="coordinator"`` so that only the producer's epoch,
  not its sequence, is checked;
* leadership: when this broker becomes leader of a ``__consumer_offsets``
  partition the partition is read in a worker thread (never on the reactor)
  from its log start to its end (records with their batch's producer id,
  transactional bit and base offset, and transaction markers), then replayed
  on the reactor; when it becomes follower (or the replica is stopped) its
  groups are unloaded;
* the offsets topic itself: created on first use (FindCoordinator), with
  ``offsets.topic.num.partitions`` partitions, ``offsets.topic.replication.factor``
  capped at the live brokers, ``cleanup.policy=compact`` and
  ``offsets.topic.segment.bytes``;
* expiry every ``offsets.retention.check.interval.ms``.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Any

from mafka.group.consumer.group_types import ConsumerGroupConfig
from mafka.group.consumer.member import TopicInfo
from mafka.group.coordinator import CoordinatorConfig, GroupCoordinator
from mafka.group.coordinator import subscribed_topics as _subscribed_topics
from mafka.group.offsets import LogRecord, TxnMarker
from mafka.group.share.group_types import ShareGroupConfig
from mafka.topics import GROUP_METADATA_TOPIC
from mafka.wire.records import ControlRecordType, Record, build_batch

from .internal_topics import (
    InternalTopic,
    ReactorTimers,
    StallGuard,
    append_coordinator_batch,
    load_on_leadership,
    scan_log,
)

__all__ = ["GroupService", "OffsetsTopicLog", "ReactorTimers", "read_partition_records"]

log = logging.getLogger("mafka.broker.groups")

#: What a transactional append tells the replica manager: a coordinator's batch (Kafka's
#: ``AppendOrigin.Coordinator``), whose producer sequence is not validated.
_COORDINATOR_ORIGIN = "coordinator"
#: Kafka's ``storeOffsets`` builds its batches with base sequence 0.
_TXN_BASE_SEQUENCE = 0


class OffsetsTopicLog:
    """Appends coordinator records to ``__consumer_offsets`` through the replica manager."""

    def __init__(self, broker: Any) -> None:
        self.broker = broker

    def append(
        self,
        partition: int,
        records: Sequence[tuple[bytes, bytes | None]],
        done: Any,
        *,
        producer_id: int = -1,
        producer_epoch: int = -1,
    ) -> None:
        """See :class:`~mafka.group.coordinator.OffsetsLog`."""
        config = self.broker.config
        now = int(time.time() * 1000)
        transactional = producer_id >= 0
        batch = build_batch(
            [Record(offset=i, timestamp=now, key=k, value=v) for i, (k, v) in enumerate(records)],
            compression=config.offsets_topic_compression_codec,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            base_sequence=_TXN_BASE_SEQUENCE if transactional else -1,
            is_transactional=transactional,
        )
        # Only transactional batches need the origin today (their sequence must not be
        # checked); plain ones carry no producer id, so the origin changes nothing for them.
        append_coordinator_batch(
            self.broker, GROUP_METADATA_TOPIC, partition, batch, done,
            acks=config.offsets_commit_required_acks, timeout_ms=config.offsets_commit_timeout_ms, logger=log,
            origin=_COORDINATOR_ORIGIN if transactional else None,
        )


def read_partition_records(log_: Any, buffer_bytes: int) -> list[LogRecord | TxnMarker]:
    """What a load replays (:meth:`GroupCoordinator.complete_load`) from a log's start
    to its end, in log order.

    Every keyed record is a :class:`~mafka.group.offsets.LogRecord` carrying its
    batch's producer id, transactional bit and base offset; every COMMIT or ABORT
    control batch is a :class:`~mafka.group.offsets.TxnMarker`. Keyless records and
    other control records are skipped. Blocking (it reads segment files): run it in
    a worker thread.
    """
    out: list[LogRecord | TxnMarker] = []
    for header, batch, from_offset in scan_log(log_, buffer_bytes):
        if header.is_control:
            for control in batch.control_records():
                if control.offset >= from_offset and control.type in (ControlRecordType.COMMIT, ControlRecordType.ABORT):
                    out.append(TxnMarker(header.producer_id, control.type == ControlRecordType.COMMIT, control.offset))
        else:
            for record in batch.data_records():
                if record.offset >= from_offset and record.key is not None:
                    out.append(LogRecord(
                        bytes(record.key),
                        None if record.value is None else bytes(record.value),
                        header.producer_id,
                        header.is_transactional,
                        header.base_offset,
                    ))
    return out


class GroupService:
    """Owns the broker's :class:`GroupCoordinator` and connects it to the broker."""

    def __init__(self, broker: Any) -> None:
        self.broker = broker
        config = broker.config
        self.coordinator = GroupCoordinator(
            CoordinatorConfig(
                offsets_partitions=config.offsets_topic_num_partitions,
                min_session_timeout_ms=config.group_min_session_timeout_ms,
                max_session_timeout_ms=config.group_max_session_timeout_ms,
                initial_rebalance_delay_ms=config.group_initial_rebalance_delay_ms,
                max_size=config.group_max_size,
                offset_metadata_max_bytes=config.offset_metadata_max_bytes,
                offsets_retention_ms=config.offsets_retention_minutes * 60_000,
                consumer=ConsumerGroupConfig(
                    session_timeout_ms=config.group_consumer_session_timeout_ms,
                    heartbeat_interval_ms=config.group_consumer_heartbeat_interval_ms,
                    max_size=config.group_consumer_max_size,
                    assignors=tuple(config.group_consumer_assignors),
                    migration_policy=config.group_consumer_migration_policy,
                ),
                rebalance_protocols=tuple(config.group_coordinator_rebalance_protocols),
                share=ShareGroupConfig(
                    session_timeout_ms=config.group_share_session_timeout_ms,
                    heartbeat_interval_ms=config.group_share_heartbeat_interval_ms,
                    max_size=config.group_share_max_size,
                ),
            ),
            lambda: int(broker.reactor.seconds() * 1000),
            ReactorTimers(broker.reactor),
            OffsetsTopicLog(broker),
            self.topics_for_groups,
        )
        # Per-group session timeout / heartbeat interval overrides (``/config/groups/<g>``).
        self.coordinator.use_group_configs(self.group_overrides)
        self._topics: tuple[int, dict[str, TopicInfo]] = (-1, {})
        self._topic = InternalTopic(broker, GROUP_METADATA_TOPIC, log)
        # Stall guard (see :meth:`checked_coordinator`).
        self._stall = StallGuard(broker, self.coordinator, GROUP_METADATA_TOPIC, self.on_leadership, log,
                                 "group coordinator")

    def group_overrides(self, group_id: str) -> dict[str, str]:
        """The group's config overrides from the broker's group config cache (none before it loaded)."""
        cache = getattr(self.broker, "group_configs", None)
        return cache.get(group_id) if cache is not None else {}

    def topics_for_groups(self) -> dict[str, TopicInfo]:
        """The cluster's topics as consumer groups see them (id, name, partition count), from the
        metadata cache; rebuilt once per metadata generation.  Topics without an id are left out."""
        cache = self.broker.metadata_cache
        generation, topics = self._topics
        if generation != cache.generation:
            zero = bytes(16)
            topics = {
                name: TopicInfo(topic_id, name, len(cache.partitions.get(name, {})))
                for name, topic_id in cache.topic_ids.items()
                if topic_id != zero and cache.partitions.get(name)
            }
            self._topics = (cache.generation, topics)
        return topics

    # ------------------------------------------------------------------ stalls

    def tick(self) -> None:
        """Called every 100 ms by the broker: the reactor is running.

        It checks for a stall too: after SIGCONT the reactor may run this overdue
        tick before it reads the requests that queued during the freeze, and a
        tick that only moved the clock on would hide the gap from them.
        """
        self._check_stall()

    def checked_coordinator(self) -> GroupCoordinator:
        """The coordinator, once this broker is known not to be a zombie.

        A process frozen (SIGSTOP, a VM pause) for longer than its ZooKeeper
        session has lost its leaderships to other brokers, but its memory still
        says it coordinates: without this check the first requests read after
        it wakes — before the controller's LeaderAndIsr arrives — would be
        answered from stale offsets.  A gap in the 100 ms ticks longer than
        ``zookeeper.session.timeout.ms`` is such a freeze: every offsets
        partition is resigned (NOT_COORDINATOR) until the broker has
        registered again and the controller's metadata still names it leader
        (or, if its session survived, until twice the session timeout passed).
        Kafka 2.8 has no such check (:class:`~mafka.broker.internal_topics.StallGuard`).
        """
        self._check_stall()
        return self.coordinator

    def _check_stall(self) -> None:
        """Resigns every offsets partition if the reactor did not run for longer than the
        ZooKeeper session since the last tick or check (see :meth:`checked_coordinator`)."""
        self._stall.check()

    def on_metadata_update(self) -> None:
        """The controller's metadata arrived: partitions resigned after a stall may be taken back."""
        self._stall.on_metadata_update()

    # ------------------------------------------------------------------ leadership

    def on_leadership(self, topic: str, index: int, is_leader: bool, leader_epoch: int | None) -> None:
        """The replica manager applied a role change for ``topic``-``index``."""
        if topic == GROUP_METADATA_TOPIC:
            load_on_leadership(self.broker, self.coordinator, topic, index, is_leader, leader_epoch,
                               read_partition_records, self.broker.config.offsets_load_buffer_size, log)

    # ------------------------------------------------------------------ the offsets topic

    def ensure_offsets_topic(self) -> None:
        """Create ``__consumer_offsets`` unless it exists or is being created (fire and forget)."""
        config = self.broker.config
        self._topic.ensure(config.offsets_topic_num_partitions, config.offsets_topic_replication_factor, lambda rf: {
            "cleanup.policy": "compact",
            "segment.bytes": str(config.offsets_topic_segment_bytes),
            "compression.type": "producer",
        })

    # ------------------------------------------------------------------ expiry

    def expire_offsets(self) -> None:
        self.coordinator.expire_offsets(_subscribed_topics)

    def shutdown(self) -> None:
        self._stall.shutdown()
        self.coordinator.shutdown()
