"""The values a consumer group (:mod:`.group`) takes and returns: its settings, its states,
ConsumerGroupHeartbeat's request and response, what its timers did, and a snapshot of it."""

from __future__ import annotations

import base64
import enum
import importlib
import uuid
from collections.abc import Collection, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from mafka.errors import ConfigError, ErrorCode
from mafka.group.consumer.assignor_api import PartitionAssignor
from mafka.group.consumer.member import ConsumerGroupMember, TopicIdPartitions, TopicInfo
from mafka.group.consumer.records import CoordinatorRecord

__all__ = [
    "MIGRATION_POLICIES",
    "ConsumerGroupConfig",
    "ConsumerGroupState",
    "ExpireResult",
    "FencedMember",
    "GroupSnapshot",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "HeartbeatResult",
    "configured_assignors",
    "new_member_id",
]


#: ``group.consumer.migration.policy``'s values (Kafka's ``ConsumerGroupMigrationPolicy``)
MIGRATION_POLICIES = ("bidirectional", "upgrade", "downgrade", "disabled")


@dataclass(frozen=True)
class ConsumerGroupConfig:
    """The broker's ``group.consumer.*`` settings a group needs (Kafka 4's defaults).

    Attributes:
        session_timeout_ms: ``group.consumer.session.timeout.ms``.
        heartbeat_interval_ms: ``group.consumer.heartbeat.interval.ms``.
        max_size: ``group.consumer.max.size``.
        assignors: ``group.consumer.assignors`` by name; the first is the default.
        migration_policy: ``group.consumer.migration.policy``: whether a classic group may be
            upgraded to a consumer group online (``upgrade``), a consumer group left with classic
            members only downgraded (``downgrade``), both (``bidirectional``) or neither
            (``disabled``: then no classic member may join a consumer group either).
        classic_max_size: ``group.max.size``: a downgrade never makes a classic group larger.
    """

    session_timeout_ms: int = 45_000
    heartbeat_interval_ms: int = 5_000
    max_size: int = 2**31 - 1
    assignors: tuple[str, ...] = ("uniform", "range")
    migration_policy: str = "bidirectional"
    classic_max_size: int = 2**31 - 1

    def __post_init__(self) -> None:
        for name, value in (
            ("group.consumer.session.timeout.ms", self.session_timeout_ms),
            ("group.consumer.heartbeat.interval.ms", self.heartbeat_interval_ms),
            ("group.consumer.max.size", self.max_size),
        ):
            if value < 1:
                raise ConfigError(f"Invalid value {value} for configuration {name}: Value must be at least 1")
        if not self.assignors:
            raise ConfigError("Invalid value for configuration group.consumer.assignors: it must name an assignor")
        if self.migration_policy not in MIGRATION_POLICIES:
            raise ConfigError(
                f"Invalid value {self.migration_policy} for configuration group.consumer.migration.policy: "
                f"String must be one of: {', '.join(MIGRATION_POLICIES)}"
            )

    @property
    def upgrade_enabled(self) -> bool:
        """Kafka's ``ConsumerGroupMigrationPolicy.isUpgradeEnabled``."""
        return self.migration_policy in ("upgrade", "bidirectional")

    @property
    def downgrade_enabled(self) -> bool:
        """Kafka's ``ConsumerGroupMigrationPolicy.isDowngradeEnabled``."""
        return self.migration_policy in ("downgrade", "bidirectional")


def configured_assignors(names: Iterable[str]) -> dict[str, PartitionAssignor]:
    """The built-in assignors (:mod:`mafka.group.consumer.assignors`) *names* names, in that order."""
    available: Mapping[str, PartitionAssignor] = importlib.import_module(
        "mafka.group.consumer.assignors"
    ).ASSIGNORS
    unknown = [n for n in names if n not in available]
    if unknown:
        raise ConfigError(
            f"Invalid value {','.join(unknown)} for configuration group.consumer.assignors: "
            f"unknown assignor (available: {', '.join(available)})"
        )
    return {n: available[n] for n in names}


def new_member_id() -> str:
    """A member id as Kafka's ``Uuid.randomUuid().toString()``: 22 URL-safe base64 characters."""
    while True:
        text = base64.urlsafe_b64encode(uuid.uuid4().bytes).rstrip(b"=").decode("ascii")
        if not text.startswith("-"):  # Kafka avoids ids that read like a command-line flag
            return text


class ConsumerGroupState(enum.Enum):
    """A consumer group's state, under the names Kafka 4 reports (ListGroups, ConsumerGroupDescribe)."""

    EMPTY = "Empty"
    ASSIGNING = "Assigning"
    RECONCILING = "Reconciling"
    STABLE = "Stable"
    DEAD = "Dead"

    def __str__(self) -> str:
        return self.value


@dataclass(frozen=True)
class HeartbeatRequest:
    """ConsumerGroupHeartbeat's request fields, plus what the request context tells.

    ``None`` means "not sent" (unchanged since the last heartbeat) for every optional field,
    as on the wire; ``rebalance_timeout_ms`` uses -1 for that.  ``topic_partitions`` is the
    partitions the member owns, by topic id.  ``client_id`` / ``client_host`` come from the
    request header and the connection, ``api_version`` from the header (from version 1 the
    client always sends its own member id).
    """

    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    subscribed_topic_names: Sequence[str] | None = None
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    topic_partitions: Mapping[bytes, Collection[int]] | None = None
    client_id: str = ""
    client_host: str = ""
    api_version: int = 1


@dataclass(frozen=True)
class HeartbeatResponse:
    """ConsumerGroupHeartbeat's response fields; ``assignment`` None when not sent."""

    error_code: ErrorCode = ErrorCode.NONE
    error_message: str | None = None
    member_id: str | None = None
    member_epoch: int = 0
    heartbeat_interval_ms: int = 0
    assignment: Mapping[bytes, frozenset[int]] | None = None


@dataclass(frozen=True)
class HeartbeatResult:
    """A heartbeat's response and the records it applied (to append before answering)."""

    response: HeartbeatResponse
    records: tuple[CoordinatorRecord, ...] = ()


@dataclass(frozen=True)
class FencedMember:
    member_id: str
    reason: str


@dataclass(frozen=True)
class ExpireResult:
    """The members a timer fenced, and the records that fenced them (already applied)."""

    fenced: tuple[FencedMember, ...] = ()
    records: tuple[CoordinatorRecord, ...] = ()


@dataclass(frozen=True)
class GroupSnapshot:
    """Everything a group's records determine, for comparing two groups."""

    group_id: str
    state: ConsumerGroupState
    group_epoch: int
    assignment_epoch: int
    members: Mapping[str, ConsumerGroupMember]
    target_assignment: Mapping[str, TopicIdPartitions]
    subscription_metadata: Mapping[str, TopicInfo]
    static_members: Mapping[str, str]
    partition_owners: Mapping[tuple[bytes, int], tuple[str, int]] = field(default_factory=dict)
