"""DescribeProducers (61, v0), KIP-664: the active producers of each partition, from its producer state.

As Kafka's ``handleDescribeProducersRequest`` / ``ReplicaManager.activeProducerState``:

* a topic the principal may not Read → TOPIC_AUTHORIZATION_FAILED for each of
  its partitions, whether it exists or not (checked first);
* a topic the metadata cache does not know → UNKNOWN_TOPIC_OR_PARTITION for
  each of its partitions;
* a partition this broker does not host → NOT_LEADER_OR_FOLLOWER (or
  UNKNOWN_TOPIC_OR_PARTITION when the topic has no such partition);
* otherwise every producer id the replica's state holds — the leader's, or
  a follower's (followers replay the same batches; Kafka's admin client may
  target a replica with ``DescribeProducersOptions.brokerId``) — with its
  epoch, last sequence (−1 when no batch is retained), last timestamp,
  coordinator epoch (−1: no transaction marker yet) and the first offset of
  its open transaction (−1: none) — what ``kafka-transactions.sh abort
  --start-offset`` looks a transaction up by.
"""

from __future__ import annotations

from typing import Any

from mafka.errors import ErrorCode

from ..handler_authz import READ, TOPIC, allowed

DESCRIBE_PRODUCERS = 61


def _producer(entry: Any) -> dict[str, Any]:
    first = entry.current_txn_first_offset
    return {
        "producer_id": entry.producer_id,
        "producer_epoch": entry.producer_epoch,
        "last_sequence": entry.last_seq,
        "last_timestamp": entry.last_timestamp,
        "coordinator_epoch": entry.coordinator_epoch,
        "current_txn_start_offset": -1 if first is None else first,
    }


def handlers(broker: Any) -> dict[int, Any]:
    def partition_response(topic: str, index: int) -> dict[str, Any]:
        partition = broker.replica_manager.partitions.get((topic, index))
        if partition is None:
            known = broker.metadata_cache.partition(topic, index) is not None
            error = (
                ErrorCode.NOT_LEADER_OR_FOLLOWER if known else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            )
            return {
                "partition_index": index,
                "error_code": error,
                "error_message": None,
                "active_producers": [],
            }
        producers = partition.producers.producers
        return {
            "partition_index": index,
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "active_producers": [_producer(producers[pid]) for pid in sorted(producers)],
        }

    def describe_producers(request: Any, connection: Any) -> dict[str, Any]:
        topics = []
        for t in request.body.topics:
            if not allowed(broker, connection, READ, TOPIC, t.name):
                topic_error: ErrorCode | None = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif not broker.metadata_cache.has_topic(t.name):
                topic_error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                topic_error = None
            if topic_error is None:
                partitions = [partition_response(t.name, index) for index in t.partition_indexes]
            else:
                partitions = [
                    {"partition_index": index, "error_code": topic_error, "error_message": None, "active_producers": []}
                    for index in t.partition_indexes
                ]
            topics.append({"name": t.name, "partitions": partitions})
        return {"throttle_time_ms": 0, "topics": topics}

    return {DESCRIBE_PRODUCERS: describe_producers}
