"""The values a share group (:mod:`.group`) takes and returns: its settings, its states,
ShareGroupHeartbeat's request and response, the share-partitions to initialize, what its
timer did, ShareGroupDescribe's view of it, and a snapshot of it."""

from __future__ import annotations

import enum
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

from mafka.errors import ConfigError, ErrorCode
from mafka.group.consumer.member import TopicIdPartitions
from mafka.group.share.member import ShareGroupMember
from mafka.group.share.records import CoordinatorRecord
from mafka.group.share.state_metadata import StatePartitionMetadata

__all__ = [
    "MAX_MEMBER_ID_LENGTH",
    "ExpireResult",
    "FencedMember",
    "GroupSnapshot",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "HeartbeatResult",
    "InitializeRequest",
    "MemberDescription",
    "ShareGroupConfig",
    "ShareGroupDescription",
    "ShareGroupState",
    "TopicPartitionsDescription",
]

#: ShareGroupHeartbeat (KafkaApis ``isMemberIdValid``): a member id longer than this is refused
MAX_MEMBER_ID_LENGTH = 36


@dataclass(frozen=True)
class ShareGroupConfig:
    """The ``group.share.*`` settings a share group needs (Kafka 4.2's defaults).

    The broker resolves the group-level overrides (``share.session.timeout.ms``,
    ``share.heartbeat.interval.ms``) before building this.

    Attributes:
        session_timeout_ms: ``group.share.session.timeout.ms``.
        heartbeat_interval_ms: ``group.share.heartbeat.interval.ms``.
        max_size: ``group.share.max.size``.
        initialize_retry_interval_ms: ``group.share.initialize.retry.interval.ms``: how long an
            asked-for share-partition initialization may stay unanswered before a heartbeat asks again.
    """

    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    max_size: int = 200
    initialize_retry_interval_ms: int = 30_000

    def __post_init__(self) -> None:
        for name, value in (
            ("group.share.session.timeout.ms", self.session_timeout_ms),
            ("group.share.heartbeat.interval.ms", self.heartbeat_interval_ms),
            ("group.share.max.size", self.max_size),
            ("group.share.initialize.retry.interval.ms", self.initialize_retry_interval_ms),
        ):
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ConfigError(f"Invalid value {value} for configuration {name}: Value must be at least 1")


class ShareGroupState(enum.Enum):
    """A share group's state, under the names Kafka 4 reports (ListGroups, ShareGroupDescribe)."""

    EMPTY = "Empty"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class HeartbeatRequest:
    """ShareGroupHeartbeat (v1) request fields, plus what the request context tells.

    ``rack_id`` and ``subscribed_topic_names`` are None when not sent (unchanged since the last
    heartbeat), as on the wire.  ``client_id`` comes from the request header, ``client_host``
    from the connection.
    """

    group_id: str
    member_id: str
    member_epoch: int
    rack_id: str | None = None
    subscribed_topic_names: Sequence[str] | None = None
    client_id: str = ""
    client_host: str = ""


@dataclass(frozen=True)
class HeartbeatResponse:
    """ShareGroupHeartbeat's response fields; ``assignment`` None when not sent."""

    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Mapping[bytes, frozenset[int]] | None = None


@dataclass(frozen=True)
class InitializeRequest:
    """Share-partitions whose state the share coordinator must initialize (Kafka's
    ``InitializeShareGroupStateParameters``): topic id → partition → start offset (-1 after a
    heartbeat: ``share.auto.offset.reset`` decides; the new offset after AlterShareGroupOffsets),
    each with ``state_epoch`` (the group epoch).  When the share coordinator answers, call
    :meth:`~mafka.group.share.group.ShareGroup.initialize_done` or
    :meth:`~mafka.group.share.group.ShareGroup.initialize_failed` with the partitions."""

    group_id: str
    state_epoch: int
    partitions: Mapping[bytes, Mapping[int, int]]

    def topic_partitions(self) -> dict[bytes, frozenset[int]]:
        """Topic id → the partitions (what :meth:`ShareGroup.initialize_done` takes)."""
        return {t: frozenset(parts) for t, parts in self.partitions.items()}


@dataclass(frozen=True)
class HeartbeatResult:
    """A heartbeat's response, the records it applied (to append before answering), and the
    share-partitions to initialize once they are appended (None: nothing to initialize)."""

    response: HeartbeatResponse
    records: tuple[CoordinatorRecord, ...] = ()
    initialize: InitializeRequest | None = None
    #: the member that left the group (member epoch -1), so its share sessions can go
    left_member_id: str | None = None


@dataclass(frozen=True)
class FencedMember:
    member_id: str
    reason: str


@dataclass(frozen=True)
class ExpireResult:
    """The members the session timer fenced, and the records that fenced them (already applied)."""

    fenced: tuple[FencedMember, ...] = ()
    records: tuple[CoordinatorRecord, ...] = ()


@dataclass(frozen=True)
class TopicPartitionsDescription:
    """ShareGroupDescribe's ``TopicPartitions``: a topic's id, name and partitions."""

    topic_id: bytes
    topic_name: str
    partitions: tuple[int, ...]


@dataclass(frozen=True)
class MemberDescription:
    """ShareGroupDescribe's ``Member``."""

    member_id: str
    rack_id: str | None
    member_epoch: int
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    assignment: tuple[TopicPartitionsDescription, ...]


@dataclass(frozen=True)
class ShareGroupDescription:
    """ShareGroupDescribe's ``DescribedGroup`` (error fields and authorized operations are the handler's)."""

    group_id: str
    group_state: str
    group_epoch: int
    assignment_epoch: int
    assignor_name: str
    members: tuple[MemberDescription, ...]


@dataclass(frozen=True)
class GroupSnapshot:
    """Everything a group's records determine, for comparing two groups."""

    group_id: str
    state: ShareGroupState
    group_epoch: int
    assignment_epoch: int
    metadata_hash: int
    members: Mapping[str, ShareGroupMember]
    target_assignment: Mapping[str, TopicIdPartitions]
    state_partition_metadata: StatePartitionMetadata | None = field(default=None)
