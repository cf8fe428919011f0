"""SASL on a real 3-broker cluster: PLAIN and SCRAM with real clients, inter-broker SASL, and attacks.

The brokers listen on PLAINTEXT (for the harness) and SASL_PLAINTEXT; brokers
talk to each other over SASL_PLAINTEXT with PLAIN (their own JAAS user), so a
cluster that forms and replicates proves inter-broker authentication.  Users:
``alice`` is a PLAIN user of the listener's JAAS config and a SCRAM user
created through AlterUserScramCredentials after the brokers started (so every
broker's credential cache must have learnt it from ZooKeeper).
"""

from __future__ import annotations

import struct
import subprocess
import sys
import time
import uuid

import pytest

from tests.harness import client_round_trips as clients
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
        set_scram_password(cluster, "alice", mechanism, SCRAM_PASSWORD)
    return "alice"


def set_scram_password(cluster, user: str, mechanism: str, password: str) -> None:
    """Creates or replaces *user*'s *mechanism* credential (``mafka configs --alter``, AlterUserScramCredentials)."""
    subprocess.run(
        [sys.executable, "-m", "mafka.cli.main", "configs", "--bootstrap-server", cluster.bootstrap,
         "--alter", "--add-config", f"{mechanism}=[iterations=4096,password={password}]",
         "--entity-type", "users", "--entity-name", user],
        check=True, capture_output=True, timeout=60,
    )


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
    set_scram_password(cluster, user, "SCRAM-SHA-512", "first")
    # the CLI returned once the credential was written; the brokers learn it by notification
    assert wait_scram_everywhere(cluster, "SCRAM-SHA-512", user, "first", timeout=5.0) < 1.0
    set_scram_password(cluster, user, "SCRAM-SHA-512", "second")
    assert wait_scram_everywhere(cluster, "SCRAM-SHA-512", user, "second", timeout=5.0) < 1.0
    raw = Raw(sasl_addresses(cluster)[2])
    try:
        assert raw.authenticate("SCRAM-SHA-512", user, "first").error_code == 58
    finally:
        raw.close()


# ---------------------------------------------------------------------- real clients


def alice(mechanism: str) -> dict:
    """alice on SASL_PLAINTEXT with *mechanism*, for confluent-kafka and mafka.client."""
    password = "alice-plain" if mechanism == "PLAIN" else SCRAM_PASSWORD
    return {"security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": mechanism,
            "sasl.username": "alice", "sasl.password": password}


def alice_for_python_clients(cluster, mechanism: str) -> dict:
    """alice on SASL_PLAINTEXT with *mechanism*, in kafka-python's and aiokafka's spelling."""
    password = "alice-plain" if mechanism == "PLAIN" else SCRAM_PASSWORD
    return {"bootstrap_servers": cluster.bootstrap_for("SASL_PLAINTEXT"), "security_protocol": "SASL_PLAINTEXT",
            "sasl_mechanism": mechanism, "sasl_plain_username": "alice", "sasl_plain_password": password}


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_confluent_kafka_produces_consumes_and_commits_over_sasl(cluster, scram_user, mechanism):
    topic = clients.new_topic(cluster, "sasl")
    clients.produce_consume_commit(cluster.bootstrap_for("SASL_PLAINTEXT"), topic, alice(mechanism), count=100)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256"])
def test_mafka_client_produces_consumes_and_commits_over_sasl(cluster, scram_user, mechanism):
    topic = clients.new_topic(cluster, "sasl")
    clients.produce_consume_commit(cluster.bootstrap_for("SASL_PLAINTEXT"), topic, alice(mechanism), count=100,
                                   client="mafka.client")


def test_mafka_client_with_a_wrong_password_reports_an_authentication_error(cluster, scram_user):
    from mafka.client import KafkaException, Producer

    errors = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap_for("SASL_PLAINTEXT"),
                         "security.protocol": "SASL_PLAINTEXT", "sasl.mechanism": "SCRAM-SHA-512",
                         "sasl.username": "alice", "sasl.password": "wrong", "error_cb": errors.append,
                         "delivery.timeout.ms": 3000})
    try:
        # produce() waits for the topic's partitions (no broker answers) up to the delivery timeout
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
    topic = clients.new_topic(cluster, "sasl")
    clients.kafka_python_round_trip(alice_for_python_clients(cluster, mechanism), topic, keyed=True)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_aiokafka_produces_and_consumes_in_a_group_over_sasl(cluster, scram_user, mechanism):
    topic = clients.new_topic(cluster, "sasl")
    clients.aiokafka_round_trip(alice_for_python_clients(cluster, mechanism), topic)


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
    topic = clients.new_topic(cluster, "sasl", partitions=2, rf=3)
    clients.replicate_to_full_isr(cluster.bootstrap, topic)


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
