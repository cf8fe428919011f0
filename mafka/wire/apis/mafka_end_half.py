"""MafkaEndHalf (api key 10001, Mafka's own), v0: commit or roll back a local-transaction half message.

Sent by ``mafka.client.TransactionalMessageProducer`` to the leader of the
half message's partition, after its local task (or a check-back) decided.
``offset`` is the offset the half message was acknowledged with.  Not
advertised in ApiVersions.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    10001,
    "MafkaEndHalf",
    advertised=None,
    decode=(0, 0),
    flexible="0+",
    request=[
        F("topic", "string", "0+"),
        F("partition", "int32", "0+"),
        F("offset", "int64", "0+"),
        F("commit", "bool", "0+"),
        F("timeout_ms", "int32", "0+"),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
    ],
)
