"""KIP-392's RackAwareReplicaSelector and ``replica.selector.class`` (no sockets, no logs)."""

from __future__ import annotations

import pytest

from mafka.broker.config import BrokerConfig
from mafka.broker.replica_selector import (
    NO_NODE,
    RACK_AWARE_REPLICA_SELECTOR,
    ClientMetadata,
    PartitionView,
    RackAwareReplicaSelector,
    ReplicaView,
    UnknownReplicaSelectorError,
    most_caught_up,
    replica_selector_for,
)
from mafka.errors import ConfigError

TP = ("t", 0)
LEADER = ReplicaView(1, "r1", 100, 0)


def select(rack: str, *followers: ReplicaView, leader: ReplicaView = LEADER) -> ReplicaView | None:
    return RackAwareReplicaSelector().select(TP, ClientMetadata(rack), PartitionView({leader, *followers}, leader))


def test_a_client_without_a_rack_or_in_no_replicas_rack_gets_the_leader():
    follower = ReplicaView(2, "r2", 100, 0)
    assert select("", follower) == LEADER
    assert select("elsewhere", follower) == LEADER


def test_the_leader_wins_in_its_own_rack_even_against_a_more_caught_up_follower():
    same_rack = ReplicaView(2, "r1", 200, 0)
    assert select("r1", same_rack) == LEADER


def test_a_follower_in_the_clients_rack_is_preferred():
    near = ReplicaView(2, "r2", 90, 300)
    far = ReplicaView(3, "r3", 100, 0)
    assert select("r2", near, far) == near


def test_the_most_caught_up_replica_of_the_rack_wins_then_the_fresher_then_the_higher_id():
    behind = ReplicaView(2, "r2", 90, 0)
    ahead_stale = ReplicaView(3, "r2", 100, 500)
    ahead_fresh = ReplicaView(4, "r2", 100, 10)
    assert select("r2", behind, ahead_stale, ahead_fresh) == ahead_fresh
    twin_low, twin_high = ReplicaView(5, "r2", 100, 10), ReplicaView(6, "r2", 100, 10)
    assert select("r2", twin_low, twin_high) == twin_high
    assert most_caught_up([behind, ahead_stale]) == ahead_stale


def test_a_replica_without_an_endpoint_has_no_rack_to_match():
    unreachable = ReplicaView(NO_NODE, None, 100, 0)
    assert select("r2", unreachable) == LEADER


def test_replica_selector_class_names_kafkas_selector_or_nothing():
    assert replica_selector_for(None) is None
    assert isinstance(replica_selector_for(RACK_AWARE_REPLICA_SELECTOR), RackAwareReplicaSelector)
    for name in ("com.example.MySelector", "RackAwareReplicaSelector", ""):
        with pytest.raises(UnknownReplicaSelectorError):
            replica_selector_for(name)


def test_the_broker_config_refuses_an_unknown_selector_class():
    props = {"zookeeper.connect": "zk:2181"}
    assert BrokerConfig.from_properties(props).replica_selector_class is None
    ok = BrokerConfig.from_properties({**props, "replica.selector.class": RACK_AWARE_REPLICA_SELECTOR})
    assert ok.replica_selector_class == RACK_AWARE_REPLICA_SELECTOR
    with pytest.raises(ConfigError) as err:
        BrokerConfig.from_properties({**props, "replica.selector.class": "com.example.MySelector"})
    assert err.value.key == "replica.selector.class"
    assert "com.example.MySelector" in str(err.value) and RACK_AWARE_REPLICA_SELECTOR in str(err.value)
