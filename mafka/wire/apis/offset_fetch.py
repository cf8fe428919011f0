"""OffsetFetch (api key 9), decoded at v1–9.

v2: null topics = all, plus a top-level error_code; v3 adds
throttle_time_ms, v5 committed_leader_epoch per partition, v6 is flexible,
v7 require_stable (KIP-447), v8 asks for several groups at once (KIP-709:
``groups``, each answered with its own error_code; the single-group fields
are gone), v9 names the asking member and its epoch (KIP-848: a consumer-protocol
member's stale epoch is STALE_MEMBER_EPOCH; null/-1 from admin clients).

Fields follow Kafka's ``OffsetFetchRequest.json`` / ``OffsetFetchResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    9,
    "OffsetFetch",
    advertised=(0, 9),
    decode=(1, 9),
    flexible="6+",
    request=[
        F("group_id", "string", "0-7"),
        F("topics", "[]OffsetFetchRequestTopic", "0-7",
            F("name", "string", "0-7"),
            F("partition_indexes", "[]int32", "0-7"),
            nullable="2-7",
        ),
        F("groups", "[]OffsetFetchRequestGroup", "8+",
            F("group_id", "string", "8+"),
            F("member_id", "string", "9+", nullable="9+"),
            F("member_epoch", "int32", "9+", default=-1),
            F("topics", "[]OffsetFetchRequestTopics", "8+",
                F("name", "string", "8-9"),
                F("partition_indexes", "[]int32", "8+"),
                nullable="8+",
            ),
        ),
        F("require_stable", "bool", "7+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "3+"),
        F("topics", "[]OffsetFetchResponseTopic", "0-7",
            F("name", "string", "0-7"),
            F("partitions", "[]OffsetFetchResponsePartition", "0-7",
                F("partition_index", "int32", "0-7"),
                F("committed_offset", "int64", "0-7"),
                F("committed_leader_epoch", "int32", "5-7", default=-1),
                F("metadata", "string", "0-7", nullable="0-7"),
                F("error_code", "int16", "0-7"),
            ),
        ),
        F("error_code", "int16", "2-7"),
        F("groups", "[]OffsetFetchResponseGroup", "8+",
            F("group_id", "string", "8+"),
            F("topics", "[]OffsetFetchResponseTopics", "8+",
                F("name", "string", "8-9"),
                F("partitions", "[]OffsetFetchResponsePartitions", "8+",
                    F("partition_index", "int32", "8+"),
                    F("committed_offset", "int64", "8+"),
                    F("committed_leader_epoch", "int32", "8+", default=-1),
                    F("metadata", "string", "8+", nullable="8+"),
                    F("error_code", "int16", "8+"),
                ),
            ),
            F("error_code", "int16", "8+"),
        ),
    ],
)
