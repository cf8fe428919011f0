"""Incremental fetch sessions (KIP-227) with a real client and between Mafka's own brokers.

kafka-python fetches in incremental sessions by default: after one full
fetch per broker it lists only partitions whose position moved, and relies
on the broker to answer every partition with news — including partitions
the request did not list.  A broker that answered sessions wrongly would
lose or repeat records here.  The replicas of an RF 3 topic are fetched by
followers in sessions too; every acknowledged record must reach all three.
"""

from __future__ import annotations

import time

import pytest

from tests.harness.cluster import ClusterSpec
from tests.harness.raw_client import BlockingClient

from .test_clients import new_topic, wait_for_leaders

pytestmark = pytest.mark.integration

PARTITIONS = 12


CLUSTER = ClusterSpec()  # shared: uuid topic names, every broker stays up


def _produce(cluster, topic, tag, n):
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, acks="all")
    try:
        futures = [producer.send(topic, key=b"k%d" % i, value=f"{tag}-{i}".encode(), partition=i % PARTITIONS) for i in range(n)]
        for f in futures:
            f.get(timeout=30)
    finally:
        producer.close()
    return {f"{tag}-{i}".encode() for i in range(n)}


def _drain(consumer, want, timeout=60.0):
    got = []
    deadline = time.monotonic() + timeout
    while len(got) < len(want) and time.monotonic() < deadline:
        for msgs in consumer.poll(timeout_ms=500).values():
            got += [m.value for m in msgs]
    return got


def test_kafka_python_consumes_through_incremental_sessions(cluster):
    from kafka import KafkaConsumer, TopicPartition

    topic = new_topic(cluster, PARTITIONS, rf=3)
    first = _produce(cluster, topic, "a", 3000)
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id=None, enable_auto_commit=False, fetch_max_wait_ms=100)
    try:
        consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
        consumer.seek_to_beginning()
        got = _drain(consumer, first)
        assert sorted(got) == sorted(first)  # each record once
        # Writes arriving while the consumer is in incremental sessions, to a few partitions only.
        second = _produce(cluster, topic, "b", 500)
        got = _drain(consumer, second)
        assert sorted(got) == sorted(second)
        handlers = consumer._fetcher._session_handlers  # kafka-python's KIP-227 state per broker
        sessions = {node: (h.next_metadata.session_id, h.next_metadata.epoch) for node, h in handlers.items()}
        assert len(sessions) == 3, sessions  # every broker leads some partitions
        assert all(sid != 0 and epoch > 1 for sid, epoch in sessions.values()), sessions
    finally:
        consumer.close()


def test_a_session_answers_a_partition_the_request_did_not_list(cluster):
    """Raw Fetch v11: full fetch opens a session; later records arrive through an empty incremental fetch."""
    topic = new_topic(cluster, PARTITIONS, rf=1)
    meta = wait_for_leaders(cluster, topic, PARTITIONS)
    leader = meta["topics"][0]["partitions"][0]["leader"]
    mine = [p["partition"] for p in meta["topics"][0]["partitions"] if p["leader"] == leader]

    def fetch(client, session_id, epoch, offsets, max_wait_ms=0):
        body = {
            "replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 1 << 20, "isolation_level": 0,
            "session_id": session_id, "session_epoch": epoch,
            "topics": [{"topic": topic, "partitions": [
                {"partition": p, "current_leader_epoch": -1, "fetch_offset": o, "log_start_offset": -1, "partition_max_bytes": 1 << 20}
                for p, o in offsets.items()]}] if offsets else [],
            "forgotten_topics_data": [], "rack_id": "",
        }
        return client.call(1, 11, body, broker_id=leader)

    with BlockingClient(cluster.bootstrap, timeout_s=20) as client:
        client.metadata([])
        full = fetch(client, 0, 0, {p: 0 for p in mine})
        assert full.error_code == 0 and full.session_id != 0
        assert sorted(p.partition_index for t in full.responses for p in t.partitions) == sorted(mine)
        empty = fetch(client, full.session_id, 1, {})
        assert (empty.error_code, empty.session_id, empty.responses) == (0, full.session_id, [])
        _produce(cluster, topic, "c", PARTITIONS)  # one record per partition
        news = fetch(client, full.session_id, 2, {}, max_wait_ms=2000)
        answered = {p.partition_index: bytes(p.records) for t in news.responses for p in t.partitions}
        assert news.session_id == full.session_id
        assert set(answered) == set(mine) and all(answered.values())
        stale = fetch(client, full.session_id, 2, {})
        assert stale.error_code == 71  # INVALID_FETCH_SESSION_EPOCH
