"""Log dirs through real clients: kafka-python's describe_log_dirs (DescribeLogDirs v1–v4) and
alter_replica_log_dirs (AlterReplicaLogDirs v1–v2) on a 2-broker cluster whose brokers have
two log dirs each, replicas moved between dirs while confluent-kafka produces with acks=all,
and ``mafka log-dirs --describe``.

The crash-recovery side of moves (a broker killed mid-move) is covered at the log-manager
level in ``tests/unit/log/test_manager_moves.py``.
"""

from __future__ import annotations

import json
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import pytest

from tests.harness.cluster import ClusterSpec

from .test_clients import wait_for_leaders

pytestmark = pytest.mark.integration


CLUSTER = ClusterSpec(settings={"log.segment.delete.delay.ms": "1000", "log.segment.bytes": "262144"},
                      brokers=2, log_dirs_per_broker=2)  # shared: moves only its own topics' replicas


def _admin(cluster, api_version=None, describe_max=None):
    """kafka-python's admin client, recording the requests it sends.

    *api_version* is its own knob (the broker version to assume, which caps every API);
    Mafka is identified as Kafka 3.0, so a higher one does not apply and *describe_max*
    caps DescribeLogDirs the way kafka-python lets user code cap a request
    (the request's ``max_version``).
    """
    from kafka.admin import KafkaAdminClient
    from kafka.protocol.admin import DescribeLogDirsRequest

    kwargs = {"api_version": api_version} if api_version is not None else {}
    admin = KafkaAdminClient(
        bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000, **kwargs
    )
    sent = []
    real_send = admin._manager.send

    def send(request, *args, **kw):
        if describe_max is not None and isinstance(request, DescribeLogDirsRequest):
            request = DescribeLogDirsRequest(topics=request.topics, max_version=describe_max)
        sent.append(request)
        return real_send(request, *args, **kw)

    admin._manager.send = send  # to see which versions kafka-python picked
    return admin, sent


def _versions(sent, api_key):
    return {r.API_VERSION for r in sent if r.API_KEY == api_key}


def _new_topic(cluster, rf=2, assignment=None) -> str:
    from kafka.admin import KafkaAdminClient, NewTopic

    name = f"ld-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000)
    try:
        if assignment is not None:
            topic = NewTopic(name, replica_assignments=assignment)
        else:
            topic = NewTopic(name, 1, rf)
        admin.create_topics([topic], timeout_ms=30000)
    finally:
        admin.close()
    return name


def _placement(described, topic, partition=0):
    """{broker: [(log dir, size, offset lag, is future)]} for one partition, from describe_log_dirs."""
    out = {}
    for entry in described:
        spots = []
        for result in entry["log_dirs"]:
            assert result["error_code"] == 0, result
            for t in result["topics"]:
                if t["name"] != topic:
                    continue
                for p in t["partitions"]:
                    if p["partition_index"] == partition:
                        spots.append(
                            (
                                result["log_dir"],
                                p["partition_size"],
                                p["offset_lag"],
                                p["is_future_key"],
                            )
                        )
        out[entry["broker"]] = spots
    return out


def _on_disk_size(partition_dir: Path) -> int:
    return sum(f.stat().st_size for f in partition_dir.glob("*.log"))


def _produce(cluster, topic, values):
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 5})
    for v in values:
        producer.produce(topic, value=v, partition=0)
    assert producer.flush(60) == 0


def test_describe_log_dirs_every_version(cluster):
    topic = _new_topic(cluster)
    wait_for_leaders(cluster, topic, 1)
    _produce(cluster, topic, [b"x" * 200 for _ in range(500)])
    # kafka-python picks the version from the broker version it assumes: 2.0 → v1,
    # 2.8 → v2 (flexible); v3 (top-level error) capped on the request; its newest → v4 (space).
    for api_version, cap, expected in (
        ((2, 0), None, 1),
        ((2, 8), None, 2),
        (None, 3, 3),
        (None, None, 4),
    ):
        admin, sent = _admin(cluster, api_version, cap)
        try:
            deadline = time.monotonic() + 20
            while True:
                described = admin.describe_log_dirs(topic_partitions={topic: [0]})
                placement = _placement(described, topic)
                sizes = {s for spots in placement.values() for _, s, _, _ in spots}
                if len(sizes) == 1 or time.monotonic() > deadline:  # follower caught up
                    break
                time.sleep(0.3)
        finally:
            admin.close()
        assert _versions(sent, 35) == {expected}, api_version
        assert sorted(e["broker"] for e in described) == [1, 2]
        for entry in described:
            broker = cluster.broker(entry["broker"])
            assert sorted(r["log_dir"] for r in entry["log_dirs"]) == sorted(broker["log_dirs"])
            if expected >= 4:
                assert all(
                    r["total_bytes"] > 0 and 0 <= r["usable_bytes"] <= r["total_bytes"]
                    for r in entry["log_dirs"]
                )
            spots = placement[entry["broker"]]
            assert len(spots) == 1, spots  # one replica per broker, in one of its two dirs
            log_dir, size, lag, future = spots[0]
            assert (lag, future) == (0, False)
            assert size == _on_disk_size(Path(log_dir) / f"{topic}-0") > 100_000
            # The other dir does not hold the partition.
            (other,) = [d for d in broker["log_dirs"] if d != log_dir]
            assert not (Path(other) / f"{topic}-0").exists()


