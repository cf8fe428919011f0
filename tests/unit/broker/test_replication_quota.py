"""The follower-side replication throttle (KIP-73) with a fake clock."""

from __future__ import annotations

from mafka.broker.replication_quota import ReplicationQuota, is_throttled_replica


def test_throttled_replica_lists() -> None:
    assert is_throttled_replica("*", 3, 7)
    assert is_throttled_replica("0:1, 3:7", 3, 7)
    assert not is_throttled_replica("0:1,3:6", 3, 7)
    assert not is_throttled_replica("", 3, 7)
    assert not is_throttled_replica(None, 3, 7)


def test_rate_over_sliding_windows() -> None:
    now = [100.0]
    limit = [1000.0]
    q = ReplicationQuota(lambda: now[0], lambda: limit[0], window_s=1.0, windows=11)
    assert not q.exceeded()
    q.record(9000)  # 9,000 bytes over at least 10 s: 900 B/s
    assert q.observed_rate() == 900.0
    assert not q.exceeded()
    now[0] += 0.5
    q.record(2000)  # 1,100 B/s
    assert q.exceeded()
    now[0] += 12  # every sample has left the 11 windows
    assert q.observed_rate() == 0.0
    assert not q.exceeded()


def test_no_rate_means_unlimited() -> None:
    q = ReplicationQuota(lambda: 0.0, lambda: None)
    q.record(10**12)
    assert not q.exceeded()
