"""The read path of a :class:`~mafka.log.log.Log`: what a read answers, and how it is found in the segments.

Owns the results of reads — :class:`FetchDataInfo` (a fetch's bytes as a
:class:`~mafka.log.segment.FileRegion`, or a :class:`ColdRead` to do in a
worker), :class:`TimestampAndOffset` (ListOffsets) — and the lock-free half
of every read of ``Log``: :func:`read_segments` (Fetch), :func:`collect_aborted`
(aborted transactions overlapping a range), :func:`batch_headers` (replays
at load), :func:`offset_for_timestamp` and :func:`max_timestamp_and_offset`
(ListOffsets by time).

Locking: nothing here takes a lock or changes a log (:meth:`ColdRead.resolve`
goes through ``Log.read``, which takes it).  ``Log``'s methods hold the log's
lock only to check the range, follow a successor (a moved replica) and copy
the part of the segment list they need — except ``Log.headers_from``, which
copies it without the lock, as it always did — and these functions then read
that copy on the caller's thread, while appends go on: the broker's reactor
for fetches, a cold-read worker for :meth:`ColdRead.resolve`
(``mafka.broker.cold_reads``), whichever thread answers ListOffsets or
replays the log when a partition loads.  That relies on the log's rule that
a deleted segment is renamed ``.deleted`` and closed only
``file.delete.delay.ms`` later, so a copy's segments can still be read, and
on a :class:`~mafka.log.segment.FileRegion` holding the handle of its
descriptor (:mod:`mafka.log.open_files`), so what a read returned stays
readable until it is dropped.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

from mafka.errors import OffsetOutOfRangeError
from mafka.wire.batch import BatchHeader
from mafka.wire.records import decode_batch

from .segment import BatchPosition, FileRegion, LogSegment
from .txn_index import AbortedTxn

__all__ = [
    "ColdRead",
    "FetchDataInfo",
    "ReadableLog",
    "TimestampAndOffset",
    "batch_headers",
    "collect_aborted",
    "max_timestamp_and_offset",
    "offset_for_timestamp",
    "read_segments",
]


class ReadableLog(Protocol):
    """What a :class:`ColdRead` needs of its log (:class:`mafka.log.log.Log` is one).

    ``cold_directory`` is the partition's dir in a cold log dir, or None (see
    :mod:`mafka.log.tiering`): the cold-read worker (``mafka.broker.cold_reads``)
    names the cold dir a read went to by it, for its latencies and I/O errors.
    """

    cold_directory: Path | None

    def read(
        self,
        offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        *,
        min_one_batch: bool = True,
        include_aborted_txns: bool = False,
        defer_cold: bool = False,
    ) -> FetchDataInfo: ...


@dataclass(frozen=True, slots=True)
class FetchDataInfo:
    """A read's result: the bytes to send (None when there is nothing to return).

    ``aborted_transactions`` is None unless the read asked for them
    (READ_COMMITTED); then it lists the aborted transactions overlapping the
    returned range (empty when nothing was returned).
    """

    fetch_offset: int
    region: FileRegion | ColdRead | None
    aborted_transactions: list[AbortedTxn] | None = None

    @property
    def size(self) -> int:
        return self.region.length if self.region else 0

    def read(self) -> bytes:
        return self.region.read() if self.region else b""


@dataclass(frozen=True, slots=True)
class ColdRead:
    """A read that starts in a cold segment, to be done off the reactor (``Log.read(defer_cold=True)``).

    Finding the batch that holds an offset reads batch headers from the
    segment file; on a slow device that is a disk wait, which must not happen
    on the thread serving tailing reads.  The fetch path carries this instead
    of a :class:`FileRegion` and :meth:`resolve` s it in a worker
    (``mafka.broker.cold_reads``).  ``length`` is an upper bound of the bytes
    it will give (for fetch-size accounting), ``cold`` is always true.
    """

    log: ReadableLog
    offset: int
    max_bytes: int
    max_offset: int | None
    min_one_batch: bool
    include_aborted_txns: bool
    length: int
    cold: bool = True

    def __len__(self) -> int:
        return self.length

    def resolve(self) -> FetchDataInfo:
        """The read itself (blocking: call it in a worker thread).

        Nothing (not an error) if the offset left the log meanwhile (retention,
        truncation): the consumer's next fetch gets OFFSET_OUT_OF_RANGE then.
        """
        try:
            return self.log.read(self.offset, self.max_bytes, self.max_offset, min_one_batch=self.min_one_batch,
                                 include_aborted_txns=self.include_aborted_txns)
        except OffsetOutOfRangeError:
            return FetchDataInfo(self.offset, None, [] if self.include_aborted_txns else None)

    def read(self) -> bytes:
        return self.resolve().read()


@dataclass(frozen=True, slots=True)
class TimestampAndOffset:
    """A ListOffsets answer: the record's timestamp and offset, and its batch's leader epoch (−1 unknown)."""

    timestamp: int
    offset: int
    leader_epoch: int = -1


def collect_aborted(segments: list[LogSegment], fetch_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
    """Each segment's aborted transactions overlapping the range, until one says the search is complete."""
    found: list[AbortedTxn] = []
    for seg in segments:
        result = seg.txn_index.collect_aborted_txns(fetch_offset, upper_bound_offset)
        found.extend(result.aborted_transactions)
        if result.is_complete:
            break
    return found


