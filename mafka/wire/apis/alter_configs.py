"""AlterConfigs (api key 33), decoded at v0–1.

v0 and v1 share one layout.

Fields follow Kafka's ``AlterConfigsRequest.json`` / ``AlterConfigsResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    33,
    "AlterConfigs",
    advertised=(0, 1),
    decode=(0, 1),
    flexible="2+",
    request=[
        F("resources", "[]AlterConfigsResource", "0+",
            F("resource_type", "int8", "0+"),
            F("resource_name", "string", "0+"),
            F("configs", "[]AlterableConfig", "0+",
                F("name", "string", "0+"),
                F("value", "string", "0+", nullable="0+"),
            ),
        ),
        F("validate_only", "bool", "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("responses", "[]AlterConfigsResourceResponse", "0+",
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+"),
            F("resource_type", "int8", "0+"),
            F("resource_name", "string", "0+"),
        ),
    ],
)
