"""BrokerConnection's TLS, SASL and re-authentication against a small in-process asyncio broker.

:class:`FakeBroker` speaks just enough Kafka (``mafka.wire.codec``): ApiVersions,
SaslHandshake and SaslAuthenticate with the real server mechanisms
(:func:`mafka.security.sasl_servers.create_sasl_server`), and answers further
ApiVersions requests (the stand-in for "any request") only once the connection
is authenticated and its session has not expired, closing it otherwise, as
Kafka's broker does.  It reads frames as they arrive and answers them in order
from a worker, so it can tell whether a SaslHandshake came while earlier
requests were still unanswered.  TLS uses a CA made in the test with
``cryptography``.  Each test runs its own loop (``asyncio.run``).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import ipaddress
import os
import ssl
import struct
from collections.abc import Callable, Coroutine
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from cryptography import x509
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.x509.oid import NameOID

from mafka.broker.scram import ScramCredential, ScramMechanism, generate_credential
from mafka.client.admin_core import kafka_exception
from mafka.client.config import parse_config
from mafka.client.kafka_error import KafkaError
from mafka.client.kernel import Kernel
from mafka.client.security import (
    AUTHENTICATION_ERROR,
    SSL_ERROR,
    AuthenticationFailed,
    ClientSecurity,
    SaslAuthenticationFailed,
    SaslMechanismRejected,
    client_security,
)
from mafka.client.transport import BrokerConnection
from mafka.errors import ConfigError, ErrorCode
from mafka.security.sasl import SaslAuthenticationError, SaslServer, client_error_message
from mafka.security.sasl_scram import salted_password
from mafka.security.sasl_servers import create_sasl_server
from mafka.wire.codec import decode_request, encode_response

API_VERSIONS, SASL_HANDSHAKE, SASL_AUTHENTICATE = 18, 17, 36
USERS = {"alice": "alice-secret", "bob": "bob secret "}
ITERATIONS = 4096


def scram_credentials() -> dict[tuple[ScramMechanism, str], ScramCredential]:
    out = {}
    for mechanism in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512):
        for user, password in USERS.items():
            salt = os.urandom(16)
            salted = salted_password(mechanism, password, salt, ITERATIONS)
            out[(mechanism, user)] = generate_credential(mechanism, salt, salted, ITERATIONS)
    return out


SCRAM = scram_credentials()


# -- the fake broker ----------------------------------------------------------------------------


@dataclass
class _Session:
    """One client connection's state on the fake broker."""

    writer: asyncio.StreamWriter
    frames: asyncio.Queue[bytes | None] = field(default_factory=asyncio.Queue)
    unanswered: int = 0
    sasl: SaslServer | None = None
    mechanism: str = ""
    authenticated: bool = False
    expires_at: float | None = None


