"""LogManager: placement, clean and unclean restarts, metadata checks, dir failures,
deletion, retention, checkpoints and the cleaner pass, over three real log dirs."""

from __future__ import annotations

import errno
import re
from dataclasses import dataclass, field
from pathlib import Path

import pytest

from mafka.errors import KafkaStorageError, UnknownTopicOrPartitionError
from mafka.log import manager as manager_module
from mafka.log.checkpoint import (
    CLEANER_OFFSET_CHECKPOINT,
    LOG_START_OFFSET_CHECKPOINT,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    REPLICATION_OFFSET_CHECKPOINT,
    InconsistentBrokerMetadataError,
    read_meta_properties,
)
from mafka.log.config import LogConfig
from mafka.log.log import Log
from mafka.log.manager import (
    CLEAN_SHUTDOWN_FILE,
    InvalidLogDirectoryError,
    LogDirLockedError,
    LogManager,
    log_delete_dir_name,
    parse_log_dir_name,
)
from mafka.wire.batch import iter_batches
from mafka.wire.records import Record, build_batch, decode_batch

NOW = 1_700_000_000_000
DAY = 86_400_000
CONFIG = LogConfig(segment_bytes=1024, index_interval_bytes=100)


def batch(
    n: int = 3, ts: int = NOW, keys: list[bytes] | None = None, value: bytes = b"v" * 30
) -> bytes:
    keys = keys if keys is not None else [b"k%d" % i for i in range(n)]
    return build_batch([Record(i, ts, k, value, ()) for i, k in enumerate(keys)])


@dataclass
class Env:
    root: Path
    now: list[int] = field(default_factory=lambda: [NOW])
    failures: list[tuple[Path, BaseException]] = field(default_factory=list)

    @property
    def dirs(self) -> list[Path]:
        return [self.root / f"data{i}" for i in range(3)]

    def manager(
        self, *, start: bool = True, broker_id: int = 1, cluster_id: str | None = "cid", **kw
    ) -> LogManager:
        kw.setdefault("on_dir_failure", lambda d, exc: self.failures.append((d, exc)))
        m = LogManager(
            self.dirs,
            kw.pop("config", CONFIG),
            lambda: self.now[0],
            broker_id=broker_id,
            cluster_id=cluster_id,
            **kw,
        )
        if start:
            m.startup()
        return m


@pytest.fixture
def env(tmp_path: Path) -> Env:
    return Env(tmp_path)


def values_of(log: Log) -> list[tuple[int, bytes | None]]:
    """(offset, key) of every record, read segment by segment through Log.read."""
    out: list[tuple[int, bytes | None]] = []
    offset = log.log_start_offset
    while (region := log.read(offset, 1 << 20).region) is not None:
        data = region.read()
        for pos, h in iter_batches(data):
            out += [(r.offset, r.key) for r in decode_batch(data[pos : pos + h.size]).records]
            offset = h.last_offset + 1
    return out


# ====================================================================== names


def test_dir_names_follow_kafka() -> None:
    assert parse_log_dir_name("my-topic-12") == ("my-topic", 12)
    name = log_delete_dir_name("my-topic", 3)
    assert re.fullmatch(r"my-topic-3\.[0-9a-f]{32}-delete", name)
    assert parse_log_dir_name(name) == ("my-topic", 3)
    assert len(log_delete_dir_name("t" * 249, 7)) == 255
    for bad in ("lost+found", "topic-x", "-1", "topic-", "t-0.abc-delete-x", "t.abc-delete"):
        with pytest.raises(InvalidLogDirectoryError):
            parse_log_dir_name(bad)


# ====================================================================== placement


