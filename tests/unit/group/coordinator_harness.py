"""The test harness of the group coordinator's unit tests: constants, :class:`H` (one
:class:`~mafka.group.coordinator.GroupCoordinator` over the fakes of :mod:`tests.unit.group.fakes`,
owning GROUP's partition, with helpers that speak its API) and :class:`Box` (a respond callable).

Shared by ``test_coordinator.py``, ``test_coordinator_membership.py``,
``test_coordinator_offsets.py`` and ``test_txn_offsets.py``.
"""

from __future__ import annotations

from mafka.errors import ErrorCode as E
from mafka.group.coordinator import CoordinatorConfig, GroupCoordinator
from mafka.group.offsets import OffsetAndMetadata
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


# ------------------------------------------------------------------ harness


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


def group_with_pending_member(h: H):
    """Two members in Stable, the leader rejoins, and a third is pending (MEMBER_ID_REQUIRED)."""
    leader, follower, gen = h.pair_stable()
    pending = h.join(require_known=True, st=100).value
    assert pending.error == E.MEMBER_ID_REQUIRED
    lj = h.join(member_id=leader)
    fj = h.join(member_id=follower)
    assert not lj.done and not fj.done  # the pending member holds the rebalance
    assert h.state() == "PreparingRebalance"
    return leader, follower, gen, pending.member_id, lj, fj
