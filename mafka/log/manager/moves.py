"""Moves of replicas between log dirs: future logs (AlterReplicaLogDirs).

Kafka's future logs, as its ``LogManager`` (``getOrCreateLog(isFuture = true)``,
``replaceCurrentWithFutureLog``, ``maybeUpdatePreferredLogDir``) and
``ReplicaAlterLogDirsThread`` (here reading the local log) handle them; the
broker's :class:`~mafka.broker.log_dir_mover.LogDirMover` drives the copying.

* :meth:`ReplicaMoves.get_or_create_future_log` creates
  ``<topic>-<partition>.<uuid hex>-future`` in the destination dir (never
  while a dir is offline, so no partition can have two logs);
* :meth:`~ReplicaMoves.catch_up_future_log` copies the current log's
  batches into it (as a follower would append them, following the current
  log's start offset and truncations, which the manager's ``truncate_to``
  applies to both through :meth:`~ReplicaMoves.truncate_future`);
* :meth:`~ReplicaMoves.replace_current_with_future` then, holding both logs'
  locks (appends wait), copies what is left, fsyncs the future log, writes its
  ``.mafka-future-complete`` marker, renames the current directory to
  ``-delete`` and the future one to ``<topic>-<partition>``, and retires the
  old log: a caller still holding it is forwarded to the new one, so no write
  is lost.  The old files go like a deleted log's.
* At startup (:meth:`~ReplicaMoves.load_futures`) a ``-future`` directory
  is loaded as the future log of its partition (the move resumes) when the
  current log is there; without a current log (a crash between the two
  renames) a future log holding the marker becomes the current log, one
  without it is removed, and while a dir is offline it is left alone (the
  current log may be there).
* A *preferred dir* (:meth:`~ReplicaMoves.maybe_update_preferred_log_dir`)
  places the next log created for a partition not hosted yet.

Which future log is where lives in the registry (:mod:`.registry`), beside the
current logs, so that a dir failure, a deletion and shutdown see both in one
hold of its lock.

Locks: a partition's *move lock* (a plain Lock per partition, created on first
use; the map of them is guarded by the registry's ``lock``) serialises what
changes its future log: creating, copying, truncating, swapping, deleting.
It comes after the cleaner lock and before ``creation_lock`` in the manager's
lock order.  Creating, aborting and swapping also take ``creation_lock``; the
swap takes the current and then the future log's own lock inside it, and
calls ``on_replaced`` with all of them held.  Both dirs' checkpoints are
rewritten after the swap, once the move lock is released.  Threads: the
broker's ``LogDirMover`` creates, aborts, copies and swaps in worker threads
and asks :attr:`ReplicaMoves.future_logs` on the reactor; nothing here
assumes a thread.
"""

from __future__ import annotations

import contextlib
import logging
import os
import shutil
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Final

from mafka.errors import InvalidTopicError, KafkaStorageError, OffsetOutOfRangeError
from mafka.topics import TopicPartitionTuple
from mafka.wire.batch import iter_batches

from ..checkpoint import CorruptCheckpointError, atomic_write, fsync_dir
from ..config import LogConfig
from ..dir_names import MAX_DIR_NAME, log_delete_dir_name, log_dir_name, log_future_dir_name
from ..epoch_cache import LeaderEpochCache
from ..log import Log
from .dir_checkpoints import DirCheckpoints
from .dirs import FoundFuture, file_exists
from .failures import DirFailures
from .registry import LogRegistry, PendingDelete, close_quietly

__all__ = ["FUTURE_COMPLETE_MARKER", "ReplicaMoves"]

logger = logging.getLogger("mafka.log.manager")

#: Written into a future log's directory once it holds everything the current log had,
#: just before the swap renames anything (Mafka's: it lets startup finish a torn swap).
FUTURE_COMPLETE_MARKER: Final = ".mafka-future-complete"


