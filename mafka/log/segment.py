"""One log segment: ``%020d.log`` with its ``.index``, ``.timeindex`` and ``.txnindex``.

The ``.log`` file holds record batches exactly as Kafka stores them.  The
segment never decodes records: it reads 61-byte batch headers with
:class:`mafka.wire.batch.BatchHeader` (``os.pread``, no file objects) and
hands readers :class:`FileRegion` slices for ``os.sendfile``.

Index rule (Kafka's ``LogSegment.append``): before appending a batch, if
more than ``index.interval.bytes`` were written since the last entry, add
(batch last offset → batch start position) to ``.index`` and (max timestamp
so far → its offset) to ``.timeindex``.  Every entry therefore points at a
batch start.

The ``.txnindex`` (:class:`~mafka.log.txn_index.TransactionIndex`) lists
the aborted transactions whose ABORT markers the segment holds.  Writing it
needs the partition's producer state, which the segment does not have: the
caller appends entries, and when the segment is recovered (or the file fails
its sanity check) the index is emptied and marked ``stale`` for the owner of
the producer state to rebuild (Kafka's ``LogSegment.recover`` takes a
producer state manager for that).  It is truncated, flushed, renamed and
deleted with the other files.

Times are milliseconds supplied by the caller (no clock is read here).

Descriptors (see :mod:`mafka.log.open_files`): a segment holds none until it
is used.  :meth:`LogSegment.create` creates its empty files and closes them;
:meth:`LogSegment.open` reads what the log needs at load (the ``.log`` size,
the indexes, the batches after the last index entry) through short-lived
descriptors and gives them all back.  The ``.log`` file is then opened by
the first read or append: a segment being appended to keeps it open until it
is sealed (:meth:`LogSegment.seal`: rolled, replaced or deleted); any other
segment keeps it only while among the most recently used ones of the
process-wide LRU.  The indexes keep no descriptor at all (their entries are
in memory; their files are opened per write).  A :class:`FileRegion` holds
the handle it was read through, so its descriptor stays valid until the
region is dropped, whatever happens to the segment meanwhile.
"""

from __future__ import annotations

import bisect
import logging
import os
import struct
from collections.abc import Callable, Iterator, Sequence
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import NamedTuple

from mafka.wire.batch import (
    BATCH_HEADER_SIZE,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    MIN_BATCH_LENGTH,
    BatchHeader,
    validate_batch,
)
from mafka.wire.errors import ProtocolError

from .config import LogConfig
from .index import CorruptIndexError, OffsetIndex, TimeIndex
from .open_files import LogFileHandle, SegmentLogFile
from .txn_index import TransactionIndex

__all__ = ["LogSegment", "FileRegion", "BatchPosition", "log_file_name", "renaming_directory", "INT32_MAX"]

log = logging.getLogger("mafka.log")

INT32_MAX = 2**31 - 1
_READ_CHUNK = 1 << 20
_HEADER = HEADER_STRUCT
_PATCH = struct.Struct(">qii")  # baseOffset, batchLength, partitionLeaderEpoch
_IOV_MAX = 1024


def log_file_name(base_offset: int, suffix: str = ".log") -> str:
    """Kafka's segment file name: the base offset as 20 digits plus the suffix."""
    return f"{base_offset:020d}{suffix}"


@dataclass(frozen=True, slots=True)
class FileRegion:
    """A byte range of a segment file, to send with ``os.sendfile`` or read.

    ``fd`` stays valid as long as the region is referenced: the region holds
    the :class:`~mafka.log.open_files.LogFileHandle` it was read through
    (``handle``), whose descriptor is closed only when its last reference
    goes — keep the region, not just its ``fd``, until the send is done.
    Regions built from a bare descriptor (tests) have no handle.
    """

    fd: int
    position: int
    length: int
    #: in a cold (slow-device) segment: read it off the reactor, see ``mafka.broker.cold_reads``
    cold: bool = False
    #: what keeps ``fd`` open (see above)
    handle: LogFileHandle | None = field(default=None, repr=False, compare=False)

    def __len__(self) -> int:
        return self.length

    def read(self) -> bytes:
        """The region's bytes (for small reads and tests)."""
        return os.pread(self.fd, self.length, self.position)


