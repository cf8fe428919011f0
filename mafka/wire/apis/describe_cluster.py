"""DescribeCluster (api key 60), decoded at v0 (KIP-700).

Flexible from v0.  The cluster id, the controller, the live brokers (with
their racks) and, when asked, the cluster's authorized operations — what
Metadata v11+ no longer carries.  v1 (endpoint types) and v2 (fenced
brokers) belong to KRaft clusters.

Fields follow Kafka's ``DescribeClusterRequest.json`` / ``DescribeClusterResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    60,
    "DescribeCluster",
    advertised=(0, 0),
    decode=(0, 0),
    flexible="0+",
    request=[
        F("include_cluster_authorized_operations", "bool", "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+"),
        F("cluster_id", "string", "0+"),
        F("controller_id", "int32", "0+", default=-1),
        F("brokers", "[]DescribeClusterBroker", "0+",
            F("broker_id", "int32", "0+"),
            F("host", "string", "0+"),
            F("port", "int32", "0+"),
            F("rack", "string", "0+", nullable="0+"),
        ),
        F("cluster_authorized_operations", "int32", "0+", default=-2147483648),
    ],
)
