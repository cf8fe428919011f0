"""Fetch (api key 1), decoded at v0–11.

v0–3 are answered with legacy message sets (magic 0 for v0–1, magic 1 for
v2–3, down-converted by the broker); v1 adds throttle_time, v3 the
response-wide max_bytes (KIP-74), v4 isolation_level and aborted
transactions, v5 log_start_offset, v7 fetch sessions (Mafka always answers
session 0), v9 current_leader_epoch, v11 rack_id and preferred_read_replica.

Fields follow Kafka's ``FetchRequest.json`` / ``FetchResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    1,
    "Fetch",
    advertised=(0, 11),
    decode=(0, 11),
    flexible="12+",
    request=[
        F("replica_id", "int32", "0-14", default=-1),
        F("max_wait_ms", "int32", "0+"),
        F("min_bytes", "int32", "0+"),
        F("max_bytes", "int32", "3+", default=2147483647),
        F("isolation_level", "int8", "4+"),
        F("session_id", "int32", "7+"),
        F("session_epoch", "int32", "7+", default=-1),
        F("topics", "[]FetchTopic", "0+",
            F("topic", "string", "0-12"),
            F("partitions", "[]FetchPartition", "0+",
                F("partition", "int32", "0+"),
                F("current_leader_epoch", "int32", "9+", default=-1),
                F("fetch_offset", "int64", "0+"),
                F("log_start_offset", "int64", "5+", default=-1),
                F("partition_max_bytes", "int32", "0+"),
            ),
        ),
        F("forgotten_topics_data", "[]ForgottenTopic", "7+",
            F("topic", "string", "7-12"),
            F("partitions", "[]int32", "7+"),
        ),
        F("rack_id", "string", "11+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16", "7+"),
        F("session_id", "int32", "7+"),
        F("responses", "[]FetchableTopicResponse", "0+",
            F("topic", "string", "0-12"),
            F("partitions", "[]PartitionData", "0+",
                F("partition_index", "int32", "0+"),
                F("error_code", "int16", "0+"),
                F("high_watermark", "int64", "0+"),
                F("last_stable_offset", "int64", "4+", default=-1),
                F("log_start_offset", "int64", "5+", default=-1),
                F("aborted_transactions", "[]AbortedTransaction", "4+",
                    F("producer_id", "int64", "4+"),
                    F("first_offset", "int64", "4+"),
                    nullable="4+",
                ),
                F("preferred_read_replica", "int32", "11+", default=-1),
                F("records", "records", "0+", nullable="0+"),
            ),
        ),
    ],
)
