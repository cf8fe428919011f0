"""KIP-392 through the Fetch handler: the leader's preferred read replica and consumers served by followers.

Broker 1 with real logs and a fake clock, as in ``test_replica_manager``;
brokers 1, 2 and 3 live in racks r1, r2 and r3.  Followers' fetches are
made with ``replica_id`` ≥ 0, the follower's own appends with
:meth:`ReplicaManager.append_as_follower`.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from twisted.internet import defer, task

from mafka.broker.dispatcher import Dispatcher, collect_handlers
from mafka.broker.metadata_cache import MetadataCache
from mafka.broker.replica_manager import ReplicaManager
from mafka.broker.replica_selector import RackAwareReplicaSelector
from mafka.errors import ErrorCode
from mafka.log.config import LogConfig
from mafka.log.manager import LogManager
from mafka.wire.codec import decode_request, decode_response, encode_request
from mafka.wire.records import Record, build_batch, iter_records

from .test_replica_manager import batch, call, leader_and_isr, produce

LAG_MS = 10_000
RACKS = {1: "r1", 2: "r2", 3: "r3"}
START_S = 1000.0  # the clock starts well past the lag, so make_leader's "never caught up" means it


def _env(tmp_path, *, selector):
    clock = task.Clock()
    clock.advance(START_S)
    manager = LogManager([tmp_path / "d"], LogConfig(), lambda: 0, broker_id=1, cluster_id="c")
    manager.startup()
    rm = ReplicaManager(
        1, manager, clock, replica_lag_time_max_ms=LAG_MS,
        replica_selector=RackAwareReplicaSelector() if selector else None,
        replica_racks=lambda listener: dict(RACKS) if listener == "PLAINTEXT" else {},
    )
    broker = SimpleNamespace(
        replica_manager=rm,
        metadata_cache=MetadataCache(1),
        broker_epoch=100,
        max_message_bytes=lambda topic: 1048588,
        auto_create_topics=False,
        auto_create_topic=lambda name: None,
        on_metadata_update=lambda deleted: None,
        run_blocking=lambda fn, *args: defer.maybeDeferred(fn, *args),
    )
    return SimpleNamespace(clock=clock, rm=rm, manager=manager, dispatcher=Dispatcher(collect_handlers(broker)))


@pytest.fixture
def env(tmp_path):
    e = _env(tmp_path, selector=True)
    yield e
    e.manager.shutdown()


@pytest.fixture
def plain(tmp_path):
    e = _env(tmp_path, selector=False)
    yield e
    e.manager.shutdown()


def consumer_fetch(offset, *, rack="", max_wait_ms=0, epoch=-1, session_id=0, session_epoch=-1, partitions=True):
    return {
        "replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
        "session_id": session_id, "session_epoch": session_epoch,
        "topics": [{"topic": "t", "partitions": [
            {"partition": 0, "current_leader_epoch": epoch, "fetch_offset": offset, "log_start_offset": -1,
             "partition_max_bytes": 1 << 20},
        ]}] if partitions else [],
        "forgotten_topics_data": [],
        "rack_id": rack,
    }


def follower_fetch(env, replica_id, offset, log_start_offset=0):
    """A follower's fetch at *offset* (its log end): moves its state at the leader."""
    body = consumer_fetch(offset)
    body["replica_id"] = replica_id
    body["topics"][0]["partitions"][0]["log_start_offset"] = log_start_offset
    resp, _ = call(env, 1, 11, body)
    assert resp.responses[0].partitions[0].error_code == 0


def dispatch(env, body, *, version=11, listener="PLAINTEXT"):
    """Sends a Fetch; returns the list its response chunks will be appended to (empty while parked)."""
    request = decode_request(encode_request(1, version, 9, "c", body)[4:])
    got = []
    env.dispatcher.dispatch(request, SimpleNamespace(listener=listener, peer="x", close=lambda: None)).addCallback(got.append)
    return got


def decode_fetch(chunks, version=11):
    data = b"".join(c if isinstance(c, bytes) else c.read() for c in chunks)
    return decode_response(1, version, data[4:])[1]


def answer(resp):
    part = resp.responses[0].partitions[0]
    offsets = [r.offset for r in iter_records(bytes(part.records))] if part.records else []
    return part.error_code, part.preferred_read_replica, part.high_watermark, offsets


def lead_with_five_records(env, isr=(1, 2, 3)):
    env.rm.become_leader_or_follower(leader_and_isr(replicas=(1, 2, 3), isr=isr))
    produce(env, batch(5))


# ---------------------------------------------------------------------- at the leader


