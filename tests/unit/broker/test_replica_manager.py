"""Replica manager and the Produce / Fetch / ListOffsets / controller-request handlers.

Real logs in tmp dirs, a fake clock (``task.Clock``) for the waiting rooms.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from twisted.internet import defer, task

from mafka.broker.dispatcher import Dispatcher, collect_handlers
from mafka.broker.metadata_cache import MetadataCache
from mafka.broker.replica_manager import ReplicaManager
from mafka.errors import ErrorCode
from mafka.log.config import LogConfig
from mafka.log.manager import LogManager
from mafka.wire.codec import decode_request, decode_response, encode_request
from mafka.wire.records import Record, build_batch, iter_records


def leader_and_isr(topic="t", partitions=(0,), *, leader=1, isr=(1,), replicas=(1,), epoch=0, controller_epoch=1):
    body = {
        "controller_id": 1,
        "controller_epoch": controller_epoch,
        "broker_epoch": -1,
        "topic_states": [
            {
                "topic_name": topic,
                "partition_states": [
                    {"partition_index": p, "controller_epoch": controller_epoch, "leader": leader, "leader_epoch": epoch,
                     "isr": list(isr), "zk_version": 0, "replicas": list(replicas), "is_new": True}
                    for p in partitions
                ],
            }
        ],
        "live_leaders": [],
    }
    return decode_request(encode_request(4, 2, 1, "controller", body)[4:]).body


def batch(n=1, value=b"v", ts=1000, **kw):
    return build_batch([Record(i, ts + i, b"k%d" % i, value) for i in range(n)], **kw)


@pytest.fixture
def env(tmp_path):
    clock = task.Clock()
    now = [1_000_000]
    manager = LogManager([tmp_path / "d1", tmp_path / "d2"], LogConfig(), lambda: now[0], broker_id=1, cluster_id="c")
    manager.startup()
    rm = ReplicaManager(1, manager, clock)
    broker = SimpleNamespace(
        replica_manager=rm,
        metadata_cache=MetadataCache(1),
        broker_epoch=100,
        max_message_bytes=lambda topic: 1048588,
        auto_create_topics=False,
        auto_create_topic=lambda name: None,
        on_metadata_update=lambda deleted: None,
        run_blocking=lambda fn, *args: defer.maybeDeferred(fn, *args),  # synchronous in unit tests
    )
    dispatcher = Dispatcher(collect_handlers(broker))
    yield SimpleNamespace(clock=clock, rm=rm, manager=manager, broker=broker, dispatcher=dispatcher, tmp=tmp_path)
    manager.shutdown()


def call(env, api_key, version, body):
    """Runs a request through the dispatcher; returns the decoded response body (or None)."""
    request = decode_request(encode_request(api_key, version, 5, "t", body)[4:])
    closed = []
    conn = SimpleNamespace(listener="PLAINTEXT", peer="x", close=lambda: closed.append(True))
    out = []
    result = env.dispatcher.dispatch(request, conn)
    if hasattr(result, "addCallback"):
        result.addCallback(out.append)
    else:
        out.append(result)
    if not out:
        return "pending", None
    chunks = out[0]
    if chunks is None:
        return None, closed
    data = b"".join(c if isinstance(c, bytes) else c.read() for c in chunks)
    return decode_response(api_key, version, data[4:])[1], closed


def produce(env, records, *, topic="t", partition=0, acks=1, version=7, timeout_ms=1000):
    body = {"acks": acks, "timeout_ms": timeout_ms, "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": records}]}]}
    return call(env, 0, version, body)


def fetch_body(offset, *, topic="t", partition=0, max_wait_ms=500, min_bytes=1, epoch=-1, replica_id=-1):
    return {
        "replica_id": replica_id, "max_wait_ms": max_wait_ms, "min_bytes": min_bytes, "max_bytes": 1 << 20,
        "topics": [{"topic": topic, "partitions": [{"partition": partition, "current_leader_epoch": epoch, "fetch_offset": offset, "partition_max_bytes": 1 << 20}]}],
    }


def test_leader_and_isr_then_produce_and_fetch(env):
    body, _ = call(env, 4, 2, leader_and_isr())
    assert body.error_code == 0 and body.partition_errors[0].error_code == 0
    resp, _ = produce(env, batch(3))
    p = resp.responses[0].partition_responses[0]
    assert (p.error_code, p.base_offset, p.log_start_offset) == (0, 0, 0)
    resp, _ = produce(env, batch(2))
    assert resp.responses[0].partition_responses[0].base_offset == 3
    resp, _ = call(env, 1, 11, fetch_body(1))
    part = resp.responses[0].partitions[0]
    assert (part.error_code, part.high_watermark, part.last_stable_offset) == (0, 5, 5)
    assert [r.offset for r in iter_records(bytes(part.records))] == [0, 1, 2, 3, 4]


def test_fetch_long_poll_is_woken_by_an_append_not_by_the_timer(env):
    env.rm.become_leader_or_follower(leader_and_isr())
    state, _ = call(env, 1, 11, fetch_body(0, max_wait_ms=500))
    assert state == "pending"
    # The parked fetch completes during the append itself, with no clock movement.
    request = decode_request(encode_request(1, 11, 9, "c", fetch_body(0, max_wait_ms=500))[4:])
    got = []
    env.dispatcher.dispatch(request, SimpleNamespace(listener="PLAINTEXT", close=lambda: None)).addCallback(got.append)
    assert got == []
    produce(env, batch(2))
    assert len(got) == 1
    data = b"".join(c if isinstance(c, bytes) else c.read() for c in got[0])
    part = decode_response(1, 11, data[4:])[1].responses[0].partitions[0]
    assert [r.offset for r in iter_records(bytes(part.records))] == [0, 1]


def test_fetch_long_poll_times_out_empty(env):
    env.rm.become_leader_or_follower(leader_and_isr())
    request = decode_request(encode_request(1, 11, 9, "c", fetch_body(0, max_wait_ms=500))[4:])
    got = []
    env.dispatcher.dispatch(request, SimpleNamespace(listener="PLAINTEXT", close=lambda: None)).addCallback(got.append)
    env.clock.advance(0.499)
    assert got == []
    env.clock.advance(0.002)
    part = decode_response(1, 11, b"".join(got[0])[4:])[1].responses[0].partitions[0]
    assert (part.error_code, bytes(part.records)) == (0, b"")


def test_every_requested_partition_is_answered_with_its_error(env):
    env.rm.become_leader_or_follower(leader_and_isr(partitions=(0,)))
    env.rm.become_leader_or_follower(leader_and_isr(topic="f", leader=2, isr=(2,), replicas=(1, 2)))
    body = fetch_body(0, max_wait_ms=0)
    body["topics"] += [
        {"topic": "f", "partitions": [{"partition": 0, "fetch_offset": 0, "partition_max_bytes": 100}]},
        {"topic": "nope", "partitions": [{"partition": 3, "fetch_offset": 0, "partition_max_bytes": 100}]},
    ]
    resp, _ = call(env, 1, 10, body)  # v10: from v11 a follower serves consumers (KIP-392)
    errors = [(t.topic, p.partition_index, p.error_code) for t in resp.responses for p in t.partitions]
    assert errors == [("t", 0, 0), ("f", 0, ErrorCode.NOT_LEADER_OR_FOLLOWER), ("nope", 3, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)]
    assert resp.session_id == 0


def test_fetch_leader_epoch_fencing_and_offset_out_of_range(env):
    env.rm.become_leader_or_follower(leader_and_isr(epoch=5))
    produce(env, batch(1))
    for epoch, error in ((4, ErrorCode.FENCED_LEADER_EPOCH), (6, ErrorCode.UNKNOWN_LEADER_EPOCH), (5, 0), (-1, 0)):
        resp, _ = call(env, 1, 11, fetch_body(0, epoch=epoch, max_wait_ms=0))
        assert resp.responses[0].partitions[0].error_code == error
    resp, _ = call(env, 1, 11, fetch_body(7, max_wait_ms=0))
    assert resp.responses[0].partitions[0].error_code == ErrorCode.OFFSET_OUT_OF_RANGE


def test_produce_validation_errors(env):
    env.rm.become_leader_or_follower(leader_and_isr())
    good = batch(2)
    corrupt = bytearray(good)
    corrupt[-1] ^= 0xFF
    cases = [
        (bytes(corrupt), ErrorCode.CORRUPT_MESSAGE),
        (good + good, ErrorCode.INVALID_RECORD),
        (batch(1, value=b"x" * 2_000_000), ErrorCode.MESSAGE_TOO_LARGE),
    ]
    for records, error in cases:
        resp, _ = produce(env, records)
        assert resp.responses[0].partition_responses[0].error_code == error
    resp, _ = produce(env, batch(1, compression=4), version=6)
    assert resp.responses[0].partition_responses[0].error_code == ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    resp, _ = produce(env, good, acks=2)
    assert resp.responses[0].partition_responses[0].error_code == ErrorCode.INVALID_REQUIRED_ACKS
    resp, _ = produce(env, good, topic="__consumer_offsets")
    assert resp.responses[0].partition_responses[0].error_code == ErrorCode.INVALID_TOPIC_EXCEPTION
    assert env.rm.partitions[("t", 0)].log.next_offset == 0  # nothing was written


def test_acks_zero_answers_nothing_and_closes_on_error(env):
    env.rm.become_leader_or_follower(leader_and_isr())
    result, closed = produce(env, batch(1), acks=0)
    assert result is None and closed == []
    result, closed = produce(env, batch(1), acks=0, partition=9)
    assert result is None and closed == [True]


def _dispatch(env, api_key, version, body):
    request = decode_request(encode_request(api_key, version, 9, "c", body)[4:])
    got = []
    env.dispatcher.dispatch(request, SimpleNamespace(listener="PLAINTEXT", close=lambda: None)).addCallback(got.append)
    return got


def _produce_all(env, topic):
    return _dispatch(env, 0, 7, {"acks": -1, "timeout_ms": 1000, "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": batch(1)}]}]})


def test_acks_all_waits_for_the_isr(env):
    env.rm.become_leader_or_follower(leader_and_isr(isr=(1, 2), replicas=(1, 2)))
    got = _produce_all(env, "t")
    assert got == []  # the follower has not fetched the batch yet
    call(env, 1, 11, fetch_body(0, replica_id=2, max_wait_ms=0))  # a fetch from 0: the HW stays 0
    assert got == []
    call(env, 1, 11, fetch_body(1, replica_id=2, max_wait_ms=0))  # the follower has offset 0: HW 1
    p = decode_response(0, 7, b"".join(got[0])[4:])[1].responses[0].partition_responses[0]
    assert (p.error_code, p.base_offset) == (0, 0)


def test_acks_all_times_out_without_the_isr(env):
    env.rm.become_leader_or_follower(leader_and_isr(isr=(1, 3), replicas=(1, 3)))
    got = _produce_all(env, "t")
    env.clock.advance(0.999)
    assert got == []
    env.clock.advance(0.002)
    p = decode_response(0, 7, b"".join(got[0])[4:])[1].responses[0].partition_responses[0]
    assert p.error_code == ErrorCode.REQUEST_TIMED_OUT


def test_list_offsets(env):
    env.rm.become_leader_or_follower(leader_and_isr())
    produce(env, batch(3, ts=1000))
    produce(env, batch(3, ts=2000))
    got = []
    for index, timestamp in ((0, -2), (0, -1), (0, 2001), (0, 9999), (4, -1)):  # a partition named twice is INVALID_REQUEST
        body = {"replica_id": -1, "topics": [{"name": "t", "partitions": [{"partition_index": index, "timestamp": timestamp}]}]}
        resp, _ = call(env, 2, 1, body)
        got += [(p.error_code, p.timestamp, p.offset) for p in resp.topics[0].partitions]
    assert got == [(0, -1, 0), (0, -1, 6), (0, 2001, 4), (0, -1, -1), (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1)]


def test_controller_fencing(env):
    body, _ = call(env, 4, 2, leader_and_isr(controller_epoch=3))
    assert body.error_code == 0
    body, _ = call(env, 4, 2, leader_and_isr(controller_epoch=2, epoch=1))
    assert body.error_code == ErrorCode.STALE_CONTROLLER_EPOCH
    body, _ = call(env, 4, 2, leader_and_isr(controller_epoch=3, epoch=0))  # same leader epoch
    assert body.partition_errors[0].error_code == ErrorCode.STALE_CONTROLLER_EPOCH
    lai = leader_and_isr(controller_epoch=3, epoch=1)
    stale = dict(lai)
    stale["broker_epoch"] = 99  # below this broker's epoch (100)
    body, _ = call(env, 4, 2, stale)
    assert body.error_code == ErrorCode.STALE_BROKER_EPOCH
    body, _ = call(env, 4, 2, leader_and_isr(controller_epoch=3, epoch=1, replicas=(2,), leader=2, isr=(2,)))
    assert body.partition_errors[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_stop_replica_with_delete_removes_the_log(env):
    env.rm.become_leader_or_follower(leader_and_isr())
    produce(env, batch(1))
    directory = env.rm.partitions[("t", 0)].log.directory
    body, _ = call(env, 5, 1, {"controller_id": 1, "controller_epoch": 1, "broker_epoch": -1, "delete_partitions": True, "topics": [{"name": "t", "partition_indexes": [0]}]})
    assert body.error_code == 0 and body.partition_errors[0].error_code == 0
    assert ("t", 0) not in env.rm.partitions
    assert not directory.exists()
    resp, _ = produce(env, batch(1))
    assert resp.responses[0].partition_responses[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def idempotent(n, seq, *, pid=5, epoch=0):
    return batch(n, producer_id=pid, producer_epoch=epoch, base_sequence=seq)


def test_idempotent_retries_get_their_original_offsets(env):
    env.rm.become_leader_or_follower(leader_and_isr())
    first = idempotent(3, 0)
    resp, _ = produce(env, first)
    assert resp.responses[0].partition_responses[0].base_offset == 0
    resp, _ = produce(env, idempotent(2, 3))
    assert resp.responses[0].partition_responses[0].base_offset == 3
    resp, _ = produce(env, first)  # the same bytes again: a retry
    p = resp.responses[0].partition_responses[0]
    assert (p.error_code, p.base_offset) == (0, 0)
    assert env.rm.partitions[("t", 0)].log.next_offset == 5  # not written twice
    resp, _ = produce(env, idempotent(1, 9))
    assert resp.responses[0].partition_responses[0].error_code == ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    resp, _ = produce(env, idempotent(1, 0, epoch=1))  # a new epoch starts at sequence 0
    assert resp.responses[0].partition_responses[0].error_code == 0
    resp, _ = produce(env, idempotent(1, 5, epoch=0))
    assert resp.responses[0].partition_responses[0].error_code == ErrorCode.INVALID_PRODUCER_EPOCH


def test_dedup_survives_a_restart(env, tmp_path):
    env.rm.become_leader_or_follower(leader_and_isr())
    last = idempotent(2, 0)
    produce(env, last)
    env.rm.shutdown()
    env.manager.shutdown()
    manager = LogManager([tmp_path / "d1", tmp_path / "d2"], LogConfig(), lambda: 1_000_000, broker_id=1, cluster_id="c")
    manager.startup()
    try:
        rm = ReplicaManager(1, manager, env.clock)
        rm.become_leader_or_follower(leader_and_isr())
        out = []
        rm.append_records([("t", 0, last)], acks=1, timeout_ms=1000, produce_version=7, max_message_bytes=lambda t: 1 << 20).addCallback(out.append)
        assert (out[0][("t", 0)].error, out[0][("t", 0)].base_offset) == (ErrorCode.NONE, 0)
        assert rm.partitions[("t", 0)].log.next_offset == 2
    finally:
        manager.shutdown()


def test_dedup_is_rebuilt_from_the_log_without_a_snapshot(env, tmp_path):
    env.rm.become_leader_or_follower(leader_and_isr())
    produce(env, idempotent(2, 0))
    second = idempotent(2, 2)
    produce(env, second)
    env.manager.shutdown()  # no producer snapshot written
    manager = LogManager([tmp_path / "d1", tmp_path / "d2"], LogConfig(), lambda: 1_000_000, broker_id=1, cluster_id="c")
    manager.startup()
    try:
        rm = ReplicaManager(1, manager, env.clock)
        rm.become_leader_or_follower(leader_and_isr())
        out = []
        rm.append_records([("t", 0, second)], acks=1, timeout_ms=1000, produce_version=7, max_message_bytes=lambda t: 1 << 20).addCallback(out.append)
        assert out[0][("t", 0)].base_offset == 2 and rm.partitions[("t", 0)].log.next_offset == 4
    finally:
        manager.shutdown()


def test_delete_records_moves_the_log_start(env):
    env.rm.become_leader_or_follower(leader_and_isr())
    produce(env, batch(5))
    body = {"timeout_ms": 1000, "topics": [{"name": "t", "partitions": [{"partition_index": 0, "offset": 3}]}]}
    resp, _ = call(env, 21, 1, body)
    assert (resp.topics[0].partitions[0].error_code, resp.topics[0].partitions[0].low_watermark) == (0, 3)
    resp, _ = call(env, 1, 11, fetch_body(1, max_wait_ms=0))
    assert resp.responses[0].partitions[0].error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    body["topics"][0]["partitions"][0]["offset"] = 99
    resp, _ = call(env, 21, 1, body)
    assert resp.topics[0].partitions[0].error_code == ErrorCode.OFFSET_OUT_OF_RANGE
    body["topics"][0]["partitions"][0]["offset"] = -1  # up to the high watermark
    resp, _ = call(env, 21, 1, body)
    assert resp.topics[0].partitions[0].low_watermark == 5


def test_logs_are_prepared_off_the_reactor_then_roles_applied(env):
    body = leader_and_isr(partitions=(0, 1))
    env.rm.prepare_partitions(body)  # what a worker thread runs in a real broker
    prepared = dict(env.rm._prepared)
    assert set(prepared) == {("t", 0), ("t", 1)}
    assert not env.rm.partitions  # nothing is served until the roles are applied
    env.rm.become_leader_or_follower(body)
    assert env.rm.partitions[("t", 0)] is prepared[("t", 0)] and env.rm.partitions[("t", 0)].is_leader
    assert env.rm._prepared == {}


def test_offset_for_leader_epoch(env):
    env.rm.become_leader_or_follower(leader_and_isr(epoch=3))
    produce(env, batch(4))  # epoch 3 holds offsets 0..3
    env.rm.become_leader_or_follower(leader_and_isr(epoch=5, controller_epoch=1))
    produce(env, batch(2))  # epoch 5 starts at 4
    body = {"replica_id": 2, "topics": [{"topic": "t", "partitions": [
        {"partition": 0, "current_leader_epoch": 5, "leader_epoch": 5},
        {"partition": 0, "current_leader_epoch": 5, "leader_epoch": 4},
        {"partition": 0, "current_leader_epoch": 5, "leader_epoch": 3},
        {"partition": 0, "current_leader_epoch": 4, "leader_epoch": 3},
        {"partition": 0, "current_leader_epoch": 6, "leader_epoch": 3},
        {"partition": 7, "current_leader_epoch": -1, "leader_epoch": 3},
    ]}]}
    resp, _ = call(env, 23, 3, body)
    got = [(p.error_code, p.leader_epoch, p.end_offset) for p in resp.topics[0].partitions]
    assert got == [
        (0, 5, 6),  # the current epoch ends at the log end
        (0, 3, 4),  # epoch 4 never led here: the largest epoch below it, ending where 5 starts
        (0, 3, 4),
        (ErrorCode.FENCED_LEADER_EPOCH, -1, -1),
        (ErrorCode.UNKNOWN_LEADER_EPOCH, -1, -1),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1),
    ]
