"""InitProducerId (22, v0–4): producer ids for idempotent and transactional producers.

As Kafka 2.8's ``KafkaApis.handleInitProducerIdRequest``: a request without
a transactional id gets a fresh producer id at epoch 0 (the broker's
ZooKeeper-backed :class:`~mafka.broker.producer_ids.ProducerIdManager`); one
with a transactional id goes to this broker's transaction coordinator, which
answers NOT_COORDINATOR unless it owns the id's ``__transaction_state``
partition.  v3+ carries the producer id and epoch the producer already holds
(KIP-360): both −1 means none, only one of them −1 is INVALID_REQUEST.
PRODUCER_FENCED is answered as INVALID_PRODUCER_EPOCH below v4, which older
clients understand.

Authorization first, as Kafka 2.8: a transactional id needs Write on it
(else TRANSACTIONAL_ID_AUTHORIZATION_FAILED); an idempotent producer (no
transactional id) needs IdempotentWrite on the cluster or — KIP-679, new in
2.8 — Write on at least one topic (Kafka's ``authorizeByResourceType``),
else CLUSTER_AUTHORIZATION_FAILED.  A refused request gets no producer id.

The broker provides ``producer_ids``, ``transaction_service.checked_coordinator()``
and optionally ``authorizer``.
"""

from __future__ import annotations

from typing import Any

from twisted.internet import defer

from mafka.errors import ErrorCode
from mafka.transaction.coordinator import error_for_version, expected_producer_id_and_epoch

from ..handler_authz import (
    IDEMPOTENT_WRITE,
    TOPIC,
    TRANSACTIONAL_ID,
    WRITE,
    allowed,
    allowed_by_resource_type,
    cluster_allowed,
)

INIT_PRODUCER_ID = 22


def _answer(error: int, producer_id: int = -1, producer_epoch: int = -1) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": error, "producer_id": producer_id, "producer_epoch": producer_epoch}


def handlers(broker: Any) -> dict[int, Any]:
    def init_producer_id(request: Any, connection: Any) -> Any:
        body = request.body
        version = request.header.api_version
        refusal = _refusal(body.transactional_id, connection)
        if refusal is not None:
            return _answer(refusal)
        if body.transactional_id is None:
            def failed(failure: Any) -> dict[str, Any]:
                return _answer(ErrorCode.COORDINATOR_NOT_AVAILABLE)

            return broker.producer_ids.generate().addCallbacks(lambda pid: _answer(ErrorCode.NONE, pid, 0), failed)

        error, expected = expected_producer_id_and_epoch(
            getattr(body, "producer_id", -1) if version >= 3 else -1,
            getattr(body, "producer_epoch", -1) if version >= 3 else -1,
        )
        if error != ErrorCode.NONE:
            return _answer(error)
        d: defer.Deferred = defer.Deferred()

        def respond(error: int, producer_id: int, producer_epoch: int) -> None:
            d.callback(_answer(error_for_version(INIT_PRODUCER_ID, version, error), producer_id, producer_epoch))

        broker.transaction_service.checked_coordinator().handle_init_producer_id(
            body.transactional_id, body.transaction_timeout_ms, expected, respond
        )
        return d

    def _refusal(transactional_id: str | None, connection: Any) -> ErrorCode | None:
        """The authorization error of an InitProducerId for *transactional_id*, or None when allowed."""
        if transactional_id is not None:
            if allowed(broker, connection, WRITE, TRANSACTIONAL_ID, transactional_id):
                return None
            return ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
        if cluster_allowed(broker, connection, IDEMPOTENT_WRITE) or allowed_by_resource_type(
            broker, connection, WRITE, TOPIC
        ):
            return None
        return ErrorCode.CLUSTER_AUTHORIZATION_FAILED

    return {INIT_PRODUCER_ID: init_producer_id}
