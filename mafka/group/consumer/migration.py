"""Converting a group between the classic and the consumer protocol: KIP-848's online migration.

Kafka 4 (``group.consumer.migration.policy``) lets a running group change protocol without
stopping: the first member that joins a non-empty classic group with ConsumerGroupHeartbeat
*upgrades* it to a consumer group whose classic members stay members (they keep using
JoinGroup/SyncGroup/Heartbeat, see :mod:`.classic_members`); when the last member using the
consumer protocol leaves and only classic members remain, the consumer group is *downgraded*
back to a classic group, which then rebalances.  This module holds the conversions themselves,
as pure functions over the two group models; the coordinator swaps the groups and writes the
records (the records of one conversion go to ``__consumer_offsets`` in one batch).

Contract (Kafka 4's ``GroupMetadataManager`` / ``ConsumerGroup.fromClassicGroup`` /
``ClassicGroup.fromConsumerGroup``):

* **Upgrade** (:func:`validate_online_upgrade`, :func:`consumer_group_records`): allowed only
  if the policy enables it, the classic group uses the ``consumer`` protocol type and has no
  more members than ``group.consumer.max.size``; otherwise GROUP_ID_NOT_FOUND with Kafka's
  message.  Every classic member becomes a member at epoch = the classic generation, Stable,
  with its last classic assignment as both its current and its target assignment, its
  subscription and rack read from its JoinGroup metadata, and its session timeout and
  protocols kept as ``ClassicMemberMetadata``; the group epoch and the target assignment
  epoch are the generation.  A malformed subscription or assignment, or an assignment with
  user data (a custom assignor's, which the server assignor would drop), refuses the upgrade.
  The records: the classic group's tombstone is written by the caller before these.
* **Downgrade** (:func:`downgrade_on_fence`, :func:`downgrade_with_replaced_member_allowed`,
  :func:`downgrade_of`): allowed only if every member left after the change uses the classic
  protocol, at least one remains, the policy enables it and no more than ``group.max.size``
  remain.  The classic group (:func:`classic_group`) is Stable at generation = the group epoch
  with the protocol type ``consumer``, the protocol every member votes for, and each member's
  *target* assignment encoded as its classic assignment; the consumer group's records are all
  tombstoned (:func:`group_tombstones`) in the same batch as the classic group's record
  (:func:`classic_group_record`).
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from mafka.errors import GroupIdNotFoundError, InconsistentGroupProtocolError
from mafka.group.consumer.classic_protocol import (
    classic_member_metadata,
    decode_classic_subscription,
    encode_classic_assignment,
    protocol_version,
)
from mafka.group.consumer.group_types import ConsumerGroupConfig
from mafka.group.consumer.member import (
    ConsumerGroupMember,
    MemberState,
    TopicIdPartitions,
    TopicInfo,
)
from mafka.group.consumer.records import (
    CoordinatorRecord,
    current_assignment_record,
    current_assignment_tombstone,
    group_epoch_record,
    group_epoch_tombstone,
    member_subscription_record,
    member_subscription_tombstone,
    subscription_metadata_record,
    subscription_metadata_tombstone,
    target_assignment_epoch_record,
    target_assignment_epoch_tombstone,
    target_assignment_record,
    target_assignment_tombstone,
)
from mafka.group.consumer.subscriptions import compute_subscription_metadata
from mafka.group.consumer_protocol import PROTOCOL_TYPE, decode_assignment
from mafka.group.offsets_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    encode_key,
    encode_value,
)
from mafka.group.offsets_records import MemberMetadata as MemberRecord
from mafka.group.state import GroupMetadata, GroupState, MemberMetadata

if TYPE_CHECKING:
    from mafka.group.consumer.group import ConsumerGroup

__all__ = [
    "ClassicMemberSpec",
    "Downgrade",
    "classic_group",
    "classic_group_record",
    "consumer_group_records",
    "downgrade_of",
    "downgrade_on_fence",
    "downgrade_with_replaced_member_allowed",
    "group_tombstones",
    "validate_online_upgrade",
]

log = logging.getLogger("mafka.group.consumer")


# --------------------------------------------------------------------------- upgrade


def validate_online_upgrade(classic: GroupMetadata, config: ConsumerGroupConfig) -> None:
    """Kafka's ``validateOnlineUpgrade`` for a ConsumerGroupHeartbeat join to a classic group.

    Raises:
        GroupIdNotFoundError: the group may not be upgraded (Kafka's messages).
    """
    gid = classic.group_id
    if not config.upgrade_enabled:
        reason = "online upgrade is disabled"
    elif classic.protocol_type != PROTOCOL_TYPE:
        reason = "the group does not use the consumer embedded protocol"
    elif len(classic.members) > config.max_size:
        reason = "the group size exceeds the consumer group maximum size"
    else:
        return
    log.info("Cannot upgrade classic group %s to consumer group because %s.", gid, reason)
    raise GroupIdNotFoundError(f"Cannot upgrade classic group {gid} to consumer group because {reason}.")


def consumer_group_records(classic: GroupMetadata, topics: Mapping[str, TopicInfo]) -> list[CoordinatorRecord]:
    """The records of the consumer group *classic* becomes (Kafka's ``fromClassicGroup`` then
    ``createConsumerGroupRecords``, 4.0's order: member subscriptions, the subscribed topics'
    metadata, the group epoch, the targets, the target epoch, the current assignments).

    Args:
        classic: the classic group (validated by :func:`validate_online_upgrade`).
        topics: the cluster's topics by name (assignments name topics; records use ids).

    Raises:
        GroupIdNotFoundError: a member's subscription or assignment cannot be read, an
            assignment carries user data, or two members hold one partition.
    """
    gid = classic.group_id
    generation = classic.generation_id
    members = [_member_from_classic(classic, m, topics) for m in classic.all_member_metadata()]
    owners: dict[tuple[bytes, int], str] = {}
    for member in members:
        for topic_id, parts in member.assigned_partitions.items():
            for p in parts:
                other = owners.setdefault((topic_id, p), member.member_id)
                if other != member.member_id:
                    raise _malformed(gid, f"partition {p} of topic id {topic_id.hex()} is assigned to "
                                          f"{other} and {member.member_id}")
    records = [member_subscription_record(gid, m) for m in members]
    # Classic members cannot subscribe with a regex: nothing to resolve.
    records.append(subscription_metadata_record(gid, compute_subscription_metadata(members, topics, {})))
    records.append(group_epoch_record(gid, generation))
    records += [target_assignment_record(gid, m.member_id, m.assigned_partitions) for m in members]
    records.append(target_assignment_epoch_record(gid, generation))
    records += [current_assignment_record(gid, m) for m in members]
    log.info("[GroupId %s] Converted the classic group to a consumer group.", gid)
    return records


def _member_from_classic(classic: GroupMetadata, member: MemberMetadata, topics: Mapping[str, TopicInfo]) -> ConsumerGroupMember:
    gid = classic.group_id
    protocol = classic.protocol_name if classic.protocol_name is not None else (member.protocol_names() or [''])[0]
    try:
        metadata = member.metadata(protocol)
    except ValueError:
        raise _malformed(gid, f"member {member.member_id} has no metadata for protocol {protocol}") from None
    try:
        subscription = decode_classic_subscription([(protocol, metadata)])
    except InconsistentGroupProtocolError as e:
        raise _malformed(gid, e.message) from None
    assigned: dict[bytes, frozenset[int]] = {}
    if member.assignment:
        try:
            assignment = decode_assignment(member.assignment)
        except ValueError as e:
            raise _malformed(gid, str(e)) from None
        if assignment.user_data:
            log.warning("Cannot upgrade classic group %s to consumer group: userData from a custom assignor "
                        "would be lost.", gid)
            raise GroupIdNotFoundError(
                f"Cannot upgrade classic group {gid} to consumer group because an unsupported custom assignor "
                "is in use. Please refer to the documentation or switch to a default assignor before "
                "re-attempting the upgrade."
            )
        for name, parts in assignment.assigned_partitions.items():
            info = topics.get(name)
            if info is not None and parts:
                assigned[info.topic_id] = assigned.get(info.topic_id, frozenset()) | frozenset(parts)
    return ConsumerGroupMember(
        member.member_id,
        member_epoch=classic.generation_id,
        previous_member_epoch=classic.generation_id,
        state=MemberState.STABLE,
        instance_id=member.group_instance_id,
        rack_id=subscription.rack_id,
        rebalance_timeout_ms=member.rebalance_timeout_ms,
        client_id=member.client_id,
        client_host=member.client_host,
        subscribed_topic_names=frozenset(subscription.topics),
        assigned_partitions=assigned,
        classic_member_metadata=classic_member_metadata(member.session_timeout_ms, member.supported_protocols),
    )


def _malformed(group_id: str, detail: str) -> GroupIdNotFoundError:
    log.warning("Cannot upgrade classic group %s to consumer group because the embedded consumer protocol is "
                "malformed: %s.", group_id, detail)
    return GroupIdNotFoundError(
        f"Cannot upgrade classic group {group_id} to consumer group because the embedded consumer protocol "
        "is malformed."
    )


# --------------------------------------------------------------------------- downgrade


@dataclass(frozen=True)
class ClassicMemberSpec:
    """One member of the classic group a consumer group becomes."""

    member_id: str
    instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout_ms: int
    session_timeout_ms: int
    #: its JoinGroup protocols: (name, metadata), in its order of preference
    protocols: tuple[tuple[str, bytes], ...]
    #: the partitions its classic assignment names (its target in the consumer group)
    assignment: TopicIdPartitions


@dataclass(frozen=True)
class Downgrade:
    """A consumer group converted to a classic group: what the classic group is made of.

    The consumer group that produced it is Dead (its records tombstoned); the coordinator
    builds the classic group with :func:`classic_group`, writes :func:`classic_group_record`
    in the same batch as the tombstones, and rebalances it if ``rebalance``.
    """

    group_id: str
    generation_id: int
    members: tuple[ClassicMemberSpec, ...]
    #: topic id → name, to write the classic assignments
    topic_names: Mapping[bytes, str]
    rebalance: bool
    reason: str


def _remaining_all_classic(group: ConsumerGroup, leaving: Iterable[str]) -> bool:
    """Kafka's ``allMembersUseClassicProtocolExcept``: every member not in *leaving* uses the classic protocol."""
    gone = set(leaving)
    return all(m.uses_classic_protocol for mid, m in group.members.items() if mid not in gone)


def downgrade_on_fence(group: ConsumerGroup, fenced: Sequence[ConsumerGroupMember], reason: str) -> Downgrade | None:
    """Kafka's ``validateOnlineDowngradeWithFencedMembers``: the downgrade fencing *fenced* makes,
    or None if the group stays a consumer group (fencing then removes the members as usual)."""
    gid = group.group_id
    leaving = {m.member_id for m in fenced}
    if not _remaining_all_classic(group, leaving):
        return None
    if len(group.members) - len(leaving) <= 0:
        log.debug("Skip downgrading the consumer group %s to classic group because it's empty.", gid)
        return None
    if not group.config.downgrade_enabled:
        log.info("Cannot downgrade consumer group %s to classic group because the online downgrade is disabled.", gid)
        return None
    if len(group.members) - len(leaving) > group.config.classic_max_size:
        log.info("Cannot downgrade consumer group %s to classic group because its group size is greater than "
                 "classic group max size.", gid)
        return None
    try:
        return downgrade_of(group, leaving, None, True, reason)
    except GroupIdNotFoundError:
        return None  # logged; the members are fenced as usual and the group stays a consumer group


def downgrade_with_replaced_member_allowed(group: ConsumerGroup, replaced: ConsumerGroupMember) -> bool:
    """Kafka's ``validateOnlineDowngradeWithReplacedMember``: a classic static member replacing
    *replaced* (the last member using the consumer protocol) downgrades the group."""
    gid = group.group_id
    if replaced.uses_classic_protocol or not _remaining_all_classic(group, {replaced.member_id}):
        return False
    if not group.config.downgrade_enabled:
        log.info("Cannot downgrade consumer group %s to classic group because the online downgrade is disabled.", gid)
        return False
    if len(group.members) > group.config.classic_max_size:
        log.info("Cannot downgrade consumer group %s to classic group because its group size is greater than "
                 "classic group max size.", gid)
        return False
    return True


def downgrade_of(
    group: ConsumerGroup,
    leaving: Iterable[str],
    joining: ConsumerGroupMember | None,
    rebalance: bool,
    reason: str,
) -> Downgrade:
    """The classic group *group* becomes without the *leaving* member ids and, if given, with the
    classic static member *joining* in place of the member holding its instance id (which
    hands it its target assignment).  Computed from *group* as it is (before any record of the
    change is applied), so the generation is the group epoch before the change.

    Raises:
        GroupIdNotFoundError: the classic group cannot be built (a member's protocols cannot be read).
    """
    gone = set(leaving)
    targets = group.target_assignment
    specs: list[ClassicMemberSpec] = []
    replaced_id: str | None = None
    if joining is not None:
        if joining.instance_id is None or joining.instance_id not in group.static_members:
            raise ValueError("the joining member must replace a static member of the group")
        replaced_id = group.static_members[joining.instance_id]
    for member_id in sorted(group.members):
        member = group.members[member_id]
        if member_id in gone or member_id == replaced_id:
            continue
        specs.append(_spec(member, targets.get(member_id, {})))
    if joining is not None and replaced_id is not None:
        specs.append(_spec(joining, targets.get(replaced_id, {})))
    names = {info.topic_id: name for name, info in group.subscription_metadata.items()}
    downgrade = Downgrade(group.group_id, group.group_epoch, tuple(specs), names, rebalance, reason)
    try:
        classic_group(downgrade, 0)
    except ValueError as e:
        log.warning("Cannot downgrade the consumer group %s: fail to parse the Consumer Protocol %s: %s",
                    group.group_id, PROTOCOL_TYPE, e)
        raise GroupIdNotFoundError(f"Cannot downgrade the classic group {group.group_id}: {e}.") from None
    return downgrade


def _spec(member: ConsumerGroupMember, target: TopicIdPartitions) -> ClassicMemberSpec:
    classic = member.classic_member_metadata
    if classic is None:
        raise ValueError(f"member {member.member_id} does not use the classic protocol")
    return ClassicMemberSpec(
        member.member_id,
        member.instance_id,
        member.client_id,
        member.client_host,
        member.rebalance_timeout_ms,
        classic.session_timeout_ms,
        tuple((p.name, p.metadata) for p in classic.supported_protocols),
        dict(target),
    )


def group_tombstones(group: ConsumerGroup, replaced: tuple[str, str] | None = None) -> list[CoordinatorRecord]:
    """Kafka's ``createGroupTombstoneRecords``: every record of *group* deleted, in the order a
    replay accepts (current assignments, targets, the target epoch, subscriptions, the topics'
    metadata, the group epoch).  With ``replaced = (old id, new id)`` the member *old id* is
    named *new id* (``createGroupTombstoneRecordsWithReplacedMember``: its replacement's records
    were written just before)."""
    gid = group.group_id

    def renamed(member_id: str) -> str:
        return replaced[1] if replaced is not None and member_id == replaced[0] else member_id

    members = [renamed(m) for m in sorted(group.members)]
    in_target = sorted({renamed(m) for m in group.target_assignment} | set(members))
    records = [current_assignment_tombstone(gid, m) for m in members]
    records += [target_assignment_tombstone(gid, m) for m in in_target]
    records.append(target_assignment_epoch_tombstone(gid))
    records += [member_subscription_tombstone(gid, m) for m in members]
    records.append(subscription_metadata_tombstone(gid))
    records.append(group_epoch_tombstone(gid))
    return records


def classic_group(downgrade: Downgrade, now_ms: int) -> tuple[GroupMetadata, dict[str, bytes]]:
    """Kafka's ``ClassicGroup.fromConsumerGroup``: the Stable classic group and each member's
    assignment (also set on the members), encoded in the version of its chosen protocol's metadata.

    Raises:
        ValueError: the members share no protocol, or a metadata cannot be read.
    """
    group = GroupMetadata(
        downgrade.group_id,
        state=GroupState.STABLE,
        generation_id=downgrade.generation_id,
        protocol_type=PROTOCOL_TYPE,
        current_state_timestamp_ms=now_ms,
    )
    for spec in downgrade.members:
        group.add(MemberMetadata(
            member_id=spec.member_id,
            group_instance_id=spec.instance_id,
            client_id=spec.client_id,
            client_host=spec.client_host,
            rebalance_timeout_ms=spec.rebalance_timeout_ms,
            session_timeout_ms=spec.session_timeout_ms,
            protocol_type=PROTOCOL_TYPE,
            supported_protocols=list(spec.protocols),
        ))
    group.protocol_name = group.select_protocol()
    assignment: dict[str, bytes] = {}
    for spec in downgrade.members:
        member = group.get(spec.member_id)
        version = protocol_version(member.metadata(group.protocol_name))
        member.assignment = encode_classic_assignment(spec.assignment, downgrade.topic_names, version)
        assignment[spec.member_id] = member.assignment
    return group, assignment


def classic_group_record(group: GroupMetadata, assignment: Mapping[str, bytes]) -> tuple[bytes, bytes | None]:
    """Kafka's ``createClassicGroupRecords``: the group's ``GroupMetadata`` record (as
    :meth:`~mafka.group.metadata_manager.GroupMetadataManager.store_group` writes it)."""
    protocol = group.protocol_name
    value = GroupMetadataValue(
        protocol_type=group.protocol_type or "",
        generation=group.generation_id,
        protocol=protocol,
        leader=group.leader_id if group.members else None,
        current_state_timestamp=(
            group.current_state_timestamp_ms if group.current_state_timestamp_ms is not None else -1
        ),
        members=[
            MemberRecord(
                member_id=m.member_id,
                group_instance_id=m.group_instance_id,
                client_id=m.client_id,
                client_host=m.client_host,
                rebalance_timeout=m.rebalance_timeout_ms,
                session_timeout=m.session_timeout_ms,
                subscription=m.metadata(protocol) if protocol is not None else b"",
                assignment=assignment.get(m.member_id, b""),
            )
            for m in group.all_member_metadata()
        ],
    )
    return encode_key(GroupMetadataKey(group.group_id)), encode_value(value)
