"""ListGroups (api key 16), decoded at v0–2.

v1 adds throttle_time_ms.

Fields follow Kafka's ``ListGroupsRequest.json`` / ``ListGroupsResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    16,
    "ListGroups",
    advertised=(0, 2),
    decode=(0, 2),
    flexible="3+",
    request=[

    ],
    response=[
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16", "0+"),
        F("groups", "[]ListedGroup", "0+",
            F("group_id", "string", "0+"),
            F("protocol_type", "string", "0+"),
        ),
    ],
)
