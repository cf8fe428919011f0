"""``mafka console-consumer``: Kafka's ``kafka-console-consumer.sh`` for Mafka, on :class:`mafka.client.Consumer`.

Two modes, as Kafka 2.8's ``ConsoleConsumer``:

* ``--partition P [--offset earliest|latest|N]``: assigns that partition of
  ``--topic`` (no group) and starts at the offset (``latest`` unless
  ``--from-beginning``);
* otherwise subscribes to ``--topic`` in ``--group`` (or ``group.id`` from
  ``--consumer-property`` / ``--consumer.config``); without one, in a fresh
  ``console-consumer-<n>`` group that commits nothing (Kafka's
  ``enable.auto.commit=false`` for the generated group).  Where a group has no
  committed offset the consumer starts at the latest offset, or the earliest
  with ``--from-beginning`` (``auto.offset.reset``).

Records print with Kafka's DefaultMessageFormatter (``print.timestamp``,
``print.partition``, ``print.offset``, ``print.headers``, ``print.key``,
``print.value``, ``key.separator`` (TAB), ``line.separator`` (newline),
``headers.separator`` (``,``), ``null.literal`` (``null``)).  Stops after
``--max-messages``, after ``--timeout-ms`` without a record, on an error from
the consumer, or on Ctrl-C, and then prints ``Processed a total of N
messages`` on stderr.  As in Kafka, a timeout or a consumer error ends the run
with status 0 after an ``ERROR Error processing message, terminating consumer
process`` line; argument errors, a partition that does not exist and a topic
whose metadata never comes exit with 1.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from typing import Any, BinaryIO

from mafka.cli.clients import (
    client_settings,
    error_text,
    java_exception,
    load_properties,
    log_line,
    parse_properties,
)
from mafka.client.consumer import Consumer
from mafka.client.kafka_error import KafkaError, KafkaException
from mafka.client.message import (
    OFFSET_BEGINNING,
    OFFSET_END,
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    Message,
    TopicPartition,
)
from mafka.wire.apis.list_offsets import EARLIEST_TIMESTAMP as EARLIEST
from mafka.wire.apis.list_offsets import LATEST_TIMESTAMP as LATEST

__all__ = ["add_parser", "run", "Formatter", "parse_offset", "check_args", "consumer_config"]

_LOGGER = "kafka.tools.ConsoleConsumer$"
_TIMESTAMP_TYPES = {TIMESTAMP_CREATE_TIME: "CreateTime", TIMESTAMP_LOG_APPEND_TIME: "LogAppendTime"}


def add_parser(sub: Any) -> None:
    p = sub.add_parser("console-consumer", help="print a topic's records (kafka-console-consumer)")
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT")
    p.add_argument("--topic", required=True)
    p.add_argument("--group", help="the consumer group to subscribe in")
    p.add_argument("--from-beginning", action="store_true")
    p.add_argument("--partition", type=int)
    p.add_argument("--offset", default=None, help="earliest, latest or a non-negative number (needs --partition)")
    p.add_argument("--max-messages", type=int)
    p.add_argument("--timeout-ms", type=int)
    p.add_argument("--property", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--consumer-property", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--consumer.config", dest="consumer_config", metavar="FILE",
                   help="consumer config properties file (--consumer-property wins)")
    p.add_argument("--isolation-level", default=None, choices=["read_committed", "read_uncommitted"])
    p.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the cluster")
    p.set_defaults(func=run)


def parse_offset(text: str | None, from_beginning: bool) -> int:
    """``--offset`` → an absolute offset, or EARLIEST (-2) / LATEST (-1)."""
    if text is None:
        return EARLIEST if from_beginning else LATEST
    if text.lower() == "earliest":
        return EARLIEST
    if text.lower() == "latest":
        return LATEST
    try:
        value = int(text)
    except ValueError:
        value = -1
    if value < 0:
        raise ValueError(f"The provided offset value '{text}' is incorrect. Valid values are 'earliest', 'latest', or a non-negative long.")
    return value


def check_args(args: argparse.Namespace) -> int:
    """The starting offset (or EARLIEST/LATEST); raises ValueError with Kafka's messages."""
    if args.offset is not None and args.partition is None:
        raise ValueError("The partition is required when offset is specified.")
    if args.offset is not None and args.from_beginning:
        raise ValueError("Options from-beginning and offset cannot be specified together.")
    return parse_offset(args.offset, args.from_beginning)


