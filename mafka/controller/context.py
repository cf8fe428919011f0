"""The controller's view of the cluster (Kafka 2.8's ``ControllerContext``), plus small pure decisions.

Plain data, no I/O, no Twisted.  The active controller loads it from
ZooKeeper at failover and keeps it current while it processes events; it is
cleared when the controller resigns.  It holds:

* the controller epoch and the zkVersion of ``/controller_epoch`` that fences
  every controller write (``epoch``, ``epoch_zk_version``);
* live brokers: id → :class:`~mafka.coordination.znodes.BrokerRegistration`
  and id → broker epoch (the czxid of ``/brokers/ids/N``), and the brokers in
  controlled shutdown;
* every topic's replica assignment (partition → replicas in assignment order)
  and topic id;
* the last known leader/ISR of every partition
  (:class:`~mafka.coordination.znodes.LeaderIsrAndControllerEpoch`, carrying
  the state znode's zkVersion);
* reassignments in flight: each reassigning partition's adding and removing
  replicas (:class:`ReplicaAssignment`, Kafka's full replica assignment) and
  the set of partitions being reassigned;
* the partition and replica state tables of :mod:`mafka.controller.states`;
* topic deletion bookkeeping (queued, started, ineligible).

"Live" follows Kafka's ``isReplicaOnline``: a registered broker that is not
shutting down (shutting-down brokers count only when asked).  There are no
offline log dirs in Mafka's context (a failed dir is reported by the broker).

The module-level functions are the pure decisions the controller makes on top
of :mod:`mafka.controller.election`: classifying a ``/brokers/ids`` change,
dropping a dead replica from an ISR, converting between the ZooKeeper state
type and the election type.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import NamedTuple

from mafka.controller.election import LeaderAndIsr
from mafka.controller.states import (
    PartitionState,
    PartitionStateTable,
    ReplicaState,
    ReplicaStateTable,
    TransitionResult,
)
from mafka.coordination.znodes import BrokerRegistration, LeaderIsrAndControllerEpoch
from mafka.topics import TopicPartitionTuple

__all__ = [
    "BrokerChange",
    "ControllerContext",
    "PartitionReplica",
    "ReplicaAssignment",
    "classify_broker_change",
    "from_election_state",
    "remove_replica_from_isr",
    "to_election_state",
]

#: A replica: (partition, broker id) — Kafka's ``PartitionAndReplica``.
PartitionReplica = tuple[TopicPartitionTuple, int]


@dataclass(frozen=True, slots=True)
class ReplicaAssignment:
    """A partition's full replica assignment (Kafka's ``ReplicaAssignment``, KIP-455).

    While a reassignment runs, ``replicas`` is RS = TRS followed by ORS − TRS,
    ``adding`` is AR = TRS − ORS and ``removing`` is RR = ORS − TRS
    (``zk-controller-replication.md`` §3.4).  Outside a reassignment both
    are empty.

    Example:
        >>> ReplicaAssignment((1, 2, 3)).reassign_to((4, 5, 6))
        ReplicaAssignment(replicas=(4, 5, 6, 1, 2, 3), adding=(4, 5, 6), removing=(1, 2, 3))
    """

    replicas: tuple[int, ...]
    adding: tuple[int, ...] = ()
    removing: tuple[int, ...] = ()

    @property
    def origin_replicas(self) -> tuple[int, ...]:
        """ORS: the replicas before the reassignment (``replicas`` minus ``adding``)."""
        return tuple(r for r in self.replicas if r not in self.adding)

    @property
    def target_replicas(self) -> tuple[int, ...]:
        """TRS: the replicas after it (``replicas`` minus ``removing``)."""
        return tuple(r for r in self.replicas if r not in self.removing)

    @property
    def is_being_reassigned(self) -> bool:
        return bool(self.adding or self.removing)

    def reassign_to(self, target: Sequence[int]) -> ReplicaAssignment:
        """Kafka's ``reassignTo``: RS = distinct(target ++ ORS), AR = RS − ORS, RR = RS − target.

        Reassigning a partition already being reassigned starts again from its
        *original* replicas, so a superseded target's extra replicas are dropped.
        """
        origin = self.origin_replicas
        full = tuple(dict.fromkeys((*target, *origin)))
        return ReplicaAssignment(
            full,
            tuple(r for r in full if r not in origin),
            tuple(r for r in full if r not in set(target)),
        )


class BrokerChange(NamedTuple):
    """The outcome of comparing ``/brokers/ids`` with the context (KC ``processBrokerChange``).

    Attributes:
        new: Registered now, unknown to the context (sorted).
        dead: Known to the context, no longer registered (sorted).
        bounced: Registered under both, but with a larger broker epoch: the
            broker restarted between two looks (handled as a failure, then a startup).
    """

    new: tuple[int, ...]
    dead: tuple[int, ...]
    bounced: tuple[int, ...]


def classify_broker_change(current: Mapping[int, int], known: Mapping[int, int]) -> BrokerChange:
    """Splits a broker listing into new, dead and bounced brokers.

    Args:
        current: Broker id → broker epoch, as registered now.
        known: Broker id → broker epoch, as the context has them (live or shutting down).
    """
    new = sorted(set(current) - set(known))
    dead = sorted(set(known) - set(current))
    bounced = sorted(b for b in set(current) & set(known) if current[b] > known[b])
    return BrokerChange(tuple(new), tuple(dead), tuple(bounced))


def remove_replica_from_isr(
    state: LeaderIsrAndControllerEpoch, replica: int
) -> LeaderIsrAndControllerEpoch | None:
    """The state after *replica* went offline (RSM ``doRemoveReplicasFromIsr``).

    The leader becomes -1 if *replica* led; the ISR loses *replica* unless it
    is the only member (a one-member ISR is kept, so that replica can lead
    again when it returns); the leader epoch is bumped; the zkVersion is kept
    for the conditional write.

    Returns:
        The new state, or None when *replica* is not in the ISR (nothing to write).
    """
    if replica not in state.isr:
        return None
    leader = -1 if state.leader == replica else state.leader
    isr = state.isr if len(state.isr) == 1 else tuple(r for r in state.isr if r != replica)
    return LeaderIsrAndControllerEpoch(
        leader, state.leader_epoch + 1, isr, state.controller_epoch, state.zk_version
    )


def to_election_state(state: LeaderIsrAndControllerEpoch) -> LeaderAndIsr:
    """The ZooKeeper state as :class:`~mafka.controller.election.LeaderAndIsr`."""
    return LeaderAndIsr(
        state.leader, state.leader_epoch, state.isr, state.zk_version, state.controller_epoch
    )


def from_election_state(state: LeaderAndIsr, controller_epoch: int) -> LeaderIsrAndControllerEpoch:
    """An election result as the state to write, stamped with *controller_epoch* (zkVersion kept)."""
    return LeaderIsrAndControllerEpoch(
        state.leader, state.leader_epoch, state.isr, controller_epoch, state.zk_version
    )


class _ReplicaStates(ReplicaStateTable[PartitionReplica]):
    """The replica state table, indexed by topic too (so forgetting a topic is not a full scan).

    A replica's state may outlive its place in the assignment (a reassignment
    drops the removed replicas from it before their state goes), so a topic's
    states are found through this index rather than through its assignment.
    """

    def __init__(self) -> None:
        super().__init__()
        self._by_topic: dict[str, set[PartitionReplica]] = {}

    def put(self, key: PartitionReplica, state: ReplicaState) -> None:
        super().put(key, state)
        self._by_topic.setdefault(key[0][0], set()).add(key)

    def remove(self, key: PartitionReplica) -> None:
        super().remove(key)
        keys = self._by_topic.get(key[0][0])
        if keys is not None:
            keys.discard(key)
            if not keys:
                del self._by_topic[key[0][0]]

    def transition(
        self, keys: Iterable[PartitionReplica], target: ReplicaState
    ) -> TransitionResult[PartitionReplica, ReplicaState]:
        keys = list(keys)
        for key in keys:
            self._by_topic.setdefault(key[0][0], set()).add(key)
        return super().transition(keys, target)

    def keys_of_topic(self, topic: str) -> list[PartitionReplica]:
        """The replicas of *topic* that have a state."""
        return list(self._by_topic.get(topic, ()))


class ControllerContext:
    """What the active controller knows (Kafka's ``ControllerContext``); see the module doc."""

    def __init__(self) -> None:
        self.epoch = 0
        self.epoch_zk_version = -1
        self.reset()

    def reset(self) -> None:
        """Forgets everything but the controller epoch (Kafka's ``resetContext``)."""
        self.live_brokers: dict[int, BrokerRegistration] = {}
        self.broker_epochs: dict[int, int] = {}
        #: Registrations the fast path fenced (mafka.controller.fast_failover): dead for every
        #: decision, but still in ZooKeeper until their session expires, and until then listed to
        #: clients in UpdateMetadata, as Kafka lists every registered broker.  A client told at
        #: once both that a broker is gone and that its partitions have new leaders may lose the
        #: new leaders again (librdkafka 2.x re-delegates the partitions of a broker it
        #: decommissions, then waits for its one-second scan).
        self.fenced_registrations: dict[int, BrokerRegistration] = {}
        self.shutting_down: set[int] = set()
        self.all_topics: set[str] = set()
        self.topic_ids: dict[str, str | None] = {}
        self.assignments: dict[str, dict[int, tuple[int, ...]]] = {}
        self.adding_replicas: dict[TopicPartitionTuple, tuple[int, ...]] = {}
        self.removing_replicas: dict[TopicPartitionTuple, tuple[int, ...]] = {}
        self.partitions_being_reassigned: set[TopicPartitionTuple] = set()
        self.leadership: dict[TopicPartitionTuple, LeaderIsrAndControllerEpoch] = {}
        self.partition_states: PartitionStateTable[TopicPartitionTuple] = PartitionStateTable()
        self.replica_states: _ReplicaStates = _ReplicaStates()
        self.topics_to_be_deleted: set[str] = set()
        self.topics_with_deletion_started: set[str] = set()
        self.topics_ineligible_for_deletion: set[str] = set()
        #: broker id → its replicas in failed log dirs (KAFKA_STORAGE_ERROR in a LeaderAndIsr answer)
        self.replicas_on_offline_dirs: dict[int, set[TopicPartitionTuple]] = {}

    # ------------------------------------------------------------------ brokers

    def set_live_brokers(self, brokers: Mapping[int, tuple[BrokerRegistration, int]]) -> None:
        """Replaces the live brokers with *brokers* (id → (registration, broker epoch))."""
        self.live_brokers = {b: reg for b, (reg, _) in brokers.items()}
        self.broker_epochs = {b: epoch for b, (_, epoch) in brokers.items()}

    def add_live_brokers(self, brokers: Mapping[int, tuple[BrokerRegistration, int]]) -> None:
        """Adds (or refreshes) brokers: id → (registration, broker epoch)."""
        for broker_id, (registration, epoch) in brokers.items():
            self.live_brokers[broker_id] = registration
            self.broker_epochs[broker_id] = epoch

    def remove_live_brokers(self, broker_ids: Iterable[int]) -> None:
        for broker_id in broker_ids:
            self.live_brokers.pop(broker_id, None)
            self.broker_epochs.pop(broker_id, None)

    def listed_brokers(self) -> dict[int, BrokerRegistration]:
        """The brokers an UpdateMetadata lists: the live ones and the fenced registrations."""
        return {**self.fenced_registrations, **self.live_brokers}

    @property
    def live_or_shutting_down_broker_ids(self) -> set[int]:
        """Every registered broker (Kafka's ``liveOrShuttingDownBrokerIds``)."""
        return set(self.live_brokers)

    @property
    def live_broker_ids(self) -> set[int]:
        """Registered brokers that are not shutting down (Kafka's ``liveBrokerIds``)."""
        return set(self.live_brokers) - self.shutting_down

    def broker_epoch(self, broker_id: int) -> int:
        """The broker epoch the controller has for *broker_id* (-1 if unknown)."""
        return self.broker_epochs.get(broker_id, -1)

    def live_broker_racks(self) -> dict[int, str | None]:
        """Broker id → rack of every registered broker (for replica assignment)."""
        return {b: reg.rack for b, reg in sorted(self.live_brokers.items())}

    def is_replica_online(self, broker_id: int, tp: TopicPartitionTuple | None = None,
                          include_shutting_down: bool = False) -> bool:
        """Kafka's ``isReplicaOnline``: the broker is live (and not shutting down, unless
        ``include_shutting_down``) and, for a partition ``tp``, its replica is not in a failed log dir."""
        if tp is not None and tp in self.replicas_on_offline_dirs.get(broker_id, ()):
            return False
        if include_shutting_down:
            return broker_id in self.live_brokers
        return broker_id in self.live_brokers and broker_id not in self.shutting_down

    # ------------------------------------------------------------------ topics and partitions

    def set_topic(
        self,
        topic: str,
        partitions: Mapping[int, Iterable[int]],
        topic_id: str | None = None,
        adding: Mapping[int, Iterable[int]] | None = None,
        removing: Mapping[int, Iterable[int]] | None = None,
    ) -> None:
        """Records *topic* with its assignment (replacing any), adding/removing replicas included."""
        self.all_topics.add(topic)
        self.topic_ids[topic] = topic_id
        self.assignments[topic] = {int(p): tuple(r) for p, r in partitions.items()}
        for table, given in ((self.adding_replicas, adding), (self.removing_replicas, removing)):
            for key in [k for k in table if k[0] == topic]:
                del table[key]
            for p, replicas in (given or {}).items():
                if int(p) in self.assignments[topic] and tuple(replicas):
                    table[(topic, int(p))] = tuple(replicas)

    def full_assignment(self, tp: TopicPartitionTuple) -> ReplicaAssignment:
        """Kafka's ``partitionFullReplicaAssignment`` (empty replicas if unknown)."""
        return ReplicaAssignment(
            self.partition_replicas(tp),
            self.adding_replicas.get(tp, ()),
            self.removing_replicas.get(tp, ()),
        )

    def update_full_assignment(self, tp: TopicPartitionTuple, assignment: ReplicaAssignment) -> None:
        """Kafka's ``updatePartitionFullReplicaAssignment``."""
        self.update_assignment(tp, assignment.replicas)
        for table, value in (
            (self.adding_replicas, assignment.adding),
            (self.removing_replicas, assignment.removing),
        ):
            if value:
                table[tp] = tuple(value)
            else:
                table.pop(tp, None)

    def topic_adding_and_removing(
        self, topic: str
    ) -> tuple[dict[int, tuple[int, ...]], dict[int, tuple[int, ...]]]:
        """The topic's adding and removing replicas by partition (for its znode)."""
        adding = {p: r for (t, p), r in self.adding_replicas.items() if t == topic}
        removing = {p: r for (t, p), r in self.removing_replicas.items() if t == topic}
        return adding, removing

    def update_assignment(self, tp: TopicPartitionTuple, replicas: Iterable[int]) -> None:
        topic, partition = tp
        self.all_topics.add(topic)
        self.assignments.setdefault(topic, {})[partition] = tuple(replicas)

    def remove_topic(self, topic: str) -> None:
        """Forgets *topic* everywhere (Kafka's ``removeTopic`` + deletion bookkeeping)."""
        for tp in self.partitions_for_topic(topic):
            self.leadership.pop(tp, None)
            self.partition_states.remove(tp)
            for replica in self.partition_replicas(tp):
                self.replica_states.remove((tp, replica))
        for replica_key in self.replica_states.keys_of_topic(topic):
            self.replica_states.remove(replica_key)
        for table in (self.adding_replicas, self.removing_replicas):
            for key in [k for k in table if k[0] == topic]:
                del table[key]
        self.partitions_being_reassigned = {
            tp for tp in self.partitions_being_reassigned if tp[0] != topic
        }
        self.assignments.pop(topic, None)
        self.topic_ids.pop(topic, None)
        self.all_topics.discard(topic)
        self.topics_to_be_deleted.discard(topic)
        self.topics_with_deletion_started.discard(topic)
        self.topics_ineligible_for_deletion.discard(topic)

    def partition_replicas(self, tp: TopicPartitionTuple) -> tuple[int, ...]:
        """The partition's replicas in assignment order (empty if unknown)."""
        return self.assignments.get(tp[0], {}).get(tp[1], ())

    def partitions_for_topic(self, topic: str) -> list[TopicPartitionTuple]:
        return [(topic, p) for p in sorted(self.assignments.get(topic, {}))]

    def all_partitions(self) -> list[TopicPartitionTuple]:
        return [tp for topic in sorted(self.assignments) for tp in self.partitions_for_topic(topic)]

    def replicas_for_partitions(
        self, partitions: Iterable[TopicPartitionTuple]
    ) -> list[PartitionReplica]:
        return [(tp, r) for tp in partitions for r in self.partition_replicas(tp)]

    def replicas_for_topic(self, topic: str) -> list[PartitionReplica]:
        return self.replicas_for_partitions(self.partitions_for_topic(topic))

    def replicas_on_brokers(self, broker_ids: Iterable[int]) -> list[PartitionReplica]:
        wanted = set(broker_ids)
        return [
            (tp, r)
            for tp in self.all_partitions()
            for r in self.partition_replicas(tp)
            if r in wanted
        ]

    def partitions_on_broker(self, broker_id: int) -> list[TopicPartitionTuple]:
        return [tp for tp in self.all_partitions() if broker_id in self.partition_replicas(tp)]

    def partition_leaders_on_broker(self, broker_id: int) -> list[TopicPartitionTuple]:
        """Partitions *broker_id* leads (topics being deleted excluded), as Kafka's ``partitionLeadersOnBroker``."""
        return [
            tp
            for tp, state in sorted(self.leadership.items())
            if state.leader == broker_id and not self.is_topic_queued_for_deletion(tp[0])
        ]

    def partitions_with_offline_leader(self) -> list[TopicPartitionTuple]:
        """Partitions whose leader is not online (topics being deleted excluded)."""
        return [
            tp
            for tp, state in sorted(self.leadership.items())
            if not self.is_replica_online(state.leader, tp)
            and not self.is_topic_queued_for_deletion(tp[0])
        ]

    def partitions_with_leaders(self) -> list[TopicPartitionTuple]:
        """Partitions with a known leadership (topics being deleted excluded)."""
        return [
            tp for tp in sorted(self.leadership) if not self.is_topic_queued_for_deletion(tp[0])
        ]

    def put_leadership(self, tp: TopicPartitionTuple, state: LeaderIsrAndControllerEpoch) -> None:
        self.leadership[tp] = state

    # ------------------------------------------------------------------ states

    def partitions_in_states(self, *states: PartitionState) -> list[TopicPartitionTuple]:
        return self.partition_states.in_state(*states)

    def check_partition_transition(
        self, partitions: Iterable[TopicPartitionTuple], target: PartitionState
    ) -> TransitionResult[TopicPartitionTuple, PartitionState]:
        """Registers unknown partitions as NonExistent, then splits valid/invalid moves."""
        partitions = list(partitions)
        for tp in partitions:
            if tp not in self.partition_states:
                self.partition_states.put(tp, PartitionState.NonExistentPartition)
        return self.partition_states.check(partitions, target)

    def check_replica_transition(
        self, replicas: Iterable[PartitionReplica], target: ReplicaState
    ) -> TransitionResult[PartitionReplica, ReplicaState]:
        """Registers unknown replicas as NonExistent, then splits valid/invalid moves."""
        replicas = list(replicas)
        for key in replicas:
            if key not in self.replica_states:
                self.replica_states.put(key, ReplicaState.NonExistentReplica)
        return self.replica_states.check(replicas, target)

    def replicas_in_state(self, topic: str, state: ReplicaState) -> list[PartitionReplica]:
        return [
            key for key in self.replicas_for_topic(topic) if self.replica_states.state(key) == state
        ]

    def are_all_replicas_in_state(self, topic: str, state: ReplicaState) -> bool:
        return all(
            self.replica_states.state(key) == state for key in self.replicas_for_topic(topic)
        )

    def is_any_replica_in_state(self, topic: str, state: ReplicaState) -> bool:
        return any(
            self.replica_states.state(key) == state for key in self.replicas_for_topic(topic)
        )

    def online_and_offline_replicas(self) -> tuple[list[PartitionReplica], list[PartitionReplica]]:
        online: list[PartitionReplica] = []
        offline: list[PartitionReplica] = []
        for key in self.replicas_for_partitions(self.all_partitions()):
            (online if self.is_replica_online(key[1]) else offline).append(key)
        return online, offline

    # ------------------------------------------------------------------ topic deletion

    def is_topic_queued_for_deletion(self, topic: str) -> bool:
        return topic in self.topics_to_be_deleted

    def is_topic_deletion_in_progress(self, topic: str) -> bool:
        return self.is_any_replica_in_state(topic, ReplicaState.ReplicaDeletionStarted)

    def queue_topic_deletion(self, topics: Iterable[str]) -> None:
        self.topics_to_be_deleted.update(topics)

    def begin_topic_deletion(self, topics: Iterable[str]) -> None:
        self.topics_with_deletion_started.update(topics)

    # ------------------------------------------------------------------ convenience

    def is_partition_online(self, tp: TopicPartitionTuple) -> bool:
        """True if the partition is in OnlinePartition with a live leader."""
        state = self.leadership.get(tp)
        return (
            self.partition_states.state(tp) == PartitionState.OnlinePartition
            and state is not None
            and state.leader >= 0
        )
