"""The controller's admin operations: CreateTopics, DeleteTopics, CreatePartitions, ControlledShutdown.

Two halves:

* the **admin path** that writes a new topic's znodes (Kafka 2.8's
  ``ZkAdminManager`` / ``AdminZkClient``): :func:`create_topic_in_zookeeper`
  and :func:`validate_topic_configs`, usable from any broker (a
  non-controller broker's auto-create writes the znodes itself); they live
  in :mod:`mafka.controller.topic_creation` and are re-exported here;
* :class:`ControllerAdmin`, the controller's entry points for the broker's
  admin handlers (the :class:`~mafka.controller.controller.Controller`
  delegates to it).  Each runs its ZooKeeper work as a controller event,
  answers ``NOT_CONTROLLER`` when this broker is not the active controller,
  and (with a timeout) waits until the outcome is visible in the
  controller's context (partitions online, topic gone), else
  ``REQUEST_TIMED_OUT``.

:class:`ControllerAdmin` owns those entry points and their events; it holds
no state.  It only sequences: it uses the core's event plumbing
(:meth:`~mafka.controller.core.ControllerCore.run_admin`, the admin waiters),
the state machines it is given (ControlledShutdown) and the core's context.
"""

from __future__ import annotations

import logging
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, NamedTuple

from twisted.internet.defer import Deferred, DeferredSemaphore, gatherResults

from mafka.controller.assignment import new_partitions_assignment
from mafka.controller.core import ControllerCore
from mafka.controller.election import LeaderElectionStrategy
from mafka.controller.partition_state_machine import PartitionStateMachine
from mafka.controller.replica_state_machine import ReplicaStateMachine
from mafka.controller.states import PartitionState, ReplicaState
from mafka.controller.topic_creation import create_topic_in_zookeeper, validate_topic_configs
from mafka.coordination.znodes import TopicAssignment
from mafka.errors import (
    ErrorCode,
    InvalidRequestError,
    KafkaError,
    NotControllerError,
    ReassignmentInProgressError,
    UnknownTopicOrPartitionError,
)
from mafka.topics import TopicPartitionTuple, is_valid_topic_name

