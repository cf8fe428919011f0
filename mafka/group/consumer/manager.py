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
* **Regular expressions.**  After a heartbeat (or a classic member's JoinGroup) the group's
  regexes are resolved if :meth:`ConsumerGroup.regex_refresh_due` says so, as Kafka 4 runs
  ``refreshRegularExpressions`` on its executor: in a separate step (a timer at 0 ms), at most
  one scheduled per group, never delaying the answer; what it changed (the group epoch) is
  written like a heartbeat's records, and the members' next heartbeats bring the partitions.
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
from typing import Any, TypeAlias

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
from mafka.group.consumer.records import CoordinatorRecord, decode_record, encode_record
from mafka.group.coordinator_types import OffsetsLog
from mafka.group.recorded_groups import (
    RecordedGroupEntry,
    RecordedGroups,
    append_error,
    no_overrides,
    with_timeout_overrides,
)
from mafka.timers import TimerHandle, Timers

__all__ = ["ConsumerGroupEntry", "ConsumerGroupKind", "ConsumerGroupManager", "DowngradeHook", "append_error"]

log = logging.getLogger("mafka.group.coordinator")

#: A consumer group and what the manager keeps beside it.
ConsumerGroupEntry: TypeAlias = RecordedGroupEntry[ConsumerGroup]

#: ``on_downgrade(entry, downgrade) -> (classic group records, undo)``; see :attr:`ConsumerGroupManager.on_downgrade`
DowngradeHook = Callable[
    [ConsumerGroupEntry, Downgrade], tuple[list[tuple[bytes, bytes | None]], Callable[[], None]]
]


class ConsumerGroupKind:
    """How :class:`~mafka.group.recorded_groups.RecordedGroups` makes, rebuilds and encodes consumer groups."""

    name = "consumer"

    def __init__(self, config: ConsumerGroupConfig, assignors: Mapping[str, PartitionAssignor]) -> None:
        self.config = config
        self.assignors = assignors
        #: group id → its group config overrides (Kafka's ``GroupConfigManager``; set by the broker)
        self.overrides: Callable[[str], Mapping[str, str]] = no_overrides

    def config_for(self, group_id: str) -> ConsumerGroupConfig:
        """The broker's settings with the group's ``consumer.session.timeout.ms`` /
        ``consumer.heartbeat.interval.ms`` overrides applied."""
        return with_timeout_overrides(self.config, self.overrides(group_id), "consumer")

    def new(self, group_id: str) -> ConsumerGroup:
        return ConsumerGroup(group_id, self.config_for(group_id), self.assignors)

    def from_records(self, group_id: str, records: Iterable[Any], now_ms: int) -> ConsumerGroup:
        return ConsumerGroup.from_records(group_id, records, now_ms, self.config_for(group_id), self.assignors)

    def decode(self, key: bytes, value: bytes | None) -> Any:
        return decode_record(key, value)

    def encode(self, record: Any) -> tuple[bytes, bytes | None]:
        return encode_record(record)

    def is_dead(self, group: ConsumerGroup) -> bool:
        return group.state is ConsumerGroupState.DEAD

    def expire(self, group: ConsumerGroup, now_ms: int, topics: Mapping[str, TopicInfo]) -> tuple[Any, ...]:
        return tuple(group.expire(now_ms, topics).records)

    def next_deadline_ms(self, group: ConsumerGroup) -> int | None:
        return group.next_deadline_ms()


class ConsumerGroupManager(RecordedGroups[ConsumerGroup]):
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
        self.consumer_kind = ConsumerGroupKind(config, configured_assignors(config.assignors))
        super().__init__(self.consumer_kind, clock, timers, offsets_log, topics, partition_for)
        self.config = config
        #: installs the classic group a downgraded consumer group becomes (the coordinator sets it):
        #: returns the classic group's records, to write with the consumer group's tombstones, and
        #: an undo for a failed write.  Without it a downgraded group is simply gone.
        self.on_downgrade: DowngradeHook | None = None
        # group id → its scheduled regex resolution (Kafka's executor key "<group>-regex")
        self._regex_refreshes: dict[str, TimerHandle] = {}

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
        entry = self.get(gid)
        created = entry is None
        if entry is None:
            if request.member_epoch != 0:
                respond(HeartbeatResponse(ErrorCode.GROUP_ID_NOT_FOUND, f"Consumer group {gid} not found."))
                return
            entry = self.new_entry(gid)
            group = entry.group
            now = self.now()
            for record in seed:
                group.replay(record)
            for member in group.members.values():
                classic = member.classic_member_metadata
                timeout = classic.session_timeout_ms if classic is not None else group.config.session_timeout_ms
                group.schedule_session_timeout(member.member_id, now + timeout)
        else:
            # The group's overrides as they are now (an IncrementalAlterConfigs may have changed them).
            entry.group.config = self.consumer_kind.config_for(gid)
        result = entry.group.heartbeat(request, self.now(), self.topics())
        if result.response.error_code != ErrorCode.NONE:
            respond(result.response)
            return
        if created:
            self.register(entry)
            if on_created is not None:
                on_created()

        def done(error: int) -> None:
            if error == ErrorCode.NONE:
                respond(result.response)
            else:
                respond(HeartbeatResponse(ErrorCode(append_error(error)), None))

        records = (*seed, *result.records) if created else result.records
        self.commit(entry, records, done, extra=extra_records, created=created, on_create_failed=on_create_failed)
        self._maybe_refresh_regexes(entry)

    def write(self, entry: ConsumerGroupEntry, records: Sequence[CoordinatorRecord], done: Callable[[int], None]) -> None:
        """Write *records*, already applied to *entry*'s group by one of its operations (a classic
        member's JoinGroup or LeaveGroup, :mod:`.classic_members`); ``done(error)`` once appended
        (the raw append error: :func:`append_error` maps it).  Re-arms the group's timer; a group
        the operation downgraded becomes a classic group (see :attr:`on_downgrade`)."""
        self.commit(entry, records, done)
        self._maybe_refresh_regexes(entry)

    def rearm(self, entry: ConsumerGroupEntry) -> None:
        """The group's timers changed without a record (a classic member's heartbeat or sync)."""
        if self.is_current(entry):
            self.arm(entry)

    # ------------------------------------------------------------------ regular expressions

    def _maybe_refresh_regexes(self, entry: ConsumerGroupEntry) -> None:
        """Schedule the group's regex resolution if one is due and none is scheduled: it runs
        after this request's records were handed to the log, and its answer never waits for it."""
        gid = entry.group_id
        if gid in self._regex_refreshes or not self.is_current(entry):
            return
        if not entry.group.regex_refresh_due(self.now(), self.topics()):
            return
        self._regex_refreshes[gid] = self._timers.call_later(0, lambda: self._refresh_regexes(entry))

    def _refresh_regexes(self, entry: ConsumerGroupEntry) -> None:
        self._regex_refreshes.pop(entry.group_id, None)
        if not self.is_current(entry):
            return
        records = entry.group.refresh_regexes(self.now(), self.topics())
        if records:
            self.commit(entry, records, lambda _e: None)

    def unload_group(self, group_id: str) -> None:
        handle = self._regex_refreshes.pop(group_id, None)
        if handle is not None:
            handle.cancel()
        super().unload_group(group_id)

    # ------------------------------------------------------------------ writes

    def commit(
        self,
        entry: RecordedGroupEntry[ConsumerGroup],
        records: Iterable[Any],
        done: Callable[[int], None],
        *,
        extra: Iterable[tuple[bytes, bytes | None]] = (),
        created: bool = False,
        on_create_failed: Callable[[], None] | None = None,
    ) -> None:
        """As :meth:`RecordedGroups.commit`, but a group the change downgraded (see the module
        docstring) is handed over to :attr:`on_downgrade` instead."""
        downgrade = entry.group.converted_to_classic
        if downgrade is not None and self.is_current(entry):
            encoded = list(extra) + [encode_record(r) for r in records]
            self._downgrade(entry, downgrade, encoded, done)
            return
        super().commit(entry, records, done, extra=extra, created=created, on_create_failed=on_create_failed)

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
        gid = entry.group_id
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
                if self.get(gid) is None:
                    self.register(entry)
                    self._rebuild(entry)
            done(error)

        self._log.append(entry.partition, encoded + classic_records, appended)

    # ------------------------------------------------------------------ deletion

    def delete(self, group_id: str) -> tuple[int, list[tuple[bytes, bytes | None]]]:
        """DeleteGroups for a consumer group: ``(error, tombstones to append)``.

        NON_EMPTY_GROUP while it has members; else the group is forgotten at once (Kafka's
        ``deleteGroups`` removes it from memory as it writes the tombstones).
        """
        entry = self.get(group_id)
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
