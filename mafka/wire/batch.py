"""RecordBatch v2 headers: the broker's hot path.

The broker never looks inside a batch's records: it validates the 61-byte
header and the CRC, rewrites the offset fields in place, and stores and
serves the bytes as they came.  Everything here therefore works on a buffer
(``bytes``, ``bytearray`` or ``memoryview``) plus a position, with one
precompiled :class:`struct.Struct` and without copying record bytes.

Layout (``DefaultRecordBatch.java``; all integers big-endian)::

    0  baseOffset i64          27 baseTimestamp i64
    8  batchLength i32         35 maxTimestamp i64
    12 partitionLeaderEpoch    43 producerId i64
    16 magic i8 (= 2)          51 producerEpoch i16
    17 crc u32                 53 baseSequence i32
    21 attributes i16          57 recordCount i32
    23 lastOffsetDelta i32     61 records...

The CRC is CRC-32C over bytes 21..end, so baseOffset and
partitionLeaderEpoch can be rewritten without recomputing it; the attributes
and maxTimestamp (LogAppendTime) cannot.

Full record decoding for clients and tools lives in :mod:`mafka.wire.records`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator

from crc32c import crc32c

from mafka.wire.errors import CorruptRecordBatch

__all__ = [
    "BATCH_HEADER_SIZE",
    "RECORD_BATCH_OVERHEAD",
    "LOG_OVERHEAD",
    "MIN_BATCH_LENGTH",
    "MAGIC_V2",
    "BASE_OFFSET_OFFSET",
    "LENGTH_OFFSET",
    "PARTITION_LEADER_EPOCH_OFFSET",
    "MAGIC_OFFSET",
    "CRC_OFFSET",
    "ATTRIBUTES_OFFSET",
    "LAST_OFFSET_DELTA_OFFSET",
    "BASE_TIMESTAMP_OFFSET",
    "MAX_TIMESTAMP_OFFSET",
    "PRODUCER_ID_OFFSET",
    "PRODUCER_EPOCH_OFFSET",
    "BASE_SEQUENCE_OFFSET",
    "RECORDS_COUNT_OFFSET",
    "RECORDS_OFFSET",
    "COMPRESSION_CODEC_MASK",
    "TIMESTAMP_TYPE_MASK",
    "TRANSACTIONAL_FLAG_MASK",
    "CONTROL_FLAG_MASK",
    "DELETE_HORIZON_FLAG_MASK",
    "CREATE_TIME",
    "LOG_APPEND_TIME",
    "NO_PRODUCER_EPOCH",
    "NO_PRODUCER_ID",
    "NO_SEQUENCE",
    "NO_TIMESTAMP",
    "HEADER_STRUCT",
    "BatchHeader",
    "RecordBatchTooLarge",
    "iter_batches",
    "crc_of",
    "validate_batch",
    "assign_offsets",
    "set_log_append_time",
]

# -- field offsets (names follow DefaultRecordBatch.java) ---------------------
BASE_OFFSET_OFFSET = 0
LENGTH_OFFSET = 8
PARTITION_LEADER_EPOCH_OFFSET = 12
MAGIC_OFFSET = 16
CRC_OFFSET = 17
ATTRIBUTES_OFFSET = 21
LAST_OFFSET_DELTA_OFFSET = 23
BASE_TIMESTAMP_OFFSET = 27
MAX_TIMESTAMP_OFFSET = 35
PRODUCER_ID_OFFSET = 43
PRODUCER_EPOCH_OFFSET = 51
BASE_SEQUENCE_OFFSET = 53
RECORDS_COUNT_OFFSET = 57
RECORDS_OFFSET = 61

#: Size of the fixed header, i.e. of a batch with no records.
BATCH_HEADER_SIZE = 61
RECORD_BATCH_OVERHEAD = BATCH_HEADER_SIZE
#: baseOffset + batchLength: the bytes not counted by batchLength.
LOG_OVERHEAD = 12
#: The smallest legal batchLength (a header with no records).
MIN_BATCH_LENGTH = BATCH_HEADER_SIZE - LOG_OVERHEAD
MAGIC_V2 = 2

# -- attribute bits ------------------------------------------------------------
COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
TRANSACTIONAL_FLAG_MASK = 0x10
CONTROL_FLAG_MASK = 0x20
DELETE_HORIZON_FLAG_MASK = 0x40

CREATE_TIME = 0
LOG_APPEND_TIME = 1

# -- RecordBatch's "none" values (also those of the legacy formats) -----------
NO_TIMESTAMP = -1
NO_PRODUCER_ID = -1
NO_PRODUCER_EPOCH = -1
NO_SEQUENCE = -1

#: The whole 61-byte header in one unpack.
HEADER_STRUCT = struct.Struct(">qiibIhiqqqhii")
assert HEADER_STRUCT.size == BATCH_HEADER_SIZE

_unpack_header = HEADER_STRUCT.unpack_from
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U32 = struct.Struct(">I")
_I16 = struct.Struct(">h")
_I32_PAIR_AT_LENGTH = struct.Struct(">ii")  # batchLength, partitionLeaderEpoch
_MAGIC = struct.Struct(">b")


class RecordBatchTooLarge(CorruptRecordBatch):
    """A batch larger than the caller's limit (Kafka: MESSAGE_TOO_LARGE, not CORRUPT_MESSAGE).

    It subclasses :class:`CorruptRecordBatch` so that code which only cares
    about "unacceptable batch" need not know the difference; the broker
    checks for this subclass first to answer with the right error code.
    """

    def __init__(self, size: int, limit: int, pos: int) -> None:
        super().__init__(f"record batch at position {pos} is {size} bytes, above the limit {limit}")
        self.size = size
        self.limit = limit


class BatchHeader:
    """The 61-byte header of the batch at ``buf[pos:]``, decoded by one ``unpack_from``.

    Construction copies no buffer bytes and checks nothing but that 61 bytes
    are present; use :func:`validate_batch` for length, magic and CRC checks.
    Field names follow Kafka's.  Instances are plain value holders: they do
    not track later changes to the buffer.

    Raises:
        CorruptRecordBatch: fewer than 61 bytes at ``pos`` (or ``pos < 0``).
    """

    __slots__ = (
        "base_offset",
        "batch_length",
        "partition_leader_epoch",
        "magic",
        "crc",
        "attributes",
        "last_offset_delta",
        "base_timestamp",
        "max_timestamp",
        "producer_id",
        "producer_epoch",
        "base_sequence",
        "record_count",
    )

    base_offset: int
    batch_length: int
    partition_leader_epoch: int
    magic: int
    crc: int
    attributes: int
    last_offset_delta: int
    base_timestamp: int
    max_timestamp: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    record_count: int

    def __init__(self, buf: bytes | bytearray | memoryview, pos: int = 0) -> None:
        # struct.unpack_from accepts negative offsets (counted from the end);
        # a negative position here is always a caller bug or garbage.
        if pos < 0:
            raise CorruptRecordBatch(f"negative batch position {pos}")
        try:
            (
                self.base_offset,
                self.batch_length,
                self.partition_leader_epoch,
                self.magic,
                self.crc,
                self.attributes,
                self.last_offset_delta,
                self.base_timestamp,
                self.max_timestamp,
                self.producer_id,
                self.producer_epoch,
                self.base_sequence,
                self.record_count,
            ) = _unpack_header(buf, pos)
        except struct.error:
            raise CorruptRecordBatch(
                f"truncated batch header at position {pos}: need {BATCH_HEADER_SIZE} bytes, "
                f"have {max(0, len(buf) - pos)}"
            ) from None

    @property
    def size(self) -> int:
        """Total bytes of the batch on the wire (batchLength + 12)."""
        return self.batch_length + LOG_OVERHEAD

    @property
    def last_offset(self) -> int:
        """Offset of the batch's last record (baseOffset + lastOffsetDelta)."""
        return self.base_offset + self.last_offset_delta

    @property
    def next_offset(self) -> int:
        """The offset that follows this batch."""
        return self.base_offset + self.last_offset_delta + 1

    @property
    def compression(self) -> int:
        """Compression codec id (attributes bits 0-2): 0 none, 1 gzip, 2 snappy, 3 lz4, 4 zstd."""
        return self.attributes & COMPRESSION_CODEC_MASK

    @property
    def timestamp_type(self) -> int:
        """0 = CreateTime, 1 = LogAppendTime (attributes bit 3)."""
        return (self.attributes & TIMESTAMP_TYPE_MASK) >> 3

    @property
    def is_transactional(self) -> bool:
        """Attributes bit 4."""
        return bool(self.attributes & TRANSACTIONAL_FLAG_MASK)

    @property
    def is_control(self) -> bool:
        """Attributes bit 5: a transaction marker (or other control) batch."""
        return bool(self.attributes & CONTROL_FLAG_MASK)

    @property
    def has_delete_horizon(self) -> bool:
        """Attributes bit 6: baseTimestamp holds the compaction delete horizon."""
        return bool(self.attributes & DELETE_HORIZON_FLAG_MASK)

    @property
    def last_sequence(self) -> int:
        """Sequence number of the last record, wrapping at INT32_MAX like Kafka; -1 if none."""
        if self.base_sequence == -1:
            return -1
        return (self.base_sequence + self.last_offset_delta) & 0x7FFFFFFF

    def __repr__(self) -> str:
        fields = ", ".join(f"{name}={getattr(self, name)!r}" for name in self.__slots__)
        return f"BatchHeader({fields})"

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, BatchHeader):
            return NotImplemented
        return all(getattr(self, n) == getattr(other, n) for n in self.__slots__)

    __hash__ = None  # type: ignore[assignment]  # mutable slots: not hashable


