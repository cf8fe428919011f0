"""CreateAcls (api key 30), decoded at v0–2.

v1 adds each creation's resource pattern type; v0 has none, which reads as
LITERAL (Kafka's default 3).  Flexible from v2.  One result per creation, in
request order.  Codes are those of :mod:`mafka.security.acl`.

Fields follow Kafka 2.8's ``CreateAclsRequest.json`` / ``CreateAclsResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    30,
    "CreateAcls",
    advertised=(0, 2),
    decode=(0, 2),
    flexible="2+",
    request=[
        F("creations", "[]AclCreation", "0+",
            F("resource_type", "int8", "0+"),
            F("resource_name", "string", "0+"),
            F("resource_pattern_type", "int8", "1+", default=3),
            F("principal", "string", "0+"),
            F("host", "string", "0+"),
            F("operation", "int8", "0+"),
            F("permission_type", "int8", "0+"),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("results", "[]AclCreationResult", "0+",
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+"),
        ),
    ],
)
