"""``mafka share-groups`` (``kafka-share-groups.sh``) over a share group of two confluent-kafka
ShareConsumers on a real 3-broker cluster: ``--list``, ``--describe --members``, ``--describe
--offsets``, then — the members gone — ``--reset-offsets --to-earliest --execute``, after which a
new member is given the old records again (AlterShareGroupOffsets bumps the group epoch, so the
share-partition leader still holding the old state is fenced at its next write and reloads); and
``--delete-offsets`` leaves the group without offset information.

Share-partitions start at ``share.auto.offset.reset`` latest, so the members first receive probe
records; everything produced after that is the group's.
"""

from __future__ import annotations

import re
import subprocess
import sys
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.harness.chaos import create_topic
from tests.harness.cluster import ClusterFactory, LocalCluster
from tests.harness.waits import wait_until

pytestmark = pytest.mark.integration

SETTINGS = {
    "zookeeper.session.timeout.ms": "6000",
    "default.replication.factor": "3",
    "offsets.topic.replication.factor": "3",
    "offsets.topic.num.partitions": "3",
    "share.coordinator.state.topic.num.partitions": "3",
    "auto.leader.rebalance.enable": "false",
    "group.share.record.lock.duration.ms": "2000",
}
PARTITIONS = 2


@pytest.fixture(scope="module")
def cluster(cluster_factory: ClusterFactory) -> Iterator[LocalCluster]:
    with cluster_factory.own(name="share-groups-cli", settings=SETTINGS) as c:
        yield c


def mafka(cluster: LocalCluster, *argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "mafka.cli.main", "share-groups", "--bootstrap-server", cluster.bootstrap,
         "--timeout", "15000", *argv],
        capture_output=True, text=True, timeout=60,
    )


def produce(bootstrap: str, topic: str, values: list[bytes], partition: int | None = None) -> None:
    from confluent_kafka import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 0})
    for i, v in enumerate(values):
        producer.produce(topic, v, partition=i % PARTITIONS if partition is None else partition)
    assert producer.flush(30) == 0


def poll(consumer: Any) -> list[bytes]:
    return [bytes(m.value() or b"") for m in consumer.poll(timeout=0.3) or [] if m.error() is None]


def table(stdout: str) -> list[list[str]]:
    """Kafka's tables: a blank line, a header, one whitespace-separated row per line."""
    return [line.split() for line in stdout.splitlines() if line.strip()]


def test_list_describe_reset_to_earliest(cluster: LocalCluster) -> None:
    from confluent_kafka import ShareConsumer

    topic = create_topic(cluster, partitions=PARTITIONS, rf=3)
    group = f"share-cli-{uuid.uuid4().hex[:8]}"
    members = [ShareConsumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                              "client.id": f"member-{i}"}) for i in range(2)]
    tag = uuid.uuid4().hex[:6]
    values = [f"v{i}-{tag}".encode() for i in range(40)]
    try:
        for m in members:
            m.subscribe([topic])
        live: set[int] = set()

        def both_live() -> bool:
            produce(cluster.bootstrap, topic, [f"probe-{tag}".encode()] * PARTITIONS)
            for i, m in enumerate(members):
                if poll(m):
                    live.add(i)
            return live == {0, 1}

        wait_until(both_live, 90, "both share consumers receive records", interval=0.2)
        produce(cluster.bootstrap, topic, values)
        seen: list[bytes] = []

        def all_received() -> bool:
            for m in members:
                seen.extend(v for v in poll(m) if not v.startswith(b"probe-"))
            return set(seen) >= set(values)

        wait_until(all_received, 60, lambda: f"{len(values)} records, got {len(set(seen))}", interval=0.1)

        r = mafka(cluster, "--list")
        assert r.returncode == 0, r
        assert group in r.stdout.split()

        r = mafka(cluster, "--describe", "--group", group, "--members")
        assert r.returncode == 0, r
        header, *rows = table(r.stdout)
        assert header == ["GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT"]
        assert len(rows) == 2 and all(row[0] == group for row in rows)
        assert sorted(row[3] for row in rows) == ["member-0", "member-1"]
        assert all(row[5].startswith(f"{topic}:") for row in rows)
        assigned = {int(p) for row in rows for p in row[5].split(":")[1].split(",")}
        assert assigned == set(range(PARTITIONS))

        def offsets_settled() -> bool:
            # members acknowledge what they were given on their next poll: keep polling meanwhile
            for m in members:
                poll(m)
            r = mafka(cluster, "--describe", "--group", group, "--offsets")
            assert r.returncode == 0, r
            header, *rows = table(r.stdout)
            assert header == ["GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG"]
            assert [(row[0], row[1], int(row[2])) for row in rows] == [(group, topic, p) for p in range(PARTITIONS)]
            return all(re.fullmatch(r"\d+", row[3]) for row in rows) and sum(int(row[3]) for row in rows) >= len(values)

        wait_until(offsets_settled, 30, "every record acknowledged", interval=0.5, retry=(AssertionError,))
    finally:
        for m in members:
            m.close()

    def empty() -> bool:
        r = mafka(cluster, "--describe", "--group", group, "--state")
        return r.returncode == 0 and table(r.stdout)[1][-2:] == ["Empty", "0"]

    wait_until(empty, 30, "the share group is empty", interval=0.5)

    r = mafka(cluster, "--reset-offsets", "--group", group, "--topic", topic, "--to-earliest", "--execute")
    assert r.returncode == 0, r
    header, *rows = table(r.stdout)
    assert header == ["GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"]
    assert rows == [[group, topic, str(p), "0"] for p in range(PARTITIONS)]

    r = mafka(cluster, "--describe", "--group", group, "--offsets")
    assert r.returncode == 0, r
    assert [row[3] for row in table(r.stdout)[1:]] == ["0"] * PARTITIONS

    again = ShareConsumer({"bootstrap.servers": cluster.bootstrap, "group.id": group})
    try:
        again.subscribe([topic])
        redelivered: set[bytes] = set()

        def old_records_again() -> bool:
            # A leader that still holds the pre-reset state is fenced at its next write (a new
            # record's acquisition) and reloads the reset state: nudge each partition.
            produce(cluster.bootstrap, topic, [f"nudge-{tag}".encode()] * PARTITIONS)
            redelivered.update(v for v in poll(again) if v in set(values))
            return redelivered == set(values)

        wait_until(old_records_again, 90, lambda: f"old records again, got {len(redelivered)}", interval=0.2)
    finally:
        again.close()

    wait_until(empty, 30, "the share group is empty again", interval=0.5)
    r = mafka(cluster, "--delete-offsets", "--group", group, "--topic", topic)
    assert r.returncode == 0, r
    assert table(r.stdout) == [["TOPIC", "STATUS"], [topic, "Successful"]]
    r = mafka(cluster, "--describe", "--group", group, "--offsets")
    assert r.returncode == 0, r
    assert r.stdout == f"\nShare group '{group}' has no offset information.\n"
