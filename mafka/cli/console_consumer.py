"""``mafka console-consumer``: Kafka's ``kafka-console-consumer.sh`` for Mafka.

Assigns every partition of ``--topic`` (or just ``--partition``) — there are
no consumer groups yet — and prints each record with Kafka's
DefaultMessageFormatter (``print.timestamp``, ``print.partition``,
``print.offset``, ``print.headers``, ``print.key``, ``print.value``,
``key.separator`` (TAB), ``line.separator`` (newline), ``headers.separator``
(``,``), ``null.literal`` (``null``)).  Starts at the latest offset unless
``--from-beginning`` or ``--offset``.  Stops after ``--max-messages``, after
``--timeout-ms`` without a record, or on Ctrl-C, and then prints
``Processed a total of N messages`` on stderr.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime
from typing import Any, BinaryIO

from mafka.client.blocking import FETCH, LIST_OFFSETS, RETRIABLE, BlockingClient, ClientTimeout
from mafka.errors import ErrorCode
from mafka.wire.errors import ProtocolError
from mafka.wire.records import Record, iter_decoded_batches

__all__ = ["add_parser", "run", "Formatter", "parse_offset"]

EARLIEST, LATEST = -2, -1
FETCH_MAX_WAIT_MS = 100
PARTITION_MAX_BYTES = 1024 * 1024


def add_parser(sub: Any) -> None:
    p = sub.add_parser("console-consumer", help="print a topic's records (kafka-console-consumer)")
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT")
    p.add_argument("--topic", required=True)
    p.add_argument("--from-beginning", action="store_true")
    p.add_argument("--partition", type=int)
    p.add_argument("--offset", default=None, help="earliest, latest or a non-negative number (needs --partition)")
    p.add_argument("--max-messages", type=int)
    p.add_argument("--timeout-ms", type=int)
    p.add_argument("--property", action="append", default=[], metavar="KEY=VALUE")
    p.add_argument("--consumer-property", action="append", default=[], metavar="KEY=VALUE",
                   help="accepted for compatibility; ignored")
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

    def format(self, record: Record, partition: int, timestamp_type: int) -> bytes:
        out = bytearray()
        columns = []
        if self.print_timestamp:
            if record.timestamp < 0:
                columns.append(b"NO_TIMESTAMP")
            else:
                kind = "LogAppendTime" if timestamp_type else "CreateTime"
                columns.append(f"{kind}:{record.timestamp}".encode())
        if self.print_partition:
            columns.append(f"Partition:{partition}".encode())
        if self.print_offset:
            columns.append(f"Offset:{record.offset}".encode())
        if self.print_headers:
            if record.headers:
                columns.append(self.headers_separator.join(
                    k.encode() + b":" + (self.null_literal if v is None else v) for k, v in record.headers
                ))
            else:
                columns.append(b"NO_HEADERS")
        if self.print_key:
            columns.append(self.null_literal if record.key is None else record.key)
        if self.print_value:
            columns.append(self.null_literal if record.value is None else record.value)
        out += self.key_separator.join(columns)
        if columns:
            out += self.line_separator
        return bytes(out)


def _unescape(text: str) -> str:
    return text.encode().decode("unicode_escape") if "\\" in text else text


def parse_properties(entries: list[str]) -> dict[str, str]:
    out = {}
    for entry in entries:
        key, sep, value = entry.partition("=")
        if not sep:
            raise ValueError(f"Invalid property: {entry} (expected key=value)")
        out[key.strip()] = value
    return out


class Consumer:
    """Fetches assigned partitions of one topic from their leaders."""

    def __init__(self, client: BlockingClient, topic: str, partitions: list[int] | None, start: int,
                 reset: int) -> None:
        self.client = client
        self.topic = topic
        self.wanted = partitions
        self.start = start
        self.reset = reset
        self.leaders: dict[int, int] = {}
        self.positions: dict[int, int] = {}
        self.printed = 0

    def assign(self) -> None:
        leaders = self.client.partitions_for(self.topic, auto_create=True)
        if not leaders:
            raise ClientTimeout(f"Topic {self.topic} not present in metadata after {self.client.timeout_s * 1000:.0f} ms.")
        if self.wanted is not None:
            missing = [p for p in self.wanted if p not in leaders]
            if missing:
                raise ValueError(f"Partition {missing[0]} of topic {self.topic} does not exist.")
            leaders = {p: leaders[p] for p in self.wanted}
        self.leaders = leaders
        for p in leaders:
            self.positions[p] = self.start
        self._resolve([p for p in leaders if self.positions[p] < 0])

    def _refresh(self) -> None:
        try:
            leaders = self.client.partitions_for(self.topic, timeout=5.0) or {}
        except ClientTimeout:
            return
        for p in self.leaders:
            if p in leaders:
                self.leaders[p] = leaders[p]

    def _resolve(self, partitions: list[int]) -> None:
        """Turns EARLIEST/LATEST positions into offsets with ListOffsets."""
        todo = list(partitions)

        def attempt() -> tuple[bool, list[int]]:
            failed: list[int] = []
            by_leader: dict[int, list[int]] = {}
            for p in todo:
                by_leader.setdefault(self.leaders[p], []).append(p)
            for leader, parts in by_leader.items():
                body = {
                    "replica_id": -1,
                    "isolation_level": 0,
                    "topics": [{"name": self.topic, "partitions": [
                        {"partition_index": p, "timestamp": self.positions[p]} for p in parts
                    ]}],
                }
                try:
                    response = self.client.call(LIST_OFFSETS, 2, body, broker_id=leader, timeout=5.0)
                except ClientTimeout:
                    failed += parts
                    continue
                for t in response.topics:
                    for r in t.partitions:
                        if r.error_code == ErrorCode.NONE:
                            self.positions[r.partition_index] = r.offset
                        else:
                            failed.append(r.partition_index)
            todo[:] = failed
            if failed:
                self._refresh()
            return bool(failed), failed

        failed = self.client.retrying(attempt)
        if failed:
            raise ClientTimeout(f"could not list offsets of partitions {failed}")

    def poll(self) -> list[tuple[int, int, Record]]:
        """One round of fetches: ``[(partition, timestamp_type, record)]`` in offset order per partition."""
        out: list[tuple[int, int, Record]] = []
        by_leader: dict[int, list[int]] = {}
        for p, leader in self.leaders.items():
            by_leader.setdefault(leader, []).append(p)
        stale = False
        reset: list[int] = []
        for leader, parts in sorted(by_leader.items()):
            if leader < 0:
                stale = True
                continue
            body = {
                "replica_id": -1,
                "max_wait_ms": FETCH_MAX_WAIT_MS,
                "min_bytes": 1,
                "max_bytes": 50 * 1024 * 1024,
                "isolation_level": 0,
                "session_id": 0,
                "session_epoch": -1,
                "topics": [{"topic": self.topic, "partitions": [
                    {"partition": p, "current_leader_epoch": -1, "fetch_offset": self.positions[p],
                     "log_start_offset": -1, "partition_max_bytes": PARTITION_MAX_BYTES} for p in parts
                ]}],
                "forgotten_topics_data": [],
                "rack_id": "",
            }
            try:
                response = self.client.call(FETCH, 11, body, broker_id=leader, timeout=5.0)
            except ClientTimeout:
                stale = True
                continue
            for t in response.responses:
                for r in t.partitions:
                    p = r.partition_index
                    if r.error_code == ErrorCode.OFFSET_OUT_OF_RANGE:
                        reset.append(p)
                        continue
                    if r.error_code != ErrorCode.NONE:
                        stale = stale or r.error_code in RETRIABLE
                        continue
                    out.extend(self._records(p, r.records))
        if reset:
            for p in reset:
                self.positions[p] = self.reset
            self._resolve(reset)
        if stale:
            self._refresh()
            time.sleep(0.1)
        return out

    def _records(self, partition: int, records: Any) -> list[tuple[int, int, Record]]:
        out = []
        if not records:
            return out
        position = self.positions[partition]
        try:
            for batch in iter_decoded_batches(records):
                if not batch.is_control:
                    for rec in batch.records:
                        if isinstance(rec, Record) and rec.offset >= position:
                            out.append((partition, batch.header.timestamp_type, rec))
                position = max(position, batch.header.next_offset)
        except ProtocolError as exc:
            print(f"ERROR corrupt record batch in {self.topic}-{partition}: {exc}", file=sys.stderr)
        self.positions[partition] = position
        return out


def consume(consumer: Consumer, formatter: Formatter, output: BinaryIO, max_messages: int | None,
            timeout_ms: int | None) -> tuple[int, bool]:
    """Prints records until done; (messages printed, whether it stopped on the timeout)."""
    count = 0
    last = time.monotonic()
    while max_messages is None or count < max_messages:
        got = consumer.poll()
        for partition, ts_type, record in got:
            output.write(formatter.format(record, partition, ts_type))
            count += 1
            consumer.printed = count
            if max_messages is not None and count >= max_messages:
                break
        if got:
            output.flush()
            last = time.monotonic()
        elif timeout_ms is not None and (time.monotonic() - last) * 1000 >= timeout_ms:
            return count, True
    return count, False


def run(args: argparse.Namespace, output: BinaryIO | None = None) -> int:
    output = sys.stdout.buffer if output is None else output
    try:
        start = check_args(args)
        formatter = Formatter(parse_properties(args.property))
    except ValueError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    consumer: Consumer | None = None
    rc = 0
    try:
        with BlockingClient(args.bootstrap_server, client_id="console-consumer", timeout_s=args.timeout) as client:
            reset = EARLIEST if args.from_beginning else LATEST
            partitions = None if args.partition is None else [args.partition]
            consumer = Consumer(client, args.topic, partitions, start, reset)
            consumer.assign()
            _, timed_out = consume(consumer, formatter, output, args.max_messages, args.timeout_ms)
            if timed_out:
                stamp = datetime.now().strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
                print(f"[{stamp}] ERROR Error processing message, terminating consumer process:  "
                      "(kafka.tools.ConsoleConsumer$)\norg.apache.kafka.common.errors.TimeoutException",
                      file=sys.stderr)
    except KeyboardInterrupt:
        pass
    except (ClientTimeout, ValueError) as exc:
        print(f"ERROR {exc}", file=sys.stderr)
        rc = 1
    finally:
        try:
            output.flush()
        except (OSError, ValueError):
            pass
    count = consumer.printed if consumer is not None else 0
    print(f"Processed a total of {count} messages", file=sys.stderr)
    return rc
