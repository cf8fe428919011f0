"""LeaderAndIsr (api key 4), decoded at v2–5.

Inter-broker (ZooKeeper mode), controller → broker; v2 carries broker_epoch
and groups partitions by topic, v3 the replicas being added and removed by
a reassignment (KIP-455), v4 is flexible, v5 adds the request type and topic
ids and answers errors by topic id (KIP-516). Not advertised.

Fields follow Kafka's ``LeaderAndIsrRequest.json`` / ``LeaderAndIsrResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    4,
    "LeaderAndIsr",
    advertised=None,
    decode=(2, 5),
    flexible="4+",
    request=[
        F("controller_id", "int32", "0+"),
        F("controller_epoch", "int32", "0+"),
        F("broker_epoch", "int64", "2+", default=-1),
        F("type", "int8", "5+"),
        F("topic_states", "[]LeaderAndIsrTopicState", "2+",
            F("topic_name", "string", "2+"),
            F("topic_id", "uuid", "5+"),
            F("partition_states", "[]LeaderAndIsrPartitionState", "2+",
                F("partition_index", "int32", "0+"),
                F("controller_epoch", "int32", "0+"),
                F("leader", "int32", "0+"),
                F("leader_epoch", "int32", "0+"),
                F("isr", "[]int32", "0+"),
                F("zk_version", "int32", "0+"),
                F("replicas", "[]int32", "0+"),
                F("adding_replicas", "[]int32", "3+"),
                F("removing_replicas", "[]int32", "3+"),
                F("is_new", "bool", "1+"),
            ),
        ),
        F("live_leaders", "[]LeaderAndIsrLiveLeader", "0+",
            F("broker_id", "int32", "0+"),
            F("host_name", "string", "0+"),
            F("port", "int32", "0+"),
        ),
    ],
    response=[
        F("error_code", "int16", "0+"),
        F("partition_errors", "[]LeaderAndIsrPartitionError", "0-4",
            F("topic_name", "string", "0-4"),
            F("partition_index", "int32", "0+"),
            F("error_code", "int16", "0+"),
        ),
        F("topics", "[]LeaderAndIsrTopicError", "5+",
            F("topic_id", "uuid", "5+"),
            F("partition_errors", "[]LeaderAndIsrPartitionError", "5+",
                F("partition_index", "int32", "5+"),
                F("error_code", "int16", "5+"),
            ),
        ),
    ],
)
