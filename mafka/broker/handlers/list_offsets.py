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

Authorization (Kafka 2.8, every version): Describe on each topic, whoever
asks — Kafka 2.8 checks no ClusterAction for a replica's ListOffsets.  A
refused topic's partitions are TOPIC_AUTHORIZATION_FAILED (offset and
timestamp −1), whether the topic exists or not, and come after the allowed
topics, as Kafka lists them.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from mafka.errors import ErrorCode, KafkaError

from ..handler_authz import DESCRIBE, TOPIC, split_allowed

LIST_OFFSETS = 2


def handlers(broker: Any) -> dict[int, Any]:
    def list_offsets(request: Any, connection: Any) -> dict[str, Any]:
        body = request.body
        version = request.header.api_version
        isolation = (getattr(body, "isolation_level", 0) or 0) if version >= 2 else 0
        counts = Counter((t.name, p.partition_index) for t in body.topics for p in t.partitions)
        allowed, refused = split_allowed(broker, connection, DESCRIBE, TOPIC, body.topics, _name_of)
        topics = []
        for t in allowed:
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
        topics.extend(_refused(t, version) for t in refused)
        return {"throttle_time_ms": 0, "topics": topics}

    return {LIST_OFFSETS: list_offsets}


def _name_of(topic: Any) -> str:
    return str(topic.name)


def _refused(topic: Any, version: int) -> dict[str, Any]:
    """A topic the principal may not Describe: TOPIC_AUTHORIZATION_FAILED for each of its partitions."""
    error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
    if version == 0:
        partitions = [{"partition_index": p.partition_index, "error_code": error, "old_style_offsets": []}
                      for p in topic.partitions]
    else:
        partitions = [{"partition_index": p.partition_index, "error_code": error, "timestamp": -1, "offset": -1,
                       "leader_epoch": -1} for p in topic.partitions]
    return {"name": topic.name, "partitions": partitions}


def _legacy(broker: Any, topic: str, p: Any, replica_id: int) -> dict[str, Any]:
    """One partition of a v0 answer (Kafka's ``handleListOffsetRequestV0``: no duplicate check)."""
    try:
        offsets = broker.replica_manager.legacy_offsets(
            topic, p.partition_index, p.timestamp, p.max_num_offsets, replica_id=replica_id
        )
        return {"partition_index": p.partition_index, "error_code": ErrorCode.NONE, "old_style_offsets": offsets}
    except KafkaError as exc:
        return {"partition_index": p.partition_index, "error_code": exc.code, "old_style_offsets": []}
