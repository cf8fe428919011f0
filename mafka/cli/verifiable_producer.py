"""``mafka verifiable-producer``: Kafka's ``kafka-verifiable-producer.sh`` (``VerifiableProducer``) on
:class:`mafka.client.Producer`.

Produces the values ``0``, ``1``, ``2`` … (``P.0``, ``P.1`` … with ``--value-prefix P``) to
``--topic``, ``--max-messages`` of them (-1, the default: until stopped), throttled to about
``--throughput`` per second (Kafka's ``ThroughputThrottler``; -1: no limit), and reports on
stdout, one JSON object a line, as Kafka's tool does (see :mod:`mafka.cli.verifiable_events`):

* ``startup_complete``;
* per record, when its delivery is reported: ``producer_send_success`` with ``key``,
  ``value``, ``topic``, ``partition``, ``offset``, or ``producer_send_error`` with ``topic``,
  ``key``, ``value``, ``exception`` (``class org.apache.kafka…Exception``) and ``message``;
* at the end — after ``--max-messages``, on SIGTERM or Ctrl-C — the remaining records are
  flushed, then ``shutdown_complete`` and ``tool_data`` (``sent``, ``acked``,
  ``target_throughput``, ``avg_throughput`` = acked per second since the start).

Kafka's settings: ``acks`` from ``--acks`` (0, 1 or -1), ``retries=0``, then the
``--producer.config`` file on top (Java-only keys such as serializers dropped, see
:func:`mafka.cli.clients.client_settings`).  ``--repeating-keys N`` gives the keys ``0`` …
``N-1`` over and over; ``--message-create-time T`` sets the records' timestamps, starting at
T and advancing as Kafka's tool advances them.  In Kafka, ``acks=0`` reports offset -1.

Mafka's additions (not in Kafka's tool): ``--command-config`` (a properties file applied
before ``--producer.config``, e.g. for security settings), ``--enable-idempotence`` (an
idempotent producer: Kafka's ``retries=0`` is then left out, and ``--acks`` must be -1) and
``--transactional-id`` (a transactional producer, implying idempotence: the records go in
transactions committed every :data:`TRANSACTION_DURATION_MS` and at the end, as Kafka's
``ProducerPerformance`` commits its transactions).
"""

from __future__ import annotations

import argparse
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from mafka.cli.clients import client_settings, error_text, java_exception, load_properties
from mafka.cli.producer_perf_test import ThroughputThrottler
from mafka.cli.verifiable_events import EventPrinter, stop_signals
from mafka.client.kafka_error import KafkaError, KafkaException
from mafka.client.message import Message
from mafka.client.producer import Producer

__all__ = ["add_parser", "run", "producer_config", "VerifiableProducer", "failed_send"]

#: How long a transaction stays open with ``--transactional-id`` (ProducerPerformance's default).
TRANSACTION_DURATION_MS = 3000


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "verifiable-producer",
        help="produce increasing integers, reporting each ack as JSON (kafka-verifiable-producer)",
        description='This tool produces increasing integers to the specified topic and prints JSON metadata to '
                    'stdout on each "send" request, making externally visible which messages have been acked and '
                    'which have not.')
    p.add_argument("--topic", required=True, metavar="TOPIC", help="Produce messages to this topic.")
    connection = p.add_mutually_exclusive_group(required=True)
    connection.add_argument("--bootstrap-server", metavar="HOST1:PORT1[,HOST2:PORT2[...]]",
                            help="REQUIRED: The server(s) to connect to. Comma-separated list of Kafka brokers "
                                 "in the form HOST1:PORT1,HOST2:PORT2,...")
    connection.add_argument("--broker-list", metavar="HOST1:PORT1[,HOST2:PORT2[...]]",
                            help="DEPRECATED, use --bootstrap-server instead; ignored if --bootstrap-server is "
                                 "specified.  Comma-separated list of Kafka brokers in the form "
                                 "HOST1:PORT1,HOST2:PORT2,...")
    p.add_argument("--max-messages", type=int, default=-1, metavar="MAX-MESSAGES",
                   help="Produce this many messages. If -1, produce messages until the process is killed "
                        "externally. (default: -1)")
    p.add_argument("--throughput", type=int, default=-1, metavar="THROUGHPUT",
                   help="If set >= 0, throttle maximum message throughput to *approximately* THROUGHPUT "
                        "messages/sec. (default: -1)")
    p.add_argument("--acks", type=int, default=-1, choices=(0, 1, -1), metavar="ACKS",
                   help="Acks required on each produced message. See Kafka docs on acks for details. "
                        "(default: -1)")
    p.add_argument("--producer.config", dest="producer_config", metavar="CONFIG_FILE",
                   help="Producer config properties file.")
    p.add_argument("--message-create-time", type=int, default=-1, metavar="CREATETIME",
                   help="Send messages with creation time starting at the arguments value, in milliseconds "
                        "since epoch (default: -1)")
    p.add_argument("--value-prefix", type=int, metavar="VALUE-PREFIX",
                   help="If specified, each produced value will have this prefix with a dot separator")
    p.add_argument("--repeating-keys", type=int, metavar="REPEATING-KEYS",
                   help="If specified, each produced record will have a key starting at 0 increment by 1 up to "
                        "the number specified (exclusive), then the key is set to 0 again")
    p.add_argument("--command-config", metavar="CONFIG_FILE",
                   help="Mafka: a properties file for the producer, applied before --producer.config")
    p.add_argument("--enable-idempotence", action="store_true",
                   help="Mafka: an idempotent producer (Kafka's retries=0 is then not set; --acks must be -1)")
    p.add_argument("--transactional-id", metavar="TRANSACTIONAL-ID",
                   help="Mafka: a transactional producer with this id; its transactions are committed every "
                        f"{TRANSACTION_DURATION_MS} ms and at the end")
    p.set_defaults(func=run)


