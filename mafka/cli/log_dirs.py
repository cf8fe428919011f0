"""``mafka log-dirs``: Kafka 2.8's ``kafka-log-dirs.sh`` for Mafka.

``--describe --bootstrap-server H:P [--broker-list 1,2] [--topic-list a,b]``
sends DescribeLogDirs (all partitions) to each broker (every broker in the
cluster when no list is given) and prints Kafka's three lines::

    Querying brokers for log directories information
    Received log directory information from brokers 1,2
    {"version":1,"brokers":[{"broker":1,"logDirs":[{"logDir":"/data/a","error":null,
      "partitions":[{"partition":"t-0","size":123,"offsetLag":0,"isFuture":false}]}]}]}

(the JSON on one line, as Kafka's ``Json.encodeAsString``); ``error`` is the
Java exception class of a dir's error (``org.apache.kafka.common.errors.KafkaStorageException``
for an offline dir), and ``--topic-list`` filters the partitions shown.
A broker of ``--broker-list`` missing from the cluster is an error (Kafka 3's
message), as is a usage error: exit status 1.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
from typing import Any

from mafka.cli.clients import admin_config, java_exception
from mafka.client.config import parse_config
from mafka.client.kernel import Kernel

__all__ = ["add_parser", "run", "describe_log_dirs", "format_log_dirs_json"]

DESCRIBE_LOG_DIRS = 35


class CommandError(Exception):
    """A usage or input error (printed, exit status 1)."""


def add_parser(sub: Any) -> None:
    p = sub.add_parser("log-dirs", help="query log directory usage on brokers (kafka-log-dirs)")
    p.add_argument("--bootstrap-server", metavar="HOST:PORT")
    p.add_argument("--describe", action="store_true", help="describe the log dirs of the brokers")
    p.add_argument("--broker-list", default=None, metavar="1,2,3")
    p.add_argument("--topic-list", default="", metavar="t1,t2")
    p.add_argument("--command-config", metavar="FILE",
                   help="Property file containing configs to be passed to Admin Client.")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the cluster")
    p.set_defaults(func=run)


def _csv(text: str | None) -> list[str]:
    return [x for x in (text or "").split(",") if x]


async def describe_log_dirs(
    bootstrap: str, brokers: list[int] | None, timeout_s: float, command_config: str | None = None
) -> tuple[list[int], dict[int, Any]]:
    """(the brokers asked, {broker: DescribeLogDirs response body}).

    Raises:
        CommandError: a broker of *brokers* is not in the cluster.
        ConnectionError / TimeoutError: the cluster or a broker did not answer.
    """
    kernel = Kernel(parse_config("admin", admin_config(bootstrap, "log-dirs-tool", timeout_s, command_config)))
    try:
        async with asyncio.timeout(timeout_s):
            await kernel.refresh_metadata()
            existing = sorted(kernel.metadata.brokers)
            if brokers is None:
                brokers = existing
            missing = [b for b in brokers if b not in existing]
            if missing:
                raise CommandError(
                    "ERROR: The given brokers do not exist from --broker-list: "
                    + ",".join(map(str, missing))
                    + ". Current existent brokers: "
                    + ",".join(map(str, existing))
                )
            answers = await asyncio.gather(
                *(kernel.send(b, DESCRIBE_LOG_DIRS, {"topics": None}) for b in brokers)
            )
        return brokers, dict(zip(brokers, answers, strict=True))
    finally:
        await kernel.close()


def format_log_dirs_json(responses: dict[int, Any], topics: set[str]) -> str:
    """Kafka's ``LogDirsCommand.formatAsJson`` (compact, its key order)."""
    brokers = []
    for broker in sorted(responses):
        log_dirs = []
        for result in responses[broker].results:
            error = None
            if result.error_code:
                error = java_exception(result.error_code).split(":", 1)[0]
            partitions = [
                {
                    "partition": f"{t.name}-{p.partition_index}",
                    "size": p.partition_size,
                    "offsetLag": p.offset_lag,
                    "isFuture": p.is_future_key,
                }
                for t in result.topics
                if not topics or t.name in topics
                for p in t.partitions
            ]
            log_dirs.append({"logDir": result.log_dir, "error": error, "partitions": partitions})
        brokers.append({"broker": broker, "logDirs": log_dirs})
    return json.dumps({"version": 1, "brokers": brokers}, separators=(",", ":"))


def run(args: argparse.Namespace) -> int:
    try:
        if not args.bootstrap_server or not args.describe:
            missing = [
                name
                for name, given in (
                    ("bootstrap-server", args.bootstrap_server),
                    ("describe", args.describe),
                )
                if not given
            ]
            raise CommandError(f'Missing required argument "[{", ".join(missing)}]"')
        try:
            brokers = (
                [int(b) for b in _csv(args.broker_list)] if args.broker_list is not None else None
            )
        except ValueError as exc:
            raise CommandError(f"Invalid broker list {args.broker_list!r}: {exc}") from None
        print("Querying brokers for log directories information", flush=True)
        asked, responses = asyncio.run(
            describe_log_dirs(args.bootstrap_server, brokers, args.timeout, args.command_config)
        )
    except CommandError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except (ConnectionError, TimeoutError) as exc:
        print(f"Error: {exc or 'timed out'}", file=sys.stderr)
        return 1
    except ValueError as exc:  # a bad bootstrap list or --command-config
        print(f"org.apache.kafka.common.config.ConfigException: {exc}", file=sys.stderr)
        return 1
    print(f"Received log directory information from brokers {','.join(map(str, asked))}")
    print(format_log_dirs_json(responses, set(_csv(args.topic_list))))
    return 0
