"""Membership changes and rebalances of the groups a coordinator holds: Kafka 2.8's
``GroupCoordinator`` rebalance machinery with its ``DelayedJoin``,
``InitialDelayedJoin`` and ``DelayedHeartbeat``.

Owns:

* the parked JoinGroup / SyncGroup responses of each group (and the members'
  awaiting-join / awaiting-sync flags);
* changing membership in a way that may rebalance: adding a member, updating
  one's protocols, replacing a static member's id (KIP-345), removing a member
  (LeaveGroup, session expiry, a pending member's expiry);
* the rebalance itself: ``prepareRebalance``, the initial delayed join
  (``group.initial.rebalance.delay.ms``, extended while new members arrive), the
  DelayedJoin bounded by the rebalance timeout, ``onCompleteJoin`` (dropping
  dynamic members that did not rejoin, a new generation) and propagating the
  leader's assignment (or an error) to parked SyncGroups;
* the timers: member heartbeat (session) expiry, new-member join expiry, pending
  member (KIP-394) expiry, and what happens to them when a group is loaded or
  unloaded.

It validates no request (:class:`~mafka.group.coordinator.GroupCoordinator`
does) and writes group metadata only through its
:class:`~mafka.group.metadata_manager.GroupMetadataManager`.
"""

from __future__ import annotations

import logging
from collections.abc import Callable

from mafka.errors import ErrorCode
from mafka.group.coordinator_types import (
    NEW_MEMBER_JOIN_TIMEOUT_MS,
    UNKNOWN_MEMBER_ID,
    CoordinatorConfig,
    GroupEntry,
    JoinCallback,
    JoinResult,
    SyncResult,
    join_result,
)
from mafka.group.metadata_manager import GroupMetadataManager
from mafka.group.state import GroupState, MemberMetadata, Protocols
from mafka.timers import Timers

__all__ = ["JoinArgs", "Rebalancer"]

#: The coordinator's logger (shared by :mod:`mafka.group.coordinator` and :mod:`mafka.group.metadata_manager`).
log = logging.getLogger("mafka.group.coordinator")

#: What a JoinGroup says about the joining member: (client id, client host, rebalance
#: timeout ms, session timeout ms, protocol type, protocols).
JoinArgs = tuple[str, str, int, int, str, Protocols]


