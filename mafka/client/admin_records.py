"""Partitions' offsets and records, at their leaders (an API family of :class:`~mafka.client.admin.AdminClient`).

ListOffsets and DeleteRecords go to each partition's leader
(:meth:`~mafka.client.admin_core.AdminCore.to_leaders`, which retries after
a metadata refresh when leadership moved).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from mafka.client.admin_core import AdminCore, Future, check_partition, new_future, no_duplicates
from mafka.client.admin_types import (
    DeletedRecords,
    IsolationLevel,
    ListOffsetsResultInfo,
    OffsetSpec,
)
from mafka.client.message import TopicPartition
from mafka.errors import ErrorCode

__all__ = ["delete_records", "list_offsets"]

LIST_OFFSETS = 2
DELETE_RECORDS = 21


def list_offsets(core: AdminCore, topic_partition_offsets: dict[TopicPartition, OffsetSpec],
                 isolation_level: IsolationLevel | None = None,
                 request_timeout: float | None = None) -> dict[TopicPartition, Future[ListOffsetsResultInfo]]:
    """ListOffsets at each partition's leader (:meth:`AdminClient.list_offsets`)."""
    if not isinstance(topic_partition_offsets, dict):
        raise TypeError("Expected topic_partition_offsets to be dict of [TopicPartition, OffsetSpec]")
    for tp, spec in topic_partition_offsets.items():
        check_partition(tp, "topic_partition_offsets")
        if not isinstance(spec, OffsetSpec):
            raise TypeError("Value must be a OffsetSpec")
    if isolation_level is not None and not isinstance(isolation_level, IsolationLevel):
        raise TypeError("isolation_level argument should be an IsolationLevel")
    level = (isolation_level or IsolationLevel.READ_UNCOMMITTED).value
    futures: dict[TopicPartition, Future[Any]] = {tp: new_future() for tp in topic_partition_offsets}
    specs = {tp: spec._value for tp, spec in topic_partition_offsets.items()}
    max_timestamp = OffsetSpec.max_timestamp()._value

    async def work(deadline: float | None) -> None:
        async def send(node: int, tps: list[TopicPartition]) -> dict[TopicPartition, tuple[int, Any]]:
            unsupported: dict[TopicPartition, tuple[int, Any]] = {}
            if any(specs[tp] == max_timestamp for tp in tps):
                await core.kernel.connection(node)
                if (core.kernel.version(node, LIST_OFFSETS) or 0) < 7:
                    unsupported = {tp: (ErrorCode.UNSUPPORTED_VERSION, None)
                                   for tp in tps if specs[tp] == max_timestamp}
                    tps = [tp for tp in tps if tp not in unsupported]
                    if not tps:
                        return unsupported
            by_topic: dict[str, list[dict[str, int]]] = defaultdict(list)
            for tp in tps:
                by_topic[tp.topic].append({"partition_index": tp.partition, "timestamp": specs[tp]})
            body = {"replica_id": -1, "isolation_level": level,
                    "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]}
            response = await core.kernel.send(node, LIST_OFFSETS, body,
                                               timeout=core.left(deadline, core.request_timeout))
            return {
                TopicPartition(t.name, p.partition_index):
                    (p.error_code, ListOffsetsResultInfo(p.offset, p.timestamp, p.leader_epoch))
                for t in response.topics for p in t.partitions
            } | unsupported

        await core.to_leaders(specs, futures, deadline, send)

    core.run(futures.values(), work, request_timeout)
    return futures


def delete_records(core: AdminCore, topic_partition_offsets: list[TopicPartition],
                   request_timeout: float | None = None,
                   operation_timeout: float | None = None) -> dict[TopicPartition, Future[DeletedRecords]]:
    """DeleteRecords at each partition's leader (:meth:`AdminClient.delete_records`)."""
    if not isinstance(topic_partition_offsets, list):
        raise TypeError(f"Expected Request to be a list, got '{type(topic_partition_offsets).__name__}'")
    for tp in topic_partition_offsets:
        check_partition(tp, "the request list")
    no_duplicates(topic_partition_offsets, "partition")
    offsets = {tp: tp.offset for tp in topic_partition_offsets}
    futures: dict[TopicPartition, Future[Any]] = {tp: new_future() for tp in topic_partition_offsets}

    async def work(deadline: float | None) -> None:
        async def send(node: int, tps: list[TopicPartition]) -> dict[TopicPartition, tuple[int, Any]]:
            by_topic: dict[str, list[dict[str, int]]] = defaultdict(list)
            for tp in tps:
                by_topic[tp.topic].append({"partition_index": tp.partition, "offset": offsets[tp]})
            body = {"topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()],
                    "timeout_ms": core.op_timeout_ms(operation_timeout, deadline)}
            response = await core.kernel.send(node, DELETE_RECORDS, body,
                                               timeout=core.left(deadline, core.request_timeout))
            return {
                TopicPartition(t.name, p.partition_index): (p.error_code, DeletedRecords(p.low_watermark))
                for t in response.topics for p in t.partitions
            }

        await core.to_leaders(offsets, futures, deadline, send)

    core.run(futures.values(), work, request_timeout)
    return futures
