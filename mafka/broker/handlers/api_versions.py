"""ApiVersions (18): the advertised ranges, straight from the wire registry, as the listener can serve them.

SaslHandshake and SaslAuthenticate are advertised only on SASL listeners
(``SASL_PLAINTEXT``, ``SASL_SSL``): elsewhere a client must not be led to
try them.
"""

from __future__ import annotations

from typing import Any

from mafka.wire.registry import api_versions_entries

API_VERSIONS = 18
#: SaslHandshake, SaslAuthenticate.
SASL_APIS = frozenset({17, 36})


def handlers(broker: Any) -> dict[int, Any]:
    entries = api_versions_entries()
    without_sasl = [e for e in entries if e["api_key"] not in SASL_APIS]

    def api_versions(request: Any, connection: Any) -> dict[str, Any]:
        sasl = getattr(connection, "security_protocol", "PLAINTEXT").startswith("SASL_")
        return {"error_code": 0, "api_keys": entries if sasl else without_sasl, "throttle_time_ms": 0}

    return {API_VERSIONS: api_versions}
