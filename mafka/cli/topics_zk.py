"""``mafka topics --zookeeper``: Kafka 2.8's ``TopicCommand.ZookeeperTopicService``.

Works on the znodes directly, as Kafka 2.8's deprecated ``--zookeeper`` form
did (and as Mafka's own admin path does): create writes ``/config/topics/T``
and ``/brokers/topics/T`` and returns at once — the controller brings the
partitions online afterwards; delete marks ``/admin/delete_topics/T``; alter
rewrites the assignment (more partitions) or the config overrides (with
Kafka's deprecation warning) and posts a config change notification;
describe reads assignment, partition state and live brokers from ZooKeeper.
Output lines are Kafka 2.8's.
"""

from __future__ import annotations

import argparse
from typing import Any

from mafka.cli.java_exceptions import java_class
from mafka.cli.topics_common import (
    TopicCommandError,
    format_partition_line,
    format_topic_line,
    select_topics,
)
from mafka.cli.zk_session import ZkSession
from mafka.controller.admin import create_topic_in_zookeeper
from mafka.controller.assignment import new_partitions_assignment
from mafka.coordination.store import ConnectionLossError, StoreError
from mafka.coordination.znodes import TopicAssignment
from mafka.errors import KafkaError, TopicAlreadyExistsError
from mafka.topics import INTERNAL_TOPICS

__all__ = ["run_zookeeper"]


def _create(zk: ZkSession, args: argparse.Namespace, configs: dict[str, str],
            assignment: dict[int, list[int]] | None) -> None:
    if assignment is None and (args.partitions is None or args.replication_factor is None):
        raise TopicCommandError("Missing required argument \"[partitions]\"" if args.partitions is None
                                else "Missing required argument \"[replication-factor]\"")
    try:
        zk.call(create_topic_in_zookeeper, zk.client, args.topic,
                args.partitions or 0, args.replication_factor or 0, None, configs,
                assignment=assignment)
    except TopicAlreadyExistsError as exc:
        if args.if_not_exists:
            return
        raise TopicCommandError(exc.message, "org.apache.kafka.common.errors.TopicExistsException") from None
    print(f"Created topic {args.topic}.")


def _list(zk: ZkSession, topics: list[str]) -> None:
    for topic in topics:
        marked = zk.call(zk.client.is_topic_marked_for_deletion, topic)
        print(f"{topic} - marked for deletion" if marked else topic)


def _describe(zk: ZkSession, args: argparse.Namespace, topics: list[str]) -> None:
    live = set(zk.call(zk.client.get_all_brokers))
    for topic in topics:
        got = zk.call(zk.client.get_assignment, topic)
        if got is None:
            print(f"Topic {topic} doesn't exist!")
            continue
        assignment: TopicAssignment = got[0]
        parts = sorted(assignment.partitions.items())
        marked = zk.call(zk.client.is_topic_marked_for_deletion, topic)
        configs = zk.call(zk.client.get_topic_config, topic)
        partitions_only = args.under_replicated_partitions or args.unavailable_partitions
        if not partitions_only and not (args.topics_with_overrides and not configs):
            line = format_topic_line(topic, len(parts), len(parts[0][1]) if parts else 0, configs,
                                     assignment.topic_id)
            print(line + ("\tMarkedForDeletion: true" if marked else ""))
        if args.topics_with_overrides:
            continue
        states = zk.call(zk.client.get_partition_states, [(topic, p) for p, _ in parts])
        for partition, replicas in parts:
            state = states.get((topic, partition))
            leader = state.leader if state is not None and state.leader >= 0 else -1
            isr = list(state.isr) if state is not None else []
            if args.under_replicated_partitions and not len(isr) < len(replicas):
                continue
            if args.unavailable_partitions and leader >= 0 and leader in live:
                continue
            line = format_partition_line(topic, partition, leader, list(replicas), isr)
            print(line + ("\tMarkedForDeletion: true" if marked else ""))


