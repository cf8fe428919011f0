"""``mafka preferred-replica-election``: Kafka 2.8's deprecated ``kafka-preferred-replica-election.sh``.

Exactly one of:

* ``--zookeeper H:P[/chroot]``: writes ``/admin/preferred_replica_election``
  (``{"version":1,"partitions":[…]}``) as 2.8's ``ZkCommand`` did; the
  controller elects the preferred leaders and deletes the znode.  Partitions of
  the JSON file that do not exist are skipped (with Kafka's line); while a
  previous election's znode is still there the command fails;
* ``--bootstrap-server H:P``: ElectLeaders (PREFERRED) at the controller, as
  ``mafka leader-election --election-type preferred`` does.

``--path-to-json-file F`` (``{"partitions":[{"topic":"t","partition":0}]}``)
names the partitions; without it every partition of the cluster is elected.
Output is 2.8's ``PreferredReplicaLeaderElectionCommand``::

    This tool is deprecated. Please use kafka-leader-election tool. Tracking issue: KAFKA-8405
    Warning: --zookeeper is deprecated and will be removed in a future version of Kafka.
    Use --bootstrap-server instead to specify a broker to connect to.
    Created preferred replica election path with t-0,t-1
    Successfully started preferred replica election for partitions Set(t-0, t-1)

or, with ``--bootstrap-server``::

    Successfully completed preferred leader election for partitions t-0, t-1
    Preferred replica already elected for partitions t-0, t-1

The second line lists the *succeeded* partitions, not the ones already led by
their preferred replica: that is Kafka 2.8's own output (a bug it shipped
with), kept so scripts parsing it see what they saw.  The partition sets are
printed sorted; Scala's ``Set(…)`` / ``HashSet(…)`` (more than four) wrapper
is kept.  Failures: Kafka's exception on stderr, exit status 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from typing import Any

from mafka.cli.clients import KafkaToolError as CommandError
from mafka.cli.clients import admin_config, error_text, java_exception
from mafka.cli.leader_election import elect_leaders
from mafka.cli.zk_session import ZkSession
from mafka.client.admin import AdminClient
from mafka.client.kafka_error import KafkaException
from mafka.coordination.store import ConnectionLossError, NodeExistsError, StoreError
from mafka.errors import ErrorCode
from mafka.topics import TopicPartitionTuple

__all__ = [
    "add_parser",
    "run",
    "parse_election_data",
    "scala_set",
    "report_admin_results",
    "DEPRECATED",
]

DEPRECATED = "This tool is deprecated. Please use kafka-leader-election tool. Tracking issue: KAFKA-8405"
PREFERRED = 0


def add_parser(sub: Any) -> None:
    p = sub.add_parser(
        "preferred-replica-election",
        help="move leadership back to the preferred replicas (kafka-preferred-replica-election, deprecated)",
    )
    p.add_argument("--bootstrap-server", metavar="HOST:PORT")
    p.add_argument("--zookeeper", metavar="HOST:PORT[/CHROOT]",
                   help="DEPRECATED (as in Kafka 2.8): write /admin/preferred_replica_election directly")
    p.add_argument("--path-to-json-file", metavar="FILE",
                   help='{"partitions":[{"topic":"foo","partition":1}]}; defaults to all existing partitions')
    p.add_argument("--admin.config", dest="admin_config", metavar="FILE",
                   help="Admin client config properties file to pass to the admin client when "
                   "--bootstrap-server is given.")
    p.add_argument("--timeout", type=float, default=30.0, help="seconds to wait for the cluster (Kafka: 30)")
    p.set_defaults(func=run)


def _tp(tp: TopicPartitionTuple) -> str:
    return f"{tp[0]}-{tp[1]}"


def scala_set(partitions: Iterable[TopicPartitionTuple]) -> str:
    """A Scala 2.13 immutable ``Set[TopicPartition]``'s ``toString``, elements sorted."""
    items = sorted(partitions)
    return f"{'Set' if len(items) <= 4 else 'HashSet'}({', '.join(_tp(tp) for tp in items)})"


def parse_election_data(text: str) -> list[TopicPartitionTuple]:
    """Kafka's ``parsePreferredReplicaElectionData``."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        raise CommandError("Preferred replica election data is empty") from None
    if not isinstance(data, dict) or not isinstance(data.get("partitions"), list):
        raise CommandError("Preferred replica election data is empty")
    out: list[TopicPartitionTuple] = []
    for entry in data["partitions"]:
        if not isinstance(entry, dict):
            raise CommandError(f"Invalid partition entry {json.dumps(entry)}")
        for field in ("topic", "partition"):
            if field not in entry:
                raise CommandError(f"No such field exists: `{field}`",
                                   "com.fasterxml.jackson.databind.JsonMappingException")
        try:
            out.append((str(entry["topic"]), int(entry["partition"])))
        except (TypeError, ValueError):
            raise CommandError(f"Invalid partition entry {json.dumps(entry)}") from None
    duplicates = sorted({tp for tp in out if out.count(tp) > 1})
    if duplicates:
        raise CommandError("Preferred replica election data contains duplicate partitions: "
                           + ",".join(_tp(tp) for tp in duplicates))
    return out


# --------------------------------------------------------------------------- --zookeeper


def _all_partitions(zk: Any, topics: Iterable[str]) -> set[TopicPartitionTuple]:
    """``getPartitionsForTopics``: the partitions of those topics that exist."""
    out: set[TopicPartitionTuple] = set()
    for topic in sorted(set(topics)):
        got = zk.call(zk.client.get_assignment, topic)
        if got is not None:
            out.update((topic, p) for p in got[0].partitions)
    return out


def elect_via_zookeeper(zk: Any, requested: list[TopicPartitionTuple] | None) -> None:
    """2.8's ``ZkCommand.electPreferredLeaders``; raises CommandError (its AdminOperationException)."""
    topics = zk.call(zk.client.get_topics) if requested is None else {t for t, _ in requested}
    existing = _all_partitions(zk, topics)
    if requested is None:
        valid, invalid = existing, []
    else:
        valid = {tp for tp in requested if tp in existing}
        invalid = sorted(tp for tp in requested if tp not in existing)
    try:
        zk.call(zk.client.create_preferred_replica_election, sorted(valid))
    except NodeExistsError:
        pending = zk.call(zk.client.get_preferred_replica_election)
        raise CommandError(
            "Preferred replica leader election currently in progress for "
            f"{','.join(_tp(tp) for tp in pending)}. Aborting operation"
        ) from None
    print(f"Created preferred replica election path with {','.join(_tp(tp) for tp in sorted(valid))}")
    print(f"Successfully started preferred replica election for partitions {scala_set(valid)}")
    for tp in invalid:
        print(f"Skipping preferred replica leader election for partition {_tp(tp)} since it doesn't exist.")


