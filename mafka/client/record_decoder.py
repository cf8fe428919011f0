"""Fetched record sets → :class:`~mafka.client.message.Message` objects, on the consumer's thread.

The consumer's per-record cost lives here, so this is one tight loop that
builds Messages directly (no intermediate record objects).  Batch walking,
decompression (bounded) and CRC checks come from :mod:`mafka.wire`.

Rules (Kafka's ``Fetcher``): records below ``min_offset`` are skipped (a
compressed batch is returned whole even when the fetch started inside it);
control batches (transaction markers) are never returned, under either
isolation level; with ``read_committed``, transactional batches of producers
listed in the response's aborted transactions, from the transaction's first
offset up to its ABORT marker, are skipped (:class:`BatchFilter`).  A partial
batch at the end of the set is ignored (the next fetch starts there).
``next_offset`` counts skipped batches too, so the position moves past them.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable
from typing import Any

from mafka.client.message import TIMESTAMP_CREATE_TIME, TIMESTAMP_LOG_APPEND_TIME, Message
from mafka.wire.batch import BATCH_HEADER_SIZE, LOG_OVERHEAD, iter_batches, validate_batch
from mafka.wire.compression import decompress
from mafka.wire.errors import CorruptRecordBatch, ProtocolError
from mafka.wire.records import decode_varint, decode_varlong

__all__ = ["decode_records", "DecodeResult", "BatchFilter"]


class DecodeResult:
    """Messages decoded from one record set and the offset the next fetch should start at."""

    __slots__ = ("messages", "next_offset")

    def __init__(self, messages: list[Message], next_offset: int) -> None:
        self.messages = messages
        self.next_offset = next_offset


def decode_records(
    topic: str,
    partition: int,
    data: bytes | memoryview,
    min_offset: int,
    *,
    check_crcs: bool = False,
    aborted: Iterable[Any] | None = None,
) -> DecodeResult:
    """Decodes every whole batch of ``data``.

    Returns:
        messages at offsets >= ``min_offset``, and ``next_offset`` = the offset
        after the last whole batch (``min_offset`` if there was none).

    Raises:
        CorruptRecordBatch: a batch that cannot be parsed (or fails its CRC when checked).
    """
    if not isinstance(data, bytes):
        data = bytes(data)  # one copy per record set, so record fields slice to bytes directly
    out: list[Message] = []
    append = out.append
    next_offset = min_offset
    skipped = BatchFilter(aborted)
    for pos, h in iter_batches(data):
        next_offset = max(next_offset, h.base_offset + h.last_offset_delta + 1)
        wanted = h.base_offset + h.last_offset_delta >= min_offset
        if wanted and check_crcs:
            validate_batch(data, pos)
        # Every batch goes through the filter, even one before min_offset: its markers
        # end aborted transactions that later batches would otherwise be judged by.
        if skipped(data, pos, h) or not wanted:
            continue
        attributes = h.attributes
        start = pos + BATCH_HEADER_SIZE
        end = pos + h.batch_length + LOG_OVERHEAD
        codec = attributes & 0x07
        if codec:
            try:
                body = decompress(codec, memoryview(data)[start:end])
            except ProtocolError as exc:
                raise CorruptRecordBatch(
                    f"{topic}-{partition} batch at offset {h.base_offset}: {exc}") from exc
            p, e = 0, len(body)
        else:
            body = data
            p, e = start, end
        if attributes & 0x08:
            ts_type, log_append = TIMESTAMP_LOG_APPEND_TIME, h.max_timestamp
        else:
            ts_type, log_append = TIMESTAMP_CREATE_TIME, None
        base_offset = h.base_offset
        base_ts = h.base_timestamp
        epoch = h.partition_leader_epoch
        try:
            # Varints are read inline with one- and two-byte fast paths: this loop is the
            # consumer's per-record cost, and a function call per field doubles it.
            for _ in range(h.record_count):
                b = body[p]
                if b < 0x80:
                    length = (b >> 1) ^ -(b & 1)
                    p += 1
                else:
                    c = body[p + 1]
                    if c < 0x80:
                        u = (b & 0x7F) | (c << 7)
                        length = (u >> 1) ^ -(u & 1)
                        p += 2
                    else:
                        length, p = decode_varint(body, p)
                rec_end = p + length
                if length <= 0 or rec_end > e:
                    raise ProtocolError(f"record length {length} overruns its batch")
                p += 1  # attributes
                b = body[p]
                if b < 0x80:
                    ts_delta = (b >> 1) ^ -(b & 1)
                    p += 1
                else:
                    c = body[p + 1]
                    if c < 0x80:
                        u = (b & 0x7F) | (c << 7)
                        ts_delta = (u >> 1) ^ -(u & 1)
                        p += 2
                    else:
                        ts_delta, p = decode_varlong(body, p)
                b = body[p]
                if b < 0x80:
                    off_delta = (b >> 1) ^ -(b & 1)
                    p += 1
                else:
                    c = body[p + 1]
                    if c < 0x80:
                        u = (b & 0x7F) | (c << 7)
                        off_delta = (u >> 1) ^ -(u & 1)
                        p += 2
                    else:
                        off_delta, p = decode_varint(body, p)
                b = body[p]
                if b < 0x80:
                    n = (b >> 1) ^ -(b & 1)
                    p += 1
                else:
                    c = body[p + 1]
                    if c < 0x80:
                        u = (b & 0x7F) | (c << 7)
                        n = (u >> 1) ^ -(u & 1)
                        p += 2
                    else:
                        n, p = decode_varint(body, p)
                if n < 0:
                    key = None
                else:
                    key = body[p:p + n]
                    p += n
                b = body[p]
                if b < 0x80:
                    n = (b >> 1) ^ -(b & 1)
                    p += 1
                else:
                    c = body[p + 1]
                    if c < 0x80:
                        u = (b & 0x7F) | (c << 7)
                        n = (u >> 1) ^ -(u & 1)
                        p += 2
                    else:
                        n, p = decode_varint(body, p)
                if n < 0:
                    value = None
                else:
                    value = body[p:p + n]
                    p += n
                if body[p] == 0:
                    headers = None
                    p += 1
                else:
                    headers, p = _headers(body, p, rec_end)
                if p != rec_end:
                    raise ProtocolError(f"record fields take {p - rec_end + length} of {length} bytes")
                offset = base_offset + off_delta
                if offset < min_offset:
                    continue
                append(Message(topic, partition, offset, key, value, headers, ts_type,
                               base_ts + ts_delta if log_append is None else log_append, None, epoch))
        except (IndexError, ProtocolError) as exc:
            raise CorruptRecordBatch(f"{topic}-{partition} batch at offset {base_offset}: {exc}") from exc
    return DecodeResult(out, next_offset)


class BatchFilter:
    """Which batches of a record set hold no records for the application (called for every
    batch, in offset order).

    Control batches never do.  With ``aborted`` (the Fetch response's aborted
    transactions; read_committed) Kafka's ``Fetcher`` algorithm decides: the
    aborted transactions wait in a min-heap by first offset; before a batch
    of a producer is judged, those that began at or before the batch's last
    offset move their producer ids into the aborted set; a transactional
    batch of a producer in that set is skipped; that producer's ABORT marker
    takes it out again (its later transactions are judged afresh).
    """

    __slots__ = ("_starts", "_aborting")

    def __init__(self, aborted: Iterable[Any] | None) -> None:
        self._starts: list[tuple[int, int]] | None = None
        if aborted is not None:
            self._starts = [(a.first_offset, a.producer_id) for a in aborted]
            heapq.heapify(self._starts)
        self._aborting: set[int] = set()

    def __call__(self, data: Any, pos: int, h: Any) -> bool:
        attributes = h.attributes
        starts = self._starts
        if starts is not None and h.producer_id >= 0:
            last = h.base_offset + h.last_offset_delta
            while starts and starts[0][0] <= last:
                self._aborting.add(heapq.heappop(starts)[1])
            if attributes & 0x20:  # control batch: an ABORT marker ends the producer's abort
                if h.producer_id in self._aborting and _is_abort_marker(data, pos, h):
                    self._aborting.discard(h.producer_id)
                return True
            if attributes & 0x10 and h.producer_id in self._aborting:
                return True
        return bool(attributes & 0x20)


def _headers(body: Any, p: int, end: int) -> tuple[list[tuple[str, bytes | None]], int]:
    count, p = decode_varint(body, p)
    if count < 0 or 2 * count > end - p:
        raise ProtocolError(f"invalid header count {count}")
    out = []
    for _ in range(count):
        n, p = decode_varint(body, p)
        if n < 0 or p + n > end:
            raise ProtocolError("bad header key length")
        k = bytes(body[p:p + n]).decode("utf-8", "replace")
        p += n
        n, p = decode_varint(body, p)
        if n < 0:
            v = None
        else:
            if p + n > end:
                raise ProtocolError("bad header value length")
            v = bytes(body[p:p + n])
            p += n
        out.append((k, v))
    return out, p


def _is_abort_marker(data: Any, pos: int, h: Any) -> bool:
    """True if the control batch at ``pos`` holds an ABORT marker (control key type 0)."""
    try:
        p = pos + BATCH_HEADER_SIZE
        _, p = decode_varint(data, p)  # length
        p += 1
        _, p = decode_varlong(data, p)
        _, p = decode_varint(data, p)
        n, p = decode_varint(data, p)
        if n < 4:
            return False
        return int.from_bytes(bytes(data[p + 2:p + 4]), "big") == 0
    except (IndexError, ProtocolError, CorruptRecordBatch):
        return False
