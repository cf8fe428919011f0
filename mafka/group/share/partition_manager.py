"""The share-partitions a broker leads: Kafka 4.2's ``SharePartitionManager`` and ``SharePartition`` lifecycle.

Plain Python: no reactor, no log.  Time is the injected ``clock`` (ms), delays
go through the injected :class:`~mafka.timers.Timers`, durable state through
the injected :class:`StatePersister` (the broker adapts its
:class:`~mafka.broker.share_persister.SharePersister`), and the log is the
caller's: it reads the records and hands over what it read.

One :class:`SharePartition` per (group id, topic id, partition) — Kafka's
``SharePartitionKey`` — created on first use by :meth:`SharePartitionManager.load`.

Lifecycle
---------
* **loading** — ReadShareGroupState with the topic-partition's leader epoch (which
  fences every older leader's writes at the share coordinator).  A state whose
  start offset is -1 (initialized by the group coordinator, never used) starts at
  ``share.auto.offset.reset`` (:class:`ShareGroupSettings`: ``latest`` — the
  high watermark — by default, or ``earliest`` — the log start offset), and that
  start offset is written at once, so a failover right after does not move it.
  Otherwise the state is rebuilt from the durable batches
  (:meth:`SharePartitionState.restore <mafka.group.share.partition_state.SharePartitionState.restore>`:
  every record that was acquired comes back AVAILABLE, nothing acknowledged is lost).
* **active** — fetches, acknowledgements, lock expiry, members leaving.
* **gone** — a failed read or write, or leadership moved (:meth:`SharePartitionManager.leadership_changed`):
  the partition is forgotten (its waiters answered with the error) and the next
  use loads it again from the share coordinator.  A write that fails therefore
  never leaves memory ahead of the durable state.

A load with a different leader epoch than the partition was loaded at drops it
and loads again.  Errors of the share coordinator are answered as Kafka's
``SharePartition.fetchPersisterError`` maps them: NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS → COORDINATOR_NOT_AVAILABLE;
FENCED_LEADER_EPOCH, FENCED_STATE_EPOCH → NOT_LEADER_OR_FOLLOWER; GROUP_ID_NOT_FOUND
and UNKNOWN_TOPIC_OR_PARTITION as they are; anything else UNKNOWN_SERVER_ERROR.

Fetching
--------
One fetch at a time per share-partition (Kafka's fetch lock):
:meth:`~SharePartitionManager.begin_fetch` takes the lock and says where to read
(the first AVAILABLE offset, else the share-partition end offset; None when the
partition is busy, not loaded, or its window is full —
``group.share.partition.max.record.locks``);
:meth:`~SharePartitionManager.end_fetch` acquires records of what was read for the
member, under a lock of ``group.share.record.lock.duration.ms``, and frees the
fetch lock; :meth:`~SharePartitionManager.abort_fetch` frees it without acquiring.

**Write before answer.**  Every change is written to the share coordinator, one
WriteShareGroupState at a time per share-partition (changes made while one is in
flight go in the next).  An acknowledgement is answered only once the write that
holds it succeeded; so is an acquisition (its delivery count is durable before the
record is delivered, so ``group.share.delivery.count.limit`` holds across leader
failovers, which Kafka does not promise).  Lock expiries and members leaving are
written without anyone waiting.

Acknowledging
-------------
:meth:`~SharePartitionManager.acknowledge` applies one partition's batches of one
request, all or nothing, as Kafka 4.2's ``SharePartition.acknowledge``: malformed
batches (:func:`~mafka.group.share.acknowledgements.validate_batches`) are
INVALID_REQUEST; a batch naming any record the member does not hold (never
acquired, another member's, finished, or its lock expired) is
INVALID_RECORD_STATE and nothing of the partition's batches is applied; an empty
list is NONE; no share-partition here is UNKNOWN_TOPIC_OR_PARTITION; one still
loading LEADER_NOT_AVAILABLE.

Events
------
``on_available(key)`` is called when a fetch may now find something it could not
before: records became AVAILABLE (a RELEASE, a lock expired, a member left), the
window gained room, the partition finished loading, or it was dropped (a waiting
fetch then sees the error).  ``on_unlocked(key)`` when a fetch lock was freed (a
fetch that skipped the busy partition may try it).  Both are how the broker's
waiting share fetches are woken.
"""

