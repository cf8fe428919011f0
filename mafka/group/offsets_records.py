"""``__consumer_offsets`` record keys and values, byte for byte as Kafka 2.8 writes them.

Contract (Kafka 2.8 ``GroupMetadataManager``; field layouts as in Kafka's
``OffsetCommitKey/Value.json`` and ``GroupMetadataKey/Value.json``):

* Every key and every value starts with a big-endian int16 schema version,
  followed by the fields in order. Primitives: int16/int32/int64 big-endian;
  STRING = int16 length + UTF-8 (NULLABLE_STRING: length -1 is ``None``);
  BYTES = int32 length + raw bytes; arrays = int32 count + elements.
* Keys: an offset commit key is written at version 1 (``group, topic,
  partition``; version 0 has the same layout); a group metadata key is written
  at version 2 (``group``). :func:`decode_key` and :func:`decode_record`
  dispatch on that version: 0/1 offset commit, 2 group metadata, anything else
  ``ValueError`` (Kafka 2.8 refuses unknown key versions too).
* Offset commit values: :func:`encode_offset_value` with no explicit version
  follows Kafka 2.8 with IBP >= 2.1: version 3 (``offset, leaderEpoch,
  metadata, commitTimestamp``) unless the commit carries an explicit expire
  timestamp, in which case version 1 (``offset, metadata, commitTimestamp,
  expireTimestamp``). Versions 0 and 2 are ``offset, metadata,
  commitTimestamp``. Decoding accepts 0-3; a missing leader epoch is -1 and a
  missing (or -1) expire timestamp is ``None``.
* Group metadata values are written at version 3 by default (decode 0-3):
  ``protocolType, generation, protocol?, leader?, currentStateTimestamp (v2+),
  members[]``, each member ``memberId, groupInstanceId? (v3), clientId,
  clientHost, rebalanceTimeout (v1+), sessionTimeout, subscription,
  assignment``. Fields absent at the decoded version get Kafka's defaults
  (``currentStateTimestamp`` -1, ``groupInstanceId`` ``None``,
  ``rebalanceTimeout`` = ``sessionTimeout`` as Kafka 2.8 reads v0).
* A ``None`` value is a tombstone: the decoders return ``None``.
* Decoding is bounded: every length is checked against the bytes left; a
  truncated, negative-length, bad-UTF-8, unknown-version or trailing-garbage
  input raises ``ValueError`` and nothing else.
* :func:`offsets_partition_for` is Kafka's ``Utils.abs(groupId.hashCode) % n``.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

__all__ = [
    "GroupMetadataKey",
    "GroupMetadataValue",
    "MemberMetadata",
    "OffsetKey",
    "OffsetValue",
    "decode_group_metadata_value",
    "decode_key",
    "decode_offset_value",
    "decode_record",
    "decode_value",
    "encode_group_metadata_value",
    "encode_key",
    "encode_offset_value",
    "encode_value",
    "java_string_hash",
    "offsets_partition_for",
]

OFFSET_KEY_VERSION = 1
GROUP_KEY_VERSION = 2
OFFSET_VALUE_VERSION = 3
GROUP_VALUE_VERSION = 3

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")
_I64 = struct.Struct(">q")

_INT32_MIN = -(2**31)


# --------------------------------------------------------------------------- hashing


def java_string_hash(s: str) -> int:
    """Java's ``String.hashCode``: h = 31*h + c over UTF-16 code units, as signed int32."""
    data = s.encode("utf-16-be", "surrogatepass")
    h = 0
    for i in range(0, len(data), 2):
        h = (31 * h + ((data[i] << 8) | data[i + 1])) & 0xFFFFFFFF
    return h - (1 << 32) if h & 0x80000000 else h


def offsets_partition_for(group_id: str, partitions: int = 50) -> int:
    """The ``__consumer_offsets`` partition of ``group_id``: ``Utils.abs(hashCode) % partitions``."""
    if partitions <= 0:
        raise ValueError(f"partitions must be positive, got {partitions}")
    h = java_string_hash(group_id)
    return (0 if h == _INT32_MIN else abs(h)) % partitions


# --------------------------------------------------------------------------- records


@dataclass(frozen=True)
class OffsetKey:
    group: str
    topic: str
    partition: int


@dataclass(frozen=True)
class OffsetValue:
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int | None = None


@dataclass(frozen=True)
class GroupMetadataKey:
    group: str


@dataclass(frozen=True)
class MemberMetadata:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    rebalance_timeout: int
    session_timeout: int
    subscription: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupMetadataValue:
    protocol_type: str
    generation: int
    protocol: str | None
    leader: str | None
    current_state_timestamp: int = -1
    members: list[MemberMetadata] = field(default_factory=list)


# --------------------------------------------------------------------------- writer


