"""The subscribed topics' metadata hash: Kafka's byte layout (hash4j streams) fed to XXH3-64."""

from __future__ import annotations

import xxhash

from mafka.group.consumer.member import TopicInfo
from mafka.group.share.metadata_hash import group_hash, metadata_hash, topic_hash

TID = bytes(range(1, 17))
FOO = TopicInfo(TID, "foo", 2)


def h(text: str) -> bytes:
    return bytes.fromhex(text.replace("|", " "))


def signed(value: int) -> int:
    return value - (1 << 64) if value >= 1 << 63 else value


def test_xxh3_is_the_seedless_reference_function() -> None:
    # XXH3_64bits("") from the xxHash reference test vectors
    assert xxhash.xxh3_64_intdigest(b"") == 0x2D06800538D394C2


def test_topic_hash_streams_kafkas_fields() -> None:
    expected = h(
        "00"  # magic byte
        "| 0807060504030201 | 100f0e0d0c0b0a09"  # most / least significant bits, little-endian
        "| 6600 6f00 6f00 | 03000000"  # putString("foo"): UTF-16LE, then its length
        "| 02000000"  # partition count
        "| 00000000 | 01000000"  # partition 0, partition 1 (no racks)
    )
    assert topic_hash(FOO) == signed(xxhash.xxh3_64_intdigest(expected))


def test_racks_are_hashed_sorted_with_their_lengths() -> None:
    expected = h(
        "00 | 0807060504030201 | 100f0e0d0c0b0a09 | 6600 6f00 6f00 | 03000000 | 02000000"
        "| 00000000 | 01000000 6100 01000000 | 01000000 6200 01000000"  # p0 racks a, b
        "| 01000000"  # p1: no racks
    )
    assert topic_hash(FOO, {0: ["b", "a"]}) == signed(xxhash.xxh3_64_intdigest(expected))
    assert topic_hash(FOO, {0: ["b", "a"]}) != topic_hash(FOO)


def test_group_hash_is_the_topic_hashes_in_name_order() -> None:
    bar = TopicInfo(bytes(range(0x11, 0x21)), "bar", 1)
    expected = topic_hash(bar).to_bytes(8, "little", signed=True) + topic_hash(FOO).to_bytes(8, "little", signed=True)
    assert group_hash({"foo": topic_hash(FOO), "bar": topic_hash(bar)}) == signed(xxhash.xxh3_64_intdigest(expected))
    assert group_hash({}) == 0


def test_metadata_hash_moves_with_what_kafka_hashes() -> None:
    topics = {"foo": FOO}
    base = metadata_hash({"foo"}, topics)
    assert base != 0
    assert metadata_hash({"foo", "missing"}, topics) == base  # a subscribed topic that does not exist
    assert metadata_hash(set(), topics) == 0
    assert metadata_hash({"foo"}, {"foo": TopicInfo(TID, "foo", 3)}) != base  # more partitions
    assert metadata_hash({"foo"}, {"foo": TopicInfo(bytes(16 * [9]), "foo", 2)}) != base  # re-created
    assert -(2**63) <= base < 2**63
