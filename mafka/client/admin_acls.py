"""ACLs: creating, describing and deleting them (an API family of :class:`~mafka.client.admin.AdminClient`).

This module owns confluent-kafka's ACL types — :class:`AclBinding`,
:class:`AclBindingFilter`, :class:`ResourcePatternType`, :class:`AclOperation`,
:class:`AclPermissionType` (the resource type is
:class:`~mafka.client.admin_types.ResourceType`, shared with configs) — with
confluent-kafka's names, constructor arguments, attributes, validation and
messages, and the three operations over them: CreateAcls (30), DescribeAcls
(29) and DeleteAcls (31).

Every enum's value is Kafka's wire code (:mod:`mafka.security.acl` has the
same numbers), so a binding goes on the wire as its ``*_int`` attributes.
One naming difference is inherited from librdkafka: Kafka's CLUSTER resource
type (code 4) is ``ResourceType.BROKER`` here, its one name ``kafka-cluster``.

Any broker answers these requests (the broker that gets one writes ZooKeeper
and every broker follows), so each operation is one request to any broker,
resent after a lost connection until ``request_timeout``.  Errors are the
broker's codes: SECURITY_DISABLED without an authorizer,
CLUSTER_AUTHORIZATION_FAILED without Describe (describe) or Alter (create,
delete) on the cluster, INVALID_REQUEST for a binding the broker refuses.
"""

from __future__ import annotations

import functools
from enum import Enum
from typing import Any, TypeVar

from mafka.client.admin_core import (
    AdminCore,
    Future,
    check_list,
    code_error,
    fail,
    new_future,
    resolve,
)
from mafka.client.admin_types import ResourceType, _Ordered

__all__ = [
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "ResourcePatternType",
    "create_acls",
    "delete_acls",
    "describe_acls",
]

DESCRIBE_ACLS = 29
CREATE_ACLS = 30
DELETE_ACLS = 31


class ResourcePatternType(_Ordered):
    """How a binding's resource name is matched (Kafka's ``PatternType`` codes).

    LITERAL and PREFIXED are what an ACL can have; ANY and MATCH exist only in
    filters (MATCH: every pattern that applies to the named resource).
    """

    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4


class AclOperation(_Ordered):
    """What an ACL allows or denies (Kafka's ``AclOperation`` codes); ANY only in filters."""

    UNKNOWN = 0
    ANY = 1
    ALL = 2
    READ = 3
    WRITE = 4
    CREATE = 5
    DELETE = 6
    ALTER = 7
    DESCRIBE = 8
    CLUSTER_ACTION = 9
    DESCRIBE_CONFIGS = 10
    ALTER_CONFIGS = 11
    IDEMPOTENT_WRITE = 12


class AclPermissionType(_Ordered):
    """Whether an ACL allows or denies (Kafka's ``AclPermissionType`` codes); ANY only in filters."""

    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


_E = TypeVar("_E", bound=Enum)


def _convert(value: Any, enum: type[_E]) -> _E:
    """confluent-kafka's ``ConversionUtil.convert_to_enum``: a member, its name (any case) or its code.

    Raises:
        ValueError: an unknown name or code.
        TypeError: anything else.
    """
    if isinstance(value, enum):
        return value
    if isinstance(value, str):
        try:
            return enum[value.upper()]
        except KeyError:
            raise ValueError(f'Unknown value "{value}": should be a {enum.__name__}') from None
    if isinstance(value, int):
        return enum(value)
    raise TypeError(f'Unknown value "{value}": should be a {enum.__name__}')


def _from_code(enum: type[_E], code: int) -> _E:
    """The member with wire code ``code``, UNKNOWN for a code this client does not know.

    For what a broker sends back: a newer broker's resource type or operation
    must not make the whole answer unreadable.
    """
    try:
        return enum(code)
    except ValueError:
        return enum["UNKNOWN"]


