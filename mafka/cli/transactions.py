"""``mafka transactions``: Kafka 3.0's ``kafka-transactions.sh`` (KIP-664) for Mafka.

``--bootstrap-server H:P [--command-config FILE] COMMAND …`` with Kafka's commands:

* ``list``: ListTransactions at every broker; one row per transaction with the
  broker that listed it (its coordinator).
* ``describe --transactional-id ID``: DescribeTransactions at the id's coordinator
  (FindCoordinator, key type 1).
* ``describe-producers --topic T --partition P [--broker-id B]``: DescribeProducers at
  the partition's leader, or at replica ``B``.
* ``abort --topic T --partition P (--start-offset N | --producer-id I --producer-epoch E
  --coordinator-epoch C)``: writes an ABORT marker for one producer to the partition's
  leader (WriteTxnMarkers), as ``Admin.abortTransaction`` does; with ``--start-offset``
  the producer is the one DescribeProducers shows with that open transaction's first
  offset (its epoch and latest coordinator epoch, 0 if it has none).  Prints nothing.
* ``find-hanging (--topic T [--partition P] | --broker-id B) [--max-transaction-timeout
  MIN]``: open transactions (DescribeProducers) whose producer wrote nothing for longer
  than the timeout (15 minutes by default) and whose coordinator does not count the
  partition in a transaction — the producer id is listed by no coordinator
  (ListTransactions), the id is not found, or its transaction lacks the partition.

Kafka's output verbatim: ``prettyPrintTable`` (every value padded to its column's
width and followed by a TAB, headers first); ``None`` for an absent start time or
offset.  The calls behave as KafkaAdminClient's (:mod:`mafka.cli.transactions_admin`);
``--timeout`` (seconds, default 30) bounds each one, as ``default.api.timeout.ms``
bounds Kafka's.  Failures print Kafka's ``printErrorAndExit`` line on stderr
(``<what failed>: <exception message>. Enable debug logging for additional detail.``)
and exit with status 1.

Beyond Kafka: each command may also be spelled as a flag (``--list``, ``--describe``,
``--describe-producers``, ``--abort``, ``--find-hanging``), and the connection options
may follow the command.  Where Kafka prints a HashSet or HashMap, the order here is
sorted (topic partitions of ``describe``, producers of ``find-hanging``); ``list`` keeps
each broker's answer order, brokers by id.  ``-v/--version`` is not offered.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Sequence
from typing import Any, TextIO

from mafka.cli.clients import admin_config, client_settings, load_properties
from mafka.cli.transactions_admin import (
    AbortTransactionSpec,
    AdminFailure,
    ProducerState,
    TransactionalIdNotFound,
    TransactionDescription,
    TransactionsAdmin,
    tp_str,
)
from mafka.client.config import parse_config
from mafka.client.kernel import Kernel
from mafka.errors import ConfigError

__all__ = [
    "add_parser",
    "run",
    "COMMANDS",
    "pretty_print_table",
    "LIST_HEADERS",
    "DESCRIBE_HEADERS",
    "PRODUCERS_HEADERS",
    "HANGING_HEADERS",
]

DESCRIPTION = (
    "This tool is used to analyze the transactional state of producers in the cluster. "
    "It can be used to detect and recover from hanging transactions."
)
COMMANDS = ("list", "describe", "describe-producers", "abort", "find-hanging", "list-half")

LIST_HEADERS = ("TransactionalId", "Coordinator", "ProducerId", "TransactionState")
DESCRIBE_HEADERS = (
    "CoordinatorId", "TransactionalId", "ProducerId", "ProducerEpoch", "TransactionState",
    "TransactionTimeoutMs", "CurrentTransactionStartTimeMs", "TransactionDurationMs", "TopicPartitions",
)
PRODUCERS_HEADERS = (
    "ProducerId", "ProducerEpoch", "LatestCoordinatorEpoch", "LastSequence", "LastTimestamp",
    "CurrentTransactionStartOffset",
)
HANGING_HEADERS = (
    "Topic", "Partition", "ProducerId", "ProducerEpoch", "CoordinatorEpoch", "StartOffset", "LastTimestamp",
    "Duration(min)",
)
HALF_HEADERS = ("ProducerGroup", "Topic", "Partition", "Offset", "TransactionalId", "TimesChecked", "Broker")
MAX_BATCH_SIZE = 500
DEBUG_HINT = " Enable debug logging for additional detail."


class CommandError(Exception):
    """Kafka's ``printErrorAndExit``: the message on stderr, status 1."""


