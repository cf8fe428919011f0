"""Finishing a decided transaction: markers out, then CompleteCommit / CompleteAbort in.

The coordinator's half of Kafka 2.8's ``TransactionMarkerChannelManager``
(``addTxnMarkersToSend``, ``maybeWriteTxnCompletion``, ``writeTxnCompletion``,
``tryAppendToLog``, the log-append retry queue, ``removeMarkersForTxnTopicPartition``).
Delivering WriteTxnMarkers to partition leaders is the broker's job, behind a
:class:`TxnMarkerSink`.

Contract:

* :meth:`TransactionMarkerChannelManager.add_txn_markers_to_send` is called
  once a PrepareCommit / PrepareAbort is durable, with the Complete* transition
  already prepared (so the id stays pending: InitProducerId, AddPartitions and
  EndTxn get CONCURRENT_TRANSACTIONS until it completes). It hands the
  transaction's partitions to the sink; a transaction with no partitions
  completes at once.
* The sink calls ``on_complete()`` once every partition has its marker (or
  its partition/topic is gone). Then, if this coordinator still owns the id at
  the same coordinator epoch, the Complete* record is appended; an append that
  fails with COORDINATOR_NOT_AVAILABLE is retried after
  ``log_append_retry_backoff_ms`` (the transition stays pending),
  NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS drop it (the next owner's load
  finishes the transaction), anything else is logged as Kafka's fatal error.
* A completion that is no longer wanted — the partition was resigned or
  re-elected (:meth:`~TransactionMarkerChannelManager.remove_markers_for_txn_topic_partition`),
  or the coordinator epoch moved — is ignored, so a late ``on_complete`` is
  harmless. :meth:`~TransactionMarkerChannelManager.is_current` tells the sink
  whether a delivery is still wanted (Kafka's completion handler asks the same
  before re-enqueueing).
"""

from __future__ import annotations

import enum
import logging
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from mafka.errors import ErrorCode
from mafka.timers import TimerHandle, Timers
from mafka.topics import TopicPartitionTuple
from mafka.transaction.metadata import TransactionMetadata, TxnTransitMetadata
from mafka.transaction.state_manager import TransactionStateManager

__all__ = [
    "PendingCompleteTxn",
    "TransactionMarkerChannelManager",
    "TransactionResult",
    "TxnMarkerSink",
]

log = logging.getLogger("mafka.transaction.markers")


class TransactionResult(enum.IntEnum):
    """Kafka's ``TransactionResult``; the value is WriteTxnMarkers' ``TransactionResult`` boolean."""

    ABORT = 0
    COMMIT = 1


class TxnMarkerSink(Protocol):
    def send_markers(
        self,
        coordinator_epoch: int,
        transactional_id: str,
        producer_id: int,
        producer_epoch: int,
        result: TransactionResult,
        partitions: set[TopicPartitionTuple],
        on_complete: Callable[[], None],
    ) -> None:
        """Write ``result``'s marker to the leader of every partition, retrying until each
        is written or its partition/topic is gone, then call ``on_complete()`` once. On
        INVALID_PRODUCER_EPOCH / TRANSACTION_COORDINATOR_FENCED give up silently."""


@dataclass(eq=False)
class PendingCompleteTxn:
    """A transaction whose markers are out and whose Complete* record is still to be written."""

    transactional_id: str
    coordinator_epoch: int
    txn_metadata: TransactionMetadata
    new_metadata: TxnTransitMetadata


