"""ListGroups (api key 16), decoded at v0–5.

v1 adds throttle_time_ms, v3 is flexible, v4 filters by group state (KIP-518)
and answers each group's state, v5 filters by group type (``classic``,
``consumer``; KIP-848) and answers each group's type.

Fields follow Kafka's ``ListGroupsRequest.json`` / ``ListGroupsResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    16,
    "ListGroups",
    advertised=(0, 5),
    decode=(0, 5),
    flexible="3+",
    request=[
        F("states_filter", "[]string", "4+"),
        F("types_filter", "[]string", "5+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16", "0+"),
        F("groups", "[]ListedGroup", "0+",
            F("group_id", "string", "0+"),
            F("protocol_type", "string", "0+"),
            F("group_state", "string", "4+"),
            F("group_type", "string", "5+"),
        ),
    ],
)
