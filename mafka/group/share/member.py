"""One member of a share group (KIP-932): Kafka 4's ``ShareGroupMember`` as a frozen value.

A member is a frozen :class:`ShareGroupMember`; every change makes a new one
(:func:`dataclasses.replace`), so the group compares the member before and after a heartbeat
to decide which records to write, exactly as Kafka's ``GroupMetadataManager`` compares
``member`` and ``updatedMember``.

Share group members are simpler than consumer group members: no instance id, no rebalance
timeout, no server assignor, no partitions pending revocation (a share-partition may be
consumed by several members at once, so a member gets its target assignment directly, with
no revocation first), and their state is always ``STABLE`` unless a newer coordinator wrote
something else.  Partitions are named by topic id, as in the records and the heartbeat.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace

from mafka.group.consumer.member import MemberState, TopicIdPartitions, partitions_of

__all__ = ["LEAVE_GROUP_MEMBER_EPOCH", "MemberState", "ShareGroupMember"]

#: ShareGroupHeartbeat's member epoch of a member leaving the group
LEAVE_GROUP_MEMBER_EPOCH = -1


@dataclass(frozen=True)
class ShareGroupMember:
    """One member (Kafka 4's ``ShareGroupMember``), immutable.

    Attributes:
        member_id: the member id (chosen by the client: ShareGroupHeartbeat v1).
        member_epoch: the epoch the member must send in its next heartbeat.
        previous_member_epoch: the epoch before the last bump (a member whose bumped epoch was
            lost may still heartbeat with it).
        state: its :class:`~mafka.group.consumer.member.MemberState` (always STABLE here).
        rack_id: ``client.rack``, or None.
        client_id, client_host: from its request header and connection.
        subscribed_topic_names: the topics it subscribes to (share groups have no regex).
        assigned_partitions: the share-partitions it may fetch from now.
    """

    member_id: str
    member_epoch: int = 0
    previous_member_epoch: int = -1
    state: MemberState = MemberState.STABLE
    rack_id: str | None = None
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: frozenset[str] = frozenset()
    assigned_partitions: TopicIdPartitions = field(default_factory=dict)

    def __post_init__(self) -> None:
        # Normalise once here so that equality means "the same partitions and topics".
        object.__setattr__(self, "assigned_partitions", partitions_of(self.assigned_partitions))
        object.__setattr__(self, "subscribed_topic_names", frozenset(self.subscribed_topic_names))

    def is_reconciled_to(self, target_assignment_epoch: int) -> bool:
        """STABLE at *target_assignment_epoch* (Kafka's ``isReconciledTo``)."""
        return self.state is MemberState.STABLE and self.member_epoch == target_assignment_epoch

    def with_epoch(self, member_epoch: int) -> ShareGroupMember:
        """Kafka's ``updateMemberEpoch``: the new epoch, the current one becoming the previous."""
        return replace(self, member_epoch=member_epoch, previous_member_epoch=self.member_epoch)
