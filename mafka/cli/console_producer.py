"""``mafka console-producer``: Kafka's ``kafka-console-producer.sh`` for Mafka.

Reads stdin, one record per line, and produces the lines to ``--topic``.
With ``--property parse.key=true`` each line is ``key<sep>value`` (separator
``key.separator``, default TAB).  Lines are batched per partition and sent
when input pauses (``linger``) or a batch fills.  Partitioning is Kafka's
default: keyed records go to ``toPositive(murmur2(key)) % partitions``;
keyless records stick to one partition per batch and move on (the sticky
partitioner).  Shows a ``>`` prompt when stdin is a terminal.
"""

from __future__ import annotations

import argparse
import os
import random
import select
import sys
import time
from collections.abc import Iterable, Iterator
from datetime import datetime
from typing import Any

from mafka.client.blocking import PRODUCE, RETRIABLE, BlockingClient, ClientTimeout
from mafka.errors import ErrorCode
from mafka.wire.compression import CompressionType
from mafka.wire.records import Record, build_batch

__all__ = [
    "add_parser",
    "run",
    "murmur2",
    "to_positive",
    "partition_for_key",
    "parse_line",
    "StickyPartitioner",
    "read_lines",
]

MAX_BATCH_RECORDS = 1000
MAX_BATCH_BYTES = 512 * 1024
LINGER_S = 0.1


def murmur2(data: bytes) -> int:
    """Kafka's ``Utils.murmur2`` (a signed 32-bit result, like Java's)."""
    length = len(data)
    m = 0x5BD1E995
    h = (0x9747B28C ^ length) & 0xFFFFFFFF
    length4 = length // 4
    for i in range(length4):
        i4 = i * 4
        k = data[i4] | (data[i4 + 1] << 8) | (data[i4 + 2] << 16) | (data[i4 + 3] << 24)
        k = (k * m) & 0xFFFFFFFF
        k ^= k >> 24
        k = (k * m) & 0xFFFFFFFF
        h = (h * m) & 0xFFFFFFFF
        h ^= k
    rest = length % 4
    tail = length & ~3
    if rest == 3:
        h ^= data[tail + 2] << 16
    if rest >= 2:
        h ^= data[tail + 1] << 8
    if rest >= 1:
        h ^= data[tail]
        h = (h * m) & 0xFFFFFFFF
    h ^= h >> 13
    h = (h * m) & 0xFFFFFFFF
    h ^= h >> 15
    return h - (1 << 32) if h & 0x80000000 else h


def to_positive(n: int) -> int:
    """Kafka's ``Utils.toPositive``: clears the sign bit."""
    return n & 0x7FFFFFFF


def partition_for_key(key: bytes, num_partitions: int) -> int:
    """The partition Kafka's DefaultPartitioner picks for a keyed record."""
    return to_positive(murmur2(key)) % num_partitions


class StickyPartitioner:
    """Keyless records: one partition per batch, a different (available) one for the next."""

    def __init__(self, rng: random.Random | None = None) -> None:
        self.rng = rng or random.Random()
        self.current: int | None = None

    def partition(self, available: list[int]) -> int:
        if self.current is None or self.current not in available:
            self.next_batch(available)
        assert self.current is not None
        return self.current

    def next_batch(self, available: list[int]) -> None:
        choices = [p for p in available if p != self.current] or available
        self.current = self.rng.choice(choices)


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


def parse_properties(entries: list[str]) -> dict[str, str]:
    out = {}
    for entry in entries:
        key, sep, value = entry.partition("=")
        if not sep:
            raise ValueError(f"Invalid property: {entry} (expected key=value)")
        out[key.strip()] = value
    return out


