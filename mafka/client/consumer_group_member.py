"""The consumer's side of KIP-848's consumer group protocol (``group.protocol=consumer``): the I/O.

:class:`ConsumerGroupMember` is :class:`~mafka.client.group_member.GroupMember`'s counterpart
for the consumer protocol, with the same outward face (``run``, ``subscribe``,
``unsubscribe``, ``leave``, ``commit``, ``fetch_committed``, ``owned``, ``generation`` …), so
the Consumer and AIOConsumer only choose which one to build.  It runs on the kernel's loop:

* a **heartbeat loop** finds the coordinator and sends ConsumerGroupHeartbeat (api key 68) on
  the ``"group"`` connection when :class:`~mafka.client.consumer_membership.ConsumerMembership`
  says one is due, one at a time, and carries out what each answer means (find the
  coordinator again, release partitions as lost, stop on a fatal error);
* a **reconciler** carries out the reconciliations the state asks for: topic ids are named
  from the kernel's metadata (refreshed while an id is unknown), the revoked partitions are
  handed to the application first, then the added ones, each as a
  :class:`~mafka.client.group_member.RebalanceEvent` (``incremental``) whose ``done`` it waits
  for (at most ``max.poll.interval.ms``), then the heartbeat loop is woken to acknowledge.

Hand-overs to the application never overlap: one lock orders the reconciliation steps and the
release of lost partitions, so a fenced member loses exactly what the application holds at
that moment.  Heartbeats go on while the application handles a hand-over.

Offsets: OffsetCommit and OffsetFetch carry the member epoch and member id
(:meth:`ConsumerMembership.commit_request` / ``fetch_request``); STALE_MEMBER_EPOCH is asked
again once the next heartbeat brought the new epoch, within ``request.timeout.ms``.  Versions
are the kernel's: the highest both the broker and the wire specs speak (v9 with a KIP-848 broker).
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable, Mapping
from typing import Any

from mafka.client.aio_util import wait_event
from mafka.client.consumer_membership import (
    PROTOCOL_NOT_SUPPORTED,
    ConsumerMembership,
    HeartbeatOutcome,
    MemberState,
    Reconciliation,
    combine_regexes,
)
from mafka.client.group_coordinator import GroupCoordinatorLink
from mafka.client.group_member import GroupMember, RebalanceEvent
from mafka.client.kafka_error import KafkaError
from mafka.client.kernel import Kernel
from mafka.client.transport import UnsupportedByBroker
from mafka.errors import ErrorCode
from mafka.topics import TopicPartitionTuple

__all__ = ["ConsumerGroupMember", "CONSUMER_GROUP_HEARTBEAT", "new_group_member"]

log = logging.getLogger("mafka.client.group")

OFFSET_COMMIT, OFFSET_FETCH, CONSUMER_GROUP_HEARTBEAT = 8, 9, 68

#: The longest the heartbeat loop sleeps without looking at the poll timer again.
_TICK = 1.0
#: Seconds a leave heartbeat may take (close must stay bounded).
_LEAVE_TIMEOUT = 5.0


def new_group_member(kernel: Kernel, notify: Callable[[Any], None]) -> GroupMember | ConsumerGroupMember:
    """The member for the configuration's ``group.protocol``: ``classic`` (JoinGroup/SyncGroup,
    :class:`~mafka.client.group_member.GroupMember`) or ``consumer`` (KIP-848)."""
    if kernel.config["group.protocol"] == "consumer":
        return ConsumerGroupMember(kernel, notify)
    return GroupMember(kernel, notify)


class ConsumerGroupMember(GroupCoordinatorLink):
    """One consumer's membership of ``group.id`` with ``group.protocol=consumer``.

    Args:
        kernel: connections and metadata.
        notify: called on the loop with each :class:`RebalanceEvent` and with
            :class:`KafkaError` values the application should see (fatal ones included).
    """

    def __init__(self, kernel: Kernel, notify: Callable[[Any], None]) -> None:
        cfg = kernel.config
        self.kernel = kernel
        self.notify = notify
        self.group_id: str = cfg["group.id"]
        self.backoff = cfg["retry.backoff.ms"] / 1000.0
        self.state = ConsumerMembership(
            self.group_id, cfg["max.poll.interval.ms"], instance_id=cfg.get("group.instance.id") or None,
            server_assignor=cfg.get("group.remote.assignor") or None, rack_id=cfg.get("client.rack") or None,
            retry_backoff_ms=cfg["retry.backoff.ms"], retry_backoff_max_ms=cfg["retry.backoff.max.ms"],
        )
        self.topics: set[str] = set()
        self.pattern: re.Pattern[str] | None = None
        self.coordinator = -1
        self.subscribed = asyncio.Event()
        self.last_poll = time.monotonic()
        self.closing = False
        self._wake = asyncio.Event()
        self._reconcile_wake = asyncio.Event()
        self._answered = asyncio.Event()
        self._handoff_lock = asyncio.Lock()
        self._stale_since = 0.0
        self._reconciler: asyncio.Task[None] | None = None

    # The member's identity and assignment live in :attr:`state`; these read it.
    @property
    def member_id(self) -> str:
        return self.state.member_id

    @property
    def generation(self) -> int:
        """The member epoch while in the group, else -1 (Java's ``ConsumerGroupMetadata``)."""
        return self.state.member_epoch if self.state.in_group else -1

    @property
    def instance_id(self) -> str | None:
        return self.state.instance_id

    @property
    def owned(self) -> set[TopicPartitionTuple]:
        return set(self.state.held)

    @owned.setter
    def owned(self, value: set[TopicPartitionTuple]) -> None:
        self.state.held = set(value)

    @property
    def rebalance_protocol(self) -> str:
        """Always incremental: the consumer protocol revokes only what moves."""
        return "COOPERATIVE"

    @property
    def rebalance_timeout(self) -> float:
        return self.state.rebalance_timeout_ms / 1000.0

    # -- subscription -----------------------------------------------------------------------

    def subscribe(self, topics: list[str]) -> None:
        """Sets the subscription (names, or regexes starting with ``^``; the coordinator
        resolves regexes) and joins, or sends it with the next heartbeat, at once."""
        regex = combine_regexes(topics)
        self.pattern = re.compile(regex) if regex is not None else None
        self.topics = {t for t in topics if not t.startswith("^")}
        self.state.subscribe(topics)
        self.subscribed.set()
        self._wake.set()

    def unsubscribe(self) -> None:
        """Stops heartbeating; :meth:`leave` tells the coordinator."""
        self.topics = set()
        self.pattern = None
        self.subscribed.clear()

    # -- the heartbeat loop -------------------------------------------------------------------

    async def run(self) -> None:
        """Heartbeats while subscribed, until closed or failed (a fatal error)."""
        self._reconciler = self.kernel.spawn(self._reconcile_loop())
        try:
            while not self.closing and self.state.state is not MemberState.FATAL:
                if not self.subscribed.is_set():
                    await self.subscribed.wait()
                    continue
                try:
                    await self._step()
                except (TimeoutError, ConnectionError) as exc:
                    log.debug("group %s: heartbeat failed: %r", self.group_id, exc)
                    self._coordinator_lost()
                    self.state.on_heartbeat_failure(time.monotonic())
                    await asyncio.sleep(self.backoff)
                except Exception:  # a broken answer must not end the membership unnoticed
                    log.exception("group %s: heartbeat failed", self.group_id)
                    self._coordinator_lost()
                    self.state.on_heartbeat_failure(time.monotonic())
                    await asyncio.sleep(self.backoff)
        finally:
            self._reconciler.cancel()

    async def _step(self) -> None:
        """One turn: rejoin a stale member that was polled, leave on an expired poll timer,
        else wait for the next heartbeat to be due and send it."""
        m = self.state
        self._wake.clear()
        now = time.monotonic()
        if m.state is MemberState.STALE:
            if self.last_poll > self._stale_since:
                log.info("group %s: polled again after max.poll.interval.ms; rejoining", self.group_id)
                m.rejoin()
            else:
                await wait_event(self._wake, 0.1)
            return
        if m.in_group and now - self.last_poll > self.rebalance_timeout:
            await self._poll_timer_expired()
            return
        await self._ensure_coordinator()
        delay = m.time_to_next_heartbeat(now)
        if delay is None or delay > 0:
            await wait_event(self._wake, _TICK if delay is None else min(delay, _TICK))
            return
        body = m.heartbeat_request(now)
        try:
            response = await self._send(CONSUMER_GROUP_HEARTBEAT, body)
        except UnsupportedByBroker:
            release = m.fail()
            await self._fail(KafkaError(ErrorCode.UNSUPPORTED_VERSION, PROTOCOL_NOT_SUPPORTED, fatal=True), release)
            return
        epoch = m.member_epoch
        outcome = m.on_heartbeat_response(response, time.monotonic())
        self._heartbeat_answered()
        if m.member_epoch != epoch:
            log.debug("group %s member %s: epoch %d", self.group_id, m.member_id, m.member_epoch)
        await self._apply(outcome)
        if m.state is MemberState.RECONCILING:
            self._reconcile_wake.set()

    def _heartbeat_answered(self) -> None:
        """Wakes whoever waits for the next heartbeat answer (a commit with a stale epoch)."""
        answered, self._answered = self._answered, asyncio.Event()
        answered.set()

    async def _apply(self, outcome: HeartbeatOutcome) -> None:
        if outcome.coordinator_lost:
            log.info("group %s: %s; finding the coordinator again", self.group_id, ErrorCode(outcome.code).name)
            self._coordinator_lost()
        if outcome.fatal:
            assert outcome.error is not None
            await self._fail(outcome.error, outcome.release)
            return
        if outcome.error is not None:
            self.notify(outcome.error)
        if outcome.release:
            log.info("group %s member %s: %s; partitions lost, rejoining", self.group_id, self.state.member_id,
                     ErrorCode(outcome.code).name)
            await self._release_lost()

    async def _fail(self, error: KafkaError, release: bool) -> None:
        """A fatal error (the state is FATAL already): partitions released as lost, the error
        told; the heartbeat loop ends."""
        log.error("group %s: fatal error %s: %s", self.group_id, error.name(), error.str())
        if release:
            await self._release_lost()
        self.notify(error)

    async def _release_lost(self) -> None:
        """Hands everything the application holds over as lost (after any hand-over in
        progress), then lets the state forget it (a fenced member rejoins)."""
        async with self._handoff_lock:
            lost = set(self.state.held)
            if lost:
                await self._handoff("lost", lost)
            self.state.released()
        self._wake.set()

    async def _poll_timer_expired(self) -> None:
        """max.poll.interval.ms passed without a poll: leave, lose the partitions, wait for a poll."""
        log.warning("group %s: max.poll.interval.ms exceeded; leaving the group", self.group_id)
        self.notify(KafkaError(KafkaError._MAX_POLL_EXCEEDED))
        body = self.state.poll_timeout_leave()
        self._stale_since = time.monotonic()
        await self._send_leave(body)
        await self._release_lost()

    # -- reconciliation -----------------------------------------------------------------------

    def _resolver(self) -> Callable[[bytes], str | None]:
        """Topic id -> name from the kernel's metadata as it is now."""
        by_id = {info.topic_id: name for name, info in self.kernel.metadata.topics.items()
                 if info.topic_id != bytes(16)}
        return by_id.get

    async def _reconcile_loop(self) -> None:
        """Carries out reconciliations as the state asks for them.  While the target names a
        topic id the metadata does not know, metadata is refreshed first (so a new assignment
        is not split needlessly), then what resolves is reconciled, and the refresh is repeated
        with a growing pause until the id is known or the target moves on."""
        refresh_wait = self.backoff
        while True:
            await self._reconcile_wake.wait()
            self._reconcile_wake.clear()
            while True:
                m = self.state
                missing = m.missing_topic_ids(self._resolver())
                if missing:
                    log.debug("group %s: assignment names unknown topic ids %s; refreshing metadata",
                              self.group_id, sorted(t.hex() for t in missing))
                    try:
                        await self.kernel.refresh_metadata(all_topics=True)
                    except Exception as exc:  # noqa: BLE001 - tried again below
                        log.debug("metadata refresh: %r", exc)
                rec = m.start_reconciliation(self._resolver())
                if rec is not None:
                    await self._reconcile(rec)
                    continue  # the target may have moved meanwhile
                if m.state is MemberState.ACKNOWLEDGING:
                    self._wake.set()  # a partly resolved target, acknowledged as it is
                if not m.missing_topic_ids(self._resolver()):
                    refresh_wait = self.backoff
                    break
                await wait_event(self._reconcile_wake, refresh_wait)  # still unknown: back off
                self._reconcile_wake.clear()
                refresh_wait = min(refresh_wait * 2, self.kernel.config["retry.backoff.max.ms"] / 1000.0)

    async def _reconcile(self, rec: Reconciliation) -> None:
        """Revoke, then assign, then have the result acknowledged (unless overtaken)."""
        m = self.state
        log.info("group %s member %s epoch %d: reconciling: revoking %s, assigning %s", self.group_id,
                 m.member_id, m.member_epoch, sorted(rec.revoke), sorted(rec.assign))
        try:
            async with self._handoff_lock:
                if m.aborted(rec):
                    return
                if rec.revoke:
                    await self._handoff("revoke", set(rec.revoke))
                m.revoked(rec)
            async with self._handoff_lock:
                if m.aborted(rec):
                    return
                if rec.assign or rec.announce:
                    await self._handoff("assign", set(rec.assign))
                m.assigned(rec)
        finally:
            m.reconciliation_done(rec)
            self._wake.set()

    async def _handoff(self, kind: str, partitions: set[TopicPartitionTuple]) -> None:
        """Hands an assignment change to the application and waits until it was handled."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.notify(RebalanceEvent(kind, sorted(partitions), True, done))
        try:
            await asyncio.wait_for(asyncio.shield(done), self.rebalance_timeout)
        except TimeoutError:
            log.warning("group %s: the application did not handle %s within max.poll.interval.ms",
                        self.group_id, kind)

    # -- offsets ------------------------------------------------------------------------------

    async def commit(self, offsets: Mapping[TopicPartitionTuple, tuple[int, str | None]],
                     in_group: bool = True) -> dict[TopicPartitionTuple, int]:
        """Commits offsets; returns tp -> error code (0 = committed).

        Retries coordinator moves; a STALE_MEMBER_EPOCH is retried with the epoch of the next
        heartbeat, for the partitions the member still holds (one it gave up may be another
        member's now: it keeps the error).  Bounded by ``request.timeout.ms``.
        """
        m = self.state
        deadline = time.monotonic() + self.kernel.config["request.timeout.ms"] / 1000.0
        todo = dict(offsets)
        result: dict[TopicPartitionTuple, int] = {}
        while True:
            body = m.commit_request(todo, in_group)
            sent_epoch = body["generation_id_or_member_epoch"]
            answered = self._answered
            try:
                await self._ensure_coordinator(deadline)
                response = await self._send(OFFSET_COMMIT, body)
            except (TimeoutError, ConnectionError):
                self._coordinator_lost()
                if time.monotonic() > deadline:
                    result.update({tp: int(ErrorCode.REQUEST_TIMED_OUT) for tp in todo})
                    return result
                await asyncio.sleep(self.backoff)
                continue
            got, retry, lost, stale = m.on_commit(response)
            result.update(got)
            if lost:
                self._coordinator_lost()
            left = deadline - time.monotonic()
            if left <= 0:
                return result
            if stale and sent_epoch > 0:
                todo = {tp: v for tp, v in todo.items()
                        if got.get(tp) == ErrorCode.STALE_MEMBER_EPOCH and tp in m.held}
                if not todo or not m.in_group:
                    return result
                if m.member_epoch == sent_epoch:
                    await wait_event(answered, left)  # the next heartbeat brings the new epoch
                continue
            if retry:
                await asyncio.sleep(self.backoff)
                continue
            return result

    async def fetch_committed(self, tps: list[TopicPartitionTuple]) -> dict[TopicPartitionTuple, int]:
        """Committed offsets (-1 = none) of ``tps``; retries while the coordinator loads or
        moves, an offset is unstable, or the epoch was stale.

        Raises:
            ConnectionError: no answer within request.timeout.ms, or the group refused the
                member (UNKNOWN_MEMBER_ID …): the caller tries again later.
        """
        m = self.state
        deadline = time.monotonic() + self.kernel.config["request.timeout.ms"] / 1000.0
        stable = self.kernel.config["isolation.level"] == "read_committed"
        while True:
            body = m.fetch_request(tps, require_stable=stable)
            sent_epoch = body["groups"][0]["member_epoch"]
            answered = self._answered
            try:
                await self._ensure_coordinator(deadline)
                response = await self._send(OFFSET_FETCH, body)
            except (TimeoutError, ConnectionError) as exc:
                self._coordinator_lost()
                if time.monotonic() > deadline:
                    raise ConnectionError(
                        f"group {self.group_id}: no committed offsets within the request timeout") from exc
                await asyncio.sleep(self.backoff)
                continue
            result, code, retry, lost = m.on_fetch(response)
            if lost:
                self._coordinator_lost()
            left = deadline - time.monotonic()
            if retry and left > 0:
                if code == ErrorCode.STALE_MEMBER_EPOCH and m.member_epoch == sent_epoch:
                    await wait_event(answered, left)
                else:
                    await asyncio.sleep(self.backoff)
                continue
            if code != ErrorCode.NONE or retry:
                name = ErrorCode(code).name if code else "a retriable error"
                raise ConnectionError(f"group {self.group_id}: OffsetFetch failed: {name}")
            return result

    # -- leaving ------------------------------------------------------------------------------

    async def leave(self) -> None:
        """Leaves the group: a heartbeat with epoch -1 (-2 for a static member), bounded.

        The application has released its partitions already (close and unsubscribe do that)."""
        await self._send_leave(self.state.leave_request())
        self._wake.set()

    async def _send_leave(self, body: dict[str, Any] | None) -> None:
        if body is None or self.coordinator < 0:
            return
        try:
            await self._send(CONSUMER_GROUP_HEARTBEAT, body, timeout=_LEAVE_TIMEOUT)
        except (TimeoutError, ConnectionError, UnsupportedByBroker) as exc:
            log.debug("group %s: leave heartbeat: %r", self.group_id, exc)
