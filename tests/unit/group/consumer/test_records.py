"""The consumer group records of ``__consumer_offsets``: golden bytes, round trips, bad input.

The golden bytes below were written by hand from Kafka's JSON schemas (``kafka_schemas/``):
keys are non-flexible (int16 type, int16-length strings), values are flexible version 0
(compact strings/arrays: unsigned varint length + 1, 16-byte UUIDs, a tagged-field section
closing every struct).  kafka-python's generic schema codec, fed Kafka's own schema files,
is an independent second encoder to compare against.
"""

from __future__ import annotations

import uuid

import pytest
from hypothesis import given
from hypothesis import strategies as st
from kafka.protocol.api_data import ApiData

from mafka.group.consumer import records as r
from mafka.group.consumer.member import ConsumerGroupMember, MemberState, TopicInfo
from mafka.group.offsets_records import GroupMetadataKey, OffsetKey, encode_key
from tests.unit.group.consumer import kafka_schemas

TID = bytes(range(1, 17))  # topic id 0102…10
TID2 = bytes(range(0x11, 0x21))


def h(text: str) -> bytes:
    """Hex with spaces and ``|`` separators allowed, for readable golden bytes."""
    return bytes.fromhex(text.replace("|", " "))


ID_HEX = TID.hex()

# (record, key bytes, value bytes) — one of each type, plus the classic tagged field.
GOLDEN = [
    (
        r.CoordinatorRecord(r.ConsumerGroupMetadataKey("grp"), r.ConsumerGroupMetadataValue(42)),
        h("0003 | 0003 677270"),
        h("0000 | 0000002a | 00"),
    ),
    (
        r.CoordinatorRecord(
            r.ConsumerGroupPartitionMetadataKey("grp"),
            r.ConsumerGroupPartitionMetadataValue(
                (
                    r.TopicMetadata(TID, "foo", 3),
                    r.TopicMetadata(TID2, "ba", 1, (r.PartitionMetadata(0, ("r1",)),)),
                )
            ),
        ),
        h("0004 | 0003 677270"),
        h(
            "0000 | 03"  # version, 2 topics
            f"| {ID_HEX} | 04 666f6f | 00000003 | 01 | 00"  # foo: 3 partitions, no partition metadata
            f"| {TID2.hex()} | 03 6261 | 00000001 | 02 | 00000000 | 02 | 03 7231 | 00 | 00"  # ba, p0 in r1
            "| 00"
        ),
    ),
    (
        r.CoordinatorRecord(
            r.ConsumerGroupMemberMetadataKey("grp", "m1"),
            r.ConsumerGroupMemberMetadataValue(
                instance_id="i1",
                rack_id=None,
                client_id="c",
                client_host="/h",
                subscribed_topic_names=("bar", "foo"),
                subscribed_topic_regex=None,
                rebalance_timeout_ms=30000,
                server_assignor="uniform",
            ),
        ),
        h("0005 | 0003 677270 | 0002 6d31"),
        h(
            "0000 | 03 6931 | 00 | 02 63 | 03 2f68"  # instance i1, rack null, client c, host /h
            "| 03 | 04 626172 | 04 666f6f"  # [bar, foo]
            "| 00 | 00007530 | 08 756e69666f726d | 00"  # regex null, 30000, uniform, no tags
        ),
    ),
    (
        r.CoordinatorRecord(
            r.ConsumerGroupMemberMetadataKey("grp", "m2"),
            r.ConsumerGroupMemberMetadataValue(
                instance_id=None,
                rack_id="r",
                client_id="",
                client_host="",
                subscribed_topic_names=(),
                subscribed_topic_regex="t.*",
                rebalance_timeout_ms=-1,
                server_assignor=None,
                classic_member_metadata=r.ClassicMemberMetadata(45000, (r.ClassicProtocol("range", b"\x01\x02"),)),
            ),
        ),
        h("0005 | 0003 677270 | 0002 6d32"),
        h(
            "0000 | 00 | 02 72 | 01 | 01 | 01 | 04 742e2a | ffffffff | 00"
            "| 01 | 00 | 11 | 01"  # 1 tagged field: tag 0, 17 bytes, non-null
            "| 0000afc8 | 02 | 06 72616e6765 | 03 0102 | 00 | 00"  # 45000, [range: 0102]
        ),
    ),
    (
        r.CoordinatorRecord(
            r.ConsumerGroupTargetAssignmentMetadataKey("grp"), r.ConsumerGroupTargetAssignmentMetadataValue(7)
        ),
        h("0006 | 0003 677270"),
        h("0000 | 00000007 | 00"),
    ),
    (
        r.CoordinatorRecord(
            r.ConsumerGroupTargetAssignmentMemberKey("grp", "m1"),
            r.ConsumerGroupTargetAssignmentMemberValue((r.TopicPartitions(TID, (0, 2)),)),
        ),
        h("0007 | 0003 677270 | 0002 6d31"),
        h(f"0000 | 02 | {ID_HEX} | 03 00000000 00000002 | 00 | 00"),
    ),
    (
        r.CoordinatorRecord(
            r.ConsumerGroupCurrentMemberAssignmentKey("grp", "m1"),
            r.ConsumerGroupCurrentMemberAssignmentValue(
                5, 4, 1, (r.TopicPartitions(TID, (1,)),), (r.TopicPartitions(TID, (0,)),)
            ),
        ),
        h("0008 | 0003 677270 | 0002 6d31"),
        h(
            "0000 | 00000005 | 00000004 | 01"
            f"| 02 | {ID_HEX} | 02 00000001 | 00"  # assigned: p1
            f"| 02 | {ID_HEX} | 02 00000000 | 00"  # pending revocation: p0
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


# --------------------------------------------------------------------------- kafka-python cross-check


def _kafka_class(name: str) -> type[ApiData]:
    return type(name, (ApiData,), {}, load_json=kafka_schemas)  # type: ignore[call-arg]


KAFKA = {
    name: _kafka_class(name)
    for name in [
        f"ConsumerGroup{kind}{part}"
        for kind in (
            "Metadata",
            "PartitionMetadata",
            "MemberMetadata",
            "TargetAssignmentMetadata",
            "TargetAssignmentMember",
            "CurrentMemberAssignment",
        )
        for part in ("Key", "Value")
    ]
}
KEY_VERSIONS = {
    "ConsumerGroupMetadataKey": 3,
    "ConsumerGroupPartitionMetadataKey": 4,
    "ConsumerGroupMemberMetadataKey": 5,
    "ConsumerGroupTargetAssignmentMetadataKey": 6,
    "ConsumerGroupTargetAssignmentMemberKey": 7,
    "ConsumerGroupCurrentMemberAssignmentKey": 8,
}


def _kafka_python_bytes(record: r.CoordinatorRecord) -> tuple[bytes, bytes | None]:
    """The record encoded by kafka-python from Kafka's schema files."""
    key_name = type(record.key).__name__
    key = KAFKA[key_name](version=KEY_VERSIONS[key_name], **vars(record.key))
    key_bytes = key.encode(version=KEY_VERSIONS[key_name])
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
        elif isinstance(v, r.ClassicMemberMetadata):
            sub = cls.ClassicMemberMetadata  # type: ignore[attr-defined]
            v = sub(**_kafka_fields(sub, v))
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
topic_partitions = st.lists(
    st.builds(r.TopicPartitions, ids, st.lists(i32, max_size=4).map(tuple)), max_size=3
).map(tuple)
keys = st.one_of(
    st.builds(r.ConsumerGroupMetadataKey, text),
    st.builds(r.ConsumerGroupPartitionMetadataKey, text),
    st.builds(r.ConsumerGroupMemberMetadataKey, text, text),
    st.builds(r.ConsumerGroupTargetAssignmentMetadataKey, text),
    st.builds(r.ConsumerGroupTargetAssignmentMemberKey, text, text),
    st.builds(r.ConsumerGroupCurrentMemberAssignmentKey, text, text),
)


def _value_for(key: r.RecordKey) -> st.SearchStrategy[r.RecordValue]:
    if isinstance(key, r.ConsumerGroupMetadataKey):
        return st.builds(r.ConsumerGroupMetadataValue, i32)
    if isinstance(key, r.ConsumerGroupPartitionMetadataKey):
        pm = st.builds(r.PartitionMetadata, i32, st.lists(text, max_size=2).map(tuple))
        tm = st.builds(r.TopicMetadata, ids, text, i32, st.lists(pm, max_size=2).map(tuple))
        return st.builds(r.ConsumerGroupPartitionMetadataValue, st.lists(tm, max_size=3).map(tuple))
    if isinstance(key, r.ConsumerGroupMemberMetadataKey):
        classic = st.builds(
            r.ClassicMemberMetadata,
            i32,
            st.lists(st.builds(r.ClassicProtocol, text, st.binary(max_size=8)), max_size=2).map(tuple),
        )
        return st.builds(
            r.ConsumerGroupMemberMetadataValue,
            st.none() | text,
            st.none() | text,
            text,
            text,
            st.lists(text, max_size=3).map(tuple),
            st.none() | text,
            i32,
            st.none() | text,
            st.none() | classic,
        )
    if isinstance(key, r.ConsumerGroupTargetAssignmentMetadataKey):
        return st.builds(r.ConsumerGroupTargetAssignmentMetadataValue, i32)
    if isinstance(key, r.ConsumerGroupTargetAssignmentMemberKey):
        return st.builds(r.ConsumerGroupTargetAssignmentMemberValue, topic_partitions)
    return st.builds(
        r.ConsumerGroupCurrentMemberAssignmentValue,
        i32,
        i32,
        st.integers(-128, 127),
        topic_partitions,
        topic_partitions,
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
        (encode_key(OffsetKey("g", "t", 0)), "not a consumer group record key type: 1"),
        (encode_key(GroupMetadataKey("g")), "not a consumer group record key type: 2"),
        (h("0009 0001 67"), "not a consumer group record key type: 9"),
        (h("0003 0001"), "truncated group id"),
        (h("0003 0001 ff"), "group id is not valid UTF-8"),
    ],
)
def test_bad_keys(key_bytes: bytes, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        r.decode_key(key_bytes)


def test_bad_values() -> None:
    key = r.ConsumerGroupMetadataKey("g")
    with pytest.raises(ValueError, match="unknown value version 1 of record type 3"):
        r.decode_value(key, h("0001 0000002a 00"))
    with pytest.raises(ValueError, match="varint longer than 5 bytes"):
        r.decode_value(r.ConsumerGroupTargetAssignmentMemberKey("g", "m"), h("0000 ffffffffff01"))
    with pytest.raises(ValueError, match="exceeds the remaining bytes"):
        r.decode_value(r.ConsumerGroupTargetAssignmentMemberKey("g", "m"), h("0000 7f 00"))
    with pytest.raises(ValueError, match="client id is null but not nullable"):
        r.decode_value(r.ConsumerGroupMemberMetadataKey("g", "m"), h("0000 00 00 00"))


def test_is_consumer_group_key_tells_the_new_records_from_the_classic_ones() -> None:
    assert r.is_consumer_group_key(GOLDEN[0][1])
    assert r.is_consumer_group_key(GOLDEN[-1][1])
    assert not r.is_consumer_group_key(encode_key(OffsetKey("g", "t", 0)))
    assert not r.is_consumer_group_key(encode_key(GroupMetadataKey("g")))
    assert not r.is_consumer_group_key(b"\x00")


def test_a_value_of_the_wrong_type_is_refused() -> None:
    with pytest.raises(TypeError, match="is not the value of a ConsumerGroupMetadataKey"):
        r.CoordinatorRecord(r.ConsumerGroupMetadataKey("g"), r.ConsumerGroupTargetAssignmentMetadataValue(1))


def test_encoding_refuses_values_out_of_range() -> None:
    with pytest.raises(ValueError, match="int32 out of range"):
        r.encode_value(r.ConsumerGroupMetadataValue(2**31))
    with pytest.raises(ValueError, match="a UUID is 16 bytes"):
        r.encode_value(r.ConsumerGroupTargetAssignmentMemberValue((r.TopicPartitions(b"short", (0,)),)))
    with pytest.raises(ValueError, match="too long"):
        r.encode_value(r.ConsumerGroupMemberMetadataValue(None, None, "x" * 40000, "", (), None))


# --------------------------------------------------------------------------- builders


def test_builders_write_what_kafkas_record_helpers_write() -> None:
    member = ConsumerGroupMember(
        "m1",
        member_epoch=5,
        previous_member_epoch=4,
        state=MemberState.UNREVOKED_PARTITIONS,
        instance_id="i1",
        client_id="c",
        client_host="/h",
        rebalance_timeout_ms=30000,
        subscribed_topic_names=frozenset({"foo", "bar"}),
        server_assignor_name="uniform",
        assigned_partitions={TID: frozenset({1})},
        partitions_pending_revocation={TID: frozenset({0})},
    )
    assert r.member_subscription_record("grp", member) == GOLDEN[2][0]
    assert r.current_assignment_record("grp", member) == GOLDEN[6][0]
    assert r.target_assignment_record("grp", "m1", {TID: frozenset({2, 0})}) == GOLDEN[5][0]
    assert r.group_epoch_record("grp", 42) == GOLDEN[0][0]
    assert r.target_assignment_epoch_record("grp", 7) == GOLDEN[4][0]
    assert r.subscription_metadata_record("grp", {"foo": TopicInfo(TID, "foo", 3)}) == r.CoordinatorRecord(
        r.ConsumerGroupPartitionMetadataKey("grp"),
        r.ConsumerGroupPartitionMetadataValue((r.TopicMetadata(TID, "foo", 3),)),
    )
    # Sorted output: the same state always gives the same bytes.
    two_topics = {TID2: frozenset({3, 1}), TID: frozenset({2})}
    assert r.to_topic_partitions(two_topics) == (r.TopicPartitions(TID, (2,)), r.TopicPartitions(TID2, (1, 3)))
    assert r.from_topic_partitions(r.to_topic_partitions(two_topics)) == two_topics
