"""Local-transaction messages under faults (``make chaos``): the database and the topic agree.

Four producer threads of one producer group run an orders service for 60 s
(SQLite rows + ``OrderCreated`` messages, ``mafka.txn.check.interval.ms=1500``):
4 in 5 local tasks commit, 1 in 10 fails (no row, rolled back), and 1 in 10
"crashes" — a half message left unresolved, half of them after the local
commit — while a partition leader is SIGKILLed and restarted, a leader is
frozen past the ZooKeeper session, and the controller is killed.  After
healing, the check-backs settle everything; then every committed order must
appear exactly once on the topic, and nothing else (:func:`check_local_txn`).
The negative control publishes one delivered order id again: the same checker
must report it duplicated.
"""

from __future__ import annotations

import random
import sqlite3
import threading
import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from mafka.client import TransactionalMessageProducer
from mafka.client.kafka_error import KafkaException
from mafka.client.local_transactions import COMMIT, ROLLBACK, UNKNOWN, HalfMessage
from tests.harness.chaos import Chaos, create_topic
from tests.harness.cluster import DURABLE_SETTINGS, ClusterSpec

from .local_txn_chaos import check_local_txn

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

PARTITIONS = 3


CLUSTER = ClusterSpec(settings=DURABLE_SETTINGS, shared=False)  # kills and freezes leaders


class Db:
    def __init__(self, path: Path) -> None:
        self.path = path
        self.lock = threading.Lock()
        #: orders whose service call is under way: their local step may still run
        self.in_flight: set[str] = set()
        with sqlite3.connect(path) as db:
            db.execute("CREATE TABLE orders (id TEXT PRIMARY KEY)")

    def insert(self, order_id: str) -> None:
        with self.lock, sqlite3.connect(self.path) as db:
            db.execute("INSERT INTO orders VALUES (?)", (order_id,))

    def ids(self) -> set[str]:
        with self.lock, sqlite3.connect(self.path) as db:
            return {r[0] for r in db.execute("SELECT id FROM orders")}

    def check(self, half: HalfMessage) -> str:
        """The check-back: UNKNOWN while the order's call is under way.  A check can come before the
        local step has run: the half message's acknowledgement lost with a killed leader reaches the
        producer seconds later, by its retry, and a check-back answered ROLLBACK meanwhile (by any
        producer of the group) rolled back an order whose step then committed (seen: 3 orders)."""
        order = half.key.decode()
        with self.lock:
            if order in self.in_flight:
                return UNKNOWN
        # Not under way (read first): the call has ended and the database holds its final answer.
        return COMMIT if order in self.ids() else ROLLBACK


def read_keys(bootstrap: str, topic: str) -> list[str]:
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"r-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False, "enable.partition.eof": True})
    keys: list[str] = []
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        eof: set[int] = set()
        deadline = time.monotonic() + 120
        while len(eof) < PARTITIONS and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error() is not None:
                if m.error().code() == -191:
                    eof.add(m.partition())
                continue
            eof.discard(m.partition())
            keys.append(m.key().decode())
    finally:
        c.close()
    return keys


def test_orders_and_their_messages_agree_after_kills_and_freezes(cluster, tmp_path):
    chaos = Chaos(cluster)
    topic = create_topic(cluster, PARTITIONS, 3, {"min.insync.replicas": "2", "mafka.txn.check.interval.ms": "1500",
                                                  "mafka.txn.check.max.times": "1000"},
                         name=f"orders-{uuid.uuid4().hex[:6]}")
    db = Db(tmp_path / "orders.db")
    group = f"orders-{uuid.uuid4().hex[:6]}"
    stop = threading.Event()
    figures = {"commit": 0, "fail": 0, "crash": 0, "unconfirmed": 0, "half-failed": 0}
    lock = threading.Lock()

    def count(what: str) -> None:
        with lock:
            figures[what] += 1

    def service(n: int) -> None:
        rng = random.Random(n)
        p = TransactionalMessageProducer({"bootstrap.servers": cluster.bootstrap, "mafka.txn.producer.group": group,
                                          "mafka.txn.check.poll.ms": 300, "linger.ms": 1,
                                          "message.timeout.ms": 20000}, db.check)
        try:
            i = 0
            while not stop.is_set():
                order = f"o-{n}-{i}"
                i += 1
                with db.lock:
                    db.in_flight.add(order)
                roll = rng.random()
                try:
                    if roll < 0.1:  # a crash between the half message and its resolution
                        p.send_half(topic, b"{}", order.encode(), timeout=20)
                        if rng.random() < 0.5:
                            db.insert(order)
                        count("crash")
                    elif roll < 0.2:
                        with pytest.raises(RuntimeError):
                            p.send_in_transaction(topic, b"{}", order.encode(), timeout=20,
                                                  local_task=lambda h: (_ for _ in ()).throw(RuntimeError("no")))
                        count("fail")
                    else:
                        p.send_in_transaction(topic, b"{}", order.encode(), timeout=20,
                                              local_task=lambda h, o=order: db.insert(o))
                        count("commit")
                except KafkaException:
                    # The half message unacknowledged (the task never ran), or the commit not confirmed
                    # (the task ran; the check-back settles it).
                    count("unconfirmed" if order in db.ids() else "half-failed")
                finally:
                    with db.lock:
                        db.in_flight.discard(order)
        finally:
            p.close()

    threads = [threading.Thread(target=service, args=(n,), daemon=True) for n in range(4)]
    for t in threads:
        t.start()
    rng = random.Random(5)
    faults = []
    try:
        for fault in ("kill-leader", "pause-leader", "kill-controller", "kill-leader"):
            time.sleep(rng.uniform(5.0, 9.0))
            victim = chaos.controller() if fault == "kill-controller" else chaos.leader(topic, rng.randrange(PARTITIONS))
            faults.append(f"{fault} {victim}")
            if fault == "pause-leader":
                chaos.pause(victim, seconds=9.0)
                time.sleep(9.5)
            else:
                chaos.kill_and_restart(victim, down_for=rng.uniform(2.0, 6.0))
            chaos.heal()
            chaos.wait_full_isr(topic, range(PARTITIONS), timeout=90)
        time.sleep(5)
    finally:
        stop.set()
        for t in threads:
            t.join(60)
        chaos.heal()
    # Check-backs settle the crashed ones: a producer of the group must be alive to answer.
    settler = TransactionalMessageProducer({"bootstrap.servers": cluster.bootstrap, "mafka.txn.producer.group": group,
                                            "mafka.txn.check.poll.ms": 200}, db.check)
    try:
        committed = db.ids()
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            report = check_local_txn(committed, read_keys(cluster.bootstrap, topic))
            if not report.lost:
                break
            time.sleep(2)
        time.sleep(4)  # a rolled-back or late commit would show as a phantom or a duplicate now
        report = check_local_txn(committed, read_keys(cluster.bootstrap, topic))
    finally:
        settler.close()
    print(f"\nfaults: {', '.join(faults)}; {figures}\n{report.summary()}")
    assert figures["commit"] >= 50 and figures["crash"] >= 5, figures
    assert report.ok, report.summary()

    # The negative control: one delivered order published again is one duplicate.
    again = sorted(committed)[0]
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    p.produce(topic, b"{}", again.encode(), partition=0)
    assert p.flush(30) == 0
    assert check_local_txn(committed, read_keys(cluster.bootstrap, topic)).duplicated == [again]
    chaos.close()
