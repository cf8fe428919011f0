"""Full RecordBatch v2 encoding and decoding, for clients and tools.

The broker's hot path does not come here (see :mod:`mafka.wire.batch`): this
module opens batches up into :class:`Record` objects and builds batches from
them.  Record layout (``DefaultRecord.java``), zigzag varints throughout::

    length varint | attributes i8 | timestampDelta varlong | offsetDelta varint
    | keyLength varint (-1 = null) | key | valueLength varint | value
    | headerCount varint | [headerKeyLength varint | UTF-8 key
                            | headerValueLength varint (-1 = null) | value]...

Decoding is a decoder of untrusted bytes: every claimed length and count is
checked against the bytes that remain before anything is allocated, the
decompressed size is bounded, and every failure is a
:class:`~mafka.wire.errors.ProtocolError` — a
:class:`~mafka.wire.errors.CorruptRecordBatch` for anything inside a batch.
"""

from __future__ import annotations

import struct
import time
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from enum import IntEnum
from typing import cast

from mafka.wire.batch import (
    BATCH_HEADER_SIZE,
    CONTROL_FLAG_MASK,
    CRC_OFFSET,
    HEADER_STRUCT,
    LOG_OVERHEAD,
    MAGIC_V2,
    MIN_BATCH_LENGTH,
    TIMESTAMP_TYPE_MASK,
    TRANSACTIONAL_FLAG_MASK,
    BatchHeader,
    crc_of,
    iter_batches,
    validate_batch,
)
from mafka.wire.compression import DEFAULT_MAX_DECOMPRESSED, CompressionType, compress, decompress
from mafka.wire.errors import CorruptRecordBatch, ProtocolError

__all__ = [
    "MIN_RECORD_SIZE",
    "Header",
    "Record",
    "ControlRecordType",
    "ControlRecord",
    "DecodedBatch",
    "encode_varint",
    "encode_varlong",
    "decode_varint",
    "decode_varlong",
    "size_of_varint",
    "size_of_varlong",
    "decode_batch",
    "iter_decoded_batches",
    "iter_records",
    "build_batch",
    "build_control_batch",
    "assemble_batch",
]

#: The smallest encoded record: length, attributes, timestampDelta,
#: offsetDelta, keyLength, valueLength and headerCount of one byte each.
MIN_RECORD_SIZE = 7

_INT32_MIN = -(1 << 31)
_INT32_MAX = (1 << 31) - 1
_INT64_MIN = -(1 << 63)
_INT64_MAX = (1 << 63) - 1

_U32 = struct.Struct(">I")
_CONTROL_KEY = struct.Struct(">hh")  # version, type
_END_TXN_VALUE = struct.Struct(">hi")  # version, coordinator epoch

Header = tuple[str, bytes | None]


# -- varints ----------------------------------------------------------------------


def _read_uvarint(
    buf: bytes | bytearray | memoryview, pos: int, end: int, max_bytes: int
) -> tuple[int, int]:
    """Read an unsigned LEB128 value of at most ``max_bytes`` bytes from ``buf[pos:end]``."""
    if pos >= end:
        raise ProtocolError(f"truncated varint at {pos}")
    b = buf[pos]
    if b < 0x80:
        return b, pos + 1
    result = b & 0x7F
    shift = 7
    last = pos + max_bytes
    pos += 1
    while True:
        if pos >= end:
            raise ProtocolError(f"truncated varint at {pos}")
        if pos >= last:
            raise ProtocolError(f"varint longer than {max_bytes} bytes at {last - max_bytes}")
        b = buf[pos]
        pos += 1
        result |= (b & 0x7F) << shift
        if b < 0x80:
            return result, pos
        shift += 7


def _read_varint(buf: bytes | bytearray | memoryview, pos: int, end: int) -> tuple[int, int]:
    """Zigzag int32: at most 5 bytes, value within int32."""
    b = buf[pos] if pos < end else 0x80  # fast path for the common one-byte case
    if b < 0x80:
        return (b >> 1) ^ -(b & 1), pos + 1
    u, new_pos = _read_uvarint(buf, pos, end, 5)
    if u >> 32:
        raise ProtocolError(f"varint at {pos} overflows int32")
    return (u >> 1) ^ -(u & 1), new_pos


def _read_varlong(buf: bytes | bytearray | memoryview, pos: int, end: int) -> tuple[int, int]:
    """Zigzag int64: at most 10 bytes, value within int64."""
    u, new_pos = _read_uvarint(buf, pos, end, 10)
    if u >> 64:
        raise ProtocolError(f"varlong at {pos} overflows int64")
    return (u >> 1) ^ -(u & 1), new_pos


