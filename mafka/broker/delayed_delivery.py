"""Delivers the delayed messages of the partitions this broker leads, at their due time (Twisted edge).

Every ``tick`` (20 ms; the reactor's timer) it walks the partitions led here
that hold a delay index (:mod:`mafka.delayed`): it loads the time buckets that
start within :data:`LOOKAHEAD_MS` into the index's timing wheel (the bucket
files are read in a worker thread: a minute's bucket can hold megabytes), takes what is
due, and for each due group reads its envelope from the log and appends the
delivery batch as leader (acks 1: the delivery is replicated as any batch is;
if this leader fails before its followers have it, the new leader's index
still has the group pending and delivers it — exactly once in the log the
consumers read, below the high watermark).  A partition led no longer has its
wheel emptied; its index keeps following the log as a follower.

It ticks only once a partition here holds a delay index (the replica manager's
``on_delays`` calls :meth:`DelayedDelivery.wake`): a broker that never saw a delayed
message does not wake 50 times a second for nothing.

Every :data:`CHECKPOINT_MS` the indexes are flushed, fsynced (in a thread) and
checkpointed, and the files of buckets delivered below the high watermark go.
Figures: ``delivered`` groups and records, and the lateness of each delivery
(append time − due time) for :meth:`lateness_percentiles`.
"""

from __future__ import annotations

import logging
import os
from collections import deque
from collections.abc import Callable
from typing import Any

from twisted.internet import defer, threads

from mafka.delayed.checks import Check, HalfChecks
from mafka.delayed.envelope import Envelope, cancel_batch, delivery_batch, read_envelope
from mafka.delayed.headers import HALF_HEADER, TXN_ID_HEADER
from mafka.delayed.index import DelayIndex, Pending
from mafka.errors import ErrorCode, KafkaError, NotLeaderOrFollowerError, OffsetOutOfRangeError
from mafka.wire.batch import BatchHeader
from mafka.wire.records import Record, decode_batch

__all__ = ["DelayedDelivery", "retention_bound"]

log = logging.getLogger(__name__)

TICK_MS = 20
LOOKAHEAD_MS = 120_000
CHECKPOINT_MS = 10_000
RETRY_MS = 500


def retention_bound(partition: Any) -> int:
    """Where retention may delete up to: the HW, or the first envelope below it whose records are still pending."""
    first = partition.delays.index.first_pending_envelope_offset() if partition.delays is not None else None
    return partition.high_watermark if first is None else min(partition.high_watermark, first)