def _alter(zk: ZkSession, args: argparse.Namespace, topics: list[str], configs: dict[str, str],
           assignment: dict[int, list[int]] | None) -> None:
    for topic in topics:
        if configs or args.delete_config:
            print("WARNING: Altering topic configuration from this script has been deprecated and "
                  "may be removed in future releases.")
            print("         Going forward, please use kafka-configs.sh for this functionality")
            current = dict(zk.call(zk.client.get_topic_config, topic))
            current.update(configs)
            for name in args.delete_config:
                current.pop(name, None)
            zk.call(zk.client.set_topic_config, topic, current)
            print(f"Updated config for topic {topic}.")
        if args.partitions is not None:
            if topic in INTERNAL_TOPICS:
                raise TopicCommandError(
                    f"The number of partitions for the internal topic {topic} cannot be changed.")
            print("WARNING: If partitions are increased for a topic that has a key, the partition "
                  "logic or ordering of the messages will be affected")
            got = zk.call(zk.client.get_assignment, topic)
            if got is None or not got[0].partitions:
                raise TopicCommandError(f"The topic {topic} does not exist",
                                        "org.apache.kafka.common.errors.InvalidTopicException")
            existing: TopicAssignment = got[0]
            brokers = zk.call(zk.client.get_all_brokers)
            racks = {b: reg.rack for b, (reg, _) in brokers.items()}
            manual = None
            if assignment:
                manual = [assignment[p] for p in sorted(assignment) if p >= len(existing.partitions)]
            added = new_partitions_assignment(existing.partitions, racks, args.partitions,
                                              replica_assignment=manual or None)
            combined = {p: tuple(r) for p, r in existing.partitions.items()}
            combined.update({p: tuple(r) for p, r in added.items()})
            zk.call(zk.client.set_assignment, topic,
                    TopicAssignment(combined, topic_id=existing.topic_id), got[1])
            print("Adding partitions succeeded!")


def _delete(zk: ZkSession, topics: list[str]) -> None:
    for topic in topics:
        if topic in INTERNAL_TOPICS:
            raise TopicCommandError(
                f"Topic {topic} is a kafka internal topic and is not allowed to be marked for deletion.",
                "kafka.admin.AdminOperationException")
        if zk.call(zk.client.mark_topic_for_deletion, topic):
            print(f"Topic {topic} is marked for deletion.")
            print("Note: This will have no impact if delete.topic.enable is not set to true.")
        else:
            print(f"Topic {topic} is already marked for deletion.")


def run_zookeeper(args: argparse.Namespace, action: str, configs: dict[str, str],
                  assignment: dict[int, list[int]] | None) -> None:
    """Runs one checked action against ``args.zookeeper``; raises TopicCommandError for Kafka's errors."""
    try:
        with ZkSession(args.zookeeper, timeout=args.timeout) as zk:
            if action == "create":
                _create(zk, args, configs, assignment)
                return
            all_topics: list[Any] = zk.call(zk.client.get_topics)
            topics = select_topics(all_topics, args.topic, args.exclude_internal)
            if action in ("alter", "describe", "delete") and args.topic and not topics:
                if args.if_exists:
                    return
                raise TopicCommandError(f"Topic '{args.topic}' does not exist as expected")
            {"list": lambda: _list(zk, topics),
             "describe": lambda: _describe(zk, args, topics),
             "alter": lambda: _alter(zk, args, topics, configs, assignment),
             "delete": lambda: _delete(zk, topics)}[action]()
    except KafkaError as exc:
        raise TopicCommandError(exc.message, java_class(exc.code)) from None
    except ConnectionLossError:
        raise TopicCommandError("Timed out waiting for connection while in state: CONNECTING",
                                "kafka.zookeeper.ZooKeeperClientTimeoutException") from None
    except StoreError as exc:
        raise TopicCommandError(str(exc), "kafka.admin.AdminOperationException") from None
