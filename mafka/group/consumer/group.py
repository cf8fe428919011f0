"""A ``consumer`` group (KIP-848) and its ConsumerGroupHeartbeat handling, as plain Python.

Kafka 4's ``ConsumerGroup`` with the consumer-group half of its ``GroupMetadataManager``:
no sockets, no reactor, no clock of its own (every call takes ``now_ms``), no log of its own.

How a change happens (as in Kafka): a request is validated and its outcome computed from the
group as it is, *as records*; the records are then applied to the group through
:meth:`ConsumerGroup.replay`, the very method a coordinator loading ``__consumer_offsets``
uses.  So the live group and a group rebuilt from its records cannot drift apart, and a
coordinator failover resumes with the same epochs, members and assignments.  The methods
return the records they applied; the caller appends them to the group's
``__consumer_offsets`` partition before it answers the member.  (If that append fails, the
group in memory is ahead of the log: the caller rebuilds it with :meth:`ConsumerGroup.from_records`.)

Contract:

* **Epochs.**  The group epoch moves up by one when a member joins, leaves, is fenced or
  changes its subscription (topic names or regex), and when the subscribed topics' metadata
  changes (a subscribed topic created or deleted, its partition count changed).  A
  heartbeat that finds the group epoch ahead of the target assignment epoch computes a new
  target assignment with the group's server assignor (the one most members ask for, else
  the first of ``group.consumer.assignors``) and writes the changed members' targets.  Each
  member is then reconciled towards its target on its own heartbeats
  (:mod:`.reconciliation`): revocation before assignment, so a partition is never owned by
  two members; epochs never go down.
* **ConsumerGroupHeartbeat** (:meth:`ConsumerGroup.heartbeat`): member epoch 0 joins (a
  member id the group already has rejoins with its partitions, as KIP-848 specifies and
  KAFKA-19233 fixed), -1 leaves, -2 is a static member leaving for a while (it keeps its
  partitions until its session expires), a static member rejoining under its
  ``group.instance.id`` with a new member id takes over its predecessor's assignment
  without a rebalance.  Errors, as Kafka's: INVALID_REQUEST (bad field combinations),
  UNSUPPORTED_ASSIGNOR, INVALID_REGULAR_EXPRESSION, GROUP_MAX_SIZE_REACHED,
  UNKNOWN_MEMBER_ID, FENCED_MEMBER_EPOCH (an epoch other than the member's, except its
  previous epoch when the partitions it reports are all still assigned to it, in case the
  bumped epoch was lost), FENCED_INSTANCE_ID, UNRELEASED_INSTANCE_ID, GROUP_ID_NOT_FOUND
  (a deleted group).  An error changes nothing and writes nothing.  The response carries
  the member's assignment only on a join, a full request, or when it changed.
* **Timers** (:meth:`ConsumerGroup.expire`): a member not heard from for
  ``group.consumer.session.timeout.ms`` is fenced; a member that has not revoked partitions
  within its rebalance timeout after being asked to is fenced.  Fencing removes the member
  and bumps the group epoch (the next heartbeat computes the new target).
* **Regular expressions** are resolved as Kafka 4 resolves them: asynchronously.  The
  heartbeat that brings a regex the group has not resolved yet is answered without its
  topics (a member subscribing to ``[regex, topic]`` is first assigned ``topic``) and does not
  bump the group epoch for it; the coordinator then calls :meth:`ConsumerGroup.refresh_regexes`
  (when :meth:`ConsumerGroup.regex_refresh_due` says so, after answering), which resolves every
  subscribed regex (Python's ``re``, whole names, internal topics excluded) and bumps the group
  epoch if a resolution or the subscription metadata changed, so the member's next heartbeat
  brings the regex's partitions.  Topics created later are picked up by a refresh at most every
  ``REGEX_BATCH_REFRESH_INTERVAL_MS`` (Kafka's 10 s batching).  A regex no member subscribes to
  any more is forgotten, so subscribing to it again resolves it again.  The resolutions are
  soft state (Kafka writes ``ConsumerGroupRegularExpression`` records; these records do not
  exist here): a loaded group takes them from its subscription metadata and refreshes them
  after its first heartbeat.
* **Classic members** (KIP-848's online migration): a member may use the classic protocol
  (JoinGroup/SyncGroup/Heartbeat/LeaveGroup, handled by :mod:`.classic_members`, which uses
  the heartbeat steps here); it carries ``ClassicMemberMetadata`` in its records, its own
  session timeout and join/sync timers (:class:`~.classic_members.ClassicTimers`).  Fencing
  (:meth:`ConsumerGroup.fence_members`) that leaves only classic members downgrades the group
  when ``group.consumer.migration.policy`` allows it: every record is tombstoned, the group
  is Dead and :attr:`ConsumerGroup.converted_to_classic` tells the coordinator what classic
  group it became (:mod:`.migration`).
* **States** (:attr:`ConsumerGroup.state`), as Kafka 4 reports them: Empty (no members),
  Assigning (group epoch ahead of the target assignment epoch), Reconciling (some member is
  not Stable at the target epoch), Stable, and Dead once the group's records are deleted.

Using it (a coordinator): make a :class:`ConsumerGroup` when a join (epoch 0) names a group it
does not have (any other heartbeat gets GROUP_ID_NOT_FOUND, as in Kafka) and drop it again if
that join failed; call :meth:`ConsumerGroup.expire` at :meth:`ConsumerGroup.next_deadline_ms`;
rebuild groups from ``__consumer_offsets`` with :meth:`ConsumerGroup.from_records` on load.
The values it takes and returns live in :mod:`.group_types` (re-exported here), the topic
resolution in :mod:`.subscriptions`, the target computation in :mod:`.target_assignment`, the
records in :mod:`.records`.
"""

from __future__ import annotations

import logging
import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType

