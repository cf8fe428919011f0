"""KIP-848's online upgrade and downgrade through :class:`~mafka.group.coordinator.GroupCoordinator`
(:mod:`mafka.group.group_migration`, :mod:`mafka.group.consumer.migration`,
:mod:`mafka.group.consumer.classic_members`): a classic group joined by a ConsumerGroupHeartbeat
becomes a consumer group whose classic members keep JoinGroup/SyncGroup/Heartbeat; the last
consumer-protocol member leaving turns it back into a classic group that rebalances; both
written to ``__consumer_offsets`` so that a new coordinator resumes them.  Fake clock, timers, log.
"""

from __future__ import annotations

import struct

import pytest

from mafka.errors import ErrorCode as E
from mafka.group.consumer import classic_protocol
from mafka.group.consumer.group_types import ConsumerGroupConfig, HeartbeatRequest
from mafka.group.consumer.records import (
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMetadataKey,
    decode_record,
    is_consumer_group_key,
)
from mafka.group.consumer_protocol import (
    Assignment,
    Subscription,
    decode_assignment,
    encode_assignment,
    encode_subscription,
)
from mafka.group.coordinator import CoordinatorConfig, GroupCoordinator
from mafka.group.offsets import OffsetAndMetadata
from mafka.group.offsets_records import GroupMetadataKey
from mafka.group.offsets_records import decode_record as decode_classic_record
from tests.unit.group.consumer.group_helpers import topic_id, topics
from tests.unit.group.fakes import Clock, FakeLog, Timers

GROUP = "mixed"
TOPICS = topics(foo=4)
FOO = topic_id("foo")
CONSUMER_SESSION_MS = 10_000
CLASSIC_SESSION_MS = 6_000
REBALANCE_MS = 20_000
DELAY = 50


def subscription(*owned: int, version: int = 1) -> bytes:
    return encode_subscription(Subscription(["foo"], None, {"foo": list(owned)} if owned else {}), version)


def assignment_bytes(*partitions: int, user_data: bytes | None = None) -> bytes:
    return encode_assignment(Assignment({"foo": list(partitions)}, user_data))


def partitions_of(data: bytes) -> list[int]:
    return sorted(decode_assignment(data).assigned_partitions.get("foo", []))


