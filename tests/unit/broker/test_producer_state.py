"""Idempotent-producer state (mafka.broker.producer_state): Kafka 2.8's rules and snapshot format."""

from __future__ import annotations

import struct
import tempfile
from pathlib import Path

import pytest
from crc32c import crc32c
from hypothesis import example, given, settings
from hypothesis import strategies as st

from mafka.broker.producer_state import (
    INT32_MAX,
    BatchMetadata,
    CorruptSnapshotError,
    ProducerStateEntry,
    ProducerStateManager,
    Verdict,
    decode_snapshot,
    decrement_sequence,
    encode_snapshot,
    increment_sequence,
    list_snapshot_offsets,
    read_snapshot,
    snapshot_path,
)
from mafka.errors import ErrorCode
from tests.hypothesis_budget import examples

PID = 1000


class Producer:
    """Drives a manager like a leader would: check, then append at the next offset."""

    def __init__(self, m: ProducerStateManager, pid: int = PID, epoch: int = 0) -> None:
        self.m, self.pid, self.epoch = m, pid, epoch
        self.next_offset = m.map_end_offset

    def send(self, first_seq: int, count: int = 1, *, epoch: int | None = None, txn: bool = False, ts: int = 100) -> Verdict:
        epoch = self.epoch if epoch is None else epoch
        last_seq = increment_sequence(first_seq, count - 1)
        verdict = self.m.check_and_prepare(self.pid, epoch, first_seq, last_seq, txn)
        if verdict.should_append:
            first = self.next_offset
            self.m.record_append(self.pid, epoch, first_seq, last_seq, first, first + count - 1, ts, is_transactional=txn)
            self.next_offset += count
        return verdict


def appended(v: Verdict) -> bool:
    return v.error is ErrorCode.NONE and v.duplicate is None


# ============================================================ sequence arithmetic


def test_sequence_wraps_at_int32_max():
    assert increment_sequence(5, 3) == 8
    assert increment_sequence(INT32_MAX, 1) == 0
    assert increment_sequence(INT32_MAX - 1, 3) == 1
    assert decrement_sequence(1, 3) == INT32_MAX - 1
    assert decrement_sequence(0, 1) == INT32_MAX
    assert decrement_sequence(8, 3) == 5


# ============================================================ the rules


def test_unknown_producer_accepts_any_sequence_and_epoch():
    m = ProducerStateManager("t-0")
    v = m.check_and_prepare(PID, 7, 42, 44, False)
    assert v == Verdict() and v.should_append and not v.is_duplicate and v.base_offset is None
    assert m.last_entry(PID) is None  # checking changes nothing


def test_non_idempotent_batches_are_always_appended_and_a_missing_sequence_is_invalid():
    m = ProducerStateManager()
    assert m.check_and_prepare(-1, -1, -1, -1, False).should_append
    m.record_append(-1, -1, -1, -1, 0, 9, 5)
    assert len(m) == 0 and m.map_end_offset == 10
    assert m.check_and_prepare(PID, 0, -1, -1, False).error is ErrorCode.INVALID_RECORD


def test_in_order_batches_are_appended_and_gaps_are_out_of_order():
    m = ProducerStateManager()
    p = Producer(m)
    assert appended(p.send(0, 3))  # seqs 0..2, offsets 0..2
    assert appended(p.send(3, 2))  # 3..4
    gap = p.send(6)
    assert gap.error is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER and not gap.should_append
    assert "6 (incoming seq. number), 4 (current end sequence number)" in gap.message
    assert p.send(4).error is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # overlaps, not an exact cached range
    assert p.send(3, 1).error is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # same first seq, other last seq
    assert appended(p.send(5))
    assert m.last_entry(PID).last_seq == 5 and m.last_entry(PID).last_data_offset == 5


