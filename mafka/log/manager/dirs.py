"""Log dirs at start-up and shutdown: creating, locking, checking, loading, marking clean.

Kafka's ``LogManager.createAndValidateLogDirs``, ``lockLogDirs``,
``loadLogs`` and the per-dir half of ``shutdown``:

* Every dir is created if missing, locked (:meth:`LogDirs.lock_dir`: an
  flock and a POSIX lock on ``.lock``, held until shutdown or the dir
  fails), and its ``meta.properties`` checked against ``broker.id`` /
  ``cluster.id`` (:class:`~mafka.log.checkpoint.InconsistentBrokerMetadataError`
  on a mismatch: the broker must not start) or written.  A dir that cannot be
  created, read or locked goes offline; one locked by another broker raises
  :class:`LogDirLockedError`.
* A dir whose ``.kafka_cleanshutdown`` exists had a clean shutdown: the
  marker is removed *before* its logs are loaded (KAFKA-10471), so a crash
  during loading counts as unclean next time, and its logs open without
  recovery.  Other dirs recover every log from its checkpointed recovery
  point.  A corrupt recovery-point or log-start checkpoint is ignored with a
  warning (recovery from 0 / start from the first segment).
* ``-delete`` directories are removed at once (no reader can hold them at
  startup); ``-future`` ones are set aside (:meth:`LogDirs.take_found_futures`)
  for :mod:`.moves` to resume or promote once every dir's current logs are
  known.  A child directory whose name is not ``topic-partition`` (split at
  the last ``-``), or a partition present twice, raises
  :class:`~mafka.log.dir_names.InvalidLogDirectoryError`: Kafka refuses to start.
* At shutdown (:meth:`LogDirs.shut_down_dir`) each online dir's logs are
  flushed and closed, its recovery points and log start offsets written, then
  ``.kafka_cleanshutdown`` (atomically, fsynced).  A dir failing on the way
  goes offline and gets no marker: its logs recover at the next startup.

Locks and threads: no lock of its own.  Start-up runs once, on one thread (a
worker thread in the broker), before the manager is used; shutdown runs with
the cleaner lock held (:mod:`.passes`) after the caller has stopped the other
passes.  The registry's ``lock`` is taken for each change or read of its
maps, never during file I/O.
"""

from __future__ import annotations

import fcntl
import logging
import os
import shutil
from collections.abc import Callable
from pathlib import Path
from typing import Final, NamedTuple

from mafka.topics import TopicPartitionTuple

from ..checkpoint import (
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    BrokerMetadata,
    CorruptCheckpointError,
    InconsistentBrokerMetadataError,
    atomic_write,
    check_broker_metadata,
    fsync_dir,
    write_meta_properties,
)
from ..config import LogConfig
from ..dir_names import (
    DELETE_DIR_SUFFIX,
    FUTURE_DIR_SUFFIX,
    InvalidLogDirectoryError,
    parse_log_dir_name,
)
from ..epoch_cache import LeaderEpochCache
from ..log import Log
from .dir_checkpoints import DirCheckpoints
from .failures import DirFailures
from .registry import LogRegistry

__all__ = [
    "CLEAN_SHUTDOWN_FILE",
    "LOCK_FILE",
    "FoundFuture",
    "LogDirLockedError",
    "LogDirs",
    "file_exists",
]

logger = logging.getLogger("mafka.log.manager")

#: Kafka's ``Log.CleanShutdownFile`` and ``LogManager.LockFile``.
CLEAN_SHUTDOWN_FILE: Final = ".kafka_cleanshutdown"
LOCK_FILE: Final = ".lock"


class LogDirLockedError(RuntimeError):
    """Another broker (process, or manager in this process) holds the dir's ``.lock``."""


class FoundFuture(NamedTuple):
    """A ``-future`` directory found at startup, for :meth:`.moves.ReplicaMoves.load_futures`."""

    topic_partition: TopicPartitionTuple
    path: Path
    log_dir: Path
    clean: bool  # its dir had a clean shutdown


def file_exists(path: Path) -> bool:
    """Like ``Path.exists`` but an I/O error is raised, not read as "missing"."""
    try:
        os.stat(path)
    except FileNotFoundError:
        return False
    return True


