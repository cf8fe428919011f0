"""``mafka reassign-partitions``: Kafka 2.8's ``kafka-reassign-partitions.sh --bootstrap-server`` for Mafka.

Actions (exactly one):

* ``--generate --topics-to-move-json-file F --broker-list "1,2,3" [--disable-rack-aware]``:
  prints ``Current partition replica assignment`` and ``Proposed partition
  reassignment configuration``, each a Kafka reassignment JSON
  (``{"version":1,"partitions":[{"topic":…,"partition":…,"replicas":[…],"log_dirs":["any",…]}]}``);
  the proposal is Kafka's ``AdminUtils.assignReplicasToBrokers`` per topic;
* ``--execute --reassignment-json-file F [--throttle B/s] [--additional]``:
  prints the current assignment (for rollback), sets the throttles (broker
  ``leader/follower.replication.throttled.rate`` on every broker involved,
  topic ``leader/follower.replication.throttled.replicas`` listing the
  moving ``partition:broker`` pairs) and sends AlterPartitionReassignments;
* ``--verify --reassignment-json-file F [--preserve-throttles]``: prints
  ``Status of partition reassignment:`` and one line per partition
  (``Reassignment of partition t-0 is complete.`` / ``… is still in
  progress.``); once nothing is in flight the throttles are removed;
* ``--list`` (reassignments in flight) and ``--cancel --reassignment-json-file F``.

Every text is Kafka 2.8's (``ReassignPartitionsCommand``).  Failures print
``Error: <message>`` (or Kafka's terse message) and exit with status 1.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mafka.client.blocking import BlockingClient, ClientTimeout
from mafka.controller.assignment import assign_replicas
from mafka.errors import ErrorCode, KafkaError

__all__ = [
    "add_parser",
    "run",
    "format_reassignment_json",
    "parse_reassignment_json",
    "parse_topics_to_move_json",
    "leader_throttles",
    "follower_throttles",
]

ALTER_PARTITION_REASSIGNMENTS, LIST_PARTITION_REASSIGNMENTS = 45, 46
INCREMENTAL_ALTER_CONFIGS = 44
TOPIC, BROKER = 2, 4
SET, DELETE = 0, 1
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

ACTIONS = ("generate", "execute", "verify", "list", "cancel")

TopicPartition = tuple[str, int]
Assignment = dict[TopicPartition, list[int]]


class CommandError(Exception):
    """Kafka's ``AdminCommandFailedException`` / ``AdminOperationException``: ``Error: <message>``."""


class TerseFailure(Exception):
    """Kafka's ``TerseReassignmentFailureException``: the message alone."""


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "reassign-partitions",
        help="move partition replicas between brokers (kafka-reassign-partitions)",
    )
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT")
    for action in ACTIONS:
        p.add_argument(f"--{action}", action="store_true")
    p.add_argument("--topics-to-move-json-file")
    p.add_argument("--broker-list")
    p.add_argument("--reassignment-json-file")
    p.add_argument("--throttle", type=int, default=-1, metavar="BYTES_PER_SEC")
    p.add_argument("--replica-alter-log-dirs-throttle", type=int, default=-1)
    p.add_argument("--additional", action="store_true")
    p.add_argument("--preserve-throttles", action="store_true")
    p.add_argument("--disable-rack-aware", action="store_true")
    p.add_argument(
        "--timeout", type=int, default=10000, help="ms (Kafka's); the cluster gets at least 30 s"
    )
    p.add_argument("--command-config", help="accepted for compatibility; ignored")
    p.set_defaults(func=run)


# --------------------------------------------------------------------------- JSON


def _sorted_parts(parts: Iterable[TopicPartition]) -> list[TopicPartition]:
    return sorted(parts)


def _tp(tp: TopicPartition) -> str:
    return f"{tp[0]}-{tp[1]}"


