"""The replica state machine (Kafka 2.8's ``ZkReplicaStateMachine``).

Owns every replica state change the controller makes
(``zk-controller-replication.md`` §3.2): the legal moves come from
:mod:`mafka.controller.states` (checked against the context's replica state
table), and each move's side effects are done here — LeaderAndIsr to a new or
returning replica, StopReplica to an offline or deleted one, removing an
offline replica from the ISR with a conditional (epoch-fenced) write of the
partition state znode — all queued in the core's request batch and sent as
one batch per state change.  :meth:`ReplicaStateMachine.startup` seeds the
state table at failover.

It holds no state of its own: the replica states and the leadership it
updates are in the :class:`~mafka.controller.context.ControllerContext` of
the :class:`~mafka.controller.core.ControllerCore` it is given.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from mafka.controller.context import PartitionReplica, remove_replica_from_isr
from mafka.controller.core import STATE_WRITE_ATTEMPTS, ControllerCore
from mafka.controller.states import ReplicaState
from mafka.coordination.kafka_zk import ControllerMovedError
from mafka.coordination.znodes import LeaderIsrAndControllerEpoch
from mafka.topics import TopicPartitionTuple

__all__ = ["ReplicaStateMachine"]

log = logging.getLogger("mafka.controller")

_R = ReplicaState


class ReplicaStateMachine:
    """Replica state changes and their requests (RSM); see the module doc.

    Args:
        core: The controller's shared core.
    """

    def __init__(self, core: ControllerCore) -> None:
        self._core = core

    async def startup(self) -> None:
        """RSM ``startup`` (at failover): seed every replica's state, then move them Online / Offline."""
        ctx = self._core.context
        for tp in ctx.all_partitions():
            for replica in ctx.partition_replicas(tp):
                state = (
                    _R.OnlineReplica
                    if ctx.is_replica_online(replica, tp)
                    else _R.ReplicaDeletionIneligible
                )
                ctx.replica_states.put((tp, replica), state)
        online, offline = ctx.online_and_offline_replicas()
        await self.handle_state_changes(online, _R.OnlineReplica)
        await self.handle_state_changes(offline, _R.OfflineReplica)

    async def handle_state_changes(
        self, replicas: Iterable[PartitionReplica], target: ReplicaState
    ) -> None:
        """RSM ``handleStateChanges``: one batch for all, grouped by broker."""
        replicas = list(replicas)
        if not replicas:
            return
        self._core.batch.new_batch()
        try:
            by_broker: dict[int, list[TopicPartitionTuple]] = {}
            for tp, replica in replicas:
                by_broker.setdefault(replica, []).append(tp)
            for replica, tps in by_broker.items():
                await self._do_replica_state_changes(replica, tps, target)
            self._core.batch.send_requests(self._core.context.epoch)
        except ControllerMovedError:
            self._core.batch.clear()
            raise
        except Exception:
            log.exception("controller %d: error moving replicas to %s", self._core.broker_id, target.name)
            self._core.batch.abandon()

    async def _do_replica_state_changes(
        self, replica: int, tps: list[TopicPartitionTuple], target: ReplicaState
    ) -> None:
        ctx = self._core.context
        check = ctx.check_replica_transition([(tp, replica) for tp in tps], target)
        for invalid in check.invalid:
            log.warning("controller %d: %s", self._core.broker_id, invalid.error)
        valid = [key[0] for key in check.valid]
        if target is _R.NewReplica:
            for tp in valid:
                state = ctx.leadership.get(tp)
                if state is not None:
                    if state.leader == replica:
                        log.error(
                            "replica %d of %s cannot become NewReplica: it is the leader",
                            replica,
                            tp,
                        )
                        continue
                    self._core.batch.add_leader_and_isr(
                        [replica], tp, state, ctx.partition_replicas(tp), is_new=True
                    )
                ctx.replica_states.put((tp, replica), _R.NewReplica)
        elif target is _R.OnlineReplica:
            for tp in valid:
                if ctx.replica_states.state((tp, replica)) is _R.NewReplica:
                    replicas = ctx.partition_replicas(tp)
                    if replica not in replicas:
                        ctx.update_assignment(tp, (*replicas, replica))
                else:
                    state = ctx.leadership.get(tp)
                    if state is not None:
                        self._core.batch.add_leader_and_isr(
                            [replica], tp, state, ctx.partition_replicas(tp), is_new=False
                        )
                ctx.replica_states.put((tp, replica), _R.OnlineReplica)
        elif target is _R.OfflineReplica:
            for tp in valid:
                self._core.batch.add_stop_replica([replica], tp, delete=False)
            with_leadership = [tp for tp in valid if tp in ctx.leadership]
            without_leadership = [tp for tp in valid if tp not in ctx.leadership]
            updated = await self._remove_replica_from_isr(replica, with_leadership)
            for tp, state in updated.items():
                if not ctx.is_topic_queued_for_deletion(tp[0]):
                    recipients = [r for r in ctx.partition_replicas(tp) if r != replica]
                    self._core.batch.add_leader_and_isr(
                        recipients, tp, state, ctx.partition_replicas(tp), is_new=False
                    )
                ctx.replica_states.put((tp, replica), _R.OfflineReplica)
            for tp in without_leadership:
                self._core.batch.add_update_metadata(ctx.live_or_shutting_down_broker_ids, [tp])
                ctx.replica_states.put((tp, replica), _R.OfflineReplica)
        elif target is _R.ReplicaDeletionStarted:
            for tp in valid:
                ctx.replica_states.put((tp, replica), _R.ReplicaDeletionStarted)
                self._core.batch.add_stop_replica([replica], tp, delete=True)
        elif target in (_R.ReplicaDeletionIneligible, _R.ReplicaDeletionSuccessful):
            for tp in valid:
                ctx.replica_states.put((tp, replica), target)
        elif target is _R.NonExistentReplica:
            for tp in valid:
                remaining = tuple(r for r in ctx.partition_replicas(tp) if r != replica)
                ctx.update_assignment(tp, remaining)
                ctx.replica_states.remove((tp, replica))

    async def _remove_replica_from_isr(
        self, replica: int, tps: list[TopicPartitionTuple]
    ) -> dict[TopicPartitionTuple, LeaderIsrAndControllerEpoch]:
        """RSM ``removeReplicasFromIsr``: the states to announce (updated, or unchanged when not in the ISR)."""
        ctx = self._core.context
        results: dict[TopicPartitionTuple, LeaderIsrAndControllerEpoch] = {}
        remaining = list(tps)
        for _ in range(STATE_WRITE_ATTEMPTS):
            if not remaining:
                break
            current = await self._core.zk.get_partition_states(remaining)
            to_write: dict[TopicPartitionTuple, LeaderIsrAndControllerEpoch] = {}
            for tp in remaining:
                state = current.get(tp)
                if state is None:
                    if not ctx.is_topic_queued_for_deletion(tp[0]):
                        log.error(
                            "cannot remove replica %d from the ISR of %s: no state znode",
                            replica,
                            tp,
                        )
                    continue
                if state.controller_epoch > ctx.epoch:
                    raise ControllerMovedError(
                        f"{tp}: state written by controller epoch {state.controller_epoch} > ours ({ctx.epoch})"
                    )
                new_state = remove_replica_from_isr(state, replica)
                if new_state is None:
                    ctx.put_leadership(tp, state)
                    results[tp] = state
                else:
                    to_write[tp] = new_state
            if not to_write:
                break
            written = await self._core.zk.update_partition_states_conditionally(
                to_write, ctx.epoch, ctx.epoch_zk_version
            )
            for tp, state in written.successes.items():
                ctx.put_leadership(tp, state)
                results[tp] = state
            for tp, exc in written.failures.items():
                log.error("removing replica %d from the ISR of %s failed: %s", replica, tp, exc)
            remaining = list(written.bad_version)
        return results
