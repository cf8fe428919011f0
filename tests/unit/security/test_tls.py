"""mafka.security.tls: Kafka's ssl.* configs, and real TLS handshakes between its server and
client creators over Twisted's in-memory transport (twisted.test.iosim)."""

from __future__ import annotations

import datetime as dt
from dataclasses import dataclass, field
from pathlib import Path

import pytest
import service_identity
from cryptography import x509
from cryptography.hazmat.primitives import hashes
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID
from OpenSSL import SSL
from twisted.internet.interfaces import IHandshakeListener
from twisted.internet.protocol import Factory, Protocol
from twisted.internet.task import Clock
from twisted.protocols.tls import TLSMemoryBIOFactory, TLSMemoryBIOProtocol
from twisted.python.failure import Failure
from twisted.test.iosim import connectedServerAndClient
from zope.interface import implementer

from mafka.errors import ConfigError
from mafka.security.tls import (
    IANA_TO_OPENSSL_CIPHERS,
    TLS13_CIPHER_SUITES,
    TlsSettings,
    certificate_subject,
    client_connection_creator,
    peer_certificate_subject,
    server_context_factory,
)
from tests.harness.certs import Pki, generate_pki

ALICE = "CN=alice,OU=test,O=Mafka"
PASSWORD = "s3cret pass"


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    return generate_pki(tmp_path_factory.mktemp("pki"), hosts=["kafka1", "10.1.2.3"],
                        clients=[ALICE], key_password=PASSWORD)


def settings(config: dict[str, str], listener: str | None = None) -> TlsSettings:
    return TlsSettings.from_config(config.get, listener=listener)


def server_config(pki: Pki, **extra: str) -> dict[str, str]:
    return {"ssl.keystore.location": str(pki.broker), "ssl.truststore.location": str(pki.ca),
            **extra}


def client_config(pki: Pki, keystore: Path | None = None, **extra: str) -> dict[str, str]:
    config = {"ssl.truststore.location": str(pki.ca), **extra}
    if keystore is not None:
        config["ssl.keystore.location"] = str(keystore)
    return config


# --------------------------------------------------------------------------- handshakes


@implementer(IHandshakeListener)
class Peer(Protocol):
    """Records what one side of a connection saw."""

    def __init__(self) -> None:
        self.handshake_done = False
        self.subject: str | None = None
        self.received = b""
        self.lost: Failure | None = None

    def handshakeCompleted(self) -> None:  # noqa: N802 - Twisted's interface
        self.handshake_done = True
        self.subject = peer_certificate_subject(self.transport)

    def dataReceived(self, data: bytes) -> None:  # noqa: N802 - Twisted's interface
        self.received += data

    def connectionLost(self, reason: Failure = Failure(ConnectionError())) -> None:  # noqa: N802, B008
        self.lost = reason


class OneProtocol(Factory):
    def __init__(self, protocol: Protocol) -> None:
        self.protocol_instance = protocol

    def buildProtocol(self, addr: object) -> Protocol:  # noqa: N802 - Twisted's interface
        self.protocol_instance.factory = self
        return self.protocol_instance


@dataclass
class Outcome:
    server: Peer
    client: Peer
    server_tls: TLSMemoryBIOProtocol
    client_tls: TLSMemoryBIOProtocol
    log: list[str] = field(default_factory=list)

    @property
    def connected(self) -> bool:
        """Both sides finished the handshake and application data flowed both ways."""
        return (self.server.handshake_done and self.client.handshake_done
                and self.server.received == b"ping" and self.client.received == b"pong"
                and self.server.lost is None and self.client.lost is None)

    @property
    def refused(self) -> bool:
        """The server never accepted the connection: no handshake, no data, and it is closed."""
        return (not self.server.handshake_done and self.server.received == b""
                and self.server_tls.disconnected and self.client_tls.disconnected)

    def version(self) -> str:
        return self.server_tls.getHandle().get_protocol_version_name()

    def cipher(self) -> str | None:
        return self.server_tls.getHandle().get_cipher_name()


