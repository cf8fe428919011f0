"""``mafka.client.AdminClient`` against a real 3-broker Mafka cluster (real ZooKeeper, real processes).

Every admin method is checked by its effect: a created topic is listed by
``list_topics``, a config set at creation is described, a record deletion
moves the earliest offset, a group committed by a confluent-kafka consumer is
listed, described, its offsets read, altered and deleted.  Errors come back
as confluent-kafka's do: the key's future raises ``KafkaException`` whose
``KafkaError`` has the broker's code, and the other keys are unaffected.
Records and groups are made with confluent-kafka itself, so what the admin
client reads was written by another client.
"""

from __future__ import annotations

import socket
import threading
import time
import uuid

import pytest

from mafka.client import KafkaError, KafkaException, TopicPartition
from mafka.client.admin import (
    AdminClient,
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    NewPartitions,
    NewTopic,
    OffsetSpec,
)
from tests.harness.cluster import ClusterSpec

pytestmark = pytest.mark.integration

WAIT = 30.0


CLUSTER = ClusterSpec()  # shared: uuid topic and group names, every broker stays up


@pytest.fixture(scope="module")
def admin(cluster):
    client = AdminClient({"bootstrap.servers": cluster.bootstrap})
    yield client
    client.close()


def name(prefix: str = "t") -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def error_of(future) -> KafkaError:
    with pytest.raises(KafkaException) as info:
        future.result(WAIT)
    return info.value.args[0]


def wait_topic(admin, topic, partitions, timeout=WAIT):
    """Metadata for ``topic`` once every broker's answer shows ``partitions`` partitions with leaders."""
    deadline = time.monotonic() + timeout
    while True:
        md = admin.list_topics(topic, timeout=10)
        t = md.topics[topic]
        if t.error is None and len(t.partitions) == partitions and all(p.leader >= 0 for p in t.partitions.values()):
            return md
        if time.monotonic() > deadline:
            raise TimeoutError(f"{topic}: {t.error} {t.partitions}")
        time.sleep(0.2)


def create(admin, partitions=3, rf=2, config=None) -> str:
    topic = name()
    admin.create_topics([NewTopic(topic, partitions, rf, config=config)])[topic].result(WAIT)
    wait_topic(admin, topic, partitions)
    return topic


def produce(cluster, topic, per_partition, partitions=3):
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 5})
    for p in range(partitions):
        for i in range(per_partition):
            producer.produce(topic, key=f"k{i}", value=f"v{p}-{i}", partition=p)
    assert producer.flush(WAIT) == 0


# -- topics ---------------------------------------------------------------------------------


def test_create_topics_then_list_topics_shows_them(admin):
    a, b = name(), name()
    futures = admin.create_topics([NewTopic(a, 3, 2), NewTopic(b, 1, 3, config={"cleanup.policy": "compact"})])
    assert set(futures) == {a, b}
    assert futures[a].result(WAIT) is None and futures[b].result(WAIT) is None
    md = wait_topic(admin, a, 3)
    assert sorted(md.topics[a].partitions) == [0, 1, 2]
    assert all(len(p.replicas) == 2 for p in md.topics[a].partitions.values())
    md = wait_topic(admin, b, 1)
    assert sorted(md.topics[b].partitions[0].replicas) == [1, 2, 3]
    assert {a, b} <= set(admin.list_topics(timeout=10).topics)


def test_create_topic_with_replica_assignment(admin):
    topic = name()
    admin.create_topics([NewTopic(topic, replica_assignment=[[3, 1], [1, 2]])])[topic].result(WAIT)
    md = wait_topic(admin, topic, 2)
    assert md.topics[topic].partitions[0].replicas == [3, 1]
    assert md.topics[topic].partitions[1].replicas == [1, 2]


def test_create_existing_topic_fails_alone_with_topic_already_exists(admin):
    existing = create(admin, partitions=1, rf=1)
    fresh = name()
    futures = admin.create_topics([NewTopic(existing, 1, 1), NewTopic(fresh, 1, 1)])
    err = error_of(futures[existing])
    assert err.code() == KafkaError.TOPIC_ALREADY_EXISTS
    assert existing in err.str()
    assert futures[fresh].result(WAIT) is None


def test_create_topics_validate_only_creates_nothing(admin):
    topic = name()
    assert admin.create_topics([NewTopic(topic, 2, 2)], validate_only=True)[topic].result(WAIT) is None
    assert admin.list_topics(topic, timeout=10).topics[topic].error.code() == KafkaError.UNKNOWN_TOPIC_OR_PARTITION


