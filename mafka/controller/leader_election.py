"""Replica leader elections on the controller: ElectLeaders, the ZooKeeper request, auto rebalance.

Kafka 2.8's ``processReplicaLeaderElection`` / ``onReplicaElection`` and the
auto-rebalance task of ``KafkaController`` (``zk-controller-replication.md``
§3.3–3.4), as :class:`LeaderElectionMixin` of
:class:`~mafka.controller.controller.Controller`.  Three triggers, one path:

* **admin** (:meth:`LeaderElectionMixin.elect_leaders`, the broker's
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
  where the preferred replica is live and in the ISR.

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

from mafka.controller.election import LeaderElectionStrategy
from mafka.controller.states import PartitionState, StateChangeFailed
from mafka.coordination.kafka_zk import ControllerMovedError
from mafka.coordination.znodes import (
    LeaderIsrAndControllerEpoch,
    PreferredReplicaElectionZNode,
    TopicPartition,
)
from mafka.errors import ErrorCode, KafkaError, NotControllerError

__all__ = [
    "ElectionResult",
    "ElectionTrigger",
    "ElectionType",
    "LeaderElectionMixin",
    "preferred_replica_imbalance",
]

log = logging.getLogger("mafka.controller")

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
    assignments: Mapping[TopicPartition, Sequence[int]],
    leaders: Mapping[TopicPartition, int],
) -> dict[int, tuple[float, list[TopicPartition]]]:
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
    by_broker: dict[int, list[TopicPartition]] = {}
    for tp, replicas in assignments.items():
        if replicas:
            by_broker.setdefault(replicas[0], []).append(tp)
    out: dict[int, tuple[float, list[TopicPartition]]] = {}
    for broker, tps in sorted(by_broker.items()):
        not_led = sorted(tp for tp in tps if tp in leaders and leaders[tp] != broker)
        out[broker] = (len(not_led) / len(tps), not_led)
    return out


class LeaderElectionMixin:
    """ElectLeaders, ``/admin/preferred_replica_election`` and auto rebalance on the controller."""

    # ------------------------------------------------------------------ admin entry point

    def elect_leaders(
        self: Any,
        election_type: int,
        partitions: Iterable[TopicPartition] | None,
    ) -> Deferred[dict[TopicPartition, ElectionResult]]:
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

        async def run() -> dict[TopicPartition, ElectionResult]:
            results = await self._run_admin(
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

    # ------------------------------------------------------------------ the election event

    async def _process_replica_leader_election(
        self: Any,
        partitions: Sequence[TopicPartition] | None,
        election_type: ElectionType,
        trigger: ElectionTrigger,
    ) -> dict[TopicPartition, ElectionResult]:
        """KC ``processReplicaLeaderElection`` (the admin and ZooKeeper triggers)."""
        if not self.is_active:
            raise NotControllerError()
        ctx = self.context
        if partitions is None:
            partitions = ctx.all_partitions()
        known = [tp for tp in partitions if ctx.partition_replicas(tp)]
        unknown = [tp for tp in partitions if not ctx.partition_replicas(tp)]
        for tp in unknown:
            log.info(
                "controller %d: skipping replica leader election (%s) for %s-%d: it does not exist",
                self.broker_id,
                election_type.name,
                tp[0],
                tp[1],
            )
        being_deleted = [tp for tp in known if ctx.is_topic_queued_for_deletion(tp[0])]
        live = [tp for tp in known if not ctx.is_topic_queued_for_deletion(tp[0])]
        electable: list[TopicPartition] = []
        not_needed: list[TopicPartition] = []
        for tp in live:
            state = ctx.leadership.get(tp)
            leader = -1 if state is None else state.leader
            if election_type is ElectionType.PREFERRED:
                needed = leader != ctx.partition_replicas(tp)[0]
            else:
                needed = leader < 0 or leader not in ctx.live_broker_ids
            (electable if needed else not_needed).append(tp)
        elected = await self._on_replica_election(electable, election_type, trigger)
        results: dict[TopicPartition, ElectionResult] = {}
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
        self: Any,
        partitions: list[TopicPartition],
        election_type: ElectionType,
        trigger: ElectionTrigger,
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch | Exception]:
        """KC ``onReplicaElection``: Online with the Preferred (or admin-only Unclean) strategy."""
        if partitions:
            log.info(
                "controller %d: starting replica leader election (%s) for %s triggered by %s",
                self.broker_id,
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
        results = await self._partition_state_changes(
            partitions, PartitionState.OnlinePartition, strategy
        )
        ctx = self.context
        for tp, outcome in results.items():
            if isinstance(outcome, Exception):
                if trigger is not ElectionTrigger.ADMIN:
                    log.error(
                        "controller %d: replica leader election (%s) for %s-%d failed: %s",
                        self.broker_id,
                        election_type.name,
                        tp[0],
                        tp[1],
                        outcome,
                    )
            elif election_type is ElectionType.PREFERRED:
                self.stats.preferred_leader_elections += 1
        if trigger is not ElectionTrigger.ADMIN:
            for tp in partitions:
                state = ctx.leadership.get(tp)
                preferred = ctx.partition_replicas(tp)[0]
                leader = -1 if state is None else state.leader
                if leader != preferred:
                    log.warning(
                        "controller %d: %s-%d failed to complete preferred replica leader "
                        "election to %d. Leader is still %d",
                        self.broker_id,
                        tp[0],
                        tp[1],
                        preferred,
                        leader,
                    )
        return results

    # ------------------------------------------------------------------ /admin/preferred_replica_election

    async def _process_zk_preferred_replica_election(self: Any) -> None:
        """``/admin/preferred_replica_election`` created: preferred-elect its partitions, delete it."""
        if not self.is_active:
            return
        if await self.zk.store.exists(PreferredReplicaElectionZNode.PATH) is None:
            return
        partitions: list[TopicPartition] = []
        try:
            partitions = list(await self.zk.get_preferred_replica_election())
        except ValueError:
            log.exception(
                "controller %d: unreadable %s", self.broker_id, PreferredReplicaElectionZNode.PATH
            )
        try:
            if partitions:
                await self._process_replica_leader_election(
                    partitions, ElectionType.PREFERRED, ElectionTrigger.ZOOKEEPER
                )
        finally:
            await self.zk.delete_preferred_replica_election(self.context.epoch_zk_version)

    # ------------------------------------------------------------------ auto rebalance

    def _schedule_auto_rebalance(self: Any, delay_s: float) -> None:
        self._cancel_auto_rebalance()
        self._auto_rebalance_call = self.reactor.callLater(
            delay_s,
            self._fire,
            "AutoPreferredReplicaLeaderElection",
            self._process_auto_preferred_replica_leader_election,
        )

    def _cancel_auto_rebalance(self: Any) -> None:
        call, self._auto_rebalance_call = self._auto_rebalance_call, None
        if call is not None and call.active():
            call.cancel()

    async def _process_auto_preferred_replica_leader_election(self: Any) -> None:
        """KC ``processAutoPreferredReplicaLeaderElection``: check, then schedule the next check."""
        if not self.is_active:
            return
        try:
            await self._check_and_trigger_auto_leader_rebalance()
        except ControllerMovedError:
            raise
        except Exception:
            log.exception("controller %d: auto leader rebalance failed", self.broker_id)
        finally:
            if self.is_active:
                self._schedule_auto_rebalance(
                    float(self.config.leader_imbalance_check_interval_seconds)
                )

    async def _check_and_trigger_auto_leader_rebalance(self: Any) -> None:
        """KC ``checkAndTriggerAutoLeaderRebalance``."""
        ctx = self.context
        assignments = {
            tp: ctx.partition_replicas(tp)
            for tp in ctx.all_partitions()
            if not ctx.is_topic_queued_for_deletion(tp[0])
        }
        leaders = {tp: state.leader for tp, state in ctx.leadership.items()}
        threshold = self.config.leader_imbalance_per_broker_percentage / 100.0
        for broker, (ratio, not_led) in preferred_replica_imbalance(assignments, leaders).items():
            log.debug(
                "controller %d: leader imbalance ratio for broker %d is %.3f",
                self.broker_id,
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

    def _can_preferred_replica_be_leader(self: Any, tp: TopicPartition) -> bool:
        ctx = self.context
        replicas = ctx.partition_replicas(tp)
        state = ctx.leadership.get(tp)
        return (
            bool(replicas)
            and state is not None
            and ctx.is_replica_online(replicas[0], tp)
            and replicas[0] in state.isr
        )
