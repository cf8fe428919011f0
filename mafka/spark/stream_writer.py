"""``writeStream.format("mafka")``: Spark's Kafka sink (at least once) and an exactly-once sink over transactions.

At least once (the default, as Spark's Kafka sink): each task writes its rows
with :func:`mafka.spark.writer.write_rows` (idempotent producer, acks=all) and
fails unless every record was acknowledged; a replayed micro-batch writes its
rows again.

Exactly once (``option("exactlyOnce", "true")``), a two-phase commit over
Spark's commit protocol for Python data sources:

1. *Prepare* (the task's ``write``, on an executor): a transactional producer
   with ``transactional.id`` = ``<prefix>-<Spark partition id>`` (prefix: the
   ``transactionalIdPrefix`` option, or ``mafka-spark-<query id>``; the query
   id survives restarts from the same checkpoint) calls ``init_transactions``,
   which fences an older producer of that id and aborts its open transaction
   (a previous attempt of this batch).  It then reads the id's *marker*: the
   offset committed by the consumer group named like the transactional id on
   partition 0 of the marker topic (the ``topic`` option, else the first row's
   topic).  A marker of ``batchId + 1`` or more means this batch's rows of this
   partition were committed already (the driver committed, then died before
   Spark wrote the batch to its commit log): the task writes nothing.
   Otherwise it writes every row in one transaction, adds the marker
   ``batchId + 1`` to the same transaction (``send_offsets_to_transaction``),
   flushes — every record acknowledged — and returns the producer id and epoch
   **without committing**; the producer is closed, the transaction stays open.
2. *Commit* (the driver's ``commit(messages, batchId)``, after every task of the
   batch succeeded): EndTxn(commit) for each task's transactional id, producer
   id and epoch — the transaction coordinator ends a transaction for whoever
   presents its id and epoch.  ``abort(messages, batchId)`` sends EndTxn(abort).
   A failed task's transaction is aborted by the next ``init_transactions`` of
   its id, or by ``transaction.timeout.ms``.

No Spark import at module level beyond the base classes: the plain logic
(:func:`transactional_id`, :func:`parse_stream_options`, :func:`already_written`)
is unit tested.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from pyspark.sql.datasource import DataSourceStreamWriter, WriterCommitMessage

from mafka.spark.offset_ranges import ReadOptionsError
from mafka.spark.writer import SinkOptions, WriteError, check_sink, produce_rows, write_rows

__all__ = ["MafkaStreamWriter", "PreparedTransaction", "StreamSinkOptions", "parse_stream_options",
           "transactional_id", "already_written", "end_transactions"]

#: Spark's local properties (MicroBatchExecution.BATCH_ID_KEY, StreamExecution.QUERY_ID_KEY)
BATCH_ID_KEY = "streaming.sql.batchId"
QUERY_ID_KEY = "sql.streaming.queryId"

_END_TXN = 26
_END_TXN_RETRIABLE = {14, 15, 16, 51}  # COORDINATOR_LOAD_IN_PROGRESS, _NOT_AVAILABLE, NOT_COORDINATOR, CONCURRENT_TRANSACTIONS


@dataclass(frozen=True)
class StreamSinkOptions:
    sink: SinkOptions
    exactly_once: bool
    prefix: str | None  # transactionalIdPrefix; None: from the query id


def parse_stream_options(options: Mapping[str, str], columns: Iterable[str]) -> tuple[StreamSinkOptions, list[str]]:
    """The batch sink's options and columns plus ``exactlyOnce`` and ``transactionalIdPrefix``.

    Raises:
        ReadOptionsError: naming the option or column.
    """
    rest = {str(k).lower(): str(v) for k, v in options.items()}
    exactly = rest.pop("exactlyonce", "false").strip().lower()
    if exactly not in ("true", "false"):
        raise ReadOptionsError(f"option 'exactlyOnce' must be true or false, not '{exactly}'")
    # Spark's own, passed to the sink too (DataStreamWriter's checkpointLocation and queryName)
    rest.pop("checkpointlocation", None)
    rest.pop("queryname", None)
    prefix = rest.pop("transactionalidprefix", None)
    if prefix is not None and not prefix.strip():
        raise ReadOptionsError("option 'transactionalIdPrefix' must not be empty")
    if "kafka.transactional.id" in rest:
        raise ReadOptionsError("option 'kafka.transactional.id' is not supported: the exactly-once sink derives "
                               "one per task (set 'transactionalIdPrefix')")
    sink, cols = check_sink(rest, columns)
    return StreamSinkOptions(sink, exactly == "true", prefix.strip() if prefix else None), cols


def transactional_id(prefix: str, partition_id: int) -> str:
    """The transactional id (and marker group) of a Spark partition: the same in every batch and attempt."""
    return f"{prefix}-{partition_id}"


def already_written(marker: int, batch_id: int) -> bool:
    """Whether a marker (the committed offset, < 0: none) says batch ``batch_id`` is committed for this id."""
    return marker >= batch_id + 1


class PreparedTransaction(WriterCommitMessage):
    """A task's answer: its open transaction (producer id/epoch ≥ 0) or nothing to commit."""

    def __init__(self, transactional_id: str, producer_id: int, producer_epoch: int, records: int,
                 skipped: bool = False) -> None:
        self.transactional_id = transactional_id
        self.producer_id = producer_id
        self.producer_epoch = producer_epoch
        self.records = records
        self.skipped = skipped

    @property
    def open(self) -> bool:
        return self.producer_id >= 0

    def __repr__(self) -> str:
        return (f"PreparedTransaction({self.transactional_id!r}, pid={self.producer_id}, "
                f"epoch={self.producer_epoch}, records={self.records}, skipped={self.skipped})")


