"""CreateTopics (api key 19), decoded at v2–4.

v2–4 share one layout; v4 accepts −1 partitions / replication factor (the
broker default).

Fields follow Kafka's ``CreateTopicsRequest.json`` / ``CreateTopicsResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    19,
    "CreateTopics",
    advertised=(0, 4),
    decode=(2, 4),
    flexible="5+",
    request=[
        F("topics", "[]CreatableTopic", "0+",
            F("name", "string", "0+"),
            F("num_partitions", "int32", "0+"),
            F("replication_factor", "int16", "0+"),
            F("assignments", "[]CreatableReplicaAssignment", "0+",
                F("partition_index", "int32", "0+"),
                F("broker_ids", "[]int32", "0+"),
            ),
            F("configs", "[]CreatableTopicConfig", "0+",
                F("name", "string", "0+"),
                F("value", "string", "0+", nullable="0+"),
            ),
        ),
        F("timeout_ms", "int32", "0+", default=60000),
        F("validate_only", "bool", "1+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "2+"),
        F("topics", "[]CreatableTopicResult", "0+",
            F("name", "string", "0+"),
            F("error_code", "int16", "0+"),
            F("error_message", "string", "1+", nullable="0+"),
        ),
    ],
)
