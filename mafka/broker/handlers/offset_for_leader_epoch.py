"""OffsetForLeaderEpoch (23, v2–3): where a leader epoch ends on this partition's leader.

Followers ask it when they become followers, to truncate by leader epoch
rather than by high watermark (KIP-101, KIP-279); clients ask it to detect
log truncation (KIP-320).  ``current_leader_epoch`` fences stale askers.
"""

from __future__ import annotations

from typing import Any

from mafka.errors import ErrorCode, KafkaError

OFFSET_FOR_LEADER_EPOCH = 23


def handlers(broker: Any) -> dict[int, Any]:
    def offset_for_leader_epoch(request: Any, connection: Any) -> dict[str, Any]:
        topics = []
        for t in request.body.topics:
            partitions = []
            for p in t.partitions:
                try:
                    epoch, end = broker.replica_manager.end_offset_for_epoch(t.topic, p.partition, p.current_leader_epoch, p.leader_epoch)
                    error = ErrorCode.NONE
                except KafkaError as exc:
                    epoch, end, error = -1, -1, exc.code
                partitions.append({"error_code": error, "partition": p.partition, "leader_epoch": epoch, "end_offset": end})
            topics.append({"topic": t.topic, "partitions": partitions})
        return {"throttle_time_ms": 0, "topics": topics}

    return {OFFSET_FOR_LEADER_EPOCH: offset_for_leader_epoch}
