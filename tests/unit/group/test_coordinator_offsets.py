"""The group coordinator's storage side: OffsetCommit/OffsetFetch, the records written to
__consumer_offsets and reloaded, ListGroups/DescribeGroups/DeleteGroups and offset expiry.

Scenarios follow Kafka 2.8's GroupCoordinatorTest and GroupMetadataManagerTest (same
facts, own code); the harness is :mod:`tests.unit.group.coordinator_harness`.
"""

from __future__ import annotations

import pytest

from mafka.errors import ErrorCode as E
from mafka.group.coordinator import JoinResult, SyncResult
from mafka.group.offsets_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetKey,
    OffsetValue,
)
from tests.unit.group.coordinator_harness import (
    DELAY,
    GROUP,
    REBALANCE,
    RETENTION,
    SESSION,
    TP,
    TP1,
    Box,
    H,
    om,
    other_group,
)
from tests.unit.group.fakes import T0, Clock

# ------------------------------------------------------------------ OffsetCommit / OffsetFetch


def test_commit_with_no_generation_creates_offsets_only_group():
    h = H()
    assert h.commit("", -1, {TP: om(10, "m")}).value == {TP: E.NONE}
    error, fetched = h.fetch([TP])
    assert error == E.NONE
    assert (fetched[TP].offset, fetched[TP].metadata, fetched[TP].error) == (10, "m", E.NONE)
    assert h.state() == "Empty"
    assert [(g.group_id, g.protocol_type, g.state) for g in h.c.list_groups()[1]] == [(GROUP, "", "Empty")]


def test_commit_with_generation_to_missing_group_is_illegal_generation():
    h = H()
    assert h.commit("m", 1, {TP: om(1)}).value == {TP: E.ILLEGAL_GENERATION}
    assert h.state() == "Dead"
    assert h.log.appends == []


def test_commit_to_empty_group_without_generation():
    h = H()
    mid, gen = h.single_stable()
    h.leave((mid, None))
    assert h.commit("", -1, {TP: om(4)}).value == {TP: E.NONE}
    # a commit with the old generation is refused
    assert h.commit(mid, gen, {TP: om(5)}).value == {TP: E.UNKNOWN_MEMBER_ID}
    assert h.fetch([TP])[1][TP].offset == 4


def test_commit_errors_in_non_empty_group():
    h = H()
    leader, follower, gen = h.pair_stable()
    assert h.commit("nobody", gen, {TP: om(1)}).value == {TP: E.UNKNOWN_MEMBER_ID}
    assert h.commit(leader, gen + 1, {TP: om(1)}).value == {TP: E.ILLEGAL_GENERATION}
    assert h.commit("", -1, {TP: om(1)}).value == {TP: E.UNKNOWN_MEMBER_ID}
    assert h.commit(leader, gen, {TP: om(1)}).value == {TP: E.NONE}


def test_commit_in_completing_rebalance_is_rebalance_in_progress():
    h = H()
    j = h.join()
    h.timers.advance(DELAY)
    r = j.value
    assert h.commit(r.member_id, r.generation_id, {TP: om(1)}).value == {TP: E.REBALANCE_IN_PROGRESS}
    assert h.commit("nobody", r.generation_id, {TP: om(1)}).value == {TP: E.UNKNOWN_MEMBER_ID}
    assert h.commit(r.member_id, r.generation_id + 1, {TP: om(1)}).value == {TP: E.ILLEGAL_GENERATION}


def test_commit_allowed_in_preparing_rebalance():
    h = H()
    leader, follower, gen = h.pair_stable()
    h.join(member_id=leader)
    assert h.state() == "PreparingRebalance"
    assert h.commit(follower, gen, {TP: om(7)}).value == {TP: E.NONE}
    assert h.fetch([TP])[1][TP].offset == 7


