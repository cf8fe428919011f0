"""Kafka 4's group configs (ConfigResource type 32): validation, the ZooKeeper layout, the handlers, the cache.

Handlers run against a MemoryStore-backed KafkaZkClient and are called
through the wire codec (so resource type 32 and config source 8 are
encoded as a client would see them).
"""

from __future__ import annotations

from types import SimpleNamespace as NS
from typing import Any

import pytest

from mafka.broker import group_configs as gc
from mafka.broker.config import BrokerConfig
from mafka.broker.handlers import configs
from mafka.broker.share_fetch import ShareFetchService
from mafka.broker.topic_configs import TopicConfigManager
from mafka.coordination.kafka_zk import KafkaZkClient
from mafka.coordination.memory_store import MemoryStore, MemoryZooKeeper
from mafka.errors import ErrorCode as E
from mafka.errors import InvalidConfigError
from mafka.group.share.partition_manager import READ_COMMITTED, READ_UNCOMMITTED
from mafka.security.acl import AclOperation as Op
from mafka.security.acl import ResourceType
from tests.unit.broker.test_authz_admin import ALICE, authorizer, call, settled

GROUP = 32
SET, DELETE, APPEND = 0, 1, 2
GROUP_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = 8, 4, 5


def _config(**props: str) -> BrokerConfig:
    return BrokerConfig.from_properties({"zookeeper.connect": "zk:2181", "broker.id": "1", **props})


@pytest.fixture
def zk() -> KafkaZkClient:
    store = MemoryStore(MemoryZooKeeper())
    store.start()
    client = KafkaZkClient(store)
    settled(client.create_persistent_roots())
    return client


def _api(zk: KafkaZkClient, config: BrokerConfig | None = None, authz: Any = None) -> dict[int, Any]:
    broker = NS(zk=zk, config=config or _config(), broker_id=1, topic_configs=None, authorizer=authz)
    return configs.handlers(broker)


def _describe(api: dict[int, Any], name: str, keys: list[str] | None = None, synonyms: bool = True,
              connection: Any = None) -> Any:
    body = call(api, 32, 1, {"resources": [{"resource_type": GROUP, "resource_name": name, "configuration_keys": keys}],
                             "include_synonyms": synonyms}, connection)
    return body.results[0]


def _incremental(api: dict[int, Any], name: str, ops: list[tuple[str, int, str | None]], validate_only: bool = False,
                 connection: Any = None) -> Any:
    body = {"resources": [{"resource_type": GROUP, "resource_name": name, "configs": [
        {"name": k, "config_operation": op, "value": v} for k, op, v in ops]}], "validate_only": validate_only}
    return call(api, 44, 1, body, connection).responses[0]


def _alter(api: dict[int, Any], name: str, values: dict[str, str], connection: Any = None) -> Any:
    body = {"resources": [{"resource_type": GROUP, "resource_name": name, "configs": [
        {"name": k, "value": v} for k, v in values.items()]}], "validate_only": False}
    return call(api, 33, 1, body, connection).responses[0]


# ------------------------------------------------------------------------------ validation


@pytest.mark.parametrize(
    ("configs_", "message"),
    [
        ({"consumer.rebalance.timeout.ms": "1"}, "Unknown group config name: consumer.rebalance.timeout.ms"),
        ({"consumer.session.timeout.ms": "abc"},
         "Invalid value abc for configuration consumer.session.timeout.ms: Not a number of type INT"),
        ({"consumer.session.timeout.ms": "0"},
         "Invalid value 0 for configuration consumer.session.timeout.ms: Value must be at least 1"),
        ({"consumer.session.timeout.ms": "70000"},
         "consumer.session.timeout.ms must be in the range 45000 to 60000 inclusive."),
        ({"consumer.heartbeat.interval.ms": "4999"},
         "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."),
        ({"share.record.lock.duration.ms": "5000"},
         "share.record.lock.duration.ms must be in the range 15000 to 60000 inclusive."),
        ({"share.isolation.level": "READ_COMMITTED"},
         "Invalid value READ_COMMITTED for configuration share.isolation.level: "
         "String must be one of: read_committed, read_uncommitted"),
        ({"share.auto.offset.reset": "none"},
         "Invalid value none for configuration share.auto.offset.reset: Invalid value `none` for configuration "
         "share.auto.offset.reset. The value must be either 'earliest', 'latest' or of the format "
         "'by_duration:<PnDTnHnMn.nS>'."),
    ],
)
def test_validation_refuses_with_kafkas_messages(configs_: dict[str, str], message: str) -> None:
    with pytest.raises(InvalidConfigError) as raised:
        gc.validate_group_config(configs_, _config())
    assert raised.value.code == E.INVALID_CONFIG
    assert raised.value.message == message


