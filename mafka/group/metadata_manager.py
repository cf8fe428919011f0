"""Kafka 2.8's ``GroupMetadataManager``: the groups this coordinator holds and their
storage in ``__consumer_offsets``.

Owns:

* ownership of ``__consumer_offsets`` partitions: leader epochs, which partitions
  are loading or owned, loading a partition (replaying its records into groups
  and :class:`~mafka.group.offsets.OffsetStore` s) and unloading it;
* the registry of loaded groups (:class:`~mafka.group.coordinator_types.GroupEntry`
  by group id);
* every write to ``__consumer_offsets`` (through the
  :class:`~mafka.group.coordinator_types.OffsetsLog`): group metadata records
  (``storeGroup``), offset commits, plain and transactional (``storeOffsets``), and
  tombstones of deleted groups, deleted offsets and expired offsets
  (``cleanupGroupMetadata``), with Kafka's mapping of append errors;
* reading committed offsets (``getOffsets``) and applying transaction markers
  (``handleTxnCompletion``).

It validates no request and knows nothing of rebalances: the
:class:`~mafka.group.coordinator.GroupCoordinator` checks requests and passes
``on_loaded`` / ``on_unloaded`` callbacks (Kafka's ``onGroupLoaded`` /
``onGroupUnloaded``) that arm or tear down a group's timers and parked calls.
Committed offsets never go backwards: see :class:`~mafka.group.offsets.OffsetStore`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping

from mafka.errors import ErrorCode
from mafka.group.consumer.manager import ConsumerGroupEntry, ConsumerGroupManager
from mafka.group.consumer.records import is_consumer_group_key
from mafka.group.coordinator_types import (
    INVALID_OFFSET,
    CoordinatorConfig,
    GroupEntry,
    OffsetFetchEntry,
    OffsetsLog,
)
from mafka.group.offsets import (
    GroupStateInfo,
    LoadItem,
    LogRecord,
    OffsetAndMetadata,
    OffsetStore,
    TxnMarker,
)
from mafka.group.offsets_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    encode_key,
    encode_value,
    offsets_partition_for,
)
from mafka.group.offsets_records import MemberMetadata as MemberRecord
from mafka.group.recorded_groups import RecordedGroupEntry
from mafka.group.share.manager import ShareGroupManager
from mafka.group.share.records import is_share_group_key
from mafka.group.state import GroupMetadata, GroupState, MemberMetadata
from mafka.topics import TopicPartitionTuple

__all__ = ["GroupMetadataManager"]

#: The coordinator's logger (shared by :mod:`mafka.group.coordinator` and :mod:`mafka.group.rebalance`).
log = logging.getLogger("mafka.group.coordinator")

#: What the coordinator does with a group just loaded or about to be unloaded.
GroupCallback = Callable[[GroupEntry], None]

#: Record types 0–2 are classic groups' and offsets, 3–8 consumer groups', 10–15 share groups';
#: other types (a newer coordinator's) are skipped by a load.
_CLASSIC_KEY_TYPES = (0, 1, 2)


def _split_load(
    records: Iterable[LoadItem],
) -> tuple[list[LoadItem], list[tuple[bytes, bytes | None]], list[tuple[bytes, bytes | None]]]:
    """A partition's records as ``(classic and offsets, consumer groups', share groups')``, each in log order."""
    classic: list[LoadItem] = []
    consumer: list[tuple[bytes, bytes | None]] = []
    share: list[tuple[bytes, bytes | None]] = []
    for item in records:
        if isinstance(item, TxnMarker):
            classic.append(item)
            continue
        key, value = (item.key, item.value) if isinstance(item, LogRecord) else (item[0], item[1])
        if is_consumer_group_key(key):
            consumer.append((key, value))
        elif is_share_group_key(key):
            share.append((key, value))
        elif len(key) >= 2 and int.from_bytes(key[:2], "big", signed=True) in _CLASSIC_KEY_TYPES:
            classic.append(item)
    return classic, consumer, share

_COORDINATOR_UNAVAILABLE = (
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
)
_NOT_COORDINATOR = (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR)
_TOO_LARGE = (ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.INVALID_FETCH_SIZE)