def format_reassignment_json(assignment: Mapping[TopicPartition, Sequence[int]]) -> str:
    """Kafka's ``formatAsReassignmentJson`` (compact, partitions sorted, ``log_dirs`` all ``any``)."""
    partitions = [
        {
            "topic": topic,
            "partition": partition,
            "replicas": list(assignment[(topic, partition)]),
            "log_dirs": [ANY_LOG_DIR] * len(assignment[(topic, partition)]),
        }
        for topic, partition in _sorted_parts(assignment)
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
    entries: list[tuple[TopicPartition, list[int]]] = []
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
                    f"{log_dirs} for partition {_tp(tp)}"
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
            + ",".join(_tp(tp) for tp in duplicate_parts)
        )
    duplicate_replicas = [
        (tp, sorted({r for r in replicas if replicas.count(r) > 1}))
        for tp, replicas in entries
        if len(set(replicas)) != len(replicas)
    ]
    if duplicate_replicas:
        message = ". ".join(
            f"{_tp(tp)} contains multiple entries for {','.join(map(str, dups))}"
            for tp, dups in duplicate_replicas
        )
        raise CommandError(f"Partition replica lists may not contain duplicate entries: {message}")
    return dict(entries)


def _broker_list(text: str) -> list[int]:
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
    current_reassignments: Mapping[TopicPartition, tuple[list[int], list[int]]],
    proposed: Mapping[TopicPartition, Sequence[int]],
    current: Mapping[TopicPartition, Sequence[int]],
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
    for (topic, p), replicas in proposed.items():
        part_moves = moves.setdefault(topic, {})
        sources = part_moves[p][0] if p in part_moves else set(current[(topic, p)])
        part_moves[p] = (sources, set(replicas))
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


# --------------------------------------------------------------------------- cluster calls


def _metadata_assignment(client: BlockingClient, topics: Iterable[str]) -> Assignment:
    wanted = sorted(set(topics))
    md = client.metadata(wanted)
    out: Assignment = {}
    for t in md.topics:
        if t.error_code == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
            raise CommandError(
                f"org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "
                f"Topic '{t.name}' not found."
            )
        for p in t.partitions:
            out[(t.name, p.partition_index)] = list(p.replica_nodes)
    return out


def _controller_call(client: BlockingClient, api_key: int, version: int, body: Any) -> Any:
    def attempt() -> tuple[bool, Any]:
        cid = client.controller_id()
        response = client.call(api_key, version, body, broker_id=cid)
        return response.error_code == ErrorCode.NOT_CONTROLLER, response

    response = client.retrying(attempt)
    if response.error_code != ErrorCode.NONE:
        raise CommandError(_java(response.error_code, response.error_message))
    return response


def _java(code: int, message: str | None) -> str:
    cls = KafkaError.for_code(code)
    name = "org.apache.kafka.common.errors." + cls.__name__.removesuffix("Error") + "Exception"
    return f"{name}: {message if message is not None else ErrorCode(code).description}"


def list_reassignments(
    client: BlockingClient, partitions: Iterable[TopicPartition] | None = None
) -> dict[TopicPartition, tuple[list[int], list[int], list[int]]]:
    """ListPartitionReassignments: partition → (replicas, adding, removing)."""
    if partitions is None:
        topics = None
    else:
        grouped: dict[str, list[int]] = {}
        for topic, p in partitions:
            grouped.setdefault(topic, []).append(p)
        topics = [{"name": t, "partition_indexes": ps} for t, ps in grouped.items()]
    body = {"timeout_ms": int(client.timeout_s * 1000), "topics": topics}
    response = _controller_call(client, LIST_PARTITION_REASSIGNMENTS, 0, body)
    return {
        (t.name, p.partition_index): (
            list(p.replicas),
            list(p.adding_replicas),
            list(p.removing_replicas),
        )
        for t in response.topics
        for p in t.partitions
    }


