"""The registry: api key → :class:`~mafka.wire.api.ApiSpec`, and ApiVersions derived from it.

The modules of :mod:`mafka.wire.apis` are discovered and imported here.  Their
(api, version) structs are compiled on first use, which keeps a command-line
tool's start quick (compiling all of them takes a few hundred milliseconds);
a broker calls :func:`compile_all` as it starts.  There is no second
hand-kept table of versions: the ApiVersions response body is computed from
the specs' ``advertised`` ranges.
"""

from __future__ import annotations

import importlib
import pkgutil
from types import MappingProxyType

from . import apis
from .api import ApiSpec
from .errors import UnknownApi, UnsupportedVersion

__all__ = [
    "API_SPECS",
    "MAFKA_API_KEYS_START",
    "spec_for",
    "api_versions_entries",
    "API_VERSIONS_KEY",
    "is_mafka_api",
    "compile_all",
]

API_VERSIONS_KEY = 18


def _discover() -> dict[int, ApiSpec]:
    found: dict[int, ApiSpec] = {}
    for info in sorted(pkgutil.iter_modules(apis.__path__), key=lambda i: i.name):
        module = importlib.import_module(f"{apis.__name__}.{info.name}")
        spec: ApiSpec = module.SPEC
        if spec.key in found:
            raise RuntimeError(f"api key {spec.key} defined twice ({found[spec.key].name}, {spec.name})")
        found[spec.key] = spec
    return dict(sorted(found.items()))


#: Every API Mafka speaks, by api key.
API_SPECS: MappingProxyType[int, ApiSpec] = MappingProxyType(_discover())


def compile_all() -> None:
    """Compiles every struct of every API now (a broker's start-up; idempotent)."""
    for spec in API_SPECS.values():
        spec.compile()


def spec_for(api_key: int, version: int | None = None) -> ApiSpec:
    """The spec for *api_key*, optionally checking that *version* is decodable.

    Raises:
        UnknownApi: no such api key.
        UnsupportedVersion: *version* is outside the decode range.
    """
    try:
        spec = API_SPECS[api_key]
    except KeyError:
        raise UnknownApi(api_key) from None
    if version is not None and not spec.supports(version):
        raise UnsupportedVersion(api_key, version, *spec.decode)
    return spec


def api_versions_entries() -> list[dict[str, int]]:
    """The ``api_keys`` array of an ApiVersions response, from the advertised ranges."""
    return [
        {"api_key": spec.key, "min_version": spec.advertised[0], "max_version": spec.advertised[1]}
        for spec in API_SPECS.values()
        if spec.advertised is not None
    ]


#: Mafka's own APIs (MafkaDescribeDelayed, MafkaEndHalf, …) take keys from here up: far from Kafka's,
#: never advertised, with no Kafka schema to conform to.
MAFKA_API_KEYS_START = 10000


def is_mafka_api(key: int) -> bool:
    """True for an API key of Mafka's own (not Kafka's)."""
    return key >= MAFKA_API_KEYS_START
