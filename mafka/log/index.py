"""Kafka's sparse segment indexes: ``.index`` (offset → position) and ``.timeindex``.

* ``.index`` entries are 8 bytes: offset − base offset (int32), file position
  (int32).  Each points at the start of a batch whose last offset is the
  entry's offset.
* ``.timeindex`` entries are 12 bytes: timestamp (int64), offset − base
  (int32), appended only when the timestamp grows.

Kafka preallocates index files and trims them when the segment rolls; Mafka
appends entry by entry instead, so a file always holds exactly its valid
entries and reads as a trimmed Kafka index.  Lookups bisect an in-memory copy
of the entries; a torn or unordered file is reported as corrupt so the
segment can rebuild it from the log.

Descriptors: an index keeps none.  Lookups never read the file, so it is
opened only to be loaded, for each write of buffered entries and for an
fsync, and closed again (truncations go by path, ``truncate(2)``): those
happen every few thousand bytes of entries (every few MB of log), at roll,
truncation and flush — rare enough that an ``open`` each is nothing, while a
broker holding many idle segments holds no index descriptor at all (see
:mod:`mafka.log.open_files`).  :meth:`_IndexFile.flush` fsyncs only when
something was written since the last fsync.
"""

from __future__ import annotations

import bisect
import errno
import os
import struct
import threading
from array import array
from pathlib import Path

from .checkpoint import fsync_and_close

__all__ = ["OffsetIndex", "TimeIndex", "CorruptIndexError"]

_OFFSET_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


class CorruptIndexError(Exception):
    """An index file that is torn, unordered or points past its segment."""


class _IndexFile:
    """An append-only file of fixed-size entries (shared by both index kinds).

    New entries are buffered and written in groups (Kafka's indexes are
    memory-mapped, so an entry costs no system call there either): lookups
    use the in-memory copy, :meth:`write_pending` runs at flush, roll,
    truncation and close, and recovery rebuilds whatever a crash lost.

    The file is opened for each write or fsync and closed at once, and
    truncated by path (see the module docstring).  After :meth:`close` buffered entries are no
    longer written, and truncations and fsyncs raise ``OSError(EBADF)``, as
    on a closed descriptor.

    *lock* (the segment's path lock, :meth:`~mafka.log.open_files.SegmentLogFile.path_lock`)
    is held while the path is resolved (an ``open``, a rename), so a flush on
    another thread never opens a name that a rename just moved away.
    """

    entry_size = 0
    _PENDING_LIMIT = 4096  # bytes of entries held before a write

    def __init__(self, path: Path, lock: threading.RLock | None = None) -> None:
        self.path = path
        self._lock = lock if lock is not None else threading.RLock()
        self._pending = bytearray()
        self._closed = False
        self._unsynced = False  # written or truncated since the last fsync

    def _open(self) -> int:
        if self._closed:
            raise OSError(errno.EBADF, "index file is closed", str(self.path))
        with self._lock:
            return os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def _read_all(self) -> bytes:
        try:
            with self._lock:
                size = os.stat(self.path).st_size
                if size == 0:
                    return b""  # the common case of an idle segment: no open at all
                fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return b""
        try:
            return os.pread(fd, size, 0)
        finally:
            os.close(fd)

    def _write(self, data: bytes) -> None:
        self._pending += data
        if len(self._pending) >= self._PENDING_LIMIT:
            self.write_pending()

    def write_pending(self) -> None:
        """Writes buffered entries to the file (page cache; no fsync)."""
        if self._pending and not self._closed:
            fd = self._open()
            try:
                with memoryview(self._pending) as view:
                    written = 0
                    while written < len(view):
                        written += os.write(fd, view[written:])
            finally:
                os.close(fd)
            self._pending.clear()
            self._unsynced = True

    def _truncate_entries(self, count: int) -> None:
        self.write_pending()
        if self._closed:
            raise OSError(errno.EBADF, "index file is closed", str(self.path))
        try:
            with self._lock:
                os.truncate(self.path, count * self.entry_size)  # one call, no descriptor
        except FileNotFoundError:
            fd = self._open()  # a lost file (an empty segment's, or one being rebuilt): recreate it
            try:
                os.ftruncate(fd, count * self.entry_size)
            finally:
                os.close(fd)
        self._unsynced = True

    def flush(self) -> None:
        """Writes buffered entries and fsyncs the file if anything was written since the last fsync."""
        self.write_pending()
        if self._closed:
            raise OSError(errno.EBADF, "index file is closed", str(self.path))
        if self._unsynced:
            fsync_and_close(self._open())
            self._unsynced = False

    def close(self) -> None:
        """Writes buffered entries; the file is not written again."""
        if not self._closed:
            self.write_pending()
            self._closed = True

    def rename(self, path: Path) -> None:
        with self._lock:
            os.replace(self.path, path)
            self.path = path

    def delete(self) -> None:
        self._pending.clear()
        self.close()
        with self._lock:
            try:
                os.unlink(self.path)
            except FileNotFoundError:
                pass


