"""AddOffsetsToTxn (api key 25), decoded at v0–3 (Kafka 2.8).

v0–3 share one layout; v3 is flexible.

Fields follow Kafka's ``AddOffsetsToTxnRequest.json`` / ``AddOffsetsToTxnResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    25,
    "AddOffsetsToTxn",
    advertised=(0, 3),
    decode=(0, 3),
    flexible="3+",
    request=[
        F("transactional_id", "string", "0+"),
        F("producer_id", "int64", "0+"),
        F("producer_epoch", "int16", "0+"),
        F("group_id", "string", "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
    ],
)
