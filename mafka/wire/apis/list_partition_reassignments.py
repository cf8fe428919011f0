"""ListPartitionReassignments (api key 46), decoded at v0 (flexible from v0, KIP-455).

Null ``topics`` lists every ongoing reassignment. Answered by the
controller broker (top-level NOT_CONTROLLER elsewhere).

Fields follow Kafka's ``ListPartitionReassignmentsRequest.json`` /
``ListPartitionReassignmentsResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    46,
    "ListPartitionReassignments",
    advertised=(0, 0),
    decode=(0, 0),
    flexible="0+",
    request=[
        F("timeout_ms", "int32", "0+", default=60000),
        F("topics", "[]ListPartitionReassignmentsTopics", "0+",
            F("name", "string", "0+"),
            F("partition_indexes", "[]int32", "0+"),
            nullable="0+",
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+"),
        F("topics", "[]OngoingTopicReassignment", "0+",
            F("name", "string", "0+"),
            F("partitions", "[]OngoingPartitionReassignment", "0+",
                F("partition_index", "int32", "0+"),
                F("replicas", "[]int32", "0+"),
                F("adding_replicas", "[]int32", "0+"),
                F("removing_replicas", "[]int32", "0+"),
            ),
        ),
    ],
)
