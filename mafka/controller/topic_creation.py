"""The admin path that writes a new topic's znodes (Kafka 2.8's ``ZkAdminManager`` / ``AdminZkClient``).

Owns creating a topic in ZooKeeper — :func:`create_topic_in_zookeeper`: the
checks in Kafka's order, the replica assignment
(:func:`~mafka.controller.assignment.assign_replicas` or a manual one), then
``/config/topics/<name>`` and ``/brokers/topics/<name>`` with a new topic id —
and validating topic configs (:func:`validate_topic_configs`, Kafka's
``LogConfig.validate``).  Usable from any broker, controller or not: a
non-controller broker's auto-create writes the znodes itself, and the active
controller then notices the topic through its watches.  No controller state.
"""

from __future__ import annotations

import random
from collections.abc import Callable, Mapping, Sequence

from twisted.internet.defer import Deferred

from mafka.controller.assignment import Brokers, assign_replicas, validate_topic_assignment
from mafka.coordination.kafka_zk import KafkaZkClient, validate_topic_name
from mafka.coordination.znodes import TopicAssignment, new_topic_id
from mafka.errors import (
    ConfigError,
    InvalidConfigError,
    InvalidRequestError,
    InvalidTopicError,
    TopicAlreadyExistsError,
)
from mafka.log.config import LogConfig
from mafka.topics import is_valid_topic_name

__all__ = ["create_topic_in_zookeeper", "validate_topic_configs"]

_COMPRESSION_TYPES = frozenset({"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"})


def _check_bool(name: str, value: str) -> None:
    if value.strip().lower() not in ("true", "false"):
        raise InvalidConfigError(
            f"Invalid value {value} for configuration {name}: Expected value to be either true or false"
        )


def _check_min_isr(name: str, value: str) -> None:
    try:
        ok = int(value.strip()) >= 1
    except ValueError:
        ok = False
    if not ok:
        raise InvalidConfigError(
            f"Invalid value {value} for configuration {name}: Value must be at least 1"
        )


def _check_compression(name: str, value: str) -> None:
    if value.strip() not in _COMPRESSION_TYPES:
        raise InvalidConfigError(
            f"Invalid value {value} for configuration {name}: String must be one of: {', '.join(sorted(_COMPRESSION_TYPES))}"
        )


def _check_any(name: str, value: str) -> None:
    return None


#: Kafka 2.8's ``ApiVersion.allVersions`` (what ``message.format.version`` may name).
_API_VERSIONS: tuple[str, ...] = (
    "0.8.0", "0.8.1", "0.8.2", "0.9.0",
    "0.10.0-IV0", "0.10.0-IV1", "0.10.1-IV0", "0.10.1-IV1", "0.10.1-IV2", "0.10.2-IV0",
    "0.11.0-IV0", "0.11.0-IV1", "0.11.0-IV2", "1.0-IV0", "1.1-IV0", "2.0-IV0", "2.0-IV1",
    "2.1-IV0", "2.1-IV1", "2.1-IV2", "2.2-IV0", "2.2-IV1", "2.3-IV0", "2.3-IV1", "2.4-IV0", "2.4-IV1",
    "2.5-IV0", "2.6-IV0", "2.7-IV0", "2.7-IV1", "2.7-IV2", "2.8-IV0", "2.8-IV1",
)  # fmt: skip
#: Full versions and their short forms ("0.10.0", "2.8"), as ``ApiVersion.versionMap``.
_API_VERSION_KEYS = frozenset(_API_VERSIONS) | frozenset(v.split("-")[0] for v in _API_VERSIONS)


def _check_message_format_version(name: str, value: str) -> None:
    # Kafka's ApiVersionValidator: "0.10.2.1" and "2.8.2" name their releases (0.x versions
    # keep three dot-separated parts, later ones two), "2.8-IV1" an internal version.
    # The value is only checked and stored: Mafka always writes record batch v2, as Kafka 3.0+
    # does (KIP-724), and converts for old clients at the edge (Produce v0-2 / Fetch v0-3).
    parts = value.strip().split(".")
    key = ".".join(parts[: 3 if value.strip().startswith("0.") else 2])
    if key not in _API_VERSION_KEYS:
        raise InvalidConfigError(
            f"Invalid value {value} for configuration {name}: Version `{value}` is not a valid version"
        )


#: Topic configs Kafka 2.8 knows that :class:`~mafka.log.config.LogConfig` does not model.
_EXTRA_TOPIC_CONFIGS: Mapping[str, Callable[[str, str], None]] = {
    "min.insync.replicas": _check_min_isr,
    "unclean.leader.election.enable": _check_bool,
    "compression.type": _check_compression,
    "message.downconversion.enable": _check_bool,
    "message.format.version": _check_message_format_version,
    "leader.replication.throttled.replicas": _check_any,
    "follower.replication.throttled.replicas": _check_any,
}


def validate_topic_configs(configs: Mapping[str, str | None]) -> None:
    """Kafka's ``LogConfig.validate`` for CreateTopics.

    Raises:
        InvalidRequestError: A value is None (Kafka: null config values are refused).
        InvalidConfigError: An unknown name or a value Kafka would refuse.
    """
    nulls = [name for name, value in configs.items() if value is None]
    if nulls:
        raise InvalidRequestError(f"Null value not supported for topic configs: {','.join(nulls)}")
    log_props: dict[str, str] = {}
    for name, value in configs.items():
        check = _EXTRA_TOPIC_CONFIGS.get(name)
        if check is not None:
            check(name, str(value))
        else:
            log_props[name] = str(value)
    try:
        LogConfig.from_properties(log_props)
    except ConfigError as exc:
        raise InvalidConfigError(str(exc)) from None


