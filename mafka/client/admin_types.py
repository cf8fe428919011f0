"""Argument and result types of :class:`mafka.client.admin.AdminClient`, shaped like confluent-kafka's.

Names, constructor signatures, attribute names and enum values are
confluent-kafka's (``confluent_kafka.admin``), so code written against it
runs unchanged after a change of import.  Where confluent-kafka uses its
``Node`` / ``BrokerMetadata`` this module uses
:class:`~mafka.client.metadata.BrokerInfo`, which has the same ``id``,
``host``, ``port`` and ``rack`` attributes.

Two deliberate differences, both widening rather than narrowing:

* :class:`ConfigSource` is an ``IntEnum``: confluent-kafka hands
  ``ConfigEntry.source`` out as a bare int, which applications compare with
  ``ConfigSource.X.value`` or wrap in ``ConfigSource(...)``; an ``IntEnum``
  member satisfies both and also reads well.
* :class:`ListConsumerGroupsResult` listings carry the group's real state
  (the admin client asks DescribeGroups), where librdkafka reports UNKNOWN
  against brokers whose ListGroups predates states (v4).
* Kafka 4's consumer groups (KIP-848) are described as Java's admin client
  describes them: :class:`ConsumerGroupState` has ``ASSIGNING`` and
  ``RECONCILING`` (which librdkafka reports as UNKNOWN),
  :class:`ConsumerGroupDescription` has ``group_epoch`` and
  ``target_assignment_epoch``, :class:`MemberDescription` ``member_epoch``
  and ``upgraded`` (all None for classic groups, as Java's empty Optionals).
"""

from __future__ import annotations

import functools
from enum import Enum, IntEnum
from typing import Any

from mafka.client.message import TopicPartition

__all__ = [
    "AlterConfigOpType",
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
    "ResourceType",
]


class _Ordered(Enum):
    _value_: int  # every member's value is its wire number

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, type(self)):
            return NotImplemented
        return self.value < other.value


