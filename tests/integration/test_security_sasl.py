"""SASL on a real 3-broker cluster: PLAIN and SCRAM with real clients, inter-broker SASL, and attacks.

The brokers listen on PLAINTEXT (for the harness) and SASL_PLAINTEXT; brokers
talk to each other over SASL_PLAINTEXT with PLAIN (their own JAAS user), so a
cluster that forms and replicates proves inter-broker authentication.  Users:
``alice`` is a PLAIN user of the listener's JAAS config and a SCRAM user
created through AlterUserScramCredentials after the brokers started (so every
broker's credential cache must have learnt it from ZooKeeper).
"""

from __future__ import annotations

import asyncio
import struct
import subprocess
import sys
import time
import uuid

import pytest

from tests.harness.cluster import ClusterSpec
from tests.harness.raw_connection import Raw

pytestmark = pytest.mark.integration

JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" '
    'password="broker-secret" user_broker="broker-secret" user_alice="alice-plain";'
)
CLUSTER = ClusterSpec(
    settings={
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-256,SCRAM-SHA-512",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "inter.broker.listener.name": "SASL_PLAINTEXT",
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": JAAS,
        "connection.failed.authentication.delay.ms": "300",
    },
    listeners=("SASL_PLAINTEXT",),
)
SCRAM_PASSWORD = "alice-scram"

SASL_HANDSHAKE, API_VERSIONS, SASL_AUTHENTICATE, METADATA = 17, 18, 36, 3


def sasl_addresses(cluster) -> list[tuple[str, int]]:
    return [(b["host"], b["listeners"]["SASL_PLAINTEXT"]) for b in cluster.info["brokers"]]


def plaintext_addresses(cluster) -> list[tuple[str, int]]:
    return [(b["host"], b["port"]) for b in cluster.info["brokers"]]


@pytest.fixture(scope="module")
def scram_user(cluster) -> str:
    """``alice`` with SCRAM-SHA-256 and SCRAM-SHA-512 credentials, created through a broker."""
    for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512"):
        subprocess.run(
            [sys.executable, "-m", "mafka.cli.main", "configs", "--bootstrap-server", cluster.bootstrap,
             "--alter", "--add-config", f"{mechanism}=[iterations=4096,password={SCRAM_PASSWORD}]",
             "--entity-type", "users", "--entity-name", "alice"],
            check=True, capture_output=True, timeout=60,
        )
    return "alice"


def wait_scram_everywhere(cluster, mechanism: str, user: str, password: str, timeout: float = 10.0) -> float:
    """Seconds until every broker accepts the credential (authenticating afresh each try)."""
    start = time.monotonic()
    pending = set(sasl_addresses(cluster))
    while pending:
        for address in list(pending):
            raw = Raw(address)
            try:
                if raw.authenticate(mechanism, user, password).error_code == 0:
                    pending.discard(address)
            except ConnectionError:
                pass
            finally:
                raw.close()
        if pending:
            assert time.monotonic() - start < timeout, f"brokers {pending} never accepted {user}'s {mechanism}"
            time.sleep(0.05)
    return time.monotonic() - start


def new_topic(cluster, partitions: int = 3, rf: int = 3) -> str:
    from kafka.admin import KafkaAdminClient, NewTopic

    name = f"sasl-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000)
    try:
        admin.create_topics([NewTopic(name, partitions, rf)], timeout_ms=30000)
    finally:
        admin.close()
    return name


# ---------------------------------------------------------------------- ApiVersions and the handshake


def test_sasl_apis_are_advertised_only_on_the_sasl_listener(cluster):
    plain = Raw(plaintext_addresses(cluster)[0])
    sasl = Raw(sasl_addresses(cluster)[0])
    try:
        on_plain = {k.api_key for k in plain.call(API_VERSIONS, 2, {}).api_keys}
        on_sasl = {k.api_key for k in sasl.call(API_VERSIONS, 2, {}).api_keys}
    finally:
        plain.close()
        sasl.close()
    assert SASL_HANDSHAKE not in on_plain and SASL_AUTHENTICATE not in on_plain
    assert {SASL_HANDSHAKE, SASL_AUTHENTICATE} <= on_sasl
    assert on_sasl - {SASL_HANDSHAKE, SASL_AUTHENTICATE} == on_plain


