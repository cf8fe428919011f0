"""DescribeConfigs (32, v1–2), AlterConfigs (33, v0–1), IncrementalAlterConfigs (44, v0–1).

Kafka 2.8 ZooKeeper-mode semantics (``ZkAdminManager``):

* TOPIC (2) resources: describe reads ``/config/topics/<t>``; every topic
  config is listed with its value and source (1 DYNAMIC_TOPIC_CONFIG for an
  override, 4 STATIC_BROKER_CONFIG when ``server.properties`` sets a broker
  synonym, 5 DEFAULT_CONFIG otherwise).  AlterConfigs replaces the whole
  override set; IncrementalAlterConfigs applies SET/DELETE/APPEND/SUBTRACT to
  it (APPEND adds the list items not yet present, SUBTRACT removes items,
  both only for LIST configs such as ``cleanup.policy``: INVALID_CONFIG
  otherwise, as Kafka's ``ConfigAdminManager``; a null value for anything
  but DELETE is INVALID_REQUEST).  Both validate, honour ``validate_only`` and write ZooKeeper directly
  (any broker may serve them), which announces the change to every broker.
* BROKER (4) resources: describe shows this broker's static configs,
  read-only, then the dynamic ones set in ZooKeeper (source 2
  DYNAMIC_BROKER_CONFIG from ``/config/brokers/<id>``, 3
  DYNAMIC_DEFAULT_BROKER_CONFIG from ``/config/brokers/<default>``); another
  broker's id is INVALID_REQUEST.  Only the dynamic replication throttles
  (:data:`DYNAMIC_BROKER_CONFIGS`, used by ``reassign-partitions
  --throttle``) can be altered, for this broker's id or "" (the default):
  they are written to ``/config/brokers/<id|<default>>`` plus a
  ``/config/changes`` notification, as Kafka's ``AdminZkClient.changeBrokerConfig``.
* GROUP (32) resources (Kafka 4, KIP-848/KIP-932): describe lists every group
  config Mafka knows (:mod:`mafka.broker.group_configs`) for any group name,
  existing or not, with source 8 GROUP_CONFIG for an override, else its
  broker synonym's (4 STATIC_BROKER_CONFIG / 5 DEFAULT_CONFIG) or 5
  DEFAULT_CONFIG; an empty name is INVALID_REQUEST.  As Kafka 4 (which answers from the broker's metadata
  image), the overrides shown are the ones this broker applies: its
  ``broker.group_configs`` cache, current once it has processed the change
  notification (ZooKeeper's ``/config/groups/<group>`` for a broker without
  one).  The alters validate the resulting override set as
  Kafka's ``GroupConfig.validate`` (unknown names, bad values and values
  outside the broker's ``group.consumer.*`` / ``group.share.*`` bounds are
  INVALID_CONFIG) and write it with a ``groups/<group>`` notification.

ACLs (Kafka 2.8), per resource and before anything is read or written, so a
refused topic's existence is not revealed: DescribeConfigs needs
DescribeConfigs, AlterConfigs and IncrementalAlterConfigs need AlterConfigs —
on the topic for a TOPIC resource (else TOPIC_AUTHORIZATION_FAILED), on the
group for a GROUP resource (else GROUP_AUTHORIZATION_FAILED, as Kafka 4), on the
cluster for a BROKER or BROKER_LOGGER resource (else
CLUSTER_AUTHORIZATION_FAILED).  DescribeConfigs answers the error's own
message and no configs, the alters a null message (Kafka's
``configsAuthorizationApiError``).  AlterConfigs has no BROKER_LOGGER
check: Kafka rejects that type there before any check (INVALID_REQUEST here
too).  Mafka keeps the request's order of resources, where Kafka lists the
allowed ones first; clients match results by resource.
"""

from __future__ import annotations

import re
from typing import Any

from twisted.internet import defer

