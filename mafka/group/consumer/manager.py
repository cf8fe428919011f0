"""The ``consumer`` groups (KIP-848) one coordinator holds: their records, timers and writes.

:class:`ConsumerGroupManager` is the consumer-group half of Kafka 4's ``GroupMetadataManager``
as it sits in a coordinator: it keeps the :class:`~mafka.group.consumer.group.ConsumerGroup`
of every group whose ``__consumer_offsets`` partition this broker leads, answers
ConsumerGroupHeartbeat by running the group's state machine and appending the records it
applied, arms one timer per group for session and rebalance timeouts, rebuilds groups from
their records when a partition is loaded, and validates the member epochs of offset commits
and fetches.  Plain Python: time from ``clock()`` (ms), delays from a
:class:`~mafka.timers.Timers`, writes through an
:class:`~mafka.group.coordinator_types.OffsetsLog`.

Contract:

* **Write before answer.**  A heartbeat's records are applied to the group at once (so the
  next request sees them, as Kafka's timeline does) and appended to the group's partition;
  the member is answered when the append completes (acks=all: replicated).  If the append
  fails, the member gets COORDINATOR_NOT_AVAILABLE or NOT_COORDINATOR (Kafka 4's
  mapping) and the group is rebuilt from the records known to be written, so memory never
  runs ahead of the log for long.  A group created by the failed write is forgotten.
* **Timers.**  One timer per group, at the group's next session or rebalance deadline;
  when it fires, expired members are fenced (their records appended like a heartbeat's).
* **Load.**  :meth:`load` replays a partition's consumer-group records (log order, Kafka's
  key types 3–8) into groups; deleted groups (tombstoned) are not kept.  Timers start at
  load time (Kafka's ``onLoaded``): every member gets a full session.
* **Offsets.**  :meth:`validate_offset_commit` / :meth:`validate_offset_fetch` are Kafka 4's
  ``ConsumerGroup.validateOffsetCommit`` / ``validateOffsetFetch`` (a classic member's epoch is
  its generation: a mismatch is ILLEGAL_GENERATION, and it may commit below v9).
* **Migration.**  A heartbeat may create a group from an upgraded classic group's records
  (``seed``); :meth:`write` writes what a classic member's request changed.  A group that an
  operation downgraded (:attr:`ConsumerGroup.converted_to_classic`) is forgotten and
  :attr:`on_downgrade` installs the classic group; the group's tombstones and the classic
  group's record are one append, and if it fails the classic group is dropped and this group
  rebuilt from its written records.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field

from mafka.errors import ErrorCode
from mafka.group.consumer.assignor_api import PartitionAssignor
from mafka.group.consumer.group import ConsumerGroup
from mafka.group.consumer.group_types import (
    ConsumerGroupConfig,
    ConsumerGroupState,
    HeartbeatRequest,
    HeartbeatResponse,
    configured_assignors,
)
from mafka.group.consumer.member import TopicInfo
from mafka.group.consumer.migration import Downgrade
from mafka.group.consumer.records import CoordinatorRecord, decode_record, encode_key, encode_record
from mafka.group.coordinator_types import OffsetsLog
from mafka.timers import TimerHandle, Timers

__all__ = ["ConsumerGroupEntry", "ConsumerGroupManager", "DowngradeHook", "append_error"]

log = logging.getLogger("mafka.group.coordinator")

_COORDINATOR_NOT_AVAILABLE = frozenset({
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.NOT_ENOUGH_REPLICAS,
    ErrorCode.NOT_ENOUGH_REPLICAS_AFTER_APPEND,
    ErrorCode.REQUEST_TIMED_OUT,
})
_NOT_COORDINATOR = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.KAFKA_STORAGE_ERROR})


def append_error(error: int) -> int:
    """Kafka 4's ``CoordinatorRuntime`` mapping of a failed ``__consumer_offsets`` write."""
    if error in _COORDINATOR_NOT_AVAILABLE:
        return ErrorCode.COORDINATOR_NOT_AVAILABLE
    if error in _NOT_COORDINATOR:
        return ErrorCode.NOT_COORDINATOR
    return ErrorCode.UNKNOWN_SERVER_ERROR


@dataclass(eq=False)
class ConsumerGroupEntry:
    """A group and what the manager keeps beside it."""

    group: ConsumerGroup
    partition: int
    #: key bytes → the last record written for it (tombstones drop the key): what a rebuild replays
    written: dict[bytes, CoordinatorRecord] = field(default_factory=dict)
    #: bumped by every rebuild: an append that completes after one replays the written records again
    rebuilds: int = 0
    timer: TimerHandle | None = None
    timer_at: int | None = None


