"""Groups: listing, describing and deleting them (an API family of :class:`~mafka.client.admin.AdminClient`).

ListGroups goes to every broker, since each lists only the groups it
coordinates (then DescribeGroups there, for their states and protocol
types); DescribeGroups and DeleteGroups go to each group's coordinator
(:meth:`~mafka.client.admin_core.AdminCore.coordinated`).  Two shapes:
confluent-kafka's consumer-group API (``list_consumer_groups``,
``describe_consumer_groups``, consumer groups only, assignments decoded) and
the legacy one of any protocol type (``list_groups``, ``describe_groups``:
:class:`~mafka.client.admin_types.GroupMetadata`, raw member bytes).
Committed offsets are :mod:`mafka.client.admin_group_offsets`'.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from functools import partial
from typing import Any

from mafka.client.admin_core import (
    AdminCore,
    Future,
    check_list,
    kafka_exception,
    new_future,
    no_duplicates,
    resolve,
)
from mafka.client.admin_types import (
    ConsumerGroupDescription,
    ConsumerGroupListing,
    ConsumerGroupState,
    ConsumerGroupType,
    GroupMember,
    GroupMetadata,
    ListConsumerGroupsResult,
    MemberAssignment,
    MemberDescription,
)
from mafka.client.kafka_error import KafkaError, KafkaException
from mafka.client.message import TopicPartition
from mafka.errors import ErrorCode, raise_for_code
from mafka.group.consumer_protocol import decode_assignment

__all__ = [
    "delete_consumer_groups",
    "describe_consumer_groups",
    "describe_groups",
    "list_consumer_groups",
    "list_groups",
]

log = logging.getLogger("mafka.client.admin")

DESCRIBE_GROUPS = 15
LIST_GROUPS = 16
DELETE_GROUPS = 42

# ListGroups/DescribeGroups list these protocol types as consumer groups ("" = offsets only).
_CONSUMER_PROTOCOLS = ("consumer", "")


async def _groups_on(core: AdminCore, node: int, deadline: float | None) -> list[Any]:
    """Every group ``node`` coordinates, as DescribeGroups entries (ListGroups, then DescribeGroups)."""
    timeout = core.left(deadline, core.request_timeout)
    listed = await core.kernel.send(node, LIST_GROUPS, {}, timeout=timeout)
    raise_for_code(listed.error_code)
    ids = [g.group_id for g in listed.groups]
    if not ids:
        return []
    described = await core.kernel.send(node, DESCRIBE_GROUPS, {"groups": ids}, timeout=timeout)
    return list(described.groups)


async def _all_brokers(core: AdminCore, deadline: float | None) -> list[int]:
    md = core.kernel.metadata
    await core.refresh()
    while not md.brokers:
        await core.refresh()
    return sorted(md.brokers)


def list_consumer_groups(core: AdminCore, states: set[ConsumerGroupState] | None = None,
                         request_timeout: float | None = None) -> Future[ListConsumerGroupsResult]:
    """ListGroups + DescribeGroups at every broker (:meth:`AdminClient.list_consumer_groups`)."""
    if states is not None:
        if not isinstance(states, set):
            raise TypeError("'states' must be a set")
        for state in states:
            if not isinstance(state, ConsumerGroupState):
                raise TypeError("All elements of states must be of type ConsumerGroupState")
    fut = new_future()

    async def work(deadline: float | None) -> None:
        valid: list[ConsumerGroupListing] = []
        errors: list[Exception] = []
        nodes = await _all_brokers(core, deadline)
        answers = await asyncio.gather(*(_groups_on(core, n, deadline) for n in nodes), return_exceptions=True)
        for answer in answers:
            if isinstance(answer, BaseException):
                if not isinstance(answer, Exception):
                    raise answer
                errors.append(kafka_exception(answer))
                continue
            for g in answer:
                if g.protocol_type not in _CONSUMER_PROTOCOLS:
                    continue
                state = ConsumerGroupState.from_broker(g.group_state) if not g.error_code \
                    else ConsumerGroupState.UNKNOWN
                if states and state not in states:
                    continue
                valid.append(ConsumerGroupListing(g.group_id, g.protocol_type == "", state,
                                                  ConsumerGroupType.CLASSIC))
        resolve(fut, ListConsumerGroupsResult(valid, errors))

    core.run([fut], work, request_timeout)
    return fut


def list_groups(core: AdminCore, group: str | None = None, timeout: float = -1) -> list[GroupMetadata]:
    """ListGroups + DescribeGroups at every broker, blocking (:meth:`AdminClient.list_groups`)."""
    core.check_open()

    async def gather() -> list[GroupMetadata]:
        nodes = await _all_brokers(core, None)
        answers = await asyncio.gather(*(_groups_on(core, n, None) for n in nodes), return_exceptions=True)
        out = []
        failures = []
        for node, answer in zip(nodes, answers, strict=True):
            if isinstance(answer, BaseException):
                failures.append(answer)
                continue
            for g in answer:
                if group is not None and g.group_id != group:
                    continue
                meta = GroupMetadata()
                meta.broker = core.kernel.metadata.brokers.get(node)
                meta.id = g.group_id
                meta.error = KafkaError(g.error_code) if g.error_code else None
                meta.state = g.group_state
                meta.protocol_type = g.protocol_type
                meta.protocol = g.protocol_data
                for m in g.members:
                    member = GroupMember()
                    member.id = m.member_id
                    member.client_id = m.client_id
                    member.client_host = m.client_host
                    member.metadata = bytes(m.member_metadata)
                    member.assignment = bytes(m.member_assignment)
                    meta.members.append(member)
                out.append(meta)
        if failures and len(failures) == len(nodes):
            raise failures[0]
        return out

    wait = None if timeout is None or timeout < 0 else float(timeout)
    try:
        return core.thread.run(gather(), timeout=wait if wait is not None else core.default_timeout)
    except TimeoutError:
        raise KafkaException(KafkaError._TIMED_OUT) from None
    except Exception as exc:  # noqa: BLE001 - confluent-kafka raises only KafkaException here
        raise kafka_exception(exc) from None


def _description(core: AdminCore, g: Any, node: int) -> ConsumerGroupDescription:
    consumer = g.protocol_type == "consumer"
    members = []
    for m in g.members:
        tps: list[TopicPartition] = []
        if consumer and m.member_assignment:
            try:
                assigned = decode_assignment(m.member_assignment).assigned_partitions
                tps = [TopicPartition(t, p) for t, ps in assigned.items() for p in ps]
            except ValueError:
                # Not the consumer protocol's layout after all: report no assignment.
                log.debug("group %s member %s: undecodable assignment", g.group_id, m.member_id)
        members.append(MemberDescription(m.member_id, m.client_id, m.client_host, MemberAssignment(tps),
                                         m.group_instance_id or None))
    return ConsumerGroupDescription(
        g.group_id, g.protocol_type == "", members, g.protocol_data,
        ConsumerGroupState.from_broker(g.group_state), core.kernel.metadata.brokers.get(node),
    )


def describe_consumer_groups(core: AdminCore, group_ids: list[str], request_timeout: float | None = None
                             ) -> dict[str, Future[ConsumerGroupDescription]]:
    """DescribeGroups at each group's coordinator (:meth:`AdminClient.describe_consumer_groups`)."""
    return _describe_groups(core, group_ids, partial(_description, core), request_timeout)


