"""``__consumer_offsets`` records of ``consumer`` groups (KIP-848), byte for byte as Kafka 4 writes them.

Contract (Kafka 4's ``group-coordinator/src/main/resources/common/message/ConsumerGroup*.json``
and ``GroupCoordinatorRecordHelpers``):

* Six record types, told apart by the key's leading int16 (the "key version" of Kafka's
  schema files, the record type in the coordinator): 3 ``ConsumerGroupMetadata`` (the group
  epoch), 4 ``ConsumerGroupPartitionMetadata`` (the subscribed topics' metadata),
  5 ``ConsumerGroupMemberMetadata`` (a member's subscription), 6
  ``ConsumerGroupTargetAssignmentMetadata`` (the target assignment epoch), 7
  ``ConsumerGroupTargetAssignmentMember`` (a member's target partitions), 8
  ``ConsumerGroupCurrentMemberAssignment`` (a member's epoch, state and partitions).
  Versions 0-2 are the classic records of :mod:`mafka.group.offsets_records`.
* Keys are not flexible: int16 type, then the group id (and member id) as int16-length
  strings.  Values are version 0 and flexible: int16 version, then the fields with compact
  strings and arrays (unsigned varint length + 1, 0 for null), 16-byte UUIDs, and a tagged
  field section (unsigned varint count, then tag, size, bytes) closing every struct.
* ``ConsumerGroupMemberMetadataValue``'s tagged field 0 (``ClassicMemberMetadata``, a
  nullable struct) is decoded and re-encoded; other unknown tagged fields are skipped.
* A ``None`` value is a tombstone.
* Decoding is bounded: every length is checked against the bytes left; truncated input,
  negative or oversized lengths, bad UTF-8, an unknown key type or value version, and
  trailing bytes raise ``ValueError`` and nothing else.
* Record builders (:func:`group_epoch_record` …) write what Kafka 4's
  ``GroupCoordinatorRecordHelpers`` writes, with lists in a fixed order (topics by id,
  partitions and topic names ascending) so the same state always gives the same bytes.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from mafka.group.consumer.member import (
    ConsumerGroupMember,
    TopicIdPartitions,
    TopicInfo,
)
from mafka.group.offsets_records import _Reader, _Writer

__all__ = [
    "ClassicMemberMetadata",
    "ClassicProtocol",
    "ConsumerGroupCurrentMemberAssignmentKey",
    "ConsumerGroupCurrentMemberAssignmentValue",
    "ConsumerGroupMemberMetadataKey",
    "ConsumerGroupMemberMetadataValue",
    "ConsumerGroupMetadataKey",
    "ConsumerGroupMetadataValue",
    "ConsumerGroupPartitionMetadataKey",
    "ConsumerGroupPartitionMetadataValue",
    "ConsumerGroupTargetAssignmentMemberKey",
    "ConsumerGroupTargetAssignmentMemberValue",
    "ConsumerGroupTargetAssignmentMetadataKey",
    "ConsumerGroupTargetAssignmentMetadataValue",
    "CoordinatorRecord",
    "PartitionMetadata",
    "RecordKey",
    "RecordValue",
    "TopicMetadata",
    "TopicPartitions",
    "current_assignment_record",
    "current_assignment_tombstone",
    "decode_key",
    "decode_record",
    "decode_value",
    "encode_key",
    "encode_record",
    "encode_value",
    "group_epoch_record",
    "group_epoch_tombstone",
    "is_consumer_group_key",
    "member_subscription_record",
    "member_subscription_tombstone",
    "subscription_metadata_record",
    "subscription_metadata_tombstone",
    "target_assignment_epoch_record",
    "target_assignment_epoch_tombstone",
    "target_assignment_record",
    "target_assignment_tombstone",
    "to_topic_partitions",
    "from_topic_partitions",
]

METADATA_KEY_TYPE = 3
PARTITION_METADATA_KEY_TYPE = 4
MEMBER_METADATA_KEY_TYPE = 5
TARGET_ASSIGNMENT_METADATA_KEY_TYPE = 6
TARGET_ASSIGNMENT_MEMBER_KEY_TYPE = 7
CURRENT_MEMBER_ASSIGNMENT_KEY_TYPE = 8
VALUE_VERSION = 0

_I8 = struct.Struct(">b")
_MAX_STRING = 0x7FFF


# --------------------------------------------------------------------------- keys


@dataclass(frozen=True)
class ConsumerGroupMetadataKey:
    group_id: str


@dataclass(frozen=True)
class ConsumerGroupPartitionMetadataKey:
    group_id: str


@dataclass(frozen=True)
class ConsumerGroupMemberMetadataKey:
    group_id: str
    member_id: str


@dataclass(frozen=True)
class ConsumerGroupTargetAssignmentMetadataKey:
    group_id: str


@dataclass(frozen=True)
class ConsumerGroupTargetAssignmentMemberKey:
    group_id: str
    member_id: str


@dataclass(frozen=True)
class ConsumerGroupCurrentMemberAssignmentKey:
    group_id: str
    member_id: str


RecordKey = (
    ConsumerGroupMetadataKey
    | ConsumerGroupPartitionMetadataKey
    | ConsumerGroupMemberMetadataKey
    | ConsumerGroupTargetAssignmentMetadataKey
    | ConsumerGroupTargetAssignmentMemberKey
    | ConsumerGroupCurrentMemberAssignmentKey
)

_KEY_TYPES: dict[type, int] = {
    ConsumerGroupMetadataKey: METADATA_KEY_TYPE,
    ConsumerGroupPartitionMetadataKey: PARTITION_METADATA_KEY_TYPE,
    ConsumerGroupMemberMetadataKey: MEMBER_METADATA_KEY_TYPE,
    ConsumerGroupTargetAssignmentMetadataKey: TARGET_ASSIGNMENT_METADATA_KEY_TYPE,
    ConsumerGroupTargetAssignmentMemberKey: TARGET_ASSIGNMENT_MEMBER_KEY_TYPE,
    ConsumerGroupCurrentMemberAssignmentKey: CURRENT_MEMBER_ASSIGNMENT_KEY_TYPE,
}


# --------------------------------------------------------------------------- values


@dataclass(frozen=True)
class TopicPartitions:
    """A topic id and some of its partitions (the records' ``TopicPartitions`` struct)."""

    topic_id: bytes
    partitions: tuple[int, ...]


@dataclass(frozen=True)
class ConsumerGroupMetadataValue:
    epoch: int


@dataclass(frozen=True)
class PartitionMetadata:
    """Deprecated in Kafka 4 (never written by it, nor here); kept to decode older records."""

    partition: int
    racks: tuple[str, ...]


@dataclass(frozen=True)
class TopicMetadata:
    topic_id: bytes
    topic_name: str
    num_partitions: int
    partition_metadata: tuple[PartitionMetadata, ...] = ()


@dataclass(frozen=True)
class ConsumerGroupPartitionMetadataValue:
    topics: tuple[TopicMetadata, ...]


@dataclass(frozen=True)
class ClassicProtocol:
    name: str
    metadata: bytes


@dataclass(frozen=True)
class ClassicMemberMetadata:
    """Tagged field 0 of a member's metadata: set only for a member using the classic protocol."""

    session_timeout_ms: int
    supported_protocols: tuple[ClassicProtocol, ...]


@dataclass(frozen=True)
class ConsumerGroupMemberMetadataValue:
    instance_id: str | None
    rack_id: str | None
    client_id: str
    client_host: str
    subscribed_topic_names: tuple[str, ...]
    subscribed_topic_regex: str | None
    rebalance_timeout_ms: int = -1
    server_assignor: str | None = None
    classic_member_metadata: ClassicMemberMetadata | None = None


@dataclass(frozen=True)
class ConsumerGroupTargetAssignmentMetadataValue:
    assignment_epoch: int


@dataclass(frozen=True)
class ConsumerGroupTargetAssignmentMemberValue:
    topic_partitions: tuple[TopicPartitions, ...]


@dataclass(frozen=True)
class ConsumerGroupCurrentMemberAssignmentValue:
    member_epoch: int
    previous_member_epoch: int
    state: int
    assigned_partitions: tuple[TopicPartitions, ...]
    partitions_pending_revocation: tuple[TopicPartitions, ...]


RecordValue = (
    ConsumerGroupMetadataValue
    | ConsumerGroupPartitionMetadataValue
    | ConsumerGroupMemberMetadataValue
    | ConsumerGroupTargetAssignmentMetadataValue
    | ConsumerGroupTargetAssignmentMemberValue
    | ConsumerGroupCurrentMemberAssignmentValue
)

_VALUE_TYPES: dict[int, type] = {
    METADATA_KEY_TYPE: ConsumerGroupMetadataValue,
    PARTITION_METADATA_KEY_TYPE: ConsumerGroupPartitionMetadataValue,
    MEMBER_METADATA_KEY_TYPE: ConsumerGroupMemberMetadataValue,
    TARGET_ASSIGNMENT_METADATA_KEY_TYPE: ConsumerGroupTargetAssignmentMetadataValue,
    TARGET_ASSIGNMENT_MEMBER_KEY_TYPE: ConsumerGroupTargetAssignmentMemberValue,
    CURRENT_MEMBER_ASSIGNMENT_KEY_TYPE: ConsumerGroupCurrentMemberAssignmentValue,
}


@dataclass(frozen=True)
class CoordinatorRecord:
    """One ``__consumer_offsets`` record: a key and its value, ``None`` for a tombstone."""

    key: RecordKey
    value: RecordValue | None

    def __post_init__(self) -> None:
        if self.value is not None and not isinstance(self.value, _VALUE_TYPES[_key_type(self.key)]):
            raise TypeError(f"{type(self.value).__name__} is not the value of a {type(self.key).__name__}")


# --------------------------------------------------------------------------- flexible writer


class _FlexWriter(_Writer):
    """:class:`~mafka.group.offsets_records._Writer` plus the flexible-version encodings."""

    __slots__ = ()

    def int8(self, v: int) -> None:
        try:
            self._parts.append(_I8.pack(v))
        except struct.error as e:
            raise ValueError(f"int8 out of range: {v!r}") from e

    def raw(self, data: bytes) -> None:
        self._parts.append(data)

    def uvarint(self, v: int) -> None:
        if v < 0 or v > 0xFFFFFFFF:
            raise ValueError(f"unsigned varint out of range: {v!r}")
        out = bytearray()
        while v >= 0x80:
            out.append((v & 0x7F) | 0x80)
            v >>= 7
        out.append(v)
        self._parts.append(bytes(out))

    def compact_nullable_string(self, v: str | None) -> None:
        if v is None:
            self.uvarint(0)
            return
        data = v.encode("utf-8")
        if len(data) > _MAX_STRING:
            raise ValueError(f"string of {len(data)} bytes is too long")
        self.uvarint(len(data) + 1)
        self._parts.append(data)

    def compact_string(self, v: str) -> None:
        if v is None:
            raise ValueError("non-nullable string is None")
        self.compact_nullable_string(v)

    def compact_bytes(self, v: bytes) -> None:
        self.uvarint(len(v) + 1)
        self._parts.append(bytes(v))

    def uuid(self, v: bytes) -> None:
        if len(v) != 16:
            raise ValueError(f"a UUID is 16 bytes, got {len(v)}")
        self._parts.append(bytes(v))

    def array_length(self, n: int) -> None:
        self.uvarint(n + 1)

    def no_tagged_fields(self) -> None:
        self.uvarint(0)


# --------------------------------------------------------------------------- flexible reader


class _FlexReader(_Reader):
    """:class:`~mafka.group.offsets_records._Reader` plus the flexible-version decodings."""

    __slots__ = ()

    def int8(self, what: str = "int8") -> int:
        value: int = _I8.unpack(self._take(1, what))[0]
        return value

    def uvarint(self, what: str) -> int:
        value = 0
        for i in range(5):
            b = self._take(1, what)[0]
            value |= (b & 0x7F) << (7 * i)
            if not b & 0x80:
                if value > 0xFFFFFFFF:
                    raise ValueError(f"{what} does not fit in 32 bits")
                return value
        raise ValueError(f"{what} is a varint longer than 5 bytes")

    def compact_nullable_string(self, what: str) -> str | None:
        n = self.uvarint(what + " length")
        if n == 0:
            return None
        if n - 1 > _MAX_STRING:
            raise ValueError(f"{what} length {n - 1} is too long")
        raw = self._take(n - 1, what)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"{what} is not valid UTF-8") from e

    def compact_string(self, what: str) -> str:
        s = self.compact_nullable_string(what)
        if s is None:
            raise ValueError(f"{what} is null but not nullable")
        return s

    def compact_bytes(self, what: str) -> bytes:
        n = self.uvarint(what + " length")
        if n == 0:
            raise ValueError(f"{what} is null but not nullable")
        return self._take(n - 1, what)

    def uuid(self, what: str) -> bytes:
        return self._take(16, what)

    def compact_array_count(self, what: str, min_element_size: int) -> int:
        n = self.uvarint(what + " count")
        if n == 0:
            raise ValueError(f"{what} is null but not nullable")
        n -= 1
        if n * min_element_size > self.remaining():
            raise ValueError(f"{what} count {n} exceeds the remaining bytes")
        return n

    def remaining(self) -> int:
        return len(self._buf) - self._pos

    def tagged_fields(self, what: str) -> dict[int, bytes]:
        """The tagged field section closing a struct: tag → raw bytes."""
        fields: dict[int, bytes] = {}
        for _ in range(self.uvarint(what + " tagged field count")):
            tag = self.uvarint(what + " tag")
            size = self.uvarint(what + " tagged field size")
            if tag in fields:
                raise ValueError(f"{what} repeats tagged field {tag}")
            fields[tag] = self._take(size, f"{what} tagged field {tag}")
        return fields

    def skip_tagged_fields(self, what: str) -> None:
        self.tagged_fields(what)


