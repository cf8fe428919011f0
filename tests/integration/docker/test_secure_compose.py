"""The secured compose cluster's smoke test (in ``make test``): SASL_SSL + SCRAM everywhere, ACLs on.

``docker/up.sh --secure`` (what ``make docker-up SECURE=1`` runs) under a
project name of its own, free host ports and a secrets directory of the
test's own; images from ``docker/build.sh`` (built when missing):

1. the certificates and passwords are made at up time, the one-shot
   ``scram-init`` writes the ``broker`` and ``admin`` SCRAM credentials to
   ZooKeeper, and all six containers become healthy (a broker's health check
   is itself a SASL_SSL + SCRAM Metadata request);
2. as the super user ``admin`` (SASL_SSL, SCRAM-SHA-512) the test creates a
   client user ``app`` through the cluster (``mafka configs --bootstrap-server
   … --command-config``), an RF-3 topic and ``app``'s ACLs; ``app`` produces
   with acks=all and reads everything back in a consumer group that commits;
3. the brokers talk SASL_SSL to each other: their registrations in ZooKeeper
   and their configs name no PLAINTEXT listener, the inter-broker listener is
   SASL_SSL, the INTERNAL port answers no plaintext client inside the network
   but does answer SASL_SSL + SCRAM, and every ISR of the RF-3 topic is full
   (replication runs only over that listener);
4. a plaintext connection to a SASL_SSL port gets no Kafka answer, a wrong
   password and an unknown user are refused with an authentication error, and
   ``app`` may not write to a topic it has no ACL for;
5. ``docker-compose down -v`` removes the project.

Skipped, with the reason, on a machine where no Docker engine answers.
"""

from __future__ import annotations

import json
import socket
import struct
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from typing import Any

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import (
    AclBinding,
    AclOperation,
    AclPermissionType,
    AdminClient,
    ConfigResource,
    NewTopic,
    ResourcePatternType,
    ResourceType,
)

from mafka.wire.codec import encode_request
from tests.harness.docker.compose import build_images, docker_available
from tests.harness.docker.secure_compose import SecureComposeCluster
from tests.harness.waits import wait_until

pytestmark = [pytest.mark.integration, pytest.mark.skipif(docker_available() is not None,
                                                          reason=f"Docker: {docker_available()}")]

APP = "app"
APP_PASSWORD = f"app-{uuid.uuid4().hex[:12]}"
TOPIC = "payments"
FORBIDDEN = "ledger"  # created by admin; app has no ACL on it
GROUP = "app-readers"
PARTITIONS = 3
RECORDS = 300


@pytest.fixture(scope="module")
def secure(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SecureComposeCluster]:
    build_images()
    cluster = SecureComposeCluster(tmp_path_factory.mktemp("secrets"),
                                   log_dir=tmp_path_factory.mktemp("compose-logs"))
    try:
        started = time.monotonic()
        cluster.up()
        print(f"secured compose cluster healthy in {time.monotonic() - started:.1f} s")
        yield cluster
    finally:
        cluster.down()


def app_config(cluster: SecureComposeCluster, bootstrap: str | None = None, **extra: Any) -> dict[str, Any]:
    return cluster.client_config(APP, APP_PASSWORD, bootstrap, **extra)


def app_sees_topic(cluster: SecureComposeCluster, broker_id: int) -> bool:
    """Does broker ``broker_id`` (asked alone) accept app's credential and show it the topic (its ACLs applied)?"""
    try:
        md = AdminClient(app_config(cluster, cluster.broker_bootstrap(broker_id))).list_topics(TOPIC, timeout=5)
    except KafkaException:  # not authenticated (yet): the credential is not known to this broker
        return False
    topic = md.topics.get(TOPIC)
    return topic is not None and topic.error is None and len(topic.partitions) == PARTITIONS


