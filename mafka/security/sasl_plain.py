"""SASL/PLAIN (RFC 4616) as Kafka's ``PlainSaslServer`` does it, plus the client's token.

The client sends one token, ``[authzid] NUL authcid NUL passwd`` in UTF-8; the
server checks the password against what its callback returns for the user
(the broker backs it with the ``user_<name>="<password>"`` options of
``sasl.jaas.config``, see :func:`mafka.security.jaas.plain_users`) and
answers with an empty challenge.  Kafka's error texts, all of them
client-visible (``SaslAuthenticationException``), which is safe because an
unknown user and a wrong password get the same one.
"""

from __future__ import annotations

import hmac
from collections.abc import Callable

from .sasl import SaslAuthenticationError, SaslException, check_token_size

__all__ = ["PLAIN_MECHANISM", "PlainServer", "plain_client_token"]

PLAIN_MECHANISM = "PLAIN"

_INVALID_CREDENTIALS = "Authentication failed: Invalid username or password"


class PlainServer:
    """The server side of one PLAIN exchange (a :class:`~mafka.security.sasl.SaslServer`).

    Args:
        password_of: user name → the user's password, None for an unknown user.
            An exception it raises fails the exchange with Kafka's
            "credentials for user could not be verified".
    """

    mechanism_name = PLAIN_MECHANISM

    def __init__(self, password_of: Callable[[str], str | None]) -> None:
        self._password_of = password_of
        self._state = "RECEIVE_RESPONSE"
        self._authorization_id: str | None = None

    @property
    def complete(self) -> bool:
        return self._state == "COMPLETE"

    @property
    def authorization_id(self) -> str:
        """The authenticated user.

        Raises:
            RuntimeError: not complete.
        """
        if self._authorization_id is None or not self.complete:
            raise RuntimeError("Authentication exchange has not completed")
        return self._authorization_id

    def evaluate(self, token: bytes) -> bytes:
        """Checks the client's single token; an empty challenge on success.

        Raises:
            SaslAuthenticationError: a malformed token (Kafka's "Invalid SASL/PLAIN
                response: expected 3 tokens, got N"), an empty user name or
                password, a wrong password or unknown user (the same text for
                both), an authorization id other than the user name.
            SaslException: a token after the exchange ended, or longer than
                :data:`~mafka.security.sasl.MAX_TOKEN_BYTES`.
        """
        if self._state != "RECEIVE_RESPONSE":
            # Kafka's authenticator never calls its PlainSaslServer again; refuse like a SCRAM server.
            state, self._state = self._state, "FAILED"
            raise SaslException(f"Unexpected challenge in Sasl server state {state}")
        try:
            self._authorization_id = self._authenticate(token)
        except SaslAuthenticationError:
            self._state = "FAILED"
            raise
        self._state = "COMPLETE"
        return b""

    def _authenticate(self, token: bytes) -> str:
        check_token_size(token)
        # Java's String(bytes, UTF_8) replaces malformed input rather than failing; so do we.
        parts = token.decode("utf-8", errors="replace").split("\0", 3)
        if len(parts) != 3:
            raise SaslAuthenticationError(
                f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}"
            )
        authzid, username, password = parts
        if not username:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        try:
            expected = self._password_of(username)
        except Exception as exc:
            raise SaslAuthenticationError(
                "Authentication failed: credentials for user could not be verified"
            ) from exc
        given = password.encode("utf-8")
        # An unknown user costs the same comparison as a known one, and gets the same answer.
        reference = expected.encode("utf-8") if expected is not None else given
        matches = hmac.compare_digest(given, reference)
        if expected is None or not matches:
            raise SaslAuthenticationError(_INVALID_CREDENTIALS)
        if authzid and authzid != username:
            raise SaslAuthenticationError(
                "Authentication failed: Client requested an authorization id that is different from username"
            )
        return username


def plain_client_token(username: str, password: str, authzid: str = "") -> bytes:
    """The client's PLAIN token: ``authzid NUL username NUL password`` in UTF-8.

    Empty parts are sent as they are (the server refuses an empty user name or
    password with Kafka's texts).

    Raises:
        ValueError: a part contains NUL (the token would be ambiguous).
    """
    if "\0" in authzid or "\0" in username or "\0" in password:
        raise ValueError("SASL/PLAIN credentials must not contain NUL")
    return f"{authzid}\0{username}\0{password}".encode()
