"""Metadata (3): brokers, controller, cluster id and topic layout, from the metadata cache.

* v0: an empty topic list means every topic; v1+: null means every topic.
* Unknown topics are auto-created when ``auto.create.topics.enable`` is on
  and the request allows it (v4 ``allow_auto_topic_creation``, always before
  v4): the answer is LEADER_NOT_AVAILABLE until the controller has elected
  leaders, as Kafka answers; otherwise UNKNOWN_TOPIC_OR_PARTITION.
  Illegal names get INVALID_TOPIC_EXCEPTION.
* Brokers are the live brokers with an endpoint on the listener the request
  came in on, so each client sees the addresses of its own listener.
* v7+ carries leader epochs (clients fence stale metadata with them, KIP-320),
  v10+ topic ids.  v10+ may ask by topic id (a null name): an unknown id gets
  UNKNOWN_TOPIC_ID.  Authorized operations (v8+) are those of a broker
  without an authorizer: everything the resource supports, when asked.

The broker passed to :func:`handlers` provides ``metadata_cache``,
``auto_create_topics`` (bool) and ``auto_create_topic(name)`` (fire and
forget; it logs its own failures).
"""

from __future__ import annotations

from typing import Any

from mafka.broker.authorized_operations import CLUSTER_OPERATIONS, NOT_PROVIDED, TOPIC_OPERATIONS
from mafka.errors import ErrorCode
from mafka.topics import INTERNAL_TOPICS, is_valid_topic_name

METADATA = 3


def handlers(broker: Any) -> dict[int, Any]:
    def metadata(request: Any, connection: Any) -> dict[str, Any]:
        cache = broker.metadata_cache
        version = request.header.api_version
        body = request.body
        unknown_ids: list[bytes] = []
        if body.topics is None or (version == 0 and not body.topics):
            requested = cache.topics()
        else:
            names = []
            for t in body.topics:
                if t.name is not None:
                    names.append(t.name)
                    continue
                topic_id = bytes(t.topic_id or bytes(16))
                name = cache.topic_name(topic_id)
                if name is None:
                    unknown_ids.append(topic_id)
                else:
                    names.append(name)
            requested = list(dict.fromkeys(names))
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
        for topic_id in dict.fromkeys(unknown_ids):
            topics.append(
                {
                    "error_code": ErrorCode.UNKNOWN_TOPIC_ID,
                    "name": None if version >= 12 else "",
                    "topic_id": topic_id,
                    "partitions": [],
                }
            )
        topic_operations = TOPIC_OPERATIONS if getattr(body, "include_topic_authorized_operations", False) else NOT_PROVIDED
        for topic in topics:
            topic["topic_authorized_operations"] = topic_operations
        cluster_operations = (
            CLUSTER_OPERATIONS if getattr(body, "include_cluster_authorized_operations", False) else NOT_PROVIDED
        )
        return {
            "throttle_time_ms": 0,
            "brokers": [
                {"node_id": b, "host": host, "port": port, "rack": rack}
                for b, host, port, rack in cache.alive_brokers(connection.listener)
            ],
            "cluster_id": cache.cluster_id,
            "controller_id": cache.controller_id,
            "topics": topics,
            "cluster_authorized_operations": cluster_operations,
        }

    return {METADATA: metadata}