class BatchPosition(NamedTuple):
    """Where a batch starts in a segment file, with its offsets and size."""

    position: int
    base_offset: int
    last_offset: int
    size: int
    max_timestamp: int


class LogSegment:
    """A segment of a partition's log.

    Use :meth:`create` for a new empty segment and :meth:`open` for one on
    disk (the constructor touches no file).  Appends go to the page cache;
    :meth:`flush` fsyncs.  Files are opened on use (module docstring).
    """

    def __init__(self, directory: Path, base_offset: int, config: LogConfig, created_ms: int, suffix: str = "") -> None:
        self.directory = directory
        self.base_offset = base_offset
        self.config = config
        self.created_ms = created_ms
        self._log = SegmentLogFile(directory / (log_file_name(base_offset) + suffix))
        self.size = 0  # set by create() / open(), then by appends and truncations
        entries = config.max_index_entries
        lock = self._log.path_lock()  # one lock resolves every path of the segment (renames)
        self.index = OffsetIndex(directory / (log_file_name(base_offset, ".index") + suffix), base_offset, entries, lock)
        self.time_index = TimeIndex(
            directory / (log_file_name(base_offset, ".timeindex") + suffix), base_offset, config.segment_index_bytes // 12, lock
        )
        self.txn_index = TransactionIndex(directory / (log_file_name(base_offset, ".txnindex") + suffix), base_offset, lock)
        self.next_offset = base_offset  # one past the last offset held
        #: whether the segment lives in a cold dir (``mafka.cold.log.dirs``; see ``tiering``)
        self.cold = False
        self.max_timestamp = -1
        self.offset_of_max_timestamp = base_offset
        self.rolling_based_timestamp: int | None = None  # first batch's max timestamp
        self._bytes_since_index = 0
        self._max_size = config.segment_bytes
        self._max_age = config.segment_ms - config.segment_jitter_ms
        self._index_interval = config.index_interval_bytes

    def update_config(self, config: LogConfig) -> None:
        """New size, age and index limits (index capacity stays as the files were sized)."""
        self.config = config
        self._max_size = config.segment_bytes
        self._max_age = config.segment_ms - config.segment_jitter_ms
        self._index_interval = config.index_interval_bytes

    # ------------------------------------------------------------------ opening

    @classmethod
    def create(cls, directory: Path, base_offset: int, config: LogConfig, now_ms: int, suffix: str = "") -> LogSegment:
        """A new, empty segment (any stale files of that name are emptied).

        *suffix* (e.g. ``.cleaned``) is appended to every file name.  The
        ``.log``, ``.index`` and ``.timeindex`` files are created (as Kafka
        does) and closed again: the segment holds no descriptor.
        """
        seg = cls(directory, base_offset, config, now_ms, suffix)
        os.close(os.open(seg.log_path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644))
        seg.index.reset()
        seg.time_index.reset()
        seg.txn_index.reset()
        return seg

    @classmethod
    def open(cls, directory: Path, base_offset: int, config: LogConfig, now_ms: int) -> LogSegment:
        """An existing segment, its state recovered from the indexes and the tail.

        Indexes that are missing, torn or inconsistent are rebuilt by scanning
        the log (without CRC checks: that is :meth:`recover`'s job).  A
        ``.txnindex`` failing its sanity check is emptied and marked stale
        (its rebuild needs the producer state).

        Every file read here is read through a short-lived descriptor: the
        segment returned holds none (an empty one was not even opened).
        """
        seg = cls(directory, base_offset, config, now_ms)
        try:
            seg._load()
        finally:
            seg._log.release()  # whatever _load opened goes: loading N logs leaves nothing open
        return seg

    def _load(self) -> None:
        base_offset = self.base_offset
        self.size = self._log.stat().st_size
        missing = [index for index in (self.index, self.time_index) if not index.path.exists()]
        try:
            if missing and self.size:
                raise CorruptIndexError(f"missing {', '.join(index.path.name for index in missing)}")
            for index in missing:
                index.reset()  # an empty segment's lost index: recreate the (empty) file
            self.index.load(self.size)
            self.time_index.load()
            last = self.time_index.last_entry
            if last is not None:
                self.max_timestamp, self.offset_of_max_timestamp = last
            start = self.index.lookup(INT32_MAX + base_offset)[1] if len(self.index) else 0
            self._scan_tail(start)
            if last is not None and not (last[0] >= 0 and base_offset <= last[1] < self.next_offset):
                raise CorruptIndexError(f"time index entry {last} outside the segment's offsets")
        except CorruptIndexError as exc:
            log.warning("rebuilding indexes of %s: %s", self.log_path, exc)
            self._rebuild_indexes()
        try:
            self.txn_index.load()
        except CorruptIndexError as exc:
            log.warning("%s; it will be rebuilt from the log", exc)
            self.txn_index.reset()
            self.txn_index.stale = True

    def _scan_tail(self, position: int) -> None:
        """Updates next offset, timestamps and the index counter from *position* to the end."""
        first = True
        for bp in self.batches(position):
            if first and bp.position == 0:
                self.rolling_based_timestamp = bp.max_timestamp
            first = False
            self.next_offset = bp.last_offset + 1
            if bp.max_timestamp > self.max_timestamp:
                self.max_timestamp, self.offset_of_max_timestamp = bp.max_timestamp, bp.last_offset
            self._bytes_since_index += bp.size
        if self.size and self.rolling_based_timestamp is None:
            head = self.header_at(0)
            if head is not None:
                self.rolling_based_timestamp = head.max_timestamp

    def _rebuild_indexes(self) -> None:
        self.index.reset()
        self.time_index.reset()
        self._reset_state()
        for bp in self.batches(0):
            self._index_batch(bp.position, bp.last_offset, bp.max_timestamp, bp.size)
        self.write_index_pending()

    def _reset_state(self) -> None:
        self.next_offset = self.base_offset
        self.max_timestamp = -1
        self.offset_of_max_timestamp = self.base_offset
        self.rolling_based_timestamp = None
        self._bytes_since_index = 0

    # ------------------------------------------------------------------ reading headers

    def header_at(self, position: int) -> BatchHeader | None:
        handle = self._log.reader()  # held across the pread: an eviction cannot close it meanwhile
        data = os.pread(handle.fd, BATCH_HEADER_SIZE, position)
        if len(data) < BATCH_HEADER_SIZE:
            return None
        return BatchHeader(data)

    def batches(self, position: int = 0, end: int | None = None) -> Iterator[BatchPosition]:
        """Batch positions from *position* (a batch start) up to *end* (default: the end).

        Stops at a torn or implausible header; :meth:`recover` is what checks CRCs.
        While the iteration is under way it holds the ``.log`` handle, so
        :attr:`fd` names the same open file meanwhile (replays read batches
        through it).
        """
        end = self.size if end is None else min(end, self.size)
        handle = None  # opened only if there is a header to read
        while position + BATCH_HEADER_SIZE <= end:
            if handle is None:
                handle = self._log.reader()
            data = os.pread(handle.fd, BATCH_HEADER_SIZE, position)
            h = BatchHeader(data) if len(data) == BATCH_HEADER_SIZE else None
            if h is None or h.batch_length < MIN_BATCH_LENGTH or position + h.size > end:
                return
            if h.base_offset < self.base_offset or h.last_offset - self.base_offset > INT32_MAX:
                return  # not a batch of this segment: damage, which recover() cuts
            yield BatchPosition(position, h.base_offset, h.last_offset, h.size, h.max_timestamp)
            position += h.size

    def translate_offset(self, offset: int, start_position: int = 0) -> BatchPosition | None:
        """The first batch at or after *start_position* whose last offset is ≥ *offset*."""
        _, position = self.index.lookup(offset)
        for bp in self.batches(max(position, start_position)):
            if bp.last_offset >= offset:
                return bp
        return None

    # ------------------------------------------------------------------ appending

    def should_roll(self, incoming_bytes: int, incoming_max_timestamp: int, incoming_last_offset: int, now_ms: int) -> bool:
        """Kafka's ``shouldRoll``: size, age, full index, or relative-offset overflow."""
        size = self.size
        if size > self._max_size - incoming_bytes:
            return True
        if size > 0:
            # As Kafka's timeWaitedForRoll: a first batch without timestamps (−1, e.g. magic-0
            # producers' records) measures the age from the segment's creation instead.
            rolling = self.rolling_based_timestamp
            if rolling is not None and rolling >= 0 and incoming_max_timestamp >= 0:
                waited = incoming_max_timestamp - rolling
            else:
                waited = now_ms - self.created_ms
            if waited > self._max_age:
                return True
        if self.index.is_full or self.time_index.is_full:
            return True
        return incoming_last_offset - self.base_offset > INT32_MAX

    def append(self, chunks: Sequence[bytes | memoryview], batches: Sequence[BatchPosition]) -> None:
        """Writes *chunks* (the bytes of *batches*, in order) at the end of the file.

        Args:
            chunks: buffers whose concatenation is exactly the batches' bytes
                (written with one ``writev``, so patched headers need no copy
                of the records behind them).
            batches: each batch's position relative to the start of *chunks*,
                offsets, size and max timestamp.
        """
        start = self.size
        total = sum(len(c) for c in chunks)
        fd = self._log.write_fd
        if fd < 0:
            fd = self._log.start_writing()
        _write_all(fd, chunks, total)
        for bp in batches:
            self._index_batch(start + bp.position, bp.last_offset, bp.max_timestamp, bp.size)
        self.size = start + total

    def append_leader_batch(self, view: memoryview, first_offset: int, leader_epoch: int, max_size: int) -> tuple[int, int, int, int] | None:
        """The leader's hot path: appends *view* if it is exactly one plain v2 batch.

        Patches baseOffset and partitionLeaderEpoch by writing a new 16-byte
        head before the untouched rest (one ``writev``, no copy, no CRC
        change) and does the index bookkeeping of :meth:`append` inline.

        Returns:
            (last offset, max timestamp, record count, size) once appended;
            None when *view* is not a single well-formed batch of at most
            *max_size* bytes, or when the segment must roll first (the caller
            then takes the general path, which checks and rolls).
        """
        if len(view) < BATCH_HEADER_SIZE:
            return None
        _, length, _, magic, _, _, delta, _, max_ts, _, _, _, count = _HEADER.unpack_from(view)
        size = length + LOG_OVERHEAD
        if size != len(view) or magic != 2 or length < MIN_BATCH_LENGTH or delta < 0 or size > max_size:
            return None
        last = first_offset + delta
        position = self.size
        rolling = self.rolling_based_timestamp
        if (
            position > self._max_size - size
            # A segment whose first batch has no timestamp ages by the clock: should_roll decides.
            or (position and rolling is not None and (rolling < 0 or max_ts - rolling > self._max_age))
            or self.index.is_full
            or self.time_index.is_full
            or last - self.base_offset > INT32_MAX
        ):
            return None
        head = _PATCH.pack(first_offset, length, leader_epoch)
        fd = self._log.write_fd
        if fd < 0:
            fd = self._log.start_writing()
        written = os.writev(fd, (head, view[16:]))
        if written != size:
            _write_rest(fd, (head, view[16:]), written)
        # _index_batch, inlined: this runs once per produced batch.
        if self.rolling_based_timestamp is None:
            self.rolling_based_timestamp = max_ts
        if max_ts > self.max_timestamp:
            self.max_timestamp, self.offset_of_max_timestamp = max_ts, last
        if self._bytes_since_index > self._index_interval:
            self.index.append(last, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self._bytes_since_index = size
        else:
            self._bytes_since_index += size
        self.next_offset = last + 1
        self.size = position + size
        return last, max_ts, count, size

    def _index_batch(self, position: int, last_offset: int, max_timestamp: int, size: int) -> None:
        if self.rolling_based_timestamp is None:
            self.rolling_based_timestamp = max_timestamp
        if max_timestamp > self.max_timestamp:
            self.max_timestamp, self.offset_of_max_timestamp = max_timestamp, last_offset
        if self._bytes_since_index > self.config.index_interval_bytes:
            self.index.append(last_offset, position)
            self.time_index.maybe_append(self.max_timestamp, self.offset_of_max_timestamp)
            self._bytes_since_index = 0
        self._bytes_since_index += size
        self.next_offset = last_offset + 1

    # ------------------------------------------------------------------ reading

    def read(self, offset: int, max_bytes: int, max_position: int | None = None, *, min_one_batch: bool = True) -> FileRegion | None:
        """The bytes from the batch containing *offset*, or None if none is held.

        Args:
            offset: the first wanted offset (the whole batch holding it is returned).
            max_bytes: size limit; may cut the last batch short, as Kafka does.
            max_position: a file position the region must not pass (the batch
                boundary of a high watermark), or None for the end.
            min_one_batch: return the first whole batch even if it exceeds
                *max_bytes* (KIP-74).
        """
        bp = self.translate_offset(offset)
        if bp is None:
            return None
        limit = self.size if max_position is None else min(max_position, self.size)
        if bp.position >= limit:
            return None
        length = min(limit - bp.position, max_bytes)
        if min_one_batch and length < bp.size:
            length = min(bp.size, limit - bp.position)
        if length <= 0:
            return None
        handle = self._log.reader()  # held by the region: its descriptor outlives any eviction
        return FileRegion(handle.fd, bp.position, length, self.cold, handle)

    def read_at(self, position: int, size: int) -> bytes:
        """Up to *size* bytes of the ``.log`` file from *position* (``os.pread``)."""
        handle = self._log.reader()
        return os.pread(handle.fd, size, position)

    def fetch_upper_bound_offset(self, end_position: int) -> int | None:
        """Kafka's ``fetchUpperBoundOffset``: the offset of the first ``.index`` entry at or after *end_position*.

        A read ending at *end_position* holds no offset at or above it, so it
        bounds the aborted-transaction search of a READ_COMMITTED fetch (the
        index is sparse: the bound may lie a few batches further).  None when
        no entry is that far (the caller then takes the next segment's base or
        the log end offset).
        """
        # The index keeps its entries in two parallel arrays; bisecting the
        # positions here avoids copying them (OffsetIndex has no reverse lookup).
        positions = self.index._positions
        i = bisect.bisect_left(positions, end_position)
        if i == len(positions):
            return None
        return self.index._offsets[i]

    def find_offset_by_timestamp(self, timestamp: int) -> BatchPosition | None:
        """The first batch whose max timestamp is ≥ *timestamp* (record-level search is the caller's)."""
        _, offset = self.time_index.lookup(timestamp)
        _, position = self.index.lookup(offset)
        for bp in self.batches(position):
            if bp.max_timestamp >= timestamp:
                return bp
        return None

    # ------------------------------------------------------------------ recovery and truncation

    def recover(self, on_batch: Callable[[BatchHeader], None] | None = None, max_batch_size: int | None = None) -> int:
        """Re-reads every batch (size, magic, CRC), rebuilds the indexes, cuts at the first bad one.

        The transaction index is emptied and marked stale: its entries depend
        on producer state from before this segment, which the caller rebuilds.

        Args:
            on_batch: called with each valid batch's header (the log rebuilds
                its leader-epoch cache with it).
            max_batch_size: batches larger than this count as invalid.

        Returns:
            The number of bytes cut from the end of the file.
        """
        try:
            return self._recover(on_batch, max_batch_size)
        finally:
            self._log.release()  # recovery runs at load: keep nothing open (unless being written)

    def _recover(self, on_batch: Callable[[BatchHeader], None] | None, max_batch_size: int | None) -> int:
        self.index.reset()
        self.time_index.reset()
        self.txn_index.reset()
        self.txn_index.stale = True
        self._reset_state()
        handle = self._log.reader() if self.size else None
        fd = handle.fd if handle is not None else -1
        position = 0
        valid = 0
        buf = b""
        buf_start = 0
        while position < self.size:
            # Keep a window of the file in memory; read more when a batch runs past it.
            rel = position - buf_start
            if rel + LOG_OVERHEAD > len(buf):
                buf = os.pread(fd, max(_READ_CHUNK, LOG_OVERHEAD), position)
                buf_start, rel = position, 0
                if len(buf) < LOG_OVERHEAD:
                    break
            length = int.from_bytes(buf[rel + 8 : rel + 12], "big", signed=True)
            size = length + LOG_OVERHEAD
            if length < MIN_BATCH_LENGTH or position + size > self.size:
                break
            if max_batch_size is not None and size > max_batch_size:
                break
            if rel + size > len(buf):
                buf = os.pread(fd, max(_READ_CHUNK, size), position)
                buf_start, rel = position, 0
                if len(buf) < size:
                    break
            try:
                h = validate_batch(memoryview(buf)[rel : rel + size])
            except ProtocolError:
                break
            if h.base_offset < self.next_offset or h.last_offset - self.base_offset > INT32_MAX:
                break  # offsets must grow within a segment and fit its relative range
            self._index_batch(position, h.last_offset, h.max_timestamp, size)
            if on_batch is not None:
                on_batch(h)
            position += size
            valid = position
        cut = self.size - valid
        if cut:
            os.ftruncate(fd, valid)
            self.size = valid
        self.write_index_pending()
        return cut

    def write_index_pending(self) -> None:
        self.index.write_pending()
        self.time_index.write_pending()

    def truncate_to(self, offset: int) -> int:
        """Removes every batch whose last offset is ≥ *offset*; returns bytes removed."""
        self.txn_index.truncate_to(offset)
        bp = self.translate_offset(offset)
        if bp is None:
            return 0
        removed = self.size - bp.position
        handle = self._log.reader()
        os.ftruncate(handle.fd, bp.position)
        self.size = bp.position
        self.index.truncate_to(offset)
        self.time_index.truncate_to(offset)
        self._reset_state()
        start = self.index.lookup(offset)[1] if len(self.index) else 0
        last = self.time_index.last_entry
        if last is not None:
            self.max_timestamp, self.offset_of_max_timestamp = last
        self._scan_tail(start)
        self._bytes_since_index = 0
        return removed

    # ------------------------------------------------------------------ lifecycle

    @property
    def last_modified_ms(self) -> int:
        return int(self._log.stat().st_mtime * 1000)

    @property
    def last_modified_ns(self) -> int:
        """The ``.log`` file's mtime in nanoseconds (without opening it)."""
        return self._log.stat().st_mtime_ns

    @property
    def largest_timestamp(self) -> int:
        """The max batch timestamp, or the file's mtime when no batch has one (Kafka)."""
        return self.max_timestamp if self.max_timestamp >= 0 else self.last_modified_ms

    def flush(self) -> None:
        """fsyncs the log file and the indexes (through a short-lived descriptor where none is open)."""
        self._log.fsync()
        self.index.flush()
        self.time_index.flush()
        self.txn_index.flush()

    def seal(self) -> None:
        """The segment will not be appended to again (rolled, replaced or deleted).

        Its ``.log`` descriptor, kept open while it was written, becomes one
        of the LRU's (see :mod:`mafka.log.open_files`).
        """
        self._log.seal()

    def close(self) -> None:
        """Closes the segment for good: later reads and writes raise ``OSError(EBADF)``.

        A region read before keeps its descriptor until it is dropped.
        """
        self._log.close()
        self.index.close()
        self.time_index.close()
        self.txn_index.close()

    def change_suffix(self, old: str, new: str) -> None:
        """Renames every file from suffix *old* to *new* (``""`` → ``.deleted``, ``.cleaned`` → ``.swap`` …).

        A ``.txnindex`` that was never created stays absent (its path follows).
        """

        def renamed(path: Path) -> Path:
            if old and not path.name.endswith(old):
                raise ValueError(f"{path} does not end with {old!r}")
            stem = path.name[: len(path.name) - len(old)] if old else path.name
            return path.with_name(stem + new)

        with self._log.path_lock():  # no file of the segment is opened by a stale name meanwhile
            self._log.rename(renamed(self.log_path))
            self.index.rename(renamed(self.index.path))
            self.time_index.rename(renamed(self.time_index.path))
            self.txn_index.rename(renamed(self.txn_index.path))

    def delete_files(self) -> None:
        """Closes the segment and removes its files."""
        self.close()
        for path in (self.log_path, self.index.path, self.time_index.path, self.txn_index.path):
            try:
                os.unlink(path)
            except FileNotFoundError:
                pass

    def relocate(self, directory: Path) -> None:
        """Follows a rename of the segment's directory to *directory* (the caller renamed it).

        The caller holds :func:`renaming_directory` over the rename and this
        call, so that no file is opened by its old path meanwhile.
        """
        self.directory = directory
        self._log.path = directory / self._log.path.name
        self.index.path = directory / self.index.path.name
        self.time_index.path = directory / self.time_index.path.name
        self.txn_index.path = directory / self.txn_index.path.name

    # ------------------------------------------------------------------ the .log descriptor

    @property
    def log_path(self) -> Path:
        return self._log.path

    def log_file(self) -> LogFileHandle:
        """The open ``.log`` handle (opened if needed); hold it while using its ``fd``.

        Raises:
            OSError: the segment is closed (EBADF) or its file cannot be opened.
        """
        return self._log.reader()

    @property
    def fd(self) -> int:
        """The ``.log`` descriptor (opened if needed), or -1 once the segment is closed.

        Valid while its handle is held: during an iteration of :meth:`batches`
        (which holds it) or with :meth:`log_file`.  Prefer :meth:`log_file`
        or :meth:`read_at`.
        """
        if self._log.closed:
            return -1
        return self._log.reader().fd

    @property
    def closed(self) -> bool:
        return self._log.closed

    @property
    def files_open(self) -> bool:
        """Whether the segment holds an open ``.log`` descriptor now (indexes never hold one)."""
        return self._log.is_open

    def __repr__(self) -> str:
        return f"LogSegment({self.log_path.name}, size={self.size}, next_offset={self.next_offset})"


@contextmanager
def renaming_directory(segments: Sequence[LogSegment]) -> Iterator[None]:
    """Holds off every open by path of *segments*' files while their directory is renamed.

    Use as ``with renaming_directory(segs): os.rename(old, new); seg.relocate(new) ...``.
    """
    with ExitStack() as stack:
        for seg in segments:
            stack.enter_context(seg._log.path_lock())
        yield


def _write_all(fd: int, chunks: Sequence[bytes | memoryview], total: int) -> None:
    """writev that finishes short writes (rare on regular files, but legal)."""
    if len(chunks) > _IOV_MAX:
        chunks = [b"".join(chunks)]
    written = os.writev(fd, chunks)
    if written != total:
        _write_rest(fd, chunks, written)


def _write_rest(fd: int, chunks: Sequence[bytes | memoryview], written: int) -> None:
    data = memoryview(b"".join(chunks))[written:]
    while data:
        n = os.write(fd, data)
        data = data[n:]
