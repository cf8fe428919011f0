"""DeleteTopics (api key 20), decoded at v1–3.

v1–3 share one layout.

Fields follow Kafka's ``DeleteTopicsRequest.json`` / ``DeleteTopicsResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    20,
    "DeleteTopics",
    advertised=(0, 3),
    decode=(1, 3),
    flexible="4+",
    request=[
        F("topic_names", "[]string", "0-5"),
        F("timeout_ms", "int32", "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "1+"),
        F("responses", "[]DeletableTopicResult", "0+",
            F("name", "string", "0+", nullable="6+"),
            F("error_code", "int16", "0+"),
        ),
    ],
)
