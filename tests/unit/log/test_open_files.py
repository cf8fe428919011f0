"""Descriptors of segment files (``mafka.log.open_files``): opened on use, bounded, valid while used.

An idle partition must cost no open descriptor: creating logs, loading them
at startup (clean or after a crash) and closing them leaves the process's
descriptor count where it was.  Appending keeps the written (active)
segment's ``.log`` open; reading other segments keeps theirs only in a
bounded LRU; a region handed out for ``sendfile`` keeps its descriptor
until it is dropped; index files never keep one.
"""

from __future__ import annotations

import os
import struct
from collections.abc import Iterator
from pathlib import Path

import pytest

from mafka.log.config import LogConfig
from mafka.log.log import Log
from mafka.log.manager import LogManager
from mafka.log.open_files import OPEN_LOG_FILES, LogFileHandle, OpenLogFiles, SegmentLogFile
from mafka.wire.records import Record, build_batch, iter_records

NOW = 1_700_000_000_000
CONFIG = LogConfig(segment_bytes=2000, index_interval_bytes=100)
#: descriptors a test may leave open beyond the ones it checks for (the log dir's .lock file, …)
SLACK = 8


def fd_count() -> int:
    return len(os.listdir("/proc/self/fd"))


def open_paths(root: Path) -> list[str]:
    """The files under *root* this process has a descriptor of (but log dirs' ``.lock`` files)."""
    found = []
    for fd in os.listdir("/proc/self/fd"):
        try:
            target = os.readlink(f"/proc/self/fd/{fd}")
        except OSError:
            continue
        if target.startswith(str(root)) and not target.endswith("/.lock"):
            found.append(target)
    return sorted(found)


def batch(i: int, value: bytes = b"v" * 60, n: int = 2) -> bytes:
    return build_batch([Record(k, NOW + i, b"k%d" % i, value + b"%d" % k) for k in range(n)])


def values(log: Log, start: int = 0, max_bytes: int = 1 << 20) -> list[bytes | None]:
    """Every value from *start* to the log end, fetched with Log.read."""
    out: list[bytes | None] = []
    offset = start
    while offset < log.next_offset:
        info = log.read(offset, max_bytes)
        assert info.region is not None
        records = [r for r in iter_records(info.read()) if r.offset >= offset]
        assert records, f"nothing at {offset}"
        out.extend(r.value for r in records)
        offset = records[-1].offset + 1
    return out


@pytest.fixture
def small_lru() -> Iterator[OpenLogFiles]:
    """The process's LRU with a capacity of 4 for the test."""
    before = OPEN_LOG_FILES.capacity
    OPEN_LOG_FILES.capacity = 4
    try:
        yield OPEN_LOG_FILES
    finally:
        OPEN_LOG_FILES.capacity = before


def manager(root: Path, **kw) -> LogManager:
    m = LogManager([root / "data"], CONFIG, lambda: NOW, broker_id=1, cluster_id="c", **kw)
    m.startup()
    return m


# ============================================================ idle logs


def test_thousands_of_new_and_reloaded_logs_hold_no_descriptor(tmp_path: Path) -> None:
    n = 2000
    base = fd_count()
    m = manager(tmp_path)
    for i in range(n):
        m.get_or_create_log(f"t{i // 10}", i % 10)
    assert fd_count() - base < SLACK, "creating a log left descriptors open"
    assert open_paths(tmp_path) == []
    # The files exist, as Kafka creates them.
    assert sorted(p.name for p in (tmp_path / "data" / "t0-0").iterdir() if p.suffix != ".checkpoint") == [
        "00000000000000000000.index", "00000000000000000000.log", "00000000000000000000.timeindex",
    ]
    m.shutdown()
    assert fd_count() <= base

    # The start-up path: a clean load of every log.
    m = manager(tmp_path)
    assert len(m.logs) == n
    assert fd_count() - base < SLACK, "loading logs left descriptors open"
    m.shutdown()

    # And after a crash: every log recovered from its recovery point.
    m = manager(tmp_path)
    m.abort()
    m = manager(tmp_path)
    assert not m.had_clean_shutdown[tmp_path / "data"]
    assert len(m.logs) == n
    assert fd_count() - base < SLACK, "recovering logs left descriptors open"
    m.shutdown()
    assert fd_count() <= base


def test_loading_logs_with_data_opens_nothing(tmp_path: Path) -> None:
    logs = [Log.open(tmp_path / f"t-{i}", CONFIG, lambda: NOW) for i in range(20)]
    for i, log in enumerate(logs):
        for j in range(30):
            log.append_as_leader(batch(j), 0)
        assert len(log.segments) > 3, "test bug: several segments wanted"
        log.close()
        assert open_paths(tmp_path / f"t-{i}") == []
    base = fd_count()
    for clean in (True, False):
        reopened = [
            Log.open(tmp_path / f"t-{i}", CONFIG, lambda: NOW, had_clean_shutdown=clean, recovery_point=0) for i in range(20)
        ]
        assert open_paths(tmp_path) == [] and fd_count() <= base
        assert all(not s.files_open for log in reopened for s in log.segments)
        assert values(reopened[3]) == [b"v" * 60 + b"%d" % k for _ in range(30) for k in range(2)]
        for log in reopened:
            log.close()
        assert open_paths(tmp_path) == []