from mafka.errors import (
    ConfigError,
    FencedInstanceIdError,
    FencedMemberEpochError,
    GroupIdNotFoundError,
    GroupMaxSizeReachedError,
    IllegalStateError,
    InvalidRegularExpressionError,
    InvalidRequestError,
    KafkaError,
    NonEmptyGroupError,
    UnknownMemberIdError,
    UnreleasedInstanceIdError,
    UnsupportedAssignorError,
)
from mafka.group.consumer.assignor_api import PartitionAssignor
from mafka.group.consumer.classic_members import ClassicTimers
from mafka.group.consumer.group_types import (
    ConsumerGroupConfig,
    ConsumerGroupState,
    ExpireResult,
    FencedMember,
    GroupSnapshot,
    HeartbeatRequest,
    HeartbeatResponse,
    HeartbeatResult,
    configured_assignors,
    new_member_id,
)
from mafka.group.consumer.member import (
    LEAVE_GROUP_MEMBER_EPOCH,
    LEAVE_GROUP_STATIC_MEMBER_EPOCH,
    ConsumerGroupMember,
    MemberState,
    TopicIdPartitions,
    TopicInfo,
    is_subset,
    partitions_of,
)
from mafka.group.consumer.migration import Downgrade, downgrade_on_fence, group_tombstones
from mafka.group.consumer.reconciliation import reconcile
from mafka.group.consumer.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    CoordinatorRecord,
    current_assignment_record,
    current_assignment_tombstone,
    from_topic_partitions,
    group_epoch_record,
    group_epoch_tombstone,
    member_subscription_record,
    member_subscription_tombstone,
    subscription_metadata_record,
    subscription_metadata_tombstone,
    target_assignment_epoch_tombstone,
    target_assignment_record,
    target_assignment_tombstone,
)
from mafka.group.consumer.subscriptions import (
    compute_subscription_metadata,
    resolve_regex,
    subscribed_topics,
)
from mafka.group.consumer.target_assignment import build_target_assignment

__all__ = [
    "ConsumerGroup",
    "ConsumerGroupConfig",
    "ConsumerGroupState",
    "ExpireResult",
    "FencedMember",
    "GroupSnapshot",
    "HeartbeatRequest",
    "HeartbeatResponse",
    "HeartbeatResult",
    "configured_assignors",
    "new_member_id",
]

log = logging.getLogger("mafka.group.consumer")

#: Kafka 4's ``REGEX_BATCH_REFRESH_INTERVAL_MS``: topics created since the last resolution are
#: matched against the group's regexes at most this often.
REGEX_BATCH_REFRESH_INTERVAL_MS = 10_000


# --------------------------------------------------------------------------- the group


