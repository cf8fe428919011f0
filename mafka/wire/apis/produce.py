"""Produce (api key 0), decoded at v0–9.

Request v0–2 carry legacy message sets (magic 0/1, up-converted by the
broker: :mod:`mafka.wire.legacy_records`) and no transactional_id; v3–8
share one layout (v9 is the flexible form).  The response adds
throttle_time (v1), log_append_time (v2), log_start_offset (v5), and
per-record errors plus an error message (v8, KIP-467).

Fields follow Kafka's ``ProduceRequest.json`` / ``ProduceResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    0,
    "Produce",
    advertised=(0, 9),
    decode=(0, 9),
    flexible="9+",
    request=[
        F("transactional_id", "string", "3+", nullable="3+"),
        F("acks", "int16", "0+"),
        F("timeout_ms", "int32", "0+"),
        F("topic_data", "[]TopicProduceData", "0+",
            F("name", "string", "0-12"),
            F("partition_data", "[]PartitionProduceData", "0+",
                F("index", "int32", "0+"),
                F("records", "records", "0+", nullable="0+"),
            ),
        ),
    ],
    response=[
        F("responses", "[]TopicProduceResponse", "0+",
            F("name", "string", "0-12"),
            F("partition_responses", "[]PartitionProduceResponse", "0+",
                F("index", "int32", "0+"),
                F("error_code", "int16", "0+"),
                F("base_offset", "int64", "0+"),
                F("log_append_time_ms", "int64", "2+", default=-1),
                F("log_start_offset", "int64", "5+", default=-1),
                F("record_errors", "[]BatchIndexAndErrorMessage", "8+",
                    F("batch_index", "int32", "8+"),
                    F("batch_index_error_message", "string", "8+", nullable="8+"),
                ),
                F("error_message", "string", "8+", nullable="8+"),
            ),
        ),
        F("throttle_time_ms", "int32", "1+"),
    ],
)
