"""``mafka topics``: Kafka 2.8's ``kafka-topics.sh --bootstrap-server`` for Mafka.

Actions (exactly one): ``--create``, ``--list``, ``--describe``, ``--alter``,
``--delete``.  Output lines are Kafka's: ``Created topic t.``, the sorted
topic list, and the describe format::

    Topic: t<TAB>TopicId: 3Gd0H9ZWQn2uX4bQ8gXf2A<TAB>PartitionCount: 3<TAB>ReplicationFactor: 1<TAB>Configs: k=v
    <TAB>Topic: t<TAB>Partition: 0<TAB>Leader: 1<TAB>Replicas: 1<TAB>Isr: 1

``TopicId`` is left out when the topic has none (created before topic ids),
as Kafka 2.8 does.  Errors print ``Error while executing topic
command : <message>`` on stdout (as Kafka does) plus an ``ERROR`` line on
stderr, and exit with status 1.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import datetime
from typing import Any

from mafka.cli.clients import admin_config, error_text
from mafka.cli.java_exceptions import java_class
from mafka.cli.topics_common import (
    TopicCommandError,
    format_partition_line,
    format_topic_line,
    parse_replica_assignment,
    select_topics,
)
from mafka.client.admin import AdminClient
from mafka.client.admin_types import (
    ConfigResource,
    ConfigSource,
    NewPartitions,
    NewTopic,
    ResourceType,
)
from mafka.client.kafka_error import KafkaError as ClientError
from mafka.client.kafka_error import KafkaException
from mafka.client.metadata_view import ClusterMetadataView, TopicMetadataView
from mafka.errors import ErrorCode
from mafka.topics import INTERNAL_TOPICS

__all__ = ["add_parser", "run", "TopicCommandError", "format_topic_line", "format_partition_line"]

ACTIONS = ("create", "list", "describe", "alter", "delete")


def add_parser(sub: Any) -> None:
    p = sub.add_parser("topics", help="create, delete, describe, or change a topic (kafka-topics)")
    p.add_argument("--bootstrap-server", metavar="HOST:PORT")
    p.add_argument("--zookeeper", metavar="HOST:PORT[/CHROOT]",
                   help="DEPRECATED (as in Kafka 2.8): work on ZooKeeper's znodes directly")
    for action in ACTIONS:
        p.add_argument(f"--{action}", action="store_true")
    p.add_argument("--topic")
    p.add_argument("--partitions", type=int)
    p.add_argument("--replication-factor", type=int)
    p.add_argument("--replica-assignment", metavar="B1:B2,B3:B4")
    p.add_argument("--config", action="append", default=[], metavar="NAME=VALUE")
    p.add_argument("--delete-config", action="append", default=[], metavar="NAME",
                   help="with --zookeeper --alter: remove a topic config override")
    p.add_argument("--if-not-exists", action="store_true")
    p.add_argument("--if-exists", action="store_true")
    p.add_argument("--exclude-internal", action="store_true")
    p.add_argument("--under-replicated-partitions", action="store_true")
    p.add_argument("--unavailable-partitions", action="store_true")
    p.add_argument("--topics-with-overrides", action="store_true")
    p.add_argument("--command-config", metavar="FILE",
                   help="Property file containing configs to be passed to Admin Client.")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the cluster")
    p.set_defaults(func=run)


def check_args(args: argparse.Namespace) -> str:
    """The chosen action; raises TopicCommandError for Kafka 2.8's argument errors."""
    if bool(args.bootstrap_server) == bool(args.zookeeper):
        raise TopicCommandError("Only one of --bootstrap-server or --zookeeper must be specified")
    chosen = [a for a in ACTIONS if getattr(args, a)]
    if len(chosen) != 1:
        raise TopicCommandError("Command must include exactly one action: --list, --describe, --create, --alter or --delete")
    action = chosen[0]
    if action in ("create", "alter", "delete") and not args.topic:
        raise TopicCommandError('Missing required argument "[topic]"')
    if action == "alter" and args.bootstrap_server and args.partitions is None:
        raise TopicCommandError("Only --partitions can be altered with --bootstrap-server")
    if action == "alter" and args.partitions is None and not (args.config or args.delete_config):
        raise TopicCommandError("--alter needs --partitions, --config or --delete-config")
    if args.replication_factor is not None and action != "create":
        raise TopicCommandError("Option \"[replication-factor]\" can only be used with --create")
    if args.config and not (action == "create" or (action == "alter" and args.zookeeper)):
        raise TopicCommandError("Option \"[config]\" can only be used with --create"
                                + ("" if args.bootstrap_server else " or --alter"))
    if args.delete_config and not (action == "alter" and args.zookeeper):
        raise TopicCommandError("Option \"[delete-config]\" can only be used with --zookeeper --alter")
    if args.replica_assignment and (args.partitions is not None or args.replication_factor is not None) \
            and action == "create":
        raise TopicCommandError("Option \"[replica-assignment]\" can't be used with "
                                "\"[partitions]\" or \"[replication-factor]\"")
    for entry in args.config:
        if "=" not in entry:
            raise TopicCommandError(f"Invalid topic config: all configs to be added must be in the format \"key=val\". Got: {entry}")
    return action


