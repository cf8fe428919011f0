"""ConsumerGroupHeartbeat (api key 68), decoded and advertised at v0–1.

The next-generation consumer group protocol (KIP-848): one heartbeat carries
the member's subscription and owned partitions and returns its assignment.
v1 adds subscribed_topic_regex (Kafka 4.0) and lets the consumer generate its
member id.  Flexible from v0.  The response's assignment is a nullable struct
(KIP-893): null when the assignment did not change.

Served by :mod:`mafka.broker.handlers.consumer_groups` (``group.coordinator.rebalance.protocols``
without ``consumer`` answers UNSUPPORTED_VERSION).

Fields follow Kafka 4.4's ``ConsumerGroupHeartbeatRequest.json`` /
``ConsumerGroupHeartbeatResponse.json`` (the fields versioned ``0+`` are in
every version).  Mafka parses an absent v0 subscribed_topic_regex as ``""``
where Kafka's default is null: read it only at v1.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    68,
    "ConsumerGroupHeartbeat",
    advertised=(0, 1),
    decode=(0, 1),
    flexible="0+",
    request=[
        F("group_id", "string", "0+"),
        F("member_id", "string", "0+"),
        F("member_epoch", "int32", "0+"),
        F("instance_id", "string", "0+", nullable="0+"),
        F("rack_id", "string", "0+", nullable="0+"),
        F("rebalance_timeout_ms", "int32", "0+", default=-1),
        F("subscribed_topic_names", "[]string", "0+", nullable="0+"),
        F("subscribed_topic_regex", "string", "1+", nullable="1+"),
        F("server_assignor", "string", "0+", nullable="0+"),
        F("topic_partitions", "[]TopicPartitions", "0+",
            F("topic_id", "uuid", "0+"),
            F("partitions", "[]int32", "0+"),
            nullable="0+",
        ),
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
