"""Kafka 2.8 ``AclAuthorizer``'s decisions over an in-memory ACL cache (no I/O).

The broker owns the ZooKeeper side (reading ``/kafka-acl*`` at start-up,
following the change notifications, writing CreateAcls/DeleteAcls, see
:mod:`mafka.security.acl_znodes`) and feeds what it reads into an
:class:`AclAuthorizer` with :meth:`~AclAuthorizer.update` /
:meth:`~AclAuthorizer.remove`.  This module owns the answers:

* :meth:`~AclAuthorizer.authorize` — ``AclAuthorizer.authorizeAction``: may
  this principal, from this host, do this operation on this resource?
* :meth:`~AclAuthorizer.authorize_by_resource_type` — KIP-679's
  ``authorizeByResourceType``: could it do the operation on *some* resource of
  the type (an idempotent producer's WRITE on any topic)?
* :meth:`~AclAuthorizer.authorized_operations` — the operations of the
  ``*_authorized_operations`` bitfields (Metadata, DescribeGroups, DescribeCluster).
* :meth:`~AclAuthorizer.acls` — DescribeAcls (and DeleteAcls' matching).

Lookup structure (the per-request path must not scan every ACL):

* LITERAL patterns are a dict keyed by ``(resource type, name)``; a check
  looks up the resource's own name and ``*``.
* PREFIXED patterns are, per resource type, a dict per prefix *length*
  (``{length: {prefix: entries}}``) plus the sorted list of lengths in use; a
  check slices the resource name at each length not longer than it and looks
  the slice up — one dict probe per distinct prefix length (a few in
  practice, at most the longest prefix's length), however many prefixed
  ACLs there are.
* Each pattern's entries are a frozenset of ``(principal, host, operation,
  permission)`` keys, so "is there a matching DENY/ALLOW" is a handful of set
  probes (principal or ``User:*`` × host or ``*`` × the operation, ALL, or an
  operation implying it) rather than a walk over the entries.
* For ``authorize_by_resource_type``, Kafka's ``resourceCache``: the names of
  the patterns holding each exact entry, per resource and pattern type.

Not thread-safe: updates and checks are meant to run on one thread, the
broker's reactor, as every other piece of broker state does.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from typing import Final

from .acl import (
    WILDCARD_HOST,
    WILDCARD_RESOURCE,
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    granting_operations,
    parse_acl_principal,
    supported_operations,
)
from .principal import WILDCARD_PRINCIPAL, KafkaPrincipal

__all__ = ["ALLOW_EVERYONE_IF_NO_ACL_FOUND", "SUPER_USERS", "AclAuthorizer", "parse_super_users"]

#: ``AclAuthorizer.SuperUsersProp``.
SUPER_USERS: Final = "super.users"
#: ``AclAuthorizer.AllowEveryoneIfNoAclIsFoundProp``.
ALLOW_EVERYONE_IF_NO_ACL_FOUND: Final = "allow.everyone.if.no.acl.found"

_ALLOW: Final = AclPermissionType.ALLOW
_DENY: Final = AclPermissionType.DENY
_ALL: Final = AclOperation.ALL

# (principal, host, operation, permission type): an entry as the lookups see it.  The principal
# is parsed as Kafka's AclEntry parses it, and compared as (type, name) as Kafka compares them.
_Key = tuple[KafkaPrincipal, str, AclOperation, AclPermissionType]
_Keys = frozenset[_Key]
_EMPTY: Final[_Keys] = frozenset()

# The operations whose ALLOW entries grant each operation, computed once: hot path.
_GRANTING: Final = {op: tuple(granting_operations(op)) for op in AclOperation}


def parse_super_users(value: str | None) -> frozenset[KafkaPrincipal]:
    """The ``super.users`` config: semicolon-separated principals, each trimmed.

    An empty or missing value is no super users, as in Kafka; so are trailing
    semicolons (Java's ``split`` drops trailing empty items).

    Raises:
        ValueError: an item that is not ``type:name`` (``SecurityUtils.parseKafkaPrincipal``).
    """
    if not value:
        return frozenset()
    items = value.split(";")
    while items and not items[-1]:
        items.pop()
    return frozenset(parse_acl_principal(item.strip()) for item in items)


@dataclass
class _PrefixIndex:
    """The PREFIXED patterns of one resource type: ``{length: {prefix: keys}}`` and the lengths in use."""

    by_length: dict[int, dict[str, _Keys]] = field(default_factory=dict)
    lengths: list[int] = field(default_factory=list)

    def put(self, prefix: str, keys: _Keys) -> None:
        n = len(prefix)
        slot = self.by_length.get(n)
        if slot is None:
            self.by_length[n] = {prefix: keys}
            self.lengths = sorted((*self.lengths, n))
        else:
            slot[prefix] = keys

    def get(self, prefix: str) -> _Keys:
        return self.by_length.get(len(prefix), {}).get(prefix, _EMPTY)

    def discard(self, prefix: str) -> None:
        n = len(prefix)
        slot = self.by_length.get(n)
        if slot is None or slot.pop(prefix, None) is None:
            return
        if not slot:
            self.lengths = [m for m in self.lengths if m != n]
            del self.by_length[n]

    def matching(self, name: str) -> Iterator[_Keys]:
        """The entries of every stored prefix *name* starts with (the empty prefix included)."""
        limit = len(name)
        by_length = self.by_length
        for n in self.lengths:
            if n > limit:
                break
            keys = by_length.get(n, {}).get(name[:n])
            if keys is not None:
                yield keys


class AclAuthorizer:
    """``kafka.security.authorizer.AclAuthorizer`` 2.8: decisions over the ACLs the caller loads.

    Args:
        super_users: principals (or ``type:name`` strings) allowed everything,
            whatever the ACLs say (``super.users``; see :func:`parse_super_users`).
        allow_everyone_if_no_acl_found: ``allow.everyone.if.no.acl.found``: a
            resource no ACL applies to is open to everyone rather than to
            super users only.

    Raises:
        ValueError: a super user string that is not ``type:name``.
    """

    def __init__(
        self,
        super_users: Iterable[KafkaPrincipal | str] = (),
        allow_everyone_if_no_acl_found: bool = False,
    ) -> None:
        self.super_users: frozenset[KafkaPrincipal] = frozenset(
            u if isinstance(u, KafkaPrincipal) else parse_acl_principal(u) for u in super_users
        )
        self.allow_everyone_if_no_acl_found = allow_everyone_if_no_acl_found
        # The cache proper (Kafka's aclCache), in the caller's terms.
        self._acls: dict[ResourcePattern, frozenset[AccessControlEntry]] = {}
        # The lookup indexes derived from it (see the module docstring).
        self._literal: dict[tuple[ResourceType, str], _Keys] = {}
        self._prefixed: dict[ResourceType, _PrefixIndex] = {}
        # Kafka's resourceCache: (entry key, resource type, pattern type) -> pattern names.
        self._names: dict[tuple[_Key, ResourceType, PatternType], set[str]] = {}

    # -- the cache -------------------------------------------------------------------------------

    def update(self, pattern: ResourcePattern, entries: Iterable[AccessControlEntry]) -> None:
        """Sets *pattern*'s ACLs to *entries* (what its ZooKeeper node now holds); none removes it.

        Raises:
            ValueError: *pattern* is not LITERAL or PREFIXED, or an entry's
                principal is not ``type:name`` (nothing is changed then).
        """
        if not pattern.pattern_type.is_specific:
            raise ValueError(f"cannot cache ACLs of a {pattern.pattern_type.name} pattern: {pattern}")
        new = frozenset(entries)
        keys = frozenset(
            (parse_acl_principal(e.principal), e.host, e.operation, e.permission_type) for e in new
        )
        old_keys = self._keys_of(pattern)
        if not new:
            self.remove(pattern)
            return
        self._acls[pattern] = new
        self._index(pattern, keys)
        self._update_names(pattern, old_keys, keys)

    def remove(self, pattern: ResourcePattern) -> None:
        """Forgets *pattern*'s ACLs (its node was deleted); a pattern not held is ignored."""
        if self._acls.pop(pattern, None) is None:
            return
        old_keys = self._keys_of(pattern)
        if pattern.pattern_type is PatternType.LITERAL:
            self._literal.pop((pattern.resource_type, pattern.name), None)
        else:
            index = self._prefixed.get(pattern.resource_type)
            if index is not None:
                index.discard(pattern.name)
                if not index.lengths:
                    del self._prefixed[pattern.resource_type]
        self._update_names(pattern, old_keys, _EMPTY)

    def clear(self) -> None:
        """Forgets every ACL (before a full reload)."""
        self._acls.clear()
        self._literal.clear()
        self._prefixed.clear()
        self._names.clear()

    def patterns(self) -> list[ResourcePattern]:
        """Every pattern holding ACLs."""
        return list(self._acls)

    def entries(self, pattern: ResourcePattern) -> frozenset[AccessControlEntry]:
        """*pattern*'s ACL entries (empty if it has none)."""
        return self._acls.get(pattern, frozenset())

    def __len__(self) -> int:
        """The number of ACL bindings held."""
        return sum(len(e) for e in self._acls.values())

    def acls(self, binding_filter: AclBindingFilter = AclBindingFilter.ANY) -> list[AclBinding]:
        """``Authorizer.acls``: every binding *binding_filter* matches (DescribeAcls).

        An admin request, not the per-request path: every pattern is tested.
        """
        pattern_filter, entry_filter = binding_filter.pattern_filter, binding_filter.entry_filter
        out: list[AclBinding] = []
        for pattern, entries in self._acls.items():
            if not pattern_filter.matches(pattern):
                continue
            out.extend(AclBinding(pattern, e) for e in entries if entry_filter.matches(e))
        return out

    def _keys_of(self, pattern: ResourcePattern) -> _Keys:
        if pattern.pattern_type is PatternType.LITERAL:
            return self._literal.get((pattern.resource_type, pattern.name), _EMPTY)
        index = self._prefixed.get(pattern.resource_type)
        return _EMPTY if index is None else index.get(pattern.name)

    def _index(self, pattern: ResourcePattern, keys: _Keys) -> None:
        if pattern.pattern_type is PatternType.LITERAL:
            self._literal[(pattern.resource_type, pattern.name)] = keys
        else:
            self._prefixed.setdefault(pattern.resource_type, _PrefixIndex()).put(pattern.name, keys)

    def _update_names(self, pattern: ResourcePattern, old: _Keys, new: _Keys) -> None:
        # AclAuthorizer.updateCache's upkeep of resourceCache.
        rt, pt, name = pattern.resource_type, pattern.pattern_type, pattern.name
        # Sets changed in place: one entry (User:* reading "*"-host) may be on thousands of patterns.
        for key in new - old:
            self._names.setdefault((key, rt, pt), set()).add(name)
        for key in old - new:
            slot = (key, rt, pt)
            names = self._names.get(slot)
            if names is not None:
                names.discard(name)
                if not names:
                    del self._names[slot]

    # -- decisions -------------------------------------------------------------------------------

    def is_super_user(self, principal: KafkaPrincipal) -> bool:
        """Whether *principal* is listed in ``super.users``."""
        return principal in self.super_users

    def _matching(self, resource_type: ResourceType, name: str) -> list[_Keys]:
        """``matchingAcls``: the entry sets of the literal name, the literal ``*``, and every prefix."""
        found: list[_Keys] = []
        literal = self._literal.get((resource_type, name))
        if literal is not None:
            found.append(literal)
        if name != WILDCARD_RESOURCE:
            wildcard = self._literal.get((resource_type, WILDCARD_RESOURCE))
            if wildcard is not None:
                found.append(wildcard)
        index = self._prefixed.get(resource_type)
        if index is not None:
            found.extend(index.matching(name))
        return found

    def authorize(
        self,
        principal: KafkaPrincipal,
        host: str,
        operation: AclOperation,
        resource_type: ResourceType,
        name: str,
    ) -> bool:
        """``authorizeAction`` for the LITERAL resource ``resource_type:name``.

        Allowed when *principal* is a super user; otherwise the ACLs that apply
        are those of the literal name, of the literal ``*`` and of every prefix
        of the name.  None at all: ``allow.everyone.if.no.acl.found`` decides.
        Else a DENY entry for the principal or ``User:*``, from *host* or
        ``*``, for *operation* or ALL refuses; failing that an ALLOW entry (same
        principal and host rule) for *operation*, ALL, or an operation implying
        it (READ/WRITE/DELETE/ALTER imply DESCRIBE; ALTER_CONFIGS implies
        DESCRIBE_CONFIGS) allows; nothing else does.

        Args:
            host: the client's IP address as text (Java's ``getHostAddress``).
        """
        if principal in self.super_users:
            return True
        sets = self._matching(resource_type, name)
        if not sets:
            return self.allow_everyone_if_no_acl_found
        who = (principal, WILDCARD_PRINCIPAL)
        where = (host, WILDCARD_HOST)
        deny = [(p, h, o, _DENY) for p in who for h in where for o in (operation, _ALL)]
        for keys in sets:
            if not keys.isdisjoint(deny):
                return False
        allow = [(p, h, o, _ALLOW) for p in who for h in where for o in _GRANTING[operation]]
        return any(not keys.isdisjoint(allow) for keys in sets)

    def authorized_operations(
        self, principal: KafkaPrincipal, host: str, resource_type: ResourceType, name: str
    ) -> set[AclOperation]:
        """``AuthHelper.authorizedOperations``: the type's supported operations :meth:`authorize` allows.

        Raises:
            ValueError: *resource_type* is UNKNOWN or ANY.
        """
        return {
            op
            for op in supported_operations(resource_type)
            if self.authorize(principal, host, op, resource_type, name)
        }

    def authorize_by_resource_type(
        self, principal: KafkaPrincipal, host: str, operation: AclOperation, resource_type: ResourceType
    ) -> bool:
        """``AclAuthorizer.authorizeByResourceType`` (KIP-679): may *operation* be allowed on some resource of the type?

        As Kafka 2.8 decides it, with the ACLs for the principal or ``User:*``,
        from *host* or ``*``, naming *operation* or ALL (no implied operations):

        1. a super user: yes;
        2. a DENY on the literal ``*``: no;
        3. ``allow.everyone.if.no.acl.found``: yes (whatever else is there);
        4. no DENY at all: yes if there is any ALLOW;
        5. else yes if an ALLOW on the literal ``*`` exists, or an ALLOW on a
           literal name with no DENY on that name nor on any of its prefixes, or
           an ALLOW on a prefix none of whose own prefixes is DENY-ed.

        Raises:
            ValueError: *operation* ANY or UNKNOWN, or *resource_type* ANY or
                UNKNOWN (Kafka's ``authorizeByResourceTypeCheckArgs`` messages).
        """
        if resource_type is ResourceType.ANY:
            raise ValueError("Must specify a non-filter resource type for authorizeByResourceType")
        if resource_type is ResourceType.UNKNOWN:
            raise ValueError("Unknown resource type")
        if operation is AclOperation.ANY:
            raise ValueError("Must specify a non-filter operation type for authorizeByResourceType")
        if operation is AclOperation.UNKNOWN:
            raise ValueError("Unknown operation type")
        if principal in self.super_users:
            return True

        def names(permission: AclPermissionType, pattern_type: PatternType) -> list[set[str]]:
            found = []
            for p in (principal, WILDCARD_PRINCIPAL):
                for h in (host, WILDCARD_HOST):
                    for o in (operation, _ALL):
                        got = self._names.get(((p, h, o, permission), resource_type, pattern_type))
                        if got is not None:
                            found.append(got)
            return found

        deny_literals = names(_DENY, PatternType.LITERAL)
        if any(WILDCARD_RESOURCE in s for s in deny_literals):
            return False
        if self.allow_everyone_if_no_acl_found:
            return True
        deny_prefixes = names(_DENY, PatternType.PREFIXED)
        allow_prefixes = names(_ALLOW, PatternType.PREFIXED)
        allow_literals = names(_ALLOW, PatternType.LITERAL)
        if not deny_literals and not deny_prefixes:
            return bool(allow_prefixes or allow_literals)

        def dominated(resource_name: str) -> bool:
            # hasDominantPrefixedDeny: a DENY-ed prefix of length 1..len(name) of the name.
            return any(
                resource_name[:n] in s for n in range(1, len(resource_name) + 1) for s in deny_prefixes
            )

        for allowed in allow_prefixes:
            if any(not dominated(prefix) for prefix in allowed):
                return True
        for allowed in allow_literals:
            for literal in allowed:
                if literal == WILDCARD_RESOURCE:
                    return True
                if not any(literal in s for s in deny_literals) and not dominated(literal):
                    return True
        return False
