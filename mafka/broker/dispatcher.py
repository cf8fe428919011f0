"""Request dispatch: api key → handler, found in a registry, never an if/elif chain.

Each module of :mod:`mafka.broker.handlers` serves one API family and
exports ``handlers(broker) -> {api_key: handler}``; :func:`collect_handlers`
discovers them.  A handler takes ``(request, connection)`` and returns the
response body (a dict), a Deferred of one, or
:data:`~mafka.broker.network.NO_RESPONSE`.  The dispatcher encodes bodies
into chunks (bytes and file regions) for the network edge.
"""

from __future__ import annotations

import importlib
import logging
import pkgutil
from collections.abc import Callable, Mapping
from typing import Any

from twisted.internet import defer

from mafka.wire.codec import Request, encode_response_chunks, unsupported_api_versions_body

from . import handlers as handler_package
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
    """Routes decoded requests to handlers and encodes what they answer."""

    def __init__(self, handlers: Mapping[int, Handler]) -> None:
        self.handlers = dict(handlers)

    def dispatch(self, request: Request, connection: Connection) -> Any:
        header = request.header
        if request.body is None:  # ApiVersions newer than ours: v0 body with error 35
            return encode_response_chunks(header, unsupported_api_versions_body())
        handler = self.handlers.get(header.api_key)
        if handler is None:
            raise NotHandled(f"{request.spec.name} is not served by this broker")
        result = handler(request, connection)
        if isinstance(result, defer.Deferred):
            return result.addCallback(self._encode, request)
        return self._encode(result, request)

    @staticmethod
    def _encode(body: Any, request: Request) -> Any:
        if body is NO_RESPONSE:
            return NO_RESPONSE
        return encode_response_chunks(request.header, body)
