"""The share consumer (KIP-932) for asyncio: ``AIOShareConsumer``, and the core the synchronous face runs.

A share consumer is a member of a *share group*: partitions are shared among the members, each
record is delivered to one member at a time under a lock (``group.share.record.lock.duration.ms``,
the broker's), and each is acknowledged one by one — ACCEPT (done), RELEASE (deliver again,
perhaps to another member) or REJECT (never again).  Its API is confluent-kafka's
``ShareConsumer``: ``subscribe``, ``poll`` (a list of records), ``acknowledge`` /
``acknowledge_offset`` (``share.acknowledgement.mode=explicit``), ``commit_sync`` /
``commit_async``, ``set_acknowledgement_commit_callback``, ``close``.

Parts: :class:`~mafka.client.share_group_member.ShareGroupMember` (heartbeats, assignment),
:class:`~mafka.client.share_fetcher.ShareFetcher` (share sessions, fetches, acknowledgements),
:class:`~mafka.client.share_acknowledgements.AcknowledgementBook` (held records, pending
acknowledgements).  Acknowledgement results reach the callback as
``callback(offsets: {TopicPartition: set[int]}, exception: KafkaException | None)``, called from
``poll``, ``commit_sync``, ``commit_async`` or ``close`` — never from elsewhere.  Errors the
application should see (a fatal group error, an authorization failure) come from ``poll`` as
messages whose ``error()`` is set, as confluent-kafka returns them.
"""

from __future__ import annotations

import asyncio
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from mafka.client.aio_util import wait_event
from mafka.client.config import parse_config
from mafka.client.kafka_error import KafkaError, KafkaException
from mafka.client.kernel import Kernel
from mafka.client.message import Message, TopicPartition
from mafka.client.share_acknowledgements import (
    AcknowledgementBook,
    AcknowledgeType,
    IllegalStateError,
)
from mafka.client.share_fetcher import AckResult, ShareFetcher
from mafka.client.share_group_member import ShareGroupMember
from mafka.topics import TopicPartitionTuple

__all__ = ["AIOShareConsumer", "AcknowledgeType", "IllegalStateError", "CLOSE_TIMEOUT"]

#: Seconds close() may take for the final acknowledgements, and as much again to leave.
CLOSE_TIMEOUT = 5.0

CommitCallback = Callable[[dict[TopicPartition, set[int]], KafkaException | None], Any]


