"""One member of a ``consumer`` group (KIP-848), and the partition sets it is made of.

Kafka 4's ``ConsumerGroupMember`` and ``MemberState``, as plain values: a member is a frozen
:class:`ConsumerGroupMember`; every change makes a new one (:func:`dataclasses.replace`), so
the group can compare the member before and after a heartbeat to decide which records to
write, exactly as Kafka's ``GroupMetadataManager`` compares ``member`` and ``updatedMember``.

Partitions are named by topic **id** (16 bytes, Kafka's ``Uuid``), as in Kafka's records and
in ConsumerGroupHeartbeat: a member keeps its partitions when a topic is deleted and re-created
under the same name.  A :data:`TopicIdPartitions` never holds a topic with no partitions
(:func:`partitions_of` drops them), so two equal assignments compare equal.

Contract:

* :class:`MemberState` holds Kafka's four states and their record values (``STABLE`` 0,
  ``UNREVOKED_PARTITIONS`` 1, ``UNRELEASED_PARTITIONS`` 2, ``UNKNOWN`` 127);
  :meth:`MemberState.from_value` maps any other byte to ``UNKNOWN`` as Kafka does.
* A member *owns* its assigned partitions and its partitions pending revocation
  (:attr:`ConsumerGroupMember.owned_partitions`): both count as taken for every other member.
* :meth:`ConsumerGroupMember.is_reconciled_to` is Kafka's ``isReconciledTo``: STABLE at the
  target assignment epoch.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # records.py imports this module
    from mafka.group.consumer.records import ClassicMemberMetadata

__all__ = [
    "LEAVE_GROUP_MEMBER_EPOCH",
    "LEAVE_GROUP_STATIC_MEMBER_EPOCH",
    "ConsumerGroupMember",
    "MemberState",
    "TopicIdPartitions",
    "TopicInfo",
    "is_subset",
    "partitions_of",
    "partitions_union",
]

#: ConsumerGroupHeartbeat's member epoch of a member leaving the group.
LEAVE_GROUP_MEMBER_EPOCH = -1
#: ConsumerGroupHeartbeat's member epoch of a static member leaving for a while (it keeps its
#: partitions until its session times out or it rejoins under the same ``group.instance.id``).
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2

#: topic id (16 bytes) → partition indexes of that topic; never an empty set
TopicIdPartitions = Mapping[bytes, frozenset[int]]


def partitions_of(partitions: Mapping[bytes, Iterable[int]] | None) -> dict[bytes, frozenset[int]]:
    """A :data:`TopicIdPartitions` from any topic id → partitions mapping (empty topics dropped)."""
    if not partitions:
        return {}
    out: dict[bytes, frozenset[int]] = {}
    for topic_id, parts in partitions.items():
        frozen = frozenset(parts)
        if frozen:
            out[bytes(topic_id)] = frozen
    return out


def partitions_union(*assignments: TopicIdPartitions) -> dict[bytes, frozenset[int]]:
    """Every partition of any of *assignments*."""
    out: dict[bytes, frozenset[int]] = {}
    for assignment in assignments:
        for topic_id, parts in assignment.items():
            out[topic_id] = out.get(topic_id, frozenset()) | parts
    return partitions_of(out)


def is_subset(owned: TopicIdPartitions | None, target: TopicIdPartitions) -> bool:
    """Kafka's ``isSubset``: *owned* names only partitions of *target*; ``None`` (not reported) is not."""
    if owned is None:
        return False
    return all(parts <= target.get(topic_id, frozenset()) for topic_id, parts in owned.items())


@dataclass(frozen=True)
class TopicInfo:
    """A topic as the group sees it: its id, name and partition count (Kafka's ``TopicMetadata``).

    Attributes:
        topic_id: the topic's 16-byte id; a topic without one (all zero bytes) cannot be
            subscribed to by a consumer group, whose records name topics by id.
        name: the topic name.
        partitions: its partition count.
    """

    topic_id: bytes
    name: str
    partitions: int

    def __post_init__(self) -> None:
        if len(self.topic_id) != 16:
            raise ValueError(f"topic id of {self.name!r} must be 16 bytes, got {len(self.topic_id)}")
        if self.partitions < 0:
            raise ValueError(f"partition count of {self.name!r} must not be negative, got {self.partitions}")