def _check_length_and_magic(batch_length: int, magic: int, pos: int) -> None:
    if batch_length < MIN_BATCH_LENGTH:
        raise CorruptRecordBatch(
            f"record batch at position {pos} has batchLength {batch_length}, "
            f"below the minimum {MIN_BATCH_LENGTH}"
        )
    if magic != MAGIC_V2:
        raise CorruptRecordBatch(
            f"record batch at position {pos} has magic {magic}; only magic 2 is supported"
        )


def iter_batches(
    buf: bytes | bytearray | memoryview,
    start: int = 0,
    end: int | None = None,
    *,
    strict: bool = False,
) -> Iterator[tuple[int, BatchHeader]]:
    """Yield ``(position, header)`` for each whole batch in ``buf[start:end]``.

    CRCs are not checked (see :func:`validate_batch`).  A batch whose
    batchLength is below 49 or whose magic is not 2 always raises: the walk
    cannot continue past it.  A trailing partial batch (fewer bytes left than
    the header or than batchLength claims) is silently dropped — a Fetch
    response may legally end with one — unless ``strict`` is true.

    Args:
        buf: the record set.
        start: position of the first batch.
        end: end of the record set (default ``len(buf)``; clamped to it).
        strict: raise on a trailing partial batch instead of stopping.

    Raises:
        CorruptRecordBatch: bad length or magic; a partial batch when ``strict``.
    """
    buf_len = len(buf)
    end = buf_len if end is None else min(end, buf_len)
    pos = max(start, 0)
    while pos < end:
        remaining = end - pos
        if remaining < BATCH_HEADER_SIZE:
            # Enough bytes for length and magic? Then a bad one is corruption,
            # not truncation (as Java's ByteBufferLogInputStream decides).
            if remaining > MAGIC_OFFSET:
                batch_length, _ = _I32_PAIR_AT_LENGTH.unpack_from(buf, pos + LENGTH_OFFSET)
                (magic,) = _MAGIC.unpack_from(buf, pos + MAGIC_OFFSET)
                _check_length_and_magic(batch_length, magic, pos)
            if strict:
                raise CorruptRecordBatch(
                    f"partial record batch at position {pos}: only {remaining} bytes remain"
                )
            return
        header = BatchHeader(buf, pos)
        batch_length = header.batch_length
        if batch_length < MIN_BATCH_LENGTH or header.magic != MAGIC_V2:
            _check_length_and_magic(batch_length, header.magic, pos)
        size = batch_length + LOG_OVERHEAD
        if size > remaining:
            if strict:
                raise CorruptRecordBatch(
                    f"partial record batch at position {pos}: batch is {size} bytes, "
                    f"only {remaining} remain"
                )
            return
        yield pos, header
        pos += size


