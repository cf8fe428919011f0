"""The synchronous admin client, shaped like confluent-kafka's ``AdminClient``.

Every operation returns at once with ``concurrent.futures.Future`` objects —
a dict keyed by topic, resource, group or partition, or one future — that a
private loop thread resolves: ``result()`` gives what confluent-kafka's
gives, or raises :class:`~mafka.client.kafka_error.KafkaException` carrying a
:class:`~mafka.client.kafka_error.KafkaError` (the broker's error code, or
``_TIMED_OUT`` when ``request_timeout`` passes, ``_TRANSPORT`` when no
broker could be reached, ``_DESTROY`` when the client is closed first).
Keys fail and succeed independently: one topic that already exists does not
fail the others.  Bad arguments raise ``TypeError`` / ``ValueError`` from the
call itself.  Futures cannot be cancelled and their callbacks run on the
client's loop thread, as confluent-kafka's run on librdkafka's.

Routing, as Kafka's clients do it:

* CreateTopics, DeleteTopics, CreatePartitions go to the controller named by
  Metadata; NOT_CONTROLLER (the controller moved) refreshes metadata and
  resends just the affected topics.
* DescribeConfigs / AlterConfigs / IncrementalAlterConfigs for a BROKER
  resource go to that broker (it alone knows its static config); everything
  else to any broker.
* Group operations go to the group's coordinator (FindCoordinator), retried
  while the coordinator is moving or loading.  ListGroups goes to every
  broker, since each lists only the groups it coordinates.
* ListOffsets and DeleteRecords go to each partition's leader, retried after
  a metadata refresh when leadership moved.

Timeouts are in seconds, as in confluent-kafka: ``request_timeout`` bounds
the whole operation (lookups, retries and the answer; default
``socket.timeout.ms``, negative = none) and ``operation_timeout`` is how long
the broker may wait for the change to take effect across the cluster
(default ``socket.timeout.ms``, librdkafka's default; 0 = answer at once).

This module is the client's public face; the work is done by one module per
API family, over the machinery of :mod:`mafka.client.admin_core`:
:mod:`~mafka.client.admin_topics` (topics, partitions, the cluster),
:mod:`~mafka.client.admin_configs`, :mod:`~mafka.client.admin_groups`,
:mod:`~mafka.client.admin_group_offsets`, :mod:`~mafka.client.admin_records`
(offsets and records at partition leaders),
:mod:`~mafka.client.admin_replicas` (leader elections and reassignments),
:mod:`~mafka.client.admin_share_groups` (KIP-932 share groups and their offsets, at coordinators) and
:mod:`~mafka.client.admin_acls` (ACLs, to any broker).
Argument and result types are :mod:`mafka.client.admin_types`' and, for ACLs,
:mod:`mafka.client.admin_acls`', re-exported here.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from mafka.client import (
    admin_acls,
    admin_configs,
    admin_group_offsets,
    admin_groups,
    admin_records,
    admin_replicas,
    admin_share_groups,
    admin_topics,
)
from mafka.client.admin_acls import (
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    ResourcePatternType,
)
from mafka.client.admin_core import AdminCore, Future
from mafka.client.admin_types import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ConsumerGroupDescription,
    ConsumerGroupListing,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    DeletedRecords,
    DescribeClusterResult,
    ElectionType,
    GroupMember,
    GroupMetadata,
    IsolationLevel,
    ListConsumerGroupsResult,
    ListOffsetsResultInfo,
    MemberAssignment,
    MemberDescription,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    PartitionReassignment,
    ResourceType,
)
from mafka.client.config import parse_config
from mafka.client.kafka_error import KafkaError, KafkaException
from mafka.client.kernel import Kernel
from mafka.client.message import TopicPartition
from mafka.client.metadata import BrokerInfo
from mafka.client.metadata_view import ClusterMetadataView

__all__ = [
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "AdminClient",
    "AlterConfigOpType",
    "BrokerInfo",
    "ConfigEntry",
    "ConfigResource",
    "ConfigSource",
    "ConsumerGroupDescription",
    "ConsumerGroupListing",
    "ConsumerGroupState",
    "ConsumerGroupTopicPartitions",
    "ConsumerGroupType",
    "DeletedRecords",
    "DescribeClusterResult",
    "ElectionType",
    "GroupMember",
    "GroupMetadata",
    "IsolationLevel",
    "ListConsumerGroupsResult",
    "ListOffsetsResultInfo",
    "MemberAssignment",
    "MemberDescription",
    "NewPartitions",
    "NewTopic",
    "OffsetSpec",
    "PartitionReassignment",
    "ResourcePatternType",
    "ResourceType",
]


class AdminClient:
    """``AdminClient(conf)``: confluent-kafka's admin API over Mafka's pure-Python core.

    Use as a context manager or call :meth:`close`, which stops the client's
    thread and closes its sockets; futures still pending then fail with
    ``_DESTROY``.

    Raises:
        ConfigError (a ValueError): an unknown key, a bad value (named in the message).
    """

    def __init__(self, conf: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        settings = dict(conf or {})
        settings.update(kwargs)
        self._core = AdminCore(parse_config("admin", settings), self)

    @property
    def _kernel(self) -> Kernel:
        """The client's connections and metadata (for tests that reach in)."""
        return self._core.kernel

    # -- topics, partitions and the cluster --------------------------------------------------

    def create_topics(self, new_topics: list[NewTopic], operation_timeout: float | None = None,
                      request_timeout: float | None = None,
                      validate_only: bool = False) -> dict[str, Future[None]]:
        """Creates topics: {topic: Future(None)}; a failed topic's future raises KafkaException
        (TOPIC_ALREADY_EXISTS, INVALID_REPLICATION_FACTOR, INVALID_CONFIG, …).

        With ``operation_timeout`` > 0 the controller answers once every partition has a
        leader (or with REQUEST_TIMED_OUT when that takes longer); with 0 it answers at once.
        """
        return admin_topics.create_topics(
            self._core, new_topics, operation_timeout, request_timeout, validate_only)

    def delete_topics(self, topics: list[str], operation_timeout: float | None = None,
                      request_timeout: float | None = None) -> dict[str, Future[None]]:
        """Deletes topics: {topic: Future(None)}; an unknown topic's future raises
        KafkaException(UNKNOWN_TOPIC_OR_PARTITION)."""
        return admin_topics.delete_topics(self._core, topics, operation_timeout, request_timeout)

    def create_partitions(self, new_partitions: list[NewPartitions], operation_timeout: float | None = None,
                          request_timeout: float | None = None,
                          validate_only: bool = False) -> dict[str, Future[None]]:
        """Grows topics to ``new_total_count`` partitions: {topic: Future(None)}
        (INVALID_PARTITIONS for a count that is not larger)."""
        return admin_topics.create_partitions(
            self._core, new_partitions, operation_timeout, request_timeout, validate_only)

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadataView:
        """Cluster metadata, confluent-kafka's ``ClusterMetadata`` shape (blocking).

        Raises:
            KafkaException: _TIMED_OUT / _TRANSPORT.
        """
        return admin_topics.list_topics(self._core, topic, timeout)

    def describe_cluster(self, request_timeout: float | None = None) -> Future[DescribeClusterResult]:
        """Future(DescribeClusterResult(cluster_id, controller, nodes)), from a fresh Metadata answer."""
        return admin_topics.describe_cluster(self._core, request_timeout)

    # -- configs -----------------------------------------------------------------------------

    def describe_configs(self, resources: list[ConfigResource],
                         request_timeout: float | None = None) -> dict[ConfigResource, Future[dict[str, ConfigEntry]]]:
        """{resource: Future({name: ConfigEntry})}, synonyms included.

        TOPIC resources of unknown topics raise UNKNOWN_TOPIC_OR_PARTITION;
        BROKER resources are asked of that broker.
        """
        return admin_configs.describe_configs(self._core, resources, request_timeout)

    def alter_configs(self, resources: list[ConfigResource], request_timeout: float | None = None,
                      validate_only: bool = False) -> dict[ConfigResource, Future[None]]:
        """Replaces each resource's whole dynamic config with its ``set_config_dict``:
        {resource: Future(None)}.  Keys left out revert to their defaults (Kafka's AlterConfigs)."""
        return admin_configs.alter_configs(self._core, resources, request_timeout, validate_only)

    def incremental_alter_configs(self, resources: list[ConfigResource], request_timeout: float | None = None,
                                  validate_only: bool = False) -> dict[ConfigResource, Future[None]]:
        """Applies each resource's ``incremental_configs`` (ConfigEntry with ``incremental_operation``
        SET/DELETE/APPEND/SUBTRACT) and leaves other keys alone: {resource: Future(None)}.

        Raises:
            ValueError: a resource without operations, or an entry without ``incremental_operation``.
        """
        return admin_configs.incremental_alter_configs(self._core, resources, request_timeout, validate_only)

    # -- groups ------------------------------------------------------------------------------

    def list_consumer_groups(self, states: set[ConsumerGroupState] | None = None,
                             request_timeout: float | None = None,
                             types: set[ConsumerGroupType] | None = None) -> Future[ListConsumerGroupsResult]:
        """Future(ListConsumerGroupsResult): the consumer groups of every broker, with their
        states and types (CLASSIC / CONSUMER, from ListGroups v5).

        ``states`` keeps only groups in those states, ``types`` only groups of those types
        (confluent-kafka's ``types``, Java's ``ListGroupsOptions.withTypes``); both are sent
        to brokers that filter (ListGroups v4 / v5) and applied to every answer.  A broker
        that cannot be asked adds a KafkaException to ``errors``; the others still list theirs.

        Raises:
            TypeError: ``states`` / ``types`` not a set of ConsumerGroupState / ConsumerGroupType.
            ValueError: ``types`` holds UNKNOWN.
        """
        return admin_groups.list_consumer_groups(self._core, states, request_timeout, types)

    def list_groups(self, group: str | None = None, timeout: float = -1) -> list[GroupMetadata]:
        """The legacy, blocking group listing: GroupMetadata for every group (or just ``group``).

        Raises:
            KafkaException: _TIMED_OUT, or the error of the first broker that failed
                when none could be asked.
        """
        return admin_groups.list_groups(self._core, group, timeout)

    def describe_consumer_groups(self, group_ids: list[str], request_timeout: float | None = None
                                 ) -> dict[str, Future[ConsumerGroupDescription]]:
        """{group: Future(ConsumerGroupDescription)} from each group's coordinator.

        As Kafka 4's admin client: ConsumerGroupDescribe first (a consumer group, type
        CONSUMER, with its epochs and each member's epoch and target assignment), and
        DescribeGroups for a group that is not a consumer group (type CLASSIC) or a
        coordinator without ConsumerGroupDescribe.  A group that does not exist is
        described as DEAD with no members (DescribeGroups' answer).
        """
        return admin_groups.describe_consumer_groups(self._core, group_ids, request_timeout)

    def delete_consumer_groups(self, group_ids: list[str], request_timeout: float | None = None
                               ) -> dict[str, Future[None]]:
        """{group: Future(None)}; GROUP_ID_NOT_FOUND / NON_EMPTY_GROUP (it has members) on failure."""
        return admin_groups.delete_consumer_groups(self._core, group_ids, request_timeout)

    def describe_groups(self, group_ids: list[str], request_timeout: float | None = None
                        ) -> dict[str, Future[GroupMetadata]]:
        """{group: Future(GroupMetadata)}: DescribeGroups at each group's coordinator, as the broker
        answers it, whatever the group's protocol type (``consumer``, ``connect``, ``""`` …).

        The legacy :meth:`list_groups` shape: ``broker`` is the coordinator, ``state`` the
        broker's string, ``protocol_type`` and ``protocol`` as sent, members with their raw
        ``metadata`` / ``assignment`` bytes and ``group_instance_id``.  What tools such as
        ``kafka-consumer-groups`` need beyond :meth:`describe_consumer_groups` (which decodes
        assignments and reports only consumer groups' details).  A group that does not
        exist is described with state ``Dead``; coordinator errors are retried.
        """
        return admin_groups.describe_groups(self._core, group_ids, request_timeout)

    # -- committed offsets -------------------------------------------------------------------

    def list_consumer_group_offsets(self, requests: list[ConsumerGroupTopicPartitions],
                                    request_timeout: float | None = None
                                    ) -> dict[str, Future[ConsumerGroupTopicPartitions]]:
        """{group: Future(ConsumerGroupTopicPartitions(group, [TopicPartition with offset]))}.

        ``topic_partitions`` None asks for every partition with a committed
        offset.  A partition without one has offset OFFSET_INVALID; a
        partition's own error is in its ``error``.
        """
        return admin_group_offsets.list_consumer_group_offsets(self._core, requests, request_timeout)

    def alter_consumer_group_offsets(self, requests: list[ConsumerGroupTopicPartitions],
                                     request_timeout: float | None = None
                                     ) -> dict[str, Future[ConsumerGroupTopicPartitions]]:
        """Commits the given offsets for groups that have no active member:
        {group: Future(ConsumerGroupTopicPartitions)} whose partitions carry their own
        ``error`` (e.g. UNKNOWN_MEMBER_ID while the group has members), as confluent-kafka's.
        """
        return admin_group_offsets.alter_consumer_group_offsets(self._core, requests, request_timeout)

    def delete_consumer_group_offsets(self, requests: list[ConsumerGroupTopicPartitions],
                                      request_timeout: float | None = None
                                      ) -> dict[str, Future[ConsumerGroupTopicPartitions]]:
        """Deletes committed offsets (OffsetDelete, KIP-496; Kafka's ``deleteConsumerGroupOffsets``):
        {group: Future(ConsumerGroupTopicPartitions)} whose partitions carry their own ``error``
        (GROUP_SUBSCRIBED_TO_TOPIC for a topic the group's members consume,
        UNKNOWN_TOPIC_OR_PARTITION).  A group-level error (GROUP_ID_NOT_FOUND,
        NON_EMPTY_GROUP …) fails the future.  ``topic_partitions`` must be a list (it may be
        empty, as Kafka's: the answer is then only the group's error).
        """
        return admin_group_offsets.delete_consumer_group_offsets(self._core, requests, request_timeout)

    # -- share groups (KIP-932; mafka.client.admin_share_groups) ----------------------------

    def list_share_groups(self, request_timeout: float | None = None
                          ) -> Future[admin_share_groups.ListShareGroupsResult]:
        """Future(ListShareGroupsResult): the share groups of every broker (ListGroups v5, type share)."""
        return admin_share_groups.list_share_groups(self._core, request_timeout)

    def describe_share_groups(self, group_ids: list[str], request_timeout: float | None = None
                              ) -> dict[str, Future[admin_share_groups.ShareGroupDescription]]:
        """{group: Future(ShareGroupDescription)} (Java's ``describeShareGroups``)."""
        return admin_share_groups.describe_share_groups(self._core, group_ids, request_timeout)

    def list_share_group_offsets(
        self, requests: Mapping[str, list[TopicPartition] | None], request_timeout: float | None = None
    ) -> dict[str, Future[dict[TopicPartition, admin_share_groups.SharePartitionOffsetInfo]]]:
        """{group: Future({TopicPartition: SharePartitionOffsetInfo})} (Java's ``listShareGroupOffsets``);
        None partitions: every initialized share-partition of the group."""
        return admin_share_groups.list_share_group_offsets(self._core, requests, request_timeout)

    def alter_share_group_offsets(self, group_id: str, offsets: Mapping[TopicPartition, int],
                                  request_timeout: float | None = None) -> Future[list[TopicPartition]]:
        """Future([TopicPartition with its own error]) (Java's ``alterShareGroupOffsets``); the
        group must be empty (NON_EMPTY_GROUP fails the future)."""
        return admin_share_groups.alter_share_group_offsets(self._core, group_id, offsets, request_timeout)

    def delete_share_group_offsets(self, group_id: str, topics: list[str], request_timeout: float | None = None
                                   ) -> Future[dict[str, KafkaError | None]]:
        """Future({topic: its error or None}) (Java's ``deleteShareGroupOffsets``); the group must be empty."""
        return admin_share_groups.delete_share_group_offsets(self._core, group_id, topics, request_timeout)

    # -- offsets and records (answered by partition leaders) ---------------------------------

    def list_offsets(self, topic_partition_offsets: dict[TopicPartition, OffsetSpec],
                     isolation_level: IsolationLevel | None = None,
                     request_timeout: float | None = None) -> dict[TopicPartition, Future[ListOffsetsResultInfo]]:
        """{TopicPartition: Future(ListOffsetsResultInfo(offset, timestamp, leader_epoch))} from each leader.

        ``OffsetSpec.max_timestamp()`` (the record with the largest timestamp,
        KIP-734) needs ListOffsets v7: against a leader that lacks it the
        future raises KafkaException(UNSUPPORTED_VERSION).
        """
        return admin_records.list_offsets(
            self._core, topic_partition_offsets, isolation_level, request_timeout)

    def delete_records(self, topic_partition_offsets: list[TopicPartition],
                       request_timeout: float | None = None,
                       operation_timeout: float | None = None) -> dict[TopicPartition, Future[DeletedRecords]]:
        """Deletes records before each ``offset`` (OFFSET_END, -1: all of them), at each leader:
        {TopicPartition: Future(DeletedRecords(low_watermark))}.  OFFSET_OUT_OF_RANGE
        for an offset past the end."""
        return admin_records.delete_records(
            self._core, topic_partition_offsets, request_timeout, operation_timeout)

    # -- leaders and reassignments (answered by the controller) ------------------------------

    def elect_leaders(self, election_type: ElectionType, partitions: list[TopicPartition] | None = None,
                      request_timeout: float | None = None, operation_timeout: float | None = None
                      ) -> Future[dict[TopicPartition, KafkaException | None]]:
        """Elects the preferred (or, UNCLEAN, any live) replica leader of ``partitions``
        (None: every partition of the cluster), at the controller; confluent-kafka's.

        Future({TopicPartition: None if elected, else KafkaException}) — e.g.
        ELECTION_NOT_NEEDED when the preferred replica already leads,
        PREFERRED_LEADER_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION.  The future itself
        fails only for an error of the whole request.  ``operation_timeout`` is how long
        the controller may wait for the elections to complete.
        """
        return admin_replicas.elect_leaders(
            self._core, election_type, partitions, request_timeout, operation_timeout)

    def alter_partition_reassignments(self, reassignments: dict[TopicPartition, list[int] | None],
                                      request_timeout: float | None = None) -> dict[TopicPartition, Future[None]]:
        """Starts (or changes) the reassignment of each partition to its list of target
        replicas, or cancels it for None, at the controller (Java's ``alterPartitionReassignments``):
        {TopicPartition: Future(None)}, failing with the partition's error
        (UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT, NO_REASSIGNMENT_IN_PROGRESS …)."""
        return admin_replicas.alter_partition_reassignments(self._core, reassignments, request_timeout)

    def list_partition_reassignments(self, partitions: list[TopicPartition] | None = None,
                                     request_timeout: float | None = None
                                     ) -> Future[dict[TopicPartition, PartitionReassignment]]:
        """The reassignments in flight, of ``partitions`` or (None) of the whole cluster, at the
        controller (Java's ``listPartitionReassignments``):
        Future({TopicPartition: PartitionReassignment}); partitions not moving are left out."""
        return admin_replicas.list_partition_reassignments(self._core, partitions, request_timeout)

    # -- ACLs (answered by any broker) -------------------------------------------------------

    def create_acls(self, acls: list[AclBinding], request_timeout: float | None = None
                    ) -> dict[AclBinding, Future[None]]:
        """Creates ACLs: {AclBinding: Future(None)}, confluent-kafka's.

        A binding's future raises KafkaException with the broker's code:
        SECURITY_DISABLED (no authorizer), CLUSTER_AUTHORIZATION_FAILED (no Alter on the
        cluster), INVALID_REQUEST (e.g. a BROKER resource not named ``kafka-cluster``).
        Creating an ACL that exists already succeeds.

        Raises:
            TypeError: not a list of AclBinding (an AclBindingFilter is refused).
            ValueError: an empty list, or duplicate bindings.
        """
        return admin_acls.create_acls(self._core, acls, request_timeout)

    def describe_acls(self, acl_binding_filter: AclBindingFilter, request_timeout: float | None = None
                      ) -> Future[list[AclBinding]]:
        """Future([AclBinding]): the ACLs ``acl_binding_filter`` matches, confluent-kafka's.

        Fails with SECURITY_DISABLED, CLUSTER_AUTHORIZATION_FAILED (no Describe on the
        cluster) or INVALID_REQUEST.

        Raises:
            TypeError: not an AclBindingFilter.
        """
        return admin_acls.describe_acls(self._core, acl_binding_filter, request_timeout)

    def delete_acls(self, acl_binding_filters: list[AclBindingFilter], request_timeout: float | None = None
                    ) -> dict[AclBindingFilter, Future[list[AclBinding]]]:
        """Deletes the ACLs each filter matches: {AclBindingFilter: Future([deleted AclBinding])},
        confluent-kafka's; a filter that matches nothing gives [].  Errors as :meth:`create_acls`.

        Raises:
            TypeError: not a list of AclBindingFilter.
            ValueError: an empty list, or duplicate filters.
        """
        return admin_acls.delete_acls(self._core, acl_binding_filters, request_timeout)

    # -- lifecycle ----------------------------------------------------------------------------

    def poll(self, timeout: float | None = None) -> int:
        """Serves callbacks, as confluent-kafka's: there are none here (results come by future); returns 0."""
        return 0

    def close(self, timeout: float = 5.0) -> None:
        """Fails pending futures with _DESTROY, closes sockets and stops the thread (idempotent).

        Raises:
            RuntimeError: called from a future's done-callback, which runs on the
                client's own thread and would wait for itself.
        """
        self._core.close(timeout)

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            core = self._core
            if not core.closed:
                core.thread.stop(1.0)
        except Exception:  # noqa: BLE001 - interpreter teardown
            pass
