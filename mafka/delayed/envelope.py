"""The envelope: a produced batch held in its partition's log until due, invisible to consumers.

An envelope is a **control batch** (attributes bit 5), which every Kafka
client skips without handing it to the application: librdkafka ignores a
control record of a type it does not know ("Unsupported ctrl message type"),
Java's ``ControlRecordType.parse`` answers UNKNOWN, kafka-python and aiokafka
skip control batches.  Its header keeps what the producer and the log need
from the original batch:

* ``lastOffsetDelta`` — the original's, so the envelope takes exactly the
  offsets the records would have taken and the producer is acknowledged
  with them (``recordCount`` is 1: like a compacted batch, the envelope
  has fewer records than offsets);
* ``producerId`` / ``producerEpoch`` / ``baseSequence`` — the original's, so
  idempotence keeps working across plain and delayed batches on every
  replica (the producer state reads sequences from batch headers only);
* base and max timestamps — the original's.

Its one record has the key of a control record, version 0 and type
:data:`ENVELOPE_TYPE` (``0x4D44``, "MD": far from Kafka's types 0–6), and the
value::

    version      int16   (0)
    runs         int32   (k)
    run          k × (due_ms int64, length int32): consecutive records due at
                 the same time, in record order (the lengths add up to the
                 original's record count; one run for a batch of one delay)
    batch        the original batch, byte for byte (its CRC still valid)

so the envelope adds its framing and at most 12 bytes per record to the batch
(``mafka.log.log.size_limit`` lets it exceed ``max.message.bytes`` by that).

At due time the records of one due time are *delivered*: appended as an
ordinary batch (:func:`delivery_batch`), uncompressed, non-idempotent, each
record with the request headers removed and two added:
``mafka.delayed.offset`` (the offset its producer was acknowledged with) and
``mafka.original.timestamp``.  Such a batch is recognisable from its first
record alone (:func:`delivered_offset`), which is how a replica learns which
envelopes are done by reading the log.
"""

from __future__ import annotations

import struct
from collections.abc import Sequence
from dataclasses import dataclass

from mafka.wire.batch import (
    BATCH_HEADER_SIZE,
    CONTROL_FLAG_MASK,
    TRANSACTIONAL_FLAG_MASK,
    BatchHeader,
    validate_batch,
)
from mafka.wire.compression import CompressionType
from mafka.wire.errors import CorruptRecordBatch
from mafka.wire.records import (
    Record,
    _encode_record,
    assemble_batch,
    build_batch,
    decode_batch,
    decode_varint,
    decode_varlong,
)

from .headers import DELAYED_OFFSET_HEADER, ORIGINAL_TIMESTAMP_HEADER, strip_delay_headers

__all__ = [
    "CANCEL_TYPE",
    "ENVELOPE_TYPE",
    "HALF_TYPE",
    "Delivery",
    "DueGroup",
    "Envelope",
    "cancel_batch",
    "mafka_control_type",
    "read_cancel",
    "read_delivery",
    "delivery_batch",
    "envelope_batch",
    "is_envelope",
    "read_envelope",
]

#: the control record type of an envelope ("MD")
ENVELOPE_TYPE = 0x4D44
#: the control record type of a local-transaction half message's envelope ("MH"): held until resolved
HALF_TYPE = 0x4D48
#: the control record type of a rollback ("MC"): a half message that will never be delivered
CANCEL_TYPE = 0x4D43
_CANCEL_VALUE = struct.Struct(">hqqi")  # version, original offset, due_ms, record count
_KEY = struct.Struct(">hh")
_VALUE_HEAD = struct.Struct(">hi")
_RUN = struct.Struct(">qi")
_DELIVERED_PREFIX = DELAYED_OFFSET_HEADER.encode()


@dataclass(frozen=True, slots=True)
class DueGroup:
    """The records of one envelope due at one time: what one delivery appends.

    ``first_delta`` is the offset delta of the group's first record: the group's
    identity (the envelope's base offset + ``first_delta`` is the offset its
    producer was acknowledged with for that record, unique in the partition).
    """

    due_ms: int
    first_delta: int
    deltas: tuple[int, ...]


@dataclass(frozen=True, slots=True)
class Envelope:
    """A decoded envelope: where it is, when its records are due, and the original batch.

    A *half* envelope holds a local-transaction half message: its due time is
    when it was produced, and it is delivered when its producer commits (or a
    check-back says so), never by the clock.
    """

    base_offset: int
    due_ms: tuple[int, ...]
    original: bytes
    half: bool = False

    def groups(self) -> list[DueGroup]:
        """The envelope's records grouped by due time, earliest first, records in offset order."""
        by_due: dict[int, list[int]] = {}
        for delta, due in enumerate(self.due_ms):
            by_due.setdefault(due, []).append(delta)
        return [DueGroup(due, deltas[0], tuple(deltas)) for due, deltas in sorted(by_due.items())]


