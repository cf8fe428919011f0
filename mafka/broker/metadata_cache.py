"""The broker's view of the cluster, fed only by the controller's UpdateMetadata.

Plain Python, no I/O.  Metadata requests are answered from here (Kafka's
``MetadataCache``): live brokers with their endpoints per listener, every
partition's leader, leader epoch, replicas, ISR and offline replicas, every
topic's id (16 raw bytes; zero for a topic created without one), and the
controller's id.  An UpdateMetadata from an older controller epoch is
refused (STALE_CONTROLLER_EPOCH); a partition whose leader is −2 is being
deleted and leaves the cache.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mafka.controller.election import LEADER_DURING_DELETE
from mafka.errors import ErrorCode

__all__ = ["MetadataCache", "PartitionInfo", "BrokerEndpoints"]


@dataclass(frozen=True, slots=True)
class PartitionInfo:
    """One partition as the controller last described it."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    offline_replicas: tuple[int, ...]
    zk_version: int
    controller_epoch: int


@dataclass(frozen=True, slots=True)
class BrokerEndpoints:
    """A live broker: its endpoints by listener name, and its rack."""

    id: int
    endpoints: Mapping[str, tuple[str, int]]
    rack: str | None


class MetadataCache:
    """What a broker knows about the cluster.

    Args:
        broker_id: this broker's id (used for error messages only).
    """

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.controller_id = -1
        self.controller_epoch = 0
        self.cluster_id: str | None = None
        self.brokers: dict[int, BrokerEndpoints] = {}
        self.partitions: dict[str, dict[int, PartitionInfo]] = {}
        self.topic_ids: dict[str, bytes] = {}
        self._names_by_id: dict[bytes, str] = {}

    # ------------------------------------------------------------------ updates

    def update(self, request: Any) -> tuple[ErrorCode, list[tuple[str, int]]]:
        """Applies an UpdateMetadata v5–7 body (topic ids from v7).

        Returns:
            (error, deleted partitions): STALE_CONTROLLER_EPOCH and nothing
            applied if the request comes from an older controller.
        """
        if request.controller_epoch < self.controller_epoch:
            return ErrorCode.STALE_CONTROLLER_EPOCH, []
        self.controller_epoch = request.controller_epoch
        self.controller_id = request.controller_id
        self.brokers = {
            b.id: BrokerEndpoints(b.id, {e.listener: (e.host, e.port) for e in b.endpoints}, b.rack)
            for b in request.live_brokers
        }
        deleted: list[tuple[str, int]] = []
        for topic_state in request.topic_states:
            topic = topic_state.topic_name
            topic_id = getattr(topic_state, "topic_id", None)
            if topic_id is not None and topic_id != bytes(16):
                self.topic_ids[topic] = bytes(topic_id)
            for ps in topic_state.partition_states:
                if ps.leader == LEADER_DURING_DELETE:
                    parts = self.partitions.get(topic)
                    if parts is not None and parts.pop(ps.partition_index, None) is not None:
                        deleted.append((topic, ps.partition_index))
                        if not parts:
                            del self.partitions[topic]
                            self.topic_ids.pop(topic, None)
                    continue
                self.partitions.setdefault(topic, {})[ps.partition_index] = PartitionInfo(
                    ps.leader,
                    ps.leader_epoch,
                    tuple(ps.isr),
                    tuple(ps.replicas),
                    tuple(ps.offline_replicas),
                    ps.zk_version,
                    ps.controller_epoch,
                )
        self._names_by_id = {topic_id: topic for topic, topic_id in self.topic_ids.items()}
        return ErrorCode.NONE, deleted

    def note_leadership(self, topic: str, ps: Any) -> bool:
        """Takes a LeaderAndIsr partition state this broker just applied, if newer than the cached one.

        The controller's UpdateMetadata follows its LeaderAndIsr, but a broker
        that has just given up leadership (a controlled shutdown) would
        otherwise keep naming itself leader to clients until it arrives.
        Returns whether the cache changed.
        """
        parts = self.partitions.get(topic)
        if parts is None:
            return False
        current = parts.get(ps.partition_index)
        if current is None or ps.leader_epoch <= current.leader_epoch:
            return False
        parts[ps.partition_index] = PartitionInfo(
            ps.leader, ps.leader_epoch, tuple(ps.isr), tuple(ps.replicas), current.offline_replicas,
            ps.zk_version, ps.controller_epoch,
        )
        return True

    # ------------------------------------------------------------------ queries

    def topics(self) -> list[str]:
        return sorted(self.partitions)

    def has_topic(self, topic: str) -> bool:
        return topic in self.partitions

    def partition(self, topic: str, partition: int) -> PartitionInfo | None:
        return self.partitions.get(topic, {}).get(partition)

    def topic_id(self, topic: str) -> bytes:
        """The topic's id as 16 bytes (all zero when unknown, Kafka's ZERO_UUID)."""
        return self.topic_ids.get(topic, bytes(16))

    def topic_name(self, topic_id: bytes) -> str | None:
        """The name of the topic with id *topic_id*, or None."""
        return self._names_by_id.get(bytes(topic_id))

    def partition_count(self, topic: str) -> int:
        return len(self.partitions.get(topic, {}))

    def alive_brokers(self, listener: str) -> list[tuple[int, str, int, str | None]]:
        """(id, host, port, rack) of every live broker with an endpoint on *listener*."""
        out = []
        for b in sorted(self.brokers.values(), key=lambda b: b.id):
            endpoint = b.endpoints.get(listener)
            if endpoint is not None:
                out.append((b.id, endpoint[0], endpoint[1], b.rack))
        return out

    def racks(self, listener: str) -> dict[int, str | None]:
        """{id: rack} of every live broker with an endpoint on *listener* (whom a client there can reach)."""
        return {b.id: b.rack for b in self.brokers.values() if listener in b.endpoints}

    def endpoint(self, broker_id: int, listener: str) -> tuple[str, int] | None:
        b = self.brokers.get(broker_id)
        return None if b is None else b.endpoints.get(listener)

    def topic_metadata(self, topics: Iterable[str], listener: str, internal: frozenset[str] = frozenset()) -> list[dict]:
        """Metadata response topics for known *topics* (unknown ones are the caller's)."""
        out = []
        for topic in topics:
            parts = self.partitions.get(topic)
            if parts is None:
                continue
            partitions = []
            for index in sorted(parts):
                info = parts[index]
                leader_alive = info.leader >= 0 and self.endpoint(info.leader, listener) is not None
                partitions.append(
                    {
                        "error_code": ErrorCode.NONE if leader_alive else ErrorCode.LEADER_NOT_AVAILABLE,
                        "partition_index": index,
                        "leader_id": info.leader if leader_alive else -1,
                        "leader_epoch": info.leader_epoch,
                        "replica_nodes": list(info.replicas),
                        "isr_nodes": list(info.isr),
                        "offline_replicas": list(info.offline_replicas),
                    }
                )
            out.append(
                {
                    "error_code": ErrorCode.NONE,
                    "name": topic,
                    "topic_id": self.topic_id(topic),
                    "is_internal": topic in internal,
                    "partitions": partitions,
                }
            )
        return out
