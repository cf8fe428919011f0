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

The class is a facade over collaborators that each own one concern, as
Kafka's ``KafkaController`` delegates to its state machines and its
``TopicDeletionManager``.  They share a small typed core,
:class:`~mafka.controller.core.ControllerCore` (the context, the ZooKeeper
client, the channel and request batch, the clock, the config, the stats and
the event plumbing), and receive each other explicitly in their
constructors:

* :class:`~mafka.controller.replica_state_machine.ReplicaStateMachine` and
  :class:`~mafka.controller.partition_state_machine.PartitionStateMachine`
  (state changes, leader elections, ISR shrink);
* :class:`~mafka.controller.topic_deletion.TopicDeletionManager`;
* :class:`~mafka.controller.reassignment.ReassignmentManager`
  (AlterPartitionReassignments, ListPartitionReassignments,
  ``/admin/reassign_partitions``);
* :class:`~mafka.controller.leader_election.LeaderElections` (ElectLeaders,
  ``/admin/preferred_replica_election``, auto rebalance);
* :class:`~mafka.controller.admin.ControllerAdmin` (CreateTopics,
  DeleteTopics, CreatePartitions, ControlledShutdown);
* :class:`~mafka.controller.cluster_changes.ClusterChanges` (brokers,
  topics, ISR change notifications, log dir failures);
* :class:`~mafka.controller.failover.ControllerFailover` (what taking over
  and handing back the controllership does: the cluster-wide watches,
  loading the context, starting the state machines, and undoing it all).

This module keeps the controllership itself: the ``/controller`` election,
resignation, ZooKeeper session changes and shutdown, and the public API.  Counters are in
:attr:`Controller.stats` (:class:`~mafka.controller.stats.ControllerStats`).

