"""The synchronous admin client, shaped like confluent-kafka's ``AdminClient``.

Every operation returns at once with ``concurrent.futures.Future`` objects —
a dict keyed by topic, resource, group or partition, or one future — that a
private loop thread resolves: ``result()`` gives what confluent-kafka's
gives, or raises :class:`~mafka.client.kafka_error.KafkaException` carrying a
:class:`~mafka.client.kafka_error.KafkaError` (the broker's error code, or
``_TIMED_OUT`` when ``request_timeout`` passes, ``_TRANSPORT`` when no
broker could be reached, ``_DESTROY`` when the client is closed first).
Keys fail and succeed independently: one topic that already exists does not
fail the others.  Bad arguments raise ``TypeError`` / ``ValueError`` from the
call itself.  Futures cannot be cancelled and their callbacks run on the
client's loop thread, as confluent-kafka's run on librdkafka's.

Routing, as Kafka's clients do it:

* CreateTopics, DeleteTopics, CreatePartitions go to the controller named by
  Metadata; NOT_CONTROLLER (the controller moved) refreshes metadata and
  resends just the affected topics.
* DescribeConfigs / AlterConfigs / IncrementalAlterConfigs for a BROKER
  resource go to that broker (it alone knows its static config); everything
  else to any broker.
* Group operations go to the group's coordinator (FindCoordinator), retried
  while the coordinator is moving or loading.  ListGroups goes to every
  broker, since each lists only the groups it coordinates.
* ListOffsets and DeleteRecords go to each partition's leader, retried after
  a metadata refresh when leadership moved.

Timeouts are in seconds, as in confluent-kafka: ``request_timeout`` bounds
the whole operation (lookups, retries and the answer; default
``socket.timeout.ms``, negative = none) and ``operation_timeout`` is how long
the broker may wait for the change to take effect across the cluster
(default ``socket.timeout.ms``, librdkafka's default; 0 = answer at once).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import logging
from collections import defaultdict
from collections.abc import Awaitable, Callable, Coroutine, Iterable, Mapping
from typing import Any, TypeVar

from mafka.client.admin_types import (
    AlterConfigOpType,
    ConfigEntry,
    ConfigResource,
    ConfigSource,
    ConsumerGroupDescription,
    ConsumerGroupListing,
    ConsumerGroupState,
    ConsumerGroupTopicPartitions,
    ConsumerGroupType,
    DeletedRecords,
    DescribeClusterResult,
    ElectionType,
    GroupMember,
    GroupMetadata,
    IsolationLevel,
    ListConsumerGroupsResult,
    ListOffsetsResultInfo,
    MemberAssignment,
    MemberDescription,
    NewPartitions,
    NewTopic,
    OffsetSpec,
    PartitionReassignment,
    ResourceType,
)
from mafka.client.config import parse_config
from mafka.client.kafka_error import KafkaError, KafkaException, error_for
from mafka.client.kernel import Kernel
from mafka.client.loop_thread import LoopThread
from mafka.client.message import OFFSET_INVALID, TopicPartition
from mafka.client.metadata import BrokerInfo
from mafka.client.metadata_view import ClusterMetadataView, list_topics
from mafka.client.transport import UnsupportedByBroker
from mafka.errors import ErrorCode, raise_for_code
from mafka.errors import KafkaError as BrokerError
from mafka.group.consumer_protocol import decode_assignment

__all__ = [
    "AdminClient",
    "AlterConfigOpType",
    "BrokerInfo",
    "ConfigEntry",
    "ConfigResource",
    "ConfigSource",
    "ConsumerGroupDescription",
    "ConsumerGroupListing",
    "ConsumerGroupState",
    "ConsumerGroupTopicPartitions",
    "ConsumerGroupType",
    "DeletedRecords",
    "DescribeClusterResult",
    "ElectionType",
    "GroupMember",
    "GroupMetadata",
    "IsolationLevel",
    "ListConsumerGroupsResult",
    "ListOffsetsResultInfo",
    "MemberAssignment",
    "MemberDescription",
    "NewPartitions",
    "NewTopic",
    "OffsetSpec",
    "PartitionReassignment",
    "ResourceType",
]

log = logging.getLogger("mafka.client.admin")

T = TypeVar("T")
Future = concurrent.futures.Future

LIST_OFFSETS = 2
OFFSET_COMMIT = 8
OFFSET_FETCH = 9
DESCRIBE_GROUPS = 15
LIST_GROUPS = 16
CREATE_TOPICS = 19
DELETE_TOPICS = 20
DELETE_RECORDS = 21
DESCRIBE_CONFIGS = 32
ALTER_CONFIGS = 33
CREATE_PARTITIONS = 37
DELETE_GROUPS = 42
OFFSET_DELETE = 47
INCREMENTAL_ALTER_CONFIGS = 44
ELECT_LEADERS = 43
ALTER_PARTITION_REASSIGNMENTS = 45
LIST_PARTITION_REASSIGNMENTS = 46

# Errors after which a group request is resent to a (re-)looked-up coordinator.
_COORDINATOR_RETRY = frozenset({
    ErrorCode.NOT_COORDINATOR, ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
})
# ListGroups/DescribeGroups list these protocol types as consumer groups ("" = offsets only).
_CONSUMER_PROTOCOLS = ("consumer", "")


# -- futures and errors ---------------------------------------------------------------------------


def _new_future() -> Future[Any]:
    fut: Future[Any] = concurrent.futures.Future()
    # Running from the start, as confluent-kafka's: an admin request cannot be cancelled.
    fut.set_running_or_notify_cancel()
    return fut


def _resolve(fut: Future[Any], value: Any) -> None:
    if not fut.done():
        fut.set_result(value)


def _fail(fut: Future[Any], exc: BaseException) -> None:
    if not fut.done():
        fut.set_exception(exc)


def _error(code: int, message: str | None = None) -> KafkaException:
    """KafkaException for a broker error code; the broker's message if it sent one."""
    return KafkaException(KafkaError(code, message or None))


def _exception(exc: BaseException) -> KafkaException:
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


def _check_list(value: Any, what: str, kind: type | tuple[type, ...], noun: str) -> list[Any]:
    if not isinstance(value, list):
        raise TypeError(f"Expected list of {noun}")
    if not value:
        raise ValueError(f"Expected non-empty list of {noun}")
    for item in value:
        if not isinstance(item, kind):
            raise TypeError(f"Expected list of {noun}, got {type(item).__name__} in {what}")
    return value


def _no_duplicates(keys: Iterable[Any], what: str) -> None:
    seen = set()
    for key in keys:
        if key in seen:
            raise ValueError(f"duplicate {what}: {key}")
        seen.add(key)


def _check_partition(tp: Any, what: str) -> None:
    if not isinstance(tp, TopicPartition):
        raise TypeError(f"Element of {what} must be of type TopicPartition")
    if not isinstance(tp.topic, str) or not tp.topic:
        raise ValueError(f"Element of {what} must have a non-empty 'topic'")
    if tp.partition < 0:
        raise ValueError(f"Element of {what} must not have a negative 'partition'")


