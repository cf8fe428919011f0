"""Moving replicas between this broker's log dirs: AlterReplicaLogDirs and DescribeLogDirs.

Kafka's ``ReplicaManager.alterReplicaLogDirs`` / ``describeLogDirs`` and its
``ReplicaAlterLogDirsManager`` (the threads that copy a replica's current log
into its future log, reading the local log, then swap them).

* :meth:`LogDirMover.alter_replica_log_dirs` checks each destination on the
  reactor (not in ``log.dirs`` → LOG_DIR_NOT_FOUND, offline →
  KAFKA_STORAGE_ERROR, topic name too long → INVALID_TOPIC_EXCEPTION), then
  in a worker thread: an offline partition → KAFKA_STORAGE_ERROR; a move to
  another dir than the one in progress aborts it; the dir is remembered as
  the partition's preferred dir; a partition not hosted here answers
  REPLICA_NOT_AVAILABLE (UNKNOWN_TOPIC_OR_PARTITION if the topic is unknown)
  and its log will be created in that dir when it arrives; otherwise a
  future log is created there (none while a dir is offline:
  KAFKA_STORAGE_ERROR) and the copying starts.
* The copying runs in worker threads, never on the reactor: each pass
  copies up to ``pass_bytes`` in ``chunk_bytes`` steps
  (:meth:`~mafka.log.manager.LogManager.catch_up_future_log`); a future log
  found caught up is swapped in at once
  (:meth:`~mafka.log.manager.LogManager.replace_current_with_future`), and
  the hosted :class:`~mafka.broker.partition.Partition` switches to it while
  the logs are locked.  Passes follow each other while there is work;
  :meth:`LogDirMover.kick` (called every second by the broker, and after
  each AlterReplicaLogDirs) starts one when none runs, so a move found at
  startup resumes by itself.
* :func:`describe_log_dirs` builds DescribeLogDirs results (run it off the
  reactor: it asks the file system for each dir's space).
"""

from __future__ import annotations

import logging
import os
from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping
from pathlib import Path
from typing import Any

from twisted.internet import defer
from twisted.python.failure import Failure

from mafka.errors import ErrorCode, KafkaError
from mafka.log.manager import log_future_dir_name
from mafka.topics import TopicPartitionTuple

__all__ = ["LogDirMover", "describe_log_dirs"]

log = logging.getLogger("mafka.broker.log_dir_mover")


_MAX_DIR_NAME = 255
_LONG_MAX = 2**63 - 1


