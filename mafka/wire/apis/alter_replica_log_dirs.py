"""AlterReplicaLogDirs (api key 34), decoded at v1–2.

v1 is v0 (Kafka 4.0 dropped v0, and no client Mafka is tested with sends
it); v2 is flexible.

Fields follow Kafka's ``AlterReplicaLogDirsRequest.json`` / ``AlterReplicaLogDirsResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    34,
    "AlterReplicaLogDirs",
    advertised=(1, 2),
    decode=(1, 2),
    flexible="2+",
    request=[
        F("dirs", "[]AlterReplicaLogDir", "0+",
            F("path", "string", "0+"),
            F("topics", "[]AlterReplicaLogDirTopic", "0+",
                F("name", "string", "0+"),
                F("partitions", "[]int32", "0+"),
            ),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("results", "[]AlterReplicaLogDirTopicResult", "0+",
            F("topic_name", "string", "0+"),
            F("partitions", "[]AlterReplicaLogDirPartitionResult", "0+",
                F("partition_index", "int32", "0+"),
                F("error_code", "int16", "0+"),
            ),
        ),
    ],
)
