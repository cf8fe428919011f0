"""AlterReplicaLogDirs / DescribeLogDirs handlers and the LogDirMover, through the dispatcher.

Real logs in two tmp log dirs, a fake clock; the mover's worker-thread work
runs when the test drains its queue, so states in between can be seen.
"""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

import pytest
from twisted.internet import defer, task

from mafka.broker.dispatcher import Dispatcher, collect_handlers
from mafka.broker.log_dir_mover import LogDirMover
from mafka.broker.metadata_cache import MetadataCache
from mafka.broker.replica_manager import ReplicaManager
from mafka.errors import ErrorCode
from mafka.log.config import LogConfig
from mafka.log.manager import LogManager
from mafka.wire.codec import decode_request, decode_response, encode_request
from mafka.wire.records import iter_records

from .test_replica_manager import batch, call, fetch_body, leader_and_isr, produce


class Queue:
    """A ``run_blocking`` whose work runs when :meth:`drain` is called."""

    def __init__(self) -> None:
        self.items: list = []

    def __call__(self, fn, *args):
        d: defer.Deferred = defer.Deferred()
        self.items.append((fn, args, d))
        return d

    def drain(self) -> int:
        n = 0
        while self.items:
            fn, args, d = self.items.pop(0)
            defer.maybeDeferred(fn, *args).chainDeferred(d)
            n += 1
        return n


class Cache(MetadataCache):
    """A metadata cache that also knows the partitions in *known*."""

    def __init__(self, broker_id, known):
        super().__init__(broker_id)
        self.known = known

    def partition(self, topic, partition):
        return object() if (topic, partition) in self.known else super().partition(topic, partition)


@pytest.fixture
def env(tmp_path):
    clock = task.Clock()
    dirs = [tmp_path / "d1", tmp_path / "d2"]
    manager = LogManager(
        dirs,
        LogConfig(segment_bytes=2000, file_delete_delay_ms=0),
        lambda: 1_000_000,
        broker_id=1,
        cluster_id="c",
    )
    manager.startup()
    rm = ReplicaManager(1, manager, clock)
    queue = Queue()
    known: set[tuple[str, int]] = set()
    broker = SimpleNamespace(
        replica_manager=rm,
        log_manager=manager,
        metadata_cache=Cache(1, known),
        broker_epoch=100,
        max_message_bytes=lambda topic: 1048588,
        auto_create_topics=False,
        auto_create_topic=lambda name: None,
        on_metadata_update=lambda deleted: None,
        run_blocking=lambda fn, *args: defer.maybeDeferred(fn, *args),
    )
    broker.log_dir_mover = LogDirMover(manager, rm, clock, queue, chunk_bytes=1000)
    dispatcher = Dispatcher(collect_handlers(broker))
    yield SimpleNamespace(
        clock=clock,
        rm=rm,
        manager=manager,
        broker=broker,
        dispatcher=dispatcher,
        dirs=dirs,
        queue=queue,
        known=known,
        mover=broker.log_dir_mover,
    )
    manager.shutdown()


def describe(env, version=4, topics=None):
    body, _ = call(env, 35, version, {"topics": topics})
    return body


def alter(env, moves, version=2):
    """AlterReplicaLogDirs answered after the mover's checks ran (any queued copy pass too)."""
    dirs: dict[str, dict[str, list[int]]] = {}
    for path, topic, partition in moves:
        dirs.setdefault(str(path), {}).setdefault(topic, []).append(partition)
    body = {
        "dirs": [
            {"path": p, "topics": [{"name": t, "partitions": ps} for t, ps in ts.items()]}
            for p, ts in dirs.items()
        ]
    }
    request = decode_request(encode_request(34, version, 5, "t", body)[4:])
    conn = SimpleNamespace(listener="PLAINTEXT", peer="x", close=lambda: None)
    out = []
    defer.maybeDeferred(env.dispatcher.dispatch, request, conn).addCallback(out.append)
    if not out:  # the checks were queued last (a copy pass may be queued before them)
        fn, args, d = env.queue.items.pop()
        defer.maybeDeferred(fn, *args).chainDeferred(d)
    assert out, "no answer"
    data = b"".join(c if isinstance(c, bytes) else c.read() for c in out[0])
    response = decode_response(34, version, data[4:])[1]
    return {
        (r.topic_name, p.partition_index): p.error_code
        for r in response.results
        for p in r.partitions
    }