def crc_of(buf: bytes | bytearray | memoryview, pos: int, size: int) -> int:
    """CRC-32C of the batch ``buf[pos:pos+size]`` as stored in its crc field.

    Covers bytes 21..size of the batch (attributes to the end), computed over
    a memoryview slice so no bytes are copied.  The caller guarantees the
    range lies within ``buf``.
    """
    with memoryview(buf) as view:
        return crc32c(view[pos + ATTRIBUTES_OFFSET : pos + size])


def validate_batch(
    buf: bytes | bytearray | memoryview,
    pos: int = 0,
    *,
    max_size: int | None = None,
) -> BatchHeader:
    """Check the batch at ``buf[pos:]`` as the broker does on Produce; return its header.

    Checks, in order: a whole header is present, batchLength >= 49, magic 2,
    size (batchLength + 12) <= ``max_size``, the whole batch is present, and
    the stored CRC-32C matches.  Bytes after the batch are ignored.

    Args:
        buf: buffer holding the batch.
        pos: position of the batch in ``buf``.
        max_size: largest acceptable batch size in bytes (e.g. the topic's
            ``max.message.bytes``); ``None`` for no limit.

    Returns:
        The decoded header.

    Raises:
        RecordBatchTooLarge: size above ``max_size`` (Kafka: MESSAGE_TOO_LARGE).
        CorruptRecordBatch: any other failed check (Kafka: CORRUPT_MESSAGE).
    """
    header = BatchHeader(buf, pos)
    _check_length_and_magic(header.batch_length, header.magic, pos)
    size = header.batch_length + LOG_OVERHEAD
    if max_size is not None and size > max_size:
        raise RecordBatchTooLarge(size, max_size, pos)
    available = len(buf) - pos
    if size > available:
        raise CorruptRecordBatch(
            f"truncated record batch at position {pos}: batchLength claims {size} bytes, "
            f"only {available} present"
        )
    computed = crc_of(buf, pos, size)
    if computed != header.crc:
        raise CorruptRecordBatch(
            f"record batch at position {pos} is corrupt: stored CRC 0x{header.crc:08x}, "
            f"computed 0x{computed:08x}"
        )
    return header


