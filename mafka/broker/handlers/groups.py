"""Consumer-group APIs, answered by this broker's group coordinator.

JoinGroup (11), SyncGroup (14), Heartbeat (12), LeaveGroup (13),
OffsetCommit (8), OffsetFetch (9), TxnOffsetCommit (28), DescribeGroups (15),
ListGroups (16), DeleteGroups (42) and OffsetDelete (47) at the versions their
``mafka/wire/apis`` modules decode.  Each handler translates the request into
a call on :class:`~mafka.group.coordinator.GroupCoordinator` and its answer
into the response body; JoinGroup, SyncGroup, OffsetCommit, TxnOffsetCommit,
DeleteGroups and OffsetDelete may wait (a rebalance, the leader's assignment,
a replicated append), so they return a Deferred.

TxnOffsetCommit (Kafka 2.8's ``handleTxnOffsetCommitRequest``) is checked like
OffsetCommit (no authorizer here: a partition the metadata cache does not know
is UNKNOWN_TOPIC_OR_PARTITION, the rest go to the coordinator); its offsets
stay pending until the producer's transaction marker. Below v2 a
COORDINATOR_LOAD_IN_PROGRESS is answered COORDINATOR_NOT_AVAILABLE, which
0.11–2.0 producers expect (KAFKA-7296).

OffsetFetch v7's ``require_stable`` (KIP-447) is passed to the coordinator,
which answers UNSTABLE_OFFSET_COMMIT, as Kafka does, for a partition with a
commit still being appended or held by an open transaction.

The broker provides ``group_service.coordinator`` and ``metadata_cache``.
"""

from __future__ import annotations

from typing import Any

from twisted.internet import defer

from mafka.broker.authorized_operations import GROUP_OPERATIONS, NOT_PROVIDED
from mafka.errors import ErrorCode
from mafka.group.coordinator import JoinResult, OffsetFetchEntry, SyncResult
from mafka.group.offsets import OffsetAndMetadata

OFFSET_COMMIT, OFFSET_FETCH, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = 8, 9, 11, 12, 13, 14
DESCRIBE_GROUPS, LIST_GROUPS, TXN_OFFSET_COMMIT, DELETE_GROUPS, OFFSET_DELETE = 15, 16, 28, 42, 47


def _client_host(connection: Any) -> str:
    """Kafka's clientHost: ``InetAddress.toString`` of the peer, e.g. ``/127.0.0.1``."""
    host = connection.peer.rsplit(":", 1)[0]
    return f"/{host}"