class Harness:
    """One coordinator owning the only ``__consumer_offsets`` partition, with request helpers."""

    def __init__(self, log: FakeLog | None = None, policy: str = "bidirectional", max_size: int = 2**31 - 1,
                 consumer_max_size: int = 2**31 - 1) -> None:
        self.clock = Clock()
        self.timers = Timers(self.clock)
        self.log = log or FakeLog()
        config = CoordinatorConfig(
            offsets_partitions=1, min_session_timeout_ms=10, initial_rebalance_delay_ms=DELAY, max_size=max_size,
            consumer=ConsumerGroupConfig(session_timeout_ms=CONSUMER_SESSION_MS, migration_policy=policy,
                                         max_size=consumer_max_size),
        )
        self.c = GroupCoordinator(config, self.clock, self.timers, self.log, lambda: TOPICS)
        assert self.c.on_elected(0, 1)
        assert self.c.complete_load(0, 1, list(self.log.durable[0]))

    # -- classic requests

    def join(self, member_id: str = "", instance: str | None = None, protocols=None, require_known: bool = False,
             ptype: str = "consumer") -> list:
        answers: list = []
        self.c.join_group(GROUP, member_id, instance, require_known, "classic-client", "/10.0.0.1", REBALANCE_MS,
                          CLASSIC_SESSION_MS, ptype, protocols or [("range", subscription())], answers.append)
        return answers

    def sync(self, member_id: str, generation: int, assignments=None, instance: str | None = None) -> list:
        answers: list = []
        self.c.sync_group(GROUP, generation, member_id, instance, assignments or {}, answers.append)
        return answers

    def hb(self, member_id: str, generation: int, instance: str | None = None) -> int:
        return self.c.heartbeat(GROUP, member_id, instance, generation)

    # -- consumer requests

    def beat(self, member_id: str, epoch: int, **fields) -> list:
        answers: list = []
        self.c.consumer_group_heartbeat(HeartbeatRequest(GROUP, member_id, epoch, **fields), answers.append)
        return answers

    def consumer_join(self, member_id: str, instance: str | None = None) -> list:
        return self.beat(member_id, 0, instance_id=instance, rebalance_timeout_ms=REBALANCE_MS,
                         subscribed_topic_names=["foo"], topic_partitions={})

    # -- views

    @property
    def consumer(self):
        entry = self.c.consumer_groups.get(GROUP)
        return None if entry is None else entry.group

    @property
    def classic(self):
        entry = self.c.group_manager.get_group(GROUP)
        return None if entry is None else entry.group

    def classic_stable(self, count: int = 2) -> tuple[list[str], int]:
        """A Stable classic group of *count* members holding foo's partitions round the members."""
        joins = [self.join() for _ in range(count)]
        self.timers.advance(count * DELAY)
        results = [j[-1] for j in joins]
        assert all(r.error == E.NONE for r in results), results
        ids = [r.member_id for r in results]
        gen = results[0].generation_id
        leader = results[0].leader_id
        plan = {m: assignment_bytes(*range(i, 4, count)) for i, m in enumerate(ids)}
        syncs = [self.sync(m, gen, plan if m == leader else None) for m in ids]
        assert all(s[-1].error == E.NONE for s in syncs)
        assert self.classic.state.value == "Stable"
        return ids, gen

    def mixed(self) -> tuple[list[str], int, str]:
        """A classic group of two upgraded by a consumer member "c1"; the classic members have
        rejoined and synced.  Returns (classic member ids, their generation, "c1")."""
        ids, gen = self.classic_stable()
        (r,) = self.consumer_join("c1")
        assert r.error_code == E.NONE, r
        for m in ids:
            assert self.hb(m, gen) == E.REBALANCE_IN_PROGRESS
        generation = 0
        for m in ids:
            (j,) = self.join(m)
            assert j.error == E.NONE, j
            generation = j.generation_id
            (s,) = self.sync(m, j.generation_id)
            assert s.error == E.NONE, s
        return ids, generation, "c1"

    def owners(self) -> dict[int, str]:
        out: dict[int, str] = {}
        for mid, m in self.consumer.members.items():
            for p in m.owned_partitions.get(FOO, frozenset()):
                assert p not in out, f"partition {p} owned by {out[p]} and {mid}"
                out[p] = mid
        return out


def written(log: FakeLog, since: int = 0) -> list:
    return [(k, v) for _, records in log.appends[since:] for k, v in records]


# --------------------------------------------------------------------------- upgrade


def test_a_consumer_member_joining_a_classic_group_upgrades_it_and_the_classic_members_stay() -> None:
    h = Harness()
    ids, gen = h.classic_stable()
    appended = len(h.log.appends)
    (r,) = h.consumer_join("c1")
    assert r.error_code == E.NONE
    assert h.classic is None and h.consumer is not None
    group = h.consumer
    assert set(group.members) == {*ids, "c1"}
    assert group.group_epoch == gen + 1  # the generation, bumped by the new member
    for m in ids:
        member = group.members[m]
        assert member.uses_classic_protocol and member.member_epoch == gen
        assert member.classic_member_metadata.session_timeout_ms == CLASSIC_SESSION_MS
        assert member.subscribed_topic_names == {"foo"}
    # the classic members' partitions are theirs until they release them
    assert sorted(h.owners()) == [0, 1, 2, 3] and "c1" not in h.owners().values()
    # one batch: the classic group's tombstone, then the consumer group with ClassicMemberMetadata
    (batch,) = [records for _, records in h.log.appends[appended:]]
    first_key, first_value = batch[0]
    assert isinstance(decode_classic_record(first_key, first_value)[0], GroupMetadataKey) and first_value is None
    decoded = [decode_record(k, v) for k, v in batch[1:]]
    classic_meta = [d.value.classic_member_metadata for d in decoded
                    if isinstance(d.key, ConsumerGroupMemberMetadataKey) and d.key.member_id in ids]
    assert len(classic_meta) == 2 and all(c is not None for c in classic_meta)
    error, listed = h.c.list_groups()
    assert [(g.group_id, g.group_type) for g in listed] == [(GROUP, "consumer")]


