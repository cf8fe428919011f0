"""mafka.client under broker faults, on a real 3-broker cluster (durable settings).

1. An idempotent acks=all ``mafka.client.Producer`` (the chaos harness's
   continuous producer, with mafka's class in place of confluent-kafka's)
   keeps writing while a partition leader is SIGKILLed (and restarted) and
   another leader is frozen past its ZooKeeper session: the delivery checker
   finds no acknowledged record lost and none duplicated, and the replicas
   end byte-identical.
2. Per-broker prefetch: a consumer assigned partitions on all three brokers
   keeps receiving the records of the two healthy brokers at full rate while
   the third is frozen (SIGSTOP), measured beside kafka-python's consumer in
   the same run (both figures printed; run with ``-s``).  The assertion is on
   mafka.client only: every record written to the healthy brokers' partitions
   during the freeze arrives while the broker is still frozen.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict

import pytest

from .chaos import ContinuousProducer, create_topic, healed
from .cluster import LocalCluster
from .test_replication import SAFE, SESSION_TIMEOUT_S, SETTINGS, final_check, kill_leader, running

pytestmark = pytest.mark.integration


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    c = LocalCluster(tmp_path_factory.mktemp("client-failover") / "cluster", brokers=3, settings=SETTINGS)
    c.start()
    yield c
    c.stop()


@pytest.fixture
def chaos(cluster):
    with healed(cluster) as ch:
        yield ch


def test_idempotent_mafka_producer_loses_and_duplicates_nothing_across_kill_and_freeze(cluster, chaos):
    from mafka.client import Producer

    topic = create_topic(cluster, partitions=3, rf=3, configs=SAFE, chaos=chaos)
    producer = ContinuousProducer(cluster.bootstrap, topic, partitions=3, rate=300, factory=Producer)
    with running(producer, chaos):
        producer.wait_acks(300, 30)
        kill_leader(chaos, producer, topic, 0)
        frozen = chaos.leader(topic, 1)
        paused = chaos.pause(frozen, seconds=SESSION_TIMEOUT_S + 4)
        chaos.wait_leader(topic, 1, timeout=SESSION_TIMEOUT_S + 20, not_in=[frozen])
        producer.wait_acks(1, 30, after=paused + 0.5, partition=1)
        chaos.wait_until(lambda: frozen not in chaos.paused, 30, "the frozen leader resumed")
        chaos.wait_registered(frozen)
        producer.wait_acks(300, 30, after=time.monotonic())
    report = final_check(cluster, chaos, topic, 3, producer.attempts, producer)
    assert report.acked > 1000, report.summary()
    assert not report.duplicates, report.summary()
    print(f"mafka.client idempotent producer under SIGKILL + freeze: {report.summary()}")


class _Counter:
    """Per-partition receipt counts and times of one consumer running in a thread."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.count: dict[int, int] = defaultdict(int)
        self.last_at: dict[int, float] = {}
        self.stop = threading.Event()

    def add(self, partition: int, n: int) -> None:
        with self.lock:
            self.count[partition] += n
            self.last_at[partition] = time.monotonic()

    def total(self, partitions) -> int:
        with self.lock:
            return sum(self.count[p] for p in partitions)


def _mafka_consumer(bootstrap: str, topic: str, partitions: int, counter: _Counter) -> None:
    from mafka.client import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "prefetch-mafka", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 100})
    c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    try:
        while not counter.stop.is_set():
            for m in c.consume(1000, 0.1):
                if m.error() is None:
                    counter.add(m.partition(), 1)
    finally:
        c.close()


def _kafka_python_consumer(bootstrap: str, topic: str, partitions: int, counter: _Counter) -> None:
    import kafka

    c = kafka.KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                            fetch_max_wait_ms=100)
    c.assign([kafka.TopicPartition(topic, p) for p in range(partitions)])
    c.seek_to_beginning()
    try:
        while not counter.stop.is_set():
            for tp, msgs in c.poll(timeout_ms=100).items():
                counter.add(tp.partition, len(msgs))
    finally:
        c.close()


def test_a_frozen_broker_does_not_stall_the_other_brokers_partitions(cluster, chaos):
    from mafka.client import Producer

    partitions = 6
    topic = create_topic(cluster, partitions=partitions, rf=1, chaos=chaos)
    leaders = {p: chaos.leader(topic, p) for p in range(partitions)}
    victim = leaders[0]
    healthy = [p for p in range(partitions) if leaders[p] != victim]
    assert healthy and len(healthy) < partitions

    # One producer, connected before the freeze: a client that first meets the cluster while a
    # broker is frozen may pick it for its first metadata request and wait out
    # socket.connection.setup.timeout.ms — not what this test is about.
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "acks": 1, "linger.ms": 5})

    def produce(parts, n, tag):
        for i in range(n):
            producer.produce(topic, value=f"{tag}-{i}".encode() + b"x" * 90, partition=parts[i % len(parts)])
            if i % 10000 == 0:
                producer.poll(0)
        assert producer.flush(60) == 0

    counters = {"mafka.client": _Counter(), "kafka-python": _Counter()}
    threads = [
        threading.Thread(target=_mafka_consumer, args=(cluster.bootstrap, topic, partitions, counters["mafka.client"]),
                         daemon=True),
        threading.Thread(target=_kafka_python_consumer,
                         args=(cluster.bootstrap, topic, partitions, counters["kafka-python"]), daemon=True),
    ]
    for t in threads:
        t.start()
    try:
        warm = 6000
        produce(list(range(partitions)), warm, "warm")
        for name, counter in counters.items():
            chaos.wait_until(lambda c=counter: c.total(range(partitions)) >= warm, 60, f"{name} read the warm-up")
        frozen_for = SESSION_TIMEOUT_S - 1.0  # thawed before its session expires: no leader moves
        paused = chaos.pause(victim, seconds=frozen_for)
        burst = 30000
        produce(healthy, burst, "burst")
        produced = time.monotonic()
        results = {}
        for name, counter in counters.items():
            target = warm * len(healthy) // partitions + burst
            while counter.total(healthy) < target and time.monotonic() < paused + frozen_for:
                time.sleep(0.02)
            got = counter.total(healthy)
            done_at = max(counter.last_at[p] for p in healthy)
            results[name] = (got - warm * len(healthy) // partitions, done_at - paused, got >= target)
        thawed_at = paused + frozen_for
    finally:
        for counter in counters.values():
            counter.stop.set()
        for t in threads:
            t.join(30)
        producer.close()
    for name, (got, seconds, complete) in results.items():
        rate = got / seconds if seconds > 0 else 0
        print(f"broker {victim} frozen: {name} read {got} of {burst} records of the healthy brokers' partitions "
              f"{'in' if complete else 'by'} {seconds:.2f} s after SIGSTOP ({rate:,.0f} records/s; "
              f"producing them took {produced - paused:.2f} s)")
    got, seconds, complete = results["mafka.client"]
    assert complete, f"mafka.client read {got} of {burst} while broker {victim} was frozen"
    assert seconds < thawed_at - paused
