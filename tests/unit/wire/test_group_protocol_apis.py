"""Kafka 4's group APIs (KIP-848, KIP-932) at Kafka 4.4's versions, decoded but never advertised.

ConsumerGroupHeartbeat (68), ConsumerGroupDescribe (69), ShareGroupHeartbeat
(76), ShareGroupDescribe (77), ShareFetch (78), ShareAcknowledge (79),
DescribeShareGroupOffsets (90), AlterShareGroupOffsets (91) and
DeleteShareGroupOffsets (92).  test_conformance.py checks every version
against kafka-python (reading Kafka 4.4's JSON in ``kafka_schemas/``) with
random values; these pin what random values may miss:

* none of them is in the ApiVersions answer, while each decodes exactly the
  versions Kafka 4.4's schema defines, flexible throughout;
* a fully populated request and response round-trips through whole frames at
  every version, and encodes as kafka-python encodes it;
* golden bytes worked out by hand from the JSON schemas for
  ConsumerGroupHeartbeat, ShareFetch and ShareAcknowledge, including the
  KIP-893 null marker of the heartbeat's nullable assignment.
"""

from __future__ import annotations

import struct
from typing import Any

import pytest

from mafka.broker.handlers import api_versions as api_versions_handler
from mafka.wire.codec import (
    decode_body,
    decode_request,
    decode_response,
    encode_body,
    encode_request,
    encode_response,
)
from mafka.wire.errors import ProtocolError, UnsupportedVersion
from mafka.wire.header import RequestHeader
from mafka.wire.registry import API_SPECS, api_versions_entries

from . import reference_codec as kp
from .strategies import plain

#: api key → (name, the versions Kafka 4.4's schema defines).
KAFKA_44 = {
    68: ("ConsumerGroupHeartbeat", (0, 1)),
    69: ("ConsumerGroupDescribe", (0, 1)),
    76: ("ShareGroupHeartbeat", (1, 1)),
    77: ("ShareGroupDescribe", (1, 1)),
    78: ("ShareFetch", (1, 2)),
    79: ("ShareAcknowledge", (1, 2)),
    90: ("DescribeShareGroupOffsets", (0, 1)),
    91: ("AlterShareGroupOffsets", (0, 0)),
    92: ("DeleteShareGroupOffsets", (0, 0)),
}

TOPIC = bytes(range(1, 17))
OTHER_TOPIC = bytes(range(0xA1, 0xB1))


# -- advertised once served ---------------------------------------------------------------------

#: the APIs the broker serves (issue 32): advertised at Kafka 4.4's versions; the rest not at all
SERVED = {68, 69, 76, 77, 78, 79, 90, 91, 92}


def test_only_the_served_ones_are_advertised_by_the_registry_or_the_api_versions_handler() -> None:
    advertised = {e["api_key"] for e in api_versions_entries()}
    assert advertised & set(KAFKA_44) == SERVED
    answer = api_versions_handler.handlers(None)[18]
    for protocol in ("PLAINTEXT", "SASL_SSL"):
        connection = type("Connection", (), {"security_protocol": protocol})()
        entries = {e["api_key"]: (e["min_version"], e["max_version"]) for e in answer(None, connection)["api_keys"]}
        assert {k: v for k, v in entries.items() if k in KAFKA_44} == {k: KAFKA_44[k][1] for k in SERVED}
    for key in KAFKA_44:
        assert (API_SPECS[key].advertised is None) == (key not in SERVED)


@pytest.mark.parametrize("key", sorted(KAFKA_44))
def test_each_decodes_kafka_44s_versions_flexible_throughout(key: int) -> None:
    name, (lo, hi) = KAFKA_44[key]
    spec = API_SPECS[key]
    assert spec.name == name and spec.decode == (lo, hi)
    for version in range(lo, hi + 1):
        assert spec.request.is_flexible(version) and spec.response.is_flexible(version)
        assert spec.request_header_version(version) == 2 and spec.response_header_version(version) == 1
    for version in (lo - 1, hi + 1):
        with pytest.raises(UnsupportedVersion):
            decode_request(struct.pack(">hhih", key, version, 1, -1) + b"\x00" * 32)