def test_create_topics_follows_the_controller_after_not_controller(admin):
    admin.describe_cluster().result(WAIT)  # metadata known, so the stale id below is used as is
    md = admin._kernel.metadata
    real = md.controller_id
    md.controller_id = next(b for b in md.brokers if b != real)  # a broker that answers NOT_CONTROLLER
    topic = name()
    assert admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(WAIT) is None
    assert admin._kernel.metadata.controller_id == real
    wait_topic(admin, topic, 1)


def test_delete_topics_and_unknown_topic(admin):
    topic = create(admin, partitions=2, rf=1)
    missing = name("missing")
    futures = admin.delete_topics([topic, missing])
    assert futures[topic].result(WAIT) is None
    assert error_of(futures[missing]).code() == KafkaError.UNKNOWN_TOPIC_OR_PARTITION
    deadline = time.monotonic() + WAIT
    while topic in admin.list_topics(timeout=10).topics:
        assert time.monotonic() < deadline, "deleted topic still listed"
        time.sleep(0.2)


def test_create_partitions_grows_the_count(admin):
    topic = create(admin, partitions=2, rf=2)
    assert admin.create_partitions([NewPartitions(topic, 5)])[topic].result(WAIT) is None
    md = wait_topic(admin, topic, 5)
    assert sorted(md.topics[topic].partitions) == [0, 1, 2, 3, 4]
    err = error_of(admin.create_partitions([NewPartitions(topic, 3)])[topic])
    assert err.code() == KafkaError.INVALID_PARTITIONS


def test_describe_cluster(admin, cluster):
    result = admin.describe_cluster().result(WAIT)
    assert sorted(n.id for n in result.nodes) == [1, 2, 3]
    assert result.controller is not None and result.controller.id == cluster.controller_id()
    assert result.cluster_id
    ports = {b["port"] for b in cluster.info["brokers"]}
    assert {n.port for n in result.nodes} == ports


# -- configs --------------------------------------------------------------------------------


def test_describe_configs_shows_a_config_set_at_creation(admin):
    topic = create(admin, partitions=1, rf=1, config={"retention.ms": "123456"})
    res = ConfigResource(ConfigResource.Type.TOPIC, topic)
    configs = admin.describe_configs([res])[res].result(WAIT)
    entry = configs["retention.ms"]
    assert entry.value == "123456"
    assert entry.source == ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert not entry.is_default and not entry.is_read_only and not entry.is_synonym
    assert entry.synonyms["retention.ms"].is_synonym
    policy = configs["cleanup.policy"]
    assert policy.value == "delete" and policy.is_default and policy.source == ConfigSource.DEFAULT_CONFIG


def test_describe_configs_of_a_broker_and_an_unknown_topic(admin):
    broker = ConfigResource("broker", "2")
    missing = ConfigResource("topic", name("missing"))
    futures = admin.describe_configs([broker, missing])
    configs = futures[broker].result(WAIT)
    assert configs["broker.id"].value == "2"  # answered by broker 2 itself
    assert configs["broker.id"].is_read_only
    assert error_of(futures[missing]).code() == KafkaError.UNKNOWN_TOPIC_OR_PARTITION


def test_incremental_alter_configs_set_and_delete(admin):
    topic = create(admin, partitions=1, rf=1, config={"retention.ms": "100000"})
    res = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry("max.message.bytes", "50000", incremental_operation=AlterConfigOpType.SET),
        ConfigEntry("retention.ms", None, incremental_operation=AlterConfigOpType.DELETE),
    ])
    assert admin.incremental_alter_configs([res])[res].result(WAIT) is None
    configs = admin.describe_configs([ConfigResource("topic", topic)])[ConfigResource("topic", topic)].result(WAIT)
    assert configs["max.message.bytes"].value == "50000"
    assert configs["max.message.bytes"].source == ConfigSource.DYNAMIC_TOPIC_CONFIG
    assert configs["retention.ms"].source != ConfigSource.DYNAMIC_TOPIC_CONFIG  # back to the default

    bad = ConfigResource("topic", topic, incremental_configs=[
        ConfigEntry("no.such.config", "1", incremental_operation=AlterConfigOpType.SET)])
    assert error_of(admin.incremental_alter_configs([bad])[bad]).code() == KafkaError.INVALID_CONFIG


def test_alter_configs_replaces_the_dynamic_set(admin):
    topic = create(admin, partitions=1, rf=1, config={"retention.ms": "100000"})
    res = ConfigResource("topic", topic, set_config={"segment.ms": "7200000"})
    assert admin.alter_configs([res])[res].result(WAIT) is None
    configs = admin.describe_configs([res])[res].result(WAIT)
    assert configs["segment.ms"].value == "7200000"
    assert configs["retention.ms"].source != ConfigSource.DYNAMIC_TOPIC_CONFIG  # not in the new set: reverted


