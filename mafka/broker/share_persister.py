"""The share-group state persister: Kafka's ``DefaultStatePersister`` + ``PersisterStateManager``.

The client side of the share coordinator, for the share-partition leaders
on this broker (read and write their state) and the group coordinator
(initialize, delete, read summaries).  Each call takes one share group and
any number of share-partitions (topic id → partition → what to send) and
returns a Deferred that fires — never fails, once the arguments are valid —
with topic id → partition → result (:mod:`mafka.share.state_types`): every
share-partition asked about is in it, with NONE or its final error.

How a share-partition's state is reached, at each attempt:

* ``__share_group_state`` is created if it does not exist
  (:meth:`ShareCoordinatorService.ensure_state_topic
  <mafka.broker.share_coordinator_service.ShareCoordinatorService.ensure_state_topic>`),
  and the attempt answers COORDINATOR_NOT_AVAILABLE;
* its coordinator is the leader of partition
  :meth:`ShareCoordinator.partition_for <mafka.share.coordinator.ShareCoordinator.partition_for>`
  of that topic in this broker's metadata cache (Kafka's
  ``ShareCoordinatorMetadataCacheHelper.getShareCoordinator``; no
  FindCoordinator round trip: every broker holds the same metadata);
* when that is this broker, the local share coordinator is called directly
  (after its stall check); otherwise the share-partitions of the call that
  share a coordinator go in one request (InitializeShareGroupState v0,
  ReadShareGroupState v0, WriteShareGroupState v1, DeleteShareGroupState v0,
  ReadShareGroupStateSummary v1) over an
  :class:`~mafka.interbroker.connection.InterBrokerConnection` on the
  inter-broker listener, with the broker's inter-broker TLS/SASL, bounded by
  ``request.timeout.ms``.

Retries (Kafka's retriable set): a share-partition answered NOT_COORDINATOR,
COORDINATOR_NOT_AVAILABLE, COORDINATOR_LOAD_IN_PROGRESS or
UNKNOWN_TOPIC_OR_PARTITION, one without a live coordinator, and one whose
request failed (connection lost: NETWORK_EXCEPTION; no answer in time:
REQUEST_TIMED_OUT) is tried again after a backoff (``backoff_s``, doubling up
to ``max_backoff_s``; Kafka's is 1 s to 30 s over five attempts), with the
coordinator looked up again, until ``deadline_s`` after the call; then its last
error is its result.  Every other error (FENCED_STATE_EPOCH, FENCED_LEADER_EPOCH,
INVALID_REQUEST, ...) is final at once, as is a response that leaves the
share-partition out (UNKNOWN_SERVER_ERROR).  A connection whose request failed
is closed and made again on the next request, so a restarted broker is found
at its new endpoint.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Final

from twisted.internet import defer

from mafka.errors import ErrorCode
from mafka.group.share.partition_state import StateBatch
from mafka.share.coordinator import ShareCoordinator
from mafka.share.state_types import (
    InitializeData,
    PartitionResult,
    ReadResult,
    SummaryResult,
    WriteData,
)
from mafka.topics import SHARE_GROUP_STATE_TOPIC

__all__ = ["RETRIABLE", "SharePersister"]

log = logging.getLogger("mafka.broker.share_persister")

INITIALIZE_SHARE_GROUP_STATE, READ_SHARE_GROUP_STATE, WRITE_SHARE_GROUP_STATE = 83, 84, 85
DELETE_SHARE_GROUP_STATE, READ_SHARE_GROUP_STATE_SUMMARY = 86, 87

#: Kafka's ``PersisterStateManager`` retries these (and failed requests), after looking the coordinator up again
RETRIABLE: Final = frozenset({
    ErrorCode.NOT_COORDINATOR,
    ErrorCode.COORDINATOR_NOT_AVAILABLE,
    ErrorCode.COORDINATOR_LOAD_IN_PROGRESS,
    ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
    ErrorCode.NETWORK_EXCEPTION,
    ErrorCode.REQUEST_TIMED_OUT,
})

_TP = tuple[bytes, int]


# --------------------------------------------------------------------------- the five operations


@dataclass(frozen=True)
class _Operation:
    """One share-state RPC: how to ask the local coordinator, build a request partition,
    read a response partition, and make a failed result."""

    name: str
    api_key: int
    version: int
    local: Callable[[ShareCoordinator, str, bytes, int, Any, Callable[[Any], None]], None]
    body: Callable[[int, Any], dict[str, Any]]
    parse: Callable[[Any], Any]
    failed: Callable[[ErrorCode, str | None], Any]


def _code(raw: int) -> ErrorCode:
    try:
        return ErrorCode(raw)
    except ValueError:
        return ErrorCode.UNKNOWN_SERVER_ERROR


def _partition_result(p: Any) -> PartitionResult:
    return PartitionResult(_code(p.error_code), p.error_message)


def _read_result(p: Any) -> ReadResult:
    return ReadResult(
        _code(p.error_code), p.error_message, p.state_epoch, p.start_offset,
        tuple(StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count) for b in p.state_batches),
    )


def _summary_result(p: Any) -> SummaryResult:
    return SummaryResult(_code(p.error_code), p.error_message, p.state_epoch, p.leader_epoch, p.start_offset,
                         p.delivery_complete_count)


def _write_body(partition: int, data: WriteData) -> dict[str, Any]:
    return {
        "partition": partition,
        "state_epoch": data.state_epoch,
        "leader_epoch": data.leader_epoch,
        "start_offset": data.start_offset,
        "delivery_complete_count": data.delivery_complete_count,
        "state_batches": [
            {"first_offset": b.first_offset, "last_offset": b.last_offset, "delivery_state": b.delivery_state,
             "delivery_count": b.delivery_count}
            for b in data.state_batches
        ],
    }


_INITIALIZE = _Operation(
    "initialize", INITIALIZE_SHARE_GROUP_STATE, 0,
    lambda c, g, t, p, data, done: c.initialize(g, t, p, data, done),
    lambda p, data: {"partition": p, "state_epoch": data.state_epoch, "start_offset": data.start_offset},
    _partition_result, PartitionResult,
)
_READ = _Operation(
    "read", READ_SHARE_GROUP_STATE, 0,
    lambda c, g, t, p, epoch, done: c.read(g, t, p, epoch, done),
    lambda p, epoch: {"partition": p, "leader_epoch": epoch},
    _read_result, ReadResult,
)
_WRITE = _Operation(
    "write", WRITE_SHARE_GROUP_STATE, 1,
    lambda c, g, t, p, data, done: c.write(g, t, p, data, done),
    _write_body, _partition_result, PartitionResult,
)
_DELETE = _Operation(
    "delete", DELETE_SHARE_GROUP_STATE, 0,
    lambda c, g, t, p, _none, done: c.delete(g, t, p, done),
    lambda p, _none: {"partition": p},
    _partition_result, PartitionResult,
)
_SUMMARY = _Operation(
    "read summary", READ_SHARE_GROUP_STATE_SUMMARY, 1,
    lambda c, g, t, p, epoch, done: c.read_summary(g, t, p, epoch, done),
    lambda p, epoch: {"partition": p, "leader_epoch": epoch},
    _summary_result, SummaryResult,
)


# --------------------------------------------------------------------------- one call


@dataclass(eq=False)
class _Call:
    op: _Operation
    group_id: str
    #: share-partitions still to settle → what to send
    pending: dict[_TP, Any]
    deadline: float
    backoff_s: float
    d: defer.Deferred = field(default_factory=defer.Deferred)
    results: dict[_TP, Any] = field(default_factory=dict)
    #: the last retriable answer of each pending share-partition (its result if time runs out)
    last: dict[_TP, Any] = field(default_factory=dict)
    outstanding: int = 0
    retry_call: Any = None
    order: list[_TP] = field(default_factory=list)


class SharePersister:
    """Kafka's ``Persister`` on this broker (see the module docstring).

    Args:
        broker: ``reactor``, ``broker_id``, ``config`` (``request_timeout_ms``,
            ``inter_broker_listener``), ``metadata_cache``,
            ``share_coordinator_service`` and ``interbroker_security``.
        connect: ``(broker_id, host, port) -> connection`` with
            ``request(api_key, version, body) -> Deferred`` and ``close()``
            (default: an :class:`~mafka.interbroker.connection.InterBrokerConnection`).
        backoff_s, max_backoff_s: the first delay before a retry, and the most it doubles to.
        deadline_s: how long a call keeps retrying (default ``request.timeout.ms``).
        request_timeout_s: one request's bound (default ``request.timeout.ms``).
    """

    def __init__(
        self,
        broker: Any,
        *,
        connect: Callable[[int, str, int], Any] | None = None,
        backoff_s: float = 0.1,
        max_backoff_s: float = 1.0,
        deadline_s: float | None = None,
        request_timeout_s: float | None = None,
    ) -> None:
        self.broker = broker
        self.reactor = broker.reactor
        timeout_s = broker.config.request_timeout_ms / 1000
        self.backoff_s = backoff_s
        self.max_backoff_s = max_backoff_s
        self.deadline_s = timeout_s if deadline_s is None else deadline_s
        self.request_timeout_s = timeout_s if request_timeout_s is None else request_timeout_s
        self._connect = connect or self._interbroker_connection
        self._connections: dict[int, tuple[tuple[str, int], Any]] = {}
        self._calls: set[_Call] = set()
        self._closed = False

    # ------------------------------------------------------------------ the API

    def initialize(self, group_id: str, topics: Mapping[bytes, Mapping[int, InitializeData]]) -> defer.Deferred:
        """InitializeShareGroupState: fires with {topic id: {partition: :class:`PartitionResult`}}."""
        return self._start(_INITIALIZE, group_id, {(t, p): d for t, ps in topics.items() for p, d in ps.items()})

    def read(self, group_id: str, topics: Mapping[bytes, Mapping[int, int]]) -> defer.Deferred:
        """ReadShareGroupState with each share-partition's leader epoch: fires with
        {topic id: {partition: :class:`ReadResult`}}."""
        return self._start(_READ, group_id, {(t, p): e for t, ps in topics.items() for p, e in ps.items()})

    def write(self, group_id: str, topics: Mapping[bytes, Mapping[int, WriteData]]) -> defer.Deferred:
        """WriteShareGroupState: fires with {topic id: {partition: :class:`PartitionResult`}}."""
        return self._start(_WRITE, group_id, {(t, p): d for t, ps in topics.items() for p, d in ps.items()})

    def delete(self, group_id: str, topics: Mapping[bytes, Iterable[int]]) -> defer.Deferred:
        """DeleteShareGroupState: fires with {topic id: {partition: :class:`PartitionResult`}}."""
        return self._start(_DELETE, group_id, {(t, p): None for t, ps in topics.items() for p in ps})

    def read_summary(self, group_id: str, topics: Mapping[bytes, Mapping[int, int]]) -> defer.Deferred:
        """ReadShareGroupStateSummary with each share-partition's leader epoch: fires with
        {topic id: {partition: :class:`SummaryResult`}}."""
        return self._start(_SUMMARY, group_id, {(t, p): e for t, ps in topics.items() for p, e in ps.items()})

    def close(self) -> None:
        """Kafka's ``stop``: calls in progress end at once with COORDINATOR_NOT_AVAILABLE for what
        is still pending; connections are closed."""
        self._closed = True
        for call in list(self._calls):
            if call.retry_call is not None and call.retry_call.active():
                call.retry_call.cancel()
            for tp in list(call.pending):
                call.results[tp] = call.op.failed(ErrorCode.COORDINATOR_NOT_AVAILABLE, "The persister is stopped.")
            call.pending.clear()
            self._finish(call)
        for _, conn in self._connections.values():
            conn.close()
        self._connections.clear()

    # ------------------------------------------------------------------ a call

    def _start(self, op: _Operation, group_id: str, pending: dict[_TP, Any]) -> defer.Deferred:
        if not group_id:
            return defer.fail(ValueError("Group id must be specified and non-empty"))
        for topic_id, partition in pending:
            if len(topic_id) != 16 or partition < 0:
                return defer.fail(ValueError(f"invalid share-partition {topic_id!r}-{partition}"))
        call = _Call(op, group_id, dict(pending), self.reactor.seconds() + self.deadline_s, self.backoff_s,
                     order=list(pending))
        if self._closed:
            for tp in call.order:
                call.results[tp] = op.failed(ErrorCode.COORDINATOR_NOT_AVAILABLE, "The persister is stopped.")
            call.pending.clear()
            return defer.succeed(_by_topic(call))
        self._calls.add(call)
        self._round(call)
        return call.d

    def _round(self, call: _Call) -> None:
        """One attempt for every pending share-partition."""
        call.retry_call = None
        service = self.broker.share_coordinator_service
        cache = self.broker.metadata_cache
        if not cache.has_topic(SHARE_GROUP_STATE_TOPIC):
            service.ensure_state_topic()
            for tp in call.pending:
                call.last[tp] = call.op.failed(ErrorCode.COORDINATOR_NOT_AVAILABLE, None)
            self._after_round(call)
            return
        coordinator: ShareCoordinator = service.coordinator
        local: list[_TP] = []
        remote: dict[int, list[_TP]] = {}
        listener = self.broker.config.inter_broker_listener
        for tp in list(call.pending):
            index = coordinator.partition_for(call.group_id, tp[0], tp[1])
            info = cache.partition(SHARE_GROUP_STATE_TOPIC, index)
            leader = -1 if info is None else info.leader
            if leader == self.broker.broker_id:
                local.append(tp)
            elif leader < 0 or leader in cache.unreachable or cache.endpoint(leader, listener) is None:
                call.last[tp] = call.op.failed(ErrorCode.COORDINATOR_NOT_AVAILABLE, None)
            else:
                remote.setdefault(leader, []).append(tp)
        call.outstanding = len(local) + len(remote) + 1  # +1: this dispatch, settled last
        if local:
            checked = service.checked_coordinator()
            for tp in local:
                call.op.local(checked, call.group_id, tp[0], tp[1], call.pending[tp],
                              functools.partial(self._settle_one, call, tp))
        for leader, tps in remote.items():
            self._send(call, leader, tps)
        self._settled(call)

    def _send(self, call: _Call, broker_id: int, tps: list[_TP]) -> None:
        topics: dict[bytes, list[dict[str, Any]]] = {}
        for topic_id, partition in tps:
            topics.setdefault(topic_id, []).append(call.op.body(partition, call.pending[(topic_id, partition)]))
        body = {"group_id": call.group_id, "topics": [{"topic_id": t, "partitions": ps} for t, ps in topics.items()]}
        conn = self._connection(broker_id)
        if conn is None:
            self._fail_request(call, tps, ErrorCode.COORDINATOR_NOT_AVAILABLE)
            return
        d = defer.maybeDeferred(conn.request, call.op.api_key, call.op.version, body)
        d.addTimeout(self.request_timeout_s, self.reactor)
        d.addCallbacks(self._answered, self._failed, callbackArgs=(call, tps), errbackArgs=(call, broker_id, conn, tps))
        d.addErrback(self._crashed, call, tps)

    def _answered(self, response: Any, call: _Call, tps: list[_TP]) -> None:
        got: dict[_TP, Any] = {}
        for topic in response.results:
            for p in topic.partitions:
                got[(bytes(topic.topic_id), p.partition)] = call.op.parse(p)
        for tp in tps:
            result = got.get(tp)
            if result is None:
                result = call.op.failed(ErrorCode.UNKNOWN_SERVER_ERROR,
                                        f"The response has no result for share partition {tp[0].hex()}-{tp[1]}.")
            self._record(call, tp, result)
        self._settled(call)

    def _failed(self, failure: Any, call: _Call, broker_id: int, conn: Any, tps: list[_TP]) -> None:
        timed_out = failure.check(defer.TimeoutError, defer.CancelledError) is not None
        log.info("share group state %s of %s to broker %d failed: %s; retrying", call.op.name, call.group_id,
                 broker_id, failure.getErrorMessage())
        held = self._connections.get(broker_id)
        if held is not None and held[1] is conn:
            del self._connections[broker_id]
            conn.close()
        self._fail_request(call, tps, ErrorCode.REQUEST_TIMED_OUT if timed_out else ErrorCode.NETWORK_EXCEPTION)

    def _crashed(self, failure: Any, call: _Call, tps: list[_TP]) -> None:
        """Handling an answer raised: the share-partitions fail with UNKNOWN_SERVER_ERROR, never hang."""
        log.error("handling a share group state %s answer failed", call.op.name,
                  exc_info=(failure.type, failure.value, failure.getTracebackObject()))
        for tp in tps:
            if tp in call.pending:
                call.results[tp] = call.op.failed(ErrorCode.UNKNOWN_SERVER_ERROR, failure.getErrorMessage())
                del call.pending[tp]
        self._settled(call)

    def _fail_request(self, call: _Call, tps: list[_TP], error: ErrorCode) -> None:
        for tp in tps:
            self._record(call, tp, call.op.failed(error, None))
        self._settled(call)

    def _settle_one(self, call: _Call, tp: _TP, result: Any) -> None:
        self._record(call, tp, result)
        self._settled(call)

    def _record(self, call: _Call, tp: _TP, result: Any) -> None:
        if tp not in call.pending:
            return
        if result.error in RETRIABLE:
            call.last[tp] = result
        else:
            call.results[tp] = result
            del call.pending[tp]

    def _settled(self, call: _Call) -> None:
        call.outstanding -= 1
        if call.outstanding == 0:
            self._after_round(call)

    def _after_round(self, call: _Call) -> None:
        if not call.pending:
            self._finish(call)
            return
        now = self.reactor.seconds()
        if self._closed or now + call.backoff_s >= call.deadline:
            for tp in list(call.pending):
                call.results[tp] = call.last.get(tp) or call.op.failed(ErrorCode.REQUEST_TIMED_OUT, None)
            call.pending.clear()
            self._finish(call)
            return
        log.debug("share group state %s of %s: %d share partitions to retry in %.2f s", call.op.name, call.group_id,
                  len(call.pending), call.backoff_s)
        call.retry_call = self.reactor.callLater(call.backoff_s, self._round, call)
        call.backoff_s = min(call.backoff_s * 2, self.max_backoff_s)

    def _finish(self, call: _Call) -> None:
        if call.d.called:
            return
        self._calls.discard(call)
        call.d.callback(_by_topic(call))

    # ------------------------------------------------------------------ connections

    def _connection(self, broker_id: int) -> Any:
        endpoint = self.broker.metadata_cache.endpoint(broker_id, self.broker.config.inter_broker_listener)
        if endpoint is None:
            return None
        held = self._connections.get(broker_id)
        if held is not None and held[0] == endpoint:
            return held[1]
        if held is not None:
            held[1].close()
        conn = self._connect(broker_id, *endpoint)
        self._connections[broker_id] = (endpoint, conn)
        return conn

    def _interbroker_connection(self, broker_id: int, host: str, port: int) -> Any:
        from mafka.interbroker.connection import InterBrokerConnection

        return InterBrokerConnection(
            self.reactor, host, port, f"broker-{self.broker.broker_id}-share-persister",
            security=getattr(self.broker, "interbroker_security", None),
        )


def _by_topic(call: _Call) -> dict[bytes, dict[int, Any]]:
    out: dict[bytes, dict[int, Any]] = {}
    for topic_id, partition in call.order:
        out.setdefault(topic_id, {})[partition] = call.results[(topic_id, partition)]
    return out
