"""Kafka's ACL model: resource patterns, access control entries, bindings and their filters.

This module owns what Kafka keeps in ``org.apache.kafka.common.acl`` and
``org.apache.kafka.common.resource`` (plus the pieces of ``SecurityUtils``,
``AclEntry`` and ``KafkaApis`` 2.8 that give them names and validate them):

* the four enums with Kafka's wire codes — :class:`ResourceType`,
  :class:`PatternType`, :class:`AclOperation`, :class:`AclPermissionType` —
  each with Kafka's ``fromCode`` (:meth:`~_AclEnum.from_code`, undefined codes
  become ``UNKNOWN``), the Pascal-case names ZooKeeper's JSON and
  ``kafka-acls.sh`` use (:attr:`~_AclEnum.kafka_name`: ``"Read"``,
  ``"IdempotentWrite"``, ``"TransactionalId"``, ``"Allow"``) and a lenient
  parser of those names (:meth:`~_AclEnum.parse`);
* :class:`ResourcePattern`, :class:`AccessControlEntry`, :class:`AclBinding`
  and the filters :class:`ResourcePatternFilter`,
  :class:`AccessControlEntryFilter`, :class:`AclBindingFilter` with Kafka's
  ``matches``, ``matchesAtMostOne``, ``findIndefiniteField`` and
  ``isUnknown``;
* the per-resource-type tables Kafka hard-codes: the operations each type
  supports (:func:`supported_operations`), the operations an ALLOW of another
  implies (:data:`IMPLIED_BY`), the error of a failed check
  (:func:`authorization_error`);
* the checks a CreateAcls request goes through on a 2.8 broker
  (:func:`has_unknown_code`, :func:`validate_new_binding`), and the resource
  patterns a DeleteAcls filter names directly (:func:`filter_to_resources`).

Everything here is plain data and pure functions; the decisions over a set of
ACLs are :mod:`mafka.security.authorizer`'s, their ZooKeeper layout
:mod:`mafka.security.acl_znodes`'.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import IntEnum
from types import MappingProxyType
from typing import ClassVar, Final, Self, TypeVar

from mafka.errors import ErrorCode, InvalidRequestError, UnknownServerError

from .principal import USER_TYPE, KafkaPrincipal

__all__ = [
    "CLUSTER_NAME",
    "CONCRETE_OPERATIONS",
    "CONCRETE_RESOURCE_TYPES",
    "IMPLIED_BY",
    "WILDCARD_HOST",
    "WILDCARD_PRINCIPAL_STRING",
    "WILDCARD_RESOURCE",
    "AccessControlEntry",
    "AccessControlEntryFilter",
    "AclBinding",
    "AclBindingFilter",
    "AclOperation",
    "AclPermissionType",
    "PatternType",
    "ResourcePattern",
    "ResourcePatternFilter",
    "ResourceType",
    "authorization_error",
    "filter_to_resources",
    "granting_operations",
    "has_unknown_code",
    "parse_acl_principal",
    "supported_operations",
    "validate_new_binding",
]

#: ``Resource.CLUSTER_NAME``: the one name a CLUSTER resource may have.
CLUSTER_NAME: Final = "kafka-cluster"
#: ``ResourcePattern.WILDCARD_RESOURCE``: as a LITERAL name, every resource of the type.
WILDCARD_RESOURCE: Final = "*"
#: ``AclEntry.WildcardHost``: an entry for every client host.
WILDCARD_HOST: Final = "*"
#: ``AclEntry.WildcardPrincipalString``: an entry for every user principal.
WILDCARD_PRINCIPAL_STRING: Final = f"{USER_TYPE}:*"


class _AclEnum(IntEnum):
    """The shared behaviour of Kafka's four ACL enums (each has an ``UNKNOWN`` member, code 0)."""

    @classmethod
    def from_code(cls, code: int) -> Self:
        """Kafka's ``fromCode``: the member with wire code *code*, ``UNKNOWN`` for any other number."""
        member = cls._value2member_map_.get(code)
        if member is None:
            return cls["UNKNOWN"]
        return member  # type: ignore[return-value]  # _value2member_map_ is typed as Enum

    @classmethod
    def parse(cls, text: str) -> Self:
        """A name as ZooKeeper's JSON, ``kafka-acls.sh`` or an admin client spells it; ``UNKNOWN`` if none.

        Kafka's ``SecurityUtils`` looks a name up as Pascal case (``TransactionalId``)
        and then upper-cased without separators (``TRANSACTIONALID``), and the enums'
        own ``fromString`` upper-case the Java name (``TRANSACTIONAL_ID``).  We accept
        the union: case-insensitive, with ``_`` or ``-`` between words or nothing
        (``transactional-id``), so every spelling any of those accepts parses here.
        """
        key = text.replace("_", "").replace("-", "").upper()
        return _lookup(cls, key)

    @property
    def kafka_name(self) -> str:
        """``SecurityUtils``' Pascal-case name: ``"IdempotentWrite"``, ``"TransactionalId"``, ``"Allow"``."""
        return "".join(word.capitalize() for word in self.name.split("_"))


