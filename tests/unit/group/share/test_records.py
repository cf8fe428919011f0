"""The share group records of ``__consumer_offsets``: golden bytes, round trips, bad input.

The golden bytes below were written by hand from Kafka 4.4's JSON schemas (``kafka_schemas/``):
keys are the record type (the schema's ``apiKey``) as an int16, then the version-0 key, not
flexible (int16-length strings); values are flexible version 0 (compact strings/arrays:
unsigned varint length + 1, 16-byte UUIDs, a tagged-field section closing every struct).
kafka-python's generic schema codec, fed Kafka's own schema files, is an independent second
encoder to compare against.
"""

from __future__ import annotations

import struct
import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.protocol.api_data import ApiData  # type: ignore[import-untyped]

from mafka.group.consumer import records as consumer_records
from mafka.group.offsets_records import GroupMetadataKey, OffsetKey, encode_key
from mafka.group.share import records as r
from tests.unit.group.share import kafka_schemas

TID = bytes(range(1, 17))  # topic id 0102…10
TID2 = bytes(range(0x11, 0x21))
TID3 = bytes(range(0x21, 0x31))


def h(text: str) -> bytes:
    """Hex with spaces and ``|`` separators allowed, for readable golden bytes."""
    return bytes.fromhex(text.replace("|", " "))


# (record, key bytes, value bytes) — one of each type, plus the 4.3+ tagged timestamp.
GOLDEN = [
    (
        r.CoordinatorRecord(
            r.ShareGroupMemberMetadataKey("grp", "m1"),
            r.ShareGroupMemberMetadataValue(None, "c", "/h", ("bar", "foo")),
        ),
        h("000a | 0003 677270 | 0002 6d31"),
        h("0000 | 00 | 02 63 | 03 2f68 | 03 | 04 626172 | 04 666f6f | 00"),  # rack null, c, /h, [bar, foo]
    ),
    (
        r.CoordinatorRecord(r.ShareGroupMemberMetadataKey("grp", "m2"), r.ShareGroupMemberMetadataValue("r", "", "", ())),
        h("000a | 0003 677270 | 0002 6d32"),
        h("0000 | 02 72 | 01 | 01 | 01 | 00"),
    ),
    (
        r.CoordinatorRecord(r.ShareGroupMetadataKey("grp"), r.ShareGroupMetadataValue(42, -2)),
        h("000b | 0003 677270"),
        h("0000 | 0000002a | fffffffffffffffe | 00"),
    ),
    (
        r.CoordinatorRecord(r.ShareGroupTargetAssignmentMetadataKey("grp"), r.ShareGroupTargetAssignmentMetadataValue(7)),
        h("000c | 0003 677270"),
        h("0000 | 00000007 | 00"),
    ),
    (
        r.CoordinatorRecord(
            r.ShareGroupTargetAssignmentMetadataKey("grp"), r.ShareGroupTargetAssignmentMetadataValue(7, 1000)
        ),
        h("000c | 0003 677270"),
        h("0000 | 00000007 | 01 | 00 | 08 | 00000000000003e8"),  # tagged field 0: 8 bytes
    ),
    (
        r.CoordinatorRecord(
            r.ShareGroupTargetAssignmentMemberKey("grp", "m1"),
            r.ShareGroupTargetAssignmentMemberValue((r.TopicPartitions(TID, (0, 2)),)),
        ),
        h("000d | 0003 677270 | 0002 6d31"),
        h(f"0000 | 02 | {TID.hex()} | 03 00000000 00000002 | 00 | 00"),
    ),
    (
        r.CoordinatorRecord(
            r.ShareGroupCurrentMemberAssignmentKey("grp", "m1"),
            r.ShareGroupCurrentMemberAssignmentValue(5, 4, 0, (r.TopicPartitions(TID, (1,)),)),
        ),
        h("000e | 0003 677270 | 0002 6d31"),
        h(f"0000 | 00000005 | 00000004 | 00 | 02 | {TID.hex()} | 02 00000001 | 00 | 00"),
    ),
    (
        r.CoordinatorRecord(
            r.ShareGroupStatePartitionMetadataKey("grp"),
            r.ShareGroupStatePartitionMetadataValue(
                (r.TopicPartitionsInfo(TID, "foo", (0, 1)),),
                (r.TopicPartitionsInfo(TID2, "ba", (2,)),),
                (r.TopicInfo(TID3, "x"),),
            ),
        ),
        h("000f | 0003 677270"),
        h(
            f"0000 | 02 | {TID.hex()} | 04 666f6f | 03 00000000 00000001 | 00"  # initializing foo-0, foo-1
            f"| 02 | {TID2.hex()} | 03 6261 | 02 00000002 | 00"  # initialized ba-2
            f"| 02 | {TID3.hex()} | 02 78 | 00"  # deleting x
            "| 00"
        ),
    ),
]


