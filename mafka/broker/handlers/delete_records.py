"""DeleteRecords (21): move partitions' log start offsets up (−1 = up to the high watermark).

Whole segments below the new start go at the next retention pass; reads
below it get OFFSET_OUT_OF_RANGE at once.  Offsets above the high watermark
→ OFFSET_OUT_OF_RANGE.
"""

from __future__ import annotations

from typing import Any

from mafka.errors import ErrorCode, KafkaError

DELETE_RECORDS = 21


def handlers(broker: Any) -> dict[int, Any]:
    def delete_records(request: Any, connection: Any) -> dict[str, Any]:
        topics = []
        for t in request.body.topics:
            partitions = []
            for p in t.partitions:
                try:
                    low = broker.replica_manager.delete_records(t.name, p.partition_index, p.offset)
                    error = ErrorCode.NONE
                except KafkaError as exc:
                    low, error = -1, exc.code
                partitions.append({"partition_index": p.partition_index, "low_watermark": low, "error_code": error})
            topics.append({"name": t.name, "partitions": partitions})
        return {"throttle_time_ms": 0, "topics": topics}

    return {DELETE_RECORDS: delete_records}
