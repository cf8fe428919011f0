"""``mafka spark-etl --streaming`` — the ETL job as streaming queries — against a real 3-broker cluster.

A producer writes JSON events (timestamps in order from a fixed day on, 600 an hour, ten users,
whole amounts) while the job runs as its own driver process (``local[2]``) with the exactly-once
output topic.  The driver is SIGKILLed while the producer writes, as soon as both queries have
written a batch (whatever either is doing then), and the producer stops.  A closing event (the
watermark's delay after the end of the last hour written) moves the watermark past every hour
written, and the job restarted from its checkpoint with ``--available-now`` finishes.  Then:

* the Parquet output, read through Spark's file-sink log, equals a batch recomputation of every
  event the producer wrote (``spark.read.format("mafka")``, the same aggregation): each
  (user, hour) once with the same ``events`` and ``amount`` — nothing lost and nothing counted
  twice across the kill;
* the output topic read ``read_committed`` holds each (user, hour) once, with the same figures.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest

from tests.harness.cluster import ClusterSpec
from tests.harness.spark import TEST_JVM_OPTIONS, local_session

pytestmark = pytest.mark.integration

CLUSTER = ClusterSpec()  # shared: uuid topic names, every broker stays up

USERS = 10
PARTITIONS = 3
BASE_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z
HOUR_MS = 3_600_000
STEP_MS = 6_000  # event i is at BASE_MS + i * STEP_MS: 600 an hour
HOUR_FORMAT = "yyyy-MM-dd'T'HH"  # as the output topic's keys


@pytest.fixture(scope="module")
def spark():
    yield from local_session("mafka-streaming-etl-tests")


def create(cluster, name: str, partitions: int) -> None:
    from mafka.client import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 3)])[name].result(30)
    admin.close()


def event(i: int) -> tuple[bytes, int]:
    """Event *i*: its JSON value and timestamp (in order; every fifth user spends nothing)."""
    user = f"u{i % USERS}"
    value = {"user": user, "amount": float(i % 7)} if i % USERS % 5 else {"user": user}
    return json.dumps(value).encode(), BASE_MS + i * STEP_MS


class EventProducer(threading.Thread):
    """Writes events in order, 100 (and one that does not parse) at a time round-robin, acks=all, until told
    to stop."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        super().__init__(daemon=True)
        self.bootstrap, self.topic = bootstrap, topic
        self.stop = threading.Event()
        self.written = 0
        self.error: BaseException | None = None

    def run(self) -> None:
        from mafka.client import Producer

        try:
            producer = Producer({"bootstrap.servers": self.bootstrap, "acks": "all", "linger.ms": 5})
            while not self.stop.is_set():
                for i in range(self.written, self.written + 100):
                    value, ts = event(i)
                    # Round-robin: every partition holds the same stretch of event time. (A partition
                    # far behind another would have its records behind the watermark: late, dropped.)
                    producer.produce(self.topic, value=value, timestamp=ts, partition=i % PARTITIONS)
                producer.produce(self.topic, value=b"not json", timestamp=ts, partition=0)
                assert producer.flush(60) == 0
                self.written += 100
                self.stop.wait(0.3)
            producer.close()
        except BaseException as exc:  # noqa: BLE001 - reported by the test
            self.error = exc


def close_hours(bootstrap: str, topic: str, last_ms: int) -> None:
    """The closing event: a minute more than the watermark's delay (an hour) after the end of the hour of
    *last_ms*, so the watermark passes the end of every hour written."""
    from mafka.client import Producer

    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    hour_end = last_ms - last_ms % HOUR_MS + HOUR_MS
    producer.produce(topic, value=json.dumps({"user": "closing", "amount": 0.0}).encode(),
                     timestamp=hour_end + HOUR_MS + 60_000)
    assert producer.flush(30) == 0
    producer.close()


