"""A partition replica's log: an ordered list of segments in ``<topic>-<partition>/``.

The log owns offsets: it assigns them to a leader's appends, checks them on
a follower's, serves reads as :class:`~mafka.log.segment.FileRegion` slices,
finds offsets by timestamp, truncates (to an offset, or fully), moves the
log start offset, applies retention, rolls segments and recovers from an
unclean shutdown.  It never decodes records on the append or read path.

Contracts shared by every method:

* time comes from the ``clock`` given at construction (milliseconds);
* no method fsyncs on its own except :meth:`flush` and the directory syncs
  that make segment creation and deletion durable — the broker runs
  :meth:`flush` off its event loop when :meth:`flush_due` says so
  (``flush.messages`` / ``flush.ms``; Kafka's default is never);
* a lock serialises mutations, so :meth:`flush` and the cleaner may run on
  other threads while appends continue;
* the caller bounds reads and retention by the high watermark.

Deleted segments are renamed ``.deleted`` and their files closed and removed
``file.delete.delay.ms`` later (:meth:`delete_pending`), so a read that
copied the segment list can still read them in the meantime, as in Kafka; a
FileRegion handed to a slow reader holds its own descriptor until dropped.

Descriptors (:mod:`mafka.log.open_files`): opening or creating a log leaves
no file open.  The active segment opens its ``.log`` file at its first
append and keeps it until the log rolls (:meth:`LogSegment.seal
<mafka.log.segment.LogSegment.seal>`), deletes or closes it; reads of any
other segment go through a process-wide LRU of open files with a cap.

Transactions (KIP-98): the log keeps each segment's ``.txnindex`` of aborted
transactions but not the producer state that decides what goes in it — the
partition owns that, appends entries with :meth:`append_aborted_txn`, and
bounds READ_COMMITTED reads by its last stable offset.  :meth:`read` with
``include_aborted_txns`` answers the aborted transactions overlapping what it
returns (Kafka's ``Log.read`` with ``FetchTxnCommitted``).  Recovery empties
the transaction indexes of the segments it re-reads and marks them stale
(:attr:`txn_index_rebuild_offset`); the partition rebuilds them while it
replays the log into its producer state.

Two concerns live in their own modules: :mod:`mafka.log.recovery` finds the
segments when the log is opened and recovers them after an unclean shutdown
(before the log is shared, so without the lock), and :mod:`mafka.log.reads`
holds what reads answer (:class:`FetchDataInfo`, :class:`ColdRead`,
:class:`TimestampAndOffset`, re-exported here) and the half of each read
done outside the lock, on the segments the method copied under it.
"""

from __future__ import annotations

import bisect
import contextlib
import logging
import os
import struct
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple

from mafka.errors import InvalidRecordError, MessageTooLargeError, OffsetOutOfRangeError
from mafka.wire.batch import (
    BatchHeader,
    assign_offsets,
    iter_batches,
    set_log_append_time,
)
from mafka.wire.errors import ProtocolError

from .checkpoint import fsync_dir
from .config import LogConfig
from .epoch_cache import LeaderEpochCache
from .reads import (
    ColdRead,
    FetchDataInfo,
    TimestampAndOffset,
    batch_headers,
    collect_aborted,
    max_timestamp_and_offset,
    offset_for_timestamp,
    read_segments,
)
from .recovery import open_segments, recover_segments
from .segment import BatchPosition, LogSegment, renaming_directory
from .txn_index import AbortedTxn

__all__ = ["Log", "LogAppendInfo", "FetchDataInfo", "UnexpectedAppendOffsetError", "TimestampAndOffset"]

log = logging.getLogger("mafka.log")

_PATCH = struct.Struct(">qii")  # baseOffset, batchLength, partitionLeaderEpoch
_new_tuple = tuple.__new__


class UnexpectedAppendOffsetError(ValueError):
    """A follower append whose offsets do not continue the log."""


class LogAppendInfo(NamedTuple):
    """What an append wrote."""

    first_offset: int
    last_offset: int
    max_timestamp: int
    offset_of_max_timestamp: int
    log_append_time: int
    record_count: int
    batch_count: int
    valid_bytes: int
    log_start_offset: int


