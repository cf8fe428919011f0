"""Client-side partition assignors of a consumer group (the ``"consumer"`` protocol type).

The group leader runs one of these over every member's :class:`Subscription` and sends
each member its share in SyncGroup.  Three of Kafka 2.8.2's assignors, under Kafka's
protocol names so that Java, librdkafka and Python members can share a group:

``range``
    Per topic, the subscribed members in order and the partitions split into contiguous
    ranges; the first ``n % m`` members get one extra (``RangeAssignor``).
``roundrobin``
    Every subscribed partition, sorted by (topic, partition), dealt round the ordered members,
    skipping those not subscribed to the partition's topic (``RoundRobinAssignor``).
``cooperative-sticky``
    Balanced and sticky, for the COOPERATIVE protocol (``CooperativeStickyAssignor``): a
    partition moving between members is left out of the round that takes it away, so
    that its old owner revokes it first; the follow-up rebalance hands it over.

"Member order" is Kafka's ``MemberInfo`` order: members with a ``group.instance.id`` first,
by instance id, then the rest by member id, comparing strings as Java does (UTF-16 code
units).  Topics missing from the metadata (or with no partitions) are skipped, as
``AbstractPartitionAssignor`` does.  Pure: no I/O.
"""

from __future__ import annotations

import struct
from collections import defaultdict, deque
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Protocol

from mafka.group.consumer_protocol import Assignment, Subscription
from mafka.topics import TopicPartitionTuple

__all__ = [
    "EAGER",
    "COOPERATIVE",
    "DEFAULT_GENERATION",
    "MemberMetadata",
    "Assignor",
    "RangeAssignor",
    "RoundRobinAssignor",
    "CooperativeStickyAssignor",
    "encode_generation",
    "decode_generation",
    "ASSIGNORS",
    "assignor_for",
    "parse_strategy_list",
]

EAGER = "EAGER"
COOPERATIVE = "COOPERATIVE"
#: ``AbstractStickyAssignor.DEFAULT_GENERATION``: "no generation yet".
DEFAULT_GENERATION = -1

_I32 = struct.Struct(">i")


@dataclass
class MemberMetadata:
    """One group member as the leader sees it in the JoinGroup response."""

    member_id: str
    subscription: Subscription
    group_instance_id: str | None = None


class Assignor(Protocol):
    """What the consumer needs of an assignor."""

    name: str
    rebalance_protocol: str

    def subscription_user_data(
        self, topics: set[str], owned: dict[str, list[int]], generation: int
    ) -> bytes | None: ...

    def assign(
        self, members: dict[str, MemberMetadata], partitions_per_topic: dict[str, int]
    ) -> dict[str, dict[str, list[int]]]:
        """member_id -> {topic: sorted partitions}; every member appears (possibly with {});
        topics missing from partitions_per_topic are skipped."""
        ...

    def on_assignment(self, assignment: Assignment, generation: int) -> None: ...


# -- shared helpers ---------------------------------------------------------------------


def _java_key(s: str) -> bytes:
    # Java's String.compareTo compares UTF-16 code units; big-endian UTF-16 bytes sort the
    # same way (this differs from code-point order only for U+E000..U+FFFF vs astral chars).
    return s.encode("utf-16-be", "surrogatepass")


def _member_key(member_id: str, meta: MemberMetadata) -> tuple[int, bytes]:
    """Kafka's ``MemberInfo.compareTo``: static members first by instance id, then member id."""
    if meta.group_instance_id is not None:
        return (0, _java_key(meta.group_instance_id))
    return (1, _java_key(member_id))


def _topics(meta: MemberMetadata, partitions_per_topic: dict[str, int]) -> set[str]:
    """The member's subscribed topics that have metadata and at least one partition."""
    return {t for t in meta.subscription.topics if partitions_per_topic.get(t, 0) > 0}


