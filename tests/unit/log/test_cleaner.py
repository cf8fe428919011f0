"""Log compaction (mafka.log.cleaner) against Kafka 2.8's LogCleaner rules.

Logs are built with small segments and rolled so the data sits in inactive
segments; time comes from an injected clock and segment mtimes are set with
os.utime.  Every compacted batch is checked by our CRC validation and by
kafka-python's independent decoder.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from pathlib import Path
from types import SimpleNamespace

import pytest
import xxhash
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from kafka.record.default_records import DefaultRecordBatch

from mafka.log import cleaner
from mafka.log.cleaner import (
    DEFAULT_MAX_MAP_ENTRIES,
    CleanResult,
    OffsetMap,
    _scan_transactions,  # noqa: PLC2701 - the cleaner's own transaction scan, to check a reopened log
    clean,
    cleanable_range,
    delete_horizon_ms,
    dirty_ratio,
    group_segments_by_size,
    map_entries_for_buffer,
    max_compaction_delay,
    needs_cleaning,
)
from mafka.log.config import LogConfig
from mafka.log.log import Log
from mafka.log.segment import INT32_MAX, LogSegment
from mafka.log.txn_index import AbortedTxn
from mafka.wire.batch import BatchHeader, iter_batches, validate_batch
from mafka.wire.compression import CompressionType
from mafka.wire.records import (
    ControlRecordType,
    Record,
    build_batch,
    build_control_batch,
    decode_batch,
)
from tests.hypothesis_budget import examples

NOW = 1_700_000_000_000
COMPACT = LogConfig(
    segment_bytes=600,
    index_interval_bytes=100,
    cleanup_policy=("compact",),
    segment_ms=10**12,
)


# ------------------------------------------------------------------ helpers


def new_log(directory: Path, config: LogConfig = COMPACT, now: list[int] | None = None) -> tuple[Log, list[int]]:
    now = now if now is not None else [NOW]
    return Log.open(directory, config, lambda: now[0]), now


def append(
    log: Log,
    rows: list[tuple[bytes | None, bytes | None]],
    ts: int = NOW,
    *,
    leader_epoch: int = 0,
    **batch_kw,
) -> int:
    """Appends one batch of (key, value) rows; returns its first offset."""
    records = [Record(i, ts + i, k, v, (("h", b"x"),) if i % 2 else ()) for i, (k, v) in enumerate(rows)]
    return log.append_as_leader(build_batch(records, **batch_kw), leader_epoch).first_offset


def append_each(log: Log, rows: list[tuple[bytes | None, bytes | None]], ts: int = NOW, **kw) -> list[int]:
    """One batch per row."""
    return [append(log, [row], ts, **kw) for row in rows]


def read_batches(log: Log) -> list[bytes]:
    """Every whole batch through Log.read, from the log start to the end."""
    out = []
    offset = log.log_start_offset
    while True:
        info = log.read(offset, 1 << 20)
        if info.region is None:
            return out
        data = info.read()
        got = [bytes(data[pos : pos + h.size]) for pos, h in iter_batches(data)]
        assert got, f"read at {offset} returned no whole batch"
        out.extend(got)
        offset = BatchHeader(got[-1]).last_offset + 1


def data_records(log: Log) -> list[tuple]:
    """(offset, key, value, timestamp, headers) of every non-control record, checked two ways."""
    rows = []
    for raw in read_batches(log):
        validate_batch(raw)
        theirs = DefaultRecordBatch(raw)
        assert theirs.validate_crc()
        decoded = decode_batch(raw)
        h = decoded.header
        assert (theirs.base_offset, theirs.last_offset_delta, theirs.records_count) == (
            h.base_offset,
            h.last_offset_delta,
            h.record_count,
        )
        if h.is_control:
            assert theirs.is_control_batch
            continue
        ours = [(r.offset, r.key, r.value, r.timestamp, tuple(r.headers)) for r in decoded.records]
        kp = [(r.offset, r.key, r.value, r.timestamp, tuple(r.headers)) for r in theirs]
        assert ours == kp
        rows.extend(ours)
    offsets = [r[0] for r in rows]
    assert offsets == sorted(set(offsets)), "offsets must strictly increase"
    return rows


def kv(log: Log) -> list[tuple[int, bytes | None, bytes | None]]:
    return [(o, k, v) for o, k, v, _, _ in data_records(log)]


def files(directory: Path, suffix: str) -> list[str]:
    return sorted(p.name for p in directory.iterdir() if p.name.endswith(suffix))


def set_mtime(seg: LogSegment, ms: int) -> None:
    os.utime(seg.log_path, ns=(ms * 1_000_000, ms * 1_000_000))


def segment_holding(log: Log, offset: int) -> LogSegment:
    return [s for s in log.segments if s.base_offset <= offset][-1]


def clean_fully(log: Log, first_dirty: int | None, now: int, **kw) -> CleanResult:
    """Cleans until the map no longer fills; returns the last round's result."""
    for _ in range(500):
        result = clean(log, first_dirty, now, **kw)
        if result.next_first_dirty == result.first_uncleanable:
            return result
        assert result.next_first_dirty > result.first_dirty, "a round must make progress"
        first_dirty = result.next_first_dirty
    raise AssertionError("cleaning did not converge")


