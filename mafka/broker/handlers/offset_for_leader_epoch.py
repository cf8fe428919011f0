"""OffsetForLeaderEpoch (23, v2–3): where a leader epoch ends on this partition's leader.

Followers ask it when they become followers, to truncate by leader epoch
rather than by high watermark (KIP-101, KIP-279); clients ask it to detect
log truncation (KIP-320).  ``current_leader_epoch`` fences stale askers.

Authorization, as Kafka 2.8's ``handleOffsetForLeaderEpochRequest``:
ClusterAction on the cluster allows every topic (brokers); otherwise each
topic needs Describe (KIP-320's consumers), whatever ``replica_id`` says.
A refused topic's partitions are TOPIC_AUTHORIZATION_FAILED (epoch and end
offset −1) and come after the allowed topics, as Kafka lists them.
"""

from __future__ import annotations

from typing import Any

from mafka.errors import ErrorCode, KafkaError

from ..handler_authz import CLUSTER_ACTION, DESCRIBE, TOPIC, cluster_allowed, split_allowed

OFFSET_FOR_LEADER_EPOCH = 23


def handlers(broker: Any) -> dict[int, Any]:
    def offset_for_leader_epoch(request: Any, connection: Any) -> dict[str, Any]:
        requested: list[Any] = list(request.body.topics)
        refused: list[Any] = []
        if cluster_allowed(broker, connection, CLUSTER_ACTION):
            allowed = requested
        else:
            allowed, refused = split_allowed(broker, connection, DESCRIBE, TOPIC, requested, _topic_of)
        topics = []
        for t in allowed:
            partitions = []
            for p in t.partitions:
                try:
                    epoch, end = broker.replica_manager.end_offset_for_epoch(t.topic, p.partition, p.current_leader_epoch, p.leader_epoch)
                    error = ErrorCode.NONE
                except KafkaError as exc:
                    epoch, end, error = -1, -1, exc.code
                partitions.append({"error_code": error, "partition": p.partition, "leader_epoch": epoch, "end_offset": end})
            topics.append({"topic": t.topic, "partitions": partitions})
        for t in refused:
            topics.append({"topic": t.topic, "partitions": [
                {"error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "partition": p.partition, "leader_epoch": -1,
                 "end_offset": -1}
                for p in t.partitions
            ]})
        return {"throttle_time_ms": 0, "topics": topics}

    return {OFFSET_FOR_LEADER_EPOCH: offset_for_leader_epoch}


def _topic_of(topic: Any) -> str:
    return str(topic.topic)
