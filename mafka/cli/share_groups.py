"""``mafka share-groups``: ``kafka-share-groups.sh --bootstrap-server`` for Mafka (KIP-932).

Kafka 4.2's ``ShareGroupCommand``, output formats included (column widths computed from the
data as Kafka computes them; unknown values print ``-``).  Actions (exactly one):

* ``--list [--state [s,…]]``: the share groups of every broker (ListGroups v5, type share),
  :meth:`AdminClient.list_share_groups`; with ``--state`` the ``GROUP STATE`` table, filtered
  by the states given (Kafka's share states: Empty, Stable, Dead).
* ``--describe (--group g … | --all-groups) [--offsets | --members | --state] [--verbose]``:
  ``--offsets`` (the default) ``GROUP TOPIC PARTITION [LEADER-EPOCH] START-OFFSET LAG`` from
  DescribeShareGroupOffsets (every initialized share-partition); ``--members``
  ``GROUP CONSUMER-ID HOST CLIENT-ID #PARTITIONS [MEMBER-EPOCH] ASSIGNMENT``; ``--state``
  ``GROUP COORDINATOR (ID) STATE [GROUP-EPOCH ASSIGNMENT-EPOCH] #MEMBERS``.  LAG is ``-`` where
  the broker could not compute it (it computes it for partitions the coordinator leads).
* ``--reset-offsets --group g (--topic t[:p,…] … | --all-topics) (--to-earliest | --to-latest
  | --to-offset N | --to-current) (--execute | --dry-run)``: only for an Empty (or unknown)
  group; ``--to-offset`` is clamped to [earliest, latest] with a WARN line; ``--execute`` sends
  AlterShareGroupOffsets.  Kafka's ``GROUP TOPIC PARTITION NEW-OFFSET`` table.
* ``--delete-offsets --group g --topic t …``: DeleteShareGroupOffsets; Kafka's ``TOPIC STATUS`` table.
* ``--delete (--group g … | --all-groups)``: DeleteGroups of Empty share groups (the broker deletes
  the share-partitions' state at the share coordinator first); a group that is not a share group,
  is Dead or is not Empty is refused before any request, as Kafka's ``deleteShareGroups``.

Streams as Kafka's: tables and ``Error: …`` lines on stdout, "has no active members" and WARN
lines on stderr, usage errors on stderr.  Unlike Kafka (which exits 0 after ``printError``),
every error exits with status 1.

Not supported: ``--to-datetime``, ``--from-file``, ``--export``.
"""

from __future__ import annotations

import argparse
import builtins
import concurrent.futures
import sys
from collections.abc import Iterable, Sequence
from typing import Any

from mafka.cli.clients import admin_config
from mafka.cli.consumer_groups import CommandFailed, GroupAdmin, UsageError, java_error
from mafka.cli.consumer_groups_tables import MISSING, table_line
from mafka.client.admin import AdminClient
from mafka.client.admin_share_groups import ShareGroupDescription, SharePartitionOffsetInfo
from mafka.client.kafka_error import KafkaError as ClientError
from mafka.client.kafka_error import KafkaException
from mafka.client.message import TopicPartition
from mafka.errors import ErrorCode
from mafka.topics import TopicPartitionTuple
from mafka.wire.apis.list_offsets import EARLIEST_TIMESTAMP as EARLIEST
from mafka.wire.apis.list_offsets import LATEST_TIMESTAMP as LATEST

__all__ = [
    "add_parser",
    "format_list",
    "format_members",
    "format_offsets",
    "format_reset",
    "format_state",
    "format_delete",
    "format_delete_offsets",
    "run",
]

#: Kafka's ``GroupState.groupStatesForType(SHARE)``
STATES = ("Empty", "Stable", "Dead")
ACTIONS = ("list", "describe", "delete", "reset-offsets", "delete-offsets")
SCENARIOS = ("to-offset", "to-earliest", "to-latest", "to-current")

OffsetRow = tuple[str, int, SharePartitionOffsetInfo | None]


# --------------------------------------------------------------------------- formats