class WriteCount(WriterCommitMessage):
    def __init__(self, records: int) -> None:
        self.records = records


def _task_context() -> tuple[int, int, str | None]:
    """(partition id, batch id, query id) of the running task."""
    from pyspark import TaskContext

    ctx = TaskContext.get()
    if ctx is None:
        raise WriteError("the exactly-once sink's write must run in a Spark task")
    batch = ctx.getLocalProperty(BATCH_ID_KEY)
    if batch is None:
        raise WriteError(f"no micro-batch id ('{BATCH_ID_KEY}') in the task: exactlyOnce needs a micro-batch query")
    return ctx.partitionId(), int(batch), ctx.getLocalProperty(QUERY_ID_KEY)


def prepare_transaction(options: SinkOptions, rows: Iterable[Any], txn_id: str, batch_id: int) -> PreparedTransaction:
    """Phase one (see the module docstring): the rows and the marker in one open, flushed transaction.

    Raises:
        WriteError: a record failed or was not acknowledged; the transaction is aborted.
    """
    from mafka.client import Consumer, Producer, TopicPartition

    conf = {**options.client_config, "bootstrap.servers": options.bootstrap_servers,
            "transactional.id": txn_id, "enable.idempotence": True, "acks": "all"}
    producer = Producer(conf)
    try:
        producer.init_transactions(120)
        it = iter(rows)
        first = next(it, None)
        if first is None:
            return PreparedTransaction(txn_id, -1, -1, 0)
        get = first.asDict() if hasattr(first, "asDict") else first
        marker_topic = options.topic or get.get("topic")
        if not marker_topic:
            raise WriteError("a row has no topic (null 'topic' column and no 'topic' option)")
        marker_tp = TopicPartition(marker_topic, 0)
        consumer = Consumer({**options.client_config, "bootstrap.servers": options.bootstrap_servers,
                             "group.id": txn_id, "enable.auto.commit": False})
        try:
            committed = consumer.committed([marker_tp], timeout=60)
        finally:
            consumer.close()
        if already_written(committed[0].offset, batch_id):
            return PreparedTransaction(txn_id, -1, -1, 0, skipped=True)
        producer.begin_transaction()
        failures: list[str] = []
        try:
            count = produce_rows(producer, options, _chain(first, it), failures)
            producer.send_offsets_to_transaction([TopicPartition(marker_topic, 0, batch_id + 1)], txn_id, 60)
            left = producer.flush(300)
            if left:
                raise WriteError(f"{left} records were not acknowledged within 300 s")
            if failures:
                raise WriteError("records failed: " + "; ".join(failures))
        except BaseException:
            try:
                producer.abort_transaction(30)
            except Exception:  # noqa: BLE001 - the next init_transactions of this id aborts it anyway
                pass
            raise
        producer_id, epoch = producer.producer_id_and_epoch()  # what the driver commits under
        return PreparedTransaction(txn_id, producer_id, epoch, count)
    finally:
        producer.close()


