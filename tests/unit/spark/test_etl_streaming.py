"""mafka.spark.etl_streaming without Spark: the flags, and how the job watches its queries."""

from __future__ import annotations

import argparse
import io
import json
import threading
from pathlib import Path

import pytest

from mafka.spark.etl import add_arguments
from mafka.spark.etl_streaming import job_of, watch


class FakeQuery:
    """A StreamingQuery: progress entries appear as batches end; it ends by itself after *batches*."""

    def __init__(self, batches: int, error: str | None = None) -> None:
        self.batches, self.error = batches, error
        self.looks = 0
        self.stopped = False
        self.recentProgress: list[dict] = []

    @property
    def isActive(self) -> bool:  # noqa: N802 - PySpark's name
        # Each look at isActive is one more batch ended (two batches a look: both must be printed).
        self.looks += 1
        done = len(self.recentProgress)
        for b in range(done, min(self.batches, done + 2)):
            self.recentProgress.append({"batchId": b, "numInputRows": 10 * b, "eventTime": {"watermark": "w"},
                                        "sources": [{"endOffset": json.dumps({"t": {"0": b}})}]})
        return not self.stopped and len(self.recentProgress) < self.batches

    def exception(self) -> str | None:
        return self.error if len(self.recentProgress) >= self.batches else None

    def stop(self) -> None:
        self.stopped = True


def parse(*argv: str) -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    add_arguments(parser)
    return parser.parse_args(["--bootstrap-server", "h:1", "--topic", "t", "--output", "out", *argv])


def test_every_batch_is_printed_once_in_order_and_the_job_ends_with_its_queries():
    out = io.StringIO()
    queries = {"parquet": FakeQuery(5), "topic": FakeQuery(3)}
    assert watch(queries, threading.Event(), out=out, poll_s=0) == 0
    lines = [json.loads(line) for line in out.getvalue().splitlines()]
    assert [(x["query"], x["batch"]) for x in lines if x["query"] == "parquet"] == [("parquet", b) for b in range(5)]
    assert [x["batch"] for x in lines if x["query"] == "topic"] == [0, 1, 2]
    assert lines[0]["end_offsets"] == ['{"t": {"0": 0}}'] and lines[0]["watermark"] == "w"


def test_a_failed_query_stops_the_others_and_the_status_is_1():
    queries = {"parquet": FakeQuery(2, error="boom"), "topic": FakeQuery(100)}
    assert watch(queries, threading.Event(), out=io.StringIO(), poll_s=0) == 1
    assert queries["topic"].stopped


def test_a_stop_request_stops_every_query_with_status_0():
    stop = threading.Event()
    stop.set()
    queries = {"parquet": FakeQuery(100)}
    assert watch(queries, stop, out=io.StringIO(), poll_s=0) == 0
    assert queries["parquet"].stopped


def test_the_streaming_flags_make_the_job_and_refuse_what_a_stream_cannot_do():
    job = job_of(parse("--streaming", "--checkpoint", "ck", "--watermark", "5 minutes", "--available-now",
                       "--shuffle-partitions", "4"))
    assert (job.checkpoint, job.output, job.watermark, job.available_now, job.shuffle_partitions) == (
        Path("ck"), Path("out"), "5 minutes", True, 4)
    assert job.starting_offsets == "earliest" and job.output_topic is None
    with pytest.raises(SystemExit, match="--checkpoint"):
        job_of(parse("--streaming"))
    with pytest.raises(SystemExit, match="--since/--until"):
        job_of(parse("--streaming", "--checkpoint", "ck", "--since", "today"))
