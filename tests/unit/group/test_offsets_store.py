"""Committed-offset bookkeeping (Kafka 2.8 GroupMetadata / GroupMetadataManager rules)."""

from mafka.group.offsets import OffsetAndMetadata, OffsetStore
from mafka.group.offsets_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetKey,
    OffsetValue,
    decode_record,
    encode_key,
    encode_value,
)
from mafka.group.state import GroupState

RETENTION = 7 * 24 * 3600 * 1000
T0 = 1_700_000_000_000


def om(offset, ts=T0, expire=None, epoch=-1, meta=""):
    return OffsetAndMetadata(offset, epoch, meta, ts, expire)


def offset_rec(group, topic, partition, offset, ts=T0, expire=None, epoch=-1):
    return (
        encode_key(OffsetKey(group, topic, partition)),
        encode_value(OffsetValue(offset, epoch, "", ts, expire)),
    )


def offset_tomb(group, topic, partition):
    return (encode_key(OffsetKey(group, topic, partition)), None)


def group_rec(group, generation, state_ts=T0):
    member = MemberMetadata("m-1", None, "c", "/127.0.0.1", 300000, 10000, b"sub", b"asg")
    value = GroupMetadataValue("consumer", generation, "range", "m-1", state_ts, [member])
    return (encode_key(GroupMetadataKey(group)), encode_value(value))


# ------------------------------------------------------------------ commits


def test_prepare_then_complete_stores_offset():
    store = OffsetStore()
    offs = {("t", 0): om(5), ("t", 1): om(7)}
    records = store.prepare_commit("g", offs)
    assert store.committed("g", ("t", 0)) is None
    assert store.group("g").pending == offs
    # the records to append decode back to what was committed
    decoded = {decode_record(k, v) for k, v in records}
    assert (OffsetKey("g", "t", 0), OffsetValue(5, -1, "", T0, None)) in decoded
    store.complete_commit("g", offs, ok=True, appended_batch_offset=10)
    assert store.committed("g", ("t", 0)) == om(5)
    assert store.all_committed("g") == offs
    assert store.group("g").pending == {}


def test_failed_commit_is_discarded():
    store = OffsetStore()
    store.prepare_commit("g", {("t", 0): om(5)})
    store.complete_commit("g", {("t", 0): om(5)}, ok=True)
    store.prepare_commit("g", {("t", 0): om(9)})
    store.complete_commit("g", {("t", 0): om(9)}, ok=False)
    assert store.committed("g", ("t", 0)) == om(5)
    assert store.group("g").pending == {}


def test_failed_first_commit_leaves_no_group():
    store = OffsetStore()
    store.prepare_commit("g", {("t", 0): om(5)})
    store.complete_commit("g", {("t", 0): om(5)}, ok=False)
    assert store.committed("g", ("t", 0)) is None
    assert store.all_committed("g") == {}


def test_overlapping_commits_keep_the_later_pending_entry():
    store = OffsetStore()
    store.prepare_commit("g", {("t", 0): om(1)})
    store.prepare_commit("g", {("t", 0): om(2)})
    store.complete_commit("g", {("t", 0): om(1)}, ok=True, appended_batch_offset=100)
    assert store.committed("g", ("t", 0)) == om(1)
    assert store.group("g").pending == {("t", 0): om(2)}
    store.complete_commit("g", {("t", 0): om(2)}, ok=True, appended_batch_offset=101)
    assert store.committed("g", ("t", 0)) == om(2)
    assert store.group("g").pending == {}


def test_completion_from_an_older_batch_does_not_overwrite():
    store = OffsetStore()
    store.prepare_commit("g", {("t", 0): om(1)})
    store.prepare_commit("g", {("t", 0): om(2)})
    store.complete_commit("g", {("t", 0): om(2)}, ok=True, appended_batch_offset=101)
    store.prepare_commit("g", {("t", 0): om(1)})
    store.complete_commit("g", {("t", 0): om(1)}, ok=True, appended_batch_offset=100)
    assert store.committed("g", ("t", 0)) == om(2)


def test_completion_after_remove_does_not_resurrect():
    store = OffsetStore()
    store.prepare_commit("g", {("t", 0): om(1)})
    store.remove_offsets("g", [("t", 0)])
    store.complete_commit("g", {("t", 0): om(1)}, ok=True)
    assert store.committed("g", ("t", 0)) is None


