"""``make bench-spark``: Spark reads of a Mafka topic, records/s after session start.

Produces N × 100-byte records to a 6-partition topic (RF 1) on a fresh local
3-broker cluster, then on ``local[2]`` times, interleaved over ROUNDS:

* ``df``: ``spark.read.format("mafka")...load().count()``;
* ``df-groupby``: ``groupBy("partition").count()`` on the same read;
* ``rdd``: ``offset_range_rdd(...).count()`` (the low-level path);
* ``pandas``: for scale, confluent-kafka reading every partition into a
  pandas DataFrame in this process (no Spark).

Prints each run and the medians (``--chart PATH.png`` also draws them).  Usage::

    python scripts/bench_spark.py [--records 2000000] [--rounds 3] [--chart spark.png]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=2_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--bootstrap", help="an already running cluster (default: start one)")
    add_chart_argument(parser)
    args = parser.parse_args()
    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")

    from mafka.client import AdminClient, NewTopic, Producer

    cluster = None
    bootstrap = args.bootstrap
    if bootstrap is None:
        from tests.harness.cluster import LocalCluster

        cluster = LocalCluster(Path(tempfile.mkdtemp(prefix="bench-spark-")) / "cluster", brokers=3)
        cluster.start()
        bootstrap = cluster.bootstrap
    try:
        topic = f"bench-spark-{int(time.time())}"
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(30)
        admin.close()
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
                 .getOrCreate())
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

        paths = {"df": df_count, "df-groupby": df_groupby, "rdd": rdd_count, "pandas": pandas_read}
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
        spark.stop()
        title = f"{n:,} × 100-byte records, {PARTITIONS} partitions, local[2], medians of {args.rounds} rounds"
        print(f"\n{title}\n")
        print("| path | seconds | records/s |")
        print("|---|---|---|")
        for name, ts in times.items():
            med = statistics.median(ts)
            print(f"| {name} | {med:.2f} | {n / med:,.0f} |")
        if args.chart:
            medians = {name: statistics.median(ts) for name, ts in times.items()}
            print(f"chart: {chart(args.chart, title, medians, n)}", file=sys.stderr)
    finally:
        if cluster is not None:
            cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
