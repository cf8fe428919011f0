"""A partition replica on this broker: its log, its role, its ISR and high watermark.

Plain Python (Kafka's ``cluster/Partition.scala``): no network, no
ZooKeeper, time passed in as ``now_ms``.  The controller's LeaderAndIsr
makes it leader or follower.

As **leader** it appends producers' batches (assigning offsets,
de-duplicating idempotent producers), tracks each follower's log end offset
and last caught-up time from their fetches, and serves reads up to the high
watermark = the minimum log end offset over the leader and every follower
that is in the (maximal) ISR or caught up within ``replica.lag.time.max.ms``.
It never decreases.  It proposes ISR changes (shrink: a follower that has not
caught up within the lag; expand: a follower at or past both the HW and the
start of this leader epoch); the replica manager writes them to ZooKeeper
and reports back with :meth:`complete_isr_change`.  While a change is in
flight the HW is computed over the union of the old and the proposed ISR
(Kafka's "maximal ISR"), so neither direction can let it run ahead of a
replica that may count as in sync.

As **follower** it appends the leader's batches as they are and keeps
HW = min(leader HW, own log end offset).  A follower also serves consumers
that may read from any replica (KIP-392, Fetch v11+), up to its own HW.

**Transactions** (KIP-98, Kafka's ``Log`` side of them): the producer state
tracks open transactions; a COMMIT/ABORT marker — written by the leader for
the transaction coordinator (:meth:`Partition.append_txn_marker_as_leader`),
replicated to followers, or replayed at load — completes one, and an aborted
one is recorded in the ``.txnindex`` of the marker's segment.  The last
stable offset (LSO) is the first offset of the oldest transaction not yet
decided-and-replicated (never below the log start), or the HW when there is
none (or when it is higher).  READ_COMMITTED consumers read up to the LSO and
get the aborted transactions overlapping what they read.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from dataclasses import dataclass, replace

from mafka.coordination.znodes import LeaderIsrAndControllerEpoch
from mafka.delayed.replica import DelayedReplica
from mafka.errors import (
    ErrorCode,
    FencedLeaderEpochError,
    InvalidRecordError,
    KafkaError,
    NotEnoughReplicasError,
    NotLeaderOrFollowerError,
    OffsetNotAvailableError,
    UnknownLeaderEpochError,
)
from mafka.log.log import FetchDataInfo, Log, LogAppendInfo, TimestampAndOffset
from mafka.log.txn_index import AbortedTxn
from mafka.wire.batch import BatchHeader, iter_batches
from mafka.wire.errors import ProtocolError
from mafka.wire.records import ControlRecord, ControlRecordType, build_control_batch, decode_batch

from .producer_state import CompletedTxn, ProducerStateManager, list_snapshot_offsets

__all__ = ["Partition", "LeaderState", "ReadResult", "FollowerState", "FetchClock", "READ_UNCOMMITTED", "READ_COMMITTED"]

logger = logging.getLogger("mafka.broker.partition")

#: ListOffsets' special timestamps (``ListOffsetsRequest``).
LATEST_TIMESTAMP, EARLIEST_TIMESTAMP, MAX_TIMESTAMP = -1, -2, -3
#: Fetch / ListOffsets ``isolation_level`` (``IsolationLevel``).
READ_UNCOMMITTED, READ_COMMITTED = 0, 1


def _nothing() -> None:
    pass


@dataclass(frozen=True, slots=True)
class LeaderState:
    """What a LeaderAndIsr said about a partition (the ISR and zkVersion change with the leader's own ISR writes)."""

    leader: int
    leader_epoch: int
    isr: tuple[int, ...]
    replicas: tuple[int, ...]
    zk_version: int
    controller_epoch: int
    #: An ongoing reassignment (KIP-455): replicas being added and being removed.
    adding_replicas: tuple[int, ...] = ()
    removing_replicas: tuple[int, ...] = ()


class FetchClock:
    """When a follower's fetch session last read its partitions (one per session, shared by them).

    A follower's fetch of a partition at the log end that brings nothing
    changes nothing but two times in its :class:`FollowerState`.  Rather than
    rewrite those for every idle partition on every fetch, the session
    attaches the follower's state to its clock and moves the clock once per
    fetch (:mod:`mafka.broker.fetch_session`); the state reads the clock
    until its partition changes and is read again.
    """

    __slots__ = ("last_fetch_ms",)

    def __init__(self, last_fetch_ms: int = 0) -> None:
        self.last_fetch_ms = last_fetch_ms


class FollowerState:
    """The leader's view of one follower (Kafka's ``Replica``).

    While attached to a :class:`FetchClock` (its partition idle and caught up
    in the follower's fetch session), the follower counts as having fetched
    at the log end, and so as caught up, at the clock's time.  Attached only
    while the leader's log end does not move without the session reading the
    partition again (every change wakes the session, which reads it and so
    detaches the state first, with the clock still at the fetch before the
    change).
    """

    __slots__ = ("log_end_offset", "log_start_offset", "_last_caught_up_ms", "last_fetch_leader_leo", "_last_fetch_ms", "clock")

    def __init__(
        self, log_end_offset: int = -1, log_start_offset: int = -1, last_caught_up_ms: int = 0,
        last_fetch_leader_leo: int = -1, last_fetch_ms: int = 0,
    ) -> None:
        self.log_end_offset = log_end_offset
        #: As its last fetch said (−1: unknown); KIP-392 only sends consumers to replicas holding their offset.
        self.log_start_offset = log_start_offset
        self._last_caught_up_ms = last_caught_up_ms
        self.last_fetch_leader_leo = last_fetch_leader_leo
        self._last_fetch_ms = last_fetch_ms
        self.clock: FetchClock | None = None

    @property
    def last_caught_up_ms(self) -> int:
        clock = self.clock
        return self._last_caught_up_ms if clock is None else max(self._last_caught_up_ms, clock.last_fetch_ms)

    @last_caught_up_ms.setter
    def last_caught_up_ms(self, value: int) -> None:
        self.detach()
        self._last_caught_up_ms = value

    @property
    def last_fetch_ms(self) -> int:
        clock = self.clock
        return self._last_fetch_ms if clock is None else max(self._last_fetch_ms, clock.last_fetch_ms)

    @last_fetch_ms.setter
    def last_fetch_ms(self, value: int) -> None:
        self.detach()
        self._last_fetch_ms = value

    def attach(self, clock: FetchClock) -> None:
        """Caught up at the log end: from now on each fetch of the session counts (see the class docstring)."""
        self.detach()
        self.clock = clock

    def detach(self, clock: FetchClock | None = None) -> None:
        """Takes the clock's time into the state and stops following it (only *clock*'s, if given)."""
        current = self.clock
        if current is None or (clock is not None and current is not clock):
            return
        self.clock = None
        self._last_caught_up_ms = max(self._last_caught_up_ms, current.last_fetch_ms)
        self._last_fetch_ms = max(self._last_fetch_ms, current.last_fetch_ms)

    def __repr__(self) -> str:
        return (
            f"FollowerState(log_end_offset={self.log_end_offset}, log_start_offset={self.log_start_offset}, "
            f"last_caught_up_ms={self.last_caught_up_ms}, last_fetch_leader_leo={self.last_fetch_leader_leo}, "
            f"last_fetch_ms={self.last_fetch_ms})"
        )


@dataclass(frozen=True, slots=True)
class ReadResult:
    """A read's data and the offsets a Fetch response reports.

    ``aborted_transactions`` is None unless a consumer read READ_COMMITTED;
    then it lists ``(producer_id, first_offset)`` of every aborted
    transaction overlapping the data (empty when there is no data).
    """

    data: FetchDataInfo
    high_watermark: int
    log_start_offset: int
    log_end_offset: int
    last_stable_offset: int = -1
    aborted_transactions: list[tuple[int, int]] | None = None


class Partition:
    """One topic-partition replica hosted here.

    Args:
        topic, index: the partition.
        broker_id: this broker.
        log: its log (opened by the log manager).
        high_watermark: the checkpointed HW (clamped to the log).
        replica_lag_time_max_ms: ``replica.lag.time.max.ms``.
    """

    def __init__(
        self, topic: str, index: int, broker_id: int, log: Log, *, high_watermark: int = 0, replica_lag_time_max_ms: int = 30000
    ) -> None:
        self.topic = topic
        self.index = index
        self.broker_id = broker_id
        self.log = log
        self.replica_lag_time_max_ms = replica_lag_time_max_ms
        self.state: LeaderState | None = None
        self.high_watermark = max(log.log_start_offset, min(high_watermark, log.next_offset))
        self.followers: dict[int, FollowerState] = {}
        self.pending_isr: tuple[int, ...] | None = None
        self.leader_epoch_start_offset = -1
        self.producers = ProducerStateManager(f"{topic}-{index}")
        self._load_producer_state()
        #: the delayed messages held in this log (None until its first envelope: see mafka.delayed)
        self.delays: DelayedReplica | None = DelayedReplica.open_if_present(log)
        #: called on the reactor when an append creates this replica's delay index (its first
        #: envelope): the replica manager sets it, and the broker's delayed delivery starts ticking
        self.on_first_delay: Callable[[], None] = _nothing
        #: bytes appended to this replica and bytes read from it by fetches (the monitor's rates)
        self.bytes_in = 0
        self.bytes_out = 0
        #: as a follower: the leader's HW at the last fetch minus this log's end (Kafka's fetcher lag)
        self.follower_lag = 0

    # ------------------------------------------------------------------ idempotent producers

    def _load_producer_state(self) -> None:
        """Latest snapshot, then the batches and markers appended after it (Kafka's rebuild).

        Transaction indexes the log marked stale (segments recovered after an
        unclean shutdown or from a ``.swap`` file, or failing their sanity
        check) are rebuilt here, as Kafka's ``LogSegment.recover`` does with a
        producer state manager: the snapshot is taken at or below the first
        stale segment (Kafka's ``recoverSegment`` loads one at or below the
        segment's base), every transaction index from that segment on is
        emptied, and the replay appends each ABORT marker's entry from there
        on, with the LSO the replayed state gives.  Replaying from below is
        what makes the entries exact: a transaction may begin in an earlier
        segment than its marker.
        """
        log = self.log
        producers = self.producers
        rebuild_from = log.txn_index_rebuild_offset
        loaded = producers.load_latest_snapshot(log.directory, log.next_offset, at_most=rebuild_from)
        start = log.log_start_offset if loaded is None else loaded
        if rebuild_from is not None:
            start = min(start, rebuild_from)
            log.reset_txn_indexes_from(rebuild_from)
        for seg, bp, h in log.headers_from(start):
            if h.producer_id < 0:
                continue
            if not _is_txn_marker(h):
                producers.record_append(
                    h.producer_id, h.producer_epoch, h.base_sequence, h.last_sequence,
                    bp.base_offset, bp.last_offset, h.max_timestamp, is_transactional=h.is_transactional,
                )
                continue
            try:
                marker = _end_txn_marker(os.pread(seg.fd, bp.size, bp.position))
            except ProtocolError as exc:
                logger.warning("%s-%d: skipping an unreadable control batch at offset %d: %s",
                               self.topic, self.index, bp.base_offset, exc)
                continue
            if marker is None:
                continue
            is_abort, coordinator_epoch, timestamp = marker
            completed = producers.record_end_txn_marker(
                h.producer_id, h.producer_epoch, coordinator_epoch, bp.base_offset, timestamp, is_abort=is_abort
            )
            if completed is not None:
                # LogSegment.recover completes each marker's transaction at once.
                self._complete_txns([completed], index=rebuild_from is not None and bp.base_offset >= rebuild_from)
        producers.on_high_watermark_updated(self.high_watermark)

    def _complete_txns(self, completed: list[CompletedTxn], *, index: bool = True) -> None:
        """Kafka's ``Log.append`` tail: each aborted transaction into the ``.txnindex``, then completed.

        The LSO recorded with an aborted transaction is computed before it is
        completed (``lastStableOffset(completedTxn)``).  Without *index* (a
        replay below the stale segments) the entries already exist.
        """
        producers = self.producers
        for txn in completed:
            if index and txn.is_aborted:
                self.log.append_aborted_txn(
                    AbortedTxn(txn.producer_id, txn.first_offset, txn.last_offset, producers.last_stable_offset(txn))
                )
            producers.complete_txn(txn)

    def replace_log(self, new: Log) -> None:
        """The log moved to another dir (AlterReplicaLogDirs): serve ``new``, and reopen the delay index
        that moved with it (brought up to the log's end: appends may have landed after it was copied)."""
        self.log = new
        if self.delays is not None:
            self.delays.index.close()
            self.delays = DelayedReplica.open_if_present(new)

    def snapshot_producer_state(self) -> bool:
        """Writes the producer-state snapshot at the log end (at shutdown, as Kafka); whether it wrote one.

        Nothing is written when a load would come to the same state without it
        (Kafka's ``takeSnapshot`` skips an offset it has snapshotted): the newest
        snapshot is already at the log end, or the log is empty with no producer
        and no snapshot at all.  A broker with thousands of idle partitions
        otherwise fsyncs thousands of files on its way down.
        """
        end = self.log.next_offset
        offsets = list_snapshot_offsets(self.log.directory)
        if offsets and offsets[-1] == end:
            return False
        if not offsets and not len(self.producers) and end == self.log.log_start_offset:
            return False
        self.producers.write_snapshot(self.log.directory, end)
        return True

    @property
    def tp(self) -> tuple[str, int]:
        return self.topic, self.index

    @property
    def is_leader(self) -> bool:
        return self.state is not None and self.state.leader == self.broker_id

    @property
    def leader_epoch(self) -> int:
        return self.state.leader_epoch if self.state else -1

    @property
    def isr(self) -> tuple[int, ...]:
        """The ISR as committed in ZooKeeper (what ``min.insync.replicas`` is checked against)."""
        return self.state.isr if self.state else ()

    @property
    def maximal_isr(self) -> frozenset[int]:
        """The committed ISR plus a proposed one in flight (what the HW is computed over)."""
        return frozenset(self.isr) | frozenset(self.pending_isr or ())

    # ------------------------------------------------------------------ role changes

    @property
    def is_reassigning(self) -> bool:
        """Whether a reassignment of this partition is under way (as the last LeaderAndIsr said)."""
        return self.state is not None and bool(self.state.adding_replicas or self.state.removing_replicas)

    def is_adding_replica(self, replica_id: int) -> bool:
        return self.state is not None and replica_id in self.state.adding_replicas

    @property
    def is_under_replicated(self) -> bool:
        """Leader with an ISR smaller than the target replica set (Kafka's ``isUnderReplicated``).

        During a reassignment the target is the replicas minus those still
        being added: a replica that is only catching up does not make the
        partition under-replicated.
        """
        state = self.state
        if state is None or not self.is_leader:
            return False
        return len(state.replicas) - len(state.adding_replicas) - len(self.isr) > 0

    def make_leader(self, state: LeaderState, now_ms: int = 0) -> bool:
        """Becomes (or stays) leader at a new epoch; returns whether it was a follower before.

        The epoch starts at the log end offset (KIP-101).  Every follower's
        caught-up time restarts (now for ISR members); their log end offsets
        are forgotten only when leadership is new here, as in Kafka.
        """
        was_leader = self.is_leader
        self.state = state
        self.pending_isr = None
        log = self.log
        latest = log.epoch_cache.latest_epoch
        if latest is None or state.leader_epoch > latest:
            log.epoch_cache.assign(state.leader_epoch, log.next_offset)
        self.leader_epoch_start_offset = log.next_offset
        old = self.followers if was_leader else {}
        self.followers = {}
        for r in state.replicas:
            if r == self.broker_id:
                continue
            fs = old.get(r) or FollowerState()
            # Kafka's resetLastCaughtUpTime: the previous fetch is taken to be at
            # the start of this epoch, now.
            fs.last_caught_up_ms = now_ms if r in state.isr else 0
            fs.last_fetch_leader_leo = log.next_offset
            fs.last_fetch_ms = now_ms
            self.followers[r] = fs
        self.high_watermark = max(min(self.high_watermark, log.next_offset), log.log_start_offset)
        self._maybe_advance_hw(now_ms)
        return not was_leader

    def make_follower(self, state: LeaderState) -> None:
        self.state = state
        self.followers = {}
        self.pending_isr = None
        self.leader_epoch_start_offset = -1

    def check_leader_epoch(self, current_leader_epoch: int) -> None:
        """KIP-320: −1 skips; older → FENCED_LEADER_EPOCH; newer → UNKNOWN_LEADER_EPOCH."""
        if current_leader_epoch < 0:
            return
        if current_leader_epoch < self.leader_epoch:
            raise FencedLeaderEpochError(f"{self.topic}-{self.index}: epoch {current_leader_epoch} < {self.leader_epoch}")
        if current_leader_epoch > self.leader_epoch:
            raise UnknownLeaderEpochError(f"{self.topic}-{self.index}: epoch {current_leader_epoch} > {self.leader_epoch}")

    def _require_leader(self) -> LeaderState:
        if not self.is_leader:
            raise NotLeaderOrFollowerError(f"broker {self.broker_id} does not lead {self.topic}-{self.index}")
        assert self.state is not None
        return self.state

    # ------------------------------------------------------------------ leader operations

    def append_as_leader(
        self, records: bytes | memoryview, header: BatchHeader | None = None, *, required_acks: int = 1, min_isr: int = 1,
        now_ms: int = 0, origin: str = "client",
    ) -> LogAppendInfo:
        """Appends a producer's (validated) batch with this leader's epoch; advances the HW if it may.

        With ``required_acks == -1`` and fewer than *min_isr* replicas in the
        ISR nothing is written: NOT_ENOUGH_REPLICAS.  An idempotent
        producer's batch is checked against its sequence state first: a retry
        of one of its last five batches is answered with the original offsets
        and not written again; a gap raises OUT_OF_ORDER_SEQUENCE_NUMBER, a
        stale epoch INVALID_PRODUCER_EPOCH.
        """
        state = self._require_leader()
        if required_acks == -1 and len(state.isr) < min_isr:
            raise NotEnoughReplicasError(
                f"{self.topic}-{self.index}: the ISR {list(state.isr)} is smaller than min.insync.replicas={min_isr}"
            )
        if header is None:
            header = next(iter_batches(memoryview(records)))[1]
        if header.producer_id >= 0:
            verdict = self.producers.check_and_prepare(
                header.producer_id, header.producer_epoch, header.base_sequence, header.last_sequence, header.is_transactional,
                check_sequence=origin == "client",
            )
            if verdict.error != ErrorCode.NONE:
                raise KafkaError.for_code(verdict.error)(verdict.message or verdict.error.description)
            if verdict.duplicate is not None:
                dup = verdict.duplicate
                return LogAppendInfo(dup.first_offset, dup.last_offset, dup.max_timestamp, dup.last_offset, -1, 0, 0, 0, self.log.log_start_offset)
        info = self.log.append_as_leader(records, state.leader_epoch)
        self.bytes_in += info.valid_bytes
        if header.producer_id >= 0:
            self.producers.record_append(
                header.producer_id, header.producer_epoch, header.base_sequence, header.last_sequence,
                info.first_offset, info.last_offset, info.max_timestamp, is_transactional=header.is_transactional,
            )
        if header.is_control and not header.is_transactional:
            if self.delays is None:
                self.delays = DelayedReplica(self.log.directory)
                self.on_first_delay()
            self.delays.note(records, 0, header, info.first_offset)
        elif self.delays is not None:
            self.delays.note(records, 0, header, info.first_offset)
        self._maybe_advance_hw(now_ms)
        return info

    def append_txn_marker_as_leader(
        self, producer_id: int, producer_epoch: int, coordinator_epoch: int, commit: bool, *, min_isr: int = 1,
        now_ms: int = 0,
    ) -> LogAppendInfo:
        """Writes a transaction coordinator's COMMIT (*commit*) or ABORT marker for *producer_id*.

        Kafka's WriteTxnMarkers append (origin Coordinator, acks −1): one
        control batch (magic 2, transactional + control attributes, the
        producer's id and epoch, base sequence −1) holding one record
        timestamped *now_ms* whose key is (version 0, COMMIT/ABORT) and value
        (version 0, *coordinator_epoch*).  The producer's open transaction, if
        any, is completed; an aborted one goes into the ``.txnindex``.  A
        marker with no open transaction is still written.

        Raises:
            NotLeaderOrFollowerError: not the leader.
            NotEnoughReplicasError: fewer than *min_isr* replicas in the ISR (nothing written).
            InvalidProducerEpochError: *producer_epoch* is older than the producer's.
            TransactionCoordinatorFencedError: *coordinator_epoch* is older than
                the one of the producer's last marker.
        """
        state = self._require_leader()
        if len(state.isr) < min_isr:
            raise NotEnoughReplicasError(
                f"{self.topic}-{self.index}: the ISR {list(state.isr)} is smaller than min.insync.replicas={min_isr}"
            )
        verdict = self.producers.check_end_txn_marker(producer_id, producer_epoch, coordinator_epoch)
        if verdict.error != ErrorCode.NONE:
            raise KafkaError.for_code(verdict.error)(verdict.message or verdict.error.description)
        records = build_control_batch(
            ControlRecordType.COMMIT if commit else ControlRecordType.ABORT,
            producer_id=producer_id,
            producer_epoch=producer_epoch,
            coordinator_epoch=coordinator_epoch,
            timestamp=now_ms,
            partition_leader_epoch=state.leader_epoch,
        )
        info = self.log.append_as_leader(records, state.leader_epoch)
        completed = self.producers.record_end_txn_marker(
            producer_id, producer_epoch, coordinator_epoch, info.first_offset, info.max_timestamp, is_abort=not commit
        )
        if completed is not None:
            self._complete_txns([completed])
        self._maybe_advance_hw(now_ms)
        return info

    @property
    def last_stable_offset(self) -> int:
        """The LSO: the first unstable offset (at least the log start) if below the HW, else the HW.

        Kafka's ``Log.lastStableOffset`` over ``firstUnstableOffset`` (the
        oldest open transaction, or completed one whose marker the HW has not
        passed).
        """
        hw = self.high_watermark
        producers = self.producers
        producers.on_high_watermark_updated(hw)
        first = producers.first_unstable_offset
        if first is None:
            return hw
        first = max(first, self.log.log_start_offset)
        return first if first < hw else hw

    def replication_status(self, required_offset: int, min_isr: int) -> ErrorCode | None:
        """For an acks=all append ending before *required_offset*: None while waiting, else the answer.

        Once the HW covers it: NOT_ENOUGH_REPLICAS_AFTER_APPEND if the ISR
        shrank below *min_isr* meanwhile, else NONE; NOT_LEADER_OR_FOLLOWER if
        leadership moved (Kafka's ``checkEnoughReplicasReachOffset``).
        """
        if not self.is_leader:
            return ErrorCode.NOT_LEADER_OR_FOLLOWER
        if self.high_watermark < required_offset:
            return None
        return ErrorCode.NONE if len(self.isr) >= min_isr else ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND

    def update_follower(self, replica_id: int, fetch_offset: int, now_ms: int = 0, log_start_offset: int = -1) -> bool:
        """Records a follower's fetch position and log start (Kafka's ``updateFetchState``); returns whether the HW moved.

        Caught-up time: now if it fetched at the log end; else the time of
        its previous fetch if it has reached the log end as of then.
        """
        fs = self.followers.get(replica_id)
        if fs is None or not self.is_leader:
            return False
        fs.detach()
        leo = self.log.next_offset
        if fetch_offset >= leo:
            fs.last_caught_up_ms = max(fs.last_caught_up_ms, now_ms)
        elif fetch_offset >= fs.last_fetch_leader_leo >= 0:
            fs.last_caught_up_ms = max(fs.last_caught_up_ms, fs.last_fetch_ms)
        fs.log_end_offset = fetch_offset
        fs.log_start_offset = log_start_offset
        fs.last_fetch_leader_leo = leo
        fs.last_fetch_ms = now_ms
        return self._maybe_advance_hw(now_ms)

    def _maybe_advance_hw(self, now_ms: int = 0) -> bool:
        if not self.is_leader:
            return False
        leo = self.log.next_offset
        candidate = leo
        isr, pending = self.isr, self.pending_isr or ()  # the maximal ISR, without building a set per fetch
        for r, fs in self.followers.items():
            if fs.log_end_offset < candidate and (
                r in isr or r in pending or now_ms - fs.last_caught_up_ms <= self.replica_lag_time_max_ms
            ):
                candidate = fs.log_end_offset
        if candidate > self.high_watermark:
            self.high_watermark = candidate
            return True
        return False

    # ------------------------------------------------------------------ ISR changes (leader)

    def isr_to_expand(self, replica_id: int) -> tuple[int, ...] | None:
        """The ISR with *replica_id* added, if it may rejoin now (KAFKA-7128); else None.

        It must be an assigned follower outside the ISR whose log end offset
        is at or past both the HW and the start of this leader epoch, and no
        other ISR change may be in flight.
        """
        if not self.is_leader or self.pending_isr is not None:
            return None
        fs = self.followers.get(replica_id)
        if fs is None or replica_id in self.isr:
            return None
        if fs.log_end_offset >= self.high_watermark and fs.log_end_offset >= self.leader_epoch_start_offset:
            return (*self.isr, replica_id)
        return None

    def isr_to_shrink(self, now_ms: int) -> tuple[int, ...] | None:
        """The ISR without followers that have not caught up within the lag; None if nobody lags.

        Out of sync (Kafka's ``isFollowerOutOfSync``): its log end offset is
        not the leader's and it last caught up more than
        ``replica.lag.time.max.ms`` ago.
        """
        if not self.is_leader or self.pending_isr is not None:
            return None
        leo = self.log.next_offset
        out = [
            r for r in self.isr
            if r != self.broker_id
            and (fs := self.followers.get(r)) is not None
            and fs.log_end_offset != leo
            and now_ms - fs.last_caught_up_ms > self.replica_lag_time_max_ms
        ]
        if not out:
            return None
        return tuple(r for r in self.isr if r not in out)

    def begin_isr_change(self, new_isr: tuple[int, ...]) -> tuple[LeaderIsrAndControllerEpoch, int]:
        """Marks *new_isr* in flight; returns the state znode to write and the expected zkVersion.

        Leaders keep the leader epoch and the controller epoch of their last
        LeaderAndIsr (Kafka 2.6 ``shrinkIsr``/``expandIsr``).
        """
        state = self._require_leader()
        self.pending_isr = tuple(new_isr)
        return LeaderIsrAndControllerEpoch(self.broker_id, state.leader_epoch, tuple(new_isr), state.controller_epoch), state.zk_version

    def complete_isr_change(self, new_isr: tuple[int, ...], leader_epoch: int, zk_version: int | None, now_ms: int = 0) -> bool:
        """The ZooKeeper write of *new_isr* finished: *zk_version* on success, None on conflict.

        A conflict keeps the old ISR until the controller's next LeaderAndIsr.
        A result for an older epoch (a LeaderAndIsr arrived meanwhile) is
        ignored.  Returns whether the ISR changed.
        """
        if self.state is None or self.state.leader_epoch != leader_epoch or self.pending_isr != tuple(new_isr):
            return False
        self.pending_isr = None
        if zk_version is None:
            return False
        self.state = replace(self.state, isr=tuple(new_isr), zk_version=zk_version)
        self._maybe_advance_hw(now_ms)
        return True

    # ------------------------------------------------------------------ reads

    def read(
        self, offset: int, max_bytes: int, *, replica_id: int = -1, current_leader_epoch: int = -1, min_one_batch: bool = True,
        fetch_only_from_leader: bool = True, isolation_level: int = READ_UNCOMMITTED,
    ) -> ReadResult:
        """Reads for a consumer (up to the HW, or the LSO with READ_COMMITTED) or a follower (up to the LEO).

        Without *fetch_only_from_leader* (a consumer's Fetch v11+, KIP-392) a
        follower reads too, up to its own HW (Kafka's ``Partition.readRecords``):
        an offset between its HW and its log end reads nothing, one past its
        log end is out of range.  A READ_COMMITTED consumer's result lists the
        aborted transactions overlapping the data (Kafka's ``FetchTxnCommitted``);
        *isolation_level* means nothing for followers.

        Raises:
            NotLeaderOrFollowerError, FencedLeaderEpochError, UnknownLeaderEpochError,
            OffsetOutOfRangeError.
        """
        if fetch_only_from_leader:
            self._require_leader()
        self.check_leader_epoch(current_leader_epoch)
        hw, lso = self.high_watermark, self.last_stable_offset
        committed = replica_id < 0 and isolation_level == READ_COMMITTED
        upper = None if replica_id >= 0 else lso if committed else hw
        data = self.log.read(offset, max_bytes, upper, min_one_batch=min_one_batch, include_aborted_txns=committed,
                             defer_cold=True)
        aborted = None if data.aborted_transactions is None else [t.as_aborted_transaction for t in data.aborted_transactions]
        return ReadResult(data, hw, self.log.log_start_offset, self.log.next_offset, lso, aborted)

    def offset_snapshot(self, offset: int, current_leader_epoch: int = -1) -> ReadResult:
        """This replica's offsets and no records (Kafka's ``fetchOffsetSnapshot`` with any role).

        What a leader answers a consumer it sends to another replica (KIP-392).

        Raises:
            FencedLeaderEpochError, UnknownLeaderEpochError.
        """
        self.check_leader_epoch(current_leader_epoch)
        return ReadResult(
            FetchDataInfo(offset, None), self.high_watermark, self.log.log_start_offset, self.log.next_offset,
            self.last_stable_offset,
        )

    def fetch_offset_for_timestamp(
        self, timestamp: int, *, client: bool = True, current_leader_epoch: int = -1,
        isolation_level: int = READ_UNCOMMITTED,
    ) -> TimestampAndOffset | None:
        """ListOffsets at the leader (Kafka's ``Partition.fetchOffsetForTimestamp``); None when no record matches.

        Args:
            timestamp: −1 the latest offset, −2 the earliest, −3 the record
                with the largest timestamp (KIP-734), else the first record
                whose timestamp is at or after it.
            client: a consumer's request (replica id −1): answers stop at the
                high watermark (the last stable offset with READ_COMMITTED)
                and may be OFFSET_NOT_AVAILABLE; others stop at the log end
                offset.
            current_leader_epoch: the requester's view of the leader epoch (−1: unchecked).
            isolation_level: a consumer's (ListOffsets v2+); READ_COMMITTED
                makes the last stable offset the latest offset and the bound.

        The answer's leader epoch is this leader's epoch for the latest
        offset, the earliest cached epoch for the earliest (if it covers the
        log start), else that of the record's batch.

        Raises:
            FencedLeaderEpochError, UnknownLeaderEpochError: checked first, as Kafka.
            NotLeaderOrFollowerError: this replica is not the leader.
            OffsetNotAvailableError: a client asked for the latest offset, or
                nothing it may read matched, while the HW still lags behind the
                start of this leader epoch (right after an election).
        """
        self.check_leader_epoch(current_leader_epoch)
        self._require_leader()
        log = self.log
        if not client:
            last_fetchable = log.next_offset
        elif isolation_level == READ_COMMITTED:
            last_fetchable = self.last_stable_offset
        else:
            last_fetchable = self.high_watermark
        lagging = client and self.leader_epoch_start_offset > self.high_watermark

        def not_available() -> OffsetNotAvailableError:
            return OffsetNotAvailableError(
                f"{self.topic}-{self.index}: high watermark {self.high_watermark} lags behind the start "
                f"{self.leader_epoch_start_offset} of leader epoch {self.leader_epoch}"
            )

        if timestamp == LATEST_TIMESTAMP:
            if lagging:
                raise not_available()
            return TimestampAndOffset(-1, last_fetchable, self.leader_epoch)
        if timestamp == EARLIEST_TIMESTAMP:
            entry = log.epoch_cache.earliest_entry
            epoch = entry.epoch if entry is not None and entry.start_offset <= log.log_start_offset else -1
            return TimestampAndOffset(-1, log.log_start_offset, epoch)
        if timestamp == MAX_TIMESTAMP:
            found = log.max_timestamp_and_offset()
            if found is not None and found.offset >= last_fetchable:
                found = None
        else:
            found = log.offset_for_timestamp(timestamp, max_offset=last_fetchable)
        if found is None and lagging:
            raise not_available()
        return found

    def bytes_available(
        self, offset: int, replica_id: int = -1, *, fetch_only_from_leader: bool = True, isolation_level: int = READ_UNCOMMITTED
    ) -> int:
        """Readable bytes at *offset* (0 when none, 1 on any error): the long-poll test.

        A follower has none unless not *fetch_only_from_leader* (see :meth:`read`);
        a READ_COMMITTED consumer has none at or above the LSO.
        """
        try:
            if replica_id >= 0:
                upper = self.log.next_offset
            elif isolation_level == READ_COMMITTED:
                upper = self.last_stable_offset
            else:
                upper = self.high_watermark
            if offset >= upper or (fetch_only_from_leader and not self.is_leader):
                return 0
            return self.log.read(offset, 1 << 30, upper, min_one_batch=True).size
        except KafkaError:
            return 1  # an error is worth answering at once

    # ------------------------------------------------------------------ follower operations

    def append_as_follower(self, records: bytes | memoryview) -> LogAppendInfo | None:
        """Appends the leader's whole batches as they are; producers' and transactions' state follows them.

        A Fetch response may end with a partial batch (cut at the size
        limit): it is left out, and fetched again next time.  Returns None
        when no whole batch arrived.  Transaction markers complete their
        transactions as on the leader, unvalidated (Kafka's origin
        Replication); as in Kafka's ``Log.append``, every batch updates the
        producer state before the completed transactions are indexed.

        Raises:
            UnexpectedAppendOffsetError, InvalidRecordError, MessageTooLargeError (from the log);
            InvalidRecordError also for an unreadable transaction marker (nothing is written).
        """
        view = memoryview(records)
        batches = list(iter_batches(view))
        if not batches:
            return None
        markers = {}
        for pos, h in batches:
            if _is_txn_marker(h) and h.producer_id >= 0:
                try:
                    markers[pos] = _end_txn_marker(view[pos : pos + h.size])
                except ProtocolError as exc:
                    raise InvalidRecordError(f"{self.topic}-{self.index}: {exc}") from None
        end = batches[-1][0] + batches[-1][1].size
        info = self.log.append_as_follower(view[:end] if end < len(view) else view)
        self.bytes_in += end
        producers = self.producers
        completed = []
        delays = self.delays
        for pos, h in batches:
            if h.is_control and not h.is_transactional and delays is None:
                delays = self.delays = DelayedReplica(self.log.directory)
                self.on_first_delay()
            if delays is not None:
                delays.note(view, pos, h, h.base_offset)
            if h.producer_id < 0:
                continue
            if not _is_txn_marker(h):
                producers.record_append(
                    h.producer_id, h.producer_epoch, h.base_sequence, h.last_sequence,
                    h.base_offset, h.last_offset, h.max_timestamp, is_transactional=h.is_transactional,
                )
            elif (marker := markers[pos]) is not None:
                is_abort, coordinator_epoch, timestamp = marker
                txn = producers.record_end_txn_marker(
                    h.producer_id, h.producer_epoch, coordinator_epoch, h.base_offset, timestamp, is_abort=is_abort
                )
                if txn is not None:
                    completed.append(txn)
        if completed:
            self._complete_txns(completed)
        return info

    def update_follower_high_watermark(self, leader_high_watermark: int, leader_log_start_offset: int = -1) -> None:
        """A follower's HW = min(leader HW, own log end offset); it adopts a higher leader log start offset."""
        log = self.log
        if leader_log_start_offset > log.log_start_offset:
            log.increment_log_start_offset(min(leader_log_start_offset, log.next_offset))
            self.producers.truncate_head(log.log_start_offset)
        self.high_watermark = max(log.log_start_offset, min(leader_high_watermark, log.next_offset))

    def truncated(self) -> None:
        """The log was truncated (by the log manager, off the reactor): clamp the HW, drop producer state above it.

        The log truncated the transaction indexes; the producer state drops
        transactions begun above the new end and reopens those whose marker
        was cut off (see :meth:`ProducerStateManager.truncate_to`).  Producer
        snapshots above the new end are deleted (Kafka's ``truncateAndReload``):
        kept, a restart after the log grew past them again would load them.
        """
        log = self.log
        self.producers.truncate_to(log.next_offset)
        try:
            self.producers.delete_snapshots_after(log.directory, log.next_offset)
        except OSError as exc:
            logger.warning("%s-%d: could not delete producer snapshots above %d: %s", self.topic, self.index, log.next_offset, exc)
        self.high_watermark = max(log.log_start_offset, min(self.high_watermark, log.next_offset))
        if self.delays is not None:
            self.delays.index.truncate(log.next_offset)


def _is_txn_marker(h: BatchHeader) -> bool:
    """A COMMIT/ABORT marker's batch: control and transactional (a delayed message's envelope is control only)."""
    return h.is_control and h.is_transactional


def _end_txn_marker(batch: bytes | memoryview) -> tuple[bool, int, int] | None:
    """``(is_abort, coordinator_epoch, timestamp)`` of a control batch's end-transaction marker.

    None for an empty control batch (Kafka: its transaction was cleaned away)
    or a control record that is not COMMIT/ABORT (nothing to complete).

    Raises:
        ProtocolError: an unreadable batch or marker (Kafka's ``EndTransactionMarker.deserialize``).
    """
    records = decode_batch(batch, verify_crc=False).records
    if not records:
        return None
    record = records[0]
    if not isinstance(record, ControlRecord) or record.type not in (ControlRecordType.ABORT, ControlRecordType.COMMIT):
        return None
    return record.is_abort, record.coordinator_epoch, record.timestamp