def _failed(message: str, exc: AdminFailure) -> CommandError:
    """``printErrorAndExit(message, t)``: the cause's message and the debug hint appended."""
    return CommandError(f"{message}: {exc}.{DEBUG_HINT}")


def _short(text: str) -> int:
    value = int(text)
    if not -32768 <= value <= 32767:
        raise argparse.ArgumentTypeError(f"could not convert '{text}' to Short (Value out of range)")
    return value


_short.__name__ = "Short"

#: option → (type, help); every command option of Kafka's sub-parsers.
_OPTIONS: dict[str, tuple[Any, str]] = {
    "--transactional-id": (str, "transactional id"),
    "--topic": (str, "topic name"),
    "--partition": (int, "partition number"),
    "--broker-id": (int, "broker id (describe-producers: describe the producer state on a specific replica; "
                         "find-hanging: broker id to search for hanging transactions)"),
    "--start-offset": (int, "start offset of the transaction to abort (brokers on versions 3.0 and above)"),
    "--producer-id": (int, "producer id (brokers on versions older than 3.0)"),
    "--producer-epoch": (_short, "producer epoch (brokers on versions older than 3.0)"),
    "--coordinator-epoch": (int, "coordinator epoch (brokers on versions older than 3.0)"),
    "--max-transaction-timeout": (int, "maximum transaction timeout in minutes to limit the scope of the search "
                                       "(15 minutes by default)"),
}
_COMMAND_OPTIONS: dict[str, tuple[str, ...]] = {
    "list": (),
    "describe": ("--transactional-id",),
    "describe-producers": ("--broker-id", "--topic", "--partition"),
    "abort": ("--topic", "--partition", "--start-offset", "--producer-id", "--producer-epoch", "--coordinator-epoch"),
    "find-hanging": ("--broker-id", "--max-transaction-timeout", "--topic", "--partition"),
    "list-half": (),
}
_REQUIRED: dict[str, tuple[str, ...]] = {
    "describe": ("--transactional-id",),
    "describe-producers": ("--topic", "--partition"),
    "abort": ("--topic", "--partition"),
}
_HELP = {
    "list": "list transactions",
    "describe": "describe the state of an active transactional-id",
    "describe-producers": "describe the states of active producers for a topic partition",
    "abort": "abort a hanging transaction (requires administrative privileges)",
    "find-hanging": "find hanging transactions",
    "list-half": "list the local-transaction half messages waiting for a check-back (Mafka's own)",
}


def _connection_options(p: argparse.ArgumentParser, default: Any) -> None:
    p.add_argument("--bootstrap-server", metavar="host:port", default=default,
                   help="REQUIRED: hostname and port for the broker to connect to, in the form `host:port`  "
                        "(multiple comma-separated entries can be given)")
    p.add_argument("--command-config", metavar="FILE", default=default,
                   help="property file containing configs to be passed to admin client")
    p.add_argument("--timeout", type=float, default=default, help="seconds each admin call may take (default 30)")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "transactions", description=DESCRIPTION,
        help="list, describe and abort transactions; find hanging ones (kafka-transactions)",
    )
    _connection_options(p, None)
    spelled = p.add_argument_group("commands spelled as flags (instead of COMMAND)")
    flags = spelled.add_mutually_exclusive_group()
    for command in COMMANDS:
        flags.add_argument(f"--{command}", dest="txn_flag", action="store_const", const=command,
                           help=_HELP[command])
    for option, (kind, text) in _OPTIONS.items():
        spelled.add_argument(option, type=kind, default=argparse.SUPPRESS, help=text)
    commands = p.add_subparsers(dest="txn_command", title="commands", metavar="COMMAND")
    for command in COMMANDS:
        c = commands.add_parser(command, help=_HELP[command], description=_HELP[command].capitalize() + ".")
        for option in _COMMAND_OPTIONS[command]:
            kind, text = _OPTIONS[option]
            required = " (required)" if option in _REQUIRED.get(command, ()) else ""
            c.add_argument(option, type=kind, default=argparse.SUPPRESS, help=text + required)
        _connection_options(c, argparse.SUPPRESS)
    p.set_defaults(func=run, txn_parser=p)


