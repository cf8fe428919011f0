"""The client's view of the cluster, built from Metadata responses.  Pure: no I/O.

:class:`ClusterMetadata` answers "who leads this partition", "how many
partitions has this topic", "where is broker N" from the last Metadata
response it was given, and tracks which topics the client needs so the
next refresh asks for them.  Partitions carry their leader epoch (Metadata
v7+): an answer from a broker that lags behind (an older epoch than the one
known) does not replace a partition's newer state (KIP-320).  The I/O layer
decides when to refresh
(:attr:`ClusterMetadata.need_update`, the age against
``metadata.max.age.ms``) and feeds the result to :meth:`update`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from mafka.errors import ErrorCode

__all__ = ["BrokerInfo", "PartitionInfo", "TopicInfo", "ClusterMetadata"]


@dataclass(frozen=True, slots=True)
class BrokerInfo:
    """A broker as Metadata lists it (confluent-kafka's ``BrokerMetadata`` fields)."""

    id: int
    host: str
    port: int
    rack: str | None = None

    def __str__(self) -> str:
        return f"{self.host}:{self.port}/{self.id}"


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """A partition (confluent-kafka's ``PartitionMetadata`` fields; ``error`` is an int code)."""

    id: int
    leader: int
    replicas: tuple[int, ...]
    isrs: tuple[int, ...]
    error: int = 0
    leader_epoch: int = -1


@dataclass(slots=True)
class TopicInfo:
    """A topic: its partitions by id and its error code (0 = fine)."""

    topic: str
    partitions: dict[int, PartitionInfo] = field(default_factory=dict)
    error: int = 0
    is_internal: bool = False
    topic_id: bytes = bytes(16)


class ClusterMetadata:
    """The last known brokers, controller and topics.

    Attributes:
        brokers: node id -> :class:`BrokerInfo`.
        topics: topic -> :class:`TopicInfo` (only topics some response described).
        controller_id: -1 when unknown.
        cluster_id: None when unknown.
        wanted: the topics the client needs described at the next refresh.
        need_update: set by :meth:`request_update` (a leader moved, a topic
            is missing); cleared by :meth:`update`.
        updated_at: the ``now`` passed to the last :meth:`update` (seconds).
    """

    def __init__(self) -> None:
        self.brokers: dict[int, BrokerInfo] = {}
        self.topics: dict[str, TopicInfo] = {}
        self.controller_id = -1
        self.cluster_id: str | None = None
        self.wanted: set[str] = set()
        self.need_update = False
        self.updated_at = float("-inf")
        self.version = 0
        self._available: dict[str, list[int]] = {}

    def request_update(self) -> None:
        self.need_update = True

    def want(self, topics: set[str] | list[str]) -> bool:
        """Adds topics to the refresh set; True if any was new (an update is requested)."""
        new = set(topics) - self.wanted
        if new:
            self.wanted |= new
            self.need_update = True
        return bool(new)

    def update(self, response: Any, now: float, all_topics: bool = False) -> None:
        """Takes a Metadata response body (any decoded version).

        Topics the response describes replace what was known; with
        ``all_topics`` (the request named none) topics it leaves out are
        forgotten, since they no longer exist.  A partition described with
        an older leader epoch than the known one keeps the known state, and
        a refresh is asked for again (the answering broker was behind) —
        unless the topic id changed (the topic was deleted and created again).
        """
        self.brokers = {
            b.node_id: BrokerInfo(b.node_id, b.host, b.port, getattr(b, "rack", None))
            for b in response.brokers
        }
        self.controller_id = getattr(response, "controller_id", -1)
        self.cluster_id = getattr(response, "cluster_id", None)
        described: dict[str, TopicInfo] = {}
        stale = False
        for t in response.topics:
            if t.name is None:
                continue  # asked by id and unknown (Mafka asks by name)
            topic_id = bytes(getattr(t, "topic_id", None) or bytes(16))
            info = TopicInfo(t.name, error=t.error_code, is_internal=getattr(t, "is_internal", False),
                             topic_id=topic_id)
            known = self.topics.get(t.name)
            if known is not None and known.topic_id != topic_id:
                known = None  # deleted and created again: epochs start over
            for p in t.partitions:
                epoch = getattr(p, "leader_epoch", -1)
                old = None if known is None else known.partitions.get(p.partition_index)
                if old is not None and epoch < old.leader_epoch:
                    info.partitions[p.partition_index] = old
                    stale = True
                    continue
                info.partitions[p.partition_index] = PartitionInfo(
                    p.partition_index, p.leader_id, tuple(p.replica_nodes), tuple(p.isr_nodes),
                    p.error_code, epoch,
                )
            described[t.name] = info
        if all_topics:
            self.topics = described
        else:
            self.topics.update(described)
        self.need_update = stale
        self.updated_at = now
        self.version += 1
        self._available = {}

    # -- queries -------------------------------------------------------------------------

    def partition_count(self, topic: str) -> int | None:
        """Partitions of ``topic``; None if unknown or in error."""
        info = self.topics.get(topic)
        if info is None or info.error or not info.partitions:
            return None
        return len(info.partitions)

    def topic_error(self, topic: str) -> int:
        info = self.topics.get(topic)
        return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if info is None else info.error

    def leader(self, topic: str, partition: int) -> int:
        """The leader's node id, or -1 (unknown topic/partition or no leader)."""
        info = self.topics.get(topic)
        if info is None:
            return -1
        p = info.partitions.get(partition)
        return -1 if p is None else p.leader

    def leader_epoch(self, topic: str, partition: int) -> int:
        """The partition's leader epoch, or -1 (unknown, or a broker older than Metadata v7)."""
        info = self.topics.get(topic)
        if info is None:
            return -1
        p = info.partitions.get(partition)
        return -1 if p is None else p.leader_epoch

    def available_partitions(self, topic: str) -> list[int]:
        """Partitions of ``topic`` that have a live leader (cached until the next :meth:`update`;
        the producer asks for every unkeyed record)."""
        cached = self._available.get(topic)
        if cached is not None:
            return cached
        info = self.topics.get(topic)
        if info is None:
            return []
        found = [p.id for p in info.partitions.values() if p.leader >= 0 and p.leader in self.brokers]
        self._available[topic] = found
        return found

    def broker(self, node_id: int) -> BrokerInfo | None:
        return self.brokers.get(node_id)