def handshake(server: TlsSettings, client: TlsSettings, hostname: str = "localhost") -> Outcome:
    """Connects a TLS client to a TLS server in memory, then sends ping and pong."""
    server_peer, client_peer = Peer(), Peer()
    clock = Clock()
    server_factory = TLSMemoryBIOFactory(server_context_factory(server), False,
                                         OneProtocol(server_peer), clock=clock)
    client_factory = TLSMemoryBIOFactory(client_connection_creator(client, hostname), True,
                                         OneProtocol(client_peer), clock=clock)
    client_tls, server_tls, pump = connectedServerAndClient(
        lambda: server_factory.buildProtocol(None), lambda: client_factory.buildProtocol(None),
        greet=False, clock=clock)
    pump.flush()
    if client_peer.handshake_done and client_peer.lost is None:
        client_peer.transport.write(b"ping")
        pump.flush()
    if server_peer.handshake_done and server_peer.received == b"ping":
        server_peer.transport.write(b"pong")
        pump.flush()
    for _ in range(5):  # let alerts and closes travel
        pump.flush()
        clock.advance(1)
    return Outcome(server_peer, client_peer, server_tls, client_tls)


def test_server_only_tls_connects_and_the_server_sees_no_client_certificate(pki: Pki) -> None:
    outcome = handshake(settings(server_config(pki)), settings(client_config(pki)))
    assert outcome.connected
    assert outcome.server.subject is None
    # The client sees the broker's certificate.
    assert outcome.client.subject == "CN=mafka-broker,OU=test,O=Mafka"
    assert outcome.version() == "TLSv1.3"


def test_a_client_certificate_is_not_asked_for_with_client_auth_none(pki: Pki) -> None:
    outcome = handshake(settings(server_config(pki)), settings(client_config(pki, pki.client(ALICE))))
    assert outcome.connected
    assert outcome.server.subject is None


def test_required_client_auth_accepts_a_trusted_client_and_reports_its_dn(pki: Pki) -> None:
    outcome = handshake(settings(server_config(pki, **{"ssl.client.auth": "required"})),
                        settings(client_config(pki, pki.client(ALICE))))
    assert outcome.connected
    assert outcome.server.subject == ALICE


@pytest.mark.parametrize("protocols", ["TLSv1.3", "TLSv1.2"])
@pytest.mark.parametrize("keystore", ["none", "untrusted", "expired"])
def test_required_client_auth_refuses_a_client_without_a_good_certificate(
        pki: Pki, keystore: str, protocols: str) -> None:
    chosen = {"none": None, "untrusted": pki.untrusted_client, "expired": pki.expired_client}[keystore]
    outcome = handshake(
        settings(server_config(pki, **{"ssl.client.auth": "required",
                                       "ssl.enabled.protocols": protocols})),
        settings(client_config(pki, chosen)))
    assert outcome.refused
    assert outcome.server.lost is not None and outcome.server.lost.check(SSL.Error)
    assert outcome.client.lost is not None
    assert outcome.client.received == b""


def test_requested_client_auth_accepts_clients_with_and_without_certificates(pki: Pki) -> None:
    server = settings(server_config(pki, **{"ssl.client.auth": "requested"}))
    with_certificate = handshake(server, settings(client_config(pki, pki.client(ALICE))))
    assert with_certificate.connected
    assert with_certificate.server.subject == ALICE
    without = handshake(server, settings(client_config(pki)))
    assert without.connected
    assert without.server.subject is None


def test_requested_client_auth_still_refuses_a_certificate_that_does_not_verify(pki: Pki) -> None:
    outcome = handshake(settings(server_config(pki, **{"ssl.client.auth": "requested"})),
                        settings(client_config(pki, pki.untrusted_client)))
    assert outcome.refused


@pytest.mark.parametrize("hostname", ["localhost", "127.0.0.1", "kafka1", "10.1.2.3"])
def test_hostname_verification_accepts_the_names_in_the_certificate(pki: Pki, hostname: str) -> None:
    assert handshake(settings(server_config(pki)), settings(client_config(pki)), hostname).connected


