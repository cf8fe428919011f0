"""DeleteGroups (api key 42), decoded at v0–1.

v0 and v1 share one layout.

Fields follow Kafka's ``DeleteGroupsRequest.json`` / ``DeleteGroupsResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    42,
    "DeleteGroups",
    advertised=(0, 1),
    decode=(0, 1),
    flexible="2+",
    request=[
        F("groups_names", "[]string", "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("results", "[]DeletableGroupResult", "0+",
            F("group_id", "string", "0+"),
            F("error_code", "int16", "0+"),
        ),
    ],
)
