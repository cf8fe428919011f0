"""TLS on a real 3-broker cluster: SSL and SASL_SSL listeners, inter-broker SASL_SSL, real clients, attacks.

Certificates are generated for the module (``tests.harness.certs``).  The
brokers listen on PLAINTEXT (for the harness), SSL (client certificates
required; principal mapping rules that take the CN of ``OU=test``
certificates only) and SASL_SSL (no client certificates; PLAIN and SCRAM),
and replicate over SASL_SSL with PLAIN.
"""

from __future__ import annotations

import socket
import ssl
import subprocess
import sys
import tempfile
from pathlib import Path

import pytest

from tests.harness import client_round_trips as clients
from tests.harness.certs import generate_pki
from tests.harness.cluster import ClusterSpec

pytestmark = pytest.mark.integration

ALICE = "CN=alice,OU=test,O=Mafka"
OUTSIDER = "CN=eve,OU=elsewhere,O=Mafka"  # trusted, but no mapping rule matches its subject
PKI = generate_pki(Path(tempfile.mkdtemp(prefix="mafka-tls-test-")), clients=(ALICE, OUTSIDER))
JAAS = (
    'org.apache.kafka.common.security.plain.PlainLoginModule required username="broker" '
    'password="broker-secret" user_broker="broker-secret" user_alice="alice-plain";'
)
CLUSTER = ClusterSpec(
    settings={
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(PKI.broker),
        "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(PKI.ca),
        "listener.name.ssl.ssl.client.auth": "required",
        "ssl.principal.mapping.rules": "RULE:^CN=([^,]*),OU=test,.*$/$1/L",
        "sasl.enabled.mechanisms": "PLAIN,SCRAM-SHA-512",
        "sasl.mechanism.inter.broker.protocol": "PLAIN",
        "inter.broker.listener.name": "SASL_SSL",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": JAAS,
    },
    listeners=("SSL", "SASL_SSL"),
    shared=False,
)
SCRAM_PASSWORD = "alice-scram"


def addresses(cluster, listener: str) -> list[tuple[str, int]]:
    return [(b["host"], b["listeners"][listener]) for b in cluster.info["brokers"]]


@pytest.fixture(scope="module")
def scram_user(cluster) -> str:
    subprocess.run(
        [sys.executable, "-m", "mafka.cli.main", "configs", "--bootstrap-server", cluster.bootstrap,
         "--alter", "--add-config", f"SCRAM-SHA-512=[iterations=4096,password={SCRAM_PASSWORD}]",
         "--entity-type", "users", "--entity-name", "alice"],
        check=True, capture_output=True, timeout=60,
    )
    return "alice"


def tls_handshake(address, *, cert: Path | None, ca: Path = PKI.ca) -> ssl.SSLSocket:
    """A TLS connection that has sent one ApiVersions (so the server's verdict on the certificate is known)."""
    from mafka.wire.codec import encode_request

    ctx = ssl.create_default_context(cafile=str(ca))
    if cert is not None:
        ctx.load_cert_chain(str(cert))
    sock = ctx.wrap_socket(socket.create_connection(address, timeout=10), server_hostname=address[0])
    sock.sendall(encode_request(18, 2, 1, "probe", {}))
    return sock


def answered(sock: ssl.SSLSocket) -> bool:
    """True if the broker answered the ApiVersions; False if it closed the connection."""
    sock.settimeout(10)
    try:
        return len(sock.recv(4)) == 4
    except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
        return False
    finally:
        sock.close()


# ---------------------------------------------------------------------- client certificates


def test_a_trusted_client_certificate_is_served_on_the_ssl_listener(cluster):
    assert answered(tls_handshake(addresses(cluster, "SSL")[0], cert=PKI.client(ALICE)))


@pytest.mark.parametrize("which", ["none", "expired", "untrusted", "unmapped"])
def test_the_ssl_listener_refuses_bad_or_missing_client_certificates(cluster, which):
    cert = {"none": None, "expired": PKI.expired_client, "untrusted": PKI.untrusted_client,
            "unmapped": PKI.client(OUTSIDER)}[which]
    try:
        sock = tls_handshake(addresses(cluster, "SSL")[1], cert=cert)
    except (ssl.SSLError, ConnectionResetError, BrokenPipeError):
        return  # refused during the handshake
    assert not answered(sock), f"a client with {which} certificate was served"


