"""A transactional producer's state (KIP-98 / KIP-447) as plain data.  No I/O.

:class:`TransactionState` holds where the producer is in librdkafka's
transaction state machine (``rdkafka_txnmgr.c``; the same states, under the
same names, so log lines and error texts read alike), the error that put it
into ``AbortableError`` or ``FatalError``, and the partitions of the current
transaction: pending registration, being registered (in the one outstanding
AddPartitionsToTxn request) and registered (their batches may be sent).

The ``*_action`` functions say what a broker's answer to each transactional
request means (librdkafka's tables): retry, find the coordinator again and
retry, a fatal error (the producer is done: fenced, unauthorized), or an
abortable error (the application must call ``abort_transaction()``), some of
which also need the producer epoch bumped (KIP-360) when aborting.

:class:`ApiGuard` keeps librdkafka's rule for the application's calls: one
transactional API call at a time, and a call that timed out while its work
goes on in the background (``init_transactions``, ``commit_transaction``,
``abort_transaction``) must be called again to finish — any other call
meanwhile is refused with ``_CONFLICT``.

Errors reach the application as :class:`~mafka.client.kafka_error.KafkaException`
carrying a :class:`~mafka.client.kafka_error.KafkaError` whose ``fatal()``,
``retriable()`` and ``txn_requires_abort()`` are set as librdkafka sets them.
"""

from __future__ import annotations

import enum
import threading
from collections.abc import Iterable, Iterator
from contextlib import contextmanager

from mafka.client.kafka_error import KafkaError, KafkaException
from mafka.errors import ErrorCode
from mafka.topics import TopicPartitionTuple

__all__ = [
    "TxnState",
    "Action",
    "TransactionState",
    "ApiGuard",
    "normalize",
    "describe",
    "txn_error",
    "init_pid_action",
    "add_partitions_action",
    "add_offsets_action",
    "txn_offset_commit_action",
    "end_txn_action",
]


class TxnState(enum.Enum):
    """librdkafka's ``rd_kafka_txn_state_t``; the value is its printed name."""

    INIT = "Init"
    WAIT_PID = "WaitPID"
    READY_NOT_ACKED = "ReadyNotAcked"
    READY = "Ready"
    IN_TRANSACTION = "InTransaction"
    BEGIN_COMMIT = "BeginCommit"
    COMMITTING_TRANSACTION = "CommittingTransaction"
    COMMIT_NOT_ACKED = "CommitNotAcked"
    BEGIN_ABORT = "BeginAbort"
    ABORTING_TRANSACTION = "AbortingTransaction"
    ABORT_NOT_ACKED = "AbortedNotAcked"
    ABORTABLE_ERROR = "AbortableError"
    FATAL_ERROR = "FatalError"


S = TxnState

#: new state -> the states it may be entered from (``rd_kafka_txn_state_transition_is_valid``).
_FROM: dict[TxnState, frozenset[TxnState]] = {
    S.WAIT_PID: frozenset({S.INIT}),
    S.READY_NOT_ACKED: frozenset({S.WAIT_PID}),
    S.READY: frozenset({S.READY_NOT_ACKED, S.COMMIT_NOT_ACKED, S.ABORT_NOT_ACKED}),
    S.IN_TRANSACTION: frozenset({S.READY}),
    S.BEGIN_COMMIT: frozenset({S.IN_TRANSACTION}),
    S.COMMITTING_TRANSACTION: frozenset({S.BEGIN_COMMIT}),
    S.COMMIT_NOT_ACKED: frozenset({S.BEGIN_COMMIT, S.COMMITTING_TRANSACTION}),
    S.BEGIN_ABORT: frozenset({S.IN_TRANSACTION, S.ABORTING_TRANSACTION, S.ABORTABLE_ERROR}),
    S.ABORTING_TRANSACTION: frozenset({S.BEGIN_ABORT}),
    S.ABORT_NOT_ACKED: frozenset({S.BEGIN_ABORT, S.ABORTING_TRANSACTION}),
    S.ABORTABLE_ERROR: frozenset({S.IN_TRANSACTION, S.BEGIN_COMMIT, S.COMMITTING_TRANSACTION}),
}
#: States in which a later abortable error changes nothing (the abort is under way, or worse).
_IGNORE_ABORTABLE = frozenset({S.BEGIN_ABORT, S.ABORTING_TRANSACTION, S.FATAL_ERROR})
#: States in which the current transaction's batches may be sent (commit flushes them).
_SENDING = frozenset({S.IN_TRANSACTION, S.BEGIN_COMMIT})


