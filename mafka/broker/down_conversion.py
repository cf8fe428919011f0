"""Down-conversion of stored v2 batches for Fetch v0–3 (Kafka's ``RecordsUtil.downConvert``).

Fetch v0–1 clients read magic 0 messages and v2–3 clients magic 1; the log
holds only v2 batches.  :func:`down_convert` reads one partition's fetched
file region batch by batch and writes each record as a legacy message with
its absolute offset, key, value and (magic 1) timestamp, marked
LogAppendTime when its batch is.  Control batches (transaction markers) and
records below the fetch offset are skipped; headers do not exist before v2.

The output is **uncompressed**: Kafka keeps each batch's codec (one
compressed wrapper per batch), but a legacy client reads either, and plain
messages can be cut and resumed at any record.  zstd batches are refused
as Kafka refuses them (UNSUPPORTED_COMPRESSION_TYPE: magic 0/1 had no
zstd), or end the answer when they are not its first batch.

Size limits (Kafka's ``hardMaxBytesLimit`` and KIP-74): the converted bytes
are cut at the limit, so the answer may end with a partial message, which
every legacy client skips (and fetches again from, with a larger size if
it was the only one).  For Fetch v3 the first message of the response is
kept whole even above the limit, as Kafka's v3 returns at least one
message; Fetch v0–2 get the partial message, as Kafka's hard limit gives
them.  The conversion stops as soon as the limit is reached, so it reads,
decodes and holds at most one chunk (64 KiB) or batch beyond what it
returns.
"""

from __future__ import annotations

import logging
import os
import struct
from collections.abc import Iterator

from mafka.errors import CorruptMessageError, UnsupportedCompressionTypeError
from mafka.log.segment import FileRegion
from mafka.wire.batch import BATCH_HEADER_SIZE, LOG_APPEND_TIME, LOG_OVERHEAD, MAGIC_V2, BatchHeader
from mafka.wire.compression import DEFAULT_MAX_DECOMPRESSED, CompressionType
from mafka.wire.errors import CorruptRecordBatch, ProtocolError
from mafka.wire.legacy_records import TIMESTAMP_TYPE_MASK, encode_message
from mafka.wire.records import decode_batch

__all__ = ["down_convert", "fetch_magic"]

log = logging.getLogger("mafka.broker.down_conversion")

#: Bytes read from the segment at a time (a larger batch is read alone).
_CHUNK = 64 * 1024
_I32 = struct.Struct(">i")


def fetch_magic(fetch_version: int) -> int | None:
    """The message format a Fetch version's client reads: 0 (v0–1), 1 (v2–3), or None (v4+: the stored v2)."""
    if fetch_version <= 1:
        return 0
    if fetch_version <= 3:
        return 1
    return None


def _batches(region: FileRegion) -> Iterator[memoryview]:
    """The whole batches of a file region, in order; a batch cut by the region's end ends the walk.

    Raises:
        CorruptRecordBatch: a batch length below a v2 header.
    """
    fd, pos, end = region.fd, region.position, region.position + region.length
    while pos < end:
        chunk = memoryview(os.pread(fd, min(end - pos, _CHUNK), pos))
        used = 0
        while len(chunk) - used >= LOG_OVERHEAD:
            size = _I32.unpack_from(chunk, used + 8)[0] + LOG_OVERHEAD
            if size < BATCH_HEADER_SIZE:
                raise CorruptRecordBatch(f"stored batch at file position {pos + used} has length {size - LOG_OVERHEAD}")
            if used + size > len(chunk):
                break
            yield chunk[used : used + size]
            used += size
        if used == 0:
            if len(chunk) < LOG_OVERHEAD:
                return
            # One batch larger than a chunk: read it alone, if the region holds all of it.
            if pos + size > end:
                return
            whole = os.pread(fd, size, pos)
            if len(whole) < size:
                return
            yield memoryview(whole)
            used = size
        pos += used


def down_convert(
    region: FileRegion | None,
    fetch_offset: int,
    magic: int,
    limit: int,
    *,
    keep_first_whole: bool,
    max_decompressed: int = DEFAULT_MAX_DECOMPRESSED,
) -> bytes:
    """The records of *region* from *fetch_offset* on, as an uncompressed magic 0 or 1 message set.

    Args:
        region: a :class:`~mafka.log.segment.FileRegion` from the log's read
            (its first batch whole), or None for no data.
        fetch_offset: records below it (in the first batch) are left out.
        magic: 0 or 1.
        limit: the bytes to return at most; the last message may be cut.
        keep_first_whole: return the first message whole even above *limit* (Fetch v3+).

    Raises:
        UnsupportedCompressionTypeError: the first batch to convert is zstd.
        CorruptMessageError: the first batch to convert does not decode (a
            later one ends the answer instead).
    """
    if region is None or (limit <= 0 and not keep_first_whole):
        return b""
    out = bytearray()
    cap = limit if not keep_first_whole else -1  # -1 until the first message is written
    try:
        for batch in _batches(region):
            header = BatchHeader(batch)
            if header.magic != MAGIC_V2:
                raise CorruptRecordBatch(f"stored batch at offset {header.base_offset} has magic {header.magic}")
            if header.is_control or header.next_offset <= fetch_offset:
                continue
            if header.compression == CompressionType.ZSTD:
                if not out:
                    raise UnsupportedCompressionTypeError(
                        "zstd-compressed batches cannot be down-converted for Fetch v0-3 (as in Kafka)"
                    )
                break
            decoded = decode_batch(batch, verify_crc=False, max_decompressed=max_decompressed)
            attributes = TIMESTAMP_TYPE_MASK if header.timestamp_type == LOG_APPEND_TIME else 0
            for record in decoded.records:
                if record.offset < fetch_offset:
                    continue
                encode_message(
                    out, record.offset, record.key, record.value,  # type: ignore[union-attr]
                    magic=magic, timestamp=record.timestamp, attributes=attributes,
                )
                if cap < 0:
                    cap = max(limit, len(out))
                if len(out) >= cap:
                    break
            if 0 <= cap <= len(out):
                break
    except ProtocolError as exc:
        if not out:
            raise CorruptMessageError(f"stored data does not decode: {exc}") from None
        log.warning("down-conversion stopped at a batch that does not decode: %s", exc)
    if cap >= 0 and len(out) > cap:
        del out[cap:]
    return bytes(out)
