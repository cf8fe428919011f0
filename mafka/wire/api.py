"""One Kafka API: its key, its version ranges and its request/response schemas.

Each module of :mod:`mafka.wire.apis` defines one :class:`ApiSpec` named
``SPEC``; :mod:`mafka.wire.registry` collects them.  The ranges follow
``shared/reference/kafka-protocol.md`` §2.3:

* ``advertised`` is what ApiVersions announces (from 0 where old librdkafka
  probes low versions);
* ``decode`` is what Mafka parses; a request below it is refused by closing
  the connection, as Kafka refuses disabled versions;
* ``flexible`` is Kafka's first flexible version (KIP-482).
"""

from __future__ import annotations

from dataclasses import dataclass

from .schema import Field, Message

__all__ = ["ApiSpec", "api"]


@dataclass(frozen=True, eq=False)
class ApiSpec:
    """A Kafka API as Mafka speaks it.

    Attributes:
        key: the api key.
        name: Kafka's name (``"Produce"``).
        advertised: (min, max) announced in ApiVersions, or None for the
            inter-broker APIs that brokers use without announcing.
        decode: (min, max) versions parsed and answered.
        request: the request schema.
        response: the response schema.
    """

    key: int
    name: str
    advertised: tuple[int, int] | None
    decode: tuple[int, int]
    request: Message
    response: Message

    def supports(self, version: int) -> bool:
        return self.decode[0] <= version <= self.decode[1]

    def compile(self) -> None:
        """Compiles the request and response structs of every decode version now.

        Each struct is otherwise compiled on its first use; a broker compiles
        all of them at start-up so that no request waits for it.
        """
        self.request.compile_all(*self.decode)
        self.response.compile_all(*self.decode)

    def request_header_version(self, version: int) -> int:
        """Request header v2 for flexible versions, else v1 (v0 only for ControlledShutdown v0)."""
        if self.request.is_flexible(version):
            return 2
        if self.key == 7 and version == 0:
            return 0
        return 1

    def response_header_version(self, version: int) -> int:
        """Response header v1 for flexible versions; ApiVersions always uses v0 (KIP-511)."""
        if self.key == 18:
            return 0
        return 1 if self.response.is_flexible(version) else 0


def api(
    key: int,
    name: str,
    *,
    advertised: tuple[int, int] | None,
    decode: tuple[int, int],
    flexible: str,
    request: list[Field],
    response: list[Field],
) -> ApiSpec:
    """Builds an :class:`ApiSpec`; its structs are compiled on first use (or by :meth:`ApiSpec.compile`).

    Args:
        flexible: Kafka's flexible range, e.g. ``"9+"`` (``"none"`` if never).
        request: request fields, valid over the decode range.
        response: response fields, valid over the decode range.
    """
    lo, hi = decode
    valid = f"{lo}-{hi}"
    req = Message(f"{name}Request", request, valid=valid, flexible=flexible)
    resp = Message(f"{name}Response", response, valid=valid, flexible=flexible)
    return ApiSpec(key, name, advertised, decode, req, resp)
