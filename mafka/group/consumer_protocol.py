"""The "consumer" protocol type's embedded bytes: subscriptions and assignments.

A group whose ``protocol_type`` is ``"consumer"`` carries two opaque byte
strings the broker never interprets: each member's JoinGroup
``protocol_metadata`` (a :class:`Subscription`) and each SyncGroup /
DescribeGroups ``member_assignment`` (an :class:`Assignment`).  Kafka 2.8
defines them in ``ConsumerProtocolSubscription.json`` and
``ConsumerProtocolAssignment.json`` (valid versions 0–1, never flexible) and
prefixes each with its int16 version (``MessageUtil.toVersionPrefixedByteBuffer``)::

    Subscription v0: version int16, topics [string], user_data nullable bytes
    Subscription v1: ... + owned_partitions [topic string, partitions [int32]]
    Assignment v0/v1: version int16, assigned_partitions [topic string, partitions [int32]],
                      user_data nullable bytes

Arrays are an int32 count, strings an int16 length plus UTF-8, bytes an int32
length (-1 = null).  As Kafka's ``ConsumerProtocol`` does, decoding reads a
higher version with the newest layout it knows and ignores what follows
(later versions only append fields); a negative version, a null where the
schema has none, or truncated input raises :class:`ValueError`.  Encoding a
version above 1 writes version 1, as Kafka's ``checkSubscriptionVersion``
clamps it.  Pure: no I/O.
"""

from __future__ import annotations

import struct
from dataclasses import dataclass, field

__all__ = [
    "PROTOCOL_TYPE",
    "HIGHEST_VERSION",
    "Subscription",
    "Assignment",
    "encode_subscription",
    "decode_subscription",
    "encode_assignment",
    "decode_assignment",
]

PROTOCOL_TYPE = "consumer"
#: The highest ConsumerProtocolSubscription / ConsumerProtocolAssignment version of Kafka 2.8.
HIGHEST_VERSION = 1

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


@dataclass
class Subscription:
    """A member's subscription (JoinGroup ``protocol_metadata``).

    Attributes:
        topics: the subscribed topics, in wire order.
        user_data: the assignor's opaque data, or None.
        owned_partitions: v1: topic -> partitions the member owned before this rebalance.
        version: the version read off the wire (as sent, even when above 1).
    """

    topics: list[str] = field(default_factory=list)
    user_data: bytes | None = None
    owned_partitions: dict[str, list[int]] = field(default_factory=dict)
    version: int = HIGHEST_VERSION


@dataclass
class Assignment:
    """A member's assignment (SyncGroup / DescribeGroups ``member_assignment``).

    Attributes:
        assigned_partitions: topic -> partitions, in wire order.
        user_data: the assignor's opaque data, or None.
        version: the version read off the wire (as sent, even when above 1).
    """

    assigned_partitions: dict[str, list[int]] = field(default_factory=dict)
    user_data: bytes | None = None
    version: int = HIGHEST_VERSION


# -- writing ---------------------------------------------------------------------------


def _check_version(version: int, what: str) -> int:
    if version < 0:
        raise ValueError(f"Unsupported {what} version: {version}")
    return min(version, HIGHEST_VERSION)


def _string(out: bytearray, value: str) -> None:
    raw = value.encode("utf-8")
    if len(raw) > 0x7FFF:
        raise ValueError(f"string of {len(raw)} bytes is longer than 32767")
    out += _I16.pack(len(raw))
    out += raw


def _nullable_bytes(out: bytearray, value: bytes | None) -> None:
    if value is None:
        out += _I32.pack(-1)
    else:
        out += _I32.pack(len(value))
        out += value


def _topic_partitions(out: bytearray, value: dict[str, list[int]]) -> None:
    out += _I32.pack(len(value))
    for topic, partitions in value.items():
        _string(out, topic)
        out += _I32.pack(len(partitions))
        for p in partitions:
            out += _I32.pack(p)


def encode_subscription(sub: Subscription, version: int = HIGHEST_VERSION) -> bytes:
    """The version-prefixed bytes of ``sub`` (``owned_partitions`` only from v1).

    Raises:
        ValueError: a negative version or a string longer than 32767 bytes.
    """
    version = _check_version(version, "subscription")
    out = bytearray(_I16.pack(version))
    out += _I32.pack(len(sub.topics))
    for topic in sub.topics:
        _string(out, topic)
    _nullable_bytes(out, sub.user_data)
    if version >= 1:
        _topic_partitions(out, sub.owned_partitions)
    return bytes(out)