def _chain(first: Any, rest: Iterator[Any]) -> Iterator[Any]:
    yield first
    yield from rest


def end_transactions(options: SinkOptions, prepared: list[PreparedTransaction], committed: bool,
                     timeout: float = 120.0) -> None:
    """Phase two on the driver: EndTxn(commit or abort) for each open transaction.

    Raises:
        WriteError: a transaction could not be ended (fenced, timed out by the coordinator …).
    """
    import asyncio

    from mafka.client.config import parse_config
    from mafka.client.kernel import Kernel
    from mafka.errors import ErrorCode
    from mafka.errors import KafkaError as BrokerError

    todo = [p for p in prepared if p.open]
    if not todo:
        return

    async def end_all() -> None:
        kernel = Kernel(parse_config("producer", {**options.client_config,
                                                  "bootstrap.servers": options.bootstrap_servers}))
        try:
            for p in todo:
                await end_one(kernel, p)
        finally:
            await kernel.close()

    async def end_one(kernel: Any, p: PreparedTransaction) -> None:
        body = {"transactional_id": p.transactional_id, "producer_id": p.producer_id,
                "producer_epoch": p.producer_epoch, "committed": committed}
        deadline = time.monotonic() + timeout
        last = "no answer"
        while time.monotonic() < deadline:
            try:
                node = await kernel.find_coordinator(p.transactional_id, key_type=1)
                response = await kernel.send(node, _END_TXN, body, channel="txn")
            except (BrokerError, ConnectionError, TimeoutError) as exc:
                last = repr(exc)
                await asyncio.sleep(0.2)
                continue
            code = response.error_code
            if code == 0:
                return
            last = ErrorCode(code).name
            if code not in _END_TXN_RETRIABLE:
                break
            await asyncio.sleep(0.1)
        raise WriteError(f"EndTxn({'commit' if committed else 'abort'}) for transactional id "
                         f"'{p.transactional_id}' (producer id {p.producer_id}, epoch {p.producer_epoch}) "
                         f"failed: {last}")

    asyncio.run(end_all())


class MafkaStreamWriter(DataSourceStreamWriter):
    """The streaming sink: made on the driver, pickled to each task; commit/abort in a driver-side worker."""

    def __init__(self, options: dict[str, str], columns: list[str]) -> None:
        self.options, self.columns = parse_stream_options(options, columns)

    def write(self, iterator: Iterator[Any]) -> WriterCommitMessage:
        if not self.options.exactly_once:
            return WriteCount(write_rows(self.options.sink, iterator))
        partition, batch, query = _task_context()
        prefix = self.options.prefix or (f"mafka-spark-{query}" if query else None)
        if prefix is None:
            raise WriteError("the query id is not visible to the task: set option 'transactionalIdPrefix'")
        return prepare_transaction(self.options.sink, iterator, transactional_id(prefix, partition), batch)

    def commit(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803 - Spark's name
        if self.options.exactly_once:
            end_transactions(self.options.sink, [m for m in messages if isinstance(m, PreparedTransaction)], True)

    def abort(self, messages: list[WriterCommitMessage | None], batchId: int) -> None:  # noqa: N803 - Spark's name
        if self.options.exactly_once:
            end_transactions(self.options.sink, [m for m in messages if isinstance(m, PreparedTransaction)], False)