def test_validation_bounds_come_from_the_broker_and_session_must_exceed_heartbeat() -> None:
    wide = _config(**{"group.consumer.max.session.timeout.ms": "90000"})
    assert gc.validate_group_config({"consumer.session.timeout.ms": "80000"}, wide) == {
        "consumer.session.timeout.ms": 80000}
    with pytest.raises(InvalidConfigError, match="in the range 45000 to 60000"):
        gc.validate_group_config({"consumer.session.timeout.ms": "80000"}, _config())
    # 45000 allowed by the bounds, but not above a 50000 heartbeat the broker also allows.
    loose = _config(**{"group.consumer.max.heartbeat.interval.ms": "50000"})
    with pytest.raises(InvalidConfigError) as raised:
        gc.validate_group_config(
            {"consumer.session.timeout.ms": "45000", "consumer.heartbeat.interval.ms": "50000"}, loose)
    assert raised.value.message == "consumer.session.timeout.ms must be greater than consumer.heartbeat.interval.ms"


def test_validation_accepts_kafkas_values() -> None:
    parsed = gc.validate_group_config(
        {"share.auto.offset.reset": "EARLIEST", "share.isolation.level": "read_committed",
         "share.record.lock.duration.ms": " 20000 ", "consumer.session.timeout.ms": "50000"}, _config())
    assert parsed == {"share.auto.offset.reset": "EARLIEST", "share.isolation.level": "read_committed",
                      "share.record.lock.duration.ms": 20000, "consumer.session.timeout.ms": 50000}
    with pytest.raises(InvalidConfigError, match="by_duration is not supported"):
        gc.validate_group_config({"share.auto.offset.reset": "by_duration:PT1H"}, _config())


# ------------------------------------------------------------------------------ ZooKeeper layout


def test_alter_writes_the_entity_znode_and_a_change_notification(zk: KafkaZkClient) -> None:
    api = _api(zk)
    got = _incremental(api, "orders/eu", [("share.auto.offset.reset", SET, "earliest"),
                                         ("consumer.session.timeout.ms", SET, "50000")])
    assert (got.error_code, got.error_message, got.resource_type, got.resource_name) == (E.NONE, None, 32, "orders/eu")
    # The group id is sanitized as Kafka's Sanitizer does ('/' is %2F), the JSON as /config/topics'.
    data, _ = settled(zk.store.get("/config/groups/orders%2Feu"))
    assert data == b'{"version":1,"config":{"consumer.session.timeout.ms":"50000","share.auto.offset.reset":"earliest"}}'
    notifications = settled(zk.get_config_change_notifications())
    assert len(notifications) == 1
    data, _ = settled(zk.store.get(f"/config/changes/{notifications[0]}"))
    assert data == b'{"version":2,"entity_path":"groups/orders%2Feu"}'


def test_validate_only_and_refused_alters_write_nothing(zk: KafkaZkClient) -> None:
    api = _api(zk)
    assert _incremental(api, "g", [("share.isolation.level", SET, "read_committed")], validate_only=True).error_code == 0
    bad = _incremental(api, "g", [("share.isolation.level", SET, "serializable")])
    assert bad.error_code == E.INVALID_CONFIG and "String must be one of" in bad.error_message
    unknown = _incremental(api, "g", [("retention.ms", SET, "1")])
    assert (unknown.error_code, unknown.error_message) == (E.INVALID_CONFIG, "Unknown group config name: retention.ms")
    append = _incremental(api, "g", [("share.isolation.level", APPEND, "read_committed")])
    assert append.error_code == E.INVALID_CONFIG
    assert settled(zk.get_entity_config("groups", "g")) == {}
    assert settled(zk.get_config_change_notifications()) == []
    empty = _incremental(api, "", [("share.isolation.level", SET, "read_committed")])
    assert (empty.error_code, empty.error_message) == (E.INVALID_REQUEST, "Group name must not be empty")