def _result(members: Iterable[str], pairs: Iterable[tuple[str, TopicPartitionTuple]]) -> dict[str, dict[str, list[int]]]:
    """member -> {topic: sorted partitions} from (member, (topic, partition)) pairs."""
    out: dict[str, dict[str, list[int]]] = {m: {} for m in members}
    for member, (topic, p) in pairs:
        out[member].setdefault(topic, []).append(p)
    for per_topic in out.values():
        for topic in sorted(per_topic):
            per_topic[topic] = sorted(per_topic.pop(topic))
    return out


class _EagerAssignor:
    """Base of the stateless EAGER assignors: no user data, nothing to remember."""

    name = ""
    rebalance_protocol = EAGER
    supported_protocols: tuple[str, ...] = (EAGER,)

    def subscription_user_data(
        self, topics: set[str], owned: dict[str, list[int]], generation: int
    ) -> bytes | None:
        return None

    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        return None

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class RangeAssignor(_EagerAssignor):
    """Kafka's ``range`` assignor; owned partitions and user data are ignored."""

    name = "range"

    def assign(
        self, members: dict[str, MemberMetadata], partitions_per_topic: dict[str, int]
    ) -> dict[str, dict[str, list[int]]]:
        by_topic: dict[str, list[str]] = defaultdict(list)
        for member_id, meta in members.items():
            for topic in _topics(meta, partitions_per_topic):
                by_topic[topic].append(member_id)
        pairs: list[tuple[str, TopicPartitionTuple]] = []
        for topic, subscribers in by_topic.items():
            subscribers.sort(key=lambda m: _member_key(m, members[m]))
            per_member, extra = divmod(partitions_per_topic[topic], len(subscribers))
            start = 0
            for i, member_id in enumerate(subscribers):
                length = per_member + (1 if i < extra else 0)
                pairs.extend((member_id, (topic, p)) for p in range(start, start + length))
                start += length
        return _result(members, pairs)


class RoundRobinAssignor(_EagerAssignor):
    """Kafka's ``roundrobin`` assignor; owned partitions and user data are ignored."""

    name = "roundrobin"

    def assign(
        self, members: dict[str, MemberMetadata], partitions_per_topic: dict[str, int]
    ) -> dict[str, dict[str, list[int]]]:
        subs = {m: _topics(meta, partitions_per_topic) for m, meta in members.items()}
        order = sorted(members, key=lambda m: _member_key(m, members[m]))
        topics = sorted(set().union(*subs.values()), key=_java_key)
        pairs: list[tuple[str, TopicPartitionTuple]] = []
        i = 0
        for topic in topics:
            for p in range(partitions_per_topic[topic]):
                # The circle keeps its position across topics; someone subscribes to
                # every topic in the list, so this always stops.
                while topic not in subs[order[i]]:
                    i = (i + 1) % len(order)
                pairs.append((order[i], (topic, p)))
                i = (i + 1) % len(order)
        return _result(members, pairs)


# -- cooperative-sticky -------------------------------------------------------------------


def encode_generation(generation: int) -> bytes:
    """``CooperativeStickyAssignor`` user data (Kafka 2.8.1+): one int32, the generation."""
    return _I32.pack(generation)


def decode_generation(user_data: bytes | None) -> int | None:
    """The generation a member reported in its user data, or None when it sent none.

    As Kafka 2.8.2 does: null user data means "no generation"; data that is too short to
    hold an int32 means :data:`DEFAULT_GENERATION`; otherwise the leading int32.  One
    addition: librdkafka's cooperative-sticky sends the StickyAssignor v1 layout
    (``[topic [partition]] generation``), whose leading int32 is a topic count; when the
    whole buffer parses as that layout its trailing generation is used instead.
    """
    if user_data is None:
        return None
    data = bytes(user_data)
    if len(data) < 4:
        return DEFAULT_GENERATION
    if len(data) > 4:
        trailing = _sticky_v1_generation(data)
        if trailing is not None:
            return trailing
    generation: int = _I32.unpack_from(data)[0]
    return generation