class OffsetIndex(_IndexFile):
    """The ``.index`` file of one segment.

    Args:
        path: the file (created if missing).
        base_offset: the segment's base offset.
        max_entries: capacity; the segment rolls when it is full.
    """

    entry_size = 8

    def __init__(self, path: Path, base_offset: int, max_entries: int, lock: threading.RLock | None = None) -> None:
        super().__init__(path, lock)
        self.base_offset = base_offset
        self.max_entries = max(1, max_entries)
        self._offsets = array("q")
        self._positions = array("q")

    def load(self, segment_size: int) -> None:
        """Reads the file; raises CorruptIndexError unless it is a valid prefix-free index."""
        data = self._read_all()
        if len(data) % 8:
            raise CorruptIndexError(f"{self.path}: size {len(data)} is not a multiple of 8")
        offsets, positions = array("q"), array("q")
        last_offset, last_pos = -1, -1
        for rel, pos in _OFFSET_ENTRY.iter_unpack(data):
            offset = self.base_offset + rel
            if rel < 0 or offset <= last_offset or pos <= last_pos or pos >= segment_size:
                raise CorruptIndexError(f"{self.path}: entry ({offset}, {pos}) out of order or past the log")
            offsets.append(offset)
            positions.append(pos)
            last_offset, last_pos = offset, pos
        self._offsets, self._positions = offsets, positions

    def __len__(self) -> int:
        return len(self._offsets)

    @property
    def is_full(self) -> bool:
        return len(self._offsets) >= self.max_entries

    @property
    def last_offset(self) -> int:
        """The last indexed offset, or the base offset when empty."""
        return self._offsets[-1] if self._offsets else self.base_offset

    def append(self, offset: int, position: int) -> None:
        """Adds (offset → position); offsets and positions must grow."""
        offsets = self._offsets
        if offsets and (offset <= offsets[-1] or position <= self._positions[-1]):
            return  # Kafka ignores non-increasing entries
        pending = self._pending
        pending += _OFFSET_ENTRY.pack(offset - self.base_offset, position)
        if len(pending) >= self._PENDING_LIMIT:
            self.write_pending()
        offsets.append(offset)
        self._positions.append(position)

    def lookup(self, offset: int) -> tuple[int, int]:
        """The largest entry with an offset ≤ *offset*, else (base offset, 0)."""
        i = bisect.bisect_right(self._offsets, offset)
        if i == 0:
            return self.base_offset, 0
        return self._offsets[i - 1], self._positions[i - 1]

    def truncate_to(self, offset: int) -> None:
        """Drops entries with an offset ≥ *offset*."""
        keep = bisect.bisect_left(self._offsets, offset)
        if keep < len(self._offsets):
            del self._offsets[keep:]
            del self._positions[keep:]
            self._truncate_entries(keep)

    def reset(self) -> None:
        """Empties the index, on disk too (also after a load that failed)."""
        self._pending.clear()
        del self._offsets[:]
        del self._positions[:]
        self._truncate_entries(0)

    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._offsets, self._positions, strict=True))


class TimeIndex(_IndexFile):
    """The ``.timeindex`` file of one segment: (max timestamp so far → offset)."""

    entry_size = 12

    def __init__(self, path: Path, base_offset: int, max_entries: int, lock: threading.RLock | None = None) -> None:
        super().__init__(path, lock)
        self.base_offset = base_offset
        self.max_entries = max(1, max_entries)
        self._timestamps = array("q")
        self._offsets = array("q")

    def load(self, next_offset: int | None = None) -> None:
        """Reads the file; raises CorruptIndexError if torn or unordered."""
        data = self._read_all()
        if len(data) % 12:
            raise CorruptIndexError(f"{self.path}: size {len(data)} is not a multiple of 12")
        timestamps, offsets = array("q"), array("q")
        for ts, rel in _TIME_ENTRY.iter_unpack(data):
            offset = self.base_offset + rel
            if rel < 0 or (timestamps and (ts <= timestamps[-1] or offset < offsets[-1])):
                raise CorruptIndexError(f"{self.path}: entry ({ts}, {offset}) out of order")
            if next_offset is not None and offset >= next_offset:
                raise CorruptIndexError(f"{self.path}: entry offset {offset} past the log end {next_offset}")
            timestamps.append(ts)
            offsets.append(offset)
        self._timestamps, self._offsets = timestamps, offsets

    def __len__(self) -> int:
        return len(self._timestamps)

    @property
    def is_full(self) -> bool:
        return len(self._timestamps) >= self.max_entries

    @property
    def last_entry(self) -> tuple[int, int] | None:
        if not self._timestamps:
            return None
        return self._timestamps[-1], self._offsets[-1]

    def maybe_append(self, timestamp: int, offset: int) -> None:
        """Adds (timestamp → offset) if the timestamp is larger than the last one."""
        if timestamp < 0 or (self._timestamps and timestamp <= self._timestamps[-1]):
            return
        if self._offsets and offset < self._offsets[-1]:
            return
        self._write(_TIME_ENTRY.pack(timestamp, offset - self.base_offset))
        self._timestamps.append(timestamp)
        self._offsets.append(offset)

    def lookup(self, timestamp: int) -> tuple[int, int]:
        """The largest entry with a timestamp ≤ *timestamp*, else (-1, base offset)."""
        i = bisect.bisect_right(self._timestamps, timestamp)
        if i == 0:
            return -1, self.base_offset
        return self._timestamps[i - 1], self._offsets[i - 1]

    def truncate_to(self, offset: int) -> None:
        """Drops entries whose offset is ≥ *offset*."""
        keep = bisect.bisect_left(self._offsets, offset)
        if keep < len(self._offsets):
            del self._timestamps[keep:]
            del self._offsets[keep:]
            self._truncate_entries(keep)

    def reset(self) -> None:
        """Empties the index, on disk too (also after a load that failed)."""
        self._pending.clear()
        del self._timestamps[:]
        del self._offsets[:]
        self._truncate_entries(0)

    def entries(self) -> list[tuple[int, int]]:
        return list(zip(self._timestamps, self._offsets, strict=True))
