"""One share-partition's in-flight records, as Kafka 4.x's ``SharePartition`` keeps them (KIP-932).

A share-partition is one topic-partition consumed by one share group.  Its
members fetch from it concurrently; each record they are handed is *acquired*
(locked to that member) until they acknowledge it or the lock expires.  This
module is that bookkeeping and nothing else: no log reads, no timers, no
persistence.  Time is the ``now_ms`` argument of each operation.

Offsets and the window
----------------------
* ``start_offset`` — the share-partition start offset (SPSO): every offset
  below it is finished (ACKNOWLEDGED or ARCHIVED) and is no longer tracked.
* ``end_offset`` — the share-partition end offset (SPEO), **exclusive** here:
  one past the last offset ever taken in flight (Kafka's ``endOffset`` is the
  last in-flight offset itself; it is the next offset to read from the log when
  nothing below it is available again).
* The window ``[start_offset, end_offset)`` holds at most
  ``max_record_locks`` offsets (``group.share.partition.max.record.locks``;
  Kafka counts ``endOffset - startOffset + 1`` the same way).  New offsets are
  taken in flight only while there is room, so memory and the number of locks
  held are both bounded by it.  Kafka rounds a fetch up to a batch boundary and
  can overshoot both ``max_records`` and the limit by part of a batch; here
  both are hard limits (acquired ranges need not follow batch boundaries).

Each offset in the window has a state (Kafka's ``RecordState``):

=============  ====  ==========================================================
AVAILABLE        0   may be acquired; its delivery count is the deliveries so far
ACQUIRED         1   locked to ``member_id`` until ``lock_expiry_ms``
ACKNOWLEDGED     2   accepted by a consumer: final
ARCHIVED         4   rejected, over the delivery limit, or never a deliverable
                     record (a gap): final
=============  ====  ==========================================================

The state is kept as runs of consecutive offsets with equal state (Kafka's
in-flight batches, split per offset when needed): a run never spans two
states, two delivery counts, two members or two lock expiries, and
neighbouring equal runs are merged after every operation, so at most one run
per offset and usually one per fetched batch.  The SPSO advances over the
prefix of ACKNOWLEDGED/ARCHIVED runs after every operation (Kafka's
``maybeUpdateCachedStateAndOffsets``).

Operations
----------
* :meth:`SharePartitionState.acquire` — the caller read the log from
  :meth:`~SharePartitionState.next_fetch_offset` and passes what it read.
  AVAILABLE deliverable offsets (up to ``max_records``) are acquired for the
  member with delivery count + 1 and a lock until ``now_ms +
  record_lock_duration_ms``; new offsets past ``end_offset`` join the window.
  **Gaps** — offsets in the fetched span that are not deliverable records —
  are ARCHIVED on sight and never handed out: offsets no batch covers
  (compaction), control batches (transaction markers; Mafka's delayed-message
  envelopes, half messages and cancel records, which are control batches —
  see :mod:`mafka.delayed.envelope`), and read_committed's aborted records
  (the caller passes the aborted offset ranges).  Kafka hands gap offsets to
  the consumer inside the acquired range and the consumer acknowledges them
  with GAP (0), ending in the same ARCHIVED state; archiving them here spares
  that round trip (GAP acknowledgements are still accepted).  With a
  ``last_stable_offset`` nothing at or past it is touched.  An AVAILABLE
  record already at ``delivery_count_limit`` is archived instead of acquired.
* :meth:`~SharePartitionState.acknowledge` — batches of ``(first, last,
  types)`` with Kafka's ``AcknowledgeType`` ids: GAP 0, ACCEPT 1, RELEASE 2,
  REJECT 3, RENEW 4 (KIP-1222); one type for the range or one per offset.
  ACCEPT → ACKNOWLEDGED; REJECT and GAP → ARCHIVED; RELEASE → AVAILABLE, or
  ARCHIVED once the delivery count has reached ``delivery_count_limit``; RENEW
  keeps the record ACQUIRED and restarts its lock.  Errors:

  - ``INVALID_REQUEST`` for the whole call when any range is reversed, has no
    types or the wrong number of them, has an unknown type, or overlaps or
    precedes the range before it (Kafka's ``validateAcknowledgementBatches``):
    nothing changes, not even expired locks.
  - ``INVALID_RECORD_STATE`` for a range with any offset this member does not
    hold (never acquired, acquired by another member, already acknowledged,
    below the SPSO or past the SPEO) or whose lock has expired by ``now_ms``:
    that range is left unchanged; the other ranges of the call are applied.
    (Kafka rolls back the whole partition's acknowledgement on any error; the
    per-range answer here lets the caller report either way.)

* :meth:`~SharePartitionState.release_member` — a member left: its acquired
  records are released as by RELEASE.  Kafka also *decrements* their delivery
  count, assuming they never reached the consumer; here acquiring *is*
  delivering, and a consumer that crashes on a poison record must still use up
  its delivery attempts, so the count stays.
* :meth:`~SharePartitionState.expire_locks` — acquired records whose lock has
  expired (``lock_expiry_ms <= now_ms``) are released as by RELEASE.
  :meth:`acquire` and :meth:`acknowledge` expire locks at their ``now_ms``
  first, so an acknowledgement of an expired record always fails.
* :meth:`~SharePartitionState.update_log_start_offset` — the log's start
  offset moved (retention, DeleteRecords): everything below it is gone.
  Kafka archives AVAILABLE records and lets ACQUIRED ones run out their lock;
  here all are dropped (an acknowledgement of them then fails).
* :meth:`~SharePartitionState.reset_to` — AlterShareGroupOffsets (the caller
  checks that the group has no members): everything is forgotten, the SPSO is
  the given offset and the state epoch goes up by one.

Durability
----------
Every change appends Kafka ``PersisterStateBatch``es — ``(first, last,
delivery state, delivery count)`` — to a pending list that
:meth:`~SharePartitionState.take_state_write` drains as one
``WriteShareGroupState`` partition entry (:class:`StateWrite`, carrying the
current SPSO); :mod:`mafka.group.share.state_records` turns it into
``__share_group_state`` records.  ACQUIRED is never persisted (the schema's
states are 0, 2 and 4).  Kafka writes nothing when records are acquired, so a
leader failover forgets in-flight deliveries and understates their delivery
counts (KIP-932 says so); with ``persist_acquisitions`` (the default) an
acquisition is written as AVAILABLE with the *new* delivery count, so after a
failover the record comes back AVAILABLE having used up that delivery and
``delivery_count_limit`` holds across failovers.  The batches are in Kafka's
format and merge as Kafka's coordinator merges them (for an offset, the
highest ``(delivery count, state)`` wins — the latest, since counts only grow
and 2/4 are final), so either setting writes records Kafka can read.
:meth:`SharePartitionState.restore` rebuilds the state from what was
persisted: every ACQUIRED record comes back AVAILABLE (or ARCHIVED, at the
delivery limit), none ACKNOWLEDGED is lost, and offsets of the window missing
from the durable state (possible only without ``persist_acquisitions``) come
back AVAILABLE with delivery count 0.
"""