def test_the_leader_sends_a_consumer_to_the_caught_up_follower_in_its_rack(env):
    lead_with_five_records(env)
    follower_fetch(env, 2, 5)
    follower_fetch(env, 3, 5)
    # No records, the leader's offsets, and broker 2 named (error NONE): Kafka skips the read.
    assert answer(call(env, 1, 11, consumer_fetch(0, rack="r2"))[0]) == (0, 2, 5, [])
    assert answer(call(env, 1, 11, consumer_fetch(3, rack="r3"))[0]) == (0, 3, 5, [])
    # The leader's own rack, an unknown rack or none: the leader serves.
    for rack in ("r1", "elsewhere", ""):
        assert answer(call(env, 1, 11, consumer_fetch(0, rack=rack))[0]) == (0, -1, 5, [0, 1, 2, 3, 4])


def test_without_a_selector_the_leader_always_serves(plain):
    lead_with_five_records(plain)
    follower_fetch(plain, 2, 5)
    follower_fetch(plain, 3, 5)
    assert answer(call(plain, 1, 11, consumer_fetch(0, rack="r2"))[0]) == (0, -1, 5, [0, 1, 2, 3, 4])


def test_a_follower_behind_the_fetch_offset_or_the_lag_is_not_chosen(env):
    lead_with_five_records(env)
    follower_fetch(env, 2, 5)
    follower_fetch(env, 3, 2)  # broker 3 holds offsets 0–1 only
    assert answer(call(env, 1, 11, consumer_fetch(1, rack="r3"))[0])[1] == 3
    # Kafka's test is log end ≥ fetch offset: at its log end it may still serve (a long poll) …
    assert answer(call(env, 1, 11, consumer_fetch(2, rack="r3"))[0])[1] == 3
    # … beyond it, not.
    assert answer(call(env, 1, 11, consumer_fetch(3, rack="r3"))[0])[:2] == (0, -1)
    # Broker 3 stops fetching; broker 2 keeps up.  Past replica.lag.time.max.ms broker 3
    # no longer counts as caught up, although its log still holds offset 1.
    env.clock.advance(LAG_MS / 1000 + 1)
    follower_fetch(env, 2, 5)
    assert answer(call(env, 1, 11, consumer_fetch(1, rack="r3"))[0])[:2] == (0, -1)
    assert answer(call(env, 1, 11, consumer_fetch(1, rack="r2"))[0])[:2] == (0, 2)


def test_a_follower_whose_log_starts_after_the_fetch_offset_is_not_chosen(env):
    lead_with_five_records(env)
    follower_fetch(env, 2, 5, log_start_offset=3)
    assert answer(call(env, 1, 11, consumer_fetch(2, rack="r2"))[0])[:2] == (0, -1)
    assert answer(call(env, 1, 11, consumer_fetch(3, rack="r2"))[0])[:2] == (0, 2)


def test_a_follower_is_chosen_only_after_its_first_fetch_and_only_if_reachable(env):
    lead_with_five_records(env)
    # A new leader knows no follower's log end yet.
    assert answer(call(env, 1, 11, consumer_fetch(0, rack="r2"))[0])[1] == -1
    follower_fetch(env, 2, 5)
    assert answer(call(env, 1, 11, consumer_fetch(0, rack="r2"))[0])[1] == 2
    # On a listener where broker 2 has no endpoint it is no node to the client: never chosen.
    got = dispatch(env, consumer_fetch(0, rack="r2"), listener="INTERNAL")
    assert answer(decode_fetch(got[0]))[1] == -1


def test_a_preferred_replica_answer_does_not_wait_for_data(env):
    lead_with_five_records(env)
    follower_fetch(env, 2, 5)
    follower_fetch(env, 3, 5)
    # At the log end a plain consumer parks; one the leader sends elsewhere is answered at once.
    assert dispatch(env, consumer_fetch(5, rack="", max_wait_ms=500)) == []
    resp, _ = call(env, 1, 11, consumer_fetch(5, rack="r2", max_wait_ms=500))
    assert answer(resp) == (0, 2, 5, [])


def test_a_v10_consumer_has_no_rack_and_reads_the_leader(env):
    lead_with_five_records(env)
    follower_fetch(env, 2, 5)
    follower_fetch(env, 3, 5)
    resp, _ = call(env, 1, 10, consumer_fetch(0))
    part = resp.responses[0].partitions[0]
    assert part.error_code == 0 and len(list(iter_records(bytes(part.records)))) == 5


