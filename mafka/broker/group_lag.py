"""Consumer lag, exported by each group's coordinator (kafka_exporter's and kafka-lag-exporter's series).

A group's coordinator holds its committed offsets; lag needs each committed
partition's end as well, which its leader knows.  :class:`GroupLagSampler`
runs on the coordinator broker every :data:`SAMPLE_INTERVAL_S`: it reads the
committed offsets of the groups it coordinates, takes the high watermark of the
partitions led here from the replica manager and asks the other leaders with
one ListOffsets (latest, read_uncommitted — what kafka_exporter asks) each, and
keeps the answers in a :class:`LagTracker`.  A scrape then reads the tracker:
every broker exports only its own groups, so scraping every broker covers each
group once.

Lag in seconds (kafka-lag-exporter's ``kafka_consumergroup_group_lag_seconds``)
comes from the end offsets' history: the time at which the partition's end
passed the committed offset, interpolated between the two samples around it;
a committed offset older than the whole history (a few minutes) gives at least
the history's age.
"""

from __future__ import annotations

import logging
from collections import defaultdict, deque
from collections.abc import Callable
from typing import Any

from twisted.internet import defer

from mafka.errors import ErrorCode

__all__ = ["GroupLagSampler", "LagTracker", "SAMPLE_INTERVAL_S"]

log = logging.getLogger("mafka.broker.group_lag")

#: how often the coordinator refreshes end offsets (kafka-lag-exporter polls every 30 s, kafka_exporter per scrape)
SAMPLE_INTERVAL_S = 5.0
#: end-offset samples kept per partition for the lag in seconds
HISTORY = 60
LIST_OFFSETS = 2
LIST_OFFSETS_VERSION = 1
LATEST = -1


class LagTracker:
    """End offsets over time, and the committed offsets of the last sample (plain Python)."""

    def __init__(self, history: int = HISTORY) -> None:
        self.history = history
        self.ends: dict[tuple[str, int], deque[tuple[int, int]]] = {}
        #: (group, topic, partition, committed offset) as of the last sample
        self.committed: list[tuple[str, str, int, int]] = []

    def record(self, now_ms: int, ends: dict[tuple[str, int], int], committed: list[tuple[str, str, int, int]]) -> None:
        for tp, offset in ends.items():
            points = self.ends.get(tp)
            if points is None:
                points = self.ends[tp] = deque(maxlen=self.history)
            if points and points[-1][1] == offset and len(points) > 1 and points[-2][1] == offset:
                points[-1] = (now_ms, offset)  # a flat run keeps its first and last points only
            else:
                points.append((now_ms, offset))
        for tp in [tp for tp in self.ends if tp not in ends]:
            del self.ends[tp]
        self.committed = committed

    def end_offset(self, tp: tuple[str, int]) -> int | None:
        points = self.ends.get(tp)
        return points[-1][1] if points else None

    def lag_seconds(self, tp: tuple[str, int], committed: int, now_ms: int) -> float | None:
        """Seconds since the partition's end passed *committed* (0 when caught up; None if unknown)."""
        points = self.ends.get(tp)
        if not points:
            return None
        if committed >= points[-1][1]:
            return 0.0
        previous: tuple[int, int] | None = None
        for at, offset in reversed(points):
            if offset <= committed:
                if previous is None:
                    return max(0.0, (now_ms - at) / 1000.0)
                later_at, later_offset = previous
                share = (committed - offset) / (later_offset - offset) if later_offset > offset else 0.0
                passed = at + share * (later_at - at)
                return max(0.0, (now_ms - passed) / 1000.0)
            previous = (at, offset)
        return max(0.0, (now_ms - points[0][0]) / 1000.0)

    def rows(self, now_ms: int) -> list[tuple[str, str, int, int, int, float | None]]:
        """``(group, topic, partition, committed, lag, lag seconds)`` for each committed offset with a known end."""
        out = []
        for group, topic, index, committed in self.committed:
            end = self.end_offset((topic, index))
            if end is None:
                continue
            out.append((group, topic, index, committed, max(0, end - committed),
                        self.lag_seconds((topic, index), committed, now_ms)))
        return out


class GroupLagSampler:
    """Refreshes a :class:`LagTracker` from this broker's groups and the partitions' leaders (on the reactor)."""

    def __init__(self, broker: Any, connect: Callable[[int, str, int], Any] | None = None) -> None:
        self.broker = broker
        self.tracker = LagTracker()
        self._connect = connect
        self._connections: dict[int, Any] = {}

    def now_ms(self) -> int:
        return int(self.broker.reactor.seconds() * 1000)

    def committed(self) -> list[tuple[str, str, int, int]]:
        service = getattr(self.broker, "group_service", None)
        if service is None:
            return []
        return service.coordinator.group_manager.metrics_view()[1]

    @defer.inlineCallbacks
    def sample(self) -> Any:
        committed = self.committed()
        if not committed and not self.tracker.ends:
            return
        wanted = {(topic, index) for _, topic, index, _ in committed}
        ends: dict[tuple[str, int], int] = {}
        by_leader: dict[int, list[tuple[str, int]]] = defaultdict(list)
        rm = self.broker.replica_manager
        cache = self.broker.metadata_cache
        for tp in wanted:
            partition = rm.partitions.get(tp) if rm is not None else None
            if partition is not None and partition.is_leader:
                ends[tp] = partition.high_watermark
                continue
            info = cache.partition(*tp)
            if info is not None and info.leader >= 0:
                by_leader[info.leader].append(tp)
        answers = yield defer.DeferredList(
            [self._ask(leader, tps) for leader, tps in by_leader.items()], consumeErrors=True)
        for ok, answer in answers:
            if ok and answer:
                ends.update(answer)
        self.tracker.record(self.now_ms(), ends, committed)

    def _ask(self, leader: int, tps: list[tuple[str, int]]) -> defer.Deferred:
        conn = self._connection(leader)
        if conn is None:
            return defer.succeed({})
        topics: dict[str, list[dict[str, int]]] = defaultdict(list)
        for topic, index in tps:
            topics[topic].append({"partition_index": index, "timestamp": LATEST})
        body = {"replica_id": -1, "isolation_level": 0,
                "topics": [{"name": t, "partitions": ps} for t, ps in topics.items()]}

        def answered(response: Any) -> dict[tuple[str, int], int]:
            return {(t.name, p.partition_index): p.offset
                    for t in response.topics for p in t.partitions if p.error_code == ErrorCode.NONE}

        def failed(failure: Any) -> dict[tuple[str, int], int]:
            log.debug("ListOffsets to broker %d for consumer lag failed: %s", leader, failure.getErrorMessage())
            self._connections.pop(leader, None)
            return {}

        return conn.request(LIST_OFFSETS, LIST_OFFSETS_VERSION, body).addCallbacks(answered, failed)

    def _connection(self, broker_id: int) -> Any:
        conn = self._connections.get(broker_id)
        if conn is not None:
            return conn
        endpoint = self.broker.metadata_cache.endpoint(broker_id, self.broker.config.inter_broker_listener)
        if endpoint is None:
            return None
        host, port = endpoint
        if self._connect is not None:
            conn = self._connect(broker_id, host, port)
        else:
            from mafka.interbroker.connection import InterBrokerConnection

            conn = InterBrokerConnection(self.broker.reactor, host, port, f"broker-{self.broker.broker_id}-consumer-lag",
                                         security=getattr(self.broker, "interbroker_security", None))
        self._connections[broker_id] = conn
        return conn

    def close(self) -> None:
        for conn in self._connections.values():
            close = getattr(conn, "close", None)
            if close is not None:
                close()
        self._connections.clear()
