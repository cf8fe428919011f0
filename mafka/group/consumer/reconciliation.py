"""Reconciling one member towards its target assignment: Kafka 4's ``CurrentAssignmentBuilder``.

The coordinator never gives a partition to a member while another member may still consume
it.  So a member moves towards its target in steps, one per heartbeat:

1. **Revoke.**  Partitions the member has but its target does not are moved to
   *pending revocation*; the member stays at its epoch in ``UNREVOKED_PARTITIONS`` (and is
   told its assignment without them) until a heartbeat reports them no longer owned.
   Partitions it keeps stay assigned throughout: a member never loses a partition its
   target still holds.
2. **Assign.**  Once nothing is left to revoke, the member moves to the target epoch and is
   given the target partitions that no other member owns any more; if some are still owned
   (their owner has not revoked them yet) it waits in ``UNRELEASED_PARTITIONS`` and picks
   them up on a later heartbeat.
3. **Stable.**  With everything assigned the member is ``STABLE`` at the target epoch.  A
   member whose target only keeps what it has (nothing to revoke, nothing to wait for) goes
   there at once with the new epoch.

:func:`reconcile` is the whole algorithm, a pure function; the group decides when to call it
(only for a member that is not yet reconciled to the target epoch, on its own heartbeat).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from mafka.errors import FencedMemberEpochError
from mafka.group.consumer.member import (
    ConsumerGroupMember,
    MemberState,
    TopicIdPartitions,
    partitions_of,
    partitions_union,
)

__all__ = ["PartitionEpoch", "reconcile"]

#: (topic id, partition) → the epoch of the member owning it, or -1 if no member does
PartitionEpoch = Callable[[bytes, int], int]


def reconcile(
    member: ConsumerGroupMember,
    target_epoch: int,
    target: TopicIdPartitions,
    current_partition_epoch: PartitionEpoch,
    owned: TopicIdPartitions | None,
) -> ConsumerGroupMember:
    """The member's next state towards *target* (the member itself if it cannot move yet).

    Args:
        member: the member as the group knows it now.
        target_epoch: the group's target assignment epoch.
        target: the member's partitions in that target assignment.
        current_partition_epoch: who owns what now (any member, including this one).
        owned: the partitions the member reported owning in this heartbeat, or None if the
            heartbeat did not carry them (then nothing counts as revoked).

    Raises:
        FencedMemberEpochError: the member is in a state this coordinator does not know and
            still reports partitions (it must give them all up and rejoin).
    """
    state = member.state
    if state is MemberState.STABLE:
        if member.member_epoch != target_epoch:
            return _next_assignment(member, member.member_epoch, target_epoch, target, current_partition_epoch, owned)
        return member
    if state is MemberState.UNREVOKED_PARTITIONS:
        if _owns_any(owned, member.partitions_pending_revocation):
            return member
        # Revocation acknowledged: the member may move past the epoch it was held at.
        return _next_assignment(member, member.member_epoch + 1, target_epoch, target, current_partition_epoch, owned)
    if state is MemberState.UNRELEASED_PARTITIONS:
        return _next_assignment(member, member.member_epoch, target_epoch, target, current_partition_epoch, owned)
    # UNKNOWN: written by a newer coordinator; start the member over from no partitions.
    if owned is None or owned:
        raise FencedMemberEpochError(
            "The consumer group member is in a unknown state. "
            "The member must abandon all its partitions and rejoin."
        )
    return _next_assignment(member, target_epoch, target_epoch, target, current_partition_epoch, owned)


def _owns_any(owned: TopicIdPartitions | None, partitions: TopicIdPartitions) -> bool:
    """Kafka's ``ownsRevokedPartitions``: does the member still report any of *partitions*?"""
    if owned is None:
        return True
    return any(parts & partitions.get(topic_id, frozenset()) for topic_id, parts in owned.items())


def _next_assignment(
    member: ConsumerGroupMember,
    member_epoch: int,
    target_epoch: int,
    target: TopicIdPartitions,
    current_partition_epoch: PartitionEpoch,
    owned: TopicIdPartitions | None,
) -> ConsumerGroupMember:
    """Kafka's ``computeNextAssignment`` from *member*'s assigned partitions at *member_epoch*."""
    current = member.assigned_partitions
    kept: dict[bytes, frozenset[int]] = {}
    revoke: dict[bytes, frozenset[int]] = {}
    to_assign: dict[bytes, frozenset[int]] = {}
    has_unreleased = False
    for topic_id in sorted(set(target) | set(current)):
        target_parts = target.get(topic_id, frozenset())
        current_parts = current.get(topic_id, frozenset())
        kept[topic_id] = current_parts & target_parts
        revoke[topic_id] = current_parts - kept[topic_id]
        pending = target_parts - kept[topic_id]
        free = frozenset(p for p in pending if current_partition_epoch(topic_id, p) == -1)
        has_unreleased = has_unreleased or free != pending
        to_assign[topic_id] = free
    kept_map, revoke_map, assign_map = partitions_of(kept), partitions_of(revoke), partitions_of(to_assign)

    if revoke_map and _owns_any(owned, revoke_map):
        # Revoke first: the member stays at *member_epoch* (the target's epoch is reached only
        # once the revocation is acknowledged) and keeps the partitions it is not losing.
        return replace(
            member.with_epoch(member_epoch),
            state=MemberState.UNREVOKED_PARTITIONS,
            assigned_partitions=kept_map,
            partitions_pending_revocation=revoke_map,
        )
    # Nothing (left) to revoke: the target epoch, with every target partition no one else owns.
    return replace(
        member.with_epoch(target_epoch),
        state=MemberState.UNRELEASED_PARTITIONS if has_unreleased else MemberState.STABLE,
        assigned_partitions=partitions_union(kept_map, assign_map),
        partitions_pending_revocation={},
    )
