"""Partition leader election: the controller's four strategies, exactly as Kafka 2.8.

Pure functions over plain values (assignment order, ISR, sets of live broker
ids); no ZooKeeper, no Twisted.

Sources (apache/kafka 2.8.2): ``core/src/main/scala/kafka/api/LeaderAndIsr.scala``,
``core/src/main/scala/kafka/controller/Election.scala`` and
``PartitionLeaderElectionAlgorithms`` / ``initializeLeaderAndIsrForPartitions``
in ``core/src/main/scala/kafka/controller/PartitionStateMachine.scala``.

Contract (the table of zk-controller-replication.md §3.3):

============================  ==================================================  ===========================  ============================
strategy                      leader                                              new ISR                      LeaderAndIsr recipients
============================  ==================================================  ===========================  ============================
offline                       first replica in assignment order that is live      leader in ISR: ISR ∩ live    live assigned replicas
                              and in the ISR; else, if unclean election is        (ISR order); else [leader]
                              allowed, the first live replica
reassign                      first target replica that is live and in the ISR    unchanged                    all target replicas
preferred                     ``assignment[0]`` if live and in the ISR            unchanged                    all assigned replicas
controlled shutdown           first replica live, in the ISR, not shutting down   ISR minus shutting-down      live or shutting-down
                                                                                                               assigned replicas
============================  ==================================================  ===========================  ============================

* The ``*_leader`` functions return an :class:`Election` ``(leader, isr,
  unclean)``. When no leader can be chosen ``leader`` is ``None`` and ``isr``
  is the ISR passed in: Kafka then writes nothing and the partition keeps its
  last leader-and-ISR.
* The ``leader_for_*`` functions mirror Kafka's ``Election`` object: they take
  the current :class:`LeaderAndIsr` and return an :class:`ElectionResult` with
  the new state (leader epoch + 1, zkVersion and controller epoch kept) and
  the brokers Kafka addresses the LeaderAndIsr request to.
* "Live" means what Kafka's ``isReplicaOnline`` means: the broker is alive,
  not shutting down (except for controlled shutdown, where shutting-down
  brokers count as live but may not lead) and the replica's log dir is online.
  Computing that set is the caller's job.

Example:
    >>> offline_partition_leader([2, 4], isr=[2], live_replicas={4}, unclean_allowed=True)
    Election(leader=4, isr=(4,), unclean=True)
"""

from __future__ import annotations

from collections.abc import Collection, Iterable, Sequence
from dataclasses import dataclass, replace
from enum import Enum
from typing import NamedTuple

__all__ = [
    "EPOCH_DURING_DELETE",
    "INITIAL_LEADER_EPOCH",
    "INITIAL_ZK_VERSION",
    "LEADER_DURING_DELETE",
    "NO_EPOCH",
    "NO_LEADER",
    "Election",
    "ElectionResult",
    "LeaderAndIsr",
    "LeaderElectionStrategy",
    "controlled_shutdown_leader",
    "initial_leader_and_isr",
    "leader_for_controlled_shutdown",
    "leader_for_offline",
    "leader_for_preferred_replica",
    "leader_for_reassign",
    "offline_partition_leader",
    "preferred_replica_leader",
    "reassign_partition_leader",
]

INITIAL_LEADER_EPOCH = 0
INITIAL_ZK_VERSION = 0
NO_LEADER = -1
NO_EPOCH = -1
LEADER_DURING_DELETE = -2
EPOCH_DURING_DELETE = -2


class LeaderElectionStrategy(Enum):
    """Kafka's ``PartitionLeaderElectionStrategy``: which of the functions below elects.

    ``OFFLINE`` follows the topic's ``unclean.leader.election.enable``;
    ``UNCLEAN`` is the offline strategy with unclean election allowed
    (Kafka's ``OfflinePartitionLeaderElectionStrategy(allowUnclean = true)``,
    used by an admin UNCLEAN election).
    """

    OFFLINE = "offline"
    UNCLEAN = "unclean"
    REASSIGN = "reassign"
    PREFERRED = "preferred"
    CONTROLLED_SHUTDOWN = "controlled-shutdown"


