"""Kafka's ZooKeeper layout for ACLs: paths, node JSON, change notifications."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mafka.security.acl import (
    AccessControlEntry,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from mafka.security.acl_znodes import (
    EXTENDED_ACL_CHANGES_PATH,
    LITERAL_ACL_CHANGES_PATH,
    acl_paths,
    acl_root,
    change_notification,
    decode_acls,
    decode_change_notification,
    decode_extended_change,
    decode_literal_change,
    encode_acls,
    resource_path,
    resource_type_from_node,
    resource_type_path,
)
from tests.hypothesis_budget import examples

LIT, PRE = PatternType.LITERAL, PatternType.PREFIXED
ALLOW, DENY = AclPermissionType.ALLOW, AclPermissionType.DENY


def test_store_paths_are_kafkas() -> None:
    # LiteralAclStoreTest / ExtendedAclStoreTest.shouldHaveCorrectPaths
    assert acl_root(LIT) == "/kafka-acl"
    assert acl_root(PRE) == "/kafka-acl-extended/prefixed"
    assert resource_type_path(LIT, ResourceType.TOPIC) == "/kafka-acl/Topic"
    assert resource_type_path(PRE, ResourceType.TOPIC) == "/kafka-acl-extended/prefixed/Topic"
    assert resource_type_path(LIT, ResourceType.TRANSACTIONAL_ID) == "/kafka-acl/TransactionalId"
    with pytest.raises(ValueError, match="Invalid pattern type"):
        acl_root(PatternType.MATCH)


def test_resource_paths_append_the_name_unescaped() -> None:
    assert resource_path(ResourcePattern(ResourceType.TOPIC, "topic-1", LIT)) == "/kafka-acl/Topic/topic-1"
    assert resource_path(ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", LIT)) == "/kafka-acl/Cluster/kafka-cluster"
    assert resource_path(ResourcePattern(ResourceType.GROUP, "group-1", PRE)) == "/kafka-acl-extended/prefixed/Group/group-1"
    assert resource_path(ResourcePattern(ResourceType.TOPIC, "*", LIT)) == "/kafka-acl/Topic/*"
    assert resource_path(ResourcePattern(ResourceType.GROUP, "a b:c", LIT)) == "/kafka-acl/Group/a b:c"
    assert resource_path(ResourcePattern(ResourceType.GROUP, "grüppe", LIT)) == "/kafka-acl/Group/grüppe"


@pytest.mark.parametrize("name", ["", ".", "..", "a/b", "x/", "nul\x00", "tab\t", "emoji\U0001f600", "\ue000"])
def test_names_zookeeper_cannot_hold_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="ZooKeeper node"):
        resource_path(ResourcePattern(ResourceType.GROUP, name, LIT))


def test_acl_paths_are_created_parents_first() -> None:
    paths = acl_paths()
    assert paths == [
        "/kafka-acl",
        "/kafka-acl/Topic", "/kafka-acl/Group", "/kafka-acl/Cluster",
        "/kafka-acl/TransactionalId", "/kafka-acl/DelegationToken",
        "/kafka-acl-extended/prefixed",
        "/kafka-acl-extended/prefixed/Topic", "/kafka-acl-extended/prefixed/Group",
        "/kafka-acl-extended/prefixed/Cluster", "/kafka-acl-extended/prefixed/TransactionalId",
        "/kafka-acl-extended/prefixed/DelegationToken",
        "/kafka-acl-changes", "/kafka-acl-extended-changes",
    ]  # fmt: skip


def test_resource_type_nodes_read_back() -> None:
    assert resource_type_from_node("Topic") is ResourceType.TOPIC
    assert resource_type_from_node("TransactionalId") is ResourceType.TRANSACTIONAL_ID
    assert resource_type_from_node("TOPIC") is ResourceType.TOPIC
    assert resource_type_from_node("Broker") is ResourceType.UNKNOWN


# -- node JSON ---------------------------------------------------------------------------------------


def test_encode_writes_kafkas_compact_json() -> None:
    data = encode_acls([AccessControlEntry("User:alice", "*", AclOperation.READ, ALLOW)])
    assert data == (
        b'{"version":1,"acls":[{"principal":"User:alice","permissionType":"Allow",'
        b'"operation":"Read","host":"*"}]}'
    )


def test_encode_names_every_operation_in_pascal_case_and_is_deterministic() -> None:
    entries = [
        AccessControlEntry("User:bob", "10.0.0.1", AclOperation.IDEMPOTENT_WRITE, DENY),
        AccessControlEntry("User:alice", "*", AclOperation.DESCRIBE_CONFIGS, ALLOW),
        AccessControlEntry("User:alice", "*", AclOperation.CLUSTER_ACTION, ALLOW),
    ]
    data = encode_acls(entries)
    assert data == encode_acls(reversed(entries)) == encode_acls(entries + entries)
    doc = json.loads(data)
    assert [a["operation"] for a in doc["acls"]] == ["ClusterAction", "DescribeConfigs", "IdempotentWrite"]
    assert [a["permissionType"] for a in doc["acls"]] == ["Allow", "Allow", "Deny"]


def test_decode_reads_kafkas_own_test_json() -> None:
    # AclEntryTest.AclJson: spaces, any key order, "READ" as well as "Read".
    data = b"""{"version": 1, "acls": [{"host": "host1","permissionType": "Deny","operation": "READ", "principal": "User:alice"  },
    {  "host":  "*" ,  "permissionType": "Allow",  "operation":  "Read", "principal": "User:bob"  },
    {  "host": "host1",  "permissionType": "Deny",  "operation":   "Read" ,  "principal": "User:bob"}]}"""
    assert decode_acls(data) == {
        AccessControlEntry("User:alice", "host1", AclOperation.READ, DENY),
        AccessControlEntry("User:bob", "*", AclOperation.READ, ALLOW),
        AccessControlEntry("User:bob", "host1", AclOperation.READ, DENY),
    }


def test_decode_of_nothing_or_non_json_is_no_acls() -> None:
    assert decode_acls(None) == frozenset()
    assert decode_acls(b"") == frozenset()
    assert decode_acls(b"not json {") == frozenset()
    assert decode_acls(b'{"version":1,"acls":[]}') == frozenset()


def test_decode_keeps_unknown_names_as_unknown() -> None:
    data = b'{"version":1,"acls":[{"principal":"User:a","permissionType":"Maybe","operation":"Tickle","host":"*"}]}'
    (entry,) = decode_acls(data)
    assert entry.operation is AclOperation.UNKNOWN and entry.permission_type is AclPermissionType.UNKNOWN


@pytest.mark.parametrize(
    "data",
    [
        b'{"version":2,"acls":[]}',
        b'{"acls":[]}',
        b'{"version":true,"acls":[]}',
        b"[1]",
        b'{"version":1}',
        b'{"version":1,"acls":[1]}',
        b'{"version":1,"acls":[{"principal":"User:a","permissionType":"Allow","operation":"Read"}]}',
        b'{"version":1,"acls":[{"principal":"alice","permissionType":"Allow","operation":"Read","host":"*"}]}',
        b'{"version":1,"acls":[{"principal":"User:a","permissionType":"Allow","operation":"Any","host":"*"}]}',
    ],
)
def test_decode_refuses_malformed_nodes(data: bytes) -> None:
    with pytest.raises(ValueError):
        decode_acls(data)


_names = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=12)
_entries = st.builds(
    AccessControlEntry,
    st.builds(lambda t, n: f"{t}:{n}", st.sampled_from(["User", "Group"]), _names),
    st.one_of(st.just("*"), st.ip_addresses().map(str)),
    st.sampled_from([o for o in AclOperation if o is not AclOperation.ANY]),
    st.sampled_from([p for p in AclPermissionType if p is not AclPermissionType.ANY]),
)


@settings(max_examples=examples(200))
@given(st.frozensets(_entries, max_size=8))
def test_acl_nodes_round_trip(entries: frozenset[AccessControlEntry]) -> None:
    assert decode_acls(encode_acls(entries)) == entries


# -- change notifications ----------------------------------------------------------------------------


def test_literal_change_notification_is_enum_name_colon_name() -> None:
    path, data = change_notification(ResourcePattern(ResourceType.TOPIC, "some-topic", LIT))
    assert path == "/kafka-acl-changes/acl_changes_"
    assert data == b"TOPIC:some-topic"
    path, data = change_notification(ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx", LIT))
    assert data == b"TRANSACTIONAL_ID:tx"


def test_extended_change_notification_is_kafkas_event_json() -> None:
    path, data = change_notification(ResourcePattern(ResourceType.TOPIC, "some-topic", PRE))
    assert path == "/kafka-acl-extended-changes/acl_changes_"
    assert data == b'{"version":1,"resourceType":"TOPIC","name":"some-topic","patternType":"PREFIXED"}'


def test_literal_change_decodes_with_two_part_logic() -> None:
    # LiteralAclStoreTest.shouldDecodeResourceUsingTwoPartLogic
    name = "PREFIXED:this, including the PREFIXED part, is a valid two part group name"
    assert decode_literal_change(f"GROUP:{name}".encode()) == ResourcePattern(ResourceType.GROUP, name, LIT)
    # Kafka before 2.0 wrote the Pascal-case type.
    assert decode_literal_change(b"Topic:t") == ResourcePattern(ResourceType.TOPIC, "t", LIT)
    with pytest.raises(ValueError, match="ResourceType:ResourceName"):
        decode_literal_change(b"no-colon")


def test_extended_change_decoding() -> None:
    assert decode_extended_change(
        b'{"version":1,"resourceType":"GROUP","name":"g-","patternType":"PREFIXED"}'
    ) == ResourcePattern(ResourceType.GROUP, "g-", PRE)
    with pytest.raises(ValueError, match="unsupported version: 2"):
        decode_extended_change(b'{"version":2,"resourceType":"TOPIC","name":"t","patternType":"PREFIXED"}')
    with pytest.raises(ValueError):
        decode_extended_change(b'{"version":1,"resourceType":"TOPIC","name":"t","patternType":"LITERAL"}')
    with pytest.raises(ValueError):
        decode_extended_change(b'{"version":1,"resourceType":"TOPIC","name":"t","patternType":"MATCH"}')
    with pytest.raises(ValueError):
        decode_extended_change(b"garbage")
    with pytest.raises(ValueError):
        decode_extended_change(b'{"version":1,"resourceType":"TOPIC","patternType":"PREFIXED"}')


@pytest.mark.parametrize(
    "pattern",
    [
        ResourcePattern(ResourceType.TOPIC, "some-topic", LIT),
        ResourcePattern(ResourceType.TOPIC, "some-topic", PRE),
        ResourcePattern(ResourceType.GROUP, "a:b:c", LIT),
        ResourcePattern(ResourceType.TRANSACTIONAL_ID, "tx-ü", PRE),
        ResourcePattern(ResourceType.CLUSTER, "kafka-cluster", LIT),
    ],
)
def test_change_notifications_round_trip(pattern: ResourcePattern) -> None:
    path, data = change_notification(pattern)
    parent = path.rsplit("/", 1)[0]
    assert parent == (LITERAL_ACL_CHANGES_PATH if pattern.pattern_type is LIT else EXTENDED_ACL_CHANGES_PATH)
    assert decode_change_notification(parent, data) == pattern


def test_decode_change_notification_refuses_other_parents() -> None:
    with pytest.raises(ValueError):
        decode_change_notification("/config/changes", b"TOPIC:t")
