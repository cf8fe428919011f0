"""The controller runtime: Kafka 2.8's ``KafkaController`` (ZooKeeper mode) on a Twisted reactor.

One :class:`Controller` runs in every broker.  At most one is *active*: the one
that created the ephemeral ``/controller`` znode and bumped
``/controller_epoch`` (``zk-controller-replication.md`` §2).  The active one
loads the cluster into a :class:`~mafka.controller.context.ControllerContext`,
watches ZooKeeper and drives the partition and replica state machines
(§3.1–3.4): it elects leaders, shrinks ISRs of dead replicas, creates the
state znodes of new partitions, deletes topics, and tells brokers through
LeaderAndIsr / UpdateMetadata / StopReplica
(:mod:`mafka.controller.channel`).

Contract:

* **Serialized.**  Everything the controller does — ZooKeeper watch
  reactions, session changes, admin requests, broker responses that matter
  (StopReplica for deletion) — is an event of one
  :class:`~mafka.controller.events.ControllerEventQueue`, processed one at a
  time in order; an event may wait on ZooKeeper, the next one waits for it.
* **Fenced.**  Every controller write to ZooKeeper is epoch-checked
  (``KafkaZkClient``'s ``epoch_zk_version`` arguments).  A
  :class:`~mafka.coordination.kafka_zk.ControllerMovedError` anywhere makes
  the controller re-read ``/controller`` and resign (``NOT_CONTROLLER`` for
  an admin request in flight).  A ZooKeeper session expiry resigns at once
  (queued events are dropped); the new session re-registers the broker (if a
  ``reregister`` routine was given) and re-elects.
* **Decisions are pure.**  Leader choice: :mod:`mafka.controller.election`;
  legal state moves: :mod:`mafka.controller.states`; replica placement:
  :mod:`mafka.controller.assignment`; broker-change classification and ISR
  shrink: :mod:`mafka.controller.context`.  This module sequences them.
* **Time** comes from the injected reactor (``IReactorTime``): tests drive it
  with ``twisted.internet.task.Clock``.

Admin entry points (for the broker's CreateTopics / DeleteTopics /
CreatePartitions / ControlledShutdown handlers) return Deferreds of per-topic
``(ErrorCode, message | None)``; they answer ``NOT_CONTROLLER`` when this
broker is not the active controller.  As in Kafka 2.8 the topic znodes are
written by the admin path (:func:`create_topic_in_zookeeper`, also used by a
non-controller broker's auto-create); the controller then sees them through
its watches, and the request waits until the partitions are online (or its
timeout: ``REQUEST_TIMED_OUT``).

The class is assembled from mixins, one module per concern: this module
(election, failover, state machines, brokers, topics, ISR notifications),
:mod:`mafka.controller.admin` (CreateTopics, DeleteTopics, CreatePartitions,
ControlledShutdown), :mod:`mafka.controller.topic_deletion`,
:mod:`mafka.controller.leader_election` (ElectLeaders,
``/admin/preferred_replica_election``, auto rebalance) and
:mod:`mafka.controller.reassignment` (AlterPartitionReassignments,
ListPartitionReassignments, ``/admin/reassign_partitions``).  Counters are
in :attr:`Controller.stats` (:class:`~mafka.controller.stats.ControllerStats`).

Not implemented: log-dir failure events, feature-version negotiation beyond
writing an enabled ``/feature``, replica moves between log dirs.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from twisted.internet import task
from twisted.internet.defer import Deferred, succeed
from twisted.python.failure import Failure

from mafka.controller.admin import (
    AdminMixin,
    AdminResult,
    NewPartitions,
    NewTopic,
    create_topic_in_zookeeper,
    validate_topic_configs,
)
from mafka.controller.channel import (
    ControllerBrokerRequestBatch,
    ControllerChannelManager,
    leader_and_isr_partition_errors,
)
from mafka.controller.context import (
    ControllerContext,
    PartitionReplica,
    classify_broker_change,
    from_election_state,
    remove_replica_from_isr,
    to_election_state,
)
from mafka.controller.election import (
    LeaderElectionStrategy,
    initial_leader_and_isr,
    leader_for_controlled_shutdown,
    leader_for_offline,
    leader_for_preferred_replica,
    leader_for_reassign,
)
from mafka.controller.events import ControllerEventQueue, EventDropped
from mafka.controller.leader_election import LeaderElectionMixin
from mafka.controller.reassignment import ReassignmentMixin
from mafka.controller.states import PartitionState, ReplicaState, StateChangeFailed
from mafka.controller.stats import ControllerStats
from mafka.controller.topic_deletion import TopicDeletionMixin
from mafka.coordination.kafka_zk import ControllerMovedError, KafkaZkClient
from mafka.coordination.store import WatchHandle
from mafka.coordination.znodes import (
    BrokerRegistration,
    FeatureZNode,
    LeaderIsrAndControllerEpoch,
    TopicAssignment,
    TopicPartition,
)
from mafka.errors import ErrorCode, NotControllerError

__all__ = [
    "AdminResult",
    "Controller",
    "ControllerConfig",
    "NewPartitions",
    "NewTopic",
    "StateChangeFailed",
    "controller_for_server",
    "create_topic_in_zookeeper",
    "validate_topic_configs",
]

log = logging.getLogger("mafka.controller")

_P = PartitionState
_R = ReplicaState
_Strategy = LeaderElectionStrategy

#: Conditional state writes that hit a BadVersion are re-read and retried this many times.
STATE_WRITE_ATTEMPTS = 10

#: Kafka schedules the first auto-rebalance check 5 s after failover.
AUTO_REBALANCE_FIRST_DELAY_S = 5.0


# --------------------------------------------------------------------------- configuration


def _as_bool(value: Any) -> bool:
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() == "true"


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    """The broker settings the controller obeys (Kafka names in the field docs).

    Attributes:
        unclean_leader_election_enable: ``unclean.leader.election.enable``
            (the default for topics without an override).
        delete_topic_enable: ``delete.topic.enable``.
        num_partitions: ``num.partitions`` (CreateTopics with -1).
        default_replication_factor: ``default.replication.factor`` (CreateTopics with -1).
        auto_leader_rebalance_enable: ``auto.leader.rebalance.enable``.
        leader_imbalance_per_broker_percentage: ``leader.imbalance.per.broker.percentage``.
        leader_imbalance_check_interval_seconds: ``leader.imbalance.check.interval.seconds``.
    """

    unclean_leader_election_enable: bool = False
    delete_topic_enable: bool = True
    num_partitions: int = 1
    default_replication_factor: int = 1
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_per_broker_percentage: int = 10
    leader_imbalance_check_interval_seconds: int = 300

    _KEYS = {
        "unclean.leader.election.enable": "unclean_leader_election_enable",
        "delete.topic.enable": "delete_topic_enable",
        "num.partitions": "num_partitions",
        "default.replication.factor": "default_replication_factor",
        "auto.leader.rebalance.enable": "auto_leader_rebalance_enable",
        "leader.imbalance.per.broker.percentage": "leader_imbalance_per_broker_percentage",
        "leader.imbalance.check.interval.seconds": "leader_imbalance_check_interval_seconds",
    }

    @classmethod
    def of(cls, config: Any = None) -> ControllerConfig:
        """A config from None (defaults), a ControllerConfig, a mapping of Kafka
        names (``{"delete.topic.enable": "false"}``) or any object with the
        attributes above (e.g. :class:`mafka.broker.config.BrokerConfig`)."""
        if config is None:
            return cls()
        if isinstance(config, ControllerConfig):
            return config
        values: dict[str, Any] = {}
        if isinstance(config, Mapping):
            for key, attr in cls._KEYS.items():
                for name in (key, attr):
                    if name in config:
                        values[attr] = config[name]
        else:
            for attr in cls._KEYS.values():
                if hasattr(config, attr):
                    values[attr] = getattr(config, attr)
        return cls(
            unclean_leader_election_enable=_as_bool(
                values.get("unclean_leader_election_enable", False)
            ),
            delete_topic_enable=_as_bool(values.get("delete_topic_enable", True)),
            num_partitions=int(values.get("num_partitions", 1)),
            default_replication_factor=int(values.get("default_replication_factor", 1)),
            auto_leader_rebalance_enable=_as_bool(values.get("auto_leader_rebalance_enable", True)),
            leader_imbalance_per_broker_percentage=int(
                values.get("leader_imbalance_per_broker_percentage", 10)
            ),
            leader_imbalance_check_interval_seconds=int(
                values.get("leader_imbalance_check_interval_seconds", 300)
            ),
        )


# --------------------------------------------------------------------------- the controller


@dataclass(eq=False)
class _Waiter:
    predicate: Callable[[], bool]
    deferred: Deferred[bool | None]
    timer: Any = None


class _SessionListener:
    """Adapts the store's session callbacks to controller events."""

    def __init__(self, controller: Controller) -> None:
        self._controller = controller

    def session_lost(self) -> None:
        log.info("controller %d: ZooKeeper connection lost", self._controller.broker_id)

    def session_expired(self) -> None:
        self._controller._on_session_expired()

    def session_established(self) -> None:
        self._controller._on_session_established()


