"""Dynamic configs in ZooKeeper: ``/config/<type>/<name>`` and the ``/config/changes`` notifications.

Owns :class:`ConfigZk` — reading and writing an entity's config overrides
(topics, brokers and the cluster default, any entity type), announcing
changes as ``config_change_<seq>`` nodes as ``AdminZkClient`` does, and the
config-change watch.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from twisted.internet.defer import Deferred

from mafka.coordination.kafka_zk.core import ZkFamily, _deferred
from mafka.coordination.store import NodeExistsError, NoNodeError, WatchCallback, WatchHandle
from mafka.coordination.znodes.config import (
    CONFIG_PATH,
    ConfigChangeNotificationZNode,
    ConfigEntityZNode,
    ConfigType,
)
from mafka.coordination.znodes.topics import topic_path
from mafka.errors import UnknownTopicOrPartitionError

__all__ = ["ConfigZk"]


class ConfigZk(ZkFamily):
    """Entity configs and config change notifications (``KafkaZkClient``'s config operations)."""

    async def set_or_create_entity_config(
        self, entity_type: str, entity_name: str, config: Mapping[str, str]
    ) -> None:
        """Writes ``/config/<entity_type>/<entity_name>``, creating it if absent; announces nothing."""
        path = ConfigEntityZNode.path(entity_type, entity_name)
        data = ConfigEntityZNode.encode(config)
        try:
            await self._store.set(path, data, -1)
        except NoNodeError:
            try:
                await self._store.create(path, data, makepath=True)
            except NodeExistsError:
                await self._store.set(path, data, -1)

    @_deferred
    async def get_entity_config(self, entity_type: str, entity_name: str) -> dict[str, str]:
        """``/config/<entity_type>/<entity_name>`` as a dict (``{}`` if absent)."""
        got = await self._core.get_or_none(ConfigEntityZNode.path(entity_type, entity_name))
        return {} if got is None else ConfigEntityZNode.decode(got[0])

    @_deferred
    async def get_entity_configs(
        self, entity_type: str, entity_names: Iterable[str]
    ) -> dict[str, dict[str, str]]:
        """Each entity's config as a dict (``{}`` if absent): one pipelined batch of reads."""
        names = list(dict.fromkeys(entity_names))
        got = await self._core.get_many([ConfigEntityZNode.path(entity_type, name) for name in names])
        return {
            name: {} if item is None else ConfigEntityZNode.decode(item[0])
            for name, item in zip(names, got, strict=True)
        }

    def get_topic_configs(self, topics: Iterable[str]) -> Deferred[dict[str, dict[str, str]]]:
        """Each topic's config overrides (``{}`` if none): one pipelined batch of reads."""
        return self.get_entity_configs(ConfigType.TOPIC, topics)

    @_deferred
    async def get_all_entities_with_config(self, entity_type: str) -> list[str]:
        """The (sanitized) names under ``/config/<entity_type>``, sorted (``getAllEntitiesWithConfig``)."""
        return await self._core.children_or_empty(f"{CONFIG_PATH}/{entity_type}")

    def get_topic_config(self, topic: str) -> Deferred[dict[str, str]]:
        """The topic's config overrides (``{}`` if none)."""
        return self.get_entity_config(ConfigType.TOPIC, topic)

    def get_broker_config(self, broker_id: int | None) -> Deferred[dict[str, str]]:
        """A broker's dynamic config overrides (None: the cluster default ``<default>``)."""
        name = ConfigType.DEFAULT_ENTITY if broker_id is None else str(int(broker_id))
        return self.get_entity_config(ConfigType.BROKER, name)

    @_deferred
    async def set_entity_config(
        self, entity_type: str, entity_name: str, config: Mapping[str, str]
    ) -> str:
        """Writes an entity's config, then announces it (``AdminZkClient.changeEntityConfig``).

        Returns:
            The path of the ``/config/changes/config_change_N`` node created.
        """
        await self.set_or_create_entity_config(entity_type, entity_name, config)
        return await self._post_config_change(
            ConfigChangeNotificationZNode.entity_path(entity_type, entity_name)
        )

    @_deferred
    async def set_topic_config(self, topic: str, config: Mapping[str, str]) -> str:
        """Replaces the topic's config overrides and posts a config change notification ``topics/<topic>``.

        Returns:
            The notification's path.

        Raises:
            UnknownTopicOrPartitionError: The topic does not exist (as ``changeTopicConfig``).
        """
        if await self._store.exists(topic_path(topic)) is None:
            raise UnknownTopicOrPartitionError(f"Topic {topic} does not exist.")
        await self.set_or_create_entity_config(ConfigType.TOPIC, topic, config)
        return await self._post_config_change(
            ConfigChangeNotificationZNode.entity_path(ConfigType.TOPIC, topic)
        )

    def set_broker_config(self, broker_id: int | None, config: Mapping[str, str]) -> Deferred[str]:
        """Replaces a broker's (None: the default's) dynamic config and announces it; returns the notification path."""
        name = ConfigType.DEFAULT_ENTITY if broker_id is None else str(int(broker_id))
        return self.set_entity_config(ConfigType.BROKER, name, config)

    async def _post_config_change(self, entity_path: str) -> str:
        await self._store.ensure_path(ConfigChangeNotificationZNode.PATH)
        return await self._store.create(
            ConfigChangeNotificationZNode.CREATE_PATH,
            ConfigChangeNotificationZNode.encode(entity_path),
            sequential=True,
        )

    @_deferred
    async def post_config_change_notification(self, entity_path: str) -> str:
        """Creates ``/config/changes/config_change_N`` for *entity_path* (e.g. ``topics/T``); returns its path."""
        return await self._post_config_change(entity_path)

    @_deferred
    async def get_config_change_notifications(self) -> list[str]:
        """Child names under ``/config/changes``, sorted (by sequence number)."""
        return [
            c
            for c in await self._core.children_or_empty(ConfigChangeNotificationZNode.PATH)
            if c.startswith(ConfigChangeNotificationZNode.PREFIX)
        ]

    def watch_config_changes(self, callback: WatchCallback) -> WatchHandle:
        """Children of ``/config/changes``."""
        return self._store.watch_children(ConfigChangeNotificationZNode.PATH, callback)
