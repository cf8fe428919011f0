"""DescribeAcls (29), CreateAcls (30), DeleteAcls (31): Kafka 2.8's v0–2.

The generic conformance suite checks every version against kafka-python with
random values; these pin the layouts by hand (golden bytes written from the
JSON schemas), round-trip each version, and check v0's implied LITERAL.
"""

from __future__ import annotations

from typing import Any

import pytest

from mafka.wire.codec import decode_body, decode_request, encode_body, encode_request
from mafka.wire.registry import API_SPECS

from . import reference_codec as kp

DESCRIBE, CREATE, DELETE = 29, 30, 31


def _plain(value: Any) -> Any:
    """A decoded body as plain dicts and lists (tagged fields dropped)."""
    if isinstance(value, dict):
        return {k: _plain(v) for k, v in value.items() if k != "tagged_fields" and not k.startswith("_")}
    if isinstance(value, list):
        return [_plain(v) for v in value]
    return value


def test_specs_are_registered_with_kafkas_ranges() -> None:
    for key, name in ((DESCRIBE, "DescribeAcls"), (CREATE, "CreateAcls"), (DELETE, "DeleteAcls")):
        spec = API_SPECS[key]
        assert spec.name == name
        assert spec.advertised == (0, 2) and spec.decode == (0, 2)
        assert [spec.request.is_flexible(v) for v in (0, 1, 2)] == [False, False, True]
        assert [spec.request_header_version(v) for v in (0, 1, 2)] == [1, 1, 2]
        assert [spec.response_header_version(v) for v in (0, 1, 2)] == [0, 0, 1]


# -- golden bytes ---------------------------------------------------------------------------------

DESCRIBE_FILTER = {
    "resource_type_filter": 2,
    "resource_name_filter": "foo",
    "pattern_type_filter": 4,
    "principal_filter": "User:alice",
    "host_filter": None,
    "operation": 3,
    "permission_type": 3,
}


def test_describe_acls_v1_request_golden() -> None:
    expected = bytes.fromhex(
        "02"                      # ResourceTypeFilter int8: TOPIC
        "0003" "666f6f"           # ResourceNameFilter nullable string "foo"
        "04"                      # PatternTypeFilter int8 (v1+): PREFIXED
        "000a" + b"User:alice".hex() +  # PrincipalFilter
        "ffff"                    # HostFilter: null
        "03"                      # Operation: READ
        "03"                      # PermissionType: ALLOW
    )  # fmt: skip
    spec = API_SPECS[DESCRIBE]
    assert encode_body(spec.request, 1, DESCRIBE_FILTER) == expected
    assert _plain(decode_body(spec.request, 1, expected)) == DESCRIBE_FILTER


def test_describe_acls_v0_request_golden_has_no_pattern_type_and_reads_as_literal() -> None:
    expected = bytes.fromhex("02" "0003666f6f" "000a" + b"User:alice".hex() + "ffff" "03" "03")
    spec = API_SPECS[DESCRIBE]
    assert encode_body(spec.request, 0, DESCRIBE_FILTER) == expected
    assert decode_body(spec.request, 0, expected).pattern_type_filter == 3


def test_describe_acls_v2_request_golden_is_compact() -> None:
    expected = bytes.fromhex(
        "02"
        "04" "666f6f"               # compact string: length + 1
        "04"
        "0b" + b"User:alice".hex() +
        "00"                        # compact null
        "03" "03"
        "00"                        # no tagged fields
    )  # fmt: skip
    spec = API_SPECS[DESCRIBE]
    assert encode_body(spec.request, 2, DESCRIBE_FILTER) == expected
    assert _plain(decode_body(spec.request, 2, expected)) == DESCRIBE_FILTER


def test_create_acls_v2_request_golden() -> None:
    body = {
        "creations": [
            {
                "resource_type": 2,
                "resource_name": "t",
                "resource_pattern_type": 3,
                "principal": "User:*",
                "host": "*",
                "operation": 2,
                "permission_type": 3,
            }
        ]
    }
    expected = bytes.fromhex(
        "02"                            # compact array of one
        "02" "02" "74"                  # ResourceType TOPIC, ResourceName "t"
        "03"                            # ResourcePatternType LITERAL
        "07" + b"User:*".hex() +        # Principal
        "02" "2a"                       # Host "*"
        "02" "03"                       # Operation ALL, PermissionType ALLOW
        "00"                            # the creation's tagged fields
        "00"                            # the request's
    )  # fmt: skip
    spec = API_SPECS[CREATE]
    assert encode_body(spec.request, 2, body) == expected
    assert _plain(decode_body(spec.request, 2, expected)) == body
    assert kp.encode("CreateAclsRequest", 2, body) == expected


