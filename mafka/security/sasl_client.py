"""The client side of a SASL exchange, for any transport (mafka.client's asyncio, the broker's Twisted).

:class:`SaslClientSession` yields the tokens to send in SaslAuthenticate
requests (after a SaslHandshake v1 naming :attr:`~SaslClientSession.mechanism`):

    session = SaslClientSession("SCRAM-SHA-512", "alice", "secret")
    token = session.first_token()
    while token is not None:
        response = send SaslAuthenticate(token) and raise on its error_code
        token = session.next_token(response.auth_bytes)

PLAIN sends one token; SCRAM two, and checks the server's signature in the
last response (a broker that does not know the password cannot pass).
"""

from __future__ import annotations

from typing import Final

from mafka.broker.scram import ScramMechanism

from .sasl import SaslAuthenticationError
from .sasl_plain import plain_client_token
from .sasl_scram import ScramClient

__all__ = ["CLIENT_MECHANISMS", "SaslClientSession"]

#: The mechanisms :class:`SaslClientSession` speaks.
CLIENT_MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")

_SCRAM: Final = {"SCRAM-SHA-256": ScramMechanism.SCRAM_SHA_256, "SCRAM-SHA-512": ScramMechanism.SCRAM_SHA_512}


class SaslClientSession:
    """One authentication as *username* with *password* over *mechanism*.

    Raises:
        ValueError: (constructor) a mechanism other than :data:`CLIENT_MECHANISMS`.
    """

    def __init__(self, mechanism: str, username: str, password: str) -> None:
        if mechanism not in CLIENT_MECHANISMS:
            raise ValueError(
                f"SASL mechanism {mechanism} is not supported (supported: {', '.join(CLIENT_MECHANISMS)})"
            )
        self.mechanism = mechanism
        self.username = username
        self.password = password
        self._scram = ScramClient(_SCRAM[mechanism], username, password) if mechanism in _SCRAM else None
        self._step = 0

    def first_token(self) -> bytes:
        """The first SaslAuthenticate token."""
        self._step = 1
        if self._scram is None:
            return plain_client_token(self.username, self.password)
        return self._scram.first_message()

    def next_token(self, challenge: bytes) -> bytes | None:
        """The token answering the server's *challenge*, or None when the exchange is complete.

        Raises:
            SaslAuthenticationError: the server's answer is malformed or its signature is wrong.
        """
        step, self._step = self._step, self._step + 1
        if self._scram is None:
            return None
        if step == 1:
            return self._scram.final_message(challenge)
        if step == 2:
            self._scram.verify_server_final(challenge)
            return None
        raise SaslAuthenticationError(f"unexpected SASL challenge after the {self.mechanism} exchange ended")
