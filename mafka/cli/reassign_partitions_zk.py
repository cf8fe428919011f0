"""``mafka reassign-partitions --zookeeper``: Kafka 2.8's deprecated ZooKeeper form of the tool.

Kafka 2.8 still accepted ``--zookeeper host:port[/chroot]`` instead of
``--bootstrap-server`` for ``--generate``, ``--execute`` and ``--verify``, and
then worked on the znodes directly (``ReassignPartitionsCommand``'s
``KafkaZkClient`` overloads):

* ``--generate``: the current assignment of the topics from
  ``/brokers/topics/<t>`` (topics that do not exist are left out, as 2.8
  did), the brokers (and racks) from ``/brokers/ids``; the proposal is
  ``AdminUtils.assignReplicasToBrokers`` per topic;
* ``--execute``: checks that every partition and broker exists, refuses while
  ``/admin/reassign_partitions`` exists (Kafka's "Cannot execute because there
  is an existing partition assignment…"), prints the current assignment for
  rollback, sets the throttles in ``/config`` (with ``--throttle``: topic
  ``leader/follower.replication.throttled.replicas`` and broker
  ``leader/follower.replication.throttled.rate``, each with a config change
  notification) and creates ``/admin/reassign_partitions`` — the controller
  does the rest and removes each partition from the znode when it is done;
* ``--verify``: a partition still in ``/admin/reassign_partitions`` is "still
  in progress", otherwise its replicas in ``/brokers/topics/<t>`` are compared
  with the target; once the znode is gone the throttles are removed (unless
  ``--preserve-throttles``); how many are complete goes to stderr, as in the
  ``--bootstrap-server`` form.

Output lines and messages are 2.8's, including its warnings::

    Warning: --zookeeper is deprecated, and will be removed in a future version of Kafka.

Argument checks are 2.8's ``validateAndParseArgs`` (usage errors on stderr,
status 1).  Failures print ``Error: <message>`` (Kafka's terse failures: the
message alone) and exit with status 1.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Mapping, Sequence
from typing import Any

from mafka.cli.reassign_partitions_common import (
    ANY_LOG_DIR,
    BROKER_FOLLOWER_THROTTLE,
    BROKER_LEADER_THROTTLE,
    BROKER_LOG_DIR_THROTTLE,
    CANNOT_EXECUTE_BECAUSE_OF_EXISTING,
    RUN_VERIFY_PERIODICALLY,
    TOPIC_FOLLOWER_THROTTLE,
    TOPIC_LEADER_THROTTLE,
    Assignment,
    CommandError,
    TerseFailure,
    follower_throttles,
    format_reassignment_json,
    leader_throttles,
    parse_broker_list,
    parse_reassignment_json,
    parse_topics_to_move_json,
    print_generated,
    proposed_move_map,
    reassigning_brokers,
    report_verify_progress,
    sorted_parts,
    status_lines,
    tp_str,
)
from mafka.cli.zk_session import ZkSession
from mafka.coordination.store import ConnectionLossError, NodeExistsError, StoreError
from mafka.errors import KafkaError

__all__ = [
    "check_zookeeper_args",
    "run_zookeeper",
    "generate",
    "execute",
    "verify",
    "ZOOKEEPER_DEPRECATED",
    "VERIFY_MAY_BE_INCOMPLETE",
]

ZOOKEEPER_DEPRECATED = "Warning: --zookeeper is deprecated, and will be removed in a future version of Kafka."
VERIFY_MAY_BE_INCOMPLETE = (
    "Warning: because you are using the deprecated --zookeeper option, the results may be "
    "incomplete.  Use --bootstrap-server instead for more accurate results."
)
NEEDS_BOOTSTRAP_FOR_LOG_DIRS = (
    "bootstrap-server needs to be provided when replica reassignments are present."
)

#: Seconds for the ZooKeeper session and each operation (Kafka 2.8's tool: 30000 ms).
ZK_TIMEOUT_S = 30.0

#: Kafka's option names (``[name]`` is how joptsimple prints one) → argparse dest.
_OPTIONS = {
    "generate": "generate",
    "execute": "execute",
    "verify": "verify",
    "cancel": "cancel",
    "list": "list",
    "bootstrap-server": "bootstrap_server",
    "zookeeper": "zookeeper",
    "command-config": "command_config",
    "reassignment-json-file": "reassignment_json_file",
    "topics-to-move-json-file": "topics_to_move_json_file",
    "broker-list": "broker_list",
    "disable-rack-aware": "disable_rack_aware",
    "throttle": "throttle",
    "replica-alter-log-dirs-throttle": "replica_alter_log_dirs_throttle",
    "timeout": "timeout",
    "additional": "additional",
    "preserve-throttles": "preserve_throttles",
}

#: ``validateAndParseArgs``' requiredArgs / permittedArgs per action.
_REQUIRED: dict[str, tuple[str, ...]] = {
    "verify": ("reassignment-json-file",),
    "generate": ("topics-to-move-json-file", "broker-list"),
    "execute": ("reassignment-json-file",),
    "cancel": ("reassignment-json-file",),
    "list": (),
}
_PERMITTED: dict[str, tuple[str, ...]] = {
    "verify": ("bootstrap-server", "command-config", "preserve-throttles", "zookeeper"),
    "generate": ("bootstrap-server", "broker-list", "command-config", "disable-rack-aware", "zookeeper"),
    "execute": ("additional", "bootstrap-server", "command-config", "throttle",
                "replica-alter-log-dirs-throttle", "timeout", "zookeeper"),
    "cancel": ("bootstrap-server", "command-config", "preserve-throttles", "timeout"),
    "list": ("bootstrap-server", "command-config"),
}
_BOOTSTRAP_ONLY = ("additional", "cancel", "command-config", "replica-alter-log-dirs-throttle", "list", "timeout")


def _given(args: argparse.Namespace, option: str) -> bool:
    value = getattr(args, _OPTIONS[option], None)
    return value is not None and value is not False


def check_zookeeper_args(args: argparse.Namespace, action: str) -> str | None:
    """Kafka 2.8's ``validateAndParseArgs`` once ``--zookeeper`` is given: the usage error, or None."""
    for option in _REQUIRED[action]:
        if not _given(args, option):
            return f'Missing required argument "[{option}]"'
    for option in _OPTIONS:
        if option != action and _given(args, option) and option not in _REQUIRED[action] \
                and option not in _PERMITTED[action]:
            return f'Option "[{option}]" can\'t be used with action "[{action}]"'
    if not args.bootstrap_server:
        for option in _BOOTSTRAP_ONLY:
            if _given(args, option):
                return (f'java.lang.RuntimeException: You must specify --bootstrap-server when using '
                        f'"[{option}]"')
    return None


