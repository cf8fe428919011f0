"""``__share_group_state`` records: golden bytes from Kafka's schemas, round trips, merging, and the coordinator."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mafka.errors import ErrorCode, KafkaError
from mafka.group.share.partition_state import (
    AcknowledgementBatch,
    AcknowledgeType,
    RecordState,
    SharePartitionConfig,
    SharePartitionState,
    StateBatch,
    StateWrite,
)
from mafka.group.share.state_records import (
    RECORD_TYPE_SNAPSHOT,
    RECORD_TYPE_UPDATE,
    SharePartitionKey,
    ShareSnapshotValue,
    ShareStateRecord,
    ShareStateShard,
    ShareUpdateValue,
    combine_state_batches,
    decode_key,
    decode_record,
    decode_value,
    encode_key,
    encode_value,
    restore_partition_state,
)
from tests.hypothesis_budget import examples

TOPIC_ID = bytes.fromhex("000102030405060708090a0b0c0d0e0f")
KEY = SharePartitionKey("g1", TOPIC_ID, 3)

# ---------------------------------------------------------------------- golden bytes
#
# Built by hand from ShareSnapshotKey.json / ShareSnapshotValue.json / ShareUpdateKey.json /
# ShareUpdateValue.json (Kafka 4.x): a key is the record type (the schema's apiKey) as int16,
# then the non-flexible key; a value is its version (0) as int16, then the flexible struct
# (compact array = uvarint length+1, an empty tagged-field section = one 0x00 byte).

SNAPSHOT_KEY = bytes.fromhex(
    "0000"  # record type 0: ShareSnapshot
    "0002" "6731"  # GroupId "g1": int16 length, UTF-8
    "000102030405060708090a0b0c0d0e0f"  # TopicId: 16 bytes
    "00000003"  # Partition 3
)
UPDATE_KEY = bytes.fromhex(
    "0001"  # record type 1: ShareUpdate
    "0002" "6731"
    "000102030405060708090a0b0c0d0e0f"
    "00000003"
)
SNAPSHOT_VALUE = bytes.fromhex(
    "0000"  # version 0
    "00000001"  # SnapshotEpoch 1
    "00000002"  # StateEpoch 2
    "00000007"  # LeaderEpoch 7
    "0000000000000064"  # StartOffset 100
    "0000018bcfe56800"  # CreateTimestamp 1700000000000
    "0000018bcfe56801"  # WriteTimestamp 1700000000001
    "03"  # StateBatches: 2 elements (compact: 2 + 1)
    "0000000000000064" "000000000000006d" "02" "0001" "00"  # 100-109 ACKNOWLEDGED count 1, no tags
    "000000000000006e" "000000000000006e" "04" "0005" "00"  # 110-110 ARCHIVED count 5, no tags
    "00"  # no tagged fields
)
UPDATE_VALUE = bytes.fromhex(
    "0000"  # version 0
    "00000001"  # SnapshotEpoch 1
    "00000007"  # LeaderEpoch 7
    "0000000000000064"  # StartOffset 100
    "02"  # StateBatches: 1 element
    "0000000000000070" "0000000000000072" "00" "0002" "00"  # 112-114 AVAILABLE count 2
    "00"  # no tagged fields
)
SNAPSHOT = ShareSnapshotValue(
    snapshot_epoch=1,
    state_epoch=2,
    leader_epoch=7,
    start_offset=100,
    create_timestamp=1_700_000_000_000,
    write_timestamp=1_700_000_000_001,
    state_batches=(StateBatch(100, 109, 2, 1), StateBatch(110, 110, 4, 5)),
)
UPDATE = ShareUpdateValue(snapshot_epoch=1, leader_epoch=7, start_offset=100, state_batches=(StateBatch(112, 114, 0, 2),))


def test_snapshot_key_golden_bytes():
    assert encode_key(RECORD_TYPE_SNAPSHOT, KEY) == SNAPSHOT_KEY
    assert decode_key(SNAPSHOT_KEY) == (RECORD_TYPE_SNAPSHOT, KEY)


def test_update_key_golden_bytes():
    assert encode_key(RECORD_TYPE_UPDATE, KEY) == UPDATE_KEY
    assert decode_key(UPDATE_KEY) == (RECORD_TYPE_UPDATE, KEY)


def test_snapshot_value_golden_bytes():
    assert encode_value(SNAPSHOT) == SNAPSHOT_VALUE
    assert decode_value(RECORD_TYPE_SNAPSHOT, SNAPSHOT_VALUE) == SNAPSHOT


def test_update_value_golden_bytes():
    assert encode_value(UPDATE) == UPDATE_VALUE
    assert decode_value(RECORD_TYPE_UPDATE, UPDATE_VALUE) == UPDATE


def test_tombstone_is_a_snapshot_key_with_no_value():
    record = ShareStateShard().delete_state(KEY)
    assert (record.key_bytes(), record.value_bytes()) == (SNAPSHOT_KEY, None)
    assert decode_record(SNAPSHOT_KEY, None) == ShareStateRecord(RECORD_TYPE_SNAPSHOT, KEY, None)


def test_kafka_4_2_delivery_complete_count_is_tagged_field_zero():
    """KIP-1226's tagged field: read when present, written only when set; other tags are skipped."""
    tagged = UPDATE_VALUE[:-1] + bytes.fromhex("02" "00" "04" "0000000a" "05" "02" "abcd")
    value = decode_value(RECORD_TYPE_UPDATE, tagged)
    assert value == ShareUpdateValue(1, 7, 100, UPDATE.state_batches, delivery_complete_count=10)
    assert encode_value(value) == UPDATE_VALUE[:-1] + bytes.fromhex("01" "00" "04" "0000000a")