class FakeBroker:
    """A SASL (and optionally TLS) listener on 127.0.0.1.

    Attributes:
        handshakes: the mechanism of every SaslHandshake, in order.
        authentications: completed SASL exchanges (first ones and re-authentications).
        failures: the error_message of every failed SaslAuthenticate.
        violations: protocol breaches by the client (a SaslHandshake while requests were
            unanswered, a request after the session expired, one before authenticating).
        peer_subjects: the subject of each client certificate presented (mutual TLS).
    """

    def __init__(self, *, mechanisms: tuple[str, ...] = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"),
                 sasl: bool = True, lifetime_ms: int = 0, reply_delay: float = 0.0,
                 ssl_context: ssl.SSLContext | None = None) -> None:
        self.mechanisms = mechanisms
        self.sasl = sasl
        self.lifetime_ms = lifetime_ms
        self.reply_delay = reply_delay
        self.ssl_context = ssl_context
        self.handshakes: list[str] = []
        self.authentications = 0
        self.failures: list[str] = []
        self.violations: list[str] = []
        self.peer_subjects: list[str] = []
        self.port = 0
        self._server: asyncio.Server | None = None

    async def __aenter__(self) -> FakeBroker:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0, ssl=self.ssl_context)
        self.port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        assert self._server is not None
        self._server.close()

    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        peer = writer.get_extra_info("peercert")
        if peer:
            self.peer_subjects.append(str(peer.get("subject")))
        session = _Session(writer)
        worker = asyncio.ensure_future(self._answer(session))
        try:
            while True:
                size = struct.unpack(">i", await reader.readexactly(4))[0]
                frame = await reader.readexactly(size)
                api_key = struct.unpack_from(">h", frame)[0]
                if api_key == SASL_HANDSHAKE and session.unanswered:
                    self.violations.append(f"SaslHandshake with {session.unanswered} requests unanswered")
                if api_key == API_VERSIONS and self._expired(session):
                    # Kafka's broker checks the session when a request arrives, and hangs up.
                    self.violations.append("a request after the session expired")
                    break
                session.unanswered += 1
                session.frames.put_nowait(frame)
        except (asyncio.IncompleteReadError, ConnectionError):
            pass
        finally:
            session.frames.put_nowait(None)
            await worker
            writer.close()

    async def _answer(self, session: _Session) -> None:
        while (frame := await session.frames.get()) is not None:
            request = decode_request(frame)
            body, close = self._handle(session, request.header.api_key, request.body)
            if body is None:
                self.violations.append(close or "?")
                session.writer.close()
                return
            if request.header.api_key == API_VERSIONS and session.authenticated and self.reply_delay:
                await asyncio.sleep(self.reply_delay)
            session.writer.write(encode_response(request.header, body))
            session.unanswered -= 1
            if close:
                session.writer.close()  # Kafka closes the connection after a failed authentication
                return

    def _handle(self, session: _Session, api_key: int, body: Any) -> tuple[Any, str | None]:
        """(the response body, a reason to close after it); (None, violation) to hang up at once."""
        if api_key == SASL_HANDSHAKE:
            return self._handshake(session, body.mechanism), None
        if api_key == SASL_AUTHENTICATE:
            return self._authenticate(session, bytes(body.auth_bytes))
        if api_key != API_VERSIONS:
            return None, f"unexpected api key {api_key}"
        if session.mechanism and not session.authenticated and self.sasl:
            return None, "a request during a SASL exchange"
        return {"error_code": 0, "api_keys": [
            {"api_key": API_VERSIONS, "min_version": 0, "max_version": 3},
            *([{"api_key": SASL_HANDSHAKE, "min_version": 0, "max_version": 1},
               {"api_key": SASL_AUTHENTICATE, "min_version": 0, "max_version": 2}] if self.sasl else []),
        ], "throttle_time_ms": 0}, None

    @staticmethod
    def _expired(session: _Session) -> bool:
        return session.expires_at is not None and asyncio.get_running_loop().time() > session.expires_at

    def _handshake(self, session: _Session, mechanism: str) -> dict[str, Any]:
        self.handshakes.append(mechanism)
        if mechanism not in self.mechanisms:
            return {"error_code": int(ErrorCode.UNSUPPORTED_SASL_MECHANISM), "mechanisms": list(self.mechanisms)}
        session.mechanism = mechanism
        session.sasl = create_sasl_server(mechanism, plain_users=USERS.get,
                                          scram_credentials=lambda m, user: SCRAM.get((m, user)))
        return {"error_code": 0, "mechanisms": list(self.mechanisms)}

    def _authenticate(self, session: _Session, token: bytes) -> tuple[dict[str, Any], str | None]:
        assert session.sasl is not None
        reauthentication = session.authenticated
        try:
            challenge = session.sasl.evaluate(token)
        except SaslAuthenticationError as exc:
            message = client_error_message(exc, session.mechanism, reauthentication=reauthentication)
            self.failures.append(message)
            return {"error_code": int(ErrorCode.SASL_AUTHENTICATION_FAILED), "error_message": message,
                    "auth_bytes": b"", "session_lifetime_ms": 0}, "authentication failed"
        lifetime = 0
        if session.sasl.complete:
            self.authentications += 1
            session.authenticated = True
            session.mechanism = ""
            if self.lifetime_ms:
                lifetime = self.lifetime_ms
                session.expires_at = asyncio.get_running_loop().time() + lifetime / 1000.0
        return {"error_code": 0, "error_message": None, "auth_bytes": challenge,
                "session_lifetime_ms": lifetime}, None


# -- helpers ------------------------------------------------------------------------------------


def run(coro_fn: Callable[[], Coroutine[Any, Any, None]]) -> None:
    asyncio.run(asyncio.wait_for(coro_fn(), 30))


