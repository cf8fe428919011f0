"""Dynamic topic configs on every broker (Kafka 2.8 ``DynamicConfigManager`` + ``TopicConfigHandler``).

:class:`TopicConfigManager` keeps each topic's overrides (``/config/topics/<t>``)
in memory: all of them at startup, then those announced under
``/config/changes/config_change_N`` (notifications whose sequence number is
above the last one handled; ``topics/<t>`` entity paths re-read the topic's
znode).  New topics (children of ``/brokers/topics``) have their config read
too, since creating a topic posts no notification.

It also knows the topic configs Kafka describes, their broker synonyms
(``LogConfig.TopicConfigSynonyms`` / ``DynamicBrokerConfig.brokerConfigSynonyms``)
and how to apply a new :class:`LogConfig` to open logs.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping
from typing import Any

from twisted.internet import defer

from mafka.broker.config import CONFIG_KEYS, LOG_CONFIG_SYNONYMS
from mafka.coordination.znodes import ConfigChangeNotificationZNode
from mafka.errors import ConfigError
from mafka.log.config import TOPIC_CONFIG_NAMES, LogConfig

__all__ = [
    "ALL_TOPIC_CONFIG_NAMES",
    "LIST_TOPIC_CONFIGS",
    "TopicConfigManager",
    "apply_log_config",
    "broker_synonyms",
    "kafka_default",
]

log = logging.getLogger("mafka.broker.topic_configs")

#: Topic configs Kafka 2.8 knows that LogConfig does not model (value shown from the broker's synonym).
_EXTRA_TOPIC_CONFIGS: tuple[str, ...] = (
    "min.insync.replicas",
    "unclean.leader.election.enable",
    "compression.type",
    "message.downconversion.enable",
    "message.format.version",
    "leader.replication.throttled.replicas",
    "follower.replication.throttled.replicas",
)
#: Every topic config name DescribeConfigs lists, sorted as Kafka's ``LogConfig.configNames``.
ALL_TOPIC_CONFIG_NAMES: tuple[str, ...] = tuple(sorted(set(TOPIC_CONFIG_NAMES) | set(_EXTRA_TOPIC_CONFIGS)))
#: Topic configs of type LIST (IncrementalAlterConfigs APPEND/SUBTRACT).
LIST_TOPIC_CONFIGS: frozenset[str] = frozenset(
    {"cleanup.policy", "leader.replication.throttled.replicas", "follower.replication.throttled.replicas"}
)
#: Kafka's defaults of the configs LogConfig does not model (no broker synonym).
_EXTRA_DEFAULTS = {"leader.replication.throttled.replicas": "", "follower.replication.throttled.replicas": ""}

#: Broker keys that feed a topic config, highest precedence first (``brokerConfigSynonyms``).
_MULTI_SYNONYMS = {
    "segment.ms": ("log.roll.ms", "log.roll.hours"),
    "segment.jitter.ms": ("log.roll.jitter.ms", "log.roll.jitter.hours"),
    "flush.ms": ("log.flush.interval.ms", "log.flush.scheduler.interval.ms"),
    "retention.ms": ("log.retention.ms", "log.retention.minutes", "log.retention.hours"),
}


def broker_synonyms(name: str) -> tuple[str, ...]:
    """The broker keys behind topic config *name*, highest precedence first (empty if none)."""
    if name in _MULTI_SYNONYMS:
        return _MULTI_SYNONYMS[name]
    key = LOG_CONFIG_SYNONYMS.get(name)
    return (key,) if key else ()


def kafka_default(name: str) -> str:
    """Kafka's own default of topic config *name* as a string ("" if it has none)."""
    if name in TOPIC_CONFIG_NAMES:
        return LogConfig().to_properties()[name]
    for key in broker_synonyms(name):
        spec = CONFIG_KEYS.get(key)
        if spec is not None:
            text = spec.render(spec.default) if hasattr(spec, "default") else None
            if text is not None:
                return text
    return _EXTRA_DEFAULTS.get(name, "")


def log_properties(overrides: Mapping[str, str]) -> dict[str, str]:
    """The overrides LogConfig models (the others belong to other layers)."""
    return {k: v for k, v in overrides.items() if k in TOPIC_CONFIG_NAMES}


def apply_log_config(log_: Any, config: LogConfig) -> None:
    """Gives an open log its new config (retention, segment and size settings take effect at once)."""
    log_.update_config(config)


