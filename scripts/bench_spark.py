"""``make bench-spark``: Spark reads of a Mafka topic, records/s after session start.

Produces N × 100-byte records to a 6-partition topic (RF 1) on a fresh local
3-broker cluster, then on ``local[2]`` times, interleaved over ROUNDS:

* ``df``: ``spark.read.format("mafka")...load().count()``;
* ``df-groupby``: ``groupBy("partition").count()`` on the same read;
* ``rdd``: ``offset_range_rdd(...).count()`` (the low-level path);
* ``pandas``: for scale, confluent-kafka reading every partition into a
  pandas DataFrame in this process (no Spark);
* ``df-noop``: the batch read with every row made (``write.format("noop")``),
  what the streaming paths are compared with;
* ``stream-noop``: ``readStream.format("mafka")`` → ``writeStream.format("noop")``,
  ``Trigger.AvailableNow`` with ``maxOffsetsPerTrigger`` a quarter of the records
  (four micro-batches), a fresh checkpoint each round; ``stream-noop-1`` the same
  without a rate limit (one micro-batch);
* ``stream-alo`` / ``stream-eos``: the same into ``writeStream.format("mafka")``,
  at least once and with ``exactlyOnce`` (a fresh 6-partition output topic each).

Then the end-to-end latency (``--latency-seconds``, 0 to skip): a producer writes
``--latency-rate`` records/s (default 50,000) for that long while a query with the
default trigger (each micro-batch as soon as the last ends) copies them through the
exactly-once sink; each record's latency is its micro-batch's commit (the batch's
trigger time plus its ``triggerExecution``, from ``query.recentProgress``) less its
produce timestamp; p50/p99 over every record.

Each streaming path is also given as its sustained rate: rows over the sum of its
micro-batches' ``triggerExecution`` (without the query's start and stop).
Prints each run and the medians (``--chart PATH.png`` also draws them).  Usage::

    python scripts/bench_spark.py [--records 2000000] [--rounds 3] [--latency-seconds 30] [--chart spark.png]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import statistics
import sys
import tempfile
import time
from datetime import datetime
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_chart import Panel, add_chart_argument, draw  # noqa: E402

PARTITIONS = 6


def chart(path: Path, title: str, seconds: dict[str, float], records: int) -> Path:
    """The medians as bars: path → median seconds for ``records`` records."""
    paths = list(seconds)
    return draw(path, title, [
        Panel("records/s", paths, {"records/s": [records / seconds[p] for p in paths]}, kind="hbars"),
        Panel("seconds", paths, {"seconds": [seconds[p] for p in paths]}, kind="hbars"),
    ])


def create_topic(bootstrap: str, topic: str) -> None:
    from mafka.client import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
    admin.close()


def _epoch_ms(iso: str) -> float:
    """A progress report's ``timestamp`` (``2026-11-30T03:04:05.678Z``) in epoch ms."""
    return datetime.fromisoformat(iso.replace("Z", "+00:00")).timestamp() * 1000


