"""What both forms of ``mafka reassign-partitions`` share (``--bootstrap-server`` and ``--zookeeper``).

Kafka 2.8's ``ReassignPartitionsCommand`` pieces that do not talk to a
cluster: the reassignment and topics-to-move JSON, the throttle
calculations (``calculateProposedMoveMap``, ``calculateLeaderThrottles``, …),
the ``--generate`` output, the ``--verify`` status lines and its progress
figure on stderr, and the two failure kinds.
:mod:`mafka.cli.reassign_partitions` (the admin-client form) and
:mod:`mafka.cli.reassign_partitions_zk` (the deprecated ZooKeeper form) both
build on this module; it imports neither.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mafka.cli.progress import progress
from mafka.controller.assignment import assign_replicas
from mafka.errors import KafkaError
from mafka.topics import TopicPartitionTuple

__all__ = [
    "ANY_LOG_DIR",
    "BROKER_FOLLOWER_THROTTLE",
    "BROKER_LEADER_THROTTLE",
    "BROKER_LOG_DIR_THROTTLE",
    "CANNOT_EXECUTE_BECAUSE_OF_EXISTING",
    "RUN_VERIFY_PERIODICALLY",
    "TOPIC_FOLLOWER_THROTTLE",
    "TOPIC_LEADER_THROTTLE",
    "Assignment",
    "CommandError",
    "MoveMap",
    "TerseFailure",
    "follower_throttles",
    "format_reassignment_json",
    "leader_throttles",
    "parse_broker_list",
    "parse_reassignment_json",
    "parse_topics_to_move_json",
    "print_generated",
    "proposed_move_map",
    "reassigning_brokers",
    "reassignments_complete",
    "report_verify_progress",
    "sorted_parts",
    "status_lines",
    "tp_str",
]

ANY_LOG_DIR = "any"

BROKER_LEADER_THROTTLE = "leader.replication.throttled.rate"
BROKER_FOLLOWER_THROTTLE = "follower.replication.throttled.rate"
BROKER_LOG_DIR_THROTTLE = "replica.alter.log.dirs.io.max.bytes.per.second"
TOPIC_LEADER_THROTTLE = "leader.replication.throttled.replicas"
TOPIC_FOLLOWER_THROTTLE = "follower.replication.throttled.replicas"

CANNOT_EXECUTE_BECAUSE_OF_EXISTING = (
    "Cannot execute because there is an existing partition assignment.  Use --additional to "
    "override this and create a new partition assignment in addition to the existing one. The "
    "--additional flag can also be used to change the throttle by resubmitting the current "
    "reassignment."
)
RUN_VERIFY_PERIODICALLY = (
    "Warning: You must run --verify periodically, until the reassignment completes, to ensure "
    "the throttle is removed."
)

Assignment = dict[TopicPartitionTuple, list[int]]


class CommandError(Exception):
    """Kafka's ``AdminCommandFailedException`` / ``AdminOperationException``: ``Error: <message>``."""


class TerseFailure(Exception):
    """Kafka's ``TerseReassignmentFailureException``: the message alone."""


# --------------------------------------------------------------------------- JSON


def sorted_parts(parts: Iterable[TopicPartitionTuple]) -> list[TopicPartitionTuple]:
    return sorted(parts)


def tp_str(tp: TopicPartitionTuple) -> str:
    return f"{tp[0]}-{tp[1]}"


def format_reassignment_json(assignment: Mapping[TopicPartitionTuple, Sequence[int]]) -> str:
    """Kafka's ``formatAsReassignmentJson`` (compact, partitions sorted, ``log_dirs`` all ``any``)."""
    partitions = [
        {
            "topic": topic,
            "partition": partition,
            "replicas": list(assignment[(topic, partition)]),
            "log_dirs": [ANY_LOG_DIR] * len(assignment[(topic, partition)]),
        }
        for topic, partition in sorted_parts(assignment)
    ]
    return json.dumps({"version": 1, "partitions": partitions}, separators=(",", ":"))


