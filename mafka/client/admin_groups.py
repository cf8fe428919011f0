"""Groups: listing, describing and deleting them (an API family of :class:`~mafka.client.admin.AdminClient`).

ListGroups goes to every broker, since each lists only the groups it
coordinates; DescribeGroups, ConsumerGroupDescribe and DeleteGroups go to
each group's coordinator (:meth:`~mafka.client.admin_core.AdminCore.coordinated`).
Two shapes: confluent-kafka's consumer-group API (``list_consumer_groups``,
``describe_consumer_groups``, consumer groups only, assignments decoded) and
the legacy one of any protocol type (``list_groups``, ``describe_groups``:
:class:`~mafka.client.admin_types.GroupMetadata`, raw member bytes, DescribeGroups only).
Committed offsets are :mod:`mafka.client.admin_group_offsets`'.

Kafka 4's group types (KIP-848), as Java's admin client handles them:

* ``list_consumer_groups`` sends ListGroups at the highest version both sides
  speak.  From v4 each group comes with its state and from v5 with its type
  (``classic`` / ``consumer``), and the ``states`` / ``types`` filters travel
  to the broker (``states_filter``, ``types_filter``).  A broker that answers
  no state (ListGroups < v4) is asked DescribeGroups for it, as before; one
  that answers no type (< v5) has only classic groups.  The filters are
  applied here as well, so an older broker's answer is filtered alike.
* ``describe_consumer_groups`` is Java's ``DescribeConsumerGroupsHandler``:
  ConsumerGroupDescribe (69) first, and DescribeGroups for a group it answers
  GROUP_ID_NOT_FOUND (not a consumer group: a classic group, or none) or
  UNSUPPORTED_VERSION, or when the coordinator speaks no version of 69.
  Once a group has fallen back it stays with DescribeGroups through
  coordinator retries.  Classic groups are described exactly as before.
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
from mafka.client.transport import UnsupportedByBroker
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
CONSUMER_GROUP_DESCRIBE = 69

# ConsumerGroupDescribe v1's member_type (KIP-1099): -1 not reported, 0 classic member, 1 consumer member.
_MEMBER_TYPE_CONSUMER = 1
_MEMBER_TYPE_UNKNOWN = -1

# ConsumerGroupDescribe answers for which Java's handler turns to DescribeGroups.
_CLASSIC_FALLBACK = frozenset({ErrorCode.GROUP_ID_NOT_FOUND, ErrorCode.UNSUPPORTED_VERSION})

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


async def _consumer_groups_on(core: AdminCore, node: int, deadline: float | None,
                              states: set[ConsumerGroupState], types: set[ConsumerGroupType]
                              ) -> list[ConsumerGroupListing]:
    """The consumer groups (protocol type ``consumer`` or empty) ``node`` coordinates, filtered.

    ListGroups carries the filters to brokers that take them (v4 states, v5 types); the
    state of a group listed without one (< v4) comes from DescribeGroups, and a group
    listed without a type (< v5) is classic, the only type such a broker has.
    """
    timeout = core.left(deadline, core.request_timeout)
    body: dict[str, Any] = {}
    if states and ConsumerGroupState.UNKNOWN not in states:  # no broker lists a group as "Unknown"
        body["states_filter"] = sorted(s.broker_name for s in states)
    if types:
        body["types_filter"] = sorted(t.broker_name for t in types)
    listed = await core.kernel.send(node, LIST_GROUPS, body, timeout=timeout)
    raise_for_code(listed.error_code)
    found: dict[str, tuple[str, ConsumerGroupState | None, ConsumerGroupType]] = {}
    for g in listed.groups:
        if g.protocol_type not in _CONSUMER_PROTOCOLS:
            continue
        state = ConsumerGroupState.from_broker(g.group_state) if g.group_state else None
        kind = ConsumerGroupType.from_broker(g.group_type) if g.group_type else ConsumerGroupType.CLASSIC
        found[g.group_id] = (g.protocol_type, state, kind)
    stateless = [gid for gid, (_, state, _) in found.items() if state is None]
    if stateless:
        described = await core.kernel.send(node, DESCRIBE_GROUPS, {"groups": stateless}, timeout=timeout)
        for d in described.groups:
            if d.group_id in found:
                protocol_type, _, kind = found[d.group_id]
                state = ConsumerGroupState.from_broker(d.group_state) if not d.error_code \
                    else ConsumerGroupState.UNKNOWN
                found[d.group_id] = (protocol_type, state, kind)
    out = []
    for gid, (protocol_type, maybe_state, kind) in found.items():
        state = maybe_state if maybe_state is not None else ConsumerGroupState.UNKNOWN
        if (states and state not in states) or (types and kind not in types):
            continue
        out.append(ConsumerGroupListing(gid, protocol_type == "", state, kind))
    return out


def _check_set(values: Any, name: str, kind: type, kind_name: str) -> set[Any]:
    """confluent-kafka's argument checks for ``states`` / ``types``: a set of enum members."""
    if values is None:
        return set()
    if not isinstance(values, set):
        raise TypeError(f"'{name}' must be a set")
    for value in values:
        if not isinstance(value, kind):
            raise TypeError(f"All elements of {name} must be of type {kind_name}")
    return values