def alter_reassignments(
    client: BlockingClient, targets: Mapping[TopicPartition, Sequence[int] | None]
) -> dict[TopicPartition, str]:
    """AlterPartitionReassignments; returns the failed partitions' Java-style messages."""
    grouped: dict[str, list[dict[str, Any]]] = {}
    for (topic, p), replicas in targets.items():
        grouped.setdefault(topic, []).append(
            {"partition_index": p, "replicas": None if replicas is None else list(replicas)}
        )
    body = {
        "timeout_ms": int(client.timeout_s * 1000),
        "topics": [{"name": t, "partitions": ps} for t, ps in grouped.items()],
    }
    response = _controller_call(client, ALTER_PARTITION_REASSIGNMENTS, 0, body)
    return {
        (t.name, p.partition_index): _java(p.error_code, p.error_message)
        for t in response.responses
        for p in t.partitions
        if p.error_code != ErrorCode.NONE
    }


def _alter_configs(
    client: BlockingClient,
    resource_type: int,
    name: str,
    ops: list[tuple[str, int, str | None]],
    broker_id: int | None,
) -> None:
    body = {
        "resources": [
            {
                "resource_type": resource_type,
                "resource_name": name,
                "configs": [
                    {"name": key, "config_operation": op, "value": value} for key, op, value in ops
                ],
            }
        ],
        "validate_only": False,
    }
    response = client.call(INCREMENTAL_ALTER_CONFIGS, 0, body, broker_id=broker_id)
    for r in response.responses:
        if r.error_code != ErrorCode.NONE:
            raise CommandError(_java(r.error_code, r.error_message))


def modify_reassignment_throttle(client: BlockingClient, moves: MoveMap, throttle: int) -> None:
    """Kafka's ``modifyReassignmentThrottle``: topic throttled replicas, then broker rates."""
    leaders, followers = leader_throttles(moves), follower_throttles(moves)
    for topic in sorted(set(leaders) | set(followers)):
        ops = []
        if topic in leaders:
            ops.append((TOPIC_LEADER_THROTTLE, SET, leaders[topic]))
        if topic in followers:
            ops.append((TOPIC_FOLLOWER_THROTTLE, SET, followers[topic]))
        _alter_configs(client, TOPIC, topic, ops, None)
    live = set(client.brokers)
    for b in sorted(reassigning_brokers(moves)):
        if b not in live:
            continue
        ops = [
            (BROKER_LEADER_THROTTLE, SET, str(throttle)),
            (BROKER_FOLLOWER_THROTTLE, SET, str(throttle)),
        ]
        _alter_configs(client, BROKER, str(b), ops, b)
    print(f"The inter-broker throttle limit was set to {throttle} B/s")


def clear_all_throttles(
    client: BlockingClient, targets: Mapping[TopicPartition, Sequence[int]]
) -> None:
    """Kafka's ``clearAllThrottles``: every broker's rates, every target topic's replica lists."""
    client.metadata([])
    live = set(client.brokers)
    brokers = sorted(live | {b for replicas in targets.values() for b in replicas})
    print(
        f"Clearing broker-level throttles on broker{'' if len(brokers) == 1 else 's'} {','.join(map(str, brokers))}"
    )
    for b in brokers:
        if b in live:
            ops = [
                (key, DELETE, None)
                for key in (
                    BROKER_LEADER_THROTTLE,
                    BROKER_FOLLOWER_THROTTLE,
                    BROKER_LOG_DIR_THROTTLE,
                )
            ]
            _alter_configs(client, BROKER, str(b), ops, b)
    topics = sorted({t for t, _ in targets})
    print(
        f"Clearing topic-level throttles on topic{'' if len(topics) == 1 else 's'} {','.join(topics)}"
    )
    for topic in topics:
        ops = [(TOPIC_LEADER_THROTTLE, DELETE, None), (TOPIC_FOLLOWER_THROTTLE, DELETE, None)]
        _alter_configs(client, TOPIC, topic, ops, None)


# --------------------------------------------------------------------------- actions


