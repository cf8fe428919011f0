"""Picks the server-side mechanism for a SaslHandshake's mechanism name (Kafka's ``SaslServerFactory`` lookup).

The broker's network edge calls :func:`create_sasl_server` once per
connection and handshake, with the credential sources of the listener.
"""

from __future__ import annotations

from collections.abc import Callable

from mafka.broker.scram import ScramCredential, ScramMechanism

from .sasl import SUPPORTED_MECHANISMS, SaslServer, UnsupportedSaslMechanismError
from .sasl_plain import PLAIN_MECHANISM, PlainServer
from .sasl_scram import ScramServer

__all__ = ["create_sasl_server"]

_SCRAM = {m.mechanism_name: m for m in (ScramMechanism.SCRAM_SHA_256, ScramMechanism.SCRAM_SHA_512)}


def create_sasl_server(
    mechanism_name: str,
    *,
    plain_users: Callable[[str], str | None] | None,
    scram_credentials: Callable[[ScramMechanism, str], ScramCredential | None] | None,
    scram_fake_salt_key: bytes | None = None,
) -> SaslServer:
    """A fresh server for *mechanism_name* (case-sensitive, as Kafka's handshake is).

    Args:
        plain_users: user → password for PLAIN (the JAAS ``user_<name>`` options).
        scram_credentials: (mechanism, user) → the stored credential for SCRAM.
        scram_fake_salt_key: the key unknown SCRAM users' fake salts derive from
            (see :class:`~mafka.security.sasl_scram.ScramServer`); default per process.

    Raises:
        UnsupportedSaslMechanismError: not PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512
            (Kafka's "Unsupported SASL mechanism X").
        ValueError: the mechanism's credential source is None (Kafka's
            "Callback handler not specified for SASL mechanism X").
    """
    if mechanism_name not in SUPPORTED_MECHANISMS:
        raise UnsupportedSaslMechanismError(f"Unsupported SASL mechanism {mechanism_name}")
    if mechanism_name == PLAIN_MECHANISM:
        if plain_users is None:
            raise ValueError(f"Callback handler not specified for SASL mechanism {mechanism_name}")
        return PlainServer(plain_users)
    if scram_credentials is None:
        raise ValueError(f"Callback handler not specified for SASL mechanism {mechanism_name}")
    mechanism = _SCRAM[mechanism_name]
    lookup = scram_credentials

    def credential_of(user: str) -> ScramCredential | None:
        return lookup(mechanism, user)

    return ScramServer(mechanism, credential_of, fake_salt_key=scram_fake_salt_key)
