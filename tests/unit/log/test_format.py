"""The on-disk format of a Mafka log, checked with an independent decoder.

Logs are written through :meth:`mafka.log.log.Log.append_as_leader` (several
segments, every codec, keys, null values, headers, idempotent batches) and
the files are then read back byte by byte with kafka-python's record reader
(``kafka.record.memory_records.MemoryRecords``), which shares no code with
Mafka.  Checked:

* ``.log``: v2 batches whose baseOffsets were patched to contiguous offsets
  from 0, whose partitionLeaderEpoch is the epoch given to the append, whose
  CRC validates, and whose records (offsets, timestamps, keys, values,
  headers) are those produced; nothing else in the file;
* names: ``%020d`` of the segment's base offset, which is its first batch's
  baseOffset, with ``.log``, ``.index`` and ``.timeindex``;
* ``.index`` / ``.timeindex``: exactly the entries of the rule documented in
  :mod:`mafka.log.segment` (Kafka's ``LogSegment.append`` per batch), each
  offset entry pointing at the start of a batch whose last offset it names,
  each time entry a growing timestamp naming an offset of its segment;
* a follower fed the leader's bytes writes identical files;
* ``message.timestamp.type=LogAppendTime`` batches as a consumer sees them.

The helpers :func:`kafka_batches` and :func:`check_segment_files` are reused
by ``test_recovery.py``.
"""

from __future__ import annotations

import random
import struct
from dataclasses import dataclass
from pathlib import Path

import pytest
from kafka.record.default_records import DefaultRecordBatch
from kafka.record.memory_records import MemoryRecords

from mafka.log.config import LogConfig
from mafka.log.log import Log
from mafka.wire.records import Record, build_batch

T0 = 1_700_000_000_000
CODECS = (0, 1, 2, 3, 4)  # none, gzip, snappy, lz4, zstd
_INDEX_ENTRY = struct.Struct(">ii")
_TIME_ENTRY = struct.Struct(">qi")


# ============================================================ independent reading


@dataclass(frozen=True)
class DiskBatch:
    """A batch as kafka-python read it from a ``.log`` file."""

    position: int
    size: int
    base_offset: int
    last_offset: int
    leader_epoch: int
    max_timestamp: int
    timestamp_type: int
    compression: int
    producer_id: int
    producer_epoch: int
    base_sequence: int
    crc_ok: bool
    records: tuple[tuple, ...]  # (offset, timestamp, key, value, headers)


def kafka_batches(data: bytes) -> list[DiskBatch]:
    """Every batch of *data* decoded by kafka-python; fails unless the batches fill it exactly."""
    out = []
    records = MemoryRecords(data)
    position = 0
    while (batch := records.next_batch()) is not None:
        assert isinstance(batch, DefaultRecordBatch), f"batch at {position} is not magic v2"
        crc_ok = batch.validate_crc()  # before iterating, as kafka-python requires
        recs = tuple(
            (r.offset, r.timestamp, r.key, r.value, tuple((k, v) for k, v in r.headers)) for r in batch
        )
        out.append(
            DiskBatch(
                position,
                batch.size_in_bytes,
                batch.base_offset,
                batch.last_offset,
                batch.leader_epoch,
                batch.max_timestamp,
                batch.timestamp_type,
                batch.compression_type,
                batch.producer_id,
                batch.producer_epoch,
                batch.base_sequence,
                crc_ok,
                recs,
            )
        )
        position += batch.size_in_bytes
    assert position == len(data), f"{len(data) - position} trailing bytes after the last batch"
    return out


def read_index(path: Path) -> list[tuple[int, int]]:
    data = path.read_bytes()
    assert len(data) % 8 == 0, f"{path.name}: {len(data)} bytes is not a whole number of entries"
    return list(_INDEX_ENTRY.iter_unpack(data))


def read_time_index(path: Path) -> list[tuple[int, int]]:
    data = path.read_bytes()
    assert len(data) % 12 == 0, f"{path.name}: {len(data)} bytes is not a whole number of entries"
    return list(_TIME_ENTRY.iter_unpack(data))


