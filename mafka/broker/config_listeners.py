"""The broker's listeners: parsing them and deriving what it binds and advertises.

Owns Kafka's listener rules (``CoreUtils.listenerListToEndPoints``,
``EndPoint.createEndPoint``, ``KafkaConfig.listeners`` /
``advertisedListeners`` / ``interBrokerListenerName``): parsing a
listener list (:func:`parse_listeners`), the ``listener.security.protocol.map``
(:func:`security_protocol_map`), the endpoints bound (:func:`listener_endpoints`,
falling back to the deprecated ``host.name``/``port``), the endpoints
advertised (:func:`advertised_endpoints`, an empty host advertised as
:data:`DEFAULT_ADVERTISED_HOST`) and the inter-broker listener
(:func:`inter_broker_listener`, :func:`inter_broker_endpoint`).

Each function reads the public fields of a
:class:`~mafka.broker.config.BrokerConfig`, which exposes them as properties
of the same names; the listener cross-checks Kafka runs at start-up are in
:mod:`mafka.broker.config_validation`.  One endpoint's syntax is
:func:`mafka.endpoint.parse_endpoint`.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Final

from mafka.endpoint import SECURITY_PROTOCOLS, Endpoint, parse_endpoint
from mafka.errors import ConfigError

from .config_keys import LIST_SPLIT, parse_csv_map

if TYPE_CHECKING:
    from .config import BrokerConfig

__all__ = [
    "DEFAULT_ADVERTISED_HOST",
    "DEFAULT_LISTENER_SECURITY_PROTOCOL_MAP",
    "advertised_endpoints",
    "inter_broker_endpoint",
    "inter_broker_listener",
    "listener_endpoints",
    "parse_listeners",
    "security_protocol_map",
]

#: Where an empty listener host is advertised (Kafka: the canonical host name); see :mod:`mafka.broker.config`.
DEFAULT_ADVERTISED_HOST: Final = "localhost"
#: Kafka's default ``listener.security.protocol.map`` (every protocol maps to a listener of its own name).
DEFAULT_LISTENER_SECURITY_PROTOCOL_MAP: Final = ",".join(f"{p}:{p}" for p in SECURITY_PROTOCOLS)


def _listener(text: str, protocol_map: Mapping[str, str]) -> Endpoint:
    """One listener: :func:`~mafka.endpoint.parse_endpoint`, its port within 0..65535."""
    endpoint = parse_endpoint(text, protocol_map)
    if not 0 <= endpoint.port <= 65535:
        raise ValueError(f"port {endpoint.port} of {text} is not within 0..65535")
    return endpoint


def parse_listeners(
    text: str, protocol_map: Mapping[str, str], *, require_distinct_ports: bool = True
) -> tuple[Endpoint, ...]:
    """Parse a comma-separated listener list (``CoreUtils.listenerListToEndPoints``).

    Raises:
        ValueError: a bad listener, two listeners with one name, or (if
            ``require_distinct_ports``) two with one non-zero port.
    """
    items = [s for s in LIST_SPLIT.split(text) if s] if text else []
    try:
        endpoints = tuple(_listener(s, protocol_map) for s in items)
    except ValueError as exc:
        raise ValueError(f"Error creating broker listeners from '{text}': {exc}") from None
    names = [e.name for e in endpoints]
    if len(set(names)) != len(names):
        raise ValueError(f"Each listener must have a different name, listeners: {text}")
    ports = [e.port for e in endpoints if e.port != 0]
    if require_distinct_ports and len(set(ports)) != len(ports):
        raise ValueError(f"Each listener must have a different port, listeners: {text}")
    return endpoints


def security_protocol_map(config: BrokerConfig) -> dict[str, str]:
    """``listener.security.protocol.map`` as ``{LISTENER_NAME: PROTOCOL}`` (names upper-cased).

    Raises:
        ConfigError: a malformed map or an unknown security protocol.
    """
    key = "listener.security.protocol.map"
    try:
        raw = parse_csv_map(config.listener_security_protocol_map)
    except ValueError as exc:
        raise ConfigError.for_key(
            key, str(exc), value=config.listener_security_protocol_map, source=config.sources.get(key)
        ) from None
    out = {}
    for name, protocol in raw.items():
        if protocol.upper() not in SECURITY_PROTOCOLS:
            raise ConfigError.for_key(
                key, f"Invalid security protocol `{protocol}` defined in {key}", source=config.sources.get(key)
            )
        out[name.upper()] = protocol.upper()
    return out


def listener_endpoints(config: BrokerConfig) -> tuple[Endpoint, ...]:
    """The endpoints to bind: ``listeners``, else ``PLAINTEXT://{host.name}:{port}`` (``PLAINTEXT://:9092``).

    Raises:
        ConfigError: a bad listener list or protocol map.
    """
    if config.listeners is not None:
        key, text = "listeners", config.listeners
    else:
        key, text = "port", f"PLAINTEXT://{config.host_name}:{config.port}"
    try:
        return parse_listeners(text, config.security_protocol_map)
    except ValueError as exc:
        raise ConfigError.for_key(key, str(exc), source=config.sources.get(key)) from None


def advertised_endpoints(config: BrokerConfig) -> tuple[Endpoint, ...]:
    """The endpoints registered in ZooKeeper and returned in Metadata.

    ``advertised.listeners``, else (deprecated) ``advertised.host.name`` /
    ``advertised.port``, else :func:`listener_endpoints`; an empty host is
    replaced by :data:`DEFAULT_ADVERTISED_HOST`.

    Raises:
        ConfigError: a bad listener list or protocol map.
    """
    if config.advertised_listeners is not None:
        key, text = "advertised.listeners", config.advertised_listeners
        try:
            endpoints = parse_listeners(text, config.security_protocol_map, require_distinct_ports=False)
        except ValueError as exc:
            raise ConfigError.for_key(key, str(exc), source=config.sources.get(key)) from None
    elif config.advertised_host_name is not None or config.advertised_port is not None:
        host = config.advertised_host_name if config.advertised_host_name is not None else config.host_name
        port = config.advertised_port if config.advertised_port is not None else config.port
        try:
            endpoints = parse_listeners(
                f"PLAINTEXT://{host}:{port}", config.security_protocol_map, require_distinct_ports=False
            )
        except ValueError as exc:
            raise ConfigError.for_key("advertised.host.name", str(exc)) from None
    else:
        endpoints = config.listener_endpoints
    return tuple(e._replace(host=DEFAULT_ADVERTISED_HOST) if not e.host else e for e in endpoints)


def inter_broker_listener(config: BrokerConfig) -> str:
    """The listener name brokers use to reach each other.

    ``inter.broker.listener.name`` (upper-cased) if set, else the listener
    named after ``security.inter.broker.protocol`` (``PLAINTEXT``).
    """
    if config.inter_broker_listener_name is not None:
        return config.inter_broker_listener_name.upper()
    return config.security_inter_broker_protocol.upper()


def inter_broker_endpoint(config: BrokerConfig) -> Endpoint:
    """The advertised endpoint of :func:`inter_broker_listener`.

    Raises:
        ConfigError: no advertised listener has that name.
    """
    name = config.inter_broker_listener
    for endpoint in config.advertised_endpoints:
        if endpoint.name == name:
            return endpoint
    raise ConfigError.for_key("inter.broker.listener.name", f"no advertised listener named {name}")