class AIOShareConsumer:
    """``AIOShareConsumer(conf)``: a share consumer on the running asyncio loop.

    ``await start()`` (or the first ``subscribe`` + ``poll``) starts it; ``await close()`` ends it.

    Raises:
        ConfigError (a ValueError): a bad configuration; ``group.id`` is required.
    """

    def __init__(self, conf: Mapping[str, Any] | None = None, *, dispatch_callbacks: bool = True,
                 **kwargs: Any) -> None:
        settings = dict(conf or {})
        settings.update(kwargs)
        self._config = cfg = parse_config("consumer", settings)
        if not cfg.get("group.id"):
            raise KafkaException(KafkaError(KafkaError._INVALID_ARG, 'A share consumer requires "group.id"'))
        self._kernel = Kernel(cfg)
        self._book = AcknowledgementBook(cfg["share.acknowledgement.mode"] == "explicit")
        self._max_records = cfg["max.poll.records"]
        self._dispatch = dispatch_callbacks
        self._events: deque[KafkaError] = deque()
        self._results: deque[AckResult] = deque()
        self._collect: list[AckResult] | None = None
        self._callback: CommitCallback | None = None
        self._subscription: list[str] = []
        self._data: asyncio.Event | None = None
        self._member: ShareGroupMember | None = None
        self._fetcher: ShareFetcher | None = None
        self._in_callback = False
        self._closed = False

    # -- lifecycle ---------------------------------------------------------------------------

    async def start(self) -> None:
        if self._member is not None:
            return
        self._data = asyncio.Event()
        self._member = ShareGroupMember(self._kernel, self._on_assignment, self._on_error)
        self._fetcher = ShareFetcher(self._kernel, self._member.group_id, lambda: self._member_id(),
                                     self._book, self._data.set, self._on_result, self._on_error)
        self._kernel.spawn(self._member.run())

    def _member_id(self) -> str:
        assert self._member is not None
        return self._member.member_id

    def _on_assignment(self, assigned: dict[TopicPartitionTuple, bytes]) -> None:
        assert self._fetcher is not None
        self._kernel.metadata.want({t for t, _ in assigned})
        self._fetcher.assign(assigned)

    def _on_error(self, error: KafkaError) -> None:
        self._events.append(error)
        if self._data is not None:
            self._data.set()

    def _on_result(self, result: AckResult) -> None:
        self._results.append(result)
        if self._collect is not None:
            self._collect.append(result)
        if self._data is not None:
            self._data.set()

    def _check_open(self) -> None:
        if self._closed:
            raise IllegalStateError("Share consumer is closed")
        if self._in_callback:
            raise IllegalStateError("Share consumer calls are not allowed from the acknowledgement commit callback")

    # -- subscription ------------------------------------------------------------------------

    def subscribe(self, topics: list[str]) -> None:
        """Replaces the subscription (an empty list unsubscribes).

        Raises:
            ValueError: an empty or duplicated topic name.
        """
        self._check_open()
        if isinstance(topics, str):
            raise TypeError("topics must be a list of topic names")
        topics = list(topics)
        if any(not isinstance(t, str) or not t for t in topics):
            raise ValueError("topic names must be non-empty strings")
        if len(set(topics)) != len(topics):
            raise ValueError("duplicate topic names in the subscription")
        self._subscription = topics
        if self._member is not None and topics:
            self._member.subscribe(topics)

    def subscription(self) -> list[str]:
        self._check_open()
        return list(self._subscription)

    async def unsubscribe(self) -> None:
        self._check_open()
        self._subscription = []
        if self._member is not None:
            if not self._book.explicit:
                self._book.accept_held()
            assert self._fetcher is not None
            await self._fetcher.acknowledge_now()
            await self._member.leave()

    # -- polling -----------------------------------------------------------------------------

    async def poll(self, timeout: float | None = None) -> list[Message]:
        """Records (and error events), waiting up to ``timeout`` seconds (None or < 0: forever) for
        the first; at most ``max.poll.records``.  Implicit mode accepts the previous poll's records.

        Raises:
            IllegalStateError: not subscribed; explicit mode with the previous poll's records not
                all acknowledged; closed.
        """
        self._check_open()
        if not self._subscription:
            raise IllegalStateError("Consumer is not subscribed to any topics")
        self._book.check_poll()
        if self._member is None:
            await self.start()
        assert self._member is not None and self._fetcher is not None and self._data is not None
        if not self._member.state.topic_names or set(self._member.state.topic_names) != set(self._subscription):
            self._member.subscribe(self._subscription)
        deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        self._fetcher.wake()
        while True:
            self._member.polled()
            self._serve_callbacks()
            if self._events:
                return [Message(None, None, None, None, None, error=self._events.popleft())]
            msgs = self._fetcher.drain(self._max_records)
            if msgs:
                return msgs
            left = None if deadline is None else deadline - time.monotonic()
            if left is not None and left <= 0:
                return []
            self._data.clear()
            await wait_event(self._data, 1.0 if left is None else min(left, 1.0))

    # -- acknowledging -----------------------------------------------------------------------

    def acknowledge(self, message: Message, ack_type: int = AcknowledgeType.ACCEPT) -> None:
        """Explicit mode: acknowledges a record the last poll returned (sent with the next poll or commit).

        Raises:
            TypeError: not a Message; IllegalStateError: implicit mode, or the record is not in
            flight; ValueError: a bad type, or a message without topic/partition/offset.
        """
        if not isinstance(message, Message):
            raise TypeError("acknowledge() takes a Message returned by poll()")
        topic, partition, offset = message.topic(), message.partition(), message.offset()
        if topic is None or partition is None or offset is None:
            raise ValueError("the message has no topic, partition or offset")
        self.acknowledge_offset(topic, partition, offset, ack_type)

    def acknowledge_offset(self, topic: str, partition: int, offset: int,
                           ack_type: int = AcknowledgeType.ACCEPT) -> None:
        """Explicit mode: acknowledges ``topic``/``partition``/``offset`` (see :meth:`acknowledge`)."""
        self._check_open()
        if not isinstance(ack_type, int):
            raise TypeError("ack_type must be an AcknowledgeType")
        if not topic or partition < 0 or offset < 0:
            raise ValueError("topic must be named, partition and offset non-negative")
        # Recorded only: sent with the next poll or commit (confluent-kafka's contract).
        self._book.acknowledge((topic, partition), offset, int(ack_type))

    async def commit_sync(self, timeout: float | None = 60.0) -> dict[TopicPartition, KafkaException | None]:
        """Sends the pending acknowledgements (implicit mode: the last poll's records, as ACCEPT) and
        waits for the brokers; returns each partition's outcome (None: acknowledged).

        Raises:
            KafkaException: ``_TIMED_OUT`` when the brokers did not answer within ``timeout``.
        """
        self._check_open()
        if self._fetcher is None:
            return {}
        if not self._book.explicit:
            self._book.accept_held()
        collected: list[AckResult] = []
        self._collect = collected
        try:
            if timeout is None or timeout < 0:
                await self._fetcher.acknowledge_now()
            else:
                async with asyncio.timeout(timeout):
                    await self._fetcher.acknowledge_now()
        except TimeoutError:
            raise KafkaException(KafkaError(KafkaError._TIMED_OUT, "commit_sync timed out")) from None
        finally:
            self._collect = None
        out: dict[TopicPartition, KafkaException | None] = {}
        for offsets, error in collected:
            for (t, p) in offsets:
                key = TopicPartition(t, p)
                if error is not None:
                    out[key] = KafkaException(error)
                else:
                    out.setdefault(key, None)
        self._serve_callbacks()
        return out

    async def commit_async(self) -> None:
        """Sends the pending acknowledgements without waiting; results go to the callback."""
        self._check_open()
        if self._fetcher is None:
            return
        if not self._book.explicit:
            self._book.accept_held()
        self._kernel.spawn(self._fetcher.acknowledge_now())
        self._serve_callbacks()

    def set_acknowledgement_commit_callback(self, callback: CommitCallback | None) -> None:
        """``callback(offsets, exception)`` for every acknowledgement result (None clears it)."""
        if self._in_callback:
            raise IllegalStateError("set_acknowledgement_commit_callback() from the callback")
        if self._closed:
            raise IllegalStateError("Share consumer is closed")
        if callback is not None and not callable(callback):
            raise TypeError("callback must be callable or None")
        self._callback = callback

    def _serve_callbacks(self) -> None:
        if self._dispatch:
            self.dispatch_results(self.take_results())

    def take_results(self) -> list[AckResult]:
        """The acknowledgement results not yet given to the callback (the synchronous face's
        thread dispatches them itself)."""
        out = list(self._results)
        self._results.clear()
        return out

    def dispatch_results(self, results: Iterable[AckResult]) -> None:
        """Calls the acknowledgement commit callback with each result (on the caller's thread)."""
        callback = self._callback
        if callback is None:
            return
        for offsets, error in results:
            self._in_callback = True
            try:
                callback({TopicPartition(t, p): set(o) for (t, p), o in offsets.items()},
                         None if error is None else KafkaException(error))
            finally:
                self._in_callback = False

    # -- closing -----------------------------------------------------------------------------

    async def close(self) -> None:
        """Sends pending acknowledgements (implicit mode: the last poll's records as ACCEPT), closes
        the share sessions and leaves the group; bounded by :data:`CLOSE_TIMEOUT` per step."""
        if self._closed:
            return
        if self._fetcher is not None and self._member is not None:
            if not self._book.explicit:
                self._book.accept_held()
            await self._fetcher.close(CLOSE_TIMEOUT)
            self._member.closing = True
            try:
                async with asyncio.timeout(CLOSE_TIMEOUT):
                    await self._member.leave()
            except TimeoutError:
                pass
        self._serve_callbacks()
        self._closed = True
        await self._kernel.close()

    async def __aenter__(self) -> AIOShareConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.close()
