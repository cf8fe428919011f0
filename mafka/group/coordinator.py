"""The group coordinator: Kafka 2.8's ``GroupCoordinator`` request handlers, as plain Python.

This module owns the handling of each group request (JoinGroup, SyncGroup,
Heartbeat, LeaveGroup, OffsetCommit, TxnOffsetCommit, OffsetFetch, ListGroups,
DescribeGroups, DeleteGroups, OffsetDelete): validating it against the
coordinator's state and the group's, and answering it. The rest is delegated to
two collaborators it builds:

* :class:`~mafka.group.metadata_manager.GroupMetadataManager` (Kafka's
  ``GroupMetadataManager``): partition ownership, load/unload, the loaded
  groups, committed offsets and every write to ``__consumer_offsets``;
* :class:`~mafka.group.rebalance.Rebalancer`: membership changes, rebalances
  (the delayed joins), parked Join/Sync responses, heartbeat expiry.

The data types (:class:`CoordinatorConfig`, :class:`OffsetsLog`, the results)
live in :mod:`mafka.group.coordinator_types` and are re-exported here.

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
from dataclasses import replace
from functools import partial
from typing import Any

from mafka.errors import ErrorCode
from mafka.group.consumer.group_types import HeartbeatRequest, HeartbeatResponse
from mafka.group.consumer.manager import ConsumerGroupEntry, ConsumerGroupManager
from mafka.group.consumer.member import TopicInfo
from mafka.group.consumer_protocol import PROTOCOL_TYPE, decode_subscription
from mafka.group.coordinator_types import (
    DEAD_SUMMARY,
    EMPTY_SUMMARY,
    UNKNOWN_MEMBER_ID,
    CoordinatorConfig,
    GroupEntry,
    GroupOverview,
    GroupSummary,
    JoinCallback,
    JoinResult,
    MemberSummary,
    OffsetFetchEntry,
    OffsetsLog,
    SyncCallback,
    SyncResult,
    join_result,
)
from mafka.group.group_migration import GroupMigration
from mafka.group.metadata_manager import GroupMetadataManager
from mafka.group.offsets import LoadItem, OffsetAndMetadata
from mafka.group.offsets_records import offsets_partition_for
from mafka.group.rebalance import JoinArgs, Rebalancer
from mafka.group.share import group_types as share_types
from mafka.group.share.manager import ShareGroupManager
from mafka.group.state import GroupMetadata, GroupState, Protocols, new_member_id
from mafka.timers import Timers
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


class GroupCoordinator:
    """One broker's group coordinator (see the module docstring for the contract)."""

    def __init__(
        self,
        config: CoordinatorConfig,
        clock: Callable[[], int],
        timers: Timers,
        offsets_log: OffsetsLog,
        topics: Callable[[], Mapping[str, TopicInfo]] | None = None,
    ) -> None:
        self.config = config
        self._clock = clock
        #: KIP-848 ``consumer`` groups; ``topics`` is the cluster's topics as they see them.
        self.consumer_groups = ConsumerGroupManager(
            # a downgrade never makes a classic group larger than group.max.size
            replace(config.consumer, classic_max_size=config.max_size),
            clock, timers, offsets_log, topics or dict, self.partition_for,
        )
        #: KIP-932 share groups.
        self.share_groups = ShareGroupManager(
            config.share, clock, timers, offsets_log, topics or dict, self.partition_for
        )
        #: Kafka's ``groupManager``: ownership, loaded groups, offsets, ``__consumer_offsets`` writes.
        self.group_manager = GroupMetadataManager(config, clock, offsets_log, self.consumer_groups, self.share_groups)
        self._rebalancer = Rebalancer(config, clock, timers, self.group_manager)
        #: KIP-848's online upgrade and downgrade, and classic members of consumer groups.
        self._migration = GroupMigration(clock, self.group_manager, self.consumer_groups, self._rebalancer,
                                         topics or dict)
        self.active = True

    # ------------------------------------------------------------------ ownership

    def partition_for(self, group_id: str) -> int:
        return offsets_partition_for(group_id, self.config.offsets_partitions)

    def owned_partitions(self) -> set[int]:
        return self.group_manager.owned_partitions()

    def loading_partitions(self) -> set[int]:
        return self.group_manager.loading_partitions()

    def is_loading(self) -> bool:
        return self.group_manager.is_loading()

    def on_elected(self, partition: int, epoch: int) -> bool:
        """This broker leads ``partition`` at ``epoch``. True if a load must now run
        (the caller reads the partition and calls :meth:`complete_load`)."""
        return self.group_manager.on_elected(partition, epoch)

    def complete_load(self, partition: int, epoch: int, records: Iterable[LoadItem]) -> bool:
        """Replay ``__consumer_offsets``-``partition`` (log order) and start serving it.

        ``records`` are :class:`~mafka.group.offsets.LogRecord` and
        :class:`~mafka.group.offsets.TxnMarker` items (a bare ``(key, value)`` is a plain
        record); see :meth:`OffsetStore.load`. Transaction markers reported by
        :meth:`complete_transaction` during the load are applied after it.
        False (and nothing changes) if leadership moved on since :meth:`on_elected`.
        """
        return self.group_manager.complete_load(
            partition, epoch, records, self._rebalancer.on_group_loaded, self._rebalancer.on_group_unloaded
        )

    def fail_load(self, partition: int, epoch: int) -> None:
        """A load could not read the partition: stop claiming it (clients see NOT_COORDINATOR)."""
        self.group_manager.fail_load(partition, epoch)

    def on_resigned(self, partition: int, epoch: int | None = None) -> None:
        """Leadership of ``partition`` moved away (or the partition is gone)."""
        self.group_manager.on_resigned(partition, epoch, self._rebalancer.on_group_unloaded)

    def shutdown(self) -> None:
        self.active = False
        self.group_manager.shutdown(self._rebalancer.on_group_unloaded)

    # ------------------------------------------------------------------ validation

    def _status_error(self, group_id: str | None, allow_empty_id: bool = False) -> int | None:
        """Kafka's ``validateGroupStatus``."""
        if group_id is None or (not group_id and not allow_empty_id):
            return ErrorCode.INVALID_GROUP_ID
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        partition = self.partition_for(group_id)
        if self.group_manager.is_partition_loading(partition):
            return ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
        if not self.group_manager.is_partition_owned(partition):
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
        if self._migration.serves_classic(group_id):
            # KIP-848: a consumer group with members takes classic members (Kafka 4's
            # classicGroupJoinToConsumerGroup).
            return self._migration.classic_join(
                group_id, member_id, group_instance_id, require_known_member_id, client_id, client_host,
                rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols, respond,
            )
        if not self._make_room_for_classic(group_id):
            return respond(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id))
        unknown = member_id == UNKNOWN_MEMBER_ID
        entry = self.group_manager.get_group(group_id)
        if entry is None:
            if not unknown:
                return respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
            entry = self.group_manager.add_group(group_id)
        group = entry.group
        args: JoinArgs = (client_id, client_host, rebalance_timeout_ms, session_timeout_ms, protocol_type, protocols)
        if not self._accepts_joining_member(group, member_id):
            if group.has(member_id):
                # Kafka drops a known member that rejoins too late into a full group.
                self._rebalancer.cancel_heartbeat(entry, member_id)
                group.remove(member_id)
            respond(JoinResult(ErrorCode.GROUP_MAX_SIZE_REACHED, UNKNOWN_MEMBER_ID))
        elif unknown:
            self._join_unknown(entry, group_instance_id, require_known_member_id, args, respond)
        else:
            self._join_known(entry, member_id, group_instance_id, args, respond)
        if group.state is GroupState.PREPARING_REBALANCE:
            self._rebalancer.check_join(entry)

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

    def _join_unknown(self, entry: GroupEntry, group_instance_id: str | None, require_known: bool,
                      args: JoinArgs, respond: JoinCallback) -> None:
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
                self._rebalancer.update_static_member(entry, group_instance_id, old_id, new_id, protocols, respond)
            else:
                self._rebalancer.add_member_and_rebalance(entry, new_id, group_instance_id, args, respond)
        elif require_known:
            # KIP-394: hand out the id and wait for the member to come back with it.
            group.add_pending_member(new_id)
            self._rebalancer.schedule_pending_expiry(entry, new_id, session_timeout_ms)
            respond(JoinResult(ErrorCode.MEMBER_ID_REQUIRED, new_id))
        else:
            self._rebalancer.add_member_and_rebalance(entry, new_id, None, args, respond)

    def _join_known(self, entry: GroupEntry, member_id: str, group_instance_id: str | None,
                    args: JoinArgs, respond: JoinCallback) -> None:
        group = entry.group
        _, _, _, _, protocol_type, protocols = args
        if group.state is GroupState.DEAD:
            return respond(JoinResult(ErrorCode.COORDINATOR_NOT_AVAILABLE, member_id))
        if not group.supports_protocols(protocol_type, [name for name, _ in protocols]):
            return respond(JoinResult(ErrorCode.INCONSISTENT_GROUP_PROTOCOL, member_id))
        if group.is_pending_member(member_id):
            if group_instance_id is not None:
                return respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
            return self._rebalancer.add_member_and_rebalance(entry, member_id, None, args, respond)
        if entry.fenced(member_id, group_instance_id):
            return respond(JoinResult(ErrorCode.FENCED_INSTANCE_ID, member_id))
        instance_unknown = group_instance_id is not None and not group.has_static_member(group_instance_id)
        if not group.has(member_id) or instance_unknown:
            return respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
        member = group.get(member_id)
        state = group.state
        if state is GroupState.PREPARING_REBALANCE:
            self._rebalancer.update_member_and_rebalance(entry, member, protocols, respond)
        elif state is GroupState.COMPLETING_REBALANCE:
            if member.matches(protocols):
                # The member lost the JoinGroup response: give it this generation again.
                respond(join_result(group, member))
            else:
                self._rebalancer.update_member_and_rebalance(entry, member, protocols, respond)
        elif state is GroupState.STABLE:
            if group.is_leader(member_id) or not member.matches(protocols):
                self._rebalancer.update_member_and_rebalance(entry, member, protocols, respond)
            else:
                respond(join_result(group, member, with_members=False))
        else:  # Empty: the member must reset its generation and rejoin
            respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))

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
        if self.consumer_groups.get(group_id) is not None:
            return self._migration.classic_sync(group_id, generation_id, member_id, group_instance_id, respond)
        entry = self.group_manager.get_group(group_id)
        if entry is None:
            return respond(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        group = entry.group
        if group.state is GroupState.DEAD:
            return respond(SyncResult(ErrorCode.COORDINATOR_NOT_AVAILABLE))
        if entry.fenced(member_id, group_instance_id):
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
            self._rebalancer.schedule_heartbeat(entry, member)
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
                self._rebalancer.reset_and_propagate_assignment_error(entry, error)
                self._rebalancer.maybe_prepare_rebalance(
                    entry, f"error when storing group assignment during SyncGroup (member: {member_id})")
            else:
                for m in group.all_member_metadata():
                    m.assignment = assignment.get(m.member_id, b"")
                self._rebalancer.propagate_assignment(entry, ErrorCode.NONE)
                group.transition_to(GroupState.STABLE, self._clock())
                self.group_manager.completed_rebalances += 1

        self.group_manager.store_group(entry, assignment, stored)

    # ------------------------------------------------------------------ Heartbeat / LeaveGroup

    def heartbeat(
        self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int
    ) -> int:
        error = self._status_error(group_id)
        if error is not None:
            # A loading coordinator answers blindly, as Kafka does.
            return ErrorCode.NONE if error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS else error
        if self.consumer_groups.get(group_id) is not None:
            return self._migration.classic_heartbeat(group_id, member_id, group_instance_id, generation_id)
        entry = self.group_manager.get_group(group_id)
        if entry is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        group = entry.group
        if group.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE
        if entry.fenced(member_id, group_instance_id):
            return ErrorCode.FENCED_INSTANCE_ID
        if not group.has(member_id):
            return ErrorCode.UNKNOWN_MEMBER_ID
        if generation_id != group.generation_id:
            return ErrorCode.ILLEGAL_GENERATION
        if group.state is GroupState.EMPTY:
            return ErrorCode.UNKNOWN_MEMBER_ID
        self._rebalancer.schedule_heartbeat(entry, group.get(member_id))
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
        if self.consumer_groups.get(group_id) is not None:
            return self._migration.classic_leave(group_id, leaving)
        entry = self.group_manager.get_group(group_id)
        if entry is None:
            return ErrorCode.NONE, [(m, i, ErrorCode.UNKNOWN_MEMBER_ID) for m, i in leaving]
        group = entry.group
        if group.state is GroupState.DEAD:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        results: list[tuple[str, str | None, int]] = []
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
                self._rebalancer.remove_pending_member(entry, member_id)
                results.append((member_id, instance_id, ErrorCode.NONE))
            elif entry.fenced(member_id, instance_id):
                results.append((member_id, instance_id, ErrorCode.FENCED_INSTANCE_ID))
            elif group.has(member_id):
                self._remove_current_member(entry, member_id)
                results.append((member_id, instance_id, ErrorCode.NONE))
            else:
                results.append((member_id, instance_id, ErrorCode.UNKNOWN_MEMBER_ID))
        return ErrorCode.NONE, results

    def _remove_current_member(self, entry: GroupEntry, member_id: str) -> None:
        member = entry.group.get(member_id)
        member.is_leaving = True
        log.info("Member %s is leaving group %s", member_id, entry.group.group_id)
        self._rebalancer.remove_member_and_update_group(entry, member, f"removing member {member_id} on LeaveGroup")

    # ------------------------------------------------------------------ offsets

    # ------------------------------------------------------------------ KIP-848 consumer groups

    def consumer_group_heartbeat(self, request: HeartbeatRequest, respond: Callable[[HeartbeatResponse], None]) -> None:
        """ConsumerGroupHeartbeat (KIP-848): ``respond`` once the group's records are written.

        A classic group under the same id becomes a consumer group (its offsets stay; its
        metadata record gets a tombstone in the same write, as Kafka 4 converts it): an Empty
        one at once, one with members by KIP-848's online upgrade
        (``group.consumer.migration.policy``; see :mod:`mafka.group.group_migration`).
        """
        if "consumer" not in self.config.rebalance_protocols:
            return respond(HeartbeatResponse(ErrorCode.UNSUPPORTED_VERSION,
                                              "The new consumer group protocol is not enabled."))
        error = self._status_error(request.group_id)
        if error is not None:
            return respond(HeartbeatResponse(ErrorCode(error)))
        if self.share_groups.get(request.group_id) is not None:
            return respond(HeartbeatResponse(ErrorCode.GROUP_ID_NOT_FOUND,
                                              f"Group {request.group_id} is not a consumer group."))
        self._migration.consumer_heartbeat(request, respond)

    def share_group_heartbeat(
        self, request: share_types.HeartbeatRequest, respond: Callable[[share_types.HeartbeatResponse], None]
    ) -> None:
        """ShareGroupHeartbeat (KIP-932): ``respond`` once the group's records are written.  A group id
        held by a classic or consumer group answers GROUP_ID_NOT_FOUND ("not a share group"), as Kafka."""
        if "share" not in self.config.rebalance_protocols:
            return respond(share_types.HeartbeatResponse(ErrorCode.UNSUPPORTED_VERSION, "Share groups are not enabled."))
        error = self._status_error(request.group_id)
        if error is not None:
            return respond(share_types.HeartbeatResponse(ErrorCode(error)))
        classic = self.group_manager.get_group(request.group_id)
        if self.consumer_groups.get(request.group_id) is not None or (
            classic is not None and classic.group.state is not GroupState.DEAD
        ):
            return respond(share_types.HeartbeatResponse(ErrorCode.GROUP_ID_NOT_FOUND,
                                                         f"Group {request.group_id} is not a share group."))
        self.share_groups.heartbeat(request, respond)

    def describe_share_group(self, group_id: str) -> tuple[int, Any]:
        """ShareGroupDescribe for one group: ``(error, entry)``."""
        error = self._status_error(group_id)
        if error is not None:
            return error, None
        entry = self.share_groups.get(group_id)
        if entry is None:
            return ErrorCode.GROUP_ID_NOT_FOUND, None
        return ErrorCode.NONE, entry

    def describe_consumer_group(self, group_id: str) -> tuple[int, ConsumerGroupEntry | None]:
        """ConsumerGroupDescribe for one group: ``(error, entry)``; GROUP_ID_NOT_FOUND for a
        group that is not a consumer group (Kafka 4's message says which)."""
        error = self._status_error(group_id)
        if error is not None:
            return error, None
        entry = self.consumer_groups.get(group_id)
        if entry is None:
            return ErrorCode.GROUP_ID_NOT_FOUND, None
        return ErrorCode.NONE, entry

    def _make_room_for_classic(self, group_id: str) -> bool:
        """A classic JoinGroup for ``group_id``: False if a consumer group with members holds the
        id; an empty consumer group is deleted first (Kafka 4 converts it back)."""
        if self.share_groups.get(group_id) is not None:
            return False
        entry = self.consumer_groups.get(group_id)
        if entry is None:
            return True
        if entry.group.members:
            return False
        error, tombstones = self.consumer_groups.delete(group_id)
        if error == ErrorCode.NONE and tombstones:
            log.info("Converted the empty consumer group %s to a classic group", group_id)
            self.group_manager.append_tombstones(entry.partition, tombstones)
        return True

    def commit_offsets(
        self,
        group_id: str,
        member_id: str,
        group_instance_id: str | None,
        generation_id: int,
        offsets: Mapping[TopicPartitionTuple, OffsetAndMetadata],
        respond: Callable[[dict[TopicPartitionTuple, int]], None],
        api_version: int = 8,
    ) -> None:
        """OffsetCommit: ``respond({partition: error})`` once appended.  A ``consumer`` group
        checks the member epoch (``generation_id``) as Kafka 4 does (STALE_MEMBER_EPOCH; v9+
        from its members)."""
        def all_(error: int) -> None:
            respond({tp: error for tp in offsets})

        error = self._status_error(group_id, allow_empty_id=True)
        if error is not None:
            return all_(error)
        consumer = self.consumer_groups.get(group_id)
        if consumer is not None:
            error = self.consumer_groups.validate_offset_commit(consumer, member_id, generation_id, False, api_version)
            if error is not None:
                return all_(error)
            return self.group_manager.store_offsets(consumer, offsets, respond)
        entry = self.group_manager.get_group(group_id)
        if entry is None:
            if generation_id >= 0:
                # A commit from an older generation of a group that no longer exists.
                return all_(ErrorCode.ILLEGAL_GENERATION)
            # The group uses Kafka only to store offsets (assign() consumers).
            entry = self.group_manager.add_group(group_id)
        group = entry.group
        if group.state is GroupState.DEAD:
            return all_(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if entry.fenced(member_id, group_instance_id):
            return all_(ErrorCode.FENCED_INSTANCE_ID)
        if generation_id < 0 and group.state is GroupState.EMPTY:
            return self.group_manager.store_offsets(entry, offsets, respond)
        if not group.has(member_id):
            return all_(ErrorCode.UNKNOWN_MEMBER_ID)
        if generation_id != group.generation_id:
            return all_(ErrorCode.ILLEGAL_GENERATION)
        if group.state is GroupState.COMPLETING_REBALANCE:
            return all_(ErrorCode.REBALANCE_IN_PROGRESS)
        # Stable or PreparingRebalance: a commit during a rebalance is still welcome.
        self._rebalancer.schedule_heartbeat(entry, group.get(member_id))
        self.group_manager.store_offsets(entry, offsets, respond)

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
        consumer = self.consumer_groups.get(group_id)
        if consumer is not None:
            error = self.consumer_groups.validate_offset_commit(consumer, member_id, generation_id, True, 9)
            if error is not None:
                return all_(ErrorCode.ILLEGAL_GENERATION if error == ErrorCode.STALE_MEMBER_EPOCH else error)
            return self.group_manager.store_offsets(consumer, offsets, respond, producer_id, producer_epoch)
        entry = self.group_manager.get_group(group_id)
        if entry is None:
            entry = self.group_manager.add_group(group_id)
        group = entry.group
        if group.state is GroupState.DEAD:
            return all_(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if entry.fenced(member_id, group_instance_id):
            return all_(ErrorCode.FENCED_INSTANCE_ID)
        if member_id != UNKNOWN_MEMBER_ID and not group.has(member_id):
            return all_(ErrorCode.UNKNOWN_MEMBER_ID)
        if generation_id >= 0 and generation_id != group.generation_id:
            return all_(ErrorCode.ILLEGAL_GENERATION)
        self.group_manager.store_offsets(entry, offsets, respond, producer_id, producer_epoch)

    def complete_transaction(self, offsets_partition: int, producer_id: int, commit: bool) -> None:
        """A COMMIT (``commit``) or ABORT marker of ``producer_id`` was written to
        ``__consumer_offsets``-``offsets_partition`` (Kafka's ``scheduleHandleTxnCompletion``
        / ``handleTxnCompletion``): that producer's pending offsets of the partition's
        groups become committed (unless a commit from a later batch is already stored),
        or are dropped. While the partition loads the marker is applied after the load;
        on a partition this coordinator does not own it is ignored (the new owner replays
        the marker from the log).
        """
        self.group_manager.complete_transaction(offsets_partition, producer_id, commit)

    def fetch_offsets(
        self,
        group_id: str,
        partitions: list[TopicPartitionTuple] | None,
        require_stable: bool = False,
        member_id: str | None = None,
        member_epoch: int = -1,
    ) -> tuple[int, dict[TopicPartitionTuple, OffsetFetchEntry]]:
        """Committed offsets of ``partitions`` (None: every partition the group has).

        With ``require_stable`` (OffsetFetch v7+, KIP-447) a partition with a commit in
        flight or in an open transaction answers UNSTABLE_OFFSET_COMMIT (Kafka's
        ``getOffsets``); without it pending transactional offsets are simply not seen.
        ``member_id`` / ``member_epoch`` (v9) are checked against a ``consumer`` group's members.
        """
        error = self._status_error(group_id, allow_empty_id=True)
        if error is not None:
            return error, {}
        consumer = self.consumer_groups.get(group_id)
        if consumer is not None:
            error = self.consumer_groups.validate_offset_fetch(consumer, member_id, member_epoch)
            if error is not None:
                return error, {}
        return ErrorCode.NONE, self.group_manager.get_offsets(group_id, partitions, require_stable)

    # ------------------------------------------------------------------ admin

    def list_groups(self) -> tuple[int, list[GroupOverview]]:
        if not self.active:
            return ErrorCode.COORDINATOR_NOT_AVAILABLE, []
        # While a partition loads Kafka reports the error *and* the groups it already has.
        error = ErrorCode.COORDINATOR_LOAD_IN_PROGRESS if self.group_manager.is_loading() else ErrorCode.NONE
        classic = [
            GroupOverview(gid, e.group.protocol_type or "", e.group.state.value)
            for gid, e in self.group_manager.current_groups()
            if e.group.state is not GroupState.DEAD
        ]
        consumer = [
            GroupOverview(gid, PROTOCOL_TYPE, str(e.group.state), "consumer")
            for gid, e in self.consumer_groups.entries()
        ]
        share = [GroupOverview(gid, "share", str(e.group.state), "share") for gid, e in self.share_groups.entries()]
        return error, sorted(classic + consumer + share, key=lambda g: g.group_id)

    def describe_group(self, group_id: str) -> tuple[int, GroupSummary]:
        error = self._status_error(group_id, allow_empty_id=True)
        if error is not None:
            return error, EMPTY_SUMMARY
        entry = self.group_manager.get_group(group_id)
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

    def use_group_configs(self, overrides: Callable[[str], Mapping[str, str]]) -> None:
        """Kafka 4's ``GroupConfigManager``: *overrides(group id)* are the group's config overrides;
        consumer groups apply ``consumer.session.timeout.ms`` / ``consumer.heartbeat.interval.ms``
        and share groups ``share.session.timeout.ms`` / ``share.heartbeat.interval.ms`` from them
        (read at each heartbeat: a member's session timer and the interval it is told)."""
        self.consumer_groups.consumer_kind.overrides = overrides
        self.share_groups.share_kind.overrides = overrides

    def begin_share_group_deletions(
        self, group_ids: list[str], respond: Callable[[dict[str, tuple[int, dict[bytes, frozenset[int]]]]], None]
    ) -> None:
        """DeleteGroups, first step for the share groups among *group_ids* (Kafka 4.2's
        ``deleteShareGroups``): ``respond({share group id: (error, topic id → partitions whose
        state the share coordinator must delete)})``; ids that are no share group held here are
        left out (:meth:`delete_groups` answers them).  Then DeleteShareGroupState (the caller's),
        then :meth:`delete_groups` for the groups whose state is gone."""
        wanted = [g for g in dict.fromkeys(group_ids)
                  if self._status_error(g, allow_empty_id=True) is None and self.share_groups.get(g) is not None]
        results: dict[str, tuple[int, dict[bytes, frozenset[int]]]] = {}
        if not wanted:
            return respond(results)

        def one_done(gid: str, error: int, to_delete: dict[bytes, frozenset[int]]) -> None:
            results[gid] = (error, to_delete)
            if len(results) == len(wanted):
                respond(results)

        for gid in wanted:
            self.share_groups.begin_delete(gid, partial(one_done, gid))

    def delete_groups(self, group_ids: list[str], respond: Callable[[dict[str, int]], None]) -> None:
        """DeleteGroups: only Empty groups go; their offsets and metadata get tombstones.  A share
        group's share-partition state must be deleted first (:meth:`begin_share_group_deletions`)."""
        results: dict[str, int] = {}
        eligible: list[GroupEntry] = []
        consumer_deletions: list[str] = []
        share_deletions: list[str] = []
        for gid in dict.fromkeys(group_ids):  # a group named twice is handled once (Kafka takes a set)
            error = self._status_error(gid, allow_empty_id=True)
            if error is not None:
                results[gid] = error
                continue
            if self.consumer_groups.get(gid) is not None:
                consumer_deletions.append(gid)
                continue
            if self.share_groups.get(gid) is not None:
                share_deletions.append(gid)
                continue
            entry = self.group_manager.get_group(gid)
            if entry is None or entry.group.state is GroupState.DEAD:
                results[gid] = ErrorCode.GROUP_ID_NOT_FOUND
            elif entry.group.state is GroupState.EMPTY:
                eligible.append(entry)
            else:
                results[gid] = ErrorCode.NON_EMPTY_GROUP
        consumer_tombstones: dict[str, list[tuple[bytes, bytes | None]]] = {}
        for gid in consumer_deletions:
            error, tombstones = self.consumer_groups.delete(gid)
            if error != ErrorCode.NONE:
                results[gid] = error
            else:
                consumer_tombstones[gid] = tombstones
        for gid in share_deletions:
            error, tombstones = self.share_groups.delete(gid)
            if error != ErrorCode.NONE:
                results[gid] = error
            else:
                consumer_tombstones[gid] = tombstones
        if not eligible and not consumer_tombstones:
            return respond(results)
        outstanding = {"n": len(eligible) + len(consumer_tombstones)}

        def one_done(gid: str, error: int) -> None:
            results[gid] = error  # NONE, or the append error mapped as a ``storeGroup`` error
            outstanding["n"] -= 1
            if outstanding["n"] == 0:
                respond(results)

        for entry in eligible:
            gid = entry.group.group_id
            self.group_manager.delete_group(entry, partial(one_done, gid), self._rebalancer.on_group_unloaded)
        for gid, tombstones in consumer_tombstones.items():
            self.group_manager.delete_consumer_group(gid, tombstones, partial(one_done, gid))

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
        offset is answered NONE, as in Kafka. A ``consumer`` group (KIP-848) is Kafka 4's
        case: see :meth:`_delete_consumer_group_offsets`.

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
        consumer = self.consumer_groups.get(group_id)
        if consumer is not None:
            return self._delete_consumer_group_offsets(consumer, partitions, respond)
        entry = self.group_manager.get_group(group_id)
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

        def deleted(error: int) -> None:
            if error == ErrorCode.NONE:
                respond(ErrorCode.NONE, results)
            else:
                respond(error, {})

        self.group_manager.delete_offsets(entry, eligible, deleted)

    def _delete_consumer_group_offsets(
        self,
        entry: ConsumerGroupEntry,
        partitions: Iterable[TopicPartitionTuple],
        respond: Callable[[int, dict[TopicPartitionTuple, int]], None],
    ) -> None:
        """OffsetDelete for a ``consumer`` group, as Kafka 4's ``OffsetMetadataManager.deleteOffsets``:
        any state will do (``ConsumerGroup.validateOffsetDelete`` does nothing); every partition of
        a topic the group subscribes to (by name or through a resolved regex, Kafka's
        ``isSubscribedToTopic``) keeps its offset (GROUP_SUBSCRIBED_TO_TOPIC), the others lose
        theirs (NONE, with or without an offset); the group stays, even Empty without offsets
        (``cleanupGroupMetadata`` deletes it later).  Answered once the tombstones are written,
        as for a classic group."""
        subscribed = entry.group.subscribed_topics()
        results: dict[TopicPartitionTuple, int] = {}
        eligible: list[TopicPartitionTuple] = []
        for tp in dict.fromkeys(partitions):
            if tp[0] in subscribed:
                results[tp] = ErrorCode.GROUP_SUBSCRIBED_TO_TOPIC
            else:
                results[tp] = ErrorCode.NONE
                eligible.append(tp)
        if not eligible:
            return respond(ErrorCode.NONE, results)

        def deleted(error: int) -> None:
            if error == ErrorCode.NONE:
                respond(ErrorCode.NONE, results)
            else:
                respond(error, {})

        self.group_manager.delete_offsets(entry, eligible, deleted)

    def expire_offsets(self, subscribed_topics: Callable[[GroupMetadata], set[str] | None] | None = None) -> int:
        """Kafka's ``cleanupGroupMetadata``: drop offsets past ``offsets.retention.minutes``,
        and Empty groups left without offsets; write their tombstones. Returns the
        number of offsets removed."""
        return self.group_manager.expire_offsets(subscribed_topics)


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