def generate(
    client: BlockingClient, args: argparse.Namespace, rng: random.Random | None = None
) -> None:
    """Kafka's ``generateAssignment``."""
    if not args.topics_to_move_json_file or not args.broker_list:
        raise CommandError(
            "If --generate option is used, command must include both --topics-to-move-json-file "
            "and --broker-list options"
        )
    brokers = _broker_list(args.broker_list)
    with open(args.topics_to_move_json_file, encoding="utf-8") as f:
        topics = parse_topics_to_move_json(f.read())
    current = _metadata_assignment(client, topics)
    md = client.last_metadata
    chosen = [b for b in md.brokers if b.node_id in set(brokers)]
    racks = {b.node_id: (None if args.disable_rack_aware else b.rack) for b in chosen}
    rackless = sum(1 for r in racks.values() if r is None)
    if rackless not in (0, len(racks)):
        raise CommandError(
            "Not all brokers have rack information. Add --disable-rack-aware in command line to "
            "make replica assignment without rack information."
        )
    broker_arg: Any = sorted(racks) if rackless else dict(sorted(racks.items()))
    proposed: Assignment = {}
    for topic in sorted({t for t, _ in current}):
        parts = {p: r for (t, p), r in current.items() if t == topic}
        rf = len(parts[min(parts)])
        try:
            for p, replicas in assign_replicas(broker_arg, len(parts), rf, rng=rng).items():
                proposed[(topic, p)] = replicas
        except KafkaError as exc:
            raise CommandError(exc.message or str(exc)) from None
    print(f"Current partition replica assignment\n{format_reassignment_json(current)}\n")
    print(f"Proposed partition reassignment configuration\n{format_reassignment_json(proposed)}")


def _read_targets(args: argparse.Namespace, action: str) -> Assignment:
    if not args.reassignment_json_file:
        raise CommandError(
            f"If --{action} option is used, command must include --reassignment-json-file that "
            f"was used during the --execute option"
            if action in ("verify", "cancel")
            else f"If --{action} option is used, command must include --reassignment-json-file "
            f"that was output during the --generate option"
        )
    with open(args.reassignment_json_file, encoding="utf-8") as f:
        return parse_reassignment_json(f.read())


def execute(client: BlockingClient, args: argparse.Namespace) -> None:
    """Kafka's ``executeAssignment``."""
    proposed = _read_targets(args, "execute")
    in_flight = list_reassignments(client)
    if not args.additional and in_flight:
        raise TerseFailure(CANNOT_EXECUTE_BECAUSE_OF_EXISTING)
    client.metadata([])
    known = set(client.brokers)
    for b in sorted({b for replicas in proposed.values() for b in replicas}):
        if b not in known:
            raise CommandError(f"Unknown broker id {b}")
    current = _metadata_assignment(client, {t for t, _ in proposed})
    missing = [tp for tp in proposed if tp not in current]
    if missing:
        raise CommandError(
            "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "
            f"Unable to find partition: {_tp(missing[0])}"
        )
    rollback = format_reassignment_json({tp: current[tp] for tp in proposed})
    print(
        f"Current partition replica assignment\n\n{rollback}\n\nSave this to use as the "
        "--reassignment-json-file option during rollback"
    )
    if args.throttle >= 0 or args.replica_alter_log_dirs_throttle >= 0:
        print(RUN_VERIFY_PERIODICALLY)
        if args.throttle >= 0:
            moves = proposed_move_map(
                {tp: (r, a) for tp, (r, a, _) in in_flight.items()}, proposed, current
            )
            modify_reassignment_throttle(client, moves, args.throttle)
    errors = alter_reassignments(client, proposed)
    if errors:
        raise TerseFailure(
            "Error reassigning partition(s):\n"
            + "\n".join(f"{_tp(tp)}: {errors[tp]}" for tp in _sorted_parts(errors))
        )
    parts = _sorted_parts(proposed)
    print(
        f"Successfully started partition reassignment{'' if len(parts) == 1 else 's'} for "
        + ",".join(_tp(tp) for tp in parts)
    )


