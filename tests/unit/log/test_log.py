"""Targeted Log behaviours: rolls, read bounds, retention limits, validation, flushing."""

from __future__ import annotations

import pytest

from mafka.errors import InvalidRecordError, MessageTooLargeError, OffsetOutOfRangeError
from mafka.log.config import LogConfig
from mafka.log.log import Log, UnexpectedAppendOffsetError
from mafka.wire.batch import BatchHeader
from mafka.wire.records import Record, build_batch, iter_records


class Clock:
    def __init__(self, now: int = 1_000_000) -> None:
        self.now = now

    def __call__(self) -> int:
        return self.now


def batch(n: int = 1, *, ts: int = 1_000_000, value: bytes = b"v", base: int = 0) -> bytes:
    return build_batch([Record(offset=base + i, timestamp=ts + i, key=b"k", value=value) for i in range(n)], base_offset=base)


def open_log(tmp_path, clock=None, **config) -> Log:
    return Log.open(tmp_path / "t-0", LogConfig(**config), clock or Clock())


def test_roll_on_segment_bytes(tmp_path):
    log = open_log(tmp_path, segment_bytes=500)
    for _ in range(10):
        log.append_as_leader(batch(value=b"x" * 100), 0)
    assert len(log.segments) > 1
    assert all(s.size <= 500 for s in log.segments)
    assert [s.base_offset for s in log.segments] == sorted({s.base_offset for s in log.segments})


def test_roll_on_segment_ms_uses_batch_timestamps(tmp_path):
    log = open_log(tmp_path, segment_ms=1000)
    log.append_as_leader(batch(ts=5000), 0)
    log.append_as_leader(batch(ts=5900), 0)
    assert len(log.segments) == 1
    log.append_as_leader(batch(ts=6100), 0)
    assert [s.base_offset for s in log.segments] == [0, 2]


def test_roll_when_the_index_is_full(tmp_path):
    log = open_log(tmp_path, segment_index_bytes=16, index_interval_bytes=0)  # two index entries
    for _ in range(6):
        log.append_as_leader(batch(), 0)
    assert len(log.segments) >= 2
    assert all(len(s.index) <= 2 for s in log.segments)


def test_roll_on_relative_offset_overflow(tmp_path):
    log = open_log(tmp_path)
    log.append_as_follower(batch(base=0))
    far = 2**31 + 10
    log.append_as_follower(batch(base=far))
    assert [s.base_offset for s in log.segments] == [0, far]
    assert log.next_offset == far + 1


def test_read_is_bounded_by_max_offset_and_returns_one_whole_batch(tmp_path):
    log = open_log(tmp_path)
    for _ in range(5):
        log.append_as_leader(batch(3, value=b"x" * 50), 0)
    info = log.read(3, 1, max_offset=9)  # KIP-74: the batch holding offset 3, whole
    assert [r.offset for r in iter_records(info.read())] == [3, 4, 5]
    info = log.read(0, 1 << 20, max_offset=9)
    assert [r.offset for r in iter_records(info.read())] == list(range(9))
    assert log.read(9, 1 << 20, max_offset=9).region is None
    with pytest.raises(OffsetOutOfRangeError):
        log.read(16, 100)


