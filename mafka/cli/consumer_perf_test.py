"""``mafka consumer-perf-test``: Kafka 2.8's ``kafka-consumer-perf-test.sh`` (``ConsumerPerformance``)
on :class:`mafka.client.Consumer`.

Flags are Kafka's: ``--bootstrap-server H:P (or the deprecated --broker-list) --topic T
--messages N [--group G (default perf-consumer-<n>)] [--fetch-size B (max.partition.fetch.bytes,
default 1 MiB)] [--from-latest] [--timeout MS (default 10000: the longest wait between
records)] [--show-detailed-stats] [--reporting-interval MS (default 5000)] [--date-format F]
[--hide-header] [--print-metrics] [--consumer.config FILE]``; ``--threads``,
``--num-fetch-threads`` and ``--socket-buffer-size`` are accepted and ignored, as Kafka
2.8 ignores them.

The consumer subscribes to the topic in the group (``auto.offset.reset`` earliest, or
latest with ``--from-latest``) and polls (100 ms) until it has read ``--messages``
records — every record of a poll counts, so it can read a few more — or no record came
for ``--timeout`` ms (then Kafka's ``WARNING: Exiting before consuming the expected
number of messages`` line).  Bytes are keys plus values.  Output, as Kafka's:

* the header (unless ``--hide-header``)
  ``start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec,
  rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec``
  (``time, threadId, …`` with ``--show-detailed-stats``);
* without ``--show-detailed-stats`` one line at the end,
  ``%s, %s, %.4f, %.4f, %d, %.4f, %d, %d, %.4f, %.4f``: start and end (``--date-format``,
  Java's SimpleDateFormat, default ``yyyy-MM-dd HH:mm:ss:SSS``), MB read, MB/s, records,
  records/s, the time spent joining the group, the rest (fetch time) and the rates over it;
* with ``--show-detailed-stats`` a line per reporting interval instead.

One deliberate difference: Kafka 2.8 measures the first rebalance from the epoch (its
``joinStart`` starts at 0, so ``rebalance.time.ms`` shows a date and ``fetch.time.ms``
goes negative); here it is measured from the subscription.  ``--print-metrics`` prints
Kafka's metrics table with the consumer metrics this tool measures itself (Mafka's
consumer has no metrics registry).
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from datetime import datetime
from typing import Any

from mafka.cli.clients import client_settings, java_double, load_properties
from mafka.cli.producer_perf_test import print_metrics
from mafka.client.consumer import Consumer

__all__ = ["add_parser", "run", "header", "java_date_format", "summary_line", "progress_line", "PerfStats"]

DEFAULT_DATE_FORMAT = "yyyy-MM-dd HH:mm:ss:SSS"
_MB = 1024.0 * 1024.0


def add_parser(sub: Any) -> None:
    p = sub.add_parser("consumer-perf-test", help="measure consumer throughput (kafka-consumer-perf-test)")
    p.add_argument("--bootstrap-server", metavar="HOST:PORT", help="REQUIRED unless --broker-list is given")
    p.add_argument("--broker-list", metavar="HOST:PORT", help="DEPRECATED, use --bootstrap-server")
    p.add_argument("--topic", help="REQUIRED: the topic to consume from")
    p.add_argument("--messages", type=int, help="REQUIRED: the number of messages to consume")
    p.add_argument("--group", default=None, help="the group id to consume on (default perf-consumer-<n>)")
    p.add_argument("--fetch-size", type=int, default=1024 * 1024, help="bytes to fetch per partition and request")
    p.add_argument("--from-latest", action="store_true",
                   help="without a committed offset, start at the latest record rather than the earliest")
    p.add_argument("--socket-buffer-size", type=int, default=2 * 1024 * 1024, help="ignored (Kafka's)")
    p.add_argument("--threads", type=int, default=10, help="ignored (Kafka's)")
    p.add_argument("--num-fetch-threads", type=int, default=1, help="ignored (Kafka's)")
    p.add_argument("--consumer.config", dest="consumer_config", metavar="FILE", help="consumer config properties file")
    p.add_argument("--print-metrics", action="store_true", help="print out the metrics")
    p.add_argument("--show-detailed-stats", action="store_true",
                   help="report stats for each reporting interval instead of once at the end")
    p.add_argument("--timeout", type=int, default=10000, help="the longest wait between records, ms")
    p.add_argument("--reporting-interval", type=int, default=5000, help="ms between --show-detailed-stats lines")
    p.add_argument("--date-format", default=DEFAULT_DATE_FORMAT, help="Java SimpleDateFormat of the time fields")
    p.add_argument("--hide-header", action="store_true", help="do not print the header line")
    p.set_defaults(func=run)


# --------------------------------------------------------------------------- formatting


def header(detailed: bool) -> str:
    """Kafka's ``printHeader``."""
    extra = ", rebalance.time.ms, fetch.time.ms, fetch.MB.sec, fetch.nMsg.sec"
    if not detailed:
        return "start.time, end.time, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec" + extra
    return "time, threadId, data.consumed.in.MB, MB.sec, data.consumed.in.nMsg, nMsg.sec" + extra