def test_an_incremental_session_repeats_the_preferred_replica(env):
    lead_with_five_records(env)
    follower_fetch(env, 2, 5)
    follower_fetch(env, 3, 5)
    resp, _ = call(env, 1, 11, consumer_fetch(0, rack="r2", session_epoch=0))
    assert resp.session_id and answer(resp)[1] == 2
    # Nothing changed (same HW, no records), yet Kafka always sends a preferred replica.
    resp, _ = call(env, 1, 11, consumer_fetch(0, rack="r2", session_id=resp.session_id, session_epoch=1, partitions=False))
    assert answer(resp)[:2] == (0, 2)


# ---------------------------------------------------------------------- at a follower


def follow_with_five_records(env, leader_hw):
    """Broker 1 follows broker 2 (epoch 3) and holds offsets 0–4, with the leader's HW *leader_hw*."""
    env.rm.become_leader_or_follower(leader_and_isr(leader=2, replicas=(1, 2, 3), isr=(1, 2, 3), epoch=3))
    records = b"".join(
        build_batch([Record(i, 1000 + i, b"k", b"v")], base_offset=i, partition_leader_epoch=3) for i in range(5)
    )
    assert env.rm.append_as_follower(("t", 0), 3, records, leader_hw, 0) == 5


def test_a_follower_serves_a_v11_consumer_up_to_its_high_watermark(env):
    follow_with_five_records(env, leader_hw=3)
    assert answer(call(env, 1, 11, consumer_fetch(0))[0]) == (0, -1, 3, [0, 1, 2])
    assert answer(call(env, 1, 11, consumer_fetch(1, epoch=3))[0]) == (0, -1, 3, [1, 2])
    # Between its HW and its log end: nothing yet, no error (Kafka's Log.read).
    assert answer(call(env, 1, 11, consumer_fetch(4))[0]) == (0, -1, 3, [])
    # Past its log end: out of range (the consumer goes back to the leader).
    assert answer(call(env, 1, 11, consumer_fetch(6))[0])[0] == ErrorCode.OFFSET_OUT_OF_RANGE
    # The follower's epoch is checked as the leader's would be.
    assert answer(call(env, 1, 11, consumer_fetch(0, epoch=2))[0])[0] == ErrorCode.FENCED_LEADER_EPOCH
    assert answer(call(env, 1, 11, consumer_fetch(0, epoch=4))[0])[0] == ErrorCode.UNKNOWN_LEADER_EPOCH


def test_a_follower_never_names_a_preferred_replica(env):
    follow_with_five_records(env, leader_hw=5)
    # Rack r2 is the leader's, r3 another follower's: the follower serves either way.
    for rack in ("r2", "r3", "r1"):
        assert answer(call(env, 1, 11, consumer_fetch(0, rack=rack))[0]) == (0, -1, 5, [0, 1, 2, 3, 4])


def test_a_follower_refuses_older_consumers_replicas_and_list_offsets(env):
    follow_with_five_records(env, leader_hw=5)
    resp, _ = call(env, 1, 10, consumer_fetch(0))
    assert resp.responses[0].partitions[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER
    body = consumer_fetch(0)
    body["replica_id"] = 3
    assert answer(call(env, 1, 11, body)[0])[0] == ErrorCode.NOT_LEADER_OR_FOLLOWER
    lo = {"replica_id": -1, "isolation_level": 0,
          "topics": [{"name": "t", "partitions": [{"partition_index": 0, "current_leader_epoch": -1, "timestamp": -1}]}]}
    resp, _ = call(env, 2, 5, lo)
    assert resp.topics[0].partitions[0].error_code == ErrorCode.NOT_LEADER_OR_FOLLOWER


def test_a_consumer_parked_at_a_follower_is_woken_when_its_high_watermark_moves(env):
    follow_with_five_records(env, leader_hw=3)
    got = dispatch(env, consumer_fetch(3, max_wait_ms=500))
    assert got == []
    # The leader's next answer carries no records, only a higher HW: the parked fetch completes
    # at once, with no clock movement.
    env.rm.append_as_follower(("t", 0), 3, b"", 5, 0)
    assert len(got) == 1
    assert answer(decode_fetch(got[0])) == (0, -1, 5, [3, 4])


def test_a_consumer_parked_at_a_follower_is_answered_when_leadership_moves_its_epoch(env):
    follow_with_five_records(env, leader_hw=5)
    got = dispatch(env, consumer_fetch(5, max_wait_ms=500, epoch=3))
    assert got == []
    # A new leader epoch: the consumer's epoch 3 is fenced now, so it is told at once.
    env.rm.become_leader_or_follower(leader_and_isr(leader=3, replicas=(1, 2, 3), isr=(1, 3), epoch=4))
    assert len(got) == 1
    assert answer(decode_fetch(got[0]))[0] == ErrorCode.FENCED_LEADER_EPOCH
