"""The synchronous producer, shaped like confluent-kafka's ``Producer``.

``produce()`` encodes the record into its partition's open batch on the
calling thread and returns; a private loop thread sends batches.  Delivery
reports are queued and served — ``on_delivery(err, msg)`` called — on the
application's thread inside :meth:`Producer.poll` and :meth:`Producer.flush`,
as confluent-kafka does.

With ``transactional.id`` the producer is transactional (KIP-98), with
confluent-kafka's calls and semantics: ``init_transactions()`` once, then
``begin_transaction()``, ``produce()`` …, optionally
``send_offsets_to_transaction()`` (consume-transform-produce), and
``commit_transaction()`` or ``abort_transaction()``.  Records may only be
produced inside a transaction.  Failures raise ``KafkaException`` whose
``KafkaError`` says what to do: ``txn_requires_abort()`` — abort and start
over; ``retriable()`` — call again; ``fatal()`` — the producer is done (e.g.
``_FENCED``: another instance took the transactional id).  Commit and abort
flush first, serving delivery reports on the calling thread, as
confluent-kafka does.
"""

from __future__ import annotations

import threading
import time
import weakref
from collections import deque
from collections.abc import Coroutine, Mapping
from typing import Any

from mafka.client.config import parse_config
from mafka.client.group_metadata import ConsumerGroupMetadata
from mafka.client.kafka_error import KafkaError, KafkaException
from mafka.client.kernel import Kernel
from mafka.client.loop_thread import LoopThread
from mafka.client.message import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    Message,
    TopicPartition,
)
from mafka.client.metadata_view import ClusterMetadataView, list_topics
from mafka.client.producer_batch import ProducerBatch, encoded_record_size
from mafka.client.sender import ProducerEngine
from mafka.client.transactions import TransactionManager

__all__ = ["Producer", "normalize_headers", "to_bytes", "transactional", "offsets_of", "remaining"]


def to_bytes(value: Any, what: str) -> bytes | None:
    """bytes-like or str (UTF-8) or None, as confluent-kafka accepts for keys and values."""
    if value is None or isinstance(value, bytes):
        return value
    if isinstance(value, str):
        return value.encode("utf-8")
    if isinstance(value, (bytearray, memoryview)):
        return bytes(value)
    raise TypeError(f"{what} must be bytes, str or None, not {type(value).__name__}")


def transactional(engine: ProducerEngine) -> TransactionManager:
    """The engine's transaction manager.

    Raises:
        KafkaException: ``_NOT_CONFIGURED`` without ``transactional.id`` (librdkafka's words).
    """
    if engine.txn is None:
        raise KafkaException(KafkaError(KafkaError._NOT_CONFIGURED,
                                        "The Transactional API requires transactional.id to be configured",
                                        retriable=False))
    return engine.txn


def offsets_of(positions: Any, group_metadata: Any) -> tuple[dict[tuple[str, int], tuple[int, int, str | None]],
                                                            ConsumerGroupMetadata]:
    """``send_offsets_to_transaction``'s arguments checked: tp -> (offset, leader epoch, metadata).

    Raises:
        KafkaException: ``_INVALID_ARG`` for missing or malformed arguments.
    """
    if positions is None or group_metadata is None:
        raise KafkaException(KafkaError(KafkaError._INVALID_ARG,
                                        "cgmetadata and offsets are required parameters", retriable=False))
    offsets = {}
    for tp in positions:
        if not isinstance(tp, TopicPartition):
            raise KafkaException(KafkaError(KafkaError._INVALID_ARG, "positions must be a list of TopicPartition",
                                            retriable=False))
        epoch = tp.leader_epoch if tp.leader_epoch is not None else -1
        offsets[(tp.topic, tp.partition)] = (tp.offset, epoch, tp.metadata)
    return offsets, ConsumerGroupMetadata.coerce(group_metadata)


def remaining(deadline: float | None) -> float | None:
    """Seconds left until ``deadline`` (monotonic), never below 0; None for no deadline."""
    return None if deadline is None else max(0.0, deadline - time.monotonic())


def normalize_headers(headers: Any) -> list[tuple[str, bytes | None]] | None:
    """A dict or list of (str, bytes|str|None) pairs → list of (str, bytes|None)."""
    if not headers:
        return None
    items = headers.items() if isinstance(headers, Mapping) else headers
    out = []
    for k, v in items:
        if not isinstance(k, str):
            raise TypeError(f"header key must be str, not {type(k).__name__}")
        out.append((k, to_bytes(v, "header value")))
    return out


