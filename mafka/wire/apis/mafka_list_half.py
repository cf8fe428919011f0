"""MafkaListHalf (api key 10003, Mafka's own), v0: the half messages a broker is waiting to check back.

Each entry is an unresolved local-transaction half message on a partition that
broker leads whose check-back is queued and not yet taken by a producer of its
group — typically because no producer of the group is alive
(``mafka transactions --list-half``).  Not advertised in ApiVersions.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    10003,
    "MafkaListHalf",
    advertised=None,
    decode=(0, 0),
    flexible="0+",
    request=[],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("halves", "[]Half", "0+",
            F("producer_group", "string", "0+"),
            F("topic", "string", "0+"),
            F("partition", "int32", "0+"),
            F("offset", "int64", "0+"),
            F("transactional_id", "string", "0+"),
            F("times_checked", "int32", "0+"),
        ),
    ],
)