# -- fully populated bodies -------------------------------------------------------------------------
# Every field of every version, none at its default; a version reads the fields it has.

_ASSIGNMENT = {"topic_partitions": [{"topic_id": TOPIC, "partitions": [0, 3]},
                                    {"topic_id": OTHER_TOPIC, "partitions": []}]}
_DESCRIBED_ASSIGNMENT = {"topic_partitions": [{"topic_id": TOPIC, "topic_name": "orders", "partitions": [1, 2]}]}
_LEADER = {"leader_id": 2, "leader_epoch": 17}
_NODES = [{"node_id": 2, "host": "broker-2", "port": 9093, "rack": "r2"},
          {"node_id": 3, "host": "broker-3", "port": 9094, "rack": None}]
_ACKS = [{"first_offset": 100, "last_offset": 102, "acknowledge_types": [1, 2, 0]},
         {"first_offset": 110, "last_offset": 110, "acknowledge_types": [3]}]

BODIES: dict[tuple[int, str], dict[str, Any]] = {
    (68, "request"): {
        "group_id": "payments", "member_id": "m-7f3c", "member_epoch": 12, "instance_id": "host-1",
        "rack_id": "rack-a", "rebalance_timeout_ms": 45000, "subscribed_topic_names": ["orders", "refunds"],
        "subscribed_topic_regex": "pay-.*", "server_assignor": "uniform",
        "topic_partitions": [{"topic_id": TOPIC, "partitions": [0, 3]}],
    },
    (68, "response"): {
        "throttle_time_ms": 9, "error_code": 25, "error_message": "Unknown member", "member_id": "m-7f3c",
        "member_epoch": 13, "heartbeat_interval_ms": 5000, "assignment": _ASSIGNMENT,
    },
    (69, "request"): {"group_ids": ["payments", "audit"], "include_authorized_operations": True},
    (69, "response"): {
        "throttle_time_ms": 1,
        "groups": [{
            "error_code": 0, "error_message": "fine", "group_id": "payments", "group_state": "Stable",
            "group_epoch": 40, "assignment_epoch": 39, "assignor_name": "range",
            "members": [{
                "member_id": "m-7f3c", "instance_id": "host-1", "rack_id": "rack-a", "member_epoch": 39,
                "client_id": "consumer-1", "client_host": "/10.0.0.7",
                "subscribed_topic_names": ["orders"], "subscribed_topic_regex": "ord.*",
                "assignment": _DESCRIBED_ASSIGNMENT, "target_assignment": {"topic_partitions": []},
                "member_type": 1,
            }],
            "authorized_operations": 0b1010,
        }],
    },
    (76, "request"): {"group_id": "queue", "member_id": "s-1", "member_epoch": 3, "rack_id": "rack-b",
                      "subscribed_topic_names": ["jobs"]},
    (76, "response"): {
        "throttle_time_ms": 0, "error_code": 0, "error_message": "ok", "member_id": "s-1", "member_epoch": 4,
        "heartbeat_interval_ms": 3000, "assignment": _ASSIGNMENT,
    },
    (77, "request"): {"group_ids": ["queue"], "include_authorized_operations": True},
    (77, "response"): {
        "throttle_time_ms": 2,
        "groups": [{
            "error_code": 0, "error_message": None, "group_id": "queue", "group_state": "Stable",
            "group_epoch": 8, "assignment_epoch": 8, "assignor_name": "simple",
            "members": [{
                "member_id": "s-1", "rack_id": None, "member_epoch": 8, "client_id": "share-1",
                "client_host": "/10.0.0.8", "subscribed_topic_names": ["jobs"],
                "assignment": _DESCRIBED_ASSIGNMENT,
            }],
            "authorized_operations": 0x7FF,
        }],
    },
    (78, "request"): {
        "group_id": "queue", "member_id": "s-1", "share_session_epoch": 5, "max_wait_ms": 500, "min_bytes": 1,
        "max_bytes": 52428800, "max_records": 500, "batch_size": 100, "share_acquire_mode": 1,
        "is_renew_ack": True,
        "topics": [{"topic_id": TOPIC, "partitions": [{"partition_index": 0, "acknowledgement_batches": _ACKS}]}],
        "forgotten_topics_data": [{"topic_id": OTHER_TOPIC, "partitions": [4, 5]}],
    },
    (78, "response"): {
        "throttle_time_ms": 0, "error_code": 0, "error_message": None, "acquisition_lock_timeout_ms": 30000,
        "responses": [{"topic_id": TOPIC, "partitions": [{
            "partition_index": 0, "error_code": 6, "error_message": "Not leader", "acknowledge_error_code": 0,
            "acknowledge_error_message": None, "current_leader": _LEADER, "records": b"opaque record batches",
            "acquired_records": [{"first_offset": 103, "last_offset": 120, "delivery_count": 2}],
        }]}],
        "node_endpoints": _NODES,
    },
    (79, "request"): {
        "group_id": "queue", "member_id": "s-1", "share_session_epoch": 6, "is_renew_ack": True,
        "topics": [{"topic_id": TOPIC, "partitions": [{"partition_index": 1, "acknowledgement_batches": _ACKS}]}],
    },
    (79, "response"): {
        "throttle_time_ms": 4, "error_code": 0, "error_message": None, "acquisition_lock_timeout_ms": 15000,
        "responses": [{"topic_id": TOPIC, "partitions": [{
            "partition_index": 1, "error_code": 0, "error_message": None, "current_leader": _LEADER}]}],
        "node_endpoints": _NODES,
    },
    (90, "request"): {"groups": [
        {"group_id": "queue", "topics": [{"topic_name": "jobs", "partitions": [0, 1]}]},
        {"group_id": "other", "topics": None},
    ]},
    (90, "response"): {
        "throttle_time_ms": 0,
        "groups": [{
            "group_id": "queue",
            "topics": [{"topic_name": "jobs", "topic_id": TOPIC, "partitions": [{
                "partition_index": 0, "start_offset": 1200, "leader_epoch": 3, "lag": 42, "error_code": 0,
                "error_message": None}]}],
            "error_code": 0, "error_message": "group ok",
        }],
    },
    (91, "request"): {"group_id": "queue", "topics": [
        {"topic_name": "jobs", "partitions": [{"partition_index": 0, "start_offset": 1000},
                                              {"partition_index": 1, "start_offset": -1}]}]},
    (91, "response"): {
        "throttle_time_ms": 0, "error_code": 0, "error_message": None,
        "responses": [{"topic_name": "jobs", "topic_id": TOPIC, "partitions": [
            {"partition_index": 0, "error_code": 0, "error_message": None},
            {"partition_index": 1, "error_code": 68, "error_message": "Group not empty"}]}],
    },
    (92, "request"): {"group_id": "queue", "topics": [{"topic_name": "jobs"}, {"topic_name": "old"}]},
    (92, "response"): {
        "throttle_time_ms": 0, "error_code": 0, "error_message": None,
        "responses": [{"topic_name": "jobs", "topic_id": TOPIC, "error_code": 0, "error_message": None},
                      {"topic_name": "old", "topic_id": bytes(16), "error_code": 3, "error_message": "gone"}]},
}