def _load(text: str, what: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise CommandError(f"Unable to parse {what}: {exc}") from None


def parse_topics_to_move_json(text: str) -> list[str]:
    """``{"topics":[{"topic":"foo"}],"version":1}`` → topic names (Kafka's checks)."""
    data = _load(text, "the topics to move JSON")
    if not isinstance(data, dict) or not isinstance(data.get("topics"), list):
        raise CommandError('Missing "topics" in the topics to move JSON')
    topics = [
        str(entry["topic"])
        for entry in data["topics"]
        if isinstance(entry, dict) and "topic" in entry
    ]
    duplicates = sorted({t for t in topics if topics.count(t) > 1})
    if duplicates:
        raise CommandError(
            f"List of topics to reassign contains duplicate entries: {','.join(duplicates)}"
        )
    return topics


def parse_reassignment_json(text: str) -> Assignment:
    """A reassignment JSON → partition → target replicas, with ``parseExecuteAssignmentArgs``' checks."""
    data = _load(text, "the partition reassignment JSON")
    if not isinstance(data, dict) or not isinstance(data.get("partitions"), list):
        raise CommandError('Missing "partitions" in the partition reassignment JSON')
    entries: list[tuple[TopicPartitionTuple, list[int]]] = []
    for entry in data["partitions"]:
        try:
            tp = (str(entry["topic"]), int(entry["partition"]))
            replicas = [int(r) for r in entry["replicas"]]
        except (KeyError, TypeError, ValueError):
            raise CommandError(f"Invalid partition entry {json.dumps(entry)}") from None
        log_dirs = entry.get("log_dirs")
        if log_dirs is not None:
            if len(log_dirs) != len(replicas):
                raise CommandError(
                    f"Size of replicas list {replicas} is different from size of log dirs list "
                    f"{log_dirs} for partition {tp_str(tp)}"
                )
            if any(d != ANY_LOG_DIR for d in log_dirs):
                raise CommandError(
                    "Moving replicas between log directories is not supported by Mafka"
                )
        entries.append((tp, replicas))
    if not entries:
        raise CommandError("Partition reassignment list cannot be empty")
    if any(not replicas for _, replicas in entries):
        raise CommandError("Partition replica list cannot be empty")
    parts = [tp for tp, _ in entries]
    duplicate_parts = sorted({tp for tp in parts if parts.count(tp) > 1})
    if duplicate_parts:
        raise CommandError(
            "Partition reassignment contains duplicate topic partitions: "
            + ",".join(tp_str(tp) for tp in duplicate_parts)
        )
    duplicate_replicas = [
        (tp, sorted({r for r in replicas if replicas.count(r) > 1}))
        for tp, replicas in entries
        if len(set(replicas)) != len(replicas)
    ]
    if duplicate_replicas:
        message = ". ".join(
            f"{tp_str(tp)} contains multiple entries for {','.join(map(str, dups))}"
            for tp, dups in duplicate_replicas
        )
        raise CommandError(f"Partition replica lists may not contain duplicate entries: {message}")
    return dict(entries)


def parse_broker_list(text: str) -> list[int]:
    try:
        brokers = [int(b) for b in text.split(",") if b.strip()]
    except ValueError:
        raise CommandError(f"Invalid broker list: {text}") from None
    duplicates = sorted({b for b in brokers if brokers.count(b) > 1})
    if duplicates:
        raise CommandError(
            f"Broker list contains duplicate entries: {','.join(map(str, duplicates))}"
        )
    return brokers


# --------------------------------------------------------------------------- throttles (pure)

#: topic → partition → (sources, destinations)
MoveMap = dict[str, dict[int, tuple[set[int], set[int]]]]


def proposed_move_map(
    current_reassignments: Mapping[TopicPartitionTuple, tuple[list[int], list[int]]],
    proposed: Mapping[TopicPartitionTuple, Sequence[int]],
    current: Mapping[TopicPartitionTuple, Sequence[int]],
) -> MoveMap:
    """Kafka's ``calculateProposedMoveMap``.

    Args:
        current_reassignments: In-flight reassignments: partition → (replicas, adding).
        proposed: The new targets.
        current: The current replicas of the proposed partitions.
    """
    moves: MoveMap = {}
    for (topic, p), (replicas, adding) in current_reassignments.items():
        moves.setdefault(topic, {})[p] = (
            {r for r in replicas if r not in adding},
            set(adding),
        )
    for (topic, p), targets in proposed.items():
        part_moves = moves.setdefault(topic, {})
        sources = part_moves[p][0] if p in part_moves else set(current[(topic, p)])
        part_moves[p] = (sources, set(targets))
    return moves


def leader_throttles(moves: MoveMap) -> dict[str, str]:
    """Kafka's ``calculateLeaderThrottles``: ``partition:source`` pairs (string-sorted)."""
    return {
        topic: ",".join(sorted({f"{p}:{s}" for p, (sources, _) in parts.items() for s in sources}))
        for topic, parts in moves.items()
    }


def follower_throttles(moves: MoveMap) -> dict[str, str]:
    """Kafka's ``calculateFollowerThrottles``: ``partition:destination`` pairs for new replicas."""
    return {
        topic: ",".join(
            sorted(
                {
                    f"{p}:{d}"
                    for p, (sources, destinations) in parts.items()
                    for d in destinations
                    if d not in sources
                }
            )
        )
        for topic, parts in moves.items()
    }


def reassigning_brokers(moves: MoveMap) -> set[int]:
    """Kafka's ``calculateReassigningBrokers``: every source and destination."""
    return {
        b
        for parts in moves.values()
        for sources, destinations in parts.values()
        for b in sources | destinations
    }


# --------------------------------------------------------------------------- output


def print_generated(current: Assignment, brokers: Any, rng: Any) -> None:
    """Kafka's ``--generate`` output: the current assignment and a new one over *brokers* for the same topics."""
    proposed: Assignment = {}
    for topic in sorted({t for t, _ in current}):
        parts = {p: r for (t, p), r in current.items() if t == topic}
        rf = len(parts[min(parts)])
        try:
            for p, replicas in assign_replicas(brokers, len(parts), rf, rng=rng).items():
                proposed[(topic, p)] = replicas
        except KafkaError as exc:
            raise CommandError(exc.message or str(exc)) from None
    print(f"Current partition replica assignment\n{format_reassignment_json(current)}\n")
    print(f"Proposed partition reassignment configuration\n{format_reassignment_json(proposed)}")


def status_lines(targets: Assignment, in_flight: Any, current: Assignment) -> list[str]:
    """Kafka's ``--verify`` report: each target partition still moving, complete, or on another replica set."""
    lines = ["Status of partition reassignment:"]
    for tp in sorted_parts(targets):
        if tp in in_flight:
            lines.append(f"Reassignment of partition {tp_str(tp)} is still in progress.")
            continue
        replicas = current.get(tp, [])
        if replicas == targets[tp]:
            lines.append(f"Reassignment of partition {tp_str(tp)} is complete.")
        else:
            lines.append(
                f"There is no active reassignment of partition {tp_str(tp)}, but replica set is "
                f"{','.join(map(str, replicas))} rather than {','.join(map(str, targets[tp]))}."
            )
    return lines


def reassignments_complete(targets: Assignment, in_flight: Any, current: Assignment) -> int:
    """How many target partitions ``--verify`` finds complete: not in flight, on exactly the target replicas."""
    return sum(1 for tp, replicas in targets.items() if tp not in in_flight and current.get(tp) == replicas)


def report_verify_progress(targets: Assignment, in_flight: Any, current: Assignment) -> None:
    """``--verify``'s figure on stderr (:mod:`mafka.cli.progress`), beside Kafka's lines on stdout.

    ``--verify`` is what a user runs again and again while a reassignment moves; each run
    ends with ``reassign-partitions: 12/40 partitions moved (30%) in 0.1 s``.
    """
    with progress("reassign-partitions", total=len(targets), unit="partitions moved") as bar:
        bar.update(reassignments_complete(targets, in_flight, current))
