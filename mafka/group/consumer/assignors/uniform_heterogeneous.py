"""The ``uniform`` assignor when members subscribe to different topics: Kafka 4's
``UniformHeterogeneousAssignmentBuilder`` (KAFKA-17710), step for step.

1. Each member keeps its current partitions of topics it still subscribes to (no quota yet).
2. The unheld partitions are handed out topic by topic, each to the least loaded of the
   topic's subscribers.  Topics go in order of partitions per subscriber (descending), then
   subscriber count (ascending), then name (Kafka: topic id) — the topics with the fewest
   candidates per partition first, which makes a balanced outcome likelier.
3. Balancing passes over the topics with two or more subscribers, in the same order: within
   a topic, partitions move from its most loaded subscribers (a member's highest-numbered
   partitions of the topic first) to its least loaded, until the two differ by at most one
   or the loaded ones hold none of the topic.  The passes repeat until a whole round moves
   nothing, at most :data:`MAX_ITERATION_COUNT` rounds.

The outcome: each member only gets topics it subscribes to; on convergence no single move of
a partition to another subscriber of its topic with two or more fewer partitions remains
(``size(holder) <= size(subscriber) + 1`` for every topic, holder and subscriber).  With
overlapping non-identical subscriptions that is not always the global optimum (Kafka's
comment: 9/10/11 where 10/10/10 was possible).  Members are indexed in member-id order and
ties go to the lower index, as in Kafka's tests, which order members the same way.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from fractions import Fraction

from mafka.group.consumer.assignor_api import Assignment, AssignmentSpec
from mafka.group.consumer.assignors._common import (
    UNOWNED,
    Owners,
    assignment_from_owners,
    claim_current,
)

__all__ = ["MAX_ITERATION_COUNT", "assign_heterogeneous"]

#: Kafka's bound on balancing rounds: identical subscriptions converge in one round (and one
#: more to see it); overlapping ones roughly halve the imbalance each round.
MAX_ITERATION_COUNT = 16


def assign_heterogeneous(
    spec: AssignmentSpec,
    member_ids: Sequence[str],
    subscriptions: Sequence[frozenset[str]],
    counts: Mapping[str, int],
) -> Assignment:
    """Every member's target; *subscriptions* are the existing subscribed topics per member
    index of *member_ids* (sorted)."""
    builder = _Builder(spec, member_ids, subscriptions, counts)
    builder.assign_unheld()
    builder.balance()
    return assignment_from_owners(member_ids, builder.owners)


class _Builder:
    """The builder's state: who owns what, and how many partitions each member has.

    Built with step 1 done: each member holds what it keeps of its current partitions.
    """

    def __init__(
        self,
        spec: AssignmentSpec,
        member_ids: Sequence[str],
        subscriptions: Sequence[frozenset[str]],
        counts: Mapping[str, int],
    ) -> None:
        #: topic → its subscribers' indices, ascending
        self.subscribers: dict[str, list[int]] = {}
        for index in range(len(member_ids)):
            for topic in sorted(subscriptions[index]):
                self.subscribers.setdefault(topic, []).append(index)
        self.counts = counts
        self.owners: Owners = {topic: [UNOWNED] * counts[topic] for topic in self.subscribers}
        kept = claim_current(spec, member_ids, subscriptions, self.owners)
        #: member index → the number of partitions it holds now
        self.sizes: list[int] = [len(mine) for mine in kept]

    def sort_topics(self, topics: list[str]) -> list[str]:
        """Partitions per subscriber descending, subscriber count ascending, name ascending."""
        def key(topic: str) -> tuple[Fraction, int, str]:
            subscribers = len(self.subscribers[topic])
            return (-Fraction(self.counts[topic], subscribers), subscribers, topic)

        return sorted(topics, key=key)

    def move(self, topic: str, partition: int, member: int) -> None:
        """Give *partition* of *topic* to *member*, taking it from its owner if it has one."""
        topic_owners = self.owners[topic]
        previous = topic_owners[partition]
        if previous != UNOWNED:
            self.sizes[previous] -= 1
        topic_owners[partition] = member
        self.sizes[member] += 1

    def assign_unheld(self) -> None:
        """Kafka's ``assignRemainingPartitions``: each unheld partition to the least loaded subscriber."""
        unheld = {
            topic: [p for p, owner in enumerate(topic_owners) if owner == UNOWNED]
            for topic, topic_owners in self.owners.items()
        }
        balancer = _Balancer(self.sizes)
        for topic in self.sort_topics([t for t, ps in unheld.items() if ps]):
            balancer.initialize(self.subscribers[topic])
            for partition in unheld[topic]:
                self.move(topic, partition, balancer.next_least_loaded())

    def balance(self) -> None:
        """Kafka's ``balanceTopics``: rounds over the movable topics until one moves nothing."""
        topics = self.sort_topics([t for t, subs in self.subscribers.items() if len(subs) >= 2])
        balancer = _Balancer(self.sizes)
        last_moved = -1  # the index of the last topic that moved a partition
        for _ in range(MAX_ITERATION_COUNT):
            for index, topic in enumerate(topics):
                if index == last_moved:
                    return  # a whole round since the last move: nothing more to do
                if self.balance_topic(topic, balancer) > 0 or last_moved == -1:
                    last_moved = index

    def balance_topic(self, topic: str, balancer: _Balancer) -> int:
        """Kafka's ``balanceTopic``: move partitions of *topic* from its most loaded subscribers
        to its least loaded; return how many moved."""
        if balancer.initialize(self.subscribers[topic]) <= 1:
            return 0
        topic_owners = self.owners[topic]
        # The topic's partitions grouped by owner (ascending within an owner: the sort is
        # stable), and each owner's slice of that list: a member gives up its last one first.
        grouped = sorted(range(len(topic_owners)), key=topic_owners.__getitem__)
        start: dict[int, int] = {}
        end: dict[int, int] = {}  # exclusive
        for position, partition in enumerate(grouped):
            owner = topic_owners[partition]
            start.setdefault(owner, position)
            end[owner] = position + 1

        moved = 0
        while not balancer.is_balanced():
            # The most loaded subscriber that still has a partition of this topic to give.
            giver = balancer.next_most_loaded()
            while giver != -1 and end.get(giver, 0) - start.get(giver, 0) <= 0:
                balancer.exclude_most_loaded()
                giver = balancer.next_most_loaded()
            if giver == -1:
                break
            end[giver] -= 1
            partition = grouped[end[giver]]
            taker = balancer.next_least_loaded()
            if balancer.is_balanced():
                break  # the two ranges' levels differ by one or less: moving would not help
            self.move(topic, partition, taker)
            moved += 1
        return moved


