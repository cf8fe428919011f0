"""Admin protocol breadth through real clients on a real 3-broker Mafka cluster (real ZooKeeper, real processes).

* ListOffsets v4–v7: confluent-kafka's ``list_offsets`` with
  ``OffsetSpec.max_timestamp()`` (v7, KIP-734) finds the record with the largest
  timestamp inside a batch; kafka-python's consumer, pinned to the broker
  versions that bring v4, v5 and v6 and unpinned for v7, looks up offsets by
  time and gets leader epochs back; mafka.client's admin answers max_timestamp.
* IncrementalAlterConfigs v1: confluent-kafka APPENDs and SUBTRACTs list
  items of ``cleanup.policy``, is refused APPEND on a non-list config, and
  sets/deletes a broker's dynamic throttle, with and without validate_only.
* DescribeCluster: confluent-kafka and kafka-python see the cluster id, the
  controller, every broker with its rack and the cluster's operations.
* DescribeProducers: kafka-python describes the idempotent producer that
  just wrote, at the leader and at a follower; a broker without a replica
  answers NOT_LEADER_OR_FOLLOWER.
* Describe/AlterUserScramCredentials: credentials written by confluent-kafka
  and kafka-python land in ZooKeeper as Kafka 2.8 keeps them (checked
  against the password, salt and iterations the client used) and are
  described by the other client.

Which protocol version each client sent is read from the clients' own debug
logs (librdkafka's ``Sent …Request (vN`` lines, kafka-python's
``…Response(version=N`` lines).
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import logging
import time
import uuid
from contextlib import contextmanager

import pytest

from tests.harness.cluster import ClusterSpec

pytestmark = pytest.mark.integration

WAIT = 30.0
RACK = "rack-a"


CLUSTER = ClusterSpec(settings={"broker.rack": RACK}, shared=False)  # sets broker 2's dynamic configs and SCRAM users


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


@contextmanager
def captured(logger_name: str):
    """The messages logged to *logger_name* (at DEBUG) while the block runs."""
    logger = logging.getLogger(logger_name)
    handler = _Lines()
    old_level = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.DEBUG)
    try:
        yield handler.lines
    finally:
        logger.removeHandler(handler)
        logger.setLevel(old_level)


def rdkafka_admin(cluster, logger_name: str):
    """A confluent-kafka AdminClient whose protocol debug log goes to *logger_name*."""
    from confluent_kafka.admin import AdminClient

    return AdminClient(
        {
            "bootstrap.servers": cluster.bootstrap,
            "debug": "protocol",
            "logger": logging.getLogger(logger_name),
        }
    )


def sent_versions(lines: list[str], request: str) -> set[int]:
    """Versions of *request* librdkafka logged as sent (``Sent ListOffsetsRequest (v7, …``)."""
    out = set()
    for line in lines:
        marker = f"Sent {request} (v"
        if marker in line:
            out.add(int(line.split(marker, 1)[1].split(",", 1)[0]))
    return out


def new_topic(cluster, partitions=1, rf=3, configs=None) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    topic = f"adm-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, partitions, rf, config=configs or {})])[topic].result(WAIT)
    from .test_clients import wait_for_leaders

    wait_for_leaders(cluster, topic, partitions)
    return topic


def produce_batches(cluster, topic, batches):
    """Each list of timestamps produced as one batch to partition 0 (acks=all, one flush per batch)."""
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 1000, "acks": "all"})
    for timestamps in batches:
        for ts in timestamps:
            producer.produce(topic, value=f"v{ts}".encode(), partition=0, timestamp=ts)
        assert producer.flush(WAIT) == 0


def zk_client(cluster):
    from kazoo.client import KazooClient

    zk = KazooClient(hosts=cluster.info["zookeeper"]["connect"], timeout=10)
    zk.start(timeout=15)
    return zk


def poll(fn, timeout=WAIT):
    """fn() → (ok, value): the value once ok, else the last value at the deadline."""
    deadline = time.monotonic() + timeout
    while True:
        ok, value = fn()
        if ok or time.monotonic() > deadline:
            return value
        time.sleep(0.3)


# ------------------------------------------------------------------------------------ ListOffsets

# Offsets 0-4 in one batch, whose largest timestamp (9000) first appears at offset 1;
# offsets 5-6 in a second batch.
BATCHES = [[1000, 9000, 3000, 9000, 2000], [5000, 8999]]


def test_confluent_list_offsets_max_timestamp_v7(cluster):
    from confluent_kafka import Consumer, TopicPartition
    from confluent_kafka.admin import OffsetSpec

    topic = new_topic(cluster)
    produce_batches(cluster, topic, BATCHES)
    tp = TopicPartition(topic, 0)
    with captured("it-rdkafka-list-offsets") as lines:
        admin = rdkafka_admin(cluster, "it-rdkafka-list-offsets")
        best = admin.list_offsets({tp: OffsetSpec.max_timestamp()})[tp].result(WAIT)
        specs = {
            "earliest": OffsetSpec.earliest(),
            "latest": OffsetSpec.latest(),
            "time": OffsetSpec.for_timestamp(8500),
        }
        other = {k: admin.list_offsets({tp: spec})[tp].result(WAIT) for k, spec in specs.items()}
        admin.poll(0.5)
    assert (best.offset, best.timestamp, best.leader_epoch) == (1, 9000, 0)
    assert (other["earliest"].offset, other["latest"].offset) == (0, 7)
    assert (other["latest"].leader_epoch, other["latest"].timestamp) == (0, -1)
    assert (other["time"].offset, other["time"].timestamp) == (1, 9000)
    assert sent_versions(lines, "ListOffsetsRequest") == {7}

    # A consumer reading offset 1 sees the record with that timestamp.
    consumer = Consumer(
        {"bootstrap.servers": cluster.bootstrap, "group.id": f"g-{uuid.uuid4().hex[:6]}"}
    )
    try:
        consumer.assign([TopicPartition(topic, 0, 1)])
        msg = None
        deadline = time.monotonic() + WAIT
        while msg is None and time.monotonic() < deadline:
            msg = consumer.poll(1.0)
        assert msg is not None and msg.error() is None
        assert (msg.offset(), msg.timestamp()[1], msg.value()) == (1, 9000, b"v9000")
    finally:
        consumer.close()


def test_mafka_client_list_offsets_max_timestamp(cluster):
    from mafka.client import TopicPartition
    from mafka.client.admin import AdminClient, OffsetSpec

    topic = new_topic(cluster, rf=2)
    produce_batches(cluster, topic, BATCHES)
    tp = TopicPartition(topic, 0)
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    try:
        best = admin.list_offsets({tp: OffsetSpec.max_timestamp()})[tp].result(WAIT)
        latest = admin.list_offsets({tp: OffsetSpec.latest()})[tp].result(WAIT)
    finally:
        admin.close()
    assert (best.offset, best.timestamp, best.leader_epoch) == (1, 9000, 0)
    assert (latest.offset, latest.leader_epoch) == (7, 0)


@pytest.mark.parametrize(
    ("broker_version", "version"), [((2, 1, 0), 4), ((2, 2, 0), 5), ((2, 8, 0), 6), (None, 7)]
)
def test_kafka_python_list_offsets_versions(cluster, broker_version, version):
    """kafka-python pinned to a broker version speaks that version's ListOffsets (unpinned: negotiated, v7)."""
    from kafka import KafkaConsumer, TopicPartition

    topic = new_topic(cluster)
    produce_batches(cluster, topic, BATCHES)
    tp = TopicPartition(topic, 0)
    kwargs = {} if broker_version is None else {"api_version": broker_version}
    with captured("kafka") as lines:
        consumer = KafkaConsumer(
            bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000, **kwargs
        )
        try:
            found = consumer.offsets_for_times({tp: 8500})[tp]
            early = consumer.offsets_for_times({tp: 0})[tp]
            missing = consumer.offsets_for_times({tp: 10_000})[tp]
            end = consumer.end_offsets([tp])[tp]
        finally:
            consumer.close()
    assert (found.offset, found.timestamp, found.leader_epoch) == (1, 9000, 0)
    assert (early.offset, early.timestamp, early.leader_epoch) == (0, 1000, 0)
    assert missing is None and end == 7
    answered = {
        int(line.split("ListOffsetsResponse(version=", 1)[1].split(",", 1)[0])
        for line in lines
        if "ListOffsetsResponse(version=" in line
    }
    assert answered == {version}


# ------------------------------------------------------------------------- IncrementalAlterConfigs


def _topic_config(admin, topic, name):
    from confluent_kafka.admin import ConfigResource

    res = ConfigResource("topic", topic)
    return admin.describe_configs([res])[res].result(WAIT)[name].value


def test_confluent_incremental_alter_configs_v1_append_subtract(cluster):
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AlterConfigOpType, ConfigEntry, ConfigResource

    topic = new_topic(cluster, rf=2, configs={"retention.ms": "3600000"})

    def alter(name, value, op, validate_only=False):
        res = ConfigResource(
            "topic", topic, incremental_configs=[ConfigEntry(name, value, incremental_operation=op)]
        )
        return admin.incremental_alter_configs([res], validate_only=validate_only)[res].result(WAIT)

    with captured("it-rdkafka-iac") as lines:
        admin = rdkafka_admin(cluster, "it-rdkafka-iac")
        assert alter("cleanup.policy", "compact", AlterConfigOpType.APPEND) is None
        assert (
            _topic_config(admin, topic, "cleanup.policy") == "delete,compact"
        )  # appended to the default
        alter("cleanup.policy", "compact,delete", AlterConfigOpType.APPEND)
        assert (
            _topic_config(admin, topic, "cleanup.policy") == "delete,compact"
        )  # present values are skipped
        alter("cleanup.policy", "delete", AlterConfigOpType.SUBTRACT, validate_only=True)
        assert (
            _topic_config(admin, topic, "cleanup.policy") == "delete,compact"
        )  # validate_only wrote nothing
        alter("cleanup.policy", "delete", AlterConfigOpType.SUBTRACT)
        assert _topic_config(admin, topic, "cleanup.policy") == "compact"
        with pytest.raises(KafkaException) as refused:
            alter("retention.ms", "5", AlterConfigOpType.APPEND)  # not a LIST config
        assert refused.value.args[0].code() == KafkaError.INVALID_CONFIG
        assert _topic_config(admin, topic, "retention.ms") == "3600000"
        admin.poll(0.5)
    assert sent_versions(lines, "IncrementalAlterConfigsRequestRequest") == {1}


def test_confluent_incremental_alter_configs_v1_broker_resource(cluster):
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import AdminClient, AlterConfigOpType, ConfigEntry, ConfigResource

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    name = "follower.replication.throttled.rate"

    def alter(value, op, validate_only=False):
        res = ConfigResource(
            "broker", "2", incremental_configs=[ConfigEntry(name, value, incremental_operation=op)]
        )
        return admin.incremental_alter_configs([res], validate_only=validate_only)[res].result(WAIT)

    def described():
        res = ConfigResource("broker", "2")
        entry = admin.describe_configs([res])[res].result(WAIT).get(name)
        return None if entry is None else entry.value

    alter("1048576", AlterConfigOpType.SET, validate_only=True)
    assert described() is None
    alter("1048576", AlterConfigOpType.SET)
    assert described() == "1048576"
    with pytest.raises(KafkaException) as refused:
        alter("5", AlterConfigOpType.APPEND)
    assert refused.value.args[0].code() == KafkaError.INVALID_CONFIG
    alter(None, AlterConfigOpType.DELETE)
    assert described() is None


# ---------------------------------------------------------------------------------- DescribeCluster


def test_describe_cluster_confluent_and_kafka_python(cluster):
    from confluent_kafka.admin import AclOperation, AdminClient
    from kafka.admin import KafkaAdminClient

    controller = cluster.controller_id()
    expected = sorted((b["id"], b["host"], b["port"], RACK) for b in cluster.info["brokers"])
    operations = {
        "CREATE",
        "ALTER",
        "DESCRIBE",
        "CLUSTER_ACTION",
        "DESCRIBE_CONFIGS",
        "ALTER_CONFIGS",
        "IDEMPOTENT_WRITE",
    }

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    described = admin.describe_cluster(include_authorized_operations=True).result(WAIT)
    assert described.controller.id == controller
    assert sorted((n.id, n.host, n.port, n.rack) for n in described.nodes) == expected
    assert {AclOperation(op).name for op in described.authorized_operations} == operations
    assert (
        described.cluster_id == admin.list_topics(timeout=WAIT).cluster_id
    )  # the Metadata answer's
    assert admin.describe_cluster().result(WAIT).authorized_operations is None  # not asked

    kp = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000)
    try:
        got = kp.describe_cluster()
    finally:
        kp.close()
    assert got["cluster_id"] == described.cluster_id and got["controller_id"] == controller
    assert (
        sorted((b["broker_id"], b["host"], b["port"], b["rack"]) for b in got["brokers"])
        == expected
    )
    assert all(b["is_fenced"] is False for b in got["brokers"])
    assert set(got["authorized_operations"]) == operations