def delete_consumer_groups(core: AdminCore, group_ids: list[str], request_timeout: float | None = None
                           ) -> dict[str, Future[None]]:
    """DeleteGroups at each group's coordinator (:meth:`AdminClient.delete_consumer_groups`)."""
    check_list(group_ids, "group_ids", str, "group ids")
    no_duplicates(group_ids, "group id")
    futures = {g: new_future() for g in group_ids}

    async def delete(group: str) -> None:
        async def call(node: int) -> None:
            response = await core.kernel.send(node, DELETE_GROUPS, {"groups_names": [group]})
            for r in response.results:
                if r.group_id == group:
                    raise_for_code(r.error_code)
                    return
            raise_for_code(ErrorCode.UNKNOWN_SERVER_ERROR, f"group {group} missing from the response")

        await core.coordinated(group, call)

    async def work(deadline: float | None) -> None:
        await core.each(futures, delete)

    core.run(futures.values(), work, request_timeout)
    return futures


def _group_metadata(core: AdminCore, g: Any, node: int) -> GroupMetadata:
    meta = GroupMetadata()
    meta.broker = core.kernel.metadata.brokers.get(node)
    meta.id = g.group_id
    meta.error = KafkaError(g.error_code) if g.error_code else None
    meta.state = g.group_state
    meta.protocol_type = g.protocol_type
    meta.protocol = g.protocol_data
    for m in g.members:
        member = GroupMember()
        member.id = m.member_id
        member.group_instance_id = getattr(m, "group_instance_id", None) or None
        member.client_id = m.client_id
        member.client_host = m.client_host
        member.metadata = bytes(m.member_metadata)
        member.assignment = bytes(m.member_assignment)
        meta.members.append(member)
    return meta


def describe_groups(core: AdminCore, group_ids: list[str], request_timeout: float | None = None
                    ) -> dict[str, Future[GroupMetadata]]:
    """DescribeGroups at each group's coordinator (:meth:`AdminClient.describe_groups`)."""
    return _describe_groups(core, group_ids, partial(_group_metadata, core), request_timeout)


def _describe_groups(core: AdminCore, group_ids: list[str], convert: Callable[[Any, int], Any],
                     request_timeout: float | None) -> dict[str, Future[Any]]:
    """DescribeGroups at each group's coordinator; ``convert(group, node)`` shapes each answer."""
    check_list(group_ids, "group_ids", str, "group ids")
    no_duplicates(group_ids, "group id")
    futures = {g: new_future() for g in group_ids}

    async def describe(group: str) -> Any:
        async def call(node: int) -> Any:
            response = await core.kernel.send(node, DESCRIBE_GROUPS, {"groups": [group]})
            for g in response.groups:
                if g.group_id == group:
                    raise_for_code(g.error_code)
                    return convert(g, node)
            raise_for_code(ErrorCode.UNKNOWN_SERVER_ERROR, f"group {group} missing from the response")
            raise AssertionError("unreachable")

        return await core.coordinated(group, call)

    async def work(deadline: float | None) -> None:
        await core.each(futures, describe)

    core.run(futures.values(), work, request_timeout)
    return futures