def envelope_batch(original: bytes | memoryview, due_ms: Sequence[int], *, half: bool = False) -> bytes:
    """Wraps a validated produce batch (with offsets as the producer sent them) in an envelope.

    With ``half``, a half message's envelope (type :data:`HALF_TYPE`).

    Raises:
        ValueError: ``due_ms`` does not give one time per record, or the batch is
            a control batch or transactional (delay and Kafka transactions do not mix).
    """
    header = BatchHeader(original, 0)
    if header.is_control or header.attributes & TRANSACTIONAL_FLAG_MASK:
        raise ValueError("a control or transactional batch cannot be delayed")
    if len(due_ms) != header.record_count or header.record_count != header.last_offset_delta + 1:
        raise ValueError(f"{len(due_ms)} due times for {header.record_count} records "
                         f"(lastOffsetDelta {header.last_offset_delta})")
    data = bytes(original[:header.size])
    runs: list[list[int]] = []
    for due in due_ms:
        if runs and runs[-1][0] == due:
            runs[-1][1] += 1
        else:
            runs.append([due, 1])
    value = bytearray(_VALUE_HEAD.pack(0, len(runs)))
    for due, length in runs:
        value += _RUN.pack(due, length)
    value += data
    body = bytearray()
    _encode_record(body, 0, 0, _KEY.pack(0, HALF_TYPE if half else ENVELOPE_TYPE), bytes(value), ())
    return assemble_batch(
        body,
        attributes=CONTROL_FLAG_MASK,
        record_count=1,
        base_offset=header.base_offset,
        last_offset_delta=header.last_offset_delta,
        base_timestamp=header.base_timestamp,
        max_timestamp=header.max_timestamp,
        producer_id=header.producer_id,
        producer_epoch=header.producer_epoch,
        base_sequence=header.base_sequence,
        partition_leader_epoch=header.partition_leader_epoch,
    )


def _first_record(buf: bytes | memoryview, pos: int, header: BatchHeader) -> tuple[bytes | None, int, int]:
    """(key, value start, value length) of the uncompressed batch's first record; value length -1 = null."""
    end = pos + header.size
    p = pos + BATCH_HEADER_SIZE
    _, p = decode_varint(buf, p)  # record length
    p += 1  # attributes
    _, p = decode_varlong(buf, p)  # timestamp delta
    _, p = decode_varint(buf, p)  # offset delta
    key_len, p = decode_varint(buf, p)
    key = None
    if key_len >= 0:
        key = bytes(buf[p:p + key_len])
        p += key_len
    value_len, p = decode_varint(buf, p)
    if p + max(value_len, 0) > end:
        raise CorruptRecordBatch(f"batch at {pos}: first record runs past the batch")
    return key, p, value_len


def mafka_control_type(buf: bytes | memoryview, pos: int = 0, header: BatchHeader | None = None) -> int | None:
    """:data:`ENVELOPE_TYPE`, :data:`HALF_TYPE` or :data:`CANCEL_TYPE` for Mafka's control batches; else None."""
    header = header or BatchHeader(buf, pos)
    if not header.is_control or header.is_transactional or header.compression != CompressionType.NONE \
            or header.record_count != 1:
        return None
    try:
        key, _, _ = _first_record(buf, pos, header)
    except (CorruptRecordBatch, IndexError, ValueError):
        return None
    if key is None or len(key) != _KEY.size:
        return None
    version, kind = _KEY.unpack(key)
    return kind if version == 0 and kind in (ENVELOPE_TYPE, HALF_TYPE, CANCEL_TYPE) else None


def is_envelope(buf: bytes | memoryview, pos: int = 0, header: BatchHeader | None = None) -> bool:
    """True when the batch at ``pos`` is an envelope, of a delayed or of a half message."""
    return mafka_control_type(buf, pos, header) in (ENVELOPE_TYPE, HALF_TYPE)


def read_envelope(buf: bytes | memoryview, pos: int = 0) -> Envelope:
    """Decodes the envelope at ``pos`` (its CRC and the original's are checked).

    Raises:
        CorruptRecordBatch: not an envelope, or damaged.
    """
    header = validate_batch(buf, pos)
    kind = mafka_control_type(buf, pos, header)
    if kind not in (ENVELOPE_TYPE, HALF_TYPE):
        raise CorruptRecordBatch(f"batch at {pos} is not an envelope")
    _, start, length = _first_record(buf, pos, header)
    if length < _VALUE_HEAD.size:
        raise CorruptRecordBatch(f"envelope at {pos}: value too short")
    version, count = _VALUE_HEAD.unpack_from(buf, start)
    if version != 0 or count < 1 or _VALUE_HEAD.size + count * _RUN.size > length:
        raise CorruptRecordBatch(f"envelope at {pos}: version {version}, {count} due-time runs do not fit")
    p = start + _VALUE_HEAD.size
    due: list[int] = []
    for i in range(count):
        when, run = _RUN.unpack_from(buf, p + i * _RUN.size)
        if run < 1 or len(due) + run > header.last_offset_delta + 1:
            raise CorruptRecordBatch(f"envelope at {pos}: a due-time run of {run} records does not fit")
        due.extend([when] * run)
    original = bytes(buf[p + count * _RUN.size:start + length])
    inner = validate_batch(original, 0)
    if inner.size != len(original) or inner.record_count != len(due):
        raise CorruptRecordBatch(f"envelope at {pos}: the original batch does not match its {len(due)} due times")
    return Envelope(header.base_offset, tuple(due), original, kind == HALF_TYPE)