def test_new_logs_go_to_the_dir_with_fewest_partitions(env: Env) -> None:
    m = env.manager()
    d0, d1, d2 = env.dirs
    for p in range(4):
        m.get_or_create_log("t", p)
    placed = {p: m.log_dir_of(("t", p)) for p in range(4)}
    assert placed == {0: d0, 1: d1, 2: d2, 3: d0}  # ties: log.dirs order
    assert (d1 / "t-1").is_dir() and m.get_log("t", 1).directory == d1 / "t-1"
    assert m.get_or_create_log("t", 1) is m.get_log("t", 1)  # existing log returned as is

    assert m.delete_log("t", 1)
    m.get_or_create_log("u", 0)  # d1 is empty now
    m.get_or_create_log("u", 1)  # d0: 2, d1: 1, d2: 1 -> d1 (tie, earlier)
    m.get_or_create_log("u", 2)  # d2
    assert [m.log_dir_of(("u", p)) for p in range(3)] == [d1, d1, d2]

    # The counts come from disk after a restart.
    m.shutdown()
    m = env.manager()
    assert {d: len(m.logs_in_dir(d)) for d in env.dirs} == {d0: 2, d1: 2, d2: 2}
    m.get_or_create_log("v", 0)
    assert m.log_dir_of(("v", 0)) == d0
    m.shutdown()


def test_topic_config_is_used_for_new_and_loaded_logs(env: Env) -> None:
    compact = LogConfig(cleanup_policy=("compact",))
    m = env.manager(topic_config=lambda t: compact if t == "c" else CONFIG)
    assert m.get_or_create_log("c", 0).config is compact
    assert m.get_or_create_log("d", 0).config is CONFIG
    m.shutdown()
    m = env.manager(topic_config=lambda t: compact if t == "c" else CONFIG)
    assert m.get_log("c", 0).config is compact
    m.abort()


# ====================================================================== restarts


def test_clean_shutdown_restart_skips_recovery_and_keeps_everything(env: Env) -> None:
    d0, d1, d2 = env.dirs
    m = env.manager()
    ends = {}
    for p in range(4):
        log = m.get_or_create_log("t", p)
        for _ in range(p + 1):
            log.append_as_leader(batch(), leader_epoch=0)
        ends[p] = log.next_offset
    m.get_log("t", 3).roll()
    m.get_log("t", 3).append_as_leader(batch(), 0)
    ends[3] = m.get_log("t", 3).next_offset
    m.get_log("t", 3).increment_log_start_offset(5)
    m.shutdown()

    for d in env.dirs:
        assert (d / CLEAN_SHUTDOWN_FILE).read_bytes() == b""
        assert not (d / (CLEAN_SHUTDOWN_FILE + ".tmp")).exists()
        meta = read_meta_properties(d)
        assert meta == {"version": "0", "broker.id": "1", "cluster.id": "cid"}
    # Kafka's exact text format; recovery points are the log end offsets after a clean shutdown.
    assert (
        d0 / RECOVERY_POINT_OFFSET_CHECKPOINT
    ).read_bytes() == f"0\n2\nt 0 {ends[0]}\nt 3 {ends[3]}\n".encode()
    assert (d1 / RECOVERY_POINT_OFFSET_CHECKPOINT).read_bytes() == f"0\n1\nt 1 {ends[1]}\n".encode()
    assert (d2 / RECOVERY_POINT_OFFSET_CHECKPOINT).read_bytes() == f"0\n1\nt 2 {ends[2]}\n".encode()
    # Only logs whose start is past their first segment's base are listed (Kafka's filter).
    assert (d0 / LOG_START_OFFSET_CHECKPOINT).read_bytes() == b"0\n1\nt 3 5\n"
    assert (d1 / LOG_START_OFFSET_CHECKPOINT).read_bytes() == b"0\n0\n"

    m = env.manager()
    assert m.had_clean_shutdown == {d: True for d in env.dirs}
    assert not any((d / CLEAN_SHUTDOWN_FILE).exists() for d in env.dirs)  # removed at startup
    assert {tp: log.next_offset for tp, log in m.logs.items()} == {
        ("t", p): ends[p] for p in range(4)
    }
    assert m.get_log("t", 3).log_start_offset == 5
    assert all(log.recovery_point == log.next_offset for log in m.logs.values())
    assert values_of(m.get_log("t", 1)) == [(o, b"k%d" % (o % 3)) for o in range(6)]
    assert m.get_log("t", 1).append_as_leader(batch(), 0).first_offset == 6
    m.shutdown()


