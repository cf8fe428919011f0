"""The log side of transactions (KIP-98): producer state, markers, the LSO, READ_COMMITTED reads.

Kafka 2.8's ``ProducerStateManager`` (ongoing / unreplicated transactions),
``Log`` (firstUnstableOffset, lastStableOffset, collectAbortedTransactions),
``LogSegment.recover`` (the transaction index rebuilt from producer state)
and WriteTxnMarkers' acks=−1 append, on real logs in tmp dirs.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from twisted.internet import defer, task

from mafka.broker.dispatcher import Dispatcher, collect_handlers
from mafka.broker.metadata_cache import MetadataCache
from mafka.broker.partition import READ_COMMITTED, LeaderState, Partition
from mafka.broker.producer_state import CompletedTxn, ProducerStateManager, TxnMetadata
from mafka.broker.replica_manager import ReplicaManager
from mafka.errors import (
    ErrorCode,
    InvalidProducerEpochError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    TransactionCoordinatorFencedError,
)
from mafka.log.config import LogConfig
from mafka.log.log import Log
from mafka.log.manager import LogManager
from mafka.log.txn_index import AbortedTxn
from mafka.wire.batch import BatchHeader
from mafka.wire.codec import decode_request, decode_response, encode_request
from mafka.wire.records import ControlRecordType, Record, build_batch, decode_batch, iter_records

A, B = 1000, 2000  # producer ids


def txn(n: int, seq: int, *, pid: int = A, epoch: int = 0, ts: int = 1000) -> bytes:
    return build_batch(
        [Record(i, ts + i, b"k", b"v") for i in range(n)],
        producer_id=pid, producer_epoch=epoch, base_sequence=seq, is_transactional=True,
    )


def plain(n: int = 1, ts: int = 1000) -> bytes:
    return build_batch([Record(i, ts + i, b"k", b"v") for i in range(n)])


def open_partition(directory, *, isr=(1,), replicas=(1,), leader=1, **log_kw) -> Partition:
    log = Log.open(directory, LogConfig(), lambda: 0, **log_kw)
    p = Partition("t", 0, 1, log)
    if leader is not None:
        state = LeaderState(leader, 0, tuple(isr), tuple(replicas), 0, 1)
        if leader == 1:
            p.make_leader(state)
        else:
            p.make_follower(state)
    return p


def index_entries(p: Partition) -> list[AbortedTxn]:
    return [t for seg in p.log.segments for t in seg.txn_index.all_aborted_txns()]


# ============================================================ producer state


def test_transactions_open_complete_and_stay_unstable_until_the_hw_passes_the_marker():
    m = ProducerStateManager("t-0")
    m.record_append(A, 0, 0, 1, 0, 1, 10, is_transactional=True)
    m.record_append(B, 0, 0, 0, 2, 2, 10, is_transactional=True)
    assert m.ongoing_txns == [TxnMetadata(A, 0), TxnMetadata(B, 2)]
    assert m.first_undecided_offset == m.first_unstable_offset == 0
    assert m.check_end_txn_marker(A, 0, 0).should_append
    done = m.record_end_txn_marker(A, 0, 3, 3, 20, is_abort=True)
    assert done == CompletedTxn(A, 0, 3, True)
    assert m.last_stable_offset(done) == 2  # B's transaction is still open
    m.complete_txn(done)
    assert m.first_undecided_offset == 2
    assert m.first_unstable_offset == 0  # A's marker is not replicated yet
    m.on_high_watermark_updated(3)
    assert m.first_unstable_offset == 0
    m.on_high_watermark_updated(4)
    assert m.first_unstable_offset == 2
    entry = m.last_entry(A)
    assert (entry.current_txn_first_offset, entry.coordinator_epoch, entry.last_timestamp) == (None, 3, 20)
    done = m.record_end_txn_marker(B, 0, 3, 4, 20, is_abort=False)
    assert m.last_stable_offset(done) == 5  # no other open transaction: past the marker
    m.complete_txn(done)
    m.on_high_watermark_updated(5)
    assert m.first_unstable_offset is None and m.map_end_offset == 5


def test_marker_fencing_and_markers_without_a_transaction():
    m = ProducerStateManager("t-0")
    assert m.check_end_txn_marker(A, 0, 0).should_append  # unknown producer
    m.record_append(A, 2, 0, 0, 0, 0, 10, is_transactional=True)
    assert m.record_end_txn_marker(A, 2, 5, 1, 11, is_abort=False) == CompletedTxn(A, 0, 1, False)
    assert m.check_end_txn_marker(A, 1, 5).error is ErrorCode.INVALID_PRODUCER_EPOCH
    assert m.check_end_txn_marker(A, 2, 4).error is ErrorCode.TRANSACTION_COORDINATOR_FENCED
    assert m.check_end_txn_marker(A, 3, 5).should_append
    # An ABORT with nothing open (the coordinator aborting an empty transaction) is recorded, completes nothing.
    assert m.record_end_txn_marker(A, 3, 6, 2, 12, is_abort=True) is None
    entry = m.last_entry(A)
    assert (entry.producer_epoch, entry.coordinator_epoch, entry.is_empty) == (3, 6, True)  # new epoch: batches forgotten
    assert m.record_end_txn_marker(B, 0, 0, 3, 12, is_abort=True) is None  # an unknown producer is created
    assert m.last_entry(B) is not None and m.map_end_offset == 4


def test_truncation_reopens_a_transaction_whose_marker_was_cut_off():
    m = ProducerStateManager("t-0")
    m.record_append(A, 0, 0, 1, 0, 1, 10, is_transactional=True)
    m.complete_txn(m.record_end_txn_marker(A, 0, 0, 2, 11, is_abort=False))
    m.record_append(B, 0, 0, 0, 3, 3, 10, is_transactional=True)
    m.truncate_to(2)
    assert m.ongoing_txns == [TxnMetadata(A, 0)] and m.unreplicated_txns == []
    assert m.last_entry(A).current_txn_first_offset == 0
    assert m.last_entry(B) is None
    m.truncate_to(0)
    assert m.ongoing_txns == [] and m.last_entry(A) is None


def test_truncate_head_forgets_unreplicated_below_the_log_start_and_clear_forgets_all():
    m = ProducerStateManager("t-0")
    m.record_append(A, 0, 0, 0, 0, 0, 10, is_transactional=True)
    m.complete_txn(m.record_end_txn_marker(A, 0, 0, 1, 11, is_abort=True))
    m.record_append(B, 0, 0, 0, 2, 2, 10, is_transactional=True)
    m.truncate_head(2)
    assert m.unreplicated_txns == [] and m.first_unstable_offset == 2
    m.clear(10)
    assert m.first_unstable_offset is None and m.map_end_offset == 10


def test_open_transactions_survive_a_snapshot(tmp_path):
    m = ProducerStateManager("t-0")
    m.record_append(B, 0, 0, 0, 5, 5, 10, is_transactional=True)
    m.record_append(A, 0, 0, 0, 6, 6, 10, is_transactional=True)
    m.write_snapshot(tmp_path, 7)
    ProducerStateManager("t-0").write_snapshot(tmp_path, 3)
    again = ProducerStateManager("t-0")
    assert again.load_latest_snapshot(tmp_path, 7) == 7
    assert again.ongoing_txns == [TxnMetadata(B, 5), TxnMetadata(A, 6)]
    assert again.load_latest_snapshot(tmp_path, 7, at_most=6) == 3  # kept, not used
    assert again.ongoing_txns == [] and sorted(int(p.stem) for p in tmp_path.glob("*.snapshot")) == [3, 7]


# ============================================================ partition: leader


def test_lso_follows_open_transactions_and_replication(tmp_path):
    p = open_partition(tmp_path / "t-0", isr=(1, 2), replicas=(1, 2))
    p.append_as_leader(plain())  # 0
    p.append_as_leader(txn(2, 0))  # 1..2
    p.append_as_leader(plain())  # 3
    p.update_follower(2, 4)
    assert (p.high_watermark, p.last_stable_offset) == (4, 1)
    info = p.append_txn_marker_as_leader(A, 0, 0, True)
    assert info.first_offset == info.last_offset == 4
    assert p.last_stable_offset == 1  # the marker is above the HW
    p.update_follower(2, 5)
    assert (p.high_watermark, p.last_stable_offset) == (5, 5)
    assert index_entries(p) == []  # commits are not indexed
    p.log.close()


def test_the_marker_batch_is_kafkas_end_transaction_marker(tmp_path):
    p = open_partition(tmp_path / "t-0")
    p.append_as_leader(txn(1, 0, epoch=3))
    p.append_txn_marker_as_leader(A, 3, 7, False, now_ms=12345)
    data = p.log.read(1, 1 << 20).read()
    h = BatchHeader(data)
    assert (h.is_control, h.is_transactional, h.producer_id, h.producer_epoch, h.base_sequence) == (True, True, A, 3, -1)
    assert (h.magic, h.partition_leader_epoch, h.record_count, h.max_timestamp) == (2, 0, 1, 12345)
    (marker,) = decode_batch(data).records
    assert (marker.type, marker.version, marker.coordinator_epoch) == (ControlRecordType.ABORT, 0, 7)
    p.log.close()


def test_aborted_transactions_in_read_committed_reads(tmp_path):
    p = open_partition(tmp_path / "t-0")
    p.append_as_leader(txn(2, 0, pid=A))  # 0..1
    p.append_as_leader(txn(2, 0, pid=B))  # 2..3
    p.append_txn_marker_as_leader(A, 0, 0, False)  # 4: abort A while B is open
    assert index_entries(p) == [AbortedTxn(A, 0, 4, 2)]  # the LSO after it: B's first offset
    assert p.last_stable_offset == 2
    p.append_txn_marker_as_leader(B, 0, 0, True)  # 5
    p.append_as_leader(plain())  # 6
    assert (p.high_watermark, p.last_stable_offset) == (7, 7)
    committed = p.read(0, 1 << 20, isolation_level=READ_COMMITTED)
    assert committed.aborted_transactions == [(A, 0)]
    assert committed.last_stable_offset == 7
    assert [r.offset for r in iter_records(committed.data.read())] == [0, 1, 2, 3, 6]
    uncommitted = p.read(0, 1 << 20)
    assert uncommitted.aborted_transactions is None and uncommitted.last_stable_offset == 7
    assert p.read(5, 1 << 20, isolation_level=READ_COMMITTED).aborted_transactions == []  # A ended before 5
    nothing = p.read(7, 1 << 20, isolation_level=READ_COMMITTED)
    assert nothing.data.region is None and nothing.aborted_transactions == []
    follower = p.read(0, 1 << 20, replica_id=2, isolation_level=READ_COMMITTED)
    assert follower.aborted_transactions is None  # followers read to the log end, uncommitted
    p.log.close()


def test_read_committed_stops_at_the_lso(tmp_path):
    p = open_partition(tmp_path / "t-0")
    p.append_as_leader(plain())  # 0
    p.append_as_leader(txn(1, 0))  # 1, open
    p.append_as_leader(plain())  # 2
    assert (p.high_watermark, p.last_stable_offset) == (3, 1)
    got = p.read(0, 1 << 20, isolation_level=READ_COMMITTED)
    assert [r.offset for r in iter_records(got.data.read())] == [0]
    assert p.read(1, 1 << 20, isolation_level=READ_COMMITTED).data.region is None
    assert p.bytes_available(1, isolation_level=READ_COMMITTED) == 0
    assert p.bytes_available(1) > 0
    assert p.fetch_offset_for_timestamp(-1, isolation_level=READ_COMMITTED).offset == 1
    assert p.fetch_offset_for_timestamp(-1).offset == 3
    assert p.fetch_offset_for_timestamp(1001, isolation_level=READ_COMMITTED) is None  # offset 1 is unstable
    assert p.fetch_offset_for_timestamp(1000, isolation_level=READ_COMMITTED).offset == 0
    p.log.close()


def test_marker_errors(tmp_path):
    p = open_partition(tmp_path / "t-0", isr=(1,), replicas=(1, 2))
    p.append_as_leader(txn(1, 0, epoch=2))
    with pytest.raises(NotEnoughReplicasError):
        p.append_txn_marker_as_leader(A, 2, 0, True, min_isr=2)
    p.append_txn_marker_as_leader(A, 2, 5, True)
    with pytest.raises(InvalidProducerEpochError):
        p.append_txn_marker_as_leader(A, 1, 5, True)
    with pytest.raises(TransactionCoordinatorFencedError):
        p.append_txn_marker_as_leader(A, 2, 4, True)
    assert p.log.next_offset == 2  # nothing written by the refused ones
    p.make_follower(LeaderState(2, 1, (2,), (1, 2), 0, 1))
    with pytest.raises(NotLeaderOrFollowerError):
        p.append_txn_marker_as_leader(A, 2, 5, True)
    p.log.close()


# ============================================================ partition: follower, recovery, truncation


def leader_log_bytes(p: Partition) -> bytes:
    return p.log.read(p.log.log_start_offset, 1 << 30).read()


def write_transactions(p: Partition) -> None:
    """A: 0..1 aborted at 4 while B (2..3) is open; B committed at 5; A opens again at 6..7."""
    p.append_as_leader(txn(2, 0, pid=A))
    p.append_as_leader(txn(2, 0, pid=B))
    p.append_txn_marker_as_leader(A, 0, 0, False)
    p.append_txn_marker_as_leader(B, 0, 0, True)
    p.append_as_leader(txn(2, 2, pid=A))


def test_a_follower_applies_the_markers(tmp_path):
    leader = open_partition(tmp_path / "l" / "t-0")
    write_transactions(leader)
    follower = open_partition(tmp_path / "f" / "t-0", leader=2, isr=(2, 1), replicas=(2, 1))
    follower.append_as_follower(leader_log_bytes(leader))
    assert index_entries(follower) == index_entries(leader) == [AbortedTxn(A, 0, 4, 2)]
    assert follower.producers.ongoing_txns == [TxnMetadata(A, 6)]
    follower.update_follower_high_watermark(8)
    assert follower.last_stable_offset == 6
    assert follower.read(0, 1 << 20, isolation_level=READ_COMMITTED, fetch_only_from_leader=False).aborted_transactions == [(A, 0)]
    leader.log.close()
    follower.log.close()


def test_a_follower_append_indexes_after_every_batch_as_kafka(tmp_path):
    # One fetch holding A's abort and, later, B's first batch: Kafka's Log.append updates the
    # producer state for every batch before it computes the aborted transaction's LSO, so the
    # follower's hint is B's first offset where the leader's was just past the marker.
    leader = open_partition(tmp_path / "l" / "t-0")
    leader.append_as_leader(txn(1, 0, pid=A))  # 0
    leader.append_txn_marker_as_leader(A, 0, 0, False)  # 1
    leader.append_as_leader(plain())  # 2
    leader.append_as_leader(txn(1, 0, pid=B))  # 3
    assert index_entries(leader) == [AbortedTxn(A, 0, 1, 2)]
    follower = open_partition(tmp_path / "f" / "t-0", leader=2, isr=(2, 1), replicas=(2, 1))
    follower.append_as_follower(leader_log_bytes(leader))
    assert index_entries(follower) == [AbortedTxn(A, 0, 1, 3)]
    leader.log.close()
    follower.log.close()


def test_a_crash_rebuilds_open_transactions_and_the_txn_index(tmp_path):
    p = open_partition(tmp_path / "t-0")
    write_transactions(p)
    before = index_entries(p)
    p.log.close()  # a crash: no producer snapshot, no clean shutdown
    (tmp_path / "t-0" / "00000000000000000000.txnindex").write_bytes(b"garbage")
    again = open_partition(tmp_path / "t-0", had_clean_shutdown=False)
    assert again.log.txn_index_rebuild_offset is None
    assert index_entries(again) == before == [AbortedTxn(A, 0, 4, 2)]
    assert again.producers.ongoing_txns == [TxnMetadata(A, 6)]
    assert again.last_stable_offset == 6
    again.log.close()


@pytest.mark.parametrize("recovery_point, lose_indexes", [(0, True), (8, False)])
def test_recovery_replays_from_below_a_later_snapshot(tmp_path, recovery_point, lose_indexes):
    config = LogConfig(segment_bytes=150)  # two batches per segment
    log = Log.open(tmp_path / "t-0", config, lambda: 0)
    p = Partition("t", 0, 1, log)
    p.make_leader(LeaderState(1, 0, (1,), (1,), 0, 1))
    write_transactions(p)
    p.snapshot_producer_state()  # a clean shutdown's snapshot at 8 ...
    p.append_txn_marker_as_leader(A, 0, 0, False)  # ... then A aborts again at 8, and a crash
    expected = index_entries(p)
    assert expected == [AbortedTxn(A, 0, 4, 2), AbortedTxn(A, 6, 8, 9)] and len(log.segments) > 2
    log.close()
    if lose_indexes:  # every segment is recovered: whatever the files held goes
        for path in (tmp_path / "t-0").glob("*.txnindex"):
            path.unlink()
    log = Log.open(tmp_path / "t-0", config, lambda: 0, had_clean_shutdown=False, recovery_point=recovery_point)
    assert log.txn_index_rebuild_offset == (0 if recovery_point == 0 else log.segments[-1].base_offset)
    again = Partition("t", 0, 1, log, high_watermark=9)
    assert index_entries(again) == expected
    assert again.producers.ongoing_txns == [] and again.last_stable_offset == 9
    log.close()


def test_a_clean_restart_keeps_open_transactions_from_the_snapshot(tmp_path):
    p = open_partition(tmp_path / "t-0")
    write_transactions(p)
    p.snapshot_producer_state()
    p.log.close()
    again = open_partition(tmp_path / "t-0")
    assert again.producers.ongoing_txns == [TxnMetadata(A, 6)]
    assert index_entries(again) == [AbortedTxn(A, 0, 4, 2)]
    again.log.close()


def test_truncation_reopens_the_transaction_and_cuts_the_index(tmp_path):
    p = open_partition(tmp_path / "t-0", leader=2, isr=(2, 1), replicas=(2, 1))
    leader = open_partition(tmp_path / "l" / "t-0")
    write_transactions(leader)
    p.append_as_follower(leader_log_bytes(leader))
    p.update_follower_high_watermark(4)
    p.producers.write_snapshot(p.log.directory, 8)
    assert p.last_stable_offset == 0  # A's abort at 4 is not below the HW yet
    p.log.truncate_to(4)  # A's abort marker and everything after it are gone
    p.truncated()
    assert index_entries(p) == []
    assert p.producers.ongoing_txns == [TxnMetadata(A, 0), TxnMetadata(B, 2)]
    assert p.last_stable_offset == 0
    assert list(p.log.directory.glob("*.snapshot")) == []  # it described the truncated log
    leader.log.close()
    p.log.close()


# ============================================================ replica manager and handlers


def leader_and_isr(*, isr=(1,), replicas=(1,)):
    body = {
        "controller_id": 1, "controller_epoch": 1, "broker_epoch": -1,
        "topic_states": [{"topic_name": "t", "partition_states": [
            {"partition_index": 0, "controller_epoch": 1, "leader": 1, "leader_epoch": 0,
             "isr": list(isr), "zk_version": 0, "replicas": list(replicas), "is_new": True},
        ]}],
        "live_leaders": [],
    }
    return decode_request(encode_request(4, 2, 1, "controller", body)[4:]).body


@pytest.fixture
def env(tmp_path):
    clock = task.Clock()
    manager = LogManager([tmp_path / "d1"], LogConfig(), lambda: 1_000_000, broker_id=1, cluster_id="c")
    manager.startup()
    min_isr = {"t": 1}
    rm = ReplicaManager(1, manager, clock, min_insync_replicas=lambda topic: min_isr.get(topic, 1))
    broker = SimpleNamespace(
        replica_manager=rm, metadata_cache=MetadataCache(1), broker_epoch=100,
        max_message_bytes=lambda topic: 1048588, auto_create_topics=False, auto_create_topic=lambda name: None,
        on_metadata_update=lambda deleted: None, run_blocking=lambda fn, *args: defer.maybeDeferred(fn, *args),
    )
    yield SimpleNamespace(clock=clock, rm=rm, dispatcher=Dispatcher(collect_handlers(broker)), min_isr=min_isr)
    manager.shutdown()


def dispatch(env, api_key, version, body):
    request = decode_request(encode_request(api_key, version, 5, "c", body)[4:])
    got = []
    result = env.dispatcher.dispatch(request, SimpleNamespace(listener="PLAINTEXT", peer="x", close=lambda: None))
    if isinstance(result, defer.Deferred):
        result.addCallback(got.append)
    else:
        got.append(result)
    return got


def decoded(api_key, version, got):
    data = b"".join(c if isinstance(c, bytes) else c.read() for c in got[0])
    return decode_response(api_key, version, data[4:])[1]


def append(env, records):
    out = []
    env.rm.append_records([("t", 0, records)], acks=1, timeout_ms=1000, produce_version=8,
                          max_message_bytes=lambda t: 1 << 20).addCallback(out.append)
    assert out[0][("t", 0)].error == ErrorCode.NONE


def markers(env, *entries, timeout_ms=1000):
    out = []
    env.rm.append_txn_markers(list(entries), timeout_ms).addCallback(out.append)
    return out


def test_append_txn_markers_waits_for_the_isr_like_acks_all(env):
    env.rm.become_leader_or_follower(leader_and_isr(isr=(1, 2), replicas=(1, 2)))
    append(env, txn(2, 0))
    got = markers(env, ("t", 0, A, 0, 0, True), ("t", 9, A, 0, 0, True))
    assert got == []
    partition = env.rm.partitions[("t", 0)]
    assert partition.log.next_offset == 3
    env.rm.fetch(2, 0, 1, 1 << 20, [SimpleNamespace(topic="t", partition=0, fetch_offset=3, max_bytes=1 << 20,
                                                    current_leader_epoch=0, log_start_offset=0)])
    assert got == [{("t", 0): ErrorCode.NONE, ("t", 9): ErrorCode.UNKNOWN_TOPIC_OR_PARTITION}]
    assert partition.last_stable_offset == 3


def test_append_txn_markers_errors(env):
    env.rm.become_leader_or_follower(leader_and_isr(isr=(1, 2), replicas=(1, 2)))
    append(env, txn(1, 0, epoch=1))
    env.min_isr["t"] = 3
    assert markers(env, ("t", 0, A, 1, 0, False)) == [{("t", 0): ErrorCode.NOT_ENOUGH_REPLICAS}]
    env.min_isr["t"] = 1
    assert markers(env, ("t", 0, A, 0, 0, False)) == [{("t", 0): ErrorCode.INVALID_PRODUCER_EPOCH}]
    got = markers(env, ("t", 0, A, 1, 4, False), timeout_ms=500)
    env.clock.advance(0.6)
    assert got == [{("t", 0): ErrorCode.REQUEST_TIMED_OUT}]
    assert markers(env, ("t", 0, A, 1, 3, False)) == [{("t", 0): ErrorCode.TRANSACTION_COORDINATOR_FENCED}]


def fetch_body(offset, isolation_level, *, max_wait_ms=0):
    return {
        "replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 1 << 20,
        "isolation_level": isolation_level,
        "topics": [{"topic": "t", "partitions": [
            {"partition": 0, "current_leader_epoch": -1, "fetch_offset": offset, "partition_max_bytes": 1 << 20},
        ]}],
    }


def test_fetch_answers_the_lso_and_aborted_transactions(env):
    env.rm.become_leader_or_follower(leader_and_isr())
    append(env, txn(2, 0, pid=A))
    append(env, txn(1, 0, pid=B))  # 2, stays open
    markers(env, ("t", 0, A, 0, 0, False))  # 3
    for version in (4, 11):
        part = decoded(1, version, dispatch(env, 1, version, fetch_body(0, 1))).responses[0].partitions[0]
        assert (part.high_watermark, part.last_stable_offset) == (4, 2)
        assert [(a.producer_id, a.first_offset) for a in part.aborted_transactions] == [(A, 0)]
        assert [r.offset for r in iter_records(bytes(part.records))] == [0, 1]
        part = decoded(1, version, dispatch(env, 1, version, fetch_body(0, 0))).responses[0].partitions[0]
        assert part.last_stable_offset == 2 and part.aborted_transactions is None
        assert [r.offset for r in iter_records(bytes(part.records))] == [0, 1, 2]


def test_a_read_committed_long_poll_waits_for_the_lso(env):
    env.rm.become_leader_or_follower(leader_and_isr())
    append(env, txn(1, 0))  # 0, open
    got = dispatch(env, 1, 11, fetch_body(0, 1, max_wait_ms=500))
    assert got == []
    append(env, plain())  # 1: above the LSO, not woken
    assert got == []
    markers(env, ("t", 0, A, 0, 0, True))  # 2: commit; the HW passes it at once (ISR of one)
    assert len(got) == 1
    part = decoded(1, 11, got).responses[0].partitions[0]
    assert part.last_stable_offset == 3 and list(part.aborted_transactions) == []
    assert [r.offset for r in iter_records(bytes(part.records))] == [0, 1]


def test_list_offsets_latest_is_the_lso_for_read_committed(env):
    env.rm.become_leader_or_follower(leader_and_isr())
    append(env, plain())
    append(env, txn(1, 0))
    got = {}
    for isolation in (0, 1):
        body = {"replica_id": -1, "isolation_level": isolation,
                "topics": [{"name": "t", "partitions": [{"partition_index": 0, "timestamp": -1}]}]}
        got[isolation] = decoded(2, 2, dispatch(env, 2, 2, body)).topics[0].partitions[0].offset
    assert got == {0: 2, 1: 1}


def test_a_coordinator_batch_skips_sequence_checks_but_not_fencing():
    """Kafka's AppendOrigin.Coordinator: repeated sequence 0 is neither a duplicate nor out of order."""
    from mafka.broker.producer_state import ProducerStateManager

    state = ProducerStateManager("__consumer_offsets-3")
    state.record_append(9, 2, 0, 1, 0, 1, 100, is_transactional=True)
    assert state.check_and_prepare(9, 2, 0, 1, True, check_sequence=False).should_append
    assert state.check_and_prepare(9, 2, 0, 4, True, check_sequence=False).should_append
    assert state.check_and_prepare(9, 2, 0, 1, True).is_duplicate
    assert state.check_and_prepare(9, 1, 0, 1, True, check_sequence=False).error == ErrorCode.INVALID_PRODUCER_EPOCH
    assert state.check_and_prepare(9, 2, 0, 1, False, check_sequence=False).error == ErrorCode.INVALID_TXN_STATE


def test_the_shutdown_snapshot_is_skipped_only_where_a_load_needs_none(tmp_path):
    idle = open_partition(tmp_path / "idle-0")
    assert idle.snapshot_producer_state() is False  # empty log, no producer: nothing to load
    assert list(idle.log.directory.glob("*.snapshot")) == []
    idle.log.close()
    p = open_partition(tmp_path / "t-0")
    write_transactions(p)
    assert p.snapshot_producer_state() is True
    end = p.log.next_offset
    assert [f.name for f in p.log.directory.glob("*.snapshot")] == [f"{end:020d}.snapshot"]
    assert p.snapshot_producer_state() is False  # already at the log end
    p.append_txn_marker_as_leader(A, 0, 0, False)
    assert p.snapshot_producer_state() is True  # the log grew: a new one at the new end
    p.log.close()
    again = open_partition(tmp_path / "t-0")
    assert again.producers.ongoing_txns == [] and again.last_stable_offset == again.log.next_offset
    again.log.close()
