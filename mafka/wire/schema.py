"""A small schema language mirroring Kafka's JSON message definitions.

Each API module in :mod:`mafka.wire.apis` writes its request and response
once, with per-field version ranges in Kafka's own notation (``"3+"``,
``"0-2"``, ``"4"``), exactly as ``clients/src/main/resources/common/message/``
does.  :class:`Message` turns that into one construct ``Struct`` per
version, compiled at import:

* a field outside a version is not on the wire; parsing yields its default,
  so handlers read every field regardless of version;
* flexible versions use compact strings, bytes and arrays, and every struct
  ends with a tagged-field section (kept raw under ``tagged_fields``);
* versions with the same layout share one compiled struct.

Field names are the JSON names in snake_case (``PartitionIndex`` →
``partition_index``), the convention kafka-python and aiokafka also follow.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from construct import Computed, Construct

from .nullable_struct import NullableStruct
from .primitives import (
    FIXED_FORMATS,
    Boolean,
    Bytes,
    Fixed,
    KArray,
    KStruct,
    Records,
    String,
    TaggedFields,
    Uuid,
)

__all__ = ["Field", "F", "Message", "VersionRange", "versions"]

_RANGE = re.compile(r"^(?:(\d+)\+|(\d+)-(\d+)|(\d+)|none)$")


@dataclass(frozen=True, slots=True)
class VersionRange:
    """An inclusive version range; ``hi`` is None for open-ended ``N+``."""

    lo: int
    hi: int | None

    def __contains__(self, version: object) -> bool:
        return isinstance(version, int) and self.lo <= version and (
            self.hi is None or version <= self.hi
        )


_NONE = VersionRange(1, 0)


def versions(spec: str) -> VersionRange:
    """Parses Kafka's version notation: ``"3+"``, ``"0-2"``, ``"4"`` or ``"none"``."""
    m = _RANGE.match(spec.strip())
    if not m:
        raise ValueError(f"bad version range {spec!r}")
    if m.group(1) is not None:
        return VersionRange(int(m.group(1)), None)
    if m.group(2) is not None:
        return VersionRange(int(m.group(2)), int(m.group(3)))
    if m.group(4) is not None:
        v = int(m.group(4))
        return VersionRange(v, v)
    return _NONE


@dataclass(frozen=True)
class Field:
    """One field of a message, as in Kafka's JSON schema.

    Attributes:
        name: snake_case field name.
        type: Kafka type: ``int8`` … ``int64``, ``uint16``, ``uint32``,
            ``float64``, ``bool``, ``string``, ``bytes``, ``records``,
            ``uuid``, ``[]<type>`` for an array, or a struct name (capitalised,
            with ``fields``) / ``[]StructName`` for arrays of structs.
        versions: the versions in which the field is on the wire.
        nullable: the versions in which it may be null.
        default: the value parsing yields where the field is absent and
            building writes where it is missing (Kafka's "default").
        fields: the sub-fields of a struct type.
    """

    name: str
    type: str
    versions: str = "0+"
    nullable: str = "none"
    default: Any = None
    fields: tuple[Field, ...] = field(default_factory=tuple)

    @property
    def is_array(self) -> bool:
        return self.type.startswith("[]")

    @property
    def element_type(self) -> str:
        return self.type[2:] if self.is_array else self.type

    @property
    def is_struct(self) -> bool:
        return self.element_type[:1].isupper()

    def default_value(self) -> Any:
        """The value a version without this field parses to."""
        if self.default is not None:
            return self.default
        if self.is_array:
            return None if versions(self.nullable).lo == 0 and versions(self.nullable).hi is None else []
        t = self.type
        if t in FIXED_FORMATS:
            return FIXED_FORMATS[t][2]
        if t == "bool":
            return False
        if t == "string":
            return None if self._always_nullable() else ""
        if t == "bytes":
            return None if self._always_nullable() else b""
        if t == "records":
            return None
        if t == "uuid":
            return bytes(16)
        if self.is_struct:
            return None
        raise ValueError(f"{self.name}: unknown type {t!r}")

    def _always_nullable(self) -> bool:
        r = versions(self.nullable)
        return r.lo == 0 and r.hi is None


def F(name: str, type: str, versions: str = "0+", *fields: Field, nullable: str = "none", default: Any = None) -> Field:  # noqa: A002
    """Shorthand: ``F("topics", "[]Topic", "0+", F("name", "string"), ...)``."""
    return Field(name, type, versions, nullable, default, tuple(fields))


