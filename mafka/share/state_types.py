"""What is sent to the share coordinator and what comes back, per share-partition.

Kafka's persister parameters and results (``server-common``'s
``org.apache.kafka.server.share.persister``: ``PartitionStateData``,
``PartitionStateBatchData``, ``PartitionErrorData``, ``PartitionAllData``,
``PartitionStateSummaryData``) as frozen values.  The share coordinator
(:class:`~mafka.share.coordinator.ShareCoordinator`) answers with them, the
RPC handlers turn them into responses, and the persister
(:class:`~mafka.broker.share_persister.SharePersister`) hands them to its
callers whether the coordinator was this broker or another one.

A result's ``error`` is an :class:`~mafka.errors.ErrorCode` (NONE on
success) and ``message`` Kafka's error message or None; the other fields of a
failed result are Kafka's defaults and mean nothing.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from mafka.errors import ErrorCode
from mafka.group.share.partition_state import StateBatch, StateWrite

__all__ = [
    "UNINITIALIZED_DELIVERY_COMPLETE_COUNT",
    "UNINITIALIZED_START_OFFSET",
    "InitializeData",
    "PartitionResult",
    "ReadResult",
    "StateBatch",
    "SummaryResult",
    "WriteData",
]

#: Kafka's ``PartitionFactory.UNINITIALIZED_START_OFFSET``: ``share.auto.offset.reset`` decides
UNINITIALIZED_START_OFFSET: Final = -1
#: Kafka's ``PartitionFactory.UNINITIALIZED_DELIVERY_COMPLETE_COUNT`` (KIP-1226: lag unknown)
UNINITIALIZED_DELIVERY_COMPLETE_COUNT: Final = -1


@dataclass(frozen=True, slots=True)
class InitializeData:
    """One InitializeShareGroupState partition: a fresh start at ``start_offset`` (-1: not yet
    known) with ``state_epoch`` (the share group's epoch when it was decided)."""

    state_epoch: int
    start_offset: int = UNINITIALIZED_START_OFFSET


@dataclass(frozen=True, slots=True)
class WriteData:
    """One WriteShareGroupState partition (Kafka's ``PartitionStateBatchData``).

    ``start_offset`` -1 leaves the start offset as it is; ``state_batches`` are
    Kafka's ``PersisterStateBatch``es (delivery state 0 Available, 2
    Acknowledged, 4 Archived), in the order the changes happened, overlaps
    allowed; ``delivery_complete_count`` is KIP-1226's (-1: not tracked).
    """

    state_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...] = ()
    delivery_complete_count: int = UNINITIALIZED_DELIVERY_COMPLETE_COUNT

    @classmethod
    def of(cls, write: StateWrite, delivery_complete_count: int = UNINITIALIZED_DELIVERY_COMPLETE_COUNT) -> WriteData:
        """What :meth:`SharePartitionState.take_state_write
        <mafka.group.share.partition_state.SharePartitionState.take_state_write>` drained, as a write.

        Its ``initialize`` flag is not carried: in Kafka's design a share-partition's
        state is (re)started by the group coordinator's InitializeShareGroupState
        (:class:`InitializeData`), and the share-partition leader only writes.
        """
        return cls(write.state_epoch, write.leader_epoch, write.start_offset, tuple(write.batches),
                   delivery_complete_count)


@dataclass(frozen=True, slots=True)
class PartitionResult:
    """Initialize, write and delete: the error of one share-partition (Kafka's ``PartitionErrorData``)."""

    error: ErrorCode = ErrorCode.NONE
    message: str | None = None


@dataclass(frozen=True, slots=True)
class ReadResult:
    """ReadShareGroupState of one share-partition (Kafka's ``PartitionAllData``): its durable
    state epoch, start offset and state batches (sorted, disjoint)."""

    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    state_epoch: int = 0
    start_offset: int = UNINITIALIZED_START_OFFSET
    state_batches: tuple[StateBatch, ...] = ()


@dataclass(frozen=True, slots=True)
class SummaryResult:
    """ReadShareGroupStateSummary of one share-partition (Kafka's ``PartitionStateSummaryData``).

    A share-partition the coordinator holds no state for answers NONE with
    start offset -1, delivery complete count -1 and epochs 0, as Kafka does.
    """

    error: ErrorCode = ErrorCode.NONE
    message: str | None = None
    state_epoch: int = 0
    leader_epoch: int = 0
    start_offset: int = UNINITIALIZED_START_OFFSET
    delivery_complete_count: int = UNINITIALIZED_DELIVERY_COMPLETE_COUNT
