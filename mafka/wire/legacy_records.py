"""Legacy message sets (magic 0 and magic 1), as Kafka's ``LegacyRecord`` and ``AbstractLegacyRecordBatch`` define them.

Clients older than Kafka 0.11 (Produce v0–2, Fetch v0–3) speak these
instead of record batch v2.  A message set is a run of entries, all
integers big-endian::

    offset i64 | message_size i32 | crc u32 | magic i8 | attributes i8
    | timestamp i64 (magic 1 only) | key_length i32 (-1 = null) | key
    | value_length i32 (-1 = null) | value

``crc`` is CRC-32 (``zlib.crc32``, not CRC-32C) over magic..end.  The low
3 bits of ``attributes`` are the codec; bit 3 (magic 1) is LogAppendTime.
A compressed entry is a *wrapper*: no key, and its value is a whole inner
message set compressed with its codec (gzip; snappy in Java's xerial
framing; lz4 frames — magic 0 wrote the header checksum over the frame's
magic too, KAFKA-3160, so for magic 0 that checksum is ignored as Kafka's
``KafkaLZ4BlockInputStream`` does).  Inner offsets are absolute for magic 0
and relative (0..n-1) for magic 1, where the wrapper carries the last inner
message's absolute offset (0 from some librdkafka producers: then the
relative offsets are taken as they are, as Kafka does).  Inner messages of
a LogAppendTime wrapper report the wrapper's timestamp.

Decoding is a decoder of untrusted bytes: every size is checked against the
bytes that remain, the decompressed total of a set is bounded
(``max_decompressed``), records are produced one at a time (never a list of
a set's records), and every failure is a
:class:`~mafka.wire.errors.CorruptRecordBatch` (Kafka: CORRUPT_MESSAGE).
"""

from __future__ import annotations

import struct
import zlib
from collections.abc import Iterable, Iterator
from dataclasses import dataclass

import cramjam
import xxhash

from mafka.wire.batch import LOG_OVERHEAD, NO_TIMESTAMP
from mafka.wire.compression import (
    DEFAULT_MAX_DECOMPRESSED,
    XERIAL_MAGIC,
    CompressionType,
    compress,
    decompress,
)
from mafka.wire.errors import CorruptRecordBatch, ProtocolError

__all__ = [
    "MAGIC_V0",
    "MAGIC_V1",
    "RECORD_OVERHEAD_V0",
    "RECORD_OVERHEAD_V1",
    "TIMESTAMP_TYPE_MASK",
    "LegacyRecord",
    "is_legacy_message_set",
    "iter_entries",
    "iter_legacy_records",
    "wrapper_payload",
    "record_overhead",
    "encode_message",
    "build_message_set",
]

MAGIC_V0 = 0
MAGIC_V1 = 1
#: crc + magic + attributes + key length + value length.
RECORD_OVERHEAD_V0 = 14
#: ... + timestamp.
RECORD_OVERHEAD_V1 = 22
COMPRESSION_CODEC_MASK = 0x07
TIMESTAMP_TYPE_MASK = 0x08
#: The magic byte's position in an entry — the same as in a v2 batch, so one
#: byte tells the formats apart.
MAGIC_POSITION = 16

_ENTRY_HEAD = struct.Struct(">qiIbb")  # offset, size, crc, magic, attributes
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_U32 = struct.Struct(">I")
_MAGIC_V0_HEAD = struct.Struct(">bb")  # magic, attributes
_MAGIC_V1_HEAD = struct.Struct(">bbq")  # magic, attributes, timestamp

#: snappy-java's default block size, which Kafka's xerial streams use.
_XERIAL_BLOCK = 32 * 1024
_LZ4_FRAME_MAGIC = b"\x04\x22\x4d\x18"


def record_overhead(magic: int) -> int:
    """Bytes of a message besides its key and value (``LegacyRecord.recordOverhead``)."""
    return RECORD_OVERHEAD_V0 if magic == MAGIC_V0 else RECORD_OVERHEAD_V1


@dataclass(frozen=True, slots=True)
class LegacyRecord:
    """One message of a legacy set.

    Attributes:
        offset: the absolute offset (for a wrapper: its last inner message's).
        timestamp: epoch ms; −1 for magic 0 (no timestamps) or none given.
        key: bytes or None.
        value: bytes or None (for a wrapper: the compressed inner set).
        magic: 0 or 1.
        attributes: codec bits and (magic 1) the LogAppendTime bit.
    """

    offset: int
    timestamp: int = NO_TIMESTAMP
    key: bytes | None = None
    value: bytes | None = None
    magic: int = MAGIC_V1
    attributes: int = 0

    @property
    def compression(self) -> int:
        """Codec id of the attributes (0 none, 1 gzip, 2 snappy, 3 lz4; 4+ is not valid here)."""
        return self.attributes & COMPRESSION_CODEC_MASK

    @property
    def timestamp_type(self) -> int:
        """0 CreateTime, 1 LogAppendTime (always 0 for magic 0, which has no timestamps)."""
        if self.magic == MAGIC_V0:
            return 0
        return (self.attributes & TIMESTAMP_TYPE_MASK) >> 3


