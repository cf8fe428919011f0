"""The share groups (KIP-932) one coordinator holds: ShareGroupHeartbeat, timers, share-partition initialization.

:class:`ShareGroupManager` is the share-group half of Kafka 4.2's ``GroupMetadataManager`` as it
sits in a coordinator, on :class:`~mafka.group.recorded_groups.RecordedGroups` (write before
answer, rollback, timers, loads).  Plain Python.

Contract:

* **ShareGroupHeartbeat** (:meth:`ShareGroupManager.heartbeat`): a join (epoch 0) to a group not
  held here creates it; any other heartbeat gets GROUP_ID_NOT_FOUND.  The member is answered
  once the records are written; an append failure answers COORDINATOR_NOT_AVAILABLE or
  NOT_COORDINATOR and rolls the group back.
* **Initialization**: when a heartbeat's records name share-partitions to initialize, they are
  handed to the *initializer* (the share coordinator's InitializeShareGroupState, through the
  persister) once the records are written; its answer is written as the group's
  ``initialize_done`` / ``initialize_failed`` records, after which heartbeats assign them.  An
  unanswered initialization is asked again by a later heartbeat
  (``group.share.initialize.retry.interval.ms``).
* **Members gone**: *on_member_gone(group id, member id)* runs for a member that left or was
  fenced, so its share sessions can be dropped.
* **DeleteGroups** (Kafka 4.2's ``GroupCoordinatorService.deleteGroups`` for a share group), two
  steps: :meth:`ShareGroupManager.begin_delete` moves every initialized or initializing
  share-partition to deleting and, once that is written, names the share-partitions whose state
  the share coordinator must delete (DeleteShareGroupState, the caller's); then
  :meth:`ShareGroupManager.delete` forgets the group and returns its tombstones.  A group with
  members is NON_EMPTY_GROUP at either step.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from mafka.errors import ErrorCode, KafkaError
from mafka.group.consumer.member import TopicInfo
from mafka.group.coordinator_types import OffsetsLog
from mafka.group.recorded_groups import (
    RecordedGroupEntry,
    RecordedGroups,
    append_error,
    no_overrides,
    with_timeout_overrides,
)
from mafka.group.share import records as share_records
from mafka.group.share.group import ShareGroup
from mafka.group.share.group_types import (
    HeartbeatRequest,
    HeartbeatResponse,
    InitializeRequest,
    ShareGroupConfig,
)
from mafka.timers import Timers

__all__ = ["Initializer", "ShareGroupKind", "ShareGroupManager"]

log = logging.getLogger("mafka.group.coordinator")

#: ``initializer(request, done)``: ask the share coordinator to initialize the request's
#: share-partitions; ``done(ok)`` once it answered (False: to be asked again later).
Initializer = Callable[[InitializeRequest, Callable[[bool], None]], None]


class ShareGroupKind:
    """How :class:`RecordedGroups` makes, rebuilds and encodes share groups."""

    name = "share"

    def __init__(self, config: ShareGroupConfig) -> None:
        self.config = config
        self.on_fenced: Callable[[str, str], None] | None = None
        #: group id → its group config overrides (Kafka's ``GroupConfigManager``; set by the broker)
        self.overrides: Callable[[str], Mapping[str, str]] = no_overrides

    def config_for(self, group_id: str) -> ShareGroupConfig:
        """The broker's settings with the group's ``share.session.timeout.ms`` /
        ``share.heartbeat.interval.ms`` overrides applied."""
        return with_timeout_overrides(self.config, self.overrides(group_id), "share")

    def new(self, group_id: str) -> ShareGroup:
        return ShareGroup(group_id, self.config_for(group_id))

    def from_records(self, group_id: str, records: Iterable[Any], now_ms: int) -> ShareGroup:
        return ShareGroup.from_records(group_id, records, now_ms, self.config_for(group_id))

    def decode(self, key: bytes, value: bytes | None) -> Any:
        return share_records.decode_record(key, value)

    def encode(self, record: Any) -> tuple[bytes, bytes | None]:
        return share_records.encode_record(record)

    def is_dead(self, group: ShareGroup) -> bool:
        return group.is_dead

    def expire(self, group: ShareGroup, now_ms: int, topics: Mapping[str, TopicInfo]) -> tuple[Any, ...]:
        result = group.expire(now_ms, topics)
        if self.on_fenced is not None:
            for fenced in result.fenced:
                self.on_fenced(group.group_id, fenced.member_id)
        return tuple(result.records)

    def next_deadline_ms(self, group: ShareGroup) -> int | None:
        return group.next_deadline_ms()


class ShareGroupManager(RecordedGroups[ShareGroup]):
    """The share groups of the ``__consumer_offsets`` partitions a coordinator leads."""

    def __init__(
        self,
        config: ShareGroupConfig,
        clock: Callable[[], int],
        timers: Timers,
        offsets_log: OffsetsLog,
        topics: Callable[[], Mapping[str, TopicInfo]],
        partition_for: Callable[[str], int],
    ) -> None:
        self.share_kind = ShareGroupKind(config)
        super().__init__(self.share_kind, clock, timers, offsets_log, topics, partition_for)
        #: set by the broker: the share coordinator's initialization (None: partitions stay uninitialized)
        self.initializer: Initializer | None = None
        #: set by the broker: a member left or was fenced (its share sessions go)
        self.on_member_gone: Callable[[str, str], None] | None = None
        self.share_kind.on_fenced = self._member_gone

    def _member_gone(self, group_id: str, member_id: str) -> None:
        if self.on_member_gone is not None:
            self.on_member_gone(group_id, member_id)

    def heartbeat(
        self,
        request: HeartbeatRequest,
        respond: Callable[[HeartbeatResponse], None],
    ) -> None:
        """ShareGroupHeartbeat for a group of an owned partition (the caller checked that)."""
        gid = request.group_id
        entry = self.get(gid)
        created = entry is None
        if entry is None:
            if request.member_epoch != 0:
                respond(HeartbeatResponse(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {gid} not found."))
                return
            entry = self.new_entry(gid)
        else:
            # The group's overrides as they are now (an IncrementalAlterConfigs may have changed them).
            entry.group.config = self.share_kind.config_for(gid)
        result = entry.group.heartbeat(request, self.now(), self.topics())
        if result.response.error_code != ErrorCode.NONE:
            respond(result.response)
            return
        if created:
            self.register(entry)
        if result.left_member_id is not None:
            self._member_gone(gid, result.left_member_id)

        def done(error: int) -> None:
            if error != ErrorCode.NONE:
                respond(HeartbeatResponse(append_error(error), None))
                return
            respond(result.response)
            if result.initialize is not None:
                self._initialize(entry, result.initialize)

        self.commit(entry, result.records, done, created=created)

    def _initialize(self, entry: RecordedGroupEntry[ShareGroup], request: InitializeRequest) -> None:
        if self.initializer is None:
            log.info("Share group %s: no share coordinator to initialize %d share-partitions with",
                     entry.group_id, sum(len(p) for p in request.topic_partitions().values()))
            return

        def answered(ok: bool) -> None:
            if not self.is_current(entry):
                return
            partitions = request.topic_partitions()
            now = self.now()
            if ok:
                applied = entry.group.initialize_done(partitions, now, self.topics())
            else:
                applied = entry.group.initialize_failed(partitions, now)
            self.commit(entry, applied, _log_failure(entry.group_id))

        self.initializer(request, answered)


    # ------------------------------------------------------------------ deletion

    def begin_delete(self, group_id: str, done: Callable[[int, dict[bytes, frozenset[int]]], None]) -> None:
        """DeleteGroups, first step (Kafka's ``sharePartitionDeleteRequests``): ``done(error, topic id →
        partitions)`` once the share-partitions' move to deleting is written; the partitions are those
        whose state the share coordinator must delete (none: the group never initialized any)."""
        entry = self.get(group_id)
        if entry is None:
            done(ErrorCode.GROUP_ID_NOT_FOUND, {})
            return
        try:
            records, to_delete = entry.group.begin_delete(self.now(), self.topics())
        except KafkaError as exc:
            done(exc.code, {})
            return

        def written(error: int) -> None:
            if error != ErrorCode.NONE:
                done(append_error(error), {})
            else:
                done(ErrorCode.NONE, to_delete)

        self.commit(entry, records, written)

    def delete(self, group_id: str) -> tuple[int, list[tuple[bytes, bytes | None]]]:
        """DeleteGroups, last step: ``(error, tombstones to append)``.  NON_EMPTY_GROUP while the group
        has members; else it is forgotten at once (as Kafka's ``deleteGroups`` removes it from memory
        as it writes the tombstones)."""
        entry = self.get(group_id)
        if entry is None:
            return ErrorCode.GROUP_ID_NOT_FOUND, []
        try:
            records = entry.group.delete()
        except KafkaError as exc:
            return exc.code, []
        self.unload_group(group_id)
        return ErrorCode.NONE, [self.kind.encode(r) for r in records]


def _log_failure(group_id: str) -> Callable[[int], None]:
    def done(error: int) -> None:
        if error != ErrorCode.NONE:
            log.warning("Share group %s: writing the share-partitions' initialization failed: %s",
                        group_id, ErrorCode(error).name)
    return done
