"""Topics, partitions and the cluster's description (an API family of :class:`~mafka.client.admin.AdminClient`).

CreateTopics, DeleteTopics and CreatePartitions go to the controller named by
Metadata, which :meth:`~mafka.client.admin_core.AdminCore.to_controller`
follows when it moves (NOT_CONTROLLER); :func:`list_topics` and
:func:`describe_cluster` answer from fresh Metadata.
"""

from __future__ import annotations

import asyncio
import logging
from typing import Any

from mafka.client import metadata_view
from mafka.client.admin_core import (
    AdminCore,
    Future,
    check_list,
    new_future,
    no_duplicates,
    resolve,
)
from mafka.client.admin_types import DescribeClusterResult, NewPartitions, NewTopic
from mafka.client.metadata_view import ClusterMetadataView

__all__ = ["create_partitions", "create_topics", "delete_topics", "describe_cluster", "list_topics"]

log = logging.getLogger("mafka.client.admin")

CREATE_TOPICS = 19
DELETE_TOPICS = 20
CREATE_PARTITIONS = 37


def create_topics(core: AdminCore, new_topics: list[NewTopic], operation_timeout: float | None = None,
                  request_timeout: float | None = None,
                  validate_only: bool = False) -> dict[str, Future[None]]:
    """CreateTopics at the controller (:meth:`AdminClient.create_topics`)."""
    check_list(new_topics, "new_topics", NewTopic, "NewTopic objects")
    no_duplicates((t.topic for t in new_topics), "topic")
    specs = {t.topic: t for t in new_topics}
    futures = {name: new_future() for name in specs}

    def topic_body(t: NewTopic) -> dict[str, Any]:
        if t.replica_assignment:
            # Kafka wants -1/-1 with an explicit assignment; the assignment says it all.
            partitions, rf = -1, -1
            assignments = [{"partition_index": i, "broker_ids": [int(b) for b in brokers]}
                           for i, brokers in enumerate(t.replica_assignment)]
        else:
            partitions, rf, assignments = t.num_partitions, t.replication_factor, []
        return {
            "name": t.topic,
            "num_partitions": partitions,
            "replication_factor": rf,
            "assignments": assignments,
            "configs": [{"name": k, "value": None if v is None else str(v)} for k, v in t.config.items()],
        }

    async def work(deadline: float | None) -> None:
        await core.to_controller(
            CREATE_TOPICS, list(specs), futures, deadline,
            lambda names: {
                "topics": [topic_body(specs[n]) for n in names],
                "timeout_ms": core.op_timeout_ms(operation_timeout, deadline),
                "validate_only": bool(validate_only),
            },
            lambda r: ((t.name, t.error_code, t.error_message) for t in r.topics),
        )

    core.run(futures.values(), work, request_timeout)
    return futures


def delete_topics(core: AdminCore, topics: list[str], operation_timeout: float | None = None,
                  request_timeout: float | None = None) -> dict[str, Future[None]]:
    """DeleteTopics at the controller (:meth:`AdminClient.delete_topics`)."""
    check_list(topics, "topics", str, "topic names")
    no_duplicates(topics, "topic")
    futures = {name: new_future() for name in topics}

    async def work(deadline: float | None) -> None:
        await core.to_controller(
            DELETE_TOPICS, list(topics), futures, deadline,
            lambda names: {"topic_names": names, "timeout_ms": core.op_timeout_ms(operation_timeout, deadline)},
            lambda r: ((t.name, t.error_code, None) for t in r.responses),
        )

    core.run(futures.values(), work, request_timeout)
    return futures


def create_partitions(core: AdminCore, new_partitions: list[NewPartitions], operation_timeout: float | None = None,
                      request_timeout: float | None = None,
                      validate_only: bool = False) -> dict[str, Future[None]]:
    """CreatePartitions at the controller (:meth:`AdminClient.create_partitions`)."""
    check_list(new_partitions, "new_partitions", NewPartitions, "NewPartitions objects")
    no_duplicates((p.topic for p in new_partitions), "topic")
    specs = {p.topic: p for p in new_partitions}
    futures = {name: new_future() for name in specs}

    def topic_body(p: NewPartitions) -> dict[str, Any]:
        assignments = None
        if p.replica_assignment:
            assignments = [{"broker_ids": [int(b) for b in brokers]} for brokers in p.replica_assignment]
        return {"name": p.topic, "count": p.new_total_count, "assignments": assignments}

    async def work(deadline: float | None) -> None:
        await core.to_controller(
            CREATE_PARTITIONS, list(specs), futures, deadline,
            lambda names: {
                "topics": [topic_body(specs[n]) for n in names],
                "timeout_ms": core.op_timeout_ms(operation_timeout, deadline),
                "validate_only": bool(validate_only),
            },
            lambda r: ((t.name, t.error_code, t.error_message) for t in r.results),
        )

    core.run(futures.values(), work, request_timeout)
    return futures


def list_topics(core: AdminCore, topic: str | None = None, timeout: float = -1) -> ClusterMetadataView:
    """Metadata, blocking (:meth:`AdminClient.list_topics`)."""
    core.check_open()
    return metadata_view.list_topics(core.thread, core.kernel, topic, timeout)


def describe_cluster(core: AdminCore, request_timeout: float | None = None) -> Future[DescribeClusterResult]:
    """a fresh Metadata answer (:meth:`AdminClient.describe_cluster`)."""
    fut = new_future()

    async def work(deadline: float | None) -> None:
        md = core.kernel.metadata
        while True:
            try:
                await core.kernel.refresh_metadata()
                break
            except ConnectionError as exc:
                log.debug("describe_cluster: %s; retrying", exc)
                await asyncio.sleep(core.backoff)
        nodes = [md.brokers[i] for i in sorted(md.brokers)]
        resolve(fut, DescribeClusterResult(md.brokers.get(md.controller_id), nodes, md.cluster_id))

    core.run([fut], work, request_timeout)
    return fut