class LogDirMover:
    """Replica moves between log dirs on this broker (see the module docstring).

    Args:
        log_manager: the broker's :class:`~mafka.log.manager.LogManager`.
        replica_manager: whose ``partitions`` switch to the moved logs.
        clock: an ``IReactorTime`` (``callLater``).
        run_blocking: ``(fn, *args) -> Deferred`` running *fn* in a worker thread.
        chunk_bytes: the most copied per step.
        pass_bytes: the most copied by one pass before it yields.
        on_failure: called with the Failure of a copy pass that raised (the
            broker's :meth:`~mafka.background.BackgroundPasses.report_failure`:
            logged with its traceback and counted); logged with its traceback
            by default.  Either way the next pass starts a second later.
    """

    def __init__(
        self,
        log_manager: Any,
        replica_manager: Any,
        clock: Any,
        run_blocking: Callable[..., defer.Deferred],
        *,
        chunk_bytes: int = 1 << 20,
        pass_bytes: int = 64 << 20,
        on_failure: Callable[[Failure], None] | None = None,
    ) -> None:
        self.log_manager = log_manager
        self.replica_manager = replica_manager
        self.clock = clock
        self.run_blocking = run_blocking
        self.chunk_bytes = chunk_bytes
        self.pass_bytes = pass_bytes
        self.on_failure = on_failure
        self.moves_completed = 0
        self._running: defer.Deferred | None = None
        self._timer: Any = None
        self._stopped = False

    # ================================================================== AlterReplicaLogDirs

    def alter_replica_log_dirs(
        self,
        assignments: Mapping[TopicPartitionTuple, str],
        partition_known: Callable[[TopicPartitionTuple], bool],
    ) -> defer.Deferred:
        """Fires with ``{(topic, partition): ErrorCode}`` for each requested destination dir.

        *partition_known* says whether the cluster metadata has the partition
        (it decides between REPLICA_NOT_AVAILABLE and UNKNOWN_TOPIC_OR_PARTITION
        for a partition not hosted here).
        """
        lm = self.log_manager
        errors: dict[TopicPartitionTuple, ErrorCode] = {}
        work: list[tuple[TopicPartitionTuple, Path, bool, bool]] = []
        offline = set(lm.offline_dirs)
        for tp, path in assignments.items():
            d = lm.known_log_dir(path) if os.path.isabs(path) else None
            if len(log_future_dir_name(*tp)) > _MAX_DIR_NAME:
                errors[tp] = ErrorCode.INVALID_TOPIC_EXCEPTION
            elif d is None:
                errors[tp] = ErrorCode.LOG_DIR_NOT_FOUND
            elif d in offline:
                errors[tp] = ErrorCode.KAFKA_STORAGE_ERROR
            else:
                work.append((tp, d, tp in self.replica_manager.partitions, partition_known(tp)))
        if not work:
            return defer.succeed(errors)
        d = self.run_blocking(self._alter_all, work)

        def done(results: dict[TopicPartitionTuple, ErrorCode]) -> dict[TopicPartitionTuple, ErrorCode]:
            errors.update(results)
            self.kick()
            return errors

        return d.addCallback(done)

    def _alter_all(
        self, work: Iterable[tuple[TopicPartitionTuple, Path, bool, bool]]
    ) -> dict[TopicPartitionTuple, ErrorCode]:
        out = {}
        for tp, d, hosted, known in work:
            try:
                out[tp] = self._alter_one(tp, d, hosted, known)
            except KafkaError as exc:
                log.warning("unable to alter the log dir of %s-%d: %s", tp[0], tp[1], exc)
                out[tp] = exc.code
            except Exception:
                log.exception("error while changing the log dir of %s-%d", tp[0], tp[1])
                out[tp] = ErrorCode.UNKNOWN_SERVER_ERROR
        return out

    def _alter_one(self, tp: TopicPartitionTuple, d: Path, hosted: bool, known: bool) -> ErrorCode:
        lm = self.log_manager
        if tp in lm.offline_partitions:
            return ErrorCode.KAFKA_STORAGE_ERROR
        if hosted:
            moving_to = lm.future_log_dir_of(tp)
            if moving_to is not None and moving_to != d:
                log.info("%s-%d: moving to %s instead of %s", tp[0], tp[1], d, moving_to)
                lm.abort_future_log(tp)
        lm.maybe_update_preferred_log_dir(tp, d)
        current = lm.get_log(*tp)
        if not hosted or current is None:
            # Kafka answers NOT_LEADER_OR_FOLLOWER here, sent as REPLICA_NOT_AVAILABLE.
            return (
                ErrorCode.REPLICA_NOT_AVAILABLE if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            )
        if lm.log_dir_of(tp) == d:
            return ErrorCode.NONE
        _, created = lm.get_or_create_future_log(tp, d)
        if created:
            log.info("%s-%d: moving from %s to %s", tp[0], tp[1], lm.log_dir_of(tp), d)
        return ErrorCode.NONE

    # ================================================================== copying

    def kick(self) -> None:
        """Start a copy pass in a worker thread if there is a future log and no pass runs."""
        if self._stopped or self._running is not None or not self.log_manager.future_logs:
            return
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None
        self._running = self.run_blocking(self._pass)
        self._running.addBoth(self._pass_done)

    def _pass_done(self, result: Any) -> None:
        self._running = None
        if self._stopped:
            return
        if isinstance(result, Failure):
            if self.on_failure is not None:
                self.on_failure(result)
            else:
                log.error("replica move pass failed", exc_info=(result.type, result.value,
                                                               result.getTracebackObject()))
            delay = 1.0
        elif result:
            delay = 0.0
        else:
            return
        self._timer = self.clock.callLater(delay, self.kick)

    def _pass(self) -> bool:
        """Copy and swap (worker thread); returns whether the pass stopped with work left."""
        lm = self.log_manager
        budget = self.pass_bytes
        for tp in sorted(lm.future_logs):
            if self._stopped:
                return False
            copied = lm.catch_up_future_log(tp, self.chunk_bytes)
            while copied > 0 and budget > 0 and not self._stopped:
                budget -= copied
                copied = lm.catch_up_future_log(tp, self.chunk_bytes)
            if copied == 0 and not self._stopped:
                try:
                    if lm.replace_current_with_future(tp, self._switcher(tp)):
                        self.moves_completed += 1
                except KafkaError as exc:
                    log.error("%s-%d: the move failed: %s", tp[0], tp[1], exc)
            if budget <= 0:
                return True
        return False

    def _switcher(self, tp: TopicPartitionTuple) -> Callable[[Any, Any], None]:
        """Called by the log manager with both logs locked: the hosted partition takes the new log."""

        def switch(old: Any, new: Any) -> None:
            rm = self.replica_manager
            for holder in (rm.partitions.get(tp), getattr(rm, "_prepared", {}).get(tp)):
                if holder is not None and holder.log is old:
                    holder.replace_log(new)

        return switch

    def stop(self) -> defer.Deferred:
        """No new pass; fires when the running one (which stops between steps) has returned."""
        self._stopped = True
        if self._timer is not None and self._timer.active():
            self._timer.cancel()
        self._timer = None
        if self._running is None:
            return defer.succeed(None)
        waiter: defer.Deferred[None] = defer.Deferred()

        def relay(result: Any) -> Any:
            waiter.callback(None)
            return result

        self._running.addBoth(relay)
        return waiter