# --------------------------------------------------------------------------- reading znodes


def _replica_assignment(zk: Any, topics: Sequence[str]) -> Assignment:
    """``getReplicaAssignmentForTopics``: every partition of the topics that exist."""
    out: Assignment = {}
    for topic in sorted(set(topics)):
        got = zk.call(zk.client.get_assignment, topic)
        if got is None:
            continue
        for partition, replicas in got[0].partitions.items():
            out[(topic, partition)] = list(replicas)
    return out


def _has_log_dir_moves(text: str) -> bool:
    """True when some entry of a reassignment JSON names a log dir other than ``any``."""
    try:
        data = json.loads(text)
    except json.JSONDecodeError:
        return False
    if not isinstance(data, dict) or not isinstance(data.get("partitions"), list):
        return False
    return any(
        isinstance(entry, dict) and isinstance(entry.get("log_dirs"), list)
        and any(d != ANY_LOG_DIR for d in entry["log_dirs"])
        for entry in data["partitions"]
    )


def _read_reassignment(path: str) -> Assignment:
    with open(path, encoding="utf-8") as f:
        text = f.read()
    if _has_log_dir_moves(text):
        raise CommandError(NEEDS_BOOTSTRAP_FOR_LOG_DIRS)
    return parse_reassignment_json(text)


