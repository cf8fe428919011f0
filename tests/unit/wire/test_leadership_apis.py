"""ElectLeaders (43), AlterPartitionReassignments (45), ListPartitionReassignments (46).

The generic conformance suite (test_conformance.py) covers every version
against kafka-python with random values; these pin the cases the broker's
semantics hang on: null = "all", the v0 election type, cancellation by null
replicas, and the flexible encoding of the KIP-455 APIs.
"""

from __future__ import annotations

from mafka.wire.codec import decode_body, decode_request, encode_body, encode_request
from mafka.wire.registry import API_SPECS

from . import reference_codec as kp

ELECT, ALTER, LIST = 43, 45, 46


def test_elect_leaders_null_partitions_means_all_at_every_version() -> None:
    spec = API_SPECS[ELECT]
    for version in (0, 1, 2):
        body = {"election_type": 0, "topic_partitions": None, "timeout_ms": 30000}
        encoded = encode_body(spec.request, version, body)
        assert encoded == kp.encode("ElectLeadersRequest", version, body)
        decoded = decode_body(spec.request, version, encoded)
        assert decoded.topic_partitions is None and decoded.timeout_ms == 30000


def test_elect_leaders_v0_has_no_election_type_and_means_preferred() -> None:
    spec = API_SPECS[ELECT]
    theirs = kp.encode(
        "ElectLeadersRequest",
        0,
        {"topic_partitions": [{"topic": "t", "partitions": [0, 2]}], "timeout_ms": 1000},
    )
    decoded = decode_body(spec.request, 0, theirs)
    assert decoded.election_type == 0
    assert [(tp.topic, list(tp.partitions)) for tp in decoded.topic_partitions] == [("t", [0, 2])]


def test_elect_leaders_v2_is_flexible_with_header_v2() -> None:
    frame = encode_request(
        ELECT, 2, 7, "cli", {"election_type": 1, "topic_partitions": [], "timeout_ms": 5}
    )
    request = decode_request(frame[4:])
    assert request.header.header_version == 2
    assert request.body.election_type == 1


def test_alter_partition_reassignments_null_replicas_cancels() -> None:
    spec = API_SPECS[ALTER]
    body = {
        "timeout_ms": 60000,
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {"partition_index": 0, "replicas": [3, 1]},
                    {"partition_index": 1, "replicas": None},
                ],
            }
        ],
    }
    encoded = encode_body(spec.request, 0, body)
    theirs = kp.decode("AlterPartitionReassignmentsRequest", 0, encoded)
    assert theirs.encode(version=0) == encoded
    decoded = decode_body(spec.request, 0, encoded)
    assert [p.replicas for p in decoded.topics[0].partitions] == [[3, 1], None]


def test_list_partition_reassignments_null_topics_and_response() -> None:
    spec = API_SPECS[LIST]
    assert encode_body(spec.request, 0, {"timeout_ms": 1, "topics": None}) == kp.encode(
        "ListPartitionReassignmentsRequest", 0, {"timeout_ms": 1, "topics": None}
    )
    response = {
        "throttle_time_ms": 0,
        "error_code": 0,
        "error_message": None,
        "topics": [
            {
                "name": "t",
                "partitions": [
                    {
                        "partition_index": 0,
                        "replicas": [4, 5, 1, 2],
                        "adding_replicas": [4, 5],
                        "removing_replicas": [1, 2],
                    }
                ],
            }
        ],
    }
    encoded = encode_body(spec.response, 0, response)
    assert encoded == kp.encode("ListPartitionReassignmentsResponse", 0, response)
