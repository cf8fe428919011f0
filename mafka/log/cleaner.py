"""Log compaction for ``cleanup.policy=compact`` (and ``compact,delete``).

Kafka 2.8's ``LogCleaner`` / ``LogCleanerManager`` / ``OffsetMap`` for one
:class:`~mafka.log.log.Log`, as plain functions: no threads, no clock of its
own (``now_ms`` is passed in), no checkpoint file (the caller keeps
``cleaner-offset-checkpoint`` and passes the first dirty offset in; the
result says what to checkpoint next).  The broker runs :func:`clean` off its
event loop; appends keep flowing because the log's lock is held only to read
the segment list and to swap a cleaned segment in.

One round (:func:`clean`):

1. **Range** (:func:`cleanable_range`).  firstDirty is the checkpoint, reset
   to the log start offset when missing, below the log start or past the log
   end.  firstUncleanable is the smallest of the active segment's base, the
   first unstable offset (the first offset of a transaction that has no
   marker yet, found by a header scan of the log, or passed in) and the base
   of the first dirty segment whose largest timestamp is newer than
   ``now - min.compaction.lag.ms``; it is rounded down to a segment base and
   never below firstDirty.  The active segment is never touched.
2. **Map** (:class:`OffsetMap`): key hash → last offset over
   [firstDirty, firstUncleanable), skipping control batches and aborted
   transactions.  A map that fills stops at the first record whose key does
   not fit; that offset is the next firstDirty and records at or past it are
   kept as they are.
3. **Recopy** every segment from the log start to the map's end, in groups
   (total size ≤ ``segment.bytes``, index entries within capacity, offset
   span within an int32: Kafka's ``groupSegmentsBySize``), each into a new
   segment ``<base>.log.cleaned``.  A record is kept iff its offset is past
   the map's end, or it has a key whose map offset is ≤ its own (a key only
   in the clean part is kept), and it is not a tombstone (null value) in a
   segment last modified at or before the delete horizon
   (``lastModified(last clean segment) - delete.retention.ms``; no horizon on
   the first clean, so tombstones survive it).  Keyless records are dropped.
   Batches of aborted transactions are dropped.  A transaction marker is
   copied unchanged while a batch of its transaction is seen in the round,
   and dropped otherwise once its segment is past the delete horizon
   (Kafka's ``CleanedTransactionMetadata``: a reader that saw the data in
   time saw the marker too); the source segments' ``.txnindex`` entries are
   copied into the cleaned segment's for the aborted transactions whose data
   was seen.  A batch that keeps every record is copied byte for byte; one
   that keeps some is re-encoded as one batch with the original attributes
   (codec, timestamp type, transactional flag), producer id/epoch, base
   sequence, partitionLeaderEpoch, base offset and *last* offset (Kafka's
   ``overrideLastOffset``; retained records keep their offsets, gaps and
   all) and a fresh CRC; one that keeps none disappears, unless it is its
   producer's last data batch in the log, which stays as an empty batch
   header so the producer's sequence survives (Kafka's ``RETAIN_EMPTY``).
4. **Swap**: the cleaned segment is flushed, given the last source
   segment's mtime (Kafka does this: the delete horizon is computed from
   it) and swapped in with :meth:`Log.replace_segments` (crash-safe:
   ``.cleaned`` → ``.swap`` → final name).  If retention or truncation
   removed or changed one of the group's segments meanwhile, that group is
   abandoned (its ``.cleaned`` files deleted) and the round goes on; if the
   log was truncated below the map's end (the map may name records that no
   longer exist), the rest of the round is abandoned.  The broker should
   still pause cleaning around a truncation, as Kafka does
   (``abortAndPauseCleaning``): groups swapped before it are not undone.
"""

from __future__ import annotations

import bisect
import logging
import os
import struct
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field

import xxhash

from mafka.wire.batch import (
    BATCH_HEADER_SIZE,
    CONTROL_FLAG_MASK,
    CRC_OFFSET,
    HEADER_STRUCT,
    LAST_OFFSET_DELTA_OFFSET,
    MAGIC_V2,
    MAX_TIMESTAMP_OFFSET,
    MIN_BATCH_LENGTH,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
    BatchHeader,
    crc_of,
    validate_batch,
)
from mafka.wire.errors import CorruptRecordBatch, ProtocolError
from mafka.wire.records import ControlRecordType, Record, build_batch, decode_batch

from .log import Log
from .segment import INT32_MAX, BatchPosition, LogSegment

__all__ = [
    "CLEANED_SUFFIX",
    "DEFAULT_DEDUPE_BUFFER_SIZE",
    "DEFAULT_MAX_MAP_ENTRIES",
    "CleanResult",
    "OffsetMap",
    "clean",
    "cleanable_range",
    "delete_horizon_ms",
    "dirty_ratio",
    "group_segments_by_size",
    "map_entries_for_buffer",
    "max_compaction_delay",
    "needs_cleaning",
]

