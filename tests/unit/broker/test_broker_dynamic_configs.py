"""Dynamic broker configs (the replication throttles) through AlterConfigs / IncrementalAlterConfigs.

Stored as Kafka stores them: ``/config/brokers/<id>`` (``<default>`` for "")
plus a ``/config/changes`` notification, and shown by DescribeConfigs.
"""

from __future__ import annotations

import json
from types import SimpleNamespace as NS

import pytest

from mafka.broker.config import BrokerConfig
from mafka.broker.handlers.configs import handlers
from mafka.coordination.kafka_zk import KafkaZkClient
from mafka.coordination.memory_store import MemoryStore, MemoryZooKeeper
from mafka.errors import ErrorCode

BROKER = 4
SET, DELETE, APPEND = 0, 1, 2


def _result(d):
    out = []
    d.addBoth(out.append)
    assert out, "deferred did not fire"
    if hasattr(out[0], "raiseException"):
        out[0].raiseException()
    return out[0]


@pytest.fixture
def env():
    tree = MemoryZooKeeper()
    store = MemoryStore(tree)
    store.start()
    zk = KafkaZkClient(store)
    _result(zk.create_persistent_roots())
    config = BrokerConfig.from_properties({"zookeeper.connect": "zk:2181", "broker.id": "1"})
    broker = NS(zk=zk, config=config, broker_id=1, topic_configs=None)
    return NS(tree=tree, zk=zk, store=store, api=handlers(broker))


def _incremental(env, name, ops, validate_only=False):
    body = NS(
        resources=[
            NS(
                resource_type=BROKER,
                resource_name=name,
                configs=[NS(name=k, config_operation=op, value=v) for k, op, v in ops],
            )
        ],
        validate_only=validate_only,
    )
    (response,) = _result(env.api[44](NS(body=body), None))["responses"]
    return response["error_code"], response["error_message"]


def test_throttle_rates_are_stored_as_kafka_stores_them(env) -> None:
    ops = [
        ("leader.replication.throttled.rate", SET, "1000"),
        ("follower.replication.throttled.rate", SET, "1000"),
    ]
    assert _incremental(env, "1", ops) == (ErrorCode.NONE, None)
    data, _ = _result(env.store.get("/config/brokers/1"))
    assert json.loads(data) == {
        "version": 1,
        "config": {
            "leader.replication.throttled.rate": "1000",
            "follower.replication.throttled.rate": "1000",
        },
    }
    changes = _result(env.zk.get_config_change_notifications())
    data, _ = _result(env.store.get(f"/config/changes/{changes[-1]}"))
    assert json.loads(data) == {"version": 2, "entity_path": "brokers/1"}
    assert _result(env.zk.get_broker_config(1))["leader.replication.throttled.rate"] == "1000"

    body = NS(
        resources=[NS(resource_type=BROKER, resource_name="1", configuration_keys=None)],
        include_synonyms=True,
    )
    (described,) = _result(env.api[32](NS(body=body), None))["results"]
    entries = {c["name"]: c for c in described["configs"]}
    assert entries["leader.replication.throttled.rate"]["value"] == "1000"
    assert entries["leader.replication.throttled.rate"]["config_source"] == 2

    assert _incremental(env, "1", [("leader.replication.throttled.rate", DELETE, None)])[0] == 0
    assert _result(env.zk.get_broker_config(1)) == {"follower.replication.throttled.rate": "1000"}


def test_default_entity_and_errors(env) -> None:
    assert _incremental(env, "", [("follower.replication.throttled.rate", SET, "5")])[0] == 0
    assert _result(env.zk.get_broker_config(None)) == {"follower.replication.throttled.rate": "5"}
    code, message = _incremental(env, "2", [("leader.replication.throttled.rate", SET, "1")])
    assert code == ErrorCode.INVALID_REQUEST and "Unexpected broker id" in message
    code, message = _incremental(env, "1", [("num.io.threads", SET, "4")])
    assert code == ErrorCode.INVALID_CONFIG
    code, _ = _incremental(env, "1", [("leader.replication.throttled.rate", SET, "-3")])
    assert code == ErrorCode.INVALID_CONFIG
    code, _ = _incremental(env, "1", [("leader.replication.throttled.rate", APPEND, "3")])
    assert code == ErrorCode.INVALID_CONFIG  # not a LIST config (Kafka's ConfigAdminManager)
    assert _incremental(env, "1", [("leader.replication.throttled.rate", SET, "9")], True)[0] == 0
    assert _result(env.zk.get_broker_config(1)) == {}, "validate_only writes nothing"


def test_the_cluster_default_is_described_by_its_dynamic_defaults(env) -> None:
    def describe(keys=None):
        body = NS(resources=[NS(resource_type=BROKER, resource_name="", configuration_keys=keys)],
                  include_synonyms=True)
        (described,) = _result(env.api[32](NS(body=body), None))["results"]
        return described

    assert describe()["configs"] == []
    assert _incremental(env, "", [("follower.replication.throttled.rate", SET, "5")])[0] == 0
    got = describe()
    assert got["error_code"] == 0
    assert [(c["name"], c["value"], c["config_source"]) for c in got["configs"]] == [
        ("follower.replication.throttled.rate", "5", 3)  # DYNAMIC_DEFAULT_BROKER_CONFIG
    ]
    assert describe(["leader.replication.throttled.rate"])["configs"] == []
