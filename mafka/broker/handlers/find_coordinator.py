"""FindCoordinator (10): no group or transaction coordinator runs yet, so COORDINATOR_NOT_AVAILABLE.

That is Kafka's own answer while ``__consumer_offsets`` is not ready: group
clients retry, and consumers that assign partitions themselves keep
fetching.  The group coordinator (a later issue) replaces this module.
"""

from __future__ import annotations

from typing import Any

from mafka.errors import ErrorCode

FIND_COORDINATOR = 10


def handlers(broker: Any) -> dict[int, Any]:
    def find_coordinator(request: Any, connection: Any) -> dict[str, Any]:
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.COORDINATOR_NOT_AVAILABLE,
            "error_message": "The coordinator is not available.",
            "node_id": -1,
            "host": "",
            "port": -1,
        }

    return {FIND_COORDINATOR: find_coordinator}
