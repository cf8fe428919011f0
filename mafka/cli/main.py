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
import importlib
import sys
import time

__all__ = ["main"]


def _selfcheck(args: argparse.Namespace) -> int:
    from mafka.cli.selfcheck import run_selfcheck

    return run_selfcheck(verbose=args.verbose)


#: The subcommands, each defined by the module of the same name (``-`` for ``_``) through its
#: ``add_parser(sub)``, in the order ``mafka --help`` lists them.
COMMAND_MODULES: tuple[str, ...] = (
    "server_start", "cluster", "cluster_status", "topics", "console_producer", "console_consumer",
    "leader_election", "log_dirs", "reassign_partitions", "rebalance", "consumer_groups", "share_groups",
    "producer_perf_test", "consumer_perf_test", "spark_etl", "configs", "acls", "preferred_replica_election",
    "delete_records", "delayed", "broker_api_versions", "broker_health", "transactions",
    "zookeeper_server_start", "dump_log", "get_offsets", "verifiable_producer", "verifiable_consumer",
    "zookeeper_shell", "console",
)


def command_name(module: str) -> str:
    """The subcommand a module of :data:`COMMAND_MODULES` defines: ``log_dirs`` → ``log-dirs``."""
    return module.replace("_", "-")


def main(argv: list[str] | None = None) -> int:
    """Run ``mafka <command> …`` and return its exit status.

    Only the named command's module is imported (all of them together take about half a
    second more to import than any one: every ``kafka-*.sh`` call and broker start paid it);
    ``mafka``, ``mafka --help`` and an unknown command build the whole parser, so the usage
    and the error list every command, as before.
    """
    argv = sys.argv[1:] if argv is None else list(argv)
    parser = argparse.ArgumentParser(
        prog="mafka", description="Mafka: a Kafka-compatible broker cluster"
    )
    sub = parser.add_subparsers(dest="command", required=True)
    check = sub.add_parser("selfcheck", help="round-trip every api version through the wire codec")
    check.add_argument("-v", "--verbose", action="store_true")
    check.set_defaults(func=_selfcheck)
    by_name = {command_name(module): module for module in COMMAND_MODULES}
    named = by_name.get(argv[0]) if argv else None
    for module in [named] if named is not None else COMMAND_MODULES:
        importlib.import_module(f"mafka.cli.{module}").add_parser(sub)
    args = parser.parse_args(argv)
    started = time.perf_counter()
    rc = args.func(args)
    if getattr(args, "verbose", False):
        print(f"done in {time.perf_counter() - started:.2f}s", file=sys.stderr)
    return rc


if __name__ == "__main__":
    sys.exit(main())