ROUND_TRIPS = [
    (key, version, kind)
    for key, (_, (lo, hi)) in sorted(KAFKA_44.items())
    for version in range(lo, hi + 1)
    for kind in ("request", "response")
]


def _kafka_name(key: int, kind: str) -> str:
    return f"{KAFKA_44[key][0]}{kind.capitalize()}"


@pytest.mark.parametrize("case", ROUND_TRIPS, ids=lambda c: f"{KAFKA_44[c[0]][0]}-v{c[1]}-{c[2]}")
def test_a_fully_populated_body_round_trips_through_frames_as_kafka_python_encodes_it(case: tuple[int, int, str]) -> None:
    key, version, kind = case
    body = BODIES[(key, kind)]
    # The fields Kafka's JSON puts at this version (not Mafka's schema: a field Mafka
    # left out would be missing from the decoded body).
    fields = kp.json_fields(_kafka_name(key, kind))
    expected = plain(body, fields, version)
    spec = API_SPECS[key]
    if kind == "request":
        frame = encode_request(key, version, 77, "client-1", body)
        request = decode_request(frame[4:])
        assert (request.header.api_key, request.header.api_version, request.header.header_version) == (key, version, 2)
        decoded = request.body
        message = spec.request
    else:
        frame = encode_response(RequestHeader(key, version, 77, "client-1"), body)
        correlation_id, decoded = decode_response(key, version, frame[4:])
        assert correlation_id == 77
        message = spec.response
    assert plain(decoded, fields, version) == expected
    assert encode_body(message, version, body) == kp.encode(_kafka_name(key, kind), version, body)


