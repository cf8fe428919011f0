"""The leader epoch checkpoint is rewritten by a writer thread moments later and fsynced later still, before the
recovery points that rely on it; renames and deletions of the partition directory never race the writer."""

from __future__ import annotations

import os
import threading

import pytest

from mafka.log import checkpoint as checkpoint_module
from mafka.log.checkpoint import (
    LEADER_EPOCH_CHECKPOINT,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    WRITE_BEHIND,
    LeaderEpochCheckpointFile,
)
from mafka.log.config import LogConfig
from mafka.log.epoch_cache import LeaderEpochCache
from mafka.log.log import Log
from mafka.log.manager import LogManager
from mafka.wire.records import Record, build_batch


def recording_fsyncs(monkeypatch):
    """Records the path of every fsynced file (directories as well)."""
    synced = []
    real = os.fsync

    def fsync(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return synced


def test_an_assigned_epoch_is_written_by_the_writer_thread_and_fsynced_only_by_sync(tmp_path, monkeypatch):
    synced = recording_fsyncs(monkeypatch)
    cache = LeaderEpochCache.in_dir(tmp_path)
    assert cache.assign(3, 100)
    assert WRITE_BEHIND.drain()
    assert not cache.checkpoint.pending
    assert LeaderEpochCheckpointFile.in_dir(tmp_path).read() == [(3, 100)]
    assert synced == [] and cache.checkpoint.dirty
    cache.sync()
    assert synced == [str(tmp_path / LEADER_EPOCH_CHECKPOINT), str(tmp_path)]
    assert not cache.checkpoint.dirty
    cache.sync()  # nothing new: no fsync
    assert len(synced) == 2


def test_a_cache_without_fsync_never_syncs(tmp_path, monkeypatch):
    synced = recording_fsyncs(monkeypatch)
    cache = LeaderEpochCache.in_dir(tmp_path, fsync=False)
    cache.assign(1, 0)
    cache.sync()
    assert synced == [] and not cache.checkpoint.dirty


def test_recovery_points_are_written_only_after_the_epochs_under_them_are_durable(tmp_path, monkeypatch):
    manager = LogManager([tmp_path / "d"], LogConfig(), lambda: 0, broker_id=1, cluster_id="c")
    manager.startup()
    try:
        log = manager.get_or_create_log("t", 0, is_new=True)
        log.epoch_cache.assign(7, 0)
        assert log.epoch_cache.checkpoint.dirty
        events = []
        real_fsync, real_replace = os.fsync, os.replace

        def fsync(fd):
            events.append(("fsync", os.path.basename(os.readlink(f"/proc/self/fd/{fd}"))))
            return real_fsync(fd)

        def replace(src, dst):
            events.append(("replace", os.path.basename(str(dst))))
            return real_replace(src, dst)

        monkeypatch.setattr(os, "fsync", fsync)
        monkeypatch.setattr(os, "replace", replace)
        manager.checkpoint_recovery_points()
        epoch_synced = events.index(("fsync", LEADER_EPOCH_CHECKPOINT))
        points_written = events.index(("replace", RECOVERY_POINT_OFFSET_CHECKPOINT))
        assert epoch_synced < points_written
        assert not log.epoch_cache.checkpoint.dirty
    finally:
        manager.shutdown()


class HeldWrites:
    """Makes the writer thread wait (inside atomic_write) until released; counts the writes."""

    def __init__(self, monkeypatch):
        self.release = threading.Event()
        self.entered = threading.Event()
        self.writes = []
        real = checkpoint_module.atomic_write

        def atomic_write(path, data, *, fsync=True):
            if threading.current_thread().name == "leader-epoch-checkpoint-writer":
                self.entered.set()
                assert self.release.wait(10)
            self.writes.append((str(path), data))
            return real(path, data, fsync=fsync)

        monkeypatch.setattr(checkpoint_module, "atomic_write", atomic_write)


def test_many_changes_while_the_writer_is_busy_are_written_once_with_the_newest_contents(tmp_path, monkeypatch):
    held = HeldWrites(monkeypatch)
    (tmp_path / "a").mkdir()
    LeaderEpochCache.in_dir(tmp_path / "a").assign(0, 0)
    assert held.entered.wait(10)  # the writer is inside the first file's write
    (tmp_path / "b").mkdir()
    cache = LeaderEpochCache.in_dir(tmp_path / "b")
    for epoch in range(1, 50):
        cache.assign(epoch, epoch * 10)
    held.release.set()
    assert WRITE_BEHIND.drain()
    assert [w for w in held.writes if "/b/" in w[0]] == [(str(tmp_path / "b" / LEADER_EPOCH_CHECKPOINT),
                                                         b"0\n" + f"{49}\n".encode() + b"".join(
                                                             f"{e} {e * 10}\n".encode() for e in range(1, 50)))]
    assert LeaderEpochCache.in_dir(tmp_path / "b").entries == cache.entries


def test_a_failed_write_stays_pending_and_the_next_sync_raises_it(tmp_path, monkeypatch):
    cache = LeaderEpochCache.in_dir(tmp_path)
    real = checkpoint_module.atomic_write
    failing = [True]

    def atomic_write(path, data, *, fsync=True):
        if failing[0]:
            raise OSError(5, "Input/output error")
        return real(path, data, fsync=fsync)

    monkeypatch.setattr(checkpoint_module, "atomic_write", atomic_write)
    cache.assign(4, 40)
    assert WRITE_BEHIND.drain()
    assert cache.checkpoint.pending
    with pytest.raises(OSError, match="Input/output"):
        cache.sync()  # what takes the log dir offline
    assert cache.checkpoint.pending and cache.checkpoint.dirty
    failing[0] = False
    cache.sync()
    assert not cache.checkpoint.pending and not cache.checkpoint.dirty
    assert LeaderEpochCache.in_dir(tmp_path).entries == cache.entries


def test_a_rename_of_the_partition_directory_waits_for_the_writer_and_later_writes_follow_it(tmp_path, monkeypatch):
    held = HeldWrites(monkeypatch)
    log = Log.open(tmp_path / "t-0", LogConfig(), lambda: 0, epoch_cache=LeaderEpochCache.in_dir(tmp_path / "t-0"))
    log.epoch_cache.assign(1, 0)
    assert held.entered.wait(10)
    renamed = threading.Thread(target=log.rename_dir, args=(tmp_path / "t-0.abc-future",))
    renamed.start()
    renamed.join(0.3)
    assert renamed.is_alive()  # blocked: the writer holds the file
    held.release.set()
    renamed.join(10)
    assert not renamed.is_alive()
    log.epoch_cache.assign(2, 0)
    assert WRITE_BEHIND.drain()
    assert not (tmp_path / "t-0").exists()
    assert LeaderEpochCache.in_dir(tmp_path / "t-0.abc-future").entries == [(2, 0)]
    log.close()


def test_a_deleted_log_gets_no_late_write_and_a_closed_one_writes_what_was_pending(tmp_path, monkeypatch):
    held = HeldWrites(monkeypatch)
    first = Log.open(tmp_path / "a-0", LogConfig(), lambda: 0, epoch_cache=LeaderEpochCache.in_dir(tmp_path / "a-0"))
    first.epoch_cache.assign(1, 0)
    assert held.entered.wait(10)  # the writer is busy with a-0 ...
    doomed = Log.open(tmp_path / "d-0", LogConfig(), lambda: 0, epoch_cache=LeaderEpochCache.in_dir(tmp_path / "d-0"))
    doomed.epoch_cache.assign(3, 0)  # ... so d-0's write is queued behind it
    kept = Log.open(tmp_path / "k-0", LogConfig(), lambda: 0, epoch_cache=LeaderEpochCache.in_dir(tmp_path / "k-0"))
    kept.epoch_cache.assign(5, 0)
    doomed.delete()
    kept.close()  # writes its pending change itself
    assert LeaderEpochCache.in_dir(tmp_path / "k-0").entries == [(5, 0)]
    held.release.set()
    assert WRITE_BEHIND.drain()
    assert not (tmp_path / "d-0").exists()
    assert not any("d-0" in path for path, _ in held.writes)
    first.close()


def test_creating_a_log_and_rolling_segments_fsync_no_directory_until_the_flush_that_needs_them(tmp_path, monkeypatch):
    manager = LogManager([tmp_path / "d"], LogConfig(segment_bytes=200), lambda: 0, broker_id=1, cluster_id="c")
    manager.startup()
    try:
        synced = recording_fsyncs(monkeypatch)
        empty = manager.get_or_create_log("t", 1, is_new=True)
        log = manager.get_or_create_log("t", 0, is_new=True)
        for _ in range(6):  # several rolls
            log.append_as_leader(build_batch([Record(0, 0, b"k", b"v" * 60)]), 0)
        assert len(log.segments) > 2
        assert synced == []  # neither the two new partition dirs nor the new segments
        log.flush()
        log_dir, partition_dir = str(tmp_path / "d"), str(tmp_path / "d" / "t-0")
        dirs = [p for p in synced if p in (log_dir, partition_dir)]
        assert dirs == [log_dir, partition_dir]  # the log's entry in the log dir, then the entries in it
        assert log.recovery_point == log.next_offset
        synced.clear()
        log.flush()  # nothing new: nothing fsynced
        empty.flush()  # an empty log promises nothing: nothing fsynced
        assert synced == []
    finally:
        manager.shutdown()
