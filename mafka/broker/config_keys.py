"""What one broker config key is: Kafka's ``ConfigDef`` entry and Java's value syntax.

Owns :class:`ConfigKey` (a key's Kafka name, attribute, ``ConfigDef.Type``,
default and validator; parsing a raw value as ``ConfigDef.parseType``,
checking it as ``ConfigDef.Range.atLeast`` / ``ValidString.in``, rendering
it as Kafka prints it), :func:`kafka_field` and :func:`collect_keys` (how
:class:`~mafka.broker.config.BrokerConfig` declares a field as a Kafka key
and how the key table is read back), and the Java parsing rules the broker config shares: ``String.trim``,
``ConfigDef`` list splitting, ``CoreUtils.parseCsvMap`` and the integer
ranges of ``SHORT``/``INT``/``LONG``.

Which keys exist, and their defaults, is the field table of
:class:`~mafka.broker.config.BrokerConfig`; this module knows nothing of
particular keys except ``compression.type`` (lower-cased, as Kafka does).
"""

from __future__ import annotations

import re
import sys
from dataclasses import dataclass, field, fields
from types import MappingProxyType
from typing import Any, Final

from mafka.errors import ConfigError
from mafka.log.config import LONG_MAX

__all__ = [
    "DOUBLE_MAX",
    "INT_MAX",
    "JAVA_TRIM",
    "LIST_SPLIT",
    "ConfigKey",
    "collect_keys",
    "kafka_field",
    "parse_csv_map",
]

INT_MAX: Final = 2**31 - 1
_RANGES: Final = {"SHORT": (-(2**15), 2**15 - 1), "INT": (-(2**31), INT_MAX), "LONG": (-(2**63), LONG_MAX)}
DOUBLE_MAX: Final = sys.float_info.max  # Java's Double.MAX_VALUE

# Java's String.trim() removes every char <= U+0020; Java's regex \s is ASCII whitespace only.
JAVA_TRIM: Final = "".join(chr(c) for c in range(0x21))
LIST_SPLIT: Final = re.compile(r"[ \t\n\x0b\f\r]*,[ \t\n\x0b\f\r]*")
_JAVA_INT: Final = re.compile(r"[+-]?[0-9]+\Z")
_JAVA_DOUBLE: Final = re.compile(r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[fFdD]?\Z")


@dataclass(frozen=True, slots=True)
class ConfigKey:
    """One broker config: Kafka name, attribute, ``ConfigDef`` type and default, validator."""

    name: str
    attr: str
    type: str  # SHORT, INT, LONG, DOUBLE, BOOLEAN, STRING or LIST (Kafka's ConfigDef.Type)
    default: Any
    at_least: int | float | None = None
    one_of: tuple[str, ...] | None = None

    def parse(self, raw: Any, source: str | None = None) -> Any:
        """Convert a raw value (string, or a Python value of the right kind) as ``ConfigDef.parseType`` does.

        Raises:
            ConfigError: the value is not of this key's type.
        """
        if raw is None:
            return None
        kind = self.type
        if kind == "LIST" and isinstance(raw, (list, tuple)):
            return tuple(str(v).strip(JAVA_TRIM) for v in raw)
        if isinstance(raw, bool):
            text = "true" if raw else "false"
        else:
            text = str(raw).strip(JAVA_TRIM)
        if kind in _RANGES:
            lo, hi = _RANGES[kind]
            if not _JAVA_INT.match(text) or not lo <= int(text) <= hi:
                raise ConfigError.for_key(self.name, f"Not a number of type {kind}", value=raw, source=source)
            return int(text)
        if kind == "BOOLEAN":
            if text.lower() not in ("true", "false"):
                raise ConfigError.for_key(self.name, "Expected value to be either true or false", value=raw, source=source)
            return text.lower() == "true"
        if kind == "DOUBLE":
            if not _JAVA_DOUBLE.match(text):
                raise ConfigError.for_key(self.name, "Not a number of type DOUBLE", value=raw, source=source)
            return float(text.rstrip("fFdD").replace("Infinity", "inf"))
        if kind == "LIST":
            return () if not text else tuple(LIST_SPLIT.split(text))
        if self.name == "compression.type":
            return text.lower()
        return text

    def check(self, value: Any, source: str | None = None) -> None:
        """Apply the key's range / allowed-values validator (``ConfigDef.Range.atLeast``, ``ValidString.in``).

        Raises:
            ConfigError: the value is out of range.
        """
        if value is None:
            return
        if self.at_least is not None and value < self.at_least:
            raise ConfigError.for_key(self.name, f"Value must be at least {self.at_least}", value=value, source=source)
        if self.one_of is not None:
            items = value if isinstance(value, tuple) else (value,)
            bad = [v for v in items if v not in self.one_of]
            if bad:
                shown = ",".join(items) if isinstance(value, tuple) else value
                raise ConfigError.for_key(
                    self.name, f"String must be one of: {', '.join(self.one_of)}", value=shown, source=source
                )

    def render(self, value: Any) -> str | None:
        """The value as Kafka would print it (``true``, ``a,b``); ``None`` for a null value."""
        if value is None:
            return None
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, tuple):
            return ",".join(value)
        return str(value)


def kafka_field(
    name: str,
    kind: str,
    default: Any = None,
    *,
    at_least: int | float | None = None,
    one_of: tuple[str, ...] | None = None,
) -> Any:
    """A dataclass field carrying its Kafka key definition (the field name is the attribute).

    :func:`collect_keys` reads the definitions back.
    """
    meta = {"kafka": (name, kind, default, at_least, one_of)}
    return field(default=default, metadata=MappingProxyType(meta))


def collect_keys(record: type[Any]) -> dict[str, ConfigKey]:
    """Kafka name → :class:`ConfigKey` of every :func:`kafka_field` of the dataclass ``record``, in declaration order."""
    keys: dict[str, ConfigKey] = {}
    for f in fields(record):
        meta = f.metadata.get("kafka")
        if meta is None:
            continue
        name, kind, default, at_least, one_of = meta
        keys[name] = ConfigKey(name, f.name, kind, default, at_least, one_of)
    return keys


def parse_csv_map(text: str) -> dict[str, str]:
    """``CoreUtils.parseCsvMap``: ``k:v,k2:v2``, split at each entry's last colon."""
    out: dict[str, str] = {}
    if text == "":
        return out
    for entry in LIST_SPLIT.split(text):
        cut = entry.rfind(":")
        if cut < 0:
            raise ValueError(f"entry {entry!r} is not key:value")
        out[entry[:cut].strip(JAVA_TRIM)] = entry[cut + 1 :].strip(JAVA_TRIM)
    return out
