"""The group coordinator's shared vocabulary: its configuration, the ``__consumer_offsets``
seam, the answers it gives, and the per-group entry its parts pass between them.

Owns no behaviour beyond building values: :class:`CoordinatorConfig`, the
:class:`OffsetsLog` protocol the broker implements, the request results
(:class:`JoinResult`, :class:`SyncResult`, :class:`GroupSummary`, ...), and
:class:`GroupEntry` — a loaded group plus what the coordinator keeps beside it
(parked JoinGroup/SyncGroup responses, timers, replaced static member ids).
:mod:`mafka.group.coordinator` re-exports the public names.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Protocol

from mafka.errors import ErrorCode
from mafka.group.consumer.group_types import ConsumerGroupConfig
from mafka.group.share.group_types import ShareGroupConfig
from mafka.group.state import GroupMetadata, MemberMetadata
from mafka.timers import TimerHandle

__all__ = [
    "DEAD_SUMMARY",
    "EMPTY_SUMMARY",
    "INVALID_OFFSET",
    "NEW_MEMBER_JOIN_TIMEOUT_MS",
    "NO_GENERATION",
    "UNKNOWN_MEMBER_ID",
    "CoordinatorConfig",
    "GroupEntry",
    "GroupOverview",
    "GroupSummary",
    "JoinCallback",
    "JoinResult",
    "MemberSummary",
    "OffsetFetchEntry",
    "OffsetsLog",
    "SyncCallback",
    "SyncResult",
    "join_result",
]

UNKNOWN_MEMBER_ID = ""
NO_GENERATION = -1
INVALID_OFFSET = -1
#: How many replaced static member ids a group remembers (to fence them, see :meth:`GroupEntry.fenced`).
_REPLACED_STATIC_KEPT = 64
#: Kafka's ``GroupCoordinator.NewMemberJoinTimeoutMs``: a new member's join expires after 5 min.
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000


class OffsetsLog(Protocol):
    def append(
        self,
        partition: int,
        records: Sequence[tuple[bytes, bytes | None]],
        done: Callable[[int, int | None], None],
        *,
        producer_id: int = -1,
        producer_epoch: int = -1,
    ) -> None:
        """Append ``(key, value)`` records to ``__consumer_offsets``-``partition``
        with acks=all; later call ``done(error_code, base_offset)``.

        With ``producer_id >= 0`` the records form one *transactional* batch of that
        producer and epoch (a TxnOffsetCommit); the producer's epoch is fenced as for
        any of its batches, its sequence is not checked (Kafka's ``AppendOrigin.Coordinator``).
        """


@dataclass(frozen=True)
class CoordinatorConfig:
    offsets_partitions: int = 50
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 3000
    max_size: int = 2**31 - 1
    offset_metadata_max_bytes: int = 4096
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000
    #: KIP-848 ``consumer`` groups' settings (``group.consumer.*``)
    consumer: ConsumerGroupConfig = field(default_factory=ConsumerGroupConfig)
    #: ``group.coordinator.rebalance.protocols``: "consumer" enables ConsumerGroupHeartbeat,
    #: "share" ShareGroupHeartbeat
    rebalance_protocols: tuple[str, ...] = ("classic", "consumer", "share")
    #: KIP-932 share groups' settings (``group.share.*``)
    share: ShareGroupConfig = field(default_factory=ShareGroupConfig)


@dataclass(frozen=True)
class JoinResult:
    error: int
    member_id: str = UNKNOWN_MEMBER_ID
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    #: (member id, group instance id, metadata) — only the leader gets them.
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)


@dataclass(frozen=True)
class SyncResult:
    error: int
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


@dataclass(frozen=True)
class MemberSummary:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupSummary:
    state: str
    protocol_type: str
    protocol: str
    members: list[MemberSummary]


@dataclass(frozen=True)
class GroupOverview:
    group_id: str
    protocol_type: str
    state: str
    #: ``classic`` or ``consumer`` (ListGroups v5)
    group_type: str = "classic"


@dataclass(frozen=True)
class OffsetFetchEntry:
    offset: int
    leader_epoch: int
    metadata: str
    error: int


DEAD_SUMMARY = GroupSummary("Dead", "", "", [])
#: Kafka's ``GroupCoordinator.EmptyGroup``: what DescribeGroups carries beside an error.
EMPTY_SUMMARY = GroupSummary("", "", "", [])

JoinCallback = Callable[[JoinResult], None]
SyncCallback = Callable[[SyncResult], None]


def join_result(group: GroupMetadata, member: MemberMetadata, with_members: bool = True) -> JoinResult:
    """A successful JoinGroup answer for ``member`` of ``group`` (the member list only for the leader)."""
    members = group.current_member_metadata() if with_members and group.is_leader(member.member_id) else []
    return JoinResult(
        ErrorCode.NONE,
        member.member_id,
        group.generation_id,
        group.protocol_type,
        group.protocol_name,
        group.leader_id or "",
        members,
    )


@dataclass(eq=False)
class GroupEntry:
    """A group and what the coordinator keeps beside it: parked calls and timers."""

    group: GroupMetadata
    partition: int
    join_callbacks: dict[str, JoinCallback] = field(default_factory=dict)
    sync_callbacks: dict[str, SyncCallback] = field(default_factory=dict)
    heartbeat_timers: dict[str, TimerHandle] = field(default_factory=dict)
    pending_timers: dict[str, TimerHandle] = field(default_factory=dict)
    join_timer: TimerHandle | None = None
    #: member ids replaced by a newer instance of the same static member → its group.instance.id
    #: (bounded): requests that carry no instance id (OffsetCommit v3) are still told FENCED.
    replaced_static: dict[str, str] = field(default_factory=dict)
    #: Set while an initial (delayed) join is scheduled: the rebalance time still allowed.
    initial_remaining_ms: int | None = None

    def fenced(self, member_id: str, group_instance_id: str | None) -> bool:
        """Kafka's ``isStaticMemberFenced``, plus: a member id replaced by a newer instance of
        its static member is fenced even when the request carries no instance id."""
        group = self.group
        if group.is_static_member_fenced(member_id, group_instance_id):
            return True
        return member_id not in group.members and member_id in self.replaced_static

    def note_replaced(self, old_id: str, instance_id: str) -> None:
        """Remember that ``old_id`` was replaced by a newer instance of ``instance_id`` (bounded)."""
        self.replaced_static[old_id] = instance_id
        while len(self.replaced_static) > _REPLACED_STATIC_KEPT:
            del self.replaced_static[next(iter(self.replaced_static))]