@functools.total_ordering
class AclBinding:
    """One ACL: ``principal`` may (ALLOW) or may not (DENY) do ``operation`` from ``host``
    on the resources ``restype``/``name``/``resource_pattern_type`` designate (confluent-kafka's).

    Enum arguments may be given as the member, its name in any case
    (``"topic"``, ``"prefixed"``) or its code.  The ``*_int`` attributes are
    the wire codes.  Equal, hashed and ordered by all seven fields.

    Raises:
        ValueError: a field left None, an unknown enum name or code, or a
            filter-only value (``ResourceType.ANY``, ``ResourcePatternType.ANY``
            / ``MATCH``, ``AclOperation.ANY``, ``AclPermissionType.ANY``).
        TypeError: ``name``, ``principal`` or ``host`` not a string, or an enum
            argument of another type.
    """

    def __init__(self, restype: ResourceType | str | int, name: str | None,
                 resource_pattern_type: ResourcePatternType | str | int,
                 principal: str | None, host: str | None,
                 operation: AclOperation | str | int,
                 permission_type: AclPermissionType | str | int) -> None:
        for arg, value in (("restype", restype), ("name", name), ("resource_pattern_type", resource_pattern_type),
                           ("principal", principal), ("host", host), ("operation", operation),
                           ("permission_type", permission_type)):
            if value is None and arg in self._not_none_args():
                raise ValueError(f"Expected {arg} to be not None")
        for arg, value in (("name", name), ("principal", principal), ("host", host)):
            if value is not None and not isinstance(value, str):
                raise TypeError(f"Expected {arg} to be a string")
        self.restype: ResourceType = _convert(restype, ResourceType)
        self.name: str | None = name
        self.resource_pattern_type: ResourcePatternType = _convert(resource_pattern_type, ResourcePatternType)
        self.principal: str | None = principal
        self.host: str | None = host
        self.operation: AclOperation = _convert(operation, AclOperation)
        self.permission_type: AclPermissionType = _convert(permission_type, AclPermissionType)
        for arg, forbidden in self._forbidden_enums().items():
            value = getattr(self, arg)
            if value in forbidden:
                raise ValueError(f"Cannot use enum {arg}, value {value.name} in this class")
        self.restype_int = int(self.restype.value)
        self.resource_pattern_type_int = int(self.resource_pattern_type.value)
        self.operation_int = int(self.operation.value)
        self.permission_type_int = int(self.permission_type.value)

    @staticmethod
    def _not_none_args() -> tuple[str, ...]:
        return ("restype", "name", "resource_pattern_type", "principal", "host", "operation", "permission_type")

    @staticmethod
    def _forbidden_enums() -> dict[str, tuple[Enum, ...]]:
        return {
            "restype": (ResourceType.ANY,),
            "resource_pattern_type": (ResourcePatternType.ANY, ResourcePatternType.MATCH),
            "operation": (AclOperation.ANY,),
            "permission_type": (AclPermissionType.ANY,),
        }

    def _to_tuple(self) -> tuple[ResourceType, str | None, ResourcePatternType, str | None, str | None,
                                 AclOperation, AclPermissionType]:
        return (self.restype, self.name, self.resource_pattern_type, self.principal, self.host,
                self.operation, self.permission_type)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({','.join(str(v) for v in self._to_tuple())})"

    def __hash__(self) -> int:
        return hash(self._to_tuple())

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, AclBinding):
            return NotImplemented
        return self._to_tuple() == other._to_tuple()

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, AclBinding):
            return NotImplemented
        # A filter's None name cannot be ordered against a str: TypeError, as confluent-kafka
        return self._to_tuple() < other._to_tuple()


class AclBindingFilter(AclBinding):
    """Selects ACL bindings (describe_acls, delete_acls), confluent-kafka's.

    ``name``, ``principal`` and ``host`` None match anything; the enums' ANY
    matches any value, and ``ResourcePatternType.MATCH`` every pattern that
    applies to the resource ``name`` (its LITERAL pattern, the LITERAL ``*``,
    the PREFIXED patterns it starts with).

    Raises:
        ValueError: an enum field left None or UNKNOWN.
        TypeError: as :class:`AclBinding`.
    """

    @staticmethod
    def _not_none_args() -> tuple[str, ...]:
        return ("restype", "resource_pattern_type", "operation", "permission_type")

    @staticmethod
    def _forbidden_enums() -> dict[str, tuple[Enum, ...]]:
        return {
            "restype": (ResourceType.UNKNOWN,),
            "resource_pattern_type": (ResourcePatternType.UNKNOWN,),
            "operation": (AclOperation.UNKNOWN,),
            "permission_type": (AclPermissionType.UNKNOWN,),
        }


def _binding_from_wire(resource_type: int, name: str, pattern_type: int, acl: Any) -> AclBinding:
    """An AclBinding from a DescribeAcls resource + ACL or a DeleteAcls matching ACL."""
    return AclBinding(
        _from_code(ResourceType, resource_type), name, _from_code(ResourcePatternType, pattern_type),
        acl.principal, acl.host, _from_code(AclOperation, acl.operation),
        _from_code(AclPermissionType, acl.permission_type),
    )


