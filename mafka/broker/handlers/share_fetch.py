"""KIP-932's data path: ShareFetch (78) and ShareAcknowledge (79), v1–2, at the share-partition leaders.

As Kafka 4.2's ``KafkaApis.handleShareFetchRequest`` / ``handleShareAcknowledgeRequest``,
over the broker's :class:`~mafka.broker.share_fetch.ShareFetchService`:

* **Refused whole** (a top-level error, no partitions): share groups off
  (``group.coordinator.rebalance.protocols`` without ``share``) UNSUPPORTED_VERSION;
  no Read on the group GROUP_AUTHORIZATION_FAILED; an empty member id or one longer
  than 36 characters INVALID_REQUEST; ShareFetch v2 with ``IsRenewAck`` and a fetch
  limit that is not 0 INVALID_REQUEST; the share session's answer
  (:meth:`~mafka.group.share.sessions.ShareSessionCache.new_context`):
  SHARE_SESSION_NOT_FOUND, INVALID_SHARE_SESSION_EPOCH, INVALID_REQUEST for
  acknowledgements in a request opening a session, and SHARE_SESSION_LIMIT_REACHED
  (``group.share.max.share.sessions``), which Kafka answers only after ``MaxWaitMs``
  so a client does not spin on it.
* **Per partition**: a topic id this broker does not know UNKNOWN_TOPIC_ID; no Read on
  the topic TOPIC_AUTHORIZATION_FAILED; a partition not led here NOT_LEADER_OR_FOLLOWER
  with ``CurrentLeader`` and the leader's ``NodeEndpoints`` (on the request's
  listener), FENCED_LEADER_EPOCH likewise; the share-partition's own errors.
  Acknowledgements are answered in ``AcknowledgeErrorCode`` (ShareFetch) or
  ``ErrorCode`` (ShareAcknowledge): malformed batches INVALID_REQUEST, records the
  member does not hold INVALID_RECORD_STATE (nothing of that partition applied), no
  share-partition here UNKNOWN_TOPIC_OR_PARTITION.
* A ShareFetch applies its acknowledgements and fetches at the same time; it is
  answered once both are done (the acknowledgements written to the share coordinator).
  A new session's answer lists every partition of the request; a later one lists
  the partitions with records, errors or acknowledgements, and those just added to
  the session.  A final-epoch request (-1) fetches nothing; once answered, its
  session is closed and the member's remaining records there are released.
* ``AcquisitionLockTimeoutMs`` is the group's ``group.share.record.lock.duration.ms``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any

from twisted.internet import defer, task

from mafka.broker.handler_authz import GROUP, READ, TOPIC, AdminAuthz
from mafka.broker.share_fetch import PartitionFetch, ShareFetchService
from mafka.errors import ErrorCode, KafkaError, ShareSessionLimitReachedError
from mafka.group.share.acknowledgements import PartitionAcknowledgement, renew_fetch_error
from mafka.group.share.partition_state import AcknowledgementBatch
from mafka.group.share.sessions import FINAL_EPOCH, ShareFetchContextKind, TopicIdPartition

__all__ = ["handlers"]

SHARE_FETCH, SHARE_ACKNOWLEDGE = 78, 79
#: Kafka's ``isMemberIdValid``
_MAX_MEMBER_ID_LENGTH = 36
_WITH_LEADER = frozenset({ErrorCode.NOT_LEADER_OR_FOLLOWER, ErrorCode.FENCED_LEADER_EPOCH})


def handlers(broker: Any) -> dict[int, Any]:
    authz = AdminAuthz(broker)

    def service() -> ShareFetchService | None:
        svc = getattr(broker, "share_fetch", None)
        protocols = getattr(broker.config, "group_coordinator_rebalance_protocols", ("share",))
        return svc if "share" in protocols else None

    def refusal(connection: Any, group_id: str, member_id: str) -> tuple[ErrorCode, str | None] | None:
        """The request-wide checks every share request gets first."""
        if service() is None:
            return ErrorCode.UNSUPPORTED_VERSION, None
        if not authz.allows(connection, READ, GROUP, group_id):
            return ErrorCode.GROUP_AUTHORIZATION_FAILED, None
        if not member_id or len(member_id) > _MAX_MEMBER_ID_LENGTH:
            return ErrorCode.INVALID_REQUEST, "Invalid member id in the request."
        return None

    def topic_names(topic_ids: Iterable[bytes]) -> dict[bytes, str | None]:
        cache = broker.metadata_cache
        return {t: cache.topic_name(t) for t in topic_ids}

    def readable(connection: Any, names: Mapping[bytes, str | None]) -> set[bytes]:
        """The topic ids whose topics the connection may Read."""
        return {t for t, name in names.items() if name is not None and authz.allows(connection, READ, TOPIC, name)}

    def acknowledgements(
        topics: Iterable[Any], names: Mapping[bytes, str | None], allowed: set[bytes],
    ) -> tuple[dict[TopicIdPartition, list[AcknowledgementBatch]], dict[TopicIdPartition, PartitionAcknowledgement]]:
        """The request's acknowledgement batches to apply, and the partitions answered at once."""
        apply: dict[TopicIdPartition, list[AcknowledgementBatch]] = {}
        refused: dict[TopicIdPartition, PartitionAcknowledgement] = {}
        for t in topics:
            topic_id = bytes(t.topic_id)
            for p in t.partitions:
                tp = (topic_id, p.partition_index)
                if names.get(topic_id) is None:
                    refused[tp] = _ack_error(ErrorCode.UNKNOWN_TOPIC_ID)
                elif topic_id not in allowed:
                    refused[tp] = _ack_error(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                else:
                    apply[tp] = [AcknowledgementBatch(b.first_offset, b.last_offset, tuple(b.acknowledge_types))
                                 for b in p.acknowledgement_batches]
        return apply, refused

    def share_fetch(request: Any, connection: Any) -> Any:
        body = request.body
        version = request.header.api_version
        group_id, member_id = body.group_id or "", body.member_id or ""
        refused = refusal(connection, group_id, member_id)
        if refused is not None:
            return _fetch_error(*refused)
        svc = service()
        assert svc is not None  # refusal() checked
        renew = version >= 2 and bool(body.is_renew_ack)
        if renew:
            message = renew_fetch_error(max_wait_ms=body.max_wait_ms, min_bytes=body.min_bytes,
                                        max_bytes=body.max_bytes, max_records=body.max_records)
            if message is not None:
                return _fetch_error(ErrorCode.INVALID_REQUEST, message)
        wanted = [(bytes(t.topic_id), p.partition_index) for t in body.topics for p in t.partitions]
        forgotten = [(bytes(t.topic_id), index) for t in body.forgotten_topics_data for index in t.partitions]
        has_acks = any(p.acknowledgement_batches for t in body.topics for p in t.partitions)
        connection_id = _connection_id(connection)
        try:
            ctx = svc.sessions.new_context(group_id, member_id, body.share_session_epoch, wanted, forgotten,
                                           has_acknowledgements=has_acks, connection_id=connection_id)
        except ShareSessionLimitReachedError as exc:
            return task.deferLater(broker.reactor, max(0, body.max_wait_ms) / 1000.0, _fetch_error,
                                   exc.code, str(exc))
        except KafkaError as exc:
            return _fetch_error(exc.code, str(exc))
        if ctx.kind is ShareFetchContextKind.NEW_SESSION:
            svc.track_connection(connection_id, connection)
        names = topic_names({t for t, _ in ctx.partitions} | {bytes(t.topic_id) for t in body.topics})
        allowed = readable(connection, names)

        ack_refused: dict[TopicIdPartition, PartitionAcknowledgement] = {}
        acked: defer.Deferred
        if has_acks:
            apply, ack_refused = acknowledgements(body.topics, names, allowed)
            acked = svc.acknowledge(group_id, member_id, apply, api_version=version, is_renew_ack=renew)
        else:
            acked = defer.succeed({})

        fetch_refused: dict[TopicIdPartition, PartitionFetch] = {}
        fetched: defer.Deferred
        if renew or ctx.kind is ShareFetchContextKind.FINAL:
            fetched = defer.succeed({})
        else:
            fetchable = []
            for tp in ctx.partitions:
                if names.get(tp[0]) is None:
                    fetch_refused[tp] = PartitionFetch(ErrorCode.UNKNOWN_TOPIC_ID, ErrorCode.UNKNOWN_TOPIC_ID.description)
                elif tp[0] not in allowed:
                    fetch_refused[tp] = PartitionFetch(ErrorCode.TOPIC_AUTHORIZATION_FAILED)
                else:
                    fetchable.append(tp)
            fetched = svc.fetch(group_id, member_id, fetchable, max_wait_ms=body.max_wait_ms,
                                max_bytes=body.max_bytes, max_records=body.max_records,
                                rotation=max(0, body.share_session_epoch))

        def respond(results: list[Any]) -> dict[str, Any]:
            acks: dict[TopicIdPartition, PartitionAcknowledgement] = {**results[0], **ack_refused}
            fetches: dict[TopicIdPartition, PartitionFetch] = {**results[1], **fetch_refused}
            if ctx.kind is ShareFetchContextKind.NEW_SESSION:
                order = list(ctx.partitions)
            else:
                listed = set(fetches) | set(acks) | set(ctx.added)
                order = [tp for tp in ctx.partitions if tp in listed]
            order += [tp for tp in acks if tp not in order]
            endpoints: dict[int, dict[str, Any]] = {}
            topics: dict[bytes, list[dict[str, Any]]] = {}
            for tp in order:
                f = fetches.get(tp, PartitionFetch())
                a = acks.get(tp)
                leader = (-1, -1)
                if f.error in _WITH_LEADER or (a is not None and a.error_code in _WITH_LEADER):
                    leader = _current_leader(broker, names.get(tp[0]), tp[1], connection, endpoints)
                topics.setdefault(tp[0], []).append({
                    "partition_index": tp[1],
                    "error_code": int(f.error),
                    "error_message": f.message,
                    "acknowledge_error_code": int(a.error_code) if a is not None else 0,
                    "acknowledge_error_message": a.error_message if a is not None else None,
                    "current_leader": {"leader_id": leader[0], "leader_epoch": leader[1]},
                    "records": f.records,
                    "acquired_records": [
                        {"first_offset": r.first_offset, "last_offset": r.last_offset, "delivery_count": r.delivery_count}
                        for r in f.acquired
                    ],
                })
            if body.share_session_epoch == FINAL_EPOCH:
                svc.release_session(group_id, member_id)
            return {
                "throttle_time_ms": 0,
                "error_code": 0,
                "error_message": None,
                "acquisition_lock_timeout_ms": svc.record_lock_duration_ms(group_id),
                "responses": [{"topic_id": t, "partitions": ps} for t, ps in topics.items()],
                "node_endpoints": list(endpoints.values()),
            }

        return defer.gatherResults([acked, fetched], consumeErrors=True).addCallback(respond)

    def share_acknowledge(request: Any, connection: Any) -> Any:
        body = request.body
        version = request.header.api_version
        group_id, member_id = body.group_id or "", body.member_id or ""
        refused = refusal(connection, group_id, member_id)
        if refused is not None:
            return _acknowledge_error(*refused)
        svc = service()
        assert svc is not None  # refusal() checked
        try:
            svc.sessions.acknowledge_session_update(group_id, member_id, body.share_session_epoch)
        except KafkaError as exc:
            return _acknowledge_error(exc.code, str(exc))
        renew = version >= 2 and bool(body.is_renew_ack)
        names = topic_names(bytes(t.topic_id) for t in body.topics)
        apply, ack_refused = acknowledgements(body.topics, names, readable(connection, names))

        def respond(results: Mapping[TopicIdPartition, PartitionAcknowledgement]) -> dict[str, Any]:
            acks = {**results, **ack_refused}
            endpoints: dict[int, dict[str, Any]] = {}
            topics: dict[bytes, list[dict[str, Any]]] = {}
            for t in body.topics:
                topic_id = bytes(t.topic_id)
                for p in t.partitions:
                    tp = (topic_id, p.partition_index)
                    a = acks.get(tp, PartitionAcknowledgement())
                    leader = (-1, -1)
                    if a.error_code in _WITH_LEADER:
                        leader = _current_leader(broker, names.get(topic_id), tp[1], connection, endpoints)
                    topics.setdefault(topic_id, []).append({
                        "partition_index": tp[1],
                        "error_code": int(a.error_code),
                        "error_message": a.error_message,
                        "current_leader": {"leader_id": leader[0], "leader_epoch": leader[1]},
                    })
            if body.share_session_epoch == FINAL_EPOCH:
                svc.release_session(group_id, member_id)
            return {
                "throttle_time_ms": 0,
                "error_code": 0,
                "error_message": None,
                "acquisition_lock_timeout_ms": svc.record_lock_duration_ms(group_id),
                "responses": [{"topic_id": t, "partitions": ps} for t, ps in topics.items()],
                "node_endpoints": list(endpoints.values()),
            }

        return svc.acknowledge(group_id, member_id, apply, api_version=version, is_renew_ack=renew).addCallback(respond)

    return {SHARE_FETCH: share_fetch, SHARE_ACKNOWLEDGE: share_acknowledge}


def _connection_id(connection: Any) -> str:
    """A name for the connection while it is open (the session cache's ``connection_id``)."""
    return f"{getattr(connection, 'listener', '')}-{getattr(connection, 'peer', '')}-{id(connection):x}"


def _ack_error(code: ErrorCode) -> PartitionAcknowledgement:
    return PartitionAcknowledgement(code, code.description)


def _fetch_error(code: ErrorCode, message: str | None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message,
            "acquisition_lock_timeout_ms": 0, "responses": [], "node_endpoints": []}


def _acknowledge_error(code: ErrorCode, message: str | None) -> dict[str, Any]:
    return {"throttle_time_ms": 0, "error_code": int(code), "error_message": message,
            "acquisition_lock_timeout_ms": 0, "responses": [], "node_endpoints": []}


def _current_leader(
    broker: Any, topic: str | None, index: int, connection: Any, endpoints: dict[int, dict[str, Any]]
) -> tuple[int, int]:
    """Kafka's ``getCurrentLeader``: the leader and epoch (this broker's view of the replica if
    it hosts one, else the metadata cache), its endpoint on the request's listener added to
    *endpoints*; (-1, -1) when unknown."""
    if topic is None:
        return -1, -1
    partition = broker.replica_manager.partitions.get((topic, index))
    state = getattr(partition, "state", None)
    if state is not None:
        leader, epoch = state.leader, state.leader_epoch
    else:
        info = broker.metadata_cache.partition(topic, index)
        if info is None:
            return -1, -1
        leader, epoch = info.leader, info.leader_epoch
    listener = getattr(connection, "listener", None)
    if leader >= 0 and listener is not None and leader not in endpoints:
        endpoint = broker.metadata_cache.endpoint(leader, listener)
        if endpoint is not None:
            rack = getattr(broker.metadata_cache.brokers.get(leader), "rack", None)
            endpoints[leader] = {"node_id": leader, "host": endpoint[0], "port": endpoint[1], "rack": rack}
    return leader, epoch
