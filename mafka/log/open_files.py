"""When a segment's ``.log`` file holds an open descriptor: only while it is used.

A broker may hold tens of thousands of partition replicas, most of them idle;
one descriptor per segment file would exhaust ``RLIMIT_NOFILE`` long before
anything else runs out.  So a segment's files are opened on first use, and
only the ``.log`` file ever keeps a descriptor between calls (the indexes
live in memory and open their files just for the writes, truncations and
fsyncs they make; see :mod:`mafka.log.index` and :mod:`mafka.log.txn_index`).
This module owns that ``.log`` descriptor:

* :class:`LogFileHandle` is one open descriptor.  It is closed when the last
  reference to it goes (CPython frees it at once), not by whoever opened it:
  a :class:`~mafka.log.segment.FileRegion` handed to the network layer holds
  its handle, so the descriptor stays valid until ``os.sendfile`` is done
  with it even if the segment gave its own reference up meanwhile, and a
  descriptor number is never reused under a reader's feet.
* :class:`SegmentLogFile` is a segment's ``.log`` file: its path and, while
  the segment uses it, a handle.  It opens on first use (a read, an append,
  a truncation) — never when the segment is created or loaded.
* :class:`OpenLogFiles` bounds how many of those handles are kept, with one
  process-wide LRU (:data:`OPEN_LOG_FILES`).

The rule: a segment being *written* (the active segment of a log that
receives appends, from its first append until the log rolls, deletes or
closes it — :meth:`SegmentLogFile.seal`) keeps its handle, outside the LRU;
appending must not pay an ``open`` per batch, and the number of such
segments is the number of partitions being written, which the broker needs
anyway.  Every other segment that was read (a consumer catching up, the
cleaner, a replay at load) keeps its handle only while it is among the
:attr:`OpenLogFiles.capacity` most recently used ones.  An LRU rather than
closing after every use: a consumer catching up reads the same old segment
fetch after fetch, and reopening it each time would cost an ``open`` and a
path walk per fetch; an LRU keeps those hits cheap while a cap still bounds
the descriptors of non-active segments whatever the reads do.  The default
capacity, 1024 handles, is far above the segments concurrently read by
catching-up consumers and replicas, and a small share of a raised
``RLIMIT_NOFILE``.

An evicted handle still in use (a region being sent, a loop reading a
segment) stays open — only the segment's reference goes — and the segment
takes it back (through a weak reference) if it is used again meanwhile, so a
segment never has two descriptors of its own at once while the first is
alive.  Loading a log uses its segments' files and then gives them back
(:meth:`SegmentLogFile.release`), so loading N idle logs leaves no
descriptor open.

Locking: :class:`OpenLogFiles` has one lock for the LRU and every
:class:`SegmentLogFile`'s state; a :class:`SegmentLogFile` has its own lock,
held while it opens its file by path and while its path changes
(:meth:`SegmentLogFile.rename`, :meth:`SegmentLogFile.path_lock`; the
segment's index files resolve their paths under it too), so an ``open``
never runs under the shared lock and never races a rename.  Order: a file's
lock, then the shared one.
"""

from __future__ import annotations

import errno
import os
import threading
import weakref
from collections import OrderedDict
from collections.abc import Callable
from pathlib import Path

__all__ = ["DEFAULT_CAPACITY", "OPEN_LOG_FILES", "LogFileHandle", "OpenLogFiles", "SegmentLogFile"]

#: Handles of non-written segments kept open at most (see the module docstring).
DEFAULT_CAPACITY = 1024


class LogFileHandle:
    """One open descriptor of a ``.log`` file (read-write, append), closed when the last reference goes.

    Hold the handle, not just :attr:`fd`, for as long as the descriptor is used.
    """

    __slots__ = ("fd", "__weakref__")

    def __init__(self, path: Path) -> None:
        self.fd = -1  # so that __del__ of a failed open has nothing to close
        # No O_CREAT: a vanished .log is an error to report, not an empty segment to invent.
        self.fd = os.open(path, os.O_RDWR | os.O_APPEND)

    def __del__(self, _close: Callable[[int], None] = os.close) -> None:
        # _close is bound at definition: at interpreter exit the os module may be gone already.
        fd, self.fd = self.fd, -1
        if fd >= 0:
            try:
                _close(fd)
            except OSError:
                pass

    def __repr__(self) -> str:
        return f"LogFileHandle(fd={self.fd})"


