"""InitializeShareGroupState (api key 83), decoded at v0, not advertised.

Inter-broker (KIP-932): the group coordinator asks the share coordinator to
start, or restart, the durable state of share-partitions — a fresh snapshot
with the given state epoch and start offset (-1: ``share.auto.offset.reset``
decides when the share-partition is first read).  Sent through
:mod:`mafka.broker.share_persister`, answered by
:mod:`mafka.broker.handlers.share_state`.  Flexible from v0.

Fields follow Kafka 4.4's ``InitializeShareGroupStateRequest.json`` /
``InitializeShareGroupStateResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    83,
    "InitializeShareGroupState",
    advertised=None,
    decode=(0, 0),
    flexible="0+",
    request=[
        F("group_id", "string", "0+"),
        F("topics", "[]InitializeStateData", "0+",
            F("topic_id", "uuid", "0+"),
            F("partitions", "[]PartitionData", "0+",
                F("partition", "int32", "0+"),
                F("state_epoch", "int32", "0+"),
                F("start_offset", "int64", "0+"),
            ),
        ),
    ],
    response=[
        F("results", "[]InitializeStateResult", "0+",
            F("topic_id", "uuid", "0+"),
            F("partitions", "[]PartitionResult", "0+",
                F("partition", "int32", "0+"),
                F("error_code", "int16", "0+"),
                F("error_message", "string", "0+", nullable="0+"),
            ),
        ),
    ],
)
