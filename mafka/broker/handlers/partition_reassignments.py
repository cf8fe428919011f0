"""AlterPartitionReassignments (45, v0) and ListPartitionReassignments (46, v0), on the controller broker.

Kafka 2.8 semantics (``KafkaApis.handleAlterPartitionReassignmentsRequest`` /
``handleListPartitionReassignmentsRequest``): any broker other than the
active controller answers a top-level NOT_CONTROLLER with no per-partition
results.  Alter answers as soon as the reassignments have started (their
completion is asynchronous; List shows what is still in flight): per
partition NONE, INVALID_REPLICA_ASSIGNMENT, NO_REASSIGNMENT_IN_PROGRESS
(null replicas = cancel, with nothing to cancel) or UNKNOWN_TOPIC_OR_PARTITION.
List returns, per partition being reassigned, its full replica set (RS) and
the adding and removing replicas.

ACLs (Kafka 2.8, checked first, on any broker): Alter needs Alter on the
cluster, List needs Describe on the cluster; refused, the top-level error is
CLUSTER_AUTHORIZATION_FAILED and, as Kafka's ``getErrorResponse``, Alter
gives every partition named that error and List echoes the partitions
named with empty replica lists.  Nothing is reassigned.

The broker provides ``controller`` (``is_active``,
``alter_partition_reassignments``, ``list_partition_reassignments``).
"""

from __future__ import annotations

from typing import Any

from twisted.internet import defer

from mafka.broker.handler_authz import AdminAuthz
from mafka.errors import ErrorCode
from mafka.security.acl import AclOperation

ALTER_PARTITION_REASSIGNMENTS, LIST_PARTITION_REASSIGNMENTS = 45, 46


def _grouped(items: dict[tuple[str, int], Any]) -> dict[str, list[tuple[int, Any]]]:
    out: dict[str, list[tuple[int, Any]]] = {}
    for (topic, partition), value in items.items():
        out.setdefault(topic, []).append((partition, value))
    return out


def _active(broker: Any) -> bool:
    return broker.controller is not None and broker.controller.is_active


def handlers(broker: Any) -> dict[int, Any]:
    authz = AdminAuthz(broker)

    def failed(code: ErrorCode, extra: dict[str, Any]) -> dict[str, Any]:
        return {"throttle_time_ms": 0, "error_code": code, "error_message": code.description, **extra}

    def not_controller(extra: dict[str, Any]) -> dict[str, Any]:
        return failed(ErrorCode.NOT_CONTROLLER, extra)

    @defer.inlineCallbacks
    def alter(request: Any, connection: Any) -> Any:
        body = request.body
        if not authz.allows_cluster(connection, AclOperation.ALTER):
            code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            return failed(code, {"responses": [
                {
                    "name": t.name,
                    "partitions": [
                        {"partition_index": p.partition_index, "error_code": code, "error_message": code.description}
                        for p in t.partitions
                    ],
                }
                for t in body.topics
            ]})
        if not _active(broker):
            return not_controller({"responses": []})
        wanted = {
            (t.name, p.partition_index): None if p.replicas is None else list(p.replicas)
            for t in body.topics
            for p in t.partitions
        }
        code, message, results = yield broker.controller.alter_partition_reassignments(wanted)
        return {
            "throttle_time_ms": 0,
            "error_code": code,
            "error_message": message,
            "responses": [
                {
                    "name": topic,
                    "partitions": [
                        {"partition_index": p, "error_code": err, "error_message": msg}
                        for p, (err, msg) in parts
                    ],
                }
                for topic, parts in _grouped(results).items()
            ],
        }

    @defer.inlineCallbacks
    def list_(request: Any, connection: Any) -> Any:
        body = request.body
        if not authz.allows_cluster(connection, AclOperation.DESCRIBE):
            return failed(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, {"topics": [
                {
                    "name": t.name,
                    "partitions": [
                        {"partition_index": p, "replicas": [], "adding_replicas": [], "removing_replicas": []}
                        for p in t.partition_indexes
                    ],
                }
                for t in body.topics or []
            ]})
        if not _active(broker):
            return not_controller({"topics": []})
        wanted = (
            None
            if body.topics is None
            else [(t.name, p) for t in body.topics for p in t.partition_indexes]
        )
        code, message, results = yield broker.controller.list_partition_reassignments(wanted)
        return {
            "throttle_time_ms": 0,
            "error_code": code,
            "error_message": message,
            "topics": [
                {
                    "name": topic,
                    "partitions": [
                        {
                            "partition_index": p,
                            "replicas": list(a.replicas),
                            "adding_replicas": list(a.adding),
                            "removing_replicas": list(a.removing),
                        }
                        for p, a in parts
                    ],
                }
                for topic, parts in _grouped(results).items()
            ],
        }

    return {ALTER_PARTITION_REASSIGNMENTS: alter, LIST_PARTITION_REASSIGNMENTS: list_}