def sasl(mechanism: str, username: str = "alice", password: str = "alice-secret",
         context: ssl.SSLContext | None = None) -> ClientSecurity:
    protocol = "sasl_ssl" if context is not None else "sasl_plaintext"
    return ClientSecurity(protocol, context, mechanism, username, password)


async def connect(broker: FakeBroker, security: ClientSecurity | None, host: str = "127.0.0.1",
                  timeout: float = 10.0) -> BrokerConnection:
    return await BrokerConnection.open(-1, host, broker.port, "test-client", timeout, security)


async def probe(conn: BrokerConnection) -> None:
    """One request after authentication; the fake answers only an authenticated connection."""
    response = await asyncio.wait_for(conn.request(API_VERSIONS, {}, version=2), 5)
    assert response.error_code == 0


# -- SASL ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_sasl_mechanisms_authenticate(mechanism: str) -> None:
    async def body() -> None:
        async with FakeBroker() as broker:
            conn = await connect(broker, sasl(mechanism))
            try:
                await probe(conn)
            finally:
                conn.close()
            assert broker.handshakes == [mechanism]
            assert broker.authentications == 1 and not broker.violations
            assert conn.session_lifetime_ms == 0 and conn.versions[SASL_AUTHENTICATE] == 2

    run(body)


def test_password_is_sent_as_given() -> None:
    async def body() -> None:
        async with FakeBroker() as broker:
            conn = await connect(broker, sasl("SCRAM-SHA-512", "bob", "bob secret "))
            conn.close()
            with pytest.raises(SaslAuthenticationFailed):
                await connect(broker, sasl("SCRAM-SHA-512", "bob", "bob secret"))

    run(body)


@pytest.mark.parametrize("mechanism", ["PLAIN", "SCRAM-SHA-512"])
def test_wrong_password_raises_with_the_brokers_message(mechanism: str) -> None:
    async def body() -> None:
        async with FakeBroker() as broker:
            with pytest.raises(SaslAuthenticationFailed) as info:
                await connect(broker, sasl(mechanism, password="wrong"))
            assert len(broker.failures) == 1
            assert info.value.message == broker.failures[0]
            assert f"127.0.0.1:{broker.port}" in str(info.value) and broker.failures[0] in str(info.value)
            error = info.value.error  # what error_cb gets: librdkafka's _AUTHENTICATION
            assert error.code() == AUTHENTICATION_ERROR == -169
            assert not error.retriable() and error.str() == str(info.value)
            # As admin requests report it: the broker's code and text, not a transport failure.
            admin_error = kafka_exception(info.value).error
            assert admin_error.code() == ErrorCode.SASL_AUTHENTICATION_FAILED
            assert admin_error.str() == broker.failures[0]

    run(body)


def test_unknown_user_fails_like_a_wrong_password() -> None:
    async def body() -> None:
        async with FakeBroker() as broker:
            with pytest.raises(SaslAuthenticationFailed):
                await connect(broker, sasl("PLAIN", username="mallory"))
            assert broker.failures == ["Authentication failed: Invalid username or password"]

    run(body)


def test_unsupported_mechanism_names_the_brokers_mechanisms() -> None:
    async def body() -> None:
        async with FakeBroker(mechanisms=("PLAIN", "SCRAM-SHA-256")) as broker:
            with pytest.raises(SaslMechanismRejected) as info:
                await connect(broker, sasl("SCRAM-SHA-512"))
            assert info.value.mechanisms == ("PLAIN", "SCRAM-SHA-256")
            assert "'SCRAM-SHA-512'" in str(info.value) and "[PLAIN, SCRAM-SHA-256]" in str(info.value)
            assert info.value.error.code() == ErrorCode.UNSUPPORTED_SASL_MECHANISM
            assert broker.authentications == 0

    run(body)


def test_a_listener_without_sasl_is_a_connection_error() -> None:
    async def body() -> None:
        async with FakeBroker(sasl=False) as broker:
            with pytest.raises(ConnectionError, match="SaslHandshake v1") as info:
                await connect(broker, sasl("PLAIN"))
            assert not isinstance(info.value, AuthenticationFailed)

    run(body)


# -- re-authentication (KIP-368) ----------------------------------------------------------------