class DelayedDelivery:
    """The delivery loop over one broker's :class:`~mafka.broker.replica_manager.ReplicaManager`."""

    def __init__(self, replica_manager: Any,
                 run_in_thread: Callable[..., defer.Deferred] = threads.deferToThread) -> None:
        """``run_in_thread`` runs a bucket file read off the reactor (unit tests pass a synchronous one)."""
        self.rm = replica_manager
        self.run_in_thread = run_in_thread
        self.delivered_groups = 0
        self.delivered_records = 0
        self.lost_groups = 0
        #: lateness (ms) of the most recent deliveries
        self.lateness: deque[int] = deque(maxlen=100_000)
        self._last_checkpoint = 0
        self._checkpointing = False
        #: local-transaction half messages waiting for their producer group's answer
        self.checks = HalfChecks()
        self._background: Any = None
        self._woken = False
        self._pass: Any = None

    def run_with(self, background: Any) -> None:
        """Tick as a pass of ``background`` (a :class:`~mafka.background.BackgroundPasses`) from the
        first :meth:`wake` on (at once if that came first)."""
        self._background = background
        if self._woken:
            self._start()

    def wake(self) -> None:
        """A partition here holds delayed messages: start ticking (idempotent; call on the reactor)."""
        self._woken = True
        if self._background is not None:
            self._start()

    @property
    def ticking(self) -> bool:
        return self._pass is not None

    def _start(self) -> None:
        if self._pass is None:
            self._pass = self._background.every("delayed-delivery", TICK_MS / 1000, self.tick, first_delay_s=0)

    def pending(self) -> dict[tuple[str, int], tuple[int, int]]:
        """(topic, partition) → (pending groups, pending records), for every replica with a delay index."""
        return {tp: (p.delays.index.pending_groups(), p.delays.index.pending_records())
                for tp, p in list(self.rm.partitions.items()) if p.delays is not None}

    def lateness_percentiles(self, *qs: float) -> list[int | None]:
        data = sorted(self.lateness)
        return [data[min(len(data) - 1, int(q * len(data)))] if data else None for q in qs]

    def tick(self) -> None:
        now = self.rm.now_ms()
        for tp, partition in list(self.rm.partitions.items()):
            # One partition that raises must not keep the others' messages from delivery.
            try:
                self._tick_partition(tp, partition, now)
            except Exception:
                log.exception("%s-%d: delayed delivery failed; the other partitions go on", *tp)
        if now - self._last_checkpoint >= CHECKPOINT_MS and not self._checkpointing:
            self._last_checkpoint = now
            self._checkpoint()

    def _tick_partition(self, tp: tuple[str, int], partition: Any, now: int) -> None:
        replica = partition.delays
        if replica is None:
            return
        idx = replica.index
        if not partition.is_leader:
            if idx.loaded:
                idx.unload()
            return
        idx.half_check_ms = partition.log.config.mafka_txn_check_interval_ms
        nxt = idx.next_load_ms()
        if nxt is not None and nxt < now + LOOKAHEAD_MS:
            self._load(tp, idx, now + LOOKAHEAD_MS)
        for p in idx.due(now):
            if p.half:
                self._check_back(tp, partition, p, now)
            elif not self._deliver(tp, partition, p, now):
                break

    def _load(self, tp: tuple[str, int], idx: DelayIndex, until_ms: int) -> None:
        """Loads the buckets starting before ``until_ms``: files read in a thread, the wheel filled here."""
        job = idx.begin_load(until_ms)
        if job is None:
            return

        def failed(failure: Any) -> None:
            idx.loading.difference_update(start for start, _, _ in job.buckets)  # chosen again next tick
            log.warning("%s-%d: loading delayed buckets failed: %s", tp[0], tp[1], failure.getErrorMessage())

        d = self.run_in_thread(job.read)
        d.addCallback(idx.finish_load)
        d.addErrback(failed)

    @staticmethod
    def _envelope(partition: Any, envelope_offset: int) -> Envelope:
        fetched = partition.log.read(envelope_offset, 1)
        if fetched.region is None:
            raise OffsetOutOfRangeError(f"no batch at {envelope_offset}")
        data = fetched.region.read()
        return read_envelope(data[:BatchHeader(data).size])

    def _deliver(self, tp: tuple[str, int], partition: Any, p: Pending, now: int) -> bool:
        """Appends one due group; False when the partition cannot take more now (not leader, storage)."""
        idx = partition.delays.index
        try:
            env = self._envelope(partition, p.envelope_offset)
            group = next(g for g in env.groups() if p.envelope_offset + g.first_delta == p.original_offset)
            batch = delivery_batch(env, group)
            with self.rm.log_manager.log_io(tp):
                partition.append_as_leader(batch, required_acks=1, now_ms=now, origin="delayed")
        except NotLeaderOrFollowerError:
            return False
        except (OffsetOutOfRangeError, StopIteration) as exc:
            # Retention or DeleteRecords took the envelope: it cannot be delivered any more.
            self.lost_groups += 1
            log.error("%s-%d: delayed group at offset %d cannot be delivered: %s", tp[0], tp[1],
                      p.original_offset, exc)
            idx.delivery_appended(p.due_ms, p.original_offset, -1, p.count)
            return True
        except (KafkaError, OSError) as exc:
            log.warning("%s-%d: delivering the delayed group at offset %d failed (%s); retrying in %d ms",
                        tp[0], tp[1], p.original_offset, exc, RETRY_MS)
            idx.retry(p, now + RETRY_MS)
            return False
        self.rm._wake(tp)
        self.delivered_groups += 1
        self.delivered_records += p.count
        self.lateness.append(max(0, self.rm.now_ms() - p.due_ms))
        return True

    # ------------------------------------------------------------------ half messages

    def _check_back(self, tp: tuple[str, int], partition: Any, p: Pending, now: int) -> None:
        """A half message is due for a check: queue it for its group, or apply the default after the last one."""
        config = partition.log.config
        idx = partition.delays.index
        try:
            env = self._envelope(partition, p.envelope_offset)
            first = decode_batch(env.original).records[0]
        except (KafkaError, OSError, ValueError) as exc:
            log.warning("%s-%d: half message at %d unreadable (%s); checking again later", tp[0], tp[1],
                        p.original_offset, exc)
            idx.retry(p, now + config.mafka_txn_check_interval_ms)
            return
        assert isinstance(first, Record)
        headers = dict(first.headers)
        group = (headers.get(HALF_HEADER) or b"").decode("utf-8", "replace")
        times = self.checks.times_checked(tp[0], tp[1], p.original_offset)
        if times >= config.mafka_txn_check_max_times:
            action = config.mafka_txn_check_default_action
            log.warning("%s-%d: half message at offset %d of producer group %r unresolved after %d check-backs; "
                        "mafka.txn.check.default.action=%s", tp[0], tp[1], p.original_offset, group, times, action)
            self._resolve_now(tp, partition, p, env, commit=action == "commit", now=now)
            return
        txn_id = (headers.get(TXN_ID_HEADER) or b"").decode("utf-8", "replace")
        self.checks.queue(group, Check(tp[0], tp[1], p.original_offset, txn_id, first.key, first.value,
                                       first.headers, times))
        idx.retry(p, now + config.mafka_txn_check_interval_ms)

    def _resolve_now(self, tp: tuple[str, int], partition: Any, p: Pending, env: Envelope, *, commit: bool,
                     now: int) -> Any:
        """Appends the delivery (commit) or the rollback of ``p`` as leader; the log's append info."""
        if commit:
            group = next(g for g in env.groups() if p.envelope_offset + g.first_delta == p.original_offset)
            batch = delivery_batch(env, group)
        else:
            batch = cancel_batch(p.original_offset, p.due_ms, p.count, now_ms=now)
        with self.rm.log_manager.log_io(tp):
            info = partition.append_as_leader(batch, now_ms=now, origin="delayed")
        self.rm._wake(tp)
        self.checks.resolved(tp[0], tp[1], p.original_offset)
        if commit:
            self.delivered_groups += 1
            self.delivered_records += p.count
        return info

    def take_checks(self, group: str, most: int) -> list[Check]:
        """MafkaTxnChecks: up to ``most`` checks for producer group ``group`` from the partitions led here."""
        return self.checks.take(group, most)

    def end_half(self, topic: str, index: int, offset: int, commit: bool, timeout_ms: int) -> defer.Deferred:
        """MafkaEndHalf: commits or rolls back the half message acknowledged at ``offset`` — or, with
        ``commit`` false, cancels the delayed message acknowledged there; fires with an ErrorCode once the
        outcome is replicated (acks=all).

        NONE also for a message already resolved the same way (the answer to a retry);
        INVALID_TXN_STATE when ``offset`` holds no such message, when it was resolved the other way
        (a delayed message delivered before its cancel came), or for a commit of a delayed message;
        NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS and the replication wait's errors as for a produce.
        """
        from mafka.broker.replica_manager import ProduceResult

        tp = (topic, index)
        now = self.rm.now_ms()
        try:
            partition = self.rm.leader_partition(topic, index)
            env = self._envelope(partition, offset)
        except KafkaError as exc:
            return defer.succeed(exc.code)
        except Exception:  # noqa: BLE001 - nothing readable there: not a half message
            return defer.succeed(ErrorCode.INVALID_TXN_STATE)
        group = next((g for g in env.groups() if env.base_offset + g.first_delta == offset), None)
        if group is None or partition.delays is None or (commit and not env.half):
            return defer.succeed(ErrorCode.INVALID_TXN_STATE)
        p = Pending(group.due_ms, offset, env.base_offset, len(group.deltas), env.half)
        state = partition.delays.index.state_of(offset, group.due_ms)
        if state in ("delivered", "cancelled"):
            return defer.succeed(ErrorCode.NONE if (state == "delivered") == commit else ErrorCode.INVALID_TXN_STATE)
        if state != "pending":
            return defer.succeed(ErrorCode.INVALID_TXN_STATE)
        min_isr = self.rm.min_insync_replicas(topic)
        if len(partition.isr) < min_isr:
            return defer.succeed(ErrorCode.NOT_ENOUGH_REPLICAS)
        try:
            info = self._resolve_now(tp, partition, p, env, commit=commit, now=now)
        except KafkaError as exc:
            return defer.succeed(exc.code)
        waiting = {tp: ProduceResult(ErrorCode.NONE, info.first_offset, -1, info.log_start_offset, info.last_offset)}
        d = self.rm._await_replication(waiting, timeout_ms)
        return d.addCallback(lambda done: done[tp].error)

    def _checkpoint(self) -> None:
        """Flushes every index here (reactor), fsyncs and checkpoints them (thread), drops delivered buckets."""
        jobs = []
        for _tp, partition in list(self.rm.partitions.items()):
            if partition.delays is None:
                continue
            idx = partition.delays.index
            idx.release_delivered(partition.high_watermark, self.rm.now_ms())
            idx.flush()
            jobs.append((idx, partition.log.next_offset, idx.generation, [f.fileno() for f in idx._files.values()]))
        if not jobs:
            return

        def sync() -> None:
            for idx, offset, generation, fds in jobs:
                for fd in fds:
                    try:
                        os.fsync(fd)
                    except OSError:
                        pass  # closed meanwhile (truncated or released): its entries are safe or gone
                idx._write_checkpoint(offset, generation)

        self._checkpointing = True
        d = threads.deferToThread(sync)
        d.addErrback(lambda f: log.warning("delay index checkpoint failed: %s", f.getErrorMessage()))
        d.addBoth(lambda _: setattr(self, "_checkpointing", False))
