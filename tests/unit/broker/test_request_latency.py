"""Request latencies: percentiles over a sliding window, bounded memory, Kafka's request names."""

from __future__ import annotations

from types import SimpleNamespace

from mafka.broker.request_latency import LatencyWindow, RequestLatencies, request_name


def test_percentiles_over_the_window_only():
    w = LatencyWindow(window_ms=1000)
    for i in range(100):
        w.record(0, float(i))
    assert w.percentiles(500, 0.5, 0.99) == [50.0, 99.0]
    w.record(1500, 7.0)
    assert w.percentiles(1500, 0.5, 0.99) == [7.0, 7.0]  # the first hundred left the window
    assert LatencyWindow().percentiles(0, 0.5) == [None]


def test_memory_is_bounded_and_counts_go_on():
    w = LatencyWindow(window_ms=10**9, max_samples=10)
    for i in range(1000):
        w.record(i, float(i))
    assert w.percentiles(1000, 0.0) == [990.0] and w.count == 1000


def test_fetches_split_into_consumer_and_follower():
    assert request_name("Fetch", 1, SimpleNamespace(replica_id=-1)) == "FetchConsumer"
    assert request_name("Fetch", 1, SimpleNamespace(replica_id=2)) == "FetchFollower"
    assert request_name("Produce", 0, SimpleNamespace()) == "Produce"
    r = RequestLatencies()
    r.record("Produce", 0, 3.0)
    assert r.percentiles("Produce", 0, 0.99) == [3.0] and r.percentiles("Metadata", 0, 0.5) == [None]


def test_the_dispatcher_reports_each_request_when_its_answer_is_ready():
    from twisted.internet import defer

    from mafka.broker.dispatcher import Dispatcher
    from mafka.wire.codec import decode_request, encode_request

    now = [10.0]
    seen = []
    pending: defer.Deferred = defer.Deferred()
    dispatcher = Dispatcher({3: lambda request, conn: pending}, observe=lambda r, s: seen.append((r.spec.name, s)),
                            clock=lambda: now[0])
    request = decode_request(encode_request(3, 1, 7, "t", {"topics": []})[4:])
    out = []
    dispatcher.dispatch(request, SimpleNamespace()).addCallback(out.append)
    now[0] = 10.25
    assert seen == []  # not answered yet
    pending.callback({"brokers": [], "controller_id": -1, "topics": []})
    assert seen == [("Metadata", 0.25)] and out
