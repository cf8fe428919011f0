"""Fetched record sets straight to Arrow columns, with numpy doing the per-record work.

The Spark read path's hot loop.  Building one Python object per record costs
about 2 µs; here the only per-record Python step is the walk over record
lengths (each record's start depends on the previous one's length), and
every other field is read for all records of a record set at once: varints
are decoded as numpy arrays, keys and values are gathered into Arrow binary
columns without a Python ``bytes`` per record.

Rules as the consumer's (:mod:`mafka.client.record_decoder`): control batches
are skipped; records outside ``[min_offset, until_offset)`` are dropped;
compressed batches are decompressed (bounded, by :mod:`mafka.wire`); with
``aborted`` (read_committed), transactional batches of aborted transactions
are skipped.  Headers are parsed per record, and only when asked for.
"""

from __future__ import annotations

from array import array
from collections.abc import Iterable
from typing import Any

import numpy as np
import pyarrow as pa

from mafka.client.record_decoder import BatchFilter
from mafka.wire.batch import BATCH_HEADER_SIZE, LOG_OVERHEAD, iter_batches, validate_batch
from mafka.wire.compression import decompress
from mafka.wire.errors import CorruptRecordBatch, ProtocolError
from mafka.wire.records import decode_varint

__all__ = ["record_set_to_arrow", "arrow_schema"]

_HEADERS_TYPE = pa.list_(pa.struct([("key", pa.string()), ("value", pa.binary())]))


def arrow_schema(include_headers: bool = False) -> pa.Schema:
    fields = [
        pa.field("key", pa.binary()), pa.field("value", pa.binary()), pa.field("topic", pa.string()),
        pa.field("partition", pa.int32()), pa.field("offset", pa.int64()),
        pa.field("timestamp", pa.timestamp("us", tz="UTC")), pa.field("timestampType", pa.int32()),
    ]
    if include_headers:
        fields.append(pa.field("headers", _HEADERS_TYPE))
    return pa.schema(fields)