class ResourceType(_Ordered):
    """Kafka resource types (the wire's ``resource_type`` numbers)."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    BROKER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6  # beyond confluent-kafka's enum (kafka-acls.sh --delegation-token)


class ConfigSource(IntEnum):
    """Where a config value comes from (DescribeConfigs ``config_source``)."""

    UNKNOWN_CONFIG = 0
    DYNAMIC_TOPIC_CONFIG = 1
    DYNAMIC_BROKER_CONFIG = 2
    DYNAMIC_DEFAULT_BROKER_CONFIG = 3
    STATIC_BROKER_CONFIG = 4
    DEFAULT_CONFIG = 5
    GROUP_CONFIG = 8


class AlterConfigOpType(_Ordered):
    """IncrementalAlterConfigs operations (the wire's ``config_operation`` numbers)."""

    SET = 0
    DELETE = 1
    APPEND = 2
    SUBTRACT = 3


class ConsumerGroupState(_Ordered):
    """A group's state; confluent-kafka's numbering (not the broker's strings).

    ``ASSIGNING`` and ``RECONCILING`` are the states only a consumer group
    (KIP-848) has, numbered after confluent-kafka's: Java's ``GroupState``
    has them, librdkafka reports them as UNKNOWN.
    """

    UNKNOWN = 0
    UNKOWN = 0  # confluent-kafka's deprecated misspelling, an alias of UNKNOWN
    PREPARING_REBALANCING = 1
    COMPLETING_REBALANCING = 2
    STABLE = 3
    DEAD = 4
    EMPTY = 5
    ASSIGNING = 6
    RECONCILING = 7

    @classmethod
    def from_broker(cls, name: str | None) -> ConsumerGroupState:
        """The state for a ListGroups / DescribeGroups / ConsumerGroupDescribe ``group_state``
        string, compared case-insensitively as Java's ``GroupState.parse`` (UNKNOWN for
        anything else)."""
        return _BROKER_STATES.get((name or "").lower(), cls.UNKNOWN)

    @property
    def broker_name(self) -> str:
        """Kafka's name of the state (``"PreparingRebalance"``, ``"Assigning"``, ``"Unknown"``):
        Java's ``GroupState.toString``, what the broker reports and ListGroups filters by."""
        return _STATE_NAMES[self]


_STATE_NAMES = {
    ConsumerGroupState.UNKNOWN: "Unknown",
    ConsumerGroupState.PREPARING_REBALANCING: "PreparingRebalance",
    ConsumerGroupState.COMPLETING_REBALANCING: "CompletingRebalance",
    ConsumerGroupState.STABLE: "Stable",
    ConsumerGroupState.DEAD: "Dead",
    ConsumerGroupState.EMPTY: "Empty",
    ConsumerGroupState.ASSIGNING: "Assigning",
    ConsumerGroupState.RECONCILING: "Reconciling",
}
_BROKER_STATES = {name.lower(): state for state, name in _STATE_NAMES.items() if state is not ConsumerGroupState.UNKNOWN}


class ConsumerGroupType(_Ordered):
    """A group's type (KIP-848): ``CLASSIC`` (JoinGroup/SyncGroup) or ``CONSUMER``
    (ConsumerGroupHeartbeat); confluent-kafka's numbering."""

    UNKNOWN = 0
    CONSUMER = 1
    CLASSIC = 2

    @classmethod
    def from_broker(cls, name: str | None) -> ConsumerGroupType:
        """The type for a ListGroups ``group_type`` string (``"consumer"``, ``"classic"``),
        case-insensitively as Java's ``GroupType.parse``; UNKNOWN for anything else."""
        return _BROKER_TYPES.get((name or "").lower(), cls.UNKNOWN)

    @property
    def broker_name(self) -> str:
        """Java's ``GroupType.toString``: ``"Consumer"``, ``"Classic"`` or ``"Unknown"``."""
        return _TYPE_NAMES[self]


_TYPE_NAMES = {
    ConsumerGroupType.UNKNOWN: "Unknown",
    ConsumerGroupType.CONSUMER: "Consumer",
    ConsumerGroupType.CLASSIC: "Classic",
}
_BROKER_TYPES = {name.lower(): t for t, name in _TYPE_NAMES.items() if t is not ConsumerGroupType.UNKNOWN}


class IsolationLevel(_Ordered):
    READ_UNCOMMITTED = 0
    READ_COMMITTED = 1


# -- topics ------------------------------------------------------------------------------------


class NewTopic:
    """A topic to create.

    ``num_partitions`` / ``replication_factor`` of -1 take the broker's
    defaults.  ``replica_assignment`` is a list, one entry per partition, of
    broker-id lists; when given, the partition count and replication factor
    come from it.  ``config`` maps topic config names to string values.
    """

    def __init__(self, topic: str, num_partitions: int = -1, replication_factor: int = -1,
                 replica_assignment: list[list[int]] | None = None,
                 config: dict[str, str] | None = None) -> None:
        if not isinstance(topic, str) or not topic:
            raise ValueError("NewTopic: topic must be a non-empty string")
        self.topic = topic
        self.num_partitions = int(num_partitions)
        self.replication_factor = int(replication_factor)
        self.replica_assignment = replica_assignment
        self.config = dict(config) if config else {}

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, NewTopic):
            return NotImplemented
        return self.topic == other.topic

    def __hash__(self) -> int:
        return hash(self.topic)

    def __repr__(self) -> str:
        return (f"NewTopic(topic={self.topic},num_partitions={self.num_partitions},"
                f"replication_factor={self.replication_factor})")


class NewPartitions:
    """Grow ``topic`` to ``new_total_count`` partitions.

    ``replica_assignment``, if given, holds one broker-id list per *new* partition.
    """

    def __init__(self, topic: str, new_total_count: int,
                 replica_assignment: list[list[int]] | None = None) -> None:
        if not isinstance(topic, str) or not topic:
            raise ValueError("NewPartitions: topic must be a non-empty string")
        self.topic = topic
        self.new_total_count = int(new_total_count)
        self.replica_assignment = replica_assignment

    def __eq__(self, other: Any) -> bool:
        if not isinstance(other, NewPartitions):
            return NotImplemented
        return self.topic == other.topic

    def __hash__(self) -> int:
        return hash(self.topic)

    def __repr__(self) -> str:
        return f"NewPartitions(topic={self.topic},new_total_count={self.new_total_count})"


# -- configs -----------------------------------------------------------------------------------


class ConfigEntry:
    """One config property: a describe_configs result, or an incremental_alter_configs operation.

    ``synonyms`` maps synonym names to ConfigEntry (``is_synonym`` True),
    highest-precedence first, as the broker lists them.
    """

    def __init__(self, name: str, value: str | None,
                 source: ConfigSource | int = ConfigSource.UNKNOWN_CONFIG,
                 is_read_only: bool = False, is_default: bool = False,
                 is_sensitive: bool = False, is_synonym: bool = False,
                 synonyms: dict[str, ConfigEntry] | None = None,
                 incremental_operation: AlterConfigOpType | None = None) -> None:
        self.name = name
        self.value = value
        try:
            self.source: ConfigSource | int = ConfigSource(source)
        except ValueError:
            self.source = int(source)
        self.is_read_only = bool(is_read_only)
        self.is_default = bool(is_default)
        self.is_sensitive = bool(is_sensitive)
        self.is_synonym = bool(is_synonym)
        self.synonyms = synonyms if synonyms is not None else {}
        self.incremental_operation = incremental_operation

    def __repr__(self) -> str:
        return f'ConfigEntry({self.name}="{self.value}")'

    def __str__(self) -> str:
        return f'{self.name}="{self.value}"'


