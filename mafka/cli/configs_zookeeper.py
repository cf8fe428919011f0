"""``mafka configs --zookeeper``: Kafka 2.8's ZooKeeper form of kafka-configs.sh.

Owns reading and writing ``/config/<type>/<name>`` (and ``users/<u>/clients/<c>``)
directly, with the change notification Kafka's ``AdminZkClient.changeConfigs``
posts: topic, broker, user (SCRAM credentials and quotas) and client configs,
checked as Kafka checks them before writing.  The ``--bootstrap-server`` form
and the argument handling they share are :mod:`mafka.cli.configs`'.
"""

from __future__ import annotations

import argparse
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from mafka.cli.configs import (
    _CONFIG_EXCEPTION,
    _ERRORS,
    _IPS_UNSUPPORTED_ZK,
    BROKERS,
    CLIENTS,
    DEFAULT_ENTITY,
    IPS,
    SCRAM_MECHANISMS,
    THROTTLE_CONFIGS,
    TOPICS,
    USERS,
    ConfigCommandError,
    _configs_to_add,
    _configs_to_delete,
    _entity_string,
    _scala_set,
    _scram_credential,
    java_hash_order,
)
from mafka.errors import ConfigError
from mafka.security.quota_entities import entity_from_config_location, validate_entity_config

__all__ = ["run_zookeeper"]

@dataclass(frozen=True)
class _ZkEntity:
    """Kafka's ``ConfigEntity``: a root entity (type and sanitized name, None: all of them) and a child.

    The child is the client-id part of a (user, client-id) quota entity.
    """

    type: str
    name: str | None
    child: _ZkEntity | None = None

    @property
    def full_name(self) -> str:
        """``fullSanitizedName``: ``alice``, ``alice/clients/app``, ``<default>/clients/<default>``."""
        child = self.child
        if child is None:
            return self.name or ""
        return f"{self.name or ''}/{child.type}" + (f"/{child.name}" if child.name is not None else "")

    def __str__(self) -> str:
        root = _entity_string(self.type, self.name)
        return root if self.child is None else f"{root}, {self.child}"


def _zk_entity(args: argparse.Namespace, types: list[str], names: list[str]) -> _ZkEntity:
    """Kafka's ``parseEntity`` / ``parseClientQuotaEntity`` (a (clients, users) pair is turned round to users first)."""
    from mafka.broker.scram import sanitize

    if types[0] in (USERS, CLIENTS):
        if args.alter and len(names) != len(types):
            raise ConfigCommandError("--entity-name or --entity-default must be specified with each --entity-type "
                                     "for --alter")
        reverse = len(types) == 2 and types[0] == CLIENTS
        ordered_types = types[::-1] if reverse else types
        ordered_names = names[::-1] if reverse and len(names) == 2 else names
        parts = [_ZkEntity(t, (DEFAULT_ENTITY if ordered_names[i] == "" else sanitize(ordered_names[i]))
                           if i < len(ordered_names) else None)
                 for i, t in enumerate(ordered_types)]
        return _ZkEntity(parts[0].type, parts[0].name, parts[1] if len(parts) > 1 else None)
    if types[0] == IPS:
        raise ConfigCommandError(_IPS_UNSUPPORTED_ZK)
    if not names:
        return _ZkEntity(types[0], None)
    if names[0] == "":
        return _ZkEntity(types[0], DEFAULT_ENTITY)
    return _ZkEntity(types[0], names[0])


def _all_zk_entities(zk: Any, entity: _ZkEntity) -> list[_ZkEntity]:
    """``ConfigEntity.getAllEntities``: the entities a describe covers (every root, every child of a root …)."""
    child = entity.child
    if entity.name is None:
        roots = zk.call(zk.client.get_all_entities_with_config, entity.type)
        if child is None:
            return [_ZkEntity(entity.type, name) for name in roots]
        return [found for name in roots
                for found in _all_zk_entities(zk, _ZkEntity(entity.type, name, _ZkEntity(child.type, None)))]
    if child is None or child.name is not None:
        return [entity]
    children = zk.call(zk.client.get_all_entities_with_config, f"{entity.type}/{entity.name}/{child.type}")
    return [_ZkEntity(entity.type, entity.name, _ZkEntity(child.type, name)) for name in children]


def _describe_zk(zk: Any, entity: _ZkEntity) -> None:
    """``describeConfigWithZk``: ``Configs for <entity> are k=v,…`` for each entity the arguments cover."""
    # Describing all users leaves out the empty user nodes that only hold (user, client-id) quotas.
    describe_all_users = entity.type == USERS and entity.name is None and entity.child is None
    for found in _all_zk_entities(zk, entity):
        configs = zk.call(zk.client.get_entity_config, found.type, found.full_name)
        if configs or not describe_all_users:
            shown = ",".join(f"{k}={configs[k]}" for k in java_hash_order(configs, concurrent=True))
            print(f"Configs for {found} are {shown}")


def _check_long_at_least_zero(configs: Mapping[str, str], names: Iterable[str]) -> None:
    """``DynamicConfig.Broker.validate`` for the replication throttles (LONG, at least 0)."""
    for name in names:
        if name not in configs:
            continue
        value = configs[name].strip()
        if re.fullmatch(r"[+-]?[0-9]+", value) is None or not -(2**63) <= int(value) < 2**63:
            raise ConfigCommandError(f"Invalid value {configs[name]} for configuration {name}: Not a number of type LONG",
                                     _CONFIG_EXCEPTION)
        if int(value) < 0:
            raise ConfigCommandError(f"Invalid value {value} for configuration {name}: Value must be at least 0",
                                     _CONFIG_EXCEPTION)


