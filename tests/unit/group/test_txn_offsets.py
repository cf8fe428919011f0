"""Transactional offset commits in the group coordinator (KIP-98, KIP-447; Kafka 2.8).

Same facts as Kafka 2.8's GroupCoordinatorTest / GroupMetadataManagerTest /
GroupMetadataTest for TxnOffsetCommit (own code): pending offsets per producer,
completion by COMMIT/ABORT markers, the ordering against plain commits, the
transactional batch written, load replay with markers, ``require_stable``, the
v3 member/generation fencing, expiry and deletion while a transaction is open.
"""

from __future__ import annotations

from mafka.errors import ErrorCode as E
from mafka.group.offsets import (
    CommitRecordMetadataAndOffset,
    GroupOffsets,
    LogRecord,
    OffsetStore,
    TxnMarker,
)
from mafka.group.offsets_records import (
    GroupMetadataKey,
    OffsetKey,
    OffsetValue,
    encode_key,
    encode_value,
)
from tests.unit.group.coordinator_harness import GROUP, RETENTION, TP, TP1, Box, H, om, other_group
from tests.unit.group.fakes import T0

PID, EPOCH = 1000, 3
PID2 = 2000


def txn_commit(h: H, offsets, *, pid=PID, epoch=EPOCH, member="", generation=-1, instance=None, group=GROUP) -> Box:
    box = Box()
    h.c.commit_transactional_offsets(group, pid, epoch, member, generation, instance, offsets, box)
    return box


def end_txn(h: H, commit: bool, *, pid=PID) -> None:
    """What the broker does for WriteTxnMarkers: write the marker, then tell the coordinator."""
    h.log.marker(h.p, pid, commit)
    h.c.complete_transaction(h.p, pid, commit)


def offsets_of(h: H, partitions, group=GROUP, require_stable=False):
    error, entries = h.fetch(partitions, group=group, require_stable=require_stable)
    assert error == E.NONE
    return {tp: (e.offset, e.error) for tp, e in entries.items()}


def reload(h: H, epoch: int = 2) -> H:
    """A new coordinator that replays what ``h`` made durable."""
    h2 = H(clock=h.clock, load=False)
    assert h2.c.on_elected(h.p, epoch)
    assert h2.c.complete_load(h.p, epoch, list(h.log.durable[h.p]))
    return h2


# ------------------------------------------------------------------ pending → commit / abort


def test_txn_offsets_are_invisible_until_the_transaction_commits():
    h = H()
    assert txn_commit(h, {TP: om(5), TP1: om(6)}).value == {TP: E.NONE, TP1: E.NONE}
    assert offsets_of(h, [TP, TP1]) == {TP: (-1, E.NONE), TP1: (-1, E.NONE)}
    end_txn(h, True)
    assert offsets_of(h, [TP, TP1]) == {TP: (5, E.NONE), TP1: (6, E.NONE)}
    # Without a partition list only committed offsets are listed.
    assert sorted(h.fetch()[1]) == [TP, TP1]


def test_aborted_txn_offsets_are_dropped():
    h = H()
    h.commit("", -1, {TP: om(1)})
    txn_commit(h, {TP: om(5), TP1: om(6)})
    end_txn(h, False)
    assert offsets_of(h, [TP, TP1]) == {TP: (1, E.NONE), TP1: (-1, E.NONE)}
    h.c.complete_transaction(h.p, PID, True)  # a late marker finds nothing to commit
    assert offsets_of(h, [TP, TP1]) == {TP: (1, E.NONE), TP1: (-1, E.NONE)}
    assert offsets_of(reload(h), [TP, TP1], require_stable=True) == {TP: (1, E.NONE), TP1: (-1, E.NONE)}


def test_the_transactional_batch_carries_the_producer():
    h = H()
    before = len(h.log.appends)
    txn_commit(h, {TP: om(5, metadata="m")})
    assert h.log.producers[before:] == [(PID, EPOCH)]
    assert h.log.decoded(before) == [(OffsetKey(GROUP, "foo", 0), OffsetValue(5, -1, "m", T0, None))]
    h.commit("", -1, {TP1: om(1)})
    assert h.log.producers[-1] == (-1, -1)  # plain commits stay non-transactional