def batch_offsets(log: Log) -> list[tuple[int, int]]:
    """(base, last) offset of every batch served by Log.read (headers only: no CRC check)."""
    out: list[tuple[int, int]] = []
    offset = log.log_start_offset
    while (region := log.read(offset, 1 << 20).region) is not None:
        out += [(h.base_offset, h.last_offset) for _, h in iter_batches(region.read())]
        offset = out[-1][1] + 1
    return out


def corrupt_last_batch(segment: Path) -> tuple[int, int]:
    """Flip the last byte (CRC-covered) of the last batch of *segment*; (its base offset, position)."""
    data = bytearray(segment.read_bytes())
    pos, h = list(iter_batches(data))[-1]
    data[pos + h.size - 1] ^= 0xFF
    segment.write_bytes(data)
    return h.base_offset, pos


@pytest.mark.parametrize("clean", [False, True])
def test_restart_without_shutdown_recovers_from_the_recovery_point(env: Env, clean: bool) -> None:
    m = env.manager()
    log = m.get_or_create_log("t", 0)
    for _ in range(8):
        log.append_as_leader(batch(), 0)
    log.flush()
    flushed = log.next_offset
    assert m.checkpoint_recovery_points() == 3
    for _ in range(10):
        log.append_as_leader(batch(), 0)
    end = log.next_offset
    bases = [s.base_offset for s in log.segments]
    # segment 0 lies wholly below the recovery point, which is in segment 1; 2 and 3 follow
    assert len(bases) == 4 and bases[1] < flushed < bases[2]
    d = m.log_dir_of(("t", 0))
    if clean:
        m.shutdown()
    else:
        m.abort()  # files closed, no flush, no checkpoint, no marker: a crash
        assert (
            d / RECOVERY_POINT_OFFSET_CHECKPOINT
        ).read_bytes() == f"0\n1\nt 0 {flushed}\n".encode()
    segments = sorted((d / "t-0").glob("*.log"))
    below, _ = corrupt_last_batch(segments[0])  # before the recovery point: never re-read
    cut, pos = corrupt_last_batch(segments[2])  # after it, with a later segment behind

    m = env.manager()
    log = m.get_log("t", 0)
    assert m.had_clean_shutdown[d] is clean
    if clean:
        # No scan after a clean shutdown: the damaged batches are not noticed.
        assert log.next_offset == end and [s.base_offset for s in log.segments] == bases
    else:
        # Recovery re-read from the segment holding the recovery point, cut the log at the
        # first bad batch and dropped the segment after it.
        assert log.next_offset == cut
        assert [s.base_offset for s in log.segments] == bases[:3]
        assert sorted((d / "t-0").glob("*.log")) == segments[:3]
        assert segments[2].stat().st_size == pos
        assert batch_offsets(log)[-1] == (cut - 3, cut - 1)
        assert log.append_as_leader(batch(), 0).first_offset == cut
    assert (below, below + 2) in batch_offsets(log)  # segment 0 was not scanned either way
    m.shutdown()


# ====================================================================== meta.properties, layout


def test_meta_properties_mismatch_refuses_to_start(env: Env) -> None:
    env.manager(broker_id=1, cluster_id="cid").shutdown()
    with pytest.raises(InconsistentBrokerMetadataError, match="broker.id"):
        env.manager(broker_id=2, cluster_id="cid")
    with pytest.raises(InconsistentBrokerMetadataError, match="cluster"):
        env.manager(broker_id=1, cluster_id="other")
    # A refused startup released its locks: the right broker still starts.
    m = env.manager(broker_id=1, cluster_id=None)
    assert m.online_dirs == env.dirs
    m.shutdown()


