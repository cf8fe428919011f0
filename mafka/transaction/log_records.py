"""``__transaction_state`` record keys and values, byte for byte as Kafka 2.8 writes them.

Contract (Kafka 2.8 ``TransactionLog``; layouts from Kafka's
``TransactionLogKey.json`` and ``TransactionLogValue.json``, version 0 only,
not flexible — no tagged fields):

* Big-endian throughout. STRING = int16 length + UTF-8; arrays = int32 count
  + elements, a nullable array's count -1 is ``None``.
* Key: int16 version 0, ``transactional_id`` STRING.
* Value: int16 version 0, ``producer_id`` int64, ``producer_epoch`` int16,
  ``transaction_timeout_ms`` int32, ``transaction_status`` int8 (a
  :class:`~mafka.transaction.metadata.TransactionState` byte),
  ``transaction_partitions`` nullable array of ``{topic STRING,
  partition_ids int32 array}``, ``transaction_last_update_timestamp_ms``
  int64, ``transaction_start_timestamp_ms`` int64.
* :func:`value_from_transit` is Kafka's ``valueToBytes`` input: Empty writes a
  null partition array (and refuses partitions), every other state one entry
  per topic. Kafka's entry order is a hash-set's; here topics and partition ids
  are sorted so the bytes are deterministic (every order decodes the same).
* A ``None`` value is a tombstone: the transactional id was removed
  (expiration). :func:`decode_value` returns ``None`` for it.
* Decoding is bounded and strict: a version other than 0, a truncated input,
  a negative length, bad UTF-8, an unknown status byte or trailing bytes raise
  :class:`TransactionLogDecodeError` (a ``ValueError``) and nothing else.
* :func:`metadata_from_value` is Kafka's ``readTxnRecordValue``: the loaded
  metadata has no last producer id / epoch (the log does not keep them) and an
  Empty value's partitions are ignored.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass

from mafka.errors import IllegalStateError
from mafka.topics import TopicPartitionTuple
from mafka.transaction.metadata import TransactionMetadata, TransactionState, TxnTransitMetadata
from mafka.wire.batch import NO_PRODUCER_EPOCH, NO_PRODUCER_ID

__all__ = [
    "KEY_VERSION",
    "VALUE_VERSION",
    "TransactionLogDecodeError",
    "TransactionLogValue",
    "decode_key",
    "decode_value",
    "encode_key",
    "encode_value",
    "metadata_from_value",
    "value_from_transit",
]

KEY_VERSION = 0
VALUE_VERSION = 0

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")


class TransactionLogDecodeError(ValueError):
    """A ``__transaction_state`` key or value that is not a Kafka 2.8 record."""


@dataclass(frozen=True)
class TransactionLogValue:
    """One decoded value. ``partitions`` keeps the record's order: ``((topic, (ids…)), …)``,
    ``None`` for the null array Kafka writes for Empty."""

    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_status: TransactionState
    partitions: tuple[tuple[str, tuple[int, ...]], ...] | None
    transaction_last_update_timestamp_ms: int
    transaction_start_timestamp_ms: int

    def topic_partitions(self) -> set[TopicPartitionTuple]:
        return {(topic, p) for topic, ids in self.partitions or () for p in ids}


# --------------------------------------------------------------------------- writing


def _pack(st: struct.Struct, v: int, name: str) -> bytes:
    try:
        return st.pack(v)
    except struct.error as e:
        raise ValueError(f"{name} out of range: {v!r}") from e


def _string(v: str, name: str) -> bytes:
    if not isinstance(v, str):
        raise ValueError(f"{name} must be a string, got {type(v).__name__}")
    data = v.encode("utf-8")
    if len(data) > 0x7FFF:
        raise ValueError(f"{name} of {len(data)} bytes is too long")
    return _I16.pack(len(data)) + data


def encode_key(transactional_id: str) -> bytes:
    """Key bytes: version 0 + the transactional id."""
    return _I16.pack(KEY_VERSION) + _string(transactional_id, "transactional_id")


def encode_value(value: TransactionLogValue | None) -> bytes | None:
    """Value bytes at version 0; ``None`` (a tombstone) stays ``None``."""
    if value is None:
        return None
    parts = [
        _I16.pack(VALUE_VERSION),
        _pack(_I64, value.producer_id, "producer_id"),
        _pack(_I16, value.producer_epoch, "producer_epoch"),
        _pack(_I32, value.transaction_timeout_ms, "transaction_timeout_ms"),
        _pack(_I8, int(value.transaction_status), "transaction_status"),
    ]
    if value.partitions is None:
        parts.append(_I32.pack(-1))
    else:
        parts.append(_I32.pack(len(value.partitions)))
        for topic, ids in value.partitions:
            parts.append(_string(topic, "topic"))
            parts.append(_I32.pack(len(ids)))
            parts.extend(_pack(_I32, p, "partition id") for p in ids)
    parts.append(_pack(_I64, value.transaction_last_update_timestamp_ms, "transaction_last_update_timestamp_ms"))
    parts.append(_pack(_I64, value.transaction_start_timestamp_ms, "transaction_start_timestamp_ms"))
    return b"".join(parts)


def value_from_transit(transit: TxnTransitMetadata) -> TransactionLogValue:
    """The value Kafka's ``valueToBytes`` writes for a prepared transition."""
    if transit.txn_state == TransactionState.EMPTY:
        if transit.topic_partitions:
            raise IllegalStateError(
                f"Transaction is not expected to have any partitions since its state is Empty: {transit}"
            )
        partitions = None
    else:
        by_topic: dict[str, list[int]] = {}
        for topic, p in transit.topic_partitions:
            by_topic.setdefault(topic, []).append(p)
        partitions = tuple((topic, tuple(sorted(by_topic[topic]))) for topic in sorted(by_topic))
    return TransactionLogValue(
        producer_id=transit.producer_id,
        producer_epoch=transit.producer_epoch,
        transaction_timeout_ms=transit.txn_timeout_ms,
        transaction_status=transit.txn_state,
        partitions=partitions,
        transaction_last_update_timestamp_ms=transit.txn_last_update_timestamp,
        transaction_start_timestamp_ms=transit.txn_start_timestamp,
    )


