"""The cold tier of a :class:`~mafka.log.manager.LogManager`: ``mafka.cold.log.dirs`` (Mafka's hybrid storage).

:class:`ColdTierMixin` holds what the manager does with cold dirs: finding
partitions' cold parts at startup and removing unfinished deletions and
orphans, choosing a partition's cold dir, renaming a deleted log's cold part
with it, and the mover pass (:meth:`ColdTierMixin.tier_pass`) that moves
due segments with :func:`mafka.log.tiering.move_segment`.  The manager's
state (``cold_dirs``, ``_cold_found``, ``cold_dir_problems``, ``_failed_cold_dirs``,
``segments_moved_cold``) is set up in ``LogManager.__init__``.
"""

from __future__ import annotations

import logging
import os
import shutil
import zlib
from collections.abc import Callable
from pathlib import Path

from . import tiering
from .checkpoint import fsync_dir
from .dir_names import (
    DELETE_DIR_SUFFIX,
    InvalidLogDirectoryError,
    TopicPartition,
    log_dir_name,
    parse_log_dir_name,
)
from .log import Log

__all__ = ["ColdTierMixin"]

logger = logging.getLogger("mafka.log.manager")


class ColdTierMixin:
    """The cold-tier half of ``LogManager`` (see the module docstring)."""

    def _scan_cold_dirs(self) -> None:
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
                    other = self._cold_found.setdefault(child.name, root)
                    if other != root:
                        raise InvalidLogDirectoryError(f"{child.name} is in two cold dirs: {other} and {root}")
            except OSError as exc:
                logger.error("cold log dir %s cannot be used: %s", root, exc)
                self.cold_dir_problems[root] = f"I/O error: {exc}"

    def _remove_orphan_cold_parts(self) -> None:
        """Cold parts of partitions this broker no longer has (deleted while a cold dir was away).

        Only when every log dir is online: an offline dir may hold their hot part.
        """
        if self._offline:
            return
        with self._lock:
            known = {log_dir_name(*tp) for tp in self._logs}
        for name, root in sorted(self._cold_found.items()):
            if name not in known:
                logger.warning("%s: removing %s, the cold part of a partition this broker has no log of", root, name)
                shutil.rmtree(root / name, ignore_errors=True)
                del self._cold_found[name]

    def _retire_cold_part(self, log: Log, deleted_name: str) -> None:
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
        self._cold_found.pop(cold.name, None)

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
        to_close: list = []
        with self._lock:
            if root in self._failed_cold_dirs:
                return False
            self._failed_cold_dirs.add(root)
            self.cold_dir_problems[root] = f"offline: I/O error: {exc}"
            tps = sorted(tp for tp, log in self._logs.items()
                         if log.cold_directory is not None and log.cold_directory.parent == root
                         and any(seg.cold for seg in log.segments))
            self._take_offline_locked(tps, root, to_close)
            closing_now = self._close_now_or_when_idle_locked(to_close)
        logger.error("stopping serving logs with cold segments in %s (%s); offline partitions: %s", root, exc,
                     ", ".join(f"{t}-{p}" for t, p in tps) or "none")
        for log, close in closing_now:
            close(log)
        self._notify_dir_failure(root, exc)
        return True

    def cold_dir_failed_for(self, tp: TopicPartition, exc: BaseException) -> bool:
        """An I/O error reading *tp*'s cold segments: :meth:`handle_cold_dir_failure` of its cold dir
        (False when the partition has no cold dir, or it had already failed)."""
        with self._lock:
            log = self._logs.get(tp)
        if log is None or log.cold_directory is None:
            return False
        return self.handle_cold_dir_failure(log.cold_directory.parent, exc)

    def cold_dir_for(self, tp: TopicPartition) -> Path | None:
        """Where *tp*'s cold segments are (or will go): the cold dir already holding them, else one by hash."""
        if not self.cold_dirs:
            return None
        name = log_dir_name(*tp)
        root = self._cold_found.get(name) or self.cold_dirs[zlib.crc32(name.encode()) % len(self.cold_dirs)]
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
        now = self.clock()
        full_now: set[Path] = set()
        for tp, log, _d in self._snapshot():
            if log.config.compact:
                continue
            with self._borrowed(tp, log) as ok:
                if not ok:
                    continue
                if log.cold_directory is None:
                    log.cold_directory = self.cold_dir_for(tp)
                target = log.cold_directory
                assert target is not None
                root = target.parent
                problem = self.cold_dir_problems.get(root)
                if root in full_now or root in self._failed_cold_dirs or (problem is not None and problem != "full"):
                    continue
                # Kafka flushes a segment when it is rolled; here the mover does it for the
                # segments it may move (only flushed data moves: recovery never reads cold).
                try:
                    log.flush(log.active_segment.base_offset)
                except OSError as exc:
                    logger.error("%s-%d: error while flushing: %s", tp[0], tp[1], exc)
                    self._io_failed(tp, log, _d, exc)
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
                        self.cold_dir_problems[root] = "full" if full else f"I/O error: {exc}"
                        full_now.add(root)
                        break
                    moved += 1
                    self.cold_dir_problems.pop(root, None)
                    self._cold_found.setdefault(target.name, root)
        self.segments_moved_cold += moved
        return moved
