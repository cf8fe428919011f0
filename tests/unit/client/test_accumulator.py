"""RecordAccumulator: batching, linger, draining, retry ordering and in-flight limits (time injected)."""

from __future__ import annotations

from mafka.client.accumulator import PartitionSendState, RecordAccumulator
from mafka.client.producer_batch import ProducerBatch
from mafka.wire.records import decode_batch

T0 = 1000.0
LEADERS = {("a", 0): 1, ("a", 1): 1, ("b", 0): 2}


def leader_of(topic: str, partition: int) -> int:
    return LEADERS.get((topic, partition), -1)


def acc(batch_size: int = 16384, batch_messages: int = 10000, linger: float = 0.005,
        max_in_flight: int = 5) -> RecordAccumulator:
    return RecordAccumulator(batch_size, batch_messages, linger, 0, max_in_flight)


def put(a: RecordAccumulator, tp: tuple[str, int], value: bytes = b"v", now: float = T0,
        key: bytes | None = None) -> tuple[bool, bool]:
    with a.lock:
        return a.append(tp[0], tp[1], int(now * 1000), key, value, None, None, now)


def values(batch: ProducerBatch) -> list[bytes | None]:
    return [r.value for r in decode_batch(batch.build()).records]


# -- append -------------------------------------------------------------------------------------


def test_append_returns_new_batch_then_joins_it() -> None:
    a = acc()
    assert put(a, ("a", 0), b"1") == (True, False)
    assert put(a, ("a", 0), b"2") == (False, False)
    assert put(a, ("a", 1), b"3") == (True, False)
    assert len(a.queues[("a", 0)]) == 1
    assert values(a.queues[("a", 0)][0]) == [b"1", b"2"]
    assert a.queued_records == 3


def test_append_full_by_record_count() -> None:
    a = acc(batch_messages=3)
    assert put(a, ("a", 0)) == (True, False)
    assert put(a, ("a", 0)) == (False, False)
    assert put(a, ("a", 0)) == (False, True)  # third record fills it
    assert put(a, ("a", 0)) == (True, True)  # a second batch queued: the first is ready
    queue = a.queues[("a", 0)]
    assert [b.count for b in queue] == [3, 1]


def test_append_full_by_bytes_opens_new_batch() -> None:
    a = acc(batch_size=200)
    assert put(a, ("a", 0), b"x" * 100) == (True, False)
    new, full = put(a, ("a", 0), b"y" * 100)  # does not fit: a new batch
    assert (new, full) == (True, True)
    queue = a.queues[("a", 0)]
    assert [b.count for b in queue] == [1, 1]
    assert all(b.size <= 200 for b in queue)


def test_oversized_single_record_gets_its_own_batch() -> None:
    a = acc(batch_size=100)
    assert put(a, ("a", 0), b"x" * 500) == (True, True)
    assert a.queues[("a", 0)][0].count == 1


def test_batch_sent_once_is_closed_to_appends() -> None:
    a = acc(linger=0)
    put(a, ("a", 0), b"1")
    (batch,) = a.drain([("a", 0)], 1 << 20, T0)
    batch.attempts = 1
    a.reenqueue(batch, retry_at=T0)
    new, _ = put(a, ("a", 0), b"2")
    assert new
    assert [values(b) for b in a.queues[("a", 0)]] == [[b"1"], [b"2"]]


# -- linger and readiness ---------------------------------------------------------------------


def test_linger_makes_batch_ready_only_after_linger() -> None:
    a = acc(linger=0.5)
    put(a, ("a", 0), now=T0)
    nodes, next_at, unknown = a.ready(T0 + 0.1, leader_of)
    assert nodes == set() and unknown == set()
    assert next_at == T0 + 0.5
    assert a.drain([("a", 0)], 1 << 20, T0 + 0.49) == []
    nodes, next_at, _ = a.ready(T0 + 0.5, leader_of)
    assert nodes == {1}
    assert len(a.drain([("a", 0)], 1 << 20, T0 + 0.5)) == 1


def test_full_batch_ready_at_once() -> None:
    a = acc(batch_messages=2, linger=60)
    put(a, ("a", 0))
    assert a.ready(T0, leader_of)[0] == set()
    put(a, ("a", 0))
    assert a.ready(T0, leader_of)[0] == {1}
    assert len(a.drain([("a", 0)], 1 << 20, T0)) == 1


