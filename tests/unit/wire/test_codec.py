"""The codec's version rules, headers, ApiVersions behaviour and the registry."""

from __future__ import annotations

import struct

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mafka.wire.codec import (
    decode_body,
    decode_request,
    decode_response,
    encode_body,
    encode_request,
    encode_response,
    unsupported_api_versions_body,
)
from mafka.wire.errors import ProtocolError, UnknownApi, UnsupportedVersion
from mafka.wire.header import RequestHeader
from mafka.wire.registry import API_SPECS, api_versions_entries
from tests.hypothesis_budget import examples

from . import reference_codec as kp
from .strategies import mafka_fields, values

# shared/reference/kafka-protocol.md §2.3: advertised (min, max) per api key.
REFERENCE_TABLE = {
    0: (0, 9), 1: (0, 11), 2: (0, 7), 3: (0, 12), 8: (0, 9), 9: (0, 9), 10: (0, 2), 11: (0, 5),
    12: (0, 3), 13: (0, 4), 14: (0, 3), 15: (0, 5), 16: (0, 5), 17: (0, 1), 18: (0, 4),
    19: (0, 4), 20: (0, 3), 21: (0, 1), 22: (0, 4), 23: (2, 3), 24: (0, 3), 25: (0, 3),
    26: (0, 3), 27: (0, 1), 28: (0, 3), 32: (0, 2), 33: (0, 1), 36: (0, 2), 37: (0, 1),
    42: (0, 1), 44: (0, 1),
    # Admin APIs of issue #5, beyond §2.3: ElectLeaders (v2 flexible) and the
    # flex-only KIP-455 reassignment APIs; no client infers features from them.
    43: (0, 2), 45: (0, 0), 46: (0, 0),
    # Consumer-group APIs of issue #13: OffsetDelete (KIP-496).
    47: (0, 0),
    # Log-dir APIs of issue #13 (KIP-113, KIP-827): v0 (dropped by Kafka 4.0) is sent by
    # none of the clients tested; v1 is the same layout.
    34: (1, 2), 35: (1, 4),
    # Admin APIs of issue #13: ListOffsets v7 (KIP-734), IncrementalAlterConfigs v1, the
    # SCRAM credential APIs (KIP-554), DescribeCluster (KIP-700; v1-v2 because kafka-python's
    # describe_cluster reads the v1 endpoint type), DescribeProducers (KIP-664).
    50: (0, 0), 51: (0, 0), 60: (0, 2), 61: (0, 0),
    # Security APIs of issue #29, at Kafka 2.8's ranges: SaslAuthenticate v2 (flexible) above,
    # DescribeAcls, CreateAcls, DeleteAcls (v1 KIP-290 pattern types, v2 flexible).
    29: (0, 2), 30: (0, 2), 31: (0, 2),
    # Client quota APIs of issue #29 (KIP-546), at Kafka 2.8's ranges (v1 flexible).
    48: (0, 1), 49: (0, 1),
    # Transaction admin APIs of KIP-664 (Kafka 3.0): DescribeTransactions, ListTransactions.
    65: (0, 0), 66: (0, 0),
    # Produce v8 (KIP-467 record errors) and v9 (flexible) are issue #14's.
    # KIP-848 of issue #32: ConsumerGroupHeartbeat and ConsumerGroupDescribe at librdkafka
    # 2.16's versions; OffsetCommit/OffsetFetch v9 (member epochs) and ListGroups v5 (types) above.
    68: (0, 1), 69: (0, 1),
    # KIP-932 of issue #32: ShareGroupHeartbeat, ShareGroupDescribe, ShareFetch and
    # ShareAcknowledge at Kafka 4.4's versions (librdkafka 2.15's share consumer sends v1).
    76: (1, 1), 77: (1, 1), 78: (1, 2), 79: (1, 2),
    # KIP-932's share group offset admin APIs (kafka-share-groups.sh), at Kafka 4.4's versions.
    90: (0, 1), 91: (0, 0), 92: (0, 0),
}  # fmt: skip
# Decode floors above the advertised minimum.  Produce and Fetch decode from v0: old clients'
# magic 0/1 message sets are converted by the broker (mafka.wire.legacy_records).
REFERENCE_DECODE_FLOOR = {8: 2, 9: 1, 19: 2, 20: 1, 32: 1}