def _change_configs_zk(zk: Any, entity: _ZkEntity, configs: dict[str, str]) -> None:
    """``AdminZkClient.changeConfigs``: validates, writes ``/config/<type>/<name>``, posts the notification."""
    assert entity.name is not None
    if entity.type == TOPICS:
        from mafka.broker.topic_configs import ALL_TOPIC_CONFIG_NAMES
        from mafka.controller.admin import validate_topic_configs
        from mafka.errors import InvalidTopicError
        from mafka.errors import KafkaError as AnyBrokerError
        from mafka.topics import validate_topic_name

        try:
            validate_topic_name(entity.name)
        except InvalidTopicError as exc:
            raise ConfigCommandError(exc.message, f"{_ERRORS}.InvalidTopicException") from None
        if not zk.call(zk.client.topic_exists, entity.name):
            raise ConfigCommandError(f"Topic '{entity.name}' does not exist.",
                                     f"{_ERRORS}.UnknownTopicOrPartitionException")
        for name in configs:
            if name not in ALL_TOPIC_CONFIG_NAMES:
                raise ConfigCommandError(f"Unknown topic config name: {name}")
        try:
            validate_topic_configs(configs)
        except AnyBrokerError as exc:
            raise ConfigCommandError(exc.message, _CONFIG_EXCEPTION) from None
        zk.call(zk.client.set_topic_config, entity.name, configs)
        return
    if entity.type in (USERS, CLIENTS):
        # DynamicConfig.User.validate, or DynamicConfig.Client.validate for client-ids, (user, client-id)
        # pairs and the default user: unknown keys are an IllegalArgumentException, bad numbers a ConfigException.
        try:
            validate_entity_config(entity_from_config_location(entity.type, entity.full_name), configs)
        except ConfigError as exc:
            raise ConfigCommandError(str(exc), _CONFIG_EXCEPTION) from None
        except ValueError as exc:
            raise ConfigCommandError(str(exc)) from None
    elif entity.type == BROKERS:
        _check_long_at_least_zero(configs, THROTTLE_CONFIGS)
    zk.call(zk.client.set_entity_config, entity.type, entity.full_name, configs)


def _alter_zk(zk: Any, args: argparse.Namespace, entity: _ZkEntity) -> None:
    """``alterConfigWithZk``: the entity's config with the additions and deletions, written whole."""
    added = _configs_to_add(args)
    deleted = _configs_to_delete(args)
    assert entity.name is not None
    if entity.type == USERS:
        for mechanism in SCRAM_MECHANISMS:
            if mechanism in added:
                added[mechanism] = _scram_credential(mechanism, added[mechanism])
    elif entity.type == BROKERS:
        dynamic = [k for k in added if k not in THROTTLE_CONFIGS]
        if dynamic:
            message = f"--bootstrap-server option must be specified to update broker configs {_scala_set(dynamic)}"
            info = ("Broker configuration updates using ZooKeeper are supported for bootstrapping before brokers"
                    " are started to enable encrypted password configs to be stored in ZooKeeper.")
            if entity.name != DEFAULT_ENTITY:
                if zk.call(zk.client.get_broker, int(entity.name)) is not None:
                    raise ConfigCommandError(f"{message} when broker {entity.name} is running. {info}")
            elif zk.call(zk.client.get_all_brokers):
                raise ConfigCommandError(f"{message} for default cluster if any broker is running. {info}")
            # DynamicBrokerConfig.validateConfigs: Mafka's brokers have no other dynamic config.
            raise ConfigCommandError(f"Cannot update these configs dynamically: {_scala_set(dynamic)}", _CONFIG_EXCEPTION)
    configs = dict(zk.call(zk.client.get_entity_config, entity.type, entity.full_name))
    invalid = [k for k in deleted if k not in configs]
    if invalid:
        raise ConfigCommandError(f"Invalid config(s): {','.join(invalid)}")
    configs.update(added)
    for key in deleted:
        configs.pop(key, None)
    _change_configs_zk(zk, entity, configs)
    print(f"Completed updating config for entity: {entity}.")


def run_zookeeper(args: argparse.Namespace, types: list[str], names: list[str]) -> None:
    from mafka.cli.zk_session import ZkSession
    from mafka.coordination.store import ConnectionLossError, StoreError

    print("Warning: --zookeeper is deprecated and will be removed in a future version of Kafka.")
    print("Use --bootstrap-server instead to specify a broker to connect to.")
    sys.stdout.flush()
    entity = _zk_entity(args, types, names)
    try:
        with ZkSession(args.zookeeper, timeout=args.timeout) as zk:
            if args.alter:
                _alter_zk(zk, args, entity)
            else:
                _describe_zk(zk, entity)
    except ConnectionLossError:
        raise ConfigCommandError("Timed out waiting for connection while in state: CONNECTING",
                                 "kafka.zookeeper.ZooKeeperClientTimeoutException") from None
    except StoreError as exc:
        raise ConfigCommandError(str(exc), "org.apache.zookeeper.KeeperException") from None


# ----------------------------------------------------------------------------- entry point
