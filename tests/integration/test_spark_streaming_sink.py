"""``writeStream.format("mafka")`` on real Spark (``local[2]``) against a real 3-broker cluster.

One SparkSession for the module.  Each query copies a source topic to an
output topic (source → sink, ``Trigger.AvailableNow``, several micro-batches);
a checker reads the output with the batch source under
``kafka.isolation.level=read_committed`` and counts every key.  Checks: the
default (at-least-once) sink writes every row; the exactly-once sink holds
each row exactly once after two injected failures — a task that raises on its
first attempt (the batch's other tasks had prepared their transactions: the
driver aborts them) and a replay of a batch Kafka had committed but Spark had
not (its commit-log entry removed, as when the driver dies between the
sink's commit and Spark's) — while the at-least-once sink under the same
replay duplicates that batch's rows, which the checker catches (the negative
control).
"""

from __future__ import annotations

import os
import uuid
from collections import Counter

import pytest

from tests.harness.cluster import ClusterSpec
from tests.harness.spark import local_session

pytestmark = pytest.mark.integration

CLUSTER = ClusterSpec()  # shared: uuid topic names, every broker stays up

TOTAL = 600


@pytest.fixture(scope="module")
def spark():
    yield from local_session("mafka-streaming-sink-tests")


def create(cluster, partitions: int = 3) -> str:
    from mafka.client import AdminClient, NewTopic

    name = f"sink-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 3)])[name].result(30)
    admin.close()
    return name


def produce(cluster, topic: str, total: int, partitions: int = 3) -> None:
    from mafka.client import Producer

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 5})
    for n in range(total):
        producer.produce(topic, key=f"k{n}".encode(), value=f"v{n}".encode(), partition=n % partitions)
    assert producer.flush(60) == 0
    producer.close()


def key_counts(spark, cluster, topic: str, isolation: str = "read_committed") -> Counter:
    """The checker: how many times each key is in ``topic`` for a reader of ``isolation``."""
    rows = (spark.read.format("mafka").option("kafka.bootstrap.servers", cluster.bootstrap)
            .option("subscribe", topic).option("startingOffsets", "earliest").option("endingOffsets", "latest")
            .option("kafka.isolation.level", isolation).load()
            .selectExpr("CAST(key AS STRING) AS key").collect())
    return Counter(r.key for r in rows)


def duplicated(counts: Counter) -> dict[str, int]:
    return {k: n for k, n in counts.items() if n > 1}


def run_copy(spark, cluster, source: str, out: str, checkpoint, flag=None, fail_key: str | None = None,
             **sink_options):
    """One AvailableNow run of source → sink (batches of at most 150 rows); the query once it ended.

    With ``fail_key``, the task holding that key raises the first time (``flag`` not there yet).
    """
    from pyspark.sql import functions as F

    df = (spark.readStream.format("mafka").option("kafka.bootstrap.servers", cluster.bootstrap)
          .option("subscribe", source).option("startingOffsets", "earliest").option("maxOffsetsPerTrigger", "150")
          .load().selectExpr("CAST(key AS STRING) AS key", "value"))
    if fail_key is not None:
        flag_path = str(flag)

        def fail_once(key):  # no hints: a plain Python UDF
            if key == fail_key and not os.path.exists(flag_path):
                open(flag_path, "w").close()  # noqa: SIM115 - a marker file, nothing to write
                raise RuntimeError(f"injected failure at {key}")
            return key

        df = df.withColumn("key", F.udf(fail_once, "string")("key"))
    writer = (df.writeStream.format("mafka").option("kafka.bootstrap.servers", cluster.bootstrap)
              .option("topic", out).option("checkpointLocation", str(checkpoint)).trigger(availableNow=True))
    query = writer.options(**sink_options).start()
    try:
        query.awaitTermination(120)
    except Exception:  # noqa: BLE001 - the injected failure ends the query; the caller looks at exception()
        pass
    assert not query.isActive, "the query did not end within 120 s"
    return query


