"""Hybrid (hot/cold) storage on a 3-broker cluster, judged by confluent-kafka and kcat.

Each broker has a cold dir (``mafka.cold.log.dirs``); the mover keeps two
segments' worth of bytes hot (``mafka.hot.retention.bytes``) and moves older
ones.  Records acknowledged with acks=all (RF 3) are read back whole by both
clients while part of the log is cold, on every broker as leader in turn, and
again after every broker was SIGKILLed and restarted (so the logs reopen
across both tiers, and recover).  The mover running while the brokers are
killed exercises a crash during a move at random points; the unit tests
(``tests/unit/log/test_tiering.py``) kill a process at each step.
"""

from __future__ import annotations

import shutil
import signal
import subprocess
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.harness.cluster import DURABLE_SETTINGS, LocalCluster
from tests.harness.waits import wait_dead

pytestmark = pytest.mark.integration

SEGMENT = 64 * 1024
RECORDS = 1500


def tiered(root: Path) -> dict[str, str]:
    """A cold dir per broker under *root*; two segments' worth kept hot; the mover every 300 ms."""
    return {
        "mafka.cold.log.dirs": str(root / "cold-${broker.id}"),
        "mafka.hot.retention.bytes": str(2 * SEGMENT),
        "mafka.hot.retention.ms": "-1",
        "mafka.cold.mover.interval.ms": "300",
    }


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, cluster_factory):
    """A cluster of its own (its tests SIGKILL and restart brokers), its cold tier under a fresh directory."""
    root = tmp_path_factory.mktemp("hybrid")
    settings = {**DURABLE_SETTINGS, **tiered(root), "mafka.cold.read.threads": "2"}
    with cluster_factory.own(name="hybrid", settings=settings) as c:
        c.cold_root = root
        yield c


def cold_segments(cluster: LocalCluster, broker_id: int, topic: str) -> list[Path]:
    d = cluster.cold_root / f"cold-{broker_id}" / f"{topic}-0"
    return sorted(d.glob("*.log")) if d.is_dir() else []


def hot_segments(cluster: LocalCluster, broker_id: int, topic: str) -> list[Path]:
    d = Path(cluster.broker(broker_id)["log_dirs"][0]) / f"{topic}-0"
    return sorted(d.glob("*.log"))


def consume_all(bootstrap: str, topic: str, count: int, timeout: float = 60.0) -> list[bytes]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False, "fetch.max.bytes": 1_100_000, "max.partition.fetch.bytes": 100_000})
    out: list[bytes] = []
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + timeout
        while len(out) < count and time.monotonic() < deadline:
            m = c.poll(0.2)
            if m is not None and m.error() is None:
                out.append(m.value())
    finally:
        c.close()
    return out


def kcat_all(bootstrap: str, topic: str, count: int) -> list[bytes]:
    done = subprocess.run(["kcat", "-C", "-b", bootstrap, "-t", topic, "-p", "0", "-o", "beginning",
                           "-c", str(count), "-e", "-q", "-f", "%s\n"],
                          capture_output=True, timeout=90, check=True)
    return done.stdout.splitlines()


def leader_of(cluster: LocalCluster, topic: str) -> int:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    return admin.list_topics(topic, timeout=10).topics[topic].partitions[0].leader


def wait_all_in_sync(cluster: LocalCluster, topic: str, timeout: float = 90.0) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
            p = admin.list_topics(topic, timeout=5).topics[topic].partitions[0]
            if p.leader >= 0 and len(p.isrs) == 3:
                return
        except Exception:  # noqa: BLE001 - brokers still starting
            pass
        assert time.monotonic() < deadline, "the partition did not come back fully in sync"
        time.sleep(0.5)


