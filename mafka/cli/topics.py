"""``mafka topics``: Kafka 2.8's ``kafka-topics.sh --bootstrap-server`` for Mafka.

Actions (exactly one): ``--create``, ``--list``, ``--describe``, ``--alter``,
``--delete``.  Output lines are Kafka's: ``Created topic t.``, the sorted
topic list, and the describe format::

    Topic: t<TAB>PartitionCount: 3<TAB>ReplicationFactor: 1<TAB>Configs: k=v
    <TAB>Topic: t<TAB>Partition: 0<TAB>Leader: 1<TAB>Replicas: 1<TAB>Isr: 1

``TopicId`` is left out, as Kafka 2.8 does when the topic id is unknown
(Metadata v4 carries none).  Errors print ``Error while executing topic
command : <message>`` on stdout (as Kafka does) plus an ``ERROR`` line on
stderr, and exit with status 1.
"""

from __future__ import annotations

import argparse
import sys
from datetime import datetime
from typing import Any

from mafka.client.blocking import (
    CREATE_PARTITIONS,
    CREATE_TOPICS,
    DELETE_TOPICS,
    DESCRIBE_CONFIGS,
    BlockingClient,
    ClientTimeout,
)
from mafka.errors import ErrorCode, KafkaError

__all__ = ["add_parser", "run", "TopicCommandError", "format_topic_line", "format_partition_line"]

ACTIONS = ("create", "list", "describe", "alter", "delete")


class TopicCommandError(Exception):
    """A failure reported as Kafka reports it (``exception`` names the Java class)."""

    def __init__(self, message: str, exception: str = "java.lang.IllegalArgumentException") -> None:
        super().__init__(message)
        self.message = message
        self.exception = exception