# -------------------------------------------------------------------------------- DescribeProducers


def test_kafka_python_describe_producers_after_an_idempotent_producer(cluster):
    from kafka import KafkaProducer, TopicPartition
    from kafka.admin import KafkaAdminClient
    from kafka.errors import (
        NotLeaderForPartitionError,
    )  # kafka-python's name for NOT_LEADER_OR_FOLLOWER (6)

    topic = new_topic(cluster, rf=2)
    tp = TopicPartition(topic, 0)
    before = int(time.time() * 1000) - 1
    producer = KafkaProducer(
        bootstrap_servers=cluster.bootstrap, enable_idempotence=True, acks="all"
    )
    try:
        for i in range(5):
            producer.send(topic, value=b"v%d" % i, partition=0)
        producer.flush(WAIT)
        ids = (
            producer._transaction_manager.producer_id_and_epoch
        )  # what the broker gave this producer
    finally:
        producer.close()
    after = int(time.time() * 1000) + 1

    from confluent_kafka.admin import AdminClient

    partition = (
        AdminClient({"bootstrap.servers": cluster.bootstrap})
        .list_topics(topic, timeout=WAIT)
        .topics[topic]
        .partitions[0]
    )
    leader = partition.leader
    follower = next(r for r in partition.replicas if r != leader)
    outsider = next(b["id"] for b in cluster.info["brokers"] if b["id"] not in partition.replicas)

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000)
    try:
        (state,) = admin.describe_producers([tp]).values()
        (active,) = state.active_producers
        assert (active.producer_id, active.producer_epoch) == (ids.producer_id, ids.epoch)
        assert active.last_sequence == 4 and before <= active.last_timestamp <= after
        assert (active.coordinator_epoch, active.current_transaction_start_offset) == (-1, -1)

        def on_follower():
            (state,) = admin.describe_producers([tp], broker_id=follower).values()
            return state.active_producers == [active], state.active_producers

        assert poll(on_follower) == [active]  # the follower replicated the same state
        with pytest.raises(NotLeaderForPartitionError):
            admin.describe_producers([tp], broker_id=outsider)
    finally:
        admin.close()