@pytest.fixture(scope="module")
def app(secure: SecureComposeCluster) -> str:
    """``app``: a SCRAM user created through the cluster, with Write/Read on TOPIC and Read on GROUP."""
    started = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-m", "mafka.cli.main", "configs", "--bootstrap-server", secure.bootstrap,
         "--command-config", str(secure.admin_properties), "--alter",
         "--add-config", f"SCRAM-SHA-512=[iterations=4096,password={APP_PASSWORD}]",
         "--entity-type", "users", "--entity-name", APP],
        capture_output=True, text=True, timeout=60,
    )
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"Completed updating config for user {APP}." in r.stdout, r.stdout

    admin = AdminClient(secure.admin_config())
    topics = [NewTopic(TOPIC, PARTITIONS, 3, config={"min.insync.replicas": "2"}), NewTopic(FORBIDDEN, 1, 3)]
    for future in admin.create_topics(topics).values():
        future.result(60)
    allow = AclPermissionType.ALLOW
    bindings = [
        AclBinding(ResourceType.TOPIC, TOPIC, ResourcePatternType.LITERAL, f"User:{APP}", "*", AclOperation.WRITE, allow),
        AclBinding(ResourceType.TOPIC, TOPIC, ResourcePatternType.LITERAL, f"User:{APP}", "*", AclOperation.READ, allow),
        AclBinding(ResourceType.GROUP, GROUP, ResourcePatternType.LITERAL, f"User:{APP}", "*", AclOperation.READ, allow),
    ]
    for future in admin.create_acls(bindings).values():
        assert future.result(30) is None
    # Every broker learns the credential and the ACLs from ZooKeeper notifications: wait for all three.
    for broker_id in (1, 2, 3):
        wait_until(lambda b=broker_id: app_sees_topic(secure, b), 30,
                   f"broker {broker_id} to accept {APP}'s credential and apply its ACLs", interval=0.2)
    print(f"user {APP}, its topic and ACLs ready on every broker in {time.monotonic() - started:.1f} s")
    return APP


def test_a_scram_client_produces_and_consumes_over_sasl_ssl_and_brokers_replicate_over_it(
        secure: SecureComposeCluster, app: str) -> None:
    written = [f"payment-{n}" for n in range(RECORDS)]
    producer = Producer(app_config(secure, acks="all", **{"message.timeout.ms": 60000}))
    failed: list[str] = []
    acked: list[int] = []
    for i, value in enumerate(written):
        producer.produce(TOPIC, value.encode(), partition=i % PARTITIONS,
                         on_delivery=lambda err, msg: failed.append(str(err)) if err else acked.append(msg.offset()))
    assert producer.flush(90) == 0
    assert not failed, failed[:3]
    assert len(acked) == RECORDS

    consumer = Consumer(app_config(secure, **{"group.id": GROUP, "auto.offset.reset": "earliest",
                                              "enable.auto.commit": False}))
    try:
        consumer.subscribe([TOPIC])
        got: list[str] = []
        deadline = time.monotonic() + 60
        while len(got) < RECORDS and time.monotonic() < deadline:
            m = consumer.poll(0.5)
            if m is None:
                continue
            assert m.error() is None, m.error()
            got.append(m.value().decode())
        assert sorted(got) == sorted(written), f"the group read {len(got)} of {RECORDS}"
        consumer.commit(asynchronous=False)
        committed = consumer.committed([TopicPartition(TOPIC, p) for p in range(PARTITIONS)], timeout=30)
        assert sum(tp.offset for tp in committed) == RECORDS, committed
    finally:
        consumer.close()

    # Replication runs over the inter-broker listener only: full ISRs of an RF-3 topic just written
    # with acks=all mean the brokers authenticated to each other there.
    admin = AdminClient(secure.admin_config())

    def isrs_full() -> bool:
        partitions = admin.list_topics(TOPIC, timeout=10).topics[TOPIC].partitions.values()
        return all(len(p.replicas) == 3 and sorted(p.isrs) == [1, 2, 3] for p in partitions)

    wait_until(isrs_full, 30, "every ISR of the RF-3 topic full", interval=0.5, retry=(KafkaException,))

    # ... and that listener is SASL_SSL: in each broker's config and in its registration.
    for broker_id in (1, 2, 3):  # one broker per DescribeConfigs (the client's rule)
        resource = ConfigResource(ConfigResource.Type.BROKER, str(broker_id))
        configs = {name: entry.value for name, entry in admin.describe_configs([resource])[resource].result(30).items()}
        protocols = dict(pair.split(":") for pair in configs["listener.security.protocol.map"].split(","))
        assert set(protocols.values()) == {"SASL_SSL"}, (resource, protocols)
        assert protocols[configs["inter.broker.listener.name"]] == "SASL_SSL", (resource, configs)
        assert "PLAINTEXT" not in configs["listeners"], (resource, configs["listeners"])
    registrations = zk_broker_registrations(secure)
    assert sorted(registrations) == [1, 2, 3]
    for broker_id, registration in registrations.items():
        assert set(registration["listener_security_protocol_map"].values()) == {"SASL_SSL"}, registration
        assert f"INTERNAL://kafka{broker_id}:19092" in registration["endpoints"], registration

    # Inside the network the INTERNAL listener answers SASL_SSL + SCRAM (the broker's own settings) …
    r = secure.exec("kafka2", "kcat", "-F", "/etc/mafka/secrets/health.conf", "-b", "kafka1:19092", "-L", "-m", "10")
    assert r.returncode == 0, r.stdout + r.stderr
    assert "3 brokers" in r.stdout, r.stdout
    # … and nothing to a plaintext client.
    r = secure.exec("kafka2", "kcat", "-b", "kafka1:19092", "-L", "-m", "3")
    assert r.returncode != 0 and "3 brokers" not in r.stdout, r.stdout + r.stderr


