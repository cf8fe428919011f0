"""``mafka consumer-groups``: ``kafka-consumer-groups.sh --bootstrap-server`` for Mafka.

Kafka 2.8's tool for classic groups, with Kafka 4's additions for the group
types of KIP-848 (``classic`` and ``consumer``).

Actions (exactly one):

* ``--list [--state [s,…]] [--type [t,…]]``: the consumer groups of every
  broker (protocol type ``consumer`` or empty),
  :meth:`AdminClient.list_consumer_groups`; with ``--state`` and/or ``--type``
  Kafka 4's ``GROUP [TYPE] [STATE]`` table, filtered by the states / types
  given (``--type classic,consumer``; Kafka 4 takes no other type here).
* ``--describe (--group g … | --all-groups) [--offsets | --members [--verbose] | --state [--verbose]]``:
  Kafka's three tables, column widths computed from the data exactly as
  ``ConsumerGroupCommand`` does; unknown values print ``-``.  A classic group
  prints Kafka 2.8's tables, as it always has: it is described by
  :meth:`AdminClient.describe_groups` (DescribeGroups at the coordinator; member
  assignments decoded here, :mod:`mafka.group.consumer_protocol`).  A group
  that DescribeGroups does not know (``Dead``) is asked again with
  :meth:`AdminClient.describe_consumer_groups` (ConsumerGroupDescribe), and a
  consumer group prints Kafka 4's tables: ``--members`` with
  ``--verbose`` adds CURRENT-EPOCH, CURRENT-ASSIGNMENT, TARGET-EPOCH,
  TARGET-ASSIGNMENT (and UPGRADED when classic and consumer members mix),
  ``--state`` has Kafka 4's layout and with ``--verbose`` GROUP-EPOCH and
  TARGET-ASSIGNMENT-EPOCH.  Committed offsets come from
  ``list_consumer_group_offsets``, log-end offsets from ``list_offsets``
  (latest, at each partition's leader).
* ``--reset-offsets (--group g | --all-groups) (--topic t[:p,…] … | --all-topics)
  (--to-earliest | --to-latest | --to-current | --to-offset N | --shift-by n |
  --to-datetime T | --by-duration D) [--dry-run | --execute | --export]``:
  only for an Empty or Dead group; offsets outside [earliest, latest] are
  clamped with Kafka's WARN line; ``--execute`` commits with
  ``alter_consumer_group_offsets`` (OffsetCommit, generation -1, member id "").
* ``--delete (--group g … | --all-groups)``: ``delete_consumer_groups``.
* ``--delete-offsets --group g --topic t[:p,…] …``: OffsetDelete (KIP-496) through
  ``delete_consumer_group_offsets``; a topic named without partitions means all of
  its partitions.  Kafka's result line (or ``Error:`` line) and its
  ``TOPIC PARTITION STATUS`` table.

All through :class:`mafka.client.AdminClient`, which finds each group's
coordinator and retries COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS
and NOT_COORDINATOR; ``--timeout`` (ms, default 5000) bounds each operation,
as it bounds Kafka's admin calls.

Output texts and streams are Kafka 2.8's: tables and ``Error: …`` lines
(Kafka's ``printError``, preceded by an empty line) go to stdout; "has no
active members", "is rebalancing", the dry-run WARN and the clamping WARN
lines go to stderr; argument errors print their message on stderr.  Unlike
Kafka (which exits 0 after ``printError``), every error exits with status 1.

Not supported: ``--from-file``, ``--validate-regex``, and Kafka 4's LEADER-EPOCH column of
``--offsets --verbose`` (the offsets table is the same for both group types).
"""

from __future__ import annotations

import argparse
import builtins
import concurrent.futures
import re
import sys
import time
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta, timezone
from typing import Any

from mafka.cli.clients import admin_config
from mafka.cli.consumer_groups_tables import (
    MISSING,
    GroupDescription,
    GroupListing,
    Member,
    MemberRow,
    Node,
    PartitionRow,
    format_consumer_members,
    format_consumer_state,
    format_delete_offsets,
    format_export,
    format_list,
    format_members,
    format_offsets,
    format_reset,
    format_state,
)
from mafka.client.admin import AdminClient
from mafka.client.admin_types import (
    ConsumerGroupDescription,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    OffsetSpec,
)
from mafka.client.kafka_error import KafkaError as ClientError
from mafka.client.kafka_error import KafkaException
from mafka.client.message import TopicPartition as ClientPartition
from mafka.errors import ErrorCode
from mafka.group.consumer_protocol import PROTOCOL_TYPE, decode_assignment
from mafka.topics import TopicPartitionTuple
from mafka.wire.apis.list_offsets import EARLIEST_TIMESTAMP as EARLIEST
from mafka.wire.apis.list_offsets import LATEST_TIMESTAMP as LATEST

__all__ = [
    "add_parser",
    "run",
    "GroupAdmin",
    "CommandFailed",
    "UsageError",
    "parse_datetime",
    "parse_duration",
    "format_offsets",
    "format_members",
    "format_state",
    "format_consumer_members",
    "format_consumer_state",
    "format_list",
    "format_reset",
    "format_delete_offsets",
]

