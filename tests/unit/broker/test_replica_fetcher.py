"""The replica fetcher (mafka.broker.replica_fetcher) over a fake connection and a fake clock.

The fetcher's ``InterBrokerConnection`` is replaced (in the module, with
``monkeypatch``) by :class:`FakeConn`, whose ``request`` records each request
and returns a Deferred the test answers; ``task.Clock`` is the reactor.  The
replica manager is real (logs in a tmp dir), so truncations and follower
appends really happen.
"""

from __future__ import annotations

import ctypes
from types import SimpleNamespace

import pytest
from twisted.internet import defer, task

import mafka.broker.replica_fetcher as rf
from mafka.broker.replica_fetcher import (
    FetcherConfig,
    ReplicaFetcher,
    ReplicaFetcherManager,
    fetcher_id,
)
from mafka.broker.replica_manager import FollowerTarget, ReplicaManager
from mafka.errors import ErrorCode
from mafka.log.config import LogConfig
from mafka.log.manager import LogManager
from mafka.wire.codec import decode_request, encode_request
from mafka.wire.records import Record, build_batch, iter_records

TP = ("t", 0)
CONFIG = FetcherConfig(max_wait_ms=500, min_bytes=1, max_bytes=1 << 20, partition_max_bytes=1 << 16,
                       backoff_ms=1000, socket_timeout_ms=3000)


def batch(n=1, *, base=0, epoch=0, value=b"v"):
    return build_batch([Record(base + i, 1000 + i, b"k", value) for i in range(n)], base_offset=base,
                       partition_leader_epoch=epoch)


class FakeTransport:
    def __init__(self) -> None:
        self.aborted = 0

    def abortConnection(self) -> None:  # noqa: N802 - Twisted's name
        self.aborted += 1


class FakeConn:
    """Stands for InterBrokerConnection: records requests, answers when the test says."""

    instances: list[FakeConn] = []

    def __init__(self, reactor, host, port, client_id, *, backoff_s=0.5, security=None) -> None:
        self.host, self.port, self.client_id = host, port, client_id
        self.requests: list[SimpleNamespace] = []
        self.protocol = SimpleNamespace(lost=False, transport=FakeTransport())
        self.closed = False
        FakeConn.instances.append(self)

    def request(self, api_key, version, body):
        d: defer.Deferred = defer.Deferred()
        self.requests.append(SimpleNamespace(api_key=api_key, version=version, body=body, d=d))
        return d

    def close(self) -> None:
        self.closed = True

    @property
    def last(self) -> SimpleNamespace:
        return self.requests[-1]


def epoch_answer(leader_epoch, end_offset, *, error=0, partition=0, topic="t"):
    return SimpleNamespace(topics=[SimpleNamespace(topic=topic, partitions=[
        SimpleNamespace(partition=partition, error_code=error, leader_epoch=leader_epoch, end_offset=end_offset)])])


def fetch_answer(records=b"", *, hw=0, log_start=0, error=0, partition=0, topic="t", session_id=0, top_error=0):
    return SimpleNamespace(error_code=top_error, session_id=session_id, responses=[SimpleNamespace(topic=topic, partitions=[
        SimpleNamespace(partition_index=partition, error_code=error, high_watermark=hw, log_start_offset=log_start,
                        records=records)])])


def lai(*, leader=1, epoch=5, isr=(1, 2), replicas=(1, 2)):
    body = {
        "controller_id": 1, "controller_epoch": 1, "broker_epoch": -1,
        "topic_states": [{"topic_name": "t", "partition_states": [
            {"partition_index": 0, "controller_epoch": 1, "leader": leader, "leader_epoch": epoch, "isr": list(isr),
             "zk_version": 0, "replicas": list(replicas), "is_new": True}]}],
        "live_leaders": [{"broker_id": 1, "host_name": "h1", "port": 9092}],
    }
    return decode_request(encode_request(4, 2, 1, "controller", body)[4:]).body


