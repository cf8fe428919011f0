"""Members using the classic protocol inside a ``consumer`` group (KIP-848's online migration).

A consumer group upgraded from a classic group (:mod:`.migration`), or joined by a consumer
that still uses ``group.protocol=classic``, holds members that speak JoinGroup, SyncGroup,
Heartbeat and LeaveGroup.  Kafka 4's ``GroupMetadataManager`` serves them from the consumer
group itself: they are members like the others (their subscription decoded from their
JoinGroup metadata, their partitions from the group's target assignment and reconciliation),
with ``ClassicMemberMetadata`` persisted beside them.  This module is that half of the group,
as functions over a :class:`~mafka.group.consumer.group.ConsumerGroup` (it uses the group's
heartbeat steps and record helpers, its friend methods); like the group's own methods they
apply their records before returning them, and the caller writes them before answering.

Contract (Kafka 4's ``classicGroupJoinToConsumerGroup``, ``classicGroupSyncToConsumerGroup``,
``classicGroupHeartbeatToConsumerGroup``, ``classicGroupLeaveToConsumerGroup``):

* **JoinGroup** (:func:`join`): refused with INCONSISTENT_GROUP_PROTOCOL when
  ``group.consumer.migration.policy`` is ``disabled``, when the protocol type is not
  ``consumer`` or when no protocol is supported by every classic member; GROUP_MAX_SIZE_REACHED
  past ``group.consumer.max.size``; MEMBER_ID_REQUIRED (with a new member id) for a dynamic
  member without one on JoinGroup v4+.  Otherwise the member is created or updated (a static
  member joining without a member id replaces its predecessor, which keeps no claim), its
  subscription may bump the group epoch and the target assignment, and it is reconciled with
  the partitions its metadata says it owns (an eager member owns none: it revoked them before
  rejoining).  The answer comes at once (no barrier): generation = the member epoch, the
  member's first protocol, no leader (every classic member is a follower: the coordinator
  assigns).  A static member replacing the last member using the consumer protocol
  downgrades the group instead (:func:`~.migration.downgrade_with_replaced_member_allowed`).
* **SyncGroup** (:func:`sync`): UNKNOWN_MEMBER_ID (not a member, or not a classic one),
  FENCED_INSTANCE_ID, ILLEGAL_GENERATION (not the member epoch), REBALANCE_IN_PROGRESS when
  a newer target assignment waits (unless the member still has to revoke partitions, which its
  assignment without them tells it); else its assigned partitions as a
  ``ConsumerProtocolAssignment``.
* **Heartbeat** (:func:`heartbeat`): the same member checks; REBALANCE_IN_PROGRESS when the
  member must rejoin: its epoch is behind the target assignment's, it must revoke partitions,
  or partitions it waited for are now free.
* **LeaveGroup** (:func:`leave`): every named member (by member id, or by instance id, an
  administrative removal) is fenced at once with one group epoch bump, or the group is
  downgraded if only classic members remain.
* **Timers** (:class:`ClassicTimers`): a member told to rejoin must rejoin within its
  rebalance timeout, a member that joined must sync within it; else it is fenced.  Its session
  timeout is its own (``session.timeout.ms`` of its JoinGroup).
* Commits and fetches of classic members are checked against the member epoch as their
  generation, answering ILLEGAL_GENERATION (see :mod:`.manager`).
"""

from __future__ import annotations

import logging
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING

from mafka.errors import (
    ErrorCode,
    FencedInstanceIdError,
    GroupMaxSizeReachedError,
    IllegalGenerationError,
    InconsistentGroupProtocolError,
    KafkaError,
    RebalanceInProgressError,
    UnknownMemberIdError,
)
from mafka.group.consumer.classic_protocol import (
    classic_member_metadata,
    decode_classic_subscription,
    encode_classic_assignment,
    owned_partitions,
    protocol_version,
)
from mafka.group.consumer.group_types import ConsumerGroupState, new_member_id
from mafka.group.consumer.member import ConsumerGroupMember, MemberState, TopicInfo
from mafka.group.consumer.migration import (
    downgrade_of,
    downgrade_with_replaced_member_allowed,
    group_tombstones,
)
from mafka.group.consumer.records import CoordinatorRecord
from mafka.group.consumer_protocol import PROTOCOL_TYPE