@pytest.mark.parametrize("hostname", ["kafka2", "10.9.9.9", "mafka-broker"])
def test_hostname_verification_refuses_other_names(pki: Pki, hostname: str) -> None:
    outcome = handshake(settings(server_config(pki)), settings(client_config(pki)), hostname)
    assert not outcome.client.handshake_done
    assert outcome.server.received == b""
    assert outcome.client.lost is not None
    # The reason names the host name mismatch, not just "certificate verify failed".
    assert outcome.client.lost.check(service_identity.VerificationError)


def test_without_endpoint_identification_any_name_works_but_the_chain_is_still_verified(pki: Pki) -> None:
    no_check = client_config(pki, **{"ssl.endpoint.identification.algorithm": ""})
    assert handshake(settings(server_config(pki)), settings(no_check), "kafka2").connected
    # A client trusting only the untrusted CA still refuses the broker's certificate.
    other_trust = {**no_check, "ssl.truststore.location": str(pki.untrusted_ca)}
    outcome = handshake(settings(server_config(pki)), settings(other_trust), "kafka2")
    assert not outcome.client.handshake_done
    assert outcome.server.received == b""


def test_a_client_trusting_another_ca_refuses_the_server(pki: Pki) -> None:
    outcome = handshake(settings(server_config(pki)),
                        settings({"ssl.truststore.location": str(pki.untrusted_ca)}))
    assert not outcome.client.handshake_done and not outcome.server.handshake_done


def test_an_encrypted_key_store_works_with_its_password(pki: Pki) -> None:
    assert pki.encrypted_broker is not None and pki.encrypted_clients is not None
    server = settings({"ssl.keystore.location": str(pki.encrypted_broker),
                       "ssl.key.password": PASSWORD, "ssl.truststore.location": str(pki.ca),
                       "ssl.client.auth": "required"})
    client = settings(client_config(pki, pki.encrypted_clients[ALICE],
                                    **{"ssl.key.password": PASSWORD}))
    outcome = handshake(server, client)
    assert outcome.connected
    assert outcome.server.subject == ALICE


def test_an_encrypted_key_store_with_a_wrong_or_missing_password_is_refused(pki: Pki) -> None:
    assert pki.encrypted_broker is not None
    wrong = {"ssl.keystore.location": str(pki.encrypted_broker), "ssl.key.password": "nope"}
    with pytest.raises(ConfigError, match=r"could not be decrypted with ssl\.key\.password") as info:
        settings(wrong)
    assert str(pki.encrypted_broker) in str(info.value)
    assert info.value.key == "ssl.key.password"
    with pytest.raises(ConfigError, match=r"encrypted, but ssl\.key\.password is not set"):
        settings({"ssl.keystore.location": str(pki.encrypted_broker)})
    with pytest.raises(ConfigError, match=r"ssl\.key\.password is set, but the private key is not encrypted"):
        settings({"ssl.keystore.location": str(pki.broker), "ssl.key.password": PASSWORD})


def test_tls13_only_server_and_tls12_only_client_do_not_connect(pki: Pki) -> None:
    outcome = handshake(settings(server_config(pki, **{"ssl.enabled.protocols": "TLSv1.3"})),
                        settings(client_config(pki, **{"ssl.enabled.protocols": "TLSv1.2"})))
    assert not outcome.server.handshake_done and not outcome.client.handshake_done
    assert outcome.server.lost is not None and outcome.client.lost is not None


def test_tls12_only_server_and_tls13_only_client_do_not_connect(pki: Pki) -> None:
    outcome = handshake(settings(server_config(pki, **{"ssl.enabled.protocols": "TLSv1.2"})),
                        settings(client_config(pki, **{"ssl.enabled.protocols": "TLSv1.3"})))
    assert not outcome.server.handshake_done and not outcome.client.handshake_done


def test_default_client_falls_back_to_tls12_with_a_tls12_server(pki: Pki) -> None:
    outcome = handshake(settings(server_config(pki, **{"ssl.enabled.protocols": "TLSv1.2"})),
                        settings(client_config(pki)))
    assert outcome.connected
    assert outcome.version() == "TLSv1.2"


def test_ssl_protocol_tls12_caps_the_version(pki: Pki) -> None:
    outcome = handshake(settings(server_config(pki)),
                        settings(client_config(pki, **{"ssl.protocol": "TLSv1.2"})))
    assert outcome.connected
    assert outcome.version() == "TLSv1.2"