def handlers(broker: Any) -> dict[int, Any]:
    def coordinator() -> Any:
        return broker.group_service.checked_coordinator()

    def join_group(request: Any, connection: Any) -> defer.Deferred:
        body = request.body
        version = request.header.api_version
        d: defer.Deferred = defer.Deferred()

        def respond(r: JoinResult) -> None:
            d.callback({
                "throttle_time_ms": 0,
                "error_code": r.error,
                "generation_id": r.generation_id,
                "protocol_name": r.protocol_name or "",
                "leader": r.leader_id,
                "member_id": r.member_id,
                "members": [
                    {"member_id": m, "group_instance_id": i, "metadata": meta} for m, i, meta in r.members
                ],
            })

        # v0 has no rebalance timeout: Kafka uses the session timeout.
        rebalance_timeout = body.rebalance_timeout_ms if version >= 1 else body.session_timeout_ms
        instance_id = body.group_instance_id if version >= 5 else None
        coordinator().join_group(
            body.group_id,
            body.member_id,
            instance_id,
            version >= 4 and instance_id is None,  # KIP-394 applies to dynamic members only
            request.header.client_id or "",
            _client_host(connection),
            rebalance_timeout,
            body.session_timeout_ms,
            body.protocol_type,
            [(p.name, bytes(p.metadata)) for p in body.protocols],
            respond,
        )
        return d

    def sync_group(request: Any, connection: Any) -> defer.Deferred:
        body = request.body
        d: defer.Deferred = defer.Deferred()

        def respond(r: SyncResult) -> None:
            d.callback({"throttle_time_ms": 0, "error_code": r.error, "assignment": r.assignment})

        coordinator().sync_group(
            body.group_id,
            body.generation_id,
            body.member_id,
            getattr(body, "group_instance_id", None) if request.header.api_version >= 3 else None,
            {a.member_id: bytes(a.assignment) for a in body.assignments},
            respond,
        )
        return d

    def heartbeat(request: Any, connection: Any) -> dict[str, Any]:
        body = request.body
        error = coordinator().heartbeat(
            body.group_id,
            body.member_id,
            getattr(body, "group_instance_id", None) if request.header.api_version >= 3 else None,
            body.generation_id,
        )
        return {"throttle_time_ms": 0, "error_code": error}

    def leave_group(request: Any, connection: Any) -> dict[str, Any]:
        body = request.body
        if request.header.api_version >= 3:
            # KIP-345: a batch, each member by member id and/or group instance id (an
            # administrative removal names only the instance id, member id "").
            top, members = coordinator().leave_group(
                body.group_id, [(m.member_id, m.group_instance_id) for m in body.members]
            )
            return {
                "throttle_time_ms": 0,
                "error_code": top,
                "members": [{"member_id": m, "group_instance_id": i, "error_code": e} for m, i, e in members],
            }
        top, members = coordinator().leave_group(body.group_id, [(body.member_id, None)])
        # v0–2 carry one member: its error is the response's error.
        error = top if top != ErrorCode.NONE else next((e for _, _, e in members if e != ErrorCode.NONE), ErrorCode.NONE)
        return {"throttle_time_ms": 0, "error_code": error}

    def offset_commit(request: Any, connection: Any) -> defer.Deferred:
        body = request.body
        cache = broker.metadata_cache
        now = int(broker.reactor.seconds() * 1000)
        retention = body.retention_time_ms
        expire = None if retention == -1 else now + retention
        results: dict[tuple[str, int], int] = {}
        offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
        for topic in body.topics:
            for p in topic.partitions:
                tp = (topic.name, p.partition_index)
                if cache.partition(topic.name, p.partition_index) is None:
                    results[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    # v6+: the leader epoch of the consumed record (−1 below v6 or unknown),
                    # kept in the OffsetCommitValue v3 record and answered by OffsetFetch v5+.
                    offsets[tp] = OffsetAndMetadata(
                        p.committed_offset, p.committed_leader_epoch, p.committed_metadata or "", now, expire
                    )
        d: defer.Deferred = defer.Deferred()

        def respond(errors: dict[tuple[str, int], int]) -> None:
            results.update(errors)
            d.callback({
                "throttle_time_ms": 0,
                "topics": [
                    {
                        "name": topic.name,
                        "partitions": [
                            {"partition_index": p.partition_index, "error_code": results[(topic.name, p.partition_index)]}
                            for p in topic.partitions
                        ],
                    }
                    for topic in body.topics
                ],
            })

        if offsets:
            # v7+: a static member's group.instance.id (a replaced instance is FENCED_INSTANCE_ID).
            instance_id = body.group_instance_id if request.header.api_version >= 7 else None
            coordinator().commit_offsets(
                body.group_id, body.member_id, instance_id, body.generation_id_or_member_epoch, offsets, respond
            )
        else:
            respond({})
        return d

    def txn_offset_commit(request: Any, connection: Any) -> defer.Deferred:
        body = request.body
        version = request.header.api_version
        cache = broker.metadata_cache
        now = int(broker.reactor.seconds() * 1000)
        results: dict[tuple[str, int], int] = {}
        offsets: dict[tuple[str, int], OffsetAndMetadata] = {}
        for topic in body.topics:
            for p in topic.partitions:
                tp = (topic.name, p.partition_index)
                if cache.partition(topic.name, p.partition_index) is None:
                    results[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    # Kafka's convertTxnOffsets: commit time now, no expire timestamp.
                    offsets[tp] = OffsetAndMetadata(
                        p.committed_offset, p.committed_leader_epoch, p.committed_metadata or "", now, None
                    )
        d: defer.Deferred = defer.Deferred()

        def respond(errors: dict[tuple[str, int], int]) -> None:
            results.update(errors)
            if version < 2:
                results.update({
                    tp: ErrorCode.COORDINATOR_NOT_AVAILABLE
                    for tp, e in results.items() if e == ErrorCode.COORDINATOR_LOAD_IN_PROGRESS
                })
            d.callback({
                "throttle_time_ms": 0,
                "topics": [
                    {
                        "name": topic.name,
                        "partitions": [
                            {"partition_index": p.partition_index, "error_code": results[(topic.name, p.partition_index)]}
                            for p in topic.partitions
                        ],
                    }
                    for topic in body.topics
                ],
            })

        if offsets:
            # v3 (KIP-447) carries the consumer's group metadata; below v3 nothing is fenced.
            coordinator().commit_transactional_offsets(
                body.group_id,
                body.producer_id,
                body.producer_epoch,
                body.member_id if version >= 3 else "",
                body.generation_id if version >= 3 else -1,
                body.group_instance_id if version >= 3 else None,
                offsets,
                respond,
            )
        else:
            respond({})
        return d

    def offset_fetch(request: Any, connection: Any) -> dict[str, Any]:
        body = request.body
        version = request.header.api_version
        require_stable = bool(body.require_stable)  # v7+; False below
        if version >= 8:
            # KIP-709: several groups, each answered with its own error (and no offsets on error).
            groups = []
            for g in body.groups:
                error, entries = coordinator().fetch_offsets(g.group_id, _wanted(g.topics), require_stable)
                groups.append({
                    "group_id": g.group_id,
                    "topics": _fetched_topics(entries) if error == ErrorCode.NONE else [],
                    "error_code": error,
                })
            return {"throttle_time_ms": 0, "groups": groups}
        wanted = _wanted(body.topics)
        error, entries = coordinator().fetch_offsets(body.group_id, wanted, require_stable)
        if error != ErrorCode.NONE:
            # v2+ carry the error at the top; v1 has no such field: every partition carries it.
            failed = {tp: OffsetFetchEntry(-1, -1, "", error) for tp in (wanted or [])} if version < 2 else {}
            return {"throttle_time_ms": 0, "topics": _fetched_topics(failed), "error_code": error}
        return {"throttle_time_ms": 0, "topics": _fetched_topics(entries), "error_code": error}

    def describe_groups(request: Any, connection: Any) -> dict[str, Any]:
        # v3+: the group's operations when asked for (Kafka: only for a group answered without
        # error); without an authorizer every operation a group supports is allowed.
        with_operations = request.header.api_version >= 3 and request.body.include_authorized_operations
        groups = []
        for group_id in request.body.groups:
            error, summary = coordinator().describe_group(group_id)
            groups.append({
                "error_code": error,
                "group_id": group_id,
                "group_state": summary.state,
                "protocol_type": summary.protocol_type,
                "protocol_data": summary.protocol,
                "members": [
                    {
                        "member_id": m.member_id,
                        "group_instance_id": m.group_instance_id,
                        "client_id": m.client_id,
                        "client_host": m.client_host,
                        "member_metadata": m.metadata,
                        "member_assignment": m.assignment,
                    }
                    for m in summary.members
                ],
                "authorized_operations": GROUP_OPERATIONS if with_operations and error == ErrorCode.NONE
                else NOT_PROVIDED,
            })
        return {"throttle_time_ms": 0, "groups": groups}

    def list_groups(request: Any, connection: Any) -> dict[str, Any]:
        error, groups = coordinator().list_groups()
        # v4 (KIP-518): only groups in one of the named states (Kafka's names, e.g. "Stable").
        wanted = set(getattr(request.body, "states_filter", None) or ())
        return {
            "throttle_time_ms": 0,
            "error_code": error,
            "groups": [
                {"group_id": g.group_id, "protocol_type": g.protocol_type, "group_state": g.state}
                for g in groups
                if not wanted or g.state in wanted
            ],
        }

    def delete_groups(request: Any, connection: Any) -> defer.Deferred:
        names = list(request.body.groups_names)
        d: defer.Deferred = defer.Deferred()

        def respond(results: dict[str, int]) -> None:
            d.callback({
                "throttle_time_ms": 0,
                "results": [{"group_id": g, "error_code": results[g]} for g in dict.fromkeys(names)],
            })

        coordinator().delete_groups(list(dict.fromkeys(names)), respond)
        return d

    def offset_delete(request: Any, connection: Any) -> defer.Deferred:
        body = request.body
        cache = broker.metadata_cache
        order: dict[tuple[str, int], None] = {}
        results: dict[tuple[str, int], int] = {}
        partitions: list[tuple[str, int]] = []
        for topic in body.topics:
            for p in topic.partitions:
                tp = (topic.name, p.partition_index)
                if tp in order:
                    continue
                order[tp] = None
                if cache.partition(topic.name, p.partition_index) is None:
                    results[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    partitions.append(tp)
        d: defer.Deferred = defer.Deferred()

        def respond(group_error: int, errors: dict[tuple[str, int], int]) -> None:
            if group_error != ErrorCode.NONE:
                # Kafka's getErrorResponse: the group's error and no partitions.
                d.callback({"error_code": group_error, "throttle_time_ms": 0, "topics": []})
                return
            results.update(errors)
            by_topic: dict[str, list[dict[str, Any]]] = {}
            for topic, index in order:
                by_topic.setdefault(topic, []).append(
                    {"partition_index": index, "error_code": results[(topic, index)]})
            d.callback({
                "error_code": ErrorCode.NONE,
                "throttle_time_ms": 0,
                "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
            })

        # Called even without a known partition, so that the group's own error is answered.
        coordinator().delete_offsets(body.group_id, partitions, respond)
        return d

    return {
        OFFSET_COMMIT: offset_commit,
        OFFSET_FETCH: offset_fetch,
        TXN_OFFSET_COMMIT: txn_offset_commit,
        JOIN_GROUP: join_group,
        HEARTBEAT: heartbeat,
        LEAVE_GROUP: leave_group,
        SYNC_GROUP: sync_group,
        DESCRIBE_GROUPS: describe_groups,
        LIST_GROUPS: list_groups,
        DELETE_GROUPS: delete_groups,
        OFFSET_DELETE: offset_delete,
    }


def _wanted(topics: Any) -> list[tuple[str, int]] | None:
    """An OffsetFetch request's partitions; None (null topics, v2+) means every committed one."""
    return None if topics is None else [(t.name, i) for t in topics for i in t.partition_indexes]


def _fetched_topics(entries: dict[tuple[str, int], OffsetFetchEntry]) -> list[dict[str, Any]]:
    """OffsetFetch response topics, in the order of ``entries`` (v5+ answer the leader epoch)."""
    by_topic: dict[str, list[dict[str, Any]]] = {}
    for (topic, index), e in entries.items():
        by_topic.setdefault(topic, []).append({
            "partition_index": index,
            "committed_offset": e.offset,
            "committed_leader_epoch": e.leader_epoch,
            "metadata": e.metadata,
            "error_code": e.error,
        })
    return [{"name": t, "partitions": ps} for t, ps in by_topic.items()]
