"""The subscribed topics' metadata hash of a share group: Kafka 4's ``Utils.computeTopicHash`` /
``computeGroupHash`` / ``ModernGroup.computeMetadataHash``.

Kafka 4.1+ no longer writes the subscribed topics' metadata into a record of its own: the
group's metadata record (``ShareGroupMetadataValue.MetadataHash``) carries one 64-bit hash of
it, and the group epoch moves when the hash does (a subscribed topic created, deleted,
re-created under a new id, or given more partitions).

Contract (byte for byte Kafka's hash4j streams, so the value equals Kafka's for the same topics):

* A topic's hash is XXH3-64 (seed 0) of: the magic byte 0; the topic id's most and least
  significant 64 bits, each little-endian; the name as UTF-16LE code units followed by its
  length in code units (int32 LE) — hash4j's ``putString``; the partition count (int32 LE);
  then for each partition its index (int32 LE) and its replicas' racks, sorted, each as its
  length (int32 LE) then the rack as ``putString``.  Mafka passes no racks unless the caller
  has them (Kafka hashes the racks of every partition's replicas; a coordinator that never
  sees racks always hashes none, consistently).
* The group's hash is XXH3-64 of the topic hashes (int64 LE each) in topic name order (Java's
  ``String`` order: UTF-16 code units); 0 when no subscribed topic exists.
* Hashes are signed 64-bit values, as Java's ``long``.
"""

from __future__ import annotations

import functools
import struct
from collections.abc import Iterable, Mapping

import xxhash

from mafka.group.consumer.member import TopicInfo

__all__ = ["TOPIC_HASH_MAGIC_BYTE", "group_hash", "metadata_hash", "topic_hash"]

#: Kafka's ``TOPIC_HASH_MAGIC_BYTE``: the version of the topic hash layout
TOPIC_HASH_MAGIC_BYTE = 0

_I32 = struct.Struct("<i")
_I64 = struct.Struct("<q")


def _signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def _java_order(text: str) -> bytes:
    """A sort key giving Java's ``String.compareTo`` order (UTF-16 code units)."""
    return text.encode("utf-16-be", "surrogatepass")


def _put_string(out: bytearray, text: str) -> None:
    """hash4j's ``putString``: the UTF-16LE code units, then their count as an int32."""
    units = text.encode("utf-16-le", "surrogatepass")
    out += units
    out += _I32.pack(len(units) // 2)


def topic_hash(topic: TopicInfo, partition_racks: Mapping[int, Iterable[str]] | None = None) -> int:
    """Kafka's ``computeTopicHash`` of *topic* (racks per partition index, when known)."""
    if partition_racks:
        return _topic_hash(topic, tuple(tuple(sorted(partition_racks.get(p, ()), key=_java_order)) for p in range(topic.partitions)))
    return _topic_hash_no_racks(topic)


@functools.lru_cache(maxsize=1024)
def _topic_hash_no_racks(topic: TopicInfo) -> int:
    return _topic_hash(topic, ())


def _topic_hash(topic: TopicInfo, racks: tuple[tuple[str, ...], ...]) -> int:
    out = bytearray([TOPIC_HASH_MAGIC_BYTE])
    # Uuid.getMostSignificantBits / getLeastSignificantBits, each written little-endian
    out += topic.topic_id[7::-1]
    out += topic.topic_id[15:7:-1]
    _put_string(out, topic.name)
    out += _I32.pack(topic.partitions)
    for p in range(topic.partitions):
        out += _I32.pack(p)
        for rack in racks[p] if p < len(racks) else ():
            out += _I32.pack(len(rack.encode("utf-16-le", "surrogatepass")) // 2)
            _put_string(out, rack)
    return _signed(xxhash.xxh3_64_intdigest(bytes(out)))


def group_hash(topic_hashes: Mapping[str, int]) -> int:
    """Kafka's ``computeGroupHash``: the topic hashes in topic name order; 0 for none."""
    if not topic_hashes:
        return 0
    out = bytearray()
    for name in sorted(topic_hashes, key=_java_order):
        out += _I64.pack(topic_hashes[name])
    return _signed(xxhash.xxh3_64_intdigest(bytes(out)))


def metadata_hash(subscribed_topic_names: Iterable[str], topics: Mapping[str, TopicInfo]) -> int:
    """Kafka's ``computeMetadataHash``: the group hash of the subscribed topics that exist."""
    return group_hash({name: topic_hash(topics[name]) for name in set(subscribed_topic_names) if name in topics})