def test_cipher_suites_by_iana_name_for_tls12_and_tls13(pki: Pki) -> None:
    tls12 = handshake(
        settings(server_config(pki)),
        settings(client_config(pki, **{"ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"})))
    assert tls12.connected
    # Only TLS 1.2 suites configured: the client cannot offer TLS 1.3, as with JSSE.
    assert tls12.version() == "TLSv1.2"
    assert tls12.cipher() == "ECDHE-ECDSA-AES128-GCM-SHA256"

    tls13 = handshake(settings(server_config(pki, **{"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256"})),
                      settings(client_config(pki)))
    assert tls13.connected
    assert tls13.version() == "TLSv1.3"
    assert tls13.cipher() == "TLS_AES_128_GCM_SHA256"


def test_no_common_cipher_suite_does_not_connect(pki: Pki) -> None:
    outcome = handshake(
        settings(server_config(pki, **{"ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384"})),
        settings(client_config(pki, **{"ssl.cipher.suites": "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256"})))
    assert not outcome.server.handshake_done and not outcome.client.handshake_done


def test_inline_pem_values_work_even_on_one_line(pki: Pki) -> None:
    text = pki.client(ALICE).read_text()
    key = text[:text.index("-----END PRIVATE KEY-----") + len("-----END PRIVATE KEY-----")]
    chain = text[len(key):].strip()
    # A properties value continued with backslashes loses its line breaks.
    one_line = {"ssl.keystore.key": key.replace("\n", " "),
                "ssl.keystore.certificate.chain": chain.replace("\n", " "),
                "ssl.truststore.certificates": pki.ca.read_text().replace("\n", " ")}
    loaded = settings(one_line)
    assert loaded.keystore_source == "ssl.keystore.key"
    assert certificate_subject(loaded.certificate_chain[0]) == ALICE
    assert len(loaded.certificate_chain) == 2
    outcome = handshake(settings(server_config(pki, **{"ssl.client.auth": "required"})), loaded)
    assert outcome.connected
    assert outcome.server.subject == ALICE


# --------------------------------------------------------------------------- configs


def test_defaults() -> None:
    loaded = settings({})
    assert loaded.client_auth == "none"
    assert loaded.protocol == "TLSv1.3"
    assert loaded.enabled_protocols == ("TLSv1.2", "TLSv1.3")
    assert loaded.tls_versions == ("TLSv1.2", "TLSv1.3")
    assert loaded.cipher_suites == () and loaded.openssl_ciphers == ()
    assert loaded.endpoint_identification_algorithm == "https"
    assert loaded.hostname_verification
    assert not loaded.has_keystore and loaded.certificate_chain == ()
    assert loaded.trusted_certificates is None


def test_the_key_store_and_trust_store_are_loaded_once(pki: Pki) -> None:
    loaded = settings(server_config(pki))
    assert [certificate_subject(c) for c in loaded.certificate_chain] == [
        "CN=mafka-broker,OU=test,O=Mafka", "CN=Mafka Test CA,OU=test,O=Mafka"]
    assert loaded.trusted_certificates is not None
    assert [certificate_subject(c) for c in loaded.trusted_certificates] == [
        "CN=Mafka Test CA,OU=test,O=Mafka"]
    assert loaded.keystore_source == f"ssl.keystore.location={pki.broker}"
    assert loaded == settings(server_config(pki))


def test_per_listener_configs_win_over_the_plain_ones(pki: Pki) -> None:
    config = {"ssl.client.auth": "none",
              "listener.name.external_ssl.ssl.client.auth": "required",
              "ssl.enabled.protocols": "TLSv1.2,TLSv1.3",
              "listener.name.internal.ssl.enabled.protocols": "TLSv1.3",
              "ssl.keystore.location": str(pki.broker),
              "listener.name.external_ssl.ssl.keystore.location": str(pki.client(ALICE))}
    external = settings(config, listener="EXTERNAL_SSL")
    assert external.client_auth == "required"
    assert external.tls_versions == ("TLSv1.2", "TLSv1.3")
    assert certificate_subject(external.certificate_chain[0]) == ALICE
    internal = settings(config, listener="INTERNAL")
    assert internal.client_auth == "none"
    assert internal.tls_versions == ("TLSv1.3",)
    assert certificate_subject(internal.certificate_chain[0]) == "CN=mafka-broker,OU=test,O=Mafka"
    plain = settings(config)
    assert plain.client_auth == "none"