def verify(client: BlockingClient, args: argparse.Namespace) -> bool:
    """Kafka's ``verifyAssignment``; returns True while anything is still moving."""
    targets = _read_targets(args, "verify")
    in_flight = list_reassignments(client)
    not_found = [tp for tp in targets if tp not in in_flight]
    current = _current_replicas(client, {t for t, _ in not_found})
    lines = ["Status of partition reassignment:"]
    for tp in _sorted_parts(targets):
        if tp in in_flight:
            lines.append(f"Reassignment of partition {_tp(tp)} is still in progress.")
            continue
        replicas = current.get(tp, [])
        if replicas == targets[tp]:
            lines.append(f"Reassignment of partition {_tp(tp)} is complete.")
        else:
            lines.append(
                f"There is no active reassignment of partition {_tp(tp)}, but replica set is "
                f"{','.join(map(str, replicas))} rather than {','.join(map(str, targets[tp]))}."
            )
    print("\n".join(lines))
    ongoing = bool(in_flight)
    if not ongoing and not args.preserve_throttles:
        clear_all_throttles(client, targets)
    return ongoing


def _current_replicas(client: BlockingClient, topics: set[str]) -> Assignment:
    if not topics:
        return {}
    md = client.metadata(sorted(topics))
    return {
        (t.name, p.partition_index): list(p.replica_nodes)
        for t in md.topics
        if t.error_code == ErrorCode.NONE
        for p in t.partitions
    }


def list_action(client: BlockingClient, args: argparse.Namespace) -> None:
    """Kafka's ``listReassignments``."""
    current = list_reassignments(client)
    if not current:
        print("No partition reassignments found.")
        return
    lines = ["Current partition reassignments:"]
    for tp in _sorted_parts(current):
        replicas, adding, removing = current[tp]
        line = f"{_tp(tp)}: replicas: {','.join(map(str, replicas))}."
        if adding:
            line += f" adding: {','.join(map(str, adding))}."
        if removing:
            line += f" removing: {','.join(map(str, removing))}."
        lines.append(line)
    print("\n".join(lines))


def cancel(client: BlockingClient, args: argparse.Namespace) -> None:
    """Kafka's ``cancelAssignment``."""
    targets = _read_targets(args, "cancel")
    active = [
        tp
        for tp, (_, adding, removing) in list_reassignments(client, list(targets)).items()
        if adding or removing
    ]
    if active:
        errors = alter_reassignments(client, {tp: None for tp in active})
        if errors:
            raise TerseFailure(
                f"Error cancelling partition reassignment{'' if len(errors) == 1 else 's'} for:\n"
                + "\n".join(f"{_tp(tp)}: {errors[tp]}" for tp in _sorted_parts(errors))
            )
        print(
            f"Successfully cancelled partition reassignment{'' if len(active) == 1 else 's'} for: "
            + ",".join(_tp(tp) for tp in _sorted_parts(active))
        )
    else:
        print("None of the specified partition reassignments are active.")
    if not args.preserve_throttles:
        clear_all_throttles(client, targets)


def run(args: argparse.Namespace) -> int:
    chosen = [a for a in ACTIONS if getattr(args, a)]
    if len(chosen) != 1:
        print(
            "Command must include exactly one action: --generate, --execute, --verify, --cancel, "
            "or --list",
            file=sys.stderr,
        )
        return 1
    action = chosen[0]
    try:
        timeout_s = max(30.0, args.timeout / 1000.0)
        with BlockingClient(
            args.bootstrap_server, client_id="mafka-reassign-partitions", timeout_s=timeout_s
        ) as client:
            if action == "generate":
                generate(client, args)
            elif action == "execute":
                execute(client, args)
            elif action == "verify":
                verify(client, args)
            elif action == "list":
                list_action(client, args)
            else:
                cancel(client, args)
    except TerseFailure as exc:
        print(str(exc))
        return 1
    except (CommandError, OSError, ValueError) as exc:
        print(f"Error: {exc}")
        return 1
    except ClientTimeout as exc:
        print(f"Error: org.apache.kafka.common.errors.TimeoutException: {exc}")
        return 1
    sys.stdout.flush()
    return 0
