"""mafka.spark on real Spark (``local[2]``) against a real 3-broker cluster.

One SparkSession for the whole module (start-up costs seconds).  Checks:
RDD partitions are 1:1 with offset ranges; a DataFrame read equals what
confluent-kafka reads for the same ranges, row by row, headers included;
write then read back; bad options fail on the driver naming the option; a
leader killed while a read runs still yields exactly the planned rows; the ETL job's output and manifest, with a repeated run that adds
nothing and an incremental run that adds exactly the new records.
"""

from __future__ import annotations

import datetime as dt
import json
import os
import sys
import time
import uuid

import pytest

from tests.harness.chaos import Chaos
from tests.harness.cluster import ClusterSpec
from tests.harness.spark import TEST_SESSION_CONF

pytestmark = pytest.mark.integration

PARTITIONS = 3
PER_PARTITION = 1000
T0 = 1_700_000_000_000


CLUSTER = ClusterSpec(shared=False)  # kills and restarts a leader during a read


@pytest.fixture(scope="module")
def spark():
    os.environ["PYSPARK_PYTHON"] = sys.executable
    os.environ["SPARK_LOCAL_IP"] = "127.0.0.1"
    from pyspark.sql import SparkSession

    session = (SparkSession.builder.master("local[2]").appName("mafka-tests")
               .config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC")
               .config("spark.sql.shuffle.partitions", "4").config("spark.ui.showConsoleProgress", "false")
               .config(map=TEST_SESSION_CONF).getOrCreate())
    yield session
    session.stop()


def produce(cluster, topic: str, per_partition: int = PER_PARTITION, start: int = 0, partitions: int = PARTITIONS,
            value=lambda p, i: f"{p}-{i}".encode()) -> None:
    from mafka.client import Producer

    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 5})
    for i in range(start, start + per_partition):
        for p in range(partitions):
            producer.produce(topic, value=value(p, i), key=f"k{i % 7}".encode(), partition=p, timestamp=T0 + i,
                             headers=[("i", str(i).encode()), ("n", None)])
    assert producer.flush(60) == 0
    producer.close()


def create(cluster, partitions: int = PARTITIONS, rf: int = 3) -> str:
    from mafka.client import AdminClient, NewTopic

    name = f"spark-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(name, partitions, rf)])[name].result(30)
    admin.close()
    return name


@pytest.fixture(scope="module")
def topic(cluster):
    name = create(cluster)
    produce(cluster, name)
    return name


def confluent_rows(cluster, topic, ranges):
    """The same ranges read with confluent-kafka (librdkafka), as Spark rows."""
    from confluent_kafka import Consumer, TopicPartition

    rows = []
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "spark-check", "enable.auto.commit": False})
    try:
        for r in ranges:
            c.assign([TopicPartition(r.topic, r.partition, r.from_offset)])
            got = []
            while len(got) < r.count():
                for m in c.consume(1000, 5.0):
                    assert m.error() is None, m.error()
                    if m.offset() < r.until_offset:
                        got.append(m)
            for m in got[: r.count()]:
                ts_type, ts = m.timestamp()
                rows.append((m.key(), m.value(), m.topic(), m.partition(), m.offset(),
                             dt.datetime.fromtimestamp(ts / 1000, dt.UTC), ts_type - 1,
                             [(k, v) for k, v in (m.headers() or [])]))
    finally:
        c.close()
    return rows


def test_rdd_partitions_are_one_to_one_with_offset_ranges(cluster, spark, topic):
    from mafka.spark import offset_range_rdd, plan

    ranges = plan({"kafka.bootstrap.servers": cluster.bootstrap, "subscribe": topic,
                   "maxRecordsPerPartition": "300"})
    assert len(ranges) == PARTITIONS * 4
    rdd = offset_range_rdd(spark.sparkContext, cluster.bootstrap, ranges)
    assert rdd.getNumPartitions() == len(ranges)
    for r, part in zip(ranges, rdd.glom().collect(), strict=True):
        assert {(row[2], row[3]) for row in part} == {(r.topic, r.partition)}
        assert [row[4] for row in part] == list(range(r.from_offset, r.until_offset))
        assert [row[1] for row in part] == [f"{r.partition}-{i}".encode() for i in range(r.from_offset, r.until_offset)]
    pairs = offset_range_rdd(spark.sparkContext, cluster.bootstrap, ranges[:1], pairs=True).collect()
    assert pairs[0] == (b"k0", b"0-0") and len(pairs) == ranges[0].count()