def test_completion_only_touches_the_given_producer():
    h = H()
    txn_commit(h, {TP: om(5)}, pid=PID)
    txn_commit(h, {TP1: om(7)}, pid=PID2)
    end_txn(h, True, pid=PID2)
    assert offsets_of(h, [TP, TP1], require_stable=True) == {TP: (-1, E.UNSTABLE_OFFSET_COMMIT), TP1: (7, E.NONE)}
    end_txn(h, True)
    assert offsets_of(h, [TP, TP1], require_stable=True) == {TP: (5, E.NONE), TP1: (7, E.NONE)}


def test_completion_applies_to_every_group_of_the_partition_with_offsets_of_the_producer():
    h = H()
    same = next(f"g-{i}" for i in range(10_000) if h.c.partition_for(f"g-{i}") == h.p)
    txn_commit(h, {TP: om(5)})
    txn_commit(h, {TP: om(8)}, group=same)
    end_txn(h, True)
    assert offsets_of(h, [TP]) == {TP: (5, E.NONE)}
    assert offsets_of(h, [TP], group=same) == {TP: (8, E.NONE)}


def test_a_later_commit_in_the_same_transaction_replaces_the_earlier():
    h = H()
    txn_commit(h, {TP: om(5)})
    txn_commit(h, {TP: om(9)})
    end_txn(h, True)
    assert offsets_of(h, [TP]) == {TP: (9, E.NONE)}


# ------------------------------------------------------------------ ordering against plain commits


def test_a_plain_commit_appended_after_the_txn_commit_wins():
    """Kafka's completePendingTxnOffsetCommit: a committed offset from a later batch stays."""
    h = H()
    txn_commit(h, {TP: om(5)})
    h.commit("", -1, {TP: om(3)})
    end_txn(h, True)
    assert offsets_of(h, [TP]) == {TP: (3, E.NONE)}
    assert offsets_of(reload(h), [TP]) == {TP: (3, E.NONE)}


def test_a_txn_commit_appended_after_a_plain_commit_wins():
    h = H()
    h.commit("", -1, {TP: om(3)})
    txn_commit(h, {TP: om(5)})
    assert offsets_of(h, [TP]) == {TP: (3, E.NONE)}
    end_txn(h, True)
    assert offsets_of(h, [TP]) == {TP: (5, E.NONE)}
    assert offsets_of(reload(h), [TP]) == {TP: (5, E.NONE)}


# ------------------------------------------------------------------ append failures


def test_a_failed_append_drops_the_pending_offsets_and_maps_the_error():
    h = H()
    h.log.auto = False
    box = txn_commit(h, {TP: om(5)})
    assert not box.done
    assert offsets_of(h, [TP], require_stable=True) == {TP: (-1, E.UNSTABLE_OFFSET_COMMIT)}
    h.log.release(E.NOT_LEADER_OR_FOLLOWER)
    assert box.value == {TP: E.NOT_COORDINATOR}
    assert offsets_of(h, [TP], require_stable=True) == {TP: (-1, E.NONE)}
    end_txn(h, True)
    assert offsets_of(h, [TP]) == {TP: (-1, E.NONE)}


def test_a_fenced_producer_epoch_is_answered_as_the_log_reports_it():
    h = H()
    h.log.auto = False
    box = txn_commit(h, {TP: om(5)}, epoch=1)
    h.log.release(E.INVALID_PRODUCER_EPOCH)
    assert box.value == {TP: E.INVALID_PRODUCER_EPOCH}


def test_metadata_too_large_is_refused_per_partition():
    h = H(offset_metadata_max_bytes=3)
    assert txn_commit(h, {TP: om(5, metadata="long"), TP1: om(6)}).value == {
        TP: E.OFFSET_METADATA_TOO_LARGE, TP1: E.NONE}