if TYPE_CHECKING:
    from mafka.group.consumer.group import ConsumerGroup

__all__ = [
    "ClassicJoinRequest",
    "ClassicJoinResult",
    "ClassicSyncResult",
    "ClassicTimers",
    "heartbeat",
    "join",
    "leave",
    "supports_classic_protocols",
    "sync",
    "waiting_on_unreleased_partition",
]

log = logging.getLogger("mafka.group.consumer")

UNKNOWN_MEMBER_ID = ""


# --------------------------------------------------------------------------- timers


class ClassicTimers:
    """The join and sync timers of a group's classic members (soft state, not in the records).

    Kafka's ``scheduleConsumerGroupJoinTimeoutIfAbsent`` (a member told to rejoin) and
    ``scheduleConsumerGroupSyncTimeout`` (a member that joined); :meth:`due` hands the group the
    members to fence.
    """

    JOIN_REASON = "the classic member failed to join within the rebalance timeout."
    SYNC_REASON = "the member failed to sync within timeout."

    def __init__(self) -> None:
        self._join: dict[str, int] = {}
        self._sync: dict[str, int] = {}

    def expect_join(self, member_id: str, deadline_ms: int) -> None:
        """The member must rejoin by *deadline_ms* (an earlier deadline already set stays)."""
        self._join.setdefault(member_id, deadline_ms)

    def joined(self, member_id: str, sync_deadline_ms: int) -> None:
        """The member rejoined: it must now sync by *sync_deadline_ms*."""
        self._join.pop(member_id, None)
        self._sync[member_id] = sync_deadline_ms

    def synced(self, member_id: str) -> None:
        self._sync.pop(member_id, None)

    def forget(self, member_id: str) -> None:
        self._join.pop(member_id, None)
        self._sync.pop(member_id, None)

    def clear(self) -> None:
        self._join.clear()
        self._sync.clear()

    def due(self, now_ms: int) -> list[tuple[int, str, str]]:
        """``(deadline, member id, reason)`` of every timer due at *now_ms*; they are removed."""
        out: list[tuple[int, str, str]] = []
        for timers, reason in ((self._join, self.JOIN_REASON), (self._sync, self.SYNC_REASON)):
            for member_id, deadline in list(timers.items()):
                if deadline <= now_ms:
                    del timers[member_id]
                    out.append((deadline, member_id, reason))
        return out

    def next_deadline_ms(self) -> int | None:
        return min([*self._join.values(), *self._sync.values()], default=None)

    def pending(self, member_id: str) -> tuple[int | None, int | None]:
        """The member's join and sync deadlines (None: not set)."""
        return self._join.get(member_id), self._sync.get(member_id)


# --------------------------------------------------------------------------- checks


def supports_classic_protocols(group: ConsumerGroup, protocol_type: str, protocols: Sequence[str]) -> bool:
    """Kafka's ``supportsClassicProtocols``: the ``consumer`` type, and one of *protocols*
    supported by every member using the classic protocol (any, if none does)."""
    if protocol_type != PROTOCOL_TYPE:
        return False
    if group.state is ConsumerGroupState.EMPTY:
        return bool(protocols)
    classic = [m.classic_member_metadata for m in group.members.values() if m.classic_member_metadata is not None]
    counts: dict[str, int] = {}
    for metadata in classic:
        for name in {p.name for p in metadata.supported_protocols}:
            counts[name] = counts.get(name, 0) + 1
    return any(counts.get(name, 0) == len(classic) for name in protocols)


def waiting_on_unreleased_partition(group: ConsumerGroup, member: ConsumerGroupMember) -> bool:
    """Kafka's ``waitingOnUnreleasedPartition``: a partition of the member's target it does not
    have yet is still owned by another member."""
    if member.state is not MemberState.UNRELEASED_PARTITIONS:
        return False
    for topic_id, parts in group.target_assignment.get(member.member_id, {}).items():
        assigned = member.assigned_partitions.get(topic_id, frozenset())
        if any(p not in assigned and group.current_partition_epoch(topic_id, p) != -1 for p in parts):
            return True
    return False