def zk_broker_registrations(cluster: SecureComposeCluster) -> dict[int, dict[str, Any]]:
    """``/brokers/ids/<id>`` of every live broker, read by kazoo inside zk1 (ZooKeeper is not published)."""
    script = ("import json\nfrom kazoo.client import KazooClient\n"
              "zk = KazooClient(hosts='127.0.0.1:2181'); zk.start(timeout=15)\n"
              "print(json.dumps({i: json.loads(zk.get('/brokers/ids/' + i)[0]) for i in zk.get_children('/brokers/ids')}))\n"
              "zk.stop()\n")
    r = cluster.exec("zk1", "python", "-c", script)
    assert r.returncode == 0, r.stderr
    return {int(k): v for k, v in json.loads(r.stdout.strip().splitlines()[-1]).items()}


def plaintext_answer(port: int) -> bytes:
    """What a SASL_SSL port sends back to a plaintext ApiVersions request (until it closes, or 10 s)."""
    got = b""
    with socket.create_connection(("127.0.0.1", port), timeout=10) as sock:
        sock.sendall(encode_request(18, 0, 4242, "plaintext-probe", {}))
        try:
            while chunk := sock.recv(4096):
                got += chunk
        except (TimeoutError, ConnectionResetError):
            pass
    return got


def authentication_errors(cluster: SecureComposeCluster, user: str, password: str) -> list[KafkaError]:
    """The errors a SASL_SSL + SCRAM-SHA-512 client of ``user`` meets in 20 s at most (stops at the first)."""
    errors: list[KafkaError] = []
    producer = Producer(cluster.client_config(user, password, error_cb=errors.append))
    deadline = time.monotonic() + 20
    while not errors and time.monotonic() < deadline:
        producer.poll(0.2)
    with pytest.raises(KafkaException):  # and it never gets metadata
        producer.list_topics(TOPIC, timeout=1)
    return errors


def test_plaintext_wrong_passwords_unknown_users_and_missing_acls_get_nothing(
        secure: SecureComposeCluster, app: str) -> None:
    for port in secure.ports:
        answer = plaintext_answer(port)
        is_kafka_answer = len(answer) >= 8 and struct.unpack(">i", answer[4:8])[0] == 4242
        assert not is_kafka_answer, f"port {port} answered a plaintext ApiVersions request"
        # nothing at all, or a TLS alert record (content type 21) before the close
        assert answer == b"" or answer[0] == 21, answer[:16]

    for user, password in ((APP, "not-" + APP_PASSWORD), (f"nobody-{uuid.uuid4().hex[:6]}", APP_PASSWORD)):
        errors = authentication_errors(secure, user, password)
        assert errors, f"{user} with a wrong password met no error"
        assert errors[0].code() == KafkaError._AUTHENTICATION, errors[0]
        assert "Authentication failed" in errors[0].str(), errors[0].str()

    # app authenticates, but without an ACL on FORBIDDEN its writes there are refused.
    refused: list[KafkaError] = []
    producer = Producer(app_config(secure, acks="all", **{"message.timeout.ms": 20000}))
    producer.produce(FORBIDDEN, b"x", on_delivery=lambda err, msg: refused.append(err))
    assert producer.flush(30) == 0
    assert refused and refused[0] is not None, "app wrote to a topic it has no ACL for"
    assert refused[0].code() == KafkaError.TOPIC_AUTHORIZATION_FAILED, refused[0]
