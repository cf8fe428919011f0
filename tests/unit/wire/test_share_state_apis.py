"""KIP-932's inter-broker share-group state APIs at Kafka 4.4's versions, decoded but never advertised.

InitializeShareGroupState (83), ReadShareGroupState (84), WriteShareGroupState
(85), DeleteShareGroupState (86) and ReadShareGroupStateSummary (87): what
brokers send the share coordinator.  test_conformance.py checks every version
against kafka-python (reading Kafka 4.4's JSON in ``kafka_schemas/``) with
random values; these pin what random values may miss:

* none of them is in the ApiVersions answer, while each decodes exactly the
  versions Kafka 4.4's schema defines, flexible throughout;
* a fully populated request and response round-trips through whole frames at
  every version, and encodes as kafka-python encodes it;
* golden bytes worked out by hand from the JSON schemas for WriteShareGroupState
  (v0 and v1: KIP-1226's DeliveryCompleteCount) and ReadShareGroupState's
  response, and Kafka's default (-1) where v0 lacks DeliveryCompleteCount.
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
from mafka.wire.errors import UnsupportedVersion
from mafka.wire.header import RequestHeader
from mafka.wire.registry import API_SPECS, api_versions_entries

from . import reference_codec as kp
from .strategies import plain

#: api key → (name, the versions Kafka 4.4's schema defines).
KAFKA_44 = {
    83: ("InitializeShareGroupState", (0, 0)),
    84: ("ReadShareGroupState", (0, 0)),
    85: ("WriteShareGroupState", (0, 1)),
    86: ("DeleteShareGroupState", (0, 0)),
    87: ("ReadShareGroupStateSummary", (0, 1)),
}

TOPIC = bytes(range(1, 17))
OTHER_TOPIC = bytes(range(0xA1, 0xB1))


def test_none_is_advertised_by_the_registry_or_the_api_versions_handler() -> None:
    assert not {e["api_key"] for e in api_versions_entries()} & set(KAFKA_44)
    answer = api_versions_handler.handlers(None)[18]
    for protocol in ("PLAINTEXT", "SASL_SSL"):
        connection = type("Connection", (), {"security_protocol": protocol})()
        assert not {e["api_key"] for e in answer(None, connection)["api_keys"]} & set(KAFKA_44)
    for key in KAFKA_44:
        assert API_SPECS[key].advertised is None


@pytest.mark.parametrize("key", sorted(KAFKA_44))
def test_each_decodes_kafka_44s_versions_flexible_throughout(key: int) -> None:
    name, (lo, hi) = KAFKA_44[key]
    spec = API_SPECS[key]
    assert spec.name == name and spec.decode == (lo, hi)
    for version in range(lo, hi + 1):
        assert spec.request.is_flexible(version) and spec.response.is_flexible(version)
        assert spec.request_header_version(version) == 2 and spec.response_header_version(version) == 1
    with pytest.raises(UnsupportedVersion):
        decode_request(struct.pack(">hhih", key, hi + 1, 1, -1) + b"\x00" * 32)


# -- fully populated bodies -------------------------------------------------------------------------

_BATCHES = [{"first_offset": 100, "last_offset": 104, "delivery_state": 2, "delivery_count": 1},
            {"first_offset": 105, "last_offset": 105, "delivery_state": 4, "delivery_count": 5}]

BODIES: dict[tuple[int, str], dict[str, Any]] = {
    (83, "request"): {"group_id": "queue", "topics": [
        {"topic_id": TOPIC, "partitions": [{"partition": 0, "state_epoch": 3, "start_offset": -1},
                                           {"partition": 2, "state_epoch": 3, "start_offset": 1200}]}]},
    (83, "response"): {"results": [{"topic_id": TOPIC, "partitions": [
        {"partition": 0, "error_code": 0, "error_message": None},
        {"partition": 2, "error_code": 124, "error_message": "fenced"}]}]},
    (84, "request"): {"group_id": "queue", "topics": [
        {"topic_id": TOPIC, "partitions": [{"partition": 1, "leader_epoch": 7}]},
        {"topic_id": OTHER_TOPIC, "partitions": [{"partition": 0, "leader_epoch": 0}]}]},
    (84, "response"): {"results": [{"topic_id": TOPIC, "partitions": [
        {"partition": 1, "error_code": 0, "error_message": None, "state_epoch": 3, "start_offset": 100,
         "state_batches": _BATCHES}]}]},
    (85, "request"): {"group_id": "queue", "topics": [{"topic_id": TOPIC, "partitions": [
        {"partition": 1, "state_epoch": 3, "leader_epoch": 7, "start_offset": 100, "delivery_complete_count": 6,
         "state_batches": _BATCHES}]}]},
    (85, "response"): {"results": [{"topic_id": TOPIC, "partitions": [
        {"partition": 1, "error_code": 74, "error_message": "fenced leader"}]}]},
    (86, "request"): {"group_id": "queue", "topics": [{"topic_id": TOPIC, "partitions": [{"partition": 0},
                                                                                         {"partition": 5}]}]},
    (86, "response"): {"results": [{"topic_id": TOPIC, "partitions": [
        {"partition": 0, "error_code": 0, "error_message": None}, {"partition": 5, "error_code": 3,
                                                                   "error_message": "unknown"}]}]},
    (87, "request"): {"group_id": "queue", "topics": [{"topic_id": OTHER_TOPIC, "partitions": [
        {"partition": 3, "leader_epoch": 2}]}]},
    (87, "response"): {"results": [{"topic_id": OTHER_TOPIC, "partitions": [
        {"partition": 3, "error_code": 0, "error_message": "ok", "state_epoch": 3, "leader_epoch": 2,
         "start_offset": 4000, "delivery_complete_count": 17}]}]},
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
    fields = kp.json_fields(_kafka_name(key, kind))
    expected = plain(body, fields, version)
    spec = API_SPECS[key]
    if kind == "request":
        frame = encode_request(key, version, 77, "broker-1-share-persister", body)
        request = decode_request(frame[4:])
        assert (request.header.api_key, request.header.api_version, request.header.header_version) == (key, version, 2)
        decoded = request.body
        message = spec.request
    else:
        frame = encode_response(RequestHeader(key, version, 77, "broker-1-share-persister"), body)
        correlation_id, decoded = decode_response(key, version, frame[4:])
        assert correlation_id == 77
        message = spec.response
    assert plain(decoded, fields, version) == expected
    assert encode_body(message, version, body) == kp.encode(_kafka_name(key, kind), version, body)


# -- golden bytes, worked out by hand from the JSON schemas ------------------------------------------
# Flexible encoding: compact strings/arrays carry length + 1 as an unsigned varint (0 = null),
# every struct ends with its tagged-field section (0x00 when empty), uuids are 16 raw bytes.

WRITE_REQUEST = {"group_id": "g", "topics": [{"topic_id": TOPIC, "partitions": [{
    "partition": 2, "state_epoch": 1, "leader_epoch": 4, "start_offset": 10, "delivery_complete_count": 3,
    "state_batches": [{"first_offset": 10, "last_offset": 12, "delivery_state": 2, "delivery_count": 1}]}]}]}


@pytest.mark.parametrize("version", [0, 1])
def test_write_share_group_state_request_golden(version: int) -> None:
    expected = bytes.fromhex(
        "02" "67"                        # GroupId "g"
        "02" + TOPIC.hex() +             # Topics: one, TopicId
        "02"                             #   Partitions: one
        "00000002"                       #     Partition 2
        "00000001"                       #     StateEpoch 1
        "00000004"                       #     LeaderEpoch 4
        "000000000000000a"               #     StartOffset 10
        + ("00000003" if version >= 1 else "") +  # DeliveryCompleteCount (v1+)
        "02"                             #     StateBatches: one
        "000000000000000a"               #       FirstOffset 10
        "000000000000000c"               #       LastOffset 12
        "02"                             #       DeliveryState int8: Acknowledged
        "0001"                           #       DeliveryCount int16
        "00"                             #       the batch's tagged fields
        "00"                             #     the partition's
        "00"                             #   the topic's
        "00"                             # the request's tagged fields
    )  # fmt: skip
    message = API_SPECS[85].request
    assert encode_body(message, version, WRITE_REQUEST) == expected
    decoded = decode_body(message, version, expected)
    partition = decoded.topics[0].partitions[0]
    assert (partition.partition, partition.leader_epoch, partition.start_offset) == (2, 4, 10)
    assert partition.delivery_complete_count == (3 if version >= 1 else -1)  # Kafka's default where absent
    assert partition.state_batches[0].delivery_state == 2


def test_read_share_group_state_response_golden() -> None:
    body = {"results": [{"topic_id": TOPIC, "partitions": [{
        "partition": 0, "error_code": 0, "error_message": None, "state_epoch": 2, "start_offset": -1,
        "state_batches": []}]}]}
    expected = bytes.fromhex(
        "02" + TOPIC.hex() +             # Results: one, TopicId
        "02"                             #   Partitions: one
        "00000000"                       #     Partition 0
        "0000"                           #     ErrorCode
        "00"                             #     ErrorMessage: null
        "00000002"                       #     StateEpoch 2
        "ffffffffffffffff"               #     StartOffset -1 (not initialized)
        "01"                             #     StateBatches: empty
        "00"                             #     the partition's tagged fields
        "00"                             #   the result's
        "00"                             # the response's
    )  # fmt: skip
    message = API_SPECS[84].response
    assert encode_body(message, 0, body) == expected
    assert kp.decode("ReadShareGroupStateResponse", 0, expected).results[0].partitions[0].start_offset == -1


def test_summary_v0_has_no_delivery_complete_count() -> None:
    message = API_SPECS[87].response
    v0 = decode_body(message, 0, encode_body(message, 0, BODIES[(87, "response")]))
    assert v0.results[0].partitions[0].delivery_complete_count == -1
    v1 = decode_body(message, 1, encode_body(message, 1, BODIES[(87, "response")]))
    assert v1.results[0].partitions[0].delivery_complete_count == 17
