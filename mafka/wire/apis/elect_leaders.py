"""ElectLeaders (api key 43), decoded at v0–2.

v0 elects preferred leaders only; v1 adds ``election_type`` (0 = PREFERRED,
1 = UNCLEAN; v0 parses to 0) and a top-level ``error_code``; v2 is v1 in
the flexible encoding. Null ``topic_partitions`` = every partition.
Answered by the controller broker (NOT_CONTROLLER elsewhere).

Fields follow Kafka's ``ElectLeadersRequest.json`` / ``ElectLeadersResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    43,
    "ElectLeaders",
    advertised=(0, 2),
    decode=(0, 2),
    flexible="2+",
    request=[
        F("election_type", "int8", "1+"),
        F("topic_partitions", "[]TopicPartitions", "0+",
            F("topic", "string", "0+"),
            F("partitions", "[]int32", "0+"),
            nullable="0+",
        ),
        F("timeout_ms", "int32", "0+", default=60000),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "1+"),
        F("replica_election_results", "[]ReplicaElectionResult", "0+",
            F("topic", "string", "0+"),
            F("partition_result", "[]PartitionResult", "0+",
                F("partition_id", "int32", "0+"),
                F("error_code", "int16", "0+"),
                F("error_message", "string", "0+", nullable="0+"),
            ),
        ),
    ],
)
