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
  UNKNOWN_TOPIC_ID.
* Authorization, as Kafka 2.8's ``handleTopicMetadataRequest`` (with
  Kafka 3.1's rules for topics named by id): a topic the principal may not
  Describe is left out of an all-topics answer, and answered
  TOPIC_AUTHORIZATION_FAILED when named — before its existence is looked at,
  so existence is not revealed (named by id, the answer carries the id and
  no name: ids are not secret).  A missing topic that would be auto-created
  needs Create on the cluster or on the topic, else it is
  TOPIC_AUTHORIZATION_FAILED and not created.  Internal topics follow the
  same rules.
* Authorized operations, when asked: each answered topic's (v8+) and the
  cluster's (v8–10; 0 without Describe on the cluster) from the authorizer —
  everything the resource supports without one.  Refused topics and
  unknown ids carry Kafka's "not provided".

The broker passed to :func:`handlers` provides ``metadata_cache``,
``auto_create_topics`` (bool), ``auto_create_topic(name)`` (fire and
forget; it logs its own failures) and optionally ``authorizer``.
"""

from __future__ import annotations

from typing import Any

from mafka.broker.authorized_operations import NOT_PROVIDED
from mafka.errors import ErrorCode
from mafka.topics import INTERNAL_TOPICS, is_valid_topic_name

from ..handler_authz import (
    CREATE,
    DESCRIBE,
    TOPIC,
    allowed_names,
    cluster_allowed,
    cluster_operations,
    topic_operations,
)

METADATA = 3


def handlers(broker: Any) -> dict[int, Any]:
    def metadata(request: Any, connection: Any) -> dict[str, Any]:
        cache = broker.metadata_cache
        version = request.header.api_version
        body = request.body
        unknown_ids: list[bytes] = []
        by_id: dict[str, bytes] = {}  # topics the request named by id
        all_topics = body.topics is None or (version == 0 and not body.topics)
        if all_topics:
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
                    by_id[name] = topic_id
            requested = list(dict.fromkeys(names))
        describable = allowed_names(broker, connection, DESCRIBE, TOPIC, requested)
        hidden = [t for t in requested if t not in describable]
        requested = [t for t in requested if t in describable]
        allow_create = broker.auto_create_topics and (version < 4 or body.allow_auto_topic_creation)
        not_creatable = _not_creatable(connection, [t for t in requested if not cache.has_topic(t)]) if allow_create else []
        requested = [t for t in requested if t not in not_creatable]
        topics = cache.topic_metadata([t for t in requested if cache.has_topic(t)], connection.listener, INTERNAL_TOPICS)
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
        if getattr(body, "include_topic_authorized_operations", False):
            for topic in topics:
                topic["topic_authorized_operations"] = topic_operations(broker, connection, topic["name"])
        refused = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        topics.extend(
            {"error_code": refused, "name": name, "is_internal": name in INTERNAL_TOPICS, "partitions": []}
            for name in not_creatable
        )
        if not all_topics:
            # Named topics the principal may not Describe: refused without looking them up.
            topics.extend(_undescribable(name, by_id.get(name), version) for name in hidden)
        for topic_id in dict.fromkeys(unknown_ids):
            topics.append(
                {
                    "error_code": ErrorCode.UNKNOWN_TOPIC_ID,
                    "name": None if version >= 12 else "",
                    "topic_id": topic_id,
                    "partitions": [],
                }
            )
        for topic in topics:
            topic.setdefault("topic_authorized_operations", NOT_PROVIDED)
        cluster_ops = NOT_PROVIDED
        if getattr(body, "include_cluster_authorized_operations", False):
            cluster_ops = cluster_operations(broker, connection)
        return {
            "throttle_time_ms": 0,
            "brokers": [
                {"node_id": b, "host": host, "port": port, "rack": rack}
                for b, host, port, rack in cache.alive_brokers(connection.listener)
            ],
            "cluster_id": cache.cluster_id,
            "controller_id": cache.controller_id,
            "topics": topics,
            "cluster_authorized_operations": cluster_ops,
        }

    def _not_creatable(connection: Any, missing: list[str]) -> list[str]:
        """The *missing* topics auto-creation may not create: without Create on the cluster, those without it on the topic."""
        if not missing or cluster_allowed(broker, connection, CREATE):
            return []
        creatable = allowed_names(broker, connection, CREATE, TOPIC, missing)
        return [t for t in missing if t not in creatable]

    return {METADATA: metadata}


def _undescribable(name: str, topic_id: bytes | None, version: int) -> dict[str, Any]:
    """The answer for a named topic the principal may not Describe (Kafka 3.1: by id, the id and no name)."""
    entry: dict[str, Any] = {"error_code": ErrorCode.TOPIC_AUTHORIZATION_FAILED, "name": name, "is_internal": False,
                             "partitions": []}
    if topic_id is not None:
        entry["name"] = None if version >= 12 else ""
        entry["topic_id"] = topic_id
    return entry