# ------------------------------------------------------------------------------- SCRAM credentials


def _stored(zk, user_znode):
    data, _ = zk.get(f"/config/users/{user_znode}")
    return json.loads(data)


def _credential_fields(value):
    return dict(item.split("=", 1) for item in value.split(","))


def _check_credential(value, password: bytes, salt: bytes, iterations: int, digest: str):
    """The stored credential is what RFC 5802 derives from this password, salt and iteration count."""
    fields = _credential_fields(value)
    assert list(fields) == ["salt", "stored_key", "server_key", "iterations"]
    assert base64.b64decode(fields["salt"]) == salt and int(fields["iterations"]) == iterations
    salted = hashlib.pbkdf2_hmac(digest, password, salt, iterations)
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    assert base64.b64decode(fields["stored_key"]) == hashlib.new(digest, client_key).digest()
    assert (
        base64.b64decode(fields["server_key"]) == hmac.new(salted, b"Server Key", digest).digest()
    )


def test_confluent_scram_credentials_in_zookeeper(cluster):
    from confluent_kafka import KafkaError, KafkaException
    from confluent_kafka.admin import (
        AdminClient,
        ScramCredentialInfo,
        ScramMechanism,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    alice, bob = f"alice {uuid.uuid4().hex[:6]}", f"bob-{uuid.uuid4().hex[:6]}"
    sha256, sha512 = ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512
    futures = admin.alter_user_scram_credentials(
        [
            UserScramCredentialUpsertion(
                alice, ScramCredentialInfo(sha256, 8192), b"alice-secret", b"alice-salt"
            ),
            UserScramCredentialUpsertion(
                alice, ScramCredentialInfo(sha512, 4096), b"alice-secret", b"alice-salt-2"
            ),
            UserScramCredentialUpsertion(
                bob, ScramCredentialInfo(sha256, 4096), b"bob-secret", b"bob-salt"
            ),
        ]
    )
    assert {user: f.result(WAIT) for user, f in futures.items()} == {alice: None, bob: None}

    zk = zk_client(cluster)
    try:
        znode = alice.replace(" ", "%20")  # Kafka's Sanitizer
        stored = _stored(zk, znode)
        assert stored["version"] == 1 and sorted(stored["config"]) == [
            "SCRAM-SHA-256",
            "SCRAM-SHA-512",
        ]
        _check_credential(
            stored["config"]["SCRAM-SHA-256"], b"alice-secret", b"alice-salt", 8192, "sha256"
        )
        _check_credential(
            stored["config"]["SCRAM-SHA-512"], b"alice-secret", b"alice-salt-2", 4096, "sha512"
        )
        notices = [
            json.loads(zk.get(f"/config/changes/{c}")[0])
            for c in sorted(zk.get_children("/config/changes"))
        ]
        assert {"version": 2, "entity_path": f"users/{znode}"} in notices
    finally:
        zk.stop()
        zk.close()

    described = admin.describe_user_scram_credentials([alice, "nobody-here"])
    infos = described[alice].result(WAIT).scram_credential_infos
    assert sorted((i.mechanism.value, i.iterations) for i in infos) == [
        (sha256.value, 8192),
        (sha512.value, 4096),
    ]
    with pytest.raises(KafkaException) as missing:
        described["nobody-here"].result(WAIT)
    assert missing.value.args[0].code() == KafkaError.RESOURCE_NOT_FOUND
    everyone = admin.describe_user_scram_credentials().result(WAIT)
    assert {alice, bob} <= set(everyone)

    futures = admin.alter_user_scram_credentials(
        [
            UserScramCredentialDeletion(alice, sha512),
            UserScramCredentialUpsertion("weak", ScramCredentialInfo(sha256, 1000), b"pw", b"salt"),
            UserScramCredentialDeletion(f"ghost-{uuid.uuid4().hex[:6]}", sha256),
        ]
    )
    codes = {}
    for user, f in futures.items():
        try:
            codes[user] = f.result(WAIT)
        except KafkaException as exc:
            codes[user] = exc.args[0].code()
    assert codes.pop(alice) is None and codes.pop("weak") == KafkaError.UNACCEPTABLE_CREDENTIAL
    assert list(codes.values()) == [KafkaError.RESOURCE_NOT_FOUND]
    infos = (
        admin.describe_user_scram_credentials([alice])[alice].result(WAIT).scram_credential_infos
    )
    assert [(i.mechanism.value, i.iterations) for i in infos] == [(sha256.value, 8192)]


def test_kafka_python_scram_credentials_are_altered_at_the_controller(cluster):
    """kafka-python sends AlterUserScramCredentials to any broker: only the controller accepts (Kafka 2.8)."""
    from confluent_kafka.admin import AdminClient
    from kafka.admin import (
        KafkaAdminClient,
        ScramMechanism,
        UserScramCredentialDeletion,
        UserScramCredentialUpsertion,
    )

    user = f"carol-{uuid.uuid4().hex[:6]}"
    upsertion = UserScramCredentialUpsertion(
        user, ScramMechanism.SCRAM_SHA_512, "carol-secret", iterations=5000, salt=b"carol-salt"
    )
    refusals = []
    for _ in range(40):
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000)
        try:
            answer = admin.alter_user_scram_credentials([upsertion])
        finally:
            admin.close()
        if answer == {user: None}:
            break
        refusals.append(answer)
    else:
        pytest.fail("no AlterUserScramCredentials reached the controller in 40 tries")
    assert all(
        r == {user: "This is not the correct controller for this cluster."} for r in refusals
    ), refusals

    zk = zk_client(cluster)
    try:
        stored = _stored(zk, user)
    finally:
        zk.stop()
        zk.close()
    _check_credential(
        stored["config"]["SCRAM-SHA-512"], b"carol-secret", b"carol-salt", 5000, "sha512"
    )

    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000)
    try:
        got = admin.describe_user_scram_credentials([user])
        assert got == {
            user: {
                "error": None,
                "credential_infos": [
                    {"mechanism": ScramMechanism.SCRAM_SHA_512, "iterations": 5000}
                ],
            }
        }
        missing = admin.describe_user_scram_credentials(["nobody-" + user])
        assert missing["nobody-" + user]["error"].startswith(
            "Attempt to describe a user credential that does not exist"
        )
    finally:
        admin.close()
    # confluent-kafka reads what kafka-python wrote.
    reader = AdminClient(
        {"bootstrap.servers": cluster.bootstrap}
    )  # kept referenced until the answer
    infos = reader.describe_user_scram_credentials([user])[user].result(WAIT)
    assert [(i.mechanism.name, i.iterations) for i in infos.scram_credential_infos] == [
        ("SCRAM_SHA_512", 5000)
    ]

    deletion = UserScramCredentialDeletion(user, ScramMechanism.SCRAM_SHA_512)
    for _ in range(40):
        admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000)
        try:
            answer = admin.alter_user_scram_credentials([deletion])
        finally:
            admin.close()
        if answer == {user: None}:
            break
    assert answer == {user: None}
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000)
    try:
        assert user not in admin.describe_user_scram_credentials()
    finally:
        admin.close()