def forget_last_commit(checkpoint) -> int:
    """Removes the newest entry of Spark's commit log (the driver died after the sink's commit); its batch id."""
    commits = [f for f in (checkpoint / "commits").iterdir() if f.name.isdigit()]
    last = max(commits, key=lambda f: int(f.name))
    last.unlink()
    crc = checkpoint / "commits" / f".{last.name}.crc"
    if crc.exists():
        crc.unlink()
    return int(last.name)


def test_the_at_least_once_sink_writes_every_row(cluster, spark, tmp_path):
    source, out = create(cluster), create(cluster)
    produce(cluster, source, TOTAL)
    query = run_copy(spark, cluster, source, out, tmp_path / "checkpoint")
    assert query.exception() is None
    assert len([p for p in query.recentProgress if p["numInputRows"] > 0]) >= 4
    counts = key_counts(spark, cluster, out)
    assert set(counts) == {f"k{n}" for n in range(TOTAL)}
    values = (spark.read.format("mafka").option("kafka.bootstrap.servers", cluster.bootstrap)
              .option("subscribe", out).load().selectExpr("CAST(key AS STRING) k", "CAST(value AS STRING) v")
              .collect())
    assert all(r.v == "v" + r.k[1:] for r in values)


def test_the_exactly_once_sink_holds_each_row_once_after_a_failed_task_and_a_replayed_batch(
        cluster, spark, tmp_path):
    source, out = create(cluster), create(cluster)
    produce(cluster, source, TOTAL)
    checkpoint = tmp_path / "checkpoint"
    # 1: a task raises on its first attempt; the batch's prepared transactions are aborted
    failed = run_copy(spark, cluster, source, out, checkpoint, flag=tmp_path / "flag", fail_key="k301",
                      exactlyOnce="true")
    assert failed.exception() is not None and "injected failure" in str(failed.exception())
    before = key_counts(spark, cluster, out)
    assert "k301" not in before and not duplicated(before)
    # the restarted query replays the failed batch and finishes
    second = run_copy(spark, cluster, source, out, checkpoint, exactlyOnce="true")
    assert second.exception() is None
    assert key_counts(spark, cluster, out) == Counter({f"k{n}": 1 for n in range(TOTAL)})
    # 2: Kafka committed the last batch, Spark did not record it: the replay writes nothing again
    replayed = forget_last_commit(checkpoint)
    third = run_copy(spark, cluster, source, out, checkpoint, exactlyOnce="true")
    assert third.exception() is None
    assert [p["batchId"] for p in third.recentProgress if p["numInputRows"] > 0] == [replayed]
    counts = key_counts(spark, cluster, out)
    assert not duplicated(counts), sorted(duplicated(counts).items())[:5]
    assert counts == Counter({f"k{n}": 1 for n in range(TOTAL)})
    # the aborted attempt's records are in the log, only read_uncommitted readers see them
    uncommitted = key_counts(spark, cluster, out, "read_uncommitted")
    assert set(uncommitted) == set(counts) and sum(uncommitted.values()) >= TOTAL


def test_negative_control_the_at_least_once_sink_duplicates_a_replayed_batch(cluster, spark, tmp_path):
    source, out = create(cluster), create(cluster)
    produce(cluster, source, TOTAL)
    checkpoint = tmp_path / "checkpoint"
    assert run_copy(spark, cluster, source, out, checkpoint).exception() is None
    replayed = forget_last_commit(checkpoint)
    again = run_copy(spark, cluster, source, out, checkpoint)
    assert again.exception() is None
    rows = [p["numInputRows"] for p in again.recentProgress if p["batchId"] == replayed]
    counts = key_counts(spark, cluster, out)
    assert set(counts) == {f"k{n}" for n in range(TOTAL)}
    # the checker catches the replayed batch's rows twice
    assert len(duplicated(counts)) == rows[0] > 0