def expected_indexes(
    base: int, batches: list[DiskBatch], interval: int
) -> tuple[list[tuple[int, int]], list[tuple[int, int]]]:
    """The (relative) entries of the documented rule, replayed over the segment's batches."""
    index, time_index = [], []
    since = 0
    max_ts, offset_of_max = -1, base
    for b in batches:
        if b.max_timestamp > max_ts:
            max_ts, offset_of_max = b.max_timestamp, b.last_offset
        if since > interval:
            index.append((b.last_offset - base, b.position))
            if max_ts >= 0 and (not time_index or max_ts > time_index[-1][0]):
                time_index.append((max_ts, offset_of_max - base))
            since = 0
        since += b.size
    return index, time_index


def check_segment_files(
    directory: Path, interval: int, *, compacted: bool = False
) -> list[tuple[int, list[DiskBatch]]]:
    """Checks names, batch CRCs, offsets and both indexes of every segment in *directory*.

    Unless *compacted*, each segment starts with a batch at its base offset.
    Returns ``[(base offset, batches)]`` in order.
    """
    logs = sorted(directory.glob("*.log"))
    assert logs, "no segment"
    segments = []
    next_offset = None
    for path in logs:
        assert len(path.stem) == 20 and path.stem.isdigit(), path.name
        base = int(path.stem)
        assert path.name == f"{base:020d}.log"
        batches = kafka_batches(path.read_bytes())
        for b in batches:
            assert b.crc_ok, f"{path.name}: CRC of the batch at {b.position} does not validate"
            assert b.base_offset >= base and b.last_offset >= b.base_offset
            if next_offset is not None:
                assert b.base_offset >= next_offset, f"{path.name}: offsets go back at {b.position}"
            next_offset = b.last_offset + 1
        if batches and not compacted:
            assert batches[0].base_offset == base, f"{path.name} starts with offset {batches[0].base_offset}"

        index = read_index(directory / f"{base:020d}.index")
        time_index = read_time_index(directory / f"{base:020d}.timeindex")
        starts = {b.position: b for b in batches}
        for rel, position in index:
            assert position in starts, f"{path.name}: index entry ({rel}, {position}) is not at a batch start"
            assert starts[position].last_offset == base + rel, (
                f"{path.name}: index entry names offset {base + rel}, batch at {position} ends at "
                f"{starts[position].last_offset}"
            )
        held = {o for b in batches for o in range(b.base_offset, b.last_offset + 1)}
        for i, (ts, rel) in enumerate(time_index):
            assert base + rel in held, f"{path.name}: time index entry ({ts}, {base + rel}) is not in the segment"
            if i:
                assert ts > time_index[i - 1][0] and rel >= time_index[i - 1][1]
        assert (index, time_index) == expected_indexes(base, batches, interval), path.name
        segments.append((base, batches))
    return segments


# ============================================================ writing


@dataclass
class Produced:
    """What was appended: the expected records, batch by batch."""

    records: list[tuple]  # (offset, timestamp, key, value, headers), offsets from 0
    batches: list[dict]  # per batch: base, last, epoch, codec, producer fields, max_ts
    appends: list  # LogAppendInfo of each append, in order


def random_records(rnd: random.Random, n: int, ts: int) -> list[Record]:
    recs = []
    for j in range(n):
        key = None if rnd.random() < 0.3 else b"key-%d" % rnd.randrange(50)
        if rnd.random() < 0.15:
            value = None
        elif rnd.random() < 0.5:
            value = rnd.randbytes(rnd.randrange(0, 300))
        else:
            value = (b"compressible-%d " % j) * rnd.randrange(0, 20)
        headers = tuple(
            (f"h{k}", None if rnd.random() < 0.2 else rnd.randbytes(rnd.randrange(0, 12)))
            for k in range(rnd.choice((0, 0, 1, 3)))
        )
        recs.append(Record(j, ts + rnd.randrange(-500, 500), key, value, headers))
    return recs


