"""The per-dir checkpoint files of the log manager: recovery points, log start offsets,
high watermarks and cleaner offsets.

Kafka's ``LogManager`` keeps one ``OffsetCheckpointFile`` of each kind per log
dir (``recoveryPointCheckpoints``, ``logStartOffsetCheckpoints``, the
``ReplicaManager``'s ``highWatermarkCheckpoints`` and the
``LogCleanerManager``'s ``checkpoints``) and rewrites each whole from the
current state; :class:`DirCheckpoints` does the same for every dir, with the
file format of :class:`~mafka.log.checkpoint.OffsetCheckpointFile`:

* ``recovery-point-offset-checkpoint``: each online log's recovery point;
* ``log-start-offset-checkpoint``: the logs whose start offset is past their
  first segment's base (for the others, reopening finds the same start);
* ``replication-offset-checkpoint``: the high watermarks the broker hands in;
* ``cleaner-offset-checkpoint``: first dirty offsets of compacted logs, read,
  stripped of partitions no longer in the dir, updated and rewritten.

A file is written or read only while its dir is online; an ``OSError`` (or,
on reading, a corrupt file: Kafka's ``CheckpointFileWithFailureHandler``)
takes the dir offline through :mod:`.failures`.  At startup a corrupt
recovery-point or log-start file is only a warning
(:meth:`DirCheckpoints.read_at_startup`).

Locks and threads: the checkpoint lock (an RLock, owned here) serialises the
writers of every checkpoint file, so a rewrite from an older state never lands
after one from a newer state, and a read-modify-write of the cleaner file is
atomic.  Under it the registry's ``lock`` is taken just long enough to copy
the entries (never during file I/O); a dir failing on the way is taken offline
with the checkpoint lock still held.  The periodic checkpoints run in worker
threads; the rewrites after a deletion, a truncation or a move run on the
thread doing those.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from mafka.topics import TopicPartitionTuple

from ..checkpoint import (
    CLEANER_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    CorruptCheckpointError,
    OffsetCheckpointFile,
)
from .failures import DirFailures
from .registry import LogRegistry

__all__ = ["DirCheckpoints"]

logger = logging.getLogger("mafka.log.manager")


class DirCheckpoints:
    """Reads and rewrites the dirs' offset checkpoint files (see the module docstring)."""

    def __init__(self, registry: LogRegistry, failures: DirFailures) -> None:
        self._registry = registry
        self._failures = failures
        self._lock = threading.RLock()  # serialises checkpoint file writers
        #: each dir's high watermarks as last written (an unchanged set is not rewritten)
        self._written_hws: dict[Path, dict[TopicPartitionTuple, int]] = {}

    @staticmethod
    def read_at_startup(path: Path) -> dict[TopicPartitionTuple, int]:
        """A recovery-point or log-start file at startup: a corrupt one is ignored with a warning."""
        try:
            return OffsetCheckpointFile(path).read()
        except CorruptCheckpointError as exc:
            logger.warning("error reading %s, ignoring it: %s", path, exc)
            return {}

    # ------------------------------------------------------------------ writing

    def _recovery_points_in(self, d: Path) -> dict[TopicPartitionTuple, int]:
        reg = self._registry
        return {tp: reg.logs[tp].recovery_point for tp, dd in reg.dir_of.items() if dd == d}

    def _log_start_offsets_in(self, d: Path) -> dict[TopicPartitionTuple, int]:
        # Kafka writes only the logs whose start is past their first segment's base:
        # for the others, reopening the log finds the same start anyway.
        reg = self._registry
        out = {}
        for tp, dd in reg.dir_of.items():
            if dd == d:
                log = reg.logs[tp]
                if log.segments and log.log_start_offset > log.segments[0].base_offset:
                    out[tp] = log.log_start_offset
        return out

    def _write(
        self, d: Path, name: str, entries: Callable[[Path], Mapping[TopicPartitionTuple, int]],
        before_write: Callable[[], None] | None = None,
    ) -> bool:
        """Rewrite one checkpoint file of *d* from the current state; False if the dir is/went offline.

        *entries* runs with the registry lock held; *before_write* after it, without.
        """
        with self._lock:
            with self._registry.lock:
                if d in self._registry.offline:
                    return False
                values = dict(entries(d))
            try:
                if before_write is not None:
                    before_write()
                OffsetCheckpointFile(d / name).write(values)
            except OSError as exc:
                logger.error("disk error while writing %s in %s: %s", name, d, exc)
                self._failures.handle_dir_failure(d, exc)
                return False
        return True

    def write_recovery_points(self, d: Path) -> bool:
        """Rewrite *d*'s ``recovery-point-offset-checkpoint``; False if the dir is/went offline.

        The recovery points are taken first, then every log's leader epoch
        checkpoint is written (if a change is still pending) and fsynced, then
        the file is written: an epoch entry is in memory before any data of
        that epoch is appended, so each epoch of the data below a recorded
        recovery point is durable before the point is
        (:class:`~mafka.log.epoch_cache.LeaderEpochCache`).
        """
        logs: list[Any] = []

        def recovery_points(dd: Path) -> dict[TopicPartitionTuple, int]:
            points = self._recovery_points_in(dd)
            logs.extend(self._registry.logs[tp] for tp in points)
            return points

        def sync_epochs() -> None:
            for log in logs:
                log.epoch_cache.sync()

        return self._write(d, RECOVERY_POINT_OFFSET_CHECKPOINT, recovery_points, before_write=sync_epochs)

    def write_log_start_offsets(self, d: Path) -> bool:
        """Rewrite *d*'s ``log-start-offset-checkpoint``; False if the dir is/went offline."""
        return self._write(d, LOG_START_OFFSET_CHECKPOINT, self._log_start_offsets_in)

    def rewrite_dir(self, d: Path, removed: set[TopicPartitionTuple]) -> None:
        """After logs left or joined *d*: its cleaner file without *removed*, then its recovery
        points and log start offsets, from the current state."""
        self.update_cleaner_offsets_in(d, {}, removed)
        self.write_recovery_points(d)
        self.write_log_start_offsets(d)

    def checkpoint_recovery_points(self) -> int:
        """Write every online dir's ``recovery-point-offset-checkpoint``; returns the files written."""
        return sum(self.write_recovery_points(d) for d in self._registry.online_dirs())

    def checkpoint_log_start_offsets(self) -> int:
        """Write every online dir's ``log-start-offset-checkpoint``; returns the files written.

        As in Kafka, a log appears only if its start offset is past the base
        offset of its first segment.
        """
        return sum(self.write_log_start_offsets(d) for d in self._registry.online_dirs())

    def write_high_watermarks(self, hws: Mapping[TopicPartitionTuple, int]) -> int:
        """Write each online dir's ``replication-offset-checkpoint``; returns the files written.

        Each file is rewritten whole with the entries of *hws* whose log is in
        that dir, so *hws* must cover every partition (Kafka's
        ``checkpointHighWatermarks``); entries without a local log are ignored.
        A dir whose entries are those it was last written with is not rewritten
        (counted as written).
        """
        hws = dict(hws)
        reg = self._registry
        written = 0
        for d in reg.online_dirs():
            with self._lock:
                with reg.lock:
                    values = {tp: hw for tp, hw in hws.items() if reg.dir_of.get(tp) == d}
                if values == self._written_hws.get(d):
                    # Unchanged (an idle broker, every 5 s): the file already says exactly this.
                    written += 1
                    continue
                def these(_: Path, v: dict[TopicPartitionTuple, int] = values) -> dict[TopicPartitionTuple, int]:
                    return v

                if self._write(d, REPLICATION_OFFSET_CHECKPOINT, these):
                    self._written_hws[d] = values
                    written += 1
                else:
                    self._written_hws.pop(d, None)
        return written

    # ------------------------------------------------------------------ reading

    def _read_dir(self, d: Path, name: str) -> dict[TopicPartitionTuple, int] | None:
        """The entries of *d*'s file that belong to logs in *d*; None if the dir is/went offline."""
        try:
            values = OffsetCheckpointFile(d / name).read()
        except (OSError, CorruptCheckpointError) as exc:
            logger.error("error while reading %s in %s: %s", name, d, exc)
            self._failures.handle_dir_failure(d, exc)
            return None
        reg = self._registry
        with reg.lock:
            if d in reg.offline:
                return None
            return {tp: off for tp, off in values.items() if reg.dir_of.get(tp) == d}

    def _read_all(self, name: str) -> dict[TopicPartitionTuple, int]:
        out: dict[TopicPartitionTuple, int] = {}
        for d in self._registry.online_dirs():
            out.update(self._read_dir(d, name) or {})
        return out

    def read_high_watermarks(self) -> dict[TopicPartitionTuple, int]:
        """The checkpointed high watermarks of the online logs (from the dir holding each).

        A dir whose file cannot be read or parsed goes offline (Kafka's
        ``CheckpointFileWithFailureHandler``).
        """
        return self._read_all(REPLICATION_OFFSET_CHECKPOINT)

    def read_cleaner_offsets(self) -> dict[TopicPartitionTuple, int]:
        """The checkpointed first dirty offsets of the online logs (``cleaner-offset-checkpoint``)."""
        return self._read_all(CLEANER_OFFSET_CHECKPOINT)

    # ------------------------------------------------------------------ the cleaner's file

    def update_cleaner_offsets(
        self, offsets: Mapping[TopicPartitionTuple, int], *, remove: Iterable[TopicPartitionTuple] = ()
    ) -> None:
        """Set (and drop) first dirty offsets in the ``cleaner-offset-checkpoint`` of each log's dir.

        Kafka's ``updateCheckpoints``: each touched file is read, stripped of
        partitions no longer in its dir, updated and rewritten.  Partitions
        without an online log are ignored.
        """
        reg = self._registry
        removed = set(remove)
        with reg.lock:
            touched = {reg.dir_of[tp] for tp in (*offsets, *removed) if tp in reg.dir_of}
        for d in reg.log_dirs:
            if d in touched:
                self.update_cleaner_offsets_in(d, offsets, removed)

    def update_cleaner_offsets_in(
        self, d: Path, offsets: Mapping[TopicPartitionTuple, int], removed: set[TopicPartitionTuple]
    ) -> bool:
        """:meth:`update_cleaner_offsets` for one dir; False if it is/went offline."""
        with self._lock:
            current = self._read_dir(d, CLEANER_OFFSET_CHECKPOINT)
            if current is None:
                return False
            reg = self._registry
            with reg.lock:
                current.update(
                    {tp: off for tp, off in offsets.items() if reg.dir_of.get(tp) == d}
                )
            for tp in removed:
                current.pop(tp, None)
            return self._write(d, CLEANER_OFFSET_CHECKPOINT, lambda _: current)

    def maybe_truncate_cleaner_offset(self, d: Path, tp: TopicPartitionTuple, offset: int) -> None:
        """Kafka's ``maybeTruncateCheckpoint``: lower *tp*'s first dirty offset to *offset* if above it."""
        with self._lock:
            current = self._read_dir(d, CLEANER_OFFSET_CHECKPOINT)
            if current is not None and current.get(tp, 0) > offset:
                current[tp] = offset
                self._write(d, CLEANER_OFFSET_CHECKPOINT, lambda _: current)
