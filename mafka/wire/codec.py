"""Requests and responses to and from bytes: the codec's public face.

Server side: :func:`decode_request` turns one frame into a :class:`Request`
and :func:`encode_response` turns a response body into a framed reply.
Client side: :func:`encode_request` and :func:`decode_response` mirror them.

Contract for untrusted input: :func:`decode_request` and
:func:`decode_response` raise :class:`~mafka.wire.errors.ProtocolError` (or
a subclass) for every malformed frame and nothing else — whatever escapes
the compiled structs is converted here, at the one boundary.  Trailing
bytes after a complete body are refused.

Version rules (``shared/reference/kafka-protocol.md`` §2–3): an unknown api
key raises :class:`~mafka.wire.errors.UnknownApi` and a version outside the
decode range :class:`~mafka.wire.errors.UnsupportedVersion` (the broker
closes the connection, as Kafka does), except an ApiVersions request newer
than Mafka's: it decodes to a :class:`Request` with ``body=None``, to be
answered with :func:`unsupported_api_versions_body` (error 35, a v0 body).
"""

from __future__ import annotations

import struct
from dataclasses import dataclass
from io import BytesIO
from typing import Any

from .api import ApiSpec
from .errors import ProtocolError, UnsupportedVersion
from .header import REQUEST_HEADERS, RESPONSE_HEADERS, RequestHeader
from .primitives import Body, ChunkWriter, FrameReader
from .registry import API_SPECS, API_VERSIONS_KEY, spec_for
from .schema import Message

__all__ = [
    "Request",
    "decode_request",
    "encode_response",
    "encode_response_chunks",
    "encode_request",
    "decode_response",
    "unsupported_api_versions_body",
    "UNSUPPORTED_VERSION",
    "decode_body",
    "encode_body",
]

_API_AND_VERSION = struct.Struct(">hh")
_SIZE = struct.Struct(">i")

#: Kafka's UNSUPPORTED_VERSION error code.
UNSUPPORTED_VERSION = 35


@dataclass(slots=True)
class Request:
    """A decoded request.

    Attributes:
        header: the request header.
        spec: the API's spec.
        body: the decoded body (a :class:`~mafka.wire.primitives.Body`, a dict with attribute and
            key access), or None for an ApiVersions request newer than
            Mafka's (answer with :func:`unsupported_api_versions_body`).
    """

    header: RequestHeader
    spec: ApiSpec
    body: Body | None


def _parse(compiled: Any, reader: BytesIO, what: str) -> Any:
    try:
        return compiled.parse_stream(reader)
    except ProtocolError as exc:
        raise ProtocolError(f"{what}: {exc}") from None
    except Exception as exc:  # every other escape is malformed input, by contract
        raise ProtocolError(f"{what}: malformed ({type(exc).__name__}: {exc})") from exc


def decode_request(frame: bytes | bytearray | memoryview) -> Request:
    """Decodes one request frame (without its size prefix).

    Raises:
        ProtocolError: malformed frame; UnknownApi / UnsupportedVersion
            (subclasses) for keys and versions Mafka does not decode.
    """
    if len(frame) < 8:
        raise ProtocolError(f"request frame of {len(frame)} bytes is shorter than a header")
    api_key, version = _API_AND_VERSION.unpack_from(frame, 0)
    spec = spec_for(api_key)
    reader = FrameReader(frame)
    if not spec.supports(version):
        if api_key != API_VERSIONS_KEY or version < spec.decode[0]:
            raise UnsupportedVersion(api_key, version, *spec.decode)
        # Newer ApiVersions: read only up to client_id, as Kafka does.
        h = _parse(REQUEST_HEADERS[1], reader, "RequestHeader")
        header = RequestHeader(h.api_key, h.api_version, h.correlation_id, h.client_id, 2)
        return Request(header, spec, None)
    hv = spec.request_header_version(version)
    h = _parse(REQUEST_HEADERS[hv], reader, f"{spec.name} v{version} request header")
    header = RequestHeader(
        h.api_key,
        h.api_version,
        h.correlation_id,
        h.get("client_id"),
        hv,
        h.get("tagged_fields") or {},
    )
    what = f"{spec.name} v{version} request"
    body = _parse(spec.request.struct(version), reader, what)
    # Bytes after the body are ignored, as Kafka's RequestContext ignores them: librdkafka 2.x
    # sends its all-topics Metadata v10+ request with a 4-byte array-count placeholder there.
    return Request(header, spec, body)


def _no_trailing(reader: FrameReader, what: str) -> None:
    left = reader.size - reader.tell()
    if left:
        raise ProtocolError(f"{what}: {left} trailing bytes after the body")