class _Balancer:
    """Kafka's ``MemberAssignmentBalancer``: the least and the most loaded of a topic's subscribers.

    The subscribers sorted by load (then index).  ``[0, least_end)`` is the least loaded range,
    all at ``least_level`` before this round of hand-outs; it is handed partitions round-robin
    and widens rightwards as its level rises to meet the next members.
    ``[most_start, most_end)`` is the most loaded range, at ``most_level`` before this round of
    take-backs; it gives partitions round-robin and widens leftwards, and members with nothing
    of the topic left to give are swapped out past ``most_end``.  The subscribers are balanced
    once the two levels differ by at most one.
    """

    def __init__(self, sizes: list[int]) -> None:
        self.sizes = sizes  # the builder's list, read live
        self.members: list[int] = []
        self.least_end = 0
        self.least_level = -1
        self.next_least = 0
        self.most_start = 0
        self.most_end = 0
        self.most_level = 1
        self.next_most = -1

    def initialize(self, members: Sequence[int]) -> int:
        """Start over with *members* (at least one); return the spread of their loads."""
        sizes = self.sizes
        self.members = sorted(members, key=lambda m: (sizes[m], m))
        lowest, highest = sizes[self.members[0]], sizes[self.members[-1]]
        self.least_end = 0
        self.least_level = lowest - 1
        self.next_least = 0
        self.most_start = self.most_end = len(self.members)
        self.most_level = highest + 1
        self.next_most = len(self.members) - 1
        return highest - lowest

    def next_least_loaded(self) -> int:
        """The member to give the next partition to (the caller gives it one)."""
        members, sizes = self.members, self.sizes
        if self.next_least >= self.least_end:
            # Everyone in the range has had one: raise its level and take in the members
            # that were already at the new level, then start the round again.
            self.least_level += 1
            while self.least_end < len(members) and sizes[members[self.least_end]] == self.least_level:
                self.least_end += 1
            self.next_least = 0
        member = members[self.next_least]
        self.next_least += 1
        return member

    def next_most_loaded(self) -> int:
        """The member to take the next partition from (the caller takes one), or -1 if none is left."""
        members, sizes = self.members, self.sizes
        if self.next_most < self.most_start:
            if self.most_end <= self.most_start and self.most_start > 0:
                # Every member of the range was excluded: restart it at the next member's
                # load, so it always widens below rather than returning a member outside it.
                self.most_level = sizes[members[self.most_start - 1]]
            else:
                self.most_level -= 1
            while self.most_start > 0 and sizes[members[self.most_start - 1]] == self.most_level:
                self.most_start -= 1
            self.next_most = self.most_end - 1
        if self.next_most < 0:
            return -1
        member = members[self.next_most]
        self.next_most -= 1
        return member

    def exclude_most_loaded(self) -> None:
        """Drop the member :meth:`next_most_loaded` just returned from the most loaded range."""
        members = self.members
        index = self.next_most + 1
        members[index], members[self.most_end - 1] = members[self.most_end - 1], members[index]
        self.most_end -= 1

    def is_balanced(self) -> bool:
        """Whether the most and the least loaded ranges' levels differ by at most one."""
        return self.most_level - self.least_level <= 1
