"""An append that runs re-entrantly while a fetch reads (a pipelined produce released by that read) still wakes it.

In a broker the follower's read can move the HW, complete a parked acks=all
produce, and let that producer's connection run its next, already-buffered
produce at once — before the fetch is parked.  Kafka's tryCompleteElseWatch
checks again after watching; without that the fetch slept for max_wait_ms.
"""

from __future__ import annotations

from tests.unit.broker.test_partition_replication import FetchPartition, batch, lai, produce, rm_env  # noqa: F401


def test_an_append_during_the_fetch_read_wakes_the_parked_fetch(rm_env):  # noqa: F811
    rm = rm_env.make()
    rm.become_leader_or_follower(lai((0, 1, 1, (1, 2), (1, 2))))
    produce(rm, batch(1))
    partition = rm.partitions[("t", 0)]
    original = partition.update_follower
    fired = []

    def update_then_append(*args, **kwargs):
        moved = original(*args, **kwargs)
        if not fired:
            fired.append(True)
            produce(rm, batch(1))  # the pipelined produce, run inside this fetch's read
        return moved

    partition.update_follower = update_then_append
    out: list = []
    # The follower fetches at the log end (1): nothing to read yet, so it would park.
    rm.fetch(2, 500, 1, 1 << 20, [FetchPartition("t", 0, 1, 1 << 20, 1)]).addCallback(out.append)
    assert fired
    assert out, "the fetch slept although an append arrived while it was being read"
    assert out[0][0].result.data.size > 0


def test_a_parked_follower_fetch_answers_at_once_when_the_leader_epoch_moves(rm_env):  # noqa: F811
    rm = rm_env.make()
    rm.become_leader_or_follower(lai((0, 1, 1, (1, 2), (1, 2))))
    produce(rm, batch(1))
    out: list = []
    rm.fetch(2, 500, 1, 1 << 20, [FetchPartition("t", 0, 1, 1 << 20, 1)]).addCallback(out.append)
    assert not out
    rm.become_leader_or_follower(lai((0, 1, 2, (1, 2), (1, 2))))  # same leader, epoch 2
    assert out, "the fetch waited for max_wait_ms although its epoch is gone"
    assert out[0][0].error.name == "FENCED_LEADER_EPOCH"


def test_a_fetcher_manager_that_shut_down_follows_nothing() -> None:
    from mafka.broker.replica_fetcher import FetcherConfig, ReplicaFetcherManager
    from mafka.broker.replica_manager import FollowerTarget

    manager = ReplicaFetcherManager(1, None, None, FetcherConfig())
    manager.shutdown()
    manager.add_partitions({("t", 0): FollowerTarget(2, "127.0.0.1", 1, 0)})
    assert manager.fetchers == {} and manager.partitions() == {}
