"""The transaction metadata cache and the ``__transaction_state`` log behind it:
Kafka 2.8's ``TransactionStateManager`` as plain Python.

Contract:

* The cache is per ``__transaction_state`` partition, each entry tagged with the
  coordinator epoch (the partition's leader epoch) it was loaded at.
  :meth:`TransactionStateManager.get_transaction_state` answers
  ``(error, entry)``: COORDINATOR_LOAD_IN_PROGRESS while the id's partition
  loads, NOT_COORDINATOR if it is not owned, else ``(NONE, entry or None)``.
* Leadership: :meth:`~TransactionStateManager.start_loading` (elected),
  :meth:`~TransactionStateManager.complete_loading` (replay the partition;
  last value per id wins, a tombstone removes it),
  :meth:`~TransactionStateManager.fail_loading`,
  :meth:`~TransactionStateManager.remove_transactions_for_partition`
  (resigned). Each partition remembers the highest epoch it has seen: a call
  at a lower epoch is stale and ignored. (Kafka serialises these calls; the
  epoch guard makes out-of-order calls from the broker harmless.)
* :meth:`~TransactionStateManager.append_transaction_to_log` is Kafka's
  ``appendTransactionToLog``: refuse (NOT_COORDINATOR) if the coordinator
  epoch moved since the transition was prepared; append one record with
  acks=all; on success complete the pending transition — unless the epoch
  moved meanwhile (NOT_COORDINATOR, nothing applied); on failure map the
  error as Kafka does and clear the pending state (unless the caller asked to
  keep it for a retry, or the epoch moved: that metadata is no longer ours).
  ``callback(error)`` is called exactly once.
* Expiration (:meth:`~TransactionStateManager.remove_expired_transactional_ids`)
  and the timed-out scan (:meth:`~TransactionStateManager.timed_out_transactions`)
  are Kafka's, over partitions that are loaded (not loading).
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Protocol

from mafka.errors import ErrorCode, IllegalStateError
from mafka.group.offsets_records import offsets_partition_for
from mafka.topics import TRANSACTION_STATE_TOPIC
from mafka.transaction.log_records import (
    TransactionLogDecodeError,
    decode_key,
    decode_value,
    encode_key,
    encode_value,
    metadata_from_value,
    value_from_transit,
)
from mafka.transaction.metadata import TransactionMetadata, TransactionState, TxnTransitMetadata

__all__ = [
    "CoordinatorEpochAndTxnMetadata",
    "PendingCompletion",
    "StateLog",
    "TransactionConfig",
    "TransactionStateManager",
    "TransactionalIdAndProducerIdEpoch",
    "append_error",
]

log = logging.getLogger("mafka.transaction.state_manager")

Records = list[tuple[bytes, bytes | None]]


class StateLog(Protocol):
    def append(self, partition: int, records: Records, done: Callable[[int], None]) -> None:
        """Append ``(key, value)`` records to ``__transaction_state``-``partition`` with
        acks=all (value ``None`` = tombstone); later call ``done(error_code)`` once.
        NONE means the records are replicated."""


@dataclass(frozen=True)
class TransactionConfig:
    """Kafka's ``TransactionConfig`` (broker keys in the comments), defaults as Kafka 2.8."""

    #: transactional.id.expiration.ms
    transactional_id_expiration_ms: int = 604_800_000
    #: transaction.max.timeout.ms
    transaction_max_timeout_ms: int = 900_000
    #: transaction.state.log.num.partitions
    transaction_log_num_partitions: int = 50
    #: transaction.abort.timed.out.transaction.cleanup.interval.ms
    abort_timed_out_transactions_interval_ms: int = 10_000
    #: transaction.remove.expired.transaction.cleanup.interval.ms
    remove_expired_transactional_ids_interval_ms: int = 3_600_000
    #: Not a Kafka key. Kafka's marker sender thread retries a CompleteCommit/CompleteAbort
    #: append that failed with COORDINATOR_NOT_AVAILABLE on its next loop; here after this delay.
    log_append_retry_backoff_ms: int = 100
    #: Not a Kafka key: Kafka fills one tombstone batch up to the partition's max.message.bytes
    #: (default 1048588); expiration splits its tombstones into appends of about this size.
    max_tombstone_batch_bytes: int = 1_048_588


