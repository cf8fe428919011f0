"""``__share_group_state`` records byte for byte as Kafka 4.x writes them, and the share coordinator's use of them.

Record formats (Kafka's ``share-coordinator/src/main/resources/common/message/``
``ShareSnapshotKey/Value.json`` and ``ShareUpdateKey/Value.json``, serialized by
``CoordinatorRecordSerde``):

* **Key**: int16 *record type* (the schema's ``apiKey``: 0 ShareSnapshot,
  1 ShareUpdate), then the key at version 0, not flexible::

      GroupId    STRING   int16 length + UTF-8
      TopicId    UUID     16 bytes
      Partition  INT32

* **Value**: int16 version (0), then a *flexible* struct: fixed-width fields
  big-endian, the array COMPACT (unsigned varint length + 1), a tagged-field
  section (unsigned varint count, then tag / size / bytes) after each state
  batch and after the whole value::

      ShareSnapshotValue: SnapshotEpoch INT32, StateEpoch INT32, LeaderEpoch INT32,
                          StartOffset INT64, CreateTimestamp INT64, WriteTimestamp INT64,
                          StateBatches []StateBatch
      ShareUpdateValue:   SnapshotEpoch INT32, LeaderEpoch INT32, StartOffset INT64,
                          StateBatches []StateBatch
      StateBatch:         FirstOffset INT64, LastOffset INT64, DeliveryState INT8
                          (0 Available, 2 Acknowledged, 4 Archived), DeliveryCount INT16

  Kafka 4.2 (KIP-1226) adds ``DeliveryCompleteCount`` as tagged field 0 of both
  values (default -1, so not written at the default): it is decoded when present
  and written only when set, so by default the bytes are Kafka 4.0/4.1's.
  Unknown tagged fields are skipped, as Kafka's generated readers do.
* A ``None`` value is a tombstone (Kafka deletes a share-partition's state with
  a ShareSnapshot-keyed tombstone).
* Decoding is bounded: a truncated, negative-length, bad-UTF-8, unknown-type,
  unknown-version or trailing-garbage input raises ``ValueError`` and nothing else.

The share coordinator (:class:`ShareStateShard`, Kafka's ``ShareCoordinatorShard``
for the share-partitions of one ``__share_group_state`` partition):

* :meth:`ShareStateShard.write_state` turns a :class:`StateWrite` (what
  :meth:`SharePartitionState.take_state_write` drained) into the one record to
  append: a fresh **snapshot** for an ``initialize`` write (first use or
  AlterShareGroupOffsets; snapshot epoch + 1), a **snapshot** of the merged
  state once ``share.coordinator.snapshot.update.records.per.snapshot`` (500)
  updates followed the last one (snapshot epoch + 1), otherwise an **update**
  carrying just the write's batches (same snapshot epoch).  Like Kafka's
  coordinator runtime, generating a record does not change the shard: the caller
  appends it and then :meth:`~ShareStateShard.replay`\\ s it (which is also how
  the shard is rebuilt by reading the partition after a failover).
* Replay: a snapshot replaces the share-partition's state; an update merges
  into it (:func:`combine_state_batches`, Kafka's ``PersisterStateBatchCombiner``:
  batches below the start offset are dropped, for each offset the batch with
  the highest ``(delivery count, delivery state)`` wins, and neighbouring equal
  batches are joined); a tombstone deletes it.  The update counter follows
  Kafka's: unset after a snapshot, 0 at the first update, +1 at each further one,
  back to 0 when a snapshot is replayed while it is at the limit.
* Writes are fenced as Kafka fences them: an unknown share-partition
  (``INVALID_REQUEST``), an older state epoch (``FENCED_STATE_EPOCH``) or an
  older leader epoch (``FENCED_LEADER_EPOCH``) raise that error's
  :class:`~mafka.errors.KafkaError`.
* :func:`restore_partition_state` rebuilds a :class:`SharePartitionState`
  from the replayed :class:`ShareGroupOffset`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Final

from mafka.errors import ERROR_CLASSES, ErrorCode

from .partition_state import SharePartitionConfig, SharePartitionState, StateBatch, StateWrite

__all__ = [
    "RECORD_TYPE_SNAPSHOT",
    "RECORD_TYPE_UPDATE",
    "SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT_DEFAULT",
    "ShareGroupOffset",
    "SharePartitionKey",
    "ShareSnapshotValue",
    "ShareStateRecord",
    "ShareStateShard",
    "ShareUpdateValue",
    "combine_state_batches",
    "decode_key",
    "decode_record",
    "decode_value",
    "encode_key",
    "encode_value",
    "restore_partition_state",
]

#: ShareSnapshotKey / ShareSnapshotValue ``apiKey``: the int16 that starts the key
RECORD_TYPE_SNAPSHOT: Final = 0
#: ShareUpdateKey / ShareUpdateValue ``apiKey``
RECORD_TYPE_UPDATE: Final = 1
#: the only value version either schema has
VALUE_VERSION: Final = 0
#: ``share.coordinator.snapshot.update.records.per.snapshot`` (Kafka's default; 0-500)
SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT_DEFAULT: Final = 500

#: tag of the Kafka 4.2 ``DeliveryCompleteCount`` tagged field in both values
_DELIVERY_COMPLETE_COUNT_TAG: Final = 0

_I8 = struct.Struct(">b")
_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")
_BATCH = struct.Struct(">qqbh")


# --------------------------------------------------------------------------- values


@dataclass(frozen=True, slots=True)
class SharePartitionKey:
    """Kafka's ``SharePartitionKey``: a share group's state for one topic-partition."""

    group_id: str
    topic_id: bytes
    partition: int


@dataclass(frozen=True, slots=True)
class ShareSnapshotValue:
    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    create_timestamp: int
    write_timestamp: int
    state_batches: tuple[StateBatch, ...] = ()
    delivery_complete_count: int = -1


@dataclass(frozen=True, slots=True)
class ShareUpdateValue:
    snapshot_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...] = ()
    delivery_complete_count: int = -1


@dataclass(frozen=True, slots=True)
class ShareStateRecord:
    """One ``__share_group_state`` record; ``value`` None is a tombstone."""

    record_type: int
    key: SharePartitionKey
    value: ShareSnapshotValue | ShareUpdateValue | None

    def key_bytes(self) -> bytes:
        return encode_key(self.record_type, self.key)

    def value_bytes(self) -> bytes | None:
        return None if self.value is None else encode_value(self.value)


@dataclass(frozen=True, slots=True)
class ShareGroupOffset:
    """Kafka's ``ShareGroupOffset``: a share-partition's durable state as the share coordinator holds it."""

    snapshot_epoch: int
    state_epoch: int
    leader_epoch: int
    start_offset: int
    state_batches: tuple[StateBatch, ...] = field(default=())
    create_timestamp: int = 0
    write_timestamp: int = 0


# --------------------------------------------------------------------------- encoding


def encode_key(record_type: int, key: SharePartitionKey) -> bytes:
    """The key bytes: record type, then group id, topic id and partition."""
    if record_type not in (RECORD_TYPE_SNAPSHOT, RECORD_TYPE_UPDATE):
        raise ValueError(f"unknown __share_group_state record type {record_type}")
    if len(key.topic_id) != 16:
        raise ValueError(f"topic id must be 16 bytes, got {len(key.topic_id)}")
    group = key.group_id.encode("utf-8")
    if len(group) > 0x7FFF:
        raise ValueError(f"group id of {len(group)} bytes is too long")
    return b"".join(
        (_pack(_I16, record_type), _pack(_I16, len(group)), group, bytes(key.topic_id), _pack(_I32, key.partition))
    )


def encode_value(value: ShareSnapshotValue | ShareUpdateValue) -> bytes:
    """The value bytes: version 0, then the flexible ShareSnapshotValue or ShareUpdateValue."""
    parts = [_pack(_I16, VALUE_VERSION)]
    if isinstance(value, ShareSnapshotValue):
        parts += [
            _pack(_I32, value.snapshot_epoch),
            _pack(_I32, value.state_epoch),
            _pack(_I32, value.leader_epoch),
            _pack(_I64, value.start_offset),
            _pack(_I64, value.create_timestamp),
            _pack(_I64, value.write_timestamp),
        ]
    else:
        parts += [_pack(_I32, value.snapshot_epoch), _pack(_I32, value.leader_epoch), _pack(_I64, value.start_offset)]
    parts.append(_uvarint(len(value.state_batches) + 1))
    for b in value.state_batches:
        try:
            parts.append(_BATCH.pack(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count))
        except struct.error as e:
            raise ValueError(f"state batch {b} does not fit the schema: {e}") from e
        parts.append(b"\x00")  # the batch's tagged fields: none
    if value.delivery_complete_count == -1:
        parts.append(b"\x00")
    else:
        parts += [b"\x01", _uvarint(_DELIVERY_COMPLETE_COUNT_TAG), b"\x04", _pack(_I32, value.delivery_complete_count)]
    return b"".join(parts)


def _pack(st: struct.Struct, v: int) -> bytes:
    try:
        return st.pack(v)
    except struct.error as e:
        raise ValueError(f"{v!r} does not fit {st.format}") from e


def _uvarint(n: int) -> bytes:
    out = bytearray()
    while n >= 0x80:
        out.append((n & 0x7F) | 0x80)
        n >>= 7
    out.append(n)
    return bytes(out)


# --------------------------------------------------------------------------- decoding


class _Reader:
    __slots__ = ("_buf", "_pos")

    def __init__(self, data: bytes) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise ValueError(f"expected bytes, got {type(data).__name__}")
        self._buf = bytes(data)
        self._pos = 0

    def take(self, n: int, what: str) -> bytes:
        if n < 0 or self._pos + n > len(self._buf):
            raise ValueError(f"truncated {what}: need {n} bytes at offset {self._pos}, {len(self._buf) - self._pos} left")
        out = self._buf[self._pos : self._pos + n]
        self._pos += n
        return out

    def fixed(self, st: struct.Struct, what: str) -> int:
        value: int = st.unpack(self.take(st.size, what))[0]
        return value

    def uvarint(self, what: str) -> int:
        value = shift = 0
        while True:
            byte = self.take(1, what)[0]
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7
            if shift > 28:
                raise ValueError(f"{what}: unsigned varint longer than 5 bytes")

    def remaining(self) -> int:
        return len(self._buf) - self._pos

    def end(self, what: str) -> None:
        if self._pos != len(self._buf):
            raise ValueError(f"{len(self._buf) - self._pos} trailing bytes after {what}")


def decode_key(data: bytes) -> tuple[int, SharePartitionKey]:
    """``(record type, key)`` from key bytes."""
    r = _Reader(data)
    record_type = r.fixed(_I16, "record type")
    if record_type not in (RECORD_TYPE_SNAPSHOT, RECORD_TYPE_UPDATE):
        raise ValueError(f"unknown __share_group_state record type {record_type}")
    n = r.fixed(_I16, "group id length")
    if n < 0:
        raise ValueError(f"negative group id length {n}")
    try:
        group = r.take(n, "group id").decode("utf-8")
    except UnicodeDecodeError as e:
        raise ValueError("group id is not valid UTF-8") from e
    topic_id = r.take(16, "topic id")
    partition = r.fixed(_I32, "partition")
    r.end("the key")
    return record_type, SharePartitionKey(group, topic_id, partition)


def decode_value(record_type: int, data: bytes) -> ShareSnapshotValue | ShareUpdateValue:
    """The value of a record of ``record_type`` from its bytes."""
    r = _Reader(data)
    version = r.fixed(_I16, "value version")
    if version != VALUE_VERSION:
        raise ValueError(f"unknown value version {version} for record type {record_type}")
    if record_type == RECORD_TYPE_SNAPSHOT:
        snapshot_epoch = r.fixed(_I32, "snapshot epoch")
        state_epoch = r.fixed(_I32, "state epoch")
        leader_epoch = r.fixed(_I32, "leader epoch")
        start_offset = r.fixed(_I64, "start offset")
        create_ts = r.fixed(_I64, "create timestamp")
        write_ts = r.fixed(_I64, "write timestamp")
        batches = _read_batches(r)
        complete = _read_tagged_fields(r, "the value")
        r.end("the value")
        return ShareSnapshotValue(
            snapshot_epoch, state_epoch, leader_epoch, start_offset, create_ts, write_ts, batches, complete
        )
    if record_type == RECORD_TYPE_UPDATE:
        snapshot_epoch = r.fixed(_I32, "snapshot epoch")
        leader_epoch = r.fixed(_I32, "leader epoch")
        start_offset = r.fixed(_I64, "start offset")
        batches = _read_batches(r)
        complete = _read_tagged_fields(r, "the value")
        r.end("the value")
        return ShareUpdateValue(snapshot_epoch, leader_epoch, start_offset, batches, complete)
    raise ValueError(f"unknown __share_group_state record type {record_type}")


def decode_record(key: bytes, value: bytes | None) -> ShareStateRecord:
    """One record from its key and value bytes (value None: a tombstone)."""
    record_type, k = decode_key(key)
    return ShareStateRecord(record_type, k, None if value is None else decode_value(record_type, value))


def _read_batches(r: _Reader) -> tuple[StateBatch, ...]:
    n = r.uvarint("state batches length")
    if n == 0:
        raise ValueError("state batches is null but not nullable")
    count = n - 1
    # Each batch is at least 19 fixed bytes and a tagged-field count: bound the count first.
    if count * (_BATCH.size + 1) > r.remaining():
        raise ValueError(f"state batches count {count} exceeds the remaining bytes")
    out = []
    for _ in range(count):
        first, last, state, delivery_count = _BATCH.unpack(r.take(_BATCH.size, "state batch"))
        _read_tagged_fields(r, "a state batch")
        out.append(StateBatch(first, last, state, delivery_count))
    return tuple(out)


def _read_tagged_fields(r: _Reader, what: str) -> int:
    """Skip a tagged-field section; returns DeliveryCompleteCount (tag 0) if present, else -1."""
    complete = -1
    for _ in range(r.uvarint(f"tagged field count of {what}")):
        tag = r.uvarint(f"tag in {what}")
        size = r.uvarint(f"tagged field size in {what}")
        data = r.take(size, f"tagged field {tag} of {what}")
        if tag == _DELIVERY_COMPLETE_COUNT_TAG and what == "the value":
            if size != 4:
                raise ValueError(f"DeliveryCompleteCount of {size} bytes, expected 4")
            complete = _I32.unpack(data)[0]
    return complete


# --------------------------------------------------------------------------- merging


def combine_state_batches(
    so_far: Iterable[StateBatch], new: Iterable[StateBatch], start_offset: int
) -> tuple[StateBatch, ...]:
    """Kafka's ``PersisterStateBatchCombiner``: ``so_far`` and ``new`` merged into sorted disjoint batches.

    Batches (or their parts) below ``start_offset`` are dropped (-1: keep all);
    where batches overlap, the one with the higher ``(delivery count, delivery
    state)`` wins each offset; neighbouring batches with the same state and
    count are joined.
    """
    batches: list[StateBatch] = []
    for b in (*so_far, *new):
        if start_offset != -1 and b.last_offset < start_offset:
            continue
        if start_offset != -1 and b.first_offset < start_offset:
            b = StateBatch(start_offset, b.last_offset, b.delivery_state, b.delivery_count)
        batches.append(b)
    if not batches:
        return ()
    batches.sort(key=lambda b: b.first_offset)
    points = sorted({b.first_offset for b in batches} | {b.last_offset + 1 for b in batches})
    out: list[StateBatch] = []
    # Sweep the elementary segments between boundary points; `active` holds the
    # batches started so far, and the best one still covering the segment wins it.
    active: list[StateBatch] = []
    nxt = 0
    for seg_first, seg_end in zip(points, points[1:], strict=False):
        while nxt < len(batches) and batches[nxt].first_offset <= seg_first:
            active.append(batches[nxt])
            nxt += 1
        active = [b for b in active if b.last_offset >= seg_first]
        if not active:
            continue
        best = max(active, key=lambda b: (b.delivery_count, b.delivery_state))
        seg_last = seg_end - 1
        prev = out[-1] if out else None
        if (
            prev is not None
            and prev.last_offset + 1 == seg_first
            and prev.delivery_state == best.delivery_state
            and prev.delivery_count == best.delivery_count
        ):
            out[-1] = StateBatch(prev.first_offset, seg_last, prev.delivery_state, prev.delivery_count)
        else:
            out.append(StateBatch(seg_first, seg_last, best.delivery_state, best.delivery_count))
    return tuple(out)


# --------------------------------------------------------------------------- the coordinator


class ShareStateShard:
    """The share coordinator's state for the share-partitions of one ``__share_group_state`` partition."""

    def __init__(self, records_per_snapshot: int = SNAPSHOT_UPDATE_RECORDS_PER_SNAPSHOT_DEFAULT) -> None:
        if isinstance(records_per_snapshot, bool) or not isinstance(records_per_snapshot, int):
            raise ValueError(f"records_per_snapshot must be an integer, got {records_per_snapshot!r}")
        if not 0 <= records_per_snapshot <= 500:
            raise ValueError(
                f"share.coordinator.snapshot.update.records.per.snapshot must be between [0, 500], got {records_per_snapshot}"
            )
        self._records_per_snapshot = records_per_snapshot
        self._states: dict[SharePartitionKey, ShareGroupOffset] = {}
        self._update_counts: dict[SharePartitionKey, int] = {}
        self._leader_epochs: dict[SharePartitionKey, int] = {}
        self._state_epochs: dict[SharePartitionKey, int] = {}

    def state(self, key: SharePartitionKey) -> ShareGroupOffset | None:
        """The share-partition's durable state as replayed so far, or None."""
        return self._states.get(key)

    def keys(self) -> list[SharePartitionKey]:
        return list(self._states)

    # ------------------------------------------------------------------ writing

    def write_state(self, key: SharePartitionKey, write: StateWrite, now_ms: int) -> ShareStateRecord:
        """The record to append for ``write`` (see the module docstring); the shard is unchanged until replay."""
        current = self._states.get(key)
        if write.initialize:
            # A fresh start: a new snapshot of just this write, whatever was there.
            snapshot_epoch = current.snapshot_epoch + 1 if current is not None else 0
            return ShareStateRecord(
                RECORD_TYPE_SNAPSHOT,
                key,
                ShareSnapshotValue(
                    snapshot_epoch=snapshot_epoch,
                    state_epoch=write.state_epoch,
                    leader_epoch=write.leader_epoch,
                    start_offset=write.start_offset,
                    create_timestamp=now_ms,
                    write_timestamp=now_ms,
                    state_batches=combine_state_batches((), write.batches, write.start_offset),
                ),
            )
        if current is None:
            raise ERROR_CLASSES[ErrorCode.INVALID_REQUEST](
                f"Share partition {key} is not initialized: write of an uninitialized share partition."
            )
        if write.state_epoch < self._state_epochs.get(key, current.state_epoch):
            raise ERROR_CLASSES[ErrorCode.FENCED_STATE_EPOCH](
                f"State epoch {write.state_epoch} of {key} is older than {current.state_epoch}."
            )
        if write.leader_epoch != -1 and write.leader_epoch < self._leader_epochs.get(key, current.leader_epoch):
            raise ERROR_CLASSES[ErrorCode.FENCED_LEADER_EPOCH](
                f"Leader epoch {write.leader_epoch} of {key} is older than {current.leader_epoch}."
            )
        leader_epoch = write.leader_epoch if write.leader_epoch != -1 else current.leader_epoch
        if self._update_counts.get(key, 0) >= self._records_per_snapshot:
            start = write.start_offset if write.start_offset != -1 else current.start_offset
            return ShareStateRecord(
                RECORD_TYPE_SNAPSHOT,
                key,
                ShareSnapshotValue(
                    snapshot_epoch=current.snapshot_epoch + 1,
                    state_epoch=current.state_epoch,
                    leader_epoch=leader_epoch,
                    start_offset=start,
                    create_timestamp=now_ms,
                    write_timestamp=now_ms,
                    state_batches=combine_state_batches(current.state_batches, write.batches, start),
                ),
            )
        return ShareStateRecord(
            RECORD_TYPE_UPDATE,
            key,
            ShareUpdateValue(
                snapshot_epoch=current.snapshot_epoch,
                leader_epoch=leader_epoch,
                start_offset=write.start_offset,
                state_batches=combine_state_batches((), write.batches, write.start_offset),
            ),
        )

    def delete_state(self, key: SharePartitionKey) -> ShareStateRecord:
        """The tombstone that deletes the share-partition's state (a ShareSnapshot-keyed null value)."""
        return ShareStateRecord(RECORD_TYPE_SNAPSHOT, key, None)

    # ------------------------------------------------------------------ replay

    def replay(self, record: ShareStateRecord) -> None:
        """Apply one record read from (or just appended to) the partition."""
        key, value = record.key, record.value
        if value is None:
            self._states.pop(key, None)
            self._update_counts.pop(key, None)
            self._leader_epochs.pop(key, None)
            self._state_epochs.pop(key, None)
            return
        if isinstance(value, ShareSnapshotValue):
            self._note_epoch(self._leader_epochs, key, value.leader_epoch)
            self._note_epoch(self._state_epochs, key, value.state_epoch)
            self._states[key] = ShareGroupOffset(
                snapshot_epoch=value.snapshot_epoch,
                state_epoch=value.state_epoch,
                leader_epoch=value.leader_epoch,
                start_offset=value.start_offset,
                state_batches=value.state_batches,
                create_timestamp=value.create_timestamp,
                write_timestamp=value.write_timestamp,
            )
            if self._update_counts.get(key, 0) >= self._records_per_snapshot and key in self._update_counts:
                self._update_counts[key] = 0
            return
        self._note_epoch(self._leader_epochs, key, value.leader_epoch)
        current = self._states.get(key)
        if current is None:
            self._states[key] = ShareGroupOffset(
                snapshot_epoch=value.snapshot_epoch,
                state_epoch=0,
                leader_epoch=value.leader_epoch,
                start_offset=value.start_offset,
                state_batches=value.state_batches,
            )
        else:
            start = value.start_offset if value.start_offset != -1 else current.start_offset
            self._states[key] = ShareGroupOffset(
                snapshot_epoch=current.snapshot_epoch,
                state_epoch=current.state_epoch,
                leader_epoch=value.leader_epoch if value.leader_epoch != -1 else current.leader_epoch,
                start_offset=start,
                state_batches=combine_state_batches(current.state_batches, value.state_batches, start),
                create_timestamp=current.create_timestamp,
                write_timestamp=current.write_timestamp,
            )
        self._update_counts[key] = self._update_counts[key] + 1 if key in self._update_counts else 0

    def replay_bytes(self, key: bytes, value: bytes | None) -> None:
        """Decode and apply one record (``ValueError`` if it is malformed)."""
        self.replay(decode_record(key, value))

    @staticmethod
    def _note_epoch(epochs: dict[SharePartitionKey, int], key: SharePartitionKey, epoch: int) -> None:
        if epoch > epochs.get(key, epoch - 1):
            epochs[key] = epoch


def restore_partition_state(config: SharePartitionConfig, offset: ShareGroupOffset) -> SharePartitionState:
    """A share-partition's in-flight state rebuilt from its durable state (``SharePartition.maybeInitialize``)."""
    return SharePartitionState.restore(
        config,
        start_offset=offset.start_offset,
        batches=offset.state_batches,
        state_epoch=offset.state_epoch,
        leader_epoch=offset.leader_epoch,
    )