_E = TypeVar("_E", bound=_AclEnum)


def _lookup(cls: type[_E], key: str) -> _E:
    for member in cls:
        if member.name.replace("_", "") == key:
            return member
    return cls["UNKNOWN"]


class ResourceType(_AclEnum):
    """``org.apache.kafka.common.resource.ResourceType``: what an ACL protects."""

    UNKNOWN = 0
    ANY = 1
    TOPIC = 2
    GROUP = 3
    CLUSTER = 4
    TRANSACTIONAL_ID = 5
    DELEGATION_TOKEN = 6


class PatternType(_AclEnum):
    """``org.apache.kafka.common.resource.PatternType``: how a pattern's name is matched.

    LITERAL and PREFIXED are the stored kinds; ANY and MATCH exist only in filters.
    """

    UNKNOWN = 0
    ANY = 1
    MATCH = 2
    LITERAL = 3
    PREFIXED = 4

    @property
    def is_specific(self) -> bool:
        """Kafka's ``isSpecific``: LITERAL or PREFIXED, the kinds a stored ACL can have."""
        return self is PatternType.LITERAL or self is PatternType.PREFIXED


class AclOperation(_AclEnum):
    """``org.apache.kafka.common.acl.AclOperation``; bit ``1 << code`` in authorized-operations fields."""

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


class AclPermissionType(_AclEnum):
    """``org.apache.kafka.common.acl.AclPermissionType``: whether an entry allows or denies."""

    UNKNOWN = 0
    ANY = 1
    DENY = 2
    ALLOW = 3


#: ``AclEntry.ResourceTypes``: the types a stored ACL can name (not UNKNOWN or ANY).
CONCRETE_RESOURCE_TYPES: Final = frozenset(
    t for t in ResourceType if t not in (ResourceType.UNKNOWN, ResourceType.ANY)
)
#: ``AclEntry.AclOperations``: the operations a stored ACL can name (ALL included).
CONCRETE_OPERATIONS: Final = frozenset(
    o for o in AclOperation if o not in (AclOperation.UNKNOWN, AclOperation.ANY)
)

_Op = AclOperation
_SUPPORTED: Final[Mapping[ResourceType, frozenset[AclOperation]]] = MappingProxyType({
    ResourceType.TOPIC: frozenset({
        _Op.READ, _Op.WRITE, _Op.CREATE, _Op.DESCRIBE, _Op.DELETE, _Op.ALTER,
        _Op.DESCRIBE_CONFIGS, _Op.ALTER_CONFIGS,
    }),
    ResourceType.GROUP: frozenset({_Op.READ, _Op.DESCRIBE, _Op.DELETE}),
    ResourceType.CLUSTER: frozenset({
        _Op.CREATE, _Op.CLUSTER_ACTION, _Op.DESCRIBE_CONFIGS, _Op.ALTER_CONFIGS,
        _Op.IDEMPOTENT_WRITE, _Op.ALTER, _Op.DESCRIBE,
    }),
    ResourceType.TRANSACTIONAL_ID: frozenset({_Op.DESCRIBE, _Op.WRITE}),
    ResourceType.DELEGATION_TOKEN: frozenset({_Op.DESCRIBE}),
})