def consumer_config(args: argparse.Namespace, rng: random.Random | None = None) -> dict[str, Any]:
    """The :class:`~mafka.client.Consumer` configuration (Kafka's ``consumerProps`` and group rules).

    Raises:
        ValueError: group ids that disagree, a group with ``--partition``, a
            ``--from-beginning`` that contradicts ``auto.offset.reset``, a bad property.
    """
    props: dict[str, Any] = load_properties(args.consumer_config) if args.consumer_config else {}
    extra = parse_properties(args.consumer_property)
    groups = list(dict.fromkeys(g for g in (args.group, extra.get("group.id"), props.get("group.id")) if g))
    if len(groups) > 1:
        raise ValueError("The group ids provided in different places (directly using '--group', via "
                         "'--consumer-property', or via '--consumer.config') do not match. Detected group ids: "
                         + ", ".join(f"'{g}'" for g in groups))
    if groups and args.partition is not None:
        raise ValueError("Options group and partition cannot be specified together.")
    props.update(extra)
    reset = props.get("auto.offset.reset")
    if reset is not None and args.from_beginning and reset != "earliest":
        raise ValueError(f"Can't simultaneously specify --from-beginning and 'auto.offset.reset={reset}', "
                         "please remove one option")
    conf: dict[str, Any] = {
        "client.id": "console-consumer",
        "allow.auto.create.topics": True,  # as the Java consumer against a broker that creates topics
        "isolation.level": "read_uncommitted",
    }
    conf.update(client_settings(props, "consumer"))
    conf["bootstrap.servers"] = args.bootstrap_server
    conf.setdefault("auto.offset.reset", "earliest" if args.from_beginning else "latest")
    if args.isolation_level is not None:
        conf["isolation.level"] = args.isolation_level
    conf.pop("group.id", None)
    if groups:
        conf["group.id"] = groups[0]
    elif args.partition is None:
        conf["group.id"] = f"console-consumer-{(rng or random.Random()).randrange(100000)}"
        conf.setdefault("enable.auto.commit", False)
    return conf


class Formatter:
    """Kafka's DefaultMessageFormatter."""

    def __init__(self, props: dict[str, str]) -> None:
        def flag(name: str, default: bool) -> bool:
            return props.get(name, str(default)).strip().lower() == "true"

        self.print_timestamp = flag("print.timestamp", False)
        self.print_partition = flag("print.partition", False)
        self.print_offset = flag("print.offset", False)
        self.print_headers = flag("print.headers", False)
        self.print_key = flag("print.key", False)
        self.print_value = flag("print.value", True)
        self.key_separator = _unescape(props.get("key.separator", "\t")).encode()
        self.line_separator = _unescape(props.get("line.separator", "\n")).encode()
        self.headers_separator = _unescape(props.get("headers.separator", ",")).encode()
        self.null_literal = props.get("null.literal", "null").encode()

    def format(self, msg: Message) -> bytes:
        """One consumed record as Kafka prints it (``print.*`` columns in Kafka's order)."""
        columns = []
        if self.print_timestamp:
            ts_type, ts = msg.timestamp()
            kind = _TIMESTAMP_TYPES.get(ts_type)
            columns.append(b"NO_TIMESTAMP" if kind is None else f"{kind}:{ts}".encode())
        if self.print_partition:
            columns.append(f"Partition:{msg.partition()}".encode())
        if self.print_offset:
            columns.append(f"Offset:{msg.offset()}".encode())
        if self.print_headers:
            headers = msg.headers()
            if headers:
                columns.append(self.headers_separator.join(
                    k.encode() + b":" + (self.null_literal if v is None else v) for k, v in headers
                ))
            else:
                columns.append(b"NO_HEADERS")
        if self.print_key:
            key = msg.key()
            columns.append(self.null_literal if key is None else key)
        if self.print_value:
            value = msg.value()
            columns.append(self.null_literal if value is None else value)
        if not columns:
            return b""
        return self.key_separator.join(columns) + self.line_separator