def test_replicas_move_between_dirs_while_producing_with_acks_all(cluster):
    from confluent_kafka import Consumer, Producer, TopicPartition
    from kafka.errors import NoError
    from kafka.structs import TopicPartitionReplica

    topic = _new_topic(cluster)
    meta = wait_for_leaders(cluster, topic, 1)
    leader = meta["topics"][0]["partitions"][0]["leader"]
    follower = 3 - leader
    _produce(
        cluster, topic, [b"before-%d-" % i + b"p" * 300 for i in range(4000)]
    )  # ~1.3 MB, several segments

    acked: list[bytes] = []
    failed: list[str] = []
    stop = threading.Event()

    def produce_continuously():
        producer = Producer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "acks": "all",
                "enable.idempotence": True,
                "linger.ms": 2,
            }
        )

        def delivered(err, msg):
            if err is None:
                acked.append(msg.value())
            else:
                failed.append(str(err))

        i = 0
        while not stop.is_set():
            producer.produce(topic, value=b"during-%d" % i, partition=0, on_delivery=delivered)
            producer.poll(0)
            i += 1
            if i % 50 == 0:
                time.sleep(0.01)
        assert producer.flush(60) == 0

    thread = threading.Thread(target=produce_continuously)
    thread.start()
    try:
        time.sleep(1.0)
        admin, sent = _admin(cluster)
        old_admin, old_sent = _admin(cluster, (2, 0))  # AlterReplicaLogDirs v1
        try:
            before = _placement(admin.describe_log_dirs(topic_partitions={topic: [0]}), topic)
            source = {b: before[b][0][0] for b in (leader, follower)}
            target = {
                b: next(d for d in cluster.broker(b)["log_dirs"] if d != source[b])
                for b in (leader, follower)
            }
            result = admin.alter_replica_log_dirs(
                {TopicPartitionReplica(topic, 0, leader): target[leader]}
            )
            assert result == {TopicPartitionReplica(topic, 0, leader): NoError}
            result = old_admin.alter_replica_log_dirs(
                {TopicPartitionReplica(topic, 0, follower): target[follower]}
            )
            assert result == {TopicPartitionReplica(topic, 0, follower): NoError}
            assert _versions(sent, 34) == {2} and _versions(old_sent, 34) == {1}
            deadline = time.monotonic() + 60
            while True:
                placement = _placement(
                    admin.describe_log_dirs(topic_partitions={topic: [0]}), topic
                )
                done = all(
                    [d for d, _, _, _ in placement[b]] == [target[b]] for b in (leader, follower)
                )
                if done or time.monotonic() > deadline:
                    break
                time.sleep(0.2)
            assert done, placement
            time.sleep(1.0)  # keep producing to the moved replicas for a while
        finally:
            stop.set()
            thread.join(90)
        assert not thread.is_alive() and failed == []
        # Once writes stopped and the follower caught up, both replicas hold the same bytes.
        deadline = time.monotonic() + 30
        while True:
            placement = _placement(admin.describe_log_dirs(topic_partitions={topic: [0]}), topic)
            sizes = {b: placement[b][0][1] for b in (leader, follower)}
            if sizes[leader] == sizes[follower] or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        admin.close()
        old_admin.close()
        for b in (leader, follower):
            [(log_dir, size, lag, future)] = placement[b]
            assert (log_dir, lag, future) == (target[b], 0, False)
            assert size == _on_disk_size(Path(log_dir) / f"{topic}-0")
        assert sizes[leader] == sizes[follower]
        # The old dirs no longer have the partition on disk (the -delete dir goes after
        # log.segment.delete.delay.ms = 1 s).
        for b in (leader, follower):
            deadline = time.monotonic() + 20
            while (
                any(p.name.startswith(f"{topic}-0") for p in Path(source[b]).iterdir())
                and time.monotonic() < deadline
            ):
                time.sleep(0.2)
            left = [p.name for p in Path(source[b]).iterdir() if p.name.startswith(f"{topic}-0")]
            assert left == [], (b, left)
        # Every acknowledged record is read back from the moved leader, once, in order.
        assert len(acked) > 100
        consumer = Consumer(
            {
                "bootstrap.servers": cluster.bootstrap,
                "group.id": f"g-{uuid.uuid4().hex[:6]}",
                "enable.auto.commit": False,
            }
        )
        consumer.assign([TopicPartition(topic, 0, 0)])
        values = []
        deadline = time.monotonic() + 60
        while len(values) < 4000 + len(acked) and time.monotonic() < deadline:
            for m in consumer.consume(1000, timeout=1.0):
                assert m.error() is None, m.error()
                values.append(m.value())
        consumer.close()
        assert len(values) == 4000 + len(acked)
        assert values[:4000] == [b"before-%d-" % i + b"p" * 300 for i in range(4000)]
        assert values[4000:] == acked
    finally:
        stop.set()