class Controller(AdminMixin, TopicDeletionMixin, LeaderElectionMixin, ReassignmentMixin):
    """Kafka's ``KafkaController`` for one broker.

    Args:
        broker_id: This broker's id.
        zk: This broker's KafkaZkClient (its ZooKeeper session).
        reactor: ``IReactorTime`` (and ``IReactorTCP`` for the default channel).
        channel: The :class:`~mafka.controller.channel.ControllerChannelManager`
            to use; by default one with real connections (``connection_factory``
            and ``listener_name`` are passed to it).
        config: A :class:`ControllerConfig`, a mapping of Kafka names, or a
            broker config object (see :meth:`ControllerConfig.of`).
        reregister: Called (and awaited) when a new ZooKeeper session is
            established after an expiry, before re-electing — the broker's
            own routine that re-creates ``/brokers/ids/<id>`` and records the
            new broker epoch (Kafka's ``RegisterBrokerAndReelect``).
        rng: Randomness for replica assignment (tests pin it).
    """

    def __init__(
        self,
        broker_id: int,
        zk: KafkaZkClient,
        reactor: Any,
        *,
        channel: ControllerChannelManager | None = None,
        config: Any = None,
        connection_factory: Any = None,
        listener_name: str | None = None,
        reregister: Callable[[], Awaitable[Any] | Deferred[Any] | None] | None = None,
        rng: random.Random | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.zk = zk
        self.reactor = reactor
        self.config = ControllerConfig.of(config)
        self.context = ControllerContext()
        self.channel = (
            channel
            if channel is not None
            else ControllerChannelManager(
                reactor,
                broker_id,
                connection_factory=connection_factory,
                listener_name=listener_name,
            )
        )
        self._batch = ControllerBrokerRequestBatch(
            broker_id,
            self.context,
            self.channel,
            on_stop_replica_response=self._on_stop_replica_response,
            on_leader_and_isr_response=self._on_leader_and_isr_response,
        )
        self._events = ControllerEventQueue(reactor, after_event=self._after_event)
        self._reregister = reregister
        self._rng = rng
        self._active_controller_id = -1
        self._controller_watch: WatchHandle | None = None
        self._watches: list[WatchHandle] = []
        self._topic_watches: dict[str, WatchHandle] = {}
        self._broker_watches: dict[int, WatchHandle] = {}
        self._waiters: list[_Waiter] = []
        self._listener = _SessionListener(self)
        #: Kafka's ``ControllerStats`` (``UncleanLeaderElectionsPerSec`` …).
        self.stats = ControllerStats()
        self._auto_rebalance_call: Any = None
        self._reassignment_watches: dict[TopicPartition, WatchHandle] = {}
        self._started = False
        self._stopped = False
        #: Seconds to wait before giving up the controllership after a failed failover.
        self.failover_retry_backoff_s = 1.0

    # ------------------------------------------------------------------ public state

    @property
    def is_active(self) -> bool:
        """True while this broker is the controller (Kafka's ``isActive``)."""
        return self._active_controller_id == self.broker_id

    @property
    def epoch(self) -> int:
        """The controller epoch this broker last won (0 before any)."""
        return self.context.epoch

    @property
    def active_controller_id(self) -> int:
        """The controller's broker id as last seen in ``/controller`` (-1 if none/unknown)."""
        return self._active_controller_id

    @property
    def events(self) -> ControllerEventQueue:
        """The event queue (for inspection)."""
        return self._events

    # ------------------------------------------------------------------ lifecycle

    def start(self) -> Deferred[None]:
        """Watches ``/controller`` and tries to become the controller.

        Fires once the first election (and failover, if won) has been processed.
        The broker must have started its store (and registered itself) first.
        """
        if self._started:
            return succeed(None)
        self._started = True
        self.zk.store.add_session_listener(self._listener)
        self._controller_watch = self.zk.watch_controller(self._on_controller_znode)
        d = self._enqueue("Startup", self._elect)
        d.addErrback(self._log_event_failure, "Startup")
        return d.addCallback(lambda _: None)

    def stop(self) -> Deferred[None]:
        """Resigns (giving ``/controller`` up if held) and stops processing events."""
        if self._stopped:
            return succeed(None)
        self._stopped = True
        if self._controller_watch is not None:
            self._controller_watch.cancel()
            self._controller_watch = None
        d = self._events.clear_and_put("Shutdown", self._process_shutdown)
        d.addErrback(self._log_event_failure, "Shutdown")

        def closed(_: Any) -> None:
            self._events.close()
            self._fail_waiters()

        return d.addBoth(closed)

    # ------------------------------------------------------------------ event plumbing

    def _enqueue(self, name: str, fn: Callable[..., Awaitable[Any]], *args: Any) -> Deferred[Any]:
        async def run() -> Any:
            try:
                return await fn(*args)
            except ControllerMovedError as exc:
                log.info(
                    "controller %d: controller moved while processing %s: %s",
                    self.broker_id,
                    name,
                    exc,
                )
                try:
                    await self._handle_controller_moved()
                except Exception:
                    log.exception(
                        "controller %d: handling the controller move failed", self.broker_id
                    )
                raise NotControllerError(f"controller moved while processing {name}") from exc

        return self._events.put(name, run)

    def _fire(self, name: str, fn: Callable[..., Awaitable[Any]], *args: Any) -> None:
        if self._stopped:
            return
        self._enqueue(name, fn, *args).addErrback(self._log_event_failure, name)

    def _log_event_failure(self, failure: Failure, name: str) -> None:
        if failure.check(EventDropped, NotControllerError):
            log.debug("controller %d: %s: %s", self.broker_id, name, failure.getErrorMessage())
            return None
        log.error(
            "controller %d: error processing %s: %s",
            self.broker_id,
            name,
            failure.getTraceback(),
        )
        return None

    def _after_event(self, name: str) -> None:
        self._check_waiters()

    def _on_controller_znode(self) -> None:
        self._fire("ControllerChange", self._process_controller_change)

    def _on_session_expired(self) -> None:
        if self._stopped or not self._started:
            return
        log.info("controller %d: ZooKeeper session expired", self.broker_id)
        d = self._events.clear_and_put("Expire", self._process_expire)
        d.addErrback(self._log_event_failure, "Expire")

    def _on_session_established(self) -> None:
        if self._stopped or not self._started:
            return
        self._fire("RegisterBrokerAndReelect", self._process_register_and_reelect)

    # ------------------------------------------------------------------ waiting for admin outcomes

    def _wait_until(self, predicate: Callable[[], bool], timeout_ms: int) -> Deferred[bool | None]:
        """Fires True once *predicate* holds (checked after every event), False at the
        timeout, None if the controller resigns first."""
        d: Deferred[bool | None] = Deferred()
        if predicate():
            d.callback(True)
            return d
        waiter = _Waiter(predicate, d)
        waiter.timer = self.reactor.callLater(
            max(timeout_ms, 0) / 1000.0, self._expire_waiter, waiter
        )
        self._waiters.append(waiter)
        return d

    def _expire_waiter(self, waiter: _Waiter) -> None:
        if waiter in self._waiters:
            self._waiters.remove(waiter)
            waiter.deferred.callback(False)

    def _check_waiters(self) -> None:
        for waiter in list(self._waiters):
            try:
                done = waiter.predicate()
            except Exception:
                log.exception("admin waiter predicate failed")
                done = False
            if done and waiter in self._waiters:
                self._waiters.remove(waiter)
                if waiter.timer is not None and waiter.timer.active():
                    waiter.timer.cancel()
                waiter.deferred.callback(True)

    def _fail_waiters(self) -> None:
        waiters, self._waiters = self._waiters, []
        for waiter in waiters:
            if waiter.timer is not None and waiter.timer.active():
                waiter.timer.cancel()
            waiter.deferred.callback(None)

    # ------------------------------------------------------------------ election and resignation

    async def _elect(self) -> None:
        """KC ``elect``."""
        controller_id = await self.zk.get_controller_id()
        if controller_id is not None:
            if controller_id == self.broker_id and not self.is_active:
                # A registration of ours we never took over (e.g. an older session of
                # this broker id): give it up so a proper election happens.
                log.warning(
                    "controller %d: /controller names us but we are not active; deleting it",
                    self.broker_id,
                )
                self._active_controller_id = -1
                await self.zk.delete_controller(-1)
                return
            self._active_controller_id = controller_id
            return
        now_ms = int(self.reactor.seconds() * 1000)
        election = await self.zk.elect_controller(self.broker_id, now_ms)
        if not election.won:
            current = await self.zk.get_controller_id()
            self._active_controller_id = -1 if current is None else current
            log.info("controller %d: lost the election to %s", self.broker_id, current)
            return
        self.context.epoch = election.controller_epoch
        self.context.epoch_zk_version = election.epoch_zk_version
        self._active_controller_id = self.broker_id
        log.info(
            "controller %d: elected controller with epoch %d (zkVersion %d)",
            self.broker_id,
            election.controller_epoch,
            election.epoch_zk_version,
        )
        try:
            await self._on_controller_failover()
        except ControllerMovedError:
            raise
        except Exception:
            log.exception("controller %d: failover failed; moving the controller", self.broker_id)
            await self._trigger_controller_move()

    async def _trigger_controller_move(self) -> None:
        current = await self.zk.get_controller_id()
        self._active_controller_id = -1 if current is None else current
        if not self.is_active:
            return
        expected = self.context.epoch_zk_version
        self._active_controller_id = -1
        self._on_controller_resignation()
        await task.deferLater(self.reactor, self.failover_retry_backoff_s, lambda: None)
        try:
            await self.zk.delete_controller(expected)
        except ControllerMovedError:
            log.warning("controller %d: controller already moved", self.broker_id)

    async def _maybe_resign(self, controller_id: int) -> None:
        was_active = self.is_active
        if controller_id == self.broker_id and not was_active:
            # /controller names us but we did not win it in this term (an older
            # session's registration): not active; _elect() hands it over.
            controller_id = -1
        self._active_controller_id = controller_id
        if was_active and not self.is_active:
            log.info(
                "controller %d: resigning; the controller is now %d", self.broker_id, controller_id
            )
            self._on_controller_resignation()

    async def _handle_controller_moved(self) -> None:
        was_active = self.is_active
        current = await self.zk.get_controller_id()
        if current == self.broker_id:
            # Named as controller, yet fenced: our epoch is stale. Hand /controller over.
            self._active_controller_id = -1
            if was_active:
                self._on_controller_resignation()
            await self.zk.delete_controller(-1)
            return
        self._active_controller_id = -1 if current is None else current
        if was_active:
            log.info("controller %d: resigning after a fenced write", self.broker_id)
            self._on_controller_resignation()
        if current is None:
            await self._elect()

    def _on_controller_resignation(self) -> None:
        """KC ``onControllerResignation``: unwatch, close connections, forget the context."""
        for watch in self._watches:
            watch.cancel()
        self._watches = []
        for topic in list(self._topic_watches):
            self._unwatch_topic(topic)
        for broker_id in list(self._broker_watches):
            self._unwatch_broker(broker_id)
        self._cancel_auto_rebalance()
        self._unwatch_all_reassignments()
        self._batch.clear()
        self.channel.shutdown()
        self.context.reset()
        self._fail_waiters()

    async def _process_controller_change(self) -> None:
        """ControllerChange / Reelect: resign if it moved away, elect if it is gone."""
        controller_id = await self.zk.get_controller_id()
        await self._maybe_resign(-1 if controller_id is None else controller_id)
        if controller_id is None or (controller_id == self.broker_id and not self.is_active):
            await self._elect()

    async def _process_expire(self) -> None:
        self._active_controller_id = -1
        self._on_controller_resignation()

    async def _process_register_and_reelect(self) -> None:
        if self._reregister is not None:
            try:
                result = self._reregister()
                if result is not None:
                    await result
            except Exception:
                log.exception("controller %d: re-registering the broker failed", self.broker_id)
        controller_id = await self.zk.get_controller_id()
        await self._maybe_resign(-1 if controller_id is None else controller_id)
        await self._elect()

    async def _process_shutdown(self) -> None:
        was_active = self.is_active
        expected = self.context.epoch_zk_version
        self._active_controller_id = -1
        self._on_controller_resignation()
        if was_active:
            try:
                await self.zk.delete_controller(expected)
            except Exception as exc:
                log.info(
                    "controller %d: could not delete /controller at shutdown: %s",
                    self.broker_id,
                    exc,
                )

    # ------------------------------------------------------------------ failover

    async def _on_controller_failover(self) -> None:
        """KC ``onControllerFailover`` (§3.1)."""
        ctx = self.context
        await self._maybe_enable_features()
        self._watches = [
            self.zk.watch_broker_ids(
                lambda: self._fire("BrokerChange", self._process_broker_change)
            ),
            self.zk.watch_topics(lambda: self._fire("TopicChange", self._process_topic_change)),
            self.zk.watch_topic_deletions(
                lambda: self._fire("TopicDeletion", self._process_topic_deletion)
            ),
            self.zk.watch_isr_change_notifications(
                lambda: self._fire("IsrChangeNotification", self._process_isr_change_notification)
            ),
            self.zk.watch_log_dir_event_notifications(
                lambda: self._fire("LogDirEventNotification", self._process_log_dir_event_notification)
            ),
            self.zk.watch_preferred_replica_election(
                lambda: self._fire(
                    "ReplicaLeaderElection(zk)", self._process_zk_preferred_replica_election
                )
            ),
            self.zk.watch_partition_reassignment(
                lambda: self._fire(
                    "ZkPartitionReassignment", self._process_zk_partition_reassignment
                )
            ),
        ]
        await self.zk.delete_log_dir_event_notifications(None, ctx.epoch_zk_version)
        await self.zk.delete_isr_change_notifications(None, ctx.epoch_zk_version)
        await self._initialize_context()
        to_delete = set(await self.zk.get_topic_deletions())
        offline_topics = {
            topic
            for topic in ctx.all_topics
            if any(not ctx.is_replica_online(r, tp) for tp, r in ctx.replicas_for_topic(topic))
        }
        offline_topics |= {tp[0] for tp in ctx.partitions_being_reassigned}
        if self.config.delete_topic_enable:
            ctx.queue_topic_deletion(to_delete)
            ctx.topics_ineligible_for_deletion |= offline_topics & ctx.topics_to_be_deleted
        elif to_delete:
            await self.zk.delete_topic_deletions(sorted(to_delete), ctx.epoch_zk_version)
        # Brokers must learn the live brokers before any LeaderAndIsr.
        self._send_update_metadata(ctx.live_or_shutting_down_broker_ids, ())
        await self._replica_state_machine_startup()
        await self._partition_state_machine_startup()
        log.info("controller %d: ready as controller with epoch %d", self.broker_id, ctx.epoch)
        await self._initialize_partition_reassignments()
        await self._resume_deletions()
        await self._process_zk_preferred_replica_election()
        if self.config.auto_leader_rebalance_enable:
            self._schedule_auto_rebalance(AUTO_REBALANCE_FIRST_DELAY_S)

    async def _maybe_enable_features(self) -> None:
        try:
            current = await self.zk.get_feature()
            if current is None or current[0].status != FeatureZNode.ENABLED:
                await self.zk.set_feature(FeatureZNode(FeatureZNode.ENABLED, {}))
        except ControllerMovedError:
            raise
        except Exception:
            log.exception("controller %d: could not write /feature", self.broker_id)

    async def _load_topic(self, topic: str) -> bool:
        """Reads *topic*'s assignment into the context and watches it; False if its znode is gone."""
        got = await self.zk.get_assignment(topic)
        if got is None:
            return False
        assignment, _ = got
        self.context.set_topic(
            topic,
            assignment.partitions,
            assignment.topic_id,
            assignment.adding_replicas,
            assignment.removing_replicas,
        )
        self._watch_topic(topic)
        return True

    async def _initialize_context(self) -> None:
        ctx = self.context
        brokers = await self.zk.get_all_brokers()
        ctx.set_live_brokers(brokers)
        ctx.shutting_down.clear()
        for topic in await self.zk.get_topics():
            if not await self._load_topic(topic):
                continue
        ctx.partitions_being_reassigned = set(ctx.adding_replicas) | set(ctx.removing_replicas)
        for broker_id in sorted(brokers):
            self._watch_broker(broker_id)
        ctx.leadership.clear()
        ctx.leadership.update(await self.zk.get_partition_states(ctx.all_partitions()))
        self.channel.startup(ctx.live_brokers)

    async def _replica_state_machine_startup(self) -> None:
        ctx = self.context
        for tp in ctx.all_partitions():
            for replica in ctx.partition_replicas(tp):
                state = (
                    _R.OnlineReplica
                    if ctx.is_replica_online(replica, tp)
                    else _R.ReplicaDeletionIneligible
                )
                ctx.replica_states.put((tp, replica), state)
        online, offline = ctx.online_and_offline_replicas()
        await self._replica_state_changes(online, _R.OnlineReplica)
        await self._replica_state_changes(offline, _R.OfflineReplica)

    async def _partition_state_machine_startup(self) -> None:
        ctx = self.context
        for tp in ctx.all_partitions():
            state = ctx.leadership.get(tp)
            if state is None:
                ctx.partition_states.put(tp, _P.NewPartition)
            elif ctx.is_replica_online(state.leader, tp):
                ctx.partition_states.put(tp, _P.OnlinePartition)
            else:
                ctx.partition_states.put(tp, _P.OfflinePartition)
        await self._trigger_online_partition_state_change()

    # ------------------------------------------------------------------ watches

    def _watch_topic(self, topic: str) -> None:
        if topic in self._topic_watches:
            return
        self._topic_watches[topic] = self.zk.watch_topic(
            topic,
            lambda: self._fire(
                "PartitionModifications", self._process_partition_modifications, topic
            ),
        )

    def _unwatch_topic(self, topic: str) -> None:
        watch = self._topic_watches.pop(topic, None)
        if watch is not None:
            watch.cancel()

    def _watch_broker(self, broker_id: int) -> None:
        if broker_id in self._broker_watches:
            return
        self._broker_watches[broker_id] = self.zk.watch_broker(
            broker_id,
            lambda: self._fire("BrokerModification", self._process_broker_modification, broker_id),
        )

    def _unwatch_broker(self, broker_id: int) -> None:
        watch = self._broker_watches.pop(broker_id, None)
        if watch is not None:
            watch.cancel()

    # ------------------------------------------------------------------ requests

    def _send_update_metadata(
        self, broker_ids: Iterable[int], partitions: Iterable[TopicPartition]
    ) -> None:
        """KC ``sendUpdateMetadataRequest`` (its own batch)."""
        self._batch.new_batch()
        self._batch.add_update_metadata(broker_ids, partitions)
        self._batch.send_requests(self.context.epoch)

    # ------------------------------------------------------------------ replica state machine

    async def _replica_state_changes(
        self, replicas: Iterable[PartitionReplica], target: ReplicaState
    ) -> None:
        """RSM ``handleStateChanges``: one batch for all, grouped by broker."""
        replicas = list(replicas)
        if not replicas:
            return
        self._batch.new_batch()
        try:
            by_broker: dict[int, list[TopicPartition]] = {}
            for tp, replica in replicas:
                by_broker.setdefault(replica, []).append(tp)
            for replica, tps in by_broker.items():
                await self._do_replica_state_changes(replica, tps, target)
            self._batch.send_requests(self.context.epoch)
        except ControllerMovedError:
            self._batch.clear()
            raise
        except Exception:
            log.exception("controller %d: error moving replicas to %s", self.broker_id, target.name)
            self._batch.clear()

    async def _do_replica_state_changes(
        self, replica: int, tps: list[TopicPartition], target: ReplicaState
    ) -> None:
        ctx = self.context
        check = ctx.check_replica_transition([(tp, replica) for tp in tps], target)
        for invalid in check.invalid:
            log.warning("controller %d: %s", self.broker_id, invalid.error)
        valid = [key[0] for key in check.valid]
        if target is _R.NewReplica:
            for tp in valid:
                state = ctx.leadership.get(tp)
                if state is not None:
                    if state.leader == replica:
                        log.error(
                            "replica %d of %s cannot become NewReplica: it is the leader",
                            replica,
                            tp,
                        )
                        continue
                    self._batch.add_leader_and_isr(
                        [replica], tp, state, ctx.partition_replicas(tp), is_new=True
                    )
                ctx.replica_states.put((tp, replica), _R.NewReplica)
        elif target is _R.OnlineReplica:
            for tp in valid:
                if ctx.replica_states.state((tp, replica)) is _R.NewReplica:
                    replicas = ctx.partition_replicas(tp)
                    if replica not in replicas:
                        ctx.update_assignment(tp, (*replicas, replica))
                else:
                    state = ctx.leadership.get(tp)
                    if state is not None:
                        self._batch.add_leader_and_isr(
                            [replica], tp, state, ctx.partition_replicas(tp), is_new=False
                        )
                ctx.replica_states.put((tp, replica), _R.OnlineReplica)
        elif target is _R.OfflineReplica:
            for tp in valid:
                self._batch.add_stop_replica([replica], tp, delete=False)
            with_leadership = [tp for tp in valid if tp in ctx.leadership]
            without_leadership = [tp for tp in valid if tp not in ctx.leadership]
            updated = await self._remove_replica_from_isr(replica, with_leadership)
            for tp, state in updated.items():
                if not ctx.is_topic_queued_for_deletion(tp[0]):
                    recipients = [r for r in ctx.partition_replicas(tp) if r != replica]
                    self._batch.add_leader_and_isr(
                        recipients, tp, state, ctx.partition_replicas(tp), is_new=False
                    )
                ctx.replica_states.put((tp, replica), _R.OfflineReplica)
            for tp in without_leadership:
                self._batch.add_update_metadata(ctx.live_or_shutting_down_broker_ids, [tp])
                ctx.replica_states.put((tp, replica), _R.OfflineReplica)
        elif target is _R.ReplicaDeletionStarted:
            for tp in valid:
                ctx.replica_states.put((tp, replica), _R.ReplicaDeletionStarted)
                self._batch.add_stop_replica([replica], tp, delete=True)
        elif target in (_R.ReplicaDeletionIneligible, _R.ReplicaDeletionSuccessful):
            for tp in valid:
                ctx.replica_states.put((tp, replica), target)
        elif target is _R.NonExistentReplica:
            for tp in valid:
                remaining = tuple(r for r in ctx.partition_replicas(tp) if r != replica)
                ctx.update_assignment(tp, remaining)
                ctx.replica_states.remove((tp, replica))

    async def _remove_replica_from_isr(
        self, replica: int, tps: list[TopicPartition]
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch]:
        """RSM ``removeReplicasFromIsr``: the states to announce (updated, or unchanged when not in the ISR)."""
        ctx = self.context
        results: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        remaining = list(tps)
        for _ in range(STATE_WRITE_ATTEMPTS):
            if not remaining:
                break
            current = await self.zk.get_partition_states(remaining)
            to_write: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
            for tp in remaining:
                state = current.get(tp)
                if state is None:
                    if not ctx.is_topic_queued_for_deletion(tp[0]):
                        log.error(
                            "cannot remove replica %d from the ISR of %s: no state znode",
                            replica,
                            tp,
                        )
                    continue
                if state.controller_epoch > ctx.epoch:
                    raise ControllerMovedError(
                        f"{tp}: state written by controller epoch {state.controller_epoch} > ours ({ctx.epoch})"
                    )
                new_state = remove_replica_from_isr(state, replica)
                if new_state is None:
                    ctx.put_leadership(tp, state)
                    results[tp] = state
                else:
                    to_write[tp] = new_state
            if not to_write:
                break
            written = await self.zk.update_partition_states_conditionally(
                to_write, ctx.epoch, ctx.epoch_zk_version
            )
            for tp, state in written.successes.items():
                ctx.put_leadership(tp, state)
                results[tp] = state
            for tp, exc in written.failures.items():
                log.error("removing replica %d from the ISR of %s failed: %s", replica, tp, exc)
            remaining = list(written.bad_version)
        return results

    # ------------------------------------------------------------------ partition state machine

    async def _partition_state_changes(
        self,
        tps: Iterable[TopicPartition],
        target: PartitionState,
        strategy: _Strategy | None = None,
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch | Exception]:
        """PSM ``handleStateChanges``: one batch; returns election results (Online only)."""
        tps = list(tps)
        if not tps:
            return {}
        self._batch.new_batch()
        try:
            results = await self._do_partition_state_changes(tps, target, strategy)
            self._batch.send_requests(self.context.epoch)
            return results
        except ControllerMovedError:
            self._batch.clear()
            raise
        except Exception as exc:
            log.exception(
                "controller %d: error moving partitions to %s", self.broker_id, target.name
            )
            self._batch.clear()
            return {tp: exc for tp in tps}

    async def _do_partition_state_changes(
        self, tps: list[TopicPartition], target: PartitionState, strategy: _Strategy | None
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch | Exception]:
        ctx = self.context
        check = ctx.check_partition_transition(tps, target)
        for invalid in check.invalid:
            log.warning("controller %d: %s", self.broker_id, invalid.error)
        valid = list(check.valid)
        if target is _P.OnlinePartition:
            uninitialized = [
                tp for tp in valid if ctx.partition_states.state(tp) is _P.NewPartition
            ]
            to_elect = [
                tp
                for tp in valid
                if ctx.partition_states.state(tp) in (_P.OfflinePartition, _P.OnlinePartition)
            ]
            if uninitialized:
                for tp in await self._initialize_leader_and_isr(uninitialized):
                    ctx.partition_states.put(tp, _P.OnlinePartition)
            if not to_elect:
                return {}
            results = await self._elect_leaders(to_elect, strategy or _Strategy.OFFLINE)
            for tp, result in results.items():
                if not isinstance(result, Exception):
                    ctx.partition_states.put(tp, _P.OnlinePartition)
            return results
        for tp in valid:
            ctx.partition_states.put(tp, target)
        return {}

    async def _initialize_leader_and_isr(self, tps: list[TopicPartition]) -> list[TopicPartition]:
        """PSM ``initializeLeaderAndIsrForPartitions``: create the state znodes of new partitions."""
        ctx = self.context
        states: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
        for tp in tps:
            replicas = ctx.partition_replicas(tp)
            initial = initial_leader_and_isr(
                replicas, ctx.live_broker_ids, controller_epoch=ctx.epoch
            )
            if initial is None:
                log.error(
                    "cannot bring %s online: none of its replicas %s is live", tp, list(replicas)
                )
                continue
            states[tp] = from_election_state(initial, ctx.epoch)
        if not states:
            return []
        try:
            created = await self.zk.create_partition_states(states, ctx.epoch, ctx.epoch_zk_version)
        except ControllerMovedError:
            raise
        except Exception:
            log.exception("creating the state znodes of %s failed", sorted(states))
            return []
        done: list[TopicPartition] = []
        for tp, state in created.successes.items():
            ctx.put_leadership(tp, state)
            self._batch.add_leader_and_isr(
                state.isr, tp, state, ctx.partition_replicas(tp), is_new=True
            )
            done.append(tp)
        for tp, exc in created.failures.items():
            log.error("creating the state znode of %s failed: %r", tp, exc)
        return done

    async def _unclean_allowed(self, topics: Iterable[str]) -> dict[str, bool]:
        out: dict[str, bool] = {}
        for topic in sorted(set(topics)):
            try:
                config = await self.zk.get_topic_config(topic)
            except ControllerMovedError:
                raise
            except Exception:
                log.exception("reading the config of %s failed", topic)
                config = {}
            value = config.get("unclean.leader.election.enable")
            out[topic] = (
                self.config.unclean_leader_election_enable if value is None else _as_bool(value)
            )
        return out

    async def _elect_leaders(
        self, tps: list[TopicPartition], strategy: _Strategy
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch | Exception]:
        """PSM ``electLeaderForPartitions``: read the states, elect, write conditionally, retry BadVersion."""
        ctx = self.context
        results: dict[TopicPartition, LeaderIsrAndControllerEpoch | Exception] = {}
        remaining = list(tps)
        for _ in range(STATE_WRITE_ATTEMPTS):
            if not remaining:
                break
            current = await self.zk.get_partition_states(remaining)
            valid: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
            for tp in remaining:
                state = current.get(tp)
                if state is None:
                    results[tp] = StateChangeFailed(
                        f"LeaderAndIsr information doesn't exist for partition {tp}"
                    )
                elif state.controller_epoch > ctx.epoch:
                    # Kafka only aborts this partition; a newer controller exists, so resign.
                    raise ControllerMovedError(
                        f"leader election for {tp}: state written by controller epoch "
                        f"{state.controller_epoch} > ours ({ctx.epoch})"
                    )
                else:
                    valid[tp] = state
            if not valid:
                remaining = []
                break
            unclean: dict[str, bool] = {}
            if strategy is _Strategy.UNCLEAN:
                unclean = {tp[0]: True for tp in valid}
            elif strategy is _Strategy.OFFLINE:
                no_live_isr = {
                    tp[0]
                    for tp, state in valid.items()
                    if not any(ctx.is_replica_online(r, tp) for r in state.isr)
                }
                unclean = await self._unclean_allowed(no_live_isr)
            to_write: dict[TopicPartition, LeaderIsrAndControllerEpoch] = {}
            recipients: dict[TopicPartition, tuple[int, ...]] = {}
            unclean_elected: set[TopicPartition] = set()
            for tp, state in valid.items():
                replicas = ctx.partition_replicas(tp)
                if strategy is _Strategy.CONTROLLED_SHUTDOWN:
                    live = [
                        r for r in replicas if ctx.is_replica_online(r, tp, include_shutting_down=True)
                    ]
                    election = leader_for_controlled_shutdown(
                        to_election_state(state), replicas, live, ctx.shutting_down
                    )
                elif strategy is _Strategy.PREFERRED:
                    live = [r for r in replicas if ctx.is_replica_online(r, tp)]
                    election = leader_for_preferred_replica(
                        to_election_state(state), replicas, live
                    )
                elif strategy is _Strategy.REASSIGN:
                    target = ctx.full_assignment(tp).target_replicas
                    live = [r for r in target if ctx.is_replica_online(r, tp)]
                    election = leader_for_reassign(to_election_state(state), target, live)
                else:
                    live = [r for r in replicas if ctx.is_replica_online(r, tp)]
                    election = leader_for_offline(
                        to_election_state(state), replicas, live, unclean.get(tp[0], False)
                    )
                if election.leader_and_isr is None:
                    results[tp] = StateChangeFailed(
                        f"Failed to elect leader for partition {tp[0]}-{tp[1]} under strategy "
                        f"{strategy.value}"
                    )
                    continue
                to_write[tp] = from_election_state(election.leader_and_isr, ctx.epoch)
                recipients[tp] = election.recipients
                if election.unclean:
                    unclean_elected.add(tp)
            if not to_write:
                remaining = []
                break
            written = await self.zk.update_partition_states_conditionally(
                to_write, ctx.epoch, ctx.epoch_zk_version
            )
            for tp, state in written.successes.items():
                if tp in unclean_elected:
                    # Kafka's UncleanLeaderElectionsPerSec: data the old ISR had may be lost.
                    self.stats.unclean_leader_elections += 1
                    log.warning(
                        "controller %d: unclean leader election for %s-%d: leader %d was not in "
                        "the ISR %s (leader epoch %d)",
                        self.broker_id,
                        tp[0],
                        tp[1],
                        state.leader,
                        list(valid[tp].isr),
                        state.leader_epoch,
                    )
                ctx.put_leadership(tp, state)
                self._batch.add_leader_and_isr(
                    recipients[tp], tp, state, ctx.partition_replicas(tp), is_new=False
                )
                results[tp] = state
            for tp, exc in written.failures.items():
                results[tp] = exc
            remaining = list(written.bad_version)
        for tp in remaining:
            results[tp] = StateChangeFailed(f"{tp}: the state znode kept changing")
        return results

    async def _trigger_online_partition_state_change(
        self, partitions: Iterable[TopicPartition] | None = None
    ) -> dict[TopicPartition, LeaderIsrAndControllerEpoch | Exception]:
        """New and Offline partitions (topics being deleted excluded) → Online, Offline strategy."""
        ctx = self.context
        if partitions is None:
            partitions = ctx.partitions_in_states(_P.OfflinePartition, _P.NewPartition)
        tps = [tp for tp in partitions if not ctx.is_topic_queued_for_deletion(tp[0])]
        return await self._partition_state_changes(tps, _P.OnlinePartition, _Strategy.OFFLINE)

    # ------------------------------------------------------------------ brokers

    async def _process_broker_change(self) -> None:
        """KC ``processBrokerChange``."""
        if not self.is_active:
            return
        ctx = self.context
        current = await self.zk.get_all_brokers()
        change = classify_broker_change(
            {b: epoch for b, (_, epoch) in current.items()},
            {b: ctx.broker_epoch(b) for b in ctx.live_or_shutting_down_broker_ids},
        )
        if not (change.new or change.dead or change.bounced):
            return
        log.info(
            "controller %d: brokers new %s, dead %s, bounced %s",
            self.broker_id,
            list(change.new),
            list(change.dead),
            list(change.bounced),
        )
        for b in change.new:
            self.channel.add_broker(b, current[b][0])
        for b in change.bounced:
            self.channel.remove_broker(b)
            self.channel.add_broker(b, current[b][0])
        for b in change.dead:
            self.channel.remove_broker(b)
        if change.new:
            ctx.add_live_brokers({b: current[b] for b in change.new})
            await self._on_broker_startup(list(change.new))
        if change.bounced:
            ctx.remove_live_brokers(change.bounced)
            await self._on_broker_failure(list(change.bounced))
            ctx.add_live_brokers({b: current[b] for b in change.bounced})
            await self._on_broker_startup(list(change.bounced))
        if change.dead:
            ctx.remove_live_brokers(change.dead)
            await self._on_broker_failure(list(change.dead))

    async def _on_broker_startup(self, new_brokers: list[int]) -> None:
        """KC ``onBrokerStartup``."""
        ctx = self.context
        new_set = set(new_brokers)
        for b in new_set:
            ctx.replicas_on_offline_dirs.pop(b, None)  # a restarted broker tries its log dirs again
        existing = ctx.live_or_shutting_down_broker_ids - new_set
        self._send_update_metadata(existing, ())
        self._send_update_metadata(new_set, ctx.partitions_with_leaders())
        replicas = ctx.replicas_on_brokers(new_set)
        await self._replica_state_changes(replicas, _R.OnlineReplica)
        await self._trigger_online_partition_state_change()
        reassigning = [
            tp
            for tp in sorted(ctx.partitions_being_reassigned)
            if any(r in new_set for r in ctx.partition_replicas(tp))
        ]
        for tp in reassigning:
            await self._on_partition_reassignment(tp, ctx.full_assignment(tp))
        deleting = {tp[0] for tp, _ in replicas if ctx.is_topic_queued_for_deletion(tp[0])}
        if deleting:
            await self._resume_deletion_for_topics(deleting)
        for b in new_brokers:
            self._watch_broker(b)

    async def _on_broker_failure(self, dead_brokers: list[int]) -> None:
        """KC ``onBrokerFailure``."""
        ctx = self.context
        for b in dead_brokers:
            ctx.shutting_down.discard(b)
            ctx.replicas_on_offline_dirs.pop(b, None)
        await self._on_replicas_become_offline(ctx.replicas_on_brokers(dead_brokers))
        for b in dead_brokers:
            self._unwatch_broker(b)

    async def _on_replicas_become_offline(self, replicas: list[PartitionReplica]) -> None:
        """KC ``onReplicasBecomeOffline``."""
        ctx = self.context
        for_deletion = [key for key in replicas if ctx.is_topic_queued_for_deletion(key[0][0])]
        not_for_deletion = [
            key for key in replicas if not ctx.is_topic_queued_for_deletion(key[0][0])
        ]
        await self._partition_state_changes(
            ctx.partitions_with_offline_leader(), _P.OfflinePartition
        )
        results = await self._trigger_online_partition_state_change()
        await self._replica_state_changes(not_for_deletion, _R.OfflineReplica)
        if for_deletion:
            await self._fail_replica_deletion(for_deletion)
        if not not_for_deletion and all(isinstance(r, Exception) for r in results.values()):
            self._send_update_metadata(ctx.live_or_shutting_down_broker_ids, ())

    async def _process_broker_modification(self, broker_id: int) -> None:
        """KC ``processBrokerModification``: new endpoints → UpdateMetadata to everyone."""
        if not self.is_active:
            return
        ctx = self.context
        got = await self.zk.get_broker_and_epoch(broker_id)
        old = ctx.live_brokers.get(broker_id)
        if got is None or old is None:
            return
        new, _ = got
        if (
            dict(new.endpoints) != dict(old.endpoints)
            or dict(new.features) != dict(old.features)
            or new.rack != old.rack
        ):
            log.info("controller %d: broker %d's registration changed", self.broker_id, broker_id)
            ctx.live_brokers[broker_id] = new
            self._send_update_metadata(ctx.live_or_shutting_down_broker_ids, ())

    # ------------------------------------------------------------------ topics

    async def _process_topic_change(self) -> None:
        """KC ``processTopicChange``."""
        if not self.is_active:
            return
        ctx = self.context
        topics = set(await self.zk.get_topics())
        new_topics = topics - ctx.all_topics
        deleted = ctx.all_topics - topics
        for topic in sorted(deleted):
            self._unwatch_topic(topic)
            ctx.remove_topic(topic)
        added: list[TopicPartition] = []
        for topic in sorted(new_topics):
            if not await self._load_topic(topic):
                continue
            added.extend(ctx.partitions_for_topic(topic))
        if new_topics or deleted:
            log.info(
                "controller %d: new topics %s, deleted topics %s",
                self.broker_id,
                sorted(new_topics),
                sorted(deleted),
            )
        if added:
            await self._on_new_partition_creation(added)

    async def _on_new_partition_creation(self, tps: list[TopicPartition]) -> None:
        """KC ``onNewPartitionCreation``: New → NewReplica → Online → OnlineReplica."""
        ctx = self.context
        await self._partition_state_changes(tps, _P.NewPartition)
        await self._replica_state_changes(ctx.replicas_for_partitions(tps), _R.NewReplica)
        await self._partition_state_changes(tps, _P.OnlinePartition, _Strategy.OFFLINE)
        await self._replica_state_changes(ctx.replicas_for_partitions(tps), _R.OnlineReplica)

    async def _process_partition_modifications(self, topic: str) -> None:
        """KC ``processPartitionModifications``: partitions added to an existing topic."""
        if not self.is_active:
            return
        ctx = self.context
        if topic not in ctx.all_topics:
            return
        got = await self.zk.get_assignment(topic)
        if got is None:
            return
        assignment, _ = got
        to_add = {
            p: r for p, r in assignment.partitions.items() if not ctx.partition_replicas((topic, p))
        }
        if ctx.is_topic_queued_for_deletion(topic):
            if to_add:
                log.warning(
                    "skipping new partitions %s of %s: it is being deleted", sorted(to_add), topic
                )
                restored = TopicAssignment(
                    ctx.assignments.get(topic, {}), topic_id=ctx.topic_ids.get(topic)
                )
                await self.zk.set_assignment(topic, restored, -1, ctx.epoch_zk_version)
            return
        if not to_add:
            return
        for p, replicas in sorted(to_add.items()):
            ctx.update_assignment((topic, p), replicas)
        await self._on_new_partition_creation([(topic, p) for p in sorted(to_add)])

    async def _process_isr_change_notification(self) -> None:
        """KC ``processIsrChangeNotification``: reload the states, UpdateMetadata to all."""
        if not self.is_active:
            return
        ctx = self.context
        sequence_numbers = await self.zk.get_isr_change_notifications()
        if not sequence_numbers:
            return
        try:
            partitions = await self.zk.get_partitions_from_isr_change_notifications(
                sequence_numbers
            )
            known = [tp for tp in dict.fromkeys(partitions) if ctx.partition_replicas(tp)]
            if known:
                states = await self.zk.get_partition_states(known)
                for tp, state in states.items():
                    ctx.put_leadership(tp, state)
                self._send_update_metadata(ctx.live_or_shutting_down_broker_ids, known)
                for tp in known:
                    if tp in ctx.partitions_being_reassigned:
                        await self._maybe_complete_reassignment(tp)
        finally:
            await self.zk.delete_isr_change_notifications(sequence_numbers, ctx.epoch_zk_version)


    async def _process_log_dir_event_notification(self) -> None:
        """KC ``processLogDirEventNotification``: a broker's log dir failed; LeaderAndIsr for all its
        replicas, whose answers (KAFKA_STORAGE_ERROR) tell which replicas are offline."""
        if not self.is_active:
            return
        ctx = self.context
        sequence_numbers = await self.zk.get_log_dir_event_notifications()
        if not sequence_numbers:
            return
        try:
            broker_ids = sorted(set(await self.zk.get_broker_ids_from_log_dir_events(sequence_numbers)))
            log.info("controller %d: handling log directory failure for brokers %s", self.broker_id, broker_ids)
            await self._replica_state_changes(ctx.replicas_on_brokers(broker_ids), _R.OnlineReplica)
        finally:
            await self.zk.delete_log_dir_event_notifications(sequence_numbers, ctx.epoch_zk_version)

    def _on_leader_and_isr_response(self, broker_id: int, response: Any) -> None:
        """A LeaderAndIsr answer: its KAFKA_STORAGE_ERROR partitions are processed as an event."""
        errors = leader_and_isr_partition_errors(response, self.context.topic_ids)
        if not errors and not self.context.replicas_on_offline_dirs.get(broker_id):
            return  # nothing offline, before or now: the usual case
        self._fire("LeaderAndIsrResponseReceived", self._process_leader_and_isr_response, broker_id, errors)

    async def _process_leader_and_isr_response(
        self, broker_id: int, errors: dict[TopicPartition, int]
    ) -> None:
        """KC ``processLeaderAndIsrResponseReceived``: replicas answered KAFKA_STORAGE_ERROR are
        offline (on a failed log dir), those answered NONE online again; newly offline ones go
        through ``onReplicasBecomeOffline``."""
        if not self.is_active:
            return
        ctx = self.context
        offline = {tp for tp, code in errors.items() if code == ErrorCode.KAFKA_STORAGE_ERROR}
        online = {tp for tp, code in errors.items() if code == ErrorCode.NONE}
        previous = ctx.replicas_on_offline_dirs.get(broker_id, set())
        current = (previous - online) | offline
        if current:
            ctx.replicas_on_offline_dirs[broker_id] = current
        else:
            ctx.replicas_on_offline_dirs.pop(broker_id, None)
        new = sorted(current - previous)
        if new:
            log.info("controller %d: marking replicas %s on broker %d offline (log dir failure)",
                     self.broker_id, ", ".join(f"{t}-{p}" for t, p in new), broker_id)
            await self._on_replicas_become_offline([(tp, broker_id) for tp in new])


def controller_for_server(server: Any) -> Controller:
    """The controller of a :class:`mafka.broker.server.KafkaServer` (its ``controller_factory``).

    Call it after the broker registered itself.  It uses the server's
    ``broker_id``, ``zk``, ``reactor`` and ``config`` (a BrokerConfig:
    ``unclean.leader.election.enable``, ``delete.topic.enable``,
    ``num.partitions``, ``default.replication.factor``; connections go to
    ``control.plane.listener.name`` or else the inter-broker listener).  After
    a ZooKeeper session expiry the broker is registered again with
    ``server.reregister_broker()`` when the server has it; otherwise with the
    registration read from ZooKeeper now, storing the new broker epoch in
    ``server.broker_epoch``.
    """
    config = server.config
    listener = getattr(config, "control_plane_listener_name", None) or getattr(
        config, "inter_broker_listener", None
    )
    zk: KafkaZkClient = server.zk
    remembered: dict[str, BrokerRegistration] = {}

    def remember(registration: BrokerRegistration | None) -> None:
        if registration is not None:
            remembered["registration"] = registration

    d = zk.get_broker(server.broker_id)
    d.addCallbacks(
        remember, lambda f: log.warning("reading our registration failed: %s", f.getErrorMessage())
    )

    def reregister() -> Deferred[Any] | None:
        own = getattr(server, "reregister_broker", None)
        if own is not None:
            return own()
        registration = remembered.get("registration")
        if registration is None:
            log.error(
                "broker %d: no registration to restore after the session expiry", server.broker_id
            )
            return None
        registered = zk.register_broker(registration)
        return registered.addCallback(lambda epoch: setattr(server, "broker_epoch", epoch))

    return Controller(
        server.broker_id,
        zk,
        server.reactor,
        config=config,
        listener_name=listener,
        reregister=reregister,
    )
