"""The broker's view of the cluster, fed only by the controller's UpdateMetadata.

Plain Python, no I/O.  Metadata requests are answered from here (Kafka's
``MetadataCache``): live brokers with their endpoints per listener, every
partition's leader, leader epoch, replicas, ISR and offline replicas, every
topic's id (16 raw bytes; zero for a topic created without one), and the
controller's id.  An UpdateMetadata from an older controller epoch is
refused (STALE_CONTROLLER_EPOCH); a partition whose leader is −2 is being
deleted and leaves the cache.

Change tracking, for whoever caches answers built from here (the encoded
Metadata responses of :mod:`mafka.broker.metadata_answers`):

* :attr:`MetadataCache.generation` increases on every change of anything a
  Metadata answer shows — brokers (ids, endpoints, racks), controller id,
  cluster id, topics, partitions, topic ids — and only then: an
  UpdateMetadata that repeats what is known leaves it alone;
* :meth:`MetadataCache.topic_stamp` is the generation at which one topic's
  answer last changed: its partitions, its id, or whether one of its
  leaders is alive on some listener (a broker came, went, or gained or lost
  a listener).  Two equal stamps mean an identical answer for that topic on
  every listener.

Both hold only if the cache is changed through :meth:`update`,
:meth:`note_leadership`, :meth:`mark_unreachable`, :meth:`mark_reachable`
and :attr:`cluster_id`, never by writing its dicts.

Brokers this broker found dead (:attr:`MetadataCache.unreachable`: their
inter-broker listener refused a connection, :mod:`mafka.broker.peer_liveness`)
stay in :attr:`MetadataCache.brokers`, the controller's word, and listed to
clients, but lead nothing for them — their partitions LEADER_NOT_AVAILABLE,
not a coordinator — until the controller's next UpdateMetadata drops them
(or moves their partitions) or a connection to them succeeds again.

:meth:`MetadataCache.snapshot` is the cache at its current generation as a
:class:`MetadataSnapshot` that never changes, for work done in a worker
thread: the cache copies a topic's partition map before it next changes it
(copy on write), so a snapshot costs a few dict copies, not one per topic.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mafka.controller.election import LEADER_DURING_DELETE
from mafka.errors import ErrorCode

__all__ = ["MetadataCache", "MetadataSnapshot", "PartitionInfo", "BrokerEndpoints"]


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


class MetadataSnapshot:
    """The metadata cache as it was at one generation; it never changes (safe to read in any thread).

    Attributes:
        generation: the cache's generation when it was taken.
        partitions: {topic: {index: PartitionInfo}}.
        topic_ids: {topic: 16-byte id} (topics created with an id).
        stamps: {topic: its :meth:`MetadataCache.topic_stamp`}.
        brokers: {id: BrokerEndpoints} of the live brokers that may lead (the unreachable left out).
    """

    __slots__ = ("generation", "partitions", "topic_ids", "stamps", "brokers", "_sorted", "_partition_count")

    def __init__(
        self, generation: int, partitions: Mapping[str, Mapping[int, PartitionInfo]], topic_ids: Mapping[str, bytes],
        stamps: Mapping[str, int], brokers: Mapping[int, BrokerEndpoints],
    ) -> None:
        self.generation = generation
        self.partitions = partitions
        self.topic_ids = topic_ids
        self.stamps = stamps
        self.brokers = brokers
        self._sorted: list[str] | None = None
        self._partition_count = -1

    def partition_count(self) -> int:
        """How many partitions all topics have together."""
        if self._partition_count < 0:
            self._partition_count = sum(map(len, self.partitions.values()))
        return self._partition_count

    def topics(self) -> list[str]:
        """Every topic's name, sorted (sorted once; do not change the list)."""
        if self._sorted is None:
            self._sorted = sorted(self.partitions)  # two threads may both sort: same result
        return self._sorted

    def alive_ids(self, listener: str) -> frozenset[int]:
        """The ids of the live brokers with an endpoint on *listener*."""
        return frozenset(b.id for b in self.brokers.values() if listener in b.endpoints)


