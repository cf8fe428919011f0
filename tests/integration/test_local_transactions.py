"""Local-transaction messages: an SQLite order row and its ``OrderCreated`` message, atomically.

The "orders" service inserts an order and publishes ``OrderCreated`` with
``TransactionalMessageProducer.send_in_transaction``; its check-back looks the
order up.  On a 3-broker cluster (RF 3, ``min.insync.replicas=2``), with
``mafka.txn.check.interval.ms=1500`` so check-backs come quickly:

* the task returns → the message appears once, the row is there;
* the task raises → the message never appears, the row is not there;
* the producer dies after the local commit, before the message's → a second
  producer of the group is asked and commits it (once) — closed in-process, and
  as a separate process SIGKILLed;
* the producer dies before the local commit → the check-back answers ROLLBACK
  (in-process, and SIGKILLed);
* nobody of the group is alive → the message waits, unchecked, until one is;
* the answer stays UNKNOWN → after ``mafka.txn.check.max.times`` the default
  (rollback) applies;
* the partition's leader is SIGKILLed between the half message and the commit
  → the commit reaches the new leader; the message appears once.

Consumers are confluent-kafka (librdkafka): half messages are envelopes it skips.
"""

from __future__ import annotations

import signal
import sqlite3
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Consumer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from mafka.client import TransactionalMessageProducer
from mafka.client.local_transactions import COMMIT, ROLLBACK, UNKNOWN, HalfMessage
from tests.harness.cluster import DURABLE_SETTINGS, ClusterSpec, LocalCluster

pytestmark = pytest.mark.integration

MAFKA = str(Path(sys.executable).with_name("mafka"))
TOPIC_CONFIG = {"mafka.txn.check.interval.ms": "1500", "mafka.txn.check.max.times": "3"}


CLUSTER = ClusterSpec(settings=DURABLE_SETTINGS, shared=False)  # kills and restarts a leader


def new_topic(cluster: LocalCluster) -> str:
    """An RF 3 topic, once all three brokers are registered (a test before may have restarted one)."""
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    deadline = time.monotonic() + 60
    while len(admin.list_topics(timeout=5).brokers) < 3:
        assert time.monotonic() < deadline, "a restarted broker did not register again"
        time.sleep(0.5)
    name = f"orders-{uuid.uuid4().hex[:8]}"
    admin.create_topics([NewTopic(name, 1, 3, config=TOPIC_CONFIG)])[name].result(30)
    return name


class Orders:
    """The orders service's database: one SQLite file, one table."""

    def __init__(self, path: Path) -> None:
        self.path = path
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE IF NOT EXISTS orders (id TEXT PRIMARY KEY, item TEXT)")

    def insert(self, order_id: str, item: str, fail: bool = False) -> None:
        with sqlite3.connect(self.path) as db:  # commits on success, rolls back on an exception
            db.execute("INSERT INTO orders VALUES (?, ?)", (order_id, item))
            if fail:
                raise RuntimeError("payment service down")

    def exists(self, order_id: str) -> bool:
        with sqlite3.connect(self.path) as db:
            return db.execute("SELECT 1 FROM orders WHERE id = ?", (order_id,)).fetchone() is not None

    def check(self, half: HalfMessage) -> str:
        """check_local_state: the order decides (its id is the message key)."""
        return COMMIT if self.exists(half.key.decode()) else ROLLBACK


def producer(cluster: LocalCluster, check, group: str) -> TransactionalMessageProducer:
    return TransactionalMessageProducer({"bootstrap.servers": cluster.bootstrap, "mafka.txn.producer.group": group,
                                         "mafka.txn.check.poll.ms": 200, "linger.ms": 1}, check)


