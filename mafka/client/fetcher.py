"""The consumer's fetch side: positions, per-broker prefetch pipelines, offset resets.

Mafka's consumer improvement (Meituan's per-broker prefetch): every broker
that leads an assigned partition gets its **own** fetch loop on its own
``"fetch"`` connection, fetching ahead into bounded per-partition buffers.
One broker that is slow or frozen holds up only its own loop; ``poll()``
keeps returning records of the others at their rate.  A broker's loop
leaves out partitions whose buffer is full (``queued.max.messages.kbytes``
spread over the assignment) or that are paused, so memory stays bounded
whatever the application's pace.

State per assigned partition (:class:`PartitionState`): ``position`` (the
next offset the application gets), ``fetch_offset`` (the next offset to
fetch, ahead of ``position`` by what is buffered), raw record sets waiting
to be decoded, and an ``epoch`` bumped by every seek so that fetch
responses started before it are dropped.  A partition without a position
is reset — to its committed offset (the group's job: ``committed`` hook)
or by ``auto.offset.reset`` through ListOffsets.

Leader changes (KIP-320): fetches carry the leader epoch the client knows,
so a broker that is no longer leader, or not yet, refuses them
(FENCED_LEADER_EPOCH / UNKNOWN_LEADER_EPOCH) and metadata is refreshed.
When a partition's leader epoch moves on while the client holds a fetch
position inside some epoch, the position is validated before fetching from
the new leader: OffsetForLeaderEpoch tells where that epoch ends on the new
leader, and a position past that end means the log was truncated (an
unclean election): buffered records past it are dropped and the position
goes back to the divergence point — or, with ``auto.offset.reset=error``,
the partition stops with ``_LOG_TRUNCATION``, as Kafka's consumer does.

Transactions: ``isolation.level`` (``read_committed`` by default, as in
librdkafka) goes with every Fetch and ListOffsets, so the broker serves
read_committed consumers up to the last stable offset and lists the aborted
transactions of each response; decoding drops their records and never
returns control batches (transaction markers) under either level, while the
position moves past both (:mod:`mafka.client.record_decoder`).  The end of a
partition (``_PARTITION_EOF``, :meth:`Fetcher.end_offset`) is the last stable
offset under read_committed.
"""

from __future__ import annotations

import asyncio
import itertools
import logging
import threading
import time
from collections import deque
from collections.abc import Awaitable, Callable, Mapping
from typing import Any

from mafka.client.aio_util import wait_event
from mafka.client.kafka_error import KafkaError
from mafka.client.kernel import Kernel
from mafka.client.message import Message
from mafka.client.record_decoder import decode_records
from mafka.client.transport import UnsupportedByBroker
from mafka.errors import ErrorCode
from mafka.topics import TopicPartitionTuple
from mafka.wire.apis.list_offsets import EARLIEST_TIMESTAMP as EARLIEST
from mafka.wire.apis.list_offsets import LATEST_TIMESTAMP as LATEST
from mafka.wire.errors import ProtocolError

__all__ = ["Fetcher", "PartitionState", "EARLIEST", "LATEST"]

log = logging.getLogger("mafka.client.consumer")

FETCH = 1
LIST_OFFSETS = 2
OFFSET_FOR_LEADER_EPOCH = 23

_RESET = {
    "smallest": EARLIEST, "earliest": EARLIEST, "beginning": EARLIEST,
    "largest": LATEST, "latest": LATEST, "end": LATEST, "error": None,
}


# Every PartitionState epoch in the process comes from here, so no two states (of one partition
# across assignments, or one state across seeks) ever share one. A fetch response, a validation or
# a reset begun under an epoch applies only while the partition's current state still has it: a
# partition revoked and assigned again (an eager rebalance) gets a new state whose epoch no reply
# begun for the old one can match. With per-state counters both started at 0, a fetch sent for the
# old state, answered after the new one took its committed position, was buffered into the new
# state from the old fetch offset; the records in between were skipped (lost to the group).
_EPOCHS = itertools.count(1)


