"""ShareAcknowledge (api key 79), decoded and advertised at v1–2.

Acknowledges records a share consumer acquired through ShareFetch (KIP-932)
without fetching more.  v0 was Kafka 4.0's early access, gone from Kafka
4.1's schema; v2 (Kafka 4.2) adds is_renew_ack to the request (KIP-1222)
and acquisition_lock_timeout_ms to the response.  Flexible throughout.

Advertised once the broker served ShareFetch and ShareAcknowledge end to end (issue 32).

Fields follow Kafka 4.4's ``ShareAcknowledgeRequest.json`` /
``ShareAcknowledgeResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    79,
    "ShareAcknowledge",
    advertised=(1, 2),
    decode=(1, 2),
    flexible="0+",
    request=[
        F("group_id", "string", "0+", nullable="0+"),
        F("member_id", "string", "0+", nullable="0+"),
        F("share_session_epoch", "int32", "0+"),
        F("is_renew_ack", "bool", "2+", default=False),
        F("topics", "[]AcknowledgeTopic", "0+",
            F("topic_id", "uuid", "0+"),
            F("partitions", "[]AcknowledgePartition", "0+",
                F("partition_index", "int32", "0+"),
                F("acknowledgement_batches", "[]AcknowledgementBatch", "0+",
                    F("first_offset", "int64", "0+"),
                    F("last_offset", "int64", "0+"),
                    F("acknowledge_types", "[]int8", "0+"),
                ),
            ),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+"),
        F("acquisition_lock_timeout_ms", "int32", "2+"),
        F("responses", "[]ShareAcknowledgeTopicResponse", "0+",
            F("topic_id", "uuid", "0+"),
            F("partitions", "[]PartitionData", "0+",
                F("partition_index", "int32", "0+"),
                F("error_code", "int16", "0+"),
                F("error_message", "string", "0+", nullable="0+"),
                F("current_leader", "LeaderIdAndEpoch", "0+",
                    F("leader_id", "int32", "0+"),
                    F("leader_epoch", "int32", "0+"),
                ),
            ),
        ),
        F("node_endpoints", "[]NodeEndpoint", "0+",
            F("node_id", "int32", "0+"),
            F("host", "string", "0+"),
            F("port", "int32", "0+"),
            F("rack", "string", "0+", nullable="0+"),
        ),
    ],
)