def produce(log: Log, rnd: random.Random, now: list[int], appends: int, *, epochs=(0, 1, 4)) -> Produced:
    """Appends *appends* random produce requests (1–3 batches of 1–8 records) as leader."""
    produced = Produced([], [], [])
    epoch_iter = iter(sorted(rnd.choice(epochs) for _ in range(appends)))
    seq = 0
    for _ in range(appends):
        epoch = next(epoch_iter)
        payload = bytearray()
        planned = []
        for _ in range(rnd.choice((1, 1, 2, 3))):
            n = rnd.randint(1, 8)
            codec = rnd.choice(CODECS)
            idempotent = rnd.random() < 0.3
            recs = random_records(rnd, n, now[0])
            base_sequence = seq if idempotent else -1
            payload += build_batch(
                recs,
                compression=codec,
                producer_id=7 if idempotent else -1,
                producer_epoch=0 if idempotent else -1,
                base_sequence=base_sequence,
            )
            if idempotent:
                seq += n
            planned.append((recs, codec, idempotent, base_sequence))
        info = log.append_as_leader(bytes(payload), epoch)
        offset = info.first_offset
        for recs, codec, idempotent, base_sequence in planned:
            base = offset
            for r in recs:
                produced.records.append((offset, r.timestamp, r.key, r.value, r.headers))
                offset += 1
            produced.batches.append(
                dict(
                    base=base,
                    last=offset - 1,
                    epoch=epoch,
                    codec=codec,
                    producer_id=7 if idempotent else -1,
                    base_sequence=base_sequence,
                    max_ts=max(r.timestamp for r in recs),
                )
            )
        assert info.last_offset == offset - 1
        produced.appends.append(info)
        now[0] += rnd.randrange(0, 40)
    return produced


def build_log(directory: Path, config: LogConfig, seed: int, appends: int) -> tuple[Log, Produced, list[int]]:
    now = [T0]
    log = Log.open(directory, config, lambda: now[0])
    produced = produce(log, random.Random(seed), now, appends)
    return log, produced, now


# ============================================================ tests

LAYOUTS = [
    pytest.param(LogConfig(segment_bytes=3000, index_interval_bytes=0), id="seg3000-interval0"),
    pytest.param(LogConfig(segment_bytes=6000, index_interval_bytes=700), id="seg6000-interval700"),
    pytest.param(LogConfig(segment_bytes=20000), id="seg20000-interval4096"),
]


@pytest.mark.parametrize("config", LAYOUTS)
def test_leader_appends_read_back_by_kafka_python(tmp_path: Path, config: LogConfig) -> None:
    log, produced, _ = build_log(tmp_path / "topic-0", config, seed=11, appends=160)
    try:
        end = log.next_offset
    finally:
        log.close()
    assert end == len(produced.records)

    segments = check_segment_files(tmp_path / "topic-0", config.index_interval_bytes)
    assert len(segments) >= 3, "the workload should span several segments"
    names = sorted(p.name for p in (tmp_path / "topic-0").iterdir())
    assert names == sorted(f"{base:020d}{suffix}" for base, _ in segments for suffix in (".log", ".index", ".timeindex"))

    disk = [b for _, batches in segments for b in batches]
    assert len(disk) == len(produced.batches)
    # Offsets assigned contiguously from 0: each batch starts where the previous one ended.
    assert disk[0].base_offset == 0
    for prev, cur in zip(disk, disk[1:], strict=False):
        assert cur.base_offset == prev.last_offset + 1
    for b, want in zip(disk, produced.batches, strict=True):
        assert (b.base_offset, b.last_offset) == (want["base"], want["last"])
        assert b.leader_epoch == want["epoch"]
        assert b.compression == want["codec"]
        assert b.timestamp_type == 0
        assert b.max_timestamp == want["max_ts"]
        assert (b.producer_id, b.base_sequence) == (want["producer_id"], want["base_sequence"])
    got = [r for b in disk for r in b.records]
    assert got == produced.records
    assert {b.compression for b in disk} == set(CODECS)
    assert any(r[3] is None for r in got) and any(r[2] is None for r in got) and any(r[4] for r in got)


def test_segment_boundaries_follow_segment_bytes(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=3000, index_interval_bytes=0)
    log, produced, _ = build_log(tmp_path / "t-0", config, seed=5, appends=120)
    log.close()
    segments = check_segment_files(tmp_path / "t-0", 0)
    sizes = [(tmp_path / "t-0" / f"{base:020d}.log").stat().st_size for base, _ in segments]
    # Each append is one unit: it went to a new segment only if it did not fit in the old one.
    append_sizes = {info.first_offset: info.valid_bytes for info in produced.appends}
    for (base, _), size in zip(segments[1:], sizes, strict=False):
        assert size + append_sizes[base] > config.segment_bytes
    for (base, _), size in zip(segments, sizes, strict=True):
        assert size <= max(config.segment_bytes, append_sizes[base])