from __future__ import annotations

import bisect
import enum
import functools
import logging
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Protocol

from mafka.errors import ErrorCode, KafkaError
from mafka.group.share.acknowledgements import PartitionAcknowledgement, validate_batches
from mafka.group.share.partition_state import (
    AUTO_OFFSET_RESET_EARLIEST,
    AUTO_OFFSET_RESET_LATEST,
    DEFAULT_DELIVERY_COUNT_LIMIT,
    DEFAULT_MAX_RECORD_LOCKS,
    DEFAULT_RECORD_LOCK_DURATION_MS,
    AcknowledgementBatch,
    AcknowledgeType,
    AcquiredRecords,
    FetchedBatch,
    RecordState,
    SharePartitionConfig,
    SharePartitionState,
)
from mafka.group.share.state_records import SharePartitionKey
from mafka.share.state_types import (
    UNINITIALIZED_START_OFFSET,
    PartitionResult,
    ReadResult,
    WriteData,
)
from mafka.timers import TimerHandle, Timers

__all__ = [
    "READ_COMMITTED",
    "READ_UNCOMMITTED",
    "Done",
    "PartitionStatus",
    "ShareGroupSettings",
    "SharePartition",
    "SharePartitionManager",
    "StatePersister",
    "persister_error",
]

log = logging.getLogger("mafka.group.share.partition_manager")

#: ``share.isolation.level`` values, as Fetch's isolation_level ids
READ_UNCOMMITTED, READ_COMMITTED = 0, 1

#: ``done(error, message)``: an operation's outcome (NONE once its changes are durable)
Done = Callable[[ErrorCode, "str | None"], None]


@dataclass(frozen=True)
class ShareGroupSettings:
    """What one share group's share-partitions obey.

    The broker fills it from ``group.share.record.lock.duration.ms``,
    ``group.share.delivery.count.limit`` and ``group.share.partition.max.record.locks``;
    ``auto_offset_reset`` is the group config ``share.auto.offset.reset`` (``latest`` or
    ``earliest``; Kafka's default latest) and ``isolation_level`` the group config
    ``share.isolation.level`` (0 read_uncommitted, Kafka's default, or 1 read_committed).
    Settings are read when a share-partition loads, and again when the group's
    configs change (:meth:`SharePartitionManager.update_settings`).
    """

    record_lock_duration_ms: int = DEFAULT_RECORD_LOCK_DURATION_MS
    delivery_count_limit: int = DEFAULT_DELIVERY_COUNT_LIMIT
    max_record_locks: int = DEFAULT_MAX_RECORD_LOCKS
    auto_offset_reset: str = AUTO_OFFSET_RESET_LATEST
    isolation_level: int = READ_UNCOMMITTED

    def __post_init__(self) -> None:
        if self.auto_offset_reset.strip().lower() not in (AUTO_OFFSET_RESET_EARLIEST, AUTO_OFFSET_RESET_LATEST):
            raise ValueError(f"Invalid value {self.auto_offset_reset!r} for configuration share.auto.offset.reset")
        if self.isolation_level not in (READ_UNCOMMITTED, READ_COMMITTED):
            raise ValueError(f"Invalid value {self.isolation_level!r} for configuration share.isolation.level")

    def partition_config(self) -> SharePartitionConfig:
        return SharePartitionConfig(
            record_lock_duration_ms=self.record_lock_duration_ms,
            delivery_count_limit=self.delivery_count_limit,
            max_record_locks=self.max_record_locks,
        )


class StatePersister(Protocol):
    """The share coordinator, as a share-partition leader reaches it (Kafka's ``Persister``, one
    share-partition per call).  Each call answers ``done`` exactly once, possibly at once."""

    def read(self, key: SharePartitionKey, leader_epoch: int, done: Callable[[ReadResult], None]) -> None: ...

    def write(self, key: SharePartitionKey, data: WriteData, done: Callable[[PartitionResult], None]) -> None: ...


