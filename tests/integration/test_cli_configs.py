"""``mafka configs`` (Kafka 2.8's ``kafka-configs.sh``) against a real 3-broker cluster.

One :class:`LocalCluster` for the module.  The tool runs as its own process
(``python -m mafka.cli.main configs …``), with ``--bootstrap-server`` or the
deprecated ``--zookeeper``; what a ZooKeeper write changes is checked on the
brokers themselves (a produce the new ``max.message.bytes`` refuses on every
partition leader, confluent-kafka's describe_configs).  Every wait is bounded.
"""

from __future__ import annotations

import hashlib
import hmac
import subprocess
import sys
from collections.abc import Callable
from typing import Any

import pytest

from tests.harness.cluster import ClusterSpec, LocalCluster
from tests.harness.waits import wait_until

pytestmark = pytest.mark.integration

ZK_WARNING = ("Warning: --zookeeper is deprecated and will be removed in a future version of Kafka.\n"
              "Use --bootstrap-server instead to specify a broker to connect to.\n")


CLUSTER = ClusterSpec(shared=False)  # alters broker configs and lists every broker entity in ZooKeeper


def _tool(*argv: str, timeout: float = 90) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "mafka.cli.main", *argv], capture_output=True, text=True,
                          timeout=timeout)


def configs(cluster: LocalCluster, *argv: str) -> subprocess.CompletedProcess[str]:
    return _tool("configs", "--bootstrap-server", cluster.bootstrap, "--timeout", "60", *argv)


def zk_configs(cluster: LocalCluster, *argv: str) -> subprocess.CompletedProcess[str]:
    return _tool("configs", "--zookeeper", f"127.0.0.1:{cluster.zookeeper_port}", "--timeout", "60", *argv)


def ok(result: subprocess.CompletedProcess[str]) -> str:
    assert (result.returncode, result.stderr) == (0, ""), result
    return result.stdout


def failed(result: subprocess.CompletedProcess[str]) -> list[str]:
    """stderr's lines of a run that must have failed (exit status 1)."""
    assert result.returncode == 1, result
    return result.stderr.splitlines()


def poll(check: Callable[[], Any], what: str, timeout: float = 60.0) -> Any:
    return wait_until(check, timeout, what, interval=0.3)


def create_topic(cluster: LocalCluster, topic: str, partitions: int, rf: int) -> None:
    r = _tool("topics", "--bootstrap-server", cluster.bootstrap, "--create", "--topic", topic,
              "--partitions", str(partitions), "--replication-factor", str(rf), "--timeout", "60")
    assert (r.returncode, r.stdout) == (0, f"Created topic {topic}.\n"), r


def produce(cluster: LocalCluster, topic: str, partition: int, size: int) -> int:
    """The error code of producing one *size*-byte record to *topic*/*partition* (0: delivered)."""
    from confluent_kafka import KafkaError, Producer

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "message.timeout.ms": 20000,
                        "message.max.bytes": 10_000_000})
    outcome: list[Any] = []
    producer.produce(topic, b"x" * size, partition=partition, on_delivery=lambda err, msg: outcome.append(err))
    left = producer.flush(30)
    assert left == 0 and len(outcome) == 1, "no delivery report in time"
    err = outcome[0]
    return 0 if err is None else err.code() if err.code() != KafkaError._MSG_TIMED_OUT else -1


def describe_configs(cluster: LocalCluster, topic: str) -> dict[str, Any]:
    from confluent_kafka.admin import AdminClient, ConfigResource

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    resource = ConfigResource(ConfigResource.Type.TOPIC, topic)
    return admin.describe_configs([resource], request_timeout=30)[resource].result(40)


def source(entry: Any) -> int:
    """confluent-kafka's ConfigEntry.source as the DescribeConfigs number."""
    return int(getattr(entry.source, "value", entry.source))


