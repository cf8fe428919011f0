"""Metadata (3): brokers, controller, cluster id and topic layout, from the metadata cache.

* v0: an empty topic list means every topic; v1+: null means every topic.
* Unknown topics are auto-created when ``auto.create.topics.enable`` is on
  and the request allows it (v4 ``allow_auto_topic_creation``, always before
  v4): the answer is LEADER_NOT_AVAILABLE until the controller has elected
  leaders, as Kafka answers; otherwise UNKNOWN_TOPIC_OR_PARTITION.
  Illegal names get INVALID_TOPIC_EXCEPTION.
* Brokers are the live brokers with an endpoint on the listener the request
  came in on, so each client sees the addresses of its own listener.

The broker passed to :func:`handlers` provides ``metadata_cache``,
``auto_create_topics`` (bool) and ``auto_create_topic(name)`` (fire and
forget; it logs its own failures).
"""

from __future__ import annotations

from typing import Any

from mafka.errors import ErrorCode
from mafka.topics import INTERNAL_TOPICS, is_valid_topic_name

METADATA = 3


def handlers(broker: Any) -> dict[int, Any]:
    def metadata(request: Any, connection: Any) -> dict[str, Any]:
        cache = broker.metadata_cache
        version = request.header.api_version
        body = request.body
        if body.topics is None or (version == 0 and not body.topics):
            requested = cache.topics()
        else:
            requested = list(dict.fromkeys(t.name for t in body.topics))
        topics = cache.topic_metadata([t for t in requested if cache.has_topic(t)], connection.listener, INTERNAL_TOPICS)
        allow_create = broker.auto_create_topics and (version < 4 or body.allow_auto_topic_creation)
        for name in requested:
            if cache.has_topic(name):
                continue
            if not is_valid_topic_name(name):
                error = ErrorCode.INVALID_TOPIC_EXCEPTION
            elif allow_create and name not in INTERNAL_TOPICS:
                broker.auto_create_topic(name)
                error = ErrorCode.LEADER_NOT_AVAILABLE
            else:
                error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            topics.append({"error_code": error, "name": name, "is_internal": name in INTERNAL_TOPICS, "partitions": []})
        return {
            "throttle_time_ms": 0,
            "brokers": [
                {"node_id": b, "host": host, "port": port, "rack": rack}
                for b, host, port, rack in cache.alive_brokers(connection.listener)
            ],
            "cluster_id": cache.cluster_id,
            "controller_id": cache.controller_id,
            "topics": topics,
        }

    return {METADATA: metadata}