class Log:
    """The log of one partition replica. Use :meth:`open`."""

    def __init__(
        self,
        directory: Path,
        config: LogConfig,
        clock: Callable[[], int],
        epoch_cache: LeaderEpochCache | None = None,
    ) -> None:
        self.directory = directory
        self.config = config
        self.clock = clock
        self.epoch_cache = epoch_cache if epoch_cache is not None else LeaderEpochCache(None)
        self.segments: list[LogSegment] = []
        self._bases: list[int] = []
        self.log_start_offset = 0
        self.next_offset = 0
        self.recovery_point = 0
        self._unflushed_records = 0
        self._last_flush_ms = clock()
        self._pending_deletes: list[tuple[int, LogSegment]] = []
        #: Directories holding an entry this log created (its own directory in the log dir, a new
        #: segment's files in its directory) that no fsync has made durable yet.  :meth:`flush`
        #: fsyncs them before it advances the recovery point, which is the only promise that
        #: needs them (Kafka 3.x's ``flushDir`` at the flush of a new segment): files a crash
        #: may lose lie above the recovery point, and recovery does without them.  Creating a
        #: log or rolling a segment (on the reactor) thus fsyncs nothing.
        self._unsynced_dirs: set[Path] = set()
        self._lock = threading.RLock()
        self._fast_appends = not config.log_append_time
        self._max_batch = config.max_message_bytes
        #: The log that replaced this one (a replica moved to another log dir), or None.
        self._successor: Log | None = None
        #: Where this log's cold segments live (``mafka.cold.log.dirs``), or None; see ``tiering``.
        self.cold_directory: Path | None = None

    # ================================================================== opening

    @classmethod
    def open(
        cls,
        directory: Path,
        config: LogConfig,
        clock: Callable[[], int],
        *,
        log_start_offset: int = 0,
        recovery_point: int = 0,
        had_clean_shutdown: bool = True,
        epoch_cache: LeaderEpochCache | None = None,
        cold_directory: Path | None = None,
        new_directory: bool = False,
    ) -> Log:
        """Opens (or creates) the log in *directory*, recovering it if needed.

        Args:
            log_start_offset: from ``log-start-offset-checkpoint``.
            recovery_point: from ``recovery-point-offset-checkpoint``; every
                segment from the one holding it onwards is re-read and its
                batches' CRCs checked unless the shutdown was clean.
            had_clean_shutdown: whether the log dir held ``.kafka_cleanshutdown``.
            cold_directory: this partition's dir in a cold log dir (it may not
                exist); segments found there are part of the log, and a move
                interrupted by a crash is completed or undone (``tiering``).
            new_directory: the caller created *directory* and did not fsync its
                parent: the first :meth:`flush` does (see ``_unsynced_dirs``).
        """
        new_directory = new_directory or not directory.is_dir()
        directory.mkdir(parents=True, exist_ok=True)
        self = cls(directory, config, clock, epoch_cache)
        if new_directory:
            self._unsynced_dirs.add(directory.parent)
        self.cold_directory = cold_directory
        now = clock()
        self.segments = open_segments(directory, cold_directory, config, now)
        self._bases = [s.base_offset for s in self.segments]
        if not had_clean_shutdown:
            recover_segments(directory.name, self.segments, self.epoch_cache, recovery_point)
            self._bases = [s.base_offset for s in self.segments]
        if not self.segments:
            self._add_segment(LogSegment.create(directory, log_start_offset, config, now))
        self.next_offset = self.segments[-1].next_offset
        self.log_start_offset = max(log_start_offset, self.segments[0].base_offset)
        if self.next_offset < self.log_start_offset:
            self.truncate_fully_and_start_at(self.log_start_offset)
        self.recovery_point = self.next_offset if had_clean_shutdown else min(recovery_point, self.next_offset)
        self.epoch_cache.truncate_from_end(self.next_offset)
        self.epoch_cache.truncate_from_start(self.log_start_offset)
        return self

    # ================================================================== appending

    @property
    def active_segment(self) -> LogSegment:
        return self.segments[-1]

    def append_as_leader(self, records: bytes | bytearray | memoryview, leader_epoch: int) -> LogAppendInfo:
        """Assigns offsets to *records* (v2 batches as produced) and appends them.

        Each batch's baseOffset and partitionLeaderEpoch are rewritten (a
        16-byte patch written with ``writev`` before the untouched rest, so
        no CRC is recomputed and nothing is copied); with
        ``message.timestamp.type=LogAppendTime`` the batch is copied and its
        CRC recomputed, as Kafka must.  The caller has validated CRCs.

        Raises:
            InvalidRecordError: no batch, a torn or malformed batch.
            MessageTooLargeError: a batch above ``max.message.bytes``.
        """
        view = memoryview(records)
        if self._fast_appends:
            # The common case — one batch, as Produce v3+ sends per partition —
            # on the segment's short path; anything else (several batches,
            # a bad batch, a roll) takes the general path below.
            with self._lock:
                if self._successor is not None:
                    return self._successor.append_as_leader(records, leader_epoch)
                first = self.next_offset
                done = self.segments[-1].append_leader_batch(view, first, leader_epoch, self._max_batch)
                if done is not None:
                    last, max_ts, count, size = done
                    if leader_epoch >= 0:
                        latest = self.epoch_cache.latest_epoch
                        if latest is None or leader_epoch > latest:
                            self.epoch_cache.assign(leader_epoch, first)
                    self.next_offset = last + 1
                    self._unflushed_records += count
                    # tuple.__new__ skips NamedTuple's Python-level __new__ (hot path).
                    return _new_tuple(LogAppendInfo, (first, last, max_ts, last, -1, count, 1, size, self.log_start_offset))
        view, batches = self._batches_of(records)
        now = self.clock()
        with self._lock:
            if self._successor is not None:
                return self._successor.append_as_leader(records, leader_epoch)
            first = offset = self.next_offset
            chunks: list[bytes | memoryview] = []
            positions: list[BatchPosition] = []
            rel = 0
            max_ts, offset_of_max = -1, first
            records_count = 0
            append_time = now if self.config.log_append_time else -1
            for pos, h in batches:
                last = offset + h.last_offset_delta
                if append_time >= 0:
                    copy = bytearray(view[pos : pos + h.size])
                    assign_offsets(copy, 0, offset, leader_epoch)
                    set_log_append_time(copy, 0, append_time)
                    chunks.append(copy)
                    batch_max_ts = append_time
                else:
                    chunks.append(_PATCH.pack(offset, h.batch_length, leader_epoch))
                    chunks.append(view[pos + 16 : pos + h.size])
                    batch_max_ts = h.max_timestamp
                if batch_max_ts > max_ts:
                    max_ts, offset_of_max = batch_max_ts, last
                positions.append(BatchPosition(rel, offset, last, h.size, batch_max_ts))
                rel += h.size
                records_count += h.record_count
                offset = last + 1
            self._maybe_roll(rel, max_ts, offset - 1, first)
            self.active_segment.append(chunks, positions)
            if leader_epoch >= 0:
                latest = self.epoch_cache.latest_epoch
                if latest is None or leader_epoch > latest:
                    self.epoch_cache.assign(leader_epoch, first)
            self.next_offset = offset
            self._unflushed_records += records_count
            return LogAppendInfo(
                first, offset - 1, max_ts, offset_of_max, append_time, records_count, len(batches), rel, self.log_start_offset
            )

    def append_as_follower(self, records: bytes | bytearray | memoryview) -> LogAppendInfo:
        """Appends batches exactly as the leader wrote them.

        Offsets must increase from batch to batch and start at or after the log
        end offset (a compacted leader log has gaps between batches, so gaps
        are allowed, as in Kafka).

        Raises:
            UnexpectedAppendOffsetError: offsets that do not continue the log.
            InvalidRecordError / MessageTooLargeError: as for leaders.
        """
        view, batches = self._batches_of(records)
        with self._lock:
            if self._successor is not None:
                return self._successor.append_as_follower(records)
            first = batches[0][1].base_offset
            if first < self.next_offset:
                raise UnexpectedAppendOffsetError(
                    f"{self.directory.name}: first offset {first} is below the log end offset {self.next_offset}"
                )
            positions = []
            previous = first - 1
            max_ts, offset_of_max = -1, first
            records_count = 0
            for pos, h in batches:
                if h.base_offset <= previous or h.last_offset < h.base_offset:
                    raise UnexpectedAppendOffsetError(f"{self.directory.name}: batch offsets {h.base_offset}..{h.last_offset} do not increase")
                previous = h.last_offset
                if h.max_timestamp > max_ts:
                    max_ts, offset_of_max = h.max_timestamp, h.last_offset
                positions.append(BatchPosition(pos - batches[0][0], h.base_offset, h.last_offset, h.size, h.max_timestamp))
                records_count += h.record_count
            start = batches[0][0]
            end = batches[-1][0] + batches[-1][1].size
            self._maybe_roll(end - start, max_ts, previous, first)
            self.active_segment.append([view[start:end]], positions)
            latest = self.epoch_cache.latest_epoch
            for _, h in batches:
                epoch = h.partition_leader_epoch
                if epoch >= 0 and (latest is None or epoch > latest):
                    self.epoch_cache.assign(epoch, h.base_offset)
                    latest = epoch
            self.next_offset = previous + 1
            self._unflushed_records += records_count
            return LogAppendInfo(first, previous, max_ts, offset_of_max, -1, records_count, len(batches), end - start, self.log_start_offset)

    def _batches_of(self, records: bytes | bytearray | memoryview) -> tuple[memoryview, list[tuple[int, BatchHeader]]]:
        view = memoryview(records)
        try:
            batches = list(iter_batches(view, strict=True))
        except ProtocolError as exc:
            raise InvalidRecordError(str(exc)) from None
        if not batches:
            raise InvalidRecordError("no record batch in the append")
        for _, h in batches:
            if h.size > size_limit(h, self.config.max_message_bytes):
                raise MessageTooLargeError(f"batch of {h.size} bytes exceeds max.message.bytes={self.config.max_message_bytes}")
            if h.last_offset_delta < 0:
                raise InvalidRecordError(f"negative lastOffsetDelta {h.last_offset_delta}")
        return view, batches

    def _maybe_roll(self, size: int, max_timestamp: int, last_offset: int, first_offset: int) -> None:
        if self.active_segment.should_roll(size, max_timestamp, last_offset, self.clock()):
            self._roll_locked(first_offset)

    def roll(self, expected_next_offset: int | None = None) -> LogSegment:
        """Starts a new active segment at max(*expected_next_offset*, log end offset)."""
        with self._lock:
            return self._roll_locked(expected_next_offset)

    def _roll_locked(self, expected_next_offset: int | None) -> LogSegment:
        base = max(expected_next_offset or 0, self.next_offset)
        active = self.active_segment
        active.write_index_pending()  # a rolled segment's index files are complete on disk
        if active.base_offset == base and active.size == 0:
            return active
        if active.size == 0:
            # An empty active segment below the new base is simply replaced.
            self.segments.pop()
            self._bases.pop()
            active.delete_files()
        else:
            active.seal()  # no longer appended to: its descriptor may be evicted (mafka.log.open_files)
        seg = LogSegment.create(self.directory, base, self.config, self.clock())
        self._add_segment(seg)
        return seg

    def _add_segment(self, seg: LogSegment) -> None:
        self.segments.append(seg)
        self._bases.append(seg.base_offset)
        self._unsynced_dirs.add(self.directory)  # fsynced by the next flush

    def update_config(self, config: LogConfig) -> None:
        """Applies a changed topic config (dynamic topic configs take effect at once)."""
        with self._lock:
            self.config = config
            self._fast_appends = not config.log_append_time
            self._max_batch = config.max_message_bytes
            for seg in self.segments:
                seg.update_config(config)

    # ================================================================== reading

    def read(
        self,
        offset: int,
        max_bytes: int,
        max_offset: int | None = None,
        *,
        min_one_batch: bool = True,
        include_aborted_txns: bool = False,
        defer_cold: bool = False,
    ) -> FetchDataInfo:
        """The bytes from the batch holding *offset*, up to *max_bytes* and below *max_offset*.

        Args:
            offset: the fetch offset.
            max_bytes: the size limit (the last batch may be cut short).
            max_offset: the exclusive upper bound (the high watermark for
                consumers, the last stable offset for READ_COMMITTED ones);
                None means the log end offset.
            min_one_batch: return a whole first batch even above *max_bytes* (KIP-74).
            include_aborted_txns: also answer the aborted transactions
                overlapping [*offset*, upper bound), where the upper bound is
                the offset of the first ``.index`` entry at or past the end of
                the returned bytes, else the next segment's base, else the log
                end offset (Kafka's ``addAbortedTransactions``).
            defer_cold: a read starting in a cold segment answers a
                :class:`ColdRead` to resolve in a worker (aborted transactions
                then come with its resolution: here an empty list or None).

        Raises:
            OffsetOutOfRangeError: *offset* is below the log start or above the log end.
        """
        with self._lock:
            if self._successor is not None:
                return self._successor.read(
                    offset, max_bytes, max_offset, min_one_batch=min_one_batch, include_aborted_txns=include_aborted_txns,
                    defer_cold=defer_cold,
                )
            start, end = self.log_start_offset, self.next_offset
            if offset < start or offset > end:
                raise OffsetOutOfRangeError(f"offset {offset} is outside [{start}, {end}] of {self.directory.name}")
            upper = end if max_offset is None else min(max_offset, end)
            nothing = FetchDataInfo(offset, None, [] if include_aborted_txns else None)
            if offset >= upper:
                return nothing
            i = max(0, bisect.bisect_right(self._bases, offset) - 1)
            segments = self.segments[i:]
            if defer_cold and segments[0].cold:
                estimate = max(1, min(max_bytes, segments[0].size))
                lazy = ColdRead(self, offset, max_bytes, max_offset, min_one_batch, include_aborted_txns, estimate)
                return FetchDataInfo(offset, lazy, [] if include_aborted_txns else None)
        return read_segments(segments, offset, max_bytes, upper, end, min_one_batch, include_aborted_txns, nothing)

    def headers_from(self, start: int) -> Iterator[tuple[LogSegment, BatchPosition, BatchHeader]]:
        """Every batch ending at or past *start*, with its segment, position and header (torn ones skipped).

        For replays at load (producer state, the delayed-message index); the
        segments are those of the moment of the call.
        """
        yield from batch_headers(self.segments, start)

    def collect_aborted_transactions(self, start_offset: int, upper_bound_offset: int) -> list[AbortedTxn]:
        """The aborted transactions overlapping [*start_offset*, *upper_bound_offset*).

        Searches the segment holding *start_offset* and the later ones until a
        transaction index says nothing later can overlap (Kafka's
        ``collectAbortedTransactions``).
        """
        with self._lock:
            if self._successor is not None:
                return self._successor.collect_aborted_transactions(start_offset, upper_bound_offset)
            i = max(0, bisect.bisect_right(self._bases, start_offset) - 1)
            segments = self.segments[i:]
        return collect_aborted(segments, start_offset, upper_bound_offset)

    def offset_for_timestamp(self, timestamp: int, max_offset: int | None = None) -> TimestampAndOffset | None:
        """The first record with a timestamp ≥ *timestamp* below *max_offset* (ListOffsets by time)."""
        with self._lock:
            segments = list(self.segments)
            start = self.log_start_offset
            upper = self.next_offset if max_offset is None else min(max_offset, self.next_offset)
        return offset_for_timestamp(segments, start, upper, timestamp)

    def max_timestamp_and_offset(self) -> TimestampAndOffset | None:
        """The earliest record holding the largest timestamp in the log (ListOffsets MAX_TIMESTAMP, KIP-734).

        Each segment already tracks its max timestamp and the last offset of
        the first batch reaching it (the pair its time index appends), so the
        segment is chosen without reading anything (the first one on ties, as
        Kafka's ``maxBy``) and only that one batch is decoded, to find the
        first record whose timestamp is the batch's max (Kafka's
        ``offsetOfMaxTimestamp``).  None when no batch has a timestamp.
        """
        with self._lock:
            segments = list(self.segments)
        return max_timestamp_and_offset(segments)

    # ================================================================== transaction indexes

    def append_aborted_txn(self, txn: AbortedTxn) -> bool:
        """Adds *txn* to the ``.txnindex`` of the segment holding its ABORT marker (``txn.last_offset``).

        Returns False when no segment holds that offset any more (it was
        deleted or truncated meanwhile).

        Raises:
            ValueError: the index already holds an entry at or past ``txn.last_offset``.
        """
        with self._lock:
            if self._successor is not None:
                return self._successor.append_aborted_txn(txn)
            i = bisect.bisect_right(self._bases, txn.last_offset) - 1
            if i < 0 or txn.last_offset >= self.segments[i].next_offset:
                return False
            self.segments[i].txn_index.append(txn)
            return True

    @property
    def txn_index_rebuild_offset(self) -> int | None:
        """The base offset of the first segment whose ``.txnindex`` is stale, or None.

        Stale: recovered after an unclean shutdown, completed from a ``.swap``
        file, or emptied because it failed its sanity check.  The partition
        rebuilds every transaction index from there on (see
        :meth:`reset_txn_indexes_from`) while replaying its producer state.
        """
        with self._lock:
            if self._successor is not None:
                return self._successor.txn_index_rebuild_offset
            return next((s.base_offset for s in self.segments if s.txn_index.stale), None)

    def reset_txn_indexes_from(self, offset: int) -> None:
        """Empties the transaction index of every segment based at or after *offset* and clears their stale marks.

        The caller then appends the rebuilt entries in offset order.
        """
        with self._lock:
            if self._successor is not None:
                return self._successor.reset_txn_indexes_from(offset)
            for seg in self.segments:
                if seg.base_offset >= offset:
                    seg.txn_index.reset()
                    seg.txn_index.stale = False

    # ================================================================== truncation

    def truncate_to(self, offset: int) -> bool:
        """Removes every batch holding an offset ≥ *offset* (a follower's truncation).

        A batch that holds *offset* in its middle goes as a whole, as in
        Kafka.  The log end offset becomes one past the last batch kept (Kafka
        sets it to *offset*; Mafka never leaves a gap at the log end).  If no
        batch at or above the log start offset is left, the log restarts
        empty at its log start offset.  Returns whether anything was removed.
        """
        if offset < 0:
            raise ValueError(f"cannot truncate to negative offset {offset}")
        with self._lock:
            if self._successor is not None:
                return self._successor.truncate_to(offset)
            if offset >= self.next_offset:
                return False
            if offset < self.segments[0].base_offset:
                self.truncate_fully_and_start_at(offset)
                return True
            keep = bisect.bisect_right(self._bases, offset)
            dead = self.segments[keep:]
            self._schedule_delete(dead)
            del self.segments[keep:]
            del self._bases[keep:]
            removed = self.active_segment.truncate_to(offset)
            while len(self.segments) > 1 and self.active_segment.size == 0:
                # An emptied segment above the last kept batch would leave a
                # phantom gap at the log end; the previous segment resumes.
                dead.append(self.segments.pop())
                self._bases.pop()
                self._schedule_delete(dead[-1:])
            self.next_offset = self.active_segment.next_offset
            if self.next_offset < self.log_start_offset:
                # Only batches below the log start survived: the log is empty.
                self.truncate_fully_and_start_at(self.log_start_offset)
                return True
            log.info("%s: truncated to offset %d (%d bytes, %d segments)", self.directory.name, self.next_offset, removed, len(dead))
            self.epoch_cache.truncate_from_end(self.next_offset)
            self.recovery_point = min(self.recovery_point, self.next_offset)
            return True

    def truncate_fully_and_start_at(self, offset: int) -> None:
        """Deletes every segment and restarts the log, empty, at *offset*."""
        with self._lock:
            if self._successor is not None:
                return self._successor.truncate_fully_and_start_at(offset)
            self._schedule_delete(list(self.segments))
            self.segments.clear()
            self._bases.clear()
            self._add_segment(LogSegment.create(self.directory, offset, self.config, self.clock()))
            self.next_offset = self.log_start_offset = self.recovery_point = offset
            self.epoch_cache.clear()
            log.info("%s: truncated fully; restarting at offset %d", self.directory.name, offset)

    def increment_log_start_offset(self, new_start: int) -> bool:
        """Moves the log start offset up (DeleteRecords); whole segments go at the next retention pass.

        Raises:
            OffsetOutOfRangeError: *new_start* is past the log end offset.
        """
        with self._lock:
            if self._successor is not None:
                return self._successor.increment_log_start_offset(new_start)
            if new_start > self.next_offset:
                raise OffsetOutOfRangeError(f"log start {new_start} past the log end {self.next_offset}")
            if new_start <= self.log_start_offset:
                return False
            self.log_start_offset = new_start
            self.epoch_cache.truncate_from_start(new_start)
            return True

    # ================================================================== retention

    def delete_old_segments(self, high_watermark: int) -> int:
        """Kafka's retention pass: by time, size and log start offset; whole segments, below the HW.

        Segments go oldest first, stopping at the first that does not
        qualify; a segment qualifies only if everything in it is below the
        high watermark.  Time and size rules apply with ``cleanup.policy``
        ``delete``; the log-start rule applies to every log.  Returns the
        number of segments deleted.
        """
        now = self.clock()
        deleted = 0
        config = self.config
        if config.delete and config.retention_ms >= 0:
            deleted += self._delete_while(high_watermark, lambda seg, nxt, _: now - seg.largest_timestamp > config.retention_ms)
        if config.delete and config.retention_bytes >= 0:
            with self._lock:
                excess = [sum(s.size for s in self.segments) - config.retention_bytes]

            def over_size(seg: LogSegment, nxt: LogSegment | None, _: int) -> bool:
                if excess[0] - seg.size >= 0:
                    excess[0] -= seg.size
                    return True
                return False

            deleted += self._delete_while(high_watermark, over_size)
        deleted += self._delete_while(high_watermark, lambda seg, nxt, start: nxt is not None and nxt.base_offset <= start)
        return deleted

    def _delete_while(self, high_watermark: int, predicate: Callable[[LogSegment, LogSegment | None, int], bool]) -> int:
        with self._lock:
            doomed = []
            for i, seg in enumerate(self.segments):
                nxt = self.segments[i + 1] if i + 1 < len(self.segments) else None
                upper = nxt.base_offset if nxt is not None else self.next_offset
                if upper > high_watermark or not predicate(seg, nxt, self.log_start_offset):
                    break
                if nxt is None and seg.size == 0:
                    break  # an empty active segment stays
                doomed.append(seg)
            if not doomed:
                return 0
            if len(doomed) == len(self.segments):
                self._roll_locked(None)  # never leave the log without a segment
            n = len(doomed)
            del self.segments[:n]
            del self._bases[:n]
            self._schedule_delete(doomed)
            new_start = self.segments[0].base_offset
            if new_start > self.log_start_offset:
                self.log_start_offset = new_start
                self.epoch_cache.truncate_from_start(new_start)
            log.info("%s: deleted %d segment(s); log start offset %d", self.directory.name, n, self.log_start_offset)
            return n

    def _schedule_delete(self, segments: list[LogSegment]) -> None:
        if not segments:
            return
        due = self.clock() + self.config.file_delete_delay_ms
        for seg in segments:
            seg.seal()  # a reader in flight holds its own handle: the segment's may go
            seg.change_suffix("", ".deleted")
            self._pending_deletes.append((due, seg))
        for d in {seg.directory for seg in segments}:
            fsync_dir(d)

    def delete_pending(self, force: bool = False) -> int:
        """Closes and removes segments deleted ``file.delete.delay.ms`` ago (all if *force*)."""
        now = self.clock()
        with self._lock:
            ready = [seg for due, seg in self._pending_deletes if force or due <= now]
            self._pending_deletes = [(due, seg) for due, seg in self._pending_deletes if not (force or due <= now)]
        for seg in ready:
            seg.delete_files()
        for d in {seg.directory for seg in ready}:
            fsync_dir(d)
        return len(ready)

    def replace_segments(self, cleaned: LogSegment, old: list[LogSegment]) -> None:
        """Swaps *cleaned* (files suffixed ``.cleaned``) in for the contiguous segments *old*.

        Kafka's crash-safe order: ``.cleaned`` → ``.swap``; old segments →
        ``.deleted``; ``.swap`` → final name.  Recovery deletes ``.cleaned``
        files and completes ``.swap`` files, so a crash at any step leaves
        either the old or the new segments.  *cleaned* must start at
        ``old[0].base_offset`` and hold no offset at or past the next
        segment's base.
        """
        with self._lock:
            i = self.segments.index(old[0])
            if self.segments[i : i + len(old)] != old or cleaned.base_offset != old[0].base_offset:
                raise ValueError("replace_segments needs a contiguous run starting at the cleaned base offset")
            if old[-1] is self.active_segment:
                raise ValueError("the active segment is never replaced")
            cleaned.seal()  # the cleaner's appends are done
            cleaned.change_suffix(".cleaned", ".swap")
            fsync_dir(self.directory)
            self.segments[i : i + len(old)] = [cleaned]
            self._bases[i : i + len(old)] = [cleaned.base_offset]
            self._schedule_delete(old)
            cleaned.change_suffix(".swap", "")
            fsync_dir(self.directory)

    # ================================================================== durability

    def flush_due(self) -> int | None:
        """The offset to flush to if ``flush.messages`` or ``flush.ms`` says so, else None."""
        with self._lock:
            if self.recovery_point >= self.next_offset:
                return None
            if self._unflushed_records >= self.config.flush_messages or self.clock() - self._last_flush_ms >= self.config.flush_ms:
                return self.next_offset
            return None

    def flush(self, up_to: int | None = None) -> None:
        """fsyncs every segment holding offsets below *up_to* (default: the log end offset).

        Safe to call from another thread than the appender; advances the
        recovery point.
        """
        with self._lock:
            target = self.next_offset if up_to is None else min(up_to, self.next_offset)
            if target <= self.recovery_point:
                return
            segments = [s for s in self.segments if s.base_offset < target and s.next_offset > self.recovery_point]
            if up_to is None or target == self.next_offset:
                self._unflushed_records = 0
        for seg in segments:
            seg.flush()
        with self._lock:
            # Parent first: the log's own directory entry, then the entries in it.
            dirs = sorted(self._unsynced_dirs, key=lambda d: len(d.parts))
            self._unsynced_dirs.clear()
        try:
            for d in dirs:
                fsync_dir(d)
        except BaseException:
            with self._lock:
                self._unsynced_dirs.update(dirs)
            raise
        with self._lock:
            self.recovery_point = max(self.recovery_point, target)
            self._last_flush_ms = self.clock()

    def close(self) -> None:
        """Closes every file, writing a leader epoch checkpoint still pending (flushing is :meth:`flush`'s job)."""
        with self._lock:
            self.delete_pending(force=True)
            for seg in self.segments:
                seg.close()
            checkpoint = self.epoch_cache.checkpoint
            if checkpoint is not None and hasattr(checkpoint, "write_pending"):
                with contextlib.suppress(FileNotFoundError):
                    checkpoint.write_pending()

    def delete(self) -> None:
        """Removes the whole log directory (topic deletion)."""
        with self._lock:
            self.epoch_cache.close()  # no write behind lands in the directory being emptied
            self.delete_pending(force=True)
            for seg in self.segments:
                seg.delete_files()
            self.segments.clear()
            self._bases.clear()
            for path in self.directory.iterdir():
                path.unlink()
            self.directory.rmdir()
            fsync_dir(self.directory.parent)
            cold = self.cold_directory
            if cold is not None and cold.is_dir():
                for path in cold.iterdir():
                    path.unlink()
                cold.rmdir()
                fsync_dir(cold.parent)

    # ================================================================== moving between log dirs

    @property
    def successor(self) -> Log | None:
        """The log that replaced this one when its replica moved to another log dir, or None."""
        return self._successor

    def retire(self, successor: Log) -> None:
        """Hand this log over to *successor*, a copy of it in another log dir (a replica move).

        From now on appends, truncations, log-start moves and reads go to
        *successor*, so a caller still holding this log (it may have been
        waiting for the lock while the move completed) loses nothing.  The
        caller holds both logs' locks and has made *successor* identical up to
        this log's end.

        The successor was filled by plain appends, which write no transaction
        index: this log's aborted-transaction entries are copied into the
        successor's segments holding their markers (and fsynced), and stale
        marks carried over, before the switch.
        """
        with self._lock:
            entries = [txn for seg in self.segments for txn in seg.txn_index.all_aborted_txns()]
            stale_from = self.txn_index_rebuild_offset
            with successor._lock:
                for seg in successor.segments:
                    seg.txn_index.reset()
                    seg.txn_index.stale = False
                touched = set()
                for txn in entries:
                    i = bisect.bisect_right(successor._bases, txn.last_offset) - 1
                    if i >= 0 and txn.last_offset < successor.segments[i].next_offset:
                        successor.segments[i].txn_index.append(txn)
                        touched.add(i)
                for i in touched:
                    successor.segments[i].txn_index.flush()
                if stale_from is not None:
                    first = max(0, bisect.bisect_right(successor._bases, stale_from) - 1)
                    for seg in successor.segments[first:]:
                        seg.txn_index.stale = True
            self._successor = successor

    def rename_dir(self, directory: Path) -> None:
        """Rename the log's directory to *directory* (same file system) and follow it.

        Kafka's ``Log.renameDir``: the open files stay open; their paths
        (segments, indexes, segments waiting for deletion, the leader-epoch
        checkpoint) now point into the new directory, whose parent is
        fsynced.  Files are opened lazily by path, so no segment file is
        opened while the directory and the paths disagree.
        """
        checkpoint = self.epoch_cache.checkpoint
        relocating = getattr(checkpoint, "relocating", contextlib.nullcontext)
        with self._lock, relocating():
            old = self.directory
            segments = [*self.segments, *(s for _, s in self._pending_deletes)]
            with renaming_directory(segments):
                os.rename(old, directory)
                self.directory = directory
                # Entries in the directory move with it; its entry in the new parent is fsynced below.
                own_unsynced = old in self._unsynced_dirs
                self._unsynced_dirs.clear()
                if own_unsynced:
                    self._unsynced_dirs.add(directory)
                moves = {old: directory}
                cold = self.cold_directory
                if cold is not None:
                    # The cold part follows under the same name (a "-delete" dir is
                    # then never mistaken for a live partition's cold part).
                    renamed = cold.parent / directory.name
                    if cold.is_dir():
                        os.rename(cold, renamed)
                        fsync_dir(cold.parent)
                    moves[cold] = renamed
                    self.cold_directory = renamed
                for seg in segments:
                    seg.relocate(moves.get(seg.directory, directory))
            if checkpoint is not None and hasattr(checkpoint, "path"):
                checkpoint.path = directory / Path(checkpoint.path).name
            fsync_dir(directory.parent)

    # ================================================================== facts

    @property
    def size(self) -> int:
        return sum(s.size for s in self.segments)

    @property
    def hot_size(self) -> int:
        """Bytes in the log's own (hot) dir: :attr:`size` less the cold segments'."""
        return sum(s.size for s in self.segments if not s.cold)

    def __repr__(self) -> str:
        return f"Log({self.directory.name}, start={self.log_start_offset}, end={self.next_offset}, segments={len(self.segments)})"


#: what a Mafka delayed-message envelope (a non-transactional control batch) may add to the batch it wraps:
#: its own framing, and at most 12 bytes per record for the due times (``mafka.delayed.envelope``)
ENVELOPE_FRAMING = 256
ENVELOPE_PER_RECORD = 12


def size_limit(h: BatchHeader, max_message_bytes: int) -> int:
    """The largest size a batch may have: ``max.message.bytes``, plus an envelope's allowance.

    The produce path checked the wrapped batch against ``max.message.bytes``
    already; the envelope must not push a batch that fit over the limit.
    """
    if h.is_control and not h.is_transactional:
        return max_message_bytes + ENVELOPE_FRAMING + ENVELOPE_PER_RECORD * (h.last_offset_delta + 1)
    return max_message_bytes

