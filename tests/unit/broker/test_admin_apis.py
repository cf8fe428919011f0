"""ListOffsets v4–v7, IncrementalAlterConfigs v1, DescribeCluster, DescribeProducers and the SCRAM credential APIs.

Handlers run through the dispatcher on real logs in tmp dirs (the replica
manager fixture of ``test_replica_manager``) or against the in-memory
ZooKeeper store; no sockets.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from types import SimpleNamespace

import pytest
from twisted.internet import defer

from mafka.broker.config import BrokerConfig
from mafka.broker.dispatcher import collect_handlers
from mafka.broker.metadata_cache import MetadataCache
from mafka.broker.scram import (
    ScramMechanism,
    credential_from_string,
    credential_to_string,
    generate_credential,
)
from mafka.coordination.kafka_zk import KafkaZkClient
from mafka.coordination.memory_store import MemoryStore, MemoryZooKeeper
from mafka.errors import ErrorCode
from mafka.wire.codec import decode_request, decode_response, encode_request, encode_response
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
    # Producers may not send LogAppendTime batches (INVALID_TIMESTAMP): append as a leader whose
    # broker stamped the batch would. Offsets 2-4, all reported at maxTimestamp 5.
    partition = env.rm.partitions[("t", 0)]
    partition.append_as_leader(records([5, 5, 5], timestamp_type=1))
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
    body = {
        "resources": [
            {"resource_type": TOPIC, "resource_name": "t", "configuration_keys": ["cleanup.policy"]}
        ],
        "include_synonyms": False,
    }
    described = _fired(defer.maybeDeferred(zk_env.handlers[32], _wire(32, 1, body), None))
    assert (
        described["results"][0]["configs"][0]["value"] == "delete,compact"
    )  # in the order stored, as Kafka
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
    # Subtracting the last value leaves an empty list, which Kafka 2.8 accepts (keep everything).
    assert incremental(zk_env, [(TOPIC, "t", [("cleanup.policy", SUBTRACT, "compact")])]) == [(0, "t")]
    assert policy() == ""


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


# ---------------------------------------------------------------------------------- DescribeCluster


def cluster_metadata(controller_id=2, racks=None):
    """An UpdateMetadata body: brokers 1-3 (rack per *racks*), topic t with 3 partitions led by 1."""
    racks = racks or {}
    body = {
        "controller_id": controller_id,
        "controller_epoch": 1,
        "broker_epoch": -1,
        "topic_states": [
            {
                "topic_name": "t",
                "partition_states": [
                    {
                        "partition_index": p,
                        "controller_epoch": 1,
                        "leader": 1,
                        "leader_epoch": 0,
                        "isr": [1],
                        "zk_version": 0,
                        "replicas": [1],
                        "offline_replicas": [],
                    }
                    for p in range(3)
                ],
            }
        ],
        "live_brokers": [
            {
                "id": b,
                "endpoints": [
                    {
                        "port": 9090 + b,
                        "host": "127.0.0.1",
                        "listener": "PLAINTEXT",
                        "security_protocol": 0,
                    },
                    {
                        "port": 9190 + b,
                        "host": "10.0.0.1",
                        "listener": "INTERNAL",
                        "security_protocol": 0,
                    },
                ],
                "rack": racks.get(b),
            }
            for b in (1, 2, 3)
        ],
    }
    return _wire(6, 5, body).body


def describe_cluster(handlers, include, listener="PLAINTEXT", *, version=0, endpoint_type=1):
    body = {"include_cluster_authorized_operations": include, "endpoint_type": endpoint_type}
    return handlers[60](_wire(60, version, body), SimpleNamespace(listener=listener))


def test_describe_cluster_names_cluster_controller_and_brokers_with_racks(zk_env):
    zk_env.cache.cluster_id = "mafka-cluster-1"
    zk_env.cache.update(cluster_metadata(controller_id=2, racks={1: "r1", 3: "r3"}))
    body = describe_cluster(zk_env.handlers, include=False)
    assert (body["error_code"], body["cluster_id"], body["controller_id"]) == (
        0,
        "mafka-cluster-1",
        2,
    )
    brokers = [(b["broker_id"], b["host"], b["port"], b["rack"]) for b in body["brokers"]]
    assert brokers == [
        (1, "127.0.0.1", 9091, "r1"),
        (2, "127.0.0.1", 9092, None),
        (3, "127.0.0.1", 9093, "r3"),
    ]
    assert body["cluster_authorized_operations"] == -(2**31)  # not asked: Kafka's "not provided"
    internal = describe_cluster(zk_env.handlers, include=False, listener="INTERNAL")
    assert [(b["host"], b["port"]) for b in internal["brokers"]] == [
        ("10.0.0.1", 9191),
        ("10.0.0.1", 9192),
        ("10.0.0.1", 9193),
    ]


def test_describe_cluster_authorized_operations_when_asked(zk_env):
    zk_env.cache.update(cluster_metadata())
    ops = describe_cluster(zk_env.handlers, include=True)["cluster_authorized_operations"]
    # AclOperation codes a cluster supports: CREATE 5, ALTER 7, DESCRIBE 8, CLUSTER_ACTION 9,
    # DESCRIBE_CONFIGS 10, ALTER_CONFIGS 11, IDEMPOTENT_WRITE 12.
    assert {bit for bit in range(32) if ops & (1 << bit)} == {5, 7, 8, 9, 10, 11, 12}
    # The answer goes on the wire at v0 (flexible) and reads back the same.
    request = _wire(60, 0, {"include_cluster_authorized_operations": True})
    frame = encode_response(
        request.header, zk_env.handlers[60](request, SimpleNamespace(listener="PLAINTEXT"))
    )
    assert decode_response(60, 0, frame[4:])[1].cluster_authorized_operations == ops


def test_describe_cluster_v1_v2_endpoint_types_and_fencing(zk_env):
    zk_env.cache.cluster_id = "c1"
    zk_env.cache.update(cluster_metadata(controller_id=1))
    for version in (1, 2):
        body = describe_cluster(zk_env.handlers, include=False, version=version)
        assert (body["error_code"], body["endpoint_type"], body["controller_id"]) == (0, 1, 1)
        assert [b["is_fenced"] for b in body["brokers"]] == [False] * 3
        refused = describe_cluster(zk_env.handlers, include=False, version=version, endpoint_type=2)
        assert (refused["error_code"], refused["brokers"]) == (
            ErrorCode.MISMATCHED_ENDPOINT_TYPE,
            [],
        )
        unknown = describe_cluster(zk_env.handlers, include=False, version=version, endpoint_type=7)
        assert unknown["error_code"] == ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
    # A controller the cache names but that has no endpoint on this listener is reported as none.
    zk_env.cache.update(cluster_metadata(controller_id=9))
    assert describe_cluster(zk_env.handlers, include=False, version=2)["controller_id"] == -1


# -------------------------------------------------------------------------------- DescribeProducers


def idempotent(n, *, pid, epoch=0, seq=0, ts=5000):
    return build_batch(
        [Record(i, ts + i, b"k", b"v") for i in range(n)],
        producer_id=pid,
        producer_epoch=epoch,
        base_sequence=seq,
    )


def describe_producers(env, topics):
    body = {"topics": [{"name": t, "partition_indexes": list(ps)} for t, ps in topics]}
    resp, _ = call(env, 61, 0, body)
    return {
        (t.name, p.partition_index): (
            p.error_code,
            [
                (
                    a.producer_id,
                    a.producer_epoch,
                    a.last_sequence,
                    a.last_timestamp,
                    a.coordinator_epoch,
                    a.current_txn_start_offset,
                )
                for a in p.active_producers
            ],
        )
        for t in resp.topics
        for p in t.partitions
    }


def test_describe_producers_lists_each_partitions_producer_state(env):
    env.broker.metadata_cache.update(cluster_metadata())
    env.rm.become_leader_or_follower(leader_and_isr(partitions=(0,)))
    produce(env, idempotent(3, pid=7000))  # sequences 0-2
    produce(env, idempotent(2, pid=7000, seq=3, ts=6000))  # 3-4, last timestamp 6001
    produce(env, idempotent(1, pid=42, epoch=3))
    produce(env, records([1, 2]))  # not idempotent: no producer state
    got = describe_producers(env, [("t", (0, 1, 9)), ("nope", (0,))])
    assert got[("t", 0)] == (0, [(42, 3, 0, 5000, -1, -1), (7000, 0, 4, 6001, -1, -1)])
    assert got[("t", 1)] == (
        ErrorCode.NOT_LEADER_OR_FOLLOWER,
        [],
    )  # in the metadata, not hosted here
    assert got[("t", 9)] == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])
    assert got[("nope", 0)] == (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, [])


def test_describe_producers_on_a_follower_replica(env):
    env.broker.metadata_cache.update(cluster_metadata())
    env.rm.become_leader_or_follower(leader_and_isr(partitions=(0,), replicas=(1, 2), isr=(1, 2)))
    produce(env, idempotent(2, pid=11))
    # Leadership moves to broker 2: this replica still holds (and keeps following) the producer state.
    env.rm.become_leader_or_follower(
        leader_and_isr(partitions=(0,), leader=2, epoch=1, replicas=(1, 2), isr=(1, 2))
    )
    assert describe_producers(env, [("t", (0,))])[("t", 0)] == (0, [(11, 0, 1, 5001, -1, -1)])


# ------------------------------------------------------------------------------------ SCRAM credentials

SHA256, SHA512 = 1, 2


def salted(password, salt, iterations, digest="sha256"):
    return hashlib.pbkdf2_hmac(digest, password, salt, iterations)


def upsertion(name, mechanism=SHA256, iterations=4096, password=b"pencil", salt=b"salt-1234"):
    digest = "sha512" if mechanism == SHA512 else "sha256"
    return {
        "name": name,
        "mechanism": mechanism,
        "iterations": iterations,
        "salt": salt,
        "salted_password": salted(password, salt, max(1, min(iterations, 16384)), digest),
    }


def alter_scram(zk_env, *, upsertions=(), deletions=(), controller=True):
    zk_env.broker.controller = SimpleNamespace(is_active=controller)
    body = {
        "deletions": [{"name": n, "mechanism": m} for n, m in deletions],
        "upsertions": list(upsertions),
    }
    answer = _fired(defer.maybeDeferred(zk_env.handlers[51], _wire(51, 0, body), None))
    return {r["user"]: (r["error_code"], r["error_message"]) for r in answer["results"]}


def describe_scram(zk_env, users):
    body = {"users": None if users is None else [{"name": u} for u in users]}
    answer = _fired(defer.maybeDeferred(zk_env.handlers[50], _wire(50, 0, body), None))
    assert answer["error_code"] == 0
    return [
        (
            r["user"],
            r["error_code"],
            [(c["mechanism"], c["iterations"]) for c in r["credential_infos"]],
        )
        for r in answer["results"]
    ]


def test_rfc7677_exchange_verifies_against_the_stored_credential():
    """The stored and server keys derived from RFC 7677's salted password check its client proof and signature."""
    salt = base64.b64decode("W22ZaJ0SNY7soEsUEjb6gQ==")
    cred = generate_credential(
        ScramMechanism.SCRAM_SHA_256, salt, salted(b"pencil", salt, 4096), 4096
    )
    nonce = "rOprNGfwEbeRWgbNEkqO%hvYDpWUa2RaTCAfuxFIlj)hNlF$k0"
    auth = f"n=user,r=rOprNGfwEbeRWgbNEkqO,r={nonce},s=W22ZaJ0SNY7soEsUEjb6gQ==,i=4096,c=biws,r={nonce}".encode()
    proof = base64.b64decode("dHzbZapWIk4jUhN+Ute9ytag9zjfMHgsqmmiz7AndVQ=")
    client_signature = hmac.new(cred.stored_key, auth, "sha256").digest()
    client_key = bytes(a ^ b for a, b in zip(proof, client_signature, strict=True))
    assert hashlib.sha256(client_key).digest() == cred.stored_key
    server_signature = hmac.new(cred.server_key, auth, "sha256").digest()
    assert base64.b64encode(server_signature) == b"6rriTRBi23WpRR/wtup+mMhUZUn/dB5nLTJRsjl95G4="
    assert credential_from_string(credential_to_string(cred)) == cred


