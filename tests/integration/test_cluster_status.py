"""``mafka cluster-status`` and the monitor's ``/mafka/monitor/<id>`` reports on a real 3-broker cluster.

Every broker writes its report every 500 ms here; the tool shows the
controller, each broker with its slow flag, latency and log-dir usage, and the
under-replicated partitions — none at first, some once a broker is SIGKILLed
(its ephemeral report goes with its session).
"""

from __future__ import annotations

import json
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.harness.cluster import DURABLE_SETTINGS, ClusterSpec, LocalCluster
from tests.harness.waits import wait_until

pytestmark = pytest.mark.integration

MAFKA = str(Path(sys.executable).with_name("mafka"))


# A high slow-node threshold: the first acks=all produces to new partitions may wait a second for
# their followers, and whether that tips a TP99 depends on batching (the flag's rule is unit-tested).
CLUSTER = ClusterSpec(settings={**DURABLE_SETTINGS, "mafka.monitor.interval.ms": "500",
                                "mafka.slow.node.threshold.ms": "60000"},
                      shared=False)  # kills and restarts a broker, reads the whole cluster's status


def status(cluster: LocalCluster) -> str:
    out = subprocess.run([MAFKA, "cluster-status", "--zookeeper", f"127.0.0.1:{cluster.zookeeper_port}"],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return out.stdout


def monitor_reports(cluster: LocalCluster) -> dict[int, dict]:
    """Every broker's ``/mafka/monitor/<id>`` report (read with kazoo itself: the tools' ZkSession
    runs and stops the process's one Twisted reactor, which other tests need)."""
    from kazoo.client import KazooClient
    from kazoo.exceptions import NoNodeError

    zk = KazooClient(hosts=f"127.0.0.1:{cluster.zookeeper_port}")
    zk.start(timeout=30)
    try:
        try:
            children = zk.get_children("/mafka/monitor")
        except NoNodeError:  # no broker has written its first report yet
            return {}
        reports = {}
        for b in children:
            try:
                reports[int(b)] = json.loads(zk.get(f"/mafka/monitor/{b}")[0])
            except NoNodeError:  # ephemeral: its broker's session ended since the listing
                pass
        return reports
    finally:
        zk.stop()
        zk.close()


def topic_sizes(cluster: LocalCluster, topic: str) -> list[int]:
    """The sizes of ``topic``'s replicas in the brokers' monitor reports."""
    return [p["sizeBytes"] for r in monitor_reports(cluster).values() for p in r["partitions"] if p["topic"] == topic]


def every_replica_reported(cluster: LocalCluster, topic: str) -> bool:
    sizes = topic_sizes(cluster, topic)
    return len(sizes) == 9 and all(s > 0 for s in sizes)


def test_the_monitor_reports_and_cluster_status_shows_them(cluster):
    topic = f"status-{uuid.uuid4().hex[:6]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})  # kept alive until the result is in
    admin.create_topics([NewTopic(topic, 3, 3)])[topic].result(30)
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for i in range(300):
        p.produce(topic, b"x" * 100, partition=i % 3)
    assert p.flush(30) == 0
    # a report or two after the writes
    wait_until(lambda: every_replica_reported(cluster, topic), 30, f"every broker's report to show {topic}'s data",
               interval=0.5)
    text = status(cluster)
    lines = text.splitlines()
    assert lines[0].startswith("Controller: ") and lines[0].split()[1] in {"1", "2", "3"}, text
    rows = {line.split()[0]: line for line in lines[2:5]}
    assert set(rows) == {"1", "2", "3"}, text
    for row in rows.values():
        fields = row.split()
        assert fields[2] == "no" and "% used" in row and "GB free" in row, text
        assert float(fields[3]) >= 0, text  # every broker led partitions that took produce requests
    assert "Under-replicated partitions: 0" in text
    # the raw report: this topic's partitions with their sizes and byte rates
    assert set(monitor_reports(cluster)) == {1, 2, 3}
    sizes = topic_sizes(cluster, topic)
    assert len(sizes) == 9 and all(s > 0 for s in sizes)

    victim = int(lines[0].split()[1]) % 3 + 1  # not the controller
    cluster.kill(victim)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline:
        text = status(cluster)
        if "Under-replicated partitions: 0" not in text and f"\n{victim} " not in text:
            break
        time.sleep(1.0)
    assert "Under-replicated partitions: 0" not in text, text
    assert f"\n{victim} " not in text, "the killed broker's report went with its session"
    cluster.restart(victim)
    cluster.wait_serving(victim)