def producer_config(args: argparse.Namespace) -> dict[str, Any]:
    """Kafka's ``createFromArgs`` settings, then Mafka's flags.

    Raises:
        OSError: a properties file cannot be read.
        ConfigError (a ValueError): a bad value (the Producer's own check comes later).
    """
    props: dict[str, Any] = {
        "bootstrap.servers": args.bootstrap_server if args.bootstrap_server is not None else args.broker_list,
        "acks": str(args.acks),
    }
    if not (args.enable_idempotence or args.transactional_id):
        props["retries"] = "0"  # Kafka's: no producer retries (an idempotent producer needs them)
    for path in (args.command_config, args.producer_config):
        if path:
            props.update(load_properties(path))
    if args.enable_idempotence:
        props["enable.idempotence"] = "true"
    if args.transactional_id:
        props["transactional.id"] = args.transactional_id
    return client_settings(props, "producer")


def failed_send(topic: str, key: str | None, value: str, error: KafkaError) -> dict[str, Any]:
    """The ``producer_send_error`` fields, as Kafka's ``FailedSend`` orders them."""
    exception, _, message = java_exception(error.code(), error_text(error)).partition(": ")
    return {"topic": topic, "key": key, "value": value, "exception": f"class {exception}", "message": message}


class VerifiableProducer:
    """Kafka's ``VerifiableProducer``: sends values, counts sends and acks, prints the events."""

    def __init__(self, producer: Any, topic: str, throughput: int, max_messages: int, value_prefix: int | None,
                 create_time: int | None, repeating_keys: int | None, emit: Callable[..., None],
                 transactional: bool = False) -> None:
        self.producer = producer
        self.topic = topic
        self.throughput = throughput
        self.max_messages = max_messages
        self.value_prefix = value_prefix
        self.create_time = create_time
        self.repeating_keys = repeating_keys
        self.emit = emit
        self.transactional = transactional
        self.num_sent = 0
        self.num_acked = 0
        self.stop = threading.Event()
        self._key_counter = 0
        self.start_ms = _now_ms()
        self._txn_started = 0.0

    def value(self, i: int) -> str:
        return f"{self.value_prefix}.{i}" if self.value_prefix is not None else str(i)

    def key(self) -> str | None:
        if self.repeating_keys is None:
            return None
        key = str(self._key_counter)
        self._key_counter += 1
        if self._key_counter == self.repeating_keys:
            self._key_counter = 0
        return key

    def _on_delivery(self, key: str | None, value: str) -> Callable[[KafkaError | None, Message | None], None]:
        def done(err: KafkaError | None, msg: Message | None) -> None:
            if err is None and msg is not None:
                self.num_acked += 1
                offset = msg.offset()
                self.emit("producer_send_success", {
                    "key": key, "value": value, "topic": msg.topic(), "partition": msg.partition(),
                    # Kafka's RecordMetadata has -1 where no offset came back (acks=0)
                    "offset": offset if offset is not None and offset >= 0 else -1,
                })
            else:
                self.emit("producer_send_error", failed_send(self.topic, key, value,
                                                             err or KafkaError(KafkaError._FAIL)))
        return done

    def send(self, key: str | None, value: str) -> None:
        """Kafka's ``send``: a refused record (too large, no such topic …) is reported at once."""
        timestamp = 0
        if self.create_time is not None:
            timestamp = self.create_time
            # Kafka's tool advances the create time by the time since its start, each record.
            self.create_time += _now_ms() - self.start_ms
        self.num_sent += 1
        callback = self._on_delivery(key, value)
        while True:
            try:
                self.producer.produce(self.topic, value=value, key=key, timestamp=timestamp, on_delivery=callback)
                break
            except BufferError:
                self.producer.poll(0.05)
            except KafkaException as exc:
                callback(exc.error, None)
                break
        self.producer.poll(0)

    def run(self) -> None:
        """Sends until ``max_messages`` (negative: forever) or :attr:`stop`; commits a transaction
        every :data:`TRANSACTION_DURATION_MS` when transactional."""
        self.emit("startup_complete")
        throttler = ThroughputThrottler(self.throughput, _now_ms(), sleep=self._serve_for)
        limit = self.max_messages if self.max_messages >= 0 else None
        i = 0
        if self.transactional:
            self._begin()
        while (limit is None or i < limit) and not self.stop.is_set():
            send_start = _now_ms()
            self.send(self.key(), self.value(i))
            if self.transactional and time.monotonic() - self._txn_started >= TRANSACTION_DURATION_MS / 1000:
                if self._commit():
                    self._begin()
            if throttler.should_throttle(i, send_start):
                throttler.throttle()
            i += 1

    def _begin(self) -> None:
        self.producer.begin_transaction()
        self._txn_started = time.monotonic()

    def _commit(self) -> bool:
        """Commits the open transaction; a failure is reported on stderr and the transaction
        aborted.  False when the producer cannot go on (a fatal error: sending stops)."""
        try:
            self.producer.commit_transaction()
            return True
        except KafkaException as exc:
            print(f"ERROR Failed to commit the transaction: {java_exception(exc.error.code(), error_text(exc.error))}",
                  file=sys.stderr, flush=True)
            if exc.error.fatal():
                self.stop.set()
                return False
        try:
            self.producer.abort_transaction()
            return True
        except KafkaException as exc:
            print(f"ERROR Failed to abort the transaction: {java_exception(exc.error.code(), error_text(exc.error))}",
                  file=sys.stderr, flush=True)
            self.stop.set()
            return False

    def close(self) -> None:
        """Kafka's shutdown hook: flush (commit the open transaction), then ``shutdown_complete``
        and ``tool_data``."""
        if self.transactional:
            self._commit()
        self.producer.flush()
        self.emit("shutdown_complete")
        elapsed = _now_ms() - self.start_ms
        avg = 1000 * (self.num_acked / elapsed) if elapsed else (float("nan") if not self.num_acked else float("inf"))
        self.emit("tool_data", {"sent": self.num_sent, "acked": self.num_acked,
                                "target_throughput": self.throughput, "avg_throughput": float(avg)})

    def _serve_for(self, seconds: float) -> None:
        """The throttler's sleep: serves delivery reports meanwhile, and ends early when stopped."""
        deadline = time.monotonic() + seconds
        while not self.stop.is_set():
            left = deadline - time.monotonic()
            if left <= 0:
                return
            self.producer.poll(min(left, 0.1))


def _now_ms() -> int:
    return int(time.time() * 1000)


def run(args: argparse.Namespace) -> int:
    try:
        config = producer_config(args)
        producer = Producer(config)
    except OSError as exc:
        print(f"verifiable-producer: error: {exc.strerror or exc}: {exc.filename}", file=sys.stderr)
        return 1
    except ValueError as exc:
        print(f'Exception in thread "main" org.apache.kafka.common.config.ConfigException: {exc}', file=sys.stderr)
        return 1
    tool = VerifiableProducer(
        producer, args.topic, args.throughput, args.max_messages, args.value_prefix,
        args.message_create_time if args.message_create_time != -1 else None, args.repeating_keys,
        EventPrinter(), transactional=bool(args.transactional_id))
    try:
        with stop_signals(tool.stop):
            if tool.transactional:
                producer.init_transactions()
            tool.run()
            tool.close()
    except KafkaException as exc:  # transactions that could not be initialized or begun
        print(f"ERROR {java_exception(exc.error.code(), error_text(exc.error))}", file=sys.stderr)
        return 1
    finally:
        producer.close()
    return 0