def test_a_plaintext_client_or_garbage_on_a_tls_port_is_closed_and_others_are_served(cluster):
    from mafka.wire.codec import encode_request

    address = addresses(cluster, "SASL_SSL")[0]
    for junk in (encode_request(18, 2, 1, "plain", {}), b"\x16\x03\x01" + b"\xff" * 200):
        sock = socket.create_connection(address, timeout=10)
        try:
            sock.sendall(junk)
            sock.settimeout(10)
            data = b""
            try:
                while True:
                    chunk = sock.recv(4096)
                    if not chunk:
                        break
                    data += chunk
            except ConnectionResetError:
                pass
            assert not data.startswith(b"\x00\x00"), "a Kafka response came back in the clear"
        finally:
            sock.close()
    assert answered(tls_handshake(addresses(cluster, "SSL")[0], cert=PKI.client(ALICE)))


def test_the_broker_certificate_is_checked_by_clients(cluster):
    with pytest.raises(ssl.SSLCertVerificationError):
        tls_handshake(addresses(cluster, "SASL_SSL")[0], cert=None, ca=PKI.untrusted_ca)


# ---------------------------------------------------------------------- real clients


def alice_over_ssl() -> dict:
    """alice on SSL with her client certificate, for confluent-kafka and mafka.client."""
    return {"security.protocol": "SSL", "ssl.ca.location": str(PKI.ca),
            "ssl.certificate.location": str(PKI.client(ALICE)), "ssl.key.location": str(PKI.client(ALICE))}


def alice_over_sasl_ssl(mechanism: str) -> dict:
    """alice on SASL_SSL with *mechanism* (no client certificate), for confluent-kafka and mafka.client."""
    return {"security.protocol": "SASL_SSL", "ssl.ca.location": str(PKI.ca), "sasl.mechanism": mechanism,
            "sasl.username": "alice", "sasl.password": "alice-plain" if mechanism == "PLAIN" else SCRAM_PASSWORD}


def test_confluent_kafka_over_ssl_with_a_client_certificate(cluster):
    # large records: a fetch response of several MB goes through the read-instead-of-sendfile path
    topic = clients.new_topic(cluster, "tls")
    clients.produce_consume_commit(cluster.bootstrap_for("SSL"), topic, alice_over_ssl(), count=60, size=200_000)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_confluent_kafka_over_sasl_ssl(cluster, scram_user, mechanism):
    topic = clients.new_topic(cluster, "tls")
    clients.produce_consume_commit(cluster.bootstrap_for("SASL_SSL"), topic, alice_over_sasl_ssl(mechanism),
                                   count=200, size=100)


def test_mafka_client_over_sasl_ssl_with_scram_and_over_ssl_with_a_certificate(cluster, scram_user):
    topic = clients.new_topic(cluster, "tls")
    clients.produce_consume_commit(cluster.bootstrap_for("SASL_SSL"), topic, alice_over_sasl_ssl("SCRAM-SHA-512"),
                                   count=200, size=100, client="mafka.client")
    topic = clients.new_topic(cluster, "tls")
    clients.produce_consume_commit(cluster.bootstrap_for("SSL"), topic, alice_over_ssl(), count=30, size=300_000,
                                   client="mafka.client")


def test_the_cli_takes_kafkas_command_config_for_sasl_ssl(cluster, scram_user, tmp_path):
    topic = clients.new_topic(cluster, "tls")
    config = tmp_path / "client.properties"
    config.write_text(
        "security.protocol=SASL_SSL\n"
        "sasl.mechanism=SCRAM-SHA-512\n"
        'sasl.jaas.config=org.apache.kafka.common.security.scram.ScramLoginModule required '
        f'username="alice" password="{SCRAM_PASSWORD}";\n'
        "ssl.truststore.type=PEM\n"
        f"ssl.truststore.location={PKI.ca}\n"
    )
    out = subprocess.run(
        [sys.executable, "-m", "mafka.cli.main", "topics", "--bootstrap-server", cluster.bootstrap_for("SASL_SSL"),
         "--command-config", str(config), "--list"],
        capture_output=True, text=True, timeout=60,
    )
    assert out.returncode == 0, out.stderr
    assert topic in out.stdout.split()
    config.write_text(config.read_text().replace(SCRAM_PASSWORD, "wrong"))
    out = subprocess.run(
        [sys.executable, "-m", "mafka.cli.main", "topics", "--bootstrap-server", cluster.bootstrap_for("SASL_SSL"),
         "--command-config", str(config), "--list"],
        capture_output=True, text=True, timeout=90,
    )
    assert out.returncode != 0
    assert "Authentication failed" in out.stderr, out.stderr