def test_classic_members_rejoin_through_join_and_sync_and_the_partitions_move_without_overlap() -> None:
    h = Harness()
    ids, gen = h.classic_stable()
    h.consumer_join("c1")
    # told to rejoin: the target moved past their epoch
    assert [h.hb(m, gen) for m in ids] == [E.REBALANCE_IN_PROGRESS] * 2
    held: dict[str, list[int]] = {}
    for m in ids:
        (j,) = h.join(m)
        assert (j.error, j.member_id, j.generation_id, j.leader_id, j.members) == (E.NONE, m, gen + 1, "", [])
        assert j.protocol_name == "range"
        (s,) = h.sync(m, j.generation_id)
        assert s.error == E.NONE and s.protocol_name == "range"
        held[m] = partitions_of(s.assignment)
        assert h.hb(m, j.generation_id) == E.NONE
    c1 = h.consumer.members["c1"]
    (r,) = h.beat("c1", c1.member_epoch, topic_partitions={})
    held["c1"] = sorted(r.assignment.get(FOO, ()))
    everything = sorted(p for ps in held.values() for p in ps)
    assert everything == [0, 1, 2, 3], held
    assert all(held.values()), held
    assert h.consumer.state.value == "Stable"


def test_members_waiting_in_a_classic_rebalance_are_told_to_rejoin_by_the_upgrade() -> None:
    h = Harness()
    ids, gen = h.classic_stable()
    parked = h.join(ids[0], protocols=[("range", subscription(0, 2))])  # starts a rebalance, parked
    assert parked == [] and h.classic.state.value == "PreparingRebalance"
    (r,) = h.consumer_join("c1")
    assert r.error_code == E.NONE
    assert [a.error for a in parked] == [E.REBALANCE_IN_PROGRESS]


@pytest.mark.parametrize(("harness", "message"), [
    (dict(policy="downgrade"), "online upgrade is disabled"),
    (dict(policy="disabled"), "online upgrade is disabled"),
    (dict(consumer_max_size=1), "exceeds the consumer group maximum size"),
])
def test_an_upgrade_the_policy_or_the_size_forbids_is_group_id_not_found(harness: dict, message: str) -> None:
    h = Harness(**harness)
    ids, gen = h.classic_stable()
    appended = len(h.log.appends)
    (r,) = h.consumer_join("c1")
    assert r.error_code == E.GROUP_ID_NOT_FOUND and message in r.error_message
    assert h.consumer is None and h.classic is not None and len(h.log.appends) == appended
    assert h.hb(ids[0], gen) == E.NONE


def test_groups_that_cannot_be_upgraded_stay_classic() -> None:
    other = Harness()
    ids = [other.join(ptype="connect", protocols=[("v1", b"x")]) for _ in range(1)]
    other.timers.advance(DELAY)
    assert ids[0][-1].error == E.NONE
    (r,) = other.consumer_join("c1")
    assert r.error_code == E.GROUP_ID_NOT_FOUND and "does not use the consumer embedded protocol" in r.error_message

    custom = Harness()
    (j,) = [custom.join()]
    custom.timers.advance(DELAY)
    m = j[-1].member_id
    assert custom.sync(m, 1, {m: assignment_bytes(0, 1, 2, 3, user_data=b"sticky")})[-1].error == E.NONE
    (r,) = custom.consumer_join("c1")
    assert r.error_code == E.GROUP_ID_NOT_FOUND and "custom assignor" in r.error_message
    assert custom.classic is not None and custom.consumer is None

    # a heartbeat that is not a join never converts
    (r,) = Harness().beat("x", 3)
    assert r.error_code == E.GROUP_ID_NOT_FOUND


def test_a_failed_upgrade_write_puts_the_classic_group_back() -> None:
    h = Harness()
    ids, gen = h.classic_stable()
    h.log.auto = False
    answers = h.consumer_join("c1")
    assert h.consumer is not None and h.classic is None  # converted in memory while the write runs
    h.log.release(E.NOT_ENOUGH_REPLICAS)
    assert answers[-1].error_code == E.COORDINATOR_NOT_AVAILABLE
    assert h.consumer is None and h.classic is not None
    assert sorted(h.classic.members) == sorted(ids) and h.classic.generation_id == gen
    h.log.auto = True
    assert [h.hb(m, gen) for m in ids] == [E.NONE, E.NONE]


# --------------------------------------------------------------------------- classic members in a consumer group


