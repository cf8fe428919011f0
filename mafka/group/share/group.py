"""A share group (KIP-932) and its ShareGroupHeartbeat handling, as plain Python.

Kafka 4.2's ``ShareGroup`` with the share-group half of its ``GroupMetadataManager``: no
sockets, no reactor, no clock of its own (every call that needs time takes ``now_ms``), no log
of its own.

How a change happens (as in Kafka, and as :mod:`mafka.group.consumer.group` does it): a
request is validated and its outcome computed from the group as it is, *as records*; the
records are then applied to the group through :meth:`ShareGroup.replay`, the very method a
coordinator loading ``__consumer_offsets`` uses.  So the live group and a group rebuilt from
its records cannot drift apart.  The methods return the records they applied; the caller
appends them to the group's ``__consumer_offsets`` partition before it answers.  (If that
append fails, the group in memory is ahead of the log: the caller rebuilds it with
:meth:`ShareGroup.from_records`.)

Contract:

* **Epochs.**  The group epoch moves up by one when a member joins, leaves, is fenced or
  changes its subscribed topics, when the subscribed topics' metadata hash changes (a
  subscribed topic created, deleted or re-created, or given more partitions), and when
  share-partitions of a subscribed topic became initialized but are not all assigned yet.
  A heartbeat that finds the group epoch ahead of the target assignment epoch computes a new
  target assignment with Kafka's ``simple`` assignor (:mod:`.assignor`) over the
  *initialized* share-partitions, and writes the changed members' targets.
* **No revocation.**  A share-partition may be assigned to several members at once, so a
  member gets its target (restricted to the topics it subscribes to) as soon as it
  heartbeats: its epoch moves to the target epoch and its assignment is the target.
* **ShareGroupHeartbeat** (:meth:`ShareGroup.heartbeat`, v1): member epoch 0 joins (with the
  member id the client chose; a member id the group has rejoins and keeps its epoch and
  partitions), -1 leaves.  Errors, as Kafka 4.2's: INVALID_REQUEST (an empty or over-long
  member id, an empty group or rack id, a join without topics, an epoch below -1),
  GROUP_MAX_SIZE_REACHED (``group.share.max.size``), UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH
  (an epoch other than the member's, except its previous epoch in case the bumped one was
  lost), GROUP_ID_NOT_FOUND (a deleted group, to anything but a join).  An error changes
  nothing and writes nothing.  The response carries the assignment on a join, a full request
  (topic names sent), or when it changed.
* **Share-partition state** (:mod:`.state_metadata`): a share-partition is assigned only once
  the share coordinator has initialized its state.  A heartbeat whose group subscribes to
  partitions neither initialized nor being initialized (for less than
  ``group.share.initialize.retry.interval.ms``) writes them as initializing and returns an
  :class:`~.group_types.InitializeRequest`; the caller sends it to the share coordinator
  once the records are appended and reports the answer with :meth:`ShareGroup.initialize_done`
  or :meth:`ShareGroup.initialize_failed`.  The next heartbeat then assigns them.
* **Timers** (:meth:`ShareGroup.expire`): a member not heard from for
  ``group.share.session.timeout.ms`` is fenced (removed, group epoch bumped).
* **States**: Empty (no members), Stable (members), Dead once the group's records are deleted.

Using it (a coordinator): make a :class:`ShareGroup` when a join (epoch 0) names a group it
does not have (any other heartbeat gets GROUP_ID_NOT_FOUND, as in Kafka) and drop it again if
that join failed; call :meth:`ShareGroup.expire` at :meth:`ShareGroup.next_deadline_ms`; rebuild
groups from ``__consumer_offsets`` with :meth:`ShareGroup.from_records` on load; remove the
share sessions (:mod:`.sessions`) of a member that left (:attr:`HeartbeatResult.left_member_id`)
or was fenced.  ``topics`` arguments are every topic of the cluster by name; topics without an
id (all zero bytes) are ignored, since the records name topics by id.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from dataclasses import replace
from types import MappingProxyType

from mafka.errors import (
    FencedMemberEpochError,
    GroupIdNotFoundError,
    GroupMaxSizeReachedError,
    IllegalStateError,
    InvalidRequestError,
    KafkaError,
    NonEmptyGroupError,
    UnknownMemberIdError,
)
from mafka.group.consumer.member import TopicIdPartitions, TopicInfo
from mafka.group.share.assignor import (
    ShareAssignmentSpec,
    ShareMemberSpec,
    SimpleAssignor,
)
from mafka.group.share.group_types import (
    MAX_MEMBER_ID_LENGTH,
    ExpireResult,
    FencedMember,
    GroupSnapshot,
    HeartbeatRequest,
    HeartbeatResponse,
    HeartbeatResult,
    InitializeRequest,
    MemberDescription,
    ShareGroupConfig,
    ShareGroupDescription,
    ShareGroupState,
    TopicPartitionsDescription,
)
from mafka.group.share.member import LEAVE_GROUP_MEMBER_EPOCH, MemberState, ShareGroupMember
from mafka.group.share.metadata_hash import metadata_hash
from mafka.group.share.records import (
    CoordinatorRecord,
    ShareGroupCurrentMemberAssignmentKey,
    ShareGroupCurrentMemberAssignmentValue,
    ShareGroupMemberMetadataKey,
    ShareGroupMemberMetadataValue,
    ShareGroupMetadataKey,
    ShareGroupMetadataValue,
    ShareGroupStatePartitionMetadataKey,
    ShareGroupStatePartitionMetadataValue,
    ShareGroupTargetAssignmentMemberKey,
    ShareGroupTargetAssignmentMemberValue,
    ShareGroupTargetAssignmentMetadataKey,
    ShareGroupTargetAssignmentMetadataValue,
    TopicPartitionsInfo,
    current_assignment_record,
    current_assignment_tombstone,
    from_topic_partitions,
    group_epoch_record,
    group_epoch_tombstone,
    member_subscription_record,
    member_subscription_tombstone,
    state_partition_metadata_record,
    state_partition_metadata_tombstone,
    target_assignment_epoch_record,
    target_assignment_epoch_tombstone,
    target_assignment_record,
    target_assignment_tombstone,
)
from mafka.group.share.state_metadata import StatePartitionMetadata, to_initialize

__all__ = [
    "ExpireResult",
    "FencedMember",
    "GroupSnapshot",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "HeartbeatResult",
    "InitializeRequest",
    "ShareGroup",
    "ShareGroupConfig",
    "ShareGroupDescription",
    "ShareGroupState",
]

log = logging.getLogger("mafka.group.share")

_NO_TOPIC_ID = bytes(16)


class ShareGroup:
    """One share group (see the module docstring for the contract).

    Args:
        group_id: the group id.
        config: the ``group.share.*`` settings (group-level overrides already applied).
        assignor: the share assignor (Kafka 4 has one: ``simple``).
    """

    def __init__(
        self, group_id: str, config: ShareGroupConfig | None = None, assignor: SimpleAssignor | None = None
    ) -> None:
        self.group_id = group_id
        self.config = config if config is not None else ShareGroupConfig()
        self._assignor = assignor if assignor is not None else SimpleAssignor()
        self._group_epoch = 0
        self._metadata_hash = 0
        self._assignment_epoch = 0
        self._dead = False
        self._members: dict[str, ShareGroupMember] = {}
        self._target: dict[str, dict[bytes, frozenset[int]]] = {}
        self._state_metadata: StatePartitionMetadata | None = None
        # Soft state (not in the records): the session timers, when each initializing topic was
        # last asked for (stamped at replay, as Kafka stamps it), and the time of the operation
        # being applied.
        self._session_deadlines: dict[str, int] = {}
        self._initializing_since: dict[bytes, int] = {}
        self._clock = 0

    # ------------------------------------------------------------------ views

    @property
    def group_epoch(self) -> int:
        return self._group_epoch

    @property
    def assignment_epoch(self) -> int:
        """The epoch of the current target assignment (-1 once its records are deleted)."""
        return self._assignment_epoch

    @property
    def metadata_hash(self) -> int:
        """The subscribed topics' metadata hash the group epoch was last computed with."""
        return self._metadata_hash

    @property
    def members(self) -> Mapping[str, ShareGroupMember]:
        return MappingProxyType(self._members)

    @property
    def target_assignment(self) -> Mapping[str, TopicIdPartitions]:
        return MappingProxyType(self._target)

    @property
    def state_partition_metadata(self) -> StatePartitionMetadata | None:
        """Which share-partitions are initializing, initialized and deleting (None: no record)."""
        return self._state_metadata

    @property
    def initialized_partitions(self) -> dict[bytes, frozenset[int]]:
        """Topic id → share-partitions whose state is initialized (Kafka's ``initializedShareGroupPartitions``)."""
        return {} if self._state_metadata is None else self._state_metadata.initialized_partitions()

    @property
    def subscribed_topic_names(self) -> dict[str, int]:
        """Topic name → how many members subscribe to it."""
        return _subscription_counts(self._members.values())

    @property
    def state(self) -> ShareGroupState:
        if self._dead:
            return ShareGroupState.DEAD
        return ShareGroupState.STABLE if self._members else ShareGroupState.EMPTY

    @property
    def is_dead(self) -> bool:
        return self._dead

    def assignment(self, member_id: str) -> Mapping[bytes, frozenset[int]] | None:
        """The share-partitions *member_id* may fetch from, or None if it is not a member."""
        member = self._members.get(member_id)
        return None if member is None else member.assigned_partitions

    def snapshot(self) -> GroupSnapshot:
        """The group's durable state (what its records rebuild), as one comparable value."""
        return GroupSnapshot(
            self.group_id,
            self.state,
            self._group_epoch,
            self._assignment_epoch,
            self._metadata_hash,
            dict(self._members),
            {m: dict(p) for m, p in self._target.items()},
            self._state_metadata,
        )

    def describe(self, topics: Mapping[str, TopicInfo]) -> ShareGroupDescription:
        """ShareGroupDescribe's view (Kafka's ``asDescribedGroup``); assigned topics that no
        longer exist are left out, as Kafka leaves them out."""
        names = {info.topic_id: name for name, info in _existing(topics).items()}
        members = []
        for member_id in sorted(self._members):
            m = self._members[member_id]
            assignment = tuple(
                TopicPartitionsDescription(t, names[t], tuple(sorted(parts)))
                for t, parts in sorted(m.assigned_partitions.items())
                if t in names
            )
            members.append(
                MemberDescription(
                    m.member_id,
                    m.rack_id,
                    m.member_epoch,
                    m.client_id,
                    m.client_host,
                    tuple(sorted(m.subscribed_topic_names)),
                    assignment,
                )
            )
        return ShareGroupDescription(
            self.group_id,
            str(self.state),
            self._group_epoch,
            self._assignment_epoch,
            self._assignor.name,
            tuple(members),
        )

    # ------------------------------------------------------------------ heartbeat

    def heartbeat(self, request: HeartbeatRequest, now_ms: int, topics: Mapping[str, TopicInfo]) -> HeartbeatResult:
        """Handle one ShareGroupHeartbeat.

        Args:
            request: the request (see :class:`HeartbeatRequest`).
            now_ms: the current time, for the member's session timer.
            topics: every topic of the cluster by name.

        Returns:
            The response, the records applied, and the share-partitions to initialize; an
            error response applies nothing.

        Raises:
            ValueError: *request* names another group (a bug in the caller).
        """
        try:
            _validate(request)
            if request.group_id != self.group_id:
                raise ValueError(f"heartbeat for group {request.group_id!r} sent to group {self.group_id!r}")
            if self._dead and request.member_epoch != 0:
                raise GroupIdNotFoundError(f"Share group {self.group_id} not found.")
            self._clock = now_ms
            existing = _existing(topics)
            if request.member_epoch == LEAVE_GROUP_MEMBER_EPOCH:
                return self._leave(request, existing)
            if not self._dead:
                return self._heartbeat(request, now_ms, existing)
            # A join re-creates a deleted group from scratch (its records revive it on replay).
            saved = self._group_epoch, self._assignment_epoch, self._metadata_hash
            self._revive()
            try:
                return self._heartbeat(request, now_ms, existing)
            except KafkaError:
                self._dead = True
                self._group_epoch, self._assignment_epoch, self._metadata_hash = saved
                raise
        except KafkaError as e:
            return HeartbeatResult(HeartbeatResponse(error_code=e.code, error_message=e.message))

    def _heartbeat(self, request: HeartbeatRequest, now_ms: int, topics: Mapping[str, TopicInfo]) -> HeartbeatResult:
        """Kafka 4.2's ``shareGroupHeartbeat`` for a joining or heartbeating member."""
        member_id, epoch = request.member_id, request.member_epoch
        if len(self._members) >= self.config.max_size and member_id not in self._members:
            raise GroupMaxSizeReachedError(
                f"The share group has reached its maximum capacity of {self.config.max_size} members."
            )
        member = self._members.get(member_id)
        joining = member is None
        if member is None:
            if epoch != 0:
                raise UnknownMemberIdError(f"Member {member_id} is not a member of group {self.group_id}.")
            log.info("[GroupId %s] Member %s joins the share group.", self.group_id, member_id)
            member = ShareGroupMember(member_id)
        else:
            _throw_if_epoch_invalid(member, epoch)
        records: list[CoordinatorRecord] = []

        # 1. The member's subscription; the group epoch moves if it, the subscribed topics'
        # metadata, or the initialized share-partitions call for a new assignment.
        updated = replace(
            member,
            rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
            subscribed_topic_names=(
                frozenset(request.subscribed_topic_names)
                if request.subscribed_topic_names is not None
                else member.subscribed_topic_names
            ),
            client_id=request.client_id,
            client_host=request.client_host,
        )
        bump = False
        if joining or updated != member:
            records.append(self._subscription_record(updated))
            if updated.subscribed_topic_names != member.subscribed_topic_names:
                log.info(
                    "[GroupId %s] Member %s updated its subscribed topics to: %s.",
                    self.group_id, member_id, sorted(updated.subscribed_topic_names),
                )
                bump = True
        bump = bump or self._initialized_assignment_pending(topics)
        members_after = {**self._members, member_id: updated}
        subscribed = _subscription_counts(members_after.values())
        new_hash = metadata_hash(subscribed, topics)
        if new_hash != self._metadata_hash:
            log.info("[GroupId %s] Computed new metadata hash: %d.", self.group_id, new_hash)
            bump = True
        group_epoch = self._group_epoch
        if bump:
            group_epoch += 1
            records.append(group_epoch_record(self.group_id, group_epoch, new_hash))
            log.info("[GroupId %s] Bumped group epoch to %d with metadata hash %d.", self.group_id, group_epoch, new_hash)

        # 2. A new target assignment if the group epoch moved past it.
        if group_epoch > self._assignment_epoch:
            targets = self._compute_targets(group_epoch, members_after, subscribed, topics)
            records.extend(
                target_assignment_record(self.group_id, m, targets[m])
                for m in sorted(targets)
                if m not in self._target or targets[m] != self._target[m]
            )
            records.append(target_assignment_epoch_record(self.group_id, group_epoch))
            log.info(
                "[GroupId %s] Computed a new target assignment for epoch %d with '%s' assignor.",
                self.group_id, group_epoch, self._assignor.name,
            )
            target_epoch, target = group_epoch, targets.get(member_id, {})
        else:
            target_epoch, target = self._assignment_epoch, self._target.get(member_id, {})

        # 3. The member gets its target (no revocation in a share group).
        reconciled = _reconcile(updated, target_epoch, target, bump, topics)
        if reconciled != updated:
            records.append(self._current_assignment_record(reconciled))

        # 4. Share-partitions to initialize before they can be assigned.
        initialize = None
        pending = to_initialize(
            self._state_metadata,
            self._initializing_since,
            subscribed,
            topics,
            now_ms,
            self.config.initialize_retry_interval_ms,
        )
        if pending:
            current = self._state_metadata or StatePartitionMetadata()
            records.append(self._state_metadata_record(current.with_initializing(pending)))
            initialize = InitializeRequest(
                self.group_id,
                group_epoch,
                {t: dict.fromkeys(sorted(parts), -1) for t, (_, parts) in sorted(pending.items())},
            )

        self._apply(records)
        self._session_deadlines[member_id] = now_ms + self.config.session_timeout_ms

        send_assignment = (
            epoch == 0
            or request.subscribed_topic_names is not None
            or reconciled.assigned_partitions != member.assigned_partitions
        )
        return HeartbeatResult(
            HeartbeatResponse(
                member_id=reconciled.member_id,
                member_epoch=reconciled.member_epoch,
                heartbeat_interval_ms=self.config.heartbeat_interval_ms,
                assignment=dict(reconciled.assigned_partitions) if send_assignment else None,
            ),
            tuple(records),
            initialize,
        )

    def _initialized_assignment_pending(self, topics: Mapping[str, TopicInfo]) -> bool:
        """Kafka's ``initializedAssignmentPending``: some initialized share-partition of a
        subscribed topic is not in the target assignment (or the target names others).

        Only topics that exist under the same id, and partitions below their count, are
        looked at: Kafka relies on the topic-deletion cleanup (:meth:`topics_deleted`) having
        run, and a stale entry would bump the group epoch on every heartbeat.
        """
        if not self._members or self._state_metadata is None or not self._state_metadata.initialized:
            return False
        subscribed = _subscription_counts(self._members.values())
        if not subscribed:
            return False
        assigned: dict[bytes, set[int]] = {}
        for target in self._target.values():
            for t, parts in target.items():
                assigned.setdefault(t, set()).update(parts)
        initialized = self._state_metadata.initialized_partitions()
        for name in subscribed:
            info = topics.get(name)
            if info is None or info.topic_id not in initialized:
                continue
            parts = initialized[info.topic_id] & frozenset(range(info.partitions))
            if parts and assigned.get(info.topic_id) != set(parts):
                return True
        return False

    def _compute_targets(
        self,
        group_epoch: int,
        members: Mapping[str, ShareGroupMember],
        subscribed: Mapping[str, int],
        topics: Mapping[str, TopicInfo],
    ) -> dict[str, dict[bytes, frozenset[int]]]:
        """Every member's new target (Kafka's ``updateTargetAssignment`` with ``SimpleAssignor``)."""
        initialized = self.initialized_partitions
        assignable: dict[bytes, frozenset[int]] = {}
        for name in subscribed:
            info = topics.get(name)
            if info is not None and info.topic_id in initialized:
                assignable[info.topic_id] = initialized[info.topic_id] & frozenset(range(info.partitions))
        specs = {
            m: ShareMemberSpec(_topic_ids(member.subscribed_topic_names, topics), self._target.get(m, {}))
            for m, member in members.items()
        }
        homogeneous = all(count == len(members) for count in subscribed.values())
        try:
            answer = self._assignor.assign(ShareAssignmentSpec(specs, assignable, homogeneous))
        except Exception as e:  # any assignor failure fails this heartbeat only
            raise KafkaError(
                f"Failed to compute a new target assignment for epoch {group_epoch}: {e}"
            ) from e
        return {m: {t: frozenset(p) for t, p in answer.get(m, {}).items() if p} for m in members}

    def _leave(self, request: HeartbeatRequest, topics: Mapping[str, TopicInfo]) -> HeartbeatResult:
        """Kafka's ``shareGroupLeave``: the member is removed and the group epoch bumped."""
        member = self._members.get(request.member_id)
        if member is None:
            raise UnknownMemberIdError(f"Member {request.member_id} is not a member of group {self.group_id}.")
        log.info("[GroupId %s] Member %s left the share group.", self.group_id, member.member_id)
        return HeartbeatResult(
            HeartbeatResponse(member_id=request.member_id, member_epoch=request.member_epoch),
            self._fence(member, topics),
            left_member_id=member.member_id,
        )

    # ------------------------------------------------------------------ fencing and timers

    def _fence(self, member: ShareGroupMember, topics: Mapping[str, TopicInfo]) -> tuple[CoordinatorRecord, ...]:
        """Kafka's ``shareGroupFenceMember``: tombstones for the member, the group epoch bumped
        with the metadata hash of the remaining subscriptions; applied."""
        remaining = [m for m in self._members.values() if m.member_id != member.member_id]
        records = [
            current_assignment_tombstone(self.group_id, member.member_id),
            target_assignment_tombstone(self.group_id, member.member_id),
            member_subscription_tombstone(self.group_id, member.member_id),
            group_epoch_record(
                self.group_id, self._group_epoch + 1, metadata_hash(_subscription_counts(remaining), topics)
            ),
        ]
        self._apply(records)
        self._session_deadlines.pop(member.member_id, None)
        return tuple(records)

    def expire(self, now_ms: int, topics: Mapping[str, TopicInfo]) -> ExpireResult:
        """Fence every member whose session (``group.share.session.timeout.ms`` after its last
        heartbeat) has expired at *now_ms*, in deadline order, each fencing bumping the epoch."""
        self._clock = now_ms
        existing = _existing(topics)
        due = sorted((deadline, m) for m, deadline in self._session_deadlines.items() if deadline <= now_ms)
        fenced: list[FencedMember] = []
        records: list[CoordinatorRecord] = []
        for _, member_id in due:
            self._session_deadlines.pop(member_id, None)
            member = self._members.get(member_id)
            if member is None:
                continue
            reason = "the member session expired."
            log.info("[GroupId %s] Member %s fenced from the group because %s", self.group_id, member_id, reason)
            records.extend(self._fence(member, existing))
            fenced.append(FencedMember(member_id, reason))
        return ExpireResult(tuple(fenced), tuple(records))

    def next_deadline_ms(self) -> int | None:
        """When :meth:`expire` has something to do next, or None if no timer runs."""
        return min(self._session_deadlines.values(), default=None)

    def on_loaded(self, now_ms: int) -> None:
        """Kafka's ``onLoaded``: arm every member's session timer from *now_ms*."""
        self._clock = now_ms
        self._session_deadlines = {m: now_ms + self.config.session_timeout_ms for m in self._members}
        self._initializing_since = dict.fromkeys(self._initializing_since, now_ms)

    # ------------------------------------------------------------------ share-partition state

    def initialize_done(
        self, partitions: Mapping[bytes, Iterable[int]], now_ms: int, topics: Mapping[str, TopicInfo]
    ) -> tuple[CoordinatorRecord, ...]:
        """Kafka's ``initializeShareGroupState``: the share coordinator initialized *partitions*
        (topic id → partitions); they become assignable (the next heartbeat assigns them)."""
        if self._dead or not any(partitions.values()):
            return ()
        self._clock = now_ms
        names = {info.topic_id: name for name, info in _existing(topics).items()}
        current = self._state_metadata or StatePartitionMetadata()
        records = [self._state_metadata_record(current.with_initialized(partitions, names))]
        self._apply(records)
        return tuple(records)

    def initialize_failed(self, partitions: Mapping[bytes, Iterable[int]], now_ms: int) -> tuple[CoordinatorRecord, ...]:
        """Kafka's ``uninitializeShareGroupState``: initializing *partitions* failed; they stop
        initializing (a later heartbeat asks again)."""
        info = self._state_metadata
        if self._dead or info is None or not info.initializing or not partitions:
            return ()
        self._clock = now_ms
        records = [self._state_metadata_record(info.without_initializing(partitions))]
        self._apply(records)
        return tuple(records)

    def topics_deleted(self, topic_ids: Iterable[bytes], now_ms: int) -> tuple[CoordinatorRecord, ...]:
        """Kafka's ``maybeCleanupShareGroupState``: deleted topics leave the state metadata."""
        info = self._state_metadata
        gone = set(topic_ids)
        if self._dead or info is None or not gone & (set(info.initializing) | set(info.initialized) | set(info.deleting)):
            return ()
        self._clock = now_ms
        records = [self._state_metadata_record(info.without_topics(gone))]
        self._apply(records)
        return tuple(records)

    def alter_offsets(
        self, offsets: Mapping[bytes, Mapping[int, int]], now_ms: int, topics: Mapping[str, TopicInfo]
    ) -> tuple[tuple[CoordinatorRecord, ...], InitializeRequest]:
        """Kafka's ``alterShareGroupOffsets`` (AlterShareGroupOffsets 91) for partitions the caller
        checked exist: topic id → partition → new start offset.  They are written as
        initializing; the caller sends the :class:`InitializeRequest` to the share coordinator
        and reports its answer with :meth:`initialize_done` / :meth:`initialize_failed`.

        Raises:
            NonEmptyGroupError: the group has members.
        """
        self._throw_if_not_empty()
        self._clock = now_ms
        names = {info.topic_id: name for name, info in _existing(topics).items()}
        pending = {t: (names.get(t, "<UNKNOWN>"), frozenset(parts)) for t, parts in offsets.items() if parts}
        records: list[CoordinatorRecord] = []
        if pending:
            current = self._state_metadata or StatePartitionMetadata()
            records.append(self._state_metadata_record(current.with_initializing(pending)))
        self._apply(records)
        request = InitializeRequest(
            self.group_id,
            self._group_epoch,
            {t: dict(sorted(parts.items())) for t, parts in sorted(offsets.items()) if parts},
        )
        return tuple(records), request

    def begin_delete_offsets(
        self, topic_ids: Iterable[bytes], now_ms: int, topics: Mapping[str, TopicInfo]
    ) -> tuple[tuple[CoordinatorRecord, ...], dict[bytes, frozenset[int]]]:
        """Kafka's ``sharePartitionsEligibleForOffsetDeletion`` (DeleteShareGroupOffsets 92):
        initialized topics among *topic_ids* move to deleting; returns the records and the
        share-partitions whose state the share coordinator must delete (a topic already
        deleting is asked for again, all its partitions).  A topic in neither set is not
        returned: the caller answers it UNKNOWN_TOPIC_OR_PARTITION.  Finish with
        :meth:`complete_delete_offsets`.

        Raises:
            NonEmptyGroupError: the group has members.
        """
        self._throw_if_not_empty()
        info = self._state_metadata
        if info is None:
            return (), {}
        self._clock = now_ms
        by_id = {i.topic_id: i for i in _existing(topics).values()}
        wanted = [t for t in topic_ids if t in by_id]
        to_delete: dict[bytes, frozenset[int]] = {}
        for t in wanted:
            if t in info.initialized:
                to_delete[t] = info.initialized[t][1]
            elif t in info.deleting:
                to_delete[t] = frozenset(range(by_id[t].partitions))
        records = [self._state_metadata_record(info.deleting_for_offsets(wanted))]
        self._apply(records)
        return tuple(records), to_delete

    def complete_delete_offsets(self, topic_ids: Iterable[bytes], now_ms: int) -> tuple[CoordinatorRecord, ...]:
        """Kafka's ``completeDeleteShareGroupOffsets``: the state of *topic_ids* is deleted."""
        info = self._state_metadata
        if info is None:
            return ()
        self._clock = now_ms
        records = [self._state_metadata_record(info.without_deleting(topic_ids))]
        self._apply(records)
        return tuple(records)

    def begin_delete(
        self, now_ms: int, topics: Mapping[str, TopicInfo]
    ) -> tuple[tuple[CoordinatorRecord, ...], dict[bytes, frozenset[int]]]:
        """Kafka's ``shareGroupBuildPartitionDeleteRequest`` (DeleteGroups, first step): every
        initializing or initialized share-partition moves to deleting; returns the records and
        the share-partitions whose state the share coordinator must delete (topics already
        deleting that still exist are asked for again, all partitions).  Then :meth:`delete`.

        Raises:
            NonEmptyGroupError: the group has members.
            GroupIdNotFoundError: the group is already deleted.
        """
        if self._dead:
            raise GroupIdNotFoundError(f"Share group {self.group_id} not found.")
        self._throw_if_not_empty()
        info = self._state_metadata
        if info is None:
            return (), {}
        self._clock = now_ms
        by_id = {i.topic_id: i for i in _existing(topics).values()}
        retry = {t: (by_id[t].name, frozenset(range(by_id[t].partitions))) for t in info.deleting if t in by_id}
        candidates = info.delete_candidates(retry)
        deleting = {t: name for t, (name, _) in candidates.items()}
        records = [self._state_metadata_record(StatePartitionMetadata({}, {}, deleting))]
        self._apply(records)
        return tuple(records), {t: parts for t, (_, parts) in candidates.items()}

    def delete(self) -> tuple[CoordinatorRecord, ...]:
        """Kafka's ``createGroupTombstoneRecords`` for an Empty group, applied (the group is Dead).

        Raises:
            NonEmptyGroupError: the group has members.
            GroupIdNotFoundError: the group is already deleted.
        """
        if self._dead:
            raise GroupIdNotFoundError(f"Share group {self.group_id} not found.")
        self._throw_if_not_empty()
        records = [target_assignment_tombstone(self.group_id, m) for m in sorted(self._target)]
        records += [
            target_assignment_epoch_tombstone(self.group_id),
            state_partition_metadata_tombstone(self.group_id),
            group_epoch_tombstone(self.group_id),
        ]
        self._apply(records)
        self._session_deadlines.clear()
        return tuple(records)

    def _throw_if_not_empty(self) -> None:
        if self._members:
            raise NonEmptyGroupError("The group is not empty.")

    def _revive(self) -> None:
        """A record or join for a deleted group: Kafka creates a new group, which starts at epoch 0."""
        self._dead = False
        self._group_epoch = 0
        self._assignment_epoch = 0
        self._metadata_hash = 0

    # ------------------------------------------------------------------ record builders

    def _subscription_record(self, m: ShareGroupMember) -> CoordinatorRecord:
        return member_subscription_record(
            self.group_id, m.member_id, m.rack_id, m.client_id, m.client_host, m.subscribed_topic_names
        )

    def _current_assignment_record(self, m: ShareGroupMember) -> CoordinatorRecord:
        return current_assignment_record(
            self.group_id, m.member_id, m.member_epoch, m.previous_member_epoch, int(m.state), m.assigned_partitions
        )

    def _state_metadata_record(self, info: StatePartitionMetadata) -> CoordinatorRecord:
        return state_partition_metadata_record(self.group_id, info.initializing, info.initialized, info.deleting)

    # ------------------------------------------------------------------ replay

    @classmethod
    def from_records(
        cls,
        group_id: str,
        records: Iterable[CoordinatorRecord],
        now_ms: int,
        config: ShareGroupConfig | None = None,
        assignor: SimpleAssignor | None = None,
    ) -> ShareGroup:
        """The group its records (log order, tombstones included) describe, timers armed at *now_ms*."""
        group = cls(group_id, config, assignor)
        group._clock = now_ms
        for record in records:
            group.replay(record)
        group.on_loaded(now_ms)
        return group

    def _apply(self, records: Iterable[CoordinatorRecord]) -> None:
        for record in records:
            self.replay(record)

    def replay(self, record: CoordinatorRecord) -> None:
        """Apply one record (Kafka's ``GroupMetadataManager.replay`` for the six share types).

        Raises:
            ValueError: the record belongs to another group.
            IllegalStateError: the records are inconsistent (a member tombstone before its
                assignment tombstone, a group tombstone while members remain, ...).
        """
        key, value = record.key, record.value
        if key.group_id != self.group_id:
            raise ValueError(f"record of group {key.group_id!r} replayed into group {self.group_id!r}")
        if self._dead:
            if value is None:
                return  # a tombstone for a group that no longer exists changes nothing
            self._revive()  # any other record belongs to a new group of the same id
        if isinstance(key, ShareGroupMetadataKey):
            self._replay_group_epoch(value)
        elif isinstance(key, ShareGroupMemberMetadataKey):
            self._replay_member_metadata(key.member_id, value)
        elif isinstance(key, ShareGroupTargetAssignmentMemberKey):
            assert value is None or isinstance(value, ShareGroupTargetAssignmentMemberValue)
            if value is None:
                self._target.pop(key.member_id, None)
            else:
                self._target[key.member_id] = from_topic_partitions(value.topic_partitions)
        elif isinstance(key, ShareGroupTargetAssignmentMetadataKey):
            assert value is None or isinstance(value, ShareGroupTargetAssignmentMetadataValue)
            if value is None:
                if self._target:
                    raise IllegalStateError(
                        f"Received a tombstone record to delete target assignment of {self.group_id} "
                        f"but the assignment still has {len(self._target)} members."
                    )
                self._assignment_epoch = -1
            else:
                self._assignment_epoch = value.assignment_epoch
        elif isinstance(key, ShareGroupCurrentMemberAssignmentKey):
            self._replay_current_assignment(key.member_id, value)
        else:
            assert isinstance(key, ShareGroupStatePartitionMetadataKey)
            self._replay_state_metadata(value)

    def _replay_group_epoch(self, value: object) -> None:
        assert value is None or isinstance(value, ShareGroupMetadataValue)
        if value is not None:
            self._group_epoch = value.epoch
            self._metadata_hash = value.metadata_hash
            return
        if self._members:
            raise IllegalStateError(
                f"Received a tombstone record to delete group {self.group_id} "
                f"but the group still has {len(self._members)} members."
            )
        if self._target:
            raise IllegalStateError(
                f"Received a tombstone record to delete group {self.group_id} "
                f"but the target assignment still has {len(self._target)} members."
            )
        if self._assignment_epoch != -1:
            raise IllegalStateError(
                f"Received a tombstone record to delete group {self.group_id} "
                "but target assignment epoch in invalid."
            )
        self._dead = True
        self._state_metadata = None
        self._initializing_since.clear()

    def _replay_member_metadata(self, member_id: str, value: object) -> None:
        assert value is None or isinstance(value, ShareGroupMemberMetadataValue)
        if value is not None:
            old = self._members.get(member_id) or ShareGroupMember(member_id)
            self._members[member_id] = replace(
                old,
                rack_id=value.rack_id,
                client_id=value.client_id,
                client_host=value.client_host,
                subscribed_topic_names=frozenset(value.subscribed_topic_names),
            )
            return
        member = self._members.get(member_id)
        if member is None:
            return
        if member.member_epoch != LEAVE_GROUP_MEMBER_EPOCH:
            raise IllegalStateError(
                f"Received a tombstone record to delete member {member_id} with invalid leave group epoch."
            )
        if member_id in self._target:
            raise IllegalStateError(
                f"Received a tombstone record to delete member {member_id} but member exists in target assignment."
            )
        del self._members[member_id]

    def _replay_current_assignment(self, member_id: str, value: object) -> None:
        assert value is None or isinstance(value, ShareGroupCurrentMemberAssignmentValue)
        if value is not None:
            old = self._members.get(member_id) or ShareGroupMember(member_id)
            self._members[member_id] = replace(
                old,
                member_epoch=value.member_epoch,
                previous_member_epoch=value.previous_member_epoch,
                state=MemberState.from_value(value.state),
                assigned_partitions=from_topic_partitions(value.assigned_partitions),
            )
            return
        member = self._members.get(member_id)
        if member is not None:
            self._members[member_id] = replace(
                member,
                member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                assigned_partitions={},
            )

    def _replay_state_metadata(self, value: object) -> None:
        assert value is None or isinstance(value, ShareGroupStatePartitionMetadataValue)
        if value is None:
            self._state_metadata = None
            self._initializing_since.clear()
            return

        def init_map(items: Iterable[TopicPartitionsInfo]) -> dict[bytes, tuple[str, frozenset[int]]]:
            out: dict[bytes, tuple[str, frozenset[int]]] = {}
            for info in items:  # a topic listed twice gets both lists
                previous = out.get(info.topic_id, (info.topic_name, frozenset()))[1]
                out[info.topic_id] = (info.topic_name, previous | frozenset(info.partitions))
            return out

        self._state_metadata = StatePartitionMetadata(
            init_map(value.initializing_topics),
            init_map(value.initialized_topics),
            {t.topic_id: t.topic_name for t in value.deleting_topics},
        )
        # Kafka stamps every initializing topic with the time the record is replayed.
        self._initializing_since = dict.fromkeys(self._state_metadata.initializing, self._clock)


