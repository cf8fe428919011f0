"""Broker and controller behaviour on a real cluster: long polls, idempotence, failover, bad input."""

from __future__ import annotations

import random
import signal
import socket
import struct
import threading
import time
import uuid

import pytest

from mafka.wire.codec import decode_response, encode_request
from mafka.wire.records import Record, build_batch, iter_records
from tests.harness.cluster import ClusterSpec
from tests.harness.waits import wait_dead

from .test_clients import new_topic

pytestmark = pytest.mark.integration


CLUSTER = ClusterSpec(settings={"zookeeper.session.timeout.ms": "6000"}, shared=False)  # kills and restarts brokers


class Client:
    """A blocking Kafka-protocol client on one socket (no third-party code: exact requests)."""

    def __init__(self, host: str, port: int) -> None:
        self.sock = socket.create_connection((host, port), timeout=15)
        self.cid = 0

    def send(self, api_key: int, version: int, body: dict) -> None:
        self.cid += 1
        self.sock.sendall(encode_request(api_key, version, self.cid, "it", body))

    def recv(self, api_key: int, version: int):
        size = struct.unpack(">i", self._exact(4))[0]
        return decode_response(api_key, version, self._exact(size))[1]

    def call(self, api_key: int, version: int, body: dict):
        self.send(api_key, version, body)
        return self.recv(api_key, version)

    def _exact(self, n: int) -> bytes:
        out = bytearray()
        while len(out) < n:
            chunk = self.sock.recv(n - len(out))
            if not chunk:
                raise ConnectionError("closed")
            out += chunk
        return bytes(out)

    def close(self) -> None:
        self.sock.close()


def leader_of(cluster, topic: str, partition: int = 0) -> dict:
    c = Client(*_addr(cluster.info["brokers"][0]))
    try:
        body = c.call(3, 1, {"topics": [{"name": topic}]})
    finally:
        c.close()
    leader = next(p.leader_id for p in body.topics[0].partitions if p.partition_index == partition)
    return cluster.broker(leader)


def _addr(b: dict) -> tuple[str, int]:
    return b["host"], b["port"]


def produce_body(topic: str, records: bytes, acks: int = 1) -> dict:
    return {"acks": acks, "timeout_ms": 10000, "topic_data": [{"name": topic, "partition_data": [{"index": 0, "records": records}]}]}


def fetch_body(topic: str, offset: int, max_wait_ms: int) -> dict:
    return {
        "replica_id": -1, "max_wait_ms": max_wait_ms, "min_bytes": 1, "max_bytes": 1 << 20,
        "topics": [{"topic": topic, "partitions": [{"partition": 0, "fetch_offset": offset, "partition_max_bytes": 1 << 20}]}],
    }


def test_long_poll_is_woken_by_the_append(cluster):
    """A fetch parked for 10 s answers within 20 ms of the produce's acknowledgement (median of three).

    Measured from the acknowledgement, not from the send: the broker answers the parked fetch in
    the turn that appends, so the two answers leave together, and a loaded machine (two suites at
    once) stretches the produce's own round trip (21 ms medians from the send were seen) but not
    the gap between the two answers.  A fetch left to a timer would answer up to 10 s later."""
    topic = new_topic(cluster, partitions=1)
    leader = leader_of(cluster, topic)
    consumer, producer = Client(*_addr(leader)), Client(*_addr(leader))
    latencies = []
    try:
        for offset in range(3):
            got = {}

            def wait_fetch(offset=offset, got=got):
                body = consumer.call(1, 11, fetch_body(topic, offset, max_wait_ms=10000))
                got["at"] = time.monotonic()
                got["body"] = body

            t = threading.Thread(target=wait_fetch)
            t.start()
            time.sleep(0.5)  # the fetch is parked by now
            assert "at" not in got, "the fetch answered before anything was produced"
            value = b"woken-%d" % offset
            resp = producer.call(0, 7, produce_body(topic, build_batch([Record(0, int(time.time() * 1000), b"k", value)])))
            acked = time.monotonic()
            assert resp.responses[0].partition_responses[0].error_code == 0
            t.join(15)
            records = list(iter_records(bytes(got["body"].responses[0].partitions[0].records)))
            assert [r.value for r in records] == [value]
            latencies.append((got["at"] - acked) * 1000)
    finally:
        consumer.close()
        producer.close()
    latencies.sort()
    print(f"long-poll answer after the produce's acknowledgement: {', '.join(f'{x:.1f}' for x in latencies)} ms")
    assert latencies[1] < 20, f"parked fetches answered {latencies} ms after the produce's ack (median over 20 ms)"


