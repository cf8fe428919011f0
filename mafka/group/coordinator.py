"""The group coordinator: Kafka 2.8's ``GroupCoordinator`` and the group side of
``GroupMetadataManager``, as plain Python.

No sockets, no reactor, no clock of its own: time comes from ``clock()`` (ms),
delays from a :class:`~mafka.timers.Timers`, and every write to ``__consumer_offsets`` goes
through an :class:`OffsetsLog` whose ``append`` calls back later with an error
code (acks=all, so a callback with NONE means the write is replicated). The
broker provides those three and turns requests into the calls below; tests
drive the same calls with a fake clock and a fake log.

Contract:

* Every request method takes a ``respond`` callable and calls it exactly once,
  either before returning or later (a parked JoinGroup or SyncGroup, a commit
  waiting for its append). Results are plain dataclasses, tuples or dicts of
  Kafka error codes (:class:`~mafka.errors.ErrorCode`).
* Ownership follows leadership of ``__consumer_offsets`` partitions:
  :meth:`GroupCoordinator.on_elected` marks a partition loading (requests for
  its groups get COORDINATOR_LOAD_IN_PROGRESS; a Heartbeat gets NONE, as in
  Kafka), :meth:`GroupCoordinator.complete_load` replays the partition's
  records and starts answering, :meth:`GroupCoordinator.on_resigned` unloads
  its groups (parked calls get NOT_COORDINATOR) and later requests get
  NOT_COORDINATOR. Epochs fence stale loads and resignations.
* Rebalances follow Kafka 2.8 exactly: MEMBER_ID_REQUIRED for unknown members
  (JoinGroup v4+), ``group.initial.rebalance.delay.ms`` for a group leaving
  Empty (extended while new members keep arriving, bounded by the rebalance
  timeout), a DelayedJoin bounded by the largest member rebalance timeout,
  dynamic members that did not rejoin are dropped, the leader gets the member
  list, SyncGroup stores the assignment before anyone gets it, session
  expiry removes a member and rebalances. Static members (KIP-345) keep their
  assignment across a restart without a rebalance; the replaced member id is
  fenced with FENCED_INSTANCE_ID.
* Transactional offset commits (KIP-98/KIP-447, Kafka 2.8's
  ``handleTxnCommitOffsets`` / ``handleTxnCompletion``):
  :meth:`GroupCoordinator.commit_transactional_offsets` appends the offsets as one
  transactional batch of the producer and keeps them pending for that producer
  (invisible to OffsetFetch; ``require_stable`` fetches get UNSTABLE_OFFSET_COMMIT
  for their partitions) until :meth:`GroupCoordinator.complete_transaction` is
  told that the producer's COMMIT (applied) or ABORT (dropped) marker was written
  to the group's offsets partition. A load replays markers the same way; a
  transaction still open at the end of the log stays pending.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Protocol

from mafka.errors import ErrorCode
from mafka.group.consumer_protocol import PROTOCOL_TYPE, decode_subscription
from mafka.group.offsets import LoadItem, OffsetAndMetadata, OffsetStore
from mafka.group.offsets_records import (
    GroupMetadataKey,
    GroupMetadataValue,
    encode_key,
    encode_value,
    offsets_partition_for,
)
from mafka.group.offsets_records import MemberMetadata as MemberRecord
from mafka.group.state import GroupMetadata, GroupState, MemberMetadata, Protocols, new_member_id
from mafka.timers import TimerHandle, Timers
from mafka.topics import TopicPartitionTuple

__all__ = [
    "CoordinatorConfig",
    "GroupCoordinator",
    "GroupOverview",
    "GroupSummary",
    "JoinResult",
    "MemberSummary",
    "OffsetFetchEntry",
    "OffsetsLog",
    "SyncResult",
    "subscribed_topics",
]

log = logging.getLogger("mafka.group.coordinator")

UNKNOWN_MEMBER_ID = ""
NO_GENERATION = -1
INVALID_OFFSET = -1
#: How many replaced static member ids a group remembers (to fence them, see ``_fenced``).
_REPLACED_STATIC_KEPT = 64
#: Kafka's ``GroupCoordinator.NewMemberJoinTimeoutMs``: a new member's join expires after 5 min.
NEW_MEMBER_JOIN_TIMEOUT_MS = 300_000


class OffsetsLog(Protocol):
    def append(
        self,
        partition: int,
        records: list[tuple[bytes, bytes | None]],
        done: Callable[[int, int | None], None],
        *,
        producer_id: int = -1,
        producer_epoch: int = -1,
    ) -> None:
        """Append ``(key, value)`` records to ``__consumer_offsets``-``partition``
        with acks=all; later call ``done(error_code, base_offset)``.

        With ``producer_id >= 0`` the records form one *transactional* batch of that
        producer and epoch (a TxnOffsetCommit); the producer's epoch is fenced as for
        any of its batches, its sequence is not checked (Kafka's ``AppendOrigin.Coordinator``).
        """


@dataclass(frozen=True)
class CoordinatorConfig:
    offsets_partitions: int = 50
    min_session_timeout_ms: int = 6000
    max_session_timeout_ms: int = 1_800_000
    initial_rebalance_delay_ms: int = 3000
    max_size: int = 2**31 - 1
    offset_metadata_max_bytes: int = 4096
    offsets_retention_ms: int = 7 * 24 * 3600 * 1000


@dataclass(frozen=True)
class JoinResult:
    error: int
    member_id: str = UNKNOWN_MEMBER_ID
    generation_id: int = NO_GENERATION
    protocol_type: str | None = None
    protocol_name: str | None = None
    leader_id: str = ""
    #: (member id, group instance id, metadata) — only the leader gets them.
    members: list[tuple[str, str | None, bytes]] = field(default_factory=list)


@dataclass(frozen=True)
class SyncResult:
    error: int
    assignment: bytes = b""
    protocol_type: str | None = None
    protocol_name: str | None = None


@dataclass(frozen=True)
class MemberSummary:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True)
class GroupSummary:
    state: str
    protocol_type: str
    protocol: str
    members: list[MemberSummary]


@dataclass(frozen=True)
class GroupOverview:
    group_id: str
    protocol_type: str
    state: str


@dataclass(frozen=True)
class OffsetFetchEntry:
    offset: int
    leader_epoch: int
    metadata: str
    error: int


DEAD_SUMMARY = GroupSummary("Dead", "", "", [])
#: Kafka's ``GroupCoordinator.EmptyGroup``: what DescribeGroups carries beside an error.
EMPTY_SUMMARY = GroupSummary("", "", "", [])

JoinCallback = Callable[[JoinResult], None]
SyncCallback = Callable[[SyncResult], None]


@dataclass(eq=False)
class _Entry:
    """A group and what the coordinator keeps beside it: parked calls and timers."""

    group: GroupMetadata
    partition: int
    join_callbacks: dict[str, JoinCallback] = field(default_factory=dict)
    sync_callbacks: dict[str, SyncCallback] = field(default_factory=dict)
    heartbeat_timers: dict[str, TimerHandle] = field(default_factory=dict)
    pending_timers: dict[str, TimerHandle] = field(default_factory=dict)
    join_timer: TimerHandle | None = None
    #: member ids replaced by a newer instance of the same static member → its group.instance.id
    #: (bounded): requests that carry no instance id (OffsetCommit v3) are still told FENCED.
    replaced_static: dict[str, str] = field(default_factory=dict)
    #: Set while an initial (delayed) join is scheduled: the rebalance time still allowed.
    initial_remaining_ms: int | None = None


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


class GroupCoordinator:
    """One broker's group coordinator (see the module docstring for the contract)."""

    def __init__(
        self,
        config: CoordinatorConfig,
        clock: Callable[[], int],
        timers: Timers,
        offsets_log: OffsetsLog,
    ) -> None:
        self.config = config
        self._clock = clock
        self._timers = timers
        self._log = offsets_log
        self._groups: dict[str, _Entry] = {}
        self._stores: dict[int, OffsetStore] = {}
        self._epochs: dict[int, int] = {}
        #: partition → the leader epoch its running load started at
        self._loading: dict[int, int] = {}
        self._owned: set[int] = set()
        #: partition → transaction markers (producer id, commit) written while it loaded:
        #: applied once the load completes (Kafka runs both on one scheduler thread).
        self._deferred_completions: dict[int, list[tuple[int, bool]]] = {}
        self.active = True

    # ------------------------------------------------------------------ ownership

    def partition_for(self, group_id: str) -> int:
        return offsets_partition_for(group_id, self.config.offsets_partitions)

    def owned_partitions(self) -> set[int]:
        return set(self._owned)

    def loading_partitions(self) -> set[int]:
        return set(self._loading)

    def is_loading(self) -> bool:
        return bool(self._loading)

    def on_elected(self, partition: int, epoch: int) -> bool:
        """This broker leads ``partition`` at ``epoch``. True if a load must now run
        (the caller reads the partition and calls :meth:`complete_load`)."""
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

    def complete_load(self, partition: int, epoch: int, records: Iterable[LoadItem]) -> bool:
        """Replay ``__consumer_offsets``-``partition`` (log order) and start serving it.

        ``records`` are :class:`~mafka.group.offsets.LogRecord` and
        :class:`~mafka.group.offsets.TxnMarker` items (a bare ``(key, value)`` is a plain
        record); see :meth:`OffsetStore.load`. Transaction markers reported by
        :meth:`complete_transaction` during the load are applied after it.
        False (and nothing changes) if leadership moved on since :meth:`on_elected`.
        """
        if self._loading.get(partition) != epoch:
            return False
        store = OffsetStore()
        values = store.load(records)
        now = self._clock()
        self._stores[partition] = store
        for group_id in sorted(set(values) | set(store.groups)):
            entry = _Entry(self._group_from_value(group_id, values.get(group_id), now), partition)
            old = self._groups.get(group_id)
            if old is not None:
                self._unload_entry(old)
            self._groups[group_id] = entry
            if len(entry.group.members) > self.config.max_size:
                # Kafka's onGroupLoaded: let the members of an over-capacity group rejoin
                # (the last ones to rejoin are refused) and commit meanwhile.
                self._prepare_rebalance(entry, f"Freshly-loaded group is over capacity ({self.config.max_size})")
            for member in entry.group.all_member_metadata():
                self._schedule_heartbeat(entry, member)
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

    def on_resigned(self, partition: int, epoch: int | None = None) -> None:
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
            self._unload(partition)

    def shutdown(self) -> None:
        self.active = False
        for partition in list(self._owned):
            self._owned.discard(partition)
            self._unload(partition)
        self._loading.clear()
        self._deferred_completions.clear()

    def _unload(self, partition: int) -> None:
        for group_id, entry in list(self._groups.items()):
            if entry.partition == partition:
                del self._groups[group_id]
                self._unload_entry(entry)
        self._stores.pop(partition, None)
        log.debug("Unloaded groups of __consumer_offsets-%d", partition)

    def _unload_entry(self, entry: _Entry) -> None:
        group = entry.group
        previous = group.state
        group.state = GroupState.DEAD
        self._cancel_join_timer(entry)
        for timer in [*entry.heartbeat_timers.values(), *entry.pending_timers.values()]:
            timer.cancel()
        entry.heartbeat_timers.clear()
        entry.pending_timers.clear()
        if previous is GroupState.PREPARING_REBALANCE:
            for member in group.all_member_metadata():
                self._invoke_join(entry, member, JoinResult(ErrorCode.NOT_COORDINATOR, member.member_id))
        elif previous in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            for member in group.all_member_metadata():
                self._invoke_sync(entry, member, SyncResult(ErrorCode.NOT_COORDINATOR))

    def _group_from_value(self, group_id: str, value: GroupMetadataValue | None, now: int) -> GroupMetadata:
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

    # ------------------------------------------------------------------ validation

    def _status_error(self, group_id: str | None, allow_empty_id: bool = False) -> int | None:
        """Kafka's ``validateGroupStatus``."""
        if group_id is None or (not group_id and not allow_empty_id):
            return ErrorCode.INVALID_GROUP_ID
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        partition = self.partition_for(group_id)
        if partition in self._loading:
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if partition not in self._owned:
            return ErrorCode.NOT_COORDINATOR
        return None

    # ------------------------------------------------------------------ JoinGroup

    def join_group(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        require_known_member_id: bool,
        client_id: str,
        client_host: str,
        rebalance_timeout_ms: int,
        session_timeout_ms: int,
        protocol_type: str,
        protocols: Protocols,
        respond: JoinCallback,
    ) -> None:
        error = self._status_error(group_id)
        if error is not None:
            return respond(JoinResult(error, member_id))
        if not (self.config.min_session_timeout_ms <= session_timeout_ms <= self.config.max_session_timeout_ms):
            return respond(JoinResult(ErrorCode.INVALID_SESSION_TIMEOUT, member_id))
        unknown = member_id == UNKNOWN_MEMBER_ID
        entry = self._groups.get(group_id)
        if entry is None:
            if not unknown:
                return respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
            entry = self._add_group(group_id)
        group = entry.group
        args = (client_id, client_host, rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols)
        if not self._accepts_joining_member(group, member_id):
            if group.has(member_id):
                # Kafka drops a known member that rejoins too late into a full group.
                self._cancel_heartbeat(entry, member_id)
                group.remove(member_id)
            respond(JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER_ID))
        elif unknown:
            self._join_unknown(entry, group_instance_id, require_known_member_id, args, respond)
        else:
            self._join_known(entry, member_id, group_instance_id, args, respond)
        if group.state is GroupState.PREPARING_REBALANCE:
            self._check_join(entry)

    def _accepts_joining_member(self, group: GroupMetadata, member_id: str) -> bool:
        """Kafka's ``acceptJoiningMember``: while rebalancing, count the members that
        already rejoined (so the last ones to rejoin a shrunken group are kicked out);
        otherwise existing members are accepted and new ones up to the max size."""
        if group.state in (GroupState.EMPTY, GroupState.DEAD):
            return True
        if group.state is GroupState.PREPARING_REBALANCE:
            if group.has(member_id) and group.get(member_id).awaiting_join:
                return True
            return group.num_awaiting_join() < self.config.max_size
        return group.has(member_id) or len(group.members) < self.config.max_size

    def _add_group(self, group_id: str) -> _Entry:
        entry = _Entry(
            GroupMetadata(group_id, current_state_timestamp_ms=self._clock()),
            self.partition_for(group_id),
        )
        self._groups[group_id] = entry
        return entry

    def _join_unknown(self, entry, group_instance_id, require_known, args, respond) -> None:
        group = entry.group
        client_id, _, _, session_timeout_ms, protocol_type, protocols = args
        if group.state is GroupState.DEAD:
            return respond(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        if not group.supports_protocols(protocol_type, [name for name, _ in protocols]):
            return respond(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL))
        new_id = new_member_id(client_id, group_instance_id)
        if group_instance_id is not None:
            old_id = group.current_static_member_id(group_instance_id)
            if old_id is not None:
                log.info(
                    "Static member %s of group %s rejoins in %s; replacing member %s",
                    group_instance_id, group.group_id, group.state, old_id,
                )
                self._update_static_member(entry, group_instance_id, old_id, new_id, protocols, respond)
            else:
                self._add_member_and_rebalance(entry, new_id, group_instance_id, args, respond)
        elif require_known:
            # KIP-394: hand out the id and wait for the member to come back with it.
            group.add_pending_member(new_id)
            self._schedule_pending_expiry(entry, new_id, session_timeout_ms)
            respond(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, new_id))
        else:
            self._add_member_and_rebalance(entry, new_id, None, args, respond)

    def _join_known(self, entry, member_id, group_instance_id, args, respond) -> None:
        group = entry.group
        _, _, _, _, protocol_type, protocols = args
        if group.state is GroupState.DEAD:
            return respond(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id))
        if not group.supports_protocols(protocol_type, [name for name, _ in protocols]):
            return respond(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id))
        if group.is_pending_member(member_id):
            if group_instance_id is not None:
                return respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
            return self._add_member_and_rebalance(entry, member_id, None, args, respond)
        if self._fenced(entry, member_id, group_instance_id):
            return respond(JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id))
        instance_unknown = group_instance_id is not None and not group.has_static_member(group_instance_id)
        if not group.has(member_id) or instance_unknown:
            return respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
        member = group.get(member_id)
        state = group.state
        if state is GroupState.PREPARING_REBALANCE:
            self._update_member_and_rebalance(entry, member, protocols, respond)
        elif state is GroupState.COMPLETING_REBALANCE:
            if member.matches(protocols):
                # The member lost the JoinGroup response: give it this generation again.
                respond(self._join_result(group, member))
            else:
                self._update_member_and_rebalance(entry, member, protocols, respond)
        elif state is GroupState.STABLE:
            if group.is_leader(member_id) or not member.matches(protocols):
                self._update_member_and_rebalance(entry, member, protocols, respond)
            else:
                respond(self._join_result(group, member, with_members=False))
        else:  # Empty: the member must reset its generation and rejoin
            respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))

    def _join_result(self, group: GroupMetadata, member: MemberMetadata, with_members: bool = True) -> JoinResult:
        members = group.current_member_metadata() if with_members and group.is_leader(member.member_id) else []
        return JoinResult(
            ErrorCode.NONE,
            member.member_id,
            group.generation_id,
            group.protocol_type,
            group.protocol_name,
            group.leader_id or "",
            members,
        )

    def _add_member_and_rebalance(self, entry: _Entry, member_id: str, group_instance_id, args, respond) -> None:
        group = entry.group
        client_id, client_host, rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols = args
        member = MemberMetadata(
            member_id=member_id,
            group_instance_id=group_instance_id,
            client_id=client_id,
            client_host=client_host,
            rebalance_timeout_ms=rebalance_timeout_ms,
            session_timeout_ms=session_timeout_ms,
            protocol_type=protocol_type,
            supported_protocols=list(protocols),
            is_new=True,
        )
        if group.state is GroupState.PREPARING_REBALANCE and group.generation_id == 0:
            group.new_member_added = True
        self._cancel_pending_expiry(entry, member_id)
        group.add(member)
        self._park_join(entry, member, respond)
        # A new member cannot heartbeat yet; it gets Kafka's 5 minutes to complete the join.
        self._schedule_heartbeat(entry, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self._maybe_prepare_rebalance(entry, f"Adding new member {member_id} with group instance id {group_instance_id}")

    def _update_member_and_rebalance(self, entry: _Entry, member: MemberMetadata, protocols: Protocols, respond) -> None:
        entry.group.update_member(member, protocols)
        self._park_join(entry, member, respond)
        self._maybe_prepare_rebalance(entry, f"Updating metadata for member {member.member_id}")

    def _fenced(self, entry: _Entry, member_id: str, group_instance_id: str | None) -> bool:
        """Kafka's ``isStaticMemberFenced``, plus: a member id replaced by a newer instance of
        its static member is fenced even when the request carries no instance id."""
        group = entry.group
        if group.is_static_member_fenced(member_id, group_instance_id):
            return True
        return member_id not in group.members and member_id in entry.replaced_static

    def _note_replaced(self, entry: _Entry, old_id: str, instance_id: str) -> None:
        entry.replaced_static[old_id] = instance_id
        while len(entry.replaced_static) > _REPLACED_STATIC_KEPT:
            del entry.replaced_static[next(iter(entry.replaced_static))]

    def _update_static_member(self, entry: _Entry, instance_id: str, old_id: str, new_id: str,
                              protocols: Protocols, respond: JoinCallback) -> None:
        group = entry.group
        current_leader = group.leader_id or ""
        old_member = group.get(old_id)
        self._invoke_join(entry, old_member, JoinResult(ErrorCode.FENCED_INSTANCE_ID, old_id))
        self._invoke_sync(entry, old_member, SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        self._cancel_heartbeat(entry, old_id)
        member = group.replace_static_member(instance_id, old_id, new_id)
        self._note_replaced(entry, old_id, instance_id)
        self._schedule_heartbeat(entry, member)
        old_protocols = list(member.supported_protocols)
        group.update_member(member, protocols)
        self._park_join(entry, member, respond)
        state = group.state
        if state is GroupState.STABLE:
            if group.protocol_name == group.select_protocol():
                # Same protocol: persist the new member id, keep generation and assignment.
                assignment = {m.member_id: m.assignment for m in group.all_member_metadata()}

                def stored(error: int) -> None:
                    if group.members.get(new_id) is not member:
                        # A newer instance replaced this one meanwhile (and fenced its
                        # join); that replacement answers for itself.
                        return
                    if error != ErrorCode.NONE:
                        log.warning("Failed to persist static member %s of group %s: %s",
                                    instance_id, group.group_id, ErrorCode(error).name)
                        group.update_member(member, old_protocols)
                        self._join_callbacks_drop(entry, member)
                        self._cancel_heartbeat(entry, new_id)
                        restored = group.replace_static_member(instance_id, new_id, old_id)
                        entry.replaced_static.pop(old_id, None)
                        self._schedule_heartbeat(entry, restored)
                        respond(JoinResult(error, UNKNOWN_MEMBER_ID, group.generation_id, group.protocol_type,
                                           group.protocol_name, current_leader))
                    else:
                        # The old leader id is returned on purpose: the member must not
                        # think it leads and recompute assignments a Stable group won't send.
                        self._invoke_join(entry, member, JoinResult(
                            ErrorCode.NONE, new_id, group.generation_id, group.protocol_type,
                            group.protocol_name, current_leader))

                self._store_group(entry, assignment, stored)
            else:
                self._maybe_prepare_rebalance(entry, f"Static member {new_id} changed the selected protocol")
        elif state is GroupState.COMPLETING_REBALANCE:
            self._prepare_rebalance(entry, f"Updating metadata for static member {new_id} with instance id {instance_id}")

    # ------------------------------------------------------------------ rebalance

    def _maybe_prepare_rebalance(self, entry: _Entry, reason: str) -> None:
        if entry.group.can_rebalance():
            self._prepare_rebalance(entry, reason)

    def _prepare_rebalance(self, entry: _Entry, reason: str) -> None:
        group = entry.group
        if group.state is GroupState.COMPLETING_REBALANCE:
            self._reset_and_propagate_assignment_error(entry, ErrorCode.REBALANCE_IN_PROGRESS)
        was_empty = group.state is GroupState.EMPTY
        group.transition_to(GroupState.PREPARING_REBALANCE, self._clock())
        log.info("Preparing to rebalance group %s in state PreparingRebalance with old generation %d (reason: %s)",
                 group.group_id, group.generation_id, reason)
        self._cancel_join_timer(entry)
        if was_empty:
            delay = self.config.initial_rebalance_delay_ms
            remaining = max(group.rebalance_timeout_ms() - delay, 0)
            self._schedule_initial_join(entry, delay, remaining)
        else:
            entry.initial_remaining_ms = None
            entry.join_timer = self._timers.call_later(
                group.rebalance_timeout_ms(), lambda: self._join_expired(entry)
            )
            self._check_join(entry)

    def _schedule_initial_join(self, entry: _Entry, delay_ms: int, remaining_ms: int) -> None:
        entry.initial_remaining_ms = remaining_ms

        def fire() -> None:
            entry.join_timer = None
            group = entry.group
            if group.state is not GroupState.PREPARING_REBALANCE or self._groups.get(group.group_id) is not entry:
                return
            if group.new_member_added and remaining_ms != 0:
                group.new_member_added = False
                delay = min(self.config.initial_rebalance_delay_ms, remaining_ms)
                self._schedule_initial_join(entry, delay, max(remaining_ms - delay_ms, 0))
            else:
                entry.initial_remaining_ms = None
                self._complete_join(entry)

        entry.join_timer = self._timers.call_later(delay_ms, fire)

    def _check_join(self, entry: _Entry) -> None:
        """A DelayedJoin completes as soon as every member has rejoined (the initial delay never does)."""
        group = entry.group
        if (
            group.state is GroupState.PREPARING_REBALANCE
            and entry.initial_remaining_ms is None
            and entry.join_timer is not None
            and group.has_all_members_joined()
        ):
            self._cancel_join_timer(entry)
            self._complete_join(entry)

    def _join_expired(self, entry: _Entry) -> None:
        entry.join_timer = None
        if entry.group.state is GroupState.PREPARING_REBALANCE and self._groups.get(entry.group.group_id) is entry:
            self._complete_join(entry)

    def _cancel_join_timer(self, entry: _Entry) -> None:
        if entry.join_timer is not None:
            entry.join_timer.cancel()
            entry.join_timer = None
        entry.initial_remaining_ms = None

    def _complete_join(self, entry: _Entry) -> None:
        """Kafka's ``onCompleteJoin``."""
        group = entry.group
        for member in group.not_yet_rejoined_members():
            if not member.is_static_member:
                log.info("Member %s of group %s did not rejoin; removing it", member.member_id, group.group_id)
                self._cancel_heartbeat(entry, member.member_id)
                group.remove(member.member_id)
        if group.state is GroupState.DEAD:
            return
        if not group.maybe_elect_new_joined_leader() and group.members:
            log.error("Group %s could not complete rebalance because no members rejoined", group.group_id)
            entry.join_timer = self._timers.call_later(
                group.rebalance_timeout_ms(), lambda: self._join_expired(entry)
            )
            return
        group.init_next_generation(self._clock())
        if group.state is GroupState.EMPTY:
            log.info("Group %s with generation %d is now empty", group.group_id, group.generation_id)

            def stored(error: int) -> None:
                if error != ErrorCode.NONE:
                    log.warning("Failed to write empty metadata for group %s: %s", group.group_id, ErrorCode(error).name)

            self._store_group(entry, {}, stored)
            return
        log.info("Stabilized group %s generation %d with %d members", group.group_id,
                 group.generation_id, len(group.members))
        for member in group.all_member_metadata():
            self._invoke_join(entry, member, self._join_result(group, member))
            self._schedule_heartbeat(entry, member)
            member.is_new = False

    def _reset_and_propagate_assignment_error(self, entry: _Entry, error: int) -> None:
        for member in entry.group.all_member_metadata():
            member.assignment = b""
        self._propagate_assignment(entry, error)

    def _propagate_assignment(self, entry: _Entry, error: int) -> None:
        group = entry.group
        ok = error == ErrorCode.NONE
        for member in group.all_member_metadata():
            result = SyncResult(error, member.assignment, group.protocol_type if ok else None,
                                group.protocol_name if ok else None)
            if self._invoke_sync(entry, member, result):
                # Expiry was ignored while the member waited for its assignment; restart it.
                self._schedule_heartbeat(entry, member)

    # ------------------------------------------------------------------ parked calls

    def _park_join(self, entry: _Entry, member: MemberMetadata, respond: JoinCallback) -> None:
        entry.join_callbacks[member.member_id] = respond
        member.awaiting_join = True

    def _join_callbacks_drop(self, entry: _Entry, member: MemberMetadata) -> None:
        entry.join_callbacks.pop(member.member_id, None)
        member.awaiting_join = False

    def _invoke_join(self, entry: _Entry, member: MemberMetadata, result: JoinResult) -> bool:
        callback = entry.join_callbacks.pop(member.member_id, None)
        member.awaiting_join = False
        if callback is None:
            return False
        callback(result)
        return True

    def _invoke_sync(self, entry: _Entry, member: MemberMetadata, result: SyncResult) -> bool:
        callback = entry.sync_callbacks.pop(member.member_id, None)
        member.awaiting_sync = False
        if callback is None:
            return False
        callback(result)
        return True

    # ------------------------------------------------------------------ heartbeats and expiry

    def _schedule_heartbeat(self, entry: _Entry, member: MemberMetadata, timeout_ms: int | None = None) -> None:
        """Kafka's ``completeAndScheduleNextHeartbeatExpiration``."""
        self._cancel_heartbeat(entry, member.member_id)
        member.heartbeat(self._clock())
        member.heartbeat_satisfied = False
        delay = member.session_timeout_ms if timeout_ms is None else timeout_ms
        member_id = member.member_id
        entry.heartbeat_timers[member_id] = self._timers.call_later(
            delay, lambda: self._heartbeat_expired(entry, member_id, member)
        )

    def _cancel_heartbeat(self, entry: _Entry, member_id: str) -> None:
        timer = entry.heartbeat_timers.pop(member_id, None)
        if timer is not None:
            timer.cancel()

    def _heartbeat_expired(self, entry: _Entry, member_id: str, member: MemberMetadata) -> None:
        if entry.heartbeat_timers.get(member_id) is None:
            return
        del entry.heartbeat_timers[member_id]
        group = entry.group
        if group.members.get(member_id) is not member or member.has_satisfied_heartbeat():
            return
        log.info("Member %s in group %s has failed, removing it from the group", member_id, group.group_id)
        self._remove_member_and_update_group(entry, member, f"removing member {member_id} on heartbeat expiration")

    def _schedule_pending_expiry(self, entry: _Entry, member_id: str, timeout_ms: int) -> None:
        self._cancel_pending_expiry(entry, member_id)

        def expire() -> None:
            entry.pending_timers.pop(member_id, None)
            if entry.group.is_pending_member(member_id):
                log.info("Pending member %s in group %s has been removed after session timeout expiration",
                         member_id, entry.group.group_id)
                self._remove_pending_member(entry, member_id)

        entry.pending_timers[member_id] = self._timers.call_later(timeout_ms, expire)

    def _cancel_pending_expiry(self, entry: _Entry, member_id: str) -> None:
        timer = entry.pending_timers.pop(member_id, None)
        if timer is not None:
            timer.cancel()

    def _remove_pending_member(self, entry: _Entry, member_id: str) -> None:
        self._cancel_pending_expiry(entry, member_id)
        entry.group.remove_pending_member(member_id)
        if entry.group.state is GroupState.PREPARING_REBALANCE:
            self._check_join(entry)

    def _remove_member_and_update_group(self, entry: _Entry, member: MemberMetadata, reason: str) -> None:
        group = entry.group
        # A new member may time out with its JoinGroup still parked: tell it to start over.
        self._invoke_join(entry, member, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, UNKNOWN_MEMBER_ID))
        self._invoke_sync(entry, member, SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        self._cancel_heartbeat(entry, member.member_id)
        group.remove(member.member_id)
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self._maybe_prepare_rebalance(entry, reason)
        elif group.state is GroupState.PREPARING_REBALANCE:
            self._check_join(entry)

    # ------------------------------------------------------------------ SyncGroup

    def sync_group(
        self,
        group_id: str,
        generation_id: int,
        member_id: str,
        group_instance_id: str | None,
        assignments: Mapping[str, bytes],
        respond: SyncCallback,
    ) -> None:
        error = self._status_error(group_id)
        if error is not None:
            # Loading: the rebalance state is lost, so have the member rejoin (older
            # clients do not expect COORDINATOR_LOAD_IN_PROGRESS here), as Kafka does.
            if error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                error = ErrorCode.REBALANCE_IN_PROGRESS
            return respond(SyncResult(error))
        entry = self._groups.get(group_id)
        if entry is None:
            return respond(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        group = entry.group
        if group.state is GroupState.DEAD:
            return respond(SyncResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        if self._fenced(entry, member_id, group_instance_id):
            return respond(SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        if not group.has(member_id):
            return respond(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        if generation_id != group.generation_id:
            return respond(SyncResult(ErrorCode.ILLEGAL_GENERATION))
        state = group.state
        if state is GroupState.EMPTY:
            return respond(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        if state is GroupState.PREPARING_REBALANCE:
            return respond(SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
        member = group.get(member_id)
        if state is GroupState.STABLE:
            respond(SyncResult(ErrorCode.NONE, member.assignment, group.protocol_type, group.protocol_name))
            self._schedule_heartbeat(entry, member)
            return
        # CompletingRebalance: park until the leader's assignment is stored.
        entry.sync_callbacks[member_id] = respond
        member.awaiting_sync = True
        if not group.is_leader(member_id):
            return
        log.info("Assignment received from leader %s for group %s for generation %d",
                 member_id, group_id, group.generation_id)
        assignment = {mid: bytes(assignments.get(mid, b"")) for mid in group.all_members()}

        def stored(error: int) -> None:
            # Another member may have joined meanwhile: act only if nothing moved on.
            if group.state is not GroupState.COMPLETING_REBALANCE or generation_id != group.generation_id:
                return
            if error != ErrorCode.NONE:
                self._reset_and_propagate_assignment_error(entry, error)
                self._maybe_prepare_rebalance(entry, f"error when storing group assignment during SyncGroup (member: {member_id})")
            else:
                for m in group.all_member_metadata():
                    m.assignment = assignment.get(m.member_id, b"")
                self._propagate_assignment(entry, ErrorCode.NONE)
                group.transition_to(GroupState.STABLE, self._clock())

        self._store_group(entry, assignment, stored)

    # ------------------------------------------------------------------ Heartbeat / LeaveGroup

    def heartbeat(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> int:
        error = self._status_error(group_id)
        if error is not None:
            # A loading coordinator answers blindly, as Kafka does.
            return ErrorCode.NONE if error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS else error
        entry = self._groups.get(group_id)
        if entry is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        group = entry.group
        if group.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if self._fenced(entry, member_id, group_instance_id):
            return ErrorCode.FENCED_INSTANCE_ID
        if not group.has(member_id):
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if group.state is GroupState.EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._schedule_heartbeat(entry, group.get(member_id))
        if group.state is GroupState.PREPARING_REBALANCE:
            return ErrorCode.REBALANCE_IN_PROGRESS
        return ErrorCode.NONE

    def leave_group(
        self, group_id: str, leaving: list[tuple[str, str | None]]
    ) -> tuple[int, list[tuple[str, str | None, int]]]:
        """Remove members given as (member id, group instance id); returns the top-level
        error and one error per member."""
        error = self._status_error(group_id)
        if error is not None:
            return error, []
        entry = self._groups.get(group_id)
        if entry is None:
            return ErrorCode.NONE, [(m, i, ErrorCode.UNKNOWN_MEMBER_ID) for m, i in leaving]
        group = entry.group
        if group.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        results = []
        for member_id, instance_id in leaving:
            if member_id == UNKNOWN_MEMBER_ID:
                # Administrative removal by group instance id.
                current = group.current_static_member_id(instance_id) if instance_id is not None else None
                if current is None:
                    results.append((member_id, instance_id, ErrorCode.UNKNOWN_MEMBER_ID))
                    continue
                self._remove_current_member(entry, current)
                results.append((member_id, instance_id, ErrorCode.NONE))
            elif group.is_pending_member(member_id):
                self._remove_pending_member(entry, member_id)
                results.append((member_id, instance_id, ErrorCode.NONE))
            elif self._fenced(entry, member_id, instance_id):
                results.append((member_id, instance_id, ErrorCode.FENCED_INSTANCE_ID))
            elif group.has(member_id):
                self._remove_current_member(entry, member_id)
                results.append((member_id, instance_id, ErrorCode.NONE))
            else:
                results.append((member_id, instance_id, ErrorCode.UNKNOWN_MEMBER_ID))
        return ErrorCode.NONE, results

    def _remove_current_member(self, entry: _Entry, member_id: str) -> None:
        member = entry.group.get(member_id)
        member.is_leaving = True
        log.info("Member %s is leaving group %s", member_id, entry.group.group_id)
        self._remove_member_and_update_group(entry, member, f"removing member {member_id} on LeaveGroup")

    # ------------------------------------------------------------------ offsets

    def commit_offsets(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        offsets: Mapping[TopicPartitionTuple, OffsetAndMetadata],
        respond: Callable[[dict[TopicPartitionTuple, int]], None],
    ) -> None:
        def all_(error: int) -> None:
            respond({tp: error for tp in offsets})

        error = self._status_error(group_id, allow_empty_id=True)
        if error is not None:
            return all_(error)
        entry = self._groups.get(group_id)
        if entry is None:
            if generation_id >= 0:
                # A commit from an older generation of a group that no longer exists.
                return all_(ErrorCode.ILLEGAL_GENERATION)
            # The group uses Kafka only to store offsets (assign() consumers).
            entry = self._add_group(group_id)
        group = entry.group
        if group.state is GroupState.DEAD:
            return all_(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if self._fenced(entry, member_id, group_instance_id):
            return all_(ErrorCode.FENCED_INSTANCE_ID)
        if generation_id < 0 and group.state is GroupState.EMPTY:
            return self._store_offsets(entry, offsets, respond)
        if not group.has(member_id):
            return all_(ErrorCode.UNKNOWN_MEMBER_ID)
        if generation_id != group.generation_id:
            return all_(ErrorCode.ILLEGAL_GENERATION)
        if group.state is GroupState.COMPLETING_REBALANCE:
            return all_(ErrorCode.REBALANCE_IN_PROGRESS)
        # Stable or PreparingRebalance: a commit during a rebalance is still welcome.
        self._schedule_heartbeat(entry, group.get(member_id))
        self._store_offsets(entry, offsets, respond)

    def _store_offsets(self, entry: _Entry, offsets: Mapping[TopicPartitionTuple, OffsetAndMetadata],
                       respond: Callable[[dict[TopicPartitionTuple, int]], None],
                       producer_id: int = -1, producer_epoch: int = -1) -> None:
        """Kafka's ``storeOffsets``: a transactional commit when ``producer_id >= 0``."""
        limit = self.config.offset_metadata_max_bytes
        # Kafka compares Java's String.length(): UTF-16 code units, not UTF-8 bytes.
        valid = {
            tp: om for tp, om in offsets.items()
            if om.metadata is None or len(om.metadata.encode("utf-16-le", "surrogatepass")) // 2 <= limit
        }
        results = {tp: ErrorCode.OFFSET_METADATA_TOO_LARGE for tp in offsets if tp not in valid}
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
                live = self._groups.get(group_id) is entry
                if transactional:
                    store.complete_txn_commit(group_id, producer_id, valid, ok and live, base_offset)
                else:
                    store.complete_commit(group_id, valid, ok and live, base_offset)
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

    def commit_transactional_offsets(
        self,
        group_id: str,
        producer_id: int,
        producer_epoch: int,
        member_id: str,
        generation_id: int,
        group_instance_id: str | None,
        offsets: Mapping[TopicPartitionTuple, OffsetAndMetadata],
        respond: Callable[[dict[TopicPartitionTuple, int]], None],
    ) -> None:
        """TxnOffsetCommit (Kafka 2.8's ``handleTxnCommitOffsets`` / ``doTxnCommitOffsets``):
        ``respond({partition: error})`` once the offsets are appended as a transactional
        batch of ``producer_id``/``producer_epoch``; they stay pending (see the module
        docstring) until :meth:`complete_transaction`.

        An unknown group is created (Empty). KIP-447 fencing applies only to what the
        request carries (v3): a ``member_id`` other than "" must be a member
        (UNKNOWN_MEMBER_ID), a ``generation_id`` >= 0 must be the group's
        (ILLEGAL_GENERATION), a replaced static instance is FENCED_INSTANCE_ID. Unlike an
        OffsetCommit no group state is refused and no heartbeat is completed. The
        producer epoch is fenced by the offsets partition's producer state (the append
        fails with INVALID_PRODUCER_EPOCH).
        """
        def all_(error: int) -> None:
            respond({tp: error for tp in offsets})

        error = self._status_error(group_id)  # unlike OffsetCommit, "" is an invalid group id
        if error is not None:
            return all_(error)
        entry = self._groups.get(group_id)
        if entry is None:
            entry = self._add_group(group_id)
        group = entry.group
        if group.state is GroupState.DEAD:
            return all_(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if self._fenced(entry, member_id, group_instance_id):
            return all_(ErrorCode.FENCED_INSTANCE_ID)
        if member_id != UNKNOWN_MEMBER_ID and not group.has(member_id):
            return all_(ErrorCode.UNKNOWN_MEMBER_ID)
        if generation_id >= 0 and generation_id != group.generation_id:
            return all_(ErrorCode.ILLEGAL_GENERATION)
        self._store_offsets(entry, offsets, respond, producer_id, producer_epoch)

    def complete_transaction(self, offsets_partition: int, producer_id: int, commit: bool) -> None:
        """A COMMIT (``commit``) or ABORT marker of ``producer_id`` was written to
        ``__consumer_offsets``-``offsets_partition`` (Kafka's ``scheduleHandleTxnCompletion``
        / ``handleTxnCompletion``): that producer's pending offsets of the partition's
        groups become committed (unless a commit from a later batch is already stored),
        or are dropped. While the partition loads the marker is applied after the load;
        on a partition this coordinator does not own it is ignored (the new owner replays
        the marker from the log).
        """
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

    def fetch_offsets(
        self, group_id: str, partitions: list[TopicPartitionTuple] | None, require_stable: bool = False
    ) -> tuple[int, dict[TopicPartitionTuple, OffsetFetchEntry]]:
        """Committed offsets of ``partitions`` (None: every partition the group has).

        With ``require_stable`` (OffsetFetch v7+, KIP-447) a partition with a commit in
        flight or in an open transaction answers UNSTABLE_OFFSET_COMMIT (Kafka's
        ``getOffsets``); without it pending transactional offsets are simply not seen.
        """
        error = self._status_error(group_id, allow_empty_id=True)
        if error is not None:
            return error, {}
        entry = self._groups.get(group_id)
        store = self._stores.get(self.partition_for(group_id))
        missing = OffsetFetchEntry(INVALID_OFFSET, -1, "", ErrorCode.NONE)
        if entry is None or entry.group.state is GroupState.DEAD or store is None:
            return ErrorCode.NONE, {tp: missing for tp in partitions or []}
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
        return ErrorCode.NONE, out

    # ------------------------------------------------------------------ admin

    def list_groups(self) -> tuple[int, list[GroupOverview]]:
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        # While a partition loads Kafka reports the error *and* the groups it already has.
        error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if self._loading else ErrorCode.NONE
        return error, [
            GroupOverview(gid, e.group.protocol_type or "", e.group.state.value)
            for gid, e in sorted(self._groups.items())
            if e.group.state is not GroupState.DEAD
        ]

    def describe_group(self, group_id: str) -> tuple[int, GroupSummary]:
        error = self._status_error(group_id, allow_empty_id=True)
        if error is not None:
            return error, EMPTY_SUMMARY
        entry = self._groups.get(group_id)
        if entry is None:
            return ErrorCode.NONE, DEAD_SUMMARY
        group = entry.group
        stable = group.state is GroupState.STABLE
        members = [
            MemberSummary(
                m.member_id, m.group_instance_id, m.client_id, m.client_host,
                m.metadata(group.protocol_name) if stable and group.protocol_name is not None else b"",
                m.assignment if stable else b"",
            )
            for m in group.all_member_metadata()
        ]
        return ErrorCode.NONE, GroupSummary(
            group.state.value, group.protocol_type or "", (group.protocol_name or "") if stable else "", members
        )

    def delete_groups(self, group_ids: list[str], respond: Callable[[dict[str, int]], None]) -> None:
        """DeleteGroups: only Empty groups go; their offsets and metadata get tombstones."""
        results: dict[str, int] = {}
        eligible: list[_Entry] = []
        for gid in dict.fromkeys(group_ids):  # a group named twice is handled once (Kafka takes a set)
            error = self._status_error(gid, allow_empty_id=True)
            if error is not None:
                results[gid] = error
                continue
            entry = self._groups.get(gid)
            if entry is None or entry.group.state is GroupState.DEAD:
                results[gid] = ErrorCode.GROUP_ID_NOT_FOUND
            elif entry.group.state is GroupState.EMPTY:
                eligible.append(entry)
            else:
                results[gid] = ErrorCode.NON_EMPTY_GROUP
        if not eligible:
            return respond(results)
        outstanding = {"n": len(eligible)}

        def one_done(gid: str, error: int) -> None:
            results[gid] = ErrorCode.NONE if error == ErrorCode.NONE else _store_error(error)
            outstanding["n"] -= 1
            if outstanding["n"] == 0:
                respond(results)

        for entry in eligible:
            gid = entry.group.group_id
            del self._groups[gid]
            self._unload_entry(entry)
            store = self._stores.get(entry.partition)
            tombstones = store.delete_group(gid) if store is not None else [(encode_key(GroupMetadataKey(gid)), None)]
            if entry.group.generation_id == 0:
                # Kafka writes no group tombstone for a group that only stored offsets.
                tombstones = [t for t in tombstones if t[0] != encode_key(GroupMetadataKey(gid))]
            if not tombstones:
                one_done(gid, ErrorCode.NONE)
                continue
            self._log.append(entry.partition, tombstones, lambda err, _o, gid=gid: one_done(gid, err))

    def delete_offsets(
        self,
        group_id: str,
        partitions: list[TopicPartitionTuple],
        respond: Callable[[int, dict[TopicPartitionTuple, int]], None],
    ) -> None:
        """OffsetDelete (KIP-496, Kafka 2.8's ``handleDeleteOffsets``): ``respond(group error,
        {partition: error})``; with a group error the partition map is empty.

        An Empty group loses the offsets of every named partition; a consumer group
        with members keeps those of the topics it subscribes to
        (GROUP_SUBSCRIBED_TO_TOPIC; every topic, if the subscriptions cannot be read)
        and loses the others; any other non-Empty group is NON_EMPTY_GROUP; an
        unknown or Dead group is GROUP_ID_NOT_FOUND. A partition without a committed
        offset is answered NONE, as in Kafka.

        As in Kafka the cache forgets the offsets at once and offset tombstones (plus
        the group's tombstone if the group is left Empty without offsets, so Dead) go
        to ``__consumer_offsets``. Unlike Kafka (which appends with acks=0 and answers
        at once), the answer waits for that append: NONE means the deletion is
        replicated and survives a coordinator failover; a failed append is the group
        error (mapped as a commit's, e.g. NOT_COORDINATOR), and the client retries.
        """
        error = self._status_error(group_id)
        if error is not None:
            return respond(error, {})
        entry = self._groups.get(group_id)
        if entry is None or entry.group.state is GroupState.DEAD:
            return respond(ErrorCode.GROUP_ID_NOT_FOUND, {})
        group = entry.group
        results: dict[TopicPartitionTuple, int] = {}
        if group.state is GroupState.EMPTY:
            eligible = list(dict.fromkeys(partitions))
        elif group.protocol_type == PROTOCOL_TYPE:
            topics = subscribed_topics(group)
            eligible = []
            for tp in dict.fromkeys(partitions):
                if topics is None or tp[0] in topics:
                    results[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
                else:
                    eligible.append(tp)
        else:
            return respond(ErrorCode.NON_EMPTY_GROUP, {})
        if not eligible:
            return respond(ErrorCode.NONE, results)
        results.update({tp: ErrorCode.NONE for tp in eligible})
        store = self._stores.get(entry.partition)
        removed = store.remove_offsets(group_id, eligible) if store is not None else {}
        tombstones: list[tuple[bytes, bytes | None]] = list(store.tombstones_for(group_id, sorted(removed))) \
            if store is not None else []
        if group.state is GroupState.EMPTY and (store is None or group_id not in store.groups):
            group.transition_to(GroupState.DEAD)
            del self._groups[group_id]
            log.info("Group %s transitioned to Dead in generation %d", group_id, group.generation_id)
            if group.generation_id > 0:
                # Generation 0: the group only stored offsets, no metadata record exists.
                tombstones.append((encode_key(GroupMetadataKey(group_id)), None))
        log.info("The following offsets of the group %s were deleted: %s. A total of %d offsets were removed.",
                 group_id, ", ".join(f"{t}-{p}" for t, p in eligible), len(removed))
        if not tombstones:
            return respond(ErrorCode.NONE, results)

        def appended(error: int, _offset: int | None) -> None:
            if error == ErrorCode.NONE:
                respond(ErrorCode.NONE, results)
            else:
                log.warning("Offset deletion of group %s failed: %s", group_id, ErrorCode(error).name)
                respond(_commit_error(error), {})

        self._log.append(entry.partition, tombstones, appended)

    def expire_offsets(self, subscribed_topics: Callable[[GroupMetadata], set[str] | None] | None = None) -> int:
        """Kafka's ``cleanupGroupMetadata``: drop offsets past ``offsets.retention.minutes``,
        and Empty groups left without offsets; write their tombstones. Returns the
        number of offsets removed."""
        now = self._clock()
        removed_total = 0
        for partition, store in list(self._stores.items()):
            if partition not in self._owned:
                continue

            def state_of(gid: str):
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
            if tombstones:
                self._log.append(partition, tombstones, _log_failed_append(partition))
        return removed_total

    # ------------------------------------------------------------------ persistence

    def _store_group(self, entry: _Entry, assignment: Mapping[str, bytes], done: Callable[[int], None]) -> None:
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


def subscribed_topics(group: GroupMetadata) -> set[str] | None:
    """The topics a consumer group's members subscribe to (Kafka's ``computeSubscribedTopics``);
    None if unknown: not the consumer protocol, no protocol chosen, or a subscription that
    cannot be read."""
    if group.protocol_type != PROTOCOL_TYPE or group.protocol_name is None:
        return None
    topics: set[str] = set()
    for member in group.all_member_metadata():
        try:
            topics.update(decode_subscription(member.metadata(group.protocol_name)).topics)
        except ValueError:
            return None
    return topics
