"""CreatePartitions (api key 37), decoded at v0–1.

v0 and v1 share one layout.

Fields follow Kafka's ``CreatePartitionsRequest.json`` / ``CreatePartitionsResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    37,
    "CreatePartitions",
    advertised=(0, 1),
    decode=(0, 1),
    flexible="2+",
    request=[
        F("topics", "[]CreatePartitionsTopic", "0+",
            F("name", "string", "0+"),
            F("count", "int32", "0+"),
            F("assignments", "[]CreatePartitionsAssignment", "0+",
                F("broker_ids", "[]int32", "0+"),
                nullable="0+",
            ),
        ),
        F("timeout_ms", "int32", "0+"),
        F("validate_only", "bool", "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("results", "[]CreatePartitionsTopicResult", "0+",
            F("name", "string", "0+"),
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+"),
        ),
    ],
)