def format_list(groups: list[tuple[str, str]]) -> list[str]:
    """``printGroupInfo``: ``GROUP STATE``, the group column at least 15 wide."""
    width = max([15] + [len(g) for g, _ in groups])
    return [table_line((width, 0), ("GROUP", "STATE"))] + [table_line((width, 0), g) for g in groups]


def format_offsets(group: str, rows: Sequence[OffsetRow], verbose: bool) -> list[str]:
    """``printOffsets`` of one group: an empty line, the header, a row per share-partition by
    topic then partition (``-`` for what is not known)."""
    if not rows:
        return ["", f"Share group '{group}' has no offset information."]
    widths = (max(15, len(group)), max([15] + [len(t) for t, _, _ in rows]), 10, 13)
    out = [""]
    if verbose:
        out.append(table_line((*widths, 13, 0), ("GROUP", "TOPIC", "PARTITION", "LEADER-EPOCH", "START-OFFSET", "LAG")))
    else:
        out.append(table_line((*widths, 0), ("GROUP", "TOPIC", "PARTITION", "START-OFFSET", "LAG")))
    for topic, partition, info in sorted(rows, key=lambda r: (r[0], r[1])):
        start = info.start_offset if info is not None else None
        lag = info.lag if info is not None else None
        if verbose:
            epoch = info.leader_epoch if info is not None else None
            out.append(table_line((*widths, 13, 0), (group, topic, partition, epoch, start, lag)))
        else:
            out.append(table_line((*widths, 0), (group, topic, partition, start, lag)))
    return out


def _assignment(tps: Iterable[TopicPartition]) -> str:
    """``getAssignmentString``: ``topic:0,1;other:2``, topics sorted, partitions ascending."""
    by_topic: dict[str, list[int]] = {}
    for tp in tps:
        by_topic.setdefault(tp.topic, []).append(tp.partition)
    return ";".join(sorted(f"{t}:" + ",".join(str(p) for p in sorted(ps)) for t, ps in by_topic.items()))


