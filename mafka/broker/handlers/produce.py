"""Produce (0): validate each partition's batch, append through its leader, answer per partition.

acks ∉ {−1, 0, 1} → INVALID_REQUIRED_ACKS for every partition; a client
write to an internal topic → INVALID_TOPIC_EXCEPTION; acks=0 gets no
response, and the connection is closed if any partition failed (Kafka's
way of telling an acks=0 producer).  Partitions are answered grouped by
topic, in request order.

The broker provides ``replica_manager`` and ``max_message_bytes(topic)``.
"""

from __future__ import annotations

from typing import Any

from mafka.errors import ErrorCode
from mafka.topics import INTERNAL_TOPICS

from ..network import NO_RESPONSE
from ..replica_manager import ProduceResult

PRODUCE = 0


def handlers(broker: Any) -> dict[int, Any]:
    def produce(request: Any, connection: Any) -> Any:
        body = request.body
        results: dict[tuple[str, int], ProduceResult] = {}
        entries = []
        for topic in body.topic_data:
            for p in topic.partition_data:
                tp = (topic.name, p.index)
                if body.acks not in (-1, 0, 1):
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

        def respond(appended: dict[tuple[str, int], ProduceResult]) -> Any:
            results.update(appended)
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

        return d.addCallback(respond)

    return {PRODUCE: produce}


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
