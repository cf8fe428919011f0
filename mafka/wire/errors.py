"""The one exception type that malformed wire input may raise.

Every decoder in :mod:`mafka.wire` turns bad input — truncation, a length or
count that claims more bytes than remain, an over-long varint, invalid UTF-8,
a CRC mismatch, a frame above ``socket.request.max.bytes`` — into a
:class:`ProtocolError` whose message says what was wrong and where.  Nothing
else (``IndexError``, ``struct.error``, ``UnicodeDecodeError``,
``MemoryError``, construct's own errors) escapes a decoder.  Callers on the
broker close the offending connection, or answer with a Kafka error code,
and keep serving everyone else.
"""

from __future__ import annotations

__all__ = [
    "ProtocolError",
    "FrameTooLarge",
    "UnsupportedVersion",
    "UnknownApi",
    "CorruptRecordBatch",
]


class ProtocolError(Exception):
    """Malformed or unacceptable bytes from a peer."""


class FrameTooLarge(ProtocolError):
    """A frame's size prefix is negative or above the configured maximum."""

    def __init__(self, size: int, limit: int) -> None:
        super().__init__(f"frame size {size} outside [0, {limit}] (socket.request.max.bytes)")
        self.size = size
        self.limit = limit


class UnknownApi(ProtocolError):
    """A request names an api key Mafka does not know."""

    def __init__(self, api_key: int) -> None:
        super().__init__(f"unknown api key {api_key}")
        self.api_key = api_key


class UnsupportedVersion(ProtocolError):
    """A request's version lies outside the api's decode range.

    Kafka closes the connection for such requests; ApiVersions above its
    range is the one exception (answered with UNSUPPORTED_VERSION and a v0
    body), handled by the codec before this is raised.
    """

    def __init__(self, api_key: int, version: int, lo: int, hi: int) -> None:
        super().__init__(f"api key {api_key} version {version} outside decode range {lo}..{hi}")
        self.api_key = api_key
        self.version = version


class CorruptRecordBatch(ProtocolError):
    """A record batch whose length, magic or CRC is invalid (Kafka: CORRUPT_MESSAGE)."""
