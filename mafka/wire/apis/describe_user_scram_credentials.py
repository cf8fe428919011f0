"""DescribeUserScramCredentials (api key 50), decoded at v0 (KIP-554).

Flexible from v0.  Users null or empty means every user with a SCRAM
credential; each credential is described by its mechanism and iterations
only.

Fields follow Kafka's ``DescribeUserScramCredentialsRequest.json`` /
``DescribeUserScramCredentialsResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    50,
    "DescribeUserScramCredentials",
    advertised=(0, 0),
    decode=(0, 0),
    flexible="0+",
    request=[
        F("users", "[]UserName", "0+",
            F("name", "string", "0+"),
            nullable="0+",
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+"),
        F("results", "[]DescribeUserScramCredentialsResult", "0+",
            F("user", "string", "0+"),
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+"),
            F("credential_infos", "[]CredentialInfo", "0+",
                F("mechanism", "int8", "0+"),
                F("iterations", "int32", "0+"),
            ),
        ),
    ],
)