def test_incremental_delete_and_alter_replaces_the_whole_set(zk: KafkaZkClient) -> None:
    api = _api(zk)
    assert _incremental(api, "g", [("share.auto.offset.reset", SET, "earliest"),
                                   ("share.isolation.level", SET, "read_committed")]).error_code == 0
    assert _incremental(api, "g", [("share.auto.offset.reset", DELETE, None)]).error_code == 0
    assert settled(zk.get_entity_config("groups", "g")) == {"share.isolation.level": "read_committed"}
    assert _alter(api, "g", {"consumer.heartbeat.interval.ms": "6000"}).error_code == 0
    assert settled(zk.get_entity_config("groups", "g")) == {"consumer.heartbeat.interval.ms": "6000"}
    refused = _alter(api, "g", {"consumer.heartbeat.interval.ms": "60000"})
    assert refused.error_code == E.INVALID_CONFIG
    assert refused.error_message == "consumer.heartbeat.interval.ms must be in the range 5000 to 15000 inclusive."


# ------------------------------------------------------------------------------ describe


def test_describe_lists_every_group_config_with_its_source(zk: KafkaZkClient) -> None:
    api = _api(zk, _config(**{"group.share.record.lock.duration.ms": "20000"}))
    fresh = _describe(api, "never-seen")
    assert fresh.error_code == E.NONE
    entries = {c.name: c for c in fresh.configs}
    assert sorted(entries) == sorted(gc.GROUP_CONFIG_NAMES)
    assert (entries["share.auto.offset.reset"].value, entries["share.auto.offset.reset"].config_source) == (
        "latest", DEFAULT_CONFIG)
    assert (entries["share.isolation.level"].value, entries["share.isolation.level"].config_source) == (
        "read_uncommitted", DEFAULT_CONFIG)
    lock = entries["share.record.lock.duration.ms"]
    assert (lock.value, lock.config_source) == ("20000", STATIC_BROKER_CONFIG)
    assert [(s.name, s.value, s.source) for s in lock.synonyms] == [
        ("group.share.record.lock.duration.ms", "20000", STATIC_BROKER_CONFIG)]
    assert (entries["consumer.session.timeout.ms"].value, entries["consumer.session.timeout.ms"].config_source) == (
        "45000", DEFAULT_CONFIG)
    assert not any(c.read_only or c.is_sensitive for c in fresh.configs)

    assert _incremental(api, "g", [("share.auto.offset.reset", SET, "earliest"),
                                   ("share.record.lock.duration.ms", SET, "25000")]).error_code == 0
    described = _describe(api, "g", keys=["share.auto.offset.reset", "share.record.lock.duration.ms"])
    entries = {c.name: c for c in described.configs}
    assert sorted(entries) == ["share.auto.offset.reset", "share.record.lock.duration.ms"]
    assert (entries["share.auto.offset.reset"].value, entries["share.auto.offset.reset"].config_source) == (
        "earliest", GROUP_CONFIG)
    assert [(s.name, s.value, s.source) for s in entries["share.record.lock.duration.ms"].synonyms] == [
        ("share.record.lock.duration.ms", "25000", GROUP_CONFIG),
        ("group.share.record.lock.duration.ms", "20000", STATIC_BROKER_CONFIG)]
    assert _describe(api, "").error_code == E.INVALID_REQUEST


def test_acls_are_kafkas_on_the_group_resource(zk: KafkaZkClient) -> None:
    grants = ((ResourceType.GROUP, "mine", Op.DESCRIBE_CONFIGS), (ResourceType.GROUP, "mine", Op.ALTER_CONFIGS))
    api = _api(zk, authz=authorizer(*grants))
    assert _describe(api, "mine", connection=ALICE).error_code == E.NONE
    theirs = _describe(api, "theirs", connection=ALICE)
    assert (theirs.error_code, theirs.error_message, list(theirs.configs)) == (
        E.GROUP_AUTHORIZATION_FAILED, "Group authorization failed.", [])
    assert _incremental(api, "mine", [("share.isolation.level", SET, "read_committed")],
                        connection=ALICE).error_code == E.NONE
    refused = _incremental(api, "theirs", [("share.isolation.level", SET, "read_committed")], connection=ALICE)
    assert (refused.error_code, refused.error_message) == (E.GROUP_AUTHORIZATION_FAILED, None)
    assert _alter(api, "theirs", {"share.isolation.level": "read_committed"},
                  connection=ALICE).error_code == E.GROUP_AUTHORIZATION_FAILED
    assert settled(zk.get_entity_config("groups", "theirs")) == {}


# ------------------------------------------------------------------------------ the broker's cache


