"""Shared by the consumer group tests: a small sticky test assignor, topics and request builders.

The tests use their own assignor (not :mod:`mafka.group.consumer.assignors`) so that they test
the group and not an assignor: this one is deterministic, balanced per topic and sticky (a
member keeps what it has up to its share), which is what makes revocation visible.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, field

from mafka.group.consumer.assignor_api import Assignment, AssignmentSpec
from mafka.group.consumer.group import (
    ConsumerGroup,
    ConsumerGroupConfig,
    HeartbeatRequest,
    HeartbeatResult,
)
from mafka.group.consumer.member import TopicInfo

GROUP = "g"


def topic_id(name: str) -> bytes:
    """A fixed 16-byte id per topic name (never all zeros)."""
    return (b"\x01" + name.encode()).ljust(16, b"\xee")[:16]


def topics(**counts: int) -> dict[str, TopicInfo]:
    """``topics(foo=3)`` → the cluster's topics by name."""
    return {name: TopicInfo(topic_id(name), name, n) for name, n in counts.items()}


@dataclass
class StickyAssignor:
    """Per topic: each subscriber's share is n // k (the first n % k get one more); a member
    keeps its current partitions up to its share, the rest go round to those under it."""

    name: str = "sticky"
    calls: list[AssignmentSpec] = field(default_factory=list)

    def assign(self, spec: AssignmentSpec) -> Assignment:
        self.calls.append(spec)
        out: Assignment = {m: {} for m in spec.members}
        for name in sorted(spec.topics):
            subscribers = sorted(m for m, s in spec.members.items() if name in s.subscribed_topics)
            if not subscribers:
                continue
            n = spec.topics[name].partitions
            share = {m: n // len(subscribers) + (1 if i < n % len(subscribers) else 0) for i, m in enumerate(subscribers)}
            given: dict[str, set[int]] = {m: set() for m in subscribers}
            free = set(range(n))
            for m in subscribers:
                keep = sorted(p for p in spec.members[m].current.get(name, frozenset()) if p < n)[: share[m]]
                given[m].update(keep)
                free -= set(keep)
            for p in sorted(free):
                m = min((m for m in subscribers if len(given[m]) < share[m]), key=subscribers.index)
                given[m].add(p)
            for m in subscribers:
                if given[m]:
                    out[m][name] = frozenset(given[m])
        return out


class FailingAssignor:
    name = "broken"

    def assign(self, spec: AssignmentSpec) -> Assignment:
        raise RuntimeError("assignor exploded")


def make_group(**config: int) -> ConsumerGroup:
    return ConsumerGroup(
        GROUP,
        ConsumerGroupConfig(**config),  # type: ignore[arg-type]
        {"sticky": StickyAssignor(), "other": StickyAssignor(name="other"), "broken": FailingAssignor()},
    )


def join(
    member_id: str,
    names: Sequence[str] | None = ("foo",),
    *,
    instance_id: str | None = None,
    regex: str | None = None,
    rebalance_timeout_ms: int = 30_000,
    assignor: str | None = None,
    rack_id: str | None = None,
) -> HeartbeatRequest:
    """A full join request (member epoch 0)."""
    return HeartbeatRequest(
        GROUP,
        member_id,
        0,
        instance_id=instance_id,
        rack_id=rack_id,
        rebalance_timeout_ms=rebalance_timeout_ms,
        subscribed_topic_names=names,
        subscribed_topic_regex=regex,
        server_assignor=assignor,
        topic_partitions={},
        client_id="client",
        client_host="/127.0.0.1",
    )


def beat(
    member_id: str,
    epoch: int,
    owned: Mapping[bytes, Collection[int]] | None = None,
    *,
    instance_id: str | None = None,
    **fields: object,
) -> HeartbeatRequest:
    """A heartbeat sending only what changed (and the owned partitions, when given)."""
    return HeartbeatRequest(
        GROUP,
        member_id,
        epoch,
        instance_id=instance_id,
        topic_partitions=owned,
        client_id="client",
        client_host="/127.0.0.1",
        **fields,  # type: ignore[arg-type]
    )


def ok(result: HeartbeatResult) -> HeartbeatResult:
    """The result, asserting it is not an error."""
    assert result.response.error_code == 0, result.response
    return result


def tp(name: str, *partitions: int) -> dict[bytes, frozenset[int]]:
    return {topic_id(name): frozenset(partitions)} if partitions else {}