#: Kafka 4's ``GroupState.groupStatesForType(CONSUMER)``: what ``--state`` accepts.
STATES = ("PreparingRebalance", "CompletingRebalance", "Stable", "Dead", "Empty", "Assigning", "Reconciling")
#: What ``--list --type`` accepts (Kafka 4's ``consumerGroupTypesFromString``), by Java's names.
TYPES = ("Classic", "Consumer")
REBALANCING = ("PreparingRebalance", "CompletingRebalance", "Assigning", "Reconciling")
ACTIONS = ("list", "describe", "delete", "reset-offsets", "delete-offsets")
SCENARIOS = ("to-offset", "shift-by", "to-datetime", "by-duration", "to-earliest", "to-latest",
             "to-current", "from-file")
NO_EXECUTE_WARNING = (
    "WARN: No action will be performed as the --execute option is missing."
    "In a future major release, the default behavior of this command will be to prompt the user before "
    "executing the reset rather than doing a dry run. You should add the --dry-run option explicitly "
    "if you are scripting this command and want to keep the current default behavior without prompting."
)

# Kafka's exception class names where they are not CamelCase(name) + "Exception".
_JAVA_NAMES = {
    ErrorCode.NON_EMPTY_GROUP: "GroupNotEmptyException",
    ErrorCode.GROUP_AUTHORIZATION_FAILED: "GroupAuthorizationException",
    ErrorCode.TOPIC_AUTHORIZATION_FAILED: "TopicAuthorizationException",
    ErrorCode.CLUSTER_AUTHORIZATION_FAILED: "ClusterAuthorizationException",
    ErrorCode.UNKNOWN_SERVER_ERROR: "UnknownServerException",
    ErrorCode.REQUEST_TIMED_OUT: "TimeoutException",
    ErrorCode.OFFSET_METADATA_TOO_LARGE: "OffsetMetadataTooLarge",
    ErrorCode.NETWORK_EXCEPTION: "NetworkException",
}


class UsageError(Exception):
    """Kafka's ``printUsageAndDie``: the message on stderr, status 1."""


class CommandFailed(Exception):
    """Kafka's catch-all: ``Error: Executing consumer group command failed due to <message>``."""


def java_error(code: int) -> str:
    """``org.apache.kafka.common.errors.GroupNotEmptyException: The group is not empty.``"""
    try:
        ec = ErrorCode(code)
    except ValueError:
        return f"org.apache.kafka.common.errors.UnknownServerException: Unknown error code {code}."
    name = _JAVA_NAMES.get(ec) or "".join(w.capitalize() for w in ec.name.split("_")) + "Exception"
    return f"org.apache.kafka.common.errors.{name}: {ec.description}"


def _tp(tp: TopicPartitionTuple) -> str:
    return f"{tp[0]}-{tp[1]}"


# --------------------------------------------------------------------------- requests


