"""``mafka verifiable-consumer``: Kafka's ``kafka-verifiable-consumer.sh`` (``VerifiableConsumer``) on
:class:`mafka.client.Consumer`.

Joins ``--group-id`` (with ``--group-instance-id``: a static member) for ``--topic`` and reports
on stdout, one JSON object a line, as Kafka's tool does (see :mod:`mafka.cli.verifiable_events`):

* ``startup_complete``;
* ``partitions_assigned`` / ``partitions_revoked`` from the rebalance callbacks, with
  ``partitions`` as ``[{"topic":…,"partition":…}]`` (lost partitions report as revoked,
  Kafka's default ``onPartitionsLost``);
* ``records_consumed`` for each poll that returned records: ``count`` (the poll's records)
  and per partition ``topic``, ``partition``, ``count``, ``minOffset``, ``maxOffset`` of
  those consumed (``--max-messages`` cuts the last poll short, as in Kafka); with
  ``--verbose`` also a ``record_data`` line per record (``key``, ``value``, ``topic``,
  ``partition``, ``offset``);
* ``offsets_committed`` after each synchronous commit of the consumed offsets (unless
  ``--enable-autocommit``): ``offsets`` (``topic``, ``partition``, ``offset``), ``error`` (the
  exception's message, only when it failed) and ``success``;
* ``shutdown_complete`` after the consumer closed: after ``--max-messages`` records (-1, the
  default: never), on SIGTERM or Ctrl-C, or after an error from the consumer (logged on stderr).

Consumer settings as Kafka's tool sets them: the ``--consumer.config`` file first, then
``group.id``, ``group.instance.id``, ``bootstrap.servers``, ``enable.auto.commit``,
``auto.offset.reset`` (``--reset-policy``, default earliest), ``session.timeout.ms``
(``--session-timeout``, default 30000) and ``partition.assignment.strategy``
(``--assignment-strategy``: Kafka's class names, ``org.apache.kafka.clients.consumer.RangeAssignor``
by default, or Mafka's names ``range``, ``roundrobin``, ``cooperative-sticky``).  Polls return at
most 500 records (Kafka's ``max.poll.records``).  ``--command-config`` (a properties file
applied before ``--consumer.config``) is Mafka's own.
"""

from __future__ import annotations

import argparse
import sys
import threading
from typing import Any

from mafka.cli.clients import client_settings, error_text, java_exception, load_properties, log_line
from mafka.cli.verifiable_events import EventPrinter, stop_signals
from mafka.client.consumer import Consumer
from mafka.client.kafka_error import KafkaError, KafkaException
from mafka.client.message import Message, TopicPartition

__all__ = ["add_parser", "run", "consumer_config", "assignment_strategy", "VerifiableConsumer"]

MAX_POLL_RECORDS = 500
#: how long one poll waits before the stop flag is looked at again (Kafka's poll waits forever; its
#: shutdown hook wakes it)
POLL_WAIT_S = 0.5
_LOGGER = "org.apache.kafka.tools.VerifiableConsumer"
_ASSIGNORS = {
    "org.apache.kafka.clients.consumer.RangeAssignor": "range",
    "org.apache.kafka.clients.consumer.RoundRobinAssignor": "roundrobin",
    "org.apache.kafka.clients.consumer.CooperativeStickyAssignor": "cooperative-sticky",
}


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "verifiable-consumer",
        help="consume a topic in a group, reporting events as JSON (kafka-verifiable-consumer)",
        description="This tool consumes messages from a specific topic and emits consumer events (e.g. group "
                    "rebalances, received messages, and offsets committed) as JSON objects to STDOUT.")
    connection = p.add_mutually_exclusive_group(required=True)
    connection.add_argument("--bootstrap-server", metavar="HOST1:PORT1[,HOST2:PORT2[...]]",
                            help="REQUIRED unless --broker-list(deprecated) is specified. The server(s) to connect "
                                 "to. Comma-separated list of Kafka brokers in the form HOST1:PORT1,HOST2:PORT2,...")
    connection.add_argument("--broker-list", metavar="HOST1:PORT1[,HOST2:PORT2[...]]",
                            help="DEPRECATED, use --bootstrap-server instead; ignored if --bootstrap-server is "
                                 "specified.  Comma-separated list of Kafka brokers in the form "
                                 "HOST1:PORT1,HOST2:PORT2,...")
    p.add_argument("--topic", required=True, metavar="TOPIC", help="Consumes messages from this topic.")
    p.add_argument("--group-id", required=True, metavar="GROUP_ID",
                   help="The groupId shared among members of the consumer group")
    p.add_argument("--group-instance-id", metavar="GROUP_INSTANCE_ID",
                   help="A unique identifier of the consumer instance")
    p.add_argument("--max-messages", type=int, default=-1, metavar="MAX-MESSAGES",
                   help="Consume this many messages. If -1 (the default), the consumer will consume until the "
                        "process is killed externally")
    p.add_argument("--session-timeout", type=int, default=30000, metavar="TIMEOUT_MS",
                   help="Set the consumer's session timeout (default: 30000)")
    p.add_argument("--verbose", action="store_true", help="Enable to log individual consumed records")
    p.add_argument("--enable-autocommit", action="store_true", help="Enable offset auto-commit on consumer")
    p.add_argument("--reset-policy", default="earliest",
                   help="Set reset policy (must be either 'earliest', 'latest', or 'none' (default: earliest)")
    p.add_argument("--assignment-strategy", default="org.apache.kafka.clients.consumer.RangeAssignor",
                   help="Set assignment strategy (e.g. org.apache.kafka.clients.consumer.RoundRobinAssignor) "
                        "(default: org.apache.kafka.clients.consumer.RangeAssignor)")
    p.add_argument("--consumer.config", dest="consumer_config", metavar="CONFIG_FILE",
                   help="Consumer config properties file (config options shared with command line parameters "
                        "will be overridden).")
    p.add_argument("--command-config", metavar="CONFIG_FILE",
                   help="Mafka: a properties file for the consumer, applied before --consumer.config")
    p.set_defaults(func=run)