def test_offset_metadata_too_large():
    h = H(offset_metadata_max_bytes=10)
    result = h.commit("", -1, {TP: om(1, "x" * 11), TP1: om(2, "y" * 10)}).value
    assert result == {TP: E.OFFSET_METADATA_TOO_LARGE, TP1: E.NONE}
    _, fetched = h.fetch([TP, TP1])
    assert fetched[TP].offset == -1 and fetched[TP1].offset == 2
    assert h.commit("", -1, {TP: om(1, "x" * 11)}).value == {TP: E.OFFSET_METADATA_TOO_LARGE}
    # Kafka measures String.length(): UTF-16 code units, not UTF-8 bytes
    assert h.commit("", -1, {TP: om(3, "é" * 10)}).value == {TP: E.NONE}


@pytest.mark.parametrize("append_error, commit_error", [
    (E.NOT_LEADER_OR_FOLLOWER, E.NOT_COORDINATOR),
    (E.NOT_ENOUGH_REPLICAS, E.COORDINATOR_NOT_AVAILABLE),
    (E.MESSAGE_TOO_LARGE, E.INVALID_COMMIT_OFFSET_SIZE),
    (E.REQUEST_TIMED_OUT, E.REQUEST_TIMED_OUT),
])
def test_commit_append_failure_mapping(append_error, commit_error):
    h = H()
    assert h.commit("", -1, {TP: om(1)}).value == {TP: E.NONE}
    h.log.auto = False
    box = h.commit("", -1, {TP: om(2)})
    assert not box.done
    h.log.release(append_error)
    assert box.value == {TP: commit_error}
    assert h.fetch([TP])[1][TP].offset == 1  # the failed commit is not visible


def test_fetch_unknown_partitions_and_all_offsets():
    h = H()
    error, fetched = h.fetch([TP])
    assert error == E.NONE and fetched[TP].offset == -1 and fetched[TP].error == E.NONE
    assert h.fetch(None) == (E.NONE, {})
    h.commit("", -1, {TP: om(1), TP1: om(2), ("bar", 0): om(3)})
    _, fetched = h.fetch([TP, ("baz", 9)])
    assert fetched[TP].offset == 1 and fetched[("baz", 9)].offset == -1
    _, everything = h.fetch(None)
    assert {tp: e.offset for tp, e in everything.items()} == {TP: 1, TP1: 2, ("bar", 0): 3}


def test_fetch_require_stable_with_pending_commit():
    h = H()
    h.commit("", -1, {TP: om(1)})
    h.log.auto = False
    box = h.commit("", -1, {TP: om(2)})
    _, fetched = h.fetch([TP, TP1], require_stable=True)
    assert fetched[TP].error == E.UNSTABLE_OFFSET_COMMIT and fetched[TP].offset == -1
    assert fetched[TP1].error == E.NONE
    assert h.fetch([TP])[1][TP].offset == 1  # without require_stable: the committed offset
    h.log.release(E.NONE)
    assert box.value == {TP: E.NONE}
    _, fetched = h.fetch([TP], require_stable=True)
    assert fetched[TP].error == E.NONE and fetched[TP].offset == 2


# ------------------------------------------------------------------ records and reload


def _reload(h: H, epoch: int = 2) -> H:
    h2 = H(clock=Clock(h.clock.now), load=False)
    assert h2.c.on_elected(h.p, epoch)
    assert h2.c.complete_load(h.p, epoch, list(h.log.durable[h.p]))
    return h2


