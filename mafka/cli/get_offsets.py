"""``mafka get-offsets``: Kafka's ``kafka-get-offsets.sh`` (``GetOffsetShell``, as in Kafka 3.8) for Mafka.

Flags are Kafka's: ``--bootstrap-server`` (or the deprecated ``--broker-list``,
ignored when ``--bootstrap-server`` is given), ``--topic`` (a regular expression,
matched against the whole name) with ``--partitions 0,1``, or instead
``--topic-partitions`` (comma-separated ``TOPIC-REGEX[:PARTITIONS]`` patterns,
PARTITIONS being ``N``, ``N-M`` (M exclusive), ``N-`` or ``-M``), ``--time``
(``-1``/``latest``, the default; ``-2``/``earliest``; ``-3``/``max-timestamp``;
or a timestamp in ms: the first offset whose timestamp is at or after it),
``--command-config`` (admin client properties) and ``--exclude-internal-topics``.
``--timeout`` (seconds for each call to the cluster) is Mafka's own.

Topics are listed with :meth:`mafka.client.AdminClient.list_topics`, filtered,
and ListOffsets is sent to the partitions' leaders
(:meth:`~mafka.client.AdminClient.list_offsets`).  Each answer prints as
``topic:partition:offset``, in Kafka 3.8's order: sorted by the partition's
``topic-partition`` *string* (so ``t-10`` comes before ``t-2``, as in Kafka).  A
partition whose lookup failed is skipped with Kafka's ``Skip getting offsets for
topic-partition t-0 due to error: …`` line on stderr; one without an offset for
the timestamp is skipped silently.  Errors are Kafka's ``Error occurred: …``
lines on stderr with exit status 1 (where Kafka also prints a Java stack trace,
its first line is printed instead).
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from mafka.cli.clients import admin_config, error_text, java_exception
from mafka.client.admin import AdminClient, OffsetSpec
from mafka.client.kafka_error import KafkaError, KafkaException
from mafka.client.message import TopicPartition
from mafka.topics import INTERNAL_TOPICS

__all__ = [
    "add_parser", "run", "ToolError", "TopicPartitionFilter", "parse_offset_spec", "parse_topic_partitions",
    "topic_and_partitions_filter", "valid_bootstrap", "offset_lines", "fetch_offsets",
]

USAGE_TEXT = "An interactive shell for getting topic-partition offsets."
CLIENT_ID = "GetOffsetShell"
#: Kafka's ``TOPIC_PARTITION_PATTERN`` (its text is part of the ``--topic-partitions`` help, as in Kafka).
TOPIC_PARTITION_PATTERN = r"([^:,]*)(?::(?:([0-9]*)|(?:([0-9]*)-([0-9]*))))?"
_INT_MAX = 2**31 - 1
#: Kafka's ``ListOffsetsResponse.UNKNOWN_OFFSET``: no offset for the timestamp
UNKNOWN_OFFSET = -1
_MALFORMED_TIME = ("Malformed time argument {}. Please use -1 or latest / -2 or earliest / -3 or max-timestamp, "
                   "or a specified long format timestamp")
#: Kafka's ``Utils.getPort`` pattern: a bootstrap entry needs a numeric port after the last ``:``
_HOST_PORT = re.compile(r".*?\[?([0-9a-zA-Z\-%._:]*)\]?:([0-9]+)")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("get-offsets", help="print partitions' offsets for a time (kafka-get-offsets)",
                       description=USAGE_TEXT)
    p.add_argument("--bootstrap-server", metavar="HOST1:PORT1,...,HOST3:PORT3",
                   help="REQUIRED. The server(s) to connect to in the form HOST1:PORT1,HOST2:PORT2.")
    p.add_argument("--broker-list", metavar="HOST1:PORT1,...,HOST3:PORT3",
                   help="DEPRECATED, use --bootstrap-server instead; ignored if --bootstrap-server is specified. "
                        "The server(s) to connect to in the form HOST1:PORT1,HOST2:PORT2.")
    p.add_argument("--topic-partitions", metavar="topic1:1,topic2:0-3,topic3,topic4:5-,topic5:-3",
                   help="Comma separated list of topic-partition patterns to get the offsets for, with the format "
                        f"of '{TOPIC_PARTITION_PATTERN}'. The first group is an optional regex for the topic name, "
                        "if omitted, it matches any topic name. The section after ':' describes a 'partition' "
                        "pattern, which can be: a number, a range in the format of 'NUMBER-NUMBER' (lower "
                        "inclusive, upper exclusive), an inclusive lower bound in the format of 'NUMBER-', an "
                        "exclusive upper bound in the format of '-NUMBER' or may be omitted to accept all "
                        "partitions.".replace("%", "%%"))
    p.add_argument("--topic", metavar="topic",
                   help="The topic to get the offsets for. It also accepts a regular expression. If not present, "
                        "all authorized topics are queried. Cannot be used if --topic-partitions is present.")
    p.add_argument("--partitions", metavar="partition ids",
                   help="Comma separated list of partition ids to get the offsets for. If not present, all "
                        "partitions of the authorized topics are queried. Cannot be used if --topic-partitions "
                        "is present.")
    p.add_argument("--time", default="latest",
                   metavar="<timestamp> / -1 or latest / -2 or earliest / -3 or max-timestamp",
                   help="timestamp of the offsets before that. [Note: No offset is returned, if the timestamp "
                        "greater than recently committed record timestamp is given.] (default: latest)")
    p.add_argument("--command-config", metavar="config file",
                   help="Property file containing configs to be passed to Admin Client.")
    p.add_argument("--exclude-internal-topics", action="store_true",
                   help="By default, internal topics are included. If specified, internal topics are excluded.")
    p.add_argument("--timeout", type=float, default=30.0,
                   help="Mafka: seconds to wait for the cluster on each call (default: 30)")
    p.set_defaults(func=run, usage_text=p.format_help)


class ToolError(Exception):
    """Kafka's ``TerseException`` (``Error occurred: message``), or with ``exception`` set, another
    throwable, whose stack trace's first line (``exception: message``) Kafka prints next."""

    def __init__(self, message: str, exception: str | None = None) -> None:
        super().__init__(message)
        self.message = message
        self.exception = exception

    def lines(self) -> list[str]:
        out = [f"Error occurred: {self.message}"]
        if self.exception is not None:
            out.append(f"{self.exception}: {self.message}")
        return out