@pytest.fixture
def env(tmp_path, monkeypatch):
    FakeConn.instances = []
    monkeypatch.setattr(rf, "InterBrokerConnection", FakeConn)
    clock = task.Clock()
    clock.advance(1_000_000)
    manager = LogManager([tmp_path / "d"], LogConfig(), lambda: 1_000_000_000, broker_id=2, cluster_id="c")
    manager.startup()
    rm = ReplicaManager(2, manager, clock)  # broker 2 follows broker 1
    fetchers: list[ReplicaFetcher] = []

    def follower(epochs=(), *, epoch=5, hw=0):
        """Broker 2 follows t-0 at *epoch*, its log holding one-record batches at the given epochs."""
        rm.become_leader_or_follower(lai(epoch=epoch))
        for offset, e in enumerate(epochs):
            rm.append_as_follower(TP, epoch, batch(base=offset, epoch=e), hw, 0)
        return rm.partitions[TP]

    def fetcher(config=CONFIG):
        f = ReplicaFetcher(2, 1, "h1", 9092, clock, rm, config)
        fetchers.append(f)
        assert isinstance(f.conn, FakeConn) and f.conn.requests == []
        return f

    yield SimpleNamespace(clock=clock, rm=rm, manager=manager, follower=follower, fetcher=fetcher)
    for f in fetchers:
        f.stop()
    manager.shutdown()


def test_truncates_by_epoch_then_fetches_from_its_log_end(env):
    p = env.follower([0, 0, 3, 3, 3], hw=2)  # cache (0,0), (3,2); LEO 5
    assert p.log.epoch_cache.entries == [(0, 0), (3, 2)]
    f = env.fetcher()
    f.add(TP, 5)
    req = f.conn.last
    assert (req.api_key, req.version) == (23, 3)
    assert req.body == {"replica_id": 2, "topics": [{"topic": "t", "partitions": [
        {"partition": 0, "current_leader_epoch": 5, "leader_epoch": 3}]}]}
    # The leader's epoch 3 ended at 4: offset 4 goes.
    req.d.callback(epoch_answer(3, 4))
    assert p.log.next_offset == 4
    req = f.conn.last
    assert (req.api_key, req.version) == (1, 11)
    body = req.body
    assert (body["replica_id"], body["max_wait_ms"], body["min_bytes"], body["max_bytes"]) == (2, 500, 1, 1 << 20)
    assert body["topics"] == [{"topic": "t", "partitions": [
        {"partition": 0, "current_leader_epoch": 5, "fetch_offset": 4, "log_start_offset": 0, "partition_max_bytes": 1 << 16}]}]
    assert len(f.conn.requests) == 2
    # Data written by the leader at epoch 5, HW 5.
    req.d.callback(fetch_answer(batch(2, base=4, epoch=5), hw=5))
    assert p.log.next_offset == 6
    assert p.high_watermark == 5  # min(leader HW 5, own LEO 6)
    assert p.log.epoch_cache.entries == [(0, 0), (3, 2), (5, 4)]
    assert [r.offset for r in iter_records(p.log.read(4, 1 << 20).read())] == [4, 5]
    req = f.conn.last
    assert req.api_key == 1 and req.body["topics"][0]["partitions"][0]["fetch_offset"] == 6
    req.d.callback(fetch_answer(hw=9))  # nothing new; the HW is still capped by the LEO
    assert p.high_watermark == 6
    assert f.conn.last.api_key == 1 and len(f.conn.requests) == 4


def test_truncation_takes_as_many_rounds_as_needed(env):
    # §4.6 multi-round: follower cache (0,0), (2,5), (4,8), LEO 10; leader (0,0), (1,4), (5,6).
    p = env.follower([0] * 5 + [2] * 3 + [4] * 2, epoch=6)
    assert p.log.epoch_cache.entries == [(0, 0), (2, 5), (4, 8)]
    f = env.fetcher()
    f.add(TP, 6)
    req = f.conn.last
    assert req.body["topics"][0]["partitions"][0]["leader_epoch"] == 4
    req.d.callback(epoch_answer(1, 6))
    assert p.log.next_offset == 5  # the end of its own epoch 0; not done
    req = f.conn.last
    assert req.api_key == 23 and req.body["topics"][0]["partitions"][0]["leader_epoch"] == 0
    req.d.callback(epoch_answer(0, 4))
    assert p.log.next_offset == 4
    req = f.conn.last
    assert req.api_key == 1 and req.body["topics"][0]["partitions"][0]["fetch_offset"] == 4
    assert len(f.conn.requests) == 3


