"""__consumer_offsets record formats (Kafka 2.8 GroupMetadataManager layouts)."""

import struct

import pytest

from mafka.group.offsets_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetKey,
    OffsetValue,
    decode_group_metadata_value,
    decode_key,
    decode_offset_value,
    decode_record,
    decode_value,
    encode_group_metadata_value,
    encode_key,
    encode_offset_value,
    encode_value,
    java_string_hash,
    offsets_partition_for,
)

# ------------------------------------------------------------------ independent helpers


def s(v):
    """STRING / NULLABLE_STRING, written independently of the implementation."""
    if v is None:
        return struct.pack(">h", -1)
    b = v.encode("utf-8")
    return struct.pack(">h", len(b)) + b


def by(v):
    return struct.pack(">i", len(v)) + v


def ref_hash(text):
    """Java String.hashCode via code points split into UTF-16 code units by hand."""
    units = []
    for ch in text:
        cp = ord(ch)
        if cp >= 0x10000:
            cp -= 0x10000
            units += [0xD800 + (cp >> 10), 0xDC00 + (cp & 0x3FF)]
        else:
            units.append(cp)
    h = 0
    for u in units:
        h = (h * 31 + u) % 2**32
    return h - 2**32 if h >= 2**31 else h


def ref_partition(group, n=50):
    h = ref_hash(group)
    return (0 if h == -(2**31) else abs(h)) % n


MEMBER_A = MemberMetadata(
    member_id="c1-0b3e",
    group_instance_id="inst-1",
    client_id="c1",
    client_host="/10.0.0.1",
    rebalance_timeout=300000,
    session_timeout=10000,
    subscription=b"\x00\x01sub",
    assignment=b"\x00\x01\x02assign",
)
MEMBER_B = MemberMetadata(
    member_id="c2-77",
    group_instance_id=None,
    client_id="c2",
    client_host="/10.0.0.2",
    rebalance_timeout=60000,
    session_timeout=45000,
    subscription=b"",
    assignment=b"",
)


# ------------------------------------------------------------------ partitionFor


@pytest.mark.parametrize(
    "group, expected_hash",
    [("", 0), ("a", 97), ("hello", 99162322), ("polygenelubricants", -(2**31))],
)
def test_java_hash_known_values(group, expected_hash):
    assert java_string_hash(group) == expected_hash == ref_hash(group)


@pytest.mark.parametrize(
    "group",
    [
        "",
        "my-group",
        "console-consumer-12345",
        "test-group-\u00e9\u00e8",
        "gruppe-\u00fc\u00f6\u00e4-\u6d88\u8d39\u8005",
        "emoji-\U0001f600-group",
        "polygenelubricants",
        "GydZG_",
    ],
)
@pytest.mark.parametrize("n", [50, 1, 7, 3])
def test_partition_for_matches_reference(group, n):
    assert offsets_partition_for(group, n) == ref_partition(group, n)


def test_partition_for_min_value_hash_is_zero():
    assert ref_hash("polygenelubricants") == -(2**31)
    assert offsets_partition_for("polygenelubricants") == 0
    assert offsets_partition_for("polygenelubricants", 7) == 0


def test_partition_for_known_groups():
    # hand-checked: "hello".hashCode() = 99162322 -> 99162322 % 50 = 22
    assert offsets_partition_for("hello") == 22
    # non-BMP: emoji is a surrogate pair, two code units
    assert java_string_hash("\U0001f600") == 0xD83D * 31 + 0xDE00
    assert offsets_partition_for("") == 0


def test_partition_for_rejects_nonpositive():
    with pytest.raises(ValueError):
        offsets_partition_for("g", 0)


# ------------------------------------------------------------------ byte-exact encodings


def test_offset_key_bytes():
    expected = struct.pack(">h", 1) + s("my-group") + s("orders") + struct.pack(">i", 7)
    key = OffsetKey("my-group", "orders", 7)
    assert encode_key(key) == expected
    assert decode_key(expected) == key