# --------------------------------------------------------------------------- the filters


def _topic_regex(raw: str) -> re.Pattern[str]:
    """Kafka's ``TopicFilter.IncludeList``: commas become ``|``, blanks and surrounding quotes go."""
    regex = re.sub(r"[\"']+$", "", re.sub(r"^[\"']+", "", raw.strip().replace(",", "|").replace(" ", "")))
    try:
        return re.compile(regex)
    except re.error:
        raise ToolError(f"{regex} is an invalid regex.", "java.lang.RuntimeException") from None


@dataclass(frozen=True)
class _Rule:
    """One topic regex with its partitions: a set (empty: all), or the range ``[low, high)``."""

    topic: re.Pattern[str]
    partitions: frozenset[int] | None = None
    low: int = 0
    high: int = _INT_MAX

    def topic_allowed(self, topic: str) -> bool:
        return self.topic.fullmatch(topic) is not None

    def allowed(self, topic: str, partition: int) -> bool:
        if not self.topic_allowed(topic):
            return False
        if self.partitions is not None:
            return not self.partitions or partition in self.partitions
        return self.low <= partition < self.high


@dataclass(frozen=True)
class TopicPartitionFilter:
    """Kafka's ``CompositeTopicPartitionFilter``: a topic or partition passes if any rule lets it."""

    rules: tuple[_Rule, ...]

    def topic_allowed(self, topic: str) -> bool:
        return any(rule.topic_allowed(topic) for rule in self.rules)

    def allowed(self, topic: str, partition: int) -> bool:
        return any(rule.allowed(topic, partition) for rule in self.rules)


