"""The group coordinator against a fake clock, fake timers and a fake __consumer_offsets log.

Scenarios follow Kafka 2.8's GroupCoordinatorTest (same facts, own code): status
errors, JoinGroup (MEMBER_ID_REQUIRED, initial delay, rebalance timeout), SyncGroup,
Heartbeat, LeaveGroup, static membership (KIP-345), offset commit/fetch, the records
written and reloaded, ListGroups/DescribeGroups/DeleteGroups and offset expiry.
"""

from __future__ import annotations

import pytest

from mafka.errors import ErrorCode as E
from mafka.group.coordinator import CoordinatorConfig, GroupCoordinator, JoinResult, SyncResult
from mafka.group.offsets import OffsetAndMetadata
from mafka.group.offsets_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetKey,
    OffsetValue,
)
from tests.unit.group.fakes import T0, Clock, FakeLog, Timers

GROUP = "groupId"
DELAY = 50
SESSION = 500
REBALANCE = 500
PROTOCOLS = [("range", b"range-meta")]
SUPERSET = [("range", b"range-meta"), ("roundrobin", b"rr-meta")]
TP = ("foo", 0)
TP1 = ("foo", 1)
RETENTION = 24 * 3600 * 1000

BASE_CONFIG = {
    "min_session_timeout_ms": 10,
    "max_session_timeout_ms": 10 * 60 * 1000,
    "initial_rebalance_delay_ms": DELAY,
    "offsets_retention_ms": RETENTION,
}


# ------------------------------------------------------------------ fakes


class Box:
    """A respond callable; .value insists it was called exactly once."""

    def __init__(self) -> None:
        self.results: list = []

    def __call__(self, result) -> None:
        self.results.append(result)

    @property
    def done(self) -> bool:
        return bool(self.results)

    @property
    def value(self):
        assert len(self.results) == 1, self.results
        return self.results[0]


def other_group(coordinator: GroupCoordinator, *avoid: int) -> str:
    for i in range(1000):
        name = f"other-{i}"
        if coordinator.partition_for(name) not in avoid and coordinator.partition_for(name) != coordinator.partition_for(GROUP):
            return name
    raise AssertionError("no group on another partition")


class H:
    """One coordinator owning GROUP's partition, plus helpers that speak its API."""

    def __init__(self, clock: Clock | None = None, log: FakeLog | None = None, load=True, **config) -> None:
        self.clock = clock or Clock()
        self.timers = Timers(self.clock)
        self.log = log or FakeLog()
        self.config = CoordinatorConfig(**{**BASE_CONFIG, **config})
        self.c = GroupCoordinator(self.config, self.clock, self.timers, self.log)
        self.p = self.c.partition_for(GROUP)
        if load:
            self.own(self.p)

    def own(self, partition: int, epoch: int = 1, records=()) -> None:
        assert self.c.on_elected(partition, epoch)
        assert self.c.complete_load(partition, epoch, list(records))

    def join(self, member_id="", instance=None, require_known=False, group=GROUP, rt=REBALANCE, st=SESSION,
             ptype="consumer", protocols=PROTOCOLS, client_id="client") -> Box:
        box = Box()
        self.c.join_group(group, member_id, instance, require_known, client_id, "/10.0.0.1", rt, st, ptype,
                          protocols, box)
        return box

    def sync(self, member_id, generation, assignments=None, instance=None, group=GROUP) -> Box:
        box = Box()
        self.c.sync_group(group, generation, member_id, instance, assignments or {}, box)
        return box

    def hb(self, member_id, generation, instance=None, group=GROUP) -> int:
        return self.c.heartbeat(group, member_id, instance, generation)

    def commit(self, member_id, generation, offsets, instance=None, group=GROUP) -> Box:
        box = Box()
        self.c.commit_offsets(group, member_id, instance, generation, offsets, box)
        return box

    def leave(self, *members, group=GROUP):
        return self.c.leave_group(group, list(members))

    def fetch(self, partitions=None, group=GROUP, require_stable=False):
        return self.c.fetch_offsets(group, partitions, require_stable)

    def describe(self, group=GROUP):
        error, summary = self.c.describe_group(group)
        assert error == E.NONE
        return summary

    def state(self, group=GROUP) -> str:
        return self.describe(group).state

    def single_stable(self, instance=None, st=SESSION, assignment=b"a-1"):
        j = self.join(instance=instance, st=st)
        self.timers.advance(DELAY)
        r = j.value
        assert r.error == E.NONE
        s = self.sync(r.member_id, r.generation_id, {r.member_id: assignment}, instance=instance)
        assert s.value.error == E.NONE
        assert self.state() == "Stable"
        return r.member_id, r.generation_id

    def pair_stable(self, leader_instance=None, follower_instance=None, leader_st=SESSION, follower_st=SESSION,
                    protocols=PROTOCOLS):
        j1 = self.join(instance=leader_instance, st=leader_st, protocols=protocols, client_id="leader")
        j2 = self.join(instance=follower_instance, st=follower_st, protocols=protocols, client_id="follower")
        self.timers.advance(2 * DELAY)  # the second member extended the initial delay once
        r1, r2 = j1.value, j2.value
        assert r1.error == r2.error == E.NONE
        assert r1.leader_id == r1.member_id == r2.leader_id
        leader, follower, gen = r1.member_id, r2.member_id, r1.generation_id
        s1 = self.sync(leader, gen, {leader: b"L", follower: b"F"}, instance=leader_instance)
        s2 = self.sync(follower, gen, instance=follower_instance)
        assert s1.value.error == s2.value.error == E.NONE
        assert (s1.value.assignment, s2.value.assignment) == (b"L", b"F")
        assert self.state() == "Stable"
        return leader, follower, gen


def om(offset, metadata="", ts=T0):
    return OffsetAndMetadata(offset, -1, metadata, ts)


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


def _group_with_pending_member(h: H):
    """Two members in Stable, the leader rejoins, and a third is pending (MEMBER_ID_REQUIRED)."""
    leader, follower, gen = h.pair_stable()
    pending = h.join(require_known=True, st=100).value
    assert pending.error == E.MEMBER_ID_REQUIRED
    lj = h.join(member_id=leader)
    fj = h.join(member_id=follower)
    assert not lj.done and not fj.done  # the pending member holds the rebalance
    assert h.state() == "PreparingRebalance"
    return leader, follower, gen, pending.member_id, lj, fj


def test_join_completes_when_pending_member_joins():
    h = H()
    leader, follower, gen, pending, lj, fj = _group_with_pending_member(h)
    pj = h.join(member_id=pending, require_known=True)
    assert lj.value.error == fj.value.error == pj.value.error == E.NONE
    assert lj.value.generation_id == gen + 1
    assert {m[0] for m in lj.value.members} == {leader, follower, pending}
    assert h.state() == "CompletingRebalance"


def test_join_completes_when_pending_member_times_out():
    h = H()
    leader, follower, gen, pending, lj, fj = _group_with_pending_member(h)
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
    leader, follower, gen, pending, lj, fj = _group_with_pending_member(h)
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
    assert GROUP not in h.c._stores[h.p].groups  # no empty leftover that would outlive the group
