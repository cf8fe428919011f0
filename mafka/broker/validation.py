"""Produce-side validation of record batches (Kafka's ``LogValidator``), per batch, never per record.

``shared/reference/kafka-protocol.md`` §4.1: Produce v3+ carries exactly one
magic-2 batch per partition; its size, CRC-32C, offset delta and record
count are checked from the 61-byte header; control batches and zstd before
Produce v7 are refused.  Records stay opaque.
"""

from __future__ import annotations

from mafka.errors import (
    CorruptMessageError,
    InvalidRecordError,
    MessageTooLargeError,
    UnsupportedCompressionTypeError,
)
from mafka.wire.batch import BatchHeader, validate_batch
from mafka.wire.compression import CompressionType
from mafka.wire.errors import ProtocolError

__all__ = ["validate_produce_batch"]


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
