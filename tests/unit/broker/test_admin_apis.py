"""ListOffsets v4–v7, IncrementalAlterConfigs v1, DescribeCluster, DescribeProducers and the SCRAM credential APIs.

Handlers run through the dispatcher on real logs in tmp dirs (the replica
manager fixture of ``test_replica_manager``) or against the in-memory
ZooKeeper store; no sockets.
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest
from twisted.internet import defer

from mafka.broker.config import BrokerConfig
from mafka.broker.dispatcher import collect_handlers
from mafka.broker.metadata_cache import MetadataCache
from mafka.coordination.kafka_zk import KafkaZkClient
from mafka.coordination.memory_store import MemoryStore, MemoryZooKeeper
from mafka.errors import ErrorCode
from mafka.wire.codec import decode_request, encode_request
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


# ---------------------------------------------------------------------------- IncrementalAlterConfigs v1


def _fired(d):
    """The result of an already-fired Deferred (the in-memory store answers at once)."""
    out = []
    d.addBoth(out.append)
    assert out, "deferred did not fire"
    if hasattr(out[0], "raiseException"):
        out[0].raiseException()
    return out[0]


def _wire(api_key, version, body):
    """*body* encoded by Mafka's request codec at *version* and decoded back (what a handler receives)."""
    return decode_request(encode_request(api_key, version, 7, "client", body)[4:])


@pytest.fixture
def zk_env():
    tree = MemoryZooKeeper()
    store = MemoryStore(tree)
    store.start()
    zk = KafkaZkClient(store)
    _fired(zk.create_persistent_roots())
    config = BrokerConfig.from_properties({"zookeeper.connect": "zk:2181", "broker.id": "1"})
    cache = MetadataCache(1)
    broker = SimpleNamespace(
        zk=zk, config=config, broker_id=1, topic_configs=None, metadata_cache=cache
    )
    _fired(zk.create_topic("t", {0: [1]}, {"retention.ms": "1000"}))
    return SimpleNamespace(
        tree=tree, zk=zk, broker=broker, cache=cache, handlers=collect_handlers(broker)
    )


def incremental(zk_env, resources, *, version=1, validate_only=False):
    """resources: (type, name, [(config, op, value)]) → [(error_code, resource_name)]."""
    body = {
        "resources": [
            {
                "resource_type": rtype,
                "resource_name": name,
                "configs": [{"name": k, "config_operation": op, "value": v} for k, op, v in ops],
            }
            for rtype, name, ops in resources
        ],
        "validate_only": validate_only,
    }
    answer = _fired(defer.maybeDeferred(zk_env.handlers[44], _wire(44, version, body), None))
    return [(r["error_code"], r["resource_name"]) for r in answer["responses"]]


SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
TOPIC, BROKER = 2, 4


def test_incremental_v1_append_skips_present_values_and_subtract_removes(zk_env):
    def policy():
        return _fired(zk_env.zk.get_topic_config("t")).get("cleanup.policy")

    assert incremental(zk_env, [(TOPIC, "t", [("cleanup.policy", APPEND, "compact")])]) == [
        (0, "t")
    ]
    assert policy() == "delete,compact"  # appended to Kafka's default
    assert incremental(zk_env, [(TOPIC, "t", [("cleanup.policy", APPEND, "compact,delete")])]) == [
        (0, "t")
    ]
    assert policy() == "delete,compact"  # nothing new: values already present are skipped
    assert incremental(zk_env, [(TOPIC, "t", [("cleanup.policy", SUBTRACT, "delete")])]) == [
        (0, "t")
    ]
    assert policy() == "compact"
    # validate_only checks and writes nothing
    assert incremental(
        zk_env, [(TOPIC, "t", [("cleanup.policy", APPEND, "delete")])], validate_only=True
    ) == [(0, "t")]
    assert policy() == "compact"
    assert _fired(zk_env.zk.get_topic_config("t"))["retention.ms"] == "1000"  # other overrides kept


def test_incremental_v1_errors(zk_env):
    got = incremental(
        zk_env,
        [
            (TOPIC, "t", [("retention.ms", APPEND, "5")]),  # not a LIST config
            (TOPIC, "t", [("cleanup.policy", APPEND, None)]),  # null value
            (
                TOPIC,
                "t",
                [("cleanup.policy", SUBTRACT, "x"), ("cleanup.policy", SET, "delete")],
            ),  # twice
            (TOPIC, "t", [("cleanup.policy", APPEND, "bogus")]),  # an invalid resulting value
            (TOPIC, "nope", [("cleanup.policy", APPEND, "compact")]),
            (
                BROKER,
                "1",
                [("leader.replication.throttled.rate", APPEND, "5")],
            ),  # broker: not a LIST config
        ],
    )
    assert [code for code, _ in got] == [
        ErrorCode.INVALID_CONFIG,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.INVALID_REQUEST,
        ErrorCode.INVALID_CONFIG,
        ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
        ErrorCode.INVALID_CONFIG,
    ]
    assert "cleanup.policy" not in _fired(zk_env.zk.get_topic_config("t"))


def test_incremental_v0_and_v1_set_and_delete_broker_configs(zk_env):
    for version in (0, 1):
        ops = [("follower.replication.throttled.rate", SET, str(1000 + version))]
        assert incremental(zk_env, [(BROKER, "1", ops)], version=version) == [(0, "1")]
        assert _fired(zk_env.zk.get_broker_config(1)) == {
            "follower.replication.throttled.rate": str(1000 + version)
        }
    ops = [("follower.replication.throttled.rate", DELETE, None)]
    assert incremental(zk_env, [(BROKER, "1", ops)], validate_only=True) == [(0, "1")]
    assert _fired(zk_env.zk.get_broker_config(1)) != {}
    assert incremental(zk_env, [(BROKER, "1", ops)]) == [(0, "1")]
    assert _fired(zk_env.zk.get_broker_config(1)) == {}
