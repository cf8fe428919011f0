"""Fetch (1): consumers' and followers' fetches, long-polled, with fetch sessions (KIP-227).

From v7 a fetch may open or continue an incremental fetch session
(:mod:`mafka.broker.fetch_session`): a full fetch answers every requested
partition, in request order, and a session id when the cache has room; an
incremental fetch reads every partition of the session and answers only
those with news.  Sessionless fetches (epoch −1, or v4–6) answer every
partition (kafka-python drops sessionless responses that omit partitions).  Record
bytes are :class:`~mafka.log.segment.FileRegion` s that the network edge
sends with ``os.sendfile``; they never enter Python memory.  A fetch without
``min_bytes`` of data waits until an append wakes it or ``max_wait_ms``
passes.

From v4 a fetch names its ``isolation_level`` (KIP-98): READ_COMMITTED (1)
consumers read up to each partition's last stable offset and are answered
the aborted transactions (``producer_id``, ``first_offset``) overlapping the
records; READ_UNCOMMITTED ones get ``aborted_transactions`` null, as Kafka
answers.  Every answer reports the partition's last stable offset.

From v11 a fetch carries client metadata (KIP-392): a consumer's may be
served by a follower, and a leader with a ``replica.selector.class`` may
answer a partition with no records and the ``preferred_read_replica`` to
fetch it from instead (:meth:`ReplicaManager.fetch`).  Older consumers'
fetches to a follower stay NOT_LEADER_OR_FOLLOWER.

Fetch v0–3 come from clients older than the v2 format: their records are
down-converted (:mod:`mafka.broker.down_conversion`) — magic 0 for v0–1,
magic 1 for v2–3 — in a worker thread, instead of being sent from the
file.  As Kafka's ``KafkaApis``, a topic with ``compression.type=zstd``
answers them UNSUPPORTED_COMPRESSION_TYPE, and one with
``message.downconversion.enable=false`` UNSUPPORTED_VERSION (to consumers).
Converted bytes are held in memory until sent (Kafka streams them, KIP-283),
so a response's total is also capped at the broker's ``fetch.max.bytes``.

Authorization, as Kafka 2.8's ``handleFetchRequest``, is decided for every
partition the fetch reads — each partition of the session for an incremental
fetch, so a session opened before an ACL was removed reads nothing more:

* a fetch from a follower (``replica_id`` ≥ 0) needs ClusterAction on the
  cluster; without it every partition is TOPIC_AUTHORIZATION_FAILED (no
  top-level error, as Kafka answers) and nothing is read — no follower state
  is updated, so a client cannot pose as a replica (the CVE-2018-1288 class);
* a consumer needs Read on each topic; a refused topic's partitions are
  TOPIC_AUTHORIZATION_FAILED, the others are read.

A refused partition is never read.  Within a session it stays cached (Kafka
keeps it too) and, as any erroring partition, is answered in every
incremental response until it is forgotten or the ACL allows it.  Beyond
Kafka, which creates the session before checking, a follower session is
*privileged* (harder to evict, see :mod:`mafka.broker.fetch_session`) only
when its principal has ClusterAction, so a client posing as a follower
cannot evict other fetchers' sessions either.

The broker provides ``replica_manager`` and ``fetch_sessions`` (a
:class:`~mafka.broker.fetch_session.FetchSessionCache`); for legacy fetches
it may provide ``run_blocking``, ``config`` and ``topic_configs``; and
optionally ``authorizer``.
"""

from __future__ import annotations

from collections.abc import Sequence
from functools import partial
from typing import Any

from twisted.internet import defer

from mafka.errors import ErrorCode, KafkaError

from ..cold_reads import resolve
from ..down_conversion import down_convert, fetch_magic
from ..fetch_session import FINAL_EPOCH, FetchSessionCache, new_context
from ..handler_authz import CLUSTER_ACTION, READ, TOPIC, cluster_allowed, split_allowed
from ..replica_manager import FetchedPartition, FetchPartition
from ..replica_selector import ClientMetadata