async def _create_topic(
    zk: KafkaZkClient,
    name: str,
    partitions: int,
    replication_factor: int,
    live_broker_racks: Brokers | None,
    configs: Mapping[str, str | None] | None,
    assignment: Mapping[int, Sequence[int]] | None,
    validate_only: bool,
    rack_aware_mode: str,
    rng: random.Random | None,
) -> TopicAssignment:
    # ZkAdminManager.createTopics: the "already exists" check comes first.
    if is_valid_topic_name(name) and await zk.topic_exists(name):
        raise TopicAlreadyExistsError(f"Topic '{name}' already exists.")
    config = dict(configs or {})
    nulls = [key for key, value in config.items() if value is None]
    if nulls:
        raise InvalidRequestError(f"Null value not supported for topic configs: {','.join(nulls)}")
    if assignment:
        replica_assignment = {
            int(p): [int(r) for r in replicas] for p, replicas in assignment.items()
        }
    else:
        if live_broker_racks is None:
            registered = await zk.get_all_brokers()
            live_broker_racks = {b: reg.rack for b, (reg, _) in registered.items()}
        brokers: Brokers = live_broker_racks
        if rack_aware_mode == "safe" and isinstance(brokers, Mapping):
            if any(r is None for r in brokers.values()):
                brokers = sorted(int(b) for b in brokers)
        elif rack_aware_mode == "disabled":
            brokers = sorted(int(b) for b in brokers)
        replica_assignment = assign_replicas(brokers, partitions, replication_factor, rng=rng)
    # AdminZkClient.validateTopicCreate, in Kafka's order.
    validate_topic_name(name)
    if await zk.is_topic_marked_for_deletion(name):
        raise TopicAlreadyExistsError(f"Topic '{name}' is marked for deletion.")
    if await zk.topic_exists(name):
        raise TopicAlreadyExistsError(f"Topic '{name}' already exists.")
    if "." in name or "_" in name:
        topics = await zk.get_topics()
        if name in topics:
            raise TopicAlreadyExistsError(f"Topic '{name}' already exists.")
        folded = name.replace(".", "_")
        colliding = [t for t in topics if t.replace(".", "_") == folded]
        if colliding:
            raise InvalidTopicError(
                f"Topic '{name}' collides with existing topics: {', '.join(colliding)}"
            )
    validate_topic_assignment(replica_assignment)
    validate_topic_configs(config)
    if validate_only:
        return TopicAssignment({p: tuple(replicas) for p, replicas in replica_assignment.items()})
    return await zk.create_topic(
        name, replica_assignment, {k: str(v) for k, v in config.items()}, topic_id=new_topic_id()
    )


def create_topic_in_zookeeper(
    zk: KafkaZkClient,
    name: str,
    partitions: int,
    replication_factor: int,
    live_broker_racks: Brokers | None = None,
    configs: Mapping[str, str | None] | None = None,
    *,
    assignment: Mapping[int, Sequence[int]] | None = None,
    validate_only: bool = False,
    rack_aware_mode: str = "enforced",
    rng: random.Random | None = None,
) -> Deferred[TopicAssignment]:
    """Creates a topic's znodes as Kafka 2.8's admin path does (``ZkAdminManager`` / ``AdminZkClient``).

    Used by the controller's CreateTopics and by a non-controller broker's
    auto-create (which in ZooKeeper mode writes the znodes itself); the
    active controller notices ``/brokers/topics/<name>`` and brings the
    partitions online.  Checks, in Kafka's order: already exists; null
    config values; replica assignment (``assign_replicas`` over the brokers,
    or the manual *assignment*); topic name; marked for deletion; name
    collision (``.`` vs ``_``); assignment shape; configs.  Then writes
    ``/config/topics/<name>`` and ``/brokers/topics/<name>`` (with a new topic id).

    Args:
        zk: A KafkaZkClient (any broker's session; admin writes are not fenced).
        name: The topic.
        partitions, replication_factor: Used when *assignment* is not given.
        live_broker_racks: Broker ids, or broker id → rack; None reads the
            registered brokers from ZooKeeper.
        configs: Topic config overrides.
        assignment: A manual partition → replicas assignment.
        validate_only: Check everything, write nothing.
        rack_aware_mode: ``"enforced"`` (CreateTopics: mixed racks are an
            error), ``"safe"`` (auto-create: mixed racks → racks ignored) or ``"disabled"``.
        rng: Randomness for the assignment's start index and shift.

    Returns:
        A Deferred firing with the assignment written (or that would be).
        It fails with a :class:`mafka.errors.KafkaError` subclass
        (TopicAlreadyExists, InvalidPartitions, InvalidReplicationFactor,
        InvalidTopic, InvalidReplicaAssignment, ConfigError, InvalidRequest;
        ``AdminOperationError`` for mixed racks) or a store error.
    """
    return Deferred.fromCoroutine(
        _create_topic(
            zk,
            name,
            partitions,
            replication_factor,
            live_broker_racks,
            configs,
            assignment,
            validate_only,
            rack_aware_mode,
            rng,
        )
    )


