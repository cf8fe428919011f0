"""``__consumer_offsets`` records of share groups (KIP-932), byte for byte as Kafka 4.4 writes them.

Contract (Kafka 4.4's ``group-coordinator/src/main/resources/common/message/ShareGroup*.json``
and ``GroupCoordinatorRecordHelpers``):

* Six record types, told apart by the key's leading int16 (the schema's ``apiKey``, Kafka's
  ``CoordinatorRecordType``): 10 ``ShareGroupMemberMetadata`` (a member's subscription),
  11 ``ShareGroupMetadata`` (the group epoch and the subscribed topics' metadata hash),
  12 ``ShareGroupTargetAssignmentMetadata`` (the target assignment epoch), 13
  ``ShareGroupTargetAssignmentMember`` (a member's target partitions), 14
  ``ShareGroupCurrentMemberAssignment`` (a member's epoch, state and partitions), 15
  ``ShareGroupStatePartitionMetadata`` (which share-partitions have their state initialized,
  are being initialized, or are being deleted).  Types 3-8 are the consumer group records of
  :mod:`mafka.group.consumer.records`, 0-2 the classic ones of :mod:`mafka.group.offsets_records`.
* Keys are not flexible: int16 type, then the group id (and member id) as int16-length
  strings.  Values are version 0 and flexible: int16 version, then the fields with compact
  strings and arrays (unsigned varint length + 1, 0 for null), 16-byte UUIDs, and a tagged
  field section (unsigned varint count, then tag, size, bytes) closing every struct.
* ``ShareGroupTargetAssignmentMetadataValue``'s tagged field 0 (``AssignmentTimestamp``, int64,
  added in Kafka 4.3 by KIP-1263, default 0) is decoded, and written only when not 0 (Kafka's
  generated writers leave a tagged field at its default out), so by default the bytes are
  Kafka 4.1/4.2's.  Other unknown tagged fields are skipped.
* A ``None`` value is a tombstone.
* Decoding is bounded: every length is checked against the bytes left; truncated input,
  negative or oversized lengths, bad UTF-8, an unknown key type or value version, and
  trailing bytes raise ``ValueError`` and nothing else.
* Record builders (:func:`group_epoch_record` …) write what Kafka's
  ``GroupCoordinatorRecordHelpers`` writes, with lists in a fixed order (topics by id,
  partitions and topic names ascending) so the same state always gives the same bytes.
  (Kafka writes Java hash-map order; a reader does not depend on the order.)
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from mafka.group.consumer.member import TopicIdPartitions
from mafka.group.consumer.records import _FlexReader, _FlexWriter
from mafka.group.offsets_records import _Reader, _Writer

__all__ = [
    "CURRENT_MEMBER_ASSIGNMENT_KEY_TYPE",
    "MEMBER_METADATA_KEY_TYPE",
    "METADATA_KEY_TYPE",
    "STATE_PARTITION_METADATA_KEY_TYPE",
    "TARGET_ASSIGNMENT_MEMBER_KEY_TYPE",
    "TARGET_ASSIGNMENT_METADATA_KEY_TYPE",
    "CoordinatorRecord",
    "RecordKey",
    "RecordValue",
    "ShareGroupCurrentMemberAssignmentKey",
    "ShareGroupCurrentMemberAssignmentValue",
    "ShareGroupMemberMetadataKey",
    "ShareGroupMemberMetadataValue",
    "ShareGroupMetadataKey",
    "ShareGroupMetadataValue",
    "ShareGroupStatePartitionMetadataKey",
    "ShareGroupStatePartitionMetadataValue",
    "ShareGroupTargetAssignmentMemberKey",
    "ShareGroupTargetAssignmentMemberValue",
    "ShareGroupTargetAssignmentMetadataKey",
    "ShareGroupTargetAssignmentMetadataValue",
    "TopicInfo",
    "TopicPartitions",
    "TopicPartitionsInfo",
    "current_assignment_record",
    "current_assignment_tombstone",
    "decode_key",
    "decode_record",
    "decode_value",
    "encode_key",
    "encode_record",
    "encode_value",
    "from_topic_partitions",
    "group_epoch_record",
    "group_epoch_tombstone",
    "is_share_group_key",
    "member_subscription_record",
    "member_subscription_tombstone",
    "state_partition_metadata_record",
    "state_partition_metadata_tombstone",
    "target_assignment_epoch_record",
    "target_assignment_epoch_tombstone",
    "target_assignment_record",
    "target_assignment_tombstone",
    "to_topic_partitions",
]

MEMBER_METADATA_KEY_TYPE = 10
METADATA_KEY_TYPE = 11
TARGET_ASSIGNMENT_METADATA_KEY_TYPE = 12
TARGET_ASSIGNMENT_MEMBER_KEY_TYPE = 13
CURRENT_MEMBER_ASSIGNMENT_KEY_TYPE = 14
STATE_PARTITION_METADATA_KEY_TYPE = 15
VALUE_VERSION = 0

#: tag of ``AssignmentTimestamp`` in ``ShareGroupTargetAssignmentMetadataValue``
_ASSIGNMENT_TIMESTAMP_TAG = 0


# --------------------------------------------------------------------------- keys


@dataclass(frozen=True)
class ShareGroupMemberMetadataKey:
    group_id: str
    member_id: str


@dataclass(frozen=True)
class ShareGroupMetadataKey:
    group_id: str


@dataclass(frozen=True)
class ShareGroupTargetAssignmentMetadataKey:
    group_id: str


@dataclass(frozen=True)
class ShareGroupTargetAssignmentMemberKey:
    group_id: str
    member_id: str


@dataclass(frozen=True)
class ShareGroupCurrentMemberAssignmentKey:
    group_id: str
    member_id: str


@dataclass(frozen=True)
class ShareGroupStatePartitionMetadataKey:
    group_id: str


RecordKey = (
    ShareGroupMemberMetadataKey
    | ShareGroupMetadataKey
    | ShareGroupTargetAssignmentMetadataKey
    | ShareGroupTargetAssignmentMemberKey
    | ShareGroupCurrentMemberAssignmentKey
    | ShareGroupStatePartitionMetadataKey
)

_KEY_TYPES: dict[type, int] = {
    ShareGroupMemberMetadataKey: MEMBER_METADATA_KEY_TYPE,
    ShareGroupMetadataKey: METADATA_KEY_TYPE,
    ShareGroupTargetAssignmentMetadataKey: TARGET_ASSIGNMENT_METADATA_KEY_TYPE,
    ShareGroupTargetAssignmentMemberKey: TARGET_ASSIGNMENT_MEMBER_KEY_TYPE,
    ShareGroupCurrentMemberAssignmentKey: CURRENT_MEMBER_ASSIGNMENT_KEY_TYPE,
    ShareGroupStatePartitionMetadataKey: STATE_PARTITION_METADATA_KEY_TYPE,
}
_MEMBER_KEYS = (ShareGroupMemberMetadataKey, ShareGroupTargetAssignmentMemberKey, ShareGroupCurrentMemberAssignmentKey)


# --------------------------------------------------------------------------- values


@dataclass(frozen=True)
class TopicPartitions:
    """A topic id and some of its partitions (the records' ``TopicPartitions`` / ``TopicPartition`` struct)."""

    topic_id: bytes
    partitions: tuple[int, ...]


@dataclass(frozen=True)
class TopicPartitionsInfo:
    """``ShareGroupStatePartitionMetadataValue``'s ``TopicPartitionsInfo``: id, name, partitions."""

    topic_id: bytes
    topic_name: str
    partitions: tuple[int, ...]


@dataclass(frozen=True)
class TopicInfo:
    """``ShareGroupStatePartitionMetadataValue``'s ``TopicInfo``: a topic id and name."""

    topic_id: bytes
    topic_name: str


@dataclass(frozen=True)
class ShareGroupMemberMetadataValue:
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]


