"""The reactor-side client connection against the broker's network edge, on loopback."""

from __future__ import annotations

import socket

import pytest
from twisted.internet import defer, reactor

from mafka.broker.dispatcher import Dispatcher, collect_handlers
from mafka.broker.network import KafkaServerFactory
from mafka.client.connection import BrokerConnection, ConnectionLostError
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
    conn = BrokerConnection(reactor, "127.0.0.1", port.getHost().port, "test")

    def many():
        return defer.gatherResults([conn.request(18, v, {}) for v in (0, 1, 2, 3, 0)])

    bodies = in_reactor(many)
    assert [b.error_code for b in bodies] == [0] * 5
    assert all(any(k.api_key == 0 and k.max_version == 9 for k in b.api_keys) for b in bodies)
    in_reactor(conn.close)
    in_reactor(port.stopListening)


def test_requests_wait_for_a_broker_that_starts_late(reactor_thread):
    port_number = free_port()
    conn = BrokerConnection(reactor, "127.0.0.1", port_number, "test", backoff_s=0.05)
    results = []
    in_reactor(lambda: conn.request(18, 0, {}).addBoth(results.append) and None)
    assert results == []
    port = listen(port_number)
    deadline = reactor.seconds() + 5
    while not results and reactor.seconds() < deadline:
        in_reactor(lambda: defer.succeed(None))
    assert results and results[0].error_code == 0
    in_reactor(conn.close)
    in_reactor(port.stopListening)


def test_close_fails_queued_requests(reactor_thread):
    conn = BrokerConnection(reactor, "127.0.0.1", free_port(), "test", backoff_s=0.05)
    results = []
    in_reactor(lambda: conn.request(18, 0, {}).addBoth(results.append) and None)
    in_reactor(conn.close)
    assert len(results) == 1 and results[0].check(ConnectionLostError)
    with pytest.raises(ConnectionLostError):
        in_reactor(conn.request, 18, 0, {})
