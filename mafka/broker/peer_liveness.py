"""Peers this broker finds dead: their leadership hidden from clients until the controller catches up.

When a leader's process dies, its clients see their connections close and
ask some other broker for metadata within milliseconds — before the
controller, even on its fast path for a refused port
(:mod:`mafka.controller.fast_failover`), has elected a successor and sent
UpdateMetadata (tens of milliseconds later).  Told the dead broker still
leads, or that no leader is known, librdkafka (2.16) waits for its next
one-second scan before it asks again.

So every broker watches the inter-broker listener of every other broker the
controller lists (:class:`~mafka.controller.liveness.BrokerLivenessWatch`:
one idle TCP connection each, probed again at once when it closes).  A
refused connection proves no process holds the port (the argument is in
:mod:`mafka.controller.liveness`); the broker then answers clients as if the
peer were gone (:meth:`MetadataCache.mark_unreachable
<mafka.broker.metadata_cache.MetadataCache.mark_unreachable>`): its
partitions LEADER_NOT_AVAILABLE, not a coordinator (it stays listed, as
registered brokers are).  A Metadata answer waits (:meth:`PeerLiveness.gate`,
at most half a second) while the probe after a closed connection is in
flight (a millisecond) and while a peer found dead still leads partitions
(until the controller's UpdateMetadata fails it over, tens of milliseconds):
so the clients that ask in the very milliseconds in which the dying
broker's connections close everywhere are told the new leaders.  Nothing else
changes: replication, the controller's decisions and inter-broker requests
follow the controller's word alone, so a mistaken hint costs clients a
retry, never a record.  The hint ends when the controller's UpdateMetadata
no longer lists the peer (the usual end: it failed over), when it lists a
different endpoint, or when a connection to the peer succeeds again (probed
every second: a broker restarted on the same port).

``mafka.fast.failover.enable=false`` turns this off with the controller's
fast path.
"""

from __future__ import annotations

import itertools
import logging
from collections.abc import Callable
from typing import Any

from twisted.internet import defer

from mafka.broker.metadata_cache import MetadataCache
from mafka.controller.liveness import BrokerLivenessWatch

__all__ = ["PeerLiveness"]

log = logging.getLogger("mafka.broker.peer_liveness")

#: How long a Metadata answer may wait for a peer to be judged and, found dead, failed over.
GATE_WAIT_S = 0.5

#: Builds the watch: ``(on_refused, on_reachable) -> BrokerLivenessWatch``.
WatchFactory = Callable[[Callable[[int, int], None], Callable[[int, int], None]], BrokerLivenessWatch]


