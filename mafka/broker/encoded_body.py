"""Response bodies a handler hands back already encoded, and their framing.

A handler answers with a dict that the dispatcher encodes (Construct).  A
handler that keeps its answers encoded (Metadata, :mod:`mafka.broker.metadata_answers`)
returns an :class:`EncodedBody` instead: the body's bytes at the request's
version, in pieces, which :func:`response_chunks` frames — size prefix and
response header (the correlation id is the only thing two identical answers
differ in) followed by the pieces as they are, never joined or copied.

:func:`response_chunks` is the one place that knows both kinds; whatever
encodes handler answers for the network edge (the dispatcher, the client
quota service) calls it where it calls ``encode_response_chunks`` today.

Two concessions to code that treats bodies as dicts:

* ``body["throttle_time_ms"] = ms`` works (the quota service sets the
  throttle time of a throttled response): it rewrites those four bytes;
* reading an :class:`EncodedBody` as a mapping decodes it (once, lazily),
  so an encoder that does not know the type still writes the same bytes,
  and tests may read a handler's answer as they read a dict.  That is the
  slow path — the point of the type is :func:`response_chunks`.
"""

from __future__ import annotations

import struct
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from mafka.wire.codec import decode_body, encode_response_chunks
from mafka.wire.header import RESPONSE_HEADERS, RequestHeader
from mafka.wire.registry import API_SPECS
from mafka.wire.schema import Message

__all__ = ["EncodedBody", "response_chunks"]

_I32 = struct.Struct(">i")


class EncodedBody(Mapping[str, Any]):
    """A response body already encoded at its request's version.

    Args:
        message: the response schema (to decode the mapping view).
        version: the version the bytes are encoded at.
        parts: the body's bytes, in order; their concatenation is the body.
        throttle_offset: where ``throttle_time_ms`` (int32) starts in
            ``parts[0]``, or None when this version has no such field.
    """

    __slots__ = ("message", "version", "parts", "throttle_offset", "_decoded")

    def __init__(self, message: Message, version: int, parts: Sequence[bytes], throttle_offset: int | None) -> None:
        self.message = message
        self.version = version
        self.parts = list(parts)
        self.throttle_offset = throttle_offset
        self._decoded: Mapping[str, Any] | None = None

    def __len__(self) -> int:
        return len(self._body())

    def __iter__(self) -> Iterator[str]:
        return iter(self._body())

    def __getitem__(self, key: str) -> Any:
        return self._body()[key]

    def __setitem__(self, key: str, value: int) -> None:
        """Only ``throttle_time_ms`` may be set (the quota service's throttle time)."""
        if key != "throttle_time_ms" or self.throttle_offset is None:
            raise KeyError(f"{key} of an encoded {self.message.name} v{self.version} cannot be set")
        first, at = self.parts[0], self.throttle_offset
        self.parts[0] = first[:at] + _I32.pack(value) + first[at + 4 :]
        self._decoded = None

    def __repr__(self) -> str:
        return f"EncodedBody({self.message.name} v{self.version}, {self.size} bytes)"

    @property
    def size(self) -> int:
        """The body's length in bytes."""
        return sum(map(len, self.parts))

    def data(self) -> bytes:
        """The body's bytes, joined (a copy: for tests and the mapping view)."""
        return b"".join(self.parts)

    def _body(self) -> Mapping[str, Any]:
        if self._decoded is None:
            self._decoded = decode_body(self.message, self.version, self.data())
        return self._decoded

    def frame(self, header: RequestHeader) -> list[bytes]:
        """The response to the request with *header*: size prefix and response header, then the parts."""
        spec = API_SPECS[header.api_key]
        response_header = RESPONSE_HEADERS[spec.response_header_version(header.api_version)].build(
            {"correlation_id": header.correlation_id}
        )
        size = len(response_header) + self.size
        return [_I32.pack(size) + response_header, *self.parts]


def response_chunks(header: RequestHeader, body: Any) -> list[Any]:
    """The chunks answering the request with *header*: ``encode_response_chunks``, or the framed bytes of an :class:`EncodedBody`."""
    if isinstance(body, EncodedBody):
        return body.frame(header)
    return encode_response_chunks(header, body)
