"""Replication state of a partition and of the replica manager (``shared/reference/zk-controller-replication.md`` §4).

* :class:`Partition` with a fake ``now_ms``: HW over the (maximal) ISR and
  recently caught-up followers, caught-up times, ISR shrink/expand and their
  in-flight state, acks=all answers, role changes.
* :class:`ReplicaManager` with real logs in tmp dirs and ``task.Clock``: the
  fetcher manager hand-over, ISR writes through a fake ``isr_writer``, the
  isr_change propagation rule, acks=all waiting, follower-side epoch checks
  and truncations delaying a LeaderAndIsr.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from twisted.internet import defer, task

from mafka.broker.dispatcher import Dispatcher, collect_handlers
from mafka.broker.metadata_cache import MetadataCache
from mafka.broker.partition import LeaderState, Partition
from mafka.broker.replica_manager import FetchPartition, FollowerTarget, ReplicaManager
from mafka.coordination.znodes import LeaderIsrAndControllerEpoch
from mafka.errors import ErrorCode, NotEnoughReplicasError, NotLeaderOrFollowerError
from mafka.log.config import LogConfig
from mafka.log.log import Log
from mafka.log.manager import LogManager
from mafka.wire.codec import decode_request, decode_response, encode_request
from mafka.wire.records import Record, build_batch, iter_records

T0 = 1_000_000_000  # ms: far from 0, so a "last caught up at 0" follower is long out of date
LAG = 10_000
TP = ("t", 0)


def batch(n: int = 1, *, base: int = 0, epoch: int = -1, value: bytes = b"v") -> bytes:
    return build_batch(
        [Record(base + i, 1000 + i, b"k", value) for i in range(n)], base_offset=base, partition_leader_epoch=epoch
    )


# ============================================================================ Partition


@pytest.fixture
def log(tmp_path):
    lg = Log.open(tmp_path / "t-0", LogConfig(), lambda: T0)
    yield lg
    lg.close()


def state(isr, replicas=(1, 2, 3), *, epoch=0, zk=0, leader=1, controller_epoch=1) -> LeaderState:
    return LeaderState(leader, epoch, tuple(isr), tuple(replicas), zk, controller_epoch)


def make_leader(log, isr=(1, 2, 3), replicas=(1, 2, 3), *, epoch=0, hw=0, now=T0, **kw) -> Partition:
    p = Partition("t", 0, 1, log, high_watermark=hw, replica_lag_time_max_ms=LAG)
    p.make_leader(state(isr, replicas, epoch=epoch, **kw), now)
    return p


def append(p: Partition, n: int = 1, now: int = T0, **kw):
    return p.append_as_leader(batch(n), now_ms=now, **kw)


def change_isr(p: Partition, new_isr, zk_version: int | None = None, now: int = T0) -> bool:
    """An ISR change written at once (zkVersion + 1 unless given)."""
    _, expected = p.begin_isr_change(tuple(new_isr))
    return p.complete_isr_change(tuple(new_isr), p.leader_epoch, expected + 1 if zk_version is None else zk_version, now)


def test_hw_is_the_minimum_log_end_offset_over_the_isr(log):
    p = make_leader(log, isr=(1, 2, 3))
    append(p, 5)
    assert (p.log.next_offset, p.high_watermark) == (5, 0)
    assert p.update_follower(2, 5, T0) is False  # 3 has not fetched yet
    assert p.high_watermark == 0
    assert p.update_follower(3, 3, T0) is True
    assert p.high_watermark == 3
    p.update_follower(3, 5, T0)
    assert p.high_watermark == 5


def test_a_leader_alone_in_the_isr_commits_at_once(log):
    p = make_leader(log, isr=(1,), replicas=(1, 2))  # 2 never caught up
    append(p, 4)
    assert p.high_watermark == 4


def test_a_follower_outside_the_isr_caught_up_within_the_lag_holds_the_hw(log):
    p = make_leader(log, isr=(1, 2), replicas=(1, 2, 3))
    append(p, 5)
    p.update_follower(3, 5, T0)  # 3 (outside the ISR) at the log end: caught up now
    p.update_follower(2, 5, T0)
    assert p.high_watermark == 5
    append(p, 5, T0 + 1)  # LEO 10
    p.update_follower(2, 10, T0 + 2)
    assert p.high_watermark == 5  # 3 is caught up within replica.lag.time.max.ms: it counts
    p.update_follower(2, 10, T0 + LAG)
    assert p.high_watermark == 5  # exactly the lag: still counts
    p.update_follower(2, 10, T0 + LAG + 1)
    assert p.high_watermark == 10  # 3 no longer caught up recently: ignored


def test_a_follower_outside_the_isr_that_never_caught_up_does_not_hold_the_hw(log):
    p = make_leader(log, isr=(1, 2), replicas=(1, 2, 3))
    append(p, 5)
    p.make_leader(state((1, 2), (1, 2, 3), epoch=1), T0)  # epoch 1 starts at 5
    p.update_follower(3, 1, T0 + 1)  # behind the epoch start and never at the log end: not caught up
    p.update_follower(2, 5, T0 + 1)
    assert p.high_watermark == 5


def test_the_hw_never_decreases(log):
    p = make_leader(log, isr=(1, 2), replicas=(1, 2, 3))
    append(p, 5)
    p.update_follower(2, 5, T0)
    assert p.high_watermark == 5
    append(p, 5, T0 + 1)
    assert p.update_follower(2, 3, T0 + 2) is False  # the follower went back (it truncated)
    assert p.high_watermark == 5
    p.make_leader(state((1, 2), (1, 2, 3), epoch=1), T0 + 3)  # a new epoch, same leader
    assert p.high_watermark == 5
    assert change_isr(p, (1, 2, 3), now=T0 + 4) is True  # 3 (never fetched, LEO -1) joins
    assert p.high_watermark == 5


def test_last_caught_up_time_rules(log):
    p = make_leader(log, isr=(1, 2), replicas=(1, 2))
    fs = p.followers[2]
    assert fs.last_caught_up_ms == T0  # an ISR member at the leader change: now
    append(p, 5)  # LEO 5
    p.update_follower(2, 3, T0 + 200)  # behind, no earlier fetch: unchanged
    assert fs.last_caught_up_ms == T0
    append(p, 5, T0 + 250)  # LEO 10
    p.update_follower(2, 5, T0 + 300)  # >= the leader's LEO (5) at its previous fetch: that fetch's time
    assert fs.last_caught_up_ms == T0 + 200
    append(p, 5, T0 + 350)  # LEO 15
    p.update_follower(2, 7, T0 + 400)  # below the leader's LEO at the previous fetch (10): unchanged
    assert fs.last_caught_up_ms == T0 + 200
    p.update_follower(2, 15, T0 + 500)  # at the log end: now
    assert fs.last_caught_up_ms == T0 + 500
    assert (fs.log_end_offset, fs.last_fetch_leader_leo, fs.last_fetch_ms) == (15, 15, T0 + 500)


def test_a_follower_outside_the_isr_starts_never_caught_up(log):
    p = make_leader(log, isr=(1, 2), replicas=(1, 2, 3))
    assert (p.followers[2].last_caught_up_ms, p.followers[3].last_caught_up_ms) == (T0, 0)
    assert p.followers[2].log_end_offset == -1


def test_shrink_needs_both_a_different_leo_and_an_exceeded_lag(log):
    p = make_leader(log, isr=(1, 2, 3))
    append(p, 5)
    p.update_follower(2, 5, T0)  # 2 at the log end
    p.update_follower(3, 2, T0)  # 3 behind
    assert p.isr_to_shrink(T0 + LAG) is None  # the lag is not exceeded
    assert p.isr_to_shrink(T0 + LAG + 1) == (1, 2)  # 3: LEO differs and lag exceeded; 2 is at the LEO
    # 2 last caught up at T0 too, but its LEO is the leader's: never out of sync.
    assert p.isr_to_shrink(T0 + 100 * LAG) == (1, 2)
    append(p, 1, T0 + 100 * LAG)  # now 2's LEO differs as well
    assert p.isr_to_shrink(T0 + 100 * LAG) == (1,)


def test_a_follower_at_the_log_end_is_never_shrunk(log):
    p = make_leader(log, isr=(1, 2), replicas=(1, 2))
    append(p, 5)
    p.update_follower(2, 5, T0)
    assert p.isr_to_shrink(T0 + 1000 * LAG) is None


def test_shrink_and_expand_are_leader_only(log):
    p = Partition("t", 0, 1, log, replica_lag_time_max_ms=LAG)
    p.make_follower(state((2, 1), (1, 2), leader=2))
    assert p.isr_to_shrink(T0 + 10 * LAG) is None
    assert p.isr_to_expand(1) is None
    with pytest.raises(NotLeaderOrFollowerError):
        p.begin_isr_change((2,))


def test_expand_needs_the_hw_and_the_leader_epoch_start_offset(log):
    # KAFKA-7128: epoch 0 wrote offsets 0..4; this leader's epoch 1 starts at 5; the checkpointed HW is 3.
    log.append_as_leader(batch(5), 0)
    p = make_leader(log, isr=(1, 3), replicas=(1, 2, 3), epoch=1, hw=3)
    assert (p.leader_epoch_start_offset, p.high_watermark) == (5, 3)  # 3 (in the ISR) has not fetched
    assert p.isr_to_expand(2) is None  # never fetched
    p.update_follower(2, 4, T0)
    assert p.isr_to_expand(2) is None  # LEO 4 >= HW 3, but below the epoch start 5
    p.update_follower(2, 5, T0)
    assert p.isr_to_expand(2) == (1, 3, 2)


def test_expand_needs_the_follower_at_the_hw(log):
    p = make_leader(log, isr=(1, 3), replicas=(1, 2, 3))
    assert p.leader_epoch_start_offset == 0
    append(p, 5)
    p.update_follower(3, 5, T0)
    assert p.high_watermark == 5
    p.update_follower(2, 4, T0)
    assert p.isr_to_expand(2) is None  # >= the epoch start, below the HW
    p.update_follower(2, 5, T0)
    assert p.isr_to_expand(2) == (1, 3, 2)
    assert p.isr_to_expand(3) is None  # already in the ISR
    assert p.isr_to_expand(9) is None  # not a replica
    p.begin_isr_change((1, 3, 2))
    assert p.isr_to_expand(2) is None  # a change is in flight
    assert p.isr_to_shrink(T0 + 10 * LAG) is None


def test_the_maximal_isr_holds_the_hw_while_an_expansion_is_in_flight(log):
    p = make_leader(log, isr=(1,), replicas=(1, 2))
    append(p, 5)
    p.update_follower(2, 5, T0)
    new_isr = p.isr_to_expand(2)
    assert new_isr == (1, 2)
    p.begin_isr_change(new_isr)
    assert p.maximal_isr == {1, 2} and p.isr == (1,)
    # Long after 2 last caught up, appends do not let the HW run past it: it may already count as in sync.
    append(p, 5, T0 + 10 * LAG)
    assert p.high_watermark == 5
    assert p.complete_isr_change(new_isr, 0, 1, T0 + 10 * LAG) is True
    assert p.isr == (1, 2) and p.high_watermark == 5


def test_without_the_expansion_in_flight_a_stale_follower_outside_the_isr_is_ignored(log):
    # The control for the test above: same history, no ISR change proposed.
    p = make_leader(log, isr=(1,), replicas=(1, 2))
    append(p, 5)
    p.update_follower(2, 5, T0)
    append(p, 5, T0 + 10 * LAG)
    assert p.high_watermark == 10


@pytest.mark.parametrize("outcome", ["written", "conflict"])
def test_the_maximal_isr_holds_the_hw_while_a_shrink_is_in_flight(log, outcome):
    p = make_leader(log, isr=(1, 2), replicas=(1, 2), zk=4)
    append(p, 5)
    p.update_follower(2, 5, T0)
    append(p, 5, T0)  # LEO 10, 2 at 5
    now = T0 + LAG + 1
    new_isr = p.isr_to_shrink(now)
    assert new_isr == (1,)
    p.begin_isr_change(new_isr)
    assert p.maximal_isr == {1, 2}
    append(p, 1, now + 1)
    assert p.high_watermark == 5  # 2 is still in the maximal ISR
    if outcome == "written":
        assert p.complete_isr_change(new_isr, 0, 5, now + 2) is True
        assert (p.isr, p.state.zk_version, p.pending_isr) == ((1,), 5, None)
        assert p.high_watermark == 11  # recomputed over the new ISR
    else:
        assert p.complete_isr_change(new_isr, 0, None, now + 2) is False
        assert (p.isr, p.state.zk_version, p.pending_isr) == ((1, 2), 4, None)
        assert p.high_watermark == 5  # 2 is still in the ISR


def test_begin_isr_change_keeps_the_epochs_of_the_last_leader_and_isr(log):
    p = make_leader(log, isr=(1, 2, 3), epoch=2, zk=7, controller_epoch=4)
    znode, expected = p.begin_isr_change((1, 2))
    assert znode == LeaderIsrAndControllerEpoch(1, 2, (1, 2), 4)
    assert expected == 7
    assert p.pending_isr == (1, 2)


def test_complete_isr_change_ignores_stale_epochs_and_other_proposals(log):
    p = make_leader(log, isr=(1, 2, 3), epoch=2, zk=7)
    p.begin_isr_change((1, 2))
    assert p.complete_isr_change((1, 3), 2, 8) is False  # not what is in flight
    assert p.pending_isr == (1, 2)
    # A LeaderAndIsr arrives meanwhile (new epoch, new zkVersion): the old write's result is stale.
    p.make_leader(state((1, 2, 3), epoch=3, zk=9), T0)
    assert p.pending_isr is None
    assert p.complete_isr_change((1, 2), 2, 8) is False
    assert (p.isr, p.state.zk_version) == ((1, 2, 3), 9)


def test_complete_isr_change_on_conflict_keeps_the_old_isr(log):
    p = make_leader(log, isr=(1, 2, 3), epoch=2, zk=7)
    p.begin_isr_change((1, 2))
    assert p.complete_isr_change((1, 2), 2, None) is False
    assert (p.isr, p.state.zk_version, p.pending_isr) == ((1, 2, 3), 7, None)
    p.begin_isr_change((1, 2))  # it may be proposed again
    assert p.complete_isr_change((1, 2), 2, 8) is True
    assert (p.isr, p.state.zk_version, p.pending_isr) == ((1, 2), 8, None)
    assert p.leader_epoch == 2  # leaders never bump the epoch


def test_acks_all_below_min_isr_writes_nothing(log):
    p = make_leader(log, isr=(1,), replicas=(1, 2))
    append(p, 2)
    before = (p.log.next_offset, p.log.size)
    with pytest.raises(NotEnoughReplicasError) as err:
        append(p, 1, required_acks=-1, min_isr=2)
    assert err.value.code == ErrorCode.NOT_ENOUGH_REPLICAS
    assert (p.log.next_offset, p.log.size) == before
    append(p, 1, required_acks=1, min_isr=2)  # min.insync.replicas is for acks=all only
    assert p.log.next_offset == before[0] + 1


def test_acks_all_isr_shrinking_below_min_after_the_append(log):
    p = make_leader(log, isr=(1, 2), replicas=(1, 2))
    info = append(p, 3, required_acks=-1, min_isr=2)
    required = info.last_offset + 1
    assert p.replication_status(required, 2) is None  # waiting for 2
    assert change_isr(p, (1,), now=T0 + LAG + 1) is True  # 2 dropped; the HW moves to the LEO
    assert p.high_watermark == 3
    assert p.replication_status(required, 2) == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    assert p.replication_status(required, 1) == ErrorCode.NONE


def test_acks_all_answered_once_the_hw_covers_it(log):
    p = make_leader(log, isr=(1, 2), replicas=(1, 2))
    info = append(p, 3, required_acks=-1, min_isr=2)
    p.update_follower(2, 2, T0)
    assert p.replication_status(info.last_offset + 1, 2) is None
    p.update_follower(2, 3, T0)
    assert p.replication_status(info.last_offset + 1, 2) == ErrorCode.NONE
    p.make_follower(state((2, 1), (1, 2), epoch=1, leader=2))
    assert p.replication_status(info.last_offset + 1, 2) == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_make_leader_keeps_follower_state_only_if_already_leader(log):
    p = Partition("t", 0, 1, log, replica_lag_time_max_ms=LAG)
    assert p.make_leader(state((1, 2), (1, 2, 3)), T0) is True  # was not leader
    append(p, 5)
    p.update_follower(2, 5, T0 + 10)
    p.update_follower(3, 4, T0 + 10)
    # Still leader at a new epoch: log end offsets kept; caught-up times restart.
    assert p.make_leader(state((1, 2), (1, 2, 3), epoch=1), T0 + 20) is False
    assert p.followers[2].log_end_offset == 5 and p.followers[3].log_end_offset == 4
    assert p.followers[2].last_caught_up_ms == T0 + 20  # in the ISR: now
    assert p.followers[3].last_caught_up_ms == 0  # outside: never
    assert p.leader_epoch_start_offset == 5
    assert p.log.epoch_cache.entries == [(0, 0), (1, 5)]
    # Through a follower spell, leadership is new again: everything is forgotten.
    p.make_follower(state((2, 1), (1, 2, 3), epoch=2, leader=2))
    assert p.followers == {} and p.leader_epoch_start_offset == -1
    assert p.make_leader(state((1, 2), (1, 2, 3), epoch=3), T0 + 30) is True
    assert p.followers[2].log_end_offset == -1 and p.followers[3].log_end_offset == -1


def test_follower_hw_is_the_leaders_capped_by_its_own_leo(log):
    p = Partition("t", 0, 2, log, replica_lag_time_max_ms=LAG)
    p.make_follower(state((1, 2), (1, 2), leader=1))
    for i in range(4):
        p.append_as_follower(batch(1, base=i, epoch=0))
    p.update_follower_high_watermark(2)
    assert p.high_watermark == 2
    p.update_follower_high_watermark(9)
    assert p.high_watermark == 4  # capped by its own LEO
    p.update_follower_high_watermark(9, leader_log_start_offset=2)
    assert p.log.log_start_offset == 2
    p.log.truncate_to(3)
    p.truncated()
    assert p.high_watermark == 3


# ============================================================================ ReplicaManager


def lai(*partitions, live=((2, "h2", 9093), (3, "h3", 9094)), controller_epoch=1):
    """A decoded LeaderAndIsr v2 body; each partition: (index, leader, epoch, isr, replicas[, zk_version])."""
    body = {
        "controller_id": 1,
        "controller_epoch": controller_epoch,
        "broker_epoch": -1,
        "topic_states": [
            {
                "topic_name": "t",
                "partition_states": [
                    {"partition_index": p[0], "controller_epoch": controller_epoch, "leader": p[1], "leader_epoch": p[2],
                     "isr": list(p[3]), "zk_version": p[5] if len(p) > 5 else 0, "replicas": list(p[4]), "is_new": True}
                    for p in partitions
                ],
            }
        ],
        "live_leaders": [{"broker_id": b, "host_name": h, "port": port} for b, h, port in live],
    }
    return decode_request(encode_request(4, 2, 1, "controller", body)[4:]).body


def stop_replica(*indexes, delete=False, controller_epoch=1):
    body = {"controller_id": 1, "controller_epoch": controller_epoch, "broker_epoch": -1,
            "delete_partitions": delete, "topics": [{"name": "t", "partition_indexes": list(indexes)}]}
    return decode_request(encode_request(5, 1, 1, "controller", body)[4:]).body


class FakeFetcherManager:
    def __init__(self) -> None:
        self.calls: list[tuple] = []

    def add_partitions(self, targets):
        self.calls.append(("add", dict(targets)))

    def remove_partitions(self, tps):
        self.calls.append(("remove", list(tps)))

    def shutdown(self):
        self.calls.append(("shutdown",))


class IsrWriter:
    """Records ISR writes; each returns a Deferred the test fires."""

    def __init__(self) -> None:
        self.writes: list[SimpleNamespace] = []

    def __call__(self, tp, znode, expected):
        d: defer.Deferred = defer.Deferred()
        self.writes.append(SimpleNamespace(tp=tp, znode=znode, expected=expected, d=d))
        return d


class ManualBlocking:
    """A ``run_blocking`` whose jobs run when the test says so (a worker thread, frozen)."""

    def __init__(self) -> None:
        self.jobs: list[tuple] = []

    def __call__(self, fn, *args):
        d: defer.Deferred = defer.Deferred()
        self.jobs.append((fn, args, d))
        return d

    def run_all(self):
        jobs, self.jobs = self.jobs, []
        for fn, args, d in jobs:
            d.callback(fn(*args))


@pytest.fixture
def rm_env(tmp_path):
    clock = task.Clock()
    clock.advance(T0 / 1000)
    managers = []

    def make(broker_id=1, **kw):
        manager = LogManager([tmp_path / f"b{broker_id}"], LogConfig(), lambda: T0, broker_id=broker_id, cluster_id="c")
        manager.startup()
        managers.append(manager)
        kw.setdefault("replica_lag_time_max_ms", LAG)
        return ReplicaManager(broker_id, manager, clock, **kw)

    yield SimpleNamespace(clock=clock, make=make)
    for m in managers:
        m.shutdown()


def produce(rm, records, *, acks=1, timeout_ms=1000, index=0):
    out: list = []
    rm.append_records(
        [("t", index, records)], acks=acks, timeout_ms=timeout_ms, produce_version=7, max_message_bytes=lambda t: 1 << 20
    ).addCallback(out.append)
    return out


def follower_fetch(rm, offset, *, replica_id=2, epoch=-1, index=0):
    out: list = []
    rm.fetch(replica_id, 0, 1, 1 << 20, [FetchPartition("t", index, offset, 1 << 20, epoch)]).addCallback(out.append)
    assert out, "a fetch with max_wait_ms=0 answers at once"
    return out[0][0]


def test_become_leader_or_follower_hands_followers_to_the_fetcher_manager(rm_env):
    fm = FakeFetcherManager()
    rm = rm_env.make(fetcher_manager=fm)
    resp = rm.become_leader_or_follower(lai(
        (0, 2, 3, (2, 1), (1, 2)),  # follows 2 (live) at epoch 3
        (1, 1, 0, (1, 2), (1, 2)),  # leads
        (2, 4, 1, (4, 1), (1, 4)),  # follows 4, which is not among the live leaders
    ))
    assert [e["error_code"] for e in resp["partition_errors"]] == [0, 0, 0]
    assert fm.calls == [
        ("remove", [("t", 1), ("t", 2)]),
        ("add", {("t", 0): FollowerTarget(2, "h2", 9093, 3)}),
    ]
    assert not rm.partitions[("t", 0)].is_leader and rm.partitions[("t", 1)].is_leader
    fm.calls.clear()
    # t-0 becomes led here; t-1 moves to broker 3; a stale epoch for t-2 changes nothing.
    rm.become_leader_or_follower(lai(
        (0, 1, 4, (1, 2), (1, 2)),
        (1, 3, 1, (3, 1), (1, 3)),
        (2, 4, 1, (4, 1), (1, 4)),
    ))
    assert fm.calls == [
        ("remove", [("t", 0)]),
        ("add", {("t", 1): FollowerTarget(3, "h3", 9094, 1)}),
    ]


def test_stop_replica_removes_the_partition_from_the_fetchers(rm_env):
    fm = FakeFetcherManager()
    rm = rm_env.make(fetcher_manager=fm)
    rm.become_leader_or_follower(lai((0, 2, 3, (2, 1), (1, 2))))
    fm.calls.clear()
    resp = rm.stop_replicas(stop_replica(0))
    assert resp["error_code"] == 0
    assert fm.calls == [("remove", [("t", 0)])]
    # Without deletion the replica stays hosted, leaderless, as in Kafka.
    assert rm.partitions[("t", 0)].state.leader == -1
    rm.shutdown()
    assert fm.calls[-1] == ("shutdown",)


def _lagging_leader(rm_env, writer):
    rm = rm_env.make(isr_writer=writer)
    rm.become_leader_or_follower(lai((0, 1, 0, (1, 2), (1, 2), 4)))
    produce(rm, batch(3))
    rm_env.clock.advance(LAG / 1000 + 1)
    return rm, rm.partitions[TP]


def test_maybe_shrink_isr_written(rm_env):
    writer = IsrWriter()
    rm, p = _lagging_leader(rm_env, writer)
    assert p.high_watermark == 0
    assert rm.maybe_shrink_isr() == 1
    [w] = writer.writes
    assert (w.tp, w.znode, w.expected) == (TP, LeaderIsrAndControllerEpoch(1, 0, (1,), 1), 4)
    assert rm.maybe_shrink_isr() == 0  # in flight: not proposed twice
    assert p.maximal_isr == {1, 2} and p.isr == (1, 2)
    w.d.callback((True, 5))
    assert (p.isr, p.state.zk_version, p.pending_isr) == ((1,), 5, None)
    assert rm.isr_change_set == {TP} and rm.isr_shrinks == 1
    assert p.high_watermark == 3
    assert rm.maybe_shrink_isr() == 0


@pytest.mark.parametrize("how", ["conflict", "failure"])
def test_maybe_shrink_isr_not_written(rm_env, how):
    writer = IsrWriter()
    rm, p = _lagging_leader(rm_env, writer)
    assert rm.maybe_shrink_isr() == 1
    if how == "conflict":
        writer.writes[0].d.callback((False, -1))
    else:
        writer.writes[0].d.errback(RuntimeError("ZooKeeper session expired"))
    assert (p.isr, p.state.zk_version, p.pending_isr) == ((1, 2), 4, None)
    assert rm.isr_change_set == set() and rm.isr_shrinks == 0
    assert p.high_watermark == 0
    assert rm.maybe_shrink_isr() == 1  # proposed again at the next run
    assert writer.writes[1].expected == 4


def test_isr_changes_are_propagated_after_five_quiet_seconds(rm_env):
    rm = rm_env.make()  # no writer: ISR changes commit at once
    rm.become_leader_or_follower(lai((0, 1, 0, (1, 2), (1, 2))))
    produce(rm, batch(1))
    rm_env.clock.advance(LAG / 1000 + 1)
    assert rm.maybe_shrink_isr() == 1
    assert rm.isr_change_set == {TP}
    assert rm.isr_changes_to_propagate() == []
    rm_env.clock.advance(4.9)
    assert rm.isr_changes_to_propagate() == []
    rm_env.clock.advance(0.2)  # more than 5 s without a change
    assert rm.isr_changes_to_propagate() == [TP]
    assert rm.isr_change_set == set()
    assert rm.isr_changes_to_propagate() == []


def test_isr_changes_are_propagated_at_least_every_minute(rm_env):
    rm = rm_env.make(replica_lag_time_max_ms=1000)
    rm.become_leader_or_follower(lai((0, 1, 0, (1, 2), (1, 2))))
    p = rm.partitions[TP]
    start = rm.now_ms()
    propagated = []
    for i in range(60):  # an ISR change every 1.5 s: never 5 s quiet
        rm_env.clock.advance(1.5)
        if 2 in p.isr:
            produce(rm, batch(1))
            assert rm.maybe_shrink_isr() == 1
        else:
            follower_fetch(rm, p.log.next_offset)  # caught up: re-admitted
        assert rm.isr_shrinks + rm.isr_expands == i + 1
        if changed := rm.isr_changes_to_propagate():
            assert changed == [TP]
            propagated.append(rm.now_ms() - start)
    assert len(propagated) == 1 and 60_000 < propagated[0] <= 61_500


def test_acks_all_waits_for_a_follower_fetch_to_move_the_hw(rm_env):
    rm = rm_env.make()
    rm.become_leader_or_follower(lai((0, 1, 0, (1, 2), (1, 2))))
    out = produce(rm, batch(3), acks=-1)
    assert out == []
    follower_fetch(rm, 0)
    assert out == []  # the HW stays 0
    follower_fetch(rm, 2)
    assert out == []  # HW 2 does not cover offset 2
    follower_fetch(rm, 3)  # answered by the fetch itself, no clock movement
    r = out[0][TP]
    assert (r.error, r.base_offset, r.last_offset) == (ErrorCode.NONE, 0, 2)


def test_acks_all_times_out(rm_env):
    rm = rm_env.make()
    rm.become_leader_or_follower(lai((0, 1, 0, (1, 2), (1, 2))))
    out = produce(rm, batch(1), acks=-1, timeout_ms=1000)
    rm_env.clock.advance(0.9)
    assert out == []
    rm_env.clock.advance(0.2)
    assert out[0][TP].error == ErrorCode.REQUEST_TIMED_OUT
    assert rm.partitions[TP].log.next_offset == 1  # written all the same


def test_acks_all_min_insync(rm_env):
    rm = rm_env.make(min_insync_replicas=lambda topic: 2)
    rm.become_leader_or_follower(lai((0, 1, 0, (1,), (1, 2)), (1, 1, 0, (1, 2), (1, 2))))
    out = produce(rm, batch(1), acks=-1)  # ISR (1,) < 2
    assert out[0][TP].error == ErrorCode.NOT_ENOUGH_REPLICAS
    assert rm.partitions[TP].log.next_offset == 0  # nothing written
    out = produce(rm, batch(2), acks=-1, index=1)  # ISR (1, 2): written, waiting
    assert out == [] and rm.partitions[("t", 1)].log.next_offset == 2
    rm_env.clock.advance(LAG / 1000 + 1)
    out2 = produce(rm, batch(1), acks=-1, timeout_ms=60_000, index=1)
    assert rm.maybe_shrink_isr() == 1  # 2 never fetched: dropped; the HW reaches the LEO
    assert out[0][("t", 1)].error == ErrorCode.REQUEST_TIMED_OUT  # the first timed out meanwhile
    assert out2[0][("t", 1)].error == ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND
    assert rm.partitions[("t", 1)].log.next_offset == 3


def test_a_follower_fetch_re_admits_it_to_the_isr(rm_env):
    writer = IsrWriter()
    rm = rm_env.make(isr_writer=writer)
    rm.become_leader_or_follower(lai((0, 1, 0, (1,), (1, 2), 2)))
    produce(rm, batch(3))
    p = rm.partitions[TP]
    follower_fetch(rm, 1)
    assert writer.writes == []  # below the HW (3)
    follower_fetch(rm, 3)
    [w] = writer.writes
    assert (w.znode.isr, w.expected) == ((1, 2), 2)
    follower_fetch(rm, 3)
    assert len(writer.writes) == 1  # not proposed again while in flight
    w.d.callback((True, 3))
    assert (p.isr, p.state.zk_version) == ((1, 2), 3)
    assert rm.isr_expands == 1 and rm.isr_change_set == {TP}


def test_a_fenced_follower_fetch_does_not_move_the_hw(rm_env):
    rm = rm_env.make()
    rm.become_leader_or_follower(lai((0, 1, 3, (1, 2), (1, 2))))
    produce(rm, batch(3))
    p = rm.partitions[TP]
    r = follower_fetch(rm, 3, epoch=2)
    assert r.error == ErrorCode.FENCED_LEADER_EPOCH
    assert p.followers[2].log_end_offset == -1 and p.high_watermark == 0
    r = follower_fetch(rm, 3, epoch=3)
    assert r.error == ErrorCode.NONE and p.high_watermark == 3


def _follower_with_data(rm, epoch=3, n=5, leader_hw=2):
    rm.become_leader_or_follower(lai((0, 2, epoch, (2, 1), (1, 2))))
    for i in range(n):
        assert rm.append_as_follower(TP, epoch, batch(1, base=i, epoch=epoch), leader_hw, 0) == i + 1
    return rm.partitions[TP]


def _fired(d):
    out = []
    d.addCallback(out.append)
    assert out, "fired"
    return out[0]


def test_follower_operations_check_the_leader_epoch(rm_env):
    rm = rm_env.make()
    p = _follower_with_data(rm, epoch=3)
    assert (p.log.next_offset, p.high_watermark) == (5, 2)
    assert rm.follower_partition(TP, 3) is p
    assert rm.follower_partition(TP, 2) is None
    assert rm.append_as_follower(TP, 2, batch(1, base=5, epoch=2), 5, 0) is None  # stale epoch: refused
    assert rm.append_as_follower(TP, 4, batch(1, base=5, epoch=4), 5, 0) is None  # unknown epoch too
    assert p.log.next_offset == 5
    assert _fired(rm.truncate_follower(TP, 2, 1)) is False
    assert _fired(rm.reset_follower(TP, 2, 9)) is False
    assert p.log.next_offset == 5
    assert _fired(rm.truncate_follower(TP, 3, 9)) is True  # at/after the LEO: nothing to do
    assert _fired(rm.truncate_follower(TP, 3, 3)) is True
    assert (p.log.next_offset, p.high_watermark) == (3, 2)
    assert _fired(rm.truncate_follower(TP, 3, 1)) is True
    assert (p.log.next_offset, p.high_watermark) == (1, 1)  # the HW is clamped to the LEO
    assert rm.append_as_follower(TP, 3, batch(2, base=1, epoch=3), 3, 0) == 3
    assert p.high_watermark == 3
    assert rm.append_as_follower(("t", 9), 3, batch(1), 0, 0) is None  # not hosted


def test_follower_operations_refuse_a_leader(rm_env):
    rm = rm_env.make()
    rm.become_leader_or_follower(lai((0, 1, 3, (1, 2), (1, 2))))
    produce(rm, batch(2))
    assert rm.follower_partition(TP, 3) is None
    assert _fired(rm.truncate_follower(TP, 3, 0)) is False
    assert rm.append_as_follower(TP, 3, batch(1, base=2, epoch=3), 2, 0) is None
    assert rm.partitions[TP].log.next_offset == 2


def test_a_running_truncation_blocks_follower_operations(rm_env):
    blocking = ManualBlocking()
    rm = rm_env.make(run_blocking=blocking)
    p = _follower_with_data(rm, epoch=3)
    d = rm.truncate_follower(TP, 3, 2)
    assert not d.called and len(blocking.jobs) == 1
    assert rm.follower_partition(TP, 3) is None  # while it runs
    assert rm.append_as_follower(TP, 3, batch(1, base=5, epoch=3), 5, 0) is None
    blocking.run_all()
    assert _fired(d) is True
    assert p.log.next_offset == 2 and rm.follower_partition(TP, 3) is p


def _dispatch_env(rm):
    broker = SimpleNamespace(
        replica_manager=rm, metadata_cache=MetadataCache(1), broker_epoch=100,
        max_message_bytes=lambda topic: 1 << 20, auto_create_topics=False, auto_create_topic=lambda name: None,
        on_metadata_update=lambda deleted: None, run_blocking=lambda fn, *args: defer.maybeDeferred(fn, *args),
    )
    return Dispatcher(collect_handlers(broker))


def test_a_truncation_in_flight_delays_the_leader_and_isr(rm_env):
    blocking = ManualBlocking()
    rm = rm_env.make(run_blocking=blocking)
    p = _follower_with_data(rm, epoch=3)
    truncated = rm.truncate_follower(TP, 3, 2)
    assert _fired(rm.truncations_in_flight(lai((1, 1, 0, (1,), (1,))))) is None  # other partitions: at once
    waiting = rm.truncations_in_flight(lai((0, 1, 4, (1, 2), (1, 2))))
    assert not waiting.called

    # The controller makes this broker leader at epoch 4 while the truncation runs.
    dispatcher = _dispatch_env(rm)
    body = {
        "controller_id": 1, "controller_epoch": 1, "broker_epoch": -1,
        "topic_states": [{"topic_name": "t", "partition_states": [
            {"partition_index": 0, "controller_epoch": 1, "leader": 1, "leader_epoch": 4, "isr": [1, 2],
             "zk_version": 1, "replicas": [1, 2], "is_new": False}]}],
        "live_leaders": [],
    }
    request = decode_request(encode_request(4, 2, 9, "controller", body)[4:])
    got: list = []
    dispatcher.dispatch(request, SimpleNamespace(listener="PLAINTEXT", peer="x", close=lambda: None)).addCallback(got.append)
    assert got == []  # not applied before the truncation finishes
    assert not p.is_leader and p.leader_epoch == 3

    blocking.run_all()
    assert _fired(truncated) is True  # it finished as a follower of epoch 3
    assert waiting.called and got
    resp = decode_response(4, 2, b"".join(got[0])[4:])[1]
    assert resp.error_code == 0 and resp.partition_errors[0].error_code == 0
    # The new epoch starts after the truncated log end, not at the old one.
    assert p.is_leader and p.leader_epoch == 4
    assert (p.log.next_offset, p.leader_epoch_start_offset) == (2, 2)
    assert p.log.epoch_cache.entries == [(3, 0), (4, 2)]
    out = produce(rm, batch(1))
    assert out[0][TP].base_offset == 2
    assert [r.offset for r in iter_records(p.log.read(0, 1 << 20).read())] == [0, 1, 2]


def test_an_out_of_range_follower_fetch_is_not_recorded(rm_env):
    writer = IsrWriter()
    rm = rm_env.make(isr_writer=writer)
    rm.become_leader_or_follower(lai((0, 1, 0, (1,), (1, 2))))
    produce(rm, batch(5))
    p = rm.partitions[TP]
    # A follower whose (divergent) log runs past the leader's end fetches at 8.
    r = follower_fetch(rm, 8)
    assert r.error == ErrorCode.OFFSET_OUT_OF_RANGE
    assert p.followers[2].log_end_offset == -1  # Mafka: 8, "caught up" past the leader's LEO 5
    assert writer.writes == []  # Mafka: proposes ISR (1, 2) for it


def test_make_leader_resets_the_previous_fetch_to_the_epoch_start(log):
    p = make_leader(log, isr=(1, 2), replicas=(1, 2, 3))
    append(p, 5)
    p.update_follower(3, 0, T0)  # 3 (outside the ISR) once fetched far behind
    append(p, 5, T0 + 1)  # LEO 10
    later = T0 + 100 * LAG
    p.make_leader(state((1, 2), (1, 2, 3), epoch=1), later)  # same leader, new epoch starting at 10
    append(p, 5, later + 1)  # LEO 15
    p.update_follower(3, 10, later + 2)  # 3 reached the new epoch's start offset
    assert p.followers[3].last_caught_up_ms == later  # Mafka: T0 (its fetch before the leader change)
    p.update_follower(2, 15, later + 3)
    assert p.high_watermark == 10  # 3 caught up within the lag holds the HW; Mafka: 15


def test_a_partition_whose_shrink_check_raises_does_not_stop_the_others(rm_env):
    writer = IsrWriter()
    rm, _ = _lagging_leader(rm_env, writer)
    # a second led partition (ahead of TP in the iteration) whose check raises
    rm.partitions = {("broken", 0): _Broken(), **rm.partitions}
    assert rm.maybe_shrink_isr() == 1
    assert [w.tp for w in writer.writes] == [TP] and rm.isr_shrink_failures == 1


class _Broken:
    tp = ("broken", 0)

    def isr_to_shrink(self, now_ms):
        raise RuntimeError("a bug in one partition's state")
