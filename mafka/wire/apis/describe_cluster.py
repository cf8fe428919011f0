"""DescribeCluster (api key 60), decoded at v0–2.

Flexible from v0.  v0 (KIP-700): the cluster id, the controller, the live
brokers (with their racks) and, when asked, the cluster's authorized
operations — what Metadata v11+ no longer carries.  v1 (KIP-919) adds the
endpoint type asked for and answered (1 brokers, 2 controllers); v2
(KIP-1073) include_fenced_brokers and each broker's is_fenced.  kafka-python
3.0's ``describe_cluster`` needs v1+: it reads the answer's endpoint type.

Fields follow Kafka's ``DescribeClusterRequest.json`` / ``DescribeClusterResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    60,
    "DescribeCluster",
    advertised=(0, 2),
    decode=(0, 2),
    flexible="0+",
    request=[
        F("include_cluster_authorized_operations", "bool", "0+"),
        F("endpoint_type", "int8", "1+", default=1),
        F("include_fenced_brokers", "bool", "2+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+"),
        F("endpoint_type", "int8", "1+", default=1),
        F("cluster_id", "string", "0+"),
        F("controller_id", "int32", "0+", default=-1),
        F("brokers", "[]DescribeClusterBroker", "0+",
            F("broker_id", "int32", "0+"),
            F("host", "string", "0+"),
            F("port", "int32", "0+"),
            F("rack", "string", "0+", nullable="0+"),
            F("is_fenced", "bool", "2+"),
        ),
        F("cluster_authorized_operations", "int32", "0+", default=-2147483648),
    ],
)