def test_a_leader_without_the_epoch_means_truncating_to_the_hw(env):
    p = env.follower([0, 0, 0, 0], hw=2)
    f = env.fetcher()
    f.add(TP, 5)
    f.conn.last.d.callback(epoch_answer(-1, -1))
    assert p.log.next_offset == 2
    assert f.conn.last.api_key == 1


def test_an_empty_follower_skips_offset_for_leader_epoch(env):
    p = env.follower([])
    f = env.fetcher()
    f.add(TP, 5)
    req = f.conn.last
    assert req.api_key == 1 and req.body["topics"][0]["partitions"][0]["fetch_offset"] == 0
    req.d.callback(fetch_answer(batch(3, base=0, epoch=5), hw=1))
    assert (p.log.next_offset, p.high_watermark) == (3, 1)


@pytest.mark.parametrize("stage", ["fetch", "offset_for_leader_epoch"])
def test_fenced_leader_epoch_parks_the_partition_until_re_added(env, stage):
    p = env.follower([0, 0])
    f = env.fetcher()
    f.add(TP, 5)
    if stage == "fetch":
        f.conn.last.d.callback(epoch_answer(0, 2))
        assert f.conn.last.api_key == 1
        f.conn.last.d.callback(fetch_answer(error=ErrorCode.FENCED_LEADER_EPOCH))
    else:
        f.conn.last.d.callback(epoch_answer(-1, -1, error=ErrorCode.FENCED_LEADER_EPOCH))
    sent = len(f.conn.requests)
    for _ in range(5):
        env.clock.advance(3600)
    assert len(f.conn.requests) == sent  # parked: no request at all
    assert p.log.next_offset == 2
    # The next LeaderAndIsr (epoch 6) re-adds it: truncation by epoch first, at the new epoch.
    env.rm.become_leader_or_follower(lai(epoch=6))
    f.add(TP, 6)
    req = f.conn.last
    assert len(f.conn.requests) == sent + 1
    assert req.api_key == 23 and req.body["topics"][0]["partitions"][0]["current_leader_epoch"] == 6


def test_not_leader_or_follower_retries_soon_then_backs_off(env):
    """The leader usually just has not applied its LeaderAndIsr yet: 50 ms, doubling up to replica.fetch.backoff.ms."""
    env.follower([0, 0])
    f = env.fetcher()
    f.add(TP, 5)
    f.conn.last.d.callback(epoch_answer(0, 2))
    waits = []
    for _ in range(7):
        f.conn.last.d.callback(fetch_answer(error=ErrorCode.NOT_LEADER_OR_FOLLOWER))
        sent = len(f.conn.requests)
        waited = 0.0
        while len(f.conn.requests) == sent:
            env.clock.advance(0.001)
            waited += 0.001
            assert waited < 2, "no retry"
        waits.append(round(waited, 2))
    assert waits == [0.05, 0.1, 0.2, 0.4, 0.8, 1.0, 1.0]  # replica.fetch.backoff.ms = 1000 caps it
    req = f.conn.last
    assert req.api_key == 1 and req.body["topics"][0]["partitions"][0]["fetch_offset"] == 2  # no re-truncation


def test_a_request_without_an_answer_times_out_and_is_retried(env):
    env.follower([0, 0])
    f = env.fetcher()
    f.add(TP, 5)
    first = f.conn.last
    assert first.api_key == 23
    env.clock.advance(2.999)
    assert not first.d.called  # replica.socket.timeout.ms = 3000
    env.clock.advance(0.002)
    assert first.d.called
    first.d.addErrback(lambda failure: failure.trap(defer.CancelledError))
    assert f.conn.protocol.transport.aborted == 1  # the connection is dropped
    assert len(f.conn.requests) == 1
    env.clock.advance(0.999)  # the backoff before trying again
    assert len(f.conn.requests) == 1
    env.clock.advance(0.002)
    assert len(f.conn.requests) == 2 and f.conn.last.api_key == 23
    # A Fetch gets replica.fetch.wait.max.ms more.
    f.conn.last.d.callback(epoch_answer(0, 2))
    fetch = f.conn.last
    assert fetch.api_key == 1
    env.clock.advance(3.499)
    assert not fetch.d.called
    env.clock.advance(0.002)
    assert fetch.d.called and f.conn.protocol.transport.aborted == 2
    fetch.d.addErrback(lambda failure: failure.trap(defer.CancelledError))


