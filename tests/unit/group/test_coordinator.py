"""The group coordinator against a fake clock, fake timers and a fake __consumer_offsets log:
ownership and status errors, JoinGroup, the group max size, SyncGroup.

Scenarios follow Kafka 2.8's GroupCoordinatorTest (same facts, own code): status
errors, JoinGroup (MEMBER_ID_REQUIRED, initial delay, rebalance timeout), SyncGroup.
Heartbeat, LeaveGroup and static membership are in ``test_coordinator_membership.py``;
offsets, reload, ListGroups/DescribeGroups/DeleteGroups and expiry in
``test_coordinator_offsets.py``.
"""

from __future__ import annotations

import pytest

from mafka.errors import ErrorCode as E
from mafka.group.coordinator import SyncResult
from tests.unit.group.coordinator_harness import (
    DELAY,
    GROUP,
    PROTOCOLS,
    REBALANCE,
    SESSION,
    SUPERSET,
    TP,
    Box,
    H,
    group_with_pending_member,
    om,
    other_group,
)
from tests.unit.group.fakes import Clock

# ------------------------------------------------------------------ status errors


def test_join_with_empty_group_id_is_invalid_but_offset_apis_accept_it():
    h = H()
    assert h.join(group="").value.error == E.INVALID_GROUP_ID
    assert h.sync("m", 1, group="").value.error == E.INVALID_GROUP_ID
    assert h.hb("m", 1, group="") == E.INVALID_GROUP_ID
    assert h.leave(("m", None), group="")[0] == E.INVALID_GROUP_ID
    # OffsetCommit/OffsetFetch/Describe/Delete accept "" (Kafka's backwards compatibility).
    h.own(h.c.partition_for(""))
    assert h.commit("", -1, {TP: om(3)}, group="").value == {TP: E.NONE}
    error, fetched = h.fetch([TP], group="")
    assert error == E.NONE and fetched[TP].offset == 3
    assert h.c.describe_group("")[0] == E.NONE


def test_requests_for_a_partition_not_owned_get_not_coordinator():
    h = H()
    other = other_group(h.c)
    assert h.join(group=other).value.error == E.NOT_COORDINATOR
    assert h.sync("m", 1, group=other).value.error == E.NOT_COORDINATOR
    assert h.hb("m", 1, group=other) == E.NOT_COORDINATOR
    assert h.commit("m", 1, {TP: om(1)}, group=other).value == {TP: E.NOT_COORDINATOR}
    assert h.fetch([TP], group=other) == (E.NOT_COORDINATOR, {})
    assert h.c.describe_group(other)[0] == E.NOT_COORDINATOR
    assert h.leave(("m", None), group=other) == (E.NOT_COORDINATOR, [])
    box = Box()
    h.c.delete_groups([other], box)
    assert box.value == {other: E.NOT_COORDINATOR}


def test_requests_while_loading():
    h = H()
    h.single_stable()
    other = other_group(h.c)
    op = h.c.partition_for(other)
    assert h.c.on_elected(op, 3)
    assert h.c.is_loading()
    assert h.join(group=other).value.error == E.COORDINATOR_LOAD_IN_PROGRESS
    assert h.join(group=other, instance="i", member_id="m").value.error == E.COORDINATOR_LOAD_IN_PROGRESS
    # Kafka: the rebalance state is lost while loading, so SyncGroup says REBALANCE_IN_PROGRESS.
    assert h.sync("m", 1, group=other).value.error == E.REBALANCE_IN_PROGRESS
    assert h.commit("m", 1, {TP: om(15)}, group=other).value == {TP: E.COORDINATOR_LOAD_IN_PROGRESS}
    assert h.hb("m", 1, group=other) == E.NONE  # answered blindly
    error, summary = h.c.describe_group(other)
    assert error == E.COORDINATOR_LOAD_IN_PROGRESS and summary.state == ""
    error, groups = h.c.list_groups()
    assert error == E.COORDINATOR_LOAD_IN_PROGRESS
    assert [g.group_id for g in groups] == [GROUP]  # the loaded groups are still listed
    box = Box()
    h.c.delete_groups([other], box)
    assert box.value == {other: E.COORDINATOR_LOAD_IN_PROGRESS}
    assert h.fetch([TP], group=other)[0] == E.COORDINATOR_LOAD_IN_PROGRESS
    # groups of other partitions are still served
    assert h.c.describe_group(GROUP)[0] == E.NONE
    assert h.c.complete_load(op, 3, [])
    assert not h.c.is_loading()
    assert h.c.describe_group(other)[0] == E.NONE
    assert h.c.describe_group(other)[1].state == "Dead"
    assert h.c.list_groups()[0] == E.NONE