# --------------------------------------------------------------------------- output


def pretty_print_table(headers: Sequence[str], rows: Sequence[Sequence[str]], out: TextIO) -> None:
    """Kafka's ``prettyPrintTable``: each value padded to its column's width, then a TAB."""
    widths = [len(h) for h in headers]
    for row in rows:
        for i in range(len(headers)):
            widths[i] = max(widths[i], len(row[i]))
    for row in [headers, *rows]:
        out.write("".join(value.ljust(width) + "\t" for value, width in zip(row, widths, strict=True)) + "\n")


def _now_ms() -> int:
    return int(time.time() * 1000)


def _none(value: int | None) -> str:
    return "None" if value is None else str(value)


def describe_row(transactional_id: str, d: TransactionDescription, now_ms: int) -> list[str]:
    start = d.transaction_start_time_ms
    return [
        str(d.coordinator_id), transactional_id, str(d.producer_id), str(d.producer_epoch), d.state,
        str(d.transaction_timeout_ms), _none(start), _none(None if start is None else now_ms - start),
        ",".join(tp_str(tp) for tp in sorted(d.topic_partitions)),
    ]


def producer_row(s: ProducerState) -> list[str]:
    return [
        str(s.producer_id), str(s.producer_epoch), str(-1 if s.coordinator_epoch is None else s.coordinator_epoch),
        str(s.last_sequence), str(s.last_timestamp), _none(s.current_transaction_start_offset),
    ]


# --------------------------------------------------------------------------- commands


async def _list(admin: TransactionsAdmin, args: argparse.Namespace, out: TextIO) -> None:
    try:
        by_broker = await admin.list_transactions()
    except AdminFailure as exc:
        raise _failed("Failed to list transactions", exc) from None
    rows = [[t.transactional_id, str(broker), str(t.producer_id), t.state]
            for broker, listings in sorted(by_broker.items()) for t in listings]
    pretty_print_table(LIST_HEADERS, rows, out)


async def _describe(admin: TransactionsAdmin, args: argparse.Namespace, out: TextIO) -> None:
    tid = args.transactional_id
    try:
        d = await admin.describe_transaction(tid)
    except AdminFailure as exc:
        raise _failed(f"Failed to describe transaction state of transactional-id `{tid}`", exc) from None
    pretty_print_table(DESCRIBE_HEADERS, [describe_row(tid, d, _now_ms())], out)


async def _describe_producers(admin: TransactionsAdmin, args: argparse.Namespace, out: TextIO) -> None:
    tp = (args.topic, args.partition)
    broker = getattr(args, "broker_id", None)
    try:
        states = (await admin.describe_producers([tp], broker))[tp]
    except AdminFailure as exc:
        where = "leader" if broker is None else f"broker {broker}"
        raise _failed(f"Failed to describe producers for partition {tp_str(tp)} on {where}", exc) from None
    pretty_print_table(PRODUCERS_HEADERS, [producer_row(s) for s in states], out)


async def _abort_spec_at(admin: TransactionsAdmin, tp: tuple[str, int], start_offset: int) -> AbortTransactionSpec:
    try:
        states = (await admin.describe_producers([tp]))[tp]
    except AdminFailure as exc:
        raise _failed(f"Failed to validate producer state for partition {tp_str(tp)}", exc) from None
    for s in states:
        if s.current_transaction_start_offset == start_offset:
            epoch = 0 if s.coordinator_epoch is None else s.coordinator_epoch
            return AbortTransactionSpec(tp, s.producer_id, s.producer_epoch, epoch)
    raise CommandError(f"Could not find any open transactions starting at offset {start_offset} on partition "
                       f"{tp_str(tp)}")


