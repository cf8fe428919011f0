"""Crash recovery of a Mafka log (Kafka's ``loadSegments``/``recoverLog``).

Each test writes a multi-segment log with a fixed clock, flushes part of it
(that flush is the recovery point), closes the files without flushing the
rest (a crash: the page cache may or may not have reached the disk) and then
damages the files the way a crash can:

* (a) the newest ``.log`` cut at any byte after the recovery point, maybe
  followed by zeros (a file whose size reached the disk before its data);
* (b) bytes flipped anywhere after the recovery point;
* (c) ``.index`` / ``.timeindex`` files deleted, torn, zero-filled at the
  tail, reordered or overwritten with random bytes.

The log is reopened with ``Log.open(..., recovery_point=..., had_clean_shutdown=False)``
and must then hold exactly a prefix of what was written — batch by batch,
record by record, read back through :meth:`Log.read` and decoded — with
nothing below the recovery point lost, every batch's CRC valid, indexes
rebuilt to exactly what a fresh write produces, and appends continuing at
the new log end offset.  Also: a clean shutdown reopens without rescanning,
and the leftovers of an interrupted compaction swap are completed or removed.

Only bytes covered by the batch CRC (and the batch length and magic) are
flipped in (b): baseOffset and partitionLeaderEpoch sit outside the CRC by
design (the broker patches them), so a flip there is undetectable in general;
``test_base_offset_outside_the_segment_is_treated_as_corrupt`` covers the
detectable case.
"""

from __future__ import annotations

import os
import random
import struct
import tempfile
from dataclasses import dataclass, replace
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mafka.log import segment as segment_module
from mafka.log.config import LogConfig
from mafka.log.log import Log
from mafka.wire.batch import iter_batches, validate_batch
from mafka.wire.records import Record, build_batch, iter_records
from tests.hypothesis_budget import examples
from tests.unit.log.test_format import (
    T0,
    DiskBatch,
    check_segment_files,
    expected_indexes,
    kafka_batches,
    produce,
    read_index,
)

CONFIG = LogConfig(segment_bytes=2500, index_interval_bytes=200)
APPENDS = 45
HSETTINGS = dict(deadline=None, suppress_health_check=[HealthCheck.too_slow])


# ============================================================ writing and crashing


@dataclass
class Written:
    directory: Path
    records: list[tuple]  # (offset, timestamp, key, value, headers), offsets 0..n-1
    segments: list[tuple[int, list[DiskBatch]]]  # as on disk after the crash
    recovery_point: int
    now: list[int]

    @property
    def batches(self) -> list[DiskBatch]:
        return [b for _, batches in self.segments for b in batches]

    def seg_path(self, base: int, suffix: str = ".log") -> Path:
        return self.directory / f"{base:020d}{suffix}"


def write_and_crash(directory: Path, seed: int, flush_after: int, appends: int = APPENDS) -> Written:
    """Writes *appends* produce requests, flushing after *flush_after*; closes without flushing."""
    now = [T0]
    log = Log.open(directory, CONFIG, lambda: now[0])
    rnd = random.Random(seed)
    first = produce(log, rnd, now, flush_after)
    log.flush()
    recovery_point = log.recovery_point
    assert recovery_point == log.next_offset
    second = produce(log, rnd, now, appends - flush_after)
    assert len(log.segments) >= 3
    log.close()  # the crash: nothing after the recovery point was fsynced
    segments = check_segment_files(directory, CONFIG.index_interval_bytes)
    return Written(directory, first.records + second.records, segments, recovery_point, now)


def reopen(w: Written, *, clean: bool = False, recovery_point: int | None = None) -> Log:
    rp = w.recovery_point if recovery_point is None else recovery_point
    return Log.open(w.directory, CONFIG, lambda: w.now[0], recovery_point=rp, had_clean_shutdown=clean)


