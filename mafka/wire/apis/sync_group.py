"""SyncGroup (api key 14), decoded at v0–3.

v1 adds throttle_time_ms, v3 group_instance_id.

Fields follow Kafka's ``SyncGroupRequest.json`` / ``SyncGroupResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    14,
    "SyncGroup",
    advertised=(0, 3),
    decode=(0, 3),
    flexible="4+",
    request=[
        F("group_id", "string", "0+"),
        F("generation_id", "int32", "0+"),
        F("member_id", "string", "0+"),
        F("group_instance_id", "string", "3+", nullable="3+"),
        F("assignments", "[]SyncGroupRequestAssignment", "0+",
            F("member_id", "string", "0+"),
            F("assignment", "bytes", "0+"),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16", "0+"),
        F("assignment", "bytes", "0+"),
    ],
)
