"""Ctrl-C on ``mafka cluster up`` (what ``make run`` runs) stops a 3-broker cluster in seconds.

The supervisor stops the brokers one after another, the controller last, and
each broker's controlled shutdown moves its leadership away first.  Before,
the brokers were stopped together: those that were not the controller asked
the controller, which was itself going, and one stop in eight waited out the
30 s request timeout.  A request on a connection that closes, or that cannot
be made, now fails at once and is asked again of the controller ZooKeeper
names next.
"""

from __future__ import annotations

import re
import signal
import time
import urllib.request
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.harness.cluster import DURABLE_SETTINGS, LocalCluster

pytestmark = pytest.mark.integration

#: what one graceful stop of three brokers may take here, loaded machine included
#: (measured: 2-4 s idle); the old failure mode took 30 s or more
STOP_BOUND_S = 15.0


def test_ctrl_c_stops_the_cluster_gracefully_in_seconds(tmp_path):
    cluster = LocalCluster(tmp_path / "cluster", brokers=3, settings=DURABLE_SETTINGS, console=True).start()
    try:
        # what `make run` starts beside the brokers: the console, its URL in cluster.json
        console = cluster.info["console"]
        assert console == f"http://127.0.0.1:{cluster.console_port}/"
        page = urllib.request.urlopen(console + "brokers", timeout=30).read().decode()
        assert all(f"127.0.0.1:{b['port']}" in page for b in cluster.info["brokers"]), page[:2000]
        plan = urllib.request.urlopen(console + "rebalancer", timeout=30).read().decode()
        assert "No plan has run." in plan, plan[:3000]  # read from the cluster's ZooKeeper
        topic = f"stop-{uuid.uuid4().hex[:6]}"
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic(topic, 6, 3)])[topic].result(30)
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
        for i in range(600):
            producer.produce(topic, b"v%d" % i, partition=i % 6)
        assert producer.flush(30) == 0
        controller = cluster.controller_id()

        started = time.monotonic()
        cluster.proc.send_signal(signal.SIGINT)
        cluster.proc.wait(timeout=120)
        took = time.monotonic() - started
    finally:
        cluster.stop()

    logs = {b["id"]: Path(b["log_file"]).read_text(errors="replace") for b in cluster.info["brokers"]}
    assert took < STOP_BOUND_S, f"stopping took {took:.1f} s"
    for broker_id, text in logs.items():
        assert f"broker {broker_id} stopped" in text, f"broker {broker_id} did not stop gracefully"
        assert not re.search(r"controlled shutdown via controller \S+ failed: .*30\.0", text), text[-3000:]
        if broker_id != controller:
            # stopped while the controller was up: its leadership moved in one try
            assert "controlled shutdown succeeded" in text, f"broker {broker_id}: {text[-3000:]}"
    with pytest.raises(OSError):  # the console went with the cluster
        urllib.request.urlopen(console + "brokers", timeout=5)
    said = (tmp_path / "cluster-cluster.log").read_text(errors="replace")
    order = [int(n) for n in re.findall(r"^stopping broker (\d+)", said, re.M)]
    assert sorted(order) == [1, 2, 3] and order[-1] == controller, said
