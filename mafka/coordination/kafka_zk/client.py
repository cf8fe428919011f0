"""The :class:`KafkaZkClient` class: Kafka's ZooKeeper operations, one object per store session.

Owns the public surface only: :class:`KafkaZkClient` composes one helper
per znode family (:mod:`~mafka.coordination.kafka_zk.brokers`,
:mod:`~mafka.coordination.kafka_zk.controller`, …, all over one
:class:`~mafka.coordination.kafka_zk.core.ZkCore`) and delegates each
operation to its family, so callers keep one client.  The contract is the
package's (:mod:`mafka.coordination.kafka_zk`); each operation's full
documentation is on its family helper's method.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping, Sequence

from twisted.internet.defer import Deferred

from mafka.coordination.kafka_zk.acls import AclChange, AclZk
from mafka.coordination.kafka_zk.admin import AdminZk
from mafka.coordination.kafka_zk.brokers import BrokerZk
from mafka.coordination.kafka_zk.cluster import ClusterZk
from mafka.coordination.kafka_zk.configs import ConfigZk
from mafka.coordination.kafka_zk.controller import ControllerElection, ControllerZk
from mafka.coordination.kafka_zk.core import ZkCore
from mafka.coordination.kafka_zk.mafka_nodes import MafkaZk
from mafka.coordination.kafka_zk.notifications import NotificationZk
from mafka.coordination.kafka_zk.partition_states import PartitionStateResults, PartitionStateZk
from mafka.coordination.kafka_zk.topics import TopicZk
from mafka.coordination.store import ClusterStore, Op, WatchCallback, WatchHandle
from mafka.coordination.znodes.brokers import BrokerRegistration
from mafka.coordination.znodes.cluster import FeatureZNode, ProducerIdBlock
from mafka.coordination.znodes.ids import new_cluster_id
from mafka.coordination.znodes.topics import LeaderIsrAndControllerEpoch, TopicAssignment
from mafka.security.acl import AccessControlEntry, PatternType, ResourcePattern
from mafka.topics import TopicPartitionTuple

__all__ = ["KafkaZkClient"]


class KafkaZkClient:
    """Kafka's ZooKeeper operations over one :class:`ClusterStore` session.

    Args:
        store: A started store (one ZooKeeper session).
    """

    def __init__(self, store: ClusterStore) -> None:
        self._store = store
        self._core = ZkCore(store)
        self._cluster = ClusterZk(self._core)
        self._brokers = BrokerZk(self._core)
        self._controller = ControllerZk(self._core)
        self._configs = ConfigZk(self._core)
        self._topics = TopicZk(self._core, self._configs)
        self._partition_states = PartitionStateZk(self._core)
        self._admin = AdminZk(self._core)
        self._notifications = NotificationZk(self._core)
        self._mafka = MafkaZk(self._core)
        self._acls = AclZk(self._core)

    @property
    def store(self) -> ClusterStore:
        """The underlying store."""
        return self._store

    def get_or_create_scram_fake_salt_key(self) -> Deferred[bytes]:
        """The cluster-wide secret for fake SCRAM salts (``/mafka/scram-fake-salt-key``)."""
        return self._mafka.get_or_create_scram_fake_salt_key()

    # ------------------------------------------------------------------ ACLs

    def create_acl_paths(self) -> Deferred[None]:
        """The ACL roots, one node per resource type, the change parents (``createAclPaths``)."""
        return self._acls.create_acl_paths()

    def get_all_acls(self) -> Deferred[dict[ResourcePattern, tuple[frozenset[AccessControlEntry], int]]]:
        """Every stored pattern with its entries and node version."""
        return self._acls.get_all_acls()

    def get_resource_acls(self, pattern: ResourcePattern) -> Deferred[tuple[frozenset[AccessControlEntry], int]]:
        """One pattern's entries and node version (-1 if absent)."""
        return self._acls.get_resource_acls(pattern)

    def conditional_set_acls(
        self, pattern: ResourcePattern, entries: frozenset[AccessControlEntry], expected_version: int
    ) -> Deferred[bool]:
        """Compare-and-set of one pattern's entries (deleting the node for none); False on a conflict."""
        return self._acls.conditional_set_acls(pattern, entries, expected_version)

    def post_acl_change(self, pattern: ResourcePattern) -> Deferred[str]:
        """Announces a change of *pattern*'s ACLs; returns the notification's path."""
        return self._acls.post_acl_change(pattern)

    def get_acl_changes(self, pattern_type: PatternType) -> Deferred[list[AclChange]]:
        """The ACL change notifications of *pattern_type*: (sequence, pattern or None, ctime)."""
        return self._acls.get_acl_changes(pattern_type)

    def watch_acl_changes(self, pattern_type: PatternType, callback: WatchCallback) -> WatchHandle:
        """Children of *pattern_type*'s ACL change parent."""
        return self._acls.watch_acl_changes(pattern_type, callback)

    def delete_acl_change(self, pattern_type: PatternType, seq: int) -> Deferred[None]:
        """Removes one old ACL change notification."""
        return self._acls.delete_acl_change(pattern_type, seq)

    # ------------------------------------------------------------------ startup

    def create_persistent_roots(self) -> Deferred[None]:
        """Makes sure every path of ``ZkData.PersistentZkPaths`` exists (empty, persistent)."""
        return self._cluster.create_persistent_roots()

    def get_cluster_id(self) -> Deferred[str | None]:
        """The cluster id in ``/cluster/id``, or None."""
        return self._cluster.get_cluster_id()

    def get_or_create_cluster_id(
        self, new_id_factory: Callable[[], str] = new_cluster_id
    ) -> Deferred[str]:
        """The cluster id, creating ``/cluster/id`` with ``new_id_factory()`` if there is none."""
        return self._cluster.get_or_create_cluster_id(new_id_factory)

    # ------------------------------------------------------------------ brokers

    def generate_broker_sequence_id(self) -> Deferred[int]:
        """Kafka's ``generateBrokerSequenceId``: bumps ``/brokers/seqid``, returns its new version (1, 2, …)."""
        return self._brokers.generate_broker_sequence_id()

    def register_broker(self, registration: BrokerRegistration) -> Deferred[int]:
        """Creates the ephemeral ``/brokers/ids/N``; returns the broker epoch (the node's czxid)."""
        return self._brokers.register_broker(registration)

    def update_broker(self, registration: BrokerRegistration) -> Deferred[None]:
        """Kafka's ``updateBrokerInfo``: rewrites ``/brokers/ids/N`` (any version)."""
        return self._brokers.update_broker(registration)

    def get_broker(self, broker_id: int) -> Deferred[BrokerRegistration | None]:
        """The registration of *broker_id*, or None if it is not live."""
        return self._brokers.get_broker(broker_id)

    def get_broker_and_epoch(
        self, broker_id: int
    ) -> Deferred[tuple[BrokerRegistration, int] | None]:
        """``(registration, broker epoch)`` of *broker_id*, or None if it is not live."""
        return self._brokers.get_broker_and_epoch(broker_id)

    def get_broker_session(self, broker_id: int) -> Deferred[tuple[int, int] | None]:
        """``(broker epoch, ZooKeeper session owning the registration)`` of *broker_id*, or None."""
        return self._brokers.get_broker_session(broker_id)

    def get_broker_ids(self) -> Deferred[list[int]]:
        """Live broker ids, sorted (Kafka's ``getSortedBrokerList``)."""
        return self._brokers.get_broker_ids()

    def get_all_brokers(self) -> Deferred[dict[int, tuple[BrokerRegistration, int]]]:
        """Broker id → ``(registration, broker epoch = czxid)`` of every live broker, by id."""
        return self._brokers.get_all_brokers()

    # ------------------------------------------------------------------ controller

    def get_controller_id(self) -> Deferred[int | None]:
        """The controller's broker id from ``/controller``, or None (absent or unreadable, as Kafka)."""
        return self._controller.get_controller_id()

    def get_controller_registration(self) -> Deferred[tuple[int, int, int] | None]:
        """``(broker id, czxid, owning session)`` of ``/controller``, or None (absent or unreadable)."""
        return self._controller.get_controller_registration()

    def get_controller_epoch(self) -> Deferred[tuple[int, int] | None]:
        """``(controller epoch, its zkVersion)`` from ``/controller_epoch``, or None."""
        return self._controller.get_controller_epoch()

    def elect_controller(self, broker_id: int, now_ms: int) -> Deferred[ControllerElection]:
        """Tries to become the controller (KC ``elect`` + ZC ``registerControllerAndIncrementControllerEpoch``)."""
        return self._controller.elect_controller(broker_id, now_ms)

    def delete_controller(self, epoch_zk_version: int) -> Deferred[None]:
        """Resigns: deletes ``/controller`` epoch-checked (KC ``triggerControllerMove``); absent is fine."""
        return self._controller.delete_controller(epoch_zk_version)

    # ------------------------------------------------------------------ controller fencing

    def controller_epoch_checked(
        self, ops: Sequence[Op], epoch_zk_version: int
    ) -> Deferred[list[object]]:
        """Runs *ops* atomically behind ``check(/controller_epoch, epoch_zk_version)``."""
        return self._core.controller_epoch_checked(ops, epoch_zk_version)

    # ------------------------------------------------------------------ topics

    def topic_exists(self, topic: str) -> Deferred[bool]:
        """True if ``/brokers/topics/<topic>`` exists."""
        return self._topics.topic_exists(topic)

    def get_topics(self) -> Deferred[list[str]]:
        """All topic names, sorted."""
        return self._topics.get_topics()

    def create_topic(
        self,
        name: str,
        assignment: Mapping[int, Sequence[int]] | TopicAssignment,
        config: Mapping[str, str] | None = None,
        topic_id: str | None = None,
    ) -> Deferred[TopicAssignment]:
        """Creates a topic as ``AdminZkClient.createTopicWithAssignment``: config znode first, then assignment."""
        return self._topics.create_topic(name, assignment, config, topic_id)

    def get_assignment(self, topic: str) -> Deferred[tuple[TopicAssignment, int] | None]:
        """``(assignment, zkVersion)`` of *topic*, or None if the topic does not exist."""
        return self._topics.get_assignment(topic)

    def get_assignments(self, topics: Iterable[str]) -> Deferred[dict[str, tuple[TopicAssignment, int]]]:
        """``(assignment, zkVersion)`` of each topic that exists (one pipelined batch of reads)."""
        return self._topics.get_assignments(topics)

    def set_assignment(
        self,
        topic: str,
        assignment: TopicAssignment,
        expected_version: int = -1,
        epoch_zk_version: int = -1,
    ) -> Deferred[int]:
        """Rewrites ``/brokers/topics/<topic>``; returns the new zkVersion."""
        return self._topics.set_assignment(topic, assignment, expected_version, epoch_zk_version)

    # ------------------------------------------------------------------ configs

    def get_entity_config(self, entity_type: str, entity_name: str) -> Deferred[dict[str, str]]:
        """``/config/<entity_type>/<entity_name>`` as a dict (``{}`` if absent)."""
        return self._configs.get_entity_config(entity_type, entity_name)

    def get_entity_configs(
        self, entity_type: str, entity_names: Iterable[str]
    ) -> Deferred[dict[str, dict[str, str]]]:
        """Each entity's config as a dict (``{}`` if absent): one pipelined batch of reads."""
        return self._configs.get_entity_configs(entity_type, entity_names)

    def get_all_entities_with_config(self, entity_type: str) -> Deferred[list[str]]:
        """The (sanitized) names under ``/config/<entity_type>``, sorted (``getAllEntitiesWithConfig``)."""
        return self._configs.get_all_entities_with_config(entity_type)

    def get_topic_config(self, topic: str) -> Deferred[dict[str, str]]:
        """The topic's config overrides (``{}`` if none)."""
        return self._configs.get_topic_config(topic)

    def get_topic_configs(self, topics: Iterable[str]) -> Deferred[dict[str, dict[str, str]]]:
        """Each topic's config overrides (``{}`` if none): one pipelined batch of reads."""
        return self._configs.get_topic_configs(topics)

    def get_broker_config(self, broker_id: int | None) -> Deferred[dict[str, str]]:
        """A broker's dynamic config overrides (None: the cluster default ``<default>``)."""
        return self._configs.get_broker_config(broker_id)

    def set_entity_config(
        self, entity_type: str, entity_name: str, config: Mapping[str, str]
    ) -> Deferred[str]:
        """Writes an entity's config, then announces it (``AdminZkClient.changeEntityConfig``)."""
        return self._configs.set_entity_config(entity_type, entity_name, config)

    def set_topic_config(self, topic: str, config: Mapping[str, str]) -> Deferred[str]:
        """Replaces the topic's config overrides and posts a config change notification ``topics/<topic>``."""
        return self._configs.set_topic_config(topic, config)

    def set_broker_config(self, broker_id: int | None, config: Mapping[str, str]) -> Deferred[str]:
        """Replaces a broker's (None: the default's) dynamic config and announces it; returns the notification path."""
        return self._configs.set_broker_config(broker_id, config)

    def post_config_change_notification(self, entity_path: str) -> Deferred[str]:
        """Creates ``/config/changes/config_change_N`` for *entity_path* (e.g. ``topics/T``); returns its path."""
        return self._configs.post_config_change_notification(entity_path)

    def get_config_change_notifications(self) -> Deferred[list[str]]:
        """Child names under ``/config/changes``, sorted (by sequence number)."""
        return self._configs.get_config_change_notifications()

    # ------------------------------------------------------------------ partition states

    def create_partition_states(
        self,
        states: Mapping[TopicPartitionTuple, LeaderIsrAndControllerEpoch],
        controller_epoch: int,
        epoch_zk_version: int,
    ) -> Deferred[PartitionStateResults]:
        """Creates the state nodes of new partitions (PSM ``initializeLeaderAndIsrForPartitions``)."""
        return self._partition_states.create_partition_states(
            states, controller_epoch, epoch_zk_version
        )

    def get_partition_state(
        self, topic: str, partition: int
    ) -> Deferred[tuple[LeaderIsrAndControllerEpoch, int] | None]:
        """``(state, zkVersion)`` of one partition (the state also carries zk_version), or None."""
        return self._partition_states.get_partition_state(topic, partition)

    def get_partition_states(
        self, partitions: Iterable[TopicPartitionTuple]
    ) -> Deferred[dict[TopicPartitionTuple, LeaderIsrAndControllerEpoch]]:
        """States (with zk_version) of the partitions that have one; others are left out."""
        return self._partition_states.get_partition_states(partitions)

    def update_partition_states_conditionally(
        self,
        states: Mapping[TopicPartitionTuple, LeaderIsrAndControllerEpoch],
        controller_epoch: int,
        epoch_zk_version: int,
    ) -> Deferred[PartitionStateResults]:
        """The controller's state writes (ZC ``updateLeaderAndIsr``): one conditional setData per partition."""
        return self._partition_states.update_partition_states_conditionally(
            states, controller_epoch, epoch_zk_version
        )

    def conditional_update_partition_state_as_leader(
        self,
        partition: TopicPartitionTuple,
        state: LeaderIsrAndControllerEpoch,
        expected_version: int,
    ) -> Deferred[tuple[bool, int]]:
        """The partition leader's ISR write (Kafka 2.6 ``ReplicationUtils.updateLeaderAndIsr``)."""
        return self._partition_states.conditional_update_partition_state_as_leader(
            partition, state, expected_version
        )

    def conditional_update_partition_states_as_leader(
        self,
        writes: Mapping[TopicPartitionTuple, tuple[LeaderIsrAndControllerEpoch, int]],
    ) -> Deferred[dict[TopicPartitionTuple, tuple[bool, int]]]:
        """Many leader ISR writes in one batch: per partition, (written, new zkVersion or -1)."""
        return self._partition_states.conditional_update_partition_states_as_leader(writes)

    # ------------------------------------------------------------------ topic deletion and admin requests

    def mark_topic_for_deletion(self, topic: str) -> Deferred[bool]:
        """Queues *topic* for deletion (``AdminZkClient.deleteTopic``)."""
        return self._admin.mark_topic_for_deletion(topic)

    def is_topic_marked_for_deletion(self, topic: str) -> Deferred[bool]:
        """True if ``/admin/delete_topics/<topic>`` exists."""
        return self._admin.is_topic_marked_for_deletion(topic)

    def get_topic_deletions(self) -> Deferred[list[str]]:
        """Topics queued for deletion, sorted."""
        return self._admin.get_topic_deletions()

    def delete_topic_deletions(
        self, topics: Iterable[str], epoch_zk_version: int = -1
    ) -> Deferred[None]:
        """Removes ``/admin/delete_topics/<t>`` markers (one pipelined batch; absent ones are fine)."""
        return self._admin.delete_topic_deletions(topics, epoch_zk_version)

    def delete_topic_znodes(self, topic: str, epoch_zk_version: int = -1) -> Deferred[None]:
        """Finishes a deletion (TDM ``completeDeleteTopic``): deletes, recursively and epoch-checked, ``/brokers/topics/<t>``, then ``/config/topics/<t>``, then ``/admin/delete_topics/<t>``."""
        return self._admin.delete_topic_znodes(topic, epoch_zk_version)

    def get_preferred_replica_election(self) -> Deferred[tuple[TopicPartitionTuple, ...]]:
        """Partitions in ``/admin/preferred_replica_election`` (empty if absent)."""
        return self._admin.get_preferred_replica_election()

    def delete_preferred_replica_election(self, epoch_zk_version: int = -1) -> Deferred[None]:
        """Deletes ``/admin/preferred_replica_election`` (absent is fine)."""
        return self._admin.delete_preferred_replica_election(epoch_zk_version)

    def get_partition_reassignment(self) -> Deferred[dict[TopicPartitionTuple, tuple[int, ...]]]:
        """The legacy ``/admin/reassign_partitions`` request (empty if absent)."""
        return self._admin.get_partition_reassignment()

    def delete_partition_reassignment(self, epoch_zk_version: int = -1) -> Deferred[None]:
        """Deletes ``/admin/reassign_partitions`` (absent is fine)."""
        return self._admin.delete_partition_reassignment(epoch_zk_version)

    def set_partition_reassignment(
        self,
        reassignment: Mapping[TopicPartitionTuple, Sequence[int]],
        epoch_zk_version: int = -1,
    ) -> Deferred[None]:
        """Writes ``/admin/reassign_partitions``, creating it if absent (ZC ``setOrCreatePartitionReassignment``)."""
        return self._admin.set_partition_reassignment(reassignment, epoch_zk_version)

    def create_partition_reassignment(
        self, reassignment: Mapping[TopicPartitionTuple, Sequence[int]]
    ) -> Deferred[None]:
        """Creates ``/admin/reassign_partitions`` as the legacy admin tool does (ZC ``createPartitionReassignment``)."""
        return self._admin.create_partition_reassignment(reassignment)

    def create_preferred_replica_election(
        self, partitions: Iterable[TopicPartitionTuple]
    ) -> Deferred[None]:
        """Creates ``/admin/preferred_replica_election`` as the legacy admin tool does."""
        return self._admin.create_preferred_replica_election(partitions)

    # ------------------------------------------------------------------ ISR change notifications and log dir events

    def post_isr_change_notification(
        self, partitions: Iterable[TopicPartitionTuple]
    ) -> Deferred[str]:
        """Creates ``/isr_change_notification/isr_change_N`` listing *partitions*; returns its path."""
        return self._notifications.post_isr_change_notification(partitions)

    def get_isr_change_notifications(self) -> Deferred[list[str]]:
        """Sequence numbers of the pending ISR change notifications, sorted."""
        return self._notifications.get_isr_change_notifications()

    def get_partitions_from_isr_change_notifications(
        self, sequence_numbers: Iterable[str]
    ) -> Deferred[list[TopicPartitionTuple]]:
        """The partitions the given notifications list, in order (vanished notifications skipped)."""
        return self._notifications.get_partitions_from_isr_change_notifications(sequence_numbers)

    def delete_isr_change_notifications(
        self, sequence_numbers: Iterable[str] | None = None, epoch_zk_version: int = -1
    ) -> Deferred[None]:
        """Deletes the given notifications (None: all of them); absent ones are fine."""
        return self._notifications.delete_isr_change_notifications(
            sequence_numbers, epoch_zk_version
        )

    def post_log_dir_event(self, broker_id: int) -> Deferred[str]:
        """Creates ``/log_dir_event_notification/log_dir_event_N`` for *broker_id*; returns its path."""
        return self._notifications.post_log_dir_event(broker_id)

    def get_log_dir_event_notifications(self) -> Deferred[list[str]]:
        """Sequence numbers of the pending log dir events, sorted."""
        return self._notifications.get_log_dir_event_notifications()

    def get_broker_ids_from_log_dir_events(
        self, sequence_numbers: Iterable[str]
    ) -> Deferred[list[int]]:
        """The broker ids of the given events, in order (vanished events skipped)."""
        return self._notifications.get_broker_ids_from_log_dir_events(sequence_numbers)

    def delete_log_dir_event_notifications(
        self, sequence_numbers: Iterable[str] | None = None, epoch_zk_version: int = -1
    ) -> Deferred[None]:
        """Deletes the given events (None: all of them); absent ones are fine."""
        return self._notifications.delete_log_dir_event_notifications(
            sequence_numbers, epoch_zk_version
        )

    # ------------------------------------------------------------------ features and producer ids

    def get_feature(self) -> Deferred[tuple[FeatureZNode, int] | None]:
        """``(/feature, zkVersion)``, or None."""
        return self._cluster.get_feature()

    def set_feature(self, feature: FeatureZNode) -> Deferred[int]:
        """Creates or overwrites ``/feature`` (the controller at failover); returns its zkVersion."""
        return self._cluster.set_feature(feature)

    def claim_producer_id_block(
        self, broker_id: int, block_size: int = ProducerIdBlock.DEFAULT_SIZE
    ) -> Deferred[ProducerIdBlock]:
        """Claims the next block of producer ids (2.x ``ProducerIdManager.getNewProducerIdBlock``)."""
        return self._cluster.claim_producer_id_block(broker_id, block_size)

    # ------------------------------------------------------------------ Mafka's own znodes

    def write_monitor_report(self, broker_id: int, data: bytes) -> Deferred[None]:
        """Writes this broker's slow-node report to the ephemeral ``/mafka/monitor/<broker_id>`` (Mafka's own znode): created by this session the first time, overwritten after."""
        return self._mafka.write_monitor_report(broker_id, data)

    def rebalancer_state(self) -> Deferred[tuple[bytes, int] | None]:
        """``/mafka/rebalancer/state`` (Mafka's own znode) and its version, or None."""
        return self._mafka.rebalancer_state()

    def write_rebalancer_state(self, data: bytes, version: int | None) -> Deferred[int]:
        """Writes the rebalancer state if it is still at *version* (None: it must not exist yet); the new version."""
        return self._mafka.write_rebalancer_state(data, version)

    def monitor_reports(self) -> Deferred[dict[int, bytes]]:
        """Every ``/mafka/monitor/<id>`` report, raw (broker id → JSON bytes)."""
        return self._mafka.monitor_reports()

    # ------------------------------------------------------------------ watches

    def watch_broker_ids(self, callback: WatchCallback) -> WatchHandle:
        """Children of ``/brokers/ids`` (brokers come and go)."""
        return self._brokers.watch_broker_ids(callback)

    def watch_broker(self, broker_id: int, callback: WatchCallback) -> WatchHandle:
        """Data of ``/brokers/ids/<id>`` (re-registration with new endpoints)."""
        return self._brokers.watch_broker(broker_id, callback)

    def watch_controller(self, callback: WatchCallback) -> WatchHandle:
        """``/controller`` created, changed or deleted."""
        return self._controller.watch_controller(callback)

    def watch_topics(self, callback: WatchCallback) -> WatchHandle:
        """Children of ``/brokers/topics`` (topics created/deleted)."""
        return self._topics.watch_topics(callback)

    def watch_topic(self, topic: str, callback: WatchCallback) -> WatchHandle:
        """Data of ``/brokers/topics/<topic>`` (partitions added, reassignment)."""
        return self._topics.watch_topic(topic, callback)

    def watch_partition_state(
        self, topic: str, partition: int, callback: WatchCallback
    ) -> WatchHandle:
        """Data of a partition's state node."""
        return self._partition_states.watch_partition_state(topic, partition, callback)

    def watch_topic_deletions(self, callback: WatchCallback) -> WatchHandle:
        """Children of ``/admin/delete_topics``."""
        return self._admin.watch_topic_deletions(callback)

    def watch_isr_change_notifications(self, callback: WatchCallback) -> WatchHandle:
        """Children of ``/isr_change_notification``."""
        return self._notifications.watch_isr_change_notifications(callback)

    def watch_log_dir_event_notifications(self, callback: WatchCallback) -> WatchHandle:
        """Children of ``/log_dir_event_notification``."""
        return self._notifications.watch_log_dir_event_notifications(callback)

    def watch_config_changes(self, callback: WatchCallback) -> WatchHandle:
        """Children of ``/config/changes``."""
        return self._configs.watch_config_changes(callback)

    def watch_preferred_replica_election(self, callback: WatchCallback) -> WatchHandle:
        """``/admin/preferred_replica_election`` created, changed or deleted."""
        return self._admin.watch_preferred_replica_election(callback)

    def watch_partition_reassignment(self, callback: WatchCallback) -> WatchHandle:
        """``/admin/reassign_partitions`` created, changed or deleted."""
        return self._admin.watch_partition_reassignment(callback)

    def watch_feature(self, callback: WatchCallback) -> WatchHandle:
        """``/feature`` created, changed or deleted."""
        return self._cluster.watch_feature(callback)
