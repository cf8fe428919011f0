"""KIP-368 re-authentication on a real broker: sessions end after ``connections.max.reauth.ms``.

A SASL_PLAINTEXT listener with SCRAM-SHA-512 and a 2 s session lifetime:
the broker tells each client its ``session_lifetime_ms``, closes a connection
whose session ran out without re-authenticating, and clients that do
re-authenticate (librdkafka, mafka.client) keep their connections working
across many lifetimes without an error.
"""

from __future__ import annotations

import subprocess
import sys
import time
import uuid

import pytest

from tests.harness.cluster import ClusterSpec
from tests.harness.raw_connection import Raw

pytestmark = pytest.mark.integration

LIFETIME_MS = 2000
CLUSTER = ClusterSpec(
    brokers=1,
    settings={"sasl.enabled.mechanisms": "SCRAM-SHA-512", "connections.max.reauth.ms": str(LIFETIME_MS),
              "offsets.topic.replication.factor": "1"},
    listeners=("SASL_PLAINTEXT",),
)
PASSWORD = "reauth-secret"


@pytest.fixture(scope="module")
def user(cluster) -> str:
    name = f"reauth-{uuid.uuid4().hex[:6]}"
    subprocess.run(
        [sys.executable, "-m", "mafka.cli.main", "configs", "--bootstrap-server", cluster.bootstrap, "--alter",
         "--add-config", f"SCRAM-SHA-512=[iterations=4096,password={PASSWORD}]", "--entity-type", "users",
         "--entity-name", name],
        check=True, capture_output=True, timeout=60,
    )
    return name


def sasl_address(cluster) -> tuple[str, int]:
    b = cluster.info["brokers"][0]
    return b["host"], b["listeners"]["SASL_PLAINTEXT"]


def conf(cluster, user: str) -> dict:
    return {"bootstrap.servers": cluster.bootstrap_for("SASL_PLAINTEXT"), "security.protocol": "SASL_PLAINTEXT",
            "sasl.mechanism": "SCRAM-SHA-512", "sasl.username": user, "sasl.password": PASSWORD}


def test_the_broker_closes_a_connection_whose_session_expired(cluster, user):
    raw = Raw(sasl_address(cluster))
    try:
        done = raw.authenticate("SCRAM-SHA-512", user, PASSWORD)
        assert done.error_code == 0 and done.session_lifetime_ms == LIFETIME_MS
        assert raw.call(3, 4, {"topics": None, "allow_auto_topic_creation": False}).brokers  # within the session
        time.sleep(LIFETIME_MS / 1000 + 0.5)
        raw.send(3, 4, {"topics": None, "allow_auto_topic_creation": False})
        assert raw.closed_by_peer(), "a request after the session's end was served"
    finally:
        raw.close()


def test_reauthenticating_on_the_same_connection_extends_the_session(cluster, user):
    raw = Raw(sasl_address(cluster))
    try:
        assert raw.authenticate("SCRAM-SHA-512", user, PASSWORD).error_code == 0
        for _ in range(3):
            time.sleep(LIFETIME_MS / 1000 * 0.6)
            again = raw.authenticate("SCRAM-SHA-512", user, PASSWORD)
            assert again.error_code == 0 and again.session_lifetime_ms == LIFETIME_MS
            assert raw.call(3, 4, {"topics": None, "allow_auto_topic_creation": False}).brokers
    finally:
        raw.close()


@pytest.mark.parametrize("client", ["confluent_kafka", "mafka.client"])
def test_clients_produce_across_several_session_lifetimes_without_errors(cluster, user, client):
    import importlib

    producer_class = importlib.import_module(client).Producer
    topic = f"reauth-{uuid.uuid4().hex[:6]}"
    errors: list = []
    delivered: list = []
    producer = producer_class({**conf(cluster, user), "acks": "all", "error_cb": errors.append,
                               "allow.auto.create.topics": True})
    end = time.monotonic() + 4 * LIFETIME_MS / 1000
    sent = 0
    while time.monotonic() < end:
        producer.produce(topic, b"m%d" % sent, on_delivery=lambda err, msg: delivered.append(err))
        sent += 1
        producer.poll(0.05)
    assert producer.flush(30) == 0
    assert len(delivered) == sent and not any(delivered), [e for e in delivered if e][:3]
    assert not errors, errors
