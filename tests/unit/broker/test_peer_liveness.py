"""A broker hides from its clients a peer whose listener refuses (mafka.broker.peer_liveness), over fake connections."""

from __future__ import annotations

from twisted.internet import error, task

from mafka.broker.handlers import metadata as metadata_handler
from mafka.broker.peer_liveness import PeerLiveness
from mafka.controller.liveness import BrokerLivenessWatch
from mafka.errors import ErrorCode as E
from mafka.wire.codec import decode_body
from mafka.wire.registry import API_SPECS

from ..controller.test_liveness import FakeConn, Net
from .test_metadata_answers import (
    _broker,
    _partition,
    _topic,
    _update,
    answer_bytes,
    cluster,
    connection,
    make_broker,
    request,
)

LISTENER = "PLAINTEXT"


def make():
    """Broker 1's cache (peers 2 and 3 on PLAINTEXT) and its peer watch over fake connections."""
    clock, net = task.Clock(), Net()
    cache = cluster()

    def make_watch(on_refused, on_reachable):
        return BrokerLivenessWatch(clock, on_refused, on_reachable, connect=net.connect, retry_s=1.0,
                                   comeback_after_s=0.0)

    peers = PeerLiveness(1, cache, LISTENER, make_watch, clock)
    peers.sync()
    return clock, net, cache, peers


def broker_3_dies(net):
    """Broker 3's watch connection is accepted, then its process dies: the connection drops, the probe is refused."""
    conn3 = FakeConn()
    net.attempts[1][2].callback(conn3)
    conn3.drop()
    net.refuse()


def metadata_answer(cache):
    handle = metadata_handler.handlers(make_broker(cache))[3]
    data = answer_bytes(handle, request(9, None), connection(LISTENER))
    return decode_body(API_SPECS[3].response, 9, data)


def leaders(body, topic):
    t = next(t for t in body.topics if t.name == topic)
    return {p.partition_index: (p.error_code, p.leader_id) for p in t.partitions}


def test_a_refusing_peer_leads_nothing_for_clients_but_stays_listed():
    _, net, cache, _ = make()
    assert [(h, p) for h, p, _ in net.attempts] == [("plaintext-2.example", 9092), ("plaintext-3.example", 9093)]
    conns = [net.attempts[0][2], net.attempts[1][2]]
    live = [FakeConn(), FakeConn()]
    for d, conn in zip(conns, live, strict=True):
        d.callback(conn)
    before = metadata_answer(cache)
    assert leaders(before, "orders") == {0: (E.NONE, 1), 1: (E.NONE, 2), 2: (E.NONE, 3), 3: (E.NONE, 1)}
    live[1].drop()  # broker 3's process died
    net.refuse()
    assert cache.unreachable == {3}
    after = metadata_answer(cache)
    assert [b.node_id for b in after.brokers] == [1, 2, 3]  # still registered: listed
    assert leaders(after, "orders") == {0: (E.NONE, 1), 1: (E.NONE, 2), 2: (E.LEADER_NOT_AVAILABLE, -1),
                                        3: (E.NONE, 1)}
    assert leaders(after, "héllo.wörld") == {0: (E.LEADER_NOT_AVAILABLE, -1)}
    assert 3 in cache.brokers  # the controller's word is kept: only clients' answers change


def test_the_hint_ends_when_the_controller_drops_the_peer_and_a_new_registration_is_watched_afresh():
    _, net, cache, peers = make()
    broker_3_dies(net)
    assert cache.unreachable == {3}
    # The controller failed broker 3 over: its UpdateMetadata no longer lists it.
    cache.update(_update([_topic("orders", [_partition(2, 1)])], brokers=[_broker(1), _broker(2)]))
    peers.sync()
    assert cache.unreachable == frozenset() and 3 not in peers.watch.watched()
    attempts = len(net.attempts)
    # It registers anew: watched afresh, visible.
    cache.update(_update(brokers=[_broker(1), _broker(2), _broker(3)]))
    moved = cache.brokers[3].endpoints[LISTENER]
    assert moved == ("plaintext-3.example", 9093)
    peers.sync()
    assert len(net.attempts) == attempts + 1 and net.attempts[-1][:2] == moved
    assert leaders(metadata_answer(cache), "héllo.wörld") == {0: (E.NONE, 3)}


