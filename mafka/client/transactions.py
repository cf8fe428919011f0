"""The transactional producer's coordinator conversation (KIP-98, KIP-447), on the kernel's loop.

:class:`TransactionManager` belongs to a :class:`~mafka.client.sender.ProducerEngine`
whose config has a ``transactional.id``.  As in Kafka's Java client, the
manager owns the producer id and epoch and the sender asks it, never the
reverse: the sender reads :attr:`~TransactionManager.producer_id` /
:attr:`~TransactionManager.producer_epoch` when it numbers batches, asks
:meth:`~TransactionManager.admitted` before sending a partition's batches and
:meth:`~TransactionManager.take_purge_request` whether the queued records
must fail, and tells the manager what became of its batches
(:meth:`~TransactionManager.batch_failed`, :meth:`~TransactionManager.records_failed`)
and when none of the transaction's records is left
(:meth:`~TransactionManager.records_settled`).  The manager knows nothing of the
sender but a ``wakeup`` callable, called when there is something new to ask
about.  It talks to the transaction coordinator (found with FindCoordinator,
key type 1) on its own ``"txn"`` channel, so its requests never queue behind
produce requests:

* ``init_transactions``: InitProducerId(transactional id, ``transaction.timeout.ms``)
  gets the producer id and epoch — the coordinator fences any older producer
  with the same transactional id and aborts its open transaction;
* while a transaction is open the sender asks :meth:`TransactionManager.want_partitions`
  for every partition it has records for; they are registered with
  AddPartitionsToTxn (one request outstanding, the rest batched into the next)
  and only registered partitions' batches are sent (:meth:`TransactionManager.admitted`);
* ``send_offsets_to_transaction``: AddOffsetsToTxn at the transaction
  coordinator, then TxnOffsetCommit (v3: with the consumer's generation,
  member id and instance id) at the group's coordinator;
* commit: the face flushes every batch first, then EndTxn(commit); abort:
  queued batches are failed with ``_PURGE_QUEUE`` (by the sender, once
  asked), batches in flight are waited for, then EndTxn(abort) — and, when
  the failed transaction left holes in the sequence numbers, InitProducerId
  with the current id and epoch bumps the epoch (KIP-360) so the next
  transaction starts at sequence 0.

The application's calls are the coroutines ``init_transactions``,
``begin_transaction``, ``send_offsets_to_transaction``, ``begin_commit`` +
``commit_transaction`` and ``begin_abort`` + ``abort_transaction`` (the
face flushes in between).  InitProducerId and EndTxn run as background
tasks: when the application's timeout expires first the call raises a
retriable ``_TIMED_OUT`` and calling it again picks the same work up, as
librdkafka does.  What each answer means lives in :mod:`mafka.client.txn_state`.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Iterable
from typing import Any

from mafka.client.group_metadata import ConsumerGroupMetadata
from mafka.client.kafka_error import KafkaError, KafkaException
from mafka.client.kernel import Kernel
from mafka.client.transport import UnsupportedByBroker
from mafka.client.txn_state import (
    Action,
    ApiGuard,
    TransactionState,
    TxnState,
    add_offsets_action,
    add_partitions_action,
    describe,
    end_txn_action,
    init_pid_action,
    normalize,
    txn_error,
    txn_offset_commit_action,
)
from mafka.errors import ErrorCode
from mafka.errors import KafkaError as BrokerError
from mafka.topics import TopicPartitionTuple

__all__ = ["TransactionManager"]

log = logging.getLogger("mafka.client.producer")

INIT_PRODUCER_ID = 22
ADD_PARTITIONS_TO_TXN = 24
ADD_OFFSETS_TO_TXN = 25
END_TXN = 26
TXN_OFFSET_COMMIT = 28

S = TxnState

#: AddPartitionsToTxn answered CONCURRENT_TRANSACTIONS (the previous transaction's markers are
#: still being written): ask again soon, as librdkafka and Java do, not after retry.backoff.ms.
CONCURRENT_RETRY_BACKOFF = 0.02


def _timed_out(what: str) -> KafkaException:
    return KafkaException(KafkaError(KafkaError._TIMED_OUT, what, retriable=True))


class TransactionManager:
    """Transactions for one producer.  Create and use on the kernel's loop.

    Args:
        kernel: connections and metadata.
        wakeup: called (on the loop) when the sender has something new to ask: a producer id
            or epoch, partitions registered, a transaction begun or ending, queued records to
            fail, EndTxn waiting for the transaction's records.
    """

    def __init__(self, kernel: Kernel, wakeup: Callable[[], None] | None = None) -> None:
        cfg = kernel.config
        self.kernel = kernel
        self._wakeup: Callable[[], None] = wakeup if wakeup is not None else _nothing
        #: The producer id and epoch (InitProducerId), -1 until the first answer; the sender
        #: numbers the transaction's batches under them.
        self.producer_id = -1
        self.producer_epoch = -1
        self.transactional_id: str = cfg["transactional.id"]
        self.timeout_ms: int = cfg["transaction.timeout.ms"]
        self.backoff = cfg["retry.backoff.ms"] / 1000.0
        self.state = TransactionState()
        self.api = ApiGuard()
        self.coordinator = -1
        #: The last error InitProducerId met (told to an init_transactions() that times out).
        self.init_error = 0
        self._background: asyncio.Task[KafkaError | None] | None = None
        self._adding: asyncio.Task[None] | None = None
        self._purge_requested = False
        #: Set by the sender once none of the transaction's records is queued or in flight
        #: (:meth:`records_settled`); exists only while EndTxn waits for that.
        self._settle: asyncio.Event | None = None

    # -- what the sender asks and tells (loop thread; admitted and check_produce: any thread) ----

    def check_produce(self) -> None:
        """Raises unless records may be produced now (inside a transaction).

        Raises:
            KafkaException: ``_STATE`` outside a transaction, the fatal error after one.
        """
        error = self.state.produce_error()
        if error is not None:
            raise KafkaException(error)

    def admitted(self, tp: TopicPartitionTuple) -> bool:
        return self.state.admitted(tp)

    @property
    def sending(self) -> bool:
        return self.state.sending

    def want_partitions(self, tps: Iterable[TopicPartitionTuple]) -> None:
        """Registers ``tps`` with the transaction (AddPartitionsToTxn) unless they are already."""
        if not self.state.sending:
            return
        if self.state.want(tps) and (self._adding is None or self._adding.done()):
            self._adding = self.kernel.spawn(self._add_partitions())

    def batch_failed(self, code: int, reason: str, sent: bool) -> None:
        """A batch of the transaction was given up: the transaction must be aborted.

        Fencing is fatal.  A batch that was sent took sequence numbers the broker
        never wrote: the epoch must be bumped when aborting (KIP-360).
        """
        if code in (ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.PRODUCER_FENCED):
            self.fatal(code, f"{reason}: transactional producer fenced by newer producer instance")
            return
        self.abortable(code, f"{reason}: current transaction must be aborted", bump=sent)

    def records_failed(self, count: int) -> None:
        self.state.dr_fails += count

    def take_purge_request(self) -> bool:
        """True once after the queued records were doomed (a fatal or abortable error, or an abort
        began): the sender then fails them with ``_PURGE_QUEUE``."""
        requested, self._purge_requested = self._purge_requested, False
        return requested

    @property
    def settling(self) -> bool:
        """Whether EndTxn waits for the sender to have none of the transaction's records left."""
        return self._settle is not None and not self._settle.is_set()

    def records_settled(self) -> None:
        """The sender has no record queued or in flight: EndTxn may go."""
        if self._settle is not None:
            self._settle.set()

    def _request_purge(self) -> None:
        self._purge_requested = True
        self._wakeup()

    def fatal(self, code: int, reason: str) -> KafkaError:
        """Enters ``FatalError``; queued records are to be failed (``_PURGE_QUEUE``)."""
        first = self.state.state is not S.FATAL_ERROR
        error = self.state.set_fatal(code, reason)
        if first:
            log.error("fatal transaction error: %s (%s)", reason, error.name())
            self._request_purge()
        return error

    def abortable(self, code: int, reason: str, bump: bool = False) -> KafkaError:
        """Records an abortable error; queued records are to be failed (``_PURGE_QUEUE``)."""
        if self.state.set_abortable(code, reason, bump):
            log.warning("current transaction failed: %s (%s)", reason, KafkaError(normalize(code)).name())
            self._request_purge()
        return txn_error(code, reason, Action.BUMP if bump else Action.ABORTABLE)

    # -- the application's calls ----------------------------------------------------------------

    async def init_transactions(self, timeout: float | None) -> None:
        """Gets the producer id (fencing older instances); resumable after a timeout.

        Raises:
            KafkaException: retriable ``_TIMED_OUT`` (or the last InitProducerId error) when
                ``timeout`` expires first; the fatal error (e.g. ``_FENCED``); ``_STATE``
                when already initialized.
        """
        st = self.state
        st.require(S.INIT, S.WAIT_PID, S.READY_NOT_ACKED)
        if timeout is None or timeout < 0:
            # No coordinator yet to time the call out: cap "forever" (librdkafka's 2 x timeout).
            timeout = 2 * self.timeout_ms / 1000.0
        if st.state is S.INIT:
            st.set(S.WAIT_PID)
            self.init_error = 0
            self._background = self.kernel.spawn(self._init_pid())
        if st.state is S.WAIT_PID:
            try:
                await self._wait_background(timeout)
            except KafkaException:
                code = normalize(self.init_error)
                if code and code != KafkaError._TIMED_OUT:
                    raise KafkaException(KafkaError(code, f"Failed to initialize Producer ID: {describe(code)}",
                                                    retriable=True)) from None
                raise
        st.require(S.READY_NOT_ACKED)
        st.set(S.READY)

    async def begin_transaction(self) -> None:
        """Ready -> InTransaction.

        Raises:
            KafkaException: ``_STATE`` unless Ready (or the fatal/abortable error).
        """
        self.state.begin()
        self._wakeup()

    async def send_offsets_to_transaction(self, offsets: dict[TopicPartitionTuple, tuple[int, int, str | None]],
                                          group: ConsumerGroupMetadata, timeout: float | None) -> None:
        """Adds the consumer's offsets (tp -> (offset, leader epoch, metadata)) to the transaction.

        Offsets below 0 are left out; with none left nothing is sent.  The
        timeout is capped by ``transaction.timeout.ms``.

        Raises:
            KafkaException: ``_STATE`` outside a transaction; the fatal or abortable
                error; retriable errors if ``timeout`` expired while retrying
                AddOffsetsToTxn, an abortable ``_TIMED_OUT`` if it expired while
                retrying TxnOffsetCommit.
        """
        st = self.state
        st.require(S.IN_TRANSACTION)
        valid = {tp: v for tp, v in offsets.items() if v[0] >= 0}
        if not valid:
            return
        cap = self.timeout_ms / 1000.0
        deadline = time.monotonic() + (cap if timeout is None or timeout < 0 else min(timeout, cap))
        await self._add_offsets(group.group_id, deadline)
        await self._txn_offset_commit(valid, group, deadline)

    async def begin_commit(self) -> None:
        """InTransaction -> BeginCommit: no more records; the face flushes the queued ones next."""
        st = self.state
        st.require(S.IN_TRANSACTION, S.BEGIN_COMMIT, S.COMMITTING_TRANSACTION, S.COMMIT_NOT_ACKED)
        if st.state is S.IN_TRANSACTION:
            st.set(S.BEGIN_COMMIT)
        self._wakeup()

    async def commit_transaction(self, timeout: float | None) -> None:
        """EndTxn(commit) once every record is delivered (the face flushed); resumable.

        Raises:
            KafkaException: ``_INCONSISTENT`` (``txn_requires_abort``) if records of the
                transaction failed delivery; the abortable or fatal error EndTxn met;
                retriable ``_TIMED_OUT``.
        """
        st = self.state
        st.require(S.BEGIN_COMMIT, S.COMMITTING_TRANSACTION, S.COMMIT_NOT_ACKED)
        if st.state is S.BEGIN_COMMIT:
            if st.dr_fails:
                raise KafkaException(self.abortable(
                    KafkaError._INCONSISTENT,
                    f"{st.dr_fails} message(s) failed delivery (see individual delivery reports)"))
            if st.req_count == 0:
                # Nothing was produced or sent: the coordinator knows no transaction to end.
                st.set(S.COMMIT_NOT_ACKED)
            else:
                st.set(S.COMMITTING_TRANSACTION)
                self._background = self.kernel.spawn(self._commit())
        if st.state is S.COMMITTING_TRANSACTION or self._background_pending():
            error = await self._wait_background(timeout)
            if error is not None:
                raise KafkaException(error)
        st.require(S.COMMIT_NOT_ACKED)
        st.complete()

    async def begin_abort(self) -> None:
        """-> BeginAbort: queued records are to be failed (``_PURGE_QUEUE``, by the sender's next
        pass); the face then waits for them and for those in flight."""
        st = self.state
        st.require(S.IN_TRANSACTION, S.BEGIN_ABORT, S.ABORTING_TRANSACTION, S.ABORTABLE_ERROR,
                   S.ABORT_NOT_ACKED)
        if st.state in (S.IN_TRANSACTION, S.ABORTABLE_ERROR):
            st.set(S.BEGIN_ABORT)
            st.pending.clear()
        self._request_purge()

    async def abort_transaction(self, timeout: float | None) -> None:
        """EndTxn(abort), and an epoch bump if needed; resumable.

        Raises:
            KafkaException: the fatal error; an abortable error (abort again);
                retriable ``_TIMED_OUT``.
        """
        st = self.state
        st.require(S.BEGIN_ABORT, S.ABORTING_TRANSACTION, S.ABORT_NOT_ACKED)
        if st.state is S.BEGIN_ABORT:
            st.set(S.ABORTING_TRANSACTION)
            self._background = self.kernel.spawn(self._abort())
        if st.state is S.ABORTING_TRANSACTION or self._background_pending():
            error = await self._wait_background(timeout)
            if error is not None:
                raise KafkaException(error)
        st.require(S.ABORT_NOT_ACKED)
        st.complete()

    def _background_pending(self) -> bool:
        return self._background is not None and not self._background.done()

    async def _wait_background(self, timeout: float | None) -> KafkaError | None:
        """The background task's outcome, or a retriable ``_TIMED_OUT`` (the task goes on)."""
        task = self._background
        if task is None:
            return None
        if timeout is not None and timeout < 0:
            timeout = None
        done, _ = await asyncio.wait({task}, timeout=timeout)
        if not done:
            raise _timed_out("Timed out waiting for operation to finish, retry call to resume")
        self._background = None
        return task.result()

    # -- coordinators ------------------------------------------------------------------------

    async def _coordinator(self) -> int:
        """The transaction coordinator's node id, looked up until found."""
        while self.coordinator < 0:
            try:
                self.coordinator = await self.kernel.find_coordinator(self.transactional_id, key_type=1)
                log.debug("transaction coordinator for %s: %d", self.transactional_id, self.coordinator)
            except (BrokerError, ConnectionError, TimeoutError) as exc:
                log.debug("find transaction coordinator for %s: %r", self.transactional_id, exc)
                await asyncio.sleep(self.backoff)
        return self.coordinator

    def _coordinator_lost(self) -> None:
        if self.coordinator >= 0:
            self.kernel.disconnect(self.coordinator, "txn")
        self.coordinator = -1

    async def _send(self, api_key: int, body: dict[str, Any], timeout: float | None = None) -> Any:
        """One request to the transaction coordinator.

        Raises:
            ConnectionError / TimeoutError: the coordinator is forgotten; the caller retries.
        """
        node = await self._coordinator()
        try:
            return await self.kernel.send(node, api_key, body, channel="txn", timeout=timeout)
        except (ConnectionError, TimeoutError):
            self._coordinator_lost()
            raise

    # -- InitProducerId ------------------------------------------------------------------------

    async def _init_pid(self) -> KafkaError | None:
        """Background: InitProducerId until it is answered; WaitPID -> ReadyNotAcked (or fatal)."""
        error = await self._request_pid(bump=False)
        if error is None:
            self.state.set(S.READY_NOT_ACKED)
        return error

    async def _request_pid(self, bump: bool) -> KafkaError | None:
        """InitProducerId, retried until answered; with ``bump`` carrying the current id and
        epoch (v3+, KIP-360) so the coordinator bumps the epoch instead of fencing us."""
        while True:
            body = {
                "transactional_id": self.transactional_id,
                "transaction_timeout_ms": self.timeout_ms,
                "producer_id": self.producer_id if bump else -1,
                "producer_epoch": self.producer_epoch if bump else -1,
            }
            try:
                response = await self._send(INIT_PRODUCER_ID, body)
            except UnsupportedByBroker as exc:
                return self.fatal(KafkaError._UNSUPPORTED_FEATURE, str(exc))
            except (ConnectionError, TimeoutError) as exc:
                log.debug("InitProducerId: %s", exc)
                self.init_error = KafkaError._TRANSPORT
                await asyncio.sleep(self.backoff)
                continue
            code = response.error_code
            if code == ErrorCode.NONE:
                log.info("transactional producer %s: producer id %d epoch %d", self.transactional_id,
                         response.producer_id, response.producer_epoch)
                # A new id or epoch: the sender restarts every partition's numbering at 0.
                self.producer_id, self.producer_epoch = response.producer_id, response.producer_epoch
                self._wakeup()
                return None
            action = init_pid_action(code)
            reason = f"Failed to acquire transactional PID from broker {self.coordinator}: {describe(code)}"
            if action is Action.FATAL:
                if code in (ErrorCode.INVALID_PRODUCER_EPOCH, ErrorCode.PRODUCER_FENCED):
                    reason = "Producer fenced by newer instance: " + reason
                return self.fatal(code, reason)
            if action is Action.REFIND:
                self._coordinator_lost()
            log.debug("%s: retrying", reason)
            self.init_error = code
            await asyncio.sleep(self.backoff)

    # -- AddPartitionsToTxn --------------------------------------------------------------------

    async def _add_partitions(self) -> None:
        """Registers pending partitions, one request at a time, until none are pending."""
        st = self.state
        delay = 0.0
        while st.pending and st.sending:
            if delay:
                await asyncio.sleep(delay)
                delay = 0.0
                if not st.sending:
                    break
            parts = st.take_pending()
            topics: dict[str, list[int]] = {}
            for topic, partition in parts:
                topics.setdefault(topic, []).append(partition)
            body = {
                "v3_and_below_transactional_id": self.transactional_id,
                "v3_and_below_producer_id": self.producer_id,
                "v3_and_below_producer_epoch": self.producer_epoch,
                "v3_and_below_topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
            }
            # Counted before sending: once sent, the coordinator may hold the transaction even
            # if the answer is lost, and then aborting must send EndTxn.
            st.req_count += 1
            try:
                response = await self._send(ADD_PARTITIONS_TO_TXN, body)
            except UnsupportedByBroker as exc:
                self.fatal(KafkaError._UNSUPPORTED_FEATURE, str(exc))
                return
            except (ConnectionError, TimeoutError) as exc:
                log.debug("AddPartitionsToTxn: %s", exc)
                st.registration_failed()
                delay = self.backoff
                continue
            code, failed = _first_error(response)
            if not st.sending:
                # Answered after the abort began: outdated, but a refusal still means the
                # coordinator holds nothing of it (an EndTxn for nothing is INVALID_TXN_STATE).
                if code != ErrorCode.NONE:
                    st.req_count -= 1
                return
            if code == ErrorCode.NONE:
                for tp in parts:
                    st.registered(tp)
                st.registration_failed()  # partitions the answer left out are asked for again
                log.debug("partitions %s registered with the transaction", parts)
                self._wakeup()
                continue
            st.req_count -= 1  # refused: nothing was added
            st.registration_failed()
            action = add_partitions_action(code)
            reason = f"Failed to add partition(s) {failed} to transaction: {describe(code)}"
            if action is Action.FATAL:
                self.fatal(code, reason)
                return
            if action in (Action.ABORTABLE, Action.BUMP):
                self.abortable(code, reason, bump=action is Action.BUMP)
                return
            if action is Action.REFIND:
                self._coordinator_lost()
            log.debug("%s: retrying", reason)
            delay = CONCURRENT_RETRY_BACKOFF if code == ErrorCode.CONCURRENT_TRANSACTIONS else self.backoff

    async def _settled(self) -> None:
        """Waits until EndTxn may be sent: no AddPartitionsToTxn outstanding (its answer must not
        cross EndTxn) and no batch of the transaction in flight (the markers must come after
        every write of it, as Java's sender ensures).  The faces flush before; this holds
        when the application calls abort again after a timed-out flush."""
        if self._adding is not None and not self._adding.done():
            await asyncio.wait({self._adding})
        self._settle = asyncio.Event()
        try:
            self._wakeup()  # the sender answers with records_settled() once it has none left
            await self._settle.wait()
        finally:
            self._settle = None

    # -- send_offsets_to_transaction -----------------------------------------------------------

    async def _add_offsets(self, group_id: str, deadline: float) -> None:
        st = self.state
        body = {
            "transactional_id": self.transactional_id,
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "group_id": group_id,
        }
        while True:
            left = deadline - time.monotonic()
            st.req_count += 1
            try:
                async with asyncio.timeout(max(left, 0.001)):
                    response = await self._send(ADD_OFFSETS_TO_TXN, body)
            except UnsupportedByBroker as exc:
                st.req_count -= 1
                raise KafkaException(self.fatal(KafkaError._UNSUPPORTED_FEATURE, str(exc))) from None
            except (ConnectionError, TimeoutError) as exc:
                # Maybe received: counted, so that an abort sends EndTxn.
                if time.monotonic() >= deadline:
                    raise KafkaException(KafkaError(
                        KafkaError._TIMED_OUT, f"Failed to add offsets to transaction: {exc!r}",
                        retriable=True)) from None
                await asyncio.sleep(self.backoff)
                continue
            code = response.error_code
            if code == ErrorCode.NONE:
                return
            st.req_count -= 1
            action = add_offsets_action(code)
            reason = f"Failed to add offsets to transaction on broker {self.coordinator}: {describe(code)}"
            if action is Action.FATAL:
                raise KafkaException(self.fatal(code, reason))
            if action in (Action.ABORTABLE, Action.BUMP):
                raise KafkaException(self.abortable(code, reason))
            if action is Action.REFIND:
                self._coordinator_lost()
            if time.monotonic() >= deadline:
                raise KafkaException(txn_error(code, reason, Action.RETRY))
            await asyncio.sleep(self.backoff)

    async def _txn_offset_commit(self, offsets: dict[TopicPartitionTuple, tuple[int, int, str | None]],
                                 group: ConsumerGroupMetadata, deadline: float) -> None:
        topics: dict[str, list[dict[str, Any]]] = {}
        for (topic, partition), (offset, leader_epoch, metadata) in sorted(offsets.items()):
            topics.setdefault(topic, []).append({
                "partition_index": partition, "committed_offset": offset,
                "committed_leader_epoch": leader_epoch, "committed_metadata": metadata,
            })
        body = {
            "transactional_id": self.transactional_id,
            "group_id": group.group_id,
            "producer_id": self.producer_id,
            "producer_epoch": self.producer_epoch,
            "generation_id": group.generation_id,
            "member_id": group.member_id,
            "group_instance_id": group.group_instance_id,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
        }
        node = -1
        last = KafkaError._TIMED_OUT
        while time.monotonic() < deadline:
            try:
                async with asyncio.timeout(max(deadline - time.monotonic(), 0.001)):
                    if node < 0:
                        node = await self.kernel.find_coordinator(group.group_id, key_type=0)
                    response = await self.kernel.send(node, TXN_OFFSET_COMMIT, body, channel="txn")
            except UnsupportedByBroker as exc:
                raise KafkaException(self.fatal(KafkaError._UNSUPPORTED_FEATURE, str(exc))) from None
            except (BrokerError, ConnectionError, TimeoutError) as exc:
                log.debug("TxnOffsetCommit for group %s: %r", group.group_id, exc)
                node = -1
                await asyncio.sleep(self.backoff)
                continue
            code, failed = _first_error(response, partition_field="error_code")
            if code == ErrorCode.NONE:
                return
            action = txn_offset_commit_action(code)
            reason = (f"Failed to commit offsets to transaction on broker {node}: {failed}: "
                      f"{describe(code)}")
            if action is Action.FATAL:
                raise KafkaException(self.fatal(code, reason))
            if action in (Action.ABORTABLE, Action.BUMP):
                raise KafkaException(self.abortable(code, reason))
            if action is Action.REFIND:
                node = -1
            last = code
            await asyncio.sleep(self.backoff)
        raise KafkaException(self.abortable(last, f"Failed to commit offsets to transaction: {describe(last)} "
                                                  "(timed out)"))

    # -- EndTxn ------------------------------------------------------------------------------

    async def _end_txn(self, committed: bool) -> tuple[int, Action | None]:
        """EndTxn, retried while the answer says so; returns (error code, action) — (0, None) done."""
        while True:
            body = {
                "transactional_id": self.transactional_id,
                "producer_id": self.producer_id,
                "producer_epoch": self.producer_epoch,
                "committed": committed,
            }
            try:
                response = await self._send(END_TXN, body)
            except UnsupportedByBroker:
                return KafkaError._UNSUPPORTED_FEATURE, Action.FATAL
            except (ConnectionError, TimeoutError) as exc:
                log.debug("EndTxn: %s", exc)
                await asyncio.sleep(self.backoff)
                continue
            code = response.error_code
            if code == ErrorCode.NONE:
                return 0, None
            action = end_txn_action(code)
            if action in (Action.RETRY, Action.REFIND):
                if action is Action.REFIND:
                    self._coordinator_lost()
                log.debug("EndTxn: %s: retrying", ErrorCode(code).name)
                await asyncio.sleep(self.backoff)
                continue
            return code, action

    async def _commit(self) -> KafkaError | None:
        """Background: EndTxn(commit); CommittingTransaction -> CommitNotAcked (or an error)."""
        await self._settled()
        code, action = await self._end_txn(committed=True)
        if action is None:
            self.state.set(S.COMMIT_NOT_ACKED)
            return None
        reason = f"EndTxn commit failed: {describe(code)}"
        if action is Action.FATAL:
            return self.fatal(code, reason)
        return self.abortable(code, reason, bump=action is Action.BUMP)

    async def _abort(self) -> KafkaError | None:
        """Background: EndTxn(abort) and, if needed, the epoch bump; -> AbortedNotAcked (or an error)."""
        st = self.state
        await self._settled()
        if st.req_count:
            code, action = await self._end_txn(committed=False)
            if action is Action.FATAL:
                return self.fatal(code, f"Failed to end transaction: {describe(code)}")
            if action is Action.BUMP:
                st.requires_bump = True  # the coordinator lost our id: the bump sorts it out
            elif action is not None:
                # Abort again from the start: back to BeginAbort, the error kept for the report.
                reason = f"EndTxn abort failed: {describe(code)}"
                st.set(S.BEGIN_ABORT)
                st.set_abortable(code, reason)
                return txn_error(code, reason, Action.ABORTABLE)
        if st.requires_bump:
            error = await self._request_pid(bump=True)
            if error is not None:
                return error
        st.set(S.ABORT_NOT_ACKED)
        return None


def _nothing() -> None:
    pass


def _first_error(response: Any, partition_field: str = "partition_error_code") -> tuple[int, list[TopicPartitionTuple]]:
    """The first partition error of an AddPartitionsToTxn / TxnOffsetCommit answer (0 if none),
    with the partitions that had it."""
    if partition_field == "error_code":
        per_topic = [(t.name, [(p.partition_index, p.error_code) for p in t.partitions]) for t in response.topics]
    else:
        per_topic = [(t.name, [(p.partition_index, p.partition_error_code) for p in t.results_by_partition])
                     for t in response.results_by_topic_v3_and_below]
    first = 0
    failed: list[TopicPartitionTuple] = []
    for topic, results in per_topic:
        for partition, code in results:
            if code == ErrorCode.NONE:
                continue
            # OPERATION_NOT_ATTEMPTED only says another partition failed: report that one.
            if not first or (first == ErrorCode.OPERATION_NOT_ATTEMPTED and code != first):
                first = code
            failed.append((topic, partition))
    return first, failed
