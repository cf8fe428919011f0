"""The metadata cache (fed by UpdateMetadata) and the Metadata handler."""

from __future__ import annotations

from types import SimpleNamespace

from mafka.broker.handlers import metadata as metadata_handler
from mafka.broker.metadata_cache import MetadataCache
from mafka.errors import ErrorCode
from mafka.wire.codec import decode_request, encode_request


def update_metadata(controller_epoch=1, *, brokers=(1, 2, 3), leaders=None, topic="t", partitions=3, extra_topics=()):
    leaders = leaders or {p: brokers[p % len(brokers)] for p in range(partitions)}
    states = [
        {
            "topic_name": topic,
            "partition_states": [
                {"partition_index": p, "controller_epoch": controller_epoch, "leader": leader, "leader_epoch": 0,
                 "isr": [leader] if leader >= 0 else [], "zk_version": 0, "replicas": [abs(leader)], "offline_replicas": []}
                for p, leader in leaders.items()
            ],
        },
        *extra_topics,
    ]
    body = {
        "controller_id": brokers[0],
        "controller_epoch": controller_epoch,
        "broker_epoch": -1,
        "topic_states": states,
        "live_brokers": [
            {"id": b, "endpoints": [{"port": 9090 + b, "host": "127.0.0.1", "listener": "PLAINTEXT", "security_protocol": 0}], "rack": None}
            for b in brokers
        ],
    }
    return decode_request(encode_request(6, 5, 1, "controller", body)[4:]).body


def metadata_request(version, topics, allow=True):
    body = {"topics": None if topics is None else [{"name": t} for t in topics], "allow_auto_topic_creation": allow}
    return decode_request(encode_request(3, version, 1, "c", body)[4:])


def broker(cache, auto=True):
    created = []
    return SimpleNamespace(metadata_cache=cache, auto_create_topics=auto, auto_create_topic=created.append, created=created)


CONN = SimpleNamespace(listener="PLAINTEXT", peer="x")


def test_update_fills_the_cache_and_stale_controllers_are_refused():
    cache = MetadataCache(1)
    assert cache.update(update_metadata(2))[0] == ErrorCode.NONE
    assert cache.controller_id == 1 and cache.partition_count("t") == 3
    assert cache.update(update_metadata(1, brokers=(9,)))[0] == ErrorCode.STALE_CONTROLLER_EPOCH
    assert [b[0] for b in cache.alive_brokers("PLAINTEXT")] == [1, 2, 3]


def test_leader_minus_two_deletes_partitions():
    cache = MetadataCache(1)
    cache.update(update_metadata())
    _, deleted = cache.update(update_metadata(leaders={0: -2, 1: -2, 2: -2}))
    assert sorted(deleted) == [("t", 0), ("t", 1), ("t", 2)]
    assert not cache.has_topic("t")


def test_metadata_v0_empty_list_means_all_and_v1_null_means_all():
    cache = MetadataCache(1)
    cache.update(update_metadata())
    handle = metadata_handler.handlers(broker(cache))[3]
    for version, topics in ((0, []), (1, None), (4, None)):
        body = handle(metadata_request(version, topics), CONN)
        assert [t["name"] for t in body["topics"]] == ["t"]
    body = handle(metadata_request(1, []), CONN)
    assert body["topics"] == []


def test_metadata_answers_brokers_controller_and_leaders():
    cache = MetadataCache(1)
    cache.cluster_id = "abc"
    cache.update(update_metadata(leaders={0: 1, 1: -1, 2: 3}))
    body = metadata_handler.handlers(broker(cache))[3](metadata_request(4, ["t"]), CONN)
    assert body["controller_id"] == 1 and body["cluster_id"] == "abc"
    assert [(b["node_id"], b["port"]) for b in body["brokers"]] == [(1, 9091), (2, 9092), (3, 9093)]
    parts = {p["partition_index"]: p for p in body["topics"][0]["partitions"]}
    assert parts[0]["leader_id"] == 1 and parts[0]["error_code"] == ErrorCode.NONE
    assert parts[1]["leader_id"] == -1 and parts[1]["error_code"] == ErrorCode.LEADER_NOT_AVAILABLE


def test_unknown_topics_are_auto_created_only_when_allowed():
    cache = MetadataCache(1)
    cache.update(update_metadata())
    b = broker(cache)
    handle = metadata_handler.handlers(b)[3]
    body = handle(metadata_request(4, ["new"]), CONN)
    assert body["topics"][0]["error_code"] == ErrorCode.LEADER_NOT_AVAILABLE and b.created == ["new"]
    body = handle(metadata_request(4, ["other"], allow=False), CONN)
    assert body["topics"][0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and b.created == ["new"]
    body = handle(metadata_request(1, ["bad name!"]), CONN)
    assert body["topics"][0]["error_code"] == ErrorCode.INVALID_TOPIC_EXCEPTION
    body = metadata_handler.handlers(broker(cache, auto=False))[3](metadata_request(2, ["x"]), CONN)
    assert body["topics"][0]["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_a_listener_without_endpoints_sees_no_brokers():
    cache = MetadataCache(1)
    cache.update(update_metadata())
    body = metadata_handler.handlers(broker(cache))[3](metadata_request(1, None), SimpleNamespace(listener="INTERNAL"))
    assert body["brokers"] == []
    assert all(p["leader_id"] == -1 for p in body["topics"][0]["partitions"])
