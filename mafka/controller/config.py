"""The controller's settings (:class:`ControllerConfig`) and how they are read from a broker config.

Owns the broker settings the controller obeys (``unclean.leader.election.enable``,
``delete.topic.enable``, ``num.partitions``, ``default.replication.factor``,
``auto.leader.rebalance.enable``, ``leader.imbalance.*``) and :func:`as_bool`, the
way a ``true``/``false`` setting (a broker value or a topic override) is read.
Plain data, no I/O.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

__all__ = ["ControllerConfig", "as_bool"]


def as_bool(value: Any) -> bool:
    """A boolean setting: a bool as is, else True only for the string ``true`` (any case, trimmed)."""
    if isinstance(value, bool):
        return value
    return str(value).strip().lower() == "true"


@dataclass(frozen=True, slots=True)
class ControllerConfig:
    """The broker settings the controller obeys (Kafka names in the field docs).

    Attributes:
        unclean_leader_election_enable: ``unclean.leader.election.enable``
            (the default for topics without an override).
        delete_topic_enable: ``delete.topic.enable``.
        num_partitions: ``num.partitions`` (CreateTopics with -1).
        default_replication_factor: ``default.replication.factor`` (CreateTopics with -1).
        auto_leader_rebalance_enable: ``auto.leader.rebalance.enable``.
        leader_imbalance_per_broker_percentage: ``leader.imbalance.per.broker.percentage``.
        leader_imbalance_check_interval_seconds: ``leader.imbalance.check.interval.seconds``.
    """

    unclean_leader_election_enable: bool = False
    delete_topic_enable: bool = True
    num_partitions: int = 1
    default_replication_factor: int = 1
    auto_leader_rebalance_enable: bool = True
    leader_imbalance_per_broker_percentage: int = 10
    leader_imbalance_check_interval_seconds: int = 300

    _KEYS = {
        "unclean.leader.election.enable": "unclean_leader_election_enable",
        "delete.topic.enable": "delete_topic_enable",
        "num.partitions": "num_partitions",
        "default.replication.factor": "default_replication_factor",
        "auto.leader.rebalance.enable": "auto_leader_rebalance_enable",
        "leader.imbalance.per.broker.percentage": "leader_imbalance_per_broker_percentage",
        "leader.imbalance.check.interval.seconds": "leader_imbalance_check_interval_seconds",
    }

    @classmethod
    def of(cls, config: Any = None) -> ControllerConfig:
        """A config from None (defaults), a ControllerConfig, a mapping of Kafka
        names (``{"delete.topic.enable": "false"}``) or any object with the
        attributes above (e.g. :class:`mafka.broker.config.BrokerConfig`)."""
        if config is None:
            return cls()
        if isinstance(config, ControllerConfig):
            return config
        values: dict[str, Any] = {}
        if isinstance(config, Mapping):
            for key, attr in cls._KEYS.items():
                for name in (key, attr):
                    if name in config:
                        values[attr] = config[name]
        else:
            for attr in cls._KEYS.values():
                if hasattr(config, attr):
                    values[attr] = getattr(config, attr)
        return cls(
            unclean_leader_election_enable=as_bool(
                values.get("unclean_leader_election_enable", False)
            ),
            delete_topic_enable=as_bool(values.get("delete_topic_enable", True)),
            num_partitions=int(values.get("num_partitions", 1)),
            default_replication_factor=int(values.get("default_replication_factor", 1)),
            auto_leader_rebalance_enable=as_bool(values.get("auto_leader_rebalance_enable", True)),
            leader_imbalance_per_broker_percentage=int(
                values.get("leader_imbalance_per_broker_percentage", 10)
            ),
            leader_imbalance_check_interval_seconds=int(
                values.get("leader_imbalance_check_interval_seconds", 300)
            ),
        )