@dataclass(frozen=True)
class CoordinatorEpochAndTxnMetadata:
    coordinator_epoch: int
    transaction_metadata: TransactionMetadata


@dataclass(frozen=True)
class TransactionalIdAndProducerIdEpoch:
    transactional_id: str
    producer_id: int
    producer_epoch: int


@dataclass(frozen=True)
class PendingCompletion:
    """A loaded PrepareCommit / PrepareAbort whose markers must be (re)sent, with its
    prepared Complete* transition (Kafka's ``TransactionalIdCoordinatorEpochAndTransitMetadata``)."""

    transactional_id: str
    coordinator_epoch: int
    commit: bool
    txn_metadata: TransactionMetadata
    transit: TxnTransitMetadata


@dataclass(eq=False)
class _CacheEntry:
    """Kafka's ``TxnMetadataCacheEntry``: one loaded partition."""

    coordinator_epoch: int
    metadata_per_transactional_id: dict[str, TransactionMetadata] = field(default_factory=dict)


_COORDINATOR_NOT_AVAILABLE = frozenset({
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    # A timed-out write is retriable for the client.
    ErrorCode.REQUEST_TIMED_OUT,
})
_NOT_COORDINATOR = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR})
_UNKNOWN_SERVER_ERROR = frozenset({ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE})

#: Upper bounds for sizing tombstone appends: a v2 batch header, and one record's
#: framing around its key (length, attributes, deltas, key/value lengths, headers).
_BATCH_OVERHEAD = 61
_RECORD_OVERHEAD = 24


def append_error(error: int) -> int:
    """Kafka's mapping of a ``__transaction_state`` append error to the coordinator error."""
    if error in _COORDINATOR_NOT_AVAILABLE:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if error in _NOT_COORDINATOR:
        return ErrorCode.NOT_COORDINATOR
    if error in _UNKNOWN_SERVER_ERROR:
        return ErrorCode.UNKNOWN_SERVER_ERROR
    return error


