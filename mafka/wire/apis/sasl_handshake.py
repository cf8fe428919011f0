"""SaslHandshake (api key 17), decoded at v0–1.

v1 means tokens travel in SaslAuthenticate; v0 means raw size-prefixed
tokens.

Fields follow Kafka's ``SaslHandshakeRequest.json`` / ``SaslHandshakeResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    17,
    "SaslHandshake",
    advertised=(0, 1),
    decode=(0, 1),
    flexible="none",
    request=[
        F("mechanism", "string", "0+"),
    ],
    response=[
        F("error_code", "int16", "0+"),
        F("mechanisms", "[]string", "0+"),
    ],
)