__all__ = [
    "AdminResult",
    "ControllerAdmin",
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

#: Topics of one CreateTopics request whose checks and znode writes are in flight at once.
CREATE_TOPICS_IN_FLIGHT = 256


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
    # Kafka's name for the field, which shadows tuple.count (nothing here calls that method).
    count: int  # type: ignore[assignment]
    assignment: Sequence[Sequence[int]] | None = None


def _sleep(reactor: Any, seconds: float) -> Deferred[None]:
    d: Deferred[None] = Deferred()
    reactor.callLater(seconds, d.callback, None)
    return d


# --------------------------------------------------------------------------- the controller's entry points


class ControllerAdmin:
    """CreateTopics / DeleteTopics / CreatePartitions / ControlledShutdown on the controller.

    Args:
        core: The controller's shared core.
        replica_state_machine: Takes a shutting-down broker's follower replicas offline.
        partition_state_machine: Moves leadership off a shutting-down broker.
    """

    def __init__(
        self,
        core: ControllerCore,
        replica_state_machine: ReplicaStateMachine,
        partition_state_machine: PartitionStateMachine,
    ) -> None:
        self._core = core
        self._rsm = replica_state_machine
        self._psm = partition_state_machine

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
    ) -> Deferred[tuple[ErrorCode, list[TopicPartitionTuple]]]:
        """ControlledShutdown (KC ``doControlledShutdown``): move leadership off *broker_id*.

        Returns:
            (error, partitions it still leads): STALE_CONTROLLER_EPOCH when not
            the controller, STALE_BROKER_EPOCH for an old epoch,
            BROKER_NOT_AVAILABLE for an unknown broker.
        """
        return Deferred.fromCoroutine(self._controlled_shutdown(broker_id, broker_epoch))

    def _topic_online(self, topic: str, count: int | None = None) -> bool:
        ctx = self._core.context
        partitions = ctx.partitions_for_topic(topic)
        if count is not None:
            if len(partitions) < count:
                return False
            partitions = [(topic, p) for p in range(count)]
        return bool(partitions) and all(ctx.is_partition_online(tp) for tp in partitions)

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
        start = self._core.reactor.seconds()
        await self._core.waiters.wait_until(lambda: all(ready(name) for name in waiting), timeout_ms)
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
        mark = self._core.channel.barrier()
        left_s = timeout_ms / 1000.0 - (self._core.reactor.seconds() - start)
        while left_s > 0 and not self._core.channel.delivered(mark) and self._core.is_active:
            await _sleep(self._core.reactor, min(0.01, left_s))
            left_s = timeout_ms / 1000.0 - (self._core.reactor.seconds() - start)
        return results

    async def _create_topics(
        self, topics: list[NewTopic], validate_only: bool, timeout_ms: int
    ) -> dict[str, AdminResult]:
        results = await self._core.run_admin(
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
        """``ZkAdminManager.createTopics``: every topic's checks and znodes, overlapping.

        Kafka creates the topics of a request one after the other; here topics
        whose names differ even once ``.`` and ``_`` are treated alike run at
        once (their checks and writes cannot see each other), so a request of
        hundreds of topics costs a few ZooKeeper round trips rather than
        several per topic.  Names that collide so run one after the other in
        request order, so the later one is refused as Kafka refuses it.
        """
        if not self._core.is_active:
            raise NotControllerError()
        counts = Counter(t.name for t in topics)
        racks = self._core.context.live_broker_racks()
        results: dict[str, AdminResult] = {}
        chains: dict[str, list[NewTopic]] = {}
        for topic in topics:
            if counts[topic.name] > 1:
                results[topic.name] = (ErrorCode.INVALID_REQUEST, "Duplicate topic in request.")
            else:
                chains.setdefault(topic.name.replace(".", "_"), []).append(topic)
        limit = DeferredSemaphore(CREATE_TOPICS_IN_FLIGHT)

        async def create_chain(chain: list[NewTopic]) -> None:
            for topic in chain:
                results[topic.name] = await self._create_topic(topic, racks, validate_only)

        await gatherResults([limit.run(create_chain, chain) for chain in chains.values()], consumeErrors=True)
        return {name: results[name] for name in dict.fromkeys(t.name for t in topics)}

    async def _create_topic(
        self, topic: NewTopic, racks: dict[int, str | None], validate_only: bool
    ) -> AdminResult:
        try:
            if topic.assignment and (topic.num_partitions != -1 or topic.replication_factor != -1):
                raise InvalidRequestError(
                    "Both numPartitions or replicationFactor and replicasAssignments were set. "
                    "Both cannot be used at the same time."
                )
            partitions = (
                self._core.config.num_partitions if topic.num_partitions == -1 else topic.num_partitions
            )
            rf = (
                self._core.config.default_replication_factor
                if topic.replication_factor == -1
                else topic.replication_factor
            )
            await create_topic_in_zookeeper(
                self._core.zk,
                topic.name,
                partitions,
                rf,
                racks,
                topic.configs,
                assignment=topic.assignment or None,
                validate_only=validate_only,
                rng=self._core.rng,
            )
            return ErrorCode.NONE, None
        except KafkaError as exc:
            return exc.code, exc.message
        except Exception as exc:
            log.exception("creating topic %s failed", topic.name)
            return ErrorCode.UNKNOWN_SERVER_ERROR, str(exc)

    async def _delete_topics(self, names: list[str], timeout_ms: int) -> dict[str, AdminResult]:
        if not self._core.config.delete_topic_enable:
            return {
                name: (ErrorCode.TOPIC_DELETION_DISABLED, "Topic deletion is disabled.")
                for name in names
            }
        results = await self._core.run_admin("DeleteTopics", self._process_delete_topics, names)
        if results is None:
            return self._not_controller(names)
        waiting = [name for name, (code, _) in results.items() if code == ErrorCode.NONE]
        if timeout_ms <= 0 or not waiting:
            return results
        ctx = self._core.context
        outcome = await self._core.waiters.wait_until(
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
        if not self._core.is_active:
            raise NotControllerError()
        counts = Counter(names)
        results: dict[str, AdminResult] = {}
        for name in names:
            if counts[name] > 1:
                results[name] = (ErrorCode.INVALID_REQUEST, "Duplicate topic in request.")
                continue
            if name not in self._core.context.all_topics:
                results[name] = (
                    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                    "This server does not host this topic-partition.",
                )
                continue
            try:
                await self._core.zk.mark_topic_for_deletion(name)
                results[name] = (ErrorCode.NONE, None)
            except KafkaError as exc:
                results[name] = (exc.code, exc.message)
            except Exception as exc:
                log.exception("marking topic %s for deletion failed", name)
                results[name] = (ErrorCode.UNKNOWN_SERVER_ERROR, str(exc))
        return results

    async def _create_partitions(
        self, entries: list[NewPartitions], validate_only: bool, timeout_ms: int
    ) -> dict[str, AdminResult]:
        results = await self._core.run_admin(
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
        if not self._core.is_active:
            raise NotControllerError()
        ctx = self._core.context
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
                    await self._core.zk.get_assignment(entry.name)
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
                    await self._core.zk.set_assignment(
                        entry.name, TopicAssignment(combined, topic_id=existing.topic_id)
                    )
                results[entry.name] = (ErrorCode.NONE, None)
            except KafkaError as exc:
                results[entry.name] = (exc.code, exc.message)
            except Exception as exc:
                log.exception("creating partitions of %s failed", entry.name)
                results[entry.name] = (ErrorCode.UNKNOWN_SERVER_ERROR, str(exc))
        return results

    async def _controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> tuple[ErrorCode, list[TopicPartitionTuple]]:
        result = await self._core.run_admin(
            "ControlledShutdown", self._process_controlled_shutdown, broker_id, broker_epoch
        )
        if result is None:
            return ErrorCode.STALE_CONTROLLER_EPOCH, []
        return result

    async def _process_controlled_shutdown(
        self, broker_id: int, broker_epoch: int
    ) -> tuple[ErrorCode, list[TopicPartitionTuple]]:
        """KC ``doControlledShutdown``."""
        if not self._core.is_active:
            return ErrorCode.STALE_CONTROLLER_EPOCH, []
        ctx = self._core.context
        if broker_id not in ctx.live_or_shutting_down_broker_ids:
            return ErrorCode.BROKER_NOT_AVAILABLE, []
        if broker_epoch != -1 and broker_epoch < ctx.broker_epoch(broker_id):
            return ErrorCode.STALE_BROKER_EPOCH, []
        ctx.shutting_down.add(broker_id)
        started = self._core.reactor.seconds()
        to_act = [
            tp
            for tp in ctx.partitions_on_broker(broker_id)
            if len(ctx.partition_replicas(tp)) > 1
            and tp in ctx.leadership
            and not ctx.is_topic_queued_for_deletion(tp[0])
        ]
        led = [tp for tp in to_act if ctx.leadership[tp].leader == broker_id]
        followed = [tp for tp in to_act if ctx.leadership[tp].leader != broker_id]
        with self._core.bulk_state_changes():  # one LeaderAndIsr and one StopReplica per broker
            await self._psm.handle_state_changes(led, _P.OnlinePartition, _Strategy.CONTROLLED_SHUTDOWN)
            if followed:
                self._core.batch.new_batch()
                for tp in followed:
                    self._core.batch.add_stop_replica([broker_id], tp, delete=False)
                self._core.batch.send_requests(ctx.epoch)
            await self._rsm.handle_state_changes([(tp, broker_id) for tp in followed], _R.OfflineReplica)
        remaining = [
            tp
            for tp, state in sorted(ctx.leadership.items())
            if state.leader == broker_id
            and len(ctx.partition_replicas(tp)) > 1
            and not ctx.is_topic_queued_for_deletion(tp[0])
        ]
        log.info(
            "controller %d: controlled shutdown of broker %d: leadership of %d partitions moved "
            "(%d still led), out of %d ISRs, in %.2f s",
            self._core.broker_id,
            broker_id,
            len(led) - len(remaining),
            len(remaining),
            len(followed),
            self._core.reactor.seconds() - started,
        )
        return ErrorCode.NONE, remaining