#: The operations whose ALLOW also allows the key (``AclAuthorizer.allowAclExists``):
#: reading, writing, deleting or altering a resource implies describing it, altering
#: its configs implies describing them.  DENY entries imply nothing.
IMPLIED_BY: Final[Mapping[AclOperation, frozenset[AclOperation]]] = MappingProxyType({
    _Op.DESCRIBE: frozenset({_Op.READ, _Op.WRITE, _Op.DELETE, _Op.ALTER}),
    _Op.DESCRIBE_CONFIGS: frozenset({_Op.ALTER_CONFIGS}),
})

_AUTHORIZATION_ERRORS: Final[Mapping[ResourceType, ErrorCode]] = MappingProxyType({
    ResourceType.TOPIC: ErrorCode.TOPIC_AUTHORIZATION_FAILED,
    ResourceType.GROUP: ErrorCode.GROUP_AUTHORIZATION_FAILED,
    ResourceType.CLUSTER: ErrorCode.CLUSTER_AUTHORIZATION_FAILED,
    ResourceType.TRANSACTIONAL_ID: ErrorCode.TRANSACTIONAL_ID_AUTHORIZATION_FAILED,
    ResourceType.DELEGATION_TOKEN: ErrorCode.DELEGATION_TOKEN_AUTHORIZATION_FAILED,
})


def supported_operations(resource_type: ResourceType) -> frozenset[AclOperation]:
    """``AclEntry.supportedOperations``: the operations checked on *resource_type* (ALL excluded).

    These are the bits an authorized-operations field can carry for the type.

    Raises:
        ValueError: UNKNOWN or ANY (Kafka: "Not a concrete resource type").
    """
    try:
        return _SUPPORTED[resource_type]
    except KeyError:
        raise ValueError("Not a concrete resource type") from None


def granting_operations(operation: AclOperation) -> frozenset[AclOperation]:
    """The operations an ALLOW entry may name to allow *operation*: itself, ALL and those implying it."""
    return frozenset({operation, AclOperation.ALL}) | IMPLIED_BY.get(operation, frozenset())


def authorization_error(resource_type: ResourceType) -> ErrorCode:
    """``AclEntry.authorizationError``: the error a denied check on *resource_type* reports.

    Raises:
        ValueError: UNKNOWN or ANY (Kafka: "Authorization error type not known").
    """
    try:
        return _AUTHORIZATION_ERRORS[resource_type]
    except KeyError:
        raise ValueError("Authorization error type not known") from None


def parse_acl_principal(text: str) -> KafkaPrincipal:
    """``SecurityUtils.parseKafkaPrincipal`` exactly: ``type:name`` split at the first colon.

    Kafka checks only that the string is non-empty and has a colon, so ``User:``
    and ``:alice`` parse (with an empty name or type).  ACL entries are held to
    this rule, which is looser than :func:`mafka.security.principal.parse_principal`.

    Raises:
        ValueError: empty, or no colon.
    """
    principal_type, sep, name = text.partition(":")
    if not text or not sep:
        raise ValueError(f"expected a string in format principalType:principalName but got {text}")
    return KafkaPrincipal(principal_type, name)


@dataclass(frozen=True, slots=True)
class ResourcePattern:
    """``ResourcePattern``: the resources an ACL applies to.

    A LITERAL pattern names one resource, or every resource of the type when
    the name is :data:`WILDCARD_RESOURCE`; a PREFIXED pattern every resource
    whose name starts with ``name``.

    Raises:
        ValueError: ``resource_type`` is ANY, or ``pattern_type`` is ANY or MATCH
            (Kafka's constructor refuses the filter-only values).
    """

    resource_type: ResourceType
    name: str
    pattern_type: PatternType

    def __post_init__(self) -> None:
        if self.resource_type is ResourceType.ANY:
            raise ValueError("resourceType must not be ANY")
        if self.pattern_type in (PatternType.MATCH, PatternType.ANY):
            raise ValueError(f"patternType must not be {self.pattern_type.name}")

    def __str__(self) -> str:
        return (
            f"ResourcePattern(resourceType={self.resource_type.name}, name={self.name}, "
            f"patternType={self.pattern_type.name})"
        )

    def is_unknown(self) -> bool:
        """Whether the resource type or pattern type is UNKNOWN (a code this broker does not know)."""
        return self.resource_type is ResourceType.UNKNOWN or self.pattern_type is PatternType.UNKNOWN

    def to_filter(self) -> ResourcePatternFilter:
        """The filter matching exactly this pattern."""
        return ResourcePatternFilter(self.resource_type, self.name, self.pattern_type)


