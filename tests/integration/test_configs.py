"""Topic configs through real clients on a real 3-broker cluster.

kafka-python's describe_configs / alter_configs and confluent-kafka's
describe_configs / incremental_alter_configs see Kafka-shaped results, and a
change made through one broker reaches every broker (DescribeConfigs sent
to each broker directly).
"""

from __future__ import annotations

import socket
import struct
import time
import uuid

import pytest

from tests.harness.cluster import ClusterSpec

pytestmark = pytest.mark.integration


CLUSTER = ClusterSpec()  # shared: topic configs of its own uuid topics only


def _new_topic(cluster, configs=None) -> str:
    from kafka.admin import KafkaAdminClient, NewTopic

    name = f"cfg-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000)
    try:
        admin.create_topics([NewTopic(name, 1, 1, topic_configs=configs or {})], timeout_ms=30000)
    finally:
        admin.close()
    return name


def _recv(sock, n):
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise OSError("closed")
        out += chunk
    return bytes(out)


def _describe_on(broker, topic):
    """DescribeConfigs v1 for *topic* sent to one broker: (error code, {name: (value, source)})."""
    from mafka.wire.codec import decode_response, encode_request

    body = {"resources": [{"resource_type": 2, "resource_name": topic, "configuration_keys": None}], "include_synonyms": False}
    with socket.create_connection((broker["host"], broker["port"]), timeout=5) as sock:
        sock.sendall(encode_request(32, 1, 7, "it-configs", body))
        size = struct.unpack(">i", _recv(sock, 4))[0]
        _, resp = decode_response(32, 1, _recv(sock, size))
    (result,) = resp.results
    return result.error_code, {c.name: (c.value, c.config_source) for c in result.configs}


def _poll(fn, timeout=15.0):
    deadline = time.monotonic() + timeout
    while True:
        ok, value = fn()
        if ok or time.monotonic() > deadline:
            return value
        time.sleep(0.2)


def test_kafka_python_describe_and_alter_round_trip(cluster):
    from kafka.admin import ConfigResource, ConfigResourceType, KafkaAdminClient

    topic = _new_topic(cluster, {"retention.ms": "3600000"})
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000)
    try:
        got = admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all")
        text = repr(got)
        assert "retention.ms" in text and "3600000" in text and "cleanup.policy" in text

        admin.alter_configs([ConfigResource(ConfigResourceType.TOPIC, topic, configs={"retention.ms": "7200000"})])
        text = repr(admin.describe_configs([ConfigResource(ConfigResourceType.TOPIC, topic)], config_filter="all"))
        assert "7200000" in text and "3600000" not in text
    finally:
        admin.close()

    # The change reaches every broker.
    for b in cluster.info["brokers"]:
        def check(b=b):
            code, configs = _describe_on(b, topic)
            return code == 0 and configs.get("retention.ms") == ("7200000", 1), (code, configs.get("retention.ms"))

        assert _poll(check) == (0, ("7200000", 1)), f"broker {b['id']}"
    code, configs = _describe_on(cluster.info["brokers"][0], "no-such-topic-here")
    assert code == 3 and configs == {}


def test_confluent_describe_and_incremental_alter(cluster):
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ConfigSource,
    )

    topic = _new_topic(cluster)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    res = ConfigResource("topic", topic)
    configs = admin.describe_configs([res])[res].result(timeout=20)
    assert configs["cleanup.policy"].value == "delete"
    assert configs["cleanup.policy"].source == ConfigSource.DEFAULT_CONFIG.value
    assert configs["retention.ms"].value == "604800000" and not configs["retention.ms"].is_read_only

    res = ConfigResource(
        "topic",
        topic,
        incremental_configs=[
            ConfigEntry("retention.ms", "60000", incremental_operation=AlterConfigOpType.SET),
            ConfigEntry("cleanup.policy", "compact", incremental_operation=AlterConfigOpType.APPEND),
        ],
    )
    admin.incremental_alter_configs([res])[res].result(timeout=20)
    res = ConfigResource("topic", topic)
    configs = admin.describe_configs([res])[res].result(timeout=20)
    assert configs["retention.ms"].value == "60000"
    assert configs["retention.ms"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG.value
    assert set(configs["cleanup.policy"].value.split(",")) == {"delete", "compact"}

    bad = ConfigResource(
        "topic", topic, incremental_configs=[ConfigEntry("retention.ms", "soon", incremental_operation=AlterConfigOpType.SET)]
    )
    with pytest.raises(Exception, match="(?i)invalid"):
        admin.incremental_alter_configs([bad])[bad].result(timeout=20)

    for b in cluster.info["brokers"]:
        def check(b=b):
            code, got = _describe_on(b, topic)
            return code == 0 and got.get("retention.ms") == ("60000", 1), (code, got.get("retention.ms"))

        assert _poll(check) == (0, ("60000", 1)), f"broker {b['id']}"