def test_offset_value_v3_bytes():
    expected = (
        struct.pack(">h", 3)
        + struct.pack(">q", 12345)
        + struct.pack(">i", 4)
        + s("meta")
        + struct.pack(">q", 1_700_000_000_000)
    )
    value = OffsetValue(12345, 4, "meta", 1_700_000_000_000)
    assert encode_offset_value(value) == expected
    assert encode_value(value) == expected
    assert decode_offset_value(expected) == value


def test_offset_value_with_expire_is_written_at_v1():
    expected = (
        struct.pack(">h", 1)
        + struct.pack(">q", 9)
        + s("")
        + struct.pack(">q", 1000)
        + struct.pack(">q", 2000)
    )
    value = OffsetValue(9, -1, "", 1000, 2000)
    assert encode_offset_value(value) == expected
    assert decode_offset_value(expected) == value


def test_group_metadata_key_bytes():
    expected = struct.pack(">h", 2) + s("my-group")
    assert encode_key(GroupMetadataKey("my-group")) == expected
    assert decode_key(expected) == GroupMetadataKey("my-group")


def test_group_metadata_value_v3_bytes():
    value = GroupMetadataValue(
        protocol_type="consumer",
        generation=5,
        protocol="range",
        leader="c1-0b3e",
        current_state_timestamp=1_700_000_000_123,
        members=[MEMBER_A, MEMBER_B],
    )
    expected = (
        struct.pack(">h", 3)
        + s("consumer")
        + struct.pack(">i", 5)
        + s("range")
        + s("c1-0b3e")
        + struct.pack(">q", 1_700_000_000_123)
        + struct.pack(">i", 2)
        # member A
        + s("c1-0b3e")
        + s("inst-1")
        + s("c1")
        + s("/10.0.0.1")
        + struct.pack(">i", 300000)
        + struct.pack(">i", 10000)
        + by(b"\x00\x01sub")
        + by(b"\x00\x01\x02assign")
        # member B (null group instance id)
        + s("c2-77")
        + struct.pack(">h", -1)
        + s("c2")
        + s("/10.0.0.2")
        + struct.pack(">i", 60000)
        + struct.pack(">i", 45000)
        + struct.pack(">i", 0)
        + struct.pack(">i", 0)
    )
    assert encode_group_metadata_value(value) == expected
    assert encode_value(value) == expected
    assert decode_group_metadata_value(expected) == value


def test_empty_group_value_v3_bytes():
    # an Empty group as Kafka persists it: protocol and leader null, no members
    value = GroupMetadataValue("consumer", 3, None, None, 42, [])
    expected = (
        struct.pack(">h", 3)
        + s("consumer")
        + struct.pack(">i", 3)
        + struct.pack(">h", -1)
        + struct.pack(">h", -1)
        + struct.pack(">q", 42)
        + struct.pack(">i", 0)
    )
    assert encode_group_metadata_value(value) == expected
    assert decode_group_metadata_value(expected) == value


# ------------------------------------------------------------------ older versions


def test_offset_key_v0_decodes():
    data = struct.pack(">h", 0) + s("g") + s("t") + struct.pack(">i", 0)
    assert decode_key(data) == OffsetKey("g", "t", 0)


@pytest.mark.parametrize("version", [0, 2])
def test_offset_value_v0_v2_bytes(version):
    expected = struct.pack(">h", version) + struct.pack(">q", 77) + s("m") + struct.pack(">q", 5)
    assert encode_offset_value(OffsetValue(77, -1, "m", 5), version=version) == expected
    assert decode_offset_value(expected) == OffsetValue(77, -1, "m", 5, None)


def test_offset_value_v1_minus_one_expire_is_none():
    data = struct.pack(">hq", 1, 3) + s("") + struct.pack(">qq", 10, -1)
    assert decode_offset_value(data) == OffsetValue(3, -1, "", 10, None)