def test_classic_member_errors_in_a_consumer_group() -> None:
    h = Harness()
    ids, generation, c1 = h.mixed()
    assert h.hb("nobody", generation) == E.UNKNOWN_MEMBER_ID
    assert h.hb(ids[0], generation + 7) == E.ILLEGAL_GENERATION
    c1_epoch = h.consumer.members[c1].member_epoch
    assert h.hb(c1, c1_epoch) == E.UNKNOWN_MEMBER_ID  # not a classic member
    assert h.sync(ids[0], generation + 7)[-1].error == E.ILLEGAL_GENERATION
    # a protocol no classic member supports
    (j,) = h.join(protocols=[("roundrobin", subscription())])
    assert j.error == E.INCONSISTENT_GROUP_PROTOCOL
    # KIP-394: a new dynamic member first gets its member id
    (j,) = h.join(require_known=True)
    assert j.error == E.MEMBER_ID_REQUIRED and j.member_id
    assert j.member_id not in h.consumer.members
    (again,) = h.join(j.member_id, require_known=True)
    assert again.error == E.NONE and j.member_id in h.consumer.members


def test_a_disabled_migration_policy_keeps_classic_members_out() -> None:
    for policy, expected in (("disabled", E.INCONSISTENT_GROUP_PROTOCOL), ("upgrade", E.NONE)):
        h = Harness(policy=policy)
        (r,) = h.consumer_join("c1")
        assert r.error_code == E.NONE
        (j,) = h.join()
        assert j.error == expected, policy


def test_commits_and_fetches_of_classic_members_check_the_generation() -> None:
    h = Harness()
    ids, generation, c1 = h.mixed()
    offsets = {("foo", 0): OffsetAndMetadata(9, -1, "", 0, None)}
    results: list = []
    h.c.commit_offsets(GROUP, ids[0], None, generation + 1, offsets, results.append, api_version=8)
    h.c.commit_offsets(GROUP, ids[0], None, generation, offsets, results.append, api_version=8)
    c1_epoch = h.consumer.members[c1].member_epoch
    h.c.commit_offsets(GROUP, c1, None, c1_epoch + 1, offsets, results.append, api_version=9)
    assert [r[("foo", 0)] for r in results] == [E.ILLEGAL_GENERATION, E.NONE, E.STALE_MEMBER_EPOCH]
    assert h.c.fetch_offsets(GROUP, [("foo", 0)], False, ids[0], generation + 1)[0] == E.ILLEGAL_GENERATION
    error, entries = h.c.fetch_offsets(GROUP, [("foo", 0)], False, ids[0], generation)
    assert error == E.NONE and entries[("foo", 0)].offset == 9