def test_fields_absent_at_the_older_version_parse_as_kafkas_defaults() -> None:
    describe = API_SPECS[69].response
    member = decode_body(describe, 0, encode_body(describe, 0, BODIES[(69, "response")])).groups[0].members[0]
    assert member.member_type == -1  # "default": "-1" (KIP-1099, v1+)
    offsets = API_SPECS[90].response
    partition = decode_body(offsets, 0, encode_body(offsets, 0, BODIES[(90, "response")])).groups[0].topics[0].partitions[0]
    assert partition.lag == -1  # "default": -1 (KIP-1226, v1+)
    fetch = API_SPECS[78].request
    v1 = decode_body(fetch, 1, encode_body(fetch, 1, BODIES[(78, "request")]))
    assert (v1.share_acquire_mode, v1.is_renew_ack, v1.max_records) == (0, False, 500)


# -- golden bytes, worked out by hand from the JSON schemas ------------------------------------------
# Flexible encoding: compact strings/arrays carry length + 1 as an unsigned varint (0 = null),
# every struct ends with its tagged-field section (0x00 when empty), uuids are 16 raw bytes.

TOPIC_HEX = TOPIC.hex()

HEARTBEAT_REQUEST = {
    "group_id": "g", "member_id": "m1", "member_epoch": 5, "instance_id": None, "rack_id": "r",
    "rebalance_timeout_ms": 30000, "subscribed_topic_names": ["t"], "subscribed_topic_regex": None,
    "server_assignor": "uniform", "topic_partitions": [{"topic_id": TOPIC, "partitions": [0, 2]}],
}


def _heartbeat_request_hex(version: int) -> str:
    return (
        "02" "67"                        # GroupId "g"
        "03" "6d31"                      # MemberId "m1"
        "00000005"                       # MemberEpoch int32
        "00"                             # InstanceId: null
        "02" "72"                        # RackId "r"
        "00007530"                       # RebalanceTimeoutMs 30000
        "02" "02" "74"                   # SubscribedTopicNames ["t"]
        + ("00" if version >= 1 else "") +  # SubscribedTopicRegex (v1+): null
        "08" + b"uniform".hex() +        # ServerAssignor
        "02" + TOPIC_HEX +               # TopicPartitions: one, TopicId
        "03" "00000000" "00000002"       #   Partitions [0, 2]
        "00"                             #   its tagged fields
        "00"                             # the request's tagged fields
    )  # fmt: skip