# ====================================================================== DescribeLogDirs


def _space(d: Path) -> tuple[int, int]:
    """(total, usable) bytes of the volume holding *d* (Kafka's FileStore, capped at Long.MAX_VALUE)."""
    st = os.statvfs(d)
    total, usable = st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize
    return min(total, _LONG_MAX), min(usable, _LONG_MAX)


def describe_log_dirs(
    log_manager: Any,
    wanted: set[TopicPartitionTuple] | None,
    high_watermarks: Mapping[TopicPartitionTuple, int],
) -> list[dict[str, Any]]:
    """DescribeLogDirs results, one per ``log.dirs`` entry (blocking: run it in a worker thread).

    Args:
        wanted: the partitions asked about; None for all.
        high_watermarks: the hosted partitions' high watermarks (a current
            log's offset lag is max(HW − log end offset, 0), as Kafka).

    An offline dir answers KAFKA_STORAGE_ERROR and nothing else; topics
    with no wanted partition in a dir are left out (Kafka 3's rule).
    """
    by_dir = log_manager.replicas_by_dir()
    currents = log_manager.logs
    results = []
    for d in log_manager.log_dirs:
        replicas = by_dir.get(d)
        if replicas is None:
            results.append(
                {"error_code": ErrorCode.KAFKA_STORAGE_ERROR, "log_dir": str(d), "topics": []}
            )
            continue
        try:
            total, usable = _space(d)
        except OSError as exc:
            log.warning("unable to describe log dir %s: %s", d, exc)
            results.append(
                {"error_code": ErrorCode.KAFKA_STORAGE_ERROR, "log_dir": str(d), "topics": []}
            )
            continue
        topics: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for tp, replica, is_future in replicas:
            if wanted is not None and tp not in wanted:
                continue
            if is_future:
                current = currents.get(tp)
                lag = current.next_offset - replica.next_offset if current is not None else -1
            else:
                hw = high_watermarks.get(tp)
                lag = max(hw - replica.next_offset, 0) if hw is not None else 0
            topics[tp[0]].append(
                {
                    "partition_index": tp[1],
                    "partition_size": replica.size,
                    "offset_lag": lag,
                    "is_future_key": is_future,
                }
            )
        results.append(
            {
                "error_code": ErrorCode.NONE,
                "log_dir": str(d),
                "topics": [{"name": t, "partitions": ps} for t, ps in sorted(topics.items())],
                "total_bytes": total,
                "usable_bytes": usable,
            }
        )
    return results
