"""FindCoordinator (api key 10), decoded at v0–2.

v1 adds key_type (0 group, 1 transaction) and error_message; v2 is identical
to v1.

Fields follow Kafka's ``FindCoordinatorRequest.json`` / ``FindCoordinatorResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    10,
    "FindCoordinator",
    advertised=(0, 2),
    decode=(0, 2),
    flexible="3+",
    request=[
        F("key", "string", "0-3"),
        F("key_type", "int8", "1+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+"),
        F("error_code", "int16", "0-3"),
        F("error_message", "string", "1-3", nullable="1-3"),
        F("node_id", "int32", "0-3"),
        F("host", "string", "0-3"),
        F("port", "int32", "0-3"),
    ],
)