@dataclass(frozen=True, slots=True)
class AccessControlEntry:
    """``AccessControlEntry``: who (``User:alice``), from where (an IP or ``*``), may or may not do what.

    ``principal`` is kept as the string the ACL was created with, as Kafka keeps it.

    Raises:
        ValueError: ``operation`` or ``permission_type`` is ANY.
    """

    principal: str
    host: str
    operation: AclOperation
    permission_type: AclPermissionType

    def __post_init__(self) -> None:
        if self.operation is AclOperation.ANY:
            raise ValueError("operation must not be ANY")
        if self.permission_type is AclPermissionType.ANY:
            raise ValueError("permissionType must not be ANY")

    def __str__(self) -> str:
        return (
            f"(principal={self.principal}, host={self.host}, operation={self.operation.name}, "
            f"permissionType={self.permission_type.name})"
        )

    def is_unknown(self) -> bool:
        """Whether the operation or permission type is UNKNOWN."""
        return self.operation is AclOperation.UNKNOWN or self.permission_type is AclPermissionType.UNKNOWN

    def to_filter(self) -> AccessControlEntryFilter:
        """The filter matching exactly this entry."""
        return AccessControlEntryFilter(self.principal, self.host, self.operation, self.permission_type)


@dataclass(frozen=True, slots=True)
class AclBinding:
    """``AclBinding``: one ACL, an entry bound to a resource pattern."""

    pattern: ResourcePattern
    entry: AccessControlEntry

    def __str__(self) -> str:
        return f"(pattern={self.pattern}, entry={self.entry})"

    def is_unknown(self) -> bool:
        """Whether any part is UNKNOWN; Kafka refuses to create such a binding."""
        return self.pattern.is_unknown() or self.entry.is_unknown()

    def to_filter(self) -> AclBindingFilter:
        """The filter matching exactly this binding."""
        return AclBindingFilter(self.pattern.to_filter(), self.entry.to_filter())


@dataclass(frozen=True, slots=True)
class ResourcePatternFilter:
    """``ResourcePatternFilter``: selects resource patterns (DescribeAcls, DeleteAcls).

    ``resource_type`` ANY and ``name`` None match anything.  ``pattern_type``:

    * ANY — patterns of any kind whose name equals ``name``;
    * MATCH — the patterns that would apply to a resource called ``name``: the
      LITERAL one of that name, the LITERAL wildcard ``*`` and every PREFIXED
      pattern ``name`` starts with;
    * LITERAL / PREFIXED — that kind only, with that exact name.
    """

    resource_type: ResourceType
    name: str | None
    pattern_type: PatternType

    ANY: ClassVar[ResourcePatternFilter]

    def __str__(self) -> str:
        name = "<any>" if self.name is None else self.name
        return (
            f"ResourcePattern(resourceType={self.resource_type.name}, name={name}, "
            f"patternType={self.pattern_type.name})"
        )

    def is_unknown(self) -> bool:
        """Whether the resource type or pattern type is UNKNOWN."""
        return self.resource_type is ResourceType.UNKNOWN or self.pattern_type is PatternType.UNKNOWN

    def matches(self, pattern: ResourcePattern) -> bool:
        """Kafka's ``ResourcePatternFilter.matches``."""
        if self.resource_type is not ResourceType.ANY and self.resource_type != pattern.resource_type:
            return False
        if (
            self.pattern_type not in (PatternType.ANY, PatternType.MATCH)
            and self.pattern_type != pattern.pattern_type
        ):
            return False
        if self.name is None:
            return True
        if self.pattern_type is PatternType.ANY or self.pattern_type == pattern.pattern_type:
            return self.name == pattern.name
        # MATCH against a pattern of another kind.
        if pattern.pattern_type is PatternType.LITERAL:
            return self.name == pattern.name or pattern.name == WILDCARD_RESOURCE
        if pattern.pattern_type is PatternType.PREFIXED:
            return self.name.startswith(pattern.name)
        # Kafka throws "Unsupported PatternType" here; an UNKNOWN pattern simply applies to nothing.
        return False

    def matches_at_most_one(self) -> bool:
        """Whether at most one pattern can match (no indefinite field)."""
        return self.find_indefinite_field() is None

    def find_indefinite_field(self) -> str | None:
        """Kafka's message naming the first ANY/UNKNOWN/null field, or None if the filter is definite."""
        if self.resource_type is ResourceType.ANY:
            return "Resource type is ANY."
        if self.resource_type is ResourceType.UNKNOWN:
            return "Resource type is UNKNOWN."
        if self.name is None:
            return "Resource name is NULL."
        if self.pattern_type is PatternType.MATCH:
            return "Resource pattern type is MATCH."
        if self.pattern_type is PatternType.UNKNOWN:
            return "Resource pattern type is UNKNOWN."
        return None