def parse_topic_partitions(text: str) -> TopicPartitionFilter:
    """``--topic-partitions``: Kafka's ``createTopicPartitionFilterWithPatternList``.

    ``topic1:1,topic2:0-3,topic3,topic4:5-,topic5:-3,:0`` — an empty topic part matches every
    topic, a missing partition part every partition.

    Raises:
        ToolError: a rule that does not fit the pattern, or a topic regex that does not compile.
    """
    rules = []
    # Java's String.split drops trailing empty strings: "a," is one rule, "" is one empty rule.
    specs = text.split(",")
    while len(specs) > 1 and specs[-1] == "":
        specs.pop()
    for spec in specs:
        match = re.fullmatch(TOPIC_PARTITION_PATTERN, spec)
        if match is None:
            raise ToolError(f"org.apache.kafka.tools.TerseException: Invalid rule specification: {spec}",
                            "java.lang.RuntimeException")
        topic, single, low, high = (g or None for g in match.groups())
        regex = _topic_regex(topic if topic is not None else ".*")
        if single is not None:
            rules.append(_Rule(regex, low=int(single), high=int(single) + 1))
        else:
            rules.append(_Rule(regex, low=int(low) if low is not None else 0,
                               high=int(high) if high is not None else _INT_MAX))
    return TopicPartitionFilter(tuple(rules))


def topic_and_partitions_filter(topic: str | None, partitions: str | None) -> TopicPartitionFilter:
    """``--topic`` (default every topic) with ``--partitions`` (default every partition).

    Raises:
        ToolError: a partition id that is not a number, or a topic regex that does not compile.
    """
    ids: frozenset[int] = frozenset()
    if partitions:
        pieces = partitions.split(",")
        if not all(re.fullmatch(r"[+-]?[0-9]+", p) and -(2**31) <= int(p) <= _INT_MAX for p in pieces):
            # (Java's Integer.parseInt: no blanks, an int's range)
            raise ToolError("--partitions expects a comma separated list of numeric partition ids, but received: "
                            f"{partitions}")
        ids = frozenset(int(p) for p in pieces)
    return TopicPartitionFilter((_Rule(_topic_regex(topic if topic is not None else ".*"), partitions=ids),))


def parse_offset_spec(text: str) -> OffsetSpec:
    """``--time``: Kafka 3.8's ``parseOffsetSpec``.

    Raises:
        ToolError: neither a known name nor a long.
    """
    named = {"earliest": OffsetSpec.earliest, "latest": OffsetSpec.latest, "max-timestamp": OffsetSpec.max_timestamp}
    if text in named:
        return named[text]()
    # Long.parseLong: an optional sign and digits, no blanks, a long's range
    if re.fullmatch(r"[+-]?[0-9]+", text) is None or not -(2**63) <= int(text) < 2**63:
        raise ToolError(_MALFORMED_TIME.format(text))
    value = int(text)
    if value in (-1, -2, -3):
        return OffsetSpec(value)
    return OffsetSpec.for_timestamp(value)


def valid_bootstrap(servers: str) -> bool:
    """Kafka's ``ToolsUtils.validateBootstrapServer``: every comma-separated entry has a port."""
    if not servers.strip():
        return False
    return all(_HOST_PORT.fullmatch(entry) is not None for entry in servers.split(","))


# --------------------------------------------------------------------------- the lookups


def _partitions(admin: AdminClient, flt: TopicPartitionFilter, exclude_internal: bool,
                timeout: float) -> list[tuple[str, int]]:
    """Kafka's ``listPartitionInfos``: the topics' partitions that pass the filter."""
    try:
        md = admin.list_topics(timeout=timeout)
    except KafkaException as exc:
        raise _call_failed(exc.error, "listTopics") from None
    out: list[tuple[str, int]] = []
    for name, topic in md.topics.items():
        if exclude_internal and name in INTERNAL_TOPICS:
            continue
        if not flt.topic_allowed(name):
            continue
        if topic.error is not None and not topic.partitions:
            # Kafka's describeTopics fails the whole call for such a topic.
            raise ToolError(java_exception(topic.error.code(), error_text(topic.error)),
                            "java.util.concurrent.ExecutionException")
        out.extend((name, p) for p in topic.partitions if flt.allowed(name, p))
    return out


def _call_failed(error: KafkaError, call: str) -> ToolError:
    """A whole admin call that failed, as Kafka's ExecutionException prints it (no broker reached:
    the Java admin client's ``TimeoutException``)."""
    if error.code() in (KafkaError._TIMED_OUT, KafkaError._TRANSPORT):
        text = f"Timed out waiting for a node assignment. Call: {call}"
        return ToolError(f"org.apache.kafka.common.errors.TimeoutException: {text}",
                         "java.util.concurrent.ExecutionException")
    return ToolError(java_exception(error.code(), error_text(error)), "java.util.concurrent.ExecutionException")