def test_dirs_disagreeing_on_the_cluster_refuse_to_start(env: Env) -> None:
    env.manager(cluster_id="cid").shutdown()
    text = (
        (env.dirs[2] / "meta.properties")
        .read_text("latin-1")
        .replace("cluster.id=cid", "cluster.id=zzz")
    )
    (env.dirs[2] / "meta.properties").write_text(text, "latin-1")
    with pytest.raises(InconsistentBrokerMetadataError, match="not consistent"):
        env.manager(cluster_id=None)


def test_a_dir_in_use_by_another_manager_is_refused(env: Env) -> None:
    m = env.manager()
    with pytest.raises(LogDirLockedError):
        env.manager()
    m.shutdown()
    env.manager().shutdown()


def test_unexpected_or_duplicate_partition_dirs_refuse_to_start(env: Env) -> None:
    m = env.manager()
    m.get_or_create_log("t", 0)  # data0
    m.shutdown()
    (env.dirs[1] / "t-0").mkdir()
    with pytest.raises(InvalidLogDirectoryError, match="duplicate"):
        env.manager()
    (env.dirs[1] / "t-0").rmdir()
    (env.dirs[1] / "lost+found").mkdir()
    with pytest.raises(InvalidLogDirectoryError, match="lost"):
        env.manager()
    (env.dirs[1] / "lost+found").rmdir()
    future = env.dirs[2] / "t-0.0123abcd-future"
    future.mkdir()
    m = env.manager()
    assert list(m.logs) == [("t", 0)] and future.is_dir()
    assert list(m.future_logs) == [("t", 0)]  # a -future dir resumes a replica move
    m.shutdown()


# ====================================================================== dir failures


def test_a_dir_failing_on_append_goes_offline_and_the_others_keep_serving(
    env: Env, monkeypatch
) -> None:
    m = env.manager()
    logs = {p: m.get_or_create_log("t", p) for p in range(6)}
    bad = env.dirs[1]
    original = Log.append_as_leader

    def append(self: Log, records, leader_epoch):
        if self.directory.parent == bad:
            raise OSError(errno.ENOSPC, "No space left on device")
        return original(self, records, leader_epoch)

    monkeypatch.setattr(Log, "append_as_leader", append)
    with pytest.raises(KafkaStorageError) as info, m.log_io(("t", 1)) as log:
        log.append_as_leader(batch(), 0)
    assert isinstance(info.value.__cause__, OSError) and info.value.__cause__.errno == errno.ENOSPC

    assert [(d, type(e)) for d, e in env.failures] == [(bad, OSError)]
    assert m.offline_dirs == [bad] and m.online_dirs == [env.dirs[0], env.dirs[2]]
    assert m.offline_partitions == {("t", 1): bad, ("t", 4): bad}
    for p in (1, 4):
        assert m.get_log("t", p) is None
        with pytest.raises(KafkaStorageError):
            m.require_log(("t", p))
        with pytest.raises(KafkaStorageError):
            m.get_or_create_log("t", p, is_new=True)
    assert logs[1].segments[0].fd == -1  # closed
    # A partition that might have lived on the failed dir is not created unless new.
    with pytest.raises(KafkaStorageError):
        m.get_or_create_log("new", 0)
    m.get_or_create_log("new", 0, is_new=True)
    assert m.log_dir_of(("new", 0)) == env.dirs[0]  # d0 and d2 hold 2 each: the earlier wins

    for p in (0, 2, 3, 5):
        with m.log_io(("t", p)) as log:
            assert log.append_as_leader(batch(), 0).first_offset == 0
    assert m.checkpoint_recovery_points() == 2
    assert m.write_high_watermarks({("t", p): 3 for p in range(6)}) == 2
    assert m.read_high_watermarks() == {("t", p): 3 for p in (0, 2, 3, 5)}
    m.shutdown()
    assert not (bad / CLEAN_SHUTDOWN_FILE).exists()
    assert all((d / CLEAN_SHUTDOWN_FILE).exists() for d in (env.dirs[0], env.dirs[2]))

    # The failed dir was not marked clean: its logs recover at the next start.
    monkeypatch.undo()
    m = env.manager()
    assert m.had_clean_shutdown == {env.dirs[0]: True, bad: False, env.dirs[2]: True}
    assert len(m.logs) == 7
    m.shutdown()


