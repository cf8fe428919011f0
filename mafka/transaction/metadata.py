"""Kafka 2.8's transaction metadata model: states, the transition table, and
``TransactionMetadata`` with its prepare / complete transition pattern.

A pure model of ``kafka.coordinator.transaction.TransactionMetadata`` (Kafka
2.8): no I/O, no clock — every time is passed in. The transaction coordinator
drives it; the ``__transaction_state`` log is written elsewhere.

Contract:

* :class:`TransactionState` holds the eight states under their Kafka byte
  values (as stored in the log's ``transaction_status``); ``str(state)`` is
  Kafka's state name (``"PrepareCommit"``), the one KIP-664 reports.
  :data:`VALID_PREVIOUS_STATES` is Kafka's table of legal previous states for
  each target.
* A change goes in two steps, as in Kafka. A ``prepare_*`` method checks the
  move against the table, sets :attr:`TransactionMetadata.pending_state` and
  returns an immutable :class:`TxnTransitMetadata` (the record to append)
  *without touching anything else*; once that record is durably in the log the
  coordinator calls :meth:`TransactionMetadata.complete_transition_to`, which
  re-checks the transit against the current metadata (Kafka's consistency
  rules) and only then updates the fields. If the append fails the coordinator
  clears ``pending_state`` instead. While a transition is pending no other may
  be prepared (the coordinator answers CONCURRENT_TRANSACTIONS).
* Programming errors — preparing while a transition is pending, a move the
  table forbids, a negative producer id or epoch, a transit that does not fit
  the metadata on completion, completing to PrepareEpochFence or Dead — raise
  :class:`IllegalStateError` (Kafka's IllegalStateException) or ``ValueError``
  (Kafka's IllegalArgumentException) and change nothing.
* KIP-360: ``last_producer_id`` / ``last_producer_epoch`` let a producer that
  lost an InitProducerId answer retry it (see
  :meth:`TransactionMetadata.prepare_increment_producer_epoch`). As in Kafka
  2.8 they are kept in memory only; the log value has no field for them.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field

from mafka.errors import ErrorCode, IllegalStateError
from mafka.topics import TopicPartitionTuple
from mafka.wire.batch import NO_PRODUCER_EPOCH, NO_PRODUCER_ID

__all__ = [
    "VALID_PREVIOUS_STATES",
    "TransactionMetadata",
    "TransactionState",
    "TxnTransitMetadata",
    "is_epoch_exhausted",
    "is_valid_transition",
]

SHORT_MAX = 32767


class TransactionState(enum.IntEnum):
    """Kafka's transaction states; the value is the byte stored in ``__transaction_state``."""

    #: No transaction yet (after InitProducerId). AddPartitions / AddOffsets → Ongoing.
    EMPTY = 0
    #: Partitions have been added. EndTxn → PrepareCommit / PrepareAbort; AddPartitions → Ongoing.
    ONGOING = 1
    #: Commit decided and durable; markers are being written. All written → CompleteCommit.
    PREPARE_COMMIT = 2
    #: Abort decided and durable; markers are being written. All written → CompleteAbort.
    PREPARE_ABORT = 3
    COMPLETE_COMMIT = 4
    COMPLETE_ABORT = 5
    #: The transactional id expired; its tombstone is being written. Never stored as a value.
    DEAD = 6
    #: Bumping the epoch to fence an older producer before aborting its transaction.
    #: Never stored: the coordinator turns it into PrepareAbort before appending.
    PREPARE_EPOCH_FENCE = 7

    @property
    def kafka_name(self) -> str:
        return _KAFKA_NAMES[self]

    @property
    def is_expiration_allowed(self) -> bool:
        """Kafka's ``isExpirationAllowed``: only a transactional id with no open transaction may expire."""
        return self in (TransactionState.EMPTY, TransactionState.COMPLETE_COMMIT, TransactionState.COMPLETE_ABORT)

    @classmethod
    def from_name(cls, name: str) -> TransactionState | None:
        """The state Kafka calls ``name`` (KIP-664's ``TransactionState.fromName``), or None."""
        return _BY_KAFKA_NAME.get(name)

    def __str__(self) -> str:
        return self.kafka_name


_KAFKA_NAMES = {
    TransactionState.EMPTY: "Empty",
    TransactionState.ONGOING: "Ongoing",
    TransactionState.PREPARE_COMMIT: "PrepareCommit",
    TransactionState.PREPARE_ABORT: "PrepareAbort",
    TransactionState.COMPLETE_COMMIT: "CompleteCommit",
    TransactionState.COMPLETE_ABORT: "CompleteAbort",
    TransactionState.DEAD: "Dead",
    TransactionState.PREPARE_EPOCH_FENCE: "PrepareEpochFence",
}
_BY_KAFKA_NAME = {name: state for state, name in _KAFKA_NAMES.items()}