def _closed_error(path: Path) -> OSError:
    # What os calls on a closed descriptor raised before files were opened lazily.
    return OSError(errno.EBADF, "segment file is closed", str(path))


class SegmentLogFile:
    """The ``.log`` file of one segment: its path and, while used, an open :class:`LogFileHandle`.

    States: idle (no handle), open for reading (a handle, in the LRU), being
    written (a handle, not in the LRU: :meth:`start_writing` until
    :meth:`seal`), and closed for good (:meth:`close`; every use raises
    ``OSError(EBADF)``, as a closed descriptor did).
    """

    __slots__ = ("path", "_cache", "_handle", "_ref", "_writing", "_closed", "_lock", "write_fd")

    def __init__(self, path: Path, cache: OpenLogFiles | None = None) -> None:
        self.path = path
        self._cache = cache if cache is not None else OPEN_LOG_FILES
        self._handle: LogFileHandle | None = None
        #: the last handle, so that one evicted while still in use is taken back, not duplicated
        self._ref: weakref.ref[LogFileHandle] | None = None
        self._writing = False
        self._closed = False
        self._lock = threading.RLock()
        #: the descriptor appends write to, or -1 when not being written (the append hot path reads it)
        self.write_fd = -1

    # ------------------------------------------------------------------ using

    def reader(self) -> LogFileHandle:
        """The open handle, opening the file if needed; hold it while using its descriptor.

        Raises:
            OSError: the file is closed (EBADF) or cannot be opened.
        """
        handle = self._handle
        if handle is not None and self._writing:
            return handle  # the active segment: no LRU bookkeeping on every read
        return self._cache.use(self)

    def start_writing(self) -> int:
        """Marks the file written (kept open, outside the LRU, until :meth:`seal`); returns :attr:`write_fd`."""
        return self._cache.start_writing(self)

    def seal(self) -> None:
        """The segment is no longer written (rolled, replaced, deleted): its handle joins the LRU."""
        if self._writing:
            self._cache.stop_writing(self)

    def release(self) -> None:
        """Drops the handle unless the file is being written (after loading: nothing stays open)."""
        self._cache.release(self)

    def close(self) -> None:
        """Closes the file for good (a handle still held elsewhere closes when that goes)."""
        self._cache.forget(self)

    def current(self) -> LogFileHandle | None:
        """The handle the segment has (or one still alive elsewhere), without opening or touching the LRU."""
        handle = self._handle
        if handle is None and self._ref is not None:
            handle = self._ref()
        return handle

    def fsync(self) -> None:
        """fsyncs the file, through its handle if it has one, else through a short-lived descriptor.

        fsync flushes the file (the inode), whichever descriptor names it.
        """
        handle = self.current()
        if handle is not None and not self._closed:
            os.fsync(handle.fd)
            return
        with self._lock:
            if self._closed:
                raise _closed_error(self.path)
            fd = os.open(self.path, os.O_RDONLY)
        try:
            os.fsync(fd)
        finally:
            os.close(fd)

    def stat(self) -> os.stat_result:
        """The file's status (``fstat`` of the handle if there is one, else ``stat`` of the path)."""
        if self._closed:
            raise _closed_error(self.path)
        handle = self.current()
        if handle is not None:
            return os.fstat(handle.fd)
        with self._lock:  # not while the path changes
            return os.stat(self.path)

    # ------------------------------------------------------------------ paths

    def rename(self, path: Path) -> None:
        """Renames the file to *path* (``os.replace``); open handles follow the file."""
        with self._lock:
            os.replace(self.path, path)
            self.path = path

    def path_lock(self) -> threading.RLock:
        """Held while a path of the segment's files is resolved or changed.

        Re-entrant; the segment's index files share it, and whoever renames
        the segment's directory holds it over the rename and the path updates.
        """
        return self._lock

    # ------------------------------------------------------------------ facts

    @property
    def closed(self) -> bool:
        return self._closed

    @property
    def is_open(self) -> bool:
        """Whether the segment holds a handle now (tests, metrics)."""
        return self._handle is not None

    @property
    def writing(self) -> bool:
        return self._writing

    def __repr__(self) -> str:
        state = "closed" if self._closed else "writing" if self._writing else "open" if self._handle else "idle"
        return f"SegmentLogFile({self.path.name}, {state})"