def test_alter_replica_log_dirs_errors(cluster):
    from kafka.errors import LogDirNotFoundError, NoError, ReplicaNotAvailableError
    from kafka.structs import TopicPartitionReplica

    topic = _new_topic(cluster, assignment={0: [1]})  # only on broker 1
    wait_for_leaders(cluster, topic, 1)
    admin, _ = _admin(cluster)
    try:
        dirs2 = cluster.broker(2)["log_dirs"]
        answers = admin.alter_replica_log_dirs(
            {
                TopicPartitionReplica(topic, 0, 1): "/no/such/log/dir",
                TopicPartitionReplica(topic, 0, 2): dirs2[1],
            }
        )
        assert answers == {
            TopicPartitionReplica(topic, 0, 1): LogDirNotFoundError,
            # Not hosted on broker 2: remembered, and answered as Kafka does.
            TopicPartitionReplica(topic, 0, 2): ReplicaNotAvailableError,
        }
        # Asking for the dir it is already in is fine.
        described = admin.describe_log_dirs(topic_partitions={topic: [0]}, brokers=[1])
        [(current, _, _, _)] = _placement(described, topic)[1]
        assert admin.alter_replica_log_dirs({TopicPartitionReplica(topic, 0, 1): current}) == {
            TopicPartitionReplica(topic, 0, 1): NoError
        }
    finally:
        admin.close()


def test_mafka_log_dirs_describe(cluster):
    topic = _new_topic(cluster)
    wait_for_leaders(cluster, topic, 1)
    _produce(cluster, topic, [b"v" * 100 for _ in range(50)])
    argv = [
        sys.executable,
        "-m",
        "mafka.cli.main",
        "log-dirs",
        "--describe",
        "--bootstrap-server",
        cluster.bootstrap,
        "--topic-list",
        topic,
    ]
    out = subprocess.run(argv, capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert lines[:2] == [
        "Querying brokers for log directories information",
        "Received log directory information from brokers 1,2",
    ]
    data = json.loads(lines[2])
    assert data["version"] == 1 and [b["broker"] for b in data["brokers"]] == [1, 2]
    for b in data["brokers"]:
        assert sorted(d["logDir"] for d in b["logDirs"]) == sorted(
            cluster.broker(b["broker"])["log_dirs"]
        )
        assert all(d["error"] is None for d in b["logDirs"])
        parts = [p for d in b["logDirs"] for p in d["partitions"]]
        assert [(p["partition"], p["offsetLag"], p["isFuture"]) for p in parts] == [
            (f"{topic}-0", 0, False)
        ]
        assert parts[0]["size"] > 0
        assert list(parts[0]) == ["partition", "size", "offsetLag", "isFuture"]
    out = subprocess.run(
        argv[:-2] + ["--broker-list", "2,7"], capture_output=True, text=True, timeout=60
    )
    assert out.returncode == 1
    assert (
        "The given brokers do not exist from --broker-list: 7. Current existent brokers: 1,2"
        in out.stderr
    )