def _sticky_v1_generation(data: bytes) -> int | None:
    """The generation of StickyAssignor v1 user data, or None if ``data`` is not exactly that."""
    try:
        topics, pos = _I32.unpack_from(data)[0], 4
        if not 0 <= topics <= len(data):  # each topic takes 6+ bytes: bounds the loop
            return None
        for _ in range(topics):
            name_len = struct.unpack_from(">h", data, pos)[0]
            partitions = _I32.unpack_from(data, pos + 2 + max(name_len, 0))[0]
            if name_len < 0 or partitions < 0:
                return None
            pos += 6 + name_len + 4 * partitions
        if pos + 4 != len(data):
            return None
        generation: int = _I32.unpack_from(data, pos)[0]
        return generation
    except struct.error:
        return None


class CooperativeStickyAssignor:
    """Kafka's ``cooperative-sticky`` assignor.

    Contract of :meth:`assign`:

    * every partition of a subscribed topic goes to at most one member subscribed to its
      topic; once no partition is in transit, to exactly one;
    * balanced: no partition could move to another subscribed member holding two or more
      fewer partitions (so members with identical subscriptions differ by at most one),
      and the partition counts have the smallest possible sum of squares;
    * sticky: a member's owned partitions (``subscription.owned_partitions``) move only
      when no chain of moves of non-owned ones restores the balance; with identical
      subscriptions the members keep as many owned partitions as any balanced result can;
    * cooperative: a partition is left out entirely while a different member still owns it
      (or while two members of the same generation claim it), so the owner revokes it
      before anyone else gets it.  Feeding each member's assignment back as its owned
      partitions, the next round assigns everything that was held back and moves nothing.

    Conflicting claims are settled as Kafka does: the claim made at the higher generation
    (from :func:`decode_generation`; none counts as -1) wins; two claims at the same
    highest generation void both.  An uncontested claim stands whatever its generation,
    as in later Kafka; 2.8.2's identical-subscriptions path instead dropped every claim of
    a member below the group's highest generation, handing those partitions straight to
    others while the stale member might still be consuming them.
    """

    name = "cooperative-sticky"
    rebalance_protocol = COOPERATIVE
    # Java's supportedProtocols(); under EAGER members rejoin owning nothing, so nothing
    # is ever held back.
    supported_protocols: tuple[str, ...] = (COOPERATIVE, EAGER)

    def subscription_user_data(
        self, topics: set[str], owned: dict[str, list[int]], generation: int
    ) -> bytes | None:
        """``generation``: that of the assignment that gave ``owned`` (-1 before the first).

        Always four bytes, even at -1, exactly as Java's ``subscriptionUserData``.
        """
        return encode_generation(generation)

    def on_assignment(self, assignment: Assignment, generation: int) -> None:
        # Java stores the generation here for its next subscriptionUserData call; our
        # consumer passes it to subscription_user_data instead.
        return None

    def assign(
        self, members: dict[str, MemberMetadata], partitions_per_topic: dict[str, int]
    ) -> dict[str, dict[str, list[int]]]:
        return _StickyPlan(members, partitions_per_topic).solve()

    def __repr__(self) -> str:
        return "CooperativeStickyAssignor()"


def _resolve_claims(
    members: dict[str, MemberMetadata], partitions_per_topic: dict[str, int]
) -> tuple[dict[TopicPartitionTuple, str], set[TopicPartitionTuple]]:
    """(valid owner of each claimed partition, partitions whose top claim is a tie)."""
    best: dict[TopicPartitionTuple, tuple[int, list[str]]] = {}
    for member_id in sorted(members):
        sub = members[member_id].subscription
        generation = decode_generation(sub.user_data)
        gen = DEFAULT_GENERATION if generation is None else generation
        for topic, parts in sub.owned_partitions.items():
            count = partitions_per_topic.get(topic, 0)
            for p in set(parts):
                if not 0 <= p < count:
                    continue  # the topic is gone or has no such partition
                tp = (topic, p)
                seen = best.get(tp)
                if seen is None or gen > seen[0]:
                    best[tp] = (gen, [member_id])
                elif gen == seen[0]:
                    seen[1].append(member_id)
    owner = {tp: claimants[0] for tp, (_, claimants) in best.items() if len(claimants) == 1}
    return owner, {tp for tp, (_, claimants) in best.items() if len(claimants) > 1}