def test_resignation_answers_parked_joins_not_coordinator():
    h = H()
    j = h.join()
    assert not j.done
    h.c.on_resigned(h.p, 2)
    assert j.value.error == E.NOT_COORDINATOR
    assert h.p not in h.c.owned_partitions()
    assert h.join().value.error == E.NOT_COORDINATOR
    assert h.hb(j.value.member_id, 1) == E.NOT_COORDINATOR
    h.timers.advance(10 * REBALANCE)  # the cancelled delayed join must not answer again
    assert len(j.results) == 1


def test_resignation_answers_parked_syncs_not_coordinator():
    h = H()
    j1, j2 = h.join(), h.join()
    h.timers.advance(2 * DELAY)
    assert j1.value.error == E.NONE
    follower = j2.value
    s = h.sync(follower.member_id, follower.generation_id)
    assert not s.done
    h.c.on_resigned(h.p)
    assert s.value.error == E.NOT_COORDINATOR
    assert h.sync(follower.member_id, follower.generation_id).value.error == E.NOT_COORDINATOR


def test_stale_epochs_are_ignored():
    h = H(load=False)
    assert h.c.on_elected(h.p, 5)
    assert not h.c.complete_load(h.p, 4, [])  # a stale load
    assert h.c.is_loading()
    assert h.c.complete_load(h.p, 5, [])
    h.single_stable()
    assert not h.c.on_elected(h.p, 4)  # older election
    assert not h.c.on_elected(h.p, 5)  # same epoch, already owned
    h.c.on_resigned(h.p, 4)  # stale resignation
    assert h.p in h.c.owned_partitions()
    assert h.state() == "Stable"
    h.c.on_resigned(h.p, 6)
    assert h.p not in h.c.owned_partitions()
    assert h.join().value.error == E.NOT_COORDINATOR
    # a load for the old epoch can no longer complete
    assert not h.c.on_elected(h.p, 5)
    assert not h.c.complete_load(h.p, 5, [])


def test_a_leader_that_stays_leader_at_a_new_epoch_keeps_its_groups():
    """LeaderAndIsr bumps the epoch (e.g. an ISR change by the controller): no unload, no reload."""
    h = H()
    member, generation = h.single_stable()
    parked = h.join(client_id="newcomer")  # a join parked in the rebalance this starts
    assert not h.c.on_elected(h.p, 2)
    assert not parked.done
    assert h.p in h.c.owned_partitions()
    assert h.hb(member, generation) == E.REBALANCE_IN_PROGRESS  # still the same group, mid-rebalance
    h.c.on_resigned(h.p, 1)  # a resignation older than the new epoch is stale
    assert h.p in h.c.owned_partitions()


def test_a_load_started_at_one_epoch_completes_after_an_epoch_bump():
    h = H(load=False)
    assert h.c.on_elected(h.p, 3)
    assert not h.c.on_elected(h.p, 4)  # still loading: the running load stands
    assert h.c.is_loading()
    assert not h.c.complete_load(h.p, 4, [])  # only the load that was started completes
    assert h.c.complete_load(h.p, 3, [])
    assert h.p in h.c.owned_partitions()
    h.c.on_resigned(h.p, 3)  # stale: the partition is at epoch 4 now
    assert h.p in h.c.owned_partitions()


def test_failed_load_stops_claiming_the_partition():
    h = H(load=False)
    assert h.c.on_elected(h.p, 1)
    h.c.fail_load(h.p, 1)
    assert not h.c.is_loading()
    assert h.join().value.error == E.NOT_COORDINATOR