def test_a_removed_partition_is_not_fetched_and_stop_closes_the_connection(env):
    env.follower([0, 0])
    f = env.fetcher()
    f.add(TP, 5)
    f.conn.last.d.callback(epoch_answer(0, 2))
    fetch = f.conn.last
    f.remove(TP)
    fetch.d.callback(fetch_answer(batch(1, base=2, epoch=5), hw=3))
    assert env.rm.partitions[TP].log.next_offset == 2  # the answer for a removed partition is dropped
    assert len(f.conn.requests) == 2
    f.stop()
    assert f.conn.closed


def test_a_partition_no_longer_followed_at_that_epoch_is_not_touched(env):
    p = env.follower([0, 0, 0])
    f = env.fetcher()
    f.add(TP, 5)
    req = f.conn.last
    env.rm.become_leader_or_follower(lai(epoch=6))  # a newer epoch, the fetcher not told yet
    req.d.callback(epoch_answer(0, 1))
    assert p.log.next_offset == 3  # no truncation for the old epoch


def offsets_answer(offset, *, error=0, partition=0, topic="t"):
    return SimpleNamespace(topics=[SimpleNamespace(name=topic, partitions=[
        SimpleNamespace(partition_index=partition, error_code=error, timestamp=-1, offset=offset)])])


def _fetching(env, epochs):
    p = env.follower(epochs)
    f = env.fetcher()
    f.add(TP, 5)
    f.conn.last.d.callback(epoch_answer(-1, -1) if not epochs else epoch_answer(epochs[-1], len(epochs)))
    assert f.conn.last.api_key == 1
    return p, f


def test_out_of_range_with_the_leader_behind_truncates_to_its_end(env):
    p, f = _fetching(env, [0] * 5)
    f.conn.last.d.callback(fetch_answer(error=ErrorCode.OFFSET_OUT_OF_RANGE))
    req = f.conn.last
    assert (req.api_key, req.version) == (2, 1)
    assert req.body == {"replica_id": 2, "isolation_level": 0,
                        "topics": [{"name": "t", "partitions": [{"partition_index": 0, "timestamp": -1}]}]}
    req.d.callback(offsets_answer(3))
    assert p.log.next_offset == 3
    req = f.conn.last
    assert req.api_key == 1 and req.body["topics"][0]["partitions"][0]["fetch_offset"] == 3


def test_out_of_range_below_the_leaders_start_restarts_there(env):
    p, f = _fetching(env, [0] * 2)
    f.conn.last.d.callback(fetch_answer(error=ErrorCode.OFFSET_OUT_OF_RANGE))
    f.conn.last.d.callback(offsets_answer(10))  # the leader's end is ahead ...
    req = f.conn.last
    assert req.api_key == 2 and req.body["topics"][0]["partitions"][0]["timestamp"] == -2
    req.d.callback(offsets_answer(7))  # ... and its log starts past ours (2)
    assert (p.log.log_start_offset, p.log.next_offset) == (7, 7)
    assert p.log.epoch_cache.entries == []
    req = f.conn.last
    assert req.api_key == 1 and req.body["topics"][0]["partitions"][0]["fetch_offset"] == 7
    req.d.callback(fetch_answer(batch(1, base=7, epoch=5), hw=8, log_start=7))
    assert (p.log.next_offset, p.high_watermark) == (8, 8)


def test_out_of_range_within_the_leaders_log_resumes_at_its_own_end(env):
    p, f = _fetching(env, [0] * 4)
    f.conn.last.d.callback(fetch_answer(error=ErrorCode.OFFSET_OUT_OF_RANGE))
    f.conn.last.d.callback(offsets_answer(10))
    f.conn.last.d.callback(offsets_answer(1))  # the leader's log start is below ours: nothing to do
    assert p.log.next_offset == 4
    req = f.conn.last
    assert req.api_key == 1 and req.body["topics"][0]["partitions"][0]["fetch_offset"] == 4


# ---------------------------------------------------------------------------- the manager