logger = logging.getLogger("mafka.log.cleaner")

CLEANED_SUFFIX = ".cleaned"

#: Kafka's ``log.cleaner.dedupe.buffer.size`` default and its cost per entry
#: (a 16-byte MD5 plus an 8-byte offset) and load factor.
DEFAULT_DEDUPE_BUFFER_SIZE = 128 * 1024 * 1024
_KAFKA_BYTES_PER_ENTRY = 24
_KAFKA_LOAD_FACTOR = 0.9

#: Default map capacity.  Kafka's default buffer holds ~5.0M entries, but a
#: CPython dict of int → int costs ~100 bytes an entry, so 5M would take
#: half a gigabyte; one million (~100 MB at worst, freed after each round)
#: is the default here.  A log with more distinct keys in its dirty range is
#: simply cleaned over several rounds, as in Kafka.
DEFAULT_MAX_MAP_ENTRIES = 1_000_000

_WRITE_CHUNK = 1 << 20  # bytes buffered before appending to the cleaned segment
_READ_WINDOW = 1 << 20
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U32 = struct.Struct(">I")


def map_entries_for_buffer(buffer_bytes: int = DEFAULT_DEDUPE_BUFFER_SIZE, load_factor: float = _KAFKA_LOAD_FACTOR) -> int:
    """The entry count Kafka's map holds in *buffer_bytes* (24 bytes an entry, *load_factor* full)."""
    return int(buffer_bytes // _KAFKA_BYTES_PER_ENTRY * load_factor)


# ====================================================================== offset map


class OffsetMap:
    """Key → last offset over the dirty range, bounded by *max_entries* distinct keys.

    Keys are stored by their 64-bit xxHash (as Kafka stores an MD5), so two
    keys that collide share an entry; at a million keys the chance of any
    collision is about 3·10⁻⁸.  :meth:`put` of a new key into a full map is
    refused (returns False); updating a key already present always works.
    """

    __slots__ = ("max_entries", "latest_offset", "_map")

    def __init__(self, max_entries: int = DEFAULT_MAX_MAP_ENTRIES) -> None:
        if max_entries < 1:
            raise ValueError(f"an offset map needs room for at least one entry, not {max_entries}")
        self.max_entries = max_entries
        #: The last offset the map accounts for (records past it are never compacted this round).
        self.latest_offset = -1
        self._map: dict[int, int] = {}

    @staticmethod
    def hash_key(key: bytes | bytearray | memoryview) -> int:
        return xxhash.xxh64_intdigest(key)

    def put(self, key: bytes | bytearray | memoryview, offset: int) -> bool:
        """Records *offset* as *key*'s latest; False (and nothing stored) if a new key finds the map full."""
        h = xxhash.xxh64_intdigest(key)
        m = self._map
        if len(m) >= self.max_entries and h not in m:
            return False
        m[h] = offset
        return True

    def get(self, key: bytes | bytearray | memoryview) -> int:
        """The offset stored for *key*, or -1."""
        return self._map.get(xxhash.xxh64_intdigest(key), -1)

    def __contains__(self, key: bytes | bytearray | memoryview) -> bool:
        return xxhash.xxh64_intdigest(key) in self._map

    def __len__(self) -> int:
        return len(self._map)

    @property
    def is_full(self) -> bool:
        return len(self._map) >= self.max_entries

    @property
    def utilization(self) -> float:
        return len(self._map) / self.max_entries

    def clear(self) -> None:
        self._map.clear()
        self.latest_offset = -1


# ====================================================================== what to clean


def _bases(segments: Sequence[LogSegment]) -> list[int]:
    return [s.base_offset for s in segments]


def _segments_in(segments: Sequence[LogSegment], start: int, end: int) -> list[LogSegment]:
    """Kafka's ``logSegments(from, to)``: from the segment holding *start* to the last based below *end*."""
    if start >= end:
        return []
    bases = _bases(segments)
    i = max(0, bisect.bisect_right(bases, start) - 1)
    j = bisect.bisect_left(bases, end)
    return list(segments[i:j])


def _floor_base(segments: Sequence[LogSegment], offset: int) -> int:
    """The base of the segment holding *offset* (the first segment's if below it)."""
    i = max(0, bisect.bisect_right(_bases(segments), offset) - 1)
    return segments[i].base_offset


def _snapshot(log: Log) -> tuple[list[LogSegment], int, int]:
    with log._lock:
        return list(log.segments), log.log_start_offset, log.next_offset


def _valid_first_dirty(log: Log, first_dirty_offset: int | None, start: int, end: int) -> int:
    if first_dirty_offset is None:
        return start
    if first_dirty_offset < start:
        if not log.config.delete:  # compact,delete logs move their start all the time
            logger.warning(
                "%s: resetting first dirty offset to log start offset %d since the checkpointed offset %d is invalid",
                log.directory.name,
                start,
                first_dirty_offset,
            )
        return start
    if first_dirty_offset > end:
        logger.warning(
            "%s: first dirty offset %d is past the log end offset %d; resetting to the log start offset %d",
            log.directory.name,
            first_dirty_offset,
            end,
            start,
        )
        return start
    return first_dirty_offset


def _range(
    log: Log, segments: list[LogSegment], start: int, end: int, first_dirty_offset: int | None, now_ms: int, first_unstable_offset: int | None
) -> tuple[int, int]:
    first_dirty = _valid_first_dirty(log, first_dirty_offset, start, end)
    active = segments[-1]
    candidates = [active.base_offset]
    if first_unstable_offset is not None:
        candidates.append(first_unstable_offset)
    lag = max(log.config.min_compaction_lag_ms, 0)
    if lag > 0:
        for seg in _segments_in(segments, first_dirty, active.base_offset):
            if seg.largest_timestamp > now_ms - lag:
                candidates.append(seg.base_offset)
                break
    uncleanable = min(candidates)
    uncleanable = active.base_offset if uncleanable >= active.base_offset else _floor_base(segments, uncleanable)
    return first_dirty, max(first_dirty, uncleanable)


def cleanable_range(
    log: Log, first_dirty_offset: int | None, now_ms: int, *, first_unstable_offset: int | None = None
) -> tuple[int, int]:
    """``(first_dirty, first_uncleanable)`` for a round (Kafka's ``cleanableOffsets``).

    Args:
        first_dirty_offset: from ``cleaner-offset-checkpoint`` (None if absent);
            reset to the log start offset if below it or past the log end.
        now_ms: the current time, for ``min.compaction.lag.ms``.
        first_unstable_offset: the first offset of an open transaction, if the
            caller knows it (:func:`clean` also finds it itself).

    first_uncleanable is a segment base (the active segment's at most) and
    never below first_dirty; [first_dirty, first_uncleanable) is what a round
    may compact.
    """
    segments, start, end = _snapshot(log)
    return _range(log, segments, start, end, first_dirty_offset, now_ms, first_unstable_offset)


def _clean_and_dirty_bytes(segments: Sequence[LogSegment], first_dirty: int, first_uncleanable: int) -> tuple[int, int]:
    clean_bytes = sum(s.size for s in _segments_in(segments, -1, first_dirty))
    dirty_bytes = sum(s.size for s in _segments_in(segments, min(first_dirty, first_uncleanable), first_uncleanable))
    return clean_bytes, dirty_bytes


def dirty_ratio(log: Log, first_dirty: int, first_uncleanable: int) -> float:
    """Dirty bytes ÷ (clean + dirty bytes), by whole segments as Kafka's ``LogToClean`` counts them.

    Clean bytes are the segments based below *first_dirty*; dirty bytes the
    segments overlapping [first_dirty, first_uncleanable) (a segment that
    holds first_dirty counts on both sides, as in Kafka).  0.0 for no bytes.
    """
    segments, _, _ = _snapshot(log)
    clean_bytes, dirty_bytes = _clean_and_dirty_bytes(segments, first_dirty, first_uncleanable)
    total = clean_bytes + dirty_bytes
    return dirty_bytes / total if total else 0.0


def _max_compaction_delay(log: Log, segments: Sequence[LogSegment], first_dirty: int, now_ms: int) -> int:
    dirty = _segments_in(segments, first_dirty, segments[-1].base_offset)
    firsts = [s.rolling_based_timestamp for s in dirty if s.rolling_based_timestamp is not None and s.rolling_based_timestamp > 0]
    if not firsts:
        return 0
    clean_until = now_ms - max(log.config.max_compaction_lag_ms, 0)
    earliest = min(firsts)
    return clean_until - earliest if earliest < clean_until else 0


def max_compaction_delay(log: Log, first_dirty: int, now_ms: int) -> int:
    """How long (ms) the oldest dirty record has waited past ``max.compaction.lag.ms``; 0 if none has.

    Kafka's ``maxCompactionDelay``: the earliest first-batch timestamp of the
    dirty non-active segments against ``now - max.compaction.lag.ms``.
    """
    segments, _, _ = _snapshot(log)
    return _max_compaction_delay(log, segments, first_dirty, now_ms)


def needs_cleaning(log: Log, first_dirty: int | None, now_ms: int, *, first_unstable_offset: int | None = None) -> bool:
    """Whether the log should be compacted now (Kafka's ``grabFilthiestCompactedLog`` filter).

    True for a compacted log whose dirty ratio is *above*
    ``min.cleanable.dirty.ratio`` (strictly, as Kafka compares), or that has
    cleanable bytes and a dirty record older than ``max.compaction.lag.ms``.
    """
    if not log.config.compact:
        return False
    segments, start, end = _snapshot(log)
    fd, fu = _range(log, segments, start, end, first_dirty, now_ms, first_unstable_offset)
    clean_bytes, dirty_bytes = _clean_and_dirty_bytes(segments, fd, fu)
    total = clean_bytes + dirty_bytes
    if total == 0:
        return False
    if dirty_bytes > 0 and _max_compaction_delay(log, segments, fd, now_ms) > 0:
        return True
    return dirty_bytes / total > log.config.min_cleanable_dirty_ratio


def delete_horizon_ms(log: Log, first_dirty: int) -> int | None:
    """Tombstones in segments last modified at or before this go (Kafka 2.8's rule).

    The last modification time of the last segment based below *first_dirty*
    (the newest clean segment) minus ``delete.retention.ms``; None when
    nothing is clean yet (the first clean keeps every tombstone).
    """
    segments, _, _ = _snapshot(log)
    return _delete_horizon(log, segments, first_dirty)


def _delete_horizon(log: Log, segments: Sequence[LogSegment], first_dirty: int) -> int | None:
    clean = _segments_in(segments, -1, first_dirty)
    if not clean:
        return None
    return clean[-1].last_modified_ms - log.config.delete_retention_ms


# ====================================================================== grouping


def group_segments_by_size(
    segments: Sequence[LogSegment],
    max_size: int,
    max_index_entries: int,
    max_time_index_entries: int,
    first_uncleanable: int,
) -> list[list[LogSegment]]:
    """Kafka's ``groupSegmentsBySize``: consecutive runs to merge into one cleaned segment each.

    A group's total size stays ≤ *max_size* (``segment.bytes``), its index
    entries within the cleaned segment's capacity, and every offset it may
    hold within an int32 of its first base (a segment's last offset is
    estimated as the next segment's base − 1, or *first_uncleanable* − 1 for
    the last).  A group always takes at least one segment.
    """
    groups: list[list[LogSegment]] = []
    i, n = 0, len(segments)
    while i < n:
        first = segments[i]
        group = [first]
        size, entries, time_entries = first.size, len(first.index), len(first.time_index)
        i += 1
        while i < n:
            nxt = segments[i]
            last_offset = segments[i + 1].base_offset - 1 if i + 1 < n else first_uncleanable - 1
            if (
                size + nxt.size > max_size
                or entries + len(nxt.index) > max_index_entries
                or time_entries + len(nxt.time_index) > max_time_index_entries
                or last_offset - first.base_offset > INT32_MAX
            ):
                break
            group.append(nxt)
            size += nxt.size
            entries += len(nxt.index)
            time_entries += len(nxt.time_index)
            i += 1
        groups.append(group)
    return groups


# ====================================================================== reading


def _read_batches(seg: LogSegment, position: int = 0) -> Iterator[tuple[int, BatchHeader, memoryview]]:
    """``(position, header, bytes)`` of every batch from *position* to the segment's size now.

    Reads a window at a time; any inconsistency is corruption (a segment the
    cleaner reads was recovered, or is being appended to only past its size).
    """
    end = seg.size
    # Held for the whole walk: the descriptor stays open even if the LRU evicts the segment's.
    handle = seg.log_file() if position < end else None
    fd = handle.fd if handle is not None else -1
    buf = b""
    buf_start = position
    while position < end:
        rel = position - buf_start
        if rel + BATCH_HEADER_SIZE > len(buf):
            buf = os.pread(fd, min(max(_READ_WINDOW, BATCH_HEADER_SIZE), end - position), position)
            buf_start, rel = position, 0
            if len(buf) < BATCH_HEADER_SIZE:
                raise CorruptRecordBatch(f"{seg.log_path.name}: torn batch header at position {position}")
        h = BatchHeader(buf, rel)
        size = h.size
        if h.batch_length < MIN_BATCH_LENGTH or h.magic != MAGIC_V2 or position + size > end:
            raise CorruptRecordBatch(f"{seg.log_path.name}: invalid batch header at position {position}")
        if rel + size > len(buf):
            buf = os.pread(fd, min(max(_READ_WINDOW, size), end - position), position)
            buf_start, rel = position, 0
            if len(buf) < size:
                raise CorruptRecordBatch(f"{seg.log_path.name}: torn batch at position {position}")
        yield position, h, memoryview(buf)[rel : rel + size]
        position += size


@dataclass(slots=True)
class _Transactions:
    """What a header scan of the log says about producers and transactions."""

    aborted: dict[int, list[tuple[int, int]]] = field(default_factory=dict)  # pid -> [(first, last)]
    last_data_batch: dict[int, int] = field(default_factory=dict)  # pid -> last offset of its last data batch
    first_unstable: int | None = None

    def is_aborted(self, h: BatchHeader) -> bool:
        if not h.is_transactional or h.is_control:
            return False
        ranges = self.aborted.get(h.producer_id)
        if not ranges:
            return False
        base = h.base_offset
        return any(first <= base <= last for first, last in ranges)

    def is_producers_last(self, h: BatchHeader) -> bool:
        return h.producer_id >= 0 and not h.is_control and self.last_data_batch.get(h.producer_id) == h.last_offset


def _scan_transactions(segments: Sequence[LogSegment]) -> _Transactions:
    """One pass over every batch header: aborted transactions, open ones, each producer's last batch."""
    txns = _Transactions()
    open_txns: dict[int, int] = {}
    for seg in segments:
        try:
            _scan_segment(seg, txns, open_txns)
        except (OSError, ProtocolError):
            # The active segment may be truncated under us, and any segment
            # deleted by retention and closed; the cleaner only needs what
            # is still there.
            if seg is not segments[-1] and not seg.closed:
                raise
    if open_txns:
        txns.first_unstable = min(open_txns.values())
    return txns


def _scan_segment(seg: LogSegment, txns: _Transactions, open_txns: dict[int, int]) -> None:
    for _, h, data in _read_batches(seg):
        pid = h.producer_id
        if h.is_control:
            if pid < 0 or h.record_count < 1:
                continue
            marker = decode_batch(data).control_records()[0]
            if marker.type == ControlRecordType.ABORT:
                first = open_txns.pop(pid, None)
                if first is not None:
                    txns.aborted.setdefault(pid, []).append((first, h.last_offset))
            elif marker.type == ControlRecordType.COMMIT:
                open_txns.pop(pid, None)
            continue
        if pid >= 0:
            txns.last_data_batch[pid] = h.last_offset
        if h.is_transactional:
            open_txns.setdefault(pid, h.base_offset)


class _MarkerTracker:
    """Which transaction markers a round may drop (Kafka's ``CleanedTransactionMetadata``).

    Fed every batch of the round in log order.  A COMMIT marker may go once no
    batch of its transaction was seen in the round (the data was compacted
    away in an earlier one); an ABORT marker once none of its transaction's
    batches was seen (the cleaner drops aborted data, so after one round only
    a producer's retained empty last batch can keep it).  Either way only in
    a segment past the delete horizon (the caller's ``retain_deletes``), so a
    READ_COMMITTED consumer that read the data in time also reads the marker.
    The aborted transactions whose data was seen keep their ``.txnindex``
    entries (:attr:`kept_aborted`); the others lose them with their marker.
    """

    def __init__(self, txns: _Transactions) -> None:
        self._pending = sorted(
            (first, last, pid) for pid, ranges in txns.aborted.items() for first, last in ranges
        )
        self._next = 0
        self._ongoing_aborted: dict[int, bool] = {}  # pid -> a batch of the transaction was seen
        self._ongoing_committed: set[int] = set()
        self.kept_aborted: set[tuple[int, int]] = set()  # (producer id, marker offset)

    def _open_aborted_up_to(self, offset: int) -> None:
        while self._next < len(self._pending) and self._pending[self._next][0] <= offset:
            _, _, pid = self._pending[self._next]
            self._ongoing_aborted.setdefault(pid, False)
            self._next += 1

    def on_data_batch(self, h: BatchHeader) -> None:
        self._open_aborted_up_to(h.last_offset)
        if not h.is_transactional:
            return
        if h.producer_id in self._ongoing_aborted:
            self._ongoing_aborted[h.producer_id] = True
        else:
            self._ongoing_committed.add(h.producer_id)

    def on_marker(self, h: BatchHeader, marker: int | None) -> bool:
        """Whether the control batch *h* (its record's type, None if it has none) may be dropped.

        *marker* is a :class:`ControlRecordType` when known, else the raw int (as
        :attr:`~mafka.wire.records.ControlRecord.type`).
        """
        self._open_aborted_up_to(h.last_offset)
        if marker is None:
            return True  # an emptied control batch: nothing left to keep
        pid = h.producer_id
        if marker == ControlRecordType.ABORT:
            seen = self._ongoing_aborted.pop(pid, None)
            if seen:
                self.kept_aborted.add((pid, h.last_offset))
                return False
            return True
        if marker == ControlRecordType.COMMIT:
            if pid in self._ongoing_committed:
                self._ongoing_committed.discard(pid)
                return False
            return True
        return False


# ====================================================================== cleaning


@dataclass(frozen=True, slots=True)
class CleanResult:
    """What a round did.

    Attributes:
        first_dirty: the first dirty offset used (the checkpoint, validated).
        next_first_dirty: the offset to checkpoint: first_uncleanable, or
            where the offset map filled, or first_dirty if a truncation
            abandoned the round.
        segments_cleaned: source segments replaced.
        bytes_read / bytes_written: bytes of the replaced segments and of
            their replacements.
        records_kept / records_dropped: records (control records included)
            of the replaced segments kept and removed.
        tombstones_dropped: null-value records among those removed.
        first_uncleanable: the end of the cleanable range.
        groups_aborted: groups abandoned because retention or truncation
            changed their segments meanwhile.
    """

    first_dirty: int
    next_first_dirty: int
    segments_cleaned: int = 0
    bytes_read: int = 0
    bytes_written: int = 0
    records_kept: int = 0
    records_dropped: int = 0
    tombstones_dropped: int = 0
    first_uncleanable: int = -1
    groups_aborted: int = 0


@dataclass(slots=True)
class _Stats:
    bytes_read: int = 0
    bytes_written: int = 0
    records_kept: int = 0
    records_dropped: int = 0
    tombstones_dropped: int = 0

    def add(self, other: _Stats) -> None:
        self.bytes_read += other.bytes_read
        self.bytes_written += other.bytes_written
        self.records_kept += other.records_kept
        self.records_dropped += other.records_dropped
        self.tombstones_dropped += other.tombstones_dropped


class _GroupAborted(Exception):
    pass


class _RoundAborted(Exception):
    """The log was truncated below the offset map's end: its entries may no longer exist."""


def clean(
    log: Log,
    first_dirty: int | None,
    now_ms: int,
    *,
    max_map_entries: int = DEFAULT_MAX_MAP_ENTRIES,
    first_unstable_offset: int | None = None,
) -> CleanResult:
    """Compacts *log* once (Kafka's ``Cleaner.clean``); see the module docstring.

    Runs whatever the dirty ratio (ask :func:`needs_cleaning` first).

    Args:
        first_dirty: from ``cleaner-offset-checkpoint`` (None if absent).
        now_ms: the current time, for ``min.compaction.lag.ms``.
        max_map_entries: the offset map's capacity (see
            :func:`map_entries_for_buffer` for Kafka's
            ``log.cleaner.dedupe.buffer.size``).
        first_unstable_offset: the log's first unstable offset if known (a
            header scan finds open transactions anyway).

    Returns:
        The round's :class:`CleanResult`; checkpoint its ``next_first_dirty``.

    Raises:
        ValueError: the log's cleanup.policy does not include compact.
        CorruptRecordBatch: a corrupt batch in a segment to clean.
    """
    if not log.config.compact:
        raise ValueError(f"{log.directory.name}: cleanup.policy {','.join(log.config.cleanup_policy)} does not compact")
    segments, start, end = _snapshot(log)
    first_dirty, first_uncleanable = _range(log, segments, start, end, first_dirty, now_ms, first_unstable_offset)
    txns = _scan_transactions(segments)
    if txns.first_unstable is not None and txns.first_unstable < first_uncleanable:
        first_uncleanable = max(first_dirty, _floor_base(segments, txns.first_unstable))
    if first_uncleanable <= first_dirty:
        return CleanResult(first_dirty, first_dirty, first_uncleanable=first_uncleanable)

    name = log.directory.name
    horizon = _delete_horizon(log, segments, first_dirty)
    offset_map = OffsetMap(max_map_entries)
    dirty = _segments_in(segments, first_dirty, first_uncleanable)
    end_offset = _build_offset_map(dirty, first_dirty, first_uncleanable, offset_map, txns)
    # A truncation below the map's end deletes the first segment based at or past it
    # (one this round does not touch): while it is there, every mapped offset is too.
    sentinel = next(s for s in segments if s.base_offset >= end_offset)
    offset_map.latest_offset = end_offset - 1
    logger.info(
        "%s: offset map of %d key(s) over [%d, %d) from %d segment(s)%s",
        name,
        len(offset_map),
        first_dirty,
        end_offset,
        len(dirty),
        f"; map full, stopping at {end_offset} short of {first_uncleanable}" if end_offset < first_uncleanable else "",
    )

    to_clean = [s for s in segments if s.base_offset < end_offset]
    config = log.config
    groups = group_segments_by_size(
        to_clean, config.segment_bytes, config.max_index_entries, config.segment_index_bytes // 12, first_uncleanable
    )
    total = _Stats()
    cleaned_segments = 0
    aborted = 0
    next_first_dirty = end_offset
    markers = _MarkerTracker(txns)
    for n, group in enumerate(groups):
        stats = _Stats()
        try:
            swapped = _clean_group(log, group, offset_map, horizon, txns, markers, now_ms, stats, sentinel)
        except _RoundAborted:
            logger.warning(
                "%s: the log was truncated below offset %d while it was being cleaned; abandoning the round",
                name,
                end_offset,
            )
            aborted += len(groups) - n
            next_first_dirty = first_dirty
            break
        if swapped:
            total.add(stats)
            cleaned_segments += len(group)
        else:
            aborted += 1
    result = CleanResult(
        first_dirty=first_dirty,
        next_first_dirty=next_first_dirty,
        segments_cleaned=cleaned_segments,
        bytes_read=total.bytes_read,
        bytes_written=total.bytes_written,
        records_kept=total.records_kept,
        records_dropped=total.records_dropped,
        tombstones_dropped=total.tombstones_dropped,
        first_uncleanable=first_uncleanable,
        groups_aborted=aborted,
    )
    logger.info(
        "%s: cleaned dirty section [%d, %d): %d segment(s) in %d group(s)%s, %d → %d bytes, "
        "%d record(s) kept, %d dropped (%d tombstone(s)); tombstones kept in segments modified after %s",
        name,
        first_dirty,
        next_first_dirty,
        cleaned_segments,
        len(groups) - aborted,
        f" ({aborted} aborted)" if aborted else "",
        total.bytes_read,
        total.bytes_written,
        total.records_kept,
        total.records_dropped,
        total.tombstones_dropped,
        "(first clean: all kept)" if horizon is None else horizon,
    )
    return result


def _build_offset_map(
    dirty: Sequence[LogSegment], first_dirty: int, first_uncleanable: int, offset_map: OffsetMap, txns: _Transactions
) -> int:
    """Fills *offset_map* over the dirty range; returns where it stopped (first_uncleanable if complete)."""
    for seg in dirty:
        position = seg.index.lookup(first_dirty)[1] if seg.base_offset < first_dirty else 0
        for _, h, data in _read_batches(seg, position):
            if h.last_offset < first_dirty or h.is_control or txns.is_aborted(h):
                continue
            if h.base_offset >= first_uncleanable:
                return first_uncleanable
            for record in decode_batch(data).data_records():
                if record.key is not None and record.offset >= first_dirty and not offset_map.put(record.key, record.offset):
                    return record.offset
    return first_uncleanable


def _in_log(log: Log, seg: LogSegment) -> bool:
    return any(s is seg for s in log.segments)


def _group_intact(log: Log, group: list[LogSegment], sizes: list[int]) -> bool:
    """Whether *group* is still a contiguous, unchanged, non-active run of the log (lock held)."""
    segs = log.segments
    try:
        i = next(k for k, s in enumerate(segs) if s is group[0])
    except StopIteration:
        return False
    run = segs[i : i + len(group)]
    return (
        len(run) == len(group)
        and all(a is b for a, b in zip(run, group, strict=True))
        and group[-1] is not segs[-1]
        and all(s.size == n for s, n in zip(group, sizes, strict=True))
    )


def _clean_group(
    log: Log,
    group: list[LogSegment],
    offset_map: OffsetMap,
    horizon: int | None,
    txns: _Transactions,
    markers: _MarkerTracker,
    now_ms: int,
    stats: _Stats,
    sentinel: LogSegment,
) -> bool:
    """Recopies *group* into one ``.cleaned`` segment and swaps it in; False if the group was abandoned.

    Raises:
        _RoundAborted: the log was truncated into the range the offset map covers.
    """
    name = log.directory.name
    sizes = [s.size for s in group]
    cleaned = LogSegment.create(log.directory, group[0].base_offset, log.config, now_ms, suffix=CLEANED_SUFFIX)
    try:
        try:
            retained = []
            for seg in group:
                retain_deletes = horizon is None or seg.last_modified_ms > horizon
                retained.append(retain_deletes)
                _clean_into(seg, cleaned, offset_map, retain_deletes, txns, markers, stats)
            cleaned.flush()
            mtime_ns = group[-1].last_modified_ns
            os.utime(cleaned.log_path, ns=(mtime_ns, mtime_ns))
        except (OSError, ProtocolError):
            # A segment deleted by retention meanwhile (and closed) reads as an
            # error or garbage; anything else is a real failure.
            with log._lock:
                if not _in_log(log, sentinel):
                    raise _RoundAborted() from None
                if _group_intact(log, group, sizes):
                    raise
            raise _GroupAborted() from None
        with log._lock:
            if not _in_log(log, sentinel):
                raise _RoundAborted()
            if not _group_intact(log, group, sizes):
                raise _GroupAborted()
            _copy_txn_indexes(group, cleaned, markers.kept_aborted)
            log.replace_segments(cleaned, group)
    except _GroupAborted:
        cleaned.delete_files()
        logger.info(
            "%s: abandoned cleaning segment(s) %s: they were deleted or changed meanwhile",
            name,
            ",".join(str(s.base_offset) for s in group),
        )
        return False
    except BaseException:
        cleaned.delete_files()
        raise
    logger.info(
        "%s: swapped in cleaned segment %d for segment(s) %s (%s deletes): %d → %d bytes",
        name,
        cleaned.base_offset,
        ",".join(str(s.base_offset) for s in group),
        "retaining" if all(retained) else "discarding" if not any(retained) else "retaining some",
        sum(sizes),
        cleaned.size,
    )
    return True


def _copy_txn_indexes(group: list[LogSegment], cleaned: LogSegment, kept: set[tuple[int, int]]) -> None:
    """The group's ``.txnindex`` entries whose transactions still have data into *cleaned*'s, fsynced.

    As Kafka's cleaner, an aborted transaction stays indexed only while some
    of its batches remain (``kept``: producer id and marker offset, from
    :class:`_MarkerTracker`).  Copied under the log's lock, so an entry the
    partition appends meanwhile (a rebuild at load) is not lost; a stale index
    stays stale.
    """
    index = cleaned.txn_index
    index.reset()
    for seg in group:
        index.extend(t for t in seg.txn_index.all_aborted_txns() if (t.producer_id, t.last_offset) in kept)
    index.stale = any(seg.txn_index.stale for seg in group)
    index.flush()


def _clean_into(
    source: LogSegment,
    dest: LogSegment,
    offset_map: OffsetMap,
    retain_deletes: bool,
    txns: _Transactions,
    markers: _MarkerTracker,
    stats: _Stats,
) -> None:
    """Kafka's ``cleanInto``: filters *source*'s batches into *dest*."""
    chunks: list[bytes | memoryview] = []
    positions: list[BatchPosition] = []
    rel = 0
    for _, h, data in _read_batches(source):
        stats.bytes_read += h.size
        out = _filter_batch(h, data, offset_map, retain_deletes, txns, markers, stats)
        if out is None:
            continue
        nh = h if out is data else BatchHeader(out)
        positions.append(BatchPosition(rel, nh.base_offset, nh.last_offset, len(out), nh.max_timestamp))
        chunks.append(out)
        rel += len(out)
        if rel >= _WRITE_CHUNK:
            dest.append(chunks, positions)
            stats.bytes_written += rel
            chunks, positions, rel = [], [], 0
    if chunks:
        dest.append(chunks, positions)
        stats.bytes_written += rel


def _filter_batch(
    h: BatchHeader,
    data: memoryview,
    offset_map: OffsetMap,
    retain_deletes: bool,
    txns: _Transactions,
    markers: _MarkerTracker,
    stats: _Stats,
) -> bytes | memoryview | None:
    """The batch to write for *data* (itself if unchanged), or None to drop it."""
    if h.is_control:
        validate_batch(data)
        control = decode_batch(data).control_records()
        marker = control[0].type if control else None
        if markers.on_marker(h, marker) and not retain_deletes:
            stats.records_dropped += h.record_count
            return None
        stats.records_kept += h.record_count
        return data
    markers.on_data_batch(h)
    retain_empty = txns.is_producers_last(h)
    if txns.is_aborted(h):
        validate_batch(data)
        stats.records_dropped += h.record_count
        return _empty_batch(h) if retain_empty else None
    records = decode_batch(data).data_records()  # (not a control batch: those returned above)
    kept: list[Record] = []
    latest = offset_map.latest_offset
    for r in records:
        if _retain(r, offset_map, latest, retain_deletes):
            kept.append(r)
        else:
            stats.records_dropped += 1
            if r.value is None:
                stats.tombstones_dropped += 1
    stats.records_kept += len(kept)
    if not kept:
        if not records and retain_empty:
            return data  # already an empty batch, still needed
        return _empty_batch(h) if retain_empty else None
    if len(kept) == len(records):
        return data
    return _rebuild(h, kept)


def _retain(r: Record, offset_map: OffsetMap, latest: int, retain_deletes: bool) -> bool:
    """Kafka's ``shouldRetainRecord``."""
    if r.offset > latest:
        return True
    if r.key is None:
        return False
    found = offset_map.get(r.key)
    if found >= 0 and r.offset < found:
        return False
    return retain_deletes or r.value is not None


def _rebuild(h: BatchHeader, kept: list[Record]) -> bytes:
    """The retained records as one batch with *h*'s attributes, base offset and last offset."""
    out = bytearray(
        build_batch(
            kept,
            base_offset=h.base_offset,
            compression=h.compression,
            producer_id=h.producer_id,
            producer_epoch=h.producer_epoch,
            base_sequence=h.base_sequence,
            is_transactional=h.is_transactional,
            timestamp_type=h.timestamp_type,
            partition_leader_epoch=h.partition_leader_epoch,
        )
    )
    # Kafka's overrideLastOffset: the producer's last sequence must survive.
    _I32.pack_into(out, LAST_OFFSET_DELTA_OFFSET, h.last_offset_delta)
    if h.timestamp_type:
        _I64.pack_into(out, MAX_TIMESTAMP_OFFSET, h.max_timestamp)  # the log append time
    _U32.pack_into(out, CRC_OFFSET, crc_of(out, 0, len(out)))
    return bytes(out)


def _empty_batch(h: BatchHeader) -> bytes:
    """Kafka's ``DefaultRecordBatch.writeEmptyHeader`` for *h* (no records, same offsets and producer)."""
    out = bytearray(BATCH_HEADER_SIZE)
    attributes = h.attributes & (TIMESTAMP_TYPE_MASK | TRANSACTIONAL_FLAG_MASK | CONTROL_FLAG_MASK)
    HEADER_STRUCT.pack_into(
        out,
        0,
        h.base_offset,
        MIN_BATCH_LENGTH,
        h.partition_leader_epoch,
        MAGIC_V2,
        0,
        attributes,
        h.last_offset_delta,
        h.max_timestamp,
        h.max_timestamp,
        h.producer_id,
        h.producer_epoch,
        h.base_sequence,
        0,
    )
    _U32.pack_into(out, CRC_OFFSET, crc_of(out, 0, len(out)))
    return bytes(out)