class _StickyPlan:
    """One cooperative-sticky assignment.

    1. Each member keeps its valid owned partitions of topics it still subscribes to.
    2. The rest go, fewest candidate members first, to the least loaded candidate.
    3. While some member holds two or more partitions more than a member it can pass
       work to through a chain of transfers (a gives b a partition of a topic b reads, b
       gives c one, ...), run the chain.  Chains moving only partitions that are not with
       their owner are tried first, then those moving the fewest owned partitions.  Each
       chain lowers the sum of squared loads, and none being left means that sum is
       minimal.  Because step 3 first exhausts owner-free chains, a round whose owned
       partitions are a subset of some optimal assignment (e.g. the previous round's
       output) never moves an owned partition, which is what makes two rounds converge.
    4. Partitions that end with someone other than their owner, or that were contested,
       are withheld this round.
    """

    def __init__(self, members: dict[str, MemberMetadata], partitions_per_topic: dict[str, int]):
        self.order = sorted(members)
        self.rank = {m: i for i, m in enumerate(self.order)}
        self.subs = {m: _topics(members[m], partitions_per_topic) for m in self.order}
        self.counts = {t: partitions_per_topic[t] for t in set().union(*self.subs.values())}
        self.owner, self.contested = _resolve_claims(members, partitions_per_topic)
        self.load = dict.fromkeys(self.order, 0)
        self.held: dict[str, dict[str, set[int]]] = {m: {} for m in self.order}
        # how many of held[m][t] m itself owns: a hop from m over t is "free" when fewer
        self.own_held: dict[str, dict[str, int]] = {m: defaultdict(int) for m in self.order}

    def solve(self) -> dict[str, dict[str, list[int]]]:
        unplaced: list[TopicPartitionTuple] = []
        for topic in sorted(self.counts):
            for p in range(self.counts[topic]):
                owner = self.owner.get((topic, p))
                if owner is not None and topic in self.subs[owner]:
                    self._put((topic, p), owner)
                else:
                    unplaced.append((topic, p))
        candidates = {t: [m for m in self.order if t in self.subs[m]] for t in self.counts}
        unplaced.sort(key=lambda tp: (len(candidates[tp[0]]), tp))
        for tp in unplaced:
            self._put(tp, min(candidates[tp[0]], key=lambda m: (self.load[m], self.rank[m])))
        while (hops := self._find_chain(False) or self._find_chain(True)) is not None:
            # Last hop first: every giver then still has what the search saw it holding.
            for giver, taker, topic in reversed(hops):
                self._move((topic, self._pick(giver, taker, topic)), giver, taker)
        return _result(self.order, self._kept())

    def _kept(self) -> Iterable[tuple[str, TopicPartitionTuple]]:
        for member in self.order:
            for topic, parts in self.held[member].items():
                for p in parts:
                    tp = (topic, p)
                    if tp not in self.contested and self.owner.get(tp, member) == member:
                        yield member, tp

    def _put(self, tp: TopicPartitionTuple, member: str) -> None:
        self.held[member].setdefault(tp[0], set()).add(tp[1])
        self.load[member] += 1
        if self.owner.get(tp) == member:
            self.own_held[member][tp[0]] += 1

    def _move(self, tp: TopicPartitionTuple, giver: str, taker: str) -> None:
        parts = self.held[giver][tp[0]]
        parts.remove(tp[1])
        if not parts:
            del self.held[giver][tp[0]]
        self.load[giver] -= 1
        if self.owner.get(tp) == giver:
            self.own_held[giver][tp[0]] -= 1
        self._put(tp, taker)

    def _pick(self, giver: str, taker: str, topic: str) -> int:
        """Which partition of ``topic`` to hand over: one going home, else one not owned
        by the giver, else the giver's highest."""

        def cost(p: int) -> tuple[int, int]:
            owner = self.owner.get((topic, p))
            return (0 if owner == taker else 1 if owner != giver else 2, -p)

        return min(self.held[giver][topic], key=cost)

    def _hop(self, giver: str, taker: str, allow_owned: bool) -> tuple[int, str] | None:
        """(cost, topic) of the cheapest single transfer giver -> taker: cost 0 moves a
        partition the giver does not own, cost 1 an owned one; None if impossible."""
        best: tuple[int, str] | None = None
        for topic, parts in self.held[giver].items():
            if topic not in self.subs[taker]:
                continue
            if len(parts) > self.own_held[giver][topic]:
                return (0, topic)
            if allow_owned and best is None:
                best = (1, topic)
        return best

    def _find_chain(self, allow_owned: bool) -> list[tuple[str, str, str]] | None:
        """An improving chain of (giver, taker, topic) hops, or None.

        For each load level from the lowest, a multi-source 0-1 BFS backwards from the
        members at that level finds who can reach them at the fewest owned moves; a member
        at least two above the level is a valid start, and among the cheapest starts the
        most loaded gives (so an overfull owner sheds down to the quota instead of two
        owners taking turns)."""
        # A hop costs 0 only from a member holding partitions it does not own; without
        # owned moves only those members can give at all.
        free = {m: self.load[m] > sum(self.own_held[m].values()) for m in self.order}
        givers = [m for m in self.order if allow_owned or free[m]]
        far = len(self.order) + 1  # more than any path's cost
        levels = sorted(set(self.load.values()))
        for level in levels:
            if level + 2 > levels[-1]:
                return None
            targets = [m for m in self.order if self.load[m] == level]
            dist = dict.fromkeys(targets, 0)
            via: dict[str, tuple[str, str]] = {}
            queue, done = deque(targets), set()
            best: str | None = None
            while queue:
                taker = queue.popleft()
                if taker in done:
                    continue
                if best is not None and dist[taker] > dist[best]:
                    break  # 0-1 BFS pops in distance order: no cheaper start is left
                done.add(taker)
                if self.load[taker] >= level + 2:
                    if best is None or (-self.load[taker], self.rank[taker]) < (
                        -self.load[best], self.rank[best]
                    ):
                        best = taker
                if best is not None:
                    continue  # only collecting equally cheap starts now
                for giver in givers:
                    if dist.get(giver, far) <= dist[taker] + (0 if free[giver] else 1):
                        continue  # settled, or no cheaper through this taker
                    if (hop := self._hop(giver, taker, allow_owned)) is None:
                        continue
                    d = dist[taker] + hop[0]
                    if d < dist.get(giver, d + 1):
                        dist[giver], via[giver] = d, (taker, hop[1])
                        (queue.appendleft if hop[0] == 0 else queue.append)(giver)
            if best is not None:
                member = best
                hops = []
                while member in via:
                    taker, topic = via[member]
                    hops.append((member, taker, topic))
                    member = taker
                return hops
        return None


