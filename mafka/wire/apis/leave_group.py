"""LeaveGroup (api key 13), decoded at v0–4.

Request v0–2 carry one member_id and share one layout; v3 batches
``members`` by member id or group instance id (KIP-345) and the response
answers each with its own error_code; v4 is flexible.

Fields follow Kafka's ``LeaveGroupRequest.json`` / ``LeaveGroupResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    13,
    "LeaveGroup",
    advertised=(0, 4),
    decode=(0, 4),
    flexible="4+",
    request=[
        F("group_id", "string", "0+"),
        F("member_id", "string", "0-2"),
        F("members", "[]MemberIdentity", "3+",
            F("member_id", "string", "3+"),
            F("group_instance_id", "string", "3+", nullable="3+"),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16", "0+"),
        F("members", "[]MemberResponse", "3+",
            F("member_id", "string", "3+"),
            F("group_instance_id", "string", "3+", nullable="3+"),
            F("error_code", "int16", "3+"),
        ),
    ],
)