def fetch_offsets(admin: AdminClient, flt: TopicPartitionFilter, spec: OffsetSpec, exclude_internal: bool,
                  timeout: float, warn: Callable[[str], None]) -> dict[tuple[str, int], int]:
    """Kafka's ``fetchOffsets``: (topic, partition) → offset for every partition that has one.

    ``warn`` gets Kafka's ``Skip getting offsets …`` line for each partition whose lookup failed.

    Raises:
        ToolError: no partition matched, or the topic listing failed.
    """
    partitions = _partitions(admin, flt, exclude_internal, timeout)
    if not partitions:
        raise ToolError("Could not match any topic-partitions with the specified filters")
    futures = admin.list_offsets({TopicPartition(t, p): spec for t, p in partitions}, request_timeout=timeout)
    by_key = {(tp.topic, tp.partition): future for tp, future in futures.items()}
    out: dict[tuple[str, int], int] = {}
    for topic, partition in partitions:
        try:
            info = by_key[(topic, partition)].result(timeout + 5.0)
        except KafkaException as exc:
            err = exc.error
            if err.code() == KafkaError._TIMED_OUT:
                text = "org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node assignment. " \
                       "Call: listOffsets on broker"
            else:
                text = java_exception(err.code(), error_text(err))
            warn(f"Skip getting offsets for topic-partition {topic}-{partition} due to error: {text}")
            continue
        except TimeoutError:
            warn(f"Skip getting offsets for topic-partition {topic}-{partition} due to error: "
                 "org.apache.kafka.common.errors.TimeoutException: Timed out waiting for a node assignment.")
            continue
        if info.offset != UNKNOWN_OFFSET:
            out[(topic, partition)] = info.offset
    return out


def offset_lines(offsets: dict[tuple[str, int], int]) -> list[str]:
    """``topic:partition:offset`` lines in Kafka 3.8's order (its TreeMap compares ``TopicPartition.toString()``)."""
    ordered = sorted(offsets.items(), key=lambda item: _java_order(f"{item[0][0]}-{item[0][1]}"))
    return [f"{topic}:{partition}:{offset}" for (topic, partition), offset in ordered]


def _java_order(text: str) -> list[int]:
    """Java's ``String.compareTo`` order: by UTF-16 code units (differs from Python's beyond the BMP)."""
    data = text.encode("utf-16-be")
    return [int.from_bytes(data[i:i + 2], "big") for i in range(0, len(data), 2)]


# --------------------------------------------------------------------------- the command


def run(args: argparse.Namespace) -> int:
    given = [args.bootstrap_server, args.broker_list, args.topic_partitions, args.topic, args.partitions,
             args.command_config]
    if all(v is None for v in given) and not args.exclude_internal_topics and args.time == "latest":
        print(USAGE_TEXT, file=sys.stderr)
        print(args.usage_text(), file=sys.stderr, end="")
        return 1
    try:
        return _run(args)
    except ToolError as exc:
        for line in exc.lines():
            print(line, file=sys.stderr)
        return 1


def _run(args: argparse.Namespace) -> int:
    bootstrap = args.bootstrap_server if args.bootstrap_server is not None else args.broker_list
    if bootstrap is None:
        raise ToolError("Missing required option(s) [bootstrap-server]")
    if not valid_bootstrap(bootstrap):
        print("Please provide valid host:port like host1:9091,host2:9092\n", file=sys.stderr)
        print(args.usage_text(), file=sys.stderr, end="")
        return 1
    if args.topic_partitions is not None and (args.topic is not None or args.partitions is not None):
        raise ToolError("--topic-partitions cannot be used with --topic or --partitions")
    spec = parse_offset_spec(args.time)
    if args.topic_partitions is not None:
        flt = parse_topic_partitions(args.topic_partitions)
    else:
        flt = topic_and_partitions_filter(args.topic, args.partitions)
    try:
        config = admin_config(bootstrap, CLIENT_ID, args.timeout, args.command_config)
        admin = AdminClient(config)
    except ValueError as exc:  # an unreadable --command-config, a bad setting or bootstrap list
        raise ToolError(str(exc), "org.apache.kafka.common.config.ConfigException") from None
    with admin:
        offsets = fetch_offsets(admin, flt, spec, args.exclude_internal_topics, args.timeout,
                                lambda line: print(line, file=sys.stderr, flush=True))
    for line in offset_lines(offsets):
        print(line)
    sys.stdout.flush()
    return 0
