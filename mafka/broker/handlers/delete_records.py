"""DeleteRecords (21): move partitions' log start offsets up (−1 = up to the high watermark).

Whole segments below the new start go at the next retention pass; reads
below it get OFFSET_OUT_OF_RANGE at once.  Offsets above the high watermark
→ OFFSET_OUT_OF_RANGE.

Authorization, as Kafka 2.8's ``handleDeleteRecordsRequest``: Delete on each
topic; a refused topic's partitions are TOPIC_AUTHORIZATION_FAILED (low
watermark −1) and nothing is deleted from them, whether the topic exists or
not.  Partitions are answered in request order.
"""

from __future__ import annotations

from typing import Any

from mafka.errors import ErrorCode, KafkaError

from ..handler_authz import DELETE, TOPIC, allowed_names

DELETE_RECORDS = 21


def handlers(broker: Any) -> dict[int, Any]:
    def delete_records(request: Any, connection: Any) -> dict[str, Any]:
        deletable = allowed_names(broker, connection, DELETE, TOPIC, (t.name for t in request.body.topics))
        topics = []
        for t in request.body.topics:
            partitions = []
            for p in t.partitions:
                low, error = -1, ErrorCode.TOPIC_AUTHORIZATION_FAILED
                if t.name in deletable:
                    try:
                        low, error = broker.replica_manager.delete_records(t.name, p.partition_index, p.offset), ErrorCode.NONE
                    except KafkaError as exc:
                        low, error = -1, exc.code
                partitions.append({"partition_index": p.partition_index, "low_watermark": low, "error_code": error})
            topics.append({"name": t.name, "partitions": partitions})
        return {"throttle_time_ms": 0, "topics": topics}

    return {DELETE_RECORDS: delete_records}
