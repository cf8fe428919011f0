"""Hot/cold segment placement: which segments move, the crash-safe move, and logs across two dirs."""

from __future__ import annotations

import errno
import os
from pathlib import Path

import pytest

from mafka.log import tiering
from mafka.log.config import LogConfig
from mafka.log.log import Log
from mafka.wire.records import Record, build_batch, iter_records


class Clock:
    def __init__(self, now: int = 10_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def batch(value: bytes, ts: int) -> bytes:
    return build_batch([Record(offset=0, timestamp=ts, key=b"k", value=value)])


def filled(tmp_path: Path, n: int = 12, **config) -> tuple[Log, Path, Clock]:
    """A log of *n* one-record batches, 4 per segment, every segment flushed."""
    clock = Clock()
    cold = tmp_path / "cold" / "t-0"
    log = Log.open(tmp_path / "hot" / "t-0", LogConfig(segment_bytes=4 * len(batch(b"v00", 0)) + 1, **config), clock,
                   cold_directory=cold)
    for i in range(n):
        log.append_as_leader(batch(b"v%02d" % i, 1_000_000 + i * 1000), 0)
    log.flush()
    return log, cold, clock


def values(log: Log) -> list[bytes]:
    out, offset = [], log.log_start_offset
    while offset < log.next_offset:
        data = log.read(offset, 1 << 20).read()
        recs = list(iter_records(data))
        out += [r.value for r in recs]
        offset = recs[-1].offset + 1
    return out


EXPECTED = [b"v%02d" % i for i in range(12)]


def test_old_segments_and_those_far_from_the_end_are_chosen_never_the_active_one(tmp_path):
    log, _, clock = filled(tmp_path)
    assert [s.base_offset for s in log.segments] == [0, 4, 8]
    # by age: segment 0 ends at ts 1,003,000, segment 4 at 1,007,000
    clock.now = 1_005_500
    chosen = tiering.segments_to_move(log.segments, log.recovery_point, clock.now, 2000, -1)
    assert [s.base_offset for s in chosen] == [0]
    chosen = tiering.segments_to_move(log.segments, log.recovery_point, 10**12, 2000, -1)
    assert [s.base_offset for s in chosen] == [0, 4]  # the active segment stays, however old
    # by bytes: keep two segments' worth at the end
    two = log.segments[-1].size + log.segments[-2].size
    chosen = tiering.segments_to_move(log.segments, log.recovery_point, clock.now, -1, two)
    assert [s.base_offset for s in chosen] == [0]
    # never past the recovery point (unflushed data is never moved)
    assert tiering.segments_to_move(log.segments, 4, 10**12, 0, -1) == [log.segments[0]]
    assert tiering.segments_to_move(log.segments, 3, 10**12, 0, -1) == []
    # both limits off
    assert tiering.segments_to_move(log.segments, log.recovery_point, 10**12, -1, -1) == []


def test_a_moved_segment_is_read_from_the_cold_dir_and_the_log_reopens_across_both(tmp_path):
    log, cold, clock = filled(tmp_path)
    first = log.segments[0]
    moved = tiering.move_segment(log, first, cold)
    assert moved.cold and moved.directory == cold and log.segments[0] is moved
    assert (cold / "00000000000000000000.log").exists() and (cold / "00000000000000000000.index").exists()
    assert not (log.directory / "00000000000000000000.log").exists()  # renamed .deleted, closed later
    assert log.read(0, 1 << 20).region.cold and not log.read(4, 1 << 20).region.cold
    assert values(log) == EXPECTED
    log.append_as_leader(batch(b"new", 2_000_000), 0)
    log.flush()
    log.close()
    again = Log.open(log.directory, log.config, clock, cold_directory=cold, recovery_point=log.next_offset)
    assert [s.cold for s in again.segments] == [True, False, False, False][: len(again.segments)]
    assert values(again) == [*EXPECTED, b"new"]
    assert not list(log.directory.glob("*.deleted"))


@pytest.mark.parametrize("crash_after", ["copied", "indexes", "switched", "retired"])
def test_a_crash_at_any_step_leaves_exactly_one_valid_copy(tmp_path, crash_after):
    log, cold, clock = filled(tmp_path)
    seg = log.segments[1]
    pid = os.fork()
    if pid == 0:  # the crashing process: dies without any cleanup, as under SIGKILL
        def step(name: str) -> None:
            if name == crash_after:
                os._exit(0)
        try:
            tiering.move_segment(log, seg, cold, on_step=step)
        finally:
            os._exit(1)
    _, status = os.waitpid(pid, 0)
    assert os.waitstatus_to_exitcode(status) == 0
    log.close()
    again = Log.open(log.directory, log.config, clock, cold_directory=cold, recovery_point=0, had_clean_shutdown=False)
    name = "00000000000000000004.log"
    copies = [d for d in (log.directory, cold) if (d / name).exists()]
    assert len(copies) == 1
    assert copies == ([log.directory] if crash_after in ("copied", "indexes") else [cold])
    assert values(again) == EXPECTED
    assert not list(cold.glob("*.moving"))
    leftovers = [p.name for p in cold.iterdir() if not (p.name.startswith("00000000000000000004."))]
    assert leftovers == []


def test_a_segment_changed_during_the_copy_stays_hot(tmp_path):
    log, cold, _ = filled(tmp_path)
    seg = log.segments[1]

    def truncate_meanwhile(name: str) -> None:
        if name == "copied":
            log.truncate_to(6)

    with pytest.raises(tiering.MoveAborted):
        tiering.move_segment(log, seg, cold, on_step=truncate_meanwhile)
    assert list(cold.iterdir()) == []
    assert values(log) == EXPECTED[:6]


def test_a_full_cold_dir_leaves_the_segment_hot_and_no_partial_copy(tmp_path, monkeypatch):
    log, cold, _ = filled(tmp_path)
    real = tiering._copy_file
    calls = []

    def copy_then_fill(source, target):
        calls.append(target)
        if target.name.startswith("00000000000000000000.log"):
            target.write_bytes(b"partial")
            raise OSError(errno.ENOSPC, "No space left on device")
        real(source, target)

    monkeypatch.setattr(tiering, "_copy_file", copy_then_fill)
    with pytest.raises(OSError) as caught:
        tiering.move_segment(log, log.segments[0], cold)
    assert tiering.is_disk_full(caught.value)
    assert list(cold.iterdir()) == [] and calls[-1].name == "00000000000000000000.log.moving"
    assert not log.segments[0].cold and values(log) == EXPECTED


def test_renaming_and_deleting_a_log_take_its_cold_part_along(tmp_path):
    log, cold, _ = filled(tmp_path)
    tiering.move_segment(log, log.segments[0], cold)
    log.rename_dir(tmp_path / "hot" / "t-0.abc-delete")
    assert not cold.exists() and (tmp_path / "cold" / "t-0.abc-delete" / "00000000000000000000.log").exists()
    assert values(log) == EXPECTED
    log.delete()
    assert list((tmp_path / "cold").iterdir()) == [] and list((tmp_path / "hot").iterdir()) == []


def test_truncation_and_retention_reach_into_the_cold_dir(tmp_path):
    log, cold, _ = filled(tmp_path)
    tiering.move_segment(log, log.segments[0], cold)
    tiering.move_segment(log, log.segments[1], cold)
    log.truncate_to(6)
    assert values(log) == EXPECTED[:6]
    assert [s.cold for s in log.segments][:2] == [True, True]
    log.config = LogConfig(segment_bytes=log.config.segment_bytes, retention_bytes=0, file_delete_delay_ms=0)
    log.delete_old_segments(high_watermark=6)
    log.delete_pending(force=True)
    assert not (cold / "00000000000000000000.log").exists()


def test_a_log_deleted_during_the_copy_aborts_the_move_not_the_cold_dir(tmp_path, monkeypatch):
    log, cold, _ = filled(tmp_path)
    real = tiering._copy_file

    def copy_then_delete(source, target):
        real(source, target)
        if source.name.endswith(".index"):
            log.rename_dir(tmp_path / "hot" / "t-0.x-delete")  # topic deletion renames the dir

    monkeypatch.setattr(tiering, "_copy_file", copy_then_delete)
    with pytest.raises(tiering.MoveAborted):
        tiering.move_segment(log, log.segments[0], cold)
    assert not list(cold.glob("*.moving"))