def _classic_member(group: ConsumerGroup, member_id: str, instance_id: str | None) -> ConsumerGroupMember:
    """Kafka's ``validateConsumerGroupMember`` then ``throwIfMemberDoesNotUseClassicProtocol``."""
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            raise UnknownMemberIdError(f"Member {member_id} is not a member of group {group.group_id}.")
    else:
        static_id = group.static_members.get(instance_id)
        found = None if static_id is None else group.members.get(static_id)
        if found is None:
            raise UnknownMemberIdError(
                f"Member with instance id {instance_id} is not a member of group {group.group_id}."
            )
        _throw_if_fenced(found, member_id, instance_id)
        member = found
    if not member.uses_classic_protocol:
        raise UnknownMemberIdError(f"Member {member.member_id} does not use the classic protocol.")
    return member


def _throw_if_fenced(member: ConsumerGroupMember, member_id: str, instance_id: str) -> None:
    if member.member_id != member_id:
        raise FencedInstanceIdError(
            f"Static member {member_id} with instance id {instance_id} was fenced by member {member.member_id}."
        )


def _throw_if_generation_unmatched(member: ConsumerGroupMember, generation_id: int) -> None:
    if member.member_epoch != generation_id:
        raise IllegalGenerationError(
            f"The request generation id {generation_id} is not equal to the member epoch "
            f"{member.member_epoch} of member {member.member_id}."
        )


def _session_timeout_ms(member: ConsumerGroupMember) -> int:
    assert member.classic_member_metadata is not None
    return member.classic_member_metadata.session_timeout_ms


# --------------------------------------------------------------------------- JoinGroup


@dataclass(frozen=True)
class ClassicJoinRequest:
    """A JoinGroup's fields, plus what its header and connection tell."""

    member_id: str
    instance_id: str | None
    #: JoinGroup v4+ from a dynamic member (KIP-394): a member without id gets MEMBER_ID_REQUIRED
    require_known_member_id: bool
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    protocol_type: str
    protocols: Sequence[tuple[str, bytes]]


@dataclass(frozen=True)
class ClassicJoinResult:
    """A JoinGroup's answer and the records applied (to write before answering)."""

    error: ErrorCode
    member_id: str
    generation_id: int = -1
    protocol_name: str | None = None
    records: tuple[CoordinatorRecord, ...] = ()
    message: str | None = None


def join(
    group: ConsumerGroup, request: ClassicJoinRequest, now_ms: int, topics: Mapping[str, TopicInfo]
) -> ClassicJoinResult:
    """A classic member's JoinGroup to *group* (see the module docstring); an error applies nothing."""
    try:
        return _join(group, request, now_ms, topics)
    except KafkaError as e:
        return ClassicJoinResult(e.code, request.member_id, message=e.message)