@pytest.mark.parametrize("record, key_bytes, value_bytes", GOLDEN, ids=lambda x: type(x).__name__)
def test_golden_bytes_round_trip(record: r.CoordinatorRecord, key_bytes: bytes, value_bytes: bytes) -> None:
    assert r.encode_record(record) == (key_bytes, value_bytes)
    assert r.decode_record(key_bytes, value_bytes) == record
    assert r.encode_record(r.decode_record(key_bytes, value_bytes)) == (key_bytes, value_bytes)


@pytest.mark.parametrize("record, key_bytes, value_bytes", GOLDEN, ids=lambda x: type(x).__name__)
def test_tombstones_have_no_value(record: r.CoordinatorRecord, key_bytes: bytes, value_bytes: bytes) -> None:
    tombstone = r.CoordinatorRecord(record.key, None)
    assert r.encode_record(tombstone) == (key_bytes, None)
    assert r.decode_record(key_bytes, None) == tombstone


def test_record_types_are_kafkas_coordinator_record_types() -> None:
    # CoordinatorRecordType is generated from each schema's apiKey.
    assert (
        r.MEMBER_METADATA_KEY_TYPE,
        r.METADATA_KEY_TYPE,
        r.TARGET_ASSIGNMENT_METADATA_KEY_TYPE,
        r.TARGET_ASSIGNMENT_MEMBER_KEY_TYPE,
        r.CURRENT_MEMBER_ASSIGNMENT_KEY_TYPE,
        r.STATE_PARTITION_METADATA_KEY_TYPE,
    ) == (10, 11, 12, 13, 14, 15)
    for name, api_key in API_KEYS.items():
        assert KAFKA[f"{name}Key"].json["apiKey"] == KAFKA[f"{name}Value"].json["apiKey"] == api_key


# --------------------------------------------------------------------------- kafka-python cross-check


def _as_data(cls: type, json: dict[str, object]) -> dict[str, object]:
    """kafka-python's codec only loads ``"type": "data"`` schemas; Kafka 4.4 types record
    schemas ``coordinator-key`` / ``coordinator-value`` (the layout is the same)."""
    return {**json, "type": "data"}


def _kafka_class(name: str) -> type[ApiData]:
    return type(name, (ApiData,), {"json_patch": classmethod(_as_data)}, load_json=kafka_schemas)


API_KEYS = {
    "ShareGroupMemberMetadata": 10,
    "ShareGroupMetadata": 11,
    "ShareGroupTargetAssignmentMetadata": 12,
    "ShareGroupTargetAssignmentMember": 13,
    "ShareGroupCurrentMemberAssignment": 14,
    "ShareGroupStatePartitionMetadata": 15,
}
KAFKA = {f"{kind}{part}": _kafka_class(f"{kind}{part}") for kind in API_KEYS for part in ("Key", "Value")}


def _kafka_python_bytes(record: r.CoordinatorRecord) -> tuple[bytes, bytes | None]:
    """The record encoded by kafka-python from Kafka's schema files.  kafka-python writes the
    version as an int16 before the fields; Kafka's ``CoordinatorRecordSerde`` writes the record
    type there for a key (its fields at version 0), the version for a value."""
    key_name = type(record.key).__name__
    key = KAFKA[key_name](version=0, **vars(record.key))
    key_bytes = struct.pack(">h", API_KEYS[key_name.removesuffix("Key")]) + key.encode(version=0)[2:]
    if record.value is None:
        return key_bytes, None
    value_cls = KAFKA[type(record.value).__name__]
    value = value_cls(version=0, **_kafka_fields(value_cls, record.value))
    return key_bytes, value.encode(version=0)


def _kafka_fields(cls: type, value: object) -> dict[str, object]:
    out: dict[str, object] = {}
    for name, v in vars(value).items():
        if isinstance(v, tuple):
            v = [_kafka_item(cls, name, x) for x in v]
        elif name == "topic_id":
            v = uuid.UUID(bytes=v)
        out[name] = v
    return out


def _kafka_item(cls: type, field_name: str, item: object) -> object:
    if isinstance(item, str | int):
        return item
    sub = getattr(cls, cls.fields[field_name].type_str)  # type: ignore[attr-defined]
    return sub(**_kafka_fields(sub, item))


@pytest.mark.parametrize("record, key_bytes, value_bytes", GOLDEN, ids=lambda x: type(x).__name__)
def test_golden_bytes_match_kafka_python_encoder(
    record: r.CoordinatorRecord, key_bytes: bytes, value_bytes: bytes
) -> None:
    assert _kafka_python_bytes(record) == (key_bytes, value_bytes)


