"""Malformed input never escapes as anything but ProtocolError, and decoding stays bounded.

For every (api, version, request/response), valid frames are mutated —
truncated, extended, byte-flipped, their length/count prefixes inflated up to
INT32_MAX or made negative, their varints made over-long — and decoded.  A
decode either succeeds or raises :class:`ProtocolError`; peak traced memory
while decoding stays within 4 × frame size + 1 MiB.
"""

from __future__ import annotations

import struct
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import mafka.wire.primitives as primitives
from mafka.wire.codec import decode_body, decode_request, encode_body, encode_request
from mafka.wire.errors import ProtocolError
from mafka.wire.registry import API_SPECS
from tests.hypothesis_budget import examples

from .strategies import mafka_fields, values

CASES = [
    (spec.key, version, kind)
    for spec in API_SPECS.values()
    for version in range(spec.decode[0], spec.decode[1] + 1)
    for kind in ("request", "response")
]

MiB = 1 << 20
LENGTH_VALUES = [2**31 - 1, 2**31 - 2, 2**30, 2**24, 65535, 32767, 1000, -1, -2, -(2**31)]


def _ids(case):
    key, version, kind = case
    return f"{API_SPECS[key].name}-v{version}-{kind}"


def _message(key, kind):
    spec = API_SPECS[key]
    return spec.request if kind == "request" else spec.response


def length_prefixes(message, version, data):
    """(offset, width, compact) of every length/count prefix read while decoding *data*."""
    found = []
    # Every length/count reader, with the prefix width it reads; the compiled
    # code looks them up on the module at call time.
    readers = {"_read_length": None, "read_str16": 2, "read_bytes32": 4, "read_records32": 4, "read_array32": 4}
    originals = {name: getattr(primitives, name) for name in readers}

    def recorder(name, width):
        original = originals[name]

        def recording(io, *args):
            if width is None:  # _read_length(io, compact, wide, what)
                compact, wide = args[0], args[1]
                found.append((io.tell(), 4 if wide else 2, compact))
            else:
                found.append((io.tell(), width, False))
            return original(io, *args)

        return recording

    for name, width in readers.items():
        setattr(primitives, name, recorder(name, width))
    try:
        decode_body(message, version, data)
    finally:
        for name, original in originals.items():
            setattr(primitives, name, original)
    return sorted(set(found))


def bounded_decode(decode, data):
    """Decodes under tracemalloc; returns (outcome, peak bytes)."""
    tracemalloc.start()
    try:
        tracemalloc.reset_peak()
        try:
            decode(data)
            outcome = "ok"
        except ProtocolError:
            outcome = "protocol-error"
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return outcome, peak


def check(decode, data):
    outcome, peak = bounded_decode(decode, data)
    assert peak <= 4 * len(data) + MiB, f"peak {peak} for a {len(data)}-byte frame"
    return outcome


@st.composite
def mutated(draw, message, version):
    vals = draw(values(mafka_fields(message.fields), version, max_list=4))
    data = bytearray(encode_body(message, version, vals))
    kind = draw(st.sampled_from(["truncate", "extend", "flip", "length", "varint"]))
    if kind == "truncate" and data:
        del data[draw(st.integers(0, len(data) - 1)) :]
    elif kind == "extend":
        data += draw(st.binary(min_size=1, max_size=64))
    elif kind == "flip" and data:
        for _ in range(draw(st.integers(1, 4))):
            i = draw(st.integers(0, len(data) - 1))
            data[i] = draw(st.integers(0, 255))
    else:
        prefixes = length_prefixes(message, version, bytes(data))
        if prefixes:
            offset, width, compact = draw(st.sampled_from(prefixes))
            if kind == "varint" or compact:
                # An over-long or huge unsigned varint in place of the prefix.
                bad = draw(st.sampled_from([b"\xff" * 6, b"\xff\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x80\x01"]))
                data[offset : offset + 1] = bad
            else:
                value = draw(st.sampled_from(LENGTH_VALUES))
                fmt = ">i" if width == 4 else ">h"
                value = max(min(value, 2 ** (8 * width - 1) - 1), -(2 ** (8 * width - 1)))
                struct.pack_into(fmt, data, offset, value)
    return bytes(data)