# --------------------------------------------------------------------------- helpers


def _validate(request: HeartbeatRequest) -> None:
    """KafkaApis' ``isMemberIdValid`` and Kafka's ``throwIfShareGroupHeartbeatRequestIsInvalid``."""
    if not request.member_id or len(request.member_id) > MAX_MEMBER_ID_LENGTH:
        raise InvalidRequestError("Invalid member id in the request.")
    _throw_if_empty(request.member_id, "MemberId can't be empty.")
    _throw_if_empty(request.group_id, "GroupId can't be empty.")
    _throw_if_empty(request.rack_id, "RackId can't be empty.")
    if request.member_epoch == 0:
        if not request.subscribed_topic_names:
            raise InvalidRequestError("SubscribedTopicNames must be set in first request.")
    elif request.member_epoch < LEAVE_GROUP_MEMBER_EPOCH:
        raise InvalidRequestError("MemberEpoch is invalid.")


def _throw_if_empty(value: str | None, message: str) -> None:
    """Kafka's ``throwIfEmptyString``: a non-null value that is empty or whitespace."""
    if value is not None and not value.strip():
        raise InvalidRequestError(message)


def _throw_if_epoch_invalid(member: ShareGroupMember, received: int) -> None:
    """Kafka's ``throwIfShareGroupMemberEpochIsInvalid`` (epoch 0, a rejoin, always passes)."""
    if received == 0:
        return
    if received > member.member_epoch:
        raise FencedMemberEpochError(
            f"The share group member has a greater member epoch ({received}) than the one known by the "
            f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin."
        )
    if received < member.member_epoch and received != member.previous_member_epoch:
        raise FencedMemberEpochError(
            f"The share group member has a smaller member epoch ({received}) than the one known by the "
            f"group coordinator ({member.member_epoch}), and it does not match the previous member epoch "
            f"({member.previous_member_epoch}). The member must abandon all its partitions and rejoin."
        )