class TopicConfigManager:
    """Topic config overrides, kept current from ZooKeeper.

    Args:
        zk: a :class:`~mafka.coordination.kafka_zk.KafkaZkClient`.
        broker_config: the :class:`~mafka.broker.config.BrokerConfig` (its ``log_config()`` is the base).
        on_change: ``(topic) -> None`` after a topic's overrides changed (not for the startup load).
    """

    def __init__(self, zk: Any, broker_config: Any, on_change: Callable[[str], None] | None = None) -> None:
        self.zk = zk
        self.broker_config = broker_config
        self.on_change = on_change
        #: called with the entity path of a ``users/…``, ``clients/…`` or ``groups/…`` notification (may return a Deferred)
        self.on_entity_change: Callable[[str], Any] | None = None
        self.overrides: dict[str, dict[str, str]] = {}
        #: This broker's dynamic configs: ``/config/brokers/<default>`` overlaid by ``/config/brokers/<id>``.
        self.broker_overrides: dict[str, str] = {}
        self.last_seq = -1
        self._base: LogConfig | None = None
        self._cache: dict[str, LogConfig] = {}
        self._watches: list[Any] = []
        self._busy = False
        self._again = False

    # ------------------------------------------------------------------ reads

    @property
    def base(self) -> LogConfig:
        if self._base is None:
            self._base = self.broker_config.log_config()
        return self._base

    def log_config(self, topic: str) -> LogConfig:
        """Broker defaults overridden by the topic's keys (defaults alone if an override is invalid)."""
        cached = self._cache.get(topic)
        if cached is not None:
            return cached
        props = log_properties(self.overrides.get(topic, {}))
        try:
            config = LogConfig.from_properties(props, self.base) if props else self.base
        except ConfigError as exc:
            log.warning("ignoring invalid config of topic %s: %s", topic, exc)
            config = self.base
        self._cache[topic] = config
        return config

    # ------------------------------------------------------------------ lifecycle

    @defer.inlineCallbacks
    def load(self) -> Any:
        """Reads every topic's overrides; later notifications (above the current last one) are processed by :meth:`start`."""
        names = yield self.zk.get_config_change_notifications()
        if names:
            self.last_seq = max(_seq(n) for n in names)
        topics = yield self.zk.get_topics()
        for topic in topics:
            self._set(topic, (yield self.zk.get_topic_config(topic)), notify=False)
        yield self._load_broker_overrides()

    @defer.inlineCallbacks
    def _load_broker_overrides(self) -> Any:
        get = getattr(self.zk, "get_broker_config", None)
        if get is None:
            return
        merged = dict((yield get(None)))
        merged.update((yield get(self.broker_config.broker_id)))
        if merged != self.broker_overrides:
            log.info("dynamic broker config now %s", merged)
        self.broker_overrides = merged

    def start(self) -> None:
        """Watches ``/config/changes`` and ``/brokers/topics``."""
        self._watches.append(self.zk.watch_config_changes(self._changed))
        self._watches.append(self.zk.watch_topics(self._changed))
        self._changed()  # anything that changed between load() and now

    def stop(self) -> None:
        for w in self._watches:
            w.cancel()
        self._watches.clear()

    @defer.inlineCallbacks
    def ensure(self, topics: Any) -> Any:
        """Reads the overrides of the *topics* not known yet; fires when all are known.

        Kafka reads a topic's config from ZooKeeper when it creates the
        topic's log; the watch on ``/brokers/topics`` may fire after the
        controller's LeaderAndIsr arrives, so log creation asks first.
        """
        for topic in topics:
            if topic not in self.overrides:
                self._set(topic, (yield self.zk.get_topic_config(topic)))

    # ------------------------------------------------------------------ updates

    def _changed(self) -> None:
        if self._busy:
            self._again = True
            return
        self._busy = True
        self.process().addErrback(lambda f: log.warning("config change processing failed: %s", f.getErrorMessage())).addBoth(
            self._done
        )

    def _done(self, _: Any) -> None:
        self._busy = False
        if self._again:
            self._again = False
            self._changed()

    @defer.inlineCallbacks
    def process(self) -> Any:
        """Handles new notifications, new topics and deleted topics."""
        names = yield self.zk.get_config_change_notifications()
        for name in sorted(names, key=_seq):
            seq = _seq(name)
            if seq <= self.last_seq:
                continue
            try:
                data, _ = yield self.zk.store.get(f"{ConfigChangeNotificationZNode.PATH}/{name}")
                entity = ConfigChangeNotificationZNode.decode(data)
            except Exception as exc:  # noqa: BLE001 - a vanished or garbage notification is skipped (as Kafka)
                log.info("skipping config notification %s: %s", name, exc)
                entity = ""
            self.last_seq = seq
            kind, _, topic = entity.partition("/")
            if kind == "topics" and topic:
                self._set(topic, (yield self.zk.get_topic_config(topic)))
            elif kind == "brokers":
                yield self._load_broker_overrides()
            elif kind in ("users", "clients", "groups") and self.on_entity_change is not None:
                try:
                    yield self.on_entity_change(entity)
                except Exception:  # noqa: BLE001 - one failing listener must not stop processing
                    log.exception("applying config of %s", entity)
        topics = set((yield self.zk.get_topics()))
        for topic in topics - set(self.overrides):
            self._set(topic, (yield self.zk.get_topic_config(topic)))
        for topic in set(self.overrides) - topics:
            del self.overrides[topic]
            self._cache.pop(topic, None)

    def _set(self, topic: str, config: Mapping[str, str], notify: bool = True) -> None:
        new = dict(config)
        changed = self.overrides.get(topic) != new
        self.overrides[topic] = new
        self._cache.pop(topic, None)
        if changed and notify:
            log.info("topic %s config overrides now %s", topic, new)
            if self.on_change is not None:
                try:
                    self.on_change(topic)
                except Exception:  # noqa: BLE001 - one failing listener must not stop processing
                    log.exception("applying config of topic %s", topic)


def _seq(name: str) -> int:
    try:
        return int(name.rsplit("_", 1)[-1])
    except ValueError:
        return -1
