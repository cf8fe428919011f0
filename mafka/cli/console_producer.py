"""``mafka console-producer``: Kafka's ``kafka-console-producer.sh`` for Mafka, on :class:`mafka.client.Producer`.

Reads stdin, one record per line, and produces the lines to ``--topic``.
With ``--property parse.key=true`` each line is ``key<sep>value`` (separator
``key.separator``, default TAB).  The producer batches per partition
(``linger.ms``); whatever is queued is flushed whenever input pauses and at
the end.  Partitioning is Kafka's default: keyed records go to
``toPositive(murmur2(key)) % partitions``, keyless records stick to one
partition per batch (KIP-480).  Shows a ``>`` prompt when stdin is a terminal.

``--producer-property k=v`` (and ``--producer.config FILE``) go to the
producer; ``acks`` and ``compression.type`` there win over
``--request-required-acks`` / ``--compression-codec``.  Every record that
fails is logged on stderr (once per partition and error until the next
flush), as Kafka's ``ErrorLoggingCallback`` does; the exit status is then 1.
"""

from __future__ import annotations

import argparse
import os
import select
import sys
from collections.abc import Iterable, Iterator
from typing import Any

from mafka.cli.clients import client_settings, load_properties, log_line, parse_properties, stamp
from mafka.client.kafka_error import KafkaError, KafkaException
from mafka.client.message import Message
from mafka.client.partitioner import murmur2, to_positive
from mafka.client.producer import Producer
from mafka.wire.compression import CompressionType

__all__ = [
    "add_parser",
    "run",
    "murmur2",
    "to_positive",
    "partition_for_key",
    "parse_line",
    "read_lines",
    "LineSender",
]

LINGER_S = 0.1
#: Errors of produce() itself that mean "the topic's metadata never came" (Kafka's TimeoutException).
_NO_METADATA = frozenset({
    KafkaError._UNKNOWN_TOPIC, KafkaError._TIMED_OUT, KafkaError._TRANSPORT, KafkaError._ALL_BROKERS_DOWN,
    KafkaError.UNKNOWN_TOPIC_OR_PARTITION, KafkaError.LEADER_NOT_AVAILABLE,
})


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition Kafka's DefaultPartitioner (and Mafka's producer) picks for a keyed record."""
    return to_positive(murmur2(key)) % num_partitions


def parse_line(line: str, line_number: int, parse_key: bool, separator: str,
               ignore_error: bool = False) -> tuple[bytes | None, bytes]:
    """(key, value) of one input line, as Kafka's LineMessageReader reads it."""
    if not parse_key:
        return None, line.encode()
    at = line.find(separator)
    if at < 0:
        if ignore_error:
            return None, line.encode()
        raise ValueError(f"No key found on line {line_number}: {line}")
    return line[:at].encode(), line[at + len(separator):].encode()


def add_parser(sub: Any) -> None:
    p = sub.add_parser("console-producer", help="produce stdin lines to a topic (kafka-console-producer)")
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT")
    p.add_argument("--broker-list", dest="bootstrap_server", help=argparse.SUPPRESS)
    p.add_argument("--topic", required=True)
    p.add_argument("--property", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--producer-property", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--producer.config", dest="producer_config", metavar="FILE",
                   help="producer config properties file (--producer-property wins)")
    p.add_argument("--compression-codec", nargs="?", const="gzip", default="none",
                   choices=[c.config_name for c in CompressionType])
    p.add_argument("--request-required-acks", default="1")
    p.add_argument("--request-timeout-ms", type=int, default=30000)
    p.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the cluster")
    p.set_defaults(func=run)


def read_lines(stream: Any, linger: float = LINGER_S) -> Iterator[str | None]:
    """Lines of ``stream`` without their line ending; None whenever input pauses for ``linger``."""
    try:
        fd = stream.fileno()
    except (AttributeError, OSError, ValueError):
        fd = None
    if fd is None:
        for line in stream:
            yield line.rstrip("\r\n") if line.endswith("\n") else line
        return
    pending = b""
    while True:
        ready, _, _ = select.select([fd], [], [], linger)
        if not ready:
            yield None
            continue
        chunk = os.read(fd, 65536)
        if not chunk:
            if pending:
                yield pending.decode(errors="replace").rstrip("\r")
            return
        pending += chunk
        *lines, pending = pending.split(b"\n")
        for line in lines:
            yield line.decode(errors="replace").rstrip("\r")


