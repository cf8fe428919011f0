"""The group coordinator's half of the share-group offset admin APIs (KIP-932).

Kafka 4.2's ``GroupCoordinatorShard`` operations behind DescribeShareGroupOffsets (90),
AlterShareGroupOffsets (91) and DeleteShareGroupOffsets (92), on a
:class:`~mafka.group.coordinator.GroupCoordinator`'s share groups.  Plain Python; the
share coordinator round trips (ReadShareGroupStateSummary, InitializeShareGroupState,
DeleteShareGroupState) are the caller's (:mod:`mafka.broker.handlers.share_group_offsets`).

Contract:

* :meth:`ShareOffsetsAdmin.initialized_partitions`: the share-partitions a share group has
  initialized (Kafka's ``initializedShareGroupPartitions``), or a group error.
* :meth:`ShareOffsetsAdmin.alter`: Kafka's ``alterShareGroupOffsets``: a group id held by no
  group creates an empty share group (as Kafka's ``getOrMaybeCreateShareGroup(.., true)``);
  one of another type is GROUP_ID_NOT_FOUND; a share group with members NON_EMPTY_GROUP.  The
  group epoch is bumped (the new state epoch fences share-partition leaders still holding the
  old state) and the partitions are written as initializing; ``done`` gets the :class:`InitializeRequest` to send
  once the records are written.  :meth:`ShareOffsetsAdmin.initialized` writes the answer.
* :meth:`ShareOffsetsAdmin.begin_delete` / :meth:`ShareOffsetsAdmin.complete_delete`:
  Kafka's ``initiateDeleteShareGroupOffsets`` / ``completeDeleteShareGroupOffsets``.

Every answer comes once the records are written; an append failure is mapped as a
heartbeat's (:func:`~mafka.group.recorded_groups.append_error`).
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mafka.errors import ErrorCode, KafkaError
from mafka.group.recorded_groups import RecordedGroupEntry, append_error
from mafka.group.share.group import ShareGroup
from mafka.group.share.group_types import InitializeRequest
from mafka.group.share.records import group_epoch_record
from mafka.group.state import GroupState

__all__ = ["AlterResult", "DeleteResult", "ShareOffsetsAdmin"]


@dataclass(frozen=True)
class AlterResult:
    """The group error (NONE, or with a message), and what to initialize at the share coordinator."""

    error: ErrorCode
    message: str | None = None
    initialize: InitializeRequest | None = None


@dataclass(frozen=True)
class DeleteResult:
    """The group error, and the share-partitions whose state the share coordinator must delete
    (topic id → partitions); a topic asked for but not here has no state to delete."""

    error: ErrorCode
    message: str | None = None
    to_delete: dict[bytes, frozenset[int]] = field(default_factory=dict)


class ShareOffsetsAdmin:
    """The offset admin operations on one coordinator's share groups (see the module docstring)."""

    def __init__(self, coordinator: Any) -> None:
        self.coordinator = coordinator
        self.groups = coordinator.share_groups

    def share_group(self, group_id: str) -> tuple[ErrorCode, str | None, RecordedGroupEntry[ShareGroup] | None]:
        """``(error, message, entry)`` of an existing share group (GROUP_ID_NOT_FOUND for none or another type)."""
        if "share" not in self.coordinator.config.rebalance_protocols:
            return ErrorCode.UNSUPPORTED_VERSION, "Share groups are not enabled.", None
        error, entry = self.coordinator.describe_share_group(group_id)
        if error != ErrorCode.NONE:
            message = f"Group {group_id} is not a share group." if error == ErrorCode.GROUP_ID_NOT_FOUND else None
            return ErrorCode(error), message, None
        return ErrorCode.NONE, None, entry

    def initialized_partitions(self, group_id: str) -> tuple[ErrorCode, str | None, dict[bytes, frozenset[int]]]:
        """Kafka's ``initializedShareGroupPartitions``: topic id → the share group's initialized partitions."""
        error, message, entry = self.share_group(group_id)
        if entry is None:
            return error, message, {}
        return ErrorCode.NONE, None, dict(entry.group.initialized_partitions)

    def alter(self, group_id: str, offsets: Mapping[bytes, Mapping[int, int]],
              done: Callable[[AlterResult], None]) -> None:
        """AlterShareGroupOffsets for partitions the caller checked exist: topic id → partition → start offset."""
        created = False
        error, message, entry = self.share_group(group_id)
        if error == ErrorCode.GROUP_ID_NOT_FOUND and not self._held_by_another_type(group_id):
            entry, created = self.groups.new_entry(group_id), True
        elif entry is None:
            return done(AlterResult(error, message))
        group = entry.group
        if group.members:
            return done(AlterResult(ErrorCode.NON_EMPTY_GROUP, "The group is not empty."))
        # Kafka 4.2 bumps the group epoch first, so the share coordinator's state epoch moves on
        # and a share-partition leader still holding the old state is fenced at its next write.
        bump = group_epoch_record(group_id, group.group_epoch + 1, group.metadata_hash)
        group.replay(bump)
        try:
            records, request = group.alter_offsets(offsets, self.groups.now(), self.groups.topics())
        except KafkaError as exc:  # pragma: no cover - emptiness was checked above
            return done(AlterResult(exc.code, exc.message))
        records = (bump, *records)
        if created:
            self.groups.register(entry)

        def written(append: int) -> None:
            if append != ErrorCode.NONE:
                return done(AlterResult(append_error(append)))
            done(AlterResult(ErrorCode.NONE, None, request if request.partitions else None))

        self.groups.commit(entry, records, written, created=created)

    def initialized(self, request: InitializeRequest, ok: bool, done: Callable[[ErrorCode], None]) -> None:
        """The share coordinator answered an alter's InitializeShareGroupState: the partitions become
        initialized (*ok*) or stop initializing; ``done(error)`` once that is written."""
        entry = self.groups.get(request.group_id)
        if entry is None:
            return done(ErrorCode.NOT_COORDINATOR)
        partitions = request.topic_partitions()
        now = self.groups.now()
        if ok:
            records = entry.group.initialize_done(partitions, now, self.groups.topics())
        else:
            records = entry.group.initialize_failed(partitions, now)
        self.groups.commit(entry, records, lambda e: done(ErrorCode.NONE if e == ErrorCode.NONE else append_error(e)))

    def begin_delete(self, group_id: str, topic_ids: Iterable[bytes], done: Callable[[DeleteResult], None]) -> None:
        """DeleteShareGroupOffsets, first step: the named topics move to deleting."""
        error, message, entry = self.share_group(group_id)
        if entry is None:
            return done(DeleteResult(error, message))
        try:
            records, to_delete = entry.group.begin_delete_offsets(list(topic_ids), self.groups.now(), self.groups.topics())
        except KafkaError as exc:
            return done(DeleteResult(exc.code, exc.message))

        def written(append: int) -> None:
            if append != ErrorCode.NONE:
                return done(DeleteResult(append_error(append)))
            done(DeleteResult(ErrorCode.NONE, None, to_delete))

        self.groups.commit(entry, records, written)

    def complete_delete(self, group_id: str, topic_ids: Iterable[bytes], done: Callable[[ErrorCode], None]) -> None:
        """DeleteShareGroupOffsets, last step: the state of *topic_ids* is deleted."""
        entry = self.groups.get(group_id)
        if entry is None:
            return done(ErrorCode.NOT_COORDINATOR)
        records = entry.group.complete_delete_offsets(list(topic_ids), self.groups.now())
        self.groups.commit(entry, records, lambda e: done(ErrorCode.NONE if e == ErrorCode.NONE else append_error(e)))

    def _held_by_another_type(self, group_id: str) -> bool:
        if self.coordinator.consumer_groups.get(group_id) is not None:
            return True
        classic = self.coordinator.group_manager.get_group(group_id)
        return classic is not None and classic.group.state is not GroupState.DEAD
