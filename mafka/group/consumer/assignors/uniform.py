"""Kafka 4's ``uniform`` assignor (``UniformAssignor``): balanced first, then sticky.

Kafka picks one of two builders by the group's subscription type, and so does
:class:`UniformAssignor`:

* every member subscribes to the same topic names → :func:`assign_homogeneous` (Kafka's
  ``UniformHomogeneousAssignmentBuilder``), here;
* otherwise → :func:`~.uniform_heterogeneous.assign_heterogeneous` (Kafka's
  ``UniformHeterogeneousAssignmentBuilder``).

The homogeneous strategy (Balance > Stickiness): with ``P`` partitions over ``M`` members
each member's quota is ``P // M``, and ``P % M`` members get one more; a member keeps its
current partitions up to its quota (the lowest ``(topic, partition)`` first) and the members
below quota are filled, in member-id order, with consecutive runs of the unheld partitions
in ``(topic, partition)`` order.  So every partition is assigned exactly once, counts differ
by at most one, and a member loses a current partition only where balance demands it.

Where this differs from Kafka (its outputs depend on Java hash-set iteration order there, so
no order reproduces them; these are the deterministic choices):

* Kafka gives the ``P % M`` extra quota slots to the first members in its (hash) iteration
  order.  Here they go first to the members that currently hold more than ``P // M``
  partitions (in member-id order), then to the others in member-id order: an extra slot is
  never spent on a member that cannot use it while another would have to give a partition
  up.  Hence adding a member to a balanced group moves only the partitions the new member
  receives, and removing one moves only the removed member's partitions.
* Kafka lists the unheld partitions in ``HashSet<Uuid>`` order of the topic ids; here in
  topic-name order.

Kafka removed rack awareness from its server-side assignors (KAFKA-16694, 3.8), so member
racks and partition replica racks are ignored, as Kafka 4.0 ignores them.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from mafka.group.consumer.assignor_api import Assignment, AssignmentSpec
from mafka.group.consumer.assignors._common import (
    UNOWNED,
    Owners,
    assignment_from_owners,
    claim_current,
    effective_subscriptions,
    is_homogeneous,
    partition_counts,
    sorted_member_ids,
)
from mafka.group.consumer.assignors.uniform_heterogeneous import assign_heterogeneous

__all__ = ["UniformAssignor", "assign_homogeneous"]


class UniformAssignor:
    """``group.consumer.assignors=uniform``: as balanced as the subscriptions allow, then sticky."""

    name: str = "uniform"

    def assign(self, spec: AssignmentSpec) -> Assignment:
        """Every member's target assignment; see the module docstring for the strategy."""
        member_ids = sorted_member_ids(spec)
        if not member_ids:
            return {}
        counts = partition_counts(spec)
        subscriptions = effective_subscriptions(spec, member_ids, counts)
        if is_homogeneous(spec):
            return assign_homogeneous(spec, member_ids, sorted(subscriptions[0]), counts)
        return assign_heterogeneous(spec, member_ids, subscriptions, counts)


def assign_homogeneous(
    spec: AssignmentSpec, member_ids: Sequence[str], topics: Sequence[str], counts: Mapping[str, int]
) -> Assignment:
    """Kafka's ``UniformHomogeneousAssignmentBuilder`` over *topics* (sorted, existing, the
    same for every member of *member_ids*)."""
    owners: Owners = {topic: [UNOWNED] * counts[topic] for topic in topics}
    subscribed = frozenset(topics)
    kept = claim_current(spec, member_ids, [subscribed] * len(member_ids), owners)

    total = sum(counts[topic] for topic in topics)
    minimum, extras = divmod(total, len(member_ids))
    # The extra slots go where they save a partition move (see the module docstring).
    over = [i for i, mine in enumerate(kept) if len(mine) > minimum]
    rest = [i for i, mine in enumerate(kept) if len(mine) <= minimum]
    quotas = [minimum] * len(member_ids)
    for index in (over + rest)[:extras]:
        quotas[index] += 1

    # Revoke what exceeds a quota: a member keeps its lowest (topic, partition) pairs.
    for index, mine in enumerate(kept):
        for topic, partition in mine[quotas[index]:]:
            owners[topic][partition] = UNOWNED
        del mine[quotas[index]:]

    # Fill the members below quota with consecutive runs of the unheld partitions.  The
    # quotas add up to the partition count, so the runs use up the list exactly.
    unheld = [
        (topic, partition)
        for topic in topics
        for partition, owner in enumerate(owners[topic])
        if owner == UNOWNED
    ]
    position = 0
    for index, mine in enumerate(kept):
        need = quotas[index] - len(mine)
        for topic, partition in unheld[position:position + need]:
            owners[topic][partition] = index
        position += need
    return assignment_from_owners(member_ids, owners)