def _varints(buf: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Zigzag varints at every position: (values, positions after them).

    Varints of up to three bytes (every length and delta below 2**20) take
    one pass of whole-array operations; longer ones fall back to a loop
    over bytes.  ``buf`` must have spare bytes after its last varint.
    """
    if len(pos) and pos.max() >= len(buf) - 2:
        raise ProtocolError("varint runs past the end of its batch")
    b0 = buf[pos].astype(np.int64)
    b1 = buf[pos + 1].astype(np.int64)
    b2 = buf[pos + 2].astype(np.int64)
    two = b0 >= 0x80
    three = two & (b1 >= 0x80)
    if (three & (b2 >= 0x80)).any():
        return _long_varints(buf, pos)
    u = (b0 & 0x7F) | np.where(two, (b1 & 0x7F) << 7, 0) | np.where(three, b2 << 14, 0)
    return (u >> 1) ^ -(u & 1), pos + 1 + two + three


def _long_varints(buf: np.ndarray, pos: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    value = np.zeros(len(pos), dtype=np.uint64)
    at = pos.copy()
    live = np.ones(len(pos), dtype=bool)
    shift = 0
    while live.any():
        if shift > 63:
            raise ProtocolError("varint longer than 10 bytes")
        idx = np.nonzero(live)[0]
        if at[idx].max() >= len(buf):
            raise ProtocolError("varint runs past the end of its batch")
        b = buf[at[idx]].astype(np.uint64)
        value[idx] |= (b & np.uint64(0x7F)) << np.uint64(shift)
        at[idx] += 1
        live[idx] = b >= 0x80
        shift += 7
    signed = (value >> np.uint64(1)).astype(np.int64) ^ -(value & np.uint64(1)).astype(np.int64)
    return signed, at


def _binary(buf: np.ndarray, starts: np.ndarray, lengths: np.ndarray) -> pa.Array:
    """An Arrow binary column of ``buf[start:start+length]`` per row; a negative length is null.

    Built as a binary-view array over ``buf`` (16-byte views: lengths up to 12
    inline, longer ones as prefix + offset) and cast to binary, so the bytes
    are gathered by Arrow's C++ rather than per record in Python.  ``buf``
    must have 12 spare bytes at its end.
    """
    n = len(starts)
    present = lengths >= 0
    sizes = np.where(present, lengths, 0).astype(np.int32)
    views = np.zeros((n, 4), dtype=np.int32)
    views[:, 0] = sizes
    raw = views.view(np.uint8).reshape(n, 16)
    windows = np.lib.stride_tricks.as_strided(buf, shape=(len(buf) - 12, 12), strides=(1, 1))
    long = sizes > 12
    if long.all():
        raw[:, 4:8] = windows[starts, :4]
        views[:, 3] = starts
    else:
        inline = (sizes > 0) & ~long
        if inline.any():
            idx = np.nonzero(inline)[0]
            data = windows[starts[idx]]
            data[np.arange(12) >= sizes[idx, None]] = 0
            raw[idx, 4:16] = data
        if long.any():
            idx = np.nonzero(long)[0]
            raw[idx, 4:8] = windows[starts[idx], :4]
            views[idx, 3] = starts[idx]
    validity = None
    if not present.all():
        validity = pa.py_buffer(np.packbits(present, bitorder="little"))
    view = pa.Array.from_buffers(pa.binary_view(), n, [validity, pa.py_buffer(views), pa.py_buffer(buf)],
                                 null_count=int(n - present.sum()))
    return view.cast(pa.binary())


def record_set_to_arrow(topic: str, partition: int, data: Any, min_offset: int, until_offset: int, *,
                        include_headers: bool = False, aborted: Iterable[Any] | None = None,
                        check_crcs: bool = False) -> pa.RecordBatch | None:
    """The records of one fetched record set in ``[min_offset, until_offset)`` as an Arrow batch (None if none).

    Raises:
        CorruptRecordBatch: a batch that cannot be parsed.
    """
    if not isinstance(data, bytes):
        data = bytes(data)
    skipped = BatchFilter(aborted)
    bodies: list[bytes] = []
    body_base = 0
    # Where each record's length varint is, in the joined bodies (an int64 array.array, so numpy
    # takes it without converting element by element).
    starts = array("q")
    append = starts.append
    batch_ends: list[tuple[int, int]] = []  # (records so far, end of that batch's body)
    batch_rows: list[tuple[int, int, int, int]] = []  # (records, base_offset, base_timestamp or -1, log-append ts)
    for pos, h in iter_batches(data):
        last = h.base_offset + h.last_offset_delta
        if last < min_offset or h.base_offset >= until_offset:
            continue
        if check_crcs:
            validate_batch(data, pos)
        if skipped(data, pos, h):
            continue
        attributes = h.attributes
        start, end = pos + BATCH_HEADER_SIZE, pos + h.batch_length + LOG_OVERHEAD
        if attributes & 0x07:
            try:
                body = decompress(attributes & 0x07, memoryview(data)[start:end])
            except ProtocolError as exc:
                raise CorruptRecordBatch(f"{topic}-{partition} batch at offset {h.base_offset}: {exc}") from exc
            body = bytes(body)
        else:
            body = data[start:end]
        # The walk over record lengths, the one sequential step: it only notes where each
        # record's length varint is; lengths are decoded again, checked, for all at once below.
        p = 0
        try:
            for _ in range(h.record_count):
                append(body_base + p)
                b = body[p]
                if b < 0x80:
                    p += 1 + ((b >> 1) ^ -(b & 1))
                else:
                    c = body[p + 1]
                    if c < 0x80:
                        u = (b & 0x7F) | (c << 7)
                        p += 2 + ((u >> 1) ^ -(u & 1))
                    else:
                        record_length, q = decode_varint(body, p)
                        p = q + record_length
                if p <= 0:
                    raise ProtocolError("record length overruns its batch")
        except (IndexError, ProtocolError) as exc:
            raise CorruptRecordBatch(f"{topic}-{partition} batch at offset {h.base_offset}: {exc}") from exc
        batch_ends.append((len(starts), body_base + len(body)))
        bodies.append(body)
        body_base += len(body)
        append_time = h.max_timestamp if attributes & 0x08 else -1
        batch_rows.append((h.record_count, h.base_offset, h.base_timestamp, append_time))
    if not starts:
        return None
    buf = np.frombuffer(b"".join(bodies) + bytes(16), dtype=np.uint8)  # spare bytes for _binary
    try:
        length, at = _varints(buf, np.frombuffer(starts, dtype=np.int64))
        record_end = at + length
        # The walk chained each record to the next; each batch's last record must end with its batch.
        last_records = np.asarray([count - 1 for count, _ in batch_ends], dtype=np.int64)
        if (length <= 0).any() or (record_end[last_records] != np.asarray([end for _, end in batch_ends])).any():
            raise ProtocolError("a record's length overruns its batch")
        at = at + 1  # past the attributes byte
        ts_delta, at = _varints(buf, at)
        off_delta, at = _varints(buf, at)
        key_len, at = _varints(buf, at)
        key_start = at
        at = at + np.maximum(key_len, 0)
        value_len, at = _varints(buf, at)
        value_start = at
        value_end = value_start + np.maximum(value_len, 0)
        # The fields must fit their record, and a record without headers ends right after its count.
        bad = (key_len < -1) | (value_len < -1) | (value_end >= record_end)
        no_headers = ~bad
        no_headers[no_headers] = buf[value_end[no_headers]] == 0
        bad |= no_headers & (value_end + 1 != record_end)
        if bad.any():
            raise ProtocolError(f"record fields overrun the record at offset index {int(np.argmax(bad))}")
    except (IndexError, ProtocolError) as exc:
        raise CorruptRecordBatch(f"{topic}-{partition}: {exc}") from exc
    counts = np.array([r[0] for r in batch_rows], dtype=np.int64)
    offsets = np.repeat(np.array([r[1] for r in batch_rows], dtype=np.int64), counts) + off_delta
    log_append = np.repeat(np.array([r[3] for r in batch_rows], dtype=np.int64), counts)
    timestamps = np.where(log_append >= 0, log_append,
                          np.repeat(np.array([r[2] for r in batch_rows], dtype=np.int64), counts) + ts_delta)
    keep = (offsets >= min_offset) & (offsets < until_offset)
    if not keep.all():
        idx = np.nonzero(keep)[0]
        if not len(idx):
            return None
        offsets, timestamps, log_append = offsets[idx], timestamps[idx], log_append[idx]
        key_start, key_len, value_start, value_len = key_start[idx], key_len[idx], value_start[idx], value_len[idx]
    n = len(offsets)
    arrays = [
        _binary(buf, key_start, key_len),
        _binary(buf, value_start, value_len),
        pa.repeat(pa.scalar(topic, pa.string()), n),
        pa.array(np.full(n, partition, dtype=np.int32)),
        pa.array(offsets),
        pa.array(timestamps * 1000, pa.timestamp("us", tz="UTC")),
        pa.array((log_append >= 0).astype(np.int32)),
    ]
    if include_headers:
        arrays.append(_headers(buf, value_start, value_len))
    return pa.RecordBatch.from_arrays(arrays, schema=arrow_schema(include_headers))


def _headers(buf: np.ndarray, value_start: np.ndarray, value_len: np.ndarray) -> pa.Array:
    """The headers column, parsed record by record (headers are rare and small)."""
    raw = buf.tobytes()
    rows = []
    for start, length in zip(value_start.tolist(), value_len.tolist(), strict=True):
        p = start + max(length, 0)
        count, p = decode_varint(raw, p)
        row = []
        for _ in range(count):
            n, p = decode_varint(raw, p)
            k = raw[p:p + n].decode("utf-8", "replace")
            p += n
            n, p = decode_varint(raw, p)
            v = None if n < 0 else raw[p:p + n]
            p += max(n, 0)
            row.append({"key": k, "value": v})
        rows.append(row)
    return pa.array(rows, _HEADERS_TYPE)
