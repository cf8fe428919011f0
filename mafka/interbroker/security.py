"""How a broker secures the connections it opens to other brokers (the inter-broker listener's side).

Built by the broker from ``inter.broker.listener.name`` /
``security.inter.broker.protocol``, ``sasl.mechanism.inter.broker.protocol``
and the JAAS config of that listener and mechanism (its ``username`` and
``password`` options, as Kafka's broker logs in to its peers), and handed to
every :class:`~mafka.interbroker.connection.InterBrokerConnection`: the
controller's channel, the replica fetchers, the transaction markers and
controlled shutdown.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

__all__ = ["InterBrokerSecurity"]


@dataclass(frozen=True)
class InterBrokerSecurity:
    """TLS and SASL for outgoing inter-broker connections.

    Attributes:
        tls: host name → a Twisted client TLS connection creator (None: no TLS).
        sasl_mechanism: PLAIN / SCRAM-SHA-256 / SCRAM-SHA-512 (None: no SASL).
        username, password: the broker's own SASL credentials.
    """

    tls: Callable[[str], Any] | None = None
    sasl_mechanism: str | None = None
    username: str = ""
    password: str = ""
