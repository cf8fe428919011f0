"""The broker's network edge over real loopback sockets.

The server runs on the reactor thread (``reactor_thread`` fixture); clients
are plain blocking sockets in the test thread.
"""

from __future__ import annotations

import socket
import struct
import time

import pytest
from twisted.internet import reactor, task

from mafka.broker.dispatcher import Dispatcher, collect_handlers
from mafka.broker.network import NO_RESPONSE, KafkaServerFactory
from mafka.broker.request_metrics import TIMES, RequestMetrics
from mafka.log.config import LogConfig
from mafka.log.log import Log
from mafka.wire.codec import decode_response, encode_request
from mafka.wire.records import Record, build_batch, iter_records
from tests.conftest import in_reactor


def recv_exact(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise ConnectionError(f"closed after {len(out)} of {n} bytes")
        out += chunk
    return bytes(out)


def recv_frame(sock: socket.socket) -> bytes:
    (size,) = struct.unpack(">i", recv_exact(sock, 4))
    return recv_exact(sock, size)


def is_closed(sock: socket.socket, timeout: float = 2.0) -> bool:
    sock.settimeout(timeout)
    try:
        return sock.recv(1) == b""
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


#: the server fixture's request timings
REQUEST_METRICS: RequestMetrics
#: partitions of each UpdateMetadata the server fixture's handler got
UPDATE_METADATA_SEEN: list[int] = []


@pytest.fixture
def server(tmp_path, reactor_thread):
    """A listening broker edge with ApiVersions, a slow echo handler and a sendfile handler."""
    log = Log.open(tmp_path / "t-0", LogConfig(), lambda: 0)
    for i in range(20):
        log.append_as_leader(build_batch([Record(0, 1000 + i, b"k%d" % i, b"v" * 300)]), 0)

    handlers = collect_handlers(broker=None)

    def heartbeat(request, connection):  # answers after a delay: responses must stay in order
        d = task.deferLater(reactor, 0.2 if request.body.group_id == "slow" else 0, lambda: {"error_code": 0})
        return d

    def fetch(request, connection):
        offset = request.body.topics[0].partitions[0].fetch_offset
        info = log.read(offset, 1 << 20)
        return {
            "responses": [{"topic": "t", "partitions": [{"partition_index": 0, "high_watermark": log.next_offset, "records": info.region}]}]
        }

    def produce_acks0(request, connection):
        return NO_RESPONSE

    def update_metadata(request, connection):
        UPDATE_METADATA_SEEN.append(sum(len(t.partition_states) for t in request.body.topic_states))
        return {"error_code": 0}

    UPDATE_METADATA_SEEN.clear()
    handlers.update({12: heartbeat, 1: fetch, 0: produce_acks0, 6: update_metadata})
    global REQUEST_METRICS
    REQUEST_METRICS = RequestMetrics(lambda: int(time.monotonic() * 1000))
    factory = KafkaServerFactory(Dispatcher(handlers), max_request_size=1 << 20, idle_ms=1500, clock=reactor,
                                 request_metrics=REQUEST_METRICS)
    port = in_reactor(reactor.listenTCP, 0, factory, interface="127.0.0.1")
    yield port.getHost().port, log
    in_reactor(port.stopListening)
    log.close()


def connect(port: int) -> socket.socket:
    sock = socket.create_connection(("127.0.0.1", port), timeout=5)
    return sock


def test_api_versions_over_tcp(server):
    port, _ = server

    def client():
        with connect(port) as sock:
            sock.sendall(encode_request(18, 3, 7, "t", {"client_software_name": "x", "client_software_version": "1"}))
            return decode_response(18, 3, recv_frame(sock))

    cid, body = client()
    assert cid == 7 and body.error_code == 0
    assert {e.api_key: e.max_version for e in body.api_keys}[0] == 9


def test_pipelined_requests_are_answered_in_order(server):
    port, _ = server

    def client():
        with connect(port) as sock:
            sock.sendall(
                encode_request(12, 0, 1, "t", {"group_id": "slow", "generation_id": 1, "member_id": "m"})
                + encode_request(12, 0, 2, "t", {"group_id": "fast", "generation_id": 1, "member_id": "m"})
            )
            return [decode_response(12, 0, recv_frame(sock))[0] for _ in range(2)]

    order = client()
    assert order == [1, 2]


def test_fetch_records_are_sent_from_the_file(server):
    port, log = server
    expected = log.read(5, 1 << 20).read()

    def client():
        with connect(port) as sock:
            body = {"replica_id": -1, "max_wait_ms": 0, "topics": [{"topic": "t", "partitions": [{"partition": 0, "fetch_offset": 5, "partition_max_bytes": 1 << 20}]}]}
            sock.sendall(encode_request(1, 11, 3, "t", body))
            return decode_response(1, 11, recv_frame(sock))

    cid, body = client()
    records = bytes(body.responses[0].partitions[0].records)
    assert cid == 3 and records == expected
    assert [r.offset for r in iter_records(records)] == list(range(5, 20))


def test_acks_zero_gets_no_response_and_the_next_request_is_served(server):
    port, _ = server

    def client():
        with connect(port) as sock:
            sock.sendall(encode_request(0, 7, 1, "t", {"acks": 0, "topic_data": []}))
            sock.sendall(encode_request(18, 0, 2, "t", {}))
            return decode_response(18, 0, recv_frame(sock))[0]

    assert client() == 2


@pytest.mark.parametrize(
    "garbage",
    [
        struct.pack(">i", -1),
        struct.pack(">i", 2**31 - 1),
        struct.pack(">ihhi", 8, 999, 0, 1),  # unknown api key
        struct.pack(">ihhih", 10, 0, 2, 1, -1),  # Produce v2: advertised, below the decode floor
        struct.pack(">ihhih", 10, 3, 99, 1, -1),  # Metadata v99
        struct.pack(">i", 12) + b"\x00\x03\x00\x04" + b"\xff" * 8,  # truncated body
        b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
        bytes.fromhex("16030100f4010000f00303"),  # a TLS ClientHello start
    ],
    ids=["negative-size", "huge-size", "unknown-api", "below-floor", "above-max", "truncated", "http", "tls"],
)
def test_bad_input_closes_only_that_connection(server, garbage):
    port, _ = server

    def client():
        with connect(port) as bad, connect(port) as good:
            bad.sendall(garbage)
            closed = is_closed(bad)
            good.sendall(encode_request(18, 0, 9, "t", {}))
            return closed, decode_response(18, 0, recv_frame(good))[0]

    closed, cid = client()
    assert closed
    assert cid == 9


def test_api_versions_newer_than_ours_gets_error_35(server):
    port, _ = server

    def client():
        with connect(port) as sock:
            sock.sendall(encode_request(18, 4, 5, "t", {})[:6] + b"\x00\x09" + encode_request(18, 4, 5, "t", {})[8:])
            return decode_response(18, 0, recv_frame(sock))

    cid, body = client()
    assert (cid, body.error_code) == (5, 35)


def test_idle_connections_are_closed(server):
    port, _ = server

    def client():
        with connect(port) as sock:
            start = time.monotonic()
            closed = is_closed(sock, timeout=5)
            return closed, time.monotonic() - start

    closed, waited = client()
    assert closed and 1.0 < waited < 4.0


def test_a_flood_of_pipelined_requests_is_all_answered(server):
    port, _ = server
    request = encode_request(18, 0, 1, "t", {})

    def client():
        with connect(port) as sock:
            sock.sendall(request * 2000)
            return sum(1 for _ in range(2000) if recv_frame(sock))

    assert client() == 2000


def _update_metadata_frame(correlation_id: int, partitions: int) -> bytes:
    topics = [{"topic_name": f"t{t}", "partition_states": [
        {"topic_name": f"t{t}", "partition_index": p, "controller_epoch": 1, "leader": 1, "leader_epoch": 1,
         "isr": [1, 2, 3], "zk_version": 1, "replicas": [1, 2, 3], "offline_replicas": []} for p in range(10)]}
        for t in range(partitions // 10)]
    body = {"controller_id": 1, "controller_epoch": 1, "broker_epoch": 5, "topic_states": topics,
            "live_brokers": [{"id": 1, "endpoints": [{"port": 9092, "host": "h", "listener": "PLAINTEXT",
                                                      "security_protocol": 0}], "rack": None}]}
    return encode_request(6, 6, correlation_id, "controller", body)


def test_a_big_controller_request_is_decoded_off_the_reactor_and_answered_in_order(server):
    from mafka.broker import network

    port, _ = server
    big = _update_metadata_frame(1, 3000)
    assert len(big) >= network.DECODE_IN_THREAD_BYTES  # the threaded path
    with socket.create_connection(("127.0.0.1", port)) as sock:
        sock.sendall(big + _update_metadata_frame(2, 10)
                     + encode_request(12, 0, 3, "t", {"group_id": "fast", "generation_id": 1, "member_id": "m"}))
        ids = [struct.unpack(">i", recv_frame(sock)[:4])[0] for _ in range(3)]
    assert ids == [1, 2, 3]
    assert UPDATE_METADATA_SEEN == [3000, 10]


def test_a_big_undecodable_controller_request_closes_only_its_connection(server):
    port, _ = server
    garbage = struct.pack(">hhi", 6, 6, 1) + b"\x00\x0acontroller" + b"\xff" * 100_000
    with socket.create_connection(("127.0.0.1", port)) as other, socket.create_connection(("127.0.0.1", port)) as bad:
        bad.sendall(struct.pack(">i", len(garbage)) + garbage)
        assert is_closed(bad)
        other.sendall(encode_request(12, 0, 7, "t", {"group_id": "fast", "generation_id": 1, "member_id": "m"}))
        assert struct.unpack(">i", recv_frame(other)[:4])[0] == 7


def test_each_answered_request_is_timed_in_kafkas_five_parts(server):
    """A handler that waits 0.2 s spends it in RemoteTimeMs; a fetch is FetchConsumer; versions are counted."""
    port, _ = server
    with connect(port) as sock:
        sock.sendall(encode_request(12, 0, 1, "t", {"group_id": "slow", "generation_id": 1, "member_id": "m"}))
        decode_response(12, 0, recv_frame(sock))
        body = {"replica_id": -1, "max_wait_ms": 0, "topics": [{"topic": "t", "partitions": [
            {"partition": 0, "fetch_offset": 5, "partition_max_bytes": 1 << 20}]}]}
        sock.sendall(encode_request(1, 11, 3, "t", body))
        decode_response(1, 11, recv_frame(sock))
    wait = time.monotonic() + 5
    while time.monotonic() < wait and ("FetchConsumer", 11) not in dict(
            ((n, v), c) for n, v, c in REQUEST_METRICS.counts()):
        time.sleep(0.01)
    counts = {(n, v): c for n, v, c in REQUEST_METRICS.counts()}
    assert counts[("Heartbeat", 0)] == 1 and counts[("FetchConsumer", 11)] == 1
    medians = {(name, timer): values[0] for name, timer, n, values in REQUEST_METRICS.quantiles(0.5)}
    assert medians[("Heartbeat", "RemoteTimeMs")] >= 150
    assert medians[("Heartbeat", "LocalTimeMs")] < 150
    assert medians[("Heartbeat", "TotalTimeMs")] >= medians[("Heartbeat", "RemoteTimeMs")]
    assert {timer for name, timer in medians if name == "FetchConsumer"} == set(TIMES)
