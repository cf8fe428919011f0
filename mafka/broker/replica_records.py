"""The records the ReplicaManager's callers and collaborators exchange with it.

Owns the plain data of the replica layer's API: where a follower fetches
from (:class:`FollowerTarget`), one partition of a fetch request and of its
answer (:class:`FetchPartition`, :class:`FetchedPartition`), one
WriteTxnMarkers entry (:data:`TxnMarker`), one partition's produce outcome
(:class:`ProduceResult`), and Kafka's rule for which fetches read only a
leader (:func:`fetch_only_from_leader`).  No behaviour beyond that: the
logic is in :mod:`mafka.broker.replica_manager` and
:mod:`mafka.broker.waiting_rooms`, which both use these records (and
:mod:`mafka.broker.replica_manager` re-exports them).
"""

from __future__ import annotations

from dataclasses import dataclass

from mafka.errors import ErrorCode

from .partition import ReadResult
from .replica_selector import ClientMetadata

__all__ = [
    "FetchPartition",
    "FetchedPartition",
    "FollowerTarget",
    "ProduceResult",
    "TxnMarker",
    "fetch_only_from_leader",
]


@dataclass(frozen=True, slots=True)
class FollowerTarget:
    """Where a follower partition fetches from, and at which leader epoch."""

    leader_id: int
    host: str
    port: int
    leader_epoch: int


@dataclass(frozen=True, slots=True)
class FetchPartition:
    topic: str
    partition: int
    fetch_offset: int
    max_bytes: int
    current_leader_epoch: int = -1
    #: A follower's log start offset (Fetch v5+; −1 from consumers).
    log_start_offset: int = -1


@dataclass(slots=True)
class FetchedPartition:
    topic: str
    partition: int
    error: ErrorCode
    result: ReadResult | None
    #: KIP-392: the replica the consumer should fetch from instead (then ``result`` has no records); −1 none.
    preferred_read_replica: int = -1

    @property
    def last_stable_offset(self) -> int:
        """The partition's LSO as of the read (−1 on error)."""
        return self.result.last_stable_offset if self.result is not None else -1

    @property
    def aborted_transactions(self) -> list[tuple[int, int]] | None:
        """``(producer_id, first_offset)`` overlapping the data of a READ_COMMITTED read, else None."""
        return self.result.aborted_transactions if self.result is not None else None


#: One WriteTxnMarkers entry: (topic, partition, producer_id, producer_epoch, coordinator_epoch, commit).
TxnMarker = tuple[str, int, int, int, int, bool]


@dataclass(slots=True)
class ProduceResult:
    error: ErrorCode
    base_offset: int = -1
    log_append_time: int = -1
    log_start_offset: int = -1
    last_offset: int = -1
    #: Produce v8+ (KIP-467): the refused records ``(batch_index, message)`` and the partition's message.
    record_errors: list[tuple[int, str]] | None = None
    error_message: str | None = None


def fetch_only_from_leader(replica_id: int, client_metadata: ClientMetadata | None) -> bool:
    """Whether a fetch may read only a leader.

    Kafka's fetchMessages: followers always, consumers without client metadata (Fetch ≤ v10).
    """
    return replica_id >= 0 or client_metadata is None