class Driver:
    """One ``mafka spark-etl --streaming`` process; its stdout (a JSON line per micro-batch) in a file."""

    def __init__(self, args: list[str], log: Path) -> None:
        env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1",
                   PYSPARK_SUBMIT_ARGS=f'--driver-java-options "{TEST_JVM_OPTIONS}" '
                                       f'--conf spark.executor.extraJavaOptions="{TEST_JVM_OPTIONS}" pyspark-shell')
        self.log = log
        self.out = open(log, "w")  # noqa: SIM115 - closed by stop()/wait()
        self.proc = subprocess.Popen([sys.executable, "-m", "mafka.cli.main", "spark-etl", *args], stdout=self.out,
                                     stderr=subprocess.STDOUT, env=env, start_new_session=True)

    def batches(self) -> list[dict]:
        # A line may follow the end of another process's output (Spark's, on the same file) on its line.
        lines = [line[line.find('{"batch"'):] for line in self.log.read_text().splitlines() if '{"batch"' in line]
        return [json.loads(line) for line in lines]

    def wait_for_rows(self, query: str, timeout: float = 180.0) -> None:
        """Until a batch of *query* that read rows was printed (so it reached the sink's commit)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if any(b["query"] == query and (b["input_rows"] or 0) > 0 for b in self.batches()):
                return
            assert self.proc.poll() is None, f"the driver exited: {self.log.read_text()[-3000:]}"
            time.sleep(0.2)
        raise AssertionError(f"no batch of {query} with rows within {timeout} s: {self.log.read_text()[-3000:]}")

    def kill(self) -> None:
        os.killpg(self.proc.pid, signal.SIGKILL)
        self.proc.wait(30)
        self.out.close()

    def wait(self, timeout: float = 300.0) -> int:
        try:
            return self.proc.wait(timeout)
        finally:
            if self.proc.poll() is None:
                os.killpg(self.proc.pid, signal.SIGKILL)
            self.out.close()


def batch_recomputation(spark, bootstrap: str, topic: str) -> dict[tuple[str, str], tuple[int, float]]:
    """The batch job's aggregation of every event in *topic* before the closing hour: (user, hour) → figures."""
    from pyspark.sql import functions as F

    from mafka.spark.etl import parse_events

    df = (spark.read.format("mafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
          .load())
    rows = (parse_events(df).where(F.col("e.user").isNotNull())
            .groupBy(F.col("e.user").alias("user"), F.date_trunc("hour", "timestamp").alias("hour"))
            .agg(F.count(F.lit(1)).alias("events"), F.sum(F.coalesce(F.col("e.amount"), F.lit(0.0))).alias("amount"))
            .select("user", F.date_format("hour", HOUR_FORMAT).alias("hour"), "events", "amount")
            .collect())
    return {(r.user, r.hour): (r.events, r.amount) for r in rows if r.user != "closing"}


def test_the_streaming_etl_survives_a_driver_kill_and_matches_a_batch_recomputation(cluster, spark, tmp_path):
    from mafka.client import Consumer, TopicPartition

    topic, out_topic = f"etl-{uuid.uuid4().hex[:8]}", f"etl-out-{uuid.uuid4().hex[:8]}"
    create(cluster, topic, PARTITIONS)
    create(cluster, out_topic, 1)
    output, checkpoint = tmp_path / "out", tmp_path / "ckpt"
    args = ["--bootstrap-server", cluster.bootstrap, "--topic", topic, "--output", str(output),
            "--output-topic", out_topic, "--streaming", "--checkpoint", str(checkpoint), "--watermark", "1 hour"]
    producer = EventProducer(cluster.bootstrap, topic)
    producer.start()

    # The kill, while the producer writes: as soon as both queries have written a batch.
    driver = Driver([*args, "--trigger-interval", "1 second"], tmp_path / "driver-killed.log")
    driver.wait_for_rows("parquet")
    driver.wait_for_rows("topic")
    driver.kill()
    producer.stop.set()
    producer.join(120)
    assert not producer.is_alive() and producer.error is None, producer.error
    close_hours(cluster.bootstrap, topic, event(producer.written - 1)[1])

    last = Driver([*args, "--available-now"], tmp_path / "driver-last.log")
    assert last.wait() == 0, last.log.read_text()[-3000:]

    expected = batch_recomputation(spark, cluster.bootstrap, topic)
    assert sum(events for events, _ in expected.values()) == producer.written
    assert len({hour for _, hour in expected}) >= 2

    from pyspark.sql import functions as F

    written = (spark.read.parquet(str(output / "stream"))
               .select("user", F.date_format("hour", HOUR_FORMAT).alias("hour"), "events", "amount").collect())
    got = Counter((r.user, r.hour) for r in written)
    assert [k for k, n in got.items() if n > 1] == [], "an hour written twice to Parquet"
    assert {(r.user, r.hour): (r.events, r.amount) for r in written} == expected

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"check-{uuid.uuid4().hex[:6]}",
                         "isolation.level": "read_committed", "enable.auto.commit": False})
    consumer.assign([TopicPartition(out_topic, 0, 0)])
    records: list[tuple[str, dict]] = []
    deadline = time.monotonic() + 60
    while len(records) < len(expected) and time.monotonic() < deadline:
        for m in consumer.consume(500, timeout=0.5):
            if m.error() is None:
                records.append((m.key().decode(), json.loads(m.value())))
    time.sleep(1.0)  # anything more (a duplicate) would follow at once
    for m in consumer.consume(500, timeout=0.5):
        if m.error() is None:
            records.append((m.key().decode(), json.loads(m.value())))
    consumer.close()
    keys = Counter(key for key, _ in records)
    assert [k for k, n in keys.items() if n > 1] == [], "an hour written twice to the output topic"
    assert {tuple(key.split("|")): (v["events"], v["amount"]) for key, v in records} == expected
