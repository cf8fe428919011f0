"""A Kafka-protocol client connection on the Twisted reactor (inter-broker use).

The controller talks to brokers (LeaderAndIsr, UpdateMetadata, StopReplica),
followers fetch from leaders, coordinators send transaction markers and a
stopping broker asks the controller for a controlled shutdown through this.
Requests are pipelined; responses are matched by correlation id in order
(brokers answer in request order).

Requests fail with their connection, as in Kafka's ``NetworkClient``: a
request outstanding when the connection drops, or waiting for a connection
attempt that fails (refused, unreachable, timed out), fails at once with
:class:`ConnectionLostError`; it never waits out its own timeout on a peer
that is known to be gone.  The caller decides whether to resend, and to whom
(Kafka's controller resends to the same broker; a controlled shutdown asks
ZooKeeper who the controller is now).  The next request connects again, no
sooner than ``backoff_s`` after the last failed attempt
(``reconnect.backoff.ms``).
"""

from __future__ import annotations

import logging
from collections import deque
from typing import Any

from twisted.internet import defer, protocol
from twisted.internet.endpoints import TCP4ClientEndpoint, connectProtocol, wrapClientTLS

from mafka.security.sasl import SaslAuthenticationError
from mafka.security.sasl_client import SaslClientSession
from mafka.tcp import set_no_delay, set_read_size, tcp_transport
from mafka.wire.codec import decode_response, encode_request
from mafka.wire.errors import ProtocolError
from mafka.wire.framing import DEFAULT_MAX_FRAME, FrameBuffer

from .security import InterBrokerSecurity

__all__ = ["KafkaClientProtocol", "InterBrokerConnection", "ConnectionLostError"]

SASL_HANDSHAKE = 17
SASL_AUTHENTICATE = 36

log = logging.getLogger("mafka.interbroker.connection")


class ConnectionLostError(Exception):
    """The connection dropped before the response arrived."""


class KafkaClientProtocol(protocol.Protocol):
    """Sends requests and hands back decoded response bodies.

    Args:
        client_id: the client id put in every request header.
    """

    def __init__(self, client_id: str) -> None:
        self.client_id = client_id
        self.frames = FrameBuffer(DEFAULT_MAX_FRAME)
        self.pending: deque[tuple[int, int, int, defer.Deferred]] = deque()
        self.next_correlation_id = 0
        self.connected_deferred: defer.Deferred = defer.Deferred()
        self.lost = False

    def connectionMade(self) -> None:  # noqa: N802
        set_no_delay(self.transport)  # small requests must not wait for delayed ACKs
        set_read_size(self.transport)  # a fetch response of a megabyte in one read
        self.connected_deferred.callback(self)

    def request(self, api_key: int, version: int, body: Any) -> defer.Deferred:
        """Sends a request; fires with the decoded response body."""
        if self.lost:
            return defer.fail(ConnectionLostError("connection closed"))
        cid = self.next_correlation_id
        self.next_correlation_id = (cid + 1) & 0x7FFFFFFF
        d: defer.Deferred = defer.Deferred()
        self.pending.append((cid, api_key, version, d))
        tcp_transport(self).write(encode_request(api_key, version, cid, self.client_id, body))
        return d

    def dataReceived(self, data: bytes) -> None:  # noqa: N802
        try:
            self.frames.feed(data)
            for frame in self.frames.frames():
                if not self.pending:
                    raise ProtocolError("a response nobody asked for")
                cid, api_key, version, d = self.pending.popleft()
                got_cid, body = decode_response(api_key, version, frame)
                if got_cid != cid:
                    raise ProtocolError(f"correlation id {got_cid}, expected {cid}")
                d.callback(body)
        except ProtocolError as exc:
            transport = tcp_transport(self)
            log.warning("bad response from %s: %s", transport.getPeer(), exc)
            transport.abortConnection()

    def connectionLost(self, reason: Any = None) -> None:  # noqa: N802
        self.lost = True
        pending, self.pending = self.pending, deque()
        for _, _, _, d in pending:
            d.errback(ConnectionLostError(str(reason.value) if reason is not None else "connection lost"))


