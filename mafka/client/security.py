"""How the client secures its connections: TLS contexts, SASL settings, authentication errors.

:func:`client_security` turns a parsed :class:`~mafka.client.config.ClientConfig`
(librdkafka's ``security.protocol``, ``ssl.*`` and ``sasl.*`` keys, see
:mod:`mafka.client.config`) into one immutable :class:`ClientSecurity`, which
the :class:`~mafka.client.kernel.Kernel` hands to every
:class:`~mafka.client.transport.BrokerConnection` it opens; the transport does
the TLS handshake and the SASL exchange with it.  The TLS context is built
once, when the client is created, so that a bad PEM file or key password is a
:class:`~mafka.errors.ConfigError` then (as librdkafka fails ``rd_kafka_new``),
not a connection failure later.

The authentication errors live here too.  :class:`AuthenticationFailed` is a
:class:`ConnectionError`: the connection could not be established, and every
retry loop in the client already handles that (with backoff).  Its
``error`` is what the kernel reports through ``error_cb``, with librdkafka's
code (``_AUTHENTICATION``, :data:`AUTHENTICATION_ERROR`).  Its subclasses are
also the :mod:`mafka.errors` exception of the broker's error code
(``SASL_AUTHENTICATION_FAILED``, ``UNSUPPORTED_SASL_MECHANISM``), so code that
maps protocol exceptions to confluent-kafka's
(:func:`mafka.client.admin_core.kafka_exception`) reports that code and the
broker's message, as Java's ``SaslAuthenticationException`` does, rather than
a transport failure.
"""

from __future__ import annotations

import ssl
from dataclasses import dataclass, field

from mafka.client.config import SASL_PROTOCOLS, TLS_PROTOCOLS, ClientConfig
from mafka.client.kafka_error import KafkaError
from mafka.errors import (
    ConfigError,
    ErrorCode,
    SaslAuthenticationFailedError,
    UnsupportedSaslMechanismError,
)

__all__ = [
    "AUTHENTICATION_ERROR",
    "SSL_ERROR",
    "AuthenticationFailed",
    "ClientSecurity",
    "SaslAuthenticationFailed",
    "SaslMechanismRejected",
    "client_security",
    "tls_context",
]


#: librdkafka's ``RD_KAFKA_RESP_ERR__AUTHENTICATION`` ("Local: Authentication failure"): the code
#: confluent-kafka's ``error_cb`` gets for a failed SASL exchange (librdkafka turns the broker's
#: SASL_AUTHENTICATION_FAILED into it): ``KafkaError._AUTHENTICATION``.
AUTHENTICATION_ERROR = KafkaError._AUTHENTICATION
#: librdkafka's ``RD_KAFKA_RESP_ERR__SSL`` ("Local: SSL error"), for a failed TLS handshake: ``KafkaError._SSL``.
SSL_ERROR = KafkaError._SSL


@dataclass(frozen=True, slots=True)
class ClientSecurity:
    """What a connection needs beyond plaintext.

    Attributes:
        protocol: ``ssl``, ``sasl_plaintext`` or ``sasl_ssl`` (a plaintext client has none).
        ssl_context: the TLS context when ``protocol`` uses TLS, else None.
        mechanism: the SASL mechanism (``PLAIN``, ``SCRAM-SHA-256``, ``SCRAM-SHA-512``)
            when ``protocol`` uses SASL, else None; then ``username`` and ``password`` are set.
    """

    protocol: str
    ssl_context: ssl.SSLContext | None = None
    mechanism: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)


def client_security(config: ClientConfig) -> ClientSecurity | None:
    """The security of ``config``'s connections; None for ``security.protocol=plaintext``.

    Raises:
        ConfigError: a PEM file that cannot be loaded (not PEM, a key that does
            not match its certificate, a wrong ``ssl.key.password``).
    """
    protocol: str = config["security.protocol"]
    if protocol not in TLS_PROTOCOLS and protocol not in SASL_PROTOCOLS:
        return None
    context = None
    if protocol in TLS_PROTOCOLS:
        context = tls_context(
            ca_location=config["ssl.ca.location"],
            certificate_location=config["ssl.certificate.location"],
            key_location=config["ssl.key.location"],
            key_password=config["ssl.key.password"],
            verify_certificate=bool(config["enable.ssl.certificate.verification"]),
            verify_hostname=config["ssl.endpoint.identification.algorithm"] == "https",
        )
    if protocol not in SASL_PROTOCOLS:
        return ClientSecurity(protocol, context)
    return ClientSecurity(protocol, context, config["sasl.mechanisms"], config["sasl.username"],
                          config["sasl.password"])


