"""DeleteRecords (api key 21), decoded at v0–1.

v0 and v1 share one layout.

Fields follow Kafka's ``DeleteRecordsRequest.json`` / ``DeleteRecordsResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    21,
    "DeleteRecords",
    advertised=(0, 1),
    decode=(0, 1),
    flexible="2+",
    request=[
        F("topics", "[]DeleteRecordsTopic", "0+",
            F("name", "string", "0+"),
            F("partitions", "[]DeleteRecordsPartition", "0+",
                F("partition_index", "int32", "0+"),
                F("offset", "int64", "0+"),
            ),
        ),
        F("timeout_ms", "int32", "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("topics", "[]DeleteRecordsTopicResult", "0+",
            F("name", "string", "0+"),
            F("partitions", "[]DeleteRecordsPartitionResult", "0+",
                F("partition_index", "int32", "0+"),
                F("low_watermark", "int64", "0+"),
                F("error_code", "int16", "0+"),
            ),
        ),
    ],
)