def add_parser(sub: Any) -> None:
    p = sub.add_parser("console-producer", help="produce stdin lines to a topic (kafka-console-producer)")
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT")
    p.add_argument("--broker-list", dest="bootstrap_server", help=argparse.SUPPRESS)
    p.add_argument("--topic", required=True)
    p.add_argument("--property", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--producer-property", action="append", default=[], metavar="KEY=VALUE")
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


class Producer:
    """Per-partition batches for one topic, sent to partition leaders."""

    def __init__(self, client: BlockingClient, topic: str, acks: int, compression: int, timeout_ms: int) -> None:
        self.client = client
        self.topic = topic
        self.acks = acks
        self.compression = compression
        self.timeout_ms = timeout_ms
        self.sticky = StickyPartitioner()
        self.pending: dict[int, list[tuple[bytes | None, bytes, int]]] = {}
        self.pending_bytes = 0
        self.leaders: dict[int, int] = {}
        self.failed = 0

    def refresh(self) -> None:
        leaders = self.client.partitions_for(self.topic, auto_create=True)
        if not leaders:
            raise ClientTimeout(f"Topic {self.topic} not present in metadata after {self.client.timeout_s * 1000:.0f} ms.")
        self.leaders = leaders

    def add(self, key: bytes | None, value: bytes) -> None:
        if not self.leaders:
            self.refresh()
        count = len(self.leaders)
        if key is not None:
            partition = partition_for_key(key, count)
        else:
            available = sorted(p for p, leader in self.leaders.items() if leader >= 0) or sorted(self.leaders)
            partition = self.sticky.partition(available)
        self.pending.setdefault(partition, []).append((key, value, int(time.time() * 1000)))
        self.pending_bytes += len(value) + (len(key) if key else 0)
        if self.pending_bytes >= MAX_BATCH_BYTES or sum(map(len, self.pending.values())) >= MAX_BATCH_RECORDS:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        batches = {
            p: build_batch(
                [Record(i, ts, k, v) for i, (k, v, ts) in enumerate(recs)], compression=self.compression
            )
            for p, recs in self.pending.items()
        }
        sizes = {p: len(recs) for p, recs in self.pending.items()}
        self.pending = {}
        self.pending_bytes = 0
        self.sticky.next_batch(sorted(self.leaders) or [0])
        errors = self._send(batches)
        for p, code in errors.items():
            self.failed += sizes[p]
            _log_error(self.topic, p, code)

    def _send(self, batches: dict[int, bytes]) -> dict[int, int]:
        """Sends the batches, retrying retriable errors; the partitions that failed, with their codes."""
        left = dict(batches)
        errors: dict[int, int] = {}

        def attempt() -> tuple[bool, dict[int, int]]:
            errors.clear()
            by_leader: dict[int, list[int]] = {}
            for p in left:
                by_leader.setdefault(self.leaders.get(p, -1), []).append(p)
            for leader, parts in by_leader.items():
                if leader < 0:
                    errors.update({p: ErrorCode.LEADER_NOT_AVAILABLE for p in parts})
                    continue
                body = {
                    "transactional_id": None,
                    "acks": self.acks,
                    "timeout_ms": self.timeout_ms,
                    "topic_data": [{
                        "name": self.topic,
                        "partition_data": [{"index": p, "records": left[p]} for p in parts],
                    }],
                }
                if self.acks == 0:
                    # No response comes back for acks=0; send and forget.
                    try:
                        from mafka.wire.codec import encode_request
                        addr = self.client.brokers[leader]
                        self.client._socket(addr, 5.0).sendall(encode_request(0, 7, 0, self.client.client_id, body))
                        for p in parts:
                            left.pop(p)
                    except (OSError, KeyError):
                        errors.update({p: ErrorCode.NETWORK_EXCEPTION for p in parts})
                    continue
                try:
                    response = self.client.call(PRODUCE, 7, body, broker_id=leader, timeout=5.0)
                except ClientTimeout:
                    errors.update({p: ErrorCode.NETWORK_EXCEPTION for p in parts})
                    continue
                for t in response.responses:
                    for r in t.partition_responses:
                        if r.error_code == ErrorCode.NONE:
                            left.pop(r.index, None)
                        else:
                            errors[r.index] = r.error_code
            retry = bool(errors) and all(code in RETRIABLE for code in errors.values())
            if retry:
                try:
                    self.leaders = self.client.partitions_for(self.topic, auto_create=True, timeout=5.0) or self.leaders
                except ClientTimeout:
                    pass
            return retry, dict(errors)

        return self.client.retrying(attempt)


def _log_error(topic: str, partition: int, code: int) -> None:
    stamp = datetime.now().strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
    name = ErrorCode(code).name if code in ErrorCode._value2member_map_ else str(code)
    print(
        f"[{stamp}] ERROR Error when sending message to topic {topic} partition {partition} with error: "
        f"{name}: {ErrorCode(code).description if code in ErrorCode._value2member_map_ else ''} "
        "(org.apache.kafka.clients.producer.internals.ErrorLoggingCallback)",
        file=sys.stderr,
    )


def produce_lines(producer: Producer, lines: Iterable[str | None], props: dict[str, str],
                  prompt: bool = False) -> None:
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


def run(args: argparse.Namespace, stdin: Any = None) -> int:
    stdin = sys.stdin if stdin is None else stdin
    try:
        props = parse_properties(args.property)
        producer_props = parse_properties(args.producer_property)
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    acks_text = producer_props.get("acks", args.request_required_acks)
    acks = -1 if acks_text == "all" else int(acks_text)
    codec = producer_props.get("compression.type", args.compression_codec)
    compression = int(CompressionType.for_name(codec))
    try:
        with BlockingClient(args.bootstrap_server, client_id="console-producer", timeout_s=args.timeout) as client:
            producer = Producer(client, args.topic, acks, compression, args.request_timeout_ms)
            prompt = hasattr(stdin, "isatty") and stdin.isatty()
            produce_lines(producer, read_lines(stdin), props, prompt=prompt)
            return 1 if producer.failed else 0
    except ValueError as exc:  # a line without a key, or a bad bootstrap list
        stamp = datetime.now().strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
        print(f"[{stamp}] ERROR org.apache.kafka.common.KafkaException: {exc}", file=sys.stderr)
        return 1
    except ClientTimeout as exc:
        print(f"ERROR org.apache.kafka.common.errors.TimeoutException: {exc}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        return 0