from mafka.broker import group_configs
from mafka.broker.config import CONFIG_KEYS
from mafka.broker.handler_authz import AdminAuthz
from mafka.broker.topic_configs import (
    ALL_TOPIC_CONFIG_NAMES,
    LIST_TOPIC_CONFIGS,
    broker_synonyms,
    kafka_default,
    log_properties,
)
from mafka.errors import (
    ConfigError,
    ErrorCode,
    InvalidConfigError,
    InvalidRequestError,
    KafkaError,
    UnknownTopicOrPartitionError,
)
from mafka.log.config import LogConfig
from mafka.security.acl import AclOperation, ResourceType

DESCRIBE_CONFIGS = 32
ALTER_CONFIGS = 33
INCREMENTAL_ALTER_CONFIGS = 44

TOPIC = 2
BROKER = 4
BROKER_LOGGER = 8
GROUP = 32

# ConfigSource ids (DescribeConfigsResponse).
DYNAMIC_TOPIC_CONFIG = 1
DYNAMIC_BROKER_CONFIG = 2
DYNAMIC_DEFAULT_BROKER_CONFIG = 3
STATIC_BROKER_CONFIG = 4
DEFAULT_CONFIG = 5
GROUP_CONFIG = 8  # Kafka 4's ConfigSource.GROUP_CONFIG (admin: DYNAMIC_GROUP_CONFIG)

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3

#: Broker configs that may be set dynamically here (Kafka's ``DynamicConfig.Broker``,
#: LONG bytes/s, at least 0); enforcing them is the replica fetcher's.
DYNAMIC_BROKER_CONFIGS = frozenset(
    {
        "leader.replication.throttled.rate",
        "follower.replication.throttled.rate",
        "replica.alter.log.dirs.io.max.bytes.per.second",
    }
)


def _check_dynamic_broker_configs(configs: dict[str, str]) -> None:
    unknown = sorted(set(configs) - DYNAMIC_BROKER_CONFIGS)
    if unknown:
        raise InvalidConfigError(f"Cannot update these configs dynamically: {','.join(unknown)}")
    for name, value in configs.items():
        try:
            ok = int(str(value).strip()) >= 0
        except ValueError:
            ok = False
        if not ok:
            raise InvalidConfigError(
                f"Invalid value {value} for configuration {name}: Value must be at least 0"
            )


def _validate(configs: dict[str, Any]) -> None:
    """Kafka's ``LogConfig.validate`` (the controller's CreateTopics rule)."""
    from mafka.controller.controller import validate_topic_configs

    validate_topic_configs(configs)


def _error(exc: BaseException) -> tuple[int, str | None]:
    if isinstance(exc, KafkaError):
        return int(exc.code), exc.message
    if isinstance(exc, ConfigError):
        return int(ErrorCode.INVALID_CONFIG), str(exc)
    return int(ErrorCode.UNKNOWN_SERVER_ERROR), str(exc)


