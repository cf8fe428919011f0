"""The cold tier of the log manager: ``mafka.cold.log.dirs`` (Mafka's hybrid storage).

:class:`ColdTier` owns what the manager does with cold dirs: finding the
partitions' cold parts at startup and removing unfinished deletions and
orphans, choosing a partition's cold dir, renaming a deleted log's cold part
with it, taking partitions offline when a cold dir fails, and the mover pass
(:meth:`ColdTier.tier_pass`) that moves due segments with
:func:`mafka.log.tiering.move_segment`.  Its state is its own: the cold dirs,
where each partition's cold part was found, the dirs' problems
(:attr:`ColdTier.problems`, the manager's ``cold_dir_problems``), the failed
cold dirs and the count of segments moved.

It sees the rest of the manager only through two narrow interfaces, given to
it explicitly: :class:`HotLogs` (the online logs: look one up, list, snapshot,
borrow) and :class:`FailureHandling` (report an I/O error on a log, take
partitions offline).  The manager's :class:`~.registry.LogRegistry` and
:class:`~.failures.DirFailures` implement them.

Locks and threads: no lock of its own.  Taking a failed cold dir's partitions
offline marks the dir failed and picks the partitions inside one hold of the
registry lock (the ``select`` given to
:meth:`FailureHandling.take_partitions_offline`), so a dir fails once.  The
other state is read and written without a lock, as before the split: the
found parts at startup (one thread), on creation, deletion and by the mover;
the problems by the mover (a worker thread) while the broker's metrics and
monitor read them from other threads.  :meth:`ColdTier.tier_pass` runs
in a worker thread, borrowing each log and reading its segment list under the
log's own lock; :meth:`ColdTier.cold_dir_failed_for` is called from the
thread pool of cold reads.
"""

from __future__ import annotations

import logging
import os
import shutil
import zlib
from collections.abc import Callable, Mapping
from contextlib import AbstractContextManager
from pathlib import Path
from typing import Protocol

from mafka.topics import TopicPartitionTuple

from .. import tiering
from ..checkpoint import fsync_dir
from ..dir_names import (
    DELETE_DIR_SUFFIX,
    InvalidLogDirectoryError,
    log_dir_name,
    parse_log_dir_name,
)
from ..log import Log

__all__ = ["ColdTier", "FailureHandling", "HotLogs"]

logger = logging.getLogger("mafka.log.manager")


class HotLogs(Protocol):
    """What the cold tier reads of the online (hot) logs."""

    def get(self, tp: TopicPartitionTuple) -> Log | None:
        """The online log of *tp*, or None."""

    def topic_partitions(self) -> list[TopicPartitionTuple]:
        """The partitions with an online log."""

    def any_offline(self) -> bool:
        """Whether a log dir is offline (it may hold partitions the cold tier does not know)."""

    def snapshot(self) -> list[tuple[TopicPartitionTuple, Log, Path]]:
        """(tp, log, log dir) of every online log."""

    def borrowed(self, tp: TopicPartitionTuple, log: Log) -> AbstractContextManager[bool]:
        """Keep *log* open while in use if it is still *tp*'s online log; yields whether it is."""


class FailureHandling(Protocol):
    """How the cold tier reports failures."""

    def io_failed(self, tp: TopicPartitionTuple, log: Log, d: Path, exc: BaseException) -> None:
        """An I/O error on *log*'s hot part: its log dir goes offline (unless it was retired)."""

    def take_partitions_offline(
        self,
        d: Path,
        exc: BaseException,
        message: str,
        select: Callable[[Mapping[TopicPartitionTuple, Log]], list[TopicPartitionTuple] | None],
    ) -> bool:
        """Take the partitions *select* picks (under the state lock) offline because of *d*."""


