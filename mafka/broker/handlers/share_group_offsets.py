"""KIP-932's share group offset admin APIs at the group coordinator: DescribeShareGroupOffsets (90),
AlterShareGroupOffsets (91) and DeleteShareGroupOffsets (92).

Kafka 4.2's ``GroupCoordinatorService`` flows, with the group coordinator's half in
:class:`~mafka.group.share.offsets_admin.ShareOffsetsAdmin` and the share coordinator reached
through the broker's :class:`~mafka.broker.share_persister.SharePersister`:

* **Describe**: the group must be a share group held here (else GROUP_ID_NOT_FOUND, or the
  coordinator error).  Null topics ask for every initialized share-partition (Kafka's
  ``describeShareGroupAllOffsets``; topics the caller may not Describe are left out); named
  topics that do not exist answer start offset -1.  Each share-partition's
  ReadShareGroupStateSummary gives ``start_offset`` and ``leader_epoch`` (-1 and 0 on a
  persister error, as Kafka).  ``lag`` (v1, KIP-1226) is Kafka's ``high watermark - start
  offset - delivery complete count`` when the start offset and the count are known **and
  this broker leads the topic-partition** (its high watermark is read locally); otherwise -1.
  Kafka also asks remote leaders (ListOffsets); this broker does not yet.
* **Alter**: topics the caller may not Read are TOPIC_AUTHORIZATION_FAILED, unknown topics and
  partitions UNKNOWN_TOPIC_OR_PARTITION; the rest are written as initializing (the group must
  be empty: NON_EMPTY_GROUP), then InitializeShareGroupState at the new start offsets; a
  partition the share coordinator refused carries its error.
* **Delete**: topics the caller may not Read are TOPIC_AUTHORIZATION_FAILED; the rest move to
  deleting (NON_EMPTY_GROUP while the group has members), DeleteShareGroupState, then the
  deleted topics leave the group's state metadata; a topic without state is
  UNKNOWN_TOPIC_OR_PARTITION ("There is no offset information to delete.").

ACLs as Kafka 4.2's ``KafkaApis``: Describe on the group for 90 (Describe on each topic),
Read on the group for 91, Delete on the group for 92 (Read on each topic for both).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from twisted.internet import defer

from mafka.broker.handler_authz import AdminAuthz
from mafka.errors import ErrorCode, KafkaError
from mafka.group.share.group_types import InitializeRequest
from mafka.group.share.offsets_admin import AlterResult, DeleteResult, ShareOffsetsAdmin
from mafka.security.acl import AclOperation, ResourceType
from mafka.share.state_types import (
    UNINITIALIZED_DELIVERY_COMPLETE_COUNT,
    UNINITIALIZED_START_OFFSET,
    InitializeData,
    SummaryResult,
)

__all__ = ["handlers", "share_partition_lag"]

DESCRIBE_SHARE_GROUP_OFFSETS, ALTER_SHARE_GROUP_OFFSETS, DELETE_SHARE_GROUP_OFFSETS = 90, 91, 92
ZERO_UUID = bytes(16)
#: Kafka's ``PartitionFactory.UNINITIALIZED_LAG``
UNINITIALIZED_LAG = -1
#: Kafka's ``PartitionFactory.DEFAULT_LEADER_EPOCH``
DEFAULT_LEADER_EPOCH = 0


def share_partition_lag(summary: SummaryResult, end_offset: int | None) -> int:
    """KIP-1226's lag of one share-partition: ``end offset - start offset - delivery complete
    count`` when all three are known, else -1 (Kafka's ``shouldComputeSharePartitionLag``)."""
    if (end_offset is None or summary.error != ErrorCode.NONE
            or summary.start_offset == UNINITIALIZED_START_OFFSET
            or summary.delivery_complete_count == UNINITIALIZED_DELIVERY_COMPLETE_COUNT):
        return UNINITIALIZED_LAG
    return end_offset - summary.start_offset - summary.delivery_complete_count


def handlers(broker: Any) -> dict[int, Any]:
    authz = AdminAuthz(broker)

    def admin() -> ShareOffsetsAdmin:
        return ShareOffsetsAdmin(broker.group_service.checked_coordinator())

    def topic_ids() -> Mapping[str, bytes]:
        return {n: t for n, t in broker.metadata_cache.topic_ids.items() if t != ZERO_UUID}

    def partition_count(name: str) -> int:
        return len(broker.metadata_cache.partitions.get(name, {}))

    def end_offset(name: str, partition: int) -> int | None:
        """The high watermark of a topic-partition this broker leads (None: not led here)."""
        try:
            _ts, offset, _epoch = broker.replica_manager.list_offset(name, partition, -1)
        except KafkaError:
            return None
        return int(offset) if offset >= 0 else None

    # ------------------------------------------------------------------ DescribeShareGroupOffsets

    def describe_group(group: Any, connection: Any) -> defer.Deferred:
        gid = group.group_id
        if not authz.allows(connection, AclOperation.DESCRIBE, ResourceType.GROUP, gid):
            return defer.succeed(_describe_failed(gid, ErrorCode.GROUP_AUTHORIZATION_FAILED))
        error, message, initialized = admin().initialized_partitions(gid)
        if error != ErrorCode.NONE:
            return defer.succeed(_describe_failed(gid, error, message))
        ids = topic_ids()
        names = {t: n for n, t in ids.items()}
        wanted: dict[bytes, list[int]] = {}
        topics_out: list[dict[str, Any]] = []
        if group.topics is None:
            for tid, parts in sorted(initialized.items()):
                name = names.get(tid)
                if name is not None and authz.allows(connection, AclOperation.DESCRIBE, ResourceType.TOPIC, name):
                    wanted[tid] = sorted(parts)
        else:
            for t in group.topics:
                if not authz.allows(connection, AclOperation.DESCRIBE, ResourceType.TOPIC, t.topic_name):
                    topics_out.append(_unread_topic(t.topic_name, t.partitions, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
                elif t.topic_name not in ids:
                    topics_out.append(_unread_topic(t.topic_name, t.partitions, ErrorCode.NONE))
                else:
                    wanted.setdefault(ids[t.topic_name], []).extend(t.partitions)
        if not wanted:
            return defer.succeed(_describe_group(gid, topics_out))
        d = broker.share_persister.read_summary(gid, {t: dict.fromkeys(ps, 0) for t, ps in wanted.items()})

        def answered(results: Mapping[bytes, Mapping[int, SummaryResult]]) -> dict[str, Any]:
            read = []
            for tid, parts in wanted.items():
                name = names[tid]
                partitions = []
                for p in parts:
                    s = results.get(tid, {}).get(p) or SummaryResult(ErrorCode.UNKNOWN_SERVER_ERROR)
                    ok = s.error == ErrorCode.NONE
                    partitions.append({
                        "partition_index": p,
                        "start_offset": s.start_offset if ok else UNINITIALIZED_START_OFFSET,
                        "leader_epoch": s.leader_epoch if ok else DEFAULT_LEADER_EPOCH,
                        "lag": share_partition_lag(s, end_offset(name, p)) if ok else UNINITIALIZED_LAG,
                        "error_code": ErrorCode.NONE,
                        "error_message": None,
                    })
                read.append({"topic_name": name, "topic_id": tid, "partitions": partitions})
            return _describe_group(gid, read + topics_out)

        def crashed(failure: Any) -> dict[str, Any]:
            return _describe_failed(gid, ErrorCode.UNKNOWN_SERVER_ERROR, failure.getErrorMessage())

        d.addCallbacks(answered, crashed)
        return d

    def describe_share_group_offsets(request: Any, connection: Any) -> defer.Deferred:
        d = defer.gatherResults([describe_group(g, connection) for g in request.body.groups])
        d.addCallback(lambda groups: {"throttle_time_ms": 0, "groups": list(groups)})
        return d

    # ------------------------------------------------------------------ AlterShareGroupOffsets

    def alter_share_group_offsets(request: Any, connection: Any) -> Any:
        body = request.body
        gid = body.group_id
        if not gid:
            return _alter_error(ErrorCode.INVALID_GROUP_ID)
        if not authz.allows(connection, AclOperation.READ, ResourceType.GROUP, gid):
            return _alter_error(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        ids = topic_ids()
        responses: list[dict[str, Any]] = []
        offsets: dict[bytes, dict[int, int]] = {}
        for t in body.topics:
            name = t.topic_name
            if not authz.allows(connection, AclOperation.READ, ResourceType.TOPIC, name):
                error = ErrorCode.TOPIC_AUTHORIZATION_FAILED
            elif name not in ids:
                error = ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
            else:
                error = ErrorCode.NONE
            tid = ids.get(name, ZERO_UUID)
            count = partition_count(name)
            partitions = []
            for p in t.partitions:
                e = error if error != ErrorCode.NONE else (
                    ErrorCode.NONE if 0 <= p.partition_index < count else ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
                if e == ErrorCode.NONE:
                    offsets.setdefault(tid, {})[p.partition_index] = p.start_offset
                partitions.append(_partition_error(p.partition_index, e))
            responses.append({"topic_name": name, "topic_id": tid, "partitions": partitions})
        out: defer.Deferred = defer.Deferred()

        def initialize(request_: InitializeRequest) -> None:
            topics = {t: {p: InitializeData(request_.state_epoch, o) for p, o in ps.items()}
                      for t, ps in request_.partitions.items()}
            d = broker.share_persister.initialize(gid, topics)

            def answered(results: Mapping[bytes, Mapping[int, Any]]) -> None:
                failed = {(t, p): r for t, ps in results.items() for p, r in ps.items() if r.error != ErrorCode.NONE}
                for topic in responses:
                    for part in topic["partitions"]:
                        r = failed.get((topic["topic_id"], part["partition_index"]))
                        if r is not None and part["error_code"] == ErrorCode.NONE:
                            part["error_code"], part["error_message"] = r.error, r.message or r.error.description
                admin().initialized(request_, not failed, lambda _e: out.callback(_alter_body(responses)))

            def crashed(failure: Any) -> None:
                out.callback(_alter_error(ErrorCode.UNKNOWN_SERVER_ERROR, failure.getErrorMessage()))

            d.addCallbacks(answered, crashed)

        def altered(result: AlterResult) -> None:
            if result.error != ErrorCode.NONE:
                out.callback(_alter_error(result.error, result.message))
            elif result.initialize is None:
                out.callback(_alter_body(responses))
            else:
                initialize(result.initialize)

        if not offsets:
            return _alter_body(responses)
        admin().alter(gid, offsets, altered)
        return out

    # ------------------------------------------------------------------ DeleteShareGroupOffsets

    def delete_share_group_offsets(request: Any, connection: Any) -> Any:
        body = request.body
        gid = body.group_id
        if not gid:
            return _delete_error(ErrorCode.INVALID_GROUP_ID)
        if not authz.allows(connection, AclOperation.DELETE, ResourceType.GROUP, gid):
            return _delete_error(ErrorCode.GROUP_AUTHORIZATION_FAILED)
        ids = topic_ids()
        names = {t: n for n, t in ids.items()}
        responses: list[dict[str, Any]] = []
        asked: list[bytes] = []
        for t in body.topics:
            if not authz.allows(connection, AclOperation.READ, ResourceType.TOPIC, t.topic_name):
                responses.append(_topic_error(t.topic_name, ZERO_UUID, ErrorCode.TOPIC_AUTHORIZATION_FAILED))
            elif t.topic_name not in ids:
                responses.append(_topic_error(t.topic_name, ZERO_UUID, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION))
            else:
                asked.append(ids[t.topic_name])
        out: defer.Deferred = defer.Deferred()

        def finish(deleted: list[bytes]) -> None:
            if not deleted:
                out.callback(_delete_body(responses))
                return

            def completed(error: ErrorCode) -> None:
                if error != ErrorCode.NONE:
                    out.callback(_delete_error(error))
                    return
                responses.extend(_topic_error(names.get(t, ""), t, ErrorCode.NONE) for t in deleted)
                out.callback(_delete_body(responses))

            admin().complete_delete(gid, deleted, completed)

        def begun(result: DeleteResult) -> None:
            if result.error != ErrorCode.NONE:
                out.callback(_delete_error(result.error, result.message))
                return
            for t in asked:
                if t not in result.to_delete:
                    responses.append(_topic_error(names[t], t, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION,
                                                  "There is no offset information to delete."))
            if not result.to_delete:
                out.callback(_delete_body(responses))
                return
            d = broker.share_persister.delete(gid, result.to_delete)

            def answered(results: Mapping[bytes, Mapping[int, Any]]) -> None:
                deleted = []
                for t in result.to_delete:
                    errors = [r.error for r in results.get(t, {}).values() if r.error != ErrorCode.NONE]
                    if errors:
                        responses.append(_topic_error(names.get(t, ""), t, errors[0]))
                    else:
                        deleted.append(t)
                finish(deleted)

            def crashed(failure: Any) -> None:
                out.callback(_delete_error(ErrorCode.UNKNOWN_SERVER_ERROR, failure.getErrorMessage()))

            d.addCallbacks(answered, crashed)

        admin().begin_delete(gid, asked, begun)
        return out

    return {
        DESCRIBE_SHARE_GROUP_OFFSETS: describe_share_group_offsets,
        ALTER_SHARE_GROUP_OFFSETS: alter_share_group_offsets,
        DELETE_SHARE_GROUP_OFFSETS: delete_share_group_offsets,
    }


# ------------------------------------------------------------------ response builders


def _describe_group(group_id: str, topics: list[dict[str, Any]]) -> dict[str, Any]:
    return {"group_id": group_id, "topics": topics, "error_code": ErrorCode.NONE, "error_message": None}


def _describe_failed(group_id: str, error: ErrorCode, message: str | None = None) -> dict[str, Any]:
    return {"group_id": group_id, "topics": [], "error_code": error,
            "error_message": message if message is not None else error.description}


def _unread_topic(name: str, partitions: list[int], error: ErrorCode) -> dict[str, Any]:
    return {"topic_name": name, "topic_id": ZERO_UUID, "partitions": [
        {"partition_index": p, "start_offset": UNINITIALIZED_START_OFFSET, "leader_epoch": DEFAULT_LEADER_EPOCH,
         "lag": UNINITIALIZED_LAG, "error_code": error,
         "error_message": None if error == ErrorCode.NONE else error.description}
        for p in partitions
    ]}


def _partition_error(partition: int, error: ErrorCode) -> dict[str, Any]:
    return {"partition_index": partition, "error_code": error,
            "error_message": None if error == ErrorCode.NONE else error.description}


def _alter_body(responses: list[dict[str, Any]]) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "responses": responses}


def _alter_error(error: ErrorCode, message: str | None = None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": error,
            "error_message": message if message is not None else error.description, "responses": []}


def _topic_error(name: str, topic_id: bytes, error: ErrorCode, message: str | None = None) -> dict[str, Any]:
    return {"topic_name": name, "topic_id": topic_id, "error_code": error,
            "error_message": message if message is not None else (None if error == ErrorCode.NONE else error.description)}


def _delete_body(responses: list[dict[str, Any]]) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "error_message": None, "responses": responses}


def _delete_error(error: ErrorCode, message: str | None = None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": error,
            "error_message": message if message is not None else error.description, "responses": []}


