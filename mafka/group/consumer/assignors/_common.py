"""How every server-side assignor reads an :class:`AssignmentSpec` and writes its answer.

Determinism is decided here, once: members are taken in member-id order and topics and
partitions in ascending order, so nothing depends on the order of the spec's dicts.

Reading rules (shared by ``uniform`` and ``range``):

* a subscribed topic missing from ``spec.topics`` is ignored: Kafka's coordinator resolves
  subscriptions against the metadata image before calling an assignor, so a topic that does
  not exist never reaches one (its assignors would throw ``PartitionAssignorException``);
* a partition of a member's ``current`` assignment is kept as a candidate only if its topic
  is one the member subscribes to and exists, the partition number is below the topic's
  partition count, and no member earlier in member-id order already claims it (a partition
  is never given to two members, whatever the input says).

Internally a topic's partitions are one list of owner indices (index into the sorted
member ids, ``-1`` for none), as Kafka's ``targetAssignmentPartitionOwners``: per-partition
work is a list access, and the answer is built from these lists in one pass.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mafka.group.consumer.assignor_api import Assignment, AssignmentSpec

#: owner index of a partition that no member holds
UNOWNED = -1

#: topic → owner index of each of its partitions
Owners = dict[str, list[int]]


def sorted_member_ids(spec: AssignmentSpec) -> list[str]:
    """The members in member-id order: index *i* in every owner list means ``ids[i]``."""
    return sorted(spec.members)


def partition_counts(spec: AssignmentSpec) -> dict[str, int]:
    """Each topic's partition count (a negative count read as none)."""
    return {name: max(0, topic.partitions) for name, topic in spec.topics.items()}


def effective_subscriptions(
    spec: AssignmentSpec, member_ids: Sequence[str], counts: Mapping[str, int]
) -> list[frozenset[str]]:
    """Per member index, the subscribed topics that exist (see the module's reading rules)."""
    return [frozenset(t for t in spec.members[m].subscribed_topics if t in counts) for m in member_ids]


def is_homogeneous(spec: AssignmentSpec) -> bool:
    """Whether every member subscribes to the same topic names.

    Kafka's ``ModernGroup.subscriptionType`` counts subscribers per subscribed topic *name*,
    whether the topic exists or not; so does this.
    """
    subscriptions = iter(m.subscribed_topics for m in spec.members.values())
    first = next(subscriptions, None)
    return all(s == first for s in subscriptions)


def claim_current(
    spec: AssignmentSpec,
    member_ids: Sequence[str],
    subscriptions: Sequence[frozenset[str]],
    owners: Owners,
) -> list[list[tuple[str, int]]]:
    """Mark in *owners* each member's current partitions that it may keep; return them.

    Per member index, the claimed ``(topic, partition)`` pairs in ascending order.  Revoked
    here, for good: partitions of topics the member no longer subscribes to (or that no longer
    exist), partitions past the topic's count, and partitions an earlier member claimed.
    """
    claimed: list[list[tuple[str, int]]] = []
    for index, member_id in enumerate(member_ids):
        subscribed = subscriptions[index]
        current = spec.members[member_id].current
        mine: list[tuple[str, int]] = []
        for topic in sorted(current):
            if topic not in subscribed:
                continue
            topic_owners = owners[topic]
            count = len(topic_owners)
            for partition in sorted(current[topic]):
                if 0 <= partition < count and topic_owners[partition] == UNOWNED:
                    topic_owners[partition] = index
                    mine.append((topic, partition))
        claimed.append(mine)
    return claimed


def assignment_from_owners(member_ids: Sequence[str], owners: Owners) -> Assignment:
    """The answer: every member a key (in member-id order), each with its topics in name order.

    A member holds a topic only if it has at least one of its partitions.
    """
    partitions: list[dict[str, list[int]]] = [{} for _ in member_ids]
    for topic in sorted(owners):
        for partition, owner in enumerate(owners[topic]):
            if owner != UNOWNED:
                partitions[owner].setdefault(topic, []).append(partition)
    return {
        member_id: {topic: frozenset(ps) for topic, ps in partitions[index].items()}
        for index, member_id in enumerate(member_ids)
    }
