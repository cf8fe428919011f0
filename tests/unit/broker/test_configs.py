"""DescribeConfigs / AlterConfigs / IncrementalAlterConfigs handlers and TopicConfigManager (MemoryStore)."""

from __future__ import annotations

from types import SimpleNamespace as NS

import pytest

from mafka.broker.config import BrokerConfig
from mafka.broker.handlers.configs import handlers
from mafka.broker.topic_configs import TopicConfigManager, apply_log_config
from mafka.coordination.kafka_zk import KafkaZkClient
from mafka.coordination.memory_store import MemoryStore, MemoryZooKeeper
from mafka.errors import ErrorCode
from mafka.log.config import LogConfig


def _result(d):
    out = []
    d.addBoth(out.append)
    assert out, "deferred did not fire"
    if hasattr(out[0], "raiseException"):
        out[0].raiseException()
    return out[0]


def _zk(tree):
    store = MemoryStore(tree)
    store.start()
    zk = KafkaZkClient(store)
    _result(zk.create_persistent_roots())
    return zk


@pytest.fixture
def env():
    tree = MemoryZooKeeper()
    zk = _zk(tree)
    config = BrokerConfig.from_properties(
        {"zookeeper.connect": "zk:2181", "broker.id": "1", "log.retention.hours": "24", "log.segment.bytes": "2000000"}
    )
    broker = NS(zk=zk, config=config, broker_id=1, topic_configs=None)
    _result(zk.create_topic("t", {0: [1]}, {"retention.ms": "1000", "min.insync.replicas": "2"}))
    _result(zk.create_topic("plain", {0: [1]}))
    return NS(tree=tree, zk=zk, broker=broker, api=handlers(broker))


def _describe(env, resources, synonyms=True):
    body = NS(
        resources=[NS(resource_type=t, resource_name=n, configuration_keys=k) for t, n, k in resources],
        include_synonyms=synonyms,
    )
    return _result(env.api[32](NS(body=body), None))["results"]


def _alter(env, topic, configs, validate_only=False, resource_type=2):
    body = NS(
        resources=[NS(resource_type=resource_type, resource_name=topic, configs=[NS(name=k, value=v) for k, v in configs.items()])],
        validate_only=validate_only,
    )
    return _result(env.api[33](NS(body=body), None))["responses"][0]


def _incremental(env, topic, ops, validate_only=False):
    body = NS(
        resources=[
            NS(resource_type=2, resource_name=topic, configs=[NS(name=k, config_operation=op, value=v) for k, op, v in ops])
        ],
        validate_only=validate_only,
    )
    return _result(env.api[44](NS(body=body), None))["responses"][0]


def _entries(result):
    return {c["name"]: c for c in result["configs"]}


def _overrides(env, topic):
    return _result(env.zk.get_topic_config(topic))


def test_describe_overrides_static_and_defaults(env):
    (res,) = _describe(env, [(2, "t", None)])
    assert res["error_code"] == 0 and res["resource_name"] == "t"
    e = _entries(res)
    assert e["retention.ms"]["value"] == "1000" and e["retention.ms"]["config_source"] == 1
    assert e["retention.ms"]["synonyms"][0] == {"name": "retention.ms", "value": "1000", "source": 1}
    assert {"name": "log.retention.hours", "value": "24", "source": 4} in e["retention.ms"]["synonyms"]
    assert e["min.insync.replicas"]["value"] == "2" and e["min.insync.replicas"]["config_source"] == 1
    assert e["segment.bytes"]["value"] == "2000000" and e["segment.bytes"]["config_source"] == 4
    assert e["cleanup.policy"]["value"] == "delete" and e["cleanup.policy"]["config_source"] == 5
    assert e["cleanup.policy"]["synonyms"] == [{"name": "log.cleanup.policy", "value": "delete", "source": 5}]
    assert not any(c["read_only"] or c["is_sensitive"] for c in res["configs"])
    assert len(e) >= 25

    (plain,) = _describe(env, [(2, "plain", None)], synonyms=False)
    p = _entries(plain)
    assert p["retention.ms"]["value"] == str(24 * 3600 * 1000) and p["retention.ms"]["config_source"] == 4
    assert p["min.insync.replicas"]["value"] == "1" and p["min.insync.replicas"]["config_source"] == 5
    assert all(c["synonyms"] == [] for c in plain["configs"])


