"""The group coordinator's membership over time: Heartbeat and session expiry, LeaveGroup,
static membership (KIP-345).

Scenarios follow Kafka 2.8's GroupCoordinatorTest (same facts, own code); the harness
is :mod:`tests.unit.group.coordinator_harness`.
"""

from __future__ import annotations

from mafka.errors import ErrorCode as E
from mafka.group.coordinator import SyncResult
from tests.unit.group.coordinator_harness import (
    DELAY,
    PROTOCOLS,
    REBALANCE,
    SESSION,
    SUPERSET,
    TP,
    H,
    group_with_pending_member,
    om,
)

# ------------------------------------------------------------------ Heartbeat


def test_heartbeat_errors_by_state():
    h = H()
    assert h.hb("m", 1) == E.UNKNOWN_MEMBER_ID  # unknown group
    j1, j2 = h.join(), h.join()
    h.timers.advance(2 * DELAY)
    leader, follower = j1.value.member_id, j2.value.member_id
    assert h.hb(leader, 1) == E.NONE  # CompletingRebalance
    assert h.hb("nobody", 1) == E.UNKNOWN_MEMBER_ID
    assert h.hb(leader, 2) == E.ILLEGAL_GENERATION
    h.sync(leader, 1, {})
    assert h.state() == "Stable"
    assert h.hb(follower, 1) == E.NONE
    h.join(member_id=leader)
    assert h.hb(follower, 1) == E.REBALANCE_IN_PROGRESS


def test_heartbeat_in_empty_group_is_unknown_member():
    h = H()
    mid, gen = h.single_stable()
    h.commit("", -1, {TP: om(1)})
    h.leave((mid, None))
    assert h.state() == "Empty"
    assert h.hb(mid, gen) == E.UNKNOWN_MEMBER_ID


def test_session_expiry_removes_member_and_rebalances():
    h = H()
    mid, gen = h.single_stable()
    h.timers.advance(SESSION - 1)
    assert h.state() == "Stable"
    before = len(h.log.appends)
    h.timers.advance(1)
    assert h.state() == "Empty"
    assert h.hb(mid, gen) == E.UNKNOWN_MEMBER_ID
    [value] = h.log.group_values(before)  # the Empty generation is persisted
    assert value.generation == gen + 1 and value.members == [] and value.protocol is None