def test_a_dataframe_read_equals_what_confluent_kafka_reads(cluster, spark, topic):
    from mafka.spark import plan

    options = {"kafka.bootstrap.servers": cluster.bootstrap, "subscribe": topic, "includeHeaders": "true",
               "startingOffsets": json.dumps({topic: {"0": 10, "1": -2, "2": 500}}),
               "endingOffsets": json.dumps({topic: {"0": 600, "1": 20, "2": -1}})}
    df = spark.read.format("mafka").options(**options).load()
    assert df.columns == ["key", "value", "topic", "partition", "offset", "timestamp", "timestampType", "headers"]
    ranges = plan(options)
    assert df.rdd.getNumPartitions() == len(ranges) == PARTITIONS
    rows = [(r.key, r.value, r.topic, r.partition, r.offset, r.timestamp.astimezone(dt.UTC), r.timestampType,
             [(h.key, h.value) for h in r.headers])
            for r in df.orderBy("partition", "offset").collect()]
    assert len(rows) == 590 + 20 + 500
    assert rows == confluent_rows(cluster, topic, ranges)
    by_partition = {r.partition: r["count"] for r in df.groupBy("partition").count().collect()}
    assert by_partition == {0: 590, 1: 20, 2: 500}


def test_write_then_read_back(cluster, spark):
    source = spark.createDataFrame(
        [(f"k{i}", f"v{i}", i % 2, [("h", b"x")]) for i in range(500)],
        "key string, value string, partition int, headers array<struct<key:string,value:binary>>")
    target = create(cluster, partitions=2)
    (source.write.format("mafka").mode("append").option("kafka.bootstrap.servers", cluster.bootstrap)
     .option("topic", target).save())
    back = (spark.read.format("mafka").option("kafka.bootstrap.servers", cluster.bootstrap)
            .option("subscribe", target).option("includeHeaders", "true").load())
    got = sorted((r.key.decode(), r.value.decode(), r.partition, [(h.key, h.value) for h in r.headers])
                 for r in back.collect())
    assert got == sorted((f"k{i}", f"v{i}", i % 2, [("h", b"x")]) for i in range(500))


@pytest.mark.parametrize(("option", "value", "message"), [
    ("startingOffsets", "{not json", "option 'startingOffsets' is not valid JSON"),
    ("colour", "blue", "unknown option 'colour'"),
    ("subscribe", "no-such-topic", "option 'subscribe': topic 'no-such-topic' does not exist"),
])
def test_bad_options_fail_on_the_driver_naming_the_option(cluster, spark, option, value, message):
    options = {"kafka.bootstrap.servers": cluster.bootstrap, "subscribe": "x", option: value}
    with pytest.raises(Exception, match=message):
        spark.read.format("mafka").options(**options).load().count()


def test_a_leader_killed_during_a_read_still_gives_exactly_the_planned_rows(cluster, spark):
    import threading

    from mafka.spark import offset_range_rdd, plan

    topic = create(cluster)
    per_partition = 20_000
    produce(cluster, topic, per_partition=per_partition)
    ranges = plan({"kafka.bootstrap.servers": cluster.bootstrap, "subscribe": topic,
                   "maxRecordsPerPartition": "500"})
    assert len(ranges) == PARTITIONS * per_partition // 500
    chaos = Chaos(cluster)
    victim = chaos.leader(topic, PARTITIONS - 1)  # its ranges come last in the job
    first_victim_task = min(i for i, r in enumerate(ranges) if chaos.leader(topic, r.partition) == victim)
    result: dict[str, object] = {}

    def job() -> None:
        try:
            result["rows"] = offset_range_rdd(spark.sparkContext, cluster.bootstrap, ranges, pairs=False).map(
                lambda row: (row[3], row[4], row[1])).collect()
        except Exception as exc:  # noqa: BLE001 - reported below
            result["error"] = exc

    runner = threading.Thread(target=job)
    try:
        runner.start()
        tracker = spark.sparkContext.statusTracker()
        stages = chaos.wait_until(lambda: tracker.getActiveStageIds(), 60, "the read started")
        time.sleep(0.5)
        chaos.kill(victim)
        done = tracker.getStageInfo(stages[0]).numCompletedTasks
        assert done < first_victim_task, f"{done} tasks had finished: none left for the killed leader's ranges"
        runner.join(300)
        assert not runner.is_alive() and "error" not in result, result.get("error")
        rows = result["rows"]
        assert sorted((p, o) for p, o, _ in rows) == [(p, i) for p in range(PARTITIONS) for i in range(per_partition)]
        assert all(v == f"{p}-{o}".encode() for p, o, v in rows)
    finally:
        runner.join(300)
        chaos.restart(victim)
        chaos.close()