def test_reauthenticates_before_the_session_expires_without_interleaving() -> None:
    async def body() -> None:
        async with FakeBroker(lifetime_ms=800, reply_delay=0.005) as broker:
            conn = await connect(broker, sasl("SCRAM-SHA-512"))
            try:
                assert conn.session_lifetime_ms == 800
                loop = asyncio.get_running_loop()
                end = loop.time() + 2.0
                answered = 0
                while loop.time() < end:
                    # Three pipelined requests at a time: some are in flight when the timer fires.
                    replies = await asyncio.wait_for(asyncio.gather(
                        *(conn.request(API_VERSIONS, {}, version=2) for _ in range(3))), 5)
                    answered += sum(1 for r in replies if r.error_code == 0)
                assert conn.connected
            finally:
                conn.close()
            # Every 680-760 ms over 2 s: at least two re-authentications, none late.
            assert conn.reauthentications >= 2
            assert broker.authentications == conn.reauthentications + 1
            assert broker.handshakes == ["SCRAM-SHA-512"] * broker.authentications
            assert broker.violations == []
            assert answered > 30

    run(body)


def test_failed_reauthentication_closes_the_connection() -> None:
    async def body() -> None:
        async with FakeBroker(lifetime_ms=200) as broker:
            conn = await connect(broker, sasl("PLAIN"))
            USERS["alice"] = "changed"
            try:
                for _ in range(100):
                    if not conn.connected:
                        break
                    await asyncio.sleep(0.01)
            finally:
                USERS["alice"] = "alice-secret"
            assert not conn.connected
            assert broker.failures == ["Authentication failed: Invalid username or password"]
            with pytest.raises(ConnectionError):
                await conn.request(API_VERSIONS, {}, version=2)

    run(body)


# -- the kernel: reporting authentication failures --------------------------------------------


def test_kernel_reports_authentication_failure_through_error_cb_and_backs_off() -> None:
    errors: list[KafkaError] = []

    async def body() -> None:
        async with FakeBroker() as broker:
            config = parse_config("admin", {
                "bootstrap.servers": f"127.0.0.1:{broker.port}", "security.protocol": "SASL_PLAINTEXT",
                "sasl.mechanism": "PLAIN", "sasl.username": "alice", "sasl.password": "wrong",
                "reconnect.backoff.ms": 10, "reconnect.backoff.max.ms": 5000, "error_cb": errors.append,
            })
            kernel = Kernel(config)
            try:
                with pytest.raises(SaslAuthenticationFailed):
                    await kernel.connection(-1)
                assert [e.code() for e in errors] == [AUTHENTICATION_ERROR]
                assert errors[0].str() == \
                    f"127.0.0.1:{broker.port}: Authentication failed: Invalid username or password"
                assert not errors[0].retriable()
                assert isinstance(kernel.auth_error, SaslAuthenticationFailed)
                # Not retried at reconnect.backoff.ms: the next attempt waits for the cap.
                with pytest.raises(TimeoutError):
                    await asyncio.wait_for(kernel.connection(-1), 0.5)
                assert len(broker.handshakes) == 1
                # send_any keeps the type, so an admin call reports code 58, not "no broker reachable".
                kernel._retry_at.clear()
                with pytest.raises(SaslAuthenticationFailed):
                    await kernel.send_any(API_VERSIONS, {})
                assert len(errors) == 2
            finally:
                await kernel.close()

    run(body)


def test_kernel_authenticates_every_connection() -> None:
    async def body() -> None:
        async with FakeBroker() as broker:
            kernel = Kernel(parse_config("producer", {
                "bootstrap.servers": f"SASL_PLAINTEXT://127.0.0.1:{broker.port}",
                "security.protocol": "sasl_plaintext", "sasl.mechanisms": "scram-sha-256",
                "sasl.username": "alice", "sasl.password": "alice-secret",
            }))
            try:
                for channel in ("default", "produce", "fetch"):
                    conn = await kernel.connection(-1, channel)
                    await probe(conn)
                assert kernel.auth_error is None
            finally:
                await kernel.close()
            assert broker.handshakes == ["SCRAM-SHA-256"] * 3 and broker.authentications == 3

    run(body)


# -- TLS ----------------------------------------------------------------------------------------


@dataclass(frozen=True)
class Pki:
    ca: Path
    server: ssl.SSLContext  # certificate for IP 127.0.0.1
    server_elsewhere: ssl.SSLContext  # a certificate for another host name only
    client_cert: Path
    client_key: Path  # encrypted with "key-secret"