@pytest.mark.parametrize("version", [0, 1])
def test_consumer_group_heartbeat_request_golden(version: int) -> None:
    expected = bytes.fromhex(_heartbeat_request_hex(version))
    message = API_SPECS[68].request
    assert encode_body(message, version, HEARTBEAT_REQUEST) == expected
    decoded = decode_body(message, version, expected)
    assert decoded.subscribed_topic_names == ["t"] and decoded.instance_id is None
    assert decoded.topic_partitions[0].topic_id == TOPIC and decoded.topic_partitions[0].partitions == [0, 2]
    # A null subscription (unchanged since the last heartbeat) is a compact null array.
    unchanged = dict(HEARTBEAT_REQUEST, subscribed_topic_names=None, topic_partitions=None)
    assert decode_body(message, version, encode_body(message, version, unchanged)).subscribed_topic_names is None


HEARTBEAT_RESPONSE = {
    "throttle_time_ms": 0, "error_code": 0, "error_message": None, "member_id": "m1", "member_epoch": 6,
    "heartbeat_interval_ms": 5000, "assignment": {"topic_partitions": [{"topic_id": TOPIC, "partitions": [1]}]},
}
_HEARTBEAT_RESPONSE_HEAD = (
    "00000000"      # ThrottleTimeMs
    "0000"          # ErrorCode
    "00"            # ErrorMessage: null
    "03" "6d31"     # MemberId "m1" (nullable, present)
    "00000006"      # MemberEpoch
    "00001388"      # HeartbeatIntervalMs 5000
)  # fmt: skip


@pytest.mark.parametrize("version", [0, 1])
def test_consumer_group_heartbeat_response_golden_with_and_without_an_assignment(version: int) -> None:
    message = API_SPECS[68].response
    present = bytes.fromhex(
        _HEARTBEAT_RESPONSE_HEAD +
        "01"                             # Assignment: nullable struct (KIP-893), 1 = present
        "02" + TOPIC_HEX +               #   TopicPartitions: one, TopicId
        "02" "00000001"                  #     Partitions [1]
        "00"                             #     its tagged fields
        "00"                             #   the assignment's tagged fields
        "00"                             # the response's tagged fields
    )  # fmt: skip
    assert encode_body(message, version, HEARTBEAT_RESPONSE) == present
    assert decode_body(message, version, present).assignment.topic_partitions[0].partitions == [1]
    null = bytes.fromhex(_HEARTBEAT_RESPONSE_HEAD + "ff" "00")  # -1 = null, and nothing of the struct
    assert encode_body(message, version, dict(HEARTBEAT_RESPONSE, assignment=None)) == null
    assert decode_body(message, version, null).assignment is None
    assert kp.decode("ConsumerGroupHeartbeatResponse", version, null).assignment is None


def test_the_assignment_marker_reads_as_kafka_reads_it() -> None:
    # Kafka's generated read: a negative byte is null, any other byte a struct that follows.
    message = API_SPECS[68].response
    empty_assignment = "01" "00" "00"  # no topic-partitions, the assignment's tags, the response's tags
    for marker in ("00", "01", "7f"):
        decoded = decode_body(message, 1, bytes.fromhex(_HEARTBEAT_RESPONSE_HEAD + marker + empty_assignment))
        assert decoded.assignment is not None and decoded.assignment.topic_partitions == []
    for marker in ("ff", "80"):
        assert decode_body(message, 1, bytes.fromhex(_HEARTBEAT_RESPONSE_HEAD + marker + "00")).assignment is None
    with pytest.raises(ProtocolError, match="assignment"):
        decode_body(message, 1, bytes.fromhex(_HEARTBEAT_RESPONSE_HEAD))  # the marker is missing


SHARE_FETCH_REQUEST = {
    "group_id": "g", "member_id": "m", "share_session_epoch": 1, "max_wait_ms": 500, "min_bytes": 1,
    "max_bytes": 1048576, "max_records": 500, "batch_size": 400, "share_acquire_mode": 1, "is_renew_ack": True,
    "topics": [{"topic_id": TOPIC, "partitions": [{"partition_index": 0, "acknowledgement_batches": [
        {"first_offset": 10, "last_offset": 11, "acknowledge_types": [1, 4]}]}]}],
    "forgotten_topics_data": [{"topic_id": OTHER_TOPIC, "partitions": [3]}],
}


