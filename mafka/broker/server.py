"""A broker process: ZooKeeper session, logs, listeners, registration, controller candidacy.

Startup follows Kafka's ``KafkaServer.startup``:

1. connect to ZooKeeper, create the persistent roots, get or create ``/cluster/id``;
2. open the logs (off the reactor: recovery may read whole segments);
3. start the listeners with the request handlers;
4. register ``/brokers/ids/<id>`` (the czxid is the broker epoch);
5. stand for controller.

Background work (retention, flush, checkpoints, cleaning, delayed file
deletion) runs on timers, each pass in a worker thread so the reactor never
blocks on disk (what such a pass needs of the reactor's state is copied on
the reactor first); the ISR shrink check and ISR change announcements run on
the reactor (memory and asynchronous ZooKeeper writes only).  Every periodic
pass — these, the coordinators' and the controller's — is a supervised
:class:`mafka.background.BackgroundPasses` pass: a failure is logged with its
traceback, counted (``mafka_background_pass_failures_total{pass=...}``) and
the pass runs again at its next interval.

:meth:`KafkaServer.shutdown` first asks the controller to move leadership
off this broker (ControlledShutdown, ``controlled.shutdown.enable``, at most
``controlled.shutdown.max.retries`` tries ``controlled.shutdown.retry.backoff.ms``
apart), then stops listening and fetching, snapshots producer state, flushes
and checkpoints, writes the clean-shutdown marker and closes the ZooKeeper
session.
"""

from __future__ import annotations

import logging
import os
import time
from pathlib import Path
from typing import Any

from twisted.internet import defer, task, threads
from twisted.protocols.tls import TLSMemoryBIOFactory

from mafka.background import BackgroundPasses
from mafka.coordination.kafka_zk import BrokerIdAlreadyRegisteredError, KafkaZkClient
from mafka.coordination.znodes import BrokerRegistration
from mafka.errors import ConfigError
from mafka.interbroker.security import InterBrokerSecurity
from mafka.log.config import LogConfig
from mafka.log.manager import LogManager
from mafka.rebalancer.service import RebalancerService
from mafka.wire import registry as wire_registry

from .authorization import BrokerAuthorizer
from .client_quotas import ClientQuotaService
from .cold_reads import ColdReader, PageCacheProbe
from .config import BrokerConfig
from .delayed_delivery import DelayedDelivery, retention_bound
from .dispatcher import Dispatcher, collect_handlers
from .fetch_session import FetchSessionCache
from .group_configs import GroupConfigCache
from .group_lag import SAMPLE_INTERVAL_S, GroupLagSampler
from .group_service import GroupService
from .isr_writes import IsrWriteBatcher
from .listener_security import interbroker_security, listener_security
from .log_dir_mover import LogDirMover
from .metadata_cache import MetadataCache
from .monitor import Monitor
from .network import KafkaServerFactory
from .peer_liveness import PeerLiveness, peer_liveness_for
from .producer_ids import ProducerIdManager
from .reactor_idle import ReactorIdle
from .replica_fetcher import FetcherConfig, ReplicaFetcherManager
from .replica_manager import ReplicaManager
from .replica_selector import replica_selector_for
from .replication_quota import ReplicationQuota, is_throttled_replica
from .request_latency import RequestLatencies, request_name
from .request_metrics import RequestMetrics
from .share_coordinator_service import ShareCoordinatorService
from .share_fetch import ShareFetchService
from .share_persister import SharePersister
from .topic_configs import TopicConfigManager, apply_log_config
from .transaction_service import TransactionService
from .user_configs import UserConfigCache

__all__ = ["KafkaServer"]

log = logging.getLogger("mafka.broker.server")

#: LeaderAndIsr, StopReplica, UpdateMetadata, ControlledShutdown: served as soon as the
#: broker is registered (clients wait for the first UpdateMetadata).
_CONTROLLER_APIS = frozenset({4, 5, 6, 7})


def _now_ms() -> int:
    return int(time.time() * 1000)


