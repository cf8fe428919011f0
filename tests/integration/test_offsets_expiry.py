"""Committed offsets expire after ``offsets.retention.minutes`` (real broker, real clock).

One broker with ``offsets.retention.minutes=1`` and the retention check every
second: a standalone (``assign()``) confluent-kafka consumer commits, closes,
and a minute later the offsets are gone (OffsetFetch answers -1), the group no
longer exists for ``mafka consumer-groups``, and ``__consumer_offsets`` holds
the tombstones, as Kafka 2.8's ``cleanupGroupMetadata`` writes them.  A group
with live members is not touched by the same check.  Takes a little over a minute.
"""

from __future__ import annotations

import subprocess
import sys
import time
from collections.abc import Iterator

import pytest
from confluent_kafka import Consumer, TopicPartition

from mafka.group.offsets_records import OffsetKey, decode_record, offsets_partition_for
from mafka.wire.records import iter_records

from .chaos import create_topic
from .cluster import LocalCluster

pytestmark = pytest.mark.integration

RETENTION_S = 60


@pytest.fixture(scope="module")
def cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LocalCluster]:
    c = LocalCluster(tmp_path_factory.mktemp("expiry") / "cluster", brokers=1, settings={
        "offsets.retention.minutes": "1",
        "offsets.retention.check.interval.ms": "1000",
    }).start()
    try:
        yield c
    finally:
        c.stop()


def _committed(bootstrap: str, group: str, topic: str) -> list[int]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
    try:
        return [tp.offset for tp in c.committed([TopicPartition(topic, p) for p in range(2)], timeout=15)]
    finally:
        c.close()


def _offsets_records(cluster: LocalCluster, group: str) -> list[tuple[object, object]]:
    """Every decoded record of the group's __consumer_offsets partition, from its segment files."""
    part_dir = cluster.directory / "broker-1" / "logs" / f"__consumer_offsets-{offsets_partition_for(group)}"
    out = []
    for segment in sorted(part_dir.glob("*.log")):
        out += [decode_record(r.key, r.value) for r in iter_records(segment.read_bytes())]
    return out


def test_offsets_of_an_empty_group_expire_and_a_stable_groups_do_not(cluster: LocalCluster) -> None:
    topic = create_topic(cluster, partitions=2, rf=1)
    standalone = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "expiring", "enable.auto.commit": False})
    standalone.commit(offsets=[TopicPartition(topic, 0, 5), TopicPartition(topic, 1, 7)], asynchronous=False)
    standalone.close()
    committed_at = time.monotonic()
    assert _committed(cluster.bootstrap, "expiring", topic) == [5, 7]

    live = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "living", "enable.auto.commit": False,
                     "session.timeout.ms": 10000, "auto.offset.reset": "earliest"})
    try:
        live.subscribe([topic])
        deadline = time.monotonic() + 30
        while not live.assignment() and time.monotonic() < deadline:
            live.poll(0.2)
        assert len(live.assignment()) == 2
        live.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)

        # Not before the retention: still there half-way through.
        while time.monotonic() - committed_at < RETENTION_S / 2:
            live.poll(0.5)
        assert _committed(cluster.bootstrap, "expiring", topic) == [5, 7]

        deadline = committed_at + RETENTION_S + 20
        while _committed(cluster.bootstrap, "expiring", topic) != [-1001, -1001]:
            assert time.monotonic() < deadline, "the offsets did not expire"
            for _ in range(4):
                live.poll(0.5)  # keeps the live member's session
        expired_after = time.monotonic() - committed_at
        print(f"offsets of an Empty group expired {expired_after:.1f} s after the commit "
              f"(offsets.retention.minutes=1, check every 1 s)")
        assert expired_after >= RETENTION_S - 1

        # The Stable group subscribes to the topic: its offset stays (KIP-211).
        assert live.committed([TopicPartition(topic, 0)], timeout=15)[0].offset == 1
    finally:
        live.close()

    r = subprocess.run([sys.executable, "-m", "mafka.cli.main", "consumer-groups", "--bootstrap-server",
                        cluster.bootstrap, "--describe", "--group", "expiring"], capture_output=True, text=True, timeout=60)
    assert "Consumer group 'expiring' does not exist." in r.stdout + r.stderr, r
    records = _offsets_records(cluster, "expiring")
    tombstones = {(k.topic, k.partition) for k, v in records if isinstance(k, OffsetKey) and k.group == "expiring" and v is None}
    assert tombstones == {(topic, 0), (topic, 1)}, records