def test_segments_move_cold_and_are_served_from_both_tiers_before_and_after_restarts(cluster):
    assert shutil.which("kcat"), "kcat is installed by make test"
    topic = f"tiered-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 3, config={"segment.bytes": str(SEGMENT)})])[topic].result(30)
    # small batches: a segment rolls only between batches
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True,
                  "linger.ms": 5, "batch.size": 16384})
    expected = [b"%06d-" % i + b"x" * 400 for i in range(RECORDS)]
    acked: list[int] = []
    for v in expected:
        p.produce(topic, v, partition=0, on_delivery=lambda err, m: acked.append(m.offset()) if err is None else None)
    assert p.flush(60) == 0 and len(acked) == RECORDS

    # every replica moves its old segments: about 620 KB of records, 64 KB segments, 128 KB kept hot
    deadline = time.monotonic() + 60
    while not all(len(cold_segments(cluster, b, topic)) >= 5 for b in (1, 2, 3)):
        assert time.monotonic() < deadline, {b: cold_segments(cluster, b, topic) for b in (1, 2, 3)}
        time.sleep(0.3)
    # Each segment ends in exactly one tier.  A move copies the segment to the cold tier before it
    # removes the hot copy, so a listing taken while a move runs sees it in both: wait for the
    # moves under way to finish.
    for b in (1, 2, 3):
        deadline = time.monotonic() + 30
        while True:
            cold = {s.name for s in cold_segments(cluster, b, topic)}
            hot = {s.name for s in hot_segments(cluster, b, topic)}
            if not cold & hot or time.monotonic() > deadline:
                break
            time.sleep(0.3)
        assert cold and hot and not cold & hot, (b, cold, hot)
        assert "00000000000000000000.log" in cold

    assert consume_all(cluster.bootstrap, topic, RECORDS) == expected
    assert kcat_all(cluster.bootstrap, topic, RECORDS) == expected

    # every broker serves the cold tier as leader: move leadership by killing the leader twice
    first = leader_of(cluster, topic)
    cluster.kill(first, signal.SIGKILL)
    deadline = time.monotonic() + 30
    while leader_of(cluster, topic) in (first, -1):
        assert time.monotonic() < deadline
        time.sleep(0.3)
    assert consume_all(cluster.bootstrap, topic, RECORDS) == expected
    cluster.restart(first)
    wait_all_in_sync(cluster, topic)

    # all three killed at once (the mover may be mid-move), then restarted: logs reopen across tiers
    p2 = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True})
    more = [b"%06d-after" % i for i in range(RECORDS, RECORDS + 200)]
    for v in more:
        p2.produce(topic, v, partition=0)
    assert p2.flush(30) == 0
    pids = [cluster.broker(b)["pid"] for b in (1, 2, 3)]
    for b in (1, 2, 3):
        cluster.kill(b, signal.SIGKILL)
    for pid in pids:
        wait_dead(pid)
    for b in (1, 2, 3):
        cluster.restart(b)
    wait_all_in_sync(cluster, topic)
    assert consume_all(cluster.bootstrap, topic, RECORDS + 200) == expected + more
    assert kcat_all(cluster.bootstrap, topic, RECORDS + 200) == expected + more
    for b in (1, 2, 3):
        cold = {s.name for s in cold_segments(cluster, b, topic)}
        hot = {s.name for s in hot_segments(cluster, b, topic)}
        assert cold and not cold & hot, (b, cold, hot)
        leftovers = list((cluster.cold_root / f"cold-{b}" / f"{topic}-0").glob("*.moving"))
        assert leftovers == []


def test_a_broker_killed_after_each_step_of_a_move_keeps_exactly_one_copy_and_every_record(
        tmp_path_factory, monkeypatch):
    """``MAFKA_TEST_CRASH_AFTER_MOVE_STEP`` makes the broker's mover exit at once (as a SIGKILL would
    leave it) right after one step of a hot -> cold move; each restart then completes or undoes it."""
    from tests.harness.chaos import process_state

    root = tmp_path_factory.mktemp("hybrid-crash")
    settings = {**tiered(root), "default.replication.factor": "1", "offsets.topic.replication.factor": "1"}
    steps = ["copied", "indexes", "switched", "retired"]
    monkeypatch.setenv("MAFKA_TEST_CRASH_AFTER_MOVE_STEP", steps[0])
    cluster = LocalCluster(root / "cluster", brokers=1, settings=settings)
    cluster.start()
    cluster.cold_root = root
    try:
        topic = f"crash-{uuid.uuid4().hex[:8]}"
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        admin.create_topics([NewTopic(topic, 1, 1, config={"segment.bytes": str(SEGMENT)})])[topic].result(30)
        p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 5, "batch.size": 16384})
        expected = [b"%06d-" % i + b"y" * 400 for i in range(RECORDS)]
        for v in expected:
            p.produce(topic, v, partition=0)
        assert p.flush(60) == 0
        log_file = Path(cluster.broker(1)["log_file"])
        for i, step in enumerate(steps):
            if i:
                monkeypatch.setenv("MAFKA_TEST_CRASH_AFTER_MOVE_STEP", step)
                cluster.restart(1)
            deadline = time.monotonic() + 60
            while process_state(cluster.broker(1)["pid"]) not in (None, "Z"):
                assert time.monotonic() < deadline, f"the broker did not stop after {step}"
                time.sleep(0.2)
            assert f"MAFKA_TEST_CRASH_AFTER_MOVE_STEP={step}: exiting now" in log_file.read_text()
        monkeypatch.delenv("MAFKA_TEST_CRASH_AFTER_MOVE_STEP")
        cluster.restart(1)
        deadline = time.monotonic() + 60
        while len(cold_segments(cluster, 1, topic)) < 5:
            assert time.monotonic() < deadline, cold_segments(cluster, 1, topic)
            time.sleep(0.3)
        assert consume_all(cluster.bootstrap, topic, RECORDS) == expected
        assert kcat_all(cluster.bootstrap, topic, RECORDS) == expected
        cold = {s.name for s in cold_segments(cluster, 1, topic)}
        hot = {s.name for s in hot_segments(cluster, 1, topic)}
        assert not cold & hot, (cold, hot)
        assert list((root / "cold-1" / f"{topic}-0").glob("*.moving")) == []
    finally:
        cluster.stop()