# --------------------------------------------------------------------------- actions


def generate(zk: Any, args: argparse.Namespace, rng: Any = None) -> None:
    """Kafka's ``generateAssignment(zkClient, …)``."""
    brokers = parse_broker_list(args.broker_list)
    with open(args.topics_to_move_json_file, encoding="utf-8") as f:
        topics = parse_topics_to_move_json(f.read())
    current = _replica_assignment(zk, topics)
    # AdminZkClient.getBrokerMetadatas(Enforced | Disabled, Some(brokers)): live brokers of the list, by id.
    live = zk.call(zk.client.get_all_brokers)
    chosen = {b: reg.rack for b, (reg, _) in sorted(live.items()) if b in set(brokers)}
    with_rack = sum(1 for rack in chosen.values() if rack is not None)
    if not args.disable_rack_aware and 0 < with_rack < len(chosen):
        raise CommandError(
            "Not all brokers have rack information. Add --disable-rack-aware in command line to "
            "make replica assignment without rack information."
        )
    broker_arg: Any = sorted(chosen) if args.disable_rack_aware or not with_rack else chosen
    print_generated(current, broker_arg, rng)


def _check_partitions_and_brokers(zk: Any, proposed: Assignment, existing: Assignment) -> None:
    """Kafka's ``verifyReplicasAndBrokersInAssignment``."""
    missing = [tp for tp in proposed if tp not in existing]
    if missing:
        raise CommandError(
            "The proposed assignment contains non-existent partitions: "
            f"List({', '.join(tp_str(tp) for tp in missing)})"
        )
    live = set(zk.call(zk.client.get_broker_ids))
    unknown = sorted({b for replicas in proposed.values() for b in replicas} - live)
    if unknown:
        raise CommandError(
            "The proposed assignment contains non-existent brokerIDs: " + ",".join(map(str, unknown))
        )


def _modify_throttles(zk: Any, proposed: Assignment, current: Assignment, throttle: int) -> None:
    """``modifyTopicThrottles`` + ``modifyBrokerThrottles`` (ZooKeeper overloads)."""
    moves = proposed_move_map({}, proposed, current)
    leaders, followers = leader_throttles(moves), follower_throttles(moves)
    for topic in sorted(set(leaders) | set(followers)):
        configs = dict(zk.call(zk.client.get_topic_config, topic))
        if topic in leaders:
            configs[TOPIC_LEADER_THROTTLE] = leaders[topic]
        if topic in followers:
            configs[TOPIC_FOLLOWER_THROTTLE] = followers[topic]
        zk.call(zk.client.set_topic_config, topic, configs)
    for broker in sorted(reassigning_brokers(moves)):
        configs = dict(zk.call(zk.client.get_broker_config, broker))
        configs[BROKER_LEADER_THROTTLE] = str(throttle)
        configs[BROKER_FOLLOWER_THROTTLE] = str(throttle)
        zk.call(zk.client.set_broker_config, broker, configs)
    print(f"The inter-broker throttle limit was set to {throttle} B/s")