@functools.total_ordering
class ConfigResource:
    """A resource that has configuration: its type, its name, and what to change.

    ``restype`` is a :class:`ResourceType` (``ConfigResource.Type.TOPIC``), its
    name in any case (``"topic"``, ``"broker"``) or its number.  For a BROKER
    the name is the broker id as a string (``""`` for the cluster default).
    ``set_config`` is the full dynamic config for :meth:`AdminClient.alter_configs`;
    ``incremental_configs`` the :class:`ConfigEntry` operations for
    :meth:`AdminClient.incremental_alter_configs`.  Equal and hashed by (type, name).
    """

    Type = ResourceType

    def __init__(self, restype: ResourceType | str | int, name: str,
                 set_config: dict[str, str] | None = None,
                 described_configs: dict[str, ConfigEntry] | None = None,
                 error: Any = None,
                 incremental_configs: list[ConfigEntry] | None = None) -> None:
        if name is None:
            raise ValueError("Expected resource name to be a string")
        if isinstance(restype, str):
            try:
                restype = ResourceType[restype.upper()]
            except KeyError:
                raise ValueError(f'Unknown resource type "{restype}": should be a ConfigResource.Type') from None
        elif isinstance(restype, int):
            restype = ResourceType(restype)
        elif not isinstance(restype, ResourceType):
            raise TypeError("restype must be a ConfigResource.Type, str or int")
        self.restype = restype
        self.restype_int = int(restype.value)
        self.name = str(name)
        self.set_config_dict = dict(set_config) if set_config is not None else {}
        self.incremental_configs = list(incremental_configs or [])
        self.configs = described_configs
        self.error = error

    def set_config(self, name: str, value: str, overwrite: bool = True) -> None:
        """Sets ``name`` in the config that :meth:`AdminClient.alter_configs` will install."""
        if not overwrite and name in self.set_config_dict:
            return
        self.set_config_dict[name] = value

    def add_incremental_config(self, config_entry: ConfigEntry) -> None:
        """Adds an operation (``config_entry.incremental_operation``) for incremental_alter_configs."""
        self.incremental_configs.append(config_entry)

    def __len__(self) -> int:
        return len(self.set_config_dict)

    def __hash__(self) -> int:
        return hash((self.restype, self.name))

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ConfigResource):
            return NotImplemented
        return self.restype == other.restype and self.name == other.name

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, ConfigResource):
            return NotImplemented
        return (self.restype.value, self.name) < (other.restype.value, other.name)

    def __repr__(self) -> str:
        if self.error is not None:
            return f"ConfigResource({self.restype},{self.name},{self.error!r})"
        return f"ConfigResource({self.restype},{self.name})"


# -- groups ------------------------------------------------------------------------------------


class ConsumerGroupListing:
    """A group as list_consumer_groups reports it (simple = no group protocol, e.g. offsets only)."""

    def __init__(self, group_id: str, is_simple_consumer_group: bool,
                 state: ConsumerGroupState | None = None,
                 type: ConsumerGroupType | None = None) -> None:  # noqa: A002 - confluent's name
        self.group_id = group_id
        self.is_simple_consumer_group = is_simple_consumer_group
        self.state = state if state is not None else ConsumerGroupState.UNKNOWN
        self.type = type if type is not None else ConsumerGroupType.UNKNOWN

    def __repr__(self) -> str:
        return (f"ConsumerGroupListing({self.group_id!r}, simple={self.is_simple_consumer_group}, {self.state}, "
                f"{self.type})")


class ListConsumerGroupsResult:
    """``valid``: the listings; ``errors``: a KafkaException per broker that could not be asked."""

    def __init__(self, valid: list[ConsumerGroupListing] | None = None,
                 errors: list[Exception] | None = None) -> None:
        self.valid = valid if valid is not None else []
        self.errors = errors if errors is not None else []


class MemberAssignment:
    """The partitions assigned to one member."""

    def __init__(self, topic_partitions: list[TopicPartition] | None = None) -> None:
        self.topic_partitions = topic_partitions or []


