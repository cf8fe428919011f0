"""Reading exactly one :class:`~mafka.spark.offset_ranges.OffsetRange` with ``mafka.client`` (runs in Spark tasks).

A reader is a consumer with no group (nothing is committed) assigned to the
range's partition at ``from_offset``; it yields the records with offsets in
``[from_offset, until_offset)`` and stops once its position reaches
``until_offset`` — also when the last offsets hold no record (compaction,
transaction markers).  A retried task reads the same range again and gets
the same records.

Records gone since planning (retention, DeleteRecords) show up as an
out-of-range fetch position: with ``fail_on_data_loss`` (Spark's
``failOnDataLoss``, the default) the read fails naming the partition and
offsets; otherwise it logs, moves to the log start and reads what is left of
the range.  No progress for ``poll_timeout`` seconds (Spark's
``kafkaConsumer.pollTimeoutMs``) fails the read rather than hanging the task.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Iterator, Mapping
from typing import Any

from mafka.client.consumer import Consumer
from mafka.client.kafka_error import KafkaError
from mafka.client.message import Message, TopicPartition
from mafka.spark.offset_ranges import OffsetRange

__all__ = ["read_range", "read_range_arrow", "DataLossError", "ReadTimeoutError"]

log = logging.getLogger("mafka.spark")


class DataLossError(RuntimeError):
    """Records of the range were deleted before they could be read (``failOnDataLoss=true``)."""


class ReadTimeoutError(TimeoutError):
    """The range made no progress for ``kafkaConsumer.pollTimeoutMs``."""


def _consumer(bootstrap_servers: str, r: OffsetRange, client_config: Mapping[str, Any] | None) -> Consumer:
    conf = {
        # The range is bounded: fetch no further ahead than it reaches.
        "queued.max.messages.kbytes": max(1024, min(65536, r.count() // 8)),
        # One partition per reader: large fetches mean fewer round trips and decoder calls.
        "max.partition.fetch.bytes": 4 * 1024 * 1024,
        **(client_config or {}),
        # The reader's own: where to read, no commits, and out-of-range positions reported.
        "bootstrap.servers": bootstrap_servers,
        "enable.auto.commit": False,
        "auto.offset.reset": "error",
    }
    conf.pop("group.id", None)
    return Consumer(conf)


class _Progress:
    """A range's read position, and the no-progress timeout (``kafkaConsumer.pollTimeoutMs``)."""

    def __init__(self, r: OffsetRange, timeout: float) -> None:
        self.r = r
        self.position = r.from_offset
        self.timeout = timeout
        self._at = time.monotonic()

    @property
    def done(self) -> bool:
        return self.position >= self.r.until_offset

    def moved_to(self, offset: int) -> None:
        """The position is now ``offset`` (a reset or skip counts as progress too)."""
        self.position = offset
        self._at = time.monotonic()

    def check(self, consumer: Consumer) -> None:
        """After a poll that returned nothing: the position may have moved alone (past trailing
        markers or compacted-away offsets); otherwise fail once ``timeout`` has passed."""
        r = self.r
        now_at = consumer.position([TopicPartition(r.topic, r.partition)])[0].offset
        if now_at > self.position:
            self.moved_to(now_at)
        elif time.monotonic() - self._at > self.timeout:
            raise ReadTimeoutError(
                f"{r.topic}-{r.partition}: no records for {self.timeout:.0f} s at offset {self.position} "
                f"(reading up to {r.until_offset}; kafkaConsumer.pollTimeoutMs)")


def read_range(bootstrap_servers: str, r: OffsetRange, client_config: Mapping[str, Any] | None = None, *,
               fail_on_data_loss: bool = True, poll_timeout: float = 120.0,
               batch: int = 10_000) -> Iterator[Message]:
    """Yields the records of ``r`` in offset order (see the module docstring).

    Raises:
        DataLossError: part of the range is gone and ``fail_on_data_loss``.
        ReadTimeoutError: no progress for ``poll_timeout`` seconds.
    """
    if r.count() <= 0:
        return
    consumer = _consumer(bootstrap_servers, r, client_config)
    progress = _Progress(r, poll_timeout)
    try:
        consumer.assign([TopicPartition(r.topic, r.partition, r.from_offset)])
        while not progress.done:
            messages = consumer.consume(batch, 1.0)
            if len(messages) == 1 and messages[0].error() is not None:
                progress.moved_to(_on_error(consumer, r, messages[0], progress.position, fail_on_data_loss))
            elif messages:
                last = _record_offset(messages[-1])
                if last >= r.until_offset - 1:
                    yield from (m for m in messages if _record_offset(m) < r.until_offset)
                    return
                yield from messages
                progress.moved_to(last + 1)
            else:
                progress.check(consumer)
    finally:
        consumer.close()


def read_range_arrow(bootstrap_servers: str, r: OffsetRange, client_config: Mapping[str, Any] | None = None, *,
                     include_headers: bool = False, fail_on_data_loss: bool = True,
                     poll_timeout: float = 120.0) -> Iterator[Any]:
    """Yields the records of ``r`` as Arrow record batches (the Kafka source's columns), in offset order.

    The same contract as :func:`read_range`, decoded by
    :mod:`mafka.spark.columnar` from the fetched record sets.
    """
    from mafka.spark.columnar import record_set_to_arrow

    if r.count() <= 0:
        return
    consumer = _consumer(bootstrap_servers, r, client_config)
    progress = _Progress(r, poll_timeout)
    try:
        consumer.assign([TopicPartition(r.topic, r.partition, r.from_offset)])
        while not progress.done:
            sets, error = consumer.consume_record_sets(16, 1.0)
            if error is not None:
                progress.moved_to(_on_error(consumer, r, error, progress.position, fail_on_data_loss))
                continue
            for _, records, aborted, min_offset in sets:
                batch = record_set_to_arrow(r.topic, r.partition, records, max(min_offset, r.from_offset),
                                            r.until_offset, include_headers=include_headers, aborted=aborted)
                if batch is not None and batch.num_rows:
                    yield batch
            progress.check(consumer)
    finally:
        consumer.close()


def _record_offset(m: Message) -> int:
    """The offset of a consumed record (only error events have none)."""
    offset = m.offset()
    assert offset is not None
    return offset


def _on_error(consumer: Consumer, r: OffsetRange, event: Message, position: int, fail_on_data_loss: bool) -> int:
    error = event.error()
    if error.code() not in (KafkaError.OFFSET_OUT_OF_RANGE, KafkaError._LOG_TRUNCATION):
        raise RuntimeError(f"{r.topic}-{r.partition}: reading offsets {position} to {r.until_offset}: {error}")
    message = (f"{r.topic}-{r.partition}: offsets from {position} of the range {r.from_offset}-{r.until_offset} "
               f"are no longer in the log ({error.name()})")
    if fail_on_data_loss:
        raise DataLossError(message + "; set failOnDataLoss=false to skip them")
    low, _ = consumer.get_watermark_offsets(TopicPartition(r.topic, r.partition), timeout=30)
    log.warning("%s; skipping to the log start %d (failOnDataLoss=false)", message, low)
    consumer.seek(TopicPartition(r.topic, r.partition, max(low, position)))
    return max(low, position)