# ------------------------------------------------------------------ JoinGroup


@pytest.mark.parametrize("session", [9, 10 * 60 * 1000 + 1])
def test_session_timeout_out_of_bounds(session):
    h = H()
    r = h.join(st=session).value
    assert r.error == E.INVALID_SESSION_TIMEOUT
    assert h.state() == "Dead"  # no group was created


def test_session_timeout_bounds_are_inclusive():
    h = H()
    j = h.join(st=10)
    j2 = h.join(st=10 * 60 * 1000)
    h.timers.advance(2 * DELAY)
    assert j.value.error == j2.value.error == E.NONE


def test_known_member_id_for_unknown_group_is_rejected():
    h = H()
    assert h.join(member_id="memberId").value.error == E.UNKNOWN_MEMBER_ID
    assert h.state() == "Dead"


def test_member_id_required_flow():
    h = H()
    first = h.join(require_known=True, client_id="cli").value
    assert first.error == E.MEMBER_ID_REQUIRED
    assert first.member_id.startswith("cli-")
    assert h.state() == "Empty"  # a pending member does not start a rebalance
    j = h.join(member_id=first.member_id, require_known=True)
    assert not j.done
    assert h.state() == "PreparingRebalance"
    h.timers.advance(DELAY)
    r = j.value
    assert r.error == E.NONE
    assert r.member_id == first.member_id == r.leader_id
    assert r.generation_id == 1
    assert r.protocol_type == "consumer" and r.protocol_name == "range"
    assert r.members == [(first.member_id, None, b"range-meta")]


def test_member_id_required_then_inconsistent_protocol_then_accepted():
    h = H()
    mid = h.join(require_known=True).value.member_id
    assert h.join(member_id=mid, require_known=True, protocols=[]).value.error == E.INCONSISTENT_GROUP_PROTOCOL
    j = h.join(member_id=mid, require_known=True)
    h.timers.advance(DELAY)
    assert j.value.error == E.NONE


def test_pending_member_expires_after_session_timeout():
    h = H()
    mid = h.join(require_known=True, st=SESSION).value.member_id
    h.timers.advance(SESSION)
    r = h.join(member_id=mid, require_known=True).value
    assert r.error == E.UNKNOWN_MEMBER_ID


def test_pending_member_still_accepted_just_before_its_session_timeout():
    h = H()
    mid = h.join(require_known=True, st=SESSION).value.member_id
    h.timers.advance(SESSION - 1)
    j = h.join(member_id=mid, require_known=True)
    h.timers.advance(DELAY)
    assert j.value.error == E.NONE and j.value.member_id == mid


def test_join_completes_when_pending_member_joins():
    h = H()
    leader, follower, gen, pending, lj, fj = group_with_pending_member(h)
    pj = h.join(member_id=pending, require_known=True)
    assert lj.value.error == fj.value.error == pj.value.error == E.NONE
    assert lj.value.generation_id == gen + 1
    assert {m[0] for m in lj.value.members} == {leader, follower, pending}
    assert h.state() == "CompletingRebalance"


def test_join_completes_when_pending_member_times_out():
    h = H()
    leader, follower, gen, pending, lj, fj = group_with_pending_member(h)
    h.timers.advance(99)
    assert not lj.done
    h.timers.advance(1)
    assert lj.value.error == E.NONE and lj.value.generation_id == gen + 1
    assert {m[0] for m in lj.value.members} == {leader, follower}
    assert h.state() == "CompletingRebalance"


def test_join_without_require_known_member_id_adds_member_at_once():
    h = H()
    j = h.join(require_known=False, client_id="old")
    assert not j.done
    assert len(h.describe().members) == 1
    h.timers.advance(DELAY)
    r = j.value
    assert r.error == E.NONE and r.member_id.startswith("old-") and r.generation_id == 1