@dataclass(frozen=True)
class ShareGroupMetadataValue:
    epoch: int
    metadata_hash: int


@dataclass(frozen=True)
class ShareGroupTargetAssignmentMetadataValue:
    assignment_epoch: int
    #: tagged field 0 (Kafka 4.3+): when the assignment was computed, 0 when not known
    assignment_timestamp: int = 0


@dataclass(frozen=True)
class ShareGroupTargetAssignmentMemberValue:
    topic_partitions: tuple[TopicPartitions, ...]


@dataclass(frozen=True)
class ShareGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned_partitions: tuple[TopicPartitions, ...]


@dataclass(frozen=True)
class ShareGroupStatePartitionMetadataValue:
    initializing_topics: tuple[TopicPartitionsInfo, ...]
    initialized_topics: tuple[TopicPartitionsInfo, ...]
    deleting_topics: tuple[TopicInfo, ...]


RecordValue = (
    ShareGroupMemberMetadataValue
    | ShareGroupMetadataValue
    | ShareGroupTargetAssignmentMetadataValue
    | ShareGroupTargetAssignmentMemberValue
    | ShareGroupCurrentMemberAssignmentValue
    | ShareGroupStatePartitionMetadataValue
)

_VALUE_TYPES: dict[int, type] = {
    MEMBER_METADATA_KEY_TYPE: ShareGroupMemberMetadataValue,
    METADATA_KEY_TYPE: ShareGroupMetadataValue,
    TARGET_ASSIGNMENT_METADATA_KEY_TYPE: ShareGroupTargetAssignmentMetadataValue,
    TARGET_ASSIGNMENT_MEMBER_KEY_TYPE: ShareGroupTargetAssignmentMemberValue,
    CURRENT_MEMBER_ASSIGNMENT_KEY_TYPE: ShareGroupCurrentMemberAssignmentValue,
    STATE_PARTITION_METADATA_KEY_TYPE: ShareGroupStatePartitionMetadataValue,
}


