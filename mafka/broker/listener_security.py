"""What one listener demands of its connections: TLS, SASL mechanisms, and how a principal is named.

:class:`ListenerSecurity` is built per listener from the broker's config
(:func:`listener_security`) and handed to that listener's
:class:`~mafka.broker.network.KafkaServerFactory`:

* ``SASL_PLAINTEXT`` / ``SASL_SSL``: each connection gets a
  :class:`~mafka.broker.sasl_authenticator.SaslServerAuthenticator` over the
  listener's ``sasl.enabled.mechanisms``; PLAIN checks the users of the
  listener's JAAS config (``user_<name>="<password>"``), SCRAM the
  credentials in ``/config/users/<user>`` (through the broker's cache).
  Until it authenticates a connection may send frames of at most
  ``sasl.server.max.receive.size`` bytes.
* ``SSL``: the principal is the client certificate's subject mapped by
  ``ssl.principal.mapping.rules`` (``User:ANONYMOUS`` without a certificate).
* ``PLAINTEXT``: everyone is ``User:ANONYMOUS``.

Per-listener keys win over the broker-wide ones as in Kafka:
``listener.name.<listener>.<key>`` and, for JAAS,
``listener.name.<listener>.<mechanism>.sasl.jaas.config`` (both lower case).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Final

from mafka.broker.scram import ScramCredential, ScramMechanism
from mafka.errors import ConfigError
from mafka.interbroker.security import InterBrokerSecurity
from mafka.security.jaas import JaasEntry, parse_jaas_config, plain_users
from mafka.security.principal import ANONYMOUS, USER_TYPE, KafkaPrincipal
from mafka.security.sasl import SaslServer
from mafka.security.sasl_servers import create_sasl_server
from mafka.security.ssl_principal_mapper import SslPrincipalMapper
from mafka.security.tls import TlsSettings, client_connection_creator, server_context_factory

from .sasl_authenticator import SaslServerAuthenticator

__all__ = [
    "SUPPORTED_MECHANISMS",
    "ListenerSecurity",
    "interbroker_security",
    "listener_config",
    "listener_security",
]

#: The SASL mechanisms Mafka implements (Kafka also has GSSAPI and OAUTHBEARER).
SUPPORTED_MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
#: Kafka's ``sasl.server.max.receive.size`` default: the largest frame before authentication.
DEFAULT_SASL_MAX_RECEIVE: Final = 524288


def listener_config(config: Any, listener: str, key: str) -> str | None:
    """A raw config value for *listener*: ``listener.name.<l>.<key>`` first, then ``<key>``."""
    for name in (f"listener.name.{listener.lower()}.{key}", key):
        value = _raw(config, name)
        if value is not None:
            return value
    return None


def _raw(config: Any, key: str) -> str | None:
    try:
        value = config.get(key)
    except KeyError:
        return None
    if value is None:
        return None
    if isinstance(value, (list, tuple)):
        return ",".join(str(v) for v in value)
    return str(value)


@dataclass(frozen=True)
class ListenerSecurity:
    """How one listener authenticates and names its connections."""

    name: str
    security_protocol: str
    enabled_mechanisms: tuple[str, ...] = ()
    create_sasl_server: Callable[[str], SaslServer] | None = None
    reauth_ms: int = 0
    failed_delay_ms: int = 100
    sasl_max_receive_size: int = DEFAULT_SASL_MAX_RECEIVE
    #: a TLS listener's context factory (see :mod:`mafka.security.tls`); None for plaintext
    tls_context: Any = None
    #: the client certificate's subject (RFC 2253) → the principal's name (``ssl.principal.mapping.rules``)
    map_subject: Callable[[str], str] | None = None

    @property
    def uses_sasl(self) -> bool:
        return self.security_protocol in ("SASL_PLAINTEXT", "SASL_SSL")

    @property
    def uses_tls(self) -> bool:
        return self.security_protocol in ("SSL", "SASL_SSL")

    def new_authenticator(self, clock: Callable[[], float]) -> SaslServerAuthenticator | None:
        """A fresh SASL state for a new connection (None on a listener without SASL)."""
        if not self.uses_sasl or self.create_sasl_server is None:
            return None
        return SaslServerAuthenticator(
            self.enabled_mechanisms, self.create_sasl_server, clock,
            reauth_ms=self.reauth_ms, failed_delay_ms=self.failed_delay_ms,
        )

    def certificate_principal(self, subject: str | None) -> KafkaPrincipal:
        """The principal of an SSL connection whose client certificate has *subject* (None: none sent)."""
        if subject is None:
            return ANONYMOUS
        name = self.map_subject(subject) if self.map_subject is not None else subject
        return KafkaPrincipal(USER_TYPE, name)


def jaas_entry(config: Any, listener: str, mechanism: str) -> JaasEntry | None:
    """The JAAS login module for *mechanism* on *listener* (``listener.name.<l>.<mech>.sasl.jaas.config``).

    Raises:
        ConfigError: the value does not parse.
    """
    key = f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config"
    text = _raw(config, key)
    if text is None:
        key = "sasl.jaas.config"
        text = _raw(config, key)
    if text is None:
        return None
    try:
        return parse_jaas_config(text)
    except ValueError as exc:
        raise ConfigError.for_key(key, str(exc)) from None


def enabled_mechanisms(config: Any, listener: str) -> tuple[str, ...]:
    """The listener's ``sasl.enabled.mechanisms``.

    Raises:
        ConfigError: a mechanism Mafka does not implement (GSSAPI, OAUTHBEARER …).
    """
    text = listener_config(config, listener, "sasl.enabled.mechanisms")
    names = tuple(m.strip() for m in (text or "GSSAPI").split(",") if m.strip())
    unsupported = [m for m in names if m not in SUPPORTED_MECHANISMS]
    if unsupported:
        raise ConfigError.for_key(
            "sasl.enabled.mechanisms",
            f"SASL mechanism(s) {', '.join(unsupported)} of listener {listener} are not supported by Mafka "
            f"(supported: {', '.join(SUPPORTED_MECHANISMS)})",
        )
    if not names:
        raise ConfigError.for_key("sasl.enabled.mechanisms", f"no SASL mechanism enabled on listener {listener}")
    return names


def tls_settings(config: Any, listener: str) -> TlsSettings:
    """The listener's ``ssl.*`` settings (``listener.name.<l>.ssl.*`` first), PEM files read now.

    Raises:
        ConfigError: a bad or unreadable TLS setting.
    """
    return TlsSettings.from_config(lambda key: _raw(config, key), listener=listener)


def listener_security(
    config: Any,
    listener: str,
    security_protocol: str,
    *,
    scram_credential: Callable[[ScramMechanism, str], ScramCredential | None],
    scram_fake_salt_key: bytes | None = None,
) -> ListenerSecurity:
    """The security of one listener from the broker's config.

    *scram_fake_salt_key* is the cluster's secret for an unknown SCRAM user's
    fake salt (the same on every broker, so none tells an unknown user apart).

    Raises:
        ConfigError: unsupported mechanisms, PLAIN without users, a bad JAAS or TLS config,
            bad ``ssl.principal.mapping.rules``.
    """
    tls_context: Any = None
    map_subject: Callable[[str], str] | None = None
    if security_protocol in ("SSL", "SASL_SSL"):
        tls_context = server_context_factory(tls_settings(config, listener))
        rules = listener_config(config, listener, "ssl.principal.mapping.rules")
        try:
            map_subject = SslPrincipalMapper.from_rules(rules).get_name
        except ValueError as exc:
            raise ConfigError.for_key("ssl.principal.mapping.rules", str(exc)) from None
    reauth_ms = int(_raw(config, "connections.max.reauth.ms") or 0)
    failed_delay_ms = int(_raw(config, "connection.failed.authentication.delay.ms") or 100)
    max_receive = int(listener_config(config, listener, "sasl.server.max.receive.size") or DEFAULT_SASL_MAX_RECEIVE)
    if security_protocol not in ("SASL_PLAINTEXT", "SASL_SSL"):
        return ListenerSecurity(
            listener, security_protocol, tls_context=tls_context, map_subject=map_subject,
            failed_delay_ms=failed_delay_ms,
        )
    mechanisms = enabled_mechanisms(config, listener)
    plain: dict[str, str] = {}
    if "PLAIN" in mechanisms:
        entry = jaas_entry(config, listener, "PLAIN")
        if entry is None:
            raise ConfigError.for_key(
                f"listener.name.{listener.lower()}.plain.sasl.jaas.config",
                f"listener {listener} enables PLAIN but no JAAS config names its users",
            )
        plain = plain_users(entry)

    def create(mechanism: str) -> SaslServer:
        return create_sasl_server(mechanism, plain_users=plain.get, scram_credentials=scram_credential,
                                  scram_fake_salt_key=scram_fake_salt_key)

    return ListenerSecurity(
        listener, security_protocol, mechanisms, create, reauth_ms, failed_delay_ms, max_receive,
        tls_context, map_subject,
    )


def interbroker_security(config: Any) -> InterBrokerSecurity | None:
    """What this broker's own connections to its peers need, on the inter-broker listener.

    The mechanism is ``sasl.mechanism.inter.broker.protocol``; the broker's
    credentials are the ``username``/``password`` options of that listener's
    JAAS config for the mechanism (Kafka's broker logs in with the same
    login module it serves with).  Over SSL/SASL_SSL the broker's TLS client
    uses that listener's ``ssl.*`` settings: its trust store to check the
    peer, its key store as client certificate.

    Raises:
        ConfigError: an unsupported mechanism, no credentials for it, a bad TLS setting.
    """
    listener = config.inter_broker_listener
    protocol = config.security_protocol_map.get(listener, listener)
    uses_tls = protocol in ("SSL", "SASL_SSL")
    tls: Callable[[str], Any] | None = None
    if uses_tls:
        settings = tls_settings(config, listener)
        creators: dict[str, Any] = {}

        def tls(host: str) -> Any:
            # a creator per peer host, built once: building one costs a few milliseconds
            if host not in creators:
                creators[host] = client_connection_creator(settings, host)
            return creators[host]

    if protocol not in ("SASL_PLAINTEXT", "SASL_SSL"):
        return InterBrokerSecurity(tls=tls) if uses_tls else None
    key = "sasl.mechanism.inter.broker.protocol"
    mechanism = _raw(config, key) or "GSSAPI"
    if mechanism not in SUPPORTED_MECHANISMS:
        raise ConfigError.for_key(
            key, f"{mechanism} is not supported by Mafka (supported: {', '.join(SUPPORTED_MECHANISMS)})"
        )
    entry = jaas_entry(config, listener, mechanism)
    username = entry.options.get("username") if entry is not None else None
    password = entry.options.get("password") if entry is not None else None
    if username is None or password is None:
        raise ConfigError.for_key(
            f"listener.name.{listener.lower()}.{mechanism.lower()}.sasl.jaas.config",
            f"the inter-broker listener {listener} uses {mechanism}: its JAAS config needs the broker's "
            "own username and password options",
        )
    return InterBrokerSecurity(tls=tls if uses_tls else None, sasl_mechanism=mechanism,
                               username=username, password=password)