@dataclass(frozen=True, slots=True)
class LeaderAndIsr:
    """A partition's state node (``/brokers/topics/T/partitions/P/state``) plus its zkVersion.

    Kafka's ``LeaderAndIsr`` together with ``LeaderIsrAndControllerEpoch``'s
    controller epoch. ``isr`` is stored as a tuple whatever sequence is given.

    Attributes:
        leader: Leader broker id; ``NO_LEADER`` (-1) when none,
            ``LEADER_DURING_DELETE`` (-2) while the topic is deleted.
        leader_epoch: Bumped by every controller change of leader or ISR.
        isr: In-sync replicas.
        zk_version: The state znode's stat version, for conditional writes.
        controller_epoch: Epoch of the controller (or, for an ISR change, of
            the leader's last LeaderAndIsr) that wrote this state.
    """

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    zk_version: int = INITIAL_ZK_VERSION
    controller_epoch: int = 0

    def __post_init__(self) -> None:
        object.__setattr__(self, "isr", tuple(self.isr))

    @property
    def leader_opt(self) -> int | None:
        """The leader, or None when it is ``NO_LEADER``."""
        return None if self.leader == NO_LEADER else self.leader

    def new_leader_and_isr(self, leader: int, isr: Iterable[int]) -> LeaderAndIsr:
        """A new leader and ISR with the leader epoch + 1 (zkVersion and controller epoch kept)."""
        return replace(self, leader=leader, leader_epoch=self.leader_epoch + 1, isr=tuple(isr))

    def new_leader(self, leader: int) -> LeaderAndIsr:
        """A new leader, same ISR, leader epoch + 1."""
        return self.new_leader_and_isr(leader, self.isr)

    def new_epoch(self) -> LeaderAndIsr:
        """Same leader and ISR, leader epoch + 1 (Kafka's ``newEpochAndZkVersion``)."""
        return self.new_leader_and_isr(self.leader, self.isr)

    def with_zk_version(self, zk_version: int) -> LeaderAndIsr:
        """The same state with the znode version a write returned."""
        return replace(self, zk_version=zk_version)

    def with_controller_epoch(self, controller_epoch: int) -> LeaderAndIsr:
        """The same state as written by a controller of ``controller_epoch``."""
        return replace(self, controller_epoch=controller_epoch)

    def equals_ignore_zk(self, other: LeaderAndIsr) -> bool:
        """Kafka's ``equalsIgnoreZk``: same leader, leader epoch and ISR."""
        return (self.leader, self.leader_epoch, self.isr) == (
            other.leader,
            other.leader_epoch,
            other.isr,
        )


class Election(NamedTuple):
    """The outcome of one election strategy.

    Attributes:
        leader: The chosen leader, or None if no replica qualifies.
        isr: The ISR to write with that leader; the ISR passed in when
            ``leader`` is None (nothing is written then).
        unclean: True iff the leader was taken from outside the ISR (offline
            strategy with unclean election allowed); Kafka marks its
            ``UncleanLeaderElectionsPerSec`` meter then.
    """

    leader: int | None
    isr: tuple[int, ...]
    unclean: bool = False


class ElectionResult(NamedTuple):
    """Kafka's ``ElectionResult`` for one partition.

    Attributes:
        leader_and_isr: The state to write (leader epoch bumped), or None when
            no leader could be elected (or, for the offline strategy, when the
            partition has no state yet).
        recipients: The brokers the LeaderAndIsr request goes to (Kafka's
            ``liveReplicas`` field, which for reassign and preferred elections
            holds all target / assigned replicas, live or not).
        unclean: As :attr:`Election.unclean`.
    """

    leader_and_isr: LeaderAndIsr | None
    recipients: tuple[int, ...]
    unclean: bool = False


def offline_partition_leader(
    assignment: Sequence[int],
    isr: Sequence[int],
    live_replicas: Collection[int],
    unclean_allowed: bool,
) -> Election:
    """The Offline strategy (new leader after the leader died, or for an offline partition).

    Args:
        assignment: The partition's replicas in assignment order.
        isr: The current (last known) ISR.
        live_replicas: The brokers on which the partition's replica is online.
        unclean_allowed: The topic's ``unclean.leader.election.enable``, or an
            admin UNCLEAN election.

    Returns:
        Leader = first assigned replica that is live and in the ISR, ISR =
        the ISR members that are live (ISR order kept). Otherwise, with
        unclean election allowed, leader = first live assigned replica and ISR
        = ``(leader,)``, ``unclean`` True. Otherwise no leader, ISR unchanged.
    """
    isr_t = tuple(isr)
    live = set(live_replicas)
    leader = next((r for r in assignment if r in live and r in isr_t), None)
    if leader is not None:
        return Election(leader, tuple(r for r in isr_t if r in live), False)
    if unclean_allowed:
        leader = next((r for r in assignment if r in live), None)
        if leader is not None:
            return Election(leader, (leader,), True)
    return Election(None, isr_t, False)


def reassign_partition_leader(
    target_replicas: Sequence[int],
    isr: Sequence[int],
    live_replicas: Collection[int],
) -> Election:
    """The Reassign strategy: first target replica that is live and in the ISR; ISR unchanged."""
    isr_t = tuple(isr)
    live = set(live_replicas)
    leader = next((r for r in target_replicas if r in live and r in isr_t), None)
    return Election(leader, isr_t, False)


def preferred_replica_leader(
    assignment: Sequence[int],
    isr: Sequence[int],
    live_replicas: Collection[int],
) -> Election:
    """The Preferred strategy: ``assignment[0]`` if it is live and in the ISR; ISR unchanged.

    Kafka's ``assignment.headOption.filter(...)``: no other replica is tried.
    """
    isr_t = tuple(isr)
    live = set(live_replicas)
    leader = (
        assignment[0] if assignment and assignment[0] in live and assignment[0] in isr_t else None
    )
    return Election(leader, isr_t, False)


