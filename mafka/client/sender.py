"""The producer's async engine: partitions, accumulates, sends, retries and reports.

:class:`ProducerEngine` is shared by the synchronous
:class:`~mafka.client.producer.Producer` and the asyncio
:class:`~mafka.client.aio.AIOProducer`.  :meth:`ProducerEngine.append` is
called on the application's thread (it only touches the accumulator, under
its lock); everything else runs on the kernel's loop:

* the send loop wakes when a batch fills, when linger expires or on
  flush, drains ready batches per leader and sends one Produce request per
  broker at a time (``max.in.flight.requests.per.connection`` bounds how
  many are outstanding per connection);
* an idempotent producer (the default) gets a producer id first
  (InitProducerId) and numbers each partition's batches; retries keep the
  numbers, so the broker drops duplicates;
* a transactional producer (``transactional.id``) gets its producer id from
  ``init_transactions()`` and sends a partition's batches — marked
  transactional — only once the partition is registered with the open
  transaction; its :class:`~mafka.client.transactions.TransactionManager`
  (:attr:`ProducerEngine.txn`) does that and the rest of the coordinator's
  side.  The manager owns the producer id and epoch (as in Kafka's Java
  client); the engine asks it — for the id and epoch to number batches under
  (a new one restarts every partition's numbering at 0), whether a partition
  is admitted, whether the queued records must fail — and tells it what
  became of the batches, never the reverse.  A batch given up inside a
  transaction fails the transaction (the application must abort it) instead
  of starting a new producer id;
* every finished batch goes to ``report(batch, base_offset, timestamp_ms,
  error)`` — the face turns that into delivery callbacks or futures.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable
from typing import Any

from mafka.client.accumulator import RecordAccumulator
from mafka.client.aio_util import wait_event
from mafka.client.kafka_error import KafkaError
from mafka.client.kernel import Kernel
from mafka.client.partitioner import PARTITIONERS, StickyPartitioner
from mafka.client.producer_batch import ProducerBatch
from mafka.client.transactions import TransactionManager
from mafka.client.transport import BrokerConnection
from mafka.errors import ErrorCode
from mafka.wire.compression import CompressionType

__all__ = ["ProducerEngine"]

log = logging.getLogger("mafka.client.producer")

PRODUCE = 0
INIT_PRODUCER_ID = 22

Report = Callable[[ProducerBatch, int, int, "KafkaError | None"], None]

_COMPRESSION = {
    "none": CompressionType.NONE,
    "gzip": CompressionType.GZIP,
    "snappy": CompressionType.SNAPPY,
    "lz4": CompressionType.LZ4,
    "zstd": CompressionType.ZSTD,
}

# Errors after which the batch is sent again (Kafka's RetriableException set, for Produce).
_RETRY = {
    ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.LEADER_NOT_AVAILABLE,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.REQUEST_TIMED_OUT,
    ErrorCode.NETWORK_EXCEPTION,
    ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    ErrorCode.KAFKA_STORAGE_ERROR,
    ErrorCode.CORRUPT_MESSAGE,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.FENCED_LEADER_EPOCH,
    ErrorCode.UNKNOWN_LEADER_EPOCH,
}


class ProducerEngine:
    """Producer state and the send loop.  Construct on the kernel's loop thread or before it runs."""

    def __init__(self, kernel: Kernel, report: Report) -> None:
        cfg = kernel.config
        self.kernel = kernel
        self.cfg = cfg
        self.report = report
        self.acks = cfg["acks"]
        self.idempotent = bool(cfg["enable.idempotence"]) and self.acks == -1
        max_in_flight = cfg["max.in.flight.requests.per.connection"]
        if self.idempotent:
            max_in_flight = min(5, max_in_flight)
        self.max_in_flight = max_in_flight
        self.message_max = cfg["message.max.bytes"]
        batch_size = min(cfg["batch.size"], self.message_max)
        self.accumulator = RecordAccumulator(
            batch_size=batch_size,
            batch_messages=cfg["batch.num.messages"],
            linger=cfg["linger.ms"] / 1000.0,
            compression=_COMPRESSION[cfg["compression.type"]],
            max_in_flight=max_in_flight if self.idempotent else 1_000_000,
        )
        self.max_records: int = cfg["queue.buffering.max.messages"]
        self.max_bytes: int = cfg["queue.buffering.max.kbytes"] * 1024
        self.delivery_timeout = cfg["delivery.timeout.ms"] / 1000.0
        self.request_timeout = cfg["request.timeout.ms"] / 1000.0
        self.retries = cfg["retries"]
        self.retry_backoff = cfg["retry.backoff.ms"] / 1000.0
        self.partitioner = PARTITIONERS[cfg["partitioner"]]
        self.sticky = StickyPartitioner()
        # An idempotent producer's own id and epoch (a transactional one's are its manager's).
        self._producer_id = -1
        self._producer_epoch = -1
        # The transactional producer id and epoch the partitions' sequence numbers count under.
        self._txn_numbering = (-1, -1)
        self._pid_ready: asyncio.Event | None = None
        self._wake: asyncio.Event | None = None
        self._in_flight_requests: dict[int, int] = {}
        self._closing = False
        self._wake_scheduled = False
        self._unkeyed: dict[str, tuple[int, int]] = {}  # topic -> (partition, metadata version)
        self.loop: asyncio.AbstractEventLoop | None = None
        self.in_flight_batches = 0
        self.fatal: KafkaError | None = None
        self.transactional_id: str | None = cfg.get("transactional.id")
        #: The transaction side of a transactional producer, else None.
        self.txn: TransactionManager | None = (
            TransactionManager(kernel, wakeup=self.wake) if self.transactional_id is not None else None)

    @property
    def producer_id(self) -> int:
        """The producer id batches are numbered under (-1: none yet): a transactional producer's
        :attr:`txn` owns it; an idempotent one's comes from InitProducerId."""
        return self._producer_id if self.txn is None else self.txn.producer_id

    @property
    def producer_epoch(self) -> int:
        return self._producer_epoch if self.txn is None else self.txn.producer_epoch

    # -- application thread --------------------------------------------------------------

    def choose_partition(self, topic: str, key: bytes | None) -> int | None:
        """The partition for a record of ``topic`` with ``key``; None while the topic is unknown.

        Raises:
            KafkaException-worthy conditions are the caller's; here only metadata is read.
        """
        md = self.kernel.metadata
        if key is None:
            cached = self._unkeyed.get(topic)
            if cached is not None and cached[1] == md.version:
                return cached[0]
        count = md.partition_count(topic)
        if count is None:
            return None
        chosen = self.partitioner(key, count)
        if chosen is not None:
            return chosen
        chosen = self.sticky.partition(topic, count, md.available_partitions(topic) or None)
        if key is None:
            # Unkeyed records go where the sticky partitioner said until its batch fills or
            # the metadata changes: one dict lookup per record instead of the full choice.
            self._unkeyed[topic] = (chosen, md.version)
        return chosen

    def append(self, topic: str, partition: int, timestamp: int, key: bytes | None,
               value: bytes | None, headers: Any, on_delivery: Any) -> None:
        """Appends one record (any thread); wakes the sender when a batch is ready."""
        acc = self.accumulator
        with acc.lock:
            new_batch, full = acc.append(topic, partition, timestamp, key, value, headers, on_delivery)
        if new_batch and self.sticky.current(topic) == partition:
            self._unkeyed.pop(topic, None)
            # The sticky partition's batch filled up and a new one began: unkeyed records
            # move on to another partition (KIP-480's onNewBatch).
            md = self.kernel.metadata
            count = md.partition_count(topic) or 1
            self.sticky.on_new_batch(topic, count, partition, md.available_partitions(topic) or None)
        if (new_batch or full) and self.loop is not None and not self._wake_scheduled:
            self._wake_scheduled = True  # one cross-thread wakeup until the loop ran it
            self.loop.call_soon_threadsafe(self.wake)

    def buffer_full(self) -> bool:
        acc = self.accumulator
        return acc.queued_records >= self.max_records or acc.queued_bytes >= self.max_bytes

    # -- loop side -----------------------------------------------------------------------

    def wake(self) -> None:
        self._wake_scheduled = False
        if self._wake is not None:
            self._wake.set()

    def start(self) -> None:
        """Starts the send loop (call on the loop)."""
        self.loop = asyncio.get_running_loop()
        self._wake = asyncio.Event()
        self._pid_ready = asyncio.Event()
        if not self.idempotent or self.txn is not None:
            # (a transactional producer sends once its manager has an id: see _run)
            self._pid_ready.set()
        self.kernel.spawn(self._run())

    def begin_flush(self) -> None:
        self.accumulator.flushing += 1
        self.wake()

    def end_flush(self) -> None:
        self.accumulator.flushing -= 1

    async def _ensure_pid(self) -> None:
        while self.producer_id < 0 and not self._closing:
            try:
                response = await self.kernel.send_any(
                    INIT_PRODUCER_ID, {"transactional_id": None, "transaction_timeout_ms": 60000}
                )
                if response.error_code == 0:
                    self._producer_id = response.producer_id
                    self._producer_epoch = response.producer_epoch
                    log.debug("producer id %d epoch %d", self.producer_id, self.producer_epoch)
                    break
                log.debug("InitProducerId: error %d", response.error_code)
            except (TimeoutError, ConnectionError) as exc:
                log.debug("InitProducerId: %s", exc)
            await asyncio.sleep(self.retry_backoff)
        assert self._pid_ready is not None
        self._pid_ready.set()

    def _ask_transaction(self, txn: TransactionManager) -> None:
        """What the transaction manager has for the send loop: a new producer id or epoch
        starts every partition's numbering at 0; doomed queued records are failed
        (``_PURGE_QUEUE``); EndTxn waiting is told when no record is left."""
        numbering = (txn.producer_id, txn.producer_epoch)
        if numbering != self._txn_numbering:
            for state in self.accumulator.states.values():
                state.next_sequence = 0
                state.retrying = False
            self._txn_numbering = numbering
        self._purge_if_asked(txn)
        if txn.settling and not self.pending():
            txn.records_settled()

    def _purge_if_asked(self, txn: TransactionManager) -> None:
        if txn.take_purge_request():
            self.purge(in_queue=True)

    def _reset_producer_id(self, code: int = ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER,
                           reason: str = "sequence gap") -> None:
        """Forgets the producer id (a sequence gap or UNKNOWN_PRODUCER_ID): the next sends
        get a new id and every partition's numbering restarts at 0 (Java's epoch bump).

        A transactional producer keeps its id: the transaction fails instead, and its
        abort bumps the epoch (KIP-360)."""
        if self.txn is not None:
            self.txn.batch_failed(code, reason, sent=True)
            self._purge_if_asked(self.txn)
            return
        if self._producer_id < 0:
            return
        log.info("resetting idempotent producer id %d", self._producer_id)
        self._producer_id = -1
        for state in self.accumulator.states.values():
            state.next_sequence = 0
            if state.in_flight:
                # Batches still out under the old id come back first, one at a time, so a
                # later batch is never numbered under the new id ahead of one of them.
                state.retrying = True
        with self.accumulator.lock:
            for queue in self.accumulator.queues.values():
                for batch in queue:
                    batch.base_sequence = -1
        assert self._pid_ready is not None
        self._pid_ready.clear()
        self.kernel.spawn(self._ensure_pid())

    async def _run(self) -> None:
        assert self._wake is not None and self._pid_ready is not None
        if self.idempotent and self.txn is None:
            self.kernel.spawn(self._ensure_pid())
        md = self.kernel.metadata
        txn = self.txn
        admitted = None if txn is None else txn.admitted
        while True:
            self._wake.clear()
            now = time.monotonic()
            for batch in self.accumulator.expire(now, self.delivery_timeout):
                self._finish(batch, -1, -1, KafkaError(KafkaError._MSG_TIMED_OUT))
            if txn is not None:
                self._ask_transaction(txn)
            if txn is not None and txn.sending:
                # Partitions of the open transaction must be registered before their batches go.
                unregistered = [tp for tp in self.accumulator.queued_partitions() if not txn.admitted(tp)]
                if unregistered:
                    txn.want_partitions(unregistered)
            nodes, next_at, unknown = self.accumulator.ready(now, md.leader, admitted)
            if unknown:
                md.want(unknown)
                md.request_update()
                self.kernel.spawn(self._refresh())
            sent = False
            if self._pid_ready.is_set() and (txn is None or txn.producer_id >= 0):
                for node in nodes:
                    if self._in_flight_requests.get(node, 0) >= self.max_in_flight:
                        continue
                    conn = self.kernel.ready_connection(node, "produce", self.wake)
                    if conn is not None:
                        sent = self._send_to(node, conn, now) or sent
            if sent:
                # More batches may be ready behind the ones just sent (a request takes one per
                # partition): look again at once, so up to max.in.flight requests pipeline.
                await asyncio.sleep(0)
                continue
            timeout = None if next_at is None else max(0.0, next_at - time.monotonic())
            if unknown:
                timeout = min(timeout if timeout is not None else 1.0, self.retry_backoff * 2)
            if not self._pid_ready.is_set():
                await wait_event(self._pid_ready, 1.0)
            else:
                await wait_event(self._wake, timeout if timeout is not None else 1.0)

    async def _refresh(self) -> None:
        try:
            await self.kernel.refresh_metadata()
        except (TimeoutError, ConnectionError) as exc:
            log.debug("metadata refresh failed: %s", exc)
        self.wake()

    def _send_to(self, node: int, conn: BrokerConnection, now: float) -> bool:
        """Drains ``node``'s ready batches into one Produce request, written now on ``conn``
        (so requests, and each partition's sequences, reach the broker in drain order).
        Returns whether a request was sent."""
        md = self.kernel.metadata
        txn = self.txn
        partitions = [tp for tp in self.accumulator.queues
                      if md.leader(*tp) == node and (txn is None or txn.admitted(tp))]
        batches = self.accumulator.drain(partitions, self.message_max * 4, now)
        if not batches:
            return False
        transactional = txn is not None
        producer_id, producer_epoch = self.producer_id, self.producer_epoch
        topics: dict[str, list[dict[str, Any]]] = {}
        for batch in batches:
            tp = (batch.topic, batch.partition)
            state = self.accumulator.state(tp)
            if self.idempotent:
                if (batch.base_sequence < 0 or batch.producer_id != producer_id
                        or batch.producer_epoch != producer_epoch):
                    batch.base_sequence = state.next_sequence
                    batch.producer_id = producer_id
                    batch.producer_epoch = producer_epoch
                    state.next_sequence = (state.next_sequence + batch.count) & 0x7FFFFFFF
                data = batch.build(batch.producer_id, batch.producer_epoch, batch.base_sequence, transactional)
                state.in_flight.append(batch)
                state.in_flight.sort(key=lambda b: b.base_sequence)
            else:
                data = batch.build()
                state.in_flight.append(batch)
            batch.attempts += 1
            batch.sent_at = now
            topics.setdefault(batch.topic, []).append({"index": batch.partition, "records": data})
        body = {
            "transactional_id": self.transactional_id,
            "acks": self.acks,
            "timeout_ms": int(self.request_timeout * 1000),
            "topic_data": [{"name": t, "partition_data": parts} for t, parts in topics.items()],
        }
        self._in_flight_requests[node] = self._in_flight_requests.get(node, 0) + 1
        self.in_flight_batches += len(batches)
        future = conn.request(PRODUCE, body, expect_response=self.acks != 0)
        self.kernel.spawn(self._produce(node, conn, future, batches))
        return True

    async def _produce(self, node: int, conn: BrokerConnection, future: asyncio.Future[Any],
                       batches: list[ProducerBatch]) -> None:
        try:
            response = await asyncio.wait_for(future, self.request_timeout + 5.0)
        except (TimeoutError, ConnectionError) as exc:
            response = None
            conn.close()  # later answers on it can no longer be matched to batches safely
            log.debug("produce to %d failed: %s", node, exc)
        finally:
            self._in_flight_requests[node] -= 1
            self.in_flight_batches -= len(batches)
        now = time.monotonic()
        batches = [b for b in batches if not b.purged]
        if response is None and self.acks != 0:
            self.kernel.metadata.request_update()
            for batch in batches:
                self._retry_or_fail(batch, ErrorCode.NETWORK_EXCEPTION, now)
        else:
            results: dict[tuple[str, int], Any] = {}
            if response is not None:
                for t in response.responses:
                    for p in t.partition_responses:
                        results[(t.name, p.index)] = p
            for batch in batches:
                p = results.get((batch.topic, batch.partition))
                if self.acks == 0:
                    self._done_in_flight(batch)
                    self._finish(batch, -1, -1, None)
                elif p is None:
                    self._retry_or_fail(batch, ErrorCode.NETWORK_EXCEPTION, now)
                else:
                    self._handle(batch, p, now)
        self.wake()

    def _done_in_flight(self, batch: ProducerBatch) -> None:
        state = self.accumulator.state((batch.topic, batch.partition))
        try:
            state.in_flight.remove(batch)
        except ValueError:
            pass

    def _handle(self, batch: ProducerBatch, p: Any, now: float) -> None:
        code = p.error_code
        if code:
            log.debug("%s-%d: batch seq %d (%d records, attempt %d) failed: %s", batch.topic, batch.partition,
                      batch.base_sequence, batch.count, batch.attempts, ErrorCode(code).name)
        if code == ErrorCode.NONE or code == ErrorCode.DUPLICATE_SEQUENCE_NUMBER:
            self._done_in_flight(batch)
            state = self.accumulator.state((batch.topic, batch.partition))
            if state.retrying and not state.in_flight:
                state.retrying = any(
                    b.attempts > 0 for b in self.accumulator.queues.get((batch.topic, batch.partition), ())
                )
            timestamp = p.log_append_time_ms if p.log_append_time_ms != -1 else -1
            self._finish(batch, p.base_offset, timestamp, None)
            return
        if code == ErrorCode.MESSAGE_TOO_LARGE and batch.count > 1 and self.txn is None:
            # Split so that only the record that is too large fails.  (Not in a transaction:
            # the failed batch already dooms it, and splitting needs new sequence numbers.)
            self._done_in_flight(batch)
            if self.idempotent:
                # The split batches need sequences of their own; batches sent after this one
                # would now be out of order: numbering restarts under a new producer id.
                self._reset_producer_id()
            for single in reversed(batch.split(now)):
                self.accumulator.reenqueue(single, now)
            return
        if code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER:
            state = self.accumulator.state((batch.topic, batch.partition))
            earlier = any(b.base_sequence < batch.base_sequence for b in state.in_flight if b is not batch)
            if earlier or state.retrying:
                self._retry_or_fail(batch, code, now, retriable=True)
                return
            self._done_in_flight(batch)
            self._finish(batch, -1, -1, KafkaError(code))
            self._reset_producer_id()
            return
        if code == ErrorCode.UNKNOWN_PRODUCER_ID and self.txn is None:
            self._done_in_flight(batch)
            self._reset_producer_id()
            self._requeue(batch, now)
            return
        self._retry_or_fail(batch, code, now)

    def _requeue(self, batch: ProducerBatch, now: float, code: int = ErrorCode.NETWORK_EXCEPTION) -> None:
        if self.txn is not None and not self.txn.sending:
            # The transaction is failing or being aborted: nothing of it is sent again.  Whether
            # the broker wrote the batch is unknown, so its sequence numbers may be a hole: the
            # abort must bump the epoch.
            self._finish(batch, -1, -1, KafkaError(code))
            self.txn.batch_failed(code, f"ProduceRequest for {batch.topic} [{batch.partition}] failed "
                                        f"while the transaction ends", sent=True)
            self._purge_if_asked(self.txn)
            return
        state = self.accumulator.state((batch.topic, batch.partition))
        state.retrying = True
        # A batch numbered under a producer id given up since goes after the batches put back
        # before it (answers come in send order), not by its old sequence.
        stale = self.idempotent and batch.base_sequence >= 0 and batch.producer_id != self.producer_id
        self.accumulator.reenqueue(batch, now + self.retry_backoff, after_put_back=stale)

    def _retry_or_fail(self, batch: ProducerBatch, code: int, now: float,
                       retriable: bool | None = None) -> None:
        self._done_in_flight(batch)
        try:
            if retriable is None:
                retriable = ErrorCode(code) in _RETRY or ErrorCode(code).retriable
            if ErrorCode(code).invalid_metadata:
                self.kernel.metadata.request_update()
                self.kernel.spawn(self._refresh())
        except ValueError:
            retriable = False
        if self.txn is not None and code in (ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.PRODUCER_FENCED):
            retriable = False  # fenced by a newer instance: fatal, below
        expired = now - batch.created >= self.delivery_timeout
        if retriable and not expired and batch.attempts <= self.retries:
            self._requeue(batch, now, code)
            return
        error = KafkaError(KafkaError._MSG_TIMED_OUT) if expired and retriable else KafkaError(code)
        self._finish(batch, -1, -1, error)
        if self.idempotent and batch.base_sequence >= 0:
            # A sent batch given up leaves a hole in the sequence: start a new producer id
            # (a transactional producer: fail the transaction).
            self._reset_producer_id(error.code(), f"ProduceRequest for {batch.topic} [{batch.partition}] "
                                                  f"with {batch.count} message(s) failed: {error.name()}")

    def _finish(self, batch: ProducerBatch, base_offset: int, timestamp: int,
                error: KafkaError | None) -> None:
        self.accumulator.record_done(batch)
        if error is not None and self.txn is not None:
            self.txn.records_failed(batch.count)
        try:
            self.report(batch, base_offset, timestamp, error)
        except Exception:  # noqa: BLE001 - a face's report must not kill the sender
            log.exception("delivery report failed")

    def pending(self) -> int:
        """Records queued or in flight."""
        return self.accumulator.queued_records

    def purge(self, in_queue: bool = True, in_flight: bool = False) -> list[ProducerBatch]:
        """Fails queued batches with _PURGE_QUEUE and (on the loop thread only) batches in flight
        with _PURGE_INFLIGHT, whose answers are then ignored, as librdkafka's purge does.
        Purging sent batches of an idempotent producer leaves sequence gaps, so it starts a new
        producer id."""
        out = self.accumulator.take_all() if in_queue else []
        for batch in out:
            self._finish(batch, -1, -1, KafkaError(KafkaError._PURGE_QUEUE))
        if in_flight:
            flying = [b for state in self.accumulator.states.values() for b in state.in_flight]
            for state in self.accumulator.states.values():
                state.in_flight.clear()
                state.retrying = False
            for batch in flying:
                batch.purged = True
                self._finish(batch, -1, -1, KafkaError(KafkaError._PURGE_INFLIGHT))
            if flying and self.idempotent:
                self._reset_producer_id()
            out += flying
        if out and self.txn is not None:
            self.wake()  # an EndTxn may be waiting for these (the loop tells the manager)
        return out

    async def close(self) -> None:
        self._closing = True
