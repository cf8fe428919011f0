"""Kafka's ``bin/kafka-*.sh`` names, as scripts written for Kafka 2.8 call them, against a real cluster.

The console scripts pip installs next to the interpreter (``KAFKA_PATH=$VIRTUAL_ENV``),
including the deprecated ``kafka-topics.sh --zookeeper`` form that works on the
znodes directly — and the brokers act on what it wrote.
"""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, ConfigResource

from mafka.cli.kafka_scripts import SCRIPTS
from tests.harness.cluster import ClusterSpec, LocalCluster
from tests.harness.waits import wait_until

pytestmark = pytest.mark.integration

BIN = Path(sys.executable).parent


#: shared: every broker stays up, and its topic and group names (zk_made, …) are used by no other module
CLUSTER = ClusterSpec()


def script(name: str, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(BIN / name), *argv], capture_output=True, text=True, timeout=timeout)


def zk(cluster: LocalCluster) -> str:
    return f"127.0.0.1:{cluster.zookeeper_port}"


def poll(check, what: str, timeout: float = 30.0):  # type: ignore[no-untyped-def]
    return wait_until(check, timeout, what, interval=0.3)


def test_every_kafka_script_is_installed_and_reaches_its_tool() -> None:
    for name, command in SCRIPTS.items():
        r = script(name, "--help", timeout=30)
        assert r.returncode == 0, (name, r.stderr)
        assert f"mafka {command}" in r.stdout, (name, r.stdout[:200])


def test_kafka_topics_zookeeper_create_describe_alter_delete(cluster: LocalCluster) -> None:
    topic = "zk_made"
    r = script("kafka-topics.sh", "--zookeeper", zk(cluster), "--create", "--topic", topic,
               "--partitions", "2", "--replication-factor", "3",
               "--config", "message.timestamp.type=LogAppendTime", "--config", "retention.ms=86400000")
    assert r.returncode == 0, r
    assert r.stdout.splitlines()[-1] == f"Created topic {topic}."
    again = script("kafka-topics.sh", "--zookeeper", zk(cluster), "--create", "--topic", topic,
                   "--partitions", "2", "--replication-factor", "3")
    assert again.returncode == 1
    assert f"Topic '{topic}' already exists." in again.stdout

    # The controller noticed the znodes: the brokers lead the partitions and apply the config.
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    producer = Producer({"bootstrap.servers": cluster.bootstrap})
    sent_at = int(time.time() * 1000) - 3_600_000
    delivered: list = []
    producer.produce(topic, b"v", key=b"k", partition=0, timestamp=sent_at,
                     on_delivery=lambda err, msg: delivered.append((err, msg)))
    producer.flush(30)
    assert delivered and delivered[0][0] is None, delivered
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "zk-made", "enable.auto.commit": False})
    consumer.assign([TopicPartition(topic, 0, 0)])
    msg = poll(lambda: consumer.poll(1.0), "the record")
    consumer.close()
    ts_type, ts = msg.timestamp()
    assert ts_type == 2 and ts > sent_at + 3_000_000  # LogAppendTime: the broker's clock, not the producer's
    configs = admin.describe_configs([ConfigResource("topic", topic)])[ConfigResource("topic", topic)].result(30)
    assert configs["retention.ms"].value == "86400000"

    def described() -> list[str] | None:
        r = script("kafka-topics.sh", "--zookeeper", zk(cluster), "--describe", "--topic", topic)
        lines = r.stdout.splitlines()
        return lines if r.returncode == 0 and len(lines) == 3 and "Leader: none" not in r.stdout else None

    lines = poll(described, "both partitions with a leader")
    assert lines[0].startswith(f"Topic: {topic}\tTopicId: ")
    assert lines[0].endswith("PartitionCount: 2\tReplicationFactor: 3\tConfigs: "
                             "message.timestamp.type=LogAppendTime,retention.ms=86400000")
    for p, line in enumerate(lines[1:]):
        fields = dict(f.split(": ") for f in line.strip().split("\t"))
        assert fields["Partition"] == str(p) and len(fields["Isr"].split(",")) == 3

    r = script("kafka-topics.sh", "--zookeeper", zk(cluster), "--alter", "--topic", topic, "--partitions", "4",
               "--config", "retention.ms=1000000", "--delete-config", "message.timestamp.type")
    assert r.returncode == 0, r
    assert "Adding partitions succeeded!" in r.stdout and f"Updated config for topic {topic}." in r.stdout
    poll(lambda: len(admin.list_topics(topic, timeout=10).topics[topic].partitions) == 4, "4 partitions")
    poll(lambda: admin.describe_configs([ConfigResource("topic", topic)])[ConfigResource("topic", topic)]
         .result(30)["retention.ms"].value == "1000000", "the new retention.ms")

    listed = script("kafka-topics.sh", "--zookeeper", zk(cluster), "--list")
    assert topic in listed.stdout.splitlines()
    r = script("kafka-topics.sh", "--zookeeper", zk(cluster), "--delete", "--topic", topic)
    assert r.returncode == 0, r
    assert r.stdout.splitlines()[0] == f"Topic {topic} is marked for deletion."
    poll(lambda: topic not in script("kafka-topics.sh", "--zookeeper", zk(cluster), "--list").stdout.splitlines(),
         "the topic to be deleted")
    gone = script("kafka-topics.sh", "--bootstrap-server", cluster.bootstrap, "--describe", "--topic", topic)
    assert gone.returncode == 1 and "does not exist as expected" in gone.stdout


def test_kafka_topics_zookeeper_errors(cluster: LocalCluster) -> None:
    bad = script("kafka-topics.sh", "--zookeeper", zk(cluster), "--create", "--topic", "badcfg",
                 "--partitions", "1", "--replication-factor", "1", "--config", "cleanup.policy=sometimes")
    assert bad.returncode == 1 and "Error while executing topic command" in bad.stdout
    assert "badcfg" not in script("kafka-topics.sh", "--zookeeper", zk(cluster), "--list").stdout.splitlines()
    too_many = script("kafka-topics.sh", "--zookeeper", zk(cluster), "--create", "--topic", "rf9",
                      "--partitions", "1", "--replication-factor", "9")
    assert too_many.returncode == 1 and "Replication factor: 9 larger than available brokers: 3." in too_many.stdout
    nozk = script("kafka-topics.sh", "--zookeeper", "127.0.0.1:1", "--list", "--timeout", "2", timeout=30)
    assert nozk.returncode == 1 and "Timed out waiting for connection" in nozk.stdout
