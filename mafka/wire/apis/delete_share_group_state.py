"""DeleteShareGroupState (api key 86), decoded at v0, not advertised.

Inter-broker (KIP-932): the group coordinator has the share coordinator
delete share-partitions' durable state (a tombstone each) when a share
group's offsets or the group itself are deleted.  Sent through
:mod:`mafka.broker.share_persister`, answered by
:mod:`mafka.broker.handlers.share_state`.  Flexible from v0.

Fields follow Kafka 4.4's ``DeleteShareGroupStateRequest.json`` /
``DeleteShareGroupStateResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    86,
    "DeleteShareGroupState",
    advertised=None,
    decode=(0, 0),
    flexible="0+",
    request=[
        F("group_id", "string", "0+"),
        F("topics", "[]DeleteStateData", "0+",
            F("topic_id", "uuid", "0+"),
            F("partitions", "[]PartitionData", "0+",
                F("partition", "int32", "0+"),
            ),
        ),
    ],
    response=[
        F("results", "[]DeleteStateResult", "0+",
            F("topic_id", "uuid", "0+"),
            F("partitions", "[]PartitionResult", "0+",
                F("partition", "int32", "0+"),
                F("error_code", "int16", "0+"),
                F("error_message", "string", "0+", nullable="0+"),
            ),
        ),
    ],
)
