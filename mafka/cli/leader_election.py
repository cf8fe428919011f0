"""``mafka leader-election``: Kafka 2.8's ``kafka-leader-election.sh`` for Mafka.

Flags: ``--bootstrap-server H:P --election-type (preferred|unclean)`` and
exactly one of ``--all-topic-partitions``, ``--topic T --partition P`` or
``--path-to-json-file F`` (``{"partitions":[{"topic":"t","partition":0}]}``).
Sends ElectLeaders to the controller (:meth:`mafka.client.AdminClient.elect_leaders`)
and prints Kafka's lines::

    Successfully completed leader election (PREFERRED) for partitions t-0, t-1
    Valid replica already elected for partitions t-2
    Error completing leader election (PREFERRED) for partition: t-3: org.apache.kafka.common.errors.PreferredLeaderNotAvailableException: …

Exit status 1 when a partition failed (Kafka: ``AdminCommandFailedException``
"N replica(s) could not be elected", on stderr here) or on a usage error.
"""

from __future__ import annotations

import argparse
import json
import sys
from typing import Any

from mafka.cli.clients import admin_config, error_text, java_exception
from mafka.client.admin import AdminClient
from mafka.client.admin_types import ElectionType
from mafka.client.kafka_error import KafkaError as ClientError
from mafka.client.kafka_error import KafkaException
from mafka.client.message import TopicPartition
from mafka.errors import ErrorCode

__all__ = ["add_parser", "run", "parse_election_json", "java_exception", "elect_leaders"]

ELECTION_TYPES = {"preferred": 0, "unclean": 1}


class CommandError(Exception):
    """A usage or input error (Kafka prints it and exits 1)."""


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "leader-election",
        help="elect preferred or unclean leaders for partitions (kafka-leader-election)",
    )
    p.add_argument("--bootstrap-server", required=True, metavar="HOST:PORT")
    p.add_argument("--election-type", metavar="preferred|unclean")
    p.add_argument("--all-topic-partitions", action="store_true")
    p.add_argument("--topic")
    p.add_argument("--partition", type=int)
    p.add_argument("--path-to-json-file")
    p.add_argument(
        "--admin.config", dest="admin_config", metavar="FILE",
        help="Configuration properties files to pass to the admin client"
    )
    p.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the cluster")
    p.set_defaults(func=run)


