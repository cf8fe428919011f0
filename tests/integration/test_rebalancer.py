"""The rebalancer on a real 3-broker cluster: a skewed cluster brought under the threshold, nothing lost.

Each broker's log dir counts as 10 MB (``mafka.disk.capacity.bytes``: the
three share one disk here, so usage is the bytes of its logs).  A topic of six
RF 2 partitions is placed so that broker 1 holds a replica of every one (60 %
used) and brokers 2 and 3 half each (30 %); the threshold is 45 %.  The
controller's rebalancer, from the monitor reports, moves replicas off broker 1
(pipelined, two at a time) while an idempotent acks=all producer writes to
every partition; the delivery checker then finds nothing lost or duplicated,
and ``mafka rebalance --status`` / ``--plan`` show the plan done and nothing
left to do.
"""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.harness.chaos import ContinuousProducer, drain
from tests.harness.checker import check_delivery
from tests.harness.cluster import DURABLE_SETTINGS, ClusterSpec, LocalCluster

pytestmark = pytest.mark.integration

MAFKA = str(Path(sys.executable).with_name("mafka"))
CAPACITY = 10_000_000
THRESHOLD = 0.45
PARTITIONS = 6


CLUSTER = ClusterSpec(shared=False, settings={  # the rebalancer moves replicas between brokers
    **DURABLE_SETTINGS,
    "mafka.disk.capacity.bytes": str(CAPACITY),
    "mafka.monitor.interval.ms": "500",
    "mafka.rebalancer.enable": "true",
    "mafka.rebalancer.interval.ms": "1000",
    "mafka.rebalancer.disk.usage.threshold": str(THRESHOLD),
    "mafka.rebalancer.max.concurrent.moves": "2",
    "mafka.slow.node.threshold.ms": "60000",
})


def zk_json(cluster: LocalCluster, path: str) -> dict | None:
    # kazoo itself: the tools' ZkSession runs and stops the process's one Twisted reactor
    from kazoo.client import KazooClient
    from kazoo.exceptions import NoNodeError

    zk = KazooClient(hosts=f"127.0.0.1:{cluster.zookeeper_port}")
    zk.start(timeout=30)
    try:
        return json.loads(zk.get(path)[0])
    except NoNodeError:
        return None
    finally:
        zk.stop()
        zk.close()


def usage(cluster: LocalCluster, broker: int) -> float | None:
    report = zk_json(cluster, f"/mafka/monitor/{broker}")
    if report is None:
        return None
    hot = [d for d in report["logDirs"] if d.get("tier") == "hot" and not d.get("offline")]
    return sum(d["usedBytes"] for d in hot) / sum(d["capacityBytes"] for d in hot)


def tool(cluster: LocalCluster, *args: str) -> str:
    out = subprocess.run([MAFKA, "rebalance", "--zookeeper", f"127.0.0.1:{cluster.zookeeper_port}", *args],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def test_a_skewed_cluster_is_rebalanced_under_the_threshold_and_nothing_acknowledged_is_lost(cluster):
    topic = f"skewed-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    placement = [[1, 2], [1, 3]] * (PARTITIONS // 2)
    admin.create_topics([NewTopic(topic, num_partitions=PARTITIONS, replica_assignment=placement)])[topic].result(30)
    producer = ContinuousProducer(cluster.bootstrap, topic, partitions=PARTITIONS, rate=100.0).start()
    try:
        # 1 MB per partition: broker 1 ~60 %, brokers 2 and 3 ~30 %
        bulk = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True,
                         "linger.ms": 20})
        for i in range(PARTITIONS * 1000):
            while True:
                try:
                    bulk.produce(topic, b"bulk-%06d-" % i + b"b" * 988, partition=i % PARTITIONS)
                    break
                except BufferError:
                    bulk.poll(0.05)
        assert bulk.flush(60) == 0

        # until no plan runs and every broker is under the threshold (a plan made while the bulk
        # data was still arriving may leave a target over it; the next plan moves that on)
        deadline = time.monotonic() + 120
        while True:
            state = zk_json(cluster, "/mafka/rebalancer/state")
            usages = {b: usage(cluster, b) for b in (1, 2, 3)}
            done = state is not None and state["status"] == "done"
            if done and all(u is not None and u <= THRESHOLD for u in usages.values()):
                break
            assert time.monotonic() < deadline, f"usage {usages}; state {json.dumps(state)[:2000]}"
            time.sleep(0.5)
    finally:
        attempts = producer.stop()
    moved = [m for m in state["moves"] if m["state"] == "done"]
    assert moved and all(m["source"] != m["target"] for m in moved), state

    # every moved partition has its planned replicas, none of them twice
    meta = admin.list_topics(topic, timeout=10).topics[topic].partitions
    for m in moved:
        assert list(meta[m["partition"]].replicas) == m["replicas"]
        assert len(set(m["replicas"])) == len(m["replicas"])

    got = drain(cluster.bootstrap, topic, PARTITIONS, timeout=60)
    # the bulk records (acknowledged by flush) are all there once; the checker judges the producer's
    bulk = sorted(r.value[:11] for r in got.records if r.value.startswith(b"bulk-"))
    assert bulk == sorted(b"bulk-%06d" % i for i in range(PARTITIONS * 1000))
    mine = [r for r in got.records if not r.value.startswith(b"bulk-")]
    report = check_delivery(attempts, mine)
    assert got.complete and report.ok, report.summary()
    assert not report.lost and not report.duplicates
    assert sum(1 for a in attempts if a.status == "acked") > 100

    status = tool(cluster, "--status")
    assert f"Plan {state['id']}" in status and ": done;" in status.splitlines()[0], status
    assert "moved from broker" in status
    # --wait on a plan that is over returns at once: the same status, the moves finished on stderr
    waited = subprocess.run([MAFKA, "rebalance", "--zookeeper", f"127.0.0.1:{cluster.zookeeper_port}", "--status",
                             "--wait"], capture_output=True, text=True, timeout=60)
    planned = len(state["moves"])
    assert waited.returncode == (0 if len(moved) == planned else 1), waited
    assert waited.stdout.splitlines()[0] == status.splitlines()[0], waited.stdout
    assert re.fullmatch(rf"rebalance: {planned}/{planned} moves finished \(100%\) in \d+\.\d s\n",
                        waited.stderr), waited.stderr
    plan = tool(cluster, "--plan", "--threshold", str(THRESHOLD))
    assert "Moves: 0" in plan, plan