@dataclass(frozen=True)
class CoordinatorRecord:
    """One ``__consumer_offsets`` record of a share group: a key and its value, ``None`` for a tombstone."""

    key: RecordKey
    value: RecordValue | None

    def __post_init__(self) -> None:
        if self.value is not None and not isinstance(self.value, _VALUE_TYPES[_key_type(self.key)]):
            raise TypeError(f"{type(self.value).__name__} is not the value of a {type(self.key).__name__}")


# --------------------------------------------------------------------------- key codec


def _key_type(key: RecordKey) -> int:
    try:
        return _KEY_TYPES[type(key)]
    except KeyError:
        raise TypeError(f"not a share group record key: {type(key).__name__}") from None


def encode_key(key: RecordKey) -> bytes:
    """Key bytes: int16 record type, the group id, and the member id where the key has one."""
    w = _Writer()
    w.int16(_key_type(key))
    w.string(key.group_id)
    if isinstance(key, _MEMBER_KEYS):
        w.string(key.member_id)
    return w.getvalue()


def is_share_group_key(key_bytes: bytes) -> bool:
    """Whether *key_bytes* is the key of one of these records (its leading int16 is 10 to 15)."""
    if key_bytes is None or len(key_bytes) < 2:
        return False
    key_type: int = struct.unpack_from(">h", key_bytes)[0]
    return key_type in _VALUE_TYPES


def decode_key(data: bytes) -> RecordKey:
    r = _Reader(data)
    key_type = r.int16("key type")
    if key_type not in _VALUE_TYPES:
        raise ValueError(f"not a share group record key type: {key_type}")
    group_id = r.string("group id")
    key: RecordKey
    if key_type == MEMBER_METADATA_KEY_TYPE:
        key = ShareGroupMemberMetadataKey(group_id, r.string("member id"))
    elif key_type == METADATA_KEY_TYPE:
        key = ShareGroupMetadataKey(group_id)
    elif key_type == TARGET_ASSIGNMENT_METADATA_KEY_TYPE:
        key = ShareGroupTargetAssignmentMetadataKey(group_id)
    elif key_type == TARGET_ASSIGNMENT_MEMBER_KEY_TYPE:
        key = ShareGroupTargetAssignmentMemberKey(group_id, r.string("member id"))
    elif key_type == CURRENT_MEMBER_ASSIGNMENT_KEY_TYPE:
        key = ShareGroupCurrentMemberAssignmentKey(group_id, r.string("member id"))
    else:
        key = ShareGroupStatePartitionMetadataKey(group_id)
    r.end("key")
    return key