class Message:
    """A request or response schema across versions.

    Args:
        name: Kafka's message name, e.g. ``"ProduceRequest"``.
        fields: the top-level fields.
        valid: the versions this schema is defined for.
        flexible: the first flexible version range (``"9+"``; ``"none"``).
    """

    def __init__(self, name: str, fields: Sequence[Field], *, valid: str, flexible: str) -> None:
        self.name = name
        self.fields = tuple(fields)
        self.valid = versions(valid)
        self.flexible = versions(flexible)
        self._structs: dict[int, Construct] = {}
        self._layouts: dict[tuple[Any, ...], Construct] = {}

    def is_flexible(self, version: int) -> bool:
        return version in self.flexible

    def struct(self, version: int) -> Construct:
        """The compiled construct for *version* (built on first use, then cached)."""
        try:
            return self._structs[version]
        except KeyError:
            pass
        if version not in self.valid:
            raise KeyError(f"{self.name} has no version {version}")
        flexible = self.is_flexible(version)
        layout = _layout(self.fields, version, flexible)
        compiled = self._layouts.get(layout)
        if compiled is None:
            compiled = _struct(self.fields, version, flexible, self.name).compile()
            self._layouts[layout] = compiled
        self._structs[version] = compiled
        return compiled

    def compile_all(self, lo: int, hi: int) -> None:
        """Compiles every version in ``lo..hi`` now (done at import)."""
        for v in range(lo, hi + 1):
            self.struct(v)

    def present_fields(self, version: int) -> Iterable[Field]:
        return (f for f in self.fields if version in versions(f.versions))


def _layout(fields: Sequence[Field], version: int, flexible: bool) -> tuple[Any, ...]:
    """A hashable description of the wire layout at *version* (for sharing)."""
    out: list[tuple[Any, ...]] = []
    for f in fields:
        if version in versions(f.versions):
            out.append((f.name, f.type, version in versions(f.nullable), _layout(f.fields, version, flexible)))
        else:
            out.append((f.name, "absent", repr(f.default_value())))
    return (flexible, tuple(out))


def _struct(fields: Sequence[Field], version: int, flexible: bool, path: str) -> Construct:
    subcons = []
    for f in fields:
        what = f"{path}.{f.name}"
        if version in versions(f.versions):
            subcons.append(f.name / _field_construct(f, version, flexible, what))
        else:
            subcons.append(f.name / Computed(f.default_value()))
    if flexible:
        subcons.append("tagged_fields" / TaggedFields(f"{path}.tagged_fields"))
    return KStruct(*subcons)


def _field_construct(f: Field, version: int, flexible: bool, what: str) -> Construct:
    nullable = version in versions(f.nullable)
    if f.is_array:
        elem = _element_construct(f, version, flexible, what)
        return KArray(elem, what, compact=flexible, nullable=nullable, min_size=_min_size(elem))
    if f.is_struct:
        inner = _struct(f.fields, version, flexible, what)
        return NullableStruct(inner, what) if nullable else inner  # KIP-893: a marker byte first
    return _scalar(f.type, what, flexible, nullable, f.default)


def _element_construct(f: Field, version: int, flexible: bool, what: str) -> Construct:
    if f.is_struct:
        return _struct(f.fields, version, flexible, what)
    return _scalar(f.element_type, what, flexible, False, None)


def _scalar(t: str, what: str, flexible: bool, nullable: bool, default: Any) -> Construct:
    if t in FIXED_FORMATS:
        return Fixed(t, what, default)
    if t == "bool":
        return Boolean(what, bool(default))
    if t == "string":
        return String(what, compact=flexible, nullable=nullable, default=default)
    if t == "bytes":
        return Bytes(what, compact=flexible, nullable=nullable, default=default)
    if t == "records":
        return Records(what, compact=flexible)
    if t == "uuid":
        return Uuid(what)
    raise ValueError(f"{what}: unknown type {t!r}")


def _min_size(c: Construct) -> int:
    """Smallest encoded size of *c* (used to bound array counts)."""
    if isinstance(c, KStruct):
        return sum(_min_size(sc) for sc in c.subcons)
    if isinstance(c, Computed):
        return 0
    sub = getattr(c, "subcon", None)
    if sub is not None and not hasattr(c, "min_size"):
        return _min_size(sub)
    return getattr(c, "min_size", 0)
