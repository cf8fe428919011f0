"""OffsetFetch (api key 9), decoded at v1–3.

v2: null topics = all, plus a top-level error_code; v3 adds
throttle_time_ms.

Fields follow Kafka's ``OffsetFetchRequest.json`` / ``OffsetFetchResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    9,
    "OffsetFetch",
    advertised=(0, 3),
    decode=(1, 3),
    flexible="6+",
    request=[
        F("group_id", "string", "0-7"),
        F("topics", "[]OffsetFetchRequestTopic", "0-7",
            F("name", "string", "0-7"),
            F("partition_indexes", "[]int32", "0-7"),
            nullable="2-7",
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "3+"),
        F("topics", "[]OffsetFetchResponseTopic", "0-7",
            F("name", "string", "0-7"),
            F("partitions", "[]OffsetFetchResponsePartition", "0-7",
                F("partition_index", "int32", "0-7"),
                F("committed_offset", "int64", "0-7"),
                F("metadata", "string", "0-7", nullable="0-7"),
                F("error_code", "int16", "0-7"),
            ),
        ),
        F("error_code", "int16", "2-7"),
    ],
)