def controlled_shutdown_leader(
    assignment: Sequence[int],
    isr: Sequence[int],
    live_replicas: Collection[int],
    shutting_down: Collection[int],
) -> Election:
    """The ControlledShutdown strategy.

    Args:
        assignment: The partition's replicas in assignment order.
        isr: The current ISR.
        live_replicas: Brokers on which the replica is online; in Kafka these
            include the shutting-down brokers (``includeShuttingDownBrokers``),
            but either way a shutting-down broker never leads.
        shutting_down: Brokers in controlled shutdown.

    Returns:
        Leader = first assigned replica that is live, in the ISR and not
        shutting down; ISR = the ISR minus the shutting-down brokers. No leader
        => ISR unchanged.
    """
    isr_t = tuple(isr)
    live = set(live_replicas)
    down = set(shutting_down)
    leader = next((r for r in assignment if r in live and r in isr_t and r not in down), None)
    if leader is None:
        return Election(None, isr_t, False)
    return Election(leader, tuple(r for r in isr_t if r not in down), False)


def initial_leader_and_isr(
    assignment: Sequence[int],
    live: Collection[int],
    *,
    controller_epoch: int = 0,
) -> LeaderAndIsr | None:
    """The first state of a new partition (PSM ``initializeLeaderAndIsrForPartitions``).

    Leader = the first live assigned replica, ISR = all live assigned replicas
    in assignment order, leader epoch 0, zkVersion 0. LeaderAndIsr (isNew) then
    goes to the ISR.

    Returns:
        None when no assigned replica is live (Kafka logs a failed
        New -> Online transition and leaves the partition New).
    """
    live_set = set(live)
    live_assigned = tuple(r for r in assignment if r in live_set)
    if not live_assigned:
        return None
    return LeaderAndIsr(
        leader=live_assigned[0],
        leader_epoch=INITIAL_LEADER_EPOCH,
        isr=live_assigned,
        zk_version=INITIAL_ZK_VERSION,
        controller_epoch=controller_epoch,
    )


def leader_for_offline(
    current: LeaderAndIsr | None,
    assignment: Sequence[int],
    live: Collection[int],
    unclean_allowed: bool,
) -> ElectionResult:
    """Kafka's ``Election.leaderForOffline`` for one partition.

    Args:
        current: The partition's state, or None if it has none (then no
            election happens).
        assignment: The partition's replicas in assignment order.
        live: Brokers on which the partition's replica is online.
        unclean_allowed: Whether unclean election is allowed.

    Returns:
        The new state (epoch + 1) or None, and the live assigned replicas as
        recipients.
    """
    live_set = set(live)
    recipients = tuple(r for r in assignment if r in live_set)
    if current is None:
        return ElectionResult(None, recipients, False)
    election = offline_partition_leader(assignment, current.isr, live_set, unclean_allowed)
    if election.leader is None:
        return ElectionResult(None, recipients, False)
    return ElectionResult(
        current.new_leader_and_isr(election.leader, election.isr), recipients, election.unclean
    )


def leader_for_reassign(
    current: LeaderAndIsr,
    target_replicas: Sequence[int],
    live: Collection[int],
) -> ElectionResult:
    """Kafka's ``Election.leaderForReassign``: recipients are all target replicas."""
    election = reassign_partition_leader(target_replicas, current.isr, live)
    state = None if election.leader is None else current.new_leader(election.leader)
    return ElectionResult(state, tuple(target_replicas), False)


def leader_for_preferred_replica(
    current: LeaderAndIsr,
    assignment: Sequence[int],
    live: Collection[int],
) -> ElectionResult:
    """Kafka's ``Election.leaderForPreferredReplica``: recipients are all assigned replicas."""
    election = preferred_replica_leader(assignment, current.isr, live)
    state = None if election.leader is None else current.new_leader(election.leader)
    return ElectionResult(state, tuple(assignment), False)


def leader_for_controlled_shutdown(
    current: LeaderAndIsr,
    assignment: Sequence[int],
    live: Collection[int],
    shutting_down: Collection[int],
) -> ElectionResult:
    """Kafka's ``Election.leaderForControlledShutdown``.

    Args:
        current: The partition's state.
        assignment: The partition's replicas in assignment order.
        live: Brokers on which the replica is online (shutting-down ones may
            be included or not).
        shutting_down: Brokers in controlled shutdown.

    Returns:
        The new state (ISR minus shutting-down brokers, epoch + 1) or None, and
        the assigned replicas that are live or shutting down as recipients.
    """
    live_or_shutting_down = set(live) | set(shutting_down)
    recipients = tuple(r for r in assignment if r in live_or_shutting_down)
    election = controlled_shutdown_leader(assignment, current.isr, live, shutting_down)
    state = (
        None
        if election.leader is None
        else current.new_leader_and_isr(election.leader, election.isr)
    )
    return ElectionResult(state, recipients, False)