def read_back(log: Log, max_bytes: int = 3000) -> list[tuple]:
    """Every record from the log start to its end, fetched with Log.read and decoded."""
    out: list[tuple] = []
    offset = log.log_start_offset
    while offset < log.next_offset:
        info = log.read(offset, max_bytes)
        assert info.region is not None, f"nothing returned at offset {offset} < {log.next_offset}"
        data = info.read()
        whole = list(iter_batches(data))
        assert whole, f"no whole batch at offset {offset}"
        # The batch holding *offset* (or, in a compacted log's gap, the next one) comes first.
        assert whole[0][1].last_offset >= offset
        for pos, _ in whole:
            validate_batch(data, pos)
        out.extend((r.offset, r.timestamp, r.key, r.value, r.headers) for r in iter_records(data))
        offset = whole[-1][1].next_offset
    return out


def assert_only_segment_files(directory: Path) -> None:
    names = sorted(p.name for p in directory.iterdir())
    bases = sorted({n.split(".")[0] for n in names})
    assert names == sorted(f"{b}{s}" for b in bases for s in (".index", ".log", ".timeindex")), names


def check_recovered(log: Log, w: Written, expected_end: int, *, clean: bool = False) -> None:
    """The reopened log is exactly the first *expected_end* records, and stays usable."""
    assert expected_end >= w.recovery_point, "test bug: damage below the recovery point"
    assert log.next_offset == expected_end
    assert log.recovery_point == (expected_end if clean else min(w.recovery_point, expected_end))
    assert read_back(log) == w.records[:expected_end]
    # Batch by batch as well: same batches (offsets, epochs) as written, each CRC-valid,
    # and indexes exactly what a fresh write of these batches produces.
    disk = [b for _, batches in check_segment_files(w.directory, CONFIG.index_interval_bytes) for b in batches]
    kept = [b for b in w.batches if b.last_offset < expected_end]
    assert [(b.base_offset, b.last_offset, b.leader_epoch, b.records) for b in disk] == [
        (b.base_offset, b.last_offset, b.leader_epoch, b.records) for b in kept
    ]
    assert_only_segment_files(w.directory)

    # Appending continues at the new log end offset.
    rec = Record(0, w.now[0], b"after", b"recovery", (("h", b"1"),))
    info = log.append_as_leader(build_batch([rec, Record(1, w.now[0], None, None)]), 9)
    assert (info.first_offset, info.last_offset) == (expected_end, expected_end + 1)
    tail = read_back(log)[expected_end:]
    assert tail == [
        (expected_end, w.now[0], b"after", b"recovery", (("h", b"1"),)),
        (expected_end + 1, w.now[0], None, None, ()),
    ]
    log.close()
    check_segment_files(w.directory, CONFIG.index_interval_bytes)
    again = reopen(w, clean=True)
    try:
        assert again.next_offset == expected_end + 2
        assert read_back(again)[:expected_end] == w.records[:expected_end]
    finally:
        again.close()


def rp_position(w: Written, base: int, batches: list[DiskBatch]) -> int:
    """The file position in segment *base* from which bytes are not durable."""
    if w.recovery_point <= base:
        return 0
    for b in batches:
        if b.base_offset >= w.recovery_point:
            return b.position
    return sum(b.size for b in batches)


# ============================================================ (a) torn tail