# --------------------------------------------------------------------------- reading


class _Reader:
    __slots__ = ("_buf", "_pos", "_what")

    def __init__(self, data: bytes, what: str) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise TransactionLogDecodeError(f"{what}: expected bytes, got {type(data).__name__}")
        self._buf = bytes(data)
        self._pos = 0
        self._what = what

    def _take(self, n: int, field: str) -> bytes:
        if self._pos + n > len(self._buf):
            raise TransactionLogDecodeError(
                f"truncated {self._what}: {field} needs {n} bytes at offset {self._pos}, "
                f"{len(self._buf) - self._pos} left"
            )
        out = self._buf[self._pos : self._pos + n]
        self._pos += n
        return out

    def int8(self, field: str) -> int:
        value: int = _I8.unpack(self._take(1, field))[0]
        return value

    def int16(self, field: str) -> int:
        value: int = _I16.unpack(self._take(2, field))[0]
        return value

    def int32(self, field: str) -> int:
        value: int = _I32.unpack(self._take(4, field))[0]
        return value

    def int64(self, field: str) -> int:
        value: int = _I64.unpack(self._take(8, field))[0]
        return value

    def string(self, field: str) -> str:
        n = self.int16(field + " length")
        if n < 0:
            raise TransactionLogDecodeError(f"{self._what}: {field} has negative length {n} (not nullable)")
        try:
            return self._take(n, field).decode("utf-8")
        except UnicodeDecodeError as e:
            raise TransactionLogDecodeError(f"{self._what}: {field} is not valid UTF-8") from e

    def count(self, field: str, min_element_size: int, nullable: bool = False) -> int | None:
        n = self.int32(field + " count")
        if n == -1 and nullable:
            return None
        if n < 0:
            raise TransactionLogDecodeError(f"{self._what}: {field} has negative count {n}")
        if n * min_element_size > len(self._buf) - self._pos:
            raise TransactionLogDecodeError(f"{self._what}: {field} count {n} exceeds the remaining bytes")
        return n

    def version(self, supported: int) -> None:
        version = self.int16("version")
        if version != supported:
            raise TransactionLogDecodeError(f"Unknown version {version} from the transaction log message {self._what}")

    def end(self) -> None:
        if self._pos != len(self._buf):
            raise TransactionLogDecodeError(f"{len(self._buf) - self._pos} trailing bytes after the {self._what}")


def decode_key(data: bytes) -> str:
    """The transactional id of a key (Kafka's ``readTxnRecordKey``)."""
    if data is None:
        raise TransactionLogDecodeError("Transaction state log's key should not be null")
    r = _Reader(data, "key")
    r.version(KEY_VERSION)
    transactional_id = r.string("transactional_id")
    r.end()
    return transactional_id


def decode_value(data: bytes | None) -> TransactionLogValue | None:
    """A value, or ``None`` for a tombstone."""
    if data is None:
        return None
    r = _Reader(data, "value")
    r.version(VALUE_VERSION)
    producer_id = r.int64("producer_id")
    producer_epoch = r.int16("producer_epoch")
    timeout_ms = r.int32("transaction_timeout_ms")
    status_byte = r.int8("transaction_status")
    try:
        status = TransactionState(status_byte)
    except ValueError:
        raise TransactionLogDecodeError(
            f"Unknown transaction state byte {status_byte} from the transaction status message"
        ) from None
    # A topic entry is at least an empty string (2) and an empty id array (4).
    n_topics = r.count("transaction_partitions", 6, nullable=True)
    partitions: tuple[tuple[str, tuple[int, ...]], ...] | None = None
    if n_topics is not None:
        entries = []
        for _ in range(n_topics):
            topic = r.string("topic")
            n_ids = r.count("partition_ids", 4)
            assert n_ids is not None
            entries.append((topic, tuple(r.int32("partition id") for _ in range(n_ids))))
        partitions = tuple(entries)
    last_update = r.int64("transaction_last_update_timestamp_ms")
    start = r.int64("transaction_start_timestamp_ms")
    r.end()
    return TransactionLogValue(producer_id, producer_epoch, timeout_ms, status, partitions, last_update, start)


def metadata_from_value(transactional_id: str, value: TransactionLogValue) -> TransactionMetadata:
    """The metadata a loading coordinator builds from a value (Kafka's ``readTxnRecordValue``)."""
    state = value.transaction_status
    return TransactionMetadata(
        transactional_id=transactional_id,
        producer_id=value.producer_id,
        last_producer_id=NO_PRODUCER_ID,
        producer_epoch=value.producer_epoch,
        last_producer_epoch=NO_PRODUCER_EPOCH,
        txn_timeout_ms=value.transaction_timeout_ms,
        state=state,
        topic_partitions=set() if state == TransactionState.EMPTY else value.topic_partitions(),
        txn_start_timestamp=value.transaction_start_timestamp_ms,
        txn_last_update_timestamp=value.transaction_last_update_timestamp_ms,
    )
