"""The Java client's TLS/SASL keys in the tools' properties files reach mafka.client's connections."""

from __future__ import annotations

import argparse
import datetime as dt
import ssl
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from mafka.cli import console_consumer, console_producer
from mafka.cli.clients import admin_config, client_settings
from mafka.cli.main import main
from mafka.client import kernel as kernel_module
from mafka.client.config import parse_config
from mafka.client.java_security import translate_java_security
from mafka.client.security import ClientSecurity, client_security
from mafka.errors import ConfigError
from tests.unit.cli.fake_wire import WireFake

SCRAM_JAAS = ('org.apache.kafka.common.security.scram.ScramLoginModule required '
              'username="alice" password="alice-secret";')
PLAIN_JAAS = 'org.apache.kafka.common.security.plain.PlainLoginModule required username="bob" password="b0b";'


@pytest.fixture(scope="module")
def ca_pem(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A self-signed CA certificate (PEM) with its key in the same file: a trust store and a key store."""
    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "Translation Test CA")])
    now = dt.datetime.now(dt.UTC)
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name).public_key(key.public_key())
            .serial_number(x509.random_serial_number()).not_valid_before(now - dt.timedelta(hours=1))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    path = tmp_path_factory.mktemp("pem") / "store.pem"
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption())
                     + cert.public_bytes(serialization.Encoding.PEM))
    return path


def java_sasl_ssl(ca: Path) -> dict[str, str]:
    return {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.jaas.config": SCRAM_JAAS,
        "ssl.truststore.location": str(ca),
        "ssl.truststore.type": "PEM",
        "ssl.endpoint.identification.algorithm": "",
    }


# -- translate_java_security --------------------------------------------------------------------


def test_translates_a_java_sasl_ssl_configuration(ca_pem: Path) -> None:
    out = translate_java_security({**java_sasl_ssl(ca_pem), "acks": "all"})
    assert out == {
        "security.protocol": "SASL_SSL",
        "sasl.mechanism": "SCRAM-SHA-512",
        "sasl.username": "alice",
        "sasl.password": "alice-secret",
        "ssl.ca.location": str(ca_pem),
        "ssl.endpoint.identification.algorithm": "none",
        "acks": "all",
    }


def test_translated_keys_build_the_clients_security(ca_pem: Path) -> None:
    conf = {"bootstrap.servers": "b:9093", **client_settings(java_sasl_ssl(ca_pem), "admin")}
    security = client_security(parse_config("admin", conf))
    assert security is not None and security.ssl_context is not None
    assert (security.protocol, security.mechanism, security.username, security.password) == \
        ("sasl_ssl", "SCRAM-SHA-512", "alice", "alice-secret")
    assert security.ssl_context.check_hostname is False  # Java's empty algorithm
    assert security.ssl_context.verify_mode == ssl.CERT_REQUIRED


def test_plain_login_module() -> None:
    out = translate_java_security({"sasl.mechanism": "PLAIN", "sasl.jaas.config": PLAIN_JAAS})
    assert (out["sasl.username"], out["sasl.password"]) == ("bob", "b0b") and "sasl.jaas.config" not in out


def test_keystore_becomes_the_client_certificate(ca_pem: Path) -> None:
    out = translate_java_security({"ssl.keystore.location": str(ca_pem), "ssl.keystore.type": "PEM",
                                   "ssl.key.password": "kp"})
    assert out == {"ssl.certificate.location": str(ca_pem), "ssl.key.password": "kp"}
    # The key is read from the same file: the context loads it.
    security = client_security(parse_config("admin", {"bootstrap.servers": "b:1", "security.protocol": "ssl",
                                                      **{k: v for k, v in out.items() if k != "ssl.key.password"}}))
    assert security is not None and security.ssl_context is not None


def test_https_algorithm_and_unset_store_type_pass(ca_pem: Path) -> None:
    out = translate_java_security({"ssl.truststore.location": str(ca_pem),
                                   "ssl.endpoint.identification.algorithm": "https"})
    assert out == {"ssl.ca.location": str(ca_pem), "ssl.endpoint.identification.algorithm": "https"}


def test_keys_in_mafka_spelling_win() -> None:
    out = translate_java_security({"sasl.jaas.config": PLAIN_JAAS, "sasl.username": "carol",
                                   "ssl.truststore.location": "/java.pem", "ssl.ca.location": "/mine.pem"})
    assert out == {"sasl.username": "carol", "sasl.password": "b0b", "ssl.ca.location": "/mine.pem"}


@pytest.mark.parametrize(("props", "key", "text"), [
    ({"ssl.truststore.location": "/t.jks"}, None, None),  # unset type: PEM (as the broker's side)
    ({"ssl.truststore.location": "/t.jks", "ssl.truststore.type": "JKS"}, "ssl.truststore.type",
     "only PEM trust stores"),
    ({"ssl.keystore.location": "/k.p12", "ssl.keystore.type": "PKCS12"}, "ssl.keystore.type",
     "only PEM key stores"),
    ({"ssl.truststore.location": "/t.pem", "ssl.truststore.password": "x"}, "ssl.truststore.password",
     "SSL trust store password cannot be specified with PEM format"),
    ({"ssl.keystore.location": "/k.pem", "ssl.keystore.password": "x"}, "ssl.keystore.password",
     "only key password may be specified"),
    ({"ssl.truststore.certificates": "-----BEGIN CERTIFICATE-----"}, "ssl.truststore.certificates",
     "put the PEM text in a file"),
    ({"ssl.keystore.key": "-----BEGIN PRIVATE KEY-----"}, "ssl.keystore.key", "ssl.keystore.key is not supported"),
    ({"sasl.jaas.config": 'com.sun.security.auth.module.Krb5LoginModule required useKeyTab=true;'},
     "sasl.jaas.config", "Krb5LoginModule is not supported"),
    ({"sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required username="a";'},
     "sasl.jaas.config", "does not specify 'password'"),
    ({"sasl.jaas.config": 'org.apache.kafka.common.security.plain.PlainLoginModule required '
                          'username="a" password="hunter2"'}, "sasl.jaas.config", "not terminated by semi-colon"),
])
def test_refusals(props: dict[str, str], key: str | None, text: str | None) -> None:
    if key is None:
        translate_java_security(props)
        return
    with pytest.raises(ConfigError) as info:
        translate_java_security(props)
    assert info.value.key == key and text is not None and text in str(info.value)
    assert "hunter2" not in str(info.value)


def test_client_settings_no_longer_warns_about_security_keys(ca_pem: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    out = client_settings({**java_sasl_ssl(ca_pem), "ssl.enabled.protocols": "TLSv1.3"}, "producer")
    assert out["sasl.username"] == "alice" and "ssl.enabled.protocols" not in out
    err = capsys.readouterr().err
    assert "'ssl.enabled.protocols' was supplied but isn't a known config" in err
    assert "sasl.jaas.config" not in err and "truststore" not in err


# -- the tools' files ---------------------------------------------------------------------------


def write_properties(path: Path, props: dict[str, str]) -> Path:
    # Java properties: '=' in a value needs no escape, but ':' and '=' in keys would; none here.
    path.write_text("".join(f"{k}={v}\n" for k, v in props.items()), encoding="latin-1")
    return path


def test_admin_config_reads_the_command_config(ca_pem: Path, tmp_path: Path) -> None:
    file = write_properties(tmp_path / "admin.properties",
                            {**java_sasl_ssl(ca_pem), "bootstrap.servers": "ignored:1", "client.id": "file"})
    conf = admin_config("b:9093", "mafka-topics", 5.0, str(file))
    assert conf["bootstrap.servers"] == "b:9093" and conf["client.id"] == "mafka-topics"
    assert conf["sasl.username"] == "alice" and conf["ssl.ca.location"] == str(ca_pem)
    assert conf["request.timeout.ms"] == 5000
    assert admin_config("b:9093", "x", 5.0) == admin_config("b:9093", "x", 5.0, None)


def test_admin_config_missing_file_is_a_config_error(tmp_path: Path) -> None:
    with pytest.raises(ConfigError, match="Failed to load .*nope.properties"):
        admin_config("b:1", "x", 1.0, str(tmp_path / "nope.properties"))


def console_args(module: Any, *argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    module.add_parser(parser.add_subparsers(dest="command"))
    name = "console-producer" if module is console_producer else "console-consumer"
    return parser.parse_args([name, "--bootstrap-server", "b:9093", "--topic", "t", *argv])


def test_console_clients_take_security_from_their_config_files(ca_pem: Path, tmp_path: Path) -> None:
    file = str(write_properties(tmp_path / "client.properties", java_sasl_ssl(ca_pem)))
    consumer = console_consumer.consumer_config(console_args(console_consumer, "--consumer.config", file))
    producer = console_producer.producer_config(console_args(console_producer, "--producer.config", file), {})
    for conf in (consumer, producer):
        assert conf["security.protocol"] == "SASL_SSL" and conf["sasl.mechanism"] == "SCRAM-SHA-512"
        assert (conf["sasl.username"], conf["sasl.password"]) == ("alice", "alice-secret")
        assert conf["ssl.ca.location"] == str(ca_pem)
    # --producer-property keys go through the same translation.
    props = {"sasl.jaas.config": PLAIN_JAAS}
    producer = console_producer.producer_config(console_args(console_producer), props)
    assert producer["sasl.username"] == "bob"


class _Cluster(WireFake):
    """One broker answering Metadata with one topic."""

    def __init__(self) -> None:
        super().__init__({1: ("b1", 9093)})

    def _Metadata(self, req: Any, broker: int) -> dict[str, Any]:
        return {"brokers": [{"node_id": 1, "host": "b1", "port": 9093, "rack": None}],
                "cluster_id": "c", "controller_id": 1,
                "topics": [{"error_code": 0, "name": "orders", "is_internal": False, "partitions": []}]}


class _Recorder:
    """Stands in for BrokerConnection: records the security of each connection, then the fake answers."""

    def __init__(self, inner: Any) -> None:
        self.inner = inner
        self.securities: list[ClientSecurity | None] = []

    async def open(self, node_id: int, host: str, port: int, client_id: str | None, timeout: float,
                   security: ClientSecurity | None = None) -> Any:
        self.securities.append(security)
        return await self.inner.open(node_id, host, port, client_id, timeout)


def test_topics_command_config_reaches_every_connection(ca_pem: Path, tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch,
                                                        capsys: pytest.CaptureFixture[str]) -> None:
    cluster = _Cluster()
    cluster.install(monkeypatch)
    recorder = _Recorder(kernel_module.BrokerConnection)
    monkeypatch.setattr(kernel_module, "BrokerConnection", recorder)
    file = write_properties(tmp_path / "admin.properties", java_sasl_ssl(ca_pem))
    assert main(["topics", "--bootstrap-server", "b1:9093", "--command-config", str(file), "--list"]) == 0
    assert capsys.readouterr().out == "orders\n"
    assert recorder.securities
    for security in recorder.securities:
        assert security is not None and security.ssl_context is not None
        assert (security.protocol, security.mechanism, security.username, security.password) == \
            ("sasl_ssl", "SCRAM-SHA-512", "alice", "alice-secret")


def test_topics_without_command_config_is_plaintext(monkeypatch: pytest.MonkeyPatch,
                                                    capsys: pytest.CaptureFixture[str]) -> None:
    cluster = _Cluster()
    cluster.install(monkeypatch)
    recorder = _Recorder(kernel_module.BrokerConnection)
    monkeypatch.setattr(kernel_module, "BrokerConnection", recorder)
    assert main(["topics", "--bootstrap-server", "b1:9093", "--list"]) == 0
    assert recorder.securities and set(recorder.securities) == {None}


def test_topics_bad_command_config_is_reported(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    file = write_properties(tmp_path / "admin.properties",
                            {"security.protocol": "SASL_SSL", "sasl.mechanism": "PLAIN",
                             "sasl.jaas.config": "com.sun.security.auth.module.Krb5LoginModule required;"})
    assert main(["topics", "--bootstrap-server", "b1:9093", "--command-config", str(file), "--list"]) == 1
    out, err = capsys.readouterr()
    assert "Krb5LoginModule is not supported" in out + err