_JAVA_FIELDS = {
    "yyyy": "%Y", "yy": "%y", "MM": "%m", "dd": "%d", "HH": "%H", "hh": "%I", "mm": "%M", "ss": "%S",
    "a": "%p", "EEE": "%a", "MMM": "%b",
}


def java_date_format(pattern: str, epoch_ms: int) -> str:
    """``new SimpleDateFormat(pattern).format(epoch_ms)`` (local time) for the usual letters:
    ``yyyy yy MMM MM dd HH hh mm ss SSS a EEE`` and ``'quoted'`` text; other text is kept."""
    when = datetime.fromtimestamp(epoch_ms / 1000.0)
    out = []
    i = 0
    while i < len(pattern):
        c = pattern[i]
        if c == "'":
            end = pattern.find("'", i + 1)
            end = len(pattern) if end < 0 else end
            out.append("'" if end == i + 1 else pattern[i + 1:end])
            i = end + 1
            continue
        if c.isalpha():
            j = i
            while j < len(pattern) and pattern[j] == c:
                j += 1
            run = pattern[i:j]
            if c == "S":
                out.append(f"{epoch_ms % 1000:0{len(run)}d}"[: max(3, len(run))])
            elif run in _JAVA_FIELDS:
                out.append(when.strftime(_JAVA_FIELDS[run]))
            else:
                out.append(run)
            i = j
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _rate(amount: float, ms: float) -> float:
    """``amount / (ms / 1000.0)`` with Java's doubles (Infinity / NaN on zero)."""
    seconds = ms / 1000.0
    if seconds == 0:
        return float("nan") if amount == 0 else float("inf")
    return amount / seconds


def summary_line(date_format: str, start_ms: int, end_ms: int, total_bytes: int, messages: int,
                 join_ms: int) -> str:
    """Kafka's final line: ``%s, %s, %.4f, %.4f, %d, %.4f, %d, %d, %.4f, %.4f``."""
    elapsed_ms = end_ms - start_ms
    fetch_ms = elapsed_ms - join_ms
    mb = total_bytes / _MB
    return ", ".join([
        java_date_format(date_format, start_ms),
        java_date_format(date_format, end_ms),
        f"{mb:.4f}",
        java_double(_rate(mb, elapsed_ms), "%.4f"),
        str(messages),
        java_double(_rate(messages, elapsed_ms), "%.4f"),
        str(join_ms),
        str(fetch_ms),
        java_double(_rate(mb, fetch_ms), "%.4f"),
        java_double(_rate(messages, fetch_ms), "%.4f"),
    ])


def progress_line(date_format: str, bytes_read: int, last_bytes: int, messages: int, last_messages: int,
                  start_ms: int, end_ms: int, join_ms: int) -> str:
    """Kafka's ``printConsumerProgress`` (thread id 0): the interval's rates, then its fetch-only rates."""
    elapsed = float(end_ms - start_ms)
    total_mb = bytes_read / _MB
    interval_mb = (bytes_read - last_bytes) / _MB
    basic = (f"{java_date_format(date_format, end_ms)}, 0, {total_mb:.4f}, "
             f"{java_double(_rate(interval_mb, elapsed), '%.4f')}, {messages}, "
             f"{java_double(_rate(messages - last_messages, elapsed), '%.4f')}")
    fetch_ms = end_ms - start_ms - join_ms
    if fetch_ms <= 0:
        mb_sec, msg_sec = 0.0, 0.0
    else:
        mb_sec, msg_sec = 1000.0 * interval_mb / fetch_ms, 1000.0 * (messages - last_messages) / fetch_ms
    return f"{basic}, {join_ms}, {fetch_ms}, {mb_sec:.4f}, {msg_sec:.4f}"


# --------------------------------------------------------------------------- the test


def _now_ms() -> int:
    return int(time.time() * 1000)