# ------------------------------------------------------------------ offset map


def test_offset_map_puts_gets_and_refuses_new_keys_when_full() -> None:
    m = OffsetMap(2)
    assert m.get(b"a") == -1 and len(m) == 0 and m.latest_offset == -1
    assert m.put(b"a", 1) and m.put(b"b", 2)
    assert m.is_full and m.utilization == 1.0
    assert not m.put(b"c", 3)  # a new key does not fit
    assert b"c" not in m and m.get(b"c") == -1
    assert m.put(b"a", 7)  # an update needs no room
    assert (m.get(b"a"), m.get(b"b"), len(m)) == (7, 2, 2)
    assert OffsetMap.hash_key(b"a") == xxhash.xxh64_intdigest(b"a")
    m.latest_offset = 9
    m.clear()
    assert (len(m), m.latest_offset, m.get(b"a")) == (0, -1, -1)
    with pytest.raises(ValueError):
        OffsetMap(0)


def test_map_size_follows_kafkas_dedupe_buffer_arithmetic() -> None:
    # 128 MiB / 24 bytes per entry * 0.9 load factor, as Kafka sizes SkimpyOffsetMap.
    assert map_entries_for_buffer() == 5_033_164
    assert map_entries_for_buffer(24 * 1000, 1.0) == 1000
    assert 0 < DEFAULT_MAX_MAP_ENTRIES <= map_entries_for_buffer()


# ------------------------------------------------------------------ the model test

keys = st.sampled_from([b"a", b"b", b"c", b"d", b"e", b"f", None])
values = st.none() | st.binary(max_size=24)
batches = st.lists(st.lists(st.tuples(keys, values), min_size=1, max_size=4), min_size=1, max_size=12)


@settings(max_examples=examples(40), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rounds=st.lists(batches, min_size=1, max_size=3),
    map_entries=st.sampled_from([1, 2, 3, 5, DEFAULT_MAX_MAP_ENTRIES]),
    codec=st.sampled_from([CompressionType.NONE, CompressionType.GZIP]),
)
def test_latest_value_per_key_survives_and_nothing_older(rounds, map_entries, codec) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        log, now = new_log(Path(tmp) / "t-0")
        appended: dict[int, tuple[bytes | None, bytes | None]] = {}
        latest: dict[bytes, int] = {}
        first_dirty = None
        for batches_of_round in rounds:
            for rows in batches_of_round:
                base = append(log, rows, compression=codec)
                for i, (k, v) in enumerate(rows):
                    appended[base + i] = (k, v)
                    if k is not None:
                        latest[k] = base + i
            log.roll()
            for _ in range(200):
                result = clean(log, first_dirty, now[0], max_map_entries=map_entries)
                first_dirty = result.next_first_dirty
                survivors = kv(log)
                # never invented, never moved, never lost the latest value of a key
                assert all(appended[o] == (k, v) for o, k, v in survivors)
                assert set(latest.values()) <= {o for o, _, _ in survivors}
                if result.next_first_dirty == result.first_uncleanable:
                    break
            else:
                raise AssertionError("no convergence")
            assert first_dirty == log.active_segment.base_offset == log.next_offset
            # the first clean keeps tombstones; later horizons are a day before real mtimes
            expected = sorted((o, *appended[o]) for o in latest.values())
            assert survivors == expected
        log.close()


# ------------------------------------------------------------------ offsets and batch contents