def test_a_bad_listener_value_names_the_prefixed_key() -> None:
    with pytest.raises(ConfigError) as info:
        settings({"listener.name.ssl.ssl.client.auth": "REQUIRED"}, listener="SSL")
    assert str(info.value) == ("Invalid value REQUIRED for configuration listener.name.ssl."
                               "ssl.client.auth: String must be one of: required, requested, none")


@pytest.mark.parametrize("key", ["ssl.keystore.type", "ssl.truststore.type"])
@pytest.mark.parametrize("store_type", ["JKS", "PKCS12"])
def test_only_pem_stores_are_supported(key: str, store_type: str) -> None:
    with pytest.raises(ValueError, match=rf"Invalid value {store_type} for configuration {key}: "
                                         r"Mafka supports only PEM") as info:
        settings({key: store_type})
    assert isinstance(info.value, ConfigError) and info.value.key == key
    assert settings({key: "PEM"}).client_auth == "none"


@pytest.mark.parametrize(("config", "key", "message"), [
    ({"ssl.client.auth": "sometimes"}, "ssl.client.auth", "String must be one of"),
    ({"ssl.enabled.protocols": "TLSv1.1,TLSv1.2"}, "ssl.enabled.protocols", "unsupported protocol TLSv1.1"),
    ({"ssl.enabled.protocols": "SSLv3"}, "ssl.enabled.protocols", "unsupported protocol SSLv3"),
    ({"ssl.protocol": "SSL"}, "ssl.protocol", "Mafka supports TLSv1.2, TLSv1.3 and TLS"),
    ({"ssl.protocol": "TLSv1.2", "ssl.enabled.protocols": "TLSv1.3"}, "ssl.enabled.protocols",
     "none of these protocols is allowed by ssl.protocol=TLSv1.2"),
    ({"ssl.cipher.suites": "ECDHE-RSA-AES256-GCM-SHA384"}, "ssl.cipher.suites", "unknown cipher suite"),
    ({"ssl.cipher.suites": "TLS_ECDH_RSA_WITH_AES_128_GCM_SHA256"}, "ssl.cipher.suites", "static ECDH"),
    ({"ssl.cipher.suites": "TLS_AES_128_GCM_SHA256", "ssl.enabled.protocols": "TLSv1.2"},
     "ssl.cipher.suites", "no cipher suite is usable"),
    ({"ssl.endpoint.identification.algorithm": "ldap"}, "ssl.endpoint.identification.algorithm",
     "https"),
    ({"ssl.keystore.password": "x"}, "ssl.keystore.password", "cannot be specified with PEM format"),
    ({"ssl.truststore.password": "x"}, "ssl.truststore.password", "cannot be specified for PEM format"),
    ({"ssl.keystore.key": "k"}, "ssl.keystore.certificate.chain", "certificate chain is not specified"),
    ({"ssl.keystore.certificate.chain": "c"}, "ssl.keystore.key", "private key is not specified"),
    ({"ssl.keystore.key": "k", "ssl.keystore.certificate.chain": "c", "ssl.keystore.location": "/x"},
     "ssl.keystore.location", "Both SSL key store location"),
    ({"ssl.truststore.certificates": "c", "ssl.truststore.location": "/x"},
     "ssl.truststore.location", "Both SSL trust store location"),
])
def test_bad_values_are_refused_naming_the_key(config: dict[str, str], key: str, message: str) -> None:
    with pytest.raises(ConfigError, match=message) as info:
        settings(config)
    assert info.value.key == key
    assert key in str(info.value)


def test_cipher_suite_names_map_to_openssl_names() -> None:
    loaded = settings({"ssl.cipher.suites": "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384, "
                                            "TLS_EMPTY_RENEGOTIATION_INFO_SCSV,TLS_AES_256_GCM_SHA384"})
    assert loaded.openssl_ciphers == ("ECDHE-RSA-AES256-GCM-SHA384",)
    assert loaded.tls13_ciphersuites == ("TLS_AES_256_GCM_SHA384",)
    assert loaded.tls_versions == ("TLSv1.2", "TLSv1.3")
    only12 = settings({"ssl.cipher.suites": "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384"})
    assert only12.tls_versions == ("TLSv1.2",)