class Action(enum.Enum):
    """What an error answer to a transactional request asks for."""

    RETRY = "retry"
    REFIND = "refind"  # the coordinator moved: look it up again, then retry
    FATAL = "fatal"
    ABORTABLE = "abortable"
    BUMP = "bump"  # abortable, and aborting must bump the producer epoch (KIP-360)


E = ErrorCode
_FENCING = frozenset({E.INVALID_PRODUCER_EPOCH, E.PRODUCER_FENCED})
_COORDINATOR = frozenset({E.NOT_COORDINATOR, E.COORDINATOR_NOT_AVAILABLE})
_AUTH = frozenset({E.TRANSACTIONAL_ID_AUTHORIZATION_FAILED, E.CLUSTER_AUTHORIZATION_FAILED})


def normalize(code: int) -> int:
    """One fencing error for the application: INVALID_PRODUCER_EPOCH and PRODUCER_FENCED are
    ``_FENCED`` (``rd_kafka_txn_normalize_err``)."""
    return KafkaError._FENCED if code in _FENCING else code


def describe(code: int) -> str:
    """A broker or local error code's text, for error messages."""
    try:
        return ErrorCode(code).description
    except ValueError:
        return KafkaError(code).str()


def txn_error(code: int, reason: str | None, action: Action | None) -> KafkaError:
    """The error handed to the application for ``code`` (normalized), flagged by ``action``."""
    return KafkaError(
        normalize(code),
        reason,
        fatal=action is Action.FATAL,
        retriable=action in (Action.RETRY, Action.REFIND),
        txn_requires_abort=action in (Action.ABORTABLE, Action.BUMP),
    )


def init_pid_action(code: int) -> Action:
    """InitProducerId (``rd_kafka_idemp_check_error``): fencing, authorization and a bad
    ``transaction.timeout.ms`` are fatal; anything else is tried again."""
    if code in _FENCING or code in _AUTH or code == E.INVALID_TRANSACTION_TIMEOUT:
        return Action.FATAL
    if code in _COORDINATOR:
        return Action.REFIND
    return Action.RETRY


def add_partitions_action(code: int) -> Action:
    """AddPartitionsToTxn (``rd_kafka_txn_handle_AddPartitionsToTxn``)."""
    if code in _COORDINATOR:
        return Action.REFIND
    if code in (E.CONCURRENT_TRANSACTIONS, E.COORDINATOR_LOAD_IN_PROGRESS, E.UNKNOWN_TOPIC_OR_PARTITION):
        return Action.RETRY
    if code in _FENCING or code in _AUTH or code == E.INVALID_TXN_STATE:
        return Action.FATAL
    if code in (E.UNKNOWN_PRODUCER_ID, E.INVALID_PRODUCER_ID_MAPPING):
        return Action.BUMP
    return Action.ABORTABLE  # TOPIC_AUTHORIZATION_FAILED, OPERATION_NOT_ATTEMPTED, anything else


def add_offsets_action(code: int) -> Action:
    """AddOffsetsToTxn (``rd_kafka_txn_handle_AddOffsetsToTxn``)."""
    if code in _COORDINATOR or code == E.REQUEST_TIMED_OUT:
        return Action.REFIND
    if code in (E.UNKNOWN_TOPIC_OR_PARTITION, E.COORDINATOR_LOAD_IN_PROGRESS, E.CONCURRENT_TRANSACTIONS):
        return Action.RETRY
    if code in _AUTH or code in _FENCING or code in (E.INVALID_TXN_STATE, E.UNSUPPORTED_FOR_MESSAGE_FORMAT):
        return Action.FATAL
    return Action.ABORTABLE