def test_a_dir_failing_to_flush_goes_offline_in_the_flush_pass(env: Env, monkeypatch) -> None:
    m = env.manager(config=LogConfig(flush_messages=1))
    for p in range(3):
        m.get_or_create_log("t", p).append_as_leader(batch(), 0)
    bad = env.dirs[2]
    original = Log.flush

    def flush(self: Log, up_to=None):
        if self.directory.parent == bad:
            raise OSError(errno.EIO, "Input/output error")
        return original(self, up_to)

    monkeypatch.setattr(Log, "flush", flush)
    assert m.flush_pass() == 2
    assert m.offline_dirs == [bad] and [d for d, _ in env.failures] == [bad]
    assert m.get_log("t", 0).recovery_point == 3
    assert (env.dirs[0] / RECOVERY_POINT_OFFSET_CHECKPOINT).read_bytes() == b"0\n1\nt 0 3\n"
    with pytest.raises(KafkaStorageError):
        m.require_log(("t", 2))
    assert m.flush_pass() == 0  # nothing due any more
    m.shutdown()


def test_a_dir_that_cannot_be_used_at_startup_is_offline(env: Env) -> None:
    env.root.mkdir(exist_ok=True)
    env.dirs[0].write_bytes(b"not a directory")
    m = env.manager()
    assert m.offline_dirs == [env.dirs[0]]
    assert [(d, type(e)) for d, e in env.failures] == [(env.dirs[0], FileExistsError)]
    m.get_or_create_log("t", 0, is_new=True)
    assert m.log_dir_of(("t", 0)) == env.dirs[1]
    with pytest.raises(KafkaStorageError, match="may be in the offline"):
        m.require_log(("nope", 0))  # it might live on the offline dir
    m.shutdown()

    for d in env.dirs[1:]:
        for child in sorted(d.rglob("*"), reverse=True):
            child.rmdir() if child.is_dir() else child.unlink()
        d.rmdir()
        d.write_bytes(b"")
    with pytest.raises(KafkaStorageError, match="none of the log dirs"):
        env.manager()


def test_a_corrupt_log_dir_checkpoint_is_ignored_but_a_corrupt_hw_file_fails_the_dir(
    env: Env,
) -> None:
    m = env.manager()
    for p in range(3):
        m.get_or_create_log("t", p).append_as_leader(batch(), 0)
    m.shutdown()
    (env.dirs[0] / RECOVERY_POINT_OFFSET_CHECKPOINT).write_bytes(b"0\n7\ngarbage\n")
    (env.dirs[1] / REPLICATION_OFFSET_CHECKPOINT).write_bytes(b"0\n1\nt 1\n")
    m = env.manager()
    assert m.online_dirs == env.dirs and m.get_log("t", 0).next_offset == 3
    assert m.read_high_watermarks() == {}
    assert m.offline_dirs == [env.dirs[1]]
    m.shutdown()


def test_unknown_partitions(env: Env) -> None:
    m = env.manager()
    with pytest.raises(UnknownTopicOrPartitionError):
        m.require_log(("nope", 0))
    assert m.get_log("nope", 0) is None and not m.delete_log("nope", 0)
    with pytest.raises(KeyError):
        m.log_dir_of(("nope", 0))
    m.abort()


# ====================================================================== deletion


