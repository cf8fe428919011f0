"""AlterClientQuotas (api key 49), v0–1 as Kafka 2.8 (KIP-546); v1 is flexible.

Each entry names an entity (``user`` / ``client-id`` / ``ip`` parts, a null
name for the default) and ops: a key with a double value to set, or
``remove``.  ``validate_only`` checks without writing.  The response has an
error per entry, echoing its entity.

Kafka 2.7 had v0 only; 2.8 added v1 (KAFKA-10729, tagged fields) and later
Kafka still speaks 0–1.  Kafka's Java admin client (``kafka-configs.sh
--alter``) sends v1; librdkafka and so confluent-kafka-python have no client
quota API.

Announced and served at 0–1 (:mod:`mafka.broker.handlers.client_quotas`).

Fields follow Kafka's ``AlterClientQuotasRequest.json`` /
``AlterClientQuotasResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    49,
    "AlterClientQuotas",
    # Kafka 2.8 announces 0-1 (mafka.broker.handlers.client_quotas serves them).
    advertised=(0, 1),
    decode=(0, 1),
    flexible="1+",
    request=[
        F("entries", "[]EntryData", "0+",
            F("entity", "[]EntityData", "0+",
                F("entity_type", "string", "0+"),
                F("entity_name", "string", "0+", nullable="0+"),
            ),
            F("ops", "[]OpData", "0+",
                F("key", "string", "0+"),
                F("value", "float64", "0+"),
                F("remove", "bool", "0+"),
            ),
        ),
        F("validate_only", "bool", "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("entries", "[]EntryData", "0+",
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+"),
            F("entity", "[]EntityData", "0+",
                F("entity_type", "string", "0+"),
                F("entity_name", "string", "0+", nullable="0+"),
            ),
        ),
    ],
)