def test_alter_writes_kafkas_znode_and_notification_then_describe_reads_it(zk_env):
    name = "alice smith*"  # sanitized as Kafka's Sanitizer: %20 and %2A
    assert alter_scram(zk_env, upsertions=[upsertion(name, iterations=8192)]) == {name: (0, None)}
    path = "/config/users/alice%20smith%2A"
    data, _ = _fired(zk_env.zk.store.get(path))
    stored = json.loads(data)
    assert stored["version"] == 1 and list(stored["config"]) == ["SCRAM-SHA-256"]
    fields = dict(kv.split("=", 1) for kv in stored["config"]["SCRAM-SHA-256"].split(","))
    assert (
        list(fields) == ["salt", "stored_key", "server_key", "iterations"]
        and fields["iterations"] == "8192"
    )
    assert base64.b64decode(fields["salt"]) == b"salt-1234"
    key = salted(b"pencil", b"salt-1234", 8192)
    assert base64.b64decode(fields["server_key"]) == hmac.new(key, b"Server Key", "sha256").digest()
    changes = _fired(zk_env.zk.get_config_change_notifications())
    last, _ = _fired(zk_env.zk.store.get(f"/config/changes/{changes[-1]}"))
    assert json.loads(last) == {"version": 2, "entity_path": "users/alice%20smith%2A"}

    assert alter_scram(
        zk_env, upsertions=[upsertion("bob", SHA512, 4096), upsertion("bob", SHA256, 10000)]
    ) == {"bob": (0, None)}
    assert describe_scram(zk_env, None) == [
        (name, 0, [(SHA256, 8192)]),
        ("bob", 0, [(SHA256, 10000), (SHA512, 4096)]),
    ]
    assert describe_scram(zk_env, ["bob", name]) == [
        ("bob", 0, [(SHA256, 10000), (SHA512, 4096)]),
        (name, 0, [(SHA256, 8192)]),
    ]

    # Deleting one mechanism keeps the other; deleting the last leaves the user without credentials.
    assert alter_scram(zk_env, deletions=[("bob", SHA512)]) == {"bob": (0, None)}
    assert describe_scram(zk_env, ["bob"]) == [("bob", 0, [(SHA256, 10000)])]
    assert alter_scram(zk_env, deletions=[("bob", SHA256)]) == {"bob": (0, None)}
    assert describe_scram(zk_env, None) == [(name, 0, [(SHA256, 8192)])]
    assert describe_scram(zk_env, ["bob"]) == [("bob", ErrorCode.RESOURCE_NOT_FOUND, [])]


