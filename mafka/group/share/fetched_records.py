"""What a share fetch read from the log, as a share-partition sees it: batches, aborted ranges, the span to send.

A ShareFetch reads a partition's log as a Fetch does (whole RecordBatch v2
batches from the first AVAILABLE offset), then acquires records of what it
read (:meth:`SharePartitionState.acquire <mafka.group.share.partition_state.SharePartitionState.acquire>`)
and sends the batches that hold them.  This module is the plain-Python middle of
that, over batch headers only (the broker reads them, :mod:`mafka.broker.share_fetch`):

* :class:`ScannedBatch` — one whole batch of the read: its offsets, where it lies
  in the bytes read, and the header bits that matter here (control, transactional,
  producer id).  A batch cut short by the read's size limit is never one.
* :func:`fetched_batches` — the batches as the share-partition takes them
  (control batches — transaction markers and Mafka's delayed-message envelopes —
  are gaps, never delivered).
* :func:`aborted_ranges` — read_committed: the offset ranges of the batches of
  aborted transactions (Kafka's consumer rule: a transactional batch of producer
  P is aborted when an aborted transaction of P starts at or before it and its
  ABORT marker comes after it).  They are archived as gaps, as Kafka 4.2's
  ``filterAbortedTransactionalAcquiredRecords`` drops them from the acquired records.
* :func:`records_span` — which bytes to answer: Kafka's ``maybeSliceFetchRecords``,
  from the batch holding the first acquired offset to the batch holding the last
  one, as one contiguous slice (batches between them that hold no acquired record
  go too; the client keeps only the acquired offsets).
"""

from __future__ import annotations

import bisect
from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from mafka.group.share.partition_state import AcquiredRecords, FetchedBatch

__all__ = ["AbortedTransaction", "ScannedBatch", "aborted_ranges", "fetched_batches", "records_span"]


@dataclass(frozen=True, slots=True)
class ScannedBatch:
    """One whole batch of a read: offsets ``first_offset..last_offset``, ``size`` bytes at
    ``position`` (relative to the start of the read)."""

    first_offset: int
    last_offset: int
    position: int
    size: int
    control: bool = False
    transactional: bool = False
    producer_id: int = -1


@dataclass(frozen=True, slots=True)
class AbortedTransaction:
    """An aborted transaction of the log's transaction index: producer ``producer_id``'s
    records from ``first_offset`` up to its ABORT marker at ``last_offset``."""

    producer_id: int
    first_offset: int
    last_offset: int


def fetched_batches(batches: Sequence[ScannedBatch]) -> list[FetchedBatch]:
    """The batches as :meth:`SharePartitionState.acquire` takes them (control batches are gaps)."""
    return [FetchedBatch(b.first_offset, b.last_offset, b.control) for b in batches]


def aborted_ranges(batches: Sequence[ScannedBatch], aborted: Iterable[AbortedTransaction]) -> list[tuple[int, int]]:
    """The inclusive offset ranges of *batches* that belong to an aborted transaction."""
    by_producer: dict[int, list[tuple[int, int]]] = {}
    for txn in aborted:
        by_producer.setdefault(txn.producer_id, []).append((txn.first_offset, txn.last_offset))
    if not by_producer:
        return []
    out: list[tuple[int, int]] = []
    for b in batches:
        if b.control or not b.transactional:
            continue
        spans = by_producer.get(b.producer_id)
        if spans and any(first <= b.first_offset <= last for first, last in spans):
            if out and out[-1][1] + 1 == b.first_offset:
                out[-1] = (out[-1][0], b.last_offset)
            else:
                out.append((b.first_offset, b.last_offset))
    return out


def records_span(batches: Sequence[ScannedBatch], acquired: Sequence[AcquiredRecords]) -> tuple[int, int]:
    """``(position, length)`` of the bytes holding every acquired offset: from the batch
    holding the first to the batch holding the last; ``(0, 0)`` when nothing was acquired.

    Raises:
        ValueError: an acquired offset lies outside every batch (a caller bug).
    """
    if not acquired:
        return 0, 0
    firsts = [b.first_offset for b in batches]
    lo = bisect.bisect_right(firsts, acquired[0].first_offset) - 1
    hi = bisect.bisect_right(firsts, acquired[-1].last_offset) - 1
    if lo < 0 or hi < 0 or batches[lo].last_offset < acquired[0].first_offset \
            or batches[hi].last_offset < acquired[-1].last_offset:
        raise ValueError(f"acquired records {acquired[0]}..{acquired[-1]} are not in the batches read")
    start = batches[lo].position
    end = batches[hi].position + batches[hi].size
    return start, end - start
