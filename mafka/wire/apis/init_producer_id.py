"""InitProducerId (api key 22), decoded at v0–1.

v0 and v1 share one layout; v3+ (KIP-360 epoch bumps) is flexible and not
spoken.

Fields follow Kafka's ``InitProducerIdRequest.json`` / ``InitProducerIdResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    22,
    "InitProducerId",
    advertised=(0, 1),
    decode=(0, 1),
    flexible="2+",
    request=[
        F("transactional_id", "string", "0+", nullable="0+"),
        F("transaction_timeout_ms", "int32", "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("producer_id", "int64", "0+", default=-1),
        F("producer_epoch", "int16", "0+"),
    ],
)
