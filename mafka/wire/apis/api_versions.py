"""ApiVersions (api key 18), decoded at v0–4.

The only flexible API Mafka speaks (v3/v4, identical on the wire). Responses
always use response header v0 (KIP-511); a request newer than v4 is answered
with UNSUPPORTED_VERSION and a v0 body. Default-valued tagged fields are
never written: they break kcat.

Fields follow Kafka's ``ApiVersionsRequest.json`` / ``ApiVersionsResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    18,
    "ApiVersions",
    advertised=(0, 4),
    decode=(0, 4),
    flexible="3+",
    request=[
        F("client_software_name", "string", "3+"),
        F("client_software_version", "string", "3+"),
    ],
    response=[
        F("error_code", "int16", "0+"),
        F("api_keys", "[]ApiVersion", "0+",
            F("api_key", "int16", "0+"),
            F("min_version", "int16", "0+"),
            F("max_version", "int16", "0+"),
        ),
        F("throttle_time_ms", "int32", "1+"),
    ],
)