def _java_name(code: int) -> str:
    return java_class(code)


#: Client-side failures Kafka reports as a TimeoutException ("no node could be asked in time").
_TIMEOUTS = frozenset({ClientError._TIMED_OUT, ClientError._TRANSPORT, ClientError._ALL_BROKERS_DOWN})


def _failure(exc: KafkaException) -> TopicCommandError:
    """The TopicCommandError for a failed admin future, with Kafka's exception class and message."""
    err = exc.error
    if err.code() in _TIMEOUTS:
        return TopicCommandError(f"Timed out waiting for a node assignment. ({err.str()})",
                                 "org.apache.kafka.common.errors.TimeoutException")
    try:
        description = ErrorCode(err.code()).description
    except ValueError:
        return TopicCommandError(err.str(), "org.apache.kafka.common.KafkaException")
    return TopicCommandError(error_text(err) or description, _java_name(err.code()))


def _result(future: Any, timeout: float) -> Any:
    """``future.result()``, bounded a little beyond the admin client's own timeout."""
    try:
        return future.result(timeout + 5.0)
    except KafkaException as exc:
        raise _failure(exc) from None


def _metadata(admin: AdminClient, timeout: float) -> ClusterMetadataView:
    """All topics' metadata, asking again while no broker can be reached (bounded by ``timeout``)."""
    deadline = time.monotonic() + timeout
    while True:
        try:
            return admin.list_topics(timeout=max(0.1, deadline - time.monotonic()))
        except KafkaException as exc:
            if exc.error.code() not in _TIMEOUTS or time.monotonic() >= deadline:
                raise _failure(exc) from None
        time.sleep(0.1)


def _topics(admin: AdminClient, timeout: float, exclude_internal: bool = False) -> list[TopicMetadataView]:
    topics = [t for t in _metadata(admin, timeout).topics.values() if t.error is None]
    return [t for t in topics if not (exclude_internal and t.topic in INTERNAL_TOPICS)]


def _live_brokers(admin: AdminClient, timeout: float) -> set[int]:
    return set(_metadata(admin, timeout).brokers)


def _selected(admin: AdminClient, args: argparse.Namespace) -> list[str]:
    """The topics ``--topic`` selects (Kafka's IncludeList); none is an error unless ``--if-exists``."""
    names = select_topics([t.topic for t in _topics(admin, args.timeout)], args.topic, args.exclude_internal)
    if names or args.if_exists:
        return names
    raise TopicCommandError(f"Topic '{args.topic}' does not exist as expected")


def create(admin: AdminClient, args: argparse.Namespace) -> None:
    topic = args.topic
    assignment = parse_replica_assignment(args.replica_assignment) if args.replica_assignment else None
    new = NewTopic(
        topic,
        num_partitions=-1 if args.partitions is None else args.partitions,
        replication_factor=-1 if args.replication_factor is None else args.replication_factor,
        replica_assignment=None if assignment is None else [assignment[p] for p in sorted(assignment)],
        config=dict(c.split("=", 1) for c in args.config),
    )
    futures = admin.create_topics([new], operation_timeout=args.timeout, request_timeout=args.timeout)
    try:
        futures[topic].result(args.timeout + 5.0)
    except KafkaException as exc:
        if exc.error.code() == ErrorCode.TOPIC_ALREADY_EXISTS and args.if_not_exists:
            return
        raise _failure(exc) from None
    print(f"Created topic {topic}.")


def list_topics(admin: AdminClient, args: argparse.Namespace) -> None:
    for name in sorted(t.topic for t in _topics(admin, args.timeout, args.exclude_internal)):
        print(name)


