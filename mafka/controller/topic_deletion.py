"""Topic deletion on the controller (Kafka 2.8's ``TopicDeletionManager``).

A topic marked under ``/admin/delete_topics`` is queued; deletion starts
once no replica is offline and no partition is being reassigned: partitions
→ Offline → NonExistent (UpdateMetadata with leader -2), live replicas →
Offline → DeletionStarted (StopReplica delete=true); a replica whose broker
answers OK → DeletionSuccessful, an error → DeletionIneligible (retried when
the broker returns or a reassignment ends).  When every replica succeeded
the topic's znodes go (``/brokers/topics/T``, ``/config/topics/T``,
``/admin/delete_topics/T``).  See ``zk-controller-replication.md`` §3.4.

:class:`TopicDeletionManager` owns that sequence: the ``/admin/delete_topics``
event, the StopReplica(delete) answers, and halting / resuming a topic's
deletion.  It moves states only through the
:class:`~mafka.controller.replica_state_machine.ReplicaStateMachine` and
:class:`~mafka.controller.partition_state_machine.PartitionStateMachine`
it is given; the deletion bookkeeping (queued, started, ineligible topics)
is in the core's :class:`~mafka.controller.context.ControllerContext`.  A
deleted topic's ``/brokers/topics/T`` watch is dropped through the
*unwatch_topic* routine it is given (Kafka's ``DeletionClient.mutePartitionModifications``).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable

from mafka.controller.context import PartitionReplica
from mafka.controller.core import ControllerCore
from mafka.controller.partition_state_machine import PartitionStateMachine
from mafka.controller.replica_state_machine import ReplicaStateMachine
from mafka.controller.states import PartitionState, ReplicaState
from mafka.errors import ErrorCode
from mafka.topics import TopicPartitionTuple

__all__ = ["TopicDeletionManager"]

log = logging.getLogger("mafka.controller")

_P = PartitionState
_R = ReplicaState


class TopicDeletionManager:
    """The controller's topic deletion (TDM); see the module doc.

    Args:
        core: The controller's shared core.
        replica_state_machine: Moves the topic's replicas.
        partition_state_machine: Moves the topic's partitions.
        unwatch_topic: Stops watching a topic's ``/brokers/topics/<topic>`` znode.
    """

    def __init__(
        self,
        core: ControllerCore,
        replica_state_machine: ReplicaStateMachine,
        partition_state_machine: PartitionStateMachine,
        unwatch_topic: Callable[[str], None],
    ) -> None:
        self._core = core
        self._rsm = replica_state_machine
        self._psm = partition_state_machine
        self._unwatch_topic = unwatch_topic

    async def process_topic_deletion(self) -> None:
        """KC ``processTopicDeletion``."""
        if not self._core.is_active:
            return
        ctx = self._core.context
        to_delete = set(await self._core.zk.get_topic_deletions())
        unknown = to_delete - ctx.all_topics
        if unknown:
            log.warning("ignoring deletion of unknown topics %s", sorted(unknown))
            await self._core.zk.delete_topic_deletions(sorted(unknown), ctx.epoch_zk_version)
        to_delete -= unknown
        if not to_delete:
            return
        if self._core.config.delete_topic_enable:
            new = to_delete - ctx.topics_to_be_deleted
            if new:
                log.info("controller %d: starting deletion of %s", self._core.broker_id, sorted(new))
                ctx.queue_topic_deletion(new)
                # Halted while a reassignment of the topic is in flight (resumed at its end).
                self.mark_topic_ineligible({tp[0] for tp in ctx.partitions_being_reassigned})
                await self.resume_deletions()
        else:
            log.info(
                "removing deletion markers %s: delete.topic.enable is false", sorted(to_delete)
            )
            await self._core.zk.delete_topic_deletions(sorted(to_delete), ctx.epoch_zk_version)

    def _is_topic_eligible_for_deletion(self, topic: str) -> bool:
        ctx = self._core.context
        return (
            ctx.is_topic_queued_for_deletion(topic)
            and not ctx.is_topic_deletion_in_progress(topic)
            and topic not in ctx.topics_ineligible_for_deletion
        )

    async def resume_deletions(self) -> None:
        """TDM ``resumeDeletions``."""
        ctx = self._core.context
        if not self._core.config.delete_topic_enable:
            return
        retry: set[str] = set()
        eligible: set[str] = set()
        for topic in sorted(ctx.topics_to_be_deleted):
            if ctx.are_all_replicas_in_state(topic, _R.ReplicaDeletionSuccessful):
                await self._complete_delete_topic(topic)
                log.info("controller %d: deletion of topic %s completed", self._core.broker_id, topic)
            elif not ctx.is_any_replica_in_state(topic, _R.ReplicaDeletionStarted):
                if ctx.is_any_replica_in_state(topic, _R.ReplicaDeletionIneligible):
                    retry.add(topic)
            if self._is_topic_eligible_for_deletion(topic):
                eligible.add(topic)
        if retry:
            failed = [
                key
                for topic in sorted(retry)
                for key in ctx.replicas_in_state(topic, _R.ReplicaDeletionIneligible)
            ]
            await self._rsm.handle_state_changes(failed, _R.OfflineReplica)
        if eligible:
            await self._on_topic_deletion(eligible)

    async def _on_topic_deletion(self, topics: set[str]) -> None:
        """TDM ``onTopicDeletion``."""
        ctx = self._core.context
        unseen = topics - ctx.topics_with_deletion_started
        if unseen:
            partitions = [tp for topic in sorted(unseen) for tp in ctx.partitions_for_topic(topic)]
            await self._psm.handle_state_changes(partitions, _P.OfflinePartition)
            await self._psm.handle_state_changes(partitions, _P.NonExistentPartition)
            ctx.begin_topic_deletion(unseen)
        # Brokers stop serving the topics (leader -2 in UpdateMetadata).
        self._core.send_update_metadata(
            ctx.live_or_shutting_down_broker_ids,
            [tp for topic in sorted(topics) for tp in ctx.partitions_for_topic(topic)],
        )
        await self._on_partition_deletion(topics)

    async def _on_partition_deletion(self, topics: set[str]) -> None:
        """TDM ``onPartitionDeletion``: StopReplica(delete) to live replicas, dead ones ineligible."""
        ctx = self._core.context
        dead_replicas: list[PartitionReplica] = []
        retry_replicas: list[PartitionReplica] = []
        ineligible: set[str] = set()
        for topic in sorted(topics):
            replicas = ctx.replicas_for_topic(topic)
            alive = [key for key in replicas if ctx.is_replica_online(key[1], key[0])]
            dead = [key for key in replicas if not ctx.is_replica_online(key[1], key[0])]
            succeeded = set(ctx.replicas_in_state(topic, _R.ReplicaDeletionSuccessful))
            retry_replicas.extend(key for key in alive if key not in succeeded)
            dead_replicas.extend(dead)
            if dead:
                ineligible.add(topic)
        await self._rsm.handle_state_changes(dead_replicas, _R.ReplicaDeletionIneligible)
        await self._rsm.handle_state_changes(retry_replicas, _R.OfflineReplica)
        await self._rsm.handle_state_changes(retry_replicas, _R.ReplicaDeletionStarted)
        if ineligible:
            self.mark_topic_ineligible(ineligible)

    def mark_topic_ineligible(self, topics: Iterable[str]) -> None:
        ctx = self._core.context
        halted = set(topics) & ctx.topics_to_be_deleted
        if halted:
            ctx.topics_ineligible_for_deletion |= halted
            log.info("controller %d: halted deletion of %s", self._core.broker_id, sorted(halted))

    async def resume_deletion_for_topics(self, topics: Iterable[str]) -> None:
        ctx = self._core.context
        resume = set(topics) & ctx.topics_to_be_deleted
        if resume:
            ctx.topics_ineligible_for_deletion -= resume
            await self.resume_deletions()

    async def fail_replica_deletion(self, replicas: Iterable[PartitionReplica]) -> None:
        ctx = self._core.context
        failed = [key for key in replicas if ctx.is_topic_queued_for_deletion(key[0][0])]
        if failed:
            await self._rsm.handle_state_changes(failed, _R.ReplicaDeletionIneligible)
            self.mark_topic_ineligible({key[0][0] for key in failed})
            await self.resume_deletions()

    async def _complete_replica_deletion(self, replicas: Iterable[PartitionReplica]) -> None:
        ctx = self._core.context
        done = [key for key in replicas if ctx.is_topic_queued_for_deletion(key[0][0])]
        await self._rsm.handle_state_changes(done, _R.ReplicaDeletionSuccessful)
        await self.resume_deletions()

    async def _complete_delete_topic(self, topic: str) -> None:
        """TDM ``completeDeleteTopic``: forget the replicas, delete the znodes."""
        ctx = self._core.context
        self._unwatch_topic(topic)
        await self._rsm.handle_state_changes(
            ctx.replicas_in_state(topic, _R.ReplicaDeletionSuccessful), _R.NonExistentReplica
        )
        await self._core.zk.delete_topic_znodes(topic, ctx.epoch_zk_version)
        ctx.remove_topic(topic)

    def on_stop_replica_response(
        self, broker_id: int, error: ErrorCode, partition_errors: dict[TopicPartitionTuple, ErrorCode]
    ) -> None:
        self._core.fire(
            "TopicDeletionStopReplicaResponseReceived",
            self._process_stop_replica_response,
            broker_id,
            error,
            partition_errors,
        )

    async def _process_stop_replica_response(
        self, broker_id: int, error: ErrorCode, partition_errors: dict[TopicPartitionTuple, ErrorCode]
    ) -> None:
        """KC ``processTopicDeletionStopReplicaResponseReceived``."""
        if not self._core.is_active:
            return
        if error != ErrorCode.NONE:
            in_error = set(partition_errors)
        else:
            in_error = {tp for tp, code in partition_errors.items() if code != ErrorCode.NONE}
        await self.fail_replica_deletion([(tp, broker_id) for tp in sorted(in_error)])
        succeeded = sorted(set(partition_errors) - in_error)
        if succeeded:
            await self._complete_replica_deletion([(tp, broker_id) for tp in succeeded])