#: ``on_downgrade(entry, downgrade) -> (classic group records, undo)``; see :attr:`ConsumerGroupManager.on_downgrade`
DowngradeHook = Callable[
    [ConsumerGroupEntry, Downgrade], tuple[list[tuple[bytes, bytes | None]], Callable[[], None]]
]


class ConsumerGroupManager:
    """The consumer groups of the ``__consumer_offsets`` partitions a coordinator leads.

    Args:
        config: the broker's ``group.consumer.*`` settings.
        clock: milliseconds now.
        timers: where the session and rebalance timers run.
        offsets_log: where records are appended.
        topics: the cluster's topics by name, as the groups see them (called per heartbeat;
            the caller caches it).
        partition_for: the ``__consumer_offsets`` partition of a group id.
    """

    def __init__(
        self,
        config: ConsumerGroupConfig,
        clock: Callable[[], int],
        timers: Timers,
        offsets_log: OffsetsLog,
        topics: Callable[[], Mapping[str, TopicInfo]],
        partition_for: Callable[[str], int],
    ) -> None:
        self.config = config
        self._clock = clock
        self._timers = timers
        self._log = offsets_log
        self._topics = topics
        self._partition_for = partition_for
        self._assignors: dict[str, PartitionAssignor] = configured_assignors(config.assignors)
        self._groups: dict[str, ConsumerGroupEntry] = {}
        #: installs the classic group a downgraded consumer group becomes (the coordinator sets it):
        #: returns the classic group's records, to write with the consumer group's tombstones, and
        #: an undo for a failed write.  Without it a downgraded group is simply gone.
        self.on_downgrade: DowngradeHook | None = None

    # ------------------------------------------------------------------ registry

    def get(self, group_id: str) -> ConsumerGroupEntry | None:
        return self._groups.get(group_id)

    def is_current(self, entry: object) -> bool:
        """*entry* is still the registered entry of its group."""
        return isinstance(entry, ConsumerGroupEntry) and self._groups.get(entry.group.group_id) is entry

    def entries(self) -> list[tuple[str, ConsumerGroupEntry]]:
        """Every group held here, by group id."""
        return sorted(self._groups.items())

    def _new_group(self, group_id: str) -> ConsumerGroup:
        return ConsumerGroup(group_id, self.config, self._assignors)

    # ------------------------------------------------------------------ load / unload

    def load(self, partition: int, records: Iterable[tuple[bytes, bytes | None]]) -> list[str]:
        """Rebuild the groups of ``partition`` from its consumer-group records (log order).

        Malformed records are logged and skipped (a newer coordinator's record type this one
        cannot read must not stop the partition from loading).  Returns the live group ids.
        """
        by_group: dict[str, list[CoordinatorRecord]] = {}
        written: dict[str, dict[bytes, CoordinatorRecord]] = {}
        for key, value in records:
            try:
                record = decode_record(key, value)
            except ValueError as e:
                log.warning("Skipping an unreadable consumer group record in __consumer_offsets-%d: %s", partition, e)
                continue
            gid = record.key.group_id
            by_group.setdefault(gid, []).append(record)
            view = written.setdefault(gid, {})
            view.pop(key, None)
            if record.value is not None:
                view[key] = record
        now = self._clock()
        loaded = []
        for gid, recs in by_group.items():
            try:
                group = ConsumerGroup.from_records(gid, recs, now, self.config, self._assignors)
            except Exception:  # noqa: BLE001 - one bad group must not stop the others loading
                log.exception("Could not rebuild consumer group %s from __consumer_offsets-%d", gid, partition)
                continue
            if group.state is ConsumerGroupState.DEAD:
                continue
            self.unload_group(gid)
            entry = ConsumerGroupEntry(group, partition, written[gid])
            self._groups[gid] = entry
            self._arm(entry)
            loaded.append(gid)
        return loaded

    def unload(self, partition: int) -> None:
        """Forget the groups of ``partition`` (leadership moved away)."""
        for gid, entry in list(self._groups.items()):
            if entry.partition == partition:
                self.unload_group(gid)

    def unload_group(self, group_id: str) -> None:
        entry = self._groups.pop(group_id, None)
        if entry is not None and entry.timer is not None:
            entry.timer.cancel()
            entry.timer = None

    def shutdown(self) -> None:
        for gid in list(self._groups):
            self.unload_group(gid)

    # ------------------------------------------------------------------ heartbeat

    def heartbeat(
        self,
        request: HeartbeatRequest,
        respond: Callable[[HeartbeatResponse], None],
        extra_records: Iterable[tuple[bytes, bytes | None]] = (),
        on_created: Callable[[], None] | None = None,
        seed: Sequence[CoordinatorRecord] = (),
        on_create_failed: Callable[[], None] | None = None,
    ) -> None:
        """ConsumerGroupHeartbeat for a group of an owned partition (the caller checked that).

        A join (epoch 0) to a group not held here creates it; any other heartbeat gets
        GROUP_ID_NOT_FOUND.  *extra_records* are appended in the same batch, before the group's
        (a converted classic group's tombstone); *seed* are the records a new group starts from
        (an upgraded classic group's, :mod:`.migration`: replayed before the heartbeat, written
        with it, each seeded member's session timer started); *on_created* runs once a new group
        is registered, *on_create_failed* if the write that created it then fails (the group is
        forgotten again).
        """
        gid = request.group_id
        entry = self._groups.get(gid)
        created = entry is None
        if entry is None:
            if request.member_epoch != 0:
                respond(HeartbeatResponse(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {gid} not found."))
                return
            group = self._new_group(gid)
            now = self._clock()
            for record in seed:
                group.replay(record)
            for member in group.members.values():
                classic = member.classic_member_metadata
                timeout = classic.session_timeout_ms if classic is not None else self.config.session_timeout_ms
                group.schedule_session_timeout(member.member_id, now + timeout)
            entry = ConsumerGroupEntry(group, self._partition_for(gid))
        result = entry.group.heartbeat(request, self._clock(), self._topics())
        if result.response.error_code != ErrorCode.NONE:
            respond(result.response)
            return
        if created:
            self._groups[gid] = entry
            if on_created is not None:
                on_created()

        def done(error: int) -> None:
            if error == ErrorCode.NONE:
                respond(result.response)
            else:
                respond(HeartbeatResponse(ErrorCode(append_error(error)), None))

        records = (*seed, *result.records) if created else result.records
        self._commit(entry, records, done, extra=extra_records, created=created, on_create_failed=on_create_failed)

    def write(self, entry: ConsumerGroupEntry, records: Sequence[CoordinatorRecord], done: Callable[[int], None]) -> None:
        """Write *records*, already applied to *entry*'s group by one of its operations (a classic
        member's JoinGroup or LeaveGroup, :mod:`.classic_members`); ``done(error)`` once appended
        (the raw append error: :func:`append_error` maps it).  Re-arms the group's timer; a group
        the operation downgraded becomes a classic group (see :attr:`on_downgrade`)."""
        self._commit(entry, records, done)

    def rearm(self, entry: ConsumerGroupEntry) -> None:
        """The group's timers changed without a record (a classic member's heartbeat or sync)."""
        if self.is_current(entry):
            self._arm(entry)

    # ------------------------------------------------------------------ timers

    def _arm(self, entry: ConsumerGroupEntry) -> None:
        """Make sure a timer fires at the group's next deadline (an early one just re-arms)."""
        deadline = entry.group.next_deadline_ms()
        if deadline is None:
            return
        if entry.timer is not None and entry.timer_at is not None and entry.timer_at <= deadline:
            return
        if entry.timer is not None:
            entry.timer.cancel()
        entry.timer_at = deadline
        entry.timer = self._timers.call_later(max(0, deadline - self._clock()), lambda: self._on_timer(entry))

    def _on_timer(self, entry: ConsumerGroupEntry) -> None:
        entry.timer = None
        entry.timer_at = None
        if not self.is_current(entry):
            return
        result = entry.group.expire(self._clock(), self._topics())
        self._commit(entry, result.records, lambda _e: None)

    # ------------------------------------------------------------------ writes

    def _commit(
        self,
        entry: ConsumerGroupEntry,
        records: Sequence[CoordinatorRecord],
        done: Callable[[int], None],
        *,
        extra: Iterable[tuple[bytes, bytes | None]] = (),
        created: bool = False,
        on_create_failed: Callable[[], None] | None = None,
    ) -> None:
        """Write *records* (applied to the group already), after *extra*; arm the group's timer."""
        encoded = list(extra) + [encode_record(r) for r in records]
        downgrade = entry.group.converted_to_classic
        if downgrade is not None and self.is_current(entry):
            self._downgrade(entry, downgrade, encoded, done)
            return
        self._arm(entry)
        if not encoded:
            done(ErrorCode.NONE)
            return
        self._write(entry, records, encoded, done, created, on_create_failed)

    def _downgrade(
        self,
        entry: ConsumerGroupEntry,
        downgrade: Downgrade,
        encoded: list[tuple[bytes, bytes | None]],
        done: Callable[[int], None],
    ) -> None:
        """The group became a classic group: forget it, let :attr:`on_downgrade` install the
        classic group, and write the group's tombstones and the classic group's record in one
        batch.  If that write fails, the classic group is dropped and this group rebuilt from
        its written records (as Kafka's timeline reverts both)."""
        gid = entry.group.group_id
        self.unload_group(gid)
        classic_records: list[tuple[bytes, bytes | None]] = []
        undo: Callable[[], None] | None = None
        if self.on_downgrade is not None:
            classic_records, undo = self.on_downgrade(entry, downgrade)

        def appended(error: int, _offset: int | None) -> None:
            if error != ErrorCode.NONE:
                log.warning("Write of consumer group %s's conversion to a classic group to __consumer_offsets-%d "
                            "failed: %s", gid, entry.partition, ErrorCode(error).name)
                if undo is not None:
                    undo()
                if gid not in self._groups:
                    self._groups[gid] = entry
                    self._rebuild(entry)
            done(error)

        self._log.append(entry.partition, encoded + classic_records, appended)

    def _write(
        self,
        entry: ConsumerGroupEntry,
        records: Iterable[CoordinatorRecord],
        encoded: list[tuple[bytes, bytes | None]],
        done: Callable[[int], None],
        created: bool,
        on_create_failed: Callable[[], None] | None = None,
    ) -> None:
        records = tuple(records)
        rebuilds = entry.rebuilds

        def appended(error: int, _offset: int | None) -> None:
            if not self.is_current(entry):
                done(ErrorCode.NOT_COORDINATOR if error == ErrorCode.NONE else error)
                return
            if error == ErrorCode.NONE:
                for record in records:
                    key = encode_key(record.key)
                    entry.written.pop(key, None)
                    if record.value is not None:
                        entry.written[key] = record
                if entry.rebuilds != rebuilds:
                    self._rebuild(entry)  # a rebuild since this was applied dropped these records
                done(ErrorCode.NONE)
                return
            log.warning("Write of consumer group %s's records to __consumer_offsets-%d failed: %s",
                        entry.group.group_id, entry.partition, ErrorCode(error).name)
            if created and not entry.written:
                self.unload_group(entry.group.group_id)
                if on_create_failed is not None:
                    on_create_failed()
            else:
                self._rebuild(entry)
            done(error)

        self._log.append(entry.partition, encoded, appended)

    def _rebuild(self, entry: ConsumerGroupEntry) -> None:
        """Replace the group in memory with what its written records say."""
        entry.rebuilds += 1
        gid = entry.group.group_id
        group = ConsumerGroup.from_records(gid, entry.written.values(), self._clock(), self.config, self._assignors)
        if group.state is ConsumerGroupState.DEAD or not entry.written:
            self.unload_group(gid)
            return
        entry.group = group
        if entry.timer is not None:
            entry.timer.cancel()
            entry.timer = None
        self._arm(entry)

    # ------------------------------------------------------------------ deletion

    def delete(self, group_id: str) -> tuple[int, list[tuple[bytes, bytes | None]]]:
        """DeleteGroups for a consumer group: ``(error, tombstones to append)``.

        NON_EMPTY_GROUP while it has members; else the group is forgotten at once (Kafka's
        ``deleteGroups`` removes it from memory as it writes the tombstones).
        """
        entry = self._groups.get(group_id)
        if entry is None:
            return ErrorCode.GROUP_ID_NOT_FOUND, []
        if entry.group.members:
            return ErrorCode.NON_EMPTY_GROUP, []
        records = entry.group.delete()
        self.unload_group(group_id)
        return ErrorCode.NONE, [encode_record(r) for r in records]

    # ------------------------------------------------------------------ offsets

    def validate_offset_commit(
        self, entry: ConsumerGroupEntry, member_id: str, member_epoch: int, transactional: bool, api_version: int
    ) -> int | None:
        """Kafka 4's ``ConsumerGroup.validateOffsetCommit``: None if the commit may go ahead."""
        group = entry.group
        if member_epoch < 0 and not group.members:
            return None  # an admin client or a consumer outside the group: only an empty group
        member = group.members.get(member_id)
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if not transactional and api_version < 9 and not member.uses_classic_protocol:
            # Kafka raises UnsupportedVersionException: the modern protocol needs v9.
            return ErrorCode.UNSUPPORTED_VERSION
        if member_epoch != member.member_epoch:
            # A classic member's generation id is its member epoch.
            return ErrorCode.ILLEGAL_GENERATION if member.uses_classic_protocol else ErrorCode.STALE_MEMBER_EPOCH
        return None

    def validate_offset_fetch(self, entry: ConsumerGroupEntry, member_id: str | None, member_epoch: int) -> int | None:
        """Kafka 4's ``ConsumerGroup.validateOffsetFetch``: None if the fetch may go ahead."""
        if member_id is None and member_epoch < 0:
            return None
        member = entry.group.members.get(member_id or "")
        if member is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        if member_epoch != member.member_epoch:
            return ErrorCode.ILLEGAL_GENERATION if member.uses_classic_protocol else ErrorCode.STALE_MEMBER_EPOCH
        return None
