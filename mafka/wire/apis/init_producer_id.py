"""InitProducerId (api key 22), decoded at v0–4 (Kafka 2.8).

v2+ is flexible; v3+ carries the producer id and epoch a producer already
holds (KIP-360), so a transactional producer can bump its epoch and an
expired transactional id is told apart from a reused one.

Fields follow Kafka's ``InitProducerIdRequest.json`` / ``InitProducerIdResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    22,
    "InitProducerId",
    advertised=(0, 4),
    decode=(0, 4),
    flexible="2+",
    request=[
        F("transactional_id", "string", "0+", nullable="0+"),
        F("transaction_timeout_ms", "int32", "0+"),
        F("producer_id", "int64", "3+", default=-1),
        F("producer_epoch", "int16", "3+", default=-1),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("producer_id", "int64", "0+", default=-1),
        F("producer_epoch", "int16", "0+"),
    ],
)
