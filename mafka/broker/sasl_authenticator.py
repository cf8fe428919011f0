"""One connection's SASL authentication on the broker side (Kafka's ``SaslServerAuthenticator``).

Plain Python, no sockets, time injected: :mod:`mafka.broker.network` asks
:meth:`SaslServerAuthenticator.on_request` what to do with each decoded
request on a ``SASL_PLAINTEXT``/``SASL_SSL`` listener, and
:meth:`~SaslServerAuthenticator.on_raw_token` with each frame while the
client speaks raw tokens, and does what the returned step says:

* :data:`DISPATCH` — serve the request as usual (ApiVersions first, then
  everything once authenticated);
* :class:`Reply` — answer with this body, optionally after ``delay_s`` and
  closing the connection once it is sent (a failed authentication);
* :class:`RawReply` — write a size-prefixed raw token (SaslHandshake v0);
* :class:`Close` — close the connection now.

The states are Kafka's: ``HANDSHAKE_OR_VERSIONS_REQUEST`` (ApiVersions or
SaslHandshake), ``HANDSHAKE_REQUEST`` (SaslHandshake after ApiVersions),
``AUTHENTICATE`` (SaslAuthenticate requests, handshake v1) or raw tokens
(handshake v0, which older clients such as kafka-python 2.0 use),
``COMPLETE`` and ``FAILED``.  Any other request before authentication closes
the connection ("Unexpected Kafka request of type … during SASL handshake"),
as Kafka's does.  A mechanism the listener does not enable gets
UNSUPPORTED_SASL_MECHANISM and the connection closes; a failed
authentication gets SASL_AUTHENTICATION_FAILED, sent after
``connection.failed.authentication.delay.ms``, and the connection closes.

Re-authentication (KIP-368): with ``connections.max.reauth.ms`` > 0 a
client that authenticated with SaslAuthenticate v1+ is told
``session_lifetime_ms``; it re-authenticates on the same connection with
SaslHandshake v1 + SaslAuthenticate, with the same mechanism and principal.
A request arriving after the session expired closes the connection.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import Any, Final

from mafka.errors import ErrorCode
from mafka.security.principal import USER_TYPE, KafkaPrincipal
from mafka.security.sasl import SaslAuthenticationError, SaslServer, client_error_message

__all__ = [
    "DISPATCH",
    "Close",
    "RawReply",
    "Reply",
    "SaslServerAuthenticator",
    "SaslState",
]

log = logging.getLogger("mafka.broker.sasl_authenticator")

SASL_HANDSHAKE: Final = 17
API_VERSIONS: Final = 18
SASL_AUTHENTICATE: Final = 36


class _Dispatch:
    def __repr__(self) -> str:
        return "DISPATCH"


#: Serve the request as usual.
DISPATCH: Final = _Dispatch()


@dataclass(frozen=True, slots=True)
class Reply:
    """Answer the request with ``body``; after ``delay_s``; then close if ``close``."""

    body: dict[str, Any]
    close: bool = False
    delay_s: float = 0.0


@dataclass(frozen=True, slots=True)
class RawReply:
    """Write ``token`` with a 4-byte size prefix and no header (SaslHandshake v0 clients)."""

    token: bytes


@dataclass(frozen=True, slots=True)
class Close:
    """Close the connection at once; ``reason`` is logged."""

    reason: str


Step = _Dispatch | Reply | RawReply | Close


class SaslState(Enum):
    HANDSHAKE_OR_VERSIONS_REQUEST = "HANDSHAKE_OR_VERSIONS_REQUEST"
    HANDSHAKE_REQUEST = "HANDSHAKE_REQUEST"
    AUTHENTICATE = "AUTHENTICATE"
    RAW_AUTHENTICATE = "RAW_AUTHENTICATE"
    COMPLETE = "COMPLETE"
    REAUTHENTICATE = "REAUTHENTICATE"
    FAILED = "FAILED"


class SaslServerAuthenticator:
    """The SASL state of one connection.

    Args:
        enabled_mechanisms: the listener's ``sasl.enabled.mechanisms`` (in
            order; SaslHandshake answers with them).
        create_server: mechanism name → a fresh :class:`~mafka.security.sasl.SaslServer`.
        clock: seconds (monotonic), for session expiry.
        reauth_ms: ``connections.max.reauth.ms`` (0: sessions never expire).
        failed_delay_ms: ``connection.failed.authentication.delay.ms``.
    """

    def __init__(
        self,
        enabled_mechanisms: Sequence[str],
        create_server: Callable[[str], SaslServer],
        clock: Callable[[], float],
        *,
        reauth_ms: int = 0,
        failed_delay_ms: int = 100,
    ) -> None:
        self.enabled_mechanisms = tuple(enabled_mechanisms)
        self.create_server = create_server
        self.clock = clock
        self.reauth_ms = reauth_ms
        self.failed_delay_s = failed_delay_ms / 1000.0
        self.state = SaslState.HANDSHAKE_OR_VERSIONS_REQUEST
        #: the authenticated principal (None until the first authentication completes)
        self.principal: KafkaPrincipal | None = None
        self.mechanism: str | None = None
        self._server: SaslServer | None = None
        self._handshake_version = 0
        self._expires_at: float | None = None

    # ------------------------------------------------------------------ queries

    @property
    def authenticated(self) -> bool:
        """True once a first authentication succeeded (also while re-authenticating)."""
        return self.principal is not None

    @property
    def expects_raw_token(self) -> bool:
        """True when the next frame is a raw SASL token, not a Kafka request (handshake v0)."""
        return self.state is SaslState.RAW_AUTHENTICATE

    # ------------------------------------------------------------------ input

    def on_request(self, api_key: int, api_version: int, body: Any) -> Step:
        """What to do with a decoded request (see the module docstring)."""
        state = self.state
        if state is SaslState.COMPLETE:
            if self._expires_at is not None and self.clock() >= self._expires_at:
                return Close(f"SASL session of {self.principal} expired without re-authentication")
            if api_key == SASL_HANDSHAKE and self._can_reauthenticate(api_version):
                return self._handshake(api_version, body, reauthenticating=True)
            return DISPATCH
        if state is SaslState.REAUTHENTICATE:
            if api_key == SASL_AUTHENTICATE:
                return self._authenticate(api_version, body)
            return DISPATCH  # the old session is valid until the new one completes
        if state in (SaslState.HANDSHAKE_OR_VERSIONS_REQUEST, SaslState.HANDSHAKE_REQUEST):
            if api_key == API_VERSIONS and state is SaslState.HANDSHAKE_OR_VERSIONS_REQUEST:
                self.state = SaslState.HANDSHAKE_REQUEST
                return DISPATCH
            if api_key == SASL_HANDSHAKE:
                return self._handshake(api_version, body, reauthenticating=False)
            return Close(f"Unexpected Kafka request of type {api_key} during SASL handshake.")
        if state is SaslState.AUTHENTICATE:
            if api_key == SASL_AUTHENTICATE:
                return self._authenticate(api_version, body)
            return Close(f"Unexpected Kafka request of type {api_key} during SASL authentication.")
        return Close(f"request of type {api_key} in SASL state {state.value}")

    def on_raw_token(self, token: bytes) -> Step:
        """A raw token after SaslHandshake v0: the challenge to send back, or Close on failure."""
        if self.state is not SaslState.RAW_AUTHENTICATE or self._server is None:
            return Close(f"raw SASL token in state {self.state.value}")
        try:
            challenge = self._server.evaluate(token)
        except SaslAuthenticationError as exc:
            self.state = SaslState.FAILED
            return Close(f"SASL {self.mechanism} authentication failed: {exc.message}")
        if self._server.complete:
            self._complete(self._server, session_lifetime=False)
        return RawReply(challenge)

    # ------------------------------------------------------------------ steps

    def _can_reauthenticate(self, api_version: int) -> bool:
        return self.reauth_ms > 0 and self._handshake_version >= 1 and api_version >= 1

    def _handshake(self, api_version: int, body: Any, *, reauthenticating: bool) -> Step:
        mechanism = str(body["mechanism"])
        if mechanism not in self.enabled_mechanisms:
            self.state = SaslState.FAILED
            return Reply(
                {"error_code": ErrorCode.UNSUPPORTED_SASL_MECHANISM, "mechanisms": list(self.enabled_mechanisms)},
                close=True,
            )
        if reauthenticating and mechanism != self.mechanism:
            self.state = SaslState.FAILED
            return Reply(
                {"error_code": ErrorCode.ILLEGAL_SASL_STATE, "mechanisms": list(self.enabled_mechanisms)},
                close=True,
            )
        self._server = self.create_server(mechanism)
        self.mechanism = mechanism
        self._handshake_version = api_version
        if reauthenticating:
            self.state = SaslState.REAUTHENTICATE
        else:
            self.state = SaslState.AUTHENTICATE if api_version >= 1 else SaslState.RAW_AUTHENTICATE
        return Reply({"error_code": ErrorCode.NONE, "mechanisms": list(self.enabled_mechanisms)})

    def _authenticate(self, api_version: int, body: Any) -> Step:
        server = self._server
        assert server is not None  # set by the handshake that led to this state
        try:
            challenge = server.evaluate(bytes(body["auth_bytes"]))
        except SaslAuthenticationError as exc:
            return self._fail(client_error_message(exc, server.mechanism_name), exc.message)
        lifetime_ms = 0
        if server.complete:
            principal = KafkaPrincipal(USER_TYPE, server.authorization_id)
            if self.state is SaslState.REAUTHENTICATE and principal != self.principal:
                return self._fail(
                    f"Cannot change principals during re-authentication from {self.principal}: {principal}",
                    "principal changed",
                )
            lifetime_ms = self._complete(server, session_lifetime=api_version >= 1)
        return Reply(
            {"error_code": ErrorCode.NONE, "error_message": None, "auth_bytes": challenge,
             "session_lifetime_ms": lifetime_ms}
        )

    def _complete(self, server: SaslServer, *, session_lifetime: bool) -> int:
        """Marks the connection authenticated; the session lifetime to report (0: none)."""
        self.principal = KafkaPrincipal(USER_TYPE, server.authorization_id)
        self.state = SaslState.COMPLETE
        self._server = None
        if self.reauth_ms > 0 and session_lifetime:
            self._expires_at = self.clock() + self.reauth_ms / 1000.0
            return self.reauth_ms
        self._expires_at = None
        return 0

    def _fail(self, client_message: str, logged: str) -> Reply:
        log.info("SASL %s authentication failed: %s", self.mechanism, logged)
        self.state = SaslState.FAILED
        return Reply(
            {"error_code": ErrorCode.SASL_AUTHENTICATION_FAILED, "error_message": client_message,
             "auth_bytes": b"", "session_lifetime_ms": 0},
            close=True,
            delay_s=self.failed_delay_s,
        )