def test_resent_idempotent_produce_is_not_written_twice_even_after_a_restart(cluster):
    topic = new_topic(cluster, partitions=1)
    leader = leader_of(cluster, topic)
    batch = build_batch([Record(i, 1000 + i, b"k", b"once") for i in range(3)], producer_id=4242, producer_epoch=0, base_sequence=0)
    c = Client(*_addr(leader))
    try:
        first = c.call(0, 7, produce_body(topic, batch, acks=-1)).responses[0].partition_responses[0]
        again = c.call(0, 7, produce_body(topic, batch, acks=-1)).responses[0].partition_responses[0]
    finally:
        c.close()
    assert (first.error_code, again.error_code) == (0, 0)
    assert again.base_offset == first.base_offset == 0
    # Graceful restart of the leader: the producer state is snapshotted and reloaded.
    cluster.kill(leader["id"], signal.SIGTERM)
    wait_dead(leader["pid"], 60)
    cluster.restart(leader["id"])
    deadline = time.monotonic() + 60
    while True:
        try:
            c = Client(*_addr(leader))
            resp = c.call(0, 7, produce_body(topic, batch, acks=-1)).responses[0].partition_responses[0]
            c.close()
            if resp.error_code == 0:
                break
        except OSError:
            pass
        assert time.monotonic() < deadline, "the restarted leader did not serve its partition"
        time.sleep(0.5)
    assert resp.base_offset == 0
    c = Client(*_addr(leader))
    try:
        body = c.call(2, 1, {"replica_id": -1, "topics": [{"name": topic, "partitions": [{"partition_index": 0, "timestamp": -1}]}]})
    finally:
        c.close()
    assert body.topics[0].partitions[0].offset == 3  # three records, written once


BAD_INPUTS = [
    struct.pack(">i", -1),
    struct.pack(">i", 2**31 - 1) + b"\x00" * 64,
    struct.pack(">ihhi", 8, 999, 0, 1),
    struct.pack(">ihhih", 10, 0, 2, 1, -1),
    struct.pack(">i", 12) + b"\x00\x03\x00\x04" + b"\xff" * 8,
    b"GET / HTTP/1.1\r\nHost: x\r\n\r\n",
    bytes.fromhex("16030100f4010000f00303") + random.Random(1).randbytes(200),
    # A whole frame of noise.  (Not raw noise: a prefix that happens to fall in [0, 100 MiB] is
    # a frame the broker rightly waits for, as Kafka does — one run in ~40 drew one.)
    struct.pack(">i", 4092) + random.Random(2).randbytes(4092),
]


def _closed_by_peer(sock: socket.socket, timeout: float = 5.0) -> bool:
    """True once the peer closes (an error reply may come first); False if it stays open."""
    sock.settimeout(timeout)
    try:
        while sock.recv(65536):
            pass
        return True
    except ConnectionResetError:
        return True
    except TimeoutError:
        return False


def _rss_kb(pid: int) -> int:
    with open(f"/proc/{pid}/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:"))


def test_bad_input_closes_only_that_connection_and_memory_stays_bounded(cluster):
    broker = cluster.info["brokers"][0]
    good = Client(*_addr(broker))
    try:
        assert good.call(18, 0, {}).error_code == 0
        rss_before = _rss_kb(broker["pid"])
        for _ in range(20):
            for data in BAD_INPUTS:
                with socket.create_connection(_addr(broker), timeout=5) as bad:
                    bad.sendall(data)
                    assert _closed_by_peer(bad), f"connection stayed open after {data[:16]!r}"
        assert good.call(18, 0, {}).error_code == 0  # the other client is still served
        grown = _rss_kb(broker["pid"]) - rss_before
        assert grown < 50_000, f"broker RSS grew by {grown} KiB"
    finally:
        good.close()


