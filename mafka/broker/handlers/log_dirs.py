"""AlterReplicaLogDirs (34, v1–2) and DescribeLogDirs (35, v1–4): this broker's log dirs.

The logic is :mod:`mafka.broker.log_dir_mover`'s; file-system work (stat
calls, creating future logs) runs in a worker thread.  DescribeLogDirs
answers the top-level error code 0 (v3+; no authorizer here) and each dir's
volume size and usable space (v4+).
"""

from __future__ import annotations

from typing import Any

from twisted.internet import defer

from mafka.broker.log_dir_mover import describe_log_dirs

ALTER_REPLICA_LOG_DIRS = 34
DESCRIBE_LOG_DIRS = 35


def handlers(broker: Any) -> dict[int, Any]:
    def describe(request: Any, connection: Any) -> defer.Deferred:
        topics = request.body.topics
        wanted = None if topics is None else {(t.topic, p) for t in topics for p in t.partitions}
        rm = broker.replica_manager
        hws = {tp: p.high_watermark for tp, p in list(rm.partitions.items())}
        d = broker.run_blocking(describe_log_dirs, broker.log_manager, wanted, hws)
        return d.addCallback(
            lambda results: {"throttle_time_ms": 0, "error_code": 0, "results": results}
        )

    def alter(request: Any, connection: Any) -> defer.Deferred:
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
