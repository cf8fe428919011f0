"""Fetch (1): sessionless fetches for consumers (and, later, followers), long-polled.

Every requested partition is answered, in request order, with session id 0
(kafka-python drops sessionless responses that omit partitions).  Record
bytes are :class:`~mafka.log.segment.FileRegion` s that the network edge
sends with ``os.sendfile``; they never enter Python memory.  A fetch without
``min_bytes`` of data waits until an append wakes it or ``max_wait_ms``
passes.  No transactions yet: the last stable offset is the high watermark.

The broker provides ``replica_manager``.
"""

from __future__ import annotations

from typing import Any

from mafka.errors import ErrorCode

from ..replica_manager import FetchedPartition, FetchPartition

FETCH = 1


def handlers(broker: Any) -> dict[int, Any]:
    def fetch(request: Any, connection: Any) -> Any:
        body = request.body
        wanted = [
            FetchPartition(t.topic, p.partition, p.fetch_offset, p.partition_max_bytes, p.current_leader_epoch)
            for t in body.topics
            for p in t.partitions
        ]
        d = broker.replica_manager.fetch(body.replica_id, body.max_wait_ms, body.min_bytes, body.max_bytes, wanted)

        def respond(results: list[FetchedPartition]) -> dict[str, Any]:
            responses: list[dict[str, Any]] = []
            for r in results:
                if not responses or responses[-1]["topic"] != r.topic:
                    responses.append({"topic": r.topic, "partitions": []})
                responses[-1]["partitions"].append(_partition(r))
            return {"throttle_time_ms": 0, "error_code": ErrorCode.NONE, "session_id": 0, "responses": responses}

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