class InterBrokerConnection:
    """A connection to one broker, opened on demand and again after it drops.

    Requests made while no connection is open wait for one connection attempt;
    if that attempt fails they fail with :class:`ConnectionLostError`.  An
    attempt starts no sooner than ``backoff_s`` after the previous failed one.

    Args:
        reactor: the reactor (``IReactorTCP`` and ``IReactorTime``).
        host, port: the broker's endpoint.
        client_id: request header client id.
        backoff_s: least delay between a failed connection attempt and the next.
        connect_timeout_s: a connection attempt not established within this fails.
        security: TLS and SASL for the inter-broker listener (None: PLAINTEXT).  A
            connection is handed to requests only once authenticated; a failed
            authentication fails the waiting requests like a refused connection.
    """

    def __init__(
        self, reactor: Any, host: str, port: int, client_id: str, *,
        backoff_s: float = 0.5, connect_timeout_s: float = 5.0,
        security: InterBrokerSecurity | None = None,
    ) -> None:
        self.reactor = reactor
        self.host = host
        self.port = port
        self.client_id = client_id
        self.backoff_s = backoff_s
        self.connect_timeout_s = connect_timeout_s
        self.security = security
        self.protocol: KafkaClientProtocol | None = None
        self._waiters: list[defer.Deferred] = []
        self._attempting = False
        self._closed = False
        self._retry_call: Any = None
        self._last_failure_at: float | None = None

    def request(self, api_key: int, version: int, body: Any) -> defer.Deferred:
        """Sends once connected; fires with the response body or fails (ConnectionLostError)."""
        if self._closed:
            return defer.fail(ConnectionLostError("connection closed"))
        if self.protocol is not None and not self.protocol.lost:
            return self.protocol.request(api_key, version, body)
        return self._connect().addCallback(lambda proto: proto.request(api_key, version, body))

    def _connect(self) -> defer.Deferred:
        d: defer.Deferred = defer.Deferred()
        self._waiters.append(d)
        if not self._attempting:
            self._attempting = True
            wait = 0.0
            if self._last_failure_at is not None:
                wait = self._last_failure_at + self.backoff_s - self.reactor.seconds()
            if wait > 0:
                self._retry_call = self.reactor.callLater(wait, self._attempt)
            else:
                self._attempt()
        return d

    def _attempt(self) -> None:
        self._retry_call = None
        if self._closed:
            return
        endpoint: Any = TCP4ClientEndpoint(self.reactor, self.host, self.port, timeout=self.connect_timeout_s)
        security = self.security
        if security is not None and security.tls is not None:
            endpoint = wrapClientTLS(security.tls(self.host), endpoint)
        d = connectProtocol(endpoint, KafkaClientProtocol(self.client_id))
        if security is not None and security.sasl_mechanism is not None:
            d.addCallback(self._authenticate, security)
        d.addCallbacks(self._connected, self._failed)

    @defer.inlineCallbacks
    def _authenticate(self, proto: KafkaClientProtocol, security: InterBrokerSecurity) -> Any:
        """SaslHandshake v1 + SaslAuthenticate on a fresh connection; fires with *proto* once authenticated."""
        assert security.sasl_mechanism is not None
        try:
            handshake = yield proto.request(SASL_HANDSHAKE, 1, {"mechanism": security.sasl_mechanism})
            if handshake.error_code != 0:
                raise SaslAuthenticationError(
                    f"SaslHandshake error {handshake.error_code}; the broker enables {list(handshake.mechanisms)}"
                )
            session = SaslClientSession(security.sasl_mechanism, security.username, security.password)
            token: bytes | None = session.first_token()
            while token is not None:
                response = yield proto.request(SASL_AUTHENTICATE, 1, {"auth_bytes": token})
                if response.error_code != 0:
                    raise SaslAuthenticationError(response.error_message or f"error {response.error_code}")
                token = session.next_token(bytes(response.auth_bytes))
        except BaseException:
            if not proto.lost:
                tcp_transport(proto).abortConnection()
            raise
        return proto

    def _connected(self, proto: KafkaClientProtocol) -> None:
        self._attempting = False
        if self._closed:
            tcp_transport(proto).loseConnection()
            return
        self.protocol = proto
        self._last_failure_at = None
        waiters, self._waiters = self._waiters, []
        for d in waiters:
            d.callback(proto)

    def _failed(self, failure: Any) -> None:
        self._attempting = False
        self._last_failure_at = self.reactor.seconds()
        reason = failure.getErrorMessage()
        log.debug("connecting to %s:%d failed: %s", self.host, self.port, reason)
        waiters, self._waiters = self._waiters, []
        for d in waiters:
            d.errback(ConnectionLostError(f"connecting to {self.host}:{self.port} failed: {reason}"))

    def close(self) -> None:
        """Closes the connection; queued requests fail with ConnectionLostError."""
        self._closed = True
        if self._retry_call is not None and self._retry_call.active():
            self._retry_call.cancel()
        self._retry_call = None
        if self.protocol is not None and not self.protocol.lost:
            tcp_transport(self.protocol).loseConnection()
        waiters, self._waiters = self._waiters, []
        for d in waiters:
            d.errback(ConnectionLostError("connection closed"))
