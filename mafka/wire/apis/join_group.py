"""JoinGroup (api key 11), decoded at v0–5.

v1 adds rebalance_timeout_ms, v2 throttle_time_ms, v5 group_instance_id. v0
must stay advertised: librdkafka 2.0 disables its balanced consumer without
it.

Fields follow Kafka's ``JoinGroupRequest.json`` / ``JoinGroupResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    11,
    "JoinGroup",
    advertised=(0, 5),
    decode=(0, 5),
    flexible="6+",
    request=[
        F("group_id", "string", "0+"),
        F("session_timeout_ms", "int32", "0+"),
        F("rebalance_timeout_ms", "int32", "1+", default=-1),
        F("member_id", "string", "0+"),
        F("group_instance_id", "string", "5+", nullable="5+"),
        F("protocol_type", "string", "0+"),
        F("protocols", "[]JoinGroupRequestProtocol", "0+",
            F("name", "string", "0+"),
            F("metadata", "bytes", "0+"),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "2+"),
        F("error_code", "int16", "0+"),
        F("generation_id", "int32", "0+", default=-1),
        F("protocol_name", "string", "0+", nullable="7+"),
        F("leader", "string", "0+"),
        F("member_id", "string", "0+"),
        F("members", "[]JoinGroupResponseMember", "0+",
            F("member_id", "string", "0+"),
            F("group_instance_id", "string", "5+", nullable="5+"),
            F("metadata", "bytes", "0+"),
        ),
    ],
)
