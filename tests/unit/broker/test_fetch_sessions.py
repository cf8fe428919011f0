"""Incremental fetch sessions (KIP-227): the cache's eviction rules and Fetch v7+ through the handler."""

from __future__ import annotations

import random
from types import SimpleNamespace

import pytest

from mafka.broker.fetch_session import (
    EVICTION_MS,
    CachedPartition,
    FetchSessionCache,
    next_epoch,
)
from mafka.errors import ErrorCode
from mafka.wire.records import iter_records

from .test_replica_manager import batch, call, env, leader_and_isr, produce  # noqa: F401 (env is a fixture)


def parts(n, topic="t"):
    return [CachedPartition(topic, i, 0, 1024) for i in range(n)]


# ---------------------------------------------------------------------- the cache


def test_epochs_wrap_to_one_and_final_stays_final():
    assert next_epoch(0) == 1 and next_epoch(41) == 42
    assert next_epoch(2**31 - 1) == 1
    assert next_epoch(-1) == -1


def test_no_session_for_an_empty_fetch_or_a_zero_sized_cache():
    assert FetchSessionCache(0).maybe_create(0, False, parts(3)) == 0
    assert FetchSessionCache(5).maybe_create(0, False, []) == 0


def test_a_full_cache_evicts_a_stale_session_first():
    cache = FetchSessionCache(2, rng=random.Random(1))
    a = cache.maybe_create(0, True, parts(100))
    b = cache.maybe_create(10, True, parts(100))
    cache.touch(cache.get(a), 50)
    # Nothing stale and nothing old enough yet: a small consumer session gets no slot.
    assert cache.maybe_create(100, False, parts(1)) == 0
    # b (last used at 10) goes stale first.
    c = cache.maybe_create(10 + EVICTION_MS + 1, False, parts(1))
    assert c and cache.get(b) is None and cache.get(a) is not None and cache.evictions == 1


def test_a_follower_may_evict_a_young_consumer_session_but_not_the_other_way():
    cache = FetchSessionCache(1, rng=random.Random(2))
    consumer = cache.maybe_create(0, False, parts(5))
    follower = cache.maybe_create(1, True, parts(1))
    assert follower and cache.get(consumer) is None
    # A consumer cannot push a young follower session out.
    assert cache.maybe_create(2, False, parts(500)) == 0
    assert cache.get(follower) is not None


def test_old_sessions_are_evicted_only_by_a_session_at_least_as_valuable():
    cache = FetchSessionCache(1, rng=random.Random(3))
    big = cache.maybe_create(0, False, parts(50))
    now = EVICTION_MS + 10
    cache.touch(cache.get(big), now - 1)  # recently used: not stale, but old enough to be evictable
    assert cache.maybe_create(now, False, parts(10)) == 0  # smaller: less valuable
    small = cache.maybe_create(now, False, parts(60))
    assert small and cache.get(big) is None
    assert cache.num_partitions == 60


# ---------------------------------------------------------------------- through the handler


def session_fetch(offsets, *, session_id, epoch, forgotten=(), max_wait_ms=0, topic="t"):
    return {
        "replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
        "session_id": session_id, "session_epoch": epoch,
        "topics": [{"topic": topic, "partitions": [
            {"partition": p, "current_leader_epoch": -1, "fetch_offset": o, "log_start_offset": -1, "partition_max_bytes": 1 << 20}
            for p, o in offsets.items()
        ]}] if offsets else [],
        "forgotten_topics_data": [{"topic": topic, "partitions": list(forgotten)}] if forgotten else [],
        "rack_id": "",
    }


def answered(resp):
    return {(t.topic, p.partition_index): p for t in resp.responses for p in t.partitions}


@pytest.fixture
def three(env):  # noqa: F811
    env.rm.become_leader_or_follower(leader_and_isr(partitions=(0, 1, 2)))
    for p in (0, 1, 2):
        produce(env, batch(2), partition=p)
    return env


def test_full_then_incremental_fetches_answer_only_partitions_with_news(three):
    resp, _ = call(three, 1, 11, session_fetch({0: 0, 1: 0, 2: 0}, session_id=0, epoch=0))
    assert resp.error_code == 0 and resp.session_id != 0
    sid = resp.session_id
    assert set(answered(resp)) == {("t", 0), ("t", 1), ("t", 2)}

    # Incremental, epoch 1: the fetcher moved every offset to 2.  Nothing new anywhere.
    resp, _ = call(three, 1, 11, session_fetch({0: 2, 1: 2, 2: 2}, session_id=sid, epoch=1))
    assert (resp.error_code, resp.session_id, answered(resp)) == (0, sid, {})

    # New data on partition 1 only: the next fetch lists no partitions and still gets it.
    produce(three, batch(3, value=b"new"), partition=1)
    resp, _ = call(three, 1, 11, session_fetch({}, session_id=sid, epoch=2))
    got = answered(resp)
    assert set(got) == {("t", 1)}
    assert [r.offset for r in iter_records(bytes(got["t", 1].records))] == [2, 3, 4]
    assert got["t", 1].high_watermark == 5


