"""FindCoordinator (10): the group coordinator is the leader of the group's ``__consumer_offsets`` partition.

The partition is ``Utils.abs(groupId.hashCode) % offsets.topic.num.partitions``.
The first request creates ``__consumer_offsets`` (Kafka's ``createInternalTopic``)
and, like every request until that partition has a live leader, gets
COORDINATOR_NOT_AVAILABLE; clients retry.  The coordinator's address is its
endpoint on the listener the request came in on.  Transaction coordinators
(key_type 1) do not exist yet: COORDINATOR_NOT_AVAILABLE; any other key type
is INVALID_REQUEST.

The broker provides ``group_service`` (``coordinator.partition_for``,
``ensure_offsets_topic()``) and ``metadata_cache``.
"""

from __future__ import annotations

from typing import Any

from mafka.errors import ErrorCode
from mafka.topics import GROUP_METADATA_TOPIC

FIND_COORDINATOR = 10
GROUP_KEY, TRANSACTION_KEY = 0, 1

_MESSAGES = {
    ErrorCode.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
    ErrorCode.INVALID_REQUEST: "Unknown coordinator key type.",
    ErrorCode.INVALID_GROUP_ID: "The configured groupId is invalid.",
}


def _error(code: ErrorCode) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": code, "error_message": _MESSAGES[code], "node_id": -1, "host": "", "port": -1}


def handlers(broker: Any) -> dict[int, Any]:
    def find_coordinator(request: Any, connection: Any) -> dict[str, Any]:
        body = request.body
        key_type = body.key_type if request.header.api_version >= 1 else GROUP_KEY
        if key_type == TRANSACTION_KEY:
            return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        if key_type != GROUP_KEY:
            return _error(ErrorCode.INVALID_REQUEST)
        if body.key is None:
            return _error(ErrorCode.INVALID_GROUP_ID)
        service = broker.group_service
        cache = broker.metadata_cache
        if not cache.has_topic(GROUP_METADATA_TOPIC):
            service.ensure_offsets_topic()
            return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        info = cache.partition(GROUP_METADATA_TOPIC, service.coordinator.partition_for(body.key))
        endpoint = cache.endpoint(info.leader, connection.listener) if info is not None and info.leader >= 0 else None
        if endpoint is None:
            return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        return {
            "throttle_time_ms": 0,
            "error_code": ErrorCode.NONE,
            "error_message": None,
            "node_id": info.leader,
            "host": endpoint[0],
            "port": endpoint[1],
        }

    return {FIND_COORDINATOR: find_coordinator}
