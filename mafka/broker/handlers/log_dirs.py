"""AlterReplicaLogDirs (34, v1–2) and DescribeLogDirs (35, v1–4): this broker's log dirs.

The logic is :mod:`mafka.broker.log_dir_mover`'s; file-system work (stat
calls, creating future logs) runs in a worker thread.  DescribeLogDirs
answers the top-level error code (v3+) and each dir's volume size and
usable space (v4+).

ACLs (Kafka 2.8): AlterReplicaLogDirs needs Alter on the cluster, else every
partition named answers CLUSTER_AUTHORIZATION_FAILED (one result per dir and
topic, Kafka's ``getErrorResponse``) and nothing moves.  DescribeLogDirs needs
Describe on the cluster, else no dirs — with, from v3, the top-level
CLUSTER_AUTHORIZATION_FAILED that Kafka 3.2 added (2.8's v0–2 have no such
field; an empty answer there).
"""

from __future__ import annotations

from typing import Any

from mafka.broker.handler_authz import AdminAuthz
from mafka.broker.log_dir_mover import describe_log_dirs
from mafka.errors import ErrorCode
from mafka.security.acl import AclOperation

ALTER_REPLICA_LOG_DIRS = 34
DESCRIBE_LOG_DIRS = 35


def handlers(broker: Any) -> dict[int, Any]:
    authz = AdminAuthz(broker)

    def describe(request: Any, connection: Any) -> Any:
        if not authz.allows_cluster(connection, AclOperation.DESCRIBE):
            return {"throttle_time_ms": 0, "error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED, "results": []}
        topics = request.body.topics
        wanted = None if topics is None else {(t.topic, p) for t in topics for p in t.partitions}
        rm = broker.replica_manager
        hws = {tp: p.high_watermark for tp, p in list(rm.partitions.items())}
        d = broker.run_blocking(describe_log_dirs, broker.log_manager, wanted, hws)
        return d.addCallback(
            lambda results: {"throttle_time_ms": 0, "error_code": 0, "results": results}
        )

    def alter(request: Any, connection: Any) -> Any:
        if not authz.allows_cluster(connection, AclOperation.ALTER):
            code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            return {
                "throttle_time_ms": 0,
                "results": [
                    {"topic_name": t.name, "partitions": [{"partition_index": p, "error_code": code} for p in t.partitions]}
                    for entry in request.body.dirs
                    for t in entry.topics
                ],
            }
        assignments: dict[tuple[str, int], str] = {}
        for entry in request.body.dirs:
            for t in entry.topics:
                for p in t.partitions:
                    assignments[(t.name, p)] = entry.path
        cache = broker.metadata_cache

        def known(tp: tuple[str, int]) -> bool:
            return cache.partition(*tp) is not None

        d = broker.log_dir_mover.alter_replica_log_dirs(assignments, known)

        def respond(errors: dict[tuple[str, int], int]) -> dict[str, Any]:
            by_topic: dict[str, list[dict[str, int]]] = {}
            for topic, index in assignments:  # request order
                code = errors[(topic, index)]
                by_topic.setdefault(topic, []).append(
                    {"partition_index": index, "error_code": code}
                )
            return {
                "throttle_time_ms": 0,
                "results": [{"topic_name": t, "partitions": ps} for t, ps in by_topic.items()],
            }

        return d.addCallback(respond)

    return {ALTER_REPLICA_LOG_DIRS: alter, DESCRIBE_LOG_DIRS: describe}