# --------------------------------------------------------------------------- key codec


def _key_type(key: RecordKey) -> int:
    try:
        return _KEY_TYPES[type(key)]
    except KeyError:
        raise TypeError(f"not a consumer group record key: {type(key).__name__}") from None


def encode_key(key: RecordKey) -> bytes:
    """Key bytes: int16 record type, the group id, and the member id where the key has one."""
    w = _Writer()
    w.int16(_key_type(key))
    w.string(key.group_id)
    if isinstance(
        key,
        ConsumerGroupMemberMetadataKey | ConsumerGroupTargetAssignmentMemberKey | ConsumerGroupCurrentMemberAssignmentKey,
    ):
        w.string(key.member_id)
    return w.getvalue()


def is_consumer_group_key(key_bytes: bytes) -> bool:
    """Whether *key_bytes* is the key of one of these records (its leading int16 is 3 to 8)."""
    if len(key_bytes) < 2:
        return False
    key_type: int = struct.unpack_from(">h", key_bytes)[0]
    return key_type in _VALUE_TYPES


def decode_key(data: bytes) -> RecordKey:
    r = _Reader(data)
    key_type = r.int16("key type")
    if key_type not in _VALUE_TYPES:
        raise ValueError(f"not a consumer group record key type: {key_type}")
    group_id = r.string("group id")
    key: RecordKey
    if key_type == METADATA_KEY_TYPE:
        key = ConsumerGroupMetadataKey(group_id)
    elif key_type == PARTITION_METADATA_KEY_TYPE:
        key = ConsumerGroupPartitionMetadataKey(group_id)
    elif key_type == MEMBER_METADATA_KEY_TYPE:
        key = ConsumerGroupMemberMetadataKey(group_id, r.string("member id"))
    elif key_type == TARGET_ASSIGNMENT_METADATA_KEY_TYPE:
        key = ConsumerGroupTargetAssignmentMetadataKey(group_id)
    elif key_type == TARGET_ASSIGNMENT_MEMBER_KEY_TYPE:
        key = ConsumerGroupTargetAssignmentMemberKey(group_id, r.string("member id"))
    else:
        key = ConsumerGroupCurrentMemberAssignmentKey(group_id, r.string("member id"))
    r.end("key")
    return key


