"""ControlledShutdown (7, v2): a broker asks the controller to move leadership off it before it stops.

Answered only by the active controller (else STALE_CONTROLLER_EPOCH, as
Kafka's non-controllers answer); a broker epoch older than the controller's
record → STALE_BROKER_EPOCH.  The reply lists the partitions the broker
still leads; it retries until none are left.

ACL (Kafka 2.8, checked first): ClusterAction on the cluster, else
CLUSTER_AUTHORIZATION_FAILED and the controller is not asked — only brokers
(super users, or principals granted ClusterAction) may move leadership.
"""

from __future__ import annotations

from typing import Any

from twisted.internet import defer

from mafka.broker.handler_authz import AdminAuthz
from mafka.errors import ErrorCode
from mafka.security.acl import AclOperation

CONTROLLED_SHUTDOWN = 7


def handlers(broker: Any) -> dict[int, Any]:
    authz = AdminAuthz(broker)

    def controlled_shutdown(request: Any, connection: Any) -> Any:
        if not authz.allows_cluster(connection, AclOperation.CLUSTER_ACTION):
            return {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "remaining_partitions": []}
        controller = broker.controller
        if controller is None or not controller.is_active:
            return {"error_code": ErrorCode.STALE_CONTROLLER_EPOCH, "remaining_partitions": []}
        d = defer.maybeDeferred(controller.controlled_shutdown, request.body.broker_id, request.body.broker_epoch)

        def respond(result: tuple[int, list[tuple[str, int]]]) -> dict[str, Any]:
            error, remaining = result
            return {
                "error_code": error,
                "remaining_partitions": [{"topic_name": t, "partition_index": p} for t, p in remaining],
            }

        return d.addCallback(respond)

    return {CONTROLLED_SHUTDOWN: controlled_shutdown}
