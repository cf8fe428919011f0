"""Kafka 4's group configs (KIP-848 / KIP-932 ``ConfigResource`` type GROUP) on a ZooKeeper cluster.

Kafka 4 keeps a group's config overrides in its KRaft metadata; Mafka keeps
them as Kafka 2.8 keeps every other entity's dynamic config:
``/config/groups/<sanitized group>`` holds ``{"version":1,"config":{…}}``
and every change is announced by a ``/config/changes/config_change_N``
notification whose entity path is ``groups/<sanitized group>``.  The group
id is sanitized as user names are (Kafka's ``Sanitizer``: URL-encoding), so
a group id with ``/`` or other characters a znode name cannot hold is stored
safely.

Owns:

* the group configs Mafka knows (:data:`GROUP_CONFIGS`, a subset of Kafka
  4.4's ``GroupConfig.CONFIG_DEF``), their broker synonyms and the broker
  bounds they are validated against;
* :func:`validate_group_config` — Kafka's ``GroupConfig.validate``: unknown
  names, unparsable values, ``ConfigDef`` validators, the broker's
  ``group.consumer.min/max.*`` / ``group.share.min/max.*`` bounds, and the
  session-timeout > heartbeat-interval rule, each an
  :class:`~mafka.errors.InvalidConfigError` with Kafka's message;
* :class:`GroupConfigCache` — every broker's in-memory copy of the overrides,
  loaded at start-up and re-read on a ``groups/…`` notification
  (``broker.group_configs.get(group_id)``).

``share.auto.offset.reset`` accepts ``earliest`` and ``latest`` (any case,
as Kafka); Kafka 4.2's ``by_duration:<ISO-8601>`` is refused as
INVALID_CONFIG because Mafka's share-partitions cannot start at a time yet.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from twisted.internet import defer

from mafka.broker.scram import desanitize, sanitize
from mafka.errors import InvalidConfigError

__all__ = [
    "GROUP_CONFIGS",
    "GROUP_CONFIG_NAMES",
    "GROUP_ENTITY_TYPE",
    "GroupConfigCache",
    "GroupConfigKey",
    "default_value",
    "group_entity_path",
    "group_entity_name",
    "share_settings_overrides",
    "validate_group_config",
]

log = logging.getLogger("mafka.broker.group_configs")

#: The child of ``/config`` holding group entities (Kafka's ``ConfigType.GROUP``, "groups").
GROUP_ENTITY_TYPE = "groups"

_INT_MAX = 2**31 - 1


@dataclass(frozen=True)
class GroupConfigKey:
    """One group config: its type, ``ConfigDef`` validator, broker synonym and broker bounds.

    ``synonym`` is the broker config whose value is the default (Kafka's
    ``GroupConfig.ALL_GROUP_CONFIG_SYNONYMS``); ``fixed_default`` the default
    of a config without one.  ``bounds`` names the broker configs of the
    inclusive range an override must fall in, with Kafka's defaults for
    bounds Mafka's broker config does not model.
    """

    name: str
    type: str  # "INT" or "STRING"
    synonym: str | None = None
    fixed_default: str | None = None
    at_least: int | None = None
    one_of: tuple[str, ...] = ()
    bounds: tuple[tuple[str, int], tuple[str, int]] | None = None


GROUP_CONFIGS: Mapping[str, GroupConfigKey] = {
    k.name: k
    for k in (
        GroupConfigKey(
            "consumer.heartbeat.interval.ms", "INT", synonym="group.consumer.heartbeat.interval.ms", at_least=1,
            bounds=(("group.consumer.min.heartbeat.interval.ms", 5000), ("group.consumer.max.heartbeat.interval.ms", 15000)),
        ),
        GroupConfigKey(
            "consumer.session.timeout.ms", "INT", synonym="group.consumer.session.timeout.ms", at_least=1,
            bounds=(("group.consumer.min.session.timeout.ms", 45000), ("group.consumer.max.session.timeout.ms", 60000)),
        ),
        GroupConfigKey("share.auto.offset.reset", "STRING", fixed_default="latest"),
        GroupConfigKey(
            "share.delivery.count.limit", "INT", synonym="group.share.delivery.count.limit", at_least=2,
            bounds=(("group.share.min.delivery.count.limit", 2), ("group.share.max.delivery.count.limit", 10)),
        ),
        GroupConfigKey(
            "share.heartbeat.interval.ms", "INT", synonym="group.share.heartbeat.interval.ms", at_least=1,
            bounds=(("group.share.min.heartbeat.interval.ms", 5000), ("group.share.max.heartbeat.interval.ms", 15000)),
        ),
        GroupConfigKey(
            "share.isolation.level", "STRING", fixed_default="read_uncommitted",
            one_of=("read_committed", "read_uncommitted"),
        ),
        GroupConfigKey(
            "share.partition.max.record.locks", "INT", synonym="group.share.partition.max.record.locks", at_least=100,
            bounds=(
                ("group.share.min.partition.max.record.locks", 100),
                ("group.share.max.partition.max.record.locks", 4000),
            ),
        ),
        GroupConfigKey(
            "share.record.lock.duration.ms", "INT", synonym="group.share.record.lock.duration.ms", at_least=1000,
            bounds=(
                ("group.share.min.record.lock.duration.ms", 15000),
                ("group.share.max.record.lock.duration.ms", 60000),
            ),
        ),
        GroupConfigKey(
            "share.session.timeout.ms", "INT", synonym="group.share.session.timeout.ms", at_least=1,
            bounds=(("group.share.min.session.timeout.ms", 45000), ("group.share.max.session.timeout.ms", 60000)),
        ),
    )
}
#: Every group config DescribeConfigs lists, sorted.
GROUP_CONFIG_NAMES: tuple[str, ...] = tuple(sorted(GROUP_CONFIGS))

#: (session key, heartbeat key): Kafka's ``validateSessionExceedsHeartbeat`` pairs.
_SESSION_HEARTBEAT = (
    ("consumer.session.timeout.ms", "consumer.heartbeat.interval.ms"),
    ("share.session.timeout.ms", "share.heartbeat.interval.ms"),
)


def _broker_value(broker_config: Any, key: str, fallback: int | str | None = None) -> Any:
    """Broker config *key* (``group.x.y`` read as attribute ``group_x_y``), else *fallback*."""
    return getattr(broker_config, key.replace(".", "_"), fallback)


def default_value(name: str, broker_config: Any) -> str:
    """Group config *name*'s value without an override: its broker synonym's, else Kafka's default."""
    key = GROUP_CONFIGS[name]
    if key.synonym is not None:
        value = _broker_value(broker_config, key.synonym)
        if value is not None:
            return str(value)
    return key.fixed_default or ""


