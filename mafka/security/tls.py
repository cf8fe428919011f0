"""TLS for Mafka's listeners and inter-broker client, from Kafka's ``ssl.*`` configs.

Owns three things:

* :class:`TlsSettings` — Kafka's ``ssl.*`` configuration of one listener (or of
  the inter-broker client), validated, with its PEM key store and trust store
  already read and parsed.  Files are read **once, in**
  :meth:`TlsSettings.from_config`; the factories below do no I/O, so a broker
  can build settings at start-up (failing fast on a bad file) and create
  contexts later.  A file changed afterwards is not noticed (Kafka reloads key
  stores only on a dynamic config update).
* Connection creators for Twisted: :func:`server_context_factory` (for
  ``TLSMemoryBIOFactory(creator, False, factory)`` or ``reactor.listenSSL``) and
  :func:`client_connection_creator` (for ``TLSMemoryBIOFactory(creator, True,
  factory)`` / ``connectSSL`` / ``SSL4ClientEndpoint``).  Each builds one
  ``OpenSSL.SSL.Context`` when called and shares it between the connections it
  creates.
* :func:`peer_certificate_subject` — the verified peer certificate's subject
  exactly as Java's ``X500Principal.getName()`` prints it (RFC 2253), the
  string ``ssl.principal.mapping.rules``
  (:mod:`mafka.security.ssl_principal_mapper`) are written against.

Kafka configs read (Kafka's names and defaults; a ``listener`` name makes
``listener.name.<listener, lower case>.ssl.xxx`` win over ``ssl.xxx``, as in
Kafka's ``valuesWithPrefixOverride``):

``ssl.keystore.type`` (PEM), ``ssl.keystore.location``, ``ssl.keystore.key``,
``ssl.keystore.certificate.chain``, ``ssl.keystore.password`` (refused for PEM,
as Kafka does), ``ssl.key.password``, ``ssl.truststore.type`` (PEM),
``ssl.truststore.location``, ``ssl.truststore.certificates``,
``ssl.truststore.password`` (refused for PEM), ``ssl.client.auth`` (none),
``ssl.protocol`` (TLSv1.3), ``ssl.enabled.protocols`` (TLSv1.2,TLSv1.3),
``ssl.cipher.suites`` (empty: OpenSSL's defaults) and
``ssl.endpoint.identification.algorithm`` (https).

Deliberate differences from Kafka, each because OpenSSL is not the JVM:

* Only PEM stores.  Kafka's default store type is JKS; here an unset
  ``ssl.keystore.type``/``ssl.truststore.type`` means PEM, and JKS or PKCS12
  is refused with a message saying so.
* A PEM key store file may hold an unencrypted key without ``ssl.key.password``
  (Kafka 2.8 insisted on a password for a PEM *file*; later Kafka does not).
  A password with an unencrypted key is refused, as in Kafka.  PKCS#8 keys
  (``PRIVATE KEY``, ``ENCRYPTED PRIVATE KEY``) are Kafka's format; traditional
  ``RSA PRIVATE KEY``/``EC PRIVATE KEY`` blocks are accepted too.
* Protocols: only TLSv1.2 and TLSv1.3 (OpenSSL 3 refuses older ones at its
  default security level).  ``ssl.protocol`` caps the versions: ``TLSv1.2``
  excludes TLSv1.3 even when ``ssl.enabled.protocols`` lists it (what Kafka's
  documentation promises); ``TLS`` and ``TLSv1.3`` allow both.
* Cipher suites: Kafka takes JSSE names, which are the IANA names
  (``TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384``); OpenSSL names TLS <= 1.2 suites
  its own way (``ECDHE-RSA-AES256-GCM-SHA384``).  A fixed table
  (:data:`IANA_TO_OPENSSL_CIPHERS`, taken from ``openssl ciphers -stdname``)
  maps every TLS 1.2 suite both JSSE and OpenSSL implement; TLS 1.3 suites have
  the same names in both and go to ``SSL_CTX_set_ciphersuites``.  Unknown names,
  and suites OpenSSL dropped (static ``TLS_ECDH_*``), are refused.  Like JSSE,
  a list with no TLS 1.3 suite rules TLS 1.3 out (and no TLS 1.2 suite rules
  TLS 1.2 out).  ``TLS_EMPTY_RENEGOTIATION_INFO_SCSV`` is accepted and
  ignored (OpenSSL always signals secure renegotiation).
* Host name verification (``https``) is RFC 6125 by ``service_identity``: DNS
  and IP subjectAltNames only, no fall-back to the CN (Java falls back to the
  CN when a certificate has no DNS subjectAltName at all).
* ``ssl.client.auth=requested`` accepts a client without a certificate; a
  client that presents one the trust store does not accept (untrusted CA,
  expired) fails the handshake, as with JSSE's ``wantClientAuth``.
* No trust store configured means OpenSSL's default verify paths (the
  system's CA bundle), the counterpart of the JVM's default ``cacerts``.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Final, Literal, cast

import service_identity
from cryptography import x509
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import dsa, ec, ed448, ed25519, rsa
from OpenSSL import SSL, crypto
from service_identity.cryptography import (
    verify_certificate_hostname,
    verify_certificate_ip_address,
)
from twisted.internet.interfaces import (
    IOpenSSLClientConnectionCreator,
    IOpenSSLContextFactory,
    IOpenSSLServerConnectionCreator,
    ISystemHandle,
)
from twisted.protocols.tls import TLSMemoryBIOProtocol
from twisted.python.failure import Failure
from zope.interface import implementer

from mafka.errors import ConfigError

__all__ = [
    "IANA_TO_OPENSSL_CIPHERS",
    "TLS13_CIPHER_SUITES",
    "CertificateKey",
    "ClientAuth",
    "ClientConnectionCreator",
    "ServerConnectionCreator",
    "TlsSettings",
    "certificate_subject",
    "client_connection_creator",
    "peer_certificate_subject",
    "rfc2253_name",
    "server_context_factory",
]

ClientAuth = Literal["required", "requested", "none"]

# Kafka's config names (SslConfigs, BrokerSecurityConfigs).
SSL_KEYSTORE_TYPE: Final = "ssl.keystore.type"
SSL_KEYSTORE_LOCATION: Final = "ssl.keystore.location"
SSL_KEYSTORE_PASSWORD: Final = "ssl.keystore.password"
SSL_KEYSTORE_KEY: Final = "ssl.keystore.key"
SSL_KEYSTORE_CERTIFICATE_CHAIN: Final = "ssl.keystore.certificate.chain"
SSL_KEY_PASSWORD: Final = "ssl.key.password"
SSL_TRUSTSTORE_TYPE: Final = "ssl.truststore.type"
SSL_TRUSTSTORE_LOCATION: Final = "ssl.truststore.location"
SSL_TRUSTSTORE_PASSWORD: Final = "ssl.truststore.password"
SSL_TRUSTSTORE_CERTIFICATES: Final = "ssl.truststore.certificates"
SSL_CLIENT_AUTH: Final = "ssl.client.auth"
SSL_PROTOCOL: Final = "ssl.protocol"
SSL_ENABLED_PROTOCOLS: Final = "ssl.enabled.protocols"
SSL_CIPHER_SUITES: Final = "ssl.cipher.suites"
SSL_ENDPOINT_IDENTIFICATION_ALGORITHM: Final = "ssl.endpoint.identification.algorithm"

PEM_TYPE: Final = "PEM"
DEFAULT_SSL_PROTOCOL: Final = "TLSv1.3"
DEFAULT_SSL_ENABLED_PROTOCOLS: Final = "TLSv1.2,TLSv1.3"
DEFAULT_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM: Final = "https"
_CLIENT_AUTH_VALUES: Final[tuple[ClientAuth, ...]] = ("required", "requested", "none")

# Oldest first: the order decides what ssl.protocol's cap leaves.
_TLS_VERSIONS: Final = {"TLSv1.2": SSL.TLS1_2_VERSION, "TLSv1.3": SSL.TLS1_3_VERSION}
# ssl.protocol -> the newest version an SSLContext of that protocol negotiates.
_PROTOCOL_CAPS: Final = {"TLS": "TLSv1.3", "TLSv1.3": "TLSv1.3", "TLSv1.2": "TLSv1.2"}

#: TLS 1.3 suites (JSSE and OpenSSL spell them alike) for ``SSL_CTX_set_ciphersuites``.
TLS13_CIPHER_SUITES: Final = frozenset({
    "TLS_AES_128_GCM_SHA256",
    "TLS_AES_256_GCM_SHA384",
    "TLS_CHACHA20_POLY1305_SHA256",
})

#: JSSE/IANA name -> OpenSSL name of every TLS 1.2 suite both implement (from
#: ``openssl ciphers -stdname``; no ARIA, Camellia or CCM, which JSSE lacks, and no PSK,
#: SRP or anonymous suites, which Kafka cannot use).
IANA_TO_OPENSSL_CIPHERS: Final = {
    "TLS_ECDHE_ECDSA_WITH_AES_128_GCM_SHA256": "ECDHE-ECDSA-AES128-GCM-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_GCM_SHA384": "ECDHE-ECDSA-AES256-GCM-SHA384",
    "TLS_ECDHE_ECDSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-ECDSA-CHACHA20-POLY1305",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA256": "ECDHE-ECDSA-AES128-SHA256",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA384": "ECDHE-ECDSA-AES256-SHA384",
    "TLS_ECDHE_ECDSA_WITH_AES_128_CBC_SHA": "ECDHE-ECDSA-AES128-SHA",
    "TLS_ECDHE_ECDSA_WITH_AES_256_CBC_SHA": "ECDHE-ECDSA-AES256-SHA",
    "TLS_ECDHE_RSA_WITH_AES_128_GCM_SHA256": "ECDHE-RSA-AES128-GCM-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384": "ECDHE-RSA-AES256-GCM-SHA384",
    "TLS_ECDHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "ECDHE-RSA-CHACHA20-POLY1305",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA256": "ECDHE-RSA-AES128-SHA256",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA384": "ECDHE-RSA-AES256-SHA384",
    "TLS_ECDHE_RSA_WITH_AES_128_CBC_SHA": "ECDHE-RSA-AES128-SHA",
    "TLS_ECDHE_RSA_WITH_AES_256_CBC_SHA": "ECDHE-RSA-AES256-SHA",
    "TLS_DHE_RSA_WITH_AES_128_GCM_SHA256": "DHE-RSA-AES128-GCM-SHA256",
    "TLS_DHE_RSA_WITH_AES_256_GCM_SHA384": "DHE-RSA-AES256-GCM-SHA384",
    "TLS_DHE_RSA_WITH_CHACHA20_POLY1305_SHA256": "DHE-RSA-CHACHA20-POLY1305",
    "TLS_DHE_RSA_WITH_AES_128_CBC_SHA256": "DHE-RSA-AES128-SHA256",
    "TLS_DHE_RSA_WITH_AES_256_CBC_SHA256": "DHE-RSA-AES256-SHA256",
    "TLS_DHE_RSA_WITH_AES_128_CBC_SHA": "DHE-RSA-AES128-SHA",
    "TLS_DHE_RSA_WITH_AES_256_CBC_SHA": "DHE-RSA-AES256-SHA",
    "TLS_DHE_DSS_WITH_AES_128_GCM_SHA256": "DHE-DSS-AES128-GCM-SHA256",
    "TLS_DHE_DSS_WITH_AES_256_GCM_SHA384": "DHE-DSS-AES256-GCM-SHA384",
    "TLS_DHE_DSS_WITH_AES_128_CBC_SHA256": "DHE-DSS-AES128-SHA256",
    "TLS_DHE_DSS_WITH_AES_256_CBC_SHA256": "DHE-DSS-AES256-SHA256",
    "TLS_DHE_DSS_WITH_AES_128_CBC_SHA": "DHE-DSS-AES128-SHA",
    "TLS_DHE_DSS_WITH_AES_256_CBC_SHA": "DHE-DSS-AES256-SHA",
    "TLS_RSA_WITH_AES_128_GCM_SHA256": "AES128-GCM-SHA256",
    "TLS_RSA_WITH_AES_256_GCM_SHA384": "AES256-GCM-SHA384",
    "TLS_RSA_WITH_AES_128_CBC_SHA256": "AES128-SHA256",
    "TLS_RSA_WITH_AES_256_CBC_SHA256": "AES256-SHA256",
    "TLS_RSA_WITH_AES_128_CBC_SHA": "AES128-SHA",
    "TLS_RSA_WITH_AES_256_CBC_SHA": "AES256-SHA",
}
# JSSE's pseudo-suite; OpenSSL always sends the renegotiation_info extension.
_SCSV: Final = "TLS_EMPTY_RENEGOTIATION_INFO_SCSV"

#: The private key types OpenSSL can sign a handshake with (pyOpenSSL's ``_PrivateKey``).
CertificateKey = (
    rsa.RSAPrivateKey | ec.EllipticCurvePrivateKey | dsa.DSAPrivateKey
    | ed25519.Ed25519PrivateKey | ed448.Ed448PrivateKey
)

# One PEM block: "-----BEGIN LABEL-----" body "-----END LABEL-----".  The body may have lost
# its line breaks (a value written on one properties line), so whitespace is free, as in
# Kafka's PemParser.
_PEM_BLOCK: Final = re.compile(
    r"-----BEGIN ([A-Z0-9 ]+?)-----(.*?)-----END \1-----", re.DOTALL)
# "Name: value" header lines of a traditional encrypted key (Proc-Type, DEK-Info).
_PEM_HEADER: Final = re.compile(r"^\s*([A-Za-z-]+):\s*(\S.*?)\s*$")


# --------------------------------------------------------------------------- settings


@dataclass(frozen=True)
class TlsSettings:
    """One listener's (or the inter-broker client's) TLS configuration, validated and loaded.

    Build with :meth:`from_config`.  ``certificate_chain`` is empty when no key store is
    configured (a client that does not authenticate itself); ``trusted_certificates`` is
    None when no trust store is configured (OpenSSL's default CA paths are trusted).

    Attributes:
        client_auth: ``ssl.client.auth`` (a server's request for client certificates).
        protocol: ``ssl.protocol``.
        enabled_protocols: ``ssl.enabled.protocols`` as configured (empty: all).
        tls_versions: The versions a handshake may use after ``ssl.protocol`` and
            ``ssl.cipher.suites`` are applied, oldest first (never empty).
        cipher_suites: ``ssl.cipher.suites`` as configured, IANA names (empty: defaults).
        openssl_ciphers: The TLS <= 1.2 suites in OpenSSL's names (for
            ``SSL_CTX_set_cipher_list``); empty when ``cipher_suites`` is.
        tls13_ciphersuites: The TLS 1.3 suites configured (for
            ``SSL_CTX_set_ciphersuites``); empty when ``cipher_suites`` is.
        endpoint_identification_algorithm: ``https`` or ``""`` (no host name check).
        certificate_chain: The key store's certificates, leaf first.
        private_key: The key store's private key (decrypted), matching the leaf.
        trusted_certificates: The trust store's certificates, or None for the system's.
        keystore_source: Where the key store came from (``ssl.keystore.location=<path>``
            or ``ssl.keystore.key``), for messages; None without one.
    """

    client_auth: ClientAuth = "none"
    protocol: str = DEFAULT_SSL_PROTOCOL
    enabled_protocols: tuple[str, ...] = ("TLSv1.2", "TLSv1.3")
    tls_versions: tuple[str, ...] = ("TLSv1.2", "TLSv1.3")
    cipher_suites: tuple[str, ...] = ()
    openssl_ciphers: tuple[str, ...] = ()
    tls13_ciphersuites: tuple[str, ...] = ()
    endpoint_identification_algorithm: str = DEFAULT_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM
    certificate_chain: tuple[x509.Certificate, ...] = ()
    # Two settings with the same chain have the same key (it must match the leaf), so the
    # key object (compared by identity) takes no part in equality.
    private_key: CertificateKey | None = field(default=None, repr=False, compare=False)
    trusted_certificates: tuple[x509.Certificate, ...] | None = None
    keystore_source: str | None = None

    @property
    def hostname_verification(self) -> bool:
        """Whether a client checks the server's certificate names its host (``https``)."""
        return self.endpoint_identification_algorithm != ""

    @property
    def has_keystore(self) -> bool:
        """Whether a certificate and key are configured."""
        return self.private_key is not None

    @classmethod
    def from_config(cls, get: Callable[[str], str | None], *,
                    listener: str | None = None) -> TlsSettings:
        """Reads, validates and loads the ``ssl.*`` configs ``get`` returns.

        ``get(key)`` returns a config's raw value or None when it is not set.  With
        ``listener``, ``listener.name.<listener lower-cased>.<key>`` is looked up first.
        PEM files are read here, once.

        Raises:
            ConfigError: (a ``ValueError``) a value Kafka would refuse, a store type other
                than PEM, a combination Kafka refuses (a key without a chain, a key file
                and an inline key, a store password with PEM, ...), a file that cannot be
                read or holds no usable PEM, a key that does not decrypt with (or needs)
                ``ssl.key.password`` or does not match its certificate, an unknown
                protocol or cipher suite.  The message names the config key at fault
                and, for files, the path.
        """
        def lookup(key: str) -> tuple[str, str | None]:
            if listener is not None:
                prefixed = f"listener.name.{listener.lower()}.{key}"
                value = get(prefixed)
                if value is not None:
                    return prefixed, value
            return key, get(key)

        client_auth = _client_auth(*lookup(SSL_CLIENT_AUTH))
        protocol_key, protocol = lookup(SSL_PROTOCOL)
        protocol = (protocol if protocol is not None else DEFAULT_SSL_PROTOCOL).strip()
        if protocol not in _PROTOCOL_CAPS:
            raise ConfigError.for_key(
                protocol_key, "Mafka supports TLSv1.2, TLSv1.3 and TLS", value=protocol)
        enabled_key, enabled_text = lookup(SSL_ENABLED_PROTOCOLS)
        enabled = _parse_list(enabled_text if enabled_text is not None
                              else DEFAULT_SSL_ENABLED_PROTOCOLS)
        for name in enabled:
            if name not in _TLS_VERSIONS:
                raise ConfigError.for_key(
                    enabled_key, f"unsupported protocol {name}: Mafka supports TLSv1.2 and "
                    "TLSv1.3", value=enabled_text)
        cap = list(_TLS_VERSIONS).index(_PROTOCOL_CAPS[protocol])
        versions = [v for i, v in enumerate(_TLS_VERSIONS) if i <= cap and (not enabled or v in enabled)]
        if not versions:
            raise ConfigError.for_key(
                enabled_key, f"none of these protocols is allowed by {protocol_key}={protocol}",
                value=enabled_text)

        suites_key, suites_text = lookup(SSL_CIPHER_SUITES)
        suites = _parse_list(suites_text or "")
        openssl_ciphers, tls13_suites = _map_cipher_suites(suites_key, suites_text, suites)
        if suites:
            # JSSE negotiates a version only with a suite of that version enabled.
            if not openssl_ciphers:
                versions = [v for v in versions if v != "TLSv1.2"]
            if not tls13_suites:
                versions = [v for v in versions if v != "TLSv1.3"]
            if not versions:
                raise ConfigError.for_key(
                    suites_key, "no cipher suite is usable with the enabled protocols "
                    f"{', '.join(enabled) or 'TLSv1.2, TLSv1.3'}", value=suites_text)

        endpoint_key, endpoint = lookup(SSL_ENDPOINT_IDENTIFICATION_ALGORITHM)
        endpoint = (endpoint if endpoint is not None
                    else DEFAULT_SSL_ENDPOINT_IDENTIFICATION_ALGORITHM).strip()
        if endpoint.lower() == "https":
            endpoint = "https"
        elif endpoint:
            raise ConfigError.for_key(
                endpoint_key, "Mafka supports https (verify the server's host name) or an "
                "empty value (do not)", value=endpoint)

        chain, key, source = _load_keystore(lookup)
        trusted = _load_truststore(lookup)
        return cls(
            client_auth=client_auth,
            protocol=protocol,
            enabled_protocols=tuple(enabled),
            tls_versions=tuple(versions),
            cipher_suites=tuple(suites),
            openssl_ciphers=openssl_ciphers,
            tls13_ciphersuites=tls13_suites,
            endpoint_identification_algorithm=endpoint,
            certificate_chain=chain,
            private_key=key,
            trusted_certificates=trusted,
            keystore_source=source,
        )


def _parse_list(text: str) -> list[str]:
    """Kafka's ``ConfigDef.Type.LIST``: comma-separated, trimmed; an empty text is empty."""
    text = text.strip()
    return [item.strip() for item in text.split(",")] if text else []


def _client_auth(key: str, value: str | None) -> ClientAuth:
    """``ssl.client.auth``: KafkaConfig's ``in(required, requested, none)`` validator.

    Raises:
        ConfigError: any other value.
    """
    if value is None:
        return "none"
    for allowed in _CLIENT_AUTH_VALUES:
        if value == allowed:
            return allowed
    raise ConfigError.for_key(key, "String must be one of: required, requested, none",
                              value=value)


def _map_cipher_suites(key: str, text: str | None,
                       suites: list[str]) -> tuple[tuple[str, ...], tuple[str, ...]]:
    """Splits IANA suite names into OpenSSL TLS <= 1.2 names and TLS 1.3 names.

    Raises:
        ConfigError: an unknown name, or one OpenSSL does not implement.
    """
    tls12: list[str] = []
    tls13: list[str] = []
    for name in suites:
        if name in TLS13_CIPHER_SUITES:
            tls13.append(name)
        elif name in IANA_TO_OPENSSL_CIPHERS:
            tls12.append(IANA_TO_OPENSSL_CIPHERS[name])
        elif name == _SCSV:
            continue
        elif name.startswith(("TLS_ECDH_ECDSA_", "TLS_ECDH_RSA_")):
            raise ConfigError.for_key(
                key, f"cipher suite {name} (static ECDH) is not implemented by OpenSSL",
                value=text)
        else:
            raise ConfigError.for_key(
                key, f"unknown cipher suite {name}: use the IANA/JSSE names, e.g. "
                "TLS_ECDHE_RSA_WITH_AES_256_GCM_SHA384 or TLS_AES_128_GCM_SHA256", value=text)
    return tuple(tls12), tuple(tls13)


# --------------------------------------------------------------------------- PEM stores


def _load_keystore(lookup: Callable[[str], tuple[str, str | None]],
                   ) -> tuple[tuple[x509.Certificate, ...], CertificateKey | None, str | None]:
    """Kafka's ``createKeystore`` for PEM: the chain, the key and where they came from.

    Raises:
        ConfigError: as :meth:`TlsSettings.from_config`.
    """
    type_key, store_type = lookup(SSL_KEYSTORE_TYPE)
    _require_pem(type_key, store_type, "key")
    location_key, location = lookup(SSL_KEYSTORE_LOCATION)
    password_key, password = lookup(SSL_KEYSTORE_PASSWORD)
    key_password_key, key_password = lookup(SSL_KEY_PASSWORD)
    inline_key_key, inline_key = lookup(SSL_KEYSTORE_KEY)
    chain_key, inline_chain = lookup(SSL_KEYSTORE_CERTIFICATE_CHAIN)
    if password is not None:
        raise ConfigError(
            "SSL key store password cannot be specified with PEM format, only key password "
            f"may be specified ({password_key} is set)", password_key)
    if inline_key is not None:
        if inline_chain is None:
            raise ConfigError(
                f"SSL private key is specified ({inline_key_key}), but certificate chain is not "
                f"specified ({chain_key})", chain_key)
        if location is not None:
            raise ConfigError(
                f"Both SSL key store location ({location_key}) and separate private key "
                f"({inline_key_key}) are specified.", location_key)
        key = _load_private_key(inline_key, inline_key_key, inline_key_key,
                                key_password, key_password_key)
        chain = _load_certificates(inline_chain, chain_key, chain_key)
        source = inline_key_key
    elif inline_chain is not None:
        raise ConfigError(
            f"SSL certificate chain is specified ({chain_key}), but private key is not "
            f"specified ({inline_key_key})", inline_key_key)
    elif location is not None:
        source = f"{location_key}={location}"
        text = _read_pem_file(location, location_key, "keystore")
        key = _load_private_key(text, location_key, source, key_password, key_password_key)
        chain = _load_certificates(text, location_key, source)
    else:
        return (), None, None
    if chain[0].public_key() != key.public_key():
        raise ConfigError(
            f"Invalid PEM key store ({source}): the first certificate (subject "
            f"{certificate_subject(chain[0])}) does not belong to the private key; put the "
            "key's own certificate first", location_key if location is not None else chain_key)
    return chain, key, source


def _load_truststore(lookup: Callable[[str], tuple[str, str | None]],
                     ) -> tuple[x509.Certificate, ...] | None:
    """Kafka's ``createTruststore`` for PEM: the trusted certificates, or None.

    Raises:
        ConfigError: as :meth:`TlsSettings.from_config`.
    """
    type_key, store_type = lookup(SSL_TRUSTSTORE_TYPE)
    _require_pem(type_key, store_type, "trust")
    location_key, location = lookup(SSL_TRUSTSTORE_LOCATION)
    password_key, password = lookup(SSL_TRUSTSTORE_PASSWORD)
    inline_key, inline = lookup(SSL_TRUSTSTORE_CERTIFICATES)
    if password is not None:
        raise ConfigError("SSL trust store password cannot be specified for PEM format "
                          f"({password_key} is set)", password_key)
    if inline is not None:
        if location is not None:
            raise ConfigError(
                f"Both SSL trust store location ({location_key}) and separate trust "
                f"certificates ({inline_key}) are specified.", location_key)
        return _load_certificates(inline, inline_key, inline_key)
    if location is not None:
        source = f"{location_key}={location}"
        return _load_certificates(_read_pem_file(location, location_key, "truststore"),
                                  location_key, source)
    return None


def _require_pem(key: str, store_type: str | None, store: str) -> None:
    """Refuses a store type other than PEM (unset counts as PEM).

    Raises:
        ConfigError: JKS, PKCS12 or anything else.
    """
    if store_type is None or store_type.strip() == PEM_TYPE:
        return
    raise ConfigError.for_key(
        key, f"Mafka supports only PEM {store} stores (JKS and PKCS12 are not supported: "
        "convert the store to PEM, e.g. with keytool -importkeystore and openssl pkcs12)",
        value=store_type)


def _read_pem_file(path: str, key: str, store: str) -> str:
    """The text of a PEM file.

    Raises:
        ConfigError: it cannot be read (Kafka: ``Failed to load PEM SSL keystore <path>``).
    """
    try:
        with open(path, encoding="ascii", errors="replace") as f:
            return f.read()
    except OSError as exc:
        raise ConfigError(
            f"Failed to load PEM SSL {store} {path} (set by {key}): {exc.strerror or exc}",
            key, path) from exc


def _pem_blocks(text: str, wanted: Callable[[str], bool]) -> list[tuple[str, str]]:
    """The PEM blocks of ``text`` whose label ``wanted`` accepts, normalised.

    Each is ``(label, pem)`` where ``pem`` has its line breaks restored (headers on lines of
    their own, the base64 wrapped at 64), which cryptography's loaders need; ``text`` may
    have lost them (an inline config value).
    """
    blocks: list[tuple[str, str]] = []
    for m in _PEM_BLOCK.finditer(text):
        label = m.group(1).strip()
        if not wanted(label):
            continue
        body = m.group(2)
        headers: list[str] = []
        # Headers only survive where line breaks did (traditional encrypted keys).
        lines = body.splitlines()
        while lines and (not lines[0].strip() or _PEM_HEADER.match(lines[0])):
            header = lines.pop(0).strip()
            if header:
                headers.append(header)
        b64 = re.sub(r"\s+", "", "".join(lines))
        wrapped = "\n".join(b64[i:i + 64] for i in range(0, len(b64), 64))
        head = "".join(h + "\n" for h in headers) + ("\n" if headers else "")
        blocks.append((label, f"-----BEGIN {label}-----\n{head}{wrapped}\n-----END {label}-----\n"))
    return blocks


def _load_certificates(text: str, key: str, source: str) -> tuple[x509.Certificate, ...]:
    """Every ``CERTIFICATE`` block of ``text``, in order.

    Raises:
        ConfigError: none, or one that does not parse.
    """
    blocks = _pem_blocks(text, lambda label: label in ("CERTIFICATE", "X509 CERTIFICATE",
                                                        "TRUSTED CERTIFICATE"))
    if not blocks:
        raise ConfigError(
            f"Invalid PEM store ({source}): at least one certificate expected, but none found",
            key)
    certificates = []
    for index, (_label, pem) in enumerate(blocks, 1):
        try:
            certificates.append(x509.load_pem_x509_certificate(pem.encode("ascii")))
        except (ValueError, UnicodeEncodeError) as exc:
            raise ConfigError(
                f"Invalid PEM store ({source}): certificate {index} does not parse: {exc}",
                key) from exc
    return tuple(certificates)


def _load_private_key(text: str, key: str, source: str, password: str | None,
                      password_key: str) -> CertificateKey:
    """The one private key of ``text``, decrypted with ``password`` (``ssl.key.password``).

    Raises:
        ConfigError: no key or more than one (Kafka's messages), a key that is encrypted
            without a password, unencrypted with one, does not decrypt with it, does not
            parse, or is of a type TLS cannot use.
    """
    blocks = _pem_blocks(text, lambda label: label.endswith("PRIVATE KEY"))
    if not blocks:
        raise ConfigError(f"Invalid PEM key store ({source}): Private key not provided", key)
    if len(blocks) != 1:
        raise ConfigError(
            f"Invalid PEM key store ({source}): Expected one private key, but found "
            f"{len(blocks)}", key)
    label, pem = blocks[0]
    encrypted = label == "ENCRYPTED PRIVATE KEY" or "ENCRYPTED" in pem.split("\n", 2)[1]
    if encrypted and password is None:
        raise ConfigError(
            f"Invalid PEM key store ({source}): the private key is encrypted, but "
            f"{password_key} is not set", password_key)
    if not encrypted and password is not None:
        raise ConfigError(
            f"Invalid PEM key store ({source}): {password_key} is set, but the private key "
            "is not encrypted", password_key)
    try:
        loaded = serialization.load_pem_private_key(
            pem.encode("ascii"), password.encode("utf-8") if password is not None else None)
    except (ValueError, TypeError, UnicodeEncodeError) as exc:
        if encrypted:
            raise ConfigError(
                f"Invalid PEM key store ({source}): the private key could not be decrypted "
                f"with {password_key} (wrong password?)", password_key) from exc
        raise ConfigError(
            f"Invalid PEM key store ({source}): Private key could not be loaded: {exc}",
            key) from exc
    if not isinstance(loaded, (rsa.RSAPrivateKey, ec.EllipticCurvePrivateKey, dsa.DSAPrivateKey,
                               ed25519.Ed25519PrivateKey, ed448.Ed448PrivateKey)):
        raise ConfigError(
            f"Invalid PEM key store ({source}): a {type(loaded).__name__} cannot sign a TLS "
            "handshake", key)
    return loaded


# --------------------------------------------------------------------------- contexts


def _build_context(settings: TlsSettings, *, server: bool) -> SSL.Context:
    """An OpenSSL context for ``settings``, client or server side.

    Raises:
        ValueError: the linked OpenSSL does not implement a configured cipher suite.
    """
    ctx = SSL.Context(SSL.TLS_METHOD)
    ctx.set_min_proto_version(_TLS_VERSIONS[settings.tls_versions[0]])
    ctx.set_max_proto_version(_TLS_VERSIONS[settings.tls_versions[-1]])
    # No TLS compression (CRIME); the server picks the suite from its own preference
    # order; no session tickets (nothing to rotate ticket keys, as Twisted's default).
    ctx.set_options(SSL.OP_NO_COMPRESSION | SSL.OP_CIPHER_SERVER_PREFERENCE | SSL.OP_NO_TICKET)
    if settings.openssl_ciphers or settings.tls13_ciphersuites:
        _set_ciphers(ctx, settings)
    if settings.private_key is not None:
        ctx.use_certificate(settings.certificate_chain[0])
        for extra in settings.certificate_chain[1:]:
            ctx.add_extra_chain_cert(extra)
        ctx.use_privatekey(settings.private_key)
        ctx.check_privatekey()
    if settings.trusted_certificates is None:
        ctx.set_default_verify_paths()
    else:
        store = ctx.get_cert_store()
        if store is None:  # OpenSSL always gives a new SSL_CTX a store
            raise RuntimeError("the OpenSSL context has no certificate store")
        for certificate in settings.trusted_certificates:
            # X509Store.add_cert takes pyOpenSSL's X509 only.
            store.add_cert(crypto.X509.from_cryptography(certificate))
    if server:
        if settings.client_auth != "none" and settings.trusted_certificates is not None:
            # The CertificateRequest names the acceptable issuers, as JSSE's does.
            for certificate in settings.trusted_certificates:
                ctx.add_client_ca(certificate)
        mode = SSL.VERIFY_NONE
        if settings.client_auth == "requested":
            mode = SSL.VERIFY_PEER | SSL.VERIFY_CLIENT_ONCE
        elif settings.client_auth == "required":
            mode = SSL.VERIFY_PEER | SSL.VERIFY_FAIL_IF_NO_PEER_CERT | SSL.VERIFY_CLIENT_ONCE
        ctx.set_verify(mode)
        # OpenSSL refuses to resume sessions of a client-authenticated server without a
        # session id context; sessions are not cached anyway.
        ctx.set_session_id(b"mafka")
        ctx.set_session_cache_mode(SSL.SESS_CACHE_OFF)
    else:
        # A Kafka client always verifies the server's chain; only the host name check is
        # optional (done per connection by ClientConnectionCreator).
        ctx.set_verify(SSL.VERIFY_PEER | SSL.VERIFY_FAIL_IF_NO_PEER_CERT)
    return ctx


def _set_ciphers(ctx: SSL.Context, settings: TlsSettings) -> None:
    """Restricts ``ctx`` to the configured suites.

    Raises:
        ValueError: the linked OpenSSL lacks one of them (OpenSSL itself would silently
            drop it from a list with other, known, names).
    """
    for name in settings.openssl_ciphers:
        try:
            SSL.Context(SSL.TLS_METHOD).set_cipher_list(name.encode("ascii"))
        except SSL.Error as exc:
            raise ValueError(f"cipher suite {name} ({SSL_CIPHER_SUITES}) is not available in "
                             f"{SSL.SSLeay_version(SSL.SSLEAY_VERSION).decode()}") from exc
    if settings.openssl_ciphers:
        ctx.set_cipher_list(":".join(settings.openssl_ciphers).encode("ascii"))
    # An empty TLS 1.3 list is valid (tls_versions then excludes TLS 1.3 already).
    ctx.set_tls13_ciphersuites(":".join(settings.tls13_ciphersuites).encode("ascii"))


@implementer(IOpenSSLServerConnectionCreator, IOpenSSLContextFactory)
class ServerConnectionCreator:
    """Creates the server side of TLS connections for one listener (one shared context).

    Provides ``IOpenSSLServerConnectionCreator`` (``TLSMemoryBIOFactory(creator, False,
    factory)``) and ``IOpenSSLContextFactory`` (``reactor.listenSSL``).
    """

    def __init__(self, context: SSL.Context) -> None:
        self._context = context

    def serverConnectionForTLS(self, tlsProtocol: TLSMemoryBIOProtocol) -> SSL.Connection:  # Twisted's interface
        """A new server-side connection (Twisted puts it in accept state)."""
        return SSL.Connection(self._context, None)

    def getContext(self) -> SSL.Context:  # Twisted's interface
        """The shared context."""
        return self._context


@implementer(IOpenSSLClientConnectionCreator)
class ClientConnectionCreator:
    """Creates the client side of TLS connections to one host (one shared context).

    Sends the host name as SNI when it is a DNS name; with host name verification, fails
    the handshake unless the server's certificate names the host (a DNS or IP
    subjectAltName, RFC 6125 via ``service_identity``); the chain is verified always.
    """

    def __init__(self, context: SSL.Context, hostname: str, *, verify_hostname: bool) -> None:
        self._context = context
        self._hostname = hostname
        self._verify_hostname = verify_hostname
        self._ip: str | None
        try:
            self._ip = str(ipaddress.ip_address(hostname))
        except ValueError:
            self._ip = None
        self._server_name: bytes | None = None
        if self._ip is None:
            try:
                self._server_name = hostname.encode("idna")
            except UnicodeError:
                self._server_name = None  # no SNI for a name IDNA cannot encode

    def clientConnectionForTLS(self, tlsProtocol: TLSMemoryBIOProtocol) -> SSL.Connection:  # Twisted's interface
        """A new client-side connection (Twisted puts it in connect state)."""
        connection = SSL.Connection(self._context, None)
        if self._server_name is not None:
            connection.set_tlsext_host_name(self._server_name)
        if self._verify_hostname:
            connection.set_verify(SSL.VERIFY_PEER | SSL.VERIFY_FAIL_IF_NO_PEER_CERT,
                                  self._hostname_check(tlsProtocol))
        return connection

    def _hostname_check(self, protocol: TLSMemoryBIOProtocol,
                        ) -> Callable[[SSL.Connection, crypto.X509, int, int, int], bool]:
        """OpenSSL's verify callback: the chain's verdict, and the host name at depth 0."""
        # Cleared after its one use, so the connection does not keep the protocol alive.
        pending: list[TLSMemoryBIOProtocol] = [protocol]

        def verify(connection: SSL.Connection, certificate: crypto.X509, error: int,
                   depth: int, ok: int) -> bool:
            if depth != 0 or not ok:
                return bool(ok)
            try:
                leaf = certificate.to_cryptography()
                if self._ip is not None:
                    verify_certificate_ip_address(leaf, self._ip)
                else:
                    verify_certificate_hostname(leaf, self._hostname)
            except (service_identity.VerificationError, service_identity.CertificateError) as exc:
                # The reason the protocol's connectionLost reports, instead of a bare
                # "certificate verify failed".
                if pending:
                    # TLSMemoryBIOProtocol.failVerification has no annotations.
                    fail = cast(Callable[[Failure], None], pending.pop().failVerification)
                    fail(Failure(exc))
                return False
            except Exception:  # an exception must not escape into OpenSSL's callback
                pending.clear()
                return False
            pending.clear()
            return True

        return verify


def server_context_factory(settings: TlsSettings) -> ServerConnectionCreator:
    """What Twisted needs for a TLS listener with ``settings``.

    The server presents the key store's chain, offers ``settings.tls_versions`` and the
    configured suites, and per ``ssl.client.auth`` requests (``requested``) or requires
    (``required``) a client certificate that chains to the trust store; with ``none`` it
    asks for none.  A client certificate that does not verify fails the handshake.

    Raises:
        ConfigError: (a ``ValueError``) no key store is configured (a server needs a
            certificate).
        ValueError: the linked OpenSSL lacks a configured cipher suite.
    """
    if settings.private_key is None:
        raise ConfigError(
            f"a TLS listener needs a key store: set {SSL_KEYSTORE_LOCATION} (a PEM file with "
            f"the private key and the certificate chain) or {SSL_KEYSTORE_KEY} and "
            f"{SSL_KEYSTORE_CERTIFICATE_CHAIN}", SSL_KEYSTORE_LOCATION)
    return ServerConnectionCreator(_build_context(settings, server=True))


def client_connection_creator(settings: TlsSettings, hostname: str) -> ClientConnectionCreator:
    """What Twisted needs to connect with TLS to ``hostname`` (a DNS name or an IP address).

    The server's chain must verify against the trust store (or the system's CAs when none
    is configured); with ``ssl.endpoint.identification.algorithm=https`` its certificate
    must also name ``hostname``.  The key store, when configured, is the client's
    certificate.  Builds a new context on each call (a few milliseconds); reuse the
    creator for connections to the same host.

    Raises:
        ValueError: the linked OpenSSL lacks a configured cipher suite.
    """
    return ClientConnectionCreator(_build_context(settings, server=False), hostname,
                                   verify_hostname=settings.hostname_verification)


# --------------------------------------------------------------------------- peer identity


def peer_certificate_subject(transport: object) -> str | None:
    """The peer certificate's subject as ``X500Principal.getName()``, or None without one.

    ``transport`` is the TLS transport of a connection (a ``TLSMemoryBIOProtocol``: the
    wrapped protocol's ``self.transport``), after the handshake.  On a server, a client
    certificate is present only when ``ssl.client.auth`` asked for it and it verified (a
    certificate that does not verify fails the handshake), so the subject is a verified
    one.  None for a transport that is not TLS or a peer without a certificate.
    """
    if not ISystemHandle.providedBy(transport):
        return None
    handle = ISystemHandle(transport).getHandle()
    if not isinstance(handle, SSL.Connection):
        return None
    certificate = handle.get_peer_certificate(as_cryptography=True)
    if certificate is None:
        return None
    return certificate_subject(certificate)


def certificate_subject(certificate: x509.Certificate) -> str:
    """``certificate``'s subject as Java's ``X500Principal.getName()`` prints it.

    Read from the certificate's own DER bytes, so string types and values are exactly what
    the JVM would see.
    """
    return rfc2253_name(_subject_der(certificate.tbs_certificate_bytes))


# RFC 2253 keywords Java's X500Principal.getName() prints (AVAKeyword's rfc2253 column); any
# other attribute is printed as its dotted OID with a '#'-hex DER value.
_RFC2253_KEYWORDS: Final = {
    "2.5.4.3": "CN", "2.5.4.6": "C", "2.5.4.7": "L", "2.5.4.8": "ST", "2.5.4.10": "O",
    "2.5.4.11": "OU", "2.5.4.9": "STREET", "0.9.2342.19200300.100.1.25": "DC",
    "0.9.2342.19200300.100.1.1": "UID",
}
# DER string tags Java prints as text (AVA.isDerString, non-canonical) and their charsets.
_STRING_CHARSETS: Final = {
    0x0C: "utf-8",        # UTF8String
    0x13: "latin-1",      # PrintableString
    0x14: "latin-1",      # T61String
    0x16: "latin-1",      # IA5String
    0x1B: "latin-1",      # GeneralString
    0x1E: "utf-16-be",    # BMPString
}
_ESCAPED: Final = frozenset(',=+<>#;"\\')


def rfc2253_name(name_der: bytes) -> str:
    """The DER ``Name`` ``name_der`` as Java's ``X500Principal.getName()`` (RFC 2253) prints it.

    Most specific RDN first, ``,`` between RDNs, ``+`` between the attributes of a
    multi-valued RDN (in their encoded order); keywords CN, C, L, ST, O, OU, STREET, DC,
    UID, other attributes as dotted OIDs with ``#`` and the value's DER in lower-case hex;
    in text values ``, = + < > # ; " \\`` are escaped with ``\\``, a NUL as ``\\00``, and
    leading and trailing spaces (and CRs) with ``\\`` (Java's ``AVA.toRFC2253String``).

    Raises:
        ValueError: ``name_der`` is not a DER Name.
    """
    tag, start, end = _der_element(name_der, 0)
    if tag != 0x30 or end != len(name_der):
        raise ValueError("not a DER Name")
    rdns: list[str] = []
    pos = start
    while pos < end:
        set_tag, set_start, set_end = _der_element(name_der, pos)
        if set_tag != 0x31:
            raise ValueError("a Name's RDN is not a SET")
        avas: list[str] = []
        ava_pos = set_start
        while ava_pos < set_end:
            seq_tag, seq_start, seq_end = _der_element(name_der, ava_pos)
            oid_tag, oid_start, oid_end = _der_element(name_der, seq_start)
            if seq_tag != 0x30 or oid_tag != 0x06:
                raise ValueError("a Name's attribute is not an OID and a value")
            value_tag, value_start, value_end = _der_element(name_der, oid_end)
            avas.append(_ava_rfc2253(_decode_oid(name_der[oid_start:oid_end]), value_tag,
                                     name_der[oid_end:value_end],
                                     name_der[value_start:value_end]))
            ava_pos = seq_end
        rdns.append("+".join(avas))
        pos = set_end
    return ",".join(reversed(rdns))


def _ava_rfc2253(oid: str, tag: int, encoded: bytes, content: bytes) -> str:
    """One attribute as ``AVA.toRFC2253String``."""
    keyword = _RFC2253_KEYWORDS.get(oid)
    charset = _STRING_CHARSETS.get(tag)
    if keyword is None or charset is None:
        return f"{keyword or oid}=#{encoded.hex()}"
    text = content.decode(charset, errors="replace")
    chars: list[str] = []
    for c in text:
        if c in _ESCAPED:
            chars.append("\\" + c)
        elif c == "\0":
            chars.append("\\00")
        else:
            chars.append(c)
    # Leading and trailing spaces/CRs are escaped after the escaping above (Java works on
    # the escaped text's characters, so an escaped character counts as two).
    flat = "".join(chars)
    lead = len(flat) - len(flat.lstrip(" \r"))
    trail = len(flat.rstrip(" \r"))
    out = [("\\" + c) if i < lead or i >= trail else c for i, c in enumerate(flat)]
    return f"{keyword}={''.join(out)}"


def _der_element(data: bytes, pos: int) -> tuple[int, int, int]:
    """The DER element at ``pos``: (tag, start of its content, end of it).

    Raises:
        ValueError: truncated, a multi-byte tag, or an indefinite or oversized length.
    """
    try:
        tag = data[pos]
        if tag & 0x1F == 0x1F:
            raise ValueError("multi-byte DER tags are not expected in a certificate name")
        length = data[pos + 1]
        start = pos + 2
        if length & 0x80:
            count = length & 0x7F
            if count == 0 or count > 4:
                raise ValueError("unsupported DER length")
            length = int.from_bytes(data[start:start + count], "big")
            start += count
    except IndexError as exc:
        raise ValueError("truncated DER") from exc
    end = start + length
    if end > len(data):
        raise ValueError("truncated DER")
    return tag, start, end


def _decode_oid(body: bytes) -> str:
    """A DER OBJECT IDENTIFIER's content as dotted decimal."""
    arcs: list[int] = []
    value = 0
    for byte in body:
        value = (value << 7) | (byte & 0x7F)
        if not byte & 0x80:
            arcs.append(value)
            value = 0
    if not arcs:
        raise ValueError("empty OID")
    first = arcs[0]
    head = [0, first] if first < 40 else [1, first - 40] if first < 80 else [2, first - 80]
    return ".".join(str(arc) for arc in head + arcs[1:])


def _subject_der(tbs: bytes) -> bytes:
    """The subject Name's DER inside a TBSCertificate's DER.

    TBSCertificate ::= SEQUENCE { [0] version OPTIONAL, serialNumber, signature,
    issuer, validity, subject, ... }.

    Raises:
        ValueError: not a TBSCertificate.
    """
    try:
        tag, pos, _end = _der_element(tbs, 0)
        if tag != 0x30:
            raise ValueError("not a TBSCertificate")
        if tbs[pos] == 0xA0:  # explicit [0] version
            pos = _der_element(tbs, pos)[2]
        for _skipped in ("serialNumber", "signature", "issuer", "validity"):
            pos = _der_element(tbs, pos)[2]
        subject_end = _der_element(tbs, pos)[2]
    except IndexError as exc:
        raise ValueError("truncated TBSCertificate") from exc
    return tbs[pos:subject_end]