def test_delete_log_renames_then_removes_the_directory(env: Env) -> None:
    m = env.manager(config=LogConfig(file_delete_delay_ms=60_000))
    log = m.get_or_create_log("t", 0)
    m.get_or_create_log("t", 1)
    log.append_as_leader(batch(), 0)
    region = log.read(0, 1 << 20).region
    d = m.log_dir_of(("t", 0))
    m.update_cleaner_offsets({("t", 0): 2})
    assert (d / CLEANER_OFFSET_CHECKPOINT).read_bytes() == b"0\n1\nt 0 2\n"

    assert m.delete_log("t", 0)
    assert not (d / "t-0").exists() and m.get_log("t", 0) is None
    [renamed] = m.pending_deletions
    assert renamed.parent == d and re.fullmatch(r"t-0\.[0-9a-f]{32}-delete", renamed.name)
    assert (d / RECOVERY_POINT_OFFSET_CHECKPOINT).read_bytes() == b"0\n0\n"
    assert (d / CLEANER_OFFSET_CHECKPOINT).read_bytes() == b"0\n0\n"
    assert region.read() == batch_bytes_at(renamed)  # a read handed out earlier still works

    assert m.delete_pending_logs() == 0  # file.delete.delay.ms has not passed
    env.now[0] += 60_000
    assert m.delete_pending_logs() == 1
    assert not renamed.exists() and m.pending_deletions == []

    # A deletion interrupted by a crash is finished at the next startup.
    m.delete_log("t", 1)
    [renamed] = m.pending_deletions
    m.abort()
    assert renamed.is_dir()
    m = env.manager()
    assert not renamed.exists() and m.logs == {}
    m.shutdown()


def batch_bytes_at(log_dir: Path) -> bytes:
    return (log_dir / f"{0:020d}.log").read_bytes()


# ====================================================================== retention


def test_retention_pass_deletes_old_segments_only_below_the_high_watermark(env: Env) -> None:
    config = LogConfig(segment_bytes=400, retention_ms=DAY, file_delete_delay_ms=1000)
    m = env.manager(config=config)
    log = m.get_or_create_log("t", 0)
    other = m.get_or_create_log("t", 1)
    for _ in range(8):
        log.append_as_leader(batch(ts=NOW), 0)
        other.append_as_leader(batch(ts=NOW), 0)
    bases = [s.base_offset for s in log.segments]
    assert len(bases) >= 4
    assert m.retention_pass({("t", 0): log.next_offset}) == 0  # nothing expired yet

    env.now[0] = NOW + 2 * DAY
    hw = bases[2]  # segments 0 and 1 end at or below the HW; segment 2 does not
    assert m.retention_pass({("t", 0): hw}) == 2
    assert [s.base_offset for s in log.segments] == bases[2:] and log.log_start_offset == hw
    assert len(other.segments) == len(bases)  # no HW known: untouched
    d = log.directory
    assert len(list(d.glob("*.log.deleted"))) == 2

    env.now[0] += 1000
    assert m.retention_pass({}) == 0
    assert list(d.glob("*.deleted")) == []  # removed after file.delete.delay.ms

    assert m.checkpoint_log_start_offsets() == 3
    start_file = m.log_dir_of(("t", 0)) / LOG_START_OFFSET_CHECKPOINT
    assert start_file.read_bytes() == b"0\n0\n"  # its start is its first segment's base
    # With the HW at the log end everything expired goes (the active segment is rolled first).
    hws = {("t", 0): log.next_offset, ("t", 1): other.next_offset}
    assert m.retention_pass(hws) == (len(bases) - 2) + len(bases)
    assert log.log_start_offset == log.next_offset and other.log_start_offset == other.next_offset
    m.shutdown()


# ====================================================================== checkpoints


