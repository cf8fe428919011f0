"""DescribeConfigs (api key 32), decoded at v1–2.

v1–2 share one layout (config_source and synonyms).

Fields follow Kafka's ``DescribeConfigsRequest.json`` / ``DescribeConfigsResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    32,
    "DescribeConfigs",
    advertised=(0, 2),
    decode=(1, 2),
    flexible="4+",
    request=[
        F("resources", "[]DescribeConfigsResource", "0+",
            F("resource_type", "int8", "0+"),
            F("resource_name", "string", "0+"),
            F("configuration_keys", "[]string", "0+", nullable="0+"),
        ),
        F("include_synonyms", "bool", "1+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("results", "[]DescribeConfigsResult", "0+",
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+"),
            F("resource_type", "int8", "0+"),
            F("resource_name", "string", "0+"),
            F("configs", "[]DescribeConfigsResourceResult", "0+",
                F("name", "string", "0+"),
                F("value", "string", "0+", nullable="0+"),
                F("read_only", "bool", "0+"),
                F("config_source", "int8", "1+", default=-1),
                F("is_sensitive", "bool", "0+"),
                F("synonyms", "[]DescribeConfigsSynonym", "1+",
                    F("name", "string", "1+"),
                    F("value", "string", "1+", nullable="0+"),
                    F("source", "int8", "1+"),
                ),
            ),
        ),
    ],
)
