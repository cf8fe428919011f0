"""The ``mafka`` command: one entry point, Kafka-named subcommands.

Subcommands arrive with the issues that need them (``server-start``,
``topics``, ``console-producer`` …).  For now:

* ``mafka selfcheck`` — encodes and decodes a sample request and response
  for every (api, version) Mafka speaks, through whole frames, and prints
  the ApiVersions table it would advertise;
* ``mafka server-start server.properties`` — one broker;
* ``mafka cluster up --brokers N --dir DIR`` — ZooKeeper and N brokers.
"""

from __future__ import annotations

import argparse
import sys
import time

__all__ = ["main"]


def _selfcheck(args: argparse.Namespace) -> int:
    from mafka.cli.selfcheck import run_selfcheck

    return run_selfcheck(verbose=args.verbose)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="mafka", description="Mafka: a Kafka-compatible broker cluster"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("selfcheck", help="round-trip every api version through the wire codec")
    check.add_argument("-v", "--verbose", action="store_true")
    check.set_defaults(func=_selfcheck)
    from mafka.cli import (
        broker_api_versions,
        broker_health,
        cluster,
        cluster_status,
        configs,
        console_consumer,
        console_producer,
        consumer_groups,
        consumer_perf_test,
        delayed,
        delete_records,
        leader_election,
        log_dirs,
        preferred_replica_election,
        producer_perf_test,
        reassign_partitions,
        rebalance,
        server_start,
        spark_etl,
        topics,
        transactions,
        zookeeper_server_start,
    )

    server_start.add_parser(sub)
    cluster.add_parser(sub)
    cluster_status.add_parser(sub)
    topics.add_parser(sub)
    console_producer.add_parser(sub)
    console_consumer.add_parser(sub)
    leader_election.add_parser(sub)
    log_dirs.add_parser(sub)
    reassign_partitions.add_parser(sub)
    rebalance.add_parser(sub)
    consumer_groups.add_parser(sub)
    producer_perf_test.add_parser(sub)
    consumer_perf_test.add_parser(sub)
    spark_etl.add_parser(sub)
    configs.add_parser(sub)
    preferred_replica_election.add_parser(sub)
    delete_records.add_parser(sub)
    delayed.add_parser(sub)
    broker_api_versions.add_parser(sub)
    broker_health.add_parser(sub)
    transactions.add_parser(sub)
    zookeeper_server_start.add_parser(sub)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    rc = args.func(args)
    if getattr(args, "verbose", False):
        print(f"done in {time.perf_counter() - started:.2f}s", file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