class ReplicaMoves:
    """Future logs and the moves they make (see the module docstring).

    The future logs live in the registry beside the current ones.  A failing
    dir goes to *failures*; both dirs' checkpoints are rewritten after a swap;
    the retired current log is queued for deletion at *delete_due_ms()* and
    its cold part renamed by the cold tier's *retire_cold_part*; logs found at
    startup open with *clock* and *config_for* (a topic's log config).
    """

    def __init__(
        self,
        registry: LogRegistry,
        failures: DirFailures,
        checkpoints: DirCheckpoints,
        *,
        clock: Callable[[], int],
        config_for: Callable[[str], LogConfig],
        delete_due_ms: Callable[[], int],
        retire_cold_part: Callable[[Log, str], None],
    ) -> None:
        self._registry = registry
        self._failures = failures
        self._checkpoints = checkpoints
        self._clock = clock
        self._config_for = config_for
        self._delete_due_ms = delete_due_ms
        self._retire_cold_part = retire_cold_part
        self._move_locks: dict[TopicPartitionTuple, threading.Lock] = {}  # guarded by registry.lock

    @contextlib.contextmanager
    def move_lock(self, tp: TopicPartitionTuple) -> Iterator[None]:
        """Serialises what changes a partition's future log (copying, truncating, swapping, deleting)."""
        with self._registry.lock:
            lock = self._move_locks.setdefault(tp, threading.Lock())
        with lock:
            yield

    # ------------------------------------------------------------------ facts

    @property
    def future_logs(self) -> dict[TopicPartitionTuple, Log]:
        """A snapshot of the future logs (replicas moving to another dir) by (topic, partition)."""
        with self._registry.lock:
            return dict(self._registry.futures)

    def get_future_log(self, tp: TopicPartitionTuple) -> Log | None:
        """The future log of *tp*, or None."""
        with self._registry.lock:
            return self._registry.futures.get(tp)

    def future_log_dir_of(self, tp: TopicPartitionTuple) -> Path | None:
        """The dir holding *tp*'s future log, or None."""
        with self._registry.lock:
            return self._registry.future_dir_of.get(tp)

    def replicas_by_dir(self) -> dict[Path, list[tuple[TopicPartitionTuple, Log, bool]]]:
        """Every online dir (in ``log.dirs`` order) with its (tp, log, is_future) replicas."""
        reg = self._registry
        with reg.lock:
            out: dict[Path, list[tuple[TopicPartitionTuple, Log, bool]]] = {
                d: [] for d in reg.log_dirs if d not in reg.offline
            }
            for tp, d in reg.dir_of.items():
                if d in out:
                    out[d].append((tp, reg.logs[tp], False))
            for tp, d in reg.future_dir_of.items():
                if d in out:
                    out[d].append((tp, reg.futures[tp], True))
        for replicas in out.values():
            replicas.sort(key=lambda r: (r[0], r[2]))
        return out

    def preferred_log_dir(self, tp: TopicPartitionTuple) -> Path | None:
        """Where the next log created for *tp* goes, if AlterReplicaLogDirs said so."""
        with self._registry.lock:
            return self._registry.preferred_dirs.get(tp)

    def maybe_update_preferred_log_dir(self, tp: TopicPartitionTuple, log_dir: Path) -> None:
        """Remember *log_dir* for *tp*'s next log (Kafka's ``maybeUpdatePreferredLogDir``).

        Not when the current or the future log of *tp* already is in that dir.

        Raises:
            ValueError: *log_dir* is not one of the log dirs.
        """
        reg = self._registry
        d = reg.known_dir(log_dir)
        with reg.lock:
            if reg.dir_of.get(tp) == d or reg.future_dir_of.get(tp) == d:
                return
            reg.preferred_dirs[tp] = d

    def future_lag(self, tp: TopicPartitionTuple) -> int | None:
        """The current log end offset minus the future one, or None without both logs."""
        with self._registry.lock:
            current, future = self._registry.logs.get(tp), self._registry.futures.get(tp)
        if current is None or future is None:
            return None
        return current.next_offset - future.next_offset

    # ------------------------------------------------------------------ creating and deleting

    def get_or_create_future_log(self, tp: TopicPartitionTuple, log_dir: Path) -> tuple[Log, bool]:
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
        reg = self._registry
        d = reg.known_dir(log_dir)
        topic, partition = tp
        if len(log_future_dir_name(topic, partition)) > MAX_DIR_NAME:
            raise InvalidTopicError(f"the topic name {topic!r} is too long to move its replicas")
        with self.move_lock(tp), reg.creation_lock:
            current = reg.require(tp)
            with reg.lock:
                reg.require_running_locked()
                if reg.dir_of.get(tp) == d:
                    raise ValueError(f"{topic}-{partition} is already in {d}")
                future = reg.futures.get(tp)
                if future is not None:
                    if reg.future_dir_of[tp] != d:
                        raise ValueError(
                            f"the future log of {topic}-{partition} is in {reg.future_dir_of[tp]}, not {d}"
                        )
                    reg.preferred_dirs.pop(tp, None)
                    return future, False
                if reg.offline:
                    raise KafkaStorageError(
                        f"cannot create the future log of {topic}-{partition}: log dir(s) "
                        + ", ".join(str(x) for x in reg.log_dirs if x in reg.offline)
                        + " offline"
                    )
            path = d / log_future_dir_name(topic, partition)
            try:
                path.mkdir()
                fsync_dir(d)
                future = Log.open(
                    path,
                    current.config,
                    self._clock,
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
                self._failures.handle_dir_failure(d, exc)
                raise KafkaStorageError(
                    f"error while creating the future log of {topic}-{partition} in {d}: {exc}"
                ) from exc
            with reg.lock:
                if d in reg.offline:
                    close_quietly(future)
                    raise KafkaStorageError(f"log dir {d} went offline")
                reg.futures[tp] = future
                reg.future_dir_of[tp] = d
                reg.preferred_dirs.pop(tp, None)
            logger.info("created the future log of %s-%d in %s", topic, partition, path)
            return future, True

    def abort_future_log(self, tp: TopicPartitionTuple) -> bool:
        """Stop moving *tp*: its future log is deleted like a deleted log; False if there is none."""
        with self.move_lock(tp), self._registry.creation_lock:
            return self.delete_future_locked(tp)

    def delete_future_locked(self, tp: TopicPartitionTuple) -> bool:
        """Rename *tp*'s future log to ``-delete`` and schedule its files (move + creation locks held)."""
        reg = self._registry
        with reg.lock:
            future = reg.futures.get(tp)
            if future is None:
                return False
            d = reg.future_dir_of[tp]
        target = d / log_delete_dir_name(*tp)
        try:
            future.delete_pending(force=True)
            os.rename(future.directory, target)
            fsync_dir(d)
        except OSError as exc:
            self._failures.handle_dir_failure(d, exc)
            raise KafkaStorageError(
                f"failed to rename the future log directory of {tp[0]}-{tp[1]}: {exc}"
            ) from exc
        with reg.lock:
            del reg.futures[tp]
            del reg.future_dir_of[tp]
            reg.pending.append(PendingDelete(tp, future, d, target, self._delete_due_ms()))
        logger.info(
            "the future log of %s-%d is renamed to %s and scheduled for deletion", *tp, target
        )
        return True

    def truncate_future(self, tp: TopicPartitionTuple, op: Callable[[Log], bool]) -> None:
        """Apply a truncation of the current log to the future log (move lock held)."""
        with self._registry.lock:
            future = self._registry.futures.get(tp)
            d = self._registry.future_dir_of.get(tp)
        if future is None or d is None:
            return
        try:
            op(future)
        except OSError as exc:
            logger.error("%s-%d: error while truncating the future log: %s", tp[0], tp[1], exc)
            self._failures.handle_dir_failure(d, exc)

    # ------------------------------------------------------------------ copying and swapping

    def _failed_in(
        self, tp: TopicPartitionTuple, current: Log, future: Log, src: Path, dst: Path, exc: OSError
    ) -> None:
        """Blame an I/O error during a move on the dir whose file failed, if both logs are still registered."""
        reg = self._registry
        with reg.lock:
            live = reg.logs.get(tp) is current and reg.futures.get(tp) is future
        if not live:
            return
        filename = getattr(exc, "filename", None) or ""
        blamed = dst if str(filename).startswith(str(dst)) else src
        self._failures.handle_dir_failure(blamed, exc)

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

    def catch_up_future_log(self, tp: TopicPartitionTuple, max_bytes: int = 1 << 20) -> int:
        """Copy up to about *max_bytes* of *tp*'s current log into its future log (Kafka's
        ReplicaAlterLogDirsThread, reading the local log); returns the bytes copied, 0 when caught
        up, -1 without a current and a future log.  An I/O error takes the failing dir offline.
        """
        with self.move_lock(tp), self._registry.borrowed_pair(tp) as pair:
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

    def replace_current_with_future(
        self, tp: TopicPartitionTuple, on_replaced: Callable[[Log, Log], None] | None = None
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
        reg = self._registry
        topic, partition = tp
        with self.move_lock(tp), reg.borrowed_pair(tp) as pair:
            if pair is None:
                return False
            current, future, src, dst = pair
            try:
                while self._copy_once(current, future, 8 << 20) > 0:
                    pass
                future.flush()  # most of it, before appends have to wait
                with reg.creation_lock, current._lock, future._lock:
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
                    with reg.lock:
                        del reg.futures[tp]
                        del reg.future_dir_of[tp]
                        reg.logs[tp] = future
                        reg.dir_of[tp] = dst
                        reg.uncleanable.discard(tp)
                        reg.pending.append(
                            PendingDelete(tp, current, src, retired, self._delete_due_ms())
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
            self._checkpoints.rewrite_dir(d, {tp} if d == src else set())
        return True

    # ------------------------------------------------------------------ startup

    def load_futures(self, found: list[FoundFuture]) -> None:
        """Startup: resume, promote or remove the ``-future`` directories found (see the module docstring)."""
        reg = self._registry
        for tp, path, d, clean in found:
            if d in reg.offline:
                continue
            with reg.lock:
                has_current = tp in reg.logs
                duplicate = tp in reg.futures
                unknown = tp in reg.offline_partitions or bool(reg.offline)
            try:
                if duplicate or (
                    not has_current
                    and not unknown
                    and not file_exists(path / FUTURE_COMPLETE_MARKER)
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
                    self._clock,
                    recovery_point=0,
                    had_clean_shutdown=clean,
                    epoch_cache=LeaderEpochCache.in_dir(path),
                )
                with reg.lock:
                    if has_current:
                        reg.futures[tp] = log
                        reg.future_dir_of[tp] = d
                    else:
                        reg.logs[tp] = log
                        reg.dir_of[tp] = d
                if not has_current:
                    with contextlib.suppress(OSError):
                        os.unlink(path / FUTURE_COMPLETE_MARKER)
                else:
                    logger.info("%s: resuming the move of %s-%d into this dir", d, *tp)
            except (OSError, CorruptCheckpointError) as exc:
                logger.error("error while loading %s: %s", path, exc)
                self._failures.handle_dir_failure(d, exc)
