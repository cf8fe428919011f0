"""The consumer protocol's embedded bytes, built field by field from Kafka 2.8's
ConsumerProtocolSubscription.json / ConsumerProtocolAssignment.json."""

from __future__ import annotations

import struct

import pytest

from mafka.group.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)


def i16(v: int) -> bytes:
    return struct.pack(">h", v)


def i32(v: int) -> bytes:
    return struct.pack(">i", v)


def string(s: str) -> bytes:
    raw = s.encode()
    return i16(len(raw)) + raw


def nbytes(b: bytes | None) -> bytes:
    return i32(-1) if b is None else i32(len(b)) + b


def topic_partitions(tps: list[tuple[str, list[int]]]) -> bytes:
    out = i32(len(tps))
    for topic, parts in tps:
        out += string(topic) + i32(len(parts)) + b"".join(i32(p) for p in parts)
    return out


# Subscription v1: version, Topics []string, UserData nullable bytes, OwnedPartitions []{Topic, Partitions []int32}
SUB_V1 = (
    i16(1)
    + i32(2) + string("orders") + string("päyments")
    + nbytes(b"\x00\x01ud")
    + topic_partitions([("orders", [0, 2]), ("päyments", [1])])
)
SUB_V0 = i16(0) + i32(1) + string("t") + nbytes(None)
# Assignment v0/v1: version, AssignedPartitions []{Topic, Partitions []int32}, UserData nullable bytes
ASSIGN_V1 = i16(1) + topic_partitions([("orders", [3, 1]), ("x", [])]) + nbytes(b"")
ASSIGN_V0 = i16(0) + topic_partitions([("t", [0])]) + nbytes(None)


def test_subscription_v1_byte_exact() -> None:
    sub = Subscription(topics=["orders", "päyments"], user_data=b"\x00\x01ud",
                       owned_partitions={"orders": [0, 2], "päyments": [1]})
    assert encode_subscription(sub) == SUB_V1
    assert decode_subscription(SUB_V1) == sub


def test_subscription_v0_has_no_owned_partitions() -> None:
    sub = Subscription(topics=["t"], user_data=None, owned_partitions={"ignored": [1]})
    assert encode_subscription(sub, version=0) == SUB_V0
    assert decode_subscription(SUB_V0) == Subscription(topics=["t"], user_data=None, version=0)


def test_assignment_byte_exact_both_versions() -> None:
    a = Assignment(assigned_partitions={"orders": [3, 1], "x": []}, user_data=b"")
    assert encode_assignment(a) == ASSIGN_V1
    assert decode_assignment(ASSIGN_V1) == a
    assert decode_assignment(ASSIGN_V1).user_data == b"", "empty user data is not null"
    a0 = Assignment(assigned_partitions={"t": [0]}, user_data=None, version=0)
    assert encode_assignment(a0, version=0) == ASSIGN_V0
    assert decode_assignment(ASSIGN_V0) == a0


def test_round_trip_empty() -> None:
    for version in (0, 1):
        assert decode_subscription(encode_subscription(Subscription(), version)) == Subscription(version=version)
        assert decode_assignment(encode_assignment(Assignment(), version)) == Assignment(version=version)
    assert encode_assignment(Assignment()) == i16(1) + i32(0) + i32(-1)


def test_higher_version_is_read_as_v1_and_trailing_bytes_ignored() -> None:
    # v3 subscription: ... OwnedPartitions, GenerationId int32, RackId nullable string
    v3 = i16(3) + SUB_V1[2:] + i32(7) + string("rack-a")
    sub = decode_subscription(v3)
    assert sub.version == 3
    assert sub.topics == ["orders", "päyments"]
    assert sub.owned_partitions == {"orders": [0, 2], "päyments": [1]}
    a = decode_assignment(i16(4) + ASSIGN_V1[2:] + b"future fields")
    assert a.assigned_partitions == {"orders": [3, 1], "x": []}


def test_encoding_above_the_highest_version_writes_v1() -> None:
    sub = Subscription(topics=["orders", "päyments"], user_data=b"\x00\x01ud",
                       owned_partitions={"orders": [0, 2], "päyments": [1]})
    assert encode_subscription(sub, version=5) == SUB_V1


@pytest.mark.parametrize("data", [SUB_V1, SUB_V0])
def test_truncated_subscription_raises(data: bytes) -> None:
    for cut in range(len(data)):
        with pytest.raises(ValueError, match="Buffer underflow"):
            decode_subscription(data[:cut])


@pytest.mark.parametrize("data", [ASSIGN_V1, ASSIGN_V0])
def test_truncated_assignment_raises(data: bytes) -> None:
    for cut in range(len(data)):
        with pytest.raises(ValueError, match="Buffer underflow"):
            decode_assignment(data[:cut])


def test_negative_version_and_nulls_are_errors() -> None:
    with pytest.raises(ValueError, match="Unsupported assignment version: -1"):
        decode_assignment(i16(-1) + ASSIGN_V0[2:])
    with pytest.raises(ValueError, match="Unsupported subscription version: -2"):
        encode_subscription(Subscription(), version=-2)
    with pytest.raises(ValueError, match="non-nullable field topics"):
        decode_subscription(i16(0) + i32(-1) + nbytes(None))
    with pytest.raises(ValueError, match="non-nullable field topic"):
        decode_assignment(i16(0) + i32(1) + i16(-1) + i32(0) + nbytes(None))


def test_huge_count_fails_fast() -> None:
    with pytest.raises(ValueError, match="claims 2147483647 entries"):
        decode_assignment(i16(1) + i32(0x7FFFFFFF) + b"\x00" * 8)