class _Writer:
    __slots__ = ("_parts",)

    def __init__(self) -> None:
        self._parts: list[bytes] = []

    def int16(self, v: int) -> None:
        self._parts.append(_pack(_I16, v, "int16"))

    def int32(self, v: int) -> None:
        self._parts.append(_pack(_I32, v, "int32"))

    def int64(self, v: int) -> None:
        self._parts.append(_pack(_I64, v, "int64"))

    def string(self, v: str) -> None:
        if v is None:
            raise ValueError("non-nullable string is None")
        self.nullable_string(v)

    def nullable_string(self, v: str | None) -> None:
        if v is None:
            self.int16(-1)
            return
        data = v.encode("utf-8")
        if len(data) > 0x7FFF:
            raise ValueError(f"string of {len(data)} bytes is too long")
        self.int16(len(data))
        self._parts.append(data)

    def bytes_(self, v: bytes) -> None:
        if v is None:
            raise ValueError("non-nullable bytes is None")
        self.int32(len(v))
        self._parts.append(bytes(v))

    def getvalue(self) -> bytes:
        return b"".join(self._parts)


def _pack(st: struct.Struct, v: int, name: str) -> bytes:
    try:
        return st.pack(v)
    except struct.error as e:
        raise ValueError(f"{name} out of range: {v!r}") from e


# --------------------------------------------------------------------------- reader


class _Reader:
    __slots__ = ("_buf", "_pos")

    def __init__(self, data: bytes) -> None:
        if not isinstance(data, (bytes, bytearray, memoryview)):
            raise ValueError(f"expected bytes, got {type(data).__name__}")
        self._buf = bytes(data)
        self._pos = 0

    def _take(self, n: int, what: str) -> bytes:
        if n < 0 or self._pos + n > len(self._buf):
            raise ValueError(
                f"truncated {what}: need {n} bytes at offset {self._pos}, "
                f"{len(self._buf) - self._pos} left"
            )
        out = self._buf[self._pos : self._pos + n]
        self._pos += n
        return out

    def int16(self, what: str = "int16") -> int:
        value: int = _I16.unpack(self._take(2, what))[0]
        return value

    def int32(self, what: str = "int32") -> int:
        value: int = _I32.unpack(self._take(4, what))[0]
        return value

    def int64(self, what: str = "int64") -> int:
        value: int = _I64.unpack(self._take(8, what))[0]
        return value

    def nullable_string(self, what: str = "string") -> str | None:
        n = self.int16(what + " length")
        if n == -1:
            return None
        if n < 0:
            raise ValueError(f"negative {what} length {n}")
        raw = self._take(n, what)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise ValueError(f"{what} is not valid UTF-8") from e

    def string(self, what: str = "string") -> str:
        s = self.nullable_string(what)
        if s is None:
            raise ValueError(f"{what} is null but not nullable")
        return s

    def bytes_(self, what: str = "bytes") -> bytes:
        n = self.int32(what + " length")
        if n < 0:
            raise ValueError(f"negative {what} length {n}")
        return self._take(n, what)

    def array_count(self, what: str, min_element_size: int) -> int:
        n = self.int32(what + " count")
        if n < 0:
            raise ValueError(f"negative {what} count {n}")
        if n * min_element_size > len(self._buf) - self._pos:
            raise ValueError(f"{what} count {n} exceeds the remaining bytes")
        return n

    def end(self, what: str) -> None:
        if self._pos != len(self._buf):
            raise ValueError(f"{len(self._buf) - self._pos} trailing bytes after {what}")


# --------------------------------------------------------------------------- keys


def encode_key(key: OffsetKey | GroupMetadataKey) -> bytes:
    """Key bytes: offset commit keys at version 1, group metadata keys at version 2."""
    w = _Writer()
    if isinstance(key, OffsetKey):
        w.int16(OFFSET_KEY_VERSION)
        w.string(key.group)
        w.string(key.topic)
        w.int32(key.partition)
    elif isinstance(key, GroupMetadataKey):
        w.int16(GROUP_KEY_VERSION)
        w.string(key.group)
    else:
        raise TypeError(f"not a __consumer_offsets key: {type(key).__name__}")
    return w.getvalue()


def decode_key(data: bytes) -> OffsetKey | GroupMetadataKey:
    r = _Reader(data)
    version = r.int16("key version")
    if version in (0, 1):
        key: OffsetKey | GroupMetadataKey = OffsetKey(
            r.string("group"), r.string("topic"), r.int32("partition")
        )
    elif version == 2:
        key = GroupMetadataKey(r.string("group"))
    else:
        raise ValueError(f"unknown __consumer_offsets key version {version}")
    r.end("key")
    return key


# --------------------------------------------------------------------------- offset values


def encode_offset_value(value: OffsetValue, version: int | None = None) -> bytes:
    """Offset commit value; by default version 3, or 1 if an expire timestamp is set."""
    if version is None:
        version = 1 if value.expire_timestamp is not None else OFFSET_VALUE_VERSION
    if version not in (0, 1, 2, 3):
        raise ValueError(f"unsupported offset commit value version {version}")
    w = _Writer()
    w.int16(version)
    w.int64(value.offset)
    if version == 3:
        w.int32(value.leader_epoch)
    w.string(value.metadata)
    w.int64(value.commit_timestamp)
    if version == 1:
        w.int64(-1 if value.expire_timestamp is None else value.expire_timestamp)
    return w.getvalue()