def _join(
    group: ConsumerGroup, request: ClassicJoinRequest, now_ms: int, topics: Mapping[str, TopicInfo]
) -> ClassicJoinResult:
    gid = group.group_id
    config = group.config
    if config.migration_policy == "disabled":
        log.info("Cannot join the consumer group %s with the classic protocol because the group migration is "
                 "disabled.", gid)
        raise InconsistentGroupProtocolError(
            f"Cannot join the consumer group {gid} with the classic protocol because the group migration is disabled."
        )
    unknown = request.member_id == UNKNOWN_MEMBER_ID
    member_id = new_member_id() if unknown else request.member_id
    instance_id = request.instance_id
    if (instance_id is None or instance_id not in group.static_members) and (
        len(group.members) >= config.max_size and member_id not in group.members
    ):
        raise GroupMaxSizeReachedError(
            f"The consumer group has reached its maximum capacity of {config.max_size} members."
        )
    if not supports_classic_protocols(group, request.protocol_type, [name for name, _ in request.protocols]):
        raise InconsistentGroupProtocolError(f"Member {member_id}'s protocols are not supported.")
    if unknown and request.require_known_member_id:
        log.info("[GroupId %s] Dynamic member with unknown member id joins the consumer group. Created a new "
                 "member id %s and requesting the member to rejoin with this id.", gid, member_id)
        return ClassicJoinResult(ErrorCode.MEMBER_ID_REQUIRED, member_id)

    records: list[CoordinatorRecord] = []
    static_id = None if instance_id is None else group.static_members.get(instance_id)
    existing = None if static_id is None else group.members.get(static_id)
    replaced: str | None = None
    if instance_id is None:
        member = group.members.get(member_id)
        if member is None:
            log.info("[GroupId %s] Member %s joins the consumer group using the classic protocol.", gid, member_id)
            member = ConsumerGroupMember(member_id)
    elif unknown:
        if existing is None:
            log.info("[GroupId %s] Static member %s with instance id %s joins the consumer group using the classic "
                     "protocol.", gid, member_id, instance_id)
            member = group.members.get(member_id) or ConsumerGroupMember(member_id)
        else:
            member = group._replacement(existing, member_id, records)
            replaced = existing.member_id
    else:
        if existing is None:
            raise UnknownMemberIdError(f"Instance id {instance_id} is unknown.")
        _throw_if_fenced(existing, member_id, instance_id)
        member = existing
    downgrade = existing is not None and downgrade_with_replaced_member_allowed(group, existing)

    subscription = decode_classic_subscription(request.protocols)
    updated = replace(
        member,
        instance_id=instance_id if instance_id is not None else member.instance_id,
        rack_id=subscription.rack_id if subscription.rack_id is not None else member.rack_id,
        rebalance_timeout_ms=(
            request.rebalance_timeout_ms if request.rebalance_timeout_ms != -1 else member.rebalance_timeout_ms
        ),
        subscribed_topic_names=frozenset(subscription.topics),
        subscribed_topic_regex=None,  # a classic member cannot subscribe with a regex
        client_id=request.client_id,
        client_host=request.client_host,
        classic_member_metadata=classic_member_metadata(request.session_timeout_ms, request.protocols),
    )
    owned = owned_partitions(subscription, topics)
    protocol_name = request.protocols[0][0]
    group_epoch, metadata = group._update_subscription(member, updated, replaced, topics, records)

    if downgrade:
        assert existing is not None
        # Kafka reconciles with the current target unless the subscription changed (then the
        # classic group rebalances anyway).
        rebalance = group.assignment_epoch < group_epoch
        reconciled = updated
        if not rebalance:
            target = group.target_assignment.get(updated.member_id)
            if target is None:
                target = group.target_assignment.get(existing.member_id, {})
            reconciled = group._reconcile(updated, group.assignment_epoch, target, owned, records)
        conversion = downgrade_of(
            group, (), reconciled, rebalance,
            f"Downgrade group {gid} from consumer to classic with stale assignment.",
        )
        records += group_tombstones(group, (existing.member_id, reconciled.member_id))
        group._apply(records)
        group.converted_to_classic = conversion
        group._clear_timers()
        log.info("[GroupId %s] Converted the consumer group to a classic group.", gid)
        return ClassicJoinResult(ErrorCode.NONE, reconciled.member_id, reconciled.member_epoch, protocol_name,
                                 tuple(records))

    target_epoch, target = group._update_target(updated, replaced, group_epoch, metadata, records)
    reconciled = group._reconcile(updated, target_epoch, target, owned, records)
    group._apply(records)
    if replaced is not None:
        group._forget_timers(replaced)
    # No rebalance timer for a classic member: the join and sync timers stand for it.
    group._forget_timers(member_id)
    group.schedule_session_timeout(member_id, now_ms + request.session_timeout_ms)
    group.classic_timers.joined(member_id, now_ms + request.rebalance_timeout_ms)
    return ClassicJoinResult(ErrorCode.NONE, reconciled.member_id, reconciled.member_epoch, protocol_name,
                             tuple(records))


# --------------------------------------------------------------------------- SyncGroup / Heartbeat


@dataclass(frozen=True)
class ClassicSyncResult:
    error: ErrorCode
    assignment: bytes = b""
    protocol_name: str | None = None
    message: str | None = None