# --------------------------------------------------------------------------- property round trips

ids = st.binary(min_size=16, max_size=16)
text = st.text(max_size=12)
i32 = st.integers(-(2**31), 2**31 - 1)
i64 = st.integers(-(2**63), 2**63 - 1)
partitions = st.lists(i32, max_size=4).map(tuple)
topic_partitions = st.lists(st.builds(r.TopicPartitions, ids, partitions), max_size=3).map(tuple)
infos = st.lists(st.builds(r.TopicPartitionsInfo, ids, text, partitions), max_size=3).map(tuple)
keys = st.one_of(
    st.builds(r.ShareGroupMemberMetadataKey, text, text),
    st.builds(r.ShareGroupMetadataKey, text),
    st.builds(r.ShareGroupTargetAssignmentMetadataKey, text),
    st.builds(r.ShareGroupTargetAssignmentMemberKey, text, text),
    st.builds(r.ShareGroupCurrentMemberAssignmentKey, text, text),
    st.builds(r.ShareGroupStatePartitionMetadataKey, text),
)


def _value_for(key: r.RecordKey) -> st.SearchStrategy[r.RecordValue]:
    if isinstance(key, r.ShareGroupMemberMetadataKey):
        return st.builds(
            r.ShareGroupMemberMetadataValue, st.none() | text, text, text, st.lists(text, max_size=3).map(tuple)
        )
    if isinstance(key, r.ShareGroupMetadataKey):
        return st.builds(r.ShareGroupMetadataValue, i32, i64)
    if isinstance(key, r.ShareGroupTargetAssignmentMetadataKey):
        return st.builds(r.ShareGroupTargetAssignmentMetadataValue, i32, i64)
    if isinstance(key, r.ShareGroupTargetAssignmentMemberKey):
        return st.builds(r.ShareGroupTargetAssignmentMemberValue, topic_partitions)
    if isinstance(key, r.ShareGroupCurrentMemberAssignmentKey):
        return st.builds(r.ShareGroupCurrentMemberAssignmentValue, i32, i32, st.integers(-128, 127), topic_partitions)
    return st.builds(
        r.ShareGroupStatePartitionMetadataValue,
        infos,
        infos,
        st.lists(st.builds(r.TopicInfo, ids, text), max_size=3).map(tuple),
    )


records = keys.flatmap(lambda k: st.builds(r.CoordinatorRecord, st.just(k), st.none() | _value_for(k)))


@given(records)
def test_any_record_round_trips_and_matches_kafka_python(record: r.CoordinatorRecord) -> None:
    key_bytes, value_bytes = r.encode_record(record)
    assert r.decode_record(key_bytes, value_bytes) == record
    assert (key_bytes, value_bytes) == _kafka_python_bytes(record)


# --------------------------------------------------------------------------- bad input


@given(records, st.data())
def test_truncated_or_padded_input_raises_value_error_only(record: r.CoordinatorRecord, data: st.DataObject) -> None:
    key_bytes, value_bytes = r.encode_record(record)
    cut = data.draw(st.integers(0, len(key_bytes) - 1))
    with pytest.raises(ValueError):
        r.decode_key(key_bytes[:cut])
    with pytest.raises(ValueError):
        r.decode_key(key_bytes + b"\x00")
    if value_bytes is not None:
        cut = data.draw(st.integers(0, len(value_bytes) - 1))
        with pytest.raises(ValueError):
            r.decode_value(record.key, value_bytes[:cut])
        with pytest.raises(ValueError):
            r.decode_value(record.key, value_bytes + b"\x00")


@given(keys, st.binary(max_size=64))
def test_garbage_values_raise_value_error_only(key: r.RecordKey, garbage: bytes) -> None:
    try:
        r.decode_value(key, garbage)
    except ValueError:
        pass