def _append_error(error: int, *, timed_out: int, too_large: int) -> int:
    """Kafka's mapping of a ``__consumer_offsets`` append error to what a member sees."""
    if error in _COORDINATOR_UNAVAILABLE:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if error in _NOT_COORDINATOR:
        return ErrorCode.NOT_COORDINATOR
    if error == ErrorCode.REQUEST_TIMED_OUT:
        return timed_out
    if error in _TOO_LARGE:
        return too_large
    return error


def _store_error(error: int) -> int:
    """A group-metadata append (``storeGroup``): a timeout means the rebalance must be redone."""
    return _append_error(error, timed_out=ErrorCode.REBALANCE_IN_PROGRESS, too_large=ErrorCode.UNKNOWN_SERVER_ERROR)


def _commit_error(error: int) -> int:
    """An offset-commit append (``storeOffsets``): REQUEST_TIMED_OUT passes through."""
    return _append_error(error, timed_out=ErrorCode.REQUEST_TIMED_OUT, too_large=ErrorCode.INVALID_COMMIT_OFFSET_SIZE)


def _log_failed_append(partition: int) -> Callable[[int, int | None], None]:
    def done(error: int, _offset: int | None) -> None:
        if error != ErrorCode.NONE:
            log.warning("Failed to write tombstones to __consumer_offsets-%d: %s", partition, ErrorCode(error).name)

    return done


def _group_from_value(group_id: str, value: GroupMetadataValue | None, now: int) -> GroupMetadata:
    """Kafka's ``GroupMetadata.loadGroup``: Empty without members, else Stable."""
    if value is None:
        return GroupMetadata(group_id, current_state_timestamp_ms=now)
    group = GroupMetadata(
        group_id,
        state=GroupState.STABLE if value.members else GroupState.EMPTY,
        generation_id=value.generation,
        protocol_type=value.protocol_type or None,
        protocol_name=value.protocol,
        current_state_timestamp_ms=(
            value.current_state_timestamp if value.current_state_timestamp >= 0 else None
        ),
    )
    for m in value.members:
        member = MemberMetadata(
            member_id=m.member_id,
            group_instance_id=m.group_instance_id,
            client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout_ms=m.rebalance_timeout,
            session_timeout_ms=m.session_timeout,
            protocol_type=value.protocol_type,
            supported_protocols=[(value.protocol or "", m.subscription)],
            assignment=m.assignment,
        )
        group.add(member)
    group.leader_id = value.leader if value.leader in group.members else group.leader_id
    if not value.members:
        group.protocol_type = value.protocol_type or None
    return group