Not implemented: log-dir failure events, feature-version negotiation beyond
writing an enabled ``/feature``, replica moves between log dirs.
"""

from __future__ import annotations

import logging
import random
from collections.abc import Awaitable, Callable, Iterable, Mapping, Sequence
from typing import Any

from twisted.internet import task
from twisted.internet.defer import Deferred, succeed

from mafka.background import BackgroundPasses
from mafka.controller.admin import (
    AdminResult,
    ControllerAdmin,
    NewPartitions,
    NewTopic,
    create_topic_in_zookeeper,
    validate_topic_configs,
)
from mafka.controller.channel import ControllerChannelManager
from mafka.controller.cluster_changes import ClusterChanges
from mafka.controller.config import ControllerConfig
from mafka.controller.context import ControllerContext, ReplicaAssignment
from mafka.controller.core import ControllerCore
from mafka.controller.events import ControllerEventQueue
from mafka.controller.failover import ControllerFailover
from mafka.controller.fast_failover import ControllerRefusal, RefusedBrokers, WatchFactory
from mafka.controller.leader_election import ElectionResult, LeaderElections
from mafka.controller.liveness import BrokerLivenessWatch
from mafka.controller.partition_state_machine import PartitionStateMachine
from mafka.controller.reassignment import AlterResult, ReassignmentManager
from mafka.controller.replica_state_machine import ReplicaStateMachine
from mafka.controller.states import StateChangeFailed
from mafka.controller.stats import ControllerStats
from mafka.controller.topic_deletion import TopicDeletionManager
from mafka.coordination.kafka_zk import ControllerMovedError, KafkaZkClient
from mafka.coordination.store import WatchHandle
from mafka.coordination.znodes import BrokerRegistration
from mafka.errors import ErrorCode
from mafka.topics import TopicPartitionTuple

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


class Controller:
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
        background: The :class:`~mafka.background.BackgroundPasses` running the
            controller's periodic work (the auto leader rebalance check): the
            broker's, so that its failures are counted with the broker's; by
            default one of the controller's own on *reactor*.

    Attributes:
        core: The :class:`~mafka.controller.core.ControllerCore` every
            collaborator shares.
        replica_state_machine, partition_state_machine, topic_deletion,
        reassignments, leader_elections, admin, cluster_changes, failover: The
            collaborators (see the module doc).
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
        background: BackgroundPasses | None = None,
        liveness: WatchFactory | None = None,
        comeback_after_s: float = 36.0,
    ) -> None:
        self.core = ControllerCore(
            broker_id,
            zk,
            reactor,
            config=ControllerConfig.of(config),
            channel=(
                channel
                if channel is not None
                else ControllerChannelManager(
                    reactor,
                    broker_id,
                    connection_factory=connection_factory,
                    listener_name=listener_name,
                )
            ),
            background=background if background is not None else BackgroundPasses(reactor),
            rng=rng,
            on_controller_moved=self._handle_controller_moved,
        )
        core = self.core
        self.replica_state_machine = ReplicaStateMachine(core)
        self.partition_state_machine = PartitionStateMachine(core)
        self.topic_deletion = TopicDeletionManager(
            core,
            self.replica_state_machine,
            self.partition_state_machine,
            unwatch_topic=lambda topic: self.cluster_changes.unwatch_topic(topic),
        )
        self.reassignments = ReassignmentManager(
            core, self.replica_state_machine, self.partition_state_machine, self.topic_deletion
        )
        self.leader_elections = LeaderElections(core, self.partition_state_machine)
        self.admin = ControllerAdmin(core, self.replica_state_machine, self.partition_state_machine)
        self.cluster_changes = ClusterChanges(
            core,
            self.replica_state_machine,
            self.partition_state_machine,
            self.topic_deletion,
            self.reassignments,
        )
        self.failover = ControllerFailover(
            core,
            self.replica_state_machine,
            self.partition_state_machine,
            self.topic_deletion,
            self.reassignments,
            self.leader_elections,
            self.cluster_changes,
        )
        #: The fast path for a broker whose listener refuses connections (mafka.controller.fast_failover).
        self._controller_refusal: ControllerRefusal | None = None
        if liveness is not None:
            refusal = self._controller_refusal = ControllerRefusal(
                broker_id, zk, liveness, core.channel.listener_name, core.fire
            )
            self.cluster_changes.refused = RefusedBrokers(
                core,
                liveness,
                fence=self.cluster_changes.fail_brokers,
                recheck=self.cluster_changes.process_broker_change,
                comeback_after_s=comeback_after_s,
                known_dead=lambda: refusal.dead,
            )
        core.batch.on_stop_replica_response = self.topic_deletion.on_stop_replica_response
        core.batch.on_leader_and_isr_response = self.cluster_changes.on_leader_and_isr_response
        self._reregister = reregister
        self._controller_watch: WatchHandle | None = None
        self._listener = _SessionListener(self)
        self._started = False
        #: Seconds to wait before giving up the controllership after a failed failover.
        self.failover_retry_backoff_s = 1.0

    # ------------------------------------------------------------------ public state

    @property
    def broker_id(self) -> int:
        return self.core.broker_id

    @property
    def zk(self) -> KafkaZkClient:
        return self.core.zk

    @property
    def reactor(self) -> Any:
        return self.core.reactor

    @property
    def config(self) -> ControllerConfig:
        return self.core.config

    @property
    def context(self) -> ControllerContext:
        """What the active controller knows (Kafka's ``ControllerContext``)."""
        return self.core.context

    @property
    def channel(self) -> ControllerChannelManager:
        return self.core.channel

    @property
    def background(self) -> BackgroundPasses:
        return self.core.background

    @property
    def stats(self) -> ControllerStats:
        """Kafka's ``ControllerStats`` (``UncleanLeaderElectionsPerSec`` …)."""
        return self.core.stats

    @property
    def is_active(self) -> bool:
        """True while this broker is the controller (Kafka's ``isActive``)."""
        return self.core.is_active

    @property
    def epoch(self) -> int:
        """The controller epoch this broker last won (0 before any)."""
        return self.context.epoch

    @property
    def active_controller_id(self) -> int:
        """The controller's broker id as last seen in ``/controller`` (-1 if none/unknown)."""
        return self.core.active_controller_id

    @property
    def events(self) -> ControllerEventQueue:
        """The event queue (for inspection)."""
        return self.core.events

    # ------------------------------------------------------------------ admin entry points

    def create_topics(
        self,
        specs: Iterable[NewTopic | Sequence[Any]],
        validate_only: bool = False,
        timeout_ms: int = 0,
    ) -> Deferred[dict[str, AdminResult]]:
        """CreateTopics: see :meth:`ControllerAdmin.create_topics <mafka.controller.admin.ControllerAdmin.create_topics>`."""
        return self.admin.create_topics(specs, validate_only, timeout_ms)

    def delete_topics(
        self, names: Iterable[str], timeout_ms: int = 0
    ) -> Deferred[dict[str, ErrorCode]]:
        """DeleteTopics: see :meth:`ControllerAdmin.delete_topics <mafka.controller.admin.ControllerAdmin.delete_topics>`."""
        return self.admin.delete_topics(names, timeout_ms)

    def create_partitions(
        self,
        specs: Iterable[NewPartitions | Sequence[Any]],
        validate_only: bool = False,
        timeout_ms: int = 0,
    ) -> Deferred[dict[str, AdminResult]]:
        """CreatePartitions: see :meth:`ControllerAdmin.create_partitions <mafka.controller.admin.ControllerAdmin.create_partitions>`."""
        return self.admin.create_partitions(specs, validate_only, timeout_ms)

    def controlled_shutdown(
        self, broker_id: int, broker_epoch: int = -1
    ) -> Deferred[tuple[ErrorCode, list[TopicPartitionTuple]]]:
        """ControlledShutdown: see :meth:`ControllerAdmin.controlled_shutdown <mafka.controller.admin.ControllerAdmin.controlled_shutdown>`."""
        return self.admin.controlled_shutdown(broker_id, broker_epoch)

    def elect_leaders(
        self,
        election_type: int,
        partitions: Iterable[TopicPartitionTuple] | None,
    ) -> Deferred[dict[TopicPartitionTuple, ElectionResult]]:
        """ElectLeaders: see :meth:`LeaderElections.elect_leaders <mafka.controller.leader_election.LeaderElections.elect_leaders>`."""
        return self.leader_elections.elect_leaders(election_type, partitions)

    def alter_partition_reassignments(
        self, reassignments: Mapping[TopicPartitionTuple, Sequence[int] | None]
    ) -> Deferred[tuple[ErrorCode, str | None, dict[TopicPartitionTuple, AlterResult]]]:
        """AlterPartitionReassignments: see :meth:`ReassignmentManager.alter_partition_reassignments
        <mafka.controller.reassignment.ReassignmentManager.alter_partition_reassignments>`."""
        return self.reassignments.alter_partition_reassignments(reassignments)

    def list_partition_reassignments(
        self, partitions: Iterable[TopicPartitionTuple] | None
    ) -> Deferred[tuple[ErrorCode, str | None, dict[TopicPartitionTuple, ReplicaAssignment]]]:
        """ListPartitionReassignments: see :meth:`ReassignmentManager.list_partition_reassignments
        <mafka.controller.reassignment.ReassignmentManager.list_partition_reassignments>`."""
        return self.reassignments.list_partition_reassignments(partitions)

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
        d = self.core.enqueue("Startup", self._startup)
        d.addErrback(self.core.log_event_failure, "Startup")
        return d.addCallback(lambda _: None)

    def stop(self) -> Deferred[None]:
        """Resigns (giving ``/controller`` up if held) and stops processing events."""
        if self.core.stopped:
            return succeed(None)
        self.core.stopped = True
        if self._controller_watch is not None:
            self._controller_watch.cancel()
            self._controller_watch = None
        d = self.core.events.clear_and_put("Shutdown", self._process_shutdown)
        d.addErrback(self.core.log_event_failure, "Shutdown")

        def closed(_: Any) -> None:
            self.core.events.close()
            self.core.waiters.fail_all()

        return d.addBoth(closed)

    # ------------------------------------------------------------------ session and /controller events

    def _on_controller_znode(self) -> None:
        self.core.fire("ControllerChange", self._process_controller_change, coalesce=True)

    def _on_session_expired(self) -> None:
        if self.core.stopped or not self._started:
            return
        log.info("controller %d: ZooKeeper session expired", self.broker_id)
        d = self.core.events.clear_and_put("Expire", self._process_expire)
        d.addErrback(self.core.log_event_failure, "Expire")

    def _on_session_established(self) -> None:
        if self.core.stopped or not self._started:
            return
        self.core.fire("RegisterBrokerAndReelect", self._process_register_and_reelect)

    # ------------------------------------------------------------------ election and resignation

    async def _startup(self) -> None:
        try:
            await self._elect()
        finally:
            await self._refresh_controller_watch()

    async def _refresh_controller_watch(self) -> None:
        """Watches the active controller's listener if it is another broker (the fast path)."""
        if self._controller_refusal is None:
            return
        if self.core.stopped:
            self._controller_refusal.stop()
            return
        try:
            await self._controller_refusal.refresh(self.core.active_controller_id)
        except Exception as exc:  # ZooKeeper unreachable: the next /controller event tries again
            log.info("controller %d: cannot watch the controller's listener: %s", self.broker_id, exc)

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
                self.core.active_controller_id = -1
                await self.zk.delete_controller(-1)
                return
            self.core.active_controller_id = controller_id
            return
        now_ms = int(self.reactor.seconds() * 1000)
        election = await self.zk.elect_controller(self.broker_id, now_ms)
        if not election.won:
            current = await self.zk.get_controller_id()
            self.core.active_controller_id = -1 if current is None else current
            log.info("controller %d: lost the election to %s", self.broker_id, current)
            return
        self.context.epoch = election.controller_epoch
        self.context.epoch_zk_version = election.epoch_zk_version
        self.core.active_controller_id = self.broker_id
        log.info(
            "controller %d: elected controller with epoch %d (zkVersion %d)",
            self.broker_id,
            election.controller_epoch,
            election.epoch_zk_version,
        )
        try:
            await self.failover.on_controller_failover()
        except ControllerMovedError:
            raise
        except Exception:
            log.exception("controller %d: failover failed; moving the controller", self.broker_id)
            await self._trigger_controller_move()

    async def _trigger_controller_move(self) -> None:
        current = await self.zk.get_controller_id()
        self.core.active_controller_id = -1 if current is None else current
        if not self.is_active:
            return
        expected = self.context.epoch_zk_version
        self.core.active_controller_id = -1
        self.failover.on_controller_resignation()
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
        self.core.active_controller_id = controller_id
        if was_active and not self.is_active:
            log.info(
                "controller %d: resigning; the controller is now %d", self.broker_id, controller_id
            )
            self.failover.on_controller_resignation()

    async def _handle_controller_moved(self) -> None:
        was_active = self.is_active
        current = await self.zk.get_controller_id()
        if current == self.broker_id:
            # Named as controller, yet fenced: our epoch is stale. Hand /controller over.
            self.core.active_controller_id = -1
            if was_active:
                self.failover.on_controller_resignation()
            await self.zk.delete_controller(-1)
            return
        self.core.active_controller_id = -1 if current is None else current
        if was_active:
            log.info("controller %d: resigning after a fenced write", self.broker_id)
            self.failover.on_controller_resignation()
        if current is None:
            await self._elect()

    async def _process_controller_change(self) -> None:
        """ControllerChange / Reelect: resign if it moved away, elect if it is gone."""
        try:
            controller_id = await self.zk.get_controller_id()
            await self._maybe_resign(-1 if controller_id is None else controller_id)
            if controller_id is None or (controller_id == self.broker_id and not self.is_active):
                await self._elect()
        finally:
            await self._refresh_controller_watch()

    async def _process_expire(self) -> None:
        self.core.active_controller_id = -1
        self.failover.on_controller_resignation()
        if self._controller_refusal is not None:
            self._controller_refusal.stop()

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
        try:
            await self._elect()
        finally:
            await self._refresh_controller_watch()

    async def _process_shutdown(self) -> None:
        if self._controller_refusal is not None:
            self._controller_refusal.stop()
        was_active = self.is_active
        expected = self.context.epoch_zk_version
        self.core.active_controller_id = -1
        self.failover.on_controller_resignation()
        if was_active:
            try:
                await self.zk.delete_controller(expected)
            except Exception as exc:
                log.info(
                    "controller %d: could not delete /controller at shutdown: %s",
                    self.broker_id,
                    exc,
                )


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
        own: Callable[[], Deferred[Any] | None] | None = getattr(server, "reregister_broker", None)
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

    security = getattr(server, "interbroker_security", None)

    def connect(broker_id: int, host: str, port: int) -> Any:
        from mafka.interbroker.connection import InterBrokerConnection

        return InterBrokerConnection(
            server.reactor, host, port, f"controller-{server.broker_id}", security=security
        )

    liveness: WatchFactory | None = None
    if getattr(config, "mafka_fast_failover_enable", False):

        def liveness(
            on_refused: Callable[[int, int], None], on_reachable: Callable[[int, int], None], comeback_after_s: float
        ) -> BrokerLivenessWatch:
            return BrokerLivenessWatch(server.reactor, on_refused, on_reachable, comeback_after_s=comeback_after_s)

    session_timeout_s = getattr(config, "zookeeper_session_timeout_ms", 18000) / 1000
    return Controller(
        server.broker_id,
        zk,
        server.reactor,
        config=config,
        listener_name=listener,
        reregister=reregister,
        background=getattr(server, "background", None),
        connection_factory=connect,
        liveness=liveness,
        # Longer than the session timeout: a restarted process's old session is gone by then.
        comeback_after_s=2 * session_timeout_s,
    )
