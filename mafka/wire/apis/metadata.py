"""Metadata (api key 3), decoded at v0–4.

v0: an empty topic list means all topics; v1+: null means all. kcat caps
this API at v4.

Fields follow Kafka's ``MetadataRequest.json`` / ``MetadataResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    3,
    "Metadata",
    advertised=(0, 4),
    decode=(0, 4),
    flexible="9+",
    request=[
        F("topics", "[]MetadataRequestTopic", "0+",
            F("name", "string", "0+", nullable="10+"),
            nullable="1+",
        ),
        F("allow_auto_topic_creation", "bool", "4+", default=True),
    ],
    response=[
        F("throttle_time_ms", "int32", "3+"),
        F("brokers", "[]MetadataResponseBroker", "0+",
            F("node_id", "int32", "0+"),
            F("host", "string", "0+"),
            F("port", "int32", "0+"),
            F("rack", "string", "1+", nullable="1+"),
        ),
        F("cluster_id", "string", "2+", nullable="2+"),
        F("controller_id", "int32", "1+", default=-1),
        F("topics", "[]MetadataResponseTopic", "0+",
            F("error_code", "int16", "0+"),
            F("name", "string", "0+", nullable="12+"),
            F("is_internal", "bool", "1+"),
            F("partitions", "[]MetadataResponsePartition", "0+",
                F("error_code", "int16", "0+"),
                F("partition_index", "int32", "0+"),
                F("leader_id", "int32", "0+"),
                F("replica_nodes", "[]int32", "0+"),
                F("isr_nodes", "[]int32", "0+"),
            ),
        ),
    ],
)