@pytest.mark.parametrize("ptype, protocols", [("", PROTOCOLS), ("consumer", [])])
def test_join_with_empty_protocol_type_or_protocols_is_inconsistent(ptype, protocols):
    h = H()
    assert h.join(ptype=ptype, protocols=protocols).value.error == E.INCONSISTENT_GROUP_PROTOCOL


def test_join_inconsistent_protocol_type_and_protocols():
    h = H()
    j = h.join()
    assert h.join(ptype="connect").value.error == E.INCONSISTENT_GROUP_PROTOCOL
    assert h.join(protocols=[("roundrobin", b"")]).value.error == E.INCONSISTENT_GROUP_PROTOCOL
    h.timers.advance(DELAY)
    assert j.value.error == E.NONE
    assert j.value.members == [(j.value.member_id, None, b"range-meta")]


def test_initial_rebalance_delay_for_lone_member():
    h = H()
    j = h.join()
    h.timers.advance(DELAY - 1)
    assert not j.done
    assert h.state() == "PreparingRebalance"
    h.timers.advance(1)
    assert j.value.error == E.NONE
    assert h.state() == "CompletingRebalance"


def test_new_member_during_initial_delay_extends_it():
    h = H()
    j1 = h.join(rt=DELAY * 3)
    h.timers.advance(DELAY - 1)
    j2 = h.join(rt=DELAY * 3)
    h.timers.advance(1)  # the first delay expires with a new member: extended by another one
    assert not j1.done and not j2.done
    h.timers.advance(DELAY - 1)
    assert not j1.done
    h.timers.advance(1)  # 2 * DELAY after the first join
    assert j1.value.error == j2.value.error == E.NONE
    assert j1.value.generation_id == j2.value.generation_id == 1
    assert len(j1.value.members) == 2


def test_initial_delay_is_bounded_by_rebalance_timeout():
    h = H()
    j1 = h.join(rt=DELAY * 2)
    j2 = h.join(rt=DELAY * 2)
    h.timers.advance(DELAY + 1)
    j3 = h.join(rt=DELAY * 2)
    h.timers.advance(DELAY - 2)  # t = 2 * DELAY - 1
    assert not (j1.done or j2.done or j3.done)
    h.timers.advance(1)  # t = rebalance timeout: no further extension although j3 is new
    assert [j.value.error for j in (j1, j2, j3)] == [E.NONE] * 3
    assert len(j1.value.members) == 3


def test_initial_delay_zero():
    h = H(initial_rebalance_delay_ms=0)
    j = h.join()
    h.timers.advance(0)
    assert j.value.error == E.NONE and j.value.generation_id == 1


def test_second_rebalance_completes_when_all_members_rejoin():
    h = H()
    leader, follower, gen = h.pair_stable()
    lj = h.join(member_id=leader)
    assert not lj.done
    assert h.state() == "PreparingRebalance"
    assert h.hb(follower, gen) == E.REBALANCE_IN_PROGRESS
    fj = h.join(member_id=follower)
    # no timer needed: everyone rejoined
    lr, fr = lj.value, fj.value
    assert lr.error == fr.error == E.NONE
    assert lr.generation_id == fr.generation_id == gen + 1
    assert lr.leader_id == fr.leader_id == leader
    assert sorted(lr.members) == sorted([(leader, None, b"range-meta"), (follower, None, b"range-meta")])
    assert fr.members == []
    assert h.state() == "CompletingRebalance"


def test_member_that_does_not_rejoin_is_removed_after_rebalance_timeout():
    h = H()
    leader, follower, gen = h.pair_stable(follower_st=10 * REBALANCE)
    lj = h.join(member_id=leader)
    h.timers.advance(REBALANCE - 1)
    assert not lj.done
    assert h.hb(follower, gen) == E.REBALANCE_IN_PROGRESS
    h.timers.advance(1)
    r = lj.value
    assert r.error == E.NONE and r.generation_id == gen + 1
    assert r.members == [(leader, None, b"range-meta")]
    assert h.hb(follower, gen) == E.UNKNOWN_MEMBER_ID
    assert [m.member_id for m in h.describe().members] == [leader]


