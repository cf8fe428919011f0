"""The broker's authorizer over an in-memory ZooKeeper: loading, notifications, compare-and-set, purging."""

from __future__ import annotations

import json
from typing import Any

import pytest
from twisted.internet.defer import Deferred
from twisted.python.failure import Failure

from mafka.broker.authorization import CHANGE_EXPIRATION_MS, BrokerAuthorizer
from mafka.coordination.kafka_zk.client import KafkaZkClient
from mafka.coordination.memory_store import MemoryStore, MemoryZooKeeper
from mafka.errors import ConfigError
from mafka.security.acl import (
    AccessControlEntry,
    AclBinding,
    AclBindingFilter,
    AclOperation,
    AclPermissionType,
    PatternType,
    ResourcePattern,
    ResourceType,
)
from mafka.security.principal import KafkaPrincipal

ACL_AUTHORIZER = "kafka.security.authorizer.AclAuthorizer"
ALICE = KafkaPrincipal("User", "alice")


class Config(dict):
    """Raw broker config keys (``get`` raises KeyError for an absent key, as BrokerConfig does)."""

    def get(self, key: str, default: Any = None) -> Any:  # type: ignore[override]
        return self[key]


class Conn:
    def __init__(self, principal: KafkaPrincipal, host: str = "10.0.0.1") -> None:
        self.principal = principal
        self.host = host


def result(d: Deferred[Any]) -> Any:
    box: list[Any] = []
    d.addBoth(box.append)
    assert box, "the Deferred has not fired"
    if isinstance(box[0], Failure):
        box[0].raiseException()
    return box[0]


@pytest.fixture
def now() -> list[int]:
    return [1_700_000_000_000]


@pytest.fixture
def tree(now: list[int]) -> MemoryZooKeeper:
    return MemoryZooKeeper(time_ms=lambda: now[0])


def broker_authorizer(tree: MemoryZooKeeper, now: list[int], **config: str) -> BrokerAuthorizer:
    store = MemoryStore(tree)
    result(store.start())
    zk = KafkaZkClient(store)
    result(zk.create_persistent_roots())
    auth = BrokerAuthorizer(zk, Config({"authorizer.class.name": ACL_AUTHORIZER, **config}), clock_ms=lambda: now[0])
    result(auth.load())
    return auth


def alice_reads(topic: str, pattern_type: PatternType = PatternType.LITERAL) -> AclBinding:
    return AclBinding(ResourcePattern(ResourceType.TOPIC, topic, pattern_type),
                      AccessControlEntry("User:alice", "*", AclOperation.READ, AclPermissionType.ALLOW))


def test_without_authorizer_class_everything_is_allowed_and_nothing_is_read(tree, now):
    store = MemoryStore(tree)
    result(store.start())
    auth = BrokerAuthorizer(KafkaZkClient(store), Config())
    result(auth.load())
    assert not auth.enabled
    assert auth.authorize(Conn(ALICE), AclOperation.DELETE, ResourceType.TOPIC, "anything")
    assert result(store.exists("/kafka-acl")) is None  # no ACL paths created without an authorizer


def test_another_authorizer_class_is_refused():
    with pytest.raises(ConfigError, match="cannot be loaded"):
        BrokerAuthorizer(None, Config({"authorizer.class.name": "com.example.MyAuthorizer"}))


def test_an_acl_created_on_one_broker_applies_on_another_after_its_notification(tree, now):
    a = broker_authorizer(tree, now)
    b = broker_authorizer(tree, now)
    assert not b.authorize(Conn(ALICE), AclOperation.READ, ResourceType.TOPIC, "orders")
    assert result(a.create_acls([alice_reads("orders")])) == [None]
    assert a.authorize(Conn(ALICE), AclOperation.READ, ResourceType.TOPIC, "orders")
    b._changed()  # what b's watch on /kafka-acl-changes does
    assert b.authorize(Conn(ALICE), AclOperation.READ, ResourceType.TOPIC, "orders")
    assert b.authorize(Conn(ALICE), AclOperation.DESCRIBE, ResourceType.TOPIC, "orders")  # implied
    assert not b.authorize(Conn(ALICE), AclOperation.WRITE, ResourceType.TOPIC, "orders")