def test_topic_configs_through_the_admin_apis(cluster: LocalCluster) -> None:
    create_topic(cluster, "cfg-boot", 1, 3)
    out = ok(configs(cluster, "--alter", "--topic", "cfg-boot",
                     "--add-config", "retention.ms=60000,cleanup.policy=[compact,delete]"))
    assert out == "Completed updating config for topic cfg-boot.\n"

    lines = ok(configs(cluster, "--describe", "--entity-type", "topics", "--entity-name", "cfg-boot")).splitlines()
    assert lines[0] == "Dynamic configs for topic cfg-boot are:"
    assert len(lines) == 3, lines
    # Kafka's HashMap order: cleanup.policy before retention.ms.
    assert lines[1].startswith("  cleanup.policy=compact,delete sensitive=false synonyms={"
                               "DYNAMIC_TOPIC_CONFIG:cleanup.policy=compact,delete, "), lines
    assert lines[2].startswith("  retention.ms=60000 sensitive=false synonyms={"
                               "DYNAMIC_TOPIC_CONFIG:retention.ms=60000, "), lines
    entries = describe_configs(cluster, "cfg-boot")
    assert entries["retention.ms"].value == "60000"
    assert entries["cleanup.policy"].value == "compact,delete"

    # Deleting what is not set changes nothing; the rest is deleted.
    r = configs(cluster, "--alter", "--topic", "cfg-boot", "--delete-config", "retention.ms,segment.ms")
    assert (failed(r), r.stdout) == (["Invalid config(s): segment.ms"], "")
    assert ok(configs(cluster, "--alter", "--topic", "cfg-boot", "--delete-config", "retention.ms")) == \
        "Completed updating config for topic cfg-boot.\n"
    lines = ok(configs(cluster, "--describe", "--topic", "cfg-boot")).splitlines()
    assert [line.split(" ")[:3] for line in lines[1:]] == [["", "", "cleanup.policy=compact,delete"]]
    assert source(describe_configs(cluster, "cfg-boot")["retention.ms"]) != 1  # no longer DYNAMIC_TOPIC_CONFIG

    lines = ok(configs(cluster, "--describe", "--topic", "cfg-boot", "--all")).splitlines()
    assert lines[0] == "All configs for topic cfg-boot are:"
    assert any(line.startswith("  segment.bytes=") and "DEFAULT_CONFIG:log.segment.bytes=" in line
               for line in lines), lines

    # Every topic is described when none is named.
    headings = ok(configs(cluster, "--describe", "--entity-type", "topics")).splitlines()
    assert "Dynamic configs for topic cfg-boot are:" in headings


def test_topic_configs_through_zookeeper_reach_the_brokers(cluster: LocalCluster) -> None:
    topic = "cfg-zk"
    create_topic(cluster, topic, 3, 1)  # three partitions, their leaders spread over the brokers
    for p in range(3):
        poll(lambda p=p: produce(cluster, topic, p, 5000) == 0, f"partition {p} to take 5000-byte records")

    r = zk_configs(cluster, "--alter", "--topic", topic, "--add-config", "max.message.bytes=1000,retention.ms=120000")
    assert ok(r) == ZK_WARNING + f"Completed updating config for entity: topic '{topic}'.\n"
    assert ok(zk_configs(cluster, "--describe", "--topic", topic)) == \
        ZK_WARNING + f"Configs for topic '{topic}' are max.message.bytes=1000,retention.ms=120000\n"

    # The brokers learn of it from the /config/changes notification: every leader now refuses the record.
    for p in range(3):
        code = poll(lambda p=p: produce(cluster, topic, p, 5000) or None,
                    f"partition {p}'s leader to apply max.message.bytes=1000")
        assert code == 10, f"MSG_SIZE_TOO_LARGE expected, got {code}"
        assert produce(cluster, topic, p, 100) == 0
    entries = describe_configs(cluster, topic)
    assert (entries["retention.ms"].value, source(entries["retention.ms"])) == ("120000", 1)  # DYNAMIC_TOPIC_CONFIG
    lines = ok(configs(cluster, "--describe", "--topic", topic)).splitlines()
    assert lines[0] == f"Dynamic configs for topic {topic} are:"
    assert sorted(line.split(" ")[2] for line in lines[1:]) == ["max.message.bytes=1000", "retention.ms=120000"]

    # Deleting the override through ZooKeeper lifts the limit again.
    r = zk_configs(cluster, "--alter", "--entity-type", "topics", "--entity-name", topic,
                   "--delete-config", "max.message.bytes")
    assert ok(r) == ZK_WARNING + f"Completed updating config for entity: topic '{topic}'.\n"
    for p in range(3):
        poll(lambda p=p: produce(cluster, topic, p, 5000) == 0, f"partition {p} to take 5000-byte records again")
    assert ok(zk_configs(cluster, "--describe", "--topic", topic)) == \
        ZK_WARNING + f"Configs for topic '{topic}' are retention.ms=120000\n"

    # The notification is Kafka's: version 2, the entity path.
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=f"127.0.0.1:{cluster.zookeeper_port}", timeout=30)
    zk.start(timeout=30)
    try:
        changes = sorted(zk.get_children("/config/changes"))
        last = zk.get(f"/config/changes/{changes[-1]}")[0]
        assert last == b'{"version":2,"entity_path":"topics/cfg-zk"}'
        assert zk.get("/config/topics/cfg-zk")[0] == b'{"version":1,"config":{"retention.ms":"120000"}}'
    finally:
        zk.stop()
        zk.close()