def test_cache_loads_at_start_and_follows_change_notifications(zk: KafkaZkClient) -> None:
    api = _api(zk)
    assert _incremental(api, "before", [("share.auto.offset.reset", SET, "earliest")]).error_code == 0
    cache = gc.GroupConfigCache(zk)
    settled(cache.load())
    assert cache.get("before") == {"share.auto.offset.reset": "earliest"}
    assert cache.get("nobody") == {}

    # The broker's notification processor routes groups/… entity paths to the cache.
    manager = TopicConfigManager(zk, _config())
    settled(manager.load())
    manager.on_entity_change = cache.changed
    assert _incremental(api, "a b/c", [("share.isolation.level", SET, "read_committed")]).error_code == 0
    assert _incremental(api, "before", [("share.auto.offset.reset", DELETE, None)]).error_code == 0
    settled(manager.process())
    assert cache.get("a b/c") == {"share.isolation.level": "read_committed"}
    assert cache.get("before") == {}


def test_share_fetch_settings_take_the_group_overrides() -> None:
    config = _config(**{"group.share.record.lock.duration.ms": "30000"})
    overrides = {"g": {"share.auto.offset.reset": "EARLIEST", "share.isolation.level": "read_committed",
                       "share.record.lock.duration.ms": "20000"},
                 "stale": {"share.record.lock.duration.ms": "1000", "share.auto.offset.reset": "earliest"}}
    broker = NS(config=config, group_configs=NS(get=lambda g: dict(overrides.get(g, {}))))
    service = NS(broker=broker, _settings_made={})
    settings = ShareFetchService._broker_settings(service, "g")  # type: ignore[arg-type]
    assert (settings.auto_offset_reset, settings.isolation_level, settings.record_lock_duration_ms) == (
        "earliest", READ_COMMITTED, 20000)
    plain = ShareFetchService._broker_settings(service, "other")  # type: ignore[arg-type]
    assert (plain.auto_offset_reset, plain.isolation_level, plain.record_lock_duration_ms) == (
        "latest", READ_UNCOMMITTED, 30000)
    # An override no longer valid (here: below the bounds) is ignored, the others still apply.
    stale = ShareFetchService._broker_settings(service, "stale")  # type: ignore[arg-type]
    assert (stale.auto_offset_reset, stale.record_lock_duration_ms) == ("earliest", 30000)
    # Read at each fetch: a change of the group's overrides is seen at once (made again, not cached).
    assert ShareFetchService._broker_settings(service, "g") is settings  # type: ignore[arg-type]
    overrides["g"]["share.isolation.level"] = "read_uncommitted"
    changed = ShareFetchService._broker_settings(service, "g")  # type: ignore[arg-type]
    assert (changed.isolation_level, changed.record_lock_duration_ms) == (READ_UNCOMMITTED, 20000)
    overrides.pop("g")
    assert ShareFetchService._broker_settings(service, "g").record_lock_duration_ms == 30000  # type: ignore[arg-type]


def test_the_broker_bounds_the_share_record_lock_duration() -> None:
    """group.share.min/max.record.lock.duration.ms bound the group config (librdkafka's share-consumer CI
    lowers the floor to 1000 and its 0173/0176 set a group's lock duration to 3000)."""
    with pytest.raises(InvalidConfigError, match="in the range 15000 to 60000"):
        gc.validate_group_config({"share.record.lock.duration.ms": "3000"}, _config())
    low = _config(**{"group.share.min.record.lock.duration.ms": "1000"})
    assert low.group_share_min_record_lock_duration_ms == 1000
    assert gc.validate_group_config({"share.record.lock.duration.ms": "3000"}, low) == {
        "share.record.lock.duration.ms": 3000}
    high = _config(**{"group.share.max.record.lock.duration.ms": "90000"})
    assert gc.validate_group_config({"share.record.lock.duration.ms": "90000"}, high) == {
        "share.record.lock.duration.ms": 90000}


def test_describe_answers_what_this_broker_applies(zk: KafkaZkClient) -> None:
    """With a cache (a real broker), describe shows the cached overrides, as Kafka 4's metadata image."""
    assert _incremental(_api(zk), "g", [("share.auto.offset.reset", SET, "earliest")]).error_code == 0
    cache = gc.GroupConfigCache(zk)
    broker = NS(zk=zk, config=_config(), broker_id=1, topic_configs=None, authorizer=None, group_configs=cache)
    api = configs.handlers(broker)
    before = {c.name: c for c in _describe(api, "g").configs}["share.auto.offset.reset"]
    assert (before.value, before.config_source) == ("latest", DEFAULT_CONFIG)  # notification not processed yet
    settled(cache.changed("groups/g"))
    after = {c.name: c for c in _describe(api, "g").configs}["share.auto.offset.reset"]
    assert (after.value, after.config_source) == ("earliest", GROUP_CONFIG)