def handlers(broker: Any) -> dict[int, Any]:
    authz = AdminAuthz(broker)

    def refusal(
        connection: Any, operation: AclOperation, resource: Any, *, loggers: bool = True
    ) -> tuple[int, str | None] | None:
        """(error, message) when *operation* on the config resource is refused, else None.

        Types with no ACL resource (and BROKER_LOGGER unless *loggers*) are
        not checked: they are refused as INVALID_REQUEST later.
        """
        if resource.resource_type == TOPIC:
            if authz.allows(connection, operation, ResourceType.TOPIC, resource.resource_name):
                return None
            code = ErrorCode.TOPIC_AUTHORIZATION_FAILED
        elif resource.resource_type == GROUP:
            if authz.allows(connection, operation, ResourceType.GROUP, resource.resource_name):
                return None
            code = ErrorCode.GROUP_AUTHORIZATION_FAILED
        elif resource.resource_type == BROKER or (loggers and resource.resource_type == BROKER_LOGGER):
            if authz.allows_cluster(connection, operation):
                return None
            code = ErrorCode.CLUSTER_AUTHORIZATION_FAILED
        else:
            return None
        # Kafka: DescribeConfigs answers the error's message, the alters a null one.
        return int(code), code.description if operation is AclOperation.DESCRIBE_CONFIGS else None

    def topic_configs_manager() -> Any:
        return getattr(broker, "topic_configs", None)

    def base_log_config() -> LogConfig:
        manager = topic_configs_manager()
        return manager.base if manager is not None else broker.config.log_config()

    # ------------------------------------------------------------------ describe

    def broker_synonym_entries(name: str) -> list[dict[str, Any]]:
        config = broker.config
        explicit, defaults = [], []
        for key in broker_synonyms(name):
            spec = CONFIG_KEYS.get(key)
            if spec is None:
                continue
            if key in config.explicit_keys:
                value = spec.render(config.get(key))
                if value is not None:
                    explicit.append({"name": key, "value": value, "source": STATIC_BROKER_CONFIG})
            else:
                value = spec.render(spec.default)
                if value is not None:
                    defaults.append({"name": key, "value": value, "source": DEFAULT_CONFIG})
        return explicit + defaults

    def topic_entries(overrides: dict[str, str], keys: list[str] | None, synonyms: bool) -> list[dict[str, Any]]:
        try:
            effective = LogConfig.from_properties(log_properties(overrides), base_log_config()).to_properties()
        except ConfigError:
            effective = base_log_config().to_properties()
        entries = []
        for name in ALL_TOPIC_CONFIG_NAMES:
            if keys is not None and name not in keys:
                continue
            all_synonyms = broker_synonym_entries(name)
            if name in overrides:
                value = overrides[name] if name not in effective else effective[name]
                if name in LIST_TOPIC_CONFIGS:
                    # Kafka shows a LIST as parsed: items trimmed, in the order given.
                    value = _list_value(overrides[name])
                all_synonyms.insert(0, {"name": name, "value": value, "source": DYNAMIC_TOPIC_CONFIG})
            elif name in effective:
                value = effective[name]
            elif all_synonyms:
                value = all_synonyms[0]["value"]
            else:
                value = kafka_default(name)
            entries.append(
                {
                    "name": name,
                    "value": value,
                    "read_only": False,
                    "config_source": all_synonyms[0]["source"] if all_synonyms else DEFAULT_CONFIG,
                    "is_sensitive": False,
                    "synonyms": all_synonyms if synonyms else [],
                }
            )
        return entries

    def broker_entries(keys: list[str] | None, synonyms: bool) -> list[dict[str, Any]]:
        config = broker.config
        entries = []
        for name, spec in CONFIG_KEYS.items():
            if keys is not None and name not in keys:
                continue
            sensitive = "password" in name
            value = None if sensitive else spec.render(getattr(config, spec.attr))
            source = STATIC_BROKER_CONFIG if name in config.explicit_keys else DEFAULT_CONFIG
            entries.append(
                {
                    "name": name,
                    "value": value,
                    "read_only": True,
                    "config_source": source,
                    "is_sensitive": sensitive,
                    "synonyms": [{"name": name, "value": value, "source": source}] if synonyms else [],
                }
            )
        return entries

    @defer.inlineCallbacks
    def dynamic_broker_entries(keys: list[str] | None, synonyms: bool) -> Any:
        own = yield broker.zk.get_broker_config(broker.broker_id)
        default = yield broker.zk.get_broker_config(None)
        entries = []
        for name in sorted(DYNAMIC_BROKER_CONFIGS):
            if keys is not None and name not in keys:
                continue
            found = [
                {"name": name, "value": values[name], "source": source}
                for values, source in ((own, DYNAMIC_BROKER_CONFIG), (default, DYNAMIC_DEFAULT_BROKER_CONFIG))
                if name in values
            ]
            if not found:
                continue
            entries.append(
                {
                    "name": name,
                    "value": found[0]["value"],
                    "read_only": False,
                    "config_source": found[0]["source"],
                    "is_sensitive": False,
                    "synonyms": found if synonyms else [],
                }
            )
        return entries

    def broker_resource_id(name: str) -> int | None:
        """Kafka's ``getBrokerId``: None for "" (the default), else it must be this broker."""
        if name == "":
            return None
        try:
            broker_id = int(name)
        except ValueError:
            broker_id = None
        if broker_id != broker.broker_id:
            raise InvalidRequestError(
                f"Unexpected broker id, expected {broker.broker_id} or empty string, but received {name}"
            )
        return broker_id

    @defer.inlineCallbacks
    def alter_broker(resource: Any, validate_only: bool, incremental: bool) -> Any:
        broker_id = broker_resource_id(resource.resource_name)
        if not incremental:
            new = {c.name: c.value for c in resource.configs}
        else:
            _reject_duplicate_keys(resource.configs)
            new = _apply_incremental(dict((yield broker.zk.get_broker_config(broker_id))), resource.configs)
        nulls = [k for k, v in new.items() if v is None]
        if nulls:
            raise InvalidRequestError(f"Null value not supported for : {','.join(nulls)}")
        _check_dynamic_broker_configs(new)
        if not validate_only:
            yield broker.zk.set_broker_config(broker_id, {k: str(v).strip() for k, v in new.items()})

    def group_entries(overrides: dict[str, str], keys: list[str] | None, synonyms: bool) -> list[dict[str, Any]]:
        """Kafka's ``ConfigHelper.createGroupConfigEntry`` for every known group config."""
        entries = []
        for name in group_configs.GROUP_CONFIG_NAMES:
            if keys is not None and name not in keys:
                continue
            synonym = group_configs.GROUP_CONFIGS[name].synonym
            found = (
                broker_config_synonym_entries(synonym)
                if synonym is not None
                else [{"name": name, "value": group_configs.default_value(name, broker.config),
                       "source": DEFAULT_CONFIG}]
            )
            if name in overrides:
                value = overrides[name].strip()  # shown as parsed: ConfigDef trims
                found.insert(0, {"name": name, "value": value, "source": GROUP_CONFIG})
            entries.append(
                {
                    "name": name,
                    "value": found[0]["value"] if found else group_configs.default_value(name, broker.config),
                    "read_only": False,
                    "config_source": found[0]["source"] if found else DEFAULT_CONFIG,
                    "is_sensitive": False,
                    "synonyms": found if synonyms else [],
                }
            )
        return entries

    def broker_config_synonym_entries(key: str) -> list[dict[str, Any]]:
        """The broker config *key* as one synonym: STATIC_BROKER_CONFIG when set, else DEFAULT_CONFIG."""
        spec = CONFIG_KEYS.get(key)
        if spec is None:
            return []
        config = broker.config
        if key in config.explicit_keys:
            value = spec.render(config.get(key))
            source = STATIC_BROKER_CONFIG
        else:
            value = spec.render(spec.default)
            source = DEFAULT_CONFIG
        return [] if value is None else [{"name": key, "value": value, "source": source}]

    def group_name(resource: Any) -> str:
        name = resource.resource_name
        if not name:
            raise InvalidRequestError("Group name must not be empty")
        return str(name)

    @defer.inlineCallbacks
    def describe_one(resource: Any, synonyms: bool) -> Any:
        keys = None if resource.configuration_keys is None else list(resource.configuration_keys)
        if resource.resource_type == GROUP:
            group = group_name(resource)
            cache = getattr(broker, "group_configs", None)
            if cache is not None:
                # Kafka 4 describes from the broker's own metadata image: what this broker applies.
                overrides = cache.get(group)
            else:
                overrides = yield broker.zk.get_entity_config(
                    group_configs.GROUP_ENTITY_TYPE, group_configs.group_entity_name(group)
                )
            return group_entries(dict(overrides), keys, synonyms)
        if resource.resource_type == TOPIC:
            topic = resource.resource_name
            if not (yield broker.zk.topic_exists(topic)):
                raise UnknownTopicOrPartitionError(f"Topic {topic} does not exist.")
            overrides = yield broker.zk.get_topic_config(topic)
            return topic_entries(dict(overrides), keys, synonyms)
        if resource.resource_type == BROKER:
            name = resource.resource_name
            if name == "":
                # Kafka's ConfigHelper: the cluster default is described by its dynamic defaults only.
                default = yield broker.zk.get_broker_config(None)
                return [
                    {"name": key, "value": value, "read_only": False,
                     "config_source": DYNAMIC_DEFAULT_BROKER_CONFIG, "is_sensitive": False,
                     "synonyms": [{"name": key, "value": value, "source": DYNAMIC_DEFAULT_BROKER_CONFIG}]
                     if synonyms else []}
                    for key, value in sorted(default.items()) if keys is None or key in keys
                ]
            try:
                broker_id = int(name)
            except ValueError:
                broker_id = None
            if broker_id != broker.broker_id:
                raise InvalidRequestError(
                    f"Unexpected broker id, expected {broker.broker_id} or empty string, but received {name}"
                )
            dynamic = yield dynamic_broker_entries(keys, synonyms)
            return broker_entries(keys, synonyms) + dynamic
        raise InvalidRequestError(f"Unsupported resource type: {resource.resource_type}")

    @defer.inlineCallbacks
    def describe_configs(request: Any, connection: Any) -> Any:
        body = request.body
        synonyms = bool(getattr(body, "include_synonyms", False))
        results = []
        for resource in body.resources:
            refused = refusal(connection, AclOperation.DESCRIBE_CONFIGS, resource)
            if refused is not None:
                configs, (code, message) = [], refused
            else:
                try:
                    configs = yield describe_one(resource, synonyms)
                    code, message = int(ErrorCode.NONE), None
                except Exception as exc:  # noqa: BLE001 - reported per resource
                    configs = []
                    code, message = _error(exc)
            results.append(
                {
                    "error_code": code,
                    "error_message": message,
                    "resource_type": resource.resource_type,
                    "resource_name": resource.resource_name,
                    "configs": configs,
                }
            )
        return {"throttle_time_ms": 0, "results": results}

    # ------------------------------------------------------------------ alter

    @defer.inlineCallbacks
    def write_topic(topic: str, new: dict[str, Any], validate_only: bool) -> Any:
        _validate(new)
        if not validate_only:
            yield broker.zk.set_topic_config(topic, {k: str(v) for k, v in new.items()})

    def check_resource(resource: Any, api: str) -> None:
        if resource.resource_type != TOPIC:
            raise InvalidRequestError(
                f"{api} is only supported for topics and brokers, but resource type is {resource.resource_type}"
            )

    @defer.inlineCallbacks
    def require_topic(topic: str) -> Any:
        if not (yield broker.zk.topic_exists(topic)):
            raise UnknownTopicOrPartitionError(f"Topic {topic} does not exist.")

    @defer.inlineCallbacks
    def alter_group(resource: Any, validate_only: bool, incremental: bool) -> Any:
        """Replaces (AlterConfigs) or edits (IncrementalAlterConfigs) a group's overrides."""
        group = group_name(resource)
        entity = group_configs.group_entity_name(group)
        if not incremental:
            new = {c.name: c.value for c in resource.configs}
            nulls = [k for k, v in new.items() if v is None]
            if nulls:
                raise InvalidRequestError(f"Null value not supported for : {','.join(nulls)}")
        else:
            _reject_duplicate_keys(resource.configs)
            current = yield broker.zk.get_entity_config(group_configs.GROUP_ENTITY_TYPE, entity)
            new = _apply_incremental(dict(current), resource.configs)
        group_configs.validate_group_config(new, broker.config)
        if not validate_only:
            yield broker.zk.set_entity_config(
                group_configs.GROUP_ENTITY_TYPE, entity, {k: str(v) for k, v in new.items()}
            )

    @defer.inlineCallbacks
    def alter_one(resource: Any, validate_only: bool) -> Any:
        if resource.resource_type == BROKER:
            yield alter_broker(resource, validate_only, incremental=False)
            return
        if resource.resource_type == GROUP:
            yield alter_group(resource, validate_only, incremental=False)
            return
        check_resource(resource, "AlterConfigs")
        yield require_topic(resource.resource_name)
        new = {c.name: c.value for c in resource.configs}
        yield write_topic(resource.resource_name, new, validate_only)

    @defer.inlineCallbacks
    def incremental_one(resource: Any, validate_only: bool) -> Any:
        if resource.resource_type == BROKER:
            yield alter_broker(resource, validate_only, incremental=True)
            return
        if resource.resource_type == GROUP:
            yield alter_group(resource, validate_only, incremental=True)
            return
        check_resource(resource, "IncrementalAlterConfigs")
        _reject_duplicate_keys(resource.configs)
        topic = resource.resource_name
        yield require_topic(topic)
        current = _apply_incremental(
            dict((yield broker.zk.get_topic_config(topic))), resource.configs, LIST_TOPIC_CONFIGS, ALL_TOPIC_CONFIG_NAMES
        )
        yield write_topic(topic, current, validate_only)

    def alter_handler(one: Any, loggers: bool) -> Any:
        """An alter API's handler over *one* resource's alteration; *loggers*: BROKER_LOGGER is checked on the cluster."""
        @defer.inlineCallbacks
        def handle(request: Any, connection: Any) -> Any:
            body = request.body
            responses = []
            for resource in body.resources:
                refused = refusal(connection, AclOperation.ALTER_CONFIGS, resource, loggers=loggers)
                if refused is not None:
                    code, message = refused
                else:
                    try:
                        yield one(resource, bool(body.validate_only))
                        code, message = int(ErrorCode.NONE), None
                    except Exception as exc:  # noqa: BLE001 - reported per resource
                        code, message = _error(exc)
                responses.append(
                    {
                        "error_code": code,
                        "error_message": message,
                        "resource_type": resource.resource_type,
                        "resource_name": resource.resource_name,
                    }
                )
            return {"throttle_time_ms": 0, "responses": responses}

        return handle

    return {
        DESCRIBE_CONFIGS: describe_configs,
        ALTER_CONFIGS: alter_handler(alter_one, loggers=False),
        INCREMENTAL_ALTER_CONFIGS: alter_handler(incremental_one, loggers=True),
    }


