"""ReadShareGroupStateSummary (api key 87), decoded at v0–1, not advertised.

Inter-broker (KIP-932): the group coordinator reads share-partitions' start
offsets (and epochs) from the share coordinator for DescribeShareGroupOffsets;
an uninitialized share-partition answers start offset -1.  v1 adds
delivery_complete_count to the response (KIP-1226; -1 when absent), from
which the lag is computed.  Sent through :mod:`mafka.broker.share_persister`,
answered by :mod:`mafka.broker.handlers.share_state`.  Flexible from v0.

Fields follow Kafka 4.4's ``ReadShareGroupStateSummaryRequest.json`` /
``ReadShareGroupStateSummaryResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    87,
    "ReadShareGroupStateSummary",
    advertised=None,
    decode=(0, 1),
    flexible="0+",
    request=[
        F("group_id", "string", "0+"),
        F("topics", "[]ReadStateSummaryData", "0+",
            F("topic_id", "uuid", "0+"),
            F("partitions", "[]PartitionData", "0+",
                F("partition", "int32", "0+"),
                F("leader_epoch", "int32", "0+"),
            ),
        ),
    ],
    response=[
        F("results", "[]ReadStateSummaryResult", "0+",
            F("topic_id", "uuid", "0+"),
            F("partitions", "[]PartitionResult", "0+",
                F("partition", "int32", "0+"),
                F("error_code", "int16", "0+"),
                F("error_message", "string", "0+", nullable="0+"),
                F("state_epoch", "int32", "0+"),
                F("leader_epoch", "int32", "0+"),
                F("start_offset", "int64", "0+"),
                F("delivery_complete_count", "int32", "1+", default=-1),
            ),
        ),
    ],
)