def test_appended_records_decode():
    h = H()
    leader, follower, gen = h.pair_stable("leader-i", None)
    h.commit(leader, gen, {TP: om(5, "meta")})
    decoded = h.log.decoded()
    groups = [(k, v) for k, v in decoded if isinstance(k, GroupMetadataKey)]
    offsets = [(k, v) for k, v in decoded if isinstance(k, OffsetKey)]
    assert groups and offsets
    key, value = groups[-1]
    assert key == GroupMetadataKey(GROUP)
    assert isinstance(value, GroupMetadataValue)
    assert (value.protocol_type, value.generation, value.protocol, value.leader) == ("consumer", gen, "range", leader)
    assert value.current_state_timestamp >= T0
    members = {m.member_id: m for m in value.members}
    assert members[leader].group_instance_id == "leader-i"
    assert members[follower].group_instance_id is None
    assert (members[leader].subscription, members[leader].assignment) == (b"range-meta", b"L")
    assert (members[follower].session_timeout, members[follower].rebalance_timeout) == (SESSION, REBALANCE)
    assert members[follower].client_id == "follower" and members[follower].client_host == "/10.0.0.1"
    assert offsets == [(OffsetKey(GROUP, "foo", 0), OffsetValue(5, -1, "meta", T0, None))]
    assert all(p == h.p for p, _ in h.log.appends)


def test_reload_restores_stable_group_and_offsets():
    h = H()
    leader, follower, gen = h.pair_stable("leader-i", None)
    h.commit(leader, gen, {TP: om(5, "meta"), TP1: om(6)})
    h2 = _reload(h)
    summary = h2.describe()
    assert (summary.state, summary.protocol_type, summary.protocol) == ("Stable", "consumer", "range")
    assert {(m.member_id, m.group_instance_id, m.metadata, m.assignment) for m in summary.members} == {
        (leader, "leader-i", b"range-meta", b"L"), (follower, None, b"range-meta", b"F")}
    assert h2.sync(follower, gen).value == SyncResult(E.NONE, b"F", "consumer", "range")
    assert h2.hb(leader, gen, instance="leader-i") == E.NONE
    assert h2.hb(leader, gen + 1) == E.ILLEGAL_GENERATION
    _, fetched = h2.fetch(None)
    assert {tp: (e.offset, e.metadata) for tp, e in fetched.items()} == {TP: (5, "meta"), TP1: (6, "")}
    # the leader is still the leader: its rejoin rebalances to gen + 1
    lj = h2.join(member_id=leader, instance="leader-i")
    fj = h2.join(member_id=follower)
    assert lj.value.generation_id == gen + 1 and lj.value.leader_id == leader
    assert len(lj.value.members) == 2 and fj.value.members == []


def test_reloaded_members_expire_without_heartbeats():
    h = H()
    leader, follower, gen = h.pair_stable()
    h2 = _reload(h)
    h2.timers.advance(SESSION - 1)
    assert h2.hb(leader, gen) == E.NONE
    h2.timers.advance(1)  # the follower never heartbeated after the load
    assert h2.hb(follower, gen) == E.UNKNOWN_MEMBER_ID
    assert h2.hb(leader, gen) == E.REBALANCE_IN_PROGRESS


def test_reload_restores_empty_group():
    h = H()
    mid, gen = h.single_stable()
    h.commit(mid, gen, {TP: om(9)})
    h.leave((mid, None))
    assert h.state() == "Empty"
    h2 = _reload(h)
    assert h2.state() == "Empty"
    assert h2.describe().protocol_type == "consumer"
    assert h2.fetch([TP])[1][TP].offset == 9
    j = h2.join()
    h2.timers.advance(DELAY)
    assert j.value.generation_id == gen + 2  # gen + 1 was the Empty generation


def test_reload_of_offsets_only_group():
    h = H()
    h.commit("", -1, {TP: om(3)})
    h2 = _reload(h)
    assert h2.state() == "Empty"
    assert h2.fetch([TP])[1][TP].offset == 3


def test_unload_and_reload_on_same_coordinator():
    h = H()
    leader, follower, gen = h.pair_stable()
    h.c.on_resigned(h.p, 1)
    assert h.hb(leader, gen) == E.NOT_COORDINATOR
    assert h.c.on_elected(h.p, 2)
    assert h.c.complete_load(h.p, 2, list(h.log.durable[h.p]))
    assert h.state() == "Stable"
    assert h.hb(leader, gen) == E.NONE


