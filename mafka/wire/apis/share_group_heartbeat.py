"""ShareGroupHeartbeat (api key 76), decoded and advertised at v1.

Membership of a share group (KIP-932, queues for Kafka): the heartbeat
carries the subscription and returns the member's assignment, a nullable
struct (KIP-893).  v0 was Kafka 4.0's early access and is gone from Kafka
4.1's schema, so v1 is the only version.  Flexible throughout.

Advertised once the broker served ShareFetch and ShareAcknowledge end to end (issue 32).

Fields follow Kafka 4.4's ``ShareGroupHeartbeatRequest.json`` /
``ShareGroupHeartbeatResponse.json`` (the ``0+`` version ranges are Kafka's).
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    76,
    "ShareGroupHeartbeat",
    advertised=(1, 1),
    decode=(1, 1),
    flexible="0+",
    request=[
        F("group_id", "string", "0+"),
        F("member_id", "string", "0+"),
        F("member_epoch", "int32", "0+"),
        F("rack_id", "string", "0+", nullable="0+"),
        F("subscribed_topic_names", "[]string", "0+", nullable="0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+"),
        F("member_id", "string", "0+", nullable="0+"),
        F("member_epoch", "int32", "0+"),
        F("heartbeat_interval_ms", "int32", "0+"),
        F("assignment", "Assignment", "0+",
            F("topic_partitions", "[]TopicPartitions", "0+",
                F("topic_id", "uuid", "0+"),
                F("partitions", "[]int32", "0+"),
            ),
            nullable="0+",
        ),
    ],
)
