"""Kafka 3.0's transaction ``Admin`` calls (KIP-664), for ``mafka transactions``, over :class:`~mafka.client.kernel.Kernel`.

Each coroutine of :class:`TransactionsAdmin` follows one ``KafkaAdminClient`` call and
its ``AdminApiHandler`` — where the request goes (lookup strategy), what it carries and
which errors end it:

* :meth:`~TransactionsAdmin.list_transactions`: ListTransactions to every broker of the
  metadata (``AllBrokersStrategy``); COORDINATOR_LOAD_IN_PROGRESS is retried,
  COORDINATOR_NOT_AVAILABLE ("shutting down") and any other error fail the call.
* :meth:`~TransactionsAdmin.describe_transactions`: FindCoordinator (key type 1) per
  id, then DescribeTransactions there (``CoordinatorStrategy``); NOT_COORDINATOR and
  COORDINATOR_NOT_AVAILABLE look the coordinator up again, COORDINATOR_LOAD_IN_PROGRESS
  retries, TRANSACTIONAL_ID_NOT_FOUND and any other error fail that id.
* :meth:`~TransactionsAdmin.describe_producers`: DescribeProducers at each partition's
  leader (``PartitionLeaderStrategy``), or at one broker when ``broker_id`` is given
  (``StaticBrokerStrategy``, where NOT_LEADER_OR_FOLLOWER is final).
* :meth:`~TransactionsAdmin.abort_transaction`: one WriteTxnMarkers (ABORT) for one
  partition at its leader (``AbortTransactionHandler``): the marker a coordinator
  would write, sent by an operator for a transaction no coordinator will finish.
* :meth:`~TransactionsAdmin.describe_topics`: the topics' partitions and replicas
  from Metadata (``find-hanging`` searches them).

Retriable outcomes — including lost connections, unknown topics, partitions without a
leader and metadata naming partitions that do not exist, as Kafka's lookups keep
waiting for them — are tried again every ``retry.backoff.ms`` until the call's
deadline, then fail with KafkaAdminClient's timeout text.  Failures raise
:class:`AdminFailure`, whose text is what the Java exception's ``getMessage()``
returns (the tool prints it after ``<what failed>: ``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Any, TypeVar

from mafka.client.kernel import FIND_COORDINATOR, METADATA, Kernel
from mafka.errors import ErrorCode
from mafka.topics import TopicPartitionTuple

__all__ = [
    "AbortTransactionSpec",
    "AdminFailure",
    "ProducerState",
    "TopicPartitionInfo",
    "TransactionDescription",
    "TransactionListing",
    "TransactionsAdmin",
    "parse_state",
    "tp_str",
]

T = TypeVar("T")

DESCRIBE_PRODUCERS, WRITE_TXN_MARKERS, DESCRIBE_TRANSACTIONS, LIST_TRANSACTIONS = 61, 27, 65, 66
MAFKA_LIST_HALF = 10003
TRANSACTION_KEY_TYPE = 1

#: ``ApiKeys`` names, as KafkaAdminClient names its calls (``describeProducers(api=METADATA)``).
_API_NAMES = {
    METADATA: "METADATA", FIND_COORDINATOR: "FIND_COORDINATOR", WRITE_TXN_MARKERS: "WRITE_TXN_MARKERS",
    DESCRIBE_PRODUCERS: "DESCRIBE_PRODUCERS", DESCRIBE_TRANSACTIONS: "DESCRIBE_TRANSACTIONS",
    LIST_TRANSACTIONS: "LIST_TRANSACTIONS",
}

#: The admin client's ``TransactionState`` names; anything else parses as ``Unknown`` (Dead included).
ADMIN_STATES = ("Ongoing", "PrepareAbort", "PrepareCommit", "CompleteAbort", "CompleteCommit", "Empty",
                "PrepareEpochFence")


def parse_state(name: str) -> str:
    """``TransactionState.parse``: the name if the admin client knows it, else ``Unknown``."""
    return name if name in ADMIN_STATES else "Unknown"


def tp_str(tp: TopicPartitionTuple) -> str:
    """Java's ``TopicPartition.toString``: ``topic-partition``."""
    return f"{tp[0]}-{tp[1]}"