# --------------------------------------------------------------------------- value codec


def _write_topic_partitions(w: _FlexWriter, items: tuple[TopicPartitions, ...]) -> None:
    w.array_length(len(items))
    for tp in items:
        w.uuid(tp.topic_id)
        w.array_length(len(tp.partitions))
        for p in tp.partitions:
            w.int32(p)
        w.no_tagged_fields()


def _read_topic_partitions(r: _FlexReader, what: str) -> tuple[TopicPartitions, ...]:
    out = []
    # smallest element: a UUID, an empty array, no tagged fields
    for _ in range(r.compact_array_count(what, 16 + 1 + 1)):
        topic_id = r.uuid("topic id")
        parts = tuple(r.int32("partition") for _ in range(r.compact_array_count("partitions", 4)))
        r.skip_tagged_fields(what)
        out.append(TopicPartitions(topic_id, parts))
    return tuple(out)


def _write_classic(w: _FlexWriter, c: ClassicMemberMetadata) -> None:
    w.int32(c.session_timeout_ms)
    w.array_length(len(c.supported_protocols))
    for proto in c.supported_protocols:
        w.compact_string(proto.name)
        w.compact_bytes(proto.metadata)
        w.no_tagged_fields()
    w.no_tagged_fields()


def _read_classic(data: bytes) -> ClassicMemberMetadata | None:
    r = _FlexReader(data)
    if r.uvarint("classic member metadata presence") == 0:
        r.end("classic member metadata")
        return None
    session_timeout = r.int32("session timeout")
    protocols = []
    for _ in range(r.compact_array_count("supported protocols", 1 + 1 + 1)):
        name = r.compact_string("protocol name")
        metadata = r.compact_bytes("protocol metadata")
        r.skip_tagged_fields("classic protocol")
        protocols.append(ClassicProtocol(name, metadata))
    r.skip_tagged_fields("classic member metadata")
    r.end("classic member metadata")
    return ClassicMemberMetadata(session_timeout, tuple(protocols))


