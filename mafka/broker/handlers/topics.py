"""CreateTopics (19), DeleteTopics (20), CreatePartitions (37): the controller's work.

In ZooKeeper mode these go to the controller broker; any other broker
answers NOT_CONTROLLER for every topic and clients retry against the
controller from Metadata.  ``-1`` partitions or replication factor (v4)
take the broker defaults (``num.partitions``, ``default.replication.factor``).
A name given twice in one request → INVALID_REQUEST for it.

The broker provides ``controller`` (``is_active``, ``create_topics``,
``delete_topics``, ``create_partitions``) and ``config``.
"""

from __future__ import annotations

from collections import Counter
from typing import Any

from twisted.internet import defer

from mafka.errors import ErrorCode

CREATE_TOPICS, DELETE_TOPICS, CREATE_PARTITIONS = 19, 20, 37


def _active(broker: Any) -> bool:
    return broker.controller is not None and broker.controller.is_active


def handlers(broker: Any) -> dict[int, Any]:
    def create_topics(request: Any, connection: Any) -> Any:
        body = request.body
        counts = Counter(t.name for t in body.topics)
        results: dict[str, tuple[int, str | None]] = {}
        specs = []
        for t in body.topics:
            if counts[t.name] > 1:
                results[t.name] = (ErrorCode.INVALID_REQUEST, "Duplicate topic name.")
            elif not _active(broker):
                results[t.name] = (ErrorCode.NOT_CONTROLLER, "This is not the correct controller for this cluster.")
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

        def respond(errors: dict[str, int]) -> dict[str, Any]:
            return {"throttle_time_ms": 0, "responses": [{"name": n, "error_code": errors[n]} for n in names]}

        return broker.controller.delete_topics(names, body.timeout_ms).addCallback(respond)

    def create_partitions(request: Any, connection: Any) -> Any:
        body = request.body
        names = [t.name for t in body.topics]
        if not _active(broker):
            return {
                "throttle_time_ms": 0,
                "results": [{"name": n, "error_code": ErrorCode.NOT_CONTROLLER, "error_message": None} for n in names],
            }
        specs = [
            (t.name, t.count, None if t.assignments is None else [list(a.broker_ids) for a in t.assignments]) for t in body.topics
        ]

        def respond(results: dict[str, tuple[int, str | None]]) -> dict[str, Any]:
            return {
                "throttle_time_ms": 0,
                "results": [{"name": n, "error_code": results[n][0], "error_message": results[n][1]} for n in names],
            }

        return broker.controller.create_partitions(specs, body.validate_only, body.timeout_ms).addCallback(respond)

    return {CREATE_TOPICS: create_topics, DELETE_TOPICS: delete_topics, CREATE_PARTITIONS: create_partitions}