def unsupported_api_versions_body() -> dict[str, Any]:
    """The v0 body answering an ApiVersions request newer than Mafka's (error 35)."""
    lo, hi = API_SPECS[API_VERSIONS_KEY].advertised or (0, 0)
    return {
        "error_code": UNSUPPORTED_VERSION,
        "api_keys": [{"api_key": API_VERSIONS_KEY, "min_version": lo, "max_version": hi}],
    }


def _response_version(header: RequestHeader) -> tuple[ApiSpec, int]:
    """The spec and body version of the response to *header* (v0 for a too-new ApiVersions)."""
    spec = API_SPECS[header.api_key]
    version = header.api_version
    if not spec.supports(version):
        if header.api_key != API_VERSIONS_KEY:
            raise UnsupportedVersion(header.api_key, version, *spec.decode)
        version = 0
    return spec, version


def encode_response_chunks(header: RequestHeader, body: Any) -> list[Any]:
    """Like :func:`encode_response`, as chunks, for bodies holding file regions.

    A ``records`` field may hold any object with ``__len__`` that is not
    bytes-like (a :class:`mafka.log.segment.FileRegion`): it is passed
    through as its own chunk, to be sent with ``os.sendfile``.  Adjacent
    byte chunks are joined, so the result alternates bytes and regions.
    """
    spec, version = _response_version(header)
    hv = spec.response_header_version(version)
    out = ChunkWriter()
    out.write(b"")
    RESPONSE_HEADERS[hv].build_stream({"correlation_id": header.correlation_id}, out)
    spec.response.struct(version).build_stream(body, out)
    chunks = out.chunks
    chunks[0] = _SIZE.pack(sum(map(len, chunks)))
    merged: list[Any] = []
    run: list[Any] = []
    for c in chunks:
        if isinstance(c, (bytes, bytearray, memoryview)):
            run.append(c)
        else:
            if run:
                merged.append(b"".join(run))
                run = []
            merged.append(c)
    if run:
        merged.append(b"".join(run))
    return merged


def _framed(parts: list[tuple[Any, Any]]) -> bytes:
    out = ChunkWriter()
    out.write(b"")  # the size prefix, filled in below
    for compiled, obj in parts:
        compiled.build_stream(obj, out)
    chunks = out.chunks
    chunks[0] = _SIZE.pack(sum(map(len, chunks)))
    return b"".join(chunks)


def encode_response(header: RequestHeader, body: Any) -> bytes:
    """Encodes a response to *header*'s request, size prefix included.

    *body* is a dict (or Body) keyed by field name; missing fields take
    their defaults.  An ApiVersions reply to a request newer than Mafka's is
    encoded as v0, with response header v0 like every ApiVersions response.
    """
    spec, version = _response_version(header)
    hv = spec.response_header_version(version)
    return _framed(
        [
            (RESPONSE_HEADERS[hv], {"correlation_id": header.correlation_id}),
            (spec.response.struct(version), body),
        ]
    )


def encode_request(
    api_key: int, version: int, correlation_id: int, client_id: str | None, body: Any
) -> bytes:
    """Encodes a request, size prefix included (client side)."""
    spec = spec_for(api_key, version)
    hv = spec.request_header_version(version)
    header = {
        "api_key": api_key,
        "api_version": version,
        "correlation_id": correlation_id,
        "client_id": client_id,
    }
    return _framed([(REQUEST_HEADERS[hv], header), (spec.request.struct(version), body)])


def decode_response(api_key: int, version: int, frame: bytes | bytearray | memoryview) -> tuple[int, Body]:
    """Decodes a response frame to (correlation_id, body) (client side).

    Raises:
        ProtocolError: malformed frame.
    """
    spec = spec_for(api_key, version)
    reader = FrameReader(frame)
    hv = spec.response_header_version(version)
    h = _parse(RESPONSE_HEADERS[hv], reader, f"{spec.name} v{version} response header")
    what = f"{spec.name} v{version} response"
    body = _parse(spec.response.struct(version), reader, what)
    _no_trailing(reader, what)
    return h.correlation_id, body


def decode_body(message: Message, version: int, data: bytes | bytearray | memoryview) -> Body:
    """Decodes a bare request or response body (no header, no size prefix).

    Raises:
        ProtocolError: malformed or trailing bytes.
    """
    reader = FrameReader(data)
    what = f"{message.name} v{version}"
    body: Body = _parse(message.struct(version), reader, what)
    _no_trailing(reader, what)
    return body


def encode_body(message: Message, version: int, body: Any) -> bytes:
    """Encodes a bare body; missing fields take their defaults."""
    out = ChunkWriter()
    message.struct(version).build_stream(body, out)
    return out.getvalue()