def partitions_in(result):
    return {(t.name, p.partition_index): p for t in result.topics for p in t.partitions}


def test_describe_lists_each_dir_with_its_replicas(env):
    call(env, 4, 2, leader_and_isr(partitions=(0, 1)))
    produce(env, batch(5))
    body = describe(env, 4)
    assert body.error_code == 0 and body.throttle_time_ms == 0
    assert [r.log_dir for r in body.results] == [str(d) for d in env.dirs]
    by_dir = {Path(r.log_dir): r for r in body.results}
    log0 = env.manager.get_log("t", 0)
    d0 = env.manager.log_dir_of(("t", 0))
    p0 = partitions_in(by_dir[d0])[("t", 0)]
    assert (p0.partition_size, p0.offset_lag, p0.is_future_key) == (
        log0.size,
        0,
        False,
    ) and p0.partition_size > 0
    assert all(
        r.error_code == 0 and r.total_bytes > 0 and 0 <= r.usable_bytes <= r.total_bytes
        for r in body.results
    )
    assert sorted(tp for r in body.results for tp in partitions_in(r)) == [("t", 0), ("t", 1)]
    # A topic filter; v1 has neither the top-level error nor the space fields.
    body = describe(
        env, 1, [{"topic": "t", "partitions": [1]}, {"topic": "nope", "partitions": [0]}]
    )
    assert sorted(tp for r in body.results for tp in partitions_in(r)) == [("t", 1)]
    assert all(not r.topics or [t.name for t in r.topics] == ["t"] for r in body.results)
    assert all(r.total_bytes == -1 for r in body.results)
    # An offline dir answers KAFKA_STORAGE_ERROR.
    other = next(d for d in env.dirs if d != d0)
    env.manager.handle_dir_failure(other, OSError("gone"))
    errors = {Path(r.log_dir): (r.error_code, len(r.topics)) for r in describe(env, 3).results}
    assert errors[other] == (ErrorCode.KAFKA_STORAGE_ERROR, 0) and errors[d0][0] == 0


def test_alter_errors_follow_kafka(env, tmp_path):
    call(env, 4, 2, leader_and_isr())
    src = env.manager.log_dir_of(("t", 0))
    dst = next(d for d in env.dirs if d != src)
    env.known.add(("elsewhere", 0))
    errors = alter(
        env,
        [
            ("relative/path", "t", 0),
            (tmp_path / "not-a-log-dir", "t", 1),
            (dst, "unknown", 0),
            (dst, "elsewhere", 0),
            (dst, "t" * 250, 0),
        ],
    )
    assert errors == {
        ("t", 0): ErrorCode.LOG_DIR_NOT_FOUND,
        ("t", 1): ErrorCode.LOG_DIR_NOT_FOUND,
        ("unknown", 0): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ("elsewhere", 0): ErrorCode.REPLICA_NOT_AVAILABLE,
        ("t" * 250, 0): ErrorCode.INVALID_TOPIC_EXCEPTION,
    }
    # The partition not hosted yet is created in the requested dir when it arrives.
    assert env.manager.preferred_log_dir(("elsewhere", 0)) == dst
    call(env, 4, 2, leader_and_isr(topic="elsewhere"))
    assert env.manager.log_dir_of(("elsewhere", 0)) == dst
    env.manager.handle_dir_failure(dst, OSError("gone"))
    assert alter(env, [(dst, "t", 0)]) == {("t", 0): ErrorCode.KAFKA_STORAGE_ERROR}
    assert alter(env, [(src, "elsewhere", 0)]) == {("elsewhere", 0): ErrorCode.KAFKA_STORAGE_ERROR}