# --------------------------------------------------------------------------- value codec


def _write_partitions(w: _FlexWriter, partitions: tuple[int, ...]) -> None:
    w.array_length(len(partitions))
    for p in partitions:
        w.int32(p)


def _read_partitions(r: _FlexReader) -> tuple[int, ...]:
    return tuple(r.int32("partition") for _ in range(r.compact_array_count("partitions", 4)))


def _write_topic_partitions(w: _FlexWriter, items: tuple[TopicPartitions, ...]) -> None:
    w.array_length(len(items))
    for tp in items:
        w.uuid(tp.topic_id)
        _write_partitions(w, tp.partitions)
        w.no_tagged_fields()


def _read_topic_partitions(r: _FlexReader, what: str) -> tuple[TopicPartitions, ...]:
    out = []
    # smallest element: a UUID, an empty array, no tagged fields
    for _ in range(r.compact_array_count(what, 16 + 1 + 1)):
        topic_id = r.uuid("topic id")
        parts = _read_partitions(r)
        r.skip_tagged_fields(what)
        out.append(TopicPartitions(topic_id, parts))
    return tuple(out)


def _write_topic_partitions_info(w: _FlexWriter, items: tuple[TopicPartitionsInfo, ...]) -> None:
    w.array_length(len(items))
    for info in items:
        w.uuid(info.topic_id)
        w.compact_string(info.topic_name)
        _write_partitions(w, info.partitions)
        w.no_tagged_fields()


def _read_topic_partitions_info(r: _FlexReader, what: str) -> tuple[TopicPartitionsInfo, ...]:
    out = []
    # smallest element: a UUID, an empty string, an empty array, no tagged fields
    for _ in range(r.compact_array_count(what, 16 + 1 + 1 + 1)):
        topic_id = r.uuid("topic id")
        name = r.compact_string("topic name")
        parts = _read_partitions(r)
        r.skip_tagged_fields(what)
        out.append(TopicPartitionsInfo(topic_id, name, parts))
    return tuple(out)


def encode_value(value: RecordValue | None) -> bytes | None:
    """Value bytes at version 0; ``None`` (a tombstone) stays ``None``."""
    if value is None:
        return None
    w = _FlexWriter()
    w.int16(VALUE_VERSION)
    if isinstance(value, ShareGroupMemberMetadataValue):
        w.compact_nullable_string(value.rack_id)
        w.compact_string(value.client_id)
        w.compact_string(value.client_host)
        w.array_length(len(value.subscribed_topic_names))
        for name in value.subscribed_topic_names:
            w.compact_string(name)
    elif isinstance(value, ShareGroupMetadataValue):
        w.int32(value.epoch)
        w.int64(value.metadata_hash)
    elif isinstance(value, ShareGroupTargetAssignmentMetadataValue):
        w.int32(value.assignment_epoch)
        if value.assignment_timestamp != 0:
            w.uvarint(1)  # one tagged field
            w.uvarint(_ASSIGNMENT_TIMESTAMP_TAG)
            w.uvarint(8)  # an int64
            w.int64(value.assignment_timestamp)
            return w.getvalue()
    elif isinstance(value, ShareGroupTargetAssignmentMemberValue):
        _write_topic_partitions(w, value.topic_partitions)
    elif isinstance(value, ShareGroupCurrentMemberAssignmentValue):
        w.int32(value.member_epoch)
        w.int32(value.previous_member_epoch)
        w.int8(value.state)
        _write_topic_partitions(w, value.assigned_partitions)
    elif isinstance(value, ShareGroupStatePartitionMetadataValue):
        _write_topic_partitions_info(w, value.initializing_topics)
        _write_topic_partitions_info(w, value.initialized_topics)
        w.array_length(len(value.deleting_topics))
        for topic in value.deleting_topics:
            w.uuid(topic.topic_id)
            w.compact_string(topic.topic_name)
            w.no_tagged_fields()
    else:
        raise TypeError(f"not a share group record value: {type(value).__name__}")
    w.no_tagged_fields()
    return w.getvalue()