def read(cluster: LocalCluster, topic: str, seconds: float) -> list[bytes]:
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"r-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False, "fetch.wait.max.ms": 50})
    out: list[bytes] = []
    try:
        c.assign([TopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            m = c.poll(0.1)
            if m is not None and m.error() is None:
                out.append(m.key())
    finally:
        c.close()
    return out


def test_a_committed_task_publishes_once_and_a_failed_one_never(cluster, tmp_path):
    topic = new_topic(cluster)
    orders = Orders(tmp_path / "orders.db")
    with producer(cluster, orders.check, f"orders-{uuid.uuid4().hex[:6]}") as p:
        p.send_in_transaction(topic, b'{"item": "book"}', b"o-1", partition=0,
                              local_task=lambda half: orders.insert("o-1", "book"))
        with pytest.raises(RuntimeError):
            p.send_in_transaction(topic, b'{"item": "lamp"}', b"o-2", partition=0,
                                  local_task=lambda half: orders.insert("o-2", "lamp", fail=True))
        got = read(cluster, topic, 5.0)  # past several check intervals
    assert got == [b"o-1"]
    assert orders.exists("o-1") and not orders.exists("o-2")


def test_a_producer_lost_after_the_local_commit_is_completed_by_another_of_its_group(cluster, tmp_path):
    topic = new_topic(cluster)
    orders = Orders(tmp_path / "orders.db")
    group = f"orders-{uuid.uuid4().hex[:6]}"
    first = producer(cluster, orders.check, group)
    committed = first.send_half(topic, b"{}", b"o-10", partition=0)
    orders.insert("o-10", "chair")  # the local commit ... and the producer dies before the message's
    lost = first.send_half(topic, b"{}", b"o-11", partition=0)  # dies before its local commit
    first.close()
    # nobody of the group is alive: the messages wait, checked by no one, and --list-half shows them
    assert read(cluster, topic, 4.0) == []
    listed = subprocess.run([MAFKA, "transactions", "--list-half", "--bootstrap-server", cluster.bootstrap],
                            capture_output=True, text=True, timeout=60)
    assert listed.returncode == 0, listed.stderr
    rows = [line.split() for line in listed.stdout.splitlines()[1:] if group in line]
    assert listed.stdout.split()[:6] == ["ProducerGroup", "Topic", "Partition", "Offset", "TransactionalId",
                                         "TimesChecked"]
    assert sorted((r[1], r[3], r[5]) for r in rows) == [(topic, "0", "0"), (topic, "1", "0")], listed.stdout
    asked: list[tuple[bytes, int]] = []

    def check(half: HalfMessage) -> str:
        asked.append((half.key, half.times_checked))
        return orders.check(half)

    with producer(cluster, check, group):
        got = read(cluster, topic, 6.0)
    assert got == [b"o-10"], got
    assert {k for k, _ in asked} == {b"o-10", b"o-11"}
    assert all(n == 1 for _, n in asked), "the first check-back of each: none was counted while nobody polled"
    assert (committed.offset, lost.offset) == (0, 1)


def test_unknown_answers_end_in_the_topics_default_action(cluster, tmp_path):
    topic = new_topic(cluster)
    asked = Counter()

    def undecided(half: HalfMessage) -> str:
        asked[half.key] += 1
        return UNKNOWN

    with producer(cluster, undecided, f"orders-{uuid.uuid4().hex[:6]}") as p:
        p.send_half(topic, b"{}", b"o-20", partition=0)
        deadline = time.monotonic() + 20
        while asked[b"o-20"] < 3 and time.monotonic() < deadline:
            time.sleep(0.2)
        got = read(cluster, topic, 4.0)
    assert asked[b"o-20"] == 3  # mafka.txn.check.max.times, then rollback (the default)
    assert got == []


def test_a_leader_killed_between_the_half_message_and_the_commit(cluster, tmp_path):
    topic = new_topic(cluster)
    orders = Orders(tmp_path / "orders.db")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    leader = admin.list_topics(topic, timeout=10).topics[topic].partitions[0].leader
    killed = threading.Event()

    def task(half: HalfMessage) -> None:
        orders.insert("o-30", "desk")
        cluster.kill(leader, signal.SIGKILL)
        killed.set()

    try:
        with producer(cluster, orders.check, f"orders-{uuid.uuid4().hex[:6]}") as p:
            p.send_in_transaction(topic, b"{}", b"o-30", partition=0, local_task=task, timeout=60)
            got = read(cluster, topic, 4.0)
    finally:
        if killed.is_set():
            cluster.restart(leader)
            cluster.wait_serving(leader)
    assert got == [b"o-30"]


def test_the_delayed_messages_page_orders_example_runs_as_written(cluster, tmp_path, monkeypatch):
    readme = (Path(__file__).resolve().parents[2] / "docs" / "delayed-messages.md").read_text()
    section = readme[readme.index("## Local-transaction messages"):]
    code = section[section.index("```python") + len("```python"):section.index("```\n", section.index("```python"))]
    topic = new_topic(cluster)
    code = code.replace("127.0.0.1:9092", cluster.bootstrap).replace('"order-events"', repr(topic))
    monkeypatch.chdir(tmp_path)
    exec(compile(code, "docs/delayed-messages.md (orders example)", "exec"), {})  # noqa: S102 - the docs' own code
    assert read(cluster, topic, 3.0) == [b"o-1"]
    with sqlite3.connect(tmp_path / "orders.db") as db:
        assert db.execute("SELECT item FROM orders WHERE id = 'o-1'").fetchone() == ("book",)


_DOOMED = r"""
import sqlite3, sys, time
from mafka.client import TransactionalMessageProducer
bootstrap, group, topic, db_path = sys.argv[1:5]
p = TransactionalMessageProducer({"bootstrap.servers": bootstrap, "mafka.txn.producer.group": group},
                                 lambda half: "UNKNOWN")
p.send_half(topic, b"{}", b"o-k-before", partition=0)  # killed before its local commit
p.send_half(topic, b"{}", b"o-k-after", partition=0)
with sqlite3.connect(db_path) as db:  # ... and this one after it
    db.execute("INSERT INTO orders VALUES (?, ?)", ("o-k-after", "x"))
print("ready", flush=True)
time.sleep(600)  # SIGKILLed here: neither commit nor rollback is ever sent
"""


def test_a_producer_process_killed_between_its_half_messages_and_their_outcome(cluster, tmp_path):
    topic = new_topic(cluster)
    orders = Orders(tmp_path / "orders.db")
    group = f"orders-{uuid.uuid4().hex[:6]}"
    doomed = subprocess.Popen([sys.executable, "-c", _DOOMED, cluster.bootstrap, group, topic,
                               str(tmp_path / "orders.db")], stdout=subprocess.PIPE, text=True)
    try:
        line = doomed.stdout.readline()
        assert line.startswith("ready"), line
    finally:
        doomed.send_signal(signal.SIGKILL)
        doomed.wait(30)
    with producer(cluster, orders.check, group):
        got = read(cluster, topic, 6.0)
    assert got == [b"o-k-after"]
    assert orders.exists("o-k-after") and not orders.exists("o-k-before")