def test_kafka_python_over_sasl_ssl_with_scram(cluster, scram_user):
    conf = {"bootstrap_servers": cluster.bootstrap_for("SASL_SSL"), "security_protocol": "SASL_SSL",
            "ssl_cafile": str(PKI.ca), "sasl_mechanism": "SCRAM-SHA-512", "sasl_plain_username": "alice",
            "sasl_plain_password": SCRAM_PASSWORD}
    clients.kafka_python_round_trip(conf, clients.new_topic(cluster, "tls"))


def test_aiokafka_over_ssl_with_a_client_certificate(cluster):
    from aiokafka.helpers import create_ssl_context

    ctx = create_ssl_context(cafile=str(PKI.ca), certfile=str(PKI.client(ALICE)))
    conf = {"bootstrap_servers": cluster.bootstrap_for("SSL"), "security_protocol": "SSL", "ssl_context": ctx}
    clients.aiokafka_round_trip(conf, clients.new_topic(cluster, "tls"))


def test_aiokafka_over_sasl_ssl_with_scram(cluster, scram_user):
    from aiokafka.helpers import create_ssl_context

    conf = {"bootstrap_servers": cluster.bootstrap_for("SASL_SSL"), "security_protocol": "SASL_SSL",
            "ssl_context": create_ssl_context(cafile=str(PKI.ca)), "sasl_mechanism": "SCRAM-SHA-512",
            "sasl_plain_username": "alice", "sasl_plain_password": SCRAM_PASSWORD}
    clients.aiokafka_round_trip(conf, clients.new_topic(cluster, "tls"))


# ---------------------------------------------------------------------- inter-broker SASL_SSL


def test_replication_runs_over_sasl_ssl_between_brokers(cluster):
    """An RF 3 topic written with acks=all: the followers fetched over SASL_SSL (the ISR stays whole)."""
    topic = clients.new_topic(cluster, "tls", partitions=2, rf=3)
    clients.replicate_to_full_isr(cluster.bootstrap, topic)


def test_spark_writes_and_reads_over_sasl_ssl_with_spark_kafka_options(cluster, scram_user):
    """format("mafka") takes spark-sql-kafka's Java-client security options (kafka.sasl.jaas.config …)."""
    import os

    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    from tests.harness.spark import TEST_SESSION_CONF

    security = {
        "kafka.bootstrap.servers": cluster.bootstrap_for("SASL_SSL"),
        "kafka.security.protocol": "SASL_SSL",
        "kafka.sasl.mechanism": "SCRAM-SHA-512",
        "kafka.sasl.jaas.config": 'org.apache.kafka.common.security.scram.ScramLoginModule required '
                                  f'username="alice" password="{SCRAM_PASSWORD}";',
        "kafka.ssl.truststore.type": "PEM",
        "kafka.ssl.truststore.location": str(PKI.ca),
    }
    topic = clients.new_topic(cluster, "tls-spark")
    spark = (SparkSession.builder.master("local[2]").appName("mafka-security-test")
             .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
             .config(map=TEST_SESSION_CONF).getOrCreate())
    try:
        rows = spark.createDataFrame([(f"k{i}", f"v{i}") for i in range(200)], "key string, value string")
        rows.write.format("mafka").mode("append").options(**security).option("topic", topic).save()
        back = spark.read.format("mafka").options(**security).option("subscribe", topic).load()
        got = sorted((r.key.decode(), r.value.decode()) for r in back.collect())
    finally:
        spark.stop()
    assert got == sorted((f"k{i}", f"v{i}") for i in range(200))
