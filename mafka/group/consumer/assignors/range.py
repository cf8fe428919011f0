"""Kafka 4's server-side ``range`` assignor (``RangeAssignor``, rewritten by KAFKA-16944).

Per topic, its subscribers are ordered (below) and the partitions cut into contiguous ranges
in that order: with ``n`` partitions and ``k`` subscribers each gets ``n // k`` and the first
``n % k`` one more, so when ``n < k`` the last subscribers get none of the topic.  Members
with identical subscriptions therefore get the same partition numbers of every topic with
the same partition count: co-partitioning, which joins of two streams rely on.

The order: static members (with a ``group.instance.id``) first, by instance id, then the
others by member id.  Kafka's range assignor reads neither the current assignment nor racks:
its answer is a function of the members' order, their subscriptions and the partition counts
alone.  So it is "sticky" only in that sense: while the members, their subscriptions and the
partition counts stay the same, the assignment does; and a static member that rejoins under
a new member id takes its old place.  A member joining or leaving shifts the ranges after it.
"""

from __future__ import annotations

from mafka.group.consumer.assignor_api import Assignment, AssignmentSpec
from mafka.group.consumer.assignors._common import (
    effective_subscriptions,
    partition_counts,
    sorted_member_ids,
)

__all__ = ["RangeAssignor"]


class RangeAssignor:
    """``group.consumer.assignors=range``: contiguous ranges per topic, co-partitioned."""

    name: str = "range"

    def assign(self, spec: AssignmentSpec) -> Assignment:
        """Every member's target assignment; see the module docstring for the strategy."""
        member_ids = sorted_member_ids(spec)
        counts = partition_counts(spec)
        subscriptions = dict(zip(member_ids, effective_subscriptions(spec, member_ids, counts), strict=True))

        def order(member_id: str) -> tuple[int, str, str]:
            instance_id = spec.members[member_id].instance_id
            if instance_id is None:
                return (1, "", member_id)
            return (0, instance_id, member_id)

        subscribers: dict[str, list[str]] = {}
        for member_id in sorted(member_ids, key=order):
            for topic in subscriptions[member_id]:
                subscribers.setdefault(topic, []).append(member_id)

        assignment: Assignment = {member_id: {} for member_id in member_ids}
        for topic in sorted(subscribers):
            members = subscribers[topic]
            quota, extra = divmod(counts[topic], len(members))
            start = 0
            for position, member_id in enumerate(members):
                end = start + quota + (1 if position < extra else 0)
                if end > start:
                    assignment[member_id][topic] = frozenset(range(start, end))
                start = end
        return assignment
