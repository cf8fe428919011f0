"""Streaming queries through broker faults, on the durable settings (RF 3, ``min.insync.replicas=2``).

An idempotent producer (acks=all) writes keyed records the whole time, remembering every key the
cluster acknowledged.  Two queries read the topic with a one-second ProcessingTime trigger: one
into Parquet (Spark's file sink), one through the exactly-once sink into an output topic.  While
both run:

1. the leader of the source topic's partition 0 — also the leader of some of the output topic's
   and of the transaction and offset topics' partitions — is SIGKILLed, whatever micro-batch is
   running then, and started again once both queries have committed a batch without it;
2. another broker is restarted (SIGTERM, a controlled shutdown, and a start) while they run.

A query the fault fails (a task that exhausted its client's retries) is started again from its
checkpoint, as whoever runs it would; how many restarts it took is reported, not asserted.  Then the
producer stops, both queries run until they have read every acknowledged record, and the checker
counts every acknowledged key: in the Parquet output exactly once (Spark's file sink is exactly
once across restarts), and in the output topic read ``read_committed`` exactly once.  The negative
control: the same checker reports a key lost and a key twice when the output is made to lose and
repeat one.
"""

from __future__ import annotations

import signal
import threading
import time
import uuid
from collections import Counter

import pytest

from tests.harness.cluster import DURABLE_SETTINGS, ClusterSpec
from tests.harness.spark import local_session
from tests.harness.waits import process_state

pytestmark = pytest.mark.integration

CLUSTER = ClusterSpec(settings=DURABLE_SETTINGS, shared=False)  # kills and restarts brokers

PARTITIONS = 3


@pytest.fixture(scope="module")
def spark():
    yield from local_session("mafka-streaming-fault-tests")


def create(cluster, name: str, partitions: int) -> None:
    from mafka.client import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 3)])[name].result(30)
    admin.close()


def leader_of(cluster, topic: str, partition: int) -> int:
    from mafka.client import AdminClient

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    try:
        return admin.list_topics(topic, timeout=10).topics[topic].partitions[partition].leader
    finally:
        admin.close()