def end_to_end_latency(spark, bootstrap: str, topic: str, work: Path, rate: int, seconds: float) -> dict:
    """Produce → exactly-once sink commit, per record, at ``rate`` records/s offered for ``seconds``."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    create_topic(bootstrap, topic)
    create_topic(bootstrap, f"{topic}-out")
    query = (spark.readStream.format("mafka").option("kafka.bootstrap.servers", bootstrap).option("subscribe", topic)
             .option("startingOffsets", "earliest").load()
             .writeStream.format("mafka").option("kafka.bootstrap.servers", bootstrap).option("topic", f"{topic}-out")
             .option("exactlyOnce", "true").option("checkpointLocation", str(work / "ckpt-latency")).start())
    while "Waiting for data" not in query.status["message"]:  # the query runs and has found the topic empty
        assert query.isActive, query.exception()
        time.sleep(0.1)
    # The producer, paced in 10 ms slices (the query runs in Spark's own threads meanwhile).
    produced = 0
    began = time.monotonic()
    producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 5})
    value = b"x" * 100
    while (elapsed := time.monotonic() - began) < seconds:
        due = int(min(elapsed + 0.01, seconds) * rate)
        while produced < due:
            try:
                producer.produce(topic, value, partition=produced % PARTITIONS)
                produced += 1
            except BufferError:
                producer.poll(0.001)
        producer.poll(0)
        time.sleep(max(0.0, began + (due / rate) - time.monotonic()))
    producer.flush(60)
    produced_per_s = produced / (time.monotonic() - began)
    deadline = time.monotonic() + 300
    while time.monotonic() < deadline:  # until the query has read everything produced
        done = sum(p["numInputRows"] for p in query.recentProgress)
        if done >= produced:
            break
        time.sleep(0.5)
    query.stop()
    batches = []
    for p in query.recentProgress:
        if p["numInputRows"] == 0:
            continue
        committed = _epoch_ms(p["timestamp"]) + p["durationMs"]["triggerExecution"]
        source = p["sources"][0]
        start = json.loads(source["startOffset"]) if source["startOffset"] else {}
        end = json.loads(source["endOffset"])
        batches.append((start.get(topic, {}), end[topic], committed))
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-latency", "enable.auto.commit": False})
    c.assign([TopicPartition(topic, part, 0) for part in range(PARTITIONS)])
    stamps: dict[tuple[int, int], int] = {}
    while len(stamps) < produced:
        for m in c.consume(10000, 1.0):
            if m.error() is None:
                stamps[(m.partition(), m.offset())] = m.timestamp()[1]
    c.close()
    latencies = []
    for start, end, committed in batches:
        for part, last in end.items():
            for offset in range(int(start.get(part, 0)), int(last)):
                latencies.append(committed - stamps[(int(part), offset)])
    latencies.sort()
    return {"records": len(latencies), "batches": len(batches), "produced_per_s": round(produced_per_s),
            "p50_ms": round(latencies[len(latencies) // 2]), "p99_ms": round(latencies[int(len(latencies) * 0.99)])}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bootstrap", help="an already running cluster (default: start one)")
    parser.add_argument("--latency-seconds", type=float, default=30.0)
    parser.add_argument("--latency-rate", type=int, default=50_000)
    add_chart_argument(parser)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    from mafka.client import Producer

    cluster = None
    bootstrap = args.bootstrap
    if bootstrap is None:
        from tests.harness.cluster import LocalCluster

        cluster = LocalCluster(Path(tempfile.mkdtemp(prefix="bench-spark-")) / "cluster", brokers=3)
        cluster.start()
        bootstrap = cluster.bootstrap
    try:
        topic = f"bench-spark-{int(time.time())}"
        create_topic(bootstrap, topic)
        producer = Producer({"bootstrap.servers": bootstrap, "acks": 1, "linger.ms": 5})
        value = b"x" * 100
        for i in range(args.records):
            while True:
                try:
                    producer.produce(topic, value, partition=i % PARTITIONS)
                    break
                except BufferError:
                    producer.poll(0.01)
        assert producer.flush(300) == 0
        producer.close()

        from pyspark.sql import SparkSession

        from mafka.spark import offset_range_rdd, plan

        started = time.monotonic()
        spark = (SparkSession.builder.master("local[2]").appName("mafka-bench")
                 .config("spark.ui.enabled", "false").config("spark.ui.showConsoleProgress", "false")
                 .config("spark.sql.streaming.numRecentProgressUpdates", "100000").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        print(f"SparkSession started in {time.monotonic() - started:.1f} s", flush=True)
        options = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic}
        n = args.records

        def df_count() -> int:
            return spark.read.format("mafka").options(**options).load().count()

        def df_groupby() -> int:
            rows = spark.read.format("mafka").options(**options).load().groupBy("partition").count().collect()
            return sum(r["count"] for r in rows)

        def rdd_count() -> int:
            return offset_range_rdd(spark.sparkContext, bootstrap, plan(options), pairs=True).count()

        def pandas_read() -> int:
            import pandas as pd
            from confluent_kafka import Consumer, TopicPartition

            c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False})
            c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
            keys, values, parts, offsets = [], [], [], []
            while len(values) < n:
                for m in c.consume(10000, 1.0):
                    if m.error() is None:
                        keys.append(m.key())
                        values.append(m.value())
                        parts.append(m.partition())
                        offsets.append(m.offset())
            c.close()
            return len(pd.DataFrame({"key": keys, "value": values, "partition": parts, "offset": offsets}))

        work = Path(tempfile.mkdtemp(prefix="bench-spark-stream-"))
        runs = itertools.count()

        def df_noop() -> int:
            spark.read.format("mafka").options(**options).load().write.format("noop").mode("overwrite").save()
            return n

        sustained: dict[str, list[float]] = {}

        def stream(sink: str, batches: int = 4) -> int:
            run = next(runs)
            reader = spark.readStream.format("mafka").options(**options).option("startingOffsets", "earliest")
            if batches > 1:
                reader = reader.option("maxOffsetsPerTrigger", str(max(1, n // batches)))
            writer = (reader.load().writeStream.option("checkpointLocation", str(work / f"ckpt-{run}"))
                      .trigger(availableNow=True))
            if sink == "noop":
                writer = writer.format("noop")
            else:
                out = f"{topic}-out-{run}"
                create_topic(bootstrap, out)
                writer = (writer.format("mafka").option("kafka.bootstrap.servers", bootstrap).option("topic", out)
                          .option("exactlyOnce", "true" if sink == "eos" else "false"))
            query = writer.start()
            query.awaitTermination()
            assert query.exception() is None, query.exception()
            progress = [p for p in query.recentProgress if p["numInputRows"]]
            rows = sum(p["numInputRows"] for p in progress)
            # Sustained: rows over the micro-batches' own time (triggerExecution), without the
            # query's start and stop.
            busy = sum(p["durationMs"]["triggerExecution"] for p in progress) / 1000
            sustained.setdefault(f"stream-{sink}" + ("" if batches == 4 else f"-{batches}"), []).append(rows / busy)
            return rows

        paths = {"df": df_count, "df-groupby": df_groupby, "rdd": rdd_count, "pandas": pandas_read,
                 "df-noop": df_noop, "stream-noop-1": lambda: stream("noop", 1), "stream-noop": lambda: stream("noop"),
                 "stream-alo": lambda: stream("alo"), "stream-eos": lambda: stream("eos")}
        df_count()  # warm-up: the first query of a session pays Spark's start-up
        times: dict[str, list[float]] = {name: [] for name in paths}
        for r in range(args.rounds):
            for name, fn in paths.items():
                began = time.monotonic()
                got = fn()
                seconds = time.monotonic() - began
                assert got == n, (name, got)
                times[name].append(seconds)
                print(json.dumps({"round": r + 1, "path": name, "seconds": round(seconds, 3),
                                  "records_per_s": round(n / seconds)}), flush=True)
        latency = None
        if args.latency_seconds > 0:
            latency = end_to_end_latency(spark, bootstrap, f"{topic}-latency", work, args.latency_rate,
                                         args.latency_seconds)
            print(json.dumps({"latency": latency}), flush=True)
        spark.stop()
        title = f"{n:,} × 100-byte records, {PARTITIONS} partitions, local[2], medians of {args.rounds} rounds"
        print(f"\n{title}\n")
        print("| path | seconds | records/s | sustained records/s (micro-batches' own time) |")
        print("|---|---|---|---|")
        for name, ts in times.items():
            med = statistics.median(ts)
            rate = f"{statistics.median(sustained[name]):,.0f}" if name in sustained else ""
            print(f"| {name} | {med:.2f} | {n / med:,.0f} | {rate} |")
        med = {name: statistics.median(ts) for name, ts in times.items()}
        rate = {name: statistics.median(r) for name, r in sustained.items()}
        batch = n / med["df-noop"]
        print(f"\nsustained / df-noop: one micro-batch {rate['stream-noop-1'] / batch:.0%}, four "
              f"{rate['stream-noop'] / batch:.0%}; wall clock (with the query's start and stop): one "
              f"{med['df-noop'] / med['stream-noop-1']:.0%}, four {med['df-noop'] / med['stream-noop']:.0%}; "
              f"stream-eos / stream-alo: sustained {rate['stream-eos'] / rate['stream-alo']:.0%}, "
              f"wall clock {med['stream-alo'] / med['stream-eos']:.0%}")
        if latency is not None:
            print(f"end to end at {args.latency_rate:,} records/s offered for {args.latency_seconds:.0f} s through the "
                  f"exactly-once sink: p50 {latency['p50_ms']:,} ms, p99 {latency['p99_ms']:,} ms "
                  f"({latency['records']:,} records in {latency['batches']} micro-batches, produced at "
                  f"{latency['produced_per_s']:,}/s)")
        if args.chart:
            print(f"chart: {chart(args.chart, title, med, n)}", file=sys.stderr)
    finally:
        if cluster is not None:
            cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
