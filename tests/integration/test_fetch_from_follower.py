"""KIP-392 with a real client: a consumer fetches from the replica in its own rack.

One 3-broker cluster (real ZooKeeper, real broker processes), broker *n* in
rack ``RACK<n>`` and ``replica.selector.class`` set to Kafka's
``RackAwareReplicaSelector``.  Each test makes an RF 3 topic, produces N
records (acks=all) and consumes them with confluent-kafka (librdkafka, Fetch
v11) from offset 0:

* with ``client.rack`` = the rack of a follower, the leader names that
  follower as the preferred read replica and every record is fetched from
  it;
* without ``client.rack``, every record is fetched from the leader.

Where the records came from is read from librdkafka itself: its statistics
(per partition, ``broker`` is the broker it fetches from and ``leader`` the
leader; per broker, the bytes received) and its ``fetch`` debug log, which
reports the preferred replica the leader named.  Every wait is bounded.
"""

from __future__ import annotations

import json
import logging
import time
import uuid

import pytest

from mafka.broker.replica_selector import RACK_AWARE_REPLICA_SELECTOR
from tests.harness.chaos import Chaos, create_topic
from tests.harness.cluster import ClusterSpec

pytestmark = pytest.mark.integration

N = 300
VALUE = b"x" * 1000
WAIT = 90.0  # the machine is shared: generous, but bounded
SETTINGS = {
    "broker.rack": "RACK${broker.id}",
    "replica.selector.class": RACK_AWARE_REPLICA_SELECTOR,
    "default.replication.factor": "3",
    "auto.leader.rebalance.enable": "false",  # the leader stays where the test found it
}


CLUSTER = ClusterSpec(settings=SETTINGS)  # shared (with any module asking for these racks)


@pytest.fixture
def topic_with_records(cluster):
    """(topic, leader, replicas) of a new RF 3 topic holding N records at partition 0."""
    from confluent_kafka import Producer

    chaos = Chaos(cluster)
    try:
        topic = create_topic(cluster, partitions=1, rf=3, name=f"ffr-{uuid.uuid4().hex[:8]}", chaos=chaos)
        leader, replicas = chaos.leader(topic, 0), chaos.replicas(topic, 0)
    finally:
        chaos.close()
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 5})
    failures = []
    for i in range(N):
        producer.produce(topic, value=VALUE, key=b"%d" % i, partition=0,
                         on_delivery=lambda err, msg: failures.append(err) if err else None)
        producer.poll(0)
    assert producer.flush(WAIT) == 0 and failures == []
    return topic, leader, replicas


class _Lines(logging.Handler):
    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())


def consume_all(cluster, topic: str, rack: str | None) -> tuple[list[bytes], dict, list[str]]:
    """Reads partition 0 from offset 0 until N records: (keys, the last statistics, the fetch debug log)."""
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    logger = logging.getLogger(f"rdkafka.ffr.{uuid.uuid4().hex[:6]}")
    lines = _Lines()
    logger.addHandler(lines)
    logger.setLevel(logging.DEBUG)
    stats: list[dict] = []
    config = {
        "bootstrap.servers": cluster.bootstrap,
        "group.id": f"ffr-{uuid.uuid4().hex[:8]}",
        "enable.auto.commit": False,
        "statistics.interval.ms": 200,
        "stats_cb": lambda text: stats.append(json.loads(text)),
        "debug": "fetch",
        "logger": logger,
    }
    if rack is not None:
        config["client.rack"] = rack
    consumer = Consumer(config)
    keys: list[bytes] = []
    try:
        consumer.assign([TopicPartition(topic, 0, OFFSET_BEGINNING)])
        deadline = time.monotonic() + WAIT
        while len(keys) < N and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            keys.append(msg.key())
        # One more statistics round after the last record, so they cover every fetch.
        seen = len(stats)
        while len(stats) < seen + 2 and time.monotonic() < deadline + 10:
            consumer.poll(0.2)
    finally:
        consumer.close()
        logger.removeHandler(lines)
    assert stats, "librdkafka sent no statistics"
    return keys, stats[-1], lines.lines


def rx_bytes_by_broker(stats: dict) -> dict[int, int]:
    """Bytes librdkafka received from each broker (bootstrap connections left out)."""
    return {b["nodeid"]: b["rxbytes"] for b in stats["brokers"].values() if b["nodeid"] >= 0}


def fetching_from(stats: dict, topic: str) -> tuple[int, int]:
    """(the broker librdkafka fetches partition 0 from, the leader it knows)."""
    p = stats["topics"][topic]["partitions"]["0"]
    return p["broker"], p["leader"]


def test_a_consumer_in_a_followers_rack_fetches_from_that_follower(cluster, topic_with_records):
    topic, leader, replicas = topic_with_records
    follower = next(r for r in replicas if r != leader)
    keys, stats, log = consume_all(cluster, topic, rack=f"RACK{follower}")
    assert keys == [b"%d" % i for i in range(N)]
    assert fetching_from(stats, topic) == (follower, leader)
    rx = rx_bytes_by_broker(stats)
    # The records' bytes came from the follower; the leader sent metadata, offsets and
    # the empty answer naming the preferred replica.
    assert rx[follower] > N * len(VALUE), rx
    assert rx.get(leader, 0) < N * len(VALUE) // 10, rx
    # librdkafka: "Topic t [0]: migrating from broker 1 to 2 (leader is 1): preferred replica updated".
    named = [line for line in log if "preferred replica" in line and f" to {follower} " in line]
    assert named, "\n".join(log[-50:])


def test_a_consumer_without_a_rack_keeps_fetching_from_the_leader(cluster, topic_with_records):
    topic, leader, replicas = topic_with_records
    keys, stats, log = consume_all(cluster, topic, rack=None)
    assert keys == [b"%d" % i for i in range(N)]
    assert fetching_from(stats, topic) == (leader, leader)
    rx = rx_bytes_by_broker(stats)
    assert rx[leader] > N * len(VALUE), rx
    assert all(rx.get(r, 0) < N * len(VALUE) // 10 for r in replicas if r != leader), rx
    assert not [line for line in log if "preferred" in line.lower()]