class LogDirs:
    """Start-up and shutdown of the log dirs (see the module docstring).

    It fills the registry with the logs it loads, hands a failing dir to
    *failures*, reads the checkpoints at startup and writes them at shutdown,
    and opens logs with *clock*, *config_for* (a topic's log config) and the
    cold tier's *cold_dir_for*.
    """

    def __init__(
        self,
        registry: LogRegistry,
        failures: DirFailures,
        checkpoints: DirCheckpoints,
        *,
        clock: Callable[[], int],
        config_for: Callable[[str], LogConfig],
        cold_dir_for: Callable[[TopicPartitionTuple], Path | None],
    ) -> None:
        self._registry = registry
        self._failures = failures
        self._checkpoints = checkpoints
        self._clock = clock
        self._config_for = config_for
        self._cold_dir_for = cold_dir_for
        #: For each dir loaded at startup: whether it had ``.kafka_cleanshutdown``.
        self.had_clean_shutdown: dict[Path, bool] = {}
        self._found_futures: list[FoundFuture] = []  # guarded by registry.lock

    def prepare(self, broker_id: int, cluster_id: str | None) -> None:
        """Create, lock and check every dir; write meta.properties where missing or incomplete."""
        reg = self._registry
        metas: dict[Path, BrokerMetadata | None] = {}
        for d in reg.log_dirs:
            try:
                if not d.is_dir():
                    logger.info("log directory %s not found, creating it", d)
                d.mkdir(parents=True, exist_ok=True)  # FileExistsError if it is a file
                os.listdir(d)  # readable?
                self.lock_dir(d)
                metas[d] = check_broker_metadata(d, broker_id=broker_id, cluster_id=cluster_id)
            except OSError as exc:
                logger.error("failed to create or validate log directory %s: %s", d, exc)
                self._failures.handle_dir_failure(d, exc)
        stored = {
            m.cluster_id for m in metas.values() if m is not None and m.cluster_id is not None
        }
        if len(stored) > 1:
            raise InconsistentBrokerMetadataError(
                f"meta.properties is not consistent across log.dirs: cluster ids {sorted(stored)}"
            )
        cluster_id = cluster_id if cluster_id is not None else next(iter(stored), None)
        for d, meta in metas.items():
            if d in reg.offline:
                continue
            complete = (
                meta is not None
                and (meta.broker_id is not None or broker_id < 0)
                and (meta.cluster_id is not None or cluster_id is None)
            )
            if complete:
                continue
            if cluster_id is None or broker_id < 0:
                # write_meta_properties needs both; nothing is lost by waiting for them.
                logger.warning(
                    "%s: not writing meta.properties without a cluster.id and broker.id", d
                )
                continue
            try:
                write_meta_properties(d, broker_id, cluster_id)
            except OSError as exc:
                self._failures.handle_dir_failure(d, exc)

    def lock_dir(self, d: Path) -> None:
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
        with self._registry.lock:
            self._registry.dir_locks[d] = f

    def load(self, d: Path) -> None:
        """Load the logs of dir *d* into the registry (see the module docstring); failing takes it offline."""
        reg = self._registry
        try:
            marker = d / CLEAN_SHUTDOWN_FILE
            clean = file_exists(marker)
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
            recovery_points = self._checkpoints.read_at_startup(d / RECOVERY_POINT_OFFSET_CHECKPOINT)
            start_offsets = self._checkpoints.read_at_startup(d / LOG_START_OFFSET_CHECKPOINT)
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
                    # Loaded once every dir's current logs are known (ReplicaMoves.load_futures).
                    with reg.lock:
                        self._found_futures.append(FoundFuture(tp, child, d, clean))
                    continue
                with reg.lock:
                    other = reg.dir_of.get(tp) or reg.offline_partitions.get(tp)
                if other is not None:
                    raise InvalidLogDirectoryError(
                        f"duplicate log directories for {tp[0]}-{tp[1]}: {child} and one in {other}"
                    )
                log = Log.open(
                    child,
                    self._config_for(tp[0]),
                    self._clock,
                    log_start_offset=start_offsets.get(tp, 0),
                    recovery_point=recovery_points.get(tp, 0),
                    had_clean_shutdown=clean,
                    epoch_cache=LeaderEpochCache.in_dir(child),
                    cold_directory=self._cold_dir_for(tp),
                )
                with reg.lock:
                    reg.logs[tp] = log
                    reg.dir_of[tp] = d
            if removed:
                fsync_dir(d)
        except (OSError, CorruptCheckpointError) as exc:
            logger.error("error while loading log dir %s: %s", d, exc)
            self._failures.handle_dir_failure(d, exc)

    def take_found_futures(self) -> list[FoundFuture]:
        """The ``-future`` directories :meth:`load` found, handed over once."""
        with self._registry.lock:
            found, self._found_futures = self._found_futures, []
        return found

    def shut_down_dir(self, d: Path) -> None:
        """Flush and close *d*'s logs (current and future), checkpoint them, mark the dir clean."""
        reg = self._registry
        with reg.lock:
            futures = [f for tp, f in reg.futures.items() if reg.future_dir_of[tp] == d]
        logs = list(reg.logs_in(d).values()) + futures
        try:
            for log in logs:
                log.flush()
                log.close()
        except OSError as exc:
            logger.error("error while flushing logs of %s at shutdown: %s", d, exc)
            self._failures.handle_dir_failure(d, exc)
            return
        if not (
            self._checkpoints.write_recovery_points(d)
            and self._checkpoints.write_log_start_offsets(d)
        ):
            return
        try:
            atomic_write(d / CLEAN_SHUTDOWN_FILE, b"")
        except OSError as exc:
            logger.error("error while writing the clean shutdown marker in %s: %s", d, exc)
            self._failures.handle_dir_failure(d, exc)