_S = TransactionState

#: Target state → the states a transaction may be in just before moving to it (Kafka 2.8).
VALID_PREVIOUS_STATES: dict[TransactionState, frozenset[TransactionState]] = {
    _S.EMPTY: frozenset({_S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.ONGOING: frozenset({_S.ONGOING, _S.EMPTY, _S.COMPLETE_COMMIT, _S.COMPLETE_ABORT}),
    _S.PREPARE_COMMIT: frozenset({_S.ONGOING}),
    _S.PREPARE_ABORT: frozenset({_S.ONGOING, _S.PREPARE_EPOCH_FENCE}),
    _S.COMPLETE_COMMIT: frozenset({_S.PREPARE_COMMIT}),
    _S.COMPLETE_ABORT: frozenset({_S.PREPARE_ABORT}),
    _S.DEAD: frozenset({_S.EMPTY, _S.COMPLETE_ABORT, _S.COMPLETE_COMMIT}),
    _S.PREPARE_EPOCH_FENCE: frozenset({_S.ONGOING}),
}


def is_valid_transition(old_state: TransactionState, new_state: TransactionState) -> bool:
    return old_state in VALID_PREVIOUS_STATES[new_state]


def is_epoch_exhausted(producer_epoch: int) -> bool:
    """Kafka's ``isEpochExhausted``: epoch 32766 is the last a client may use, so the
    coordinator can always bump once more (to 32767) to fence it."""
    return producer_epoch >= SHORT_MAX - 1


@dataclass(frozen=True)
class TxnTransitMetadata:
    """The target of a prepared transition: exactly what goes into the log value."""

    producer_id: int
    last_producer_id: int
    producer_epoch: int
    last_producer_epoch: int
    txn_timeout_ms: int
    txn_state: TransactionState
    topic_partitions: frozenset[TopicPartitionTuple]
    txn_start_timestamp: int
    txn_last_update_timestamp: int


@dataclass(eq=False)
class TransactionMetadata:
    """One transactional id's state (Kafka's ``TransactionMetadata``; see the module docstring).

    ``txn_start_timestamp`` is when the first partition of the current transaction
    was added (-1 before); ``txn_last_update_timestamp`` is the last completed
    change (used for expiration).
    """

    transactional_id: str
    producer_id: int
    last_producer_id: int = NO_PRODUCER_ID
    producer_epoch: int = NO_PRODUCER_EPOCH
    last_producer_epoch: int = NO_PRODUCER_EPOCH
    txn_timeout_ms: int = 0
    state: TransactionState = TransactionState.EMPTY
    topic_partitions: set[TopicPartitionTuple] = field(default_factory=set)
    txn_start_timestamp: int = -1
    txn_last_update_timestamp: int = -1
    #: The state the metadata is moving to while its log append is in flight.
    pending_state: TransactionState | None = None
    #: A previous epoch fence bumped the epoch in memory but its write failed: the next
    #: fence reuses that epoch instead of bumping again (it was never returned to anyone).
    has_failed_epoch_fence: bool = False

    # ------------------------------------------------------------------ queries

    @property
    def pending_transition_in_progress(self) -> bool:
        return self.pending_state is not None

    @property
    def is_producer_epoch_exhausted(self) -> bool:
        return is_epoch_exhausted(self.producer_epoch)

    def has_pending_transaction(self) -> bool:
        return self.state in (_S.ONGOING, _S.PREPARE_ABORT, _S.PREPARE_COMMIT)

    # ------------------------------------------------------------------ prepare

    def prepare_no_transit(self) -> TxnTransitMetadata:
        """The current metadata as a transit, without setting a pending state."""
        return TxnTransitMetadata(
            self.producer_id, self.last_producer_id, self.producer_epoch, self.last_producer_epoch,
            self.txn_timeout_ms, self.state, frozenset(self.topic_partitions),
            self.txn_start_timestamp, self.txn_last_update_timestamp,
        )

    def prepare_fence_producer_epoch(self) -> TxnTransitMetadata:
        """Ongoing → PrepareEpochFence with the epoch bumped (unless a previous fence failed)."""
        if self.producer_epoch == SHORT_MAX:
            raise IllegalStateError(
                "Cannot fence producer with epoch equal to Short.MaxValue since this would overflow"
            )
        bumped = self.producer_epoch if self.has_failed_epoch_fence else self.producer_epoch + 1
        return self._prepare_transition_to(
            _S.PREPARE_EPOCH_FENCE, self.producer_id, bumped, NO_PRODUCER_EPOCH, self.txn_timeout_ms,
            frozenset(self.topic_partitions), self.txn_start_timestamp, self.txn_last_update_timestamp,
        )

    def prepare_increment_producer_epoch(
        self, new_txn_timeout_ms: int, expected_producer_epoch: int | None, update_timestamp: int
    ) -> tuple[int, TxnTransitMetadata | None]:
        """InitProducerId on an Empty / Complete* transaction: ``(NONE, transit to Empty)``
        or ``(PRODUCER_FENCED, None)`` (nothing prepared then).

        Without an expected epoch the epoch is bumped and the last epoch forgotten. With
        one (KIP-360): the current epoch, or no epoch yet, bumps and remembers the current
        as last; the last epoch is a retry of a bump that already happened and returns the
        current epoch unchanged; anything else is fenced.
        """
        if self.is_producer_epoch_exhausted:
            raise IllegalStateError(f"Cannot allocate any more producer epochs for producerId {self.producer_id}")
        bumped = self.producer_epoch + 1
        if expected_producer_epoch is None:
            next_epoch, last_epoch = bumped, NO_PRODUCER_EPOCH
        elif self.producer_epoch == NO_PRODUCER_EPOCH or expected_producer_epoch == self.producer_epoch:
            next_epoch, last_epoch = bumped, self.producer_epoch
        elif expected_producer_epoch == self.last_producer_epoch:
            next_epoch, last_epoch = self.producer_epoch, self.last_producer_epoch
        else:
            return ErrorCode.PRODUCER_FENCED, None
        return ErrorCode.NONE, self._prepare_transition_to(
            _S.EMPTY, self.producer_id, next_epoch, last_epoch, new_txn_timeout_ms, frozenset(), -1, update_timestamp,
        )

    def prepare_producer_id_rotation(
        self, new_producer_id: int, new_txn_timeout_ms: int, update_timestamp: int, record_last_epoch: bool
    ) -> TxnTransitMetadata:
        """Epochs exhausted: move to ``new_producer_id`` at epoch 0 (Empty)."""
        if self.has_pending_transaction():
            raise IllegalStateError("Cannot rotate producer ids while a transaction is still pending")
        return self._prepare_transition_to(
            _S.EMPTY, new_producer_id, 0, self.producer_epoch if record_last_epoch else NO_PRODUCER_EPOCH,
            new_txn_timeout_ms, frozenset(), -1, update_timestamp,
        )

    def prepare_add_partitions(
        self, added: frozenset[TopicPartitionTuple] | set[TopicPartitionTuple], update_timestamp: int
    ) -> TxnTransitMetadata:
        """→ Ongoing with ``added`` joined; a new transaction starts its clock now."""
        if self.state in (_S.EMPTY, _S.COMPLETE_ABORT, _S.COMPLETE_COMMIT):
            start = update_timestamp
        else:
            start = self.txn_start_timestamp
        return self._prepare_transition_to(
            _S.ONGOING, self.producer_id, self.producer_epoch, self.last_producer_epoch, self.txn_timeout_ms,
            frozenset(self.topic_partitions | set(added)), start, update_timestamp,
        )

    def prepare_abort_or_commit(self, new_state: TransactionState, update_timestamp: int) -> TxnTransitMetadata:
        """Ongoing (or PrepareEpochFence) → PrepareCommit / PrepareAbort."""
        return self._prepare_transition_to(
            new_state, self.producer_id, self.producer_epoch, self.last_producer_epoch, self.txn_timeout_ms,
            frozenset(self.topic_partitions), self.txn_start_timestamp, update_timestamp,
        )

    def prepare_complete(self, update_timestamp: int) -> TxnTransitMetadata:
        """PrepareCommit → CompleteCommit, PrepareAbort → CompleteAbort (markers written)."""
        new_state = _S.COMPLETE_COMMIT if self.state == _S.PREPARE_COMMIT else _S.COMPLETE_ABORT
        # The Prepare* record carrying the fenced epoch is durable, so a failed fence is behind us.
        self.has_failed_epoch_fence = False
        return self._prepare_transition_to(
            new_state, self.producer_id, self.producer_epoch, self.last_producer_epoch, self.txn_timeout_ms,
            frozenset(), self.txn_start_timestamp, update_timestamp,
        )

    def prepare_dead(self) -> TxnTransitMetadata:
        """→ Dead (expiration): the transactional id's tombstone is about to be written."""
        return self._prepare_transition_to(
            _S.DEAD, self.producer_id, self.producer_epoch, self.last_producer_epoch, self.txn_timeout_ms,
            frozenset(), self.txn_start_timestamp, self.txn_last_update_timestamp,
        )

    def _prepare_transition_to(
        self,
        new_state: TransactionState,
        new_producer_id: int,
        new_epoch: int,
        new_last_epoch: int,
        new_txn_timeout_ms: int,
        new_topic_partitions: frozenset[TopicPartitionTuple],
        new_txn_start_timestamp: int,
        update_timestamp: int,
    ) -> TxnTransitMetadata:
        if self.pending_state is not None:
            raise IllegalStateError(
                f"Preparing transaction state transition to {new_state} while it already a pending state "
                f"{self.pending_state}"
            )
        if new_producer_id < 0:
            raise ValueError(f"Illegal new producer id {new_producer_id}")
        if new_epoch < 0:
            raise ValueError(f"Illegal new producer epoch {new_epoch}")
        if not is_valid_transition(self.state, new_state):
            raise IllegalStateError(
                f"Preparing transaction state transition to {new_state} failed since the target state "
                f"{new_state} is not a valid previous state of the current state {self.state}"
            )
        # The transit's last producer id is the current one: after a rotation it is the old id.
        transit = TxnTransitMetadata(
            new_producer_id, self.producer_id, new_epoch, new_last_epoch, new_txn_timeout_ms, new_state,
            new_topic_partitions, new_txn_start_timestamp, update_timestamp,
        )
        self.pending_state = new_state
        return transit

    # ------------------------------------------------------------------ complete

    def complete_transition_to(self, transit: TxnTransitMetadata) -> None:
        """Apply a prepared transition whose record is now durable (Kafka's consistency checks first)."""
        to_state = self.pending_state
        if to_state is None:
            raise IllegalStateError(
                f"TransactionalId {self.transactional_id} completing transaction state transition "
                "while it does not have a pending state"
            )
        if to_state != transit.txn_state:
            self._transition_failure(transit)
        if to_state == _S.EMPTY:  # from InitProducerId
            if (
                (self.producer_epoch != transit.producer_epoch and not self._valid_producer_epoch_bump(transit))
                or transit.topic_partitions
                or transit.txn_start_timestamp != -1
            ):
                self._transition_failure(transit)
            self.txn_timeout_ms = transit.txn_timeout_ms
            self.producer_epoch = transit.producer_epoch
            self.last_producer_epoch = transit.last_producer_epoch
            self.producer_id = transit.producer_id
            self.last_producer_id = transit.last_producer_id
        elif to_state == _S.ONGOING:  # from AddPartitions
            if (
                not self._valid_producer_epoch(transit)
                or not self.topic_partitions <= transit.topic_partitions
                or self.txn_timeout_ms != transit.txn_timeout_ms
            ):
                self._transition_failure(transit)
            self.txn_start_timestamp = transit.txn_start_timestamp
            self.topic_partitions |= transit.topic_partitions
        elif to_state in (_S.PREPARE_ABORT, _S.PREPARE_COMMIT):  # from EndTxn
            if (
                not self._valid_producer_epoch(transit)
                or self.topic_partitions != transit.topic_partitions
                or self.txn_timeout_ms != transit.txn_timeout_ms
                or self.txn_start_timestamp != transit.txn_start_timestamp
            ):
                self._transition_failure(transit)
        elif to_state in (_S.COMPLETE_ABORT, _S.COMPLETE_COMMIT):  # markers written
            if (
                not self._valid_producer_epoch(transit)
                or self.txn_timeout_ms != transit.txn_timeout_ms
                or transit.txn_start_timestamp == -1
            ):
                self._transition_failure(transit)
            self.txn_start_timestamp = transit.txn_start_timestamp
            self.topic_partitions.clear()
        elif to_state == _S.PREPARE_EPOCH_FENCE:
            # Never completed: the coordinator replaces the pending fence by PrepareAbort at once.
            self._transition_failure(transit)
        else:  # Dead
            raise IllegalStateError(
                f"TransactionalId {self.transactional_id} is trying to complete a transition to {to_state}. "
                "This means that the transactionalId was being expired, and the only acceptable completion "
                "of this operation is to remove the transaction metadata from the cache"
            )
        self.txn_last_update_timestamp = transit.txn_last_update_timestamp
        self.pending_state = None
        self.state = to_state

    def _valid_producer_epoch(self, transit: TxnTransitMetadata) -> bool:
        return transit.producer_epoch == self.producer_epoch and transit.producer_id == self.producer_id

    def _valid_producer_epoch_bump(self, transit: TxnTransitMetadata) -> bool:
        return transit.producer_epoch == self.producer_epoch + 1 or (
            transit.producer_epoch == 0 and transit.producer_id != self.producer_id
        )

    def _transition_failure(self, transit: TxnTransitMetadata) -> None:
        raise IllegalStateError(
            f"TransactionalId {self.transactional_id} failed transition to state {transit} due to unexpected metadata"
        )