class KafkaServer:
    """One broker.

    Args:
        config: the broker's configuration.
        reactor: the Twisted reactor.
        store_factory: ``(connect_string, session_timeout_ms) -> ClusterStore``;
            the kazoo store by default (tests may pass a MemoryStore factory).
        controller_factory: ``(server) -> controller`` with ``start()``,
            ``stop()``, ``is_active`` and the admin methods; None runs no
            controller candidacy (single-purpose tests).
    """

    def __init__(self, config: BrokerConfig, reactor: Any, *, store_factory: Any = None, controller_factory: Any = None) -> None:
        self.config = config
        self.reactor = reactor
        self.broker_id = config.broker_id
        self.store_factory = store_factory or _kazoo_store
        self.controller_factory = controller_factory
        self.metadata_cache = MetadataCache(self.broker_id)
        self.broker_epoch = -1
        self.zk: KafkaZkClient | None = None
        self.store: Any = None
        self.log_manager: LogManager | None = None
        #: reads of cold-tier segments for fetches, when mafka.cold.log.dirs is set (mafka.broker.cold_reads)
        self.cold_reads: ColdReader | None = None
        #: page-cache misses of consumer fetches, estimated (the monitor reports them)
        self.page_cache = PageCacheProbe()
        #: per log dir write (appends) and cold-dir read latencies, ``write:<dir>`` / ``read:<dir>``
        self.dir_latencies = RequestLatencies()
        self.replica_manager: ReplicaManager | None = None
        self.log_dir_mover: LogDirMover | None = None
        self.fetch_sessions: FetchSessionCache | None = None
        self.producer_ids: ProducerIdManager | None = None
        self.controller: Any = None
        #: the bound /metrics port (None: mafka.metrics.port is -1)
        self.metrics_port: int | None = None
        #: TP50/TP99 per request over the last minute (Kafka's RequestMetrics TotalTimeMs)
        self.request_latencies = RequestLatencies()
        #: Kafka's RequestMetrics times per request (queue, local, remote, send, total)
        self.request_metrics = RequestMetrics(lambda: int(time.monotonic() * 1000))
        #: the reactor thread's idle share (RequestHandlerAvgIdlePercent)
        self.reactor_idle = ReactorIdle()
        #: consumer lag of the groups this broker coordinates (kafka_consumergroup_lag …)
        self.group_lag = GroupLagSampler(self)
        self.ports: list[Any] = []
        self.bound: dict[str, int] = {}
        #: every periodic background pass of this broker (its controller's and coordinators' too)
        self.background = BackgroundPasses(reactor, run_in_thread=lambda fn, *args: self.run_blocking(fn, *args))
        self._topic_configs: dict[str, LogConfig] = {}
        self.topic_configs: TopicConfigManager | None = None
        self.user_configs: UserConfigCache | None = None
        #: Kafka 4's group config overrides (``/config/groups/<g>``), kept current from notifications.
        self.group_configs: GroupConfigCache | None = None
        #: client quotas (produce/fetch/request), fed from /config/users and /config/clients
        self.client_quotas: ClientQuotaService | None = None
        #: ACL decisions (allows everything unless authorizer.class.name is set)
        self.authorizer: BrokerAuthorizer | None = None
        #: TLS/SASL of the connections this broker opens to its peers (None: PLAINTEXT)
        self.interbroker_security: InterBrokerSecurity | None = None
        self.group_service: GroupService | None = None
        self.transaction_service: TransactionService | None = None
        #: KIP-932's share coordinator (``__share_group_state``) and the persister that reaches it
        self.share_coordinator_service: ShareCoordinatorService | None = None
        self.share_persister: SharePersister | None = None
        #: KIP-932's share-partition leaders: ShareFetch / ShareAcknowledge, share sessions
        self.share_fetch: ShareFetchService | None = None
        self._dispatcher: Dispatcher | None = None
        self._open_timer: Any = None
        #: peers whose listener refuses, hidden from clients (mafka.broker.peer_liveness)
        self.peer_liveness: PeerLiveness | None = None
        #: the process's garbage collection policy, when the entry point started one (mafka.heap_freezer)
        self.heap_freezer: Any = None

    # ================================================================== facts handlers use

    @property
    def auto_create_topics(self) -> bool:
        return self.config.auto_create_topics_enable

    def max_message_bytes(self, topic: str) -> int:
        return self.log_config_for(topic).max_message_bytes

    def min_insync_replicas(self, topic: str) -> int:
        """The topic's ``min.insync.replicas`` override, else the broker's."""
        if self.topic_configs is not None:
            value = self.topic_configs.overrides.get(topic, {}).get("min.insync.replicas")
            if value is not None:
                try:
                    return max(1, int(value))
                except ValueError:
                    pass
        return self.config.min_insync_replicas

    def log_config_for(self, topic: str) -> LogConfig:
        if self.topic_configs is not None:
            return self.topic_configs.log_config(topic)
        return self._topic_configs.get(topic) or self.config.log_config()

    def _on_topic_config_change(self, topic: str) -> None:
        """A topic's overrides changed in ZooKeeper: give its open logs the new config."""
        if self.log_manager is not None:
            logs = self.log_manager.logs_of_topic(topic)
            if logs:
                config = self.log_config_for(topic)
                for _, log_ in logs:
                    apply_log_config(log_, config)

    @staticmethod
    def run_blocking(fn: Any, *args: Any) -> defer.Deferred:
        """Runs blocking disk work in a worker thread (never on the reactor)."""
        return threads.deferToThread(fn, *args)

    def on_metadata_update(self, deleted: list[tuple[str, int]]) -> None:
        """Called after each UpdateMetadata: the first one lets clients in."""
        self._open_to_clients("metadata received")
        if self.peer_liveness is not None:
            self.peer_liveness.sync()
        if self.group_service is not None:
            self.group_service.on_metadata_update()
        if self.transaction_service is not None:
            self.transaction_service.on_metadata_update()
        if self.share_coordinator_service is not None:
            self.share_coordinator_service.on_metadata_update()

    def auto_create_topic(self, name: str) -> None:
        """Writes a new topic's znodes (Kafka 2.8 ZK mode: any broker may); the controller does the rest."""
        from mafka.controller.controller import (
            create_topic_in_zookeeper,  # the controller owns the rule
        )

        assert self.zk is not None  # set by startup() before any listener opens
        racks = {b: info.rack for b, info in self.metadata_cache.brokers.items()}
        d = create_topic_in_zookeeper(self.zk, name, self.config.num_partitions, self.config.default_replication_factor, racks, {})
        d.addErrback(lambda f: log.info("auto-creating %s: %s", name, f.getErrorMessage()))

    # ================================================================== log dir failure

    def _log_dir_failed(self, log_dir: Path, exc: BaseException) -> None:
        """Kafka's ``ReplicaManager.handleLogDirFailure``: the dir's partitions go offline here, the
        controller is told through ``/log_dir_event_notification`` (it then moves their leadership and
        ISR membership away); with every log dir failed the broker halts, as Kafka's does."""
        lm, rm = self.log_manager, self.replica_manager
        if rm is not None and lm is not None:
            rm.handle_log_dir_failure(lm.offline_partitions_in(log_dir))
        if lm is not None and not lm.online_dirs:
            log.critical("halting broker %d: all log dirs (%s) have failed", self.broker_id,
                         ", ".join(map(str, lm.log_dirs)))
            os._exit(1)
        if self.zk is not None:
            d = self.zk.post_log_dir_event(self.broker_id)
            d.addCallbacks(lambda path: log.info("log dir %s failed (%s): posted %s", log_dir, exc, path),
                           lambda f: log.error("log dir %s failed; could not post the event: %s", log_dir,
                                               f.getErrorMessage()))

    # ================================================================== lifecycle

    @defer.inlineCallbacks
    def startup(self) -> Any:
        config = self.config
        log.info("starting broker %d", self.broker_id)
        # Every request/response struct now, in a worker thread, so that no first request compiles one.
        yield threads.deferToThread(wire_registry.compile_all)
        self.store = self.store_factory(config.zookeeper_connect, config.zookeeper_session_timeout_ms)
        yield self.store.start()
        self.zk = KafkaZkClient(self.store)
        yield self.zk.create_persistent_roots()
        cluster_id = yield self.zk.get_or_create_cluster_id()
        self.metadata_cache.cluster_id = cluster_id
        log.info("cluster id %s", cluster_id)
        self.topic_configs = TopicConfigManager(self.zk, config, self._on_topic_config_change)
        yield self.topic_configs.load()
        user_configs = self.user_configs = UserConfigCache(self.zk)
        yield user_configs.load()
        client_quotas = self.client_quotas = ClientQuotaService(
            self.zk, config, now_ms=lambda: int(time.monotonic() * 1000))
        yield defer.ensureDeferred(client_quotas.load())
        group_configs = self.group_configs = GroupConfigCache(self.zk)
        yield group_configs.load()

        async def on_entity_change(entity_path: str) -> None:
            if entity_path.startswith("groups/"):
                await group_configs.changed(entity_path)
                return
            # users/... and clients/... notifications: SCRAM credentials and client quotas.
            try:
                await user_configs.changed(entity_path)
            finally:
                await client_quotas.changed(entity_path)

        self.topic_configs.on_entity_change = lambda path: defer.ensureDeferred(on_entity_change(path))
        authorizer = self.authorizer = BrokerAuthorizer(self.zk, config)
        yield authorizer.load()
        # Every listener's security now: a bad JAAS or TLS config stops the start-up here.
        fake_salt_key = None
        if any(e.security_protocol.startswith("SASL_") for e in config.listener_endpoints):
            fake_salt_key = yield self.zk.get_or_create_scram_fake_salt_key()
        securities = {
            endpoint.name: listener_security(
                config, endpoint.name, endpoint.security_protocol,
                scram_credential=user_configs.scram_credential, scram_fake_salt_key=fake_salt_key,
            )
            for endpoint in config.listener_endpoints
        }
        self.interbroker_security = interbroker_security(config)

        self.log_manager = LogManager(
            [Path(d) for d in config.effective_log_dirs],
            config.log_config(),
            _now_ms,
            broker_id=self.broker_id,
            cluster_id=cluster_id,
            topic_config=self.log_config_for,
            cold_dirs=[Path(d) for d in config.effective_cold_log_dirs],
            # Called in whichever thread met the I/O error: handled on the reactor.
            on_dir_failure=lambda d, exc: self.reactor.callFromThread(self._log_dir_failed, d, exc),
        )
        yield threads.deferToThread(self.log_manager.startup)
        if config.effective_cold_log_dirs:
            self.cold_reads = ColdReader(self.reactor, config.mafka_cold_read_threads,
                                         config.mafka_cold_read_delay_ms, config.mafka_cold_read_isolation)
            self.cold_reads.start()
            # A cold read's I/O error takes that cold dir offline (with the partitions that have segments there).
            self.cold_reads.on_io_error = self.log_manager.cold_dir_failed_for
        high_watermarks = yield threads.deferToThread(self.log_manager.read_high_watermarks)
        zk = self.zk
        self.replica_manager = ReplicaManager(
            self.broker_id,
            self.log_manager,
            self.reactor,
            log_config_for=self.log_config_for,
            min_insync_replicas=self.min_insync_replicas,
            replica_lag_time_max_ms=config.replica_lag_time_max_ms,
            high_watermarks=high_watermarks,
            isr_writer=IsrWriteBatcher(self.reactor, zk.conditional_update_partition_states_as_leader).write,
            run_blocking=self.run_blocking,
            replica_selector=replica_selector_for(config.replica_selector_class),
            replica_racks=self.metadata_cache.racks,
        )
        self.replica_manager.fetcher_manager = ReplicaFetcherManager(
            self.broker_id, self.reactor, self.replica_manager, FetcherConfig.of(config, self.interbroker_security),
            throttle=_FollowerThrottle(self),
        )
        self.log_dir_mover = LogDirMover(
            self.log_manager, self.replica_manager, self.reactor, self.run_blocking,
            on_failure=lambda failure: self.background.report_failure(
                "log-dir-mover", failure, "(a replica move pass); the next one starts in 1 s"),
        )
        self.producer_ids = ProducerIdManager(self.broker_id, self.zk.claim_producer_id_block)
        self.group_service = GroupService(self)
        self.delayed_delivery = DelayedDelivery(self.replica_manager)
        self.transaction_service = TransactionService(self)
        self.share_coordinator_service = ShareCoordinatorService(self)
        self.share_persister = SharePersister(self)
        self.share_fetch = ShareFetchService(self)
        group_service, transaction_service = self.group_service, self.transaction_service
        share_coordinator_service = self.share_coordinator_service

        def on_leadership(topic: str, index: int, is_leader: bool, leader_epoch: int | None) -> None:
            group_service.on_leadership(topic, index, is_leader, leader_epoch)
            transaction_service.on_leadership(topic, index, is_leader, leader_epoch)
            share_coordinator_service.on_leadership(topic, index, is_leader, leader_epoch)

        self.replica_manager.leadership_listener = on_leadership

        self.fetch_sessions = FetchSessionCache(config.max_incremental_fetch_session_cache_slots)
        latencies = self.request_latencies

        def observe(request: Any, seconds: float) -> None:
            name = request_name(request.spec.name, request.header.api_key, request.body)
            latencies.record(name, int(self.reactor.seconds() * 1000), seconds * 1000.0)

        dispatcher = Dispatcher(collect_handlers(self), hold=True, observe=observe, quotas=client_quotas)
        for endpoint in config.listener_endpoints:
            factory = KafkaServerFactory(
                dispatcher,
                max_request_size=config.socket_request_max_bytes,
                idle_ms=config.connections_max_idle_ms,
                clock=self.reactor,
                listener=endpoint.name,
                security=securities[endpoint.name],
                request_metrics=self.request_metrics,
            )
            security = securities[endpoint.name]
            listening: Any = factory
            if security.uses_tls:
                listening = TLSMemoryBIOFactory(security.tls_context, False, factory)
            port = self.reactor.listenTCP(endpoint.port, listening, interface=endpoint.host or "0.0.0.0")
            self.ports.append(port)
            self.bound[endpoint.name] = port.getHost().port
            log.info("listening on %s:%d (%s)", endpoint.host or "0.0.0.0", port.getHost().port, endpoint.name)

        if config.mafka_metrics_port >= 0:
            from twisted.internet.error import CannotListenError

            from .metrics import metrics_site

            try:
                port = self.reactor.listenTCP(config.mafka_metrics_port, metrics_site(self))
            except CannotListenError as exc:
                # Metrics are worth a loud error, not a broker that refuses to serve its partitions.
                log.error("metrics not served: mafka.metrics.port %d: %s (set mafka.metrics.port to a free port, "
                          "or -1 for none)", config.mafka_metrics_port, exc.socketError)
            else:
                self.ports.append(port)
                self.metrics_port = port.getHost().port
                log.info("metrics on :%d (/metrics, /health)", self.metrics_port)

        registration = BrokerRegistration(
            id=self.broker_id,
            endpoints={
                e.name: e._replace(port=self.bound.get(e.name, e.port)) if e.port == 0 else e
                for e in config.advertised_endpoints
            },
            rack=config.broker_rack,
            timestamp=_now_ms(),
        )
        self.broker_epoch = yield defer.ensureDeferred(self._register(registration))
        log.info("registered /brokers/ids/%d (broker epoch %d)", self.broker_id, self.broker_epoch)
        self._admit_clients_when_cluster_known(dispatcher)
        self.peer_liveness = peer_liveness_for(self)

        if self.controller_factory is not None:
            self.controller = self.controller_factory(self)
            yield self.controller.start()
        self.topic_configs.start()
        authorizer.start()
        self._start_background_tasks()
        log.info("broker %d started", self.broker_id)

    def _admit_clients_when_cluster_known(self, dispatcher: Dispatcher) -> None:
        """Registered: serve the controller now, clients once the first UpdateMetadata arrived.

        Bounded by ``zookeeper.session.timeout.ms``: without a controller to
        send metadata the broker answers anyway, as Kafka does.
        """
        dispatcher.admit(_CONTROLLER_APIS)
        self._dispatcher = dispatcher
        self._open_timer = self.reactor.callLater(
            self.config.zookeeper_session_timeout_ms / 1000, self._open_to_clients, "no UpdateMetadata yet"
        )

    def _open_to_clients(self, why: str) -> None:
        if self._open_timer is not None and self._open_timer.active():
            self._open_timer.cancel()
        self._open_timer = None
        if self._dispatcher is not None and not self._dispatcher.is_open:
            log.info("answering clients (%s)", why)
            self._dispatcher.open()

    async def _register(self, registration: BrokerRegistration) -> int:
        """Registers ``/brokers/ids/<id>``; waits out the znode of this broker's previous, crashed session.

        A broker restarted within ``zookeeper.session.timeout.ms`` of a crash
        finds its old ephemeral znode still there.  Kafka gives up at once;
        Mafka retries until that session has expired (bounded by twice the
        session timeout), so a restart after SIGKILL simply takes a little longer.
        """
        assert self.zk is not None  # set by startup() before it registers
        deadline = self.reactor.seconds() + 2 * self.config.zookeeper_session_timeout_ms / 1000 + 5
        told = False
        while True:
            try:
                return await self.zk.register_broker(registration)
            except BrokerIdAlreadyRegisteredError as exc:
                if self.reactor.seconds() >= deadline:
                    raise
                if not told:
                    log.info("%s; waiting for that session to expire", exc)
                    told = True
                await task.deferLater(self.reactor, 0.5, lambda: None)

    def _start_background_tasks(self) -> None:
        config = self.config
        lm, rm, mover = self.log_manager, self.replica_manager, self.log_dir_mover
        groups, txns = self.group_service, self.transaction_service
        # all set up by startup() before it starts these
        assert lm is not None and rm is not None and mover is not None and groups is not None and txns is not None
        bg = self.background

        # Taken on the reactor before each pass: the worker thread never reads the partitions.  (No
        # list() copy: nothing changes the dict during a comprehension on the reactor, and 100,000
        # (tp, partition) tuples every 5 s set off collections that cost more than the pass.)
        def high_watermarks() -> tuple[dict[tuple[str, int], int]]:
            return ({tp: p.high_watermark for tp, p in rm.partitions.items()},)

        def retention_bounds() -> tuple[dict[tuple[str, int], int]]:
            return ({tp: retention_bound(p) for tp, p in list(rm.partitions.items())},)

        # (name, interval ms, work in a worker thread, its snapshot taken on the reactor)
        passes: list[tuple[str, int, Any, Any]] = [
            ("log-retention", config.log_retention_check_interval_ms, lm.retention_pass, retention_bounds),
            ("log-flush", max(1000, min(config.effective_log_flush_interval_ms, 60000)), lm.flush_pass, None),
            ("high-watermark-checkpoint", config.replica_high_watermark_checkpoint_interval_ms,
             lm.write_high_watermarks, high_watermarks),
            ("recovery-point-checkpoint", config.log_flush_offset_checkpoint_interval_ms,
             lm.checkpoint_recovery_points, None),
            ("log-start-offset-checkpoint", config.log_flush_start_offset_checkpoint_interval_ms,
             lm.checkpoint_log_start_offsets, None),
            ("log-cleaner", 15000, lm.cleaner_pass, None),
            ("delete-pending-logs", 1000, lm.delete_pending_logs, None),
        ]
        if lm.cold_dirs:
            crash_at = os.environ.get("MAFKA_TEST_CRASH_AFTER_MOVE_STEP")

            def crash_test_hook(step: str) -> None:
                # tests only: die like a SIGKILL right after this step of a hot -> cold move
                if step == crash_at:
                    log.warning("MAFKA_TEST_CRASH_AFTER_MOVE_STEP=%s: exiting now", step)
                    os._exit(70)

            passes.append(("cold-tier-mover", config.mafka_cold_mover_interval_ms,
                           lambda: lm.tier_pass(config.mafka_hot_retention_ms, config.mafka_hot_retention_bytes,
                                                crash_test_hook if crash_at else None), None))
        for name, interval_ms, work, snapshot in passes:
            bg.every_in_thread(name, interval_ms / 1000, work, snapshot=snapshot)
        bg.every("isr-shrink", max(50, config.replica_lag_time_max_ms // 2) / 1000, rm.maybe_shrink_isr)
        bg.every("log-dir-mover", 1.0, mover.kick)  # resumes moves found at startup
        bg.every("isr-change-propagation", 2.5, self._propagate_isr_changes)
        bg.every("offsets-expiration", config.offsets_retention_check_interval_ms / 1000,
                 groups.expire_offsets)
        if self.client_quotas is not None:
            bg.every("client-quota-sensor-expiry", 30.0, self.client_quotas.expire)  # Kafka's ExpireSensorTask
        bg.every("group-coordinator-tick", 0.1, groups.tick)
        bg.every("reactor-idle", 1.0, self.reactor_idle.sample, first_delay_s=0)
        bg.every("consumer-lag", SAMPLE_INTERVAL_S, self.group_lag.sample)
        bg.every("transaction-coordinator-tick", 0.1, txns.tick)
        rm.on_delays = self.delayed_delivery.wake
        self.delayed_delivery.run_with(bg)
        rm.dir_latencies = self.dir_latencies
        if self.cold_reads is not None:
            self.cold_reads.dir_latencies = self.dir_latencies
        self.monitor = Monitor(self)
        bg.every("monitor", config.mafka_monitor_interval_ms / 1000, self._monitor_pass)
        self.rebalancer = RebalancerService(self)
        bg.every("rebalancer", 1.0, self._rebalancer_tick)
        txns.startup()  # its coordinator's passes (timed-out aborts, id expiration)
        if self.share_coordinator_service is not None:
            self.share_coordinator_service.startup()  # its stall check, pruning and cold snapshots
        if self.share_fetch is not None:
            self.share_fetch.startup()  # closed connections' share sessions

    def _monitor_pass(self) -> defer.Deferred:
        """The slow-node report: inputs copied on the reactor, computed off it, written to ZooKeeper."""
        inputs = self.monitor.snapshot()
        d = self.run_blocking(self.monitor.compute, inputs)
        d.addCallback(lambda report: defer.ensureDeferred(self.monitor.write(report)))
        return d

    def _rebalancer_tick(self) -> defer.Deferred:
        return defer.ensureDeferred(self.rebalancer.tick())

    def _propagate_isr_changes(self) -> defer.Deferred | None:
        rm = self.replica_manager
        assert rm is not None  # the pass is started once startup() made it
        changed = rm.isr_changes_to_propagate()
        if not changed or self.zk is None:
            return None
        d = self.zk.post_isr_change_notification(changed)

        def failed(failure: Any) -> Any:
            # Announced next time (the set was emptied for this one): the controller must hear of them.
            rm.isr_change_set.update(changed)
            return failure

        return d.addErrback(failed)

    @defer.inlineCallbacks
    def shutdown(self) -> Any:
        """Graceful stop: listeners, controller, producer snapshots, flush + checkpoints + marker, ZooKeeper."""
        log.info("shutting down broker %d", self.broker_id)
        if self.replica_manager is not None and self.replica_manager.fetcher_manager is not None:
            # Stop following first: a follower that keeps fetching while the controller
            # moves leadership off this broker would be taken back into the ISRs it is
            # about to leave (the race KIP-841 closed in Kafka 3.3), and acks=all would
            # then wait for a broker that is gone.
            self.replica_manager.fetcher_manager.shutdown()
        if self.config.controlled_shutdown_enable and self.zk is not None and self.broker_epoch >= 0:
            try:
                yield defer.ensureDeferred(self._controlled_shutdown())
            except Exception as exc:  # noqa: BLE001 - shutting down goes on regardless
                log.warning("controlled shutdown failed: %s", exc)
            channel = getattr(self.controller, "channel", None)
            if channel is not None and getattr(self.controller, "is_active", False):
                # This broker is the controller: let the LeaderAndIsr / UpdateMetadata of its
                # own controlled shutdown reach the others before its connections close, or
                # clients are told the old leader until the next controller's failover.
                drained = yield channel.drained(2.0)
                if not drained:
                    log.info("controller requests still queued at shutdown; the next controller resends the state")
        if self._open_timer is not None and self._open_timer.active():
            self._open_timer.cancel()
        if self.peer_liveness is not None:
            self.peer_liveness.stop()
        # Runs in progress finish by themselves; none is started again.
        self.background.stop_all()
        self.group_lag.close()
        for port in self.ports:
            yield port.stopListening()
        if self.group_service is not None:
            self.group_service.shutdown()
        if self.transaction_service is not None:
            self.transaction_service.shutdown()
        if self.share_fetch is not None:
            self.share_fetch.shutdown()
        if self.share_persister is not None:
            self.share_persister.close()
        if self.share_coordinator_service is not None:
            self.share_coordinator_service.shutdown()
        if self.topic_configs is not None:
            self.topic_configs.stop()
        if self.authorizer is not None:
            self.authorizer.stop()
        if self.controller is not None:
            yield defer.maybeDeferred(self.controller.stop)
        if self.log_dir_mover is not None:
            yield self.log_dir_mover.stop()
        if self.replica_manager is not None:
            self.replica_manager.shutdown()
        if self.log_manager is not None:
            yield threads.deferToThread(self.log_manager.shutdown)
        if self.cold_reads is not None:
            self.cold_reads.stop()
        if self.store is not None:
            yield self.store.stop()
        log.info("broker %d stopped", self.broker_id)


    async def _controlled_shutdown(self) -> bool:
        """Asks the controller to move leadership off this broker; True once it leads nothing replicated.

        Kafka's ``KafkaServer.controlledShutdown``: up to
        ``controlled.shutdown.max.retries`` tries, ``controlled.shutdown.retry.backoff.ms``
        apart after a failed one, each bounded by ``request.timeout.ms``.  Each try asks
        ZooKeeper who the controller is now.  A try fails as soon as its connection does
        (a controller that is itself stopping refuses or drops it), and the backoff ends
        early once ZooKeeper names a different controller, so brokers stopping together
        do not wait out a timeout on a controller that is gone.
        """
        from mafka.interbroker.connection import InterBrokerConnection

        assert self.zk is not None  # shutdown() asks only with a ZooKeeper client
        config = self.config
        backoff = config.controlled_shutdown_retry_backoff_ms / 1000
        for attempt in range(1, max(1, config.controlled_shutdown_max_retries) + 1):
            controller_id = await self.zk.get_controller_id()
            endpoint = self.metadata_cache.endpoint(controller_id, config.inter_broker_listener) if controller_id is not None else None
            if controller_id == self.broker_id:
                endpoint = ("127.0.0.1", self.bound.get(config.inter_broker_listener, config.inter_broker_endpoint.port))
            if endpoint is None:
                log.info("controlled shutdown: no controller known (try %d)", attempt)
            else:
                conn = InterBrokerConnection(
                    self.reactor, endpoint[0], endpoint[1], f"broker-{self.broker_id}-shutdown",
                    security=self.interbroker_security,
                )
                try:
                    d = conn.request(7, 2, {"broker_id": self.broker_id, "broker_epoch": self.broker_epoch})
                    d.addTimeout(config.request_timeout_ms / 1000, self.reactor)
                    response = await d
                    remaining = [(r.topic_name, r.partition_index) for r in response.remaining_partitions]
                    if response.error_code == 0 and not remaining:
                        log.info("controlled shutdown succeeded (controller %d)", controller_id)
                        return True
                    log.info("controlled shutdown: error %d, still leading %s (try %d)", response.error_code, remaining[:10], attempt)
                    if response.error_code == 0 and not self._successor_possible(remaining):
                        log.info("controlled shutdown: no other live in-sync replica can lead %s; not retrying", remaining[:10])
                        return False
                except Exception as exc:  # noqa: BLE001 - retried
                    log.info("controlled shutdown via controller %s failed: %s (try %d)", controller_id, exc, attempt)
                finally:
                    conn.close()
            if attempt < config.controlled_shutdown_max_retries:
                await self._controller_change_or(backoff, controller_id)
        log.warning("controlled shutdown did not complete; shutting down anyway")
        return False


    async def _controller_change_or(self, timeout_s: float, controller_id: int | None) -> None:
        """Waits *timeout_s*, or less: until ZooKeeper names a controller other than *controller_id*."""
        assert self.zk is not None  # only during _controlled_shutdown
        deadline = self.reactor.seconds() + timeout_s
        while True:
            left = deadline - self.reactor.seconds()
            if left <= 0:
                return
            await task.deferLater(self.reactor, min(0.1, left), lambda: None)
            try:
                current = await self.zk.get_controller_id()
            except Exception:  # noqa: BLE001 - ZooKeeper unreachable: wait out the backoff
                continue
            if current is not None and current != controller_id:
                return

    def _successor_possible(self, partitions: list[tuple[str, int]]) -> bool:
        """Whether some partition has another live ISR member (as the last UpdateMetadata said)."""
        live = set(self.metadata_cache.brokers) - {self.broker_id}
        for topic, index in partitions:
            info = self.metadata_cache.partition(topic, index)
            if info is None or live.intersection(info.isr):
                return True
        return False


class _FollowerThrottle:
    """The follower-side replication throttle from the dynamic broker and topic configs."""

    def __init__(self, server: KafkaServer) -> None:
        self.server = server
        self.quota = ReplicationQuota(server.reactor.seconds, self.rate)

    def rate(self) -> float | None:
        configs = self.server.topic_configs
        value = configs.broker_overrides.get("follower.replication.throttled.rate") if configs is not None else None
        try:
            return float(value) if value else None
        except ValueError:
            return None

    def active(self) -> bool:
        """Whether a rate is set: without one, no replica is throttled (and the fetchers skip the per-partition check)."""
        return self.rate() is not None

    def is_throttled(self, tp: tuple[str, int]) -> bool:
        configs = self.server.topic_configs
        if configs is None:
            return False
        setting = configs.overrides.get(tp[0], {}).get("follower.replication.throttled.replicas")
        return is_throttled_replica(setting, tp[1], self.server.broker_id)


def _kazoo_store(connect: str | None, session_timeout_ms: int) -> Any:
    from mafka.coordination.kazoo_store import KazooStore

    if not connect:
        raise ConfigError.for_key(
            "zookeeper.connect", 'Missing required configuration "zookeeper.connect" which has no default value.'
        )

    return KazooStore(connect, session_timeout_ms=session_timeout_ms)
