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
3. KIP-320: a consumer that has read records only an old leader held
   notices, after an unclean election, that the new leader's log diverged
   below its position, and goes back to the divergence point, so it reads
   every record written to the new leader.  The negative control is the same
   consumer with offset validation switched off: it skips them.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict

import pytest

from tests.harness.chaos import (
    ContinuousProducer,
    create_topic,
    explained,
    final_check,
    healed,
    kill_leader,
    running,
)
from tests.harness.cluster import ClusterSpec

from .test_replication import SAFE, SESSION_TIMEOUT_S, SETTINGS

pytestmark = pytest.mark.integration


CLUSTER = ClusterSpec(settings=SETTINGS, shared=False)  # kills, freezes and restarts brokers


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


def test_a_consumer_goes_back_to_the_divergence_point_after_an_unclean_election(cluster, chaos):
    from mafka.client import Consumer, Producer, TopicPartition

    topic = create_topic(cluster, partitions=1, rf=3, chaos=chaos,
                         configs={"unclean.leader.election.enable": "true", "min.insync.replicas": "1"})
    leader = chaos.leader(topic, 0)
    followers = [r for r in chaos.replicas(topic, 0) if r != leader]

    def produce(tag: str, n: int) -> None:
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 1})
        try:
            for i in range(n):
                producer.produce(topic, value=f"{tag}-{i}".encode(), partition=0)
            assert producer.flush(60) == 0
        finally:
            producer.close()

    def consumer(validating: bool) -> Consumer:
        c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"kip320-{validating}",
                      "enable.auto.commit": False, "auto.offset.reset": "earliest", "fetch.wait.max.ms": 100})
        if not validating:
            c._fetcher._unconfirmed = lambda fetchable: []  # noqa: SLF001 — the negative control
        c.assign([TopicPartition(topic, 0, 0)])
        return c

    def read(c: Consumer, until, timeout: float = 60.0) -> list[tuple[int, bytes]]:
        got: list[tuple[int, bytes]] = []
        deadline = time.monotonic() + timeout
        while not until(got) and time.monotonic() < deadline:
            for m in c.consume(100, 0.2):
                assert m.error() is None, m.error()
                got.append((m.offset(), m.value()))
        return got

    produce("both", 50)  # on all three replicas
    for f in followers:
        chaos.kill(f)
    with explained(chaos, topic):
        chaos.wait_isr(topic, 0, [leader], timeout=SESSION_TIMEOUT_S + 20)
    produce("alone", 30)  # offsets 50-79, on the leader only
    consumers = {True: consumer(True), False: consumer(False)}
    try:
        for c in consumers.values():
            assert len(read(c, lambda got: len(got) >= 80)) == 80
            c.pause([TopicPartition(topic, 0)])  # hold the position at 80 through the failover
        chaos.kill(leader)
        with explained(chaos, topic):
            chaos.wait_dead(leader)
            chaos.wait_unregistered(leader)
            for f in followers:
                chaos.restart(f)
            new = chaos.wait_leader(topic, 0, timeout=60, not_in=[leader])
        produce("after", 40)  # offsets 50-89 on the unclean leader: 50-79 differ from what was read
        after = {f"after-{i}".encode() for i in range(40)}
        seen = {}
        for validating, c in consumers.items():
            c.resume([TopicPartition(topic, 0)])
            got = read(c, lambda got: after <= {v for _, v in got}, timeout=30 if validating else 10)
            seen[validating] = got
    finally:
        for c in consumers.values():
            c.close()
        chaos.restart(leader)  # it truncates to the new leader's log
    print(f"unclean election of broker {new}: the validating consumer read {len(seen[True])} records after it "
          f"(offsets {seen[True][0][0] if seen[True] else None}-{seen[True][-1][0] if seen[True] else None}); "
          f"without validation {len(seen[False])} "
          f"(offsets {seen[False][0][0] if seen[False] else None}-{seen[False][-1][0] if seen[False] else None})")
    assert [o for o, _ in seen[True]] == list(range(50, 90)), seen[True]
    assert {v for _, v in seen[True]} == after
    # Negative control: without KIP-320 the consumer resumes at 80 and never sees after-0..after-29.
    assert not after <= {v for _, v in seen[False]}, seen[False]
