"""The log manager's shared core: which log is where, which dirs are offline, and who uses a log.

:class:`LogRegistry` is the one piece of state the parts of
:class:`~mafka.log.manager.LogManager` share (as Kafka's ``LogManager`` keeps
``currentLogs``, ``futureLogs``, ``logsToBeDeleted``, ``preferredLogDirs`` and
``dirLocks`` in one place): the online current logs and the dir of each, the
future logs (replicas moving between dirs) and theirs, the preferred dirs of
partitions not hosted yet, the offline dirs and partitions, the ``.lock``
files held, the deleted logs waiting for their files to go, the uncleanable
partitions, the manager's life-cycle state, and which logs an operation is
using.  It holds no behaviour beyond bookkeeping: it does no I/O but closing
files (a retired log, outside its lock) and never calls back.

Locks it owns:

* ``lock`` (an RLock; the manager's state lock) guards every attribute
  below, the in-use counts, and the few maps other parts keep beside them
  (the per-partition move locks in :mod:`.moves`, the future dirs found at
  start-up in :mod:`.dirs`, the failed cold dirs in :mod:`.cold_tier` while
  they take partitions offline).  It is the innermost lock: no other lock is
  taken and no file touched while it is held -- with one exception kept from
  before the split: a future log just opened in a dir that failed meanwhile
  is closed under it (:mod:`.moves`; nobody else can hold that log's lock
  yet).  Methods named ``*_locked`` expect the caller to hold it; the others
  take it themselves.
* ``creation_lock`` (an RLock; Kafka's ``logCreationOrDeletionLock``)
  serialises creating, deleting and swapping logs, current or future.  The
  registry never takes it; :mod:`.current_logs` (create, delete) and
  :mod:`.moves` (create, abort, swap) do.

The manager's whole lock order (each may be taken while holding the ones to
its left, never the other way): the cleaner lock (:mod:`.passes`) -> a
partition's move lock (:mod:`.moves`) -> ``creation_lock`` -> the logs' own
locks (current before future) -> the checkpoint lock (:mod:`.dir_checkpoints`)
-> ``lock``.

Threads: any.  Operations use a log through :meth:`LogRegistry.acquire`
(``log_io``: the broker's appends and reads, and truncations) while worker
threads run passes over a :meth:`~LogRegistry.snapshot`, borrowing each log
(:meth:`~LogRegistry.borrowed`): a log deleted or taken offline meanwhile is
closed only when its last user gives it back (:meth:`~LogRegistry.give_back`),
on that user's thread.
"""

from __future__ import annotations

import contextlib
import logging
import os
import threading
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from operator import itemgetter
from pathlib import Path
from typing import IO, Any

from mafka.errors import KafkaStorageError, UnknownTopicOrPartitionError
from mafka.topics import TopicPartitionTuple

from ..log import Log

__all__ = ["Closer", "LogRegistry", "LogsByPartition", "PendingDelete", "close_quietly", "close_segments"]

logger = logging.getLogger("mafka.log.manager")

#: How a log leaving the registry is closed: :func:`close_quietly` or :func:`close_segments`.
Closer = Callable[[Log], None]


class LogsByPartition(dict[TopicPartitionTuple, Log]):
    """The online logs by (topic, partition), also indexed by topic.

    A topic's config change touches that topic's logs only
    (:meth:`of_topic`): with 100,000 partitions, walking every log for each
    of 10,000 topic creations (each writes the topic's config) kept the
    broker busy for minutes.  Every way of changing the dict keeps the index
    (``popitem`` is refused: nothing needs it).
    """

    __slots__ = ("_by_topic",)

    def __init__(self) -> None:
        super().__init__()
        self._by_topic: dict[str, set[int]] = {}

    def of_topic(self, topic: str) -> list[tuple[TopicPartitionTuple, Log]]:
        """(tp, log) of the topic's online logs, by partition."""
        return [((topic, i), dict.__getitem__(self, (topic, i))) for i in sorted(self._by_topic.get(topic, ()))]

    def __setitem__(self, tp: TopicPartitionTuple, log: Log) -> None:
        super().__setitem__(tp, log)
        self._by_topic.setdefault(tp[0], set()).add(tp[1])

    def __delitem__(self, tp: TopicPartitionTuple) -> None:
        super().__delitem__(tp)
        self._forget(tp)

    def pop(self, tp: TopicPartitionTuple, *default: Log) -> Log:  # type: ignore[override]
        present = tp in self
        log = super().pop(tp, *default)
        if present:
            self._forget(tp)
        return log

    def setdefault(self, tp: TopicPartitionTuple, log: Log) -> Log:
        if tp not in self:
            self[tp] = log
        return dict.__getitem__(self, tp)

    def update(self, *args: Any, **kwargs: Any) -> None:
        items: dict[TopicPartitionTuple, Log] = dict(*args, **kwargs)
        for tp, log in items.items():
            self[tp] = log

    def popitem(self) -> tuple[TopicPartitionTuple, Log]:
        raise NotImplementedError("LogsByPartition.popitem: remove a named partition")

    def clear(self) -> None:
        super().clear()
        self._by_topic.clear()

    def _forget(self, tp: TopicPartitionTuple) -> None:
        indices = self._by_topic.get(tp[0])
        if indices is not None:
            indices.discard(tp[1])
            if not indices:
                del self._by_topic[tp[0]]


