"""DescribeClientQuotas (api key 48), v0–1 as Kafka 2.8 (KIP-546); v1 is flexible.

A filter of components (an entity type ``user``/``client-id``/``ip``, a
match type 0 exact name, 1 default, 2 any specified name, and the name for
exact matches) and ``strict``; the response lists each matching entity with
its quota values (doubles), or a top-level error with null ``entries``.

Kafka 2.7 had v0 only; 2.8 added v1 (KAFKA-10729, tagged fields) and later
Kafka still speaks 0–1.  Kafka's Java admin client (``kafka-configs.sh``
``--entity-type users|clients|ips``) sends v1; librdkafka and so
confluent-kafka-python have no client quota API.

Announced and served at 0–1 (:mod:`mafka.broker.handlers.client_quotas`).

Fields follow Kafka's ``DescribeClientQuotasRequest.json`` /
``DescribeClientQuotasResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    48,
    "DescribeClientQuotas",
    # Kafka 2.8 announces 0-1 (mafka.broker.handlers.client_quotas serves them).
    advertised=(0, 1),
    decode=(0, 1),
    flexible="1+",
    request=[
        F("components", "[]ComponentData", "0+",
            F("entity_type", "string", "0+"),
            F("match_type", "int8", "0+"),
            F("match", "string", "0+", nullable="0+"),
        ),
        F("strict", "bool", "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+"),
        F("entries", "[]EntryData", "0+",
            F("entity", "[]EntityData", "0+",
                F("entity_type", "string", "0+"),
                F("entity_name", "string", "0+", nullable="0+"),
            ),
            F("values", "[]ValueData", "0+",
                F("key", "string", "0+"),
                F("value", "float64", "0+"),
            ),
            nullable="0+",
        ),
    ],
)
