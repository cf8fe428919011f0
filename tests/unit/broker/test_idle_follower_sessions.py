"""A follower's fetch session skips its idle partitions (mafka.broker.fetch_session), and what that must not change.

The leader reads a partition of a follower's session again only when it
changed or the follower asks for it; meanwhile the session's clock keeps the
follower caught up, for as long as the follower goes on fetching — and no
longer.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from mafka.broker.dispatcher import Dispatcher, collect_handlers
from mafka.broker.fetch_session import FetchSessionCache
from mafka.broker.partition import FetchClock, FollowerState
from mafka.broker.replica_records import FetchPartition
from mafka.wire.codec import decode_request, decode_response, encode_request
from mafka.wire.records import iter_records

from .test_replica_manager import batch, call, env, leader_and_isr, produce  # noqa: F401 (env is a fixture)

FOLLOWER = 2
LAG_MS = 30_000  # the replica manager's default replica.lag.time.max.ms


def follower_fetch(offsets, *, session_id, epoch, forgotten=(), max_wait_ms=0, leader_epoch=0):
    return {
        "replica_id": FOLLOWER, "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
        "session_id": session_id, "session_epoch": epoch,
        "topics": [{"topic": "t", "partitions": [
            {"partition": p, "current_leader_epoch": leader_epoch, "fetch_offset": o, "log_start_offset": 0,
             "partition_max_bytes": 1 << 20}
            for p, o in offsets.items()
        ]}] if offsets else [],
        "forgotten_topics_data": [{"topic": "t", "partitions": list(forgotten)}] if forgotten else [],
        "rack_id": "",
    }


def answered(resp):
    return {(t.topic, p.partition_index): p for t in resp.responses for p in t.partitions}


class Session:
    """A follower (broker 2) fetching partitions 0-2 of topic t from broker 1 in one session."""

    def __init__(self, world):
        self.world = world
        self.id = 0
        self.epoch = 0

    def fetch(self, offsets=None, **kw):
        resp, _ = call(self.world, 1, 11, follower_fetch(offsets or {}, session_id=self.id, epoch=self.epoch, **kw))
        assert resp.error_code == 0, resp
        if self.epoch == 0:
            self.id = resp.session_id
        self.epoch += 1
        return answered(resp)

    @property
    def cached(self):
        return self.world.broker.fetch_sessions.get(self.id)


@pytest.fixture
def led(env):  # noqa: F811
    env.rm.become_leader_or_follower(leader_and_isr(partitions=(0, 1, 2), isr=(1, FOLLOWER), replicas=(1, FOLLOWER)))
    for p in (0, 1, 2):
        produce(env, batch(2), partition=p)
    return env


@pytest.fixture
def session(led):
    # A cache the test can see: the handlers take the broker's when it has one.
    led.broker.fetch_sessions = FetchSessionCache(10)
    led.dispatcher = Dispatcher(collect_handlers(led.broker))
    s = Session(led)
    got = s.fetch({0: 0, 1: 0, 2: 0})  # full: every partition's two records
    assert set(got) == {("t", 0), ("t", 1), ("t", 2)}
    # At the end now: the fetch moves the HW to 2 everywhere, which its response (as of the read) does
    # not carry; so the partitions stay busy, and the next fetch tells the HW.
    assert s.fetch({0: 2, 1: 2, 2: 2}) == {}
    assert s.cached.busy == {("t", 0), ("t", 1), ("t", 2)}
    got = s.fetch()
    assert {tp: p.high_watermark for tp, p in got.items()} == {("t", 0): 2, ("t", 1): 2, ("t", 2): 2}
    return s


def count_reads(world, monkeypatch):
    reads = []
    for tp, partition in world.rm.partitions.items():
        original = partition.read

        def counted(*args, _tp=tp, _original=original, **kw):
            reads.append(_tp)
            return _original(*args, **kw)

        monkeypatch.setattr(partition, "read", counted)
    return reads


def test_idle_partitions_of_a_follower_session_are_not_read_again(session, monkeypatch):
    assert session.cached.busy == set()
    reads = count_reads(session.world, monkeypatch)
    for _ in range(5):
        assert session.fetch() == {}
    assert reads == []
    # Listing a partition (its fetch state changed) makes it read again, once.
    assert session.fetch({1: 2}) == {}
    assert reads == [("t", 1)]


def test_an_append_to_an_idle_partition_completes_the_parked_fetch_with_its_data(session):
    world = session.world
    request = decode_request(encode_request(1, 11, 9, "c", follower_fetch({}, session_id=session.id, epoch=session.epoch,
                                                                          max_wait_ms=500))[4:])
    got = []
    world.dispatcher.dispatch(request, SimpleNamespace(listener="PLAINTEXT", close=lambda: None)).addCallback(got.append)
    assert got == []
    produce(world, batch(3, value=b"new"), partition=2)
    assert len(got) == 1
    data = b"".join(c if isinstance(c, bytes) else c.read() for c in got[0])
    parts = answered(decode_response(1, 11, data[4:])[1])
    assert set(parts) == {("t", 2)}
    assert [r.offset for r in iter_records(bytes(parts["t", 2].records))] == [2, 3, 4]


def test_an_append_while_a_fetch_reads_completes_it_as_it_parks(session, monkeypatch):
    """The pipelined produce: the follower's own read moves a high watermark, which answers a parked acks=all
    produce, whose connection appends its next produce to another idle partition before this fetch parks.
    The fetch must not then wait ``max_wait_ms`` for that partition (it did: 200-500 ms per acks=all produce)."""
    world = session.world
    partition0 = world.rm.partitions[("t", 0)]
    original = partition0.read
    appended = []

    def read_then_append(*args, **kw):
        result = original(*args, **kw)
        if not appended:
            appended.append(True)
            produce(world, batch(1, value=b"pipelined"), partition=1)
        return result

    monkeypatch.setattr(partition0, "read", read_then_append)
    body = follower_fetch({0: 2}, session_id=session.id, epoch=session.epoch, max_wait_ms=500)
    request = decode_request(encode_request(1, 11, 9, "c", body)[4:])
    got = []
    world.dispatcher.dispatch(request, SimpleNamespace(listener="PLAINTEXT", close=lambda: None)).addCallback(got.append)
    assert appended and len(got) == 1, "the fetch parked without the partition appended during its read"
    data = b"".join(c if isinstance(c, bytes) else c.read() for c in got[0])
    parts = answered(decode_response(1, 11, data[4:])[1])
    assert [r.value for r in iter_records(bytes(parts["t", 1].records))] == [b"pipelined"]


def test_a_high_watermark_move_on_an_idle_partition_is_sent(session):
    world = session.world
    produce(world, batch(1), partition=0)
    got = session.fetch()
    assert set(got) == {("t", 0)} and got["t", 0].high_watermark == 2  # the record, HW not yet moved
    assert session.fetch({0: 3}) == {}  # the follower has it: its fetch moves the HW (after the read) ...
    got = session.fetch()  # ... and the next fetch tells it
    assert set(got) == {("t", 0)} and got["t", 0].high_watermark == 3
    assert session.fetch() == {}
    assert session.cached.busy == set()


def test_an_idle_follower_stays_caught_up_while_it_fetches(session):
    world = session.world
    partition = world.rm.partitions[("t", 0)]
    for _ in range(int(2 * LAG_MS / 500)):  # well past replica.lag.time.max.ms, fetching every 500 ms
        world.clock.advance(0.5)
        session.fetch()
    produce(world, batch(1), partition=0)  # the log end moves; the follower has not fetched it yet
    assert partition.followers[FOLLOWER].log_end_offset == 2
    assert partition.isr_to_shrink(world.rm.now_ms()) is None
    # It stops fetching: after the lag it is out of sync, as it would be without the session's shortcut.
    world.clock.advance(LAG_MS / 1000 + 1)
    assert partition.isr_to_shrink(world.rm.now_ms()) == (1,)


def test_a_follower_that_stopped_fetching_falls_out_even_without_an_append_until_then(session):
    world = session.world
    partition = world.rm.partitions[("t", 1)]
    world.clock.advance(2 * LAG_MS / 1000)  # no fetch at all
    produce(world, batch(1), partition=1)
    assert partition.isr_to_shrink(world.rm.now_ms()) == (1,)


def test_a_forgotten_partition_does_not_keep_its_follower_caught_up(session):
    world = session.world
    partition = world.rm.partitions[("t", 0)]
    session.fetch(forgotten=[0])
    for _ in range(int(2 * LAG_MS / 500)):
        world.clock.advance(0.5)
        session.fetch()  # the session goes on, without partition 0
    produce(world, batch(1), partition=0)
    assert partition.isr_to_shrink(world.rm.now_ms()) == (1,)


def test_a_new_session_reads_everything_again(session, monkeypatch):
    world = session.world
    reads = count_reads(world, monkeypatch)
    fresh = Session(world)
    fresh.id = session.id  # a follower starting over closes its session (epoch 0 naming it)
    fresh.fetch({0: 2, 1: 2, 2: 2})
    assert sorted(reads) == [("t", 0), ("t", 1), ("t", 2)]
    # The old session is gone; the partitions are idle in the new one.
    assert world.broker.fetch_sessions.get(session.id) is None
    assert fresh.cached.busy == set()


def test_a_follower_outside_the_isr_or_behind_is_never_idle(led):
    world = led
    rm = world.rm
    clock = FetchClock(0)
    cached = SimpleNamespace(fetch_offset=2, current_leader_epoch=0)
    result = rm._read(FOLLOWER, 1 << 20, [rm_partition(0, 2)])[0]
    # Its fetch moved the HW after the read: not idle until a read has seen the new HW.
    assert rm.idle_follower(FOLLOWER, cached, result, clock) is None
    result = rm._read(FOLLOWER, 1 << 20, [rm_partition(0, 2)])[0]
    assert rm.idle_follower(FOLLOWER, cached, result, clock) is not None  # in the ISR, at the end, nothing read
    behind = SimpleNamespace(fetch_offset=1, current_leader_epoch=0)
    assert rm.idle_follower(FOLLOWER, behind, rm._read(FOLLOWER, 1 << 20, [rm_partition(0, 1)])[0], clock) is None
    rm.become_leader_or_follower(leader_and_isr(partitions=(1,), isr=(1,), replicas=(1, FOLLOWER), epoch=1))
    outside = SimpleNamespace(fetch_offset=2, current_leader_epoch=1)
    # (a consumer's read: a follower's own read would let it rejoin the ISR at once)
    assert rm.idle_follower(FOLLOWER, outside, rm._read(-1, 1 << 20, [rm_partition(1, 2, epoch=1)])[0], clock) is None


def rm_partition(index, offset, epoch=0):
    return FetchPartition("t", index, offset, 1 << 20, epoch, 0)


def test_follower_state_reads_its_clock_until_detached():
    clock = FetchClock(100)
    state = FollowerState(log_end_offset=5, last_caught_up_ms=50, last_fetch_ms=60)
    state.attach(clock)
    clock.last_fetch_ms = 900
    assert (state.last_caught_up_ms, state.last_fetch_ms) == (900, 900)
    state.detach(FetchClock(0))  # another clock: no effect
    assert state.clock is clock
    state.detach(clock)
    clock.last_fetch_ms = 5000
    assert (state.last_caught_up_ms, state.last_fetch_ms, state.clock) == (900, 900, None)
    state.attach(clock)
    state.last_caught_up_ms = 0  # a reset (a new leader epoch) detaches, keeping the clock's time
    assert state.clock is None and state.last_caught_up_ms == 0 and state.last_fetch_ms == 5000


def test_delete_records_on_an_idle_partition_tells_the_follower_its_new_log_start(session):
    world = session.world
    assert world.rm.delete_records("t", 1, 1) == 1
    got = session.fetch()
    assert set(got) == {("t", 1)} and got["t", 1].log_start_offset == 1