def test_advertised_table_matches_the_reference():
    entries = {e["api_key"]: (e["min_version"], e["max_version"]) for e in api_versions_entries()}
    assert entries == REFERENCE_TABLE


def test_decode_ranges_match_the_reference():
    for key, (_, hi) in REFERENCE_TABLE.items():
        spec = API_SPECS[key]
        assert spec.decode == (REFERENCE_DECODE_FLOOR.get(key, REFERENCE_TABLE[key][0]), hi), spec.name
    inter_broker = {4: (2, 5), 5: (1, 1), 6: (5, 7), 7: (2, 2),
                    # KIP-932's share-group state APIs at Kafka 4.4's versions (broker to share coordinator)
                    83: (0, 0), 84: (0, 0), 85: (0, 1), 86: (0, 0), 87: (0, 1)}
    for key, rng in inter_broker.items():
        assert API_SPECS[key].decode == rng
        assert API_SPECS[key].advertised is None


def _api_versions_v3_request() -> bytes:
    return encode_request(18, 3, 1, "rdkafka", {"client_software_name": "librdkafka", "client_software_version": "2.0.2"})


def test_api_versions_v3_response_has_no_default_tags():
    request = decode_request(_api_versions_v3_request()[4:])
    assert request.header.header_version == 2
    reply = encode_response(request.header, {"error_code": 0, "api_keys": [{"api_key": 18, "min_version": 0, "max_version": 4}]})
    # size, correlation id (response header v0 even for v3), error, compact array of one
    # entry with an empty tag section, throttle, empty tag section — nothing else.
    assert reply == struct.pack(">ii", 19, 1) + bytes.fromhex("0000" "02" "0012" "0000" "0004" "00" "00000000" "00")


def test_api_versions_newer_than_supported_gets_v0_error_body():
    frame = struct.pack(">hhih", 18, 9, 77, 3) + b"cli" + b"\x00garbage-after-client-id"
    request = decode_request(frame)
    assert request.body is None
    assert request.header.api_version == 9 and request.header.correlation_id == 77
    reply = encode_response(request.header, unsupported_api_versions_body())
    cid, body = decode_response(18, 0, reply[4:])
    assert cid == 77
    assert body.error_code == 35
    assert [(e.api_key, e.min_version, e.max_version) for e in body.api_keys] == [(18, 0, 4)]
    # kafka-python, which opens at v4 and falls back on this reply, reads it the same way
    theirs = kp.decode("ApiVersionsResponse", 0, reply[8:])
    assert theirs.error_code == 35


def test_unknown_api_key_is_refused():
    with pytest.raises(UnknownApi):
        decode_request(struct.pack(">hhih", 1000, 0, 1, -1))


@pytest.mark.parametrize(("key", "version"), [(0, -1), (0, 10), (1, -1), (1, 12), (2, 8), (3, 13), (23, 1), (4, 1), (6, 8)])
def test_versions_outside_the_decode_range_are_refused(key, version):
    with pytest.raises(UnsupportedVersion):
        decode_request(struct.pack(">hhih", key, version, 1, -1) + b"\x00" * 32)


def test_trailing_bytes_after_a_request_body_are_ignored_as_kafka_does():
    frame = encode_request(12, 0, 5, "c", {"group_id": "g", "generation_id": 1, "member_id": "m"})
    assert decode_request(frame[4:]).body.group_id == "g"
    assert decode_request(frame[4:] + b"\x00").body.group_id == "g"
    # librdkafka 2.16's all-topics Metadata v12 request, as captured: the compact topic array
    # is a 4-byte zero placeholder, read by Kafka (and so by Mafka) as null, then ignored bytes.
    captured = bytes.fromhex("0003000c00000003000772646b61666b610000000000010000")
    body = decode_request(captured).body
    assert body.topics is None and body.allow_auto_topic_creation is False


def test_trailing_bytes_after_a_response_body_are_refused():
    from mafka.wire.codec import decode_response

    frame = encode_response(RequestHeader(12, 0, 5, "c"), {"error_code": 0})
    decode_response(12, 0, frame[4:])
    with pytest.raises(ProtocolError, match="trailing"):
        decode_response(12, 0, frame[4:] + b"\x00")