def encode_value(value: RecordValue | None) -> bytes | None:
    """Value bytes at version 0; ``None`` (a tombstone) stays ``None``."""
    if value is None:
        return None
    w = _FlexWriter()
    w.int16(VALUE_VERSION)
    if isinstance(value, ConsumerGroupMetadataValue):
        w.int32(value.epoch)
    elif isinstance(value, ConsumerGroupPartitionMetadataValue):
        w.array_length(len(value.topics))
        for topic in value.topics:
            w.uuid(topic.topic_id)
            w.compact_string(topic.topic_name)
            w.int32(topic.num_partitions)
            w.array_length(len(topic.partition_metadata))
            for pm in topic.partition_metadata:
                w.int32(pm.partition)
                w.array_length(len(pm.racks))
                for rack in pm.racks:
                    w.compact_string(rack)
                w.no_tagged_fields()
            w.no_tagged_fields()
    elif isinstance(value, ConsumerGroupMemberMetadataValue):
        w.compact_nullable_string(value.instance_id)
        w.compact_nullable_string(value.rack_id)
        w.compact_string(value.client_id)
        w.compact_string(value.client_host)
        w.array_length(len(value.subscribed_topic_names))
        for name in value.subscribed_topic_names:
            w.compact_string(name)
        w.compact_nullable_string(value.subscribed_topic_regex)
        w.int32(value.rebalance_timeout_ms)
        w.compact_nullable_string(value.server_assignor)
        classic = value.classic_member_metadata
        if classic is None:
            w.no_tagged_fields()
        else:
            cw = _FlexWriter()
            _write_classic(cw, classic)
            body = cw.getvalue()
            w.uvarint(1)  # one tagged field
            w.uvarint(0)  # tag 0: ClassicMemberMetadata
            w.uvarint(len(body) + 1)  # its size, with the non-null marker
            w.uvarint(1)  # non-null
            w.raw(body)
    elif isinstance(value, ConsumerGroupTargetAssignmentMetadataValue):
        w.int32(value.assignment_epoch)
    elif isinstance(value, ConsumerGroupTargetAssignmentMemberValue):
        _write_topic_partitions(w, value.topic_partitions)
    elif isinstance(value, ConsumerGroupCurrentMemberAssignmentValue):
        w.int32(value.member_epoch)
        w.int32(value.previous_member_epoch)
        w.int8(value.state)
        _write_topic_partitions(w, value.assigned_partitions)
        _write_topic_partitions(w, value.partitions_pending_revocation)
    else:
        raise TypeError(f"not a consumer group record value: {type(value).__name__}")
    if not isinstance(value, ConsumerGroupMemberMetadataValue):
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
    if key_type == METADATA_KEY_TYPE:
        value = ConsumerGroupMetadataValue(r.int32("epoch"))
        r.skip_tagged_fields("group metadata")
    elif key_type == PARTITION_METADATA_KEY_TYPE:
        topics = []
        for _ in range(r.compact_array_count("topics", 16 + 1 + 4 + 1 + 1)):
            topic_id = r.uuid("topic id")
            name = r.compact_string("topic name")
            num_partitions = r.int32("partition count")
            pms = []
            for _ in range(r.compact_array_count("partition metadata", 4 + 1 + 1)):
                partition = r.int32("partition")
                racks = tuple(r.compact_string("rack") for _ in range(r.compact_array_count("racks", 1)))
                r.skip_tagged_fields("partition metadata")
                pms.append(PartitionMetadata(partition, racks))
            r.skip_tagged_fields("topic metadata")
            topics.append(TopicMetadata(topic_id, name, num_partitions, tuple(pms)))
        r.skip_tagged_fields("partition metadata value")
        value = ConsumerGroupPartitionMetadataValue(tuple(topics))
    elif key_type == MEMBER_METADATA_KEY_TYPE:
        instance_id = r.compact_nullable_string("instance id")
        rack_id = r.compact_nullable_string("rack id")
        client_id = r.compact_string("client id")
        client_host = r.compact_string("client host")
        names = tuple(r.compact_string("topic name") for _ in range(r.compact_array_count("subscribed topic names", 1)))
        regex = r.compact_nullable_string("subscribed topic regex")
        rebalance_timeout = r.int32("rebalance timeout")
        assignor = r.compact_nullable_string("server assignor")
        tagged = r.tagged_fields("member metadata")
        classic = _read_classic(tagged[0]) if 0 in tagged else None
        value = ConsumerGroupMemberMetadataValue(
            instance_id, rack_id, client_id, client_host, names, regex, rebalance_timeout, assignor, classic
        )
    elif key_type == TARGET_ASSIGNMENT_METADATA_KEY_TYPE:
        value = ConsumerGroupTargetAssignmentMetadataValue(r.int32("assignment epoch"))
        r.skip_tagged_fields("target assignment metadata")
    elif key_type == TARGET_ASSIGNMENT_MEMBER_KEY_TYPE:
        value = ConsumerGroupTargetAssignmentMemberValue(_read_topic_partitions(r, "topic partitions"))
        r.skip_tagged_fields("target assignment member")
    else:
        member_epoch = r.int32("member epoch")
        previous_epoch = r.int32("previous member epoch")
        state = r.int8("state")
        assigned = _read_topic_partitions(r, "assigned partitions")
        pending = _read_topic_partitions(r, "partitions pending revocation")
        r.skip_tagged_fields("current member assignment")
        value = ConsumerGroupCurrentMemberAssignmentValue(member_epoch, previous_epoch, state, assigned, pending)
    r.end("value")
    return value


