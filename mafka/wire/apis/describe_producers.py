"""DescribeProducers (api key 61), decoded at v0 (KIP-664).

Flexible from v0.  Per partition, the producers the replica's producer
state holds (id, epoch, last sequence and timestamp, coordinator epoch,
open transaction's first offset).

Fields follow Kafka's ``DescribeProducersRequest.json`` / ``DescribeProducersResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    61,
    "DescribeProducers",
    advertised=(0, 0),
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
        F("topics", "[]TopicResponse", "0+",
            F("name", "string", "0+"),
            F("partitions", "[]PartitionResponse", "0+",
                F("partition_index", "int32", "0+"),
                F("error_code", "int16", "0+"),
                F("error_message", "string", "0+", nullable="0+"),
                F("active_producers", "[]ProducerState", "0+",
                    F("producer_id", "int64", "0+"),
                    F("producer_epoch", "int32", "0+"),
                    F("last_sequence", "int32", "0+", default=-1),
                    F("last_timestamp", "int64", "0+", default=-1),
                    F("coordinator_epoch", "int32", "0+"),
                    F("current_txn_start_offset", "int64", "0+", default=-1),
                ),
            ),
        ),
    ],
)
