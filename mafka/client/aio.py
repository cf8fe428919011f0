"""The asyncio face: ``AIOProducer`` and ``AIOConsumer`` on the application's event loop.

Same core as the synchronous clients (:class:`~mafka.client.sender.ProducerEngine`,
:class:`~mafka.client.fetcher.Fetcher`, :class:`~mafka.client.group_member.GroupMember` or,
with ``group.protocol=consumer``, :class:`~mafka.client.consumer_group_member.ConsumerGroupMember`),
driven directly by the running loop — no extra thread.  Shaped like aiokafka where
asyncio services use it today::

    producer = AIOProducer(bootstrap_servers="127.0.0.1:9092")
    await producer.start()
    meta = await producer.send_and_wait("demo", b"value", key=b"k")
    await producer.stop()

    consumer = AIOConsumer("demo", bootstrap_servers="127.0.0.1:9092", group_id="g",
                           auto_offset_reset="earliest")
    await consumer.start()
    async for msg in consumer:
        print(msg.offset(), msg.value())

Messages are :class:`~mafka.client.message.Message` objects, as the synchronous
consumer returns.  Config keys: confluent-kafka's dotted names or aiokafka/kafka-python
style underscores.

A producer with ``transactional.id`` has the synchronous producer's transaction
calls as coroutines (confluent-kafka's names and errors), and ``transaction()``,
aiokafka's context manager that commits, or aborts when the block raises::

    producer = AIOProducer(bootstrap_servers="127.0.0.1:9092", transactional_id="tx-1")
    await producer.start()
    await producer.init_transactions()
    async with producer.transaction():
        await producer.send("out", b"value")
        await producer.send_offsets_to_transaction(positions, consumer.consumer_group_metadata())
"""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from typing import Any, NamedTuple

from mafka.client.aio_share_consumer import AIOShareConsumer
from mafka.client.aio_util import wait_event
from mafka.client.config import parse_config
from mafka.client.consumer_group_member import ConsumerGroupMember, new_group_member
from mafka.client.fetcher import Fetcher
from mafka.client.group_member import GroupMember, RebalanceEvent
from mafka.client.group_metadata import ConsumerGroupMetadata
from mafka.client.kafka_error import KafkaError, KafkaException
from mafka.client.kernel import Kernel
from mafka.client.message import (
    TIMESTAMP_CREATE_TIME,
    TIMESTAMP_LOG_APPEND_TIME,
    Message,
    TopicPartition,
)
from mafka.client.producer import (
    normalize_headers,
    offsets_of,
    remaining,
    to_bytes,
    transactional,
    with_delay,
)
from mafka.client.producer_batch import ProducerBatch, encoded_record_size
from mafka.client.sender import ProducerEngine
from mafka.topics import TopicPartitionTuple

__all__ = ["AIOProducer", "AIOConsumer", "AIOShareConsumer", "RecordMetadata"]


class RecordMetadata(NamedTuple):
    """Where a record was written (aiokafka's ``RecordMetadata`` fields; a tuple, built per record)."""

    topic: str
    partition: int
    offset: int
    timestamp: int
    timestamp_type: int


def _settings(conf: Mapping[str, Any] | None, kwargs: dict[str, Any]) -> dict[str, Any]:
    settings = dict(conf or {})
    settings.update(kwargs)
    return settings