def test_heartbeats_keep_member_alive():
    h = H()
    mid, gen = h.single_stable()
    for _ in range(6):
        h.timers.advance(SESSION // 2)
        assert h.hb(mid, gen) == E.NONE
    assert h.state() == "Stable"
    h.timers.advance(SESSION)
    assert h.hb(mid, gen) == E.UNKNOWN_MEMBER_ID


def test_commits_keep_member_alive():
    h = H()
    mid, gen = h.single_stable()
    h.timers.advance(SESSION - 100)
    assert h.commit(mid, gen, {TP: om(1)}).value == {TP: E.NONE}
    h.timers.advance(SESSION - 100)
    assert h.hb(mid, gen) == E.NONE


def test_session_expiry_during_rebalance_completes_the_join():
    h = H()
    leader, follower, gen = h.pair_stable(leader_st=10 * REBALANCE)
    lj = h.join(member_id=leader)
    h.timers.advance(SESSION)  # the follower stopped heartbeating; rebalance timeout not reached
    r = lj.value
    assert r.error == E.NONE and r.generation_id == gen + 1 and r.members == [(leader, None, b"range-meta")]


def test_member_awaiting_sync_is_not_expired_and_gets_a_fresh_session():
    h = H()
    j1, j2 = h.join(), h.join()
    h.timers.advance(2 * DELAY)
    leader, follower = j1.value.member_id, j2.value.member_id
    fs = h.sync(follower, 1)
    h.timers.advance(SESSION - 1)
    assert h.hb(leader, 1) == E.NONE
    h.timers.advance(1)  # the follower's session passed while it awaited its assignment
    assert not fs.done and len(h.describe().members) == 2
    h.sync(leader, 1, {})
    assert fs.value.error == E.NONE
    h.timers.advance(SESSION - 1)
    assert h.hb(follower, 1) == E.NONE


def test_leader_failure_in_sync_group_sends_follower_back_to_rejoin():
    h = H()
    first, gen = h.single_stable()
    other = h.join()
    lj = h.join(member_id=first)  # everyone rejoined: completes at once
    lr, fr = lj.value, other.value
    assert lr.error == fr.error == E.NONE
    assert lr.generation_id == fr.generation_id == gen + 1
    assert lr.leader_id == fr.leader_id == first
    fs = h.sync(fr.member_id, fr.generation_id)
    h.timers.advance(SESSION + 100)  # the leader never syncs nor heartbeats
    assert fs.value == SyncResult(E.REBALANCE_IN_PROGRESS, b"", None, None)
    assert h.state() == "PreparingRebalance"
    assert [m.member_id for m in h.describe().members] == [fr.member_id]


def test_new_member_follows_session_expiry_after_join_completes():
    h = H()
    first, gen = h.single_stable()
    other = h.join()
    h.join(member_id=first)
    assert other.value.error == E.NONE
    h.timers.advance(SESSION + 1)  # nobody syncs or heartbeats: not the 5-minute new-member timeout
    assert h.state() == "Empty"
    assert h.describe().members == []


# ------------------------------------------------------------------ LeaveGroup


def test_leave_by_member_id_triggers_rebalance():
    h = H()
    leader, follower, gen = h.pair_stable()
    assert h.leave((follower, None)) == (E.NONE, [(follower, None, E.NONE)])
    assert h.state() == "PreparingRebalance"
    assert h.hb(leader, gen) == E.REBALANCE_IN_PROGRESS
    r = h.join(member_id=leader).value
    assert r.generation_id == gen + 1 and r.members == [(leader, None, b"range-meta")]


def test_leave_of_last_member_empties_group():
    h = H()
    mid, gen = h.single_stable()
    assert h.leave((mid, None)) == (E.NONE, [(mid, None, E.NONE)])
    assert h.state() == "Empty"
    assert h.describe().members == []


def test_leave_by_instance_id_with_empty_member_id():
    h = H()
    leader, follower, gen = h.pair_stable("leader-i", "follower-i")
    assert h.leave(("", "follower-i"), ("", "nobody-i")) == (
        E.NONE, [("", "follower-i", E.NONE), ("", "nobody-i", E.UNKNOWN_MEMBER_ID)])
    assert {m.member_id for m in h.describe().members} == {leader}
    assert h.state() == "PreparingRebalance"


def test_leave_of_static_member_with_its_member_id():
    h = H()
    leader, follower, gen = h.pair_stable("leader-i", "follower-i")
    assert h.leave((leader, "leader-i"), (follower, "follower-i"))[1] == [
        (leader, "leader-i", E.NONE), (follower, "follower-i", E.NONE)]
    assert h.state() == "Empty"


def test_leave_of_pending_member_completes_the_join():
    h = H()
    leader, follower, gen, pending, lj, fj = group_with_pending_member(h)
    assert h.leave((pending, None)) == (E.NONE, [(pending, None, E.NONE)])
    assert lj.value.error == E.NONE and len(lj.value.members) == 2
    assert h.state() == "CompletingRebalance"
    # the pending id is gone
    assert h.join(member_id=pending, require_known=True).value.error == E.UNKNOWN_MEMBER_ID


def test_leave_with_fenced_instance_id():
    h = H()
    leader, follower, gen = h.pair_stable("leader-i", "follower-i")
    assert h.leave(("stale-id", "follower-i"))[1] == [("stale-id", "follower-i", E.FENCED_INSTANCE_ID)]
    assert h.state() == "Stable"


def test_leave_unknown_member_and_unknown_group():
    h = H()
    assert h.leave(("m", None), ("", "i")) == (E.NONE, [("m", None, E.UNKNOWN_MEMBER_ID),
                                                       ("", "i", E.UNKNOWN_MEMBER_ID)])
    h.single_stable()
    assert h.leave(("nobody", None))[1] == [("nobody", None, E.UNKNOWN_MEMBER_ID)]
    assert h.state() == "Stable"


# ------------------------------------------------------------------ static membership (KIP-345)


def test_static_leader_rejoin_in_stable_keeps_generation_and_returns_old_leader():
    h = H()
    leader, follower, gen = h.pair_stable("leader-i", "follower-i")
    before = len(h.log.appends)
    r = h.join(instance="leader-i", protocols=PROTOCOLS).value
    assert r.error == E.NONE
    assert r.member_id != leader and r.member_id.startswith("leader-i-")
    assert r.generation_id == gen
    assert r.leader_id == leader  # the old leader id: the new id must not think it leads
    assert r.members == []
    assert h.state() == "Stable"
    [value] = h.log.group_values(before)  # the replacement is persisted
    assert value.generation == gen and value.leader == r.member_id
    assert {(m.member_id, m.group_instance_id, m.assignment) for m in value.members} == {
        (r.member_id, "leader-i", b"L"), (follower, "follower-i", b"F")}
    # the old member id is fenced everywhere
    assert h.hb(leader, gen, instance="leader-i") == E.FENCED_INSTANCE_ID
    assert h.sync(leader, gen, instance="leader-i").value.error == E.FENCED_INSTANCE_ID
    assert h.commit(leader, gen, {TP: om(1)}, instance="leader-i").value == {TP: E.FENCED_INSTANCE_ID}
    assert h.join(member_id=leader, instance="leader-i").value.error == E.FENCED_INSTANCE_ID
    assert h.leave((leader, "leader-i"))[1] == [(leader, "leader-i", E.FENCED_INSTANCE_ID)]
    # the new id has the old assignment
    assert h.sync(r.member_id, gen, instance="leader-i").value.assignment == b"L"
    assert h.hb(r.member_id, gen, instance="leader-i") == E.NONE


def test_static_follower_rejoin_in_stable():
    h = H()
    leader, follower, gen = h.pair_stable("leader-i", "follower-i")
    r = h.join(instance="follower-i").value
    assert (r.error, r.generation_id, r.leader_id, r.members) == (E.NONE, gen, leader, [])
    assert h.sync(r.member_id, gen, instance="follower-i").value.assignment == b"F"
    assert h.hb(follower, gen, instance="follower-i") == E.FENCED_INSTANCE_ID


def test_a_replaced_static_member_id_is_fenced_even_without_an_instance_id():
    """OffsetCommit v3 and Heartbeat v0-2 carry no group.instance.id: the replaced id still hears
    FENCED_INSTANCE_ID, not UNKNOWN_MEMBER_ID (which would make the old process rejoin and
    replace the new one in turn)."""
    h = H()
    leader, follower, gen = h.pair_stable("leader-i", "follower-i")
    r = h.join(instance="follower-i").value
    assert r.error == E.NONE
    assert h.commit(follower, gen, {TP: om(1)}).value == {TP: E.FENCED_INSTANCE_ID}
    assert h.hb(follower, gen) == E.FENCED_INSTANCE_ID
    assert h.sync(follower, gen).value.error == E.FENCED_INSTANCE_ID
    assert h.join(member_id=follower).value.error == E.FENCED_INSTANCE_ID
    assert h.hb("never-a-member", gen) == E.UNKNOWN_MEMBER_ID  # other unknown ids are unchanged
    assert h.commit(r.member_id, gen, {TP: om(2)}).value == {TP: E.NONE}


def test_two_instances_racing_for_one_static_member_the_last_one_wins():
    """Two processes with the same group.instance.id rejoin while the first replacement's
    group record is still being written: the first is fenced, the second keeps the member,
    and no join is answered twice."""
    h = H()
    leader, follower, gen = h.pair_stable("leader-i", "follower-i")
    h.log.auto = False
    first = h.join(instance="follower-i")
    second = h.join(instance="follower-i")
    assert first.value.error == E.FENCED_INSTANCE_ID  # fenced by the second replacement at once
    h.log.release(E.NONE, index=0)  # the first replacement's write lands late: ignored
    assert not second.done
    h.log.release(E.NONE, index=0)
    r = second.value
    assert (r.error, r.generation_id, r.leader_id) == (E.NONE, gen, leader)
    assert r.member_id != first.value.member_id
    assert h.sync(r.member_id, gen, instance="follower-i").value.assignment == b"F"
    assert h.hb(first.value.member_id, gen) == E.FENCED_INSTANCE_ID
    assert {m.member_id for m in h.describe().members} == {leader, r.member_id}


def test_static_rejoin_store_failure_restores_old_member():
    h = H()
    leader, follower, gen = h.pair_stable("leader-i", "follower-i")
    h.log.auto = False
    j = h.join(instance="follower-i")
    assert not j.done
    h.log.release(E.NOT_LEADER_OR_FOLLOWER)
    r = j.value
    assert r.error == E.NOT_COORDINATOR and r.member_id == ""
    assert h.hb(follower, gen, instance="follower-i") == E.NONE  # the old id is still the member
    assert {m.member_id for m in h.describe().members} == {leader, follower}


def test_static_rejoin_with_changed_protocol_rebalances():
    h = H()
    j = h.join(instance="solo", protocols=SUPERSET)
    h.timers.advance(DELAY)
    r = j.value
    assert r.protocol_name == "range"
    h.sync(r.member_id, r.generation_id, {r.member_id: b"x"}, instance="solo")
    before = len(h.log.appends)
    j2 = h.join(instance="solo", protocols=[("roundrobin", b"rr"), ("range", b"r")])
    # the vote would change: a rebalance (which completes at once, everyone has joined)
    r2 = j2.value
    assert r2.error == E.NONE and r2.generation_id == r.generation_id + 1
    assert r2.protocol_name == "roundrobin" and r2.members == [(r2.member_id, "solo", b"rr")]
    assert h.state() == "CompletingRebalance"
    assert h.log.appends[before:] == []  # nothing persisted before the SyncGroup
    assert h.hb(r.member_id, r.generation_id, instance="solo") == E.FENCED_INSTANCE_ID


def test_static_rejoin_in_completing_rebalance_rebalances_and_fences_parked_sync():
    h = H()
    leader, follower, gen = h.pair_stable("leader-i", "follower-i", leader_st=10 * REBALANCE)
    lj = h.join(member_id=leader, instance="leader-i")
    fj = h.join(member_id=follower, instance="follower-i")
    assert lj.value.generation_id == fj.value.generation_id == gen + 1
    assert h.state() == "CompletingRebalance"
    old_sync = h.sync(follower, gen + 1, instance="follower-i")
    assert not old_sync.done
    dup = h.join(instance="follower-i")
    assert old_sync.value.error == E.FENCED_INSTANCE_ID
    assert h.state() == "PreparingRebalance"
    assert not dup.done
    h.timers.advance(REBALANCE)  # the leader does not rejoin but is static: kept
    r = dup.value
    assert r.error == E.NONE and r.generation_id == gen + 2
    assert r.leader_id == r.member_id  # the only rejoined member leads
    assert {m[1] for m in r.members} == {"leader-i", "follower-i"}


def test_static_rejoin_in_preparing_rebalance_fences_parked_join():
    h = H()
    leader, follower, gen = h.pair_stable("leader-i", "follower-i")
    h.join()  # a third member triggers a rebalance
    assert h.state() == "PreparingRebalance"
    old = h.join(member_id=follower, instance="follower-i")
    assert not old.done
    dup = h.join(instance="follower-i")
    assert old.value.error == E.FENCED_INSTANCE_ID
    assert not dup.done


def test_static_member_with_unknown_explicit_member_id_is_fenced():
    h = H()
    j = h.join(instance="i")
    h.timers.advance(DELAY)
    assert j.value.error == E.NONE
    assert h.join(member_id="unknown_member", instance="i").value.error == E.FENCED_INSTANCE_ID


def test_static_member_known_id_rejoin_in_completing_rebalance():
    h = H()
    j = h.join(instance="i")
    h.timers.advance(DELAY)
    mid = j.value.member_id
    r = h.join(member_id=mid, instance="i").value
    assert r.error == E.NONE and r.generation_id == 1
    assert h.sync(mid, 1, {mid: b"a"}, instance="i").value.error == E.NONE
    assert h.state() == "Stable"


def test_static_member_id_changes_on_every_rejoin():
    h = H()
    leader, follower, gen = h.pair_stable("leader-i", "follower-i")
    ids = {follower}
    for _ in range(3):
        ids.add(h.join(instance="follower-i").value.member_id)
    assert len(ids) == 4