@pytest.mark.parametrize("case", CASES, ids=_ids)
@settings(max_examples=examples(25), deadline=None, suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
@given(data=st.data())
def test_mutated_bodies_raise_only_protocol_error(case, data):
    key, version, kind = case
    message = _message(key, kind)
    frame = data.draw(mutated(message, version))
    check(lambda d: decode_body(message, version, d), frame)


@settings(max_examples=examples(200), deadline=None)
@given(frame=st.binary(max_size=256))
def test_random_request_frames_raise_only_protocol_error(frame):
    check(decode_request, frame)


@settings(max_examples=examples(200), deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    key=st.sampled_from(sorted(API_SPECS)),
    cut=st.integers(0, 400),
    junk=st.binary(max_size=8),
    data=st.data(),
)
def test_mutated_request_frames(key, cut, junk, data):
    spec = API_SPECS[key]
    version = data.draw(st.integers(*spec.decode))
    vals = data.draw(values(mafka_fields(spec.request.fields), version))
    frame = encode_request(key, version, 7, "client", vals)[4:]
    mutant = frame[:cut] + junk + frame[cut + len(junk) :]
    check(decode_request, mutant)


def test_length_prefixes_are_found():
    """The mutation strategy really reaches the prefixes (a check of the check)."""
    message = API_SPECS[0].request
    body = encode_body(message, 7, {"topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": b"xy"}]}]})
    # transactional_id (2 bytes at 0), topic_data count at 8, name at 12,
    # partition_data count at 15, records length at 23.
    assert length_prefixes(message, 7, body) == [(0, 2, False), (8, 4, False), (12, 2, False), (15, 4, False), (23, 4, False)]


def test_inflated_array_count_is_refused_before_allocation():
    """A Produce request claiming INT32_MAX partitions is refused without building them."""
    message = API_SPECS[0].request
    body = encode_body(message, 7, {"acks": -1, "timeout_ms": 1, "topic_data": [{"name": "t", "partition_data": []}]})
    offset = [p for p in length_prefixes(message, 7, body) if p[1] == 4][-1][0]
    bad = bytearray(body)
    struct.pack_into(">i", bad, offset, 2**31 - 1)
    with pytest.raises(ProtocolError, match="partition_data: 2147483647 elements"):
        decode_body(message, 7, bytes(bad))


def test_inflated_records_length_is_refused():
    message = API_SPECS[0].request
    body = encode_body(
        message, 7, {"acks": 1, "topic_data": [{"name": "t", "partition_data": [{"index": 0, "records": b"x" * 100}]}]}
    )
    bad = bytearray(body)
    struct.pack_into(">i", bad, len(body) - 104, 2**31 - 1)
    outcome, peak = bounded_decode(lambda d: decode_body(message, 7, d), bytes(bad))
    assert outcome == "protocol-error"
    assert peak < MiB


def test_over_long_varint_is_refused():
    # ApiVersions v3 request: client_software_name's compact length as a 6-byte varint.
    message = API_SPECS[18].request
    body = encode_body(message, 3, {"client_software_name": "a", "client_software_version": "b"})
    bad = b"\xff\xff\xff\xff\xff\x01" + body[2:]
    with pytest.raises(ProtocolError, match="varint longer than 5 bytes"):
        decode_body(message, 3, bad)


def test_invalid_utf8_is_refused():
    message = API_SPECS[3].request  # Metadata v0: [topics: string]
    body = encode_body(message, 0, {"topics": [{"name": "ab"}]})
    bad = body[:-2] + b"\xff\xfe"
    with pytest.raises(ProtocolError, match="UTF-8"):
        decode_body(message, 0, bad)


def test_negative_non_nullable_length_is_refused():
    message = API_SPECS[3].request
    body = bytearray(encode_body(message, 0, {"topics": [{"name": "ab"}]}))
    struct.pack_into(">h", body, 4, -1)  # the topic name's length
    with pytest.raises(ProtocolError, match="invalid string length -1"):
        decode_body(message, 0, bytes(body))