class PartitionStatus(enum.Enum):
    LOADING = "loading"
    ACTIVE = "active"


def persister_error(error: int) -> ErrorCode:
    """Kafka's ``SharePartition.fetchPersisterError``: what a share coordinator error becomes for clients."""
    if error in (ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS):
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if error in (ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.FENCED_STATE_EPOCH):
        return ErrorCode.NOT_LEADER_OR_FOLLOWER
    if error in (ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
        return ErrorCode(error)
    return ErrorCode.UNKNOWN_SERVER_ERROR


class SharePartition:
    """One share-partition on its leader (see the module docstring).  ``state`` is None while loading."""

    __slots__ = (
        "fetch_locked", "gone", "key", "leader_epoch", "load_waiters", "next_waiters", "settings", "state",
        "status", "timer", "timer_at", "writing",
    )

    def __init__(self, key: SharePartitionKey, leader_epoch: int, settings: ShareGroupSettings) -> None:
        self.key = key
        self.leader_epoch = leader_epoch
        self.settings = settings
        self.status = PartitionStatus.LOADING
        self.state: SharePartitionState | None = None
        self.load_waiters: list[Done] = []
        self.fetch_locked = False
        #: a WriteShareGroupState is in flight
        self.writing = False
        #: answered by the next write (their changes are pending in ``state``)
        self.next_waiters: list[Done] = []
        self.timer: TimerHandle | None = None
        self.timer_at: int | None = None
        self.gone = False

    def __repr__(self) -> str:
        return f"SharePartition({self.key}, epoch={self.leader_epoch}, {self.status.value})"


class SharePartitionManager:
    """The share-partitions led here (see the module docstring).

    Args:
        persister: the share coordinator.
        timers: lock expiry timers.
        clock: now in milliseconds.
        settings: group id → its :class:`ShareGroupSettings` (read at each load).
    """

    def __init__(
        self,
        persister: StatePersister,
        timers: Timers,
        clock: Callable[[], int],
        settings: Callable[[str], ShareGroupSettings] | None = None,
    ) -> None:
        self._persister = persister
        self._timers = timers
        self._clock = clock
        self._settings = settings or (lambda _group_id: ShareGroupSettings())
        self._partitions: dict[SharePartitionKey, SharePartition] = {}
        #: (topic id, partition) → its share-partitions here, one per group
        self._by_tp: dict[tuple[bytes, int], set[SharePartitionKey]] = {}
        #: see the module docstring ("Events")
        self.on_available: Callable[[SharePartitionKey], None] = _ignore
        self.on_unlocked: Callable[[SharePartitionKey], None] = _ignore
        #: the broker's share metrics, counted since start-up (kept when a share-partition is
        #: dropped, so they never go back): records delivered again (acquired with a delivery
        #: count above 1) and acquisition locks that timed out, per share-partition; records
        #: acknowledged, per acknowledgement type (Kafka's ``RecordAcknowledgementsPerSec``)
        self.redelivered: dict[SharePartitionKey, int] = {}
        self.lock_timeouts: dict[SharePartitionKey, int] = {}
        self.acknowledged: dict[AcknowledgeType, int] = {}

    # ------------------------------------------------------------------ views

    def get(self, key: SharePartitionKey) -> SharePartition | None:
        return self._partitions.get(key)

    def __len__(self) -> int:
        return len(self._partitions)

    def partitions(self) -> list[SharePartition]:
        return list(self._partitions.values())

    def holds(self, topic_id: bytes, partition: int) -> bool:
        """Whether any group has a share-partition of this topic-partition here."""
        return (topic_id, partition) in self._by_tp

    def acquired_count(self) -> int:
        """Records locked to members right now, over every share-partition (in-flight locks)."""
        return sum(sp.state.acquired_count() for sp in self._partitions.values() if sp.state is not None)

    def update_settings(self, key: SharePartitionKey, settings: ShareGroupSettings) -> None:
        """Make the share-partition *key* obey *settings* from now on (its group's configs changed).

        Kafka reads a share group's configs at each use (the isolation level at each
        fetch, the lock duration at each acquisition), so a change applies to the
        share-partitions already loaded, not only to those loaded after it.
        ``auto_offset_reset`` only matters to a share-partition not yet initialized.
        """
        sp = self._partitions.get(key)
        if sp is None or sp.settings == settings:
            return
        sp.settings = settings
        if sp.state is not None:
            sp.state.reconfigure(settings.partition_config())

    # ------------------------------------------------------------------ loading

    def load(
        self, key: SharePartitionKey, leader_epoch: int, log_offsets: Callable[[], tuple[int, int]], done: Done
    ) -> None:
        """Make ``key`` active at ``leader_epoch``; ``done(NONE)`` once it is (at once if it is).

        ``log_offsets()`` → (log start offset, high watermark), called only if the
        durable state is uninitialized (it may raise a KafkaError: leadership moved).
        """
        sp = self._partitions.get(key)
        if sp is not None and sp.leader_epoch != leader_epoch:
            self._drop(sp, ErrorCode.NOT_LEADER_OR_FOLLOWER, f"the leader epoch moved to {leader_epoch}")
            sp = None
        if sp is not None:
            if sp.status is PartitionStatus.ACTIVE:
                done(ErrorCode.NONE, None)
            else:
                sp.load_waiters.append(done)
            return
        sp = SharePartition(key, leader_epoch, self._settings(key.group_id))
        self._partitions[key] = sp
        self._by_tp.setdefault((key.topic_id, key.partition), set()).add(key)
        sp.load_waiters.append(done)
        log.debug("Loading share partition %s at leader epoch %d", key, leader_epoch)
        self._persister.read(key, leader_epoch, functools.partial(self._loaded, sp, log_offsets))

    def _loaded(self, sp: SharePartition, log_offsets: Callable[[], tuple[int, int]], result: ReadResult) -> None:
        if sp.gone:
            return
        if result.error != ErrorCode.NONE:
            error = persister_error(result.error)
            log.info("Failed to initialize the share partition %s: %s (%s)", sp.key, ErrorCode(result.error).name,
                     result.message)
            self._drop(sp, error, result.message or error.description)
            return
        config = sp.settings.partition_config()
        try:
            if result.start_offset == UNINITIALIZED_START_OFFSET:
                log_start, high_watermark = log_offsets()
                state = SharePartitionState.new(
                    config, auto_offset_reset=sp.settings.auto_offset_reset, log_start_offset=log_start,
                    log_end_offset=high_watermark, state_epoch=result.state_epoch, leader_epoch=sp.leader_epoch,
                )
            else:
                state = SharePartitionState.restore(
                    config, start_offset=result.start_offset, batches=result.state_batches,
                    state_epoch=result.state_epoch, leader_epoch=sp.leader_epoch,
                )
        except KafkaError as exc:
            self._drop(sp, exc.code, str(exc))
            return
        except ValueError as exc:  # durable state this share-partition cannot be rebuilt from
            log.error("Failed to initialize the share partition %s: invalid state: %s", sp.key, exc)
            self._drop(sp, ErrorCode.UNKNOWN_SERVER_ERROR, str(exc))
            return
        sp.state = state
        sp.status = PartitionStatus.ACTIVE
        log.debug("Initialized share partition %s: start offset %d, end offset %d", sp.key, state.start_offset,
                  state.end_offset)
        waiters, sp.load_waiters = sp.load_waiters, []
        self._persist(sp)  # a new start offset, records archived at the delivery limit
        for waiter in waiters:
            waiter(ErrorCode.NONE, None)
        self.on_available(sp.key)

    # ------------------------------------------------------------------ fetching

    def begin_fetch(self, key: SharePartitionKey, log_start_offset: int) -> int | None:
        """Take ``key``'s fetch lock: the offset to read the log from, or None (busy, not
        active, or nothing can be acquired until records are finished).

        ``log_start_offset`` is the log's now: records below it are gone (retention,
        DeleteRecords) and the share-partition moves past them first.
        """
        sp = self._partitions.get(key)
        if sp is None or sp.state is None or sp.fetch_locked:
            return None
        state = sp.state
        state.update_log_start_offset(log_start_offset)
        offset = state.next_fetch_offset()
        if offset >= state.start_offset + state.config.max_record_locks:
            self._persist(sp)
            return None
        sp.fetch_locked = True
        return offset

    def end_fetch(
        self,
        key: SharePartitionKey,
        member_id: str,
        fetched: Sequence[FetchedBatch],
        max_records: int,
        done: Done,
        *,
        fetch_offset: int,
        last_stable_offset: int | None = None,
        aborted: Iterable[tuple[int, int]] = (),
    ) -> tuple[AcquiredRecords, ...]:
        """Acquire up to ``max_records`` of what was read from ``fetch_offset`` for ``member_id``
        and free the fetch lock.  Returns the acquired ranges; ``done`` fires once they are
        durable (NONE: deliver them) or with the error (do not: the share-partition was
        dropped and they will be delivered again).  A share-partition dropped while it was
        read acquires nothing and answers NOT_LEADER_OR_FOLLOWER."""
        sp = self._partitions.get(key)
        if sp is None or sp.state is None or not sp.fetch_locked:
            done(ErrorCode.NOT_LEADER_OR_FOLLOWER, "The share partition was unloaded while it was read.")
            return ()
        sp.fetch_locked = False
        try:
            acquired = sp.state.acquire(
                member_id, fetched, max_records, self._clock(), fetch_offset=fetch_offset,
                last_stable_offset=last_stable_offset, aborted=aborted,
            ) if fetched else ()
        except ValueError:
            log.exception("acquiring records of %s for %s failed", key, member_id)
            acquired = ()
        self._arm(sp)
        again = sum(a.last_offset - a.first_offset + 1 for a in acquired if a.delivery_count > 1)
        if again:
            self.redelivered[key] = self.redelivered.get(key, 0) + again
        if acquired:
            self._persist(sp, done)
        else:
            self._persist(sp)
            done(ErrorCode.NONE, None)
        self.on_unlocked(key)
        return acquired

    def abort_fetch(self, key: SharePartitionKey) -> None:
        """Free ``key``'s fetch lock without acquiring anything (the read failed)."""
        sp = self._partitions.get(key)
        if sp is not None and sp.fetch_locked:
            sp.fetch_locked = False
            self.on_unlocked(key)

    # ------------------------------------------------------------------ acknowledging

    def acknowledge(
        self,
        key: SharePartitionKey,
        member_id: str,
        batches: Sequence[AcknowledgementBatch],
        done: Callable[[PartitionAcknowledgement], None],
        *,
        api_version: int,
        is_renew_ack: bool = False,
    ) -> None:
        """Apply one partition's acknowledgements of one request (see the module docstring);
        ``done`` gets the partition's answer once it is durable."""
        if validate_batches(batches, api_version=api_version, is_renew_ack=is_renew_ack) != ErrorCode.NONE:
            done(PartitionAcknowledgement(ErrorCode.INVALID_REQUEST, ErrorCode.INVALID_REQUEST.description))
            return
        if not batches:
            done(PartitionAcknowledgement())
            return
        sp = self._partitions.get(key)
        if sp is None:
            done(_refused(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            return
        if sp.state is None:
            done(_refused(ErrorCode.LEADER_NOT_AVAILABLE))
            return
        state = sp.state
        now = self._clock()
        normalized = [
            AcknowledgementBatch(b.first_offset, b.last_offset, tuple(int(t) for t in b.acknowledge_types))
            for b in batches
        ]
        start = state.start_offset
        released = state.expire_locks(now)
        if released:
            self.lock_timeouts[key] = self.lock_timeouts.get(key, 0) + released
        if not _holds_all(state, member_id, normalized):
            if released:
                self._changed(sp)
            done(_refused(ErrorCode.INVALID_RECORD_STATE))
            return
        error = state.acknowledge(member_id, normalized, now).error
        self._arm(sp)

        def written(write_error: ErrorCode, message: str | None) -> None:
            if write_error != ErrorCode.NONE:
                done(PartitionAcknowledgement(write_error, message))
            elif error != ErrorCode.NONE:
                done(_refused(error))
            else:
                self._count_acknowledged(normalized)
                done(PartitionAcknowledgement())

        self._persist(sp, written)
        if released or state.start_offset != start or any(
            t == AcknowledgeType.RELEASE for b in normalized for t in b.acknowledge_types
        ):
            self.on_available(key)

    def _count_acknowledged(self, batches: Sequence[AcknowledgementBatch]) -> None:
        """Records acknowledged, by type (gaps are no records, as Kafka ignores them)."""
        for b in batches:
            types = b.acknowledge_types
            runs = [(types[0], b.last_offset - b.first_offset + 1)] if len(types) == 1 else [(t, 1) for t in types]
            for t, n in runs:
                if t != AcknowledgeType.GAP:
                    kind = AcknowledgeType(t)
                    self.acknowledged[kind] = self.acknowledged.get(kind, 0) + n

    def share_partition_rows(self) -> list[tuple[SharePartitionKey, int, int]]:
        """Per active share-partition here: (key, records in flight — the window from the start
        offset to the end offset, Kafka's ``InFlightMessageCount`` —, records acquired now)."""
        return [(key, sp.state.end_offset - sp.state.start_offset, sp.state.acquired_count())
                for key, sp in self._partitions.items() if sp.state is not None]

    # ------------------------------------------------------------------ members, leadership

    def release_member(
        self, group_id: str, member_id: str, partitions: Iterable[tuple[bytes, int]] | None = None
    ) -> int:
        """Release every record ``member_id`` holds in ``group_id``'s share-partitions here (only
        those of ``partitions``, (topic id, partition) pairs, if given): its session closed or it
        left the group.  Returns how many; the releases are written, nobody waits."""
        wanted = None if partitions is None else set(partitions)
        released = 0
        for key, sp in list(self._partitions.items()):
            if key.group_id != group_id or sp.state is None:
                continue
            if wanted is not None and (key.topic_id, key.partition) not in wanted:
                continue
            n = sp.state.release_member(member_id)
            if n:
                released += n
                self._changed(sp)
        if released:
            log.debug("Released %d records of member %s of share group %s", released, member_id, group_id)
        return released

    def leadership_changed(self, topic_id: bytes, partition: int, leader_epoch: int | None) -> None:
        """The topic-partition is now led here at ``leader_epoch`` (None: no longer led here):
        its share-partitions loaded at another epoch are dropped."""
        for key in list(self._by_tp.get((topic_id, partition), ())):
            sp = self._partitions[key]
            if sp.leader_epoch != leader_epoch:
                self._drop(sp, ErrorCode.NOT_LEADER_OR_FOLLOWER, "The leadership of the partition moved.")

    def drop_group(self, group_id: str) -> int:
        """Kafka's ``ShareGroupListener.onGroupEmpty``: the last share session of *group_id* here
        went, so its share-partitions are forgotten (the next use reads them again from the share
        coordinator; a group deleted and created again meanwhile starts from its new state).
        Records still acquired in the durable state come back AVAILABLE at that read.  Returns how
        many were dropped."""
        gone = [sp for key, sp in self._partitions.items() if key.group_id == group_id]
        for sp in gone:
            self._drop(sp, ErrorCode.NOT_LEADER_OR_FOLLOWER, f"The share group {group_id} has no member here.")
        return len(gone)

    def close(self) -> None:
        """Every share-partition is dropped (the broker stops)."""
        for sp in list(self._partitions.values()):
            self._drop(sp, ErrorCode.NOT_LEADER_OR_FOLLOWER, "The broker is shutting down.")

    # ------------------------------------------------------------------ internals

    def _changed(self, sp: SharePartition) -> None:
        """Records were released outside a request: write, re-arm, tell waiting fetches."""
        self._persist(sp)
        self._arm(sp)
        self.on_available(sp.key)

    def _persist(self, sp: SharePartition, waiter: Done | None = None) -> None:
        """Write what changed (if nothing is in flight); ``waiter`` is answered by the write
        that holds the changes made so far."""
        if waiter is not None:
            sp.next_waiters.append(waiter)
        if sp.writing or sp.gone or sp.state is None:
            return
        write = sp.state.take_state_write()
        waiters, sp.next_waiters = sp.next_waiters, []
        if write is None:
            for w in waiters:
                w(ErrorCode.NONE, None)
            return
        sp.writing = True
        self._persister.write(sp.key, WriteData.of(write), functools.partial(self._written, sp, waiters))

    def _written(self, sp: SharePartition, waiters: list[Done], result: PartitionResult) -> None:
        sp.writing = False
        if result.error == ErrorCode.NONE:
            for w in waiters:
                w(ErrorCode.NONE, None)
            if not sp.gone:
                self._persist(sp)
            return
        error = persister_error(result.error)
        message = result.message or error.description
        log.warning("Failed to write the share group state of %s: %s (%s); it will be read again",
                    sp.key, ErrorCode(result.error).name, result.message)
        for w in waiters:
            w(error, message)
        if not sp.gone:
            self._drop(sp, error, message)

    def _drop(self, sp: SharePartition, error: ErrorCode, message: str | None) -> None:
        """Forget ``sp``: waiters for a load or for a write not yet sent get ``error`` (a write in
        flight answers its own waiters when it completes)."""
        if sp.gone:
            return
        sp.gone = True
        if self._partitions.get(sp.key) is sp:
            del self._partitions[sp.key]
            tp = (sp.key.topic_id, sp.key.partition)
            keys = self._by_tp.get(tp)
            if keys is not None:
                keys.discard(sp.key)
                if not keys:
                    del self._by_tp[tp]
        if sp.timer is not None:
            sp.timer.cancel()
            sp.timer = None
        waiters = sp.load_waiters + sp.next_waiters
        sp.load_waiters, sp.next_waiters = [], []
        log.info("Share partition %s unloaded: %s", sp.key, message or error.name)
        for w in waiters:
            w(error, message)
        self.on_available(sp.key)

    def _arm(self, sp: SharePartition) -> None:
        """The lock timer follows the earliest lock expiry."""
        if sp.gone or sp.state is None:
            return
        due = sp.state.next_lock_expiry_ms()
        if due == sp.timer_at and sp.timer is not None:
            return
        if sp.timer is not None:
            sp.timer.cancel()
        sp.timer, sp.timer_at = None, due
        if due is not None:
            sp.timer = self._timers.call_later(max(0, due - self._clock()), functools.partial(self._expire, sp))

    def _expire(self, sp: SharePartition) -> None:
        sp.timer, sp.timer_at = None, None
        if sp.gone or sp.state is None:
            return
        released = sp.state.expire_locks(self._clock())
        if released:
            self.lock_timeouts[sp.key] = self.lock_timeouts.get(sp.key, 0) + released
            log.debug("%d acquisition locks of %s expired", released, sp.key)
            self._changed(sp)
        else:
            self._arm(sp)


def _ignore(_key: SharePartitionKey) -> None:
    """No one listens."""


def _refused(code: ErrorCode) -> PartitionAcknowledgement:
    return PartitionAcknowledgement(code, code.description)


def _holds_all(state: SharePartitionState, member_id: str, batches: Sequence[AcknowledgementBatch]) -> bool:
    """Whether every offset of every batch is ACQUIRED by ``member_id`` (expired locks already released)."""
    runs = list(state.records())
    firsts = [r.first_offset for r in runs]
    for b in batches:
        if b.first_offset < state.start_offset or b.last_offset >= state.end_offset:
            return False
        k = bisect.bisect_right(firsts, b.first_offset) - 1
        while k < len(runs) and runs[k].first_offset <= b.last_offset:
            run = runs[k]
            if run.state != RecordState.ACQUIRED or run.member_id != member_id:
                return False
            k += 1
    return True
