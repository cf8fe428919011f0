"""``mafka spark-etl --streaming``: the ETL job of :mod:`mafka.spark.etl` as Structured Streaming queries.

The same per-user-per-hour aggregation as the batch job — ``events`` (count)
and ``amount`` (sum) per ``user`` and hour of the records' timestamps, JSON
values that do not parse left out — run continuously:

* the topic is read with ``spark.readStream.format("mafka")``; its offsets
  live in the checkpoint, so a job restarted (after a crash, a kill, a
  deploy) resumes where its last committed micro-batch ended, and
  ``--starting-offsets`` (default ``earliest``) counts only for a new
  checkpoint;
* an **event-time watermark** on the record timestamp (``--watermark``,
  default ``10 minutes``): an hour is *final* once the watermark — the
  latest timestamp seen minus that delay — passes its end, and only then
  written (Spark's append mode); a record older than the watermark when it
  arrives is late and left out, as Spark does;
* each final hour is appended to **Parquet** under ``<output>/stream``,
  partitioned by ``date`` — Spark's file sink, exactly once: its
  ``_spark_metadata`` log names the files of committed batches, and
  ``spark.read.parquet("<output>/stream")`` reads only those;
* with ``--output-topic``, each final hour is also written as the batch job's
  JSON record keyed ``user|hour`` through Mafka's **exactly-once sink**
  (``writeStream.format("mafka").option("exactlyOnce", "true")``): a second
  query over the same source with its own checkpoint, so a ``read_committed``
  reader sees each hour once.

Checkpoints: ``<checkpoint>/parquet`` and ``<checkpoint>/topic``.  The job runs
until SIGINT/SIGTERM (it stops its queries and exits 0) or, with
``--available-now``, until everything the topic held at the start is processed
(Spark's ``Trigger.AvailableNow``; a last batch without data writes the hours
the watermark closed).  Each finished micro-batch prints one JSON line:
``{"query": "parquet", "batch": 3, "input_rows": 1200, "watermark": "..."}``.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

__all__ = ["StreamingEtl", "hourly_windows", "start", "run_streaming", "stop_on_signals"]

#: Seconds between two looks at the queries' progress.
POLL_S = 0.5


@dataclass(frozen=True)
class StreamingEtl:
    """What one streaming ETL job reads, writes and how often (the CLI's flags)."""

    bootstrap: str
    topic: str
    output: Path
    checkpoint: Path
    output_topic: str | None = None
    watermark: str = "10 minutes"
    trigger_interval: str = "10 seconds"
    available_now: bool = False
    starting_offsets: str = "earliest"
    max_offsets_per_trigger: int | None = None
    #: partitions of the aggregation's state (``spark.sql.shuffle.partitions``); None: the topic's partitions
    shuffle_partitions: int | None = None


def hourly_windows(df: Any, watermark: str) -> Any:
    """The aggregation of a stream of Kafka rows: ``user, hour, events, amount, date``, one row per final hour.

    The hour is the one-hour event-time window of the record timestamp (a window, not
    ``date_trunc``: Spark's append mode needs the watermarked column grouped as a window to know
    when a group is final).  The columns and their meaning are the batch job's.
    """
    from pyspark.sql import functions as F

    from mafka.spark.etl import parse_events

    good = parse_events(df).where(F.col("e.user").isNotNull())
    return (
        good.withWatermark("timestamp", watermark)
        .groupBy(F.window("timestamp", "1 hour").alias("w"), F.col("e.user").alias("user"))
        .agg(F.count(F.lit(1)).alias("events"), F.sum(F.coalesce(F.col("e.amount"), F.lit(0.0))).alias("amount"))
        .select("user", F.col("w.start").alias("hour"), "events", "amount", F.to_date(F.col("w.start")).alias("date"))
    )


def start(spark: Any, job: StreamingEtl) -> dict[str, Any]:
    """Starts the job's queries; returns them by name (``parquet``, and ``topic`` with an output topic)."""
    from mafka.spark.etl import topic_records

    def source() -> Any:
        reader = (spark.readStream.format("mafka").option("kafka.bootstrap.servers", job.bootstrap)
                  .option("subscribe", job.topic).option("startingOffsets", job.starting_offsets))
        if job.max_offsets_per_trigger is not None:
            reader = reader.option("maxOffsetsPerTrigger", str(job.max_offsets_per_trigger))
        return reader.load()

    def triggered(writer: Any) -> Any:
        if job.available_now:
            return writer.trigger(availableNow=True)
        return writer.trigger(processingTime=job.trigger_interval)

    queries: dict[str, Any] = {}
    parquet = (hourly_windows(source(), job.watermark).writeStream.queryName("parquet").format("parquet")
               .outputMode("append").partitionBy("date").option("path", str(job.output / "stream"))
               .option("checkpointLocation", str(job.checkpoint / "parquet")))
    queries["parquet"] = triggered(parquet).start()
    if job.output_topic:
        records = topic_records(hourly_windows(source(), job.watermark))
        topic = (records.writeStream.queryName("topic").format("mafka").outputMode("append")
                 .option("kafka.bootstrap.servers", job.bootstrap).option("topic", job.output_topic)
                 .option("exactlyOnce", "true").option("checkpointLocation", str(job.checkpoint / "topic")))
        queries["topic"] = triggered(topic).start()
    return queries


def _progress_line(name: str, progress: dict[str, Any]) -> str:
    return json.dumps({
        "query": name,
        "batch": progress.get("batchId"),
        "input_rows": progress.get("numInputRows"),
        "watermark": (progress.get("eventTime") or {}).get("watermark"),
        "end_offsets": [s.get("endOffset") for s in progress.get("sources", [])],
    }, sort_keys=True)


def watch(queries: dict[str, Any], stop: threading.Event, out: Any = sys.stdout, poll_s: float = POLL_S) -> int:
    """Prints each finished micro-batch of *queries* until all end or *stop* is set; 0, or 1 if one failed.

    On *stop* the queries are stopped (a batch in flight is abandoned; the checkpoint and both
    sinks are exactly once, so the next start redoes it).  A query that failed stops the others.
    """
    seen: dict[str, int] = {}
    failed = False

    def print_new() -> None:
        for name, query in queries.items():
            # Every progress Spark still holds, oldest first: several batches may end between two looks.
            for progress in query.recentProgress:
                batch = progress.get("batchId", -1)
                if batch > seen.get(name, -1):
                    seen[name] = batch
                    print(_progress_line(name, progress), file=out, flush=True)

    while True:
        print_new()
        errors = {name: q.exception() for name, q in queries.items() if not q.isActive}
        errors = {name: e for name, e in errors.items() if e is not None}
        if errors:
            for name, error in errors.items():
                print(f"spark-etl: query {name} failed: {error}", file=sys.stderr, flush=True)
            failed = True
            break
        if stop.is_set() or not any(q.isActive for q in queries.values()):
            break
        stop.wait(poll_s)
    for query in queries.values():
        if query.isActive:
            query.stop()
    print_new()  # the batches that ended since the last look
    return 1 if failed else 0


@contextmanager
def stop_on_signals() -> Iterator[threading.Event]:
    """An event set by SIGINT or SIGTERM while inside (the previous handlers come back after).

    Entered before the SparkSession starts, so that a signal while Spark starts (tens of seconds
    on a busy machine) still ends the job cleanly: its queries are stopped as soon as they run.
    """
    stop = threading.Event()
    previous = {sig: signal.signal(sig, lambda *_: stop.set()) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)


def run_streaming(spark: Any, job: StreamingEtl, stop: threading.Event) -> int:
    """Runs the job until it ends (``available_now``), fails, or *stop* is set; the exit status."""
    if stop.is_set():  # a signal while Spark started
        return 0
    job.output.mkdir(parents=True, exist_ok=True)
    queries = start(spark, job)
    started = time.monotonic()
    status = watch(queries, stop)
    print(json.dumps({"streaming": True, "queries": sorted(queries), "status": status,
                      "seconds": round(time.monotonic() - started, 1)}, sort_keys=True), flush=True)
    return status


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """The streaming flags of ``mafka spark-etl`` (with ``--streaming``)."""
    parser.add_argument("--streaming", action="store_true",
                        help="run as Structured Streaming queries (needs --checkpoint) instead of one batch")
    parser.add_argument("--checkpoint", help="streaming: the queries' checkpoint directory")
    parser.add_argument("--watermark", default="10 minutes",
                        help="streaming: how late a record may be, as a Spark interval (default '10 minutes')")
    parser.add_argument("--trigger-interval", default="10 seconds",
                        help="streaming: time between micro-batches, as a Spark interval (default '10 seconds')")
    parser.add_argument("--available-now", action="store_true",
                        help="streaming: process what the topic holds now, then stop (Trigger.AvailableNow)")
    parser.add_argument("--starting-offsets", default="earliest",
                        help="streaming, new checkpoint only: earliest (default), latest, or Spark's JSON offsets")
    parser.add_argument("--max-offsets-per-trigger", type=int, help="streaming: at most this many records a batch")
    parser.add_argument("--shuffle-partitions", type=int,
                        help="streaming, new checkpoint only: partitions of the aggregation's state "
                             "(default: the topic's partition count)")


def job_of(args: argparse.Namespace) -> StreamingEtl:
    """The :class:`StreamingEtl` the parsed flags name.

    Raises:
        SystemExit: --checkpoint is missing, or --since/--until were given (a stream has no end,
            and its start is --starting-offsets).
    """
    if not args.checkpoint:
        raise SystemExit("mafka spark-etl: --streaming needs --checkpoint DIR")
    if args.since is not None or args.until is not None:
        raise SystemExit("mafka spark-etl: --since/--until are for the batch job; a streaming job starts at "
                         "--starting-offsets and has no end")
    return StreamingEtl(
        bootstrap=args.bootstrap_server, topic=args.topic, output=Path(args.output), checkpoint=Path(args.checkpoint),
        output_topic=args.output_topic, watermark=args.watermark, trigger_interval=args.trigger_interval,
        available_now=args.available_now, starting_offsets=args.starting_offsets,
        max_offsets_per_trigger=args.max_offsets_per_trigger, shuffle_partitions=args.shuffle_partitions,
    )
