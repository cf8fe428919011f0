"""Replica placement: leader elections and partition reassignments (an API family of
:class:`~mafka.client.admin.AdminClient`).

ElectLeaders, AlterPartitionReassignments and ListPartitionReassignments,
answered by the controller (:meth:`~mafka.client.admin_core.AdminCore.controller_request`
sends again to the controller named by fresh metadata when it moved).
"""

from __future__ import annotations

from collections import defaultdict
from typing import Any

from mafka.client.admin_core import (
    AdminCore,
    Future,
    check_partition,
    code_error,
    fail,
    new_future,
    no_duplicates,
    partitions_by_topic,
    resolve,
)
from mafka.client.admin_types import ElectionType, PartitionReassignment
from mafka.client.kafka_error import KafkaException
from mafka.client.message import TopicPartition
from mafka.errors import ErrorCode

__all__ = ["alter_partition_reassignments", "elect_leaders", "list_partition_reassignments"]

ELECT_LEADERS = 43
ALTER_PARTITION_REASSIGNMENTS = 45
LIST_PARTITION_REASSIGNMENTS = 46


def elect_leaders(core: AdminCore, election_type: ElectionType, partitions: list[TopicPartition] | None = None,
                  request_timeout: float | None = None, operation_timeout: float | None = None
                  ) -> Future[dict[TopicPartition, KafkaException | None]]:
    """ElectLeaders at the controller (:meth:`AdminClient.elect_leaders`)."""
    if not isinstance(election_type, ElectionType):
        raise TypeError("Expected 'election_type' to be of type 'ElectionType'")
    if partitions is not None:
        if not isinstance(partitions, list):
            raise TypeError(f"Expected 'partitions' to be a list, got '{type(partitions).__name__}'")
        for tp in partitions:
            check_partition(tp, "'partitions'")
        no_duplicates(partitions, "partition")
    topic_partitions = None if partitions is None else [
        {"topic": t, "partitions": ps} for t, ps in partitions_by_topic(partitions).items()]
    fut: Future[Any] = new_future()

    def not_controller(r: Any) -> bool:
        return getattr(r, "error_code", 0) == ErrorCode.NOT_CONTROLLER or any(
            p.error_code == ErrorCode.NOT_CONTROLLER for t in r.replica_election_results for p in t.partition_result)

    async def work(deadline: float | None) -> None:
        response = await core.controller_request(
            ELECT_LEADERS,
            lambda: {"election_type": election_type.value, "topic_partitions": topic_partitions,
                     "timeout_ms": core.op_timeout_ms(operation_timeout, deadline)},
            deadline, not_controller)
        code = getattr(response, "error_code", 0)  # v1+
        if code:
            fail(fut, code_error(code))
            return
        results: dict[TopicPartition, KafkaException | None] = {}
        for t in response.replica_election_results:
            for p in t.partition_result:
                results[TopicPartition(t.topic, p.partition_id)] = (
                    code_error(p.error_code, p.error_message) if p.error_code else None)
        resolve(fut, results)

    core.run([fut], work, request_timeout)
    return fut


def alter_partition_reassignments(core: AdminCore, reassignments: dict[TopicPartition, list[int] | None],
                                  request_timeout: float | None = None) -> dict[TopicPartition, Future[None]]:
    """AlterPartitionReassignments at the controller (:meth:`AdminClient.alter_partition_reassignments`)."""
    if not isinstance(reassignments, dict):
        raise TypeError("Expected 'reassignments' to be a dict of [TopicPartition, list of broker ids or None]")
    if not reassignments:
        raise ValueError("Expected non-empty dict of reassignments")
    for tp, replicas in reassignments.items():
        check_partition(tp, "'reassignments'")
        if replicas is not None:
            if not isinstance(replicas, list) or not all(isinstance(b, int) for b in replicas):
                raise TypeError("Target replicas must be a list of broker ids (int) or None")
    targets = dict(reassignments)
    futures: dict[TopicPartition, Future[Any]] = {tp: new_future() for tp in targets}
    by_topic: dict[str, list[dict[str, Any]]] = defaultdict(list)
    for tp, replicas in targets.items():
        by_topic[tp.topic].append({"partition_index": tp.partition,
                                   "replicas": None if replicas is None else list(replicas)})

    async def work(deadline: float | None) -> None:
        response = await core.controller_request(
            ALTER_PARTITION_REASSIGNMENTS,
            lambda: {"timeout_ms": core.op_timeout_ms(None, deadline),
                     "topics": [{"name": t, "partitions": ps} for t, ps in by_topic.items()]},
            deadline, lambda r: r.error_code == ErrorCode.NOT_CONTROLLER)
        if response.error_code:
            error = code_error(response.error_code, response.error_message)
            for f in futures.values():
                fail(f, error)
            return
        for t in response.responses:
            for p in t.partitions:
                future = futures.get(TopicPartition(t.name, p.partition_index))
                if future is None:
                    continue
                if p.error_code:
                    fail(future, code_error(p.error_code, p.error_message))
                else:
                    resolve(future, None)

    core.run(futures.values(), work, request_timeout)
    return futures


def list_partition_reassignments(core: AdminCore, partitions: list[TopicPartition] | None = None,
                                 request_timeout: float | None = None
                                 ) -> Future[dict[TopicPartition, PartitionReassignment]]:
    """ListPartitionReassignments at the controller (:meth:`AdminClient.list_partition_reassignments`)."""
    if partitions is not None:
        if not isinstance(partitions, list):
            raise TypeError(f"Expected 'partitions' to be a list, got '{type(partitions).__name__}'")
        for tp in partitions:
            check_partition(tp, "'partitions'")
    topics = None if partitions is None else [
        {"name": t, "partition_indexes": ps} for t, ps in partitions_by_topic(partitions).items()]
    fut: Future[Any] = new_future()

    async def work(deadline: float | None) -> None:
        response = await core.controller_request(
            LIST_PARTITION_REASSIGNMENTS,
            lambda: {"timeout_ms": core.op_timeout_ms(None, deadline), "topics": topics},
            deadline, lambda r: r.error_code == ErrorCode.NOT_CONTROLLER)
        if response.error_code:
            fail(fut, code_error(response.error_code, response.error_message))
            return
        resolve(fut, {
            TopicPartition(t.name, p.partition_index):
                PartitionReassignment(list(p.replicas), list(p.adding_replicas), list(p.removing_replicas))
            for t in response.topics for p in t.partitions
        })

    core.run([fut], work, request_timeout)
    return fut