@pytest.mark.parametrize("k", range(5))
def test_duplicate_of_each_of_the_last_five_batches_returns_its_original_offsets(k):
    m = ProducerStateManager()
    p = Producer(m)
    p.next_offset = 100
    ranges = []
    for i in range(8):  # batches of 2 records: seqs 2i..2i+1 at offsets 100+2i..
        assert appended(p.send(2 * i, 2, ts=1000 + i))
        ranges.append((2 * i, 2 * i + 1, 100 + 2 * i, 101 + 2 * i, 1000 + i))
    first_seq, last_seq, first_off, last_off, ts = ranges[3 + k]  # batches 3..7 are the cached ones
    v = m.check_and_prepare(PID, 0, first_seq, last_seq, False)
    assert v.error is ErrorCode.NONE and v.is_duplicate and not v.should_append
    assert v.duplicate == BatchMetadata(first_seq, last_seq, first_off, last_off, ts)
    assert v.base_offset == first_off
    assert p.next_offset == 116  # nothing was appended


def test_the_sixth_newest_batch_is_no_longer_a_duplicate_but_out_of_order():
    m = ProducerStateManager()
    p = Producer(m)
    for seq in range(6):
        assert appended(p.send(seq))
    assert [b.first_seq for b in m.last_entry(PID).batches] == [1, 2, 3, 4, 5]
    assert p.send(0).error is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert p.send(1).is_duplicate


def test_wrap_around_from_int32_max_to_zero():
    m = ProducerStateManager()
    p = Producer(m)
    assert appended(p.send(INT32_MAX - 1, 1))  # unknown producer: any start
    assert appended(p.send(INT32_MAX, 1))
    assert p.send(INT32_MAX + 1 - INT32_MAX).error is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # 1, not 0
    assert appended(p.send(0, 1))
    # A batch spanning the wrap: INT32_MAX-1, INT32_MAX, 0 — its last sequence wraps too.
    m2 = ProducerStateManager()
    q = Producer(m2)
    assert appended(q.send(INT32_MAX - 1, 3))
    entry = m2.last_entry(PID)
    assert (entry.first_seq, entry.last_seq) == (INT32_MAX - 1, 0)
    assert q.send(INT32_MAX - 1, 3).base_offset == 0
    assert q.send(0, 1).error is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert appended(q.send(1, 1))


def test_epoch_bump_requires_sequence_zero_and_forgets_old_batches():
    m = ProducerStateManager()
    p = Producer(m)
    for seq in range(3):
        p.send(seq)
    bad = p.send(3, epoch=1)
    assert bad.error is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER and "new epoch" in bad.message
    assert appended(p.send(0, epoch=1))
    entry = m.last_entry(PID)
    assert entry.producer_epoch == 1 and [b.first_seq for b in entry.batches] == [0]
    # seq 0 again is a retry of the new epoch's batch (offset 3), not of the old epoch's (offset 0)
    assert p.send(0, epoch=1).base_offset == 3
    assert p.send(2, epoch=1).error is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # old epoch's seqs count for nothing
    assert appended(p.send(1, epoch=1))
    # an epoch jump by more than one is fine too, from sequence 0
    assert appended(p.send(0, epoch=5))


def test_stale_epoch_is_fenced_even_for_a_retry_of_a_cached_batch():
    m = ProducerStateManager()
    p = Producer(m)
    p.send(0)
    p.send(0, epoch=1)
    for seq in (0, 1, 7):
        v = p.send(seq, epoch=0)
        assert v.error is ErrorCode.INVALID_PRODUCER_EPOCH and not v.is_duplicate
    assert "smaller than the last seen epoch 1" in p.send(0, epoch=0).message


def test_known_producer_without_cached_batches_must_restart_at_zero():
    # A producer known only by epoch (e.g. its last record was a transaction marker).
    m = ProducerStateManager()
    data = encode_snapshot([ProducerStateEntry(PID, 3)])
    with tempfile.TemporaryDirectory() as d:
        Path(snapshot_path(d, 10)).write_bytes(data)
        assert m.load_latest_snapshot(d, 10) == 10
    assert m.last_entry(PID).is_empty and m.last_entry(PID).producer_epoch == 3
    assert m.check_and_prepare(PID, 3, 5, 5, False).error is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert m.check_and_prepare(PID, 3, 0, 0, False).should_append
    assert m.check_and_prepare(PID, 2, 0, 0, False).error is ErrorCode.INVALID_PRODUCER_EPOCH