# ------------------------------------------------------------------ ListGroups / DescribeGroups / DeleteGroups


def test_list_groups():
    h = H()
    assert h.c.list_groups() == (E.NONE, [])
    h.single_stable()
    other = other_group(h.c)
    h.own(h.c.partition_for(other))
    h.join(group=other)
    error, groups = h.c.list_groups()
    assert error == E.NONE
    assert sorted((g.group_id, g.protocol_type, g.state) for g in groups) == sorted([
        (GROUP, "consumer", "Stable"), (other, "consumer", "PreparingRebalance")])


def test_describe_stable_group():
    h = H()
    leader, follower, gen = h.pair_stable("leader-i", None)
    s = h.describe()
    assert (s.state, s.protocol_type, s.protocol) == ("Stable", "consumer", "range")
    assert {(m.member_id, m.group_instance_id, m.client_id, m.client_host, m.metadata, m.assignment)
            for m in s.members} == {
        (leader, "leader-i", "leader", "/10.0.0.1", b"range-meta", b"L"),
        (follower, None, "follower", "/10.0.0.1", b"range-meta", b"F")}


def test_describe_rebalancing_group_has_no_metadata():
    h = H()
    leader, follower, gen = h.pair_stable()
    h.join(member_id=leader)
    s = h.describe()
    assert (s.state, s.protocol_type, s.protocol) == ("PreparingRebalance", "consumer", "")
    assert len(s.members) == 2
    assert all(m.metadata == b"" and m.assignment == b"" for m in s.members)
    h.join(member_id=follower)
    s = h.describe()
    assert s.state == "CompletingRebalance" and s.protocol == ""
    assert all(m.metadata == b"" and m.assignment == b"" for m in s.members)


def test_describe_unknown_group_is_dead():
    h = H()
    unknown = next(f"g-{i}" for i in range(10_000) if h.c.partition_for(f"g-{i}") == h.p)
    s = h.describe(unknown)
    assert (s.state, s.protocol_type, s.protocol, s.members) == ("Dead", "", "", [])
    h.single_stable()
    assert h.describe(unknown).state == "Dead"


def test_delete_empty_group():
    h = H()
    mid, gen = h.single_stable()
    h.commit(mid, gen, {TP: om(1), TP1: om(2)})
    h.leave((mid, None))
    before = len(h.log.appends)
    box = Box()
    h.c.delete_groups([GROUP], box)
    assert box.value == {GROUP: E.NONE}
    written = h.log.decoded(before)
    assert {k for k, v in written if v is None and isinstance(k, OffsetKey)} == {
        OffsetKey(GROUP, "foo", 0), OffsetKey(GROUP, "foo", 1)}
    assert (GroupMetadataKey(GROUP), None) in written
    assert h.state() == "Dead"
    assert h.fetch([TP])[1][TP].offset == -1
    assert h.c.list_groups() == (E.NONE, [])
    h2 = _reload(h)
    assert h2.state() == "Dead"
    assert h2.fetch(None) == (E.NONE, {})


def test_delete_group_named_twice():
    h = H()
    h.commit("", -1, {TP: om(1)})
    box = Box()
    h.c.delete_groups([GROUP, GROUP], box)
    assert box.value == {GROUP: E.NONE}
    assert h.state() == "Dead"


def test_delete_offsets_only_group_writes_no_group_tombstone():
    h = H()
    h.commit("", -1, {TP: om(1)})
    before = len(h.log.appends)
    box = Box()
    h.c.delete_groups([GROUP], box)
    assert box.value == {GROUP: E.NONE}
    assert h.log.decoded(before) == [(OffsetKey(GROUP, "foo", 0), None)]