def fetch_values(env):
    """Every record value of t-0 up to the high watermark, fetched one segment at a time."""
    values, offset = [], 0
    while True:
        body, _ = call(env, 1, 11, fetch_body(offset, max_wait_ms=0))
        part = body.responses[0].partitions[0]
        assert part.error_code == 0
        records = list(iter_records(part.records or b""))
        if not records:
            return values
        values += [r.value for r in records]
        offset = records[-1].offset + 1


def test_a_replica_moves_while_producing_and_nothing_is_lost(env):
    call(env, 4, 2, leader_and_isr())
    src = env.manager.log_dir_of(("t", 0))
    dst = next(d for d in env.dirs if d != src)
    for i in range(20):
        produce(env, batch(5, value=b"before-%d" % i))
    assert alter(env, [(dst, "t", 0)]) == {("t", 0): ErrorCode.NONE}
    # The future log exists; the copy pass is queued, not run yet.
    assert len(env.queue.items) == 1
    body = describe(env)
    future = {Path(r.log_dir): partitions_in(r) for r in body.results}[dst][("t", 0)]
    assert future.is_future_key and future.offset_lag == 100 and future.partition_size == 0
    # Asking again for the same dir changes nothing.
    assert alter(env, [(dst, "t", 0)]) == {("t", 0): ErrorCode.NONE}
    old_log = env.rm.partitions[("t", 0)].log
    # Writes keep arriving between the copy steps: run the pass one chunk at a time.
    fn, args, d = env.queue.items.pop(0)
    steps = []
    real = env.manager.catch_up_future_log

    def catch_up(tp, max_bytes=1 << 20):
        steps.append(tp)
        if len(steps) % 3 == 0:
            produce(env, batch(1, value=b"during-%d" % len(steps)))
        return real(tp, max_bytes)

    env.manager.catch_up_future_log = catch_up
    defer.maybeDeferred(fn, *args).chainDeferred(d)
    del env.manager.catch_up_future_log
    assert len(steps) > 5 and env.mover.moves_completed == 1
    partition = env.rm.partitions[("t", 0)]
    assert partition.log is not old_log and partition.log is env.manager.get_log("t", 0)
    assert env.manager.log_dir_of(("t", 0)) == dst and env.manager.future_logs == {}
    # Everything acknowledged before and during the move is there, in order, and more can come.
    resp, _ = produce(env, batch(1, value=b"after"))
    assert resp.responses[0].partition_responses[0].error_code == 0
    values = fetch_values(env)
    during = [b"during-%d" % n for n in range(3, len(steps) + 1, 3)]
    assert values == [b"before-%d" % i for i in range(20) for _ in range(5)] + during + [b"after"]
    body = describe(env)
    where = {Path(r.log_dir): partitions_in(r) for r in body.results}
    assert where[src] == {} and not where[dst][("t", 0)].is_future_key
    assert where[dst][("t", 0)].partition_size == partition.log.size
    assert env.manager.delete_pending_logs() == 1
    assert sorted(p.name for p in src.iterdir() if p.is_dir()) == []


def test_asking_for_the_current_dir_cancels_a_move(env):
    call(env, 4, 2, leader_and_isr())
    produce(env, batch(3))
    src = env.manager.log_dir_of(("t", 0))
    dst = next(d for d in env.dirs if d != src)
    assert alter(env, [(dst, "t", 0)]) == {("t", 0): 0}
    assert env.manager.future_log_dir_of(("t", 0)) == dst
    assert alter(env, [(src, "t", 0)]) == {("t", 0): 0}
    assert env.manager.future_logs == {}
    env.queue.drain()
    assert env.manager.log_dir_of(("t", 0)) == src and env.mover.moves_completed == 0