async def _abort(admin: TransactionsAdmin, args: argparse.Namespace, out: TextIO) -> None:
    tp = (args.topic, args.partition)
    start_offset = getattr(args, "start_offset", None)
    producer_id = getattr(args, "producer_id", None)
    if start_offset is None and producer_id is None:
        raise CommandError("The transaction to abort must be identified either with --start-offset (for brokers on "
                           "3.0 or above) or with --producer-id, --producer-epoch, and --coordinator-epoch (for "
                           "older brokers)")
    if start_offset is None:
        assert producer_id is not None  # refused above with start_offset None
        producer_epoch = getattr(args, "producer_epoch", None)
        if producer_epoch is None:
            raise CommandError("Missing required argument --producer-epoch")
        coordinator_epoch = getattr(args, "coordinator_epoch", None)
        if coordinator_epoch is None:
            raise CommandError("Missing required argument --coordinator-epoch")
        # A transaction begun by a new producer id that hangs before its first marker shows
        # coordinator epoch -1; 0 is no greater than any epoch a coordinator can have used.
        spec = AbortTransactionSpec(tp, producer_id, producer_epoch, max(0, coordinator_epoch))
    else:
        spec = await _abort_spec_at(admin, tp, start_offset)
    try:
        await admin.abort_transaction(spec)
    except AdminFailure as exc:
        raise _failed(f"Failed to abort transaction {spec}", exc) from None


