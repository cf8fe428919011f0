"""``mafka producer-perf-test``: Kafka 2.8's ``kafka-producer-perf-test.sh`` (``ProducerPerformance``)
on :class:`mafka.client.Producer`.

Flags are Kafka's: ``--topic T --num-records N (--record-size B | --payload-file F
[--payload-delimiter D]) --throughput R (-1: unlimited) (--producer-props k=v … |
--producer.config FILE) [--print-metrics]`` (``--transactional-id`` and
``--transaction-duration-ms`` are accepted; transactions themselves are not
supported by Mafka's producer yet, so a positive duration is refused).  The
producer's ``bootstrap.servers`` comes from the properties, as in Kafka;
``client.id`` defaults to ``perf-producer-client``.

What it measures, as Kafka 2.8 does:

* each record's latency is the time from its ``produce()`` to its delivery
  callback, in whole milliseconds; every record counts (a failed one too, its
  error printed on stderr), and one record in ``num_records // min(num_records,
  500000)`` is kept for the percentiles;
* every 5 s (checked when a record completes) a window line
  ``%d records sent, %.1f records/sec (%.2f MB/sec), %.1f ms avg latency, %.1f ms max latency.``;
* after all records are sent and the producer flushed and closed, the total line
  ``%d records sent, %f records/sec (%.2f MB/sec), %.2f ms avg latency, %.2f ms max
  latency, %d ms 50th, %d ms 95th, %d ms 99th, %d ms 99.9th.``, timed from the start;
* ``--throughput`` throttles with Kafka's ``ThroughputThrottler``: once the rate so
  far is above the target, sleep ``1/target`` s per record, in sleeps of at least
  2 ms (deficits accumulate).  Delivery callbacks are served while it sleeps.

The payload of ``--record-size`` is one random run of uppercase letters, made once;
with ``--payload-file`` each record takes a random one of the file's payloads.
``--print-metrics`` prints Kafka's metrics table (``ToolsUtils.printMetrics``) with
the producer metrics this tool can measure itself: Mafka's producer has no metrics
registry.

Kafka's lines above go to stdout, exactly as Kafka prints them; the records completed
so far of ``--num-records`` show on stderr meanwhile (:mod:`mafka.cli.progress`: a bar
on a terminal, else a line a second at most and
``producer-perf-test: 5000/5000 records sent (100%) in 2.1 s`` at the end).
"""

from __future__ import annotations

import argparse
import os
import random
import re
import sys
import time
from collections.abc import Callable
from typing import Any

from mafka.cli.clients import (
    client_settings,
    error_text,
    java_double,
    java_exception,
    load_properties,
)
from mafka.cli.progress import progress
from mafka.client.kafka_error import KafkaError, KafkaException
from mafka.client.producer import Producer

__all__ = ["add_parser", "run", "Stats", "ThroughputThrottler", "percentiles", "read_payloads", "print_metrics"]

REPORTING_INTERVAL_MS = 5000
DEFAULT_CLIENT_ID = "perf-producer-client"


def add_parser(sub: Any) -> None:
    p = sub.add_parser("producer-perf-test", help="measure producer throughput and latency (kafka-producer-perf-test)")
    p.add_argument("--topic", required=True, metavar="TOPIC", help="produce messages to this topic")
    p.add_argument("--num-records", required=True, type=int, metavar="NUM-RECORDS",
                   help="number of messages to produce")
    payload = p.add_mutually_exclusive_group(required=True)
    payload.add_argument("--record-size", type=int, metavar="RECORD-SIZE", help="message size in bytes")
    payload.add_argument("--payload-file", metavar="PAYLOAD-FILE",
                         help="UTF-8 file of payloads, one picked at random per message")
    p.add_argument("--payload-delimiter", default="\\n", metavar="PAYLOAD-DELIMITER",
                   help="delimiter of the payloads in --payload-file (default: new line)")
    p.add_argument("--throughput", required=True, type=float, metavar="THROUGHPUT",
                   help="throttle to approximately THROUGHPUT messages/sec; -1 disables throttling")
    p.add_argument("--producer-props", nargs="+", metavar="PROP-NAME=PROP-VALUE",
                   help="producer configuration (bootstrap.servers, acks …); wins over --producer.config")
    p.add_argument("--producer.config", dest="producer_config", metavar="CONFIG-FILE",
                   help="producer config properties file")
    p.add_argument("--print-metrics", action="store_true", help="print out metrics at the end of the test")
    p.add_argument("--transactional-id", default="performance-producer-default-transactional-id",
                   metavar="TRANSACTIONAL-ID")
    p.add_argument("--transaction-duration-ms", type=int, default=0, metavar="TRANSACTION-DURATION")
    p.set_defaults(func=run)