@pytest.mark.parametrize("version", [1, 2])
def test_share_fetch_request_golden(version: int) -> None:
    expected = bytes.fromhex(
        "02" "67"                        # GroupId "g" (nullable)
        "02" "6d"                        # MemberId "m" (nullable)
        "00000001"                       # ShareSessionEpoch
        "000001f4"                       # MaxWaitMs 500
        "00000001"                       # MinBytes
        "00100000"                       # MaxBytes 1 MiB
        "000001f4"                       # MaxRecords 500 (v1+)
        "00000190"                       # BatchSize 400 (v1+)
        + ("01" "01" if version >= 2 else "") +  # ShareAcquireMode int8, IsRenewAck bool (v2+)
        "02" + TOPIC_HEX +               # Topics: one, TopicId
        "02" "00000000"                  #   Partitions: one, PartitionIndex 0 (PartitionMaxBytes is v0 only)
        "02"                             #     AcknowledgementBatches: one
        "000000000000000a"               #       FirstOffset 10
        "000000000000000b"               #       LastOffset 11
        "03" "01" "04"                   #       AcknowledgeTypes [Accept, Renew]
        "00"                             #       the batch's tagged fields
        "00"                             #     the partition's
        "00"                             #   the topic's
        "02" + OTHER_TOPIC.hex() +       # ForgottenTopicsData: one, TopicId
        "02" "00000003"                  #   Partitions [3]
        "00"                             #   its tagged fields
        "00"                             # the request's tagged fields
    )  # fmt: skip
    message = API_SPECS[78].request
    assert encode_body(message, version, SHARE_FETCH_REQUEST) == expected
    decoded = decode_body(message, version, expected)
    assert decoded.topics[0].partitions[0].acknowledgement_batches[0].acknowledge_types == [1, 4]
    assert decoded.forgotten_topics_data[0].topic_id == OTHER_TOPIC


SHARE_FETCH_RESPONSE = {
    "throttle_time_ms": 0, "error_code": 0, "error_message": None, "acquisition_lock_timeout_ms": 30000,
    "responses": [{"topic_id": TOPIC, "partitions": [{
        "partition_index": 0, "error_code": 0, "error_message": None, "acknowledge_error_code": 0,
        "acknowledge_error_message": None, "current_leader": {"leader_id": 1, "leader_epoch": 7},
        "records": b"RECS", "acquired_records": [{"first_offset": 10, "last_offset": 11, "delivery_count": 1}],
    }]}],
    "node_endpoints": [{"node_id": 1, "host": "h", "port": 9092, "rack": None}],
}


@pytest.mark.parametrize("version", [1, 2])
def test_share_fetch_response_golden(version: int) -> None:
    expected = bytes.fromhex(
        "00000000"                       # ThrottleTimeMs
        "0000"                           # ErrorCode
        "00"                             # ErrorMessage: null
        "00007530"                       # AcquisitionLockTimeoutMs 30000 (v1+)
        "02" + TOPIC_HEX +               # Responses: one, TopicId
        "02" "00000000"                  #   Partitions: one, PartitionIndex 0
        "0000" "00"                      #     ErrorCode, ErrorMessage null
        "0000" "00"                      #     AcknowledgeErrorCode, AcknowledgeErrorMessage null
        "00000001" "00000007" "00"       #     CurrentLeader: LeaderId 1, LeaderEpoch 7, its tags
        "05" "52454353"                  #     Records: compact, 4 bytes "RECS"
        "02"                             #     AcquiredRecords: one
        "000000000000000a"               #       FirstOffset 10
        "000000000000000b"               #       LastOffset 11
        "0001"                           #       DeliveryCount int16
        "00"                             #       its tags
        "00"                             #     the partition's tags
        "00"                             #   the topic's tags
        "02" "00000001" "02" "68"        # NodeEndpoints: one, NodeId 1, Host "h"
        "00002384" "00" "00"             #   Port 9092, Rack null, its tags
        "00"                             # the response's tagged fields
    )  # fmt: skip
    message = API_SPECS[78].response
    assert encode_body(message, version, SHARE_FETCH_RESPONSE) == expected
    partition = decode_body(message, version, expected).responses[0].partitions[0]
    assert bytes(partition.records) == b"RECS" and partition.current_leader.leader_epoch == 7


