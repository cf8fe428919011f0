"""MafkaDescribeDelayed (10000, v0): the delayed messages this broker's replicas hold, per due-time bucket.

A partition this broker does not host → NOT_LEADER_OR_FOLLOWER (or
UNKNOWN_TOPIC_OR_PARTITION when the topic has no such partition); a replica
with no delay index answers zeros.  Followers answer too (their index follows
the same log), with ``is_leader`` false.

Authorization: its Kafka relative is a per-topic describe (ListOffsets,
OffsetForLeaderEpoch): each topic needs Describe, else each of its
partitions is TOPIC_AUTHORIZATION_FAILED with zeros, whether it exists or
not (checked first).  The broker-wide figures (delivered records, lateness)
name no topic and are answered to everyone, as the broker's metrics are.
"""

from __future__ import annotations

from typing import Any

from mafka.errors import ErrorCode

from ..handler_authz import DESCRIBE, TOPIC, allowed_names

MAFKA_DESCRIBE_DELAYED = 10000


def handlers(broker: Any) -> dict[int, Any]:
    def partition_response(topic: str, index: int, describable: set[str]) -> dict[str, Any]:
        out: dict[str, Any] = {"partition_index": index, "error_code": ErrorCode.NONE, "is_leader": False,
                               "pending_groups": 0, "pending_records": 0, "buckets": []}
        if topic not in describable:
            out["error_code"] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            return out
        partition = broker.replica_manager.partitions.get((topic, index))
        if partition is None:
            known = broker.metadata_cache.partition(topic, index) is not None
            out["error_code"] = ErrorCode.NOT_LEADER_OR_FOLLOWER if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            return out
        out["is_leader"] = partition.is_leader
        if partition.delays is not None:
            idx = partition.delays.index
            out["pending_groups"] = idx.pending_groups()
            out["pending_records"] = idx.pending_records()
            out["buckets"] = [{"start_ms": b.start_ms, "pending_records": b.pending_records,
                               "delivered_records": b.delivered_records}
                              for _, b in sorted(idx.buckets.items())]
        return out

    def describe(request: Any, connection: Any) -> dict[str, Any]:
        delivery = broker.delayed_delivery
        p50, p99 = delivery.lateness_percentiles(0.5, 0.99)
        describable = allowed_names(broker, connection, DESCRIBE, TOPIC, (t.name for t in request.body.topics))
        return {
            "throttle_time_ms": 0,
            "delivered_records": delivery.delivered_records,
            "lateness_p50_ms": -1 if p50 is None else p50,
            "lateness_p99_ms": -1 if p99 is None else p99,
            "topics": [{"name": t.name, "partitions": [partition_response(t.name, i, describable)
                                                      for i in t.partition_indexes]}
                       for t in request.body.topics],
        }

    return {MAFKA_DESCRIBE_DELAYED: describe}
