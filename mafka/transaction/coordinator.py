"""The transaction coordinator: Kafka 2.8's ``TransactionCoordinator`` as plain Python.

No sockets, no reactor, no clock of its own: time comes from ``clock()`` (ms),
delays from a :class:`~mafka.timers.Timers`, every write to
``__transaction_state`` goes through a
:class:`~mafka.transaction.state_manager.StateLog` whose ``append`` calls back
later with an error code (acks=all), producer ids come from a
:class:`ProducerIdGenerator` and transaction markers leave through a
:class:`~mafka.transaction.markers.TxnMarkerSink`. The broker provides those
and turns requests into the calls below; tests drive the same calls with fakes.

Contract:

* Every request method takes a ``respond`` callable and calls it exactly once,
  before returning or later (after a log append or a producer id). Errors are
  :class:`~mafka.errors.ErrorCode` values. As in Kafka the coordinator answers
  PRODUCER_FENCED; :func:`error_for_version` turns it into
  INVALID_PRODUCER_EPOCH for clients too old to know it.
* State changes follow Kafka's prepare / append / complete pattern
  (:mod:`mafka.transaction.metadata`): the new state is appended to
  ``__transaction_state`` and applied to the cached metadata only once the
  append succeeds; meanwhile the id is pending and other requests get
  CONCURRENT_TRANSACTIONS. A failed append clears the pending state and the
  client gets the mapped error (NOT_COORDINATOR if the coordinator epoch
  moved while it was in flight). Two in-memory changes precede their write,
  as in Kafka: a brand-new transactional id is cached (Empty, epoch -1) before
  its first record, and fencing an epoch (InitProducerId over an open
  transaction, a timed-out transaction) raises the cached epoch before the
  PrepareAbort carrying it is written — if that write fails the next fence
  reuses the raised epoch instead of bumping again.
* EndTxn is answered once PrepareCommit / PrepareAbort is durable; the
  markers go out afterwards and CompleteCommit / CompleteAbort is written when
  the sink reports them all written (:mod:`mafka.transaction.markers`). The
  sink asks :meth:`TransactionCoordinator.should_send_markers` before each
  retry; a delivery no longer wanted (partition resigned or reloaded) may stop,
  and a late ``on_complete`` is ignored.
* Ownership follows leadership of ``__transaction_state`` partitions:
  :meth:`TransactionCoordinator.on_elected` (requests for the partition's ids
  get COORDINATOR_LOAD_IN_PROGRESS), :meth:`~TransactionCoordinator.complete_load`
  (replay, then re-send the markers of every PrepareCommit / PrepareAbort),
  :meth:`~TransactionCoordinator.fail_load`, :meth:`~TransactionCoordinator.on_resigned`;
  ids of partitions not owned get NOT_COORDINATOR; stale epochs are ignored.
* Background work, as Kafka's scheduler runs it after :meth:`~TransactionCoordinator.startup`:
  :meth:`~TransactionCoordinator.abort_timed_out_transactions` every
  ``abort_timed_out_transactions_interval_ms`` and
  :meth:`~TransactionCoordinator.remove_expired_transactional_ids` every
  ``remove_expired_transactional_ids_interval_ms``; both may also be called directly.
  They run through the :class:`PeriodicScheduler` given (a broker's supervised
  background passes: :mod:`mafka.background`), else on the :class:`Timers`,
  rescheduled after each run; either way an exception is logged and the pass
  runs again at its next interval.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Protocol

from mafka.errors import ErrorCode, IllegalStateError
from mafka.timers import TimerHandle, Timers
from mafka.topics import GROUP_METADATA_TOPIC, TopicPartitionTuple
from mafka.transaction.markers import (
    TransactionMarkerChannelManager,
    TransactionResult,
    TxnMarkerSink,
)
from mafka.transaction.metadata import (
    TransactionMetadata,
    TransactionState,
    TxnTransitMetadata,
    is_epoch_exhausted,
)
from mafka.transaction.state_manager import (
    StateLog,
    TransactionConfig,
    TransactionStateManager,
)
from mafka.wire.batch import NO_PRODUCER_EPOCH, NO_PRODUCER_ID

__all__ = [
    "ListTransactionsResult",
    "PeriodicScheduler",
    "ProducerIdGenerator",
    "TransactionCoordinator",
    "TransactionDescription",
    "TransactionListing",
    "error_for_version",
    "expected_producer_id_and_epoch",
]

log = logging.getLogger("mafka.transaction.coordinator")

_S = TransactionState

InitProducerIdCallback = Callable[[int, int, int], None]
ErrorCallback = Callable[[int], None]

INIT_PRODUCER_ID = 22
ADD_PARTITIONS_TO_TXN = 24
ADD_OFFSETS_TO_TXN = 25
END_TXN = 26
#: API key → the first version whose clients understand PRODUCER_FENCED (KIP-588).
_PRODUCER_FENCED_SINCE = {INIT_PRODUCER_ID: 4, ADD_PARTITIONS_TO_TXN: 2, ADD_OFFSETS_TO_TXN: 2, END_TXN: 2}


def error_for_version(api_key: int, api_version: int, error: int) -> int:
    """KafkaApis' downgrade: PRODUCER_FENCED is INVALID_PRODUCER_EPOCH for older clients."""
    since = _PRODUCER_FENCED_SINCE.get(api_key)
    if error == ErrorCode.PRODUCER_FENCED and since is not None and api_version < since:
        return ErrorCode.INVALID_PRODUCER_EPOCH
    return error