def test_flushing_makes_everything_ready() -> None:
    a = acc(linger=60)
    put(a, ("a", 0))
    put(a, ("b", 0))
    assert a.ready(T0, leader_of)[0] == set()
    a.flushing += 1
    assert a.ready(T0, leader_of)[0] == {1, 2}


def test_ready_reports_topics_without_leader() -> None:
    a = acc(linger=0)
    put(a, ("nope", 0))
    put(a, ("a", 0))
    nodes, _, unknown = a.ready(T0, leader_of)
    assert nodes == {1}
    assert unknown == {"nope"}


def test_ready_waits_for_retry_backoff() -> None:
    a = acc(linger=0)
    put(a, ("a", 0))
    (batch,) = a.drain([("a", 0)], 1 << 20, T0)
    batch.attempts = 1
    a.reenqueue(batch, retry_at=T0 + 2)
    nodes, next_at, _ = a.ready(T0 + 1, leader_of)
    assert nodes == set() and next_at == T0 + 2
    assert a.drain([("a", 0)], 1 << 20, T0 + 1) == []
    assert a.drain([("a", 0)], 1 << 20, T0 + 2) == [batch]


# -- drain ----------------------------------------------------------------------------------------


def test_drain_takes_at_most_one_batch_per_partition() -> None:
    a = acc(batch_messages=1, linger=0)
    for _ in range(3):
        put(a, ("a", 0))
        put(a, ("a", 1))
    out = a.drain([("a", 0), ("a", 1)], 1 << 20, T0)
    assert [(b.topic, b.partition) for b in out] == [("a", 0), ("a", 1)]
    assert [len(a.queues[tp]) for tp in [("a", 0), ("a", 1)]] == [2, 2]


def test_drain_respects_max_bytes_but_always_takes_one() -> None:
    a = acc(linger=0)
    for p in range(3):
        put(a, ("m", p), b"x" * 100)
    size = a.queues[("m", 0)][0].size
    out = a.drain([("m", 0), ("m", 1), ("m", 2)], 2 * size, T0)
    assert len(out) == 2
    assert sum(b.size for b in out) <= 2 * size
    out = a.drain([("m", 2)], 1, T0)  # below one batch: still one
    assert len(out) == 1


def test_drain_skips_unknown_and_empty_partitions() -> None:
    a = acc(linger=0)
    put(a, ("a", 0))
    assert len(a.drain([("zz", 9), ("a", 1), ("a", 0)], 1 << 20, T0)) == 1


# -- retries: ordering and in-flight limits ------------------------------------------------------


def _sent(a: RecordAccumulator, tp: tuple[str, int], n: int) -> list[ProducerBatch]:
    """n batches of tp, drained and given sequences as the sender does."""
    state = a.state(tp)
    out = []
    for _ in range(n):
        put(a, tp)
        (batch,) = a.drain([tp], 1 << 20, T0 + 10)
        batch.base_sequence = state.next_sequence
        state.next_sequence += batch.count
        batch.attempts += 1
        state.in_flight.append(batch)
        out.append(batch)
    return out


def test_reenqueue_in_sequence_order_ahead_of_new_batches() -> None:
    a = acc(linger=0)
    tp = ("a", 0)
    b0, b1, b2 = _sent(a, tp, 3)
    put(a, tp, b"new")  # a not-yet-sent batch (base_sequence -1)
    a.state(tp).in_flight.clear()
    a.reenqueue(b2, T0)
    a.reenqueue(b0, T0)
    a.reenqueue(b1, T0)
    queue = list(a.queues[tp])
    assert queue[:3] == [b0, b1, b2]
    assert queue[3].base_sequence == -1 and values(queue[3]) == [b"new"]


def test_reenqueue_unsequenced_goes_to_head() -> None:
    a = acc(linger=0)
    tp = ("a", 0)
    put(a, tp, b"1")
    (batch,) = a.drain([tp], 1 << 20, T0)
    put(a, tp, b"2")
    a.reenqueue(batch, T0 + 1)
    assert list(a.queues[tp])[0] is batch
    assert batch.retry_at == T0 + 1


def test_reenqueue_into_empty_or_missing_queue() -> None:
    a = acc()
    batch = ProducerBatch("new", 0, 1000, 0, T0)
    batch.try_append(1, None, b"v", None, None)
    batch.base_sequence = 7
    a.reenqueue(batch, T0)
    assert list(a.queues[("new", 0)]) == [batch]


