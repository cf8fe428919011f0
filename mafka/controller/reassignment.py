"""Partition reassignment on the controller (Kafka 2.4+ / KIP-455, as in 2.8's ``KafkaController``).

:class:`ReassignmentManager` owns partition reassignment: the API and
ZooKeeper requests, the phases below, the watches on the state znodes of the
partitions being reassigned and the ``/admin/reassign_partitions`` znode.  The
reassignments in flight are in the core's
:class:`~mafka.controller.context.ControllerContext`; replicas and partitions
move through the state machines it is given, and a reassigned topic's
deletion is halted and resumed through the
:class:`~mafka.controller.topic_deletion.TopicDeletionManager`.
Names (``zk-controller-replication.md`` §3.4): ORS the original replicas,
TRS the target, RS = TRS followed by ORS − TRS, AR = TRS − ORS (adding), RR
= ORS − TRS (removing); :class:`~mafka.controller.context.ReplicaAssignment`
holds them.

Triggers:

* **API**: :meth:`ReassignmentManager.alter_partition_reassignments`
  (AlterPartitionReassignments; ``None`` replicas cancel, reverting to ORS)
  and :meth:`ReassignmentManager.list_partition_reassignments`;
* **ZooKeeper**: ``/admin/reassign_partitions`` (Kafka's JSON
  ``{"version":1,"partitions":[{"topic","partition","replicas"}]}``) is
  watched; a finished partition is dropped from it and the znode is deleted
  once empty.  An API reassignment of a partition removes that partition
  from the znode (the latest request wins);
* **progress**: while a partition is being reassigned its state znode is
  watched, and ISR-change notifications naming it are checked too (the
  leader posts one when a follower joins the ISR);
* **failover**: reassignments found in the topic znodes (non-empty
  ``adding_replicas`` / ``removing_replicas``) are resumed, after any new
  ones from ``/admin/reassign_partitions``; a broker coming back resumes
  reassignments that involve it.

Phases of :meth:`ReassignmentManager._on_partition_reassignment`:

* U1 write RS/AR/RR to the topic znode; U2 the same in memory; U3 stop the
  replicas a superseded reassignment was adding that the new one does not need.
* While TRS ⊄ ISR: A1 leader epoch + 1 (conditional state write), LeaderAndIsr
  with RS to ORS and (isNew) to AR; A2 AR → NewReplica.
* When TRS ⊆ ISR: B1 AR → OnlineReplica; B2 RS = TRS in memory; B3 leader ∉
  TRS or dead → Reassign election, else leader epoch + 1 and LeaderAndIsr to
  TRS; B4 RR → OfflineReplica (out of the ISR); B5 RR → DeletionStarted
  (StopReplica delete=true) → Successful → NonExistent; B6 write RS = TRS
  to the topic znode (last: ZooKeeper holds the only copy of ORS); B7 drop
  the partition from ``/admin/reassign_partitions`` and stop watching it; B8
  UpdateMetadata to every broker.

A topic being reassigned is not deleted until its reassignments end.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from twisted.internet.defer import Deferred

from mafka.controller.context import ReplicaAssignment
from mafka.controller.core import ControllerCore
from mafka.controller.election import LeaderElectionStrategy
from mafka.controller.partition_state_machine import PartitionStateMachine
from mafka.controller.replica_state_machine import ReplicaStateMachine
from mafka.controller.states import PartitionState, ReplicaState, StateChangeFailed
from mafka.controller.topic_deletion import TopicDeletionManager
from mafka.coordination.kafka_zk import ControllerMovedError
from mafka.coordination.store import WatchHandle
from mafka.coordination.znodes import LeaderIsrAndControllerEpoch, TopicAssignment
from mafka.errors import ErrorCode, KafkaError, NotControllerError
from mafka.topics import TopicPartitionTuple

__all__ = ["STATE_UPDATE_ATTEMPTS", "AlterResult", "ReassignmentManager"]

log = logging.getLogger("mafka.controller")

_R = ReplicaState

#: Per-partition AlterPartitionReassignments outcome: (error code, message or None).
AlterResult = tuple[ErrorCode, str | None]

#: Leader-epoch bumps that hit a BadVersion are re-read and retried this many times.
STATE_UPDATE_ATTEMPTS = 10

_NO_PARTITION = "The partition does not exist."


class ReassignmentManager:
    """AlterPartitionReassignments / ListPartitionReassignments / ``/admin/reassign_partitions``.

    Args:
        core: The controller's shared core.
        replica_state_machine: Moves the adding and removing replicas.
        partition_state_machine: Re-elects a leader that is not a live target replica.
        topic_deletion: Halted while a topic is being reassigned, resumed at the end.
    """

    def __init__(
        self,
        core: ControllerCore,
        replica_state_machine: ReplicaStateMachine,
        partition_state_machine: PartitionStateMachine,
        topic_deletion: TopicDeletionManager,
    ) -> None:
        self._core = core
        self._rsm = replica_state_machine
        self._psm = partition_state_machine
        self._deletion = topic_deletion
        self._reassignment_watches: dict[TopicPartitionTuple, WatchHandle] = {}

    def alter_partition_reassignments(
        self, reassignments: Mapping[TopicPartitionTuple, Sequence[int] | None]
    ) -> Deferred[tuple[ErrorCode, str | None, dict[TopicPartitionTuple, AlterResult]]]:
        """AlterPartitionReassignments (KC ``processApiPartitionReassignment``).

        Args:
            reassignments: Partition → target replicas, or None to cancel.

        Returns:
            (top-level error, message, partition → (error, message)).  Top level
            NOT_CONTROLLER when this broker is not the controller.  Per
            partition: NONE (started; completion is asynchronous),
            INVALID_REPLICA_ASSIGNMENT (empty, duplicate or negative ids, or
            new replicas on brokers that are not alive),
            NO_REASSIGNMENT_IN_PROGRESS (cancel without one),
            UNKNOWN_TOPIC_OR_PARTITION (unknown, or the topic is being deleted).
        """
        wanted = {tp: None if r is None else [int(b) for b in r] for tp, r in reassignments.items()}
        return _admin_answer(self._core, "ApiPartitionReassignment", self._process_api_partition_reassignment, wanted)

    def list_partition_reassignments(
        self, partitions: Iterable[TopicPartitionTuple] | None
    ) -> Deferred[tuple[ErrorCode, str | None, dict[TopicPartitionTuple, ReplicaAssignment]]]:
        """ListPartitionReassignments (KC ``processListPartitionReassignments``).

        Args:
            partitions: The partitions to look at; None = every reassignment in flight.

        Returns:
            (top-level error, message, partition → its full assignment) for the
            partitions being reassigned; NOT_CONTROLLER at the top level when
            this broker is not the controller.
        """
        wanted = None if partitions is None else list(partitions)
        return _admin_answer(self._core, "ListPartitionReassignments", self._process_list_partition_reassignments, wanted)

    async def _process_list_partition_reassignments(
        self, partitions: list[TopicPartitionTuple] | None
    ) -> dict[TopicPartitionTuple, ReplicaAssignment]:
        if not self._core.is_active:
            raise NotControllerError()
        ctx = self._core.context
        wanted = sorted(ctx.partitions_being_reassigned) if partitions is None else partitions
        out: dict[TopicPartitionTuple, ReplicaAssignment] = {}
        for tp in wanted:
            assignment = ctx.full_assignment(tp)
            if assignment.is_being_reassigned:
                out[tp] = assignment
        return out

    async def _process_api_partition_reassignment(
        self, reassignments: dict[TopicPartitionTuple, list[int] | None]
    ) -> dict[TopicPartitionTuple, AlterResult]:
        if not self._core.is_active:
            raise NotControllerError()
        results: dict[TopicPartitionTuple, AlterResult] = {}
        to_reassign: dict[TopicPartitionTuple, ReplicaAssignment] = {}
        for tp, target in reassignments.items():
            error = None if target is None else self._validate_replicas(tp, target)
            if error is not None:
                results[tp] = error
                continue
            built = self._maybe_build_reassignment(tp, target)
            if built is None:
                code = ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
                results[tp] = (code, code.description)
            else:
                to_reassign[tp] = built
        # The latest reassignment (API or ZooKeeper) wins: drop these from the znode.
        await self._maybe_remove_from_zk_reassignment(lambda tp, _: tp in to_reassign)
        results.update(await self._maybe_trigger_partition_reassignment(to_reassign))
        return results

    def _validate_replicas(
        self, tp: TopicPartitionTuple, replicas: Sequence[int]
    ) -> AlterResult | None:
        """KC ``validateReplicas``."""
        invalid = ErrorCode.INVALID_REPLICA_ASSIGNMENT
        if not replicas:
            return invalid, "Empty replica list specified in partition reassignment."
        if len(set(replicas)) != len(replicas):
            return invalid, (
                f"Duplicate replica ids in partition reassignment replica list: {list(replicas)}"
            )
        if any(r < 0 for r in replicas):
            return invalid, f"Invalid broker id in replica list: {list(replicas)}"
        ctx = self._core.context
        adding = ctx.full_assignment(tp).reassign_to(replicas).adding
        live = ctx.live_broker_ids
        if not set(adding) <= live:
            return invalid, (
                f"Replica assignment has brokers that are not alive. Replica list: "
                f"{list(adding)}, live broker list: {sorted(live)}"
            )
        return None

    def _maybe_build_reassignment(
        self, tp: TopicPartitionTuple, target: Sequence[int] | None
    ) -> ReplicaAssignment | None:
        """KC ``maybeBuildReassignment``: None = a cancel with nothing to cancel."""
        current = self._core.context.full_assignment(tp)
        if current.is_being_reassigned:
            return current.reassign_to(current.origin_replicas if target is None else target)
        if target is None:
            return None
        return current.reassign_to(target)

    async def _maybe_trigger_partition_reassignment(
        self, reassignments: Mapping[TopicPartitionTuple, ReplicaAssignment]
    ) -> dict[TopicPartitionTuple, AlterResult]:
        """KC ``maybeTriggerPartitionReassignment``."""
        ctx = self._core.context
        results: dict[TopicPartitionTuple, AlterResult] = {}
        for tp, assignment in reassignments.items():
            if ctx.is_topic_queued_for_deletion(tp[0]):
                log.info("skipping reassignment of %s-%d: the topic is being deleted", *tp)
                results[tp] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, _NO_PARTITION)
                continue
            if not ctx.partition_replicas(tp):
                results[tp] = (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, _NO_PARTITION)
                continue
            try:
                await self.on_partition_reassignment(tp, assignment)
                results[tp] = (ErrorCode.NONE, None)
            except ControllerMovedError:
                raise
            except KafkaError as exc:
                results[tp] = (exc.code, exc.message)
            except Exception as exc:
                log.exception("controller %d: reassignment of %s-%d failed", self._core.broker_id, *tp)
                results[tp] = (ErrorCode.UNKNOWN_SERVER_ERROR, str(exc) or None)
        return results

    async def on_partition_reassignment(
        self, tp: TopicPartitionTuple, assignment: ReplicaAssignment
    ) -> None:
        """KC ``onPartitionReassignment`` (see the module doc for the phases)."""
        ctx = self._core.context
        self._deletion.mark_topic_ineligible({tp[0]})
        await self._update_current_reassignment(tp, assignment)
        if not await self._is_reassignment_complete(tp, assignment):
            # A1, A2
            await self._update_leader_epoch_and_send_request(tp, assignment)
            await self._rsm.handle_state_changes([(tp, r) for r in assignment.adding], _R.NewReplica)
            return
        log.info(
            "controller %d: target replicas %s of %s-%d are in the ISR; completing the reassignment",
            self._core.broker_id,
            list(assignment.target_replicas),
            *tp,
        )
        # B1
        await self._rsm.handle_state_changes([(tp, r) for r in assignment.adding], _R.OnlineReplica)
        # B2
        completed = ReplicaAssignment(assignment.target_replicas)
        ctx.update_full_assignment(tp, completed)
        # B3
        await self._move_reassigned_partition_leader_if_required(tp, completed)
        # B4, B5
        await self._stop_removed_replicas_of_reassigned_partition(tp, assignment.removing)
        # B6
        await self._update_replica_assignment_for_partition(tp, completed)
        # B7
        await self._remove_partition_from_reassigning_partitions(tp, completed)
        # B8
        self._core.send_update_metadata(ctx.live_or_shutting_down_broker_ids, [tp])
        self._core.stats.partition_reassignments_completed += 1
        await self._deletion.resume_deletion_for_topics({tp[0]})

    async def _update_current_reassignment(
        self, tp: TopicPartitionTuple, assignment: ReplicaAssignment
    ) -> None:
        """KC ``updateCurrentReassignment`` (U1–U3) and the ISR watch."""
        ctx = self._core.context
        current = ctx.full_assignment(tp)
        if current != assignment:
            log.info(
                "controller %d: reassigning %s-%d: %s -> %s",
                self._core.broker_id,
                *tp,
                current,
                assignment,
            )
            await self._update_replica_assignment_for_partition(tp, assignment)  # U1
            ctx.update_full_assignment(tp, assignment)  # U2
            unneeded = [r for r in current.replicas if r not in assignment.replicas]
            if unneeded:  # U3
                await self._stop_removed_replicas_of_reassigned_partition(tp, unneeded)
        self._watch_reassignment(tp)
        ctx.partitions_being_reassigned.add(tp)

    async def _is_reassignment_complete(
        self, tp: TopicPartitionTuple, assignment: ReplicaAssignment
    ) -> bool:
        """KC ``isReassignmentComplete``: TRS ⊆ the ISR in ZooKeeper (or nothing to do)."""
        if not assignment.is_being_reassigned:
            return True
        states = await self._core.zk.get_partition_states([tp])
        state = states.get(tp)
        if state is None:
            return False
        self._core.context.put_leadership(tp, state)
        return set(assignment.target_replicas) <= set(state.isr)

    async def _update_leader_epoch(
        self, tp: TopicPartitionTuple
    ) -> LeaderIsrAndControllerEpoch | None:
        """KC ``updateLeaderEpoch``: same leader and ISR, leader epoch + 1, conditional write.

        Raises:
            StateChangeFailed: A newer controller wrote the state, or it kept changing.
        """
        ctx = self._core.context
        for _ in range(STATE_UPDATE_ATTEMPTS):
            states = await self._core.zk.get_partition_states([tp])
            state = states.get(tp)
            if state is None:
                log.error("controller %d: %s-%d has no state znode", self._core.broker_id, *tp)
                return None
            if state.controller_epoch > ctx.epoch:
                raise StateChangeFailed(
                    f"Leader and isr path written by another controller. This probably means the "
                    f"current controller with epoch {ctx.epoch} went through a soft failure and "
                    f"another controller was elected with epoch {state.controller_epoch}. "
                    f"Aborting state change by this controller"
                )
            bumped = LeaderIsrAndControllerEpoch(
                state.leader, state.leader_epoch + 1, state.isr, ctx.epoch, state.zk_version
            )
            written = await self._core.zk.update_partition_states_conditionally(
                {tp: bumped}, ctx.epoch, ctx.epoch_zk_version
            )
            if tp in written.successes:
                new_state = written.successes[tp]
                ctx.put_leadership(tp, new_state)
                return new_state
            if tp in written.failures:
                raise written.failures[tp]
        raise StateChangeFailed(f"{tp[0]}-{tp[1]}: the state znode kept changing")

    async def _update_leader_epoch_and_send_request(
        self, tp: TopicPartitionTuple, assignment: ReplicaAssignment
    ) -> None:
        """A1 (and B3 without a leader move): bump the epoch, LeaderAndIsr to ORS and (isNew) AR."""
        ctx = self._core.context
        state = await self._update_leader_epoch(tp)
        if state is None:
            log.error(
                "controller %d: failed to send LeaderAndIsr with the new assignment %s of %s-%d",
                self._core.broker_id,
                assignment,
                *tp,
            )
            return
        self._core.batch.new_batch()
        try:
            replicas = ctx.partition_replicas(tp)
            self._core.batch.add_leader_and_isr(
                assignment.origin_replicas, tp, state, replicas, is_new=False
            )
            self._core.batch.add_leader_and_isr(assignment.adding, tp, state, replicas, is_new=True)
            self._core.batch.send_requests(ctx.epoch)
        except Exception:
            self._core.batch.clear()
            raise

    async def _move_reassigned_partition_leader_if_required(
        self, tp: TopicPartitionTuple, assignment: ReplicaAssignment
    ) -> None:
        """B3 (KC ``moveReassignedPartitionLeaderIfRequired``)."""
        ctx = self._core.context
        state = ctx.leadership.get(tp)
        leader = -1 if state is None else state.leader
        if leader not in assignment.replicas or not ctx.is_replica_online(leader, tp):
            log.info(
                "controller %d: leader %d of %s-%d is not a live target replica %s; re-electing",
                self._core.broker_id,
                leader,
                *tp,
                list(assignment.replicas),
            )
            await self._psm.handle_state_changes(
                [tp], PartitionState.OnlinePartition, LeaderElectionStrategy.REASSIGN
            )
        else:
            await self._update_leader_epoch_and_send_request(tp, assignment)

    async def _stop_removed_replicas_of_reassigned_partition(
        self, tp: TopicPartitionTuple, removed: Sequence[int]
    ) -> None:
        """B4–B5 (and U3): Offline (out of the ISR), then deleted (StopReplica delete=true)."""
        replicas = [(tp, r) for r in removed]
        if not replicas:
            return
        await self._rsm.handle_state_changes(replicas, _R.OfflineReplica)
        await self._rsm.handle_state_changes(replicas, _R.ReplicaDeletionStarted)
        await self._rsm.handle_state_changes(replicas, _R.ReplicaDeletionSuccessful)
        await self._rsm.handle_state_changes(replicas, _R.NonExistentReplica)

    async def _update_replica_assignment_for_partition(
        self, tp: TopicPartitionTuple, assignment: ReplicaAssignment
    ) -> None:
        """U1 / B6 (KC ``updateReplicaAssignmentForPartition``): rewrite the topic znode."""
        ctx = self._core.context
        topic = tp[0]
        partitions = dict(ctx.assignments.get(topic, {}))
        adding, removing = ctx.topic_adding_and_removing(topic)
        partitions[tp[1]] = assignment.replicas
        adding[tp[1]] = assignment.adding
        removing[tp[1]] = assignment.removing
        written = TopicAssignment(partitions, adding, removing, ctx.topic_ids.get(topic))
        await self._core.zk.set_assignment(topic, written, -1, ctx.epoch_zk_version)

    async def _remove_partition_from_reassigning_partitions(
        self, tp: TopicPartitionTuple, assignment: ReplicaAssignment
    ) -> None:
        """B7 (KC ``removePartitionFromReassigningPartitions``)."""
        ctx = self._core.context
        self._unwatch_reassignment(tp)
        await self._maybe_remove_from_zk_reassignment(
            lambda other, replicas: other == tp and tuple(replicas) == assignment.replicas
        )
        ctx.partitions_being_reassigned.discard(tp)

    async def _maybe_remove_from_zk_reassignment(
        self, should_remove: Callable[[TopicPartitionTuple, Sequence[int]], bool]
    ) -> None:
        """KC ``maybeRemoveFromZkReassignment``: rewrite the znode without the matches, or delete it."""
        ctx = self._core.context
        if await self._core.zk.store.exists("/admin/reassign_partitions") is None:
            return
        try:
            pending = await self._core.zk.get_partition_reassignment()
        except ValueError:
            log.exception("controller %d: unreadable /admin/reassign_partitions", self._core.broker_id)
            pending = {}
        kept = {tp: r for tp, r in pending.items() if not should_remove(tp, r)}
        if kept == pending and pending:
            return
        if not kept:
            log.info(
                "controller %d: no more partitions need to be reassigned; deleting "
                "/admin/reassign_partitions",
                self._core.broker_id,
            )
            await self._core.zk.delete_partition_reassignment(ctx.epoch_zk_version)
        else:
            await self._core.zk.set_partition_reassignment(kept, ctx.epoch_zk_version)

    async def process_zk_partition_reassignment(self) -> set[TopicPartitionTuple]:
        """KC ``processZkPartitionReassignment``: start what ``/admin/reassign_partitions`` asks.

        Returns:
            The partitions whose reassignment started.
        """
        if not self._core.is_active:
            return set()
        if await self._core.zk.store.exists("/admin/reassign_partitions") is None:
            return set()
        try:
            requested = await self._core.zk.get_partition_reassignment()
        except ValueError:
            log.exception("controller %d: unreadable /admin/reassign_partitions", self._core.broker_id)
            await self._core.zk.delete_partition_reassignment(self._core.context.epoch_zk_version)
            return set()
        results: dict[TopicPartitionTuple, AlterResult] = {}
        to_reassign: dict[TopicPartitionTuple, ReplicaAssignment] = {}
        for tp, target in requested.items():
            built = self._maybe_build_reassignment(tp, target)
            if built is None:
                code = ErrorCode.NO_REASSIGNMENT_IN_PROGRESS
                results[tp] = (code, code.description)
            else:
                to_reassign[tp] = built
        results.update(await self._maybe_trigger_partition_reassignment(to_reassign))
        failed = {tp for tp, (code, _) in results.items() if code != ErrorCode.NONE}
        if failed:
            log.warning(
                "controller %d: failed reassignment through zk: %s",
                self._core.broker_id,
                {f"{t}-{p}": results[(t, p)] for t, p in sorted(failed)},
            )
            await self._maybe_remove_from_zk_reassignment(lambda tp, _: tp in failed)
        return {tp for tp, (code, _) in results.items() if code == ErrorCode.NONE}

    async def initialize_partition_reassignments(self) -> None:
        """KC ``initializePartitionReassignments``: new ZooKeeper requests, then resume the rest."""
        ctx = self._core.context
        resumed = await self.process_zk_partition_reassignment()
        for tp in sorted(ctx.partitions_being_reassigned):
            if tp not in resumed:
                try:
                    await self.on_partition_reassignment(tp, ctx.full_assignment(tp))
                except ControllerMovedError:
                    raise
                except Exception:
                    log.exception(
                        "controller %d: resuming the reassignment of %s-%d failed",
                        self._core.broker_id,
                        *tp,
                    )

    async def _process_partition_reassignment_isr_change(self, tp: TopicPartitionTuple) -> None:
        """KC ``processPartitionReassignmentIsrChange``."""
        if not self._core.is_active:
            return
        if tp in self._core.context.partitions_being_reassigned:
            await self.maybe_complete_reassignment(tp)

    async def maybe_complete_reassignment(self, tp: TopicPartitionTuple) -> None:
        """KC ``maybeCompleteReassignment``: TRS ⊆ ISR → the B phases."""
        assignment = self._core.context.full_assignment(tp)
        if await self._is_reassignment_complete(tp, assignment):
            await self.on_partition_reassignment(tp, assignment)

    def _watch_reassignment(self, tp: TopicPartitionTuple) -> None:
        if tp in self._reassignment_watches:
            return
        self._reassignment_watches[tp] = self._core.zk.watch_partition_state(
            tp[0],
            tp[1],
            lambda: self._core.fire(
                "PartitionReassignmentIsrChange",
                self._process_partition_reassignment_isr_change,
                tp,
                coalesce=True,
            ),
        )

    def _unwatch_reassignment(self, tp: TopicPartitionTuple) -> None:
        watch = self._reassignment_watches.pop(tp, None)
        if watch is not None:
            watch.cancel()

    def unwatch_all_reassignments(self) -> None:
        for tp in list(self._reassignment_watches):
            self._unwatch_reassignment(tp)


def _admin_answer(core: ControllerCore, name: str, fn: Any, arg: Any) -> Deferred[Any]:
    """Runs an admin operation as a controller event: (NONE, None, results), or NOT_CONTROLLER and nothing."""

    async def run() -> tuple[ErrorCode, str | None, dict[Any, Any]]:
        results = await core.run_admin(name, fn, arg)
        if results is None:
            code = ErrorCode.NOT_CONTROLLER
            return code, code.description, {}
        return ErrorCode.NONE, None, results

    return Deferred.fromCoroutine(run())
