"""A share consumer's membership I/O (KIP-932): ShareGroupHeartbeat (api key 76) on the kernel's loop.

The heartbeat loop finds the group coordinator, sends the heartbeats
:class:`~mafka.client.share_membership.ShareMembership` says are due on the ``"group"``
connection, one at a time, and carries out the answers: a new assignment is named through
metadata (refreshed while a topic id is unknown) and handed to ``on_assignment`` as
``{(topic, partition): topic id}``; errors for the application go to ``notify``.  When the
application has not polled for ``max.poll.interval.ms`` the member leaves the group (its
assignment dropped, ``_MAX_POLL_EXCEEDED`` told) and joins again at the next poll.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Mapping

from mafka.client.aio_util import wait_event
from mafka.client.group_coordinator import GroupCoordinatorLink
from mafka.client.kafka_error import KafkaError
from mafka.client.kernel import Kernel
from mafka.client.share_membership import SHARE_NOT_SUPPORTED, ShareMembership, ShareMemberState
from mafka.client.transport import UnsupportedByBroker
from mafka.errors import ErrorCode
from mafka.topics import TopicPartitionTuple

__all__ = ["ShareGroupMember", "SHARE_GROUP_HEARTBEAT"]

log = logging.getLogger("mafka.client.share")

SHARE_GROUP_HEARTBEAT = 76
_TICK = 1.0
_LEAVE_TIMEOUT = 5.0


class ShareGroupMember(GroupCoordinatorLink):
    """One share consumer's membership of ``group.id``.

    Args:
        kernel: connections and metadata.
        on_assignment: called on the loop with the new assignment (name -> topic id).
        notify: called on the loop with errors for the application.
    """

    def __init__(self, kernel: Kernel, on_assignment: Callable[[dict[TopicPartitionTuple, bytes]], None],
                 notify: Callable[[KafkaError], None]) -> None:
        cfg = kernel.config
        self.kernel = kernel
        self.on_assignment = on_assignment
        self.notify = notify
        self.group_id: str = cfg["group.id"]
        self.backoff = cfg["retry.backoff.ms"] / 1000.0
        self.max_poll_interval = cfg["max.poll.interval.ms"] / 1000.0
        self.state = ShareMembership(self.group_id, rack_id=cfg.get("client.rack") or None,
                                     retry_backoff_ms=cfg["retry.backoff.ms"],
                                     retry_backoff_max_ms=cfg["retry.backoff.max.ms"])
        self.coordinator = -1
        self.last_poll = time.monotonic()
        self.closing = False
        self._wake = asyncio.Event()
        self._stale_since = 0.0
        self._resolve_task: asyncio.Task[None] | None = None

    @property
    def member_id(self) -> str:
        return self.state.member_id

    def subscribe(self, topics: list[str]) -> None:
        self.state.subscribe(topics)
        self._wake.set()

    def polled(self) -> None:
        """The application polled: the poll timer restarts; a member that left for lack of polls rejoins."""
        self.last_poll = time.monotonic()
        if self.state.state is ShareMemberState.STALE:
            log.info("share group %s: polled again after max.poll.interval.ms; rejoining", self.group_id)
            self.state.rejoin()
            self._wake.set()

    async def run(self) -> None:
        """Heartbeats while subscribed, until closed or a fatal error."""
        while not self.closing and self.state.state is not ShareMemberState.FATAL:
            if not self.state.in_group:
                self._wake.clear()
                await wait_event(self._wake, _TICK)
                continue
            try:
                await self._step()
            except (TimeoutError, ConnectionError) as exc:
                log.debug("share group %s: heartbeat failed: %r", self.group_id, exc)
                self._coordinator_lost()
                self.state.on_heartbeat_failure(time.monotonic())
                await asyncio.sleep(self.backoff)
            except Exception:  # noqa: BLE001 - a broken answer must not end the membership unnoticed
                log.exception("share group %s: heartbeat failed", self.group_id)
                self._coordinator_lost()
                self.state.on_heartbeat_failure(time.monotonic())
                await asyncio.sleep(self.backoff)

    async def _step(self) -> None:
        m = self.state
        self._wake.clear()
        now = time.monotonic()
        if m.state is ShareMemberState.STABLE and now - self.last_poll > self.max_poll_interval:
            log.warning("share group %s: max.poll.interval.ms exceeded; leaving the group", self.group_id)
            self.notify(KafkaError(KafkaError._MAX_POLL_EXCEEDED))
            body = m.poll_timeout_leave()
            self._apply_assignment({})
            await self._send_leave(body)
            return
        await self._ensure_coordinator()
        delay = m.time_to_next_heartbeat(now)
        if delay is None or delay > 0:
            await wait_event(self._wake, _TICK if delay is None else min(delay, _TICK))
            return
        body = m.heartbeat_request(now)
        try:
            response = await self._send(SHARE_GROUP_HEARTBEAT, body)
        except UnsupportedByBroker:
            outcome = m.fail(KafkaError(ErrorCode.UNSUPPORTED_VERSION, SHARE_NOT_SUPPORTED, fatal=True))
        else:
            outcome = m.on_heartbeat_response(response, time.monotonic())
        if outcome.coordinator_lost:
            self._coordinator_lost()
        if outcome.assignment is not None:
            self._apply_assignment(outcome.assignment)
        if outcome.error is not None:
            if outcome.fatal:
                log.error("share group %s: fatal error %s", self.group_id, outcome.error)
            self.notify(outcome.error)

    def _apply_assignment(self, assignment: Mapping[bytes, frozenset[int]]) -> None:
        """Names the assignment's topics (refreshing metadata while an id is unknown) and hands it on."""
        if self._resolve_task is not None and not self._resolve_task.done():
            self._resolve_task.cancel()
        self._resolve_task = self.kernel.spawn(self._resolve(dict(assignment)))

    async def _resolve(self, assignment: dict[bytes, frozenset[int]]) -> None:
        wait = self.backoff
        while True:
            names = {info.topic_id: name for name, info in self.kernel.metadata.topics.items()}
            missing = [t for t in assignment if t not in names]
            if missing:
                try:
                    await self.kernel.refresh_metadata(all_topics=True)
                except Exception as exc:  # noqa: BLE001 - tried again below
                    log.debug("metadata refresh: %r", exc)
                names = {info.topic_id: name for name, info in self.kernel.metadata.topics.items()}
            resolved = {(names[t], p): t for t, ps in assignment.items() if t in names for p in ps}
            self.on_assignment(resolved)
            if all(t in names for t in assignment):
                return
            await asyncio.sleep(wait)
            wait = min(wait * 2, self.kernel.config["retry.backoff.max.ms"] / 1000.0)

    async def leave(self) -> None:
        """Leaves the group (a heartbeat with epoch -1), bounded."""
        body = self.state.leave_request()
        self._apply_assignment({})
        await self._send_leave(body)
        self._wake.set()

    async def _send_leave(self, body: dict[str, object] | None) -> None:
        if body is None or self.coordinator < 0:
            return
        try:
            await self._send(SHARE_GROUP_HEARTBEAT, body, timeout=_LEAVE_TIMEOUT)
        except (TimeoutError, ConnectionError, UnsupportedByBroker) as exc:
            log.debug("share group %s: leave heartbeat: %r", self.group_id, exc)
