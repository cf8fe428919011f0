"""The consumer's side of Kafka's group protocol: join, sync, heartbeat, commit, leave.

:class:`GroupMember` runs on the kernel's loop.  It finds the coordinator,
joins (JoinGroup; the leader computes the assignment with the chosen
assignor from :mod:`mafka.client.assignors` and Kafka's byte-level
Subscription/Assignment formats from :mod:`mafka.group.consumer_protocol`,
so it can share a group with Java, librdkafka or kafka-python members),
syncs, and heartbeats on its own ``"group"`` connection so fetch long polls
never delay a heartbeat.

Assignment changes reach the application as :class:`RebalanceEvent` values
through ``notify``; the member waits until the application has handled one
(its ``done`` future) before going on — that is where ``on_revoke`` runs
(and commits) before partitions move.  EAGER assignors (range,
roundrobin) revoke everything before every join; COOPERATIVE
(cooperative-sticky, KIP-429) revokes only partitions that move, then
rejoins so they can be given out.  What each answer means is decided by the
sans-IO :class:`~mafka.client.group_state.Membership`; this module only sends,
waits and hands over.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mafka.client.assignors import parse_strategy_list
from mafka.client.group_coordinator import GroupCoordinatorLink
from mafka.client.group_state import Membership, Outcome
from mafka.client.kafka_error import KafkaError
from mafka.client.kernel import Kernel
from mafka.errors import ErrorCode
from mafka.topics import TopicPartitionTuple

__all__ = ["GroupMember", "RebalanceEvent"]

log = logging.getLogger("mafka.client.group")

OFFSET_COMMIT, OFFSET_FETCH, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = 8, 9, 11, 12, 13, 14


@dataclass
class RebalanceEvent:
    """``kind`` is "assign", "revoke" or "lost"; ``partitions`` the (topic, partition) pairs;
    ``incremental`` for cooperative rebalances.  The handler resolves ``done``."""

    kind: str
    partitions: list[TopicPartitionTuple]
    incremental: bool
    done: asyncio.Future[None] = field(repr=False)


class GroupMember(GroupCoordinatorLink):
    """One consumer's membership of ``group.id``: the driver of :class:`~mafka.client.group_state.Membership`.

    Args:
        kernel: connections and metadata.
        notify: called on the loop with each :class:`RebalanceEvent` (and
            with ``KafkaError`` values for errors the application should see).
    """

    def __init__(self, kernel: Kernel, notify: Callable[[Any], None]) -> None:
        cfg = kernel.config
        self.kernel = kernel
        self.notify = notify
        self.group_id: str = cfg["group.id"]
        self.heartbeat_interval = cfg["heartbeat.interval.ms"] / 1000.0
        self.backoff = cfg["retry.backoff.ms"] / 1000.0
        strategy = cfg["partition.assignment.strategy"]
        self.state = Membership(
            self.group_id, cfg.get("group.instance.id") or None, cfg["session.timeout.ms"],
            cfg["max.poll.interval.ms"],
            parse_strategy_list(strategy if isinstance(strategy, str) else ",".join(strategy)),
        )
        self.topics: set[str] = set()
        self.pattern: re.Pattern[str] | None = None
        self.patterns: list[str] = []
        self.coordinator = -1
        self.subscribed = asyncio.Event()
        self.last_poll = time.monotonic()
        self.closing = False
        self._subscription_seen: dict[str, int] = {}

    # The member's identity and assignment live in :attr:`state`; these read it.
    @property
    def member_id(self) -> str:
        return self.state.member_id

    @property
    def generation(self) -> int:
        return self.state.generation

    @property
    def instance_id(self) -> str | None:
        return self.state.instance_id

    @property
    def owned(self) -> set[TopicPartitionTuple]:
        return self.state.owned

    @owned.setter
    def owned(self, value: set[TopicPartitionTuple]) -> None:
        self.state.owned = value

    @property
    def need_rejoin(self) -> bool:
        return self.state.need_rejoin

    @property
    def rebalance_protocol(self) -> str:
        return self.state.rebalance_protocol

    @property
    def rebalance_timeout(self) -> float:
        return self.state.rebalance_timeout_ms / 1000.0

    # -- subscription ---------------------------------------------------------------------

    def subscribe(self, topics: list[str]) -> None:
        """Sets the subscription (names, or regexes starting with ``^``) and asks for a rejoin."""
        self.patterns = [t for t in topics if t.startswith("^")]
        self.pattern = re.compile("|".join(f"(?:{p})" for p in self.patterns)) if self.patterns else None
        self.topics = {t for t in topics if not t.startswith("^")}
        self.state.need_rejoin = True
        self.subscribed.set()

    def unsubscribe(self) -> None:
        self.topics = set()
        self.pattern = None
        self.patterns = []
        self.subscribed.clear()

    async def _resolved_topics(self) -> set[str]:
        md = self.kernel.metadata
        if self.pattern is not None:
            await self.kernel.refresh_metadata(all_topics=True)
            matched = {t for t, info in md.topics.items()
                       if self.pattern.match(t) and not info.is_internal}
            return self.topics | matched
        await self.kernel.metadata_for(self.topics, timeout=30.0)
        return set(self.topics)

    # -- the membership loop ----------------------------------------------------------

    async def run(self) -> None:
        """Joins while subscribed; heartbeats; rejoins when told; until closed."""
        while not self.closing:
            if not self.subscribed.is_set():
                await self.subscribed.wait()
                continue
            try:
                await self._ensure_coordinator()
                if self.state.need_rejoin or self.state.generation < 0:
                    await self._join_and_sync()
                else:
                    await self._heartbeat_once()
                    await asyncio.sleep(self.heartbeat_interval)
            except (TimeoutError, ConnectionError) as exc:
                log.debug("group %s: %s", self.group_id, exc)
                self.coordinator = -1
                await asyncio.sleep(self.backoff)

    async def _handoff(self, kind: str, partitions: set[TopicPartitionTuple], incremental: bool) -> None:
        """Hands an assignment change to the application and waits until it was handled."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.notify(RebalanceEvent(kind, sorted(partitions), incremental, done))
        try:
            await asyncio.wait_for(asyncio.shield(done), self.rebalance_timeout)
        except TimeoutError:
            log.warning("group %s: the application did not handle %s within max.poll.interval.ms",
                        self.group_id, kind)

    async def _apply(self, outcome: Outcome) -> None:
        """Carries out an outcome's side effects: coordinator, errors, lost partitions."""
        if outcome.coordinator_lost:
            self._coordinator_lost()
        if outcome.notify is not None:
            self.notify(outcome.notify)
        if outcome.fatal:
            self.closing = True
        if outcome.lost:
            await self._handoff("lost", outcome.lost, self.state.cooperative())

    async def lose_partitions(self) -> None:
        lost = self.state.lose()
        if lost:
            await self._handoff("lost", lost, self.state.cooperative())

    async def _join_and_sync(self) -> None:
        revoked = self.state.revoke_before_join()
        if revoked:
            await self._handoff("revoke", revoked, False)
        topics = await self._resolved_topics()
        self._subscription_seen = {t: self.kernel.metadata.partition_count(t) or 0 for t in topics}
        timeout = self.rebalance_timeout + 5.0
        response = await self._send(JOIN_GROUP, self.state.join_request(topics), timeout=timeout)
        joined = self.state.on_join(response)
        if joined.kind not in ("leader", "follower"):
            await self._apply(joined)
            return
        assignments: dict[str, bytes] = {}
        if joined.kind == "leader":
            md = await self.kernel.metadata_for(self.state.leader_topics(response), timeout=30.0)
            counts = {t: n for t in self.state.leader_topics(response) if (n := md.partition_count(t))}
            assignments = self.state.leader_assignments(response, counts)
        synced = self.state.on_sync(await self._send(SYNC_GROUP, self.state.sync_request(assignments),
                                                     timeout=timeout))
        if synced.kind != "assigned":
            await self._apply(synced)
            return
        log.info("group %s generation %d member %s: assigned %s", self.group_id, self.state.generation,
                 self.state.member_id, sorted(self.state.owned))
        if synced.revoke:
            await self._handoff("revoke", synced.revoke, True)
        await self._handoff("assign", synced.assign, synced.incremental)

    async def _heartbeat_once(self) -> None:
        if time.monotonic() - self.last_poll > self.rebalance_timeout:
            log.warning("group %s: max.poll.interval.ms exceeded; leaving the group", self.group_id)
            self.notify(KafkaError(KafkaError._MAX_POLL_EXCEEDED))
            await self.leave()
            await self.lose_partitions()
            self.subscribed.clear()  # the next poll() rejoins
            return
        response = await self._send(HEARTBEAT, self.state.heartbeat_request())
        outcome = self.state.on_heartbeat(response.error_code)
        if outcome.kind == "ok":
            await self._check_metadata()
        else:
            await self._apply(outcome)

    async def _check_metadata(self) -> None:
        """Rejoins when subscribed topics appear (regex) or gain partitions (Kafka's metadata check)."""
        md = self.kernel.metadata
        if time.monotonic() - md.updated_at < self.kernel.config["topic.metadata.refresh.interval.ms"] / 1000.0:
            return
        topics = await self._resolved_topics()
        seen = {t: md.partition_count(t) or 0 for t in topics}
        if seen != self._subscription_seen:
            log.info("group %s: subscribed topics changed; rejoining", self.group_id)
            self.state.need_rejoin = True

    # -- offsets --------------------------------------------------------------------------

    async def _coordinated(self, body: dict[str, Any], api_key: int,
                           interpret: Callable[[Any], tuple[dict[TopicPartitionTuple, int], bool, bool]],
                           on_timeout: Callable[[], dict[TopicPartitionTuple, int]]) -> dict[TopicPartitionTuple, int]:
        """Sends ``body`` to the coordinator until ``interpret`` says no retry, within request.timeout.ms."""
        deadline = time.monotonic() + self.kernel.config["request.timeout.ms"] / 1000.0
        while True:
            try:
                await self._ensure_coordinator(deadline)
                response = await self._send(api_key, body)
            except (TimeoutError, ConnectionError):
                self._coordinator_lost()
                if time.monotonic() > deadline:
                    return on_timeout()
                await asyncio.sleep(self.backoff)
                continue
            result, retry, lost = interpret(response)
            if lost:
                self._coordinator_lost()
            if retry and time.monotonic() < deadline:
                await asyncio.sleep(self.backoff)
                continue
            return result

    async def commit(self, offsets: dict[TopicPartitionTuple, tuple[int, str | None]], in_group: bool = True) -> dict[TopicPartitionTuple, int]:
        """Commits offsets; returns tp -> error code (0 = committed).  Retries coordinator moves."""
        return await self._coordinated(
            self.state.commit_request(offsets, in_group), OFFSET_COMMIT, self.state.on_commit,
            lambda: {tp: int(ErrorCode.REQUEST_TIMED_OUT) for tp in offsets})

    async def fetch_committed(self, tps: list[TopicPartitionTuple]) -> dict[TopicPartitionTuple, int]:
        """Committed offsets (-1 = none) of ``tps``; retries while the coordinator loads or moves.

        Raises:
            ConnectionError: no coordinator answered within request.timeout.ms.
        """
        def timed_out() -> dict[TopicPartitionTuple, int]:
            raise ConnectionError(f"group {self.group_id}: no committed offsets within the request timeout")

        stable = self.kernel.config["isolation.level"] == "read_committed"
        return await self._coordinated(self.state.fetch_request(tps, require_stable=stable), OFFSET_FETCH,
                                       self.state.on_fetch, timed_out)

    async def leave(self) -> None:
        """LeaveGroup (dynamic members only: a static member's session keeps its assignment)."""
        body = self.state.leave_request()
        if body is not None and self.coordinator >= 0:
            try:
                await self._send(LEAVE_GROUP, body, timeout=5.0)
            except (TimeoutError, ConnectionError):
                pass
        self.state.left()
