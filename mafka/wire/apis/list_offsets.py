"""ListOffsets (api key 2), decoded at v0–7.

v0 (clients older than 0.10.1, e.g. librdkafka with ``api.version.request=false``)
asks for up to ``max_num_offsets`` segment-start offsets and gets
``old_style_offsets``; v1 answers one offset and timestamp per partition; v2 adds isolation_level
and throttle_time_ms; v4 current_leader_epoch in the request (KIP-320
fencing) and the answer's leader_epoch; v5 may answer OFFSET_NOT_AVAILABLE;
v6 is flexible; v7 allows timestamp −3, MAX_TIMESTAMP (KIP-734).

Fields follow Kafka's ``ListOffsetsRequest.json`` / ``ListOffsetsResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

#: ``ListOffsetsRequest.EARLIEST_TIMESTAMP``: asks for the log start offset, not a time's.
EARLIEST_TIMESTAMP = -2
#: ``ListOffsetsRequest.LATEST_TIMESTAMP``: asks for the log end offset (the high watermark
#: or the last stable offset, by isolation level).
LATEST_TIMESTAMP = -1

SPEC = api(
    2,
    "ListOffsets",
    advertised=(0, 7),
    decode=(0, 7),
    flexible="6+",
    request=[
        F("replica_id", "int32", "0+"),
        F("isolation_level", "int8", "2+"),
        F("topics", "[]ListOffsetsTopic", "0+",
            F("name", "string", "0+"),
            F("partitions", "[]ListOffsetsPartition", "0+",
                F("partition_index", "int32", "0+"),
                F("current_leader_epoch", "int32", "4+", default=-1),
                F("timestamp", "int64", "0+"),
                F("max_num_offsets", "int32", "0", default=1),
            ),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "2+"),
        F("topics", "[]ListOffsetsTopicResponse", "0+",
            F("name", "string", "0+"),
            F("partitions", "[]ListOffsetsPartitionResponse", "0+",
                F("partition_index", "int32", "0+"),
                F("error_code", "int16", "0+"),
                F("old_style_offsets", "[]int64", "0"),
                F("timestamp", "int64", "1+", default=-1),
                F("offset", "int64", "1+", default=-1),
                F("leader_epoch", "int32", "4+", default=-1),
            ),
        ),
    ],
)
