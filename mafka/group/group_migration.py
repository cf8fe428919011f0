"""A coordinator's groups changing protocol, and classic members served by consumer groups.

KIP-848's online migration (``group.consumer.migration.policy``) as Kafka 4's
``GroupMetadataManager`` runs it, at the coordinator: the part that needs both kinds of group.
:class:`GroupMigration` is built by :class:`~mafka.group.coordinator.GroupCoordinator`, which
hands it:

* ConsumerGroupHeartbeat (:meth:`GroupMigration.consumer_heartbeat`): a join to a classic group
  with members *upgrades* it (:mod:`mafka.group.consumer.migration`): its parked JoinGroup and
  SyncGroup calls are answered REBALANCE_IN_PROGRESS, the classic group is forgotten, and the
  consumer group it becomes is written (the classic group's tombstone, the converted group's
  records and the heartbeat's in one batch) before the member is answered.  If that write
  fails the classic group is put back.  An empty classic group is simply replaced.
* JoinGroup, SyncGroup, Heartbeat and LeaveGroup for a consumer group with members
  (:meth:`GroupMigration.classic_join` ...): served by the consumer group
  (:mod:`mafka.group.consumer.classic_members`); a JoinGroup is answered once its records are
  written, a LeaveGroup at once (its API here is synchronous; its records are written
  behind it, and a failed write is rolled back as for any consumer group write).
* The downgrade hook (:meth:`GroupMigration.downgrade`, the consumer group manager's
  ``on_downgrade``): when a consumer group is left with classic members only, the classic
  group it becomes is installed (Stable, every member's heartbeat timer armed) and rebalanced;
  its record goes in the same batch as the consumer group's tombstones.

Plain Python, time from ``clock()`` (ms); every write goes through the consumer group manager.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence

from mafka.errors import ErrorCode, GroupIdNotFoundError
from mafka.group.consumer import classic_members
from mafka.group.consumer.group_types import HeartbeatRequest, HeartbeatResponse
from mafka.group.consumer.manager import ConsumerGroupEntry, ConsumerGroupManager, append_error
from mafka.group.consumer.member import TopicInfo
from mafka.group.consumer.migration import (
    Downgrade,
    classic_group,
    classic_group_record,
    consumer_group_records,
    validate_online_upgrade,
)
from mafka.group.consumer.records import CoordinatorRecord
from mafka.group.consumer_protocol import PROTOCOL_TYPE
from mafka.group.coordinator_types import (
    GroupEntry,
    JoinCallback,
    JoinResult,
    SyncCallback,
    SyncResult,
)
from mafka.group.metadata_manager import GroupMetadataManager
from mafka.group.offsets_records import GroupMetadataKey, encode_key
from mafka.group.rebalance import Rebalancer
from mafka.group.state import GroupState, Protocols

__all__ = ["GroupMigration"]

log = logging.getLogger("mafka.group.coordinator")


class GroupMigration:
    """See the module docstring.

    Args:
        clock: milliseconds now.
        groups: the classic groups (and ``__consumer_offsets`` ownership).
        consumer_groups: the consumer groups; its ``on_downgrade`` is set to :meth:`downgrade`.
        rebalancer: the classic groups' rebalances and timers.
        topics: the cluster's topics by name.
    """

    def __init__(
        self,
        clock: Callable[[], int],
        groups: GroupMetadataManager,
        consumer_groups: ConsumerGroupManager,
        rebalancer: Rebalancer,
        topics: Callable[[], Mapping[str, TopicInfo]],
    ) -> None:
        self._clock = clock
        self._groups = groups
        self._consumer_groups = consumer_groups
        self._rebalancer = rebalancer
        self._topics = topics
        consumer_groups.on_downgrade = self.downgrade

    # ------------------------------------------------------------------ upgrade

    def consumer_heartbeat(self, request: HeartbeatRequest, respond: Callable[[HeartbeatResponse], None]) -> None:
        """ConsumerGroupHeartbeat for a group of an owned partition (the caller checked that)."""
        gid = request.group_id
        classic = self._groups.get_group(gid)
        if classic is None or classic.group.state is GroupState.DEAD:
            self._consumer_groups.heartbeat(request, respond)
            return
        group = classic.group
        extra: list[tuple[bytes, bytes | None]] = []
        seed: list[CoordinatorRecord] = []
        empty = not group.members and group.state is GroupState.EMPTY
        if not empty:
            if request.member_epoch != 0:
                respond(HeartbeatResponse(ErrorCode.GROUP_ID_NOT_FOUND, f"Group {gid} is not a consumer group."))
                return
            try:
                validate_online_upgrade(group, self._consumer_groups.config)
                seed = consumer_group_records(group, self._topics())
            except GroupIdNotFoundError as e:
                respond(HeartbeatResponse(ErrorCode.GROUP_ID_NOT_FOUND, e.message))
                return
        if group.generation_id > 0 or not empty:
            extra.append((encode_key(GroupMetadataKey(gid)), None))

        def on_created() -> None:
            if empty:
                log.info("Converted the empty classic group %s to a consumer group", gid)
            else:
                # The conversion bumps the group epoch: members waiting in a rebalance must rejoin.
                for member in group.all_member_metadata():
                    self._rebalancer.invoke_join(classic, member, JoinResult(ErrorCode.REBALANCE_IN_PROGRESS,
                                                                            member.member_id))
                    self._rebalancer.invoke_sync(classic, member, SyncResult(ErrorCode.REBALANCE_IN_PROGRESS))
                log.info("Upgraded the classic group %s (generation %d, %d members) to a consumer group",
                         gid, group.generation_id, len(group.members))
            self._groups.forget_group(classic, self._rebalancer.on_group_unloaded)

        def on_create_failed() -> None:
            self._restore(classic)

        self._consumer_groups.heartbeat(request, respond, extra, on_created, seed, on_create_failed)

    def _restore(self, entry: GroupEntry) -> None:
        """Put back a classic group whose conversion was not written, as a load would have it."""
        gid = entry.group.group_id
        if self._groups.get_group(gid) is not None or self._consumer_groups.get(gid) is not None:
            return
        if not self._groups.is_partition_owned(entry.partition):
            return
        group = entry.group
        group.state = GroupState.STABLE if group.members else GroupState.EMPTY
        for member in group.all_member_metadata():
            member.awaiting_join = member.awaiting_sync = False
        restored = self._groups.add_group(gid)
        restored.group = group
        self._rebalancer.on_group_loaded(restored)
        log.info("Classic group %s restored: its conversion to a consumer group was not written", gid)

    # ------------------------------------------------------------------ downgrade

    def downgrade(
        self, entry: ConsumerGroupEntry, downgrade: Downgrade
    ) -> tuple[list[tuple[bytes, bytes | None]], Callable[[], None]]:
        """Install the classic group *downgrade* describes (the consumer group manager's
        ``on_downgrade``); returns its record and the undo of a failed write."""
        group, assignment = classic_group(downgrade, self._clock())
        record = classic_group_record(group, assignment)
        installed = self._groups.add_group(downgrade.group_id)
        installed.group = group
        for member in group.all_member_metadata():
            self._rebalancer.schedule_heartbeat(installed, member)
        if downgrade.rebalance:
            self._rebalancer.prepare_rebalance(installed, downgrade.reason)
        log.info("Downgraded the consumer group %s to a classic group (generation %d, %d members)",
                 downgrade.group_id, group.generation_id, len(group.members))

        def undo() -> None:
            self._groups.forget_group(installed, self._rebalancer.on_group_unloaded)

        return [record], undo

    # ------------------------------------------------------------------ classic members of consumer groups

    def serves_classic(self, group_id: str) -> bool:
        """A classic request for *group_id* goes to its consumer group (one exists, with members)."""
        entry = self._consumer_groups.get(group_id)
        return entry is not None and bool(entry.group.members)

    def classic_join(
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
        """JoinGroup to the consumer group *group_id* (it has members): answered once written."""
        entry = self._consumer_groups.get(group_id)
        if entry is None:
            respond(JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, member_id))
            return
        request = classic_members.ClassicJoinRequest(
            member_id, group_instance_id, require_known_member_id, client_id, client_host,
            rebalance_timeout_ms, session_timeout_ms, protocol_type, [(n, bytes(m)) for n, m in protocols],
        )
        result = classic_members.join(entry.group, request, self._clock(), self._topics())
        if result.error != ErrorCode.NONE:
            respond(JoinResult(result.error, result.member_id))
            return
        answer = JoinResult(ErrorCode.NONE, result.member_id, result.generation_id, PROTOCOL_TYPE,
                            result.protocol_name, "", [])

        def done(error: int) -> None:
            respond(answer if error == ErrorCode.NONE else JoinResult(append_error(error), member_id))

        self._consumer_groups.write(entry, result.records, done)

    def classic_sync(
        self, group_id: str, generation_id: int, member_id: str, group_instance_id: str | None, respond: SyncCallback
    ) -> None:
        """SyncGroup to a consumer group: the member's assignment, computed by the coordinator."""
        entry = self._consumer_groups.get(group_id)
        if entry is None:
            respond(SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
            return
        result = classic_members.sync(entry.group, member_id, group_instance_id, generation_id, self._clock(),
                                      self._topic_names(entry))
        self._consumer_groups.rearm(entry)
        if result.error != ErrorCode.NONE:
            respond(SyncResult(result.error))
            return
        respond(SyncResult(ErrorCode.NONE, result.assignment, PROTOCOL_TYPE, result.protocol_name))

    def classic_heartbeat(self, group_id: str, member_id: str, group_instance_id: str | None, generation_id: int) -> int:
        """Heartbeat to a consumer group: NONE, REBALANCE_IN_PROGRESS (rejoin) or the member's error."""
        entry = self._consumer_groups.get(group_id)
        if entry is None:
            return ErrorCode.UNKNOWN_MEMBER_ID
        error = classic_members.heartbeat(entry.group, member_id, group_instance_id, generation_id, self._clock())
        self._consumer_groups.rearm(entry)
        return error

    def classic_leave(
        self, group_id: str, leaving: Sequence[tuple[str, str | None]]
    ) -> tuple[int, list[tuple[str, str | None, int]]]:
        """LeaveGroup to a consumer group: the named members are fenced (their records written behind)."""
        entry = self._consumer_groups.get(group_id)
        if entry is None:
            return ErrorCode.NONE, [(m, i, ErrorCode.UNKNOWN_MEMBER_ID) for m, i in leaving]
        results, records = classic_members.leave(entry.group, leaving, self._topics())
        self._consumer_groups.write(entry, records, lambda _error: None)
        return ErrorCode.NONE, results

    def _topic_names(self, entry: ConsumerGroupEntry) -> dict[bytes, str]:
        """Topic id → name: the cluster's topics, and the group's subscribed ones (if the cluster
        no longer lists one, its assigned partitions keep their name until they are revoked)."""
        names = {info.topic_id: name for name, info in entry.group.subscription_metadata.items()}
        names.update({info.topic_id: name for name, info in self._topics().items()})
        return names
