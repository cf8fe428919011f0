"""DescribeGroups (api key 15), decoded at v0–5.

v3 adds include_authorized_operations (answered with the group's operations
bitfield, else −2³¹), v4 group_instance_id per member, v5 is flexible.
librdkafka's legacy list_groups uses v0.

Fields follow Kafka's ``DescribeGroupsRequest.json`` / ``DescribeGroupsResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    15,
    "DescribeGroups",
    advertised=(0, 5),
    decode=(0, 5),
    flexible="5+",
    request=[
        F("groups", "[]string", "0+"),
        F("include_authorized_operations", "bool", "3+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+"),
        F("groups", "[]DescribedGroup", "0+",
            F("error_code", "int16", "0+"),
            F("group_id", "string", "0+"),
            F("group_state", "string", "0+"),
            F("protocol_type", "string", "0+"),
            F("protocol_data", "string", "0+"),
            F("members", "[]DescribedGroupMember", "0+",
                F("member_id", "string", "0+"),
                F("group_instance_id", "string", "4+", nullable="4+"),
                F("client_id", "string", "0+"),
                F("client_host", "string", "0+"),
                F("member_metadata", "bytes", "0+"),
                F("member_assignment", "bytes", "0+"),
            ),
            F("authorized_operations", "int32", "3+", default=-2147483648),
        ),
    ],
)