class MemberDescription:
    """One member of a described group.

    For a consumer group (KIP-848) ``target_assignment`` is the partitions the
    member is being moved to, ``member_epoch`` its epoch, and ``upgraded``
    whether it speaks the consumer protocol (True) or is a classic member of
    the consumer group (False; None when the broker's ConsumerGroupDescribe
    predates v1).  Classic groups have None for all three.
    """

    def __init__(self, member_id: str, client_id: str, host: str, assignment: MemberAssignment,
                 group_instance_id: str | None = None,
                 target_assignment: MemberAssignment | None = None,
                 member_epoch: int | None = None,
                 upgraded: bool | None = None) -> None:
        self.member_id = member_id
        self.client_id = client_id
        self.host = host
        self.assignment = assignment
        self.target_assignment = target_assignment
        self.group_instance_id = group_instance_id
        self.member_epoch = member_epoch
        self.upgraded = upgraded

    def __repr__(self) -> str:
        return f"MemberDescription({self.member_id!r}, client_id={self.client_id!r}, host={self.host!r})"


class ConsumerGroupDescription:
    """A group as its coordinator describes it; ``coordinator`` is a BrokerInfo.

    ``type`` is CLASSIC or CONSUMER (KIP-848).  For a consumer group
    ``partition_assignor`` is the server-side assignor's name, ``group_epoch``
    and ``target_assignment_epoch`` the group's epochs; both None for classic groups.
    """

    def __init__(self, group_id: str, is_simple_consumer_group: bool,
                 members: list[MemberDescription], partition_assignor: str,
                 state: ConsumerGroupState, coordinator: Any,
                 authorized_operations: list[Any] | None = None,
                 type: ConsumerGroupType = ConsumerGroupType.CLASSIC,  # noqa: A002
                 group_epoch: int | None = None,
                 target_assignment_epoch: int | None = None) -> None:
        self.group_id = group_id
        self.is_simple_consumer_group = is_simple_consumer_group
        self.members = members
        self.partition_assignor = partition_assignor
        self.state = state
        self.coordinator = coordinator
        self.authorized_operations = authorized_operations or None
        self.type = type
        self.group_epoch = group_epoch
        self.target_assignment_epoch = target_assignment_epoch

    def __repr__(self) -> str:
        return (f"ConsumerGroupDescription({self.group_id!r}, {self.type}, {self.state}, "
                f"members={len(self.members)}, coordinator={self.coordinator})")


class ConsumerGroupTopicPartitions:
    """A group and some of its partitions (with offsets, in results)."""

    def __init__(self, group_id: str, topic_partitions: list[TopicPartition] | None = None) -> None:
        self.group_id = group_id
        self.topic_partitions = topic_partitions

    def __repr__(self) -> str:
        return f"ConsumerGroupTopicPartitions({self.group_id!r}, {self.topic_partitions!r})"


class GroupMember:
    """A member as the legacy :meth:`AdminClient.list_groups` reports it (raw metadata/assignment bytes)."""

    def __init__(self) -> None:
        self.id: str | None = None
        self.client_id: str | None = None
        self.client_host: str | None = None
        self.metadata: bytes | None = None
        self.assignment: bytes | None = None

    #: The member's static id (KIP-345), set by :meth:`AdminClient.describe_groups`; None if dynamic.
    group_instance_id: str | None = None


class GroupMetadata:
    """A group as the legacy :meth:`AdminClient.list_groups` reports it.

    ``broker`` is its coordinator (a BrokerInfo), ``error`` a KafkaError or None,
    ``state`` the broker's string (``"Stable"``), ``protocol`` the assignor name.
    """

    def __init__(self) -> None:
        self.broker: Any = None
        self.id: str | None = None
        self.error: Any = None
        self.state: str | None = None
        self.protocol_type: str | None = None
        self.protocol: str | None = None
        self.members: list[GroupMember] = []

    def __repr__(self) -> str:
        return f"GroupMetadata({self.id})"

    __str__ = __repr__


# -- offsets, records, cluster -----------------------------------------------------------------