class PeerLiveness:
    """Keeps one :class:`BrokerLivenessWatch` on the peers the metadata cache lists (see the module docstring).

    Args:
        broker_id: this broker (not watched).
        cache: the metadata cache whose :attr:`~MetadataCache.unreachable` this maintains.
        listener: the inter-broker listener's name (whose endpoints are watched).
        make_watch: builds the watch from the two callbacks.
        reactor: ``IReactorTime``: how long answers wait (:meth:`gate`).
        gate_wait_s: the longest an answer waits, and how long after a refusal a failover is waited for.
    """

    def __init__(
        self, broker_id: int, cache: MetadataCache, listener: str, make_watch: WatchFactory, reactor: Any,
        *, gate_wait_s: float = GATE_WAIT_S,
    ) -> None:
        self.broker_id = broker_id
        self.reactor = reactor
        self.gate_wait_s = gate_wait_s
        #: broker id -> when its listener refused (the failover is waited for only that long after)
        self._refused_at: dict[int, float] = {}
        self.cache = cache
        self.listener = listener
        self.watch = make_watch(self._refused, self._reachable)
        self._tokens = itertools.count(1)
        #: broker id -> (token, host, port) of the watch on it
        self._watched: dict[int, tuple[int, str, int]] = {}
        self._gate_waiters: list[defer.Deferred[None]] = []

    def sync(self) -> None:
        """Watch exactly the brokers the cache lists (call after every UpdateMetadata)."""
        listed: dict[int, tuple[str, int]] = {}
        for b in self.cache.brokers:
            endpoint = self.cache.endpoint(b, self.listener)
            if b != self.broker_id and endpoint is not None:
                listed[b] = endpoint
        for b in list(self._watched):
            if b not in listed:
                del self._watched[b]
                self.watch.forget(b)
        for b, (host, port) in listed.items():
            current = self._watched.get(b)
            if current is not None and current[1:] == (host, port):
                continue
            if current is not None:
                self.cache.mark_reachable(b)  # a new endpoint: a new process, judged afresh
            token = next(self._tokens)
            self._watched[b] = (token, host, port)
            self.watch.watch(b, token, host, port)
        self._refused_at = {b: t for b, t in self._refused_at.items() if b in self.cache.unreachable}
        self._open_gate()  # the controller may just have failed a dead peer over

    def stop(self) -> None:
        self._watched.clear()
        self.watch.stop()
        waiters, self._gate_waiters = self._gate_waiters, []
        for d in waiters:
            if not d.called:
                d.callback(None)

    def gate(self) -> defer.Deferred[None] | None:
        """None, or a Deferred a Metadata answer should wait for (at most :attr:`gate_wait_s`).

        Not None while a peer whose connection just closed is being judged
        (its clients ask in the very milliseconds in which its connections
        close everywhere, one reactor turn before the probe's answer), or
        while a peer found dead still leads partitions here (the controller
        has not failed it over yet: tens of milliseconds on its fast path).
        A client answered then would be told no leader is known, and
        librdkafka asks again only at its next one-second scan; answered a
        moment later it is told the new leaders.  A failover is waited for
        only within :attr:`gate_wait_s` of the refusal: a peer refusing this
        broker alone (a firewall between brokers) is never failed over, and
        answers must not wait for it.
        """
        if not self._waiting():
            return None
        d: defer.Deferred[None] = defer.Deferred()
        self._gate_waiters.append(d)

        def give_up() -> None:
            if not d.called:
                d.callback(None)

        timeout = self.reactor.callLater(self.gate_wait_s, give_up)

        def done(result: object) -> object:
            if timeout.active():
                timeout.cancel()
            return result

        d.addBoth(done)
        if self.watch.checking:
            self.watch.when_checked().addCallback(lambda _: self._open_gate())
        return d

    def _waiting(self) -> bool:
        if self.watch.checking:
            return True
        now = self.reactor.seconds()
        recent = [b for b in self.cache.unreachable if now - self._refused_at.get(b, now) < self.gate_wait_s]
        return self.cache.leads_any(recent)

    def _open_gate(self) -> None:
        if not self._gate_waiters or self._waiting():
            return
        waiters, self._gate_waiters = self._gate_waiters, []
        for d in waiters:
            if not d.called:
                d.callback(None)

    def _refused(self, broker_id: int, token: int) -> None:
        current = self._watched.get(broker_id)
        if current is None or current[0] != token:
            return
        if self.cache.mark_unreachable(broker_id):
            self._refused_at[broker_id] = self.reactor.seconds()
            log.info("broker %d refuses connections: clients are told it is gone until the controller says more",
                     broker_id)
        self.watch.fence(broker_id, token, current[1], current[2])  # probed every second for a comeback

    def _reachable(self, broker_id: int, token: int) -> None:
        current = self._watched.get(broker_id)
        if current is None or current[0] != token:
            return
        if self.cache.mark_reachable(broker_id):
            log.info("broker %d accepts connections again", broker_id)
        self.watch.watch(broker_id, token, current[1], current[2])
        self._open_gate()


def peer_liveness_for(server: Any) -> PeerLiveness | None:
    """The server's :class:`PeerLiveness`, or None when ``mafka.fast.failover.enable`` is off."""
    config = server.config
    if not getattr(config, "mafka_fast_failover_enable", False):
        return None

    def make_watch(on_refused: Callable[[int, int], None], on_reachable: Callable[[int, int], None]) -> BrokerLivenessWatch:
        # A comeback is taken at the second successful probe in a row: only clients' answers depend on it.
        return BrokerLivenessWatch(server.reactor, on_refused, on_reachable, comeback_after_s=0.0)

    return PeerLiveness(server.broker_id, server.metadata_cache, config.inter_broker_listener, make_watch, server.reactor)
