"""Creating and deleting partitions' current logs: placement among the dirs, and deletion.

Kafka's ``LogManager.getOrCreateLog`` (for current logs; future ones are
:mod:`.moves`') and ``asyncDelete``:

* **Placement.** A new log goes to the online dir holding the fewest
  partitions, ties going to the earlier ``log.dirs`` entry -- or to the
  partition's preferred dir (set by AlterReplicaLogDirs) if it is online.
  Without ``is_new=True`` no log is created while a dir is offline: the
  partition may have data there.  A dir failing while the log is created is
  taken offline and the next one tried.
* **Deletion** renames the directory to ``<topic>-<partition>.<uuid hex>-delete``
  at once (its cold part too), rewrites the dir's cleaner, recovery-point and
  log-start checkpoints without the partition, and queues the files for
  removal ``file.delete.delay.ms`` (broker default) later by
  :meth:`.passes.LogPasses.delete_pending_logs` -- the files stay open
  until then, so a read already handed out keeps working, as in Kafka.  A
  future log of the partition is deleted first, so a crash in between cannot
  leave a future log to be promoted at the next startup.

Locks and threads: both hold the registry's ``creation_lock`` (Kafka's
``logCreationOrDeletionLock``) throughout, deletion inside the partition's
move lock (:mod:`.moves`); the registry's ``lock`` is taken only to read and
change its maps, never around file I/O.  Nothing here assumes a thread: the
broker's replica manager creates logs for LeaderAndIsr (in a worker thread,
``prepare_partitions``) and deletes them for StopReplica.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path

from mafka.errors import KafkaStorageError
from mafka.topics import TopicPartitionTuple, validate_topic_name

from ..checkpoint import CorruptCheckpointError, fsync_dir
from ..config import LogConfig
from ..dir_names import log_delete_dir_name, log_dir_name
from ..epoch_cache import LeaderEpochCache
from ..log import Log
from .dir_checkpoints import DirCheckpoints
from .failures import DirFailures
from .moves import ReplicaMoves
from .registry import LogRegistry, PendingDelete, close_quietly

__all__ = ["CurrentLogs"]

logger = logging.getLogger("mafka.log.manager")

_INT32_MAX = 2**31 - 1


def _validate_partition_name(topic: str, partition: int) -> None:
    validate_topic_name(topic)
    if not 0 <= partition <= _INT32_MAX:
        raise ValueError(f"partition {partition} of {topic!r} is not a non-negative int32")


class CurrentLogs:
    """Creates and deletes current logs (see the module docstring).

    New logs open with *clock*, *config_for* (a topic's log config) and the
    cold tier's *cold_dir_for*; a deleted one is queued for removal at
    *delete_due_ms()*, its cold part renamed by *retire_cold_part*, its dir's
    checkpoints rewritten, after *moves* deleted its future log under the
    partition's move lock.  A failing dir goes to *failures*.
    """

    def __init__(
        self,
        registry: LogRegistry,
        failures: DirFailures,
        checkpoints: DirCheckpoints,
        moves: ReplicaMoves,
        *,
        clock: Callable[[], int],
        config_for: Callable[[str], LogConfig],
        delete_due_ms: Callable[[], int],
        cold_dir_for: Callable[[TopicPartitionTuple], Path | None],
        retire_cold_part: Callable[[Log, str], None],
    ) -> None:
        self._registry = registry
        self._failures = failures
        self._checkpoints = checkpoints
        self._moves = moves
        self._clock = clock
        self._config_for = config_for
        self._delete_due_ms = delete_due_ms
        self._cold_dir_for = cold_dir_for
        self._retire_cold_part = retire_cold_part

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
        reg = self._registry
        tp = (topic, partition)
        with reg.creation_lock:
            with reg.lock:
                log = reg.logs.get(tp)
                if log is not None:
                    return log
                reg.require_running_locked()
                _validate_partition_name(topic, partition)
                if tp in reg.offline_partitions or not is_new:
                    reg.raise_if_offline_locked(tp)
                candidates = reg.placement_order_locked()
                preferred = reg.preferred_dirs.get(tp)
                if preferred in candidates:
                    candidates = [preferred]
            config = config if config is not None else self._config_for(topic)
            for d in candidates:
                path = d / log_dir_name(topic, partition)
                try:
                    # The new directory's entry in d is fsynced by the log's first flush
                    # (Log.open(new_directory=True)): thousands of partitions created at once
                    # cost two fsyncs each otherwise, and an empty log needs none.
                    new_directory = not path.is_dir()
                    path.mkdir(exist_ok=True)
                except OSError as exc:
                    logger.error(
                        "error while creating log for %s-%s in dir %s: %s", topic, partition, d, exc
                    )
                    self._failures.handle_dir_failure(d, exc)
                    continue
                try:
                    log = Log.open(
                        path, config, self._clock, epoch_cache=LeaderEpochCache.in_dir(path),
                        cold_directory=self._cold_dir_for(tp), new_directory=new_directory,
                    )
                except (OSError, CorruptCheckpointError) as exc:
                    self._failures.handle_dir_failure(d, exc)
                    raise KafkaStorageError(
                        f"error while creating log for {topic}-{partition} in {d}: {exc}"
                    ) from exc
                with reg.lock:
                    if d not in reg.offline:
                        reg.logs[tp] = log
                        reg.dir_of[tp] = d
                        reg.offline_partitions.pop(tp, None)
                        reg.preferred_dirs.pop(tp, None)
                        logger.info("created log for partition %s-%d in %s", topic, partition, d)
                        return log
                close_quietly(log)  # the dir failed meanwhile
            raise KafkaStorageError(
                f"no log directory available for {topic}-{partition}; tried {', '.join(map(str, candidates)) or 'none'}"
            )

    def delete_log(self, topic: str, partition: int) -> bool:
        """Delete a partition's log (Kafka's ``asyncDelete``); False if there is none.

        The directory is renamed to ``<topic>-<partition>.<uuid>-delete`` and
        the dir's cleaner, recovery-point and log-start checkpoints rewritten
        without it, at once; the log is forgotten.  Its files stay open and
        are removed by ``LogManager.delete_pending_logs`` ``file.delete.delay.ms``
        (of the default config) later, or at the next startup.

        Raises:
            KafkaStorageError: the log is on an offline dir (or unknown while a
                dir is offline); or renaming failed, taking the dir offline.
        """
        reg = self._registry
        tp = (topic, partition)
        with self._moves.move_lock(tp), reg.creation_lock:
            # A replica moving elsewhere loses its future log first: a crash before the
            # current one goes too must not leave a future log to be promoted.
            self._moves.delete_future_locked(tp)
            with reg.lock:
                log = reg.logs.get(tp)
                if log is None:
                    reg.raise_if_offline_locked(tp)
                    return False
                d = reg.dir_of[tp]
                if reg.in_use_locked(log):
                    logger.info(
                        "%s-%d: deleting a log in use; its files close when the use ends",
                        topic,
                        partition,
                    )
            try:
                # Remove already-deleted segments while their paths are still right; the
                # leader epoch checkpoint takes no more writes (a late one would land in a
                # recreated partition of the same name).
                log.delete_pending(force=True)
                log.epoch_cache.close()
                target = d / log_delete_dir_name(topic, partition)
                os.rename(log.directory, target)
                fsync_dir(d)
                self._retire_cold_part(log, target.name)
            except OSError as exc:
                self._failures.handle_dir_failure(d, exc)
                raise KafkaStorageError(
                    f"failed to rename the log directory of {topic}-{partition}: {exc}"
                ) from exc
            with reg.lock:
                del reg.logs[tp]
                del reg.dir_of[tp]
                reg.uncleanable.discard(tp)
                reg.pending.append(PendingDelete(tp, log, d, target, self._delete_due_ms()))
            logger.info(
                "log for partition %s-%d is renamed to %s and is scheduled for deletion",
                topic,
                partition,
                target,
            )
            self._checkpoints.rewrite_dir(d, {tp})
            return True

