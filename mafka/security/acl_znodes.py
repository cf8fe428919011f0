"""Kafka's ZooKeeper layout for ACLs (``kafka.zk.ZkData`` 2.8), as pure functions: paths and bytes.

The caller does the ZooKeeper I/O; this module says where and what, byte for
byte as a Kafka 2.8 broker writes and reads it, so Mafka and Kafka brokers (and
``kafka-acls.sh --authorizer-properties zookeeper.connect=…``) share ACLs:

* ACLs of a LITERAL pattern live in ``/kafka-acl/<ResourceType>/<name>``, of a
  PREFIXED pattern in ``/kafka-acl-extended/prefixed/<ResourceType>/<name>``;
  ``<ResourceType>`` is Kafka's Pascal-case name (``Topic``,
  ``TransactionalId``) and ``<name>`` the resource name as is — Kafka neither
  escapes nor sanitises it (:func:`resource_path`).
* A node's data is ``{"version":1,"acls":[{"principal":"User:alice",
  "permissionType":"Allow","operation":"Read","host":"*"}]}``
  (:func:`encode_acls` / :func:`decode_acls`, ``AclEntry.toJsonCompatibleMap``
  and ``fromBytes``).
* After changing a node the writer creates a persistent sequential
  ``acl_changes_`` child telling every broker to re-read it: under
  ``/kafka-acl-changes`` for a LITERAL pattern, with data
  ``<RESOURCE_TYPE>:<name>`` (the Java enum name, ``TOPIC:foo``); under
  ``/kafka-acl-extended-changes`` for a PREFIXED one, with data
  ``{"version":1,"resourceType":"TOPIC","name":"foo","patternType":"PREFIXED"}``
  (:func:`change_notification` / :func:`decode_change_notification`).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from typing import Any, Final

from .acl import (
    CONCRETE_RESOURCE_TYPES,
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
    parse_acl_principal,
)

__all__ = [
    "ACL_CHANGE_PREFIX",
    "EXTENDED_ACL_CHANGES_PATH",
    "EXTENDED_ACL_PATH",
    "LITERAL_ACL_CHANGES_PATH",
    "LITERAL_ACL_PATH",
    "PREFIXED_ACL_PATH",
    "acl_paths",
    "acl_root",
    "change_notification",
    "change_notifications_path",
    "decode_acls",
    "decode_change_notification",
    "decode_extended_change",
    "decode_literal_change",
    "encode_acls",
    "resource_path",
    "resource_type_from_node",
    "resource_type_path",
]

#: ``LiteralAclStore.aclPath``.
LITERAL_ACL_PATH: Final = "/kafka-acl"
#: ``ExtendedAclZNode.path``: parent of one root per non-literal pattern type.
EXTENDED_ACL_PATH: Final = "/kafka-acl-extended"
#: ``ExtendedAclStore(PREFIXED).aclPath``: the pattern type's Java name, lower-cased.
PREFIXED_ACL_PATH: Final = f"{EXTENDED_ACL_PATH}/prefixed"
#: ``LiteralAclChangeStore.aclChangePath``.
LITERAL_ACL_CHANGES_PATH: Final = "/kafka-acl-changes"
#: ``ExtendedAclChangeStore.aclChangePath``.
EXTENDED_ACL_CHANGES_PATH: Final = "/kafka-acl-extended-changes"
#: ``ZkAclChangeStore.SequenceNumberPrefix``: change nodes are ``acl_changes_0000000042``.
ACL_CHANGE_PREFIX: Final = "acl_changes_"

_ACL_VERSION: Final = 1
_CHANGE_EVENT_VERSION: Final = 1

# ZooKeeper's PathUtils.validatePath refuses these UTF-16 code units in a node name; a character
# beyond U+FFFF is a surrogate pair in Java, and so refused too.
_ZK_BAD_CHARS: Final = re.compile(
    "[\u0000-\u001f\u007f-\u009f\ud800-\uf8ff\ufff0-\uffff\U00010000-\U0010ffff]"
)


def acl_root(pattern_type: PatternType) -> str:
    """``ZkAclStore(patternType).aclPath``: where the ACLs of *pattern_type* patterns live.

    Raises:
        ValueError: not LITERAL or PREFIXED (Kafka: "Invalid pattern type").
    """
    if pattern_type is PatternType.LITERAL:
        return LITERAL_ACL_PATH
    if pattern_type is PatternType.PREFIXED:
        return PREFIXED_ACL_PATH
    raise ValueError(f"Invalid pattern type: {pattern_type.name}")


def change_notifications_path(pattern_type: PatternType) -> str:
    """The parent of the change notifications for *pattern_type* patterns.

    Raises:
        ValueError: not LITERAL or PREFIXED.
    """
    if pattern_type is PatternType.LITERAL:
        return LITERAL_ACL_CHANGES_PATH
    if pattern_type is PatternType.PREFIXED:
        return EXTENDED_ACL_CHANGES_PATH
    raise ValueError(f"Invalid pattern type: {pattern_type.name}")


def resource_type_path(pattern_type: PatternType, resource_type: ResourceType) -> str:
    """``ZkAclStore.path(resourceType)``: the parent of one resource type's pattern nodes.

    Raises:
        ValueError: *pattern_type* is not LITERAL or PREFIXED.
    """
    return f"{acl_root(pattern_type)}/{resource_type.kafka_name}"


def resource_path(pattern: ResourcePattern) -> str:
    """``ResourceZNode.path``: the node holding *pattern*'s ACLs.

    The name is appended as is, as Kafka does.  A name ZooKeeper cannot hold
    as one node (empty, ``.``, ``..``, containing ``/`` or a character
    ZooKeeper refuses — group and transactional ids may) is refused here;
    Kafka's ZooKeeper client refuses it with an ``IllegalArgumentException``,
    which a 2.8 broker's CreateAcls reports as UNKNOWN_SERVER_ERROR.

    Raises:
        ValueError: the pattern type is not LITERAL or PREFIXED, or the name
            cannot be a ZooKeeper node name.
    """
    name = pattern.name
    if not name or name in (".", "..") or "/" in name or _ZK_BAD_CHARS.search(name):
        raise ValueError(f"Invalid ACL resource name for a ZooKeeper node: {name!r}")
    return f"{resource_type_path(pattern.pattern_type, pattern.resource_type)}/{name}"


def acl_paths() -> list[str]:
    """``KafkaZkClient.createAclPaths``: the persistent nodes a broker with an authorizer ensures.

    Each store's root and one child per concrete resource type, then the two
    change-notification parents, parents before children.
    """
    paths: list[str] = []
    types = sorted(CONCRETE_RESOURCE_TYPES)
    for pattern_type in (PatternType.LITERAL, PatternType.PREFIXED):
        paths.append(acl_root(pattern_type))
        paths.extend(resource_type_path(pattern_type, t) for t in types)
    paths += [LITERAL_ACL_CHANGES_PATH, EXTENDED_ACL_CHANGES_PATH]
    return paths


def resource_type_from_node(node_name: str) -> ResourceType:
    """The resource type a child of an ACL root names (``Topic``); UNKNOWN if none.

    ``AclAuthorizer.loadCache`` reads them with ``SecurityUtils.resourceType``,
    which also accepts upper-case spellings.
    """
    return ResourceType.parse(node_name)


def _entry_json(entry: AccessControlEntry) -> dict[str, str]:
    # AclEntry.toMap's key order, which Jackson keeps.
    return {
        "principal": entry.principal,
        "permissionType": entry.permission_type.kafka_name,
        "operation": entry.operation.kafka_name,
        "host": entry.host,
    }


def _compact(value: Any) -> bytes:
    # Jackson's output: no whitespace, non-ASCII characters as UTF-8 rather than \u escapes.
    return json.dumps(value, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def encode_acls(entries: Iterable[AccessControlEntry]) -> bytes:
    """A pattern node's data (``ResourceZNode.encode``).

    Kafka writes a ``Set`` in hash order; we write each distinct entry once,
    sorted by principal, host, operation and permission type, so equal sets
    give equal bytes.
    """
    unique = sorted(
        set(entries),
        key=lambda e: (e.principal, e.host, int(e.operation), int(e.permission_type)),
    )
    return _compact({"version": _ACL_VERSION, "acls": [_entry_json(e) for e in unique]})


def decode_acls(data: bytes | None) -> frozenset[AccessControlEntry]:
    """A pattern node's entries (``AclEntry.fromBytes``).

    As in Kafka: no data, or data that is not JSON at all, is no ACLs (Kafka's
    ``Json.parseBytes`` yields nothing for unparseable bytes); an operation or
    permission name Kafka does not know reads as UNKNOWN (such an entry matches
    no request); keys other than the four are ignored.

    Raises:
        ValueError: JSON that is not an object with ``version`` 1 and an
            ``acls`` array of objects with string ``principal``,
            ``permissionType``, ``operation`` and ``host``; a principal that is
            not ``type:name``; an ANY operation or permission type.
    """
    if not data:
        return frozenset()
    try:
        doc = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError):
        return frozenset()
    if not isinstance(doc, dict):
        raise ValueError(f"ACL node data is not a JSON object: {data!r}")
    if doc.get("version") != _ACL_VERSION or isinstance(doc.get("version"), bool):
        raise ValueError(f"requirement failed: unsupported ACL node version {doc.get('version')!r}")
    items = doc.get("acls")
    if not isinstance(items, list):
        raise ValueError(f"ACL node data has no acls array: {data!r}")
    entries: set[AccessControlEntry] = set()
    for item in items:
        if not isinstance(item, dict):
            raise ValueError(f"ACL entry is not a JSON object: {item!r}")
        fields = [item.get(k) for k in ("principal", "permissionType", "operation", "host")]
        if not all(isinstance(f, str) for f in fields):
            raise ValueError(f"ACL entry lacks a string principal/permissionType/operation/host: {item!r}")
        principal, permission, operation, host = (str(f) for f in fields)
        parse_acl_principal(principal)
        entries.add(
            AccessControlEntry(
                principal, host, AclOperation.parse(operation), AclPermissionType.parse(permission)
            )
        )
    return frozenset(entries)


def change_notification(pattern: ResourcePattern) -> tuple[str, bytes]:
    """``ZkAclChangeStore.createChangeNode``: (path prefix, data) of the change node for *pattern*.

    The path is ``<parent>/acl_changes_``, to be created persistent and
    sequential (ZooKeeper appends the sequence number).

    Raises:
        ValueError: the pattern type is not LITERAL or PREFIXED.
    """
    parent = change_notifications_path(pattern.pattern_type)
    if pattern.pattern_type is PatternType.LITERAL:
        # LiteralAclChangeStore: the Java enum's toString (TOPIC, TRANSACTIONAL_ID), a colon, the name.
        data = f"{pattern.resource_type.name}:{pattern.name}".encode()
    else:
        # ExtendedAclChangeEvent, with Jackson's creator-parameter order.
        data = _compact({
            "version": _CHANGE_EVENT_VERSION,
            "resourceType": pattern.resource_type.name,
            "name": pattern.name,
            "patternType": pattern.pattern_type.name,
        })
    return f"{parent}/{ACL_CHANGE_PREFIX}", data


def decode_literal_change(data: bytes) -> ResourcePattern:
    """A ``/kafka-acl-changes`` notification's pattern: LITERAL, split at the first colon.

    The resource type is read leniently (``TOPIC`` as Kafka 2.x writes it,
    ``Topic`` as Kafka before 2.0 did); the name may itself contain colons.

    Raises:
        ValueError: no colon, or data that is not UTF-8.
    """
    text = data.decode("utf-8")
    resource_type, sep, name = text.partition(":")
    if not sep:
        raise ValueError(f"expected a string in format ResourceType:ResourceName but got {text}")
    return ResourcePattern(_concrete_type(resource_type), name, PatternType.LITERAL)


def decode_extended_change(data: bytes) -> ResourcePattern:
    """A ``/kafka-acl-extended-changes`` notification's pattern (an ``ExtendedAclChangeEvent``).

    Names are read case-insensitively (Kafka writes the Java names, ``TOPIC``
    and ``PREFIXED``).

    Raises:
        ValueError: not the event JSON; a version above 1 ("Acl change event
            received for unsupported version"); a pattern type other than a
            non-literal specific one.
    """
    try:
        event = json.loads(data)
    except (UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ValueError("Failed to parse ACL change event") from exc
    if not isinstance(event, dict):
        raise ValueError("Failed to parse ACL change event")
    version = event.get("version")
    if not isinstance(version, int) or isinstance(version, bool):
        raise ValueError("Failed to parse ACL change event")
    if version > _CHANGE_EVENT_VERSION:
        raise ValueError(f"Acl change event received for unsupported version: {version}")
    resource_type, name, pattern_type = (event.get(k) for k in ("resourceType", "name", "patternType"))
    if not (isinstance(resource_type, str) and isinstance(name, str) and isinstance(pattern_type, str)):
        raise ValueError("Failed to parse ACL change event")
    parsed = PatternType.parse(pattern_type)
    if not parsed.is_specific or parsed is PatternType.LITERAL:
        raise ValueError(f"Failed to convert ACL change event to resource: pattern type {pattern_type}")
    return ResourcePattern(_concrete_type(resource_type), name, parsed)


def decode_change_notification(parent: str, data: bytes) -> ResourcePattern:
    """The pattern whose ACLs a change node under *parent* says to re-read.

    Raises:
        ValueError: *parent* is neither change path, or the data does not decode
            (see :func:`decode_literal_change`, :func:`decode_extended_change`).
    """
    if parent == LITERAL_ACL_CHANGES_PATH:
        return decode_literal_change(data)
    if parent == EXTENDED_ACL_CHANGES_PATH:
        return decode_extended_change(data)
    raise ValueError(f"not an ACL change notification path: {parent}")


def _concrete_type(text: str) -> ResourceType:
    resource_type = ResourceType.parse(text)
    if resource_type is ResourceType.ANY:
        # ResourcePattern refuses ANY; an UNKNOWN type is kept, as Kafka keeps it.
        raise ValueError(f"resource type {text} in an ACL change notification")
    return resource_type