class ColdTier:
    """The cold dirs and the mover (see the module docstring).

    Args:
        cold_dirs: ``mafka.cold.log.dirs``, absolute; none disables the tier.
        clock: milliseconds since the epoch.
        logs: the online logs.
        failures: where failures go.
    """

    def __init__(
        self,
        cold_dirs: tuple[Path, ...],
        clock: Callable[[], int],
        logs: HotLogs,
        failures: FailureHandling,
    ) -> None:
        self.cold_dirs = cold_dirs
        self._clock = clock
        self._logs = logs
        self._failures = failures
        self._found: dict[str, Path] = {}  # partition dir name -> the cold dir holding it
        #: cold dirs the mover stopped using: "full" (it retries each pass) or the I/O error
        self.problems: dict[Path, str] = {}
        #: cold dirs that failed (I/O error): unused until restart, their partitions offline
        self._failed: set[Path] = set()
        #: segments moved hot -> cold since startup
        self.segments_moved = 0

    def scan(self) -> None:
        """Creates the cold dirs; finds the partitions' cold parts; removes unfinished deletions."""
        for root in self.cold_dirs:
            try:
                root.mkdir(parents=True, exist_ok=True)
                for child in sorted(root.iterdir()):
                    if not child.is_dir():
                        continue
                    if child.name.endswith(DELETE_DIR_SUFFIX):
                        logger.info("%s: removing %s, an unfinished deletion", root, child.name)
                        shutil.rmtree(child)
                        continue
                    parse_log_dir_name(child.name)
                    other = self._found.setdefault(child.name, root)
                    if other != root:
                        raise InvalidLogDirectoryError(f"{child.name} is in two cold dirs: {other} and {root}")
            except OSError as exc:
                logger.error("cold log dir %s cannot be used: %s", root, exc)
                self.problems[root] = f"I/O error: {exc}"

    def remove_orphan_parts(self) -> None:
        """Cold parts of partitions this broker no longer has (deleted while a cold dir was away).

        Only when every log dir is online: an offline dir may hold their hot part.
        """
        if self._logs.any_offline():
            return
        known = {log_dir_name(*tp) for tp in self._logs.topic_partitions()}
        for name, root in sorted(self._found.items()):
            if name not in known:
                logger.warning("%s: removing %s, the cold part of a partition this broker has no log of", root, name)
                shutil.rmtree(root / name, ignore_errors=True)
                del self._found[name]

    def retire_part(self, log: Log, deleted_name: str) -> None:
        """Renames *log*'s cold part as its hot dir was (``…-delete``), so the name is free for a new log."""
        cold = log.cold_directory
        if cold is None or not cold.is_dir():
            return
        renamed = cold.parent / deleted_name
        try:
            os.rename(cold, renamed)
            fsync_dir(cold.parent)
        except OSError as exc:  # the startup scan removes what is left of it
            logger.error("cannot rename the cold part %s of a deleted log: %s", cold, exc)
            return
        log.cold_directory = renamed
        self._found.pop(cold.name, None)

    def handle_cold_dir_failure(self, cold_dir: Path, exc: BaseException) -> bool:
        """A cold dir failed (an I/O error other than a full disk): it is used no more until restart,
        and every partition with segments in it goes offline, as a failed log dir's partitions do
        (``handle_dir_failure``; ``on_dir_failure`` is called with the cold dir).  Returns False if the
        dir had already failed.

        Raises:
            ValueError: *cold_dir* is not one of the cold dirs.
        """
        root = Path(os.path.abspath(cold_dir))
        if root not in self.cold_dirs:
            raise ValueError(f"{cold_dir} is not one of the cold log dirs")

        def select(logs: Mapping[TopicPartitionTuple, Log]) -> list[TopicPartitionTuple] | None:
            if root in self._failed:
                return None
            self._failed.add(root)
            self.problems[root] = f"offline: I/O error: {exc}"
            return sorted(tp for tp, log in logs.items()
                          if log.cold_directory is not None and log.cold_directory.parent == root
                          and any(seg.cold for seg in log.segments))

        return self._failures.take_partitions_offline(
            root, exc, "stopping serving logs with cold segments in %s (%s); offline partitions: %s", select)

    def cold_dir_failed_for(self, tp: TopicPartitionTuple, exc: BaseException) -> bool:
        """An I/O error reading *tp*'s cold segments: :meth:`handle_cold_dir_failure` of its cold dir
        (False when the partition has no cold dir, or it had already failed)."""
        log = self._logs.get(tp)
        if log is None or log.cold_directory is None:
            return False
        return self.handle_cold_dir_failure(log.cold_directory.parent, exc)

    def cold_dir_for(self, tp: TopicPartitionTuple) -> Path | None:
        """Where *tp*'s cold segments are (or will go): the cold dir already holding them, else one by hash."""
        if not self.cold_dirs:
            return None
        name = log_dir_name(*tp)
        root = self._found.get(name) or self.cold_dirs[zlib.crc32(name.encode()) % len(self.cold_dirs)]
        return root / name

    def tier_pass(self, hot_retention_ms: int, hot_retention_bytes: int,
                  on_step: Callable[[str], None] | None = None) -> int:
        """Moves every log's segments that are due (``tiering.segments_to_move``) to the cold tier.

        Returns how many moved.  Compacted logs stay hot (the cleaner rewrites
        segments in place).  A full cold dir stops moves into it for this pass
        (the segments stay hot, ``cold_dir_problems`` says why); another I/O
        error on a cold dir stops using it until restart.  Neither loses data.
        """
        if not self.cold_dirs:
            return 0
        moved = 0
        now = self._clock()
        full_now: set[Path] = set()
        for tp, log, _d in self._logs.snapshot():
            if log.config.compact:
                continue
            with self._logs.borrowed(tp, log) as ok:
                if not ok:
                    continue
                if log.cold_directory is None:
                    log.cold_directory = self.cold_dir_for(tp)
                target = log.cold_directory
                assert target is not None
                root = target.parent
                problem = self.problems.get(root)
                if root in full_now or root in self._failed or (problem is not None and problem != "full"):
                    continue
                # Kafka flushes a segment when it is rolled; here the mover does it for the
                # segments it may move (only flushed data moves: recovery never reads cold).
                try:
                    log.flush(log.active_segment.base_offset)
                except OSError as exc:
                    logger.error("%s-%d: error while flushing: %s", tp[0], tp[1], exc)
                    self._failures.io_failed(tp, log, _d, exc)
                    continue
                with log._lock:
                    due = tiering.segments_to_move(list(log.segments), log.recovery_point, now,
                                                   hot_retention_ms, hot_retention_bytes)
                for seg in due:
                    try:
                        tiering.move_segment(log, seg, target, on_step)
                    except tiering.MoveAborted as exc:
                        logger.info("%s-%d: %s; it stays hot for now", tp[0], tp[1], exc)
                        continue
                    except OSError as exc:
                        full = tiering.is_disk_full(exc)
                        logger.error("%s-%d: cannot move %s to %s (%s); it stays hot%s", tp[0], tp[1],
                                     seg.log_path.name, root, exc,
                                     "" if full else "; no more moves to that dir until restart")
                        self.problems[root] = "full" if full else f"I/O error: {exc}"
                        full_now.add(root)
                        break
                    moved += 1
                    self.problems.pop(root, None)
                    self._found.setdefault(target.name, root)
        self.segments_moved += moved
        return moved
