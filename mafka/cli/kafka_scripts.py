"""Kafka's ``bin/kafka-*.sh`` names as thin wrappers over ``mafka <tool>``.

pip installs each as a console script, so ``$VIRTUAL_ENV/bin`` holds
``kafka-topics.sh``, ``kafka-configs.sh`` … and scripts written for Kafka run
unchanged with ``KAFKA_PATH=$VIRTUAL_ENV`` (they call ``$KAFKA_PATH/bin/…``).
Every argument goes to the Mafka tool as given; the tools accept Kafka 2.8's
flags, including the deprecated ``--zookeeper`` form where 2.8 still had it.
"""

from __future__ import annotations

import sys
from collections.abc import Callable

__all__ = ["SCRIPTS", "script"]

#: Kafka script name → ``mafka`` subcommand.
SCRIPTS: dict[str, str] = {
    "kafka-topics.sh": "topics",
    "kafka-configs.sh": "configs",
    "kafka-acls.sh": "acls",
    "kafka-console-producer.sh": "console-producer",
    "kafka-console-consumer.sh": "console-consumer",
    "kafka-consumer-groups.sh": "consumer-groups",
    "kafka-share-groups.sh": "share-groups",
    "kafka-reassign-partitions.sh": "reassign-partitions",
    "kafka-leader-election.sh": "leader-election",
    "kafka-log-dirs.sh": "log-dirs",
    "kafka-producer-perf-test.sh": "producer-perf-test",
    "kafka-consumer-perf-test.sh": "consumer-perf-test",
    "kafka-server-start.sh": "server-start",
    "kafka-preferred-replica-election.sh": "preferred-replica-election",
    "kafka-delete-records.sh": "delete-records",
    "kafka-broker-api-versions.sh": "broker-api-versions",
    "kafka-transactions.sh": "transactions",
    "zookeeper-server-start.sh": "zookeeper-server-start",
    "kafka-dump-log.sh": "dump-log",
    "kafka-get-offsets.sh": "get-offsets",
    "kafka-verifiable-producer.sh": "verifiable-producer",
    "kafka-verifiable-consumer.sh": "verifiable-consumer",
    "zookeeper-shell.sh": "zookeeper-shell",
}


def script(command: str) -> Callable[[], None]:
    """The console-script entry point that runs ``mafka <command> <argv…>`` and exits with its status."""

    def entry() -> None:
        from mafka.cli.main import main

        sys.exit(main([command, *sys.argv[1:]]))

    entry.__name__ = command.replace("-", "_")
    return entry


kafka_topics = script("topics")
kafka_configs = script("configs")
kafka_acls = script("acls")
kafka_console_producer = script("console-producer")
kafka_console_consumer = script("console-consumer")
kafka_consumer_groups = script("consumer-groups")
kafka_share_groups = script("share-groups")
kafka_reassign_partitions = script("reassign-partitions")
kafka_leader_election = script("leader-election")
kafka_log_dirs = script("log-dirs")
kafka_producer_perf_test = script("producer-perf-test")
kafka_consumer_perf_test = script("consumer-perf-test")
kafka_server_start = script("server-start")
kafka_preferred_replica_election = script("preferred-replica-election")
kafka_delete_records = script("delete-records")
kafka_broker_api_versions = script("broker-api-versions")
kafka_transactions = script("transactions")
zookeeper_server_start = script("zookeeper-server-start")
kafka_dump_log = script("dump-log")
kafka_get_offsets = script("get-offsets")
kafka_verifiable_producer = script("verifiable-producer")
kafka_verifiable_consumer = script("verifiable-consumer")
zookeeper_shell = script("zookeeper-shell")