def test_follower_reproduces_identical_files(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=4000, index_interval_bytes=300)
    leader, produced, now = build_log(tmp_path / "leader" / "t-0", config, seed=23, appends=150)
    follower = Log.open(tmp_path / "follower" / "t-0", config, lambda: now[0])
    try:
        for info in produced.appends:
            fetched = leader.read(info.first_offset, info.valid_bytes)
            data = fetched.read()
            assert len(data) == info.valid_bytes
            got = follower.append_as_follower(data)
            assert (got.first_offset, got.last_offset, got.record_count) == (
                info.first_offset,
                info.last_offset,
                info.record_count,
            )
        assert follower.next_offset == leader.next_offset
    finally:
        leader.close()
        follower.close()
    lfiles = sorted(p.name for p in (tmp_path / "leader" / "t-0").iterdir())
    ffiles = sorted(p.name for p in (tmp_path / "follower" / "t-0").iterdir())
    assert lfiles == ffiles
    assert len(lfiles) >= 9
    for name in lfiles:
        assert (tmp_path / "leader" / "t-0" / name).read_bytes() == (tmp_path / "follower" / "t-0" / name).read_bytes(), name
    check_segment_files(tmp_path / "follower" / "t-0", config.index_interval_bytes)


def test_follower_appending_whole_fetches_keeps_batches_byte_identical(tmp_path: Path) -> None:
    """Fetch-sized chunks (not the leader's append units) still give the same .log bytes overall."""
    config = LogConfig(segment_bytes=1 << 20)
    leader, produced, now = build_log(tmp_path / "leader" / "t-0", config, seed=3, appends=80)
    follower = Log.open(tmp_path / "follower" / "t-0", config, lambda: now[0])
    try:
        offset = 0
        while offset < leader.next_offset:
            data = leader.read(offset, 2000).read()
            batches = kafka_batches(data[: _whole_prefix(data)])
            follower.append_as_follower(data[: _whole_prefix(data)])
            offset = batches[-1].last_offset + 1
        assert follower.next_offset == leader.next_offset
    finally:
        leader.close()
        follower.close()
    name = f"{0:020d}.log"
    assert (tmp_path / "leader" / "t-0" / name).read_bytes() == (tmp_path / "follower" / "t-0" / name).read_bytes()


def _whole_prefix(data: bytes) -> int:
    """Length of the whole batches at the start of *data* (a fetch may end with a partial one)."""
    pos = 0
    while pos + 12 <= len(data):
        size = int.from_bytes(data[pos + 8 : pos + 12], "big") + 12
        if pos + size > len(data):
            break
        pos += size
    return pos


def test_log_append_time_as_a_consumer_sees_it(tmp_path: Path) -> None:
    config = LogConfig(segment_bytes=5000, index_interval_bytes=500, message_timestamp_type="LogAppendTime")
    now = [T0]
    log = Log.open(tmp_path / "t-0", config, lambda: now[0])
    rnd = random.Random(99)
    expected = []  # (offset, append time, key, value, headers)
    try:
        for i in range(90):
            now[0] = T0 + 1000 * i + rnd.randrange(0, 500)
            recs = random_records(rnd, rnd.randint(1, 6), T0 - 10_000_000)  # old CreateTimes, to be replaced
            copies = rnd.choice((1, 2))
            payload = b"".join(build_batch(recs, compression=rnd.choice(CODECS)) for _ in range(copies))
            info = log.append_as_leader(payload, 2)
            assert info.log_append_time == now[0]
            assert info.max_timestamp == now[0]
            offset = info.first_offset
            assert info.batch_count == copies
            for _ in range(copies):
                for r in recs:
                    expected.append((offset, now[0], r.key, r.value, r.headers))
                    offset += 1
        assert log.next_offset == len(expected)
    finally:
        log.close()
    segments = check_segment_files(tmp_path / "t-0", config.index_interval_bytes)
    assert len(segments) >= 3
    disk = [b for _, batches in segments for b in batches]
    for b in disk:
        assert b.crc_ok
        assert b.timestamp_type == 1, "LOG_APPEND_TIME"
        assert b.leader_epoch == 2
        assert all(r[1] == b.max_timestamp for r in b.records)
    assert [r for b in disk for r in b.records] == expected
    # kafka-python reports each record's timestamp type as LOG_APPEND_TIME too.
    first = MemoryRecords((tmp_path / "t-0" / f"{0:020d}.log").read_bytes()).next_batch()
    assert {r.timestamp_type for r in first} == {1}
