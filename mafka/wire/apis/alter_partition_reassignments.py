"""AlterPartitionReassignments (api key 45), decoded at v0 (flexible from v0, KIP-455).

Starts, changes or (null ``replicas``) cancels partition reassignments.
Answered by the controller broker (top-level NOT_CONTROLLER elsewhere).

Fields follow Kafka's ``AlterPartitionReassignmentsRequest.json`` /
``AlterPartitionReassignmentsResponse.json`` (v1, from Kafka 4.x, adds
``allow_replication_factor_change``; Kafka 2.8 has v0 only).
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    45,
    "AlterPartitionReassignments",
    advertised=(0, 0),
    decode=(0, 0),
    flexible="0+",
    request=[
        F("timeout_ms", "int32", "0+", default=60000),
        F("topics", "[]ReassignableTopic", "0+",
            F("name", "string", "0+"),
            F("partitions", "[]ReassignablePartition", "0+",
                F("partition_index", "int32", "0+"),
                F("replicas", "[]int32", "0+", nullable="0+"),
            ),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+"),
        F("responses", "[]ReassignableTopicResponse", "0+",
            F("name", "string", "0+"),
            F("partitions", "[]ReassignablePartitionResponse", "0+",
                F("partition_index", "int32", "0+"),
                F("error_code", "int16", "0+"),
                F("error_message", "string", "0+", nullable="0+"),
            ),
        ),
    ],
)
