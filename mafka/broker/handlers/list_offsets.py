"""ListOffsets (2, v1–2): −1 latest (the high watermark), −2 earliest (log start), else by timestamp.

No match by timestamp → offset −1, timestamp −1.  Partitions this broker
does not lead → NOT_LEADER_OR_FOLLOWER; unknown ones → UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

from typing import Any

from mafka.errors import ErrorCode, KafkaError

LIST_OFFSETS = 2


def handlers(broker: Any) -> dict[int, Any]:
    def list_offsets(request: Any, connection: Any) -> dict[str, Any]:
        body = request.body
        topics = []
        for t in body.topics:
            partitions = []
            for p in t.partitions:
                try:
                    ts, offset = broker.replica_manager.list_offset(t.name, p.partition_index, p.timestamp, replica_id=body.replica_id)
                    error = ErrorCode.NONE
                except KafkaError as exc:
                    ts, offset, error = -1, -1, exc.code
                partitions.append({"partition_index": p.partition_index, "error_code": error, "timestamp": ts, "offset": offset})
            topics.append({"name": t.name, "partitions": partitions})
        return {"throttle_time_ms": 0, "topics": topics}

    return {LIST_OFFSETS: list_offsets}
