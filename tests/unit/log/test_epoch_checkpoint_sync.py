"""The leader epoch checkpoint is rewritten at once but fsynced later, before the recovery points that rely on it."""

from __future__ import annotations

import os

from mafka.log.checkpoint import (
    LEADER_EPOCH_CHECKPOINT,
    RECOVERY_POINT_OFFSET_CHECKPOINT,
    LeaderEpochCheckpointFile,
)
from mafka.log.config import LogConfig
from mafka.log.epoch_cache import LeaderEpochCache
from mafka.log.manager import LogManager


def recording_fsyncs(monkeypatch):
    """Records the path of every fsynced file (directories as well)."""
    synced = []
    real = os.fsync

    def fsync(fd):
        synced.append(os.readlink(f"/proc/self/fd/{fd}"))
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)
    return synced


def test_an_assigned_epoch_is_on_disk_at_once_and_fsynced_only_by_sync(tmp_path, monkeypatch):
    synced = recording_fsyncs(monkeypatch)
    cache = LeaderEpochCache.in_dir(tmp_path)
    assert cache.assign(3, 100)
    assert LeaderEpochCheckpointFile.in_dir(tmp_path).read() == [(3, 100)]  # readable now
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