def with_delay(headers: list[tuple[str, bytes | None]] | None, delay_ms: int | None,
               deliver_at: int | None) -> list[tuple[str, bytes | None]] | None:
    """``headers`` plus Mafka's delay header for ``delay_ms`` (relative) or ``deliver_at`` (epoch ms).

    Raises:
        ValueError: both given, or a negative value.
    """
    if delay_ms is None and deliver_at is None:
        return headers
    if delay_ms is not None and deliver_at is not None:
        raise ValueError("give delay_ms or deliver_at, not both")
    name, value = ("mafka.delay.ms", delay_ms) if delay_ms is not None else ("mafka.deliver.at", deliver_at)
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise ValueError(f"{name} must be a non-negative int, not {value!r}")
    return [*(headers or ()), (name, str(value).encode())]


class Producer:
    """``Producer(conf)``: confluent-kafka's producer API over Mafka's pure-Python core.

    Raises:
        ConfigError (a ValueError): an unknown key, a bad value (named in the message).
    """

    def __init__(self, conf: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        settings = dict(conf or {})
        settings.update(kwargs)
        self._config = parse_config("producer", settings)
        self._default_cb = self._config.get("on_delivery")
        self._only_errors = bool(self._config.get("delivery.report.only.error", False))
        self._reports: deque[tuple[ProducerBatch, int, int, KafkaError | None]] = deque()
        self._reported = threading.Condition()
        self._closed = False
        self._kernel = Kernel(self._config)  # first: a bad bootstrap.servers raises before a thread exists
        self._thread = LoopThread("mafka-producer")
        # The engine (reachable from the running loop thread) must not keep this object alive:
        # a Producer dropped without close(), as confluent-kafka users do, is then collected
        # and its __del__ stops the thread.
        report_ref = weakref.WeakMethod(self._on_report)

        def report(*args: Any) -> None:
            method = report_ref()
            if method is not None:
                method(*args)

        self._engine = ProducerEngine(self._kernel, report)
        self._thread.run(self._start(), timeout=10)

    async def _start(self) -> None:
        self._engine.start()

    def _on_report(self, batch: ProducerBatch, base_offset: int, timestamp: int,
                   error: KafkaError | None) -> None:
        self._reports.append((batch, base_offset, timestamp, error))
        with self._reported:
            self._reported.notify_all()

    # -- producing -------------------------------------------------------------------------

    def produce(self, topic: str, value: Any = None, key: Any = None, partition: int = -1,
                on_delivery: Any = None, timestamp: int = 0, headers: Any = None,
                callback: Any = None, *, delay_ms: int | None = None, deliver_at: int | None = None) -> None:
        """Queues one record for ``topic``.

        Mafka's delayed messages: ``delay_ms`` (after the broker accepts it) or
        ``deliver_at`` (epoch ms) keeps the record invisible to consumers until
        then; it is acknowledged at once (the ``mafka.delay.ms`` /
        ``mafka.deliver.at`` header any Kafka client can set).

        Raises:
            ValueError: both ``delay_ms`` and ``deliver_at``, or a negative one.
            BufferError: the local queue is full (``queue.buffering.max.messages`` /
                ``queue.buffering.max.kbytes``); call :meth:`poll` and try again.
            KafkaException: MSG_SIZE_TOO_LARGE for a record over ``message.max.bytes``;
                _UNKNOWN_PARTITION for a partition the topic does not have.
            TypeError: key/value/headers of the wrong type.
        """
        if self._closed:
            raise RuntimeError("Producer has been closed")
        if self._engine.txn is not None:
            self._engine.txn.check_produce()
        if type(value) is not bytes:
            value = to_bytes(value, "value")
        if key is not None and type(key) is not bytes:
            key = to_bytes(key, "key")
        hdrs = normalize_headers(headers) if headers else None
        if delay_ms is not None or deliver_at is not None:
            hdrs = with_delay(hdrs, delay_ms, deliver_at)
        cb = on_delivery or callback or self._default_cb
        engine = self._engine
        if engine.buffer_full():
            raise BufferError("Local: Queue full")
        if (len(value) if value else 0) + (len(key) if key else 0) > engine.message_max - 200 and \
                encoded_record_size(key, value, hdrs) - 30 + 61 > engine.message_max:
            raise KafkaException(KafkaError.MSG_SIZE_TOO_LARGE, "Broker: Message size too large")
        if not timestamp:
            timestamp = int(time.time() * 1000)
        if partition < 0:
            chosen = engine.choose_partition(topic, key)
            if chosen is None:
                chosen = self._wait_partition(topic, key)
            partition = chosen
        else:
            count = self._kernel.metadata.partition_count(topic)
            if count is not None and partition >= count:
                raise KafkaException(KafkaError._UNKNOWN_PARTITION)
        engine.append(topic, partition, timestamp, key, value, hdrs, cb)

    def _wait_partition(self, topic: str, key: bytes | None) -> int:
        """Blocks (bounded by the delivery timeout) until ``topic``'s partitions are known."""
        deadline = time.monotonic() + min(10.0, self._engine.delivery_timeout)
        while True:
            try:
                self._thread.run(self._kernel.metadata_for([topic], timeout=5.0), timeout=6.0)
            except (ConnectionError, TimeoutError):
                pass
            chosen = self._engine.choose_partition(topic, key)
            if chosen is not None:
                return chosen
            if time.monotonic() >= deadline:
                code = self._kernel.metadata.topic_error(topic) or KafkaError._UNKNOWN_TOPIC
                raise KafkaException(KafkaError(code))
            time.sleep(0.1)

    # -- delivery reports --------------------------------------------------------------------

    def poll(self, timeout: float | None = None) -> int:
        """Serves queued delivery reports (calling ``on_delivery``); waits up to ``timeout`` for one.

        Returns:
            The number of reports served (records, as confluent-kafka counts events).
        """
        if not self._reports and timeout:
            with self._reported:
                if not self._reports:
                    self._reported.wait(None if timeout < 0 else timeout)
        return self._serve()

    def _serve(self) -> int:
        served = 0
        reports = self._reports
        only_errors = self._only_errors
        while reports:
            batch, base_offset, timestamp, error = reports.popleft()
            ts_type = TIMESTAMP_LOG_APPEND_TIME if timestamp != -1 else TIMESTAMP_CREATE_TIME
            topic, partition = batch.topic, batch.partition
            for i, (cb, key, value, ts, hdrs) in enumerate(batch.records):
                served += 1
                if cb is None or (only_errors and error is None):
                    continue
                offset = base_offset + i if base_offset >= 0 else -1001
                msg = Message(topic, partition, offset, key, value, hdrs, ts_type,
                              timestamp if timestamp != -1 else ts, error)
                cb(error, msg)
        return served

    def flush(self, timeout: float | None = None) -> int:
        """Sends everything queued and serves the reports; returns records still queued."""
        deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        self._thread.call_soon(self._engine.begin_flush)
        try:
            while True:
                self._serve()
                if self._engine.pending() == 0 and not self._reports:
                    return 0
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return self._engine.pending()
                with self._reported:
                    if not self._reports:
                        self._reported.wait(0.1 if left is None else min(0.1, left))
        finally:
            self._thread.call_soon(self._engine.end_flush)

    def __len__(self) -> int:
        return self._engine.pending() + sum(r[0].count for r in list(self._reports))

    def purge(self, in_queue: bool = True, in_flight: bool = True, blocking: bool = True) -> None:
        """Fails queued records with _PURGE_QUEUE and records in flight with _PURGE_INFLIGHT
        (their reports are served by the next poll; a purged record may still have been written)."""
        async def purge() -> None:
            self._engine.purge(in_queue, in_flight)

        self._thread.run(purge(), timeout=10)

    # -- transactions ------------------------------------------------------------------------

    def _txn_run(self, coro: Coroutine[Any, Any, None]) -> None:
        # The coroutine bounds itself by the call's timeout (the work may go on in the background).
        self._thread.run(coro)

    def producer_id_and_epoch(self) -> tuple[int, int]:
        """Mafka's extension: this transactional producer's id and epoch (-1, -1 before
        ``init_transactions``) — what another process needs to end the open transaction on its
        behalf with EndTxn, as mafka.spark's exactly-once sink does from Spark's driver.

        Raises:
            KafkaException: ``_NOT_CONFIGURED`` without ``transactional.id``.
        """
        txn = transactional(self._engine)
        return txn.producer_id, txn.producer_epoch

    def init_transactions(self, timeout: float | None = None) -> None:
        """Gets the producer id for ``transactional.id``, fencing older instances and aborting
        their open transaction.  ``timeout`` None or negative: 2 × ``transaction.timeout.ms``.

        Raises:
            KafkaException: retriable (``_TIMED_OUT`` … — call again to resume), fatal, or
                ``_NOT_CONFIGURED`` without ``transactional.id``.
        """
        txn = transactional(self._engine)
        with txn.api.call("init_transactions", resumable=True):
            self._txn_run(txn.init_transactions(timeout))

    def begin_transaction(self) -> None:
        """Starts a transaction; ``produce()`` is allowed until commit or abort.

        Raises:
            KafkaException: ``_STATE`` if not ready (not initialized, or a transaction is open).
        """
        txn = transactional(self._engine)
        with txn.api.call("begin_transaction"):
            self._txn_run(txn.begin_transaction())

    def send_offsets_to_transaction(self, positions: list[TopicPartition], group_metadata: Any,
                                    timeout: float | None = None) -> None:
        """Commits a consumer's positions (the next offsets to read) with the transaction.

        ``group_metadata`` is the consumer's ``consumer_group_metadata()`` (confluent-kafka's
        serialized form works too).  Offsets below 0 are ignored.  ``timeout`` is capped
        by ``transaction.timeout.ms``.

        Raises:
            KafkaException: abortable (``txn_requires_abort()``), retriable, or fatal errors.
        """
        txn = transactional(self._engine)
        offsets, group = offsets_of(positions, group_metadata)
        with txn.api.call("send_offsets_to_transaction"):
            self._txn_run(txn.send_offsets_to_transaction(offsets, group, timeout))

    def commit_transaction(self, timeout: float | None = None) -> None:
        """Flushes the transaction's records (serving their delivery reports), then commits.

        Raises:
            KafkaException: retriable ``_TIMED_OUT`` (call again to resume); an abortable
                error (``txn_requires_abort()``: records failed, or the commit did) —
                call :meth:`abort_transaction`; a fatal error.
        """
        txn = transactional(self._engine)
        deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        with txn.api.call("commit_transaction", resumable=True):
            self._txn_run(txn.begin_commit())
            left = self.flush(-1 if deadline is None else remaining(deadline))
            if left:
                raise KafkaException(KafkaError(
                    KafkaError._TIMED_OUT, f"Failed to flush all outstanding messages within the API timeout: "
                    f"{left} message(s) remaining", retriable=True))
            self._txn_run(txn.commit_transaction(remaining(deadline)))

    def abort_transaction(self, timeout: float | None = None) -> None:
        """Fails the queued records (``_PURGE_QUEUE``), waits for those in flight, then aborts.

        Raises:
            KafkaException: retriable ``_TIMED_OUT`` (call again to resume); a fatal error.
        """
        txn = transactional(self._engine)
        deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        with txn.api.call("abort_transaction", resumable=True):
            self._txn_run(txn.begin_abort())
            left = self.flush(-1 if deadline is None else remaining(deadline))
            if left:
                raise KafkaException(KafkaError(
                    KafkaError._TIMED_OUT, f"Failed to flush all outstanding messages within the API timeout: "
                    f"{left} message(s) remaining", retriable=True))
            self._txn_run(txn.abort_transaction(remaining(deadline)))

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadataView:
        """Cluster metadata, confluent-kafka's ``ClusterMetadata`` shape."""
        return list_topics(self._thread, self._kernel, topic, timeout)

    def close(self, timeout: float = 5.0) -> None:
        """Stops the loop thread and closes sockets (does not flush; call :meth:`flush` first)."""
        if self._closed:
            return
        self._closed = True
        try:
            self._thread.run(self._kernel.close(), timeout=timeout)
        except (TimeoutError, RuntimeError):
            pass
        self._thread.stop(timeout)

    def __enter__(self) -> Producer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.flush(5.0)
        self.close()

    def __del__(self) -> None:
        try:
            if not self._closed:
                self._thread.stop(1.0)
        except Exception:  # noqa: BLE001 - interpreter teardown
            pass
