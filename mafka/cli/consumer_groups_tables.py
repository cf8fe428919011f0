"""The tables of ``mafka consumer-groups`` (``kafka-consumer-groups.sh``) and the rows they print.

Plain functions from rows to lines, column widths computed from the data exactly as Kafka's
``ConsumerGroupCommand`` computes them (Kafka 2.8's tables for classic groups, Kafka 4's for
consumer groups); a value that is not known prints ``-``.  :func:`cell` and :func:`table_line`
are Java's ``%-Ns`` formatting, shared with ``mafka share-groups``.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from mafka.topics import TopicPartitionTuple

__all__ = [
    "MISSING",
    "GroupDescription",
    "GroupListing",
    "Member",
    "MemberRow",
    "Node",
    "PartitionRow",
    "cell",
    "format_consumer_members",
    "format_consumer_state",
    "format_delete_offsets",
    "format_export",
    "format_list",
    "format_members",
    "format_offsets",
    "format_reset",
    "format_state",
    "table_line",
]

MISSING = "-"


# --------------------------------------------------------------------------- model


@dataclass(frozen=True)
class Node:
    node_id: int
    host: str
    port: int


@dataclass
class Member:
    """A member; the last three only for a consumer group (Kafka 4's MemberDescription)."""

    member_id: str
    group_instance_id: str | None
    client_id: str
    host: str
    assignment: list[TopicPartitionTuple] = field(default_factory=list)
    target_assignment: list[TopicPartitionTuple] = field(default_factory=list)
    member_epoch: int | None = None
    #: True: speaks the consumer protocol; False: a classic member of a consumer group; None: not told.
    upgraded: bool | None = None


@dataclass
class GroupDescription:
    """A described group; ``group_type`` ``"consumer"`` for a KIP-848 group, whose epochs are set."""

    group_id: str
    state: str
    protocol_type: str
    assignor: str
    coordinator: Node
    members: list[Member] = field(default_factory=list)
    group_type: str = "classic"
    group_epoch: int | None = None
    target_assignment_epoch: int | None = None

    @property
    def is_consumer_group(self) -> bool:
        return self.group_type == "consumer"


@dataclass
class PartitionRow:
    """One line of the offsets table (Kafka's ``PartitionAssignmentState``); None prints ``-``."""

    group: str
    topic: str | None
    partition: int | None
    offset: int | None
    log_end_offset: int | None
    lag: int | None
    consumer_id: str | None
    host: str | None
    client_id: str | None


@dataclass
class MemberRow:
    """One line of the members table (Kafka's ``MemberAssignmentState``); the fields after
    ``assignment`` are Kafka 4's, printed only for a consumer group."""

    group: str
    consumer_id: str
    host: str
    client_id: str
    group_instance_id: str
    num_partitions: int
    assignment: list[TopicPartitionTuple]
    target_assignment: list[TopicPartitionTuple] = field(default_factory=list)
    current_epoch: int | None = None
    target_epoch: int | None = None
    upgraded: bool | None = None


@dataclass(frozen=True)
class GroupListing:
    """One group of ``--list`` (Kafka 4's ``GroupListing``): Kafka's names of state and type."""

    group_id: str
    state: str
    group_type: str


# --------------------------------------------------------------------------- formatting


def cell(value: object) -> str:
    """A table cell: ``-`` for a value that is not known."""
    return MISSING if value is None else str(value)


def table_line(widths: Iterable[int], values: Iterable[object]) -> str:
    """Java's ``%-Ns`` for each (width, value), space-separated; width 0 means plain ``%s``."""
    return " ".join(f"{cell(v):<{w}}" if w else cell(v) for w, v in zip(widths, values, strict=True))


def format_offsets(rows: list[PartitionRow]) -> list[str]:
    """The offsets table (header first), widths as Kafka's ``printOffsets`` computes them."""
    g = max([15, *(len(r.group) for r in rows)])
    t = max([15, *(len(cell(r.topic)) for r in rows)])
    c = max([15, *(len(cell(r.consumer_id)) for r in rows)])
    h = max([15, *(len(cell(r.host)) for r in rows)])
    widths = (g, t, 10, 15, 15, 15, c, h, 0)
    lines = [table_line(widths, ("GROUP", "TOPIC", "PARTITION", "CURRENT-OFFSET", "LOG-END-OFFSET", "LAG",
                           "CONSUMER-ID", "HOST", "CLIENT-ID"))]
    for r in rows:
        lines.append(table_line(widths, (r.group, r.topic, r.partition, r.offset, r.log_end_offset, r.lag,
                                   r.consumer_id, r.host, r.client_id)))
    return lines


def _assignment_text(assignment: list[TopicPartitionTuple]) -> str:
    if not assignment:
        return MISSING
    by_topic: dict[str, list[int]] = {}
    for t, p in assignment:
        by_topic.setdefault(t, []).append(p)
    return ", ".join(sorted(t + "(" + ",".join(map(str, sorted(ps))) + ")" for t, ps in by_topic.items()))


def format_members(rows: list[MemberRow], verbose: bool) -> list[str]:
    """The members table (header first), as Kafka's ``printMembers`` (note the trailing spaces)."""
    g = max([15, *(len(r.group) for r in rows)])
    c = max([15, *(len(r.consumer_id) for r in rows)])
    i = max([17, *(len(r.group_instance_id) for r in rows)])
    h = max([15, *(len(r.host) for r in rows)])
    k = max([15, *(len(r.client_id) for r in rows)])
    with_instance = any(r.group_instance_id for r in rows)
    if with_instance:
        widths: tuple[int, ...] = (g, c, i, h, k, 15)
        header: tuple[str, ...] = ("GROUP", "CONSUMER-ID", "GROUP-INSTANCE-ID", "HOST", "CLIENT-ID", "#PARTITIONS")
    else:
        widths = (g, c, h, k, 15)
        header = ("GROUP", "CONSUMER-ID", "HOST", "CLIENT-ID", "#PARTITIONS")
    lines = [table_line(widths, header) + " " + ("ASSIGNMENT" if verbose else "")]
    for r in rows:
        values: tuple[object, ...]
        if with_instance:
            values = (r.group, r.consumer_id, r.group_instance_id, r.host, r.client_id, r.num_partitions)
        else:
            values = (r.group, r.consumer_id, r.host, r.client_id, r.num_partitions)
        lines.append(table_line(widths, values) + " " + (_assignment_text(r.assignment) if verbose else ""))
    return lines


def format_state(d: GroupDescription) -> list[str]:
    """The state table, as Kafka's ``printStates`` (whose GROUP column is as wide as the coordinator's)."""
    coordinator = f"{d.coordinator.host}:{d.coordinator.port} ({d.coordinator.node_id})"
    widths = (max(25, len(coordinator)), 25, 20, 15, 0)
    return [
        table_line(widths, ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS")),
        table_line(widths, (d.group_id, coordinator, d.assignor, d.state, len(d.members))),
    ]


def format_list(groups: list[GroupListing], with_type: bool, with_state: bool) -> list[str]:
    """Kafka 4's ``printGroupInfo`` (``--list`` with ``--type`` / ``--state``): the GROUP column
    10 wider than the longest id (at least 15), TYPE and STATE 20 wide, every column padded."""
    width = max([15, *(len(g.group_id) for g in groups)]) + 10
    widths = [width]
    header = ["GROUP"]
    if with_type:
        widths.append(20)
        header.append("TYPE")
    if with_state:
        widths.append(20)
        header.append("STATE")
    lines = [table_line(widths, header)]
    for g in groups:
        values = [g.group_id]
        if with_type:
            values.append(g.group_type)
        if with_state:
            values.append(g.state)
        lines.append(table_line(widths, values))
    return lines


def _assignment_text_4(assignment: list[TopicPartitionTuple]) -> str:
    """Kafka 4's ``getAssignmentString``: ``t:0,1;u:0`` (partitions sorted, entries sorted), ``-`` if none."""
    if not assignment:
        return MISSING
    by_topic: dict[str, list[int]] = {}
    for t, p in assignment:
        by_topic.setdefault(t, []).append(p)
    return ";".join(sorted(t + ":" + ",".join(map(str, sorted(ps))) for t, ps in by_topic.items()))


def format_consumer_members(rows: list[MemberRow], verbose: bool) -> list[str]:
    """Kafka 4's ``printMembers`` for a consumer group (header first; note the trailing spaces).

    With ``verbose``: CURRENT-EPOCH (the member's epoch), CURRENT-ASSIGNMENT, TARGET-EPOCH
    (the group's target assignment epoch), TARGET-ASSIGNMENT, and UPGRADED when the group
    has both classic and consumer-protocol members (a group being upgraded).
    """
    g = max([15, *(len(r.group) for r in rows)])
    c = max([15, *(len(r.consumer_id) for r in rows)])
    i = max([17, *(len(r.group_instance_id) for r in rows)])
    h = max([15, *(len(r.host) for r in rows)])
    k = max([15, *(len(r.client_id) for r in rows)])
    current = max([20, *(len(_assignment_text_4(r.assignment)) for r in rows)])
    target = max([20, *(len(_assignment_text_4(r.target_assignment)) for r in rows)])
    with_instance = any(r.group_instance_id for r in rows)
    migrating = any(r.upgraded is False for r in rows) and any(r.upgraded is True for r in rows)
    base: tuple[int, ...] = (g, c, i, h, k, 15) if with_instance else (g, c, h, k, 15)
    extra: tuple[int, ...] = (15, current, 15, target, 0) if migrating else (15, current, 15, target)
    header = ["GROUP", "CONSUMER-ID", *(["GROUP-INSTANCE-ID"] if with_instance else []), "HOST", "CLIENT-ID",
              "#PARTITIONS"]
    line = table_line(base, header) + " "
    if verbose:
        line += table_line(extra, ["CURRENT-EPOCH", "CURRENT-ASSIGNMENT", "TARGET-EPOCH", "TARGET-ASSIGNMENT",
                             *(["UPGRADED"] if migrating else [])])
    lines = [line]
    for r in rows:
        values: list[object] = [r.group, r.consumer_id, *([r.group_instance_id] if with_instance else []), r.host,
                                r.client_id, r.num_partitions]
        line = table_line(base, values) + " "
        if verbose:
            more: list[object] = [r.current_epoch, _assignment_text_4(r.assignment), r.target_epoch,
                                  _assignment_text_4(r.target_assignment)]
            if migrating:
                more.append(None if r.upgraded is None else str(r.upgraded).lower())
            line += table_line(extra, more)
        lines.append(line)
    return lines


def format_consumer_state(d: GroupDescription, verbose: bool) -> list[str]:
    """Kafka 4's ``printStates`` for a consumer group: GROUP as wide as the id (at least 15),
    the coordinator as ``host:port  (id)``; with ``verbose`` GROUP-EPOCH and TARGET-ASSIGNMENT-EPOCH."""
    coordinator = f"{d.coordinator.host}:{d.coordinator.port}  ({d.coordinator.node_id})"
    strategy = d.assignor or MISSING
    if verbose:
        widths: tuple[int, ...] = (max(15, len(d.group_id)), max(25, len(coordinator)), 20, 20, 15, 25, 0)
        return [
            table_line(widths, ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "GROUP-EPOCH",
                          "TARGET-ASSIGNMENT-EPOCH", "#MEMBERS")),
            table_line(widths, (d.group_id, coordinator, strategy, d.state, d.group_epoch, d.target_assignment_epoch,
                          len(d.members))),
        ]
    widths = (max(15, len(d.group_id)), max(25, len(coordinator)), 20, 20, 0)
    return [
        table_line(widths, ("GROUP", "COORDINATOR (ID)", "ASSIGNMENT-STRATEGY", "STATE", "#MEMBERS")),
        table_line(widths, (d.group_id, coordinator, strategy, d.state, len(d.members))),
    ]


def format_reset(result: dict[str, dict[TopicPartitionTuple, int]]) -> list[str]:
    """Kafka's ``printOffsetsToReset``: the header whenever any group was handled, then the rows."""
    if not result:
        return []
    widths = (30, 30, 10, 15)
    lines = [table_line(widths, ("GROUP", "TOPIC", "PARTITION", "NEW-OFFSET"))]
    for group, offsets in result.items():
        for (t, p), off in sorted(offsets.items()):
            lines.append(table_line(widths, (group, t, p, off)))
    return lines


def format_export(result: dict[str, dict[TopicPartitionTuple, int]], single_group: bool) -> str:
    """Kafka's ``exportOffsetsToCsv``: ``topic,partition,offset`` lines (with the group unless one was named)."""
    rows = []
    for group, offsets in result.items():
        for (t, p), off in sorted(offsets.items()):
            rows.append(f"{t},{p},{off}\n" if single_group else f"{group},{t},{p},{off}\n")
    return "".join(rows)


def format_delete_offsets(rows: dict[TopicPartitionTuple, str | None]) -> list[str]:
    """Kafka's ``deleteOffsets`` table: an empty line, the header, rows sorted by the string
    ``topic + partition`` (as Kafka sorts them); partition −1 is a topic that could not be described."""
    widths = (30, 15, 15)
    lines = ["", table_line(widths, ("TOPIC", "PARTITION", "STATUS"))]
    for (topic, partition), error in sorted(rows.items(), key=lambda r: r[0][0] + str(r[0][1])):
        lines.append(table_line(widths, (topic, partition if partition >= 0 else "Not Provided",
                                   "Successful" if error is None else f"Error: {error}")))
    return lines
