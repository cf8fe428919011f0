"""A producer's open record batch: records encoded as they are appended.  Pure: no I/O.

:class:`ProducerBatch` encodes each record straight into a records body
(``DefaultRecord.java`` layout, zigzag varints) when it is appended, so the
work of a ``produce()`` call is done once, on the caller's thread; sending
only wraps the body in a header (:func:`mafka.wire.records.assemble_batch`:
compression, CRC-32C).  The built bytes are kept for retries and rebuilt
only if the producer id or sequence changes (an idempotent producer reset).
"""

from __future__ import annotations

from typing import Any

from mafka.wire.records import assemble_batch

__all__ = ["ProducerBatch", "encoded_record_size"]

#: Header bytes of a batch, and the most a record's framing adds beyond key/value/headers.
BATCH_OVERHEAD = 61
_RECORD_OVERHEAD_MAX = 5 + 1 + 10 + 5 + 5 + 5 + 5


def _zigzag(out: bytearray, value: int) -> None:
    u = (value << 1) ^ (value >> 63)
    while u >= 0x80:
        out.append((u & 0x7F) | 0x80)
        u >>= 7
    out.append(u)


def _zigzag_bytes(value: int) -> bytes:
    out = bytearray()
    _zigzag(out, value)
    return bytes(out)


#: Zigzag varints of 0 .. 16383 (timestamp deltas, offset deltas and lengths are nearly
#: always in this range): one list index instead of a loop per field of every record.
_SMALL = 16384
_VARINTS = [_zigzag_bytes(v) for v in range(_SMALL)]


def encoded_record_size(key: bytes | None, value: bytes | None, headers: Any) -> int:
    """An upper bound of one record's encoded size (for size checks before appending)."""
    size = _RECORD_OVERHEAD_MAX + (len(key) if key else 0) + (len(value) if value else 0)
    if headers:
        for k, v in headers:
            size += 10 + len(k) * 4 + (len(v) if v else 0)
    return size


