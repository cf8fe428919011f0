"""Delayed messages under faults (``make chaos``): none lost, none delivered twice, none early.

An idempotent acks=all producer writes 100 values/s, each delayed 1–8 s
(:func:`~tests.integration.delayed_chaos.delay_of`), to an RF 3 topic
(``min.insync.replicas=2``, unclean election off) for 90 s while, one at a
time, a leader is SIGKILLed and restarted, a leader is frozen past the
ZooKeeper session (a zombie that may try to deliver) and resumed, the
controller is killed, and a broker is stopped gracefully.  A tailing
consumer records when each value first becomes visible.  After healing and
waiting out the longest delay, every partition is read from the start and
:func:`~tests.integration.delayed_chaos.check_delayed` must find nothing
lost, duplicated, early or misdated; the lateness is printed.  The negative
control writes five delivered values again, undelayed: the same checker must
report exactly those five as duplicated.
"""

from __future__ import annotations

import random
import threading
import time
import uuid

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition

from tests.harness.chaos import Chaos, ContinuousProducer, create_topic
from tests.harness.cluster import DURABLE_SETTINGS, ClusterSpec

from .delayed_chaos import Delivered, check_delayed, delay_of

pytestmark = [pytest.mark.integration, pytest.mark.chaos]

PARTITIONS = 3


CLUSTER = ClusterSpec(settings=DURABLE_SETTINGS, shared=False)  # kills and freezes leaders


def read_all(bootstrap: str, topic: str, timeout: float = 120.0) -> list[Delivered]:
    """Every record of ``topic`` from offset 0 to the high watermarks, with timestamp and delayed offset."""
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"drain-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False, "enable.partition.eof": True, "fetch.wait.max.ms": 100})
    out: list[Delivered] = []
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        eof: set[int] = set()
        deadline = time.monotonic() + timeout
        while len(eof) < PARTITIONS and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error() is not None:
                if m.error().code() == -191:  # _PARTITION_EOF
                    eof.add(m.partition())
                continue
            eof.discard(m.partition())
            headers = dict(m.headers() or [])
            raw = headers.get("mafka.delayed.offset")
            out.append(Delivered(m.value(), m.partition(), m.offset(), m.timestamp()[1],
                                 None if raw is None else int(raw)))
    finally:
        c.close()
    return out


def test_delayed_messages_survive_kills_and_freezes_exactly_once_and_never_early(cluster):
    chaos = Chaos(cluster)
    topic = create_topic(cluster, PARTITIONS, 3, {"min.insync.replicas": "2"}, name=f"dchaos-{uuid.uuid4().hex[:6]}")
    wall_minus_mono = time.time() - time.monotonic()
    first_seen: dict[bytes, float] = {}
    stop = threading.Event()
    tail = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"tail-{uuid.uuid4().hex[:6]}",
                     "enable.auto.commit": False, "fetch.wait.max.ms": 50})
    tail.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])

    def follow() -> None:
        while not stop.is_set():
            m = tail.poll(0.05)
            if m is not None and m.error() is None:
                first_seen.setdefault(m.value(), time.time() * 1000)

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    producer = ContinuousProducer(cluster.bootstrap, topic, partitions=PARTITIONS, rate=100.0, tag="dl",
                                  headers_for=lambda n: [("mafka.delay.ms", str(delay_of(n)).encode())]).start()
    rng = random.Random(17)
    faults = []
    try:
        producer.wait_acks(100, 60)
        for fault in ("kill-leader", "pause-leader", "kill-controller", "terminate", "kill-leader", "pause-leader"):
            time.sleep(rng.uniform(4.0, 8.0))
            if fault == "kill-controller":
                victim = chaos.controller()
            elif fault == "terminate":
                victim = rng.choice(chaos.broker_ids)
            else:
                victim = chaos.leader(topic, rng.randrange(PARTITIONS))
            faults.append(f"{fault} {victim}")
            if fault == "pause-leader":
                chaos.pause(victim, seconds=9.0)  # past the 6 s session: a zombie leader
                time.sleep(9.5)
            elif fault == "terminate":
                chaos.terminate(victim)
                chaos.wait_dead(victim, timeout=60)
                chaos.restart(victim)
            else:
                chaos.kill_and_restart(victim, down_for=rng.uniform(2.0, 8.0))
            chaos.heal()
            chaos.wait_full_isr(topic, range(PARTITIONS), timeout=90)
    finally:
        producer.stop()
        chaos.heal()
    time.sleep(8.0 + 6.0)  # the longest delay, and a leader election, after the last send
    stop.set()
    reader.join(10)
    tail.close()
    delays = {a.value: delay_of(int(a.value.split(b"-")[1])) for a in producer.attempts}
    got = read_all(cluster.bootstrap, topic)
    report = check_delayed(producer.attempts, delays, got, first_seen, wall_minus_mono)
    print(f"\nfaults: {', '.join(faults)}\n{report.summary()}")
    assert report.acked >= 5000, report.summary()
    assert report.ok, report.summary()

    # The negative control: five delivered values written again, undelayed, are five duplicates.
    again = [d.value for d in got[:5]]
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all"})
    for v in again:
        p.produce(topic, v, partition=0)
    assert p.flush(30) == 0
    control = check_delayed(producer.attempts, delays, read_all(cluster.bootstrap, topic), first_seen,
                            wall_minus_mono)
    assert sorted(control.duplicated) == sorted(again), control.summary()
    chaos.close()