@pytest.mark.parametrize(
    "key, value, message",
    [
        (SNAPSHOT_KEY[:-1], None, "truncated"),
        (SNAPSHOT_KEY + b"\x00", None, "trailing"),
        (b"\x00\x02" + SNAPSHOT_KEY[2:], None, "record type 2"),
        (b"\x00\x00\x00\x02\xff\xfe" + SNAPSHOT_KEY[6:], None, "UTF-8"),
        (b"\x00\x00\xff\xff" + SNAPSHOT_KEY[4:], None, "negative"),
        (SNAPSHOT_KEY, b"\x00\x01" + SNAPSHOT_VALUE[2:], "version 1"),
        (SNAPSHOT_KEY, SNAPSHOT_VALUE[:20], "truncated"),
        (SNAPSHOT_KEY, SNAPSHOT_VALUE[:40], "exceeds"),
        (SNAPSHOT_KEY, SNAPSHOT_VALUE[:-1], "truncated tagged field count"),
        (SNAPSHOT_KEY, SNAPSHOT_VALUE + b"\x00", "trailing"),
        (UPDATE_KEY, UPDATE_VALUE[:18] + b"\xff\xff\xff\x0f", "exceeds"),
        (UPDATE_KEY, UPDATE_VALUE[:18] + b"\x00", "null"),
        (UPDATE_KEY, UPDATE_VALUE[:18] + b"\xff\xff\xff\xff\xff\x01", "varint"),
    ],
    ids=lambda v: v if isinstance(v, str) else "",
)
def test_malformed_records_raise_value_error(key, value, message):
    with pytest.raises(ValueError, match=message):
        decode_record(key, value)


@settings(max_examples=examples(300))
@given(st.binary(max_size=80), st.one_of(st.none(), st.binary(max_size=80)))
def test_arbitrary_bytes_decode_or_raise_value_error(key, value):
    try:
        decode_record(key, value)
    except ValueError:
        pass


batches = st.lists(
    st.builds(
        StateBatch,
        st.integers(0, 2**40),
        st.integers(0, 2**40),
        st.sampled_from([0, 2, 4]),
        st.integers(0, 0x7FFF),
    ),
    max_size=5,
)


@given(
    st.builds(
        ShareSnapshotValue,
        st.integers(-(2**31), 2**31 - 1),
        st.integers(-(2**31), 2**31 - 1),
        st.integers(-(2**31), 2**31 - 1),
        st.integers(-(2**63), 2**63 - 1),
        st.integers(-(2**63), 2**63 - 1),
        st.integers(-(2**63), 2**63 - 1),
        batches.map(tuple),
        st.integers(-(2**31), 2**31 - 1),
    )
    | st.builds(
        ShareUpdateValue,
        st.integers(-(2**31), 2**31 - 1),
        st.integers(-(2**31), 2**31 - 1),
        st.integers(-(2**63), 2**63 - 1),
        batches.map(tuple),
        st.integers(-(2**31), 2**31 - 1),
    ),
    st.text(max_size=20),
    st.binary(min_size=16, max_size=16),
    st.integers(-(2**31), 2**31 - 1),
)
def test_records_round_trip(value, group, topic_id, partition):
    record_type = RECORD_TYPE_SNAPSHOT if isinstance(value, ShareSnapshotValue) else RECORD_TYPE_UPDATE
    record = ShareStateRecord(record_type, SharePartitionKey(group, topic_id, partition), value)
    assert decode_record(record.key_bytes(), record.value_bytes()) == record


