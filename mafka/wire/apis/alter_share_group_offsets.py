"""AlterShareGroupOffsets (api key 91), decoded at v0, advertised.

Sets the start offset of share-partitions of an empty share group (KIP-932,
Kafka 4.1).  Flexible.

Served at the group coordinator by :mod:`mafka.broker.handlers.share_group_offsets` (issue 32).

Fields follow Kafka 4.4's ``AlterShareGroupOffsetsRequest.json`` /
``AlterShareGroupOffsetsResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    91,
    "AlterShareGroupOffsets",
    advertised=(0, 0),
    decode=(0, 0),
    flexible="0+",
    request=[
        F("group_id", "string", "0+"),
        F("topics", "[]AlterShareGroupOffsetsRequestTopic", "0+",
            F("topic_name", "string", "0+"),
            F("partitions", "[]AlterShareGroupOffsetsRequestPartition", "0+",
                F("partition_index", "int32", "0+"),
                F("start_offset", "int64", "0+"),
            ),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+"),
        F("responses", "[]AlterShareGroupOffsetsResponseTopic", "0+",
            F("topic_name", "string", "0+"),
            F("topic_id", "uuid", "0+"),
            F("partitions", "[]AlterShareGroupOffsetsResponsePartition", "0+",
                F("partition_index", "int32", "0+"),
                F("error_code", "int16", "0+"),
                F("error_message", "string", "0+", nullable="0+"),
            ),
        ),
    ],
)