class AdminClient:
    """``AdminClient(conf)``: confluent-kafka's admin API over Mafka's pure-Python core.

    Use as a context manager or call :meth:`close`, which stops the client's
    thread and closes its sockets; futures still pending then fail with
    ``_DESTROY``.

    Raises:
        ConfigError (a ValueError): an unknown key, a bad value (named in the message).
    """

    def __init__(self, conf: Mapping[str, Any] | None = None, **kwargs: Any) -> None:
        settings = dict(conf or {})
        settings.update(kwargs)
        self._config = parse_config("admin", settings)
        self._default_timeout = self._config["socket.timeout.ms"] / 1000.0
        self._request_timeout = self._config["request.timeout.ms"] / 1000.0
        self._backoff = self._config.get("retry.backoff.ms", 100) / 1000.0
        self._closed = False
        self._ops: set[asyncio.Task[Any]] = set()  # touched on the loop thread only
        self._kernel = Kernel(self._config)  # first: a bad bootstrap.servers raises before a thread exists
        self._thread = LoopThread("mafka-admin")

    # -- plumbing -------------------------------------------------------------------------------

    def _timeout(self, value: float | None) -> float | None:
        """``request_timeout`` in seconds → the bound for the whole operation (None = unbounded)."""
        if value is None:
            return self._default_timeout
        value = float(value)
        return None if value < 0 else value

    def _start(self, futures: Iterable[Future[Any]], work: Coroutine[Any, Any, None],
               timeout: float | None) -> None:
        """Runs ``work`` on the loop; whatever it leaves unresolved fails (see :meth:`_guard`)."""
        if self._closed:
            work.close()
            raise RuntimeError("AdminClient has been closed")
        self._thread.submit(self._guard(list(futures), work, timeout))

    async def _guard(self, futures: list[Future[Any]], work: Coroutine[Any, Any, None],
                     timeout: float | None) -> None:
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
                    _fail(fut, KafkaException(KafkaError._DESTROY))
            else:
                # Not our cancellation: something we awaited was cancelled under us.
                for fut in futures:
                    _fail(fut, KafkaException(KafkaError(KafkaError._FAIL, "request cancelled")))
        except Exception as exc:  # noqa: BLE001 - every failure must reach the futures
            error = _exception(exc)
            for fut in futures:
                _fail(fut, error)
        finally:
            self._ops.discard(task)
            # A broker that leaves a requested key out of its answer must not leave the
            # caller waiting forever.
            for fut in futures:
                _fail(fut, KafkaException(KafkaError(KafkaError._FAIL, "no result in the broker's response")))

    @staticmethod
    def _left(deadline: float | None, fallback: float) -> float:
        """Seconds to ``deadline`` (loop clock), at least a little; ``fallback`` if unbounded."""
        if deadline is None:
            return fallback
        return max(0.05, deadline - asyncio.get_running_loop().time())

    @staticmethod
    def _deadline(timeout: float | None) -> float | None:
        return None if timeout is None else asyncio.get_running_loop().time() + timeout

    def _op_timeout_ms(self, operation_timeout: float | None, deadline: float | None) -> int:
        """The broker-side wait, trimmed so that the broker answers before our own deadline."""
        wait = self._default_timeout if operation_timeout is None else max(0.0, float(operation_timeout))
        if deadline is not None:
            wait = min(wait, max(0.0, deadline - asyncio.get_running_loop().time() - 1.0))
        return int(wait * 1000)

    async def _each(self, futures: Mapping[Any, Future[Any]],
                    fn: Callable[[Any], Awaitable[Any]]) -> None:
        """Resolves ``futures[key]`` with ``await fn(key)`` for every key concurrently, each on its own."""

        async def one(key: Any) -> None:
            try:
                _resolve(futures[key], await fn(key))
            except Exception as exc:  # noqa: BLE001 - reported through the future
                _fail(futures[key], _exception(exc))

        await asyncio.gather(*(one(key) for key in futures))

    async def _refresh(self) -> None:
        """Refreshes metadata, tolerating an unreachable cluster (callers retry until their deadline)."""
        try:
            await self._kernel.refresh_metadata()
        except ConnectionError as exc:
            log.debug("metadata refresh failed: %s", exc)
            await asyncio.sleep(self._backoff)

    async def _controller(self, fresh: bool) -> int:
        """The controller's node id (refreshing metadata first if ``fresh``, or until one is known)."""
        md = self._kernel.metadata
        while True:
            if not fresh and md.controller_id >= 0 and md.controller_id in md.brokers:
                return md.controller_id
            await self._refresh()
            fresh = False
            if md.controller_id < 0 or md.controller_id not in md.brokers:
                await asyncio.sleep(self._backoff)

    async def _to_controller(self, api_key: int, names: list[str], futures: Mapping[str, Future[Any]],
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
            node = await self._controller(fresh)
            try:
                response = await self._kernel.send(
                    node, api_key, body(pending), timeout=self._left(deadline, self._request_timeout))
            except (ConnectionError, TimeoutError) as exc:
                log.debug("controller %s: %s; retrying", node, exc)
                fresh = True
                await asyncio.sleep(self._backoff)
                continue
            retry = []
            for name, code, message in results(response):
                if name not in futures or futures[name].done():
                    continue
                if code == ErrorCode.NOT_CONTROLLER:
                    retry.append(name)
                elif code:
                    _fail(futures[name], _error(code, message))
                else:
                    _resolve(futures[name], None)
            pending = [n for n in retry if n in pending]
            if pending:
                fresh = True
                await asyncio.sleep(self._backoff)

    async def _send_retrying(self, node: int | None, api_key: int, body: Any, deadline: float | None) -> Any:
        """Sends to ``node`` (None: any broker), resending after a connection failure until the deadline."""
        while True:
            try:
                timeout = self._left(deadline, self._request_timeout)
                if node is None:
                    return await self._kernel.send_any(api_key, body, timeout=timeout)
                return await self._kernel.send(node, api_key, body, timeout=timeout)
            except (ConnectionError, TimeoutError) as exc:
                log.debug("node %s: %s; retrying", node, exc)
                await asyncio.sleep(self._backoff)
                if node is not None:
                    await self._refresh()

    async def _coordinated(self, group: str, call: Callable[[int], Awaitable[T]]) -> T:
        """``await call(coordinator)``, looking the coordinator up again while it moves or loads.

        ``call`` raises :mod:`mafka.errors` exceptions for error codes; those in
        :data:`_COORDINATOR_RETRY` and connection failures are retried, others propagate.
        """
        while True:
            try:
                node = await self._kernel.find_coordinator(group)
                return await call(node)
            except BrokerError as exc:
                if exc.code not in _COORDINATOR_RETRY:
                    raise
                log.debug("group %s: %s; retrying", group, exc.code.name)
            except (ConnectionError, TimeoutError) as exc:
                log.debug("group %s: %s; retrying", group, exc)
            await asyncio.sleep(self._backoff)

    async def _to_leaders(self, keys: Iterable[TopicPartition], futures: Mapping[TopicPartition, Future[Any]],
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
        md = self._kernel.metadata
        md.want({tp.topic for tp in pending})
        while pending:
            # Always fresh: a topic created a moment ago, or a leader that moved, must be seen.
            await self._refresh()
            by_leader: dict[int, list[TopicPartition]] = defaultdict(list)
            for tp in list(pending):
                info = md.topics.get(tp.topic)
                if info is None:
                    continue  # metadata not fetched (cluster unreachable): retry
                if info.error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION or (info.error and not KafkaError(info.error).retriable()):
                    _fail(futures[tp], _error(info.error))
                    pending.discard(tp)
                    continue
                if info.error:
                    continue
                partition = info.partitions.get(tp.partition)
                if partition is None:
                    _fail(futures[tp], KafkaException(KafkaError._UNKNOWN_PARTITION))
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
                        _resolve(futures[tp], result)
                        pending.discard(tp)
                    elif not KafkaError(code).retriable():
                        _fail(futures[tp], _error(code))
                        pending.discard(tp)
            if pending:
                md.request_update()
                await asyncio.sleep(self._backoff)

    # -- topics -------------------------------------------------------------------------------

    def create_topics(self, new_topics: list[NewTopic], operation_timeout: float | None = None,
                      request_timeout: float | None = None,
                      validate_only: bool = False) -> dict[str, Future[None]]:
        """Creates topics: {topic: Future(None)}; a failed topic's future raises KafkaException
        (TOPIC_ALREADY_EXISTS, INVALID_REPLICATION_FACTOR, INVALID_CONFIG, …).

        With ``operation_timeout`` > 0 the controller answers once every partition has a
        leader (or with REQUEST_TIMED_OUT when that takes longer); with 0 it answers at once.
        """
        _check_list(new_topics, "new_topics", NewTopic, "NewTopic objects")
        _no_duplicates((t.topic for t in new_topics), "topic")
        specs = {t.topic: t for t in new_topics}
        futures = {name: _new_future() for name in specs}

        def topic_body(t: NewTopic) -> dict[str, Any]:
            if t.replica_assignment:
                # Kafka wants -1/-1 with an explicit assignment; the assignment says it all.
                partitions, rf = -1, -1
                assignments = [{"partition_index": i, "broker_ids": [int(b) for b in brokers]}
                               for i, brokers in enumerate(t.replica_assignment)]
            else:
                partitions, rf, assignments = t.num_partitions, t.replication_factor, []
            return {
                "name": t.topic,
                "num_partitions": partitions,
                "replication_factor": rf,
                "assignments": assignments,
                "configs": [{"name": k, "value": None if v is None else str(v)} for k, v in t.config.items()],
            }

        async def work(deadline: float | None) -> None:
            await self._to_controller(
                CREATE_TOPICS, list(specs), futures, deadline,
                lambda names: {
                    "topics": [topic_body(specs[n]) for n in names],
                    "timeout_ms": self._op_timeout_ms(operation_timeout, deadline),
                    "validate_only": bool(validate_only),
                },
                lambda r: ((t.name, t.error_code, t.error_message) for t in r.topics),
            )

        self._run(futures.values(), work, request_timeout)
        return futures

    def delete_topics(self, topics: list[str], operation_timeout: float | None = None,
                      request_timeout: float | None = None) -> dict[str, Future[None]]:
        """Deletes topics: {topic: Future(None)}; an unknown topic's future raises
        KafkaException(UNKNOWN_TOPIC_OR_PARTITION)."""
        _check_list(topics, "topics", str, "topic names")
        _no_duplicates(topics, "topic")
        futures = {name: _new_future() for name in topics}

        async def work(deadline: float | None) -> None:
            await self._to_controller(
                DELETE_TOPICS, list(topics), futures, deadline,
                lambda names: {"topic_names": names, "timeout_ms": self._op_timeout_ms(operation_timeout, deadline)},
                lambda r: ((t.name, t.error_code, None) for t in r.responses),
            )

        self._run(futures.values(), work, request_timeout)
        return futures

    def create_partitions(self, new_partitions: list[NewPartitions], operation_timeout: float | None = None,
                          request_timeout: float | None = None,
                          validate_only: bool = False) -> dict[str, Future[None]]:
        """Grows topics to ``new_total_count`` partitions: {topic: Future(None)}
        (INVALID_PARTITIONS for a count that is not larger)."""
        _check_list(new_partitions, "new_partitions", NewPartitions, "NewPartitions objects")
        _no_duplicates((p.topic for p in new_partitions), "topic")
        specs = {p.topic: p for p in new_partitions}
        futures = {name: _new_future() for name in specs}

        def topic_body(p: NewPartitions) -> dict[str, Any]:
            assignments = None
            if p.replica_assignment:
                assignments = [{"broker_ids": [int(b) for b in brokers]} for brokers in p.replica_assignment]
            return {"name": p.topic, "count": p.new_total_count, "assignments": assignments}

        async def work(deadline: float | None) -> None:
            await self._to_controller(
                CREATE_PARTITIONS, list(specs), futures, deadline,
                lambda names: {
                    "topics": [topic_body(specs[n]) for n in names],
                    "timeout_ms": self._op_timeout_ms(operation_timeout, deadline),
                    "validate_only": bool(validate_only),
                },
                lambda r: ((t.name, t.error_code, t.error_message) for t in r.results),
            )

        self._run(futures.values(), work, request_timeout)
        return futures

    def list_topics(self, topic: str | None = None, timeout: float = -1) -> ClusterMetadataView:
        """Cluster metadata, confluent-kafka's ``ClusterMetadata`` shape (blocking).

        Raises:
            KafkaException: _TIMED_OUT / _TRANSPORT.
        """
        self._check_open()
        return list_topics(self._thread, self._kernel, topic, timeout)

    def describe_cluster(self, request_timeout: float | None = None) -> Future[DescribeClusterResult]:
        """Future(DescribeClusterResult(cluster_id, controller, nodes)), from a fresh Metadata answer."""
        fut = _new_future()

        async def work(deadline: float | None) -> None:
            md = self._kernel.metadata
            while True:
                try:
                    await self._kernel.refresh_metadata()
                    break
                except ConnectionError as exc:
                    log.debug("describe_cluster: %s; retrying", exc)
                    await asyncio.sleep(self._backoff)
            nodes = [md.brokers[i] for i in sorted(md.brokers)]
            _resolve(fut, DescribeClusterResult(md.brokers.get(md.controller_id), nodes, md.cluster_id))

        self._run([fut], work, request_timeout)
        return fut

    # -- configs ------------------------------------------------------------------------------

    def _config_target(self, resource: ConfigResource) -> int | None:
        """The broker a config request for ``resource`` must go to (None: any)."""
        if resource.restype != ResourceType.BROKER or resource.name == "":
            return None
        try:
            return int(resource.name)
        except ValueError:
            raise ValueError(f"broker resource name must be a broker id, not {resource.name!r}") from None

    def _config_request(self, api_key: int, resources: list[ConfigResource],
                        entry: Callable[[ConfigResource], dict[str, Any]],
                        extra: dict[str, Any],
                        outcome: Callable[[ConfigResource, Any], Any],
                        request_timeout: float | None) -> dict[ConfigResource, Future[Any]]:
        """One request per target broker carrying its resources; ``outcome(resource, result)``
        gives a resource's value from its entry in the response."""
        _check_list(resources, "resources", ConfigResource, "ConfigResource objects")
        _no_duplicates(resources, "resource")
        targets: dict[int | None, list[ConfigResource]] = defaultdict(list)
        for res in resources:
            targets[self._config_target(res)].append(res)
        futures = {res: _new_future() for res in resources}
        results_field = "results" if api_key == DESCRIBE_CONFIGS else "responses"

        async def to_target(node: int | None, group: list[ConfigResource], deadline: float | None) -> None:
            try:
                if node is not None and node not in self._kernel.metadata.brokers:
                    await self._refresh()
                    if node not in self._kernel.metadata.brokers:
                        for res in group:
                            _fail(futures[res], KafkaException(
                                KafkaError(KafkaError._INVALID_ARG, f"broker {node} is not in the cluster")))
                        return
                body = dict(extra, resources=[entry(res) for res in group])
                response = await self._send_retrying(node, api_key, body, deadline)
            except Exception as exc:  # noqa: BLE001 - reported through the futures
                for res in group:
                    _fail(futures[res], _exception(exc))
                return
            by_key = {res.restype_int: {} for res in group}
            for result in getattr(response, results_field):
                by_key.setdefault(result.resource_type, {})[result.resource_name] = result
            for res in group:
                result = by_key[res.restype_int].get(res.name)
                if result is None:
                    continue  # _guard fails it
                if result.error_code:
                    _fail(futures[res], _error(result.error_code, result.error_message))
                else:
                    _resolve(futures[res], outcome(res, result))

        async def work(deadline: float | None) -> None:
            await asyncio.gather(*(to_target(node, group, deadline) for node, group in targets.items()))

        self._run(futures.values(), work, request_timeout)
        return futures

    def describe_configs(self, resources: list[ConfigResource],
                         request_timeout: float | None = None) -> dict[ConfigResource, Future[dict[str, ConfigEntry]]]:
        """{resource: Future({name: ConfigEntry})}, synonyms included.

        TOPIC resources of unknown topics raise UNKNOWN_TOPIC_OR_PARTITION;
        BROKER resources are asked of that broker.
        """

        def entries(_: ConfigResource, result: Any) -> dict[str, ConfigEntry]:
            out = {}
            for c in result.configs:
                synonyms = {
                    s.name: ConfigEntry(s.name, s.value, source=s.source, is_synonym=True,
                                        is_sensitive=c.is_sensitive, is_read_only=c.read_only)
                    for s in c.synonyms
                }
                out[c.name] = ConfigEntry(
                    c.name, c.value, source=c.config_source, is_read_only=c.read_only,
                    is_default=c.config_source == ConfigSource.DEFAULT_CONFIG,
                    is_sensitive=c.is_sensitive, synonyms=synonyms,
                )
            return out

        return self._config_request(
            DESCRIBE_CONFIGS, resources,
            lambda res: {"resource_type": res.restype_int, "resource_name": res.name, "configuration_keys": None},
            {"include_synonyms": True}, entries, request_timeout,
        )

    def alter_configs(self, resources: list[ConfigResource], request_timeout: float | None = None,
                      validate_only: bool = False) -> dict[ConfigResource, Future[None]]:
        """Replaces each resource's whole dynamic config with its ``set_config_dict``:
        {resource: Future(None)}.  Keys left out revert to their defaults (Kafka's AlterConfigs)."""
        return self._config_request(
            ALTER_CONFIGS, resources,
            lambda res: {
                "resource_type": res.restype_int, "resource_name": res.name,
                "configs": [{"name": k, "value": None if v is None else str(v)}
                            for k, v in res.set_config_dict.items()],
            },
            {"validate_only": bool(validate_only)}, lambda res, result: None, request_timeout,
        )

    def incremental_alter_configs(self, resources: list[ConfigResource], request_timeout: float | None = None,
                                  validate_only: bool = False) -> dict[ConfigResource, Future[None]]:
        """Applies each resource's ``incremental_configs`` (ConfigEntry with ``incremental_operation``
        SET/DELETE/APPEND/SUBTRACT) and leaves other keys alone: {resource: Future(None)}.

        Raises:
            ValueError: a resource without operations, or an entry without ``incremental_operation``.
        """
        _check_list(resources, "resources", ConfigResource, "ConfigResource objects")
        for res in resources:
            if not res.incremental_configs:
                raise ValueError(f"{res!r} has no incremental_configs")
            for e in res.incremental_configs:
                if not isinstance(e, ConfigEntry) or not isinstance(e.incremental_operation, AlterConfigOpType):
                    raise ValueError("incremental_configs must be ConfigEntry objects with an incremental_operation")

        def entry(res: ConfigResource) -> dict[str, Any]:
            configs = []
            for e in res.incremental_configs:
                op = e.incremental_operation
                value = None if op == AlterConfigOpType.DELETE or e.value is None else str(e.value)
                configs.append({"name": e.name, "config_operation": op.value, "value": value})
            return {"resource_type": res.restype_int, "resource_name": res.name, "configs": configs}

        return self._config_request(
            INCREMENTAL_ALTER_CONFIGS, resources, entry,
            {"validate_only": bool(validate_only)}, lambda res, result: None, request_timeout,
        )

    # -- groups -------------------------------------------------------------------------------

    async def _groups_on(self, node: int, deadline: float | None) -> list[Any]:
        """Every group ``node`` coordinates, as DescribeGroups entries (ListGroups, then DescribeGroups)."""
        timeout = self._left(deadline, self._request_timeout)
        listed = await self._kernel.send(node, LIST_GROUPS, {}, timeout=timeout)
        raise_for_code(listed.error_code)
        ids = [g.group_id for g in listed.groups]
        if not ids:
            return []
        described = await self._kernel.send(node, DESCRIBE_GROUPS, {"groups": ids}, timeout=timeout)
        return list(described.groups)

    async def _all_brokers(self, deadline: float | None) -> list[int]:
        md = self._kernel.metadata
        await self._refresh()
        while not md.brokers:
            await self._refresh()
        return sorted(md.brokers)

    def list_consumer_groups(self, states: set[ConsumerGroupState] | None = None,
                             request_timeout: float | None = None) -> Future[ListConsumerGroupsResult]:
        """Future(ListConsumerGroupsResult): the consumer groups of every broker, with their states.

        ``states`` keeps only groups in those states.  A broker that cannot be
        asked adds a KafkaException to ``errors``; the others still list theirs.
        """
        if states is not None:
            if not isinstance(states, set):
                raise TypeError("'states' must be a set")
            for state in states:
                if not isinstance(state, ConsumerGroupState):
                    raise TypeError("All elements of states must be of type ConsumerGroupState")
        fut = _new_future()

        async def work(deadline: float | None) -> None:
            valid: list[ConsumerGroupListing] = []
            errors: list[Exception] = []
            nodes = await self._all_brokers(deadline)
            answers = await asyncio.gather(*(self._groups_on(n, deadline) for n in nodes), return_exceptions=True)
            for answer in answers:
                if isinstance(answer, BaseException):
                    if not isinstance(answer, Exception):
                        raise answer
                    errors.append(_exception(answer))
                    continue
                for g in answer:
                    if g.protocol_type not in _CONSUMER_PROTOCOLS:
                        continue
                    state = ConsumerGroupState.from_broker(g.group_state) if not g.error_code \
                        else ConsumerGroupState.UNKNOWN
                    if states and state not in states:
                        continue
                    valid.append(ConsumerGroupListing(g.group_id, g.protocol_type == "", state,
                                                      ConsumerGroupType.CLASSIC))
            _resolve(fut, ListConsumerGroupsResult(valid, errors))

        self._run([fut], work, request_timeout)
        return fut

    def list_groups(self, group: str | None = None, timeout: float = -1) -> list[GroupMetadata]:
        """The legacy, blocking group listing: GroupMetadata for every group (or just ``group``).

        Raises:
            KafkaException: _TIMED_OUT, or the error of the first broker that failed
                when none could be asked.
        """
        self._check_open()

        async def gather() -> list[GroupMetadata]:
            nodes = await self._all_brokers(None)
            answers = await asyncio.gather(*(self._groups_on(n, None) for n in nodes), return_exceptions=True)
            out = []
            failures = []
            for node, answer in zip(nodes, answers, strict=True):
                if isinstance(answer, BaseException):
                    failures.append(answer)
                    continue
                for g in answer:
                    if group is not None and g.group_id != group:
                        continue
                    meta = GroupMetadata()
                    meta.broker = self._kernel.metadata.brokers.get(node)
                    meta.id = g.group_id
                    meta.error = KafkaError(g.error_code) if g.error_code else None
                    meta.state = g.group_state
                    meta.protocol_type = g.protocol_type
                    meta.protocol = g.protocol_data
                    for m in g.members:
                        member = GroupMember()
                        member.id = m.member_id
                        member.client_id = m.client_id
                        member.client_host = m.client_host
                        member.metadata = bytes(m.member_metadata)
                        member.assignment = bytes(m.member_assignment)
                        meta.members.append(member)
                    out.append(meta)
            if failures and len(failures) == len(nodes):
                raise failures[0]
            return out

        wait = None if timeout is None or timeout < 0 else float(timeout)
        try:
            return self._thread.run(gather(), timeout=wait if wait is not None else self._default_timeout)
        except TimeoutError:
            raise KafkaException(KafkaError._TIMED_OUT) from None
        except Exception as exc:  # noqa: BLE001 - confluent-kafka raises only KafkaException here
            raise _exception(exc) from None

    def _description(self, g: Any, node: int) -> ConsumerGroupDescription:
        consumer = g.protocol_type == "consumer"
        members = []
        for m in g.members:
            tps: list[TopicPartition] = []
            if consumer and m.member_assignment:
                try:
                    assigned = decode_assignment(m.member_assignment).assigned_partitions
                    tps = [TopicPartition(t, p) for t, ps in assigned.items() for p in ps]
                except ValueError:
                    # Not the consumer protocol's layout after all: report no assignment.
                    log.debug("group %s member %s: undecodable assignment", g.group_id, m.member_id)
            members.append(MemberDescription(m.member_id, m.client_id, m.client_host, MemberAssignment(tps),
                                             m.group_instance_id or None))
        return ConsumerGroupDescription(
            g.group_id, g.protocol_type == "", members, g.protocol_data,
            ConsumerGroupState.from_broker(g.group_state), self._kernel.metadata.brokers.get(node),
        )

    def describe_consumer_groups(self, group_ids: list[str], request_timeout: float | None = None
                                 ) -> dict[str, Future[ConsumerGroupDescription]]:
        """{group: Future(ConsumerGroupDescription)} from each group's coordinator.

        A group that does not exist is described as DEAD with no members (the broker's answer).
        """
        return self._describe_groups(group_ids, self._description, request_timeout)

    def delete_consumer_groups(self, group_ids: list[str], request_timeout: float | None = None
                               ) -> dict[str, Future[None]]:
        """{group: Future(None)}; GROUP_ID_NOT_FOUND / NON_EMPTY_GROUP (it has members) on failure."""
        _check_list(group_ids, "group_ids", str, "group ids")
        _no_duplicates(group_ids, "group id")
        futures = {g: _new_future() for g in group_ids}

        async def delete(group: str) -> None:
            async def call(node: int) -> None:
                response = await self._kernel.send(node, DELETE_GROUPS, {"groups_names": [group]})
                for r in response.results:
                    if r.group_id == group:
                        raise_for_code(r.error_code)
                        return
                raise_for_code(ErrorCode.UNKNOWN_SERVER_ERROR, f"group {group} missing from the response")

            await self._coordinated(group, call)

        async def work(deadline: float | None) -> None:
            await self._each(futures, delete)

        self._run(futures.values(), work, request_timeout)
        return futures

    @staticmethod
    def _check_group_requests(requests: Any, alter: bool) -> list[ConsumerGroupTopicPartitions]:
        if not isinstance(requests, list):
            raise TypeError("request must be a list")
        if not requests:
            raise ValueError("request must not be empty")
        for req in requests:
            if not isinstance(req, ConsumerGroupTopicPartitions):
                raise TypeError("Expected list of 'ConsumerGroupTopicPartitions'")
            if not isinstance(req.group_id, str):
                raise TypeError("'group_id' must be a string")
            if not req.group_id:
                raise ValueError("'group_id' cannot be empty")
            tps = req.topic_partitions
            if tps is None:
                if alter:
                    raise ValueError("'topic_partitions' cannot be null")
                continue
            if not isinstance(tps, list):
                raise TypeError("'topic_partitions' must be a list")
            if not tps:
                raise ValueError("'topic_partitions' cannot be empty")
            for tp in tps:
                _check_partition(tp, "'topic_partitions'")
                if alter and tp.offset < 0:
                    raise ValueError("Element of 'topic_partitions' must not have negative value for 'offset' field")
                if not alter and tp.offset != OFFSET_INVALID:
                    raise ValueError("Element of 'topic_partitions' must not have 'offset' value")
        _no_duplicates((r.group_id for r in requests), "group id")
        return requests

    def list_consumer_group_offsets(self, requests: list[ConsumerGroupTopicPartitions],
                                    request_timeout: float | None = None
                                    ) -> dict[str, Future[ConsumerGroupTopicPartitions]]:
        """{group: Future(ConsumerGroupTopicPartitions(group, [TopicPartition with offset]))}.

        ``topic_partitions`` None asks for every partition with a committed
        offset.  A partition without one has offset OFFSET_INVALID; a
        partition's own error is in its ``error``.
        """
        self._check_group_requests(requests, alter=False)
        wanted = {r.group_id: r.topic_partitions for r in requests}
        futures = {g: _new_future() for g in wanted}

        async def fetch(group: str) -> ConsumerGroupTopicPartitions:
            tps = wanted[group]
            topics = None
            if tps is not None:
                by_topic: dict[str, list[int]] = defaultdict(list)
                for tp in tps:
                    by_topic[tp.topic].append(tp.partition)
                topics = [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]

            async def call(node: int) -> ConsumerGroupTopicPartitions:
                # One group per request, in the shape of v1–7 and of v8+ (``groups``).
                body = {"group_id": group, "topics": topics, "groups": [{"group_id": group, "topics": topics}]}
                response = await self._kernel.send(node, OFFSET_FETCH, body)
                if response.groups:  # v8+
                    response = next((g for g in response.groups if g.group_id == group), None)
                    if response is None:
                        raise_for_code(ErrorCode.UNKNOWN_SERVER_ERROR, f"group {group} missing from the response")
                raise_for_code(response.error_code)
                found = []
                for t in response.topics:
                    for p in t.partitions:
                        if p.error_code in _COORDINATOR_RETRY:
                            raise_for_code(p.error_code)  # v1 reports group errors per partition
                        tp = TopicPartition(t.name, p.partition_index,
                                            p.committed_offset if p.committed_offset >= 0 else OFFSET_INVALID,
                                            p.metadata or None)
                        tp.error = KafkaError(p.error_code) if p.error_code else None
                        found.append(tp)
                if tps is not None:
                    # The order the caller asked in, as confluent-kafka returns it.
                    index = {tp: tp for tp in found}
                    found = [index.get(TopicPartition(tp.topic, tp.partition))
                             or TopicPartition(tp.topic, tp.partition, OFFSET_INVALID) for tp in tps]
                return ConsumerGroupTopicPartitions(group, found)

            return await self._coordinated(group, call)

        async def work(deadline: float | None) -> None:
            await self._each(futures, fetch)

        self._run(futures.values(), work, request_timeout)
        return futures

    def alter_consumer_group_offsets(self, requests: list[ConsumerGroupTopicPartitions],
                                     request_timeout: float | None = None
                                     ) -> dict[str, Future[ConsumerGroupTopicPartitions]]:
        """Commits the given offsets for groups that have no active member:
        {group: Future(ConsumerGroupTopicPartitions)} whose partitions carry their own
        ``error`` (e.g. UNKNOWN_MEMBER_ID while the group has members), as confluent-kafka's.
        """
        self._check_group_requests(requests, alter=True)
        wanted = {r.group_id: r.topic_partitions for r in requests}
        futures = {g: _new_future() for g in wanted}

        async def commit(group: str) -> ConsumerGroupTopicPartitions:
            tps = wanted[group]
            by_topic: dict[str, list[dict[str, Any]]] = defaultdict(list)
            for tp in tps:
                by_topic[tp.topic].append({"partition_index": tp.partition, "committed_offset": tp.offset,
                                           "committed_metadata": tp.metadata})
            body = {
                # generation -1 and no member id: an admin commit, accepted only while the
                # group has no active members (Kafka's rule).
                "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
                "retention_time_ms": -1,
                "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
            }

            async def call(node: int) -> ConsumerGroupTopicPartitions:
                response = await self._kernel.send(node, OFFSET_COMMIT, body)
                errors = {}
                for t in response.topics:
                    for p in t.partitions:
                        if p.error_code in _COORDINATOR_RETRY:
                            raise_for_code(p.error_code)
                        errors[(t.name, p.partition_index)] = p.error_code
                out = []
                for tp in tps:
                    res = TopicPartition(tp.topic, tp.partition, tp.offset, tp.metadata)
                    code = errors.get((tp.topic, tp.partition), ErrorCode.UNKNOWN_SERVER_ERROR)
                    res.error = KafkaError(code) if code else None
                    out.append(res)
                return ConsumerGroupTopicPartitions(group, out)

            return await self._coordinated(group, call)

        async def work(deadline: float | None) -> None:
            await self._each(futures, commit)

        self._run(futures.values(), work, request_timeout)
        return futures

    def delete_consumer_group_offsets(self, requests: list[ConsumerGroupTopicPartitions],
                                      request_timeout: float | None = None
                                      ) -> dict[str, Future[ConsumerGroupTopicPartitions]]:
        """Deletes committed offsets (OffsetDelete, KIP-496; Kafka's ``deleteConsumerGroupOffsets``):
        {group: Future(ConsumerGroupTopicPartitions)} whose partitions carry their own ``error``
        (GROUP_SUBSCRIBED_TO_TOPIC for a topic the group's members consume,
        UNKNOWN_TOPIC_OR_PARTITION).  A group-level error (GROUP_ID_NOT_FOUND,
        NON_EMPTY_GROUP …) fails the future.  ``topic_partitions`` must be a list (it may be
        empty, as Kafka's: the answer is then only the group's error).
        """
        if not isinstance(requests, list) or not requests:
            raise ValueError("request must be a non-empty list")
        for r in requests:
            if not isinstance(r, ConsumerGroupTopicPartitions):
                raise TypeError("Expected list of 'ConsumerGroupTopicPartitions'")
            if not isinstance(r.group_id, str) or not r.group_id:
                raise ValueError("'group_id' must be a non-empty string")
            if not isinstance(r.topic_partitions, list):
                raise TypeError("'topic_partitions' must be a list")
            for tp in r.topic_partitions:
                _check_partition(tp, "'topic_partitions'")
        _no_duplicates((r.group_id for r in requests), "group id")
        wanted = {r.group_id: r.topic_partitions for r in requests}
        futures = {g: _new_future() for g in wanted}

        async def delete(group: str) -> ConsumerGroupTopicPartitions:
            tps = wanted[group]
            body = {"group_id": group, "topics": [
                {"name": t, "partitions": [{"partition_index": p} for p in ps]}
                for t, ps in self._by_topic(tps).items()]}

            async def call(node: int) -> ConsumerGroupTopicPartitions:
                response = await self._kernel.send(node, OFFSET_DELETE, body)
                raise_for_code(response.error_code)
                errors = {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}
                if any(code in _COORDINATOR_RETRY for code in errors.values()):
                    raise_for_code(next(c for c in errors.values() if c in _COORDINATOR_RETRY))
                out = []
                for tp in tps:
                    res = TopicPartition(tp.topic, tp.partition)
                    code = errors.get((tp.topic, tp.partition), ErrorCode.UNKNOWN_SERVER_ERROR)
                    res.error = KafkaError(code) if code else None
                    out.append(res)
                return ConsumerGroupTopicPartitions(group, out)

            return await self._coordinated(group, call)

        async def work(deadline: float | None) -> None:
            await self._each(futures, delete)

        self._run(futures.values(), work, request_timeout)
        return futures

    # -- offsets and records ------------------------------------------------------------------

    def list_offsets(self, topic_partition_offsets: dict[TopicPartition, OffsetSpec],
                     isolation_level: IsolationLevel | None = None,
                     request_timeout: float | None = None) -> dict[TopicPartition, Future[ListOffsetsResultInfo]]:
        """{TopicPartition: Future(ListOffsetsResultInfo(offset, timestamp, leader_epoch))} from each leader.

        ``OffsetSpec.max_timestamp()`` (the record with the largest timestamp,
        KIP-734) needs ListOffsets v7: against a leader that lacks it the
        future raises KafkaException(UNSUPPORTED_VERSION).
        """
        if not isinstance(topic_partition_offsets, dict):
            raise TypeError("Expected topic_partition_offsets to be dict of [TopicPartition, OffsetSpec]")
        for tp, spec in topic_partition_offsets.items():
            _check_partition(tp, "topic_partition_offsets")
            if not isinstance(spec, OffsetSpec):
                raise TypeError("Value must be a OffsetSpec")
        if isolation_level is not None and not isinstance(isolation_level, IsolationLevel):
            raise TypeError("isolation_level argument should be an IsolationLevel")
        level = (isolation_level or IsolationLevel.READ_UNCOMMITTED).value
        futures: dict[TopicPartition, Future[Any]] = {tp: _new_future() for tp in topic_partition_offsets}
        specs = {tp: spec._value for tp, spec in topic_partition_offsets.items()}
        max_timestamp = OffsetSpec.max_timestamp()._value

        async def work(deadline: float | None) -> None:
            async def send(node: int, tps: list[TopicPartition]) -> dict[TopicPartition, tuple[int, Any]]:
                unsupported: dict[TopicPartition, tuple[int, Any]] = {}
                if any(specs[tp] == max_timestamp for tp in tps):
                    await self._kernel.connection(node)
                    if (self._kernel.version(node, LIST_OFFSETS) or 0) < 7:
                        unsupported = {tp: (ErrorCode.UNSUPPORTED_VERSION, None)
                                       for tp in tps if specs[tp] == max_timestamp}
                        tps = [tp for tp in tps if tp not in unsupported]
                        if not tps:
                            return unsupported
                by_topic: dict[str, list[dict[str, int]]] = defaultdict(list)
                for tp in tps:
                    by_topic[tp.topic].append({"partition_index": tp.partition, "timestamp": specs[tp]})
                body = {"replica_id": -1, "isolation_level": level,
                        "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}
                response = await self._kernel.send(node, LIST_OFFSETS, body,
                                                   timeout=self._left(deadline, self._request_timeout))
                return {
                    TopicPartition(t.name, p.partition_index):
                        (p.error_code, ListOffsetsResultInfo(p.offset, p.timestamp, p.leader_epoch))
                    for t in response.topics for p in t.partitions
                } | unsupported

            await self._to_leaders(specs, futures, deadline, send)

        self._run(futures.values(), work, request_timeout)
        return futures

    def delete_records(self, topic_partition_offsets: list[TopicPartition],
                       request_timeout: float | None = None,
                       operation_timeout: float | None = None) -> dict[TopicPartition, Future[DeletedRecords]]:
        """Deletes records before each ``offset`` (OFFSET_END, -1: all of them), at each leader:
        {TopicPartition: Future(DeletedRecords(low_watermark))}.  OFFSET_OUT_OF_RANGE
        for an offset past the end."""
        if not isinstance(topic_partition_offsets, list):
            raise TypeError(f"Expected Request to be a list, got '{type(topic_partition_offsets).__name__}'")
        for tp in topic_partition_offsets:
            _check_partition(tp, "the request list")
        _no_duplicates(topic_partition_offsets, "partition")
        offsets = {tp: tp.offset for tp in topic_partition_offsets}
        futures: dict[TopicPartition, Future[Any]] = {tp: _new_future() for tp in topic_partition_offsets}

        async def work(deadline: float | None) -> None:
            async def send(node: int, tps: list[TopicPartition]) -> dict[TopicPartition, tuple[int, Any]]:
                by_topic: dict[str, list[dict[str, int]]] = defaultdict(list)
                for tp in tps:
                    by_topic[tp.topic].append({"partition_index": tp.partition, "offset": offsets[tp]})
                body = {"topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
                        "timeout_ms": self._op_timeout_ms(operation_timeout, deadline)}
                response = await self._kernel.send(node, DELETE_RECORDS, body,
                                                   timeout=self._left(deadline, self._request_timeout))
                return {
                    TopicPartition(t.name, p.partition_index): (p.error_code, DeletedRecords(p.low_watermark))
                    for t in response.topics for p in t.partitions
                }

            await self._to_leaders(offsets, futures, deadline, send)

        self._run(futures.values(), work, request_timeout)
        return futures

    # -- groups of any protocol type --------------------------------------------------------------

    def _group_metadata(self, g: Any, node: int) -> GroupMetadata:
        meta = GroupMetadata()
        meta.broker = self._kernel.metadata.brokers.get(node)
        meta.id = g.group_id
        meta.error = KafkaError(g.error_code) if g.error_code else None
        meta.state = g.group_state
        meta.protocol_type = g.protocol_type
        meta.protocol = g.protocol_data
        for m in g.members:
            member = GroupMember()
            member.id = m.member_id
            member.group_instance_id = getattr(m, "group_instance_id", None) or None
            member.client_id = m.client_id
            member.client_host = m.client_host
            member.metadata = bytes(m.member_metadata)
            member.assignment = bytes(m.member_assignment)
            meta.members.append(member)
        return meta

    def describe_groups(self, group_ids: list[str], request_timeout: float | None = None
                        ) -> dict[str, Future[GroupMetadata]]:
        """{group: Future(GroupMetadata)}: DescribeGroups at each group's coordinator, as the broker
        answers it, whatever the group's protocol type (``consumer``, ``connect``, ``""`` …).

        The legacy :meth:`list_groups` shape: ``broker`` is the coordinator, ``state`` the
        broker's string, ``protocol_type`` and ``protocol`` as sent, members with their raw
        ``metadata`` / ``assignment`` bytes and ``group_instance_id``.  What tools such as
        ``kafka-consumer-groups`` need beyond :meth:`describe_consumer_groups` (which decodes
        assignments and reports only consumer groups' details).  A group that does not
        exist is described with state ``Dead``; coordinator errors are retried.
        """
        return self._describe_groups(group_ids, self._group_metadata, request_timeout)

    def _describe_groups(self, group_ids: list[str], convert: Callable[[Any, int], Any],
                         request_timeout: float | None) -> dict[str, Future[Any]]:
        """DescribeGroups at each group's coordinator; ``convert(group, node)`` shapes each answer."""
        _check_list(group_ids, "group_ids", str, "group ids")
        _no_duplicates(group_ids, "group id")
        futures = {g: _new_future() for g in group_ids}

        async def describe(group: str) -> Any:
            async def call(node: int) -> Any:
                response = await self._kernel.send(node, DESCRIBE_GROUPS, {"groups": [group]})
                for g in response.groups:
                    if g.group_id == group:
                        raise_for_code(g.error_code)
                        return convert(g, node)
                raise_for_code(ErrorCode.UNKNOWN_SERVER_ERROR, f"group {group} missing from the response")
                raise AssertionError("unreachable")

            return await self._coordinated(group, call)

        async def work(deadline: float | None) -> None:
            await self._each(futures, describe)

        self._run(futures.values(), work, request_timeout)
        return futures

    # -- leaders and reassignments (answered by the controller) ----------------------------------

    async def _controller_request(self, api_key: int, body: Callable[[], dict[str, Any]],
                                  deadline: float | None, not_controller: Callable[[Any], bool]) -> Any:
        """The controller's answer to ``body()``, sent again to the controller named by fresh
        metadata after a lost connection or while ``not_controller(response)`` (it moved)."""
        fresh = False
        while True:
            node = await self._controller(fresh)
            try:
                response = await self._kernel.send(node, api_key, body(),
                                                   timeout=self._left(deadline, self._request_timeout))
            except (ConnectionError, TimeoutError) as exc:
                log.debug("controller %s: %s; retrying", node, exc)
            else:
                if not not_controller(response):
                    return response
                log.debug("broker %s is no longer the controller; retrying", node)
            fresh = True
            await asyncio.sleep(self._backoff)

    @staticmethod
    def _by_topic(partitions: Iterable[TopicPartition]) -> dict[str, list[int]]:
        by_topic: dict[str, list[int]] = defaultdict(list)
        for tp in partitions:
            by_topic[tp.topic].append(tp.partition)
        return by_topic

    def elect_leaders(self, election_type: ElectionType, partitions: list[TopicPartition] | None = None,
                      request_timeout: float | None = None, operation_timeout: float | None = None
                      ) -> Future[dict[TopicPartition, KafkaException | None]]:
        """Elects the preferred (or, UNCLEAN, any live) replica leader of ``partitions``
        (None: every partition of the cluster), at the controller; confluent-kafka's.

        Future({TopicPartition: None if elected, else KafkaException}) — e.g.
        ELECTION_NOT_NEEDED when the preferred replica already leads,
        PREFERRED_LEADER_NOT_AVAILABLE, UNKNOWN_TOPIC_OR_PARTITION.  The future itself
        fails only for an error of the whole request.  ``operation_timeout`` is how long
        the controller may wait for the elections to complete.
        """
        if not isinstance(election_type, ElectionType):
            raise TypeError("Expected 'election_type' to be of type 'ElectionType'")
        if partitions is not None:
            if not isinstance(partitions, list):
                raise TypeError(f"Expected 'partitions' to be a list, got '{type(partitions).__name__}'")
            for tp in partitions:
                _check_partition(tp, "'partitions'")
            _no_duplicates(partitions, "partition")
        topic_partitions = None if partitions is None else [
            {"topic": t, "partitions": ps} for t, ps in self._by_topic(partitions).items()]
        fut: Future[Any] = _new_future()

        def not_controller(r: Any) -> bool:
            return getattr(r, "error_code", 0) == ErrorCode.NOT_CONTROLLER or any(
                p.error_code == ErrorCode.NOT_CONTROLLER for t in r.replica_election_results for p in t.partition_result)

        async def work(deadline: float | None) -> None:
            response = await self._controller_request(
                ELECT_LEADERS,
                lambda: {"election_type": election_type.value, "topic_partitions": topic_partitions,
                         "timeout_ms": self._op_timeout_ms(operation_timeout, deadline)},
                deadline, not_controller)
            code = getattr(response, "error_code", 0)  # v1+
            if code:
                _fail(fut, _error(code))
                return
            results: dict[TopicPartition, KafkaException | None] = {}
            for t in response.replica_election_results:
                for p in t.partition_result:
                    results[TopicPartition(t.topic, p.partition_id)] = (
                        _error(p.error_code, p.error_message) if p.error_code else None)
            _resolve(fut, results)

        self._run([fut], work, request_timeout)
        return fut

    def alter_partition_reassignments(self, reassignments: dict[TopicPartition, list[int] | None],
                                      request_timeout: float | None = None) -> dict[TopicPartition, Future[None]]:
        """Starts (or changes) the reassignment of each partition to its list of target
        replicas, or cancels it for None, at the controller (Java's ``alterPartitionReassignments``):
        {TopicPartition: Future(None)}, failing with the partition's error
        (UNKNOWN_TOPIC_OR_PARTITION, INVALID_REPLICA_ASSIGNMENT, NO_REASSIGNMENT_IN_PROGRESS …)."""
        if not isinstance(reassignments, dict):
            raise TypeError("Expected 'reassignments' to be a dict of [TopicPartition, list of broker ids or None]")
        if not reassignments:
            raise ValueError("Expected non-empty dict of reassignments")
        for tp, replicas in reassignments.items():
            _check_partition(tp, "'reassignments'")
            if replicas is not None:
                if not isinstance(replicas, list) or not all(isinstance(b, int) for b in replicas):
                    raise TypeError("Target replicas must be a list of broker ids (int) or None")
        targets = dict(reassignments)
        futures: dict[TopicPartition, Future[Any]] = {tp: _new_future() for tp in targets}
        by_topic: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for tp, replicas in targets.items():
            by_topic[tp.topic].append({"partition_index": tp.partition,
                                       "replicas": None if replicas is None else list(replicas)})

        async def work(deadline: float | None) -> None:
            response = await self._controller_request(
                ALTER_PARTITION_REASSIGNMENTS,
                lambda: {"timeout_ms": self._op_timeout_ms(None, deadline),
                         "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]},
                deadline, lambda r: r.error_code == ErrorCode.NOT_CONTROLLER)
            if response.error_code:
                error = _error(response.error_code, response.error_message)
                for f in futures.values():
                    _fail(f, error)
                return
            for t in response.responses:
                for p in t.partitions:
                    f = futures.get(TopicPartition(t.name, p.partition_index))
                    if f is None:
                        continue
                    if p.error_code:
                        _fail(f, _error(p.error_code, p.error_message))
                    else:
                        _resolve(f, None)

        self._run(futures.values(), work, request_timeout)
        return futures

    def list_partition_reassignments(self, partitions: list[TopicPartition] | None = None,
                                     request_timeout: float | None = None
                                     ) -> Future[dict[TopicPartition, PartitionReassignment]]:
        """The reassignments in flight, of ``partitions`` or (None) of the whole cluster, at the
        controller (Java's ``listPartitionReassignments``):
        Future({TopicPartition: PartitionReassignment}); partitions not moving are left out."""
        if partitions is not None:
            if not isinstance(partitions, list):
                raise TypeError(f"Expected 'partitions' to be a list, got '{type(partitions).__name__}'")
            for tp in partitions:
                _check_partition(tp, "'partitions'")
        topics = None if partitions is None else [
            {"name": t, "partition_indexes": ps} for t, ps in self._by_topic(partitions).items()]
        fut: Future[Any] = _new_future()

        async def work(deadline: float | None) -> None:
            response = await self._controller_request(
                LIST_PARTITION_REASSIGNMENTS,
                lambda: {"timeout_ms": self._op_timeout_ms(None, deadline), "topics": topics},
                deadline, lambda r: r.error_code == ErrorCode.NOT_CONTROLLER)
            if response.error_code:
                _fail(fut, _error(response.error_code, response.error_message))
                return
            _resolve(fut, {
                TopicPartition(t.name, p.partition_index):
                    PartitionReassignment(list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
                for t in response.topics for p in t.partitions
            })

        self._run([fut], work, request_timeout)
        return fut

    # -- lifecycle ----------------------------------------------------------------------------

    def _run(self, futures: Iterable[Future[Any]], work: Callable[[float | None], Coroutine[Any, Any, None]],
             request_timeout: float | None) -> None:
        timeout = self._timeout(request_timeout)

        async def bounded() -> None:
            await work(self._deadline(timeout))

        self._start(futures, bounded(), timeout)

    def _check_open(self) -> None:
        if self._closed:
            raise RuntimeError("AdminClient has been closed")

    def poll(self, timeout: float | None = None) -> int:
        """Serves callbacks, as confluent-kafka's: there are none here (results come by future); returns 0."""
        return 0

    async def _shutdown(self) -> None:
        ops = list(self._ops)
        for task in ops:
            task.cancel()
        if ops:
            await asyncio.gather(*ops, return_exceptions=True)
        await self._kernel.close()

    def close(self, timeout: float = 5.0) -> None:
        """Fails pending futures with _DESTROY, closes sockets and stops the thread (idempotent).

        Raises:
            RuntimeError: called from a future's done-callback, which runs on the
                client's own thread and would wait for itself.
        """
        if self._closed:
            return
        try:
            on_loop = asyncio.get_running_loop() is self._thread.loop
        except RuntimeError:
            on_loop = False
        if on_loop:
            raise RuntimeError("AdminClient.close() cannot be called from a future callback")
        self._closed = True
        try:
            self._thread.run(self._shutdown(), timeout=timeout)
        except (TimeoutError, RuntimeError):
            pass
        self._thread.stop(timeout)

    def __enter__(self) -> AdminClient:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __del__(self) -> None:
        try:
            if not self._closed:
                self._thread.stop(1.0)
        except Exception:  # noqa: BLE001 - interpreter teardown
            pass
