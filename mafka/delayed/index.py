"""One partition's index of pending deliveries: time buckets on disk, the near future in a timing wheel.

Every replica keeps one, fed from what it appends to its log (leader and
follower alike), so a new leader has it ready:

* :meth:`DelayIndex.envelope_appended` — an envelope at some offset: one
  ``A`` entry per due group, in the file of the group's due-time bucket;
* :meth:`DelayIndex.delivery_appended` — a delivery batch: a ``D`` entry
  (which group, at which offset it was delivered);
* :meth:`DelayIndex.truncate` — the log was truncated: entries of envelopes
  and deliveries at or past the new end go (files rewritten);
* :meth:`DelayIndex.checkpoint` — files flushed and fsynced, and the offset
  below which the files are complete written to ``indexed``; after an unclean
  shutdown the owner re-feeds the log from there (entries seen twice count once).

A group is identified by its *original offset*: the envelope's base offset
plus the group's first offset delta — the offset the producer was
acknowledged with for that record, unique in the partition.

Memory is bounded by the near future: per bucket only counts are kept; the
leader :meth:`load`\\ s buckets into the :class:`~.wheel.TimingWheel` as their
time approaches, and :meth:`due` hands out what is due.  Bucket files go
when every group in them is delivered below the high watermark.

File I/O happens in :meth:`load`, :meth:`truncate`, :meth:`checkpoint`,
:meth:`open` and :meth:`release_delivered`; the append hooks only write a few
bytes to buffered files.  A leader loads buckets in three steps so that the
reading happens off the reactor: :meth:`begin_load` (owner's thread: flush,
note each file's length), :meth:`BucketLoad.read` (any thread: read that much)
and :meth:`finish_load` (owner's thread: the few entries appended meanwhile,
then the wheel); :meth:`load` does all three at once.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from .wheel import TimingWheel

__all__ = ["BucketLoad", "BucketSummary", "DelayIndex", "Pending"]

_ADD = struct.Struct(">cqqiiB3x")  # b"A", due_ms, envelope offset, first delta, record count, flags
_DEL = struct.Struct(">cqqqi")  # b"D" (delivered) or b"X" (rolled back), due_ms, original offset, offset, count
assert _ADD.size == _DEL.size
ENTRY = _ADD.size
HALF = 1  # flags: a half message (checked, not delivered, when its time comes)
SUFFIX = ".delayed"
CHECKPOINT = "indexed"
#: how long after its end a fully delivered bucket's file is kept (for retried cancels and outcomes)
RELEASE_GRACE_MS = 300_000


@dataclass(frozen=True, slots=True)
class Pending:
    """A group to deliver: when, which (original offset), from which envelope, how many records.

    For a half message ``due_ms`` is when it was produced, and it comes out of
    the wheel ``half_check_ms`` later: time to check back, not to deliver.
    """

    due_ms: int
    original_offset: int
    envelope_offset: int
    count: int
    half: bool = False


@dataclass
class BucketSummary:
    """What one bucket holds, as counts (``mafka delayed --describe``); its entries stay on disk."""

    start_ms: int
    groups: int = 0
    records: int = 0
    delivered_groups: int = 0
    delivered_records: int = 0
    #: the smallest envelope offset among its groups (retention must not pass it while the bucket lives)
    first_envelope_offset: int | None = None
    #: the largest offset a delivery in it was appended at
    last_delivery_offset: int = -1

    @property
    def pending_groups(self) -> int:
        return self.groups - self.delivered_groups

    @property
    def pending_records(self) -> int:
        return self.records - self.delivered_records

    def count_add(self, p: Pending) -> None:
        self.groups += 1
        self.records += p.count
        if self.first_envelope_offset is None or p.envelope_offset < self.first_envelope_offset:
            self.first_envelope_offset = p.envelope_offset

    def count_delivery(self, count: int, at: int) -> None:
        self.delivered_groups += 1
        self.delivered_records += count
        self.last_delivery_offset = max(self.last_delivery_offset, at)


@dataclass
class _Entries:
    """A bucket file read whole: adds and deliveries by original offset (an entry seen twice counts once)."""

    adds: dict[int, Pending] = field(default_factory=dict)
    #: original offset → (due, delivery offset, record count)
    dels: dict[int, tuple[int, int, int]] = field(default_factory=dict)
    #: the original offsets of ``dels`` that were rolled back (cancelled), not delivered
    cancelled: set[int] = field(default_factory=set)


def _read_entries(path: Path, start: int = 0, end: int | None = None, into: _Entries | None = None) -> _Entries:
    """A bucket file's entries (bytes ``start``..``end`` of it, ``into`` an earlier part's); a torn tail
    (a crash mid-write) is ignored; a missing file holds none."""
    try:
        with open(path, "rb") as f:
            f.seek(start)
            data = f.read() if end is None else f.read(max(0, end - start))
    except FileNotFoundError:
        data = b""
    out = _Entries() if into is None else into
    for pos in range(0, len(data) - ENTRY + 1, ENTRY):
        kind = data[pos:pos + 1]
        if kind == b"A":
            _, due, env, delta, count, flags = _ADD.unpack_from(data, pos)
            out.adds.setdefault(env + delta, Pending(due, env + delta, env, count, bool(flags & HALF)))
        elif kind in (b"D", b"X"):
            _, due, original, at, count = _DEL.unpack_from(data, pos)
            if original not in out.dels:
                out.dels[original] = (due, at, count)
                if kind == b"X":
                    out.cancelled.add(original)
    return out


@dataclass
class BucketLoad:
    """Buckets being loaded into the wheel: what :meth:`DelayIndex.begin_load` chose, read by :meth:`read`."""

    #: (bucket start, its file, the file's length when chosen)
    buckets: list[tuple[int, Path, int]]
    #: the index's load epoch when chosen: a truncation or an unload meanwhile voids the load
    epoch: int
    entries: dict[int, _Entries] = field(default_factory=dict)

    def read(self) -> BucketLoad:
        """Reads the chosen part of every bucket file (any thread: only reads files)."""
        for start, path, length in self.buckets:
            self.entries[start] = _read_entries(path, 0, length)
        return self


class DelayIndex:
    """The pending deliveries of one partition replica, under ``directory`` (created if missing)."""

    def __init__(self, directory: Path, *, now_ms: int, bucket_ms: int = 60_000) -> None:
        self.directory = directory
        self.bucket_ms = bucket_ms
        self.buckets: dict[int, BucketSummary] = {}
        self.wheel: TimingWheel[int] = TimingWheel(now_ms)
        #: buckets whose pending groups are in the wheel
        self.loaded: set[int] = set()
        self._in_wheel: dict[int, Pending] = {}
        self._files: dict[int, BinaryIO] = {}
        #: bumped by every truncation: a checkpoint taken before one must not be written after it
        self.generation = 0
        #: buckets chosen by a :meth:`begin_load` not finished yet
        self.loading: set[int] = set()
        #: bumped by every truncation and unload: a load chosen before one is void
        self._load_epoch = 0
        #: how long after it was produced a half message comes out of the wheel (to be checked back)
        self.half_check_ms = 60_000

    # -- opening --------------------------------------------------------------------------

    def indexed_offset(self) -> int:
        """Below this offset every envelope and delivery of the log is in the files (0 if never checkpointed)."""
        try:
            return int((self.directory / CHECKPOINT).read_text().strip())
        except (FileNotFoundError, ValueError):
            return 0

    def open(self) -> None:
        """Counts every bucket file into the per-bucket summaries (entries seen twice count once).

        After an unclean shutdown the owner first feeds the log from
        :meth:`indexed_offset` on through the append hooks, then opens: the
        files may hold those entries already, and counting happens here.
        """
        self.directory.mkdir(parents=True, exist_ok=True)
        self.flush()
        self.buckets.clear()
        for path in sorted(self.directory.glob("*" + SUFFIX)):
            start = int(path.name[: -len(SUFFIX)])
            torn = path.stat().st_size % ENTRY
            if torn:  # a crash mid-write: later entries must start on an entry boundary
                with open(path, "r+b") as f:
                    f.truncate(path.stat().st_size - torn)
            entries = _read_entries(path)
            bucket = self.buckets[start] = BucketSummary(start)
            for p in entries.adds.values():
                bucket.count_add(p)
            for _, at, count in entries.dels.values():
                bucket.count_delivery(count, at)

    # -- what the log appends ----------------------------------------------------------------

    def bucket_of(self, due_ms: int) -> int:
        return due_ms - due_ms % self.bucket_ms

    def _file(self, start: int) -> BinaryIO:
        f = self._files.get(start)
        if f is None:
            self.directory.mkdir(parents=True, exist_ok=True)
            f = self._files[start] = open(self.directory / f"{start:013d}{SUFFIX}", "ab")
        return f

    def envelope_appended(self, envelope_offset: int, groups: Iterable[tuple[int, int, int]], *,
                          half: bool = False) -> None:
        """An envelope was appended at ``envelope_offset``; ``groups`` are its (due_ms, first delta, count)."""
        for due, delta, count in groups:
            start = self.bucket_of(due)
            bucket = self.buckets.setdefault(start, BucketSummary(start))
            p = Pending(due, envelope_offset + delta, envelope_offset, count, half)
            bucket.count_add(p)
            self._file(start).write(_ADD.pack(b"A", due, envelope_offset, delta, count, HALF if half else 0))
            if start in self.loaded:
                self.wheel.add(self.wheel_time(p), p.original_offset)
                self._in_wheel[p.original_offset] = p

    def wheel_time(self, p: Pending) -> int:
        """When ``p`` comes out of the wheel: its due time, or a half message's first check-back."""
        return p.due_ms + self.half_check_ms if p.half else p.due_ms

    def state_of(self, original_offset: int, due_ms: int) -> str:
        """``pending``, ``delivered``, ``cancelled`` or ``unknown``: from the wheel when it holds the group
        (a loaded bucket: the usual case of a half message resolved by its producer), else from the bucket
        file (read whole)."""
        if original_offset in self._in_wheel:
            return "pending"
        self.flush()
        path = self.directory / f"{self.bucket_of(due_ms):013d}{SUFFIX}"
        if not path.exists():
            return "unknown"
        entries = _read_entries(path)
        if original_offset in entries.dels:
            return "cancelled" if original_offset in entries.cancelled else "delivered"
        return "pending" if original_offset in entries.adds else "unknown"

    def delivery_appended(self, due_ms: int, original_offset: int, delivery_offset: int, count: int, *,
                          cancelled: bool = False) -> None:
        """The group ``original_offset`` (``count`` records due at ``due_ms``) was delivered at ``delivery_offset``
        (or, ``cancelled``, rolled back by a marker there)."""
        start = self.bucket_of(due_ms)
        bucket = self.buckets.setdefault(start, BucketSummary(start))
        bucket.count_delivery(count, delivery_offset)
        self._file(start).write(_DEL.pack(b"X" if cancelled else b"D", due_ms, original_offset, delivery_offset,
                                          count))
        if self._in_wheel.pop(original_offset, None) is not None:
            self.wheel.remove(original_offset)

    # -- the leader's side ---------------------------------------------------------------------

    def load(self, until_ms: int) -> int:
        """Puts the pending groups of every bucket starting before ``until_ms`` into the wheel; returns how many."""
        job = self.begin_load(until_ms)
        return 0 if job is None else self.finish_load(job.read())

    def begin_load(self, until_ms: int) -> BucketLoad | None:
        """Chooses the buckets starting before ``until_ms`` that are neither loaded nor loading (None: none).

        The caller reads them with :meth:`BucketLoad.read` (in a worker thread)
        and hands the result to :meth:`finish_load`.
        """
        chosen = [s for s in sorted(self.buckets) if s < until_ms and s not in self.loaded and s not in self.loading]
        if not chosen:
            return None
        self.flush()
        job = BucketLoad([], self._load_epoch)
        for start in chosen:
            path = self.directory / f"{start:013d}{SUFFIX}"
            try:
                length = path.stat().st_size
            except FileNotFoundError:
                length = 0
            job.buckets.append((start, path, length))
            self.loading.add(start)
        return job

    def finish_load(self, job: BucketLoad) -> int:
        """Adds the read buckets' pending groups to the wheel, with the entries appended since
        :meth:`begin_load`; returns how many groups went in (0 for a load voided meanwhile)."""
        for start, _, _ in job.buckets:
            self.loading.discard(start)
        if job.epoch != self._load_epoch:
            return 0  # truncated or unloaded meanwhile: chosen again by a later begin_load
        self.flush()
        added = 0
        for start, path, length in job.buckets:
            if start not in self.buckets:
                continue  # released meanwhile: everything in it was delivered
            entries = _read_entries(path, length, into=job.entries.get(start))
            self.loaded.add(start)
            for original, p in entries.adds.items():
                if original not in entries.dels and original not in self._in_wheel:
                    self.wheel.add(self.wheel_time(p), original)
                    self._in_wheel[original] = p
                    added += 1
        return added

    def next_load_ms(self) -> int | None:
        """The start of the earliest bucket neither loaded nor loading (None: there is none)."""
        return min((s for s in self.buckets if s not in self.loaded and s not in self.loading), default=None)

    def due(self, now_ms: int) -> list[Pending]:
        """The groups due by ``now_ms``, in (due, original offset) order; they leave the wheel.

        A group handed out and not delivered (the append failed) is given back with :meth:`retry`.
        """
        return [self._in_wheel.pop(original) for _, original in self.wheel.advance(now_ms)]

    def retry(self, p: Pending, at_ms: int) -> None:
        """Schedules a handed-out group again at ``at_ms`` (the caller knows it was not delivered)."""
        if p.original_offset in self._in_wheel or self.bucket_of(p.due_ms) not in self.loaded:
            return
        self.wheel.add(at_ms, p.original_offset)
        self._in_wheel[p.original_offset] = p

    def unload(self) -> None:
        """Empties the wheel (leadership lost); the files keep everything; a load under way is void."""
        self._load_epoch += 1
        self.wheel = TimingWheel(self.wheel.now_ms)
        self._in_wheel.clear()
        self.loaded.clear()

    # -- figures ------------------------------------------------------------------------------

    def pending_groups(self) -> int:
        return sum(b.pending_groups for b in self.buckets.values())

    def pending_records(self) -> int:
        return sum(b.pending_records for b in self.buckets.values())

    def first_pending_envelope_offset(self) -> int | None:
        """Retention must keep the log from here on (None: nothing pending)."""
        firsts = [b.first_envelope_offset for b in self.buckets.values() if b.first_envelope_offset is not None]
        return min(firsts) if firsts else None

    # -- truncation, release, checkpoints ------------------------------------------------------

    def truncate(self, offset: int) -> None:
        """Forgets envelopes at or past ``offset`` and deliveries appended at or past it (rewrites files)."""
        self.generation += 1
        self.unload()
        self._close_files()
        for start in sorted(self.buckets):
            path = self.directory / f"{start:013d}{SUFFIX}"
            if not path.exists():
                continue
            entries = _read_entries(path)
            keep_adds = [p for p in entries.adds.values() if p.envelope_offset < offset]
            keep_dels = [(o, d) for o, d in entries.dels.items() if d[1] < offset]
            if not keep_adds:
                path.unlink()
                continue
            tmp = path.with_suffix(".tmp")
            with open(tmp, "wb") as f:
                for p in keep_adds:
                    f.write(_ADD.pack(b"A", p.due_ms, p.envelope_offset, p.original_offset - p.envelope_offset,
                                      p.count, HALF if p.half else 0))
                for original, (due, at, count) in keep_dels:
                    f.write(_DEL.pack(b"X" if original in entries.cancelled else b"D", due, original, at, count))
            os.replace(tmp, path)
        if self.indexed_offset() > offset:
            self._write_checkpoint(offset)
        self.open()

    def release_delivered(self, high_watermark: int, now_ms: int | None = None) -> list[int]:
        """Deletes the files of buckets whose every group is delivered below ``high_watermark``; their starts.

        With ``now_ms``, only buckets that ended :data:`RELEASE_GRACE_MS` ago or more: a cancel
        (or a half message's outcome) retried meanwhile still finds its group's state in the file
        and is answered as the first was, even for a group due in the future.
        """
        gone = []
        for start, bucket in list(self.buckets.items()):
            if now_ms is not None and start + self.bucket_ms + RELEASE_GRACE_MS > now_ms:
                continue
            if bucket.groups and bucket.pending_groups == 0 and bucket.last_delivery_offset < high_watermark:
                f = self._files.pop(start, None)
                if f is not None:
                    f.close()
                (self.directory / f"{start:013d}{SUFFIX}").unlink(missing_ok=True)
                del self.buckets[start]
                self.loaded.discard(start)
                gone.append(start)
        return gone

    def checkpoint(self, offset: int) -> None:
        """Flushes and fsyncs the files, then records that everything below ``offset`` is in them."""
        for f in self._files.values():
            f.flush()
            os.fsync(f.fileno())
        self._write_checkpoint(offset)

    def _write_checkpoint(self, offset: int, generation: int | None = None) -> None:
        if generation is not None and generation != self.generation:
            return  # truncated since the offset was taken: the truncation wrote its own
        self.directory.mkdir(parents=True, exist_ok=True)
        tmp = self.directory / (CHECKPOINT + ".tmp")
        with open(tmp, "w") as f:
            f.write(f"{offset}\n")
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, self.directory / CHECKPOINT)

    def flush(self) -> None:
        for f in self._files.values():
            f.flush()

    def _close_files(self) -> None:
        for f in self._files.values():
            f.close()
        self._files.clear()

    def close(self) -> None:
        self._close_files()