def test_a_marker_before_the_append_completed_drops_the_offsets():
    """Kafka throws there (no batch offset to order by); Mafka logs and drops."""
    h = H()
    h.log.auto = False
    box = txn_commit(h, {TP: om(5)})
    end_txn(h, True)
    h.log.release()
    assert box.value == {TP: E.NONE}
    assert offsets_of(h, [TP], require_stable=True) == {TP: (-1, E.NONE)}


# ------------------------------------------------------------------ validation and fencing


def test_status_errors():
    h = H()
    assert txn_commit(h, {TP: om(1)}, group="").value == {TP: E.INVALID_GROUP_ID}  # unlike OffsetCommit
    other = other_group(h.c)
    assert txn_commit(h, {TP: om(1)}, group=other).value == {TP: E.NOT_COORDINATOR}
    assert h.c.on_elected(h.c.partition_for(other), 1)
    assert txn_commit(h, {TP: om(1)}, group=other).value == {TP: E.COORDINATOR_LOAD_IN_PROGRESS}
    h.c.shutdown()
    assert txn_commit(h, {TP: om(1)}).value == {TP: E.COORDINATOR_NOT_AVAILABLE}


def test_an_unknown_group_is_created_empty():
    h = H()
    assert h.c.describe_group(GROUP)[1].state == "Dead"
    txn_commit(h, {TP: om(1)})
    assert h.state() == "Empty"


def test_v0_to_v2_commits_are_not_fenced_by_the_group():
    """No member id and generation -1: accepted whatever the group's state (doTxnCommitOffsets)."""
    h = H()
    h.single_stable()
    assert txn_commit(h, {TP: om(1)}).value == {TP: E.NONE}


def test_v3_member_and_generation_fencing():
    h = H()
    mid, gen = h.single_stable()
    assert txn_commit(h, {TP: om(1)}, member="ghost", generation=gen).value == {TP: E.UNKNOWN_MEMBER_ID}
    assert txn_commit(h, {TP: om(1)}, member=mid, generation=gen + 1).value == {TP: E.ILLEGAL_GENERATION}
    assert txn_commit(h, {TP: om(1)}, member=mid, generation=gen).value == {TP: E.NONE}
    # Each check applies only to what the request carries.
    assert txn_commit(h, {TP: om(2)}, member="", generation=gen + 1).value == {TP: E.ILLEGAL_GENERATION}
    assert txn_commit(h, {TP: om(2)}, member=mid, generation=-1).value == {TP: E.NONE}


def test_v3_member_of_an_unknown_group_is_unknown():
    h = H()
    assert txn_commit(h, {TP: om(1)}, member="m", generation=1).value == {TP: E.UNKNOWN_MEMBER_ID}


def test_v3_commit_is_accepted_while_the_group_rebalances():
    h = H()
    leader, follower, gen = h.pair_stable()
    h.join(member_id=leader)  # PreparingRebalance, generation unchanged
    assert h.state() == "PreparingRebalance"
    assert txn_commit(h, {TP: om(1)}, member=follower, generation=gen).value == {TP: E.NONE}


def test_v3_replaced_static_member_is_fenced():
    h = H()
    old_id, gen = h.single_stable(instance="inst")
    rejoined = h.join(instance="inst")
    new_id = rejoined.value.member_id
    assert new_id != old_id
    assert txn_commit(h, {TP: om(1)}, member=old_id, generation=gen, instance="inst").value == {
        TP: E.FENCED_INSTANCE_ID}
    assert txn_commit(h, {TP: om(1)}, member=new_id, generation=gen, instance="inst").value == {TP: E.NONE}


# ------------------------------------------------------------------ require_stable (KIP-447)


def test_require_stable_reports_partitions_in_an_open_transaction():
    h = H()
    h.commit("", -1, {TP1: om(1)})
    txn_commit(h, {TP: om(5)})
    assert offsets_of(h, [TP, TP1]) == {TP: (-1, E.NONE), TP1: (1, E.NONE)}
    assert offsets_of(h, [TP, TP1], require_stable=True) == {TP: (-1, E.UNSTABLE_OFFSET_COMMIT), TP1: (1, E.NONE)}
    end_txn(h, False)
    assert offsets_of(h, [TP, TP1], require_stable=True) == {TP: (-1, E.NONE), TP1: (1, E.NONE)}


