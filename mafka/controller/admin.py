"""The controller's admin operations: CreateTopics, DeleteTopics, CreatePartitions, ControlledShutdown.

Two halves:

* the **admin path** that writes a new topic's znodes (Kafka 2.8's
  ``ZkAdminManager`` / ``AdminZkClient``): :func:`create_topic_in_zookeeper`
  and :func:`validate_topic_configs`, usable from any broker (a
  non-controller broker's auto-create writes the znodes itself);
* :class:`AdminMixin`, the :class:`~mafka.controller.controller.Controller`'s
  entry points for the broker's admin handlers.  Each runs its ZooKeeper work
  as a controller event, answers ``NOT_CONTROLLER`` when this broker is not
  the active controller, and (with a timeout) waits until the outcome is
  visible in the controller's context (partitions online, topic gone), else
  ``REQUEST_TIMED_OUT``.

The mixin only sequences; it relies on the controller's event plumbing
(``_enqueue``, ``_wait_until``), its state machines and its context.
"""

from __future__ import annotations

import logging
import random
from collections import Counter
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from twisted.internet.defer import Deferred

from mafka.controller.assignment import (
    Brokers,
    assign_replicas,
    new_partitions_assignment,
    validate_topic_assignment,
)
from mafka.controller.election import LeaderElectionStrategy
from mafka.controller.events import EventDropped
from mafka.controller.states import PartitionState, ReplicaState
from mafka.coordination.kafka_zk import KafkaZkClient, validate_topic_name
from mafka.coordination.znodes import TopicAssignment, TopicPartition, new_topic_id
from mafka.errors import (
    ErrorCode,
    InvalidConfigError,
    InvalidRequestError,
    InvalidTopicError,
    KafkaError,
    NotControllerError,
    ReassignmentInProgressError,
    TopicAlreadyExistsError,
    UnknownTopicOrPartitionError,
)
from mafka.log.config import InvalidConfig, LogConfig
from mafka.topics import is_valid_topic_name

__all__ = [
    "AdminMixin",
    "AdminResult",
    "NewPartitions",
    "NewTopic",
    "create_topic_in_zookeeper",
    "validate_topic_configs",
]

log = logging.getLogger("mafka.controller")

_P = PartitionState
_R = ReplicaState
_Strategy = LeaderElectionStrategy

#: Per-topic admin outcome: (error code, message or None).
AdminResult = tuple[ErrorCode, str | None]


class NewTopic(NamedTuple):
    """One CreateTopics entry: -1 partitions / replication factor = the broker default."""

    name: str
    num_partitions: int = -1
    replication_factor: int = -1
    assignment: Mapping[int, Sequence[int]] | None = None
    configs: Mapping[str, str | None] | None = None


class NewPartitions(NamedTuple):
    """One CreatePartitions entry: the new total count and, optionally, the new partitions' replicas."""

    name: str
    count: int
    assignment: Sequence[Sequence[int]] | None = None


# --------------------------------------------------------------------------- topic creation (admin path)

_COMPRESSION_TYPES = frozenset({"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"})


def _sleep(reactor: Any, seconds: float) -> Deferred[None]:
    d: Deferred[None] = Deferred()
    reactor.callLater(seconds, d.callback, None)
    return d


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
    except InvalidConfig as exc:
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
        return TopicAssignment(replica_assignment)
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
        InvalidTopic, InvalidReplicaAssignment, InvalidConfig, InvalidRequest;
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


# --------------------------------------------------------------------------- the controller's entry points


