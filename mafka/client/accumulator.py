"""The producer's record accumulator and per-partition send state.  Pure: no I/O, time injected.

Records are appended (from any thread, under :attr:`RecordAccumulator.lock`)
to the last open :class:`~mafka.client.producer_batch.ProducerBatch` of
their topic-partition.  The sender asks :meth:`RecordAccumulator.drain`
for batches ready to go to one broker: a batch is ready once it is full,
older than ``linger.ms``, or a flush is under way.

Ordering with idempotence (Kafka's Java producer rules): each partition
has at most ``max_in_flight`` batches outstanding, sequences are assigned
at first send and never change for a batch; a batch that must be retried
goes back to the head of its partition's queue in sequence order, and
while a partition has retries pending only one batch of it is in flight,
so the broker sees sequences in order again.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field

from mafka.client.producer_batch import ProducerBatch
from mafka.topics import TopicPartitionTuple

__all__ = ["RecordAccumulator", "PartitionSendState"]


@dataclass
class PartitionSendState:
    """Idempotence and ordering state of one topic-partition.

    Attributes:
        next_sequence: the sequence the next new batch gets.
        in_flight: batches sent and not yet answered, by sequence.
        retrying: batches waiting to be sent again exist.
    """

    next_sequence: int = 0
    in_flight: list[ProducerBatch] = field(default_factory=list)
    retrying: bool = False


class RecordAccumulator:
    """Open batches per partition, with the limits of the producer's config.

    Args:
        batch_size: the byte limit of one batch (``batch.size`` capped by ``message.max.bytes``).
        batch_messages: the record limit of one batch (``batch.num.messages``).
        linger: seconds a batch may wait for more records (``linger.ms``).
        compression: the codec id of new batches.
        max_in_flight: batches in flight per partition (5 with idempotence).
    """

    def __init__(self, batch_size: int, batch_messages: int, linger: float, compression: int,
                 max_in_flight: int) -> None:
        self.batch_size = batch_size
        self.batch_messages = batch_messages
        self.linger = linger
        self.compression = compression
        self.max_in_flight = max_in_flight
        self.lock = threading.Lock()
        self.queues: dict[TopicPartitionTuple, deque[ProducerBatch]] = {}
        self.states: dict[TopicPartitionTuple, PartitionSendState] = {}
        self.flushing = 0
        self.queued_records = 0
        self.queued_bytes = 0

    # -- appending (caller thread, lock held by the caller) ---------------------------------

    def append(self, topic: str, partition: int, timestamp: int, key: bytes | None,
               value: bytes | None, headers: object, on_delivery: object,
               now: float | None = None) -> tuple[bool, bool]:
        """Appends one record; returns ``(new_batch_created, a_batch_is_full)``.  Caller holds :attr:`lock`.

        ``now`` (monotonic seconds) stamps a new batch; read from the clock when omitted,
        and only when a batch is created."""
        tp = (topic, partition)
        queue = self.queues.get(tp)
        if queue is None:
            queue = self.queues[tp] = deque()
        new_batch = False
        batch = queue[-1] if queue else None
        before = batch.payload if batch is not None else 0
        if (
            batch is None
            or batch.attempts > 0 or batch.retry_at > 0.0  # sent or put back (split): closed to appends
            or batch.count >= self.batch_messages
            or not batch.try_append(timestamp, key, value, headers, on_delivery)
        ):
            batch = ProducerBatch(topic, partition, self.batch_size, self.compression,
                                  time.monotonic() if now is None else now)
            batch.try_append(timestamp, key, value, headers, on_delivery)
            queue.append(batch)
            new_batch = True
            before = 0
        self.queued_records += 1
        self.queued_bytes += batch.payload - before
        # Ready now: this record filled its batch (a new batch means the last one was full).
        full = new_batch and len(queue) > 1 or batch.is_full() or batch.count >= self.batch_messages
        return new_batch, full

    # -- draining (sender thread) ----------------------------------------------------------

    def state(self, tp: TopicPartitionTuple) -> PartitionSendState:
        s = self.states.get(tp)
        if s is None:
            s = self.states[tp] = PartitionSendState()
        return s

    def _sendable(self, tp: TopicPartitionTuple, batch: ProducerBatch, now: float) -> bool:
        state = self.states.get(tp)
        if state is not None:
            limit = 1 if state.retrying else self.max_in_flight
            if len(state.in_flight) >= limit:
                return False
        if batch.retry_at > now:
            return False
        queue = self.queues[tp]
        return (
            len(queue) > 1
            or batch.is_full()
            or batch.count >= self.batch_messages
            or batch.attempts > 0
            or self.flushing > 0
            or now - batch.created >= self.linger
        )

    def ready(self, now: float, leader_of: Callable[[str, int], int],
              admitted: Callable[[TopicPartitionTuple], bool] | None = None) -> tuple[set[int], float | None, set[str]]:
        """Which leaders have sendable batches; the soonest time another may become sendable;
        topics of queued batches without a known leader (need metadata).

        With ``admitted`` (a transactional producer: is the partition registered with the
        transaction?) partitions it refuses are left out altogether; whoever admits them
        later wakes the sender."""
        nodes: set[int] = set()
        unknown: set[str] = set()
        next_at: float | None = None
        with self.lock:
            for tp, queue in self.queues.items():
                if not queue or (admitted is not None and not admitted(tp)):
                    continue
                batch = queue[0]
                leader = leader_of(*tp)
                if leader < 0:
                    unknown.add(tp[0])
                    continue
                if self._sendable(tp, batch, now):
                    nodes.add(leader)
                else:
                    at = max(batch.created + self.linger, batch.retry_at)
                    if next_at is None or at < next_at:
                        next_at = at
        return nodes, next_at, unknown

    def drain(self, partitions: Iterable[TopicPartitionTuple], max_bytes: int, now: float) -> list[ProducerBatch]:
        """Takes at most one sendable batch per partition, up to ``max_bytes`` in all."""
        out: list[ProducerBatch] = []
        size = 0
        with self.lock:
            for tp in partitions:
                queue = self.queues.get(tp)
                if not queue:
                    continue
                batch = queue[0]
                if not self._sendable(tp, batch, now):
                    continue
                if out and size + batch.size > max_bytes:
                    break
                queue.popleft()
                size += batch.size
                out.append(batch)
        return out

    def reenqueue(self, batch: ProducerBatch, retry_at: float, after_put_back: bool = False) -> None:
        """Puts a batch that must be sent again back at the head of its queue, in sequence order.

        With ``after_put_back`` (its sequence no longer counts: numbered under a producer id
        given up since) it goes after the batches already put back, ahead of those never sent.
        """
        tp = (batch.topic, batch.partition)
        batch.retry_at = retry_at
        with self.lock:
            queue = self.queues.setdefault(tp, deque())
            if after_put_back:
                at = next((i for i, other in enumerate(queue) if other.retry_at == 0.0), len(queue))
                queue.insert(at, batch)
                return
            if batch.base_sequence < 0:
                queue.appendleft(batch)
                return
            i = 0
            for i, other in enumerate(queue):  # noqa: B007
                if other.base_sequence < 0 or other.base_sequence > batch.base_sequence:
                    break
            else:
                i = len(queue)
            queue.insert(i, batch)

    def expire(self, now: float, timeout: float) -> list[ProducerBatch]:
        """Removes and returns queued batches created more than ``timeout`` seconds ago."""
        out = []
        with self.lock:
            for queue in self.queues.values():
                while queue and now - queue[0].created >= timeout:
                    out.append(queue.popleft())
        return out

    def take_all(self) -> list[ProducerBatch]:
        """Removes every queued batch (purge)."""
        with self.lock:
            out = [b for q in self.queues.values() for b in q]
            for q in self.queues.values():
                q.clear()
        return out

    def queued_partitions(self) -> list[TopicPartitionTuple]:
        """Partitions with batches queued."""
        with self.lock:
            return [tp for tp, queue in self.queues.items() if queue]

    def has_queued(self) -> bool:
        with self.lock:
            return any(self.queues.values())

    def record_done(self, batch: ProducerBatch) -> None:
        """Accounts a batch that left the producer (delivered or failed)."""
        with self.lock:
            self.queued_records -= batch.count
            self.queued_bytes -= batch.payload