def test_plain_batch_inside_an_open_transaction_is_invalid_txn_state():
    m = ProducerStateManager()
    p = Producer(m)
    p.next_offset = 50
    assert appended(p.send(0, 2, txn=True))
    assert m.last_entry(PID).current_txn_first_offset == 50
    assert p.send(2).error is ErrorCode.INVALID_TXN_STATE
    assert appended(p.send(2, txn=True))
    assert m.last_entry(PID).current_txn_first_offset == 50  # still the first offset of the txn


def test_record_append_unvalidated_like_replication():
    m = ProducerStateManager()
    m.record_append(PID, 2, 10, 12, 0, 2, 5)
    m.record_append(PID, 2, 20, 20, 3, 3, 6)  # a gap: followers do not check
    entry = m.last_entry(PID)
    assert [(b.first_seq, b.last_seq) for b in entry.batches] == [(10, 12), (20, 20)]
    assert entry.last_timestamp == 6 and m.map_end_offset == 4


def test_remove_expired_producers_spares_open_transactions():
    m = ProducerStateManager()
    m.record_append(1, 0, 0, 0, 0, 0, 1_000)
    m.record_append(2, 0, 0, 0, 1, 1, 1_000, is_transactional=True)
    m.record_append(3, 0, 0, 0, 2, 2, 9_000)
    assert m.remove_expired_producers(10_000, 5_000) == [1]
    assert sorted(m.producers) == [2, 3]


# ============================================================ truncation


def test_truncate_to_drops_batches_at_or_after_the_offset():
    m = ProducerStateManager()
    p = Producer(m)
    for seq in range(4):  # offsets 0..3
        p.send(seq)
    other = Producer(m, pid=7)
    other.next_offset = 4
    assert appended(other.send(0, 2, txn=True))  # offsets 4..5
    m.truncate_to(2)
    assert [b.last_offset for b in m.last_entry(PID).batches] == [0, 1]
    assert m.last_entry(7) is None  # lost every cached batch: forgotten
    assert m.map_end_offset == 2
    assert m.check_and_prepare(PID, 0, 1, 1, False).base_offset == 1  # still a duplicate
    assert m.check_and_prepare(PID, 0, 2, 2, False).should_append  # the truncated seq is next again
    assert m.check_and_prepare(PID, 0, 3, 3, False).error is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER
    assert m.check_and_prepare(7, 0, 9, 9, False).should_append  # unknown again


def test_truncate_to_closes_a_transaction_that_began_after_the_offset():
    m = ProducerStateManager()
    m.record_append(PID, 0, 0, 0, 0, 0, 1)
    m.record_append(PID, 0, 1, 1, 1, 1, 1, is_transactional=True)
    m.truncate_to(1)
    assert m.last_entry(PID).current_txn_first_offset is None


def test_truncate_head_keeps_the_newest_batch_and_the_producer():
    m = ProducerStateManager()
    p = Producer(m)
    for seq in range(5):  # offsets 0..4
        p.send(seq)
    m.truncate_head(3)
    assert [b.first_offset for b in m.last_entry(PID).batches] == [3, 4]
    assert p.send(3).base_offset == 3  # still cached
    assert p.send(2).error is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # dropped, below the log start
    m.truncate_head(100)
    assert [b.first_offset for b in m.last_entry(PID).batches] == [4]  # never emptied
    assert m.map_end_offset == 100
    assert p.send(4).is_duplicate
    p.next_offset = 100
    assert appended(p.send(5))


# ============================================================ snapshots