class AdminMixin:
    """CreateTopics / DeleteTopics / CreatePartitions / ControlledShutdown on the controller."""

    # ------------------------------------------------------------------ admin entry points

    def create_topics(
        self,
        specs: Iterable[NewTopic | Sequence[Any]],
        validate_only: bool = False,
        timeout_ms: int = 0,
    ) -> Deferred[dict[str, AdminResult]]:
        """CreateTopics on the controller (``ZkAdminManager.createTopics`` + ``DelayedCreatePartitions``).

        Args:
            specs: ``NewTopic`` or tuples ``(name, num_partitions, replication_factor,
                assignment | None, configs)``; -1 = broker default; a manual
                assignment requires both to be -1.
            validate_only: Check only.
            timeout_ms: > 0: wait until every partition of the created topics is
                online, or answer REQUEST_TIMED_OUT for the topics that are not.

        Returns:
            Topic → (error, message): NONE, TOPIC_ALREADY_EXISTS, INVALID_PARTITIONS,
            INVALID_REPLICATION_FACTOR, INVALID_REPLICA_ASSIGNMENT,
            INVALID_TOPIC_EXCEPTION, INVALID_CONFIG, INVALID_REQUEST,
            REQUEST_TIMED_OUT, NOT_CONTROLLER, UNKNOWN_SERVER_ERROR.
        """
        topics = [spec if isinstance(spec, NewTopic) else NewTopic(*spec) for spec in specs]
        return Deferred.fromCoroutine(self._create_topics(topics, validate_only, timeout_ms))

    def delete_topics(
        self, names: Iterable[str], timeout_ms: int = 0
    ) -> Deferred[dict[str, ErrorCode]]:
        """DeleteTopics on the controller: queue for deletion, wait until gone (or REQUEST_TIMED_OUT).

        Returns:
            Topic → error code (DeleteTopics v0–v4 carry no message): NONE,
            UNKNOWN_TOPIC_OR_PARTITION, TOPIC_DELETION_DISABLED, INVALID_REQUEST
            (duplicates), REQUEST_TIMED_OUT, NOT_CONTROLLER.
        """
        d = Deferred.fromCoroutine(self._delete_topics(list(names), timeout_ms))
        return d.addCallback(lambda results: {name: code for name, (code, _) in results.items()})

    def create_partitions(
        self,
        specs: Iterable[NewPartitions | Sequence[Any]],
        validate_only: bool = False,
        timeout_ms: int = 0,
    ) -> Deferred[dict[str, AdminResult]]:
        """CreatePartitions on the controller (``ZkAdminManager.createPartitions``).

        Args:
            specs: ``NewPartitions`` or tuples ``(name, new_total_count, assignment | None)``
                where assignment lists the replicas of each *new* partition.

        Returns:
            Topic → (error, message): NONE, UNKNOWN_TOPIC_OR_PARTITION,
            INVALID_PARTITIONS, INVALID_REPLICA_ASSIGNMENT,
            INVALID_REPLICATION_FACTOR, REASSIGNMENT_IN_PROGRESS,
            INVALID_TOPIC_EXCEPTION (queued for deletion), INVALID_REQUEST,
            REQUEST_TIMED_OUT, NOT_CONTROLLER.
        """
        entries = [
            spec if isinstance(spec, NewPartitions) else NewPartitions(*spec) for spec in specs
        ]
        return Deferred.fromCoroutine(self._create_partitions(entries, validate_only, timeout_ms))

    def controlled_shutdown(
        self, broker_id: int, broker_epoch: int = -1
    ) -> Deferred[tuple[ErrorCode, list[TopicPartition]]]:
        """ControlledShutdown (KC ``doControlledShutdown``): move leadership off *broker_id*.

        Returns:
            (error, partitions it still leads): STALE_CONTROLLER_EPOCH when not
            the controller, STALE_BROKER_EPOCH for an old epoch,
            BROKER_NOT_AVAILABLE for an unknown broker.
        """
        return Deferred.fromCoroutine(self._controlled_shutdown(broker_id, broker_epoch))

    # ------------------------------------------------------------------ admin: CreateTopics

    def _topic_online(self, topic: str, count: int | None = None) -> bool:
        ctx = self.context
        partitions = ctx.partitions_for_topic(topic)
        if count is not None:
            if len(partitions) < count:
                return False
            partitions = [(topic, p) for p in range(count)]
        return bool(partitions) and all(ctx.is_partition_online(tp) for tp in partitions)

    async def _run_admin(self, name: str, fn: Callable[..., Awaitable[Any]], *args: Any) -> Any:
        """Runs an admin step as an event; None when this broker is not (or stops being) the controller."""
        if not self.is_active or self._stopped:
            return None
        try:
            return await self._enqueue(name, fn, *args)
        except (NotControllerError, EventDropped):
            return None

    @staticmethod
    def _not_controller(names: Iterable[str]) -> dict[str, AdminResult]:
        return {
            name: (ErrorCode.NOT_CONTROLLER, "This is not the correct controller for this cluster.")
            for name in names
        }

    async def _await_created(
        self, results: dict[str, AdminResult], timeout_ms: int, ready: Callable[[str], bool]
    ) -> dict[str, AdminResult]:
        waiting = [name for name, (code, _) in results.items() if code == ErrorCode.NONE]
        if timeout_ms <= 0 or not waiting:
            return results
        start = self.reactor.seconds()
        await self._wait_until(lambda: all(ready(name) for name in waiting), timeout_ms)
        for name in waiting:
            if not ready(name):
                results[name] = (
                    ErrorCode.REQUEST_TIMED_OUT,
                    "Operation timed out before the partitions came online.",
                )
        # Kafka answers once the partitions have leaders in the answering broker's
        # metadata; Mafka also waits (within the timeout) until every live broker has
        # taken the UpdateMetadata that announced them, so a client's next Metadata
        # request sees them on whichever broker it asks.
        mark = self.channel.barrier()
        left_s = timeout_ms / 1000.0 - (self.reactor.seconds() - start)
        while left_s > 0 and not self.channel.delivered(mark) and self.is_active:
            await _sleep(self.reactor, min(0.01, left_s))
            left_s = timeout_ms / 1000.0 - (self.reactor.seconds() - start)
        return results

    async def _create_topics(
        self, topics: list[NewTopic], validate_only: bool, timeout_ms: int
    ) -> dict[str, AdminResult]:
        results = await self._run_admin(
            "CreateTopics", self._process_create_topics, topics, validate_only
        )
        if results is None:
            return self._not_controller(t.name for t in topics)
        if validate_only:
            return results
        return await self._await_created(results, timeout_ms, self._topic_online)

    async def _process_create_topics(
        self, topics: list[NewTopic], validate_only: bool
    ) -> dict[str, AdminResult]:
        if not self.is_active:
            raise NotControllerError()
        counts = Counter(t.name for t in topics)
        racks = self.context.live_broker_racks()
        results: dict[str, AdminResult] = {}
        for topic in topics:
            if counts[topic.name] > 1:
                results[topic.name] = (ErrorCode.INVALID_REQUEST, "Duplicate topic in request.")
                continue
            try:
                if topic.assignment and (
                    topic.num_partitions != -1 or topic.replication_factor != -1
                ):
                    raise InvalidRequestError(
                        "Both numPartitions or replicationFactor and replicasAssignments were set. "
                        "Both cannot be used at the same time."
                    )
                partitions = (
                    self.config.num_partitions
                    if topic.num_partitions == -1
                    else topic.num_partitions
                )
                rf = (
                    self.config.default_replication_factor
                    if topic.replication_factor == -1
                    else topic.replication_factor
                )
                await create_topic_in_zookeeper(
                    self.zk,
                    topic.name,
                    partitions,
                    rf,
                    racks,
                    topic.configs,
                    assignment=topic.assignment or None,
                    validate_only=validate_only,
                    rng=self._rng,
                )
                results[topic.name] = (ErrorCode.NONE, None)
            except KafkaError as exc:
                results[topic.name] = (exc.code, exc.message)
            except Exception as exc:
                log.exception("creating topic %s failed", topic.name)
                results[topic.name] = (ErrorCode.UNKNOWN_SERVER_ERROR, str(exc))
        return results

    # ------------------------------------------------------------------ admin: DeleteTopics

    async def _delete_topics(self, names: list[str], timeout_ms: int) -> dict[str, AdminResult]:
        if not self.config.delete_topic_enable:
            return {
                name: (ErrorCode.TOPIC_DELETION_DISABLED, "Topic deletion is disabled.")
                for name in names
            }
        results = await self._run_admin("DeleteTopics", self._process_delete_topics, names)
        if results is None:
            return self._not_controller(names)
        waiting = [name for name, (code, _) in results.items() if code == ErrorCode.NONE]
        if timeout_ms <= 0 or not waiting:
            return results
        ctx = self.context
        outcome = await self._wait_until(
            lambda: not any(name in ctx.all_topics for name in waiting), timeout_ms
        )
        for name in waiting:
            if outcome is None or name in ctx.all_topics:
                results[name] = (
                    ErrorCode.REQUEST_TIMED_OUT,
                    "Operation timed out before the topic was deleted.",
                )
        return results

    async def _process_delete_topics(self, names: list[str]) -> dict[str, AdminResult]:
        if not self.is_active:
            raise NotControllerError()
        counts = Counter(names)
        results: dict[str, AdminResult] = {}
        for name in names:
            if counts[name] > 1:
                results[name] = (ErrorCode.INVALID_REQUEST, "Duplicate topic in request.")
                continue
            if name not in self.context.all_topics:
                results[name] = (
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    "This server does not host this topic-partition.",
                )
                continue
            try:
                await self.zk.mark_topic_for_deletion(name)
                results[name] = (ErrorCode.NONE, None)
            except KafkaError as exc:
                results[name] = (exc.code, exc.message)
            except Exception as exc:
                log.exception("marking topic %s for deletion failed", name)
                results[name] = (ErrorCode.UNKNOWN_SERVER_ERROR, str(exc))
        return results

    # ------------------------------------------------------------------ admin: CreatePartitions

    async def _create_partitions(
        self, entries: list[NewPartitions], validate_only: bool, timeout_ms: int
    ) -> dict[str, AdminResult]:
        results = await self._run_admin(
            "CreatePartitions", self._process_create_partitions, entries, validate_only
        )
        if results is None:
            return self._not_controller(e.name for e in entries)
        if validate_only:
            return results
        counts = {e.name: e.count for e in entries}
        return await self._await_created(
            results, timeout_ms, lambda name: self._topic_online(name, counts[name])
        )

    async def _process_create_partitions(
        self, entries: list[NewPartitions], validate_only: bool
    ) -> dict[str, AdminResult]:
        if not self.is_active:
            raise NotControllerError()
        ctx = self.context
        counts = Counter(e.name for e in entries)
        results: dict[str, AdminResult] = {}
        for entry in entries:
            if counts[entry.name] > 1:
                results[entry.name] = (ErrorCode.INVALID_REQUEST, "Duplicate topic in request.")
                continue
            if ctx.is_topic_queued_for_deletion(entry.name):
                results[entry.name] = (
                    ErrorCode.INVALID_TOPIC_EXCEPTION,
                    "The topic is queued for deletion.",
                )
                continue
            try:
                got = (
                    await self.zk.get_assignment(entry.name)
                    if is_valid_topic_name(entry.name)
                    else None
                )
                if got is None or not got[0].partitions:
                    raise UnknownTopicOrPartitionError(f"The topic '{entry.name}' does not exist.")
                existing, _ = got
                if existing.is_being_reassigned:
                    raise ReassignmentInProgressError(
                        f"A partition reassignment is in progress for the topic '{entry.name}'."
                    )
                added = new_partitions_assignment(
                    existing.partitions,
                    ctx.live_broker_racks(),
                    entry.count,
                    replica_assignment=entry.assignment,
                )
                if not validate_only:
                    combined = {p: tuple(r) for p, r in existing.partitions.items()}
                    combined.update({p: tuple(r) for p, r in added.items()})
                    await self.zk.set_assignment(
                        entry.name, TopicAssignment(combined, topic_id=existing.topic_id)
                    )
                results[entry.name] = (ErrorCode.NONE, None)
            except KafkaError as exc:
                results[entry.name] = (exc.code, exc.message)
            except Exception as exc:
                log.exception("creating partitions of %s failed", entry.name)
                results[entry.name] = (ErrorCode.UNKNOWN_SERVER_ERROR, str(exc))
        return results

    # ------------------------------------------------------------------ admin: ControlledShutdown

    async def _controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> tuple[ErrorCode, list[TopicPartition]]:
        result = await self._run_admin(
            "ControlledShutdown", self._process_controlled_shutdown, broker_id, broker_epoch
        )
        if result is None:
            return ErrorCode.STALE_CONTROLLER_EPOCH, []
        return result

    async def _process_controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> tuple[ErrorCode, list[TopicPartition]]:
        """KC ``doControlledShutdown``."""
        if not self.is_active:
            return ErrorCode.STALE_CONTROLLER_EPOCH, []
        ctx = self.context
        if broker_id not in ctx.live_or_shutting_down_broker_ids:
            return ErrorCode.BROKER_NOT_AVAILABLE, []
        if broker_epoch != -1 and broker_epoch < ctx.broker_epoch(broker_id):
            return ErrorCode.STALE_BROKER_EPOCH, []
        ctx.shutting_down.add(broker_id)
        to_act = [
            tp
            for tp in ctx.partitions_on_broker(broker_id)
            if len(ctx.partition_replicas(tp)) > 1
            and tp in ctx.leadership
            and not ctx.is_topic_queued_for_deletion(tp[0])
        ]
        led = [tp for tp in to_act if ctx.leadership[tp].leader == broker_id]
        followed = [tp for tp in to_act if ctx.leadership[tp].leader != broker_id]
        await self._partition_state_changes(led, _P.OnlinePartition, _Strategy.CONTROLLED_SHUTDOWN)
        if followed:
            self._batch.new_batch()
            for tp in followed:
                self._batch.add_stop_replica([broker_id], tp, delete=False)
            self._batch.send_requests(ctx.epoch)
        await self._replica_state_changes([(tp, broker_id) for tp in followed], _R.OfflineReplica)
        remaining = [
            tp
            for tp, state in sorted(ctx.leadership.items())
            if state.leader == broker_id
            and len(ctx.partition_replicas(tp)) > 1
            and not ctx.is_topic_queued_for_deletion(tp[0])
        ]
        return ErrorCode.NONE, remaining
