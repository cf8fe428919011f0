"""Request header v0–v2 and response header v0–v1 (Kafka's RequestHeader.json, ResponseHeader.json).

* request v0: api_key, api_version, correlation_id (only ControlledShutdown v0);
* request v1: + client_id, a NULLABLE_STRING with an int16 length;
* request v2: + tagged fields — client_id keeps its int16 length;
* response v0: correlation_id (also every ApiVersions response, KIP-511);
* response v1: + tagged fields.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from construct import Construct

from .primitives import Fixed, KStruct, String, TaggedFields

__all__ = ["RequestHeader", "REQUEST_HEADERS", "RESPONSE_HEADERS"]


@dataclass(frozen=True, slots=True)
class RequestHeader:
    """A decoded request header.

    Attributes:
        api_key, api_version, correlation_id, client_id: as on the wire.
        header_version: 0, 1 or 2.
        tagged_fields: raw tagged fields of a v2 header.
    """

    api_key: int
    api_version: int
    correlation_id: int
    client_id: str | None = None
    header_version: int = 1
    tagged_fields: dict[int, bytes] = field(default_factory=dict)


def _request_header(version: int) -> Construct:
    fields = [
        "api_key" / Fixed("int16", "RequestHeader.api_key"),
        "api_version" / Fixed("int16", "RequestHeader.api_version"),
        "correlation_id" / Fixed("int32", "RequestHeader.correlation_id"),
    ]
    if version >= 1:
        fields.append("client_id" / String("RequestHeader.client_id", compact=False, nullable=True))
    if version >= 2:
        fields.append("tagged_fields" / TaggedFields("RequestHeader.tagged_fields"))
    return KStruct(*fields).compile()


def _response_header(version: int) -> Construct:
    fields = ["correlation_id" / Fixed("int32", "ResponseHeader.correlation_id")]
    if version >= 1:
        fields.append("tagged_fields" / TaggedFields("ResponseHeader.tagged_fields"))
    return KStruct(*fields).compile()


#: Compiled request headers by header version.
REQUEST_HEADERS = {v: _request_header(v) for v in (0, 1, 2)}
#: Compiled response headers by header version.
RESPONSE_HEADERS = {v: _response_header(v) for v in (0, 1)}
