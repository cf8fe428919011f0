"""One asyncio connection to one broker: pipelined requests, version negotiation.

:class:`BrokerConnection` is the client library's only socket code.  It
opens a TCP connection, asks ApiVersions (v2, which every broker since 0.10
answers), and from then on sends requests at the highest version both the
broker advertises and :mod:`mafka.wire` decodes.  Requests are pipelined
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
from collections import deque
from typing import Any

from mafka.wire.codec import decode_response, encode_request
from mafka.wire.errors import ProtocolError
from mafka.wire.framing import DEFAULT_MAX_FRAME, FrameBuffer
from mafka.wire.registry import API_SPECS, API_VERSIONS_KEY

__all__ = ["BrokerConnection", "UnsupportedByBroker", "API_VERSIONS_PROBE"]

log = logging.getLogger("mafka.client.transport")

#: The ApiVersions version used to discover a broker's ranges (non-flexible, answered by all).
API_VERSIONS_PROBE = 2


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
    """

    def __init__(self, node_id: int, host: str, port: int, client_id: str | None,
                 max_frame: int = DEFAULT_MAX_FRAME) -> None:
        self.node_id = node_id
        self.host = host
        self.port = port
        self.client_id = client_id
        self.versions: dict[int, int] = {}
        self._transport: asyncio.Transport | None = None
        self._frames = FrameBuffer(max_frame)
        self._pending: deque[tuple[int, int, int, asyncio.Future[Any]]] = deque()
        self._correlation = itertools.count(1)
        self._closed: Exception | None = None
        self._loop = asyncio.get_event_loop()

    @classmethod
    async def open(cls, node_id: int, host: str, port: int, client_id: str | None,
                   timeout: float) -> BrokerConnection:
        """Connects and negotiates versions within ``timeout`` seconds.

        Raises:
            ConnectionError / OSError / asyncio.TimeoutError: could not connect or negotiate.
        """
        conn = cls(node_id, host, port, client_id)
        loop = asyncio.get_running_loop()
        conn._loop = loop
        try:
            async with asyncio.timeout(timeout):
                await loop.create_connection(lambda: _Protocol(conn), host, port)
                response = await conn.request(API_VERSIONS_KEY, {}, version=API_VERSIONS_PROBE)
        except BaseException:
            conn.close()
            raise
        if response.error_code != 0:
            conn.close()
            raise ConnectionError(f"{host}:{port}: ApiVersions error {response.error_code}")
        conn.versions = _negotiate(response.api_keys)
        return conn

    @property
    def connected(self) -> bool:
        return self._transport is not None and self._closed is None

    @property
    def in_flight(self) -> int:
        return len(self._pending)

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
        """Writes one request; the future resolves to the decoded response body.

        The future fails with ConnectionError if the connection is or becomes closed.
        """
        fut: asyncio.Future[Any] = self._loop.create_future()
        if self._closed is not None or self._transport is None:
            fut.set_exception(ConnectionError(f"{self.host}:{self.port}: not connected"))
            return fut
        if version is None:
            version = self.version(api_key)
        correlation_id = next(self._correlation) & 0x7FFFFFFF
        frame = encode_request(api_key, version, correlation_id, self.client_id, body)
        self._transport.write(frame)
        if expect_response:
            self._pending.append((correlation_id, api_key, version, fut))
        else:
            fut.set_result(None)
        return fut

    def close(self, reason: Exception | None = None) -> None:
        """Closes the socket; outstanding requests fail with ConnectionError."""
        if self._closed is None:
            self._closed = reason or ConnectionError(f"{self.host}:{self.port}: connection closed")
        if self._transport is not None:
            self._transport.close()
        self._fail_pending()

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

    def _lost(self, exc: Exception | None) -> None:
        if self._closed is None:
            self._closed = ConnectionError(
                f"{self.host}:{self.port}: connection lost" + (f" ({exc})" if exc else "")
            )
        self._transport = None
        self._fail_pending()

    def _fail_pending(self) -> None:
        while self._pending:
            fut = self._pending.popleft()[3]
            if not fut.done():
                fut.set_exception(ConnectionError(str(self._closed)))


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