def expected_producer_id_and_epoch(producer_id: int, producer_epoch: int) -> tuple[int, tuple[int, int] | None]:
    """KafkaApis' reading of InitProducerId's (v3+) ProducerId/ProducerEpoch: both -1 is
    "none", one of them -1 is INVALID_REQUEST, else the pair to check."""
    if producer_id == NO_PRODUCER_ID and producer_epoch == NO_PRODUCER_EPOCH:
        return ErrorCode.NONE, None
    if producer_id == NO_PRODUCER_ID or producer_epoch == NO_PRODUCER_EPOCH:
        return ErrorCode.INVALID_REQUEST, None
    return ErrorCode.NONE, (producer_id, producer_epoch)


class PeriodicScheduler(Protocol):
    def __call__(self, name: str, period_ms: int, fn: Callable[[], object]) -> TimerHandle:
        """Run ``fn()`` every ``period_ms`` (first after one period), surviving its exceptions,
        until the handle is cancelled."""


class ProducerIdGenerator(Protocol):
    def generate(self, done: Callable[[int, int], None]) -> None:
        """Later call ``done(ErrorCode.NONE, producer_id)`` with an id no one else got, or
        ``done(error, -1)`` (the error is answered to the client as is)."""


@dataclass(frozen=True)
class TransactionListing:
    """One ListTransactions entry (KIP-664)."""

    transactional_id: str
    producer_id: int
    state: str


@dataclass(frozen=True)
class ListTransactionsResult:
    error: int
    unknown_state_filters: list[str]
    transaction_states: list[TransactionListing]


@dataclass(frozen=True)
class TransactionDescription:
    """One DescribeTransactions entry (KIP-664); only ``error`` is meaningful unless it is NONE."""

    transactional_id: str
    error: int
    state: str = ""
    producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    transaction_timeout_ms: int = 0
    transaction_start_time_ms: int = -1
    #: topic → sorted partition ids
    topics: dict[str, list[int]] | None = None