def format_members(d: ShareGroupDescription, verbose: bool) -> list[str]:
    """``printMembers`` of a group with members (the caller prints the empty / dead notes)."""
    members = sorted(d.members, key=lambda m: m.member_id)
    widths = (
        max(15, len(d.group_id)),
        max([15] + [len(m.member_id) for m in members]),
        max([15] + [len(m.host) for m in members]),
        max([15] + [len(m.client_id) for m in members]),
        12,
    )
    out = [""]
    if verbose:
        out.append(table_line((*widths, 13, 0), ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS",
                                            "MEMBER-EPOCH", "ASSIGNMENT")))
        out += [table_line((*widths, 13, 0), (d.group_id, m.member_id, m.host, m.client_id, len(m.assignment),
                                         m.member_epoch, _assignment(m.assignment))) for m in members]
    else:
        out.append(table_line((*widths, 0), ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS", "ASSIGNMENT")))
        out += [table_line((*widths, 0), (d.group_id, m.member_id, m.host, m.client_id, len(m.assignment),
                                     _assignment(m.assignment))) for m in members]
    return out


def format_state(d: ShareGroupDescription, verbose: bool) -> list[str]:
    """``printStates``: ``host:port  (id)`` as the coordinator column (at least 25 wide)."""
    c = d.coordinator
    coordinator = f"{c.host}:{c.port}  ({c.id})" if c is not None else MISSING
    widths = (max(15, len(d.group_id)), max(25, len(coordinator)), 15)
    if verbose:
        return ["", table_line((*widths, 12, 17, 0), ("GROUP", "COORDINATOR (ID)", "STATE", "GROUP-EPOCH",
                                                 "ASSIGNMENT-EPOCH", "#MEMBERS")),
                table_line((*widths, 12, 17, 0), (d.group_id, coordinator, d.state, d.group_epoch,
                                             d.target_assignment_epoch, len(d.members)))]
    return ["", table_line((*widths, 0), ("GROUP", "COORDINATOR (ID)", "STATE", "#MEMBERS")),
            table_line((*widths, 0), (d.group_id, coordinator, d.state, len(d.members)))]


def format_reset(group: str, offsets: dict[TopicPartitionTuple, int]) -> list[str]:
    """``GroupOffsetsResetter.printOffsetsToReset`` for one group (nothing when there is nothing)."""
    if not offsets:
        return [""]
    widths = (max(15, len(group)), max([15] + [len(t) for t, _ in offsets]), 10, 0)
    return ["", table_line(widths, ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"))] + [
        table_line(widths, (group, t, p, off)) for (t, p), off in sorted(offsets.items())]


def format_delete(deleted: list[str], failed: dict[str, str]) -> list[str]:
    """``deleteShareGroups``' report: success, or ``Error: Deletion of some share groups failed:``,
    a ``* Group 'g' could not be deleted due to: <exception>`` line each, then the ones deleted."""
    quoted = [f"'{g}'" for g in deleted]
    if not failed:
        return [f"Deletion of requested share groups ({', '.join(quoted)}) was successful."]
    lines = ["", "Error: Deletion of some share groups failed:"]
    lines += [f"* Group '{g}' could not be deleted due to: {e}" for g, e in failed.items()]
    if deleted:
        lines += ["", f"These share groups were deleted successfully: {', '.join(quoted)}"]
    return lines


def format_delete_offsets(results: dict[str, str | None]) -> list[str]:
    """``deleteOffsets``' table: ``TOPIC STATUS`` (``Successful`` or ``Error: <message>``)."""
    width = max([15] + [len(t) for t in results])
    return ["", table_line((width, 0), ("TOPIC", "STATUS"))] + [
        table_line((width, 0), (t, "Successful" if e is None else f"Error: {e}")) for t, e in sorted(results.items())]


# --------------------------------------------------------------------------- arguments


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "share-groups",
        help="list, describe and delete share groups, reset or delete their offsets (kafka-share-groups)",
    )
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT")
    for action in ACTIONS:
        p.add_argument(f"--{action}", action="store_true")
    p.add_argument("--group", action="append", default=[])
    p.add_argument("--all-groups", action="store_true")
    p.add_argument("--topic", action="append", default=[])
    p.add_argument("--all-topics", action="store_true")
    p.add_argument("--members", action="store_true")
    p.add_argument("--offsets", action="store_true")
    p.add_argument("--state", nargs="?", const="", default=None)
    # not dest "verbose": ``mafka`` prints its own timing line for args.verbose
    p.add_argument("--verbose", dest="describe_verbose", action="store_true")
    p.add_argument("--timeout", type=int, default=5000, help="ms (Kafka's)")
    p.add_argument("--command-config", metavar="FILE",
                   help="Property file containing configs to be passed to Admin Client.")
    p.add_argument("--dry-run", action="store_true")
    p.add_argument("--execute", action="store_true")
    p.add_argument("--to-offset", type=int)
    p.add_argument("--to-earliest", action="store_true")
    p.add_argument("--to-latest", action="store_true")
    p.add_argument("--to-current", action="store_true")
    p.set_defaults(func=run)


def _has(args: argparse.Namespace, name: str) -> bool:
    return getattr(args, name.replace("-", "_"), None) not in (None, False, [])


def check_args(args: argparse.Namespace) -> str:
    """The chosen action; UsageError with Kafka 4.2's message for bad combinations."""
    actions = [a for a in ACTIONS if _has(args, a)]
    if len(actions) != 1:
        raise UsageError("Command must include exactly one action: --list, --describe, --delete, --reset-offsets, "
                         "--delete-offsets.")
    action = actions[0]
    if action == "describe":
        if not args.group and not args.all_groups:
            raise UsageError("Option [describe] takes one of these options: [all-groups], [group]")
        if sum(1 for x in (args.members, args.offsets, args.state is not None) if x) > 1:
            raise UsageError("Option [describe] takes at most one of these options: [members], [offsets], [state]")
        if args.state:
            raise UsageError("Option [describe] does not take a value for [state]")
    if action == "delete" and not args.group and not args.all_groups:
        raise UsageError("Option [delete] takes one of these options: [all-groups], [group]")
    if action == "delete-offsets" and (not args.group or not args.topic):
        raise UsageError("Option [delete-offsets] takes the following options: [group], [topic]")
    if action == "reset-offsets":
        if args.dry_run and args.execute:
            raise UsageError("Option [reset-offsets] only accepts one of [execute] and [dry-run]")
        if not args.dry_run and not args.execute:
            raise UsageError("Option [reset-offsets] takes the option: [execute] or [dry-run]")
        if not args.group:
            raise UsageError("Option [reset-offsets] takes the option: [group]")
        if not args.topic and not args.all_topics:
            raise UsageError("Option [reset-offsets] takes one of these options: [all-topics], [topic]")
        chosen = [s for s in SCENARIOS if _has(args, s)]
        if not chosen:
            raise UsageError("Option [reset-offsets] takes one of these options: [to-current], [to-earliest], "
                             "[to-latest], [to-offset]")
        if len(chosen) > 1:
            raise UsageError(f'Option "[{chosen[0]}]" can\'t be used with option "[{chosen[1]}]"')
    if args.state is not None and action not in ("list", "describe"):
        raise UsageError("Option [state] can't be used without option [describe] or [list]")
    if args.group and args.all_groups:
        raise UsageError('Option "[group]" can\'t be used with option "[all-groups]"')
    if args.group and action == "list":
        raise UsageError('Option "[group]" can\'t be used with option "[list]"')
    if args.topic and action in ("list", "describe", "delete"):
        raise UsageError(f'Option "[topic]" can\'t be used with option "[{action}]"')
    return action


# --------------------------------------------------------------------------- the command


class ShareAdmin(GroupAdmin):
    """The share-group admin calls, bounded by ``timeout_s`` (see :class:`GroupAdmin`)."""

    def delete_share_group(self, group: str) -> str | None:
        """DeleteGroups of one share group: None, or the Java exception Kafka's tool prints."""
        code = self.delete_group(group)
        return None if code == ErrorCode.NONE else java_error(code)

    def list_share_groups(self) -> list[tuple[str, str]]:
        listed = self._result("listGroups", self.admin.list_share_groups(self.timeout_s))
        if listed.errors:
            raise CommandFailed(self._java("listGroups", listed.errors[0].error))
        seen: dict[str, str] = {}
        for g in listed.valid:
            seen.setdefault(g.group_id, g.state)
        return list(seen.items())

    def describe(self, group: str) -> ShareGroupDescription | None:
        """The description; None for a group that is not a share group (GROUP_ID_NOT_FOUND)."""
        future = self.admin.describe_share_groups([group], self.timeout_s)[group]
        try:
            result: ShareGroupDescription = future.result(self.timeout_s + 5.0)
        except KafkaException as exc:
            if exc.error.code() == ErrorCode.GROUP_ID_NOT_FOUND:
                return None
            raise CommandFailed(self._java("describeShareGroups", exc.error)) from None
        except concurrent.futures.TimeoutError:
            raise CommandFailed(self._java("describeShareGroups", ClientError(ClientError._TIMED_OUT))) from None
        return result

    def offsets(self, group: str) -> dict[TopicPartition, SharePartitionOffsetInfo]:
        future = self.admin.list_share_group_offsets({group: None}, self.timeout_s)[group]
        result: dict[TopicPartition, SharePartitionOffsetInfo] = self._result("listShareGroupOffsets", future)
        return result

    def alter(self, group: str, offsets: dict[TopicPartitionTuple, int]) -> None:
        future = self.admin.alter_share_group_offsets(
            group, {TopicPartition(t, p): o for (t, p), o in offsets.items()}, self.timeout_s)
        for tp in self._result("alterShareGroupOffsets", future):
            if tp.error is not None:
                raise CommandFailed(self._java("alterShareGroupOffsets", tp.error))

    def delete_share_offsets(self, group: str, topics: list[str]) -> tuple[ClientError | None, dict[str, ClientError | None]]:
        future = self.admin.delete_share_group_offsets(group, topics, self.timeout_s)
        try:
            return None, future.result(self.timeout_s + 5.0)
        except KafkaException as exc:
            return exc.error, {}
        except concurrent.futures.TimeoutError:
            return ClientError(ClientError._TIMED_OUT), {}


class Command:
    """One run of the command; ``failed`` records any ``Error:`` printed (exit status 1)."""

    def __init__(self, admin: ShareAdmin, args: argparse.Namespace) -> None:
        self.admin = admin
        self.args = args
        self.failed = False

    def print_error(self, message: str) -> None:
        print(f"\nError: {message}")
        self.failed = True

    def _groups(self) -> builtins.list[str]:
        if self.args.all_groups:
            return [g for g, _ in self.admin.list_share_groups()]
        return builtins.list(dict.fromkeys(self.args.group))

    def list(self) -> None:
        groups = self.admin.list_share_groups()
        if self.args.state is None:
            for g, _ in groups:
                print(g)
            return
        wanted = {s.strip().lower() for s in self.args.state.split(",") if s.strip()}
        unknown = sorted(w for w in wanted if w not in {s.lower() for s in STATES})
        if unknown:
            raise UsageError(f"Invalid state list '{self.args.state}'. Valid states are: {', '.join(STATES)}")
        for line in format_list([(g, s) for g, s in groups if not wanted or s.lower() in wanted]):
            print(line)

    def _present(self, group: str, d: ShareGroupDescription | None, rows: int) -> bool:
        """``maybePrintEmptyGroupState``: whether the group's table follows."""
        if d is None or d.state == "Dead":
            self.print_error(f"Share group '{group}' does not exist.")
            return False
        if d.state == "Empty":
            print(f"\nShare group '{group}' has no active members.", file=sys.stderr)
        return rows > 0

    def describe(self) -> None:
        verbose = self.args.describe_verbose
        for group in sorted(self._groups()):
            d = self.admin.describe(group)
            if self.args.members:
                if self._present(group, d, len(d.members) if d is not None else 0):
                    assert d is not None
                    print("\n".join(format_members(d, verbose)))
            elif self.args.state is not None:
                self._present(group, d, 1)
                if d is not None:
                    print("\n".join(format_state(d, verbose)))
            else:
                if d is None:
                    self.print_error(f"Share group '{group}' does not exist.")
                    continue
                rows = [(tp.topic, tp.partition, info) for tp, info in self.admin.offsets(group).items()]
                print("\n".join(format_offsets(group, rows, verbose)))

    # -- reset-offsets -------------------------------------------------------

    def _partitions(self, group: str) -> builtins.list[TopicPartitionTuple]:
        if self.args.all_topics:
            return sorted((tp.topic, tp.partition) for tp in self.admin.offsets(group))
        out: builtins.list[TopicPartitionTuple] = []
        for arg in self.args.topic:
            if ":" in arg:
                topic, _, parts = arg.partition(":")
                for p in parts.split(","):
                    try:
                        out.append((topic, int(p)))
                    except ValueError:
                        raise UsageError(f"Invalid partition '{p}' specified in topic arg '{arg}''") from None
            else:
                out.extend((arg, p) for p in self.admin.partitions_of(arg))
        return builtins.list(dict.fromkeys(out))

    def _log_offsets(self, tps: builtins.list[TopicPartitionTuple], timestamp: int, what: str) -> dict[TopicPartitionTuple, int]:
        found = self.admin.list_offsets(tps, timestamp)
        out = {}
        for tp in tps:
            offset = found.get(tp)
            if offset is None or offset < 0:
                raise UsageError(f"Error getting {what} of topic partition: {tp[0]}-{tp[1]}")
            out[tp] = offset
        return out

    def _prepare(self, group: str, tps: builtins.list[TopicPartitionTuple]) -> dict[TopicPartitionTuple, int]:
        a = self.args
        if a.to_earliest:
            return self._log_offsets(tps, EARLIEST, "starting offset")
        if a.to_latest:
            return self._log_offsets(tps, LATEST, "ending offset")
        if a.to_current:
            current = {(tp.topic, tp.partition): info.start_offset for tp, info in self.admin.offsets(group).items()
                       if info is not None and info.start_offset is not None}
            out = {tp: current[tp] for tp in tps if tp in current}
            rest = [tp for tp in tps if tp not in current]
            out.update(self._log_offsets(rest, LATEST, "ending offset") if rest else {})
            return out
        starts = self.admin.list_offsets(tps, EARLIEST)
        ends = self.admin.list_offsets(tps, LATEST)
        out = {}
        for tp in tps:
            offset, start, end = a.to_offset, starts.get(tp), ends.get(tp)
            name = f"{tp[0]}-{tp[1]}"
            if end is not None and offset > end:
                print(f"WARN New offset ({offset}) is higher than latest offset for topic partition {name}. "
                      f"Value will be set to {end}.", file=sys.stderr)
                offset = end
            elif start is not None and offset < start:
                print(f"WARN New offset ({offset}) is lower than earliest offset for topic partition {name}. "
                      f"Value will be set to {start}.", file=sys.stderr)
                offset = start
            out[tp] = offset
        return out

    def reset_offsets(self) -> None:
        if len(self.args.group) > 1:
            raise UsageError("Found multiple arguments for option group, but you asked for only one")
        group = self.args.group[0]
        d = self.admin.describe(group)
        if d is not None and d.state not in ("Empty", "Dead"):
            print(f"Share group '{group}' is not empty.", file=sys.stderr)
            self.failed = True
            return
        offsets = self._prepare(group, self._partitions(group))
        if self.args.execute and offsets:
            self.admin.alter(group, offsets)
        print("\n".join(format_reset(group, offsets)))

    # -- delete --------------------------------------------------------------

    def delete(self) -> None:
        """Kafka 4.2's ``deleteShareGroups``."""
        listed = dict(self.admin.list_share_groups())
        wanted = builtins.list(listed) if self.args.all_groups else builtins.list(dict.fromkeys(self.args.group))
        failed: dict[str, str] = {}
        for group in wanted:
            state = listed.get(group)
            if state is None:
                failed[group] = f"java.lang.IllegalArgumentException: Group '{group}' is not a share group."
            elif state == "Dead":
                failed[group] = f"java.lang.IllegalStateException: Share group '{group}' group state is DEAD."
            elif state != "Empty":
                failed[group] = ("org.apache.kafka.common.errors.GroupNotEmptyException: "
                                 f"Share group '{group}' is not EMPTY.")
        deleted: builtins.list[str] = []
        for group in wanted:
            if group in failed:
                continue
            error = self.admin.delete_share_group(group)
            if error is None:
                deleted.append(group)
            else:
                failed[group] = error
        print("\n".join(format_delete(deleted, failed)))
        if failed:
            self.failed = True

    # -- delete-offsets ------------------------------------------------------

    def delete_offsets(self) -> None:
        if len(self.args.group) > 1:
            raise UsageError("Found multiple arguments for option group, but you asked for only one")
        group = self.args.group[0]
        topics = builtins.list(dict.fromkeys(self.args.topic))
        top, results = self.admin.delete_share_offsets(group, topics)
        if top is not None:
            code = top.code()
            if code in (ErrorCode.INVALID_GROUP_ID, ErrorCode.GROUP_ID_NOT_FOUND,
                        ErrorCode.GROUP_AUTHORIZATION_FAILED, ErrorCode.NON_EMPTY_GROUP):
                self.print_error(top.str())
            else:
                self.print_error(f"Encounter some unknown error: {java_error(code)}")
            # Kafka: every topic carries the group's error too
            results = dict.fromkeys(topics, top)
        table = {t: (None if e is None else e.str()) for t, e in results.items()}
        print("\n".join(format_delete_offsets(table)))
        if any(e is not None for e in table.values()):
            self.failed = True


def run(args: argparse.Namespace) -> int:
    try:
        action = check_args(args)
        try:
            admin = AdminClient(admin_config(args.bootstrap_server, "mafka-share-groups", args.timeout / 1000,
                                              args.command_config))
        except ValueError as exc:  # a bad bootstrap list or setting
            raise CommandFailed(f"org.apache.kafka.common.config.ConfigException: {exc}") from None
        try:
            command = Command(ShareAdmin(admin, args.timeout / 1000), args)
            {"list": command.list, "describe": command.describe, "delete": command.delete,
             "reset-offsets": command.reset_offsets, "delete-offsets": command.delete_offsets}[action]()
        finally:
            admin.close()
    except UsageError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except CommandFailed as exc:
        print(f"\nError: Executing share group command failed due to {exc}")
        return 1
    sys.stdout.flush()
    return 1 if command.failed else 0
