"""Log-dir failure handling: taking a dir (or the partitions of a cold dir) offline.

Kafka's ``LogManager.handleLogDirFailure`` together with what its
``LogDirFailureChannel`` carries: an ``OSError`` (or a corrupt per-partition or
per-dir checkpoint, which Kafka reports as a storage error) in any operation
on a dir takes that dir offline with :meth:`DirFailures.handle_dir_failure`:
its logs are closed and forgotten, its future logs and deleted logs are
dropped (their files stay for the next startup), its ``.lock`` is released,
the ``on_dir_failure`` callback runs, asking for those partitions raises
:class:`~mafka.errors.KafkaStorageError`, and the other dirs carry on.  At
startup, losing every dir raises ``KafkaStorageError`` (the manager's
``startup``); later, Kafka halts the broker when the last dir fails -- here the
callback decides (``online_dirs`` is then empty).

The broker reports its own I/O errors (appends, reads) by doing them inside
:meth:`DirFailures.log_io`; passes report theirs with
:meth:`DirFailures.io_failed`, which ignores an error on a log retired
meanwhile (deleted, moved or already offline): it is not its dir's fault.
The cold tier takes the partitions with segments in a failed cold dir offline
through :meth:`DirFailures.take_partitions_offline`.

Locks and threads: no lock of its own.  Every change is made in one hold of
the registry's ``lock`` (:mod:`.registry`); the logs are closed, the ``.lock``
file released and ``on_dir_failure`` called after it is released, on the
thread that saw the error (a worker thread for the passes and the moves,
whichever thread does the I/O for ``log_io``).  The caller's other locks may
still be held then -- the checkpoint lock when a checkpoint write fails, the
move and creation locks when creating, deleting or swapping, both logs' own
locks during a swap -- so the callback must not wait for another thread that
needs them.  A log some operation is using is closed by that operation's
thread when it gives the log back.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path

from mafka.errors import KafkaStorageError
from mafka.topics import TopicPartitionTuple

from ..log import Log
from .registry import Closer, LogRegistry, close_quietly, close_segments

__all__ = ["DirFailures"]

logger = logging.getLogger("mafka.log.manager")


class DirFailures:
    """Takes failed dirs offline (see the module docstring).

    Args:
        registry: the manager's shared state.
        on_dir_failure: called with the dir and the error when a dir goes
            offline (outside the registry lock; exceptions are logged).
    """

    def __init__(
        self,
        registry: LogRegistry,
        on_dir_failure: Callable[[Path, BaseException], None] | None,
    ) -> None:
        self._registry = registry
        self._on_dir_failure = on_dir_failure

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
        reg = self._registry
        d = reg.known_dir(log_dir)
        to_close: list[tuple[Log, Closer]] = []
        with reg.lock:
            if d in reg.offline:
                return False
            reg.offline[d] = exc
            tps = sorted(tp for tp, dd in reg.dir_of.items() if dd == d)
            reg.take_offline_locked(tps, d, to_close)
            for pending in [p for p in reg.pending if p.log_dir == d]:
                reg.pending.remove(pending)
                to_close.append((pending.log, close_segments))
            # Future logs in the dir, or moving away from a log in it, stop (Kafka's
            # removeOfflineLogs(futureLogs)); their files stay for the next startup.
            for tp in [tp for tp, fd in reg.future_dir_of.items() if fd == d or tp in tps]:
                to_close.append((reg.futures.pop(tp), close_quietly))
                del reg.future_dir_of[tp]
            closing_now = reg.close_now_or_when_idle_locked(to_close)
            lock_file = reg.dir_locks.pop(d, None)
            left = [dd for dd in reg.log_dirs if dd not in reg.offline]
        logger.error(
            "stopping serving logs in dir %s (%s); offline partitions: %s",
            d,
            exc,
            ", ".join(f"{t}-{p}" for t, p in tps) or "none",
        )
        if not left:
            logger.critical("all log dirs (%s) have failed", ", ".join(map(str, reg.log_dirs)))
        for log, close in closing_now:
            close(log)
        if lock_file is not None:
            with contextlib.suppress(OSError):
                lock_file.close()
        self.notify(d, exc)
        return True

    def take_partitions_offline(
        self,
        d: Path,
        exc: BaseException,
        message: str,
        select: Callable[[Mapping[TopicPartitionTuple, Log]], list[TopicPartitionTuple] | None],
    ) -> bool:
        """Take the partitions *select* picks offline because of *d* (not a log dir: a cold dir).

        *select* runs with the registry lock held, given the online logs; it
        returns the partitions (sorted), or None to do nothing (returns
        False).  Their logs are forgotten and closed as in
        :meth:`handle_dir_failure`, *message* is logged with *d*, *exc* and
        the partitions, and ``on_dir_failure`` is called with *d*.
        """
        reg = self._registry
        to_close: list[tuple[Log, Closer]] = []
        with reg.lock:
            tps = select(reg.logs)
            if tps is None:
                return False
            reg.take_offline_locked(tps, d, to_close)
            closing_now = reg.close_now_or_when_idle_locked(to_close)
        logger.error(message, d, exc, ", ".join(f"{t}-{p}" for t, p in tps) or "none")
        for log, close in closing_now:
            close(log)
        self.notify(d, exc)
        return True

    def notify(self, d: Path, exc: BaseException) -> None:
        """Calls ``on_dir_failure`` (if any) for a dir just taken offline; its own errors are logged."""
        if self._on_dir_failure is not None:
            try:
                self._on_dir_failure(d, exc)
            except Exception:
                logger.exception("on_dir_failure callback failed for %s", d)

    def io_failed(self, tp: TopicPartitionTuple, log: Log, d: Path, exc: BaseException) -> None:
        """An I/O error on *log*: its dir goes offline -- unless the log was retired meanwhile."""
        with self._registry.lock:
            current = self._registry.logs.get(tp) is log
        if not current:
            logger.info(
                "%s-%s: ignoring %s on a log deleted or taken offline meanwhile", tp[0], tp[1], exc
            )
            return
        self.handle_dir_failure(d, exc)

    @contextlib.contextmanager
    def log_io(self, tp: TopicPartitionTuple) -> Iterator[Log]:
        """Use *tp*'s log; an ``OSError`` inside takes its dir offline.

        The broker's appends, reads and truncations go through this::

            with manager.log_io(("t", 0)) as log:
                log.append_as_leader(records, epoch)

        The log is not closed (if deleted meanwhile) before the block ends.

        Raises:
            KafkaStorageError: the log is offline, or the block raised an
                ``OSError`` (chained), which took the dir offline.
            UnknownTopicOrPartitionError: as ``LogManager.require_log``.
        """
        log, d = self._registry.acquire(tp)
        try:
            yield log
        except OSError as exc:
            self.io_failed(tp, log, d, exc)
            raise KafkaStorageError(
                f"I/O error on the log of {tp[0]}-{tp[1]} in {d}: {exc}"
            ) from exc
        finally:
            self._registry.give_back(log)