def test_incremental_session_errors_and_forgotten_partitions(three):
    resp, _ = call(three, 1, 11, session_fetch({0: 0, 1: 0}, session_id=0, epoch=0))
    sid = resp.session_id
    resp, _ = call(three, 1, 11, session_fetch({}, session_id=sid, epoch=5))
    assert (resp.error_code, resp.session_id, resp.responses) == (ErrorCode.INVALID_FETCH_SESSION_EPOCH, 0, [])
    resp, _ = call(three, 1, 11, session_fetch({}, session_id=sid + 1, epoch=1))
    assert resp.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND

    # Forget partition 0, move 1 past its data, add 2 (from offset 0): only 2 has news.
    resp, _ = call(three, 1, 11, session_fetch({1: 2, 2: 0}, session_id=sid, epoch=1, forgotten=[0]))
    assert set(answered(resp)) == {("t", 2)}
    produce(three, batch(1), partition=0)  # partition 0 is no longer in the session
    resp, _ = call(three, 1, 11, session_fetch({1: 2, 2: 2}, session_id=sid, epoch=2))
    assert answered(resp) == {}

    # Epoch −1 closes the session; the id is gone afterwards.
    resp, _ = call(three, 1, 11, session_fetch({0: 0}, session_id=sid, epoch=-1))
    assert resp.session_id == 0 and set(answered(resp)) == {("t", 0)}
    resp, _ = call(three, 1, 11, session_fetch({}, session_id=sid, epoch=3))
    assert resp.error_code == ErrorCode.FETCH_SESSION_ID_NOT_FOUND


def test_an_error_is_repeated_until_it_clears_then_the_partition_is_sent_again(three):
    # Fetch v10: a consumer's v11+ fetch would be served by the follower (KIP-392).
    resp, _ = call(three, 1, 10, session_fetch({0: 2, 1: 2}, session_id=0, epoch=0))
    sid = resp.session_id
    # The broker stops leading partition 1 (a newer leader epoch makes broker 2 the leader).
    three.rm.become_leader_or_follower(leader_and_isr(partitions=(1,), leader=2, replicas=(1, 2), isr=(1, 2), epoch=1))
    resp, _ = call(three, 1, 10, session_fetch({}, session_id=sid, epoch=1))
    assert {k: p.error_code for k, p in answered(resp).items()} == {("t", 1): ErrorCode.NOT_LEADER_OR_FOLLOWER}
    resp, _ = call(three, 1, 10, session_fetch({}, session_id=sid, epoch=2))
    assert {k: p.error_code for k, p in answered(resp).items()} == {("t", 1): ErrorCode.NOT_LEADER_OR_FOLLOWER}
    # Leadership comes back: the partition is answered once more (its high watermark was forgotten).
    three.rm.become_leader_or_follower(leader_and_isr(partitions=(1,), epoch=2))
    resp, _ = call(three, 1, 10, session_fetch({}, session_id=sid, epoch=3))
    got = answered(resp)
    assert set(got) == {("t", 1)} and got["t", 1].error_code == 0


def test_a_parked_incremental_fetch_is_woken_by_an_append_to_a_partition_it_did_not_list(three):
    resp, _ = call(three, 1, 11, session_fetch({0: 2, 1: 2, 2: 2}, session_id=0, epoch=0))
    sid = resp.session_id
    from mafka.wire.codec import decode_request, decode_response, encode_request

    request = decode_request(encode_request(1, 11, 9, "c", session_fetch({}, session_id=sid, epoch=1, max_wait_ms=500))[4:])
    got = []
    three.dispatcher.dispatch(request, SimpleNamespace(listener="PLAINTEXT", close=lambda: None)).addCallback(got.append)
    assert got == []
    produce(three, batch(1), partition=2)
    assert len(got) == 1
    data = b"".join(c if isinstance(c, bytes) else c.read() for c in got[0])
    assert set(answered(decode_response(1, 11, data[4:])[1])) == {("t", 2)}


def test_partitions_that_answered_move_to_the_back_of_the_session(three):
    resp, _ = call(three, 1, 11, session_fetch({0: 0, 1: 0, 2: 0}, session_id=0, epoch=0))
    sid = resp.session_id
    produce(three, batch(1), partition=0)
    resp, _ = call(three, 1, 11, session_fetch({0: 2, 1: 2, 2: 2}, session_id=sid, epoch=1))
    assert set(answered(resp)) == {("t", 0)}
    # Partition 0 answered last, so it is now read after 1 and 2: with news on 0 and 1, 1 comes first.
    produce(three, batch(1), partition=1)
    produce(three, batch(1), partition=0)
    resp, _ = call(three, 1, 11, session_fetch({0: 3}, session_id=sid, epoch=2))
    order = [(t.topic, p.partition_index) for t in resp.responses for p in t.partitions]
    assert order == [("t", 1), ("t", 0)]
