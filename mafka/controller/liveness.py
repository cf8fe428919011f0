"""Brokers whose listener refuses connections: the controller's fast path for a broker that certainly died.

ZooKeeper session expiry stays the authority on whether a broker is alive:
a broker frozen (SIGSTOP, a long GC-like pause) or cut off by the network
keeps its session until ``zookeeper.session.timeout.ms`` passes, and until
then the controller must treat it as alive.  But when a broker's *process*
is gone — killed, crashed — the controller can know at once: the kernel
closed the process's sockets, and a connection to the broker's registered
host and port is **refused** (TCP RST), because no process holds the port.
A frozen process still holds its listening socket (the kernel completes the
handshake into its backlog) and a dropped network answers nothing; neither
refuses.

:class:`BrokerLivenessWatch` keeps one idle TCP connection to the
inter-broker listener of every live broker.  When that connection closes it
connects again at once: a refusal is reported (``on_refused(broker, epoch)``,
once per registration) and the controller then fences the broker as if its
session had expired — if its registration in ZooKeeper is still the one the
controller knows (``mafka.controller.cluster_changes``).  A connection that
succeeds is kept as the new watch; a timeout or any other error is retried
after ``retry_s`` (never a verdict).  A fenced broker whose registration
remains is probed every ``retry_s``; if connections succeed again for
``comeback_after_s`` in a row (a firewall that answered with resets, say),
``on_reachable(broker, epoch)`` lets the controller take it back.  The wait
is the ZooKeeper session timeout: a broker *restarted* on the same port
also accepts connections, but its old session expires within that time and
it registers anew — the ordinary path — so only a process that kept its
session all along is taken back this way.

Why acting on a refusal is safe: everything the controller does for a dead
broker (new leaders from the ISR, the broker out of every ISR, all through
ZooKeeper's compare-and-set with leader and controller epochs) is what it
does after a session expiry, and is safe even if the broker were alive — a
zombie leader is fenced by the leader epoch, its acks need an ISR that no
longer includes it.  The refusal only decides *when*: it must not move
leadership away from a broker that is merely slow, and a slow or frozen
broker never refuses.  A broker restarted on the same port answers the probe
(no refusal); it registers anew once its old session is gone, as today.

The Twisted edge; the connection attempts go through an injected
``connect(host, port, timeout_s) -> Deferred`` firing with an object whose
``closed`` Deferred fires when the connection ends (and which has
``close()``), so tests drive it with fakes.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from twisted.internet import defer, error, protocol
from twisted.internet.endpoints import TCP4ClientEndpoint, connectProtocol
from twisted.python.failure import Failure

__all__ = ["BrokerLivenessWatch", "WatchConnection", "tcp_connect"]

log = logging.getLogger("mafka.controller.liveness")


class WatchConnection(protocol.Protocol):
    """An idle TCP connection whose end is the news: ``closed`` fires when it ends."""

    def __init__(self) -> None:
        self.closed: defer.Deferred[None] = defer.Deferred()
        self._closing = False

    def dataReceived(self, data: bytes) -> None:  # noqa: N802 - Twisted's name
        pass  # nothing is ever asked, so nothing is expected

    def connectionLost(self, reason: Failure = protocol.connectionDone) -> None:  # noqa: N802
        if not self.closed.called:
            self.closed.callback(None)

    def close(self) -> None:
        self._closing = True
        if self.transport is not None:
            self.transport.loseConnection()


def tcp_connect(reactor: Any) -> Callable[[str, int, float], defer.Deferred[Any]]:
    """The real ``connect``: a plain TCP connection (no TLS, no Kafka request) to *host*:*port*."""

    def connect(host: str, port: int, timeout_s: float) -> defer.Deferred[Any]:
        endpoint = TCP4ClientEndpoint(reactor, host, port, timeout=timeout_s)
        d: defer.Deferred[Any] = connectProtocol(endpoint, WatchConnection())  # type: ignore[no-untyped-call]
        return d

    return connect


@dataclass(eq=False)
class _Watched:
    broker_id: int
    epoch: int
    host: str
    port: int
    fenced: bool = False
    connection: Any = None
    retry: Any = None
    reported: bool = False
    reachable_since: float | None = None
    after_loss: bool = False  # a probe started because the watch connection closed is in flight


class BrokerLivenessWatch:
    """Watches the brokers' listeners (see the module docstring).

    Args:
        reactor: ``IReactorTime`` (retries).
        on_refused: ``(broker_id, epoch)`` — a live broker's listener refused a connection.
        on_reachable: ``(broker_id, epoch)`` — a fenced broker's listener accepted one.
        connect: ``(host, port, timeout_s) -> Deferred`` of a connection (default: :func:`tcp_connect`).
        probe_timeout_s: how long a connection attempt may take.
        retry_s: the wait before probing again after an attempt that proved nothing.
        comeback_after_s: how long a fenced broker must accept connections before it is reported reachable.
    """

    def __init__(
        self, reactor: Any, on_refused: Callable[[int, int], None], on_reachable: Callable[[int, int], None], *,
        connect: Callable[[str, int, float], defer.Deferred[Any]] | None = None, probe_timeout_s: float = 1.0,
        retry_s: float = 1.0, comeback_after_s: float = 18.0,
    ) -> None:
        self.reactor = reactor
        self.on_refused = on_refused
        self.on_reachable = on_reachable
        self.connect = connect or tcp_connect(reactor)
        self.probe_timeout_s = probe_timeout_s
        self.retry_s = retry_s
        self.comeback_after_s = comeback_after_s
        self._brokers: dict[int, _Watched] = {}
        self._settle_waiters: list[defer.Deferred[None]] = []

    def watched(self) -> dict[int, tuple[int, bool]]:
        """broker id → (epoch, fenced), for tests and tools."""
        return {b: (w.epoch, w.fenced) for b, w in self._brokers.items()}

    def watch(self, broker_id: int, epoch: int, host: str, port: int) -> None:
        """Watches a live broker's registration (replacing any watch of an older one)."""
        self._start(_Watched(broker_id, epoch, host, port))

    def fence(self, broker_id: int, epoch: int, host: str, port: int) -> None:
        """Probes a broker declared dead while its registration remains, for a comeback."""
        self._start(_Watched(broker_id, epoch, host, port, fenced=True))

    @property
    def checking(self) -> bool:
        """Whether a watched connection just closed and the probe that decides what it meant is in flight."""
        return any(w.after_loss for w in self._brokers.values())

    def when_checked(self) -> defer.Deferred[None]:
        """Fires once no probe started by a closed connection is in flight (at once if none is)."""
        d: defer.Deferred[None] = defer.Deferred()
        if self.checking:
            self._settle_waiters.append(d)
        else:
            d.callback(None)
        return d

    def forget(self, broker_id: int) -> None:
        """Stops watching *broker_id*."""
        w = self._brokers.pop(broker_id, None)
        if w is not None:
            self._drop(w)

    def stop(self) -> None:
        for broker_id in list(self._brokers):
            self.forget(broker_id)

    # ------------------------------------------------------------------ internals

    def _start(self, w: _Watched) -> None:
        self.forget(w.broker_id)
        self._brokers[w.broker_id] = w
        self._probe(w)

    def _current(self, w: _Watched) -> bool:
        return self._brokers.get(w.broker_id) is w

    def _checked(self, w: _Watched) -> None:
        """*w*'s probe after a closed connection has an answer (or *w* is no longer watched)."""
        if not w.after_loss:
            return
        w.after_loss = False
        if self._settle_waiters and not self.checking:
            waiters, self._settle_waiters = self._settle_waiters, []
            for d in waiters:
                if not d.called:  # a waiter may have stopped waiting (mafka.broker.peer_liveness)
                    d.callback(None)

    def _drop(self, w: _Watched) -> None:
        self._checked(w)
        if w.retry is not None and w.retry.active():
            w.retry.cancel()
        w.retry = None
        conn, w.connection = w.connection, None
        if conn is not None:
            conn.close()

    def _probe(self, w: _Watched) -> None:
        w.retry = None
        d = self.connect(w.host, w.port, self.probe_timeout_s)
        d.addCallbacks(lambda conn: self._connected(w, conn), lambda f: self._failed(w, f))

    def _later(self, w: _Watched) -> None:
        if self._current(w):
            w.retry = self.reactor.callLater(self.retry_s, self._probe, w)

    def _connected(self, w: _Watched, conn: Any) -> None:
        if not self._current(w):
            conn.close()
            return
        self._checked(w)
        if w.fenced:
            conn.close()
            now = self.reactor.seconds()
            if w.reachable_since is None:
                w.reachable_since = now
            elif now - w.reachable_since >= self.comeback_after_s:
                log.info("broker %d (epoch %d) has accepted connections for %.0f s", w.broker_id, w.epoch,
                         now - w.reachable_since)
                self.on_reachable(w.broker_id, w.epoch)
            if self._current(w) and w.fenced:  # not taken back (yet): keep asking
                self._later(w)
            return
        w.connection = conn
        conn.closed.addCallback(lambda _: self._lost(w, conn))

    def _lost(self, w: _Watched, conn: Any) -> None:
        if not self._current(w) or w.connection is not conn:
            return  # closed by us
        w.connection = None
        w.after_loss = True
        self._probe(w)  # at once: a dead process refuses now, and it is then that it matters

    def _failed(self, w: _Watched, failure: Failure) -> None:
        if not self._current(w):
            return
        w.reachable_since = None
        if failure.check(error.ConnectionRefusedError) and not w.fenced:
            if not w.reported:
                w.reported = True
                log.info("broker %d (epoch %d) refuses connections at %s:%d: its process is gone",
                         w.broker_id, w.epoch, w.host, w.port)
                self.on_refused(w.broker_id, w.epoch)
        self._checked(w)  # after on_refused: whoever waited sees its verdict
        self._later(w)