def test_snapshot_byte_layout():
    entry = ProducerStateEntry(0x0102030405060708, 7, coordinator_epoch=3, last_timestamp=1_700_000_000_000)
    entry.batches.append(BatchMetadata(10, 14, 95, 99, 1_700_000_000_000))
    entry.current_txn_first_offset = 95
    other = ProducerStateEntry(5, 0)
    data = encode_snapshot([entry, other])
    assert len(data) == 2 + 4 + 4 + 2 * 46
    version, crc, count = struct.unpack_from(">hIi", data)
    assert (version, count) == (1, 2)
    assert crc == crc32c(data[6:])  # CRC-32C of every byte after the crc field
    # entries sorted by producer id; the empty entry has last_sequence/last_offset -1, delta 0
    assert data[10:56] == struct.pack(">qhiqiqiq", 5, 0, -1, -1, 0, -1, -1, -1)
    assert data[56:] == bytes.fromhex(
        "0102030405060708"  # producer_id
        "0007"  # epoch
        "0000000e"  # last_sequence 14
        "0000000000000063"  # last_offset 99
        "00000004"  # offset_delta
        "0000018bcfe56800"  # timestamp
        "00000003"  # coordinator_epoch
        "000000000000005f"  # current_txn_first_offset 95
    )


def test_snapshot_round_trip_keeps_only_the_last_batch(tmp_path):
    m = ProducerStateManager()
    p = Producer(m)
    for seq in range(0, 9, 3):  # three batches of 3
        p.send(seq, 3, ts=seq)
    m.record_append(9, 4, 0, 0, 9, 9, 77, is_transactional=True)
    path = m.write_snapshot(tmp_path, m.map_end_offset, fsync=False)
    assert path == tmp_path / "00000000000000000010.snapshot"
    assert not (tmp_path / "00000000000000000010.snapshot.tmp").exists()
    loaded = {e.producer_id: e for e in read_snapshot(path)}
    assert list(loaded[PID].batches) == [BatchMetadata(6, 8, 6, 8, 6)]
    assert loaded[PID].producer_epoch == 0 and loaded[PID].last_timestamp == 6
    assert loaded[9].current_txn_first_offset == 9 and loaded[9].producer_epoch == 4
    assert list_snapshot_offsets(tmp_path) == [10]


def test_restart_keeps_dedup_of_the_last_batch_only(tmp_path):
    m = ProducerStateManager()
    p = Producer(m)
    for seq in range(0, 10, 2):  # five batches of 2 at offsets 0..9
        p.send(seq, 2)
    m.write_snapshot(tmp_path, 10, fsync=False)
    restarted = ProducerStateManager()
    assert restarted.load_latest_snapshot(tmp_path, 10) == 10 and restarted.map_end_offset == 10
    q = Producer(restarted)
    assert q.send(8, 2).base_offset == 8  # the newest batch is still recognised
    assert q.send(6, 2).error is ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER  # older ones are not, after a restart
    assert p.send(6, 2).base_offset == 6  # (the live manager still knew it)
    assert q.send(10, 1).should_append
    assert q.send(0, 1, epoch=1).should_append  # epoch bumps still work


def test_wrapped_last_batch_survives_a_snapshot():
    m = ProducerStateManager()
    m.record_append(PID, 0, INT32_MAX - 1, 1, 40, 43, 5)
    restored = decode_snapshot(encode_snapshot(m.producers.values()))[0]
    assert list(restored.batches) == [BatchMetadata(INT32_MAX - 1, 1, 40, 43, 5)]


def test_load_ignores_and_deletes_snapshots_above_the_log_end(tmp_path):
    m = ProducerStateManager()
    m.record_append(PID, 0, 0, 0, 0, 0, 1)
    m.write_snapshot(tmp_path, 1, fsync=False)
    m.record_append(PID, 0, 1, 1, 1, 1, 1)
    m.write_snapshot(tmp_path, 2, fsync=False)
    (tmp_path / "00000000000000000002.snapshot.tmp").write_bytes(b"junk")  # ignored: not a snapshot name
    fresh = ProducerStateManager()
    assert fresh.load_latest_snapshot(tmp_path, 1) == 1
    assert fresh.last_entry(PID).last_seq == 0
    assert list_snapshot_offsets(tmp_path) == [1]


def test_corrupt_snapshot_is_deleted_and_an_older_one_used(tmp_path, caplog):
    m = ProducerStateManager("t-3")
    m.record_append(PID, 0, 0, 0, 0, 0, 1)
    m.write_snapshot(tmp_path, 1, fsync=False)
    m.record_append(PID, 0, 1, 1, 1, 1, 1)
    newest = m.write_snapshot(tmp_path, 2, fsync=False)
    raw = bytearray(newest.read_bytes())
    raw[-1] ^= 0x01
    newest.write_bytes(bytes(raw))
    fresh = ProducerStateManager()
    assert fresh.load_latest_snapshot(tmp_path, 5) == 1
    assert "CRC is no longer valid" in caplog.text
    assert not newest.exists() and list_snapshot_offsets(tmp_path) == [1]