class TransactionMarkerChannelManager:
    """Tracks transactions between their Prepare* and Complete* records (see the module docstring)."""

    def __init__(
        self,
        txn_manager: TransactionStateManager,
        sink: TxnMarkerSink,
        timers: Timers,
        retry_backoff_ms: int,
    ) -> None:
        self._txn_manager = txn_manager
        self._sink = sink
        self._timers = timers
        self._retry_backoff_ms = retry_backoff_ms
        self._transactions_with_pending_markers: dict[str, PendingCompleteTxn] = {}
        self._retries: set[TimerHandle] = set()

    @property
    def num_txns_with_pending_markers(self) -> int:
        return len(self._transactions_with_pending_markers)

    def is_current(self, transactional_id: str, coordinator_epoch: int) -> bool:
        """Whether markers sent for ``transactional_id`` at ``coordinator_epoch`` are still awaited."""
        pending = self._transactions_with_pending_markers.get(transactional_id)
        if pending is None or pending.coordinator_epoch != coordinator_epoch:
            return False
        error, entry = self._txn_manager.get_transaction_state(transactional_id)
        return error == ErrorCode.NONE and entry is not None and entry.coordinator_epoch == coordinator_epoch

    def add_txn_markers_to_send(
        self,
        coordinator_epoch: int,
        result: TransactionResult,
        txn_metadata: TransactionMetadata,
        new_metadata: TxnTransitMetadata,
    ) -> None:
        transactional_id = txn_metadata.transactional_id
        pending = PendingCompleteTxn(transactional_id, coordinator_epoch, txn_metadata, new_metadata)
        self._transactions_with_pending_markers[transactional_id] = pending
        partitions = set(txn_metadata.topic_partitions)
        if not partitions:
            self._markers_written(pending)
            return
        self._sink.send_markers(
            coordinator_epoch, transactional_id, txn_metadata.producer_id, txn_metadata.producer_epoch,
            result, partitions, lambda: self._markers_written(pending),
        )

    def remove_markers_for_txn_topic_partition(self, partition: int) -> None:
        """Forget the transactions of ``partition`` (resigned, or about to be reloaded)."""
        for transactional_id in list(self._transactions_with_pending_markers):
            if self._txn_manager.partition_for(transactional_id) == partition:
                del self._transactions_with_pending_markers[transactional_id]

    def shutdown(self) -> None:
        self._transactions_with_pending_markers.clear()
        for handle in self._retries:
            handle.cancel()
        self._retries.clear()

    # ------------------------------------------------------------------ completion

    def _markers_written(self, pending: PendingCompleteTxn) -> None:
        """Kafka's ``maybeWriteTxnCompletion`` once no partition awaits its marker."""
        if self._transactions_with_pending_markers.get(pending.transactional_id) is not pending:
            return  # Superseded or removed: this delivery is not ours to finish.
        del self._transactions_with_pending_markers[pending.transactional_id]
        self._write_txn_completion(pending)

    def _write_txn_completion(self, pending: PendingCompleteTxn) -> None:
        transactional_id = pending.transactional_id
        error, entry = self._txn_manager.get_transaction_state(transactional_id)
        if error != ErrorCode.NONE:
            # NOT_COORDINATOR: someone else finishes it; LOAD_IN_PROGRESS: the load will.
            log.info(
                "%s while completing %s at coordinator epoch %d; not appending %s",
                ErrorCode(error).name, transactional_id, pending.coordinator_epoch, pending.new_metadata,
            )
        elif entry is None:
            log.error(
                "The coordinator still owns the transaction partition for %s, but there is no metadata "
                "in the cache; this is not expected", transactional_id,
            )
        elif entry.coordinator_epoch != pending.coordinator_epoch:
            log.info(
                "Coordinator epoch of %s moved from %d to %d after its markers were written; not appending %s",
                transactional_id, pending.coordinator_epoch, entry.coordinator_epoch, pending.new_metadata,
            )
        else:
            self._try_append_to_log(pending)

    def _try_append_to_log(self, pending: PendingCompleteTxn) -> None:
        def appended(error: int) -> None:
            if error in (ErrorCode.NONE, ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS):
                return
            if error == ErrorCode.COORDINATOR_NOT_AVAILABLE:
                log.info("Not available to append %s's completion; retrying", pending.transactional_id)
                self._retry_later(pending)
                return
            log.error(
                "Unexpected error %s while appending to transaction log for %s",
                ErrorCode(error).name, pending.transactional_id,
            )

        self._txn_manager.append_transaction_to_log(
            pending.transactional_id, pending.coordinator_epoch, pending.new_metadata, appended,
            retry_on_error=lambda error: error == ErrorCode.COORDINATOR_NOT_AVAILABLE,
        )

    def _retry_later(self, pending: PendingCompleteTxn) -> None:
        handle: TimerHandle | None = None

        def fire() -> None:
            self._retries.discard(handle)
            self._try_append_to_log(pending)

        handle = self._timers.call_later(self._retry_backoff_ms, fire)
        self._retries.add(handle)
