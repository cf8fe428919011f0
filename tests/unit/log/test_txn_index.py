"""The ``.txnindex`` (Kafka 2.8's TransactionIndex) and how segments and logs carry it."""

from __future__ import annotations

import pytest

from mafka.log.cleaner import clean
from mafka.log.config import LogConfig
from mafka.log.index import CorruptIndexError
from mafka.log.log import Log
from mafka.log.segment import LogSegment
from mafka.log.txn_index import ABORTED_TXN_SIZE, AbortedTxn, TransactionIndex
from mafka.wire.records import ControlRecordType, Record, build_batch, build_control_batch


def entry_bytes(version: int, pid: int, first: int, last: int, lso: int) -> bytes:
    """One entry built field by field from the 34-byte layout (big-endian)."""
    return (
        version.to_bytes(2, "big", signed=True)
        + pid.to_bytes(8, "big", signed=True)
        + first.to_bytes(8, "big", signed=True)
        + last.to_bytes(8, "big", signed=True)
        + lso.to_bytes(8, "big", signed=True)
    )


# ============================================================ the file


def test_entries_are_34_bytes_in_kafkas_layout_and_the_file_is_created_lazily(tmp_path):
    path = tmp_path / "00000000000000000000.txnindex"
    index = TransactionIndex(path, 0)
    assert ABORTED_TXN_SIZE == 34
    index.reset()
    assert not path.exists()  # no file until the first entry, as in Kafka
    index.append(AbortedTxn(7, 0, 10, 11))
    index.append(AbortedTxn(-2, 12, 20, 15))
    index.close()
    assert path.read_bytes() == entry_bytes(0, 7, 0, 10, 11) + entry_bytes(0, -2, 12, 20, 15)


def test_append_needs_increasing_last_offsets(tmp_path):
    index = TransactionIndex(tmp_path / "x.txnindex", 0)
    index.append(AbortedTxn(1, 0, 5, 6))
    with pytest.raises(ValueError):
        index.append(AbortedTxn(2, 1, 5, 6))
    with pytest.raises(ValueError):
        index.append(AbortedTxn(2, 1, 4, 6))
    assert len(index) == 1
    index.close()


def test_reload_and_truncate(tmp_path):
    path = tmp_path / "00000000000000000100.txnindex"
    path.write_bytes(b"".join(entry_bytes(0, pid, 100 + pid, 110 + 10 * pid, 120 + 10 * pid) for pid in range(4)))
    index = TransactionIndex(path, 100)
    index.load()
    assert index.all_aborted_txns() == [AbortedTxn(p, 100 + p, 110 + 10 * p, 120 + 10 * p) for p in range(4)]
    index.truncate_to(130)  # drops last offsets 130 and 140
    assert [t.last_offset for t in index.all_aborted_txns()] == [110, 120]
    assert path.stat().st_size == 2 * 34
    index.append(AbortedTxn(9, 125, 125, 126))  # appends continue after the kept entries
    index.close()
    again = TransactionIndex(path, 100)
    again.load()
    assert [t.last_offset for t in again.all_aborted_txns()] == [110, 120, 125]
    again.truncate_to(500)  # nothing at or past it
    assert len(again) == 3
    again.truncate_to(0)
    assert len(again) == 0 and path.stat().st_size == 0
    again.close()


@pytest.mark.parametrize(
    "data",
    [
        entry_bytes(0, 1, 100, 110, 111)[:-1],  # torn
        entry_bytes(1, 1, 100, 110, 111),  # unknown version
        entry_bytes(0, 1, 90, 99, 111),  # last offset below the segment's base (Kafka's sanityCheck)
        entry_bytes(0, 1, 100, 110, 111) + entry_bytes(0, 2, 100, 110, 111),  # not increasing
    ],
)
def test_sanity_check(tmp_path, data):
    path = tmp_path / "00000000000000000100.txnindex"
    path.write_bytes(data)
    index = TransactionIndex(path, 100)
    with pytest.raises(CorruptIndexError):
        index.load()
    assert len(index) == 0
    index.reset()
    assert path.stat().st_size == 0
    index.close()


