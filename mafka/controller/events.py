"""The controller's event queue (Kafka's ``ControllerEventManager``), on a Twisted reactor.

All controller work runs here, one event at a time, in the order queued.  An
event is a zero-argument callable that may be ``async`` (or return a
Deferred): the next event starts only once the previous one has finished,
however many ZooKeeper round trips it took.  Processing always starts on a
later reactor turn (``callLater(0)``), never inside the caller — so a
ZooKeeper watch or session callback that queues an event never runs
controller code re-entrantly.

``clear_and_put`` drops the events still waiting (not the one running), as
Kafka does when the ZooKeeper session expires.

An event put with a ``key`` (a ZooKeeper watch's "re-read this" event) is
not queued again while one with the same key still waits: the waiting one
will read the latest state anyway.  ZooKeeper's one-shot watches coalesce
changes the same way for Kafka (a watch is set again only when its handler
reads); Mafka's persistent watches fire once per change, and thousands of
partitions make thousands of changes.  Each ``put`` returns a
Deferred firing with the event's result (or failing with its error); a
dropped event's Deferred fails with :class:`EventDropped`.
"""

from __future__ import annotations

import inspect
import logging
from collections import deque
from collections.abc import Callable, Hashable
from dataclasses import dataclass, field
from typing import Any

from twisted.internet import defer
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

__all__ = ["ControllerEventQueue", "EventDropped"]

log = logging.getLogger("mafka.controller.events")


class EventDropped(Exception):
    """The event was removed from the queue before it ran (session expiry, shutdown)."""


@dataclass(eq=False)
class _Event:
    name: str
    handler: Callable[[], Any]
    deferred: Deferred[Any] = field(default_factory=Deferred)
    key: Hashable = None
    #: Deferreds of the puts coalesced into this one: fired with its result
    followers: list[Deferred[Any]] = field(default_factory=list)


class ControllerEventQueue:
    """A FIFO of events processed one at a time on the reactor.

    Args:
        reactor: An ``IReactorTime`` (``callLater``).
        after_event: Called (with the event name) after each event finished,
            whether it succeeded or not.
    """

    def __init__(self, reactor: Any, *, after_event: Callable[[str], None] | None = None) -> None:
        self._reactor = reactor
        self._after_event = after_event
        self._queue: deque[_Event] = deque()
        #: waiting events put with a key, by key
        self._waiting_keys: dict[Hashable, _Event] = {}
        self._running: _Event | None = None
        self._call: Any = None
        self._closed = False

    @property
    def running(self) -> str | None:
        """The name of the event being processed, if any."""
        return None if self._running is None else self._running.name

    @property
    def pending(self) -> list[str]:
        """Names of the events waiting, in order."""
        return [event.name for event in self._queue]

    @property
    def idle(self) -> bool:
        return self._running is None and not self._queue

    def put(self, name: str, handler: Callable[[], Any], *, key: Hashable = None) -> Deferred[Any]:
        """Queues *handler*; the Deferred fires with its result once it has run.

        With a *key* (not None): if an event put with the same key is still
        waiting, nothing is queued and the Deferred fires with that event's
        result (*handler* is not called).
        """
        if key is not None and not self._closed:
            waiting = self._waiting_keys.get(key)
            if waiting is not None:
                follower: Deferred[Any] = Deferred()
                waiting.followers.append(follower)
                return follower
        event = _Event(name, handler, key=key)
        if self._closed:
            event.deferred.errback(EventDropped(f"{name}: the event queue is closed"))
            return event.deferred
        self._queue.append(event)
        if key is not None:
            self._waiting_keys[key] = event
        self._schedule()
        return event.deferred

    def clear_and_put(self, name: str, handler: Callable[[], Any]) -> Deferred[Any]:
        """Drops every waiting event, then queues *handler*."""
        self._drop_waiting(f"dropped for {name}")
        return self.put(name, handler)

    def close(self) -> None:
        """Drops the waiting events; later ``put`` calls fail at once (the running event finishes)."""
        self._closed = True
        self._drop_waiting("the event queue was closed")
        if self._call is not None and self._call.active():
            self._call.cancel()
        self._call = None

    # ------------------------------------------------------------------ internals

    def _drop_waiting(self, why: str) -> None:
        dropped, self._queue = self._queue, deque()
        self._waiting_keys.clear()
        for event in dropped:
            for d in (event.deferred, *event.followers):
                d.errback(EventDropped(f"{event.name}: {why}"))

    def _schedule(self) -> None:
        if self._closed or self._running is not None or not self._queue or self._call is not None:
            return
        self._call = self._reactor.callLater(0, self._run_next)

    def _run_next(self) -> None:
        self._call = None
        if self._running is not None or not self._queue:
            return
        event = self._queue.popleft()
        if event.key is not None and self._waiting_keys.get(event.key) is event:
            del self._waiting_keys[event.key]  # running: a change from now on needs a new event
        self._running = event
        try:
            result = event.handler()
            if inspect.iscoroutine(result):
                d: Deferred[Any] = Deferred.fromCoroutine(result)
            else:
                d = defer.maybeDeferred(lambda: result)
        except Exception:
            d = defer.fail(Failure())
        d.addBoth(self._finished, event)

    def _finished(self, result: Any, event: _Event) -> None:
        self._running = None
        if self._after_event is not None:
            try:
                self._after_event(event.name)
            except Exception:
                log.exception("after-event hook failed after %s", event.name)
        for d in (event.deferred, *event.followers):
            if isinstance(result, Failure):
                d.errback(result)
            else:
                d.callback(result)
        self._schedule()