class KeyProducer(threading.Thread):
    """Writes ``k<n>`` keys round-robin over the partitions (idempotent, acks=all) until told to stop; ``acked``
    holds every key the cluster acknowledged (a failed one — its retries out during a fault — is not in it)."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.topic = bootstrap, topic
        self.stop = threading.Event()
        self.acked: set[str] = set()
        self.failed = 0
        self.error: BaseException | None = None

    def _delivered(self, err, msg) -> None:
        if err is None:
            self.acked.add(msg.key().decode())
        else:
            self.failed += 1

    def run(self) -> None:
        from mafka.client import Producer

        try:
            producer = Producer({"bootstrap.servers": self.bootstrap, "enable.idempotence": True, "acks": "all",
                                 "linger.ms": 5, "delivery.timeout.ms": 60_000})
            n = 0
            while not self.stop.is_set():
                for _ in range(50):
                    producer.produce(self.topic, key=f"k{n}".encode(), value=f"v{n}".encode(),
                                     partition=n % PARTITIONS, on_delivery=self._delivered)
                    n += 1
                producer.poll(0)
                self.stop.wait(0.1)
            producer.flush(90)
            producer.close()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc


def missing_and_repeated(acked: set[str], counts: Counter) -> tuple[set[str], dict[str, int]]:
    """The checker: acknowledged keys the output lacks, and keys it holds more than once."""
    return acked - set(counts), {k: n for k, n in counts.items() if n > 1}


class Queries:
    """The two queries (Parquet, and the exactly-once sink), each started again from its checkpoint when it fails."""

    def __init__(self, spark, bootstrap: str, topic: str, out_topic: str, tmp_path) -> None:
        self.spark, self.bootstrap, self.topic, self.out_topic = spark, bootstrap, topic, out_topic
        self.parquet_dir = tmp_path / "parquet"
        self.checkpoints = {"parquet": tmp_path / "ckpt-parquet", "topic": tmp_path / "ckpt-topic"}
        self.running: dict[str, object] = {}
        self.restarts: Counter = Counter()
        self.failures: list[str] = []

    def _source(self):
        return (self.spark.readStream.format("mafka").option("kafka.bootstrap.servers", self.bootstrap)
                .option("subscribe", self.topic).option("startingOffsets", "earliest")
                .option("maxOffsetsPerTrigger", "3000").load())

    def start(self, name: str, trigger: dict) -> None:
        df = self._source().selectExpr("CAST(key AS STRING) AS key", "CAST(value AS STRING) AS value")
        if name == "parquet":
            writer = (df.writeStream.format("parquet").option("path", str(self.parquet_dir)))
        else:
            writer = (df.writeStream.format("mafka").option("kafka.bootstrap.servers", self.bootstrap)
                      .option("topic", self.out_topic).option("exactlyOnce", "true"))
        self.running[name] = (writer.option("checkpointLocation", str(self.checkpoints[name]))
                              .queryName(f"faults-{name}").trigger(**trigger).start())

    def start_all(self) -> None:
        for name in self.checkpoints:
            self.start(name, {"processingTime": "1 second"})

    def tend(self) -> None:
        """Starts again, from its checkpoint, a query that failed."""
        for name, query in list(self.running.items()):
            if not query.isActive:
                self.failures.append(f"{name}: {str(query.exception())[:300]}")
                self.restarts[name] += 1
                assert self.restarts[name] <= 5, f"{name} keeps failing: {self.failures}"
                self.start(name, {"processingTime": "1 second"})

    def committed_batches(self, name: str) -> int:
        """Micro-batches of *name* committed (Spark's commit log in its checkpoint)."""
        commits = self.checkpoints[name] / "commits"
        return len([f for f in commits.iterdir() if f.name.isdigit()]) if commits.exists() else 0

    def wait_batches(self, more: int, timeout: float = 120.0) -> None:
        """Until each query committed *more* micro-batches than now, tending failed ones meanwhile."""
        target = {name: self.committed_batches(name) + more for name in self.checkpoints}
        deadline = time.monotonic() + timeout
        while any(self.committed_batches(n) < t for n, t in target.items()):
            assert time.monotonic() < deadline, f"no progress in {timeout} s: {self.failures}"
            self.tend()
            time.sleep(0.5)

    def finish(self) -> None:
        """Stops the running queries and runs each once more with AvailableNow, to the end of the log."""
        for query in self.running.values():
            query.stop()
        for name in self.checkpoints:
            for _ in range(3):
                self.start(name, {"availableNow": True})
                query = self.running[name]
                query.awaitTermination(240)
                assert not query.isActive, f"{name}: the AvailableNow run did not end in 240 s"
                if query.exception() is None:
                    break
                self.failures.append(f"{name} (AvailableNow): {str(query.exception())[:300]}")
            else:
                raise AssertionError(f"{name}: the last run failed three times: {self.failures}")

    def stop(self) -> None:
        for query in self.running.values():
            if query.isActive:
                query.stop()


def test_no_acknowledged_record_is_lost_or_repeated_through_a_leader_kill_and_a_broker_restart(
        cluster, spark, tmp_path):
    from mafka.client import Consumer, TopicPartition

    topic, out_topic = f"faults-{uuid.uuid4().hex[:8]}", f"faults-out-{uuid.uuid4().hex[:8]}"
    create(cluster, topic, PARTITIONS)
    create(cluster, out_topic, PARTITIONS)
    producer = KeyProducer(cluster.bootstrap, topic)
    producer.start()
    queries = Queries(spark, cluster.bootstrap, topic, out_topic, tmp_path)
    try:
        queries.start_all()
        queries.wait_batches(2)

        victim = leader_of(cluster, topic, 0)
        cluster.kill(victim)
        queries.wait_batches(2)
        cluster.restart(victim)
        cluster.wait_serving(victim)
        queries.wait_batches(2)

        other = next(b["id"] for b in cluster.info["brokers"] if b["id"] != victim)
        cluster.kill(other, signal.SIGTERM)
        pid = cluster.broker(other)["pid"]
        deadline = time.monotonic() + 60
        while process_state(pid) not in (None, "Z", "X") and time.monotonic() < deadline:
            queries.tend()
            time.sleep(0.2)
        assert process_state(pid) in (None, "Z", "X"), f"broker {other} did not stop within 60 s of SIGTERM"
        cluster.restart(other)
        cluster.wait_serving(other)
        queries.wait_batches(2)
    finally:
        producer.stop.set()
        producer.join(120)
    assert not producer.is_alive() and producer.error is None, producer.error
    queries.finish()
    queries.stop()

    acked = producer.acked
    assert len(acked) > 1000, f"only {len(acked)} records acknowledged"
    parquet = Counter(r.key for r in spark.read.parquet(str(queries.parquet_dir)).select("key").collect())
    lost, repeated = missing_and_repeated(acked, parquet)
    assert not lost, f"{len(lost)} acknowledged records missing from Parquet, e.g. {sorted(lost)[:5]}"
    assert not repeated, f"records twice in Parquet: {dict(list(repeated.items())[:5])}"

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"check-{uuid.uuid4().hex[:6]}",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    consumer.assign([TopicPartition(out_topic, p, 0) for p in range(PARTITIONS)])
    out: Counter = Counter()
    quiet_since = time.monotonic()
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and (len(out) < len(acked) or time.monotonic() - quiet_since < 2.0):
        got = [m for m in consumer.consume(1000, timeout=0.5) if m.error() is None]
        if got:
            quiet_since = time.monotonic()
        out.update(m.key().decode() for m in got)
    consumer.close()
    lost, repeated = missing_and_repeated(acked, out)
    assert not lost, f"{len(lost)} acknowledged records missing from the output topic, e.g. {sorted(lost)[:5]}"
    assert not repeated, f"records twice in the output topic: {dict(list(repeated.items())[:5])}"
    print(f"acknowledged {len(acked)}, failed deliveries {producer.failed}, query restarts {dict(queries.restarts)}, "
          f"failures: {queries.failures}")


def test_negative_control_the_checker_reports_a_lost_and_a_repeated_key():
    acked = {"k0", "k1", "k2"}
    assert missing_and_repeated(acked, Counter({"k0": 1, "k1": 1, "k2": 1})) == (set(), {})
    assert missing_and_repeated(acked, Counter({"k0": 1, "k2": 2})) == ({"k1"}, {"k2": 2})
