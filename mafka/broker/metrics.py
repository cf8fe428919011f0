"""The broker's Prometheus endpoint: ``/metrics`` and ``/health`` on ``mafka.metrics.port`` (Twisted edge).

On by default (``mafka.metrics.port=9404``; ``-1`` serves nothing, ``0`` any
free port); ``mafka cluster up`` gives each local broker its own port and
writes its URL into ``cluster.json``.  The families and their names are
:mod:`mafka.broker.metrics_families`' (jmx_exporter's names for Kafka's
MBeans, kafka_exporter's for consumer lag, ``mafka_`` for Mafka's own); the
README's "Metrics" table lists them all.

A scrape never holds the reactor for long: :func:`~.metrics_snapshot.take_snapshot`
copies the broker's state a slice of partitions per reactor turn, the text is
rendered from that copy in a worker thread, and scrapes that arrive while one
is being prepared share its answer.  ``/health`` answers 200 ``ok`` once the
broker serves clients, 503 before.
"""

from __future__ import annotations

import logging
import time
from typing import Any

from twisted.internet import defer, threads
from twisted.web.resource import Resource
from twisted.web.server import NOT_DONE_YET, Site

from .metrics_families import families
from .metrics_snapshot import Snapshot, take_snapshot
from .metrics_text import CONTENT_TYPE, exposition

__all__ = ["metrics_site", "render_metrics", "scrape"]

log = logging.getLogger("mafka.broker.metrics")


def render_metrics(broker: Any, snapshot: Snapshot, extra: list[Any] | None = None) -> bytes:
    """The exposition text of *snapshot* (any thread); *extra*: more prometheus_client collectors."""
    snapshot.monotonic_ms = int(time.monotonic() * 1000)
    blocks: list[Any] = list(families(snapshot, broker))
    for collector in extra or ():
        blocks.extend(collector.collect())
    return exposition(blocks)


def scrape(broker: Any, extra: list[Any] | None = None) -> defer.Deferred:
    """A Deferred firing with the broker's exposition text: snapshot on the reactor, render in a thread."""
    d = take_snapshot(broker)
    return d.addCallback(lambda snap: threads.deferToThread(render_metrics, broker, snap, extra))


class _Metrics(Resource):
    isLeaf = True

    def __init__(self, broker: Any, extra: list[Any]) -> None:
        super().__init__()
        self.broker = broker
        self.extra = extra
        #: the scrape being prepared: requests arriving meanwhile wait for its answer
        self._pending: list[Any] | None = None

    def render_GET(self, request: Any) -> Any:  # noqa: N802 - Twisted's name
        request.setHeader(b"Content-Type", CONTENT_TYPE.encode())
        if self._pending is not None:
            self._pending.append(request)
            return NOT_DONE_YET
        waiting = self._pending = [request]

        def answer(body: Any) -> None:
            self._pending = None
            failed = not isinstance(body, bytes)
            if failed:
                log.error("a metrics scrape failed: %s", body.getTraceback())
            for r in waiting:
                if r.finished or getattr(r, "_disconnected", False):
                    continue
                if failed:
                    r.setResponseCode(500)
                    r.write(b"scrape failed\n")
                else:
                    r.write(body)
                r.finish()

        scrape(self.broker, self.extra).addBoth(answer)
        return NOT_DONE_YET


class _Health(Resource):
    isLeaf = True

    def __init__(self, broker: Any) -> None:
        super().__init__()
        self.broker = broker

    def render_GET(self, request: Any) -> bytes:  # noqa: N802 - Twisted's name
        dispatcher = getattr(self.broker, "_dispatcher", None)
        ready = dispatcher is not None and getattr(dispatcher, "is_open", True)
        request.setResponseCode(200 if ready else 503)
        return b"ok\n" if ready else b"starting\n"


def metrics_site(broker: Any) -> Site:
    """The HTTP site serving ``/metrics`` and ``/health`` for ``broker``."""
    extra: list[Any] = []
    background = getattr(broker, "background", None)
    if background is not None:
        # the broker's own Counter: no clash between brokers of one process
        extra.append(background.failures)
    root = Resource()
    root.putChild(b"metrics", _Metrics(broker, extra))
    root.putChild(b"health", _Health(broker))
    return Site(root)