@pytest.mark.parametrize(
    "key_bytes, message",
    [
        (encode_key(OffsetKey("g", "t", 0)), "not a share group record key type: 1"),
        (consumer_records.encode_key(consumer_records.ConsumerGroupMetadataKey("g")), "key type: 3"),
        (h("0010 0001 67"), "not a share group record key type: 16"),
        (h("000b 0001"), "truncated group id"),
        (h("000b 0001 ff"), "group id is not valid UTF-8"),
        (h("000a 0001 67"), "truncated member id"),
    ],
)
def test_bad_keys(key_bytes: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        r.decode_key(key_bytes)


def test_bad_values() -> None:
    with pytest.raises(ValueError, match="unknown value version 1 of record type 11"):
        r.decode_value(r.ShareGroupMetadataKey("g"), h("0001 0000002a 0000000000000000 00"))
    with pytest.raises(ValueError, match="varint longer than 5 bytes"):
        r.decode_value(r.ShareGroupTargetAssignmentMemberKey("g", "m"), h("0000 ffffffffff01"))
    with pytest.raises(ValueError, match="exceeds the remaining bytes"):
        r.decode_value(r.ShareGroupTargetAssignmentMemberKey("g", "m"), h("0000 7f 00"))
    with pytest.raises(ValueError, match="client id is null but not nullable"):
        r.decode_value(r.ShareGroupMemberMetadataKey("g", "m"), h("0000 00 00 01 01 00"))
    # the AssignmentTimestamp tagged field must be exactly an int64
    with pytest.raises(ValueError, match="trailing|truncated"):
        r.decode_value(r.ShareGroupTargetAssignmentMetadataKey("g"), h("0000 00000007 01 00 04 00000001"))


def test_unknown_tagged_fields_are_skipped() -> None:
    value = r.decode_value(r.ShareGroupMetadataKey("g"), h("0000 00000001 0000000000000005 | 01 | 07 02 abcd"))
    assert value == r.ShareGroupMetadataValue(1, 5)
    value = r.decode_value(
        r.ShareGroupTargetAssignmentMetadataKey("g"), h("0000 00000003 | 02 | 00 08 0000000000000009 | 05 00")
    )
    assert value == r.ShareGroupTargetAssignmentMetadataValue(3, 9)


def test_is_share_group_key_tells_share_records_from_the_others() -> None:
    for _, key_bytes, _ in GOLDEN:
        assert r.is_share_group_key(key_bytes)
    assert not r.is_share_group_key(encode_key(OffsetKey("g", "t", 0)))
    assert not r.is_share_group_key(encode_key(GroupMetadataKey("g")))
    for key in (consumer_records.ConsumerGroupMetadataKey("g"), consumer_records.ConsumerGroupCurrentMemberAssignmentKey("g", "m")):
        key_bytes = consumer_records.encode_key(key)
        assert consumer_records.is_consumer_group_key(key_bytes)
        assert not r.is_share_group_key(key_bytes)
    assert not r.is_share_group_key(b"\x00")
    assert not r.is_share_group_key(h("0010 0001 67"))


def test_a_value_of_the_wrong_type_is_refused() -> None:
    with pytest.raises(TypeError, match="is not the value of a ShareGroupMetadataKey"):
        r.CoordinatorRecord(r.ShareGroupMetadataKey("g"), r.ShareGroupTargetAssignmentMetadataValue(1))


def test_encoding_refuses_values_out_of_range() -> None:
    with pytest.raises(ValueError, match="int32 out of range"):
        r.encode_value(r.ShareGroupMetadataValue(2**31, 0))
    with pytest.raises(ValueError, match="a UUID is 16 bytes"):
        r.encode_value(r.ShareGroupTargetAssignmentMemberValue((r.TopicPartitions(b"short", (0,)),)))
    with pytest.raises(ValueError, match="too long"):
        r.encode_value(r.ShareGroupMemberMetadataValue(None, "x" * 40000, "", ()))


# --------------------------------------------------------------------------- builders


def test_builders_write_what_kafkas_record_helpers_write() -> None:
    assert r.member_subscription_record("grp", "m1", None, "c", "/h", {"foo", "bar"}) == GOLDEN[0][0]
    assert r.group_epoch_record("grp", 42, -2) == GOLDEN[2][0]
    assert r.target_assignment_epoch_record("grp", 7) == GOLDEN[3][0]
    assert r.target_assignment_epoch_record("grp", 7, 1000) == GOLDEN[4][0]
    assert r.target_assignment_record("grp", "m1", {TID: frozenset({2, 0})}) == GOLDEN[5][0]
    assert r.current_assignment_record("grp", "m1", 5, 4, 0, {TID: frozenset({1})}) == GOLDEN[6][0]
    assert (
        r.state_partition_metadata_record(
            "grp", {TID: ("foo", {1, 0})}, {TID2: ("ba", frozenset({2}))}, {TID3: "x"}
        )
        == GOLDEN[7][0]
    )
    # Sorted output: the same state always gives the same bytes.
    two_topics = {TID2: frozenset({3, 1}), TID: frozenset({2}), TID3: frozenset()}
    assert r.to_topic_partitions(two_topics) == (r.TopicPartitions(TID, (2,)), r.TopicPartitions(TID2, (1, 3)))
    assert r.from_topic_partitions(r.to_topic_partitions(two_topics)) == {TID2: frozenset({3, 1}), TID: frozenset({2})}