def delivery_batch(envelope: Envelope, group: DueGroup) -> bytes:
    """The ordinary batch that delivers ``group`` of ``envelope`` (offsets from 0; the log assigns them).

    Records keep key, value and headers (minus the request headers), in offset
    order; their timestamp is the group's due time (when they were to appear;
    the batch header's base timestamp tells every replica which bucket the
    delivery belongs to) and ``mafka.original.timestamp`` /
    ``mafka.delayed.offset`` are appended.  The first record's
    ``mafka.delayed.offset`` is the group's identity (:func:`read_delivery`).
    """
    decoded = decode_batch(envelope.original, 0)
    wanted = set(group.deltas)
    out: list[Record] = []
    for record in decoded.records:
        assert isinstance(record, Record)
        delta = record.offset - decoded.header.base_offset
        if delta not in wanted:
            continue
        headers = strip_delay_headers(record.headers) + (
            (ORIGINAL_TIMESTAMP_HEADER, str(record.timestamp).encode()),
            (DELAYED_OFFSET_HEADER, str(envelope.base_offset + delta).encode()),
        )
        out.append(Record(len(out), group.due_ms, record.key, record.value, headers))
    if len(out) != len(group.deltas):
        raise CorruptRecordBatch(f"envelope at {envelope.base_offset}: group {group.first_delta} "
                                 f"has {len(group.deltas)} records, the original {len(out)}")
    return build_batch(out)


@dataclass(frozen=True, slots=True)
class Delivery:
    """What a delivery batch delivered: the group (its original offset), its due time and record count."""

    original_offset: int
    due_ms: int
    count: int


def read_delivery(buf: bytes | memoryview, pos: int = 0, header: BatchHeader | None = None) -> Delivery | None:
    """What the delivery batch at ``pos`` delivers (its first record's ``mafka.delayed.offset``); None for others.

    Cheap for the batches that cannot be deliveries: control, compressed and
    idempotent batches are rejected from the header, the rest by one substring
    search before any record is decoded.
    """
    header = header or BatchHeader(buf, pos)
    if header.is_control or header.compression != CompressionType.NONE or header.producer_id != -1:
        return None
    end = pos + header.size
    if bytes(buf[pos + BATCH_HEADER_SIZE:end]).find(_DELIVERED_PREFIX) < 0:
        return None
    try:
        decoded = decode_batch(buf, pos, verify_crc=False)
    except CorruptRecordBatch:
        return None
    first = decoded.records[0]
    for key, value in getattr(first, "headers", ()):
        if key == DELAYED_OFFSET_HEADER and value is not None:
            try:
                return Delivery(int(value), header.base_timestamp, header.record_count)
            except ValueError:
                return None
    return None


def cancel_batch(original_offset: int, due_ms: int, count: int, *, now_ms: int) -> bytes:
    """The control batch that rolls a half message back: its group will never be delivered."""
    body = bytearray()
    _encode_record(body, 0, 0, _KEY.pack(0, CANCEL_TYPE), _CANCEL_VALUE.pack(0, original_offset, due_ms, count), ())
    return assemble_batch(body, attributes=CONTROL_FLAG_MASK, record_count=1, base_offset=0, last_offset_delta=0,
                          base_timestamp=now_ms, max_timestamp=now_ms, producer_id=-1, producer_epoch=-1,
                          base_sequence=-1, partition_leader_epoch=-1)


def read_cancel(buf: bytes | memoryview, pos: int = 0, header: BatchHeader | None = None) -> Delivery | None:
    """What a rollback batch resolved (as a :class:`Delivery` that delivers nothing); None for other batches."""
    header = header or BatchHeader(buf, pos)
    if mafka_control_type(buf, pos, header) != CANCEL_TYPE:
        return None
    _, start, length = _first_record(buf, pos, header)
    if length < _CANCEL_VALUE.size:
        return None
    _, original, due, count = _CANCEL_VALUE.unpack_from(buf, start)
    return Delivery(original, due, count)
