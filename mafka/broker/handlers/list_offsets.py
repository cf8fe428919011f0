"""ListOffsets (2, v0–7): v0 answers Kafka's old-style offset lists (:meth:`ReplicaManager.legacy_offsets`); −1 latest, −2 earliest, −3 the max timestamp (v7, KIP-734), else by timestamp.

Consumers (replica id −1) see offsets up to the high watermark — up to the
last stable offset with ``isolation_level`` READ_COMMITTED (v2+, KIP-98) —
replicas up to the log end.  No match → offset −1, timestamp −1.  From v4 each
partition may carry ``current_leader_epoch`` (an older one is
FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH) and the answer names
the leader epoch of the offset found.  Right after an election, while the
high watermark lags behind the start of the new epoch, the latest offset
(and a lookup that found nothing readable) is OFFSET_NOT_AVAILABLE from v5,
LEADER_NOT_AVAILABLE before, as Kafka answers.  A partition named twice is
INVALID_REQUEST; partitions this broker does not lead →
NOT_LEADER_OR_FOLLOWER; unknown ones → UNKNOWN_TOPIC_OR_PARTITION.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from mafka.errors import ErrorCode, KafkaError

LIST_OFFSETS = 2


def handlers(broker: Any) -> dict[int, Any]:
    def list_offsets(request: Any, connection: Any) -> dict[str, Any]:
        body = request.body
        version = request.header.api_version
        isolation = (getattr(body, "isolation_level", 0) or 0) if version >= 2 else 0
        counts = Counter((t.name, p.partition_index) for t in body.topics for p in t.partitions)
        topics = []
        for t in body.topics:
            partitions = []
            for p in t.partitions:
                ts, offset, epoch, error = -1, -1, -1, ErrorCode.NONE
                if version == 0:
                    partitions.append(_legacy(broker, t.name, p, body.replica_id))
                    continue
                if counts[(t.name, p.partition_index)] > 1:
                    error = ErrorCode.INVALID_REQUEST
                else:
                    try:
                        ts, offset, epoch = broker.replica_manager.list_offset(
                            t.name,
                            p.partition_index,
                            p.timestamp,
                            replica_id=body.replica_id,
                            current_leader_epoch=p.current_leader_epoch,
                            isolation_level=isolation,
                        )
                    except KafkaError as exc:
                        error = exc.code
                        if error == ErrorCode.OFFSET_NOT_AVAILABLE and version < 5:
                            error = ErrorCode.LEADER_NOT_AVAILABLE
                partitions.append(
                    {
                        "partition_index": p.partition_index,
                        "error_code": error,
                        "timestamp": ts,
                        "offset": offset,
                        "leader_epoch": epoch,
                    }
                )
            topics.append({"name": t.name, "partitions": partitions})
        return {"throttle_time_ms": 0, "topics": topics}

    return {LIST_OFFSETS: list_offsets}


def _legacy(broker: Any, topic: str, p: Any, replica_id: int) -> dict[str, Any]:
    """One partition of a v0 answer (Kafka's ``handleListOffsetRequestV0``: no duplicate check)."""
    try:
        offsets = broker.replica_manager.legacy_offsets(
            topic, p.partition_index, p.timestamp, p.max_num_offsets, replica_id=replica_id
        )
        return {"partition_index": p.partition_index, "error_code": ErrorCode.NONE, "old_style_offsets": offsets}
    except KafkaError as exc:
        return {"partition_index": p.partition_index, "error_code": exc.code, "old_style_offsets": []}