class PartitionState:
    """One assigned partition (see the module docstring)."""

    __slots__ = (
        "position", "fetch_offset", "paused", "chunks", "buffered", "epoch", "high_watermark",
        "log_start", "last_stable", "eof_at", "resetting", "error", "reset_to",
        "decoded", "decoded_end", "position_epoch", "fetch_epoch", "validated_epoch",
    )

    def __init__(self, position: int | None) -> None:
        self.position = position
        self.fetch_offset = position
        self.paused = False
        # (epoch, records, aborted, offset after the chunk's last batch, that batch's leader epoch)
        self.chunks: deque[tuple[int, Any, Any, int, int]] = deque()
        self.decoded: deque[Message] = deque()  # decoded, not yet returned (position order)
        # The offset after the chunk ``decoded`` came from (past trailing control/aborted batches).
        self.decoded_end = -1
        self.buffered = 0
        self.epoch = next(_EPOCHS)
        self.high_watermark = -1
        self.log_start = -1
        self.last_stable = -1
        self.eof_at = -1
        self.resetting = False
        self.error: KafkaError | None = None
        # Leader epochs of the records before ``position`` and before ``fetch_offset``
        # (-1: unknown, e.g. after a seek), and the partition's leader epoch under which
        # ``fetch_offset`` was last known valid (-1: not fetched yet).
        self.position_epoch = -1
        self.fetch_epoch = -1
        self.validated_epoch = -1
        # EARLIEST/LATEST after a seek to the beginning/end or an out-of-range reset (no
        # committed-offset lookup then); None: committed offset, else auto.offset.reset.
        self.reset_to: int | None = None