def decode_varint(buf: bytes | bytearray | memoryview, pos: int = 0) -> tuple[int, int]:
    """Decode a zigzag varint (int32) at ``buf[pos]``.

    Returns:
        ``(value, next_position)``.

    Raises:
        ProtocolError: truncated, longer than 5 bytes, or outside int32.
    """
    return _read_varint(buf, pos, len(buf))


def decode_varlong(buf: bytes | bytearray | memoryview, pos: int = 0) -> tuple[int, int]:
    """Decode a zigzag varlong (int64) at ``buf[pos]``.

    Returns:
        ``(value, next_position)``.

    Raises:
        ProtocolError: truncated, longer than 10 bytes, or outside int64.
    """
    return _read_varlong(buf, pos, len(buf))


def _write_uvarint(out: bytearray, u: int) -> None:
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)


def _write_varint(out: bytearray, value: int) -> None:
    if not _INT32_MIN <= value <= _INT32_MAX:
        raise ValueError(f"{value} does not fit a varint (int32)")
    _write_uvarint(out, (value << 1) ^ (value >> 31))


def _write_varlong(out: bytearray, value: int) -> None:
    if not _INT64_MIN <= value <= _INT64_MAX:
        raise ValueError(f"{value} does not fit a varlong (int64)")
    _write_uvarint(out, (value << 1) ^ (value >> 63))


def encode_varint(value: int) -> bytes:
    """Zigzag-encode an int32 (1..5 bytes).

    Raises:
        ValueError: ``value`` outside int32.
    """
    out = bytearray()
    _write_varint(out, value)
    return bytes(out)


def encode_varlong(value: int) -> bytes:
    """Zigzag-encode an int64 (1..10 bytes).

    Raises:
        ValueError: ``value`` outside int64.
    """
    out = bytearray()
    _write_varlong(out, value)
    return bytes(out)