class TransactionCoordinator:
    """One broker's transaction coordinator (see the module docstring for the contract).

    Request handling works from construction; :meth:`startup` starts the periodic
    work and marks the coordinator active (ListTransactions / DescribeTransactions
    answer COORDINATOR_NOT_AVAILABLE before it and after :meth:`shutdown`, as Kafka's).
    """

    def __init__(
        self,
        config: TransactionConfig,
        clock: Callable[[], int],
        timers: Timers,
        state_log: StateLog,
        producer_ids: ProducerIdGenerator,
        markers: TxnMarkerSink,
        periodic: PeriodicScheduler | None = None,
    ) -> None:
        self.config = config
        self._clock = clock
        self._timers = timers
        self._periodic = periodic
        self._producer_ids = producer_ids
        self.txn_manager = TransactionStateManager(config, clock, state_log)
        self.txn_marker_channel_manager = TransactionMarkerChannelManager(
            self.txn_manager, markers, timers, config.log_append_retry_backoff_ms
        )
        self._scheduled: dict[str, TimerHandle] = {}
        self.active = False

    # ------------------------------------------------------------------ lifecycle

    def startup(self, enable_transactional_id_expiration: bool = True) -> None:
        """Start the periodic timed-out-transaction abort and transactional id expiration."""
        self.active = True
        self._schedule("transaction-abort", self.config.abort_timed_out_transactions_interval_ms,
                       self.abort_timed_out_transactions)
        if enable_transactional_id_expiration:
            self._schedule("transactionalId-expiration", self.config.remove_expired_transactional_ids_interval_ms,
                           self.remove_expired_transactional_ids)

    def shutdown(self) -> None:
        self.active = False
        for handle in self._scheduled.values():
            handle.cancel()
        self._scheduled.clear()
        self.txn_manager.shutdown()
        self.txn_marker_channel_manager.shutdown()

    def _schedule(self, name: str, period_ms: int, task: Callable[[], object]) -> None:
        if self._periodic is not None:
            def once() -> None:
                if self.active:
                    task()

            self._scheduled[name] = self._periodic(name, period_ms, once)
            return

        def run() -> None:
            if not self.active:
                return
            try:
                task()
            except Exception:  # a bad entry must not stop the schedule (Kafka's scheduler logs and goes on)
                log.exception("Scheduled task %s failed", name)
            self._scheduled[name] = self._timers.call_later(period_ms, run)

        self._scheduled[name] = self._timers.call_later(period_ms, run)

    # ------------------------------------------------------------------ ownership

    def partition_for(self, transactional_id: str) -> int:
        return self.txn_manager.partition_for(transactional_id)

    def owned_partitions(self) -> set[int]:
        return self.txn_manager.owned_partitions()

    def loading_partitions(self) -> set[int]:
        return self.txn_manager.loading_partitions()

    def on_elected(self, partition: int, coordinator_epoch: int) -> bool:
        """This broker leads ``__transaction_state``-``partition`` at ``coordinator_epoch``.
        True if a load must now run (the caller reads the partition and calls
        :meth:`complete_load` or :meth:`fail_load`); False for a stale or repeated call."""
        if not self.txn_manager.start_loading(partition, coordinator_epoch):
            return False
        # Markers still queued from an earlier term are the load's to re-send now.
        self.txn_marker_channel_manager.remove_markers_for_txn_topic_partition(partition)
        log.info("Elected as the txn coordinator for partition %d at epoch %d", partition, coordinator_epoch)
        return True

    def complete_load(
        self, partition: int, coordinator_epoch: int, records: Iterable[tuple[bytes, bytes | None]]
    ) -> bool:
        """Replay the partition (log order) and serve it; re-send the markers of its
        PrepareCommit / PrepareAbort transactions. False if the load is stale."""
        pending = self.txn_manager.complete_loading(partition, coordinator_epoch, records)
        if pending is None:
            return False
        for p in pending:
            result = TransactionResult.COMMIT if p.commit else TransactionResult.ABORT
            self.txn_marker_channel_manager.add_txn_markers_to_send(
                p.coordinator_epoch, result, p.txn_metadata, p.transit
            )
        return True

    def fail_load(self, partition: int, coordinator_epoch: int) -> None:
        """The load could not read the partition: its ids get NOT_COORDINATOR."""
        self.txn_manager.fail_loading(partition, coordinator_epoch)

    def on_resigned(self, partition: int, coordinator_epoch: int | None = None) -> None:
        """Leadership of ``partition`` moved away (epoch None: the partition is gone)."""
        if self.txn_manager.remove_transactions_for_partition(partition, coordinator_epoch):
            self.txn_marker_channel_manager.remove_markers_for_txn_topic_partition(partition)
            log.info("Resigned as the txn coordinator for partition %d at epoch %s", partition, coordinator_epoch)

    def should_send_markers(self, transactional_id: str, coordinator_epoch: int) -> bool:
        """For the marker sink before each retry: are these markers still wanted?"""
        return self.txn_marker_channel_manager.is_current(transactional_id, coordinator_epoch)

    # ------------------------------------------------------------------ InitProducerId

    def handle_init_producer_id(
        self,
        transactional_id: str | None,
        transaction_timeout_ms: int,
        expected_producer_id_and_epoch: tuple[int, int] | None,
        respond: InitProducerIdCallback,
    ) -> None:
        """InitProducerId: ``respond(error, producer_id, producer_epoch)`` (-1, -1 with an error).

        No transactional id: a fresh producer id at epoch 0. Otherwise Kafka 2.8's
        handleInitProducerId: a new id gets a fresh producer id at epoch 0; an Empty /
        Complete* transaction bumps the epoch (a new producer id once the epochs are
        exhausted); an Ongoing one is fenced and aborted and the answer is
        CONCURRENT_TRANSACTIONS (the client retries and then gets the bumped epoch);
        PrepareCommit / PrepareAbort or a pending transition: CONCURRENT_TRANSACTIONS.
        ``expected_producer_id_and_epoch`` (KIP-360, from v3) must name the current
        producer id — or the last one with an exhausted epoch — else PRODUCER_FENCED.
        """
        if transactional_id is None:
            def generated(error: int, producer_id: int) -> None:
                if error != ErrorCode.NONE:
                    respond(error, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
                else:
                    respond(ErrorCode.NONE, producer_id, 0)

            self._producer_ids.generate(generated)
        elif not transactional_id:
            respond(ErrorCode.INVALID_REQUEST, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        elif not self.txn_manager.validate_transaction_timeout_ms(transaction_timeout_ms):
            respond(ErrorCode.INVALID_TRANSACTION_TIMEOUT, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)
        else:
            self._init_producer_id(transactional_id, transaction_timeout_ms, expected_producer_id_and_epoch,
                                   respond, None)

    def _init_producer_id(
        self,
        transactional_id: str,
        timeout_ms: int,
        expected: tuple[int, int] | None,
        respond: InitProducerIdCallback,
        fresh_producer_id: int | None,
    ) -> None:
        """One attempt. Kafka draws producer ids synchronously; here, when an attempt
        needs one and has none, it asks the generator and starts over with the id —
        everything is checked again, since anything may have happened meanwhile."""

        def fail(error: int) -> None:
            respond(error, NO_PRODUCER_ID, NO_PRODUCER_EPOCH)

        def with_new_producer_id() -> None:
            def generated(error: int, producer_id: int) -> None:
                if error != ErrorCode.NONE:
                    fail(error)
                else:
                    self._init_producer_id(transactional_id, timeout_ms, expected, respond, producer_id)

            self._producer_ids.generate(generated)

        error, entry = self.txn_manager.get_transaction_state(transactional_id)
        if error != ErrorCode.NONE:
            return fail(error)
        now = self._clock()
        if entry is None:
            if fresh_producer_id is None:
                return with_new_producer_id()
            created = TransactionMetadata(
                transactional_id, producer_id=fresh_producer_id, txn_timeout_ms=timeout_ms,
                state=_S.EMPTY, txn_last_update_timestamp=now,
            )
            fresh_producer_id = None
            # Ownership was checked just above, so this adds ``created`` (Kafka's putIfNotExists).
            error, entry = self.txn_manager.put_transaction_state_if_not_exists(created)
            if entry is None:
                return fail(error)

        coordinator_epoch = entry.coordinator_epoch
        try:
            error, transit, needs_producer_id = self._prepare_init_producer_id_transit(
                entry.transaction_metadata, timeout_ms, expected, now, fresh_producer_id
            )
        except IllegalStateError:
            return fail(_illegal_state(transactional_id))
        if needs_producer_id:
            return with_new_producer_id()
        if transit is None:
            return fail(error)

        if transit.txn_state == _S.PREPARE_EPOCH_FENCE:
            def fenced(error: int) -> None:
                fail(error if error != ErrorCode.NONE else ErrorCode.CONCURRENT_TRANSACTIONS)

            self._end_transaction(transactional_id, transit.producer_id, transit.producer_epoch,
                                  TransactionResult.ABORT, False, fenced)
            return

        def appended(error: int) -> None:
            if error == ErrorCode.NONE:
                log.info(
                    "Initialized transactionalId %s with producerId %d and producer epoch %d on partition %d",
                    transactional_id, transit.producer_id, transit.producer_epoch,
                    self.partition_for(transactional_id),
                )
                respond(ErrorCode.NONE, transit.producer_id, transit.producer_epoch)
            else:
                fail(error)

        self.txn_manager.append_transaction_to_log(transactional_id, coordinator_epoch, transit, appended)

    def _prepare_init_producer_id_transit(
        self,
        metadata: TransactionMetadata,
        timeout_ms: int,
        expected: tuple[int, int] | None,
        now: int,
        fresh_producer_id: int | None,
    ) -> tuple[int, TxnTransitMetadata | None, bool]:
        """Kafka's ``prepareInitProducerIdTransit``: ``(error, None, False)``,
        ``(NONE, transit, False)``, or ``(NONE, None, True)`` when a new producer id is
        needed and ``fresh_producer_id`` is None."""
        if metadata.pending_transition_in_progress:
            return ErrorCode.CONCURRENT_TRANSACTIONS, None, False
        if expected is not None and not self._is_valid_producer_id(metadata, expected):
            return ErrorCode.PRODUCER_FENCED, None, False
        state = metadata.state
        if state in (_S.PREPARE_ABORT, _S.PREPARE_COMMIT):
            return ErrorCode.CONCURRENT_TRANSACTIONS, None, False
        if state in (_S.COMPLETE_ABORT, _S.COMPLETE_COMMIT, _S.EMPTY):
            # Epochs exhausted and the expected epoch (if any) is the current one: a new producer id.
            if metadata.is_producer_epoch_exhausted and (expected is None or expected[1] == metadata.producer_epoch):
                if fresh_producer_id is None:
                    return ErrorCode.NONE, None, True
                transit = metadata.prepare_producer_id_rotation(
                    fresh_producer_id, timeout_ms, now, record_last_epoch=expected is not None
                )
                return ErrorCode.NONE, transit, False
            error, maybe_transit = metadata.prepare_increment_producer_epoch(
                timeout_ms, None if expected is None else expected[1], now
            )
            return error, maybe_transit, False
        if state == _S.ONGOING:
            # Fence the open transaction's producer and abort it. The bumped epoch is never
            # returned: the client retries on CONCURRENT_TRANSACTIONS and bumps once more (and
            # if this fence exhausted the epochs, that retry gets a new producer id).
            return ErrorCode.NONE, metadata.prepare_fence_producer_epoch(), False
        raise IllegalStateError(f"Found transactionalId {metadata.transactional_id} with state {state}")

    @staticmethod
    def _is_valid_producer_id(metadata: TransactionMetadata, expected: tuple[int, int]) -> bool:
        """Kafka's ``isValidProducerId``: the metadata was just created (epoch -1), or the
        expected id is the current one (its epoch is checked when bumping), or it is the
        previous one with an exhausted epoch (a retry of a rotation whose answer was lost)."""
        producer_id, epoch = expected
        return (
            metadata.producer_epoch == NO_PRODUCER_EPOCH
            or producer_id == metadata.producer_id
            or (producer_id == metadata.last_producer_id and is_epoch_exhausted(epoch))
        )

    # ------------------------------------------------------------------ AddPartitionsToTxn / AddOffsetsToTxn

    def handle_add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: Iterable[TopicPartitionTuple],
        respond: Callable[[dict[TopicPartitionTuple, int]], None],
    ) -> None:
        """AddPartitionsToTxn: ``respond({partition: error})``, every partition with the
        same error, as Kafka answers. Partitions already in the Ongoing transaction are
        answered NONE at once; others are added once the new Ongoing record is durable."""
        wanted = frozenset(partitions)
        self._add_partitions(
            transactional_id, producer_id, producer_epoch, wanted,
            lambda error: respond(dict.fromkeys(wanted, error)),
        )

    def handle_add_offsets_to_txn(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        offsets_partition: int,
        respond: ErrorCallback,
    ) -> None:
        """AddOffsetsToTxn: add the group's ``__consumer_offsets`` partition
        (``offsets_partition``, the group coordinator's ``partition_for(group_id)``) to the
        transaction, exactly as AddPartitionsToTxn; ``respond(error)``."""
        self._add_partitions(
            transactional_id, producer_id, producer_epoch,
            frozenset({(GROUP_METADATA_TOPIC, offsets_partition)}), respond,
        )

    def _add_partitions(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        partitions: frozenset[TopicPartitionTuple],
        respond: ErrorCallback,
    ) -> None:
        if not transactional_id:
            return respond(ErrorCode.INVALID_REQUEST)
        error, entry = self.txn_manager.get_transaction_state(transactional_id)
        if error != ErrorCode.NONE:
            return respond(error)
        if entry is None:
            return respond(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        metadata = entry.transaction_metadata
        if metadata.producer_id != producer_id:
            return respond(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if metadata.producer_epoch != producer_epoch:
            return respond(ErrorCode.PRODUCER_FENCED)
        if metadata.pending_transition_in_progress:
            return respond(ErrorCode.CONCURRENT_TRANSACTIONS)
        if metadata.state in (_S.PREPARE_COMMIT, _S.PREPARE_ABORT):
            return respond(ErrorCode.CONCURRENT_TRANSACTIONS)
        if metadata.state == _S.ONGOING and partitions <= metadata.topic_partitions:
            return respond(ErrorCode.NONE)
        try:
            transit = metadata.prepare_add_partitions(partitions, self._clock())
        except IllegalStateError:
            return respond(_illegal_state(transactional_id))
        self.txn_manager.append_transaction_to_log(transactional_id, entry.coordinator_epoch, transit, respond)

    # ------------------------------------------------------------------ EndTxn

    def handle_end_transaction(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        commit: bool,
        respond: ErrorCallback,
    ) -> None:
        """EndTxn: ``respond(error)`` once PrepareCommit / PrepareAbort is durable.

        Retries as Kafka 2.8 answers them: the same result again while its markers are
        being written (PrepareCommit / PrepareAbort, or the Complete* record pending) is
        CONCURRENT_TRANSACTIONS, once complete (CompleteCommit / CompleteAbort) NONE; the
        other result, or EndTxn with no transaction (Empty), is INVALID_TXN_STATE.
        """
        result = TransactionResult.COMMIT if commit else TransactionResult.ABORT
        self._end_transaction(transactional_id, producer_id, producer_epoch, result, True, respond)

    def _end_transaction(
        self,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        result: TransactionResult,
        is_from_client: bool,
        respond: ErrorCallback,
    ) -> None:
        if not transactional_id:
            return respond(ErrorCode.INVALID_REQUEST)
        error, entry = self.txn_manager.get_transaction_state(transactional_id)
        if error != ErrorCode.NONE:
            return respond(error)
        if entry is None:
            return respond(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        metadata = entry.transaction_metadata
        coordinator_epoch = entry.coordinator_epoch
        try:
            error, transit, is_epoch_fence = self._prepare_end(
                metadata, producer_id, producer_epoch, result, is_from_client
            )
        except IllegalStateError:
            return respond(_illegal_state(transactional_id))
        if transit is None:
            return respond(error)

        def appended(error: int) -> None:
            if error == ErrorCode.NONE:
                self._send_txn_markers(transactional_id, coordinator_epoch, producer_id, producer_epoch, result, respond)
                return
            log.info(
                "Returning %s to %s's EndTxn (%s): appending %s at coordinator epoch %d failed",
                ErrorCode(error).name, transactional_id, result.name, transit, coordinator_epoch,
            )
            if is_epoch_fence:
                status, current = self.txn_manager.get_transaction_state(transactional_id)
                if status == ErrorCode.NONE and current is not None and current.coordinator_epoch == coordinator_epoch:
                    # The raised epoch was never returned to anyone: the next fence reuses it.
                    current.transaction_metadata.has_failed_epoch_fence = True
            respond(error)

        self.txn_manager.append_transaction_to_log(transactional_id, coordinator_epoch, transit, appended)

    def _prepare_end(
        self,
        metadata: TransactionMetadata,
        producer_id: int,
        producer_epoch: int,
        result: TransactionResult,
        is_from_client: bool,
    ) -> tuple[int, TxnTransitMetadata | None, bool]:
        """Kafka's checks before the Prepare* append: ``(error, None, _)`` or ``(NONE, transit, is_epoch_fence)``."""
        commit = result == TransactionResult.COMMIT
        if metadata.producer_id != producer_id:
            return ErrorCode.INVALID_PRODUCER_ID_MAPPING, None, False
        # Clients must match the epoch exactly; a fence (not from a client) brings a bumped one.
        if (is_from_client and producer_epoch != metadata.producer_epoch) or producer_epoch < metadata.producer_epoch:
            return ErrorCode.PRODUCER_FENCED, None, False
        if metadata.pending_transition_in_progress and metadata.pending_state != _S.PREPARE_EPOCH_FENCE:
            return ErrorCode.CONCURRENT_TRANSACTIONS, None, False
        state = metadata.state
        if state == _S.ONGOING:
            next_state = _S.PREPARE_COMMIT if commit else _S.PREPARE_ABORT
            is_epoch_fence = False
            if next_state == _S.PREPARE_ABORT and metadata.pending_state == _S.PREPARE_EPOCH_FENCE:
                # Make way for PrepareAbort, carrying the fenced epoch (Kafka raises the cached
                # epoch here, before the append; see has_failed_epoch_fence).
                is_epoch_fence = True
                metadata.pending_state = None
                metadata.producer_epoch = producer_epoch
                metadata.last_producer_epoch = NO_PRODUCER_EPOCH
            return ErrorCode.NONE, metadata.prepare_abort_or_commit(next_state, self._clock()), is_epoch_fence
        if state == _S.COMPLETE_COMMIT:
            return (ErrorCode.NONE if commit else ErrorCode.INVALID_TXN_STATE), None, False
        if state == _S.COMPLETE_ABORT:
            return (ErrorCode.INVALID_TXN_STATE if commit else ErrorCode.NONE), None, False
        if state == _S.PREPARE_COMMIT:
            return (ErrorCode.CONCURRENT_TRANSACTIONS if commit else ErrorCode.INVALID_TXN_STATE), None, False
        if state == _S.PREPARE_ABORT:
            return (ErrorCode.INVALID_TXN_STATE if commit else ErrorCode.CONCURRENT_TRANSACTIONS), None, False
        if state == _S.EMPTY:
            return ErrorCode.INVALID_TXN_STATE, None, False
        raise IllegalStateError(f"Found transactionalId {metadata.transactional_id} with state {state}")

    def _send_txn_markers(
        self,
        transactional_id: str,
        coordinator_epoch: int,
        producer_id: int,
        producer_epoch: int,
        result: TransactionResult,
        respond: ErrorCallback,
    ) -> None:
        """Prepare* is durable: check it is still ours, answer, then send the markers."""
        error, entry = self.txn_manager.get_transaction_state(transactional_id)
        if error != ErrorCode.NONE:
            return respond(error)
        if entry is None:
            log.error("The coordinator still owns the transaction partition for %s, but there is no metadata",
                      transactional_id)
            return respond(ErrorCode.UNKNOWN_SERVER_ERROR)
        if entry.coordinator_epoch != coordinator_epoch:
            return respond(ErrorCode.NOT_COORDINATOR)
        metadata = entry.transaction_metadata
        expected = _S.PREPARE_COMMIT if result == TransactionResult.COMMIT else _S.PREPARE_ABORT
        if metadata.producer_id != producer_id:
            return respond(ErrorCode.INVALID_PRODUCER_ID_MAPPING)
        if metadata.producer_epoch != producer_epoch:
            return respond(ErrorCode.PRODUCER_FENCED)
        if metadata.pending_transition_in_progress:
            return respond(ErrorCode.CONCURRENT_TRANSACTIONS)
        if metadata.state in (_S.DEAD, _S.PREPARE_EPOCH_FENCE):
            log.error("Found transactionalId %s with state %s. This is illegal", transactional_id, metadata.state)
            return respond(ErrorCode.UNKNOWN_SERVER_ERROR)
        if metadata.state != expected:
            return respond(ErrorCode.INVALID_TXN_STATE)
        try:
            transit = metadata.prepare_complete(self._clock())
        except IllegalStateError:
            return respond(_illegal_state(transactional_id))
        # Answer now; the markers and the Complete* record follow in the background.
        respond(ErrorCode.NONE)
        self.txn_marker_channel_manager.add_txn_markers_to_send(coordinator_epoch, result, metadata, transit)

    # ------------------------------------------------------------------ background

    def abort_timed_out_transactions(self) -> int:
        """Kafka's ``abortTimedOutTransactions``: fence the epoch of every Ongoing
        transaction open longer than its timeout and abort it. Returns how many aborts started."""
        started = 0
        for txn in self.txn_manager.timed_out_transactions():
            error, entry = self.txn_manager.get_transaction_state(txn.transactional_id)
            if error != ErrorCode.NONE or entry is None:
                continue
            metadata = entry.transaction_metadata
            if metadata.producer_id != txn.producer_id:
                log.error("Found incorrect producerId when expiring transactionalId %s", txn.transactional_id)
                continue
            if metadata.pending_transition_in_progress:
                continue
            try:
                transit = metadata.prepare_fence_producer_epoch()
            except IllegalStateError:
                log.exception("Cannot fence timed out transaction %s", txn.transactional_id)
                continue
            started += 1
            self._end_transaction(
                metadata.transactional_id, transit.producer_id, transit.producer_epoch,
                TransactionResult.ABORT, False, _on_end_transaction_complete(txn.transactional_id),
            )
        return started

    def remove_expired_transactional_ids(self) -> int:
        """Tombstone transactional ids idle for ``transactional_id_expiration_ms`` (Empty,
        CompleteCommit, CompleteAbort); they leave the cache once the tombstone is durable."""
        return self.txn_manager.remove_expired_transactional_ids()

    # ------------------------------------------------------------------ KIP-664 (read side)

    def list_transactions(
        self, state_filters: Iterable[str] = (), producer_id_filters: Iterable[int] = ()
    ) -> ListTransactionsResult:
        """ListTransactions: the cached transactions matching every non-empty filter
        (state names as Kafka spells them; unknown names are reported back)."""
        if not self.active:
            return ListTransactionsResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, [], [])
        error, unknown, found = self.txn_manager.list_transaction_states(producer_id_filters, state_filters)
        return ListTransactionsResult(
            error, unknown, [TransactionListing(m.transactional_id, m.producer_id, str(m.state)) for m in found]
        )

    def describe_transactions(self, transactional_ids: Iterable[str]) -> list[TransactionDescription]:
        """DescribeTransactions: one description per id, in the order asked."""
        return [self._describe(tid) for tid in transactional_ids]

    def _describe(self, transactional_id: str) -> TransactionDescription:
        if not self.active:
            return TransactionDescription(transactional_id, ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if not transactional_id:
            return TransactionDescription(transactional_id, ErrorCode.INVALID_REQUEST)
        error, entry = self.txn_manager.get_transaction_state(transactional_id)
        if error != ErrorCode.NONE:
            return TransactionDescription(transactional_id, error)
        if entry is None or entry.transaction_metadata.state == _S.DEAD:
            return TransactionDescription(transactional_id, ErrorCode.TRANSACTIONAL_ID_NOT_FOUND)
        m = entry.transaction_metadata
        topics: dict[str, list[int]] = {}
        for topic, partition in sorted(m.topic_partitions):
            topics.setdefault(topic, []).append(partition)
        return TransactionDescription(
            transactional_id, ErrorCode.NONE, str(m.state), m.producer_id, m.producer_epoch,
            m.txn_timeout_ms, m.txn_start_timestamp, topics,
        )


def _illegal_state(transactional_id: str) -> int:
    """Kafka throws IllegalStateException for states that should never happen; its request
    handler answers UNKNOWN_SERVER_ERROR. Log the trace (call inside ``except``) and answer so."""
    log.exception("Illegal transaction state for transactionalId %s", transactional_id)
    return ErrorCode.UNKNOWN_SERVER_ERROR


def _on_end_transaction_complete(transactional_id: str) -> ErrorCallback:
    """Kafka's ``onEndTransactionComplete``: the outcome of a timeout abort is only logged."""

    def done(error: int) -> None:
        if error == ErrorCode.NONE:
            log.info("Completed rollback of ongoing transaction for transactionalId %s due to timeout",
                     transactional_id)
        elif error in (ErrorCode.INVALID_PRODUCER_ID_MAPPING, ErrorCode.PRODUCER_FENCED,
                       ErrorCode.CONCURRENT_TRANSACTIONS):
            log.debug("Rollback of ongoing transaction for transactionalId %s has been cancelled due to error %s",
                      transactional_id, ErrorCode(error).name)
        else:
            log.warning("Rollback of ongoing transaction for transactionalId %s failed due to error %s",
                        transactional_id, ErrorCode(error).name)

    return done