def test_the_mover_stops_between_steps(env):
    call(env, 4, 2, leader_and_isr())
    produce(env, batch(50, value=b"x" * 100))
    dst = next(d for d in env.dirs if d != env.manager.log_dir_of(("t", 0)))
    alter(env, [(dst, "t", 0)])
    stopped = env.mover.stop()
    assert not stopped.called  # the queued pass has not returned
    env.queue.drain()
    assert stopped.called and env.mover.moves_completed == 0
    env.mover.kick()
    assert env.queue.items == []


def test_a_moved_replica_keeps_its_pending_delayed_messages(env):
    from mafka.broker.delayed_delivery import DelayedDelivery
    from mafka.wire.records import Record, build_batch

    call(env, 4, 2, leader_and_isr())
    src = env.manager.log_dir_of(("t", 0))
    dst = next(d for d in env.dirs if d != src)
    now = int(env.clock.seconds() * 1000)
    due = now + 5000
    delayed = build_batch([Record(0, now, b"k", b"later", (("mafka.deliver.at", str(due).encode()),))])
    resp, _ = produce(env, delayed)
    assert resp.responses[0].partition_responses[0].error_code == 0
    produce(env, batch(3, value=b"plain"))
    assert alter(env, [(dst, "t", 0)]) == {("t", 0): ErrorCode.NONE}
    env.queue.drain()
    partition = env.rm.partitions[("t", 0)]
    assert env.manager.log_dir_of(("t", 0)) == dst and partition.log.directory.parent == dst
    assert partition.delays.index.directory.parent.parent == dst
    assert partition.delays.index.pending_records() == 1
    env.manager.delete_pending_logs()  # the old dir, and the index files in it, are gone
    from twisted.internet import defer

    delivery = DelayedDelivery(env.rm, run_in_thread=defer.maybeDeferred)
    env.clock.advance(6)
    delivery.tick()
    assert fetch_values(env) == [b"plain"] * 3 + [b"later"]


def test_a_failed_dirs_partitions_answer_storage_error_and_so_does_leader_and_isr(env):
    """Kafka's handleLogDirFailure: the dir's partitions are hosted no more; produce, fetch and a
    LeaderAndIsr for them answer KAFKA_STORAGE_ERROR (the last tells the controller)."""
    call(env, 4, 2, leader_and_isr(partitions=(0, 1, 2, 3)))
    homes = {p: env.manager.log_dir_of(("t", p)) for p in range(4)}
    failed = homes[0]
    gone = env.manager.handle_dir_failure(failed, OSError("EIO"))
    assert gone
    offline = env.manager.offline_partitions_in(failed)
    assert offline == sorted(("t", p) for p in range(4) if homes[p] == failed)
    left = [("t", p) for p in range(4) if homes[p] != failed]
    assert left, "the partitions spread over both dirs"
    assert env.rm.handle_log_dir_failure(offline) == offline
    assert env.rm.handle_log_dir_failure(offline) == []  # once
    resp, _ = produce(env, batch(1), partition=offline[0][1])
    assert resp.responses[0].partition_responses[0].error_code == ErrorCode.KAFKA_STORAGE_ERROR
    resp, _ = call(env, 1, 11, fetch_body(0, partition=offline[0][1]))
    assert resp.responses[0].partitions[0].error_code == ErrorCode.KAFKA_STORAGE_ERROR
    resp, _ = produce(env, batch(1), partition=left[0][1])
    assert resp.responses[0].partition_responses[0].error_code == ErrorCode.NONE
    body, _ = call(env, 4, 2, leader_and_isr(partitions=(0, 1, 2, 3), epoch=1))
    codes = {e.partition_index: e.error_code for e in body.partition_errors}
    assert {p: c for p, c in codes.items() if ("t", p) in offline} == {p: ErrorCode.KAFKA_STORAGE_ERROR
                                                                      for _, p in offline}
    assert all(codes[p] == ErrorCode.NONE for _, p in left)