def test_errors_unknown_topic_and_bad_value(cluster: LocalCluster) -> None:
    create_topic(cluster, "cfg-err", 1, 1)
    ok(configs(cluster, "--alter", "--topic", "cfg-err", "--add-config", "retention.ms=1000"))

    lines = failed(configs(cluster, "--alter", "--topic", "cfg-nope", "--add-config", "retention.ms=1000"))
    assert lines[0].startswith("Error while executing config command with args '"), lines
    assert lines[1].startswith("java.util.concurrent.ExecutionException: "
                               "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "), lines
    r = configs(cluster, "--describe", "--topic", "cfg-nope")
    assert "UnknownTopicOrPartitionException" in failed(r)[1]
    assert r.stdout == "Dynamic configs for topic cfg-nope are:\n"  # Kafka prints the heading first

    r = zk_configs(cluster, "--alter", "--topic", "cfg-nope", "--add-config", "retention.ms=1000")
    assert failed(r)[1:] == ["org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "
                             "Topic 'cfg-nope' does not exist."]
    assert r.stdout == ZK_WARNING

    lines = failed(configs(cluster, "--alter", "--topic", "cfg-err", "--add-config", "retention.ms=abc"))
    assert lines[1].startswith("java.util.concurrent.ExecutionException: "
                               "org.apache.kafka.common.errors.InvalidConfigurationException: "), lines
    lines = failed(zk_configs(cluster, "--alter", "--topic", "cfg-err", "--add-config", "retention.ms=abc"))
    assert lines[1].startswith("org.apache.kafka.common.config.ConfigException: "), lines
    assert failed(zk_configs(cluster, "--alter", "--topic", "cfg-err", "--add-config", "retention.mss=5")) == \
        ["Unknown topic config name: retention.mss"]
    assert failed(configs(cluster, "--alter", "--topic", "cfg-err", "--add-config", "retention.ms")) == \
        ['Invalid entity config: all configs to be added must be in the format "key=val".']
    # Nothing was written by the refused commands.
    assert ok(zk_configs(cluster, "--describe", "--topic", "cfg-err")) == \
        ZK_WARNING + "Configs for topic 'cfg-err' are retention.ms=1000\n"