class PerfStats:
    """What ``consume`` counts: records, bytes, and the time spent (re)joining the group."""

    def __init__(self) -> None:
        self.messages = 0
        self.bytes = 0
        self.join_ms = 0
        self.join_round_ms = 0
        self.join_start = _now_ms()

    def on_assign(self, consumer: Any, partitions: Any) -> None:
        took = _now_ms() - self.join_start
        self.join_ms += took
        self.join_round_ms += took

    def on_revoke(self, consumer: Any, partitions: Any) -> None:
        self.join_start = _now_ms()


def consume(consumer: Any, topic: str, count: int, timeout_ms: int, args: argparse.Namespace,
            stats: PerfStats) -> None:
    """Kafka's ``consume``: poll (100 ms) until ``count`` records or ``timeout_ms`` without one."""
    last_bytes = last_messages = 0
    stats.join_start = _now_ms()
    consumer.subscribe([topic], on_assign=stats.on_assign, on_revoke=stats.on_revoke)
    now = _now_ms()
    last_report = last_consumed = now
    while stats.messages < count and now - last_consumed <= timeout_ms:
        records = consumer.consume(500, 0.1)
        now = _now_ms()
        if records:
            last_consumed = now
        for msg in records:
            if msg.error() is not None:
                continue
            stats.messages += 1
            key, value = msg.key(), msg.value()
            stats.bytes += (len(key) if key is not None else 0) + (len(value) if value is not None else 0)
            if now - last_report >= args.reporting_interval:
                if args.show_detailed_stats:
                    print(progress_line(args.date_format, stats.bytes, last_bytes, stats.messages, last_messages,
                                        last_report, now, stats.join_round_ms), flush=True)
                stats.join_round_ms = 0
                last_report = now
                last_messages = stats.messages
                last_bytes = stats.bytes
    if stats.messages < count:
        print(f"WARNING: Exiting before consuming the expected number of messages: timeout ({timeout_ms} ms) "
              "exceeded. You can use the --timeout option to increase the timeout.", flush=True)


def consumer_config(args: argparse.Namespace, bootstrap: str) -> dict[str, Any]:
    """Kafka's ``ConsumerPerfConfig.props``: the config file, then the flags (which win)."""
    props: dict[str, Any] = load_properties(args.consumer_config) if args.consumer_config else {}
    group = args.group or f"perf-consumer-{random.randrange(100000)}"
    conf = client_settings(props, "consumer")
    conf.update({
        "bootstrap.servers": bootstrap,
        "group.id": group,
        "max.partition.fetch.bytes": args.fetch_size,
        "auto.offset.reset": "latest" if args.from_latest else "earliest",
        "check.crcs": False,
    })
    conf.setdefault("client.id", f"consumer-{group}-1")
    return conf


def run(args: argparse.Namespace) -> int:
    bootstrap = args.bootstrap_server or args.broker_list
    missing = [name for name, value in (("bootstrap-server", bootstrap), ("topic", args.topic),
                                        ("messages", args.messages)) if value is None]
    if missing:
        print(f"Missing required argument \"[{missing[0]}]\"", file=sys.stderr)
        return 1
    if args.reporting_interval <= 0:
        print('Exception in thread "main" java.lang.IllegalArgumentException: '
              "Reporting interval must be greater than 0.", file=sys.stderr)
        return 1
    try:
        conf = consumer_config(args, bootstrap)
        consumer = Consumer(conf)
    except (ValueError, OSError) as exc:
        print(f'Exception in thread "main" org.apache.kafka.common.config.ConfigException: {exc}', file=sys.stderr)
        return 1
    if not args.hide_header:
        print(header(args.show_detailed_stats), flush=True)
    stats = PerfStats()
    try:
        start_ms = _now_ms()
        consume(consumer, args.topic, args.messages, args.timeout, args, stats)
        end_ms = _now_ms()
    except KeyboardInterrupt:
        consumer.close()
        return 1
    consumer.close()
    if not args.show_detailed_stats:
        print(summary_line(args.date_format, start_ms, end_ms, stats.bytes, stats.messages, stats.join_ms),
              flush=True)
    if args.print_metrics:
        elapsed_s = (end_ms - start_ms) / 1000.0
        tags = f"{{client-id={conf['client.id']}}}"
        group = "consumer-fetch-manager-metrics"
        print_metrics({
            f"{group}:records-consumed-total:{tags}": float(stats.messages),
            f"{group}:bytes-consumed-total:{tags}": float(stats.bytes),
            f"{group}:records-consumed-rate:{tags}": _rate(stats.messages, elapsed_s * 1000),
            f"{group}:bytes-consumed-rate:{tags}": _rate(stats.bytes, elapsed_s * 1000),
            f"consumer-coordinator-metrics:rebalance-latency-total:{tags}": float(stats.join_ms),
        })
    return 0
