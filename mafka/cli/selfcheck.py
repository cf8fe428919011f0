"""``mafka selfcheck``: the wire codec checks itself end to end.

For every api and every version in its decode range, a sample request with
every field set to a non-default value is framed, decoded as a broker would
decode it, and compared; the same for a response.  Then the advertised
ApiVersions table is printed.  Exit status 0 means every check passed.
"""

from __future__ import annotations

from typing import Any

from mafka.wire.codec import decode_request, decode_response, encode_request, encode_response
from mafka.wire.registry import API_SPECS, api_versions_entries
from mafka.wire.schema import Field, versions

__all__ = ["run_selfcheck", "sample"]

_SAMPLES: dict[str, Any] = {
    "int8": 7,
    "int16": 1234,
    "uint16": 65000,
    "int32": 123456,
    "uint32": 4000000000,
    "int64": 1 << 40,
    "float64": 0.5,
    "bool": True,
    "string": "mafka-ü",
    "bytes": b"\x00\x01bytes",
    "records": b"opaque-records",
    "uuid": bytes(range(16)),
}


def sample(fields: tuple[Field, ...], version: int) -> dict[str, Any]:
    """A body with every field present at *version* set to a non-default value."""
    out: dict[str, Any] = {}
    for f in fields:
        if version not in versions(f.versions):
            continue
        if f.is_struct:
            value: Any = sample(f.fields, version)
        else:
            value = _SAMPLES[f.element_type]
        out[f.name] = [value, value] if f.is_array else value
    return out


def _same(expected: Any, got: Any) -> bool:
    if isinstance(expected, dict):
        return all(_same(v, got[k]) for k, v in expected.items())
    if isinstance(expected, list):
        return len(expected) == len(got) and all(_same(e, g) for e, g in zip(expected, got, strict=True))
    if isinstance(expected, bytes):
        return bytes(got) == expected
    return expected == got


def run_selfcheck(verbose: bool = False) -> int:
    from mafka.wire.header import RequestHeader

    failures = 0
    checked = 0
    for spec in API_SPECS.values():
        for version in range(spec.decode[0], spec.decode[1] + 1):
            req = sample(spec.request.fields, version)
            frame = encode_request(spec.key, version, 42, "selfcheck", req)
            decoded = decode_request(frame[4:])
            ok_req = decoded.header.correlation_id == 42 and _same(req, decoded.body)
            resp = sample(spec.response.fields, version)
            header = RequestHeader(spec.key, version, 43, "selfcheck")
            cid, body = decode_response(spec.key, version, encode_response(header, resp)[4:])
            ok_resp = cid == 43 and _same(resp, body)
            checked += 2
            if not (ok_req and ok_resp):
                failures += 1
                print(f"FAIL {spec.name} v{version}: request {'ok' if ok_req else 'MISMATCH'}, response {'ok' if ok_resp else 'MISMATCH'}")
            elif verbose:
                print(f"ok   {spec.name} v{version}")
    print(f"{'api':<26}{'key':>4}  advertised  decoded")
    advertised = {e["api_key"]: (e["min_version"], e["max_version"]) for e in api_versions_entries()}
    for spec in API_SPECS.values():
        adv = advertised.get(spec.key)
        adv_s = f"{adv[0]}-{adv[1]}" if adv else "(broker)"
        print(f"{spec.name:<26}{spec.key:>4}  {adv_s:>10}  {spec.decode[0]}-{spec.decode[1]}")
    print(f"selfcheck: {checked - 2 * failures} of {checked} request/response round trips passed")
    return 1 if failures else 0
