"""Per-topic traffic counters (Kafka's ``BrokerTopicStats``), plain Python.

Kafka's ``kafka.server:type=BrokerTopicMetrics`` meters, kept as integers the
reactor increments once per partition of a request (never per record: a
batch's record count comes from its header) and the metrics endpoint reads:

* ``MessagesInPerSec``, ``BytesInPerSec`` — what a produce appended as leader
  (client and coordinator appends alike, as Kafka's ``appendToLocalLog``);
* ``BytesOutPerSec`` — what a consumer fetch returned (followers' fetches are
  ``ReplicationBytesOutPerSec``, all topics only, as Kafka);
* ``ReplicationBytesInPerSec`` — what this broker appended as a follower;
* ``BytesRejectedPerSec`` — batches refused as too large;
* ``TotalProduceRequestsPerSec`` / ``FailedProduceRequestsPerSec`` and the
  fetch pair — one per partition of a request; a failure is any error but the
  ones Kafka does not count (not leader, unknown partition, too large, corrupt,
  storage error; for fetches also fenced/unknown epoch and offset out of range).

The all-topics figures are kept beside the per-topic ones (Kafka's
``allTopicsStats``), so a deleted topic's traffic stays in them.
"""

from __future__ import annotations

import operator
from dataclasses import dataclass, fields

from mafka.errors import ErrorCode

__all__ = ["BrokerTopicStats", "TopicCounters", "NOT_FAILED_FETCH", "NOT_FAILED_PRODUCE"]

#: produce errors Kafka's ReplicaManager does not count as failed produce requests
NOT_FAILED_PRODUCE = frozenset({
    ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE, ErrorCode.CORRUPT_MESSAGE,
    ErrorCode.KAFKA_STORAGE_ERROR,
})
#: fetch errors Kafka's ReplicaManager does not count as failed fetch requests
NOT_FAILED_FETCH = frozenset({
    ErrorCode.NONE, ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, ErrorCode.NOT_LEADER_OR_FOLLOWER,
    ErrorCode.UNKNOWN_LEADER_EPOCH, ErrorCode.FENCED_LEADER_EPOCH, ErrorCode.REPLICA_NOT_AVAILABLE,
    ErrorCode.KAFKA_STORAGE_ERROR, ErrorCode.OFFSET_OUT_OF_RANGE,
})
#: the errors whose batch counts as rejected bytes
_REJECTED = frozenset({ErrorCode.MESSAGE_TOO_LARGE, ErrorCode.RECORD_LIST_TOO_LARGE})


@dataclass(slots=True)
class TopicCounters:
    """One topic's (or all topics') counts since the broker started."""

    messages_in: int = 0
    bytes_in: int = 0
    bytes_out: int = 0
    bytes_rejected: int = 0
    replication_bytes_in: int = 0
    replication_bytes_out: int = 0
    total_produce_requests: int = 0
    failed_produce_requests: int = 0
    total_fetch_requests: int = 0
    failed_fetch_requests: int = 0

    def as_tuple(self) -> tuple[int, ...]:
        return _AS_TUPLE(self)


#: a TopicCounters' fields in order, read in one C call (a scrape copies thousands)
_AS_TUPLE = operator.attrgetter(*(f.name for f in fields(TopicCounters)))


class BrokerTopicStats:
    """The counters of every topic with traffic here, and of all topics together."""

    def __init__(self) -> None:
        self.all_topics = TopicCounters()
        self.topics: dict[str, TopicCounters] = {}

    def of(self, topic: str) -> TopicCounters:
        counters = self.topics.get(topic)
        if counters is None:
            counters = self.topics[topic] = TopicCounters()
        return counters

    def produced(self, topic: str, error: int, records: int = 0, size: int = 0) -> None:
        """One partition of a produce request: appended (*records*, *size* bytes) or refused with *error*."""
        t, a = self.of(topic), self.all_topics
        t.total_produce_requests += 1
        a.total_produce_requests += 1
        if error == ErrorCode.NONE:
            t.messages_in += records
            a.messages_in += records
            t.bytes_in += size
            a.bytes_in += size
            return
        if error in _REJECTED:
            t.bytes_rejected += size
            a.bytes_rejected += size
        if error not in NOT_FAILED_PRODUCE:
            t.failed_produce_requests += 1
            a.failed_produce_requests += 1

    def fetched(self, topic: str, error: int, size: int = 0, *, follower: bool = False) -> None:
        """One partition of a fetch: *size* bytes returned, or *error*."""
        t, a = self.of(topic), self.all_topics
        t.total_fetch_requests += 1
        a.total_fetch_requests += 1
        if error not in NOT_FAILED_FETCH:
            t.failed_fetch_requests += 1
            a.failed_fetch_requests += 1
        if size:
            if follower:
                a.replication_bytes_out += size
            else:
                t.bytes_out += size
                a.bytes_out += size

    def replicated_in(self, topic: str, size: int) -> None:
        """A follower append of *size* bytes."""
        self.all_topics.replication_bytes_in += size

    def remove(self, topic: str) -> None:
        """A deleted topic's series go (Kafka's ``removeMetrics``); the all-topics counts keep its traffic."""
        self.topics.pop(topic, None)

    def snapshot(self) -> tuple[tuple[int, ...], list[tuple[str, tuple[int, ...]]]]:
        """The all-topics counts and each topic's, copied (read on the reactor, rendered elsewhere)."""
        return self.all_topics.as_tuple(), [(name, c.as_tuple()) for name, c in list(self.topics.items())]