@pytest.mark.parametrize(
    "mutate, message",
    [
        (lambda b: b[:5], "schema validation"),
        (lambda b: b[:-3], "schema validation"),
        (lambda b: b[:6] + struct.pack(">i", -1) + b[10:], "schema validation"),
        (lambda b: struct.pack(">h", 2) + b[2:], "unknown file version 2"),
        (lambda b: b[:2] + bytes(4) + b[6:], "CRC is no longer valid"),
        (lambda b: b + b"\x00", "CRC is no longer valid"),
    ],
)
def test_decode_rejects_corrupt_snapshots(mutate, message):
    m = ProducerStateManager()
    m.record_append(PID, 0, 0, 4, 0, 4, 1)
    good = encode_snapshot(m.producers.values())
    assert decode_snapshot(good)[0].last_seq == 4
    with pytest.raises(CorruptSnapshotError, match=message):
        decode_snapshot(mutate(good))


def test_no_usable_snapshot_leaves_an_empty_state(tmp_path):
    m = ProducerStateManager()
    m.record_append(PID, 0, 0, 0, 0, 0, 1)
    assert m.load_latest_snapshot(tmp_path / "missing", 100) is None
    assert len(m) == 0 and m.map_end_offset == 0
    (tmp_path / "00000000000000000003.snapshot").write_bytes(b"\x00\x01")
    assert m.load_latest_snapshot(tmp_path, 100) is None
    assert list_snapshot_offsets(tmp_path) == []


def test_delete_snapshots_before(tmp_path):
    m = ProducerStateManager()
    for offset in (0, 5, 10, 15):
        m.write_snapshot(tmp_path, offset, fsync=False)
    assert m.delete_snapshots_before(tmp_path, 10) == [0, 5]
    assert list_snapshot_offsets(tmp_path) == [10, 15]
    assert snapshot_path(tmp_path, 15).name == "00000000000000000015.snapshot"


entries_strategy = st.lists(
    st.builds(
        lambda pid, epoch, seq, count, off, ts, ce, txn, empty: (pid, epoch, seq, count, off, ts, ce, txn, empty),
        st.integers(0, 2**63 - 1),
        st.integers(0, 2**15 - 1),
        st.integers(0, INT32_MAX),
        st.integers(1, 50),
        st.integers(0, 2**40),
        st.integers(-1, 2**45),
        st.integers(-1, 2**31 - 1),
        st.one_of(st.none(), st.integers(0, 2**40)),
        st.booleans(),
    ),
    max_size=8,
    unique_by=lambda t: t[0],
)


@settings(max_examples=examples(100), deadline=None)
@given(entries_strategy)
def test_snapshot_encode_decode_round_trip(raw):
    entries = []
    for pid, epoch, seq, count, off, ts, ce, txn, empty in raw:
        e = ProducerStateEntry(pid, epoch, coordinator_epoch=ce, last_timestamp=ts, current_txn_first_offset=txn)
        if not empty:
            e.batches.append(BatchMetadata(seq, increment_sequence(seq, count - 1), off, off + count - 1, ts))
        entries.append(e)
    decoded = decode_snapshot(encode_snapshot(entries))
    assert [e.producer_id for e in decoded] == sorted(e.producer_id for e in entries)
    for e in decoded:
        original = next(o for o in entries if o.producer_id == e.producer_id)
        assert list(e.batches) == list(original.batches)
        assert (e.producer_epoch, e.coordinator_epoch, e.last_timestamp, e.current_txn_first_offset) == (
            original.producer_epoch,
            original.coordinator_epoch,
            original.last_timestamp,
            original.current_txn_first_offset,
        )


# ============================================================ against a model


