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
OffsetCommit (a partition the metadata cache does not know is
UNKNOWN_TOPIC_OR_PARTITION, the rest go to the coordinator); its offsets
stay pending until the producer's transaction marker. Below v2 a
COORDINATOR_LOAD_IN_PROGRESS is answered COORDINATOR_NOT_AVAILABLE, which
0.11–2.0 producers expect (KAFKA-7296).

ACLs, as Kafka 2.8's ``KafkaApis`` checks them (a refusal is an error in the
response, never a closed connection):

* JoinGroup, SyncGroup, Heartbeat, LeaveGroup: Read on the group, else
  GROUP_AUTHORIZATION_FAILED and the coordinator is not asked.
* OffsetCommit: Read on the group, else every partition
  GROUP_AUTHORIZATION_FAILED; then Read on each topic, else its partitions
  TOPIC_AUTHORIZATION_FAILED — checked before existence, so a topic the
  principal may not read is never reported unknown.
* TxnOffsetCommit: Write on the transactional id
  (TRANSACTIONAL_ID_AUTHORIZATION_FAILED), then Read on the group
  (GROUP_AUTHORIZATION_FAILED), each for every partition; then Read per
  topic as OffsetCommit.
* OffsetFetch: Describe on the group (GROUP_AUTHORIZATION_FAILED, as any
  group error); partitions of topics without Describe answer
  TOPIC_AUTHORIZATION_FAILED, and when every committed partition is asked
  for (null topics) those topics are left out.  v8's groups are checked one
  by one (Kafka 3.0's ``fetchOffsets``).
* DescribeGroups: Describe on each group (else GROUP_AUTHORIZATION_FAILED
  with empty fields); v3+ ``authorized_operations`` is the authorizer's.
* ListGroups: Describe on the cluster lists every group, else only the
  groups the principal may Describe.
* DeleteGroups: Delete on each group; OffsetDelete: Delete on the group
  (else GROUP_AUTHORIZATION_FAILED alone), then Read per topic.

DeleteGroups of a share group (Kafka 4.2): its share-partitions move to deleting, their
state is deleted at the share coordinator (DeleteShareGroupState through
``broker.share_persister``), then the group is tombstoned; NON_EMPTY_GROUP while it has
members, and a share coordinator error is the group's error (the group stays).

OffsetFetch v7's ``require_stable`` (KIP-447) is passed to the coordinator,
which answers UNSTABLE_OFFSET_COMMIT, as Kafka does, for a partition with a
commit still being appended or held by an open transaction.

The broker provides ``group_service.coordinator`` and ``metadata_cache``.
"""

from __future__ import annotations

from functools import partial
from typing import Any

from twisted.internet import defer

from mafka.broker.authorized_operations import GROUP_OPERATIONS, NOT_PROVIDED
from mafka.broker.handler_authz import AdminAuthz
from mafka.errors import ErrorCode
from mafka.group.coordinator import JoinResult, OffsetFetchEntry, SyncResult
from mafka.group.coordinator_types import EMPTY_SUMMARY
from mafka.group.offsets import OffsetAndMetadata
from mafka.security.acl import AclOperation, ResourceType

READ, DELETE, DESCRIBE, WRITE = AclOperation.READ, AclOperation.DELETE, AclOperation.DESCRIBE, AclOperation.WRITE
GROUP, TOPIC = ResourceType.GROUP, ResourceType.TOPIC
#: Kafka's ``OffsetFetchResponse.UNAUTHORIZED_PARTITION``.
UNAUTHORIZED_PARTITION = OffsetFetchEntry(-1, -1, "", ErrorCode.TOPIC_AUTHORIZATION_FAILED)

OFFSET_COMMIT, OFFSET_FETCH, JOIN_GROUP, HEARTBEAT, LEAVE_GROUP, SYNC_GROUP = 8, 9, 11, 12, 13, 14
DESCRIBE_GROUPS, LIST_GROUPS, TXN_OFFSET_COMMIT, DELETE_GROUPS, OFFSET_DELETE = 15, 16, 28, 42, 47


def _client_host(connection: Any) -> str:
    """Kafka's clientHost: ``InetAddress.toString`` of the peer, e.g. ``/127.0.0.1``."""
    host = connection.peer.rsplit(":", 1)[0]
    return f"/{host}"


def handlers(broker: Any) -> dict[int, Any]:
    authz = AdminAuthz(broker)

    def coordinator() -> Any:
        return broker.group_service.checked_coordinator()

    def may_read_group(connection: Any, group_id: str) -> bool:
        return authz.allows(connection, READ, GROUP, group_id)

    def commit_targets(connection: Any, topics: Any, refusal: int | None) -> tuple[dict[tuple[str, int], int], list[Any]]:
        """An (Txn)OffsetCommit's partitions sorted as Kafka does: (errors, [(tp, partition data) to commit]).

        With *refusal* (the group or transactional id was refused) every
        partition answers it.  Otherwise a topic the principal may not Read
        is TOPIC_AUTHORIZATION_FAILED before existence is looked at, then an
        unknown partition UNKNOWN_TOPIC_OR_PARTITION.
        """
        cache = broker.metadata_cache
        readable = authz.allowed_names(connection, READ, TOPIC, (t.name for t in topics)) if refusal is None else set()
        errors: dict[tuple[str, int], int] = {}
        accepted = []
        for topic in topics:
            for p in topic.partitions:
                tp = (topic.name, p.partition_index)
                if refusal is not None:
                    errors[tp] = refusal
                elif topic.name not in readable:
                    errors[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                elif cache.partition(topic.name, p.partition_index) is None:
                    errors[tp] = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
                else:
                    accepted.append((tp, p))
        return errors, accepted

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

        if not may_read_group(connection, body.group_id):
            respond(JoinResult(ErrorCode.GROUP_AUTHORIZATION_FAILED))
            return d
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

        if not may_read_group(connection, body.group_id):
            respond(SyncResult(ErrorCode.GROUP_AUTHORIZATION_FAILED))
            return d
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
        if not may_read_group(connection, body.group_id):
            return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED}
        error = coordinator().heartbeat(
            body.group_id,
            body.member_id,
            getattr(body, "group_instance_id", None) if request.header.api_version >= 3 else None,
            body.generation_id,
        )
        return {"throttle_time_ms": 0, "error_code": error}

    def leave_group(request: Any, connection: Any) -> dict[str, Any]:
        body = request.body
        if not may_read_group(connection, body.group_id):
            # Kafka's LeaveGroupResponse: the top-level error and no members.
            return {"throttle_time_ms": 0, "error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "members": []}
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
        now = int(broker.reactor.seconds() * 1000)
        retention = body.retention_time_ms
        expire = None if retention == -1 else now + retention
        refusal = None if may_read_group(connection, body.group_id) else ErrorCode.GROUP_AUTHORIZATION_FAILED
        results, accepted = commit_targets(connection, body.topics, refusal)
        # v6+: the leader epoch of the consumed record (−1 below v6 or unknown),
        # kept in the OffsetCommitValue v3 record and answered by OffsetFetch v5+.
        offsets = {
            tp: OffsetAndMetadata(p.committed_offset, p.committed_leader_epoch, p.committed_metadata or "", now, expire)
            for tp, p in accepted
        }
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
                body.group_id, body.member_id, instance_id, body.generation_id_or_member_epoch, offsets, respond,
                api_version=request.header.api_version,
            )
        else:
            respond({})
        return d

    def txn_offset_commit(request: Any, connection: Any) -> defer.Deferred:
        body = request.body
        version = request.header.api_version
        now = int(broker.reactor.seconds() * 1000)
        # Kafka skips the producer id's check: Write on the transactional id implies it.
        refusal = (
            ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED
            if not authz.allows(connection, WRITE, ResourceType.TRANSACTIONAL_ID, body.transactional_id)
            else ErrorCode.GROUP_AUTHORIZATION_FAILED if not may_read_group(connection, body.group_id)
            else None
        )
        results, accepted = commit_targets(connection, body.topics, refusal)
        # Kafka's convertTxnOffsets: commit time now, no expire timestamp.
        offsets = {
            tp: OffsetAndMetadata(p.committed_offset, p.committed_leader_epoch, p.committed_metadata or "", now, None)
            for tp, p in accepted
        }
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

    def fetch_offsets(
        connection: Any, group_id: str, wanted: list[tuple[str, int]] | None, require_stable: bool,
        member: tuple[str | None, int] = (None, -1),
    ) -> tuple[int, dict[tuple[str, int], OffsetFetchEntry]]:
        """One group's offsets as the principal may see them (Kafka 3.0's ``fetchOffsets``, 2.8's checks).

        Describe on the group, else GROUP_AUTHORIZATION_FAILED.  Asked
        partitions of topics without Describe are not looked up and answer
        TOPIC_AUTHORIZATION_FAILED; with *wanted* None (every committed
        partition) such topics are left out.
        """
        if not authz.allows(connection, DESCRIBE, GROUP, group_id):
            return ErrorCode.GROUP_AUTHORIZATION_FAILED, {}
        if wanted is None:
            error, entries = coordinator().fetch_offsets(group_id, None, require_stable, *member)
            if error != ErrorCode.NONE:
                return error, entries
            visible = authz.allowed_names(connection, DESCRIBE, TOPIC, (topic for topic, _ in entries))
            return error, {tp: e for tp, e in entries.items() if tp[0] in visible}
        allowed, refused = authz.split(connection, DESCRIBE, TOPIC, wanted, name_of=lambda tp: tp[0])
        error, entries = coordinator().fetch_offsets(group_id, allowed, require_stable, *member)
        if error != ErrorCode.NONE or not refused:
            return error, entries
        hidden = set(refused)
        return error, {tp: UNAUTHORIZED_PARTITION if tp in hidden else entries[tp] for tp in wanted}

    def offset_fetch(request: Any, connection: Any) -> dict[str, Any]:
        body = request.body
        version = request.header.api_version
        require_stable = bool(body.require_stable)  # v7+; False below
        if version >= 8:
            # KIP-709: several groups, each answered with its own error (and no offsets on error).
            groups = []
            for g in body.groups:
                # v9 (KIP-848): the asking member and its epoch (null / -1 below v9 and from admins).
                member = (g.member_id, g.member_epoch) if version >= 9 else (None, -1)
                error, entries = fetch_offsets(connection, g.group_id, _wanted(g.topics), require_stable, member)
                groups.append({
                    "group_id": g.group_id,
                    "topics": _fetched_topics(entries) if error == ErrorCode.NONE else [],
                    "error_code": error,
                })
            return {"throttle_time_ms": 0, "groups": groups}
        wanted = _wanted(body.topics)
        error, entries = fetch_offsets(connection, body.group_id, wanted, require_stable)
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
            if not authz.allows(connection, DESCRIBE, GROUP, group_id):
                # Kafka's DescribeGroupsResponse.forError: empty state, protocol and members.
                error, summary = ErrorCode.GROUP_AUTHORIZATION_FAILED, EMPTY_SUMMARY
            else:
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
                "authorized_operations": authz.operations(connection, GROUP, group_id, GROUP_OPERATIONS)
                if with_operations and error == ErrorCode.NONE else NOT_PROVIDED,
            })
        return {"throttle_time_ms": 0, "groups": groups}

    def list_groups(request: Any, connection: Any) -> dict[str, Any]:
        error, groups = coordinator().list_groups()
        # v4 (KIP-518): only groups in one of the named states (Kafka's names, e.g. "Stable").
        wanted = set(getattr(request.body, "states_filter", None) or ())
        groups = [g for g in groups if not wanted or g.state in wanted]
        # v5 (KIP-848): only groups of the named types ("classic", "consumer"); Kafka compares
        # the type names case-insensitively.
        types = {t.lower() for t in getattr(request.body, "types_filter", None) or ()}
        groups = [g for g in groups if not types or g.group_type in types]
        # Describe on the cluster lists every group (Kafka keeps it for compatibility);
        # otherwise only the groups the principal may Describe.
        if not authz.allows_cluster(connection, DESCRIBE):
            groups, _ = authz.split(connection, DESCRIBE, GROUP, groups, name_of=lambda g: g.group_id)
        return {
            "throttle_time_ms": 0,
            "error_code": error,
            "groups": [
                {"group_id": g.group_id, "protocol_type": g.protocol_type, "group_state": g.state,
                 "group_type": g.group_type}
                for g in groups
            ],
        }

    def delete_groups(request: Any, connection: Any) -> defer.Deferred:
        names = list(dict.fromkeys(request.body.groups_names))
        allowed, refused = authz.split(connection, DELETE, GROUP, names)
        d: defer.Deferred = defer.Deferred()

        def respond(results: dict[str, int]) -> None:
            results.update(dict.fromkeys(refused, ErrorCode.GROUP_AUTHORIZATION_FAILED))
            d.callback({
                "throttle_time_ms": 0,
                "results": [{"group_id": g, "error_code": results[g]} for g in names],
            })

        if not allowed:
            respond({})
            return d
        # Kafka 4.2's deleteGroups: a share group's share-partitions move to deleting, their
        # state is deleted at the share coordinator (DeleteShareGroupState), and only a group
        # whose state is gone is deleted; a persister error is that group's error.
        share_errors: dict[str, int] = {}

        def delete_rest() -> None:
            rest = [g for g in allowed if g not in share_errors]

            def answered(results: dict[str, int]) -> None:
                results.update(share_errors)
                respond(results)

            if rest:
                coordinator().delete_groups(rest, answered)
            else:
                answered({})

        def share_begun(begun: dict[str, tuple[int, dict[bytes, frozenset[int]]]]) -> None:
            waits: list[defer.Deferred] = []
            for gid, (error, to_delete) in begun.items():
                if error != ErrorCode.NONE:
                    share_errors[gid] = error
                elif to_delete:
                    waits.append(broker.share_persister.delete(gid, to_delete).addCallbacks(
                        partial(state_deleted, gid), partial(state_failed, gid)))
            if waits:
                defer.gatherResults(waits).addCallback(lambda _: delete_rest())
            else:
                delete_rest()

        def state_deleted(gid: str, results: Any) -> None:
            errors = [r.error for parts in results.values() for r in parts.values() if r.error != ErrorCode.NONE]
            if errors:
                share_errors[gid] = errors[0]

        def state_failed(gid: str, failure: Any) -> None:
            share_errors[gid] = ErrorCode.UNKNOWN_SERVER_ERROR

        coordinator().begin_share_group_deletions(allowed, share_begun)
        return d

    def offset_delete(request: Any, connection: Any) -> Any:
        body = request.body
        if not authz.allows(connection, DELETE, GROUP, body.group_id):
            # Kafka's getErrorResponse: the group's error and no partitions.
            return {"error_code": ErrorCode.GROUP_AUTHORIZATION_FAILED, "throttle_time_ms": 0, "topics": []}
        cache = broker.metadata_cache
        readable = authz.allowed_names(connection, READ, TOPIC, (t.name for t in body.topics))
        order: dict[tuple[str, int], None] = {}
        results: dict[tuple[str, int], int] = {}
        partitions: list[tuple[str, int]] = []
        for topic in body.topics:
            for p in topic.partitions:
                tp = (topic.name, p.partition_index)
                if tp in order:
                    continue
                order[tp] = None
                if topic.name not in readable:
                    results[tp] = ErrorCode.TOPIC_AUTHORIZATION_FAILED
                elif cache.partition(topic.name, p.partition_index) is None:
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