def test_alter_errors_as_kafka(zk_env):
    got = alter_scram(
        zk_env,
        upsertions=[
            upsertion("few", iterations=4095),
            upsertion("many", iterations=16385),
            upsertion("odd", mechanism=7),
            upsertion(""),
            upsertion("twice"),
            upsertion("twice"),
            upsertion("both"),
            upsertion("ok", SHA512),
        ],
        deletions=[("both", SHA256), ("ghost", SHA256), ("badmech", 0)],
    )
    assert {user: code for user, (code, _) in got.items()} == {
        "few": ErrorCode.UNACCEPTABLE_CREDENTIAL,
        "many": ErrorCode.UNACCEPTABLE_CREDENTIAL,
        "odd": ErrorCode.UNSUPPORTED_SASL_MECHANISM,
        "": ErrorCode.UNACCEPTABLE_CREDENTIAL,
        "twice": ErrorCode.DUPLICATE_RESOURCE,
        "both": ErrorCode.DUPLICATE_RESOURCE,  # the same user and mechanism upserted and deleted
        "ghost": ErrorCode.RESOURCE_NOT_FOUND,  # no such credential to delete
        "badmech": ErrorCode.UNSUPPORTED_SASL_MECHANISM,
        "ok": ErrorCode.NONE,
    }
    assert got["few"][1] == "Too few iterations" and got["many"][1] == "Too many iterations"
    assert describe_scram(zk_env, None) == [("ok", 0, [(SHA512, 4096)])]  # nothing else was written