def decode_value(key: RecordKey, data: bytes | None) -> RecordValue | None:
    """The value belonging to *key*; ``None`` for a tombstone."""
    if data is None:
        return None
    key_type = _key_type(key)
    r = _FlexReader(data)
    version = r.int16("value version")
    if version != VALUE_VERSION:
        raise ValueError(f"unknown value version {version} of record type {key_type}")
    value: RecordValue
    if key_type == MEMBER_METADATA_KEY_TYPE:
        rack_id = r.compact_nullable_string("rack id")
        client_id = r.compact_string("client id")
        client_host = r.compact_string("client host")
        names = tuple(r.compact_string("topic name") for _ in range(r.compact_array_count("subscribed topic names", 1)))
        r.skip_tagged_fields("member metadata")
        value = ShareGroupMemberMetadataValue(rack_id, client_id, client_host, names)
    elif key_type == METADATA_KEY_TYPE:
        epoch = r.int32("epoch")
        value = ShareGroupMetadataValue(epoch, r.int64("metadata hash"))
        r.skip_tagged_fields("group metadata")
    elif key_type == TARGET_ASSIGNMENT_METADATA_KEY_TYPE:
        epoch = r.int32("assignment epoch")
        tagged = r.tagged_fields("target assignment metadata")
        timestamp = 0
        if _ASSIGNMENT_TIMESTAMP_TAG in tagged:
            tr = _FlexReader(tagged[_ASSIGNMENT_TIMESTAMP_TAG])
            timestamp = tr.int64("assignment timestamp")
            tr.end("assignment timestamp")
        value = ShareGroupTargetAssignmentMetadataValue(epoch, timestamp)
    elif key_type == TARGET_ASSIGNMENT_MEMBER_KEY_TYPE:
        value = ShareGroupTargetAssignmentMemberValue(_read_topic_partitions(r, "topic partitions"))
        r.skip_tagged_fields("target assignment member")
    elif key_type == CURRENT_MEMBER_ASSIGNMENT_KEY_TYPE:
        member_epoch = r.int32("member epoch")
        previous_epoch = r.int32("previous member epoch")
        state = r.int8("state")
        assigned = _read_topic_partitions(r, "assigned partitions")
        r.skip_tagged_fields("current member assignment")
        value = ShareGroupCurrentMemberAssignmentValue(member_epoch, previous_epoch, state, assigned)
    else:
        initializing = _read_topic_partitions_info(r, "initializing topics")
        initialized = _read_topic_partitions_info(r, "initialized topics")
        deleting = []
        for _ in range(r.compact_array_count("deleting topics", 16 + 1 + 1)):
            topic_id = r.uuid("topic id")
            name = r.compact_string("topic name")
            r.skip_tagged_fields("deleting topic")
            deleting.append(TopicInfo(topic_id, name))
        r.skip_tagged_fields("state partition metadata")
        value = ShareGroupStatePartitionMetadataValue(initializing, initialized, tuple(deleting))
    r.end("value")
    return value


def encode_record(record: CoordinatorRecord) -> tuple[bytes, bytes | None]:
    """The record's key and value bytes (``None`` for a tombstone)."""
    return encode_key(record.key), encode_value(record.value)


def decode_record(key_bytes: bytes, value_bytes: bytes | None) -> CoordinatorRecord:
    """Decode one record; ``ValueError`` for anything malformed or not a share group record."""
    if key_bytes is None:
        raise ValueError("record without a key")
    key = decode_key(key_bytes)
    return CoordinatorRecord(key, decode_value(key, value_bytes))


# --------------------------------------------------------------------------- builders


def to_topic_partitions(partitions: TopicIdPartitions) -> tuple[TopicPartitions, ...]:
    """Records' ``TopicPartitions`` list: topics by id, partitions ascending, empty topics dropped."""
    return tuple(TopicPartitions(t, tuple(sorted(partitions[t]))) for t in sorted(partitions) if partitions[t])