def test_read_inside_a_batch_returns_the_batch_from_its_start(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(batch(10), 0)
    region = log.read(7, 1 << 20).region
    assert BatchHeader(region.read()).base_offset == 0


def test_offset_for_timestamp_finds_the_first_record_at_or_after(tmp_path):
    log = open_log(tmp_path, segment_bytes=300, index_interval_bytes=50)
    for i in range(20):
        log.append_as_leader(batch(2, ts=1000 + 10 * i), 0)
    hit = log.offset_for_timestamp(1055)
    assert (hit.offset, hit.timestamp) == (12, 1060)
    hit = log.offset_for_timestamp(1001)
    assert (hit.offset, hit.timestamp) == (1, 1001)
    assert log.offset_for_timestamp(99_999) is None
    assert log.offset_for_timestamp(1055, max_offset=12) is None


def test_retention_by_size_deletes_whole_segments_below_the_high_watermark(tmp_path):
    log = open_log(tmp_path, segment_bytes=400, retention_bytes=800)
    for _ in range(20):
        log.append_as_leader(batch(value=b"x" * 100), 0)
    before = len(log.segments)
    assert log.delete_old_segments(high_watermark=0) == 0  # nothing is below the HW
    deleted = log.delete_old_segments(high_watermark=log.next_offset)
    assert deleted > 0 and len(log.segments) == before - deleted
    assert sum(s.size for s in log.segments) - log.segments[0].size < 800
    assert log.log_start_offset == log.segments[0].base_offset
    with pytest.raises(OffsetOutOfRangeError):
        log.read(0, 100)


def test_retention_by_time_keeps_an_empty_active_segment(tmp_path):
    clock = Clock()
    log = open_log(tmp_path, clock, retention_ms=1000)
    log.append_as_leader(batch(ts=clock.now), 0)
    clock.now += 2000
    assert log.delete_old_segments(high_watermark=1) == 1
    assert len(log.segments) == 1 and log.segments[0].size == 0
    assert log.log_start_offset == log.next_offset == 1


def test_deleted_segments_are_removed_after_the_delay(tmp_path):
    clock = Clock()
    log = open_log(tmp_path, clock, retention_ms=1000, file_delete_delay_ms=500)
    log.append_as_leader(batch(ts=clock.now), 0)
    clock.now += 2000
    log.delete_old_segments(high_watermark=1)
    names = sorted(p.name for p in log.directory.iterdir())
    assert "00000000000000000000.log.deleted" in names
    assert log.delete_pending() == 0
    clock.now += 500
    assert log.delete_pending() == 1
    assert not any(n.endswith(".deleted") for n in (p.name for p in log.directory.iterdir()))


def test_follower_appends_must_continue_the_log(tmp_path):
    log = open_log(tmp_path)
    log.append_as_follower(batch(3, base=0))
    with pytest.raises(UnexpectedAppendOffsetError):
        log.append_as_follower(batch(1, base=2))
    with pytest.raises(UnexpectedAppendOffsetError):
        log.append_as_follower(batch(1, base=5) + batch(1, base=5))
    log.append_as_follower(batch(1, base=7))  # a gap, as after compaction
    assert log.next_offset == 8


def test_malformed_and_oversized_appends_are_refused(tmp_path):
    log = open_log(tmp_path, max_message_bytes=200)
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(b"", 0)
    with pytest.raises(InvalidRecordError):
        log.append_as_leader(batch()[:-3], 0)
    with pytest.raises(MessageTooLargeError):
        log.append_as_leader(batch(value=b"x" * 300), 0)
    assert log.next_offset == 0 and log.size == 0


def test_leader_append_patches_offsets_and_epoch_without_touching_the_crc(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(batch(2), 3)
    produced = batch(2)
    log.append_as_leader(produced, 4)
    stored = log.read(2, 1 << 20).read()
    h = BatchHeader(stored)
    assert (h.base_offset, h.partition_leader_epoch) == (2, 4)
    assert stored[16:] == produced[16:]  # everything after the patched header is as produced
    assert log.epoch_cache.entries == [(3, 0), (4, 2)]


def test_log_append_time_rewrites_timestamps(tmp_path):
    clock = Clock(42_000)
    log = open_log(tmp_path, clock, message_timestamp_type="LogAppendTime")
    info = log.append_as_leader(batch(2, ts=5), 0)
    assert info.log_append_time == 42_000
    records = list(iter_records(log.read(0, 1 << 20).read()))
    assert [r.timestamp for r in records] == [42_000, 42_000]


def test_flush_due_follows_flush_messages_and_flush_ms(tmp_path):
    clock = Clock()
    log = open_log(tmp_path, clock, flush_messages=3, flush_ms=10_000)
    log.append_as_leader(batch(2), 0)
    assert log.flush_due() is None
    log.append_as_leader(batch(1), 0)
    assert log.flush_due() == 3
    log.flush(log.flush_due())
    assert log.recovery_point == 3 and log.flush_due() is None
    log.append_as_leader(batch(1), 0)
    clock.now += 10_000
    assert log.flush_due() == 4


def test_truncate_fully_and_start_at(tmp_path):
    log = open_log(tmp_path)
    log.append_as_leader(batch(5), 1)
    log.truncate_fully_and_start_at(100)
    assert (log.log_start_offset, log.next_offset, len(log.segments)) == (100, 100, 1)
    assert log.epoch_cache.entries == []
    info = log.append_as_leader(batch(1), 2)
    assert info.first_offset == 100