def test_broker_configs_and_the_cluster_default(cluster: LocalCluster) -> None:
    rate = "follower.replication.throttled.rate"
    try:
        out = ok(configs(cluster, "--alter", "--entity-type", "brokers", "--entity-default",
                         "--add-config", f"{rate}=1048576"))
        assert out == "Completed updating default config for brokers in the cluster.\n"
        for broker in (1, 2, 3):
            lines = ok(configs(cluster, "--describe", "--broker", str(broker), "--all")).splitlines()
            assert lines[0] == f"All configs for broker {broker} are:"
            assert (f"  {rate}=1048576 sensitive=false synonyms={{DYNAMIC_DEFAULT_BROKER_CONFIG:{rate}=1048576}}"
                    in lines), lines
            assert any(line.startswith("  broker.id=") for line in lines)
        assert ok(configs(cluster, "--describe", "--broker-defaults")).startswith(
            "Default configs for brokers in the cluster are:\n")
        assert ok(zk_configs(cluster, "--describe", "--entity-type", "brokers", "--entity-default")) == \
            ZK_WARNING + f"Configs for default brokers are {rate}=1048576\n"

        out = ok(configs(cluster, "--alter", "--broker", "2", "--add-config", "leader.replication.throttled.rate=5000"))
        assert out == "Completed updating config for broker 2.\n"
        assert ok(configs(cluster, "--describe", "--broker", "2")).splitlines() == [
            "Dynamic configs for broker 2 are:",
            "  leader.replication.throttled.rate=5000 sensitive=false "
            "synonyms={DYNAMIC_BROKER_CONFIG:leader.replication.throttled.rate=5000}",
        ]
        lines = failed(configs(cluster, "--alter", "--broker", "2", "--add-config", "log.retention.ms=5"))
        assert lines[1].startswith("java.util.concurrent.ExecutionException: org.apache.kafka.common.errors."
                                   "InvalidConfigurationException: "), lines
        assert failed(zk_configs(cluster, "--alter", "--broker-defaults", "--add-config", "log.retention.ms=5")) == [
            "--bootstrap-server option must be specified to update broker configs Set(log.retention.ms) for default "
            "cluster if any broker is running. Broker configuration updates using ZooKeeper are supported for "
            "bootstrapping before brokers are started to enable encrypted password configs to be stored in ZooKeeper."]
    finally:
        zk_configs(cluster, "--alter", "--broker-defaults", "--delete-config", rate)
        configs(cluster, "--alter", "--broker", "2", "--delete-config", "leader.replication.throttled.rate")
    assert ok(zk_configs(cluster, "--describe", "--entity-type", "brokers")) == \
        ZK_WARNING + "Configs for brokers '2' are \nConfigs for default brokers are \n"


def _stored_key(password: str, salt: bytes, iterations: int) -> bytes:
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, iterations)
    return hashlib.sha256(hmac.new(salted, b"Client Key", "sha256").digest()).digest()


def test_scram_credentials(cluster: LocalCluster) -> None:
    from mafka.broker.scram import credential_from_string

    out = ok(configs(cluster, "--alter", "--entity-type", "users", "--entity-name", "alice", "--add-config",
                     "SCRAM-SHA-256=[iterations=8192,password=alice-secret],SCRAM-SHA-512=[password=alice-secret]"))
    assert out == "Completed updating config for user alice.\n"
    assert ok(configs(cluster, "--describe", "--entity-type", "users", "--entity-name", "alice")) == (
        "SCRAM credential configs for user-principal 'alice' are "
        "SCRAM-SHA-256=iterations=8192, SCRAM-SHA-512=iterations=4096\n")

    # What the broker stored is derived from the password: the tool salted it as Kafka's client does.
    lines = ok(zk_configs(cluster, "--describe", "--user", "alice")).splitlines()
    assert lines[2].startswith("Configs for user-principal 'alice' are "), lines
    stored = lines[2].split(" are ", 1)[1].split("SCRAM-SHA-256=", 1)[1].split(",iterations=")[0] + ",iterations=8192"
    credential = credential_from_string(stored)
    assert credential.stored_key == _stored_key("alice-secret", credential.salt, 8192)

    assert ok(configs(cluster, "--alter", "--user", "alice", "--delete-config", "SCRAM-SHA-256")) == \
        "Completed updating config for user alice.\n"
    assert ok(configs(cluster, "--describe", "--user", "alice")) == \
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-512=iterations=4096\n"
    lines = failed(configs(cluster, "--alter", "--user", "alice", "--delete-config", "SCRAM-SHA-256"))
    assert lines[1] == ("java.util.concurrent.ExecutionException: org.apache.kafka.common.errors."
                        "ResourceNotFoundException: Attempt to delete a user credential that does not exist")
    assert failed(configs(cluster, "--alter", "--user", "alice", "--add-config",
                          "SCRAM-SHA-256=[iterations=100,password=x]")) == [
        "Iterations 100 is less than the minimum 4096 required for SCRAM-SHA-256"]

    # A credential written through ZooKeeper is described by the brokers.
    r = zk_configs(cluster, "--alter", "--user", "bob", "--add-config", "SCRAM-SHA-256=[iterations=5000,password=b]")
    assert ok(r) == ZK_WARNING + "Completed updating config for entity: user-principal 'bob'.\n"
    assert ok(configs(cluster, "--describe", "--entity-type", "users")) == (
        "SCRAM credential configs for user-principal 'alice' are SCRAM-SHA-512=iterations=4096\n"
        "SCRAM credential configs for user-principal 'bob' are SCRAM-SHA-256=iterations=5000\n")

    ok(configs(cluster, "--alter", "--user", "alice", "--delete-config", "SCRAM-SHA-512"))
    ok(configs(cluster, "--alter", "--user", "bob", "--delete-config", "SCRAM-SHA-256"))
    assert ok(configs(cluster, "--describe", "--entity-type", "users")) == ""