class MemberState(enum.IntEnum):
    """A member's reconciliation state; the value is the ``State`` byte of its assignment record."""

    #: fully reconciled with its target assignment (or waiting for a newer one)
    STABLE = 0
    #: must revoke partitions (reported gone in a heartbeat) before moving to the next epoch
    UNREVOKED_PARTITIONS = 1
    #: at the target epoch, waiting for partitions other members have not released yet
    UNRELEASED_PARTITIONS = 2
    #: a state a newer coordinator wrote and this one does not know: the member is fenced
    UNKNOWN = 127

    @classmethod
    def from_value(cls, value: int) -> MemberState:
        """The state stored as *value*; ``UNKNOWN`` for a value Kafka 4 does not define."""
        try:
            return cls(value)
        except ValueError:
            return cls.UNKNOWN

    def __str__(self) -> str:
        return self.name


@dataclass(frozen=True)
class ConsumerGroupMember:
    """One member (Kafka 4's ``ConsumerGroupMember``), immutable.

    Attributes:
        member_id: the member id.
        member_epoch: the epoch the member must send in its next heartbeat; -2 for a static
            member that left for a while.
        previous_member_epoch: the epoch before the last bump (a member whose bumped epoch was
            lost may still heartbeat with it, if it owns no partition it should not).
        state: its :class:`MemberState`.
        instance_id: ``group.instance.id`` (static membership), or None.
        rack_id: ``client.rack``, or None.
        rebalance_timeout_ms: how long it may take to revoke partitions before it is fenced.
        client_id, client_host: from its request header and connection.
        subscribed_topic_names: the topics it subscribes to by name.
        subscribed_topic_regex: the regular expression it subscribes with, or None.
        server_assignor_name: the server assignor it asked for, or None.
        assigned_partitions: the partitions it may consume now.
        partitions_pending_revocation: partitions it must give up (it still owns them until it
            reports them gone).
        classic_member_metadata: for a member using the classic protocol (JoinGroup/SyncGroup/
            Heartbeat in a consumer group, KIP-848's online migration), its session timeout and
            its JoinGroup protocols; None for a member using ConsumerGroupHeartbeat.
    """

    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset[str] = frozenset()
    subscribed_topic_regex: str | None = None
    server_assignor_name: str | None = None
    assigned_partitions: TopicIdPartitions = field(default_factory=dict)
    partitions_pending_revocation: TopicIdPartitions = field(default_factory=dict)
    classic_member_metadata: ClassicMemberMetadata | None = None

    def __post_init__(self) -> None:
        # Normalise once here so that equality means "the same partitions".
        object.__setattr__(self, "assigned_partitions", partitions_of(self.assigned_partitions))
        object.__setattr__(
            self, "partitions_pending_revocation", partitions_of(self.partitions_pending_revocation)
        )
        object.__setattr__(self, "subscribed_topic_names", frozenset(self.subscribed_topic_names))

    @property
    def owned_partitions(self) -> dict[bytes, frozenset[int]]:
        """Assigned and pending-revocation partitions: what no other member may be given."""
        return partitions_union(self.assigned_partitions, self.partitions_pending_revocation)

    @property
    def is_static(self) -> bool:
        return self.instance_id is not None

    @property
    def uses_classic_protocol(self) -> bool:
        """Kafka's ``useClassicProtocol``: the member joined with JoinGroup, not ConsumerGroupHeartbeat."""
        return self.classic_member_metadata is not None

    def is_reconciled_to(self, target_assignment_epoch: int) -> bool:
        """STABLE at *target_assignment_epoch* (Kafka's ``isReconciledTo``)."""
        return self.state is MemberState.STABLE and self.member_epoch == target_assignment_epoch

    def with_epoch(self, member_epoch: int) -> ConsumerGroupMember:
        """Kafka's ``updateMemberEpoch``: the new epoch, the current one becoming the previous."""
        return replace(self, member_epoch=member_epoch, previous_member_epoch=self.member_epoch)