class Fetcher:
    """Assigned partitions and the per-broker fetch loops.

    Thread model: the application thread (``poll``) and the loop thread
    share :attr:`lock`; fetch loops run on the kernel's loop and signal
    :attr:`ready` (a threading.Condition) when data arrives.

    Args:
        kernel: connections and metadata.
        committed: ``async (tps) -> {tp: offset}`` giving committed offsets
            (-1 = none), or None for a consumer without a group.
    """

    def __init__(self, kernel: Kernel,
                 committed: Callable[[list[TopicPartitionTuple]], Awaitable[dict[TopicPartitionTuple, int]]] | None = None) -> None:
        cfg = kernel.config
        self.kernel = kernel
        self.committed = committed
        self.lock = threading.RLock()
        self.ready = threading.Condition(self.lock)
        self.partitions: dict[TopicPartitionTuple, PartitionState] = {}
        self.reset_to = _RESET[cfg["auto.offset.reset"]]
        self.max_wait_ms = cfg["fetch.wait.max.ms"]
        self.min_bytes = cfg["fetch.min.bytes"]
        self.max_bytes = cfg["fetch.max.bytes"]
        self.partition_max_bytes = cfg["max.partition.fetch.bytes"]
        self.queue_limit = cfg["queued.max.messages.kbytes"] * 1024
        self.check_crcs = bool(cfg["check.crcs"])
        self.read_committed = cfg["isolation.level"] == "read_committed"
        self.partition_eof = bool(cfg["enable.partition.eof"])
        self.backoff = cfg["retry.backoff.ms"] / 1000.0
        self._loops: dict[int, asyncio.Task[None]] = {}
        self._wake: dict[int, asyncio.Event] = {}
        self._reset_event: asyncio.Event | None = None
        #: set when partitions are assigned or added: the supervisor looks at once for their
        #: leaders (else a new consumer's first fetch waited out the supervisor's backoff sleep)
        self._assigned_event: asyncio.Event | None = None
        self.loop: asyncio.AbstractEventLoop | None = None
        self.errors: deque[Message] = deque()
        self.fetches = 0
        #: tp -> offset after the last message the latest :meth:`drain` returned for it.
        self.drained: dict[TopicPartitionTuple, int] = {}
        self._next_start = 0
        #: Called on the loop whenever data or an error event becomes available (the asyncio face).
        self.on_data: Callable[[], None] | None = None

    # -- assignment (application thread) -------------------------------------------------

    def assign(self, positions: Mapping[TopicPartitionTuple, int | None]) -> None:
        """Replaces the assignment; partitions kept keep their state."""
        with self.lock:
            self.partitions = {tp: self.partitions.get(tp) or PartitionState(pos)
                               for tp, pos in positions.items()}
            for tp, pos in positions.items():
                if pos is not None:
                    self._seek_locked(tp, pos)
        self.kernel.metadata.want({tp[0] for tp in positions})
        self.poke(assigned=True)

    def add(self, positions: Mapping[TopicPartitionTuple, int | None]) -> None:
        with self.lock:
            for tp, pos in positions.items():
                if tp not in self.partitions:
                    self.partitions[tp] = PartitionState(None)
                if pos is not None:
                    self._seek_locked(tp, pos)
        self.kernel.metadata.want({tp[0] for tp in positions})
        self.poke(assigned=True)

    def remove(self, tps: list[TopicPartitionTuple]) -> None:
        with self.lock:
            for tp in tps:
                self.partitions.pop(tp, None)

    def seek(self, tp: TopicPartitionTuple, offset: int) -> None:
        """Moves the position; offset -2/-1 means reset to earliest/latest."""
        with self.lock:
            if tp not in self.partitions:
                raise KeyError(tp)
            self._seek_locked(tp, offset)
        self.poke()

    def _seek_locked(self, tp: TopicPartitionTuple, offset: int) -> None:
        state = self.partitions[tp]
        state.epoch = next(_EPOCHS)
        state.chunks.clear()
        state.decoded.clear()
        state.buffered = 0
        state.eof_at = -1
        state.error = None
        state.position_epoch = state.fetch_epoch = -1
        if offset in (EARLIEST, LATEST):
            state.position = state.fetch_offset = None
            state.reset_to = offset
        else:
            state.position = state.fetch_offset = offset

    def end_offset(self, state: PartitionState) -> int:
        """Where the partition ends for this consumer: the last stable offset under
        read_committed (records past it are in open transactions), else the high watermark
        (librdkafka's end offset for ``_PARTITION_EOF``; a broker without LSOs: the HWM)."""
        if self.read_committed and state.last_stable >= 0:
            return state.last_stable
        return state.high_watermark

    def pause(self, tps: list[TopicPartitionTuple], paused: bool) -> None:
        with self.lock:
            for tp in tps:
                if tp in self.partitions:
                    self.partitions[tp].paused = paused
        self.poke()

    def poke(self, assigned: bool = False) -> None:
        """Wakes the loops (any thread); with ``assigned``, the supervisor too (partitions came)."""
        if self.loop is not None:
            self.loop.call_soon_threadsafe(self._poke, assigned)

    def _poke(self, assigned: bool = False) -> None:
        for ev in self._wake.values():
            ev.set()
        if self._reset_event is not None:
            self._reset_event.set()
        if assigned and self._assigned_event is not None:
            self._assigned_event.set()

    # -- draining (application thread) ---------------------------------------------------

    def drain(self, max_records: int) -> list[Message]:
        """Decodes buffered record sets into up to ``max_records`` messages, advancing positions;
        :attr:`drained` tells, per partition, the offset after the last one returned."""
        out: list[Message] = []
        freed = False
        with self.lock:
            if self.errors:
                out.append(self.errors.popleft())
                return out
            self.drained = drained = {}
            items = list(self.partitions.items())
            if items:
                # Start at a different partition each call, so a small max_records cannot
                # starve the partitions behind one that keeps refilling (Java rotates too).
                k = self._next_start % len(items)
                self._next_start += 1
                items = items[k:] + items[:k]
            for tp, state in items:
                if state.paused:
                    continue
                before = len(out)
                while len(out) < max_records:
                    decoded = state.decoded
                    if decoded:
                        room = max_records - len(out)
                        used_up = len(decoded) <= room
                        if used_up:
                            out.extend(decoded)
                            decoded.clear()
                        else:
                            out.extend(decoded.popleft() for _ in range(room))
                        last = out[-1]
                        # (a decoded record's offset and leader epoch are never None)
                        assert last._offset is not None and last._leader_epoch is not None
                        # A used-up chunk: past any control/aborted batches after its last
                        # record too (a transaction's marker), as Kafka's consumer.
                        state.position = max(last._offset + 1, state.decoded_end) if used_up else last._offset + 1
                        state.position_epoch = last._leader_epoch
                        continue
                    if not state.chunks:
                        break
                    epoch, records, aborted, _, _ = state.chunks.popleft()
                    state.buffered -= len(records)
                    freed = True
                    if epoch != state.epoch or state.position is None:
                        continue
                    try:
                        result = decode_records(tp[0], tp[1], records, state.position,
                                                check_crcs=self.check_crcs,
                                                aborted=aborted if self.read_committed else None)
                    except ProtocolError as exc:
                        out.append(Message(tp[0], tp[1], state.position, None, None,
                                           error=KafkaError(KafkaError._BAD_MSG, str(exc))))
                        break
                    decoded.extend(result.messages)
                    state.decoded_end = result.next_offset
                    if not result.messages:
                        # Only control records or aborted data: skip past them.
                        state.position = max(state.position, result.next_offset)
                if len(out) > before and out[-1]._error is None:
                    offset = out[-1]._offset
                    assert offset is not None  # a record's
                    drained[tp] = offset + 1
                if (
                    self.partition_eof and not state.chunks and not state.decoded
                    and state.position is not None
                    and state.position == self.end_offset(state) and state.eof_at != state.position
                    and len(out) < max_records
                ):
                    state.eof_at = state.position
                    out.append(Message(tp[0], tp[1], state.position, None, None,
                                       error=KafkaError(KafkaError._PARTITION_EOF)))
                if len(out) >= max_records:
                    break
        if freed:
            self.poke()
        return out

    def drain_record_sets(self, max_sets: int) -> tuple[list[tuple[TopicPartitionTuple, Any, Any, int]], Message | None]:
        """Buffered fetch responses as raw record sets, for decoders of their own (mafka.spark's columns).

        Returns ``([(tp, records, aborted_transactions, min_offset), ...], error)``:
        each record set may begin below ``min_offset`` (a compressed batch is
        fetched whole) and its records below it belong to earlier positions;
        the partition's position moves to the end of the set.  ``error`` is an
        error event (then no sets), as :meth:`drain` would return it.
        Partitions whose records were partly drained as Messages are skipped
        until those are consumed.
        """
        out: list[tuple[TopicPartitionTuple, Any, Any, int]] = []
        freed = False
        with self.lock:
            if self.errors:
                return [], self.errors.popleft()
            for tp, state in self.partitions.items():
                if state.paused or state.decoded:
                    continue
                while state.chunks and len(out) < max_sets:
                    epoch, records, aborted, nxt, batch_epoch = state.chunks.popleft()
                    state.buffered -= len(records)
                    freed = True
                    if epoch != state.epoch or state.position is None:
                        continue
                    out.append((tp, records, aborted, state.position))
                    state.position = max(state.position, nxt)
                    state.position_epoch = batch_epoch
                if len(out) >= max_sets:
                    break
        if freed:
            self.poke()
        return out, None

    # -- loop side -----------------------------------------------------------------------

    def start(self) -> None:
        self.loop = asyncio.get_running_loop()
        self._reset_event = asyncio.Event()
        self._assigned_event = asyncio.Event()
        self.kernel.spawn(self._supervise())
        self.kernel.spawn(self._reset_loop())

    async def _supervise(self) -> None:
        """Keeps one fetch loop per leader of an assigned partition; refreshes metadata as needed."""
        md = self.kernel.metadata
        last_refresh = 0.0
        assigned = self._assigned_event
        assert assigned is not None
        while True:
            assigned.clear()
            with self.lock:
                tps = list(self.partitions)
            leaders = {md.leader(*tp) for tp in tps}
            if -1 in leaders or md.need_update:
                if time.monotonic() - last_refresh > self.backoff:
                    last_refresh = time.monotonic()
                    try:
                        await self.kernel.refresh_metadata()
                    except (TimeoutError, ConnectionError) as exc:
                        log.debug("metadata refresh: %s", exc)
                    continue
            for node in leaders:
                if node >= 0 and (node not in self._loops or self._loops[node].done()):
                    self._wake[node] = asyncio.Event()
                    self._loops[node] = self.kernel.spawn(self._fetch_loop(node))
            await wait_event(assigned, max(self.backoff, 0.05))

    def _fetchable(self, node: int) -> list[tuple[TopicPartitionTuple, PartitionState]]:
        md = self.kernel.metadata
        limit = max(self.partition_max_bytes, self.queue_limit // max(1, len(self.partitions)))
        out = []
        with self.lock:
            for tp, state in self.partitions.items():
                if (
                    md.leader(*tp) == node and not state.paused and state.fetch_offset is not None
                    and state.buffered < limit and state.error is None
                ):
                    out.append((tp, state))
        return out

    async def _fetch_loop(self, node: int) -> None:
        """Fetches for the partitions ``node`` leads, one request at a time, until it leads none."""
        wake = self._wake[node]
        md = self.kernel.metadata
        while True:
            wake.clear()
            with self.lock:
                led = any(md.leader(*tp) == node for tp in self.partitions)
            if not led:
                self._loops.pop(node, None)
                return
            fetchable = self._fetchable(node)
            if not fetchable:
                await wait_event(wake, 1.0)
                continue
            unconfirmed = self._unconfirmed(fetchable)
            if unconfirmed:
                await self._validate(node, unconfirmed)
                continue
            sent = {tp: (state.epoch, state.fetch_offset) for tp, state in fetchable}
            topics: dict[str, list[dict[str, Any]]] = {}
            for (topic, partition), (_, offset) in sent.items():
                topics.setdefault(topic, []).append({
                    "partition": partition, "current_leader_epoch": md.leader_epoch(topic, partition),
                    "fetch_offset": offset,
                    "log_start_offset": -1, "partition_max_bytes": self.partition_max_bytes,
                })
            body = {
                "replica_id": -1, "max_wait_ms": self.max_wait_ms, "min_bytes": self.min_bytes,
                "max_bytes": self.max_bytes, "isolation_level": 1 if self.read_committed else 0,
                "session_id": 0, "session_epoch": -1,
                "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()],
                "forgotten_topics_data": [], "rack_id": self.kernel.config.get("client.rack") or "",
            }
            try:
                response = await self.kernel.send(
                    node, FETCH, body, channel="fetch",
                    timeout=self.max_wait_ms / 1000.0 + self.kernel.config["request.timeout.ms"] / 1000.0,
                )
            except (TimeoutError, ConnectionError) as exc:
                log.debug("fetch from %d failed: %s", node, exc)
                md.request_update()
                await asyncio.sleep(self.backoff)
                continue
            self.fetches += 1
            if self._on_response(node, response, sent):
                md.request_update()
                await asyncio.sleep(self.backoff)

    def _unconfirmed(self, fetchable: list[tuple[TopicPartitionTuple, PartitionState]]) -> list[tuple[TopicPartitionTuple, PartitionState, int]]:
        """Partitions whose leader epoch moved on since their fetch position was last confirmed.

        Returns (tp, state, new leader epoch) for each one that needs an
        OffsetForLeaderEpoch check; a partition with nothing to check (first
        fetch, a position of unknown epoch, a broker without epochs) is
        confirmed here at once.
        """
        md = self.kernel.metadata
        todo = []
        with self.lock:
            for tp, state in fetchable:
                epoch = md.leader_epoch(*tp)
                if epoch == state.validated_epoch:
                    continue
                if epoch > state.validated_epoch >= 0 and state.fetch_epoch >= 0:
                    todo.append((tp, state, epoch))
                else:
                    state.validated_epoch = epoch
        return todo

    async def _validate(self, node: int, todo: list[tuple[TopicPartitionTuple, PartitionState, int]]) -> None:
        """Checks fetch positions against the new leader's log (KIP-320); see the module docstring."""
        asked = {tp: (state.epoch, state.fetch_offset, state.fetch_epoch, epoch) for tp, state, epoch in todo}
        topics: dict[str, list[dict[str, int]]] = {}
        for (topic, partition), (_, _, fetch_epoch, epoch) in asked.items():
            topics.setdefault(topic, []).append(
                {"partition": partition, "current_leader_epoch": epoch, "leader_epoch": fetch_epoch})
        body = {"replica_id": -1, "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()]}
        try:
            response = await self.kernel.send(node, OFFSET_FOR_LEADER_EPOCH, body, channel="fetch")
        except UnsupportedByBroker:
            with self.lock:
                for _tp, todo_state, epoch in todo:
                    todo_state.validated_epoch = epoch  # nothing to check with: fetch on (Kafka's consumer too)
            return
        except (TimeoutError, ConnectionError) as exc:
            log.debug("offset validation with %d failed: %s", node, exc)
            self.kernel.metadata.request_update()
            await asyncio.sleep(self.backoff)
            return
        retry = False
        with self.lock:
            for t in response.topics:
                for p in t.partitions:
                    tp = (t.topic, p.partition)
                    state = self.partitions.get(tp)
                    if state is None or tp not in asked or asked[tp][0] != state.epoch:
                        continue  # unassigned or sought meanwhile
                    _, fetch_offset, fetch_epoch, epoch = asked[tp]
                    if p.error_code != ErrorCode.NONE:
                        # FENCED_LEADER_EPOCH: our metadata is behind; UNKNOWN_LEADER_EPOCH: the
                        # broker is; NOT_LEADER_OR_FOLLOWER: the leader moved again.  Ask again later.
                        log.debug("offset validation of %s-%d: %s", tp[0], tp[1], ErrorCode(p.error_code).name)
                        retry = True
                        continue
                    if p.end_offset < 0 or p.leader_epoch < 0:
                        self._truncated(tp, state, None, -1, f"the new leader has no leader epoch {fetch_epoch}")
                    elif p.end_offset < fetch_offset:
                        self._truncated(tp, state, p.end_offset, p.leader_epoch,
                                        f"leader epoch {fetch_epoch} ends at offset {p.end_offset} on the new "
                                        f"leader, before the fetch position {fetch_offset}")
                    else:
                        state.validated_epoch = epoch
        if retry:
            self.kernel.metadata.request_update()
            await asyncio.sleep(self.backoff)

    def _truncated(self, tp: TopicPartitionTuple, state: PartitionState, end_offset: int | None, end_epoch: int, why: str) -> None:
        """The log diverged under the fetch position (caller holds the lock).

        Buffered records are dropped.  If the application has not yet read
        past ``end_offset`` it resumes at its position; otherwise the
        position goes back to ``end_offset`` (``None``: unknown, so
        ``auto.offset.reset`` decides) — or, with ``auto.offset.reset=error``,
        the partition stops with ``_LOG_TRUNCATION``.
        """
        state.epoch = next(_EPOCHS)
        state.chunks.clear()
        state.decoded.clear()
        state.buffered = 0
        state.eof_at = -1
        position = state.position
        if end_offset is not None and position is not None and position <= end_offset:
            log.info("%s-%d: log truncated (%s); re-fetching from position %d", tp[0], tp[1], why, position)
            state.fetch_offset = position
            state.fetch_epoch = state.position_epoch
            return
        if self.reset_to is None:
            state.error = KafkaError(KafkaError._LOG_TRUNCATION, f"{tp[0]}-{tp[1]}: {why}")
            self.errors.append(Message(tp[0], tp[1], position, None, None, error=state.error))
            self.ready.notify_all()
            if self.on_data is not None:
                self.on_data()
            return
        if end_offset is None:
            log.warning("%s-%d: log truncated (%s); resetting by auto.offset.reset", tp[0], tp[1], why)
            state.position = state.fetch_offset = None
            state.reset_to = self.reset_to
            if self._reset_event is not None:
                self._reset_event.set()
            return
        log.warning("%s-%d: log truncated (%s); records after offset %d were lost, resuming there",
                    tp[0], tp[1], why, end_offset)
        state.position = state.fetch_offset = end_offset
        state.position_epoch = state.fetch_epoch = end_epoch

    def _on_response(self, node: int, response: Any, sent: dict[TopicPartitionTuple, tuple[int, int | None]]) -> bool:
        """Buffers fetched data; returns True if metadata should be refreshed."""
        refresh = False
        got_data = False
        with self.lock:
            for t in response.responses:
                for p in t.partitions:
                    tp = (t.topic, p.partition_index)
                    state = self.partitions.get(tp)
                    if state is None or tp not in sent or sent[tp][0] != state.epoch:
                        continue  # unassigned or sought meanwhile
                    code = p.error_code
                    if code == ErrorCode.NONE:
                        state.high_watermark = p.high_watermark
                        state.last_stable = p.last_stable_offset
                        state.log_start = p.log_start_offset
                        records = p.records
                        if records:
                            fetch_offset = state.fetch_offset
                            assert fetch_offset is not None  # fetched from it, same epoch
                            # The next fetch offset comes from the batches' last offsets.
                            try:
                                nxt, batch_epoch = _next_offset(records, fetch_offset)
                            except ProtocolError as exc:
                                # Corrupt framing: the partition stops here and the application
                                # is told, rather than the same bytes being fetched forever.
                                state.error = KafkaError(KafkaError._BAD_MSG, f"{tp[0]}-{tp[1]}: {exc}")
                                self.errors.append(Message(tp[0], tp[1], state.fetch_offset, None, None,
                                                           error=state.error))
                                got_data = True
                                continue
                            if nxt > fetch_offset:
                                state.chunks.append((state.epoch, records, p.aborted_transactions, nxt, batch_epoch))
                                state.buffered += len(records)
                                state.fetch_offset = nxt
                                state.fetch_epoch = batch_epoch
                                got_data = True
                            elif len(records) >= self.partition_max_bytes:
                                # Only a pre-KIP-74 broker sends a partial batch and nothing else.
                                state.error = KafkaError(
                                    KafkaError.MESSAGE_TOO_LARGE,
                                    f"{tp[0]}-{tp[1]}: a batch at offset {state.fetch_offset} is larger "
                                    f"than max.partition.fetch.bytes",
                                )
                                self.errors.append(Message(tp[0], tp[1], state.fetch_offset, None, None,
                                                           error=state.error))
                                got_data = True
                        if self.partition_eof and state.fetch_offset == self.end_offset(state):
                            got_data = True
                    elif code == ErrorCode.OFFSET_OUT_OF_RANGE:
                        if self.reset_to is None:
                            state.error = KafkaError(code)
                            self.errors.append(Message(tp[0], tp[1], state.fetch_offset, None, None,
                                                       error=KafkaError(code)))
                            got_data = True
                        else:
                            state.epoch = next(_EPOCHS)
                            state.chunks.clear()
                            state.decoded.clear()
                            state.buffered = 0
                            state.position = state.fetch_offset = None
                            state.reset_to = self.reset_to
                            if self._reset_event is not None:
                                self._reset_event.set()
                    else:
                        try:
                            if ErrorCode(code).invalid_metadata or ErrorCode(code).retriable:
                                refresh = True
                                continue
                        except ValueError:
                            pass
                        state.error = KafkaError(code)
                        self.errors.append(Message(tp[0], tp[1], state.fetch_offset, None, None,
                                                   error=KafkaError(code)))
                        got_data = True
            if got_data:
                self.ready.notify_all()
        if got_data and self.on_data is not None:
            self.on_data()
        return refresh

    async def _reset_loop(self) -> None:
        """Gives a position to partitions without one: committed offset, else auto.offset.reset."""
        assert self._reset_event is not None
        while True:
            self._reset_event.clear()
            with self.lock:
                todo = {tp: s for tp, s in self.partitions.items() if s.position is None and not s.resetting}
                for s in todo.values():
                    s.resetting = True
            if todo:
                try:
                    await self._reset(todo)
                except (TimeoutError, ConnectionError, Exception) as exc:  # noqa: BLE001
                    log.debug("offset reset failed: %s", exc)
                    await asyncio.sleep(self.backoff)
                finally:
                    with self.lock:
                        for s in todo.values():
                            s.resetting = False
                self.poke()
                continue
            await wait_event(self._reset_event, 1.0)

    async def _reset(self, todo: dict[TopicPartitionTuple, PartitionState]) -> None:
        epochs = {tp: s.epoch for tp, s in todo.items()}
        strategy = {tp: (self.reset_to if s.reset_to is None else s.reset_to) for tp, s in todo.items()}
        found: dict[TopicPartitionTuple, int] = {}
        if self.committed is not None:
            wanted = [tp for tp, s in todo.items() if s.reset_to is None]
            if wanted:
                committed = await self.committed(wanted)
                found = {tp: off for tp, off in committed.items() if off >= 0}
        need = {tp: strategy[tp] for tp in todo if tp not in found}
        missing = [tp for tp, how in need.items() if how is None]
        for tp in missing:
            with self.lock:
                state = self.partitions.get(tp)
                if state is not None and state.error is None:
                    state.error = KafkaError(KafkaError._NO_OFFSET)  # auto.offset.reset=error
                    self.errors.append(Message(tp[0], tp[1], -1001, None, None,
                                               error=KafkaError(KafkaError.OFFSET_OUT_OF_RANGE)))
                    self.ready.notify_all()
        listed = await self.list_offsets({tp: how for tp, how in need.items() if how is not None})
        found.update({tp: off for tp, off in listed.items() if off >= 0})
        with self.lock:
            for tp, offset in found.items():
                state = self.partitions.get(tp)
                if state is not None and state.epoch == epochs[tp] and state.position is None:
                    state.position = state.fetch_offset = offset
                    state.position_epoch = state.fetch_epoch = -1
                    state.reset_to = None
        for ev in self._wake.values():
            ev.set()

    async def list_offsets(self, request: dict[TopicPartitionTuple, int], isolation: int | None = None) -> dict[TopicPartitionTuple, int]:
        """ListOffsets by leader: tp -> timestamp (-2 earliest, -1 latest, or ms) ⇒ tp -> offset (-1 none).

        Partitions whose leader is unknown or answered an error are left out.
        """
        if not request:
            return {}
        md = self.kernel.metadata
        if any(md.leader(*tp) < 0 for tp in request):
            md.want({tp[0] for tp in request})
            await self.kernel.refresh_metadata()
        by_node: dict[int, dict[str, list[dict[str, int]]]] = {}
        for (topic, partition), ts in request.items():
            node = md.leader(topic, partition)
            if node < 0:
                continue
            by_node.setdefault(node, {}).setdefault(topic, []).append(
                {"partition_index": partition, "timestamp": ts})
        level = (1 if self.read_committed else 0) if isolation is None else isolation

        async def one(node: int, topics: dict[str, list[dict[str, int]]]) -> Any:
            return await self.kernel.send(node, LIST_OFFSETS, {
                "replica_id": -1, "isolation_level": level,
                "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()],
            })

        out: dict[TopicPartitionTuple, int] = {}
        results = await asyncio.gather(*(one(n, t) for n, t in by_node.items()), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                md.request_update()
                continue
            for t in result.topics:
                for p in t.partitions:
                    if p.error_code == 0:
                        out[(t.name, p.partition_index)] = p.offset
                    else:
                        md.request_update()
        return out


def _next_offset(records: Any, current: int) -> tuple[int, int]:
    """The offset after the last whole batch of a fetched record set, and that batch's leader epoch."""
    from mafka.wire.batch import iter_batches

    nxt, epoch = current, -1
    for _, h in iter_batches(records):
        end = h.base_offset + h.last_offset_delta + 1
        if end > nxt:
            nxt, epoch = end, h.partition_leader_epoch
    return nxt, epoch