def test_alter_outside_the_controller_is_not_controller(zk_env):
    got = alter_scram(
        zk_env, upsertions=[upsertion("carol")], deletions=[("dave", SHA256)], controller=False
    )
    assert got == {
        "carol": (ErrorCode.NOT_CONTROLLER, ErrorCode.NOT_CONTROLLER.description),
        "dave": (ErrorCode.NOT_CONTROLLER, ErrorCode.NOT_CONTROLLER.description),
    }
    assert describe_scram(zk_env, None) == []


def test_describe_named_users_errors(zk_env):
    alter_scram(zk_env, upsertions=[upsertion("erin")])
    # Users without a SCRAM credential (a quota-only config) are not listed; named ones are RESOURCE_NOT_FOUND.
    _fired(zk_env.zk.set_entity_config("users", "frank", {"producer_byte_rate": "1024"}))
    assert describe_scram(zk_env, []) == [("erin", 0, [(SHA256, 4096)])]
    assert describe_scram(zk_env, ["frank", "erin", "", "erin", "nobody"]) == [
        ("frank", ErrorCode.RESOURCE_NOT_FOUND, []),
        ("erin", ErrorCode.DUPLICATE_RESOURCE, []),
        ("", ErrorCode.RESOURCE_NOT_FOUND, []),
        ("nobody", ErrorCode.RESOURCE_NOT_FOUND, []),
    ]