FETCH = 1
#: Kafka's default ``fetch.max.bytes``, for brokers without a config (unit tests).
_DEFAULT_FETCH_MAX_BYTES = 57671680


def handlers(broker: Any) -> dict[int, Any]:
    # Unit tests' brokers may have none: then this broker's handlers keep their own.  (Not ``or``:
    # an empty cache is falsy, and the broker's, sized by its config, starts empty.)
    sessions = getattr(broker, "fetch_sessions", None)
    if sessions is None:
        sessions = FetchSessionCache(1000)
    listeners = getattr(getattr(broker, "replica_manager", None), "change_listeners", None)
    if listeners is not None and sessions.partition_changed not in listeners:
        listeners.append(sessions.partition_changed)  # idle partitions of followers' sessions wake on changes

    def fetch(request: Any, connection: Any) -> Any:
        body = request.body
        wanted = [
            FetchPartition(
                t.topic, p.partition, p.fetch_offset, p.partition_max_bytes, p.current_leader_epoch, p.log_start_offset
            )
            for t in body.topics
            for p in t.partitions
        ]
        from_follower = body.replica_id >= 0
        replica_allowed = from_follower and cluster_allowed(broker, connection, CLUSTER_ACTION)
        if request.header.api_version >= 7:
            forgotten = [(t.topic, index) for t in body.forgotten_topics_data for index in t.partitions]
            ctx = new_context(
                sessions,
                broker.replica_manager.now_ms(),
                session_id=body.session_id,
                session_epoch=body.session_epoch,
                wanted=wanted,
                forgotten=forgotten,
                privileged=replica_allowed,
            )
        else:
            ctx = new_context(sessions, 0, session_id=0, session_epoch=FINAL_EPOCH, wanted=wanted, forgotten=(), privileged=False)
        if ctx.error != ErrorCode.NONE:
            return {"throttle_time_ms": 0, "error_code": ctx.error, "session_id": 0, "responses": []}
        if from_follower:
            readable, denied = (list(ctx.partitions), []) if replica_allowed else ([], list(ctx.partitions))
        else:
            readable, denied = split_allowed(broker, connection, READ, TOPIC, ctx.partitions, _topic_of)
        magic = fetch_magic(request.header.api_version)
        rm = broker.replica_manager
        isolation = (getattr(body, "isolation_level", 0) or 0) if request.header.api_version >= 4 else 0
        if denied and not readable:
            # Kafka answers at once when every partition was refused (no long poll).
            d: defer.Deferred = defer.succeed([])
        elif magic is None:
            client = None
            if request.header.api_version >= 11:
                # Kafka's KafkaApis: every v11+ fetch has client metadata, an empty rack included.
                client = ClientMetadata(
                    body.rack_id or "", request.header.client_id or "", getattr(connection, "peer", ""),
                    getattr(connection, "listener", "PLAINTEXT"),
                )
            d = rm.fetch(body.replica_id, body.max_wait_ms, body.min_bytes, body.max_bytes, readable,
                         client_metadata=client, isolation_level=isolation, on_park=ctx.on_park if replica_allowed else None)
        else:
            d = rm.fetch(body.replica_id, body.max_wait_ms, body.min_bytes, body.max_bytes, readable,
                         whole_first_batches=True)
        if denied:
            d.addCallback(_with_refusals, ctx.partitions, denied)

        def answer(chosen: list[FetchedPartition], error: ErrorCode, session_id: int,
                   converted: dict[tuple[str, int], bytes | ErrorCode],
                   cold: dict[tuple[str, int], tuple[Any, list | None]] | None = None) -> dict[str, Any]:
            responses: list[dict[str, Any]] = []
            for r in chosen:
                if not responses or responses[-1]["topic"] != r.topic:
                    responses.append({"topic": r.topic, "partitions": []})
                legacy = converted.get((r.topic, r.partition))
                if isinstance(legacy, ErrorCode):
                    r = FetchedPartition(r.topic, r.partition, legacy, None)
                part = _partition(r)
                if isinstance(legacy, bytes):
                    part["records"] = legacy
                read = cold.get((r.topic, r.partition)) if cold else None
                if read is not None:
                    records, aborted = read
                    part["records"] = records if records is not None else b""
                    if records is None:  # the cold read failed (cold_reads logged why)
                        part["error_code"] = ErrorCode.KAFKA_STORAGE_ERROR
                    if part["aborted_transactions"] is not None:
                        part["aborted_transactions"] = [
                            {"producer_id": t.producer_id, "first_offset": t.first_offset} for t in aborted or ()]
                responses[-1]["partitions"].append(part)
            return {"throttle_time_ms": 0, "error_code": error, "session_id": session_id, "responses": responses}

        def respond(results: list[FetchedPartition]) -> Any:
            error, session_id, chosen = ctx.respond(
                results, rm.now_ms(), partial(rm.idle_follower, body.replica_id) if replica_allowed and magic is None else None)
            if magic is None:
                probe = getattr(broker, "page_cache", None)
                if probe is not None and body.replica_id < 0:
                    # one probe per response: the first hot region (an estimate, not a census)
                    hot = next((r.result.data.region for r in chosen if r.result is not None
                                and r.result.data.region is not None and not r.result.data.region.cold), None)
                    if hot is not None:
                        probe.probe(hot)
                cold = _cold_regions(chosen)
                if cold:
                    reader = getattr(broker, "cold_reads", None)
                    if reader is not None and reader.isolate:
                        return reader.read_all(cold).addCallback(
                            lambda read: answer(chosen, error, session_id, {}, read))
                    if reader is not None:
                        return answer(chosen, error, session_id, {}, reader.resolve_here(cold))
                    return answer(chosen, error, session_id, {}, {key: resolve(region) for key, region in cold})
                return answer(chosen, error, session_id, {})
            refused = {
                (r.topic, r.partition): code
                for r in chosen
                if r.result is not None and (code := _legacy_refusal(broker, r.topic, body.replica_id)) is not None
            }
            config = getattr(broker, "config", None)
            response_max = getattr(config, "fetch_max_bytes", _DEFAULT_FETCH_MAX_BYTES)
            if request.header.api_version >= 3:
                response_max = min(response_max, body.max_bytes)
            run_blocking = getattr(broker, "run_blocking", None) or (lambda fn, *args: defer.maybeDeferred(fn, *args))
            converting = run_blocking(
                _down_convert_all, chosen, {(p.topic, p.partition): p for p in ctx.partitions}, refused, magic,
                response_max, request.header.api_version >= 3,
            )
            return converting.addCallback(lambda converted: answer(chosen, error, session_id, converted))

        return d.addCallback(respond)

    return {FETCH: fetch}


