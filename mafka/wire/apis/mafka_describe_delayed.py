"""MafkaDescribeDelayed (api key 10000, Mafka's own), v0: the delayed messages each partition holds.

Mafka's APIs use keys from 10000 up, far from Kafka's, and are not advertised
in ApiVersions (Kafka clients never see them); ``mafka delayed --describe``
sends v0.  Per partition: pending groups and records, and per due-time bucket
(``start_ms``, one minute wide) what is pending; per broker, the delivery
lateness percentiles of its recent deliveries.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    10000,
    "MafkaDescribeDelayed",
    advertised=None,
    decode=(0, 0),
    flexible="0+",
    request=[
        F("topics", "[]TopicRequest", "0+",
            F("name", "string", "0+"),
            F("partition_indexes", "[]int32", "0+"),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("delivered_records", "int64", "0+"),
        F("lateness_p50_ms", "int64", "0+", default=-1),
        F("lateness_p99_ms", "int64", "0+", default=-1),
        F("topics", "[]TopicResponse", "0+",
            F("name", "string", "0+"),
            F("partitions", "[]PartitionResponse", "0+",
                F("partition_index", "int32", "0+"),
                F("error_code", "int16", "0+"),
                F("is_leader", "bool", "0+"),
                F("pending_groups", "int64", "0+"),
                F("pending_records", "int64", "0+"),
                F("buckets", "[]Bucket", "0+",
                    F("start_ms", "int64", "0+"),
                    F("pending_records", "int64", "0+"),
                    F("delivered_records", "int64", "0+"),
                ),
            ),
        ),
    ],
)