def test_list_offsets_v0_answers_kafkas_old_style_offset_lists(env):
    """Kafka 2.8's ``legacyFetchOffsetsBefore``: segment starts and the log end, newest first, never above the HW."""
    import time

    env.clock.advance(time.time())  # the log end is stamped "now"; segment times are their files' mtimes
    env.rm.become_leader_or_follower(leader_and_isr())
    produce(env, records([1, 2, 3]))
    env.rm.partitions[("t", 0)].log.roll()
    produce(env, records([4, 5]))

    def v0(timestamp, max_num=10):
        body = {"replica_id": -1, "topics": [{"name": "t", "partitions": [
            {"partition_index": 0, "timestamp": timestamp, "max_num_offsets": max_num}]}]}
        resp, _ = call(env, 2, 0, body)
        p = resp.topics[0].partitions[0]
        return p.error_code, list(p.old_style_offsets)

    assert v0(-1) == (0, [5, 3, 0])  # log end, then each segment start
    assert v0(-1, max_num=1) == (0, [5])
    assert v0(-2) == (0, [0])
    assert v0(0) == (0, [])  # no segment modified that early
    far_future = 2**62
    assert v0(far_future) == (0, [5, 3, 0])
    body = {"replica_id": -1, "topics": [{"name": "nope", "partitions": [
        {"partition_index": 0, "timestamp": -1, "max_num_offsets": 1}]}]}
    resp, _ = call(env, 2, 0, body)
    assert resp.topics[0].partitions[0].error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
