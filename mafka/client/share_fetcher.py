"""A share consumer's data path (KIP-932): share sessions, ShareFetch and ShareAcknowledge, on the kernel's loop.

One :class:`_NodeSession` per broker that leads an assigned partition (Kafka's share session:
epoch 0 opens it with the partitions to fetch, later epochs name only what changed, -1 closes it
and the broker releases whatever the member still holds there).  Each runs one request at a time
on its own ``"share"`` connection; a broker that is slow holds up only its own partitions.

When a broker is fetched from (Kafka's ``ShareConsumeRequestManager``): when it leads an assigned
partition, none of its records wait in the buffer and the application holds none of them
unacknowledged — records are locked from the moment they are acquired, so the consumer never
acquires more than the application is about to see.  The fetch carries the acknowledgements
pending for that broker.  ``commit_sync`` / ``commit_async`` and ``close`` send pending
acknowledgements at once with ShareAcknowledge (after the request in progress on that session).

What a ShareFetch answer gives (Kafka's ``ShareCompletedFetch``): the records of the acquired
ranges only (the batches around them are dropped), each with its delivery count
(:meth:`Message.delivery_count`); an acquired offset without a record is acknowledged as GAP.
Errors: a session the broker lost or whose epoch it refused starts over at epoch 0 (the
acknowledgements in that request fail with the error); a partition led elsewhere refreshes
metadata and moves to its new leader's session.  Acknowledgement results, per partition, go to
``on_result(offsets by partition, error or None)``.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from mafka.client.kafka_error import KafkaError
from mafka.client.kernel import Kernel
from mafka.client.message import Message
from mafka.client.record_decoder import decode_records
from mafka.client.share_acknowledgements import (
    AcknowledgementBook,
    PendingAcknowledgements,
    acknowledgement_batches,
)
from mafka.client.transport import UnsupportedByBroker
from mafka.errors import ErrorCode
from mafka.topics import TopicPartitionTuple
from mafka.wire.errors import ProtocolError

__all__ = ["ShareFetcher", "AckResult", "FINAL_EPOCH"]

log = logging.getLogger("mafka.client.share")

SHARE_FETCH, SHARE_ACKNOWLEDGE = 78, 79
FINAL_EPOCH = -1
_SESSION_ERRORS = frozenset({ErrorCode.SHARE_SESSION_NOT_FOUND, ErrorCode.INVALID_SHARE_SESSION_EPOCH})
_LEADER_ERRORS = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH,
                            ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.UNKNOWN_TOPIC_ID,
                            ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.LEADER_NOT_AVAILABLE})

#: ``(partition -> offsets acknowledged, error or None)``: one per partition per answer.
AckResult = tuple[dict[TopicPartitionTuple, set[int]], KafkaError | None]


def _next_epoch(epoch: int) -> int:
    return 1 if epoch >= 0x7FFFFFFF else epoch + 1


@dataclass
class _NodeSession:
    node: int
    epoch: int = 0
    #: the (topic id, partition)s the broker's session holds, as of the last answer
    partitions: set[tuple[bytes, int]] = field(default_factory=set)
    lock: asyncio.Lock = field(default_factory=asyncio.Lock)
    wake: asyncio.Event = field(default_factory=asyncio.Event)
    task: asyncio.Task[None] | None = None
    buffered: int = 0
    retry_at: float = 0.0


@dataclass
class _Buffered:
    node: int
    tp: TopicPartitionTuple
    messages: deque[Message]


class ShareFetcher:
    """The fetch and acknowledgement side of one share consumer.  Create and use on one loop.

    Args:
        kernel: connections and metadata.
        group_id: ``group.id``.
        member_id: the member's id now (it is the share session's key).
        book: the consumer's held records and pending acknowledgements.
        on_data: called (on the loop) when records or an error become available.
        on_result: called with each acknowledgement result.
        on_error: called with errors for the application.
    """

    def __init__(self, kernel: Kernel, group_id: str, member_id: Callable[[], str], book: AcknowledgementBook,
                 on_data: Callable[[], None], on_result: Callable[[AckResult], None],
                 on_error: Callable[[KafkaError], None]) -> None:
        cfg = kernel.config
        self.kernel = kernel
        self.group_id = group_id
        self.member_id = member_id
        self.book = book
        self.on_data = on_data
        self.on_result = on_result
        self.on_error = on_error
        self.max_wait_ms = cfg["fetch.wait.max.ms"]
        self.min_bytes = cfg["fetch.min.bytes"]
        self.max_bytes = cfg["fetch.max.bytes"]
        self.max_records = cfg["max.poll.records"]
        self.check_crcs = bool(cfg["check.crcs"])
        self.backoff = cfg["retry.backoff.ms"] / 1000.0
        #: assigned partitions by name, with their topic ids
        self.assigned: dict[TopicPartitionTuple, bytes] = {}
        self.buffer: deque[_Buffered] = deque()
        self._sessions: dict[int, _NodeSession] = {}
        self._names: dict[bytes, str] = {}
        self._closing = False
        #: requests carrying acknowledgements, done once their results were given
        self._acks_in_flight: set[asyncio.Future[None]] = set()

    # -- assignment ------------------------------------------------------------------------

    def assign(self, assigned: dict[TopicPartitionTuple, bytes]) -> None:
        """Sets the partitions to fetch (name -> topic id); sessions follow at their next request."""
        self.assigned = dict(assigned)
        for (topic, _), topic_id in assigned.items():
            self._names[topic_id] = topic
        self._kick_all()

    def _leader(self, tp: TopicPartitionTuple) -> int:
        return self.kernel.metadata.leader(*tp)

    def _kick_all(self) -> None:
        nodes = {self._leader(tp) for tp in self.assigned} | set(self._sessions) | set(self.book.pending_nodes())
        for node in nodes:
            if node >= 0:
                self.wake(node)

    def wake(self, node: int | None = None) -> None:
        """Has ``node``'s session (or every session) look again for something to send."""
        if node is None:
            self._kick_all()
            return
        if self._closing:
            return
        s = self._sessions.get(node)
        if s is None:
            s = self._sessions[node] = _NodeSession(node)
        if s.task is None or s.task.done():
            s.task = self.kernel.spawn(self._session_loop(s))
        s.wake.set()

    # -- the application's side ------------------------------------------------------------

    def drain(self, limit: int) -> list[Message]:
        """Up to ``limit`` buffered records (delivered to the application: held from now on)."""
        out: list[Message] = []
        while self.buffer and len(out) < limit:
            entry = self.buffer[0]
            taken: list[Message] = []
            while entry.messages and len(out) + len(taken) < limit:
                taken.append(entry.messages.popleft())
            if taken:
                self.book.delivered(entry.node, entry.tp, (m._offset for m in taken))  # type: ignore[misc]
                out.extend(taken)
            s = self._sessions.get(entry.node)
            if s is not None:
                s.buffered -= len(taken)
            if not entry.messages:
                self.buffer.popleft()
        return out

    # -- the session loops -----------------------------------------------------------------

    def _wanted(self, node: int) -> set[tuple[bytes, int]]:
        return {(tid, tp[1]) for tp, tid in self.assigned.items() if self._leader(tp) == node}

    async def _session_loop(self, s: _NodeSession) -> None:
        while not self._closing:
            await s.wake.wait()
            s.wake.clear()
            wait = s.retry_at - time.monotonic()
            if wait > 0:
                await asyncio.sleep(wait)
            if self._closing:
                return
            wanted = self._wanted(s.node)
            idle = s.buffered == 0 and self.book.held_count(s.node) == 0
            try:
                if wanted and idle:
                    async with s.lock:
                        await self._fetch(s, wanted)
                    s.wake.set()  # fetch again once the application took these records
                elif not wanted and (s.partitions or self.book.has_pending(s.node)) and s.epoch > 0:
                    async with s.lock:
                        await self._acknowledge(s, final=not self.book.held_count(s.node))
                elif not wanted and s.epoch == 0 and self.book.has_pending(s.node):
                    self._fail_acks(self.book.take(s.node), ErrorCode.SHARE_SESSION_NOT_FOUND)
            except asyncio.CancelledError:
                raise
            except Exception:  # noqa: BLE001 - the loop must survive a broken answer
                log.exception("share session with broker %d", s.node)
                self._reset(s, time.monotonic() + self.backoff)
                s.wake.set()

    def _reset(self, s: _NodeSession, retry_at: float = 0.0) -> None:
        s.epoch = 0
        s.partitions = set()
        s.retry_at = retry_at

    def _body(self, s: _NodeSession, acks: PendingAcknowledgements) -> dict[str, Any]:
        return {"group_id": self.group_id, "member_id": self.member_id(), "share_session_epoch": s.epoch,
                "topics": self._topics(acks, set())}

    def _topics(self, acks: PendingAcknowledgements, add: set[tuple[bytes, int]]) -> list[dict[str, Any]]:
        parts: dict[bytes, dict[int, dict[str, Any]]] = {}
        for tid, p in add:
            parts.setdefault(tid, {})[p] = {"partition_index": p, "acknowledgement_batches": []}
        for (topic, p), offsets in acks.items():
            tid = self._topic_id(topic)
            entry = parts.setdefault(tid, {}).setdefault(p, {"partition_index": p, "acknowledgement_batches": []})
            entry["acknowledgement_batches"] = acknowledgement_batches(offsets)
        return [{"topic_id": tid, "partitions": list(ps.values())} for tid, ps in parts.items()]

    def _topic_id(self, topic: str) -> bytes:
        for (t, _), tid in self.assigned.items():
            if t == topic:
                return tid
        info = self.kernel.metadata.topics.get(topic)
        if info is not None:
            return info.topic_id
        for tid, name in self._names.items():
            if name == topic:
                return tid
        return bytes(16)

    async def _fetch(self, s: _NodeSession, wanted: set[tuple[bytes, int]]) -> None:
        if s.epoch == 0:
            # A new session may carry no acknowledgements; whatever was pending for this broker
            # belonged to a session that is gone (the broker released those records).
            self._fail_acks(self.book.take(s.node), ErrorCode.SHARE_SESSION_NOT_FOUND)
            acks: PendingAcknowledgements = {}
            add, forget = set(wanted), set()
        else:
            acks = self.book.take(s.node)
            add = wanted - s.partitions
            with_acks = {(self._topic_id(t), p) for t, p in acks}
            forget = s.partitions - wanted - with_acks  # forgotten once their acknowledgements went
        body = {
            "group_id": self.group_id, "member_id": self.member_id(), "share_session_epoch": s.epoch,
            "max_wait_ms": self.max_wait_ms, "min_bytes": self.min_bytes, "max_bytes": self.max_bytes,
            "max_records": self.max_records, "batch_size": self.max_records,
            "topics": self._topics(acks, add),
            "forgotten_topics_data": [{"topic_id": tid, "partitions": sorted(p for t, p in forget if t == tid)}
                                      for tid in {t for t, _ in forget}],
        }
        timeout = self.max_wait_ms / 1000.0 + self.kernel.config["request.timeout.ms"] / 1000.0
        response = await self._send(s, SHARE_FETCH, body, acks, timeout)
        if response is None:
            return
        if response.error_code != ErrorCode.NONE:
            self._session_error(s, response, acks)
            return
        s.epoch = _next_epoch(s.epoch)
        s.partitions = (s.partitions | add) - forget
        self._partition_results(s, response, acks, fetch=True)

    async def _acknowledge(self, s: _NodeSession, final: bool = False) -> None:
        """One ShareAcknowledge with ``s``'s pending acknowledgements (the final one closes the session)."""
        acks = self.book.take(s.node)
        if not acks and not final:
            return
        if final:
            s.epoch = FINAL_EPOCH
        body = self._body(s, acks)
        response = await self._send(s, SHARE_ACKNOWLEDGE, body, acks, None)
        if final:
            self._reset(s)
        if response is None:
            return
        if response.error_code != ErrorCode.NONE:
            self._session_error(s, response, acks)
            return
        if not final:
            s.epoch = _next_epoch(s.epoch)
        self._partition_results(s, response, acks, fetch=False)

    async def _send(self, s: _NodeSession, api_key: int, body: dict[str, Any], acks: PendingAcknowledgements,
                    timeout: float | None) -> Any:
        """Sends on ``s``'s connection; None when it failed (session reset, acknowledgements failed)."""
        if not acks:
            return await self._send_one(s, api_key, body, acks, timeout)
        done: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        self._acks_in_flight.add(done)
        try:
            return await self._send_one(s, api_key, body, acks, timeout)
        finally:
            # Resolved on the next turn: the caller gives the results first.
            asyncio.get_running_loop().call_soon(_resolve, done)
            self._acks_in_flight.discard(done)

    async def _send_one(self, s: _NodeSession, api_key: int, body: dict[str, Any], acks: PendingAcknowledgements,
                        timeout: float | None) -> Any:
        try:
            return await self.kernel.send(s.node, api_key, body, channel="share", timeout=timeout)
        except UnsupportedByBroker:
            self._fail_acks(acks, ErrorCode.UNSUPPORTED_VERSION)
            self.on_error(KafkaError(ErrorCode.UNSUPPORTED_VERSION, "the broker does not serve share fetches",
                                     fatal=True))
            self._reset(s, time.monotonic() + 10 * self.backoff)
        except (ConnectionError, TimeoutError) as exc:
            log.debug("share request to broker %d failed: %r", s.node, exc)
            self._fail_acks(acks, KafkaError._TRANSPORT)
            self._reset(s, time.monotonic() + self.backoff)
            self.kernel.metadata.request_update()
            self.kernel.spawn(self._refresh())
        return None

    async def _refresh(self) -> None:
        try:
            await self.kernel.refresh_metadata()
        except Exception as exc:  # noqa: BLE001 - the next failure asks again
            log.debug("metadata refresh: %r", exc)
        self._kick_all()

    def _session_error(self, s: _NodeSession, response: Any, acks: PendingAcknowledgements) -> None:
        code = response.error_code
        self._fail_acks(acks, code)
        if code in _SESSION_ERRORS:
            log.info("share session with broker %d: %s; opening a new one", s.node, ErrorCode(code).name)
            self._reset(s)
        elif code == ErrorCode.SHARE_SESSION_LIMIT_REACHED:
            self._reset(s, time.monotonic() + max(self.backoff, 1.0))
        else:
            self._reset(s, time.monotonic() + self.backoff)
            self.on_error(KafkaError(code, getattr(response, "error_message", None)))

    def _fail_acks(self, acks: PendingAcknowledgements, code: int) -> None:
        if acks:
            self.on_result(({tp: set(offsets) for tp, offsets in acks.items()}, KafkaError(code)))

    def _partition_results(self, s: _NodeSession, response: Any, acks: PendingAcknowledgements, fetch: bool) -> None:
        answered: set[TopicPartitionTuple] = set()
        refresh = False
        got_data = False
        for t in response.responses:
            tid = bytes(t.topic_id)
            topic = self._names.get(tid)
            if topic is None:
                continue
            for p in t.partitions:
                tp = (topic, p.partition_index)
                answered.add(tp)
                if tp in acks:
                    code = p.acknowledge_error_code if fetch else p.error_code
                    self.on_result(({tp: set(acks[tp])}, KafkaError(code) if code else None))
                if fetch and p.error_code:
                    if p.error_code in _LEADER_ERRORS:
                        refresh = True
                    else:
                        self.on_error(KafkaError(p.error_code, getattr(p, "error_message", None)))
                    continue
                if fetch and p.acquired_records:
                    got_data |= self._take_records(s, tp, p)
        for tp, offsets in acks.items():
            if tp not in answered:  # the broker lists every partition it acknowledged
                self.on_result(({tp: set(offsets)}, KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR,
                                                               "acknowledgement not answered")))
        if refresh:
            self.kernel.metadata.request_update()
            self.kernel.spawn(self._refresh())
        if got_data:
            self.on_data()

    def _take_records(self, s: _NodeSession, tp: TopicPartitionTuple, p: Any) -> bool:
        """Buffers the acquired records of one partition's answer; acquired offsets without a record are GAPs."""
        ranges = sorted((r.first_offset, r.last_offset, r.delivery_count) for r in p.acquired_records)
        counts: dict[int, int] = {}
        for first, last, count in ranges:
            for offset in range(first, last + 1):
                counts[offset] = count
        try:
            decoded = decode_records(tp[0], tp[1], p.records or b"", ranges[0][0], check_crcs=self.check_crcs)
        except ProtocolError as exc:
            log.warning("share fetch %s-%d: %s; releasing the records", tp[0], tp[1], exc)
            decoded = None
        kept: deque[Message] = deque()
        if decoded is not None:
            for m in decoded.messages:
                count = counts.pop(m._offset, None)  # type: ignore[arg-type]
                if count is not None:
                    m._delivery_count = count
                    kept.append(m)
        if counts:
            self.book.gaps(s.node, tp, counts)
        if kept:
            self.buffer.append(_Buffered(s.node, tp, kept))
            s.buffered += len(kept)
        elif counts:
            self.wake(s.node)
        return bool(kept)

    # -- commits and closing ---------------------------------------------------------------

    async def acknowledge_now(self) -> list[int]:
        """Sends every pending acknowledgement with ShareAcknowledge (after any request in
        progress on the same session) and waits for their results and for those of the
        acknowledgements already on their way in fetches; returns the brokers sent to."""
        nodes = self.book.pending_nodes()
        earlier = list(self._acks_in_flight)

        async def one(node: int) -> None:
            s = self._sessions.get(node)
            if s is None or s.epoch <= 0:
                self._fail_acks(self.book.take(node), ErrorCode.SHARE_SESSION_NOT_FOUND)
                return
            async with s.lock:
                if s.epoch > 0:
                    await self._acknowledge(s)
                else:
                    self._fail_acks(self.book.take(node), ErrorCode.SHARE_SESSION_NOT_FOUND)

        await asyncio.gather(*(one(n) for n in nodes), *earlier)
        return nodes

    async def close(self, timeout: float) -> None:
        """Closes every session with a final ShareAcknowledge carrying its pending acknowledgements
        (the broker releases whatever else the member holds there), bounded by ``timeout``."""
        self._closing = True
        for s in self._sessions.values():
            if s.task is not None:
                s.task.cancel()

        async def one(s: _NodeSession) -> None:
            async with s.lock:
                if s.epoch > 0:
                    await self._acknowledge(s, final=True)
                else:
                    self._fail_acks(self.book.take(s.node), ErrorCode.SHARE_SESSION_NOT_FOUND)

        try:
            async with asyncio.timeout(timeout):
                await asyncio.gather(*(one(s) for s in list(self._sessions.values())), return_exceptions=True)
        except TimeoutError:
            log.warning("share consumer close: the brokers did not answer within %.1f s", timeout)
        for node in self.book.pending_nodes():
            self._fail_acks(self.book.take(node), KafkaError._TIMED_OUT)
        self.buffer.clear()


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)
