"""Produce-side validation of record batches (Kafka's ``LogValidator``), per batch, never per record.

Plain record-batch checks against a topic's :class:`~mafka.log.config.LogConfig`,
no broker state: the broker's produce path (``mafka.broker.replica_manager``)
and the delayed-message envelope (``mafka.delayed.produce``) both use them.

``shared/reference/kafka-protocol.md`` §4.1: Produce v3+ carries exactly one
magic-2 batch per partition; its size, CRC-32C, offset delta and record
count are checked from the 61-byte header; control batches and zstd before
Produce v7 are refused.  Records stay opaque — unless the topic's settings
need them read (:func:`needs_record_checks`: compacted topics, a bounded
timestamp difference), where each record is checked as Kafka's
``LogValidator.validateRecord`` does and refused records are named (KIP-467).

Produce v0–2 may carry a legacy message set (magic 0/1) instead:
:func:`up_convert_legacy` turns it into one v2 batch first — the only place
where the produce path reads every record, and only for those old clients.
"""

from __future__ import annotations

from collections.abc import Iterator

from mafka.errors import (
    CorruptMessageError,
    ErrorCode,
    InvalidRecordError,
    MessageTooLargeError,
    UnsupportedCompressionTypeError,
)
from mafka.wire.batch import (
    LOG_APPEND_TIME,
    LOG_OVERHEAD,
    NO_TIMESTAMP,
    BatchHeader,
    validate_batch,
)
from mafka.wire.compression import DEFAULT_MAX_DECOMPRESSED, CompressionType
from mafka.wire.errors import ProtocolError
from mafka.wire.legacy_records import (
    MAGIC_V0,
    iter_entries,
    iter_legacy_records,
    record_overhead,
)
from mafka.wire.records import Record, build_batch, decode_batch

from .config import LONG_MAX, LogConfig

__all__ = [
    "RecordValidationError",
    "needs_record_checks",
    "up_convert_legacy",
    "validate_produce_batch",
    "validate_records",
]


def validate_produce_batch(records: bytes | memoryview, *, produce_version: int, max_message_bytes: int) -> BatchHeader:
    """Checks one partition's record set from a Produce request; returns its batch header.

    Raises:
        InvalidRecordError: not exactly one v2 batch, a control batch,
            lastOffsetDelta + 1 ≠ recordCount, or a producer id without a sequence.
        CorruptMessageError: bad length or CRC.
        MessageTooLargeError: above ``max.message.bytes``.
        UnsupportedCompressionTypeError: zstd with Produce < 7.
    """
    view = memoryview(records)
    if len(view) < 61:
        raise CorruptMessageError(f"record set of {len(view)} bytes is shorter than a batch header")
    if view[16] != 2:
        raise InvalidRecordError(f"magic {view[16]} batches are not accepted (Produce v3+ needs magic 2)")
    try:
        header = validate_batch(view)
    except ProtocolError as exc:
        raise CorruptMessageError(str(exc)) from None
    if header.size != len(view):
        raise InvalidRecordError("Produce v3+ carries exactly one record batch per partition")
    if header.size > max_message_bytes:
        raise MessageTooLargeError(f"batch of {header.size} bytes exceeds max.message.bytes={max_message_bytes}")
    if header.is_control:
        raise InvalidRecordError("producers may not send control batches")
    if header.record_count <= 0 or header.last_offset_delta + 1 != header.record_count:
        raise InvalidRecordError(f"lastOffsetDelta {header.last_offset_delta} does not match recordCount {header.record_count}")
    if header.producer_id >= 0 and header.base_sequence < 0:
        raise InvalidRecordError("an idempotent batch needs a base sequence")
    if header.compression == CompressionType.ZSTD and produce_version < 7:
        raise UnsupportedCompressionTypeError("zstd needs Produce v7 or later")
    return header


class RecordValidationError(Exception):
    """Records of an otherwise sound batch that the topic refuses (Kafka's ``RecordValidationException``).

    Attributes:
        code: INVALID_TIMESTAMP if any record's timestamp was refused, else INVALID_RECORD.
        message: The partition's ``error_message`` (Produce v8+).
        record_errors: ``(batch_index, message)`` per refused record (KIP-467).
    """

    def __init__(self, code: ErrorCode, message: str, record_errors: list[tuple[int, str]]) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.record_errors = record_errors


def needs_record_checks(header: BatchHeader, config: LogConfig) -> bool:
    """True when Kafka's per-record rules can refuse something in this batch.

    Only three settings need the records themselves: a compacted topic (every
    record needs a key), a CreateTime topic with a bounded
    ``message.timestamp.difference.max.ms``, and a producer batch marked
    LogAppendTime.  Every other batch stays opaque.
    """
    return (
        config.compact
        or header.timestamp_type == LOG_APPEND_TIME
        or (not config.log_append_time and config.message_timestamp_difference_max_ms < LONG_MAX)
    )


