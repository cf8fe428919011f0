"""Replica leader elections on the controller: ElectLeaders, the ZooKeeper request, auto rebalance.

Kafka 2.8's ``processReplicaLeaderElection`` / ``onReplicaElection`` and the
auto-rebalance task of ``KafkaController`` (``zk-controller-replication.md``
§3.3–3.4).  :class:`LeaderElections` owns them: the three triggers below,
the ``ReplicaLeaderElection`` event that turns a request into per-partition
outcomes, and the auto rebalance pass (started at failover, stopped at
resignation).  The elections themselves are Online moves of the
:class:`~mafka.controller.partition_state_machine.PartitionStateMachine` it
is given; the leadership it reads is the core's
:class:`~mafka.controller.context.ControllerContext`.  Three triggers, one path:

* **admin** (:meth:`LeaderElections.elect_leaders`, the broker's
  ElectLeaders handler): PREFERRED or UNCLEAN for the partitions given;
* **ZooKeeper**: ``/admin/preferred_replica_election`` (Kafka's JSON
  ``{"version":1,"partitions":[{"topic":…,"partition":…}]}``) is watched; its
  partitions are preferred-elected, then the znode is deleted (always, even
  when nothing needed electing, as Kafka's ``removePartitionsFromPreferredReplicaElection``);
* **auto** (``auto.leader.rebalance.enable``): every
  ``leader.imbalance.check.interval.seconds`` (first check 5 s after
  failover) each broker's imbalance ratio is computed
  (:func:`preferred_replica_imbalance`) and, above
  ``leader.imbalance.per.broker.percentage``, the partitions it should lead
  are preferred-elected — only while nothing is being reassigned, and only
  where the preferred replica is live and in the ISR.  The check is a
  supervised background pass (``controller-auto-leader-rebalance``,
  :mod:`mafka.background`) that queues one controller event per run: a
  failed check is logged with its traceback and counted, and the next one
  still comes an interval later.

Per-partition outcome, as Kafka's ``processReplicaLeaderElection``:
unknown partition → UNKNOWN_TOPIC_OR_PARTITION ("The partition does not
exist."); topic being deleted → INVALID_TOPIC_EXCEPTION; PREFERRED when the
preferred replica already leads, or UNCLEAN when the leader is live →
ELECTION_NOT_NEEDED; the strategy found no leader →
PREFERRED_LEADER_NOT_AVAILABLE (preferred not live or not in the ISR) or
ELIGIBLE_LEADERS_NOT_AVAILABLE (UNCLEAN: no live replica); else NONE.
Strategies (:mod:`mafka.controller.election`): Preferred = ``assignment[0]``
if live and in the ISR, ISR unchanged, leader epoch + 1, conditional write
of the state znode, LeaderAndIsr to every assigned replica, UpdateMetadata
to every broker; UNCLEAN = the Offline strategy with unclean election
allowed (admin only; counted in ``stats.unclean_leader_elections`` when the
leader comes from outside the ISR).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from enum import IntEnum
from typing import Any

from twisted.internet.defer import Deferred

from mafka.background import PeriodicPass
from mafka.controller.core import ControllerCore
from mafka.controller.election import LeaderElectionStrategy
from mafka.controller.events import EventDropped
from mafka.controller.partition_state_machine import PartitionStateMachine
from mafka.controller.states import PartitionState, StateChangeFailed
from mafka.coordination.znodes import LeaderIsrAndControllerEpoch, PreferredReplicaElectionZNode
from mafka.errors import ErrorCode, KafkaError, NotControllerError
from mafka.topics import TopicPartitionTuple

__all__ = [
    "ElectionResult",
    "ElectionTrigger",
    "ElectionType",
    "LeaderElections",
    "preferred_replica_imbalance",
]

log = logging.getLogger("mafka.controller")

#: the background pass of the auto leader rebalance check (its failure counter's ``pass`` label)
AUTO_REBALANCE_PASS = "controller-auto-leader-rebalance"

#: Per-partition ElectLeaders outcome: (error code, message or None).
ElectionResult = tuple[ErrorCode, str | None]


class ElectionType(IntEnum):
    """ElectLeaders' ``election_type`` (Kafka's ``ElectionType``)."""

    PREFERRED = 0
    UNCLEAN = 1


class ElectionTrigger(IntEnum):
    """Who asked (Kafka's ``ElectionTrigger``)."""

    ADMIN = 0
    ZOOKEEPER = 1
    AUTO = 2


def preferred_replica_imbalance(
    assignments: Mapping[TopicPartitionTuple, Sequence[int]],
    leaders: Mapping[TopicPartitionTuple, int],
) -> dict[int, tuple[float, list[TopicPartitionTuple]]]:
    """Kafka's per-broker leader imbalance (``checkAndTriggerAutoLeaderRebalance``).

    Partitions are grouped by preferred replica (``assignment[0]``).  For
    broker B: ratio = #(partitions preferring B whose known leader is not B) /
    #(partitions preferring B).  A partition without a known leader counts in
    the denominator only (Kafka's ``leadershipInfo.exists(...)``).

    Args:
        assignments: Partition → replicas in assignment order (callers leave
            out topics being deleted).
        leaders: Partition → current leader, for partitions with a state.

    Returns:
        Preferred broker → (ratio, partitions it does not lead, sorted).
    """
    by_broker: dict[int, list[TopicPartitionTuple]] = {}
    for tp, replicas in assignments.items():
        if replicas:
            by_broker.setdefault(replicas[0], []).append(tp)
    out: dict[int, tuple[float, list[TopicPartitionTuple]]] = {}
    for broker, tps in sorted(by_broker.items()):
        not_led = sorted(tp for tp in tps if tp in leaders and leaders[tp] != broker)
        out[broker] = (len(not_led) / len(tps), not_led)
    return out


class LeaderElections:
    """ElectLeaders, ``/admin/preferred_replica_election`` and auto rebalance on the controller.

    Args:
        core: The controller's shared core.
        partition_state_machine: Elects the leaders (Online moves).
    """

    def __init__(self, core: ControllerCore, partition_state_machine: PartitionStateMachine) -> None:
        self._core = core
        self._psm = partition_state_machine
        #: the auto leader rebalance pass while this broker is the controller and it is enabled
        self._auto_rebalance_call: PeriodicPass | None = None

    @property
    def auto_rebalance_call(self) -> PeriodicPass | None:
        """The auto leader rebalance pass, while one is scheduled."""
        return self._auto_rebalance_call

    def elect_leaders(
        self,
        election_type: int,
        partitions: Iterable[TopicPartitionTuple] | None,
    ) -> Deferred[dict[TopicPartitionTuple, ElectionResult]]:
        """ElectLeaders on the controller (KC ``electLeaders`` with ``AdminClientTriggered``).

        Args:
            election_type: 0 PREFERRED, 1 UNCLEAN.
            partitions: The partitions; None = every partition the controller knows.

        Returns:
            Partition → (error, message); NOT_CONTROLLER for each partition
            given when this broker is not (or stops being) the controller
            (``{}`` for None).  Waiting for brokers to apply the new leaders
            is the caller's (Kafka's ``DelayedElectLeader``).
        """
        wanted = None if partitions is None else list(dict.fromkeys(partitions))

        async def run() -> dict[TopicPartitionTuple, ElectionResult]:
            results = await self._core.run_admin(
                "ReplicaLeaderElection",
                self._process_replica_leader_election,
                wanted,
                ElectionType(election_type),
                ElectionTrigger.ADMIN,
            )
            if results is None:
                not_controller = ErrorCode.NOT_CONTROLLER
                return {tp: (not_controller, not_controller.description) for tp in wanted or ()}
            return results

        return Deferred.fromCoroutine(run())

    async def _process_replica_leader_election(
        self,
        partitions: Sequence[TopicPartitionTuple] | None,
        election_type: ElectionType,
        trigger: ElectionTrigger,
    ) -> dict[TopicPartitionTuple, ElectionResult]:
        """KC ``processReplicaLeaderElection`` (the admin and ZooKeeper triggers)."""
        if not self._core.is_active:
            raise NotControllerError()
        ctx = self._core.context
        if partitions is None:
            partitions = ctx.all_partitions()
        known = [tp for tp in partitions if ctx.partition_replicas(tp)]
        unknown = [tp for tp in partitions if not ctx.partition_replicas(tp)]
        for tp in unknown:
            log.info(
                "controller %d: skipping replica leader election (%s) for %s-%d: it does not exist",
                self._core.broker_id,
                election_type.name,
                tp[0],
                tp[1],
            )
        being_deleted = [tp for tp in known if ctx.is_topic_queued_for_deletion(tp[0])]
        live = [tp for tp in known if not ctx.is_topic_queued_for_deletion(tp[0])]
        electable: list[TopicPartitionTuple] = []
        not_needed: list[TopicPartitionTuple] = []
        for tp in live:
            state = ctx.leadership.get(tp)
            leader = -1 if state is None else state.leader
            if election_type is ElectionType.PREFERRED:
                needed = leader != ctx.partition_replicas(tp)[0]
            else:
                needed = leader < 0 or leader not in ctx.live_broker_ids
            (electable if needed else not_needed).append(tp)
        elected = await self._on_replica_election(electable, election_type, trigger)
        results: dict[TopicPartitionTuple, ElectionResult] = {}
        for tp, outcome in elected.items():
            if isinstance(outcome, StateChangeFailed):
                code = (
                    ErrorCode.PREFERRED_LEADER_NOT_AVAILABLE
                    if election_type is ElectionType.PREFERRED
                    else ErrorCode.ELIGIBLE_LEADERS_NOT_AVAILABLE
                )
                results[tp] = (code, str(outcome))
            elif isinstance(outcome, KafkaError):
                results[tp] = (outcome.code, outcome.message)
            elif isinstance(outcome, Exception):
                results[tp] = (ErrorCode.UNKNOWN_SERVER_ERROR, str(outcome) or None)
            else:
                results[tp] = (ErrorCode.NONE, None)
        not_needed_code = ErrorCode.ELECTION_NOT_NEEDED
        for tp in not_needed:
            results[tp] = (not_needed_code, not_needed_code.description)
        for tp in being_deleted:
            results[tp] = (ErrorCode.INVALID_TOPIC_EXCEPTION, "The topic is being deleted")
        for tp in unknown:
            results[tp] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, "The partition does not exist.")
        return results

    async def _on_replica_election(
        self,
        partitions: list[TopicPartitionTuple],
        election_type: ElectionType,
        trigger: ElectionTrigger,
    ) -> dict[TopicPartitionTuple, LeaderIsrAndControllerEpoch | Exception]:
        """KC ``onReplicaElection``: Online with the Preferred (or admin-only Unclean) strategy."""
        if partitions:
            log.info(
                "controller %d: starting replica leader election (%s) for %s triggered by %s",
                self._core.broker_id,
                election_type.name,
                ",".join(f"{t}-{p}" for t, p in partitions),
                trigger.name,
            )
        if election_type is ElectionType.PREFERRED:
            strategy = LeaderElectionStrategy.PREFERRED
        elif trigger is ElectionTrigger.ADMIN:
            strategy = LeaderElectionStrategy.UNCLEAN
        else:
            strategy = LeaderElectionStrategy.OFFLINE
        results = await self._psm.handle_state_changes(
            partitions, PartitionState.OnlinePartition, strategy
        )
        ctx = self._core.context
        for tp, outcome in results.items():
            if isinstance(outcome, Exception):
                if trigger is not ElectionTrigger.ADMIN:
                    log.error(
                        "controller %d: replica leader election (%s) for %s-%d failed: %s",
                        self._core.broker_id,
                        election_type.name,
                        tp[0],
                        tp[1],
                        outcome,
                    )
            elif election_type is ElectionType.PREFERRED:
                self._core.stats.preferred_leader_elections += 1
        if trigger is not ElectionTrigger.ADMIN:
            for tp in partitions:
                state = ctx.leadership.get(tp)
                preferred = ctx.partition_replicas(tp)[0]
                leader = -1 if state is None else state.leader
                if leader != preferred:
                    log.warning(
                        "controller %d: %s-%d failed to complete preferred replica leader "
                        "election to %d. Leader is still %d",
                        self._core.broker_id,
                        tp[0],
                        tp[1],
                        preferred,
                        leader,
                    )
        return results

    async def process_zk_preferred_replica_election(self) -> None:
        """``/admin/preferred_replica_election`` created: preferred-elect its partitions, delete it."""
        if not self._core.is_active:
            return
        if await self._core.zk.store.exists(PreferredReplicaElectionZNode.PATH) is None:
            return
        partitions: list[TopicPartitionTuple] = []
        try:
            partitions = list(await self._core.zk.get_preferred_replica_election())
        except ValueError:
            log.exception(
                "controller %d: unreadable %s", self._core.broker_id, PreferredReplicaElectionZNode.PATH
            )
        try:
            if partitions:
                await self._process_replica_leader_election(
                    partitions, ElectionType.PREFERRED, ElectionTrigger.ZOOKEEPER
                )
        finally:
            await self._core.zk.delete_preferred_replica_election(self._core.context.epoch_zk_version)

    def schedule_auto_rebalance(self, delay_s: float) -> None:
        """Starts the periodic check: first after *delay_s*, then every
        ``leader.imbalance.check.interval.seconds`` until :meth:`_cancel_auto_rebalance`."""
        self.cancel_auto_rebalance()
        self._auto_rebalance_call = self._core.background.every(
            AUTO_REBALANCE_PASS,
            float(self._core.config.leader_imbalance_check_interval_seconds),
            self._auto_rebalance_pass,
            first_delay_s=delay_s,
        )

    def cancel_auto_rebalance(self) -> None:
        p, self._auto_rebalance_call = self._auto_rebalance_call, None
        if p is not None:
            p.stop()

    def _auto_rebalance_pass(self) -> Deferred[None] | None:
        """One run of the pass: the check as a controller event; fires once it has run.

        Not being (or no longer being) the controller is no failure; anything
        else the check raised fails the run (logged and counted by the pass).
        """
        if self._core.stopped:
            return None
        d = self._core.enqueue(
            "AutoPreferredReplicaLeaderElection",
            self._process_auto_preferred_replica_leader_election,
        )

        def not_controller(failure: Any) -> None:
            failure.trap(EventDropped, NotControllerError)
            log.debug(
                "controller %d: auto leader rebalance: %s", self._core.broker_id, failure.getErrorMessage()
            )

        return d.addErrback(not_controller)

    async def _process_auto_preferred_replica_leader_election(self) -> None:
        """KC ``processAutoPreferredReplicaLeaderElection`` (the next check is the pass's)."""
        if not self._core.is_active:
            return
        await self._check_and_trigger_auto_leader_rebalance()

    async def _check_and_trigger_auto_leader_rebalance(self) -> None:
        """KC ``checkAndTriggerAutoLeaderRebalance``."""
        ctx = self._core.context
        assignments = {
            tp: ctx.partition_replicas(tp)
            for tp in ctx.all_partitions()
            if not ctx.is_topic_queued_for_deletion(tp[0])
        }
        leaders = {tp: state.leader for tp, state in ctx.leadership.items()}
        threshold = self._core.config.leader_imbalance_per_broker_percentage / 100.0
        for broker, (ratio, not_led) in preferred_replica_imbalance(assignments, leaders).items():
            log.debug(
                "controller %d: leader imbalance ratio for broker %d is %.3f",
                self._core.broker_id,
                broker,
                ratio,
            )
            if ratio <= threshold:
                continue
            candidates = [
                tp
                for tp in not_led
                if ctx.is_replica_online(broker, tp)
                and not ctx.partitions_being_reassigned
                and not ctx.is_topic_queued_for_deletion(tp[0])
                and tp[0] in ctx.all_topics
                and self._can_preferred_replica_be_leader(tp)
            ]
            if candidates:
                await self._on_replica_election(
                    candidates, ElectionType.PREFERRED, ElectionTrigger.AUTO
                )

    def _can_preferred_replica_be_leader(self, tp: TopicPartitionTuple) -> bool:
        ctx = self._core.context
        replicas = ctx.partition_replicas(tp)
        state = ctx.leadership.get(tp)
        return (
            bool(replicas)
            and state is not None
            and ctx.is_replica_online(replicas[0], tp)
            and replicas[0] in state.isr
        )