def encode_record(record: CoordinatorRecord) -> tuple[bytes, bytes | None]:
    """The record's key and value bytes (``None`` for a tombstone)."""
    return encode_key(record.key), encode_value(record.value)


def decode_record(key_bytes: bytes, value_bytes: bytes | None) -> CoordinatorRecord:
    """Decode one record; ``ValueError`` for anything malformed or not a consumer group record."""
    if key_bytes is None:
        raise ValueError("record without a key")
    key = decode_key(key_bytes)
    return CoordinatorRecord(key, decode_value(key, value_bytes))


# --------------------------------------------------------------------------- builders


def to_topic_partitions(partitions: TopicIdPartitions) -> tuple[TopicPartitions, ...]:
    """Records' ``TopicPartitions`` list: topics by id, partitions ascending."""
    return tuple(TopicPartitions(t, tuple(sorted(partitions[t]))) for t in sorted(partitions))


def from_topic_partitions(items: Iterable[TopicPartitions]) -> dict[bytes, frozenset[int]]:
    """The partitions of a ``TopicPartitions`` list (a topic listed twice gets both lists)."""
    out: dict[bytes, frozenset[int]] = {}
    for tp in items:
        out[tp.topic_id] = out.get(tp.topic_id, frozenset()) | frozenset(tp.partitions)
    return {t: p for t, p in out.items() if p}