def test_describe_filter_unknown_topic_and_resource_types(env):
    t, missing, other_broker, me, bad = _describe(
        env, [(2, "t", ["retention.ms", "cleanup.policy"]), (2, "nope", None), (4, "2", None), (4, "1", ["broker.id"]), (9, "x", None)]
    )
    assert sorted(_entries(t)) == ["cleanup.policy", "retention.ms"]
    assert missing["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION and missing["configs"] == []
    assert other_broker["error_code"] == ErrorCode.INVALID_REQUEST
    assert me["error_code"] == 0
    assert [(c["name"], c["value"], c["read_only"], c["config_source"]) for c in me["configs"]] == [("broker.id", "1", True, 4)]
    assert bad["error_code"] == ErrorCode.INVALID_REQUEST


def test_alter_replaces_whole_override_set(env):
    assert _alter(env, "t", {"cleanup.policy": "compact"})["error_code"] == 0
    assert _overrides(env, "t") == {"cleanup.policy": "compact"}
    e = _entries(_describe(env, [(2, "t", None)])[0])
    assert e["cleanup.policy"]["value"] == "compact" and e["cleanup.policy"]["config_source"] == 1
    assert e["retention.ms"]["config_source"] == 4  # the override is gone


def test_alter_validate_only_and_invalid_values(env):
    before = _overrides(env, "t")
    assert _alter(env, "t", {"retention.ms": "5"}, validate_only=True)["error_code"] == 0
    bad = _alter(env, "t", {"retention.ms": "abc"})
    assert bad["error_code"] == ErrorCode.INVALID_CONFIG and "retention.ms" in bad["error_message"]
    assert _alter(env, "t", {"no.such.config": "1"})["error_code"] == ErrorCode.INVALID_CONFIG
    assert _alter(env, "t", {"min.insync.replicas": "0"})["error_code"] == ErrorCode.INVALID_CONFIG
    assert _alter(env, "nope", {"retention.ms": "5"})["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION
    assert _alter(env, "1", {"x": "1"}, resource_type=7)["error_code"] == ErrorCode.INVALID_REQUEST
    assert _overrides(env, "t") == before


def test_incremental_set_delete_append_subtract(env):
    assert _incremental(env, "t", [("segment.bytes", 0, "4096"), ("retention.ms", 1, None)])["error_code"] == 0
    assert _overrides(env, "t") == {"min.insync.replicas": "2", "segment.bytes": "4096"}
    assert _incremental(env, "t", [("cleanup.policy", 2, "compact")])["error_code"] == 0
    assert _overrides(env, "t")["cleanup.policy"] == "delete,compact"  # appended to Kafka's default
    assert _incremental(env, "t", [("cleanup.policy", 3, "delete")])["error_code"] == 0
    assert _overrides(env, "t")["cleanup.policy"] == "compact"
    # APPEND on a non-list config, bad values, validate_only, unknown topic
    assert _incremental(env, "t", [("retention.ms", 2, "5")])["error_code"] == ErrorCode.INVALID_CONFIG
    assert _incremental(env, "t", [("cleanup.policy", 0, "bogus")])["error_code"] == ErrorCode.INVALID_CONFIG
    assert _incremental(env, "t", [("retention.ms", 0, "77")], validate_only=True)["error_code"] == 0
    assert "retention.ms" not in _overrides(env, "t")
    assert _incremental(env, "nope", [("retention.ms", 0, "77")])["error_code"] == ErrorCode.UNKNOWN_TOPIC_OR_PARTITION


def test_manager_follows_notifications_and_fires_on_change(env):
    other = _zk(env.tree)  # another broker's session
    changed = []
    manager = TopicConfigManager(other, env.broker.config, changed.append)
    _result(manager.load())
    manager.start()
    base = env.broker.config.log_config()
    assert manager.log_config("t").retention_ms == 1000
    assert manager.log_config("plain") == base and base.segment_bytes == 2000000
    assert changed == []

    assert _alter(env, "plain", {"retention.ms": "12345", "segment.bytes": "100000"})["error_code"] == 0
    assert changed == ["plain"]
    assert manager.overrides["plain"] == {"retention.ms": "12345", "segment.bytes": "100000"}
    cfg = manager.log_config("plain")
    assert (cfg.retention_ms, cfg.segment_bytes, cfg.retention_bytes) == (12345, 100000, base.retention_bytes)

    _result(env.zk.create_topic("late", {0: [1]}, {"retention.ms": "42"}))  # no notification for creation
    assert manager.log_config("late").retention_ms == 42

    manager.stop()
    assert _alter(env, "t", {})["error_code"] == 0
    assert "t" not in changed and manager.log_config("t").retention_ms == 1000


def test_manager_skips_already_handled_notifications(env):
    _result(env.zk.set_topic_config("t", {"retention.ms": "2000"}))
    changed = []
    manager = TopicConfigManager(env.zk, env.broker.config, changed.append)
    _result(manager.load())
    assert manager.last_seq >= 0
    _result(manager.process())
    assert changed == [] and manager.log_config("t").retention_ms == 2000


def test_apply_log_config_updates_open_log(tmp_path):
    from mafka.errors import MessageTooLargeError
    from mafka.log.log import Log
    from mafka.wire.records import Record, build_batch, iter_records

    log_ = Log.open(tmp_path / "t-0", LogConfig(), lambda: 5000)
    cfg = LogConfig.from_properties({"retention.ms": "9", "message.timestamp.type": "LogAppendTime", "max.message.bytes": "200"})
    apply_log_config(log_, cfg)
    assert log_.config is cfg and log_.active_segment.config is cfg
    with pytest.raises(MessageTooLargeError):
        log_.append_as_leader(build_batch([Record(0, 1, b"k", b"x" * 300)]), 0)
    log_.append_as_leader(build_batch([Record(0, 1, b"k", b"x")]), 0)
    assert [r.timestamp for r in iter_records(log_.read(0, 1000).read())] == [5000]
    log_.close()


def test_ensure_reads_the_config_of_a_topic_the_watch_has_not_reported(env):
    manager = TopicConfigManager(_zk(env.tree), env.broker.config)
    _result(manager.load())  # no watches started: nothing reports "fresh" below
    _result(env.zk.create_topic("fresh", {0: [1]}, {"cleanup.policy": "compact", "segment.bytes": "1048576"}))
    assert "fresh" not in manager.overrides
    _result(manager.ensure(["fresh", "t"]))
    cfg = manager.log_config("fresh")
    assert (cfg.compact, cfg.segment_bytes) == (True, 1048576)
    assert manager.log_config("t").retention_ms == 1000


def test_leader_and_isr_gives_new_logs_their_topics_current_config(tmp_path):
    """A topic config that arrives while the log is being created still reaches the log (Kafka reads it at creation)."""
    from twisted.internet import defer, task

    from mafka.broker.dispatcher import Dispatcher, collect_handlers
    from mafka.broker.metadata_cache import MetadataCache
    from mafka.broker.replica_manager import ReplicaManager
    from mafka.log.manager import LogManager
    from tests.unit.broker.test_replica_manager import call, leader_and_isr

    compact = LogConfig(cleanup_policy=("compact",), segment_bytes=1048576)
    answers = iter([LogConfig()])  # the first lookup (log creation) still sees the broker default

    def config_for(topic):
        return next(answers, compact)

    manager = LogManager([tmp_path / "d"], LogConfig(), lambda: 0, broker_id=1, cluster_id="c")
    manager.startup()
    rm = ReplicaManager(1, manager, task.Clock(), log_config_for=config_for)
    ensured = []
    broker = NS(
        replica_manager=rm, metadata_cache=MetadataCache(1), broker_epoch=100,
        run_blocking=lambda fn, *args: defer.maybeDeferred(fn, *args), on_metadata_update=lambda d: None,
        topic_configs=NS(ensure=lambda topics: defer.succeed(ensured.append(sorted(topics)))),
        log_config_for=config_for,
    )
    env = NS(dispatcher=Dispatcher(collect_handlers(broker)))
    body, _ = call(env, 4, 2, leader_and_isr("fresh"))
    assert body.error_code == 0
    assert ensured == [["fresh"]]
    assert rm.partitions[("fresh", 0)].log.config == compact
    assert rm.partitions[("fresh", 0)].log.active_segment.config == compact
    manager.shutdown()
