"""KIP-848's consumer group APIs: ConsumerGroupHeartbeat (68) and ConsumerGroupDescribe (69).

Each request becomes a call on the broker's
:class:`~mafka.group.coordinator.GroupCoordinator` (which holds the ``consumer`` groups of
the ``__consumer_offsets`` partitions this broker leads); a heartbeat is answered once the
records it produced are written (a Deferred).

ACLs, as Kafka 4's ``KafkaApis`` checks them (a refusal is an error in the response):

* ConsumerGroupHeartbeat: Read on the group, else GROUP_AUTHORIZATION_FAILED; then Describe on
  every subscribed topic name, else TOPIC_AUTHORIZATION_FAILED (the coordinator is not asked).
* ConsumerGroupDescribe: Describe on each group, else GROUP_AUTHORIZATION_FAILED for it;
  ``authorized_operations`` when asked for.  Topic names in assignments come from the
  metadata cache (a topic deleted meanwhile is left out, as Kafka does).
"""

from __future__ import annotations

from typing import Any

from twisted.internet import defer

from mafka.broker.authorized_operations import GROUP_OPERATIONS, NOT_PROVIDED
from mafka.broker.handler_authz import AdminAuthz
from mafka.errors import ErrorCode
from mafka.group.consumer.group_types import HeartbeatRequest, HeartbeatResponse
from mafka.security.acl import AclOperation, ResourceType

__all__ = ["handlers"]

CONSUMER_GROUP_HEARTBEAT, CONSUMER_GROUP_DESCRIBE = 68, 69
#: ConsumerGroupDescribe v1's member type (KIP-1099): 0 = a classic member of an upgraded group,
#: 1 = the member uses the consumer protocol.
_MEMBER_TYPE_CLASSIC, _MEMBER_TYPE_CONSUMER = 0, 1


def client_host(connection: Any) -> str:
    """Kafka's clientHost: ``InetAddress.toString`` of the peer, e.g. ``/127.0.0.1``."""
    return "/" + connection.peer.rsplit(":", 1)[0]


def heartbeat_request(body: Any, version: int, client_id: str, client_host: str) -> HeartbeatRequest:
    """The wire request as the group sees it (absent optional fields are None)."""
    owned = body.topic_partitions
    return HeartbeatRequest(
        group_id=body.group_id,
        member_id=body.member_id,
        member_epoch=body.member_epoch,
        instance_id=body.instance_id,
        rack_id=body.rack_id,
        rebalance_timeout_ms=body.rebalance_timeout_ms,
        subscribed_topic_names=None if body.subscribed_topic_names is None else list(body.subscribed_topic_names),
        # v0 has no regex field (decoded as ""): only v1's is read.
        subscribed_topic_regex=body.subscribed_topic_regex if version >= 1 else None,
        server_assignor=body.server_assignor,
        topic_partitions=None if owned is None else {bytes(t.topic_id): list(t.partitions) for t in owned},
        client_id=client_id,
        client_host=client_host,
        api_version=version,
    )


def heartbeat_response(r: Any) -> dict[str, Any]:
    """A ConsumerGroupHeartbeat or ShareGroupHeartbeat response body (the two share their fields)."""
    assignment = None
    if r.assignment is not None:
        assignment = {
            "topic_partitions": [
                {"topic_id": topic_id, "partitions": sorted(parts)} for topic_id, parts in sorted(r.assignment.items())
            ]
        }
    return {
        "throttle_time_ms": 0,
        "error_code": int(r.error_code),
        "error_message": r.error_message,
        "member_id": r.member_id,
        "member_epoch": r.member_epoch,
        "heartbeat_interval_ms": r.heartbeat_interval_ms,
        "assignment": assignment,
    }


def subscribed_topics_described(authz: AdminAuthz, connection: Any, names: Any) -> bool:
    """Kafka 4's ``handleConsumerGroupHeartbeat`` / ``handleShareGroupHeartbeat`` check: a heartbeat
    naming subscribed topics needs Describe on every one of them (clients must not learn about
    topics they may not describe); no names (unchanged subscription) needs nothing."""
    if not names:
        return True
    wanted = set(names)
    return len(authz.allowed_names(connection, AclOperation.DESCRIBE, ResourceType.TOPIC, wanted)) == len(wanted)


