"""WriteTxnMarkers (27, v0–1): a transaction coordinator's COMMIT / ABORT markers, written here as leader.

Kafka 2.8's ``KafkaApis.handleWriteTxnMarkersRequest``:

* every marker's partitions are appended as one control batch each
  (producer id and epoch, the coordinator epoch in the record's value)
  through the replica manager with acks=all, bounded by
  ``request.timeout.ms``;
* a partition this broker does not host → UNKNOWN_TOPIC_OR_PARTITION; one it
  hosts as follower → NOT_LEADER_OR_FOLLOWER; a stale coordinator epoch →
  TRANSACTION_COORDINATOR_FENCED; an older producer epoch →
  INVALID_PRODUCER_EPOCH (all decided by the replica manager / partition);
* once a marker is written to a ``__consumer_offsets`` partition, the group
  coordinator makes that producer's pending transactional offsets visible
  (COMMIT) or drops them (ABORT) — Kafka's ``scheduleHandleTxnCompletion``;
* the response lists every partition of every marker, answered once all
  appends finished.

Only brokers may send it: without ClusterAction on the cluster every
partition of every marker is CLUSTER_AUTHORIZATION_FAILED and nothing is
written (Kafka's ``authorizeClusterOperation`` answered through the
request's error response) — a client cannot commit or abort another
producer's transaction by forging markers (the CVE-2018-1288 class).

The broker provides ``replica_manager.append_txn_markers``,
``group_service.coordinator.complete_transaction`` and optionally ``authorizer``.
"""

from __future__ import annotations

import logging
from typing import Any

from twisted.internet import defer

from mafka.errors import ErrorCode
from mafka.topics import GROUP_METADATA_TOPIC

from ..handler_authz import CLUSTER_ACTION, cluster_allowed

WRITE_TXN_MARKERS = 27

log = logging.getLogger("mafka.broker.handlers.write_txn_markers")


def handlers(broker: Any) -> dict[int, Any]:
    def write_one(marker: Any) -> defer.Deferred:
        entries = [
            (t.name, index, marker.producer_id, marker.producer_epoch, marker.coordinator_epoch, marker.transaction_result)
            for t in marker.topics
            for index in t.partition_indexes
        ]
        d = broker.replica_manager.append_txn_markers(entries, timeout_ms=broker.config.request_timeout_ms)

        def written(errors: dict[tuple[str, int], ErrorCode]) -> dict[str, Any]:
            offsets_partitions = [
                index for (topic, index), error in errors.items()
                if topic == GROUP_METADATA_TOPIC and error == ErrorCode.NONE
            ]
            if offsets_partitions:
                coordinator = broker.group_service.coordinator
                for index in sorted(offsets_partitions):
                    coordinator.complete_transaction(index, marker.producer_id, marker.transaction_result)
            topics: dict[str, list[dict[str, int]]] = {}
            for t in marker.topics:
                for index in t.partition_indexes:
                    error = errors.get((t.name, index), ErrorCode.UNKNOWN_SERVER_ERROR)
                    topics.setdefault(t.name, []).append({"partition_index": index, "error_code": error})
            return {
                "producer_id": marker.producer_id,
                "topics": [{"name": name, "partitions": parts} for name, parts in topics.items()],
            }

        return d.addCallback(written)

    def write_txn_markers(request: Any, connection: Any) -> Any:
        if not cluster_allowed(broker, connection, CLUSTER_ACTION):
            return {"markers": [_refused(m, ErrorCode.CLUSTER_AUTHORIZATION_FAILED) for m in request.body.markers]}
        d = defer.gatherResults([write_one(m) for m in request.body.markers], consumeErrors=True)
        return d.addCallback(lambda markers: {"markers": markers})

    return {WRITE_TXN_MARKERS: write_txn_markers}


def _refused(marker: Any, error: ErrorCode) -> dict[str, Any]:
    """*error* for every partition of *marker* (Kafka's ``WriteTxnMarkersRequest.getErrorResponse``)."""
    topics: dict[str, list[dict[str, int]]] = {}
    for t in marker.topics:
        topics.setdefault(t.name, []).extend({"partition_index": i, "error_code": error} for i in t.partition_indexes)
    return {"producer_id": marker.producer_id, "topics": [{"name": n, "partitions": p} for n, p in topics.items()]}
