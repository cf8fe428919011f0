"""KIP-101's divergence scenario with real processes: a double crash, then the replicas converge.

A leads with m1, m2 (acknowledged by both replicas).  Both brokers die at
once; B's m2 was never flushed (its segment file is cut back to m1).  B
returns first, is elected (it is in the last ISR) at leader epoch 1 and
writes m3 at offset 1.  When A returns it follows B: the old HW-based rule
would keep A's m2 at offset 1 for ever; with leader epochs A asks B where
epoch 0 ended (offset 1), truncates its m2 and fetches m3.  Afterwards both
replicas hold m1, m3 and their segment files are byte-identical.

(The unit-level scenarios, with the HW rule as a negative control, are in
``tests/unit/broker/test_kip101.py``.)
"""

from __future__ import annotations

import json
import signal
import struct
import time
from pathlib import Path

import pytest
from kazoo.client import KazooClient

from tests.harness.cluster import LocalCluster
from tests.harness.waits import wait_dead

pytestmark = pytest.mark.integration

TOPIC = "kip101"


def _wait(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            value = predicate()
        except Exception:  # noqa: BLE001 - a broker or znode not there yet
            value = None
        if value:
            return value
        time.sleep(0.1)
    raise TimeoutError(what)


def _segment_bytes(cluster: LocalCluster, broker_id: int) -> bytes:
    directory = Path(cluster.broker(broker_id)["log_dirs"][0]) / f"{TOPIC}-0"
    return b"".join(p.read_bytes() for p in sorted(directory.glob("*.log")))


def _produce(bootstrap: str, value: bytes) -> int:
    from confluent_kafka import Producer

    acked = []
    p = Producer({"bootstrap.servers": bootstrap, "acks": "all", "message.timeout.ms": 30000})
    p.produce(TOPIC, value=value, partition=0, on_delivery=lambda err, msg: acked.append((err, msg.offset())))
    p.flush(40)
    assert acked and acked[0][0] is None, acked
    return acked[0][1]


def _consume_all(bootstrap: str, end: int) -> list[bytes]:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "kip101", "enable.auto.commit": False})
    c.assign([TopicPartition(TOPIC, 0, 0)])
    out: list[bytes] = []
    deadline = time.monotonic() + 30
    while len(out) < end and time.monotonic() < deadline:
        m = c.poll(1.0)
        if m is not None and not m.error():
            out.append(m.value())
    c.close()
    return out


def test_double_crash_divergence_converges_by_leader_epoch(tmp_path):
    cluster = LocalCluster(
        tmp_path / "cluster",
        brokers=2,
        settings={"zookeeper.session.timeout.ms": "6000", "min.insync.replicas": "1", "auto.leader.rebalance.enable": "false"},
    ).start()
    zk = KazooClient(f"127.0.0.1:{cluster.zookeeper_port}")
    zk.start(timeout=15)
    try:

        def state() -> dict:
            return json.loads(zk.get(f"/brokers/topics/{TOPIC}/partitions/0/state")[0])

        from confluent_kafka.admin import AdminClient, NewTopic

        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        for f in admin.create_topics([NewTopic(TOPIC, 1, 2)]).values():
            f.result(30)
        _wait(lambda: state()["leader"] >= 0, 30, "a leader")
        assert _produce(cluster.bootstrap, b"m1") == 0
        assert _produce(cluster.bootstrap, b"m2") == 1
        a = state()["leader"]
        b = next(i for i in (1, 2) if i != a)
        # Both replicas hold m1 and m2 (acks=all with both in the ISR).
        _wait(lambda: _segment_bytes(cluster, a) == _segment_bytes(cluster, b), 20, "B to hold m1 and m2")
        assert sorted(state()["isr"]) == [1, 2]

        # Power loss on both at once; B's m2 was never flushed.
        for broker_id in (a, b):
            cluster.kill(broker_id, signal.SIGKILL)
        for broker_id in (a, b):
            wait_dead(cluster.broker(broker_id)["pid"], 60)
        [segment] = sorted((Path(cluster.broker(b)["log_dirs"][0]) / f"{TOPIC}-0").glob("*.log"))
        data = segment.read_bytes()
        first_batch = 12 + struct.unpack_from(">i", data, 8)[0]
        with open(segment, "r+b") as f:
            f.truncate(first_batch)

        # B returns first and is elected from the last ISR, at a new leader epoch; it writes m3 at 1.
        cluster.restart(b)
        _wait(lambda: state()["leader"] == b and state()["leader_epoch"] >= 1, 60, "B to lead")
        assert _produce(cluster.broker(b)["host"] + ":" + str(cluster.broker(b)["port"]), b"m3") == 1

        # A returns, follows B, truncates its m2 by leader epoch and fetches m3.
        cluster.restart(a)
        _wait(lambda: sorted(state()["isr"]) == [1, 2], 60, "A to rejoin the ISR")
        _wait(lambda: _segment_bytes(cluster, a) == _segment_bytes(cluster, b), 20, "the replicas to converge")
        assert _consume_all(cluster.bootstrap, 2) == [b"m1", b"m3"]
        assert _segment_bytes(cluster, a) == _segment_bytes(cluster, b)
    finally:
        zk.stop()
        cluster.stop()