def is_legacy_message_set(records: bytes | bytearray | memoryview) -> bool:
    """True when the record set's first entry has magic 0 or 1 (else it is v2, or too short to tell)."""
    return len(records) > MAGIC_POSITION and records[MAGIC_POSITION] in (MAGIC_V0, MAGIC_V1)


# -- decoding ------------------------------------------------------------------------


def _corrupt(pos: int, message: str) -> CorruptRecordBatch:
    return CorruptRecordBatch(f"legacy message at position {pos}: {message}")


def _parse_entry(buf: memoryview, pos: int, size: int, verify_crc: bool) -> LegacyRecord:
    """The entry at ``buf[pos:pos+12+size]``, which the caller has checked is present."""
    offset, _, crc, magic, attributes = _ENTRY_HEAD.unpack_from(buf, pos)
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise _corrupt(pos, f"magic {magic} in a legacy message set")
    overhead = record_overhead(magic)
    if size < overhead:
        raise _corrupt(pos, f"message size {size} is below the magic-{magic} minimum {overhead}")
    end = pos + LOG_OVERHEAD + size
    if verify_crc:
        computed = zlib.crc32(buf[pos + MAGIC_POSITION : end])
        if computed != crc:
            raise _corrupt(pos, f"stored CRC 0x{crc:08x}, computed 0x{computed:08x}")
    p = pos + MAGIC_POSITION + 2
    timestamp = NO_TIMESTAMP
    if magic == MAGIC_V1:
        timestamp = _I64.unpack_from(buf, p)[0]
        p += 8
    key_len = _I32.unpack_from(buf, p)[0]
    p += 4
    if key_len < -1 or key_len > end - p - 4:
        raise _corrupt(pos, f"key length {key_len} does not fit the message")
    key = None
    if key_len >= 0:
        key = bytes(buf[p : p + key_len])
        p += key_len
    value_len = _I32.unpack_from(buf, p)[0]
    p += 4
    if value_len < -1 or value_len > end - p:
        raise _corrupt(pos, f"value length {value_len} does not fit the message")
    value = None
    if value_len >= 0:
        value = bytes(buf[p : p + value_len])
        p += value_len
    if p != end:
        raise _corrupt(pos, f"message size {size} leaves {end - p} bytes after the value")
    return LegacyRecord(offset, timestamp, key, value, magic, attributes)


def _walk(buf: memoryview, strict: bool) -> Iterator[tuple[int, int]]:
    """(position, message size) of each whole entry; a trailing partial one ends the walk unless *strict*."""
    end = len(buf)
    pos = 0
    while pos < end:
        left = end - pos
        if left < LOG_OVERHEAD:
            if strict:
                raise _corrupt(pos, f"partial entry: only {left} bytes remain")
            return
        size = _I32.unpack_from(buf, pos + 8)[0]
        # As Kafka's ByteBufferLogInputStream: a size below the smallest message is corruption,
        # a size beyond the buffer a partial entry.
        if size < RECORD_OVERHEAD_V0:
            raise _corrupt(pos, f"message size {size} is below the minimum {RECORD_OVERHEAD_V0}")
        if size > left - LOG_OVERHEAD:
            if strict:
                raise _corrupt(pos, f"partial entry: message size {size}, only {left - LOG_OVERHEAD} bytes remain")
            return
        yield pos, size
        pos += LOG_OVERHEAD + size


def iter_entries(
    buf: bytes | bytearray | memoryview, *, verify_crc: bool = True, strict: bool = False
) -> Iterator[LegacyRecord]:
    """The top-level entries of a message set, wrappers left closed (Kafka's shallow iteration).

    A trailing partial entry — a Fetch response may end with one — is
    dropped unless *strict*.

    Raises:
        CorruptRecordBatch: a bad size, magic, CRC, or key/value length.
    """
    view = memoryview(buf).cast("B")
    for pos, size in _walk(view, strict):
        yield _parse_entry(view, pos, size, verify_crc)