def test_collect_aborted_txns_overlap_and_completeness(tmp_path):
    index = TransactionIndex(tmp_path / "x.txnindex", 0)
    index.append(AbortedTxn(1, 0, 10, 5))  # another transaction was open from 5
    index.append(AbortedTxn(2, 5, 20, 21))
    index.append(AbortedTxn(3, 22, 30, 31))
    # [11, 15): pid 1 ended before it; pid 2 overlaps and its LSO 21 ≥ 15 ends the search.
    found, complete = index.collect_aborted_txns(11, 15)
    assert found == [AbortedTxn(2, 5, 20, 21)] and complete
    # [0, 100): all three overlap, none says the search is complete.
    found, complete = index.collect_aborted_txns(0, 100)
    assert [t.producer_id for t in found] == [1, 2, 3] and not complete
    # [0, 5): only pid 1 starts below 5; its LSO 5 reaches the bound.
    found, complete = index.collect_aborted_txns(0, 5)
    assert [t.producer_id for t in found] == [1] and complete
    assert AbortedTxn(2, 5, 20, 21).as_aborted_transaction == (2, 5)
    index.close()


# ============================================================ with the segment


def batch(offset: int, n: int = 1) -> bytes:
    return build_batch([Record(offset + i, 1000, b"k", b"v" * 50) for i in range(n)], base_offset=offset)


def test_segment_renames_flushes_and_deletes_its_txnindex(tmp_path):
    seg = LogSegment.create(tmp_path, 0, LogConfig(), 0)
    seg.txn_index.append(AbortedTxn(1, 0, 3, 4))
    seg.flush()
    seg.change_suffix("", ".deleted")
    assert (tmp_path / "00000000000000000000.txnindex.deleted").exists()
    assert not (tmp_path / "00000000000000000000.txnindex").exists()
    seg.delete_files()
    assert list(tmp_path.iterdir()) == []


def test_segment_without_aborts_has_no_txnindex_file_and_renames_fine(tmp_path):
    seg = LogSegment.create(tmp_path, 5, LogConfig(), 0, suffix=".cleaned")
    seg.change_suffix(".cleaned", ".swap")
    seg.change_suffix(".swap", "")
    assert seg.txn_index.path.name == "00000000000000000005.txnindex"
    assert not seg.txn_index.path.exists()
    seg.delete_files()


def test_segment_open_marks_a_corrupt_txnindex_stale_and_recover_resets_it(tmp_path):
    log = Log.open(tmp_path / "t-0", LogConfig(), lambda: 0)
    log.append_as_follower(batch(0, 3))
    assert log.append_aborted_txn(AbortedTxn(1, 0, 2, 3))
    log.close()
    path = tmp_path / "t-0" / "00000000000000000000.txnindex"
    assert path.read_bytes() == entry_bytes(0, 1, 0, 2, 3)
    reopened = Log.open(tmp_path / "t-0", LogConfig(), lambda: 0)
    assert reopened.txn_index_rebuild_offset is None
    assert reopened.segments[0].txn_index.all_aborted_txns() == [AbortedTxn(1, 0, 2, 3)]
    reopened.close()
    path.write_bytes(b"\x00" * 33)
    corrupt = Log.open(tmp_path / "t-0", LogConfig(), lambda: 0)
    assert corrupt.txn_index_rebuild_offset == 0 and len(corrupt.segments[0].txn_index) == 0
    corrupt.reset_txn_indexes_from(0)
    assert corrupt.txn_index_rebuild_offset is None
    corrupt.close()
    unclean = Log.open(tmp_path / "t-0", LogConfig(), lambda: 0, had_clean_shutdown=False)
    assert unclean.txn_index_rebuild_offset == 0  # recovered: its index needs the producer state
    unclean.close()


# ============================================================ with the log


def rolled_log(tmp_path) -> Log:
    """Three segments: [0, 10), [10, 20), [20, 25), one batch per 5 offsets."""
    log = Log.open(tmp_path / "t-0", LogConfig(index_interval_bytes=0), lambda: 0)
    for base in (0, 5):
        log.append_as_follower(batch(base, 5))
    log.roll()
    for base in (10, 15):
        log.append_as_follower(batch(base, 5))
    log.roll()
    log.append_as_follower(batch(20, 5))
    return log


