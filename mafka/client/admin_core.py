"""The machinery under :class:`~mafka.client.admin.AdminClient`: its loop thread, futures and routing.

:class:`AdminCore` owns what every admin operation shares: the parsed
config and the timeouts taken from it, the :class:`~mafka.client.kernel.Kernel`
(connections and metadata), the private loop thread, the operations in
flight, and closing.  The API families (``admin_topics``, ``admin_configs``,
``admin_groups``, ``admin_group_offsets``, ``admin_records``,
``admin_reassignments``) are module-level functions over an ``AdminCore``;
:class:`~mafka.client.admin.AdminClient` is their public face.

An operation is started with :meth:`AdminCore.run`: its futures are
resolved by a coroutine on the loop thread, and whatever it leaves
unresolved fails (``_DESTROY`` on close, ``_TIMED_OUT`` past
``request_timeout`` …, see :meth:`AdminCore._guard`).  The routing helpers
send as Kafka's clients do: to the controller (:meth:`~AdminCore.to_controller`,
:meth:`~AdminCore.controller_request`), to a group's coordinator
(:meth:`~AdminCore.coordinated`), to each partition's leader
(:meth:`~AdminCore.to_leaders`), or to a broker, retrying after lost
connections (:meth:`~AdminCore.send_retrying`).

Also here: the futures' helpers (:func:`new_future`, :func:`resolve`,
:func:`fail`), the mapping of failures to confluent-kafka's
``KafkaException`` (:func:`code_error`, :func:`kafka_exception`) and the
argument checks the families share.  Everything on ``AdminCore`` but
:meth:`~AdminCore.run`, :meth:`~AdminCore.check_open` and
:meth:`~AdminCore.close` runs on the loop thread.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
import weakref
from collections import defaultdict
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from typing import Any, TypeVar

from mafka.client.config import ClientConfig
from mafka.client.kafka_error import KafkaError, KafkaException, error_for
from mafka.client.kernel import Kernel
from mafka.client.loop_thread import LoopThread
from mafka.client.message import TopicPartition
from mafka.client.transport import UnsupportedByBroker
from mafka.errors import ErrorCode
from mafka.errors import KafkaError as BrokerError

__all__ = [
    "COORDINATOR_RETRY",
    "AdminCore",
    "Future",
    "check_list",
    "check_partition",
    "code_error",
    "fail",
    "kafka_exception",
    "new_future",
    "no_duplicates",
    "partitions_by_topic",
    "resolve",
]

log = logging.getLogger("mafka.client.admin")

T = TypeVar("T")
Future = concurrent.futures.Future

# Errors after which a group request is resent to a (re-)looked-up coordinator.
COORDINATOR_RETRY = frozenset({
    ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
})


# -- futures and errors ---------------------------------------------------------------------------


def new_future() -> Future[Any]:
    fut: Future[Any] = concurrent.futures.Future()
    # Running from the start, as confluent-kafka's: an admin request cannot be cancelled.
    fut.set_running_or_notify_cancel()
    return fut


def resolve(fut: Future[Any], value: Any) -> None:
    if not fut.done():
        fut.set_result(value)


def fail(fut: Future[Any], exc: BaseException) -> None:
    if not fut.done():
        fut.set_exception(exc)


def code_error(code: int, message: str | None = None) -> KafkaException:
    """KafkaException for a broker error code; the broker's message if it sent one."""
    return KafkaException(KafkaError(code, message or None))


def kafka_exception(exc: BaseException) -> KafkaException:
    """The KafkaException a confluent-kafka user would see for ``exc``."""
    if isinstance(exc, KafkaException):
        return exc
    if isinstance(exc, BrokerError):
        return KafkaException(error_for(exc))
    if isinstance(exc, TimeoutError):
        return KafkaException(KafkaError._TIMED_OUT)
    if isinstance(exc, UnsupportedByBroker):
        return KafkaException(KafkaError(KafkaError._UNSUPPORTED_FEATURE, str(exc)))
    if isinstance(exc, ConnectionError):
        return KafkaException(KafkaError(KafkaError._TRANSPORT, str(exc)))
    log.exception("admin request failed unexpectedly", exc_info=exc)
    return KafkaException(KafkaError(KafkaError._FAIL, repr(exc)))


def check_list(value: Any, what: str, kind: type | tuple[type, ...], noun: str) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError(f"Expected list of {noun}")
    if not value:
        raise ValueError(f"Expected non-empty list of {noun}")
    for item in value:
        if not isinstance(item, kind):
            raise TypeError(f"Expected list of {noun}, got {type(item).__name__} in {what}")
    return value