def _fix_lz4_header_checksum(data: bytes | memoryview) -> bytes | memoryview:
    """A magic-0 lz4 frame with its header checksum recomputed (Kafka ignores it for magic 0)."""
    if len(data) < 7 or bytes(data[:4]) != _LZ4_FRAME_MAGIC:
        return data  # not a frame: let the decompressor say so
    flg = data[4]
    hc_pos = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
    if len(data) <= hc_pos:
        return data
    hc = (xxhash.xxh32_intdigest(bytes(data[4:hc_pos])) >> 8) & 0xFF
    if data[hc_pos] == hc:
        return data
    return b"".join((bytes(data[:hc_pos]), bytes((hc,)), data[hc_pos + 1 :]))


def wrapper_payload(entry: LegacyRecord, max_size: int = DEFAULT_MAX_DECOMPRESSED) -> bytes:
    """The decompressed inner message set of a wrapper, at most *max_size* bytes.

    Raises:
        CorruptRecordBatch: a null value, zstd or an unknown codec (magic 0/1
            know only gzip, snappy and lz4), corrupt data, or more than *max_size*.
    """
    codec = entry.compression
    if codec == CompressionType.NONE:
        raise CorruptRecordBatch(f"legacy message at offset {entry.offset} is not compressed")
    if codec not in (CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4):
        raise CorruptRecordBatch(f"invalid codec {codec} for a magic-{entry.magic} wrapper at offset {entry.offset}")
    if entry.value is None:
        raise CorruptRecordBatch(f"compressed wrapper at offset {entry.offset} has a null value")
    data: bytes | memoryview = entry.value
    if codec == CompressionType.LZ4 and entry.magic == MAGIC_V0:
        data = _fix_lz4_header_checksum(data)
    try:
        return decompress(codec, data, max_size)
    except ProtocolError as exc:
        raise CorruptRecordBatch(f"wrapper at offset {entry.offset}: {exc}") from None


def iter_legacy_records(
    buf: bytes | bytearray | memoryview,
    *,
    verify_crc: bool = True,
    strict: bool = False,
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
) -> Iterator[LegacyRecord]:
    """Every message of a set, wrappers opened: absolute offsets, inherited LogAppendTime.

    Inner messages must have their wrapper's magic and no codec of their
    own.  The decompressed bytes of all wrappers together are bounded by
    *max_decompressed*; one wrapper's inner set is held at a time and its
    records are produced one by one.

    Raises:
        CorruptRecordBatch: anything malformed (iteration stops there).
    """
    budget = max_decompressed
    for entry in iter_entries(buf, verify_crc=verify_crc, strict=strict):
        if entry.compression == CompressionType.NONE:
            yield entry
            continue
        inner = wrapper_payload(entry, budget)
        budget -= len(inner)
        yield from _inner_records(entry, inner, verify_crc)


def _inner_records(wrapper: LegacyRecord, inner: bytes, verify_crc: bool) -> Iterator[LegacyRecord]:
    view = memoryview(inner)
    last_inner = None
    # A first pass over sizes alone finds the last inner offset (magic 1 offsets are
    # relative to it) without holding the records.
    for pos, _ in _walk(view, strict=True):
        last_inner = _I64.unpack_from(view, pos)[0]
    if last_inner is None:
        raise CorruptRecordBatch(f"compressed wrapper at offset {wrapper.offset} holds no messages")
    base = 0
    if wrapper.magic == MAGIC_V1 and wrapper.offset != 0:
        if wrapper.offset < last_inner:
            raise CorruptRecordBatch(
                f"wrapper offset {wrapper.offset} is below its last inner offset {last_inner} and not zero"
            )
        base = wrapper.offset - last_inner
    log_append = wrapper.timestamp_type == 1
    for pos, size in _walk(view, strict=True):
        record = _parse_entry(view, pos, size, verify_crc)
        if record.magic != wrapper.magic:
            raise CorruptRecordBatch(
                f"inner message magic {record.magic} does not match its wrapper's {wrapper.magic} "
                f"(wrapper offset {wrapper.offset})"
            )
        if record.compression != CompressionType.NONE:
            raise CorruptRecordBatch(f"nested compression inside the wrapper at offset {wrapper.offset}")
        if wrapper.magic == MAGIC_V1:
            attributes = record.attributes | TIMESTAMP_TYPE_MASK if log_append else record.attributes
            timestamp = wrapper.timestamp if log_append else record.timestamp
            record = LegacyRecord(base + record.offset, timestamp, record.key, record.value, record.magic, attributes)
        yield record


# -- encoding -------------------------------------------------------------------------


