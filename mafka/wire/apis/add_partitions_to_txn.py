"""AddPartitionsToTxn (api key 24), decoded at v0–3 (Kafka 2.8).

v0–3 share one layout; v3 is flexible.

Fields follow Kafka's ``AddPartitionsToTxnRequest.json`` / ``AddPartitionsToTxnResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    24,
    "AddPartitionsToTxn",
    advertised=(0, 3),
    decode=(0, 3),
    flexible="3+",
    request=[
        F("v3_and_below_transactional_id", "string", "0-3"),
        F("v3_and_below_producer_id", "int64", "0-3"),
        F("v3_and_below_producer_epoch", "int16", "0-3"),
        F("v3_and_below_topics", "[]AddPartitionsToTxnTopic", "0-3",
            F("name", "string", "0+"),
            F("partitions", "[]int32", "0+"),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("results_by_topic_v3_and_below", "[]AddPartitionsToTxnTopicResult", "0-3",
            F("name", "string", "0+"),
            F("results_by_partition", "[]AddPartitionsToTxnPartitionResult", "0+",
                F("partition_index", "int32", "0+"),
                F("partition_error_code", "int16", "0+"),
            ),
        ),
    ],
)