ResourcePatternFilter.ANY = ResourcePatternFilter(ResourceType.ANY, None, PatternType.ANY)


@dataclass(frozen=True, slots=True)
class AccessControlEntryFilter:
    """``AccessControlEntryFilter``: selects entries; None and ANY fields match anything.

    Principal and host are compared as strings, exactly (``User:*`` in a filter
    matches only entries for ``User:*``).
    """

    principal: str | None
    host: str | None
    operation: AclOperation
    permission_type: AclPermissionType

    ANY: ClassVar[AccessControlEntryFilter]

    def __str__(self) -> str:
        principal = "<any>" if self.principal is None else self.principal
        host = "<any>" if self.host is None else self.host
        return (
            f"(principal={principal}, host={host}, operation={self.operation.name}, "
            f"permissionType={self.permission_type.name})"
        )

    def is_unknown(self) -> bool:
        """Whether the operation or permission type is UNKNOWN."""
        return self.operation is AclOperation.UNKNOWN or self.permission_type is AclPermissionType.UNKNOWN

    def matches(self, entry: AccessControlEntry) -> bool:
        """Kafka's ``AccessControlEntryFilter.matches``."""
        if self.principal is not None and self.principal != entry.principal:
            return False
        if self.host is not None and self.host != entry.host:
            return False
        if self.operation is not AclOperation.ANY and self.operation != entry.operation:
            return False
        return self.permission_type is AclPermissionType.ANY or self.permission_type == entry.permission_type

    def matches_at_most_one(self) -> bool:
        """Whether at most one entry can match (no indefinite field)."""
        return self.find_indefinite_field() is None

    def find_indefinite_field(self) -> str | None:
        """Kafka's message naming the first null/ANY/UNKNOWN field, or None if the filter is definite."""
        if self.principal is None:
            return "Principal is NULL"
        if self.host is None:
            return "Host is NULL"
        if self.operation is AclOperation.ANY:
            return "Operation is ANY"
        if self.operation is AclOperation.UNKNOWN:
            return "Operation is UNKNOWN"
        if self.permission_type is AclPermissionType.ANY:
            return "Permission type is ANY"
        if self.permission_type is AclPermissionType.UNKNOWN:
            return "Permission type is UNKNOWN"
        return None


AccessControlEntryFilter.ANY = AccessControlEntryFilter(None, None, AclOperation.ANY, AclPermissionType.ANY)


@dataclass(frozen=True, slots=True)
class AclBindingFilter:
    """``AclBindingFilter``: a pattern filter and an entry filter, both of which must match."""

    pattern_filter: ResourcePatternFilter
    entry_filter: AccessControlEntryFilter

    ANY: ClassVar[AclBindingFilter]

    def __str__(self) -> str:
        return f"(patternFilter={self.pattern_filter}, entryFilter={self.entry_filter})"

    def is_unknown(self) -> bool:
        """Whether any part is UNKNOWN (Kafka's admin client refuses to describe with such a filter)."""
        return self.pattern_filter.is_unknown() or self.entry_filter.is_unknown()

    def matches(self, binding: AclBinding) -> bool:
        """Kafka's ``AclBindingFilter.matches``."""
        return self.pattern_filter.matches(binding.pattern) and self.entry_filter.matches(binding.entry)

    def matches_at_most_one(self) -> bool:
        """Whether at most one binding can match."""
        return self.pattern_filter.matches_at_most_one() and self.entry_filter.matches_at_most_one()

    def find_indefinite_field(self) -> str | None:
        """The pattern filter's indefinite field, else the entry filter's, else None."""
        indefinite = self.pattern_filter.find_indefinite_field()
        if indefinite is not None:
            return indefinite
        return self.entry_filter.find_indefinite_field()


