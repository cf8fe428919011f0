"""Request dispatch: api key → handler, found in a registry, never an if/elif chain.

Each module of :mod:`mafka.broker.handlers` serves one API family and
exports ``handlers(broker) -> {api_key: handler}``; :func:`collect_handlers`
discovers them.  A handler takes ``(request, connection)`` and returns the
response body (a dict, or an :class:`~mafka.broker.encoded_body.EncodedBody`
already encoded), a Deferred of one, or
:data:`~mafka.broker.network.NO_RESPONSE`.  The dispatcher encodes bodies
into chunks (bytes and file regions) for the network edge.

Client quotas are applied here, centrally, rather than in each handler: once
any quota was ever configured (``quotas.enabled``), the dispatcher times each
handler's synchronous part, hands the body to the quota service
(:class:`~mafka.broker.client_quotas.ClientQuotaService`), which records the
request, sets ``throttle_time_ms`` and encodes, and tells the connection to
stay muted for the throttle time (``connection.throttle(ms)``, KIP-219).
Until then a request costs one attribute test more than without quotas.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
import time
from collections.abc import Callable, Mapping
from typing import Any

from twisted.internet import defer

from mafka.wire.codec import Request, encode_response_chunks, unsupported_api_versions_body

from . import handlers as handler_package
from .client_quotas import ClientQuotaService
from .encoded_body import response_chunks
from .network import NO_RESPONSE, Connection

__all__ = ["Dispatcher", "Handler", "collect_handlers", "NotHandled"]

log = logging.getLogger("mafka.broker")

Handler = Callable[[Request, Connection], Any]


class NotHandled(Exception):
    """A decodable API this broker does not serve (yet); the connection is closed."""


def collect_handlers(broker: Any) -> dict[int, Handler]:
    """Every handler of every module in :mod:`mafka.broker.handlers`."""
    found: dict[int, Handler] = {}
    for info in sorted(pkgutil.iter_modules(handler_package.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{handler_package.__name__}.{info.name}")
        for key, handler in module.handlers(broker).items():
            if key in found:
                raise RuntimeError(f"api key {key} handled twice ({info.name})")
            found[key] = handler
    return found


class Dispatcher:
    """Routes decoded requests to handlers and encodes what they answer.

    A dispatcher created with ``hold=True`` parks requests until it is told
    otherwise: :meth:`admit` lets some api keys through (a broker admits the
    controller's requests once it is registered), :meth:`open` releases
    everything, parked requests first, in arrival order.  A broker listens
    before it registers (it must know its ports), but like Kafka's
    ``startProcessingRequests`` it answers clients only once it is part of the
    cluster — and, beyond Kafka, only once the controller's first
    UpdateMetadata has filled its metadata cache, so a restarted broker never
    tells a client that the cluster has no brokers and no topics.
    """

    def __init__(self, handlers: Mapping[int, Handler], *, hold: bool = False,
                 observe: Callable[[Request, float], None] | None = None,
                 clock: Callable[[], float] = time.monotonic,
                 quotas: ClientQuotaService | None = None,
                 thread_clock_ns: Callable[[], int] = time.perf_counter_ns) -> None:
        self.handlers = dict(handlers)
        #: called with each request and the seconds until its response was ready (request metrics)
        self.observe = observe
        self.clock = clock
        #: the broker's client quotas (None: none are enforced)
        self.quotas = quotas
        #: times handlers for the request quota (nanoseconds)
        self.thread_clock_ns = thread_clock_ns
        self._held: list[tuple[defer.Deferred, Request, Connection]] | None = [] if hold else None
        self._admitted: frozenset[int] = frozenset()

    @property
    def is_open(self) -> bool:
        return self._held is None

    def admit(self, api_keys: frozenset[int] | set[int]) -> None:
        """While holding, let requests with these api keys through (parked ones included)."""
        if self._held is None:
            return
        self._admitted = frozenset(api_keys)
        waiting, self._held = self._held, []
        for entry in waiting:
            if entry[1].header.api_key in self._admitted:
                self._release(*entry)
            else:
                self._held.append(entry)

    def open(self) -> None:
        """Answer everything from now on; requests parked so far are dispatched in arrival order."""
        held, self._held = self._held or [], None
        for entry in held:
            self._release(*entry)

    def _release(self, d: defer.Deferred, request: Request, connection: Connection) -> None:
        defer.maybeDeferred(self.dispatch, request, connection).chainDeferred(d)

    def dispatch(self, request: Request, connection: Connection) -> Any:
        if self._held is not None and request.header.api_key not in self._admitted:
            d: defer.Deferred = defer.Deferred()
            self._held.append((d, request, connection))
            return d
        header = request.header
        if request.body is None:  # ApiVersions newer than ours: v0 body with error 35
            return encode_response_chunks(header, unsupported_api_versions_body())
        handler = self.handlers.get(header.api_key)
        if handler is None:
            raise NotHandled(f"{request.spec.name} is not served by this broker")
        quotas = self.quotas
        if quotas is not None and quotas.enabled:
            return self._dispatch_with_quotas(quotas, handler, request, connection)
        observe = self.observe
        if observe is None:
            result = handler(request, connection)
            if isinstance(result, defer.Deferred):
                return result.addCallback(self._encode, request)
            return self._encode(result, request)
        start = self.clock()
        result = handler(request, connection)
        if isinstance(result, defer.Deferred):
            return result.addCallback(self._encode_observed, request, start)
        return self._encode_observed(result, request, start)

    def _dispatch_with_quotas(
        self, quotas: ClientQuotaService, handler: Handler, request: Request, connection: Connection
    ) -> Any:
        quotas.prepare(request, connection)
        start = self.clock() if self.observe is not None else 0.0
        began = self.thread_clock_ns()
        result = handler(request, connection)
        # Only the synchronous part: what waits for replication or a long poll holds no thread (Kafka's
        # requestThreadTimeNanos ends when the handler returns, not when a delayed operation completes).
        handler_ns = self.thread_clock_ns() - began
        if isinstance(result, defer.Deferred):
            return result.addCallback(self._respond_with_quotas, quotas, request, connection, handler_ns, start)
        return self._respond_with_quotas(result, quotas, request, connection, handler_ns, start)

    def _respond_with_quotas(
        self, body: Any, quotas: ClientQuotaService, request: Request, connection: Connection, handler_ns: int,
        start: float,
    ) -> Any:
        if self.observe is not None:
            self.observe(request, self.clock() - start)
        chunks, throttle_ms = quotas.respond(request, connection, body, handler_ns)
        if throttle_ms > 0:
            mute = getattr(connection, "throttle", None)  # test doubles may have none
            if mute is not None:
                mute(throttle_ms)
        return chunks

    def _encode_observed(self, body: Any, request: Request, start: float) -> Any:
        self.observe(request, self.clock() - start)  # type: ignore[misc]  # set when called
        return self._encode(body, request)

    @staticmethod
    def _encode(body: Any, request: Request) -> Any:
        if body is NO_RESPONSE:
            return NO_RESPONSE
        return response_chunks(request.header, body)
