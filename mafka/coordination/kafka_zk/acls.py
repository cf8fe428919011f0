"""ACLs in ZooKeeper, as Kafka 2.8's ``AclAuthorizer`` keeps them (``ZkAclStore``, ``ZkAclChangeStore``).

Owns :class:`AclZk`: the ``/kafka-acl`` (LITERAL) and
``/kafka-acl-extended/prefixed`` (PREFIXED) trees — one node per resource
pattern holding its ACL entries as JSON, written with the version read
(compare-and-set) — and the change notifications
(``/kafka-acl-changes/acl_changes_N``, ``/kafka-acl-extended-changes/acl_changes_N``)
that tell every broker which pattern to re-read.  Layout and encodings are
:mod:`mafka.security.acl_znodes`'s.
"""

from __future__ import annotations

from typing import NamedTuple

from mafka.coordination.kafka_zk.core import ZkFamily, _deferred
from mafka.coordination.store import (
    BadVersionError,
    NodeExistsError,
    NoNodeError,
    WatchCallback,
    WatchHandle,
)
from mafka.security.acl import AccessControlEntry, PatternType, ResourcePattern
from mafka.security.acl_znodes import (
    ACL_CHANGE_PREFIX,
    acl_paths,
    acl_root,
    change_notification,
    change_notifications_path,
    decode_acls,
    decode_change_notification,
    encode_acls,
    resource_path,
    resource_type_from_node,
)

__all__ = ["NO_NODE_VERSION", "AclChange", "AclZk"]

#: The version of a pattern node that does not exist (Kafka's ``ZkVersion.UnknownVersion``).
NO_NODE_VERSION = -1
#: The pattern types Kafka stores.
STORED_PATTERN_TYPES = (PatternType.LITERAL, PatternType.PREFIXED)


class AclChange(NamedTuple):
    """One change notification: its sequence number, the pattern it names (None if unreadable), its ctime (ms)."""

    seq: int
    pattern: ResourcePattern | None
    ctime_ms: int


class AclZk(ZkFamily):
    """Reading, writing and announcing ACLs."""

    @_deferred
    async def create_acl_paths(self) -> None:
        """``createAclPaths``: the roots, one node per resource type, the change parents."""
        for path in acl_paths():
            await self._store.ensure_path(path)

    @_deferred
    async def get_all_acls(self) -> dict[ResourcePattern, tuple[frozenset[AccessControlEntry], int]]:
        """Every stored pattern with its entries and node version (``AclAuthorizer.loadCache``)."""
        found: dict[ResourcePattern, tuple[frozenset[AccessControlEntry], int]] = {}
        for pattern_type in STORED_PATTERN_TYPES:
            root = acl_root(pattern_type)
            for type_node in await self._core.children_or_empty(root):
                resource_type = resource_type_from_node(type_node)
                if resource_type.name == "UNKNOWN":
                    continue
                for name in await self._core.children_or_empty(f"{root}/{type_node}"):
                    pattern = ResourcePattern(resource_type, name, pattern_type)
                    found[pattern] = await self._read(f"{root}/{type_node}/{name}")
        return found

    @_deferred
    async def get_resource_acls(self, pattern: ResourcePattern) -> tuple[frozenset[AccessControlEntry], int]:
        """The entries of one pattern and its node version (:data:`NO_NODE_VERSION` if absent)."""
        return await self._read(resource_path(pattern))

    async def _read(self, path: str) -> tuple[frozenset[AccessControlEntry], int]:
        got = await self._core.get_or_none(path)
        if got is None:
            return frozenset(), NO_NODE_VERSION
        data, stat = got
        return decode_acls(data), stat.version

    @_deferred
    async def conditional_set_acls(
        self, pattern: ResourcePattern, entries: frozenset[AccessControlEntry], expected_version: int
    ) -> bool:
        """Writes *entries* if the node is still at *expected_version*; deletes it for no entries.

        Returns False (nothing written) when someone else changed the node
        first: the caller re-reads and tries again, as Kafka's
        ``updateResourceAcls`` does.
        """
        path = resource_path(pattern)
        try:
            if not entries:
                if expected_version != NO_NODE_VERSION:
                    await self._store.delete(path, expected_version)
            elif expected_version == NO_NODE_VERSION:
                await self._store.create(path, encode_acls(entries), makepath=True)
            else:
                await self._store.set(path, encode_acls(entries), expected_version)
        except (BadVersionError, NodeExistsError):
            return False
        except NoNodeError:
            return not entries  # deleted by someone else: the wanted outcome
        return True

    @_deferred
    async def post_acl_change(self, pattern: ResourcePattern) -> str:
        """Announces that *pattern*'s ACLs changed; returns the notification's path."""
        prefix, data = change_notification(pattern)
        await self._store.ensure_path(prefix.rsplit("/", 1)[0])
        return await self._store.create(prefix, data, sequential=True)

    @_deferred
    async def get_acl_changes(self, pattern_type: PatternType) -> list[AclChange]:
        """The notifications under *pattern_type*'s change parent, by sequence number."""
        parent = change_notifications_path(pattern_type)
        out: list[AclChange] = []
        for child in await self._core.children_or_empty(parent):
            if not child.startswith(ACL_CHANGE_PREFIX):
                continue
            try:
                seq = int(child[len(ACL_CHANGE_PREFIX):])
            except ValueError:
                continue
            got = await self._core.get_or_none(f"{parent}/{child}")
            if got is None:
                continue  # purged by another broker meanwhile
            pattern: ResourcePattern | None
            try:
                pattern = decode_change_notification(parent, got[0])
            except ValueError:
                pattern = None
            out.append(AclChange(seq, pattern, got[1].ctime))
        out.sort(key=lambda change: change.seq)
        return out

    def watch_acl_changes(self, pattern_type: PatternType, callback: WatchCallback) -> WatchHandle:
        """Calls *callback* when a notification is added under *pattern_type*'s change parent."""
        return self._store.watch_children(change_notifications_path(pattern_type), callback)

    @_deferred
    async def delete_acl_change(self, pattern_type: PatternType, seq: int) -> None:
        """Removes one old notification (Kafka purges those older than 15 minutes); gone already is fine."""
        try:
            await self._store.delete(f"{change_notifications_path(pattern_type)}/{ACL_CHANGE_PREFIX}{seq:010d}")
        except NoNodeError:
            pass