# --------------------------------------------------------------------------- measurement


def _now_ms() -> int:
    return int(time.time() * 1000)


def percentiles(latencies: list[int], count: int, *ps: float) -> list[int]:
    """Kafka's ``Stats.percentiles``: sorts the first ``count`` samples, takes ``int(p * size)``."""
    size = min(count, len(latencies))
    ordered = sorted(latencies[:size])
    if not ordered:
        return [0 for _ in ps]
    return [ordered[int(p * size)] for p in ps]


class Stats:
    """Kafka 2.8's ``ProducerPerformance.Stats``: totals, the 5-second window, sampled latencies."""

    def __init__(self, num_records: int, reporting_interval_ms: int = REPORTING_INTERVAL_MS,
                 clock: Callable[[], int] = _now_ms, out: Any = None) -> None:
        self.clock = clock
        self.out = out
        self.start = clock()
        self.window_start = self.start
        self.sampling = num_records // min(num_records, 500000)
        self.latencies: list[int] = [0] * (num_records // self.sampling + 1)
        self.index = 0
        self.iteration = 0
        self.count = 0
        self.bytes = 0
        self.max_latency = 0
        self.total_latency = 0
        self.window_count = 0
        self.window_max_latency = 0
        self.window_total_latency = 0
        self.window_bytes = 0
        self.reporting_interval = reporting_interval_ms
        self.errors = 0

    def next_iteration(self) -> int:
        """The number of the record about to be sent (Kafka's ``nextCompletion``)."""
        i = self.iteration
        self.iteration += 1
        return i

    def record(self, iteration: int, latency: int, size: int, now: int) -> None:
        self.count += 1
        self.bytes += size
        self.total_latency += latency
        self.max_latency = max(self.max_latency, latency)
        self.window_count += 1
        self.window_bytes += size
        self.window_total_latency += latency
        self.window_max_latency = max(self.window_max_latency, latency)
        if iteration % self.sampling == 0 and self.index < len(self.latencies):
            self.latencies[self.index] = latency
            self.index += 1
        if now - self.window_start >= self.reporting_interval:
            self.print_window()
            self.new_window()

    def _print(self, line: str) -> None:
        print(line, file=self.out if self.out is not None else sys.stdout, flush=True)

    def window_line(self) -> str:
        elapsed = self.clock() - self.window_start
        recs_per_sec = _div(1000.0 * self.window_count, elapsed)
        mb_per_sec = _div(1000.0 * self.window_bytes, elapsed) / (1024.0 * 1024.0)
        return (f"{self.window_count} records sent, {java_double(recs_per_sec, '%.1f')} records/sec "
                f"({java_double(mb_per_sec, '%.2f')} MB/sec), "
                f"{java_double(_div(self.window_total_latency, self.window_count), '%.1f')} ms avg latency, "
                f"{float(self.window_max_latency):.1f} ms max latency.")

    def print_window(self) -> None:
        self._print(self.window_line())

    def new_window(self) -> None:
        self.window_start = self.clock()
        self.window_count = 0
        self.window_max_latency = 0
        self.window_total_latency = 0
        self.window_bytes = 0

    def total_line(self) -> str:
        elapsed = self.clock() - self.start
        recs_per_sec = _div(1000.0 * self.count, elapsed)
        mb_per_sec = _div(1000.0 * self.bytes, elapsed) / (1024.0 * 1024.0)
        p50, p95, p99, p999 = percentiles(self.latencies, self.index, 0.5, 0.95, 0.99, 0.999)
        return (f"{self.count} records sent, {java_double(recs_per_sec, '%f')} records/sec "
                f"({java_double(mb_per_sec, '%.2f')} MB/sec), "
                f"{java_double(_div(self.total_latency, self.count), '%.2f')} ms avg latency, "
                f"{float(self.max_latency):.2f} ms max latency, "
                f"{p50} ms 50th, {p95} ms 95th, {p99} ms 99th, {p999} ms 99.9th.")

    def print_total(self) -> None:
        self._print(self.total_line())


def _div(a: float, b: float) -> float:
    """Java's double division: x/0 is ±Infinity, 0/0 is NaN."""
    if b == 0:
        return float("nan") if a == 0 else (float("inf") if a > 0 else float("-inf"))
    return a / b


class ThroughputThrottler:
    """Kafka's ``ThroughputThrottler`` (``sleep`` is how it waits; 0 target waits forever in Kafka,
    here it is treated as unlimited)."""

    MIN_SLEEP_NS = 2_000_000

    def __init__(self, target_throughput: float, start_ms: int, sleep: Callable[[float], None] = time.sleep) -> None:
        self.start_ms = start_ms
        self.target = target_throughput
        self.sleep_time_ns = int(1_000_000_000 / target_throughput) if target_throughput > 0 else None
        self.sleep_deficit_ns = 0
        self.sleep = sleep

    def should_throttle(self, amount_so_far: int, send_start_ms: int) -> bool:
        if self.target <= 0:
            return False
        elapsed_sec = (send_start_ms - self.start_ms) / 1000.0
        return elapsed_sec > 0 and (amount_so_far / elapsed_sec) > self.target

    def throttle(self) -> None:
        if self.sleep_time_ns is None:
            return
        self.sleep_deficit_ns += self.sleep_time_ns
        if self.sleep_deficit_ns >= self.MIN_SLEEP_NS:
            started = time.monotonic_ns()
            remaining = self.sleep_deficit_ns
            while remaining > 0:
                self.sleep(remaining / 1e9)
                remaining = self.sleep_deficit_ns - (time.monotonic_ns() - started)
            self.sleep_deficit_ns = 0


# --------------------------------------------------------------------------- inputs


class UsageError(Exception):
    """Kafka's ``ArgumentParserException``: the message on stderr, status 1."""


def read_payloads(path: str, delimiter: str) -> list[bytes]:
    """Kafka's ``--payload-file``: the file's UTF-8 text split at ``delimiter`` (a regex, as Java's Scanner)."""
    print(f"Reading payloads from: {os.path.abspath(path)}")
    if not os.path.exists(path) or os.path.getsize(path) == 0:
        raise ValueError("File does not exist or empty file provided.")
    with open(path, encoding="utf-8") as f:
        text = f.read()
    tokens = re.split(delimiter, text)
    if tokens and tokens[0] == "":
        tokens = tokens[1:]
    if tokens and tokens[-1] == "":
        tokens = tokens[:-1]
    payloads = [t.encode("utf-8") for t in tokens]
    print(f"Number of messages read: {len(payloads)}")
    return payloads


def read_props(producer_props: list[str] | None, config_file: str | None) -> dict[str, str]:
    """Kafka's ``readProps``: the file, then ``--producer-props`` (each exactly ``name=value``)."""
    props: dict[str, str] = load_properties(config_file) if config_file else {}
    for prop in producer_props or []:
        pieces = prop.split("=")
        if len(pieces) != 2:
            raise ValueError(f"Invalid property: {prop}")
        props[pieces[0]] = pieces[1]
    props.setdefault("client.id", DEFAULT_CLIENT_ID)
    return props


def print_metrics(metrics: dict[str, float], out: Any = None) -> None:
    """Kafka's ``ToolsUtils.printMetrics``: a blank line, a header, ``name : %.3f`` rows sorted by name."""
    out = out if out is not None else sys.stdout
    if not metrics:
        return
    width = max(len(name) for name in metrics)
    print(f"\n{'Metric Name':<{width}}   Value", file=out)
    for name in sorted(metrics):
        print(f"{name:<{width}} : {java_double(metrics[name], '%.3f')}", file=out)


def producer_metrics(stats: Stats, client_id: str, elapsed_s: float, sizes: tuple[int, int]) -> dict[str, float]:
    """The producer metrics this tool measures, under the Java producer's names."""
    tags = f"{{client-id={client_id}}}"
    sent = stats.count - stats.errors
    total_size, max_size = sizes
    return {
        f"producer-metrics:record-send-total:{tags}": float(sent),
        f"producer-metrics:record-send-rate:{tags}": _div(sent, elapsed_s),
        f"producer-metrics:record-error-total:{tags}": float(stats.errors),
        f"producer-metrics:record-error-rate:{tags}": _div(stats.errors, elapsed_s),
        f"producer-metrics:record-size-avg:{tags}": _div(total_size, stats.iteration),
        f"producer-metrics:record-size-max:{tags}": float(max_size),
    }


# --------------------------------------------------------------------------- the test


def run(args: argparse.Namespace) -> int:
    try:
        if args.num_records <= 0:
            raise UsageError("--num-records should be greater than zero")
        if args.record_size is not None and args.record_size <= 0:
            raise UsageError("--record-size should be greater than zero")
        if args.producer_props is None and args.producer_config is None:
            raise UsageError("Either --producer-props or --producer.config must be specified.")
        if args.transaction_duration_ms > 0:
            raise UsageError("Transactions (--transaction-duration-ms) are not supported by Mafka's producer yet.")
        delimiter = "\n" if args.payload_delimiter == "\\n" else args.payload_delimiter
        payloads = read_payloads(args.payload_file, delimiter) if args.payload_file else []
        props = read_props(args.producer_props, args.producer_config)
    except UsageError as exc:
        print(f"usage: mafka producer-perf-test ...\nmafka producer-perf-test: error: {exc}", file=sys.stderr)
        return 1
    except (ValueError, OSError) as exc:
        print(f'Exception in thread "main" java.lang.IllegalArgumentException: {exc}', file=sys.stderr)
        return 1
    try:
        producer = Producer(client_settings(props, "producer"))
    except ValueError as exc:
        print(f'Exception in thread "main" org.apache.kafka.common.config.ConfigException: {exc}', file=sys.stderr)
        return 1
    try:
        return _run(args, producer, payloads, props["client.id"])
    except KeyboardInterrupt:
        return 1
    finally:
        producer.close()


def _run(args: argparse.Namespace, producer: Producer, payloads: list[bytes], client_id: str) -> int:
    rng = random.Random(0)
    payload = b""
    if args.record_size is not None:
        payload = bytes(rng.randrange(26) + 65 for _ in range(args.record_size))
    stats = Stats(args.num_records)
    start_ms = _now_ms()
    throttler = ThroughputThrottler(args.throughput, start_ms, sleep=lambda s: _serve_for(producer, s))
    sizes = [0, 0]

    def completion(iteration: int, sent_ms: int, size: int) -> Callable[[KafkaError | None, Any], None]:
        def done(err: KafkaError | None, msg: Any) -> None:
            now = _now_ms()
            stats.record(iteration, now - sent_ms, size, now)
            if err is not None:
                stats.errors += 1
                print(java_exception(err.code(), error_text(err)), file=sys.stderr)
        return done

    # Kafka's "records sent" are the records completed (acknowledged or failed): so is the progress.
    with progress("producer-perf-test", total=args.num_records, unit="records sent") as bar:
        for i in range(args.num_records):
            if payloads:
                payload = payloads[rng.randrange(len(payloads))]
            sizes[0] += len(payload)
            sizes[1] = max(sizes[1], len(payload))
            send_start = _now_ms()
            callback = completion(stats.next_iteration(), send_start, len(payload))
            while True:
                try:
                    producer.produce(args.topic, value=payload, on_delivery=callback)
                    break
                except BufferError:
                    producer.poll(0.05)
                except KafkaException as exc:  # refused at once (too large, no such topic): completes now
                    callback(exc.error, None)
                    break
            producer.poll(0)
            bar.update(stats.count)
            if throttler.should_throttle(i, send_start):
                throttler.throttle()
        while producer.flush(0.5):  # Kafka's flush() waits for them all; the bar moves meanwhile
            bar.update(stats.count)
        bar.update(stats.count)
    stats.print_total()
    if args.print_metrics:
        elapsed_s = (_now_ms() - stats.start) / 1000.0
        print_metrics(producer_metrics(stats, client_id, elapsed_s, (sizes[0], sizes[1])))
    return 0


def _serve_for(producer: Producer, seconds: float) -> None:
    """Sleeps ``seconds`` while serving delivery reports (so their latencies stay true)."""
    deadline = time.monotonic() + seconds
    while True:
        left = deadline - time.monotonic()
        if left <= 0:
            return
        producer.poll(left)