class OpenLogFiles:
    """The LRU of open ``.log`` handles of segments not being written, at most :attr:`capacity` of them.

    See the module docstring; :data:`OPEN_LOG_FILES` is the process's.
    """

    def __init__(self, capacity: int = DEFAULT_CAPACITY) -> None:
        self._lock = threading.Lock()
        self._lru: OrderedDict[SegmentLogFile, None] = OrderedDict()
        self._capacity = max(1, capacity)

    @property
    def capacity(self) -> int:
        return self._capacity

    @capacity.setter
    def capacity(self, value: int) -> None:
        with self._lock:
            self._capacity = max(1, value)
            self._evict()

    def __len__(self) -> int:
        """Handles in the LRU now (not those of segments being written)."""
        return len(self._lru)

    # ------------------------------------------------------------------ transitions (see SegmentLogFile)

    def use(self, f: SegmentLogFile) -> LogFileHandle:
        with self._lock:
            handle = self._adopt(f)
        if handle is not None:
            return handle
        with f._lock:  # one opener per file; its path cannot change meanwhile
            with self._lock:
                handle = self._adopt(f)
                if handle is not None:
                    return handle
            new = LogFileHandle(f.path)  # outside the shared lock: an open may wait on the disk
            with self._lock:
                if f._closed:
                    raise _closed_error(f.path)  # closed meanwhile: *new* closes as it goes
                f._handle = new
                f._ref = weakref.ref(new)
                self._touch(f)
            return new

    def start_writing(self, f: SegmentLogFile) -> int:
        handle = self.use(f)
        with self._lock:
            if f._closed:
                raise _closed_error(f.path)
            f._handle = handle  # it may have been evicted since use() returned it
            f._writing = True
            f.write_fd = handle.fd
            self._lru.pop(f, None)
        return handle.fd

    def stop_writing(self, f: SegmentLogFile) -> None:
        with self._lock:
            if not f._writing:
                return
            f._writing = False
            f.write_fd = -1
            if f._handle is not None:
                self._touch(f)

    def release(self, f: SegmentLogFile) -> None:
        with self._lock:
            if not f._writing:
                f._handle = None
                self._lru.pop(f, None)

    def forget(self, f: SegmentLogFile) -> None:
        with self._lock:
            f._closed = True
            f._writing = False
            f.write_fd = -1
            f._handle = None
            f._ref = None
            self._lru.pop(f, None)

    # ------------------------------------------------------------------ under the lock

    def _adopt(self, f: SegmentLogFile) -> LogFileHandle | None:
        """*f*'s handle (taken back from its weak reference if evicted but alive), made most recent."""
        if f._closed:
            raise _closed_error(f.path)
        handle = f._handle
        if handle is None:
            handle = f._ref() if f._ref is not None else None
            if handle is None:
                return None
            f._handle = handle
        if not f._writing:
            self._touch(f)
        return handle

    def _touch(self, f: SegmentLogFile) -> None:
        lru = self._lru
        if f in lru:
            lru.move_to_end(f)
        else:
            lru[f] = None
            self._evict()

    def _evict(self) -> None:
        lru = self._lru
        while len(lru) > self._capacity:
            victim, _ = lru.popitem(last=False)
            # Only the segment's reference goes: a handle still in use closes when that use ends.
            victim._handle = None


#: The process's LRU of open segment files.
OPEN_LOG_FILES = OpenLogFiles()
