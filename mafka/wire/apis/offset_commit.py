"""OffsetCommit (api key 8), decoded at v2–9.

Request v2–4 carry retention_time_ms (−1 = broker default; gone from v5), v6
adds committed_leader_epoch per partition, v7 group_instance_id (static
members, KIP-345), v8 is flexible, v9 is v8 from a KIP-848 member (generation_id_or_member_epoch is
its member epoch; a stale one is STALE_MEMBER_EPOCH where v8 got ILLEGAL_GENERATION).
The v3 response adds throttle_time_ms.
aiokafka caps this API at v3.

Fields follow Kafka's ``OffsetCommitRequest.json`` / ``OffsetCommitResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    8,
    "OffsetCommit",
    advertised=(0, 9),
    decode=(2, 9),
    flexible="8+",
    request=[
        F("group_id", "string", "0+"),
        F("generation_id_or_member_epoch", "int32", "1+", default=-1),
        F("member_id", "string", "1+"),
        F("group_instance_id", "string", "7+", nullable="7+"),
        F("retention_time_ms", "int64", "2-4", default=-1),
        F("topics", "[]OffsetCommitRequestTopic", "0+",
            F("name", "string", "0-9"),
            F("partitions", "[]OffsetCommitRequestPartition", "0+",
                F("partition_index", "int32", "0+"),
                F("committed_offset", "int64", "0+"),
                F("committed_leader_epoch", "int32", "6+", default=-1),
                F("committed_metadata", "string", "0+", nullable="0+"),
            ),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "3+"),
        F("topics", "[]OffsetCommitResponseTopic", "0+",
            F("name", "string", "0-9"),
            F("partitions", "[]OffsetCommitResponsePartition", "0+",
                F("partition_index", "int32", "0+"),
                F("error_code", "int16", "0+"),
            ),
        ),
    ],
)