def _existing(topics: Mapping[str, TopicInfo]) -> dict[str, TopicInfo]:
    """The topics that have an id (the records name topics by id)."""
    return {name: info for name, info in topics.items() if info.topic_id != _NO_TOPIC_ID}


def _subscription_counts(members: Iterable[ShareGroupMember]) -> dict[str, int]:
    counts: dict[str, int] = {}
    for member in members:
        for name in member.subscribed_topic_names:
            counts[name] = counts.get(name, 0) + 1
    return counts


def _topic_ids(names: Iterable[str], topics: Mapping[str, TopicInfo]) -> frozenset[bytes]:
    """Kafka's ``TopicIds``: the ids of the named topics that exist."""
    return frozenset(topics[n].topic_id for n in names if n in topics)


def _reconcile(
    member: ShareGroupMember,
    target_epoch: int,
    target: TopicIdPartitions,
    subscription_changed: bool,
    topics: Mapping[str, TopicInfo],
) -> ShareGroupMember:
    """Kafka's ``maybeReconcile`` with ``ShareGroupAssignmentBuilder``: the member moves to the
    target epoch with its target (only the topics it subscribes to), at once."""
    if not subscription_changed and member.is_reconciled_to(target_epoch):
        return member
    subscribed = _topic_ids(member.subscribed_topic_names, topics)
    filtered = {t: parts for t, parts in target.items() if t in subscribed}
    if target_epoch != member.member_epoch:
        return replace(member, state=MemberState.STABLE, assigned_partitions=filtered).with_epoch(target_epoch)
    if subscription_changed:
        return replace(member, assigned_partitions=filtered)
    return member
