"""Real Kafka clients against a real 3-broker Mafka cluster (real ZooKeeper, real processes).

Each client (Debian's kcat, confluent-kafka, kafka-python with its default —
idempotent — producer, aiokafka) creates a 6-partition topic, produces
keyed messages with headers under every codec it supports, and consumes
them back: same keys, values and headers, in order per partition.
Consumers use manual assignment (consumer groups are a later issue).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import time
import uuid
from collections import defaultdict

import pytest

from tests.harness.cluster import ClusterSpec

pytestmark = pytest.mark.integration

PARTITIONS = 6
MESSAGES = 2500  # per codec: 10,000+ per client


CLUSTER = ClusterSpec()  # shared: uuid topic and group names, every broker stays up


def new_topic(cluster, partitions=PARTITIONS, rf=1) -> str:
    from kafka.admin import KafkaAdminClient, NewTopic

    name = f"t-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000)
    try:
        admin.create_topics([NewTopic(name, partitions, rf)], timeout_ms=30000)
    finally:
        admin.close()
    wait_for_leaders(cluster, name, partitions)
    return name


def wait_for_leaders(cluster, topic, partitions, timeout=30.0):
    """Waits until kcat sees a leader for every partition *and* each leader serves it.

    A broker's metadata can name a leader before that leader has applied the controller's
    LeaderAndIsr (the requests travel separately); tests that then talk to the leader
    directly would meet UNKNOWN_TOPIC_OR_PARTITION, so each leader is asked for its
    partitions' latest offsets until it answers without error.
    """
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        out = subprocess.run(["kcat", "-b", cluster.bootstrap, "-L", "-J", "-t", topic], capture_output=True, text=True, timeout=20)
        if out.returncode == 0:
            meta = json.loads(out.stdout)
            parts = meta["topics"][0].get("partitions", []) if meta.get("topics") else []
            if len(parts) == partitions and all(p["leader"] >= 0 for p in parts) and _leaders_serve(cluster, topic, parts):
                return meta
        time.sleep(0.3)
    raise TimeoutError(f"{topic} has no leaders")


def _leaders_serve(cluster, topic, parts) -> bool:
    from tests.harness.raw_client import BlockingClient

    with BlockingClient(cluster.bootstrap, timeout_s=10) as client:
        client.metadata([])
        for p in parts:
            body = {"replica_id": -1, "topics": [{"name": topic, "partitions": [
                {"partition_index": p["partition"], "timestamp": -1}]}]}
            answer = client.call(2, 1, body, broker_id=p["leader"])
            if answer.topics[0].partitions[0].error_code != 0:
                return False
    return True


def expected_messages(tag: str, n: int):
    return [(f"key-{i % 97}".encode(), f"{tag}-value-{i}".encode(), [("h", f"{i}".encode())]) for i in range(n)]


def check_per_partition(sent, received):
    """Every message came back once, with its key, value and headers, in send order within its partition."""
    assert sorted(v for _, v, _ in sent) == sorted(v for _, v, _, _ in received)
    index = {v: (i, k, h) for i, (k, v, h) in enumerate(sent)}
    per_partition = defaultdict(list)
    for k, v, headers, partition in received:
        i, key, sent_headers = index[v]
        assert (k, headers) == (key, sent_headers)
        per_partition[partition].append(i)
    assert len(per_partition) > 1
    for indices in per_partition.values():
        assert indices == sorted(indices)


def test_kcat_sees_three_brokers_and_the_controller(cluster):
    out = subprocess.run(["kcat", "-b", cluster.bootstrap, "-L", "-J"], capture_output=True, text=True, timeout=30)
    meta = json.loads(out.stdout)
    assert sorted(b["id"] for b in meta["brokers"]) == [1, 2, 3]
    assert cluster.controller_id() in (1, 2, 3)


def test_confluent_kafka_produce_and_consume_every_codec(cluster):
    from confluent_kafka import Consumer, Producer, TopicPartition

    topic = new_topic(cluster)
    sent = []
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "compression.type": codec, "linger.ms": 5})
        batch = expected_messages(f"ck-{codec}", MESSAGES)
        for k, v, h in batch:
            producer.produce(topic, key=k, value=v, headers=h)
        assert producer.flush(30) == 0
        sent += batch
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "unused", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    received = []
    deadline = time.monotonic() + 60
    while len(received) < len(sent) and time.monotonic() < deadline:
        for m in consumer.consume(1000, timeout=1.0):
            assert m.error() is None, m.error()
            received.append((m.key(), m.value(), [(k, bytes(v)) for k, v in (m.headers() or [])], m.partition()))
    consumer.close()
    check_per_partition(sent, received)


def test_kafka_python_idempotent_producer_and_offsets(cluster):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    topic = new_topic(cluster)
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap)  # idempotent by default
    assert producer.config.get("enable_idempotence", True)
    sent = []
    before = int(time.time() * 1000)
    for codec in (None, "gzip", "lz4", "zstd"):
        p = KafkaProducer(bootstrap_servers=cluster.bootstrap, compression_type=codec) if codec else producer
        batch = expected_messages(f"kp-{codec}", MESSAGES)
        futures = [p.send(topic, key=k, value=v, headers=h) for k, v, h in batch]
        for f in futures:
            f.get(timeout=30)
        sent += batch
        if p is not producer:
            p.close()
    producer.close()
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id=None, enable_auto_commit=False)
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    consumer.assign(tps)
    consumer.seek_to_beginning()
    received = []
    deadline = time.monotonic() + 60
    while len(received) < len(sent) and time.monotonic() < deadline:
        for tp, msgs in consumer.poll(timeout_ms=1000).items():
            received += [(m.key, m.value, list(m.headers), tp.partition) for m in msgs]
    check_per_partition(sent, received)
    begin, end = consumer.beginning_offsets(tps), consumer.end_offsets(tps)
    assert all(begin[tp] == 0 for tp in tps)
    assert sum(end.values()) == len(sent)
    by_time = consumer.offsets_for_times(dict.fromkeys(tps, before))
    for tp in tps:  # every record is newer than `before`: each partition's first one answers
        if end[tp] > 0:
            assert by_time[tp] is not None and by_time[tp].offset == 0
    far = consumer.offsets_for_times(dict.fromkeys(tps, int(time.time() * 1000) + 3600_000))
    assert all(v is None for v in far.values())
    consumer.close()


def test_aiokafka_produce_and_consume(cluster):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka.structs import TopicPartition

    topic = new_topic(cluster)

    async def run():
        sent = []
        for codec in (None, "gzip", "lz4"):
            producer = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap, compression_type=codec)
            await producer.start()
            try:
                batch = expected_messages(f"aio-{codec}", MESSAGES)
                futures = [await producer.send(topic, key=k, value=v, headers=h) for k, v, h in batch]
                await asyncio.gather(*futures)
                sent += batch
            finally:
                await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap, enable_auto_commit=False, auto_offset_reset="earliest")
        await consumer.start()
        try:
            consumer.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
            received = []
            deadline = time.monotonic() + 60
            while len(received) < len(sent) and time.monotonic() < deadline:
                for tp, msgs in (await consumer.getmany(timeout_ms=1000)).items():
                    received += [(m.key, m.value, list(m.headers), tp.partition) for m in msgs]
        finally:
            await consumer.stop()
        return sent, received

    sent, received = asyncio.run(run())
    check_per_partition(sent, received)


def test_kcat_produce_and_consume_with_keys_and_headers(cluster):
    topic = new_topic(cluster)
    sent = []
    for codec in ("none", "gzip", "snappy", "lz4", "zstd"):
        batch = expected_messages(f"kcat-{codec}", 2000)
        lines = "\n".join(f"{k.decode()}:{v.decode()}" for k, v, _ in batch) + "\n"
        out = subprocess.run(
            ["kcat", "-b", cluster.bootstrap, "-P", "-t", topic, "-K", ":", "-H", "h=kcat", "-z", codec],
            input=lines, capture_output=True, text=True, timeout=60,
        )
        assert out.returncode == 0, out.stderr
        sent += [(k, v, [("h", b"kcat")]) for k, v, _ in batch]
    out = subprocess.run(
        ["kcat", "-b", cluster.bootstrap, "-C", "-t", topic, "-o", "beginning", "-e", "-J"],
        capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    received = []
    for line in out.stdout.splitlines():
        m = json.loads(line)
        headers = [(m["headers"][i], m["headers"][i + 1].encode()) for i in range(0, len(m.get("headers") or []), 2)]
        received.append((m["key"].encode(), m["payload"].encode(), headers, m["partition"]))
    check_per_partition(sent, received)


def test_auto_create_on_produce(cluster):
    from kafka import KafkaProducer

    topic = f"auto-{uuid.uuid4().hex[:8]}"
    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap)
    meta = producer.send(topic, b"first").get(timeout=60)
    producer.close()
    assert meta.topic == topic and meta.offset == 0


def test_admin_create_describe_create_partitions_delete(cluster):
    from confluent_kafka.admin import AdminClient, NewPartitions, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    name = f"adm-{uuid.uuid4().hex[:8]}"
    for f in admin.create_topics([NewTopic(name, num_partitions=2, replication_factor=3)], operation_timeout=30).values():
        f.result(timeout=60)
    meta = wait_for_leaders(cluster, name, 2)
    parts = meta["topics"][0]["partitions"]
    assert all(len(p["replicas"]) == 3 for p in parts)
    assert len({p["leader"] for p in parts}) == 2  # leaders spread over brokers
    dup = admin.create_topics([NewTopic(name, num_partitions=1, replication_factor=1)], operation_timeout=30)[name]
    with pytest.raises(Exception, match="TOPIC_ALREADY_EXISTS|already exists"):
        dup.result(timeout=60)
    too_many = admin.create_topics([NewTopic(f"{name}-rf", num_partitions=1, replication_factor=4)], operation_timeout=30)
    with pytest.raises(Exception, match="INVALID_REPLICATION_FACTOR|[Rr]eplication factor"):
        too_many[f"{name}-rf"].result(timeout=60)
    for f in admin.create_partitions([NewPartitions(name, 5)], operation_timeout=30).values():
        f.result(timeout=60)
    # Mafka answers CreatePartitions once every live broker has taken the metadata that
    # announces the new partitions (Kafka promises it only for the answering broker), so
    # each broker, asked right away, knows all five with their leaders.
    for b in cluster.info["brokers"]:
        out = subprocess.run(["kcat", "-b", f"{b['host']}:{b['port']}", "-L", "-J", "-t", name],
                             capture_output=True, text=True, timeout=20)
        parts = json.loads(out.stdout)["topics"][0]["partitions"]
        assert len(parts) == 5 and all(p["leader"] >= 0 for p in parts), (b["id"], parts)
    listed = admin.list_topics(timeout=30).topics
    assert name in listed and len(listed[name].partitions) == 5
    for f in admin.delete_topics([name], operation_timeout=30).values():
        f.result(timeout=60)
    deadline = time.monotonic() + 30
    while name in admin.list_topics(timeout=30).topics and time.monotonic() < deadline:
        time.sleep(0.3)
    assert name not in admin.list_topics(timeout=30).topics
    # The partitions' directories are gone from every broker's log dirs.
    for b in cluster.info["brokers"]:
        for d in b["log_dirs"]:
            deadline = time.monotonic() + 30
            while any(p.name.startswith(f"{name}-") and not p.name.endswith("-delete") for p in _children(d)) and time.monotonic() < deadline:
                time.sleep(0.3)
            assert not any(p.name.startswith(f"{name}-") and not p.name.endswith("-delete") for p in _children(d))


def _children(directory):
    from pathlib import Path

    path = Path(directory)
    return list(path.iterdir()) if path.exists() else []


def test_kafka_python_admin_describe_and_delete(cluster):
    from kafka.admin import KafkaAdminClient, NewPartitions

    name = new_topic(cluster, partitions=3)
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap)
    try:
        described = admin.describe_topics([name])
        assert (described[0].get("name") or described[0].get("topic")) == name
        assert len(described[0]["partitions"]) == 3
        admin.create_partitions({name: NewPartitions(4)})
        wait_for_leaders(cluster, name, 4)
        admin.delete_topics([name], timeout_ms=30000)
        assert _eventually_gone(admin, name)
    finally:
        admin.close()


def _eventually_gone(admin, name, timeout=30.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if name not in admin.list_topics():
            return True
        time.sleep(0.3)
    return False


def test_confluent_admin_lists_consumer_groups_filtered_by_state(cluster):
    """librdkafka asks ListGroups v4 with a states filter (KIP-518): the broker filters and names
    each group's state."""
    from confluent_kafka import Consumer, ConsumerGroupState, TopicPartition
    from confluent_kafka.admin import AdminClient

    topic = new_topic(cluster, partitions=1)
    stable, empty = f"stable-{uuid.uuid4().hex[:6]}", f"empty-{uuid.uuid4().hex[:6]}"
    member = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": stable,
                       "session.timeout.ms": 6000})
    member.subscribe([topic])
    committer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": empty})
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    try:
        committer.commit(offsets=[TopicPartition(topic, 0, 0)], asynchronous=False)

        def listed(states):
            result = admin.list_consumer_groups(states=states).result(30)
            return {g.group_id: g.state for g in result.valid if g.group_id in (stable, empty)}

        deadline = time.monotonic() + 60
        while listed({ConsumerGroupState.STABLE}) != {stable: ConsumerGroupState.STABLE}:
            assert time.monotonic() < deadline, listed(None)
            member.poll(0.5)
        # Serve the assignment before close(): librdkafka serving a pending assign inside close()
        # can hang in rd_kafka_assign forever (librdkafka #4884; seen once here, the main lane hung).
        while not member.assignment():
            assert time.monotonic() < deadline, "the member got no assignment"
            member.poll(0.2)
        assert listed({ConsumerGroupState.EMPTY}) == {empty: ConsumerGroupState.EMPTY}
        assert listed({ConsumerGroupState.EMPTY, ConsumerGroupState.STABLE}) == {
            stable: ConsumerGroupState.STABLE, empty: ConsumerGroupState.EMPTY}
        assert listed({ConsumerGroupState.DEAD}) == {}
    finally:
        member.close()
        committer.close()
