"""``make demo``: a local Mafka cluster, a sample dataset, and the Spark ETL job run on it.

``make demo STREAMING=1`` (``--streaming``) runs the job as streaming queries instead
(``mafka spark-etl --streaming``) with a producer writing beside it: its event clock runs at
ten minutes per second, so hours close (the watermark passes them) and reach Parquet and the
output topic while you watch; each micro-batch prints its line, and after ``--seconds`` (60)
the job is stopped with SIGTERM and the hours it wrote are shown.

Starts ZooKeeper and three brokers, produces EVENTS JSON events
(``{"user": "u17", "amount": 12.5, "kind": "purchase"}``, timestamps spread
over yesterday, UTC) to a 6-partition topic, runs ``mafka spark-etl`` on
``local[2]`` from yesterday midnight, and prints the busiest users, the
per-hour table, the manifest and where the Parquet went.  Usage::

    python scripts/demo_spark.py [--events 300000]

The cluster is stopped at the end; its files and the output stay under the
printed directory.
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--events", type=int, default=300_000)
    parser.add_argument("--streaming", action="store_true", help="run the job as streaming queries")
    parser.add_argument("--seconds", type=float, default=60.0, help="streaming: how long the job runs")
    args = parser.parse_args()

    from mafka.client import AdminClient, NewTopic, Producer
    from tests.harness.cluster import LocalCluster

    work = Path(tempfile.mkdtemp(prefix="mafka-demo-"))
    print(f"starting ZooKeeper and 3 brokers under {work} ...", flush=True)
    cluster = LocalCluster(work / "cluster", brokers=3)
    cluster.start()
    try:
        bootstrap = cluster.bootstrap
        admin = AdminClient({"bootstrap.servers": bootstrap})
        admin.create_topics([NewTopic("events", 6, 3)])["events"].result(30)
        admin.close()
        if args.streaming:
            return streaming_demo(bootstrap, work, args.seconds)
        midnight = dt.datetime.now(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
        start_ms = int((midnight - dt.timedelta(days=1)).timestamp() * 1000)
        rng = random.Random(42)
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
        began = time.monotonic()
        for i in range(args.events):
            user = f"u{int(rng.paretovariate(1.2)) % 100}"
            kind = "purchase" if rng.random() < 0.2 else "view"
            event = {"user": user, "kind": kind, "amount": round(rng.uniform(1, 100), 2) if kind == "purchase" else 0}
            ts = start_ms + i * 86_400_000 // args.events
            while True:
                try:
                    producer.produce("events", json.dumps(event).encode(), key=user.encode(), timestamp=ts)
                    break
                except BufferError:
                    producer.poll(0.05)
        assert producer.flush(120) == 0
        producer.close()
        print(f"produced {args.events:,} events to 'events' (6 partitions, RF 3) in "
              f"{time.monotonic() - began:.1f} s", flush=True)

        os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
        os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
        from pyspark.sql import SparkSession
        from pyspark.sql import functions as F

        from mafka.spark.etl import MANIFEST, run_etl

        spark = (SparkSession.builder.master("local[2]").appName("mafka-demo")
                 .config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC").getOrCreate())
        spark.sparkContext.setLogLevel("ERROR")
        output = work / "etl-output"
        began = time.monotonic()
        entry = run_etl(spark, bootstrap, "events", output, output_topic="events-hourly", since_ms=start_ms)
        print(f"\nETL run {entry['run_id']}: {entry['records']:,} records in {len(entry['ranges'])} ranges, "
              f"{entry['rows']:,} (user, hour) rows, {entry['unparsed']} unparsable, "
              f"{time.monotonic() - began:.1f} s", flush=True)
        result = spark.read.parquet(str(output / "runs"))
        print("\nbusiest users:")
        (result.groupBy("user").agg(F.sum("events").alias("events"), F.round(F.sum("amount"), 2).alias("amount"))
         .orderBy(F.desc("events")).show(5))
        print("per hour (all users):")
        (result.groupBy("hour").agg(F.sum("events").alias("events"), F.round(F.sum("amount"), 2).alias("amount"))
         .orderBy("hour").show(24, truncate=False))
        again = run_etl(spark, bootstrap, "events", output)
        print(f"a second run right after: {again['records']} new records (it starts where the first ended)")
        spark.stop()
        print(f"\nParquet (partitioned by date): {output / 'runs'}")
        print(f"manifest: {output / MANIFEST}")
        print((output / MANIFEST).read_text())
    finally:
        cluster.stop()
    return 0


#: event time per second of wall time in the streaming demo: ten minutes
EVENT_MS_PER_S = 600_000


def streaming_demo(bootstrap: str, work: Path, seconds: float) -> int:
    """The streaming job beside a producer for *seconds*, then stopped; prints what it wrote."""
    import signal
    import subprocess
    import threading

    from mafka.client import Producer

    start_ms = int(dt.datetime.now(dt.UTC).replace(minute=0, second=0, microsecond=0).timestamp() * 1000)
    stop = threading.Event()
    written = [0]

    def produce() -> None:
        rng = random.Random(42)
        producer = Producer({"bootstrap.servers": bootstrap, "linger.ms": 20})
        began = time.monotonic()
        while not stop.is_set():
            ts = start_ms + int((time.monotonic() - began) * EVENT_MS_PER_S)
            for _ in range(200):
                user = f"u{int(rng.paretovariate(1.2)) % 100}"
                event = {"user": user, "amount": round(rng.uniform(1, 100), 2) if rng.random() < 0.2 else 0}
                producer.produce("events", json.dumps(event).encode(), key=user.encode(), timestamp=ts)
            producer.flush(30)
            written[0] += 200
            stop.wait(0.1)
        producer.close()

    thread = threading.Thread(target=produce, daemon=True)
    thread.start()
    output, checkpoint = work / "stream-output", work / "checkpoint"
    argv = [sys.executable, "-m", "mafka.cli.main", "spark-etl", "--bootstrap-server", bootstrap, "--topic", "events",
            "--output", str(output), "--output-topic", "events-hourly", "--streaming", "--checkpoint", str(checkpoint),
            "--watermark", "10 minutes", "--trigger-interval", "5 seconds"]
    print(f"producing events (event time: 10 minutes a second) and running\n  {' '.join(argv[2:])}\n"
          f"for {seconds:.0f} s once it runs; one line per micro-batch:", flush=True)
    env = dict(os.environ, PYSPARK_PYTHON=sys.executable, SPARK_LOCAL_IP="127.0.0.1")
    job = subprocess.Popen(argv, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
    first = threading.Event()

    def echo() -> None:
        assert job.stdout is not None
        for line in job.stdout:
            first.set()
            print("  " + line.rstrip(), flush=True)

    echoing = threading.Thread(target=echo, daemon=True)
    echoing.start()
    try:
        first.wait(300)  # Spark's start is not counted
        time.sleep(seconds)
    finally:
        job.send_signal(signal.SIGTERM)
        status = job.wait(120)
        echoing.join(10)
        stop.set()
        thread.join(60)
    print(f"\nthe job stopped with status {status}; {written[0]:,} events produced", flush=True)

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    from pyspark.sql import SparkSession
    from pyspark.sql import functions as F

    spark = (SparkSession.builder.master("local[2]").appName("mafka-demo")
             .config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC")
             .config("spark.ui.showConsoleProgress", "false").getOrCreate())
    spark.sparkContext.setLogLevel("ERROR")
    if (output / "stream" / "_spark_metadata").exists():
        print("hours written to Parquet (each once, when the watermark passed its end):")
        (spark.read.parquet(str(output / "stream")).groupBy("hour")
         .agg(F.count(F.lit(1)).alias("users"), F.sum("events").alias("events"), F.round(F.sum("amount"), 2).alias("amount"))
         .orderBy("hour").show(48, truncate=False))
    else:
        print("no hour was final yet: run longer (--seconds)")
    spark.stop()
    print(f"Parquet: {output / 'stream'}   checkpoint: {checkpoint}   output topic: events-hourly")
    print("run it again with the same --checkpoint and it resumes where it stopped")
    return status


if __name__ == "__main__":
    sys.exit(main())
