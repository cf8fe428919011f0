"""Consumer groups' committed offsets (an API family of :class:`~mafka.client.admin.AdminClient`).

OffsetFetch, OffsetCommit (an admin commit: no member, accepted only while
the group has none) and OffsetDelete, each at the group's coordinator
(:meth:`~mafka.client.admin_core.AdminCore.coordinated`, which retries while
it moves or loads).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from mafka.client.admin_core import (
    COORDINATOR_RETRY,
    AdminCore,
    Future,
    check_partition,
    new_future,
    no_duplicates,
    partitions_by_topic,
)
from mafka.client.admin_types import ConsumerGroupTopicPartitions
from mafka.client.kafka_error import KafkaError
from mafka.client.message import OFFSET_INVALID, TopicPartition
from mafka.errors import ErrorCode, raise_for_code

__all__ = ["alter_consumer_group_offsets", "delete_consumer_group_offsets", "list_consumer_group_offsets"]

OFFSET_COMMIT = 8
OFFSET_FETCH = 9
OFFSET_DELETE = 47


def _check_group_requests(requests: Any, alter: bool) -> list[ConsumerGroupTopicPartitions]:
    if not isinstance(requests, list):
        raise TypeError("request must be a list")
    if not requests:
        raise ValueError("request must not be empty")
    for req in requests:
        if not isinstance(req, ConsumerGroupTopicPartitions):
            raise TypeError("Expected list of 'ConsumerGroupTopicPartitions'")
        if not isinstance(req.group_id, str):
            raise TypeError("'group_id' must be a string")
        if not req.group_id:
            raise ValueError("'group_id' cannot be empty")
        tps = req.topic_partitions
        if tps is None:
            if alter:
                raise ValueError("'topic_partitions' cannot be null")
            continue
        if not isinstance(tps, list):
            raise TypeError("'topic_partitions' must be a list")
        if not tps:
            raise ValueError("'topic_partitions' cannot be empty")
        for tp in tps:
            check_partition(tp, "'topic_partitions'")
            if alter and tp.offset < 0:
                raise ValueError("Element of 'topic_partitions' must not have negative value for 'offset' field")
            if not alter and tp.offset != OFFSET_INVALID:
                raise ValueError("Element of 'topic_partitions' must not have 'offset' value")
    no_duplicates((r.group_id for r in requests), "group id")
    return requests


def list_consumer_group_offsets(core: AdminCore, requests: list[ConsumerGroupTopicPartitions],
                                request_timeout: float | None = None
                                ) -> dict[str, Future[ConsumerGroupTopicPartitions]]:
    """OffsetFetch at each group's coordinator (:meth:`AdminClient.list_consumer_group_offsets`)."""
    _check_group_requests(requests, alter=False)
    wanted = {r.group_id: r.topic_partitions for r in requests}
    futures = {g: new_future() for g in wanted}

    async def fetch(group: str) -> ConsumerGroupTopicPartitions:
        tps = wanted[group]
        topics = None
        if tps is not None:
            by_topic: dict[str, list[int]] = defaultdict(list)
            for tp in tps:
                by_topic[tp.topic].append(tp.partition)
            topics = [{"name": t, "partition_indexes": ps} for t, ps in by_topic.items()]

        async def call(node: int) -> ConsumerGroupTopicPartitions:
            # One group per request, in the shape of v1–7 and of v8+ (``groups``).
            body = {"group_id": group, "topics": topics, "groups": [{"group_id": group, "topics": topics}]}
            response = await core.kernel.send(node, OFFSET_FETCH, body)
            if response.groups:  # v8+
                response = next((g for g in response.groups if g.group_id == group), None)
                if response is None:
                    raise_for_code(ErrorCode.UNKNOWN_SERVER_ERROR, f"group {group} missing from the response")
            raise_for_code(response.error_code)
            found = []
            for t in response.topics:
                for p in t.partitions:
                    if p.error_code in COORDINATOR_RETRY:
                        raise_for_code(p.error_code)  # v1 reports group errors per partition
                    tp = TopicPartition(t.name, p.partition_index,
                                        p.committed_offset if p.committed_offset >= 0 else OFFSET_INVALID,
                                        p.metadata or None)
                    tp.error = KafkaError(p.error_code) if p.error_code else None
                    found.append(tp)
            if tps is not None:
                # The order the caller asked in, as confluent-kafka returns it.
                index = {tp: tp for tp in found}
                found = [index.get(TopicPartition(tp.topic, tp.partition))
                         or TopicPartition(tp.topic, tp.partition, OFFSET_INVALID) for tp in tps]
            return ConsumerGroupTopicPartitions(group, found)

        return await core.coordinated(group, call)

    async def work(deadline: float | None) -> None:
        await core.each(futures, fetch)

    core.run(futures.values(), work, request_timeout)
    return futures


