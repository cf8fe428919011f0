"""Topics in ZooKeeper: ``/brokers/topics/<t>``, their replica assignments and creation.

Owns :class:`TopicZk` — listing topics, creating one as
``AdminZkClient.createTopicWithAssignment`` does (config znode first, then the
assignment), reading and conditionally rewriting assignments, and the topic
watches.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import replace

from mafka.coordination.kafka_zk.configs import ConfigZk
from mafka.coordination.kafka_zk.core import ZkCore, ZkFamily, _deferred
from mafka.coordination.store import NodeExistsError, SetOp, Stat, WatchCallback, WatchHandle
from mafka.coordination.znodes.config import ConfigType
from mafka.coordination.znodes.topics import TOPICS_PATH, TopicAssignment, topic_path
from mafka.errors import InvalidTopicError, TopicAlreadyExistsError
from mafka.topics import validate_topic_name

__all__ = ["TopicZk"]


class TopicZk(ZkFamily):
    """Topic listing, creation and assignments (``KafkaZkClient``'s topic operations).

    Args:
        core: The client's core.
        configs: The client's config helper (a new topic's config is written first).
    """

    def __init__(self, core: ZkCore, configs: ConfigZk) -> None:
        super().__init__(core)
        self._configs = configs

    @_deferred
    async def topic_exists(self, topic: str) -> bool:
        """True if ``/brokers/topics/<topic>`` exists."""
        return await self._store.exists(topic_path(topic)) is not None

    @_deferred
    async def get_topics(self) -> list[str]:
        """All topic names, sorted."""
        return await self._core.children_or_empty(TOPICS_PATH)

    @_deferred
    async def create_topic(
        self,
        name: str,
        assignment: Mapping[int, Sequence[int]] | TopicAssignment,
        config: Mapping[str, str] | None = None,
        topic_id: str | None = None,
    ) -> TopicAssignment:
        """Creates a topic as ``AdminZkClient.createTopicWithAssignment``: config znode first, then assignment.

        Args:
            name: The topic (validated as Kafka's ``Topic.validate``).
            assignment: Partition → replicas, or a ready :class:`TopicAssignment`.
            config: Topic config overrides written to ``/config/topics/<name>`` (``{}`` if None).
            topic_id: The topic id (replaces the assignment's) — None writes none.

        Returns:
            The assignment written.

        Raises:
            TopicAlreadyExistsError: ``/brokers/topics/<name>`` exists (checked
                before the config is touched, and again by the create).
            InvalidTopicError: Illegal name, or it collides with an existing
                topic once ``.`` and ``_`` are treated alike.
        """
        validate_topic_name(name)
        if isinstance(assignment, TopicAssignment):
            written = assignment if topic_id is None else replace(assignment, topic_id=topic_id)
        else:
            written = TopicAssignment({p: tuple(replicas) for p, replicas in assignment.items()}, topic_id=topic_id)
        if await self._store.exists(topic_path(name)) is not None:
            raise TopicAlreadyExistsError(f"Topic '{name}' already exists.")
        if "." in name or "_" in name:
            topics = await self._core.children_or_empty(TOPICS_PATH)
            if name in topics:
                raise TopicAlreadyExistsError(f"Topic '{name}' already exists.")
            folded = name.replace(".", "_")
            colliding = [t for t in topics if t.replace(".", "_") == folded]
            if colliding:
                raise InvalidTopicError(
                    f"Topic '{name}' collides with existing topics: {', '.join(colliding)}"
                )
        await self._configs.set_or_create_entity_config(ConfigType.TOPIC, name, config or {})
        try:
            await self._store.create(topic_path(name), written.encode(), makepath=True)
        except NodeExistsError:
            raise TopicAlreadyExistsError(f"Topic '{name}' already exists.") from None
        return written

    @_deferred
    async def get_assignment(self, topic: str) -> tuple[TopicAssignment, int] | None:
        """``(assignment, zkVersion)`` of *topic*, or None if the topic does not exist."""
        got = await self._core.get_or_none(topic_path(topic))
        return None if got is None else (TopicAssignment.decode(got[0], topic), got[1].version)

    @_deferred
    async def get_assignments(
        self, topics: Iterable[str]
    ) -> dict[str, tuple[TopicAssignment, int]]:
        """``(assignment, zkVersion)`` of each topic that exists (others are left out).

        One pipelined batch of reads (Kafka's ``getReplicaAssignmentAndTopicIdForTopics``).
        """
        names = list(dict.fromkeys(topics))
        got = await self._core.get_many([topic_path(topic) for topic in names])
        return {
            topic: (TopicAssignment.decode(item[0], topic), item[1].version)
            for topic, item in zip(names, got, strict=True)
            if item is not None
        }

    @_deferred
    async def set_assignment(
        self,
        topic: str,
        assignment: TopicAssignment,
        expected_version: int = -1,
        epoch_zk_version: int = -1,
    ) -> int:
        """Rewrites ``/brokers/topics/<topic>``; returns the new zkVersion.

        Args:
            expected_version: The zkVersion read with the assignment (-1: any).
            epoch_zk_version: Controller fencing (-1: none).

        Raises:
            BadVersionError: Someone else changed the assignment.
            NoNodeError: The topic does not exist.
            ControllerMovedError: The epoch check failed.
        """
        results = await self._core.epoch_checked(
            [SetOp(topic_path(topic), assignment.encode(), expected_version)], epoch_zk_version
        )
        stat = results[0]
        assert isinstance(stat, Stat)
        return stat.version

    def watch_topics(self, callback: WatchCallback) -> WatchHandle:
        """Children of ``/brokers/topics`` (topics created/deleted)."""
        return self._store.watch_children(TOPICS_PATH, callback)

    def watch_topic(self, topic: str, callback: WatchCallback) -> WatchHandle:
        """Data of ``/brokers/topics/<topic>`` (partitions added, reassignment)."""
        return self._store.watch_data(topic_path(topic), callback)