def from_topic_partitions(items: Iterable[TopicPartitions]) -> dict[bytes, frozenset[int]]:
    """The partitions of a ``TopicPartitions`` list (a topic listed twice gets both lists)."""
    out: dict[bytes, frozenset[int]] = {}
    for tp in items:
        out[tp.topic_id] = out.get(tp.topic_id, frozenset()) | frozenset(tp.partitions)
    return {t: p for t, p in out.items() if p}


def member_subscription_record(
    group_id: str,
    member_id: str,
    rack_id: str | None,
    client_id: str,
    client_host: str,
    subscribed_topic_names: Iterable[str],
) -> CoordinatorRecord:
    """Kafka's ``newShareGroupMemberSubscriptionRecord`` (topic names sorted, as Kafka sorts them)."""
    return CoordinatorRecord(
        ShareGroupMemberMetadataKey(group_id, member_id),
        ShareGroupMemberMetadataValue(rack_id, client_id, client_host, tuple(sorted(subscribed_topic_names))),
    )


def member_subscription_tombstone(group_id: str, member_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(ShareGroupMemberMetadataKey(group_id, member_id), None)


def group_epoch_record(group_id: str, epoch: int, metadata_hash: int) -> CoordinatorRecord:
    return CoordinatorRecord(ShareGroupMetadataKey(group_id), ShareGroupMetadataValue(epoch, metadata_hash))


def group_epoch_tombstone(group_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(ShareGroupMetadataKey(group_id), None)


def target_assignment_record(group_id: str, member_id: str, partitions: TopicIdPartitions) -> CoordinatorRecord:
    return CoordinatorRecord(
        ShareGroupTargetAssignmentMemberKey(group_id, member_id),
        ShareGroupTargetAssignmentMemberValue(to_topic_partitions(partitions)),
    )


def target_assignment_tombstone(group_id: str, member_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(ShareGroupTargetAssignmentMemberKey(group_id, member_id), None)


def target_assignment_epoch_record(group_id: str, epoch: int, timestamp_ms: int = 0) -> CoordinatorRecord:
    """Kafka's ``newShareGroupTargetAssignmentMetadataRecord`` (*timestamp_ms* 0: not written)."""
    return CoordinatorRecord(
        ShareGroupTargetAssignmentMetadataKey(group_id),
        ShareGroupTargetAssignmentMetadataValue(epoch, timestamp_ms),
    )


def target_assignment_epoch_tombstone(group_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(ShareGroupTargetAssignmentMetadataKey(group_id), None)


def current_assignment_record(
    group_id: str, member_id: str, member_epoch: int, previous_member_epoch: int, state: int, assigned: TopicIdPartitions
) -> CoordinatorRecord:
    return CoordinatorRecord(
        ShareGroupCurrentMemberAssignmentKey(group_id, member_id),
        ShareGroupCurrentMemberAssignmentValue(member_epoch, previous_member_epoch, state, to_topic_partitions(assigned)),
    )


def current_assignment_tombstone(group_id: str, member_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(ShareGroupCurrentMemberAssignmentKey(group_id, member_id), None)


def state_partition_metadata_record(
    group_id: str,
    initializing: Mapping[bytes, tuple[str, Iterable[int]]],
    initialized: Mapping[bytes, tuple[str, Iterable[int]]],
    deleting: Mapping[bytes, str],
) -> CoordinatorRecord:
    """Kafka's ``newShareGroupStatePartitionMetadataRecord``: topic id → (name, partitions), and
    deleting topic id → name; topics by id, partitions ascending."""

    def infos(topics: Mapping[bytes, tuple[str, Iterable[int]]]) -> tuple[TopicPartitionsInfo, ...]:
        return tuple(
            TopicPartitionsInfo(t, topics[t][0], tuple(sorted(topics[t][1]))) for t in sorted(topics)
        )

    return CoordinatorRecord(
        ShareGroupStatePartitionMetadataKey(group_id),
        ShareGroupStatePartitionMetadataValue(
            infos(initializing),
            infos(initialized),
            tuple(TopicInfo(t, deleting[t]) for t in sorted(deleting)),
        ),
    )


def state_partition_metadata_tombstone(group_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(ShareGroupStatePartitionMetadataKey(group_id), None)
