"""DescribeAcls (api key 29), decoded at v0–2.

v1 adds the resource pattern type (KIP-290: LITERAL 3 / PREFIXED 4, and the
filter-only ANY 1 / MATCH 2); v0 has none, which reads as LITERAL (Kafka's
default 3) — a v0 filter sees only literal ACLs, the wildcard ``*`` included.
Flexible from v2.  Codes are those of :mod:`mafka.security.acl`; a null name,
principal or host filter matches anything.

Fields follow Kafka 2.8's ``DescribeAclsRequest.json`` / ``DescribeAclsResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    29,
    "DescribeAcls",
    advertised=(0, 2),
    decode=(0, 2),
    flexible="2+",
    request=[
        F("resource_type_filter", "int8", "0+"),
        F("resource_name_filter", "string", "0+", nullable="0+"),
        F("pattern_type_filter", "int8", "1+", default=3),
        F("principal_filter", "string", "0+", nullable="0+"),
        F("host_filter", "string", "0+", nullable="0+"),
        F("operation", "int8", "0+"),
        F("permission_type", "int8", "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+"),
        F("resources", "[]DescribeAclsResource", "0+",
            F("resource_type", "int8", "0+"),
            F("resource_name", "string", "0+"),
            F("pattern_type", "int8", "1+", default=3),
            F("acls", "[]AclDescription", "0+",
                F("principal", "string", "0+"),
                F("host", "string", "0+"),
                F("operation", "int8", "0+"),
                F("permission_type", "int8", "0+"),
            ),
        ),
    ],
)