class LineSender:
    """Sends lines' records to one topic with a :class:`~mafka.client.Producer` and logs failures."""

    def __init__(self, producer: Any, topic: str, flush_timeout: float) -> None:
        self.producer = producer
        self.topic = topic
        self.flush_timeout = flush_timeout
        self.failed = 0
        self._logged: set[tuple[int | None, int]] = set()

    def add(self, key: bytes | None, value: bytes) -> None:
        """Queues one record, serving delivery reports while the local queue is full.

        Raises:
            KafkaException: the topic's metadata never came (see :data:`_NO_METADATA`).
        """
        while True:
            try:
                self.producer.produce(self.topic, value=value, key=key, on_delivery=self._delivered)
                break
            except BufferError:
                self.producer.poll(0.1)
            except KafkaException as exc:
                if exc.error.code() in _NO_METADATA:
                    raise
                self._failure(None, exc.error)  # e.g. a record over message.max.bytes
                break
        self.producer.poll(0)

    def flush(self) -> None:
        left = self.producer.flush(self.flush_timeout)
        if left:
            self._failure(None, KafkaError(KafkaError._MSG_TIMED_OUT), count=left)
        self._logged.clear()

    def _delivered(self, err: KafkaError | None, msg: Message) -> None:
        if err is not None:
            self._failure(msg.partition(), err)

    def _failure(self, partition: int | None, err: KafkaError, count: int = 1) -> None:
        self.failed += count
        if (partition, err.code()) not in self._logged:
            self._logged.add((partition, err.code()))
            _log_error(self.topic, partition, err)


def _log_error(topic: str, partition: int | None, err: KafkaError) -> None:
    where = f"topic {topic}" if partition is None or partition < 0 else f"topic {topic} partition {partition}"
    text = err.str().removeprefix("Broker: ")
    print(log_line("ERROR", f"Error when sending message to {where} with error: {err.name()}: {text}",
                   "org.apache.kafka.clients.producer.internals.ErrorLoggingCallback"), file=sys.stderr)


def produce_lines(producer: Any, lines: Iterable[str | None], props: dict[str, str],
                  prompt: bool = False) -> None:
    """Sends every line (``producer.add``), flushing whenever input pauses (None) and at the end."""
    parse_key = props.get("parse.key", "false").lower() == "true"
    separator = props.get("key.separator", "\t")
    ignore_error = props.get("ignore.error", "false").lower() == "true"
    number = 0
    if prompt:
        print(">", end="", flush=True)
    try:
        for line in lines:
            if line is None:
                producer.flush()
                continue
            number += 1
            key, value = parse_line(line, number, parse_key, separator, ignore_error)
            producer.add(key, value)
            if prompt:
                print(">", end="", flush=True)
    finally:
        producer.flush()


def producer_config(args: argparse.Namespace, producer_props: dict[str, str]) -> dict[str, Any]:
    """The :class:`~mafka.client.Producer` configuration for the command line."""
    settings: dict[str, Any] = load_properties(args.producer_config) if args.producer_config else {}
    settings.update(producer_props)
    conf: dict[str, Any] = {"client.id": "console-producer", "delivery.timeout.ms": int(args.timeout * 1000)}
    conf.update(client_settings(settings, "producer"))
    conf["bootstrap.servers"] = args.bootstrap_server
    conf.setdefault("acks", args.request_required_acks)
    conf.setdefault("compression.type", args.compression_codec)
    conf.setdefault("request.timeout.ms", args.request_timeout_ms)
    return conf


def run(args: argparse.Namespace, stdin: Any = None) -> int:
    stdin = sys.stdin if stdin is None else stdin
    try:
        props = parse_properties(args.property)
        conf = producer_config(args, parse_properties(args.producer_property))
    except (ValueError, OSError) as exc:
        print(str(exc), file=sys.stderr)
        return 1
    producer: Producer | None = None
    try:
        producer = Producer(conf)
        sender = LineSender(producer, args.topic, args.timeout + 10.0)
        prompt = hasattr(stdin, "isatty") and stdin.isatty()
        produce_lines(sender, read_lines(stdin), props, prompt=prompt)
        return 1 if sender.failed else 0
    except KafkaException as exc:
        if exc.error.code() in _NO_METADATA:
            print(f"ERROR org.apache.kafka.common.errors.TimeoutException: Topic {args.topic} not present in "
                  f"metadata after {args.timeout * 1000:.0f} ms.", file=sys.stderr)
        else:
            print(f"[{stamp()}] ERROR org.apache.kafka.common.KafkaException: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:  # a line without a key, a bad config value or bootstrap list
        print(f"[{stamp()}] ERROR org.apache.kafka.common.KafkaException: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
    finally:
        if producer is not None:
            producer.close()
