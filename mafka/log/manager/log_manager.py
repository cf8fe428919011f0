"""The broker's log directories: loading, placing, checkpointing and retiring partition logs.

Kafka 2.8's ``LogManager`` (with the parts of ``LogCleanerManager`` and
``ReplicaManager`` that own per-log-dir files), as plain synchronous Python:
no threads or scheduler of its own, time from the injected ``clock`` (ms).
The broker calls the methods off its event loop and schedules the passes
(:meth:`LogManager.retention_pass` every ``log.retention.check.interval.ms``
(300 s), :meth:`~LogManager.flush_pass` every ``log.flush.scheduler.interval.ms``,
:meth:`~LogManager.checkpoint_recovery_points` and
:meth:`~LogManager.checkpoint_log_start_offsets` every 60 s,
:meth:`~LogManager.write_high_watermarks` every 5 s,
:meth:`~LogManager.delete_pending_logs` every ``file.delete.delay.ms``,
:meth:`~LogManager.cleaner_pass` as often as it likes).

Layout of each log dir (``log.dirs`` entry)::

    meta.properties                    version=0, broker.id, cluster.id
    .lock                              flock + POSIX lock while a broker uses the dir
    .kafka_cleanshutdown               present only between a clean shutdown and the next startup
    recovery-point-offset-checkpoint   topic partition offset (one file per dir, Kafka's text format)
    log-start-offset-checkpoint
    replication-offset-checkpoint      high watermarks
    cleaner-offset-checkpoint          first dirty offsets of compacted logs
    <topic>-<partition>/               one Log each
    <topic>-<partition>.<uuid>-delete/ a deleted log waiting for its files to go
    <topic>-<partition>.<uuid>-future/ the future log of a replica moving here from another dir

:class:`LogManager` is the facade: it keeps the public methods, runs
start-up, shutdown and truncation (Kafka's ``startup``, ``shutdown``,
``truncateTo``: each needs several parts at once) and hands everything else to
one collaborator per concern, all sharing one :class:`~.registry.LogRegistry`:

=======================  ========================================================
:mod:`.registry`         which log is where, offline dirs, logs in use; state and creation locks
:mod:`.dirs`             start-up (create, lock, check, load) and each dir's shutdown
:mod:`.failures`         taking a dir offline (``handle_dir_failure``, ``log_io``)
:mod:`.current_logs`     creating (placement) and deleting current logs
:mod:`.moves`            future logs: moves between dirs (AlterReplicaLogDirs); move locks
:mod:`.dir_checkpoints`  recovery points, log start offsets, high watermarks, cleaner
                         offsets; the checkpoint lock
:mod:`.passes`           retention, flush, cleaner and deletion passes; the cleaner lock
:mod:`.cold_tier`        ``mafka.cold.log.dirs`` and the mover, behind a narrow interface
=======================  ========================================================

Rules (Kafka's unless said otherwise; each module's docstring has the rest):

* **Startup** (:mod:`.dirs`): every dir created, locked, checked against
  ``meta.properties`` and loaded -- with recovery unless it was shut down
  cleanly; at startup, losing every dir raises ``KafkaStorageError``.
* **Failure** (:mod:`.failures`): an ``OSError`` (or a corrupt checkpoint) in
  any operation on a dir takes that dir offline; asking for its partitions
  raises :class:`~mafka.errors.KafkaStorageError`, the other dirs carry on.
  The broker reports its own I/O errors by doing them inside :meth:`LogManager.log_io`.
* **Placement** (:mod:`.current_logs`). A new log goes to the online dir holding the fewest
  partitions, ties going to the earlier ``log.dirs`` entry (or to the
  partition's preferred dir, :meth:`~LogManager.maybe_update_preferred_log_dir`).
  Without ``is_new=True`` no log is created while a dir is offline: the
  partition may have data there (Kafka's ``getOrCreateLog``).
* **Deletion** (:meth:`LogManager.delete_log`) renames the directory to
  ``<topic>-<partition>.<uuid hex>-delete`` at once, rewrites the dir's
  checkpoints without the partition, and removes the files
  ``file.delete.delay.ms`` (broker default) later, in
  :meth:`LogManager.delete_pending_logs` -- the files stay open until then,
  so a read already handed out keeps working, as in Kafka.
* **Moves between dirs** (:mod:`.moves`): a future log is created in the
  destination dir, caught up from the current log, and swapped in with both
  logs locked; startup resumes or finishes a move a crash interrupted.
* **Concurrency.** Methods may run on different threads.  State changes take
  the registry's lock; the long operations (flush, retention, cleaning) run
  outside it on a log that the manager "borrows": a log deleted or taken
  offline meanwhile is closed only when the operation returns, and an error
  it causes by then is not blamed on its dir.  :meth:`LogManager.shutdown`
  waits for a running cleaner pass, but the caller must stop scheduling the
  other passes first.  The manager's locks and the logs' own, in the only
  order they are taken: the cleaner lock (:mod:`.passes`) -> a partition's move lock
  (:mod:`.moves`) -> the creation lock (:mod:`.registry`, Kafka's
  ``logCreationOrDeletionLock``) -> the logs' own locks (current before
  future) -> the checkpoint lock (:mod:`.dir_checkpoints`) -> the state lock
  (:mod:`.registry`).
"""