def list_consumer_groups(core: AdminCore, states: set[ConsumerGroupState] | None = None,
                         request_timeout: float | None = None,
                         types: set[ConsumerGroupType] | None = None) -> Future[ListConsumerGroupsResult]:
    """ListGroups (+ DescribeGroups where it answers no state) at every broker
    (:meth:`AdminClient.list_consumer_groups`)."""
    wanted_states = _check_set(states, "states", ConsumerGroupState, "ConsumerGroupState")
    wanted_types = _check_set(types, "types", ConsumerGroupType, "ConsumerGroupType")
    if ConsumerGroupType.UNKNOWN in wanted_types:
        raise ValueError("UNKNOWN type is not allowed")  # librdkafka's refusal
    fut = new_future()

    async def work(deadline: float | None) -> None:
        valid: list[ConsumerGroupListing] = []
        errors: list[Exception] = []
        nodes = await _all_brokers(core, deadline)
        answers = await asyncio.gather(
            *(_consumer_groups_on(core, n, deadline, wanted_states, wanted_types) for n in nodes),
            return_exceptions=True)
        for answer in answers:
            if isinstance(answer, BaseException):
                if not isinstance(answer, Exception):
                    raise answer
                errors.append(kafka_exception(answer))
                continue
            valid.extend(answer)
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


def _partitions(assignment: Any) -> list[TopicPartition]:
    """A ConsumerGroupDescribe ``Assignment`` as TopicPartitions, in the broker's order."""
    return [TopicPartition(t.topic_name, p) for t in assignment.topic_partitions for p in t.partitions]


def _consumer_description(core: AdminCore, g: Any, node: int) -> ConsumerGroupDescription:
    """A ConsumerGroupDescribe group as Java's ``handledConsumerGroupResponse`` shapes it."""
    members = [
        MemberDescription(
            m.member_id, m.client_id, m.client_host, MemberAssignment(_partitions(m.assignment)),
            m.instance_id, MemberAssignment(_partitions(m.target_assignment)), m.member_epoch,
            None if m.member_type == _MEMBER_TYPE_UNKNOWN else m.member_type == _MEMBER_TYPE_CONSUMER,
        )
        for m in g.members
    ]
    return ConsumerGroupDescription(
        g.group_id, False, members, g.assignor_name, ConsumerGroupState.from_broker(g.group_state),
        core.kernel.metadata.brokers.get(node), type=ConsumerGroupType.CONSUMER,
        group_epoch=g.group_epoch, target_assignment_epoch=g.assignment_epoch,
    )


def describe_consumer_groups(core: AdminCore, group_ids: list[str], request_timeout: float | None = None
                             ) -> dict[str, Future[ConsumerGroupDescription]]:
    """ConsumerGroupDescribe, else DescribeGroups, at each group's coordinator
    (:meth:`AdminClient.describe_consumer_groups`; see the module docstring)."""
    check_list(group_ids, "group_ids", str, "group ids")
    no_duplicates(group_ids, "group id")
    futures = {g: new_future() for g in group_ids}
    consumer = partial(_consumer_description, core)
    classic = partial(_description, core)

    async def describe(group: str) -> ConsumerGroupDescription:
        use_classic = False  # sticky, as Java's ``useClassicGroupApi``: retries skip 69

        async def call(node: int) -> ConsumerGroupDescription:
            nonlocal use_classic
            if not use_classic:
                try:
                    response = await core.kernel.send(node, CONSUMER_GROUP_DESCRIBE,
                                                      {"group_ids": [group], "include_authorized_operations": False})
                except UnsupportedByBroker:
                    log.debug("group %s: coordinator %s speaks no ConsumerGroupDescribe", group, node)
                    use_classic = True
                else:
                    g = _entry(response.groups, group)
                    if g.error_code in _CLASSIC_FALLBACK:
                        log.debug("group %s: not a consumer group (%s); describing it as a classic group",
                                  group, ErrorCode(g.error_code).name)
                        use_classic = True
                    else:
                        raise_for_code(g.error_code, g.error_message)
                        return consumer(g, node)
            response = await core.kernel.send(node, DESCRIBE_GROUPS, {"groups": [group]})
            g = _entry(response.groups, group)
            raise_for_code(g.error_code)
            result: ConsumerGroupDescription = classic(g, node)
            return result

        return await core.coordinated(group, call)

    async def work(deadline: float | None) -> None:
        await core.each(futures, describe)

    core.run(futures.values(), work, request_timeout)
    return futures


def _entry(groups: Any, group: str) -> Any:
    """``group``'s entry of a describe response (UNKNOWN_SERVER_ERROR if the broker left it out)."""
    for g in groups:
        if g.group_id == group:
            return g
    raise_for_code(ErrorCode.UNKNOWN_SERVER_ERROR, f"group {group} missing from the response")
    raise AssertionError("unreachable")


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