def _filter_body(f: AclBindingFilter) -> dict[str, Any]:
    """A DescribeAcls request's / DeleteAcls filter's fields for ``f``."""
    return {
        "resource_type_filter": f.restype_int, "resource_name_filter": f.name,
        "pattern_type_filter": f.resource_pattern_type_int, "principal_filter": f.principal,
        "host_filter": f.host, "operation": f.operation_int, "permission_type": f.permission_type_int,
    }


def _check_unique(items: list[Any], noun: str) -> None:
    if len(set(items)) != len(items):
        raise ValueError(f"duplicate {noun} not allowed")


def create_acls(core: AdminCore, acls: list[AclBinding],
                request_timeout: float | None = None) -> dict[AclBinding, Future[None]]:
    """CreateAcls (:meth:`AdminClient.create_acls`): {binding: Future(None)}, one request to any broker."""
    check_list(acls, "acls", AclBinding, "AclBinding objects")
    for acl in acls:
        if isinstance(acl, AclBindingFilter):
            # a filter may hold ANY/MATCH values no ACL can have
            raise TypeError("Expected list of AclBinding objects, got AclBindingFilter in acls")
    _check_unique(acls, "ACL bindings")
    futures: dict[AclBinding, Future[None]] = {acl: new_future() for acl in acls}
    body = {"creations": [
        {"resource_type": b.restype_int, "resource_name": b.name,
         "resource_pattern_type": b.resource_pattern_type_int, "principal": b.principal, "host": b.host,
         "operation": b.operation_int, "permission_type": b.permission_type_int}
        for b in acls
    ]}

    async def work(deadline: float | None) -> None:
        response = await core.send_retrying(None, CREATE_ACLS, body, deadline)
        # One result per creation, in request order; one missing is failed by the core's guard.
        for acl, result in zip(acls, response.results, strict=False):
            if result.error_code:
                fail(futures[acl], code_error(result.error_code, result.error_message))
            else:
                resolve(futures[acl], None)

    core.run(futures.values(), work, request_timeout)
    return futures


def describe_acls(core: AdminCore, acl_binding_filter: AclBindingFilter,
                  request_timeout: float | None = None) -> Future[list[AclBinding]]:
    """DescribeAcls (:meth:`AdminClient.describe_acls`): Future([AclBinding]), in the broker's order."""
    if not isinstance(acl_binding_filter, AclBindingFilter):
        raise TypeError("Expected acl_binding_filter to be an AclBindingFilter")
    fut: Future[list[AclBinding]] = new_future()
    body = _filter_body(acl_binding_filter)

    async def work(deadline: float | None) -> None:
        response = await core.send_retrying(None, DESCRIBE_ACLS, body, deadline)
        if response.error_code:
            fail(fut, code_error(response.error_code, response.error_message))
            return
        resolve(fut, [
            _binding_from_wire(r.resource_type, r.resource_name, r.pattern_type, acl)
            for r in response.resources for acl in r.acls
        ])

    core.run([fut], work, request_timeout)
    return fut


def delete_acls(core: AdminCore, acl_binding_filters: list[AclBindingFilter],
                request_timeout: float | None = None) -> dict[AclBindingFilter, Future[list[AclBinding]]]:
    """DeleteAcls (:meth:`AdminClient.delete_acls`): {filter: Future([deleted AclBinding])}.

    A filter fails with its own error, or with the error of any ACL it matched
    that could not be deleted (as Java's ``DeleteAclsResult.all()``).
    """
    check_list(acl_binding_filters, "acl_binding_filters", AclBindingFilter, "AclBindingFilter objects")
    _check_unique(acl_binding_filters, "ACL binding filters")
    filters = list(acl_binding_filters)
    futures: dict[AclBindingFilter, Future[list[AclBinding]]] = {f: new_future() for f in filters}
    body = {"filters": [_filter_body(f) for f in filters]}

    async def work(deadline: float | None) -> None:
        response = await core.send_retrying(None, DELETE_ACLS, body, deadline)
        for f, result in zip(filters, response.filter_results, strict=False):
            if result.error_code:
                fail(futures[f], code_error(result.error_code, result.error_message))
                continue
            failed = next((m for m in result.matching_acls if m.error_code), None)
            if failed is not None:
                fail(futures[f], code_error(failed.error_code, failed.error_message))
                continue
            resolve(futures[f], [
                _binding_from_wire(m.resource_type, m.resource_name, m.pattern_type, m)
                for m in result.matching_acls
            ])

    core.run(futures.values(), work, request_timeout)
    return futures