def read_segments(
    segments: list[LogSegment],
    offset: int,
    max_bytes: int,
    upper: int,
    end: int,
    min_one_batch: bool,
    include_aborted_txns: bool,
    nothing: FetchDataInfo,
) -> FetchDataInfo:
    """The fetch half of :meth:`Log.read <mafka.log.log.Log.read>`: the bytes from the batch holding
    *offset* in *segments* (those from the one holding it on), below *upper*, or *nothing*.

    *end* is the log end offset the snapshot was taken at (the bound of the
    last segment's aborted transactions).
    """
    for k, seg in enumerate(segments):
        max_position = None
        if upper < seg.next_offset:
            boundary = seg.translate_offset(upper)
            max_position = boundary.position if boundary is not None else None
        region = seg.read(offset, max_bytes, max_position, min_one_batch=min_one_batch)
        if region is not None:
            if not include_aborted_txns:
                return FetchDataInfo(offset, region)
            bound = seg.fetch_upper_bound_offset(region.position + region.length)
            if bound is None:
                bound = segments[k + 1].base_offset if k + 1 < len(segments) else end
            return FetchDataInfo(offset, region, collect_aborted(segments[k:], offset, bound))
        if upper <= seg.next_offset:
            break
    return nothing


def batch_headers(segments: list[LogSegment], start: int) -> Iterator[tuple[LogSegment, BatchPosition, BatchHeader]]:
    """Every batch of *segments* ending at or past *start*, with its segment, position and header
    (torn ones skipped); see :meth:`Log.headers_from <mafka.log.log.Log.headers_from>`.

    While a batch is handed out, the iteration holds its segment's ``.log``
    handle (``seg.batches()`` does), so the caller may read the batch through
    ``seg.fd`` or ``seg.read_at``."""
    for seg in list(segments):
        if seg.next_offset <= start:
            continue
        for bp in seg.batches():
            if bp.last_offset < start:
                continue
            h = seg.header_at(bp.position)
            if h is not None:
                yield seg, bp, h


def offset_for_timestamp(segments: list[LogSegment], start: int, upper: int,
                         timestamp: int) -> TimestampAndOffset | None:
    """The first record of *segments* with a timestamp ≥ *timestamp* in [*start*, *upper*)."""
    for seg in segments:
        if seg.largest_timestamp < timestamp:
            continue
        bp = seg.find_offset_by_timestamp(timestamp)
        while bp is not None:
            if bp.base_offset >= upper:
                return None
            data = seg.read_at(bp.position, bp.size)
            decoded = decode_batch(data)
            if not decoded.header.is_control:
                for record in decoded.records:
                    if record.timestamp >= timestamp and start <= record.offset < upper:
                        epoch = decoded.header.partition_leader_epoch
                        return TimestampAndOffset(record.timestamp, record.offset, max(epoch, -1))
            bp = next(seg.batches(bp.position + bp.size), None)
    return None


def max_timestamp_and_offset(segments: list[LogSegment]) -> TimestampAndOffset | None:
    """The earliest record holding the largest timestamp in *segments*; see
    :meth:`Log.max_timestamp_and_offset <mafka.log.log.Log.max_timestamp_and_offset>`."""
    best = None
    for seg in segments:
        if seg.max_timestamp >= 0 and (best is None or seg.max_timestamp > best.max_timestamp):
            best = seg
    if best is None:
        return None
    target = best.max_timestamp
    _, position = best.index.lookup(best.offset_of_max_timestamp)
    bp = next((b for b in best.batches(position) if b.max_timestamp == target), None)
    if bp is None:
        return None
    data = best.read_at(bp.position, bp.size)
    decoded = decode_batch(data, verify_crc=False)
    epoch = max(decoded.header.partition_leader_epoch, -1)
    for record in decoded.records:
        if record.timestamp == target:
            return TimestampAndOffset(target, record.offset, epoch)
    # A client-built batch whose header max disagrees with its records: the batch's
    # last offset, the answer Kafka gave before it looked inside the batch.
    return TimestampAndOffset(target, bp.last_offset, epoch)