def test_values_out_of_range_are_value_errors():
    with pytest.raises(ValueError):
        encode_value(ShareUpdateValue(0, 0, 0, (StateBatch(0, 1, 0, 0x8000),)))
    with pytest.raises(ValueError, match="16 bytes"):
        encode_key(RECORD_TYPE_SNAPSHOT, SharePartitionKey("g", b"short", 0))


# ---------------------------------------------------------------------- merging


def b(first, last, state, count):
    return StateBatch(first, last, state, count)


def test_combine_prunes_below_the_start_offset():
    assert combine_state_batches([b(0, 9, 2, 1), b(10, 12, 0, 1)], [], 5) == (b(5, 9, 2, 1), b(10, 12, 0, 1))
    assert combine_state_batches([b(0, 4, 2, 1)], [], 5) == ()
    assert combine_state_batches([b(0, 4, 2, 1)], [], -1) == (b(0, 4, 2, 1),)


def test_combine_keeps_the_higher_delivery_count_then_the_higher_state():
    # A release (AVAILABLE, count 2) over an older acquisition record (AVAILABLE, count 1).
    assert combine_state_batches([b(0, 9, 0, 1)], [b(3, 5, 0, 2)], 0) == (b(0, 2, 0, 1), b(3, 5, 0, 2), b(6, 9, 0, 1))
    # An acknowledgement (state 2) over the acquisition record of the same delivery.
    assert combine_state_batches([b(0, 9, 0, 1)], [b(0, 9, 2, 1)], 0) == (b(0, 9, 2, 1),)
    # An older write arriving later never wins.
    assert combine_state_batches([b(0, 9, 4, 3)], [b(0, 9, 0, 2)], 0) == (b(0, 9, 4, 3),)


def test_combine_joins_neighbours_in_the_same_state():
    assert combine_state_batches([b(0, 4, 2, 1)], [b(5, 9, 2, 1), b(10, 10, 4, 1)], 0) == (
        b(0, 9, 2, 1),
        b(10, 10, 4, 1),
    )


