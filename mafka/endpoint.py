"""Kafka's listener endpoints (``kafka.cluster.EndPoint``) and security protocol names.

One type for the two places a broker endpoint appears: the listeners a broker
binds and advertises (:attr:`mafka.broker.config.BrokerConfig.listener_endpoints`,
``advertised_endpoints``) and the endpoints it registers in ZooKeeper
(:class:`mafka.coordination.znodes.BrokerRegistration`), which controllers and
tools read back.  It lives outside both packages so that ``mafka.coordination``
does not import ``mafka.broker``.

Example:
    >>> parse_endpoint("client://[::1]:9092", {"CLIENT": "SSL"})
    Endpoint(name='CLIENT', security_protocol='SSL', host='::1', port=9092)
    >>> parse_endpoint("PLAINTEXT://:9092").connection_string
    'PLAINTEXT://:9092'
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from types import MappingProxyType
from typing import Final, NamedTuple

__all__ = ["ENDPOINT_PATTERN", "SECURITY_PROTOCOLS", "SECURITY_PROTOCOL_IDS", "Endpoint", "parse_endpoint"]

#: Kafka's ``SecurityProtocol``: name -> id (the id UpdateMetadata carries).
SECURITY_PROTOCOL_IDS: Final[Mapping[str, int]] = MappingProxyType(
    {"PLAINTEXT": 0, "SSL": 1, "SASL_PLAINTEXT": 2, "SASL_SSL": 3}
)
#: Kafka's ``SecurityProtocol`` names.
SECURITY_PROTOCOLS: Final = tuple(SECURITY_PROTOCOL_IDS)

#: ``EndPoint.uriParseExp``: ``NAME://host:port``, ``NAME://[ipv6]:port``, ``NAME://:port``.
ENDPOINT_PATTERN: Final = re.compile(r"(.*)://\[?([0-9a-zA-Z\-%._:]*)\]?:(-?[0-9]+)")


class Endpoint(NamedTuple):
    """Kafka's ``EndPoint``: a listener's name, security protocol, host and port.

    ``host`` is None for an empty host (``PLAINTEXT://:9092``, Kafka's null
    host): a listener bound to every interface, or a registration that names
    no host.
    """

    name: str
    security_protocol: str
    host: str | None
    port: int

    @property
    def connection_string(self) -> str:
        """Kafka's ``EndPoint.connectionString``: ``NAME://host:port``, ``NAME://[v6]:port``, ``NAME://:port``."""
        if self.host is None:
            hostport = f":{self.port}"
        elif ":" in self.host:
            hostport = f"[{self.host}]:{self.port}"
        else:
            hostport = f"{self.host}:{self.port}"
        return f"{self.name}://{hostport}"


def parse_endpoint(text: str, protocol_map: Mapping[str, str] | None = None) -> Endpoint:
    """Parse one endpoint as ``EndPoint.createEndPoint`` does.

    The listener name is upper-cased; its security protocol comes from
    ``protocol_map`` (upper-case listener name → protocol) or, without one,
    is the protocol named like the listener (Kafka's default map).  The port
    is not range-checked (Kafka takes negative ports; the broker's config
    checks its own listeners).

    Raises:
        ValueError: the text is not ``NAME://host:port``, the listener name has
            no security protocol, or the protocol is not one Kafka knows.
    """
    m = ENDPOINT_PATTERN.fullmatch(text)
    if m is None:
        raise ValueError(f"Unable to parse {text} to a broker endpoint")
    name = m.group(1).upper()
    if protocol_map is None:
        protocol: str | None = name
    else:
        protocol = protocol_map.get(name)
        if protocol is None:
            raise ValueError(f"No security protocol defined for listener {name}")
    if protocol not in SECURITY_PROTOCOLS:
        raise ValueError(f"Unknown security protocol {protocol!r} for listener {name}")
    return Endpoint(name, protocol, m.group(2) or None, int(m.group(3)))