def encode_message(
    out: bytearray,
    offset: int,
    key: bytes | bytearray | memoryview | None,
    value: bytes | bytearray | memoryview | None,
    *,
    magic: int,
    timestamp: int = NO_TIMESTAMP,
    attributes: int = 0,
) -> None:
    """Appends one entry (offset, size, CRC-32 and message) to *out*.

    For magic 0 the timestamp and the LogAppendTime bit are dropped.
    """
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise ValueError(f"legacy magic must be 0 or 1, not {magic}")
    start = len(out)
    key_len = -1 if key is None else len(key)
    value_len = -1 if value is None else len(value)
    size = record_overhead(magic) + max(key_len, 0) + max(value_len, 0)
    out += _I64.pack(offset) + _I32.pack(size) + b"\x00\x00\x00\x00"
    if magic == MAGIC_V0:
        out += _MAGIC_V0_HEAD.pack(magic, attributes & COMPRESSION_CODEC_MASK)
    else:
        out += _MAGIC_V1_HEAD.pack(magic, attributes, timestamp)
    out += _I32.pack(key_len)
    if key is not None:
        out += key
    out += _I32.pack(value_len)
    if value is not None:
        out += value
    with memoryview(out) as view:
        crc = zlib.crc32(view[start + MAGIC_POSITION :])
    _U32.pack_into(out, start + 12, crc)


def _xerial(data: bytes | bytearray) -> bytes:
    """Snappy in Java's xerial stream framing, as Kafka's magic 0/1 producers wrote it."""
    out = bytearray(XERIAL_MAGIC + struct.pack(">ii", 1, 1))
    with memoryview(data) as view:
        for i in range(0, len(view), _XERIAL_BLOCK):
            block = bytes(cramjam.snappy.compress_raw(view[i : i + _XERIAL_BLOCK]))
            out += _I32.pack(len(block)) + block
    return bytes(out)


def _compress_inner(codec: int, magic: int, data: bytearray) -> bytes:
    if codec == CompressionType.SNAPPY:
        return _xerial(data)
    payload = compress(codec, data)
    if codec == CompressionType.LZ4 and magic == MAGIC_V0:
        # KAFKA-3160: 0.8/0.9 wrote the header checksum over the frame magic too.
        flg = payload[4]
        hc_pos = 6 + (8 if flg & 0x08 else 0) + (4 if flg & 0x01 else 0)
        broken = (xxhash.xxh32_intdigest(payload[:hc_pos]) >> 8) & 0xFF
        payload = payload[:hc_pos] + bytes((broken,)) + payload[hc_pos + 1 :]
    return payload


def build_message_set(
    records: Iterable[LegacyRecord],
    *,
    magic: int,
    compression: int = CompressionType.NONE,
    log_append_time: int | None = None,
) -> bytes:
    """Encodes *records* as a magic 0 or 1 message set.

    Uncompressed: one entry per record, with the record's offset.
    Compressed: one wrapper holding them all, as Kafka's
    ``MemoryRecordsBuilder`` writes it — inner offsets absolute for magic 0
    and relative (0..n-1) for magic 1, the wrapper at the last record's
    offset with (magic 1) the largest timestamp.  With *log_append_time*
    (magic 1) every message is marked LogAppendTime with that timestamp.
    The records' own attributes are ignored.

    Raises:
        ValueError: bad magic, an unknown codec or zstd (not valid before
            magic 2), or no records when compressing.
    """
    if magic not in (MAGIC_V0, MAGIC_V1):
        raise ValueError(f"legacy magic must be 0 or 1, not {magic}")
    if compression not in (CompressionType.NONE, CompressionType.GZIP, CompressionType.SNAPPY, CompressionType.LZ4):
        raise ValueError(f"codec {compression} is not valid for magic {magic}")
    # The LogAppendTime stamp, or None when the records keep their own (always for magic 0).
    lat = log_append_time if magic == MAGIC_V1 else None
    attributes = TIMESTAMP_TYPE_MASK if lat is not None else 0
    if compression == CompressionType.NONE:
        out = bytearray()
        for r in records:
            timestamp = lat if lat is not None else r.timestamp
            encode_message(out, r.offset, r.key, r.value, magic=magic, timestamp=timestamp, attributes=attributes)
        return bytes(out)
    inner = bytearray()
    count = 0
    last_offset = 0
    max_timestamp = NO_TIMESTAMP
    for r in records:
        timestamp = lat if lat is not None else r.timestamp
        inner_offset = count if magic == MAGIC_V1 else r.offset
        encode_message(inner, inner_offset, r.key, r.value, magic=magic, timestamp=timestamp, attributes=attributes)
        last_offset = r.offset
        max_timestamp = max(max_timestamp, timestamp)
        count += 1
    if not count:
        raise ValueError("a compressed message set needs at least one record")
    out = bytearray()
    encode_message(
        out, last_offset, None, _compress_inner(compression, magic, inner),
        magic=magic, timestamp=max_timestamp, attributes=attributes | compression,
    )
    return bytes(out)