# ============================================================ appends and reads


def test_appends_keep_only_the_active_log_file_open_and_reads_stay_bounded(tmp_path: Path, small_lru: OpenLogFiles) -> None:
    m = manager(tmp_path)
    logs = [m.get_or_create_log("t", i) for i in range(200)]
    base = fd_count()
    written = logs[:5]
    for j in range(40):
        for log in written:
            log.append_as_leader(batch(j), 0)
    # One descriptor per written partition: its active segment's .log, never an index.
    paths = open_paths(tmp_path / "data")
    assert all(p.endswith(".log") for p in paths), paths
    actives = {str(log.active_segment.log_path) for log in written}
    assert actives <= set(paths)
    assert len(paths) <= len(written) + small_lru.capacity
    for log in written:
        assert len(log.segments) > 3
        assert values(log) == [b"v" * 60 + b"%d" % k for _ in range(40) for k in range(2)]
    # Reading every old segment of every written log (a consumer catching up) and the
    # empty logs: the non-active segments' descriptors stay within the LRU's capacity.
    for log in logs:
        for seg in log.segments:
            if seg.size:
                log.read(seg.base_offset, 100)
    assert len(small_lru) <= small_lru.capacity
    assert fd_count() - base <= len(written) + small_lru.capacity + SLACK
    paths = open_paths(tmp_path / "data")
    assert actives <= set(paths) and len(paths) <= len(written) + small_lru.capacity
    m.shutdown()
    assert fd_count() < base


def test_a_rolled_segment_is_read_and_closed_again(tmp_path: Path, small_lru: OpenLogFiles) -> None:
    log = Log.open(tmp_path / "t-0", CONFIG, lambda: NOW)
    for j in range(100):
        log.append_as_leader(batch(j), 0)
    old = log.segments[:-1]
    assert len(old) > small_lru.capacity + 2
    # Rolled segments were sealed: their handles went to the LRU, which kept only the newest.
    assert sum(s.files_open for s in old) <= small_lru.capacity
    assert log.active_segment.files_open
    # Read every old segment twice; each read returns the right batch.
    for _ in range(2):
        for seg in old:
            info = log.read(seg.base_offset, 10)
            first = next(iter_records(info.read()))
            assert first.offset == seg.base_offset
        assert sum(s.files_open for s in old) <= small_lru.capacity
        assert len(open_paths(tmp_path)) <= small_lru.capacity + 1
    # Offsets by time and the largest timestamp read old segments too.
    found = log.offset_for_timestamp(NOW + 3)
    assert found is not None and found.offset == 6
    assert log.max_timestamp_and_offset() is not None
    log.close()
    assert len(open_paths(tmp_path)) == 1  # the last region read is still referenced: its file stays open
    del info
    assert open_paths(tmp_path) == []


def test_a_region_keeps_its_descriptor_until_it_is_dropped(tmp_path: Path, small_lru: OpenLogFiles) -> None:
    log = Log.open(tmp_path / "t-0", CONFIG, lambda: NOW)
    for j in range(60):
        log.append_as_leader(batch(j), 0)
    first = log.read(0, 1 << 20).region
    assert first is not None and first.handle is not None
    expected = first.read()
    # Evict its segment's handle: the region's descriptor must still name the same file.
    for seg in log.segments[1:-1]:
        log.read(seg.base_offset, 10)
    assert not log.segments[0].files_open
    assert os.readlink(f"/proc/self/fd/{first.fd}").endswith(log.segments[0].log_path.name)
    assert first.read() == expected
    assert os.pread(first.fd, first.length, first.position) == expected  # what sendfile reads
    # The segment takes the same handle back while the region is alive (no second descriptor).
    again = log.read(0, 1 << 20).region
    assert again is not None and again.fd == first.fd
    # Deleted by retention and closed: the region is still readable until dropped.
    log.increment_log_start_offset(log.segments[1].base_offset)
    assert log.delete_old_segments(log.next_offset) == 1
    log.delete_pending(force=True)
    assert log.segments[0].base_offset > 0
    assert first.read() == expected
    fd = first.fd
    del first, again
    assert not any(p.endswith("00000000000000000000.log.deleted") for p in open_paths(tmp_path))
    assert not os.path.exists(f"/proc/self/fd/{fd}") or "00000000000000000000" not in os.readlink(f"/proc/self/fd/{fd}")
    log.close()
    assert open_paths(tmp_path) == []