def group_epoch_record(group_id: str, epoch: int) -> CoordinatorRecord:
    return CoordinatorRecord(ConsumerGroupMetadataKey(group_id), ConsumerGroupMetadataValue(epoch))


def group_epoch_tombstone(group_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(ConsumerGroupMetadataKey(group_id), None)


def subscription_metadata_record(group_id: str, metadata: Mapping[str, TopicInfo]) -> CoordinatorRecord:
    """The subscribed topics' metadata (topics by name; no per-partition racks, as Kafka 4)."""
    topics = tuple(
        TopicMetadata(metadata[name].topic_id, name, metadata[name].partitions) for name in sorted(metadata)
    )
    return CoordinatorRecord(ConsumerGroupPartitionMetadataKey(group_id), ConsumerGroupPartitionMetadataValue(topics))


def subscription_metadata_tombstone(group_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(ConsumerGroupPartitionMetadataKey(group_id), None)


def member_subscription_record(group_id: str, member: ConsumerGroupMember) -> CoordinatorRecord:
    return CoordinatorRecord(
        ConsumerGroupMemberMetadataKey(group_id, member.member_id),
        ConsumerGroupMemberMetadataValue(
            instance_id=member.instance_id,
            rack_id=member.rack_id,
            client_id=member.client_id,
            client_host=member.client_host,
            subscribed_topic_names=tuple(sorted(member.subscribed_topic_names)),
            subscribed_topic_regex=member.subscribed_topic_regex,
            rebalance_timeout_ms=member.rebalance_timeout_ms,
            server_assignor=member.server_assignor_name,
            classic_member_metadata=member.classic_member_metadata,
        ),
    )


def member_subscription_tombstone(group_id: str, member_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(ConsumerGroupMemberMetadataKey(group_id, member_id), None)


def target_assignment_record(group_id: str, member_id: str, partitions: TopicIdPartitions) -> CoordinatorRecord:
    return CoordinatorRecord(
        ConsumerGroupTargetAssignmentMemberKey(group_id, member_id),
        ConsumerGroupTargetAssignmentMemberValue(to_topic_partitions(partitions)),
    )


def target_assignment_tombstone(group_id: str, member_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(ConsumerGroupTargetAssignmentMemberKey(group_id, member_id), None)


def target_assignment_epoch_record(group_id: str, epoch: int) -> CoordinatorRecord:
    return CoordinatorRecord(
        ConsumerGroupTargetAssignmentMetadataKey(group_id), ConsumerGroupTargetAssignmentMetadataValue(epoch)
    )


def target_assignment_epoch_tombstone(group_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(ConsumerGroupTargetAssignmentMetadataKey(group_id), None)


def current_assignment_record(group_id: str, member: ConsumerGroupMember) -> CoordinatorRecord:
    return CoordinatorRecord(
        ConsumerGroupCurrentMemberAssignmentKey(group_id, member.member_id),
        ConsumerGroupCurrentMemberAssignmentValue(
            member_epoch=member.member_epoch,
            previous_member_epoch=member.previous_member_epoch,
            state=int(member.state),
            assigned_partitions=to_topic_partitions(member.assigned_partitions),
            partitions_pending_revocation=to_topic_partitions(member.partitions_pending_revocation),
        ),
    )


def current_assignment_tombstone(group_id: str, member_id: str) -> CoordinatorRecord:
    return CoordinatorRecord(ConsumerGroupCurrentMemberAssignmentKey(group_id, member_id), None)