class Model:
    """Kafka's rules written out over the full batch history of the current epoch."""

    def __init__(self) -> None:
        self.state: dict[int, tuple[int, list[tuple[int, int, int, int]]]] = {}

    def verdict(self, pid: int, epoch: int, first: int, last: int):
        if pid not in self.state:
            return ("append",)
        cur, batches = self.state[pid]
        if epoch == cur:
            for fs, ls, fo, lo in batches[-5:]:
                if (fs, ls) == (first, last):
                    return ("dup", fo, lo)
        if epoch < cur:
            return ("error", ErrorCode.INVALID_PRODUCER_EPOCH)
        if epoch > cur:
            return ("append",) if first == 0 else ("error", ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)
        expected = 0 if batches[-1][1] == INT32_MAX else batches[-1][1] + 1
        return ("append",) if first == expected else ("error", ErrorCode.OUT_OF_ORDER_SEQUENCE_NUMBER)

    def append(self, pid, epoch, first, last, fo, lo):
        cur, batches = self.state.get(pid, (None, []))
        if cur != epoch:
            batches = []
        self.state[pid] = (epoch, batches + [(first, last, fo, lo)])

    def restart(self):
        self.state = {pid: (epoch, batches[-1:]) for pid, (epoch, batches) in self.state.items()}


op_strategy = st.tuples(
    st.sampled_from(["send"] * 12 + ["restart"]),
    st.sampled_from([1, 1, 1, 2]),  # pid
    st.sampled_from([0, 0, 0, 0, 0, 0, 1, 1, 2]),  # epoch: mostly steady, sometimes bumped or stale
    st.one_of(
        st.tuples(st.just("next"), st.just(0)),
        st.tuples(st.just("next"), st.just(0)),
        st.tuples(st.just("back"), st.integers(1, 7)),  # resend the k-th newest batch's range
        st.tuples(st.just("seq"), st.sampled_from([0, 1, 3, INT32_MAX - 2, INT32_MAX])),
    ),
    st.integers(1, 3),  # record count
)


def _normalise(v: Verdict):
    if v.duplicate is not None:
        return ("dup", v.duplicate.first_offset, v.duplicate.last_offset)
    if v.error is ErrorCode.NONE:
        return ("append",)
    return ("error", v.error)


@settings(max_examples=examples(300), deadline=None)
@given(st.lists(op_strategy, max_size=50))
@example([("send", 1, 0, ("seq", INT32_MAX), 1), ("send", 1, 0, ("next", 0), 2), ("send", 1, 0, ("back", 2), 1)])
def test_matches_model(ops):
    m, model = ProducerStateManager(), Model()
    history: dict[int, list[tuple[int, int]]] = {1: [], 2: []}
    next_offset = 0
    with tempfile.TemporaryDirectory() as d:
        for op in ops:
            if op[0] == "restart":
                m.write_snapshot(d, next_offset, fsync=False)
                m = ProducerStateManager()
                assert m.load_latest_snapshot(d, next_offset) == next_offset
                model.restart()
                continue
            _, pid, epoch, (how, arg), count = op
            if how == "next":
                entry = m.last_entry(pid)
                first = 0 if entry is None or entry.is_empty else increment_sequence(entry.last_seq, 1)
                last = increment_sequence(first, count - 1)
            elif how == "back" and len(history[pid]) >= arg:
                first, last = history[pid][-arg]
            else:
                first = arg if how == "seq" else 0
                last = increment_sequence(first, count - 1)
            got = _normalise(m.check_and_prepare(pid, epoch, first, last, False))
            assert got == model.verdict(pid, epoch, first, last), (op, model.state)
            if got == ("append",):
                n = (last - first) % (INT32_MAX + 1) + 1
                m.record_append(pid, epoch, first, last, next_offset, next_offset + n - 1, 0)
                model.append(pid, epoch, first, last, next_offset, next_offset + n - 1)
                history[pid].append((first, last))
                next_offset += n
        for pid, (epoch, batches) in model.state.items():
            entry = m.last_entry(pid)
            assert entry.producer_epoch == epoch
            assert [(b.first_seq, b.last_seq, b.first_offset, b.last_offset) for b in entry.batches] == batches[-5:]