def test_the_handshake_names_the_enabled_mechanisms_and_refuses_others(cluster):
    raw = Raw(sasl_addresses(cluster)[0])
    try:
        response = raw.call(SASL_HANDSHAKE, 1, {"mechanism": "GSSAPI"})
        assert response.error_code == 33  # UNSUPPORTED_SASL_MECHANISM
        assert list(response.mechanisms) == ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"]
        assert raw.closed_by_peer()
    finally:
        raw.close()


# ---------------------------------------------------------------------- attacks


def test_a_request_before_authentication_closes_that_connection_only(cluster):
    raw = Raw(sasl_addresses(cluster)[0])
    other = Raw(sasl_addresses(cluster)[0])
    try:
        raw.send(METADATA, 4, {"topics": None, "allow_auto_topic_creation": False})
        assert raw.closed_by_peer()
        assert other.authenticate("PLAIN", "alice", "alice-plain").error_code == 0
        assert other.call(METADATA, 4, {"topics": None, "allow_auto_topic_creation": False}).brokers
    finally:
        raw.close()
        other.close()


def test_a_huge_size_prefix_before_authentication_is_refused_before_allocation(cluster):
    address = sasl_addresses(cluster)[0]
    raw = Raw(address)
    try:
        raw.sock.sendall(struct.pack(">i", 0x7FFFFFF0) + b"\x00\x24\x00\x01")
        assert raw.closed_by_peer(), "a 2 GB SASL frame was not refused"
    finally:
        raw.close()
    # just above the bound (sasl.server.max.receive.size, 512 KiB) is refused too
    raw = Raw(address)
    try:
        raw.sock.sendall(struct.pack(">i", 524289))
        assert raw.closed_by_peer()
    finally:
        raw.close()
    check = Raw(address)
    try:
        assert check.authenticate("PLAIN", "alice", "alice-plain").error_code == 0
    finally:
        check.close()


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_wrong_passwords_and_unknown_users_get_the_same_delayed_refusal(cluster, scram_user, mechanism):
    messages = []
    for user, password in ((scram_user, "wrong"), ("nobody-" + uuid.uuid4().hex[:6], "wrong")):
        raw = Raw(sasl_addresses(cluster)[1])
        try:
            start = time.monotonic()
            response = raw.authenticate(mechanism, user, password)
            took = time.monotonic() - start
            assert response.error_code == 58  # SASL_AUTHENTICATION_FAILED
            assert took >= 0.25, f"refused after {took:.3f} s, not after connection.failed.authentication.delay.ms"
            assert raw.closed_by_peer()
            messages.append(response.error_message)
        finally:
            raw.close()
    assert messages[0] == messages[1], "the refusal tells a wrong password from an unknown user"


# ---------------------------------------------------------------------- credentials from ZooKeeper


def test_a_new_scram_user_works_on_every_broker_within_a_second(cluster):
    user = f"u-{uuid.uuid4().hex[:8]}"
    subprocess.run(
        [sys.executable, "-m", "mafka.cli.main", "configs", "--bootstrap-server", cluster.bootstrap,
         "--alter", "--add-config", "SCRAM-SHA-512=[iterations=4096,password=first]",
         "--entity-type", "users", "--entity-name", user],
        check=True, capture_output=True, timeout=60,
    )
    # the CLI returned once the credential was written; the brokers learn it by notification
    assert wait_scram_everywhere(cluster, "SCRAM-SHA-512", user, "first", timeout=5.0) < 1.0
    subprocess.run(
        [sys.executable, "-m", "mafka.cli.main", "configs", "--bootstrap-server", cluster.bootstrap,
         "--alter", "--add-config", "SCRAM-SHA-512=[iterations=4096,password=second]",
         "--entity-type", "users", "--entity-name", user],
        check=True, capture_output=True, timeout=60,
    )
    assert wait_scram_everywhere(cluster, "SCRAM-SHA-512", user, "second", timeout=5.0) < 1.0
    raw = Raw(sasl_addresses(cluster)[2])
    try:
        assert raw.authenticate("SCRAM-SHA-512", user, "first").error_code == 58
    finally:
        raw.close()


