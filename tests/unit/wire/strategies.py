"""Hypothesis strategies that generate message values from a schema description.

A schema description is a list of Kafka-JSON-style field dicts (``name``,
``type``, ``versions``, ``nullableVersions``, ``fields``; ``taggedVersions``
marks a tagged field).  Two sources feed it: Mafka's own
:class:`~mafka.wire.schema.Field` trees (:func:`mafka_fields`) and the JSON
definitions inside kafka-python (``message._json``), so each direction of the
conformance suite draws values from the side that encodes them.

Values are plain nested dicts keyed by snake_case names, holding only the
fields present at the version.
"""

from __future__ import annotations

import re
from typing import Any

from hypothesis import strategies as st

from mafka.wire.schema import Field, versions

_INT_BOUNDS = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "uint16": (0, 2**16 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "uint32": (0, 2**32 - 1),
    "int64": (-(2**63), 2**63 - 1),
}


def snake(name: str) -> str:
    """Kafka JSON name → snake_case (the rule kafka-python uses)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name).lower()


#: Field descriptions (by ``id``) that kafka-python renamed in its loaded
#: schema → Kafka's own name, which Mafka uses.
KAFKA_NAMES: dict[int, str] = {}


#: Kafka's name → kafka-python's attribute, where kafka-python renamed a field.
KAFKA_PYTHON_ATTRIBUTES = {
    "cluster_authorized_operations": "authorized_operations",
    "topic_authorized_operations": "authorized_operations",
    # LeaderAndIsr's Type, renamed in our fixture: kafka-python's classes have a ``type``.
    "type": "request_type",
}


#: Kafka names that kafka-python's message classes shadow with attributes of their own.
_SHADOWED = {"type"}


def field_name(d: dict[str, Any]) -> str:
    """The snake_case Kafka name of a JSON field description (undoing kafka-python's renames)."""
    return snake(KAFKA_NAMES.get(id(d), d["name"]))


def mafka_fields(fields: tuple[Field, ...]) -> list[dict[str, Any]]:
    """Mafka Field trees → the JSON-style description."""
    out = []
    for f in fields:
        d: dict[str, Any] = {"name": f.name, "type": f.type, "versions": f.versions}
        if f.nullable != "none":
            d["nullableVersions"] = f.nullable
        if f.fields:
            d["fields"] = mafka_fields(f.fields)
        out.append(d)
    return out


def in_version(d: dict[str, Any], version: int) -> bool:
    return version in versions(d.get("versions", "0+")) and "taggedVersions" not in d


def _nullable(d: dict[str, Any], version: int) -> bool:
    return version in versions(d.get("nullableVersions", "none"))


def _scalar(t: str) -> st.SearchStrategy[Any]:
    if t == "bitfield":  # kafka-python's name for an int32 of ACL-operation bits
        t = "int32"
    if t in _INT_BOUNDS:
        lo, hi = _INT_BOUNDS[t]
        return st.integers(lo, hi)
    if t == "float64":
        return st.floats(allow_nan=False)
    if t == "bool":
        return st.booleans()
    if t == "string":
        return st.text(max_size=12)
    if t in ("bytes", "records"):
        return st.binary(max_size=24)
    if t == "uuid":
        return st.binary(min_size=16, max_size=16)
    raise ValueError(t)


def values(fields: list[dict[str, Any]], version: int, *, max_list: int = 3) -> st.SearchStrategy[dict[str, Any]]:
    """Values for the fields present at *version*."""
    parts: dict[str, st.SearchStrategy[Any]] = {}
    for d in fields:
        if not in_version(d, version):
            continue
        t = d["type"]
        elem_t = t[2:] if t.startswith("[]") else t
        if d.get("fields") is not None or elem_t[:1].isupper():
            inner = values(d.get("fields", []), version, max_list=max_list)
        else:
            inner = _scalar(elem_t)
        s = st.lists(inner, max_size=max_list) if t.startswith("[]") else inner
        if _nullable(d, version):
            s = st.none() | s
        parts[field_name(d)] = s
    return st.fixed_dictionaries(parts)


def plain(obj: Any, fields: list[dict[str, Any]], version: int) -> Any:
    """A decoded message (Container, kafka-python object or dict) → plain dict of in-version fields.

    Records and bytes compare as ``bytes``; tagged fields are left out.
    """
    if obj is None:
        return None
    out = {}
    for d in fields:
        if not in_version(d, version):
            continue
        name = field_name(d)
        if isinstance(obj, dict):
            value = obj[name]
        elif hasattr(obj, snake(d["name"])) and name not in _SHADOWED:
            value = getattr(obj, snake(d["name"]))
        else:
            value = getattr(obj, KAFKA_PYTHON_ATTRIBUTES[name])
        t = d["type"]
        elem_t = t[2:] if t.startswith("[]") else t
        struct = d.get("fields") is not None or elem_t[:1].isupper()
        if t.startswith("[]"):
            if value is not None:
                value = [plain(v, d.get("fields", []), version) if struct else _norm(v) for v in value]
        elif struct:
            value = plain(value, d.get("fields", []), version)
        elif t in ("int32", "bitfield") and (value is None or isinstance(value, set)):
            value = bitfield_to_int(value)
        elif t == "uuid" and value is None:
            value = bytes(16)  # kafka-python decodes Kafka's ZERO_UUID as None
        else:
            value = _norm(value)
        out[name] = value
    return out


def bitfield_to_int(bits: set[int] | None) -> int:
    """kafka-python's set-of-bits view of an int32 (None = only bit 31) → the int32."""
    value = sum(1 << b for b in (bits if bits is not None else {31}))
    return value - (1 << 32) if value & (1 << 31) else value


def int_to_bitfield(value: int) -> set[int] | None:
    bits = {b for b in range(32) if value & (1 << b)}
    return None if bits == {31} else bits


def _norm(v: Any) -> Any:
    if isinstance(v, (memoryview, bytearray)):
        return bytes(v)
    if hasattr(v, "bytes") and not isinstance(v, (bytes, str)):  # uuid.UUID
        return v.bytes
    return v
