"""``group.protocol`` and ``group.remote.assignor`` (KIP-848) in the client's configuration."""

from __future__ import annotations

import pytest

from mafka.client.config import ConfigError, parse_config

BASE = {"bootstrap.servers": "x:1", "group.id": "g"}


def test_the_protocol_is_classic_unless_asked_and_the_assignor_unset() -> None:
    cfg = parse_config("consumer", BASE)
    assert cfg["group.protocol"] == "classic" and cfg["group.remote.assignor"] is None
    cfg = parse_config("consumer", {**BASE, "group.protocol": "CONSUMER", "group.remote.assignor": "uniform"})
    assert cfg["group.protocol"] == "consumer" and cfg["group.remote.assignor"] == "uniform"
    assert parse_config("consumer", {**BASE, "group_protocol": "consumer"})["group.protocol"] == "consumer"


def test_an_unknown_protocol_is_refused() -> None:
    with pytest.raises(ConfigError, match='"group.protocol"'):
        parse_config("consumer", {**BASE, "group.protocol": "share"})


@pytest.mark.parametrize("key,value", [("partition.assignment.strategy", "range"),
                                       ("session.timeout.ms", 10000), ("heartbeat.interval.ms", 1000)])
def test_the_coordinators_settings_cannot_be_set_with_the_consumer_protocol(key: str, value: object) -> None:
    with pytest.raises(ConfigError) as info:
        parse_config("consumer", {**BASE, "group.protocol": "consumer", key: value})
    assert str(info.value) == f"{key} cannot be set when group.protocol=CONSUMER"  # Java's words
    parse_config("consumer", {**BASE, key: value})  # fine with the classic protocol


def test_every_refused_key_is_named_as_spelled() -> None:
    with pytest.raises(ConfigError, match="^partition_assignment_strategy, session.timeout.ms cannot be set"):
        parse_config("consumer", {**BASE, "group.protocol": "consumer", "session.timeout.ms": 10000,
                                  "partition_assignment_strategy": "range"})


def test_the_remote_assignor_is_ignored_by_the_classic_protocol_and_must_not_be_empty() -> None:
    assert parse_config("consumer", {**BASE, "group.remote.assignor": "range"})["group.protocol"] == "classic"
    with pytest.raises(ConfigError, match='"group.remote.assignor"'):
        parse_config("consumer", {**BASE, "group.protocol": "consumer", "group.remote.assignor": ""})