def assignment_strategy(text: str) -> str:
    """``--assignment-strategy`` (Kafka class names or Mafka's names, comma-separated) → Mafka's names.

    Raises:
        ValueError: an assignor Mafka's consumer does not have.
    """
    names = []
    for entry in (e.strip() for e in text.split(",") if e.strip()):
        name = _ASSIGNORS.get(entry, entry)
        if name not in _ASSIGNORS.values():
            raise ValueError(f"Invalid value {text} for configuration partition.assignment.strategy: "
                             f"{entry} is not supported (use one of {', '.join(_ASSIGNORS)})")
        names.append(name)
    if not names:
        raise ValueError(f"Invalid value {text} for configuration partition.assignment.strategy")
    return ",".join(names)


def consumer_config(args: argparse.Namespace) -> dict[str, Any]:
    """Kafka's ``createFromArgs`` settings (the files first, the flags win).

    Raises:
        OSError: a properties file cannot be read.
        ValueError: an assignor Mafka lacks, a bad reset policy; ConfigError (a ValueError) a bad setting.
    """
    if args.reset_policy not in ("earliest", "latest", "none"):
        raise ValueError(f'Invalid value {args.reset_policy} for configuration auto.offset.reset: String must be '
                         'one of: latest, earliest, none')
    props: dict[str, Any] = {}
    for path in (args.command_config, args.consumer_config):
        if path:
            props.update(load_properties(path))
    props["group.id"] = args.group_id
    if args.group_instance_id is not None:
        props["group.instance.id"] = args.group_instance_id
    props["bootstrap.servers"] = args.bootstrap_server if args.bootstrap_server is not None else args.broker_list
    props["enable.auto.commit"] = "true" if args.enable_autocommit else "false"
    # Kafka's "none" (no reset: an error) is librdkafka's "error"
    props["auto.offset.reset"] = "error" if args.reset_policy == "none" else args.reset_policy
    props["session.timeout.ms"] = str(args.session_timeout)
    props["partition.assignment.strategy"] = assignment_strategy(args.assignment_strategy)
    return client_settings(props, "consumer")


def _partitions(parts: list[TopicPartition]) -> list[dict[str, Any]]:
    return [{"topic": tp.topic, "partition": tp.partition} for tp in parts]


