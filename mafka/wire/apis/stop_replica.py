"""StopReplica (api key 5), decoded at v1–1.

Inter-broker, controller → broker; v1 carries broker_epoch and groups
partitions by topic. Not advertised.

Fields follow Kafka's ``StopReplicaRequest.json`` / ``StopReplicaResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    5,
    "StopReplica",
    advertised=None,
    decode=(1, 1),
    flexible="none",
    request=[
        F("controller_id", "int32", "0+"),
        F("controller_epoch", "int32", "0+"),
        F("broker_epoch", "int64", "1+", default=-1),
        F("delete_partitions", "bool", "0+"),
        F("topics", "[]StopReplicaTopic", "1+",
            F("name", "string", "1+"),
            F("partition_indexes", "[]int32", "1+"),
        ),
    ],
    response=[
        F("error_code", "int16", "0+"),
        F("partition_errors", "[]StopReplicaPartitionError", "0+",
            F("topic_name", "string", "0+"),
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
        ),
    ],
)
