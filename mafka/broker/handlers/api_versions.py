"""ApiVersions (18): the advertised ranges, straight from the wire registry."""

from __future__ import annotations

from typing import Any

from mafka.wire.registry import api_versions_entries

API_VERSIONS = 18


def handlers(broker: Any) -> dict[int, Any]:
    entries = api_versions_entries()

    def api_versions(request: Any, connection: Any) -> dict[str, Any]:
        return {"error_code": 0, "api_keys": entries, "throttle_time_ms": 0}

    return {API_VERSIONS: api_versions}
