"""UpdateMetadata (api key 6), decoded at v5–7.

Inter-broker, controller → every broker; v5 carries broker_epoch, topic-
grouped partition states and offline replicas, v6 is flexible, v7 adds each
topic's id (Kafka 2.8, so brokers can answer Metadata v10+). Not advertised.

Fields follow Kafka's ``UpdateMetadataRequest.json`` / ``UpdateMetadataResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    6,
    "UpdateMetadata",
    advertised=None,
    decode=(5, 7),
    flexible="6+",
    request=[
        F("controller_id", "int32", "0+"),
        F("controller_epoch", "int32", "0+"),
        F("broker_epoch", "int64", "5+", default=-1),
        F("topic_states", "[]UpdateMetadataTopicState", "5+",
            F("topic_name", "string", "5+"),
            F("topic_id", "uuid", "7+"),
            F("partition_states", "[]UpdateMetadataPartitionState", "5+",
                F("partition_index", "int32", "0+"),
                F("controller_epoch", "int32", "0+"),
                F("leader", "int32", "0+"),
                F("leader_epoch", "int32", "0+"),
                F("isr", "[]int32", "0+"),
                F("zk_version", "int32", "0+"),
                F("replicas", "[]int32", "0+"),
                F("offline_replicas", "[]int32", "4+"),
            ),
        ),
        F("live_brokers", "[]UpdateMetadataBroker", "0+",
            F("id", "int32", "0+"),
            F("endpoints", "[]UpdateMetadataEndpoint", "1+",
                F("port", "int32", "1+"),
                F("host", "string", "1+"),
                F("listener", "string", "3+"),
                F("security_protocol", "int16", "1+"),
            ),
            F("rack", "string", "2+", nullable="0+"),
        ),
    ],
    response=[
        F("error_code", "int16", "0+"),
    ],
)