# ---------------------------------------------------------------------- real clients


def _produce_consume(bootstrap: str, topic: str, conf: dict, client: str = "confluent_kafka") -> list[bytes]:
    """Produce with acks=all, consume in a group, commit: with confluent-kafka or mafka.client (same API)."""
    import importlib

    module = importlib.import_module(client)
    Consumer, Producer = module.Consumer, module.Producer  # noqa: N806 (the clients' class names)

    errors = []
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "error_cb": errors.append, **conf})
    for i in range(100):
        producer.produce(topic, key=b"k%d" % i, value=b"v%d" % i)
    assert producer.flush(30) == 0
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}", "auto.offset.reset": "earliest",
                         "enable.auto.commit": False, "error_cb": errors.append, **conf})
    consumer.subscribe([topic])
    got: list[bytes] = []
    deadline = time.monotonic() + 60
    while len(got) < 100 and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got.append(msg.value())
    consumer.commit(asynchronous=False)
    committed = consumer.committed(consumer.assignment(), timeout=10)
    consumer.close()
    assert sum(tp.offset for tp in committed) == 100
    assert not [e for e in errors if "AUTH" in e.name()], errors
    return got


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_confluent_kafka_produces_consumes_and_commits_over_sasl(cluster, scram_user, mechanism):
    topic = new_topic(cluster)
    password = "alice-plain" if mechanism == "PLAIN" else SCRAM_PASSWORD
    conf = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
            "sasl.username": "alice", "sasl.password": password}
    got = _produce_consume(cluster.bootstrap_for("SASL_PLAINTEXT"), topic, conf)
    assert sorted(got) == sorted(b"v%d" % i for i in range(100))


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_mafka_client_produces_consumes_and_commits_over_sasl(cluster, scram_user, mechanism):
    topic = new_topic(cluster)
    password = "alice-plain" if mechanism == "PLAIN" else SCRAM_PASSWORD
    conf = {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
            "sasl.username": "alice", "sasl.password": password}
    got = _produce_consume(cluster.bootstrap_for("SASL_PLAINTEXT"), topic, conf, client="mafka.client")
    assert sorted(got) == sorted(b"v%d" % i for i in range(100))


def test_mafka_client_with_a_wrong_password_reports_an_authentication_error(cluster, scram_user):
    from mafka.client import KafkaException, Producer

    errors = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap_for("SASL_PLAINTEXT"),
                         "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
                         "sasl.username": "alice", "sasl.password": "wrong", "error_cb": errors.append})
    try:
        # produce() waits for the topic's partitions (no broker answers), then gives up
        with pytest.raises(KafkaException):
            producer.produce("anything", value=b"x")
        producer.poll(0.5)
    finally:
        producer.close(timeout=1)
    assert errors, "no error reported"
    assert errors[0].code() == -169  # librdkafka's _AUTHENTICATION
    assert "Authentication failed" in errors[0].str()


def test_confluent_kafka_with_a_wrong_password_reports_an_authentication_error(cluster, scram_user):
    from confluent_kafka import KafkaError, Producer

    errors = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap_for("SASL_PLAINTEXT"),
                         "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
                         "sasl.username": "alice", "sasl.password": "wrong", "error_cb": errors.append})
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline and not any(e.code() == KafkaError._AUTHENTICATION for e in errors):
        producer.poll(0.2)
    assert any(e.code() == KafkaError._AUTHENTICATION for e in errors), errors


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_kafka_python_produces_consumes_and_commits_over_sasl(cluster, scram_user, mechanism):
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    topic = new_topic(cluster)
    password = "alice-plain" if mechanism == "PLAIN" else SCRAM_PASSWORD
    conf = {"bootstrap_servers": cluster.bootstrap_for("SASL_PLAINTEXT"), "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": mechanism, "sasl_plain_username": "alice", "sasl_plain_password": password}
    producer = KafkaProducer(acks="all", **conf)
    for i in range(100):
        producer.send(topic, key=b"k%d" % i, value=b"v%d" % i)
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(topic, group_id=f"g-{topic}", auto_offset_reset="earliest", enable_auto_commit=False,
                             consumer_timeout_ms=20000, **conf)
    got = []
    for msg in consumer:
        got.append(msg.value)
        if len(got) == 100:
            break
    consumer.commit()
    committed = sum(consumer.committed(TopicPartition(topic, p)) or 0 for p in range(3))
    consumer.close()
    assert sorted(got) == sorted(b"v%d" % i for i in range(100))
    assert committed == 100


