"""What a server-side assignor (KIP-848) is given and what it returns; plain Python.

Kafka 4's ``ConsumerGroupPartitionAssignor``: the coordinator hands an assignor every
member's subscription and current assignment, and the subscribed topics' partition
counts; it returns each member's target assignment.  An assignor is deterministic (the same
input gives the same output: a coordinator failover must compute the same targets) and
never assigns a partition to two members.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Protocol

__all__ = ["Assignment", "AssignmentSpec", "MemberSpec", "PartitionAssignor", "TopicSpec"]

#: member id → topic → the partitions of that topic assigned to the member
Assignment = dict[str, dict[str, frozenset[int]]]


@dataclass(frozen=True)
class MemberSpec:
    """One member as the assignor sees it.

    Attributes:
        subscribed_topics: the topics the member subscribes to (a regex subscription already resolved).
        current: the member's current target assignment (topic → partitions), for stickiness.
        rack_id: the member's rack (``client.rack``), or None.
        instance_id: its ``group.instance.id`` (static membership), or None.
    """

    subscribed_topics: frozenset[str]
    current: Mapping[str, frozenset[int]] = field(default_factory=dict)
    rack_id: str | None = None
    instance_id: str | None = None


@dataclass(frozen=True)
class TopicSpec:
    """A subscribed topic: its partition count and, where known, each partition's replicas' racks."""

    name: str
    partitions: int
    partition_racks: Mapping[int, frozenset[str]] = field(default_factory=dict)


@dataclass(frozen=True)
class AssignmentSpec:
    """Everything one assignment is computed from: the members by id, the topics by name
    (only topics that exist and someone subscribes to)."""

    members: Mapping[str, MemberSpec]
    topics: Mapping[str, TopicSpec]


class PartitionAssignor(Protocol):
    """A server-side assignor: ``name`` is what ``group.remote.assignor`` / ``group.consumer.assignors`` name."""

    name: str

    def assign(self, spec: AssignmentSpec) -> Assignment:
        """Every member's target assignment (each member of *spec* a key, possibly with no partitions)."""
        ...
