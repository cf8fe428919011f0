"""Conformance of every (api, version) Mafka decodes against kafka-python's codec.

Both directions, for requests and responses:

* kafka-python encodes values drawn from *its* JSON schema → Mafka decodes
  them to the same values → Mafka re-encodes the identical bytes;
* Mafka encodes values drawn from *its* schema → kafka-python decodes them to
  the same values → kafka-python re-encodes the identical bytes.

Whole frames (size prefix, request header v1/v2, response header v0/v1) are
checked the same way.
"""

from __future__ import annotations

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from mafka.wire.codec import (
    decode_body,
    decode_request,
    decode_response,
    encode_body,
    encode_request,
    encode_response,
)
from mafka.wire.header import RequestHeader
from mafka.wire.registry import API_SPECS, is_mafka_api
from tests.hypothesis_budget import examples

from . import reference_codec as kp
from .strategies import mafka_fields, plain, values

# Kafka's APIs only: Mafka's own (keys from 10000) have no reference layout to conform to.
CASES = [
    (spec.key, version, kind)
    for spec in API_SPECS.values()
    if not is_mafka_api(spec.key)
    for version in range(spec.decode[0], spec.decode[1] + 1)
    for kind in ("request", "response")
]

SETTINGS = settings(max_examples=examples(20), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def _ids(case):
    key, version, kind = case
    return f"{API_SPECS[key].name}-v{version}-{kind}"


def _message(key, kind):
    spec = API_SPECS[key]
    return spec.request if kind == "request" else spec.response


@pytest.mark.parametrize("case", CASES, ids=_ids)
@SETTINGS
@given(data=st.data())
def test_kafka_python_to_mafka(case, data):
    key, version, kind = case
    message = _message(key, kind)
    fields = kp.json_fields(message.name)
    vals = data.draw(values(fields, version))
    encoded = kp.encode(message.name, version, vals)

    decoded = decode_body(message, version, encoded)

    assert plain(decoded, fields, version) == vals
    assert encode_body(message, version, decoded) == encoded


@pytest.mark.parametrize("case", CASES, ids=_ids)
@SETTINGS
@given(data=st.data())
def test_mafka_to_kafka_python(case, data):
    key, version, kind = case
    message = _message(key, kind)
    fields = mafka_fields(message.fields)
    vals = data.draw(values(fields, version))
    if (key, kind) == (18, "response"):
        # kafka-python reads any ApiVersions error body as v0 (that is how it
        # handles UNSUPPORTED_VERSION); errors are covered in test_codec.py.
        vals["error_code"] = 0
    encoded = encode_body(message, version, vals)

    theirs = kp.decode(message.name, version, encoded)

    assert plain(theirs, fields, version) == vals
    assert theirs.version == version
    assert theirs.encode(version=version) == encoded


REQUEST_CASES = [c for c in CASES if c[2] == "request"]


@pytest.mark.parametrize("case", REQUEST_CASES, ids=_ids)
@settings(max_examples=examples(5), deadline=None)
@given(data=st.data(), correlation_id=st.integers(-(2**31), 2**31 - 1), client_id=st.none() | st.text(max_size=10))
def test_request_frames_both_ways(case, data, correlation_id, client_id):
    key, version, _ = case
    spec = API_SPECS[key]
    fields = mafka_fields(spec.request.fields)
    vals = data.draw(values(fields, version))

    ours = encode_request(key, version, correlation_id, client_id, vals)
    theirs = kp.build(spec.request.name, version, vals)
    theirs.with_header(correlation_id=correlation_id, client_id=client_id)
    assert theirs.encode(header=True, framed=True) == ours

    request = decode_request(ours[4:])
    assert request.header.api_key == key
    assert request.header.api_version == version
    assert request.header.correlation_id == correlation_id
    assert request.header.client_id == client_id
    assert request.header.header_version == (2 if spec.request.is_flexible(version) else 1)
    assert plain(request.body, fields, version) == vals


RESPONSE_CASES = [c for c in CASES if c[2] == "response"]


@pytest.mark.parametrize("case", RESPONSE_CASES, ids=_ids)
@settings(max_examples=examples(5), deadline=None)
@given(data=st.data(), correlation_id=st.integers(-(2**31), 2**31 - 1))
def test_response_frames_both_ways(case, data, correlation_id):
    key, version, _ = case
    spec = API_SPECS[key]
    fields = mafka_fields(spec.response.fields)
    vals = data.draw(values(fields, version))
    if key == 18:
        vals["error_code"] = 0  # see test_mafka_to_kafka_python
    header = RequestHeader(key, version, correlation_id, "c")

    ours = encode_response(header, vals)
    decoded = kp.message_class(spec.response.name).decode(ours, version=version, header=True, framed=True)
    assert decoded.header.correlation_id == correlation_id
    assert plain(decoded, fields, version) == vals

    got_id, body = decode_response(key, version, ours[4:])
    assert got_id == correlation_id
    assert plain(body, fields, version) == vals
