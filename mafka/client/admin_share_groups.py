"""Share groups (KIP-932), an API family of :class:`~mafka.client.admin.AdminClient`.

Java's ``Admin`` names, in confluent-kafka's snake case:

* :func:`list_share_groups`: ListGroups v5 with ``types_filter`` ``["share"]`` at every broker
  (each lists only the groups it coordinates).
* :func:`describe_share_groups`: ShareGroupDescribe (77) at each group's coordinator.
* :func:`list_share_group_offsets`: DescribeShareGroupOffsets (90) at each group's coordinator:
  each share-partition's start offset, leader epoch and lag (KIP-1226; None when unknown).
* :func:`alter_share_group_offsets` / :func:`delete_share_group_offsets`: AlterShareGroupOffsets
  (91) / DeleteShareGroupOffsets (92) at the group's coordinator; the group must be empty.

Group-level errors fail the future (as Java's ``all()``); a partition's or topic's own error is
carried beside it.  Coordinator moves and loads are retried
(:meth:`~mafka.client.admin_core.AdminCore.coordinated`).
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from mafka.client.admin_core import (
    COORDINATOR_RETRY,
    AdminCore,
    Future,
    check_list,
    check_partition,
    kafka_exception,
    new_future,
    no_duplicates,
    resolve,
)
from mafka.client.kafka_error import KafkaError
from mafka.client.message import TopicPartition
from mafka.errors import ErrorCode, raise_for_code

__all__ = [
    "ListShareGroupsResult",
    "ShareGroupDescription",
    "ShareGroupListing",
    "ShareMemberDescription",
    "SharePartitionOffsetInfo",
    "alter_share_group_offsets",
    "delete_share_group_offsets",
    "describe_share_groups",
    "list_share_group_offsets",
    "list_share_groups",
]

LIST_GROUPS = 16
SHARE_GROUP_DESCRIBE = 77
DESCRIBE_SHARE_GROUP_OFFSETS, ALTER_SHARE_GROUP_OFFSETS, DELETE_SHARE_GROUP_OFFSETS = 90, 91, 92


@dataclass(frozen=True)
class ShareGroupListing:
    """A share group as ListGroups reports it (Java's ``GroupListing`` of type SHARE)."""

    group_id: str
    state: str


@dataclass
class ListShareGroupsResult:
    """``valid``: the listings; ``errors``: a KafkaException per broker that could not be asked."""

    valid: list[ShareGroupListing] = field(default_factory=list)
    errors: list[Exception] = field(default_factory=list)


@dataclass(frozen=True)
class ShareMemberDescription:
    """One member of a share group (Java's ``ShareMemberDescription``)."""

    member_id: str
    client_id: str
    host: str
    rack_id: str | None
    member_epoch: int
    subscribed_topic_names: tuple[str, ...]
    assignment: tuple[TopicPartition, ...]


@dataclass(frozen=True)
class ShareGroupDescription:
    """A share group as its coordinator describes it (Java's ``ShareGroupDescription``);
    ``coordinator`` is the coordinator's BrokerInfo (None if not in the metadata)."""

    group_id: str
    state: str
    members: tuple[ShareMemberDescription, ...]
    coordinator: Any
    group_epoch: int
    target_assignment_epoch: int
    partition_assignor: str


@dataclass(frozen=True)
class SharePartitionOffsetInfo:
    """Java's ``SharePartitionOffsetInfo``: a share-partition's start offset, leader epoch and lag
    (None when not known: the start offset -1, the epoch -1, the lag -1)."""

    start_offset: int | None
    leader_epoch: int | None
    lag: int | None


def _broker_info(core: AdminCore, node: int) -> Any:
    return core.kernel.metadata.brokers.get(node)


def list_share_groups(core: AdminCore, request_timeout: float | None = None) -> Future[ListShareGroupsResult]:
    """ListGroups v5 ``types_filter ["share"]`` at every broker (:meth:`AdminClient.list_share_groups`)."""
    fut = new_future()

    async def on(node: int, deadline: float | None) -> list[ShareGroupListing]:
        timeout = core.left(deadline, core.request_timeout)
        listed = await core.kernel.send(node, LIST_GROUPS, {"types_filter": ["share"]}, timeout=timeout)
        raise_for_code(listed.error_code)
        # a broker without v5 ignores the filter: keep only what is typed share
        return [ShareGroupListing(g.group_id, g.group_state) for g in listed.groups if g.group_type == "share"]

    async def work(deadline: float | None) -> None:
        md = core.kernel.metadata
        await core.refresh()
        while not md.brokers:
            await core.refresh()
        answers = await asyncio.gather(*(on(n, deadline) for n in sorted(md.brokers)), return_exceptions=True)
        result = ListShareGroupsResult()
        for answer in answers:
            if isinstance(answer, BaseException):
                if not isinstance(answer, Exception):
                    raise answer
                result.errors.append(kafka_exception(answer))
            else:
                result.valid.extend(answer)
        result.valid.sort(key=lambda g: g.group_id)
        resolve(fut, result)

    core.run([fut], work, request_timeout)
    return fut


def describe_share_groups(core: AdminCore, group_ids: list[str], request_timeout: float | None = None
                          ) -> dict[str, Future[ShareGroupDescription]]:
    """ShareGroupDescribe at each group's coordinator (:meth:`AdminClient.describe_share_groups`).
    A group that is not a share group fails with GROUP_ID_NOT_FOUND."""
    check_list(group_ids, "group_ids", str, "group ids")
    no_duplicates(group_ids, "group id")
    futures = {g: new_future() for g in group_ids}

    async def describe(group: str) -> ShareGroupDescription:
        async def call(node: int) -> ShareGroupDescription:
            response = await core.kernel.send(node, SHARE_GROUP_DESCRIBE,
                                              {"group_ids": [group], "include_authorized_operations": False})
            g = _entry(response.groups, group)
            raise_for_code(g.error_code, g.error_message)
            members = tuple(
                ShareMemberDescription(
                    m.member_id, m.client_id, m.client_host, m.rack_id, m.member_epoch,
                    tuple(m.subscribed_topic_names),
                    tuple(TopicPartition(t.topic_name, p) for t in m.assignment.topic_partitions
                          for p in sorted(t.partitions)),
                )
                for m in g.members
            )
            return ShareGroupDescription(group, g.group_state, members, _broker_info(core, node),
                                         g.group_epoch, g.assignment_epoch, g.assignor_name)

        return await core.coordinated(group, call)

    async def work(deadline: float | None) -> None:
        await core.each(futures, describe)

    core.run(futures.values(), work, request_timeout)
    return futures


def list_share_group_offsets(core: AdminCore, requests: Mapping[str, Iterable[TopicPartition] | None],
                             request_timeout: float | None = None
                             ) -> dict[str, Future[dict[TopicPartition, SharePartitionOffsetInfo]]]:
    """DescribeShareGroupOffsets at each group's coordinator (:meth:`AdminClient.list_share_group_offsets`):
    group → its partitions (None: every initialized share-partition)."""
    if not isinstance(requests, Mapping) or not requests:
        raise ValueError("requests must be a non-empty mapping of group id to partitions")
    wanted: dict[str, list[TopicPartition] | None] = {}
    for group, tps in requests.items():
        if not isinstance(group, str) or not group:
            raise ValueError("group ids must be non-empty strings")
        if tps is None:
            wanted[group] = None
            continue
        tps = list(tps)
        for tp in tps:
            check_partition(tp, "partitions")
        wanted[group] = tps
    futures = {g: new_future() for g in wanted}

    async def fetch(group: str) -> dict[TopicPartition, SharePartitionOffsetInfo]:
        tps = wanted[group]
        topics = None
        if tps is not None:
            by_topic: dict[str, list[int]] = {}
            for tp in tps:
                by_topic.setdefault(tp.topic, []).append(tp.partition)
            topics = [{"topic_name": t, "partitions": ps} for t, ps in by_topic.items()]

        async def call(node: int) -> dict[TopicPartition, SharePartitionOffsetInfo]:
            response = await core.kernel.send(node, DESCRIBE_SHARE_GROUP_OFFSETS,
                                              {"groups": [{"group_id": group, "topics": topics}]})
            g = _entry(response.groups, group)
            raise_for_code(g.error_code, g.error_message)
            out: dict[TopicPartition, SharePartitionOffsetInfo] = {}
            for t in g.topics:
                for p in t.partitions:
                    if p.error_code in COORDINATOR_RETRY:
                        raise_for_code(p.error_code)
                    tp = TopicPartition(t.topic_name, p.partition_index)
                    tp.error = KafkaError(p.error_code) if p.error_code else None
                    out[tp] = SharePartitionOffsetInfo(
                        p.start_offset if p.start_offset >= 0 else None,
                        p.leader_epoch if p.leader_epoch >= 0 else None,
                        p.lag if p.lag >= 0 else None,
                    )
            return out

        return await core.coordinated(group, call)

    async def work(deadline: float | None) -> None:
        await core.each(futures, fetch)

    core.run(futures.values(), work, request_timeout)
    return futures


def alter_share_group_offsets(core: AdminCore, group_id: str, offsets: Mapping[TopicPartition, int],
                              request_timeout: float | None = None) -> Future[list[TopicPartition]]:
    """AlterShareGroupOffsets (:meth:`AdminClient.alter_share_group_offsets`): Future(the partitions,
    each with ``offset`` the new start offset and its own ``error``)."""
    if not isinstance(group_id, str) or not group_id:
        raise ValueError("'group_id' must be a non-empty string")
    if not isinstance(offsets, Mapping) or not offsets:
        raise ValueError("'offsets' must be a non-empty mapping of TopicPartition to offset")
    for tp, offset in offsets.items():
        check_partition(tp, "offsets")
        if not isinstance(offset, int) or offset < 0:
            raise ValueError(f"the offset of {tp.topic}-{tp.partition} must be a non-negative int")
    by_topic: dict[str, list[dict[str, int]]] = {}
    for tp, offset in offsets.items():
        by_topic.setdefault(tp.topic, []).append({"partition_index": tp.partition, "start_offset": offset})
    body = {"group_id": group_id, "topics": [{"topic_name": t, "partitions": ps} for t, ps in by_topic.items()]}
    fut = new_future()

    async def call(node: int) -> list[TopicPartition]:
        response = await core.kernel.send(node, ALTER_SHARE_GROUP_OFFSETS, body)
        raise_for_code(response.error_code, response.error_message)
        errors = {(t.topic_name, p.partition_index): p.error_code for t in response.responses for p in t.partitions}
        out = []
        for tp, offset in offsets.items():
            res = TopicPartition(tp.topic, tp.partition, offset)
            code = errors.get((tp.topic, tp.partition), ErrorCode.UNKNOWN_SERVER_ERROR)
            res.error = KafkaError(code) if code else None
            out.append(res)
        return out

    async def work(deadline: float | None) -> None:
        resolve(fut, await core.coordinated(group_id, call))

    core.run([fut], work, request_timeout)
    return fut


def delete_share_group_offsets(core: AdminCore, group_id: str, topics: Iterable[str],
                               request_timeout: float | None = None) -> Future[dict[str, KafkaError | None]]:
    """DeleteShareGroupOffsets (:meth:`AdminClient.delete_share_group_offsets`): Future(topic → its
    error, None when its share-partitions' state was deleted)."""
    if not isinstance(group_id, str) or not group_id:
        raise ValueError("'group_id' must be a non-empty string")
    names = list(dict.fromkeys(topics))
    if not names or not all(isinstance(n, str) and n for n in names):
        raise ValueError("'topics' must be a non-empty list of topic names")
    fut = new_future()

    async def call(node: int) -> dict[str, KafkaError | None]:
        response = await core.kernel.send(node, DELETE_SHARE_GROUP_OFFSETS,
                                          {"group_id": group_id, "topics": [{"topic_name": n} for n in names]})
        raise_for_code(response.error_code, response.error_message)
        codes = {t.topic_name: t.error_code for t in response.responses}
        return {n: (KafkaError(codes[n]) if codes.get(n, 0) else None) if n in codes
                else KafkaError(ErrorCode.UNKNOWN_SERVER_ERROR) for n in names}

    async def work(deadline: float | None) -> None:
        resolve(fut, await core.coordinated(group_id, call))

    core.run([fut], work, request_timeout)
    return fut


def _entry(groups: Any, group: str) -> Any:
    for g in groups:
        if g.group_id == group:
            return g
    raise_for_code(ErrorCode.UNKNOWN_SERVER_ERROR, f"group {group} missing from the response")
    raise AssertionError("unreachable")