def sync(
    group: ConsumerGroup,
    member_id: str,
    instance_id: str | None,
    generation_id: int,
    now_ms: int,
    topic_names: Mapping[bytes, str],
) -> ClassicSyncResult:
    """A classic member's SyncGroup: its assigned partitions (no record is written).

    Args:
        topic_names: topic id → name, to write the assignment.
    """
    try:
        member = _classic_member(group, member_id, instance_id)
        _throw_if_generation_unmatched(member, generation_id)
        if group.assignment_epoch > member.member_epoch and member.state is not MemberState.UNREVOKED_PARTITIONS:
            # A newer target assignment waits; a member still revoking is told by its assignment.
            group.classic_timers.expect_join(member.member_id, now_ms + member.rebalance_timeout_ms)
            raise RebalanceInProgressError(
                f"A new rebalance is triggered in group {group.group_id} and member {member.member_id} "
                "should rejoin to catch up."
            )
    except KafkaError as e:
        return ClassicSyncResult(e.code, message=e.message)
    assert member.classic_member_metadata is not None
    first = member.classic_member_metadata.supported_protocols[0]
    try:
        version = protocol_version(first.metadata)
    except ValueError:
        return ClassicSyncResult(ErrorCode.UNKNOWN_SERVER_ERROR,
                                 message="Malformed embedded consumer protocol in version deserialization.")
    group.classic_timers.synced(member.member_id)
    group.schedule_session_timeout(member.member_id, now_ms + _session_timeout_ms(member))
    return ClassicSyncResult(
        ErrorCode.NONE, encode_classic_assignment(member.assigned_partitions, topic_names, version), first.name
    )


def heartbeat(
    group: ConsumerGroup, member_id: str, instance_id: str | None, generation_id: int, now_ms: int
) -> ErrorCode:
    """A classic member's Heartbeat: NONE, REBALANCE_IN_PROGRESS (rejoin) or the member's error."""
    try:
        member = _classic_member(group, member_id, instance_id)
        _throw_if_generation_unmatched(member, generation_id)
    except KafkaError as e:
        return e.code
    group.schedule_session_timeout(member.member_id, now_ms + _session_timeout_ms(member))
    if (
        member.member_epoch < group.assignment_epoch
        or member.state is MemberState.UNREVOKED_PARTITIONS
        or (member.state is MemberState.UNRELEASED_PARTITIONS and not waiting_on_unreleased_partition(group, member))
    ):
        group.classic_timers.expect_join(member.member_id, now_ms + member.rebalance_timeout_ms)
        return ErrorCode.REBALANCE_IN_PROGRESS
    return ErrorCode.NONE


# --------------------------------------------------------------------------- LeaveGroup


def leave(
    group: ConsumerGroup, leaving: Sequence[tuple[str, str | None]], topics: Mapping[str, TopicInfo]
) -> tuple[list[tuple[str, str | None, int]], tuple[CoordinatorRecord, ...]]:
    """LeaveGroup for (member id, instance id) pairs: one error per pair, and the records of
    fencing the valid ones together (applied; they may downgrade the group)."""
    gid = group.group_id
    results: list[tuple[str, str | None, int]] = []
    valid: dict[str, ConsumerGroupMember] = {}
    for member_id, instance_id in leaving:
        try:
            if instance_id is None:
                member = group.members.get(member_id)
                if member is None:
                    raise UnknownMemberIdError(f"Member {member_id} is not a member of group {gid}.")
                log.info("[GroupId %s] Dynamic member %s has left group through explicit `LeaveGroup` request.",
                         gid, member_id)
            else:
                static_id = group.static_members.get(instance_id)
                found = None if static_id is None else group.members.get(static_id)
                if found is None:
                    raise UnknownMemberIdError(f"Instance id {instance_id} is unknown.")
                if member_id != UNKNOWN_MEMBER_ID:  # "" is an administrative removal by instance id
                    _throw_if_fenced(found, member_id, instance_id)
                member = found
                log.info("[GroupId %s] Static member %s with instance id %s has left group through explicit "
                         "`LeaveGroup` request.", gid, member_id, instance_id)
        except KafkaError as e:
            results.append((member_id, instance_id, e.code))
            continue
        results.append((member_id, instance_id, ErrorCode.NONE))
        valid[member.member_id] = member
    return results, group.fence_members(list(valid.values()), topics)
