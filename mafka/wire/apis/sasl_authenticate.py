"""SaslAuthenticate (api key 36), decoded at v0–2 (flexible from v2).

v1 adds session_lifetime_ms to the response.

Fields follow Kafka's ``SaslAuthenticateRequest.json`` / ``SaslAuthenticateResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    36,
    "SaslAuthenticate",
    advertised=(0, 2),
    decode=(0, 2),
    flexible="2+",
    request=[
        F("auth_bytes", "bytes", "0+"),
    ],
    response=[
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+"),
        F("auth_bytes", "bytes", "0+"),
        F("session_lifetime_ms", "int64", "1+"),
    ],
)