def test_leader_that_does_not_rejoin_is_replaced():
    h = H()
    leader, follower, gen = h.pair_stable(leader_st=10 * REBALANCE)
    fj = h.join(member_id=follower, protocols=[("range", b"changed")])  # new metadata: rebalance
    assert h.hb(leader, gen) == E.REBALANCE_IN_PROGRESS  # keep the old leader's session alive
    h.timers.advance(REBALANCE - 1)
    assert not fj.done
    h.timers.advance(1)
    r = fj.value
    assert r.error == E.NONE and r.leader_id == follower and r.generation_id == gen + 1
    assert r.members == [(follower, None, b"changed")]


def test_static_member_that_does_not_rejoin_is_kept():
    h = H()
    leader, follower, gen = h.pair_stable("leader-i", "follower-i", follower_st=10 * REBALANCE)
    lj = h.join(member_id=leader, instance="leader-i")
    h.timers.advance(REBALANCE)
    r = lj.value
    assert r.error == E.NONE and r.generation_id == gen + 1
    assert sorted(r.members) == sorted([(leader, "leader-i", b"range-meta"), (follower, "follower-i", b"range-meta")])
    assert {m.member_id for m in h.describe().members} == {leader, follower}
    # the follower is still a member, of an older generation
    assert h.hb(follower, gen, instance="follower-i") == E.ILLEGAL_GENERATION


def test_protocol_selection_uses_common_protocol():
    h = H()
    j1 = h.join(protocols=SUPERSET)
    j2 = h.join(protocols=[("roundrobin", b"rr-2")])
    h.timers.advance(2 * DELAY)
    r1, r2 = j1.value, j2.value
    assert r1.protocol_name == r2.protocol_name == "roundrobin"
    assert sorted(r1.members) == sorted([(r1.member_id, None, b"rr-meta"), (r2.member_id, None, b"rr-2")])


def test_protocol_selection_by_vote():
    h = H()
    j1 = h.join(protocols=SUPERSET)
    j2 = h.join(protocols=[("roundrobin", b"x"), ("range", b"y")])
    j3 = h.join(protocols=[("roundrobin", b"z"), ("range", b"w")])
    h.timers.advance(2 * DELAY)
    assert {j.value.protocol_name for j in (j1, j2, j3)} == {"roundrobin"}


def test_inconsistent_protocol_in_rebalancing_group():
    h = H()
    leader, follower, gen = h.pair_stable()
    h.join(member_id=leader)
    assert h.join(protocols=[("sticky", b"")]).value.error == E.INCONSISTENT_GROUP_PROTOCOL
    assert h.join(member_id=follower, ptype="connect").value.error == E.INCONSISTENT_GROUP_PROTOCOL


def test_rejoin_in_completing_rebalance_with_same_metadata_gets_current_generation():
    h = H()
    j1, j2 = h.join(), h.join()
    h.timers.advance(2 * DELAY)
    leader, follower = j1.value, j2.value
    again = h.join(member_id=leader.member_id).value  # lost JoinGroup response
    assert again.error == E.NONE and again.generation_id == leader.generation_id
    assert sorted(again.members) == sorted(leader.members)
    again_f = h.join(member_id=follower.member_id).value
    assert again_f.generation_id == leader.generation_id and again_f.members == []
    assert h.state() == "CompletingRebalance"
    # changed metadata forces a rebalance
    changed = h.join(member_id=follower.member_id, protocols=[("range", b"new")])
    assert not changed.done
    assert h.state() == "PreparingRebalance"


def test_stable_follower_rejoin_with_same_metadata_does_not_rebalance_but_leader_does():
    h = H()
    leader, follower, gen = h.pair_stable()
    r = h.join(member_id=follower).value
    assert r.error == E.NONE and r.generation_id == gen and r.leader_id == leader and r.members == []
    assert h.state() == "Stable"
    lj = h.join(member_id=leader)
    assert not lj.done and h.state() == "PreparingRebalance"


def test_unknown_member_id_for_existing_group():
    h = H()
    h.single_stable()
    assert h.join(member_id="memberId").value.error == E.UNKNOWN_MEMBER_ID