def test_client_quotas(cluster: LocalCluster) -> None:
    """AlterClientQuotas / DescribeClientQuotas through the brokers, and the same znodes through ZooKeeper."""
    assert ok(configs(cluster, "--alter", "--entity-type", "users", "--entity-name", "carol", "--add-config",
                      "producer_byte_rate=1000,consumer_byte_rate=2000")) == "Completed updating config for user carol.\n"
    # carol has no SCRAM credential: only her quotas are described.
    assert ok(configs(cluster, "--describe", "--user", "carol")) == (
        "Quota configs for user-principal 'carol' are consumer_byte_rate=2000.0, producer_byte_rate=1000.0\n")
    assert ok(configs(cluster, "--alter", "--entity-type", "users", "--entity-name", "carol", "--entity-type",
                      "clients", "--entity-name", "app", "--add-config", "request_percentage=50")) == \
        "Completed updating config for user carol.\n"
    assert ok(configs(cluster, "--alter", "--entity-type", "clients", "--entity-default", "--add-config",
                      "producer_byte_rate=4096")) == "Completed updating default config for clients in the cluster.\n"
    assert ok(configs(cluster, "--describe", "--entity-type", "users", "--entity-type", "clients")) == (
        "Quota configs for user-principal 'carol', client-id 'app' are request_percentage=50.0\n")
    assert ok(configs(cluster, "--describe", "--entity-type", "clients", "--entity-default")) == (
        "Quota configs for the default client-id are producer_byte_rate=4096.0\n")

    # The brokers wrote Kafka's znodes: ZooKeeper shows them, and what ZooKeeper gets the brokers describe.
    assert ok(zk_configs(cluster, "--describe", "--entity-type", "users", "--entity-name", "carol",
                         "--entity-type", "clients")) == (
        ZK_WARNING + "Configs for user-principal 'carol', client-id 'app' are request_percentage=50.0\n")
    assert ok(zk_configs(cluster, "--alter", "--client", "batch app", "--add-config", "consumer_byte_rate=777")) == (
        ZK_WARNING + "Completed updating config for entity: client-id 'batch app'.\n")
    assert ok(configs(cluster, "--describe", "--client", "batch app")) == (
        "Quota configs for client-id 'batch app' are consumer_byte_rate=777.0\n")

    # Errors: a key not set, a value that is not a number, a broker's refusal, IP quotas (not in Mafka).
    assert failed(configs(cluster, "--alter", "--user", "carol", "--delete-config", "request_percentage")) == [
        "Invalid config(s): request_percentage"]
    assert failed(configs(cluster, "--alter", "--user", "carol", "--add-config", "producer_byte_rate=lots")) == [
        "Cannot parse quota configuration value for producer_byte_rate: lots"]
    lines = failed(configs(cluster, "--alter", "--user", "carol", "--add-config", "producer_byte_rate=1.5"))
    assert lines[1] == ("java.util.concurrent.ExecutionException: org.apache.kafka.common.errors."
                        "InvalidRequestException: Configuration producer_byte_rate must be a LONG value")
    lines = failed(configs(cluster, "--describe", "--ip", "127.0.0.1"))
    assert lines[1].startswith("java.util.concurrent.ExecutionException: org.apache.kafka.common.errors."
                               "UnsupportedVersionException: IP connection rate quotas")

    for argv in (("--user", "carol", "--delete-config", "producer_byte_rate,consumer_byte_rate"),
                 ("--user", "carol", "--client", "app", "--delete-config", "request_percentage"),
                 ("--client-defaults", "--delete-config", "producer_byte_rate"),
                 ("--client", "batch app", "--delete-config", "consumer_byte_rate")):
        ok(configs(cluster, "--alter", *argv))
    assert ok(configs(cluster, "--describe", "--entity-type", "users")) == ""
    assert ok(configs(cluster, "--describe", "--entity-type", "clients")) == ""
