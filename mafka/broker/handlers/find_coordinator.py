"""FindCoordinator (10): the leader of the key's partition of ``__consumer_offsets`` or ``__transaction_state``.

A group (key_type 0) maps to partition ``Utils.abs(groupId.hashCode) %
offsets.topic.num.partitions`` of ``__consumer_offsets``; a transactional id
(key_type 1) to ``Utils.abs(transactionalId.hashCode) %
transaction.state.log.num.partitions`` of ``__transaction_state``.  The first
request creates the internal topic (Kafka's ``getOrCreateInternalTopic``)
and, like every request until that partition has a live leader, gets
COORDINATOR_NOT_AVAILABLE; clients retry.  The coordinator's address is its
endpoint on the listener the request came in on.  Any other key type is
INVALID_REQUEST.

ACLs (Kafka 2.8): a group key needs Describe on the group, else
GROUP_AUTHORIZATION_FAILED; a transactional id needs Describe on the
TransactionalId, else TRANSACTIONAL_ID_AUTHORIZATION_FAILED.  The check comes
first, as in Kafka: a refused principal learns nothing and does not make the
broker create the internal topic.  (Only a null group key, which names no
resource, is refused as INVALID_GROUP_ID before it.)  Mafka decodes v0–2, so
there is no batched (v4) form to check.

The broker provides ``group_service`` and ``transaction_service`` (each with
``coordinator.partition_for`` and an ``ensure_…_topic()``) and ``metadata_cache``.
"""

from __future__ import annotations

from typing import Any

from mafka.broker.handler_authz import AdminAuthz
from mafka.errors import ErrorCode
from mafka.security.acl import AclOperation, ResourceType
from mafka.topics import GROUP_METADATA_TOPIC, TRANSACTION_STATE_TOPIC

FIND_COORDINATOR = 10
GROUP_KEY, TRANSACTION_KEY = 0, 1

_MESSAGES = {
    ErrorCode.COORDINATOR_NOT_AVAILABLE: "The coordinator is not available.",
    ErrorCode.INVALID_REQUEST: "Unknown coordinator key type, or an empty transactional id.",
    ErrorCode.INVALID_GROUP_ID: "The configured groupId is invalid.",
}


#: The ACL resource of each key type, and the error of a refused Describe on it.
_KEY_RESOURCES = {
    GROUP_KEY: (ResourceType.GROUP, ErrorCode.GROUP_AUTHORIZATION_FAILED),
    TRANSACTION_KEY: (ResourceType.TRANSACTIONAL_ID, ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED),
}


def _error(code: ErrorCode) -> dict[str, Any]:
    # Kafka's FindCoordinatorResponse.prepareResponse: the error's own message.
    message = _MESSAGES.get(code, code.description)
    return {"throttle_time_ms": 0, "error_code": code, "error_message": message, "node_id": -1, "host": "", "port": -1}


def handlers(broker: Any) -> dict[int, Any]:
    authz = AdminAuthz(broker)

    def find_coordinator(request: Any, connection: Any) -> dict[str, Any]:
        body = request.body
        key_type = body.key_type if request.header.api_version >= 1 else GROUP_KEY
        if key_type in _KEY_RESOURCES and body.key is not None:
            resource_type, refused = _KEY_RESOURCES[key_type]
            if not authz.allows(connection, AclOperation.DESCRIBE, resource_type, body.key):
                return _error(refused)
        if key_type == TRANSACTION_KEY:
            if not body.key:
                return _error(ErrorCode.INVALID_REQUEST)
            service, topic, ensure = broker.transaction_service, TRANSACTION_STATE_TOPIC, "ensure_transaction_topic"
        elif key_type == GROUP_KEY:
            if body.key is None:
                return _error(ErrorCode.INVALID_GROUP_ID)
            service, topic, ensure = broker.group_service, GROUP_METADATA_TOPIC, "ensure_offsets_topic"
        else:
            return _error(ErrorCode.INVALID_REQUEST)
        cache = broker.metadata_cache
        if not cache.has_topic(topic):
            getattr(service, ensure)()
            return _error(ErrorCode.COORDINATOR_NOT_AVAILABLE)
        info = cache.partition(topic, service.coordinator.partition_for(body.key))
        endpoint = (cache.endpoint(info.leader, connection.listener)
                    if info is not None and info.leader >= 0 and info.leader not in cache.unreachable else None)
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