# --------------------------------------------------------------------------- --bootstrap-server


def report_admin_results(results: dict[TopicPartitionTuple, tuple[int, str | None]]) -> int:
    """2.8's ``AdminClientCommand`` lines; returns how many partitions failed."""
    succeeded = sorted(tp for tp, (code, _) in results.items() if code == ErrorCode.NONE)
    noop = [tp for tp, (code, _) in results.items() if code == ErrorCode.ELECTION_NOT_NEEDED]
    failed = sorted((tp, code, message) for tp, (code, message) in results.items()
                    if code not in (ErrorCode.NONE, ErrorCode.ELECTION_NOT_NEEDED))
    if succeeded:
        print("Successfully completed preferred leader election for partitions "
              + ", ".join(_tp(tp) for tp in succeeded))
    if noop:
        # Kafka 2.8 prints the succeeded partitions here (sic).
        print("Preferred replica already elected for partitions " + ", ".join(_tp(tp) for tp in succeeded))
    for tp, code, message in failed:
        print(f"Error completing preferred leader election for partition: {_tp(tp)}: "
              f"{java_exception(code, message)}")
    return len(failed)


def elect_via_admin(args: argparse.Namespace, requested: list[TopicPartitionTuple] | None) -> int:
    """ElectLeaders (PREFERRED) through the admin client; the exit status."""
    config = admin_config(args.bootstrap_server, "mafka-preferred-replica-election", args.timeout,
                          args.admin_config)
    with AdminClient(config) as admin:
        try:
            results = elect_leaders(admin, PREFERRED, requested, args.timeout)
        except TimeoutError:
            print("Timeout waiting for election results")
            print("kafka.common.AdminCommandFailedException: Timeout waiting for election results",
                  file=sys.stderr)
            return 1
        except KafkaException as exc:
            if exc.error.code() == ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
                print("Not authorized to perform leader election")
                print("kafka.common.AdminCommandFailedException: Not authorized to perform leader election",
                      file=sys.stderr)
                return 1
            print(f"java.util.concurrent.ExecutionException: "
                  f"{java_exception(exc.error.code(), error_text(exc.error))}", file=sys.stderr)
            return 1
    failed = report_admin_results(results)
    if failed:
        sys.stdout.flush()
        print(f"kafka.common.AdminCommandFailedException: {failed} preferred replica(s) could not be elected",
              file=sys.stderr)
        return 1
    return 0


def run(args: argparse.Namespace) -> int:
    print(DEPRECATED)
    if bool(args.bootstrap_server) == bool(args.zookeeper):
        print("Exactly one of '[bootstrap-server]' or '[zookeeper]' must be provided", file=sys.stderr)
        return 1
    try:
        requested = None
        if args.path_to_json_file is not None:
            with open(args.path_to_json_file, encoding="utf-8") as f:
                requested = parse_election_data(f.read())
        if args.bootstrap_server:
            rc = elect_via_admin(args, requested)
            sys.stdout.flush()
            return rc
        print("Warning: --zookeeper is deprecated and will be removed in a future version of Kafka.")
        print("Use --bootstrap-server instead to specify a broker to connect to.")
        try:
            with ZkSession(args.zookeeper, timeout=args.timeout) as zk:
                elect_via_zookeeper(zk, requested)
        except (CommandError, StoreError) as exc:
            if isinstance(exc, ConnectionLossError):
                cause = ("kafka.zookeeper.ZooKeeperClientTimeoutException: "
                         "Timed out waiting for connection while in state: CONNECTING")
            else:
                cause = str(exc) if isinstance(exc, CommandError) else f"kafka.admin.AdminOperationException: {exc}"
            sys.stdout.flush()
            print(f"kafka.common.AdminCommandFailedException: Admin command failed\nCaused by: {cause}",
                  file=sys.stderr)
            return 1
    except CommandError as exc:
        print(str(exc), file=sys.stderr)
        return 1
    except FileNotFoundError as exc:
        print(f"java.nio.file.NoSuchFileException: {exc.filename}", file=sys.stderr)
        return 1
    except OSError as exc:
        print(f"java.io.IOException: {exc}", file=sys.stderr)
        return 1
    except ValueError as exc:  # a bad bootstrap list
        print(f"org.apache.kafka.common.config.ConfigException: {exc}", file=sys.stderr)
        return 1
    sys.stdout.flush()
    return 0