def add_parser(sub: Any) -> None:
    p = sub.add_parser("topics", help="create, delete, describe, or change a topic (kafka-topics)")
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT")
    for action in ACTIONS:
        p.add_argument(f"--{action}", action="store_true")
    p.add_argument("--topic")
    p.add_argument("--partitions", type=int)
    p.add_argument("--replication-factor", type=int)
    p.add_argument("--config", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--if-not-exists", action="store_true")
    p.add_argument("--if-exists", action="store_true")
    p.add_argument("--exclude-internal", action="store_true")
    p.add_argument("--under-replicated-partitions", action="store_true")
    p.add_argument("--unavailable-partitions", action="store_true")
    p.add_argument("--command-config", help="accepted for compatibility; ignored")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the cluster")
    p.set_defaults(func=run)


def check_args(args: argparse.Namespace) -> str:
    """The chosen action; raises TopicCommandError for Kafka's argument errors."""
    chosen = [a for a in ACTIONS if getattr(args, a)]
    if len(chosen) != 1:
        raise TopicCommandError("Command must include exactly one action: --list, --describe, --create, --alter or --delete")
    action = chosen[0]
    if action in ("create", "alter", "delete") and not args.topic:
        raise TopicCommandError('Missing required argument "[topic]"')
    if action == "alter" and args.partitions is None:
        raise TopicCommandError("Only --partitions can be altered with --bootstrap-server")
    if action != "create" and (args.replication_factor is not None or args.config):
        raise TopicCommandError("Option \"[replication-factor]\" / \"[config]\" can only be used with --create")
    for entry in args.config:
        if "=" not in entry:
            raise TopicCommandError(f"Invalid topic config: all configs to be added must be in the format \"key=val\". Got: {entry}")
    return action


def format_topic_line(name: str, partitions: int, rf: int, configs: dict[str, str]) -> str:
    """Kafka 2.8's per-topic describe line (no TopicId: Metadata v4 has none)."""
    conf = ",".join(f"{k}={v}" for k, v in configs.items())
    return f"Topic: {name}\tPartitionCount: {partitions}\tReplicationFactor: {rf}\tConfigs: {conf}"


def format_partition_line(name: str, partition: int, leader: int, replicas: list[int], isr: list[int]) -> str:
    """Kafka 2.8's per-partition describe line (``Leader: none`` without a leader)."""
    shown = str(leader) if leader >= 0 else "none"
    return (
        f"\tTopic: {name}\tPartition: {partition}\tLeader: {shown}"
        f"\tReplicas: {','.join(map(str, replicas))}\tIsr: {','.join(map(str, isr))}"
    )


_JAVA_NAMES = {ErrorCode.TOPIC_ALREADY_EXISTS: "TopicExistsException"}


def _java_name(code: int) -> str:
    if code in _JAVA_NAMES:
        return f"org.apache.kafka.common.errors.{_JAVA_NAMES[code]}"
    cls = KafkaError.for_code(code)
    name = cls.__name__.removesuffix("Error") + "Exception"
    return f"org.apache.kafka.common.errors.{name}"


def _raise_for(code: int, message: str | None) -> None:
    if code != ErrorCode.NONE:
        raise TopicCommandError(message or ErrorCode(code).description, _java_name(code))


def _topics(client: BlockingClient, exclude_internal: bool = False) -> list[Any]:
    md = client.metadata(None)
    return [t for t in md.topics if t.error_code == ErrorCode.NONE and not (exclude_internal and t.is_internal)]


def _ensure_exists(client: BlockingClient, topic: str, if_exists: bool) -> bool:
    names = {t.name for t in _topics(client)}
    if topic in names:
        return True
    if if_exists:
        return False
    raise TopicCommandError(f"Topic '{topic}' does not exist as expected")


def create(client: BlockingClient, args: argparse.Namespace) -> None:
    topic = args.topic
    configs = [dict(zip(("name", "value"), c.split("=", 1), strict=True)) for c in args.config]
    body = {
        "topics": [{
            "name": topic,
            "num_partitions": -1 if args.partitions is None else args.partitions,
            "replication_factor": -1 if args.replication_factor is None else args.replication_factor,
            "assignments": [],
            "configs": configs,
        }],
        "timeout_ms": int(client.timeout_s * 1000),
        "validate_only": False,
    }
    if "." in topic or "_" in topic:
        print("WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') could "
              "collide. To avoid issues it is best to use either, but not both.")
    response = client.call_controller(CREATE_TOPICS, body, lambda r: [t.error_code for t in r.topics])
    result = response.topics[0]
    if result.error_code == ErrorCode.TOPIC_ALREADY_EXISTS and args.if_not_exists:
        return
    _raise_for(result.error_code, result.error_message)
    print(f"Created topic {topic}.")


def list_topics(client: BlockingClient, args: argparse.Namespace) -> None:
    for name in sorted(t.name for t in _topics(client, args.exclude_internal)):
        print(name)


def _configs(client: BlockingClient, names: list[str]) -> dict[str, dict[str, str]]:
    """Non-default topic configs via DescribeConfigs v1; empty if the cluster does not answer it."""
    body = {
        "resources": [{"resource_type": 2, "resource_name": n, "configuration_keys": None} for n in names],
        "include_synonyms": False,
    }
    try:
        addr = client.bootstrap[0]
        response = client.send_once(addr, DESCRIBE_CONFIGS, 1, body, timeout=min(5.0, client.timeout_s))
    except OSError:
        return {}
    out: dict[str, dict[str, str]] = {}
    for r in response.results:
        if r.error_code == ErrorCode.NONE:
            # config_source 1 = DYNAMIC_TOPIC_CONFIG: a per-topic override
            out[r.resource_name] = {c.name: c.value for c in r.configs if c.config_source == 1 and c.value is not None}
    return out


def describe(client: BlockingClient, args: argparse.Namespace) -> None:
    topics = _topics(client, args.exclude_internal)
    if args.topic:
        topics = [t for t in topics if t.name == args.topic]
        if not topics and not args.if_exists:
            raise TopicCommandError(f"Topic '{args.topic}' does not exist as expected")
    topics.sort(key=lambda t: t.name)
    configs = _configs(client, [t.name for t in topics]) if topics else {}
    live = set(client.brokers)
    for t in topics:
        parts = sorted(t.partitions, key=lambda p: p.partition_index)
        rf = len(parts[0].replica_nodes) if parts else 0
        filtered = parts
        if args.under_replicated_partitions:
            filtered = [p for p in parts if len(p.isr_nodes) < len(p.replica_nodes)]
        elif args.unavailable_partitions:
            filtered = [p for p in parts if p.leader_id < 0 or p.leader_id not in live]
        if not (args.under_replicated_partitions or args.unavailable_partitions):
            print(format_topic_line(t.name, len(parts), rf, configs.get(t.name, {})))
        for p in filtered:
            print(format_partition_line(t.name, p.partition_index, p.leader_id, list(p.replica_nodes), list(p.isr_nodes)))


def alter(client: BlockingClient, args: argparse.Namespace) -> None:
    if not _ensure_exists(client, args.topic, args.if_exists):
        return
    body = {
        "topics": [{"name": args.topic, "count": args.partitions, "assignments": None}],
        "timeout_ms": int(client.timeout_s * 1000),
        "validate_only": False,
    }
    response = client.call_controller(CREATE_PARTITIONS, body, lambda r: [x.error_code for x in r.results])
    result = response.results[0]
    _raise_for(result.error_code, result.error_message)


def delete(client: BlockingClient, args: argparse.Namespace) -> None:
    if not _ensure_exists(client, args.topic, args.if_exists):
        return
    body = {"topic_names": [args.topic], "timeout_ms": int(client.timeout_s * 1000)}
    response = client.call_controller(DELETE_TOPICS, body, lambda r: [x.error_code for x in r.responses])
    result = response.responses[0]
    _raise_for(result.error_code, None)


def _report(exc: TopicCommandError) -> None:
    print(f"Error while executing topic command : {exc.message}")
    stamp = datetime.now().strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
    print(f"[{stamp}] ERROR {exc.exception}: {exc.message}\n (kafka.admin.TopicCommand$)", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    try:
        action = check_args(args)
        with BlockingClient(args.bootstrap_server, client_id="mafka-topics", timeout_s=args.timeout) as client:
            {"create": create, "list": list_topics, "describe": describe, "alter": alter, "delete": delete}[action](client, args)
    except TopicCommandError as exc:
        _report(exc)
        return 1
    except ClientTimeout as exc:
        _report(TopicCommandError(f"Timed out waiting for a node assignment. ({exc})",
                                  "org.apache.kafka.common.errors.TimeoutException"))
        return 1
    except ValueError as exc:  # bad bootstrap list
        _report(TopicCommandError(str(exc), "org.apache.kafka.common.config.ConfigException"))
        return 1
    sys.stdout.flush()
    return 0

