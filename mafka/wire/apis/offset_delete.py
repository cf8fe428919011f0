"""OffsetDelete (api key 47), decoded at v0 (KIP-496).

Deletes a group's committed offsets of some partitions; the response has a
top-level error_code (the group's) and one per partition.

Fields follow Kafka's ``OffsetDeleteRequest.json`` / ``OffsetDeleteResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    47,
    "OffsetDelete",
    advertised=(0, 0),
    decode=(0, 0),
    flexible="none",
    request=[
        F("group_id", "string", "0+"),
        F(
            "topics",
            "[]OffsetDeleteRequestTopic",
            "0+",
            F("name", "string", "0+"),
            F(
                "partitions",
                "[]OffsetDeleteRequestPartition",
                "0+",
                F("partition_index", "int32", "0+"),
            ),
        ),
    ],
    response=[
        F("error_code", "int16", "0+"),
        F("throttle_time_ms", "int32", "0+"),
        F(
            "topics",
            "[]OffsetDeleteResponseTopic",
            "0+",
            F("name", "string", "0+"),
            F(
                "partitions",
                "[]OffsetDeleteResponsePartition",
                "0+",
                F("partition_index", "int32", "0+"),
                F("error_code", "int16", "0+"),
            ),
        ),
    ],
)