SHARE_ACK_REQUEST = {
    "group_id": "g", "member_id": "m", "share_session_epoch": 2, "is_renew_ack": False,
    "topics": [{"topic_id": TOPIC, "partitions": [{"partition_index": 4, "acknowledgement_batches": [
        {"first_offset": 20, "last_offset": 22, "acknowledge_types": [1, 0, 3]}]}]}],
}


@pytest.mark.parametrize("version", [1, 2])
def test_share_acknowledge_request_golden(version: int) -> None:
    expected = bytes.fromhex(
        "02" "67" "02" "6d"              # GroupId "g", MemberId "m"
        "00000002"                       # ShareSessionEpoch
        + ("00" if version >= 2 else "") +  # IsRenewAck (v2+): false
        "02" + TOPIC_HEX +               # Topics: one, TopicId
        "02" "00000004"                  #   Partitions: one, PartitionIndex 4
        "02"                             #     AcknowledgementBatches: one
        "0000000000000014"               #       FirstOffset 20
        "0000000000000016"               #       LastOffset 22
        "04" "01" "00" "03"              #       AcknowledgeTypes [Accept, Gap, Reject]
        "00" "00" "00"                   #       the batch's, partition's and topic's tags
        "00"                             # the request's tagged fields
    )  # fmt: skip
    message = API_SPECS[79].request
    assert encode_body(message, version, SHARE_ACK_REQUEST) == expected
    assert decode_body(message, version, expected).topics[0].partitions[0].acknowledgement_batches[0].last_offset == 22


SHARE_ACK_RESPONSE = {
    "throttle_time_ms": 0, "error_code": 0, "error_message": None, "acquisition_lock_timeout_ms": 15000,
    "responses": [{"topic_id": TOPIC, "partitions": [{
        "partition_index": 4, "error_code": 6, "error_message": "x", "current_leader": {"leader_id": 2, "leader_epoch": 9}}]}],
    "node_endpoints": [],
}


@pytest.mark.parametrize("version", [1, 2])
def test_share_acknowledge_response_golden(version: int) -> None:
    expected = bytes.fromhex(
        "00000000" "0000" "00"           # ThrottleTimeMs, ErrorCode, ErrorMessage null
        + ("00003a98" if version >= 2 else "") +  # AcquisitionLockTimeoutMs 15000 (v2+)
        "02" + TOPIC_HEX +               # Responses: one, TopicId
        "02" "00000004"                  #   Partitions: one, PartitionIndex 4
        "0006" "02" "78"                 #     ErrorCode 6 (NOT_LEADER_OR_FOLLOWER), ErrorMessage "x"
        "00000002" "00000009" "00"       #     CurrentLeader: LeaderId 2, LeaderEpoch 9, its tags
        "00" "00"                        #     the partition's tags, the topic's tags
        "01"                             # NodeEndpoints: empty
        "00"                             # the response's tagged fields
    )  # fmt: skip
    message = API_SPECS[79].response
    assert encode_body(message, version, SHARE_ACK_RESPONSE) == expected
    decoded = decode_body(message, version, expected)
    assert decoded.acquisition_lock_timeout_ms == (15000 if version >= 2 else 0)