def validate_records(records: bytes | memoryview, header: BatchHeader, config: LogConfig, *,
                     now_ms: int, topic_partition: str) -> None:
    """Kafka 2.8's ``LogValidator.validateRecord`` for each record of a producer's batch.

    Call after :func:`validate_produce_batch` (the CRC is not checked again),
    and only when :func:`needs_record_checks` says so.

    Raises:
        RecordValidationError: one entry per refused record, in batch order:
            a compacted topic's record without a key (INVALID_RECORD); a
            CreateTime timestamp further than ``message.timestamp.difference.max.ms``
            from *now_ms*, or a producer batch marked LogAppendTime (INVALID_TIMESTAMP).
        CorruptMessageError: the records do not parse.
    """
    try:
        decoded = decode_batch(records, verify_crc=False)
    except ProtocolError as exc:
        raise CorruptMessageError(str(exc)) from None
    diff = config.message_timestamp_difference_max_ms
    check_time = not config.log_append_time and diff < LONG_MAX
    errors: list[tuple[int, str]] = []
    bad_time = False
    # validate_produce_batch has refused control batches: these are data records.
    for index, record in enumerate(decoded.data_records()):
        if config.compact and record.key is None:
            errors.append((index, f"Compacted topic cannot accept message without key in topic partition "
                                  f"{topic_partition}."))
        elif check_time and record.timestamp != NO_TIMESTAMP and abs(record.timestamp - now_ms) > diff:
            bad_time = True
            errors.append((index, f"Timestamp {record.timestamp} of message with offset {record.offset} is out "
                                  f"of range. The timestamp should be within [{now_ms - diff}, {now_ms + diff}]"))
        elif header.timestamp_type == LOG_APPEND_TIME:
            bad_time = True
            key = -1 if record.key is None else len(record.key)
            value = -1 if record.value is None else len(record.value)
            errors.append((index, f"Invalid timestamp type in message DefaultRecord(offset={record.offset}, "
                                  f"timestamp={record.timestamp}, key={key} bytes, value={value} bytes). "
                                  "Producer should not set timestamp type to LogAppendTime."))
    if errors:
        if bad_time:
            raise RecordValidationError(ErrorCode.INVALID_TIMESTAMP,
                                        "One or more records have been rejected due to invalid timestamp", errors)
        raise RecordValidationError(ErrorCode.INVALID_RECORD, "One or more records have been rejected", errors)


def up_convert_legacy(records: bytes | memoryview, *, max_message_bytes: int,
                      max_decompressed: int = DEFAULT_MAX_DECOMPRESSED) -> bytes:
    """One v2 batch holding the records of a Produce v0–2 legacy message set (magic 0/1).

    Kafka's ``LogValidator.convertAndAssignOffsetsNonCompressed`` and its
    compressed path: each record keeps its key, value and timestamp (−1 for
    magic 0, which has none); headers do not exist before v2.  The batch is
    compressed with the set's codec (``compression.type=producer``), has
    offsets 0..n−1 (the log assigns the real ones), CreateTime (the log
    stamps LogAppendTime topics itself) and producer id −1: old formats have
    no idempotence.  The result still goes through
    :func:`validate_produce_batch` and the append like any v2 batch.

    Memory: the set is walked twice (shallow checks, then records one at a
    time into the new batch); a wrapper's inner set is at most
    *max_decompressed* bytes.

    Raises:
        CorruptMessageError: a bad CRC (CRC-32 of each message, inner ones
            included), size, magic, codec payload or nesting.
        MessageTooLargeError: a message (or wrapper) above *max_message_bytes*.
        InvalidRecordError: a compressed wrapper next to other messages (a
            compressed set is one wrapper), zstd (not valid before magic 2).
        RecordValidationError: INVALID_TIMESTAMP for messages marked
            LogAppendTime by the producer or with a negative timestamp other than −1.
    """
    codec = CompressionType.NONE
    count = 0
    refused: list[tuple[int, str]] = []
    try:
        for entry in iter_entries(records, strict=True):
            size = LOG_OVERHEAD + record_overhead(entry.magic) + len(entry.key or b"") + len(entry.value or b"")
            if size > max_message_bytes:
                raise MessageTooLargeError(f"message at offset {entry.offset} exceeds max.message.bytes={max_message_bytes}")
            if entry.compression == CompressionType.ZSTD:
                raise InvalidRecordError("zstd is not valid for magic 0 or 1 messages")
            if entry.compression > CompressionType.ZSTD:
                raise CorruptMessageError(f"unknown codec {entry.compression} in the message at offset {entry.offset}")
            if entry.compression != CompressionType.NONE:
                codec = CompressionType(entry.compression)
            if entry.timestamp_type == LOG_APPEND_TIME:
                refused.append((count, f"Invalid timestamp type in message with offset {entry.offset}. "
                                       "Producer should not set timestamp type to LogAppendTime."))
            count += 1
    except ProtocolError as exc:
        raise CorruptMessageError(str(exc)) from None
    if count > 1 and codec != CompressionType.NONE:
        raise InvalidRecordError("Compressed outer record has more than one batch")
    if refused:
        raise RecordValidationError(ErrorCode.INVALID_TIMESTAMP,
                                    "One or more records have been rejected due to invalid timestamp", refused)

    def converted() -> Iterator[Record]:
        for index, r in enumerate(iter_legacy_records(records, strict=True, max_decompressed=max_decompressed)):
            timestamp = NO_TIMESTAMP if r.magic == MAGIC_V0 else r.timestamp
            if timestamp < NO_TIMESTAMP:
                raise RecordValidationError(ErrorCode.INVALID_TIMESTAMP, f"Invalid negative timestamp {timestamp}",
                                            [(index, f"Invalid negative timestamp {timestamp}")])
            yield Record(index, timestamp, r.key, r.value)

    try:
        return build_batch(converted(), compression=codec)
    except ProtocolError as exc:
        raise CorruptMessageError(str(exc)) from None