def test_manager_groups_partitions_by_leader_and_fetcher_id(env):
    for i in range(4):
        env.rm.become_leader_or_follower(SimpleNamespace(
            controller_epoch=1, live_leaders=[], topic_states=[SimpleNamespace(topic_name="t", partition_states=[
                SimpleNamespace(partition_index=i, controller_epoch=1, leader=1 + i % 2 * 2, leader_epoch=0, isr=[2],
                                zk_version=0, replicas=[1, 2, 3], is_new=True)])]))
    manager = ReplicaFetcherManager(2, env.clock, env.rm, FetcherConfig(num_fetchers=2))
    targets = {("t", i): FollowerTarget(1 + i % 2 * 2, "h1" if i % 2 == 0 else "h3", 9092, 0) for i in range(4)}
    manager.add_partitions(targets)
    assert manager.partitions() == {("t", 0): 1, ("t", 1): 3, ("t", 2): 1, ("t", 3): 3}
    expected_keys = {(1 + i % 2 * 2, fetcher_id(("t", i), 2)) for i in range(4)}
    assert set(manager.fetchers) == expected_keys
    for (leader, _), fetcher in manager.fetchers.items():
        assert fetcher.leader_id == leader and fetcher.conn.host == ("h1" if leader == 1 else "h3")
    # The leader 3 comes back on another port: its partitions move to a new connection.
    old = {k: f for k, f in manager.fetchers.items() if k[0] == 3}
    manager.add_partitions({("t", 1): FollowerTarget(3, "h3", 9999, 1)})
    for key, fetcher in old.items():
        assert fetcher.conn.closed
        if key in manager.fetchers:
            assert manager.fetchers[key].port == 9999
    assert {tp for f in manager.fetchers.values() if f.leader_id == 3 for tp in f.partitions} == {("t", 1), ("t", 3)}
    # Removing every partition of a fetcher stops it.
    manager.remove_partitions([("t", 0), ("t", 2)])
    assert all(k[0] == 3 for k in manager.fetchers)
    manager.shutdown()
    assert manager.fetchers == {} and all(c.closed for c in FakeConn.instances)


# ---------------------------------------------------------------------------- fetcher ids


def java_string_hash(s: str) -> int:
    """Java's String.hashCode: s[0]*31^(n-1) + ... + s[n-1] over UTF-16 units, as a signed int."""
    units = [int.from_bytes(s.encode("utf-16-be")[i:i + 2], "big") for i in range(0, 2 * len(s), 2)]
    n = len(units)
    return ctypes.c_int32(sum(u * pow(31, n - 1 - i, 1 << 32) for i, u in enumerate(units))).value


def kafka_fetcher_id(topic: str, partition: int, n: int) -> int:
    """``Utils.abs(31 * topic.hashCode() + partition) % n``, with Kafka's Utils.abs (MIN_VALUE → 0)."""
    v = ctypes.c_int32(31 * java_string_hash(topic) + partition).value
    return (0 if v == -(1 << 31) else abs(v)) % n


def test_the_java_hash_oracle():
    assert java_string_hash("") == 0
    assert java_string_hash("t") == 116
    assert java_string_hash("hello") == 99162322
    assert java_string_hash("polygenelubricants") == -(1 << 31)  # a well-known MIN_VALUE string
    assert java_string_hash("__consumer_offsets") == ctypes.c_int32(
        sum(ord(c) * 31 ** (17 - i) for i, c in enumerate("__consumer_offsets"))
    ).value


@pytest.mark.parametrize("topic", ["t", "orders", "topic-a", "__consumer_offsets", "a.b_c-D9", "x" * 249, "zzzzzzzzzzzzzzzzzzzzzzzz"])
@pytest.mark.parametrize("partition", [0, 1, 7, 99, 2**31 - 1])
def test_fetcher_id_matches_kafka(topic, partition):
    for n in (1, 2, 3, 4, 5, 8, 13):
        assert fetcher_id((topic, partition), n) == kafka_fetcher_id(topic, partition, n), (topic, partition, n)


@pytest.mark.parametrize(("topic", "partition"), [("alxexlnb", 0), ("adjztsra", 1)])
def test_fetcher_id_when_the_hash_is_min_value(topic, partition):
    assert ctypes.c_int32(31 * java_string_hash(topic) + partition).value == -(1 << 31)
    for n in (3, 5, 7):
        assert kafka_fetcher_id(topic, partition, n) == 0
        assert fetcher_id((topic, partition), n) == 0


