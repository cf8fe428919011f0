"""AlterUserScramCredentials (api key 51), decoded at v0 (KIP-554).

Flexible from v0.  Deletions name a user and mechanism; upsertions carry
the client-computed salted password with its salt and iterations (the
password never travels).

Fields follow Kafka's ``AlterUserScramCredentialsRequest.json`` /
``AlterUserScramCredentialsResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    51,
    "AlterUserScramCredentials",
    advertised=(0, 0),
    decode=(0, 0),
    flexible="0+",
    request=[
        F("deletions", "[]ScramCredentialDeletion", "0+",
            F("name", "string", "0+"),
            F("mechanism", "int8", "0+"),
        ),
        F("upsertions", "[]ScramCredentialUpsertion", "0+",
            F("name", "string", "0+"),
            F("mechanism", "int8", "0+"),
            F("iterations", "int32", "0+"),
            F("salt", "bytes", "0+"),
            F("salted_password", "bytes", "0+"),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("results", "[]AlterUserScramCredentialsResult", "0+",
            F("user", "string", "0+"),
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+"),
        ),
    ],
)