def test_aiokafka_produces_and_consumes_in_a_group_over_scram(cluster, scram_user):
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    topic = new_topic(cluster)
    conf = {"bootstrap_servers": cluster.bootstrap_for("SASL_PLAINTEXT"), "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "alice", "sasl_plain_password": SCRAM_PASSWORD}

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(acks="all", **conf)
        await producer.start()
        try:
            for i in range(100):
                await producer.send(topic, value=b"v%d" % i)
            await producer.flush()
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, group_id=f"g-{topic}", auto_offset_reset="earliest",
                                    enable_auto_commit=False, **conf)
        await consumer.start()
        got: list[bytes] = []
        try:
            async with asyncio.timeout(60):
                async for msg in consumer:
                    got.append(msg.value)
                    if len(got) == 100:
                        break
            await consumer.commit()
        finally:
            await consumer.stop()
        return got

    assert sorted(asyncio.run(run())) == sorted(b"v%d" % i for i in range(100))


def test_kcat_lists_metadata_over_scram(cluster, scram_user):
    out = subprocess.run(
        ["kcat", "-b", cluster.bootstrap_for("SASL_PLAINTEXT"), "-L", "-X", "security.protocol=SASL_PLAINTEXT",
         "-X", "sasl.mechanisms=SCRAM-SHA-256", "-X", "sasl.username=alice", "-X", f"sasl.password={SCRAM_PASSWORD}"],
        capture_output=True, text=True, timeout=30,
    )
    assert out.returncode == 0, out.stderr
    assert "3 brokers" in out.stdout


# ---------------------------------------------------------------------- inter-broker SASL


def test_replication_runs_over_the_authenticated_inter_broker_listener(cluster):
    """An RF 3 topic written with acks=all: the followers fetched over SASL (the ISR stays whole)."""
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient

    topic = new_topic(cluster, partitions=2, rf=3)
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(200):
        producer.produce(topic, value=b"x%d" % i)
    assert producer.flush(30) == 0
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    deadline = time.monotonic() + 30
    while True:
        meta = admin.list_topics(topic, timeout=10).topics[topic]
        if all(len(p.isrs) == 3 for p in meta.partitions.values()):
            break
        assert time.monotonic() < deadline, {p.id: p.isrs for p in meta.partitions.values()}
        time.sleep(0.2)


def test_an_unknown_scram_user_gets_the_same_salt_from_every_broker(cluster, scram_user):
    """A fake salt that differed between brokers (or restarts) would tell an unknown user from a real one."""

    def salt_and_iterations(address, user: str) -> bytes:
        raw = Raw(address)
        try:
            assert raw.call(SASL_HANDSHAKE, 1, {"mechanism": "SCRAM-SHA-512"}).error_code == 0
            first = raw.call(SASL_AUTHENTICATE, 1, {"auth_bytes": f"n,,n={user},r=abcdefghijklmnop".encode()})
            assert first.error_code == 0
            return bytes(first.auth_bytes).split(b",", 1)[1]  # s=<salt>,i=<iterations>
        finally:
            raw.close()

    unknown = f"ghost-{uuid.uuid4().hex[:6]}"
    seen = {salt_and_iterations(address, unknown) for address in sasl_addresses(cluster)}
    assert len(seen) == 1, seen
    assert len({salt_and_iterations(address, scram_user) for address in sasl_addresses(cluster)}) == 1
