"""A partition the controller failed to bring online for a ZooKeeper error is tried again (not only at the next change)."""

from __future__ import annotations

from typing import Any

from twisted.internet import defer

from mafka.controller.partition_state_machine import ONLINE_RETRY_S
from mafka.coordination.store import ConnectionLossError
from tests.unit.controller.cluster import Cluster


def test_new_partitions_whose_state_znodes_failed_are_created_on_retry() -> None:
    cluster = Cluster((1, 2, 3))
    zk = cluster.active.zk
    real = zk.create_partition_states
    calls: list[int] = []

    def flaky(*args: Any, **kwargs: Any) -> Any:
        calls.append(1)
        if len(calls) == 1:
            return defer.fail(ConnectionLossError("connection dropped"))
        return real(*args, **kwargs)

    zk.create_partition_states = flaky  # type: ignore[method-assign]
    cluster.create("t", {0: [1, 2, 3], 1: [2, 3, 1]})
    assert cluster.state("t", 0) is None and cluster.state("t", 1) is None  # the write failed
    cluster.clock.advance(ONLINE_RETRY_S - 0.5)
    assert cluster.state("t", 0) is None
    cluster.clock.advance(1.0)
    s0, s1 = cluster.state("t", 0), cluster.state("t", 1)
    assert s0 is not None and s0.leader == 1 and s1 is not None and s1.leader == 2
    assert len(calls) == 2
    cluster.clock.advance(10 * ONLINE_RETRY_S)
    assert len(calls) == 2  # nothing left to retry


def test_an_offline_partition_without_an_eligible_leader_is_not_retried() -> None:
    cluster = Cluster((1, 2, 3, 4))
    x, y, z = cluster.others()
    cluster.create("t", {0: [x]})
    cluster.kill(x)
    assert cluster.state("t", 0).leader == -1  # type: ignore[union-attr]
    cluster.clock.advance(3 * ONLINE_RETRY_S)
    assert cluster.state("t", 0).leader == -1  # type: ignore[union-attr]
    assert cluster.active.partition_state_machine._retry is None