def test_the_follower_fetches_in_an_incremental_session(env):
    p = env.follower([])
    f = env.fetcher()
    f.add(TP, 5)
    req = f.conn.last
    assert (req.api_key, req.body["session_id"], req.body["session_epoch"]) == (1, 0, 0)  # full, asks for a session
    req.d.callback(fetch_answer(batch(2, base=0, epoch=5), hw=0, session_id=77))
    assert p.log.next_offset == 2
    # Incremental: the fetch offset moved, so the partition is listed again.
    req = f.conn.last
    assert (req.body["session_id"], req.body["session_epoch"]) == (77, 1)
    assert req.body["topics"][0]["partitions"][0]["fetch_offset"] == 2
    # An answer without the partition means "nothing new"; the next fetch lists nothing.
    req.d.callback(SimpleNamespace(error_code=0, session_id=77, responses=[]))
    req = f.conn.last
    assert (req.body["session_id"], req.body["session_epoch"], req.body["topics"]) == (77, 2, [])
    # The leader lost the session: start over with a full fetch.
    req.d.callback(fetch_answer(top_error=ErrorCode.FETCH_SESSION_ID_NOT_FOUND))
    req = f.conn.last
    assert (req.body["session_id"], req.body["session_epoch"]) == (0, 0)
    assert req.body["topics"][0]["partitions"][0]["fetch_offset"] == 2
    assert p.log.next_offset == 2


def test_an_idle_partition_is_not_looked_up_again_but_its_log_start_is_sent_within_the_rebuild_interval(env, monkeypatch):
    p = env.follower([])
    f = env.fetcher(FetcherConfig(max_wait_ms=500, partition_max_bytes=1 << 16, socket_timeout_ms=60_000))
    f.add(TP, 5)
    f.conn.last.d.callback(fetch_answer(batch(2, base=0, epoch=5), hw=2, session_id=77))
    lookups = []
    real = env.rm.follower_partition
    monkeypatch.setattr(env.rm, "follower_partition", lambda tp, epoch: (lookups.append(tp), real(tp, epoch))[1])
    f.conn.last.d.callback(SimpleNamespace(error_code=0, session_id=77, responses=[]))  # listed at offset 2
    f.conn.last.d.callback(SimpleNamespace(error_code=0, session_id=77, responses=[]))  # nothing listed
    assert lookups == []  # the fetch state of a partition nothing happened to is reused
    # The follower's own retention moves its log start: no fetch of ours sees it ...
    p.log.increment_log_start_offset(1)
    f.conn.last.d.callback(SimpleNamespace(error_code=rf.ErrorCode.NONE, session_id=77, responses=[]))
    assert f.conn.last.body["topics"] == []
    # ... until every partition is looked at again, within rf._REBUILD_S (the sweep finds the moved
    # log start, then only that partition's fetch state is built again).
    env.clock.advance(rf._REBUILD_S)
    f.conn.last.d.callback(SimpleNamespace(error_code=0, session_id=77, responses=[]))
    assert lookups == [TP, TP]
    assert f.conn.last.body["topics"][0]["partitions"][0]["log_start_offset"] == 1
    # An append changes the fetch offset: listed at once.
    f.conn.last.d.callback(fetch_answer(batch(1, base=2, epoch=5), hw=2, session_id=77))
    assert f.conn.last.body["topics"][0]["partitions"][0]["fetch_offset"] == 3


@pytest.mark.parametrize("limit, aborted", [(1000, 1), (1, 0)])
def test_a_partition_added_mid_fetch_interrupts_it_only_while_the_fetcher_is_small(env, monkeypatch, limit, aborted):
    # Interrupting costs a full fetch of every partition (the session starts over): a fetcher
    # following more than INTERRUPT_MAX_PARTITIONS lets the long poll finish instead.
    monkeypatch.setattr(rf, "INTERRUPT_MAX_PARTITIONS", limit)
    env.follower([])
    f = env.fetcher()
    f.add(TP, 5)  # the loop wakes and fetches it at once: nothing to interrupt
    assert f.conn.protocol.transport.aborted == 0
    req = f.conn.last
    req.d.callback(fetch_answer(hw=0, session_id=77))
    in_flight = f.conn.last
    assert in_flight.body["session_epoch"] == 1
    f.add(("t", 1), 5)
    assert f.conn.protocol.transport.aborted == aborted
    if not aborted:
        in_flight.d.callback(SimpleNamespace(error_code=0, session_id=77, responses=[]))
        assert f.conn.last.body["session_epoch"] == 2  # the session goes on: no full fetch