def group_entity_name(group_id: str) -> str:
    """The znode name of *group_id* under ``/config/groups`` (Kafka's ``Sanitizer.sanitize``)."""
    return sanitize(group_id)


def group_entity_path(group_id: str) -> str:
    """The entity path a change notification announces: ``groups/<sanitized group>``."""
    return f"{GROUP_ENTITY_TYPE}/{group_entity_name(group_id)}"


def _invalid(name: str, value: object, why: str) -> InvalidConfigError:
    # Kafka's ConfigException(name, value, message) text.
    return InvalidConfigError(f"Invalid value {value} for configuration {name}: {why}")


def _parse(key: GroupConfigKey, value: str) -> int | str:
    """``ConfigDef.parseType`` then the key's validator (Kafka's messages)."""
    if key.type == "INT":
        try:
            number = int(value.strip())
        except ValueError:
            raise _invalid(key.name, value, "Not a number of type INT") from None
        if not -(2**31) <= number <= _INT_MAX:
            raise _invalid(key.name, value, "Not a number of type INT")
        if key.at_least is not None and number < key.at_least:
            raise _invalid(key.name, number, f"Value must be at least {key.at_least}")
        return number
    text = value.strip()  # ConfigDef trims STRING values
    if key.one_of and text not in key.one_of:
        raise _invalid(key.name, text, f"String must be one of: {', '.join(key.one_of)}")
    if key.name == "share.auto.offset.reset":
        _check_auto_offset_reset(text)
    return text


def _check_auto_offset_reset(text: str) -> None:
    name = "share.auto.offset.reset"
    kind = text.split(":", 1)[0].lower()
    if kind == "by_duration":
        raise _invalid(name, text, "by_duration is not supported by Mafka's share groups; use 'earliest' or 'latest'")
    if kind not in ("earliest", "latest") or ":" in text:
        raise _invalid(
            name, text,
            f"Invalid value `{text}` for configuration {name}. "
            "The value must be either 'earliest', 'latest' or of the format 'by_duration:<PnDTnHnMn.nS>'.",
        )