def test_a_classic_member_uses_its_own_session_timeout() -> None:
    h = Harness()
    ids, generation, c1 = h.mixed()
    # c1 and ids[1] keep heartbeating; ids[0] falls silent for its (shorter) classic session
    for _ in range(4):
        h.timers.advance(CLASSIC_SESSION_MS // 4 + 1)
        h.hb(ids[1], h.consumer.members[ids[1]].member_epoch)
        h.beat(c1, h.consumer.members[c1].member_epoch)
    assert ids[0] not in h.consumer.members and CLASSIC_SESSION_MS < CONSUMER_SESSION_MS


def test_a_classic_member_that_does_not_rejoin_or_sync_in_time_is_fenced() -> None:
    h = Harness()
    ids, gen = h.classic_stable()
    h.consumer_join("c1")

    def keep_alive() -> None:
        for m in ids:
            if m in h.consumer.members:
                h.hb(m, h.consumer.members[m].member_epoch)
        h.beat("c1", h.consumer.members["c1"].member_epoch)

    # ids[0] rejoins but never syncs; ids[1] is told to rejoin and never does
    (j,) = h.join(ids[0])
    assert j.error == E.NONE
    assert h.hb(ids[1], gen) == E.REBALANCE_IN_PROGRESS
    for _ in range(REBALANCE_MS // 2000 - 1):
        h.timers.advance(2000)
        keep_alive()
    assert set(h.consumer.members) == {*ids, "c1"}  # heartbeats alone do not keep them past the timers
    for _ in range(2):
        h.timers.advance(2000)
        keep_alive()
    assert set(h.consumer.members) == {"c1"}


def test_a_cooperative_classic_member_keeps_its_partitions_until_it_reports_them_revoked() -> None:
    h = Harness()
    ids, gen = h.classic_stable()
    h.consumer_join("c1")
    owned = {m: sorted(h.consumer.members[m].assigned_partitions[FOO]) for m in ids}
    c1_target = sorted(h.consumer.target_assignment["c1"].get(FOO, ()))
    assert c1_target, "the new member has a target taken from the classic members"
    giver = next(m for m in ids if set(owned[m]) & set(c1_target))
    # it rejoins still owning its partitions (cooperative): it must revoke first
    (j,) = h.join(giver, protocols=[("cooperative-sticky", subscription(*owned[giver]))])
    assert j.error == E.INCONSISTENT_GROUP_PROTOCOL  # not a protocol the other classic member supports
    (j,) = h.join(giver, protocols=[("range", subscription(*owned[giver]))])
    assert j.error == E.NONE and h.consumer.members[giver].state.name == "UNREVOKED_PARTITIONS"
    (s,) = h.sync(giver, j.generation_id)
    kept = partitions_of(s.assignment)
    assert not set(kept) & set(c1_target)  # its assignment no longer holds what it gives up
    assert h.hb(giver, j.generation_id) == E.REBALANCE_IN_PROGRESS
    c1_epoch = h.consumer.members["c1"].member_epoch
    (r,) = h.beat("c1", c1_epoch, topic_partitions={})
    assert not set(r.assignment.get(FOO, ()) if r.assignment is not None else ()) & set(owned[giver])
    h.owners()  # no partition has two owners
    # it rejoins without them: c1 may take them now
    (j,) = h.join(giver, protocols=[("range", subscription(*kept))])
    assert j.error == E.NONE and h.consumer.members[giver].state.name != "UNREVOKED_PARTITIONS"
    (r,) = h.beat("c1", h.consumer.members["c1"].member_epoch, topic_partitions={})
    assert set(r.assignment[FOO]) & set(owned[giver])
    h.owners()


def test_leave_group_fences_classic_members_and_administrative_removals() -> None:
    h = Harness()
    ids, generation, c1 = h.mixed()
    epoch = h.consumer.group_epoch
    top, results = h.c.leave_group(GROUP, [(ids[0], None), ("ghost", None)])
    assert top == E.NONE and [e for _, _, e in results] == [E.NONE, E.UNKNOWN_MEMBER_ID]
    assert ids[0] not in h.consumer.members and h.consumer.group_epoch == epoch + 1
    successor = Harness(h.log)
    assert ids[0] not in successor.consumer.members  # the fencing was written


def test_a_new_coordinator_resumes_the_mixed_group_with_its_classic_members() -> None:
    h = Harness()
    ids, generation, c1 = h.mixed()
    before = h.consumer.snapshot()
    successor = Harness(h.log)
    assert successor.consumer.snapshot() == before
    for m in ids:
        assert successor.consumer.members[m].classic_member_metadata == h.consumer.members[m].classic_member_metadata
        assert successor.hb(m, generation) == E.NONE
        (s,) = successor.sync(m, generation)
        assert s.error == E.NONE
    (r,) = successor.beat(c1, before.members[c1].member_epoch)
    assert r.error_code == E.NONE


# --------------------------------------------------------------------------- downgrade


def test_the_last_consumer_member_leaving_downgrades_the_group_which_rebalances() -> None:
    h = Harness()
    ids, generation, c1 = h.mixed()
    epoch = h.consumer.group_epoch
    appended = len(h.log.appends)
    (r,) = h.beat(c1, -1)
    assert r.error_code == E.NONE
    assert h.consumer is None and h.classic is not None
    classic = h.classic
    assert classic.generation_id == epoch and classic.protocol_type == "consumer"
    assert classic.protocol_name == "range" and sorted(classic.members) == sorted(ids)
    assert classic.state.value == "PreparingRebalance"
    # one batch: every consumer group record tombstoned, then the classic group's record
    (batch,) = [records for _, records in h.log.appends[appended:]]
    consumer_part = [(k, v) for k, v in batch if is_consumer_group_key(k)]
    assert consumer_part and all(v is None for _, v in consumer_part)
    key, value = batch[-1]
    k, v = decode_classic_record(key, value)
    assert isinstance(k, GroupMetadataKey) and v.generation == epoch
    assert sorted(m.member_id for m in v.members) == sorted(ids)
    held = sorted(p for m in v.members for p in partitions_of(m.assignment))
    assert len(held) == len(set(held))  # the members' targets: disjoint
    # the classic members rejoin and the classic rebalance completes
    assert h.hb(ids[0], generation) in (E.REBALANCE_IN_PROGRESS, E.ILLEGAL_GENERATION)
    joins = [h.join(m) for m in ids]
    r1, r2 = joins[0][-1], joins[1][-1]
    assert r1.error == r2.error == E.NONE and r1.generation_id == epoch + 1
    leader = r1.leader_id
    plan = {ids[0]: assignment_bytes(0, 1), ids[1]: assignment_bytes(2, 3)}
    syncs = [h.sync(m, r1.generation_id, plan if m == leader else None) for m in ids]
    assert [s[-1].error for s in syncs] == [E.NONE, E.NONE]
    assert h.classic.state.value == "Stable"
    # a new coordinator loads a classic group, not the consumer group
    successor = Harness(h.log)
    assert successor.consumer is None and successor.classic is not None
    assert sorted(successor.classic.members) == sorted(ids)


def test_a_session_expiry_of_the_last_consumer_member_downgrades_too() -> None:
    h = Harness()
    ids, generation, c1 = h.mixed()
    for _ in range(3):  # the classic members heartbeat, c1 is silent for its session
        h.timers.advance(CONSUMER_SESSION_MS // 3 + 1)
        for m in ids:
            if h.consumer is not None:
                h.hb(m, generation)
    assert h.consumer is None and sorted(h.classic.members) == sorted(ids)


def test_no_downgrade_when_the_policy_forbids_it_or_the_classic_group_would_be_too_large() -> None:
    for harness in (dict(policy="upgrade"), dict(max_size=1)):
        h = Harness(**harness)
        # one classic member upgraded by c1, then a second classic member joins the consumer group
        (first,), _ = h.classic_stable(count=1)
        h.consumer_join("c1")
        (j,) = h.join(first)
        (second,) = h.join()
        assert j.error == second.error == E.NONE
        ids, c1 = [first, second.member_id], "c1"
        (r,) = h.beat(c1, -1)
        assert r.error_code == E.NONE
        assert h.classic is None and set(h.consumer.members) == set(ids), harness


def test_a_failed_downgrade_write_keeps_the_consumer_group() -> None:
    h = Harness()
    ids, generation, c1 = h.mixed()
    before = h.consumer.snapshot()
    h.log.auto = False
    answers = h.beat(c1, -1)
    assert h.classic is not None and h.consumer is None
    h.log.release(E.NOT_LEADER_OR_FOLLOWER)
    assert answers[-1].error_code == E.NOT_COORDINATOR
    assert h.classic is None and h.consumer is not None and h.consumer.snapshot() == before


def test_a_classic_static_member_replacing_the_last_consumer_member_downgrades_the_group() -> None:
    h = Harness()
    ids, gen = h.classic_stable(count=1)
    (r,) = h.consumer_join("c1", instance="i-1")
    assert r.error_code == E.NONE
    (j,) = h.join(ids[0])
    (s,) = h.sync(ids[0], j.generation_id)
    assert s.error == E.NONE
    # "i-1" restarts with the classic protocol
    (j2,) = h.join(instance="i-1")
    assert j2.error == E.NONE
    assert h.consumer is None and h.classic is not None
    assert sorted(h.classic.members) == sorted([ids[0], j2.member_id])
    successor = Harness(h.log)
    assert successor.consumer is None and sorted(successor.classic.members) == sorted(h.classic.members)


def test_upgrade_then_downgrade_then_upgrade_again_loads_as_the_last_conversion_left_it() -> None:
    h = Harness()
    ids, generation, c1 = h.mixed()
    h.beat(c1, -1)
    assert h.classic is not None
    # the classic members are still there: a consumer member upgrades the group again
    (r,) = h.consumer_join("c2")
    assert r.error_code == E.NONE and h.consumer is not None
    successor = Harness(h.log)
    assert successor.classic is None and set(successor.consumer.members) == {*ids, "c2"}
    keys = [decode_record(k, v).key for k, v in written(h.log) if is_consumer_group_key(k)]
    assert any(isinstance(k, ConsumerGroupMetadataKey) for k in keys)


# --------------------------------------------------------------------------- the embedded protocol


def test_the_subscription_rack_id_and_owned_partitions_are_read_from_version_3() -> None:
    body = encode_subscription(Subscription(["foo", "bar"], b"ud", {"foo": [1, 3]}), 1)[2:]
    rack = b"rack-a"
    v3 = struct.pack(">h", 3) + body + struct.pack(">i", 7) + struct.pack(">h", len(rack)) + rack
    sub = classic_protocol.decode_classic_subscription([("range", v3)])
    assert (sub.topics, dict(sub.owned_partitions), sub.rack_id, sub.version) == (("foo", "bar"), {"foo": [1, 3]},
                                                                                   "rack-a", 3)
    assert classic_protocol.owned_partitions(sub, TOPICS) == {FOO: frozenset({1, 3})}
    with pytest.raises(Exception) as bad:
        classic_protocol.decode_classic_subscription([("range", v3[:-3])])
    assert getattr(bad.value, "code", None) == E.INCONSISTENT_GROUP_PROTOCOL


def test_the_assignment_is_written_in_the_subscription_version() -> None:
    data = classic_protocol.encode_classic_assignment({FOO: frozenset({2, 0})}, {FOO: "foo"}, 3)
    assert struct.unpack(">h", data[:2])[0] == 3
    assert decode_assignment(data).assigned_partitions == {"foo": [0, 2]}
    assert struct.unpack(">h", classic_protocol.encode_classic_assignment({}, {}, 9)[:2])[0] == 3


def test_offsets_committed_while_the_group_converts_are_kept() -> None:
    h = Harness()
    ids, gen = h.classic_stable()
    h.log.auto = False
    done: list = []
    h.c.commit_offsets(GROUP, ids[0], None, gen, {("foo", 0): OffsetAndMetadata(5, -1, "", 0, None)}, done.append)
    h.consumer_join("c1")  # the upgrade happens while the commit is being written
    h.log.release(index=0)
    h.log.release(index=0)
    assert done == [{("foo", 0): E.NONE}] and h.consumer is not None
    assert h.c.fetch_offsets(GROUP, [("foo", 0)])[1][("foo", 0)].offset == 5
    h.log.auto = True
    for m in ids:
        (j,) = h.join(m)
        h.sync(m, j.generation_id)
    member = h.consumer.members[ids[0]]
    h.log.auto = False
    h.c.commit_offsets(GROUP, ids[0], None, member.member_epoch, {("foo", 0): OffsetAndMetadata(8, -1, "", 0, None)},
                       done.append, api_version=8)
    h.beat("c1", -1)  # the downgrade happens while this commit is being written
    h.log.release(index=0)
    h.log.release(index=0)
    assert done[-1] == {("foo", 0): E.NONE} and h.classic is not None
    assert h.c.fetch_offsets(GROUP, [("foo", 0)])[1][("foo", 0)].offset == 8


def test_a_static_classic_member_restarting_with_the_consumer_protocol_takes_over_its_partitions() -> None:
    h = Harness()
    j1, j2 = h.join(instance="s1"), h.join(instance="s2")
    h.timers.advance(2 * DELAY)
    (r1,), (r2,) = j1, j2
    leader = r1.leader_id
    plan = {r1.member_id: assignment_bytes(0, 1), r2.member_id: assignment_bytes(2, 3)}
    syncs = [h.sync(r.member_id, r.generation_id, plan if r.member_id == leader else None, instance=i)
             for r, i in ((r1, "s1"), (r2, "s2"))]
    assert [s[-1].error for s in syncs] == [E.NONE, E.NONE]
    gen = r1.generation_id
    # s1's process restarts with group.protocol=consumer (a static member sent no LeaveGroup)
    (r,) = h.consumer_join("new-s1", instance="s1")
    assert r.error_code == E.NONE
    assert set(h.consumer.members) == {"new-s1", r2.member_id}
    assert sorted(r.assignment[FOO]) == [0, 1]  # its predecessor's partitions, at once
    assert h.consumer.group_epoch == gen  # same subscription, same members: no rebalance
    assert h.hb(r2.member_id, gen, instance="s2") == E.NONE  # the classic member is not disturbed
    h.owners()
