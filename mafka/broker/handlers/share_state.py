"""The share coordinator's RPCs (KIP-932, inter-broker): 83–87.

InitializeShareGroupState (83, v0), ReadShareGroupState (84, v0),
WriteShareGroupState (85, v0–1), DeleteShareGroupState (86, v0) and
ReadShareGroupStateSummary (87, v0–1), as Kafka 4.4's ``KafkaApis`` and
``ShareCoordinatorService`` answer them:

* only brokers may send them: without ClusterAction on the cluster every
  share-partition of the request is CLUSTER_AUTHORIZATION_FAILED (Kafka's
  ``toGlobalErrorResponse``) and nothing is read or written;
* an empty group id, no topics, or a topic without partitions is answered
  with no results at all (Kafka's empty response);
* ``__share_group_state`` not created yet: it is created now and every
  share-partition is COORDINATOR_NOT_AVAILABLE (the sender retries);
* otherwise each share-partition goes to the share coordinator
  (:class:`~mafka.share.coordinator.ShareCoordinator`, after its stall check):
  NOT_COORDINATOR / COORDINATOR_LOAD_IN_PROGRESS unless this broker leads
  its ``__share_group_state`` partition, Kafka's fencing and validation
  errors, and success only once its record is replicated.  The response lists
  every share-partition of the request, grouped by topic id in request order.

A failed share-partition carries only its partition, error code and message
(its other fields at the schema's defaults, as Kafka's ``toErrorResponsePartitionResult``).

The broker provides ``share_coordinator_service``, ``metadata_cache`` and optionally ``authorizer``.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

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

from ..handler_authz import CLUSTER_ACTION, cluster_allowed

INITIALIZE_SHARE_GROUP_STATE, READ_SHARE_GROUP_STATE, WRITE_SHARE_GROUP_STATE = 83, 84, 85
DELETE_SHARE_GROUP_STATE, READ_SHARE_GROUP_STATE_SUMMARY = 86, 87

#: (coordinator, group id, topic id, request partition, done) → None: one share-partition's operation
_Run = Callable[[ShareCoordinator, str, bytes, Any, Callable[[Any], None]], None]
#: a result (or an error) → the response partition's fields besides ``partition``
_Render = Callable[[Any], dict[str, Any]]


def _initialize(c: ShareCoordinator, group: str, topic: bytes, p: Any, done: Callable[[Any], None]) -> None:
    c.initialize(group, topic, p.partition, InitializeData(p.state_epoch, p.start_offset), done)


def _read(c: ShareCoordinator, group: str, topic: bytes, p: Any, done: Callable[[Any], None]) -> None:
    c.read(group, topic, p.partition, p.leader_epoch, done)


def _write(c: ShareCoordinator, group: str, topic: bytes, p: Any, done: Callable[[Any], None]) -> None:
    batches = tuple(StateBatch(b.first_offset, b.last_offset, b.delivery_state, b.delivery_count)
                    for b in p.state_batches)
    c.write(group, topic, p.partition,
            WriteData(p.state_epoch, p.leader_epoch, p.start_offset, batches, p.delivery_complete_count), done)


def _delete(c: ShareCoordinator, group: str, topic: bytes, p: Any, done: Callable[[Any], None]) -> None:
    c.delete(group, topic, p.partition, done)


def _summary(c: ShareCoordinator, group: str, topic: bytes, p: Any, done: Callable[[Any], None]) -> None:
    c.read_summary(group, topic, p.partition, p.leader_epoch, done)


def _error_fields(result: Any) -> dict[str, Any]:
    return {"error_code": result.error, "error_message": result.message}


def _read_fields(r: ReadResult) -> dict[str, Any]:
    if r.error != ErrorCode.NONE:
        return _error_fields(r)
    return {
        "error_code": r.error, "error_message": r.message, "state_epoch": r.state_epoch,
        "start_offset": r.start_offset,
        "state_batches": [
            {"first_offset": b.first_offset, "last_offset": b.last_offset, "delivery_state": b.delivery_state,
             "delivery_count": b.delivery_count}
            for b in r.state_batches
        ],
    }


def _summary_fields(r: SummaryResult) -> dict[str, Any]:
    if r.error != ErrorCode.NONE:
        return _error_fields(r)
    return {
        "error_code": r.error, "error_message": r.message, "state_epoch": r.state_epoch,
        "leader_epoch": r.leader_epoch, "start_offset": r.start_offset,
        "delivery_complete_count": r.delivery_complete_count,
    }


#: api key → (run one share-partition, render its result, make an error result)
_APIS: dict[int, tuple[_Run, _Render, Callable[[ErrorCode, str | None], Any]]] = {
    INITIALIZE_SHARE_GROUP_STATE: (_initialize, _error_fields, PartitionResult),
    READ_SHARE_GROUP_STATE: (_read, _read_fields, ReadResult),
    WRITE_SHARE_GROUP_STATE: (_write, _error_fields, PartitionResult),
    DELETE_SHARE_GROUP_STATE: (_delete, _error_fields, PartitionResult),
    READ_SHARE_GROUP_STATE_SUMMARY: (_summary, _summary_fields, SummaryResult),
}


def handlers(broker: Any) -> dict[int, Any]:
    def serve(request: Any, connection: Any) -> Any:
        run, render, failed = _APIS[request.header.api_key]
        body = request.body
        topics = list(body.topics)
        if not cluster_allowed(broker, connection, CLUSTER_ACTION):
            code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            return _response(topics, lambda _t, _p: failed(code, code.description), render)
        if not body.group_id or not topics or any(not t.partitions for t in topics):
            return {"results": []}
        service = getattr(broker, "share_coordinator_service", None)
        if service is None or not broker.metadata_cache.has_topic(SHARE_GROUP_STATE_TOPIC):
            if service is not None:
                service.ensure_state_topic()
            code = ErrorCode.COORDINATOR_NOT_AVAILABLE
            return _response(topics, lambda _t, _p: failed(code, code.description), render)
        coordinator = service.checked_coordinator()
        answers: dict[tuple[int, int], Any] = {}
        waiting: list[defer.Deferred] = []
        for ti, topic in enumerate(topics):
            for pi, p in enumerate(topic.partitions):
                d: defer.Deferred = defer.Deferred()
                d.addCallback(_store(answers, (ti, pi)))
                run(coordinator, body.group_id, bytes(topic.topic_id), p, d.callback)
                if not d.called:
                    waiting.append(d)
        if not waiting:
            return _response(topics, lambda t, p: answers[(t, p)], render)
        done = defer.gatherResults(waiting, consumeErrors=True)
        return done.addCallback(lambda _: _response(topics, lambda t, p: answers[(t, p)], render))

    return {key: serve for key in _APIS}


def _store(answers: dict[tuple[int, int], Any], at: tuple[int, int]) -> Callable[[Any], None]:
    def store(result: Any) -> None:
        answers[at] = result

    return store


def _response(topics: list[Any], result_of: Callable[[int, int], Any], render: _Render) -> dict[str, Any]:
    """The response: one result per request partition, grouped by topic id in request order."""
    grouped: dict[bytes, list[dict[str, Any]]] = {}
    for ti, topic in enumerate(topics):
        parts = grouped.setdefault(bytes(topic.topic_id), [])
        for pi, p in enumerate(topic.partitions):
            parts.append({"partition": p.partition, **render(result_of(ti, pi))})
    return {"results": [{"topic_id": t, "partitions": ps} for t, ps in grouped.items()]}
