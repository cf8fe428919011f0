"""ShareGroupDescribe (api key 77), decoded and advertised at v1.

Describes share groups (KIP-932): members, their subscriptions and
assignments.  v0 was Kafka 4.0's early access, gone from Kafka 4.1's schema.
Flexible throughout.

Advertised once the broker served ShareFetch and ShareAcknowledge end to end (issue 32).

Fields follow Kafka 4.4's ``ShareGroupDescribeRequest.json`` /
``ShareGroupDescribeResponse.json`` (its common structs written out in place).
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    77,
    "ShareGroupDescribe",
    advertised=(1, 1),
    decode=(1, 1),
    flexible="0+",
    request=[
        F("group_ids", "[]string", "0+"),
        F("include_authorized_operations", "bool", "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("groups", "[]DescribedGroup", "0+",
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+"),
            F("group_id", "string", "0+"),
            F("group_state", "string", "0+"),
            F("group_epoch", "int32", "0+"),
            F("assignment_epoch", "int32", "0+"),
            F("assignor_name", "string", "0+"),
            F("members", "[]Member", "0+",
                F("member_id", "string", "0+"),
                F("rack_id", "string", "0+", nullable="0+"),
                F("member_epoch", "int32", "0+"),
                F("client_id", "string", "0+"),
                F("client_host", "string", "0+"),
                F("subscribed_topic_names", "[]string", "0+"),
                F("assignment", "Assignment", "0+",
                    F("topic_partitions", "[]TopicPartitions", "0+",
                        F("topic_id", "uuid", "0+"),
                        F("topic_name", "string", "0+"),
                        F("partitions", "[]int32", "0+"),
                    ),
                ),
            ),
            F("authorized_operations", "int32", "0+", default=-2147483648),
        ),
    ],
)
