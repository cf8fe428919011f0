"""Taking over and handing back the controllership (KC ``onControllerFailover`` / ``onControllerResignation``).

:class:`ControllerFailover` owns what winning or losing ``/controller`` does
to the controller's cluster-facing state (``zk-controller-replication.md``
§3.1):

* **failover**: enable ``/feature``; register the cluster-wide watches
  (``/brokers/ids``, ``/brokers/topics``, ``/admin/delete_topics``,
  ``/isr_change_notification``, ``/log_dir_event_notification``,
  ``/admin/preferred_replica_election``, ``/admin/reassign_partitions``),
  each queueing its event for the collaborator that handles it; clear stale
  notifications; load the context from ZooKeeper (brokers, topics,
  reassignments, leadership) and open the channel; queue the topics marked
  for deletion; UpdateMetadata to every broker; start the replica and
  partition state machines; resume reassignments, deletions and a pending
  preferred replica election; schedule the auto rebalance;
* **resignation**: undo all of it — cancel every watch (the cluster-wide ones
  it holds, the collaborators' own), stop the auto rebalance, drop the
  request batch, close the channel, forget the context, fail the admin waiters.

Which broker is the controller, and when to fail over or resign, is the
:class:`~mafka.controller.controller.Controller`'s.  The state it fills is
the core's :class:`~mafka.controller.context.ControllerContext`.
"""

from __future__ import annotations

import functools
import logging

from mafka.controller.cluster_changes import ClusterChanges
from mafka.controller.core import ControllerCore
from mafka.controller.leader_election import LeaderElections
from mafka.controller.partition_state_machine import PartitionStateMachine
from mafka.controller.reassignment import ReassignmentManager
from mafka.controller.replica_state_machine import ReplicaStateMachine
from mafka.controller.topic_deletion import TopicDeletionManager
from mafka.coordination.kafka_zk import ControllerMovedError
from mafka.coordination.store import WatchHandle
from mafka.coordination.znodes import FeatureZNode

__all__ = ["AUTO_REBALANCE_FIRST_DELAY_S", "ControllerFailover"]

log = logging.getLogger("mafka.controller")

#: Kafka schedules the first auto-rebalance check 5 s after failover.
AUTO_REBALANCE_FIRST_DELAY_S = 5.0


