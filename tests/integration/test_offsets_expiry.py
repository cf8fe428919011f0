"""Committed offsets expire (real broker, real clock).

One broker with ``offsets.retention.minutes=1`` and the retention check every
second.

* In ``make test`` (a few seconds): a standalone group commits through
  OffsetCommit v2 with ``retention_time_ms`` = 3 s (Kafka 2.8 honours a
  per-request retention at v2–4 as the offsets' expire timestamp); afterwards
  the offsets are gone (OffsetFetch answers -1 to confluent-kafka), the group
  no longer exists for ``mafka consumer-groups``, and ``__consumer_offsets``
  holds the tombstones, as Kafka 2.8's ``cleanupGroupMetadata`` writes them.
  Another partition of the same commit made without a retention is kept until
  ``offsets.retention.minutes``.
* In ``make chaos`` (``soak``: a little over a minute): the broker's own
  ``offsets.retention.minutes`` expires a closed standalone consumer's
  offsets, not before, while a Stable group subscribed to the topic keeps its
  offsets through the same checks (KIP-211).
"""

from __future__ import annotations

import subprocess
import sys
import time

import pytest
from confluent_kafka import Consumer, TopicPartition

from mafka.group.offsets_records import OffsetKey, decode_record, offsets_partition_for
from mafka.wire.records import iter_records
from tests.harness.chaos import create_topic
from tests.harness.cluster import ClusterSpec, LocalCluster
from tests.harness.raw_client import BlockingClient

OFFSET_COMMIT = 8
FIND_COORDINATOR = 10
#: COORDINATOR_LOAD_IN_PROGRESS, COORDINATOR_NOT_AVAILABLE, NOT_COORDINATOR
COORDINATOR_NOT_READY = {14, 15, 16}

pytestmark = pytest.mark.integration

RETENTION_S = 60


CLUSTER = ClusterSpec(settings={"offsets.retention.minutes": "1", "offsets.retention.check.interval.ms": "1000"},
                      brokers=1)  # shared: its own groups and topics only


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


def _commit_v2(bootstrap: str, group: str, topic: str, offsets: dict[int, int], retention_ms: int) -> None:
    """A standalone OffsetCommit v2 (generation -1, no member) with ``retention_time_ms``.

    Retried while the coordinator is not ready (the first FindCoordinator creates
    ``__consumer_offsets``; one broker, so it is the coordinator once loaded).
    """
    body = {
        "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "", "retention_time_ms": retention_ms,
        "topics": [{"name": topic, "partitions": [
            {"partition_index": p, "committed_offset": o, "committed_metadata": ""} for p, o in offsets.items()]}],
    }
    deadline = time.monotonic() + 30
    with BlockingClient(bootstrap) as client:
        while True:
            client.call(FIND_COORDINATOR, 0, {"key": group})
            response = client.call(OFFSET_COMMIT, 2, body)
            errors = {p.partition_index: p.error_code for t in response.topics for p in t.partitions}
            if not set(errors.values()) & COORDINATOR_NOT_READY or time.monotonic() > deadline:
                break
            time.sleep(0.2)
    assert errors == dict.fromkeys(offsets, 0), errors


def _tombstones(cluster: LocalCluster, group: str) -> set[tuple[str, int]]:
    return {(k.topic, k.partition) for k, v in _offsets_records(cluster, group)
            if isinstance(k, OffsetKey) and k.group == group and v is None}


def _group_exists(cluster: LocalCluster, group: str) -> bool:
    r = subprocess.run([sys.executable, "-m", "mafka.cli.main", "consumer-groups", "--bootstrap-server",
                        cluster.bootstrap, "--describe", "--group", group], capture_output=True, text=True, timeout=60)
    return f"Consumer group '{group}' does not exist." not in r.stdout + r.stderr


def test_offsets_committed_with_a_retention_time_expire_after_it(cluster: LocalCluster) -> None:
    topic = create_topic(cluster, partitions=2, rf=1)
    committed_at = time.monotonic()
    _commit_v2(cluster.bootstrap, "short-lived", topic, {0: 5}, retention_ms=3000)
    _commit_v2(cluster.bootstrap, "short-lived", topic, {1: 7}, retention_ms=-1)  # the broker's minute
    assert _committed(cluster.bootstrap, "short-lived", topic) == [5, 7]
    deadline = committed_at + 20
    while _committed(cluster.bootstrap, "short-lived", topic) != [-1001, 7]:
        assert time.monotonic() < deadline, "the offset did not expire"
        time.sleep(0.5)
    expired_after = time.monotonic() - committed_at
    print(f"an offset committed with retention_time_ms=3000 expired {expired_after:.1f} s after the commit")
    assert expired_after >= 3.0
    assert _tombstones(cluster, "short-lived") == {(topic, 0)}
    assert _group_exists(cluster, "short-lived")  # partition 1's offset is still there

    _commit_v2(cluster.bootstrap, "gone", topic, {0: 1, 1: 2}, retention_ms=2000)
    deadline = time.monotonic() + 20
    while _group_exists(cluster, "gone"):
        assert time.monotonic() < deadline, "the group did not go away with its last offsets"
        time.sleep(0.5)
    assert _committed(cluster.bootstrap, "gone", topic) == [-1001, -1001]
    assert _tombstones(cluster, "gone") == {(topic, 0), (topic, 1)}


@pytest.mark.soak
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

    assert not _group_exists(cluster, "expiring")
    assert _tombstones(cluster, "expiring") == {(topic, 0), (topic, 1)}