class OffsetSpec:
    """What :meth:`AdminClient.list_offsets` should find: ``earliest()``, ``latest()``,
    ``max_timestamp()`` or ``for_timestamp(ms)`` (the first offset whose timestamp is >= ms).

    ``OffsetSpec(n)`` gives the spec for a wire value: -2 earliest, -1 latest,
    -3 max timestamp, n >= 0 a timestamp.
    """

    _value: int

    def __new__(cls, index: int) -> OffsetSpec:
        if cls is not OffsetSpec:
            return object.__new__(cls)
        if index >= 0:
            return TimestampSpec(index)
        try:
            return {-2: _EARLIEST, -1: _LATEST, -3: _MAX_TIMESTAMP}[index]
        except KeyError:
            raise ValueError(f"no OffsetSpec for {index}") from None

    @classmethod
    def earliest(cls) -> OffsetSpec:
        return _EARLIEST

    @classmethod
    def latest(cls) -> OffsetSpec:
        return _LATEST

    @classmethod
    def max_timestamp(cls) -> OffsetSpec:
        return _MAX_TIMESTAMP

    @classmethod
    def for_timestamp(cls, timestamp: int) -> OffsetSpec:
        return TimestampSpec(timestamp)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, OffsetSpec):
            return NotImplemented
        return self._value < other._value

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._value})"


class EarliestSpec(OffsetSpec):
    _value = -2

    def __new__(cls) -> EarliestSpec:
        return object.__new__(cls)


class LatestSpec(OffsetSpec):
    _value = -1

    def __new__(cls) -> LatestSpec:
        return object.__new__(cls)


class MaxTimestampSpec(OffsetSpec):
    _value = -3

    def __new__(cls) -> MaxTimestampSpec:
        return object.__new__(cls)


class TimestampSpec(OffsetSpec):
    def __new__(cls, timestamp: int) -> TimestampSpec:
        return object.__new__(cls)

    def __init__(self, timestamp: int) -> None:
        if int(timestamp) < 0:
            raise ValueError("OffsetSpec.for_timestamp: timestamp must be >= 0")
        self.timestamp = int(timestamp)

    @property
    def _value(self) -> int:  # type: ignore[override]
        return self.timestamp


_EARLIEST = EarliestSpec()
_LATEST = LatestSpec()
_MAX_TIMESTAMP = MaxTimestampSpec()


class ListOffsetsResultInfo:
    """An offset found by list_offsets; ``timestamp`` is -1 for earliest/latest, ``leader_epoch`` None if unknown."""

    def __init__(self, offset: int, timestamp: int, leader_epoch: int) -> None:
        self.offset = offset
        self.timestamp = timestamp
        self.leader_epoch: int | None = leader_epoch if leader_epoch is not None and leader_epoch >= 0 else None

    def __repr__(self) -> str:
        return f"ListOffsetsResultInfo(offset={self.offset}, timestamp={self.timestamp}, leader_epoch={self.leader_epoch})"


class DeletedRecords:
    """The partition's low watermark (its first offset) after delete_records."""

    def __init__(self, low_watermark: int) -> None:
        self.low_watermark = low_watermark

    def __repr__(self) -> str:
        return f"DeletedRecords(low_watermark={self.low_watermark})"


class DescribeClusterResult:
    """``controller`` (a BrokerInfo, None if there is none), ``nodes`` (BrokerInfo list), ``cluster_id``."""

    def __init__(self, controller: Any, nodes: list[Any], cluster_id: str | None = None,
                 authorized_operations: list[Any] | None = None) -> None:
        self.cluster_id = cluster_id
        self.controller = controller
        self.nodes = nodes
        self.authorized_operations = authorized_operations or None

    def __repr__(self) -> str:
        return f"DescribeClusterResult(cluster_id={self.cluster_id!r}, controller={self.controller}, nodes={len(self.nodes)})"


# -- leaders and reassignments -----------------------------------------------------------------


class ElectionType(_Ordered):
    """What :meth:`AdminClient.elect_leaders` elects (the wire's ``election_type``), confluent-kafka's."""

    PREFERRED = 0
    UNCLEAN = 1


class PartitionReassignment:
    """A reassignment in flight (Java's ``PartitionReassignment``), from list_partition_reassignments:
    ``replicas`` (the full set while moving), ``adding_replicas`` and ``removing_replicas``."""

    def __init__(self, replicas: list[int], adding_replicas: list[int], removing_replicas: list[int]) -> None:
        self.replicas = list(replicas)
        self.adding_replicas = list(adding_replicas)
        self.removing_replicas = list(removing_replicas)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, PartitionReassignment):
            return NotImplemented
        return (self.replicas, self.adding_replicas, self.removing_replicas) == (
            other.replicas, other.adding_replicas, other.removing_replicas)

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return (f"PartitionReassignment(replicas={self.replicas}, adding_replicas={self.adding_replicas}, "
                f"removing_replicas={self.removing_replicas})")