AclBindingFilter.ANY = AclBindingFilter(ResourcePatternFilter.ANY, AccessControlEntryFilter.ANY)


def has_unknown_code(resource_type: int, pattern_type: int, operation: int, permission_type: int) -> bool:
    """Whether any raw wire code of an ACL request element is 0, UNKNOWN.

    Kafka 2.8's CreateAcls, DescribeAcls and DeleteAcls request classes refuse
    such a request while parsing it (an ``IllegalArgumentException`` such as
    "CreatableAcls contain unknown elements"), so the broker never answers it:
    the connection is closed as for any unparseable request.  Only code 0 is
    caught here, as in Kafka; other undefined numbers become UNKNOWN through
    ``from_code`` and are handled per element (:func:`validate_new_binding`).
    """
    return 0 in (resource_type, pattern_type, operation, permission_type)


def validate_new_binding(binding: AclBinding) -> None:
    """The per-ACL checks of a 2.8 broker's CreateAcls, in Kafka's order and with its messages.

    Before these, building the binding from the request may already fail: the
    constructors of :class:`ResourcePattern` and :class:`AccessControlEntry`
    refuse ANY resource types, ANY/MATCH pattern types, ANY operations and ANY
    permission types with a ``ValueError``, and Kafka then answers every
    creation of the request with UNKNOWN_SERVER_ERROR (no message).

    Kafka 2.8 checks nothing else: it accepts any host string, an operation the
    resource type does not support (``READ`` on the cluster), and a PREFIXED
    ``*`` (a prefix like any other).  Only ``kafka-acls.sh`` checks operations.

    Raises:
        InvalidRequestError: a CLUSTER resource not named ``kafka-cluster``; an
            empty resource name; an UNKNOWN part ("Failed to create ACL", the
            message ``AclAuthorizer`` gives).
        UnknownServerError: the principal is not ``type:name``.  Kafka fails
            there while writing the pattern's ZooKeeper node, so every creation
            for the same resource pattern in the request fails with it, and the
            message is not sent (Kafka sends none for UNKNOWN_SERVER_ERROR).
    """
    pattern = binding.pattern
    if pattern.resource_type is ResourceType.CLUSTER and pattern.name != CLUSTER_NAME:
        raise InvalidRequestError(f"The only valid name for the CLUSTER resource is {CLUSTER_NAME}")
    if not pattern.name:
        raise InvalidRequestError("Invalid empty resource name")
    if binding.is_unknown():
        raise InvalidRequestError("Failed to create ACL")
    try:
        parse_acl_principal(binding.entry.principal)
    except ValueError as exc:
        raise UnknownServerError(str(exc)) from exc


def filter_to_resources(pattern_filter: ResourcePatternFilter) -> frozenset[ResourcePattern]:
    """``AclAuthorizer.filterToResources``: the patterns a definite DeleteAcls filter names.

    Kafka's DeleteAcls reads these from ZooKeeper even when its cache does not
    hold them, so that ACLs created moments ago on another broker are deleted.
    LITERAL/PREFIXED name that pattern, ANY both kinds.

    Raises:
        ValueError: the filter is not definite (see
            :meth:`ResourcePatternFilter.matches_at_most_one`).
    """
    if pattern_filter.find_indefinite_field() is not None or pattern_filter.name is None:
        raise ValueError(f"Cannot determine matching resources for patternType {pattern_filter}")
    rt, name = pattern_filter.resource_type, pattern_filter.name
    if pattern_filter.pattern_type is PatternType.ANY:
        return frozenset({
            ResourcePattern(rt, name, PatternType.LITERAL),
            ResourcePattern(rt, name, PatternType.PREFIXED),
        })
    return frozenset({ResourcePattern(rt, name, pattern_filter.pattern_type)})
