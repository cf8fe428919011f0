"""Produce (0): validate each partition's batch, append through its leader, answer per partition.

Authorization first, as Kafka 2.8's ``handleProduceRequest``:

* a request whose records are transactional (the first batch of any
  partition has the transactional flag, Kafka's
  ``RequestUtils.hasTransactionalRecords``) needs a transactional id and
  Write on it, else every partition is TRANSACTIONAL_ID_AUTHORIZATION_FAILED
  and nothing is appended;
* each topic needs Write; a refused topic's partitions are
  TOPIC_AUTHORIZATION_FAILED and nothing is appended to them, the others
  proceed.  (Idempotent producers need nothing more here: since KIP-679,
  Kafka 2.8 checks IdempotentWrite only at InitProducerId.)

Then acks ∉ {−1, 0, 1} → INVALID_REQUIRED_ACKS for every partition; a client
write to an internal topic → INVALID_TOPIC_EXCEPTION; acks=0 gets no
response, and the connection is closed if any partition failed — a refusal
included, as Kafka does: it is the only way to tell an acks=0 producer.
Partitions are answered grouped by topic, in request order.

The broker provides ``replica_manager``, ``max_message_bytes(topic)`` and
optionally ``authorizer``.
"""

from __future__ import annotations

from typing import Any

from mafka.errors import ErrorCode
from mafka.topics import INTERNAL_TOPICS
from mafka.wire.batch import BATCH_HEADER_SIZE, MAGIC_OFFSET, BatchHeader

from ..handler_authz import TOPIC, TRANSACTIONAL_ID, WRITE, allowed, allowed_names
from ..network import NO_RESPONSE
from ..replica_manager import ProduceResult

PRODUCE = 0


def handlers(broker: Any) -> dict[int, Any]:
    def produce(request: Any, connection: Any) -> Any:
        body = request.body
        results: dict[tuple[str, int], ProduceResult] = {}
        if _has_transactional_records(body) and not _transactional_id_writable(body, connection):
            refusal = ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            for topic in body.topic_data:
                for p in topic.partition_data:
                    results[(topic.name, p.index)] = ProduceResult(refusal, error_message=refusal.description)
            return _answer(body, connection, results)
        writable = allowed_names(broker, connection, WRITE, TOPIC, (t.name for t in body.topic_data))
        entries = []
        for topic in body.topic_data:
            for p in topic.partition_data:
                tp = (topic.name, p.index)
                if topic.name not in writable:
                    results[tp] = ProduceResult(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                elif body.acks not in (-1, 0, 1):
                    results[tp] = ProduceResult(ErrorCode.INVALID_REQUIRED_ACKS)
                elif topic.name in INTERNAL_TOPICS:
                    results[tp] = ProduceResult(ErrorCode.INVALID_TOPIC_EXCEPTION)
                else:
                    entries.append((topic.name, p.index, p.records))
        d = broker.replica_manager.append_records(
            entries,
            acks=body.acks,
            timeout_ms=body.timeout_ms,
            produce_version=request.header.api_version,
            max_message_bytes=broker.max_message_bytes,
        )

        return d.addCallback(lambda appended: _answer(body, connection, {**results, **appended}))

    def _transactional_id_writable(body: Any, connection: Any) -> bool:
        transactional_id = getattr(body, "transactional_id", None)
        return transactional_id is not None and allowed(broker, connection, WRITE, TRANSACTIONAL_ID, transactional_id)

    return {PRODUCE: produce}


def _answer(body: Any, connection: Any, results: dict[tuple[str, int], ProduceResult]) -> Any:
    """The answer to *body* from every partition's result (acks=0: none, and the connection closed on an error)."""
    if body.acks == 0:
        if any(r.error != ErrorCode.NONE for r in results.values()):
            connection.close()
        return NO_RESPONSE
    return {
        "responses": [
            {
                "name": topic.name,
                "partition_responses": [_partition(p.index, results[(topic.name, p.index)]) for p in topic.partition_data],
            }
            for topic in body.topic_data
        ],
        "throttle_time_ms": 0,
    }


def _has_transactional_records(body: Any) -> bool:
    """Kafka's ``RequestUtils.hasTransactionalRecords``: the first batch of some partition is transactional.

    Kafka looks at each partition's first batch only; legacy (magic 0/1)
    message sets are never transactional.
    """
    for topic in body.topic_data:
        for p in topic.partition_data:
            records = p.records
            if (
                records is not None
                and len(records) >= BATCH_HEADER_SIZE
                and records[MAGIC_OFFSET] == 2
                and BatchHeader(records).is_transactional
            ):
                return True
    return False


def _partition(index: int, r: ProduceResult) -> dict[str, Any]:
    return {
        "index": index,
        "error_code": r.error,
        "base_offset": r.base_offset,
        "log_append_time_ms": r.log_append_time,
        "log_start_offset": r.log_start_offset,
        "record_errors": [
            {"batch_index": i, "batch_index_error_message": m} for i, m in (r.record_errors or ())
        ],
        "error_message": r.error_message,
    }