from __future__ import annotations

import bisect
import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass
from enum import IntEnum
from typing import Final

from mafka.errors import ErrorCode

__all__ = [
    "AUTO_OFFSET_RESET_EARLIEST",
    "AUTO_OFFSET_RESET_LATEST",
    "AcknowledgeResult",
    "AcknowledgeType",
    "AcknowledgementBatch",
    "AcquiredRecords",
    "FetchedBatch",
    "InFlightRecords",
    "RecordState",
    "SharePartitionConfig",
    "SharePartitionState",
    "StateBatch",
    "StateWrite",
]

#: ``group.share.record.lock.duration.ms`` (Kafka's default; the broker allows 1000-3600000)
DEFAULT_RECORD_LOCK_DURATION_MS: Final = 30_000
#: ``group.share.delivery.count.limit`` (Kafka's default; the broker allows 2-10)
DEFAULT_DELIVERY_COUNT_LIMIT: Final = 5
#: ``group.share.partition.max.record.locks`` (Kafka 4.1's default; the broker allows 100-10000)
DEFAULT_MAX_RECORD_LOCKS: Final = 2000

#: ``share.auto.offset.reset`` values (Kafka's default is latest)
AUTO_OFFSET_RESET_EARLIEST: Final = "earliest"
AUTO_OFFSET_RESET_LATEST: Final = "latest"


class RecordState(IntEnum):
    """Kafka's ``RecordState``; the ids are the ``DeliveryState`` of the durable records."""

    AVAILABLE = 0
    ACQUIRED = 1
    ACKNOWLEDGED = 2
    ARCHIVED = 4


class AcknowledgeType(IntEnum):
    """Kafka's ``AcknowledgeType`` ids on the wire (GAP is the client's mark for a non-record offset)."""

    GAP = 0
    ACCEPT = 1
    RELEASE = 2
    REJECT = 3
    RENEW = 4


_FINAL = (RecordState.ACKNOWLEDGED, RecordState.ARCHIVED)