class MetadataCache:
    """What a broker knows about the cluster.

    Args:
        broker_id: this broker's id (used for error messages only).
    """

    def __init__(self, broker_id: int) -> None:
        self.broker_id = broker_id
        self.controller_id = -1
        self.controller_epoch = 0
        self._cluster_id: str | None = None
        #: the live brokers as the controller last listed them
        self.brokers: dict[int, BrokerEndpoints] = {}
        #: listed brokers whose listener refused this broker's connection: hidden from clients
        self.unreachable: frozenset[int] = frozenset()
        self.partitions: dict[str, dict[int, PartitionInfo]] = {}
        self.topic_ids: dict[str, bytes] = {}
        self._names_by_id: dict[bytes, str] = {}
        #: bumped on every change a Metadata answer could show (see the module docstring)
        self.generation = 0
        self._stamps: dict[str, int] = {}
        self._sorted: tuple[int, list[str]] = (-1, [])  # (generation, topics sorted then)
        self._snapshot: MetadataSnapshot | None = None
        # Topics whose partition map no snapshot shares (changed in place); the others are copied first.
        self._owned: set[str] = set()

    @property
    def cluster_id(self) -> str | None:
        return self._cluster_id

    @cluster_id.setter
    def cluster_id(self, value: str | None) -> None:
        if value != self._cluster_id:
            self._cluster_id = value
            self.generation += 1

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
        changed = request.controller_id != self.controller_id
        self.controller_id = request.controller_id
        brokers = {
            b.id: BrokerEndpoints(b.id, {e.listener: (e.host, e.port) for e in b.endpoints}, b.rack)
            for b in request.live_brokers
        }
        moved: set[int] = set()
        if brokers != self.brokers:
            changed = True
            moved = _listeners_changed(self.brokers, brokers)
            self.brokers = brokers
            self.unreachable = self.unreachable & brokers.keys()  # gone for the controller too
        touched: set[str] = set()  # topics whose answer changed
        ids_changed = False
        deleted: list[tuple[str, int]] = []
        for topic_state in request.topic_states:
            topic = topic_state.topic_name
            topic_id = getattr(topic_state, "topic_id", None)
            if topic_id is not None and topic_id != bytes(16) and self.topic_ids.get(topic) != bytes(topic_id):
                self.topic_ids[topic] = bytes(topic_id)
                ids_changed = True
                touched.add(topic)
            for ps in topic_state.partition_states:
                if ps.leader == LEADER_DURING_DELETE:
                    if ps.partition_index in self.partitions.get(topic, ()):
                        parts = self._own(topic)
                        del parts[ps.partition_index]
                        deleted.append((topic, ps.partition_index))
                        touched.add(topic)
                        if not parts:
                            del self.partitions[topic]
                            self._owned.discard(topic)
                            ids_changed |= self.topic_ids.pop(topic, None) is not None
                    continue
                info = PartitionInfo(
                    ps.leader,
                    ps.leader_epoch,
                    tuple(ps.isr),
                    tuple(ps.replicas),
                    tuple(ps.offline_replicas),
                    ps.zk_version,
                    ps.controller_epoch,
                )
                if self.partitions.get(topic, {}).get(ps.partition_index) != info:
                    self._own(topic)[ps.partition_index] = info
                    touched.add(topic)
        if moved:
            # A leader that came, went or changed listeners turns its partitions' answers
            # (leader or LEADER_NOT_AVAILABLE) on some listener.
            touched.update(
                topic for topic, parts in self.partitions.items() if any(p.leader in moved for p in parts.values())
            )
        if ids_changed:
            self._names_by_id = {topic_id: topic for topic, topic_id in self.topic_ids.items()}
        if changed or touched:
            self._changed(touched)
        return ErrorCode.NONE, deleted

    def _own(self, topic: str) -> dict[int, PartitionInfo]:
        """*topic*'s partition map, safe to change in place: copied first if a snapshot may share it."""
        parts = self.partitions.get(topic)
        if parts is None or topic not in self._owned:
            parts = self.partitions[topic] = {} if parts is None else dict(parts)
            self._owned.add(topic)
        return parts

    def _changed(self, topics: Iterable[str]) -> None:
        """A new generation, in which *topics*' answers changed (stamps of topics gone are dropped)."""
        self.generation += 1
        for topic in topics:
            if topic in self.partitions:
                self._stamps[topic] = self.generation
            else:
                self._stamps.pop(topic, None)

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
        self._own(topic)[ps.partition_index] = PartitionInfo(
            ps.leader, ps.leader_epoch, tuple(ps.isr), tuple(ps.replicas), current.offline_replicas,
            ps.zk_version, ps.controller_epoch,
        )
        self._changed((topic,))
        return True

    def mark_unreachable(self, broker_id: int) -> bool:
        """*broker_id*'s listener refused a connection: clients no longer see it; whether that is news."""
        if broker_id not in self.brokers or broker_id in self.unreachable:
            return False
        self.unreachable = self.unreachable | {broker_id}
        self._changed(self._led_by(broker_id))
        return True

    def mark_reachable(self, broker_id: int) -> bool:
        """A connection to *broker_id* succeeded again: clients see it as the controller lists it."""
        if broker_id not in self.unreachable:
            return False
        self.unreachable = self.unreachable - {broker_id}
        self._changed(self._led_by(broker_id))
        return True

    def leads_any(self, broker_ids: Iterable[int]) -> bool:
        """Whether one of *broker_ids* leads a partition as the cache has it (scans every partition)."""
        ids = set(broker_ids)
        return bool(ids) and any(p.leader in ids for parts in self.partitions.values() for p in parts.values())

    def _led_by(self, broker_id: int) -> list[str]:
        return [topic for topic, parts in self.partitions.items() if any(p.leader == broker_id for p in parts.values())]

    # ------------------------------------------------------------------ queries

    def snapshot(self) -> MetadataSnapshot:
        """The cache now, unchanging (the same object until the generation moves on)."""
        snap = self._snapshot
        if snap is None or snap.generation != self.generation:
            self._owned.clear()  # every partition map is now shared with the snapshot
            # Leaders are answered only if alive in the snapshot: the unreachable lead nothing.
            brokers = {b: e for b, e in self.brokers.items() if b not in self.unreachable}
            snap = self._snapshot = MetadataSnapshot(
                self.generation, dict(self.partitions), dict(self.topic_ids), dict(self._stamps), brokers
            )
        return snap

    def topics(self) -> list[str]:
        """Every topic's name, sorted (a new list; the sort is done once per generation)."""
        generation, names = self._sorted
        if generation != self.generation:
            names = sorted(self.partitions)
            self._sorted = (self.generation, names)
        return list(names)

    def has_topic(self, topic: str) -> bool:
        return topic in self.partitions

    def topic_stamp(self, topic: str) -> int:
        """The generation at which *topic*'s answer last changed (-1: not in the cache, or written around the methods)."""
        return self._stamps.get(topic, -1)

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


def _listeners_changed(old: Mapping[int, BrokerEndpoints], new: Mapping[int, BrokerEndpoints]) -> set[int]:
    """The broker ids alive on a different set of listeners in *new* than in *old* (gone and new ones included)."""
    out = set()
    for broker_id in old.keys() | new.keys():
        before, after = old.get(broker_id), new.get(broker_id)
        if (before is None or after is None
                or before.endpoints.keys() != after.endpoints.keys()):
            out.add(broker_id)
    return out