def _unescape(text: str) -> str:
    return text.encode().decode("unicode_escape") if "\\" in text else text


class ConsumeError(Exception):
    """The consumer reported an error: Kafka's console consumer logs it and stops."""

    def __init__(self, error: KafkaError) -> None:
        super().__init__(error)
        self.error = error


class Progress:
    """How many records were printed (for ``Processed a total of N messages``, even after Ctrl-C)."""

    count = 0


def consume(consumer: Any, formatter: Formatter, output: BinaryIO, max_messages: int | None,
            timeout_ms: int | None, progress: Progress | None = None) -> tuple[int, bool]:
    """Prints records until done; (messages printed, whether it stopped on the timeout).

    ``consumer`` is a :class:`~mafka.client.Consumer` (``consume(n, timeout)``); it is never
    asked for more records than are still to be printed, so a group commits no record that
    was not printed.

    Raises:
        ConsumeError: an error event from the consumer.
    """
    progress = progress if progress is not None else Progress()
    last = time.monotonic()
    while max_messages is None or progress.count < max_messages:
        wait = 0.5
        if timeout_ms is not None:
            wait = max(0.0, min(wait, timeout_ms / 1000 - (time.monotonic() - last)))
        want = 500 if max_messages is None else min(500, max_messages - progress.count)
        got = False
        for msg in consumer.consume(want, wait):
            err = msg.error()
            if err is not None:
                if err.code() == KafkaError._PARTITION_EOF:
                    continue
                raise ConsumeError(err)
            output.write(formatter.format(msg))
            progress.count += 1
            got = True
        if got:
            output.flush()
            last = time.monotonic()
        elif timeout_ms is not None and (time.monotonic() - last) * 1000 >= timeout_ms:
            return progress.count, True
    return progress.count, False


def _terminating(detail: str) -> None:
    print(log_line("ERROR", "Error processing message, terminating consumer process: ", _LOGGER) + "\n" + detail,
          file=sys.stderr)


def _wait_for_partition(consumer: Consumer, topic: str, partition: int, timeout: float) -> None:
    """Waits (bounded) until ``topic`` is in the metadata; ValueError if it lacks ``partition``."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            md = consumer.list_topics(topic, timeout=max(0.1, min(5.0, deadline - time.monotonic())))
            t = md.topics.get(topic)
            if t is not None and t.error is None and t.partitions:
                if partition not in t.partitions:
                    raise ValueError(f"Partition {partition} of topic {topic} does not exist.")
                return
        except KafkaException:
            pass
        if time.monotonic() >= deadline:
            raise TimeoutError(f"Topic {topic} not present in metadata after {timeout * 1000:.0f} ms.")
        time.sleep(0.1)


def run(args: argparse.Namespace, output: BinaryIO | None = None) -> int:
    output = sys.stdout.buffer if output is None else output
    try:
        start = check_args(args)
        formatter = Formatter(parse_properties(args.property))
        conf = consumer_config(args)
    except (ValueError, OSError) as exc:
        print(str(exc), file=sys.stderr)
        return 1
    progress = Progress()
    rc = 0
    consumer: Consumer | None = None
    try:
        consumer = Consumer(conf)
        if args.partition is not None:
            _wait_for_partition(consumer, args.topic, args.partition, args.timeout)
            offset = {EARLIEST: OFFSET_BEGINNING, LATEST: OFFSET_END}.get(start, start)
            consumer.assign([TopicPartition(args.topic, args.partition, offset)])
        else:
            consumer.subscribe([args.topic])
        _, timed_out = consume(consumer, formatter, output, args.max_messages, args.timeout_ms, progress)
        if timed_out:
            _terminating("org.apache.kafka.common.errors.TimeoutException")
    except KeyboardInterrupt:
        pass
    except ConsumeError as exc:
        _terminating(java_exception(exc.error.code(), error_text(exc.error)))
    except (TimeoutError, ValueError) as exc:
        print(f"ERROR {exc}", file=sys.stderr)
        rc = 1
    finally:
        try:
            output.flush()
        except (OSError, ValueError):
            pass
        if consumer is not None:
            consumer.close()
    print(f"Processed a total of {progress.count} messages", file=sys.stderr)
    return rc