async def _find_hanging(admin: TransactionsAdmin, args: argparse.Namespace, out: TextIO) -> None:
    broker = getattr(args, "broker_id", None)
    topic = getattr(args, "topic", None)
    partition = getattr(args, "partition", None)
    if topic is None and broker is None:
        raise CommandError("The `find-hanging` command requires either --topic or --broker-id to limit the scope "
                           "of the search")
    if partition is not None and topic is None:
        raise CommandError("The --partition argument requires --topic to be provided")
    max_timeout_ms = getattr(args, "max_transaction_timeout", 15) * 60_000

    # The partitions to search.
    if topic is not None and partition is not None:
        partitions = [(topic, partition)]
    else:
        if topic is not None:
            topics = [topic]
        else:
            try:
                topics = await admin.list_topics()
            except AdminFailure as exc:
                raise _failed("Failed to list topics", exc) from None
        partitions = []
        for batch in _batches(topics):
            try:
                described = await admin.describe_topics(batch)
            except AdminFailure as exc:
                raise _failed(f"Failed to describe {len(batch)} topics", exc) from None
            for name in batch:
                partitions += [(name, p.partition) for p in described[name] if broker is None or broker in p.replicas]

    # Open transactions idle for longer than the timeout.
    candidates: list[tuple[tuple[str, int], ProducerState]] = []
    for batch in _batches(partitions):
        try:
            found = await admin.describe_producers(batch, broker)
        except AdminFailure as exc:
            where = "Optional.empty" if broker is None else f"Optional[{broker}]"
            raise _failed(f"Failed to describe producers for {len(batch)} partitions on broker {where}", exc) from None
        now = _now_ms()
        for tp in batch:
            for s in found[tp]:
                if s.current_transaction_start_offset is not None and now - s.last_timestamp > max_timeout_ms:
                    candidates.append((tp, s))

    hanging: list[tuple[tuple[str, int], ProducerState]] = []
    if candidates:
        by_producer: dict[int, list[tuple[tuple[str, int], ProducerState]]] = {}
        for tp, s in candidates:
            by_producer.setdefault(s.producer_id, []).append((tp, s))
        try:
            listings = await admin.list_transactions(producer_id_filters=sorted(by_producer))
        except AdminFailure as exc:
            raise _failed(f"Failed to list transactions for {len(by_producer)} producers", exc) from None
        ids = {t.producer_id: t.transactional_id for ls in listings.values() for t in ls if t.producer_id in by_producer}
        descriptions: dict[str, TransactionDescription | None] = {}
        for tid in dict.fromkeys(ids.values()):
            try:
                descriptions[tid] = await admin.describe_transaction(tid)
            except TransactionalIdNotFound:
                descriptions[tid] = None
            except AdminFailure as exc:
                raise _failed(f"Failed to describe {len(set(ids.values()))} transactions", exc) from None
        for pid in sorted(by_producer):
            pid_tid = ids.get(pid)
            description = None if pid_tid is None else descriptions.get(pid_tid)
            for tp, s in by_producer[pid]:
                # A partition the coordinator still counts in the transaction (Ongoing, or
                # PrepareCommit / PrepareAbort without its marker yet) will get its marker.
                if description is None or tp not in description.topic_partitions:
                    hanging.append((tp, s))

    now = _now_ms()
    rows = [[tp[0], str(tp[1]), str(s.producer_id), str(s.producer_epoch),
             str(-1 if s.coordinator_epoch is None else s.coordinator_epoch),
             str(s.current_transaction_start_offset), str(s.last_timestamp),
             str((now - s.last_timestamp) // 60_000)] for tp, s in hanging]
    pretty_print_table(HANGING_HEADERS, rows, out)


def _batches(items: list[Any]) -> list[list[Any]]:
    return [items[i:i + MAX_BATCH_SIZE] for i in range(0, len(items), MAX_BATCH_SIZE)]


async def _list_half(admin: TransactionsAdmin, args: argparse.Namespace, out: TextIO) -> None:
    try:
        by_broker = await admin.list_half()
    except AdminFailure as exc:
        raise _failed("Failed to list half messages", exc) from None
    rows = [[h.producer_group, h.topic, str(h.partition), str(h.offset), h.transactional_id, str(h.times_checked),
             str(broker)] for broker, halves in sorted(by_broker.items()) for h in halves]
    pretty_print_table(HALF_HEADERS, rows, out)


_RUN = {
    "list-half": _list_half,
    "list": _list,
    "describe": _describe,
    "describe-producers": _describe_producers,
    "abort": _abort,
    "find-hanging": _find_hanging,
}


def _command(args: argparse.Namespace) -> str:
    """The command, however spelled; its required options checked (argparse4j's messages)."""
    positional, flag = args.txn_command, args.txn_flag
    if positional is not None and flag is not None and positional != flag:
        raise _UsageError(f"argument --{flag}: not allowed with command {positional}")
    command = positional or flag
    if command is None:
        raise _UsageError("too few arguments")
    if not getattr(args, "bootstrap_server", None):
        raise _UsageError("argument --bootstrap-server is required")
    for option in _REQUIRED.get(command, ()):
        if getattr(args, option[2:].replace("-", "_"), None) is None:
            raise _UsageError(f"argument {option} is required")
    allowed = {o[2:].replace("-", "_") for o in _COMMAND_OPTIONS[command]}
    for option in _OPTIONS:
        dest = option[2:].replace("-", "_")
        if dest not in allowed and hasattr(args, dest):
            raise _UsageError(f"unrecognized arguments: '{option}'")
    return command


class _UsageError(Exception):
    pass


async def _execute(command: str, args: argparse.Namespace, config: dict[str, Any], timeout_s: float,
                   out: TextIO) -> None:
    parsed = parse_config("admin", config)
    kernel = Kernel(parsed)
    try:
        admin = TransactionsAdmin(kernel, timeout_s, parsed["retry.backoff.ms"] / 1000.0)
        await _RUN[command](admin, args, out)
    finally:
        await kernel.close()


def run(args: argparse.Namespace) -> int:
    parser: argparse.ArgumentParser = args.txn_parser
    try:
        command = _command(args)
    except _UsageError as exc:
        parser.print_usage(sys.stderr)
        print(f"{parser.prog}: error: {exc}", file=sys.stderr)
        return 1
    try:
        props = load_properties(args.command_config) if getattr(args, "command_config", None) else {}
    except (OSError, ValueError) as exc:  # ValueError: a malformed \uxxxx escape
        print(f"Failed to load admin client properties: {exc}.{DEBUG_HINT}", file=sys.stderr)
        return 1
    # Kafka's bound on each admin call; Mafka's client has no such key, --timeout wins.
    api_timeout_ms = props.pop("default.api.timeout.ms", None)
    timeout = getattr(args, "timeout", None)
    if timeout is None:
        try:
            timeout = int(api_timeout_ms) / 1000.0 if api_timeout_ms is not None else 30.0
        except ValueError:
            print(f"org.apache.kafka.common.config.ConfigException: Invalid value {api_timeout_ms} for "
                  "configuration default.api.timeout.ms: Not a number of type INT", file=sys.stderr)
            return 1
    settings = {k: v for k, v in client_settings(props, "admin").items() if k != "bootstrap.servers"}
    config = {**settings, **admin_config(args.bootstrap_server, "mafka-transactions", timeout)}
    try:
        asyncio.run(_execute(command, args, config, timeout, sys.stdout))
    except CommandError as exc:
        sys.stdout.flush()
        print(str(exc), file=sys.stderr)
        return 1
    except (ConfigError, ValueError) as exc:  # a bad bootstrap list or admin property
        print(f"org.apache.kafka.common.config.ConfigException: {exc}", file=sys.stderr)
        return 1
    sys.stdout.flush()
    return 0