class AIOProducer:
    """An asyncio producer; ``await start()`` before sending, ``await stop()`` at the end."""

    def __init__(self, conf: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self._config = parse_config("producer", _settings(conf, kwargs))
        self._kernel = Kernel(self._config)
        self._engine = ProducerEngine(self._kernel, self._report)
        self._started = False
        self._space = asyncio.Event()

    async def start(self) -> None:
        if not self._started:
            self._engine.start()
            self._started = True

    def _report(self, batch: ProducerBatch, base_offset: int, timestamp: int,
                error: KafkaError | None) -> None:
        ts_type = TIMESTAMP_LOG_APPEND_TIME if timestamp != -1 else TIMESTAMP_CREATE_TIME
        for i, (fut, _key, _value, ts, _hdrs) in enumerate(batch.records):
            if fut is None or fut.done():
                continue
            if error is not None:
                fut.set_exception(KafkaException(error))
            else:
                fut.set_result(RecordMetadata(batch.topic, batch.partition,
                                              base_offset + i if base_offset >= 0 else -1,
                                              timestamp if timestamp != -1 else ts, ts_type))
        self._space.set()

    async def send(self, topic: str, value: Any = None, key: Any = None, partition: int | None = None,
                   timestamp_ms: int | None = None, headers: Any = None, *, delay_ms: int | None = None,
                   deliver_at: int | None = None) -> asyncio.Future[RecordMetadata]:
        """Queues a record; returns a future of its :class:`RecordMetadata` (waits while the buffer is full).

        ``delay_ms`` / ``deliver_at``: Mafka's delayed messages, as :meth:`Producer.produce`.

        Raises:
            ValueError: both ``delay_ms`` and ``deliver_at``, or a negative one.
            KafkaException: MSG_SIZE_TOO_LARGE, unknown topic or partition.
        """
        if not self._started:
            await self.start()
        if self._engine.txn is not None:
            self._engine.txn.check_produce()
        if type(value) is not bytes:
            value = to_bytes(value, "value")
        if key is not None and type(key) is not bytes:
            key = to_bytes(key, "key")
        hdrs = normalize_headers(headers) if headers else None
        if delay_ms is not None or deliver_at is not None:
            hdrs = with_delay(hdrs, delay_ms, deliver_at)
        engine = self._engine
        if (len(value) if value else 0) + (len(key) if key else 0) > engine.message_max - 200 and \
                encoded_record_size(key, value, hdrs) - 30 + 61 > engine.message_max:
            raise KafkaException(KafkaError.MSG_SIZE_TOO_LARGE, "Broker: Message size too large")
        while engine.buffer_full():
            self._space.clear()
            await self._space.wait()
        if partition is None or partition < 0:
            chosen = engine.choose_partition(topic, key)
            if chosen is None:
                await self._kernel.metadata_for([topic], timeout=engine.delivery_timeout)
                chosen = engine.choose_partition(topic, key)
                if chosen is None:
                    code = self._kernel.metadata.topic_error(topic) or KafkaError._UNKNOWN_TOPIC
                    raise KafkaException(KafkaError(code))
            partition = chosen
        fut: asyncio.Future[RecordMetadata] = asyncio.get_running_loop().create_future()
        engine.append(topic, partition, timestamp_ms or int(time.time() * 1000), key, value, hdrs, fut)
        return fut

    async def send_and_wait(self, topic: str, value: Any = None, key: Any = None,
                            partition: int | None = None, timestamp_ms: int | None = None,
                            headers: Any = None, *, delay_ms: int | None = None,
                            deliver_at: int | None = None) -> RecordMetadata:
        fut = await self.send(topic, value, key, partition, timestamp_ms, headers, delay_ms=delay_ms,
                              deliver_at=deliver_at)
        return await fut

    async def flush(self, timeout: float | None = None) -> None:
        """Waits until every queued record is delivered or failed."""
        self._engine.begin_flush()
        try:
            async with asyncio.timeout(timeout):
                while self._engine.pending():
                    self._space.clear()
                    self._engine.wake()
                    await wait_event(self._space, 0.1)
        finally:
            self._engine.end_flush()

    # -- transactions (confluent-kafka's calls, as coroutines) --------------------------------

    async def _flush_for(self, deadline: float | None) -> None:
        try:
            await self.flush(remaining(deadline))
        except TimeoutError:
            raise KafkaException(KafkaError(
                KafkaError._TIMED_OUT, "Failed to flush all outstanding messages within the API timeout: "
                f"{self._engine.pending()} message(s) remaining", retriable=True)) from None

    async def init_transactions(self, timeout: float | None = None) -> None:
        """See :meth:`mafka.client.producer.Producer.init_transactions`."""
        await self.start()
        txn = transactional(self._engine)
        with txn.api.call("init_transactions", resumable=True):
            await txn.init_transactions(timeout)

    async def begin_transaction(self) -> None:
        txn = transactional(self._engine)
        with txn.api.call("begin_transaction"):
            await txn.begin_transaction()

    async def send_offsets_to_transaction(self, positions: list[TopicPartition], group_metadata: Any,
                                          timeout: float | None = None) -> None:
        """See :meth:`mafka.client.producer.Producer.send_offsets_to_transaction`."""
        txn = transactional(self._engine)
        offsets, group = offsets_of(positions, group_metadata)
        with txn.api.call("send_offsets_to_transaction"):
            await txn.send_offsets_to_transaction(offsets, group, timeout)

    async def commit_transaction(self, timeout: float | None = None) -> None:
        """Waits for the transaction's records, then commits (see ``Producer.commit_transaction``)."""
        txn = transactional(self._engine)
        deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        with txn.api.call("commit_transaction", resumable=True):
            await txn.begin_commit()
            await self._flush_for(deadline)
            await txn.commit_transaction(remaining(deadline))

    async def abort_transaction(self, timeout: float | None = None) -> None:
        """Fails queued records, waits for those in flight, then aborts (see ``Producer.abort_transaction``)."""
        txn = transactional(self._engine)
        deadline = None if timeout is None or timeout < 0 else time.monotonic() + timeout
        with txn.api.call("abort_transaction", resumable=True):
            await txn.begin_abort()
            await self._flush_for(deadline)
            await txn.abort_transaction(remaining(deadline))

    @contextlib.asynccontextmanager
    async def transaction(self) -> AsyncIterator[None]:
        """``async with producer.transaction():`` begins, then commits — or aborts if the block raises."""
        await self.begin_transaction()
        try:
            yield
        except Exception:
            await self.abort_transaction()
            raise
        await self.commit_transaction()

    async def partitions_for(self, topic: str) -> set[int]:
        md = await self._kernel.metadata_for([topic], timeout=30.0)
        info = md.topics.get(topic)
        return set(info.partitions) if info is not None else set()

    async def stop(self, timeout: float = 30.0) -> None:
        """Flushes (bounded by ``timeout``) and closes every connection."""
        try:
            await self.flush(timeout)
        except TimeoutError:
            pass
        await self._kernel.close()

    async def __aenter__(self) -> AIOProducer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


class AIOConsumer:
    """An asyncio consumer: ``AIOConsumer(*topics, **conf)``; ``await start()``; iterate or ``getmany``.

    ``on_assign`` / ``on_revoke`` (sync or async callables of ``(consumer, partitions)``)
    may be given to :meth:`subscribe`.
    """

    def __init__(self, *topics: str, conf: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        self._config = cfg = parse_config("consumer", _settings(conf, kwargs))
        self._kernel = Kernel(cfg)
        self._group_id = cfg.get("group.id")
        self._member: GroupMember | ConsumerGroupMember | None = None
        self._fetcher = Fetcher(self._kernel, self._committed if self._group_id else None)
        self._data = asyncio.Event()
        self._fetcher.on_data = self._data.set
        self._topics = list(topics)
        self._auto_commit = bool(cfg["enable.auto.commit"]) and bool(self._group_id)
        self._stored: dict[TopicPartitionTuple, int] = {}
        self._events: list[Any] = []
        self._on_assign: Callable[..., Any] | None = None
        self._on_revoke: Callable[..., Any] | None = None
        self._started = False

    async def _committed(self, tps: list[TopicPartitionTuple]) -> dict[TopicPartitionTuple, int]:
        assert self._member is not None
        return await self._member.fetch_committed(tps)

    async def start(self) -> None:
        if self._started:
            return
        self._started = True
        self._fetcher.start()
        if self._group_id:
            self._member = new_group_member(self._kernel, self._notify)
            self._kernel.spawn(self._member.run())
            if self._auto_commit:
                self._kernel.spawn(self._auto_commit_loop())
        if self._topics:
            self.subscribe(self._topics)

    def _notify(self, event: Any) -> None:
        self._events.append(event)
        self._data.set()

    def subscribe(self, topics: list[str], on_assign: Callable[..., Any] | None = None,
                  on_revoke: Callable[..., Any] | None = None) -> None:
        if self._member is None:
            raise KafkaException(KafkaError._INVALID_ARG, 'subscribe() requires "group.id"')
        self._on_assign, self._on_revoke = on_assign, on_revoke
        self._member.subscribe(list(topics))

    def assign(self, partitions: list[TopicPartition]) -> None:
        from mafka.client.consumer import _start_offset

        self._fetcher.assign({(tp.topic, tp.partition): _start_offset(tp.offset) for tp in partitions})

    def assignment(self) -> set[TopicPartition]:
        return {TopicPartition(t, p) for t, p in self._fetcher.partitions}

    def consumer_group_metadata(self) -> ConsumerGroupMetadata:
        """The group membership to pass to a transactional producer's ``send_offsets_to_transaction``.

        Raises:
            KafkaException: ``_UNSUPPORTED_FEATURE`` without ``group.id``.
        """
        if self._member is None:
            raise KafkaException(KafkaError(KafkaError._UNSUPPORTED_FEATURE,
                                            "Consumer group metadata not available", retriable=False))
        m = self._member
        return ConsumerGroupMetadata(m.group_id, m.generation, m.member_id, m.instance_id)

    async def _serve_events(self) -> Message | None:
        while self._events:
            event = self._events.pop(0)
            if isinstance(event, KafkaError):
                return Message(None, None, None, None, None, error=event)
            assert isinstance(event, RebalanceEvent)
            tps = {(t, p): None for t, p in event.partitions}
            parts = [TopicPartition(t, p) for t, p in event.partitions]
            try:
                if event.kind == "assign":
                    (self._fetcher.add if event.incremental else self._fetcher.assign)(tps)
                    await _maybe_await(self._on_assign, self, parts)
                else:
                    if self._auto_commit and event.kind == "revoke":
                        await self._commit_stored(set(tps))
                    await _maybe_await(self._on_revoke, self, parts)
                    if event.incremental:
                        self._fetcher.remove(list(tps))
                    else:
                        self._fetcher.assign({})
                    for tp in tps:
                        self._stored.pop(tp, None)
            finally:
                if not event.done.done():
                    event.done.set_result(None)
        return None

    async def getmany(self, timeout_ms: int = 0, max_records: int | None = None) -> dict[TopicPartition, list[Message]]:
        """Messages by partition, waiting up to ``timeout_ms`` for the first."""
        await self.start()
        deadline = time.monotonic() + timeout_ms / 1000.0
        limit = max_records or 10_000
        while True:
            if self._member is not None:
                self._member.last_poll = time.monotonic()
            error = await self._serve_events()
            if error is not None:
                raise KafkaException(error.error())
            msgs = self._fetcher.drain(limit)
            if msgs:
                out: dict[TopicPartitionTuple, list[Message]] = {}
                for m in msgs:
                    if m._error is not None:
                        raise KafkaException(m._error)
                    topic, partition = m._topic, m._partition
                    assert topic is not None and partition is not None  # a record's: it has no error
                    key = (topic, partition)
                    if key not in out:
                        out[key] = []
                    out[key].append(m)
                self._stored.update(self._fetcher.drained)
                return {TopicPartition(t, p): ms for (t, p), ms in out.items()}
            left = deadline - time.monotonic()
            if left <= 0:
                return {}
            self._data.clear()
            await wait_event(self._data, min(left, 0.2))

    async def getone(self) -> Message:
        while True:
            got = await self.getmany(timeout_ms=1000, max_records=1)
            for msgs in got.values():
                return msgs[0]

    def __aiter__(self) -> AsyncIterator[Message]:
        return self._iterate()

    async def _iterate(self) -> AsyncIterator[Message]:
        while True:
            got = await self.getmany(timeout_ms=1000, max_records=500)
            for msgs in got.values():
                for m in msgs:
                    yield m

    async def commit(self, offsets: Mapping[TopicPartition, int] | None = None) -> None:
        """Commits ``offsets`` (partition -> next offset) or every consumed position.

        Raises:
            KafkaException: the coordinator refused a partition's commit.
        """
        if self._member is None:
            raise KafkaException(KafkaError._INVALID_ARG, 'commit() requires "group.id"')
        todo = ({(tp.topic, tp.partition): off for tp, off in offsets.items()} if offsets is not None
                else dict(self._stored))
        if not todo:
            return
        member = self._member
        result = await member.commit({tp: (off, None) for tp, off in todo.items()},
                                     in_group=member.generation >= 0)
        failed = [code for code in result.values() if code]
        if failed:
            raise KafkaException(KafkaError(failed[0]))

    async def _commit_stored(self, tps: set[TopicPartitionTuple] | None = None) -> None:
        todo = {tp: off for tp, off in self._stored.items() if tps is None or tp in tps}
        if todo and self._member is not None:
            try:
                await self._member.commit({tp: (off, None) for tp, off in todo.items()},
                                          in_group=self._member.generation >= 0)
            except (TimeoutError, ConnectionError):
                pass

    async def _auto_commit_loop(self) -> None:
        interval = self._kernel.config["auto.commit.interval.ms"] / 1000.0
        last: dict[TopicPartitionTuple, int] = {}
        while True:
            await asyncio.sleep(interval)
            if self._stored != last:
                last = dict(self._stored)
                await self._commit_stored()

    async def seek(self, partition: TopicPartition, offset: int) -> None:
        self._fetcher.seek((partition.topic, partition.partition), offset)

    async def stop(self) -> None:
        """Commits (auto-commit), leaves the group and closes every connection."""
        if self._auto_commit:
            await self._commit_stored()
        if self._member is not None:
            self._member.closing = True
            await self._member.leave()
        await self._kernel.close()

    async def __aenter__(self) -> AIOConsumer:
        await self.start()
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.stop()


async def _maybe_await(cb: Callable[..., Any] | None, *args: Any) -> None:
    if cb is None:
        return
    result = cb(*args)
    if isinstance(result, Awaitable):
        await result