def _size_of_uvarint(u: int) -> int:
    return max(1, (u.bit_length() + 6) // 7)


def size_of_varint(value: int) -> int:
    """Encoded size of ``value`` as a zigzag varint."""
    return _size_of_uvarint((value << 1) ^ (value >> 31))


def size_of_varlong(value: int) -> int:
    """Encoded size of ``value`` as a zigzag varlong."""
    return _size_of_uvarint((value << 1) ^ (value >> 63))


# -- model --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Record:
    """One record, with absolute offset and timestamp.

    Attributes:
        offset: the record's offset (baseOffset + offsetDelta).
        timestamp: epoch milliseconds; for a LogAppendTime batch, the batch's
            maxTimestamp (as Kafka reports it).
        key: bytes, or None for a null key.
        value: bytes, or None for a null value (a tombstone).
        headers: ``(key, value)`` pairs in order; keys are str, values bytes or None.
    """

    offset: int
    timestamp: int
    key: bytes | None = None
    value: bytes | None = None
    headers: tuple[Header, ...] = ()


class ControlRecordType(IntEnum):
    """Control record types (``ControlRecordType.java``); 0 and 1 are transaction markers."""

    ABORT = 0
    COMMIT = 1
    LEADER_CHANGE = 2
    SNAPSHOT_HEADER = 3
    SNAPSHOT_FOOTER = 4
    KRAFT_VERSION = 5
    KRAFT_VOTERS = 6


@dataclass(frozen=True, slots=True)
class ControlRecord:
    """A record of a control batch.

    Attributes:
        offset: the record's offset.
        timestamp: epoch milliseconds.
        version: the key's version field.
        type: a :class:`ControlRecordType` when known, else the raw int.
        coordinator_epoch: the transaction coordinator's epoch for ABORT and
            COMMIT markers; -1 for other types.
    """

    offset: int
    timestamp: int
    version: int
    type: int
    coordinator_epoch: int = -1

    @property
    def is_commit(self) -> bool:
        return self.type == ControlRecordType.COMMIT

    @property
    def is_abort(self) -> bool:
        return self.type == ControlRecordType.ABORT


@dataclass(frozen=True, slots=True)
class DecodedBatch:
    """A decoded batch: its header and its records.

    ``records`` holds :class:`ControlRecord` objects if ``header.is_control``,
    :class:`Record` objects otherwise.
    """

    header: BatchHeader
    records: tuple[Record | ControlRecord, ...]

    @property
    def is_control(self) -> bool:
        return self.header.is_control

    def data_records(self) -> tuple[Record, ...]:
        """``records`` of a data batch, typed as such.

        Raises:
            ValueError: this is a control batch.
        """
        if self.header.is_control:
            raise ValueError("a control batch holds control records")
        return cast("tuple[Record, ...]", self.records)

    def control_records(self) -> tuple[ControlRecord, ...]:
        """``records`` of a control batch, typed as such.

        Raises:
            ValueError: this is a data batch.
        """
        if not self.header.is_control:
            raise ValueError("a data batch holds no control records")
        return cast("tuple[ControlRecord, ...]", self.records)


# -- decoding ----------------------------------------------------------------------


def _corrupt(pos: int, message: str) -> CorruptRecordBatch:
    return CorruptRecordBatch(f"record batch at position {pos}: {message}")


def decode_batch(
    buf: bytes | bytearray | memoryview,
    pos: int = 0,
    *,
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
    verify_crc: bool = True,
) -> DecodedBatch:
    """Decode the batch at ``buf[pos:]`` into its records.

    The batch is validated first (:func:`~mafka.wire.batch.validate_batch`;
    the CRC only if ``verify_crc``).  Memory use is bounded by the input size,
    ``max_decompressed`` and ``record_count``, which must fit the (decompressed)
    bytes at 7 bytes per record at least.  Note the Python objects: about
    150 bytes per record, so a payload of minimal 7-byte records costs ~20x
    its size once decoded; size ``max_decompressed`` accordingly.

    Args:
        buf: buffer holding the batch; bytes after it are ignored.
        pos: position of the batch.
        max_decompressed: largest acceptable decompressed records payload;
            a batch whose record count could not fit in it is rejected
            before decompression.
        verify_crc: check the CRC-32C (clients may skip, like ``check.crcs``).

    Returns:
        The header and the records (absolute offsets and timestamps).

    Raises:
        CorruptRecordBatch: anything wrong with the batch or its records.
    """
    if verify_crc:
        header = validate_batch(buf, pos)
    else:
        header = BatchHeader(buf, pos)
        if header.batch_length < MIN_BATCH_LENGTH:
            raise _corrupt(pos, f"batchLength {header.batch_length} below {MIN_BATCH_LENGTH}")
        if header.magic != MAGIC_V2:
            raise _corrupt(pos, f"magic {header.magic}; only magic 2 is supported")
        if header.size > len(buf) - pos:
            raise _corrupt(pos, f"truncated: claims {header.size} bytes, {len(buf) - pos} present")
    count = header.record_count
    if count < 0:
        raise _corrupt(pos, f"negative record count {count}")
    codec = header.compression
    with memoryview(buf) as view, view[pos + BATCH_HEADER_SIZE : pos + header.size] as body:
        if codec == CompressionType.NONE:
            if count * MIN_RECORD_SIZE > len(body):
                raise _corrupt(pos, f"record count {count} cannot fit in {len(body)} bytes")
            data = bytes(body)
        else:
            # Reject before decompressing what could never parse anyway.
            if count * MIN_RECORD_SIZE > max_decompressed:
                raise _corrupt(
                    pos,
                    f"record count {count} cannot fit in the {max_decompressed}-byte "
                    "decompression limit",
                )
            try:
                data = decompress(codec, body, max_decompressed)
            except ProtocolError as exc:
                raise _corrupt(pos, str(exc)) from exc
            if count * MIN_RECORD_SIZE > len(data):
                raise _corrupt(
                    pos, f"record count {count} cannot fit in {len(data)} decompressed bytes"
                )
    try:
        records = _decode_records(data, header)
    except CorruptRecordBatch:
        raise
    except ProtocolError as exc:
        raise _corrupt(pos, str(exc)) from exc
    return DecodedBatch(header, records)


def _decode_records(data: bytes, header: BatchHeader) -> tuple[Record | ControlRecord, ...]:
    """Parse exactly ``header.record_count`` records that fill ``data`` exactly."""
    read_varint = _read_varint
    base_offset = header.base_offset
    base_timestamp = header.base_timestamp
    log_append_time = header.max_timestamp if header.attributes & TIMESTAMP_TYPE_MASK else None
    is_control = header.is_control
    end_of_data = len(data)
    records: list[Record | ControlRecord] = []
    append = records.append
    pos = 0
    for _ in range(header.record_count):
        length, pos = read_varint(data, pos, end_of_data)
        if length < 1 or length > end_of_data - pos:
            raise ProtocolError(
                f"record length {length} at {pos} exceeds the {end_of_data - pos} bytes remaining"
            )
        start = pos
        end = pos + length
        pos += 1  # attributes: unused, always 0
        ts_delta, pos = _read_varlong(data, pos, end)
        offset_delta, pos = read_varint(data, pos, end)

        key_len, pos = read_varint(data, pos, end)
        if key_len < 0:
            if key_len != -1:
                raise ProtocolError(f"negative key length {key_len} at {pos}")
            key = None
        elif key_len > end - pos:
            raise ProtocolError(f"key length {key_len} at {pos} exceeds the record")
        else:
            key = data[pos : pos + key_len]
            pos += key_len

        value_len, pos = read_varint(data, pos, end)
        if value_len < 0:
            if value_len != -1:
                raise ProtocolError(f"negative value length {value_len} at {pos}")
            value = None
        elif value_len > end - pos:
            raise ProtocolError(f"value length {value_len} at {pos} exceeds the record")
        else:
            value = data[pos : pos + value_len]
            pos += value_len

        header_count, pos = read_varint(data, pos, end)
        # Each header takes at least two bytes (two length varints).
        if header_count < 0 or 2 * header_count > end - pos:
            raise ProtocolError(f"invalid header count {header_count} at {pos}")
        headers: tuple[Header, ...] = ()
        if header_count:
            pos, headers = _decode_headers(data, pos, end, header_count)

        if pos != end:
            raise ProtocolError(
                f"record at {start} claims {length} bytes but its fields take {pos - start}"
            )
        offset = base_offset + offset_delta
        timestamp = base_timestamp + ts_delta if log_append_time is None else log_append_time
        if is_control:
            append(_control_record(offset, timestamp, key, value, start))
        else:
            append(Record(offset, timestamp, key, value, headers))
    if pos != end_of_data:
        raise ProtocolError(f"{end_of_data - pos} bytes left after {header.record_count} records")
    return tuple(records)


def _decode_headers(data: bytes, pos: int, end: int, count: int) -> tuple[int, tuple[Header, ...]]:
    headers = []
    for _ in range(count):
        key_len, pos = _read_varint(data, pos, end)
        if key_len < 0 or key_len > end - pos:
            raise ProtocolError(f"invalid header key length {key_len} at {pos}")
        try:
            key = data[pos : pos + key_len].decode("utf-8")
        except UnicodeDecodeError:
            raise ProtocolError(f"header key at {pos} is not valid UTF-8") from None
        pos += key_len
        value_len, pos = _read_varint(data, pos, end)
        if value_len < 0:
            if value_len != -1:
                raise ProtocolError(f"negative header value length {value_len} at {pos}")
            value = None
        elif value_len > end - pos:
            raise ProtocolError(f"header value length {value_len} at {pos} exceeds the record")
        else:
            value = data[pos : pos + value_len]
            pos += value_len
        headers.append((key, value))
    return pos, tuple(headers)


def _control_record(
    offset: int, timestamp: int, key: bytes | None, value: bytes | None, pos: int
) -> ControlRecord:
    # ControlRecordType.parse and EndTransactionMarker.deserializeValue: a
    # 4-byte key; markers carry a 6-byte value (newer versions may append).
    if key is None or len(key) < _CONTROL_KEY.size:
        raise ProtocolError(f"control record at {pos} has a key shorter than 4 bytes")
    version, type_code = _CONTROL_KEY.unpack_from(key)
    if version < 0:
        raise ProtocolError(f"control record at {pos} has negative key version {version}")
    try:
        control_type: int = ControlRecordType(type_code)
    except ValueError:
        control_type = type_code
    coordinator_epoch = -1
    if control_type in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        if value is None or len(value) < _END_TXN_VALUE.size:
            raise ProtocolError(f"transaction marker at {pos} has a value shorter than 6 bytes")
        value_version, coordinator_epoch = _END_TXN_VALUE.unpack_from(value)
        if value_version < 0:
            raise ProtocolError(
                f"transaction marker at {pos} has negative value version {value_version}"
            )
    return ControlRecord(offset, timestamp, version, control_type, coordinator_epoch)


def iter_decoded_batches(
    buf: bytes | bytearray | memoryview,
    *,
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
    verify_crc: bool = True,
    strict: bool = False,
) -> Iterator[DecodedBatch]:
    """Decode every whole batch of a record set (e.g. a Fetch response's records).

    A trailing partial batch is skipped, as clients do, unless ``strict``.

    Raises:
        CorruptRecordBatch: a corrupt batch (decoding stops there).
    """
    for pos, _ in iter_batches(buf, strict=strict):
        yield decode_batch(buf, pos, max_decompressed=max_decompressed, verify_crc=verify_crc)


def iter_records(
    buf: bytes | bytearray | memoryview,
    *,
    include_control: bool = False,
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
    verify_crc: bool = True,
    strict: bool = False,
) -> Iterator[Record | ControlRecord]:
    """Yield the records of every whole batch of a record set, in order.

    Control batches are skipped (as consumers do) unless ``include_control``;
    a trailing partial batch is skipped unless ``strict``.

    Raises:
        CorruptRecordBatch: a corrupt batch (iteration stops there).
    """
    for batch in iter_decoded_batches(
        buf, max_decompressed=max_decompressed, verify_crc=verify_crc, strict=strict
    ):
        if batch.header.is_control and not include_control:
            continue
        yield from batch.records


# -- encoding ------------------------------------------------------------------------

_BYTES_LIKE = (bytes, bytearray, memoryview)


def _write_bytes(out: bytearray, data: bytes | bytearray | memoryview | None, what: str) -> None:
    if data is None:
        out.append(1)  # zigzag(-1)
        return
    if not isinstance(data, _BYTES_LIKE):
        raise TypeError(f"{what} must be bytes-like or None, not {type(data).__name__}")
    _write_varint(out, len(data))
    out += data


def _encode_record(
    out: bytearray,
    offset_delta: int,
    timestamp_delta: int,
    key: bytes | None,
    value: bytes | None,
    headers: Iterable[Header],
) -> None:
    body = bytearray(b"\x00")  # attributes
    _write_varlong(body, timestamp_delta)
    _write_varint(body, offset_delta)
    _write_bytes(body, key, "key")
    _write_bytes(body, value, "value")
    headers = tuple(headers)
    _write_varint(body, len(headers))
    for h_key, h_value in headers:
        if not isinstance(h_key, str):
            raise TypeError(f"header key must be str, not {type(h_key).__name__}")
        _write_bytes(body, h_key.encode("utf-8"), "header key")
        _write_bytes(body, h_value, "header value")
    _write_varint(out, len(body))
    out += body


def assemble_batch(
    records_body: bytearray,
    *,
    attributes: int,
    record_count: int,
    base_offset: int,
    last_offset_delta: int,
    base_timestamp: int,
    max_timestamp: int,
    producer_id: int,
    producer_epoch: int,
    base_sequence: int,
    partition_leader_epoch: int,
) -> bytes:
    """Wraps an encoded records body in a v2 batch header: compresses it per
    ``attributes`` (codec bits), fills the header and computes the CRC-32C.

    ``records_body`` is the concatenation of encoded records (what
    :func:`build_batch` produces internally; clients that encode records
    as they are appended call this directly).
    """
    codec = attributes & 0x07
    payload = records_body if codec == CompressionType.NONE else compress(codec, records_body)
    out = bytearray(BATCH_HEADER_SIZE)
    out += payload
    HEADER_STRUCT.pack_into(
        out,
        0,
        base_offset,
        len(out) - LOG_OVERHEAD,
        partition_leader_epoch,
        MAGIC_V2,
        0,  # CRC, computed below over attributes..end
        attributes,
        last_offset_delta,
        base_timestamp,
        max_timestamp,
        producer_id,
        producer_epoch,
        base_sequence,
        record_count,
    )
    _U32.pack_into(out, CRC_OFFSET, crc_of(out, 0, len(out)))
    return bytes(out)


def build_batch(
    records: Iterable[Record],
    *,
    base_offset: int = 0,
    compression: int = 0,
    producer_id: int = -1,
    producer_epoch: int = -1,
    base_sequence: int = -1,
    is_transactional: bool = False,
    timestamp_type: int = 0,
    partition_leader_epoch: int = -1,
) -> bytes:
    """Encode ``records`` as one RecordBatch v2.

    Each record's offset is absolute: its offsetDelta is ``offset -
    base_offset``; offsets must strictly increase (a producer passes
    ``0..n-1`` with ``base_offset=0``).  baseTimestamp is the first record's
    timestamp and maxTimestamp the largest, as Kafka's builder does.  With
    ``timestamp_type=1`` (LogAppendTime) decoders report maxTimestamp for
    every record.  The payload is compressed with ``compression`` even when
    that does not make it smaller.

    Args:
        records: at least one :class:`Record`; offsets increasing,
            timestamps >= 0 or -1 (none).
        base_offset: the batch's baseOffset.
        compression: codec id 0..4 (:class:`~mafka.wire.compression.CompressionType`).
        producer_id: -1 unless idempotent/transactional.
        producer_epoch: the producer's epoch, -1 if none.
        base_sequence: sequence of the first record, -1 if none.
        is_transactional: set attributes bit 4.
        timestamp_type: 0 CreateTime, 1 LogAppendTime (bit 3).
        partition_leader_epoch: stamped into the header (the broker rewrites it).

    Returns:
        The batch bytes, CRC included.

    Raises:
        ValueError: no records, bad offsets or timestamps, or an unknown codec.
        TypeError: keys, values or headers of the wrong type.
    """
    CompressionType(compression)  # ValueError for unknown ids
    if timestamp_type not in (0, 1):
        raise ValueError(f"timestamp_type must be 0 or 1, not {timestamp_type}")
    body = bytearray()
    count = 0
    base_timestamp = max_timestamp = -1
    last_delta = -1
    for record in records:
        delta = record.offset - base_offset
        if delta <= last_delta:
            raise ValueError(
                f"record offset {record.offset} does not follow {base_offset + last_delta} "
                f"(offsets must increase from base_offset {base_offset})"
            )
        if delta > _INT32_MAX:
            raise ValueError(f"record offset {record.offset} is too far from base {base_offset}")
        timestamp = record.timestamp
        if timestamp < -1 or timestamp > _INT64_MAX:
            raise ValueError(f"invalid record timestamp {timestamp}")
        if count == 0:
            base_timestamp = max_timestamp = timestamp
        elif timestamp > max_timestamp:
            max_timestamp = timestamp
        _encode_record(
            body, delta, timestamp - base_timestamp, record.key, record.value, record.headers
        )
        last_delta = delta
        count += 1
    if count == 0:
        raise ValueError("a record batch needs at least one record")
    attributes = compression
    if timestamp_type:
        attributes |= TIMESTAMP_TYPE_MASK
    if is_transactional:
        attributes |= TRANSACTIONAL_FLAG_MASK
    return assemble_batch(
        body,
        attributes=attributes,
        record_count=count,
        base_offset=base_offset,
        last_offset_delta=last_delta,
        base_timestamp=base_timestamp,
        max_timestamp=max_timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=base_sequence,
        partition_leader_epoch=partition_leader_epoch,
    )


def build_control_batch(
    control_type: int,
    *,
    producer_id: int,
    producer_epoch: int,
    coordinator_epoch: int = 0,
    base_offset: int = 0,
    timestamp: int | None = None,
    partition_leader_epoch: int = -1,
) -> bytes:
    """Encode a transaction marker batch (``MemoryRecords.writeEndTransactionalMarker``).

    Attributes 0x30 (transactional, control, uncompressed), baseSequence -1,
    one record whose key is version 0 + ``control_type`` (i16 each) and whose
    value is version 0 (i16) + ``coordinator_epoch`` (i32).

    Args:
        control_type: :attr:`ControlRecordType.ABORT` or :attr:`ControlRecordType.COMMIT`.
        producer_id: the transaction's producer id.
        producer_epoch: the transaction's producer epoch.
        coordinator_epoch: the transaction coordinator's epoch.
        base_offset: offset of the marker.
        timestamp: epoch ms; defaults to now.
        partition_leader_epoch: stamped into the header.

    Raises:
        ValueError: ``control_type`` is not ABORT or COMMIT.
    """
    if control_type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        raise ValueError(f"not a transaction marker type: {control_type}")
    if timestamp is None:
        timestamp = int(time.time() * 1000)
    body = bytearray()
    _encode_record(
        body,
        0,
        0,
        _CONTROL_KEY.pack(0, int(control_type)),
        _END_TXN_VALUE.pack(0, coordinator_epoch),
        (),
    )
    return assemble_batch(
        body,
        attributes=TRANSACTIONAL_FLAG_MASK | CONTROL_FLAG_MASK,
        record_count=1,
        base_offset=base_offset,
        last_offset_delta=0,
        base_timestamp=timestamp,
        max_timestamp=timestamp,
        producer_id=producer_id,
        producer_epoch=producer_epoch,
        base_sequence=-1,
        partition_leader_epoch=partition_leader_epoch,
    )
