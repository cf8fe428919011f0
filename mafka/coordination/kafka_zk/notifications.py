"""Broker-to-controller notifications in ZooKeeper: ISR changes and log dir failures.

Owns :class:`NotificationZk` — posting, listing, reading and deleting the
sequential ``/isr_change_notification/isr_change_<seq>`` and
``/log_dir_event_notification/log_dir_event_<seq>`` nodes, and their watches.
"""

from __future__ import annotations

from collections.abc import Iterable

from mafka.coordination.kafka_zk.core import ZkFamily, _deferred
from mafka.coordination.store import WatchCallback, WatchHandle
from mafka.coordination.znodes.notifications import (
    IsrChangeNotificationZNode,
    LogDirEventNotificationZNode,
    sequence_number,
)
from mafka.topics import TopicPartitionTuple

__all__ = ["MAX_NOTIFICATION_BYTES", "NotificationZk"]

#: The most an ISR change notification holds (well under ZooKeeper's 1 MiB ``jute.maxbuffer``).
MAX_NOTIFICATION_BYTES = 256 * 1024

#: What one entry adds to a notification besides its topic's name: ``{"topic":"","partition":N},``.
_ENTRY_BYTES = 40


def _chunks(partitions: list[TopicPartitionTuple], max_bytes: int) -> list[list[TopicPartitionTuple]]:
    """*partitions* in order, split so that each chunk encodes within *max_bytes* (at least one each)."""
    chunks: list[list[TopicPartitionTuple]] = [[]]
    size = 0
    for tp in partitions:
        entry = len(tp[0].encode()) + _ENTRY_BYTES
        if chunks[-1] and size + entry > max_bytes:
            chunks.append([])
            size = 0
        chunks[-1].append(tp)
        size += entry
    return chunks


class NotificationZk(ZkFamily):
    """ISR change and log dir event notifications (``KafkaZkClient``'s notification operations)."""

    # ------------------------------------------------------------------ ISR change notifications

    @_deferred
    async def post_isr_change_notification(self, partitions: Iterable[TopicPartitionTuple]) -> str:
        """Creates ``/isr_change_notification/isr_change_N`` listing *partitions*; returns its path.

        More partitions than fit in :data:`MAX_NOTIFICATION_BYTES` go in several notifications, one
        after the other (the path returned is the last one's).  Kafka writes one, whatever its size:
        a broker whose 100,000 partitions' ISRs changed wrote 3.5 MB, which ZooKeeper refuses
        (``jute.maxbuffer``, 1 MiB) by closing the connection -- failing every request in flight on
        it, every 2.5 s, while the changes that were to be announced piled up.
        """
        path = ""
        for chunk in _chunks(list(partitions), MAX_NOTIFICATION_BYTES):
            path = await self._store.create(
                IsrChangeNotificationZNode.CREATE_PATH,
                IsrChangeNotificationZNode.encode(chunk),
                sequential=True,
                makepath=True,
            )
        return path

    @_deferred
    async def get_isr_change_notifications(self) -> list[str]:
        """Sequence numbers of the pending ISR change notifications, sorted."""
        prefix = IsrChangeNotificationZNode.PREFIX
        children = await self._core.children_or_empty(IsrChangeNotificationZNode.PATH)
        return [sequence_number(c, prefix) for c in children if c.startswith(prefix)]

    @_deferred
    async def get_partitions_from_isr_change_notifications(
        self, sequence_numbers: Iterable[str]
    ) -> list[TopicPartitionTuple]:
        """The partitions the given notifications list, in order (vanished ones skipped; one batch of reads)."""
        out: list[TopicPartitionTuple] = []
        paths = [IsrChangeNotificationZNode.path(seq) for seq in sequence_numbers]
        for got in await self._core.get_many(paths):
            if got is not None:
                out.extend(IsrChangeNotificationZNode.decode(got[0]))
        return out

    @_deferred
    async def delete_isr_change_notifications(
        self, sequence_numbers: Iterable[str] | None = None, epoch_zk_version: int = -1
    ) -> None:
        """Deletes the given notifications (None: all of them; one pipelined batch); absent ones are fine."""
        if sequence_numbers is None:
            prefix = IsrChangeNotificationZNode.PREFIX
            children = await self._core.children_or_empty(IsrChangeNotificationZNode.PATH)
            sequence_numbers = [
                sequence_number(c, prefix) for c in children if c.startswith(prefix)
            ]
        await self._core.delete_checked_many(
            [IsrChangeNotificationZNode.path(seq) for seq in sequence_numbers], epoch_zk_version
        )

    def watch_isr_change_notifications(self, callback: WatchCallback) -> WatchHandle:
        """Children of ``/isr_change_notification``."""
        return self._store.watch_children(IsrChangeNotificationZNode.PATH, callback)

    # ------------------------------------------------------------------ log dir events

    @_deferred
    async def post_log_dir_event(self, broker_id: int) -> str:
        """Creates ``/log_dir_event_notification/log_dir_event_N`` for *broker_id*; returns its path."""
        return await self._store.create(
            LogDirEventNotificationZNode.CREATE_PATH,
            LogDirEventNotificationZNode.encode(broker_id),
            sequential=True,
            makepath=True,
        )

    @_deferred
    async def get_log_dir_event_notifications(self) -> list[str]:
        """Sequence numbers of the pending log dir events, sorted."""
        prefix = LogDirEventNotificationZNode.PREFIX
        children = await self._core.children_or_empty(LogDirEventNotificationZNode.PATH)
        return [sequence_number(c, prefix) for c in children if c.startswith(prefix)]

    @_deferred
    async def get_broker_ids_from_log_dir_events(
        self, sequence_numbers: Iterable[str]
    ) -> list[int]:
        """The broker ids of the given events, in order (vanished events skipped; one batch of reads)."""
        paths = [LogDirEventNotificationZNode.path(seq) for seq in sequence_numbers]
        return [
            LogDirEventNotificationZNode.decode(got[0])
            for got in await self._core.get_many(paths)
            if got is not None
        ]

    @_deferred
    async def delete_log_dir_event_notifications(
        self, sequence_numbers: Iterable[str] | None = None, epoch_zk_version: int = -1
    ) -> None:
        """Deletes the given events (None: all of them; one pipelined batch); absent ones are fine."""
        if sequence_numbers is None:
            prefix = LogDirEventNotificationZNode.PREFIX
            children = await self._core.children_or_empty(LogDirEventNotificationZNode.PATH)
            sequence_numbers = [
                sequence_number(c, prefix) for c in children if c.startswith(prefix)
            ]
        await self._core.delete_checked_many(
            [LogDirEventNotificationZNode.path(seq) for seq in sequence_numbers], epoch_zk_version
        )

    def watch_log_dir_event_notifications(self, callback: WatchCallback) -> WatchHandle:
        """Children of ``/log_dir_event_notification``."""
        return self._store.watch_children(LogDirEventNotificationZNode.PATH, callback)