def test_high_watermarks_are_written_per_dir_in_kafkas_format(env: Env) -> None:
    m = env.manager()
    for p in range(4):
        m.get_or_create_log("t", p)
    assert m.write_high_watermarks({("t", 0): 5, ("t", 1): 7, ("t", 3): 9, ("gone", 0): 1}) == 3
    d0, d1, d2 = env.dirs
    assert (d0 / REPLICATION_OFFSET_CHECKPOINT).read_bytes() == b"0\n2\nt 0 5\nt 3 9\n"
    assert (d1 / REPLICATION_OFFSET_CHECKPOINT).read_bytes() == b"0\n1\nt 1 7\n"
    assert (d2 / REPLICATION_OFFSET_CHECKPOINT).read_bytes() == b"0\n0\n"
    # Unchanged high watermarks (an idle broker, every 5 s) rewrite nothing; a changed one rewrites its dir.
    written = {d: (d / REPLICATION_OFFSET_CHECKPOINT).stat().st_mtime_ns for d in env.dirs}
    (d1 / REPLICATION_OFFSET_CHECKPOINT).write_bytes(b"0\n1\nt 1 7\n")  # same bytes, a new mtime
    marked = (d1 / REPLICATION_OFFSET_CHECKPOINT).stat().st_mtime_ns
    assert m.write_high_watermarks({("t", 0): 5, ("t", 1): 7, ("t", 3): 9}) == 3
    assert (d1 / REPLICATION_OFFSET_CHECKPOINT).stat().st_mtime_ns == marked
    assert (d0 / REPLICATION_OFFSET_CHECKPOINT).stat().st_mtime_ns == written[d0]
    assert m.write_high_watermarks({("t", 0): 6, ("t", 1): 7, ("t", 3): 9}) == 3
    assert (d0 / REPLICATION_OFFSET_CHECKPOINT).read_bytes() == b"0\n2\nt 0 6\nt 3 9\n"
    assert (d1 / REPLICATION_OFFSET_CHECKPOINT).stat().st_mtime_ns == marked
    # An entry in the wrong dir's file (a stale one) is not reported.
    (d2 / REPLICATION_OFFSET_CHECKPOINT).write_bytes(b"0\n2\nt 2 4\nt 0 99\n")
    assert m.read_high_watermarks() == {("t", 0): 6, ("t", 1): 7, ("t", 3): 9, ("t", 2): 4}
    m.shutdown()


# ====================================================================== cleaner


COMPACT = LogConfig(
    segment_bytes=600, index_interval_bytes=100, cleanup_policy=("compact",), segment_ms=10**12
)


def fill_with_duplicates(log: Log, rounds: int) -> None:
    for _ in range(rounds):
        log.append_as_leader(batch(keys=[b"a", b"b", b"c"]), 0)


def test_cleaner_pass_cleans_the_filthiest_compacted_log_and_checkpoints(env: Env) -> None:
    pytest.importorskip("mafka.log.cleaner")
    m = env.manager(topic_config=lambda t: COMPACT if t.startswith("c") else CONFIG)
    a = m.get_or_create_log("c", 0)
    plain = m.get_or_create_log("plain", 0)
    fill_with_duplicates(a, 12)
    fill_with_duplicates(plain, 12)
    plain_size = plain.size

    assert m.cleaner_pass() == 1
    keys = [k for o, k in values_of(a) if o < a.active_segment.base_offset]
    assert sorted(keys) == [b"a", b"b", b"c"]  # one record per key left in the cleaned part
    da = m.log_dir_of(("c", 0))
    first_dirty = a.active_segment.base_offset
    assert (da / CLEANER_OFFSET_CHECKPOINT).read_bytes() == f"0\n1\nc 0 {first_dirty}\n".encode()
    assert m.cleaner_pass() == 0  # nothing dirty enough any more
    assert plain.size == plain_size  # delete-policy logs are never compacted

    # A new log (dirty ratio 1) beats a cleaned one with some new dirt.
    b = m.get_or_create_log("c", 1)
    fill_with_duplicates(b, 12)
    fill_with_duplicates(a, 12)
    assert m.read_cleaner_offsets() == {("c", 0): first_dirty}
    assert m.cleaner_pass() == 1
    offsets = m.read_cleaner_offsets()
    assert offsets[("c", 0)] == first_dirty and offsets[("c", 1)] == b.active_segment.base_offset
    assert m.cleaner_pass() == 1  # then the other one
    assert m.read_cleaner_offsets()[("c", 0)] == a.active_segment.base_offset
    m.shutdown()


