"""CreateTopics (19), DeleteTopics (20), CreatePartitions (37): the controller's work.

In ZooKeeper mode these go to the controller broker; any other broker
answers NOT_CONTROLLER for every topic and clients retry against the
controller from Metadata.  ``-1`` partitions or replication factor (v4)
take the broker defaults (``num.partitions``, ``default.replication.factor``).
A name given twice in one request → INVALID_REQUEST for it.

ACLs (Kafka 2.8, checked only on the controller, after NOT_CONTROLLER and
the duplicate check, before anything else, so a refused principal learns
nothing of a topic's existence):

* CreateTopics: Create on the cluster allows every topic, else Create on
  each topic; refused → TOPIC_AUTHORIZATION_FAILED "Authorization failed.".
  Kafka's DescribeConfigs check only decides whether v5+ responses carry the
  created topic's configs; Mafka decodes v2–4, which carry none.
* DeleteTopics: Delete on each topic → else TOPIC_AUTHORIZATION_FAILED,
  whether or not it exists.  (Kafka's Describe check concerns topic ids,
  v6+, which Mafka does not decode.)  With ``delete.topic.enable=false``
  every topic answers TOPIC_DELETION_DISABLED first, as in Kafka.
* CreatePartitions: Alter on each topic → else TOPIC_AUTHORIZATION_FAILED
  "The topic authorization is failed.".

The broker provides ``controller`` (``is_active``, ``create_topics``,
``delete_topics``, ``create_partitions``) and ``config``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from twisted.internet import defer

from mafka.broker.handler_authz import AdminAuthz
from mafka.errors import ErrorCode
from mafka.security.acl import AclOperation, ResourceType

CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS = 19, 20, 37


def _active(broker: Any) -> bool:
    return broker.controller is not None and broker.controller.is_active


def handlers(broker: Any) -> dict[int, Any]:
    authz = AdminAuthz(broker)

    def may_create(connection: Any, names: list[str]) -> set[str]:
        if authz.allows_cluster(connection, AclOperation.CREATE):
            return set(names)
        return authz.allowed_names(connection, AclOperation.CREATE, ResourceType.TOPIC, names)

    def create_topics(request: Any, connection: Any) -> Any:
        body = request.body
        counts = Counter(t.name for t in body.topics)
        creatable = may_create(connection, [t.name for t in body.topics]) if _active(broker) else set()
        results: dict[str, tuple[int, str | None]] = {}
        specs = []
        for t in body.topics:
            if counts[t.name] > 1:
                results[t.name] = (ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
            elif not _active(broker):
                results[t.name] = (ErrorCode.NOT_CONTROLLER, "This is not the correct controller for this cluster.")
            elif t.name not in creatable:
                results[t.name] = (ErrorCode.TOPIC_AUTHORIZATION_FAILED, "Authorization failed.")
            else:
                partitions = broker.config.num_partitions if t.num_partitions == -1 and not t.assignments else t.num_partitions
                rf = broker.config.default_replication_factor if t.replication_factor == -1 and not t.assignments else t.replication_factor
                assignment = {a.partition_index: list(a.broker_ids) for a in t.assignments} or None
                configs = {c.name: c.value for c in t.configs}
                specs.append((t.name, partitions, rf, assignment, configs))
        d = broker.controller.create_topics(specs, body.validate_only, body.timeout_ms) if specs else defer.succeed({})

        def respond(created: dict[str, tuple[int, str | None]]) -> dict[str, Any]:
            results.update(created)
            return {
                "throttle_time_ms": 0,
                "topics": [
                    {"name": name, "error_code": err, "error_message": msg}
                    for name, (err, msg) in ((n, results[n]) for n in dict.fromkeys(t.name for t in body.topics))
                ],
            }

        return d.addCallback(respond)

    def delete_topics(request: Any, connection: Any) -> Any:
        body = request.body
        names = list(dict.fromkeys(body.topic_names))
        if not _active(broker):
            return {"throttle_time_ms": 0, "responses": [{"name": n, "error_code": ErrorCode.NOT_CONTROLLER} for n in names]}
        if getattr(broker.config, "delete_topic_enable", True):
            allowed, refused = authz.split(connection, AclOperation.DELETE, ResourceType.TOPIC, names)
        else:
            allowed, refused = names, []  # the controller answers TOPIC_DELETION_DISABLED for all, as Kafka

        def respond(errors: dict[str, int]) -> dict[str, Any]:
            errors = {**errors, **dict.fromkeys(refused, ErrorCode.TOPIC_AUTHORIZATION_FAILED)}
            return {"throttle_time_ms": 0, "responses": [{"name": n, "error_code": errors[n]} for n in names]}

        if not allowed:
            return respond({})
        return broker.controller.delete_topics(allowed, body.timeout_ms).addCallback(respond)

    def create_partitions(request: Any, connection: Any) -> Any:
        body = request.body
        names = [t.name for t in body.topics]
        if not _active(broker):
            return {
                "throttle_time_ms": 0,
                "results": [{"name": n, "error_code": ErrorCode.NOT_CONTROLLER, "error_message": None} for n in names],
            }
        # Duplicates are the controller's INVALID_REQUEST, not checked (Kafka's ``dupes``).
        counts = Counter(names)
        alterable = authz.allowed_names(
            connection, AclOperation.ALTER, ResourceType.TOPIC, (n for n in names if counts[n] == 1)
        )
        refused = {n for n in names if counts[n] == 1 and n not in alterable}
        specs = [
            (t.name, t.count, None if t.assignments is None else [list(a.broker_ids) for a in t.assignments])
            for t in body.topics
            if t.name not in refused
        ]

        def respond(results: dict[str, tuple[int, str | None]]) -> dict[str, Any]:
            results = {
                **results,
                **dict.fromkeys(refused, (ErrorCode.TOPIC_AUTHORIZATION_FAILED, "The topic authorization is failed.")),
            }
            return {
                "throttle_time_ms": 0,
                "results": [{"name": n, "error_code": results[n][0], "error_message": results[n][1]} for n in names],
            }

        if not specs:
            return respond({})
        return broker.controller.create_partitions(specs, body.validate_only, body.timeout_ms).addCallback(respond)

    return {CREATE_TOPICS: create_topics, DELETE_TOPICS: delete_topics, CREATE_PARTITIONS: create_partitions}
