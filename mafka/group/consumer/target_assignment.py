"""Computing a group's new target assignment: Kafka 4's ``TargetAssignmentBuilder``.

When the group epoch moves past the target assignment epoch, the coordinator asks the
group's server assignor for every member's target partitions, and writes only what changed:
a ``ConsumerGroupTargetAssignmentMember`` record for each member whose target differs from
its previous one, then the ``ConsumerGroupTargetAssignmentMetadata`` record carrying the new
epoch (so a reader that sees the epoch has every member's target of that epoch).

The assignor speaks topic names (:mod:`.assignor_api`); the group and its records speak topic
ids.  This module translates both ways through the group's subscription metadata (the
subscribed topics that exist, with their ids), and refuses an assignor answer that names a
topic or partition outside it or gives a partition to two members: that is a bug in the
assignor, reported as ``UNKNOWN_SERVER_ERROR`` as Kafka reports a ``PartitionAssignorException``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass

from mafka.errors import KafkaError
from mafka.group.consumer.assignor_api import (
    AssignmentSpec,
    MemberSpec,
    PartitionAssignor,
    TopicSpec,
)
from mafka.group.consumer.member import (
    ConsumerGroupMember,
    TopicIdPartitions,
    TopicInfo,
    partitions_of,
)
from mafka.group.consumer.records import (
    CoordinatorRecord,
    target_assignment_epoch_record,
    target_assignment_record,
)

__all__ = ["TargetAssignment", "build_target_assignment"]


@dataclass(frozen=True)
class TargetAssignment:
    """A new target assignment: every member's partitions and the records that persist it."""

    members: dict[str, dict[bytes, frozenset[int]]]
    records: list[CoordinatorRecord]


def build_target_assignment(
    group_id: str,
    group_epoch: int,
    assignor: PartitionAssignor,
    members: Mapping[str, ConsumerGroupMember],
    target_assignment: Mapping[str, TopicIdPartitions],
    subscription_metadata: Mapping[str, TopicInfo],
    subscribed_topics: Callable[[ConsumerGroupMember], frozenset[str]],
    *,
    updated_member: ConsumerGroupMember | None = None,
    replaced_member_id: str | None = None,
) -> TargetAssignment:
    """The target assignment of *group_epoch* and its records.

    Args:
        members: the group's members before this change.
        target_assignment: each member's current target (what the assignor keeps sticky).
        subscription_metadata: the subscribed topics that exist, by name.
        subscribed_topics: a member's subscribed topic names (names and resolved regex).
        updated_member: a member added or changed by the heartbeat being handled.
        replaced_member_id: a static member *updated_member* replaces: it leaves the
            assignment, and its target is the new member's starting point.

    Raises:
        KafkaError: (``UNKNOWN_SERVER_ERROR``) the assignor failed or answered nonsense.
    """
    current: dict[str, TopicIdPartitions] = {}
    specs: dict[str, MemberSpec] = {}
    names_by_id = {info.topic_id: name for name, info in subscription_metadata.items()}

    def spec_of(member: ConsumerGroupMember, assignment: TopicIdPartitions) -> MemberSpec:
        by_name = {names_by_id[t]: parts for t, parts in assignment.items() if t in names_by_id}
        topics = frozenset(t for t in subscribed_topics(member) if t in subscription_metadata)
        return MemberSpec(topics, by_name, member.rack_id, member.instance_id)

    all_members = dict(members)
    if replaced_member_id is not None:
        all_members.pop(replaced_member_id, None)
    if updated_member is not None:
        all_members[updated_member.member_id] = updated_member
    for member_id in sorted(all_members):
        member = all_members[member_id]
        assignment = target_assignment.get(member_id, {})
        if member is updated_member and replaced_member_id is not None:
            # A static member's new incarnation starts from the target of the one it replaces.
            assignment = target_assignment.get(replaced_member_id, {})
        current[member_id] = assignment
        specs[member_id] = spec_of(member, assignment)

    topics = {name: TopicSpec(name, info.partitions) for name, info in subscription_metadata.items()}
    try:
        answer = assignor.assign(AssignmentSpec(specs, topics))
    except Exception as e:  # the assignor is pluggable: any failure fails this heartbeat only
        raise KafkaError(f"Failed to compute a new target assignment for epoch {group_epoch}: {e}") from e

    new_targets: dict[str, dict[bytes, frozenset[int]]] = {}
    taken: dict[tuple[bytes, int], str] = {}
    for member_id in specs:
        by_name = answer.get(member_id, {})
        by_id: dict[bytes, frozenset[int]] = {}
        for name, parts in by_name.items():
            info = subscription_metadata.get(name)
            if info is None:
                raise KafkaError(f"Assignor {assignor.name} assigned unknown topic {name} to {member_id}")
            for p in parts:
                if not 0 <= p < info.partitions:
                    raise KafkaError(f"Assignor {assignor.name} assigned {name}-{p}, which does not exist")
                other = taken.setdefault((info.topic_id, p), member_id)
                if other != member_id:
                    raise KafkaError(f"Assignor {assignor.name} assigned {name}-{p} to {other} and {member_id}")
            by_id[info.topic_id] = frozenset(parts)
        new_targets[member_id] = partitions_of(by_id)
    unknown = set(answer) - set(specs)
    if unknown:
        raise KafkaError(f"Assignor {assignor.name} assigned partitions to non-members {sorted(unknown)}")

    records = [
        target_assignment_record(group_id, member_id, new_targets[member_id])
        for member_id in sorted(new_targets)
        if member_id not in target_assignment or new_targets[member_id] != partitions_of(target_assignment[member_id])
    ]
    records.append(target_assignment_epoch_record(group_id, group_epoch))
    return TargetAssignment(new_targets, records)