# -- offsets and records --------------------------------------------------------------------


def test_list_offsets_earliest_latest_and_timestamp(admin, cluster):
    topic = create(admin, partitions=3, rf=2)
    before = int(time.time() * 1000) - 1
    produce(cluster, topic, per_partition=10)
    query = {TopicPartition(topic, p): OffsetSpec.latest() for p in range(3)}
    query[TopicPartition(topic, 0)] = OffsetSpec.earliest()
    query[TopicPartition(topic, 1)] = OffsetSpec.for_timestamp(before)
    query[TopicPartition(topic, 9)] = OffsetSpec.latest()
    query[TopicPartition(name("missing"), 0)] = OffsetSpec.latest()
    query[TopicPartition(topic, 2)] = OffsetSpec.latest()
    futures = admin.list_offsets(query)
    assert futures[TopicPartition(topic, 0)].result(WAIT).offset == 0
    by_time = futures[TopicPartition(topic, 1)].result(WAIT)
    assert by_time.offset == 0 and by_time.timestamp >= before
    latest = futures[TopicPartition(topic, 2)].result(WAIT)
    assert latest.offset == 10 and latest.timestamp == -1 and latest.leader_epoch == 0  # ListOffsets v4+
    assert error_of(futures[TopicPartition(topic, 9)]).code() == KafkaError._UNKNOWN_PARTITION
    missing = next(tp for tp in futures if tp.topic.startswith("missing"))
    assert error_of(futures[missing]).code() == KafkaError.UNKNOWN_TOPIC_OR_PARTITION

    tp = TopicPartition(topic, 0)
    best = admin.list_offsets({tp: OffsetSpec.max_timestamp()})[tp].result(WAIT)  # ListOffsets v7 (KIP-734)
    assert 0 <= best.offset < 10 and best.timestamp >= before and best.leader_epoch == 0


def test_delete_records_moves_the_low_watermark(admin, cluster):
    topic = create(admin, partitions=3, rf=2)
    produce(cluster, topic, per_partition=10)
    futures = admin.delete_records([
        TopicPartition(topic, 0, 4), TopicPartition(topic, 1, -1), TopicPartition(topic, 2, 11),
    ])
    assert futures[TopicPartition(topic, 0)].result(WAIT).low_watermark == 4
    assert futures[TopicPartition(topic, 1)].result(WAIT).low_watermark == 10  # OFFSET_END: everything
    assert error_of(futures[TopicPartition(topic, 2)]).code() == KafkaError.OFFSET_OUT_OF_RANGE
    earliest = admin.list_offsets({TopicPartition(topic, p): OffsetSpec.earliest() for p in range(3)})
    assert [earliest[TopicPartition(topic, p)].result(WAIT).offset for p in range(3)] == [4, 10, 0]


# -- consumer groups ------------------------------------------------------------------------