class AdminFailure(Exception):
    """A failed admin call; ``str()`` is the Java exception's message."""


@dataclass(frozen=True)
class TransactionListing:
    transactional_id: str
    producer_id: int
    state: str


@dataclass(frozen=True)
class TransactionDescription:
    """``TransactionDescription``; ``transaction_start_time_ms`` is None before the first transaction."""

    coordinator_id: int
    state: str
    producer_id: int
    producer_epoch: int
    transaction_timeout_ms: int
    transaction_start_time_ms: int | None
    topic_partitions: frozenset[TopicPartitionTuple]


@dataclass(frozen=True)
class ProducerState:
    """``ProducerState``: None where Java has an empty Optional (no marker yet / no open transaction)."""

    producer_id: int
    producer_epoch: int
    last_sequence: int
    last_timestamp: int
    coordinator_epoch: int | None
    current_transaction_start_offset: int | None


@dataclass(frozen=True)
class AbortTransactionSpec:
    topic_partition: TopicPartitionTuple
    producer_id: int
    producer_epoch: int
    coordinator_epoch: int

    def __str__(self) -> str:
        return (f"AbortTransactionSpec(topicPartition={tp_str(self.topic_partition)}, producerId={self.producer_id}, "
                f"producerEpoch={self.producer_epoch}, coordinatorEpoch={self.coordinator_epoch})")


@dataclass(frozen=True)
class TopicPartitionInfo:
    partition: int
    leader: int
    replicas: tuple[int, ...]


class _Retry(Exception):
    """This attempt settled nothing; try again after the backoff.

    ``call`` names the request that was (or could not be) sent, ``sent`` whether it was.
    """

    def __init__(self, call: str, sent: bool) -> None:
        super().__init__(call)
        self.call = call
        self.sent = sent


def _call_name(api: str, api_key: int) -> str:
    return f"{api}(api={_API_NAMES[api_key]})"


