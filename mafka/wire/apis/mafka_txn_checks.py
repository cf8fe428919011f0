"""MafkaTxnChecks (api key 10002, Mafka's own), v0: a producer group pulls its check-backs from one broker.

Each check is an unresolved half message on a partition that broker leads,
whose producer did not commit or roll it back within
``mafka.txn.check.interval.ms``; the producer answers with MafkaEndHalf (or
not at all: UNKNOWN, asked again an interval later).  Not advertised in
ApiVersions.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    10002,
    "MafkaTxnChecks",
    advertised=None,
    decode=(0, 0),
    flexible="0+",
    request=[
        F("producer_group", "string", "0+"),
        F("max_checks", "int32", "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("checks", "[]Check", "0+",
            F("topic", "string", "0+"),
            F("partition", "int32", "0+"),
            F("offset", "int64", "0+"),
            F("transactional_id", "string", "0+"),
            F("key", "bytes", "0+", nullable="0+"),
            F("value", "bytes", "0+", nullable="0+"),
            F("headers", "[]Header", "0+",
                F("key", "string", "0+"),
                F("value", "bytes", "0+", nullable="0+"),
            ),
            F("times_checked", "int32", "0+"),
        ),
    ],
)
