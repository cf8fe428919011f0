"""LogManager and the cold tier: the mover pass, restarts across tiers, deletion, orphans, full dirs."""

from __future__ import annotations

import errno
from pathlib import Path

from mafka.log import tiering
from mafka.log.config import LogConfig
from mafka.log.manager import LogManager
from mafka.wire.records import Record, build_batch, iter_records

NOW = 1_700_000_000_000
CONFIG = LogConfig(segment_bytes=400, index_interval_bytes=100, file_delete_delay_ms=0)


def manager(root: Path, now: list[int], cold: bool = True) -> LogManager:
    m = LogManager([root / "hot"], CONFIG, lambda: now[0], broker_id=1, cluster_id="cid",
                   cold_dirs=[root / "cold1", root / "cold2"] if cold else ())
    m.startup()
    return m


def fill(m: LogManager, topic: str, n: int = 20) -> None:
    log = m.get_or_create_log(topic, 0, is_new=True)
    for i in range(n):
        log.append_as_leader(build_batch([Record(0, NOW - 10_000 + i, b"k", b"value-%03d" % i)]), 0)
    log.flush()


def values(m: LogManager, topic: str) -> list[bytes]:
    log = m.get_log(topic, 0)
    out, offset = [], log.log_start_offset
    while offset < log.next_offset:
        recs = list(iter_records(log.read(offset, 1 << 20).read()))
        out += [r.value for r in recs]
        offset = recs[-1].offset + 1
    return out


def test_old_segments_go_cold_and_a_restart_finds_them(tmp_path):
    now = [NOW]
    m = manager(tmp_path, now)
    fill(m, "a")
    fill(m, "b")
    expected = [b"value-%03d" % i for i in range(20)]
    assert m.tier_pass(hot_retention_ms=60_000, hot_retention_bytes=-1) == 0  # young
    moved = m.tier_pass(hot_retention_ms=1_000, hot_retention_bytes=-1)
    segments = {t: m.get_log(t, 0).segments for t in "ab"}
    assert moved == sum(len(s) - 1 for s in segments.values()) > 2
    assert all(s.cold for segs in segments.values() for s in segs[:-1]) and not segments["a"][-1].cold
    cold_roots = {m.get_log(t, 0).cold_directory.parent for t in "ab"}
    assert cold_roots <= {tmp_path / "cold1", tmp_path / "cold2"}
    assert values(m, "a") == values(m, "b") == expected
    m.retention_pass({("a", 0): 20, ("b", 0): 20})  # removes the hot copies' .deleted files
    assert not list((tmp_path / "hot" / "a-0").glob("*.deleted"))
    m.shutdown()
    again = manager(tmp_path, now)
    assert values(again, "a") == values(again, "b") == expected
    assert [s.cold for s in again.get_log("a", 0).segments] == [s.cold for s in segments["a"]]
    again.shutdown()


def test_a_deleted_topic_takes_its_cold_part_and_orphans_are_removed(tmp_path):
    now = [NOW]
    m = manager(tmp_path, now)
    fill(m, "a")
    fill(m, "b")
    m.tier_pass(hot_retention_ms=1_000, hot_retention_bytes=-1)
    cold_a = m.get_log("a", 0).cold_directory
    m.delete_log("a", 0)
    m.delete_pending_logs(force=True)
    assert not cold_a.exists()
    cold_b = m.get_log("b", 0).cold_directory
    m.shutdown()
    # b's hot part disappears while the broker is down (e.g. its disk was replaced)
    import shutil
    shutil.rmtree(tmp_path / "hot" / "b-0")
    again = manager(tmp_path, now)
    assert not cold_b.exists() and again.get_log("b", 0) is None
    again.shutdown()


def test_a_full_cold_dir_stops_the_mover_and_loses_nothing(tmp_path, monkeypatch):
    now = [NOW]
    m = manager(tmp_path, now)
    fill(m, "a")

    def no_space(source, target):
        raise OSError(errno.ENOSPC, "No space left on device")

    real = tiering._copy_file
    monkeypatch.setattr(tiering, "_copy_file", no_space)
    assert m.tier_pass(hot_retention_ms=1_000, hot_retention_bytes=-1) == 0
    root = m.get_log("a", 0).cold_directory.parent
    assert m.cold_dir_problems == {root: "full"}
    assert not any(s.cold for s in m.get_log("a", 0).segments)
    assert values(m, "a") == [b"value-%03d" % i for i in range(20)]
    monkeypatch.setattr(tiering, "_copy_file", real)  # space freed: the next pass moves
    assert m.tier_pass(hot_retention_ms=1_000, hot_retention_bytes=-1) > 0
    assert m.cold_dir_problems == {}
    m.shutdown()


def test_compacted_logs_stay_hot(tmp_path):
    now = [NOW]
    m = manager(tmp_path, now)
    log = m.get_or_create_log("c", 0, LogConfig(segment_bytes=400, cleanup_policy=("compact",)), is_new=True)
    for i in range(20):
        log.append_as_leader(build_batch([Record(0, NOW - 10_000, b"k%d" % i, b"v" * 20)]), 0)
    log.flush()
    assert len(log.segments) > 1
    assert m.tier_pass(hot_retention_ms=0, hot_retention_bytes=0) == 0
    m.shutdown()


def test_a_failed_cold_dir_takes_the_partitions_with_segments_there_offline(tmp_path):
    import pytest

    from mafka.errors import KafkaStorageError

    now = [NOW]
    failures = []
    m = LogManager([tmp_path / "hot"], CONFIG, lambda: now[0], broker_id=1, cluster_id="cid",
                   cold_dirs=[tmp_path / "cold1", tmp_path / "cold2"],
                   on_dir_failure=lambda d, exc: failures.append(d))
    m.startup()
    for t in "abcdef":
        fill(m, t)
    m.tier_pass(hot_retention_ms=1_000, hot_retention_bytes=-1)
    fill(m, "g")  # no cold segments yet
    roots = {t: m.get_log(t, 0).cold_directory.parent for t in "abcdef"}
    root = roots["a"]
    assert m.cold_dir_failed_for(("a", 0), OSError(5, "Input/output error"))
    assert not m.handle_cold_dir_failure(root, OSError("again"))  # once
    assert failures == [root]
    expected = sorted((t, 0) for t in "abcdef" if roots[t] == root)
    assert m.offline_partitions_in(root) == expected
    for tp in expected:
        assert m.get_log(*tp) is None
        with pytest.raises(KafkaStorageError):
            m.get_or_create_log(*tp)
    others = [t for t in "abcdef" if roots[t] != root]
    assert values(m, "g") and all(values(m, t) for t in others)
    assert m.cold_dir_problems[root].startswith("offline: I/O error")
    fill(m, "g", 40)
    before = [s.cold for s in m.get_log("g", 0).segments]
    m.tier_pass(hot_retention_ms=1_000, hot_retention_bytes=-1)
    g_root = m.get_log("g", 0).cold_directory.parent
    assert ([s.cold for s in m.get_log("g", 0).segments] == before) == (g_root == root)  # none into the failed dir
    m.shutdown()
    again = manager(tmp_path, now)  # a restart tries the dir again
    assert all(values(again, t) for t in "abcdef")
    again.shutdown()