# ------------------------------------------------------------------ load


def test_load_later_records_win_and_tombstones_remove():
    store = OffsetStore()
    groups = store.load(
        [
            offset_rec("g", "t", 0, 1),
            group_rec("g", 1),
            offset_rec("g", "t", 1, 10),
            offset_rec("g", "t", 0, 2, epoch=4),
            group_rec("g", 2),
            offset_tomb("g", "t", 1),
            offset_rec("h", "u", 0, 50, expire=T0 + 5),
            group_rec("h", 1),
            group_rec("x", 3),
            (encode_key(GroupMetadataKey("h")), None),
            offset_tomb("nobody", "t", 0),
        ]
    )
    assert store.all_committed("g") == {("t", 0): om(2, epoch=4)}
    assert store.all_committed("h") == {("u", 0): om(50, expire=T0 + 5)}
    assert set(groups) == {"g", "x"}
    assert groups["g"].generation == 2
    assert groups["g"].members[0].member_id == "m-1"
    assert groups["x"].generation == 3
    assert "nobody" not in store.groups


def test_load_group_resurrected_after_tombstone():
    store = OffsetStore()
    groups = store.load(
        [group_rec("g", 1), (encode_key(GroupMetadataKey("g")), None), group_rec("g", 5)]
    )
    assert groups["g"].generation == 5


def test_load_offset_removed_then_recommitted():
    store = OffsetStore()
    store.load([offset_rec("g", "t", 0, 1), offset_tomb("g", "t", 0), offset_rec("g", "t", 0, 3)])
    assert store.committed("g", ("t", 0)) == om(3)


def test_unload():
    store = OffsetStore()
    store.load([offset_rec("g", "t", 0, 1), offset_rec("h", "t", 0, 1)])
    store.unload(["g"])
    assert store.all_committed("g") == {}
    assert store.committed("h", ("t", 0)) == om(1)


# ------------------------------------------------------------------ expiry


def _commit(store, group, offsets):
    store.prepare_commit(group, offsets)
    store.complete_commit(group, offsets, ok=True)


def test_empty_group_expires_by_state_timestamp():
    store = OffsetStore()
    _commit(store, "g", {("t", 0): om(1, ts=T0), ("t", 1): om(2, ts=T0 + 1000)})
    empty_at = T0 + 60_000

    def state(g):
        return (GroupState.EMPTY, empty_at, None)

    assert store.expired_offsets(empty_at + RETENTION - 1, RETENTION, state) == {}
    expired = store.expired_offsets(empty_at + RETENTION, RETENTION, state)
    assert expired == {"g": {("t", 0): om(1, ts=T0), ("t", 1): om(2, ts=T0 + 1000)}}
    # expired_offsets only reports
    assert store.committed("g", ("t", 0)) == om(1, ts=T0)


def test_empty_group_without_state_timestamp_uses_commit_timestamp():
    store = OffsetStore()
    _commit(store, "g", {("t", 0): om(1, ts=T0), ("t", 1): om(2, ts=T0 + 1000)})

    def state(g):
        return (GroupState.EMPTY, None, None)

    assert store.expired_offsets(T0 + RETENTION, RETENTION, state) == {
        "g": {("t", 0): om(1, ts=T0)}
    }


def test_stable_group_expires_only_unsubscribed_topics():
    store = OffsetStore()
    _commit(store, "g", {("a", 0): om(1), ("gone", 0): om(2), ("gone", 1): om(3, ts=T0 + 10)})

    def state(g):
        return (GroupState.STABLE, T0, {"a"})

    assert store.expired_offsets(T0 + RETENTION - 1, RETENTION, state) == {}
    assert store.expired_offsets(T0 + RETENTION, RETENTION, state) == {"g": {("gone", 0): om(2)}}
    assert store.expired_offsets(T0 + 10 * RETENTION, RETENTION, state) == {
        "g": {("gone", 0): om(2), ("gone", 1): om(3, ts=T0 + 10)}
    }