def test_every_mapped_cipher_suite_exists_in_the_linked_openssl() -> None:
    for iana, openssl_name in IANA_TO_OPENSSL_CIPHERS.items():
        ctx = SSL.Context(SSL.TLS_METHOD)
        ctx.set_cipher_list(openssl_name.encode())
        # (The TLS 1.3 suites, set separately, are listed too.)
        listed = [name for name in SSL.Connection(ctx).get_cipher_list()
                  if name not in TLS13_CIPHER_SUITES]
        assert listed == [openssl_name], iana


def test_endpoint_identification_is_case_insensitive_and_empty_turns_it_off() -> None:
    assert settings({"ssl.endpoint.identification.algorithm": "HTTPS"}).hostname_verification
    off = settings({"ssl.endpoint.identification.algorithm": ""})
    assert not off.hostname_verification and off.endpoint_identification_algorithm == ""


def test_missing_and_unparsable_files_are_refused_naming_key_and_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.pem"
    with pytest.raises(ConfigError) as info:
        settings({"ssl.keystore.location": str(missing)})
    assert info.value.key == "ssl.keystore.location"
    assert str(missing) in str(info.value) and "ssl.keystore.location" in str(info.value)

    garbage = tmp_path / "garbage.pem"
    garbage.write_text("hello\n")
    with pytest.raises(ConfigError, match="at least one certificate expected") as info:
        settings({"ssl.truststore.location": str(garbage)})
    assert str(garbage) in str(info.value) and info.value.key == "ssl.truststore.location"
    with pytest.raises(ConfigError, match="Private key not provided") as info:
        settings({"ssl.keystore.location": str(garbage)})
    assert str(garbage) in str(info.value)

    broken = tmp_path / "broken.pem"
    broken.write_text("-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n")
    with pytest.raises(ConfigError, match="certificate 1 does not parse") as info:
        settings({"ssl.truststore.location": str(broken)})
    assert str(broken) in str(info.value)


def test_a_key_store_whose_first_certificate_is_not_the_keys_is_refused(pki: Pki, tmp_path: Path) -> None:
    text = pki.broker.read_text()
    key_end = text.index("-----END PRIVATE KEY-----") + len("-----END PRIVATE KEY-----\n")
    certificates = text[key_end:].split("-----END CERTIFICATE-----\n")
    swapped = tmp_path / "swapped.pem"
    swapped.write_text(text[:key_end] + certificates[1] + "-----END CERTIFICATE-----\n"
                       + certificates[0] + "-----END CERTIFICATE-----\n")
    with pytest.raises(ConfigError, match="does not belong to the private key"):
        settings({"ssl.keystore.location": str(swapped)})


def test_two_private_keys_are_refused(pki: Pki, tmp_path: Path) -> None:
    doubled = tmp_path / "doubled.pem"
    doubled.write_text(pki.client(ALICE).read_text() + pki.broker.read_text())
    with pytest.raises(ConfigError, match="Expected one private key, but found 2"):
        settings({"ssl.keystore.location": str(doubled)})


def test_a_listener_needs_a_key_store(pki: Pki) -> None:
    with pytest.raises(ValueError, match="a TLS listener needs a key store"):
        server_context_factory(settings({"ssl.truststore.location": str(pki.ca)}))


def test_peer_certificate_subject_of_a_non_tls_transport_is_none() -> None:
    assert peer_certificate_subject(object()) is None


# --------------------------------------------------------------------------- RFC 2253 names


def _certificate(name: x509.Name) -> x509.Certificate:
    key = ec.generate_private_key(ec.SECP256R1())
    now = dt.datetime.now(dt.UTC)
    return (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(1)
            .not_valid_before(now).not_valid_after(now + dt.timedelta(days=1))
            .sign(key, hashes.SHA256()))


