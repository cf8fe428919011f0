"""DescribeClientQuotas (48) and AlterClientQuotas (49), v0–1 as Kafka 2.8 (v1 flexible).

test_conformance.py checks every version against kafka-python with random
values; these pin round trips of realistic bodies, the null entity names
(default entities) and null ``entries`` (a failed describe), and one golden
encoding per API worked out by hand from Kafka's JSON schemas.
"""

from __future__ import annotations

import pytest

from mafka.wire.codec import decode_body, decode_request, encode_body, encode_request
from mafka.wire.registry import API_SPECS, api_versions_entries

from . import reference_codec as kp

DESCRIBE, ALTER = 48, 49


def test_both_apis_are_decoded_and_announced_only_at_kafka_28s_versions() -> None:
    # Announced once the broker serves them (the specs say so); then exactly as Kafka 2.8.
    advertised = {e["api_key"]: (e["min_version"], e["max_version"]) for e in api_versions_entries()}
    for key in (DESCRIBE, ALTER):
        spec = API_SPECS[key]
        assert advertised.get(key, (0, 1)) == (0, 1) and spec.advertised in (None, (0, 1))
        assert spec.decode == (0, 1)
        assert not spec.request.is_flexible(0) and spec.request.is_flexible(1)
        assert spec.request_header_version(1) == 2 and spec.response_header_version(1) == 1


DESCRIBE_REQUEST = {
    "components": [
        {"entity_type": "user", "match_type": 0, "match": "alice"},
        {"entity_type": "client-id", "match_type": 1, "match": None},
    ],
    "strict": True,
}
DESCRIBE_RESPONSE = {
    "throttle_time_ms": 7,
    "error_code": 0,
    "error_message": None,
    "entries": [
        {
            "entity": [{"entity_type": "user", "entity_name": "alice"},
                       {"entity_type": "client-id", "entity_name": None}],
            "values": [{"key": "producer_byte_rate", "value": 1024.0},
                       {"key": "request_percentage", "value": 12.5}],
        }
    ],
}
ALTER_REQUEST = {
    "entries": [
        {
            "entity": [{"entity_type": "user", "entity_name": None}],
            "ops": [{"key": "consumer_byte_rate", "value": 2048.0, "remove": False},
                    {"key": "producer_byte_rate", "value": 0.0, "remove": True}],
        }
    ],
    "validate_only": False,
}
ALTER_RESPONSE = {
    "throttle_time_ms": 0,
    "entries": [
        {"error_code": 42, "error_message": "Empty user not supported",
         "entity": [{"entity_type": "user", "entity_name": ""}]},
        {"error_code": 0, "error_message": None,
         "entity": [{"entity_type": "client-id", "entity_name": "app"},
                    {"entity_type": "user", "entity_name": None}]},
    ],
}


def _plain(value: object) -> object:
    """A decoded body as plain dicts and lists (tagged fields dropped)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k not in ("tagged_fields", "_io")}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


@pytest.mark.parametrize("version", [0, 1])
@pytest.mark.parametrize(
    ("key", "name", "kind", "body"),
    [
        (DESCRIBE, "DescribeClientQuotasRequest", "request", DESCRIBE_REQUEST),
        (DESCRIBE, "DescribeClientQuotasResponse", "response", DESCRIBE_RESPONSE),
        (ALTER, "AlterClientQuotasRequest", "request", ALTER_REQUEST),
        (ALTER, "AlterClientQuotasResponse", "response", ALTER_RESPONSE),
    ],
)
def test_round_trips_agree_with_kafka_python(key: int, name: str, kind: str, body: dict[str, object],
                                              version: int) -> None:
    spec = API_SPECS[key]
    message = spec.request if kind == "request" else spec.response
    encoded = encode_body(message, version, body)
    assert encoded == kp.encode(name, version, body)
    assert _plain(decode_body(message, version, encoded)) == body


def test_a_failed_describe_has_null_entries() -> None:
    spec = API_SPECS[DESCRIBE]
    body = {"throttle_time_ms": 0, "error_code": 35, "error_message": "Custom entity type 'x' not supported",
            "entries": None}
    for version in (0, 1):
        decoded = decode_body(spec.response, version, encode_body(spec.response, version, body))
        assert decoded.entries is None and decoded.error_code == 35


def test_describe_request_golden_bytes() -> None:
    """DescribeClientQuotasRequest, from its JSON schema, for ``user`` EXACT ``alice``, strict.

    v0: Components []ComponentData → int32 count; EntityType string → int16
    length + UTF-8; MatchType int8; Match nullable string → int16 length;
    Strict bool → one byte.  v1 (flexible): compact array (count + 1 as an
    unsigned varint), compact strings (length + 1), and an empty tagged-field
    section (0x00) after each struct and after the message.
    """
    body = {"components": [{"entity_type": "user", "match_type": 0, "match": "alice"}], "strict": True}
    spec = API_SPECS[DESCRIBE]
    v0 = bytes.fromhex(
        "00000001"  # one component
        "0004" "75736572"  # "user"
        "00"  # EXACT
        "0005" "616c696365"  # "alice"
        "01"  # strict
    )
    v1 = bytes.fromhex(
        "02"  # one component (1 + 1)
        "05" "75736572"  # "user" (4 + 1)
        "00"  # EXACT
        "06" "616c696365"  # "alice" (5 + 1)
        "00"  # component's tagged fields
        "01"  # strict
        "00"  # request's tagged fields
    )
    assert encode_body(spec.request, 0, body) == v0
    assert encode_body(spec.request, 1, body) == v1
    # A default match is a null string: int16 -1 in v0, varint 0 in v1.
    default = {"components": [{"entity_type": "user", "match_type": 1, "match": None}], "strict": False}
    assert encode_body(spec.request, 0, default) == bytes.fromhex("00000001 0004 75736572 01 ffff 00")
    assert encode_body(spec.request, 1, default) == bytes.fromhex("02 05 75736572 01 00 00 00 00")


def test_alter_response_golden_bytes() -> None:
    """AlterClientQuotasResponse v1: ThrottleTimeMs int32, Entries compact array of
    (ErrorCode int16, ErrorMessage compact nullable string, Entity compact array of
    (EntityType compact string, EntityName compact nullable string, tags), tags), tags."""
    body = {"throttle_time_ms": 100,
            "entries": [{"error_code": 0, "error_message": None,
                         "entity": [{"entity_type": "client-id", "entity_name": None}]}]}
    expected = bytes.fromhex(
        "00000064"  # throttle 100
        "02"  # one entry
        "0000"  # NONE
        "00"  # null message
        "02"  # one entity part
        "0a" "636c69656e742d6964"  # "client-id" (9 + 1)
        "00"  # null name: the default
        "00"  # entity part's tags
        "00"  # entry's tags
        "00"  # response's tags
    )
    assert encode_body(API_SPECS[ALTER].response, 1, body) == expected


def test_a_flexible_alter_request_frame_uses_header_v2() -> None:
    frame = encode_request(ALTER, 1, 9, "adminclient-1", ALTER_REQUEST)
    request = decode_request(frame[4:])
    assert request.header.header_version == 2 and request.header.client_id == "adminclient-1"
    entry = request.body.entries[0]
    assert entry.entity[0].entity_name is None
    assert [(op.key, op.value, op.remove) for op in entry.ops] == [
        ("consumer_byte_rate", 2048.0, False), ("producer_byte_rate", 0.0, True)]
