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
is how old the first record the group has not consumed is: now minus the
timestamp of the record at the committed offset (its CreateTime, or its
LogAppendTime on topics that keep that), read with one small Fetch per leader
(``max_bytes`` 1: the batch holding the offset) and cached per offset, since a
record's timestamp never changes.  A group that has consumed everything is 0 s
behind; clocks of producers that write CreateTime skew it as they skew Kafka's.
"""

from __future__ import annotations

import logging
from collections import OrderedDict, defaultdict
from collections.abc import Callable
from typing import Any

from twisted.internet import defer

from mafka.errors import ErrorCode
from mafka.wire.records import iter_records

__all__ = ["GroupLagSampler", "LagTracker", "SAMPLE_INTERVAL_S", "record_timestamp"]

log = logging.getLogger("mafka.broker.group_lag")

#: how often the coordinator refreshes end offsets (kafka-lag-exporter polls every 30 s, kafka_exporter per scrape)
SAMPLE_INTERVAL_S = 5.0
LIST_OFFSETS, FETCH = 2, 1
LIST_OFFSETS_VERSION, FETCH_VERSION = 1, 4
LATEST = -1
#: record timestamps remembered, (topic, partition, offset) → ms
TIMESTAMPS_KEPT = 50_000


def record_timestamp(records: bytes | memoryview, offset: int) -> int | None:
    """The timestamp of the first record at or after *offset* in a fetched record set (None: none there)."""
    try:
        for record in iter_records(records, verify_crc=False):
            if record.offset >= offset:
                return record.timestamp
    except Exception:  # noqa: BLE001 - a damaged answer gives no timestamp, never a failed sample
        return None
    return None


class LagTracker:
    """End offsets, committed offsets and record timestamps of the last sample (plain Python)."""

    def __init__(self, kept: int = TIMESTAMPS_KEPT) -> None:
        self.kept = kept
        self.ends: dict[tuple[str, int], int] = {}
        #: (group, topic, partition, committed offset) as of the last sample
        self.committed: list[tuple[str, str, int, int]] = []
        #: (topic, partition, offset) → the record's timestamp, newest last
        self.timestamps: OrderedDict[tuple[str, int, int], int] = OrderedDict()

    def record(self, ends: dict[tuple[str, int], int], committed: list[tuple[str, str, int, int]]) -> None:
        self.ends = ends
        self.committed = committed

    def remember(self, topic: str, index: int, offset: int, timestamp: int) -> None:
        key = (topic, index, offset)
        self.timestamps[key] = timestamp
        self.timestamps.move_to_end(key)
        while len(self.timestamps) > self.kept:
            self.timestamps.popitem(last=False)

    def missing_timestamps(self) -> dict[tuple[str, int], int]:
        """Partition → the committed offset whose record's timestamp is wanted (one per partition)."""
        out: dict[tuple[str, int], int] = {}
        for _, topic, index, committed in self.committed:
            end = self.ends.get((topic, index))
            if end is not None and committed < end and (topic, index, committed) not in self.timestamps:
                out.setdefault((topic, index), committed)
        return out

    def rows(self, now_ms: int) -> list[tuple[str, str, int, int, int, float | None]]:
        """``(group, topic, partition, committed, lag, lag seconds)`` for each committed offset with a known end."""
        out = []
        for group, topic, index, committed in self.committed:
            end = self.ends.get((topic, index))
            if end is None:
                continue
            lag = max(0, end - committed)
            seconds: float | None = 0.0
            if lag:
                ts = self.timestamps.get((topic, index, committed))
                seconds = None if ts is None else max(0.0, (now_ms - ts) / 1000.0)
            out.append((group, topic, index, committed, lag, seconds))
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
        return service.coordinator.group_manager.committed_offsets()

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
        self.tracker.record(ends, committed)
        # The timestamps of the first records not consumed, from each partition's leader (this broker too)
        wanted_ts: dict[int, dict[tuple[str, int], int]] = defaultdict(dict)
        for tp, offset in self.tracker.missing_timestamps().items():
            info = cache.partition(*tp)
            if info is not None and info.leader >= 0:
                wanted_ts[info.leader][tp] = offset
        yield defer.DeferredList([self._timestamps(leader, offsets) for leader, offsets in wanted_ts.items()],
                                 consumeErrors=True)

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

    def _timestamps(self, leader: int, offsets: dict[tuple[str, int], int]) -> defer.Deferred:
        conn = self._connection(leader)
        if conn is None:
            return defer.succeed(None)
        topics: dict[str, list[dict[str, int]]] = defaultdict(list)
        for (topic, index), offset in offsets.items():
            # max bytes 1: the leader answers with the one batch holding the offset, whatever its size
            topics[topic].append({"partition": index, "fetch_offset": offset, "partition_max_bytes": 1})
        body = {"replica_id": -1, "max_wait_ms": 0, "min_bytes": 0, "max_bytes": 1, "isolation_level": 0,
                "topics": [{"topic": t, "partitions": ps} for t, ps in topics.items()]}

        def answered(response: Any) -> None:
            for topic in response.responses:
                for p in topic.partitions:
                    offset = offsets.get((topic.topic, p.partition_index))
                    if offset is None or p.error_code != ErrorCode.NONE or not p.records:
                        continue
                    ts = record_timestamp(p.records, offset)
                    if ts is not None:
                        self.tracker.remember(topic.topic, p.partition_index, offset, ts)

        def failed(failure: Any) -> None:
            log.debug("Fetch from broker %d for lag timestamps failed: %s", leader, failure.getErrorMessage())
            self._connections.pop(leader, None)

        return conn.request(FETCH, FETCH_VERSION, body).addCallbacks(answered, failed)

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
