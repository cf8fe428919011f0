"""ShareFetch (api key 78), decoded and advertised at v1–2.

The share consumer's fetch (KIP-932): it acquires records under a lock and
piggybacks acknowledgements of earlier ones.  v0 was Kafka 4.0's early
access, gone from Kafka 4.1's schema (its partition_max_bytes is kept as
Kafka's schema keeps it, on the wire in no decodable version); v1 adds
max_records and batch_size to the request and acquisition_lock_timeout_ms to
the response; v2 (Kafka 4.2) adds share_acquire_mode (KIP-1206) and
is_renew_ack (KIP-1222).  Flexible throughout.  Records stay opaque bytes.

Kafka's records field is nullable only at v0; Mafka's records leaf reads and
writes null at every version, so a handler must answer bytes (``b""`` for
none), never None.

Advertised once the broker served ShareFetch and ShareAcknowledge end to end (issue 32).

Fields follow Kafka 4.4's ``ShareFetchRequest.json`` / ``ShareFetchResponse.json``.
"""

from __future__ import annotations

from ..api import api
from ..schema import F

SPEC = api(
    78,
    "ShareFetch",
    advertised=(1, 2),
    decode=(1, 2),
    flexible="0+",
    request=[
        F("group_id", "string", "0+", nullable="0+"),
        F("member_id", "string", "0+", nullable="0+"),
        F("share_session_epoch", "int32", "0+"),
        F("max_wait_ms", "int32", "0+"),
        F("min_bytes", "int32", "0+"),
        F("max_bytes", "int32", "0+", default=0x7FFFFFFF),
        F("max_records", "int32", "1+"),
        F("batch_size", "int32", "1+"),
        F("share_acquire_mode", "int8", "2+", default=0),
        F("is_renew_ack", "bool", "2+", default=False),
        F("topics", "[]FetchTopic", "0+",
            F("topic_id", "uuid", "0+"),
            F("partitions", "[]FetchPartition", "0+",
                F("partition_index", "int32", "0+"),
                F("partition_max_bytes", "int32", "0"),
                F("acknowledgement_batches", "[]AcknowledgementBatch", "0+",
                    F("first_offset", "int64", "0+"),
                    F("last_offset", "int64", "0+"),
                    F("acknowledge_types", "[]int8", "0+"),
                ),
            ),
        ),
        F("forgotten_topics_data", "[]ForgottenTopic", "0+",
            F("topic_id", "uuid", "0+"),
            F("partitions", "[]int32", "0+"),
        ),
    ],
    response=[
        F("throttle_time_ms", "int32", "0+"),
        F("error_code", "int16", "0+"),
        F("error_message", "string", "0+", nullable="0+"),
        F("acquisition_lock_timeout_ms", "int32", "1+"),
        F("responses", "[]ShareFetchableTopicResponse", "0+",
            F("topic_id", "uuid", "0+"),
            F("partitions", "[]PartitionData", "0+",
                F("partition_index", "int32", "0+"),
                F("error_code", "int16", "0+"),
                F("error_message", "string", "0+", nullable="0+"),
                F("acknowledge_error_code", "int16", "0+"),
                F("acknowledge_error_message", "string", "0+", nullable="0+"),
                F("current_leader", "LeaderIdAndEpoch", "0+",
                    F("leader_id", "int32", "0+"),
                    F("leader_epoch", "int32", "0+"),
                ),
                F("records", "records", "0+", nullable="0"),
                F("acquired_records", "[]AcquiredRecords", "0+",
                    F("first_offset", "int64", "0+"),
                    F("last_offset", "int64", "0+"),
                    F("delivery_count", "int16", "0+"),
                ),
            ),
        ),
        F("node_endpoints", "[]NodeEndpoint", "0+",
            F("node_id", "int32", "0+"),
            F("host", "string", "0+"),
            F("port", "int32", "0+"),
            F("rack", "string", "0+", nullable="0+"),
        ),
    ],
)
