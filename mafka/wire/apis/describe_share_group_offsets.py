"""DescribeShareGroupOffsets (api key 90), decoded at v0–1, advertised.

The start offset of each share-partition of one or more share groups
(KIP-932); a null topics list asks for every topic-partition.  v1 (Kafka 4.2)
adds each partition's lag (KIP-1226; −1 when unknown, and what v0 parses
to).  Flexible throughout.

Served at the group coordinator by :mod:`mafka.broker.handlers.share_group_offsets` (issue 32).

Fields follow Kafka 4.4's ``DescribeShareGroupOffsetsRequest.json`` /
``DescribeShareGroupOffsetsResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    90,
    "DescribeShareGroupOffsets",
    advertised=(0, 1),
    decode=(0, 1),
    flexible="0+",
    request=[
        F("groups", "[]DescribeShareGroupOffsetsRequestGroup", "0+",
            F("group_id", "string", "0+"),
            F("topics", "[]DescribeShareGroupOffsetsRequestTopic", "0+",
                F("topic_name", "string", "0+"),
                F("partitions", "[]int32", "0+"),
                nullable="0+",
            ),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("groups", "[]DescribeShareGroupOffsetsResponseGroup", "0+",
            F("group_id", "string", "0+"),
            F("topics", "[]DescribeShareGroupOffsetsResponseTopic", "0+",
                F("topic_name", "string", "0+"),
                F("topic_id", "uuid", "0+"),
                F("partitions", "[]DescribeShareGroupOffsetsResponsePartition", "0+",
                    F("partition_index", "int32", "0+"),
                    F("start_offset", "int64", "0+"),
                    F("leader_epoch", "int32", "0+"),
                    F("lag", "int64", "1+", default=-1),
                    F("error_code", "int16", "0+"),
                    F("error_message", "string", "0+", nullable="0+"),
                ),
            ),
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+"),
        ),
    ],
)