def test_controller_failover_after_sigkill(cluster):
    old = cluster.controller_id()
    old_pid = cluster.broker(old)["pid"]
    started = time.monotonic()
    cluster.kill(old, signal.SIGKILL)
    wait_dead(old_pid, 60)
    survivors = [b["id"] for b in cluster.info["brokers"] if b["id"] != old]
    try:
        # Every survivor names the new controller: each learns it from the new controller's
        # UpdateMetadata, one after the other, and a client bootstrapped from a survivor that
        # has not heard yet is told the dead broker is the controller (Kafka's clients retry;
        # kafka-python's admin client gives up on the refused connection).
        deadline = time.monotonic() + 30
        named: dict[int, int | None] = {}
        while time.monotonic() < deadline:
            for s in survivors:
                try:
                    named[s] = cluster.controller_id(via=s, timeout=2)
                except TimeoutError:
                    named[s] = None
            if len(set(named.values())) == 1 and named[survivors[0]] not in (None, old):
                break
            time.sleep(0.2)
        took = time.monotonic() - started
        new = named[survivors[0]]
        print(f"controller failover: broker {old} killed, survivors name {named} after {took:.1f} s")
        assert new in survivors and set(named.values()) == {new}
        assert took < 6.0 + 10.0  # within the session timeout plus election and propagation
        # Topic creation works again, through the new controller.  The survivors list the dead
        # broker until its ZooKeeper session expires (Kafka lists every registered broker too),
        # and kafka-python's admin client gives up when the node it picks for the controller
        # lookup refuses: wait until the listing is Kafka's after the expiry.
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline and any(old in (_metadata(cluster, s) or [old]) for s in survivors):
            time.sleep(0.3)
        assert not any(old in (_metadata(cluster, s) or [old]) for s in survivors)
        from kafka.admin import KafkaAdminClient, NewTopic

        admin = KafkaAdminClient(bootstrap_servers=",".join(f"{b['host']}:{b['port']}" for b in cluster.info["brokers"] if b["id"] != old))
        name = f"after-failover-{uuid.uuid4().hex[:6]}"
        try:
            admin.create_topics([NewTopic(name, 2, 1)], timeout_ms=30000)
        finally:
            admin.close()
    finally:
        # The killed broker comes back, registers again and serves its partitions (also after a
        # failure above, so that the module's later tests find three brokers).  Back means
        # serving: the restarted broker answers Metadata itself (survivors list a broker the
        # fast path fenced until its old session expires, so their lists alone prove nothing).
        cluster.restart(old)
        cluster.wait_serving(old)


def _metadata(cluster, via: int):
    from mafka.cli.cluster import metadata_snapshot

    b = cluster.broker(via)
    snap = metadata_snapshot(b["host"], b["port"])
    return snap[0] if snap else None


def test_single_replica_partitions_go_offline_with_their_broker_and_come_back(cluster):
    topic = new_topic(cluster, partitions=3)
    controller = cluster.controller_id()
    # a partition led by a broker that is not the controller
    victim = None
    for p in range(3):
        b = leader_of(cluster, topic, p)
        if b["id"] != controller:
            victim, partition = b, p
            break
    assert victim is not None
    c = Client(*_addr(victim))
    resp = c.call(0, 7, {"acks": 1, "timeout_ms": 10000, "topic_data": [{"name": topic, "partition_data": [{"index": partition, "records": build_batch([Record(0, 1, b"k", b"kept")])}]}]})
    c.close()
    assert resp.responses[0].partition_responses[0].error_code == 0
    cluster.kill(victim["id"], signal.SIGKILL)
    wait_dead(victim["pid"], 60)
    other = cluster.broker(controller)

    def leader_now():
        c = Client(*_addr(other))
        try:
            body = c.call(3, 1, {"topics": [{"name": topic}]})
        finally:
            c.close()
        return next(p.leader_id for p in body.topics[0].partitions if p.partition_index == partition)

    deadline = time.monotonic() + 30
    while leader_now() != -1:
        assert time.monotonic() < deadline, "the partition did not go offline"
        time.sleep(0.3)
    cluster.restart(victim["id"])
    deadline = time.monotonic() + 60
    while leader_now() != victim["id"]:
        assert time.monotonic() < deadline, "the partition did not come back"
        time.sleep(0.3)
    deadline = time.monotonic() + 30
    while True:
        c = Client(*_addr(victim))
        body = c.call(1, 11, {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 1, "max_bytes": 1 << 20,
                              "topics": [{"topic": topic, "partitions": [{"partition": partition, "fetch_offset": 0, "partition_max_bytes": 1 << 20}]}]})
        c.close()
        part = body.responses[0].partitions[0]
        # As in Kafka, the restarted broker first hears of the offline partition
        # as a follower of leader -1 (onBrokerStartup's OnlineReplica), and a
        # v11 consumer fetch is served by a follower up to its checkpointed high
        # watermark, which may be 0; the controller's own metadata can already
        # name it leader.  The record must be there once it leads.
        if part.error_code == 0 and part.high_watermark >= 1:
            break
        assert time.monotonic() < deadline, f"no high watermark past the kept record: {part}"
        time.sleep(0.3)
    assert [r.value for r in iter_records(bytes(part.records))] == [b"kept"]
