"""DescribeLogDirs (api key 35), decoded at v1–4.

v1 is v0 (Kafka 4.0 dropped v0, and no client Mafka is tested with sends
it); v2 is flexible, v3 adds the top-level error code, v4 each dir's
``total_bytes`` / ``usable_bytes`` (KIP-827).  A null topic list asks for
every partition.

Fields follow Kafka's ``DescribeLogDirsRequest.json`` / ``DescribeLogDirsResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    35,
    "DescribeLogDirs",
    advertised=(1, 4),
    decode=(1, 4),
    flexible="2+",
    request=[
        F("topics", "[]DescribableLogDirTopic", "0+",
            F("topic", "string", "0+"),
            F("partitions", "[]int32", "0+"),
            nullable="0+",
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "3+"),
        F("results", "[]DescribeLogDirsResult", "0+",
            F("error_code", "int16", "0+"),
            F("log_dir", "string", "0+"),
            F("topics", "[]DescribeLogDirsTopic", "0+",
                F("name", "string", "0+"),
                F("partitions", "[]DescribeLogDirsPartition", "0+",
                    F("partition_index", "int32", "0+"),
                    F("partition_size", "int64", "0+"),
                    F("offset_lag", "int64", "0+"),
                    F("is_future_key", "bool", "0+"),
                ),
            ),
            F("total_bytes", "int64", "4+", default=-1),
            F("usable_bytes", "int64", "4+", default=-1),
        ),
    ],
)