def test_rebalancing_or_unknown_subscription_group_expires_nothing():
    store = OffsetStore()
    _commit(store, "g", {("gone", 0): om(2)})
    later = T0 + 10 * RETENTION
    for info in [
        (GroupState.PREPARING_REBALANCE, T0, {"a"}),
        (GroupState.COMPLETING_REBALANCE, T0, {"a"}),
        (GroupState.STABLE, T0, None),
    ]:
        assert store.expired_offsets(later, RETENTION, lambda g, i=info: i) == {}


def test_explicit_expire_timestamp():
    store = OffsetStore()
    _commit(store, "g", {("t", 0): om(1, ts=T0, expire=T0 + 1000), ("t", 1): om(2, ts=T0)})

    def stable(g):
        return (GroupState.STABLE, T0, set())

    def empty(g):
        return (GroupState.EMPTY, T0, None)

    # before the expire timestamp nothing goes, long retention notwithstanding
    assert store.expired_offsets(T0 + 999, RETENTION, empty) == {}
    assert store.expired_offsets(T0 + 1000, RETENTION, empty) == {
        "g": {("t", 0): om(1, ts=T0, expire=T0 + 1000)}
    }
    # a short retention does not expire it before its explicit timestamp
    assert store.expired_offsets(T0 + 500, 100, stable) == {"g": {("t", 1): om(2, ts=T0)}}


def test_standalone_offsets_expire_by_commit_timestamp():
    store = OffsetStore()
    _commit(store, "s", {("t", 0): om(1, ts=T0), ("t", 1): om(2, ts=T0 + 5000)})

    def none(g):
        return None

    assert store.expired_offsets(T0 + RETENTION - 1, RETENTION, none) == {}
    assert store.expired_offsets(T0 + RETENTION + 4999, RETENTION, none) == {
        "s": {("t", 0): om(1, ts=T0)}
    }
    assert store.expired_offsets(T0 + RETENTION + 5000, RETENTION, none) == {
        "s": {("t", 0): om(1, ts=T0), ("t", 1): om(2, ts=T0 + 5000)}
    }


def test_pending_commit_blocks_expiry():
    store = OffsetStore()
    _commit(store, "s", {("t", 0): om(1, ts=T0)})
    store.prepare_commit("s", {("t", 0): om(2, ts=T0 + RETENTION)})
    assert store.expired_offsets(T0 + RETENTION, RETENTION, lambda g: None) == {}


def test_expire_then_remove_and_tombstone():
    store = OffsetStore()
    _commit(store, "s", {("t", 0): om(1, ts=T0)})
    expired = store.expired_offsets(T0 + RETENTION, RETENTION, lambda g: None)
    tps = list(expired["s"])
    tombs = store.tombstones_for("s", tps)
    assert [decode_record(k, v) for k, v in tombs] == [(OffsetKey("s", "t", 0), None)]
    assert store.remove_offsets("s", tps) == {("t", 0): om(1, ts=T0)}
    assert store.all_committed("s") == {}
    assert store.remove_offsets("s", tps) == {}


# ------------------------------------------------------------------ delete


def test_delete_group_tombstones_decode_to_its_keys():
    store = OffsetStore()
    _commit(store, "g", {("t", 1): om(1), ("t", 0): om(2), ("u", 3): om(3)})
    _commit(store, "other", {("t", 0): om(9)})
    tombs = store.delete_group("g")
    assert all(v is None for _, v in tombs)
    keys = [decode_record(k, v)[0] for k, v in tombs]
    assert keys == [
        OffsetKey("g", "t", 0),
        OffsetKey("g", "t", 1),
        OffsetKey("g", "u", 3),
        GroupMetadataKey("g"),
    ]
    assert store.all_committed("g") == {}
    assert store.committed("other", ("t", 0)) == om(9)
    # replaying the log with the tombstones appended leaves nothing for g
    replay = OffsetStore()
    groups = replay.load(
        [group_rec("g", 1), offset_rec("g", "t", 0, 2), offset_rec("g", "u", 3, 3), *tombs]
    )
    assert groups == {}
    assert replay.all_committed("g") == {}


def test_delete_unknown_group_tombstones_only_metadata():
    store = OffsetStore()
    tombs = store.delete_group("ghost")
    assert [decode_record(k, v) for k, v in tombs] == [(GroupMetadataKey("ghost"), None)]