class VerifiableConsumer:
    """Kafka's ``VerifiableConsumer``: polls, summarizes, commits, and prints the events."""

    def __init__(self, consumer: Any, topic: str, max_messages: int, auto_commit: bool, verbose: bool,
                 emit: Any) -> None:
        self.consumer = consumer
        self.topic = topic
        self.max_messages = max_messages
        self.auto_commit = auto_commit
        self.verbose = verbose
        self.emit = emit
        self.consumed = 0
        self.stop = threading.Event()

    def finished(self) -> bool:
        return 0 <= self.max_messages <= self.consumed

    def on_assign(self, _consumer: Any, parts: list[TopicPartition]) -> None:
        self.emit("partitions_assigned", {"partitions": _partitions(parts)})

    def on_revoke(self, _consumer: Any, parts: list[TopicPartition]) -> None:
        self.emit("partitions_revoked", {"partitions": _partitions(parts)})

    def records_received(self, records: list[Message]) -> list[TopicPartition]:
        """Kafka's ``onRecordsReceived``: prints the poll's summary (and the records with
        ``--verbose``); returns the offsets to commit (each partition's last offset + 1)."""
        by_partition: dict[tuple[str, int], list[Message]] = {}
        for msg in records:
            by_partition.setdefault((msg.topic() or "", msg.partition() or 0), []).append(msg)
        offsets = []
        summaries = []
        for (topic, partition), msgs in by_partition.items():
            if self.max_messages >= 0 and self.consumed + len(msgs) > self.max_messages:
                msgs = msgs[:self.max_messages - self.consumed]
            if not msgs:
                continue
            low, high = msgs[0].offset() or 0, msgs[-1].offset() or 0
            offsets.append(TopicPartition(topic, partition, high + 1))
            summaries.append({"topic": topic, "partition": partition, "count": len(msgs),
                              "minOffset": low, "maxOffset": high})
            if self.verbose:
                for msg in msgs:
                    self.emit("record_data", {"key": _text(msg.key()), "value": _text(msg.value()),
                                              "topic": topic, "partition": partition, "offset": msg.offset()})
            self.consumed += len(msgs)
            if self.finished():
                break
        self.emit("records_consumed", {"count": len(records), "partitions": summaries})
        return offsets

    def commit(self, offsets: list[TopicPartition]) -> None:
        """Kafka's ``commitSync`` with its ``offsets_committed`` event."""
        committed = [{"topic": tp.topic, "partition": tp.partition, "offset": tp.offset} for tp in offsets]
        error: str | None = None
        if offsets:  # (Kafka's commitSync of nothing succeeds at once)
            try:
                self.consumer.commit(offsets=offsets, asynchronous=False)
            except KafkaException as exc:
                error = _message(exc.error)
        fields: dict[str, Any] = {"offsets": committed}
        if error is not None:
            fields["error"] = error
        fields["success"] = error is None
        self.emit("offsets_committed", fields)

    def run(self) -> None:
        """Kafka's ``run``: until ``max_messages`` records, :attr:`stop`, or a consumer error; then
        closes the consumer and prints ``shutdown_complete``."""
        try:
            self.emit("startup_complete")
            self.consumer.subscribe([self.topic], on_assign=self.on_assign, on_revoke=self.on_revoke,
                                    on_lost=self.on_revoke)
            while not self.finished() and not self.stop.is_set():
                records = []
                for msg in self.consumer.consume(MAX_POLL_RECORDS, POLL_WAIT_S):
                    err = msg.error()
                    if err is None:
                        records.append(msg)
                    elif err.code() != KafkaError._PARTITION_EOF:
                        raise KafkaException(err)
                if not records:
                    continue
                offsets = self.records_received(records)
                if not self.auto_commit:
                    self.commit(offsets)
        except KafkaException as exc:
            # Kafka logs it (not on stdout) and shuts down
            print(log_line("ERROR", "Error during processing, terminating consumer process: ", _LOGGER) + "\n"
                  + java_exception(exc.error.code(), error_text(exc.error)), file=sys.stderr, flush=True)
        finally:
            self.consumer.close()
            self.emit("shutdown_complete")


def _text(data: bytes | None) -> str | None:
    """Kafka's StringDeserializer (UTF-8; malformed bytes become U+FFFD)."""
    return None if data is None else data.decode("utf-8", errors="replace")


def _message(error: KafkaError) -> str:
    """The Java exception's ``getMessage()`` for a client error."""
    return java_exception(error.code(), error_text(error)).partition(": ")[2]


def run(args: argparse.Namespace) -> int:
    try:
        consumer = Consumer(consumer_config(args))
    except OSError as exc:
        print(f"verifiable-consumer: error: {exc.strerror or exc}: {exc.filename}", file=sys.stderr)
        return 1
    except ValueError as exc:
        print(f'Exception in thread "main" org.apache.kafka.common.config.ConfigException: {exc}', file=sys.stderr)
        return 1
    tool = VerifiableConsumer(consumer, args.topic, args.max_messages, args.enable_autocommit, args.verbose,
                              EventPrinter())
    with stop_signals(tool.stop):
        tool.run()
    return 0
