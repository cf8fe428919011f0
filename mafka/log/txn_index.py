"""A segment's transaction index, ``%020d.txnindex``: the aborted transactions whose markers it holds.

Kafka 2.8's ``TransactionIndex`` / ``AbortedTxn`` (``core/.../log/TransactionIndex.scala``).
The file is a sequence of 34-byte entries, big-endian, no header::

    version           int16  = 0
    producer_id       int64
    first_offset      int64  the transaction's first offset
    last_offset       int64  the offset of its ABORT marker (in this segment)
    last_stable_offset int64  the LSO right after the abort (a search hint)

Entries are appended in increasing ``last_offset`` order as ABORT markers
are written; a READ_COMMITTED fetch asks each segment from the one holding
its fetch offset for the entries overlapping [fetch offset, upper bound)
until one entry's ``last_stable_offset`` reaches the upper bound (everything
later in the log is then known not to overlap).

As in Kafka the file is created only when the first entry is appended, so a
segment that never saw an abort has no ``.txnindex`` file.  Every entry is
written at once with ``os.write`` (markers are rare) and kept in memory too,
so searches never read the file.  No descriptor is kept: each append and
fsync opens the file and closes it again, a truncation goes by path (markers are rare;
a broker with many idle segments holds no ``.txnindex`` descriptor, see
:mod:`mafka.log.open_files`), and :meth:`TransactionIndex.flush` fsyncs only
what was written since the last one.

Mutations are serialised by the owning log's lock; a search may run
concurrently (it iterates a list that is only appended to or replaced).
"""

from __future__ import annotations

import contextlib
import os
import struct
import threading
from collections.abc import Iterable
from pathlib import Path
from typing import NamedTuple

from .checkpoint import fsync_and_close
from .index import CorruptIndexError

__all__ = ["ABORTED_TXN_SIZE", "AbortedTxn", "TransactionIndex", "TxnIndexSearchResult"]

_ENTRY = struct.Struct(">hqqqq")
#: ``AbortedTxn.TotalSize``.
ABORTED_TXN_SIZE = _ENTRY.size
#: ``AbortedTxn.CurrentVersion``.
CURRENT_VERSION = 0


class AbortedTxn(NamedTuple):
    """One aborted transaction (Kafka's ``AbortedTxn``)."""

    producer_id: int
    first_offset: int
    last_offset: int
    last_stable_offset: int

    def encode(self) -> bytes:
        """The 34-byte entry (version 0)."""
        return _ENTRY.pack(CURRENT_VERSION, self.producer_id, self.first_offset, self.last_offset, self.last_stable_offset)

    @property
    def as_aborted_transaction(self) -> tuple[int, int]:
        """``(producer_id, first_offset)``: what a Fetch response lists (Kafka's ``asAbortedTransaction``)."""
        return self.producer_id, self.first_offset


class TxnIndexSearchResult(NamedTuple):
    """The entries of one segment overlapping a fetch, and whether later segments need no search."""

    aborted_transactions: list[AbortedTxn]
    is_complete: bool


