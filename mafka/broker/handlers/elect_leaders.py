"""ElectLeaders (43, v0–2): preferred or unclean leader elections, on the controller broker.

Kafka 2.8 semantics (``KafkaApis.handleElectReplicaLeader`` and
``ReplicaManager.electLeaders``):

* any broker other than the active controller answers NOT_CONTROLLER for
  every partition asked (null = every partition of its metadata cache);
* the controller elects (:meth:`mafka.controller.controller.Controller.elect_leaders`);
  partitions whose election succeeded are then held, like Kafka's
  ``DelayedElectLeader``, until this broker's metadata cache shows the new
  leader, or ``timeout_ms`` passes (REQUEST_TIMED_OUT);
* with null ``topic_partitions`` the partitions that needed no election
  (ELECTION_NOT_NEEDED) are left out of the response;
* the top-level error (v1+) is NONE; an unknown election type is
  INVALID_REQUEST for each partition.

ACL (Kafka 2.8, checked first, on any broker): Alter on the cluster, else the
top-level error (v1+) and every partition named CLUSTER_AUTHORIZATION_FAILED
(none listed for null ``topic_partitions``), and nothing is elected.

The broker provides ``controller``, ``metadata_cache`` and ``reactor``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from twisted.internet import defer, task

from mafka.broker.handler_authz import AdminAuthz
from mafka.errors import ErrorCode
from mafka.security.acl import AclOperation

ELECT_LEADERS = 43

#: How often a held election looks at the metadata cache again (seconds).
POLL_INTERVAL_S = 0.01

Result = tuple[int, str | None]


def _requested(body: Any) -> list[tuple[str, int]] | None:
    if body.topic_partitions is None:
        return None
    return list(dict.fromkeys((tp.topic, p) for tp in body.topic_partitions for p in tp.partitions))


def _all_cached(broker: Any) -> list[tuple[str, int]]:
    cache = broker.metadata_cache
    return [(t, p) for t in cache.topics() for p in range(cache.partition_count(t))]


def response_body(
    results: Mapping[tuple[str, int], Result], all_partitions: bool, error: int = ErrorCode.NONE
) -> dict[str, Any]:
    """The ElectLeaders response: results grouped by topic (ELECTION_NOT_NEEDED dropped for "all")."""
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, partition), (code, message) in results.items():
        if all_partitions and code == ErrorCode.ELECTION_NOT_NEEDED:
            continue
        by_topic.setdefault(topic, []).append(
            {"partition_id": partition, "error_code": int(code), "error_message": message}
        )
    return {
        "throttle_time_ms": 0,
        "error_code": int(error),
        "replica_election_results": [
            {"topic": topic, "partition_result": parts} for topic, parts in by_topic.items()
        ],
    }


def handlers(broker: Any) -> dict[int, Any]:
    authz = AdminAuthz(broker)

    @defer.inlineCallbacks
    def await_leaders(expected: Mapping[tuple[str, int], int], timeout_ms: int) -> Any:
        """Kafka's DelayedElectLeader: the partitions whose new leader this broker has not seen in time."""
        reactor = broker.reactor
        deadline = reactor.seconds() + max(timeout_ms, 0) / 1000.0

        def missing() -> list[tuple[str, int]]:
            out = []
            for (topic, p), leader in expected.items():
                info = broker.metadata_cache.partition(topic, p)
                if info is None or info.leader != leader:
                    out.append((topic, p))
            return out

        late = missing()
        while late and reactor.seconds() < deadline:
            yield task.deferLater(reactor, min(POLL_INTERVAL_S, deadline - reactor.seconds()), lambda: None)
            late = missing()
        return late

    @defer.inlineCallbacks
    def elect_leaders(request: Any, connection: Any) -> Any:
        body = request.body
        wanted = _requested(body)
        if not authz.allows_cluster(connection, AclOperation.ALTER):
            code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
            return response_body({tp: (code, None) for tp in wanted or []}, False, code)
        controller = broker.controller
        if controller is None or not controller.is_active:
            asked: Iterable[tuple[str, int]] = _all_cached(broker) if wanted is None else wanted
            code = ErrorCode.NOT_CONTROLLER
            return response_body({tp: (code, code.description) for tp in asked}, False)
        if body.election_type not in (0, 1):
            asked = controller.context.all_partitions() if wanted is None else wanted
            message = f"Unknown election type {body.election_type}"
            return response_body({tp: (ErrorCode.INVALID_REQUEST, message) for tp in asked}, False)
        results = dict((yield controller.elect_leaders(body.election_type, wanted)))
        expected = {
            tp: controller.context.leadership[tp].leader
            for tp, (code, _) in results.items()
            if code == ErrorCode.NONE and tp in controller.context.leadership
        }
        if expected:
            for tp in (yield await_leaders(expected, body.timeout_ms)):
                results[tp] = (ErrorCode.REQUEST_TIMED_OUT, None)
        return response_body(results, wanted is None)

    return {ELECT_LEADERS: elect_leaders}
