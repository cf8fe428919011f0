"""The broker's authorizer: Kafka 2.8's ``AclAuthorizer`` fed from ZooKeeper, and the checks handlers make.

:class:`BrokerAuthorizer` is switched on by ``authorizer.class.name`` (Kafka's
``kafka.security.authorizer.AclAuthorizer``, or the older
``kafka.security.auth.SimpleAclAuthorizer``; no other class can be loaded).
Off, every request is allowed, as in Kafka without an authorizer, and the
ACL APIs answer SECURITY_DISABLED.

On, it reads every ACL at start-up (``/kafka-acl``,
``/kafka-acl-extended/prefixed``) into a :class:`~mafka.security.authorizer.AclAuthorizer`,
then re-reads a pattern each time a change notification names it, so an ACL
added or removed through any broker applies on every broker as soon as the
notification is seen.  Decisions use ``super.users`` and
``allow.everyone.if.no.acl.found``.

Handlers ask :meth:`BrokerAuthorizer.authorize` (one resource) or
:meth:`~BrokerAuthorizer.filter_authorized` with the request's
:class:`~mafka.broker.network.Connection` (its principal and host), and
answer the matching ``*_AUTHORIZATION_FAILED`` code when refused — never by
closing the connection.
"""

from __future__ import annotations

import functools
import logging
import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final, TypeVar

from twisted.internet import defer

from mafka.errors import ConfigError, InvalidRequestError, KafkaError, UnknownServerError
from mafka.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    PatternType,
    ResourcePattern,
    ResourceType,
    supported_operations,
    validate_new_binding,
)
from mafka.security.authorizer import AclAuthorizer, parse_super_users
from mafka.security.principal import ANONYMOUS

__all__ = ["ACL_AUTHORIZER_CLASSES", "BrokerAuthorizer", "CLUSTER_NAME"]

log = logging.getLogger("mafka.broker.authorization")

#: The class names ``authorizer.class.name`` may name (Kafka's two ZooKeeper ACL authorizers).
ACL_AUTHORIZER_CLASSES: Final = frozenset(
    {"kafka.security.authorizer.AclAuthorizer", "kafka.security.auth.SimpleAclAuthorizer"}
)
CLUSTER_NAME: Final = "kafka-cluster"
#: Kafka's ``maxUpdateRetries``: attempts at a compare-and-set of one pattern's node.
MAX_UPDATE_RETRIES: Final = 10
#: Kafka's ``ZkNodeChangeNotificationListener.changeExpirationMs``: notifications older than this are purged.
CHANGE_EXPIRATION_MS: Final = 15 * 60 * 1000

T = TypeVar("T")


def _raw(config: Any, key: str) -> str | None:
    try:
        value = config.get(key)
    except KeyError:
        return None
    return None if value is None else str(value)