class ConsumerGroup:
    """One consumer group (see the module docstring for the contract).

    Args:
        group_id: the group id.
        config: the ``group.consumer.*`` settings.
        assignors: the server assignors by name (the first is the default); None for the
            built-in ones ``config.assignors`` names.
        member_id_factory: makes member ids for version-0 joins that bring none.
    """

    def __init__(
        self,
        group_id: str,
        config: ConsumerGroupConfig | None = None,
        assignors: Mapping[str, PartitionAssignor] | None = None,
        *,
        member_id_factory: Callable[[], str] | None = None,
    ) -> None:
        self.group_id = group_id
        self.config = config if config is not None else ConsumerGroupConfig()
        self._assignors = dict(assignors) if assignors is not None else configured_assignors(self.config.assignors)
        if not self._assignors:
            raise ConfigError("a consumer group needs at least one server assignor")
        self._new_member_id = member_id_factory or new_member_id
        self._group_epoch = 0
        self._assignment_epoch = 0
        self._dead = False
        self._members: dict[str, ConsumerGroupMember] = {}
        self._target: dict[str, dict[bytes, frozenset[int]]] = {}
        self._subscription_metadata: dict[str, TopicInfo] = {}
        self._static_members: dict[str, str] = {}
        # (topic id, partition) → (owning member id, its epoch): Kafka's currentPartitionEpoch
        self._owners: dict[tuple[bytes, int], tuple[str, int]] = {}
        # Soft state (not in the records): the timers.
        self._session_deadlines: dict[str, int] = {}
        self._rebalance_deadlines: dict[str, tuple[int, int]] = {}  # member → (epoch, deadline)
        # Soft state too: regex → the topics it resolved to (Kafka's resolvedRegularExpressions),
        # and when and against which topics the last resolution ran.
        self._resolved_regexes: dict[str, frozenset[str]] = {}
        self._regex_refreshed_ms: int | None = None
        self._regex_universe: frozenset[str] = frozenset()
        #: the join and sync timers of members using the classic protocol
        self.classic_timers = ClassicTimers()
        #: set once a fencing or a classic join downgraded this group (it is Dead): the classic
        #: group it became, for the coordinator to install (:mod:`.migration`)
        self.converted_to_classic: Downgrade | None = None

    # ------------------------------------------------------------------ views

    @property
    def group_epoch(self) -> int:
        """The group epoch: bumped by every change of membership, subscriptions or their topics."""
        return self._group_epoch

    @property
    def assignment_epoch(self) -> int:
        """The epoch of the current target assignment (-1 once its records are deleted)."""
        return self._assignment_epoch

    @property
    def members(self) -> Mapping[str, ConsumerGroupMember]:
        return MappingProxyType(self._members)

    @property
    def target_assignment(self) -> Mapping[str, TopicIdPartitions]:
        return MappingProxyType(self._target)

    @property
    def subscription_metadata(self) -> Mapping[str, TopicInfo]:
        """The subscribed topics that exist (by name or through a regex), by name."""
        return MappingProxyType(self._subscription_metadata)

    @property
    def static_members(self) -> Mapping[str, str]:
        """``group.instance.id`` → member id."""
        return MappingProxyType(self._static_members)

    @property
    def subscribed_topic_names(self) -> dict[str, int]:
        """Topic name → how many members subscribe to it by name (Kafka's ``subscribedTopicNames``)."""
        counts: dict[str, int] = {}
        for member in self._members.values():
            for name in member.subscribed_topic_names:
                counts[name] = counts.get(name, 0) + 1
        return counts

    @property
    def state(self) -> ConsumerGroupState:
        """Kafka 4's ``maybeUpdateGroupState``, computed."""
        if self._dead:
            return ConsumerGroupState.DEAD
        if not self._members:
            return ConsumerGroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return ConsumerGroupState.ASSIGNING
        if all(m.is_reconciled_to(self.assignment_epoch) for m in self._members.values()):
            return ConsumerGroupState.STABLE
        return ConsumerGroupState.RECONCILING

    def current_partition_epoch(self, topic_id: bytes, partition: int) -> int:
        """The epoch of the member owning the partition, or -1 if no member owns it."""
        owner = self._owners.get((topic_id, partition))
        return -1 if owner is None else owner[1]

    def partition_owner(self, topic_id: bytes, partition: int) -> str | None:
        """The member owning the partition (assigned or pending revocation), or None."""
        owner = self._owners.get((topic_id, partition))
        return None if owner is None else owner[0]

    def preferred_assignor(self, members: Iterable[ConsumerGroupMember] | None = None) -> str:
        """The server assignor most members ask for (ties: the broker's order), else the default."""
        counts: dict[str, int] = {}
        for member in self._members.values() if members is None else members:
            if member.server_assignor_name is not None:
                counts[member.server_assignor_name] = counts.get(member.server_assignor_name, 0) + 1
        order = {name: i for i, name in enumerate(self._assignors)}
        best = sorted(counts, key=lambda n: (-counts[n], order.get(n, len(order)), n))
        for name in best:
            if name in self._assignors:
                return name
        return next(iter(self._assignors))

    def snapshot(self) -> GroupSnapshot:
        """The group's durable state (what its records rebuild), as one comparable value."""
        return GroupSnapshot(
            self.group_id,
            self.state,
            self.group_epoch,
            self.assignment_epoch,
            dict(self._members),
            {m: dict(p) for m, p in self._target.items()},
            dict(self._subscription_metadata),
            dict(self._static_members),
            dict(self._owners),
        )

    # ------------------------------------------------------------------ heartbeat

    def heartbeat(self, request: HeartbeatRequest, now_ms: int, topics: Mapping[str, TopicInfo]) -> HeartbeatResult:
        """Handle one ConsumerGroupHeartbeat.

        Args:
            request: the request (see :class:`HeartbeatRequest`).
            now_ms: the current time, for the member's session and rebalance timers.
            topics: every topic of the cluster by name (subscriptions and regexes are
                resolved against it).

        Returns:
            The response and the records applied; an error response applies nothing.

        Raises:
            ValueError: *request* names another group (a bug in the caller).
        """
        try:
            self._validate(request)
            if request.group_id != self.group_id:
                raise ValueError(f"heartbeat for group {request.group_id!r} sent to group {self.group_id!r}")
            if self._dead and request.member_epoch != 0:
                raise GroupIdNotFoundError(f"Consumer group {self.group_id} not found.")
            if request.member_epoch in (LEAVE_GROUP_MEMBER_EPOCH, LEAVE_GROUP_STATIC_MEMBER_EPOCH):
                return self._leave(request, topics)
            if not self._dead:
                return self._heartbeat(request, now_ms, topics)
            # A join re-creates a deleted group from scratch (its records revive it on replay).
            epochs = self._group_epoch, self._assignment_epoch
            self._revive()
            try:
                return self._heartbeat(request, now_ms, topics)
            except KafkaError:
                self._dead = True
                self._group_epoch, self._assignment_epoch = epochs
                raise
        except KafkaError as e:
            return HeartbeatResult(HeartbeatResponse(error_code=e.code, error_message=e.message))

    def _validate(self, request: HeartbeatRequest) -> None:
        """Kafka 4's ``throwIfConsumerGroupHeartbeatRequestIsInvalid``."""
        epoch = request.member_epoch
        if request.api_version >= 1 or epoch > 0 or epoch == LEAVE_GROUP_MEMBER_EPOCH:
            _throw_if_empty(request.member_id, "MemberId can't be empty.")
        _throw_if_empty(request.group_id, "GroupId can't be empty.")
        _throw_if_empty(request.instance_id, "InstanceId can't be empty.")
        _throw_if_empty(request.rack_id, "RackId can't be empty.")
        if epoch == 0:
            if request.rebalance_timeout_ms == -1:
                raise InvalidRequestError("RebalanceTimeoutMs must be provided in first request.")
            if request.topic_partitions is None or partitions_of(request.topic_partitions):
                raise InvalidRequestError("TopicPartitions must be empty when (re-)joining.")
            if request.subscribed_topic_names is None and request.subscribed_topic_regex is None:
                raise InvalidRequestError(
                    "Either SubscribedTopicNames or SubscribedTopicRegex must be non-null when (re-)joining."
                )
        elif epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            _throw_if_empty(request.member_id, "MemberId can't be empty.")
            if request.instance_id is None:
                raise InvalidRequestError("InstanceId can't be null.")
        elif epoch < LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            raise InvalidRequestError("MemberEpoch is invalid.")
        if request.server_assignor is not None and request.server_assignor not in self._assignors:
            raise UnsupportedAssignorError(
                f"ServerAssignor {request.server_assignor} is not supported. "
                f"Supported assignors: {', '.join(self._assignors)}."
            )
        regex = request.subscribed_topic_regex
        if regex:
            try:
                re.compile(regex)
            except re.error as e:
                raise InvalidRegularExpressionError(
                    f"SubscribedTopicRegex `{regex}` is not a valid regular expression: {e}."
                ) from None

    def _heartbeat(self, request: HeartbeatRequest, now_ms: int, topics: Mapping[str, TopicInfo]) -> HeartbeatResult:
        """Kafka 4's ``consumerGroupHeartbeat`` for a joining or heartbeating member."""
        epoch = request.member_epoch
        joining = epoch == 0
        owned = None if request.topic_partitions is None else partitions_of(request.topic_partitions)
        if len(self._members) >= self.config.max_size and (
            not request.member_id or request.member_id not in self._members
        ):
            raise GroupMaxSizeReachedError(
                f"The consumer group has reached its maximum capacity of {self.config.max_size} members."
            )
        member_id = request.member_id or self._new_member_id()
        records: list[CoordinatorRecord] = []

        replaced: str | None = None
        if request.instance_id is None:
            member = self._dynamic_member(member_id, epoch, owned)
        else:
            member, replaced = self._static_member(member_id, epoch, request.instance_id, owned, records)

        # 1. The member's subscription; the group epoch moves if it (or the topics) changed.
        updated = replace(
            member,
            instance_id=request.instance_id if request.instance_id is not None else member.instance_id,
            rack_id=request.rack_id if request.rack_id is not None else member.rack_id,
            rebalance_timeout_ms=(
                request.rebalance_timeout_ms if request.rebalance_timeout_ms != -1 else member.rebalance_timeout_ms
            ),
            server_assignor_name=(
                request.server_assignor if request.server_assignor is not None else member.server_assignor_name
            ),
            subscribed_topic_names=(
                frozenset(request.subscribed_topic_names)
                if request.subscribed_topic_names is not None
                else member.subscribed_topic_names
            ),
            subscribed_topic_regex=(
                (request.subscribed_topic_regex or None)
                if request.subscribed_topic_regex is not None
                else member.subscribed_topic_regex
            ),
            client_id=request.client_id,
            client_host=request.client_host,
            classic_member_metadata=None,  # a member heartbeating uses the consumer protocol (now)
        )
        group_epoch, metadata = self._update_subscription(member, updated, replaced, topics, records)
        # 2. A new target assignment if the group epoch moved past it.
        target_epoch, target = self._update_target(updated, replaced, group_epoch, metadata, records)
        # 3. Reconcile the member towards its target.
        reconciled = self._reconcile(updated, target_epoch, target, owned, records)

        self._apply(records)
        if replaced is not None:
            self._forget_timers(replaced)
        self.classic_timers.forget(member_id)  # a classic member that now heartbeats has no join or sync timer
        self._session_deadlines[member_id] = now_ms + self.config.session_timeout_ms
        if reconciled != updated:
            if reconciled.state is MemberState.UNREVOKED_PARTITIONS:
                self._rebalance_deadlines[member_id] = (
                    reconciled.member_epoch,
                    now_ms + max(reconciled.rebalance_timeout_ms, 0),
                )
            else:
                self._rebalance_deadlines.pop(member_id, None)

        full_request = joining or (
            request.rebalance_timeout_ms != -1
            and (request.subscribed_topic_names is not None or request.subscribed_topic_regex is not None)
            and owned is not None
        )
        send_assignment = full_request or reconciled.assigned_partitions != member.assigned_partitions
        return HeartbeatResult(
            HeartbeatResponse(
                member_id=reconciled.member_id,
                member_epoch=reconciled.member_epoch,
                heartbeat_interval_ms=self.config.heartbeat_interval_ms,
                assignment=dict(reconciled.assigned_partitions) if send_assignment else None,
            ),
            tuple(records),
        )

    # Steps 1-3 of a member's heartbeat, shared with classic members' JoinGroup
    # (:mod:`.classic_members`): each appends the records of its change, none applies them.

    def _update_subscription(
        self,
        member: ConsumerGroupMember,
        updated: ConsumerGroupMember,
        replaced: str | None,
        topics: Mapping[str, TopicInfo],
        records: list[CoordinatorRecord],
    ) -> tuple[int, dict[str, TopicInfo]]:
        """Step 1: *updated* replaces *member* (and the static member *replaced*, if any); a change
        of its subscribed topic names, of its regex to one already resolved or to none, or of the
        subscribed topics' metadata, bumps the group epoch (as does anything in a group still at
        epoch 0).  A new regex does not: the refresh that resolves it will (Kafka's
        ``maybeUpdateRegularExpressions``).  Returns the group epoch and the subscription
        metadata after the change."""
        bump = self.group_epoch == 0  # a new group moves away from epoch 0 at once
        if updated != member:
            records.append(member_subscription_record(self.group_id, updated))
            new_regex = updated.subscribed_topic_regex
            bump = bump or updated.subscribed_topic_names != member.subscribed_topic_names or (
                new_regex != member.subscribed_topic_regex
                and (new_regex is None or new_regex in self._resolved_regexes)
            )
        metadata = compute_subscription_metadata(
            self._members_after(updated, replaced).values(), topics, self._resolved_regexes
        )
        if metadata != self._subscription_metadata:
            records.append(subscription_metadata_record(self.group_id, metadata))
            bump = True
        group_epoch = self.group_epoch + 1 if bump else self.group_epoch
        if bump:
            records.append(group_epoch_record(self.group_id, group_epoch))
        return group_epoch, metadata

    def _members_after(self, updated: ConsumerGroupMember, replaced: str | None) -> dict[str, ConsumerGroupMember]:
        members_after = dict(self._members)
        if replaced is not None:
            members_after.pop(replaced, None)
        members_after[updated.member_id] = updated
        return members_after

    def _update_target(
        self,
        updated: ConsumerGroupMember,
        replaced: str | None,
        group_epoch: int,
        metadata: Mapping[str, TopicInfo],
        records: list[CoordinatorRecord],
    ) -> tuple[int, TopicIdPartitions]:
        """Step 2: a new target assignment if *group_epoch* moved past the target's epoch.
        Returns the target epoch and *updated*'s target."""
        if group_epoch <= self.assignment_epoch:
            return self.assignment_epoch, self._target.get(replaced if replaced is not None else updated.member_id, {})
        assignor_name = self.preferred_assignor(self._members_after(updated, replaced).values())
        computed = build_target_assignment(
            self.group_id,
            group_epoch,
            self._assignors[assignor_name],
            self._members,
            self._target,
            metadata,
            lambda m: subscribed_topics(m, self._resolved_regexes),
            updated_member=updated,
            replaced_member_id=replaced,
        )
        log.info(
            "[GroupId %s] Computed a new target assignment for epoch %d with '%s' assignor.",
            self.group_id, group_epoch, assignor_name,
        )
        records.extend(computed.records)
        return group_epoch, computed.members.get(updated.member_id, {})

    def _reconcile(
        self,
        updated: ConsumerGroupMember,
        target_epoch: int,
        target: TopicIdPartitions,
        owned: TopicIdPartitions | None,
        records: list[CoordinatorRecord],
    ) -> ConsumerGroupMember:
        """Step 3: *updated* reconciled towards its target (itself if already there)."""
        reconciled = updated
        if not updated.is_reconciled_to(target_epoch):
            reconciled = reconcile(updated, target_epoch, target, self.current_partition_epoch, owned)
        if reconciled != updated:
            records.append(current_assignment_record(self.group_id, reconciled))
        return reconciled

    def _dynamic_member(self, member_id: str, epoch: int, owned: TopicIdPartitions | None) -> ConsumerGroupMember:
        member = self._members.get(member_id)
        if member is None:
            if epoch != 0:
                raise UnknownMemberIdError(f"Member {member_id} is not a member of group {self.group_id}.")
            log.info("[GroupId %s] Member %s joins the consumer group.", self.group_id, member_id)
            return ConsumerGroupMember(member_id)
        _throw_if_epoch_invalid(member, epoch, owned)
        return member

    def _static_member(
        self,
        member_id: str,
        epoch: int,
        instance_id: str,
        owned: TopicIdPartitions | None,
        records: list[CoordinatorRecord],
    ) -> tuple[ConsumerGroupMember, str | None]:
        """The member for a static member's heartbeat, and the member id it replaces (if any)."""
        existing_id = self._static_members.get(instance_id)
        existing = None if existing_id is None else self._members.get(existing_id)
        if epoch == 0:
            if existing is None:
                log.info(
                    "[GroupId %s] Static member %s with instance id %s joins the consumer group.",
                    self.group_id, member_id, instance_id,
                )
                return self._members.get(member_id) or ConsumerGroupMember(member_id), None
            if existing.member_id == member_id:
                return existing, None  # the same member rejoining (after being fenced, say)
            if existing.member_epoch != LEAVE_GROUP_STATIC_MEMBER_EPOCH and not existing.uses_classic_protocol:
                # (A classic predecessor is replaced at once: it never sends a leave with -2.)
                raise UnreleasedInstanceIdError(
                    f"Static member {member_id} with instance id {instance_id} cannot join the group because "
                    f"the instance id is owned by {existing.member_id} member."
                )
            return self._replacement(existing, member_id, records), existing.member_id
        if existing is None:
            raise UnknownMemberIdError(f"Instance id {instance_id} is unknown.")
        if existing.member_id != member_id:
            raise FencedInstanceIdError(
                f"Static member {member_id} with instance id {instance_id} was fenced by member {existing.member_id}."
            )
        _throw_if_epoch_invalid(existing, epoch, owned)
        return existing, None

    def _replacement(
        self, existing: ConsumerGroupMember, member_id: str, records: list[CoordinatorRecord]
    ) -> ConsumerGroupMember:
        """Kafka's ``replaceMember``: *member_id* takes over the static member *existing*'s
        subscription, partitions and target (appends the records, applies none)."""
        new_member = replace(existing, member_id=member_id, member_epoch=0, previous_member_epoch=0)
        records.extend(self._removal_records(existing.member_id))
        records.append(member_subscription_record(self.group_id, new_member))
        records.append(target_assignment_record(self.group_id, member_id, self._target.get(existing.member_id, {})))
        records.append(current_assignment_record(self.group_id, new_member))
        log.info(
            "[GroupId %s] Static member with instance id %s re-joins the consumer group. "
            "Created a new member %s to replace the existing member %s.",
            self.group_id, existing.instance_id, member_id, existing.member_id,
        )
        return new_member

    def _leave(self, request: HeartbeatRequest, topics: Mapping[str, TopicInfo]) -> HeartbeatResult:
        """Kafka 4's ``consumerGroupLeave``: -1 removes the member, -2 parks a static member."""
        response = HeartbeatResponse(member_id=request.member_id, member_epoch=request.member_epoch)
        if request.instance_id is None:
            member = self._members.get(request.member_id)
            if member is None:
                raise UnknownMemberIdError(f"Member {request.member_id} is not a member of group {self.group_id}.")
            log.info("[GroupId %s] Member %s left the consumer group.", self.group_id, member.member_id)
            return HeartbeatResult(response, self._fence(member, topics))
        existing_id = self._static_members.get(request.instance_id)
        member = None if existing_id is None else self._members.get(existing_id)
        if member is None:
            raise UnknownMemberIdError(f"Instance id {request.instance_id} is unknown.")
        if member.member_id != request.member_id:
            raise FencedInstanceIdError(
                f"Static member {request.member_id} with instance id {request.instance_id} "
                f"was fenced by member {member.member_id}."
            )
        if request.member_epoch == LEAVE_GROUP_STATIC_MEMBER_EPOCH:
            # The member keeps its partitions (no rebalance) until it rejoins or its session expires.
            log.info(
                "[GroupId %s] Static Member %s with instance id %s temporarily left the consumer group.",
                self.group_id, member.member_id, request.instance_id,
            )
            leaving = replace(member, member_epoch=LEAVE_GROUP_STATIC_MEMBER_EPOCH, partitions_pending_revocation={})
            records = [current_assignment_record(self.group_id, leaving)]
            self._apply(records)
            return HeartbeatResult(response, tuple(records))
        log.info(
            "[GroupId %s] Static Member %s with instance id %s left the consumer group.",
            self.group_id, member.member_id, request.instance_id,
        )
        return HeartbeatResult(response, self._fence(member, topics))

    # ------------------------------------------------------------------ removal, timers, deletion

    def _removal_records(self, member_id: str) -> list[CoordinatorRecord]:
        """Kafka's ``removeMember`` tombstones, in the order replay needs them."""
        return [
            current_assignment_tombstone(self.group_id, member_id),
            target_assignment_tombstone(self.group_id, member_id),
            member_subscription_tombstone(self.group_id, member_id),
        ]

    def _fence(self, member: ConsumerGroupMember, topics: Mapping[str, TopicInfo] | None) -> tuple[CoordinatorRecord, ...]:
        """Kafka's ``consumerGroupFenceMember``: :meth:`fence_members` of one member."""
        return self.fence_members((member,), topics)

    def fence_members(
        self, members: Sequence[ConsumerGroupMember], topics: Mapping[str, TopicInfo] | None
    ) -> tuple[CoordinatorRecord, ...]:
        """Kafka's ``consumerGroupFenceMembers``: remove *members* and bump the group epoch once;
        applied.  If only members using the classic protocol would remain and
        ``group.consumer.migration.policy`` allows it, the group is downgraded instead
        (:mod:`.migration`): every record of it is tombstoned, it is Dead, and
        :attr:`converted_to_classic` tells what classic group it became."""
        if not members:
            return ()
        downgrade = downgrade_on_fence(
            self, members, f"Downgrade group {self.group_id} from consumer to classic for member leaving."
        )
        if downgrade is not None:
            records = group_tombstones(self)
            self._apply(records)
            self.converted_to_classic = downgrade
            self._clear_timers()
            log.info("[GroupId %s] Converted the consumer group to a classic group.", self.group_id)
            return tuple(records)
        leaving = {m.member_id for m in members}
        records = [r for member_id in sorted(leaving) for r in self._removal_records(member_id)]
        remaining = [m for m in self._members.values() if m.member_id not in leaving]
        if topics is not None:
            metadata = compute_subscription_metadata(remaining, topics, self._resolved_regexes)
        else:
            # No topic list at hand (a timer): the remaining subscriptions can only drop topics.
            metadata = {
                name: info
                for name, info in self._subscription_metadata.items()
                if any(name in subscribed_topics(m, self._resolved_regexes) for m in remaining)
            }
        if metadata != self._subscription_metadata:
            records.append(subscription_metadata_record(self.group_id, metadata))
        records.append(group_epoch_record(self.group_id, self.group_epoch + 1))
        self._apply(records)
        for member_id in leaving:
            self._forget_timers(member_id)
        return tuple(records)

    # ------------------------------------------------------------------ regular expressions

    def subscribed_regexes(self) -> frozenset[str]:
        """The regexes the members subscribe to."""
        return frozenset(m.subscribed_topic_regex for m in self._members.values() if m.subscribed_topic_regex)

    def subscribed_topics(self) -> frozenset[str]:
        """Every topic a member subscribes to, by name or through a resolved regex, whether it
        exists or not (Kafka's ``subscribedTopicNames`` keys, ``isSubscribedToTopic``)."""
        out: set[str] = set()
        for member in self._members.values():
            out |= subscribed_topics(member, self._resolved_regexes)
        return frozenset(out)

    def _forget_unsubscribed_regexes(self) -> None:
        """Kafka tombstones a resolved regex when its last subscriber drops it."""
        subscribed = self.subscribed_regexes()
        for regex in [r for r in self._resolved_regexes if r not in subscribed]:
            del self._resolved_regexes[regex]

    def regex_refresh_due(self, now_ms: int, topics: Mapping[str, TopicInfo]) -> bool:
        """Whether the coordinator should run :meth:`refresh_regexes` (after answering the
        heartbeat it just handled): a subscribed regex is not resolved yet, or topics were
        created since the last resolution and that was ``REGEX_BATCH_REFRESH_INTERVAL_MS`` ago.

        (Kafka also waits out the 10 s before resolving a new regex when the group already has
        resolved ones; here a new regex is resolved at once, which only makes it faster.)"""
        regexes = self.subscribed_regexes()
        if not regexes or self._dead:
            return False
        if self._regex_refreshed_ms is None or any(r not in self._resolved_regexes for r in regexes):
            return True
        return (
            not self._regex_universe.issuperset(topics)
            and now_ms >= self._regex_refreshed_ms + REGEX_BATCH_REFRESH_INTERVAL_MS
        )

    def refresh_regexes(self, now_ms: int, topics: Mapping[str, TopicInfo]) -> tuple[CoordinatorRecord, ...]:
        """Kafka's ``refreshRegularExpressions`` + ``handleRegularExpressionsResult``: resolve
        every subscribed regex against *topics*; if a resolution or the subscription metadata
        changed, the group epoch moves (the members' next heartbeats compute the new target and
        bring the regexes' partitions).  Applied; the records are returned for the log."""
        if self._dead:
            return ()
        self._regex_refreshed_ms = now_ms
        self._regex_universe = frozenset(topics)
        resolved = {regex: resolve_regex(regex, topics) for regex in self.subscribed_regexes()}
        changed = any(self._resolved_regexes.get(r) != t for r, t in resolved.items())
        self._resolved_regexes = resolved
        metadata = compute_subscription_metadata(self._members.values(), topics, resolved)
        records: list[CoordinatorRecord] = []
        if metadata != self._subscription_metadata:
            records.append(subscription_metadata_record(self.group_id, metadata))
            changed = True
        if changed:
            records.append(group_epoch_record(self.group_id, self.group_epoch + 1))
            log.info("[GroupId %s] Bumped group epoch to %d (regular expressions resolved: %s).",
                     self.group_id, self.group_epoch + 1, ", ".join(sorted(resolved)))
        self._apply(records)
        return tuple(records)

    # Soft state (not in the records): timers.

    def schedule_session_timeout(self, member_id: str, deadline_ms: int) -> None:
        """The member is fenced at *deadline_ms* unless this is called again before (a classic
        member's session timeout is its own, :mod:`.classic_members` sets it)."""
        self._session_deadlines[member_id] = deadline_ms

    def _forget_timers(self, member_id: str) -> None:
        self._session_deadlines.pop(member_id, None)
        self._rebalance_deadlines.pop(member_id, None)
        self.classic_timers.forget(member_id)

    def _clear_timers(self) -> None:
        self._session_deadlines.clear()
        self._rebalance_deadlines.clear()
        self.classic_timers.clear()

    def expire(self, now_ms: int, topics: Mapping[str, TopicInfo] | None = None) -> ExpireResult:
        """Fence every member whose session or rebalance timeout has passed at *now_ms*.

        A session expires ``group.consumer.session.timeout.ms`` (a classic member's: its own
        session timeout) after the member's last successful heartbeat; a rebalance timeout
        fires when a member asked to revoke partitions at some epoch is still at that epoch its
        rebalance timeout later; a classic member's join and sync timers are those of
        :class:`~.classic_members.ClassicTimers`.  Timers are handled in deadline order, each
        fencing bumping the group epoch once (or downgrading the group, after which nothing
        more is fenced).

        Args:
            topics: the cluster's topics, if at hand (else the subscription metadata can only
                shrink to what the remaining members still subscribe to).
        """
        due: list[tuple[int, int, str]] = [
            (deadline, 0, member_id) for member_id, deadline in self._session_deadlines.items() if deadline <= now_ms
        ]
        due += [
            (deadline, 1, member_id)
            for member_id, (_, deadline) in self._rebalance_deadlines.items()
            if deadline <= now_ms
        ]
        classic_due = {(deadline, member_id): reason for deadline, member_id, reason in self.classic_timers.due(now_ms)}
        due += [(deadline, 2, member_id) for deadline, member_id in classic_due]
        fenced: list[FencedMember] = []
        records: list[CoordinatorRecord] = []
        for deadline, kind, member_id in sorted(due):
            if self._dead:
                break  # a fencing downgraded the group to a classic group
            member = self._members.get(member_id)
            if kind == 0:
                if self._session_deadlines.pop(member_id, None) is None or member is None:
                    continue
                reason = "the member session expired."
            elif kind == 1:
                timer = self._rebalance_deadlines.pop(member_id, None)
                if timer is None or member is None or member.member_epoch != timer[0]:
                    continue  # the member moved past the epoch it had to revoke at
                reason = (
                    f"it failed to transition from epoch {timer[0]} within {member.rebalance_timeout_ms}ms."
                )
            else:
                if member is None:
                    continue
                reason = classic_due[(deadline, member_id)]
            log.info("[GroupId %s] Member %s fenced from the group because %s", self.group_id, member_id, reason)
            records.extend(self._fence(member, topics))
            fenced.append(FencedMember(member_id, reason))
        return ExpireResult(tuple(fenced), tuple(records))

    def next_deadline_ms(self) -> int | None:
        """When :meth:`expire` has something to do next, or None if no timer runs."""
        deadlines = list(self._session_deadlines.values())
        deadlines += [deadline for _, deadline in self._rebalance_deadlines.values()]
        classic = self.classic_timers.next_deadline_ms()
        if classic is not None:
            deadlines.append(classic)
        return min(deadlines, default=None)

    def on_loaded(self, now_ms: int) -> None:
        """Kafka's ``onLoaded``: arm every member's session timer, and the rebalance timer of
        every member asked to revoke partitions, from *now_ms*."""
        self._session_deadlines = {m: now_ms + self.config.session_timeout_ms for m in self._members}
        # What each regex resolved to before, as far as the subscription metadata shows (Kafka
        # persists the resolutions; these records do not): a refresh follows the first heartbeat.
        self._resolved_regexes = {
            regex: resolve_regex(regex, self._subscription_metadata) for regex in self.subscribed_regexes()
        }
        self._regex_refreshed_ms = None
        self._regex_universe = frozenset()
        self._rebalance_deadlines = {
            m.member_id: (m.member_epoch, now_ms + max(m.rebalance_timeout_ms, 0))
            for m in self._members.values()
            if m.state is MemberState.UNREVOKED_PARTITIONS
        }

    def delete(self) -> tuple[CoordinatorRecord, ...]:
        """Kafka's ``createGroupTombstoneRecords`` for an Empty group, applied (the group is Dead).

        Raises:
            NonEmptyGroupError: the group has members.
            GroupIdNotFoundError: the group is already deleted.
        """
        if self._dead:
            raise GroupIdNotFoundError(f"Consumer group {self.group_id} not found.")
        if self._members:
            raise NonEmptyGroupError(f"The group {self.group_id} is not empty.")
        records = [target_assignment_tombstone(self.group_id, m) for m in sorted(self._target)]
        records += [
            target_assignment_epoch_tombstone(self.group_id),
            subscription_metadata_tombstone(self.group_id),
            group_epoch_tombstone(self.group_id),
        ]
        self._apply(records)
        return tuple(records)

    def _revive(self) -> None:
        """A join to a deleted group: Kafka creates a new group, which starts at epoch 0."""
        self._dead = False
        self._group_epoch = 0
        self._assignment_epoch = 0

    # ------------------------------------------------------------------ replay

    @classmethod
    def from_records(
        cls,
        group_id: str,
        records: Iterable[CoordinatorRecord],
        now_ms: int,
        config: ConsumerGroupConfig | None = None,
        assignors: Mapping[str, PartitionAssignor] | None = None,
    ) -> ConsumerGroup:
        """The group its records (log order, tombstones included) describe, timers armed at *now_ms*."""
        group = cls(group_id, config, assignors)
        for record in records:
            group.replay(record)
        group.on_loaded(now_ms)
        return group

    def _apply(self, records: Iterable[CoordinatorRecord]) -> None:
        """Replay records a live operation computed (then forget the regexes nobody uses)."""
        for record in records:
            self.replay(record)
        self._forget_unsubscribed_regexes()

    def replay(self, record: CoordinatorRecord) -> None:
        """Apply one record (Kafka's ``GroupMetadataManager.replay`` for the six types).

        Raises:
            ValueError: the record belongs to another group.
            IllegalStateError: the records are inconsistent (a tombstone for a member whose
                assignment was not deleted first, a partition given to two members, ...).
        """
        key, value = record.key, record.value
        if key.group_id != self.group_id:
            raise ValueError(f"record of group {key.group_id!r} replayed into group {self.group_id!r}")
        if self._dead:
            if value is None:
                return  # a tombstone for a group that no longer exists changes nothing
            self._revive()  # any other record belongs to a new group of the same id
        if isinstance(key, ConsumerGroupMetadataKey):
            self._replay_group_epoch(value)
        elif isinstance(key, ConsumerGroupPartitionMetadataKey):
            assert value is None or isinstance(value, ConsumerGroupPartitionMetadataValue)
            self._subscription_metadata = (
                {}
                if value is None
                else {t.topic_name: TopicInfo(t.topic_id, t.topic_name, t.num_partitions) for t in value.topics}
            )
        elif isinstance(key, ConsumerGroupMemberMetadataKey):
            self._replay_member_metadata(key.member_id, value)
        elif isinstance(key, ConsumerGroupTargetAssignmentMemberKey):
            assert value is None or isinstance(value, ConsumerGroupTargetAssignmentMemberValue)
            if value is None:
                self._target.pop(key.member_id, None)
            else:
                self._target[key.member_id] = from_topic_partitions(value.topic_partitions)
        elif isinstance(key, ConsumerGroupTargetAssignmentMetadataKey):
            assert value is None or isinstance(value, ConsumerGroupTargetAssignmentMetadataValue)
            if value is None:
                if self._target:
                    raise IllegalStateError(
                        f"Received a tombstone record to delete target assignment of {self.group_id} "
                        f"but the assignment still has {len(self._target)} members."
                    )
                self._assignment_epoch = -1
            else:
                self._assignment_epoch = value.assignment_epoch
        else:
            self._replay_current_assignment(key, value)

    def _replay_group_epoch(self, value: object) -> None:
        assert value is None or isinstance(value, ConsumerGroupMetadataValue)
        if value is not None:
            self._group_epoch = value.epoch
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
        if self.assignment_epoch != -1:
            raise IllegalStateError(
                f"Received a tombstone record to delete group {self.group_id} "
                "but did not receive ConsumerGroupTargetAssignmentMetadataValue tombstone."
            )
        self._dead = True

    def _replay_member_metadata(self, member_id: str, value: object) -> None:
        assert value is None or isinstance(value, ConsumerGroupMemberMetadataValue)
        if value is not None:
            old = self._members.get(member_id) or ConsumerGroupMember(member_id)
            self._update_member(
                replace(
                    old,
                    instance_id=value.instance_id,
                    rack_id=value.rack_id,
                    client_id=value.client_id,
                    client_host=value.client_host,
                    subscribed_topic_names=frozenset(value.subscribed_topic_names),
                    subscribed_topic_regex=value.subscribed_topic_regex or None,
                    rebalance_timeout_ms=value.rebalance_timeout_ms,
                    server_assignor_name=value.server_assignor,
                    classic_member_metadata=value.classic_member_metadata,
                )
            )
            return
        member = self._members.get(member_id)
        if member is None:
            return
        if member.member_epoch != LEAVE_GROUP_MEMBER_EPOCH:
            raise IllegalStateError(
                f"Received a tombstone record to delete member {member_id} "
                "but did not receive ConsumerGroupCurrentMemberAssignmentValue tombstone."
            )
        if member_id in self._target:
            raise IllegalStateError(
                f"Received a tombstone record to delete member {member_id} "
                "but did not receive ConsumerGroupTargetAssignmentMetadataValue tombstone."
            )
        self._remove_member(member)

    def _replay_current_assignment(self, key: ConsumerGroupCurrentMemberAssignmentKey, value: object) -> None:
        assert value is None or isinstance(value, ConsumerGroupCurrentMemberAssignmentValue)
        if value is not None:
            old = self._members.get(key.member_id) or ConsumerGroupMember(key.member_id)
            self._update_member(
                replace(
                    old,
                    member_epoch=value.member_epoch,
                    previous_member_epoch=value.previous_member_epoch,
                    state=MemberState.from_value(value.state),
                    assigned_partitions=from_topic_partitions(value.assigned_partitions),
                    partitions_pending_revocation=from_topic_partitions(value.partitions_pending_revocation),
                )
            )
            return
        member = self._members.get(key.member_id)
        if member is not None:
            self._update_member(
                replace(
                    member,
                    member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                    previous_member_epoch=LEAVE_GROUP_MEMBER_EPOCH,
                    assigned_partitions={},
                    partitions_pending_revocation={},
                )
            )

    def _update_member(self, new: ConsumerGroupMember) -> None:
        """Kafka's ``ConsumerGroup.updateMember``: the member, its static id, its partitions' owner."""
        old = self._members.get(new.member_id)
        if old is not None:
            self._release(old)
        for topic_id, parts in new.owned_partitions.items():
            for p in parts:
                previous = self._owners.setdefault((topic_id, p), (new.member_id, new.member_epoch))
                if previous[0] != new.member_id:
                    raise IllegalStateError(
                        f"Cannot give partition {topic_id.hex()}-{p} to member {new.member_id} at epoch "
                        f"{new.member_epoch}: member {previous[0]} still owns it at epoch {previous[1]}"
                    )
        self._members[new.member_id] = new
        if new.instance_id is not None:
            self._static_members[new.instance_id] = new.member_id

    def _remove_member(self, member: ConsumerGroupMember) -> None:
        self._release(member)
        del self._members[member.member_id]
        if member.instance_id is not None and self._static_members.get(member.instance_id) == member.member_id:
            del self._static_members[member.instance_id]

    def _release(self, member: ConsumerGroupMember) -> None:
        for topic_id, parts in member.owned_partitions.items():
            for p in parts:
                if self._owners.get((topic_id, p), (member.member_id,))[0] == member.member_id:
                    self._owners.pop((topic_id, p), None)


# --------------------------------------------------------------------------- helpers


def _throw_if_empty(value: str | None, message: str) -> None:
    """Kafka's ``throwIfEmptyString``: a non-null value that is empty or whitespace."""
    if value is not None and not value.strip():
        raise InvalidRequestError(message)


def _throw_if_epoch_invalid(member: ConsumerGroupMember, received: int, owned: TopicIdPartitions | None) -> None:
    """Kafka's ``throwIfConsumerGroupMemberEpochIsInvalid`` (an epoch-0 rejoin always passes)."""
    if received == 0:
        return  # KIP-848: a fenced member rejoins with epoch 0 under its member id (KAFKA-19233)
    if received > member.member_epoch:
        raise FencedMemberEpochError(
            f"The consumer group member has a greater member epoch ({received}) than the one known by the "
            f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin."
        )
    if received < member.member_epoch and (
        received != member.previous_member_epoch or not is_subset(owned, member.assigned_partitions)
    ):
        # The previous epoch with only partitions still assigned: the bumped epoch was lost.
        raise FencedMemberEpochError(
            f"The consumer group member has a smaller member epoch ({received}) than the one known by the "
            f"group coordinator ({member.member_epoch}). The member must abandon all its partitions and rejoin."
        )
