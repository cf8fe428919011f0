"""The dynamic config znodes: ``/config/<type>/<name>`` and the ``/config/changes`` notifications.

Owns :class:`ConfigType` (the entity types under ``/config``),
:class:`ConfigEntityZNode` (an entity's overrides, keys in
``java.util.Properties`` order) and :class:`ConfigChangeNotificationZNode`
(``config_change_<seq>``, v1 read, v2 written), byte for byte as Kafka 2.8.
"""

from __future__ import annotations

from collections.abc import Mapping

from mafka.coordination.znodes.decoding import _get_int, _get_str, _load_object
from mafka.coordination.znodes.encoding import _java_properties, _scala_immutable_map, encode_json

__all__ = [
    "CONFIG_PATH",
    "ConfigChangeNotificationZNode",
    "ConfigEntityZNode",
    "ConfigType",
]

CONFIG_PATH = "/config"


class ConfigType:
    """Kafka's config entity types (``ConfigType``), the children of ``/config``."""

    TOPIC = "topics"
    CLIENT = "clients"
    USER = "users"
    BROKER = "brokers"
    IP = "ips"
    ALL = (TOPIC, CLIENT, USER, BROKER, IP)
    #: The entity name of the cluster-wide default (``/config/brokers/<default>``).
    DEFAULT_ENTITY = "<default>"


class ConfigEntityZNode:
    """``/config/<type>/<name>`` (persistent): dynamic config overrides of one entity."""

    @staticmethod
    def path(entity_type: str, entity_name: str | int) -> str:
        """``/config/<entity_type>/<entity_name>``."""
        return f"{CONFIG_PATH}/{entity_type}/{entity_name}"

    @staticmethod
    def topic_path(topic: str) -> str:
        """``/config/topics/<topic>``."""
        return ConfigEntityZNode.path(ConfigType.TOPIC, topic)

    @staticmethod
    def broker_path(broker_id: int | None) -> str:
        """``/config/brokers/<id>``, or ``/config/brokers/<default>`` for None."""
        name = ConfigType.DEFAULT_ENTITY if broker_id is None else str(int(broker_id))
        return ConfigEntityZNode.path(ConfigType.BROKER, name)

    @staticmethod
    def encode(config: Mapping[str, str]) -> bytes:
        """``{"version":1,"config":{…}}``, values as strings, keys in ``java.util.Properties`` order."""
        return encode_json(
            _scala_immutable_map(
                [
                    ("version", 1),
                    ("config", _java_properties((str(k), str(v)) for k, v in config.items())),
                ]
            )
        )

    @staticmethod
    def decode(data: bytes) -> dict[str, str]:
        """The config map; empty data or a missing ``config`` is ``{}`` (as Kafka).

        Numbers and booleans are read as their Java string forms; anything else is a ValueError.
        """
        if not bytes(data):
            return {}
        obj = _load_object(data, "config")
        config = obj.get("config")
        if config is None:
            return {}
        if not isinstance(config, dict):
            raise ValueError("config: 'config' must be an object")
        out: dict[str, str] = {}
        for key, value in config.items():
            if isinstance(value, bool):
                out[key] = "true" if value else "false"
            elif isinstance(value, int | str):
                out[key] = str(value)
            else:
                raise ValueError(f"config: value of {key!r} must be a string, got {value!r}")
        return out


class ConfigChangeNotificationZNode:
    """``/config/changes/config_change_<seq>`` (persistent sequential): "entity X's config changed"."""

    PATH = "/config/changes"
    PREFIX = "config_change_"
    CREATE_PATH = f"{PATH}/{PREFIX}"

    @staticmethod
    def entity_path(entity_type: str, entity_name: str | int) -> str:
        """The sanitized entity path announced, e.g. ``topics/T`` or ``brokers/<default>``."""
        return f"{entity_type}/{entity_name}"

    @staticmethod
    def encode(entity_path: str) -> bytes:
        """``{"version":2,"entity_path":"topics/T"}``."""
        return encode_json(
            _scala_immutable_map([("version", 2), ("entity_path", str(entity_path))])
        )

    @staticmethod
    def decode(data: bytes) -> str:
        """The entity path; v1 (``entity_type`` + ``entity_name``) is read as ``type/name``.

        Raises:
            ValueError: On garbage or an unknown version.
        """
        what = ConfigChangeNotificationZNode.PATH
        obj = _load_object(data, what)
        version = _get_int(obj, "version", what)
        if version == 2:
            return _get_str(obj, "entity_path", what)
        if version == 1:
            return f"{_get_str(obj, 'entity_type', what)}/{_get_str(obj, 'entity_name', what)}"
        raise ValueError(f"{what}: unsupported config change notification version {version}")