def _topic_of(p: FetchPartition) -> str:
    return p.topic


def _with_refusals(
    read: list[FetchedPartition], partitions: Sequence[FetchPartition], denied: Sequence[FetchPartition],
) -> list[FetchedPartition]:
    """*read* (the results of the readable partitions, in order) merged with the *denied* ones, in *partitions* order.

    A refused partition is answered as Kafka's ``errorResponse``: TOPIC_AUTHORIZATION_FAILED,
    no records, every offset −1.
    """
    denied_ids = {id(p) for p in denied}
    results = iter(read)
    return [
        FetchedPartition(p.topic, p.partition, ErrorCode.TOPIC_AUTHORIZATION_FAILED, None)
        if id(p) in denied_ids else next(results)
        for p in partitions
    ]


def _setting(broker: Any, topic: str, name: str, broker_key: str, default: Any) -> str:
    """A topic config that LogConfig does not model: the topic's override, the broker's dynamic or static value."""
    configs = getattr(broker, "topic_configs", None)
    if configs is not None:
        value = configs.overrides.get(topic, {}).get(name)
        if value is None:
            value = getattr(configs, "broker_overrides", {}).get(broker_key)
        if value is not None:
            return str(value).strip().lower()
    config = getattr(broker, "config", None)
    return str(getattr(config, broker_key.replace(".", "_"), default)).strip().lower()