def tls_context(*, ca_location: str | None = None, certificate_location: str | None = None,
                key_location: str | None = None, key_password: str | None = None,
                verify_certificate: bool = True, verify_hostname: bool = True) -> ssl.SSLContext:
    """A client TLS context: the system's CAs or ``ca_location``'s (``probe``: the system's),
    and a client certificate when ``certificate_location`` is given (its key in
    ``key_location``, or in the same file).

    Raises:
        ConfigError: a file that cannot be read or is not valid PEM, or a key that
            the password does not decrypt or does not match the certificate.
    """
    cafile = None if ca_location in (None, "probe") else ca_location
    try:
        context = ssl.create_default_context(cafile=cafile)
    except (ssl.SSLError, OSError) as exc:
        raise ConfigError(f'"ssl.ca.location" {ca_location}: cannot load CA certificates: {exc}',
                          "ssl.ca.location", ca_location) from exc
    if not verify_certificate:
        context.check_hostname = False  # must go first: CERT_NONE with a host name check is refused
        context.verify_mode = ssl.CERT_NONE
    else:
        context.check_hostname = verify_hostname
    if certificate_location is not None:
        try:
            context.load_cert_chain(certificate_location, key_location, key_password)
        except (ssl.SSLError, OSError) as exc:
            raise ConfigError(
                f'"ssl.certificate.location" {certificate_location}'
                + (f' / "ssl.key.location" {key_location}' if key_location else "")
                + f": cannot load the certificate and key (not PEM, a key that does not match, "
                f'or a wrong "ssl.key.password"?): {exc}',
                "ssl.certificate.location", certificate_location) from exc
    return context


class AuthenticationFailed(ConnectionError):
    """A broker refused to authenticate this client (or its answer failed the client's checks).

    Not worth retrying at once: the same credentials will fail again.  ``str()``
    names the broker (``host:port: message``); :attr:`message` is the broker's
    own text (Java's ``SaslAuthenticationException`` message); :attr:`error` is
    the confluent-kafka error value reported through ``error_cb``.
    """

    def __init__(self, message: str, where: str = "") -> None:
        super().__init__(f"{where}: {message}" if where else message)
        self.message = message

    @property
    def error(self) -> KafkaError:
        """The non-retriable confluent-kafka error value for this failure, as librdkafka reports it."""
        return KafkaError(self.error_code, str(self), retriable=False)

    @property
    def error_code(self) -> int:
        """librdkafka's code: ``_AUTHENTICATION`` (:data:`AUTHENTICATION_ERROR`)."""
        return AUTHENTICATION_ERROR


class SaslAuthenticationFailed(AuthenticationFailed, SaslAuthenticationFailedError):
    """SaslAuthenticate failed (Kafka's SASL_AUTHENTICATION_FAILED, 58): wrong credentials,
    an unknown user, or a server whose SCRAM signature does not check out."""


class SaslMechanismRejected(AuthenticationFailed, UnsupportedSaslMechanismError):
    """SaslHandshake named a mechanism the broker has not enabled (UNSUPPORTED_SASL_MECHANISM, 33).

    Attributes:
        mechanisms: the broker's enabled mechanisms, from its answer.
    """

    def __init__(self, message: str, where: str = "", mechanisms: tuple[str, ...] = ()) -> None:
        super().__init__(message, where)
        self.mechanisms = mechanisms

    @property
    def error_code(self) -> int:
        """The broker's UNSUPPORTED_SASL_MECHANISM, which librdkafka passes on as it is."""
        return int(ErrorCode.UNSUPPORTED_SASL_MECHANISM)