def test_read_committed_collects_aborted_transactions_up_to_the_next_index_entry(tmp_path):
    log = rolled_log(tmp_path)
    log.append_aborted_txn(AbortedTxn(1, 0, 4, 5))  # segment 0
    log.append_aborted_txn(AbortedTxn(2, 3, 12, 13))  # segment 10, began in segment 0
    log.append_aborted_txn(AbortedTxn(3, 15, 22, 25))  # segment 20
    one = len(batch(0, 5))
    plain = log.read(5, one)
    assert plain.aborted_transactions is None
    # Reading offsets 5..9 (the rest of segment 0): the bound is the next segment's base (10).
    got = log.read(5, one, include_aborted_txns=True)
    assert got.region is not None and got.aborted_transactions == [AbortedTxn(2, 3, 12, 13)]
    # Reading 0..4 only: the index entry after the batch is at offset 9 (the batch 5..9).
    got = log.read(0, one, include_aborted_txns=True)
    assert [t.producer_id for t in got.aborted_transactions] == [1, 2]
    # From 10, everything to the log end: the search continues into segment 20.
    got = log.read(10, 1 << 20, include_aborted_txns=True)
    assert [t.producer_id for t in got.aborted_transactions] == [2, 3]
    assert log.collect_aborted_transactions(0, 25) == [AbortedTxn(1, 0, 4, 5), AbortedTxn(2, 3, 12, 13), AbortedTxn(3, 15, 22, 25)]
    # Nothing readable below the bound: empty data, an empty list.
    empty = log.read(10, 1 << 20, max_offset=10, include_aborted_txns=True)
    assert empty.region is None and empty.aborted_transactions == []
    log.close()


def test_append_aborted_txn_goes_to_the_segment_of_the_marker(tmp_path):
    log = rolled_log(tmp_path)
    assert log.append_aborted_txn(AbortedTxn(1, 2, 13, 14))
    assert not log.append_aborted_txn(AbortedTxn(1, 2, 99, 100))  # no segment holds offset 99
    assert [len(s.txn_index) for s in log.segments] == [0, 1, 0]
    log.close()


def test_truncation_cuts_the_transaction_indexes(tmp_path):
    log = rolled_log(tmp_path)
    log.append_aborted_txn(AbortedTxn(1, 0, 4, 5))
    log.append_aborted_txn(AbortedTxn(2, 10, 14, 15))
    log.append_aborted_txn(AbortedTxn(3, 15, 19, 20))
    log.append_aborted_txn(AbortedTxn(4, 20, 24, 25))
    log.truncate_to(15)
    assert [t.producer_id for s in log.segments for t in s.txn_index.all_aborted_txns()] == [1, 2]
    assert (tmp_path / "t-0" / "00000000000000000020.txnindex.deleted").exists()
    log.truncate_fully_and_start_at(30)
    assert [len(s.txn_index) for s in log.segments] == [0]
    log.close()


def test_rename_dir_and_retire_carry_the_entries(tmp_path):
    log = rolled_log(tmp_path)
    log.append_aborted_txn(AbortedTxn(2, 10, 14, 15))
    log.append_aborted_txn(AbortedTxn(4, 20, 24, 25))
    log.rename_dir(tmp_path / "moved")
    assert log.segments[1].txn_index.path == tmp_path / "moved" / "00000000000000000010.txnindex"
    # A copy of the log with other segment boundaries, as a future log filled by appends.
    copy = Log.open(tmp_path / "copy", LogConfig(), lambda: 0)
    for base in range(0, 25, 5):
        copy.append_as_follower(batch(base, 5))
    log.retire(copy)
    assert copy.segments[0].txn_index.all_aborted_txns() == [AbortedTxn(2, 10, 14, 15), AbortedTxn(4, 20, 24, 25)]
    assert log.collect_aborted_transactions(0, 25) == [AbortedTxn(2, 10, 14, 15), AbortedTxn(4, 20, 24, 25)]
    copy.close()
    log.close()


def test_a_cleaned_segment_keeps_the_entries_of_the_markers_it_holds(tmp_path):
    config = LogConfig(segment_bytes=600, index_interval_bytes=100, cleanup_policy=("compact",), segment_ms=10**12)
    log = Log.open(tmp_path / "t-0", config, lambda: 0)
    log.append_as_leader(build_batch([Record(0, 1000, b"k", b"c0")]), 0)  # 0
    aborted = build_batch([Record(0, 1000, b"k", b"a")], producer_id=10, producer_epoch=0, base_sequence=0, is_transactional=True)
    log.append_as_leader(aborted, 0)  # 1
    log.append_as_leader(build_control_batch(ControlRecordType.ABORT, producer_id=10, producer_epoch=0, timestamp=1000), 0)  # 2
    assert log.append_aborted_txn(AbortedTxn(10, 1, 2, 3))
    log.roll()
    log.append_as_leader(build_batch([Record(0, 1000, b"k", b"c1")]), 0)  # 3
    log.roll()
    clean(log, None, 0)
    assert log.segments[0].log_path.name == "00000000000000000000.log"
    assert log.segments[0].txn_index.all_aborted_txns() == [AbortedTxn(10, 1, 2, 3)]
    assert (tmp_path / "t-0" / "00000000000000000000.txnindex").read_bytes() == entry_bytes(0, 10, 1, 2, 3)
    log.close()