def test_a_log_whose_cleaning_fails_is_marked_uncleanable(env: Env, monkeypatch) -> None:
    cleaner = pytest.importorskip("mafka.log.cleaner")
    m = env.manager(config=COMPACT)
    fill_with_duplicates(m.get_or_create_log("c", 0), 12)
    calls = []

    def broken(log, first_dirty, now, **kw):
        calls.append(log)
        raise ValueError("boom")

    monkeypatch.setattr(cleaner, "clean", broken)
    assert m.cleaner_pass() == 0 and m.cleaner_pass() == 0
    assert len(calls) == 1 and m.uncleanable_partitions == {("c", 0)}
    assert m.offline_dirs == []
    m.shutdown()


def test_module_exports() -> None:
    assert {"LogManager", "InvalidLogDirectoryError", "CLEAN_SHUTDOWN_FILE"} <= set(
        manager_module.__all__
    )


def test_a_log_in_use_is_closed_only_when_the_use_ends(env: Env) -> None:
    m = env.manager(config=LogConfig(file_delete_delay_ms=0))
    m.get_or_create_log("t", 0).append_as_leader(batch(), 0)
    m.get_or_create_log("t", 1).append_as_leader(batch(), 0)
    with m.log_io(("t", 0)) as log:
        m.handle_dir_failure(env.dirs[0], OSError(errno.EIO, "gone"))
        assert m.get_log("t", 0) is None
        assert log.read(0, 100).read()[:8] == bytes(8)  # still open: base offset 0
    assert log.segments[0].fd == -1

    with m.log_io(("t", 1)) as log:
        assert m.delete_log("t", 1)
        assert m.delete_pending_logs() == 0  # in use: waits
        assert log.read(0, 100).region is not None
    assert m.delete_pending_logs() == 1 and log.segments[0].fd == -1
    assert m.pending_deletions == []
    m.shutdown()


def test_truncation_lowers_the_cleaner_checkpoint_and_checkpoints_recovery_points(env: Env) -> None:
    pytest.importorskip("mafka.log.cleaner")
    m = env.manager(config=COMPACT)
    log = m.get_or_create_log("c", 0)
    fill_with_duplicates(log, 12)
    log.flush()
    assert m.cleaner_pass() == 1
    d = m.log_dir_of(("c", 0))
    first_dirty = m.read_cleaner_offsets()[("c", 0)]
    assert first_dirty == log.active_segment.base_offset
    fill_with_duplicates(log, 2)

    # The emptied active segment goes: the cleaned one before it becomes active.
    assert m.truncate_to(("c", 0), first_dirty)
    assert log.next_offset == first_dirty and log.active_segment.base_offset < first_dirty
    lowered = log.active_segment.base_offset
    assert m.read_cleaner_offsets() == {("c", 0): lowered}
    expected = f"0\n1\nc 0 {first_dirty}\n".encode()
    assert (d / RECOVERY_POINT_OFFSET_CHECKPOINT).read_bytes() == expected
    assert not m.truncate_to(("c", 0), first_dirty + 10)  # nothing above the log end

    m.truncate_fully_and_start_at(("c", 0), 100)
    assert (log.log_start_offset, log.next_offset) == (100, 100)
    assert m.read_cleaner_offsets() == {("c", 0): lowered}  # not above the new base: left as is
    assert (d / RECOVERY_POINT_OFFSET_CHECKPOINT).read_bytes() == b"0\n1\nc 0 100\n"
    with pytest.raises(UnknownTopicOrPartitionError):
        m.truncate_to(("nope", 0), 0)
    m.shutdown()