def assign_offsets(
    buf: bytearray | memoryview,
    pos: int,
    base_offset: int,
    partition_leader_epoch: int | None = None,
) -> int:
    """Rewrite the batch's baseOffset (and optionally partitionLeaderEpoch) in place.

    The CRC does not cover these fields, so it stays valid
    (``LogValidator.assignOffsetsNonCompressed``).  The batch is assumed
    already validated.

    Args:
        buf: writable buffer holding the batch.
        pos: position of the batch.
        base_offset: the offset the log assigns to the batch's first record.
        partition_leader_epoch: the leader epoch to stamp, or ``None`` to keep it.

    Returns:
        The batch's new last offset (base_offset + lastOffsetDelta), so the
        caller can advance its log end offset to one past it.
    """
    _I64.pack_into(buf, pos + BASE_OFFSET_OFFSET, base_offset)
    if partition_leader_epoch is not None:
        _I32.pack_into(buf, pos + PARTITION_LEADER_EPOCH_OFFSET, partition_leader_epoch)
    last_offset_delta: int
    (last_offset_delta,) = _I32.unpack_from(buf, pos + LAST_OFFSET_DELTA_OFFSET)
    return base_offset + last_offset_delta


def set_log_append_time(buf: bytearray | memoryview, pos: int, timestamp_ms: int) -> None:
    """Mark the batch LogAppendTime with ``timestamp_ms`` as maxTimestamp; fix the CRC.

    Sets attributes bit 3 (other bits untouched), writes maxTimestamp and
    recomputes the CRC in place, as ``DefaultRecordBatch.setMaxTimestamp``
    does; a no-op when both already hold those values.  Consumers then report
    ``timestamp_ms`` for every record of the batch.

    Raises:
        CorruptRecordBatch: the batch's claimed length is invalid or runs past ``buf``.
    """
    header = BatchHeader(buf, pos)
    _check_length_and_magic(header.batch_length, header.magic, pos)
    size = header.batch_length + LOG_OVERHEAD
    if size > len(buf) - pos:
        raise CorruptRecordBatch(
            f"truncated record batch at position {pos}: batchLength claims {size} bytes"
        )
    if header.attributes & TIMESTAMP_TYPE_MASK and header.max_timestamp == timestamp_ms:
        return
    _I16.pack_into(buf, pos + ATTRIBUTES_OFFSET, header.attributes | TIMESTAMP_TYPE_MASK)
    _I64.pack_into(buf, pos + MAX_TIMESTAMP_OFFSET, timestamp_ms)
    _U32.pack_into(buf, pos + CRC_OFFSET, crc_of(buf, pos, size))