def test_the_node_holds_kafkas_json_and_goes_away_with_its_last_acl(tree, now):
    a = broker_authorizer(tree, now)
    result(a.create_acls([alice_reads("orders")]))
    data, _ = result(a.zk.store.get("/kafka-acl/Topic/orders"))
    assert json.loads(data) == {"version": 1, "acls": [
        {"principal": "User:alice", "permissionType": "Allow", "operation": "Read", "host": "*"}]}
    deleted = result(a.delete_acls([alice_reads("orders").to_filter()]))
    assert deleted == [(None, [alice_reads("orders")])]
    assert result(a.zk.store.exists("/kafka-acl/Topic/orders")) is None
    assert not a.authorize(Conn(ALICE), AclOperation.READ, ResourceType.TOPIC, "orders")


def test_two_brokers_with_stale_caches_both_keep_their_acls(tree, now):
    """Compare-and-set: the second writer's cached version is stale, it re-reads and merges."""
    a = broker_authorizer(tree, now)
    b = broker_authorizer(tree, now)
    bob_writes = AclBinding(ResourcePattern(ResourceType.TOPIC, "orders", PatternType.LITERAL),
                            AccessControlEntry("User:bob", "*", AclOperation.WRITE, AclPermissionType.ALLOW))
    assert result(a.create_acls([alice_reads("orders")])) == [None]
    assert result(b.create_acls([bob_writes])) == [None]  # b has not seen a's notification
    a._changed()
    for auth in (a, b):
        bindings = set(auth.acls.acls(AclBindingFilter.ANY))
        assert bindings == {alice_reads("orders"), bob_writes}


def test_prefixed_acls_and_super_users(tree, now):
    a = broker_authorizer(tree, now, **{"super.users": "User:admin"})
    result(a.create_acls([alice_reads("feed-", PatternType.PREFIXED)]))
    assert result(a.zk.store.exists("/kafka-acl-extended/prefixed/Topic/feed-")) is not None
    assert a.authorize(Conn(ALICE), AclOperation.READ, ResourceType.TOPIC, "feed-eu")
    assert not a.authorize(Conn(ALICE), AclOperation.READ, ResourceType.TOPIC, "other")
    admin = Conn(KafkaPrincipal("User", "admin"))
    assert a.authorize(admin, AclOperation.ALTER, ResourceType.CLUSTER, "kafka-cluster")


def test_expired_notifications_are_purged_and_fresh_ones_kept(tree, now):
    a = broker_authorizer(tree, now)
    result(a.create_acls([alice_reads("old")]))
    now[0] += CHANGE_EXPIRATION_MS + 1_000
    result(a.create_acls([alice_reads("new")]))
    a._changed()
    children = result(a.zk.store.get_children("/kafka-acl-changes"))
    assert len(children) == 1, children  # the first notification is gone, the second stays
    b = broker_authorizer(tree, now)  # a broker starting now still finds every ACL
    assert b.authorize(Conn(ALICE), AclOperation.READ, ResourceType.TOPIC, "old")
    assert b.authorize(Conn(ALICE), AclOperation.READ, ResourceType.TOPIC, "new")


def test_invalid_bindings_are_refused_one_by_one(tree, now):
    a = broker_authorizer(tree, now)
    cluster = AclBinding(ResourcePattern(ResourceType.CLUSTER, "not-the-cluster", PatternType.LITERAL),
                         AccessControlEntry("User:alice", "*", AclOperation.ALTER, AclPermissionType.ALLOW))
    errors = result(a.create_acls([cluster, alice_reads("orders")]))
    assert errors[0] is not None and "kafka-cluster" in str(errors[0])
    assert errors[1] is None