def test_retained_records_keep_offsets_and_batch_attributes(tmp_path: Path) -> None:
    log, now = new_log(tmp_path / "t-0")
    first = append(
        log,
        [(b"a", b"1"), (b"b", b"1"), (b"c", b"1"), (b"d", b"1")],
        compression=CompressionType.GZIP,
        producer_id=77,
        producer_epoch=3,
        base_sequence=10,
        leader_epoch=5,
    )
    lat = append(log, [(b"e", b"1"), (b"f", b"1"), (b"g", b"1")], timestamp_type=1, leader_epoch=6)
    untouched = append(log, [(b"x", b"1"), (b"y", b"2")], compression=CompressionType.GZIP, leader_epoch=6)
    # (a LogAppendTime batch's record timestamp deltas are not canonical: a rebuild would zero them)
    untouched_lat = append(log, [(b"p", b"1"), (b"q", b"2")], timestamp_type=1, leader_epoch=6)
    append_each(log, [(b"b", b"2"), (b"d", b"2"), (b"e", b"2"), (b"g", b"2")], leader_epoch=6)
    log.roll()
    before = {BatchHeader(raw).base_offset: raw for raw in read_batches(log)}

    result = clean(log, None, now[0])

    assert result.first_dirty == 0 and result.next_first_dirty == log.next_offset == 15
    after = {BatchHeader(raw).base_offset: raw for raw in read_batches(log)}
    assert sorted(after) == sorted(before)  # no batch vanished: each kept at least one record
    # the producer batch lost b and d: same base and LAST offset, same producer, codec, epoch
    old, new = BatchHeader(before[first]), BatchHeader(after[first])
    assert (new.base_offset, new.last_offset_delta) == (old.base_offset, old.last_offset_delta) == (0, 3)
    assert new.record_count == 2 and new.attributes == old.attributes and new.compression == CompressionType.GZIP
    assert (new.producer_id, new.producer_epoch, new.base_sequence) == (77, 3, 10)
    assert new.partition_leader_epoch == 5
    theirs = DefaultRecordBatch(after[first])
    assert theirs.validate_crc() and theirs.compression_type == CompressionType.GZIP
    assert (theirs.producer_id, theirs.producer_epoch, theirs.base_sequence, theirs.last_offset) == (77, 3, 10, 3)
    # the LogAppendTime batch keeps its type and append time
    old, new = BatchHeader(before[lat]), BatchHeader(after[lat])
    assert new.timestamp_type == 1 and new.max_timestamp == old.max_timestamp
    assert new.last_offset_delta == 2 and new.record_count == 1
    assert [r.timestamp for r in DefaultRecordBatch(after[lat])] == [old.max_timestamp]
    # an unchanged batch is copied byte for byte
    assert after[untouched] == before[untouched]
    assert after[untouched_lat] == before[untouched_lat]
    assert kv(log) == [
        (0, b"a", b"1"),
        (2, b"c", b"1"),
        (5, b"f", b"1"),
        (7, b"x", b"1"),
        (8, b"y", b"2"),
        (9, b"p", b"1"),
        (10, b"q", b"2"),
        (11, b"b", b"2"),
        (12, b"d", b"2"),
        (13, b"e", b"2"),
        (14, b"g", b"2"),
    ]
    assert (result.records_kept, result.records_dropped, result.tombstones_dropped) == (11, 4, 0)
    assert result.bytes_written < result.bytes_read
    # a read at a removed offset returns the batch whose range covers it (consumers skip
    # records below the fetch offset), or the next batch
    assert BatchHeader(log.read(3, 1000).read()).last_offset == 3
    assert decode_batch(log.read(4, 1000).read()).records[0].offset == 5
    log.close()


def test_keyless_records_are_dropped(tmp_path: Path) -> None:
    log, now = new_log(tmp_path / "t-0")
    append(log, [(None, b"nokey"), (b"k", b"v"), (None, b"nokey2")])
    log.roll()
    result = clean(log, None, now[0])
    assert kv(log) == [(1, b"k", b"v")]
    assert result.records_dropped == 2
    log.close()