class TransactionStateManager:
    """The cache of transaction metadata for the owned ``__transaction_state`` partitions."""

    def __init__(self, config: TransactionConfig, clock: Callable[[], int], state_log: StateLog) -> None:
        self.config = config
        self._clock = clock
        self._log = state_log
        #: partition → the coordinator epoch its running load started at
        self._loading: dict[int, int] = {}
        self._cache: dict[int, _CacheEntry] = {}
        #: partition → the highest coordinator epoch seen (stale calls are ignored)
        self._epochs: dict[int, int] = {}

    # ------------------------------------------------------------------ lookups

    def partition_for(self, transactional_id: str) -> int:
        """Kafka's ``Utils.abs(transactionalId.hashCode) % transaction.state.log.num.partitions``."""
        return offsets_partition_for(transactional_id, self.config.transaction_log_num_partitions)

    def validate_transaction_timeout_ms(self, txn_timeout_ms: int) -> bool:
        return 0 < txn_timeout_ms <= self.config.transaction_max_timeout_ms

    def owned_partitions(self) -> set[int]:
        return set(self._cache) - set(self._loading)

    def loading_partitions(self) -> set[int]:
        return set(self._loading)

    def coordinator_epoch(self, partition: int) -> int | None:
        """The epoch ``partition`` is loaded at, None if it is not served (loading or not owned)."""
        if partition in self._loading or partition not in self._cache:
            return None
        return self._cache[partition].coordinator_epoch

    def get_transaction_state(self, transactional_id: str) -> tuple[int, CoordinatorEpochAndTxnMetadata | None]:
        """``(COORDINATOR_LOAD_IN_PROGRESS | NOT_COORDINATOR, None)`` or ``(NONE, entry or None)``."""
        return self._get_and_maybe_add(transactional_id, None)

    def put_transaction_state_if_not_exists(
        self, metadata: TransactionMetadata
    ) -> tuple[int, CoordinatorEpochAndTxnMetadata | None]:
        """Add ``metadata`` unless its id is already cached; answer what is cached now."""
        return self._get_and_maybe_add(metadata.transactional_id, metadata)

    def _get_and_maybe_add(
        self, transactional_id: str, created: TransactionMetadata | None
    ) -> tuple[int, CoordinatorEpochAndTxnMetadata | None]:
        partition = self.partition_for(transactional_id)
        if partition in self._loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, None
        entry = self._cache.get(partition)
        if entry is None:
            return ErrorCode.NOT_COORDINATOR, None
        metadata = entry.metadata_per_transactional_id.get(transactional_id)
        if metadata is None and created is not None:
            metadata = entry.metadata_per_transactional_id.setdefault(transactional_id, created)
        if metadata is None:
            return ErrorCode.NONE, None
        return ErrorCode.NONE, CoordinatorEpochAndTxnMetadata(entry.coordinator_epoch, metadata)

    def all_metadata(self) -> Iterable[TransactionMetadata]:
        """Every cached transaction of the loaded (not loading) partitions."""
        for partition, entry in self._cache.items():
            if partition not in self._loading:
                yield from entry.metadata_per_transactional_id.values()

    # ------------------------------------------------------------------ leadership

    def _stale(self, partition: int, epoch: int) -> bool:
        current = self._epochs.get(partition)
        return current is not None and epoch < current

    def start_loading(self, partition: int, coordinator_epoch: int) -> bool:
        """Elected for ``partition``: requests for its ids get COORDINATOR_LOAD_IN_PROGRESS
        until :meth:`complete_loading`. False for a stale epoch, or a repeat of the
        election already loading or loaded at this epoch (no new load needed)."""
        if self._stale(partition, coordinator_epoch):
            return False
        if self._epochs.get(partition) == coordinator_epoch and (
            self._loading.get(partition) == coordinator_epoch
            or (partition in self._cache and self._cache[partition].coordinator_epoch == coordinator_epoch)
        ):
            return False
        self._epochs[partition] = coordinator_epoch
        # As in Kafka, a previously loaded entry stays until the new load replaces it;
        # it is unreachable meanwhile (the partition answers COORDINATOR_LOAD_IN_PROGRESS).
        self._loading[partition] = coordinator_epoch
        return True

    def complete_loading(
        self, partition: int, coordinator_epoch: int, records: Iterable[tuple[bytes, bytes | None]]
    ) -> list[PendingCompletion] | None:
        """Replay ``records`` (log order) and start serving ``partition``.

        Returns the loaded PrepareCommit / PrepareAbort transactions, each with its
        Complete* transition prepared (the caller re-sends their markers), or None
        if the load is stale (leadership moved on since :meth:`start_loading`).

        As Kafka's ``loadTransactionMetadata``, a record that cannot be decoded is
        logged and ends the replay; what was read before it is served.
        """
        if self._loading.get(partition) != coordinator_epoch:
            return None
        loaded: dict[str, TransactionMetadata] = {}
        for index, (key, value) in enumerate(records):
            try:
                transactional_id = decode_key(key)
                decoded = decode_value(value)
            except TransactionLogDecodeError:
                log.exception(
                    "Error loading transactions from transaction log %s-%d (record %d)",
                    TRANSACTION_STATE_TOPIC, partition, index,
                )
                break
            if decoded is None:
                loaded.pop(transactional_id, None)
            else:
                loaded[transactional_id] = metadata_from_value(transactional_id, decoded)
        self._cache[partition] = _CacheEntry(coordinator_epoch, loaded)

        now = self._clock()
        pending: list[PendingCompletion] = []
        for transactional_id, metadata in loaded.items():
            if metadata.state in (TransactionState.PREPARE_COMMIT, TransactionState.PREPARE_ABORT):
                pending.append(PendingCompletion(
                    transactional_id, coordinator_epoch, metadata.state == TransactionState.PREPARE_COMMIT,
                    metadata, metadata.prepare_complete(now),
                ))
        # Serve before the markers go out, so completing them is not refused as "loading".
        del self._loading[partition]
        log.info(
            "Finished loading %d transaction metadata from %s-%d at coordinator epoch %d",
            len(loaded), TRANSACTION_STATE_TOPIC, partition, coordinator_epoch,
        )
        return pending

    def fail_loading(self, partition: int, coordinator_epoch: int) -> None:
        """The load at ``coordinator_epoch`` could not read the partition: stop claiming it
        (its ids get NOT_COORDINATOR), and forget any older cache of it — it may be stale."""
        if self._loading.get(partition) == coordinator_epoch:
            del self._loading[partition]
            self._cache.pop(partition, None)

    def remove_transactions_for_partition(self, partition: int, coordinator_epoch: int | None = None) -> bool:
        """Resigned (or the partition is gone, epoch None): unload it. False if stale."""
        if coordinator_epoch is not None:
            if self._stale(partition, coordinator_epoch):
                return False
            self._epochs[partition] = coordinator_epoch
        self._loading.pop(partition, None)
        entry = self._cache.pop(partition, None)
        if entry is not None:
            log.info(
                "Unloaded %d transaction metadata of %s-%d (coordinator epoch %d)",
                len(entry.metadata_per_transactional_id), TRANSACTION_STATE_TOPIC, partition,
                entry.coordinator_epoch,
            )
        return True

    def shutdown(self) -> None:
        self._loading.clear()
        self._cache.clear()

    # ------------------------------------------------------------------ appends

    def append_transaction_to_log(
        self,
        transactional_id: str,
        coordinator_epoch: int,
        new_metadata: TxnTransitMetadata,
        callback: Callable[[int], None],
        retry_on_error: Callable[[int], bool] = lambda _error: False,
    ) -> None:
        """Write ``new_metadata`` and complete the pending transition (see the module docstring)."""
        key = encode_key(transactional_id)
        value = encode_value(value_from_transit(new_metadata))
        error, entry = self.get_transaction_state(transactional_id)
        if error != ErrorCode.NONE:
            return callback(error)
        if entry is None or entry.coordinator_epoch != coordinator_epoch:
            # Removed, or the partition moved away and back since the transition was prepared.
            return callback(ErrorCode.NOT_COORDINATOR)

        def appended(status: int) -> None:
            if status == ErrorCode.NONE:
                response = self._complete_append(transactional_id, coordinator_epoch, new_metadata)
            else:
                response = append_error(status)
                log.debug(
                    "Appending %s's new metadata %s failed due to %s",
                    transactional_id, new_metadata, ErrorCode(status).name,
                )
                self._abort_append(transactional_id, coordinator_epoch, response, retry_on_error)
            callback(response)

        self._log.append(self.partition_for(transactional_id), [(key, value)], appended)

    def _complete_append(self, transactional_id: str, coordinator_epoch: int, new_metadata: TxnTransitMetadata) -> int:
        error, entry = self.get_transaction_state(transactional_id)
        if error != ErrorCode.NONE:
            return error
        if entry is None or entry.coordinator_epoch != coordinator_epoch:
            # The partition was unloaded (and maybe reloaded) while the write was in flight:
            # the client must find the coordinator again.
            log.info(
                "Coordinator epoch of %s changed after appending %s at epoch %d; not applying it",
                transactional_id, new_metadata, coordinator_epoch,
            )
            return ErrorCode.NOT_COORDINATOR
        try:
            entry.transaction_metadata.complete_transition_to(new_metadata)
        except IllegalStateError:
            # Kafka's fatal "this should not happen". The record is durable but the cache
            # disagrees with it: the id stays pending (blocked) until the partition reloads.
            log.exception("Completing %s's transition to %s failed", transactional_id, new_metadata)
            return ErrorCode.UNKNOWN_SERVER_ERROR
        return ErrorCode.NONE

    def _abort_append(
        self, transactional_id: str, coordinator_epoch: int, error: int, retry_on_error: Callable[[int], bool]
    ) -> None:
        status, entry = self.get_transaction_state(transactional_id)
        if status != ErrorCode.NONE or entry is None or entry.coordinator_epoch != coordinator_epoch:
            return  # That metadata is gone or belongs to a newer epoch: leave it alone.
        if retry_on_error(error):
            return  # The caller retries the same transition: it stays pending.
        entry.transaction_metadata.pending_state = None

    # ------------------------------------------------------------------ background scans

    def timed_out_transactions(self) -> list[TransactionalIdAndProducerIdEpoch]:
        """Ongoing transactions open longer than their timeout, with no transition pending."""
        now = self._clock()
        return [
            TransactionalIdAndProducerIdEpoch(m.transactional_id, m.producer_id, m.producer_epoch)
            for m in self.all_metadata()
            if m.pending_state is None
            and m.state == TransactionState.ONGOING
            and m.txn_start_timestamp + m.txn_timeout_ms < now
        ]

    def remove_expired_transactional_ids(self) -> int:
        """Kafka's ``removeExpiredTransactionalIds``: every Empty / CompleteCommit /
        CompleteAbort id not updated for ``transactional.id.expiration.ms`` moves to a
        pending Dead and gets a tombstone; once the tombstone is durable it leaves the
        cache, otherwise its pending state is cleared. Returns how many were expired."""
        now = self._clock()
        count = 0
        for partition in sorted(self.owned_partitions()):
            entry = self._cache[partition]
            batch: list[tuple[TransactionMetadata, TxnTransitMetadata]] = []
            records: Records = []
            size = _BATCH_OVERHEAD
            for metadata in list(entry.metadata_per_transactional_id.values()):
                if metadata.pending_state is not None or not self._should_expire(metadata, now):
                    continue
                key = encode_key(metadata.transactional_id)
                if records and size + len(key) + _RECORD_OVERHEAD > self.config.max_tombstone_batch_bytes:
                    self._write_tombstones(partition, entry.coordinator_epoch, batch, records)
                    batch, records, size = [], [], _BATCH_OVERHEAD
                batch.append((metadata, metadata.prepare_dead()))
                records.append((key, None))
                size += len(key) + _RECORD_OVERHEAD
                count += 1
            if records:
                self._write_tombstones(partition, entry.coordinator_epoch, batch, records)
        return count

    def _should_expire(self, metadata: TransactionMetadata, now: int) -> bool:
        return (
            metadata.state.is_expiration_allowed
            and metadata.txn_last_update_timestamp <= now - self.config.transactional_id_expiration_ms
        )

    def _write_tombstones(
        self,
        partition: int,
        coordinator_epoch: int,
        expired: list[tuple[TransactionMetadata, TxnTransitMetadata]],
        records: Records,
    ) -> None:
        def appended(error: int) -> None:
            entry = self._cache.get(partition)
            for metadata, transit in expired:
                # Only the object we moved to Dead: after a reload the cache holds new
                # objects whose pending state is someone else's.
                current = entry.metadata_per_transactional_id.get(metadata.transactional_id) if entry else None
                if current is not metadata or metadata.pending_state != TransactionState.DEAD:
                    continue
                if (
                    entry is not None
                    and entry.coordinator_epoch == coordinator_epoch
                    and metadata.producer_epoch == transit.producer_epoch
                    and error == ErrorCode.NONE
                ):
                    del entry.metadata_per_transactional_id[metadata.transactional_id]
                else:
                    log.warning(
                        "Failed to remove expired transactionalId %s from cache: tombstone append error %s",
                        metadata.transactional_id, ErrorCode(error).name,
                    )
                    metadata.pending_state = None

        self._log.append(partition, records, appended)

    # ------------------------------------------------------------------ KIP-664

    def list_transaction_states(
        self, filter_producer_ids: Iterable[int], filter_state_names: Iterable[str]
    ) -> tuple[int, list[str], list[TransactionMetadata]]:
        """``(error, unknown state filters, matching metadata)``; Dead is never listed, and
        any loading partition makes the answer COORDINATOR_LOAD_IN_PROGRESS (Kafka 3.0)."""
        if self._loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, [], []
        producer_ids = set(filter_producer_ids)
        names = list(filter_state_names)
        states = {s for s in map(TransactionState.from_name, names) if s is not None}
        unknown = [n for n in names if TransactionState.from_name(n) is None]
        out = [
            m for m in self.all_metadata()
            if m.state != TransactionState.DEAD
            and (not producer_ids or m.producer_id in producer_ids)
            and (not names or m.state in states)
        ]
        return ErrorCode.NONE, unknown, out