class GroupMetadataManager:
    """The groups and offsets of the ``__consumer_offsets`` partitions this broker leads
    (see the module docstring)."""

    def __init__(
        self,
        config: CoordinatorConfig,
        clock: Callable[[], int],
        offsets_log: OffsetsLog,
        consumer_groups: ConsumerGroupManager | None = None,
        share_groups: ShareGroupManager | None = None,
    ) -> None:
        self.config = config
        self._clock = clock
        self._log = offsets_log
        #: the KIP-848 ``consumer`` groups of the same partitions (a group id is one or the other)
        self.consumer_groups = consumer_groups
        #: the KIP-932 share groups of the same partitions
        self.share_groups = share_groups
        self._groups: dict[str, GroupEntry] = {}
        #: counts since start for the metrics endpoint (Kafka's group-coordinator-metrics
        #: ``group-completed-rebalance-count`` and ``offset-commit-count``)
        self.completed_rebalances = 0
        self.offset_commits = 0
        self._stores: dict[int, OffsetStore] = {}
        self._epochs: dict[int, int] = {}
        #: partition → the leader epoch its running load started at
        self._loading: dict[int, int] = {}
        self._owned: set[int] = set()
        #: partition → transaction markers (producer id, commit) written while it loaded:
        #: applied once the load completes (Kafka runs both on one scheduler thread).
        self._deferred_completions: dict[int, list[tuple[int, bool]]] = {}

    # ------------------------------------------------------------------ ownership

    def partition_for(self, group_id: str) -> int:
        return offsets_partition_for(group_id, self.config.offsets_partitions)

    def group_states(self) -> list[tuple[str, str, int]]:
        """For the metrics endpoint: ``(group, state, members)`` of every group coordinated here."""
        return [(gid, entry.group.state.value, len(entry.group.members)) for gid, entry in self._groups.items()]

    def committed_offsets(self) -> list[tuple[str, str, int, int]]:
        """For consumer lag: ``(group, topic, partition, committed offset)`` of every committed offset here."""
        return [(gid, topic, index, record.offset_and_metadata.offset)
                for store in self._stores.values() for gid, offsets in store.groups.items()
                for (topic, index), record in offsets.offsets.items()]

    def offsets_count(self) -> int:
        """Committed offsets held here (Kafka's NumOffsets)."""
        return sum(len(offsets.offsets) for store in self._stores.values() for offsets in store.groups.values())

    def owned_partitions(self) -> set[int]:
        return set(self._owned)

    def loading_partitions(self) -> set[int]:
        return set(self._loading)

    def is_loading(self) -> bool:
        return bool(self._loading)

    def is_partition_loading(self, partition: int) -> bool:
        return partition in self._loading

    def is_partition_owned(self, partition: int) -> bool:
        return partition in self._owned

    def on_elected(self, partition: int, epoch: int) -> bool:
        """This broker leads ``partition`` at ``epoch``. True if a load must now run."""
        current = self._epochs.get(partition)
        if current is not None and current > epoch:
            return False
        self._epochs[partition] = epoch
        if partition in self._owned or partition in self._loading:
            # Still the leader, at a new epoch: nothing to reload (Kafka reloads only
            # when a replica becomes leader, not when it stays leader).
            return False
        self._loading[partition] = epoch
        return True

    def complete_load(
        self,
        partition: int,
        epoch: int,
        records: Iterable[LoadItem],
        on_loaded: GroupCallback,
        on_unloaded: GroupCallback,
    ) -> bool:
        """Replay ``__consumer_offsets``-``partition`` (log order) and start serving it.

        Each group replaces any entry of the same id (``on_unloaded`` for the old one),
        then ``on_loaded`` runs for it. False (and nothing changes) if leadership
        moved on since :meth:`on_elected`.
        """
        if self._loading.get(partition) != epoch:
            return False
        classic_records, consumer_records, share_records = _split_load(records)
        store = OffsetStore()
        values = store.load(classic_records)
        now = self._clock()
        self._stores[partition] = store
        consumer_ids = (
            set(self.consumer_groups.load(partition, consumer_records)) if self.consumer_groups is not None else set()
        )
        if self.share_groups is not None:
            consumer_ids |= set(self.share_groups.load(partition, share_records))
        for group_id in sorted(set(values) | set(store.groups)):
            if group_id in consumer_ids:
                continue  # a consumer group's offsets: no classic group beside it
            entry = GroupEntry(_group_from_value(group_id, values.get(group_id), now), partition)
            old = self._groups.get(group_id)
            if old is not None:
                on_unloaded(old)
            self._groups[group_id] = entry
            on_loaded(entry)
        del self._loading[partition]
        self._owned.add(partition)
        for producer_id, commit in self._deferred_completions.pop(partition, []):
            # The read may or may not have reached the marker: completing twice is a no-op.
            self.complete_transaction(partition, producer_id, commit)
        log.info(
            "Finished loading offsets and group metadata from __consumer_offsets-%d (epoch %d): %d groups",
            partition, epoch, len(values),
        )
        return True

    def fail_load(self, partition: int, epoch: int) -> None:
        """A load could not read the partition: stop claiming it (clients see NOT_COORDINATOR)."""
        if self._loading.get(partition) == epoch:
            del self._loading[partition]
            self._deferred_completions.pop(partition, None)

    def on_resigned(self, partition: int, epoch: int | None, on_unloaded: GroupCallback) -> None:
        """Leadership of ``partition`` moved away (or the partition is gone)."""
        current = self._epochs.get(partition)
        if epoch is not None and current is not None and current > epoch:
            return
        if epoch is not None:
            self._epochs[partition] = epoch
        self._loading.pop(partition, None)
        self._deferred_completions.pop(partition, None)
        if partition in self._owned:
            self._owned.discard(partition)
            self._unload(partition, on_unloaded)

    def shutdown(self, on_unloaded: GroupCallback) -> None:
        """Unload every owned partition and forget the running loads."""
        for partition in list(self._owned):
            self._owned.discard(partition)
            self._unload(partition, on_unloaded)
        self._loading.clear()
        self._deferred_completions.clear()

    def _unload(self, partition: int, on_unloaded: GroupCallback) -> None:
        if self.consumer_groups is not None:
            self.consumer_groups.unload(partition)
        if self.share_groups is not None:
            self.share_groups.unload(partition)
        for group_id, entry in list(self._groups.items()):
            if entry.partition == partition:
                del self._groups[group_id]
                on_unloaded(entry)
        self._stores.pop(partition, None)
        log.debug("Unloaded groups of __consumer_offsets-%d", partition)

    # ------------------------------------------------------------------ the group registry

    def get_group(self, group_id: str) -> GroupEntry | None:
        return self._groups.get(group_id)

    def add_group(self, group_id: str) -> GroupEntry:
        """A new Empty group, served from this broker (Kafka's ``addGroup``)."""
        entry = GroupEntry(
            GroupMetadata(group_id, current_state_timestamp_ms=self._clock()),
            self.partition_for(group_id),
        )
        self._groups[group_id] = entry
        return entry

    def is_current(self, entry: GroupEntry) -> bool:
        """``entry`` is still the loaded entry of its group (not unloaded, deleted or replaced)."""
        return self._groups.get(entry.group.group_id) is entry

    def current_groups(self) -> list[tuple[str, GroupEntry]]:
        """Every loaded group, by group id."""
        return sorted(self._groups.items())

    def offset_store(self, partition: int) -> OffsetStore | None:
        """The committed offsets of ``partition``'s groups (None unless loaded or written)."""
        return self._stores.get(partition)

    # ------------------------------------------------------------------ group metadata

    def store_group(self, entry: GroupEntry, assignment: Mapping[str, bytes], done: Callable[[int], None]) -> None:
        """Append the group's metadata record (Kafka's ``storeGroup``)."""
        group = entry.group
        protocol = group.protocol_name
        value = GroupMetadataValue(
            protocol_type=group.protocol_type or "",
            generation=group.generation_id,
            protocol=protocol,
            leader=group.leader_id if group.members else None,
            current_state_timestamp=(
                group.current_state_timestamp_ms if group.current_state_timestamp_ms is not None else -1
            ),
            members=[
                MemberRecord(
                    member_id=m.member_id,
                    group_instance_id=m.group_instance_id,
                    client_id=m.client_id,
                    client_host=m.client_host,
                    rebalance_timeout=m.rebalance_timeout_ms,
                    session_timeout=m.session_timeout_ms,
                    subscription=m.metadata(protocol) if protocol is not None else b"",
                    assignment=assignment.get(m.member_id, b""),
                )
                for m in group.all_member_metadata()
            ],
        )
        record = (encode_key(GroupMetadataKey(group.group_id)), encode_value(value))
        self._log.append(
            entry.partition, [record],
            lambda error, _offset: done(ErrorCode.NONE if error == ErrorCode.NONE else _store_error(error)),
        )

    def delete_group(self, entry: GroupEntry, done: Callable[[int], None], on_unloaded: GroupCallback) -> None:
        """Forget a group (``on_unloaded`` runs for it) and tombstone its offsets and metadata;
        ``done(error)`` once the tombstones are appended (mapped as a ``storeGroup`` error)."""
        gid = entry.group.group_id
        del self._groups[gid]
        on_unloaded(entry)
        store = self._stores.get(entry.partition)
        tombstones = store.delete_group(gid) if store is not None else [(encode_key(GroupMetadataKey(gid)), None)]
        if entry.group.generation_id == 0:
            # Kafka writes no group tombstone for a group that only stored offsets.
            tombstones = [t for t in tombstones if t[0] != encode_key(GroupMetadataKey(gid))]
        if not tombstones:
            done(ErrorCode.NONE)
            return
        self._log.append(
            entry.partition, tombstones,
            lambda err, _o: done(ErrorCode.NONE if err == ErrorCode.NONE else _store_error(err)),
        )

    def forget_group(self, entry: GroupEntry, on_unloaded: GroupCallback) -> None:
        """Drop a classic group from memory (it became a consumer group; its offsets stay)."""
        if self._groups.get(entry.group.group_id) is entry:
            del self._groups[entry.group.group_id]
            on_unloaded(entry)

    def delete_consumer_group(
        self, group_id: str, group_tombstones: list[tuple[bytes, bytes | None]], done: Callable[[int], None]
    ) -> None:
        """A deleted consumer group: tombstone its offsets and its records (*group_tombstones*);
        ``done(error)`` once appended."""
        partition = self.partition_for(group_id)
        store = self._stores.get(partition)
        offsets = store.delete_group(group_id)[:-1] if store is not None else []  # no classic metadata key
        self._log.append(
            partition, offsets + group_tombstones,
            lambda err, _o: done(ErrorCode.NONE if err == ErrorCode.NONE else _store_error(err)),
        )

    def append_tombstones(self, partition: int, tombstones: list[tuple[bytes, bytes | None]]) -> None:
        """Append records whose outcome nobody waits for (a failure is logged)."""
        self._log.append(partition, tombstones, _log_failed_append(partition))

    # ------------------------------------------------------------------ offsets

    def _is_live(self, entry: GroupEntry | ConsumerGroupEntry) -> bool:
        """The group still exists: the same entry, or the group converted to the other protocol
        meanwhile (KIP-848's online upgrade or downgrade keeps the group and its offsets)."""
        gid = entry.group.group_id
        consumer = self.consumer_groups.get(gid) if self.consumer_groups is not None else None
        if isinstance(entry, RecordedGroupEntry):
            return consumer is entry or (consumer is None and gid in self._groups)
        return self._groups.get(gid) is entry or (gid not in self._groups and consumer is not None)

    def store_offsets(self, entry: GroupEntry | ConsumerGroupEntry, offsets: Mapping[TopicPartitionTuple, OffsetAndMetadata],
                      respond: Callable[[dict[TopicPartitionTuple, int]], None],
                      producer_id: int = -1, producer_epoch: int = -1) -> None:
        """Kafka's ``storeOffsets``: a transactional commit when ``producer_id >= 0``."""
        limit = self.config.offset_metadata_max_bytes
        # Kafka compares Java's String.length(): UTF-16 code units, not UTF-8 bytes.
        valid = {
            tp: om for tp, om in offsets.items()
            if om.metadata is None or len(om.metadata.encode("utf-16-le", "surrogatepass")) // 2 <= limit
        }
        results: dict[TopicPartitionTuple, int] = {
            tp: ErrorCode.OFFSET_METADATA_TOO_LARGE for tp in offsets if tp not in valid
        }
        if not valid:
            return respond(results)
        group_id = entry.group.group_id
        store = self._stores.setdefault(entry.partition, OffsetStore())
        transactional = producer_id >= 0
        if transactional:
            records = store.prepare_txn_commit(group_id, producer_id, valid)
        else:
            records = store.prepare_commit(group_id, valid)

        def appended(error: int, base_offset: int | None) -> None:
            ok = error == ErrorCode.NONE
            if self._stores.get(entry.partition) is store:
                # A group deleted (or unloaded) meanwhile must not get its offsets back.
                live = self._is_live(entry)
                if transactional:
                    store.complete_txn_commit(group_id, producer_id, valid, ok and live, base_offset)
                else:
                    store.complete_commit(group_id, valid, ok and live, base_offset)
                if ok:
                    self.offset_commits += len(valid)
            mapped = ErrorCode.NONE if ok else _commit_error(error)
            if not ok:
                log.warning("%s commit of group %s failed: %s", "Transactional offset" if transactional else "Offset",
                            group_id, ErrorCode(error).name)
            results.update({tp: mapped for tp in valid})
            respond(results)

        if transactional:
            self._log.append(entry.partition, records, appended, producer_id=producer_id, producer_epoch=producer_epoch)
        else:
            self._log.append(entry.partition, records, appended)

    def complete_transaction(self, offsets_partition: int, producer_id: int, commit: bool) -> None:
        """A COMMIT or ABORT marker of ``producer_id`` on ``offsets_partition`` (Kafka's
        ``handleTxnCompletion``); see :meth:`GroupCoordinator.complete_transaction`."""
        if offsets_partition in self._loading:
            self._deferred_completions.setdefault(offsets_partition, []).append((producer_id, commit))
            return
        store = self._stores.get(offsets_partition)
        if offsets_partition not in self._owned or store is None:
            log.info("Transaction marker of producer %d on __consumer_offsets-%d: not the coordinator, the new "
                     "owner replays it", producer_id, offsets_partition)
            return
        for group_id in store.complete_txn(producer_id, commit):
            log.debug("%s the transactional offsets of producer %d for group %s",
                      "Committed" if commit else "Aborted", producer_id, group_id)

    def get_offsets(
        self, group_id: str, partitions: list[TopicPartitionTuple] | None, require_stable: bool
    ) -> dict[TopicPartitionTuple, OffsetFetchEntry]:
        """Kafka's ``getOffsets`` for a group of an owned partition; see
        :meth:`GroupCoordinator.fetch_offsets`."""
        entry = self._groups.get(group_id)
        store = self._stores.get(self.partition_for(group_id))
        missing = OffsetFetchEntry(INVALID_OFFSET, -1, "", ErrorCode.NONE)
        consumer = self.consumer_groups is not None and self.consumer_groups.get(group_id) is not None
        if (not consumer and (entry is None or entry.group.state is GroupState.DEAD)) or store is None:
            return {tp: missing for tp in partitions or []}
        offsets = store.groups.get(group_id)
        wanted = partitions if partitions is not None else (sorted(offsets.offsets) if offsets else [])
        out: dict[TopicPartitionTuple, OffsetFetchEntry] = {}
        for tp in wanted:
            if require_stable and offsets is not None and offsets.has_pending_for(tp):
                out[tp] = OffsetFetchEntry(INVALID_OFFSET, -1, "", ErrorCode.UNSTABLE_OFFSET_COMMIT)
                continue
            om = offsets.committed(tp) if offsets is not None else None
            out[tp] = missing if om is None else OffsetFetchEntry(om.offset, om.leader_epoch, om.metadata, ErrorCode.NONE)
        if require_stable and offsets is not None and (offsets.pending_txn or any(e is missing for e in out.values())):
            # Why a read_committed consumer waits, or starts at its reset position: worth a line.
            log.info("OffsetFetch (require_stable) of group %s: %s; transactions holding offsets: %s", group_id,
                     ", ".join(f"{t}-{p}={'UNSTABLE' if e.error else e.offset}" for (t, p), e in sorted(out.items())),
                     {pid: sorted(f"{t}-{p}" for t, p in staged) for pid, staged in offsets.pending_txn.items()})
        return out

    def delete_offsets(self, entry: GroupEntry | ConsumerGroupEntry, eligible: list[TopicPartitionTuple],
                       done: Callable[[int], None]) -> None:
        """Forget the offsets of ``eligible`` partitions of ``entry``'s group (a classic group
        goes Dead if it is Empty and left without offsets; a ``consumer`` group stays, as in
        Kafka 4, until ``cleanupGroupMetadata``) and tombstone them; ``done(error)`` once
        appended (mapped as a commit error). See :meth:`GroupCoordinator.delete_offsets`."""
        group = entry.group
        group_id = group.group_id
        store = self._stores.get(entry.partition)
        removed = store.remove_offsets(group_id, eligible) if store is not None else {}
        tombstones: list[tuple[bytes, bytes | None]] = list(store.tombstones_for(group_id, sorted(removed))) \
            if store is not None else []
        if (
            isinstance(group, GroupMetadata)
            and group.state is GroupState.EMPTY
            and (store is None or group_id not in store.groups)
        ):
            group.transition_to(GroupState.DEAD)
            del self._groups[group_id]
            log.info("Group %s transitioned to Dead in generation %d", group_id, group.generation_id)
            if group.generation_id > 0:
                # Generation 0: the group only stored offsets, no metadata record exists.
                tombstones.append((encode_key(GroupMetadataKey(group_id)), None))
        log.info("The following offsets of the group %s were deleted: %s. A total of %d offsets were removed.",
                 group_id, ", ".join(f"{t}-{p}" for t, p in eligible), len(removed))
        if not tombstones:
            return done(ErrorCode.NONE)

        def appended(error: int, _offset: int | None) -> None:
            if error == ErrorCode.NONE:
                done(ErrorCode.NONE)
            else:
                log.warning("Offset deletion of group %s failed: %s", group_id, ErrorCode(error).name)
                done(_commit_error(error))

        self._log.append(entry.partition, tombstones, appended)

    def _expire_empty_consumer_groups(self, partition: int, store: OffsetStore) -> list[tuple[bytes, bytes | None]]:
        """Kafka 4's ``cleanupGroupMetadata`` for consumer groups: an empty one without offsets is deleted."""
        if self.consumer_groups is None:
            return []
        tombstones: list[tuple[bytes, bytes | None]] = []
        for gid, entry in self.consumer_groups.entries():
            if entry.partition == partition and not entry.group.members and gid not in store.groups:
                error, records = self.consumer_groups.delete(gid)
                if error == ErrorCode.NONE:
                    log.info("Consumer group %s deleted: empty, with no offsets left", gid)
                    tombstones += records
        return tombstones

    def expire_offsets(self, subscribed_topics: Callable[[GroupMetadata], set[str] | None] | None = None) -> int:
        """Kafka's ``cleanupGroupMetadata``: drop offsets past ``offsets.retention.minutes``,
        and Empty groups left without offsets; write their tombstones. Returns the
        number of offsets removed."""
        now = self._clock()
        removed_total = 0
        for partition, store in list(self._stores.items()):
            if partition not in self._owned:
                continue

            def state_of(gid: str) -> GroupStateInfo:
                consumer = self.consumer_groups.get(gid) if self.consumer_groups is not None else None
                if consumer is not None:
                    # Kafka 4's ConsumerGroup: by commit time, subscribed topics (names and resolved
                    # regexes: isSubscribedToTopic) kept while it has members.
                    if not consumer.group.members:
                        return GroupState.EMPTY, None, None
                    return GroupState.STABLE, None, set(consumer.group.subscribed_topics())
                entry = self._groups.get(gid)
                if entry is None or entry.group.protocol_type is None:
                    return None
                group = entry.group
                topics = subscribed_topics(group) if subscribed_topics is not None else None
                return group.state, group.current_state_timestamp_ms, topics

            expired = store.expired_offsets(now, self.config.offsets_retention_ms, state_of)
            tombstones: list[tuple[bytes, bytes | None]] = []
            for gid, offsets in expired.items():
                # Kafka's removeExpiredOffsets: an open transaction keeps its offsets.
                store.remove_offsets(gid, offsets, pending=False)
                tombstones += store.tombstones_for(gid, offsets)
                removed_total += len(offsets)
                log.info("Removed %d expired offsets of group %s", len(offsets), gid)
            for gid, entry in list(self._groups.items()):
                if entry.partition != partition:
                    continue
                if entry.group.state is GroupState.EMPTY and gid not in store.groups:
                    entry.group.transition_to(GroupState.DEAD)
                    del self._groups[gid]
                    if entry.group.generation_id > 0:
                        # Generation 0: the group only stored offsets, no metadata record exists.
                        tombstones.append((encode_key(GroupMetadataKey(gid)), None))
                    log.info("Group %s transitioned to Dead in generation %d", gid, entry.group.generation_id)
            tombstones += self._expire_empty_consumer_groups(partition, store)
            if tombstones:
                self._log.append(partition, tombstones, _log_failed_append(partition))
        return removed_total