def test_compacted_batches_reopen_to_the_same_records(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log, now = new_log(directory)
    for i in range(40):
        append(log, [(b"k%d" % (i % 7), b"v%d" % i), (b"j%d" % (i % 3), None if i % 5 == 0 else b"w")])
    log.roll()
    clean(log, None, now[0])
    records = data_records(log)
    batches = read_batches(log)
    segments_after = [(s.base_offset, s.size) for s in log.segments]
    log.flush()
    log.close()
    assert files(directory, ".cleaned") == [] and files(directory, ".swap") == []

    reopened = Log.open(directory, COMPACT, lambda: now[0])
    assert [(s.base_offset, s.size) for s in reopened.segments] == segments_after
    assert read_batches(reopened) == batches
    assert data_records(reopened) == records
    assert reopened.next_offset == 80
    # unclean shutdown: recovery re-reads and CRC-checks every cleaned segment, cutting nothing
    reopened.close()
    recovered = Log.open(directory, COMPACT, lambda: now[0], had_clean_shutdown=False)
    assert data_records(recovered) == records
    recovered.close()


# ------------------------------------------------------------------ tombstones


def test_tombstones_survive_the_first_clean_and_delete_retention_then_go(tmp_path: Path) -> None:
    d = 10_000
    config = LogConfig(
        segment_bytes=400, index_interval_bytes=100, cleanup_policy=("compact",), delete_retention_ms=d, segment_ms=10**12
    )
    log, now = new_log(tmp_path / "t-0", config)
    append_each(log, [(b"t", b"value"), (b"t", None)])  # offsets 0, 1
    append_each(log, [(b"f%d" % i, b"x" * 60) for i in range(12)])
    log.roll()

    r1 = clean(log, None, now[0])
    assert (1, b"t", None) in kv(log) and (0, b"t", b"value") not in kv(log)
    assert r1.tombstones_dropped == 0 and r1.records_dropped == 1

    wall = int(time.time() * 1000)
    t = wall - 100 * d
    tomb_seg = segment_holding(log, 1)
    last_clean = segment_holding(log, r1.next_first_dirty - 1)
    assert tomb_seg is not last_clean
    set_mtime(tomb_seg, t)
    set_mtime(last_clean, t + d // 2)
    assert delete_horizon_ms(log, r1.next_first_dirty) == t + d // 2 - d
    append_each(log, [(b"g%d" % i, b"y") for i in range(3)])
    log.roll()
    r2 = clean(log, r1.next_first_dirty, now[0])
    assert (1, b"t", None) in kv(log), "kept: its segment is newer than the horizon"
    assert r2.tombstones_dropped == 0

    tomb_seg = segment_holding(log, 1)
    last_clean = segment_holding(log, r2.next_first_dirty - 1)
    assert tomb_seg is not last_clean
    set_mtime(tomb_seg, t)
    set_mtime(last_clean, t + 2 * d)
    append_each(log, [(b"h%d" % i, b"z") for i in range(3)])
    log.roll()
    r3 = clean(log, r2.next_first_dirty, now[0])
    assert all(k != b"t" for _, k, _ in kv(log)), "dropped once older than the horizon"
    assert r3.tombstones_dropped == 1
    log.close()


def test_cleaned_segment_keeps_the_mtime_of_its_groups_last_segment(tmp_path: Path) -> None:
    log, now = new_log(tmp_path / "t-0")
    build_dupes(log)
    wall = int(time.time() * 1000)
    mtimes = {}
    for i, seg in enumerate(log.segments[:-1]):
        set_mtime(seg, wall - 10_000_000 + i * 1000)
        mtimes[seg.base_offset] = seg.last_modified_ms
    r1 = clean(log, None, now[0])
    # groups are sized on the (full) source segments: one segment each, mtime kept
    assert {s.base_offset: s.last_modified_ms for s in log.segments[:-1]} == mtimes
    for i, seg in enumerate(log.segments[:-1]):
        set_mtime(seg, wall - 5_000_000 + i * 1000)
        mtimes[seg.base_offset] = seg.last_modified_ms
    build_dupes(log)
    clean(log, r1.next_first_dirty, now[0])
    # now the small cleaned segments merge; the merged one has its last member's mtime
    merged, nxt = log.segments[0], log.segments[1]
    members = [base for base in mtimes if base < nxt.base_offset]
    assert len(members) >= 2
    assert merged.last_modified_ms == mtimes[max(members)]
    log.close()


# ------------------------------------------------------------------ when to clean


def equal_segments_log(directory: Path, **config_kw) -> tuple[Log, list[int], int]:
    """8 equal batches, two per segment (4 inactive segments of equal size)."""
    size = len(build_batch([Record(0, NOW, b"k00", b"v" * 20)]))
    config = LogConfig(
        segment_bytes=size * 5 // 2, cleanup_policy=("compact",), segment_ms=10**12, **config_kw
    )
    log, now = new_log(directory, config)
    for i in range(8):
        append(log, [(b"k%02d" % i, b"v" * 20)], ts=NOW - 10_000)
    log.roll()
    assert [s.size for s in log.segments] == [2 * size] * 4 + [0]
    return log, now, size


def test_dirty_ratio_counts_whole_segments_and_the_threshold_is_strict(tmp_path: Path) -> None:
    log, now, _ = equal_segments_log(tmp_path / "a", min_cleanable_dirty_ratio=0.5)
    assert cleanable_range(log, 4, now[0]) == (4, 8)
    assert dirty_ratio(log, 4, 8) == 0.5
    assert dirty_ratio(log, 6, 8) == 0.25
    assert dirty_ratio(log, 0, 8) == 1.0
    assert dirty_ratio(log, 8, 8) == 0.0
    assert not needs_cleaning(log, 4, now[0]), "Kafka cleans only above the ratio"
    assert not needs_cleaning(log, 6, now[0])
    assert needs_cleaning(log, 2, now[0])  # 0.75
    assert needs_cleaning(log, None, now[0])  # no checkpoint: everything is dirty
    log.close()
    log, now, _ = equal_segments_log(tmp_path / "b", min_cleanable_dirty_ratio=0.49)
    assert needs_cleaning(log, 4, now[0])
    log.close()


def test_max_compaction_lag_forces_cleaning_below_the_ratio(tmp_path: Path) -> None:
    log, now, _ = equal_segments_log(tmp_path / "a", min_cleanable_dirty_ratio=0.9, max_compaction_lag_ms=20_000)
    assert max_compaction_delay(log, 6, now[0]) == 0
    assert not needs_cleaning(log, 6, now[0])
    now[0] += 15_000  # the dirty segment's first batch is now 25 s old
    assert max_compaction_delay(log, 6, now[0]) == 5_000
    assert needs_cleaning(log, 6, now[0])
    assert not needs_cleaning(log, 8, now[0]), "nothing dirty, nothing forced"
    log.close()


def test_needs_cleaning_is_false_for_delete_policy_and_clean_refuses(tmp_path: Path) -> None:
    log, now = new_log(tmp_path / "t-0", LogConfig(segment_bytes=600))
    append_each(log, [(b"k", b"v")] * 20)
    log.roll()
    assert not needs_cleaning(log, None, now[0])
    with pytest.raises(ValueError):
        clean(log, None, now[0])
    assert len(kv(log)) == 20
    log.close()


def test_invalid_checkpoints_reset_to_the_log_start(tmp_path: Path) -> None:
    log, now = new_log(tmp_path / "t-0")
    append_each(log, [(b"k%d" % i, b"v") for i in range(20)])
    log.roll()
    active = log.active_segment.base_offset
    assert cleanable_range(log, None, now[0]) == (0, active)
    assert cleanable_range(log, 10**9, now[0]) == (0, active)  # past the log end
    log.increment_log_start_offset(3)
    assert cleanable_range(log, 1, now[0]) == (3, active)  # below the log start
    assert cleanable_range(log, 12, now[0]) == (12, active)
    assert cleanable_range(log, active, now[0]) == (active, active)
    log.close()


def test_min_compaction_lag_leaves_recent_segments_alone(tmp_path: Path) -> None:
    config = LogConfig(
        segment_bytes=600, index_interval_bytes=100, cleanup_policy=("compact",), segment_ms=10**12, min_compaction_lag_ms=1_000
    )
    log, now = new_log(tmp_path / "t-0", config)
    append_each(log, [(b"k%d" % (i % 4), b"old%d" % i) for i in range(16)], ts=NOW - 5_000)
    log.roll()
    recent_base = log.next_offset
    append_each(log, [(b"k%d" % (i % 4), b"new%d" % i) for i in range(16)], ts=NOW - 500)
    log.roll()
    recent = [s for s in log.segments[:-1] if s.base_offset >= recent_base]
    recent_bytes = [(s, s.log_path.read_bytes()) for s in recent]
    assert len(recent) >= 2

    assert cleanable_range(log, None, now[0]) == (0, recent_base)
    result = clean(log, None, now[0])
    assert result.next_first_dirty == result.first_uncleanable == recent_base
    for seg, data in recent_bytes:  # untouched: same objects, same bytes
        assert seg in log.segments and seg.log_path.read_bytes() == data
    rows = kv(log)
    assert [r for r in rows if r[0] < recent_base] == [(12 + i, b"k%d" % i, b"old%d" % (12 + i)) for i in range(4)]
    assert len([r for r in rows if r[0] >= recent_base]) == 16

    now[0] += 1_000  # the recent segments come of age
    assert cleanable_range(log, recent_base, now[0])[1] == log.active_segment.base_offset
    clean(log, recent_base, now[0])
    assert kv(log) == [(recent_base + 12 + i, b"k%d" % i, b"new%d" % (12 + i)) for i in range(4)]
    log.close()


def test_the_active_segment_is_never_cleaned(tmp_path: Path) -> None:
    log, now = new_log(tmp_path / "t-0", LogConfig(cleanup_policy=("compact",), segment_ms=10**12))
    append_each(log, [(b"k", b"v%d" % i) for i in range(10)])
    active = log.active_segment
    data = active.log_path.read_bytes()
    assert len(log.segments) == 1
    result = clean(log, None, now[0])
    assert (result.first_dirty, result.next_first_dirty, result.segments_cleaned) == (0, 0, 0)
    assert log.active_segment is active and active.log_path.read_bytes() == data
    assert len(kv(log)) == 10
    # with inactive segments too, the active one stays as it is
    log.roll()
    append_each(log, [(b"k", b"w%d" % i) for i in range(5)])
    active = log.active_segment
    data = active.log_path.read_bytes()
    result = clean(log, None, now[0])
    assert result.first_uncleanable == active.base_offset == 10
    assert log.active_segment is active and active.log_path.read_bytes() == data
    assert kv(log) == [(9, b"k", b"v9")] + [(10 + i, b"k", b"w%d" % i) for i in range(5)]
    log.close()


# ------------------------------------------------------------------ a full map


def test_a_full_offset_map_stops_early_at_the_first_key_that_does_not_fit(tmp_path: Path) -> None:
    log, now = new_log(tmp_path / "t-0")
    rows = [(b"a", b"0"), (b"b", b"1"), (b"a", b"2"), (b"c", b"3"), (b"b", b"4"), (b"d", b"5")]
    rows += [(b"e", b"6"), (b"a", b"7"), (b"f", b"8"), (b"d", b"9")]
    append(log, rows[:4])
    append(log, rows[4:7])
    append(log, rows[7:])
    log.roll()

    r1 = clean(log, None, now[0], max_map_entries=3)
    # a, b, c fit; d (offset 5) does not: the map covers [0, 5)
    assert (r1.first_dirty, r1.next_first_dirty, r1.first_uncleanable) == (0, 5, 10)
    assert kv(log) == [(2, b"a", b"2"), (3, b"c", b"3"), (4, b"b", b"4")] + [
        (i, *rows[i]) for i in range(5, 10)
    ]
    r2 = clean(log, r1.next_first_dirty, now[0], max_map_entries=3)
    # d, e, a fit; f (offset 8) does not
    assert (r2.first_dirty, r2.next_first_dirty) == (5, 8)
    assert kv(log) == [(3, b"c", b"3"), (4, b"b", b"4"), (5, b"d", b"5"), (6, b"e", b"6"), (7, b"a", b"7")] + [
        (8, b"f", b"8"),
        (9, b"d", b"9"),
    ]
    r3 = clean(log, r2.next_first_dirty, now[0], max_map_entries=3)
    assert r3.next_first_dirty == r3.first_uncleanable == 10
    assert kv(log) == [(3, b"c", b"3"), (4, b"b", b"4"), (6, b"e", b"6"), (7, b"a", b"7"), (8, b"f", b"8"), (9, b"d", b"9")]
    log.close()


# ------------------------------------------------------------------ crash safety and concurrency


def build_dupes(log: Log, n: int = 30) -> None:
    append_each(log, [(b"k%d" % (i % 5), b"v%d" % i) for i in range(n)])
    log.roll()


def test_stale_cleaned_files_are_deleted_on_open(tmp_path: Path) -> None:
    directory = tmp_path / "t-0"
    log, now = new_log(directory)
    build_dupes(log)
    before = data_records(log)
    stale = LogSegment.create(directory, 0, COMPACT, now[0], suffix=".cleaned")
    stale.append([build_batch([Record(0, NOW, b"bogus", b"x")])], [])
    stale.flush()
    stale.close()
    log.close()
    assert files(directory, ".cleaned")
    reopened = Log.open(directory, COMPACT, lambda: now[0], had_clean_shutdown=False)
    assert files(directory, ".cleaned") == []
    assert data_records(reopened) == before
    reopened.close()


def test_a_crash_before_or_during_the_swap_leaves_old_or_new_data(tmp_path: Path, monkeypatch) -> None:
    directory = tmp_path / "t-0"
    log, now = new_log(directory)
    build_dupes(log)
    before = data_records(log)
    real = log.replace_segments
    crashes: list[Path] = []

    def crashing_replace(cleaned_seg: LogSegment, old: list[LogSegment]) -> None:
        # a crash with the .cleaned files written and flushed
        shot = tmp_path / f"crash-cleaned-{len(crashes)}"
        shutil.copytree(directory, shot)
        crashes.append(shot)
        # a crash right after .cleaned -> .swap
        cleaned_seg.change_suffix(".cleaned", ".swap")
        shot = tmp_path / f"crash-swap-{len(crashes)}"
        shutil.copytree(directory, shot)
        crashes.append(shot)
        cleaned_seg.change_suffix(".swap", ".cleaned")
        real(cleaned_seg, old)

    monkeypatch.setattr(log, "replace_segments", crashing_replace)
    clean(log, None, now[0])
    after = data_records(log)
    assert len(after) == 5 < len(before)
    assert len(crashes) >= 2
    for shot in crashes[:2]:  # the first group
        assert files(shot, ".cleaned") or files(shot, ".swap")
        recovered = Log.open(shot, COMPACT, lambda: now[0], had_clean_shutdown=False)
        assert files(shot, ".cleaned") == files(shot, ".swap") == []
        rows = data_records(recovered)
        if "cleaned" in shot.name:
            assert rows == before
        else:
            # the first group's cleaned segment replaced it; later groups are still old
            latest = {k: (o, k, v, ts, h) for o, k, v, ts, h in before}
            assert set(latest.values()) <= set(rows) <= set(before)
        recovered.close()
    log.close()


def test_retention_deleting_a_group_midway_aborts_that_group_only(tmp_path: Path, monkeypatch) -> None:
    directory = tmp_path / "t-0"
    log, now = new_log(directory)
    build_dupes(log, 60)
    assert len(log.segments) >= 6
    calls = []

    class RacingSegment(LogSegment):
        @classmethod
        def create(cls, *args, **kwargs):
            if not calls:  # while the first group is being cleaned, DeleteRecords + retention
                log.increment_log_start_offset(log.segments[1].base_offset)
                assert log.delete_old_segments(log.next_offset) == 1
            calls.append(args)
            return LogSegment.create(*args, **kwargs)

    monkeypatch.setattr(cleaner, "LogSegment", RacingSegment)
    result = clean(log, None, now[0])
    assert result.groups_aborted == 1
    assert result.segments_cleaned > 0
    assert files(directory, ".cleaned") == []
    rows = kv(log)
    assert {o for o, _, _ in rows} >= set(range(55, 60)), "every key's latest value is there"
    assert all(o >= log.log_start_offset for o, _, _ in rows)
    log.close()


def test_a_truncation_into_the_mapped_range_abandons_the_round(tmp_path: Path, monkeypatch) -> None:
    directory = tmp_path / "t-0"
    log, now = new_log(directory)
    build_dupes(log, 60)
    before = kv(log)

    class TruncatingSegment(LogSegment):
        @classmethod
        def create(cls, *args, **kwargs):
            if log.next_offset == 60:  # a follower truncates while the first group is copied
                assert log.truncate_to(50)
            return LogSegment.create(*args, **kwargs)

    monkeypatch.setattr(cleaner, "LogSegment", TruncatingSegment)
    result = clean(log, None, now[0])
    # the map said k0..k4 live at 55..59: acting on it now would lose every key
    assert result.segments_cleaned == 0 and result.groups_aborted >= 1
    assert result.next_first_dirty == result.first_dirty == 0
    assert files(directory, ".cleaned") == []
    assert kv(log) == [row for row in before if row[0] < 50]
    log.close()


# ------------------------------------------------------------------ transactions and producers


def marker(log: Log, kind: ControlRecordType, pid: int) -> int:
    raw = build_control_batch(kind, producer_id=pid, producer_epoch=0, timestamp=NOW)
    return log.append_as_leader(raw, 0).first_offset


def test_aborted_transactions_are_dropped_and_do_not_shadow_committed_values(tmp_path: Path) -> None:
    log, now = new_log(tmp_path / "t-0")
    append(log, [(b"k", b"c0")])  # 0
    append(log, [(b"k", b"aborted"), (b"x", b"ax")], producer_id=10, producer_epoch=0, base_sequence=0, is_transactional=True)
    assert marker(log, ControlRecordType.ABORT, 10) == 3
    append(log, [(b"y", b"y1")], producer_id=10, producer_epoch=0, base_sequence=2, is_transactional=True)  # 4
    assert marker(log, ControlRecordType.COMMIT, 10) == 5
    append(log, [(b"z", b"z1")], producer_id=11, producer_epoch=0, base_sequence=0)  # 6
    append(log, [(b"z", b"z2")])  # 7
    append(log, [(b"w", b"aborted-last")], producer_id=13, producer_epoch=0, base_sequence=0, is_transactional=True)  # 8
    assert marker(log, ControlRecordType.ABORT, 13) == 9
    log.roll()

    result = clean(log, None, now[0])
    assert kv(log) == [(0, b"k", b"c0"), (4, b"y", b"y1"), (7, b"z", b"z2")]
    headers = [BatchHeader(raw) for raw in read_batches(log)]
    controls = [h.base_offset for h in headers if h.is_control]
    assert controls == [3, 5, 9], "markers are kept (the first clean has no delete horizon)"
    # producer 11's only batch lost its record but stays as an empty batch (its last sequence)
    (empty,) = [h for h in headers if h.base_offset == 6]
    assert (empty.record_count, empty.last_offset, empty.producer_id, empty.base_sequence) == (0, 6, 11, 0)
    assert not empty.is_transactional
    assert not [h for h in headers if h.base_offset == 1], "the aborted batch is gone"
    # producer 13's aborted batch is its last: emptied, not removed
    (aborted_last,) = [h for h in headers if h.base_offset == 8]
    assert (aborted_last.record_count, aborted_last.producer_id, aborted_last.is_transactional) == (0, 13, True)
    assert result.records_dropped == 4
    log.close()


def test_an_open_transaction_bounds_the_cleanable_range(tmp_path: Path) -> None:
    log, now = new_log(tmp_path / "t-0")
    append_each(log, [(b"k", b"v0"), (b"k", b"v1")])
    log.roll()
    append(log, [(b"k", b"open")], producer_id=12, producer_epoch=0, base_sequence=0, is_transactional=True)  # 2
    append_each(log, [(b"f%d" % i, b"x" * 40) for i in range(10)])
    log.roll()
    result = clean(log, None, now[0])
    assert result.first_uncleanable == result.next_first_dirty == 2
    assert kv(log)[:2] == [(1, b"k", b"v1"), (2, b"k", b"open")]
    marker(log, ControlRecordType.COMMIT, 12)
    log.roll()
    result = clean(log, result.next_first_dirty, now[0])
    assert result.first_uncleanable == log.next_offset
    assert [(o, k, v) for o, k, v in kv(log) if k == b"k"] == [(2, b"k", b"open")]
    log.close()


def aborted_index(log: Log) -> list[tuple[int, int, int]]:
    """(producer id, first offset, marker offset) of every .txnindex entry of the log."""
    return [(t.producer_id, t.first_offset, t.last_offset) for s in log.segments for t in s.txn_index.all_aborted_txns()]


def test_markers_go_once_their_transactions_data_is_gone_and_past_the_delete_horizon(tmp_path: Path) -> None:
    """Kafka's CleanedTransactionMetadata: a marker stays while a batch of its transaction is
    traversed; once none is, it goes in a segment older than the delete horizon, and an
    ABORT marker's .txnindex entry goes with it."""
    d = 10_000
    config = LogConfig(
        segment_bytes=1000, index_interval_bytes=100, cleanup_policy=("compact",), delete_retention_ms=d, segment_ms=10**12
    )
    log, now = new_log(tmp_path / "t-0", config)
    txn = {"producer_epoch": 0, "is_transactional": True}
    append(log, [(b"a", b"aborted")], producer_id=10, base_sequence=0, **txn)  # 0
    assert marker(log, ControlRecordType.ABORT, 10) == 1
    assert log.append_aborted_txn(AbortedTxn(10, 0, 1, 2))  # what the partition does for an ABORT
    append(log, [(b"b", b"superseded")], producer_id=11, base_sequence=0, **txn)  # 2
    assert marker(log, ControlRecordType.COMMIT, 11) == 3
    append(log, [(b"b", b"newer")])  # 4
    append(log, [(b"c", b"kept")], producer_id=12, base_sequence=0, **txn)  # 5
    assert marker(log, ControlRecordType.COMMIT, 12) == 6
    # later batches of producers 10 and 11: their first ones are not their last (no RETAIN_EMPTY)
    append(log, [(b"e", b"10-again")], producer_id=10, base_sequence=1, **txn)  # 7
    assert marker(log, ControlRecordType.COMMIT, 10) == 8
    append(log, [(b"f", b"11-again")], producer_id=11, base_sequence=1, **txn)  # 9
    assert marker(log, ControlRecordType.COMMIT, 11) == 10
    log.roll()
    append_each(log, [(b"g%d" % i, b"x" * 60) for i in range(4)])
    log.roll()
    assert aborted_index(log) == [(10, 0, 1)]

    def controls() -> list[int]:
        return [h.base_offset for h in map(BatchHeader, read_batches(log)) if h.is_control]

    # First clean: no horizon yet. The data goes (aborted; superseded), every marker stays.
    r1 = clean(log, None, now[0])
    assert [(o, k) for o, k, _ in kv(log)][:5] == [(4, b"b"), (5, b"c"), (7, b"e"), (9, b"f"), (11, b"g0")]
    assert controls() == [1, 3, 6, 8, 10]
    assert aborted_index(log) == [(10, 0, 1)], "its data was traversed this round: still indexed"

    # Second clean, the markers' segment newer than the horizon: they stay.
    wall = int(time.time() * 1000)
    t = wall - 100 * d
    markers_seg = segment_holding(log, 1)
    set_mtime(markers_seg, t)
    set_mtime(segment_holding(log, r1.next_first_dirty - 1), t + d // 2)
    append_each(log, [(b"h%d" % i, b"y") for i in range(3)])
    log.roll()
    r2 = clean(log, r1.next_first_dirty, now[0])
    assert controls() == [1, 3, 6, 8, 10]

    # Third clean, older than the horizon: the markers whose transactions left no batch go.
    markers_seg = segment_holding(log, 1)
    last_clean = segment_holding(log, r2.next_first_dirty - 1)
    assert markers_seg is not last_clean
    set_mtime(markers_seg, t)
    set_mtime(last_clean, t + 2 * d)
    append_each(log, [(b"i%d" % i, b"z") for i in range(3)])
    log.roll()
    r3 = clean(log, r2.next_first_dirty, now[0])
    assert controls() == [6, 8, 10], "the ABORT at 1 and the COMMIT at 3 had no batch left"
    assert aborted_index(log) == []
    assert r3.records_dropped >= 2
    assert [(o, k) for o, k, _ in kv(log)][:4] == [(4, b"b"), (5, b"c"), (7, b"e"), (9, b"f")]
    log.close()

    # The cleaned log reopens to the same batches, and no transaction in it looks open
    # (every transactional batch left still has its marker).
    reopened, _ = new_log(tmp_path / "t-0", config)
    assert [h.base_offset for h in map(BatchHeader, read_batches(reopened)) if h.is_control] == [6, 8, 10]
    assert _scan_transactions(reopened.segments).first_unstable is None
    reopened.close()


# ------------------------------------------------------------------ grouping


def fake(base: int, size: int, entries: int = 0) -> SimpleNamespace:
    return SimpleNamespace(base_offset=base, size=size, index=[0] * entries, time_index=[0] * entries)


def test_groups_respect_size_index_capacity_and_int32_offsets() -> None:
    segs = [fake(0, 300), fake(10, 300), fake(20, 500), fake(30, 100), fake(40, 900)]
    groups = group_segments_by_size(segs, 1000, 100, 100, 50)
    assert [[s.base_offset for s in g] for g in groups] == [[0, 10], [20, 30], [40]]
    # a segment larger than the limit still forms a group of its own
    assert [[s.base_offset for s in g] for g in group_segments_by_size([fake(0, 5000), fake(9, 1)], 1000, 100, 100, 10)] == [[0], [9]]
    # index capacity
    segs = [fake(0, 1, 60), fake(10, 1, 60), fake(20, 1, 30)]
    assert [[s.base_offset for s in g] for g in group_segments_by_size(segs, 1000, 100, 1000, 30)] == [[0], [10, 20]]
    # offsets must stay within an int32 of the group's base
    segs = [fake(0, 1), fake(INT32_MAX - 5, 1), fake(INT32_MAX + 1, 1)]
    groups = group_segments_by_size(segs, 1000, 100, 100, INT32_MAX + 10)
    assert [[s.base_offset for s in g] for g in groups] == [[0, INT32_MAX - 5], [INT32_MAX + 1]]


def test_cleaning_merges_small_segments_up_to_segment_bytes(tmp_path: Path) -> None:
    log, now = new_log(tmp_path / "t-0")
    build_dupes(log, 60)
    inactive = len(log.segments) - 1
    r1 = clean(log, None, now[0])
    assert r1.segments_cleaned == inactive
    assert len(log.segments) - 1 == inactive, "groups are sized on the source segments"
    build_dupes(log, 60)
    dirty_segments = len([s for s in log.segments[:-1] if s.base_offset >= r1.next_first_dirty])
    r2 = clean(log, r1.next_first_dirty, now[0])
    assert r2.segments_cleaned == inactive + dirty_segments
    assert len(log.segments) - 1 < inactive + dirty_segments
    assert all(s.size <= COMPACT.segment_bytes for s in log.segments)
    assert [o for o, _, _ in kv(log)] == list(range(115, 120))
    log.close()


def test_cleaning_logs_what_it_did(tmp_path: Path, caplog) -> None:
    log, now = new_log(tmp_path / "t-0")
    build_dupes(log)
    with caplog.at_level("INFO", logger="mafka.log.cleaner"):
        result = clean(log, None, now[0])
    messages = [r.getMessage() for r in caplog.records if r.name == "mafka.log.cleaner"]
    assert any("swapped in cleaned segment 0" in m for m in messages)
    assert any(f"{result.records_dropped} dropped" in m for m in messages)
    log.close()