def test_consumer_group_lifecycle(admin, cluster):
    from confluent_kafka import Consumer

    topic = create(admin, partitions=3, rf=2)
    produce(cluster, topic, per_partition=5)
    group = name("g")
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "client.id": "lifecycle",
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([topic])
        seen = 0
        deadline = time.monotonic() + WAIT
        while seen < 15 and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is not None and msg.error() is None:
                seen += 1
        assert seen == 15
        consumer.commit(asynchronous=False)

        listed = admin.list_consumer_groups().result(WAIT)
        assert listed.errors == []
        mine = [g for g in listed.valid if g.group_id == group]
        assert len(mine) == 1 and mine[0].state == ConsumerGroupState.STABLE
        assert not mine[0].is_simple_consumer_group
        only_empty = admin.list_consumer_groups(states={ConsumerGroupState.EMPTY}).result(WAIT)
        assert group not in [g.group_id for g in only_empty.valid]

        desc = admin.describe_consumer_groups([group])[group].result(WAIT)
        assert desc.group_id == group and desc.state == ConsumerGroupState.STABLE
        assert desc.partition_assignor in ("range", "roundrobin", "cooperative-sticky")
        assert desc.coordinator is not None and desc.coordinator.id in (1, 2, 3)
        assert len(desc.members) == 1 and desc.members[0].client_id == "lifecycle"
        assert sorted(desc.members[0].assignment.topic_partitions) == [TopicPartition(topic, p) for p in range(3)]

        legacy = [g for g in admin.list_groups() if g.id == group]
        assert len(legacy) == 1 and legacy[0].state == "Stable" and len(legacy[0].members) == 1
        assert legacy[0].broker.id == desc.coordinator.id

        offsets = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(WAIT)
        assert offsets.group_id == group
        assert sorted((tp.partition, tp.offset) for tp in offsets.topic_partitions) == [(0, 5), (1, 5), (2, 5)]

        # While the consumer is a member, the group refuses admin commits and deletion.
        altered = admin.alter_consumer_group_offsets(
            [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 1)])])[group].result(WAIT)
        assert altered.topic_partitions[0].error.code() == KafkaError.UNKNOWN_MEMBER_ID
        assert error_of(admin.delete_consumer_groups([group])[group]).code() == KafkaError.NON_EMPTY_GROUP
    finally:
        consumer.close()

    altered = admin.alter_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 0, 1), TopicPartition(topic, 2, 3)])]
    )[group].result(WAIT)
    assert [(tp.partition, tp.offset, tp.error) for tp in altered.topic_partitions] == [(0, 1, None), (2, 3, None)]
    some = admin.list_consumer_group_offsets(
        [ConsumerGroupTopicPartitions(group, [TopicPartition(topic, 2), TopicPartition(topic, 0),
                                              TopicPartition(topic, 1)])])[group].result(WAIT)
    assert [(tp.partition, tp.offset) for tp in some.topic_partitions] == [(2, 3), (0, 1), (1, 5)]
    assert admin.describe_consumer_groups([group])[group].result(WAIT).state == ConsumerGroupState.EMPTY

    assert admin.delete_consumer_groups([group])[group].result(WAIT) is None
    assert group not in [g.group_id for g in admin.list_consumer_groups().result(WAIT).valid]
    assert error_of(admin.delete_consumer_groups([group])[group]).code() == KafkaError.GROUP_ID_NOT_FOUND
    gone = admin.describe_consumer_groups([group])[group].result(WAIT)
    assert gone.state == ConsumerGroupState.DEAD and gone.members == []


def test_offsets_of_an_unknown_group_are_empty(admin):
    group = name("nobody")
    result = admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)])[group].result(WAIT)
    assert result.group_id == group and result.topic_partitions == []


# -- arguments and lifecycle ----------------------------------------------------------------


def test_bad_arguments_raise_at_the_call(admin):
    with pytest.raises(TypeError):
        admin.create_topics(["not-a-NewTopic"])
    with pytest.raises(ValueError):
        admin.create_topics([])
    with pytest.raises(ValueError):
        admin.delete_topics(["a", "a"])
    with pytest.raises(TypeError):
        admin.list_offsets([TopicPartition("t", 0)])
    with pytest.raises(ValueError):
        admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions("g", [TopicPartition("t", 0, 5)])])
    with pytest.raises(ValueError):
        admin.incremental_alter_configs([ConfigResource("topic", "t", incremental_configs=[ConfigEntry("a", "b")])])
    with pytest.raises(ValueError):
        ConfigResource("nonsense", "x")


@pytest.fixture
def silent_server():
    """A listener that accepts connections and never answers (a hung broker)."""
    server = socket.socket()
    server.bind(("127.0.0.1", 0))
    server.listen(16)
    yield f"127.0.0.1:{server.getsockname()[1]}"
    server.close()


def admin_threads():
    return [t for t in threading.enumerate() if t.name == "mafka-admin" and t.is_alive()]


def test_request_timeout_fails_with_timed_out(silent_server):
    with AdminClient({"bootstrap.servers": silent_server}) as client:
        start = time.monotonic()
        err = error_of(client.describe_cluster(request_timeout=0.5))
        assert err.code() == KafkaError._TIMED_OUT
        assert time.monotonic() - start < 5


def test_close_fails_pending_futures_and_leaves_no_thread(silent_server):
    before = len(admin_threads())
    client = AdminClient({"bootstrap.servers": silent_server})
    assert len(admin_threads()) == before + 1
    pending = client.describe_cluster(request_timeout=60)
    pending_topics = client.delete_topics(["x", "y"], request_timeout=60)
    time.sleep(0.2)
    client.close()
    assert error_of(pending).code() == KafkaError._DESTROY
    assert error_of(pending_topics["y"]).code() == KafkaError._DESTROY
    assert len(admin_threads()) == before
    assert client._kernel._conns == {}
    with pytest.raises(RuntimeError):
        client.describe_cluster()
    client.close()  # idempotent


def test_context_manager_closes(cluster):
    before = len(admin_threads())
    with AdminClient({"bootstrap.servers": cluster.bootstrap}) as client:
        assert len(client.describe_cluster().result(WAIT).nodes) == 3
        assert len(admin_threads()) == before + 1
    assert len(admin_threads()) == before
