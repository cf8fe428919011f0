"""The reactor-side client connection against the broker's network edge, on loopback."""

from __future__ import annotations

import socket

import pytest
from twisted.internet import defer, reactor

from mafka.broker.dispatcher import Dispatcher, collect_handlers
from mafka.broker.network import KafkaServerFactory
from mafka.interbroker.connection import ConnectionLostError, InterBrokerConnection
from tests.conftest import in_reactor


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def listen(port: int):
    factory = KafkaServerFactory(Dispatcher(collect_handlers(None)), clock=reactor)
    return in_reactor(reactor.listenTCP, port, factory, interface="127.0.0.1")


def test_pipelined_requests_get_their_own_responses(reactor_thread):
    port = listen(0)
    conn = InterBrokerConnection(reactor, "127.0.0.1", port.getHost().port, "test")

    def many():
        return defer.gatherResults([conn.request(18, v, {}) for v in (0, 1, 2, 3, 0)])

    bodies = in_reactor(many)
    assert [b.error_code for b in bodies] == [0] * 5
    assert all(any(k.api_key == 0 and k.max_version == 9 for k in b.api_keys) for b in bodies)
    in_reactor(conn.close)
    in_reactor(port.stopListening)


def test_a_refused_connection_fails_the_waiting_request_at_once(reactor_thread):
    """Kafka's NetworkClient: a request waiting on a connection that cannot be made fails
    on the disconnect, not after its timeout; the next request connects again."""
    port_number = free_port()
    conn = InterBrokerConnection(reactor, "127.0.0.1", port_number, "test", backoff_s=0.05)
    error = in_reactor(lambda: conn.request(18, 0, {}).addErrback(lambda f: f.value), timeout=5)
    assert isinstance(error, ConnectionLostError) and "failed" in str(error)
    port = listen(port_number)
    body = in_reactor(conn.request, 18, 0, {})
    assert body.error_code == 0
    in_reactor(conn.close)
    in_reactor(port.stopListening)


def test_requests_in_flight_fail_when_the_broker_goes_away(reactor_thread):
    """A request outstanding on a connection that closes fails at once."""
    from twisted.internet import protocol as tprotocol

    class Silent(tprotocol.Protocol):
        def dataReceived(self, data):  # noqa: N802 - never answers; the test closes it
            factory.seen.append(self)

    factory = tprotocol.ServerFactory()
    factory.protocol = Silent
    factory.seen = []
    port = in_reactor(reactor.listenTCP, 0, factory, interface="127.0.0.1")
    conn = InterBrokerConnection(reactor, "127.0.0.1", port.getHost().port, "test")
    results = []
    in_reactor(lambda: conn.request(18, 0, {}).addBoth(results.append) and None)
    deadline = reactor.seconds() + 5
    while not factory.seen and reactor.seconds() < deadline:
        in_reactor(lambda: defer.succeed(None))
    assert factory.seen and results == []
    in_reactor(lambda: factory.seen[0].transport.loseConnection())
    while not results and reactor.seconds() < deadline:
        in_reactor(lambda: defer.succeed(None))
    assert results and results[0].check(ConnectionLostError)
    in_reactor(conn.close)
    in_reactor(port.stopListening)


def test_reconnects_no_sooner_than_the_backoff(reactor_thread):
    conn = InterBrokerConnection(reactor, "127.0.0.1", free_port(), "test", backoff_s=0.3)
    first = in_reactor(lambda: conn.request(18, 0, {}).addErrback(lambda f: reactor.seconds()))
    start = in_reactor(reactor.seconds)
    second = in_reactor(lambda: conn.request(18, 0, {}).addErrback(lambda f: reactor.seconds()))
    assert second - first >= 0.25 and second >= start
    in_reactor(conn.close)


def test_close_fails_queued_requests(reactor_thread):
    conn = InterBrokerConnection(reactor, "127.0.0.1", free_port(), "test", backoff_s=0.05)
    results = []
    in_reactor(lambda: conn.request(18, 0, {}).addBoth(results.append) and None)
    in_reactor(conn.close)
    assert len(results) == 1 and results[0].check(ConnectionLostError)
    with pytest.raises(ConnectionLostError):
        in_reactor(conn.request, 18, 0, {})