def decode_offset_value(data: bytes | None) -> OffsetValue | None:
    if data is None:
        return None
    r = _Reader(data)
    version = r.int16("value version")
    if version not in (0, 1, 2, 3):
        raise ValueError(f"unknown offset commit value version {version}")
    offset = r.int64("offset")
    leader_epoch = r.int32("leader epoch") if version == 3 else -1
    metadata = r.string("metadata")
    commit_ts = r.int64("commit timestamp")
    expire_ts: int | None = None
    if version == 1:
        expire_ts = r.int64("expire timestamp")
        if expire_ts == -1:
            expire_ts = None
    r.end("offset commit value")
    return OffsetValue(offset, leader_epoch, metadata, commit_ts, expire_ts)


# --------------------------------------------------------------------------- group values


def encode_group_metadata_value(
    value: GroupMetadataValue, version: int = GROUP_VALUE_VERSION
) -> bytes:
    if version not in (0, 1, 2, 3):
        raise ValueError(f"unsupported group metadata value version {version}")
    w = _Writer()
    w.int16(version)
    w.string(value.protocol_type)
    w.int32(value.generation)
    w.nullable_string(value.protocol)
    w.nullable_string(value.leader)
    if version >= 2:
        w.int64(value.current_state_timestamp)
    w.int32(len(value.members))
    for m in value.members:
        w.string(m.member_id)
        if version >= 3:
            w.nullable_string(m.group_instance_id)
        w.string(m.client_id)
        w.string(m.client_host)
        if version >= 1:
            w.int32(m.rebalance_timeout)
        w.int32(m.session_timeout)
        w.bytes_(m.subscription)
        w.bytes_(m.assignment)
    return w.getvalue()


def decode_group_metadata_value(data: bytes | None) -> GroupMetadataValue | None:
    if data is None:
        return None
    r = _Reader(data)
    version = r.int16("value version")
    if version not in (0, 1, 2, 3):
        raise ValueError(f"unknown group metadata value version {version}")
    protocol_type = r.string("protocol type")
    generation = r.int32("generation")
    protocol = r.nullable_string("protocol")
    leader = r.nullable_string("leader")
    current_state_ts = r.int64("current state timestamp") if version >= 2 else -1
    # smallest member: 3 empty strings (+1 at v3), the int32s, two empty byte arrays
    min_member = 2 * 3 + (2 if version >= 3 else 0) + (8 if version >= 1 else 4) + 8
    members = []
    for _ in range(r.array_count("members", min_member)):
        member_id = r.string("member id")
        instance_id = r.nullable_string("group instance id") if version >= 3 else None
        client_id = r.string("client id")
        client_host = r.string("client host")
        rebalance_timeout = r.int32("rebalance timeout") if version >= 1 else None
        session_timeout = r.int32("session timeout")
        if rebalance_timeout is None:
            rebalance_timeout = session_timeout
        subscription = r.bytes_("subscription")
        assignment = r.bytes_("assignment")
        members.append(
            MemberMetadata(
                member_id,
                instance_id,
                client_id,
                client_host,
                rebalance_timeout,
                session_timeout,
                subscription,
                assignment,
            )
        )
    r.end("group metadata value")
    return GroupMetadataValue(
        protocol_type, generation, protocol, leader, current_state_ts, members
    )


# --------------------------------------------------------------------------- dispatch


def encode_value(value: OffsetValue | GroupMetadataValue | None) -> bytes | None:
    """Value bytes at Kafka 2.8's default version; ``None`` (tombstone) stays ``None``."""
    if value is None:
        return None
    if isinstance(value, OffsetValue):
        return encode_offset_value(value)
    if isinstance(value, GroupMetadataValue):
        return encode_group_metadata_value(value)
    raise TypeError(f"not a __consumer_offsets value: {type(value).__name__}")


def decode_value(
    key: OffsetKey | GroupMetadataKey, data: bytes | None
) -> OffsetValue | GroupMetadataValue | None:
    """Decode ``data`` as the value type that belongs to ``key``; ``None`` is a tombstone."""
    if data is None:
        return None
    if isinstance(key, OffsetKey):
        return decode_offset_value(data)
    if isinstance(key, GroupMetadataKey):
        return decode_group_metadata_value(data)
    raise TypeError(f"not a __consumer_offsets key: {type(key).__name__}")


def decode_record(
    key_bytes: bytes, value_bytes: bytes | None
) -> tuple[OffsetKey | GroupMetadataKey, OffsetValue | GroupMetadataValue | None]:
    """Decode a ``__consumer_offsets`` record; the value is ``None`` for a tombstone."""
    if key_bytes is None:
        raise ValueError("__consumer_offsets record without a key")
    key = decode_key(key_bytes)
    return key, decode_value(key, value_bytes)