def test_in_flight_limit_without_retries() -> None:
    a = acc(linger=0, max_in_flight=3)
    tp = ("a", 0)
    _sent(a, tp, 3)
    put(a, tp)
    assert a.drain([tp], 1 << 20, T0 + 10) == []  # 3 in flight: blocked
    assert a.ready(T0 + 10, leader_of)[0] == set()
    a.state(tp).in_flight.pop(0)
    assert len(a.drain([tp], 1 << 20, T0 + 10)) == 1


def test_retrying_allows_only_one_in_flight() -> None:
    a = acc(linger=0, max_in_flight=5)
    tp = ("a", 0)
    b0, b1 = _sent(a, tp, 2)
    state = a.state(tp)
    # b0 failed and goes back; b1 is still in flight
    state.in_flight.remove(b0)
    state.retrying = True
    a.reenqueue(b0, T0)
    assert a.drain([tp], 1 << 20, T0 + 10) == []  # b1 in flight, retrying: limit 1
    state.in_flight.remove(b1)
    a.reenqueue(b1, T0)
    assert a.drain([tp], 1 << 20, T0 + 10) == [b0]
    state.in_flight.append(b0)
    assert a.drain([tp], 1 << 20, T0 + 10) == []  # still one at a time
    state.in_flight.remove(b0)
    assert a.drain([tp], 1 << 20, T0 + 10) == [b1]
    state.in_flight.append(b1)
    state.retrying = False
    put(a, tp)
    assert len(a.drain([tp], 1 << 20, T0 + 10)) == 1  # back to max_in_flight


def test_state_is_created_once() -> None:
    a = acc()
    s = a.state(("a", 0))
    assert isinstance(s, PartitionSendState)
    assert a.state(("a", 0)) is s
    assert (s.next_sequence, s.in_flight, s.retrying) == (0, [], False)


# -- expire, take_all, accounting ------------------------------------------------------------------


def test_expire_removes_only_old_batches() -> None:
    a = acc(batch_messages=1, linger=60)
    put(a, ("a", 0), b"old", now=T0)
    put(a, ("a", 0), b"young", now=T0 + 5)
    put(a, ("b", 0), b"old-b", now=T0 + 1)
    expired = a.expire(T0 + 10, timeout=6)
    assert sorted(values(b)[0] for b in expired) == [b"old", b"old-b"]
    assert [values(b) for b in a.queues[("a", 0)]] == [[b"young"]]
    assert a.expire(T0 + 10, timeout=6) == []
    assert len(a.expire(T0 + 11, timeout=6)) == 1


def test_take_all_empties_everything() -> None:
    a = acc(batch_messages=2)
    for i in range(5):
        put(a, ("a", i % 2), bytes([i]))
    assert a.has_queued()
    taken = a.take_all()
    assert sum(b.count for b in taken) == 5
    assert not a.has_queued()
    assert a.take_all() == []


def test_queued_accounting_returns_to_zero() -> None:
    a = acc(batch_size=300, batch_messages=3, linger=0)
    sizes = [10, 0, 200, 50, 120, 3, 250]
    for i, n in enumerate(sizes):
        put(a, ("a", i % 2), b"z" * n, key=b"k" if i % 3 else None)
    assert a.queued_records == len(sizes)
    all_batches = [b for q in a.queues.values() for b in q]
    assert a.queued_bytes == sum(b.payload for b in all_batches) > sum(sizes)
    # some leave through drain, some through expire, the rest through take_all
    drained = a.drain([("a", 0), ("a", 1)], 1 << 20, T0)
    expired = a.expire(T0 + 100, timeout=1000)  # none yet
    assert expired == []
    for b in drained:
        a.record_done(b)
    for b in a.take_all():
        a.record_done(b)
    assert (a.queued_records, a.queued_bytes) == (0, 0)


def test_accounting_after_split() -> None:
    a = acc(linger=0)
    for i in range(4):
        put(a, ("a", 0), b"x" * (i * 10))
    (batch,) = a.drain([("a", 0)], 1 << 20, T0)
    for single in reversed(batch.split(T0)):
        a.reenqueue(single, T0)
    for b in a.take_all():
        a.record_done(b)
    assert (a.queued_records, a.queued_bytes) == (0, 0)
