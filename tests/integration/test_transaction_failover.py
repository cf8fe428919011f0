"""Transactions through broker failures: a coordinator killed mid-commit, a leader killed before its marker.

Kafka's guarantees (KIP-98): once EndTxn is answered the PrepareCommit is
durable, so whichever broker leads the transactional id's
``__transaction_state`` partition next completes the commit; and a marker
that could not be written to a dead leader is written to the partition's
next leader.  Each test checks the outcome a read_committed consumer sees:
every record of the committed transaction, none lost, the last stable
offset back at the log end.
"""

from __future__ import annotations

import signal
import time
import uuid

import pytest
from confluent_kafka import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from mafka.group.offsets_records import offsets_partition_for
from tests.harness.cluster import ClusterSpec, LocalCluster

from .test_transactions import end_offsets, read_all

pytestmark = pytest.mark.integration

TXN_PARTITIONS = 10
SETTINGS = {
    "zookeeper.session.timeout.ms": "6000",
    "replica.lag.time.max.ms": "4000",
    "min.insync.replicas": "2",
    "default.replication.factor": "3",
    "unclean.leader.election.enable": "false",
    "auto.leader.rebalance.enable": "false",
    "transaction.state.log.num.partitions": str(TXN_PARTITIONS),
    "offsets.topic.num.partitions": "10",
}


CLUSTER = ClusterSpec(settings=SETTINGS, shared=False)  # kills and freezes brokers


def leader_of(cluster: LocalCluster, topic: str, partition: int, timeout: float = 30.0) -> int:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        md = admin.list_topics(topic, timeout=5)
        t = md.topics.get(topic)
        if t is not None and t.error is None and partition in t.partitions and t.partitions[partition].leader >= 0:
            return t.partitions[partition].leader
        time.sleep(0.2)
    raise TimeoutError(f"no leader for {topic}-{partition}")


def coordinator_of(cluster: LocalCluster, txn_id: str) -> int:
    """The broker leading *txn_id*'s ``__transaction_state`` partition (its first use creates the topic)."""
    Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": txn_id}).init_transactions(60)
    return leader_of(cluster, "__transaction_state", offsets_partition_for(txn_id, TXN_PARTITIONS))


def topic_led_by_another(cluster: LocalCluster, avoid: int) -> tuple[str, int]:
    """A 1-partition RF 3 topic whose leader is not broker *avoid*; (name, leader)."""
    name = f"fo-{uuid.uuid4().hex[:8]}"
    others = [b for b in (1, 2, 3) if b != avoid]
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    # A broker restarted by the previous test must be registered again, or it cannot lead.
    deadline = time.monotonic() + 60
    while len(admin.list_topics(timeout=5).brokers) < 3 and time.monotonic() < deadline:
        time.sleep(0.2)
    while True:
        try:
            admin.create_topics([NewTopic(name, num_partitions=1, replica_assignment=[[others[0], others[1], avoid]])])[name].result(30)
            break
        except KafkaException as exc:
            # Right after the previous test's controller was killed and restarted, metadata may
            # still name it until its old ZooKeeper session expires; Java's AdminClient retries
            # NOT_CONTROLLER, librdkafka leaves it to the application.
            if exc.args[0].code() != KafkaError.NOT_CONTROLLER or time.monotonic() > deadline:
                raise
            time.sleep(0.5)
    # Usually others[0]; others[1] when the controller did not count others[0] live at creation
    # (a broker restarted by the previous test whose old registration had not yet expired: the
    # controller drops it, then sees the new one). Either leader serves these tests.
    leader = leader_of(cluster, name, 0)
    assert leader in others, f"{name}: led by {leader}, which was to be avoided"
    return name, leader


def healed(cluster: LocalCluster, topic: str, expected: int, timeout: float = 120.0) -> list[bytes]:
    """Waits until read_committed reaches the log end of *topic* and returns what it read."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            if end_offsets(cluster, topic, 0, "read_committed") == end_offsets(cluster, topic, 0, "read_uncommitted") >= expected:
                return read_all(cluster, topic, 1, "read_committed", timeout=30)
        except Exception:  # noqa: BLE001 - brokers are coming back
            pass
        time.sleep(0.5)
    raise AssertionError(f"{topic}: read_committed never reached the log end")


def started_transaction(cluster: LocalCluster, txn_id: str, topic: str, n: int) -> Producer:
    p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": txn_id, "linger.ms": 5})
    p.init_transactions(60)
    p.begin_transaction()
    for i in range(n):
        p.produce(topic, f"r-{i}".encode(), partition=0)
    assert p.flush(30) == 0
    return p


def test_a_coordinator_killed_right_after_the_commit_answer_is_completed_by_the_next(cluster):
    txn_id = f"fo-{uuid.uuid4().hex[:6]}"
    coordinator = coordinator_of(cluster, txn_id)
    topic, data_leader = topic_led_by_another(cluster, coordinator)
    p = started_transaction(cluster, txn_id, topic, 50)
    cluster.kill(data_leader, signal.SIGSTOP)  # its marker cannot be written while the coordinator lives
    try:
        p.commit_transaction(60)  # answered once PrepareCommit is durable
        cluster.kill(coordinator, signal.SIGKILL)
    finally:
        cluster.kill(data_leader, signal.SIGCONT)
    time.sleep(2)
    cluster.restart(coordinator)
    cluster.wait_serving(coordinator)
    assert healed(cluster, topic, 51) == [f"r-{i}".encode() for i in range(50)]


def test_a_leader_killed_before_its_marker_gets_it_on_the_new_leader(cluster):
    txn_id = f"fo-{uuid.uuid4().hex[:6]}"
    coordinator = coordinator_of(cluster, txn_id)
    topic, data_leader = topic_led_by_another(cluster, coordinator)
    p = started_transaction(cluster, txn_id, topic, 50)
    cluster.kill(data_leader, signal.SIGKILL)
    p.commit_transaction(60)
    new_leader = leader_of(cluster, topic, 0, timeout=60)
    deadline = time.monotonic() + 60
    while new_leader == data_leader and time.monotonic() < deadline:
        time.sleep(0.5)
        new_leader = leader_of(cluster, topic, 0)
    assert new_leader != data_leader
    assert healed(cluster, topic, 51) == [f"r-{i}".encode() for i in range(50)]
    cluster.restart(data_leader)
    cluster.wait_serving(data_leader)
    # A marker retried after an append whose answer was lost is written twice (harmless, as in
    # Kafka): the log may end past 51, but read_committed still sees exactly the 50 records.
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "x"})
    try:
        low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
        assert low == 0 and high >= 51
    finally:
        c.close()
    assert read_all(cluster, topic, 1, "read_committed") == [f"r-{i}".encode() for i in range(50)]

