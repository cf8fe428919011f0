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

Rules (Kafka's unless said otherwise):

* **Startup.** Every dir is created if missing, locked, and its
  ``meta.properties`` checked against ``broker.id`` / ``cluster.id``
  (:class:`~mafka.log.checkpoint.InconsistentBrokerMetadataError` on a
  mismatch: the broker must not start) or written.  A dir whose
  ``.kafka_cleanshutdown`` exists had a clean shutdown: the marker is removed
  *before* its logs are loaded (KAFKA-10471), so a crash during loading
  counts as unclean next time, and its logs open without recovery.  Other
  dirs recover every log from its checkpointed recovery point.  A corrupt
  recovery-point or log-start checkpoint is ignored with a warning
  (recovery from 0 / start from the first segment).  ``-delete``
  directories are removed at once (no reader can hold them at startup);
  ``-future`` ones are resumed or promoted (see *Moves*).  A child directory whose name is not
  ``topic-partition`` (split at the last ``-``), or a partition present
  twice, raises :class:`InvalidLogDirectoryError`: Kafka refuses to start.
* **Failure.** An ``OSError`` (or a corrupt per-partition or per-dir
  checkpoint, which Kafka reports as a storage error) in any operation on a
  dir takes that dir offline (:meth:`LogManager.handle_dir_failure`, Kafka's
  ``handleLogDirFailure``): its logs are closed and forgotten, the
  ``on_dir_failure`` callback runs, asking for those partitions raises
  :class:`~mafka.errors.KafkaStorageError`, and the other dirs carry on.
  At startup, losing every dir raises ``KafkaStorageError``; later, Kafka
  halts the broker when the last dir fails -- here the callback decides
  (``manager.online_dirs`` is then empty).  The broker reports its own I/O
  errors (appends, reads) by doing them inside :meth:`LogManager.log_io`.
* **Placement.** A new log goes to the online dir holding the fewest
  partitions, ties going to the earlier ``log.dirs`` entry.  Without
  ``is_new=True`` no log is created while a dir is offline: the partition
  may have data there (Kafka's ``getOrCreateLog``).
* **Deletion** (:meth:`LogManager.delete_log`) renames the directory to
  ``<topic>-<partition>.<uuid hex>-delete`` at once, rewrites the dir's
  checkpoints without the partition, and removes the files
  ``file.delete.delay.ms`` (broker default) later, in
  :meth:`LogManager.delete_pending_logs` -- the files stay open until then,
  so a read already handed out keeps working, as in Kafka.
* **Moves between dirs** (AlterReplicaLogDirs, Kafka's future logs).
  :meth:`LogManager.get_or_create_future_log` creates
  ``<topic>-<partition>.<uuid hex>-future`` in the destination dir;
  :meth:`~LogManager.catch_up_future_log` copies the current log's
  batches into it (as a follower would append them, following the current
  log's start offset and truncations, which :meth:`~LogManager.truncate_to`
  applies to both); :meth:`~LogManager.replace_current_with_future` then,
  holding both logs' locks (appends wait), copies what is left, fsyncs the
  future log, writes its ``.mafka-future-complete`` marker, renames the
  current directory to ``-delete`` and the future one to
  ``<topic>-<partition>``, and retires the old log: a caller still holding
  it is forwarded to the new one, so no write is lost.  The old files go
  like a deleted log's.  At startup a ``-future`` directory is loaded as
  the future log of its partition (the move resumes) when the current log
  is there; without a current log (a crash between the two renames) a
  future log holding the marker becomes the current log, one without it is
  removed, and while a dir is offline it is left alone (the current log may
  be there).  A *preferred dir* (:meth:`~LogManager.maybe_update_preferred_log_dir`)
  places the next log created for a partition not hosted yet.
* **Concurrency.** Methods may run on different threads.  State changes take
  an internal lock; the long operations (flush, retention, cleaning) run
  outside it on a log that the manager "borrows": a log deleted or taken
  offline meanwhile is closed only when the operation returns, and an error
  it causes by then is not blamed on its dir.  :meth:`LogManager.shutdown`
  waits for a running cleaner pass, but the caller must stop scheduling the
  other passes first.
"""

from __future__ import annotations

import contextlib
import fcntl
import logging
import os
import shutil
import threading
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Final

from mafka.errors import (
    InvalidTopicError,
    KafkaStorageError,
    OffsetOutOfRangeError,
    UnknownTopicOrPartitionError,
)
from mafka.topics import validate_topic_name
from mafka.wire.batch import iter_batches

from .checkpoint import (
    CLEANER_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    BrokerMetadata,
    CorruptCheckpointError,
    InconsistentBrokerMetadataError,
    OffsetCheckpointFile,
    atomic_write,
    check_broker_metadata,
    fsync_dir,
    write_meta_properties,
)
from .cold_tier import ColdTierMixin
from .config import LogConfig
from .dir_names import (
    DELETE_DIR_SUFFIX,
    FUTURE_DIR_SUFFIX,
    MAX_DIR_NAME,
    InvalidLogDirectoryError,
    TopicPartition,
    log_delete_dir_name,
    log_dir_name,
    log_future_dir_name,
    parse_log_dir_name,
)
from .epoch_cache import LeaderEpochCache
from .log import Log

__all__ = [
    "CLEAN_SHUTDOWN_FILE",
    "DELETE_DIR_SUFFIX",
    "FUTURE_DIR_SUFFIX",
    "LOCK_FILE",
    "InvalidLogDirectoryError",
    "LogDirLockedError",
    "LogManager",
    "TopicPartition",
    "FUTURE_COMPLETE_MARKER",
    "log_delete_dir_name",
    "log_dir_name",
    "log_future_dir_name",
    "parse_log_dir_name",
]

logger = logging.getLogger("mafka.log.manager")

#: Kafka's ``Log.CleanShutdownFile`` and ``LogManager.LockFile``.
CLEAN_SHUTDOWN_FILE: Final = ".kafka_cleanshutdown"
LOCK_FILE: Final = ".lock"
#: Written into a future log's directory once it holds everything the current log had,
#: just before the swap renames anything (Mafka's: it lets startup finish a torn swap).
FUTURE_COMPLETE_MARKER: Final = ".mafka-future-complete"

_INT32_MAX = 2**31 - 1


class LogDirLockedError(RuntimeError):
    """Another broker (process, or manager in this process) holds the dir's ``.lock``."""


def _validate_partition_name(topic: str, partition: int) -> None:
    validate_topic_name(topic)
    if not 0 <= partition <= _INT32_MAX:
        raise ValueError(f"partition {partition} of {topic!r} is not a non-negative int32")


# ====================================================================== helpers


@dataclass(slots=True)
class _PendingDelete:
    """A deleted log: renamed to ``path``, its files removed at ``due_ms``."""

    topic_partition: TopicPartition
    log: Log
    log_dir: Path
    path: Path
    due_ms: int


def _close_quietly(log: Log) -> None:
    """Close a log whose disk may be failing; errors are logged, never raised.

    ``Log.close`` first removes segments already deleted, then fsyncs the
    directory; if that raises, the segments are still open, and a second
    call (with nothing left to remove) closes them.
    """
    for _ in range(2):
        try:
            log.close()
            return
        except OSError as exc:
            logger.warning("%s: error while closing: %s", log.directory, exc)


def _close_segments(log: Log) -> None:
    """Close the files of a log whose directory was renamed (its own paths are stale)."""
    for seg in list(log.segments):
        try:
            seg.close()
        except OSError as exc:
            logger.warning("%s: error while closing %s: %s", log.directory, seg, exc)


def _file_exists(path: Path) -> bool:
    """Like ``Path.exists`` but an I/O error is raised, not read as "missing"."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return False
    return True


class LogManager(ColdTierMixin):
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
        self._on_dir_failure = on_dir_failure
        #: For each dir loaded at startup: whether it had ``.kafka_cleanshutdown``.
        self.had_clean_shutdown: dict[Path, bool] = {}

        # Lock order: _cleaner_lock -> a partition's move lock -> _creation_lock ->
        # logs' own locks (current before future) -> _checkpoint_lock -> _lock.
        self._lock = threading.RLock()  # the state below
        self._checkpoint_lock = threading.RLock()  # serialises checkpoint file writers
        self._creation_lock = threading.RLock()  # Kafka's logCreationOrDeletionLock
        self._cleaner_lock = threading.Lock()  # one cleaner pass at a time
        self._state = "new"
        self._logs: dict[TopicPartition, Log] = {}
        self._dir_of: dict[TopicPartition, Path] = {}
        self._offline: dict[Path, BaseException] = {}
        self._offline_partitions: dict[TopicPartition, Path] = {}
        self._dir_locks: dict[Path, IO[bytes]] = {}
        self._pending: list[_PendingDelete] = []
        self._in_use: dict[Log, int] = {}
        self._close_when_idle: dict[Log, Callable[[Log], None]] = {}
        self._uncleanable: set[TopicPartition] = set()
        self._futures: dict[TopicPartition, Log] = {}
        self._future_dir_of: dict[TopicPartition, Path] = {}
        self._preferred_dirs: dict[TopicPartition, Path] = {}
        self._move_locks: dict[TopicPartition, threading.Lock] = {}
        self._found_futures: list[tuple[TopicPartition, Path, Path, bool]] = []
        self.cold_dirs: tuple[Path, ...] = tuple(Path(os.path.abspath(d)) for d in cold_dirs)
        if set(map(os.path.realpath, self.cold_dirs)) & set(real):
            raise ValueError("a directory cannot be both a log dir and a cold log dir")
        self._cold_found: dict[str, Path] = {}  # partition dir name -> the cold dir holding it
        #: cold dirs the mover stopped using: "full" (it retries each pass) or the I/O error
        self.cold_dir_problems: dict[Path, str] = {}
        #: cold dirs that failed (I/O error): unused until restart, their partitions offline
        self._failed_cold_dirs: set[Path] = set()
        #: segments moved hot -> cold since startup
        self.segments_moved_cold = 0

    def __repr__(self) -> str:
        return f"LogManager({len(self._logs)} logs, online={self.online_dirs}, offline={self.offline_dirs})"

    # ================================================================== facts

    @property
    def logs(self) -> dict[TopicPartition, Log]:
        """A snapshot of the online logs by (topic, partition)."""
        with self._lock:
            return dict(self._logs)

    @property
    def online_dirs(self) -> list[Path]:
        """Usable dirs, in ``log.dirs`` order."""
        with self._lock:
            return [d for d in self.log_dirs if d not in self._offline]

    @property
    def offline_dirs(self) -> list[Path]:
        """Failed dirs, in ``log.dirs`` order."""
        with self._lock:
            return [d for d in self.log_dirs if d in self._offline]

    @property
    def offline_partitions(self) -> dict[TopicPartition, Path]:
        """Partitions whose log was on a dir that went offline, with that dir."""
        with self._lock:
            return dict(self._offline_partitions)

    @property
    def uncleanable_partitions(self) -> set[TopicPartition]:
        """Compacted partitions whose cleaning failed with a non-I/O error; the cleaner skips them."""
        with self._lock:
            return set(self._uncleanable)

    @property
    def pending_deletions(self) -> list[Path]:
        """Renamed (``-delete``) directories of deleted logs whose files are not removed yet."""
        with self._lock:
            return [p.path for p in self._pending]

    def dir_failure(self, log_dir: Path) -> BaseException | None:
        """The error that took *log_dir* offline, or None if it is online."""
        with self._lock:
            return self._offline.get(self._known_dir(log_dir))

    def get_log(self, topic: str, partition: int) -> Log | None:
        """The online log of a partition, or None."""
        with self._lock:
            return self._logs.get((topic, partition))

    def require_log(self, tp: TopicPartition) -> Log:
        """The online log of *tp*.

        Raises:
            KafkaStorageError: its dir is offline -- or it is unknown while
                some dir is offline (it may live there).
            UnknownTopicOrPartitionError: no such log and every dir is online.
        """
        with self._lock:
            log = self._logs.get(tp)
            if log is not None:
                return log
            self._raise_if_offline(tp)
        raise UnknownTopicOrPartitionError(f"no log for {tp[0]}-{tp[1]} on this broker")

    def log_dir_of(self, tp: TopicPartition) -> Path:
        """The ``log.dirs`` entry holding *tp* (its former dir if that went offline).

        Raises:
            KeyError: no such log.
        """
        with self._lock:
            d = self._dir_of.get(tp) or self._offline_partitions.get(tp)
        if d is None:
            raise KeyError(tp)
        return d

    def logs_in_dir(self, log_dir: Path) -> dict[TopicPartition, Log]:
        """The online logs of one dir."""
        d = self._known_dir(log_dir)
        with self._lock:
            return {tp: self._logs[tp] for tp, dd in self._dir_of.items() if dd == d}

    # ================================================================== startup

    def startup(self) -> None:
        """Validate, lock and load every dir (see the module docstring).  Call once.

        Raises:
            InconsistentBrokerMetadataError: a ``meta.properties`` names another
                broker or cluster, or the dirs disagree on the cluster.
            CorruptCheckpointError: a ``meta.properties`` cannot be parsed.
            InvalidLogDirectoryError: an unexpected directory, or a partition twice.
            LogDirLockedError: a dir is in use by another broker.
            KafkaStorageError: every dir failed.
        Anything raised leaves every file closed and every lock released.
        """
        with self._lock:
            if self._state != "new":
                raise RuntimeError(f"startup() called on a LogManager that is {self._state}")
            self._state = "starting"
        try:
            self._prepare_dirs()
            self._scan_cold_dirs()
            for d in self.log_dirs:
                if d not in self._offline:
                    self._load_dir(d)
            self._load_futures()
            self._remove_orphan_cold_parts()
            if not self.online_dirs:
                raise KafkaStorageError(
                    f"none of the log dirs {', '.join(map(str, self.log_dirs))} can be used: "
                    + "; ".join(f"{d}: {exc}" for d, exc in self._offline.items())
                )
        except BaseException:
            self._close_everything()
            raise
        with self._lock:
            self._state = "running"
        logger.info(
            "loaded %d log(s) from %d dir(s)%s",
            len(self._logs),
            len(self.online_dirs),
            f"; offline: {', '.join(map(str, self.offline_dirs))}" if self._offline else "",
        )

    def _prepare_dirs(self) -> None:
        """Create, lock and check every dir; write meta.properties where missing or incomplete."""
        metas: dict[Path, BrokerMetadata | None] = {}
        for d in self.log_dirs:
            try:
                if not d.is_dir():
                    logger.info("log directory %s not found, creating it", d)
                d.mkdir(parents=True, exist_ok=True)  # FileExistsError if it is a file
                os.listdir(d)  # readable?
                self._lock_dir(d)
                metas[d] = check_broker_metadata(
                    d, broker_id=self.broker_id, cluster_id=self.cluster_id
                )
            except OSError as exc:
                logger.error("failed to create or validate log directory %s: %s", d, exc)
                self.handle_dir_failure(d, exc)
        stored = {
            m.cluster_id for m in metas.values() if m is not None and m.cluster_id is not None
        }
        if len(stored) > 1:
            raise InconsistentBrokerMetadataError(
                f"meta.properties is not consistent across log.dirs: cluster ids {sorted(stored)}"
            )
        cluster_id = self.cluster_id if self.cluster_id is not None else next(iter(stored), None)
        for d, meta in metas.items():
            if d in self._offline:
                continue
            complete = (
                meta is not None
                and (meta.broker_id is not None or self.broker_id < 0)
                and (meta.cluster_id is not None or cluster_id is None)
            )
            if complete:
                continue
            if cluster_id is None or self.broker_id < 0:
                # write_meta_properties needs both; nothing is lost by waiting for them.
                logger.warning(
                    "%s: not writing meta.properties without a cluster.id and broker.id", d
                )
                continue
            try:
                write_meta_properties(d, self.broker_id, cluster_id)
            except OSError as exc:
                self.handle_dir_failure(d, exc)

    def _lock_dir(self, d: Path) -> None:
        """Kafka's ``.lock``: an flock (other managers, even in this process) and a POSIX lock
        (what Kafka's JVM ``FileChannel.tryLock`` takes, so Kafka and Mafka exclude each other)."""
        f = open(d / LOCK_FILE, "ab")  # held until shutdown or failure
        try:
            fcntl.flock(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
            fcntl.lockf(f.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            f.close()
            raise LogDirLockedError(
                f"failed to acquire lock on file .lock in {d}; another broker is using this directory"
            ) from None
        except BaseException:
            f.close()
            raise
        with self._lock:
            self._dir_locks[d] = f

    def _read_startup_checkpoint(self, path: Path) -> dict[TopicPartition, int]:
        try:
            return OffsetCheckpointFile(path).read()
        except CorruptCheckpointError as exc:
            logger.warning("error reading %s, ignoring it: %s", path, exc)
            return {}

    def _load_dir(self, d: Path) -> None:
        try:
            marker = d / CLEAN_SHUTDOWN_FILE
            clean = _file_exists(marker)
            if clean:
                logger.info(
                    "skipping recovery for all logs in %s since the clean shutdown file was found",
                    d,
                )
                marker.unlink()
                fsync_dir(d)
            else:
                logger.info(
                    "%s: no clean shutdown file; recovering logs from their recovery points", d
                )
            self.had_clean_shutdown[d] = clean
            recovery_points = self._read_startup_checkpoint(d / RECOVERY_POINT_OFFSET_CHECKPOINT)
            start_offsets = self._read_startup_checkpoint(d / LOG_START_OFFSET_CHECKPOINT)
            removed = 0
            for child in sorted(d.iterdir()):
                if not child.is_dir():
                    continue
                name = child.name
                tp = parse_log_dir_name(name)
                if name.endswith(DELETE_DIR_SUFFIX):
                    logger.info("%s: removing %s, an unfinished deletion", d, name)
                    shutil.rmtree(child)
                    removed += 1
                    continue
                if name.endswith(FUTURE_DIR_SUFFIX):
                    # Loaded once every dir's current logs are known (_load_futures).
                    with self._lock:
                        self._found_futures.append((tp, child, d, clean))
                    continue
                with self._lock:
                    other = self._dir_of.get(tp) or self._offline_partitions.get(tp)
                if other is not None:
                    raise InvalidLogDirectoryError(
                        f"duplicate log directories for {tp[0]}-{tp[1]}: {child} and one in {other}"
                    )
                log = Log.open(
                    child,
                    self._config_for(tp[0]),
                    self.clock,
                    log_start_offset=start_offsets.get(tp, 0),
                    recovery_point=recovery_points.get(tp, 0),
                    had_clean_shutdown=clean,
                    epoch_cache=LeaderEpochCache.in_dir(child),
                    cold_directory=self.cold_dir_for(tp),
                )
                with self._lock:
                    self._logs[tp] = log
                    self._dir_of[tp] = d
            if removed:
                fsync_dir(d)
        except (OSError, CorruptCheckpointError) as exc:
            logger.error("error while loading log dir %s: %s", d, exc)
            self.handle_dir_failure(d, exc)

    def _config_for(self, topic: str) -> LogConfig:
        return self._topic_config(topic) if self._topic_config is not None else self.default_config

    # ================================================================== failures

    def _known_dir(self, log_dir: Path) -> Path:
        d = Path(os.path.abspath(log_dir))
        if d not in self.log_dirs:
            raise ValueError(f"{log_dir} is not one of the log dirs")
        return d

    def handle_dir_failure(self, log_dir: Path, exc: BaseException) -> bool:
        """Take *log_dir* offline (Kafka's ``handleLogDirFailure``).

        Its logs are forgotten (asking for them raises ``KafkaStorageError``)
        and closed -- a log some operation is using is closed when it
        returns --, its deleted logs are abandoned (the next startup removes
        them), its lock is released, and ``on_dir_failure`` is called.
        Returns False if the dir was already offline.

        Raises:
            ValueError: *log_dir* is not one of the log dirs.
        """
        d = self._known_dir(log_dir)
        to_close: list[tuple[Log, Callable[[Log], None]]] = []
        with self._lock:
            if d in self._offline:
                return False
            self._offline[d] = exc
            tps = sorted(tp for tp, dd in self._dir_of.items() if dd == d)
            self._take_offline_locked(tps, d, to_close)
            for pending in [p for p in self._pending if p.log_dir == d]:
                self._pending.remove(pending)
                to_close.append((pending.log, _close_segments))
            # Future logs in the dir, or moving away from a log in it, stop (Kafka's
            # removeOfflineLogs(futureLogs)); their files stay for the next startup.
            for tp in [tp for tp, fd in self._future_dir_of.items() if fd == d or tp in tps]:
                to_close.append((self._futures.pop(tp), _close_quietly))
                del self._future_dir_of[tp]
            closing_now = self._close_now_or_when_idle_locked(to_close)
            lock_file = self._dir_locks.pop(d, None)
            left = [dd for dd in self.log_dirs if dd not in self._offline]
        logger.error(
            "stopping serving logs in dir %s (%s); offline partitions: %s",
            d,
            exc,
            ", ".join(f"{t}-{p}" for t, p in tps) or "none",
        )
        if not left:
            logger.critical("all log dirs (%s) have failed", ", ".join(map(str, self.log_dirs)))
        for log, close in closing_now:
            close(log)
        if lock_file is not None:
            with contextlib.suppress(OSError):
                lock_file.close()
        self._notify_dir_failure(d, exc)
        return True

    def _notify_dir_failure(self, d: Path, exc: BaseException) -> None:
        """Calls ``on_dir_failure`` (if any) for a dir just taken offline; its own errors are logged."""
        if self._on_dir_failure is not None:
            try:
                self._on_dir_failure(d, exc)
            except Exception:
                logger.exception("on_dir_failure callback failed for %s", d)

    def _take_offline_locked(self, tps: list[TopicPartition], d: Path,
                             to_close: list[tuple[Log, Callable[[Log], None]]]) -> None:
        """With the lock held: *tps*' logs are forgotten, marked offline because of *d*, and queued to close."""
        for tp in tps:
            log = self._logs.pop(tp)
            del self._dir_of[tp]
            self._offline_partitions[tp] = d
            self._uncleanable.discard(tp)
            to_close.append((log, _close_quietly))

    def _close_now_or_when_idle_locked(
        self, to_close: list[tuple[Log, Callable[[Log], None]]]
    ) -> list[tuple[Log, Callable[[Log], None]]]:
        """With the lock held: a log in use closes when given back; returns those to close now (unlocked)."""
        closing_now = []
        for log, close in to_close:
            if self._in_use.get(log):
                self._close_when_idle[log] = close
            else:
                closing_now.append((log, close))
        return closing_now

    def offline_partitions_in(self, log_dir: Path) -> list[TopicPartition]:
        """The partitions taken offline with *log_dir* (a hot dir, or a cold dir holding their cold part)."""
        d = Path(os.path.abspath(log_dir))
        with self._lock:
            return sorted(tp for tp, dd in self._offline_partitions.items() if dd == d)

    def _raise_if_offline(self, tp: TopicPartition) -> None:
        """Called with the lock held, for a partition without an online log."""
        d = self._offline_partitions.get(tp)
        if d is not None:
            raise KafkaStorageError(f"log for {tp[0]}-{tp[1]} is offline: log dir {d} failed")
        if self._offline:
            raise KafkaStorageError(
                f"no log for {tp[0]}-{tp[1]}; it may be in the offline log dir(s) "
                + ", ".join(str(d) for d in self.log_dirs if d in self._offline)
            )

    def _io_failed(self, tp: TopicPartition, log: Log, d: Path, exc: BaseException) -> None:
        """An I/O error on *log*: its dir goes offline -- unless the log was retired meanwhile."""
        with self._lock:
            current = self._logs.get(tp) is log
        if not current:
            logger.info(
                "%s-%s: ignoring %s on a log deleted or taken offline meanwhile", tp[0], tp[1], exc
            )
            return
        self.handle_dir_failure(d, exc)

    @contextlib.contextmanager
    def log_io(self, tp: TopicPartition) -> Iterator[Log]:
        """Use *tp*'s log; an ``OSError`` inside takes its dir offline.

        The broker's appends, reads and truncations go through this::

            with manager.log_io(("t", 0)) as log:
                log.append_as_leader(records, epoch)

        The log is not closed (if deleted meanwhile) before the block ends.

        Raises:
            KafkaStorageError: the log is offline, or the block raised an
                ``OSError`` (chained), which took the dir offline.
            UnknownTopicOrPartitionError: as :meth:`require_log`.
        """
        with self._lock:
            log = self._logs.get(tp)
            if log is None:
                self._raise_if_offline(tp)
                raise UnknownTopicOrPartitionError(f"no log for {tp[0]}-{tp[1]} on this broker")
            d = self._dir_of[tp]
            self._in_use[log] = self._in_use.get(log, 0) + 1
        try:
            yield log
        except OSError as exc:
            self._io_failed(tp, log, d, exc)
            raise KafkaStorageError(
                f"I/O error on the log of {tp[0]}-{tp[1]} in {d}: {exc}"
            ) from exc
        finally:
            self._give_back(log)

    @contextlib.contextmanager
    def _borrowed(self, tp: TopicPartition, log: Log) -> Iterator[bool]:
        """Mark *log* in use if it is still *tp*'s online log; yields whether it is."""
        with self._lock:
            ok = self._logs.get(tp) is log
            if ok:
                self._in_use[log] = self._in_use.get(log, 0) + 1
        try:
            yield ok
        finally:
            if ok:
                self._give_back(log)

    def _give_back(self, log: Log) -> None:
        with self._lock:
            left = self._in_use[log] - 1
            if left:
                self._in_use[log] = left
                return
            del self._in_use[log]
            close = self._close_when_idle.pop(log, None)
        if close is not None:
            close(log)

    def _snapshot(self) -> list[tuple[TopicPartition, Log, Path]]:
        with self._lock:
            return [(tp, log, self._dir_of[tp]) for tp, log in sorted(self._logs.items())]

    # ================================================================== creation and deletion

    def _placement_order(self) -> list[Path]:
        """Online dirs, fewest partitions first, ties in ``log.dirs`` order (lock held)."""
        counted = {d: 0 for d in self.log_dirs if d not in self._offline}
        for d in self._dir_of.values():
            if d in counted:
                counted[d] += 1
        return sorted(counted, key=lambda d: (counted[d], self.log_dirs.index(d)))

    def get_or_create_log(
        self, topic: str, partition: int, config: LogConfig | None = None, *, is_new: bool = False
    ) -> Log:
        """The partition's log, created in the least loaded online dir if there is none.

        Args:
            config: the new log's config (default: ``topic_config(topic)`` or
                the default config); ignored for an existing log.
            is_new: the controller says the replica is new (LeaderAndIsr
                ``isNew``).  Otherwise no log is created while a dir is
                offline, since the partition may have data there (Kafka).

        Raises:
            KafkaStorageError: the partition's dir is offline; or it is not new
                and a dir is offline; or no dir could hold it.
            InvalidTopicError / ValueError: an illegal topic name or partition.
        """
        tp = (topic, partition)
        with self._creation_lock:
            with self._lock:
                log = self._logs.get(tp)
                if log is not None:
                    return log
                self._require_running()
                _validate_partition_name(topic, partition)
                if tp in self._offline_partitions or not is_new:
                    self._raise_if_offline(tp)
                candidates = self._placement_order()
                preferred = self._preferred_dirs.get(tp)
                if preferred in candidates:
                    candidates = [preferred]
            config = config if config is not None else self._config_for(topic)
            for d in candidates:
                path = d / log_dir_name(topic, partition)
                try:
                    path.mkdir(exist_ok=True)
                    fsync_dir(d)
                except OSError as exc:
                    logger.error(
                        "error while creating log for %s-%s in dir %s: %s", topic, partition, d, exc
                    )
                    self.handle_dir_failure(d, exc)
                    continue
                try:
                    log = Log.open(
                        path, config, self.clock, epoch_cache=LeaderEpochCache.in_dir(path),
                        cold_directory=self.cold_dir_for(tp),
                    )
                except (OSError, CorruptCheckpointError) as exc:
                    self.handle_dir_failure(d, exc)
                    raise KafkaStorageError(
                        f"error while creating log for {topic}-{partition} in {d}: {exc}"
                    ) from exc
                with self._lock:
                    if d not in self._offline:
                        self._logs[tp] = log
                        self._dir_of[tp] = d
                        self._offline_partitions.pop(tp, None)
                        self._preferred_dirs.pop(tp, None)
                        logger.info("created log for partition %s-%d in %s", topic, partition, d)
                        return log
                _close_quietly(log)  # the dir failed meanwhile
            raise KafkaStorageError(
                f"no log directory available for {topic}-{partition}; tried {', '.join(map(str, candidates)) or 'none'}"
            )

    def _require_running(self) -> None:
        if self._state != "running":
            raise RuntimeError(f"the LogManager is {self._state}")

    def delete_log(self, topic: str, partition: int) -> bool:
        """Delete a partition's log (Kafka's ``asyncDelete``); False if there is none.

        The directory is renamed to ``<topic>-<partition>.<uuid>-delete`` and
        the dir's cleaner, recovery-point and log-start checkpoints rewritten
        without it, at once; the log is forgotten.  Its files stay open and
        are removed by :meth:`delete_pending_logs` ``file.delete.delay.ms``
        (of the default config) later, or at the next startup.

        Raises:
            KafkaStorageError: the log is on an offline dir (or unknown while a
                dir is offline); or renaming failed, taking the dir offline.
        """
        tp = (topic, partition)
        with self._move_lock(tp), self._creation_lock:
            # A replica moving elsewhere loses its future log first: a crash before the
            # current one goes too must not leave a future log to be promoted.
            self._delete_future_locked(tp)
            with self._lock:
                log = self._logs.get(tp)
                if log is None:
                    self._raise_if_offline(tp)
                    return False
                d = self._dir_of[tp]
                if self._in_use.get(log):
                    logger.info(
                        "%s-%d: deleting a log in use; its files close when the use ends",
                        topic,
                        partition,
                    )
            try:
                # Remove already-deleted segments while their paths are still right.
                log.delete_pending(force=True)
                target = d / log_delete_dir_name(topic, partition)
                os.rename(log.directory, target)
                fsync_dir(d)
                self._retire_cold_part(log, target.name)
            except OSError as exc:
                self.handle_dir_failure(d, exc)
                raise KafkaStorageError(
                    f"failed to rename the log directory of {topic}-{partition}: {exc}"
                ) from exc
            with self._lock:
                del self._logs[tp]
                del self._dir_of[tp]
                self._uncleanable.discard(tp)
                self._pending.append(
                    _PendingDelete(
                        tp, log, d, target, self.clock() + self.default_config.file_delete_delay_ms
                    )
                )
            logger.info(
                "log for partition %s-%d is renamed to %s and is scheduled for deletion",
                topic,
                partition,
                target,
            )
            self._update_cleaner_offsets_in(d, {}, {tp})
            self._checkpoint_dir(d, RECOVERY_POINT_OFFSET_CHECKPOINT, self._recovery_points_in)
            self._checkpoint_dir(d, LOG_START_OFFSET_CHECKPOINT, self._log_start_offsets_in)
            return True

    def delete_pending_logs(self, *, force: bool = False) -> int:
        """Remove the files of deleted logs whose delay has passed (all if *force*); returns how many.

        A log still in use by an operation waits for the next call.
        """
        now = self.clock()
        with self._lock:
            ready = [
                p
                for p in self._pending
                if (force or p.due_ms <= now) and not self._in_use.get(p.log)
            ]
            for p in ready:
                self._pending.remove(p)
        done = 0
        for p in ready:
            _close_segments(p.log)
            try:
                shutil.rmtree(p.path)
                fsync_dir(p.log_dir)
                cold = p.log.cold_directory
                if cold is not None and cold.name.endswith(DELETE_DIR_SUFFIX):
                    shutil.rmtree(cold, ignore_errors=True)
            except OSError as exc:
                logger.error("error while deleting %s: %s", p.path, exc)
                self.handle_dir_failure(p.log_dir, exc)
                continue
            logger.info("deleted log for partition %s-%d in %s", *p.topic_partition, p.path)
            done += 1
        return done

    # ================================================================== replica moves between dirs

    @contextlib.contextmanager
    def _move_lock(self, tp: TopicPartition) -> Iterator[None]:
        """Serialises what changes a partition's future log (copying, truncating, swapping, deleting)."""
        with self._lock:
            lock = self._move_locks.setdefault(tp, threading.Lock())
        with lock:
            yield

    @property
    def future_logs(self) -> dict[TopicPartition, Log]:
        """A snapshot of the future logs (replicas moving to another dir) by (topic, partition)."""
        with self._lock:
            return dict(self._futures)

    def get_future_log(self, tp: TopicPartition) -> Log | None:
        """The future log of *tp*, or None."""
        with self._lock:
            return self._futures.get(tp)

    def future_log_dir_of(self, tp: TopicPartition) -> Path | None:
        """The dir holding *tp*'s future log, or None."""
        with self._lock:
            return self._future_dir_of.get(tp)

    def replicas_by_dir(self) -> dict[Path, list[tuple[TopicPartition, Log, bool]]]:
        """Every online dir (in ``log.dirs`` order) with its (tp, log, is_future) replicas."""
        with self._lock:
            out: dict[Path, list[tuple[TopicPartition, Log, bool]]] = {
                d: [] for d in self.log_dirs if d not in self._offline
            }
            for tp, d in self._dir_of.items():
                if d in out:
                    out[d].append((tp, self._logs[tp], False))
            for tp, d in self._future_dir_of.items():
                if d in out:
                    out[d].append((tp, self._futures[tp], True))
        for replicas in out.values():
            replicas.sort(key=lambda r: (r[0], r[2]))
        return out

    def known_log_dir(self, path: str | Path) -> Path | None:
        """The ``log.dirs`` entry *path* names (made absolute, as Kafka's ``getAbsolutePath``), or None."""
        d = Path(os.path.abspath(path))
        return d if d in self.log_dirs else None

    def preferred_log_dir(self, tp: TopicPartition) -> Path | None:
        """Where the next log created for *tp* goes, if AlterReplicaLogDirs said so."""
        with self._lock:
            return self._preferred_dirs.get(tp)

    def maybe_update_preferred_log_dir(self, tp: TopicPartition, log_dir: Path) -> None:
        """Remember *log_dir* for *tp*'s next log (Kafka's ``maybeUpdatePreferredLogDir``).

        Not when the current or the future log of *tp* already is in that dir.

        Raises:
            ValueError: *log_dir* is not one of the log dirs.
        """
        d = self._known_dir(log_dir)
        with self._lock:
            if self._dir_of.get(tp) == d or self._future_dir_of.get(tp) == d:
                return
            self._preferred_dirs[tp] = d

    def get_or_create_future_log(self, tp: TopicPartition, log_dir: Path) -> tuple[Log, bool]:
        """*tp*'s future log in *log_dir*, created (empty, at the current log's start) if missing.

        Returns the log and whether it was created now.  The preferred dir of
        *tp* is forgotten (it is satisfied).

        Raises:
            ValueError: *log_dir* is not a log dir, or it is the current log's
                dir, or a future log exists in another dir (abort it first).
            InvalidTopicError: the future directory's name would be too long.
            UnknownTopicOrPartitionError / KafkaStorageError: no online
                current log; or a dir is offline (Kafka creates no future log
                then, so no partition can have two); or creating it failed.
        """
        d = self._known_dir(log_dir)
        topic, partition = tp
        if len(log_future_dir_name(topic, partition)) > MAX_DIR_NAME:
            raise InvalidTopicError(f"the topic name {topic!r} is too long to move its replicas")
        with self._move_lock(tp), self._creation_lock:
            current = self.require_log(tp)
            with self._lock:
                self._require_running()
                if self._dir_of.get(tp) == d:
                    raise ValueError(f"{topic}-{partition} is already in {d}")
                future = self._futures.get(tp)
                if future is not None:
                    if self._future_dir_of[tp] != d:
                        raise ValueError(
                            f"the future log of {topic}-{partition} is in {self._future_dir_of[tp]}, not {d}"
                        )
                    self._preferred_dirs.pop(tp, None)
                    return future, False
                if self._offline:
                    raise KafkaStorageError(
                        f"cannot create the future log of {topic}-{partition}: log dir(s) "
                        + ", ".join(str(x) for x in self.log_dirs if x in self._offline)
                        + " offline"
                    )
            path = d / log_future_dir_name(topic, partition)
            try:
                path.mkdir()
                fsync_dir(d)
                future = Log.open(
                    path,
                    current.config,
                    self.clock,
                    log_start_offset=current.log_start_offset,
                    epoch_cache=LeaderEpochCache.in_dir(path),
                )
            except (OSError, CorruptCheckpointError) as exc:
                logger.error(
                    "error while creating the future log of %s-%d in %s: %s",
                    topic,
                    partition,
                    d,
                    exc,
                )
                self.handle_dir_failure(d, exc)
                raise KafkaStorageError(
                    f"error while creating the future log of {topic}-{partition} in {d}: {exc}"
                ) from exc
            with self._lock:
                if d in self._offline:
                    _close_quietly(future)
                    raise KafkaStorageError(f"log dir {d} went offline")
                self._futures[tp] = future
                self._future_dir_of[tp] = d
                self._preferred_dirs.pop(tp, None)
            logger.info("created the future log of %s-%d in %s", topic, partition, path)
            return future, True

    def abort_future_log(self, tp: TopicPartition) -> bool:
        """Stop moving *tp*: its future log is deleted like a deleted log; False if there is none."""
        with self._move_lock(tp), self._creation_lock:
            return self._delete_future_locked(tp)

    def _delete_future_locked(self, tp: TopicPartition) -> bool:
        """Rename *tp*'s future log to ``-delete`` and schedule its files (move + creation locks held)."""
        with self._lock:
            future = self._futures.get(tp)
            if future is None:
                return False
            d = self._future_dir_of[tp]
        target = d / log_delete_dir_name(*tp)
        try:
            future.delete_pending(force=True)
            os.rename(future.directory, target)
            fsync_dir(d)
        except OSError as exc:
            self.handle_dir_failure(d, exc)
            raise KafkaStorageError(
                f"failed to rename the future log directory of {tp[0]}-{tp[1]}: {exc}"
            ) from exc
        with self._lock:
            del self._futures[tp]
            del self._future_dir_of[tp]
            self._pending.append(
                _PendingDelete(
                    tp, future, d, target, self.clock() + self.default_config.file_delete_delay_ms
                )
            )
        logger.info(
            "the future log of %s-%d is renamed to %s and scheduled for deletion", *tp, target
        )
        return True

    def _truncate_future(self, tp: TopicPartition, op: Callable[[Log], bool]) -> None:
        """Apply a truncation of the current log to the future log (move lock held)."""
        with self._lock:
            future = self._futures.get(tp)
            d = self._future_dir_of.get(tp)
        if future is None or d is None:
            return
        try:
            op(future)
        except OSError as exc:
            logger.error("%s-%d: error while truncating the future log: %s", tp[0], tp[1], exc)
            self.handle_dir_failure(d, exc)

    @contextlib.contextmanager
    def _borrowed_pair(self, tp: TopicPartition) -> Iterator[tuple[Log, Log, Path, Path] | None]:
        """The current and future logs of *tp* and their dirs, kept open while in use; None if not both."""
        with self._lock:
            current, future = self._logs.get(tp), self._futures.get(tp)
            if current is None or future is None:
                pair = None
            else:
                pair = (current, future, self._dir_of[tp], self._future_dir_of[tp])
                for log in (current, future):
                    self._in_use[log] = self._in_use.get(log, 0) + 1
        try:
            yield pair
        finally:
            if pair is not None:
                self._give_back(pair[0])
                self._give_back(pair[1])

    def _failed_in(
        self, tp: TopicPartition, current: Log, future: Log, src: Path, dst: Path, exc: OSError
    ) -> None:
        """Blame an I/O error during a move on the dir whose file failed, if both logs are still registered."""
        with self._lock:
            live = self._logs.get(tp) is current and self._futures.get(tp) is future
        if not live:
            return
        filename = getattr(exc, "filename", None) or ""
        blamed = dst if str(filename).startswith(str(dst)) else src
        self.handle_dir_failure(blamed, exc)

    @staticmethod
    def _copy_once(current: Log, future: Log, max_bytes: int) -> int:
        """Copy whole batches from *current* to *future*, starting at the future's end; returns bytes copied.

        Follows the current log's start offset: a future log that ends below
        it restarts there, one that starts below it moves its start up.
        """
        start = current.log_start_offset
        if future.next_offset < start:
            future.truncate_fully_and_start_at(start)
        elif future.log_start_offset < start:
            future.increment_log_start_offset(start)
        offset = future.next_offset
        if offset >= current.next_offset:
            return 0
        data = current.read(offset, max_bytes, min_one_batch=True).read()
        batches = list(iter_batches(memoryview(data)))
        if not batches:
            return 0
        if batches[0][1].base_offset < offset:
            if future.size == 0:
                # The current log starts inside its first batch: so does the copy.
                future.truncate_fully_and_start_at(batches[0][1].base_offset)
            else:
                batches = [b for b in batches if b[1].base_offset >= offset]
                if not batches:
                    return 0
        first, end = batches[0][0], batches[-1][0] + batches[-1][1].size
        future.append_as_follower(memoryview(data)[first:end])
        if future.log_start_offset < start <= future.next_offset:
            future.increment_log_start_offset(start)
        return end - first

    def catch_up_future_log(self, tp: TopicPartition, max_bytes: int = 1 << 20) -> int:
        """Copy up to about *max_bytes* of *tp*'s current log into its future log (Kafka's
        ReplicaAlterLogDirsThread, reading the local log); returns the bytes copied, 0 when caught
        up, -1 without a current and a future log.  An I/O error takes the failing dir offline.
        """
        with self._move_lock(tp), self._borrowed_pair(tp) as pair:
            if pair is None:
                return -1
            current, future, src, dst = pair
            try:
                return self._copy_once(current, future, max_bytes)
            except OSError as exc:
                logger.error("%s-%d: error while copying to the future log: %s", tp[0], tp[1], exc)
                self._failed_in(tp, current, future, src, dst, exc)
                return -1
            except OffsetOutOfRangeError:
                return 0  # the current log moved meanwhile (retention): next round

    def future_lag(self, tp: TopicPartition) -> int | None:
        """The current log end offset minus the future one, or None without both logs."""
        with self._lock:
            current, future = self._logs.get(tp), self._futures.get(tp)
        if current is None or future is None:
            return None
        return current.next_offset - future.next_offset

    def replace_current_with_future(
        self, tp: TopicPartition, on_replaced: Callable[[Log, Log], None] | None = None
    ) -> bool:
        """Finish a move: the future log becomes *tp*'s log (Kafka's ``replaceCurrentWithFutureLog``).

        Copies what the future log still lacks while holding both logs' locks
        (appends to *tp* wait meanwhile), so the future log holds everything
        the current one had; fsyncs it and writes its completion marker;
        renames the current directory to ``-delete`` and the future one to
        ``<topic>-<partition>``; retires the old log (stale holders are
        forwarded) and calls ``on_replaced(old, new)`` before releasing the
        locks, so the owner can switch too.  The old files are removed
        ``file.delete.delay.ms`` later; both dirs' checkpoints are rewritten.
        Returns False if *tp* has no current and future log.

        Raises:
            KafkaStorageError: an I/O error, which took the failing dir offline.
        """
        topic, partition = tp
        with self._move_lock(tp), self._borrowed_pair(tp) as pair:
            if pair is None:
                return False
            current, future, src, dst = pair
            try:
                while self._copy_once(current, future, 8 << 20) > 0:
                    pass
                future.flush()  # most of it, before appends have to wait
                with self._creation_lock, current._lock, future._lock:
                    while self._copy_once(current, future, 8 << 20) > 0:
                        pass
                    if future.next_offset != current.next_offset:
                        raise RuntimeError(
                            f"{topic}-{partition}: the future log ends at {future.next_offset}, "
                            f"the current one at {current.next_offset}"
                        )
                    if future.log_start_offset < current.log_start_offset:
                        future.increment_log_start_offset(current.log_start_offset)
                    future.epoch_cache.clear()
                    for entry in current.epoch_cache.entries:
                        future.epoch_cache.assign(entry.epoch, entry.start_offset)
                    future.update_config(current.config)
                    # Side directories travel with the log (Mafka's delayed-message index,
                    # ``delayed/``): copied whole; their owner re-reads the log past their checkpoint.
                    for child in current.directory.iterdir():
                        if child.is_dir():
                            shutil.copytree(child, future.directory / child.name, dirs_exist_ok=True)
                    future.flush()
                    atomic_write(future.directory / FUTURE_COMPLETE_MARKER, b"")
                    current.delete_pending(force=True)
                    retired = src / log_delete_dir_name(topic, partition)
                    os.rename(current.directory, retired)
                    fsync_dir(src)
                    self._retire_cold_part(current, retired.name)
                    try:
                        future.rename_dir(dst / log_dir_name(topic, partition))
                    except OSError:
                        with contextlib.suppress(OSError):
                            # Roll back: keep serving the old log.
                            os.rename(retired, current.directory)
                            fsync_dir(src)
                        raise
                    current.retire(future)
                    with self._lock:
                        del self._futures[tp]
                        del self._future_dir_of[tp]
                        self._logs[tp] = future
                        self._dir_of[tp] = dst
                        self._uncleanable.discard(tp)
                        self._pending.append(
                            _PendingDelete(
                                tp,
                                current,
                                src,
                                retired,
                                self.clock() + self.default_config.file_delete_delay_ms,
                            )
                        )
                    if on_replaced is not None:
                        on_replaced(current, future)
            except OSError as exc:
                logger.error(
                    "%s-%d: error while replacing the current log with the future log: %s",
                    topic,
                    partition,
                    exc,
                )
                self._failed_in(tp, current, future, src, dst, exc)
                raise KafkaStorageError(
                    f"failed to move {topic}-{partition} to {dst}: {exc}"
                ) from exc
        logger.info(
            "the current log of %s-%d in %s is replaced with the future log in %s",
            topic,
            partition,
            src,
            dst,
        )
        with contextlib.suppress(OSError):
            os.unlink(future.directory / FUTURE_COMPLETE_MARKER)
        for d in (src, dst):
            self._update_cleaner_offsets_in(d, {}, {tp} if d == src else set())
            self._checkpoint_dir(d, RECOVERY_POINT_OFFSET_CHECKPOINT, self._recovery_points_in)
            self._checkpoint_dir(d, LOG_START_OFFSET_CHECKPOINT, self._log_start_offsets_in)
        return True

    def _load_futures(self) -> None:
        """Startup: resume, promote or remove the ``-future`` directories found (see the module docstring)."""
        with self._lock:
            found, self._found_futures = self._found_futures, []
        for tp, path, d, clean in found:
            if d in self._offline:
                continue
            with self._lock:
                has_current = tp in self._logs
                duplicate = tp in self._futures
                unknown = tp in self._offline_partitions or bool(self._offline)
            try:
                if duplicate or (
                    not has_current
                    and not unknown
                    and not _file_exists(path / FUTURE_COMPLETE_MARKER)
                ):
                    logger.warning(
                        "%s: removing %s, an unfinished replica move without its current log",
                        d,
                        path.name,
                    )
                    shutil.rmtree(path)
                    fsync_dir(d)
                    continue
                if not has_current and unknown:
                    logger.warning(
                        "%s: leaving %s alone: its current log may be in an offline log dir",
                        d,
                        path.name,
                    )
                    continue
                if not has_current:
                    final = d / log_dir_name(*tp)
                    logger.info(
                        "%s: %s completed its move before a crash; it becomes %s",
                        d,
                        path.name,
                        final.name,
                    )
                    os.rename(path, final)
                    fsync_dir(d)
                    path = final
                log = Log.open(
                    path,
                    self._config_for(tp[0]),
                    self.clock,
                    recovery_point=0,
                    had_clean_shutdown=clean,
                    epoch_cache=LeaderEpochCache.in_dir(path),
                )
                with self._lock:
                    if has_current:
                        self._futures[tp] = log
                        self._future_dir_of[tp] = d
                    else:
                        self._logs[tp] = log
                        self._dir_of[tp] = d
                if not has_current:
                    with contextlib.suppress(OSError):
                        os.unlink(path / FUTURE_COMPLETE_MARKER)
                else:
                    logger.info("%s: resuming the move of %s-%d into this dir", d, *tp)
            except (OSError, CorruptCheckpointError) as exc:
                logger.error("error while loading %s: %s", path, exc)
                self.handle_dir_failure(d, exc)

    # ================================================================== truncation

    def truncate_to(self, tp: TopicPartition, offset: int) -> bool:
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

    def truncate_fully_and_start_at(self, tp: TopicPartition, offset: int) -> None:
        """Empty the log and restart it at *offset* (Kafka's ``truncateFullyAndStartAt``); as :meth:`truncate_to`."""

        def op(log: Log) -> bool:
            log.truncate_fully_and_start_at(offset)
            return True

        self._truncate(tp, op)

    def _truncate(self, tp: TopicPartition, op: Callable[[Log], bool]) -> bool:
        """*op* on the current log and on the future log if there is one (Kafka truncates both)."""
        compact = self.require_log(tp).config.compact
        with (
            self._cleaner_lock if compact else contextlib.nullcontext(),
            self._move_lock(tp),
            self.log_io(tp) as log,
        ):
            d = self.log_dir_of(tp)
            truncated = op(log)
            self._truncate_future(tp, op)
            if truncated and log.config.compact:
                self._maybe_truncate_cleaner_offset(d, tp, log.active_segment.base_offset)
        if truncated:
            self._checkpoint_dir(d, RECOVERY_POINT_OFFSET_CHECKPOINT, self._recovery_points_in)
        return truncated

    def _maybe_truncate_cleaner_offset(self, d: Path, tp: TopicPartition, offset: int) -> None:
        with self._checkpoint_lock:
            current = self._read_dir_checkpoint(d, CLEANER_OFFSET_CHECKPOINT)
            if current is not None and current.get(tp, 0) > offset:
                current[tp] = offset
                self._checkpoint_dir(d, CLEANER_OFFSET_CHECKPOINT, lambda _: current)

    # ================================================================== checkpoints

    def _recovery_points_in(self, d: Path) -> dict[TopicPartition, int]:
        return {tp: self._logs[tp].recovery_point for tp, dd in self._dir_of.items() if dd == d}

    def _log_start_offsets_in(self, d: Path) -> dict[TopicPartition, int]:
        # Kafka writes only the logs whose start is past their first segment's base:
        # for the others, reopening the log finds the same start anyway.
        out = {}
        for tp, dd in self._dir_of.items():
            if dd == d:
                log = self._logs[tp]
                if log.segments and log.log_start_offset > log.segments[0].base_offset:
                    out[tp] = log.log_start_offset
        return out

    def _checkpoint_dir(
        self, d: Path, name: str, entries: Callable[[Path], Mapping[TopicPartition, int]]
    ) -> bool:
        """Rewrite one checkpoint file of *d* from the current state; False if the dir is/went offline."""
        with self._checkpoint_lock:
            with self._lock:
                if d in self._offline:
                    return False
                values = dict(entries(d))
            try:
                OffsetCheckpointFile(d / name).write(values)
            except OSError as exc:
                logger.error("disk error while writing %s in %s: %s", name, d, exc)
                self.handle_dir_failure(d, exc)
                return False
        return True

    def checkpoint_recovery_points(self) -> int:
        """Write every online dir's ``recovery-point-offset-checkpoint``; returns the files written."""
        return sum(
            self._checkpoint_dir(d, RECOVERY_POINT_OFFSET_CHECKPOINT, self._recovery_points_in)
            for d in self.online_dirs
        )

    def checkpoint_log_start_offsets(self) -> int:
        """Write every online dir's ``log-start-offset-checkpoint``; returns the files written.

        As in Kafka, a log appears only if its start offset is past the base
        offset of its first segment.
        """
        return sum(
            self._checkpoint_dir(d, LOG_START_OFFSET_CHECKPOINT, self._log_start_offsets_in)
            for d in self.online_dirs
        )

    def write_high_watermarks(self, hws: Mapping[TopicPartition, int]) -> int:
        """Write each online dir's ``replication-offset-checkpoint``; returns the files written.

        Each file is rewritten whole with the entries of *hws* whose log is in
        that dir, so *hws* must cover every partition (Kafka's
        ``checkpointHighWatermarks``); entries without a local log are ignored.
        """
        hws = dict(hws)

        def entries(d: Path) -> dict[TopicPartition, int]:
            return {tp: hw for tp, hw in hws.items() if self._dir_of.get(tp) == d}

        return sum(
            self._checkpoint_dir(d, REPLICATION_OFFSET_CHECKPOINT, entries)
            for d in self.online_dirs
        )

    def _read_dir_checkpoint(self, d: Path, name: str) -> dict[TopicPartition, int] | None:
        """The entries of *d*'s file that belong to logs in *d*; None if the dir is/went offline."""
        try:
            values = OffsetCheckpointFile(d / name).read()
        except (OSError, CorruptCheckpointError) as exc:
            logger.error("error while reading %s in %s: %s", name, d, exc)
            self.handle_dir_failure(d, exc)
            return None
        with self._lock:
            if d in self._offline:
                return None
            return {tp: off for tp, off in values.items() if self._dir_of.get(tp) == d}

    def _read_all(self, name: str) -> dict[TopicPartition, int]:
        out: dict[TopicPartition, int] = {}
        for d in self.online_dirs:
            out.update(self._read_dir_checkpoint(d, name) or {})
        return out

    def read_high_watermarks(self) -> dict[TopicPartition, int]:
        """The checkpointed high watermarks of the online logs (from the dir holding each).

        A dir whose file cannot be read or parsed goes offline (Kafka's
        ``CheckpointFileWithFailureHandler``).
        """
        return self._read_all(REPLICATION_OFFSET_CHECKPOINT)

    def read_cleaner_offsets(self) -> dict[TopicPartition, int]:
        """The checkpointed first dirty offsets of the online logs (``cleaner-offset-checkpoint``)."""
        return self._read_all(CLEANER_OFFSET_CHECKPOINT)

    def update_cleaner_offsets(
        self, offsets: Mapping[TopicPartition, int], *, remove: Iterable[TopicPartition] = ()
    ) -> None:
        """Set (and drop) first dirty offsets in the ``cleaner-offset-checkpoint`` of each log's dir.

        Kafka's ``updateCheckpoints``: each touched file is read, stripped of
        partitions no longer in its dir, updated and rewritten.  Partitions
        without an online log are ignored.
        """
        removed = set(remove)
        with self._lock:
            touched = {self._dir_of[tp] for tp in (*offsets, *removed) if tp in self._dir_of}
        for d in self.log_dirs:
            if d in touched:
                self._update_cleaner_offsets_in(d, offsets, removed)

    def _update_cleaner_offsets_in(
        self, d: Path, offsets: Mapping[TopicPartition, int], removed: set[TopicPartition]
    ) -> bool:
        with self._checkpoint_lock:
            current = self._read_dir_checkpoint(d, CLEANER_OFFSET_CHECKPOINT)
            if current is None:
                return False
            with self._lock:
                current.update(
                    {tp: off for tp, off in offsets.items() if self._dir_of.get(tp) == d}
                )
            for tp in removed:
                current.pop(tp, None)
            return self._checkpoint_dir(d, CLEANER_OFFSET_CHECKPOINT, lambda _: current)

    # ================================================================== background passes

    def retention_pass(self, high_watermarks: Mapping[TopicPartition, int]) -> int:
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
        for tp, log, d in self._snapshot():
            with self._borrowed(tp, log) as ok:
                if not ok:
                    continue
                try:
                    hw = high_watermarks.get(tp)
                    if hw is not None:
                        deleted += log.delete_old_segments(hw)
                    log.delete_pending()
                except OSError as exc:
                    logger.error("%s-%d: error during retention: %s", tp[0], tp[1], exc)
                    self._io_failed(tp, log, d, exc)
        return deleted

    def flush_pass(self) -> int:
        """Flush the logs whose ``flush.messages`` / ``flush.ms`` is due; returns how many.

        Then rewrites the recovery-point checkpoint of each dir where a log was flushed.
        """
        flushed = 0
        dirs: set[Path] = set()
        for tp, log, d in self._snapshot():
            with self._borrowed(tp, log) as ok:
                if not ok:
                    continue
                try:
                    due = log.flush_due()
                    if due is None:
                        continue
                    log.flush(due)
                except OSError as exc:
                    logger.error("%s-%d: error while flushing: %s", tp[0], tp[1], exc)
                    self._io_failed(tp, log, d, exc)
                    continue
                flushed += 1
                dirs.add(d)
        for d in self.log_dirs:
            if d in dirs:
                self._checkpoint_dir(d, RECOVERY_POINT_OFFSET_CHECKPOINT, self._recovery_points_in)
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
        with self._cleaner_lock:
            now = self.clock() if now_ms is None else now_ms
            checkpoints = self.read_cleaner_offsets()
            best: tuple[float, TopicPartition, Log, Path] | None = None
            for tp, log, d in self._snapshot():
                if not log.config.compact:
                    continue
                with self._lock:
                    if tp in self._uncleanable:
                        continue
                with self._borrowed(tp, log) as ok:
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
                        self._io_failed(tp, log, d, exc)
                        continue
                if best is None or ratio > best[0]:
                    best = (ratio, tp, log, d)
            if best is None:
                return 0
            ratio, tp, log, d = best
            kwargs = {} if max_map_entries is None else {"max_map_entries": max_map_entries}
            with self._borrowed(tp, log) as ok:
                if not ok:
                    return 0
                logger.info("%s-%d: cleaning (dirty ratio %.3f)", tp[0], tp[1], ratio)
                try:
                    result = cleaner.clean(log, checkpoints.get(tp), now, **kwargs)
                except OSError as exc:
                    logger.error("%s-%d: I/O error while cleaning: %s", tp[0], tp[1], exc)
                    self._io_failed(tp, log, d, exc)
                    return 0
                except Exception:
                    logger.exception(
                        "%s-%d: unexpected error while cleaning; marking it uncleanable",
                        tp[0],
                        tp[1],
                    )
                    with self._lock:
                        if self._logs.get(tp) is log:
                            self._uncleanable.add(tp)
                    return 0
            self.update_cleaner_offsets({tp: result.next_first_dirty})
            return 1

    # ================================================================== shutdown

    def shutdown(self) -> None:
        """Flush and close every log, checkpoint, and mark each online dir clean (Kafka's order).

        Per online dir: flush and close its logs, write its recovery points
        (now the log end offsets) and log start offsets, then
        ``.kafka_cleanshutdown`` (atomically, fsynced).  A dir failing on
        the way goes offline and gets no marker; its logs recover at the next
        startup.  Deleted logs waiting for removal are closed and left for the
        next startup.  Every lock is released; the manager cannot be reused.
        Waits for a running cleaner pass; other passes must be stopped first.
        """
        with self._cleaner_lock:
            with self._lock:
                if self._state in ("closed", "new"):
                    self._state = "closed"
                    return
                self._state = "closing"
            for d in self.online_dirs:
                with self._lock:
                    futures = [f for tp, f in self._futures.items() if self._future_dir_of[tp] == d]
                logs = list(self.logs_in_dir(d).values()) + futures
                try:
                    for log in logs:
                        log.flush()
                        log.close()
                except OSError as exc:
                    logger.error("error while flushing logs of %s at shutdown: %s", d, exc)
                    self.handle_dir_failure(d, exc)
                    continue
                if not (
                    self._checkpoint_dir(
                        d, RECOVERY_POINT_OFFSET_CHECKPOINT, self._recovery_points_in
                    )
                    and self._checkpoint_dir(
                        d, LOG_START_OFFSET_CHECKPOINT, self._log_start_offsets_in
                    )
                ):
                    continue
                try:
                    atomic_write(d / CLEAN_SHUTDOWN_FILE, b"")
                except OSError as exc:
                    logger.error("error while writing the clean shutdown marker in %s: %s", d, exc)
                    self.handle_dir_failure(d, exc)
            self._close_everything()
        logger.info("shutdown complete")

    def abort(self) -> None:
        """Close every file and release the dirs without flushing, checkpointing or marking them clean.

        What a crash leaves (minus the page cache): the next startup recovers
        every log.  For tests, and for a broker that gives up.
        """
        with self._lock:
            if self._state == "closed":
                return
            self._state = "closing"
        self._close_everything()

    def _close_everything(self) -> None:
        with self._lock:
            logs = list(self._logs.values()) + list(self._futures.values())
            pending = list(self._pending)
            locks = list(self._dir_locks.values())
            self._futures.clear()
            self._future_dir_of.clear()
            self._logs.clear()
            self._dir_of.clear()
            self._pending.clear()
            self._dir_locks.clear()
            self._state = "closed"
        for log in logs:
            _close_quietly(log)
        for p in pending:
            _close_segments(p.log)
        for f in locks:
            with contextlib.suppress(OSError):
                f.close()