@settings(max_examples=examples(300))
@given(st.lists(st.tuples(st.integers(0, 30), st.integers(0, 5), st.sampled_from([0, 2, 4]), st.integers(0, 4))))
def test_combine_gives_each_offset_its_best_batch(raw):
    given_batches = [b(first, first + length, state, count) for first, length, state, count in raw]
    combined = combine_state_batches(given_batches[: len(raw) // 2], given_batches[len(raw) // 2 :], -1)
    covered: dict[int, tuple[int, int]] = {}
    for g in given_batches:
        for o in range(g.first_offset, g.last_offset + 1):
            covered[o] = max(covered.get(o, (-1, -1)), (g.delivery_count, g.delivery_state))
    got = {}
    for prev, nxt in zip(combined, combined[1:], strict=False):
        assert prev.last_offset < nxt.first_offset
        assert not (
            prev.last_offset + 1 == nxt.first_offset
            and (prev.delivery_state, prev.delivery_count) == (nxt.delivery_state, nxt.delivery_count)
        ), "neighbours in the same state were not joined"
    for c in combined:
        for o in range(c.first_offset, c.last_offset + 1):
            got[o] = (c.delivery_count, c.delivery_state)
    assert got == covered


# ---------------------------------------------------------------------- the coordinator


def write(start, *batches_, state_epoch=0, leader_epoch=0, initialize=False):
    return StateWrite(state_epoch, leader_epoch, start, tuple(batches_), initialize)


def append(shard, record, log):
    key, value = record.key_bytes(), record.value_bytes()
    log.append((key, value))
    shard.replay_bytes(key, value)


def test_snapshot_then_updates_then_a_snapshot_every_n_updates():
    shard, log = ShareStateShard(records_per_snapshot=2), []
    first = shard.write_state(KEY, write(0, initialize=True), now_ms=10)
    assert first.record_type == RECORD_TYPE_SNAPSHOT and first.value.snapshot_epoch == 0
    append(shard, first, log)
    kinds = []
    for n in range(8):
        record = shard.write_state(KEY, write(n, b(n, n, 2, 1)), now_ms=20 + n)
        kinds.append((record.record_type, record.value.snapshot_epoch))
        append(shard, record, log)
    # Kafka's counter: unset after a snapshot, 0 at the first update; a snapshot once it reaches N.
    assert kinds == [(1, 0), (1, 0), (1, 0), (0, 1), (1, 1), (1, 1), (0, 2), (1, 2)]
    state = shard.state(KEY)
    assert state.start_offset == 7 and state.state_batches == (b(7, 7, 2, 1),)
    assert state.snapshot_epoch == 2 and state.create_timestamp == state.write_timestamp == 26
    # A new shard reading the same bytes ends in the same state.
    again = ShareStateShard(records_per_snapshot=2)
    for key, value in log:
        again.replay_bytes(key, value)
    assert again.state(KEY) == state


def test_an_update_carries_only_the_write_and_replay_merges_it():
    shard = ShareStateShard()
    shard.replay(shard.write_state(KEY, write(0, b(0, 9, 0, 1), initialize=True), 0))
    update = shard.write_state(KEY, write(3, b(3, 4, 2, 1), b(5, 5, 0, 1), b(5, 5, 0, 2)), 0)
    assert update.record_type == RECORD_TYPE_UPDATE
    assert update.value == ShareUpdateValue(0, 0, 3, (b(3, 4, 2, 1), b(5, 5, 0, 2)))
    shard.replay(update)
    assert shard.state(KEY).state_batches == (b(3, 4, 2, 1), b(5, 5, 0, 2), b(6, 9, 0, 1))


def test_writes_are_fenced_like_kafkas():
    shard = ShareStateShard()
    with pytest.raises(KafkaError) as e:
        shard.write_state(KEY, write(0), 0)
    assert e.value.code == ErrorCode.INVALID_REQUEST
    shard.replay(shard.write_state(KEY, write(0, state_epoch=2, leader_epoch=5, initialize=True), 0))
    with pytest.raises(KafkaError) as e:
        shard.write_state(KEY, write(0, state_epoch=1, leader_epoch=5), 0)
    assert e.value.code == ErrorCode.FENCED_STATE_EPOCH
    with pytest.raises(KafkaError) as e:
        shard.write_state(KEY, write(0, state_epoch=2, leader_epoch=4), 0)
    assert e.value.code == ErrorCode.FENCED_LEADER_EPOCH
    assert shard.write_state(KEY, write(0, state_epoch=2, leader_epoch=6), 0).value.leader_epoch == 6


def test_tombstone_deletes_the_state():
    shard = ShareStateShard()
    shard.replay(shard.write_state(KEY, write(5, initialize=True), 0))
    shard.replay(shard.delete_state(KEY))
    assert shard.state(KEY) is None and shard.keys() == []


def test_the_share_partition_round_trips_through_the_records():
    """A share-partition's changes written as records and replayed elsewhere: nothing acknowledged is lost."""
    config = SharePartitionConfig(record_lock_duration_ms=100, delivery_count_limit=3, max_record_locks=50)
    state = SharePartitionState.new(config, auto_offset_reset="latest", log_start_offset=0, log_end_offset=10)
    shard, log = ShareStateShard(records_per_snapshot=1), []

    def persist(now):
        w = state.take_state_write()
        if w is not None:
            append(shard, shard.write_state(KEY, w, now), log)

    persist(0)
    state.acquire("m1", (10, 19), 100, 0)
    persist(1)
    state.acknowledge("m1", [AcknowledgementBatch(10, 13, (int(AcknowledgeType.ACCEPT),))], 2)
    persist(2)
    state.acknowledge("m1", [AcknowledgementBatch(15, 15, (int(AcknowledgeType.REJECT),))], 3)
    persist(3)
    # 14 and 16-19 are still acquired when everything dies.
    replayed = ShareStateShard(records_per_snapshot=1)
    for key, value in log:
        replayed.replay_bytes(key, value)
    restored = restore_partition_state(config, replayed.state(KEY))
    assert (restored.start_offset, restored.end_offset) == (14, 20)
    got = [(r.first_offset, r.last_offset, r.state, r.delivery_count) for r in restored.records()]
    assert got == [
        (14, 14, RecordState.AVAILABLE, 1),
        (15, 15, RecordState.ARCHIVED, 1),
        (16, 19, RecordState.AVAILABLE, 1),
    ]
    assert restored.acquire("m2", (14, 19), 100, 200)[0].delivery_count == 2


def test_the_coordinator_rejects_bad_settings():
    with pytest.raises(ValueError, match="records.per.snapshot"):
        ShareStateShard(records_per_snapshot=501)


@given(st.integers(0, 2**31 - 1))
def test_big_partitions_fit_the_key(partition):
    key = SharePartitionKey("group", TOPIC_ID, partition)
    assert struct.unpack(">i", encode_key(RECORD_TYPE_UPDATE, key)[-4:])[0] == partition