# -- lookup -------------------------------------------------------------------------------

ASSIGNORS: dict[str, type[Assignor]] = {
    cls.name: cls for cls in (RangeAssignor, RoundRobinAssignor, CooperativeStickyAssignor)
}

# Java's partition.assignment.strategy takes class names.
_JAVA_CLASSES = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
}


def assignor_for(name: str) -> Assignor:
    """A new assignor for a protocol name (or one of Kafka's class names).

    Raises:
        ValueError: an unknown name; the message names it.
    """
    cls = ASSIGNORS.get(_JAVA_CLASSES.get(name, name))
    if cls is None:
        known = ", ".join(ASSIGNORS)
        raise ValueError(f"Unsupported partition.assignment.strategy: {name!r} (known: {known})")
    return cls()


def parse_strategy_list(value: str) -> list[Assignor]:
    """The assignors of a ``partition.assignment.strategy`` value, in preference order.

    Comma-separated protocol names (librdkafka's form, e.g. ``"range,roundrobin"``) or Java
    class names; blanks around items and empty items are ignored and a repeated assignor
    counts once, as librdkafka does.

    Raises:
        ValueError: an unknown name, or no assignor at all.
    """
    out: list[Assignor] = []
    for item in value.split(","):
        item = item.strip()
        if item:
            assignor = assignor_for(item)
            if all(a.name != assignor.name for a in out):
                out.append(assignor)
    if not out:
        raise ValueError(f"partition.assignment.strategy names no assignor: {value!r}")
    return out
