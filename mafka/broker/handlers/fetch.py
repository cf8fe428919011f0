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
passes.  No transactions yet: the last stable offset is the high watermark.

The broker provides ``replica_manager`` and ``fetch_sessions`` (a
:class:`~mafka.broker.fetch_session.FetchSessionCache`).
"""

from __future__ import annotations

from typing import Any

from mafka.errors import ErrorCode

from ..fetch_session import FINAL_EPOCH, FetchSessionCache, new_context
from ..replica_manager import FetchedPartition, FetchPartition

FETCH = 1


def handlers(broker: Any) -> dict[int, Any]:
    # Unit tests' brokers may have none: then this broker's handlers keep their own.
    sessions = getattr(broker, "fetch_sessions", None) or FetchSessionCache(1000)

    def fetch(request: Any, connection: Any) -> Any:
        body = request.body
        wanted = [
            FetchPartition(t.topic, p.partition, p.fetch_offset, p.partition_max_bytes, p.current_leader_epoch)
            for t in body.topics
            for p in t.partitions
        ]
        if request.header.api_version >= 7:
            forgotten = [(t.topic, index) for t in body.forgotten_topics_data for index in t.partitions]
            ctx = new_context(
                sessions,
                broker.replica_manager.now_ms(),
                session_id=body.session_id,
                session_epoch=body.session_epoch,
                wanted=wanted,
                forgotten=forgotten,
                privileged=body.replica_id >= 0,
            )
        else:
            ctx = new_context(sessions, 0, session_id=0, session_epoch=FINAL_EPOCH, wanted=wanted, forgotten=(), privileged=False)
        if ctx.error != ErrorCode.NONE:
            return {"throttle_time_ms": 0, "error_code": ctx.error, "session_id": 0, "responses": []}
        d = broker.replica_manager.fetch(body.replica_id, body.max_wait_ms, body.min_bytes, body.max_bytes, ctx.partitions)

        def respond(results: list[FetchedPartition]) -> dict[str, Any]:
            error, session_id, chosen = ctx.respond(results, broker.replica_manager.now_ms())
            responses: list[dict[str, Any]] = []
            for r in chosen:
                if not responses or responses[-1]["topic"] != r.topic:
                    responses.append({"topic": r.topic, "partitions": []})
                responses[-1]["partitions"].append(_partition(r))
            return {"throttle_time_ms": 0, "error_code": error, "session_id": session_id, "responses": responses}

        return d.addCallback(respond)

    return {FETCH: fetch}


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
    return {
        "partition_index": r.partition,
        "error_code": r.error,
        "high_watermark": res.high_watermark,
        "last_stable_offset": res.high_watermark,
        "log_start_offset": res.log_start_offset,
        "aborted_transactions": None,
        "preferred_read_replica": -1,
        "records": res.data.region if res.data.region is not None else b"",
    }
