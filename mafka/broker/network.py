"""The broker's Twisted edge: Kafka connections, one request in flight each.

Each connection feeds bytes to a :class:`~mafka.wire.framing.FrameBuffer`,
decodes one request at a time, hands it to the dispatcher, and writes the
response before touching the next frame — Kafka mutes a channel until its
response is sent, so responses leave in request order.  While a request is
in flight the connection stops reading once more than a frame's worth of
bytes is queued (backpressure, bounded memory).

Malformed input — a bad size prefix, an unknown api key, a version outside
the decode range, a frame that does not parse — closes *that* connection
only.  Connections idle for ``connections.max.idle.ms`` are closed.

A request whose client is over a quota is answered at once and the
connection is then *muted* (KIP-219, as Kafka 2.8's ``ThrottledChannel``):
the quota decision calls :attr:`Connection.throttle`, and once the response
is written the socket is not read again until the throttle time, counted
from that decision, has passed (a reactor timer; closing the connection
cancels it).  A muted connection is not idle.

Responses are chunk lists (bytes and file regions); regions are sent with
``os.sendfile`` from the segment file straight to the socket, so consumer
reads never pass through Python memory.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from time import monotonic
from typing import Any

from twisted.internet import defer, threads
from twisted.internet.interfaces import IPullProducer
from twisted.internet.protocol import Factory, Protocol
from zope.interface import implementer

from mafka.security.principal import ANONYMOUS, KafkaPrincipal
from mafka.security.ssl_principal_mapper import NoMatchingRule
from mafka.security.tls import peer_certificate_subject
from mafka.tcp import set_no_delay, set_read_size, tcp_transport
from mafka.wire.codec import Request, decode_request, encode_response
from mafka.wire.errors import ProtocolError
from mafka.wire.framing import DEFAULT_MAX_FRAME, FrameBuffer

from .listener_security import ListenerSecurity
from .request_latency import request_name
from .sasl_authenticator import DISPATCH, Close, RawReply, Reply, SaslServerAuthenticator

__all__ = ["KafkaProtocol", "KafkaServerFactory", "Connection", "NO_RESPONSE"]

log = logging.getLogger("mafka.broker.network")

#: What a handler returns for a request that gets no reply (Produce with acks=0).
NO_RESPONSE = None

#: LeaderAndIsr, StopReplica and UpdateMetadata frames at least this big are decoded in a worker
#: thread (10,000 partitions: 0.5 MB, most of a second of Construct's decoding); the rest on the
#: reactor (a Produce's records stay opaque bytes: its decoding is cheap at any size).
DECODE_IN_THREAD_BYTES = 64 * 1024
_DECODED_IN_THREAD = frozenset({4, 5, 6})


def _api_key(frame: Any) -> int:
    return int.from_bytes(bytes(frame[:2]), "big", signed=True)

_BYTES = (bytes, bytearray, memoryview)


class Connection:
    """What handlers may know about the connection a request came on.

    Attributes:
        peer: ``host:port`` of the client.
        host: the client's address (what ACLs match hosts against).
        listener: the listener name the connection arrived on.
        security_protocol: that listener's security protocol (``PLAINTEXT``, ``SASL_SSL`` …).
        principal: who the connection authenticated as (``User:ANONYMOUS`` until then,
            and for good on PLAINTEXT).
        close: closes the connection at once.
        throttle: ``throttle(ms)`` mutes the connection for *ms* from now, once
            the current response is written (client quotas; a no-op by default).
        request_size: the size of the request being served (its frame, without
            the length prefix: Kafka's ``request.sizeInBytes``), what a produce
            quota records.
    """

    __slots__ = ("peer", "host", "listener", "security_protocol", "principal", "close", "throttle", "request_size")

    def __init__(
        self, peer: str, listener: str, close: Callable[[], None], *,
        host: str = "", security_protocol: str = "PLAINTEXT", principal: KafkaPrincipal = ANONYMOUS,
        throttle: Callable[[int], None] | None = None,
    ) -> None:
        self.peer = peer
        self.host = host
        self.listener = listener
        self.security_protocol = security_protocol
        self.principal = principal
        self.close = close
        self.throttle = throttle if throttle is not None else _not_throttled
        self.request_size = 0


def _not_throttled(ms: int) -> None:
    """The :attr:`Connection.throttle` of a connection without a network edge (tests)."""


def _buffered(transport: Any) -> int:
    """Bytes Twisted still holds for *transport* (FileDescriptor's write buffers)."""
    data = getattr(transport, "dataBuffer", b"")
    return len(data) - getattr(transport, "offset", 0) + getattr(transport, "_tempDataLen", 0)


def read_regions(chunks: list[Any]) -> list[bytes]:
    """*chunks* with every file region read into bytes (``os.pread``; blocking: call off the reactor)."""
    out: list[bytes] = []
    for chunk in chunks:
        if isinstance(chunk, _BYTES):
            out.append(bytes(chunk))
            continue
        data = bytearray()
        while len(data) < chunk.length:
            piece = os.pread(chunk.fd, chunk.length - len(data), chunk.position + len(data))
            if not piece:  # the file shrank under us (truncation): the response cannot be completed
                raise OSError(f"region {chunk!r} ended after {len(data)} bytes")
            data += piece
        out.append(bytes(data))
    return out


@implementer(IPullProducer)
class _ResponseWriter:
    """Writes one response's chunks in order: bytes through the transport, regions by sendfile.

    Registered as a pull producer: Twisted calls :meth:`resumeProducing`
    whenever its own buffer is empty and the socket is writable, which is
    exactly when a region may go out with ``os.sendfile`` without
    overtaking buffered bytes.
    """

    def __init__(self, transport: Any, chunks: list[Any], done: defer.Deferred) -> None:
        self.transport = transport
        self.chunks = chunks
        self.done = done
        self.sent = 0  # bytes of the current region already sent

    def resumeProducing(self) -> None:  # noqa: N802 (Twisted's name)
        t = self.transport
        while self.chunks:
            chunk = self.chunks[0]
            if isinstance(chunk, _BYTES):
                t.write(chunk)
                self.chunks.pop(0)
                continue
            if _buffered(t):
                t.startWriting()  # come back once Twisted's buffer is out
                return
            try:
                n = os.sendfile(t.fileno(), chunk.fd, chunk.position + self.sent, chunk.length - self.sent)
            except BlockingIOError:
                t.startWriting()
                return
            except OSError as exc:
                log.warning("sendfile to %s failed: %s", t.getPeer(), exc)
                self._finish()
                t.abortConnection()
                return
            if n == 0:  # the file shrank under us (truncation); nothing more to send
                log.warning("region %r ended early after %d bytes", chunk, self.sent)
                self._finish()
                t.abortConnection()
                return
            self.sent += n
            if self.sent < chunk.length:
                t.startWriting()
                return
            self.sent = 0
            self.chunks.pop(0)
        self._finish()

    def _finish(self) -> None:
        if self.transport.producer is self:
            self.transport.unregisterProducer()
        if not self.done.called:
            self.done.callback(None)

    def stopProducing(self) -> None:  # noqa: N802
        self.chunks = []
        if not self.done.called:
            self.done.callback(None)


class KafkaProtocol(Protocol):
    """One client connection.

    Args:
        dispatcher: ``dispatch(request, connection) -> chunks | None | Deferred``
            (None = no response, e.g. acks=0).
        max_request_size: ``socket.request.max.bytes``.
        idle_ms: ``connections.max.idle.ms``.
        clock: the reactor (for timers).
        listener: the listener name this connection arrived on.
    """

    def __init__(
        self, dispatcher: Any, max_request_size: int, idle_ms: int, clock: Any, listener: str = "PLAINTEXT",
        security: ListenerSecurity | None = None,
    ) -> None:
        self.dispatcher = dispatcher
        self.security = security if security is not None else ListenerSecurity(listener, "PLAINTEXT")
        self.authenticator: SaslServerAuthenticator | None = self.security.new_authenticator(clock.seconds)
        # Before SASL authentication a frame may be only as large as a SASL token may be
        # (sasl.server.max.receive.size): a 2 GB size prefix is refused before anything is allocated.
        first_max = max_request_size if self.authenticator is None else self.security.sasl_max_receive_size
        self.frames = FrameBuffer(first_max)
        self.max_request_size = max_request_size
        self.idle_s = idle_ms / 1000.0
        self.clock = clock
        self.listener = listener
        self.busy = False
        self.paused = False
        self.closed = False
        #: muted for a client quota: nothing is read until the unmute timer fires
        self.muted = False
        self._idle_call = None
        #: when the current throttle ends (reactor seconds), set by a quota decision
        self._throttled_until: float | None = None
        self._unmute_call: Any = None
        self._draining = False
        self.connection: Connection | None = None
        #: told each answered request's Kafka request times (see :mod:`mafka.broker.request_metrics`)
        self.request_metrics: Any = None
        #: the request being served and its monotonic times: received, handler started, handler
        #: returned, response ready
        self._timing: list[Any] | None = None
        self._received_at = 0.0
        # SSL (not SASL_SSL): the principal is the client certificate's, read once the handshake is done
        self._certificate_pending = self.security.uses_tls and not self.security.uses_sasl

    def _take_certificate_principal(self) -> bool:
        """Sets the SSL principal from the client certificate; False (and closed) if no rule maps it."""
        assert self.connection is not None
        try:
            subject = peer_certificate_subject(self.transport)
            self.connection.principal = self.security.certificate_principal(subject)
        except NoMatchingRule as exc:
            log.info("closing connection %s: %s", self.connection.peer, exc)
            self.close()
            return False
        return True

    # ------------------------------------------------------------------ lifecycle

    def connectionMade(self) -> None:  # noqa: N802
        # As Kafka's SocketServer: no Nagle.  A response is often a small header
        # write followed by a sendfile region; with Nagle the region would wait
        # for the client's delayed ACK (tens of milliseconds per round trip).
        transport = tcp_transport(self)
        set_no_delay(transport)
        set_read_size(transport)
        peer = transport.getPeer()
        host = str(getattr(peer, "host", "?"))
        self.connection = Connection(
            f"{host}:{getattr(peer, 'port', '?')}", self.listener, self.close,
            host=host, security_protocol=self.security.security_protocol, throttle=self.throttle,
        )
        self._touch()

    def connectionLost(self, reason: Any = None) -> None:  # noqa: N802
        self.closed = True
        if self._idle_call is not None and self._idle_call.active():
            self._idle_call.cancel()
        self._idle_call = None
        self._cancel_unmute()

    def close(self) -> None:
        """Closes this connection at once (other connections are untouched)."""
        if not self.closed:
            self.closed = True
            self._cancel_unmute()
            tcp_transport(self).abortConnection()

    def _cancel_unmute(self) -> None:
        if self._unmute_call is not None and self._unmute_call.active():
            self._unmute_call.cancel()
        self._unmute_call = None

    def _touch(self) -> None:
        if self.idle_s <= 0:
            return
        if self._idle_call is not None and self._idle_call.active():
            self._idle_call.reset(self.idle_s)
        else:
            self._idle_call = self.clock.callLater(self.idle_s, self._idle_timeout)

    def _idle_timeout(self) -> None:
        self._idle_call = None
        if self.busy:  # a parked request (a long poll) is not idleness
            self._touch()
            return
        log.info("closing idle connection %s", self.connection.peer if self.connection else "?")
        self.close()

    # ------------------------------------------------------------------ input

    def dataReceived(self, data: bytes) -> None:  # noqa: N802
        if self.closed:
            return
        self._touch()
        try:
            self.frames.feed(data)
        except ProtocolError as exc:
            self._refuse(exc)
            return
        if self.busy:
            if not self.paused and self.frames.buffered > self.max_request_size:
                self.paused = True
                tcp_transport(self).pauseProducing()
            return
        self._next()

    def _next(self) -> None:
        if self._draining:
            return  # the loop below is running further up the stack; it picks up the next frame
        self._draining = True
        try:
            self._drain()
        finally:
            self._draining = False

    def _drain(self) -> None:
        while not self.busy and not self.closed:
            try:
                frame = self.frames.next_frame()
            except ProtocolError as exc:
                self._refuse(exc)
                return
            if frame is None:
                if self.paused:
                    self.paused = False
                    tcp_transport(self).resumeProducing()
                return
            self._received_at = monotonic()
            if self._certificate_pending:
                self._certificate_pending = False
                if not self._take_certificate_principal():
                    return
            auth = self.authenticator
            if auth is not None and auth.expects_raw_token:
                self._authentication_step(auth.on_raw_token(bytes(frame)), None)
                continue
            if len(frame) >= DECODE_IN_THREAD_BYTES and _api_key(frame) in _DECODED_IN_THREAD:
                # A controller request for thousands of partitions takes most of a second to decode:
                # not on the reactor.  Nothing more is read from this connection meanwhile.
                self.busy = True
                size = len(frame)
                d = threads.deferToThread(decode_request, bytes(frame))
                d.addCallbacks(self._decoded, self._undecodable, callbackArgs=(size,))
                return
            try:
                request = decode_request(frame)
            except ProtocolError as exc:
                self._refuse(exc)
                return
            if not self._dispatch(request, len(frame)):
                continue

    def _dispatch(self, request: Request, size: int) -> bool:
        """Hands a decoded request to the dispatcher (False: the authenticator kept it, read on)."""
        auth = self.authenticator
        if auth is not None:
            step = auth.on_request(request.header.api_key, request.header.api_version, request.body)
            if step is not DISPATCH:
                self._authentication_step(step, request)
                return False
        self.busy = True
        if self.connection is not None:
            self.connection.request_size = size
        started = monotonic()
        timing = self._timing = [request, self._received_at, started, started, started]
        d = defer.maybeDeferred(self.dispatcher.dispatch, request, self.connection)
        timing[3] = timing[4] = monotonic()
        d.addCallback(self._respond, request)
        d.addErrback(self._failed, request)
        return True

    def _decoded(self, request: Request, size: int) -> None:
        if self.closed:
            return
        self.busy = False
        if not self._dispatch(request, size):
            self._next()

    def _undecodable(self, failure: Any) -> None:
        if self.closed:
            return
        if failure.check(ProtocolError):
            self._refuse(failure.value)
            return
        log.error("decoding a request failed: %s", failure.getErrorMessage())
        self.close()

    def _authentication_step(self, step: Any, request: Request | None) -> None:
        """Carries out what the SASL authenticator decided for a frame it kept from the dispatcher."""
        auth = self.authenticator
        assert auth is not None and self.connection is not None
        if isinstance(step, Close):
            log.info("closing connection %s: %s", self.connection.peer, step.reason)
            self.close()
            return
        if auth.principal is not None and self.connection.principal != auth.principal:
            self.connection.principal = auth.principal
            self.frames.max_size = self.max_request_size
        transport = tcp_transport(self)
        if isinstance(step, RawReply):
            transport.write(len(step.token).to_bytes(4, "big") + step.token)
            return
        assert isinstance(step, Reply) and request is not None
        data = encode_response(request.header, step.body)
        if step.delay_s > 0:
            self.busy = True  # read nothing more; the connection closes after this reply
            self.clock.callLater(step.delay_s, self._send_then_close, data)
            return
        transport.write(data)
        if step.close:
            self._send_then_close(None)

    def _send_then_close(self, data: bytes | None) -> None:
        if self.closed:
            return
        transport = tcp_transport(self)
        if data is not None:
            transport.write(data)
        self.closed = True
        transport.loseConnection()  # after the buffered reply is written

    def _refuse(self, exc: ProtocolError) -> None:
        log.info("closing connection %s: %s", self.connection.peer if self.connection else "?", exc)
        self.close()

    # ------------------------------------------------------------------ output

    def _respond(self, chunks: list[Any] | None, request: Request) -> defer.Deferred | None:
        if self.closed:
            return None
        timing = self._timing
        if timing is not None and timing[0] is request:
            timing[4] = monotonic()
        if chunks is NO_RESPONSE:
            self._done(None)
            return None
        if all(isinstance(c, _BYTES) for c in chunks):
            tcp_transport(self).writeSequence(chunks)
            self._done(None)
            return None
        if self.security.uses_tls:
            # sendfile would put plaintext under the TLS layer: the regions are read into memory
            # instead, in a worker thread (a fetch response can be megabytes of segment).
            d = threads.deferToThread(read_regions, chunks)
            d.addCallback(self._respond, request)
            d.addErrback(self._failed, request)
            return None
        done: defer.Deferred = defer.Deferred()
        done.addCallback(self._done)
        done.addErrback(self._after_write_failed)
        writer = _ResponseWriter(self.transport, list(chunks), done)
        tcp_transport(self).registerProducer(writer, False)
        return None

    def _done(self, _: Any) -> None:
        self.busy = False
        self._touch()
        timing, self._timing = self._timing, None
        if timing is not None and self.request_metrics is not None:
            self._record_times(timing)
        until, self._throttled_until = self._throttled_until, None
        if until is not None:
            delay = until - self.clock.seconds()
            if delay > 0 and not self.closed:
                self._mute(delay)
                return
        self._next()

    def _record_times(self, timing: list[Any]) -> None:
        request, received, started, returned, ready = timing
        sent = monotonic()
        header = request.header
        name = request_name(request.spec.name, header.api_key, request.body)
        self.request_metrics.record(
            name, header.api_version, (started - received) * 1000.0, (returned - started) * 1000.0,
            (ready - returned) * 1000.0, (sent - ready) * 1000.0, (sent - received) * 1000.0)

    # ------------------------------------------------------------------ quota throttling (KIP-219)

    def throttle(self, throttle_ms: int) -> None:
        """Mutes this connection for *throttle_ms* from now, once the response in progress is written.

        Kafka's ``ClientQuotaManager.throttle``: the throttle is counted from
        the decision, and the channel is unmuted when both the response has
        been sent and the time has passed.  A later end already set is kept.
        """
        if throttle_ms <= 0:
            return
        until = self.clock.seconds() + throttle_ms / 1000.0
        if self._throttled_until is None or until > self._throttled_until:
            self._throttled_until = until

    def _mute(self, delay_s: float) -> None:
        # Busy: frames that arrive anyway (already read by Twisted, or TLS-buffered) wait in the buffer.
        self.busy = True
        self.muted = True
        if not self.paused:
            self.paused = True
            tcp_transport(self).pauseProducing()
        self._unmute_call = self.clock.callLater(delay_s, self._unmute)

    def _unmute(self) -> None:
        self._unmute_call = None
        self.muted = False
        if self.closed:
            return
        self.busy = False
        self._touch()
        if self.paused and self.frames.buffered <= self.max_request_size:
            self.paused = False
            tcp_transport(self).resumeProducing()
        self._next()

    def _after_write_failed(self, failure: Any) -> None:
        """Going on after a written response (to the next request) raised: close, never hang."""
        log.error(
            "serving %s after a response failed; closing the connection",
            self.connection.peer if self.connection else "?",
            exc_info=(failure.type, failure.value, failure.getTracebackObject()),
        )
        self.busy = False
        self.close()

    def _failed(self, failure: Any, request: Request) -> None:
        log.error(
            "%s v%d from %s failed; closing the connection",
            request.spec.name,
            request.header.api_version,
            self.connection.peer if self.connection else "?",
            exc_info=(failure.type, failure.value, failure.getTracebackObject()),
        )
        self.busy = False
        self.close()


class KafkaServerFactory(Factory):
    """Builds a :class:`KafkaProtocol` per accepted connection."""

    def __init__(
        self,
        dispatcher: Any,
        *,
        max_request_size: int = DEFAULT_MAX_FRAME,
        idle_ms: int = 600000,
        clock: Any = None,
        listener: str = "PLAINTEXT",
        security: ListenerSecurity | None = None,
        request_metrics: Any = None,
    ) -> None:
        if clock is None:
            from twisted.internet import reactor as clock  # noqa: PLC0415 (default reactor only when none given)
        self.dispatcher = dispatcher
        self.max_request_size = max_request_size
        self.idle_ms = idle_ms
        self.clock = clock
        self.listener = listener
        self.security = security
        #: a :class:`~mafka.broker.request_metrics.RequestMetrics` told each answered request's times (or None)
        self.request_metrics = request_metrics

    def buildProtocol(self, addr: Any) -> KafkaProtocol:  # noqa: N802
        protocol = KafkaProtocol(
            self.dispatcher, self.max_request_size, self.idle_ms, self.clock, self.listener, self.security
        )
        protocol.request_metrics = self.request_metrics
        return protocol