def execute(zk: Any, args: argparse.Namespace) -> None:
    """Kafka's ``executeAssignment(zkClient, …)``: writes ``/admin/reassign_partitions``."""
    proposed = _read_reassignment(args.reassignment_json_file)
    current = _replica_assignment(zk, [t for t, _ in proposed])
    _check_partitions_and_brokers(zk, proposed, current)
    if zk.call(zk.store.exists, "/admin/reassign_partitions") is not None:
        raise TerseFailure(CANNOT_EXECUTE_BECAUSE_OF_EXISTING)
    rollback = format_reassignment_json({tp: r for tp, r in current.items() if tp in proposed})
    print(
        f"Current partition replica assignment\n\n{rollback}\n\nSave this to use as the "
        "--reassignment-json-file option during rollback"
    )
    throttle = -1 if args.throttle is None else args.throttle
    if throttle >= 0:
        print(RUN_VERIFY_PERIODICALLY)
        _modify_throttles(zk, proposed, current, throttle)
    parts = sorted_parts(proposed)
    try:
        zk.call(zk.client.create_partition_reassignment, {tp: proposed[tp] for tp in parts})
    except NodeExistsError:  # someone else was quicker: Kafka's NodeExistsException
        raise CommandError("KeeperErrorCode = NodeExists for /admin/reassign_partitions") from None
    print(
        f"Successfully started partition reassignment{'' if len(parts) == 1 else 's'} for "
        + ",".join(tp_str(tp) for tp in parts)
    )


def _clear_all_throttles(zk: Any, targets: Mapping[tuple[str, int], Sequence[int]]) -> None:
    """``clearAllThrottles(zkClient, …)``: broker rates and topic replica lists, where set."""
    live = set(zk.call(zk.client.get_broker_ids))
    brokers = sorted(live | {b for replicas in targets.values() for b in replicas})
    print(
        f"Clearing broker-level throttles on broker{'' if len(brokers) == 1 else 's'} "
        + ",".join(map(str, brokers))
    )
    for broker in brokers:
        configs = dict(zk.call(zk.client.get_broker_config, broker))
        removed = [configs.pop(k) for k in (BROKER_LEADER_THROTTLE, BROKER_FOLLOWER_THROTTLE,
                                            BROKER_LOG_DIR_THROTTLE) if k in configs]
        if removed:
            zk.call(zk.client.set_broker_config, broker, configs)
    topics = sorted({t for t, _ in targets})
    print(f"Clearing topic-level throttles on topic{'' if len(topics) == 1 else 's'} {','.join(topics)}")
    for topic in topics:
        configs = dict(zk.call(zk.client.get_topic_config, topic))
        removed = [configs.pop(k) for k in (TOPIC_LEADER_THROTTLE, TOPIC_FOLLOWER_THROTTLE) if k in configs]
        if removed:
            zk.call(zk.client.set_topic_config, topic, configs)


def verify(zk: Any, args: argparse.Namespace) -> bool:
    """Kafka's ``verifyAssignment(zkClient, …)``; returns True while ``/admin/reassign_partitions`` lists any."""
    targets = _read_reassignment(args.reassignment_json_file)
    print(VERIFY_MAY_BE_INCOMPLETE)
    pending = zk.call(zk.client.get_partition_reassignment)
    current = _replica_assignment(zk, [t for t, _ in targets])
    print("\n".join(status_lines(targets, pending, current)))
    report_verify_progress(targets, pending, current)
    ongoing = bool(pending)
    if not ongoing and not args.preserve_throttles:
        _clear_all_throttles(zk, targets)
    return ongoing


def run_zookeeper(args: argparse.Namespace, action: str) -> int:
    """Runs a checked ``--generate`` / ``--execute`` / ``--verify`` against ``args.zookeeper``; the exit status."""
    print(ZOOKEEPER_DEPRECATED)
    try:
        with ZkSession(args.zookeeper, timeout=ZK_TIMEOUT_S) as zk:
            {"generate": generate, "execute": execute, "verify": verify}[action](zk, args)
    except TerseFailure as exc:
        print(str(exc))
        return 1
    except ConnectionLossError:
        print("Error: Timed out waiting for connection while in state: CONNECTING")
        return 1
    except KafkaError as exc:
        print(f"Error: {exc.message or exc}")
        return 1
    except (CommandError, StoreError, OSError, ValueError) as exc:
        print(f"Error: {exc}")
        return 1
    sys.stdout.flush()
    return 0