def txn_offset_commit_action(code: int) -> Action:
    """TxnOffsetCommit, answered by the *group* coordinator (``rd_kafka_txn_handle_TxnOffsetCommit``).

    A consumer that is no longer the group's member it claimed to be (KIP-447:
    ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID) makes the
    transaction abortable, not the producer fatal.
    """
    if code in _COORDINATOR or code == E.REQUEST_TIMED_OUT:
        return Action.REFIND
    if code in (E.CONCURRENT_TRANSACTIONS, E.COORDINATOR_LOAD_IN_PROGRESS, E.UNKNOWN_TOPIC_OR_PARTITION):
        return Action.RETRY
    if code in _AUTH or code in _FENCING or code in (
        E.INVALID_PRODUCER_ID_MAPPING, E.INVALID_TXN_STATE, E.UNSUPPORTED_FOR_MESSAGE_FORMAT,
    ):
        return Action.FATAL
    return Action.ABORTABLE


def end_txn_action(code: int) -> Action:
    """EndTxn (``rd_kafka_txn_handle_EndTxn``)."""
    if code in _COORDINATOR:
        return Action.REFIND
    if code in (E.COORDINATOR_LOAD_IN_PROGRESS, E.CONCURRENT_TRANSACTIONS):
        return Action.RETRY
    if code in (E.UNKNOWN_PRODUCER_ID, E.INVALID_PRODUCER_ID_MAPPING):
        return Action.BUMP
    if code in _FENCING or code in _AUTH or code == E.INVALID_TXN_STATE:
        return Action.FATAL
    return Action.ABORTABLE


class TransactionState:
    """The state machine and the current transaction's bookkeeping (loop thread only, except
    :meth:`produce_error`, which any thread may call).

    Attributes:
        state: the current :class:`TxnState`.
        error: the error behind ``AbortableError`` / ``FatalError`` (kept while aborting,
            so that a failing abort can report why the transaction failed).
        requires_bump: aborting must bump the producer epoch (KIP-360): batches of the
            failed transaction left holes in the sequence numbers.
        req_count: requests that may have put state on the coordinator for this
            transaction (AddPartitionsToTxn, AddOffsetsToTxn); with none, commit and
            abort need no EndTxn (the coordinator knows no transaction).
        dr_fails: records of this transaction reported failed; commit then refuses.
        pending, registering, added: partitions to register, in the outstanding
            AddPartitionsToTxn, and registered in the transaction.
    """

    def __init__(self) -> None:
        self.state = S.INIT
        self.error: KafkaError | None = None
        self.requires_bump = False
        self.req_count = 0
        self.dr_fails = 0
        self.pending: set[TopicPartitionTuple] = set()
        self.registering: set[TopicPartitionTuple] = set()
        self.added: set[TopicPartitionTuple] = set()

    # -- transitions ----------------------------------------------------------------------

    def set(self, new: TxnState) -> None:
        """Moves to ``new``.

        Raises:
            RuntimeError: a transition librdkafka's table does not allow (a bug here).
        """
        if new is self.state:
            return
        if new is not S.FATAL_ERROR and self.state not in _FROM.get(new, ()):
            raise RuntimeError(f"invalid transaction state transition {self.state.value} -> {new.value}")
        self.state = new

    def require(self, *states: TxnState) -> None:
        """Raises unless in one of ``states``: the fatal error in ``FatalError``, the
        abortable error (``txn_requires_abort``) in ``AbortableError``, else ``_STATE``.

        Raises:
            KafkaException: as above.
        """
        if self.state in states:
            return
        raise KafkaException(self.state_error())

    def state_error(self) -> KafkaError:
        err = self.error
        if self.state is S.FATAL_ERROR and err is not None:
            return KafkaError(err.code(), err.str(), fatal=True, retriable=False)
        if self.state is S.ABORTABLE_ERROR and err is not None:
            return KafkaError(err.code(), err.str(), retriable=False, txn_requires_abort=True)
        return KafkaError(KafkaError._STATE, f"Operation not valid in state {self.state.value}", retriable=False)

    def produce_error(self) -> KafkaError | None:
        """None if records may be produced now (only inside a transaction), else why not."""
        state = self.state
        if state is S.IN_TRANSACTION:
            return None
        if state is S.FATAL_ERROR and self.error is not None:
            return KafkaError(self.error.code(), "Producing not allowed since a previous fatal error was "
                              f"raised: {self.error.str()}", fatal=True, retriable=False)
        return KafkaError(KafkaError._STATE, f"Producing not allowed in transactional state {state.value}",
                          retriable=False)

    def set_fatal(self, code: int, reason: str) -> KafkaError:
        """Enters ``FatalError`` (from any state; the first fatal error is kept)."""
        if self.state is not S.FATAL_ERROR or self.error is None:
            self.error = KafkaError(normalize(code), reason, fatal=True, retriable=False)
            self.set(S.FATAL_ERROR)
        return self.state_error()

    def set_abortable(self, code: int, reason: str, bump: bool = False) -> bool:
        """Records an abortable error (``rd_kafka_txn_set_abortable_error0``).

        The first error of a transaction is kept; later ones, and any while an
        abort is already under way or after a fatal error, change nothing but
        ``requires_bump``.  Returns True if the state moved to ``AbortableError``.
        """
        if self.state is S.FATAL_ERROR:
            return False
        if bump:
            self.requires_bump = True
        if self.error is not None:
            return False
        self.error = KafkaError(normalize(code), reason, retriable=False, txn_requires_abort=True)
        if self.state in _IGNORE_ABORTABLE:
            return False
        if self.state not in _FROM[S.ABORTABLE_ERROR]:
            return False  # no transaction open (e.g. Ready): nothing to abort
        self.set(S.ABORTABLE_ERROR)
        return True

    def begin(self) -> None:
        """``begin_transaction()``: Ready -> InTransaction with a clean slate."""
        self.require(S.READY)
        self.set(S.IN_TRANSACTION)
        self.error = None
        self.dr_fails = 0
        self.req_count = 0

    def complete(self) -> None:
        """The transaction is over (committed or aborted) and the application told: Ready again."""
        self.pending.clear()
        self.registering.clear()
        self.added.clear()
        self.requires_bump = False
        self.req_count = 0
        self.error = None
        self.set(S.READY)

    # -- partitions -----------------------------------------------------------------------

    @property
    def sending(self) -> bool:
        """Whether the transaction's batches may be sent now."""
        return self.state in _SENDING

    def admitted(self, tp: TopicPartitionTuple) -> bool:
        """Whether a batch of ``tp`` may be sent now (registered, and the transaction sending)."""
        return tp in self.added and self.state in _SENDING

    def want(self, tps: Iterable[TopicPartitionTuple]) -> bool:
        """Marks partitions of the transaction for registration; True if any is new."""
        new = False
        for tp in tps:
            if tp not in self.added and tp not in self.registering and tp not in self.pending:
                self.pending.add(tp)
                new = True
        return new

    def take_pending(self) -> list[TopicPartitionTuple]:
        """The partitions for the next AddPartitionsToTxn (moved to ``registering``)."""
        out = sorted(self.pending)
        self.registering.update(out)
        self.pending.clear()
        return out

    def registered(self, tp: TopicPartitionTuple) -> None:
        if tp in self.registering:
            self.registering.discard(tp)
            self.added.add(tp)

    def registration_failed(self) -> None:
        """The partitions of the outstanding request go back to pending."""
        self.pending |= self.registering
        self.registering.clear()


