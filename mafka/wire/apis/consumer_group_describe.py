"""ConsumerGroupDescribe (api key 69), decoded and advertised at v0–1.

Describes groups of the KIP-848 protocol: each member's subscription, current
and target assignment.  v1 adds member_type per member (KIP-1099: −1 unknown,
0 classic, 1 consumer); the v1 request is the v0 one.  Flexible from v0.

Served by :mod:`mafka.broker.handlers.consumer_groups`.

Fields follow Kafka 4.4's ``ConsumerGroupDescribeRequest.json`` /
``ConsumerGroupDescribeResponse.json`` (its common structs Assignment and
TopicPartitions written out in place).
"""

from __future__ import annotations

from ..api import api
from ..schema import F, Field


def _assignment(name: str) -> Field:
    # commonStructs "Assignment" → "TopicPartitions", shared by Assignment and TargetAssignment.
    return F(name, "Assignment", "0+",
        F("topic_partitions", "[]TopicPartitions", "0+",
            F("topic_id", "uuid", "0+"),
            F("topic_name", "string", "0+"),
            F("partitions", "[]int32", "0+"),
        ),
    )


SPEC = api(
    69,
    "ConsumerGroupDescribe",
    advertised=(0, 1),
    decode=(0, 1),
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
                F("instance_id", "string", "0+", nullable="0+"),
                F("rack_id", "string", "0+", nullable="0+"),
                F("member_epoch", "int32", "0+"),
                F("client_id", "string", "0+"),
                F("client_host", "string", "0+"),
                F("subscribed_topic_names", "[]string", "0+"),
                F("subscribed_topic_regex", "string", "0+", nullable="0+"),
                _assignment("assignment"),
                _assignment("target_assignment"),
                F("member_type", "int8", "1+", default=-1),
            ),
            F("authorized_operations", "int32", "0+", default=-2147483648),
        ),
    ],
)