class TransactionIndex:
    """The ``.txnindex`` file of the segment starting at *start_offset*.

    Args:
        path: the file; it need not exist (an index with no entries).
        start_offset: the segment's base offset (the sanity check's bound).
        lock: held while the path is resolved (the segment's path lock, see
            :class:`mafka.log.index.OffsetIndex`); a private one by default.

    Attributes:
        stale: set when the entries may be incomplete (the segment was
            recovered, or the file failed its sanity check and was emptied);
            whoever holds the producer state rebuilds the index and clears it.
    """

    def __init__(self, path: Path, start_offset: int, lock: threading.RLock | None = None) -> None:
        self.path = path
        self._lock = lock if lock is not None else threading.RLock()
        self.start_offset = start_offset
        self.stale = False
        self._unsynced = False  # written or truncated since the last fsync
        self._entries: list[AbortedTxn] = []

    # ------------------------------------------------------------------ loading

    def load(self) -> None:
        """Reads the file if there is one and runs Kafka's ``sanityCheck`` on it.

        Raises:
            CorruptIndexError: a size that is not a multiple of 34 bytes, an
                entry whose version is not 0, last offsets that do not increase,
                or one below the segment's base offset.  The entries are then
                empty; :meth:`reset` empties the file before it is rebuilt.
        """
        self._entries = []
        try:
            with self._lock:
                fd = os.open(self.path, os.O_RDONLY)
        except FileNotFoundError:
            return
        try:
            size = os.fstat(fd).st_size
            data = os.pread(fd, size, 0) if size else b""
        finally:
            os.close(fd)
        if len(data) % ABORTED_TXN_SIZE:
            raise CorruptIndexError(f"{self.path}: size {len(data)} is not a multiple of {ABORTED_TXN_SIZE}")
        entries = []
        last = -1
        for version, pid, first, last_offset, lso in _ENTRY.iter_unpack(data):
            txn = AbortedTxn(pid, first, last_offset, lso)
            if version != CURRENT_VERSION:
                raise CorruptIndexError(f"{self.path}: unexpected aborted transaction version {version} in {txn}")
            if last_offset < self.start_offset:
                raise CorruptIndexError(
                    f"{self.path}: last offset of aborted transaction {txn} is less than start offset {self.start_offset}"
                )
            if last_offset <= last:
                raise CorruptIndexError(f"{self.path}: last offsets do not increase at {txn}")
            last = last_offset
            entries.append(txn)
        self._entries = entries

    # ------------------------------------------------------------------ queries

    def __len__(self) -> int:
        return len(self._entries)

    def all_aborted_txns(self) -> list[AbortedTxn]:
        """Every entry, in order (Kafka's ``allAbortedTxns``)."""
        return list(self._entries)

    @property
    def last_offset(self) -> int | None:
        """The last entry's last offset, or None when empty."""
        entries = self._entries
        return entries[-1].last_offset if entries else None

    def collect_aborted_txns(self, fetch_offset: int, upper_bound_offset: int) -> TxnIndexSearchResult:
        """Entries overlapping [*fetch_offset*, *upper_bound_offset*) (Kafka's ``collectAbortedTxns``).

        ``is_complete`` is true once an entry's last stable offset reaches
        *upper_bound_offset*: no transaction aborted later can overlap the range.
        """
        found = []
        for txn in self._entries:
            if txn.last_offset >= fetch_offset and txn.first_offset < upper_bound_offset:
                found.append(txn)
            if txn.last_stable_offset >= upper_bound_offset:
                return TxnIndexSearchResult(found, True)
        return TxnIndexSearchResult(found, False)

    # ------------------------------------------------------------------ mutations

    def append(self, txn: AbortedTxn) -> None:
        """Writes *txn* at the end of the file (created if needed).

        Raises:
            ValueError: its last offset is not above the last entry's (Kafka's
                ``IllegalArgumentException``).
        """
        last = self.last_offset
        if last is not None and last >= txn.last_offset:
            raise ValueError(
                f"The last offset of appended transactions must increase sequentially, but {txn.last_offset} "
                f"is not greater than current last offset {last} of index {self.path}"
            )
        data = txn.encode()
        fd = self._open()
        try:
            written = os.write(fd, data)
            while written < len(data):
                written += os.write(fd, data[written:])
        finally:
            os.close(fd)
        self._unsynced = True
        self._entries.append(txn)

    def extend(self, txns: Iterable[AbortedTxn]) -> None:
        """Appends several entries (in increasing last-offset order)."""
        for txn in txns:
            self.append(txn)

    def truncate_to(self, offset: int) -> None:
        """Drops the entries whose last offset is ≥ *offset* (Kafka's ``truncateTo``)."""
        entries = self._entries
        keep = next((i for i, txn in enumerate(entries) if txn.last_offset >= offset), len(entries))
        if keep == len(entries):
            return
        self._entries = entries[:keep]  # a new list: a concurrent search keeps its own
        self._truncate(keep * ABORTED_TXN_SIZE)

    def reset(self) -> None:
        """Removes every entry, emptying the file if there is one (Kafka's ``reset``)."""
        self._entries = []
        try:
            with self._lock:
                os.truncate(self.path, 0)  # one call, no descriptor
        except FileNotFoundError:
            return  # no file: nothing to empty (it is created by the first append)
        self._unsynced = True

    # ------------------------------------------------------------------ lifecycle

    def _open(self) -> int:
        """A short-lived descriptor (created if missing); the caller closes it."""
        with self._lock:
            return os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)

    def _truncate(self, size: int) -> None:
        try:
            with self._lock:
                os.truncate(self.path, size)  # one call, no descriptor
        except FileNotFoundError:
            fd = self._open()  # entries without a file (it was lost): recreate it
            try:
                os.ftruncate(fd, size)
            finally:
                os.close(fd)
        self._unsynced = True

    def flush(self) -> None:
        """fsyncs the file if it was written or truncated since the last fsync."""
        if self._unsynced:
            fsync_and_close(self._open())
            self._unsynced = False

    def close(self) -> None:
        """Nothing to close (no descriptor is kept); kept for the segment's symmetry."""

    def rename(self, path: Path) -> None:
        """Moves the file (if there is one) to *path*; later appends go there (Kafka's ``renameTo``)."""
        with self._lock:
            try:
                if self.path.exists():
                    os.replace(self.path, path)
            finally:
                self.path = path

    def delete(self) -> None:
        """Closes and removes the file if there is one (Kafka's ``deleteIfExists``)."""
        self.close()
        self._unsynced = False
        with self._lock, contextlib.suppress(FileNotFoundError):
            os.unlink(self.path)

    def __repr__(self) -> str:
        return f"TransactionIndex({self.path.name}, {len(self._entries)} entries)"