@pytest.mark.parametrize(
    "value",
    [
        OffsetValue(0, -1, "", 0),
        OffsetValue(2**63 - 1, 2**31 - 1, "x" * 1000, -(2**63)),
        OffsetValue(5, 0, "\u00e9t\u00e9 \u6d88\u8d39", 123),
    ],
)
@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_offset_value_roundtrip_all_versions(value, version):
    decoded = decode_offset_value(encode_offset_value(value, version=version))
    expected_epoch = value.leader_epoch if version == 3 else -1
    assert decoded == OffsetValue(
        value.offset, expected_epoch, value.metadata, value.commit_timestamp
    )


def test_offset_value_roundtrip_v1_expire():
    v = OffsetValue(1, -1, "m", 2, 3)
    assert decode_offset_value(encode_offset_value(v)) == v


def test_group_value_v0_bytes_and_defaults():
    data = (
        struct.pack(">h", 0)
        + s("consumer")
        + struct.pack(">i", 1)
        + s("range")
        + s("m1")
        + struct.pack(">i", 1)
        + s("m1")
        + s("cid")
        + s("/h")
        + struct.pack(">i", 30000)  # session timeout only at v0
        + by(b"S")
        + by(b"A")
    )
    v = decode_group_metadata_value(data)
    assert v == GroupMetadataValue(
        "consumer",
        1,
        "range",
        "m1",
        -1,
        [MemberMetadata("m1", None, "cid", "/h", 30000, 30000, b"S", b"A")],
    )
    assert encode_group_metadata_value(v, version=0) == data


@pytest.mark.parametrize("version", [0, 1, 2, 3])
def test_group_value_roundtrip_all_versions(version):
    value = GroupMetadataValue("consumer", 9, "roundrobin", "c1-0b3e", 777, [MEMBER_A, MEMBER_B])
    decoded = decode_group_metadata_value(encode_group_metadata_value(value, version=version))
    members = []
    for m in value.members:
        members.append(
            MemberMetadata(
                m.member_id,
                m.group_instance_id if version >= 3 else None,
                m.client_id,
                m.client_host,
                m.rebalance_timeout if version >= 1 else m.session_timeout,
                m.session_timeout,
                m.subscription,
                m.assignment,
            )
        )
    assert decoded == GroupMetadataValue(
        "consumer", 9, "roundrobin", "c1-0b3e", 777 if version >= 2 else -1, members
    )


def test_group_value_v1_v2_layout():
    base = s("") + struct.pack(">i", 0) + s(None) + s(None)
    assert encode_group_metadata_value(GroupMetadataValue("", 0, None, None, 5), 1) == (
        struct.pack(">h", 1) + base + struct.pack(">i", 0)
    )
    assert encode_group_metadata_value(GroupMetadataValue("", 0, None, None, 5), 2) == (
        struct.pack(">h", 2) + base + struct.pack(">q", 5) + struct.pack(">i", 0)
    )


# ------------------------------------------------------------------ dispatch and tombstones


def test_decode_record_dispatch():
    ok = OffsetKey("g", "t", 3)
    ov = OffsetValue(10, 2, "", 99)
    assert decode_record(encode_key(ok), encode_value(ov)) == (ok, ov)
    gk = GroupMetadataKey("g")
    gv = GroupMetadataValue("consumer", 1, "range", "m", 1, [MEMBER_A])
    assert decode_record(encode_key(gk), encode_value(gv)) == (gk, gv)


def test_tombstones():
    assert decode_value(OffsetKey("g", "t", 0), None) is None
    assert decode_value(GroupMetadataKey("g"), None) is None
    assert decode_offset_value(None) is None
    assert decode_group_metadata_value(None) is None
    assert encode_value(None) is None
    assert decode_record(encode_key(GroupMetadataKey("g")), None) == (GroupMetadataKey("g"), None)
    assert decode_record(encode_key(OffsetKey("g", "t", 1)), None) == (OffsetKey("g", "t", 1), None)


def test_non_ascii_roundtrip_key():
    k = OffsetKey("gr\u00fcppe-\u6d88\u8d39", "t\u00f6pic", 2**31 - 1)
    assert decode_key(encode_key(k)) == k


