"""KIP-932's share group APIs at the group coordinator: ShareGroupHeartbeat (76) and ShareGroupDescribe (77).

Each request becomes a call on the broker's :class:`~mafka.group.coordinator.GroupCoordinator`
(which holds the share groups of the ``__consumer_offsets`` partitions this broker leads); a
heartbeat is answered once the records it produced are written (a Deferred).

ACLs, as Kafka 4.2's ``KafkaApis`` checks them (a refusal is an error in the response):
ShareGroupHeartbeat needs Read on the group, ShareGroupDescribe Describe on each group, else
GROUP_AUTHORIZATION_FAILED; a ShareGroupHeartbeat naming subscribed topics needs Describe on every
one of them, else TOPIC_AUTHORIZATION_FAILED.
"""

from __future__ import annotations

from typing import Any

from twisted.internet import defer

from mafka.broker.authorized_operations import GROUP_OPERATIONS, NOT_PROVIDED
from mafka.broker.handler_authz import AdminAuthz
from mafka.broker.handlers.consumer_groups import (
    client_host,
    failed_group,
    heartbeat_response,
    subscribed_topics_described,
)
from mafka.errors import ErrorCode
from mafka.group.share.group_types import HeartbeatRequest, HeartbeatResponse
from mafka.security.acl import AclOperation, ResourceType

__all__ = ["handlers"]

SHARE_GROUP_HEARTBEAT, SHARE_GROUP_DESCRIBE = 76, 77


def handlers(broker: Any) -> dict[int, Any]:
    authz = AdminAuthz(broker)

    def coordinator() -> Any:
        return broker.group_service.checked_coordinator()

    def share_group_heartbeat(request: Any, connection: Any) -> defer.Deferred:
        body = request.body
        d: defer.Deferred = defer.Deferred()
        if not authz.allows(connection, AclOperation.READ, ResourceType.GROUP, body.group_id):
            d.callback(heartbeat_response(HeartbeatResponse(ErrorCode.GROUP_AUTHORIZATION_FAILED)))
            return d
        names = body.subscribed_topic_names
        if not subscribed_topics_described(authz, connection, names):
            d.callback(heartbeat_response(HeartbeatResponse(ErrorCode.TOPIC_AUTHORIZATION_FAILED)))
            return d
        hb = HeartbeatRequest(
            group_id=body.group_id,
            member_id=body.member_id,
            member_epoch=body.member_epoch,
            rack_id=body.rack_id,
            subscribed_topic_names=None if names is None else list(names),
            client_id=request.header.client_id or "",
            client_host=client_host(connection),
        )
        coordinator().share_group_heartbeat(hb, lambda r: d.callback(heartbeat_response(r)))
        return d

    def share_group_describe(request: Any, connection: Any) -> dict[str, Any]:
        body = request.body
        groups = []
        for group_id in body.group_ids:
            if not authz.allows(connection, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
                groups.append(failed_group(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED, None))
                continue
            error, entry = coordinator().describe_share_group(group_id)
            if entry is None:
                message = f"Group {group_id} is not a share group." if error == ErrorCode.GROUP_ID_NOT_FOUND else None
                groups.append(failed_group(group_id, error, message))
                continue
            d = entry.group.describe(broker.group_service.topics_for_groups())
            groups.append({
                "error_code": ErrorCode.NONE,
                "error_message": None,
                "group_id": d.group_id,
                "group_state": d.group_state,
                "group_epoch": d.group_epoch,
                "assignment_epoch": d.assignment_epoch,
                "assignor_name": d.assignor_name,
                "members": [
                    {
                        "member_id": m.member_id,
                        "rack_id": m.rack_id,
                        "member_epoch": m.member_epoch,
                        "client_id": m.client_id,
                        "client_host": m.client_host,
                        "subscribed_topic_names": list(m.subscribed_topic_names),
                        "assignment": {"topic_partitions": [
                            {"topic_id": t.topic_id, "topic_name": t.topic_name, "partitions": list(t.partitions)}
                            for t in m.assignment
                        ]},
                    }
                    for m in d.members
                ],
                "authorized_operations": (
                    authz.operations(connection, ResourceType.GROUP, group_id, GROUP_OPERATIONS)
                    if body.include_authorized_operations else NOT_PROVIDED
                ),
            })
        return {"throttle_time_ms": 0, "groups": groups}

    return {SHARE_GROUP_HEARTBEAT: share_group_heartbeat, SHARE_GROUP_DESCRIBE: share_group_describe}

