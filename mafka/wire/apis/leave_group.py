"""LeaveGroup (api key 13), decoded at v0–2.

Request v0–2 share one layout (v3 batches members).

Fields follow Kafka's ``LeaveGroupRequest.json`` / ``LeaveGroupResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    13,
    "LeaveGroup",
    advertised=(0, 2),
    decode=(0, 2),
    flexible="4+",
    request=[
        F("group_id", "string", "0+"),
        F("member_id", "string", "0-2"),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16", "0+"),
    ],
)