def test_a_settled_fetcher_builds_from_what_changed_and_an_unready_partition_takes_the_full_pass(env, monkeypatch):
    # Every partition ready and the session holding them: a fetch costs what changed (build_update),
    # not a diff of every followed partition (build): at 30,000 partitions that was an idle follower's work.
    p = env.follower([])
    f = env.fetcher()
    calls: list[str] = []
    for name in ("build", "build_update"):
        real = getattr(f.session, name)
        monkeypatch.setattr(f.session, name, lambda arg, real=real, name=name: (calls.append(name), real(arg))[1])
    f.add(TP, 5)
    assert calls == ["build"]  # the full fetch that opens the session
    f.conn.last.d.callback(fetch_answer(batch(2, base=0, epoch=5), hw=0, session_id=77))
    assert p.log.next_offset == 2 and calls == ["build", "build_update"]
    assert f.conn.last.body["topics"][0]["partitions"][0]["fetch_offset"] == 2  # the append moved it
    f.conn.last.d.callback(SimpleNamespace(error_code=0, session_id=77, responses=[]))
    assert calls[-1] == "build_update" and f.conn.last.body["topics"] == []
    assert (f.conn.last.body["session_id"], f.conn.last.body["session_epoch"]) == (77, 2)
    # The leader is not ready: the partition waits (50 ms), then the full pass finds it ready again.
    f.conn.last.d.callback(fetch_answer(error=ErrorCode.NOT_LEADER_OR_FOLLOWER, session_id=77))
    requests = len(f.conn.requests)
    env.clock.advance(0.05)
    assert len(f.conn.requests) == requests + 1 and calls[-1] == "build"
    f.conn.last.d.callback(SimpleNamespace(error_code=0, session_id=77, responses=[]))
    assert calls[-1] == "build_update", "settled again"
    # A lost session: the full fetch is built by the full pass.
    f.conn.last.d.callback(fetch_answer(top_error=ErrorCode.FETCH_SESSION_ID_NOT_FOUND))
    assert calls[-1] == "build" and f.conn.last.body["session_epoch"] == 0


def test_a_fenced_partition_leaves_the_others_settled(env, monkeypatch):
    body = lai()
    second = decode_request(encode_request(4, 2, 1, "controller", {
        "controller_id": 1, "controller_epoch": 1, "broker_epoch": -1,
        "topic_states": [{"topic_name": "t", "partition_states": [
            {"partition_index": 1, "controller_epoch": 1, "leader": 1, "leader_epoch": 5, "isr": [1, 2],
             "zk_version": 0, "replicas": [1, 2], "is_new": True}]}],
        "live_leaders": [{"broker_id": 1, "host_name": "h1", "port": 9092}],
    })[4:]).body
    env.rm.become_leader_or_follower(body)
    env.rm.become_leader_or_follower(second)
    f = env.fetcher()
    calls: list[str] = []
    for name in ("build", "build_update"):
        real = getattr(f.session, name)
        monkeypatch.setattr(f.session, name, lambda arg, real=real, name=name: (calls.append(name), real(arg))[1])
    f.add_all([(TP, 5), (("t", 1), 5)])
    f.conn.last.d.callback(SimpleNamespace(error_code=0, session_id=77, responses=[]))
    assert calls == ["build", "build_update"]
    f.conn.last.d.callback(fetch_answer(error=ErrorCode.FENCED_LEADER_EPOCH, session_id=77, partition=1))
    assert f.partitions[("t", 1)].fenced and calls[-1] == "build"  # the full pass: the session forgets it
    assert f.conn.last.body["forgotten_topics_data"] == [{"topic": "t", "partitions": [1]}]
    f.conn.last.d.callback(SimpleNamespace(error_code=0, session_id=77, responses=[]))
    assert calls[-1] == "build_update", "settled without the fenced partition"
