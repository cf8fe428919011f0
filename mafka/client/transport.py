"""One asyncio connection to one broker: TLS, version negotiation, SASL, pipelined requests.

:class:`BrokerConnection` is the client library's only socket code.  It
opens a TCP connection (TLS when the :class:`~mafka.client.security.ClientSecurity`
has an ``ssl_context``: the handshake checks the broker's certificate and,
unless disabled, that it names the host dialled), asks ApiVersions (v2, which
every broker since 0.10 answers), authenticates when the security names a
SASL mechanism, and from then on sends requests at the highest version both
the broker advertises and :mod:`mafka.wire` decodes.

SASL is Kafka's (KIP-152): SaslHandshake v1 naming the mechanism (an
UNSUPPORTED_SASL_MECHANISM answer raises
:class:`~mafka.client.security.SaslMechanismRejected` naming the broker's
mechanisms), then SaslAuthenticate carrying
:class:`~mafka.security.sasl_client.SaslClientSession`'s tokens until the
session is done; an error answer raises
:class:`~mafka.client.security.SaslAuthenticationFailed` with the broker's
``error_message``.

Re-authentication (KIP-368): when SaslAuthenticate (v1+) answers with a
``session_lifetime_ms`` > 0, the connection re-authenticates in place after
85–95% of that lifetime (a random point, as Java's client does, so that many
connections do not all re-authenticate at once).  Kafka's broker accepts
SaslHandshake again on an authenticated connection but the exchange must not
interleave with other requests, so the connection first holds back new
requests (queued in order, written afterwards), waits until every request in
flight is answered, then runs SaslHandshake + SaslAuthenticate.  In place
rather than by reconnecting, because a new connection would let an
idempotent producer's next requests overtake the ones still in flight on the
old one.  If re-authentication fails, the connection closes (the held
requests fail with ``ConnectionError``) and the next connection attempt
reports the failure like any other authentication failure.

Requests are pipelined
(many in flight; brokers answer in order, matched by correlation id); a
request whose ``expect_response`` is False (Produce with acks=0) completes
as soon as it is written.  When the connection drops every outstanding
request fails with :class:`ConnectionError`; reconnecting is the caller's
business (a new ``BrokerConnection``).

Runs on whatever asyncio loop it is created on; it is never touched from
another thread.  (Brokers talk to each other through a different, Twisted
connection: :class:`mafka.interbroker.connection.InterBrokerConnection`.)
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import random
from collections import deque
from typing import Any, NamedTuple

from mafka.client.security import ClientSecurity, SaslAuthenticationFailed, SaslMechanismRejected
from mafka.errors import ErrorCode
from mafka.security.sasl import SaslAuthenticationError
from mafka.security.sasl_client import SaslClientSession
from mafka.wire.codec import decode_response, encode_request
from mafka.wire.errors import ProtocolError
from mafka.wire.framing import DEFAULT_MAX_FRAME, FrameBuffer
from mafka.wire.registry import API_SPECS, API_VERSIONS_KEY

__all__ = ["BrokerConnection", "UnsupportedByBroker", "API_VERSIONS_PROBE", "REAUTH_WINDOW"]

log = logging.getLogger("mafka.client.transport")

#: The ApiVersions version used to discover a broker's ranges (non-flexible, answered by all).
API_VERSIONS_PROBE = 2

SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36
#: SaslHandshake v1: the tokens travel in SaslAuthenticate requests (v0's raw tokens are not spoken).
_HANDSHAKE_VERSION = 1

#: Re-authenticate after this share of the session lifetime, picked at random per session
#: (Java's client: 85% plus up to 10% jitter).
REAUTH_WINDOW = (0.85, 0.95)


class _Held(NamedTuple):
    """A request written after the re-authentication in progress."""

    api_key: int
    body: Any
    version: int
    expect_response: bool
    future: asyncio.Future[Any]


class UnsupportedByBroker(Exception):
    """The broker supports no version of an API that this client can decode."""


class _Protocol(asyncio.Protocol):
    def __init__(self, conn: BrokerConnection) -> None:
        self.conn = conn

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # typeshed passes a BaseTransport; a stream connection's is an asyncio.Transport
        self.conn._transport = transport  # type: ignore[assignment]

    def data_received(self, data: bytes) -> None:
        self.conn._data_received(data)

    def connection_lost(self, exc: Exception | None) -> None:
        self.conn._lost(exc)


class BrokerConnection:
    """A connection to ``host:port``; create with :meth:`open`.

    Attributes:
        node_id: the broker id this connection is for (negative for a bootstrap address).
        versions: api key -> the version this connection uses (after :meth:`open`).
        security: TLS/SASL settings, None for plaintext.
        session_lifetime_ms: the SASL session lifetime the broker gave at the last
            (re-)authentication; 0 when it sets none (no re-authentication).
        reauthentications: how many times the connection re-authenticated (KIP-368).
    """

    def __init__(self, node_id: int, host: str, port: int, client_id: str | None,
                 max_frame: int = DEFAULT_MAX_FRAME, security: ClientSecurity | None = None) -> None:
        self.node_id = node_id
        self.host = host
        self.port = port
        self.client_id = client_id
        self.security = security
        self.versions: dict[int, int] = {}
        self.session_lifetime_ms = 0
        self.reauthentications = 0
        self._transport: asyncio.Transport | None = None
        self._frames = FrameBuffer(max_frame)
        self._pending: deque[tuple[int, int, int, asyncio.Future[Any]]] = deque()
        self._correlation = itertools.count(1)
        self._closed: Exception | None = None
        self._loop = asyncio.get_event_loop()
        self._auth_timeout = 30.0
        # Re-authentication: requests held back while it waits or runs (None: not holding).
        self._held: deque[_Held] | None = None
        self._reauth_timer: asyncio.TimerHandle | None = None
        self._reauth_task: asyncio.Task[None] | None = None

    @classmethod
    async def open(cls, node_id: int, host: str, port: int, client_id: str | None,
                   timeout: float, security: ClientSecurity | None = None) -> BrokerConnection:
        """Connects (with TLS if ``security`` has a context), negotiates versions and
        authenticates (if ``security`` names a SASL mechanism), all within ``timeout`` seconds.

        Raises:
            SaslMechanismRejected: the broker has not enabled the mechanism (the message
                names the broker's mechanisms).
            SaslAuthenticationFailed: the broker refused the credentials (its
                ``error_message`` in the message), or its SCRAM answer failed the check.
            ssl.SSLError (an OSError): the TLS handshake failed, e.g.
                ``ssl.SSLCertVerificationError`` for an untrusted certificate or one
                that does not name ``host``.
            ConnectionError / OSError / asyncio.TimeoutError: could not connect or negotiate.
        """
        conn = cls(node_id, host, port, client_id, security=security)
        loop = asyncio.get_running_loop()
        conn._loop = loop
        conn._auth_timeout = timeout
        context = security.ssl_context if security is not None else None
        tls: dict[str, Any] = {} if context is None else {"ssl": context, "server_hostname": host}
        try:
            async with asyncio.timeout(timeout):
                await loop.create_connection(lambda: _Protocol(conn), host, port, **tls)
                response = await conn.request(API_VERSIONS_KEY, {}, version=API_VERSIONS_PROBE)
                if response.error_code != 0:
                    raise ConnectionError(f"{conn._where}: ApiVersions error {response.error_code}")
                conn.versions = _negotiate(response.api_keys)
                if security is not None and security.mechanism is not None:
                    await conn._authenticate()
        except BaseException:
            conn.close()
            raise
        return conn

    @property
    def connected(self) -> bool:
        return self._transport is not None and self._closed is None

    @property
    def in_flight(self) -> int:
        """Requests written and not yet answered, plus those held during re-authentication."""
        return len(self._pending) + (len(self._held) if self._held is not None else 0)

    def version(self, api_key: int) -> int:
        """The version used for ``api_key``.

        Raises:
            UnsupportedByBroker: no common version.
        """
        try:
            return self.versions[api_key]
        except KeyError:
            name = API_SPECS[api_key].name if api_key in API_SPECS else str(api_key)
            raise UnsupportedByBroker(
                f"broker {self.host}:{self.port} supports no version of {name} this client speaks"
            ) from None

    def request(self, api_key: int, body: Any, version: int | None = None,
                expect_response: bool = True) -> asyncio.Future[Any]:
        """Writes one request (or, while re-authenticating, queues it to be written in order
        afterwards); the future resolves to the decoded response body.

        The future fails with ConnectionError if the connection is or becomes closed.

        Raises:
            UnsupportedByBroker: ``version`` not given and the broker speaks no version
                of ``api_key`` this client decodes.
        """
        fut: asyncio.Future[Any] = self._loop.create_future()
        if self._closed is not None or self._transport is None:
            fut.set_exception(ConnectionError(f"{self._where}: not connected"))
            return fut
        if version is None:
            version = self.version(api_key)
        if self._held is not None:
            self._held.append(_Held(api_key, body, version, expect_response, fut))
        else:
            self._write(api_key, body, version, expect_response, fut)
        return fut

    def _write(self, api_key: int, body: Any, version: int, expect_response: bool,
               fut: asyncio.Future[Any]) -> None:
        assert self._transport is not None
        correlation_id = next(self._correlation) & 0x7FFFFFFF
        frame = encode_request(api_key, version, correlation_id, self.client_id, body)
        self._transport.write(frame)
        if expect_response:
            self._pending.append((correlation_id, api_key, version, fut))
        else:
            fut.set_result(None)

    def _send_now(self, api_key: int, body: Any, version: int) -> asyncio.Future[Any]:
        """Writes a request ahead of any held ones (the SASL exchange itself)."""
        fut: asyncio.Future[Any] = self._loop.create_future()
        if self._closed is not None or self._transport is None:
            fut.set_exception(ConnectionError(f"{self._where}: not connected"))
        else:
            self._write(api_key, body, version, True, fut)
        return fut

    def close(self, reason: Exception | None = None) -> None:
        """Closes the socket; outstanding and held requests fail with ConnectionError."""
        if self._closed is None:
            self._closed = reason or ConnectionError(f"{self._where}: connection closed")
        if self._transport is not None:
            self._transport.close()
        if self._reauth_timer is not None:
            self._reauth_timer.cancel()
            self._reauth_timer = None
        if self._reauth_task is not None and self._reauth_task is not _current_task():
            self._reauth_task.cancel()
        self._fail_pending()

    @property
    def _where(self) -> str:
        return f"{self.host}:{self.port}"

    # -- SASL ---------------------------------------------------------------------------

    async def _authenticate(self) -> None:
        """One SASL exchange: SaslHandshake v1, then SaslAuthenticate until the session is done;
        schedules the next (re-)authentication if the broker gives the session a lifetime.

        Raises:
            SaslMechanismRejected, SaslAuthenticationFailed: see :meth:`open`.
            ConnectionError: the broker does not speak SaslHandshake v1 / SaslAuthenticate,
                or the connection dropped.
        """
        security = self.security
        assert security is not None and security.mechanism is not None
        assert security.username is not None and security.password is not None
        mechanism = security.mechanism
        if self.versions.get(SASL_HANDSHAKE, -1) < _HANDSHAKE_VERSION or SASL_AUTHENTICATE not in self.versions:
            raise ConnectionError(f"{self._where}: the broker does not support SaslHandshake v1 and "
                                  "SaslAuthenticate (KIP-152); is this a SASL listener?")
        handshake = await self._send_now(SASL_HANDSHAKE, {"mechanism": mechanism}, _HANDSHAKE_VERSION)
        _check_handshake(handshake, mechanism, self._where)
        session = SaslClientSession(mechanism, security.username, security.password)
        token: bytes | None = session.first_token()
        lifetime_ms = 0
        while token is not None:
            response = await self._send_now(SASL_AUTHENTICATE, {"auth_bytes": token},
                                            self.versions[SASL_AUTHENTICATE])
            if response.error_code != 0:
                message = response.error_message or _describe(response.error_code)
                raise SaslAuthenticationFailed(message, self._where)
            lifetime_ms = int(response.get("session_lifetime_ms", 0) or 0)
            try:
                token = session.next_token(bytes(response.auth_bytes or b""))
            except SaslAuthenticationError as exc:
                raise SaslAuthenticationFailed(exc.message, self._where) from exc
        self.session_lifetime_ms = lifetime_ms
        self._schedule_reauthentication(lifetime_ms)

    def _schedule_reauthentication(self, lifetime_ms: int) -> None:
        if lifetime_ms <= 0 or self._closed is not None:
            return
        delay = lifetime_ms / 1000.0 * random.uniform(*REAUTH_WINDOW)
        self._reauth_timer = self._loop.call_later(delay, self._begin_reauthentication)

    def _begin_reauthentication(self) -> None:
        """Timer: hold new requests back; re-authenticate once those in flight are answered."""
        self._reauth_timer = None
        if self._closed is not None or self._held is not None:
            return
        self._held = deque()
        self._maybe_reauthenticate()

    def _maybe_reauthenticate(self) -> None:
        if self._held is not None and not self._pending and self._reauth_task is None \
                and self._closed is None:
            self._reauth_task = self._loop.create_task(self._reauthenticate())

    async def _reauthenticate(self) -> None:
        try:
            async with asyncio.timeout(self._auth_timeout):
                await self._authenticate()
        except Exception as exc:  # a background task: whatever went wrong, end the connection
            log.warning("%s: SASL re-authentication failed (%s); closing the connection", self._where, exc)
            reason = exc if isinstance(exc, ConnectionError) else ConnectionError(
                f"{self._where}: SASL re-authentication failed: {exc!r}")
            self.close(reason)
            return
        finally:
            self._reauth_task = None
        self.reauthentications += 1
        log.debug("%s: re-authenticated (session lifetime %d ms)", self._where, self.session_lifetime_ms)
        held, self._held = self._held, None
        for item in held or ():
            if self._closed is not None:
                break
            self._write(*item)

    # -- protocol callbacks -------------------------------------------------------------

    def _data_received(self, data: bytes) -> None:
        try:
            self._frames.feed(data)
            for frame in self._frames.frames():
                self._dispatch(frame)
        except (ProtocolError, ValueError) as exc:
            log.warning("%s:%s: bad response (%s); closing", self.host, self.port, exc)
            self.close(ConnectionError(f"{self.host}:{self.port}: bad response: {exc}"))

    def _dispatch(self, frame: bytes) -> None:
        if not self._pending:
            raise ProtocolError("a response arrived with no request outstanding")
        correlation_id, api_key, version, fut = self._pending.popleft()
        got, body = decode_response(api_key, version, frame)
        if got != correlation_id:
            raise ProtocolError(f"correlation id {got}, expected {correlation_id}")
        if not fut.done():
            fut.set_result(body)
        if not self._pending:
            self._maybe_reauthenticate()

    def _lost(self, exc: Exception | None) -> None:
        if self._closed is None:
            self._closed = ConnectionError(
                f"{self.host}:{self.port}: connection lost" + (f" ({exc})" if exc else "")
            )
        self._transport = None
        self._fail_pending()

    def _fail_pending(self) -> None:
        futures = [entry[3] for entry in self._pending]
        futures += [held.future for held in self._held or ()]
        self._pending.clear()
        if self._held is not None:
            self._held.clear()
        for fut in futures:
            if not fut.done():
                fut.set_exception(ConnectionError(str(self._closed)))


def _current_task() -> asyncio.Task[Any] | None:
    try:
        return asyncio.current_task()
    except RuntimeError:  # no running loop (a close() from outside the loop)
        return None


def _describe(code: int) -> str:
    try:
        return ErrorCode(code).description
    except ValueError:
        return f"error code {code}"


def _check_handshake(response: Any, mechanism: str, where: str) -> None:
    """Raises for a SaslHandshake error (see :meth:`BrokerConnection.open`)."""
    code = response.error_code
    if code == 0:
        return
    enabled = tuple(response.mechanisms or ())
    if code == ErrorCode.UNSUPPORTED_SASL_MECHANISM:
        # Java's client words it so (SaslClientAuthenticator.handleSaslHandshakeResponse).
        raise SaslMechanismRejected(
            f"Client SASL mechanism '{mechanism}' not enabled in the server, enabled mechanisms are "
            f"[{', '.join(enabled)}]", where, enabled)
    raise SaslAuthenticationFailed(f"SaslHandshake failed: {_describe(code)} (error {code})", where)


def _negotiate(api_keys: Any) -> dict[int, int]:
    """api key -> the highest version in (broker's range ∩ our decode range)."""
    versions = {}
    for entry in api_keys:
        spec = API_SPECS.get(entry.api_key)
        if spec is None:
            continue
        low = max(entry.min_version, spec.decode[0])
        high = min(entry.max_version, spec.decode[1])
        if low <= high:
            versions[entry.api_key] = high
    return versions
