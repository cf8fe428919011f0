"""The metadata cache (fed by UpdateMetadata) and the Metadata handler."""

from __future__ import annotations

from types import SimpleNamespace

from mafka.broker.handlers import metadata as metadata_handler
from mafka.broker.metadata_cache import MetadataCache
from mafka.errors import ErrorCode
from mafka.wire.codec import decode_body, decode_request, encode_body, encode_request
from mafka.wire.registry import API_SPECS


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


TOPIC_ID = bytes(range(1, 17))


def update_metadata_v7(topic_id=TOPIC_ID, leader_epoch=7):
    body = {
        "controller_id": 1,
        "controller_epoch": 1,
        "broker_epoch": -1,
        "topic_states": [
            {
                "topic_name": "t",
                "topic_id": topic_id,
                "partition_states": [
                    {"partition_index": 0, "controller_epoch": 1, "leader": 1, "leader_epoch": leader_epoch,
                     "isr": [1], "zk_version": 3, "replicas": [1, 2], "offline_replicas": [2]},
                ],
            }
        ],
        "live_brokers": [
            {"id": 1, "endpoints": [{"port": 9091, "host": "127.0.0.1", "listener": "PLAINTEXT", "security_protocol": 0}], "rack": None}
        ],
    }
    return decode_request(encode_request(6, 7, 1, "controller", body)[4:]).body


def answer(cache, version, topics, **flags):
    body = {"topics": topics, "allow_auto_topic_creation": False, **flags}
    request = decode_request(encode_request(3, version, 1, "c", body)[4:])
    response = metadata_handler.handlers(broker(cache))[3](request, CONN)
    spec = API_SPECS[3].response
    return decode_body(spec, version, encode_body(spec, version, response))


def test_every_metadata_version_encodes_the_answer_and_v7_plus_carry_leader_epochs_and_offline_replicas():
    cache = MetadataCache(1)
    cache.update(update_metadata_v7())
    for version in range(13):
        body = answer(cache, version, [{"name": "t"}])
        partition = body.topics[0].partitions[0]
        assert partition.leader_id == 1
        assert partition.leader_epoch == (7 if version >= 7 else -1)
        assert list(partition.offline_replicas) == ([2] if version >= 5 else [])


def test_topic_ids_are_answered_from_v10_and_topics_can_be_named_by_id():
    cache = MetadataCache(1)
    cache.update(update_metadata_v7())
    assert cache.topic_id("t") == TOPIC_ID and cache.topic_name(TOPIC_ID) == "t"
    body = answer(cache, 12, [{"name": None, "topic_id": TOPIC_ID}])
    assert [(t.name, t.topic_id, t.error_code) for t in body.topics] == [("t", TOPIC_ID, ErrorCode.NONE)]
    unknown = bytes(15) + b"\x09"
    body = answer(cache, 12, [{"name": None, "topic_id": unknown}])
    assert [(t.name, t.topic_id, t.error_code) for t in body.topics] == [(None, unknown, ErrorCode.UNKNOWN_TOPIC_ID)]
    # A topic created before ids (zero UUID from the controller) answers the zero UUID.
    other = MetadataCache(1)
    other.update(update_metadata_v7(topic_id=bytes(16)))
    assert answer(other, 10, None).topics[0].topic_id == bytes(16)


def test_authorized_operations_are_everything_when_asked_and_min_int_otherwise():
    cache = MetadataCache(1)
    cache.update(update_metadata_v7())
    body = answer(cache, 8, None, include_cluster_authorized_operations=True, include_topic_authorized_operations=True)
    # READ WRITE CREATE DELETE ALTER DESCRIBE DESCRIBE_CONFIGS ALTER_CONFIGS = bits 3-8, 10, 11
    assert body.topics[0].topic_authorized_operations == 0b110111111000
    # CREATE ALTER DESCRIBE CLUSTER_ACTION DESCRIBE_CONFIGS ALTER_CONFIGS IDEMPOTENT_WRITE = bits 5, 7-12
    assert body.cluster_authorized_operations == 0b1111110100000
    body = answer(cache, 9, None)
    assert body.topics[0].topic_authorized_operations == -(2**31)
    assert body.cluster_authorized_operations == -(2**31)


def test_a_deleted_topic_forgets_its_id():
    cache = MetadataCache(1)
    cache.update(update_metadata_v7())
    states = update_metadata_v7()
    states.topic_states[0].partition_states[0].leader = -2
    cache.update(states)
    assert cache.topic_name(TOPIC_ID) is None and cache.topic_id("t") == bytes(16)
