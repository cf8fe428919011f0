"""DeleteShareGroupOffsets (api key 92), decoded at v0, advertised.

Deletes the share-partition state of whole topics from an empty share group
(KIP-932, Kafka 4.1); errors are per topic.  Flexible.

Served at the group coordinator by :mod:`mafka.broker.handlers.share_group_offsets` (issue 32).

Fields follow Kafka 4.4's ``DeleteShareGroupOffsetsRequest.json`` /
``DeleteShareGroupOffsetsResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    92,
    "DeleteShareGroupOffsets",
    advertised=(0, 0),
    decode=(0, 0),
    flexible="0+",
    request=[
        F("group_id", "string", "0+"),
        F("topics", "[]DeleteShareGroupOffsetsRequestTopic", "0+",
            F("topic_name", "string", "0+"),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+"),
        F("responses", "[]DeleteShareGroupOffsetsResponseTopic", "0+",
            F("topic_name", "string", "0+"),
            F("topic_id", "uuid", "0+"),
            F("error_code", "int16", "0+"),
            F("error_message", "string", "0+", nullable="0+"),
        ),
    ],
)
