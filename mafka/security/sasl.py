"""The contract between the broker's SASL edge and the mechanisms, and the errors they raise.

This module owns what every mechanism shares and nothing mechanism-specific:

* :class:`SaslServer` — the server side of one connection's exchange
  (Kafka's ``javax.security.sasl.SaslServer`` as Kafka uses it): the broker's
  network edge creates one per connection after SaslHandshake and feeds it
  each SaslAuthenticate token.
* :class:`SaslAuthenticationError` and :class:`SaslException` — Kafka's two
  kinds of failure.  Kafka's ``SaslServerAuthenticator.handleSaslToken``
  sends a ``SaslAuthenticationException``'s message to the client as it is
  but replaces a ``SaslException``'s with a generic text, because those
  messages may say things an unauthenticated client must not learn (that a
  user exists, say).  :func:`client_error_message` gives the text Kafka
  would put in SaslAuthenticate's ``error_message``.
* :data:`ENABLED_MECHANISMS` — the mechanism names implemented here, and
  :data:`MAX_TOKEN_BYTES`, the largest token a mechanism accepts.

The mechanisms themselves live in :mod:`.sasl_plain` and :mod:`.sasl_scram`;
:mod:`.sasl_servers` picks one by name.  Pure Python, no I/O.
"""

from __future__ import annotations

from typing import Final, Protocol

__all__ = [
    "ENABLED_MECHANISMS",
    "MAX_TOKEN_BYTES",
    "SUPPORTED_MECHANISMS",
    "SaslAuthenticationError",
    "SaslException",
    "SaslServer",
    "UnsupportedSaslMechanismError",
    "check_token_size",
    "client_error_message",
]

#: The SASL mechanisms Mafka implements, in Kafka's documentation order.
SUPPORTED_MECHANISMS: Final = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")
#: The same tuple under the name the security issue gives it.
ENABLED_MECHANISMS: Final = SUPPORTED_MECHANISMS

#: The largest token (in bytes) a mechanism evaluates; larger ones fail before any parsing.
#: Kafka has no such bound in the mechanisms (only ``sasl.server.max.receive.size``,
#: 512 KiB, on the frame).  Legitimate tokens are far smaller: RFC 4616 asks PLAIN servers
#: to accept 255-octet names and passwords, a SCRAM message is a name, a nonce and a
#: proof.  16 KiB leaves room for unusually long passwords while keeping the regular
#: expressions and the UTF-8 decoding of a hostile token cheap.
MAX_TOKEN_BYTES: Final = 16 * 1024


class SaslAuthenticationError(Exception):
    """An authentication failure whose :attr:`message` may be shown to the client.

    Kafka's ``SaslAuthenticationException``: the broker puts :attr:`message`
    verbatim into SaslAuthenticate's ``error_message``.  Raise it only with
    texts that reveal nothing (Kafka's "Authentication failed: Invalid
    username or password").  See :class:`SaslException` for the other kind.
    """

    #: Whether :attr:`message` itself may be sent to the client (see :func:`client_error_message`).
    client_visible: bool = True

    def __init__(self, message: str) -> None:
        super().__init__(message)
        #: Kafka's exception message: to the client if :attr:`client_visible`, always to the log.
        self.message = message


class SaslException(SaslAuthenticationError):
    """An authentication failure whose :attr:`message` is for the broker's log only.

    Kafka's ``javax.security.sasl.SaslException`` as thrown by its mechanisms:
    ``handleSaslToken`` answers the client with "Authentication failed during
    authentication due to invalid credentials with SASL mechanism <MECH>"
    instead, whatever went wrong (malformed message, unknown user, wrong
    proof), so the answer cannot tell an attacker which it was.
    """

    client_visible = False


class UnsupportedSaslMechanismError(Exception):
    """No mechanism by that name here (Kafka's ``UnsupportedSaslMechanismException``)."""


def client_error_message(
    exc: SaslAuthenticationError, mechanism: str, *, reauthentication: bool = False
) -> str:
    """The ``error_message`` Kafka's SaslAuthenticate response carries for *exc*.

    Args:
        exc: what the mechanism raised.
        mechanism: the mechanism's name (``SCRAM-SHA-256``) for the generic text.
        reauthentication: the exchange is a KIP-368 re-authentication (Kafka
            then says "during re-authentication").
    """
    if exc.client_visible:
        return exc.message
    during = "re-authentication" if reauthentication else "authentication"
    return f"Authentication failed during {during} due to invalid credentials with SASL mechanism {mechanism}"


def check_token_size(token: bytes) -> None:
    """Refuse a token longer than :data:`MAX_TOKEN_BYTES` before anything parses it.

    Raises:
        SaslException: the token is too long.
    """
    if len(token) > MAX_TOKEN_BYTES:
        raise SaslException(
            f"SASL token of {len(token)} bytes exceeds the limit of {MAX_TOKEN_BYTES} bytes"
        )


class SaslServer(Protocol):
    """The server side of one SASL exchange: one object per connection and handshake.

    The caller feeds each client token to :meth:`evaluate` and sends back what
    it returns, until :attr:`complete`.  After a failure the object is spent:
    every further token fails too.
    """

    @property
    def mechanism_name(self) -> str:
        """The mechanism's name as SaslHandshake spells it (``PLAIN``, ``SCRAM-SHA-256``)."""
        ...

    @property
    def complete(self) -> bool:
        """True once the client has authenticated (never after a failure)."""
        ...

    @property
    def authorization_id(self) -> str:
        """The authenticated user's name (the principal's name).

        Raises:
            RuntimeError: the exchange has not completed (Kafka's ``IllegalStateException``).
        """
        ...

    def evaluate(self, token: bytes) -> bytes:
        """Evaluates the client's next token and returns the challenge to send back (may be empty).

        Raises:
            SaslAuthenticationError: authentication failed (a :class:`SaslException`
                when the reason must not reach the client).
        """
        ...