class ProducerBatch:
    """Records for one topic-partition, sent together.

    Attributes:
        topic, partition: where it goes.
        count: records appended.
        size: encoded bytes so far (header included).
        payload: encoded record bytes (what counts against ``queue.buffering.max.kbytes``).
        records: per record ``(on_delivery, key, value, timestamp, headers)``,
            kept for delivery reports.
        created: monotonic seconds at the first append (linger and delivery timeout).
        base_sequence: the idempotent sequence of the first record, -1 before the first send.
        attempts: sends so far.
    """

    __slots__ = (
        "topic", "partition", "body", "count", "size", "base_ts", "max_ts", "records",
        "created", "limit", "base_sequence", "producer_id", "producer_epoch", "attempts",
        "_built", "_built_for", "compression", "sent_at", "retry_at", "payload", "purged",
    )

    def __init__(self, topic: str, partition: int, limit: int, compression: int, now: float) -> None:
        self.topic = topic
        self.partition = partition
        self.body = bytearray()
        self.count = 0
        self.size = BATCH_OVERHEAD
        self.payload = 0
        self.purged = False  # reported _PURGE_INFLIGHT: its answer, if any, is ignored
        self.base_ts = -1
        self.max_ts = -1
        self.records: list[tuple[Any, bytes | None, bytes | None, int, Any]] = []
        self.created = now
        self.limit = limit
        self.compression = compression
        self.base_sequence = -1
        self.producer_id = -1
        self.producer_epoch = -1
        self.attempts = 0
        self.sent_at = 0.0
        self.retry_at = 0.0
        self._built: bytes | None = None
        self._built_for: tuple[int, int, int, bool] | None = None

    def try_append(self, timestamp: int, key: bytes | None, value: bytes | None,
                   headers: Any, on_delivery: Any) -> bool:
        """Encodes one record into the batch; False (nothing appended) if it would exceed the limit.

        The first record is always accepted (a single record may be as large
        as the caller allowed).

        Raises:
            TypeError: key/value not bytes-like or None, a header key not str.
        """
        if self.count == 0:
            self.base_ts = self.max_ts = timestamp
        varints = _VARINTS
        delta = timestamp - self.base_ts
        count = self.count
        if (
            not headers and 0 <= delta < _SMALL and count < _SMALL
            and (value is None or len(value) < 8000) and (key is None or len(key) < 8000)
        ):
            # The common record: small fields, no headers.  Its length is known from the
            # parts, so it is written straight into the body without a temporary copy.
            vt = varints[delta]
            vo = varints[count]
            if key is None:
                vk, key_bytes = b"\x01", b""
            else:
                vk, key_bytes = varints[len(key)], key
            if value is None:
                vv, value_bytes = b"\x01", b""
            else:
                vv, value_bytes = varints[len(value)], value
            length = 2 + len(vt) + len(vo) + len(vk) + len(key_bytes) + len(vv) + len(value_bytes)
            prefix = varints[length]
            added = len(prefix) + length
            if count and self.size + added > self.limit:
                return False
            self.body += b"".join((prefix, b"\x00", vt, vo, vk, key_bytes, vv, value_bytes, b"\x00"))
            self.size += added
            self.payload += length
            if timestamp > self.max_ts:
                self.max_ts = timestamp
            self.count = count + 1
            self.records.append((on_delivery, key, value, timestamp, headers))
            self._built = None
            return True
        rec = bytearray(b"\x00")  # attributes
        if 0 <= delta < _SMALL:
            rec += varints[delta]
        else:
            _zigzag(rec, delta)
        if count < _SMALL:
            rec += varints[count]
        else:
            _zigzag(rec, count)
        if key is None:
            rec.append(1)
        else:
            n = len(key)
            if n < _SMALL:
                rec += varints[n]
            else:
                _zigzag(rec, n)
            rec += key
        if value is None:
            rec.append(1)
        else:
            n = len(value)
            if n < _SMALL:
                rec += varints[n]
            else:
                _zigzag(rec, n)
            rec += value
        if headers:
            _zigzag(rec, len(headers))
            for h_key, h_value in headers:
                if not isinstance(h_key, str):
                    raise TypeError(f"header key must be str, not {type(h_key).__name__}")
                encoded = h_key.encode("utf-8")
                _zigzag(rec, len(encoded))
                rec += encoded
                if h_value is None:
                    rec.append(1)
                else:
                    if isinstance(h_value, str):
                        h_value = h_value.encode("utf-8")
                    _zigzag(rec, len(h_value))
                    rec += h_value
        else:
            rec.append(0)
        length = len(rec)
        added = length + (1 if length < 64 else 2 if length < 8192 else 3 if length < 1048576 else 5)
        if self.count and self.size + added > self.limit:
            return False
        if length < _SMALL:
            self.body += varints[length]
        else:
            _zigzag(self.body, length)
        self.body += rec
        self.size += added
        self.payload += length
        if timestamp > self.max_ts:
            self.max_ts = timestamp
        self.count += 1
        self.records.append((on_delivery, key, value, timestamp, headers))
        self._built = None
        return True

    def is_full(self) -> bool:
        return self.size >= self.limit

    def build(self, producer_id: int = -1, producer_epoch: int = -1, base_sequence: int = -1,
              transactional: bool = False) -> bytes:
        """The batch bytes for these producer fields (cached while they do not change)."""
        key = (producer_id, producer_epoch, base_sequence, transactional)
        if self._built is None or self._built_for != key:
            attributes = self.compression | (0x10 if transactional else 0)
            self._built = assemble_batch(
                self.body,
                attributes=attributes,
                record_count=self.count,
                base_offset=0,
                last_offset_delta=self.count - 1,
                base_timestamp=self.base_ts,
                max_timestamp=self.max_ts,
                producer_id=producer_id,
                producer_epoch=producer_epoch,
                base_sequence=base_sequence,
                partition_leader_epoch=-1,
            )
            self._built_for = key
        return self._built

    def split(self, now: float) -> list[ProducerBatch]:
        """One batch per record (after MESSAGE_TOO_LARGE, so only the oversized record fails)."""
        out = []
        for on_delivery, key, value, timestamp, headers in self.records:
            single = ProducerBatch(self.topic, self.partition, self.limit, self.compression, now)
            single.created = self.created
            single.try_append(timestamp, key, value, headers, on_delivery)
            out.append(single)
        return out
