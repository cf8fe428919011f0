"""Admin requests in ZooKeeper: ``/admin/delete_topics``, ``/admin/reassign_partitions``, ``/admin/preferred_replica_election``.

Owns :class:`AdminZk` — queueing and completing topic deletions, the legacy
partition-reassignment and preferred-replica-election request nodes (created
by admin tools, consumed and rewritten epoch-checked by the controller) and
their watches.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence

from mafka.coordination.kafka_zk.core import ZkFamily, _deferred
from mafka.coordination.store import (
    CreateOp,
    NodeExistsError,
    NoNodeError,
    SetOp,
    WatchCallback,
    WatchHandle,
)
from mafka.coordination.znodes.admin import (
    DeleteTopicsZNode,
    PreferredReplicaElectionZNode,
    ReassignPartitionsZNode,
)
from mafka.coordination.znodes.config import ConfigEntityZNode
from mafka.coordination.znodes.topics import topic_path
from mafka.errors import UnknownTopicOrPartitionError
from mafka.topics import TopicPartitionTuple

__all__ = ["AdminZk"]


class AdminZk(ZkFamily):
    """Topic deletion and the legacy admin request nodes (``KafkaZkClient``'s admin operations)."""

    # ------------------------------------------------------------------ topic deletion

    @_deferred
    async def mark_topic_for_deletion(self, topic: str) -> bool:
        """Queues *topic* for deletion (``AdminZkClient.deleteTopic``).

        Returns:
            True if newly queued, False if it already was.

        Raises:
            UnknownTopicOrPartitionError: The topic does not exist.
        """
        if await self._store.exists(topic_path(topic)) is None:
            raise UnknownTopicOrPartitionError(f"Topic `{topic}` to delete does not exist")
        try:
            await self._store.create(DeleteTopicsZNode.path(topic), b"", makepath=True)
        except NodeExistsError:
            return False
        return True

    @_deferred
    async def is_topic_marked_for_deletion(self, topic: str) -> bool:
        """True if ``/admin/delete_topics/<topic>`` exists."""
        return await self._store.exists(DeleteTopicsZNode.path(topic)) is not None

    @_deferred
    async def get_topic_deletions(self) -> list[str]:
        """Topics queued for deletion, sorted."""
        return await self._core.children_or_empty(DeleteTopicsZNode.PATH)

    @_deferred
    async def delete_topic_deletions(
        self, topics: Iterable[str], epoch_zk_version: int = -1
    ) -> None:
        """Removes ``/admin/delete_topics/<t>`` markers (one pipelined batch; absent ones are fine)."""
        await self._core.delete_checked_many(
            [DeleteTopicsZNode.path(topic) for topic in topics], epoch_zk_version
        )

    @_deferred
    async def delete_topic_znodes(self, topic: str, epoch_zk_version: int = -1) -> None:
        """Finishes a deletion (TDM ``completeDeleteTopic``): deletes, recursively and epoch-checked,
        ``/brokers/topics/<t>``, then ``/config/topics/<t>``, then ``/admin/delete_topics/<t>``.

        Absent nodes are skipped.

        Raises:
            ControllerMovedError: The epoch check failed.
        """
        await self._core.delete_recursive(topic_path(topic), epoch_zk_version)
        await self._core.delete_recursive(ConfigEntityZNode.topic_path(topic), epoch_zk_version)
        await self._core.delete_recursive(DeleteTopicsZNode.path(topic), epoch_zk_version)

    def watch_topic_deletions(self, callback: WatchCallback) -> WatchHandle:
        """Children of ``/admin/delete_topics``."""
        return self._store.watch_children(DeleteTopicsZNode.PATH, callback)

    # ------------------------------------------------------------------ preferred replica election

    @_deferred
    async def get_preferred_replica_election(self) -> tuple[TopicPartitionTuple, ...]:
        """Partitions in ``/admin/preferred_replica_election`` (empty if absent)."""
        got = await self._core.get_or_none(PreferredReplicaElectionZNode.PATH)
        return () if got is None else PreferredReplicaElectionZNode.decode(got[0])

    @_deferred
    async def delete_preferred_replica_election(self, epoch_zk_version: int = -1) -> None:
        """Deletes ``/admin/preferred_replica_election`` (absent is fine)."""
        await self._core.delete_checked(PreferredReplicaElectionZNode.PATH, epoch_zk_version)

    @_deferred
    async def create_preferred_replica_election(
        self, partitions: Iterable[TopicPartitionTuple]
    ) -> None:
        """Creates ``/admin/preferred_replica_election`` as the legacy admin tool does.

        Raises:
            NodeExistsError: An election is already pending there.
        """
        await self._store.ensure_path("/admin")
        await self._store.create(
            PreferredReplicaElectionZNode.PATH, PreferredReplicaElectionZNode.encode(partitions)
        )

    def watch_preferred_replica_election(self, callback: WatchCallback) -> WatchHandle:
        """``/admin/preferred_replica_election`` created, changed or deleted."""
        return self._store.watch_data(PreferredReplicaElectionZNode.PATH, callback)

    # ------------------------------------------------------------------ partition reassignment

    @_deferred
    async def get_partition_reassignment(self) -> dict[TopicPartitionTuple, tuple[int, ...]]:
        """The legacy ``/admin/reassign_partitions`` request (empty if absent)."""
        got = await self._core.get_or_none(ReassignPartitionsZNode.PATH)
        return {} if got is None else ReassignPartitionsZNode.decode(got[0])

    @_deferred
    async def delete_partition_reassignment(self, epoch_zk_version: int = -1) -> None:
        """Deletes ``/admin/reassign_partitions`` (absent is fine)."""
        await self._core.delete_checked(ReassignPartitionsZNode.PATH, epoch_zk_version)

    @_deferred
    async def set_partition_reassignment(
        self,
        reassignment: Mapping[TopicPartitionTuple, Sequence[int]],
        epoch_zk_version: int = -1,
    ) -> None:
        """Writes ``/admin/reassign_partitions``, creating it if absent (ZC ``setOrCreatePartitionReassignment``).

        The controller rewrites it (epoch-checked) as partitions finish; an
        admin tool (``epoch_zk_version`` -1) may create it.

        Raises:
            ControllerMovedError: The epoch check failed.
        """
        data = ReassignPartitionsZNode.encode(reassignment)
        try:
            await self._core.epoch_checked(
                [SetOp(ReassignPartitionsZNode.PATH, data, -1)], epoch_zk_version
            )
        except NoNodeError:
            await self._store.ensure_path("/admin")
            await self._core.epoch_checked(
                [CreateOp(ReassignPartitionsZNode.PATH, data)], epoch_zk_version
            )

    @_deferred
    async def create_partition_reassignment(
        self, reassignment: Mapping[TopicPartitionTuple, Sequence[int]]
    ) -> None:
        """Creates ``/admin/reassign_partitions`` as the legacy admin tool does (ZC ``createPartitionReassignment``).

        Raises:
            NodeExistsError: A reassignment is already pending there.
        """
        await self._store.ensure_path("/admin")
        await self._store.create(
            ReassignPartitionsZNode.PATH, ReassignPartitionsZNode.encode(reassignment)
        )

    def watch_partition_reassignment(self, callback: WatchCallback) -> WatchHandle:
        """``/admin/reassign_partitions`` created, changed or deleted."""
        return self._store.watch_data(ReassignPartitionsZNode.PATH, callback)