def test_new_member_join_expires_after_five_minutes():
    h = H()
    big_session = 300_000 + 5000
    first, gen = h.single_stable(st=big_session)
    j = h.join(st=big_session, rt=600_000)
    assert not j.done and h.state() == "PreparingRebalance"
    # keep the first member's session; it never rejoins
    h.timers.advance(200_000)
    assert h.hb(first, gen) == E.REBALANCE_IN_PROGRESS
    h.timers.advance(100_000)
    r = j.value
    assert r.error == E.UNKNOWN_MEMBER_ID and r.member_id == ""
    assert [m.member_id for m in h.describe().members] == [first]


def test_new_member_timeout_does_not_apply_after_join():
    h = H()
    big_session = 300_000 + 5000
    mid, _ = h.single_stable(st=big_session)
    h.timers.advance(300_000 + 100)
    assert len(h.describe().members) == 1
    h.timers.advance(big_session)
    assert h.state() == "Empty"


# ------------------------------------------------------------------ group max size


def test_max_size_dynamic_members_with_member_id_required():
    h = H(max_size=4)
    ids = [h.join(require_known=True).value.member_id for _ in range(5)]
    boxes = [h.join(member_id=m, require_known=True) for m in ids]
    h.timers.advance(DELAY + 1)
    h.timers.advance(DELAY + 1)
    errors = [b.value.error for b in boxes]
    assert errors.count(E.NONE) == 4
    assert errors.count(E.GROUP_MAX_SIZE_REACHED) == 1
    rejected = boxes[errors.index(E.GROUP_MAX_SIZE_REACHED)].value
    assert rejected.member_id == ""
    # accepted members can rejoin while CompletingRebalance; the rejected one cannot
    again = [h.join(member_id=m, require_known=True).value.error for m in ids]
    assert again == errors


def test_max_size_full_stable_group_rejects_new_member():
    h = H(max_size=2)
    h.pair_stable()
    r = h.join().value
    assert r.error == E.GROUP_MAX_SIZE_REACHED and r.member_id == ""
    assert h.state() == "Stable"


def test_over_capacity_group_rebalances_on_load_and_last_rejoiners_are_kicked_out():
    h = H(max_size=3)
    ids = [h.join(rt=REBALANCE) for _ in range(3)]
    h.timers.advance(2 * DELAY)
    results = [b.value for b in ids]
    leader = next(r for r in results if r.leader_id == r.member_id)
    h.sync(leader.member_id, leader.generation_id, {})
    assert h.state() == "Stable"
    # the broker restarts with group.max.size = 2
    h2 = H(clock=Clock(h.clock.now), load=False, max_size=2)
    assert h2.c.on_elected(h.p, 2)
    assert h2.c.complete_load(h.p, 2, list(h.log.durable[h.p]))
    assert h2.state() == "PreparingRebalance"
    gen = leader.generation_id
    assert h2.commit(results[0].member_id, gen, {TP: om(1)}).value == {TP: E.NONE}
    boxes = [h2.join(member_id=r.member_id) for r in results]
    assert boxes[2].value.error == E.GROUP_MAX_SIZE_REACHED
    assert boxes[0].value.error == boxes[1].value.error == E.NONE
    assert boxes[0].value.generation_id == gen + 1
    assert {m.member_id for m in h2.describe().members} == {results[0].member_id, results[1].member_id}


def test_shutdown_makes_coordinator_unavailable():
    h = H()
    j = h.join()
    h.c.shutdown()
    assert j.value.error == E.NOT_COORDINATOR
    assert h.join().value.error == E.COORDINATOR_NOT_AVAILABLE
    assert h.hb("m", 1) == E.COORDINATOR_NOT_AVAILABLE
    assert h.c.list_groups() == (E.COORDINATOR_NOT_AVAILABLE, [])
    assert h.c.owned_partitions() == set()


# ------------------------------------------------------------------ SyncGroup


