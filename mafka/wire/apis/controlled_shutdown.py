"""ControlledShutdown (api key 7), decoded at v2–2.

Inter-broker, broker → controller; v2 carries broker_epoch. Not advertised.

Fields follow Kafka's ``ControlledShutdownRequest.json`` / ``ControlledShutdownResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    7,
    "ControlledShutdown",
    advertised=None,
    decode=(2, 2),
    flexible="none",
    request=[
        F("broker_id", "int32", "0+"),
        F("broker_epoch", "int64", "2+", default=-1),
    ],
    response=[
        F("error_code", "int16", "0+"),
        F("remaining_partitions", "[]RemainingPartition", "0+",
            F("topic_name", "string", "0+"),
            F("partition_index", "int32", "0+"),
        ),
    ],
)
