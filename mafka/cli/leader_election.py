"""``mafka leader-election``: Kafka 2.8's ``kafka-leader-election.sh`` for Mafka.

Flags: ``--bootstrap-server H:P --election-type (preferred|unclean)`` and
exactly one of ``--all-topic-partitions``, ``--topic T --partition P`` or
``--path-to-json-file F`` (``{"partitions":[{"topic":"t","partition":0}]}``).
Sends ElectLeaders (v1) to the controller and prints Kafka's lines::

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

from mafka.client.blocking import BlockingClient, ClientTimeout
from mafka.errors import ErrorCode, KafkaError

__all__ = ["add_parser", "run", "parse_election_json", "java_exception", "ELECT_LEADERS"]

ELECT_LEADERS = 43
ELECT_LEADERS_VERSION = 1
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
        "--admin.config", dest="admin_config", help="accepted for compatibility; ignored"
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


def java_exception(code: int, message: str | None) -> str:
    """A Kafka error as the Java client's exception prints (``Class: message``)."""
    cls = KafkaError.for_code(code)
    name = "org.apache.kafka.common.errors." + cls.__name__.removesuffix("Error") + "Exception"
    text = message if message is not None else ErrorCode(code).description
    return f"{name}: {text}"


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
    client: BlockingClient, election: int, partitions: list[tuple[str, int]] | None
) -> dict[tuple[str, int], tuple[int, str | None]]:
    """ElectLeaders on the controller (again while it answers NOT_CONTROLLER)."""
    if partitions is None:
        topic_partitions = None
    else:
        grouped: dict[str, list[int]] = {}
        for topic, p in partitions:
            grouped.setdefault(topic, []).append(p)
        topic_partitions = [{"topic": t, "partitions": ps} for t, ps in grouped.items()]
    body = {
        "election_type": election,
        "topic_partitions": topic_partitions,
        "timeout_ms": int(client.timeout_s * 1000),
    }

    def attempt() -> tuple[bool, Any]:
        cid = client.controller_id()
        response = client.call(ELECT_LEADERS, ELECT_LEADERS_VERSION, body, broker_id=cid)
        codes = [
            p.error_code for r in response.replica_election_results for p in r.partition_result
        ]
        return ErrorCode.NOT_CONTROLLER in codes, response

    response = client.retrying(attempt)
    return {
        (r.topic, p.partition_id): (p.error_code, p.error_message)
        for r in response.replica_election_results
        for p in r.partition_result
    }


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
        with BlockingClient(
            args.bootstrap_server, client_id="mafka-leader-election", timeout_s=args.timeout
        ) as client:
            failed = report(election, elect_leaders(client, election, partitions))
    except (CommandError, OSError) as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except ClientTimeout as exc:
        print("Timeout waiting for election results", file=sys.stdout)
        print(f"kafka.common.AdminCommandFailedException: {exc}", file=sys.stderr)
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