def alter_consumer_group_offsets(core: AdminCore, requests: list[ConsumerGroupTopicPartitions],
                                 request_timeout: float | None = None
                                 ) -> dict[str, Future[ConsumerGroupTopicPartitions]]:
    """OffsetCommit at each group's coordinator (:meth:`AdminClient.alter_consumer_group_offsets`)."""
    _check_group_requests(requests, alter=True)
    # (the checks above refused a None topic_partitions: the filter keeps every request)
    wanted = {r.group_id: r.topic_partitions for r in requests if r.topic_partitions is not None}
    futures = {g: new_future() for g in wanted}

    async def commit(group: str) -> ConsumerGroupTopicPartitions:
        tps = wanted[group]
        by_topic: dict[str, list[dict[str, Any]]] = defaultdict(list)
        for tp in tps:
            by_topic[tp.topic].append({"partition_index": tp.partition, "committed_offset": tp.offset,
                                       "committed_metadata": tp.metadata})
        body = {
            # generation -1 and no member id: an admin commit, accepted only while the
            # group has no active members (Kafka's rule).
            "group_id": group, "generation_id_or_member_epoch": -1, "member_id": "",
            "retention_time_ms": -1,
            "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
        }

        async def call(node: int) -> ConsumerGroupTopicPartitions:
            response = await core.kernel.send(node, OFFSET_COMMIT, body)
            errors = {}
            for t in response.topics:
                for p in t.partitions:
                    if p.error_code in COORDINATOR_RETRY:
                        raise_for_code(p.error_code)
                    errors[(t.name, p.partition_index)] = p.error_code
            out = []
            for tp in tps:
                res = TopicPartition(tp.topic, tp.partition, tp.offset, tp.metadata)
                code = errors.get((tp.topic, tp.partition), ErrorCode.UNKNOWN_SERVER_ERROR)
                res.error = KafkaError(code) if code else None
                out.append(res)
            return ConsumerGroupTopicPartitions(group, out)

        return await core.coordinated(group, call)

    async def work(deadline: float | None) -> None:
        await core.each(futures, commit)

    core.run(futures.values(), work, request_timeout)
    return futures


def delete_consumer_group_offsets(core: AdminCore, requests: list[ConsumerGroupTopicPartitions],
                                  request_timeout: float | None = None
                                  ) -> dict[str, Future[ConsumerGroupTopicPartitions]]:
    """OffsetDelete at each group's coordinator (:meth:`AdminClient.delete_consumer_group_offsets`)."""
    if not isinstance(requests, list) or not requests:
        raise ValueError("request must be a non-empty list")
    for r in requests:
        if not isinstance(r, ConsumerGroupTopicPartitions):
            raise TypeError("Expected list of 'ConsumerGroupTopicPartitions'")
        if not isinstance(r.group_id, str) or not r.group_id:
            raise ValueError("'group_id' must be a non-empty string")
        if not isinstance(r.topic_partitions, list):
            raise TypeError("'topic_partitions' must be a list")
        for tp in r.topic_partitions:
            check_partition(tp, "'topic_partitions'")
    no_duplicates((r.group_id for r in requests), "group id")
    # (the checks above refused a None topic_partitions: the filter keeps every request)
    wanted = {r.group_id: r.topic_partitions for r in requests if r.topic_partitions is not None}
    futures = {g: new_future() for g in wanted}

    async def delete(group: str) -> ConsumerGroupTopicPartitions:
        tps = wanted[group]
        body = {"group_id": group, "topics": [
            {"name": t, "partitions": [{"partition_index": p} for p in ps]}
            for t, ps in partitions_by_topic(tps).items()]}

        async def call(node: int) -> ConsumerGroupTopicPartitions:
            response = await core.kernel.send(node, OFFSET_DELETE, body)
            raise_for_code(response.error_code)
            errors = {(t.name, p.partition_index): p.error_code for t in response.topics for p in t.partitions}
            if any(code in COORDINATOR_RETRY for code in errors.values()):
                raise_for_code(next(c for c in errors.values() if c in COORDINATOR_RETRY))
            out = []
            for tp in tps:
                res = TopicPartition(tp.topic, tp.partition)
                code = errors.get((tp.topic, tp.partition), ErrorCode.UNKNOWN_SERVER_ERROR)
                res.error = KafkaError(code) if code else None
                out.append(res)
            return ConsumerGroupTopicPartitions(group, out)

        return await core.coordinated(group, call)

    async def work(deadline: float | None) -> None:
        await core.each(futures, delete)

    core.run(futures.values(), work, request_timeout)
    return futures