@dataclass(frozen=True, slots=True)
class SharePartitionConfig:
    """The group settings one share-partition obeys.

    The broker validates Kafka's ranges for these (see the DEFAULT_* constants);
    here they only have to be positive, so tests can use small windows.
    ``persist_acquisitions``: write acquisitions durably (see the module docstring).
    """

    record_lock_duration_ms: int = DEFAULT_RECORD_LOCK_DURATION_MS
    delivery_count_limit: int = DEFAULT_DELIVERY_COUNT_LIMIT
    max_record_locks: int = DEFAULT_MAX_RECORD_LOCKS
    persist_acquisitions: bool = True

    def __post_init__(self) -> None:
        for name in ("record_lock_duration_ms", "delivery_count_limit", "max_record_locks"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                raise ValueError(f"{name} must be a positive integer, got {value!r}")
        if self.delivery_count_limit > 0x7FFF:
            raise ValueError(f"delivery_count_limit must fit an int16, got {self.delivery_count_limit}")


@dataclass(frozen=True, slots=True)
class FetchedBatch:
    """One batch the caller read from the log: offsets ``first_offset..last_offset``.

    ``control``: a control batch (transaction marker, delayed-message envelope,
    half message…) — its offsets are gaps, never delivered.
    """

    first_offset: int
    last_offset: int
    control: bool = False


@dataclass(frozen=True, slots=True)
class AcquiredRecords:
    """Kafka's ``AcquiredRecords``: consecutive offsets acquired with the same delivery count."""

    first_offset: int
    last_offset: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class AcknowledgementBatch:
    """Kafka's ``ShareAcknowledgementBatch``: one type for the range, or one per offset."""

    first_offset: int
    last_offset: int
    acknowledge_types: tuple[int, ...]

    @classmethod
    def of(cls, first_offset: int, last_offset: int, acknowledge_type: int) -> AcknowledgementBatch:
        """The range ``first_offset..last_offset`` acknowledged with one type."""
        return cls(first_offset, last_offset, (int(acknowledge_type),))


@dataclass(frozen=True, slots=True)
class AcknowledgeResult:
    """One error code per acknowledgement batch, in the order given."""

    errors: tuple[ErrorCode, ...]

    @property
    def error(self) -> ErrorCode:
        """The partition-level answer: the first error, or NONE."""
        for code in self.errors:
            if code != ErrorCode.NONE:
                return code
        return ErrorCode.NONE


@dataclass(frozen=True, slots=True)
class StateBatch:
    """Kafka's ``PersisterStateBatch``: a durable range with one delivery state (0, 2 or 4) and count."""

    first_offset: int
    last_offset: int
    delivery_state: int
    delivery_count: int


@dataclass(frozen=True, slots=True)
class StateWrite:
    """What a share-partition asks its share coordinator to persist (one WriteShareGroupState entry).

    ``initialize``: a fresh start (first use, or AlterShareGroupOffsets) — the
    coordinator writes a new snapshot of just this, forgetting what it held.
    ``batches`` are in the order the changes happened and may overlap; the
    coordinator merges them (:func:`mafka.group.share.state_records.combine_state_batches`).
    """

    state_epoch: int
    leader_epoch: int
    start_offset: int
    batches: tuple[StateBatch, ...]
    initialize: bool = False


@dataclass(frozen=True, slots=True)
class InFlightRecords:
    """A read-only view of one run of the window (for inspection, tests and describe)."""

    first_offset: int
    last_offset: int
    state: RecordState
    delivery_count: int
    member_id: str | None
    lock_expiry_ms: int | None


class _Run:
    """Consecutive offsets in one state.  ``member``/``expiry`` are set only while ACQUIRED."""

    __slots__ = ("count", "expiry", "first", "last", "member", "state")

    def __init__(
        self, first: int, last: int, state: RecordState, count: int, member: str | None = None, expiry: int = -1
    ) -> None:
        self.first = first
        self.last = last
        self.state = state
        self.count = count
        self.member = member
        self.expiry = expiry

    def same_as(self, other: _Run) -> bool:
        return (
            self.state == other.state
            and self.count == other.count
            and self.member == other.member
            and self.expiry == other.expiry
        )

    def copy(self, first: int, last: int) -> _Run:
        return _Run(first, last, self.state, self.count, self.member, self.expiry)


def _first_of(run: _Run) -> int:
    return run.first


class SharePartitionState:
    """The in-flight records of one share-partition (see the module docstring for the contract)."""

    def __init__(
        self,
        config: SharePartitionConfig,
        *,
        start_offset: int,
        state_epoch: int = 0,
        leader_epoch: int = 0,
    ) -> None:
        """An empty share-partition whose SPSO is ``start_offset`` (nothing pending to persist).

        Use :meth:`new` for a share-partition seen for the first time and
        :meth:`restore` for one rebuilt from its durable state.
        """
        _check_offset("start_offset", start_offset)
        self._config = config
        self._start = start_offset
        self._end = start_offset
        self._runs: list[_Run] = []
        self._state_epoch = state_epoch
        self._leader_epoch = leader_epoch
        self._pending: list[StateBatch] = []
        self._dirty = False
        self._initialize = False

    # ------------------------------------------------------------------ construction

    @classmethod
    def new(
        cls,
        config: SharePartitionConfig,
        *,
        auto_offset_reset: str,
        log_start_offset: int,
        log_end_offset: int,
        state_epoch: int = 0,
        leader_epoch: int = 0,
    ) -> SharePartitionState:
        """A share-partition with no durable state yet: the SPSO from ``share.auto.offset.reset``.

        ``earliest`` starts at the log start offset, ``latest`` at the log end
        offset (case-insensitive, as Kafka parses it); anything else is a
        ``ValueError``.  The first :meth:`take_state_write` asks for the
        initial snapshot.
        """
        _check_offset("log_start_offset", log_start_offset)
        _check_offset("log_end_offset", log_end_offset)
        reset = auto_offset_reset.strip().lower() if isinstance(auto_offset_reset, str) else auto_offset_reset
        if reset == AUTO_OFFSET_RESET_EARLIEST:
            start = log_start_offset
        elif reset == AUTO_OFFSET_RESET_LATEST:
            start = log_end_offset
        else:
            raise ValueError(
                f"Invalid value {auto_offset_reset!r} for configuration share.auto.offset.reset:"
                f" expected '{AUTO_OFFSET_RESET_EARLIEST}' or '{AUTO_OFFSET_RESET_LATEST}'"
            )
        state = cls(config, start_offset=start, state_epoch=state_epoch, leader_epoch=leader_epoch)
        state._initialize = True
        state._dirty = True
        return state

    @classmethod
    def restore(
        cls,
        config: SharePartitionConfig,
        *,
        start_offset: int,
        batches: Iterable[StateBatch],
        state_epoch: int = 0,
        leader_epoch: int = 0,
    ) -> SharePartitionState:
        """The share-partition rebuilt from its durable state (after a failover or a restart).

        ``batches`` must be sorted and disjoint (as the share coordinator keeps
        them); the parts below ``start_offset`` are ignored.  AVAILABLE (and,
        defensively, ACQUIRED) come back AVAILABLE with their delivery count —
        or ARCHIVED when that count has reached the limit, which is then
        pending to persist; holes in the window come back AVAILABLE with count 0.
        """
        state = cls(config, start_offset=start_offset, state_epoch=state_epoch, leader_epoch=leader_epoch)
        limit = config.delivery_count_limit
        end = start_offset
        for batch in batches:
            if batch.first_offset > batch.last_offset:
                raise ValueError(f"state batch {batch} is reversed")
            if batch.delivery_count < 0:
                raise ValueError(f"state batch {batch} has a negative delivery count")
            try:
                durable = RecordState(batch.delivery_state)
            except ValueError:
                raise ValueError(f"state batch {batch} has unknown delivery state {batch.delivery_state}") from None
            if batch.last_offset < end:
                if batch.last_offset >= start_offset:
                    raise ValueError(f"state batch {batch} overlaps or precedes the batch before it")
                continue
            first = max(batch.first_offset, start_offset)
            if first > end:
                state._runs.append(_Run(end, first - 1, RecordState.AVAILABLE, 0))
            if durable in _FINAL:
                run = _Run(first, batch.last_offset, durable, batch.delivery_count)
            elif batch.delivery_count >= limit:
                run = _Run(first, batch.last_offset, RecordState.ARCHIVED, batch.delivery_count)
                state._pending.append(_state_batch(run))
            else:
                run = _Run(first, batch.last_offset, RecordState.AVAILABLE, batch.delivery_count)
            state._runs.append(run)
            end = batch.last_offset + 1
        state._end = end
        state._coalesce()
        state._advance_start()
        return state

    # ------------------------------------------------------------------ views

    @property
    def config(self) -> SharePartitionConfig:
        return self._config

    def reconfigure(self, config: SharePartitionConfig) -> None:
        """Obey *config* from now on (a group config changed; Kafka reads them at each use).

        Locks already held keep their expiry; the new lock duration applies to the
        next acquisitions, the new delivery count limit and record-lock cap to the
        next acquisitions and releases.  ``persist_acquisitions`` is kept.
        """
        self._config = dataclasses.replace(config, persist_acquisitions=self._config.persist_acquisitions)

    @property
    def start_offset(self) -> int:
        """The SPSO: every offset below it is ACKNOWLEDGED or ARCHIVED."""
        return self._start

    @property
    def end_offset(self) -> int:
        """The SPEO, exclusive: one past the last offset taken in flight."""
        return self._end

    @property
    def state_epoch(self) -> int:
        return self._state_epoch

    @property
    def leader_epoch(self) -> int:
        return self._leader_epoch

    def next_fetch_offset(self) -> int:
        """Where the next read of the log should start: the first AVAILABLE offset, else the SPEO."""
        for run in self._runs:
            if run.state == RecordState.AVAILABLE:
                return run.first
        return self._end

    def acquired_count(self) -> int:
        """How many records are locked to members right now."""
        return sum(r.last - r.first + 1 for r in self._runs if r.state == RecordState.ACQUIRED)

    def next_lock_expiry_ms(self) -> int | None:
        """When the earliest lock expires (for the caller's timer), or None with nothing acquired."""
        expiries = [r.expiry for r in self._runs if r.state == RecordState.ACQUIRED]
        return min(expiries) if expiries else None

    def records(self) -> Iterator[InFlightRecords]:
        """The window as runs, in offset order."""
        for r in self._runs:
            acquired = r.state == RecordState.ACQUIRED
            yield InFlightRecords(
                r.first, r.last, r.state, r.count, r.member if acquired else None, r.expiry if acquired else None
            )

    def record(self, offset: int) -> InFlightRecords | None:
        """The state of one offset, or None outside the window."""
        if not self._start <= offset < self._end:
            return None
        r = self._runs[self._index(offset)]
        acquired = r.state == RecordState.ACQUIRED
        return InFlightRecords(
            offset, offset, r.state, r.count, r.member if acquired else None, r.expiry if acquired else None
        )

    # ------------------------------------------------------------------ acquire

    def acquire(
        self,
        member_id: str,
        fetched: Sequence[FetchedBatch] | tuple[int, int],
        max_records: int,
        now_ms: int,
        *,
        fetch_offset: int | None = None,
        last_stable_offset: int | None = None,
        aborted: Iterable[tuple[int, int]] = (),
    ) -> tuple[AcquiredRecords, ...]:
        """Acquire up to ``max_records`` deliverable records of what the caller read, for ``member_id``.

        ``fetched`` is the batches read (sorted, disjoint), or ``(first, last)``
        for a run of plain records.  ``fetch_offset``: where the read started —
        offsets from there to the first batch are gaps.  ``last_stable_offset``
        (read_committed): nothing at or past it is touched.  ``aborted``:
        inclusive offset ranges of aborted transactional records, archived as
        gaps.  Returns the acquired ranges with their delivery counts, in
        offset order.  A malformed argument is a ``ValueError`` (a caller bug).
        """
        _check_member(member_id)
        if isinstance(max_records, bool) or not isinstance(max_records, int) or max_records < 0:
            raise ValueError(f"max_records must be a non-negative integer, got {max_records!r}")
        batches = _normalize_fetched(fetched)
        aborted_ranges = _normalize_ranges(aborted, "aborted range")
        self.expire_locks(now_ms)
        if not batches or max_records == 0:
            return ()
        span_first = batches[0].first_offset if fetch_offset is None else min(fetch_offset, batches[0].first_offset)
        span_last = batches[-1].last_offset
        if last_stable_offset is not None:
            span_last = min(span_last, last_stable_offset - 1)
        # What the log did not return between the SPEO and the start of the read does not exist.
        span_first = max(min(span_first, self._end), self._start)
        if span_first > span_last:
            return ()
        segments = _segments(span_first, span_last, batches, aborted_ranges)
        acquired: list[AcquiredRecords] = []
        remaining = max_records
        expiry = now_ms + self._config.record_lock_duration_ms
        for first, last, deliverable in segments:
            if first < self._end:
                remaining = self._acquire_in_window(
                    member_id, first, min(last, self._end - 1), deliverable, remaining, expiry, acquired
                )
            if remaining == 0:
                break
            if last >= self._end:
                remaining, whole = self._take_new(member_id, last, deliverable, remaining, expiry, acquired)
                if not whole or remaining == 0:
                    break
        self._coalesce()
        self._advance_start()
        return _merge_acquired(acquired)

    def _acquire_in_window(
        self,
        member_id: str,
        first: int,
        last: int,
        deliverable: bool,
        remaining: int,
        expiry: int,
        out: list[AcquiredRecords],
    ) -> int:
        """Acquire (or archive, for gaps) the AVAILABLE offsets of ``first..last``; returns what is left of the budget."""
        i, j = self._slice(first, last)
        limit = self._config.delivery_count_limit
        k = i
        while k < j:
            run = self._runs[k]
            if run.state != RecordState.AVAILABLE:
                k += 1
                continue
            if not deliverable or run.count >= limit:
                run.state = RecordState.ARCHIVED
                self._pending.append(_state_batch(run))
                k += 1
                continue
            if remaining == 0:
                break
            size = run.last - run.first + 1
            if size > remaining:
                self._split(k, run.first + remaining)
                j += 1
            run.state = RecordState.ACQUIRED
            run.count += 1
            run.member = member_id
            run.expiry = expiry
            if self._config.persist_acquisitions:
                self._pending.append(StateBatch(run.first, run.last, int(RecordState.AVAILABLE), run.count))
            out.append(AcquiredRecords(run.first, run.last, run.count))
            remaining -= run.last - run.first + 1
            k += 1
        return remaining

    def _take_new(
        self, member_id: str, last: int, deliverable: bool, remaining: int, expiry: int, out: list[AcquiredRecords]
    ) -> tuple[int, bool]:
        """Take offsets ``end_offset..last`` into the window, as far as room and ``remaining`` allow.

        Returns what is left of the budget and whether all of them were taken.
        """
        first = self._end
        cap = min(last, self._start + self._config.max_record_locks - 1)
        if deliverable:
            cap = min(cap, first + remaining - 1)
        if cap < first:
            return remaining, False
        if deliverable:
            run = _Run(first, cap, RecordState.ACQUIRED, 1, member_id, expiry)
            if self._config.persist_acquisitions:
                self._pending.append(StateBatch(first, cap, int(RecordState.AVAILABLE), 1))
            out.append(AcquiredRecords(first, cap, 1))
            remaining -= cap - first + 1
        else:
            run = _Run(first, cap, RecordState.ARCHIVED, 0)
            self._pending.append(_state_batch(run))
        self._runs.append(run)
        self._end = cap + 1
        return remaining, cap == last

    # ------------------------------------------------------------------ acknowledge

    def acknowledge(
        self, member_id: str, batches: Iterable[AcknowledgementBatch], now_ms: int
    ) -> AcknowledgeResult:
        """Apply ``member_id``'s acknowledgements; one error code per batch (see the module docstring)."""
        _check_member(member_id)
        batches = tuple(batches)
        if _invalid_acknowledgements(batches):
            return AcknowledgeResult((ErrorCode.INVALID_REQUEST,) * len(batches))
        self.expire_locks(now_ms)
        errors: list[ErrorCode] = []
        for batch in batches:
            if not self._holds(member_id, batch.first_offset, batch.last_offset):
                errors.append(ErrorCode.INVALID_RECORD_STATE)
                continue
            for first, last, ack_type in _typed_ranges(batch):
                i, j = self._slice(first, last)
                for run in self._runs[i:j]:
                    self._finish(run, AcknowledgeType(ack_type), now_ms)
            errors.append(ErrorCode.NONE)
        self._coalesce()
        self._advance_start()
        return AcknowledgeResult(tuple(errors))

    def _holds(self, member_id: str, first: int, last: int) -> bool:
        """Whether every offset of ``first..last`` is ACQUIRED by ``member_id`` (locks already expired)."""
        if first < self._start or last >= self._end:
            return False
        k = self._index(first)
        while k < len(self._runs) and self._runs[k].first <= last:
            run = self._runs[k]
            if run.state != RecordState.ACQUIRED or run.member != member_id:
                return False
            k += 1
        return True

    def _finish(self, run: _Run, ack_type: AcknowledgeType, now_ms: int) -> None:
        if ack_type == AcknowledgeType.RENEW:
            # KIP-1222: still being processed; only the lock moves, nothing durable changes.
            run.expiry = now_ms + self._config.record_lock_duration_ms
            return
        if ack_type == AcknowledgeType.RELEASE:
            self._release(run)
            return
        run.state = RecordState.ACKNOWLEDGED if ack_type == AcknowledgeType.ACCEPT else RecordState.ARCHIVED
        run.member = None
        run.expiry = -1
        self._pending.append(_state_batch(run))

    def _release(self, run: _Run) -> None:
        """ACQUIRED → AVAILABLE, or ARCHIVED once the delivery count reached the limit (Kafka's tryUpdateState)."""
        limit = self._config.delivery_count_limit
        run.state = RecordState.ARCHIVED if run.count >= limit else RecordState.AVAILABLE
        run.member = None
        run.expiry = -1
        self._pending.append(_state_batch(run))

    # ------------------------------------------------------------------ members and time

    def release_member(self, member_id: str) -> int:
        """Release every record ``member_id`` holds (it left the group); returns how many."""
        released = 0
        for run in self._runs:
            if run.state == RecordState.ACQUIRED and run.member == member_id:
                released += run.last - run.first + 1
                self._release(run)
        if released:
            self._coalesce()
            self._advance_start()
        return released

    def expire_locks(self, now_ms: int) -> int:
        """Release every record whose lock expired at or before ``now_ms``; returns how many."""
        released = 0
        for run in self._runs:
            if run.state == RecordState.ACQUIRED and run.expiry <= now_ms:
                released += run.last - run.first + 1
                self._release(run)
        if released:
            self._coalesce()
            self._advance_start()
        return released

    # ------------------------------------------------------------------ offsets moved from outside

    def update_log_start_offset(self, log_start_offset: int) -> None:
        """The log no longer has offsets below ``log_start_offset``: drop them and move the SPSO there."""
        _check_offset("log_start_offset", log_start_offset)
        if log_start_offset <= self._start:
            return
        if log_start_offset >= self._end:
            self._runs.clear()
            self._end = log_start_offset
        else:
            i, _ = self._slice(log_start_offset, self._end - 1)
            del self._runs[:i]
        self._start = log_start_offset
        self._dirty = True
        self._advance_start()

    def reset_to(self, offset: int) -> None:
        """AlterShareGroupOffsets: forget every record, start at ``offset``, bump the state epoch."""
        _check_offset("offset", offset)
        self._runs.clear()
        self._start = self._end = offset
        self._state_epoch += 1
        self._pending.clear()
        self._initialize = True
        self._dirty = True

    # ------------------------------------------------------------------ durability

    def take_state_write(self) -> StateWrite | None:
        """What to persist since the last call (None if nothing changed); the pending list is emptied."""
        if not self._pending and not self._dirty:
            return None
        write = StateWrite(
            state_epoch=self._state_epoch,
            leader_epoch=self._leader_epoch,
            start_offset=self._start,
            batches=tuple(self._pending),
            initialize=self._initialize,
        )
        self._pending.clear()
        self._dirty = False
        self._initialize = False
        return write

    # ------------------------------------------------------------------ runs

    def _index(self, offset: int) -> int:
        """The index of the run holding ``offset`` (which must be in the window)."""
        return bisect.bisect_right(self._runs, offset, key=_first_of) - 1

    def _split(self, k: int, offset: int) -> None:
        """Split run ``k`` so that a run starts at ``offset`` (strictly inside it)."""
        run = self._runs[k]
        tail = run.copy(offset, run.last)
        run.last = offset - 1
        self._runs.insert(k + 1, tail)

    def _slice(self, first: int, last: int) -> tuple[int, int]:
        """Split runs so that ``runs[i:j]`` covers exactly ``first..last`` (inside the window)."""
        i = self._index(first)
        if self._runs[i].first < first:
            self._split(i, first)
            i += 1
        j = self._index(last)
        if self._runs[j].last > last:
            self._split(j, last + 1)
        return i, j + 1

    def _coalesce(self) -> None:
        """Merge neighbouring runs in the same state (one run per batch, not per offset, when possible)."""
        if len(self._runs) < 2:
            return
        merged = [self._runs[0]]
        for run in self._runs[1:]:
            prev = merged[-1]
            if prev.last + 1 == run.first and prev.same_as(run):
                prev.last = run.last
            else:
                merged.append(run)
        self._runs = merged

    def _advance_start(self) -> None:
        """Move the SPSO over the prefix of finished runs and drop them."""
        k = 0
        while k < len(self._runs) and self._runs[k].state in _FINAL:
            k += 1
        if k:
            del self._runs[:k]
        start = self._runs[0].first if self._runs else self._end
        if start != self._start:
            self._start = start
            self._dirty = True


# ---------------------------------------------------------------------- helpers


def _check_offset(name: str, value: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ValueError(f"{name} must be a non-negative integer, got {value!r}")


def _check_member(member_id: str) -> None:
    if not isinstance(member_id, str) or not member_id:
        raise ValueError(f"member_id must be a non-empty string, got {member_id!r}")


def _state_batch(run: _Run) -> StateBatch:
    return StateBatch(run.first, run.last, int(run.state), run.count)


def _normalize_fetched(fetched: Sequence[FetchedBatch] | tuple[int, int]) -> list[FetchedBatch]:
    items: list[object] = list(fetched)
    if len(items) == 2 and isinstance(items[0], int) and isinstance(items[1], int):
        return _normalize_fetched([FetchedBatch(items[0], items[1])])
    batches: list[FetchedBatch] = []
    for b in items:
        if not isinstance(b, FetchedBatch):
            raise ValueError(f"expected FetchedBatch or (first, last), got {b!r}")
        batches.append(b)
    prev_last = -1
    for b in batches:
        _check_offset("first_offset", b.first_offset)
        if b.last_offset < b.first_offset:
            raise ValueError(f"fetched batch {b} is reversed")
        if b.first_offset <= prev_last:
            raise ValueError(f"fetched batch {b} overlaps or precedes the batch before it")
        prev_last = b.last_offset
    return batches


def _normalize_ranges(ranges: Iterable[tuple[int, int]], what: str) -> list[tuple[int, int]]:
    out = []
    for first, last in ranges:
        if last < first:
            raise ValueError(f"{what} ({first}, {last}) is reversed")
        out.append((first, last))
    out.sort()
    return out


def _segments(
    first: int, last: int, batches: list[FetchedBatch], aborted: list[tuple[int, int]]
) -> list[tuple[int, int, bool]]:
    """``first..last`` cut into consecutive ``(first, last, deliverable)`` pieces.

    Deliverable: inside a non-control batch and outside every aborted range.
    """
    deliverable: list[tuple[int, int]] = []
    for b in batches:
        if b.control:
            continue
        lo, hi = max(b.first_offset, first), min(b.last_offset, last)
        if lo <= hi:
            deliverable.extend(_subtract(lo, hi, aborted))
    out: list[tuple[int, int, bool]] = []
    cursor = first
    for lo, hi in deliverable:
        if lo > cursor:
            out.append((cursor, lo - 1, False))
        out.append((lo, hi, True))
        cursor = hi + 1
    if cursor <= last:
        out.append((cursor, last, False))
    return out


def _subtract(first: int, last: int, ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """``first..last`` minus the (sorted) ``ranges``, as sorted disjoint ranges."""
    out = []
    cursor = first
    for lo, hi in ranges:
        if hi < cursor or lo > last:
            continue
        if lo > cursor:
            out.append((cursor, lo - 1))
        cursor = max(cursor, hi + 1)
        if cursor > last:
            break
    if cursor <= last:
        out.append((cursor, last))
    return out


def _merge_acquired(acquired: list[AcquiredRecords]) -> tuple[AcquiredRecords, ...]:
    acquired.sort(key=lambda a: a.first_offset)
    out: list[AcquiredRecords] = []
    for a in acquired:
        if out and out[-1].last_offset + 1 == a.first_offset and out[-1].delivery_count == a.delivery_count:
            out[-1] = AcquiredRecords(out[-1].first_offset, a.last_offset, a.delivery_count)
        else:
            out.append(a)
    return tuple(out)


def _invalid_acknowledgements(batches: tuple[AcknowledgementBatch, ...]) -> bool:
    """Kafka's ``validateAcknowledgementBatches``: reversed, untyped, mistyped or overlapping ranges."""
    prev_last: int | None = None
    for b in batches:
        if not isinstance(b, AcknowledgementBatch):
            return True
        if b.last_offset < b.first_offset:
            return True
        types = b.acknowledge_types
        if not types or (len(types) > 1 and len(types) != b.last_offset - b.first_offset + 1):
            return True
        if any(isinstance(t, bool) or t not in _ACK_TYPE_IDS for t in types):
            return True
        if prev_last is not None and b.first_offset <= prev_last:
            return True
        prev_last = b.last_offset
    return False


_ACK_TYPE_IDS = frozenset(int(t) for t in AcknowledgeType)


def _typed_ranges(batch: AcknowledgementBatch) -> Iterator[tuple[int, int, int]]:
    """The batch as ``(first, last, type)`` pieces of consecutive offsets with one type."""
    types = batch.acknowledge_types
    if len(types) == 1:
        yield batch.first_offset, batch.last_offset, types[0]
        return
    start = batch.first_offset
    for k in range(1, len(types) + 1):
        if k == len(types) or types[k] != types[k - 1]:
            yield start, batch.first_offset + k - 1, types[k - 1]
            start = batch.first_offset + k
