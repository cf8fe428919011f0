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
  progress.``); once nothing is in flight the throttles are removed.  On
  stderr, how many of the partitions are complete
  (``reassign-partitions: 1/2 partitions moved (50%) in 0.1 s``);
* ``--list`` (reassignments in flight) and ``--cancel --reassignment-json-file F``.

Every text is Kafka 2.8's (``ReassignPartitionsCommand``).  Failures print
``Error: <message>`` (or Kafka's terse message) and exit with status 1.

``--zookeeper H:P`` instead of ``--bootstrap-server`` is Kafka 2.8's deprecated
form (``--generate``, ``--execute``, ``--verify`` on the znodes directly):
see :mod:`mafka.cli.reassign_partitions_zk`.  Given both, ``--zookeeper`` is
ignored with Kafka's warning.
"""

from __future__ import annotations

import argparse
import random
import sys
import time
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from mafka.cli.clients import admin_config, error_text
from mafka.cli.java_exceptions import java_class
from mafka.cli.reassign_partitions_common import (
    BROKER_FOLLOWER_THROTTLE,
    BROKER_LEADER_THROTTLE,
    BROKER_LOG_DIR_THROTTLE,
    CANNOT_EXECUTE_BECAUSE_OF_EXISTING,
    RUN_VERIFY_PERIODICALLY,
    TOPIC_FOLLOWER_THROTTLE,
    TOPIC_LEADER_THROTTLE,
    Assignment,
    CommandError,
    MoveMap,
    TerseFailure,
    follower_throttles,
    format_reassignment_json,
    leader_throttles,
    parse_broker_list,
    parse_reassignment_json,
    parse_topics_to_move_json,
    print_generated,
    proposed_move_map,
    reassigning_brokers,
    report_verify_progress,
    sorted_parts,
    status_lines,
    tp_str,
)
from mafka.client.admin import AdminClient
from mafka.client.admin_types import AlterConfigOpType, ConfigEntry, ConfigResource, ResourceType
from mafka.client.kafka_error import KafkaError as ClientError
from mafka.client.kafka_error import KafkaException
from mafka.client.message import TopicPartition as ClientPartition
from mafka.client.metadata_view import ClusterMetadataView
from mafka.errors import ErrorCode
from mafka.topics import TopicPartitionTuple

__all__ = ["add_parser", "run"]

ACTIONS = ("generate", "execute", "verify", "list", "cancel")


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "reassign-partitions",
        help="move partition replicas between brokers (kafka-reassign-partitions)",
    )
    p.add_argument("--bootstrap-server", metavar="HOST:PORT")
    p.add_argument("--zookeeper", metavar="HOST:PORT[/CHROOT]",
                   help="DEPRECATED (as in Kafka 2.8): --generate/--execute/--verify on the znodes directly")
    for action in ACTIONS:
        p.add_argument(f"--{action}", action="store_true")
    p.add_argument("--topics-to-move-json-file")
    p.add_argument("--broker-list")
    p.add_argument("--reassignment-json-file")
    # None = not given (the --zookeeper form checks which options were given); -1 / 10000 ms otherwise.
    p.add_argument("--throttle", type=int, default=None, metavar="BYTES_PER_SEC")
    p.add_argument("--replica-alter-log-dirs-throttle", type=int, default=None)
    p.add_argument("--additional", action="store_true")
    p.add_argument("--preserve-throttles", action="store_true")
    p.add_argument("--disable-rack-aware", action="store_true")
    p.add_argument(
        "--timeout", type=int, default=None, help="ms (Kafka's, default 10000); the cluster gets at least 30 s"
    )
    p.add_argument("--command-config", metavar="FILE",
                   help="Property file containing configs to be passed to Admin Client.")
    p.set_defaults(func=run)


# --------------------------------------------------------------------------- cluster calls


class Cluster:
    """The admin calls the command makes, each bounded by ``timeout_s``, failures as CommandError."""

    def __init__(self, admin: AdminClient, timeout_s: float) -> None:
        self.admin = admin
        self.timeout_s = timeout_s
        self.last_metadata: ClusterMetadataView | None = None

    def _result(self, future: Any) -> Any:
        try:
            return future.result(self.timeout_s + 5.0)
        except KafkaException as exc:
            raise CommandError(_java_of(exc.error)) from None
        except TimeoutError:
            raise CommandError(_java_of(ClientError(ClientError._TIMED_OUT))) from None

    def _result_or_error(self, future: Any) -> Any:
        try:
            return future.result(self.timeout_s + 5.0)
        except TimeoutError:
            raise KafkaException(ClientError._TIMED_OUT) from None

    def metadata(self) -> ClusterMetadataView:
        """Brokers and every topic's partitions, asking again while no broker answers."""
        deadline = time.monotonic() + self.timeout_s
        while True:
            try:
                self.last_metadata = self.admin.list_topics(timeout=max(0.1, deadline - time.monotonic()))
                return self.last_metadata
            except KafkaException as exc:
                if exc.error.code() not in _UNREACHABLE or time.monotonic() >= deadline:
                    raise CommandError(_java_of(exc.error)) from None
            time.sleep(0.1)

    def brokers(self) -> set[int]:
        return set(self.metadata().brokers)

    def list_reassignments(
        self, partitions: Iterable[TopicPartitionTuple] | None = None
    ) -> dict[TopicPartitionTuple, tuple[list[int], list[int], list[int]]]:
        """ListPartitionReassignments: partition → (replicas, adding, removing)."""
        tps = None if partitions is None else [ClientPartition(t, p) for t, p in partitions]
        found = self._result(self.admin.list_partition_reassignments(tps, request_timeout=self.timeout_s))
        return {
            (tp.topic, tp.partition): (r.replicas, r.adding_replicas, r.removing_replicas)
            for tp, r in found.items()
        }

    def alter_reassignments(
        self, targets: Mapping[TopicPartitionTuple, Sequence[int] | None]
    ) -> dict[TopicPartitionTuple, str]:
        """AlterPartitionReassignments; returns the failed partitions' Java-style messages."""
        futures = self.admin.alter_partition_reassignments(
            {ClientPartition(t, p): None if r is None else list(r) for (t, p), r in targets.items()},
            request_timeout=self.timeout_s,
        )
        failed: dict[TopicPartitionTuple, str] = {}
        errors: list[ClientError] = []
        for tp, future in futures.items():
            try:
                self._result_or_error(future)
            except KafkaException as exc:
                errors.append(exc.error)
                failed[(tp.topic, tp.partition)] = _java_of(exc.error)
        if errors and len(errors) == len(futures) and len({e.code() for e in errors}) == 1 \
                and errors[0].code() < 0:
            # Not an answer per partition: the request itself failed (timed out, no controller).
            raise CommandError(_java_of(errors[0]))
        return failed

    def alter_configs(self, resource_type: ResourceType, name: str,
                      ops: list[tuple[str, AlterConfigOpType, str | None]]) -> None:
        resource = ConfigResource(resource_type, name, incremental_configs=[
            ConfigEntry(key, value, incremental_operation=op) for key, op, value in ops
        ])
        futures = self.admin.incremental_alter_configs([resource], request_timeout=self.timeout_s)
        self._result(futures[resource])


#: Client errors meaning "no broker could be asked yet": asked again until the timeout.
_UNREACHABLE = frozenset({ClientError._TRANSPORT, ClientError._ALL_BROKERS_DOWN})


def _java(code: int, message: str | None) -> str:
    return f"{java_class(code)}: {message if message is not None else ErrorCode(code).description}"


def _java_of(err: ClientError) -> str:
    """A client error as Kafka's admin client reports it (``org.apache…XException: message``)."""
    if err.code() in (ClientError._TIMED_OUT, ClientError._MSG_TIMED_OUT):
        return f"org.apache.kafka.common.errors.TimeoutException: {err.str()}"
    try:
        ErrorCode(err.code())
    except ValueError:
        return f"org.apache.kafka.common.KafkaException: {err.str()}"
    return _java(err.code(), error_text(err))


def _metadata_assignment(cluster: Cluster, topics: Iterable[str]) -> Assignment:
    """The current replicas of every partition of ``topics`` (each must exist)."""
    md = cluster.metadata()
    out: Assignment = {}
    for name in sorted(set(topics)):
        t = md.topics.get(name)
        if t is None or (t.error is not None and t.error.code() == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
            raise CommandError(
                f"org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "
                f"Topic '{name}' not found."
            )
        for p in t.partitions.values():
            out[(name, p.id)] = list(p.replicas)
    return out


def modify_reassignment_throttle(cluster: Cluster, moves: MoveMap, throttle: int) -> None:
    """Kafka's ``modifyReassignmentThrottle``: topic throttled replicas, then broker rates."""
    leaders, followers = leader_throttles(moves), follower_throttles(moves)
    for topic in sorted(set(leaders) | set(followers)):
        ops: list[tuple[str, AlterConfigOpType, str | None]] = []
        if topic in leaders:
            ops.append((TOPIC_LEADER_THROTTLE, AlterConfigOpType.SET, leaders[topic]))
        if topic in followers:
            ops.append((TOPIC_FOLLOWER_THROTTLE, AlterConfigOpType.SET, followers[topic]))
        cluster.alter_configs(ResourceType.TOPIC, topic, ops)
    live = cluster.brokers()
    for b in sorted(reassigning_brokers(moves)):
        if b not in live:
            continue
        ops = [
            (BROKER_LEADER_THROTTLE, AlterConfigOpType.SET, str(throttle)),
            (BROKER_FOLLOWER_THROTTLE, AlterConfigOpType.SET, str(throttle)),
        ]
        cluster.alter_configs(ResourceType.BROKER, str(b), ops)
    print(f"The inter-broker throttle limit was set to {throttle} B/s")


def clear_all_throttles(cluster: Cluster, targets: Mapping[TopicPartitionTuple, Sequence[int]]) -> None:
    """Kafka's ``clearAllThrottles``: every broker's rates, every target topic's replica lists."""
    live = cluster.brokers()
    brokers = sorted(live | {b for replicas in targets.values() for b in replicas})
    print(
        f"Clearing broker-level throttles on broker{'' if len(brokers) == 1 else 's'} {','.join(map(str, brokers))}"
    )
    for b in brokers:
        if b in live:
            ops: list[tuple[str, AlterConfigOpType, str | None]] = [
                (key, AlterConfigOpType.DELETE, None)
                for key in (
                    BROKER_LEADER_THROTTLE,
                    BROKER_FOLLOWER_THROTTLE,
                    BROKER_LOG_DIR_THROTTLE,
                )
            ]
            cluster.alter_configs(ResourceType.BROKER, str(b), ops)
    topics = sorted({t for t, _ in targets})
    print(
        f"Clearing topic-level throttles on topic{'' if len(topics) == 1 else 's'} {','.join(topics)}"
    )
    for topic in topics:
        cluster.alter_configs(ResourceType.TOPIC, topic, [
            (TOPIC_LEADER_THROTTLE, AlterConfigOpType.DELETE, None),
            (TOPIC_FOLLOWER_THROTTLE, AlterConfigOpType.DELETE, None),
        ])


# --------------------------------------------------------------------------- actions


def generate(
    cluster: Cluster, args: argparse.Namespace, rng: random.Random | None = None
) -> None:
    """Kafka's ``generateAssignment``."""
    if not args.topics_to_move_json_file or not args.broker_list:
        raise CommandError(
            "If --generate option is used, command must include both --topics-to-move-json-file "
            "and --broker-list options"
        )
    brokers = parse_broker_list(args.broker_list)
    with open(args.topics_to_move_json_file, encoding="utf-8") as f:
        topics = parse_topics_to_move_json(f.read())
    current = _metadata_assignment(cluster, topics)
    md = cluster.last_metadata
    assert md is not None
    chosen = [b for b in md.brokers.values() if b.id in set(brokers)]
    racks = {b.id: (None if args.disable_rack_aware else b.rack) for b in chosen}
    rackless = sum(1 for r in racks.values() if r is None)
    if rackless not in (0, len(racks)):
        raise CommandError(
            "Not all brokers have rack information. Add --disable-rack-aware in command line to "
            "make replica assignment without rack information."
        )
    broker_arg: Any = sorted(racks) if rackless else dict(sorted(racks.items()))
    print_generated(current, broker_arg, rng)


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


def execute(cluster: Cluster, args: argparse.Namespace) -> None:
    """Kafka's ``executeAssignment``."""
    proposed = _read_targets(args, "execute")
    in_flight = cluster.list_reassignments()
    if not args.additional and in_flight:
        raise TerseFailure(CANNOT_EXECUTE_BECAUSE_OF_EXISTING)
    known = cluster.brokers()
    for b in sorted({b for replicas in proposed.values() for b in replicas}):
        if b not in known:
            raise CommandError(f"Unknown broker id {b}")
    current = _metadata_assignment(cluster, {t for t, _ in proposed})
    missing = [tp for tp in proposed if tp not in current]
    if missing:
        raise CommandError(
            "org.apache.kafka.common.errors.UnknownTopicOrPartitionException: "
            f"Unable to find partition: {tp_str(missing[0])}"
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
            modify_reassignment_throttle(cluster, moves, args.throttle)
    errors = cluster.alter_reassignments(proposed)
    if errors:
        raise TerseFailure(
            "Error reassigning partition(s):\n"
            + "\n".join(f"{tp_str(tp)}: {errors[tp]}" for tp in sorted_parts(errors))
        )
    parts = sorted_parts(proposed)
    print(
        f"Successfully started partition reassignment{'' if len(parts) == 1 else 's'} for "
        + ",".join(tp_str(tp) for tp in parts)
    )


def verify(cluster: Cluster, args: argparse.Namespace) -> bool:
    """Kafka's ``verifyAssignment``; returns True while anything is still moving."""
    targets = _read_targets(args, "verify")
    in_flight = cluster.list_reassignments()
    not_found = [tp for tp in targets if tp not in in_flight]
    current = _current_replicas(cluster, {t for t, _ in not_found})
    print("\n".join(status_lines(targets, in_flight, current)))
    report_verify_progress(targets, in_flight, current)
    ongoing = bool(in_flight)
    if not ongoing and not args.preserve_throttles:
        clear_all_throttles(cluster, targets)
    return ongoing


def _current_replicas(cluster: Cluster, topics: set[str]) -> Assignment:
    if not topics:
        return {}
    md = cluster.metadata()
    return {
        (name, p.id): list(p.replicas)
        for name in sorted(topics)
        if (t := md.topics.get(name)) is not None and t.error is None
        for p in t.partitions.values()
    }


def list_action(cluster: Cluster, args: argparse.Namespace) -> None:
    """Kafka's ``listReassignments``."""
    current = cluster.list_reassignments()
    if not current:
        print("No partition reassignments found.")
        return
    lines = ["Current partition reassignments:"]
    for tp in sorted_parts(current):
        replicas, adding, removing = current[tp]
        line = f"{tp_str(tp)}: replicas: {','.join(map(str, replicas))}."
        if adding:
            line += f" adding: {','.join(map(str, adding))}."
        if removing:
            line += f" removing: {','.join(map(str, removing))}."
        lines.append(line)
    print("\n".join(lines))


def cancel(cluster: Cluster, args: argparse.Namespace) -> None:
    """Kafka's ``cancelAssignment``."""
    targets = _read_targets(args, "cancel")
    active = [
        tp
        for tp, (_, adding, removing) in cluster.list_reassignments(list(targets)).items()
        if adding or removing
    ]
    if active:
        errors = cluster.alter_reassignments({tp: None for tp in active})
        if errors:
            raise TerseFailure(
                f"Error cancelling partition reassignment{'' if len(errors) == 1 else 's'} for:\n"
                + "\n".join(f"{tp_str(tp)}: {errors[tp]}" for tp in sorted_parts(errors))
            )
        print(
            f"Successfully cancelled partition reassignment{'' if len(active) == 1 else 's'} for: "
            + ",".join(tp_str(tp) for tp in sorted_parts(active))
        )
    else:
        print("None of the specified partition reassignments are active.")
    if not args.preserve_throttles:
        clear_all_throttles(cluster, targets)


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
    if not args.bootstrap_server and not args.zookeeper:
        print("Please specify --bootstrap-server", file=sys.stderr)
        return 1
    if args.zookeeper:
        from mafka.cli.reassign_partitions_zk import check_zookeeper_args, run_zookeeper

        problem = check_zookeeper_args(args, action)
        if problem is not None:
            print(problem, file=sys.stderr)
            return 1
        if not args.bootstrap_server:
            return run_zookeeper(args, action)
        print(
            "Warning: ignoring deprecated --zookeeper option because --bootstrap-server was specified.  "
            "The --zookeeper option will be removed in a future version of Kafka."
        )
    args.throttle = -1 if args.throttle is None else args.throttle
    if args.replica_alter_log_dirs_throttle is None:
        args.replica_alter_log_dirs_throttle = -1
    args.timeout = 10000 if args.timeout is None else args.timeout
    try:
        timeout_s = max(30.0, args.timeout / 1000.0)
        config = admin_config(args.bootstrap_server, "mafka-reassign-partitions", timeout_s,
                              args.command_config)
        with AdminClient(config) as admin:
            cluster = Cluster(admin, timeout_s)
            if action == "generate":
                generate(cluster, args)
            elif action == "execute":
                execute(cluster, args)
            elif action == "verify":
                verify(cluster, args)
            elif action == "list":
                list_action(cluster, args)
            else:
                cancel(cluster, args)
    except TerseFailure as exc:
        print(str(exc))
        return 1
    except (CommandError, OSError, ValueError) as exc:
        print(f"Error: {exc}")
        return 1
    sys.stdout.flush()
    return 0
