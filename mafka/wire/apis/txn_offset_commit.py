"""TxnOffsetCommit (api key 28), decoded at v0–3.

v1 is v0; v2 adds committed_leader_epoch; v3 (KIP-447, flexible) adds the
consumer's generation_id, member_id and group_instance_id so that the group
coordinator can fence zombie consumers' transactional commits. The response
only changes with v3's flexible encoding (and the errors it may carry:
ILLEGAL_GENERATION, UNKNOWN_MEMBER_ID, FENCED_INSTANCE_ID).

Fields follow Kafka's ``TxnOffsetCommitRequest.json`` / ``TxnOffsetCommitResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    28,
    "TxnOffsetCommit",
    advertised=(0, 3),
    decode=(0, 3),
    flexible="3+",
    request=[
        F("transactional_id", "string", "0+"),
        F("group_id", "string", "0+"),
        F("producer_id", "int64", "0+"),
        F("producer_epoch", "int16", "0+"),
        F("generation_id", "int32", "3+", default=-1),
        F("member_id", "string", "3+", default=""),
        F("group_instance_id", "string", "3+", nullable="3+", default=None),
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