def no_duplicates(keys: Iterable[Any], what: str) -> None:
    seen = set()
    for key in keys:
        if key in seen:
            raise ValueError(f"duplicate {what}: {key}")
        seen.add(key)


def check_partition(tp: Any, what: str) -> None:
    if not isinstance(tp, TopicPartition):
        raise TypeError(f"Element of {what} must be of type TopicPartition")
    if not isinstance(tp.topic, str) or not tp.topic:
        raise ValueError(f"Element of {what} must have a non-empty 'topic'")
    if tp.partition < 0:
        raise ValueError(f"Element of {what} must not have a negative 'partition'")


def partitions_by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
    """{topic: [partition, …]} of ``partitions``, in their order."""
    by_topic: dict[str, list[int]] = defaultdict(list)
    for tp in partitions:
        by_topic[tp.topic].append(tp.partition)
    return by_topic


class AdminCore:
    """One admin client's config, kernel, loop thread and operations in flight (see the module docstring).

    ``owner`` is the :class:`~mafka.client.admin.AdminClient` this core
    serves, held weakly: each operation holds it strongly until it finishes,
    so a client dropped with operations in flight is not collected (and its
    thread stopped by its ``__del__``) under them.
    """

    def __init__(self, config: ClientConfig, owner: object) -> None:
        self.config = config
        self.default_timeout: float = self.config["socket.timeout.ms"] / 1000.0
        self.request_timeout = self.config["request.timeout.ms"] / 1000.0
        self.backoff = self.config.get("retry.backoff.ms", 100) / 1000.0
        self.closed = False
        self._ops: set[asyncio.Task[Any]] = set()  # touched on the loop thread only
        self._owner = weakref.ref(owner)
        self.kernel = Kernel(self.config)  # first: a bad bootstrap.servers raises before a thread exists
        self.thread = LoopThread("mafka-admin")

    def _timeout(self, value: float | None) -> float | None:
        """``request_timeout`` in seconds → the bound for the whole operation (None = unbounded)."""
        if value is None:
            return self.default_timeout
        value = float(value)
        return None if value < 0 else value

    def _start(self, futures: Iterable[Future[Any]], work: Coroutine[Any, Any, None],
               timeout: float | None) -> None:
        """Runs ``work`` on the loop; whatever it leaves unresolved fails (see :meth:`_guard`)."""
        if self.closed:
            work.close()
            raise RuntimeError("AdminClient has been closed")
        self.thread.submit(self._guard(list(futures), work, timeout, self._owner()))

    async def _guard(self, futures: list[Future[Any]], work: Coroutine[Any, Any, None],
                     timeout: float | None, owner: object) -> None:
        # ``owner`` (the AdminClient) is only held, by this frame, until the operation ends.
        task = asyncio.current_task()
        assert task is not None
        self._ops.add(task)
        try:
            async with asyncio.timeout(timeout):
                await work
        except asyncio.CancelledError:
            if task.cancelling():
                # close() cancelled us (or the loop is stopping): nobody will answer now.
                for fut in futures:
                    fail(fut, KafkaException(KafkaError._DESTROY))
            else:
                # Not our cancellation: something we awaited was cancelled under us.
                for fut in futures:
                    fail(fut, KafkaException(KafkaError(KafkaError._FAIL, "request cancelled")))
        except Exception as exc:  # noqa: BLE001 - every failure must reach the futures
            error = kafka_exception(exc)
            for fut in futures:
                fail(fut, error)
        finally:
            self._ops.discard(task)
            # A broker that leaves a requested key out of its answer must not leave the
            # caller waiting forever.
            for fut in futures:
                fail(fut, KafkaException(KafkaError(KafkaError._FAIL, "no result in the broker's response")))

    @staticmethod
    def left(deadline: float | None, fallback: float) -> float:
        """Seconds to ``deadline`` (loop clock), at least a little; ``fallback`` if unbounded."""
        if deadline is None:
            return fallback
        return max(0.05, deadline - asyncio.get_running_loop().time())

    @staticmethod
    def _deadline(timeout: float | None) -> float | None:
        return None if timeout is None else asyncio.get_running_loop().time() + timeout

    def op_timeout_ms(self, operation_timeout: float | None, deadline: float | None) -> int:
        """The broker-side wait, trimmed so that the broker answers before our own deadline."""
        wait = self.default_timeout if operation_timeout is None else max(0.0, float(operation_timeout))
        if deadline is not None:
            wait = min(wait, max(0.0, deadline - asyncio.get_running_loop().time() - 1.0))
        return int(wait * 1000)

    async def each(self, futures: Mapping[Any, Future[Any]],
                   fn: Callable[[Any], Awaitable[Any]]) -> None:
        """Resolves ``futures[key]`` with ``await fn(key)`` for every key concurrently, each on its own."""

        async def one(key: Any) -> None:
            try:
                resolve(futures[key], await fn(key))
            except Exception as exc:  # noqa: BLE001 - reported through the future
                fail(futures[key], kafka_exception(exc))

        await asyncio.gather(*(one(key) for key in futures))

    async def refresh(self) -> None:
        """Refreshes metadata, tolerating an unreachable cluster (callers retry until their deadline)."""
        try:
            await self.kernel.refresh_metadata()
        except ConnectionError as exc:
            log.debug("metadata refresh failed: %s", exc)
            await asyncio.sleep(self.backoff)

    async def controller(self, fresh: bool) -> int:
        """The controller's node id (refreshing metadata first if ``fresh``, or until one is known)."""
        md = self.kernel.metadata
        while True:
            if not fresh and md.controller_id >= 0 and md.controller_id in md.brokers:
                return md.controller_id
            await self.refresh()
            fresh = False
            if md.controller_id < 0 or md.controller_id not in md.brokers:
                await asyncio.sleep(self.backoff)

    async def to_controller(self, api_key: int, names: list[str], futures: Mapping[str, Future[Any]],
                            deadline: float | None,
                            body: Callable[[list[str]], dict[str, Any]],
                            results: Callable[[Any], Iterable[tuple[str, int, str | None]]]) -> None:
        """Sends ``body(names)`` to the controller; resolves each name's future with None or its error.

        Names answered NOT_CONTROLLER (and all of them after a connection
        failure) are resent to the controller named by fresh metadata.
        """
        pending = list(names)
        fresh = False
        while pending:
            node = await self.controller(fresh)
            try:
                response = await self.kernel.send(
                    node, api_key, body(pending), timeout=self.left(deadline, self.request_timeout))
            except (ConnectionError, TimeoutError) as exc:
                log.debug("controller %s: %s; retrying", node, exc)
                fresh = True
                await asyncio.sleep(self.backoff)
                continue
            retry = []
            for name, code, message in results(response):
                if name not in futures or futures[name].done():
                    continue
                if code == ErrorCode.NOT_CONTROLLER:
                    retry.append(name)
                elif code:
                    fail(futures[name], code_error(code, message))
                else:
                    resolve(futures[name], None)
            pending = [n for n in retry if n in pending]
            if pending:
                fresh = True
                await asyncio.sleep(self.backoff)

    async def send_retrying(self, node: int | None, api_key: int, body: Any, deadline: float | None) -> Any:
        """Sends to ``node`` (None: any broker), resending after a connection failure until the deadline."""
        while True:
            try:
                timeout = self.left(deadline, self.request_timeout)
                if node is None:
                    return await self.kernel.send_any(api_key, body, timeout=timeout)
                return await self.kernel.send(node, api_key, body, timeout=timeout)
            except (ConnectionError, TimeoutError) as exc:
                log.debug("node %s: %s; retrying", node, exc)
                await asyncio.sleep(self.backoff)
                if node is not None:
                    await self.refresh()

    async def coordinated(self, group: str, call: Callable[[int], Awaitable[T]]) -> T:
        """``await call(coordinator)``, looking the coordinator up again while it moves or loads.

        ``call`` raises :mod:`mafka.errors` exceptions for error codes; those in
        :data:`COORDINATOR_RETRY` and connection failures are retried, others propagate.
        """
        while True:
            try:
                node = await self.kernel.find_coordinator(group)
                return await call(node)
            except BrokerError as exc:
                if exc.code not in COORDINATOR_RETRY:
                    raise
                log.debug("group %s: %s; retrying", group, exc.code.name)
            except (ConnectionError, TimeoutError) as exc:
                log.debug("group %s: %s; retrying", group, exc)
            await asyncio.sleep(self.backoff)

    async def to_leaders(self, keys: Iterable[TopicPartition], futures: Mapping[TopicPartition, Future[Any]],
                         deadline: float | None,
                         send: Callable[[int, list[TopicPartition]], Awaitable[dict[TopicPartition, tuple[int, Any]]]]
                         ) -> None:
        """Sends each partition's request to its leader; ``send(leader, tps)`` → {tp: (error code, result)}.

        Partitions whose topic or partition does not exist fail at once
        (UNKNOWN_TOPIC_OR_PARTITION / _UNKNOWN_PARTITION, as librdkafka);
        retriable answers (leadership moved, not yet available) and lost
        connections are retried after a metadata refresh until the deadline.
        """
        pending = set(keys)
        md = self.kernel.metadata
        md.want({tp.topic for tp in pending})
        while pending:
            # Always fresh: a topic created a moment ago, or a leader that moved, must be seen.
            await self.refresh()
            by_leader: dict[int, list[TopicPartition]] = defaultdict(list)
            for tp in list(pending):
                info = md.topics.get(tp.topic)
                if info is None:
                    continue  # metadata not fetched (cluster unreachable): retry
                if info.error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION or (info.error and not KafkaError(info.error).retriable()):
                    fail(futures[tp], code_error(info.error))
                    pending.discard(tp)
                    continue
                if info.error:
                    continue
                partition = info.partitions.get(tp.partition)
                if partition is None:
                    fail(futures[tp], KafkaException(KafkaError._UNKNOWN_PARTITION))
                    pending.discard(tp)
                    continue
                if partition.leader >= 0 and partition.leader in md.brokers:
                    by_leader[partition.leader].append(tp)
            leaders = list(by_leader)
            answers = await asyncio.gather(*(send(n, by_leader[n]) for n in leaders), return_exceptions=True)
            for leader, answer in zip(leaders, answers, strict=True):
                if isinstance(answer, BaseException):
                    if not isinstance(answer, (ConnectionError, TimeoutError)):
                        raise answer
                    log.debug("leader %s: %s; retrying", leader, answer)
                    continue
                for tp in by_leader[leader]:
                    code, result = answer.get(tp, (ErrorCode.UNKNOWN_SERVER_ERROR, None))
                    if code == 0:
                        resolve(futures[tp], result)
                        pending.discard(tp)
                    elif not KafkaError(code).retriable():
                        fail(futures[tp], code_error(code))
                        pending.discard(tp)
            if pending:
                md.request_update()
                await asyncio.sleep(self.backoff)

    async def controller_request(self, api_key: int, body: Callable[[], dict[str, Any]],
                                 deadline: float | None, not_controller: Callable[[Any], bool]) -> Any:
        """The controller's answer to ``body()``, sent again to the controller named by fresh
        metadata after a lost connection or while ``not_controller(response)`` (it moved)."""
        fresh = False
        while True:
            node = await self.controller(fresh)
            try:
                response = await self.kernel.send(node, api_key, body(),
                                                   timeout=self.left(deadline, self.request_timeout))
            except (ConnectionError, TimeoutError) as exc:
                log.debug("controller %s: %s; retrying", node, exc)
            else:
                if not not_controller(response):
                    return response
                log.debug("broker %s is no longer the controller; retrying", node)
            fresh = True
            await asyncio.sleep(self.backoff)

    def run(self, futures: Iterable[Future[Any]], work: Callable[[float | None], Coroutine[Any, Any, None]],
            request_timeout: float | None) -> None:
        """Starts ``work(deadline)`` on the loop thread, bounded by ``request_timeout`` (seconds).

        Raises:
            RuntimeError: the client has been closed.
        """
        timeout = self._timeout(request_timeout)

        async def bounded() -> None:
            await work(self._deadline(timeout))

        self._start(futures, bounded(), timeout)

    def check_open(self) -> None:
        """Raises RuntimeError once the client is closed (for the blocking calls)."""
        if self.closed:
            raise RuntimeError("AdminClient has been closed")

    async def _shutdown(self) -> None:
        ops = list(self._ops)
        for task in ops:
            task.cancel()
        if ops:
            await asyncio.gather(*ops, return_exceptions=True)
        await self.kernel.close()

    def close(self, timeout: float = 5.0) -> None:
        """Fails pending futures with _DESTROY, closes sockets and stops the thread (idempotent).

        Raises:
            RuntimeError: called from a future's done-callback, which runs on the
                client's own thread and would wait for itself.
        """
        if self.closed:
            return
        try:
            on_loop = asyncio.get_running_loop() is self.thread.loop
        except RuntimeError:
            on_loop = False
        if on_loop:
            raise RuntimeError("AdminClient.close() cannot be called from a future callback")
        self.closed = True
        try:
            self.thread.run(self._shutdown(), timeout=timeout)
        except (TimeoutError, RuntimeError):
            pass
        self.thread.stop(timeout)