def test_a_plan_interrupted_by_a_controller_kill_is_resumed_by_the_next_controller(tmp_path_factory):
    """One move at a time, so the plan is still running when its controller is SIGKILLed; the next
    controller reads ``/mafka/rebalancer/state`` and finishes the same plan (same id, every move done)."""
    c = LocalCluster(tmp_path_factory.mktemp("rebalancer-failover") / "cluster", settings={
        **DURABLE_SETTINGS,
        "mafka.disk.capacity.bytes": str(CAPACITY),
        "mafka.monitor.interval.ms": "500",
        "mafka.rebalancer.enable": "true",
        "mafka.rebalancer.interval.ms": "3000",
        "mafka.rebalancer.disk.usage.threshold": "0.35",
        "mafka.rebalancer.max.concurrent.moves": "1",
        "mafka.slow.node.threshold.ms": "60000",
        "min.insync.replicas": "1",
    }).start()
    try:
        controller = zk_json(c, "/controller")["brokerid"]
        source = controller % 3 + 1  # not the controller
        topic = f"failover-{uuid.uuid4().hex[:6]}"
        admin = AdminClient({"bootstrap.servers": c.bootstrap})
        admin.create_topics([NewTopic(topic, num_partitions=10, replica_assignment=[[source]] * 10)])[topic].result(30)
        bulk = Producer({"bootstrap.servers": c.bootstrap, "acks": "all", "linger.ms": 20})
        for i in range(10 * 600):
            while True:
                try:
                    bulk.produce(topic, b"bulk-%06d-" % i + b"b" * 988, partition=i % 10)
                    break
                except BufferError:
                    bulk.poll(0.05)
        assert bulk.flush(60) == 0
        deadline = time.monotonic() + 60
        while True:  # a plan running with at least one move still to start
            state = zk_json(c, "/mafka/rebalancer/state")
            if state is not None and state["status"] == "running" and any(
                    m["state"] == "pending" for m in state["moves"]):
                break
            assert time.monotonic() < deadline, json.dumps(state)[:2000]
            time.sleep(0.1)
        plan_id = state["id"]
        killed = zk_json(c, "/controller")["brokerid"]
        c.kill(killed)
        time.sleep(3.0)
        c.restart(killed)  # it may be a move's target
        deadline = time.monotonic() + 120
        while True:
            state = zk_json(c, "/mafka/rebalancer/state")
            if state["id"] != plan_id or state["status"] == "done":
                break
            assert time.monotonic() < deadline, json.dumps(state)[:2000]
            time.sleep(0.5)
        assert state["id"] == plan_id, "the next controller made a new plan instead of resuming"
        assert state["status"] == "done" and all(m["state"] == "done" for m in state["moves"]), state
        got = drain(c.bootstrap, topic, 10, timeout=60)
        assert got.complete
        assert sorted(r.value[:11] for r in got.records) == sorted(b"bulk-%06d" % i for i in range(6000))
    finally:
        c.stop()