# ------------------------------------------------------------------ garbage


def _all_truncations(data):
    return [data[:i] for i in range(len(data))]


def test_truncated_inputs_raise_value_error():
    samples = [
        (decode_key, encode_key(OffsetKey("grp", "topic", 1))),
        (decode_key, encode_key(GroupMetadataKey("grp"))),
        (decode_offset_value, encode_offset_value(OffsetValue(1, 2, "meta", 3))),
        (decode_offset_value, encode_offset_value(OffsetValue(1, -1, "meta", 3, 4))),
        (
            decode_group_metadata_value,
            encode_group_metadata_value(
                GroupMetadataValue("consumer", 1, "range", "m", 1, [MEMBER_A, MEMBER_B])
            ),
        ),
    ]
    for decoder, data in samples:
        for t in _all_truncations(data):
            with pytest.raises(ValueError):
                decoder(t)
        with pytest.raises(ValueError):
            decoder(data + b"\x00")  # trailing garbage


@pytest.mark.parametrize(
    "data",
    [
        struct.pack(">h", 3),  # unknown key version
        struct.pack(">h", -1) + s("g"),
        struct.pack(">h", 1) + struct.pack(">h", -2) + b"g",  # negative length
        struct.pack(">h", 1) + struct.pack(">h", -1) + s("t") + struct.pack(">i", 0),  # null group
        struct.pack(">h", 2) + struct.pack(">h", 2) + b"\xff\xfe",  # bad UTF-8
        struct.pack(">h", 2) + struct.pack(">h", 100) + b"abc",  # length past the end
        b"",
        b"\x00",
    ],
)
def test_garbage_keys_raise_value_error(data):
    with pytest.raises(ValueError):
        decode_key(data)
    with pytest.raises(ValueError):
        decode_record(data, b"\x00\x03")


@pytest.mark.parametrize(
    "data",
    [
        struct.pack(">h", 4) + struct.pack(">q", 0),  # unknown (flexible) version
        struct.pack(">h", -1),
        struct.pack(">hqi", 3, 0, 0)
        + struct.pack(">h", -1)
        + struct.pack(">q", 0),  # null metadata
    ],
)
def test_garbage_offset_values_raise_value_error(data):
    with pytest.raises(ValueError):
        decode_offset_value(data)


@pytest.mark.parametrize(
    "tail",
    [
        struct.pack(">i", -1),  # negative member count
        struct.pack(">i", 2**31 - 1),  # absurd member count
        struct.pack(">i", 1)
        + s("m")
        + s(None)
        + s("c")
        + s("h")
        + struct.pack(">ii", 1, 1)
        + struct.pack(">i", -5),
        struct.pack(">i", 1)
        + s("m")
        + s(None)
        + s("c")
        + s("h")
        + struct.pack(">ii", 1, 1)
        + struct.pack(">i", 2**30),
    ],
)
def test_garbage_group_values_raise_value_error(tail):
    head = (
        struct.pack(">h", 3)
        + s("consumer")
        + struct.pack(">i", 1)
        + s(None)
        + s(None)
        + struct.pack(">q", 0)
    )
    with pytest.raises(ValueError):
        decode_group_metadata_value(head + tail)


def test_random_garbage_only_raises_value_error():
    import random

    rng = random.Random(1234)
    for _ in range(3000):
        data = bytes(rng.randrange(256) for _ in range(rng.randrange(0, 40)))
        for decoder in (decode_key, decode_offset_value, decode_group_metadata_value):
            try:
                decoder(data)
            except ValueError:
                pass


def test_encode_rejects_out_of_range():
    with pytest.raises(ValueError):
        encode_key(OffsetKey("g", "t", 2**31))
    with pytest.raises(ValueError):
        encode_offset_value(OffsetValue(0), version=4)
    with pytest.raises(ValueError):
        encode_group_metadata_value(GroupMetadataValue("c", 0, None, None), version=5)