class ApiGuard:
    """One transactional API call at a time (``rd_kafka_txn_curr_api_begin`` / ``_return``).

    Thread-safe: the synchronous face calls it from application threads.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.name: str | None = None  # the call in progress, or resumable after a timeout
        self.calling = False

    @contextmanager
    def call(self, name: str, resumable: bool = False) -> Iterator[None]:
        """Runs the body as API call ``name``.

        A resumable call that ends with a retriable error (its timeout) stays
        the current call, so that only calling it again can finish it.

        Raises:
            KafkaException: ``_CONFLICT`` (another call is current) or
                ``_PREV_IN_PROGRESS`` (the same call on another thread), both retriable.
        """
        with self._lock:
            if self.name is not None and self.name != name:
                raise KafkaException(KafkaError(KafkaError._CONFLICT,
                                                f"Conflicting {self.name} API call is already in progress",
                                                retriable=True))
            if self.calling:
                raise KafkaException(KafkaError(KafkaError._PREV_IN_PROGRESS,
                                                f"Simultaneous {name} API calls not allowed", retriable=True))
            self.name = name
            self.calling = True
        keep = False
        try:
            yield
        except KafkaException as exc:
            keep = resumable and exc.args[0].retriable()
            raise
        finally:
            with self._lock:
                self.calling = False
                if not keep:
                    self.name = None
