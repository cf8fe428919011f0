"""Reading znode JSON strictly: the shared helpers every znode decoder uses.

Owns the ``ValueError``-with-the-znode-named readers (``_load_object``,
``_get_int``, ``_get_str``, ``_as_long_string``, ``_int_list``,
``_partition_key``) and the decoder of the shared ``"partitions"`` list
(``_topic_partitions``).  Pure code, no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any

from mafka.topics import TopicPartitionTuple

# --------------------------------------------------------------------------- decoding helpers

_MISSING: Any = object()


def _load(data: bytes, what: str) -> Any:
    if not isinstance(data, bytes | bytearray | memoryview):
        raise TypeError(f"{what}: znode data must be bytes, not {type(data).__name__}")
    try:
        return json.loads(bytes(data).decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as exc:
        raise ValueError(f"{what}: not valid JSON: {bytes(data)[:200]!r}") from exc


def _load_object(data: bytes, what: str) -> dict[str, Any]:
    obj = _load(data, what)
    if not isinstance(obj, dict):
        raise ValueError(f"{what}: expected a JSON object, got {type(obj).__name__}")
    return obj


def _as_int(value: Any, what: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{what}: expected an integer, got {value!r}")
    return value


def _get_int(obj: Mapping[str, Any], key: str, what: str, default: Any = _MISSING) -> int:
    value = obj.get(key, _MISSING)
    if value is _MISSING:
        if default is _MISSING:
            raise ValueError(f"{what}: missing {key!r}")
        return default
    return _as_int(value, f"{what} {key!r}")


def _as_long_string(value: Any, what: str) -> int:
    """A long Kafka writes as a decimal string (numbers tolerated)."""
    if isinstance(value, str):
        if re.fullmatch(r"-?[0-9]+", value):
            return int(value)
        raise ValueError(f"{what}: expected a decimal string, got {value!r}")
    return _as_int(value, what)


def _get_str(obj: Mapping[str, Any], key: str, what: str, default: Any = _MISSING) -> str:
    value = obj.get(key, _MISSING)
    if value is _MISSING:
        if default is _MISSING:
            raise ValueError(f"{what}: missing {key!r}")
        return default
    if not isinstance(value, str):
        raise ValueError(f"{what} {key!r}: expected a string, got {value!r}")
    return value


def _int_list(value: Any, what: str) -> tuple[int, ...]:
    if not isinstance(value, list):
        raise ValueError(f"{what}: expected a list of integers, got {value!r}")
    return tuple(_as_int(v, what) for v in value)


def _partition_key(key: str, what: str) -> int:
    if not re.fullmatch(r"-?[0-9]+", key):
        raise ValueError(f"{what}: partition {key!r} is not an integer")
    return int(key)


def _topic_partitions(obj: Mapping[str, Any], what: str) -> tuple[TopicPartitionTuple, ...]:
    entries = obj.get("partitions", _MISSING)
    if entries is _MISSING:
        raise ValueError(f"{what}: missing 'partitions'")
    if not isinstance(entries, list):
        raise ValueError(f"{what}: 'partitions' must be a list")
    out: dict[TopicPartitionTuple, None] = {}
    for entry in entries:
        if not isinstance(entry, dict):
            raise ValueError(f"{what}: partition entry {entry!r} is not an object")
        out[(_get_str(entry, "topic", what), _get_int(entry, "partition", what))] = None
    return tuple(out)