def test_delete_non_empty_and_unknown_groups():
    h = H()
    h.single_stable()
    other = other_group(h.c)
    box = Box()
    h.c.delete_groups([GROUP, other, "", ], box)
    result = box.value
    assert result[GROUP] == E.NON_EMPTY_GROUP
    assert result[other] == E.NOT_COORDINATOR
    assert h.state() == "Stable"
    h.own(h.c.partition_for(other))
    box = Box()
    h.c.delete_groups([other], box)
    assert box.value == {other: E.GROUP_ID_NOT_FOUND}


def test_delete_group_append_failure_is_mapped():
    h = H()
    h.commit("", -1, {TP: om(1)})
    h.log.auto = False
    box = Box()
    h.c.delete_groups([GROUP], box)
    assert not box.done
    h.log.release(E.NOT_LEADER_OR_FOLLOWER)
    assert box.value == {GROUP: E.NOT_COORDINATOR}


# ------------------------------------------------------------------ offset expiry


def test_expire_offsets_of_offsets_only_group():
    h = H()
    h.commit("", -1, {TP: om(1, ts=T0)})
    h.clock.now = T0 + RETENTION - 1
    assert h.c.expire_offsets() == 0
    assert h.fetch([TP])[1][TP].offset == 1
    h.clock.now = T0 + RETENTION
    before = len(h.log.appends)
    assert h.c.expire_offsets() == 1
    assert h.log.decoded(before) == [(OffsetKey(GROUP, "foo", 0), None)]  # generation 0: no group tombstone
    assert h.fetch([TP])[1][TP].offset == -1
    assert h.state() == "Dead"


def test_expire_offsets_of_empty_group_uses_state_timestamp_and_deletes_group():
    h = H()
    mid, gen = h.single_stable(st=10 * 60 * 1000)
    h.commit(mid, gen, {TP: om(1, ts=T0)})
    h.timers.advance(1000)
    h.leave((mid, None))
    emptied_at = h.clock.now
    assert h.state() == "Empty"
    h.clock.now = emptied_at + RETENTION - 1
    assert h.c.expire_offsets() == 0  # counted from when the group became Empty
    h.clock.now = emptied_at + RETENTION
    before = len(h.log.appends)
    assert h.c.expire_offsets() == 1
    written = h.log.decoded(before)
    assert (OffsetKey(GROUP, "foo", 0), None) in written
    assert (GroupMetadataKey(GROUP), None) in written
    assert h.state() == "Dead"
    assert _reload(h).state() == "Dead"


def test_stable_group_offsets_do_not_expire_without_subscription_info():
    h = H()
    mid, gen = h.single_stable(st=10 * 60 * 1000)
    h.commit(mid, gen, {TP: om(1, ts=T0)})
    h.clock.now = T0 + 2 * RETENTION
    assert h.c.expire_offsets() == 0
    assert h.fetch([TP])[1][TP].offset == 1
    # with the subscription known, offsets of unsubscribed topics expire
    h.commit(mid, gen, {("bar", 0): om(2, ts=T0)})
    assert h.c.expire_offsets(lambda group: {"foo"}) == 1
    _, fetched = h.fetch([TP, ("bar", 0)])
    assert fetched[TP].offset == 1 and fetched[("bar", 0)].offset == -1
    assert h.state() == "Stable"


def test_results_are_plain_dataclasses():
    h = H()
    j = h.join()
    h.timers.advance(DELAY)
    assert isinstance(j.value, JoinResult)


def test_a_commit_completing_after_its_group_was_deleted_does_not_resurrect_offsets():
    h = H()
    h.log.auto = False
    box = h.commit("", -1, {("t", 0): om(5)})
    assert not box.done
    h.log.auto = True
    deleted = []
    h.c.delete_groups([GROUP], deleted.append)
    h.log.release(E.NONE, index=0)  # the commit's append completes after the deletion
    assert box.value == {("t", 0): E.NONE}
    assert deleted == [{GROUP: E.NONE}]
    assert h.fetch() == (E.NONE, {})
    assert GROUP not in h.c.group_manager.offset_store(h.p).groups  # no empty leftover that would outlive the group
