"""DescribeCluster (60, v0), KIP-700: cluster id, controller and live brokers, from the metadata cache.

As Kafka's ``handleDescribeCluster``: the brokers are the live ones with an
endpoint on the listener the request came in on (each client sees its own
listener's addresses), each with its rack (null if none); the controller is
the one the cache last heard from (−1 if none).  Cluster authorized
operations are those of a broker without an authorizer — every operation
the cluster resource supports — when asked, else Kafka's "not provided".
"""

from __future__ import annotations

from typing import Any

from mafka.broker.authorized_operations import CLUSTER_OPERATIONS, NOT_PROVIDED
from mafka.errors import ErrorCode

DESCRIBE_CLUSTER = 60


def handlers(broker: Any) -> dict[int, Any]:
    def describe_cluster(request: Any, connection: Any) -> dict[str, Any]:
        cache = broker.metadata_cache
        asked = bool(request.body.include_cluster_authorized_operations)
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "cluster_id": cache.cluster_id or "",
            "controller_id": cache.controller_id,
            "brokers": [
                {"broker_id": b, "host": host, "port": port, "rack": rack}
                for b, host, port, rack in cache.alive_brokers(connection.listener)
            ],
            "cluster_authorized_operations": CLUSTER_OPERATIONS if asked else NOT_PROVIDED,
        }

    return {DESCRIBE_CLUSTER: describe_cluster}