from __future__ import annotations

import contextlib
import logging
import os
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path

from mafka.errors import KafkaStorageError
from mafka.topics import TopicPartitionTuple

from ..config import LogConfig
from ..log import Log
from .cold_tier import ColdTier
from .current_logs import CurrentLogs
from .dir_checkpoints import DirCheckpoints
from .dirs import LogDirs
from .failures import DirFailures
from .moves import ReplicaMoves
from .passes import LogPasses
from .registry import LogRegistry

__all__ = ["LogManager"]

logger = logging.getLogger("mafka.log.manager")


class LogManager:
    """Every partition log of a broker, across its ``log.dirs``.  See the module docstring."""

    def __init__(
        self,
        log_dirs: Sequence[Path],
        default_config: LogConfig,
        clock: Callable[[], int],
        *,
        broker_id: int,
        cluster_id: str | None = None,
        topic_config: Callable[[str], LogConfig] | None = None,
        on_dir_failure: Callable[[Path, BaseException], None] | None = None,
        cold_dirs: Sequence[Path] = (),
    ) -> None:
        """Set up the manager; nothing touches the disk before :meth:`startup`.

        Args:
            log_dirs: ``log.dirs``, in order (the order breaks placement ties).
            default_config: the broker's log config, for topics without overrides.
            clock: milliseconds since the epoch.
            broker_id: checked against (or written to) ``meta.properties``; a
                negative id skips the check and is never written.
            cluster_id: likewise; ``None`` skips the check and adopts the
                cluster.id the dirs agree on when writing new ``meta.properties``.
            topic_config: a topic's effective log config (default: ``default_config``).
            on_dir_failure: called with the dir and the error when a dir goes
                offline (outside the manager's state lock; exceptions are logged).
            cold_dirs: ``mafka.cold.log.dirs``: where old segments are moved
                (:meth:`tier_pass`, ``mafka.log.tiering``); none disables it.

        Raises:
            ValueError: no dir, or one dir listed twice (Kafka: "Duplicate log directory").
        """
        if not log_dirs:
            raise ValueError("log.dirs is empty")
        dirs = tuple(Path(os.path.abspath(d)) for d in log_dirs)
        real = [os.path.realpath(d) for d in dirs]
        if len(set(real)) != len(real):
            raise ValueError(f"duplicate log directory found: {', '.join(map(str, dirs))}")
        self.log_dirs: tuple[Path, ...] = dirs
        self.default_config = default_config
        self.clock = clock
        self.broker_id = broker_id
        self.cluster_id = cluster_id
        self._topic_config = topic_config
        cold = tuple(Path(os.path.abspath(d)) for d in cold_dirs)
        if set(map(os.path.realpath, cold)) & set(real):
            raise ValueError("a directory cannot be both a log dir and a cold log dir")

        # Each part gets the collaborators it uses, explicitly; the cold tier sees the
        # registry and the failure handling only through its HotLogs / FailureHandling protocols.
        reg = self._registry = LogRegistry(dirs)
        failures = self._failures = DirFailures(reg, on_dir_failure)
        checkpoints = self._checkpoints = DirCheckpoints(reg, failures)
        self._cold = ColdTier(cold, clock, reg, failures)
        self._passes = LogPasses(reg, failures, checkpoints, clock)
        #: each log flush's time (the metrics endpoint's LogFlushRateAndTimeMs)
        self.flush_times = self._passes.flush_times
        self._moves = ReplicaMoves(
            reg, failures, checkpoints, clock=clock, config_for=self._config_for,
            delete_due_ms=self._delete_due_ms, retire_cold_part=self._cold.retire_part,
        )
        self._dirs = LogDirs(
            reg, failures, checkpoints, clock=clock, config_for=self._config_for,
            cold_dir_for=self._cold.cold_dir_for,
        )
        self._current = CurrentLogs(
            reg, failures, checkpoints, self._moves, clock=clock, config_for=self._config_for,
            delete_due_ms=self._delete_due_ms, cold_dir_for=self._cold.cold_dir_for,
            retire_cold_part=self._cold.retire_part,
        )

    def __repr__(self) -> str:
        reg = self._registry
        return f"LogManager({len(reg.logs)} logs, online={self.online_dirs}, offline={self.offline_dirs})"

    def _config_for(self, topic: str) -> LogConfig:
        return self._topic_config(topic) if self._topic_config is not None else self.default_config

    def _delete_due_ms(self) -> int:
        """When the files of a log deleted now go: ``file.delete.delay.ms`` of the default config."""
        return self.clock() + self.default_config.file_delete_delay_ms

    # ================================================================== facts

    @property
    def logs(self) -> dict[TopicPartitionTuple, Log]:
        """A snapshot of the online logs by (topic, partition)."""
        with self._registry.lock:
            return dict(self._registry.logs)

    @property
    def online_dirs(self) -> list[Path]:
        """Usable dirs, in ``log.dirs`` order."""
        return self._registry.online_dirs()

    @property
    def offline_dirs(self) -> list[Path]:
        """Failed dirs, in ``log.dirs`` order."""
        with self._registry.lock:
            return [d for d in self.log_dirs if d in self._registry.offline]

    @property
    def offline_partitions(self) -> dict[TopicPartitionTuple, Path]:
        """Partitions whose log was on a dir that went offline, with that dir."""
        with self._registry.lock:
            return dict(self._registry.offline_partitions)

    @property
    def uncleanable_partitions(self) -> set[TopicPartitionTuple]:
        """Compacted partitions whose cleaning failed with a non-I/O error; the cleaner skips them."""
        with self._registry.lock:
            return set(self._registry.uncleanable)

    @property
    def pending_deletions(self) -> list[Path]:
        """Renamed (``-delete``) directories of deleted logs whose files are not removed yet."""
        with self._registry.lock:
            return [p.path for p in self._registry.pending]

    @property
    def had_clean_shutdown(self) -> dict[Path, bool]:
        """For each dir loaded at startup: whether it had ``.kafka_cleanshutdown``."""
        return self._dirs.had_clean_shutdown

    def dir_failure(self, log_dir: Path) -> BaseException | None:
        """The error that took *log_dir* offline, or None if it is online."""
        with self._registry.lock:
            return self._registry.offline.get(self._registry.known_dir(log_dir))

    def logs_of_topic(self, topic: str) -> list[tuple[TopicPartitionTuple, Log]]:
        """(tp, log) of one topic's online logs, by partition (without walking the others)."""
        return self._registry.logs_of_topic(topic)

    def get_log(self, topic: str, partition: int) -> Log | None:
        """The online log of a partition, or None."""
        return self._registry.get((topic, partition))

    def require_log(self, tp: TopicPartitionTuple) -> Log:
        """The online log of *tp*.

        Raises:
            KafkaStorageError: its dir is offline -- or it is unknown while
                some dir is offline (it may live there).
            UnknownTopicOrPartitionError: no such log and every dir is online.
        """
        return self._registry.require(tp)

    def log_dir_of(self, tp: TopicPartitionTuple) -> Path:
        """The ``log.dirs`` entry holding *tp* (its former dir if that went offline).

        Raises:
            KeyError: no such log.
        """
        with self._registry.lock:
            d = self._registry.dir_of.get(tp) or self._registry.offline_partitions.get(tp)
        if d is None:
            raise KeyError(tp)
        return d

    def logs_in_dir(self, log_dir: Path) -> dict[TopicPartitionTuple, Log]:
        """The online logs of one dir."""
        return self._registry.logs_in(self._registry.known_dir(log_dir))

    def offline_partitions_in(self, log_dir: Path) -> list[TopicPartitionTuple]:
        """The partitions taken offline with *log_dir* (a hot dir, or a cold dir holding their cold part)."""
        d = Path(os.path.abspath(log_dir))
        with self._registry.lock:
            return sorted(tp for tp, dd in self._registry.offline_partitions.items() if dd == d)

    def known_log_dir(self, path: str | Path) -> Path | None:
        """The ``log.dirs`` entry *path* names (made absolute, as Kafka's ``getAbsolutePath``), or None."""
        d = Path(os.path.abspath(path))
        return d if d in self.log_dirs else None

    # ================================================================== startup and shutdown

    def startup(self) -> None:
        """Validate, lock and load every dir (see :mod:`.dirs`).  Call once.

        Raises:
            InconsistentBrokerMetadataError: a ``meta.properties`` names another
                broker or cluster, or the dirs disagree on the cluster.
            CorruptCheckpointError: a ``meta.properties`` cannot be parsed.
            InvalidLogDirectoryError: an unexpected directory, or a partition twice.
            LogDirLockedError: a dir is in use by another broker.
            KafkaStorageError: every dir failed.
        Anything raised leaves every file closed and every lock released.
        """
        reg = self._registry
        with reg.lock:
            if reg.state != "new":
                raise RuntimeError(f"startup() called on a LogManager that is {reg.state}")
            reg.state = "starting"
        try:
            self._dirs.prepare(self.broker_id, self.cluster_id)
            self._cold.scan()
            for d in self.log_dirs:
                if d not in reg.offline:
                    self._dirs.load(d)
            self._moves.load_futures(self._dirs.take_found_futures())
            self._cold.remove_orphan_parts()
            if not self.online_dirs:
                raise KafkaStorageError(
                    f"none of the log dirs {', '.join(map(str, self.log_dirs))} can be used: "
                    + "; ".join(f"{d}: {exc}" for d, exc in reg.offline.items())
                )
        except BaseException:
            reg.close_everything()
            raise
        with reg.lock:
            reg.state = "running"
        logger.info(
            "loaded %d log(s) from %d dir(s)%s",
            len(reg.logs),
            len(self.online_dirs),
            f"; offline: {', '.join(map(str, self.offline_dirs))}" if reg.offline else "",
        )

    def shutdown(self) -> None:
        """Flush and close every log, checkpoint, and mark each online dir clean (Kafka's order).

        Per online dir (:meth:`.dirs.LogDirs.shut_down_dir`): flush and close
        its logs, write its recovery points (now the log end offsets) and log
        start offsets, then ``.kafka_cleanshutdown`` (atomically, fsynced).  A
        dir failing on the way goes offline and gets no marker; its logs
        recover at the next startup.  Deleted logs waiting for removal are
        closed and left for the next startup.  Every lock is released; the
        manager cannot be reused.  Waits for a running cleaner pass; other
        passes must be stopped first.
        """
        reg = self._registry
        with self._passes.cleaner_lock:
            with reg.lock:
                if reg.state in ("closed", "new"):
                    reg.state = "closed"
                    return
                reg.state = "closing"
            for d in self.online_dirs:
                self._dirs.shut_down_dir(d)
            reg.close_everything()
        logger.info("shutdown complete")

    def abort(self) -> None:
        """Close every file and release the dirs without flushing, checkpointing or marking them clean.

        What a crash leaves (minus the page cache): the next startup recovers
        every log.  For tests, and for a broker that gives up.
        """
        reg = self._registry
        with reg.lock:
            if reg.state == "closed":
                return
            reg.state = "closing"
        reg.close_everything()

    # ================================================================== failures (.failures)

    def handle_dir_failure(self, log_dir: Path, exc: BaseException) -> bool:
        """Take *log_dir* offline (Kafka's ``handleLogDirFailure``); False if it already was.

        See :meth:`.failures.DirFailures.handle_dir_failure`.
        """
        return self._failures.handle_dir_failure(log_dir, exc)

    def log_io(self, tp: TopicPartitionTuple) -> contextlib.AbstractContextManager[Log]:
        """Use *tp*'s log; an ``OSError`` inside takes its dir offline.

        The broker's appends, reads and truncations go through this::

            with manager.log_io(("t", 0)) as log:
                log.append_as_leader(records, epoch)

        See :meth:`.failures.DirFailures.log_io`.
        """
        return self._failures.log_io(tp)

    # ================================================================== creation and deletion (.current_logs)

    def get_or_create_log(
        self, topic: str, partition: int, config: LogConfig | None = None, *, is_new: bool = False
    ) -> Log:
        """The partition's log, created in the least loaded online dir if there is none (only if
        *is_new* while a dir is offline): see :meth:`.current_logs.CurrentLogs.get_or_create_log`."""
        return self._current.get_or_create_log(topic, partition, config, is_new=is_new)

    def delete_log(self, topic: str, partition: int) -> bool:
        """Delete a partition's log (Kafka's ``asyncDelete``); False if there is none.  Its files
        go :meth:`delete_pending_logs` later: see :meth:`.current_logs.CurrentLogs.delete_log`."""
        return self._current.delete_log(topic, partition)

    # ================================================================== truncation

    def truncate_to(self, tp: TopicPartitionTuple, offset: int) -> bool:
        """A follower's truncation (Kafka's ``LogManager.truncateTo``); returns whether anything went.

        Besides ``Log.truncate_to``: a compacted log's cleaner checkpoint is
        lowered to the new active segment's base if it was above it
        (``maybeTruncateCheckpoint``), waiting for a running cleaner pass
        first (Kafka aborts and pauses it), and the dir's recovery points are
        checkpointed.

        Raises:
            KafkaStorageError / UnknownTopicOrPartitionError: as :meth:`log_io`.
        """
        return self._truncate(tp, lambda log: log.truncate_to(offset))

    def truncate_fully_and_start_at(self, tp: TopicPartitionTuple, offset: int) -> None:
        """Empty the log and restart it at *offset* (Kafka's ``truncateFullyAndStartAt``); as :meth:`truncate_to`."""

        def op(log: Log) -> bool:
            log.truncate_fully_and_start_at(offset)
            return True

        self._truncate(tp, op)

    def _truncate(self, tp: TopicPartitionTuple, op: Callable[[Log], bool]) -> bool:
        """*op* on the current log and on the future log if there is one (Kafka truncates both)."""
        compact = self.require_log(tp).config.compact
        with (
            self._passes.cleaner_lock if compact else contextlib.nullcontext(),
            self._moves.move_lock(tp),
            self._failures.log_io(tp) as log,
        ):
            d = self.log_dir_of(tp)
            truncated = op(log)
            self._moves.truncate_future(tp, op)
            if truncated and log.config.compact:
                self._checkpoints.maybe_truncate_cleaner_offset(d, tp, log.active_segment.base_offset)
        if truncated:
            self._checkpoints.write_recovery_points(d)
        return truncated

    # ================================================================== moves between dirs (.moves)

    @property
    def future_logs(self) -> dict[TopicPartitionTuple, Log]:
        """A snapshot of the future logs (replicas moving to another dir) by (topic, partition)."""
        return self._moves.future_logs

    def get_future_log(self, tp: TopicPartitionTuple) -> Log | None:
        """The future log of *tp*, or None."""
        return self._moves.get_future_log(tp)

    def future_log_dir_of(self, tp: TopicPartitionTuple) -> Path | None:
        """The dir holding *tp*'s future log, or None."""
        return self._moves.future_log_dir_of(tp)

    def replicas_by_dir(self) -> dict[Path, list[tuple[TopicPartitionTuple, Log, bool]]]:
        """Every online dir (in ``log.dirs`` order) with its (tp, log, is_future) replicas."""
        return self._moves.replicas_by_dir()

    def preferred_log_dir(self, tp: TopicPartitionTuple) -> Path | None:
        """Where the next log created for *tp* goes, if AlterReplicaLogDirs said so."""
        return self._moves.preferred_log_dir(tp)

    def maybe_update_preferred_log_dir(self, tp: TopicPartitionTuple, log_dir: Path) -> None:
        """Kafka's ``maybeUpdatePreferredLogDir``: see :meth:`.moves.ReplicaMoves.maybe_update_preferred_log_dir`."""
        self._moves.maybe_update_preferred_log_dir(tp, log_dir)

    def get_or_create_future_log(self, tp: TopicPartitionTuple, log_dir: Path) -> tuple[Log, bool]:
        """*tp*'s future log in *log_dir* and whether it was created now: see
        :meth:`.moves.ReplicaMoves.get_or_create_future_log`."""
        return self._moves.get_or_create_future_log(tp, log_dir)

    def abort_future_log(self, tp: TopicPartitionTuple) -> bool:
        """Stop moving *tp*: its future log is deleted like a deleted log; False if there is none."""
        return self._moves.abort_future_log(tp)

    def catch_up_future_log(self, tp: TopicPartitionTuple, max_bytes: int = 1 << 20) -> int:
        """Copy up to about *max_bytes* of *tp*'s current log into its future log: see
        :meth:`.moves.ReplicaMoves.catch_up_future_log`."""
        return self._moves.catch_up_future_log(tp, max_bytes)

    def future_lag(self, tp: TopicPartitionTuple) -> int | None:
        """The current log end offset minus the future one, or None without both logs."""
        return self._moves.future_lag(tp)

    def replace_current_with_future(
        self, tp: TopicPartitionTuple, on_replaced: Callable[[Log, Log], None] | None = None
    ) -> bool:
        """Finish a move (Kafka's ``replaceCurrentWithFutureLog``): see
        :meth:`.moves.ReplicaMoves.replace_current_with_future`."""
        return self._moves.replace_current_with_future(tp, on_replaced)

    # ================================================================== checkpoints (.dir_checkpoints)

    def checkpoint_recovery_points(self) -> int:
        """Write every online dir's ``recovery-point-offset-checkpoint``; returns the files written."""
        return self._checkpoints.checkpoint_recovery_points()

    def checkpoint_log_start_offsets(self) -> int:
        """Write every online dir's ``log-start-offset-checkpoint``; returns the files written."""
        return self._checkpoints.checkpoint_log_start_offsets()

    def write_high_watermarks(self, hws: Mapping[TopicPartitionTuple, int]) -> int:
        """Write each online dir's ``replication-offset-checkpoint`` from *hws* (every partition's);
        returns the files written.  See :meth:`.dir_checkpoints.DirCheckpoints.write_high_watermarks`."""
        return self._checkpoints.write_high_watermarks(hws)

    def read_high_watermarks(self) -> dict[TopicPartitionTuple, int]:
        """The checkpointed high watermarks of the online logs; a dir whose file is unreadable goes offline."""
        return self._checkpoints.read_high_watermarks()

    def read_cleaner_offsets(self) -> dict[TopicPartitionTuple, int]:
        """The checkpointed first dirty offsets of the online logs (``cleaner-offset-checkpoint``)."""
        return self._checkpoints.read_cleaner_offsets()

    def update_cleaner_offsets(
        self, offsets: Mapping[TopicPartitionTuple, int], *, remove: Iterable[TopicPartitionTuple] = ()
    ) -> None:
        """Set (and drop) first dirty offsets in the ``cleaner-offset-checkpoint`` of each log's dir."""
        self._checkpoints.update_cleaner_offsets(offsets, remove=remove)

    # ================================================================== background passes (.passes)

    def retention_pass(self, high_watermarks: Mapping[TopicPartitionTuple, int]) -> int:
        """Apply retention to every log below its high watermark; returns the segments deleted.
        See :meth:`.passes.LogPasses.retention_pass`."""
        return self._passes.retention_pass(high_watermarks)

    def flush_pass(self) -> int:
        """Flush the logs whose ``flush.messages`` / ``flush.ms`` is due; returns how many."""
        return self._passes.flush_pass()

    def cleaner_pass(self, now_ms: int | None = None, *, max_map_entries: int | None = None) -> int:
        """Compact the filthiest compacted log, if one needs it; returns 1 if a log was cleaned, else 0.
        See :meth:`.passes.LogPasses.cleaner_pass`."""
        return self._passes.cleaner_pass(now_ms, max_map_entries=max_map_entries)

    def delete_pending_logs(self, *, force: bool = False) -> int:
        """Remove the files of deleted logs whose delay has passed (all if *force*); returns how many.

        A log still in use by an operation waits for the next call.
        """
        return self._passes.delete_pending_logs(force=force)

    # ================================================================== cold tier (.cold_tier)

    @property
    def cold_dirs(self) -> tuple[Path, ...]:
        """``mafka.cold.log.dirs``, absolute."""
        return self._cold.cold_dirs

    @property
    def cold_dir_problems(self) -> dict[Path, str]:
        """Cold dirs the mover stopped using: "full" (it retries each pass) or the I/O error."""
        return self._cold.problems

    @property
    def segments_moved_cold(self) -> int:
        """Segments moved hot -> cold since startup."""
        return self._cold.segments_moved

    def handle_cold_dir_failure(self, cold_dir: Path, exc: BaseException) -> bool:
        """A cold dir failed: see :meth:`.cold_tier.ColdTier.handle_cold_dir_failure`."""
        return self._cold.handle_cold_dir_failure(cold_dir, exc)

    def cold_dir_failed_for(self, tp: TopicPartitionTuple, exc: BaseException) -> bool:
        """An I/O error reading *tp*'s cold segments: its cold dir failed (see :meth:`handle_cold_dir_failure`)."""
        return self._cold.cold_dir_failed_for(tp, exc)

    def cold_dir_for(self, tp: TopicPartitionTuple) -> Path | None:
        """Where *tp*'s cold segments are (or will go): the cold dir already holding them, else one by hash."""
        return self._cold.cold_dir_for(tp)

    def tier_pass(self, hot_retention_ms: int, hot_retention_bytes: int,
                  on_step: Callable[[str], None] | None = None) -> int:
        """Move every log's due segments to the cold tier; returns how many moved.
        See :meth:`.cold_tier.ColdTier.tier_pass`."""
        return self._cold.tier_pass(hot_retention_ms, hot_retention_bytes, on_step)