def test_the_etl_job_is_incremental_and_a_repeated_run_adds_nothing(cluster, spark, tmp_path):
    from mafka.spark.etl import MANIFEST, run_etl

    topic = create(cluster, partitions=2)

    def event(p, i):
        if i % 50 == 0:
            return b"not json"
        return json.dumps({"user": f"u{i % 3}", "amount": i % 10}).encode()

    produce(cluster, topic, per_partition=300, partitions=2, value=event)
    out = tmp_path / "etl"
    first = run_etl(spark, cluster.bootstrap, topic, out, output_topic=f"{topic}-hourly")
    assert first["records"] == 600 and first["unparsed"] == 12
    manifest = json.loads((out / MANIFEST).read_text())
    assert manifest["next"][topic] == {"0": 300, "1": 300}
    again = run_etl(spark, cluster.bootstrap, topic, out)  # nothing new: an empty run
    assert again["records"] == 0

    def totals():
        df = spark.read.parquet(str(out / "runs"))
        return {(r.user, r.events, r.amount) for r in
                df.groupBy("user").agg({"events": "sum", "amount": "sum"})
                .withColumnRenamed("sum(events)", "events").withColumnRenamed("sum(amount)", "amount").collect()}

    def expected(n):
        counts = {}
        for i in range(n):
            if i % 50:
                user = f"u{i % 3}"
                e, a = counts.get(user, (0, 0.0))
                counts[user] = (e + 2, a + 2 * (i % 10))
        return {(u, e, a) for u, (e, a) in counts.items()}

    assert totals() == expected(300)
    # A run that fails after writing its Parquet but before its manifest entry ...
    produce(cluster, topic, per_partition=100, start=300, partitions=2, value=event)
    import mafka.spark.etl as etl

    real = etl._write_manifest
    etl._write_manifest = lambda *a: (_ for _ in ()).throw(RuntimeError("crash before the manifest"))
    try:
        with pytest.raises(RuntimeError, match="crash before the manifest"):
            run_etl(spark, cluster.bootstrap, topic, out)
    finally:
        etl._write_manifest = real
    # ... is repeated (with more records by now): it replaces its own output, nothing counts twice.
    produce(cluster, topic, per_partition=50, start=400, partitions=2, value=event)
    second = run_etl(spark, cluster.bootstrap, topic, out)
    assert second["records"] == 300
    assert [(r["partition"], r["from"], r["until"]) for r in second["ranges"]] == [(0, 300, 450), (1, 300, 450)]
    assert sorted(p.name for p in (out / "runs").iterdir() if not p.name.startswith(".")) == sorted(
        f"run={r['run_id']}" for r in json.loads((out / MANIFEST).read_text())["runs"] if r["records"])
    assert totals() == expected(450)
    # The output topic holds one record per (user, hour) of the first run.
    hourly = (spark.read.format("mafka").option("kafka.bootstrap.servers", cluster.bootstrap)
              .option("subscribe", f"{topic}-hourly").load().collect())
    assert {json.loads(r.value)["user"] for r in hourly} == {"u0", "u1", "u2"}


def test_the_spark_page_example_runs_as_written(cluster, spark, capsys):
    """The Spark page's example (docs/spark.md), with the cluster's address and fresh topic names."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "docs" / "spark.md").read_text()
    code = re.search(r"```python\n(.*?)```", readme[readme.index("# Spark"):], re.S).group(1)
    source = create(cluster, partitions=2)
    produce(cluster, source, per_partition=20, partitions=2)
    code = (code.replace("127.0.0.1:9092", cluster.bootstrap.split(",")[0])
            .replace('"events-upper"', f'"{source}-upper"').replace('"events"', f'"{source}"'))
    exec(compile(code, "docs/spark.md", "exec"), {})
    assert re.search(r"\|\s+0\|\s+20\|", capsys.readouterr().out)
    back = (spark.read.format("mafka").option("kafka.bootstrap.servers", cluster.bootstrap)
            .option("subscribe", f"{source}-upper").load())
    assert sorted(r.value for r in back.collect()) == sorted(f"{p}-{i}".upper().encode()
                                                             for p in range(2) for i in range(20))