def test_closed_segments_refuse_io_as_closed_descriptors_did(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", CONFIG, lambda: NOW)
    log.append_as_leader(batch(0), 0)
    seg = log.active_segment
    log.close()
    assert seg.fd == -1 and seg.closed
    with pytest.raises(OSError):
        seg.read_at(0, 10)
    with pytest.raises(OSError):
        seg.flush()
    assert open_paths(tmp_path) == []


# ============================================================ the LRU itself


def test_lru_evicts_the_least_recently_used_and_never_a_writer(tmp_path: Path) -> None:
    cache = OpenLogFiles(capacity=2)
    files = []
    for i in range(4):
        path = tmp_path / f"{i}.log"
        path.write_bytes(b"x" * 10)
        files.append(SegmentLogFile(path, cache))
    writer = files[3]
    writer.start_writing()
    for f in files[:3]:
        f.reader()
    assert [f.is_open for f in files] == [False, True, True, True]
    files[1].reader()  # most recent now
    files[0].reader()
    assert [f.is_open for f in files] == [True, True, False, True]
    assert len(cache) == 2 and writer.write_fd >= 0
    writer.seal()  # joins the LRU as the most recent
    assert writer.write_fd == -1 and len(cache) == 2
    assert [f.is_open for f in files] == [True, False, False, True]
    for f in files:
        f.close()
    assert open_paths(tmp_path) == []
    with pytest.raises(OSError):
        files[0].reader()


def test_a_handle_closes_when_its_last_reference_goes(tmp_path: Path) -> None:
    path = tmp_path / "x.log"
    path.write_bytes(b"abc")
    handle = LogFileHandle(path)
    assert open_paths(tmp_path) == [str(path)]
    del handle
    assert open_paths(tmp_path) == []
    with pytest.raises(FileNotFoundError):
        LogFileHandle(tmp_path / "missing.log")  # never created on the way


# ============================================================ recovery, renames, flush


@pytest.mark.parametrize("damage", ["deleted", "truncated", "torn"])
def test_recovery_rebuilds_damaged_indexes_without_keeping_files_open(tmp_path: Path, damage: str) -> None:
    directory = tmp_path / "t-0"
    log = Log.open(directory, CONFIG, lambda: NOW)
    for j in range(60):
        log.append_as_leader(batch(j), 0)
    log.flush()
    want = values(log)
    indexes = {p.name: p.read_bytes() for p in directory.iterdir() if p.suffix in (".index", ".timeindex")}
    assert any(indexes.values())
    bases = [s.base_offset for s in log.segments]
    end = log.next_offset
    log.close()
    for name, data in indexes.items():
        path = directory / name
        if damage == "deleted":
            path.unlink()
        elif damage == "truncated":
            path.write_bytes(data[: len(data) // 2])  # whole entries lost: found by the tail scan, or harmless
        else:
            path.write_bytes(data + b"\x01\x02\x03")
    for clean in (False, True):
        log = Log.open(directory, CONFIG, lambda: NOW, had_clean_shutdown=clean, recovery_point=0)
        assert open_paths(tmp_path) == []
        assert [s.base_offset for s in log.segments] == bases and log.next_offset == end
        assert values(log) == want
        assert values(log, max_bytes=1) == want  # one batch a read: every lookup goes through the index
        log.append_as_leader(batch(99), 0)
        log.close()
        log = Log.open(directory, CONFIG, lambda: NOW)
        assert log.next_offset == end + 2
        log.truncate_to(end)
        log.close()
    if damage != "truncated":  # a half index is a valid sparse index, not necessarily rebuilt
        rebuilt = {p.name: p.read_bytes() for p in directory.iterdir() if p.suffix in (".index", ".timeindex")}
        assert rebuilt == indexes


def test_index_files_are_written_without_a_kept_descriptor(tmp_path: Path) -> None:
    log = Log.open(tmp_path / "t-0", LogConfig(index_interval_bytes=0), lambda: NOW)
    for j in range(700):  # more than one buffered write of .index entries (4096 bytes)
        log.append_as_leader(batch(j, b"", 1), 0)
    assert open_paths(tmp_path) == [str(log.active_segment.log_path)]
    index = tmp_path / "t-0" / "00000000000000000000.index"
    assert index.stat().st_size > 0
    log.flush()
    entries = log.active_segment.index.entries()
    assert len(entries) > 512 and index.stat().st_size == 8 * len(entries)
    assert struct.unpack(">ii", index.read_bytes()[-8:]) == entries[-1]
    log.close()
    assert open_paths(tmp_path) == []


def test_renamed_log_dir_reopens_files_by_their_new_paths(tmp_path: Path, small_lru: OpenLogFiles) -> None:
    log = Log.open(tmp_path / "t-0", CONFIG, lambda: NOW)
    for j in range(60):
        log.append_as_leader(batch(j), 0)
    want = values(log)
    for seg in log.segments:  # nothing but the active segment may stay open
        log.read(seg.base_offset, 10)
    log.rename_dir(tmp_path / "t-0.abc-delete")
    assert values(log) == want
    assert all(p.startswith(str(tmp_path / "t-0.abc-delete")) for p in open_paths(tmp_path))
    log.append_as_leader(batch(100), 0)
    log.flush()
    log.delete()
    assert open_paths(tmp_path) == [] and not (tmp_path / "t-0.abc-delete").exists()
