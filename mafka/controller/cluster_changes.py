"""The controller's reactions to cluster changes seen in ZooKeeper and in broker answers.

Kafka 2.8's ``KafkaController`` handlers for brokers and topics
(``zk-controller-replication.md`` §3.2–3.3), as :class:`ClusterChanges`:

* **brokers**: ``/brokers/ids`` changed — new, dead and bounced brokers
  (:func:`~mafka.controller.context.classify_broker_change`) are added to or
  removed from the channel and the context, then ``onBrokerStartup`` /
  ``onBrokerFailure``; a broker's registration changed (endpoints, features,
  rack) — UpdateMetadata to everyone;
* **topics**: ``/brokers/topics`` changed — new topics are loaded and their
  partitions created (New → Online), deleted ones forgotten; a topic's
  partitions were added (``/brokers/topics/<topic>``);
* **ISR changes**: ``/isr_change_notification`` — the states are re-read,
  UpdateMetadata sent, reassignments waiting on the ISR checked;
* **log dir failures**: ``/log_dir_event_notification`` and the
  KAFKA_STORAGE_ERROR partitions of LeaderAndIsr answers — replicas on a
  failed dir go offline (``onReplicasBecomeOffline``).

It owns the per-topic (``/brokers/topics/<topic>``) and per-broker
(``/brokers/ids/<id>``) watches and the loading of a topic into the
context.  Everything it learns goes into the core's
:class:`~mafka.controller.context.ControllerContext`; it moves states only
through the state machines it is given, and hands over to the
:class:`~mafka.controller.topic_deletion.TopicDeletionManager` and the
:class:`~mafka.controller.reassignment.ReassignmentManager` for topics being
deleted or partitions being reassigned.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping

from mafka.controller.context import PartitionReplica, classify_broker_change
from mafka.controller.core import ControllerCore
from mafka.controller.election import LeaderElectionStrategy
from mafka.controller.fast_failover import RefusedBrokers
from mafka.controller.partition_state_machine import PartitionStateMachine
from mafka.controller.reassignment import ReassignmentManager
from mafka.controller.replica_state_machine import ReplicaStateMachine
from mafka.controller.states import PartitionState, ReplicaState
from mafka.controller.topic_deletion import TopicDeletionManager
from mafka.coordination.store import WatchHandle
from mafka.coordination.znodes import TopicAssignment
from mafka.coordination.znodes.brokers import BrokerRegistration
from mafka.errors import ErrorCode
from mafka.topics import TopicPartitionTuple

__all__ = ["ClusterChanges"]

log = logging.getLogger("mafka.controller")

_P = PartitionState
_R = ReplicaState
_Strategy = LeaderElectionStrategy


class ClusterChanges:
    """Broker, topic, ISR and log dir changes on the active controller; see the module doc.

    Args:
        core: The controller's shared core.
        replica_state_machine, partition_state_machine: Move the states.
        topic_deletion: Told about replicas of topics being deleted.
        reassignments: Told about brokers and ISRs reassignments wait for.
    """

    def __init__(
        self,
        core: ControllerCore,
        replica_state_machine: ReplicaStateMachine,
        partition_state_machine: PartitionStateMachine,
        topic_deletion: TopicDeletionManager,
        reassignments: ReassignmentManager,
    ) -> None:
        self._core = core
        self._rsm = replica_state_machine
        self._psm = partition_state_machine
        self._deletion = topic_deletion
        self._reassignments = reassignments
        self._topic_watches: dict[str, WatchHandle] = {}
        self._broker_watches: dict[int, WatchHandle] = {}
        #: The fast path for brokers whose listener refuses connections (None: session expiry only).
        self.refused: RefusedBrokers | None = None

    # ------------------------------------------------------------------ topics and watches

    async def load_topics(self, topics: Iterable[str]) -> list[str]:
        """Reads the topics' assignments into the context (one batch of reads) and watches them.

        Returns:
            The topics loaded, in the order given; those whose znode is gone are left out.
        """
        assignments = await self._core.zk.get_assignments(topics)
        for topic, (assignment, _) in assignments.items():
            self._core.context.set_topic(
                topic,
                assignment.partitions,
                assignment.topic_id,
                assignment.adding_replicas,
                assignment.removing_replicas,
            )
            self._watch_topic(topic)
        return list(assignments)

    def _watch_topic(self, topic: str) -> None:
        if topic in self._topic_watches:
            return
        self._topic_watches[topic] = self._core.zk.watch_topic(
            topic,
            lambda: self._core.fire(
                "PartitionModifications", self._process_partition_modifications, topic, coalesce=True
            ),
        )

    def unwatch_topic(self, topic: str) -> None:
        watch = self._topic_watches.pop(topic, None)
        if watch is not None:
            watch.cancel()

    def watch_broker(self, broker_id: int) -> None:
        if broker_id in self._broker_watches:
            return
        self._broker_watches[broker_id] = self._core.zk.watch_broker(
            broker_id,
            lambda: self._core.fire(
                "BrokerModification", self._process_broker_modification, broker_id, coalesce=True
            ),
        )

    def _unwatch_broker(self, broker_id: int) -> None:
        watch = self._broker_watches.pop(broker_id, None)
        if watch is not None:
            watch.cancel()

    def watch_liveness(self, brokers: Mapping[int, tuple[BrokerRegistration, int]]) -> None:
        """Watches live brokers' listeners for the fast path (id → (registration, epoch))."""
        if self.refused is not None:
            self.refused.watch(brokers)

    def unwatch_all(self) -> None:
        """Cancels every topic, broker and listener watch (at resignation)."""
        if self.refused is not None:
            self.refused.stop()
        for topic in list(self._topic_watches):
            self.unwatch_topic(topic)
        for broker_id in list(self._broker_watches):
            self._unwatch_broker(broker_id)

    # ------------------------------------------------------------------ brokers

    async def process_broker_change(self) -> None:
        """KC ``processBrokerChange``."""
        if not self._core.is_active:
            return
        ctx = self._core.context
        current = await self._core.zk.get_all_brokers()
        fenced_before = set(ctx.fenced_registrations)
        if self.refused is not None:
            current = self.refused.visible(current)  # a fenced registration counts as gone
        change = classify_broker_change(
            {b: epoch for b, (_, epoch) in current.items()},
            {b: ctx.broker_epoch(b) for b in ctx.live_or_shutting_down_broker_ids},
        )
        if fenced_before != set(ctx.fenced_registrations) and not (change.new or change.bounced):
            # A fenced registration is gone from ZooKeeper: no longer listed to clients (a new or
            # bounced broker gets the UpdateMetadata of onBrokerStartup below, which lists them).
            self._core.send_update_metadata(ctx.live_or_shutting_down_broker_ids, ())
        if not (change.new or change.dead or change.bounced):
            return
        log.info(
            "controller %d: brokers new %s, dead %s, bounced %s",
            self._core.broker_id,
            list(change.new),
            list(change.dead),
            list(change.bounced),
        )
        for b in change.new:
            self._core.channel.add_broker(b, current[b][0])
        for b in change.bounced:
            self._core.channel.remove_broker(b)
            self._core.channel.add_broker(b, current[b][0])
        for b in change.dead:
            self._core.channel.remove_broker(b)
        if self.refused is not None:
            self.refused.forget(list(change.dead))
            self.watch_liveness({b: current[b] for b in (*change.new, *change.bounced)})
        if change.new:
            ctx.add_live_brokers({b: current[b] for b in change.new})
            await self._on_broker_startup(list(change.new))
        if change.bounced:
            ctx.remove_live_brokers(change.bounced)
            await self._on_broker_failure(list(change.bounced))
            ctx.add_live_brokers({b: current[b] for b in change.bounced})
            await self._on_broker_startup(list(change.bounced))
        if change.dead:
            await self.fail_brokers(list(change.dead))

    async def fail_brokers(self, broker_ids: list[int]) -> None:
        """Dead brokers: the channel to them closes, they leave the live brokers, ``onBrokerFailure``.

        For registrations that vanished (:meth:`process_broker_change`) and for
        the fast path's, whose registrations remain
        (:class:`~mafka.controller.fast_failover.RefusedBrokers`).
        """
        ctx = self._core.context
        dead = [b for b in broker_ids if b in ctx.live_or_shutting_down_broker_ids]
        if not dead:
            return
        for b in dead:
            self._core.channel.remove_broker(b)
        ctx.remove_live_brokers(dead)
        await self._on_broker_failure(dead)

    async def _on_broker_startup(self, new_brokers: list[int]) -> None:
        """KC ``onBrokerStartup``."""
        ctx = self._core.context
        new_set = set(new_brokers)
        for b in new_set:
            ctx.replicas_on_offline_dirs.pop(b, None)  # a restarted broker tries its log dirs again
        existing = ctx.live_or_shutting_down_broker_ids - new_set
        self._core.send_update_metadata(existing, ())
        self._core.send_update_metadata(new_set, ctx.partitions_with_leaders())
        replicas = ctx.replicas_on_brokers(new_set)
        with self._core.bulk_state_changes():  # one LeaderAndIsr per broker for both
            await self._rsm.handle_state_changes(replicas, _R.OnlineReplica)
            await self._psm.trigger_online_partition_state_change()
        reassigning = [
            tp
            for tp in sorted(ctx.partitions_being_reassigned)
            if any(r in new_set for r in ctx.partition_replicas(tp))
        ]
        for tp in reassigning:
            await self._reassignments.on_partition_reassignment(tp, ctx.full_assignment(tp))
        deleting = {tp[0] for tp, _ in replicas if ctx.is_topic_queued_for_deletion(tp[0])}
        if deleting:
            await self._deletion.resume_deletion_for_topics(deleting)
        for b in new_brokers:
            self.watch_broker(b)

    async def _on_broker_failure(self, dead_brokers: list[int]) -> None:
        """KC ``onBrokerFailure``."""
        ctx = self._core.context
        for b in dead_brokers:
            ctx.shutting_down.discard(b)
            ctx.replicas_on_offline_dirs.pop(b, None)
        await self._on_replicas_become_offline(ctx.replicas_on_brokers(dead_brokers))
        for b in dead_brokers:
            self._unwatch_broker(b)

    async def _on_replicas_become_offline(self, replicas: list[PartitionReplica]) -> None:
        """KC ``onReplicasBecomeOffline``."""
        ctx = self._core.context
        for_deletion = [key for key in replicas if ctx.is_topic_queued_for_deletion(key[0][0])]
        not_for_deletion = [
            key for key in replicas if not ctx.is_topic_queued_for_deletion(key[0][0])
        ]
        with self._core.bulk_state_changes():  # one LeaderAndIsr per broker for the three
            await self._psm.handle_state_changes(
                ctx.partitions_with_offline_leader(), _P.OfflinePartition
            )
            results = await self._psm.trigger_online_partition_state_change()
            await self._rsm.handle_state_changes(not_for_deletion, _R.OfflineReplica)
        if for_deletion:
            await self._deletion.fail_replica_deletion(for_deletion)
        if not not_for_deletion and all(isinstance(r, Exception) for r in results.values()):
            self._core.send_update_metadata(ctx.live_or_shutting_down_broker_ids, ())

    async def _process_broker_modification(self, broker_id: int) -> None:
        """KC ``processBrokerModification``: new endpoints → UpdateMetadata to everyone."""
        if not self._core.is_active:
            return
        ctx = self._core.context
        got = await self._core.zk.get_broker_and_epoch(broker_id)
        old = ctx.live_brokers.get(broker_id)
        if got is None or old is None:
            return
        new, _ = got
        if (
            dict(new.endpoints) != dict(old.endpoints)
            or dict(new.features) != dict(old.features)
            or new.rack != old.rack
        ):
            log.info("controller %d: broker %d's registration changed", self._core.broker_id, broker_id)
            ctx.live_brokers[broker_id] = new
            self._core.send_update_metadata(ctx.live_or_shutting_down_broker_ids, ())

    # ------------------------------------------------------------------ topics

    async def process_topic_change(self) -> None:
        """KC ``processTopicChange``."""
        if not self._core.is_active:
            return
        ctx = self._core.context
        topics = set(await self._core.zk.get_topics())
        new_topics = topics - ctx.all_topics
        deleted = ctx.all_topics - topics
        for topic in sorted(deleted):
            self.unwatch_topic(topic)
            ctx.remove_topic(topic)
        added: list[TopicPartitionTuple] = []
        for topic in await self.load_topics(sorted(new_topics)):
            added.extend(ctx.partitions_for_topic(topic))
        if new_topics or deleted:
            log.info(
                "controller %d: new topics %s, deleted topics %s",
                self._core.broker_id,
                sorted(new_topics),
                sorted(deleted),
            )
        if added:
            await self._on_new_partition_creation(added)

    async def _on_new_partition_creation(self, tps: list[TopicPartitionTuple]) -> None:
        """KC ``onNewPartitionCreation``: New → NewReplica → Online → OnlineReplica."""
        ctx = self._core.context
        with self._core.bulk_state_changes():
            await self._psm.handle_state_changes(tps, _P.NewPartition)
            await self._rsm.handle_state_changes(ctx.replicas_for_partitions(tps), _R.NewReplica)
            await self._psm.handle_state_changes(tps, _P.OnlinePartition, _Strategy.OFFLINE)
            await self._rsm.handle_state_changes(ctx.replicas_for_partitions(tps), _R.OnlineReplica)

    async def _process_partition_modifications(self, topic: str) -> None:
        """KC ``processPartitionModifications``: partitions added to an existing topic."""
        if not self._core.is_active:
            return
        ctx = self._core.context
        if topic not in ctx.all_topics:
            return
        got = await self._core.zk.get_assignment(topic)
        if got is None:
            return
        assignment, _ = got
        to_add = {
            p: r for p, r in assignment.partitions.items() if not ctx.partition_replicas((topic, p))
        }
        if ctx.is_topic_queued_for_deletion(topic):
            if to_add:
                log.warning(
                    "skipping new partitions %s of %s: it is being deleted", sorted(to_add), topic
                )
                restored = TopicAssignment(
                    ctx.assignments.get(topic, {}), topic_id=ctx.topic_ids.get(topic)
                )
                await self._core.zk.set_assignment(topic, restored, -1, ctx.epoch_zk_version)
            return
        if not to_add:
            return
        for p, replicas in sorted(to_add.items()):
            ctx.update_assignment((topic, p), replicas)
        await self._on_new_partition_creation([(topic, p) for p in sorted(to_add)])

    # ------------------------------------------------------------------ ISR changes and log dir failures

    async def process_isr_change_notification(self) -> None:
        """KC ``processIsrChangeNotification``: reload the states, UpdateMetadata to all."""
        if not self._core.is_active:
            return
        ctx = self._core.context
        sequence_numbers = await self._core.zk.get_isr_change_notifications()
        if not sequence_numbers:
            return
        try:
            partitions = await self._core.zk.get_partitions_from_isr_change_notifications(
                sequence_numbers
            )
            known = [tp for tp in dict.fromkeys(partitions) if ctx.partition_replicas(tp)]
            if known:
                states = await self._core.zk.get_partition_states(known)
                for tp, state in states.items():
                    ctx.put_leadership(tp, state)
                self._core.send_update_metadata(ctx.live_or_shutting_down_broker_ids, known)
                for tp in known:
                    if tp in ctx.partitions_being_reassigned:
                        await self._reassignments.maybe_complete_reassignment(tp)
        finally:
            await self._core.zk.delete_isr_change_notifications(sequence_numbers, ctx.epoch_zk_version)

    async def process_log_dir_event_notification(self) -> None:
        """KC ``processLogDirEventNotification``: a broker's log dir failed; LeaderAndIsr for all its
        replicas, whose answers (KAFKA_STORAGE_ERROR) tell which replicas are offline."""
        if not self._core.is_active:
            return
        ctx = self._core.context
        sequence_numbers = await self._core.zk.get_log_dir_event_notifications()
        if not sequence_numbers:
            return
        try:
            broker_ids = sorted(set(await self._core.zk.get_broker_ids_from_log_dir_events(sequence_numbers)))
            log.info("controller %d: handling log directory failure for brokers %s", self._core.broker_id, broker_ids)
            await self._rsm.handle_state_changes(ctx.replicas_on_brokers(broker_ids), _R.OnlineReplica)
        finally:
            await self._core.zk.delete_log_dir_event_notifications(sequence_numbers, ctx.epoch_zk_version)

    def on_leader_and_isr_response(self, broker_id: int, errors: dict[TopicPartitionTuple, int]) -> None:
        """A LeaderAndIsr answer's per-partition errors: KAFKA_STORAGE_ERROR ones are processed as an event."""
        if not self._core.context.replicas_on_offline_dirs.get(broker_id) and not any(
            code == ErrorCode.KAFKA_STORAGE_ERROR for code in errors.values()
        ):
            return  # nothing offline, before or now: the usual case
        self._core.fire("LeaderAndIsrResponseReceived", self._process_leader_and_isr_response, broker_id, errors)

    async def _process_leader_and_isr_response(
        self, broker_id: int, errors: dict[TopicPartitionTuple, int]
    ) -> None:
        """KC ``processLeaderAndIsrResponseReceived``: replicas answered KAFKA_STORAGE_ERROR are
        offline (on a failed log dir), those answered NONE online again; newly offline ones go
        through ``onReplicasBecomeOffline``."""
        if not self._core.is_active:
            return
        ctx = self._core.context
        offline = {tp for tp, code in errors.items() if code == ErrorCode.KAFKA_STORAGE_ERROR}
        online = {tp for tp, code in errors.items() if code == ErrorCode.NONE}
        previous = ctx.replicas_on_offline_dirs.get(broker_id, set())
        current = (previous - online) | offline
        if current:
            ctx.replicas_on_offline_dirs[broker_id] = current
        else:
            ctx.replicas_on_offline_dirs.pop(broker_id, None)
        new = sorted(current - previous)
        if new:
            log.info("controller %d: marking replicas %s on broker %d offline (log dir failure)",
                     self._core.broker_id, ", ".join(f"{t}-{p}" for t, p in new), broker_id)
            await self._on_replicas_become_offline([(tp, broker_id) for tp in new])
