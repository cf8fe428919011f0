"""WriteShareGroupState (api key 85), decoded at v0–1, not advertised.

Inter-broker (KIP-932): a share-partition leader persists changes of its
in-flight records (state batches: delivery state 0 Available, 2 Acknowledged,
4 Archived, with delivery counts) and its start offset at the share
coordinator, fenced by state epoch and leader epoch.  v1 adds
delivery_complete_count (KIP-1226; -1 when absent).  Sent through
:mod:`mafka.broker.share_persister`, answered by
:mod:`mafka.broker.handlers.share_state`.  Flexible from v0.

Fields follow Kafka 4.4's ``WriteShareGroupStateRequest.json`` /
``WriteShareGroupStateResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    85,
    "WriteShareGroupState",
    advertised=None,
    decode=(0, 1),
    flexible="0+",
    request=[
        F("group_id", "string", "0+"),
        F("topics", "[]WriteStateData", "0+",
            F("topic_id", "uuid", "0+"),
            F("partitions", "[]PartitionData", "0+",
                F("partition", "int32", "0+"),
                F("state_epoch", "int32", "0+"),
                F("leader_epoch", "int32", "0+"),
                F("start_offset", "int64", "0+"),
                F("delivery_complete_count", "int32", "1+", default=-1),
                F("state_batches", "[]StateBatch", "0+",
                    F("first_offset", "int64", "0+"),
                    F("last_offset", "int64", "0+"),
                    F("delivery_state", "int8", "0+"),
                    F("delivery_count", "int16", "0+"),
                ),
            ),
        ),
    ],
    response=[
        F("results", "[]WriteStateResult", "0+",
            F("topic_id", "uuid", "0+"),
            F("partitions", "[]PartitionResult", "0+",
                F("partition", "int32", "0+"),
                F("error_code", "int16", "0+"),
                F("error_message", "string", "0+", nullable="0+"),
            ),
        ),
    ],
)
