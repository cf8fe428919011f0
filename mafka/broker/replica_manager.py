"""The partitions hosted on this broker, and the waiting rooms for fetches and produces.

Plain Python over :class:`~mafka.broker.partition.Partition`; time comes
from an injected ``IReactorTime`` (``callLater``), so tests drive it with
``twisted.internet.task.Clock``.

* LeaderAndIsr / StopReplica from the controller create, re-role and remove
  partitions (controller-epoch and leader-epoch fencing as Kafka).
* Produce appends through the partition leaders (a Produce v0–2 legacy
  message set is first up-converted to one v2 batch).  acks=−1 checks
  ``min.insync.replicas`` before the append (NOT_ENOUGH_REPLICAS, nothing
  written) and answers once the high watermark covers the batch
  (NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR shrank meanwhile) or
  REQUEST_TIMED_OUT at the request timeout.
* Followers' fetches move their leaders' high watermarks and may re-admit
  them to the ISR; a timer shrinks ISRs of lagging followers
  (:meth:`ReplicaManager.maybe_shrink_isr`).  ISR changes are written to
  ZooKeeper by an injected ``isr_writer`` and announced in batches
  (:meth:`ReplicaManager.isr_changes_to_propagate`), as Kafka 2.6 does.
* Follower partitions are handed to an injected fetcher manager, which
  truncates them (:meth:`ReplicaManager.truncate_follower`, off the
  reactor) and appends what it fetched (:meth:`ReplicaManager.append_as_follower`).
* Fetch answers at once when it has ``min_bytes`` (or an error, or
  ``max_wait_ms`` ≤ 0); otherwise it parks and is **woken by appends** to
  any of its partitions (at a follower: by its high watermark moving), or by
  its own timer at ``max_wait_ms``.
* Transactions (KIP-98): :meth:`ReplicaManager.append_txn_markers` writes
  the transaction coordinator's COMMIT/ABORT markers as leader with acks=−1
  semantics (the acks=all produce waiting room).  A READ_COMMITTED consumer
  fetch (``isolation_level`` 1) reads up to the last stable offset, gets the
  aborted transactions overlapping its data, and parks until data below the
  LSO exists (the LSO moves only with the HW, whose moves wake it).
* Fetch from the closest replica (KIP-392): a consumer's Fetch v11+ (one
  with :class:`~mafka.broker.replica_selector.ClientMetadata`) may be served
  by a follower, up to the follower's high watermark.  With a
  ``replica_selector`` the leader offers the selector itself and every
  follower that holds the fetch offset and caught up within
  ``replica.lag.time.max.ms``; if it picks a follower, that partition is
  answered at once with no records and its ``preferred_read_replica``.

The waiting rooms themselves (parking, waking, timing out) are
:mod:`mafka.broker.waiting_rooms`; the records of this API
(:class:`FetchPartition`, :class:`FetchedPartition`, :class:`ProduceResult` …)
are :mod:`mafka.broker.replica_records`, re-exported here.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from twisted.internet import defer

from mafka.delayed.produce import DelaySettings, envelope_if_delayed
from mafka.errors import (
    ErrorCode,
    KafkaError,
    KafkaStorageError,
    NotLeaderOrFollowerError,
    OffsetOutOfRangeError,
    UnknownTopicOrPartitionError,
)
from mafka.log.validation import (
    RecordValidationError,
    needs_record_checks,
    up_convert_legacy,
    validate_produce_batch,
    validate_records,
)
from mafka.wire.batch import BatchHeader
from mafka.wire.legacy_records import is_legacy_message_set

from .broker_topic_stats import BrokerTopicStats
from .partition import FetchClock, FollowerState, LeaderState, Partition
from .replica_records import (
    FetchedPartition,
    FetchPartition,
    FollowerTarget,
    ProduceResult,
    TxnMarker,
    fetch_only_from_leader,
)
from .replica_selector import NO_NODE, ClientMetadata, PartitionView, ReplicaSelector, ReplicaView
from .waiting_rooms import WaitingRooms

#: Kafka 2.6 ``ReplicaManager``: ISR changes are announced when none happened for this long …
ISR_CHANGE_BLACKOUT_MS = 5000
#: … or when the last announcement is this old.
ISR_CHANGE_MAX_DELAY_MS = 60000

__all__ = ["ReplicaManager", "FetchPartition", "FetchedPartition", "ProduceResult", "TxnMarker"]

log = logging.getLogger("mafka.broker.replica_manager")


class ReplicaManager:
    """Partitions on this broker.

    Args:
        broker_id: this broker's id.
        log_manager: a :class:`mafka.log.manager.LogManager` (``get_or_create_log``,
            ``get_log``, ``delete_log``, ``log_io``, ``truncate_to``).
        clock: an ``IReactorTime`` for the waiting rooms' timers (and the time, in ms).
        log_config_for: topic → LogConfig (the topic's config over the broker's).
        min_insync_replicas: topic → its ``min.insync.replicas``.
        replica_lag_time_max_ms: ``replica.lag.time.max.ms``.
        high_watermarks: checkpointed HWs, read at startup.
        isr_writer: ``(tp, LeaderIsrAndControllerEpoch, expected_zk_version) ->
            Deferred[(ok, zk_version)]`` (the leader's conditional state write);
            None commits ISR changes at once (unit tests without ZooKeeper).
        fetcher_manager: ``add_partitions({tp: FollowerTarget})`` /
            ``remove_partitions(tps)``; None runs no fetchers.
        run_blocking: ``(fn, *args) -> Deferred`` running disk work off the
            reactor; None runs it inline (unit tests).
        replica_selector: ``replica.selector.class`` as an instance
            (:func:`~mafka.broker.replica_selector.replica_selector_for`);
            None: consumers always read from the leader.
        replica_racks: listener name → ``{broker id: rack}`` of the live
            brokers with an endpoint on that listener (the metadata cache);
            None knows no broker, so the selector only ever sees the leader.
    """

    def __init__(
        self,
        broker_id: int,
        log_manager: Any,
        clock: Any,
        *,
        log_config_for: Callable[[str], Any] | None = None,
        min_insync_replicas: Callable[[str], int] | None = None,
        replica_lag_time_max_ms: int = 30000,
        high_watermarks: dict[tuple[str, int], int] | None = None,
        isr_writer: Callable[..., defer.Deferred] | None = None,
        fetcher_manager: Any = None,
        run_blocking: Callable[..., defer.Deferred] | None = None,
        replica_selector: ReplicaSelector | None = None,
        replica_racks: Callable[[str], dict[int, str | None]] | None = None,
    ) -> None:
        self.broker_id = broker_id
        self.log_manager = log_manager
        self.clock = clock
        self.log_config_for = log_config_for or (lambda topic: None)
        self.min_insync_replicas = min_insync_replicas or (lambda topic: 1)
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.high_watermarks = dict(high_watermarks or {})
        self.isr_writer = isr_writer
        self.fetcher_manager = fetcher_manager
        self.run_blocking = run_blocking or (lambda fn, *args: defer.maybeDeferred(fn, *args))
        self.replica_selector = replica_selector
        self.replica_racks = replica_racks or (lambda listener: {})
        self.partitions: dict[tuple[str, int], Partition] = {}
        #: partitions whose log dir failed (until restart): KAFKA_STORAGE_ERROR
        self.offline_partitions: set[tuple[str, int]] = set()
        self.controller_epoch = 0
        #: called with every partition that changed (see :meth:`_wake`): the fetch sessions listen
        self.change_listeners: list[Callable[[tuple[str, int]], None]] = []
        #: the parked acks=−1 produces and fetches (:mod:`mafka.broker.waiting_rooms`)
        self.waiting_rooms = WaitingRooms(
            clock,
            partition=lambda tp: self.partitions.get(tp),
            min_insync_replicas=lambda topic: self.min_insync_replicas(topic),
            read=self._read,
        )
        self._prepared: dict[tuple[str, int], Partition] = {}  # opened off the reactor, not yet applied
        #: called on the reactor once a partition here holds delayed messages (an index opened with
        #: its log, or created by its first envelope): the broker's delayed delivery starts ticking
        self.on_delays: Callable[[], None] = lambda: None
        self._truncating: dict[tuple[str, int], defer.Deferred] = {}
        self.isr_change_set: set[tuple[str, int]] = set()
        self.last_isr_change_ms = 0
        self.last_isr_propagation_ms = self.now_ms()
        #: per log dir append latencies (``write:<dir>``), a ``RequestLatencies`` the broker sets
        self.dir_latencies: Any = None
        #: per-topic traffic (Kafka's BrokerTopicMetrics), read by the metrics endpoint
        self.topic_stats = BrokerTopicStats()
        self.isr_shrinks = 0
        #: partitions whose shrink check raised (each logged with its traceback; the others went on)
        self.isr_shrink_failures = 0
        self.isr_expands = 0
        #: Called as ``(topic, index, is_leader, leader_epoch or None)`` after each applied
        #: role change (the group coordinator follows ``__consumer_offsets`` leadership).
        self.leadership_listener: Callable[[str, int, bool, int | None], None] | None = None

    def _timed_write(self, partition: Partition, started: float) -> None:
        """Per log dir write latency (the monitor reports it): an append's time into the page cache."""
        if self.dir_latencies is not None:
            self.dir_latencies.record(f"write:{partition.log.directory.parent}", self.now_ms(),
                                      (time.perf_counter() - started) * 1000.0)

    def now_ms(self) -> int:
        return int(self.clock.seconds() * 1000)

    # ================================================================== controller requests

    def become_leader_or_follower(self, body: Any) -> dict[str, Any]:
        """Applies a LeaderAndIsr v2–v5 body; returns the response body (v2–v4 shape)."""
        errors = []
        if body.controller_epoch < self.controller_epoch:
            for ts in body.topic_states:
                for ps in ts.partition_states:
                    errors.append(_partition_error(ts.topic_name, ps.partition_index, ErrorCode.STALE_CONTROLLER_EPOCH))
            return {"error_code": ErrorCode.STALE_CONTROLLER_EPOCH, "partition_errors": errors}
        self.controller_epoch = body.controller_epoch
        endpoints = {lead.broker_id: (lead.host_name, lead.port) for lead in body.live_leaders}
        followed: dict[tuple[str, int], FollowerTarget] = {}
        unfollowed: list[tuple[str, int]] = []
        changed: list[tuple[str, int, bool, int]] = []
        for ts in body.topic_states:
            for ps in ts.partition_states:
                tp = (ts.topic_name, ps.partition_index)
                error = self._apply_partition_state(tp, ps)
                errors.append(_partition_error(tp[0], tp[1], error))
                if error != ErrorCode.NONE:
                    continue
                changed.append((tp[0], tp[1], ps.leader == self.broker_id, ps.leader_epoch))
                if ps.leader != self.broker_id and ps.leader in endpoints:
                    followed[tp] = FollowerTarget(ps.leader, *endpoints[ps.leader], ps.leader_epoch)
                else:
                    unfollowed.append(tp)
        if self.fetcher_manager is not None:
            if unfollowed:
                self.fetcher_manager.remove_partitions(unfollowed)
            if followed:
                self.fetcher_manager.add_partitions(followed)
        if self.leadership_listener is not None:
            for change in changed:
                self.leadership_listener(*change)
        return {"error_code": ErrorCode.NONE, "partition_errors": errors}

    def truncations_in_flight(self, body: Any) -> defer.Deferred:
        """Fires when no follower truncation of a partition in this LeaderAndIsr body is running.

        A role change must not overtake a truncation running in a worker
        thread: a new leader's appends could otherwise be cut off by it.
        """
        pending = [
            d
            for ts in body.topic_states
            for ps in ts.partition_states
            if (d := self._truncating.get((ts.topic_name, ps.partition_index))) is not None
        ]
        if not pending:
            return defer.succeed(None)
        def relay(result: Any, waiter: defer.Deferred[None]) -> Any:
            waiter.callback(None)
            return result

        waits = []
        for d in pending:
            w: defer.Deferred[None] = defer.Deferred()
            d.addBoth(relay, w)
            waits.append(w)
        return defer.DeferredList(waits)

    def prepare_partitions(self, body: Any) -> None:
        """Opens or creates the logs a LeaderAndIsr body needs — blocking disk work.

        Run it in a worker thread before :meth:`become_leader_or_follower`
        (which then only changes roles on the reactor): creating a log
        fsyncs directories and loading one scans its producer state.
        Failures are left for :meth:`become_leader_or_follower` to report.
        """
        for ts in body.topic_states:
            for ps in ts.partition_states:
                tp = (ts.topic_name, ps.partition_index)
                if self.broker_id not in ps.replicas or tp in self.partitions or tp in self._prepared:
                    continue
                try:
                    self._prepared[tp] = self._new_partition(tp, ps.is_new)
                except KafkaError:
                    continue

    def _new_partition(self, tp: tuple[str, int], is_new: bool) -> Partition:
        log_ = self.log_manager.get_or_create_log(tp[0], tp[1], self.log_config_for(tp[0]), is_new=is_new)
        return Partition(
            tp[0], tp[1], self.broker_id, log_,
            high_watermark=self.high_watermarks.get(tp, 0),
            replica_lag_time_max_ms=self.replica_lag_time_max_ms,
        )

    def _apply_partition_state(self, tp: tuple[str, int], ps: Any) -> ErrorCode:
        if self.broker_id not in ps.replicas:
            return ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
        partition = self.partitions.get(tp)
        if partition is not None and partition.state is not None and ps.leader_epoch <= partition.leader_epoch:
            return ErrorCode.STALE_CONTROLLER_EPOCH
        try:
            if partition is None:
                partition = self._prepared.pop(tp, None) or self._new_partition(tp, ps.is_new)
                self.partitions[tp] = partition
                partition.on_first_delay = self.on_delays
                if partition.delays is not None:
                    self.on_delays()
            state = LeaderState(
                ps.leader, ps.leader_epoch, tuple(ps.isr), tuple(ps.replicas), ps.zk_version, ps.controller_epoch,
                # v3+: the reassignment state (absent from v2 requests).
                tuple(getattr(ps, "adding_replicas", None) or ()),
                tuple(getattr(ps, "removing_replicas", None) or ()),
            )
            if ps.leader == self.broker_id:
                partition.make_leader(state, self.now_ms())
            else:
                partition.make_follower(state)
        except KafkaError as exc:
            return exc.code
        self._wake(tp)
        return ErrorCode.NONE

    def stop_replicas(self, body: Any) -> dict[str, Any]:
        """Applies a StopReplica v1 body (delete_partitions removes the logs)."""
        if body.controller_epoch < self.controller_epoch:
            return {"error_code": ErrorCode.STALE_CONTROLLER_EPOCH, "partition_errors": []}
        self.controller_epoch = body.controller_epoch
        errors = []
        if self.fetcher_manager is not None:
            self.fetcher_manager.remove_partitions([(t.name, i) for t in body.topics for i in t.partition_indexes])
        for topic in body.topics:
            for index in topic.partition_indexes:
                tp = (topic.name, index)
                error = ErrorCode.NONE
                # Without deletion the replica stays hosted (its HW keeps being
                # checkpointed), leaderless until the next LeaderAndIsr, as Kafka.
                partition = self.partitions.pop(tp, None) if body.delete_partitions else self.partitions.get(tp)
                if partition is not None:
                    state = partition.state
                    replicas = state.replicas if state is not None else ()
                    partition.make_follower(LeaderState(-1, partition.leader_epoch, (), replicas, -1, body.controller_epoch))
                    self._wake(tp)
                if self.leadership_listener is not None:
                    self.leadership_listener(tp[0], tp[1], False, None)
                if body.delete_partitions:
                    try:
                        self.log_manager.delete_log(tp[0], tp[1])
                    except KafkaError as exc:
                        error = exc.code
                errors.append(_partition_error(tp[0], tp[1], error))
        return {"error_code": ErrorCode.NONE, "partition_errors": errors}

    def _partition_or_raise(self, topic: str, index: int) -> Partition:
        """The hosted partition.

        Raises:
            KafkaStorageError: its log dir failed (Kafka's ``HostedPartition.Offline``).
            UnknownTopicOrPartitionError: not hosted here.
        """
        partition = self.partitions.get((topic, index))
        if partition is None:
            if (topic, index) in self.offline_partitions:
                raise KafkaStorageError(f"{topic}-{index} is offline on broker {self.broker_id}: its log dir failed")
            raise UnknownTopicOrPartitionError(f"{topic}-{index} is not hosted on broker {self.broker_id}")
        return partition

    def handle_log_dir_failure(self, tps: Iterable[tuple[str, int]]) -> list[tuple[str, int]]:
        """Kafka's ``handleLogDirFailure`` for the partitions whose log a failed dir held: their fetchers
        stop, they are hosted no more (requests for them answer KAFKA_STORAGE_ERROR, and so does a
        LeaderAndIsr, which tells the controller), waiting produces and fetches are answered.
        Returns the partitions newly taken offline."""
        gone = [tp for tp in tps if tp in self.partitions]
        if not gone:
            return []
        if self.fetcher_manager is not None:
            self.fetcher_manager.remove_partitions(gone)
        for tp in gone:
            self.partitions.pop(tp, None)
            self._prepared.pop(tp, None)
            self.offline_partitions.add(tp)
            self._wake(tp)
            if self.leadership_listener is not None:
                self.leadership_listener(tp[0], tp[1], False, None)
        log.error("broker %d: partitions %s are offline (log dir failure)", self.broker_id,
                  ", ".join(f"{t}-{p}" for t, p in sorted(gone)))
        return gone

    def shutdown(self) -> None:
        """Stops the fetchers and snapshots every partition's producer state (before the logs close)."""
        if self.fetcher_manager is not None:
            self.fetcher_manager.shutdown()
        for partition in self.partitions.values():
            try:
                partition.snapshot_producer_state()
            except OSError as exc:
                log.warning("%s-%d: producer state snapshot failed: %s", partition.topic, partition.index, exc)

    def leader_partition(self, topic: str, index: int) -> Partition:
        """The partition if this broker leads it.

        Raises:
            UnknownTopicOrPartitionError, NotLeaderOrFollowerError.
        """
        partition = self._partition_or_raise(topic, index)
        if not partition.is_leader:
            raise NotLeaderOrFollowerError(f"broker {self.broker_id} does not lead {topic}-{index}")
        return partition

    # ================================================================== produce

    def append_records(
        self,
        entries: Iterable[tuple[str, int, Any]],
        *,
        acks: int,
        timeout_ms: int,
        produce_version: int,
        max_message_bytes: Callable[[str], int],
        origin: str = "client",
    ) -> defer.Deferred:
        """Validates and appends each partition's batch; fires with {(topic, p): ProduceResult}.

        ``origin="coordinator"`` marks a coordinator's own batches (Kafka's
        ``AppendOrigin.Coordinator``): their producer sequence is not checked.
        """
        results: dict[tuple[str, int], ProduceResult] = {}
        stats = self.topic_stats
        for topic, index, records in entries:
            tp = (topic, index)
            try:
                partition = self.leader_partition(topic, index)
                if records is None:
                    raise KafkaError.for_code(ErrorCode.INVALID_RECORD)("a partition with null records")
                max_bytes = max_message_bytes(topic)
                if produce_version <= 2 and is_legacy_message_set(records):
                    # Old clients' magic 0/1 sets become one v2 batch (the log is always v2, KIP-724);
                    # v3+ batches never come here and stay opaque.
                    records = up_convert_legacy(records, max_message_bytes=max_bytes)
                header = validate_produce_batch(records, produce_version=produce_version, max_message_bytes=max_bytes)
                config = partition.log.config
                if needs_record_checks(header, config):
                    validate_records(records, header, config, now_ms=self.now_ms(), topic_partition=f"{topic}-{index}")
                if origin == "client":
                    # Mafka's delayed messages: a batch asking for delay is held in an envelope until due.
                    envelope = envelope_if_delayed(records, header, DelaySettings(config.mafka_delay_ms,
                                                                                 config.mafka_delay_max_ms),
                                                   now_ms=self.now_ms())
                    if envelope is not None:
                        records, header = envelope, BatchHeader(envelope)
                started = time.perf_counter()
                with self.log_manager.log_io(tp):
                    info = partition.append_as_leader(
                        records, header, required_acks=acks, min_isr=self.min_insync_replicas(topic), now_ms=self.now_ms(),
                        origin=origin,
                    )
                self._timed_write(partition, started)
                results[tp] = ProduceResult(ErrorCode.NONE, info.first_offset, info.log_append_time, info.log_start_offset, info.last_offset)
                stats.produced(topic, ErrorCode.NONE, info.record_count, info.valid_bytes)
                self._wake(tp)
            except RecordValidationError as exc:
                results[tp] = ProduceResult(exc.code, record_errors=exc.record_errors, error_message=exc.message)
                stats.produced(topic, exc.code, 0, len(records) if records is not None else 0)
            except KafkaError as exc:
                results[tp] = ProduceResult(exc.code)
                stats.produced(topic, exc.code, 0, len(records) if records is not None else 0)
        if acks != -1:
            return defer.succeed(results)
        return self._await_replication(results, timeout_ms)

    def append_txn_markers(self, markers: Iterable[TxnMarker], timeout_ms: int) -> defer.Deferred:
        """Writes transaction markers as leader; fires with ``{(topic, partition): ErrorCode}`` once each is replicated.

        Each entry is ``(topic, partition, producer_id, producer_epoch,
        coordinator_epoch, commit)``: one COMMIT (*commit*) or ABORT control
        batch per partition, appended as Kafka's WriteTxnMarkers does
        (``appendRecords`` with acks −1, origin Coordinator, internal topics
        allowed): ``min.insync.replicas`` is checked first, and the answer
        waits in the acks=all waiting room until the HW covers the marker.

        Errors: UNKNOWN_TOPIC_OR_PARTITION (not hosted here),
        NOT_LEADER_OR_FOLLOWER, NOT_ENOUGH_REPLICAS (nothing written),
        INVALID_PRODUCER_EPOCH, TRANSACTION_COORDINATOR_FENCED,
        NOT_ENOUGH_REPLICAS_AFTER_APPEND, REQUEST_TIMED_OUT after *timeout_ms*,
        KAFKA_STORAGE_ERROR.
        """
        results: dict[tuple[str, int], ProduceResult] = {}
        for topic, index, producer_id, producer_epoch, coordinator_epoch, commit in markers:
            tp = (topic, index)
            try:
                partition = self.leader_partition(topic, index)
                with self.log_manager.log_io(tp):
                    info = partition.append_txn_marker_as_leader(
                        producer_id, producer_epoch, coordinator_epoch, bool(commit),
                        min_isr=self.min_insync_replicas(topic), now_ms=self.now_ms(),
                    )
                results[tp] = ProduceResult(ErrorCode.NONE, info.first_offset, -1, info.log_start_offset, info.last_offset)
                self._wake(tp)
            except KafkaError as exc:
                results[tp] = ProduceResult(exc.code)
        d = self._await_replication(results, timeout_ms)
        return d.addCallback(lambda done: {tp: r.error for tp, r in done.items()})

    def _await_replication(self, results: dict[tuple[str, int], ProduceResult], timeout_ms: int) -> defer.Deferred:
        """The acks=−1 waiting room (:meth:`WaitingRooms.await_replication`); also used by delayed delivery."""
        return self.waiting_rooms.await_replication(results, timeout_ms)

    # ================================================================== fetch

    def fetch(
        self, replica_id: int, max_wait_ms: int, min_bytes: int, max_bytes: int, partitions: Sequence[FetchPartition],
        *, whole_first_batches: bool = False, client_metadata: ClientMetadata | None = None, isolation_level: int = 0,
        on_park: Callable[[Callable[[FetchPartition], None]], None] | None = None,
    ) -> defer.Deferred:
        """Reads every requested partition; parks until *min_bytes* or *max_wait_ms*.

        A consumer's *isolation_level* 1 (READ_COMMITTED, Fetch v4+) reads up
        to each partition's last stable offset, and only data below it counts
        towards *min_bytes*; followers ignore it (Kafka's ``FetchLogEnd``).

        Fires with a list of :class:`FetchedPartition` in request order.
        With *whole_first_batches* every partition's first batch is read
        whole, not only the response's first (legacy fetches: the caller
        down-converts and cuts the result to the limits itself).
        *client_metadata* comes with every Fetch v11+: a consumer's may then
        read a follower, and the leader may point it to another replica
        (KIP-392, see the module docstring).  A response naming a preferred
        replica is sent at once (KAFKA-13767; Kafka 2.8 still waited).
        *on_park* is :meth:`WaitingRooms.park_fetch <mafka.broker.waiting_rooms.WaitingRooms.park_fetch>`'s.
        """
        results = self._read(replica_id, max_bytes, partitions, whole_first_batches, client_metadata, isolation_level)
        total = sum(r.result.data.size for r in results if r.result is not None)
        if (
            max_wait_ms <= 0
            or total >= min_bytes
            or any(r.error != ErrorCode.NONE or r.preferred_read_replica >= 0 for r in results)
        ):
            return defer.succeed(results)
        return self.waiting_rooms.park_fetch(
            replica_id, max_wait_ms, min_bytes, max_bytes, partitions, whole_first_batches=whole_first_batches,
            client_metadata=client_metadata, isolation_level=isolation_level, on_park=on_park,
        )

    def idle_follower(self, replica_id: int, cached: Any, r: FetchedPartition, clock: FetchClock) -> FollowerState | None:
        """After a follower's session read *r*: its state attached to *clock* if the partition is idle for it, else None.

        Idle (:mod:`mafka.broker.fetch_session`): led here at the epoch it
        fetched at, the follower in the ISR (one outside must be read again
        to rejoin), fetching at the log end, nothing read and no error, and
        nothing moved since the read — the follower's own fetch may just have
        moved the high watermark, which the response (as of the read) does
        not carry yet.
        """
        res = r.result
        if r.error != ErrorCode.NONE or res is None or res.data.size or r.preferred_read_replica >= 0:
            return None
        partition = self.partitions.get((r.topic, r.partition))
        if (
            partition is None
            or not partition.is_leader
            or replica_id not in partition.isr
            or (cached.current_leader_epoch >= 0 and cached.current_leader_epoch != partition.leader_epoch)
            or cached.fetch_offset < partition.log.next_offset
            or res.high_watermark != partition.high_watermark
            or res.log_start_offset != partition.log.log_start_offset
            or res.log_end_offset != partition.log.next_offset
            or res.last_stable_offset != partition.last_stable_offset
        ):
            return None
        follower = partition.followers.get(replica_id)
        if follower is None or follower.log_end_offset != cached.fetch_offset:
            return None
        follower.attach(clock)
        return follower

    def _read(
        self, replica_id: int, max_bytes: int, partitions: Sequence[FetchPartition], whole_first_batches: bool = False,
        client_metadata: ClientMetadata | None = None, isolation_level: int = 0,
    ) -> list[FetchedPartition]:
        out = []
        left = max_bytes
        first = True
        only_leader = fetch_only_from_leader(replica_id, client_metadata)
        now = self.now_ms()
        stats = self.topic_stats
        for p in partitions:
            try:
                partition = self.leader_partition(p.topic, p.partition) if only_leader else self._hosted(p.topic, p.partition)
                preferred = self._preferred_read_replica(partition, client_metadata, replica_id, p.fetch_offset, now)
                if preferred is not None:
                    # Kafka skips the read: the consumer is to go elsewhere.
                    snapshot = partition.offset_snapshot(p.fetch_offset, p.current_leader_epoch)
                    out.append(FetchedPartition(p.topic, p.partition, ErrorCode.NONE, snapshot, preferred))
                    continue
                result = partition.read(
                    p.fetch_offset,
                    min(p.max_bytes, left),
                    replica_id=replica_id,
                    current_leader_epoch=p.current_leader_epoch,
                    min_one_batch=first or whole_first_batches,
                    fetch_only_from_leader=only_leader,
                    isolation_level=isolation_level,
                )
                if replica_id >= 0:
                    # Only a successful read counts (Kafka's updateFollowerFetchState): a
                    # fenced or out-of-range follower is not caught up.  The response
                    # carries the HW as of the read; the follower's lags one round trip.
                    self._follower_fetched(partition, replica_id, p)
                if result.data.size:
                    first = False
                    left = max(0, left - result.data.size)
                    partition.bytes_out += result.data.size
                stats.fetched(p.topic, ErrorCode.NONE, result.data.size, follower=replica_id >= 0)
                out.append(FetchedPartition(p.topic, p.partition, ErrorCode.NONE, result))
            except KafkaError as exc:
                stats.fetched(p.topic, exc.code, follower=replica_id >= 0)
                out.append(FetchedPartition(p.topic, p.partition, exc.code, None))
        return out

    def _follower_fetched(self, partition: Partition, replica_id: int, p: FetchPartition) -> None:
        # Only a follower of the current epoch moves the HW (a fenced one gets its error from read()).
        if p.current_leader_epoch >= 0 and p.current_leader_epoch != partition.leader_epoch:
            return
        if partition.update_follower(replica_id, p.fetch_offset, self.now_ms(), p.log_start_offset):
            self._wake(partition.tp)
        new_isr = partition.isr_to_expand(replica_id)
        if new_isr is not None:
            self._write_isr(partition, new_isr, "expand")

    # ================================================================== fetch from the closest replica (KIP-392)

    def _hosted(self, topic: str, index: int) -> Partition:
        partition = self._partition_or_raise(topic, index)
        return partition

    def _preferred_read_replica(
        self, partition: Partition, client: ClientMetadata | None, replica_id: int, fetch_offset: int, now_ms: int
    ) -> int | None:
        """The replica the selector sends this consumer to, if not this leader (Kafka's ``findPreferredReadReplica``).

        Candidates are the leader and every follower whose last fetch showed
        *fetch_offset* in its log and that caught up within
        ``replica.lag.time.max.ms``, each with its broker's rack on the
        client's listener (a broker without a live endpoint there is never
        chosen).  Only a leader selects (KAFKA-13778: a follower's view of
        the other replicas is stale).
        """
        if client is None or self.replica_selector is None or replica_id >= 0 or not partition.is_leader:
            return None
        racks = self.replica_racks(client.listener_name)

        def view(broker_id: int, log_end_offset: int, since_caught_up_ms: int) -> ReplicaView:
            if broker_id not in racks:
                return ReplicaView(NO_NODE, None, log_end_offset, since_caught_up_ms)
            return ReplicaView(broker_id, racks[broker_id], log_end_offset, since_caught_up_ms)

        leader = view(self.broker_id, partition.log.next_offset, 0)
        replicas = {leader}
        for broker_id, fs in partition.followers.items():
            # Kafka 2.8 asks only for the offset; a follower that is not caught up within
            # the lag may fall further behind the consumer it was given (KAFKA-14372).
            if (
                fs.log_end_offset >= fetch_offset
                and fs.log_start_offset <= fetch_offset
                and now_ms - fs.last_caught_up_ms <= self.replica_lag_time_max_ms
            ):
                replicas.add(view(broker_id, fs.log_end_offset, now_ms - fs.last_caught_up_ms))
        selected = self.replica_selector.select(partition.tp, client, PartitionView(replicas, leader))
        if selected is None or selected.broker_id == NO_NODE or selected == leader:
            return None
        return selected.broker_id

    # ================================================================== wake-ups

    def _wake(self, tp: tuple[str, int]) -> None:
        """Something changed at *tp* (an append, a HW move, a role change): re-check who waits on it."""
        for listener in self.change_listeners:
            listener(tp)
        self.waiting_rooms.wake(tp)

    # ================================================================== ISR maintenance (leader)

    def maybe_shrink_isr(self) -> int:
        """Drops lagging followers from the ISRs this broker leads (every ``replica.lag.time.max.ms`` / 2)."""
        now = self.now_ms()
        started = 0
        for partition in list(self.partitions.values()):
            # One partition that raises must not keep the others from shrinking.
            try:
                new_isr = partition.isr_to_shrink(now)
                if new_isr is not None:
                    self._write_isr(partition, new_isr, "shrink")
                    started += 1
            except Exception:
                log.exception("%s-%d: ISR shrink check failed", *partition.tp)
                self.isr_shrink_failures += 1
        return started

    def _write_isr(self, partition: Partition, new_isr: tuple[int, ...], kind: str) -> None:
        state, expected = partition.begin_isr_change(new_isr)
        epoch, tp = partition.leader_epoch, partition.tp
        old_isr = partition.isr
        if self.isr_writer is None:
            d = defer.succeed((True, expected + 1))
        else:
            d = defer.maybeDeferred(self.isr_writer, tp, state, expected)

        def written(result: tuple[bool, int]) -> None:
            ok, version = result
            if partition.complete_isr_change(new_isr, epoch, version if ok else None, self.now_ms()):
                log.info("%s-%d: ISR %s from %s to %s (zkVersion %d)", tp[0], tp[1], kind, list(old_isr), list(new_isr), version)
                if kind == "shrink":
                    self.isr_shrinks += 1
                else:
                    self.isr_expands += 1
                self.isr_change_set.add(tp)
                self.last_isr_change_ms = self.now_ms()
                self._wake(tp)
            elif not ok:
                log.info("%s-%d: ISR %s to %s not written (the state changed in ZooKeeper); waiting for the controller",
                         tp[0], tp[1], kind, list(new_isr))

        def failed(failure: Any) -> None:
            log.warning("%s-%d: ISR %s failed: %s", tp[0], tp[1], kind, failure.getErrorMessage())
            partition.complete_isr_change(new_isr, epoch, None)

        def crashed(failure: Any) -> None:
            # Applying the outcome raised: log it, and never leave the change pending (a pending
            # ISR change blocks every later shrink and expand of the partition).
            log.error("%s-%d: applying the ISR %s to %s failed", tp[0], tp[1], kind, list(new_isr),
                      exc_info=(failure.type, failure.value, failure.getTracebackObject()))
            try:
                partition.complete_isr_change(new_isr, epoch, None)  # a no-op if it was applied
            except Exception:
                log.exception("%s-%d: clearing the pending ISR change failed", tp[0], tp[1])

        d.addCallbacks(written, failed)
        d.addErrback(crashed)

    def isr_changes_to_propagate(self) -> list[tuple[str, int]]:
        """The ISR changes to announce now, if any (Kafka 2.6 ``maybePropagateIsrChanges``, every 2.5 s).

        Announced when no change happened for 5 s or the last announcement
        is a minute old; the set is cleared.
        """
        now = self.now_ms()
        if self.isr_change_set and (
            now - self.last_isr_change_ms > ISR_CHANGE_BLACKOUT_MS or now - self.last_isr_propagation_ms > ISR_CHANGE_MAX_DELAY_MS
        ):
            changed = sorted(self.isr_change_set)
            self.isr_change_set.clear()
            self.last_isr_propagation_ms = now
            return changed
        return []

    # ================================================================== follower operations (for the fetcher)

    def follower_partition(self, tp: tuple[str, int], leader_epoch: int) -> Partition | None:
        """The partition if this broker follows it at *leader_epoch* and no truncation is running."""
        partition = self.partitions.get(tp)
        if partition is None or partition.is_leader or partition.leader_epoch != leader_epoch or tp in self._truncating:
            return None
        return partition

    def truncate_follower(self, tp: tuple[str, int], leader_epoch: int, offset: int) -> defer.Deferred:
        """Truncates a follower's log to *offset* in a worker thread; fires with whether it still follows at that epoch."""
        partition = self.follower_partition(tp, leader_epoch)
        if partition is None:
            return defer.succeed(False)
        if offset >= partition.log.next_offset:
            return defer.succeed(True)
        log.info("%s-%d: truncating to offset %d (log end %d, epoch %d)", tp[0], tp[1], offset, partition.log.next_offset, leader_epoch)
        d = self.run_blocking(self.log_manager.truncate_to, tp, offset)
        self._truncating[tp] = d

        def done(result: Any) -> Any:
            self._truncating.pop(tp, None)
            partition.truncated()
            return result

        d.addBoth(done)
        d.addCallback(lambda _: self.follower_partition(tp, leader_epoch) is partition)
        return d

    def append_as_follower(
        self, tp: tuple[str, int], leader_epoch: int, records: Any, leader_high_watermark: int, leader_log_start_offset: int
    ) -> int | None:
        """Appends fetched batches (if any) and adopts the leader's HW; the new log end offset, or None if no longer following."""
        partition = self.follower_partition(tp, leader_epoch)
        if partition is None:
            return None
        before = (partition.high_watermark, partition.last_stable_offset, partition.log.log_start_offset)
        with self.log_manager.log_io(tp):
            if records:
                started = time.perf_counter()
                partition.append_as_follower(records)
                self._timed_write(partition, started)
                self.topic_stats.replicated_in(tp[0], len(records))
            partition.update_follower_high_watermark(leader_high_watermark, leader_log_start_offset)
            # Kafka's FetcherLagMetrics: how far behind the leader's HW this replica is (ReplicaFetcherManager MaxLag)
            partition.follower_lag = max(0, leader_high_watermark - partition.log.next_offset)
        if (partition.high_watermark, partition.last_stable_offset, partition.log.log_start_offset) != before:
            # Consumers long-polling this follower (KIP-392) read up to its HW, or LSO (KAFKA-14334).
            self._wake(tp)
        return partition.log.next_offset

    def reset_follower(self, tp: tuple[str, int], leader_epoch: int, offset: int) -> defer.Deferred:
        """Empties a follower's log to restart at *offset* (the leader's log start moved past it)."""
        partition = self.follower_partition(tp, leader_epoch)
        if partition is None:
            return defer.succeed(False)
        log.info("%s-%d: restarting the log at the leader's log start offset %d", tp[0], tp[1], offset)
        d = self.run_blocking(self.log_manager.truncate_fully_and_start_at, tp, offset)
        self._truncating[tp] = d

        def done(result: Any) -> Any:
            self._truncating.pop(tp, None)
            partition.producers.clear(offset)
            # Kafka's truncateFullyAndStartAt deletes every producer snapshot: they describe the old log.
            try:
                partition.producers.delete_snapshots_before(partition.log.directory, offset + 1)
            except OSError as exc:
                log.warning("%s-%d: could not delete producer snapshots: %s", tp[0], tp[1], exc)
            partition.truncated()
            return result

        d.addBoth(done)
        d.addCallback(lambda _: self.follower_partition(tp, leader_epoch) is partition)
        return d

    # ================================================================== delete records

    def delete_records(self, topic: str, index: int, offset: int) -> int:
        """Moves the log start offset up to *offset* (−1 = the high watermark); returns the new low watermark.

        Raises:
            UnknownTopicOrPartitionError, NotLeaderOrFollowerError,
            OffsetOutOfRangeError: *offset* is above the high watermark.
        """
        partition = self.leader_partition(topic, index)
        hw = partition.high_watermark
        target = hw if offset == -1 else offset
        if target < 0 or target > hw:
            raise OffsetOutOfRangeError(f"{topic}-{index}: cannot delete records up to {offset}: the high watermark is {hw}")
        with self.log_manager.log_io((topic, index)):
            partition.log.increment_log_start_offset(target)
        self._wake((topic, index))  # followers' sessions carry the new log start to them
        return partition.log.log_start_offset

    # ================================================================== leader epochs

    def end_offset_for_epoch(self, topic: str, index: int, current_leader_epoch: int, leader_epoch: int) -> tuple[int, int]:
        """OffsetForLeaderEpoch on the leader (KIP-101/279): (epoch, end offset) for *leader_epoch*.

        The latest epoch ends at the log end offset; an older one ends where
        the next epoch starts; an epoch older than every cached one answers
        (that epoch, the first cached start offset); none → (−1, −1).

        Raises:
            UnknownTopicOrPartitionError, NotLeaderOrFollowerError,
            FencedLeaderEpochError, UnknownLeaderEpochError (KIP-320).
        """
        partition = self.leader_partition(topic, index)
        partition.check_leader_epoch(current_leader_epoch)
        return partition.log.epoch_cache.end_offset_for(leader_epoch, partition.log.next_offset)

    # ================================================================== list offsets

    def list_offset(
        self, topic: str, index: int, timestamp: int, *, replica_id: int = -1, current_leader_epoch: int = -1,
        isolation_level: int = 0,
    ) -> tuple[int, int, int]:
        """(timestamp, offset, leader epoch) for ListOffsets; (−1, −1, −1) when no record matches.

        −1 latest (the HW for consumers — the last stable offset with
        *isolation_level* 1, READ_COMMITTED — the log end for replicas), −2
        earliest, −3 the record with the largest timestamp, else by time:
        see :meth:`Partition.fetch_offset_for_timestamp`.

        Raises:
            UnknownTopicOrPartitionError, NotLeaderOrFollowerError, FencedLeaderEpochError,
            UnknownLeaderEpochError, OffsetNotAvailableError.
        """
        partition = self._partition_or_raise(topic, index)
        found = partition.fetch_offset_for_timestamp(
            timestamp, client=replica_id == -1, current_leader_epoch=current_leader_epoch, isolation_level=isolation_level
        )
        return (found.timestamp, found.offset, found.leader_epoch) if found else (-1, -1, -1)

    def legacy_offsets(self, topic: str, index: int, timestamp: int, max_num_offsets: int, *, replica_id: int = -1) -> list[int]:
        """ListOffsets v0: Kafka 2.8's ``legacyFetchOffsetsForTimestamp``, offsets in descending order.

        The candidates are each segment's start (not below the log start) with
        the segment file's modification time, plus the log end at *now* when
        the active segment holds data; −1 (latest) starts from the last,
        −2 (earliest) from the first, a time from the last modified at or
        before it; up to *max_num_offsets* are returned going back.  A
        consumer never sees an offset above the high watermark (the first
        such becomes the high watermark).

        Raises:
            UnknownTopicOrPartitionError, NotLeaderOrFollowerError.
        """
        partition = self.leader_partition(topic, index)
        log_ = partition.log
        segments = list(log_.segments)
        table = [(max(seg.base_offset, log_.log_start_offset), seg.last_modified_ms) for seg in segments]
        if segments and segments[-1].size > 0:
            table.append((log_.next_offset, self.now_ms()))
        if timestamp == -1:
            start = len(table) - 1
        elif timestamp == -2:
            start = 0
        else:
            start = len(table) - 1
            while start >= 0 and table[start][1] > timestamp:
                start -= 1
        offsets = sorted((table[i][0] for i in range(start, start - min(max_num_offsets, start + 1), -1)), reverse=True)
        if replica_id == -1 and any(o > partition.high_watermark for o in offsets):
            offsets = [partition.high_watermark] + [o for o in offsets if o <= partition.high_watermark]
        return offsets


def _partition_error(topic: str, index: int, error: ErrorCode) -> dict[str, Any]:
    return {"topic_name": topic, "partition_index": index, "error_code": error}
