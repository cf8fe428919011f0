"""The controller's requests to this broker: LeaderAndIsr (4), StopReplica (5), UpdateMetadata (6).

LeaderAndIsr v3+ carries each partition's reassignment state (replicas
being added and removed), which the partition keeps; v5 answers by topic id.

Fencing (``shared/reference/kafka-protocol.md`` §5): a request whose
broker_epoch is below this broker's registration epoch → STALE_BROKER_EPOCH
(−1 skips the check); a lower controller epoch → STALE_CONTROLLER_EPOCH
(checked by the replica manager and the metadata cache).

ACL (Kafka 2.8, checked before anything else): ClusterAction on the cluster,
else CLUSTER_AUTHORIZATION_FAILED (the top-level error and, as Kafka's
``getErrorResponse``, every partition named) and nothing changes — a
principal that is not a broker must not change this broker's leadership or
metadata (CVE-2018-1288).  With an authorizer on, brokers must therefore be
super users (``super.users=User:broker``) or hold ClusterAction.

The broker provides ``replica_manager``, ``metadata_cache``, ``broker_epoch``,
``on_metadata_update(deleted_partitions)`` (may be a no-op) and
``run_blocking(fn, *args) -> Deferred`` (a worker thread in a real broker);
optionally ``topic_configs`` (``ensure(topics) -> Deferred``) and
``log_config_for(topic)``, so new logs get their topic's config.
"""

from __future__ import annotations

from typing import Any

from twisted.internet import defer

from mafka.broker.handler_authz import AdminAuthz
from mafka.broker.topic_configs import apply_log_config
from mafka.errors import ErrorCode
from mafka.security.acl import AclOperation

LEADER_AND_ISR, STOP_REPLICA, UPDATE_METADATA = 4, 5, 6
ZERO_UUID = bytes(16)


def _stale(broker: Any, body: Any) -> bool:
    return body.broker_epoch != -1 and body.broker_epoch < broker.broker_epoch


def _refresh_log_configs(broker: Any, body: Any) -> None:
    """Gives the request's logs their topic's current config.

    A config change that arrived while a log was being created in a worker
    thread found no open log to apply to; this catches it up.
    """
    config_for = getattr(broker, "log_config_for", None)
    if config_for is None:
        return
    partitions = broker.replica_manager.partitions
    for ts in body.topic_states:
        config = config_for(ts.topic_name)
        for ps in ts.partition_states:
            partition = partitions.get((ts.topic_name, ps.partition_index))
            if partition is not None and partition.log.config != config:
                apply_log_config(partition.log, config)


def _refused_leader_and_isr(request: Any) -> dict[str, Any]:
    """Kafka's ``LeaderAndIsrRequest.getErrorResponse`` for CLUSTER_AUTHORIZATION_FAILED (v5: by topic id)."""
    code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    topics = request.body.topic_states
    if request.header.api_version >= 5:
        return {"error_code": code, "topics": [
            {"topic_id": ts.topic_id, "partition_errors": [
                {"partition_index": ps.partition_index, "error_code": code} for ps in ts.partition_states
            ]}
            for ts in topics
        ]}
    return {"error_code": code, "partition_errors": [
        {"topic_name": ts.topic_name, "partition_index": ps.partition_index, "error_code": code}
        for ts in topics
        for ps in ts.partition_states
    ]}


def _refused_stop_replica(request: Any) -> dict[str, Any]:
    """Kafka's ``StopReplicaRequest.getErrorResponse`` for CLUSTER_AUTHORIZATION_FAILED."""
    code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
    return {"error_code": code, "partition_errors": [
        {"topic_name": t.name, "partition_index": p, "error_code": code}
        for t in request.body.topics
        for p in t.partition_indexes
    ]}


def handlers(broker: Any) -> dict[int, Any]:
    authz = AdminAuthz(broker)

    def from_broker(connection: Any) -> bool:
        """Kafka's ``authorizeClusterOperation(CLUSTER_ACTION)``: the sender may act as a broker."""
        return authz.allows_cluster(connection, AclOperation.CLUSTER_ACTION)

    def leader_and_isr(request: Any, connection: Any) -> Any:
        if not from_broker(connection):
            return _refused_leader_and_isr(request)
        if _stale(broker, request.body):
            return {"error_code": ErrorCode.STALE_BROKER_EPOCH, "partition_errors": [], "topics": []}
        rm = broker.replica_manager
        # A new log is created with its topic's config (Kafka reads it from ZooKeeper at
        # that moment): the overrides of a topic this broker has not heard of yet are read
        # first — the config watch may not have fired when the controller's request arrives.
        configs = getattr(broker, "topic_configs", None)
        topics = {ts.topic_name for ts in request.body.topic_states}
        d: defer.Deferred[Any] = configs.ensure(topics) if configs is not None else defer.succeed(None)
        # Log creation and loading block on the disk: a worker thread does it,
        # then (once no follower truncation of these partitions is running)
        # the role changes are applied here, on the reactor.
        d.addCallback(lambda _: broker.run_blocking(rm.prepare_partitions, request.body))
        d.addCallback(lambda _: rm.truncations_in_flight(request.body))

        def applied(response: dict[str, Any]) -> dict[str, Any]:
            # What this broker now leads or follows is what its Metadata answers name too,
            # before the controller's UpdateMetadata arrives.
            if response["error_code"] == ErrorCode.NONE:
                _refresh_log_configs(broker, request.body)
                failed = {(e["topic_name"], e["partition_index"]) for e in response["partition_errors"] if e["error_code"]}
                for ts in request.body.topic_states:
                    for ps in ts.partition_states:
                        if (ts.topic_name, ps.partition_index) not in failed:
                            broker.metadata_cache.note_leadership(ts.topic_name, ps)
            return response

        def shaped(response: dict[str, Any]) -> dict[str, Any]:
            if request.header.api_version < 5:
                return response
            # v5 answers errors by topic id (KIP-516).
            ids = {ts.topic_name: ts.topic_id for ts in request.body.topic_states}
            by_topic: dict[str, list[dict[str, Any]]] = {}
            for e in response["partition_errors"]:
                by_topic.setdefault(e["topic_name"], []).append(
                    {"partition_index": e["partition_index"], "error_code": e["error_code"]}
                )
            topics = [{"topic_id": ids.get(name, ZERO_UUID), "partition_errors": errors} for name, errors in by_topic.items()]
            return {"error_code": response["error_code"], "topics": topics}

        d.addCallback(lambda _: applied(rm.become_leader_or_follower(request.body)))
        return d.addCallback(shaped)

    def stop_replica(request: Any, connection: Any) -> dict[str, Any]:
        if not from_broker(connection):
            return _refused_stop_replica(request)
        if _stale(broker, request.body):
            return {"error_code": ErrorCode.STALE_BROKER_EPOCH, "partition_errors": []}
        return broker.replica_manager.stop_replicas(request.body)

    def update_metadata(request: Any, connection: Any) -> dict[str, Any]:
        if not from_broker(connection):
            return {"error_code": ErrorCode.CLUSTER_AUTHORIZATION_FAILED}
        if _stale(broker, request.body):
            return {"error_code": ErrorCode.STALE_BROKER_EPOCH}
        error, deleted = broker.metadata_cache.update(request.body)
        if error == ErrorCode.NONE:
            broker.on_metadata_update(deleted)
        return {"error_code": error}

    return {LEADER_AND_ISR: leader_and_isr, STOP_REPLICA: stop_replica, UPDATE_METADATA: update_metadata}