def _legacy_refusal(broker: Any, topic: str, replica_id: int) -> ErrorCode | None:
    """Kafka's ``maybeConvertFetchedData`` refusals of a Fetch below v10 / needing down-conversion."""
    if _setting(broker, topic, "compression.type", "compression.type", "producer") == "zstd":
        return ErrorCode.UNSUPPORTED_COMPRESSION_TYPE
    enabled = _setting(broker, topic, "message.downconversion.enable", "log.message.downconversion.enable", True)
    if replica_id < 0 and enabled == "false":
        return ErrorCode.UNSUPPORTED_VERSION
    return None


def _down_convert_all(
    chosen: Sequence[FetchedPartition],
    wanted: dict[tuple[str, int], FetchPartition],
    refused: dict[tuple[str, int], ErrorCode],
    magic: int,
    response_max: int,
    keep_first_whole: bool,
) -> dict[tuple[str, int], bytes | ErrorCode]:
    """Each read partition's records as legacy messages (or its refusal), in a worker thread.

    Limits are counted in converted bytes: each partition's
    ``partition_max_bytes`` and, across the response, *response_max*; with
    *keep_first_whole* (Fetch v3) the response's first message is whole.
    """
    out: dict[tuple[str, int], bytes | ErrorCode] = {}
    left = response_max
    first = True
    for r in chosen:
        if r.result is None:
            continue
        tp = (r.topic, r.partition)
        if tp in refused:
            out[tp] = refused[tp]
            continue
        p = wanted[tp]
        try:
            region, _ = resolve(r.result.data.region) if r.result.data.region is not None else (None, None)
            data = down_convert(region or None, p.fetch_offset, magic, min(p.max_bytes, left),
                                keep_first_whole=keep_first_whole and first)
        except KafkaError as exc:
            out[tp] = exc.code
            continue
        except OSError:
            # The segment went away under the read (a deleted log): what Kafka answers a storage
            # error to Fetch v0–5, so the client refreshes its metadata and retries.
            out[tp] = ErrorCode.NOT_LEADER_OR_FOLLOWER
            continue
        out[tp] = data
        if data:
            first = False
            left = max(0, left - len(data))
    return out


def _cold_regions(chosen: list[FetchedPartition]) -> list[tuple[tuple[str, int], Any]]:
    """The answers whose records are in a cold segment (:mod:`mafka.broker.cold_reads`)."""
    return [
        ((r.topic, r.partition), region)
        for r in chosen
        if r.result is not None and (region := r.result.data.region) is not None and getattr(region, "cold", False)
    ]


def _partition(r: FetchedPartition) -> dict[str, Any]:
    if r.result is None:
        return {
            "partition_index": r.partition,
            "error_code": r.error,
            "high_watermark": -1,
            "last_stable_offset": -1,
            "log_start_offset": -1,
            "aborted_transactions": None,
            "preferred_read_replica": -1,
            "records": b"",
        }
    res = r.result
    aborted = res.aborted_transactions
    return {
        "partition_index": r.partition,
        "error_code": r.error,
        "high_watermark": res.high_watermark,
        "last_stable_offset": res.last_stable_offset,
        "log_start_offset": res.log_start_offset,
        # Kafka: null unless READ_COMMITTED (FetchDataInfo.abortedTransactions is None then).
        "aborted_transactions": None
        if aborted is None
        else [{"producer_id": pid, "first_offset": first} for pid, first in aborted],
        "preferred_read_replica": r.preferred_read_replica,
        "records": res.data.region if res.data.region is not None else b"",
    }
