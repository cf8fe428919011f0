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
* :class:`OffsetStore` holds every group the coordinator owns.
  :meth:`OffsetStore.load` replays ``__consumer_offsets`` records ``(key, value)``
  in log order: the last record per key wins, an offset tombstone removes the
  offset, a group tombstone removes the group metadata; it returns the last live
  :class:`GroupMetadataValue` per group (groups whose last metadata record is a
  tombstone are absent).
* :meth:`OffsetStore.expired_offsets` is Kafka's ``removeExpiredOffsets`` without the
  removal. Offsets with a pending commit never expire. An offset with an explicit
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
  offsets (and their pending commits) from the cache.
"""

from __future__ import annotations

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

__all__ = [
    "CommitRecordMetadataAndOffset",
    "GroupOffsets",
    "GroupStateInfo",
    "OffsetAndMetadata",
    "OffsetStore",
    "TopicPartition",
]

TopicPartition = tuple[str, int]
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
    offsets: dict[TopicPartition, CommitRecordMetadataAndOffset] = field(default_factory=dict)
    pending: dict[TopicPartition, OffsetAndMetadata] = field(default_factory=dict)

    def prepare_commit(self, offsets: Mapping[TopicPartition, OffsetAndMetadata]) -> None:
        self.pending.update(offsets)

    def complete_commit(
        self,
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
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

    def load_offset(self, tp: TopicPartition, record: CommitRecordMetadataAndOffset) -> None:
        self.offsets[tp] = record

    def committed(self, tp: TopicPartition) -> OffsetAndMetadata | None:
        record = self.offsets.get(tp)
        return None if record is None else record.offset_and_metadata

    def all_committed(self) -> dict[TopicPartition, OffsetAndMetadata]:
        return {tp: r.offset_and_metadata for tp, r in self.offsets.items()}

    def has_offsets(self) -> bool:
        return bool(self.offsets) or bool(self.pending)

    def remove_offsets(
        self, tps: Iterable[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        removed: dict[TopicPartition, OffsetAndMetadata] = {}
        for tp in tps:
            self.pending.pop(tp, None)
            record = self.offsets.pop(tp, None)
            if record is not None:
                removed[tp] = record.offset_and_metadata
        return removed

    def expired_offsets(
        self, now_ms: int, retention_ms: int, info: GroupStateInfo
    ) -> dict[TopicPartition, OffsetAndMetadata]:
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
        expired: dict[TopicPartition, OffsetAndMetadata] = {}
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

    def group(self, group_id: str) -> GroupOffsets:
        """The group's offsets, created empty if unknown."""
        g = self.groups.get(group_id)
        if g is None:
            g = self.groups[group_id] = GroupOffsets(group_id)
        return g

    # -- commits ----------------------------------------------------------------------

    def prepare_commit(
        self, group_id: str, offsets: Mapping[TopicPartition, OffsetAndMetadata]
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
        offsets: Mapping[TopicPartition, OffsetAndMetadata],
        ok: bool,
        appended_batch_offset: int | None = None,
    ) -> None:
        g = self.groups.get(group_id)
        if g is None:
            if not ok:
                return
            g = self.group(group_id)
        g.complete_commit(offsets, ok, appended_batch_offset)

    def committed(self, group_id: str, tp: TopicPartition) -> OffsetAndMetadata | None:
        g = self.groups.get(group_id)
        return None if g is None else g.committed(tp)

    def all_committed(self, group_id: str) -> dict[TopicPartition, OffsetAndMetadata]:
        g = self.groups.get(group_id)
        return {} if g is None else g.all_committed()

    # -- loading ---------------------------------------------------------------------

    def load(self, records: Iterable[tuple[bytes, bytes | None]]) -> dict[str, GroupMetadataValue]:
        """Replay ``__consumer_offsets`` records in log order; returns live group metadata."""
        group_values: dict[str, GroupMetadataValue | None] = {}
        for key_bytes, value_bytes in records:
            key, value = decode_record(key_bytes, value_bytes)
            if isinstance(key, OffsetKey):
                tp = (key.topic, key.partition)
                if value is None:
                    g = self.groups.get(key.group)
                    if g is not None:
                        g.remove_offsets([tp])
                else:
                    assert isinstance(value, OffsetValue)
                    self.group(key.group).load_offset(
                        tp,
                        CommitRecordMetadataAndOffset(None, OffsetAndMetadata.from_value(value)),
                    )
            else:
                assert isinstance(key, GroupMetadataKey)
                assert value is None or isinstance(value, GroupMetadataValue)
                group_values[key.group] = value
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
    ) -> dict[str, dict[TopicPartition, OffsetAndMetadata]]:
        """Offsets past retention, per group (nothing is removed; see module docstring)."""
        out: dict[str, dict[TopicPartition, OffsetAndMetadata]] = {}
        for gid, g in self.groups.items():
            expired = g.expired_offsets(now_ms, retention_ms, group_state_of(gid))
            if expired:
                out[gid] = expired
        return out

    def tombstones_for(
        self, group_id: str, tps: Iterable[TopicPartition]
    ) -> list[tuple[bytes, None]]:
        return [(encode_key(OffsetKey(group_id, t, p)), None) for t, p in tps]

    def remove_offsets(
        self, group_id: str, tps: Iterable[TopicPartition]
    ) -> dict[TopicPartition, OffsetAndMetadata]:
        g = self.groups.get(group_id)
        if g is None:
            return {}
        removed = g.remove_offsets(tps)
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