def _configs(admin: AdminClient, names: list[str], timeout: float) -> dict[str, dict[str, str]]:
    """Non-default topic configs (DescribeConfigs); a topic whose configs cannot be had shows none."""
    futures = admin.describe_configs([ConfigResource(ResourceType.TOPIC, n) for n in names],
                                     request_timeout=min(5.0, timeout))
    out: dict[str, dict[str, str]] = {}
    for resource, future in futures.items():
        try:
            entries = future.result(min(5.0, timeout) + 5.0)
        except (KafkaException, TimeoutError):
            continue
        out[resource.name] = {
            e.name: e.value for e in entries.values()
            if e.source == ConfigSource.DYNAMIC_TOPIC_CONFIG and e.value is not None
        }
    return out


def describe(admin: AdminClient, args: argparse.Namespace) -> None:
    by_name = {t.topic: t for t in _topics(admin, args.timeout, args.exclude_internal)}
    chosen = select_topics(by_name, args.topic)
    if args.topic and not chosen and not args.if_exists:
        raise TopicCommandError(f"Topic '{args.topic}' does not exist as expected")
    topics = [by_name[n] for n in chosen]
    configs = _configs(admin, [t.topic for t in topics], args.timeout) if topics else {}
    live = _live_brokers(admin, args.timeout) if args.unavailable_partitions else set()
    for t in topics:
        parts = [t.partitions[i] for i in sorted(t.partitions)]
        rf = len(parts[0].replicas) if parts else 0
        filtered = parts
        if args.under_replicated_partitions:
            filtered = [p for p in parts if len(p.isrs) < len(p.replicas)]
        elif args.unavailable_partitions:
            filtered = [p for p in parts if p.leader < 0 or p.leader not in live]
        if args.topics_with_overrides and not configs.get(t.topic):
            continue
        if not (args.under_replicated_partitions or args.unavailable_partitions):
            print(format_topic_line(t.topic, len(parts), rf, configs.get(t.topic, {}), t.topic_id))
        for p in [] if args.topics_with_overrides else filtered:
            print(format_partition_line(t.topic, p.id, p.leader, list(p.replicas), list(p.isrs)))


def alter(admin: AdminClient, args: argparse.Namespace) -> None:
    names = _selected(admin, args)
    if not names:
        return
    futures = admin.create_partitions([NewPartitions(n, args.partitions) for n in names],
                                      operation_timeout=args.timeout, request_timeout=args.timeout)
    for name in names:
        _result(futures[name], args.timeout)


def delete(admin: AdminClient, args: argparse.Namespace) -> None:
    names = _selected(admin, args)
    if not names:
        return
    futures = admin.delete_topics(names, operation_timeout=args.timeout, request_timeout=args.timeout)
    for name in names:
        _result(futures[name], args.timeout)


def _report(exc: TopicCommandError) -> None:
    print(f"Error while executing topic command : {exc.message}")
    stamp = datetime.now().strftime("%Y-%m-%d %H:%M:%S,%f")[:-3]
    print(f"[{stamp}] ERROR {exc.exception}: {exc.message}\n (kafka.admin.TopicCommand$)", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    try:
        action = check_args(args)
        if action == "create" and ("." in args.topic or "_" in args.topic):
            print("WARNING: Due to limitations in metric names, topics with a period ('.') or underscore ('_') "
                  "could collide. To avoid issues it is best to use either, but not both.")
        if args.zookeeper:
            from mafka.cli.topics_zk import run_zookeeper

            assignment = parse_replica_assignment(args.replica_assignment) if args.replica_assignment else None
            run_zookeeper(args, action, dict(c.split("=", 1) for c in args.config), assignment)
            sys.stdout.flush()
            return 0
        with AdminClient(admin_config(args.bootstrap_server, "mafka-topics", args.timeout,
                                       args.command_config)) as admin:
            {"create": create, "list": list_topics, "describe": describe, "alter": alter, "delete": delete}[action](admin, args)
    except TopicCommandError as exc:
        _report(exc)
        return 1
    except TimeoutError as exc:
        _report(TopicCommandError(f"Timed out waiting for a node assignment. ({exc})",
                                  "org.apache.kafka.common.errors.TimeoutException"))
        return 1
    except ValueError as exc:  # bad bootstrap list
        _report(TopicCommandError(str(exc), "org.apache.kafka.common.config.ConfigException"))
        return 1
    sys.stdout.flush()
    return 0
