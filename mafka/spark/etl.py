"""``mafka spark-etl`` / ``python -m mafka.spark.etl``: incremental batch ETL over a topic, the worked example.

Each run:

1. plans its offset ranges: from where the last run ended (the manifest,
   ``<output>/_mafka_offsets.json``), else from ``--since`` (a timestamp, by
   ListOffsets) or the earliest offsets; up to the high watermarks now (or
   ``--until``);
2. reads them with the ``mafka`` data source, parses the JSON values
   (``{"user": str, "amount": number, ...}``; records that do not parse are
   counted and left out), and aggregates per user and hour: ``events``
   (count) and ``amount`` (sum);
3. writes the result as Parquet partitioned by ``date`` under
   ``<output>/runs/run=<run id>/`` — written to a temporary directory and renamed
   into place — and, with ``--output-topic``, as JSON records keyed
   ``user|hour`` to that topic;
4. records the ranges it consumed in the manifest (atomically replaced), so
   the next run starts exactly where this one ended.

A run is repeatable: the run id is derived from the ranges' starting
offsets, so a run repeated after a failure (before its manifest entry was
written) replaces its own output instead of adding to it — no gaps, no
double counting in the Parquet output.  The output topic is written at least
once (as Spark's Kafka sink): a repeated run may write an hour's record
again, under the same key.

Reading the result: ``spark.read.parquet("<output>/runs")`` (partition
columns ``run`` and ``date``) and sum ``events`` / ``amount`` per ``user``,
``hour`` (an hour can straddle runs).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["main", "run_etl", "parse_events", "topic_records", "MANIFEST"]

MANIFEST = "_mafka_offsets.json"


def load_manifest(output: Path) -> dict[str, Any]:
    path = output / MANIFEST
    if not path.exists():
        return {"runs": [], "next": {}}
    return json.loads(path.read_text())


def _write_manifest(output: Path, manifest: dict[str, Any]) -> None:
    tmp = output / (MANIFEST + ".tmp")
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True) + "\n")
    with open(tmp, "rb") as f:
        os.fsync(f.fileno())
    os.replace(tmp, output / MANIFEST)


def _offsets_json(spec: dict[str, dict[int, int]]) -> str:
    return json.dumps({t: {str(p): o for p, o in parts.items()} for t, parts in spec.items()})


def run_etl(spark: Any, bootstrap: str, topic: str, output: str | Path, *, output_topic: str | None = None,
            since_ms: int | None = None, until_ms: int | None = None) -> dict[str, Any]:
    """One incremental run (see the module docstring); returns its manifest entry.

    Raises:
        mafka.spark.ReadOptionsError: the topic is missing, or the manifest's
            offsets are gone from the log (``failOnDataLoss``).
    """
    from pyspark.sql import functions as F

    from mafka.spark import plan

    output = Path(output)
    output.mkdir(parents=True, exist_ok=True)
    manifest = load_manifest(output)
    options = {"kafka.bootstrap.servers": bootstrap, "subscribe": topic}
    previous = manifest["next"].get(topic)
    counts = _partition_count(bootstrap, topic)
    if previous:
        # Partitions added since the last run start at their beginning.
        start = {topic: {p: int(previous.get(str(p), -2)) for p in range(counts)}}
        options["startingOffsets"] = _offsets_json(start)
    elif since_ms is not None:
        options["startingTimestamp"] = str(since_ms)
        options["startingOffsetsByTimestampStrategy"] = "latest"
    if until_ms is not None:
        options["endingTimestamp"] = str(until_ms)
    ranges = plan(options)
    next_offsets = dict(previous or {})
    for r in ranges:
        next_offsets[str(r.partition)] = r.until_offset
    run_id = hashlib.sha1(json.dumps(
        {"topic": topic, "from": sorted((r.partition, r.from_offset) for r in ranges), "previous": previous},
        sort_keys=True).encode()).hexdigest()[:12]
    entry = {
        "run_id": run_id,
        "topic": topic,
        "ranges": [{"partition": r.partition, "from": r.from_offset, "until": r.until_offset} for r in ranges],
        "records": sum(r.count() for r in ranges),
        "finished_at_ms": None,
    }
    if ranges:
        # The ranges just planned, pinned: the read covers exactly them even while producers write on.
        read_options = {
            "kafka.bootstrap.servers": bootstrap,
            "assign": json.dumps({topic: sorted({r.partition for r in ranges})}),
            "startingOffsets": _offsets_json({topic: {r.partition: r.from_offset for r in ranges}}),
            "endingOffsets": _offsets_json({topic: {r.partition: r.until_offset for r in ranges}}),
        }
        df = spark.read.format("mafka").options(**read_options).load()
        parsed = parse_events(df)
        good = parsed.where(F.col("e.user").isNotNull())
        hourly = (
            good.select(F.col("e.user").alias("user"), F.coalesce(F.col("e.amount"), F.lit(0.0)).alias("amount"),
                        F.date_trunc("hour", F.col("timestamp")).alias("hour"))
            .groupBy("user", "hour")
            .agg(F.count(F.lit(1)).alias("events"), F.sum("amount").alias("amount"))
            .withColumn("date", F.to_date("hour"))
        ).cache()
        runs = output / "runs"
        runs.mkdir(exist_ok=True)
        tmp = runs / f".run={run_id}.tmp"
        shutil.rmtree(tmp, ignore_errors=True)
        hourly.write.partitionBy("date").parquet(str(tmp))
        final = runs / f"run={run_id}"
        shutil.rmtree(final, ignore_errors=True)  # a repeated run replaces its own output
        os.replace(tmp, final)
        entry["rows"] = hourly.count()
        entry["unparsed"] = parsed.where(F.col("e.user").isNull()).count()
        if output_topic:
            out = topic_records(hourly)
            (out.write.format("mafka").mode("append").option("kafka.bootstrap.servers", bootstrap)
             .option("topic", output_topic).save())
        hourly.unpersist()
    entry["finished_at_ms"] = int(time.time() * 1000)
    manifest["runs"] = [r for r in manifest["runs"] if r["run_id"] != run_id] + [entry]
    manifest["next"][topic] = next_offsets
    _write_manifest(output, manifest)
    return entry


def parse_events(df: Any) -> Any:
    """Kafka rows → ``e`` (the value parsed as ``{"user": str, "amount": number}``; null fields where it
    does not parse) and ``timestamp``."""
    from pyspark.sql import functions as F
    from pyspark.sql.types import DoubleType, StringType, StructField, StructType

    event = StructType([StructField("user", StringType()), StructField("amount", DoubleType())])
    return df.select(F.from_json(F.col("value").cast("string"), event).alias("e"), "timestamp")


def topic_records(hourly: Any) -> Any:
    """Hourly rows → the output topic's records: key ``user|yyyy-MM-ddTHH``, a JSON value with
    ``user``, ``hour`` (ISO, UTC), ``events`` and ``amount``."""
    from pyspark.sql import functions as F

    return hourly.select(
        F.concat_ws("|", "user", F.date_format("hour", "yyyy-MM-dd'T'HH")).alias("key"),
        F.to_json(F.struct("user", F.date_format("hour", "yyyy-MM-dd'T'HH:00:00'Z'").alias("hour"),
                           "events", "amount")).alias("value"))


def _partition_count(bootstrap: str, topic: str) -> int:
    from mafka.spark.cluster_offsets import ClusterOffsets
    from mafka.spark.offset_ranges import ReadOptionsError

    with ClusterOffsets(bootstrap) as source:
        counts = source.partition_counts()
    if topic not in counts:
        raise ReadOptionsError(f"topic '{topic}' does not exist")
    return counts[topic]


def _timestamp(raw: str) -> int:
    """Epoch ms, an ISO date/time (UTC unless it says otherwise), or ``yesterday``/``today`` (UTC midnight)."""
    import datetime as dt

    if raw.isdigit():
        return int(raw)
    today = dt.datetime.now(dt.UTC).replace(hour=0, minute=0, second=0, microsecond=0)
    if raw == "today":
        return int(today.timestamp() * 1000)
    if raw == "yesterday":
        return int((today - dt.timedelta(days=1)).timestamp() * 1000)
    parsed = dt.datetime.fromisoformat(raw)
    if parsed.tzinfo is None:
        parsed = parsed.replace(tzinfo=dt.UTC)
    return int(parsed.timestamp() * 1000)


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--bootstrap-server", required=True, help="host:port,... of the cluster")
    parser.add_argument("--topic", required=True, help="the topic of JSON events to read")
    parser.add_argument("--output", required=True, help="directory for the Parquet output and the manifest")
    parser.add_argument("--output-topic", help="also write the hourly aggregates to this topic")
    parser.add_argument("--since", type=_timestamp,
                        help="first run only: start at this time (epoch ms, ISO, 'yesterday', 'today')")
    parser.add_argument("--until", type=_timestamp, help="end at this time instead of the high watermark")
    parser.add_argument("--master", default="local[2]", help="Spark master (default local[2])")
    from mafka.spark.etl_streaming import add_arguments as streaming_arguments

    streaming_arguments(parser)


def run(args: argparse.Namespace) -> int:
    from mafka.spark.etl_streaming import job_of, run_streaming, stop_on_signals

    if getattr(args, "streaming", False):
        job = job_of(args)
        with stop_on_signals() as stop:
            spark = _session(args, job)
            try:
                return run_streaming(spark, job, stop)
            finally:
                spark.stop()
    spark = _session(args, None)
    try:
        entry = run_etl(spark, args.bootstrap_server, args.topic, args.output,
                        output_topic=args.output_topic, since_ms=args.since, until_ms=args.until)
    finally:
        spark.stop()
    print(json.dumps(entry, sort_keys=True))
    return 0


def _session(args: argparse.Namespace, job: Any) -> Any:
    """The job's SparkSession (*job*: the streaming job, or None for a batch run)."""
    from pyspark.sql import SparkSession

    os.environ.setdefault("PYSPARK_PYTHON", sys.executable)
    builder = (SparkSession.builder.master(args.master).appName("mafka-spark-etl")
               .config("spark.ui.enabled", "false").config("spark.sql.session.timeZone", "UTC"))
    if job is not None:
        # The aggregation's state is kept in this many partitions, fixed by the checkpoint's first
        # batch; Spark's default, 200, is 200 state stores to load and commit every micro-batch.
        shuffle = job.shuffle_partitions or _partition_count(job.bootstrap, job.topic)
        builder = builder.config("spark.sql.shuffle.partitions", str(shuffle))
        # Its micro-batches print their own lines on stdout; Spark's bar would draw through them.
        builder = builder.config("spark.ui.showConsoleProgress", "false")
    return builder.getOrCreate()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="mafka spark-etl", description=__doc__.split("\n")[0])
    add_arguments(parser)
    return run(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