def _name(cn: str) -> x509.Name:
    return x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, cn)])


def _certificate(subject: str, key: ec.EllipticCurvePrivateKey, issuer: str,
                 issuer_key: ec.EllipticCurvePrivateKey, *, ca: bool = False,
                 names: list[x509.GeneralName] | None = None) -> x509.Certificate:
    now = dt.datetime.now(dt.UTC)
    builder = (x509.CertificateBuilder().subject_name(_name(subject)).issuer_name(_name(issuer))
               .public_key(key.public_key()).serial_number(x509.random_serial_number())
               .not_valid_before(now - dt.timedelta(hours=1)).not_valid_after(now + dt.timedelta(days=1))
               .add_extension(x509.BasicConstraints(ca=ca, path_length=None), critical=True))
    if ca:
        builder = builder.add_extension(x509.KeyUsage(
            digital_signature=True, key_cert_sign=True, crl_sign=True, content_commitment=False,
            key_encipherment=False, data_encipherment=False, key_agreement=False,
            encipher_only=False, decipher_only=False), critical=True)
        builder = builder.add_extension(
            x509.SubjectKeyIdentifier.from_public_key(key.public_key()), critical=False)
    else:
        builder = builder.add_extension(
            x509.AuthorityKeyIdentifier.from_issuer_public_key(issuer_key.public_key()), critical=False)
    if names:
        builder = builder.add_extension(x509.SubjectAlternativeName(names), critical=False)
    return builder.sign(issuer_key, hashes.SHA256())


def _pem(cert: x509.Certificate) -> bytes:
    return cert.public_bytes(serialization.Encoding.PEM)


def _key(key: ec.EllipticCurvePrivateKey, password: bytes | None = None) -> bytes:
    encryption: serialization.KeySerializationEncryption = (
        serialization.BestAvailableEncryption(password) if password else serialization.NoEncryption())
    return key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, encryption)


def _server_context(directory: Path, name: str, cert: x509.Certificate, key: ec.EllipticCurvePrivateKey,
                    ca: Path) -> ssl.SSLContext:
    path = directory / f"{name}.pem"
    path.write_bytes(_key(key) + _pem(cert))
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    context.load_cert_chain(path)
    context.load_verify_locations(ca)
    context.verify_mode = ssl.CERT_OPTIONAL  # ask for a client certificate, check it if sent
    return context


@pytest.fixture(scope="module")
def pki(tmp_path_factory: pytest.TempPathFactory) -> Pki:
    directory = tmp_path_factory.mktemp("pki")
    ca_key = ec.generate_private_key(ec.SECP256R1())
    ca_cert = _certificate("Test CA", ca_key, "Test CA", ca_key, ca=True)
    ca = directory / "ca.pem"
    ca.write_bytes(_pem(ca_cert))
    server_key = ec.generate_private_key(ec.SECP256R1())
    here = _certificate("broker", server_key, "Test CA", ca_key,
                        names=[x509.IPAddress(ipaddress.ip_address("127.0.0.1"))])
    elsewhere = _certificate("broker", server_key, "Test CA", ca_key, names=[x509.DNSName("elsewhere.test")])
    client_key = ec.generate_private_key(ec.SECP256R1())
    client_cert = directory / "client.pem"
    client_cert.write_bytes(_pem(_certificate("alice-client", client_key, "Test CA", ca_key)))
    client_key_path = directory / "client-key.pem"
    client_key_path.write_bytes(_key(client_key, b"key-secret"))
    return Pki(ca, _server_context(directory, "here", here, server_key, ca),
               _server_context(directory, "elsewhere", elsewhere, server_key, ca),
               client_cert, client_key_path)


def tls_security(protocol: str = "ssl", **conf: Any) -> ClientSecurity:
    extra = {"sasl.mechanism": "SCRAM-SHA-512", "sasl.username": "alice",
             "sasl.password": "alice-secret"} if protocol == "sasl_ssl" else {}
    security = client_security(parse_config("admin", {
        "bootstrap.servers": "127.0.0.1:1", "security.protocol": protocol, **extra, **conf}))
    assert security is not None and security.ssl_context is not None
    return security