def encode_assignment(assignment: Assignment, version: int = HIGHEST_VERSION) -> bytes:
    """The version-prefixed bytes of ``assignment`` (v0 and v1 share one layout).

    Raises:
        ValueError: a negative version or a string longer than 32767 bytes.
    """
    version = _check_version(version, "assignment")
    out = bytearray(_I16.pack(version))
    _topic_partitions(out, assignment.assigned_partitions)
    _nullable_bytes(out, assignment.user_data)
    return bytes(out)


# -- reading ---------------------------------------------------------------------------


class _Reader:
    """Reads big-endian fields off ``data``; ValueError on truncation."""

    def __init__(self, data: bytes | bytearray | memoryview, what: str) -> None:
        self.data = bytes(data)
        self.pos = 0
        self.what = what

    def _take(self, n: int) -> bytes:
        end = self.pos + n
        if end > len(self.data):
            raise ValueError(
                f"Buffer underflow while parsing consumer protocol's {self.what}: "
                f"needed {n} bytes at offset {self.pos}, {len(self.data) - self.pos} left"
            )
        chunk = self.data[self.pos:end]
        self.pos = end
        return chunk

    def int16(self) -> int:
        value: int = _I16.unpack(self._take(2))[0]
        return value

    def int32(self) -> int:
        value: int = _I32.unpack(self._take(4))[0]
        return value

    def count(self, name: str, min_item: int) -> int:
        n = self.int32()
        if n < 0:
            raise ValueError(f"non-nullable field {name} was serialized as null")
        if n * min_item > len(self.data) - self.pos:
            raise ValueError(
                f"Buffer underflow while parsing consumer protocol's {self.what}: "
                f"{name} claims {n} entries but only {len(self.data) - self.pos} bytes are left"
            )
        return n

    def string(self, name: str) -> str:
        n = self.int16()
        if n < 0:
            raise ValueError(f"non-nullable field {name} was serialized as null")
        raw = self._take(n)
        try:
            return raw.decode("utf-8")
        except UnicodeDecodeError as exc:
            raise ValueError(f"field {name} is not valid UTF-8: {exc}") from None

    def nullable_bytes(self) -> bytes | None:
        n = self.int32()
        if n < 0:
            return None
        return self._take(n)

    def topic_partitions(self, name: str) -> dict[str, list[int]]:
        out: dict[str, list[int]] = {}
        for _ in range(self.count(name, 6)):
            topic = self.string("topic")
            parts = [self.int32() for _ in range(self.count("partitions", 4))]
            # A topic repeated on the wire keeps all its partitions (Kafka flattens to a list).
            out.setdefault(topic, []).extend(parts)
        return out


def _version(reader: _Reader) -> int:
    if len(reader.data) < 2:
        raise ValueError("Buffer underflow while parsing consumer protocol's header")
    version = reader.int16()
    if version < 0:
        raise ValueError(f"Unsupported {reader.what} version: {version}")
    return version


def decode_subscription(data: bytes | bytearray | memoryview) -> Subscription:
    """Decodes version-prefixed subscription bytes; trailing bytes (newer versions) are ignored.

    Raises:
        ValueError: truncated input, a negative version, or a null non-nullable field.
    """
    reader = _Reader(data, "subscription")
    version = _version(reader)
    topics = [reader.string("topics") for _ in range(reader.count("topics", 2))]
    user_data = reader.nullable_bytes()
    owned = reader.topic_partitions("ownedPartitions") if version >= 1 else {}
    return Subscription(topics=topics, user_data=user_data, owned_partitions=owned, version=version)


def decode_assignment(data: bytes | bytearray | memoryview) -> Assignment:
    """Decodes version-prefixed assignment bytes; trailing bytes (newer versions) are ignored.

    Raises:
        ValueError: truncated input, a negative version, or a null non-nullable field.
    """
    reader = _Reader(data, "assignment")
    version = _version(reader)
    assigned = reader.topic_partitions("assignedPartitions")
    user_data = reader.nullable_bytes()
    return Assignment(assigned_partitions=assigned, user_data=user_data, version=version)