def test_followers_wait_for_leader_and_missing_members_get_empty_assignment():
    h = H()
    j1, j2 = h.join(), h.join()
    h.timers.advance(2 * DELAY)
    leader, follower = j1.value, j2.value
    fs = h.sync(follower.member_id, follower.generation_id)
    assert not fs.done
    before = len(h.log.appends)
    ls = h.sync(leader.member_id, leader.generation_id, {leader.member_id: b"only-leader"})
    assert ls.value == SyncResult(E.NONE, b"only-leader", "consumer", "range")
    assert fs.value == SyncResult(E.NONE, b"", "consumer", "range")
    assert h.state() == "Stable"
    [value] = h.log.group_values(before)
    assert value.generation == leader.generation_id and value.leader == leader.member_id
    assert {m.member_id: m.assignment for m in value.members} == {leader.member_id: b"only-leader",
                                                                 follower.member_id: b""}


def test_sync_leader_before_follower():
    h = H()
    j1, j2 = h.join(), h.join()
    h.timers.advance(2 * DELAY)
    leader, follower = j1.value, j2.value
    ls = h.sync(leader.member_id, 1, {leader.member_id: b"L", follower.member_id: b"F"})
    assert ls.value.error == E.NONE
    assert h.sync(follower.member_id, 1).value.assignment == b"F"


def test_sync_errors():
    h = H()
    assert h.sync("m", 1).value.error == E.UNKNOWN_MEMBER_ID  # unknown group
    leader, follower, gen = h.pair_stable()
    assert h.sync("nobody", gen).value.error == E.UNKNOWN_MEMBER_ID
    assert h.sync(leader, gen + 1).value.error == E.ILLEGAL_GENERATION
    h.join(member_id=leader)
    assert h.sync(follower, gen).value.error == E.REBALANCE_IN_PROGRESS


def test_sync_in_stable_returns_stored_assignment():
    h = H()
    leader, follower, gen = h.pair_stable()
    assert h.sync(follower, gen).value == SyncResult(E.NONE, b"F", "consumer", "range")
    assert h.sync(leader, gen, {leader: b"ignored"}).value.assignment == b"L"


@pytest.mark.parametrize("append_error, member_error", [
    (E.NOT_LEADER_OR_FOLLOWER, E.NOT_COORDINATOR),
    (E.REQUEST_TIMED_OUT, E.REBALANCE_IN_PROGRESS),
    (E.NOT_ENOUGH_REPLICAS, E.COORDINATOR_NOT_AVAILABLE),
    (E.MESSAGE_TOO_LARGE, E.UNKNOWN_SERVER_ERROR),
])
def test_sync_store_failure_propagates_error_and_rebalances(append_error, member_error):
    h = H()
    j1, j2 = h.join(), h.join()
    h.timers.advance(2 * DELAY)
    leader, follower = j1.value, j2.value
    h.log.auto = False
    fs = h.sync(follower.member_id, 1)
    ls = h.sync(leader.member_id, 1, {leader.member_id: b"L", follower.member_id: b"F"})
    assert not ls.done and not fs.done and h.state() == "CompletingRebalance"
    h.log.release(append_error)
    assert ls.value == SyncResult(member_error, b"", None, None)
    assert fs.value == SyncResult(member_error, b"", None, None)
    assert h.state() == "PreparingRebalance"


def test_sync_store_completing_after_group_moved_on_is_ignored():
    h = H()
    j1, j2 = h.join(), h.join()
    h.timers.advance(2 * DELAY)
    leader, follower = j1.value, j2.value
    h.log.auto = False
    fs = h.sync(follower.member_id, 1)
    ls = h.sync(leader.member_id, 1, {leader.member_id: b"L", follower.member_id: b"F"})
    rejoin = h.join(member_id=follower.member_id, protocols=[("range", b"changed")])
    assert ls.value.error == fs.value.error == E.REBALANCE_IN_PROGRESS
    h.log.release(E.NONE)
    assert h.state() == "PreparingRebalance"
    assert not rejoin.done


def test_sync_in_empty_group_is_unknown_member():
    h = H()
    mid, gen = h.single_stable()
    h.leave((mid, None))
    assert h.state() == "Empty"
    assert h.sync(mid, gen).value.error == E.UNKNOWN_MEMBER_ID