def validate_group_config(configs: Mapping[str, str | None], broker_config: Any) -> dict[str, int | str]:
    """Kafka 4.4's ``GroupConfig.validate`` of a group's whole new override set.

    Returns the parsed values.  Raises :class:`~mafka.errors.InvalidConfigError`
    for an unknown name ("Unknown group config name: x"), a value that does
    not parse or fails its validator, a value outside the broker's bounds
    ("x must be in the range a to b inclusive.") or a session timeout not
    above its heartbeat interval (override or broker default).
    """
    for name in configs:
        if name not in GROUP_CONFIGS:
            raise InvalidConfigError(f"Unknown group config name: {name}")
    parsed: dict[str, int | str] = {}
    for name, raw in configs.items():
        if raw is None:
            continue
        parsed[name] = _parse(GROUP_CONFIGS[name], str(raw))
    for name, value in parsed.items():
        bounds = GROUP_CONFIGS[name].bounds
        if bounds is None:
            continue
        (min_key, min_default), (max_key, max_default) = bounds
        low = int(_broker_value(broker_config, min_key, min_default))
        high = int(_broker_value(broker_config, max_key, max_default))
        assert isinstance(value, int)
        if not low <= value <= high:
            raise InvalidConfigError(f"{name} must be in the range {low} to {high} inclusive.")
    for session_key, heartbeat_key in _SESSION_HEARTBEAT:
        if session_key in parsed or heartbeat_key in parsed:
            session = parsed.get(session_key, int(default_value(session_key, broker_config)))
            heartbeat = parsed.get(heartbeat_key, int(default_value(heartbeat_key, broker_config)))
            if int(session) <= int(heartbeat):
                raise InvalidConfigError(f"{session_key} must be greater than {heartbeat_key}")
    return parsed


#: Group config → the :class:`~mafka.group.share.partition_manager.ShareGroupSettings` field it sets.
_SHARE_SETTINGS = {
    "share.record.lock.duration.ms": "record_lock_duration_ms",
    "share.delivery.count.limit": "delivery_count_limit",
    "share.partition.max.record.locks": "max_record_locks",
    "share.auto.offset.reset": "auto_offset_reset",
    "share.isolation.level": "isolation_level",
}


def share_settings_overrides(overrides: Mapping[str, str], broker_config: Any) -> dict[str, Any]:
    """The ``ShareGroupSettings`` fields a group's overrides set (keyword arguments for ``dataclasses.replace``).

    ``share.auto.offset.reset`` is lower-cased, ``share.isolation.level``
    becomes 0 (read_uncommitted) or 1 (read_committed).  Overrides are
    validated when written; one that no longer validates (the broker's
    bounds changed, or the znode was written by hand) is logged and ignored,
    so the broker's own setting applies.
    """
    out: dict[str, Any] = {}
    for name, field_name in _SHARE_SETTINGS.items():
        if name not in overrides:
            continue
        try:
            value = validate_group_config({name: overrides[name]}, broker_config)[name]
        except InvalidConfigError as exc:
            log.warning("ignoring group config override %s=%r: %s", name, overrides[name], exc.message)
            continue
        if name == "share.auto.offset.reset":
            value = str(value).lower()
        elif name == "share.isolation.level":
            value = 1 if value == "read_committed" else 0
        out[field_name] = value
    return out


class GroupConfigCache:
    """Every group's config overrides (``/config/groups/<g>``), by group id, kept current.

    Kafka's ``GroupConfigManager`` fed by the config-change notifications:
    :meth:`load` reads every group entity at start-up, :meth:`changed` re-reads
    the group a ``groups/<g>`` notification names (the broker's
    :class:`~mafka.broker.topic_configs.TopicConfigManager` processes the
    notifications).  :meth:`get` is a dict read, safe on any path.

    Args:
        zk: the broker's :class:`~mafka.coordination.kafka_zk.client.KafkaZkClient`.
        on_change: called with ``(group_id, overrides)`` after a group was re-read.
    """

    def __init__(self, zk: Any, on_change: Callable[[str, Mapping[str, str]], None] | None = None) -> None:
        self.zk = zk
        self.on_change = on_change
        self._groups: dict[str, dict[str, str]] = {}

    def get(self, group_id: str) -> dict[str, str]:
        """The group's overrides (a copy; ``{}`` when it has none)."""
        return dict(self._groups.get(group_id, {}))

    @defer.inlineCallbacks
    def load(self) -> Any:
        """Reads every group entity."""
        names = yield self.zk.get_all_entities_with_config(GROUP_ENTITY_TYPE)
        for name in names:
            yield self._read(name, notify=False)

    @defer.inlineCallbacks
    def changed(self, entity_path: str) -> Any:
        """Re-reads the group of a ``groups/<g>`` notification; other entity paths are ignored."""
        kind, _, name = entity_path.partition("/")
        if kind == GROUP_ENTITY_TYPE and name and "/" not in name:
            yield self._read(name, notify=True)

    @defer.inlineCallbacks
    def _read(self, sanitized: str, notify: bool) -> Any:
        config = dict((yield self.zk.get_entity_config(GROUP_ENTITY_TYPE, sanitized)))
        group_id = desanitize(sanitized)
        if config:
            self._groups[group_id] = config
        else:
            self._groups.pop(group_id, None)
        if notify:
            log.info("group %s config overrides now %s", group_id, config)
            if self.on_change is not None:
                self.on_change(group_id, config)