def test_require_stable_over_every_committed_partition():
    h = H()
    h.commit("", -1, {TP: om(1), TP1: om(2)})
    txn_commit(h, {TP: om(5)})
    _, entries = h.fetch(None, require_stable=True)
    assert {tp: e.error for tp, e in entries.items()} == {TP: E.UNSTABLE_OFFSET_COMMIT, TP1: E.NONE}


# ------------------------------------------------------------------ loading


def test_reload_replays_commit_abort_and_open_transactions():
    h = H()
    h.commit("", -1, {TP: om(1), TP1: om(2)})
    txn_commit(h, {TP: om(5)}, pid=PID)
    txn_commit(h, {TP1: om(6)}, pid=PID2)
    txn_commit(h, {("bar", 0): om(7)}, pid=3000)
    h.log.marker(h.p, PID, True)
    h.log.marker(h.p, PID2, False)
    h2 = reload(h)
    assert offsets_of(h2, [TP, TP1, ("bar", 0)], require_stable=True) == {
        TP: (5, E.NONE), TP1: (2, E.NONE), ("bar", 0): (-1, E.UNSTABLE_OFFSET_COMMIT)}
    # The open transaction stays pending after the load and completes with its marker.
    h2.c.complete_transaction(h.p, 3000, True)
    assert offsets_of(h2, [("bar", 0)], require_stable=True) == {("bar", 0): (7, E.NONE)}


def test_a_group_with_only_an_open_transaction_is_loaded_empty():
    h = H()
    txn_commit(h, {TP: om(5)})
    h2 = reload(h)
    assert h2.state() == "Empty"
    assert offsets_of(h2, [TP], require_stable=True) == {TP: (-1, E.UNSTABLE_OFFSET_COMMIT)}


def test_a_marker_written_while_loading_is_applied_after_the_load():
    h = H()
    txn_commit(h, {TP: om(5)})
    records = list(h.log.durable[h.p])  # read before the marker was written
    h2 = H(clock=h.clock, load=False)
    assert h2.c.on_elected(h.p, 2)
    h2.c.complete_transaction(h.p, PID, True)
    assert h2.c.complete_load(h.p, 2, records)
    assert offsets_of(h2, [TP], require_stable=True) == {TP: (5, E.NONE)}


def test_markers_seen_while_loading_are_forgotten_when_leadership_moves_on():
    h = H()
    txn_commit(h, {TP: om(5)})
    records = list(h.log.durable[h.p])
    h2 = H(clock=h.clock, load=False)
    assert h2.c.on_elected(h.p, 2)
    h2.c.complete_transaction(h.p, PID, True)
    h2.c.on_resigned(h.p, 3)
    assert h2.c.on_elected(h.p, 4)
    assert h2.c.complete_load(h.p, 4, records)
    assert offsets_of(h2, [TP], require_stable=True) == {TP: (-1, E.UNSTABLE_OFFSET_COMMIT)}


def test_a_marker_on_a_partition_not_owned_is_ignored():
    h = H()
    other = other_group(h.c)
    h.c.complete_transaction(h.c.partition_for(other), PID, True)  # nothing to do, no error
    h.c.on_resigned(h.p)
    end_txn(h, True)


def test_load_accepts_bare_pairs_as_plain_records():
    key = encode_key(OffsetKey(GROUP, "foo", 0))
    value = encode_value(OffsetValue(4, -1, "", T0, None))
    store = OffsetStore()
    store.load([(key, value)])
    assert store.committed(GROUP, TP).offset == 4


