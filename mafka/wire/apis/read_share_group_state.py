"""ReadShareGroupState (api key 84), decoded at v0, not advertised.

Inter-broker (KIP-932): a share-partition leader reads its durable state
(state epoch, start offset, state batches) from the share coordinator when it
loads the share-partition; a leader epoch newer than the coordinator has seen
is recorded, fencing writes of older leaders.  Sent through
:mod:`mafka.broker.share_persister`, answered by
:mod:`mafka.broker.handlers.share_state`.  Flexible from v0.

Fields follow Kafka 4.4's ``ReadShareGroupStateRequest.json`` /
``ReadShareGroupStateResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    84,
    "ReadShareGroupState",
    advertised=None,
    decode=(0, 0),
    flexible="0+",
    request=[
        F("group_id", "string", "0+"),
        F("topics", "[]ReadStateData", "0+",
            F("topic_id", "uuid", "0+"),
            F("partitions", "[]PartitionData", "0+",
                F("partition", "int32", "0+"),
                F("leader_epoch", "int32", "0+"),
            ),
        ),
    ],
    response=[
        F("results", "[]ReadStateResult", "0+",
            F("topic_id", "uuid", "0+"),
            F("partitions", "[]PartitionResult", "0+",
                F("partition", "int32", "0+"),
                F("error_code", "int16", "0+"),
                F("error_message", "string", "0+", nullable="0+"),
                F("state_epoch", "int32", "0+"),
                F("start_offset", "int64", "0+"),
                F("state_batches", "[]StateBatch", "0+",
                    F("first_offset", "int64", "0+"),
                    F("last_offset", "int64", "0+"),
                    F("delivery_state", "int8", "0+"),
                    F("delivery_count", "int16", "0+"),
                ),
            ),
        ),
    ],
)