class TransactionsAdmin:
    """The transaction admin calls over one kernel, each bounded by ``timeout_s``."""

    def __init__(self, kernel: Kernel, timeout_s: float, retry_backoff_s: float = 0.1) -> None:
        self.kernel = kernel
        self.timeout_s = timeout_s
        self.retry_backoff_s = retry_backoff_s

    # ------------------------------------------------------------------ plumbing

    async def _retrying(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """``attempt()`` until it returns or raises something other than :class:`_Retry` /
        a lost connection, or the deadline passes (then KafkaAdminClient's timeout text)."""
        deadline = time.monotonic() + self.timeout_s
        deadline_ms = int(time.time() * 1000 + self.timeout_s * 1000)
        tries = 0
        last = _Retry("unknown", sent=False)
        while True:
            try:
                return await attempt()
            except _Retry as exc:
                last = exc
            except (ConnectionError, TimeoutError):
                last = _Retry(last.call, sent=False)
            if last.sent:
                tries += 1
            if time.monotonic() + self.retry_backoff_s >= deadline:
                now_ms = int(time.time() * 1000)
                if last.sent:
                    raise AdminFailure(
                        f"Call(callName={last.call}, deadlineMs={deadline_ms}, tries={tries}, "
                        f"nextAllowedTryMs={now_ms + int(self.retry_backoff_s * 1000)}) timed out at {now_ms} "
                        f"after {tries} attempt(s)")
                raise AdminFailure(f"Timed out waiting for a node assignment. Call: {last.call}")
            await asyncio.sleep(self.retry_backoff_s)

    def _left(self, deadline: float) -> float:
        return max(0.1, deadline - time.monotonic())

    async def _send(self, node: int, api_key: int, body: dict[str, Any], call: str) -> Any:
        """One request; a lost connection or a request timeout is a retry of ``call``."""
        try:
            if self.kernel.metadata.broker(node) is None:
                await self.kernel.refresh_metadata()
            return await self.kernel.send(node, api_key, body)
        except (ConnectionError, TimeoutError):
            self.kernel.metadata.request_update()
            raise _Retry(call, sent=False) from None

    async def _metadata(self, topics: Iterable[str] | None, call: str) -> Any:
        """A fresh view of the cluster (these topics, or every topic with ``None``)."""
        try:
            if topics is None:
                return await self.kernel.refresh_metadata(all_topics=True)
            self.kernel.metadata.want(list(topics))
            return await self.kernel.refresh_metadata()
        except (ConnectionError, TimeoutError):
            raise _Retry(call, sent=False) from None

    async def _leaders(self, api: str, partitions: list[TopicPartitionTuple]) -> dict[TopicPartitionTuple, int]:
        """``PartitionLeaderStrategy``: the leader of each partition, waiting for those without one.

        Raises:
            AdminFailure: a topic or partition error Kafka does not retry.
            _Retry: some partition has no leader yet (unknown topic, election, …).
        """
        call = _call_name(api, METADATA)
        md = await self._metadata({t for t, _ in partitions}, call)
        leaders: dict[TopicPartitionTuple, int] = {}
        for tp in partitions:
            topic, index = tp
            info = md.topics.get(topic)
            error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if info is None else info.error
            if error in (ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.LEADER_NOT_AVAILABLE,
                         ErrorCode.BROKER_NOT_AVAILABLE):
                continue
            if error == ErrorCode.TOPIC_AUTHORIZATION_FAILED:
                raise AdminFailure(f"Failed to fetch metadata for partition {tp_str(tp)} due to topic "
                                   "authorization failure")
            if error == ErrorCode.INVALID_TOPIC_EXCEPTION:
                raise AdminFailure(f"Failed to fetch metadata for partition {tp_str(tp)} due to invalid topic "
                                   f"`{topic}`")
            if error != ErrorCode.NONE:
                raise AdminFailure(f"Failed to fetch metadata for partition {tp_str(tp)} due to unexpected "
                                         f"error for topic `{topic}`")
            p = info.partitions.get(index)
            if p is None:
                continue  # Kafka's lookup keeps waiting for a partition the metadata does not list
            if p.error not in (ErrorCode.NONE, ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.REPLICA_NOT_AVAILABLE,
                               ErrorCode.LEADER_NOT_AVAILABLE, ErrorCode.BROKER_NOT_AVAILABLE,
                               ErrorCode.KAFKA_STORAGE_ERROR):
                raise AdminFailure(f"Unexpected error during metadata lookup for {tp_str(tp)}")
            # A live leader with a replica offline (REPLICA_NOT_AVAILABLE) can still be asked.
            if p.leader >= 0:
                leaders[tp] = p.leader
        missing = [tp for tp in partitions if tp not in leaders]
        if missing:
            raise _Retry(call, sent=True)
        return leaders

    async def _coordinator(self, api: str, transactional_id: str) -> int:
        """``CoordinatorStrategy``: the transaction coordinator of ``transactional_id``."""
        call = _call_name(api, FIND_COORDINATOR)
        try:
            response = await self.kernel.send_any(FIND_COORDINATOR, {"key": transactional_id,
                                                                     "key_type": TRANSACTION_KEY_TYPE})
        except (ConnectionError, TimeoutError):
            raise _Retry(call, sent=False) from None
        error = response.error_code
        if error in (ErrorCode.COORDINATOR_NOT_AVAILABLE, ErrorCode.COORDINATOR_LOAD_IN_PROGRESS):
            raise _Retry(call, sent=True)
        key = f"CoordinatorKey(idValue='{transactional_id}', type=TRANSACTION)"
        if error == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
            raise AdminFailure(f"FindCoordinator request for transactionalId `{key}` failed due to authorization "
                               "failure")
        if error != ErrorCode.NONE:
            raise AdminFailure(f"FindCoordinator request for key `{key}` failed due to an unexpected error")
        return int(response.node_id)

    # ------------------------------------------------------------------ ListTransactions

    async def list_half(self) -> dict[int, list[Any]]:
        """MafkaListHalf at every broker: the half messages each is waiting to check back, by broker id."""
        call = "listHalf(api=MAFKA_LIST_HALF)"

        async def attempt() -> dict[int, list[Any]]:
            md = await self._metadata([], call)
            if not md.brokers:
                raise _Retry(call, sent=True)
            out: dict[int, list[Any]] = {}
            for broker in sorted(md.brokers):
                response = await self.kernel.send(broker, MAFKA_LIST_HALF, {}, version=0)
                out[broker] = list(response.halves)
            return out

        return await self._retrying(attempt)

    async def list_transactions(self, state_filters: Iterable[str] = (),
                                producer_id_filters: Iterable[int] = ()) -> dict[int, list[TransactionListing]]:
        """``listTransactions(...).allByBrokerId()``: every broker's listings, by broker id.

        Raises:
            AdminFailure: one broker's call failed (the first such, as ``allByBrokerId`` fails).
        """
        body = {"state_filters": list(state_filters), "producer_id_filters": list(producer_id_filters)}
        call = _call_name("listTransactions", LIST_TRANSACTIONS)

        async def brokers() -> list[int]:
            md = await self._metadata([], _call_name("listTransactions", METADATA))
            if not md.brokers:
                raise _Retry(_call_name("listTransactions", METADATA), sent=True)
            return sorted(md.brokers)

        async def on(broker: int) -> list[TransactionListing]:
            async def attempt() -> list[TransactionListing]:
                response = await self._send(broker, LIST_TRANSACTIONS, body, call)
                error = response.error_code
                if error == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS:
                    raise _Retry(call, sent=True)
                if error == ErrorCode.COORDINATOR_NOT_AVAILABLE:
                    raise AdminFailure(f"ListTransactions request sent to broker {broker} failed because the "
                                       "coordinator is shutting down")
                if error != ErrorCode.NONE:
                    raise AdminFailure(f"ListTransactions request sent to broker {broker} failed with an "
                                             "unexpected exception")
                return [TransactionListing(t.transactional_id, t.producer_id, parse_state(t.transaction_state))
                        for t in response.transaction_states]

            return await self._retrying(attempt)

        ids = await self._retrying(brokers)
        results = await asyncio.gather(*(on(b) for b in ids), return_exceptions=True)
        for result in results:
            if isinstance(result, BaseException):
                raise result
        return dict(zip(ids, results, strict=True))  # type: ignore[arg-type]

    # ------------------------------------------------------------------ DescribeTransactions

    async def describe_transaction(self, transactional_id: str) -> TransactionDescription:
        """``describeTransactions([id]).description(id)``.

        Raises:
            AdminFailure: the id is not found, or another final error.
        """

        async def attempt() -> TransactionDescription:
            coordinator = await self._coordinator("describeTransactions", transactional_id)
            call = _call_name("describeTransactions", DESCRIBE_TRANSACTIONS)
            response = await self._send(coordinator, DESCRIBE_TRANSACTIONS,
                                        {"transactional_ids": [transactional_id]}, call)
            for s in response.transaction_states:
                if s.transactional_id != transactional_id:
                    continue  # Kafka logs a warning for an id it did not ask about
                error = s.error_code
                if error in (ErrorCode.COORDINATOR_LOAD_IN_PROGRESS, ErrorCode.NOT_COORDINATOR,
                             ErrorCode.COORDINATOR_NOT_AVAILABLE):
                    raise _Retry(call, sent=True)
                if error == ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED:
                    raise AdminFailure(f"DescribeTransactions request for transactionalId `{transactional_id}` "
                                       "failed due to authorization failure")
                if error == ErrorCode.TRANSACTIONAL_ID_NOT_FOUND:
                    raise TransactionalIdNotFound(
                        f"DescribeTransactions request for transactionalId `{transactional_id}` failed because "
                        "the ID could not be found")
                if error != ErrorCode.NONE:
                    raise AdminFailure(f"DescribeTransactions request for transactionalId "
                                             f"`{transactional_id}` failed due to unexpected error")
                start = s.transaction_start_time_ms
                return TransactionDescription(
                    coordinator, parse_state(s.transaction_state), s.producer_id, s.producer_epoch,
                    s.transaction_timeout_ms, None if start < 0 else start,
                    frozenset((t.topic, p) for t in s.topics for p in t.partitions),
                )
            raise _Retry(call, sent=True)  # not answered: Kafka leaves the key pending

        return await self._retrying(attempt)

    # ------------------------------------------------------------------ DescribeProducers

    async def describe_producers(self, partitions: list[TopicPartitionTuple],
                                 broker_id: int | None = None) -> dict[TopicPartitionTuple, list[ProducerState]]:
        """``describeProducers(partitions, options).all()``: each partition's active producers.

        Raises:
            AdminFailure: the first partition that failed.
        """
        api = "describeProducers"
        call = _call_name(api, DESCRIBE_PRODUCERS)
        pending = list(dict.fromkeys(partitions))
        done: dict[TopicPartitionTuple, list[ProducerState]] = {}

        async def ask(node: int, tps: list[TopicPartitionTuple]) -> None:
            topics: dict[str, list[int]] = {}
            for topic, index in tps:
                topics.setdefault(topic, []).append(index)
            body = {"topics": [{"name": t, "partition_indexes": idx} for t, idx in topics.items()]}
            response = await self._send(node, DESCRIBE_PRODUCERS, body, call)
            for t in response.topics:
                for p in t.partitions:
                    tp = (t.name, p.partition_index)
                    if tp not in tps:
                        continue
                    error = p.error_code
                    if error == ErrorCode.NONE:
                        done[tp] = [_producer_state(s) for s in p.active_producers]
                    elif error == ErrorCode.NOT_LEADER_OR_FOLLOWER:
                        if broker_id is not None:
                            raise AdminFailure(f"Failed to describe active producers for partition {tp_str(tp)} "
                                               f"on brokerId {broker_id}")
                        self.kernel.metadata.request_update()
                    elif error == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION:
                        pass  # retried
                    elif error == ErrorCode.INVALID_TOPIC_EXCEPTION:
                        detail = p.error_message or ErrorCode.INVALID_TOPIC_EXCEPTION.description
                        raise AdminFailure(f"Failed to fetch metadata for partition {tp_str(tp)} due to invalid "
                                           f"topic error: {detail}")
                    elif error == ErrorCode.TOPIC_AUTHORIZATION_FAILED:
                        raise AdminFailure(f"Failed to describe active producers for partition {tp_str(tp)} due "
                                           f"to authorization failure on topic `{tp[0]}`")
                    else:
                        raise AdminFailure(f"Failed to describe active producers for partition "
                                                 f"{tp_str(tp)} due to unexpected error")

        async def attempt() -> dict[TopicPartitionTuple, list[ProducerState]]:
            todo = [tp for tp in pending if tp not in done]
            if broker_id is not None:
                targets = {broker_id: todo}
            else:
                leaders = await self._leaders(api, todo)
                targets = {}
                for tp, leader in leaders.items():
                    targets.setdefault(leader, []).append(tp)
            for node, tps in sorted(targets.items()):
                await ask(node, tps)
            if any(tp not in done for tp in pending):
                raise _Retry(call, sent=True)
            return {tp: done[tp] for tp in pending}

        return await self._retrying(attempt)

    # ------------------------------------------------------------------ WriteTxnMarkers

    async def abort_transaction(self, spec: AbortTransactionSpec) -> None:
        """``abortTransaction(spec)``: an ABORT marker for ``spec``'s producer, written by the partition's leader.

        Raises:
            AdminFailure: a final error (stale producer epoch, fenced coordinator epoch, …).
        """
        api = "abortTransaction"
        call = _call_name(api, WRITE_TXN_MARKERS)
        topic, index = spec.topic_partition
        body = {"markers": [{
            "producer_id": spec.producer_id, "producer_epoch": spec.producer_epoch, "transaction_result": False,
            "topics": [{"name": topic, "partition_indexes": [index]}], "coordinator_epoch": spec.coordinator_epoch,
        }]}

        async def attempt() -> None:
            leader = (await self._leaders(api, [spec.topic_partition]))[spec.topic_partition]
            response = await self._send(leader, WRITE_TXN_MARKERS, body, call)
            markers = response.markers
            shown = _markers_text(markers)
            if len(markers) != 1 or markers[0].producer_id != spec.producer_id:
                raise AdminFailure(f"WriteTxnMarkers response included unexpected marker entries: {shown}(expected "
                                   f"to find exactly one entry with producerId {spec.producer_id})")
            topics = markers[0].topics
            if len(topics) != 1 or topics[0].name != topic:
                raise AdminFailure(f"WriteTxnMarkers response included unexpected topic entries: {shown}(expected "
                                   f"to find exactly one entry with topic partition {tp_str(spec.topic_partition)})")
            parts = topics[0].partitions
            if len(parts) != 1 or parts[0].partition_index != index:
                raise AdminFailure(f"WriteTxnMarkers response included unexpected partition entries for topic "
                                   f"{topic}: {shown}(expected to find exactly one entry with partition {index})")
            error = parts[0].error_code
            if error == ErrorCode.NONE:
                return
            if error == ErrorCode.CLUSTER_AUTHORIZATION_FAILED:
                raise AdminFailure(f"WriteTxnMarkers request with {spec} failed due to cluster authorization error")
            if error == ErrorCode.INVALID_PRODUCER_EPOCH:
                raise AdminFailure(f"WriteTxnMarkers request with {spec} failed due an invalid producer epoch")
            if error == ErrorCode.TRANSACTION_COORDINATOR_FENCED:
                raise AdminFailure(f"WriteTxnMarkers request with {spec} failed since the provided coordinator "
                                   f"epoch {spec.coordinator_epoch} has been fenced by the active coordinator")
            if error in (ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.REPLICA_NOT_AVAILABLE,
                         ErrorCode.BROKER_NOT_AVAILABLE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION):
                self.kernel.metadata.request_update()
                raise _Retry(call, sent=True)
            raise AdminFailure(f"WriteTxnMarkers request with {spec} failed due to unexpected error: "
                                     f"{_description(error)}")

        await self._retrying(attempt)

    # ------------------------------------------------------------------ Metadata

    async def list_topics(self) -> list[str]:
        """``listTopics().names()``: every topic but the internal ones."""

        async def attempt() -> list[str]:
            md = await self._metadata(None, _call_name("listTopics", METADATA))
            return sorted(name for name, info in md.topics.items() if not info.is_internal and not info.error)

        return await self._retrying(attempt)

    async def describe_topics(self, topics: list[str]) -> dict[str, list[TopicPartitionInfo]]:
        """``describeTopics(topics).all()``: each topic's partitions with leader and replicas.

        Raises:
            AdminFailure: a topic that does not exist (Kafka's UnknownTopicOrPartitionException).
        """
        call = _call_name("describeTopics", METADATA)

        async def attempt() -> dict[str, list[TopicPartitionInfo]]:
            md = await self._metadata(topics, call)
            out: dict[str, list[TopicPartitionInfo]] = {}
            for topic in topics:
                info = md.topics.get(topic)
                error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION if info is None else info.error
                if error == ErrorCode.LEADER_NOT_AVAILABLE:
                    raise _Retry(call, sent=True)
                if error != ErrorCode.NONE:
                    raise AdminFailure(_description(error))
                out[topic] = [TopicPartitionInfo(p.id, p.leader, p.replicas)
                              for _, p in sorted(info.partitions.items())]
            return out

        return await self._retrying(attempt)


class TransactionalIdNotFound(AdminFailure):
    """``TransactionalIdNotFoundException`` (``find-hanging`` treats it as "no description")."""


def _producer_state(s: Any) -> ProducerState:
    return ProducerState(
        s.producer_id, s.producer_epoch, s.last_sequence, s.last_timestamp,
        None if s.coordinator_epoch < 0 else s.coordinator_epoch,
        None if s.current_txn_start_offset < 0 else s.current_txn_start_offset,
    )


def _description(code: int) -> str:
    try:
        return ErrorCode(code).description
    except ValueError:
        return f"Unknown error code {code}"


def _markers_text(markers: Any) -> str:
    """Roughly Java's ``List.toString`` of the generated ``WritableTxnMarkerResult`` objects."""
    out = []
    for m in markers:
        topics = ", ".join(
            f"WritableTxnMarkerTopicResult(name='{t.name}', partitions=["
            + ", ".join(f"WritableTxnMarkerPartitionResult(partitionIndex={p.partition_index}, "
                        f"errorCode={p.error_code})" for p in t.partitions) + "])"
            for t in m.topics)
        out.append(f"WritableTxnMarkerResult(producerId={m.producer_id}, topics=[{topics}])")
    return "[" + ", ".join(out) + "]"