def test_tls_with_the_ca(pki: Pki) -> None:
    async def body() -> None:
        async with FakeBroker(sasl=False, ssl_context=pki.server) as broker:
            conn = await connect(broker, tls_security(**{"ssl.ca.location": str(pki.ca)}))
            try:
                await probe(conn)
                assert conn._transport is not None
                assert conn._transport.get_extra_info("ssl_object") is not None
            finally:
                conn.close()

    run(body)


def test_sasl_ssl_scram(pki: Pki) -> None:
    async def body() -> None:
        async with FakeBroker(ssl_context=pki.server) as broker:
            conn = await connect(broker, tls_security("sasl_ssl", **{"ssl.ca.location": str(pki.ca)}))
            try:
                await probe(conn)
            finally:
                conn.close()
            assert broker.handshakes == ["SCRAM-SHA-512"] and broker.authentications == 1

    run(body)


def test_tls_refuses_a_certificate_for_another_host(pki: Pki) -> None:
    async def body() -> None:
        async with FakeBroker(sasl=False, ssl_context=pki.server_elsewhere) as broker:
            with pytest.raises(ssl.SSLCertVerificationError, match="(?i)hostname|IP address mismatch"):
                await connect(broker, tls_security(**{"ssl.ca.location": str(pki.ca)}))
            # ssl.endpoint.identification.algorithm=none: the chain is still checked, the name not.
            conn = await connect(broker, tls_security(**{
                "ssl.ca.location": str(pki.ca), "ssl.endpoint.identification.algorithm": "none"}))
            conn.close()

    run(body)


def test_tls_refuses_an_untrusted_certificate(pki: Pki) -> None:
    async def body() -> None:
        async with FakeBroker(sasl=False, ssl_context=pki.server) as broker:
            with pytest.raises(ssl.SSLCertVerificationError, match="(?i)certificate verify failed"):
                await connect(broker, tls_security())  # the system's CAs do not know the test CA
            conn = await connect(broker, tls_security(**{"enable.ssl.certificate.verification": False}))
            conn.close()

    run(body)


def test_kernel_reports_a_tls_failure_and_backs_off(pki: Pki) -> None:
    errors: list[KafkaError] = []

    async def body() -> None:
        async with FakeBroker(sasl=False, ssl_context=pki.server_elsewhere) as broker:
            kernel = Kernel(parse_config("admin", {
                "bootstrap.servers": f"127.0.0.1:{broker.port}", "security.protocol": "ssl",
                "ssl.ca.location": str(pki.ca), "error_cb": errors.append,
                "reconnect.backoff.ms": 10, "reconnect.backoff.max.ms": 5000,
            }))
            try:
                with pytest.raises(ConnectionError, match="CERTIFICATE_VERIFY_FAILED"):
                    await kernel.connection(-1)
                with pytest.raises(TimeoutError):
                    await asyncio.wait_for(kernel.connection(-1), 0.3)
            finally:
                await kernel.close()
            assert [e.code() for e in errors] == [SSL_ERROR]
            assert "SSL handshake failed" in errors[0].str() and not errors[0].retriable()

    run(body)


def test_client_certificate_with_an_encrypted_key(pki: Pki) -> None:
    async def body() -> None:
        async with FakeBroker(sasl=False, ssl_context=pki.server) as broker:
            conn = await connect(broker, tls_security(**{
                "ssl.ca.location": str(pki.ca), "ssl.certificate.location": str(pki.client_cert),
                "ssl.key.location": str(pki.client_key), "ssl.key.password": "key-secret"}))
            try:
                await probe(conn)
            finally:
                conn.close()
            assert len(broker.peer_subjects) == 1 and "alice-client" in broker.peer_subjects[0]

    run(body)


def test_wrong_key_password_is_a_config_error(pki: Pki) -> None:
    with pytest.raises(ConfigError, match="ssl.certificate.location") as info:
        tls_security(**{"ssl.certificate.location": str(pki.client_cert),
                        "ssl.key.location": str(pki.client_key), "ssl.key.password": "wrong"})
    assert info.value.key == "ssl.certificate.location"


def test_a_ca_file_that_is_not_pem_is_a_config_error(tmp_path: Path) -> None:
    bogus = tmp_path / "ca.pem"
    bogus.write_text("not a certificate\n")
    with pytest.raises(ConfigError, match="ssl.ca.location") as info:
        tls_security(**{"ssl.ca.location": str(bogus)})
    assert info.value.key == "ssl.ca.location"