class BrokerAuthorizer:
    """ACL decisions for this broker's handlers, and the ACL admin operations.

    Args:
        zk: the broker's :class:`~mafka.coordination.kafka_zk.client.KafkaZkClient`.
        config: the broker's config (``authorizer.class.name``, ``super.users``,
            ``allow.everyone.if.no.acl.found``).
        clock_ms: wall-clock milliseconds (to compare with notifications' ZooKeeper ctime).

    Raises:
        ConfigError: (constructor) an ``authorizer.class.name`` other than Kafka's ACL authorizers.
    """

    def __init__(self, zk: Any, config: Any, clock_ms: Callable[[], int] = lambda: int(time.time() * 1000)) -> None:
        self.zk = zk
        self.clock_ms = clock_ms
        name = (_raw(config, "authorizer.class.name") or "").strip()
        if name and name not in ACL_AUTHORIZER_CLASSES:
            raise ConfigError.for_key(
                "authorizer.class.name",
                f"Mafka's authorizer is Kafka's ACL authorizer ({', '.join(sorted(ACL_AUTHORIZER_CLASSES))}); "
                f"{name} cannot be loaded",
            )
        self.enabled = bool(name)
        allow_everyone = (_raw(config, "allow.everyone.if.no.acl.found") or "false").strip().lower() == "true"
        self.acls = AclAuthorizer(parse_super_users(_raw(config, "super.users")), allow_everyone)
        self._versions: dict[ResourcePattern, int] = {}
        self._last_change: dict[PatternType, int] = {PatternType.LITERAL: -1, PatternType.PREFIXED: -1}
        self._watches: list[Any] = []
        self._busy = False
        self._again = False

    # ------------------------------------------------------------------ decisions

    def authorize(self, connection: Any, operation: AclOperation, resource_type: ResourceType, name: str) -> bool:
        """May the connection's principal do *operation* on the literal resource ``resource_type:name``?"""
        if not self.enabled:
            return True
        principal = getattr(connection, "principal", ANONYMOUS)
        allowed = self.acls.authorize(principal, getattr(connection, "host", ""), operation, resource_type, name)
        if not allowed:
            log.debug("denied %s %s on %s:%s from %s", principal, operation.kafka_name,
                      resource_type.kafka_name, name, getattr(connection, "host", "?"))
        return allowed

    def authorize_cluster(self, connection: Any, operation: AclOperation) -> bool:
        """*operation* on the cluster resource (``kafka-cluster``)."""
        return self.authorize(connection, operation, ResourceType.CLUSTER, CLUSTER_NAME)

    def authorize_by_resource_type(self, connection: Any, operation: AclOperation, resource_type: ResourceType) -> bool:
        """Kafka's ``authorizeByResourceType``: allowed *operation* on some resource of that type?"""
        if not self.enabled:
            return True
        principal = getattr(connection, "principal", ANONYMOUS)
        return self.acls.authorize_by_resource_type(principal, getattr(connection, "host", ""), operation, resource_type)

    def filter_authorized(
        self, connection: Any, operation: AclOperation, resource_type: ResourceType, items: Iterable[T],
        name_of: Callable[[T], str] = str,
    ) -> tuple[list[T], list[T]]:
        """Splits *items* into (allowed, refused) by *operation* on each item's resource name."""
        allowed: list[T] = []
        refused: list[T] = []
        for item in items:
            (allowed if self.authorize(connection, operation, resource_type, name_of(item)) else refused).append(item)
        return allowed, refused

    def authorized_operations(self, connection: Any, resource_type: ResourceType, name: str) -> int:
        """The ``authorized_operations`` bitfield (one bit per operation code) for a resource."""
        if not self.enabled:
            ops: Iterable[AclOperation] = supported_operations(resource_type)
        else:
            principal = getattr(connection, "principal", ANONYMOUS)
            ops = self.acls.authorized_operations(principal, getattr(connection, "host", ""), resource_type, name)
        value = 0
        for op in ops:
            value |= 1 << int(op)
        return value

    # ------------------------------------------------------------------ lifecycle

    @defer.inlineCallbacks
    def load(self) -> Any:
        """Ensures the ACL paths and reads every ACL (nothing when disabled)."""
        if not self.enabled:
            return
        yield self.zk.create_acl_paths()
        for pattern_type in self._last_change:
            changes = yield self.zk.get_acl_changes(pattern_type)
            if changes:
                self._last_change[pattern_type] = changes[-1].seq
        everything = yield self.zk.get_all_acls()
        self.acls.clear()
        self._versions.clear()
        for pattern, (entries, version) in everything.items():
            self._set(pattern, entries, version)
        log.info("authorizer loaded %d ACL(s) on %d resource pattern(s)", sum(len(e) for e, _ in everything.values()),
                 len(everything))

    def start(self) -> None:
        """Follows the change notifications."""
        if not self.enabled:
            return
        for pattern_type in self._last_change:
            self._watches.append(self.zk.watch_acl_changes(pattern_type, self._changed))
        self._changed()

    def stop(self) -> None:
        for watch in self._watches:
            watch.cancel()
        self._watches.clear()

    def _changed(self, *_: Any) -> None:
        if self._busy:
            self._again = True
            return
        self._busy = True
        d = self._process_changes()
        d.addErrback(lambda f: log.warning("processing ACL change notifications failed: %s", f.getErrorMessage()))
        d.addBoth(self._processed)

    def _processed(self, _: Any) -> None:
        self._busy = False
        if self._again:
            self._again = False
            self._changed()

    @defer.inlineCallbacks
    def _process_changes(self) -> Any:
        """Re-reads the patterns of new notifications, then purges the expired ones (as Kafka's listener)."""
        for pattern_type in self._last_change:
            changes = yield self.zk.get_acl_changes(pattern_type)
            for change in changes:
                if change.seq <= self._last_change[pattern_type]:
                    continue
                self._last_change[pattern_type] = change.seq
                if change.pattern is None:
                    continue
                entries, version = yield self.zk.get_resource_acls(change.pattern)
                self._set(change.pattern, entries, version)
            expired_before = self.clock_ms() - CHANGE_EXPIRATION_MS
            for change in changes:
                if change.ctime_ms < expired_before:
                    yield self.zk.delete_acl_change(pattern_type, change.seq)

    def _set(self, pattern: ResourcePattern, entries: frozenset[AccessControlEntry], version: int) -> None:
        self.acls.update(pattern, entries)
        if entries:
            self._versions[pattern] = version
        else:
            self._versions.pop(pattern, None)

    # ------------------------------------------------------------------ CreateAcls / DeleteAcls

    @defer.inlineCallbacks
    def create_acls(self, bindings: Sequence[AclBinding]) -> Any:
        """Adds *bindings*; fires with one ``KafkaError | None`` per binding, in order."""
        results: list[KafkaError | None] = [None] * len(bindings)
        by_pattern: dict[ResourcePattern, list[int]] = {}
        for i, binding in enumerate(bindings):
            try:
                validate_new_binding(binding)
            except (InvalidRequestError, UnknownServerError) as exc:
                results[i] = exc
                continue
            by_pattern.setdefault(binding.pattern, []).append(i)
        for pattern, indexes in by_pattern.items():
            added = frozenset(bindings[i].entry for i in indexes)
            try:
                yield self._update(pattern, functools.partial(_with, added))
            except Exception as exc:  # noqa: BLE001 - reported per ACL, as Kafka does
                log.warning("creating ACLs on %s failed: %s", pattern, exc)
                for i in indexes:
                    results[i] = UnknownServerError(str(exc))
        return results

    @defer.inlineCallbacks
    def delete_acls(self, filters: Sequence[AclBindingFilter]) -> Any:
        """Removes what each filter matches; fires with, per filter, ``(error | None, [deleted bindings])``."""
        doomed: dict[ResourcePattern, set[AccessControlEntry]] = {}
        matched: list[list[AclBinding]] = []
        for binding_filter in filters:
            hits = self.acls.acls(binding_filter)
            matched.append(hits)
            for binding in hits:
                doomed.setdefault(binding.pattern, set()).add(binding.entry)
        failed: dict[ResourcePattern, Exception] = {}
        for pattern, entries in doomed.items():
            try:
                yield self._update(pattern, functools.partial(_without, frozenset(entries)))
            except Exception as exc:  # noqa: BLE001 - reported per filter
                log.warning("deleting ACLs on %s failed: %s", pattern, exc)
                failed[pattern] = exc
        out: list[tuple[KafkaError | None, list[AclBinding]]] = []
        for hits in matched:
            error = next((failed[b.pattern] for b in hits if b.pattern in failed), None)
            out.append((UnknownServerError(str(error)) if error is not None else None, hits))
        return out

    @defer.inlineCallbacks
    def _update(
        self, pattern: ResourcePattern,
        change: Callable[[frozenset[AccessControlEntry]], frozenset[AccessControlEntry]],
    ) -> Any:
        """Kafka's ``updateResourceAcls``: compare-and-set from the cache's view, re-reading on a conflict."""
        current = self.acls.entries(pattern)
        version = self._versions.get(pattern, -1)
        for _ in range(MAX_UPDATE_RETRIES):
            wanted = change(current)
            if wanted == current:
                return  # nothing to write (Kafka writes only a changed set)
            written = yield self.zk.conditional_set_acls(pattern, wanted, version)
            if written:
                fresh_entries, fresh_version = yield self.zk.get_resource_acls(pattern)
                self._set(pattern, fresh_entries, fresh_version)
                yield self.zk.post_acl_change(pattern)
                return
            current, version = yield self.zk.get_resource_acls(pattern)
        raise UnknownServerError(f"Failed to update ACLs for {pattern} after trying {MAX_UPDATE_RETRIES} times")


def _with(added: frozenset[AccessControlEntry], current: frozenset[AccessControlEntry]) -> frozenset[AccessControlEntry]:
    return current | added


def _without(gone: frozenset[AccessControlEntry], current: frozenset[AccessControlEntry]) -> frozenset[AccessControlEntry]:
    return current - gone
