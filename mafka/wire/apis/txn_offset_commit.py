"""TxnOffsetCommit (api key 28), decoded at v0–2.

v2 adds committed_leader_epoch.

Fields follow Kafka's ``TxnOffsetCommitRequest.json`` / ``TxnOffsetCommitResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    28,
    "TxnOffsetCommit",
    advertised=(0, 2),
    decode=(0, 2),
    flexible="3+",
    request=[
        F("transactional_id", "string", "0+"),
        F("group_id", "string", "0+"),
        F("producer_id", "int64", "0+"),
        F("producer_epoch", "int16", "0+"),
        F("topics", "[]TxnOffsetCommitRequestTopic", "0+",
            F("name", "string", "0+"),
            F("partitions", "[]TxnOffsetCommitRequestPartition", "0+",
                F("partition_index", "int32", "0+"),
                F("committed_offset", "int64", "0+"),
                F("committed_leader_epoch", "int32", "2+", default=-1),
                F("committed_metadata", "string", "0+", nullable="0+"),
            ),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("topics", "[]TxnOffsetCommitResponseTopic", "0+",
            F("name", "string", "0+"),
            F("partitions", "[]TxnOffsetCommitResponsePartition", "0+",
                F("partition_index", "int32", "0+"),
                F("error_code", "int16", "0+"),
            ),
        ),
    ],
)
