"""Kafka's UUIDs as znodes carry them: cluster ids and topic ids in 22-character url-safe base64.

Owns validation (``Uuid.toString`` form), conversion to and from the 16 wire
bytes, and making fresh cluster and topic ids as Kafka does.
"""

from __future__ import annotations

import base64
import re
import uuid

__all__ = [
    "new_cluster_id",
    "new_topic_id",
    "uuid_bytes",
    "uuid_string",
    "validate_base64_uuid",
]


def validate_base64_uuid(value: str, what: str = "uuid") -> str:
    """Checks Kafka's ``Uuid.toString`` form (22 url-safe base64 chars, no padding); returns it.

    Raises:
        ValueError: If *value* does not decode to exactly 16 bytes.
    """
    if not isinstance(value, str) or not re.fullmatch(r"[A-Za-z0-9_-]{22}", value):
        raise ValueError(f"{what}: {value!r} is not a 22-character url-safe base64 UUID")
    raw = base64.urlsafe_b64decode(value + "==")
    if len(raw) != 16 or base64.urlsafe_b64encode(raw).rstrip(b"=").decode() != value:
        raise ValueError(f"{what}: {value!r} is not a canonical base64 UUID")
    return value


def _uuid_to_base64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def uuid_bytes(value: str | None) -> bytes:
    """The 16 wire bytes of a base64 UUID (``Uuid.fromString``); None is Kafka's ZERO_UUID."""
    if value is None:
        return bytes(16)
    return base64.urlsafe_b64decode(value + "==")


def uuid_string(raw: bytes) -> str | None:
    """The base64 form of 16 wire bytes (``Uuid.toString``); the zero UUID is None."""
    if raw == bytes(16):
        return None
    return _uuid_to_base64(raw)


def new_cluster_id() -> str:
    """A fresh cluster id as Kafka makes one (``CoreUtils.generateUuidAsBase64``)."""
    return _uuid_to_base64(uuid.uuid4().bytes)


def new_topic_id() -> str:
    """A fresh topic id (``Uuid.randomUuid``: never the zero or the sentinel 0/1 UUID)."""
    while True:
        raw = uuid.uuid4().bytes
        if raw not in (bytes(16), bytes(15) + b"\x01"):
            return _uuid_to_base64(raw)
