"""The classic protocol's bytes as a ``consumer`` group reads and writes them for its classic members.

A member that joins a consumer group with JoinGroup (KIP-848's online migration) brings its
subscription inside its JoinGroup protocols (``ConsumerProtocolSubscription``), and expects its
assignment back in SyncGroup as a ``ConsumerProtocolAssignment``; the coordinator computes that
assignment itself (the member is never the leader).  This module translates between those bytes
and the group's model, as Kafka 4's ``GroupMetadataManager`` and ``ConsumerGroup`` do:

* :func:`classic_member_metadata` is the ``ClassicMemberMetadata`` a classic member's
  ``ConsumerGroupMemberMetadataValue`` carries (session timeout and JoinGroup protocols in the
  member's order), persisted so that a coordinator failover keeps the classic member.
* :func:`decode_classic_subscription` reads the subscription of the member's first protocol
  (every protocol carries the same subscription: Kafka reads "a random one"), versions 0-3:
  topics, owned partitions (v1) and rack id (v3).  Malformed bytes raise
  INCONSISTENT_GROUP_PROTOCOL, as Kafka does.
* :func:`encode_classic_assignment` writes partitions (topic ids, named through the topics
  the caller knows; an unknown id is left out, as Kafka's metadata image does) as a
  ``ConsumerProtocolAssignment`` of the version of the member's own subscription (0-3 share
  one layout), so an old client reads what it can.
* :func:`protocol_version` is Kafka's ``ConsumerProtocol.deserializeVersion``.

Pure: no I/O.
"""

from __future__ import annotations

import struct
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from mafka.errors import InconsistentGroupProtocolError
from mafka.group.consumer.member import TopicIdPartitions, TopicInfo
from mafka.group.consumer.records import ClassicMemberMetadata, ClassicProtocol
from mafka.group.consumer_protocol import (
    Assignment,
    Subscription,
    decode_subscription,
    encode_assignment,
)

__all__ = [
    "ASSIGNMENT_HIGHEST_VERSION",
    "ClassicSubscription",
    "classic_member_metadata",
    "decode_classic_subscription",
    "encode_classic_assignment",
    "owned_partitions",
    "protocol_version",
]

#: ``ConsumerProtocolAssignment``'s highest version in Kafka 4 (versions 0-3 share one layout).
ASSIGNMENT_HIGHEST_VERSION = 3

_I16 = struct.Struct(">h")
_I32 = struct.Struct(">i")


@dataclass(frozen=True)
class ClassicSubscription:
    """What a classic member's JoinGroup metadata says: its topics, what it owns, its rack."""

    topics: tuple[str, ...]
    #: topic name → partitions the member still owns (v1+; empty for an eager member)
    owned_partitions: Mapping[str, Sequence[int]]
    rack_id: str | None
    version: int


def classic_member_metadata(session_timeout_ms: int, protocols: Iterable[tuple[str, bytes]]) -> ClassicMemberMetadata:
    """Kafka's ``ClassicMemberMetadata`` of a JoinGroup (``classicProtocolListFromJoinRequestProtocolCollection``)."""
    return ClassicMemberMetadata(
        session_timeout_ms, tuple(ClassicProtocol(name, bytes(metadata)) for name, metadata in protocols)
    )


def protocol_version(metadata: bytes) -> int:
    """The version a subscription's bytes start with (Kafka's ``deserializeVersion``).

    Raises:
        ValueError: fewer than two bytes, or a negative version.
    """
    if len(metadata) < 2:
        raise ValueError("Buffer underflow while reading the consumer protocol's version")
    version: int = _I16.unpack_from(metadata)[0]
    if version < 0:
        raise ValueError(f"Unsupported consumer protocol version: {version}")
    return version


def decode_classic_subscription(protocols: Sequence[tuple[str, bytes]]) -> ClassicSubscription:
    """The subscription in the first of a member's JoinGroup protocols.

    Raises:
        InconsistentGroupProtocolError: no protocol, or bytes that are not a subscription.
    """
    if not protocols:
        raise InconsistentGroupProtocolError("Malformed embedded consumer protocol in subscription deserialization.")
    data = bytes(protocols[0][1])
    try:
        subscription = decode_subscription(data)
        rack_id = _rack_id(data, subscription)
    except (ValueError, struct.error):
        raise InconsistentGroupProtocolError(
            "Malformed embedded consumer protocol in subscription deserialization."
        ) from None
    return ClassicSubscription(tuple(subscription.topics), subscription.owned_partitions, rack_id, subscription.version)


def _rack_id(data: bytes, subscription: Subscription) -> str | None:
    """Version 3's ``RackId``, after version 2's ``GenerationId`` (both past what
    :func:`~mafka.group.consumer_protocol.decode_subscription` reads)."""
    if subscription.version < 3:
        return None
    # The v1 fields' length: version, topics, user data, owned partitions.
    pos = 2 + 4 + sum(2 + len(t.encode("utf-8")) for t in subscription.topics)
    pos += 4 + (len(subscription.user_data) if subscription.user_data is not None else 0)
    pos = _skip_owned(data, pos)
    pos += 4  # GenerationId (v2)
    if pos + 2 > len(data):
        raise ValueError("Buffer underflow while parsing the consumer protocol's rack id")
    n: int = _I16.unpack_from(data, pos)[0]
    if n < 0:
        return None
    raw = data[pos + 2 : pos + 2 + n]
    if len(raw) != n:
        raise ValueError("Buffer underflow while parsing the consumer protocol's rack id")
    return raw.decode("utf-8")


def _skip_owned(data: bytes, pos: int) -> int:
    """Past v1's ``OwnedPartitions`` at *pos* (read again: a topic listed twice was merged)."""
    (count,) = _I32.unpack_from(data, pos)
    pos += 4
    for _ in range(count):
        (name_len,) = _I16.unpack_from(data, pos)
        pos += 2 + name_len
        (parts,) = _I32.unpack_from(data, pos)
        pos += 4 + 4 * parts
    return pos


def owned_partitions(subscription: ClassicSubscription, topics: Mapping[str, TopicInfo]) -> dict[bytes, frozenset[int]]:
    """The subscription's owned partitions by topic id (Kafka's ``toTopicPartitions``: topics the
    cluster does not know are left out)."""
    out: dict[bytes, frozenset[int]] = {}
    for name, parts in subscription.owned_partitions.items():
        info = topics.get(name)
        if info is not None and parts:
            out[info.topic_id] = out.get(info.topic_id, frozenset()) | frozenset(parts)
    return out


def encode_classic_assignment(partitions: TopicIdPartitions, names: Mapping[bytes, str], version: int) -> bytes:
    """A ``ConsumerProtocolAssignment`` of *partitions* (topics by name, partitions ascending; no
    user data) at *version* (clamped to 0..3)."""
    by_name = {names[t]: sorted(parts) for t, parts in partitions.items() if t in names}
    body = encode_assignment(Assignment({name: by_name[name] for name in sorted(by_name)}, None), 1)
    # Versions 0-3 of ConsumerProtocolAssignment have one layout: only the prefix differs.
    return _I16.pack(max(0, min(version, ASSIGNMENT_HIGHEST_VERSION))) + body[2:]
