"""The log manager's background passes: retention, flush, cleaning and removing deleted logs.

What Kafka's ``LogManager`` schedules (``cleanupLogs``, ``flushDirtyLogs``,
``deleteLogs``) and its ``LogCleaner`` runs (one ``grabFilthiestCompactedLog``
at a time), as plain synchronous calls: the broker schedules them
(:meth:`LogPasses.retention_pass` every
``log.retention.check.interval.ms``, :meth:`~LogPasses.flush_pass`
every ``log.flush.scheduler.interval.ms``,
:meth:`~LogPasses.delete_pending_logs` every second,
:meth:`~LogPasses.cleaner_pass` as often as it likes) and runs each in
a worker thread while the reactor goes on appending and reading.

Each pass walks a snapshot of the online logs (:meth:`.registry.LogRegistry.snapshot`)
and works on one log at a time outside the registry lock, having "borrowed"
it (:meth:`.registry.LogRegistry.borrowed`): a log deleted, moved or taken
offline meanwhile is skipped if that happened before the borrow, and closed
only when the borrow ends if it happened during it; an I/O error on such a
log is not blamed on its dir (:meth:`.failures.DirFailures.io_failed`).

Locks: the cleaner lock (a plain Lock, owned here and exposed as
:attr:`LogPasses.cleaner_lock`) makes one cleaner pass at a time; the
manager's truncation of a compacted log and its shutdown take it too (first in
the lock order), so neither runs under a cleaning.  The other passes take no
lock of their own (only the registry's and the checkpoint lock, briefly) and
shutdown does not wait for them: the caller must stop scheduling them first.
"""

from __future__ import annotations

import logging
import shutil
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path

from mafka.latency import LatencyWindow
from mafka.topics import TopicPartitionTuple

from ..checkpoint import fsync_dir
from ..dir_names import DELETE_DIR_SUFFIX
from ..log import Log
from .dir_checkpoints import DirCheckpoints
from .failures import DirFailures
from .registry import LogRegistry, close_segments

__all__ = ["LogPasses"]

logger = logging.getLogger("mafka.log.manager")