class Rebalancer:
    """Rebalances and membership timers of the groups in ``groups`` (see the module docstring)."""

    def __init__(
        self,
        config: CoordinatorConfig,
        clock: Callable[[], int],
        timers: Timers,
        groups: GroupMetadataManager,
    ) -> None:
        self.config = config
        self._clock = clock
        self._timers = timers
        self._groups = groups

    # ------------------------------------------------------------------ load / unload

    def on_group_loaded(self, entry: GroupEntry) -> None:
        """Kafka's ``onGroupLoaded``: arm the members' session timers; rebalance an over-capacity group."""
        if len(entry.group.members) > self.config.max_size:
            # Kafka's onGroupLoaded: let the members of an over-capacity group rejoin
            # (the last ones to rejoin are refused) and commit meanwhile.
            self.prepare_rebalance(entry, f"Freshly-loaded group is over capacity ({self.config.max_size})")
        for member in entry.group.all_member_metadata():
            self.schedule_heartbeat(entry, member)

    def on_group_unloaded(self, entry: GroupEntry) -> None:
        """Kafka's ``onGroupUnloaded``: the group goes Dead, its timers stop, parked calls get NOT_COORDINATOR."""
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
                self.invoke_join(entry, member, JoinResult(ErrorCode.NOT_COORDINATOR, member.member_id))
        elif previous in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            for member in group.all_member_metadata():
                self.invoke_sync(entry, member, SyncResult(ErrorCode.NOT_COORDINATOR))

    # ------------------------------------------------------------------ membership changes

    def add_member_and_rebalance(self, entry: GroupEntry, member_id: str, group_instance_id: str | None,
                                 args: JoinArgs, respond: JoinCallback) -> None:
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
        self.cancel_pending_expiry(entry, member_id)
        group.add(member)
        self.park_join(entry, member, respond)
        # A new member cannot heartbeat yet; it gets Kafka's 5 minutes to complete the join.
        self.schedule_heartbeat(entry, member, NEW_MEMBER_JOIN_TIMEOUT_MS)
        self.maybe_prepare_rebalance(entry, f"Adding new member {member_id} with group instance id {group_instance_id}")

    def update_member_and_rebalance(self, entry: GroupEntry, member: MemberMetadata, protocols: Protocols,
                                    respond: JoinCallback) -> None:
        entry.group.update_member(member, protocols)
        self.park_join(entry, member, respond)
        self.maybe_prepare_rebalance(entry, f"Updating metadata for member {member.member_id}")

    def update_static_member(self, entry: GroupEntry, instance_id: str, old_id: str, new_id: str,
                             protocols: Protocols, respond: JoinCallback) -> None:
        """Kafka's ``updateStaticMemberAndRebalance``: ``new_id`` replaces ``old_id`` (fenced)."""
        group = entry.group
        current_leader = group.leader_id or ""
        old_member = group.get(old_id)
        self.invoke_join(entry, old_member, JoinResult(ErrorCode.FENCED_INSTANCE_ID, old_id))
        self.invoke_sync(entry, old_member, SyncResult(ErrorCode.FENCED_INSTANCE_ID))
        self.cancel_heartbeat(entry, old_id)
        member = group.replace_static_member(instance_id, old_id, new_id)
        entry.note_replaced(old_id, instance_id)
        self.schedule_heartbeat(entry, member)
        old_protocols = list(member.supported_protocols)
        group.update_member(member, protocols)
        self.park_join(entry, member, respond)
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
                        self.drop_join(entry, member)
                        self.cancel_heartbeat(entry, new_id)
                        restored = group.replace_static_member(instance_id, new_id, old_id)
                        entry.replaced_static.pop(old_id, None)
                        self.schedule_heartbeat(entry, restored)
                        respond(JoinResult(error, UNKNOWN_MEMBER_ID, group.generation_id, group.protocol_type,
                                           group.protocol_name, current_leader))
                    else:
                        # The old leader id is returned on purpose: the member must not
                        # think it leads and recompute assignments a Stable group won't send.
                        self.invoke_join(entry, member, JoinResult(
                            ErrorCode.NONE, new_id, group.generation_id, group.protocol_type,
                            group.protocol_name, current_leader))

                self._groups.store_group(entry, assignment, stored)
            else:
                self.maybe_prepare_rebalance(entry, f"Static member {new_id} changed the selected protocol")
        elif state is GroupState.COMPLETING_REBALANCE:
            self.prepare_rebalance(entry, f"Updating metadata for static member {new_id} with instance id {instance_id}")

    def remove_member_and_update_group(self, entry: GroupEntry, member: MemberMetadata, reason: str) -> None:
        group = entry.group
        # A new member may time out with its JoinGroup still parked: tell it to start over.
        self.invoke_join(entry, member, JoinResult(ErrorCode.UNKNOWN_MEMBER_ID, UNKNOWN_MEMBER_ID))
        self.invoke_sync(entry, member, SyncResult(ErrorCode.UNKNOWN_MEMBER_ID))
        self.cancel_heartbeat(entry, member.member_id)
        group.remove(member.member_id)
        if group.state in (GroupState.STABLE, GroupState.COMPLETING_REBALANCE):
            self.maybe_prepare_rebalance(entry, reason)
        elif group.state is GroupState.PREPARING_REBALANCE:
            self.check_join(entry)

    def remove_pending_member(self, entry: GroupEntry, member_id: str) -> None:
        self.cancel_pending_expiry(entry, member_id)
        entry.group.remove_pending_member(member_id)
        if entry.group.state is GroupState.PREPARING_REBALANCE:
            self.check_join(entry)

    # ------------------------------------------------------------------ rebalance

    def maybe_prepare_rebalance(self, entry: GroupEntry, reason: str) -> None:
        if entry.group.can_rebalance():
            self.prepare_rebalance(entry, reason)

    def prepare_rebalance(self, entry: GroupEntry, reason: str) -> None:
        group = entry.group
        if group.state is GroupState.COMPLETING_REBALANCE:
            self.reset_and_propagate_assignment_error(entry, ErrorCode.REBALANCE_IN_PROGRESS)
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
            self.check_join(entry)

    def _schedule_initial_join(self, entry: GroupEntry, delay_ms: int, remaining_ms: int) -> None:
        entry.initial_remaining_ms = remaining_ms

        def fire() -> None:
            entry.join_timer = None
            group = entry.group
            if group.state is not GroupState.PREPARING_REBALANCE or not self._groups.is_current(entry):
                return
            if group.new_member_added and remaining_ms != 0:
                group.new_member_added = False
                delay = min(self.config.initial_rebalance_delay_ms, remaining_ms)
                self._schedule_initial_join(entry, delay, max(remaining_ms - delay_ms, 0))
            else:
                entry.initial_remaining_ms = None
                self._complete_join(entry)

        entry.join_timer = self._timers.call_later(delay_ms, fire)

    def check_join(self, entry: GroupEntry) -> None:
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

    def _join_expired(self, entry: GroupEntry) -> None:
        entry.join_timer = None
        if entry.group.state is GroupState.PREPARING_REBALANCE and self._groups.is_current(entry):
            self._complete_join(entry)

    def _cancel_join_timer(self, entry: GroupEntry) -> None:
        if entry.join_timer is not None:
            entry.join_timer.cancel()
            entry.join_timer = None
        entry.initial_remaining_ms = None

    def _complete_join(self, entry: GroupEntry) -> None:
        """Kafka's ``onCompleteJoin``."""
        group = entry.group
        for member in group.not_yet_rejoined_members():
            if not member.is_static_member:
                log.info("Member %s of group %s did not rejoin; removing it", member.member_id, group.group_id)
                self.cancel_heartbeat(entry, member.member_id)
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

            self._groups.store_group(entry, {}, stored)
            return
        log.info("Stabilized group %s generation %d with %d members", group.group_id,
                 group.generation_id, len(group.members))
        for member in group.all_member_metadata():
            self.invoke_join(entry, member, join_result(group, member))
            self.schedule_heartbeat(entry, member)
            member.is_new = False

    def reset_and_propagate_assignment_error(self, entry: GroupEntry, error: int) -> None:
        for member in entry.group.all_member_metadata():
            member.assignment = b""
        self.propagate_assignment(entry, error)

    def propagate_assignment(self, entry: GroupEntry, error: int) -> None:
        group = entry.group
        ok = error == ErrorCode.NONE
        for member in group.all_member_metadata():
            result = SyncResult(error, member.assignment, group.protocol_type if ok else None,
                                group.protocol_name if ok else None)
            if self.invoke_sync(entry, member, result):
                # Expiry was ignored while the member waited for its assignment; restart it.
                self.schedule_heartbeat(entry, member)

    # ------------------------------------------------------------------ parked calls

    def park_join(self, entry: GroupEntry, member: MemberMetadata, respond: JoinCallback) -> None:
        entry.join_callbacks[member.member_id] = respond
        member.awaiting_join = True

    def drop_join(self, entry: GroupEntry, member: MemberMetadata) -> None:
        entry.join_callbacks.pop(member.member_id, None)
        member.awaiting_join = False

    def invoke_join(self, entry: GroupEntry, member: MemberMetadata, result: JoinResult) -> bool:
        callback = entry.join_callbacks.pop(member.member_id, None)
        member.awaiting_join = False
        if callback is None:
            return False
        callback(result)
        return True

    def invoke_sync(self, entry: GroupEntry, member: MemberMetadata, result: SyncResult) -> bool:
        callback = entry.sync_callbacks.pop(member.member_id, None)
        member.awaiting_sync = False
        if callback is None:
            return False
        callback(result)
        return True

    # ------------------------------------------------------------------ heartbeats and expiry

    def schedule_heartbeat(self, entry: GroupEntry, member: MemberMetadata, timeout_ms: int | None = None) -> None:
        """Kafka's ``completeAndScheduleNextHeartbeatExpiration``."""
        self.cancel_heartbeat(entry, member.member_id)
        member.heartbeat(self._clock())
        member.heartbeat_satisfied = False
        delay = member.session_timeout_ms if timeout_ms is None else timeout_ms
        member_id = member.member_id
        entry.heartbeat_timers[member_id] = self._timers.call_later(
            delay, lambda: self._heartbeat_expired(entry, member_id, member)
        )

    def cancel_heartbeat(self, entry: GroupEntry, member_id: str) -> None:
        timer = entry.heartbeat_timers.pop(member_id, None)
        if timer is not None:
            timer.cancel()

    def _heartbeat_expired(self, entry: GroupEntry, member_id: str, member: MemberMetadata) -> None:
        if entry.heartbeat_timers.get(member_id) is None:
            return
        del entry.heartbeat_timers[member_id]
        group = entry.group
        if group.members.get(member_id) is not member or member.has_satisfied_heartbeat():
            return
        log.info("Member %s in group %s has failed, removing it from the group", member_id, group.group_id)
        self.remove_member_and_update_group(entry, member, f"removing member {member_id} on heartbeat expiration")

    def schedule_pending_expiry(self, entry: GroupEntry, member_id: str, timeout_ms: int) -> None:
        self.cancel_pending_expiry(entry, member_id)

        def expire() -> None:
            entry.pending_timers.pop(member_id, None)
            if entry.group.is_pending_member(member_id):
                log.info("Pending member %s in group %s has been removed after session timeout expiration",
                         member_id, entry.group.group_id)
                self.remove_pending_member(entry, member_id)

        entry.pending_timers[member_id] = self._timers.call_later(timeout_ms, expire)

    def cancel_pending_expiry(self, entry: GroupEntry, member_id: str) -> None:
        timer = entry.pending_timers.pop(member_id, None)
        if timer is not None:
            timer.cancel()