def test_short_frame_is_refused():
    with pytest.raises(ProtocolError):
        decode_request(b"\x00\x12\x00")


def test_records_come_back_as_zero_copy_views_of_the_frame():
    records = b"r" * 1000
    frame = encode_request(0, 7, 1, "c", {"acks": 1, "timeout_ms": 5, "topic_data": [{"name": "t", "partition_data": [{"index": 3, "records": records}]}]})
    request = decode_request(frame[4:])
    got = request.body.topic_data[0].partition_data[0].records
    assert isinstance(got, memoryview)
    assert got.obj is not None and bytes(got) == records


def test_missing_fields_take_kafka_defaults_when_building():
    header = RequestHeader(0, 7, 9, "c")
    reply = encode_response(header, {"responses": [{"name": "t", "partition_responses": [{"index": 0, "base_offset": 5}]}]})
    _, body = decode_response(0, 7, reply[4:])
    p = body.responses[0].partition_responses[0]
    assert (p.error_code, p.base_offset, p.log_append_time_ms, p.log_start_offset) == (0, 5, -1, -1)
    assert body.throttle_time_ms == 0


def test_absent_fields_parse_to_defaults_for_version_independent_handlers():
    # Fetch v4 has no rack_id, session fields or current_leader_epoch.
    body = decode_body(API_SPECS[1].request, 4, encode_body(API_SPECS[1].request, 4, {"replica_id": -1, "max_wait_ms": 500}))
    assert body.rack_id == ""
    assert body.session_id == 0
    assert body.session_epoch == -1


def test_versions_with_one_layout_share_a_compiled_struct():
    produce = API_SPECS[0].request
    assert produce.struct(3) is produce.struct(7)
    assert API_SPECS[0].response.struct(3) is not API_SPECS[0].response.struct(7)


@settings(max_examples=examples(30), deadline=None)
@given(data=st.data())
def test_tagged_fields_round_trip_raw(data):
    """Unknown tags in flexible versions are kept as bytes and written back in order."""
    message = API_SPECS[18].response
    vals = data.draw(values(mafka_fields(message.fields), 3))
    tags = data.draw(st.dictionaries(st.integers(0, 5000), st.binary(max_size=10), max_size=4))
    vals["tagged_fields"] = tags
    encoded = encode_body(message, 3, vals)
    decoded = decode_body(message, 3, encoded)
    assert decoded.tagged_fields == tags
    assert encode_body(message, 3, decoded) == encoded


def test_out_of_order_tags_are_refused():
    message = API_SPECS[18].request
    body = encode_body(message, 3, {"client_software_name": "a", "client_software_version": "b"})
    bad = body[:-1] + bytes([2, 5, 1, 0x61, 1, 1, 0x62])  # tags 5 then 1
    with pytest.raises(ProtocolError, match="out of order"):
        decode_body(message, 3, bad)


@pytest.mark.parametrize("case", [(s.key, v) for s in API_SPECS.values() for v in range(s.decode[0], s.decode[1] + 1)], ids=str)
@settings(max_examples=examples(10), deadline=None)
@given(data=st.data())
def test_every_structure_round_trips(case, data):
    key, version = case
    for message in (API_SPECS[key].request, API_SPECS[key].response):
        vals = data.draw(values(mafka_fields(message.fields), version))
        encoded = encode_body(message, version, vals)
        decoded = decode_body(message, version, encoded)
        assert encode_body(message, version, decoded) == encoded


@pytest.mark.parametrize("key", sorted(API_SPECS))
@settings(max_examples=examples(10), deadline=None)
@given(data=st.data())
def test_interpreted_structs_agree_with_compiled(key, data):
    from mafka.wire.schema import _struct

    spec = API_SPECS[key]
    version = data.draw(st.integers(*spec.decode))
    for message in (spec.request, spec.response):
        vals = data.draw(values(mafka_fields(message.fields), version))
        compiled = encode_body(message, version, vals)
        interpreted = _struct(message.fields, version, message.is_flexible(version), message.name)
        assert interpreted.build(vals) == compiled
        assert interpreted.build(interpreted.parse(compiled)) == compiled