def test_delete_acls_v1_response_golden() -> None:
    body = {
        "throttle_time_ms": 0,
        "filter_results": [
            {
                "error_code": 0,
                "error_message": None,
                "matching_acls": [
                    {
                        "error_code": 0,
                        "error_message": None,
                        "resource_type": 3,
                        "resource_name": "g",
                        "pattern_type": 4,
                        "principal": "User:bob",
                        "host": "10.0.0.1",
                        "operation": 3,
                        "permission_type": 2,
                    }
                ],
            }
        ],
    }
    expected = bytes.fromhex(
        "00000000"                      # ThrottleTimeMs
        "00000001"                      # one filter result
        "0000" "ffff"                   # ErrorCode, ErrorMessage null
        "00000001"                      # one matching ACL
        "0000" "ffff"
        "03" "0001" "67"                # GROUP "g"
        "04"                            # PatternType PREFIXED (v1+)
        "0008" + b"User:bob".hex() +
        "0008" + b"10.0.0.1".hex() +
        "03" "02"                       # READ, DENY
    )  # fmt: skip
    spec = API_SPECS[DELETE]
    assert encode_body(spec.response, 1, body) == expected
    assert _plain(decode_body(spec.response, 1, expected)) == body


# -- round trips of every version -------------------------------------------------------------------

ACL_DESCRIPTION = {"principal": "User:alice", "host": "*", "operation": 3, "permission_type": 3}

BODIES: dict[tuple[int, str], dict[str, Any]] = {
    (DESCRIBE, "request"): {**DESCRIBE_FILTER, "pattern_type_filter": 1},
    (DESCRIBE, "response"): {
        "throttle_time_ms": 5,
        "error_code": 0,
        "error_message": None,
        "resources": [
            {"resource_type": 2, "resource_name": "orders", "pattern_type": 3, "acls": [ACL_DESCRIPTION]},
            {"resource_type": 4, "resource_name": "kafka-cluster", "pattern_type": 3, "acls": []},
        ],
    },
    (CREATE, "request"): {
        "creations": [
            {"resource_type": 3, "resource_name": "grp", "resource_pattern_type": 3,
             "principal": "User:bob", "host": "10.0.0.1", "operation": 3, "permission_type": 3},
            {"resource_type": 4, "resource_name": "kafka-cluster", "resource_pattern_type": 3,
             "principal": "User:admin", "host": "*", "operation": 7, "permission_type": 2},
        ]
    },
    (CREATE, "response"): {
        "throttle_time_ms": 0,
        "results": [
            {"error_code": 0, "error_message": None},
            {"error_code": 42, "error_message": "Invalid empty resource name"},
        ],
    },
    (DELETE, "request"): {
        "filters": [
            {"resource_type_filter": 1, "resource_name_filter": None, "pattern_type_filter": 3,
             "principal_filter": None, "host_filter": None, "operation": 1, "permission_type": 1},
            {"resource_type_filter": 2, "resource_name_filter": "t", "pattern_type_filter": 3,
             "principal_filter": "User:*", "host_filter": "*", "operation": 4, "permission_type": 3},
        ]
    },
    (DELETE, "response"): {
        "throttle_time_ms": 1,
        "filter_results": [
            {"error_code": 0, "error_message": None, "matching_acls": []},
            {"error_code": 0, "error_message": None, "matching_acls": [
                {"error_code": 0, "error_message": None, "resource_type": 2, "resource_name": "t",
                 "pattern_type": 3, "principal": "User:*", "host": "*", "operation": 4, "permission_type": 3},
            ]},
        ],
    },
}  # fmt: skip


@pytest.mark.parametrize("version", [0, 1, 2])
@pytest.mark.parametrize(("key", "kind"), list(BODIES))
def test_round_trip(key: int, kind: str, version: int) -> None:
    spec = API_SPECS[key]
    message = spec.request if kind == "request" else spec.response
    body = BODIES[(key, kind)]
    encoded = encode_body(message, version, body)
    decoded = _plain(decode_body(message, version, encoded))
    if version == 0:
        # v0 carries no pattern type: whatever was asked for decodes as LITERAL (3).
        body = _with_literal(body)
    assert decoded == body
    assert encode_body(message, version, decoded) == encoded
    assert kp.encode(message.name, version, body) == encoded


def _with_literal(value: Any) -> Any:
    """*value* with every pattern type field at LITERAL, as v0 decodes."""
    if isinstance(value, dict):
        return {
            k: (3 if k in ("pattern_type", "pattern_type_filter", "resource_pattern_type") else _with_literal(v))
            for k, v in value.items()
        }
    if isinstance(value, list):
        return [_with_literal(v) for v in value]
    return value


def test_v0_and_v1_differ_only_by_the_pattern_type_byte() -> None:
    spec = API_SPECS[DELETE]
    body = BODIES[(DELETE, "request")]
    v0, v1 = encode_body(spec.request, 0, body), encode_body(spec.request, 1, body)
    assert len(v1) - len(v0) == len(body["filters"])


def test_whole_flexible_request_frame_decodes() -> None:
    frame = encode_request(CREATE, 2, 9, "adminclient-1", BODIES[(CREATE, "request")])
    request = decode_request(frame[4:])
    assert request.header.header_version == 2
    assert request.header.api_key == CREATE and request.header.correlation_id == 9
    assert [c.resource_name for c in request.body.creations] == ["grp", "kafka-cluster"]