@settings(max_examples=examples(50), **HSETTINGS)
@given(seed=st.integers(0, 2**16), flush_after=st.integers(1, APPENDS - 1), data=st.data())
def test_torn_newest_segment_recovers_to_a_prefix(seed: int, flush_after: int, data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        w = write_and_crash(Path(tmp) / "t-0", seed, flush_after)
        base, batches = w.segments[-1]
        path = w.seg_path(base)
        original = path.read_bytes()
        cut = data.draw(st.integers(rp_position(w, base, batches), len(original)), label="cut")
        zeros = data.draw(st.sampled_from([0, 0, 1, 12, 61, 4096]), label="zero tail")
        with open(path, "r+b") as f:
            f.truncate(cut)
            f.seek(cut)
            f.write(b"\0" * zeros)
        damaged = path.read_bytes()
        # The batches that survived intact (a zero written after the cut may restore a zero byte).
        expected_end = base
        for b in batches:
            span = slice(b.position, b.position + b.size)
            if damaged[span] != original[span]:
                break
            expected_end = b.last_offset + 1

        log = reopen(w)
        check_recovered(log, w, expected_end)


# ============================================================ (b) flipped bytes


def protected_positions(w: Written) -> list[tuple[int, int, int]]:
    """(segment index, file position, batch index) of every CRC/length/magic-protected byte
    that is not durable."""
    out = []
    batch_index = 0
    for si, (base, batches) in enumerate(w.segments):
        start = rp_position(w, base, batches)
        for b in batches:
            if b.position >= start:
                for rel in range(8, 12):  # batchLength
                    out.append((si, b.position + rel, batch_index))
                for rel in range(16, b.size):  # magic, crc, attributes .. records
                    out.append((si, b.position + rel, batch_index))
            batch_index += 1
    return out


@settings(max_examples=examples(50), **HSETTINGS)
@given(seed=st.integers(0, 2**16), flush_after=st.integers(1, APPENDS - 1), data=st.data())
def test_flipped_bytes_after_the_recovery_point_are_cut(seed: int, flush_after: int, data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        w = write_and_crash(Path(tmp) / "t-0", seed, flush_after)
        candidates = protected_positions(w)
        picks = data.draw(
            st.lists(st.integers(0, len(candidates) - 1), min_size=1, max_size=3, unique=True), label="flips"
        )
        first_bad = min(candidates[i][2] for i in picks)
        for i in picks:
            si, pos, _ = candidates[i]
            mask = data.draw(st.integers(1, 255), label="mask")
            path = w.seg_path(w.segments[si][0])
            raw = bytearray(path.read_bytes())
            raw[pos] ^= mask
            path.write_bytes(raw)
        bad = w.batches[first_bad]
        expected_end = bad.base_offset
        bad_segment = next(si for si, (_, bs) in enumerate(w.segments) if bad in bs)

        log = reopen(w)
        assert [s.base_offset for s in log.segments] == [base for base, _ in w.segments[: bad_segment + 1]]
        check_recovered(log, w, expected_end)


# ============================================================ (c) damaged indexes


def damage_index(path: Path, entry: int, mode: str, rnd: random.Random) -> None:
    data = path.read_bytes()
    if mode == "delete":
        path.unlink()
    elif mode == "torn":
        path.write_bytes(data + rnd.randbytes(rnd.randrange(1, entry)))
    elif mode == "zero tail":
        # Zeros after real entries (a file whose size reached the disk before its data).  On an
        # empty file a zero entry (ts 0 or position 0 -> base offset) is as plausible as a real
        # one, and harmless, so it is not a detectable corruption.
        if data:
            path.write_bytes(data + b"\0" * entry * rnd.randrange(1, 3))
        else:
            path.unlink()
    elif mode == "random":
        path.write_bytes(rnd.randbytes(max(len(data), entry)))
    elif mode == "reversed":
        entries = [data[i : i + entry] for i in range(0, len(data), entry)]
        if len(entries) < 2 or entries == entries[::-1]:
            entries = [rnd.randbytes(entry)] + entries
        path.write_bytes(b"".join(reversed(entries)))
    else:
        raise AssertionError(mode)


MODES = ["delete", "torn", "zero tail", "random", "reversed"]


@settings(max_examples=examples(40), **HSETTINGS)
@given(
    seed=st.integers(0, 2**16),
    flush_after=st.integers(1, APPENDS - 1),
    clean=st.booleans(),
    data=st.data(),
)
def test_damaged_indexes_are_rebuilt(seed: int, flush_after: int, clean: bool, data: st.DataObject) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        w = write_and_crash(Path(tmp) / "t-0", seed, flush_after)
        originals = {
            p.name: p.read_bytes() for p in w.directory.iterdir() if p.suffix in (".index", ".timeindex")
        }
        damage = data.draw(
            st.lists(
                st.tuples(
                    st.integers(0, len(w.segments) - 1),
                    st.sampled_from([".index", ".timeindex"]),
                    st.sampled_from(MODES),
                ),
                min_size=1,
                max_size=4,
                unique_by=lambda t: (t[0], t[1]),
            ),
            label="damage",
        )
        rnd = random.Random(seed)
        for si, suffix, mode in damage:
            damage_index(w.seg_path(w.segments[si][0], suffix), 8 if suffix == ".index" else 12, mode, rnd)

        log = reopen(w, clean=clean)
        try:
            assert log.next_offset == len(w.records)
            rebuilt = {
                p.name: p.read_bytes() for p in w.directory.iterdir() if p.suffix in (".index", ".timeindex")
            }
            assert rebuilt == originals, "indexes differ from those of the original write"
            # Lookups by time answer as a scan of the records would.
            for ts in sorted({r[1] for r in w.records})[:: max(1, len(w.records) // 25)]:
                want = next(r[0] for r in w.records if r[1] >= ts)
                got = log.offset_for_timestamp(ts)
                assert got is not None and got.offset == want, f"offset_for_timestamp({ts})"
        finally:
            log.close()
        log = reopen(w, clean=clean)
        check_recovered(log, w, len(w.records), clean=clean)


def test_random_time_index_of_a_durable_segment_is_detected(tmp_path: Path) -> None:
    """A ``.timeindex`` overwritten with one random entry passes the ordering checks half the time;
    its offset lies outside the segment, so the segment must rebuild it (here: a clean shutdown)."""
    w = write_and_crash(tmp_path / "t-0", seed=4, flush_after=APPENDS - 1)
    base, batches = w.segments[0]
    path = w.seg_path(base, ".timeindex")
    original = path.read_bytes()
    # A plausible entry (timestamp inside the segment's range, non-negative relative offset)
    # that names an offset far beyond the segment.
    path.write_bytes(struct.pack(">qi", batches[0].max_timestamp, 1_000_000))
    log = reopen(w, clean=True)
    try:
        seg = log.segments[0]
        assert all(base <= o < seg.next_offset for _, o in seg.time_index.entries()), seg.time_index.entries()
        ts = batches[len(batches) // 2].max_timestamp
        want = next(r[0] for r in w.records if r[1] >= ts)
        got = log.offset_for_timestamp(ts)
        assert got is not None and got.offset == want
    finally:
        log.close()
    assert path.read_bytes() == original


def test_rebuilt_index_keeps_no_stale_entries_on_disk(tmp_path: Path) -> None:
    """An index whose load failed is rebuilt from scratch, on disk too.

    The crash lost the newest segment's data but not its ``.index``; recovery
    rebuilds the (now empty) index.  If the stale entries stay in the file, a
    later clean restart trusts them once the segment has grown past their
    positions, scans from the middle of a batch, and puts the log end offset
    back: the next append reuses offsets.
    """
    w = write_and_crash(tmp_path / "t-0", seed=0, flush_after=5)
    base, batches = w.segments[-1]
    assert w.recovery_point < base
    stale = read_index(w.seg_path(base, ".index"))
    assert stale
    with open(w.seg_path(base), "r+b") as f:
        f.truncate(0)

    log = reopen(w)
    assert log.next_offset == base
    # One batch (so no index entry of its own) reaching past every stale position.
    value = bytes(max(p for _, p in stale) + 100)
    log.append_as_leader(build_batch([Record(i, w.now[0], None, value[: len(value) // 4]) for i in range(4)]), 5)
    end = log.next_offset
    assert end == base + 4
    log.close()

    log = reopen(w, clean=True)
    try:
        assert log.next_offset == end, "the log end offset went back after a clean restart"
        info = log.append_as_leader(build_batch([Record(0, w.now[0], b"k", b"v")]), 5)
        assert info.first_offset == end, "offsets reused"
    finally:
        log.close()
    check_segment_files(w.directory, CONFIG.index_interval_bytes)


# ============================================================ corrupt baseOffset


@pytest.mark.parametrize(
    "byte,mask",
    [pytest.param(0, 0x80, id="negative"), pytest.param(3, 0x01, id="beyond-int32-of-base")],
)
@pytest.mark.parametrize("which", ["first-of-newest-segment", "middle-of-newest-segment"])
def test_base_offset_outside_the_segment_is_treated_as_corrupt(tmp_path: Path, byte: int, mask: int, which: str) -> None:
    """A batch whose baseOffset lies outside its segment's range (below the base, or more than
    Int32.MAX above it — what Kafka's ``ensureOffsetInRange`` refuses) ends the valid data."""
    w = write_and_crash(tmp_path / "t-0", seed=8, flush_after=5)
    base, batches = w.segments[-1]
    assert w.recovery_point < base
    assert len(batches) >= 3
    victim = batches[0] if which.startswith("first") else batches[len(batches) // 2]
    path = w.seg_path(base)
    raw = bytearray(path.read_bytes())
    raw[victim.position + byte] ^= mask
    path.write_bytes(raw)

    log = reopen(w)  # must not raise
    check_recovered(log, w, victim.base_offset)


# ============================================================ clean and unclean reopen of intact files


def test_clean_shutdown_reopens_without_rescanning(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    w = write_and_crash(tmp_path / "t-0", seed=21, flush_after=10, appends=60)
    before = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in w.directory.iterdir()}
    total_log_bytes = sum(len(v[0]) for k, v in before.items() if k.endswith(".log"))

    def no_recover(self, *args, **kwargs):
        raise AssertionError(f"{self} was rescanned after a clean shutdown")

    log_bytes_read = [0]
    real_pread = os.pread

    def counting_pread(fd: int, n: int, pos: int) -> bytes:
        data = real_pread(fd, n, pos)
        if os.readlink(f"/proc/self/fd/{fd}").endswith(".log"):
            log_bytes_read[0] += len(data)
        return data

    monkeypatch.setattr(segment_module.LogSegment, "recover", no_recover)
    monkeypatch.setattr(segment_module.LogSegment, "_rebuild_indexes", no_recover)
    monkeypatch.setattr(segment_module.os, "pread", counting_pread)
    log = reopen(w, clean=True)
    opened_reads = log_bytes_read[0]
    monkeypatch.undo()
    try:
        assert log.next_offset == len(w.records)
        assert log.recovery_point == len(w.records)
        # Only the headers of the batches from each segment's last index entry on were read
        # (plus, per segment, the first batch's header for its rolling timestamp).
        tail_batches = 0
        for base, batches in w.segments:
            index = expected_indexes(base, batches, CONFIG.index_interval_bytes)[0]
            last_indexed = index[-1][1] if index else 0
            tail_batches += sum(1 for b in batches if b.position >= last_indexed)
        assert opened_reads <= 61 * (tail_batches + len(w.segments))
        assert opened_reads < total_log_bytes // 10
        assert read_back(log) == w.records
    finally:
        log.close()
    after = {p.name: (p.read_bytes(), p.stat().st_mtime_ns) for p in w.directory.iterdir()}
    assert after == before, "a clean open rewrote files"


def test_unclean_shutdown_with_intact_files_keeps_everything(tmp_path: Path) -> None:
    w = write_and_crash(tmp_path / "t-0", seed=2, flush_after=3)
    originals = {p.name: p.read_bytes() for p in w.directory.iterdir()}
    log = reopen(w, recovery_point=0)
    assert {p.name: p.read_bytes() for p in w.directory.iterdir()} == originals
    w.recovery_point = 0
    check_recovered(log, w, len(w.records))


# ============================================================ compaction leftovers


def test_cleaned_leftovers_are_deleted(tmp_path: Path) -> None:
    w = write_and_crash(tmp_path / "t-0", seed=13, flush_after=APPENDS - 1)
    base = w.segments[1][0]
    junk = [
        w.seg_path(base, ".log.cleaned"),
        w.seg_path(base, ".index.cleaned"),
        w.seg_path(base, ".timeindex.cleaned"),
        w.seg_path(w.segments[-1][0] + 1000, ".log.cleaned"),
        w.seg_path(w.segments[0][0], ".log.deleted"),
    ]
    for path in junk:
        path.write_bytes(w.seg_path(base).read_bytes()[:500])
    log = reopen(w, clean=True)
    for path in junk:
        assert not path.exists(), path.name
    check_recovered(log, w, len(w.records), clean=True)


@pytest.mark.parametrize(
    "replaced,with_indexes",
    [
        pytest.param(1, False, id="one-segment"),
        pytest.param(2, False, id="two-segments-merged"),
        pytest.param(2, True, id="two-segments-merged-with-swap-indexes"),
    ],
)
def test_swap_file_completes_the_replacement(tmp_path: Path, replaced: int, with_indexes: bool) -> None:
    """``X.log.swap`` is a cleaner's output that had been renamed from ``.cleaned`` when the
    broker died: it replaces ``X.log`` and every old segment it covers (Kafka's
    ``completeSwapOperations``); the old ``X.index``/``X.timeindex`` describe the old file and
    must not be trusted."""
    w = write_and_crash(tmp_path / "t-0", seed=17, flush_after=APPENDS - 1, appends=70)

    def cleaner_output(first: int) -> tuple[DiskBatch, list[DiskBatch], bytes]:
        """Segments first .. first+replaced-1 merged, minus every record of their first batch."""
        covered = [(sb, b) for sb, bs in w.segments[first : first + replaced] for b in bs]
        content = b"".join(w.seg_path(sb).read_bytes()[b.position : b.position + b.size] for sb, b in covered[1:])
        return covered[0][1], [b for _, b in covered[1:]], content

    def stale_index_looks_sane(first: int) -> bool:
        # The old X.index must pass a load (in order, inside the new file) as it does after a
        # real compaction that removed little, and point into the middle of a batch.
        base, batches = w.segments[first]
        stale = [p for _, p in expected_indexes(base, batches, CONFIG.index_interval_bytes)[0]]
        _, kept, content = cleaner_output(first)
        starts, pos = set(), 0
        for b in kept:
            starts.add(pos)
            pos += b.size
        return bool(stale) and max(stale) < len(content) and not set(stale) <= starts

    # Never the active segment, as in Kafka.
    first = next(i for i in range(1, len(w.segments) - replaced) if stale_index_looks_sane(i))
    base, _ = w.segments[first]
    dropped, kept, content = cleaner_output(first)
    w.seg_path(base, ".log.swap").write_bytes(content)
    if with_indexes:
        positions, pos = [], 0
        for b in kept:
            positions.append(replace(b, position=pos))
            pos += b.size
        index, time_index = expected_indexes(base, positions, CONFIG.index_interval_bytes)
        w.seg_path(base, ".index.swap").write_bytes(b"".join(struct.pack(">ii", *e) for e in index))
        w.seg_path(base, ".timeindex.swap").write_bytes(b"".join(struct.pack(">qi", *e) for e in time_index))

    log = reopen(w, clean=True)
    try:
        assert not list(w.directory.glob("*.swap"))
        expected_bases = [sb for sb, _ in w.segments[:first]] + [base] + [sb for sb, _ in w.segments[first + replaced :]]
        assert [s.base_offset for s in log.segments] == expected_bases
        assert w.seg_path(base).read_bytes() == content
        assert log.next_offset == len(w.records)
        gone = set(range(dropped.base_offset, dropped.last_offset + 1))
        want = [r for r in w.records if r[0] not in gone]
        assert read_back(log) == want
        assert read_back(log, max_bytes=1) == want  # one batch per fetch: every lookup goes through the index
        for b in kept:  # a fetch at any offset of a kept batch starts with that batch
            for offset in (b.base_offset, b.last_offset):
                got = kafka_batches(_whole(log.read(offset, 1).read()))
                assert got[0].base_offset == b.base_offset, f"fetch at {offset}"
        segments = check_segment_files(w.directory, CONFIG.index_interval_bytes, compacted=True)
        assert [b.base_offset for b in segments[first][1]] == [b.base_offset for b in kept]
    finally:
        log.close()


def _whole(data: bytes) -> bytes:
    """*data* without a trailing partial batch."""
    pos, h = list(iter_batches(data))[-1]
    return data[: pos + h.size]