def parse_election_json(text: str) -> list[tuple[str, int]]:
    """Kafka's ``parseReplicaElectionData``: the partitions of an election JSON file."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise CommandError(f"Unable to parse the JSON file: {exc}") from None
    if not isinstance(data, dict) or "partitions" not in data:
        raise CommandError('Replica election data is missing "partitions" field')
    out: list[tuple[str, int]] = []
    for entry in data["partitions"]:
        try:
            out.append((str(entry["topic"]), int(entry["partition"])))
        except (KeyError, TypeError, ValueError):
            raise CommandError(f"Invalid partition entry {json.dumps(entry)}") from None
    duplicates = sorted({tp for tp in out if out.count(tp) > 1})
    if duplicates:
        raise CommandError(
            "Replica election data contains duplicate partitions: "
            + ",".join(f"{t}-{p}" for t, p in duplicates)
        )
    return out


def _check_args(args: argparse.Namespace) -> tuple[int, list[tuple[str, int]] | None]:
    if not args.election_type:
        raise CommandError("Missing required option(s) [election-type]")
    election = ELECTION_TYPES.get(args.election_type.lower())
    if election is None:
        raise CommandError(f"Unknown election type: {args.election_type}")
    chosen = [
        name
        for name, given in (
            ("all-topic-partitions", args.all_topic_partitions),
            ("topic", args.topic is not None),
            ("path-to-json-file", args.path_to_json_file is not None),
        )
        if given
    ]
    if len(chosen) != 1:
        raise CommandError(
            "One and only one of the following options is required: "
            "all-topic-partitions, topic, path-to-json-file"
        )
    if args.topic is not None and args.partition is None:
        raise CommandError("Missing required option(s) [partition]")
    if args.partition is not None and args.topic is None:
        raise CommandError("Option [partition] is only allowed with [topic]")
    if args.path_to_json_file is not None:
        with open(args.path_to_json_file, encoding="utf-8") as f:
            return election, parse_election_json(f.read())
    if args.topic is not None:
        return election, [(args.topic, args.partition)]
    return election, None


def elect_leaders(
    admin: AdminClient, election: int, partitions: list[tuple[str, int]] | None, timeout_s: float = 30.0
) -> dict[tuple[str, int], tuple[int, str | None]]:
    """ElectLeaders at the controller: ``(topic, partition)`` → (error code, the broker's message or None).

    Raises:
        TimeoutError: no answer within ``timeout_s``.
        KafkaException: the request as a whole failed.
    """
    tps = None if partitions is None else [TopicPartition(t, p) for t, p in partitions]
    future = admin.elect_leaders(ElectionType(election), tps, request_timeout=timeout_s,
                                 operation_timeout=timeout_s)
    try:
        results = future.result(timeout_s + 5.0)
    except KafkaException as exc:
        if exc.error.code() == ClientError._TIMED_OUT:
            raise TimeoutError(exc.error.str()) from None
        raise
    out: dict[tuple[str, int], tuple[int, str | None]] = {}
    for tp, failure in results.items():
        if failure is None:
            out[(tp.topic, tp.partition)] = (ErrorCode.NONE, None)
        else:
            out[(tp.topic, tp.partition)] = (failure.error.code(), error_text(failure.error))
    return out


def report(election: int, results: dict[tuple[str, int], tuple[int, str | None]]) -> int:
    """Prints Kafka's result lines; returns how many partitions failed."""
    name = "PREFERRED" if election == 0 else "UNCLEAN"
    succeeded = sorted(tp for tp, (code, _) in results.items() if code == ErrorCode.NONE)
    noop = sorted(tp for tp, (code, _) in results.items() if code == ErrorCode.ELECTION_NOT_NEEDED)
    failed = sorted(
        (tp, code, message)
        for tp, (code, message) in results.items()
        if code not in (ErrorCode.NONE, ErrorCode.ELECTION_NOT_NEEDED)
    )
    if succeeded:
        partitions = ", ".join(f"{t}-{p}" for t, p in succeeded)
        print(f"Successfully completed leader election ({name}) for partitions {partitions}")
    if noop:
        partitions = ", ".join(f"{t}-{p}" for t, p in noop)
        print(f"Valid replica already elected for partitions {partitions}")
    for (t, p), code, message in failed:
        print(
            f"Error completing leader election ({name}) for partition: {t}-{p}: "
            f"{java_exception(code, message)}"
        )
    return len(failed)


def run(args: argparse.Namespace) -> int:
    try:
        election, partitions = _check_args(args)
        with AdminClient(admin_config(args.bootstrap_server, "mafka-leader-election", args.timeout,
                                              args.admin_config)) as admin:
            failed = report(election, elect_leaders(admin, election, partitions, args.timeout))
    except TimeoutError as exc:  # before OSError, its base class
        print("Timeout waiting for election results", file=sys.stdout)
        print(f"kafka.common.AdminCommandFailedException: {exc}", file=sys.stderr)
        return 1
    except (CommandError, OSError) as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except KafkaException as exc:
        print(f"kafka.common.AdminCommandFailedException: "
              f"{java_exception(exc.error.code(), error_text(exc.error))}", file=sys.stderr)
        return 1
    except ValueError as exc:  # bad bootstrap list
        print(str(exc), file=sys.stderr)
        return 1
    sys.stdout.flush()
    if failed:
        print(
            f"kafka.common.AdminCommandFailedException: {failed} replica(s) could not be elected",
            file=sys.stderr,
        )
        return 1
    return 0