def test_load_ordering_of_a_committed_transaction_against_plain_commits():
    """doLoadGroupsAndOffsets: on COMMIT, a txn offset replaces a plain one only from a later batch."""
    key = encode_key(OffsetKey(GROUP, "foo", 0))

    def value(offset):
        return encode_value(OffsetValue(offset, -1, "", T0, None))

    store = OffsetStore()
    store.load([
        LogRecord(key, value(5), PID, True, 10),
        LogRecord(key, value(3), -1, False, 11),
        TxnMarker(PID, True, 12),
    ])
    assert store.committed(GROUP, TP).offset == 3
    store = OffsetStore()
    store.load([
        LogRecord(key, value(3), -1, False, 10),
        LogRecord(key, value(5), PID, True, 11),
        TxnMarker(PID, True, 12),
    ])
    assert store.committed(GROUP, TP).offset == 5


def test_group_offsets_completion_rules():
    """GroupMetadataTest's transactional cases on GroupOffsets directly."""
    g = GroupOffsets(GROUP)
    g.prepare_txn_commit(PID, {TP: om(5)})
    assert g.has_pending_from_producer(PID) and g.has_pending_for(TP) and g.has_offsets()
    assert g.committed(TP) is None
    g.complete_txn_commit(PID, {TP: om(5)}, True, 7)
    assert g.pending_txn[PID][TP] == CommitRecordMetadataAndOffset(7, om(5))
    g.complete_txn(PID, True)
    assert g.committed(TP) == om(5) and not g.has_pending_from_producer(PID)
    g.prepare_txn_commit(PID, {TP: om(6)})
    g.complete_txn_commit(PID, {TP: om(6)}, False)
    assert not g.has_pending_from_producer(PID) and g.committed(TP) == om(5)


# ------------------------------------------------------------------ expiry and deletion


def test_an_empty_group_with_an_open_transaction_is_not_expired_to_dead():
    h = H()
    txn_commit(h, {TP: om(5, ts=T0)})
    h.clock.now = T0 + 2 * RETENTION
    assert h.c.expire_offsets() == 0
    assert h.state() == "Empty"
    end_txn(h, False)
    h.c.expire_offsets()
    assert h.state() == "Dead"


def test_expiry_of_a_committed_offset_keeps_the_pending_txn_offset():
    """Kafka's removeExpiredOffsets protects only plain in-flight commits."""
    h = H()
    h.commit("", -1, {TP: om(1, ts=T0)})
    txn_commit(h, {TP: om(5, ts=T0 + RETENTION)})
    h.clock.now = T0 + RETENTION
    assert h.c.expire_offsets() == 1
    assert offsets_of(h, [TP], require_stable=True) == {TP: (-1, E.UNSTABLE_OFFSET_COMMIT)}
    end_txn(h, True)
    assert offsets_of(h, [TP]) == {TP: (5, E.NONE)}


def test_offset_delete_removes_the_partition_from_open_transactions():
    h = H()
    txn_commit(h, {TP: om(5), TP1: om(6)})
    box = Box()
    h.c.delete_offsets(GROUP, [TP], lambda error, results: box((error, results)))
    assert box.value == (E.NONE, {TP: E.NONE})
    end_txn(h, True)
    assert offsets_of(h, [TP, TP1]) == {TP: (-1, E.NONE), TP1: (6, E.NONE)}


def test_a_deleted_group_gets_nothing_back_from_its_transaction():
    h = H()
    h.log.auto = False
    box = txn_commit(h, {TP: om(5)})
    h.log.auto = True
    deleted = Box()
    h.c.delete_groups([GROUP], deleted)
    h.log.release()
    assert box.value == {TP: E.NONE} and deleted.value == {GROUP: E.NONE}
    end_txn(h, True)
    assert h.fetch() == (E.NONE, {})
    assert GROUP not in h.c.group_manager.offset_store(h.p).groups


def test_a_group_tombstone_does_not_hide_an_open_transaction_on_reload():
    h = H()
    txn_commit(h, {TP: om(5)})
    h.log.durable[h.p].append(LogRecord(encode_key(GroupMetadataKey(GROUP)), None))
    h.log.marker(h.p, PID, True)
    assert offsets_of(reload(h), [TP]) == {TP: (5, E.NONE)}