def handlers(broker: Any) -> dict[int, Any]:
    authz = AdminAuthz(broker)

    def coordinator() -> Any:
        return broker.group_service.checked_coordinator()

    def consumer_group_heartbeat(request: Any, connection: Any) -> defer.Deferred:
        body = request.body
        d: defer.Deferred = defer.Deferred()
        if not authz.allows(connection, AclOperation.READ, ResourceType.GROUP, body.group_id):
            d.callback(heartbeat_response(HeartbeatResponse(ErrorCode.GROUP_AUTHORIZATION_FAILED)))
            return d
        if not subscribed_topics_described(authz, connection, body.subscribed_topic_names):
            d.callback(heartbeat_response(HeartbeatResponse(ErrorCode.TOPIC_AUTHORIZATION_FAILED)))
            return d
        hb = heartbeat_request(body, request.header.api_version, request.header.client_id or "",
                               client_host(connection))
        coordinator().consumer_group_heartbeat(hb, lambda r: d.callback(heartbeat_response(r)))
        return d

    def topic_partitions(assignment: Any) -> dict[str, Any]:
        cache = broker.metadata_cache
        out = []
        for topic_id, parts in sorted(assignment.items()):
            name = cache.topic_name(topic_id)
            if name is not None:
                out.append({"topic_id": topic_id, "topic_name": name, "partitions": sorted(parts)})
        return {"topic_partitions": out}

    def consumer_group_describe(request: Any, connection: Any) -> dict[str, Any]:
        body = request.body
        version = request.header.api_version
        groups = []
        for group_id in body.group_ids:
            if not authz.allows(connection, AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
                groups.append(failed_group(group_id, ErrorCode.GROUP_AUTHORIZATION_FAILED, None))
                continue
            error, entry = coordinator().describe_consumer_group(group_id)
            if entry is None:
                message = f"Group {group_id} is not a consumer group." if error == ErrorCode.GROUP_ID_NOT_FOUND else None
                groups.append(failed_group(group_id, error, message))
                continue
            group = entry.group
            members = []
            for member in group.members.values():
                members.append({
                    "member_id": member.member_id,
                    "instance_id": member.instance_id,
                    "rack_id": member.rack_id,
                    "member_epoch": member.member_epoch,
                    "client_id": member.client_id,
                    "client_host": member.client_host,
                    "subscribed_topic_names": sorted(member.subscribed_topic_names),
                    "subscribed_topic_regex": member.subscribed_topic_regex,
                    "assignment": topic_partitions(member.assigned_partitions),
                    "target_assignment": topic_partitions(group.target_assignment.get(member.member_id, {})),
                    "member_type": (
                        (_MEMBER_TYPE_CLASSIC if member.uses_classic_protocol else _MEMBER_TYPE_CONSUMER)
                        if version >= 1 else -1
                    ),
                })
            groups.append({
                "error_code": ErrorCode.NONE,
                "error_message": None,
                "group_id": group_id,
                "group_state": str(group.state),
                "group_epoch": group.group_epoch,
                "assignment_epoch": group.assignment_epoch,
                "assignor_name": group.preferred_assignor(),
                "members": members,
                "authorized_operations": (
                    authz.operations(connection, ResourceType.GROUP, group_id, GROUP_OPERATIONS)
                    if body.include_authorized_operations else NOT_PROVIDED
                ),
            })
        return {"throttle_time_ms": 0, "groups": groups}

    return {
        CONSUMER_GROUP_HEARTBEAT: consumer_group_heartbeat,
        CONSUMER_GROUP_DESCRIBE: consumer_group_describe,
    }


def failed_group(group_id: str, error: int, message: str | None) -> dict[str, Any]:
    return {
        "error_code": error,
        "error_message": message,
        "group_id": group_id,
        "group_state": "Dead" if error == ErrorCode.GROUP_ID_NOT_FOUND else "",
        "group_epoch": -1,
        "assignment_epoch": -1,
        "assignor_name": "",
        "members": [],
        "authorized_operations": NOT_PROVIDED,
    }
