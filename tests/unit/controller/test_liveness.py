"""The controller's watch of the brokers' listeners (mafka.controller.liveness) over fake connections."""

from __future__ import annotations

from twisted.internet import defer, error, task

from mafka.controller.liveness import BrokerLivenessWatch


class FakeConn:
    def __init__(self) -> None:
        self.closed: defer.Deferred = defer.Deferred()
        self.closed_by_us = False

    def close(self) -> None:
        self.closed_by_us = True
        if not self.closed.called:
            self.closed.callback(None)

    def drop(self) -> None:
        """The far end went away."""
        self.closed.callback(None)


class Net:
    """Answers each connection attempt as the test says; records them."""

    def __init__(self) -> None:
        self.attempts: list[tuple[str, int, defer.Deferred]] = []

    def connect(self, host, port, timeout_s):
        d: defer.Deferred = defer.Deferred()
        self.attempts.append((host, port, d))
        return d

    def accept(self) -> FakeConn:
        conn = FakeConn()
        self.attempts[-1][2].callback(conn)
        return conn

    def refuse(self) -> None:
        self.attempts[-1][2].errback(error.ConnectionRefusedError("refused"))

    def time_out(self) -> None:
        self.attempts[-1][2].errback(error.TimeoutError("no answer"))


def make():
    clock, net, refused, reachable = task.Clock(), Net(), [], []
    watch = BrokerLivenessWatch(clock, lambda b, e: refused.append((b, e)), lambda b, e: reachable.append((b, e)),
                                connect=net.connect, retry_s=1.0)
    return clock, net, watch, refused, reachable


def test_a_dead_process_is_reported_once_at_the_first_refusal():
    clock, net, watch, refused, _ = make()
    watch.watch(2, 77, "h2", 9092)
    conn = net.accept()
    assert refused == [] and len(net.attempts) == 1
    conn.drop()  # the process died: the kernel closed its sockets
    assert len(net.attempts) == 2  # probed at once, no wait
    net.refuse()
    assert refused == [(2, 77)]
    clock.advance(1.0)
    net.refuse()
    assert refused == [(2, 77)]  # once per registration


def test_neither_a_timeout_nor_an_accepted_connection_is_a_verdict():
    clock, net, watch, refused, _ = make()
    watch.watch(2, 77, "h2", 9092)
    net.time_out()  # frozen or cut off: no answer at all
    clock.advance(1.0)
    assert len(net.attempts) == 2 and refused == []
    conn = net.accept()  # restarted on the same port, or the broker closed an idle connection
    conn.drop()
    net.accept()
    assert refused == [] and len(net.attempts) == 3


def test_a_fenced_broker_is_reported_reachable_only_after_accepting_connections_for_a_session_timeout():
    clock, net, watch, refused, reachable = make()  # comeback_after_s=3 below
    watch.comeback_after_s = 3.0
    watch.fence(2, 77, "h2", 9092)
    net.refuse()
    assert refused == []  # a fenced broker's refusals are old news
    for _ in range(3):  # accepting since t=1: a restarted process would register anew meanwhile
        clock.advance(1.0)
        net.accept()
    assert reachable == []
    clock.advance(1.0)
    net.time_out()  # one attempt without an answer starts the count again
    for _ in range(3):
        clock.advance(1.0)
        net.accept()
    assert reachable == []
    clock.advance(1.0)
    net.accept()
    assert reachable == [(2, 77)]
    clock.advance(1.0)
    attempts = len(net.attempts)  # not taken back yet: it asks again
    watch.forget(2)
    clock.advance(5.0)
    assert len(net.attempts) == attempts


def test_forgetting_or_replacing_a_watch_closes_its_connection_and_ignores_late_answers():
    clock, net, watch, refused, _ = make()
    watch.watch(2, 77, "h2", 9092)
    conn = net.accept()
    watch.watch(2, 78, "h2", 9093)  # re-registered (a bounce): the new epoch is watched
    assert conn.closed_by_us
    assert watch.watched() == {2: (78, False)}
    pending = net.attempts[-1][2]
    watch.forget(2)
    pending.errback(error.ConnectionRefusedError("late"))
    assert refused == [] and watch.watched() == {}
    clock.advance(5.0)
    assert len(net.attempts) == 2