def _list_value(value: str) -> str:
    """A LIST config's value as Kafka parses and prints it (``ConfigDef.parseType``, then joined by ",")."""
    value = value.strip()
    return ",".join(re.split(r"\s*,\s*", value)) if value else ""


def _reject_duplicate_keys(configs: Any) -> None:
    names = [c.name for c in configs]
    if len(names) != len(set(names)):
        raise InvalidRequestError("Error due to duplicate config keys")


def _apply_incremental(
    current: dict[str, Any], configs: Any, list_configs: frozenset[str] = frozenset(), known: Any = None
) -> dict[str, Any]:
    """IncrementalAlterConfigs' SET / DELETE / APPEND / SUBTRACT applied to *current* (returned, changed in place).

    APPEND and SUBTRACT work on comma-separated lists (starting from
    Kafka's default when unset) and are INVALID_CONFIG for keys outside
    *list_configs* (Kafka's non-LIST configs); with *known* given, other
    names are INVALID_CONFIG (topic configs).  A null value is
    INVALID_REQUEST except for DELETE.
    """
    nulls = [c.name for c in configs if c.value is None and c.config_operation != DELETE]
    if nulls:
        raise InvalidRequestError(f"Null value not supported for : {','.join(nulls)}")
    for c in configs:
        if known is not None and c.name not in known:
            raise InvalidConfigError(f"Unknown topic config name: {c.name}")
        op = c.config_operation
        if op == SET:
            current[c.name] = c.value
        elif op == DELETE:
            current.pop(c.name, None)
        elif op in (APPEND, SUBTRACT):
            if c.name not in list_configs:
                verb = "append" if op == APPEND else "subtract"
                raise InvalidConfigError(f"Config value {verb} is not allowed for config key: {c.name}")
            old = current.get(c.name, kafka_default(c.name))
            old_items = [v for v in old.split(",") if v] if old else []
            items = [v for v in c.value.split(",") if v]
            if op == APPEND:
                merged = old_items + [v for v in items if v not in old_items]
            else:
                merged = [v for v in old_items if v not in items]
            current[c.name] = ",".join(merged)
        else:
            raise InvalidRequestError(f"Unknown alter config operation {op} for config key: {c.name}")
    return current