@dataclass(slots=True)
class PendingDelete:
    """A deleted log: renamed to ``path``, its files removed at ``due_ms``."""

    topic_partition: TopicPartitionTuple
    log: Log
    log_dir: Path
    path: Path
    due_ms: int


def close_quietly(log: Log) -> None:
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


_first = itemgetter(0)


def close_segments(log: Log) -> None:
    """Close the files of a log whose directory was renamed (its own paths are stale) and is to be
    removed: its leader epoch checkpoint takes no more writes, so none lands in a directory being removed."""
    log.epoch_cache.close()
    for seg in list(log.segments):
        try:
            seg.close()
        except OSError as exc:
            logger.warning("%s: error while closing %s: %s", log.directory, seg, exc)


class LogRegistry:
    """The logs of a broker's ``log.dirs`` and their state (see the module docstring).

    Every attribute is guarded by :attr:`lock`.
    """

    def __init__(self, log_dirs: tuple[Path, ...]) -> None:
        self.log_dirs = log_dirs
        self.lock = threading.RLock()
        self.creation_lock = threading.RLock()
        #: "new" -> "starting" -> "running" -> "closing" -> "closed"
        self.state = "new"
        self.logs = LogsByPartition()
        self.dir_of: dict[TopicPartitionTuple, Path] = {}
        self.offline: dict[Path, BaseException] = {}
        self.offline_partitions: dict[TopicPartitionTuple, Path] = {}
        self.dir_locks: dict[Path, IO[bytes]] = {}
        self.pending: list[PendingDelete] = []
        self.uncleanable: set[TopicPartitionTuple] = set()
        self.futures: dict[TopicPartitionTuple, Log] = {}
        self.future_dir_of: dict[TopicPartitionTuple, Path] = {}
        self.preferred_dirs: dict[TopicPartitionTuple, Path] = {}
        self._in_use: dict[Log, int] = {}
        self._close_when_idle: dict[Log, Closer] = {}

    # ------------------------------------------------------------------ queries

    def known_dir(self, log_dir: Path) -> Path:
        """*log_dir* made absolute; ValueError if it is not one of the log dirs."""
        d = Path(os.path.abspath(log_dir))
        if d not in self.log_dirs:
            raise ValueError(f"{log_dir} is not one of the log dirs")
        return d

    def online_dirs(self) -> list[Path]:
        """Usable dirs, in ``log.dirs`` order."""
        with self.lock:
            return [d for d in self.log_dirs if d not in self.offline]

    def any_offline(self) -> bool:
        """Whether a dir is offline; read without the lock (start-up only, one thread)."""
        return bool(self.offline)

    def get(self, tp: TopicPartitionTuple) -> Log | None:
        """The online log of *tp*, or None."""
        with self.lock:
            return self.logs.get(tp)

    def logs_of_topic(self, topic: str) -> list[tuple[TopicPartitionTuple, Log]]:
        """(tp, log) of one topic's online logs."""
        with self.lock:
            return self.logs.of_topic(topic)

    def topic_partitions(self) -> list[TopicPartitionTuple]:
        """The partitions with an online log."""
        with self.lock:
            return list(self.logs)

    def logs_in(self, d: Path) -> dict[TopicPartitionTuple, Log]:
        """The online logs of dir *d* (already made absolute)."""
        with self.lock:
            return {tp: self.logs[tp] for tp, dd in self.dir_of.items() if dd == d}

    def snapshot(self, where: Callable[[Log], bool] | None = None) -> list[tuple[TopicPartitionTuple, Log, Path]]:
        """(tp, log, dir) of every online log (for which *where* holds), sorted: what a pass walks, outside the lock."""
        with self.lock:
            items = [(tp, log) for tp, log in self.logs.items() if where is None or where(log)]
            return [(tp, log, self.dir_of[tp]) for tp, log in sorted(items, key=_first)]

    def require(self, tp: TopicPartitionTuple) -> Log:
        """The online log of *tp*; raises as ``LogManager.require_log``."""
        with self.lock:
            log = self.logs.get(tp)
            if log is not None:
                return log
            self.raise_if_offline_locked(tp)
        raise UnknownTopicOrPartitionError(f"no log for {tp[0]}-{tp[1]} on this broker")

    def raise_if_offline_locked(self, tp: TopicPartitionTuple) -> None:
        """For a partition without an online log: KafkaStorageError if it is (or may be) offline."""
        d = self.offline_partitions.get(tp)
        if d is not None:
            raise KafkaStorageError(f"log for {tp[0]}-{tp[1]} is offline: log dir {d} failed")
        if self.offline:
            raise KafkaStorageError(
                f"no log for {tp[0]}-{tp[1]}; it may be in the offline log dir(s) "
                + ", ".join(str(d) for d in self.log_dirs if d in self.offline)
            )

    def require_running_locked(self) -> None:
        if self.state != "running":
            raise RuntimeError(f"the LogManager is {self.state}")

    def placement_order_locked(self) -> list[Path]:
        """Online dirs, fewest partitions first, ties in ``log.dirs`` order."""
        online = [d for d in self.log_dirs if d not in self.offline]
        if len(online) <= 1:
            return online  # nothing to count (it ran once per new log: O(logs) each, under the lock)
        counts = Counter(self.dir_of.values())
        return sorted(online, key=lambda d: (counts[d], self.log_dirs.index(d)))

    # ------------------------------------------------------------------ use of a log

    def in_use_locked(self, log: Log) -> bool:
        """Whether an operation is using *log* (it must not be closed yet)."""
        return bool(self._in_use.get(log))

    def _use_locked(self, log: Log) -> None:
        self._in_use[log] = self._in_use.get(log, 0) + 1

    def acquire(self, tp: TopicPartitionTuple) -> tuple[Log, Path]:
        """Mark *tp*'s online log in use and return it with its dir; give it back when done.

        Raises:
            KafkaStorageError / UnknownTopicOrPartitionError: as :meth:`require`.
        """
        with self.lock:
            log = self.logs.get(tp)
            if log is None:
                self.raise_if_offline_locked(tp)
                raise UnknownTopicOrPartitionError(f"no log for {tp[0]}-{tp[1]} on this broker")
            d = self.dir_of[tp]
            self._use_locked(log)
        return log, d

    @contextlib.contextmanager
    def borrowed(self, tp: TopicPartitionTuple, log: Log) -> Iterator[bool]:
        """Mark *log* in use if it is still *tp*'s online log; yields whether it is."""
        with self.lock:
            ok = self.logs.get(tp) is log
            if ok:
                self._use_locked(log)
        try:
            yield ok
        finally:
            if ok:
                self.give_back(log)

    @contextlib.contextmanager
    def borrowed_pair(self, tp: TopicPartitionTuple) -> Iterator[tuple[Log, Log, Path, Path] | None]:
        """The current and future logs of *tp* and their dirs, kept open while in use; None if not both."""
        with self.lock:
            current, future = self.logs.get(tp), self.futures.get(tp)
            if current is None or future is None:
                pair = None
            else:
                pair = (current, future, self.dir_of[tp], self.future_dir_of[tp])
                for log in (current, future):
                    self._use_locked(log)
        try:
            yield pair
        finally:
            if pair is not None:
                self.give_back(pair[0])
                self.give_back(pair[1])

    def give_back(self, log: Log) -> None:
        """End one use of *log*; the last use of a retired log closes it (outside the lock)."""
        with self.lock:
            left = self._in_use[log] - 1
            if left:
                self._in_use[log] = left
                return
            del self._in_use[log]
            close = self._close_when_idle.pop(log, None)
        if close is not None:
            close(log)

    # ------------------------------------------------------------------ retiring logs

    def take_offline_locked(
        self, tps: list[TopicPartitionTuple], d: Path, to_close: list[tuple[Log, Closer]]
    ) -> None:
        """*tps*' logs are forgotten, marked offline because of *d*, and queued to close."""
        for tp in tps:
            log = self.logs.pop(tp)
            del self.dir_of[tp]
            self.offline_partitions[tp] = d
            self.uncleanable.discard(tp)
            to_close.append((log, close_quietly))

    def close_now_or_when_idle_locked(
        self, to_close: list[tuple[Log, Closer]]
    ) -> list[tuple[Log, Closer]]:
        """A log in use closes when given back; returns those to close now (after releasing the lock)."""
        closing_now = []
        for log, close in to_close:
            if self._in_use.get(log):
                self._close_when_idle[log] = close
            else:
                closing_now.append((log, close))
        return closing_now

    def close_everything(self) -> None:
        """Forget and close every log, deleted log and ``.lock`` file; the state becomes "closed"."""
        with self.lock:
            logs = list(self.logs.values()) + list(self.futures.values())
            pending = list(self.pending)
            locks = list(self.dir_locks.values())
            self.futures.clear()
            self.future_dir_of.clear()
            self.logs.clear()
            self.dir_of.clear()
            self.pending.clear()
            self.dir_locks.clear()
            self.state = "closed"
        for log in logs:
            close_quietly(log)
        for p in pending:
            close_segments(p.log)
        for f in locks:
            with contextlib.suppress(OSError):
                f.close()