class LogPasses:
    """Retention, flush, cleaner and deletion passes over the online logs (see the module docstring)."""

    def __init__(
        self,
        registry: LogRegistry,
        failures: DirFailures,
        checkpoints: DirCheckpoints,
        clock: Callable[[], int],
    ) -> None:
        self._registry = registry
        self._failures = failures
        self._checkpoints = checkpoints
        self._clock = clock
        self.cleaner_lock = threading.Lock()  # one cleaner pass at a time
        #: each log flush's time (LogFlushRateAndTimeMs), monotonic ms
        self.flush_times = LatencyWindow(60_000, 1028)

    def retention_pass(self, high_watermarks: Mapping[TopicPartitionTuple, int]) -> int:
        """Apply retention to every log; returns the number of segments deleted.

        Each log with an entry in *high_watermarks* runs
        ``delete_old_segments(hw)`` (time and size rules for ``delete``
        logs, the log-start rule for all: together what Kafka's retention
        task and its cleaner do), bounded by that high watermark; a log
        without a known high watermark is skipped, since nothing may be
        deleted above an unknown HW.  Every log then removes its segments
        deleted ``file.delete.delay.ms`` ago.
        """
        deleted = 0
        for tp, log, d in self._registry.snapshot():
            with self._registry.borrowed(tp, log) as ok:
                if not ok:
                    continue
                try:
                    hw = high_watermarks.get(tp)
                    if hw is not None:
                        deleted += log.delete_old_segments(hw)
                    log.delete_pending()
                except OSError as exc:
                    logger.error("%s-%d: error during retention: %s", tp[0], tp[1], exc)
                    self._failures.io_failed(tp, log, d, exc)
        return deleted

    def flush_pass(self) -> int:
        """Flush the logs whose ``flush.messages`` / ``flush.ms`` is due; returns how many.

        Then rewrites the recovery-point checkpoint of each dir where a log was flushed.
        """
        flushed = 0
        dirs: set[Path] = set()
        for tp, log, d in self._registry.snapshot():
            with self._registry.borrowed(tp, log) as ok:
                if not ok:
                    continue
                try:
                    due = log.flush_due()
                    if due is None:
                        continue
                    started = time.monotonic()
                    log.flush(due)
                    now = time.monotonic()
                    self.flush_times.record(int(now * 1000), (now - started) * 1000.0)
                except OSError as exc:
                    logger.error("%s-%d: error while flushing: %s", tp[0], tp[1], exc)
                    self._failures.io_failed(tp, log, d, exc)
                    continue
                flushed += 1
                dirs.add(d)
        for d in self._registry.log_dirs:
            if d in dirs:
                self._checkpoints.write_recovery_points(d)
        return flushed

    def cleaner_pass(self, now_ms: int | None = None, *, max_map_entries: int | None = None) -> int:
        """Compact the filthiest compacted log, if one needs it; returns 1 if a log was cleaned, else 0.

        Kafka's ``grabFilthiestCompactedLog``: among the logs with
        ``cleanup.policy`` including ``compact`` that
        :func:`mafka.log.cleaner.needs_cleaning` (dirty ratio above
        ``min.cleanable.dirty.ratio``, or a dirty record past
        ``max.compaction.lag.ms``), the one with the highest dirty ratio is
        cleaned once, from its checkpointed first dirty offset, and the
        result's ``next_first_dirty`` checkpointed.  A log whose cleaning
        fails with anything but an ``OSError`` is marked uncleanable and
        skipped from then on (Kafka does the same); an ``OSError`` takes
        its dir offline.  Returns 0 if :mod:`mafka.log.cleaner` is missing.
        """
        try:
            from mafka.log import cleaner
        except ImportError:  # pragma: no cover - the cleaner is optional
            return 0
        reg = self._registry
        with self.cleaner_lock:
            now = self._clock() if now_ms is None else now_ms
            checkpoints = self._checkpoints.read_cleaner_offsets()
            best: tuple[float, TopicPartitionTuple, Log, Path] | None = None
            for tp, log, d in reg.snapshot(lambda log: log.config.compact):  # not the thousands that are not
                with reg.lock:
                    if tp in reg.uncleanable:
                        continue
                with reg.borrowed(tp, log) as ok:
                    if not ok:
                        continue
                    try:
                        first_dirty = checkpoints.get(tp)
                        if not cleaner.needs_cleaning(log, first_dirty, now):
                            continue
                        ratio = cleaner.dirty_ratio(
                            log, *cleaner.cleanable_range(log, first_dirty, now)
                        )
                    except OSError as exc:
                        self._failures.io_failed(tp, log, d, exc)
                        continue
                if best is None or ratio > best[0]:
                    best = (ratio, tp, log, d)
            if best is None:
                return 0
            ratio, tp, log, d = best
            kwargs = {} if max_map_entries is None else {"max_map_entries": max_map_entries}
            with reg.borrowed(tp, log) as ok:
                if not ok:
                    return 0
                logger.info("%s-%d: cleaning (dirty ratio %.3f)", tp[0], tp[1], ratio)
                try:
                    result = cleaner.clean(log, checkpoints.get(tp), now, **kwargs)
                except OSError as exc:
                    logger.error("%s-%d: I/O error while cleaning: %s", tp[0], tp[1], exc)
                    self._failures.io_failed(tp, log, d, exc)
                    return 0
                except Exception:
                    logger.exception(
                        "%s-%d: unexpected error while cleaning; marking it uncleanable",
                        tp[0],
                        tp[1],
                    )
                    with reg.lock:
                        if reg.logs.get(tp) is log:
                            reg.uncleanable.add(tp)
                    return 0
            self._checkpoints.update_cleaner_offsets({tp: result.next_first_dirty})
            return 1

    def delete_pending_logs(self, *, force: bool = False) -> int:
        """Remove the files of deleted logs whose delay has passed (all if *force*); returns how many.

        A log still in use by an operation waits for the next call.
        """
        reg = self._registry
        now = self._clock()
        with reg.lock:
            ready = [
                p
                for p in reg.pending
                if (force or p.due_ms <= now) and not reg.in_use_locked(p.log)
            ]
            for p in ready:
                reg.pending.remove(p)
        done = 0
        for p in ready:
            close_segments(p.log)
            try:
                shutil.rmtree(p.path)
                fsync_dir(p.log_dir)
                cold = p.log.cold_directory
                if cold is not None and cold.name.endswith(DELETE_DIR_SUFFIX):
                    shutil.rmtree(cold, ignore_errors=True)
            except OSError as exc:
                logger.error("error while deleting %s: %s", p.path, exc)
                self._failures.handle_dir_failure(p.log_dir, exc)
                continue
            logger.info("deleted log for partition %s-%d in %s", *p.topic_partition, p.path)
            done += 1
        return done
