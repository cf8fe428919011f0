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
rejoins so they can be given out.
"""

from __future__ import annotations

import asyncio
import logging
import re
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mafka.client.assignors import MemberMetadata, parse_strategy_list
from mafka.client.kafka_error import KafkaError
from mafka.client.kernel import Kernel
from mafka.errors import ErrorCode
from mafka.group.consumer_protocol import (
    PROTOCOL_TYPE,
    Assignment,
    Subscription,
    decode_assignment,
    decode_subscription,
    encode_assignment,
    encode_subscription,
)

__all__ = ["GroupMember", "RebalanceEvent"]

log = logging.getLogger("mafka.client.group")

OFFSET_COMMIT, OFFSET_FETCH, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = 8, 9, 11, 12, 13, 14
TP = tuple[str, int]

_COORDINATOR_ERRORS = {ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE}
_REJOIN_ERRORS = {ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.ILLEGAL_GENERATION,
                  ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID}


@dataclass
class RebalanceEvent:
    """``kind`` is "assign", "revoke" or "lost"; ``partitions`` the (topic, partition) pairs;
    ``incremental`` for cooperative rebalances.  The handler resolves ``done``."""

    kind: str
    partitions: list[TP]
    incremental: bool
    done: asyncio.Future[None] = field(repr=False)


def _flatten(assignment: dict[str, list[int]]) -> set[TP]:
    return {(t, p) for t, ps in assignment.items() for p in ps}


class GroupMember:
    """One consumer's membership of ``group.id``.

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
        self.instance_id: str | None = cfg.get("group.instance.id") or None
        self.session_timeout_ms = cfg["session.timeout.ms"]
        self.rebalance_timeout_ms = cfg["max.poll.interval.ms"]
        self.heartbeat_interval = cfg["heartbeat.interval.ms"] / 1000.0
        self.backoff = cfg["retry.backoff.ms"] / 1000.0
        strategy = cfg["partition.assignment.strategy"]
        self.assignors = parse_strategy_list(strategy if isinstance(strategy, str) else ",".join(strategy))
        self.topics: set[str] = set()
        self.pattern: re.Pattern[str] | None = None
        self.patterns: list[str] = []
        self.member_id = ""
        self.generation = -1
        self.protocol: str | None = None
        self.coordinator = -1
        self.owned: set[TP] = set()
        self.need_rejoin = False
        self.subscribed = asyncio.Event()
        self.last_poll = time.monotonic()
        self.closing = False
        self._subscription_seen: dict[str, int] = {}

    # -- subscription ---------------------------------------------------------------------

    def subscribe(self, topics: list[str]) -> None:
        """Sets the subscription (names, or regexes starting with ``^``) and asks for a rejoin."""
        self.patterns = [t for t in topics if t.startswith("^")]
        self.pattern = re.compile("|".join(f"(?:{p})" for p in self.patterns)) if self.patterns else None
        self.topics = {t for t in topics if not t.startswith("^")}
        self.need_rejoin = True
        self.subscribed.set()

    def unsubscribe(self) -> None:
        self.topics = set()
        self.pattern = None
        self.patterns = []
        self.subscribed.clear()

    @property
    def rebalance_protocol(self) -> str:
        chosen = next((a for a in self.assignors if a.name == self.protocol), self.assignors[0])
        return chosen.rebalance_protocol

    def _cooperative(self) -> bool:
        return all(a.rebalance_protocol == "COOPERATIVE" for a in self.assignors)

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
                if self.need_rejoin or self.generation < 0:
                    await self._join_and_sync()
                else:
                    await self._heartbeat_once()
                    await asyncio.sleep(self.heartbeat_interval)
            except (TimeoutError, ConnectionError) as exc:
                log.debug("group %s: %s", self.group_id, exc)
                self.coordinator = -1
                await asyncio.sleep(self.backoff)

    async def _ensure_coordinator(self, deadline: float | None = None) -> None:
        """Finds the coordinator, retrying; ConnectionError once ``deadline`` (monotonic) passes."""
        while self.coordinator < 0:
            if deadline is not None and time.monotonic() > deadline:
                raise ConnectionError(f"no coordinator found for group {self.group_id}")
            try:
                self.coordinator = await self.kernel.find_coordinator(self.group_id)
            except Exception as exc:  # noqa: BLE001 - any lookup failure: back off and retry
                log.debug("find coordinator for %s: %r", self.group_id, exc)
                await asyncio.sleep(self.backoff)

    def _coordinator_lost(self) -> None:
        if self.coordinator >= 0:
            self.kernel.disconnect(self.coordinator, "group")
        self.coordinator = -1

    async def _send(self, api_key: int, body: dict[str, Any], timeout: float | None = None) -> Any:
        return await self.kernel.send(self.coordinator, api_key, body, channel="group", timeout=timeout)

    async def _handoff(self, kind: str, partitions: set[TP], incremental: bool) -> None:
        """Hands an assignment change to the application and waits until it was handled."""
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self.notify(RebalanceEvent(kind, sorted(partitions), incremental, done))
        try:
            await asyncio.wait_for(asyncio.shield(done), self.rebalance_timeout_ms / 1000.0)
        except TimeoutError:
            log.warning("group %s: the application did not handle %s within max.poll.interval.ms",
                        self.group_id, kind)

    async def lose_partitions(self) -> None:
        if self.owned:
            owned, self.owned = self.owned, set()
            await self._handoff("lost", owned, self._cooperative())

    async def _join_and_sync(self) -> None:
        if not self._cooperative() and self.owned:
            owned, self.owned = self.owned, set()
            await self._handoff("revoke", owned, False)
        topics = await self._resolved_topics()
        self._subscription_seen = {t: self.kernel.metadata.partition_count(t) or 0 for t in topics}
        owned_by_topic: dict[str, list[int]] = {}
        for t, p in sorted(self.owned):
            owned_by_topic.setdefault(t, []).append(p)
        protocols = []
        for assignor in self.assignors:
            user_data = assignor.subscription_user_data(topics, owned_by_topic, self.generation)
            sub = Subscription(sorted(topics), user_data, owned_by_topic)
            protocols.append({"name": assignor.name, "metadata": encode_subscription(sub)})
        self.need_rejoin = False
        response = await self._send(JOIN_GROUP, {
            "group_id": self.group_id,
            "session_timeout_ms": self.session_timeout_ms,
            "rebalance_timeout_ms": self.rebalance_timeout_ms,
            "member_id": self.member_id,
            "group_instance_id": self.instance_id,
            "protocol_type": PROTOCOL_TYPE,
            "protocols": protocols,
        }, timeout=self.rebalance_timeout_ms / 1000.0 + 5.0)
        code = response.error_code
        if code == ErrorCode.MEMBER_ID_REQUIRED:
            self.member_id = response.member_id
            self.need_rejoin = True
            return
        if code != ErrorCode.NONE:
            self._join_error(code)
            return
        self.member_id = response.member_id
        self.generation = response.generation_id
        self.protocol = response.protocol_name
        assignments: dict[str, bytes] = {}
        if response.leader == response.member_id:
            assignments = await self._lead(response)
        sync = await self._send(SYNC_GROUP, {
            "group_id": self.group_id,
            "generation_id": self.generation,
            "member_id": self.member_id,
            "group_instance_id": self.instance_id,
            "assignments": [{"member_id": m, "assignment": a} for m, a in assignments.items()],
        }, timeout=self.rebalance_timeout_ms / 1000.0 + 5.0)
        if sync.error_code != ErrorCode.NONE:
            self._join_error(sync.error_code)
            return
        assignment = decode_assignment(sync.assignment) if sync.assignment else Assignment()
        for assignor in self.assignors:
            if assignor.name == self.protocol:
                assignor.on_assignment(assignment, self.generation)
        new = _flatten(assignment.assigned_partitions)
        log.info("group %s generation %d member %s: assigned %s", self.group_id, self.generation,
                 self.member_id, sorted(new))
        if self.rebalance_protocol == "COOPERATIVE":
            revoked = self.owned - new
            added = new - self.owned
            if revoked:
                self.owned -= revoked
                await self._handoff("revoke", revoked, True)
                self.need_rejoin = True  # so the revoked partitions can be handed out
            self.owned |= added
            await self._handoff("assign", added, True)
        else:
            self.owned = new
            await self._handoff("assign", new, False)

    def _join_error(self, code: int) -> None:
        self.need_rejoin = True
        if code in _COORDINATOR_ERRORS:
            self._coordinator_lost()
        elif code == ErrorCode.UNKNOWN_MEMBER_ID:
            self.member_id = ""
            self.generation = -1
        elif code == ErrorCode.ILLEGAL_GENERATION:
            self.generation = -1
        elif code == ErrorCode.FENCED_INSTANCE_ID:
            self.notify(KafkaError(code, "Broker: Static consumer fenced by other consumer with same "
                                         "group.instance.id", fatal=True))
            self.closing = True
        elif code not in (ErrorCode.REBALANCE_IN_PROGRESS, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS):
            self.notify(KafkaError(code))

    async def _lead(self, response: Any) -> dict[str, bytes]:
        assignor = next(a for a in self.assignors if a.name == response.protocol_name)
        members: dict[str, MemberMetadata] = {}
        topics: set[str] = set()
        for m in response.members:
            sub = decode_subscription(m.metadata)
            members[m.member_id] = MemberMetadata(m.member_id, sub, getattr(m, "group_instance_id", None))
            topics |= set(sub.topics)
        md = await self.kernel.metadata_for(topics, timeout=30.0)
        counts = {t: n for t in topics if (n := md.partition_count(t))}
        result = assignor.assign(members, counts)
        return {m: encode_assignment(Assignment({t: sorted(ps) for t, ps in parts.items()}))
                for m, parts in result.items()}

    async def _heartbeat_once(self) -> None:
        if time.monotonic() - self.last_poll > self.rebalance_timeout_ms / 1000.0:
            log.warning("group %s: max.poll.interval.ms exceeded; leaving the group", self.group_id)
            self.notify(KafkaError(KafkaError._MAX_POLL_EXCEEDED))
            await self.leave()
            await self.lose_partitions()
            self.subscribed.clear()  # the next poll() rejoins
            return
        response = await self._send(HEARTBEAT, {
            "group_id": self.group_id, "generation_id": self.generation,
            "member_id": self.member_id, "group_instance_id": self.instance_id,
        })
        code = response.error_code
        if code == ErrorCode.NONE:
            await self._check_metadata()
            return
        if code in _COORDINATOR_ERRORS:
            self._coordinator_lost()
        elif code == ErrorCode.REBALANCE_IN_PROGRESS:
            self.need_rejoin = True
        elif code in (ErrorCode.ILLEGAL_GENERATION, ErrorCode.UNKNOWN_MEMBER_ID, ErrorCode.FENCED_INSTANCE_ID):
            if code == ErrorCode.UNKNOWN_MEMBER_ID:
                self.member_id = ""
            self.generation = -1
            await self.lose_partitions()
            self._join_error(code)

    async def _check_metadata(self) -> None:
        """Rejoins when subscribed topics appear (regex) or gain partitions (Kafka's metadata check)."""
        md = self.kernel.metadata
        if time.monotonic() - md.updated_at < self.kernel.config["topic.metadata.refresh.interval.ms"] / 1000.0:
            return
        topics = await self._resolved_topics()
        seen = {t: md.partition_count(t) or 0 for t in topics}
        if seen != self._subscription_seen:
            log.info("group %s: subscribed topics changed; rejoining", self.group_id)
            self.need_rejoin = True

    # -- offsets --------------------------------------------------------------------------

    async def commit(self, offsets: dict[TP, tuple[int, str | None]], in_group: bool = True) -> dict[TP, int]:
        """Commits offsets; returns tp -> error code (0 = committed).  Retries coordinator moves."""
        topics: dict[str, list[dict[str, Any]]] = {}
        for (t, p), (off, meta) in offsets.items():
            topics.setdefault(t, []).append(
                {"partition_index": p, "committed_offset": off, "committed_metadata": meta})
        body = {
            "group_id": self.group_id,
            "generation_id_or_member_epoch": self.generation if in_group else -1,
            "member_id": self.member_id if in_group else "",
            "retention_time_ms": -1,
            "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
        }
        deadline = time.monotonic() + self.kernel.config["request.timeout.ms"] / 1000.0
        while True:
            try:
                await self._ensure_coordinator(deadline)
                response = await self._send(OFFSET_COMMIT, body)
            except (TimeoutError, ConnectionError):
                self._coordinator_lost()
                if time.monotonic() > deadline:
                    return {tp: int(ErrorCode.REQUEST_TIMED_OUT) for tp in offsets}
                await asyncio.sleep(self.backoff)
                continue
            result = {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}
            codes = set(result.values())
            if codes & _COORDINATOR_ERRORS or ErrorCode.COORDINATOR_LOAD_IN_PROGRESS in codes:
                if codes & _COORDINATOR_ERRORS:
                    self._coordinator_lost()
                if time.monotonic() < deadline:
                    await asyncio.sleep(self.backoff)
                    continue
            if codes & _REJOIN_ERRORS:
                self.need_rejoin = True
            return result

    async def fetch_committed(self, tps: list[TP]) -> dict[TP, int]:
        """Committed offsets (-1 = none) of ``tps``; retries while the coordinator loads or moves."""
        topics: dict[str, list[int]] = {}
        for t, p in tps:
            topics.setdefault(t, []).append(p)
        body = {"group_id": self.group_id,
                "topics": [{"name": t, "partition_indexes": ps} for t, ps in topics.items()]}
        deadline = time.monotonic() + self.kernel.config["request.timeout.ms"] / 1000.0
        while True:
            try:
                await self._ensure_coordinator(deadline)
                response = await self._send(OFFSET_FETCH, body)
            except (TimeoutError, ConnectionError):
                self._coordinator_lost()
                if time.monotonic() > deadline:
                    raise
                await asyncio.sleep(self.backoff)
                continue
            top = getattr(response, "error_code", 0)
            codes = {p.error_code for t in response.topics for p in t.partitions} | {top}
            retry = codes & (_COORDINATOR_ERRORS | {ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
                                                    ErrorCode.UNSTABLE_OFFSET_COMMIT})
            if retry and time.monotonic() < deadline:
                if codes & _COORDINATOR_ERRORS:
                    self._coordinator_lost()
                await asyncio.sleep(self.backoff)
                continue
            return {(t.name, p.partition_index): (p.committed_offset if p.error_code == 0 else -1)
                    for t in response.topics for p in t.partitions}

    async def leave(self) -> None:
        """LeaveGroup (dynamic members only: a static member's session keeps its assignment)."""
        if self.member_id and self.instance_id is None and self.coordinator >= 0:
            try:
                await self._send(LEAVE_GROUP, {"group_id": self.group_id, "member_id": self.member_id},
                                 timeout=5.0)
            except (TimeoutError, ConnectionError):
                pass
        self.member_id = "" if self.instance_id is None else self.member_id
        self.generation = -1
        self.need_rejoin = True
