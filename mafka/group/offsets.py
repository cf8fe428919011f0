"""Committed-offset bookkeeping of one group coordinator (Kafka 2.8 ``GroupMetadata`` /
``GroupMetadataManager`` offset handling). Plain Python: no I/O, times passed in.

Contract:

* :class:`OffsetAndMetadata` is one committed offset; :class:`CommitRecordMetadataAndOffset`
  pairs it with the log offset of the batch that stored it (``None`` until known).
* :class:`GroupOffsets` is one group's offsets: ``committed`` by ``(topic, partition)``
  and ``pending`` commits. :meth:`GroupOffsets.prepare_commit` stages offsets before
  the log append; :meth:`GroupOffsets.complete_commit` with ``ok=True`` stores them
  (unless a commit from a later log offset is already stored) and clears the pending
  entry if it is still the same commit; ``ok=False`` only clears it (Kafka's
  ``onOffsetCommitAppend`` / ``failPendingOffsetWrite``).
* Transactional commits (KIP-98, Kafka's ``pendingTransactionalOffsetCommits``) are
  kept per producer id in :attr:`GroupOffsets.pending_txn` and are invisible to
  :meth:`GroupOffsets.committed` until their transaction commits:
  :meth:`GroupOffsets.prepare_txn_commit` stages them before the log append (batch
  offset unknown), :meth:`GroupOffsets.complete_txn_commit` records the batch's
  offset on success (if the staged value is unchanged) or drops them on failure,
  and :meth:`GroupOffsets.complete_txn` applies (COMMIT) or drops (ABORT) all of a
  producer's, where an applied offset replaces the committed one only if that one
  was stored from an earlier log offset (``CommitRecordMetadataAndOffset.older_than``).
  An entry whose append has not completed when its marker is handled cannot be
  ordered against the log: it is dropped and logged (Kafka throws there).
* :class:`OffsetStore` holds every group the coordinator owns.
  :meth:`OffsetStore.load` replays ``__consumer_offsets`` in log order (Kafka's
  ``doLoadGroupsAndOffsets``). Its items are :class:`LogRecord` (a keyed record,
  with its batch's producer id, transactional bit and base offset),
  :class:`TxnMarker` (a COMMIT/ABORT control batch) or a bare ``(key, value)``
  pair (a non-transactional record at an unknown offset). Plain records: the last
  record per key wins, an offset tombstone removes the offset, a group tombstone
  removes the group metadata. Transactional offset records are held per producer
  until that producer's marker: COMMIT applies them under the ordering rule
  above, ABORT drops them; those still unmarked at the end of the log stay
  pending in their groups. It returns the last live :class:`GroupMetadataValue`
  per group (groups whose last metadata record is a tombstone are absent).
* :meth:`OffsetStore.expired_offsets` is Kafka's ``removeExpiredOffsets`` without the
  removal. Offsets with a pending (non-transactional) commit never expire; as in
  Kafka a pending transactional commit does not protect the committed offset, but
  is itself never expired, and a group with one still "has offsets" (it is not
  made Dead). An offset with an explicit
  expire timestamp expires at ``now >= expire``. Otherwise, with ``group_state_of(group)``
  returning ``None`` for a group with no protocol type (standalone ``assign()``
  consumers, or no group metadata) or ``(state, state_timestamp_ms, subscribed_topics)``:
  standalone ⇒ ``now - commit_ts >= retention``; Empty ⇒ ``now - (state_ts or commit_ts)
  >= retention``; Stable with known subscribed topics ⇒ only offsets of topics outside
  the subscription, by commit timestamp; anything else ⇒ nothing expires.
  Deliberate choice: "Stable" (not "any non-Empty state") as in Kafka's fix for
  KAFKA-13636, so a rebalancing group never loses offsets mid-rebalance.
* :meth:`OffsetStore.tombstones_for` / :meth:`OffsetStore.delete_group` give the
  ``(key_bytes, None)`` records to append; :meth:`OffsetStore.remove_offsets` drops
  offsets (and their pending commits, transactional ones included, unless
  ``pending=False`` as for expiry) from the cache.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field

from mafka.group.offsets_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    OffsetKey,
    OffsetValue,
    decode_record,
    encode_key,
    encode_value,
)
from mafka.group.state import GroupState
from mafka.topics import TopicPartitionTuple
from mafka.wire.batch import NO_PRODUCER_ID

__all__ = [
    "CommitRecordMetadataAndOffset",
    "GroupOffsets",
    "GroupStateInfo",
    "LoadItem",
    "LogRecord",
    "OffsetAndMetadata",
    "OffsetStore",
    "TxnMarker",
]

log = logging.getLogger("mafka.group.offsets")

#: What ``group_state_of`` returns: (state, state timestamp ms, subscribed topics), or None.
GroupStateInfo = tuple[GroupState, int | None, set[str] | frozenset[str] | None] | None


@dataclass(frozen=True)
class OffsetAndMetadata:
    offset: int
    leader_epoch: int = -1
    metadata: str = ""
    commit_timestamp: int = -1
    expire_timestamp: int | None = None

    def to_value(self) -> OffsetValue:
        return OffsetValue(
            self.offset,
            self.leader_epoch,
            self.metadata,
            self.commit_timestamp,
            self.expire_timestamp,
        )

    @classmethod
    def from_value(cls, v: OffsetValue) -> OffsetAndMetadata:
        return cls(v.offset, v.leader_epoch, v.metadata, v.commit_timestamp, v.expire_timestamp)


@dataclass(frozen=True)
class LogRecord:
    """A keyed ``__consumer_offsets`` record as a load reads it.

    ``batch_offset`` is the base offset of its batch (Kafka's ``appendedBatchOffset``),
    None if unknown; ``producer_id`` and ``is_transactional`` are its batch's.
    """

    key: bytes
    value: bytes | None
    producer_id: int = NO_PRODUCER_ID
    is_transactional: bool = False
    batch_offset: int | None = None


@dataclass(frozen=True)
class TxnMarker:
    """A transaction marker (control batch) in ``__consumer_offsets``: COMMIT or ABORT."""

    producer_id: int
    commit: bool
    offset: int | None = None


#: What :meth:`OffsetStore.load` replays: a bare ``(key, value)`` is a plain record.
LoadItem = LogRecord | TxnMarker | tuple[bytes, bytes | None]


@dataclass(frozen=True)
class CommitRecordMetadataAndOffset:
    """A stored offset and the log offset of the batch holding it (Kafka's class of this name)."""

    appended_batch_offset: int | None
    offset_and_metadata: OffsetAndMetadata

    def older_than(self, that: CommitRecordMetadataAndOffset) -> bool:
        if self.appended_batch_offset is None or that.appended_batch_offset is None:
            return True  # unknown positions: the newer completion wins
        return self.appended_batch_offset < that.appended_batch_offset


@dataclass(eq=False)
class GroupOffsets:
    """One group's committed offsets and in-flight commits."""

    group_id: str
    offsets: dict[TopicPartitionTuple, CommitRecordMetadataAndOffset] = field(default_factory=dict)
    pending: dict[TopicPartitionTuple, OffsetAndMetadata] = field(default_factory=dict)
    #: producer id → its transactional commits awaiting a marker (batch offset None until appended)
    pending_txn: dict[int, dict[TopicPartitionTuple, CommitRecordMetadataAndOffset]] = field(default_factory=dict)

    def prepare_commit(self, offsets: Mapping[TopicPartitionTuple, OffsetAndMetadata]) -> None:
        self.pending.update(offsets)

    def complete_commit(
        self,
        offsets: Mapping[TopicPartitionTuple, OffsetAndMetadata],
        ok: bool,
        appended_batch_offset: int | None = None,
    ) -> None:
        for tp, om in offsets.items():
            if ok:
                if tp in self.pending:
                    record = CommitRecordMetadataAndOffset(appended_batch_offset, om)
                    current = self.offsets.get(tp)
                    if current is None or current.older_than(record):
                        self.offsets[tp] = record
                # else: the offsets were removed (topic deleted) while the append ran
            if self.pending.get(tp) == om:
                del self.pending[tp]

    def load_offset(self, tp: TopicPartitionTuple, record: CommitRecordMetadataAndOffset) -> None:
        self.offsets[tp] = record

    # -- transactional commits (Kafka's pendingTransactionalOffsetCommits) -------------

    def prepare_txn_commit(self, producer_id: int, offsets: Mapping[TopicPartitionTuple, OffsetAndMetadata]) -> None:
        """Kafka's ``prepareTxnOffsetCommit``: stage before the append (offset unknown)."""
        staged = self.pending_txn.setdefault(producer_id, {})
        for tp, om in offsets.items():
            staged[tp] = CommitRecordMetadataAndOffset(None, om)

    def complete_txn_commit(
        self,
        producer_id: int,
        offsets: Mapping[TopicPartitionTuple, OffsetAndMetadata],
        ok: bool,
        appended_batch_offset: int | None = None,
    ) -> None:
        """Kafka's ``onTxnOffsetCommitAppend`` (ok) / ``failPendingTxnOffsetCommit`` (not ok)."""
        staged = self.pending_txn.get(producer_id)
        if staged is None:
            return  # completed (marker), removed or unloaded meanwhile
        for tp, om in offsets.items():
            if ok:
                current = staged.get(tp)
                if current is not None and current.offset_and_metadata == om:
                    staged[tp] = CommitRecordMetadataAndOffset(appended_batch_offset, om)
            else:
                staged.pop(tp, None)
        if not ok and not staged:
            del self.pending_txn[producer_id]

    def complete_txn(self, producer_id: int, commit: bool) -> None:
        """Kafka's ``completePendingTxnOffsetCommit``: a marker of ``producer_id`` was written."""
        staged = self.pending_txn.pop(producer_id, None)
        if staged is None or not commit:
            return
        for tp, record in staged.items():
            if record.appended_batch_offset is None:
                # Kafka raises IllegalStateException here: the marker cannot follow a record
                # whose append has not completed, so there is no position to order it by.
                log.error("Dropping transactional offset %s of producer %d for group %s: its append "
                          "had not completed when the transaction committed", tp, producer_id, self.group_id)
                continue
            self.apply_committed_txn_offset(tp, record)

    def apply_committed_txn_offset(self, tp: TopicPartitionTuple, record: CommitRecordMetadataAndOffset) -> None:
        """A committed transactional offset wins unless the stored one comes from a later batch."""
        current = self.offsets.get(tp)
        if current is None or current.older_than(record):
            self.offsets[tp] = record

    def has_pending_from_producer(self, producer_id: int) -> bool:
        """Kafka's ``hasPendingOffsetCommitsFromProducer``."""
        return producer_id in self.pending_txn

    def has_pending_for(self, tp: TopicPartitionTuple) -> bool:
        """Kafka's ``hasPendingOffsetCommitsForTopicPartition``: any commit of ``tp`` in flight
        or any transaction holding an offset of ``tp``."""
        return tp in self.pending or any(tp in staged for staged in self.pending_txn.values())

    def committed(self, tp: TopicPartitionTuple) -> OffsetAndMetadata | None:
        record = self.offsets.get(tp)
        return None if record is None else record.offset_and_metadata

    def all_committed(self) -> dict[TopicPartitionTuple, OffsetAndMetadata]:
        return {tp: r.offset_and_metadata for tp, r in self.offsets.items()}

    def has_offsets(self) -> bool:
        # As Kafka's hasOffsets: a producer entry counts even once emptied by removeOffsets,
        # until its marker arrives.
        return bool(self.offsets) or bool(self.pending) or bool(self.pending_txn)

    def remove_offsets(
        self, tps: Iterable[TopicPartitionTuple], *, pending: bool = True
    ) -> dict[TopicPartitionTuple, OffsetAndMetadata]:
        """Kafka's ``removeOffsets`` (also drops in-flight and transactional commits of
        ``tps``); with ``pending=False`` only the committed offsets go, as expiry does."""
        removed: dict[TopicPartitionTuple, OffsetAndMetadata] = {}
        for tp in tps:
            if pending:
                self.pending.pop(tp, None)
                for staged in self.pending_txn.values():
                    staged.pop(tp, None)
            record = self.offsets.pop(tp, None)
            if record is not None:
                removed[tp] = record.offset_and_metadata
        return removed

    def expired_offsets(
        self, now_ms: int, retention_ms: int, info: GroupStateInfo
    ) -> dict[TopicPartitionTuple, OffsetAndMetadata]:
        subscribed: set[str] | frozenset[str] = frozenset()
        if info is None:
            base: Callable[[OffsetAndMetadata], int] = lambda om: om.commit_timestamp  # noqa: E731
        else:
            state, state_ts, topics = info
            if state is GroupState.EMPTY:
                base = (
                    (lambda om: om.commit_timestamp)
                    if state_ts is None or state_ts < 0
                    else (lambda om: state_ts)
                )
            elif state is GroupState.STABLE and topics is not None:
                base = lambda om: om.commit_timestamp  # noqa: E731
                subscribed = topics
            else:
                return {}
        expired: dict[TopicPartitionTuple, OffsetAndMetadata] = {}
        for tp, record in self.offsets.items():
            if tp[0] in subscribed or tp in self.pending:
                continue
            om = record.offset_and_metadata
            if om.expire_timestamp is not None:
                if now_ms >= om.expire_timestamp:
                    expired[tp] = om
            elif now_ms - base(om) >= retention_ms:
                expired[tp] = om
        return expired


class OffsetStore:
    """The committed offsets (and last group metadata records) of every group one coordinator owns."""

    def __init__(self) -> None:
        self.groups: dict[str, GroupOffsets] = {}
        #: producer id → groups that may hold its pending transactional offsets (Kafka's
        #: ``openGroupsForProducer``); a superset: checked against the groups when used.
        self._producer_groups: dict[int, set[str]] = {}

    def group(self, group_id: str) -> GroupOffsets:
        """The group's offsets, created empty if unknown."""
        g = self.groups.get(group_id)
        if g is None:
            g = self.groups[group_id] = GroupOffsets(group_id)
        return g

    # -- commits ----------------------------------------------------------------------

    def prepare_commit(
        self, group_id: str, offsets: Mapping[TopicPartitionTuple, OffsetAndMetadata]
    ) -> list[tuple[bytes, bytes]]:
        """Stage ``offsets``; returns the records to append to ``__consumer_offsets``."""
        self.group(group_id).prepare_commit(offsets)
        return [
            (encode_key(OffsetKey(group_id, t, p)), _encode_offset(om))
            for (t, p), om in offsets.items()
        ]

    def complete_commit(
        self,
        group_id: str,
        offsets: Mapping[TopicPartitionTuple, OffsetAndMetadata],
        ok: bool,
        appended_batch_offset: int | None = None,
    ) -> None:
        g = self.groups.get(group_id)
        if g is None:
            if not ok:
                return
            g = self.group(group_id)
        g.complete_commit(offsets, ok, appended_batch_offset)

    def prepare_txn_commit(
        self, group_id: str, producer_id: int, offsets: Mapping[TopicPartitionTuple, OffsetAndMetadata]
    ) -> list[tuple[bytes, bytes]]:
        """Stage transactional ``offsets`` of ``producer_id``; returns the records to append
        (in one transactional batch of that producer)."""
        self.group(group_id).prepare_txn_commit(producer_id, offsets)
        self._producer_groups.setdefault(producer_id, set()).add(group_id)
        return [
            (encode_key(OffsetKey(group_id, t, p)), _encode_offset(om))
            for (t, p), om in offsets.items()
        ]

    def complete_txn_commit(
        self,
        group_id: str,
        producer_id: int,
        offsets: Mapping[TopicPartitionTuple, OffsetAndMetadata],
        ok: bool,
        appended_batch_offset: int | None = None,
    ) -> None:
        """The transactional append finished: note its batch offset, or drop the offsets."""
        g = self.groups.get(group_id)
        if g is None:
            return
        g.complete_txn_commit(producer_id, offsets, ok, appended_batch_offset)
        if not ok:
            self._forget_if_done(group_id, producer_id)

    def complete_txn(self, producer_id: int, commit: bool) -> list[str]:
        """A COMMIT (``commit``) or ABORT marker of ``producer_id`` was written to this
        partition: complete that producer's pending offsets in every group. Returns the
        groups that had some."""
        done: list[str] = []
        for group_id in sorted(self._producer_groups.pop(producer_id, ())):
            g = self.groups.get(group_id)
            if g is None or not g.has_pending_from_producer(producer_id):
                continue
            g.complete_txn(producer_id, commit)
            done.append(group_id)
            if not g.has_offsets():
                del self.groups[group_id]
        return done

    def _forget_if_done(self, group_id: str, producer_id: int) -> None:
        g = self.groups.get(group_id)
        if g is None or not g.has_pending_from_producer(producer_id):
            groups = self._producer_groups.get(producer_id)
            if groups is not None:
                groups.discard(group_id)
                if not groups:
                    del self._producer_groups[producer_id]
        if g is not None and not g.has_offsets():
            del self.groups[group_id]

    def committed(self, group_id: str, tp: TopicPartitionTuple) -> OffsetAndMetadata | None:
        g = self.groups.get(group_id)
        return None if g is None else g.committed(tp)

    def all_committed(self, group_id: str) -> dict[TopicPartitionTuple, OffsetAndMetadata]:
        g = self.groups.get(group_id)
        return {} if g is None else g.all_committed()

    # -- loading ---------------------------------------------------------------------

    def load(self, items: Iterable[LoadItem]) -> dict[str, GroupMetadataValue]:
        """Replay ``__consumer_offsets`` in log order; returns live group metadata (see the
        module docstring)."""
        group_values: dict[str, GroupMetadataValue | None] = {}
        #: producer id → (group, tp) → its transactional offset, until the producer's marker
        open_txns: dict[int, dict[tuple[str, TopicPartitionTuple], CommitRecordMetadataAndOffset]] = {}
        for item in items:
            if isinstance(item, TxnMarker):
                staged = open_txns.pop(item.producer_id, {})
                if item.commit:
                    for (group_id, tp), record in staged.items():
                        self.group(group_id).apply_committed_txn_offset(tp, record)
                continue
            if not isinstance(item, LogRecord):
                item = LogRecord(*item)
            key, value = decode_record(item.key, item.value)
            if isinstance(key, OffsetKey):
                tp = (key.topic, key.partition)
                if item.is_transactional:
                    staged = open_txns.setdefault(item.producer_id, {})
                    if value is None:
                        staged.pop((key.group, tp), None)
                    else:
                        assert isinstance(value, OffsetValue)
                        staged[(key.group, tp)] = CommitRecordMetadataAndOffset(
                            item.batch_offset, OffsetAndMetadata.from_value(value))
                elif value is None:
                    g = self.groups.get(key.group)
                    if g is not None:
                        g.remove_offsets([tp], pending=False)
                else:
                    assert isinstance(value, OffsetValue)
                    self.group(key.group).load_offset(
                        tp,
                        CommitRecordMetadataAndOffset(item.batch_offset, OffsetAndMetadata.from_value(value)),
                    )
            else:
                assert isinstance(key, GroupMetadataKey)
                assert value is None or isinstance(value, GroupMetadataValue)
                group_values[key.group] = value
        # Transactions without a marker yet stay pending (Kafka's initializeOffsets with
        # pendingTxnOffsets); their marker is handled by complete_txn once it is written.
        for producer_id, staged in open_txns.items():
            for (group_id, tp), record in staged.items():
                self.group(group_id).pending_txn.setdefault(producer_id, {})[tp] = record
                self._producer_groups.setdefault(producer_id, set()).add(group_id)
        for group_id, g in list(self.groups.items()):
            if not g.has_offsets():
                del self.groups[group_id]
        return {gid: v for gid, v in group_values.items() if v is not None}

    def unload(self, group_ids: Iterable[str]) -> None:
        """Forget groups (their offsets partition moved to another coordinator)."""
        for gid in group_ids:
            self.groups.pop(gid, None)

    # -- expiry and deletion -----------------------------------------------------------

    def expired_offsets(
        self,
        now_ms: int,
        retention_ms: int,
        group_state_of: Callable[[str], GroupStateInfo],
    ) -> dict[str, dict[TopicPartitionTuple, OffsetAndMetadata]]:
        """Offsets past retention, per group (nothing is removed; see module docstring)."""
        out: dict[str, dict[TopicPartitionTuple, OffsetAndMetadata]] = {}
        for gid, g in self.groups.items():
            expired = g.expired_offsets(now_ms, retention_ms, group_state_of(gid))
            if expired:
                out[gid] = expired
        return out

    def tombstones_for(
        self, group_id: str, tps: Iterable[TopicPartitionTuple]
    ) -> list[tuple[bytes, None]]:
        return [(encode_key(OffsetKey(group_id, t, p)), None) for t, p in tps]

    def remove_offsets(
        self, group_id: str, tps: Iterable[TopicPartitionTuple], *, pending: bool = True
    ) -> dict[TopicPartitionTuple, OffsetAndMetadata]:
        g = self.groups.get(group_id)
        if g is None:
            return {}
        removed = g.remove_offsets(tps, pending=pending)
        if not g.has_offsets():
            del self.groups[group_id]
        return removed

    def delete_group(self, group_id: str) -> list[tuple[bytes, None]]:
        """Drop the group's offsets; returns tombstones for them and for its metadata key."""
        g = self.groups.pop(group_id, None)
        tps = [] if g is None else sorted(g.offsets)
        return self.tombstones_for(group_id, tps) + [(encode_key(GroupMetadataKey(group_id)), None)]


def _encode_offset(om: OffsetAndMetadata) -> bytes:
    data = encode_value(om.to_value())
    assert data is not None
    return data