def _attr(oid: x509.ObjectIdentifier, value: str,
          string_type: x509.name._ASN1Type | None = None) -> x509.RelativeDistinguishedName:
    attribute = (x509.NameAttribute(oid, value) if string_type is None
                 else x509.NameAttribute(oid, value, string_type))
    return x509.RelativeDistinguishedName([attribute])


NAME_CASES: list[tuple[list[x509.RelativeDistinguishedName], str]] = [
    # Most specific RDN first.
    ([_attr(NameOID.COUNTRY_NAME, "US"), _attr(NameOID.ORGANIZATION_NAME, "Acme"),
      _attr(NameOID.ORGANIZATIONAL_UNIT_NAME, "eng"), _attr(NameOID.COMMON_NAME, "alice")],
     "CN=alice,OU=eng,O=Acme,C=US"),
    # Java escapes , = + < > # ; " \ anywhere, with a backslash.
    ([_attr(NameOID.COMMON_NAME, 'Tkac, Adam'), _attr(NameOID.ORGANIZATIONAL_UNIT_NAME, "a=b+c")],
     r"OU=a\=b\+c,CN=Tkac\, Adam"),
    ([_attr(NameOID.COMMON_NAME, '#1 <x>;"q"\\')], r'CN=\#1 \<x\>\;\"q\"\\'),
    # Leading and trailing spaces are escaped; inner ones are not.
    ([_attr(NameOID.COMMON_NAME, "  two  spaces ")], r"CN=\ \ two  spaces\ "),
    # Non-ASCII text is printed as is.
    ([_attr(NameOID.COMMON_NAME, "Zoë Ørsted"), _attr(NameOID.LOCALITY_NAME, "Köln")],
     "L=Köln,CN=Zoë Ørsted"),
    # The other RFC 2253 keywords.
    ([_attr(NameOID.DOMAIN_COMPONENT, "com"), _attr(NameOID.DOMAIN_COMPONENT, "example"),
      _attr(NameOID.USER_ID, "u1"), _attr(NameOID.STREET_ADDRESS, "Main St"),
      _attr(NameOID.STATE_OR_PROVINCE_NAME, "MD")],
     "ST=MD,STREET=Main St,UID=u1,DC=example,DC=com"),
    # Attributes without an RFC 2253 keyword: dotted OID and the value's DER in hex.
    ([_attr(NameOID.EMAIL_ADDRESS, "a@b.c"), _attr(NameOID.COMMON_NAME, "x")],
     "CN=x,1.2.840.113549.1.9.1=#16056140622e63"),
    ([_attr(NameOID.SERIAL_NUMBER, "42"), _attr(NameOID.TITLE, "Dr")],
     "2.5.4.12=#0c024472,2.5.4.5=#13023432"),
    # A BMPString is text; a UniversalString is not (Java's AVA.isDerString).
    ([_attr(NameOID.COMMON_NAME, "bmp", x509.name._ASN1Type.BMPString)], "CN=bmp"),
    ([_attr(NameOID.COMMON_NAME, "u", x509.name._ASN1Type.UniversalString)], "CN=#1c0400000075"),
    # A multi-valued RDN joins its attributes with '+', in their encoded order.
    ([x509.RelativeDistinguishedName([x509.NameAttribute(NameOID.COMMON_NAME, "a"),
                                      x509.NameAttribute(NameOID.USER_ID, "b")]),
      _attr(NameOID.ORGANIZATION_NAME, "O1")],
     "O=O1,CN=a+UID=b"),
]


@pytest.mark.parametrize(("rdns", "expected"), NAME_CASES)
def test_subjects_are_printed_as_javas_x500principal_get_name(
        rdns: list[x509.RelativeDistinguishedName], expected: str) -> None:
    assert certificate_subject(_certificate(x509.Name(rdns))) == expected


def test_generated_client_dns_round_trip(tmp_path: Path) -> None:
    dns = ["CN=carol,OU=ops,O=Example Corp,L=Springfield,ST=IL,C=US", r"CN=Smith\, John,O=Mafka"]
    made = generate_pki(tmp_path, clients=dns)
    for dn in dns:
        chain = settings({"ssl.keystore.location": str(made.client(dn))}).certificate_chain
        assert certificate_subject(chain[0]) == dn
