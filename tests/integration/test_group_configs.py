"""Kafka 4's group configs (ConfigResource GROUP) on a real cluster, driven by confluent-kafka's AdminClient.

1. ``share.auto.offset.reset=earliest`` is set on a share group with
   IncrementalAlterConfigs and described back (source GROUP_CONFIG); a bad
   value is INVALID_CONFIG and changes nothing.  The test then waits until
   every broker answers DescribeConfigs with the override — a broker
   describes what it applies (its cache, fed by the ``groups/<g>`` change
   notification), so this is the event that says the share-partition leader
   will use it.
2. A confluent-kafka ShareConsumer of that group, joining after records
   were produced, receives all of them: the share-partition started at the
   earliest offset, not at the end (Kafka's default ``latest``).
"""

from __future__ import annotations

import uuid
from typing import Any

import pytest

from tests.harness.chaos import create_topic
from tests.harness.cluster import ClusterSpec, LocalCluster
from tests.harness.raw_client import BlockingClient
from tests.harness.waits import wait_until

pytestmark = pytest.mark.integration

CLUSTER = ClusterSpec()  # shared: uuid topic and group names, no broker config changed, every broker stays up

DESCRIBE_CONFIGS = 32
GROUP_RESOURCE = 32  # ConfigResource.Type.GROUP on the wire
GROUP_CONFIG_SOURCE = 8


def _admin(cluster: LocalCluster) -> Any:
    from confluent_kafka.admin import AdminClient

    return AdminClient({"bootstrap.servers": cluster.bootstrap})


def _set(admin: Any, group: str, name: str, value: str) -> None:
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType

    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(name, value, incremental_operation=AlterConfigOpType.SET)])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=30)


def _describe(admin: Any, group: str) -> dict[str, Any]:
    from confluent_kafka.admin import ConfigResource, ResourceType

    (future,) = admin.describe_configs([ConfigResource(ResourceType.GROUP, group)]).values()
    return dict(future.result(timeout=30))


def _produce(cluster: LocalCluster, topic: str, values: list[bytes]) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 0})
    for v in values:
        producer.produce(topic, v, partition=0)
    assert producer.flush(30) == 0


def _every_broker_applies(cluster: LocalCluster, group: str, name: str, value: str) -> bool:
    body = {"resources": [{"resource_type": GROUP_RESOURCE, "resource_name": group, "configuration_keys": [name]}],
            "include_synonyms": False}
    with BlockingClient(cluster.bootstrap, client_id="group-configs-probe", timeout_s=10) as client:
        for broker in cluster.info["brokers"]:
            (result,) = client.call(DESCRIBE_CONFIGS, 1, body, broker_id=broker["id"]).results
            (entry,) = result.configs
            if (result.error_code, entry.value, entry.config_source) != (0, value, GROUP_CONFIG_SOURCE):
                return False
    return True


def test_set_and_describe_a_group_config(cluster: LocalCluster) -> None:
    from confluent_kafka import KafkaException
    from confluent_kafka.admin import ConfigSource

    admin = _admin(cluster)
    group = f"gc-{uuid.uuid4().hex[:8]}"
    before = _describe(admin, group)
    assert before["share.auto.offset.reset"].value == "latest"
    assert before["share.auto.offset.reset"].source == ConfigSource.DEFAULT_CONFIG.value
    assert before["consumer.session.timeout.ms"].value == "45000"

    _set(admin, group, "share.auto.offset.reset", "earliest")
    with pytest.raises(KafkaException) as raised:
        _set(admin, group, "share.isolation.level", "serializable")
    assert raised.value.args[0].name() == "INVALID_CONFIG"
    with pytest.raises(KafkaException) as raised:
        _set(admin, group, "consumer.session.timeout.ms", "1000")
    assert "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive." in str(raised.value)

    wait_until(lambda: _every_broker_applies(cluster, group, "share.auto.offset.reset", "earliest"), 30,
               "every broker applies share.auto.offset.reset=earliest", interval=0.2)
    after = _describe(admin, group)
    assert after["share.auto.offset.reset"].value == "earliest"
    assert after["share.auto.offset.reset"].source == ConfigSource.GROUP_CONFIG.value
    assert after["share.isolation.level"].value == "read_uncommitted"  # the refused change left nothing
    assert after["consumer.session.timeout.ms"].value == "45000"


def test_a_share_group_set_to_earliest_receives_records_produced_before_it_joined(cluster: LocalCluster) -> None:
    from confluent_kafka import ShareConsumer

    topic = create_topic(cluster, partitions=1, rf=3)
    group = f"gc-share-{uuid.uuid4().hex[:8]}"
    values = [f"early-{i}-{uuid.uuid4().hex[:6]}".encode() for i in range(20)]
    _produce(cluster, topic, values)

    _set(_admin(cluster), group, "share.auto.offset.reset", "earliest")
    wait_until(lambda: _every_broker_applies(cluster, group, "share.auto.offset.reset", "earliest"), 30,
               "every broker applies share.auto.offset.reset=earliest", interval=0.2)

    consumer = ShareConsumer({"bootstrap.servers": cluster.bootstrap, "group.id": group})
    seen: list[bytes] = []
    try:
        consumer.subscribe([topic])

        def all_received() -> bool:
            for message in consumer.poll(timeout=0.5) or []:
                if message.error() is None:
                    seen.append(bytes(message.value() or b""))
            return len(set(seen)) >= len(values)

        wait_until(all_received, 90, lambda: f"{len(values)} records produced before joining, got {len(set(seen))}",
                   interval=0.1)
    finally:
        consumer.close()
    assert sorted(set(seen)) == sorted(values)
    assert len(seen) == len(values)  # implicit acknowledgement: each delivered once


def test_a_consumer_group_heartbeat_answers_the_groups_heartbeat_interval(cluster: LocalCluster) -> None:
    """``consumer.heartbeat.interval.ms`` set on a group is the interval its coordinator tells a
    member in the ConsumerGroupHeartbeat answer (another group keeps the broker's 5000)."""
    from mafka.errors import ErrorCode

    topic = create_topic(cluster, partitions=1, rf=3)
    group = f"gc-consumer-{uuid.uuid4().hex[:8]}"
    _set(_admin(cluster), group, "consumer.heartbeat.interval.ms", "7000")
    wait_until(lambda: _every_broker_applies(cluster, group, "consumer.heartbeat.interval.ms", "7000"), 30,
               "every broker applies consumer.heartbeat.interval.ms=7000", interval=0.2)

    def join(client: BlockingClient, group_id: str) -> Any:
        found = client.call(10, 2, {"key": group_id, "key_type": 0})
        assert found.error_code == ErrorCode.NONE, found
        body = {"group_id": group_id, "member_id": uuid.uuid4().hex[:22], "member_epoch": 0, "instance_id": None,
                "rack_id": None, "rebalance_timeout_ms": 30000, "subscribed_topic_names": [topic],
                "subscribed_topic_regex": None, "server_assignor": None, "topic_partitions": []}
        answer = client.call(68, 1, body, broker_id=found.node_id)
        assert answer.error_code == ErrorCode.NONE, answer
        left = client.call(68, 1, {**body, "member_id": answer.member_id, "member_epoch": -1},
                           broker_id=found.node_id)
        assert left.error_code == ErrorCode.NONE, left
        return answer

    with BlockingClient(cluster.bootstrap, client_id="group-configs-heartbeat", timeout_s=10) as client:
        assert join(client, group).heartbeat_interval_ms == 7000
        assert join(client, f"gc-plain-{uuid.uuid4().hex[:8]}").heartbeat_interval_ms == 5000
