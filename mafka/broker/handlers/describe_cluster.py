"""DescribeCluster (60, v0–2): cluster id, controller and live brokers, from the metadata cache.

As Kafka's ``handleDescribeCluster`` (``AuthHelper.computeDescribeClusterResponse``):

* the brokers are the live ones with an endpoint on the listener the
  request came in on (each client sees its own listener's addresses), each
  with its rack (null if none) and, from v2, ``is_fenced`` — always false:
  a ZooKeeper-mode broker is either registered or gone, so
  ``include_fenced_brokers`` changes nothing;
* the controller is the one the cache last heard from, −1 if none or if it
  is not among those brokers;
* cluster authorized operations, when asked, are what the principal may do
  to the cluster if it may Describe it, else 0 (every operation the cluster
  supports without an authorizer); not asked, Kafka's "not provided".  No
  other check: as in Kafka, anyone may describe the cluster;
* a broker serves endpoint type 1 (brokers) only: type 2 (controllers, a
  KRaft quorum's) is MISMATCHED_ENDPOINT_TYPE, any other
  UNSUPPORTED_ENDPOINT_TYPE (INVALID_REQUEST at v0, which cannot ask).
"""

from __future__ import annotations

from typing import Any

from mafka.broker.authorized_operations import NOT_PROVIDED
from mafka.errors import ErrorCode

from ..handler_authz import cluster_operations

DESCRIBE_CLUSTER = 60
BROKER_ENDPOINTS, CONTROLLER_ENDPOINTS = 1, 2


def handlers(broker: Any) -> dict[int, Any]:
    def refused(code: ErrorCode, message: str) -> dict[str, Any]:
        return {
            "throttle_time_ms": 0,
            "error_code": code,
            "error_message": message,
            "cluster_id": "",
            "brokers": [],
        }

    def describe_cluster(request: Any, connection: Any) -> dict[str, Any]:
        body = request.body
        v0 = request.header.api_version == 0
        if body.endpoint_type not in (BROKER_ENDPOINTS, CONTROLLER_ENDPOINTS):
            code = ErrorCode.INVALID_REQUEST if v0 else ErrorCode.UNSUPPORTED_ENDPOINT_TYPE
            return refused(code, f"Unsupported endpoint type {body.endpoint_type}")
        if body.endpoint_type != BROKER_ENDPOINTS:
            code = ErrorCode.INVALID_REQUEST if v0 else ErrorCode.MISMATCHED_ENDPOINT_TYPE
            return refused(
                code,
                "The request was sent to an endpoint of type BROKER, but we wanted an endpoint of type CONTROLLER",
            )
        cache = broker.metadata_cache
        brokers = [
            {"broker_id": b, "host": host, "port": port, "rack": rack, "is_fenced": False}
            for b, host, port, rack in cache.alive_brokers(connection.listener)
        ]
        controller = (
            cache.controller_id
            if any(b["broker_id"] == cache.controller_id for b in brokers)
            else -1
        )
        asked = bool(body.include_cluster_authorized_operations)
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "endpoint_type": BROKER_ENDPOINTS,
            "cluster_id": cache.cluster_id or "",
            "controller_id": controller,
            "brokers": brokers,
            "cluster_authorized_operations": cluster_operations(broker, connection) if asked else NOT_PROVIDED,
        }

    return {DESCRIBE_CLUSTER: describe_cluster}
