"""The synchronous consumer, shaped like confluent-kafka's ``Consumer``.

Fetching runs ahead on a private loop thread (per-broker pipelines, see
:mod:`mafka.client.fetcher`); ``poll()`` decodes buffered records on the
application's thread.  Group callbacks (``on_assign``, ``on_revoke``,
``on_lost``) and ``on_commit`` run inside ``poll()``/``consume()`` on the
application's thread, as in confluent-kafka; an ``on_assign`` that does
not call ``assign()``/``incremental_assign()`` gets the default (the
partitions as given).  Offsets: with ``enable.auto.offset.store`` each
returned message stores ``offset + 1``; ``enable.auto.commit`` commits
stored offsets every ``auto.commit.interval.ms``, before partitions are
revoked, and at :meth:`Consumer.close`.  ``group.protocol`` chooses the group
protocol: ``classic`` (JoinGroup/SyncGroup, the default) or ``consumer``
(KIP-848: :mod:`mafka.client.consumer_group_member`; partitions move
incrementally, the coordinator assigns).
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Mapping
from typing import Any

from mafka.client.config import parse_config
from mafka.client.consumer_group_member import ConsumerGroupMember, new_group_member
from mafka.client.fetcher import EARLIEST, LATEST, Fetcher
from mafka.client.group_member import GroupMember, RebalanceEvent
from mafka.client.group_metadata import ConsumerGroupMetadata
from mafka.client.kafka_error import KafkaError, KafkaException
from mafka.client.kernel import Kernel
from mafka.client.loop_thread import LoopThread
from mafka.client.message import (
    OFFSET_BEGINNING,
    OFFSET_END,
    OFFSET_INVALID,
    Message,
    TopicPartition,
)
from mafka.client.metadata_view import ClusterMetadataView, list_topics
from mafka.topics import TopicPartitionTuple

__all__ = ["Consumer", "CLOSE_STEP_TIMEOUT"]

#: Seconds each step of :meth:`Consumer.close` may take.
CLOSE_STEP_TIMEOUT = 5.0


def _start_offset(offset: int) -> int | None:
    if offset == OFFSET_BEGINNING:
        return EARLIEST
    if offset == OFFSET_END:
        return LATEST
    return offset if offset >= 0 else None


class Consumer:
    """``Consumer(conf)``: confluent-kafka's consumer API over Mafka's pure-Python core.

    Raises:
        ConfigError (a ValueError): an unknown key or a bad value (named in the message).
    """

    def __init__(self, conf: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        settings = dict(conf or {})
        settings.update(kwargs)
        self._config = cfg = parse_config("consumer", settings)
        self._kernel = Kernel(cfg)  # first: a bad bootstrap.servers raises before a thread exists
        self._thread = LoopThread("mafka-consumer")
        self._group_id = cfg.get("group.id")
        self._member: GroupMember | ConsumerGroupMember | None = None
        self._events: deque[Any] = deque()
        self._fetcher = Fetcher(self._kernel, self._fetch_committed if self._group_id else None)
        self._auto_store = bool(cfg["enable.auto.offset.store"])
        self._auto_commit = bool(cfg["enable.auto.commit"]) and bool(self._group_id)
        self._on_commit = cfg.get("on_commit")
        self._error_cb = cfg.get("error_cb")
        self._stored: dict[TopicPartitionTuple, int] = {}
        self._committed_sent: dict[TopicPartitionTuple, int] = {}
        self._on_assign: Callable[..., Any] | None = None
        self._on_revoke: Callable[..., Any] | None = None
        self._on_lost: Callable[..., Any] | None = None
        self._assign_called = False
        self._closed = False
        self._revoke_commit_timeout: float | None = None  # request.timeout.ms
        self._thread.run(self._start(), timeout=10)

    async def _start(self) -> None:
        self._fetcher.start()
        if self._group_id:
            self._member = new_group_member(self._kernel, self._notify)
            self._kernel.spawn(self._member.run())
            if self._auto_commit:
                self._kernel.spawn(self._auto_commit_loop())

    def _notify(self, event: Any) -> None:
        """Loop thread: queue a rebalance event or error for the application's next poll."""
        self._events.append(event)
        with self._fetcher.ready:
            self._fetcher.ready.notify_all()

    async def _fetch_committed(self, tps: list[TopicPartitionTuple]) -> dict[TopicPartitionTuple, int]:
        assert self._member is not None
        return await self._member.fetch_committed(tps)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("Consumer closed")

    # -- subscription and assignment ---------------------------------------------------

    def subscribe(self, topics: list[str], on_assign: Callable[..., Any] | None = None,
                  on_revoke: Callable[..., Any] | None = None,
                  on_lost: Callable[..., Any] | None = None) -> None:
        """Joins ``group.id`` for ``topics`` (a leading ``^`` makes an entry a regex)."""
        self._check_open()
        if self._member is None:
            raise KafkaException(KafkaError._INVALID_ARG, 'subscribe() requires "group.id" in the config')
        if isinstance(topics, str):
            raise TypeError("topics must be a list of topic names")
        self._on_assign, self._on_revoke, self._on_lost = on_assign, on_revoke, on_lost
        member = self._member
        self._thread.loop.call_soon_threadsafe(member.subscribe, list(topics))

    def unsubscribe(self) -> None:
        self._check_open()
        if self._member is None:
            return
        member = self._member
        self._thread.run(self._leave(member), timeout=10)
        self._unassign_all()

    async def _leave(self, member: GroupMember | ConsumerGroupMember) -> None:
        member.unsubscribe()
        await member.leave()
        member.owned = set()

    def assign(self, partitions: list[TopicPartition]) -> None:
        """Sets the assignment (positions from each TopicPartition's offset, else committed/reset)."""
        self._check_open()
        self._assign_called = True
        self._fetcher.assign({(tp.topic, tp.partition): _start_offset(tp.offset) for tp in partitions})

    def incremental_assign(self, partitions: list[TopicPartition]) -> None:
        self._check_open()
        self._assign_called = True
        self._fetcher.add({(tp.topic, tp.partition): _start_offset(tp.offset) for tp in partitions})

    def unassign(self) -> None:
        self._assign_called = True
        self._unassign_all()

    def _unassign_all(self) -> None:
        self._fetcher.assign({})
        self._stored.clear()

    def incremental_unassign(self, partitions: list[TopicPartition]) -> None:
        self._assign_called = True
        tps = [(tp.topic, tp.partition) for tp in partitions]
        self._fetcher.remove(tps)
        for tp in tps:
            self._stored.pop(tp, None)

    def assignment(self) -> list[TopicPartition]:
        with self._fetcher.lock:
            return [TopicPartition(t, p) for t, p in sorted(self._fetcher.partitions)]

    # -- polling -------------------------------------------------------------------------

    def poll(self, timeout: float | None = None) -> Message | None:
        """The next message or error event, waiting up to ``timeout`` seconds (None/-1: forever)."""
        msgs = self.consume(1, -1 if timeout is None else timeout)
        return msgs[0] if msgs else None

    def consume(self, num_messages: int = 1, timeout: float = -1) -> list[Message]:
        """Up to ``num_messages`` messages, waiting up to ``timeout`` seconds for the first."""
        self._check_open()
        if num_messages < 1 or num_messages > 1_000_000:
            raise ValueError("num_messages must be between 1 and 1000000 (1M)")
        deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        fetcher = self._fetcher
        while True:
            if self._member is not None:
                self._member.last_poll = time.monotonic()
                if not self._member.subscribed.is_set() and (self._member.topics or self._member.pattern):
                    self._thread.loop.call_soon_threadsafe(self._member.subscribed.set)
            while self._events:
                error = self._serve_event(self._events.popleft())
                if error is not None:
                    return [error]
            msgs = fetcher.drain(num_messages)
            if msgs:
                if self._auto_store:
                    self._stored.update(fetcher.drained)
                return msgs
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return []
            with fetcher.ready:
                if not self._events:
                    fetcher.ready.wait(0.2 if left is None else min(0.2, left))

    def consume_record_sets(self, max_sets: int = 16, timeout: float = -1) -> tuple[list[Any], Message | None]:
        """Fetched record sets undecoded, for readers with their own decoder (mafka.spark's Arrow columns).

        Waits up to ``timeout`` seconds for the first; returns
        ``([(topic_partition, records, aborted_transactions, min_offset), ...],
        error event or None)`` — see ``Fetcher.drain_record_sets``.  Not for
        group consumers: rebalance events are not served here.
        """
        self._check_open()
        if self._member is not None:
            raise RuntimeError("consume_record_sets() is for consumers without a group")
        deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        fetcher = self._fetcher
        while True:
            sets, error = fetcher.drain_record_sets(max_sets)
            if sets or error is not None:
                return sets, error
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return [], None
            with fetcher.ready:
                fetcher.ready.wait(0.2 if left is None else min(0.2, left))

    def _serve_event(self, event: Any) -> Message | None:
        if isinstance(event, KafkaError):
            if self._error_cb is not None:
                self._error_cb(event)
                return None
            return Message(None, None, None, None, None, error=event)
        if isinstance(event, tuple):  # ("commit", error, partitions) from an async commit
            _, err, parts = event
            if self._on_commit is not None:
                self._on_commit(err, parts)
            return None
        assert isinstance(event, RebalanceEvent)
        parts = [TopicPartition(t, p) for t, p in event.partitions]
        try:
            self._assign_called = False
            if event.kind == "assign":
                if self._on_assign is not None:
                    self._on_assign(self, parts)
                if not self._assign_called:
                    (self.incremental_assign if event.incremental else self.assign)(parts)
            else:
                if self._auto_commit and event.kind == "revoke":
                    self._commit_stored([(t, p) for t, p in event.partitions], wait=True,
                                        timeout=self._revoke_commit_timeout)
                cb = self._on_lost if event.kind == "lost" and self._on_lost else self._on_revoke
                if cb is not None:
                    cb(self, parts)
                if not self._assign_called:
                    if event.incremental:
                        self.incremental_unassign(parts)
                    else:
                        self._unassign_all()
        finally:
            self._thread.loop.call_soon_threadsafe(_resolve, event.done)
        return None

    # -- offsets ---------------------------------------------------------------------------

    def store_offsets(self, message: Message | None = None,
                      offsets: list[TopicPartition] | None = None) -> None:
        if message is not None:
            stored, after = _position_after(message)
            self._stored[stored] = after
        for tp in offsets or ():
            self._stored[(tp.topic, tp.partition)] = tp.offset

    def commit(self, message: Message | None = None, offsets: list[TopicPartition] | None = None,
               asynchronous: bool = True) -> list[TopicPartition] | None:
        """Commits ``message``'s offset + 1, the given offsets, or the stored/current positions.

        Synchronous: returns the partitions with their offsets; raises KafkaException when
        the commit failed (e.g. REBALANCE_IN_PROGRESS, _NO_OFFSET when there is nothing to commit).
        """
        self._check_open()
        if self._member is None:
            raise KafkaException(KafkaError._INVALID_ARG, 'commit() requires "group.id"')
        todo: dict[TopicPartitionTuple, int]
        if message is not None:
            committed, after = _position_after(message)
            todo = {committed: after}
        elif offsets is not None:
            todo = {(tp.topic, tp.partition): tp.offset for tp in offsets}
        else:
            todo = dict(self._stored)
        todo = {tp: off for tp, off in todo.items() if off >= 0}
        if not todo:
            if asynchronous:
                return None
            raise KafkaException(KafkaError._NO_OFFSET)
        future = self._thread.submit(self._commit(todo))
        if asynchronous:
            future.add_done_callback(lambda f: self._async_commit_done(f, todo))
            return None
        try:
            result = future.result(self._kernel.config["request.timeout.ms"] / 1000.0 + 10)
        except Exception as exc:  # noqa: BLE001
            raise KafkaException(KafkaError(KafkaError._TRANSPORT, str(exc))) from None
        parts = self._commit_result(todo, result)
        failed = [tp.error for tp in parts if tp.error is not None]
        if failed:
            raise KafkaException(failed[0])
        return parts

    async def _commit(self, todo: dict[TopicPartitionTuple, int]) -> dict[TopicPartitionTuple, int]:
        assert self._member is not None
        member = self._member
        in_group = member.generation >= 0 and bool(member.owned or member.topics or member.pattern)
        result = await member.commit({tp: (off, None) for tp, off in todo.items()}, in_group=in_group)
        for tp, code in result.items():
            if code == 0:
                self._committed_sent[tp] = todo[tp]
        return result

    def _commit_result(self, todo: dict[TopicPartitionTuple, int], result: dict[TopicPartitionTuple, int]) -> list[TopicPartition]:
        parts = []
        for (t, p), off in sorted(todo.items()):
            tp = TopicPartition(t, p, off)
            code = result.get((t, p), 0)
            if code:
                tp.error = KafkaError(code)
            parts.append(tp)
        return parts

    def _async_commit_done(self, future: Any, todo: dict[TopicPartitionTuple, int]) -> None:
        try:
            result = future.result()
        except Exception as exc:  # noqa: BLE001
            self._notify(("commit", KafkaError(KafkaError._TRANSPORT, str(exc)), []))
            return
        parts = self._commit_result(todo, result)
        err = next((tp.error for tp in parts if tp.error is not None), None)
        self._notify(("commit", err, parts))

    def _commit_stored(self, tps: list[TopicPartitionTuple] | None = None, wait: bool = False,
                       timeout: float | None = None) -> None:
        todo = {tp: off for tp, off in self._stored.items()
                if (tps is None or tp in tps) and self._committed_sent.get(tp) != off}
        if not todo:
            return
        future = self._thread.submit(self._commit(todo))
        if wait:
            try:
                future.result(timeout or self._kernel.config["request.timeout.ms"] / 1000.0)
            except Exception:  # noqa: BLE001 - a failed commit on revoke is reported by the next one
                pass

    async def _auto_commit_loop(self) -> None:
        interval = self._kernel.config["auto.commit.interval.ms"] / 1000.0
        member = self._member
        assert member is not None
        while True:
            await asyncio.sleep(interval)
            todo = {tp: off for tp, off in list(self._stored.items())
                    if self._committed_sent.get(tp) != off and tp in self._fetcher.partitions}
            if todo and member.generation >= 0:
                try:
                    await self._commit(todo)
                except Exception:  # noqa: BLE001 - retried at the next interval
                    pass

    def committed(self, partitions: list[TopicPartition], timeout: float | None = None) -> list[TopicPartition]:
        self._check_open()
        if self._member is None:
            raise KafkaException(KafkaError._INVALID_ARG, 'committed() requires "group.id"')
        tps = [(tp.topic, tp.partition) for tp in partitions]
        try:
            got = self._thread.run(self._member.fetch_committed(tps), timeout=timeout or 30.0)
        except TimeoutError:
            raise KafkaException(KafkaError._TIMED_OUT) from None
        return [TopicPartition(t, p, got.get((t, p), -1) if got.get((t, p), -1) >= 0 else OFFSET_INVALID)
                for t, p in tps]

    def position(self, partitions: list[TopicPartition]) -> list[TopicPartition]:
        out = []
        with self._fetcher.lock:
            for tp in partitions:
                state = self._fetcher.partitions.get((tp.topic, tp.partition))
                pos = state.position if state is not None and state.position is not None else OFFSET_INVALID
                out.append(TopicPartition(tp.topic, tp.partition, pos))
        return out

    def seek(self, partition: TopicPartition) -> None:
        """Moves the fetch position of an assigned partition (OFFSET_BEGINNING / OFFSET_END allowed)."""
        offset = _start_offset(partition.offset)
        if offset is None:
            raise KafkaException(KafkaError._INVALID_ARG, f"invalid seek offset {partition.offset}")
        try:
            self._fetcher.seek((partition.topic, partition.partition), offset)
        except KeyError:
            raise KafkaException(KafkaError._STATE, f"{partition.topic}-{partition.partition} is not assigned") from None

    def pause(self, partitions: list[TopicPartition]) -> None:
        self._fetcher.pause([(tp.topic, tp.partition) for tp in partitions], True)

    def resume(self, partitions: list[TopicPartition]) -> None:
        self._fetcher.pause([(tp.topic, tp.partition) for tp in partitions], False)

    def get_watermark_offsets(self, partition: TopicPartition, timeout: float | None = None,
                              cached: bool = False) -> tuple[int, int]:
        """(low, high) watermarks; ``cached`` answers from the last fetch (-1001 if none)."""
        tp = (partition.topic, partition.partition)
        if cached:
            with self._fetcher.lock:
                state = self._fetcher.partitions.get(tp)
                if state is None:
                    return OFFSET_INVALID, OFFSET_INVALID
                return state.log_start, state.high_watermark
        try:
            got = self._thread.run(self._watermarks(tp), timeout=timeout or 30.0)
        except TimeoutError:
            raise KafkaException(KafkaError._TIMED_OUT) from None
        return got

    async def _watermarks(self, tp: TopicPartitionTuple) -> tuple[int, int]:
        low = await self._fetcher.list_offsets({tp: EARLIEST}, isolation=0)
        high = await self._fetcher.list_offsets({tp: LATEST})
        if tp not in low or tp not in high:
            raise KafkaException(KafkaError(self._kernel.metadata.topic_error(tp[0]) or KafkaError._UNKNOWN_PARTITION))
        return low[tp], high[tp]

    def offsets_for_times(self, partitions: list[TopicPartition], timeout: float | None = None) -> list[TopicPartition]:
        """For each partition (whose ``offset`` holds a timestamp in ms) the earliest offset at or after it."""
        request = {(tp.topic, tp.partition): tp.offset for tp in partitions}
        try:
            got = self._thread.run(self._fetcher.list_offsets(request), timeout=timeout or 30.0)
        except TimeoutError:
            raise KafkaException(KafkaError._TIMED_OUT) from None
        return [TopicPartition(t, p, got.get((t, p), OFFSET_END)) for t, p in request]

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadataView:
        return list_topics(self._thread, self._kernel, topic, timeout)

    def memberid(self) -> str | None:
        return self._member.member_id if self._member is not None else None

    def consumer_group_metadata(self) -> ConsumerGroupMetadata:
        """This consumer's group membership now (group id, generation, member id, instance id),
        for a transactional producer's ``send_offsets_to_transaction`` (KIP-447).

        Raises:
            KafkaException: ``_UNSUPPORTED_FEATURE`` for a consumer without ``group.id``.
        """
        member = self._member
        if member is None:
            raise KafkaException(KafkaError(KafkaError._UNSUPPORTED_FEATURE,
                                            "Consumer group metadata not available", retriable=False))
        return ConsumerGroupMetadata(member.group_id, member.generation, member.member_id, member.instance_id)

    # -- closing ---------------------------------------------------------------------------

    def close(self) -> None:
        """Commits stored offsets (auto-commit), leaves the group, stops the thread and sockets.

        Bounded: each step (the revoke commit, LeaveGroup, closing connections) gets at most
        :data:`CLOSE_STEP_TIMEOUT` seconds, so a dead cluster cannot hold it up for long."""
        if self._closed:
            return
        self._revoke_commit_timeout = CLOSE_STEP_TIMEOUT
        try:
            member = self._member
            if member is not None and member.owned:
                # As librdkafka and Java do: the application sees its partitions revoked
                # (and may commit) before the consumer leaves the group.
                self._serve_event(RebalanceEvent("revoke", sorted(member.owned), member.rebalance_protocol ==
                                                 "COOPERATIVE", self._thread.loop.create_future()))
            elif self._auto_commit:
                self._commit_stored(wait=True, timeout=CLOSE_STEP_TIMEOUT)
            if self._member is not None:
                self._thread.run(self._leave(self._member), timeout=CLOSE_STEP_TIMEOUT)
        except Exception:  # noqa: BLE001 - close must not hang or raise on a dead cluster
            pass
        self._closed = True
        try:
            self._thread.run(self._kernel.close(), timeout=5)
        except Exception:  # noqa: BLE001
            pass
        self._thread.stop(5.0)

    def __enter__(self) -> Consumer:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if not self._closed:
                self._thread.stop(1.0)
        except Exception:  # noqa: BLE001 - interpreter teardown
            pass


def _resolve(fut: asyncio.Future[None]) -> None:
    if not fut.done():
        fut.set_result(None)


def _position_after(message: Message) -> tuple[TopicPartitionTuple, int]:
    """(its partition, its offset + 1): what storing or committing a consumed *message* records.

    Raises:
        TypeError: *message* is not a record (an error or event message has no
            partition or offset).
    """
    topic, partition, offset = message.topic(), message.partition(), message.offset()
    if topic is None or partition is None or offset is None:
        raise TypeError(f"{message!r} is not a consumed record: it has no partition or offset")
    return (topic, partition), offset + 1