def test_a_peer_that_accepts_connections_again_is_shown_again():
    clock, net, cache, _ = make()
    broker_3_dies(net)
    assert cache.unreachable == {3}
    clock.advance(1.0)
    net.accept()  # restarted on the same port
    assert cache.unreachable == {3}  # one success is not yet a comeback
    clock.advance(1.0)
    net.accept()
    assert cache.unreachable == frozenset()
    assert leaders(metadata_answer(cache), "orders")[2] == (E.NONE, 3)


def test_a_peer_that_does_not_answer_is_not_hidden():
    """Frozen or cut off: a timeout proves nothing (the negative control)."""
    clock, net, cache, _ = make()
    net.attempts[1][2].errback(error.TimeoutError("no answer"))
    clock.advance(1.0)
    net.time_out()
    assert cache.unreachable == frozenset()
    assert leaders(metadata_answer(cache), "orders")[2] == (E.NONE, 3)


def connected(net):
    """Accept every pending watch connection; the connections by attempt index."""
    conns = {}
    for i, (_, _, d) in enumerate(net.attempts):
        if not d.called:
            conns[i] = FakeConn()
            d.callback(conns[i])
    return conns


def test_a_metadata_answer_waits_for_the_verdict_and_the_failover_of_a_dying_leader():
    clock, net, cache, peers = make()
    conns = connected(net)
    assert peers.gate() is None  # nothing happening: answered at once
    conns[1].drop()  # broker 3's connection closes; the probe is in flight
    gate = peers.gate()
    assert gate is not None and not gate.called
    net.refuse()  # dead: it still leads orders-2 and héllo.wörld-0 here
    assert cache.unreachable == {3} and not gate.called
    later = peers.gate()
    assert later is not None and not later.called
    # The controller's UpdateMetadata: broker 3 (still registered) leads nothing any more.
    led_by_3 = {(t, i) for t, parts in cache.partitions.items() for i, p in parts.items() if p.leader == 3}
    assert ("orders", 2) in led_by_3 and ("héllo.wörld", 0) in led_by_3
    cache.update(_update([_topic(t, [_partition(i, -1 if t == "héllo.wörld" else 1, epoch=10)]) for t, i in led_by_3]))
    peers.sync()
    assert gate.called and later.called
    assert leaders(metadata_answer(cache), "orders")[2] == (E.NONE, 1)
    assert peers.gate() is None


def test_a_peer_whose_connection_closed_but_that_accepts_again_holds_answers_only_for_the_probe():
    clock, net, _, peers = make()
    conns = connected(net)
    conns[0].drop()
    gate = peers.gate()
    assert gate is not None and not gate.called
    net.accept()  # alive (it closed an idle connection): no verdict, answer now
    assert gate.called and peers.gate() is None


def test_the_wait_is_bounded_when_no_failover_comes():
    clock, net, cache, peers = make()
    conns = connected(net)
    conns[1].drop()
    net.refuse()
    gate = peers.gate()
    assert gate is not None
    clock.advance(0.49)
    assert not gate.called
    clock.advance(0.02)
    assert gate.called
    assert leaders(metadata_answer(cache), "orders")[2] == (E.LEADER_NOT_AVAILABLE, -1)


def test_a_peer_refusing_this_broker_alone_holds_answers_only_briefly():
    """Never failed over (a firewall between brokers, say): after the bound, answers no longer wait."""
    clock, net, cache, peers = make()
    conns = connected(net)
    conns[1].drop()
    net.refuse()
    assert peers.gate() is not None
    clock.advance(0.6)
    assert cache.unreachable == {3} and peers.gate() is None