class GroupAdmin:
    """The admin calls the command needs, on a :class:`mafka.client.AdminClient`.

    Each method is bounded by ``timeout_s``, as Kafka's ``--timeout`` bounds each admin
    call; the admin client finds coordinators and partition leaders and retries while
    they move.  Failures raise :class:`CommandFailed` with Kafka's exception text.
    """

    def __init__(self, admin: AdminClient, timeout_s: float) -> None:
        self.admin = admin
        self.timeout_s = timeout_s

    def _result(self, name: str, future: Any) -> Any:
        try:
            return future.result(self.timeout_s + 5.0)
        except KafkaException as exc:
            raise CommandFailed(self._java(name, exc.error)) from None
        except concurrent.futures.TimeoutError:
            raise CommandFailed(self._java(name, ClientError(ClientError._TIMED_OUT))) from None

    def _java(self, name: str, err: ClientError) -> str:
        if err.code() == ClientError._TIMED_OUT:
            return (f"org.apache.kafka.common.errors.TimeoutException: Call(callName={name}) timed out "
                    f"after {int(self.timeout_s * 1000)} ms")
        try:
            ErrorCode(err.code())
        except ValueError:
            return f"org.apache.kafka.common.KafkaException: {err.str()}"
        return java_error(err.code())

    # -- operations ------------------------------------------------------------

    def list_groups(self, states: set[str] | None = None, types: set[str] | None = None) -> list[GroupListing]:
        """Every consumer group of every broker, in first-seen order; only those in ``states``
        and of ``types`` (Kafka's names, e.g. ``"Stable"``, ``"Consumer"``) if given."""
        wanted_states = {ConsumerGroupState.from_broker(s) for s in states} if states else None
        wanted_types = {ConsumerGroupType.from_broker(t) for t in types} if types else None
        listed = self._result("listConsumerGroups",
                              self.admin.list_consumer_groups(wanted_states, self.timeout_s, wanted_types))
        if listed.errors:
            raise CommandFailed(self._java("listConsumerGroups", listed.errors[0].error))
        seen: dict[str, GroupListing] = {}
        for g in listed.valid:
            seen.setdefault(g.group_id, GroupListing(g.group_id, g.state.broker_name, g.type.broker_name))
        return list(seen.values())

    def describe_group(self, group: str) -> GroupDescription:
        """The group as DescribeGroups tells it; a group it does not know (``Dead``) is asked
        again with ConsumerGroupDescribe, and described from that if it is a consumer group."""
        classic = self._describe_classic(group)
        if classic.state != "Dead":
            return classic
        (future,) = self.admin.describe_consumer_groups([group], request_timeout=self.timeout_s).values()
        described: ConsumerGroupDescription = self._result("describeConsumerGroups", future)
        if described.type is not ConsumerGroupType.CONSUMER:
            return classic
        return _consumer_group(described)

    def _describe_classic(self, group: str) -> GroupDescription:
        (future,) = self.admin.describe_groups([group], request_timeout=self.timeout_s).values()
        g = self._result("describeConsumerGroups", future)
        protocol_type = g.protocol_type or ""
        if protocol_type not in (PROTOCOL_TYPE, ""):
            raise CommandFailed(
                f"java.lang.IllegalArgumentException: GroupId {group} is not a consumer group ({protocol_type})."
            )
        members = []
        for m in g.members:
            assignment: list[TopicPartitionTuple] = []
            raw = m.assignment or b""
            if protocol_type == PROTOCOL_TYPE and len(raw) > 0:
                try:
                    decoded = decode_assignment(raw)
                except ValueError as exc:
                    raise CommandFailed(f"org.apache.kafka.common.protocol.types.SchemaException: {exc}") from None
                assignment = [(t, p) for t, parts in decoded.assigned_partitions.items() for p in parts]
            members.append(Member(m.id or "", m.group_instance_id, m.client_id or "", m.client_host or "",
                                  assignment))
        coordinator = g.broker
        node = Node(coordinator.id, coordinator.host, coordinator.port) if coordinator is not None \
            else Node(-1, "", -1)
        return GroupDescription(group, g.state or "", protocol_type, g.protocol or "", node, members)

    def committed_offsets(self, group: str) -> dict[TopicPartitionTuple, int]:
        """Every committed offset of ``group``; partitions without one (or with an error) are left out."""
        futures = self.admin.list_consumer_group_offsets([ConsumerGroupTopicPartitions(group)],
                                                         request_timeout=self.timeout_s)
        found = self._result("listConsumerGroupOffsets", futures[group])
        return {(tp.topic, tp.partition): tp.offset for tp in found.topic_partitions or []
                if tp.error is None and tp.offset >= 0}

    def partitions_of(self, topic: str) -> list[int]:
        """The partitions of ``topic`` (Kafka's describeTopics); CommandFailed if it does not exist."""
        try:
            md = self.admin.list_topics(topic, timeout=self.timeout_s)
        except KafkaException as exc:
            raise CommandFailed(self._java("describeTopics", exc.error)) from None
        t = md.topics.get(topic)
        if t is None:
            raise CommandFailed(java_error(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
        if t.error is not None:
            raise CommandFailed(self._java("describeTopics", t.error))
        return sorted(t.partitions)

    def list_offsets(self, tps: Iterable[TopicPartitionTuple], timestamp: int) -> dict[TopicPartitionTuple, int | None]:
        """ListOffsets at ``timestamp`` (-1 latest, -2 earliest) from each leader; None where unknown.

        Partitions whose leader moved (or is not yet elected) are asked again until the
        timeout; a partition or topic that does not exist, or an error, gives None.
        """
        wanted = sorted(set(tps))
        if not wanted:
            return {}
        spec = {EARLIEST: OffsetSpec.earliest(), LATEST: OffsetSpec.latest()}.get(timestamp) \
            or OffsetSpec.for_timestamp(timestamp)
        futures = self.admin.list_offsets({ClientPartition(t, p): spec for t, p in wanted},
                                          request_timeout=self.timeout_s)
        out: dict[TopicPartitionTuple, int | None] = {}
        for tp, future in futures.items():
            try:
                out[(tp.topic, tp.partition)] = future.result(self.timeout_s + 5.0).offset
            except (KafkaException, concurrent.futures.TimeoutError):
                out[(tp.topic, tp.partition)] = None
        return out

    def commit_offsets(self, group: str, offsets: dict[TopicPartitionTuple, int]) -> None:
        """Commits as Kafka's alterConsumerGroupOffsets (generation -1, member id "")."""
        request = ConsumerGroupTopicPartitions(
            group, [ClientPartition(t, p, off, "") for (t, p), off in sorted(offsets.items())])
        futures = self.admin.alter_consumer_group_offsets([request], request_timeout=self.timeout_s)
        result = self._result("offsetCommit", futures[group])
        for tp in result.topic_partitions or []:
            if tp.error is not None:
                raise CommandFailed(self._java("offsetCommit", tp.error))

    def delete_offsets(self, group: str, tps: list[TopicPartitionTuple]) -> tuple[int, dict[TopicPartitionTuple, str | None]]:
        """OffsetDelete: (the first error, as Kafka's ``all()`` reports it; each partition's
        error text, None if deleted).  A group-level error fails every partition with it."""
        request = ConsumerGroupTopicPartitions(group, [ClientPartition(t, p) for t, p in tps])
        futures = self.admin.delete_consumer_group_offsets([request], request_timeout=self.timeout_s)
        try:
            result = futures[group].result(self.timeout_s + 5.0)
        except (KafkaException, concurrent.futures.TimeoutError) as exc:
            err = exc.error if isinstance(exc, KafkaException) else ClientError(ClientError._TIMED_OUT)
            code = err.code()
            if code < 0:  # not the broker's answer: the call itself failed
                code = ErrorCode.REQUEST_TIMED_OUT if code == ClientError._TIMED_OUT else ErrorCode.UNKNOWN_SERVER_ERROR
            text = self._java("deleteConsumerGroupOffsets", err)
            return code, {tp: text for tp in tps}
        top = ErrorCode.NONE
        out: dict[TopicPartitionTuple, str | None] = {}
        for tp in result.topic_partitions or []:
            out[(tp.topic, tp.partition)] = None if tp.error is None else java_error(tp.error.code())
            if tp.error is not None and top == ErrorCode.NONE:
                top = tp.error.code()
        return top, out

    def delete_group(self, group: str) -> int:
        """DeleteGroups for one group at its coordinator; the group's error code."""
        futures = self.admin.delete_consumer_groups([group], request_timeout=self.timeout_s)
        try:
            futures[group].result(self.timeout_s + 5.0)
        except KafkaException as exc:
            if exc.error.code() < 0:  # not the broker's answer: the call itself failed
                raise CommandFailed(self._java("deleteConsumerGroups", exc.error)) from None
            return exc.error.code()
        return ErrorCode.NONE


def _consumer_group(d: ConsumerGroupDescription) -> GroupDescription:
    """A consumer group (KIP-848) as ``describe_consumer_groups`` tells it."""
    members = [
        Member(m.member_id, m.group_instance_id, m.client_id, m.host,
               [(tp.topic, tp.partition) for tp in m.assignment.topic_partitions],
               [(tp.topic, tp.partition) for tp in (m.target_assignment.topic_partitions
                                                    if m.target_assignment is not None else [])],
               m.member_epoch, m.upgraded)
        for m in d.members
    ]
    c = d.coordinator
    node = Node(c.id, c.host, c.port) if c is not None else Node(-1, "", -1)
    return GroupDescription(d.group_id, d.state.broker_name, PROTOCOL_TYPE, d.partition_assignor or "", node,
                            members, "consumer", d.group_epoch, d.target_assignment_epoch)


# --------------------------------------------------------------------------- times


_DATETIME = re.compile(
    r"(\d{4})-(\d{2})-(\d{2})T(\d{2}):(\d{2}):(\d{2})\.(\d{3})(Z|[+-]\d{2}(?::?\d{2})?)"
)


def parse_datetime(text: str) -> int:
    """Kafka's ``Utils.getDateTime``: ``YYYY-MM-DDTHH:mm:SS.sss[Z|±hh[:mm]]`` → epoch ms (UTC if no zone)."""
    parts = text.split("T")
    if len(parts) < 2:
        raise CommandFailed("Error parsing timestamp. It does not contain a 'T' according to ISO8601 format")
    if not any(c in parts[1] for c in "+-Z"):
        text += "Z"
    m = _DATETIME.fullmatch(text)
    if not m:
        raise CommandFailed(f'Unparseable date: "{text}"')
    zone = m.group(8)
    if zone == "Z":
        tz = UTC
    else:
        digits = zone[1:].replace(":", "")
        offset = timedelta(hours=int(digits[:2]), minutes=int(digits[2:] or 0))
        tz = timezone(offset if zone[0] == "+" else -offset)
    try:
        year, month, day, hour, minute, second = (int(m.group(i)) for i in range(1, 7))
        dt = datetime(year, month, day, hour, minute, second, int(m.group(7)) * 1000, tzinfo=tz)
    except ValueError:
        raise CommandFailed(f'Unparseable date: "{text}"') from None
    return (dt - datetime(1970, 1, 1, tzinfo=UTC)) // timedelta(milliseconds=1)


_DURATION = re.compile(
    r"([-+]?)P(?:([-+]?\d+)D)?(?:T(?:([-+]?\d+)H)?(?:([-+]?\d+)M)?(?:([-+]?\d+)(?:[.,](\d{0,9}))?S)?)?",
    re.IGNORECASE,
)


def parse_duration(text: str) -> int:
    """Java's ``Duration.parse`` for ``PnDTnHnMn.nS`` → milliseconds."""
    m = _DURATION.fullmatch(text)
    if not m or not any(m.group(i) for i in range(2, 6)) or text.upper().endswith("T"):
        raise CommandFailed(f"java.time.format.DateTimeParseException: Text cannot be parsed to a Duration: {text}")
    days, hours, minutes, seconds = (int(m.group(i) or 0) for i in range(2, 6))
    frac = (m.group(6) or "").ljust(3, "0")[:3]
    ms = int(frac) if frac else 0
    if (m.group(5) or "").startswith("-"):
        ms = -ms
    total = ((days * 24 + hours) * 60 + minutes) * 60_000 + seconds * 1000 + ms
    return -total if m.group(1) == "-" else total


# --------------------------------------------------------------------------- command


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "consumer-groups",
        help="list, describe, delete consumer groups, reset or delete their offsets (kafka-consumer-groups)",
    )
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT")
    p.add_argument("--list", action="store_true")
    p.add_argument("--describe", action="store_true")
    p.add_argument("--delete", action="store_true")
    p.add_argument("--reset-offsets", action="store_true")
    p.add_argument("--delete-offsets", action="store_true")
    p.add_argument("--group", action="append", default=[])
    p.add_argument("--all-groups", action="store_true")
    p.add_argument("--topic", action="append", default=[])
    p.add_argument("--all-topics", action="store_true")
    p.add_argument("--members", action="store_true")
    # not dest "verbose": ``mafka`` prints its own timing line for args.verbose
    p.add_argument("--verbose", dest="members_verbose", action="store_true")
    p.add_argument("--offsets", action="store_true")
    p.add_argument("--state", nargs="?", const="", default=None)
    p.add_argument("--type", nargs="?", const="", default=None, dest="group_type",
                   help="with --list: the groups' types, or only groups of these types (classic,consumer)")
    p.add_argument("--timeout", type=int, default=5000, help="ms (Kafka's)")
    p.add_argument("--command-config", metavar="FILE",
                   help="Property file containing configs to be passed to Admin Client.")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--execute", action="store_true")
    p.add_argument("--export", action="store_true")
    p.add_argument("--to-offset", type=int)
    p.add_argument("--shift-by", type=int)
    p.add_argument("--to-datetime")
    p.add_argument("--by-duration")
    p.add_argument("--to-earliest", action="store_true")
    p.add_argument("--to-latest", action="store_true")
    p.add_argument("--to-current", action="store_true")
    p.set_defaults(func=run)


def _has(args: argparse.Namespace, opt: str) -> bool:
    value = getattr(args, opt.replace("-", "_"), None)
    return value not in (None, False, [])


def _scenarios(args: argparse.Namespace) -> list[str]:
    return [s for s in SCENARIOS if s != "from-file" and _has(args, s)]


def check_args(args: argparse.Namespace) -> str:
    """The chosen action; UsageError with Kafka's message for bad combinations."""
    if args.describe:
        if not args.group and not args.all_groups:
            raise UsageError("Option [describe] takes one of these options: [group], [all-groups]")
        if sum(1 for x in (args.members, args.offsets, args.state is not None) if x) > 1:
            raise UsageError("Option [describe] takes at most one of these options: [members], [offsets], [state]")
        if args.state:
            raise UsageError("Option [describe] does not take a value for [state]")
    else:
        for opt, dest in (("members", "members"), ("offsets", "offsets"), ("verbose", "members_verbose")):
            if _has(args, dest):
                raise UsageError(f"Option [{opt}] can't be used without option [describe]")
        if args.state is not None and not args.list:
            raise UsageError("Option [state] can't be used without option [describe] or [list]")
    if getattr(args, "group_type", None) is not None and not args.list:
        # Kafka 4: ``typeOpt.availableIf(listOpt)``, joptsimple's message.
        raise UsageError("Option(s) [type] are unavailable given other options on the command line")
    if args.delete and not args.group and not args.all_groups:
        raise UsageError("Option [delete] takes one of these options: [group], [all-groups]")
    if args.delete and args.topic:
        raise UsageError("The consumer does not support topic-specific offset deletion from a consumer group.")
    if args.delete_offsets and (not args.group or not args.topic):
        raise UsageError("Option [delete-offsets] takes the following options: [group], [topic]")
    if args.reset_offsets:
        if args.dry_run and args.execute:
            raise UsageError("Option [reset-offsets] only accepts one of [execute] and [dry-run]")
        if not args.dry_run and not args.execute:
            print(NO_EXECUTE_WARNING, file=sys.stderr)
        if not args.group and not args.all_groups:
            raise UsageError("Option [reset-offsets] takes one of these options: [group], [all-groups]")
        chosen = _scenarios(args)
        if len(chosen) > 1:
            raise UsageError(f'Option "[{chosen[0]}]" can\'t be used with option "[{chosen[1]}]"')
    if args.group and args.all_groups:
        raise UsageError('Option "[group]" can\'t be used with option "[all-groups]"')
    if args.group and args.list:
        raise UsageError('Option "[group]" can\'t be used with option "[list]"')
    if args.topic and (args.list or args.describe):
        raise UsageError(f'Option "[topic]" can\'t be used with option "[{"list" if args.list else "describe"}]"')
    chosen_actions = [a for a in ACTIONS if _has(args, a)]
    if len(chosen_actions) != 1:
        raise UsageError("Command must include exactly one action: --list, --describe, --delete, --reset-offsets, "
                         "--delete-offsets")
    return chosen_actions[0]


def _java_split(text: str) -> list[str]:
    """Java's ``String.split(",")``: trailing empty strings are dropped."""
    parts = text.split(",")
    while len(parts) > 1 and parts[-1] == "":
        parts.pop()
    return parts


def _states(text: str) -> set[str]:
    """Kafka 4's ``groupStatesFromString``: case-insensitive names of a consumer group's states."""
    by_lower = {s.lower(): s for s in STATES}
    parsed = {by_lower.get(s.strip().lower()) for s in _java_split(text)}
    if None in parsed:
        raise UsageError(f"Invalid state list '{text}'. Valid states are: {', '.join(STATES)}")
    return {s for s in parsed if s is not None}


def _types(text: str) -> set[str]:
    """Kafka 4's ``consumerGroupTypesFromString``: ``classic`` and/or ``consumer``, any case."""
    by_lower = {t.lower(): t for t in TYPES}
    parsed = {by_lower.get(t.strip()) for t in _java_split(text.lower())}
    if None in parsed:
        raise UsageError(f"Invalid types list '{text}'. Valid types are: {', '.join(TYPES)}")
    return {t for t in parsed if t is not None}


class Command:
    """One run of the command; ``failed`` records any ``Error:`` printed (exit status 1)."""

    def __init__(self, admin: GroupAdmin, args: argparse.Namespace) -> None:
        self.admin = admin
        self.args = args
        self.failed = False

    def print_error(self, message: str) -> None:
        print(f"\nError: {message}")
        self.failed = True

    def warn(self, message: str) -> None:
        stamp = datetime.now().strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
        print(f"[{stamp}] WARN {message} (kafka.admin.ConsumerGroupCommand$)", file=sys.stderr)

    def _group_ids(self) -> list[str]:
        return [g.group_id for g in self.admin.list_groups()] if self.args.all_groups else list(self.args.group)

    def _describe_all(self, group_ids: list[str]) -> dict[str, GroupDescription]:
        described = {g: self.admin.describe_group(g) for g in group_ids}
        return {g: described[g] for g in sorted(described)}

    # -- list ----------------------------------------------------------------

    def list(self) -> None:
        """Kafka 4's ``listGroups``: ids only, or the table when ``--type`` or ``--state`` is given."""
        with_type = self.args.group_type is not None
        with_state = self.args.state is not None
        if not with_type and not with_state:
            for g in self.admin.list_groups():
                print(g.group_id)
            return
        states = _states(self.args.state) if self.args.state else set()
        types = _types(self.args.group_type) if self.args.group_type else set()
        groups = self.admin.list_groups(states, types)
        for line in format_list(groups, with_type, with_state):
            print(line)

    # -- describe ------------------------------------------------------------

    def should_print(self, group: str, state: str, num_rows: int) -> bool:
        """Kafka's ``shouldPrintMemberState``."""
        if state == "Dead":
            self.print_error(f"Consumer group '{group}' does not exist.")
        elif state == "Empty":
            print(f"\nConsumer group '{group}' has no active members.", file=sys.stderr)
        elif state in REBALANCING:
            print(f"\nWarning: Consumer group '{group}' is rebalancing.", file=sys.stderr)
        elif state != "Stable":
            raise CommandFailed(f"Expected a valid consumer group state, but found '{state}'.")
        return state != "Dead" and num_rows > 0

    def offset_rows(self, d: GroupDescription) -> builtins.list[PartitionRow]:
        """Kafka's ``collectGroupsOffsets`` for one group."""
        committed = self.admin.committed_offsets(d.group_id)
        with_assignment = sorted((m for m in d.members if m.assignment), key=lambda m: -len(m.assignment))
        assigned = {tp for m in with_assignment for tp in m.assignment}
        unassigned = sorted(tp for tp in committed if tp not in assigned)
        every = [tp for m in with_assignment for tp in m.assignment] + unassigned
        ends = self.admin.list_offsets(every, LATEST) if every else {}

        def row(tp: TopicPartitionTuple, consumer: str, host: str, client: str) -> PartitionRow:
            offset = committed.get(tp)
            end = ends.get(tp)
            lag = end - offset if offset is not None and offset != -1 and end is not None else None
            return PartitionRow(d.group_id, tp[0], tp[1], offset, end, lag, consumer, host, client)

        rows = []
        for m in with_assignment:
            for tp in sorted(m.assignment):
                rows.append(row(tp, m.member_id, m.host, m.client_id))
        for tp in unassigned:
            rows.append(row(tp, MISSING, MISSING, MISSING))
        return rows

    def describe(self) -> None:
        descriptions = self._describe_all(self._group_ids())
        verbose = self.args.members_verbose
        if self.args.members:
            members = {
                g: [MemberRow(g, m.member_id, m.host, m.client_id, m.group_instance_id or "", len(m.assignment),
                              m.assignment if verbose or d.is_consumer_group else [], m.target_assignment,
                              m.member_epoch, d.target_assignment_epoch, m.upgraded) for m in d.members]
                for g, d in descriptions.items()
            }
            for g, d in descriptions.items():
                if self.should_print(g, d.state, len(members[g])):
                    print()
                    lines = format_consumer_members(members[g], verbose) if d.is_consumer_group \
                        else format_members(members[g], verbose)
                    for line in lines:
                        print(line)
        elif self.args.state is not None:
            for g, d in descriptions.items():
                if self.should_print(g, d.state, 1):
                    print()
                    for line in format_consumer_state(d, verbose) if d.is_consumer_group else format_state(d):
                        print(line)
        else:
            offsets = {g: self.offset_rows(d) for g, d in descriptions.items()}
            for g, d in descriptions.items():
                if self.should_print(g, d.state, len(offsets[g])):
                    print()
                    for line in format_offsets(offsets[g]):
                        print(line)

    # -- reset-offsets -------------------------------------------------------

    def partitions_to_reset(self, group: str) -> builtins.list[TopicPartitionTuple]:
        if self.args.all_topics:
            return sorted(self.admin.committed_offsets(group))
        if self.args.topic:
            out: list[TopicPartitionTuple] = []
            for arg in self.args.topic:
                if ":" in arg:
                    topic, _, parts = arg.partition(":")
                    for p in parts.split(","):
                        try:
                            out.append((topic, int(p)))
                        except ValueError:
                            raise CommandFailed(f'For input string: "{p}"') from None
                else:
                    out.extend((arg, p) for p in self.admin.partitions_of(arg))
            return out
        raise UsageError("One of the reset scopes should be defined: --all-topics, --topic.")

    def check_range(self, requested: dict[TopicPartitionTuple, int]) -> dict[TopicPartitionTuple, int]:
        """Kafka's ``checkOffsetsRange``: clamp to [log start, log end] with a WARN line."""
        starts = self.admin.list_offsets(requested, EARLIEST)
        ends = self.admin.list_offsets(requested, LATEST)
        out = {}
        for tp, offset in requested.items():
            end, start = ends.get(tp), starts.get(tp)
            if end is not None and offset > end:
                self.warn(f"New offset ({offset}) is higher than latest offset for topic partition {_tp(tp)}. "
                          f"Value will be set to {end}")
                offset = end
            elif start is not None and offset < start:
                self.warn(f"New offset ({offset}) is lower than earliest offset for topic partition {_tp(tp)}. "
                          f"Value will be set to {start}")
                offset = start
            out[tp] = offset
        return out

    def _resolved(self, tps: builtins.list[TopicPartitionTuple], found: dict[TopicPartitionTuple, int | None],
                  what: str) -> dict[TopicPartitionTuple, int]:
        out = {}
        for tp in tps:
            offset = found.get(tp)
            if offset is None or offset < 0:
                raise UsageError(f"Error getting {what} of topic partition: {_tp(tp)}")
            out[tp] = offset
        return out

    def _by_timestamp(self, tps: builtins.list[TopicPartitionTuple], timestamp: int) -> dict[TopicPartitionTuple, int]:
        found = self.admin.list_offsets(tps, timestamp)
        missing = [tp for tp in tps if found.get(tp) is None or found[tp] == -1]
        if missing:
            found.update(self.admin.list_offsets(missing, LATEST))
        return self._resolved(tps, found, "offset by timestamp")

    def prepare(self, group: str, tps: builtins.list[TopicPartitionTuple]) -> dict[TopicPartitionTuple, int]:
        """Kafka's ``prepareOffsetsToReset``."""
        a = self.args
        if a.to_offset is not None:
            return self.check_range({tp: a.to_offset for tp in tps})
        if a.to_earliest:
            return self._resolved(tps, self.admin.list_offsets(tps, EARLIEST), "starting offset")
        if a.to_latest:
            return self._resolved(tps, self.admin.list_offsets(tps, LATEST), "ending offset")
        if a.shift_by is not None:
            committed = self.admin.committed_offsets(group)
            requested = {}
            for tp in tps:
                if tp not in committed:
                    raise UsageError(f"Cannot shift offset for partition {_tp(tp)} since there is no current "
                                     "committed offset")
                requested[tp] = committed[tp] + a.shift_by
            return self.check_range(requested)
        if a.to_datetime is not None:
            return self._by_timestamp(tps, parse_datetime(a.to_datetime))
        if a.by_duration is not None:
            return self._by_timestamp(tps, int(time.time() * 1000) - parse_duration(a.by_duration))
        if a.to_current:
            committed = self.admin.committed_offsets(group)
            out = {tp: committed[tp] for tp in tps if tp in committed}
            rest = [tp for tp in tps if tp not in committed]
            if rest:
                out.update(self._resolved(rest, self.admin.list_offsets(rest, LATEST), "ending offset"))
            return out
        raise UsageError("Option '[reset-offsets]' requires one of the following scenarios: "
                         + "Set(" + ", ".join(f"[{s}]" for s in SCENARIOS) + ")")

    def reset_offsets(self) -> None:
        descriptions = self._describe_all(self._group_ids())
        result: dict[str, dict[TopicPartitionTuple, int]] = {}
        for g, d in descriptions.items():
            if d.state in ("Empty", "Dead"):
                prepared = self.prepare(g, self.partitions_to_reset(g))
                if self.args.execute and prepared:
                    self.admin.commit_offsets(g, prepared)
                result[g] = prepared
            else:
                self.print_error(f"Assignments can only be reset if the group '{g}' is inactive, but the current "
                                 f"state is {d.state}.")
                result[g] = {}
        if self.args.export:
            print(format_export(result, len(self.args.group) == 1))
        elif result:
            print()
            for line in format_reset(result):
                print(line)

    # -- delete --------------------------------------------------------------

    def delete(self) -> None:
        groups = self._group_ids()
        errors = {g: self.admin.delete_group(g) for g in groups}
        ok = [g for g, code in errors.items() if code == ErrorCode.NONE]
        failed = [(g, code) for g, code in errors.items() if code != ErrorCode.NONE]
        if not failed:
            print(f"Deletion of requested consumer groups ({', '.join(repr_q(g) for g in ok)}) was successful.")
            return
        self.print_error("Deletion of some consumer groups failed:")
        for g, code in failed:
            print(f"* Group '{g}' could not be deleted due to: java.util.concurrent.ExecutionException: "
                  f"{java_error(code)}")
        if ok:
            print(f"\nThese consumer groups were deleted successfully: {', '.join(repr_q(g) for g in ok)}")

    # -- delete-offsets ------------------------------------------------------

    def delete_offsets(self) -> None:
        """Kafka's ``deleteOffsets``: one group, partitions named or all of a topic's."""
        if len(self.args.group) > 1:
            raise UsageError("Found multiple arguments for option group, but you asked for only one")
        group = self.args.group[0]
        topics = list(self.args.topic)
        rows: dict[TopicPartitionTuple, str | None] = {}
        partitions: list[TopicPartitionTuple] = []
        for arg in topics:
            if ":" in arg:
                topic, _, parts = arg.partition(":")
                for p in parts.split(","):
                    try:
                        partitions.append((topic, int(p)))
                    except ValueError:
                        raise CommandFailed(f'For input string: "{p}"') from None
        for arg in topics:
            if ":" not in arg:
                try:
                    partitions.extend((arg, p) for p in self.admin.partitions_of(arg))
                except CommandFailed as exc:
                    rows[(arg, -1)] = str(exc)  # Kafka: a "Not Provided" row for the topic
        partitions = list(dict.fromkeys(partitions))
        top, results = self.admin.delete_offsets(group, partitions)
        for tp in partitions:
            rows[tp] = results.get(tp, f"java.lang.IllegalArgumentException: Offset deletion result for partition "
                                       f'"{_tp(tp)}" was not included in the response')
        if top == ErrorCode.NONE:
            print(f"Request succeed for deleting offsets with topic {', '.join(topics)} group {group}")
        elif top == ErrorCode.INVALID_GROUP_ID:
            self.print_error(f"'{group}' is not valid.")
        elif top == ErrorCode.GROUP_ID_NOT_FOUND:
            self.print_error(f"'{group}' does not exist.")
        elif top == ErrorCode.GROUP_AUTHORIZATION_FAILED:
            self.print_error(f"Access to '{group}' is not authorized.")
        elif top == ErrorCode.NON_EMPTY_GROUP:
            self.print_error(f"Deleting offsets of a consumer group '{group}' is forbidden if the group is not empty.")
        elif top in (ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC, ErrorCode.TOPIC_AUTHORIZATION_FAILED,
                     ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
            self.print_error("Encounter some partition level error, see the follow-up details:")
        else:
            self.print_error(f"Encounter some unknown error: {_error_name(top)}")
        for line in format_delete_offsets(rows):
            print(line)
        if any(error is not None for error in rows.values()):
            self.failed = True


def _error_name(code: int) -> str:
    try:
        return ErrorCode(code).name
    except ValueError:
        return "UNKNOWN_SERVER_ERROR"


def repr_q(group: str) -> str:
    return f"'{group}'"


def run(args: argparse.Namespace) -> int:
    try:
        action = check_args(args)
        try:
            admin = AdminClient(admin_config(args.bootstrap_server, "mafka-consumer-groups", args.timeout / 1000,
                                              args.command_config))
        except ValueError as exc:  # a bad bootstrap list or setting
            raise CommandFailed(f"org.apache.kafka.common.config.ConfigException: {exc}") from None
        try:
            command = Command(GroupAdmin(admin, args.timeout / 1000), args)
            {"list": command.list, "describe": command.describe, "delete": command.delete,
             "reset-offsets": command.reset_offsets, "delete-offsets": command.delete_offsets}[action]()
        finally:
            admin.close()
    except UsageError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except CommandFailed as exc:
        print(f"\nError: Executing consumer group command failed due to {exc}")
        return 1
    sys.stdout.flush()
    return 1 if command.failed else 0