class ControllerFailover:
    """KC ``onControllerFailover`` and ``onControllerResignation``; see the module doc.

    Args:
        core: The controller's shared core.
        replica_state_machine, partition_state_machine: Started at failover.
        topic_deletion: Resumes the deletions found at failover.
        reassignments: Resumes the reassignments found at failover.
        leader_elections: The pending preferred replica election, the auto rebalance.
        cluster_changes: Loads topics and watches brokers; handles the cluster-wide watches.
    """

    def __init__(
        self,
        core: ControllerCore,
        replica_state_machine: ReplicaStateMachine,
        partition_state_machine: PartitionStateMachine,
        topic_deletion: TopicDeletionManager,
        reassignments: ReassignmentManager,
        leader_elections: LeaderElections,
        cluster_changes: ClusterChanges,
    ) -> None:
        self._core = core
        self._rsm = replica_state_machine
        self._psm = partition_state_machine
        self._deletion = topic_deletion
        self._reassignments = reassignments
        self._elections = leader_elections
        self._changes = cluster_changes
        #: the cluster-wide watches registered at failover (``/brokers/ids``, ``/brokers/topics`` …)
        self._watches: list[WatchHandle] = []

    async def on_controller_failover(self) -> None:
        """KC ``onControllerFailover`` (§3.1)."""
        ctx = self._core.context
        clock = self._core.reactor.seconds
        started = clock()
        await self._maybe_enable_features()
        # Each watch queues an event that re-reads ZooKeeper: one waiting is enough (coalesce).
        zk, fire = self._core.zk, functools.partial(self._core.fire, coalesce=True)
        self._watches = [
            zk.watch_broker_ids(lambda: fire("BrokerChange", self._changes.process_broker_change)),
            zk.watch_topics(lambda: fire("TopicChange", self._changes.process_topic_change)),
            zk.watch_topic_deletions(lambda: fire("TopicDeletion", self._deletion.process_topic_deletion)),
            zk.watch_isr_change_notifications(
                lambda: fire("IsrChangeNotification", self._changes.process_isr_change_notification)
            ),
            zk.watch_log_dir_event_notifications(
                lambda: fire("LogDirEventNotification", self._changes.process_log_dir_event_notification)
            ),
            zk.watch_preferred_replica_election(
                lambda: fire("ReplicaLeaderElection(zk)", self._elections.process_zk_preferred_replica_election)
            ),
            zk.watch_partition_reassignment(
                lambda: fire("ZkPartitionReassignment", self._reassignments.process_zk_partition_reassignment)
            ),
        ]
        await self._core.zk.delete_log_dir_event_notifications(None, ctx.epoch_zk_version)
        await self._core.zk.delete_isr_change_notifications(None, ctx.epoch_zk_version)
        # Loading and starting the state machines is the bulk of the work: the cyclic collector
        # is paused throughout (mafka.controller.collector).
        with self._core.collector.paused():
            await self._initialize_context()
            loaded = clock()
            to_delete = set(await self._core.zk.get_topic_deletions())
            offline_topics = {
                topic
                for topic in ctx.all_topics
                if any(not ctx.is_replica_online(r, tp) for tp, r in ctx.replicas_for_topic(topic))
            }
            offline_topics |= {tp[0] for tp in ctx.partitions_being_reassigned}
            if self._core.config.delete_topic_enable:
                ctx.queue_topic_deletion(to_delete)
                ctx.topics_ineligible_for_deletion |= offline_topics & ctx.topics_to_be_deleted
            elif to_delete:
                await self._core.zk.delete_topic_deletions(sorted(to_delete), ctx.epoch_zk_version)
            # Brokers must learn the live brokers before any LeaderAndIsr.
            self._core.send_update_metadata(ctx.live_or_shutting_down_broker_ids, ())
            # One LeaderAndIsr and one UpdateMetadata per broker for the replica and partition
            # state machines' startups together: each partition's final state, once.
            with self._core.batch.merged():
                await self._rsm.startup()
                replicas_done = clock()
                await self._psm.startup()
                partitions_done = clock()
        log.info(
            "controller %d: ready as controller with epoch %d; %d partitions: context loaded in %.2f s, "
            "replica states in %.2f s, leaders in %.2f s, requests sent in %.2f s",
            self._core.broker_id,
            ctx.epoch,
            len(ctx.leadership),
            loaded - started,
            replicas_done - loaded,
            partitions_done - replicas_done,
            clock() - partitions_done,
        )
        await self._reassignments.initialize_partition_reassignments()
        await self._deletion.resume_deletions()
        await self._elections.process_zk_preferred_replica_election()
        if self._core.config.auto_leader_rebalance_enable:
            self._elections.schedule_auto_rebalance(AUTO_REBALANCE_FIRST_DELAY_S)

    async def _maybe_enable_features(self) -> None:
        try:
            current = await self._core.zk.get_feature()
            if current is None or current[0].status != FeatureZNode.ENABLED:
                await self._core.zk.set_feature(FeatureZNode(FeatureZNode.ENABLED, {}))
        except ControllerMovedError:
            raise
        except Exception:
            log.exception("controller %d: could not write /feature", self._core.broker_id)

    async def _initialize_context(self) -> None:
        ctx = self._core.context
        brokers = await self._core.zk.get_all_brokers()
        ctx.set_live_brokers(brokers)
        ctx.shutting_down.clear()
        await self._changes.load_topics(await self._core.zk.get_topics())
        ctx.partitions_being_reassigned = set(ctx.adding_replicas) | set(ctx.removing_replicas)
        for broker_id in sorted(brokers):
            self._changes.watch_broker(broker_id)
        self._changes.watch_liveness(brokers)
        ctx.leadership.clear()
        ctx.leadership.update(await self._core.zk.get_partition_states(ctx.all_partitions()))
        self._core.channel.startup(ctx.live_brokers)

    def on_controller_resignation(self) -> None:
        """KC ``onControllerResignation``: unwatch, close connections, forget the context."""
        for watch in self._watches:
            watch.cancel()
        self._watches = []
        self._changes.unwatch_all()
        self._elections.cancel_auto_rebalance()
        self._reassignments.unwatch_all_reassignments()
        self._core.batch.clear()
        self._core.channel.shutdown()
        self._core.context.reset()
        self._core.waiters.fail_all()
