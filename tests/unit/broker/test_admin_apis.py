"""ListOffsets v4–v7, IncrementalAlterConfigs v1, DescribeCluster, DescribeProducers and the SCRAM credential APIs.

Handlers run through the dispatcher on real logs in tmp dirs (the replica
manager fixture of ``test_replica_manager``) or against the in-memory
ZooKeeper store; no sockets.
"""

from __future__ import annotations

from mafka.errors import ErrorCode
from mafka.wire.records import Record, build_batch

from . import test_replica_manager
from .test_replica_manager import call, leader_and_isr, produce

env = test_replica_manager.env  # the fixture: a replica manager on real logs, a dispatcher

LIST_OFFSETS = 2


def records(offset_and_timestamps, **kw):
    return build_batch(
        [Record(i, ts, b"k", b"v") for i, ts in enumerate(offset_and_timestamps)], **kw
    )


def list_offsets(env, version, *partitions, replica_id=-1):
    """partitions: (index, timestamp[, current_leader_epoch]) → [(error, timestamp, offset, leader_epoch)]."""
    body = {
        "replica_id": replica_id,
        "isolation_level": 0,
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {
                        "partition_index": p[0],
                        "timestamp": p[1],
                        "current_leader_epoch": p[2] if len(p) > 2 else -1,
                    }
                    for p in partitions
                ],
            }
        ],
    }
    resp, _ = call(env, LIST_OFFSETS, version, body)
    return [
        (p.error_code, p.timestamp, p.offset, p.leader_epoch) for p in resp.topics[0].partitions
    ]


# ---------------------------------------------------------------------------------------- ListOffsets


def test_max_timestamp_is_the_earliest_record_holding_the_largest_timestamp(env):
    env.rm.become_leader_or_follower(leader_and_isr(epoch=4))
    produce(env, records([1000, 7000, 2000]))  # offsets 0-2: the max sits mid-batch
    env.rm.partitions[("t", 0)].log.roll()
    produce(env, records([3000, 7000, 4000]))  # offsets 3-5: the same max again, later
    produce(env, records([6999]))  # offset 6
    assert list_offsets(env, 7, (0, -3)) == [(0, 7000, 1, 4)]
    # Earliest, latest (the leader's epoch) and by time, at v7 too.
    assert list_offsets(env, 7, (0, -2)) == [(0, -1, 0, 4)]
    assert list_offsets(env, 7, (0, -1)) == [(0, -1, 7, 4)]
    assert list_offsets(env, 7, (0, 6500)) == [(0, 7000, 1, 4)]
    assert list_offsets(env, 7, (0, 7001)) == [(0, -1, -1, -1)]


def test_max_timestamp_in_a_later_segment_and_an_empty_log(env):
    env.rm.become_leader_or_follower(leader_and_isr())
    assert list_offsets(env, 7, (0, -3)) == [(0, -1, -1, -1)]
    produce(env, records([10, 20]))
    env.rm.partitions[("t", 0)].log.roll()
    produce(env, records([5, 30, 1]))
    assert list_offsets(env, 7, (0, -3)) == [(0, 30, 3, 0)]


def test_max_timestamp_of_a_log_append_time_batch_is_its_first_record(env):
    env.rm.become_leader_or_follower(leader_and_isr())
    produce(env, records([1, 2]))
    produce(
        env, records([5, 5, 5], timestamp_type=1)
    )  # offsets 2-4, all reported at maxTimestamp 5
    assert list_offsets(env, 7, (0, -3)) == [(0, 5, 2, 0)]


def test_offsets_above_the_high_watermark_are_hidden_from_consumers_not_replicas(env):
    env.rm.become_leader_or_follower(leader_and_isr(isr=(1, 3), replicas=(1, 3)))
    produce(
        env, records([100, 900, 200])
    )  # acks=1: the follower has fetched nothing, the HW stays 0
    assert list_offsets(env, 7, (0, -3), (1, -1)) == [
        (0, -1, -1, -1),
        (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, -1, -1, -1),
    ]
    assert list_offsets(env, 7, (0, -1)) == [(0, -1, 0, 0)]
    assert list_offsets(env, 7, (0, -3), replica_id=3) == [(0, 900, 1, 0)]
    assert list_offsets(env, 7, (0, -1), replica_id=3) == [(0, -1, 3, 0)]


def test_current_leader_epoch_fences_from_v4(env):
    env.rm.become_leader_or_follower(leader_and_isr(epoch=5))
    produce(env, records([1, 2]))
    got = list_offsets(env, 4, (0, -1, 4))
    assert got == [(ErrorCode.FENCED_LEADER_EPOCH, -1, -1, -1)]
    assert list_offsets(env, 5, (0, -1, 6)) == [(ErrorCode.UNKNOWN_LEADER_EPOCH, -1, -1, -1)]
    assert list_offsets(env, 6, (0, -1, 5)) == [(0, -1, 2, 5)]
    assert list_offsets(env, 4, (0, -1, -1)) == [(0, -1, 2, 5)]
    # A follower checks the epoch before leadership, as Kafka's getLocalLog.
    env.rm.become_leader_or_follower(leader_and_isr(epoch=6, leader=2, isr=(1, 2), replicas=(1, 2)))
    assert list_offsets(env, 7, (0, -1, 5)) == [(ErrorCode.FENCED_LEADER_EPOCH, -1, -1, -1)]
    assert list_offsets(env, 7, (0, -1, 6)) == [(ErrorCode.NOT_LEADER_OR_FOLLOWER, -1, -1, -1)]


def test_offset_not_available_while_the_high_watermark_lags_the_new_epoch(env):
    env.rm.become_leader_or_follower(leader_and_isr(epoch=0, isr=(1, 3), replicas=(1, 3)))
    produce(env, records([100, 200, 300]))  # LEO 3, HW 0 (the follower has not fetched)
    env.rm.become_leader_or_follower(
        leader_and_isr(epoch=1, isr=(1, 3), replicas=(1, 3))
    )  # epoch 1 starts at 3
    assert list_offsets(env, 5, (0, -1)) == [(ErrorCode.OFFSET_NOT_AVAILABLE, -1, -1, -1)]
    assert list_offsets(env, 4, (0, -1)) == [(ErrorCode.LEADER_NOT_AVAILABLE, -1, -1, -1)]
    assert list_offsets(env, 7, (0, -3)) == [(ErrorCode.OFFSET_NOT_AVAILABLE, -1, -1, -1)]
    assert list_offsets(env, 7, (0, 150)) == [(ErrorCode.OFFSET_NOT_AVAILABLE, -1, -1, -1)]
    assert list_offsets(env, 7, (0, -2)) == [
        (0, -1, 0, 0)
    ]  # the earliest offset is always available
    assert list_offsets(env, 7, (0, -1), replica_id=3) == [
        (0, -1, 3, 1)
    ]  # replicas are not held back


def test_a_partition_named_twice_is_invalid_request(env):
    env.rm.become_leader_or_follower(leader_and_isr())
    got = list_offsets(env, 7, (0, -1), (0, -2))
    assert got == [(ErrorCode.INVALID_REQUEST, -1, -1, -1)] * 2
