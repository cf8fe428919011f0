"""Kafka 4's share group assignor ``simple`` (``SimpleAssignor``), as plain Python.

A share-partition can be fetched by several members of a share group at once, so the share
assignor does not divide partitions among members the way a consumer group assignor does: it
balances *assignments*.  With M members and P assignable partitions each partition goes to
``desired_sharing = ceil(M / P)`` members, and each member gets about ``desired_sharing * P / M``
partitions, so when there are more members than partitions every member still gets one (a
partition is shared instead), and when there are fewer each member gets several, as a
consumer group would give them.

Contract (Kafka's ``SimpleHomogeneousAssignmentBuilder`` / ``SimpleHeterogeneousAssignmentBuilder``):

* **Homogeneous** (every member subscribes to the same topics): balanced across all
  subscribed topics together.  **Heterogeneous**: balanced topic by topic among the members
  subscribing to it.
* Sticky: a member keeps the partitions of its current target assignment up to its desired
  count (counted in member order); partitions shared by more members than desired are taken
  from the first members holding them; then the partitions still short of members are given,
  round-robin, to the members still short of partitions (a member never twice the same).
* Only *assignable* partitions are given (a share group assigns only share-partitions whose
  state is initialized, Kafka's ``isPartitionAssignable``); a current partition that is no
  longer assignable or no longer subscribed is taken away.
* Deterministic: members are taken in member id order and partitions in (topic id,
  partition) order, so the same input always gives the same answer (a coordinator failover
  computes the same targets).  Kafka iterates Java hash maps instead; the balance and the
  stickiness are the same, the exact choice of partitions may differ.  Two small departures
  from Kafka, both closing gaps: a current partition that became unassignable while its topic
  is still subscribed is taken away (an unassignable partition is never in a target), and
  step 3 tries every member short of partitions for each partition (Kafka's member iterator,
  shared by all partitions, can give up on a partition without trying them all, leaving a
  partition unassigned).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, field

__all__ = ["SIMPLE_ASSIGNOR_NAME", "ShareAssignmentSpec", "ShareMemberSpec", "SimpleAssignor"]

#: the name ShareGroupDescribe reports (``group.share.assignors``' only value in Kafka 4)
SIMPLE_ASSIGNOR_NAME = "simple"

#: member id → topic id → partitions
ShareAssignment = dict[str, dict[bytes, frozenset[int]]]


@dataclass(frozen=True)
class ShareMemberSpec:
    """One member as the assignor sees it: its subscribed topics that exist (by id) and its
    current target assignment (for stickiness)."""

    subscribed_topic_ids: frozenset[bytes]
    current: Mapping[bytes, frozenset[int]] = field(default_factory=dict)


@dataclass(frozen=True)
class ShareAssignmentSpec:
    """Everything one assignment is computed from.

    Attributes:
        members: the members by id.
        assignable: topic id → the partitions that may be assigned (initialized share-partitions);
            a subscribed topic missing here has none.
        homogeneous: every member subscribes to the same topics (Kafka's ``SubscriptionType``).
    """

    members: Mapping[str, ShareMemberSpec]
    assignable: Mapping[bytes, frozenset[int]]
    homogeneous: bool


class SimpleAssignor:
    """Kafka's ``SimpleAssignor`` (see the module docstring)."""

    name = SIMPLE_ASSIGNOR_NAME

    def assign(self, spec: ShareAssignmentSpec) -> ShareAssignment:
        """Every member's target assignment: each member of *spec* a key, possibly with no partitions."""
        if not spec.members:
            return {}
        member_ids = sorted(spec.members)
        targets: dict[str, dict[bytes, set[int]]] = {}
        if spec.homogeneous:
            topics = spec.members[member_ids[0]].subscribed_topic_ids
            if not topics:
                return {m: {} for m in member_ids}
            for m in member_ids:
                targets[m] = _keep_subscribed(spec.members[m], topics, spec.assignable)
            _balance(member_ids, sorted(topics), spec.assignable, targets)
        else:
            for m in member_ids:
                member = spec.members[m]
                targets[m] = _keep_subscribed(member, member.subscribed_topic_ids, spec.assignable)
            all_topics = sorted(set().union(*(spec.members[m].subscribed_topic_ids for m in member_ids)))
            for topic in all_topics:
                subscribers = [m for m in member_ids if topic in spec.members[m].subscribed_topic_ids]
                _balance(subscribers, [topic], spec.assignable, targets)
        return {m: {t: frozenset(p) for t, p in targets[m].items() if p} for m in member_ids}


def _keep_subscribed(
    member: ShareMemberSpec, topics: frozenset[bytes], assignable: Mapping[bytes, frozenset[int]]
) -> dict[bytes, set[int]]:
    """The member's current partitions that are still subscribed and assignable (Kafka's
    ``revokeUnassignablePartitions``)."""
    out: dict[bytes, set[int]] = {}
    for topic, parts in member.current.items():
        if topic in topics:
            kept = set(parts) & assignable.get(topic, frozenset())
            if kept:
                out[topic] = kept
    return out


def _balance(
    members: list[str],
    topics: list[bytes],
    assignable: Mapping[bytes, frozenset[int]],
    targets: dict[str, dict[bytes, set[int]]],
) -> None:
    """Balance the partitions of *topics* among *members* (in place in *targets*): revoke from
    overfilled members, revoke over-shared partitions, assign what is short (Kafka's ``build``)."""
    partitions = [(t, p) for t in topics for p in sorted(assignable.get(t, frozenset()))]
    if not members:
        return
    n_members, n_partitions = len(members), len(partitions)
    desired_sharing = 0 if n_partitions == 0 else (n_members + n_partitions - 1) // n_partitions
    # Kafka computes the per-member counts in doubles; so does Python's float.
    precise = desired_sharing * n_partitions / float(n_members)
    desired = {
        m: math.ceil(precise * (i + 1)) - math.ceil(precise * i) for i, m in enumerate(members)
    }
    topic_set = set(topics)

    def held(m: str) -> list[tuple[bytes, int]]:
        return sorted((t, p) for t, parts in targets[m].items() if t in topic_set for p in parts)

    def drop(m: str, t: bytes, p: int) -> None:
        targets[m][t].discard(p)
        if not targets[m][t]:
            del targets[m][t]

    # 1. A member over its desired count gives up partitions until it is at it.
    for m in members:
        extra = held(m)[desired[m]:]
        for t, p in extra:
            drop(m, t, p)

    # 2. A partition shared by more members than desired loses the first of them.
    by_partition: dict[tuple[bytes, int], list[str]] = {tp: [] for tp in partitions}
    for m in members:
        for tp in held(m):
            by_partition[tp].append(m)
    for tp in partitions:
        holders = by_partition[tp]
        while len(holders) > desired_sharing:
            drop(holders.pop(0), *tp)

    # 3. The partitions short of members go round the members short of partitions; the round
    # goes on from partition to partition, and a partition none of them can take (they all
    # have it) is left short.
    counts = {m: len(held(m)) for m in members}
    unfilled = [m for m in members if counts[m] < desired[m]]
    pos = 0
    for tp in partitions:
        if not unfilled:
            break
        holders = by_partition[tp]
        need = desired_sharing - len(holders)
        visited: set[str] = set()
        while need > 0 and unfilled:
            pos %= len(unfilled)
            m = unfilled[pos]
            if m in visited:
                break  # a whole round and nobody could take it: tolerate the imbalance
            visited.add(m)
            if m in holders:
                pos += 1
                continue
            targets[m].setdefault(tp[0], set()).add(tp[1])
            holders.append(m)
            counts[m] += 1
            need -= 1
            if counts[m] >= desired[m]:
                unfilled.pop(pos)
            else:
                pos += 1
