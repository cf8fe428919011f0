"""Broker configuration under Kafka 2.8's ``server.properties`` names, types and defaults.

:class:`BrokerConfig` is an immutable record of every broker setting a Kafka
user would write into ``server.properties`` (ZooKeeper, listeners, log
defaults, replication, group and transaction coordinators …).  Attribute =
Kafka key with ``.`` → ``_`` (``num.partitions`` → ``num_partitions``), value
= the configured value converted to its Kafka type, ``None`` where Kafka's
default is null (``listeners``, ``log.dirs``, ``log.retention.ms`` …).
Kafka's fallback rules live in the ``effective_*`` properties and the parsed
listener properties.  Sources: apache/kafka 2.8.2 ``KafkaConfig.scala``
(``Defaults``, ``configDef``, ``validateValues``), ``cluster/EndPoint.scala``,
``utils/CoreUtils.scala`` and ``log/LogConfig.scala``.

Loading (:meth:`BrokerConfig.from_file`), lowest precedence first:

1. the properties file, parsed with ``java.util.Properties.load``'s rules
   (:func:`parse_properties`: ``key=value``, ``key: value`` and
   ``key value``; ``#``/``!`` comments; ``\\`` line continuations; ``\\t``,
   ``\\n``, ``\\uXXXX`` escapes; ISO-8859-1 bytes; the last duplicate wins);
2. ``KAFKA_*`` environment variables by the cp-kafka image's rule
   (:func:`env_var_to_key`, from confluent-docker-utils ``dub.env_to_props``):
   strip ``KAFKA_``, lower-case, then a single ``_`` → ``.``, ``___`` → ``-``,
   ``__`` → ``_`` (``KAFKA_ADVERTISED_LISTENERS`` → ``advertised.listeners``,
   ``KAFKA_FOO__BAR`` → ``foo_bar``, ``KAFKA_FOO___BAR`` → ``foo-bar``).  The
   launcher variables in :data:`NON_CONFIG_ENV_VARS` and every ``KAFKA_JMX_*``
   are skipped.  Values are taken verbatim (cp-kafka writes them into a
   properties file, so Java would additionally undo backslash escapes);
3. explicit overrides (``--set key=value``), last.

Contract:

* A value is trimmed and converted as Kafka's ``ConfigDef`` does (Java
  ``Integer.parseInt``/``Long.parseLong`` syntax and ranges, ``true``/``false``
  in any case, lists split on commas with surrounding blanks).  A bad value
  raises :class:`ConfigError` naming the key, the value and where it was set;
  so do Kafka's cross-checks (``broker.id`` range, listener names and ports,
  ``inter.broker.listener.name`` among the advertised listeners, no
  ``0.0.0.0`` advertised, ``replica.fetch.wait.max.ms`` bounds …), and a
  ``replica.selector.class`` other than Kafka's ``RackAwareReplicaSelector``
  (Kafka cannot load the class and does not start).
* An unknown key logs Kafka's warning ("The configuration 'x' was supplied but
  isn't a known config.") on the ``mafka.broker.config`` logger and is kept in
  :attr:`BrokerConfig.unknown`.  Keys of Kafka families Mafka does not model
  (``ssl.*``, ``sasl.*``, ``listener.name.*``, quotas …, see
  :data:`PASSTHROUGH_PREFIXES`) are kept without a warning.
* :meth:`BrokerConfig.from_properties` and :meth:`~BrokerConfig.from_file`
  require ``zookeeper.connect`` (Kafka: "Missing required configuration");
  constructing :class:`BrokerConfig` directly does not, so tests can use
  ``BrokerConfig(broker_id=1)``.  Every other check runs on construction,
  including :func:`dataclasses.replace`.
* Listeners (:attr:`BrokerConfig.listener_endpoints`, each a
  :class:`mafka.endpoint.Endpoint`) follow ``EndPoint.createEndPoint``:
  ``NAME://host:port`` or ``NAME://[ipv6]:port``, names upper-cased and
  mapped to a security protocol through ``listener.security.protocol.map``;
  an empty host (``host`` None) binds every interface.
  ``listeners`` defaults to ``PLAINTEXT://:9092`` (from the deprecated
  ``host.name``/``port``), ``advertised.listeners`` to ``listeners``.
* Kafka advertises an empty host as ``InetAddress.getLocalHost
  .getCanonicalHostName``.  Mafka advertises :data:`DEFAULT_ADVERTISED_HOST`
  (``localhost``) instead: it needs no DNS at start-up, always resolves, and
  is right for the default single-machine setup (clients and every broker on
  one host).  Brokers on several hosts, or in containers, must set
  ``advertised.listeners`` — which the cp-kafka image requires anyway.
  ``0.0.0.0`` and ``::`` are refused in advertised listeners (Kafka refuses
  ``0.0.0.0`` only).  Ports must lie in 0..65535 (Kafka also takes negative
  ports, for its own tests).
* :meth:`BrokerConfig.log_config` builds the :class:`~mafka.log.config.LogConfig`
  for topics without overrides from the broker's ``log.*`` synonyms
  (:data:`LOG_CONFIG_SYNONYMS`, Kafka's ``LogConfig.TopicConfigSynonyms``).

Example:
    >>> cfg = BrokerConfig.from_properties(
    ...     {"zookeeper.connect": "zk:2181", "log.retention.minutes": "5"})
    >>> cfg.effective_log_retention_ms, cfg.listener_endpoints[0]
    (300000, Endpoint(name='PLAINTEXT', security_protocol='PLAINTEXT', host=None, port=9092))
    >>> cfg.advertised_endpoints[0].connection_string
    'PLAINTEXT://localhost:9092'
    >>> env_var_to_key("KAFKA_OFFSETS_TOPIC_REPLICATION_FACTOR")
    'offsets.topic.replication.factor'
"""

from __future__ import annotations

import logging
import os
import re
import sys
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field, fields
from pathlib import Path
from types import MappingProxyType
from typing import Any, Final

from mafka import properties
from mafka.endpoint import SECURITY_PROTOCOLS, Endpoint, parse_endpoint
from mafka.errors import ConfigError
from mafka.log.config import LONG_MAX, TOPIC_CONFIG_NAMES, LogConfig

from .replica_selector import UnknownReplicaSelectorError, replica_selector_for

__all__ = [
    "BrokerConfig",
    "CONFIG_KEYS",
    "ConfigKey",
    "DEFAULT_ADVERTISED_HOST",
    "DEFAULT_LISTENER_SECURITY_PROTOCOL_MAP",
    "LOG_CONFIG_SYNONYMS",
    "NON_CONFIG_ENV_VARS",
    "PASSTHROUGH_PREFIXES",
    "env_overrides",
    "env_var_to_key",
    "key_to_env_var",
    "load_properties",
    "parse_listeners",
    "parse_override",
    "parse_properties",
]

log = logging.getLogger("mafka.broker.config")

INT_MAX: Final = 2**31 - 1
_RANGES: Final = {"SHORT": (-(2**15), 2**15 - 1), "INT": (-(2**31), INT_MAX), "LONG": (-(2**63), LONG_MAX)}
_DOUBLE_MAX: Final = sys.float_info.max  # Java's Double.MAX_VALUE

#: Where an empty listener host is advertised (Kafka: the canonical host name); see the module docstring.
DEFAULT_ADVERTISED_HOST: Final = "localhost"
#: Kafka's default ``listener.security.protocol.map`` (every protocol maps to a listener of its own name).
DEFAULT_LISTENER_SECURITY_PROTOCOL_MAP: Final = ",".join(f"{p}:{p}" for p in SECURITY_PROTOCOLS)
#: ``compression.type`` values a broker accepts (``BrokerCompressionCodec``).
_BROKER_COMPRESSION: Final = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")

#: ``KAFKA_*`` environment variables that configure the launcher (JVM, log4j, JMX), not the broker:
#: the exclusions of cp-kafka's ``kafka.properties.template`` plus those of Apache Kafka's
#: ``kafka-run-class.sh``.  Every ``KAFKA_JMX_*`` variable is skipped as well.
NON_CONFIG_ENV_VARS: Final = frozenset(
    {
        "KAFKA_VERSION",
        "KAFKA_HOME",
        "KAFKA_HEAP_OPTS",
        "KAFKA_OPTS",
        "KAFKA_JVM_PERFORMANCE_OPTS",
        "KAFKA_GC_LOG_OPTS",
        "KAFKA_LOG4J_OPTS",
        "KAFKA_LOG4J_ROOT_LOGLEVEL",
        "KAFKA_LOG4J_LOGGERS",
        "KAFKA_TOOLS_LOG4J_LOGLEVEL",
        "KAFKA_DEBUG",
        "KAFKA_JMX_OPTS",
        "KAFKA_JMX_PORT",
        "KAFKA_JMX_HOSTNAME",
    }
)
_NON_CONFIG_ENV_PREFIXES: Final = ("KAFKA_JMX_",)
_ENV_PREFIX: Final = "KAFKA_"

#: Kafka broker config families Mafka does not model; such keys are kept in
#: :attr:`BrokerConfig.unknown` without the unknown-key warning.
PASSTHROUGH_PREFIXES: Final = (
    "listener.name.",
    "ssl.",
    "sasl.",
    "zookeeper.ssl.",
    "security.providers",
    "principal.builder.class",
    "quota.",
    "replication.quota.",
    "alter.log.dirs.replication.quota.",
    "controller.quota.",
    "client.quota.callback.class",
    "delegation.token.",
    "password.encoder.",
)

# Java's String.trim() removes every char <= U+0020; Java's regex \s is ASCII whitespace only.
_JAVA_TRIM: Final = "".join(chr(c) for c in range(0x21))
_LIST_SPLIT: Final = re.compile(r"[ \t\n\x0b\f\r]*,[ \t\n\x0b\f\r]*")
_JAVA_INT: Final = re.compile(r"[+-]?[0-9]+\Z")
_JAVA_DOUBLE: Final = re.compile(r"[+-]?(?:NaN|Infinity|(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?)[fFdD]?\Z")


@dataclass(frozen=True, slots=True)
class ConfigKey:
    """One broker config: Kafka name, attribute, ``ConfigDef`` type and default, validator."""

    name: str
    attr: str
    type: str  # SHORT, INT, LONG, DOUBLE, BOOLEAN, STRING or LIST (Kafka's ConfigDef.Type)
    default: Any
    at_least: int | float | None = None
    one_of: tuple[str, ...] | None = None

    def parse(self, raw: Any, source: str | None = None) -> Any:
        """Convert a raw value (string, or a Python value of the right kind) as ``ConfigDef.parseType`` does.

        Raises:
            ConfigError: the value is not of this key's type.
        """
        if raw is None:
            return None
        kind = self.type
        if kind == "LIST" and isinstance(raw, (list, tuple)):
            return tuple(str(v).strip(_JAVA_TRIM) for v in raw)
        if isinstance(raw, bool):
            text = "true" if raw else "false"
        else:
            text = str(raw).strip(_JAVA_TRIM)
        if kind in _RANGES:
            lo, hi = _RANGES[kind]
            if not _JAVA_INT.match(text) or not lo <= int(text) <= hi:
                raise ConfigError.for_key(self.name, f"Not a number of type {kind}", value=raw, source=source)
            return int(text)
        if kind == "BOOLEAN":
            if text.lower() not in ("true", "false"):
                raise ConfigError.for_key(self.name, "Expected value to be either true or false", value=raw, source=source)
            return text.lower() == "true"
        if kind == "DOUBLE":
            if not _JAVA_DOUBLE.match(text):
                raise ConfigError.for_key(self.name, "Not a number of type DOUBLE", value=raw, source=source)
            return float(text.rstrip("fFdD").replace("Infinity", "inf"))
        if kind == "LIST":
            return () if not text else tuple(_LIST_SPLIT.split(text))
        if self.name == "compression.type":
            return text.lower()
        return text

    def check(self, value: Any, source: str | None = None) -> None:
        """Apply the key's range / allowed-values validator (``ConfigDef.Range.atLeast``, ``ValidString.in``).

        Raises:
            ConfigError: the value is out of range.
        """
        if value is None:
            return
        if self.at_least is not None and value < self.at_least:
            raise ConfigError.for_key(self.name, f"Value must be at least {self.at_least}", value=value, source=source)
        if self.one_of is not None:
            items = value if isinstance(value, tuple) else (value,)
            bad = [v for v in items if v not in self.one_of]
            if bad:
                shown = ",".join(items) if isinstance(value, tuple) else value
                raise ConfigError.for_key(
                    self.name, f"String must be one of: {', '.join(self.one_of)}", value=shown, source=source
                )

    def render(self, value: Any) -> str | None:
        """The value as Kafka would print it (``true``, ``a,b``); ``None`` for a null value."""
        if value is None:
            return None
        if isinstance(value, bool):
            return "true" if value else "false"
        if isinstance(value, tuple):
            return ",".join(value)
        return str(value)


def _key(
    name: str,
    kind: str,
    default: Any = None,
    *,
    at_least: int | float | None = None,
    one_of: tuple[str, ...] | None = None,
) -> Any:
    """A dataclass field carrying its Kafka key definition (the field name is the attribute)."""
    meta = {"kafka": (name, kind, default, at_least, one_of)}
    return field(default=default, metadata=MappingProxyType(meta))


def _listener(text: str, protocol_map: Mapping[str, str]) -> Endpoint:
    """One listener: :func:`~mafka.endpoint.parse_endpoint`, its port within 0..65535."""
    endpoint = parse_endpoint(text, protocol_map)
    if not 0 <= endpoint.port <= 65535:
        raise ValueError(f"port {endpoint.port} of {text} is not within 0..65535")
    return endpoint


def parse_listeners(
    text: str, protocol_map: Mapping[str, str], *, require_distinct_ports: bool = True
) -> tuple[Endpoint, ...]:
    """Parse a comma-separated listener list (``CoreUtils.listenerListToEndPoints``).

    Raises:
        ValueError: a bad listener, two listeners with one name, or (if
            ``require_distinct_ports``) two with one non-zero port.
    """
    items = [s for s in _LIST_SPLIT.split(text) if s] if text else []
    try:
        endpoints = tuple(_listener(s, protocol_map) for s in items)
    except ValueError as exc:
        raise ValueError(f"Error creating broker listeners from '{text}': {exc}") from None
    names = [e.name for e in endpoints]
    if len(set(names)) != len(names):
        raise ValueError(f"Each listener must have a different name, listeners: {text}")
    ports = [e.port for e in endpoints if e.port != 0]
    if require_distinct_ports and len(set(ports)) != len(ports):
        raise ValueError(f"Each listener must have a different port, listeners: {text}")
    return endpoints


def _parse_csv_map(text: str) -> dict[str, str]:
    """``CoreUtils.parseCsvMap``: ``k:v,k2:v2``, split at each entry's last colon."""
    out: dict[str, str] = {}
    if text == "":
        return out
    for entry in _LIST_SPLIT.split(text):
        cut = entry.rfind(":")
        if cut < 0:
            raise ValueError(f"entry {entry!r} is not key:value")
        out[entry[:cut].strip(_JAVA_TRIM)] = entry[cut + 1 :].strip(_JAVA_TRIM)
    return out


# =================================================================== Java properties files

def parse_properties(text: str) -> dict[str, str]:
    """Parse Java ``.properties`` text exactly as ``java.util.Properties.load(Reader)``.

    See :mod:`mafka.properties`: the key ends at the first unescaped ``=``,
    ``:`` or blank; blanks and one ``=``/``:`` after it are skipped; the rest of
    the logical line (trailing blanks included) is the value.  A later duplicate
    key wins.

    Raises:
        ConfigError: a malformed ``\\uXXXX`` escape.
    """
    try:
        return properties.loads(text)
    except properties.MalformedEscapeError as exc:
        raise ConfigError(f"{exc} (line {exc.line})") from None


def load_properties(path: str | os.PathLike[str]) -> dict[str, str]:
    """Read a properties file as Kafka's ``Utils.loadProps``: ISO-8859-1 bytes, Java syntax.

    Raises:
        OSError: the file cannot be read.
        ConfigError: a malformed ``\\uXXXX`` escape.
    """
    data = Path(path).read_bytes()
    try:
        return parse_properties(data.decode("iso-8859-1"))
    except ConfigError as exc:
        raise ConfigError(f"{path}: {exc}") from None


# =================================================================== environment and overrides

_ENV_SINGLE_UNDERSCORE: Final = re.compile(r"(?<=[^_])_(?=[^_])")


def env_var_to_key(name: str) -> str | None:
    """The config key a ``KAFKA_*`` environment variable sets, or ``None`` if it sets none.

    cp-kafka's rule (confluent-docker-utils ``env_to_props``): drop the
    ``KAFKA_`` prefix, lower-case, turn each single ``_`` (one between two
    non-underscores) into ``.``, then ``___`` into ``-`` and ``__`` into ``_``.
    Launcher variables (:data:`NON_CONFIG_ENV_VARS`, ``KAFKA_JMX_*``) give ``None``.

    >>> env_var_to_key("KAFKA_LISTENER_SECURITY_PROTOCOL_MAP")
    'listener.security.protocol.map'
    >>> env_var_to_key("KAFKA_LISTENER_NAME_INTERNAL_SSL_KEY___PASSWORD")
    'listener.name.internal.ssl.key-password'
    >>> env_var_to_key("KAFKA_HEAP_OPTS") is None
    True
    """
    if not name.startswith(_ENV_PREFIX) or name in NON_CONFIG_ENV_VARS:
        return None
    if name.startswith(_NON_CONFIG_ENV_PREFIXES):
        return None
    raw = name[len(_ENV_PREFIX) :].lower()
    if not raw:
        return None
    dotted = ".".join(_ENV_SINGLE_UNDERSCORE.split(raw))
    return "_".join("-".join(dotted.split("___")).split("__"))


def key_to_env_var(key: str) -> str:
    """The ``KAFKA_*`` variable that sets ``key`` (inverse of :func:`env_var_to_key`).

    >>> key_to_env_var("advertised.listeners")
    'KAFKA_ADVERTISED_LISTENERS'
    """
    return _ENV_PREFIX + key.replace("_", "__").replace("-", "___").replace(".", "_").upper()


def env_overrides(env: Mapping[str, str]) -> dict[str, tuple[str, str]]:
    """The config keys set by ``env``, as ``{key: (value, variable name)}``.

    Variables are applied in sorted name order, so if two map to one key the
    result does not depend on the environment's order.
    """
    out: dict[str, tuple[str, str]] = {}
    for name in sorted(env):
        key = env_var_to_key(name)
        if key is not None:
            out[key] = (env[name], name)
    return out


def parse_override(text: str) -> tuple[str, str]:
    """Split one ``--set key=value`` argument at its first ``=``.

    Raises:
        ConfigError: no ``=`` or an empty key.
    """
    key, sep, value = text.partition("=")
    key = key.strip()
    if not sep or not key:
        raise ConfigError(f"override {text!r} is not of the form key=value")
    return key, value


def _is_passthrough(key: str) -> bool:
    return key.startswith(PASSTHROUGH_PREFIXES)


def _warn_unknown(key: str, source: str | None) -> None:
    if not _is_passthrough(key):
        where = f" (set by {source})" if source else ""
        log.warning("The configuration '%s' was supplied but isn't a known config.%s", key, where)


# =================================================================== the config


@dataclass(frozen=True, slots=True, kw_only=True, repr=False)
class BrokerConfig:
    """A broker's configuration: Kafka 2.8 key names, types and defaults (see the module docstring)."""

    # ------------------------------------------------------------ ZooKeeper
    zookeeper_connect: str | None = _key("zookeeper.connect", "STRING")
    zookeeper_session_timeout_ms: int = _key("zookeeper.session.timeout.ms", "INT", 18000)
    zookeeper_connection_timeout_ms: int | None = _key("zookeeper.connection.timeout.ms", "INT")
    zookeeper_sync_time_ms: int = _key("zookeeper.sync.time.ms", "INT", 2000)
    zookeeper_set_acl: bool = _key("zookeeper.set.acl", "BOOLEAN", False)
    zookeeper_max_in_flight_requests: int = _key("zookeeper.max.in.flight.requests", "INT", 10, at_least=1)
    zookeeper_client_cnxn_socket: str | None = _key("zookeeper.clientCnxnSocket", "STRING")

    # ------------------------------------------------------------ general
    broker_id: int = _key("broker.id", "INT", -1)
    broker_id_generation_enable: bool = _key("broker.id.generation.enable", "BOOLEAN", True)
    reserved_broker_max_id: int = _key("reserved.broker.max.id", "INT", 1000, at_least=0)
    broker_rack: str | None = _key("broker.rack", "STRING")
    message_max_bytes: int = _key("message.max.bytes", "INT", 1048588, at_least=0)
    num_network_threads: int = _key("num.network.threads", "INT", 3, at_least=1)
    num_io_threads: int = _key("num.io.threads", "INT", 8, at_least=1)
    background_threads: int = _key("background.threads", "INT", 10, at_least=1)
    num_replica_alter_log_dirs_threads: int | None = _key("num.replica.alter.log.dirs.threads", "INT")
    queued_max_requests: int = _key("queued.max.requests", "INT", 500, at_least=1)
    queued_max_request_bytes: int = _key("queued.max.request.bytes", "LONG", -1)
    request_timeout_ms: int = _key("request.timeout.ms", "INT", 30000)
    socket_connection_setup_timeout_ms: int = _key("socket.connection.setup.timeout.ms", "LONG", 10000)
    socket_connection_setup_timeout_max_ms: int = _key("socket.connection.setup.timeout.max.ms", "LONG", 30000)
    authorizer_class_name: str = _key("authorizer.class.name", "STRING", "")
    auto_create_topics_enable: bool = _key("auto.create.topics.enable", "BOOLEAN", True)
    delete_topic_enable: bool = _key("delete.topic.enable", "BOOLEAN", True)
    num_partitions: int = _key("num.partitions", "INT", 1, at_least=1)
    default_replication_factor: int = _key("default.replication.factor", "INT", 1)
    min_insync_replicas: int = _key("min.insync.replicas", "INT", 1, at_least=1)
    unclean_leader_election_enable: bool = _key("unclean.leader.election.enable", "BOOLEAN", False)
    compression_type: str = _key("compression.type", "STRING", "producer", one_of=_BROKER_COMPRESSION)
    inter_broker_protocol_version: str = _key("inter.broker.protocol.version", "STRING", "2.8-IV1")
    create_topic_policy_class_name: str | None = _key("create.topic.policy.class.name", "STRING")
    alter_config_policy_class_name: str | None = _key("alter.config.policy.class.name", "STRING")

    # ------------------------------------------------------------ socket server
    listeners: str | None = _key("listeners", "STRING")
    advertised_listeners: str | None = _key("advertised.listeners", "STRING")
    listener_security_protocol_map: str = _key(
        "listener.security.protocol.map", "STRING", DEFAULT_LISTENER_SECURITY_PROTOCOL_MAP
    )
    inter_broker_listener_name: str | None = _key("inter.broker.listener.name", "STRING")
    security_inter_broker_protocol: str = _key(
        "security.inter.broker.protocol", "STRING", "PLAINTEXT", one_of=SECURITY_PROTOCOLS
    )
    control_plane_listener_name: str | None = _key("control.plane.listener.name", "STRING")
    host_name: str = _key("host.name", "STRING", "")  # deprecated: used only when listeners is unset
    port: int = _key("port", "INT", 9092)  # deprecated: used only when listeners is unset
    advertised_host_name: str | None = _key("advertised.host.name", "STRING")  # deprecated
    advertised_port: int | None = _key("advertised.port", "INT")  # deprecated
    socket_send_buffer_bytes: int = _key("socket.send.buffer.bytes", "INT", 102400)
    socket_receive_buffer_bytes: int = _key("socket.receive.buffer.bytes", "INT", 102400)
    socket_request_max_bytes: int = _key("socket.request.max.bytes", "INT", 104857600, at_least=1)
    max_connections_per_ip: int = _key("max.connections.per.ip", "INT", INT_MAX, at_least=0)
    max_connections_per_ip_overrides: str = _key("max.connections.per.ip.overrides", "STRING", "")
    max_connections: int = _key("max.connections", "INT", INT_MAX, at_least=0)
    max_connection_creation_rate: int = _key("max.connection.creation.rate", "INT", INT_MAX, at_least=0)
    connections_max_idle_ms: int = _key("connections.max.idle.ms", "LONG", 600000)
    connection_failed_authentication_delay_ms: int = _key(
        "connection.failed.authentication.delay.ms", "INT", 100, at_least=0
    )
    connections_max_reauth_ms: int = _key("connections.max.reauth.ms", "LONG", 0)

    # ------------------------------------------------------------ log (broker-wide defaults of topic configs)
    log_dir: str = _key("log.dir", "STRING", "/tmp/kafka-logs")
    log_dirs: str | None = _key("log.dirs", "STRING")
    log_segment_bytes: int = _key("log.segment.bytes", "INT", 1073741824, at_least=14)
    log_roll_ms: int | None = _key("log.roll.ms", "LONG")
    log_roll_hours: int = _key("log.roll.hours", "INT", 168, at_least=1)
    log_roll_jitter_ms: int | None = _key("log.roll.jitter.ms", "LONG")
    log_roll_jitter_hours: int = _key("log.roll.jitter.hours", "INT", 0, at_least=0)
    log_retention_ms: int | None = _key("log.retention.ms", "LONG")
    log_retention_minutes: int | None = _key("log.retention.minutes", "INT")
    log_retention_hours: int = _key("log.retention.hours", "INT", 168)
    log_retention_bytes: int = _key("log.retention.bytes", "LONG", -1)
    log_retention_check_interval_ms: int = _key("log.retention.check.interval.ms", "LONG", 300000, at_least=1)
    log_cleanup_policy: tuple[str, ...] = _key(
        "log.cleanup.policy", "LIST", ("delete",), one_of=("compact", "delete")
    )
    log_cleaner_enable: bool = _key("log.cleaner.enable", "BOOLEAN", True)
    log_cleaner_threads: int = _key("log.cleaner.threads", "INT", 1, at_least=0)
    log_cleaner_io_max_bytes_per_second: float = _key("log.cleaner.io.max.bytes.per.second", "DOUBLE", _DOUBLE_MAX)
    log_cleaner_dedupe_buffer_size: int = _key("log.cleaner.dedupe.buffer.size", "LONG", 134217728)
    log_cleaner_io_buffer_size: int = _key("log.cleaner.io.buffer.size", "INT", 524288, at_least=0)
    log_cleaner_io_buffer_load_factor: float = _key("log.cleaner.io.buffer.load.factor", "DOUBLE", 0.9)
    log_cleaner_backoff_ms: int = _key("log.cleaner.backoff.ms", "LONG", 15000, at_least=0)
    log_cleaner_min_cleanable_ratio: float = _key("log.cleaner.min.cleanable.ratio", "DOUBLE", 0.5)
    log_cleaner_delete_retention_ms: int = _key("log.cleaner.delete.retention.ms", "LONG", 86400000)
    log_cleaner_min_compaction_lag_ms: int = _key("log.cleaner.min.compaction.lag.ms", "LONG", 0)
    log_cleaner_max_compaction_lag_ms: int = _key("log.cleaner.max.compaction.lag.ms", "LONG", LONG_MAX)
    log_index_size_max_bytes: int = _key("log.index.size.max.bytes", "INT", 10485760, at_least=4)
    log_index_interval_bytes: int = _key("log.index.interval.bytes", "INT", 4096, at_least=0)
    log_flush_interval_messages: int = _key("log.flush.interval.messages", "LONG", LONG_MAX, at_least=1)
    log_flush_interval_ms: int | None = _key("log.flush.interval.ms", "LONG")
    log_flush_scheduler_interval_ms: int = _key("log.flush.scheduler.interval.ms", "LONG", LONG_MAX)
    log_flush_offset_checkpoint_interval_ms: int = _key(
        "log.flush.offset.checkpoint.interval.ms", "INT", 60000, at_least=0
    )
    log_flush_start_offset_checkpoint_interval_ms: int = _key(
        "log.flush.start.offset.checkpoint.interval.ms", "INT", 60000, at_least=0
    )
    log_segment_delete_delay_ms: int = _key("log.segment.delete.delay.ms", "LONG", 60000, at_least=0)
    log_preallocate: bool = _key("log.preallocate", "BOOLEAN", False)
    log_message_format_version: str = _key("log.message.format.version", "STRING", "2.8-IV1")
    log_message_timestamp_type: str = _key(
        "log.message.timestamp.type", "STRING", "CreateTime", one_of=("CreateTime", "LogAppendTime")
    )
    log_message_timestamp_difference_max_ms: int = _key(
        "log.message.timestamp.difference.max.ms", "LONG", LONG_MAX
    )
    log_message_downconversion_enable: bool = _key("log.message.downconversion.enable", "BOOLEAN", True)
    # Mafka's delayed messages (mafka.delayed): the broker defaults of the topic configs of the same names
    mafka_delay_ms: int = _key("mafka.delay.ms", "LONG", 0, at_least=0)
    mafka_delay_max_ms: int = _key("mafka.delay.max.ms", "LONG", 604800000, at_least=0)
    mafka_txn_check_interval_ms: int = _key("mafka.txn.check.interval.ms", "LONG", 60000, at_least=1)
    mafka_txn_check_max_times: int = _key("mafka.txn.check.max.times", "INT", 15, at_least=0)
    mafka_txn_check_default_action: str = _key(
        "mafka.txn.check.default.action", "STRING", "rollback", one_of=("rollback", "commit")
    )
    num_recovery_threads_per_data_dir: int = _key("num.recovery.threads.per.data.dir", "INT", 1, at_least=1)

    # ------------------------------------------------------------ replication
    controller_socket_timeout_ms: int = _key("controller.socket.timeout.ms", "INT", 30000)
    replica_lag_time_max_ms: int = _key("replica.lag.time.max.ms", "LONG", 30000)
    replica_socket_timeout_ms: int = _key("replica.socket.timeout.ms", "INT", 30000)
    replica_socket_receive_buffer_bytes: int = _key("replica.socket.receive.buffer.bytes", "INT", 65536)
    replica_fetch_max_bytes: int = _key("replica.fetch.max.bytes", "INT", 1048576, at_least=0)
    replica_fetch_wait_max_ms: int = _key("replica.fetch.wait.max.ms", "INT", 500)
    replica_fetch_min_bytes: int = _key("replica.fetch.min.bytes", "INT", 1)
    replica_fetch_response_max_bytes: int = _key("replica.fetch.response.max.bytes", "INT", 10485760, at_least=0)
    replica_fetch_backoff_ms: int = _key("replica.fetch.backoff.ms", "INT", 1000, at_least=0)
    num_replica_fetchers: int = _key("num.replica.fetchers", "INT", 1)
    replica_high_watermark_checkpoint_interval_ms: int = _key(
        "replica.high.watermark.checkpoint.interval.ms", "LONG", 5000
    )
    replica_selector_class: str | None = _key("replica.selector.class", "STRING")
    fetch_purgatory_purge_interval_requests: int = _key("fetch.purgatory.purge.interval.requests", "INT", 1000)
    producer_purgatory_purge_interval_requests: int = _key(
        "producer.purgatory.purge.interval.requests", "INT", 1000
    )
    delete_records_purgatory_purge_interval_requests: int = _key(
        "delete.records.purgatory.purge.interval.requests", "INT", 1
    )
    auto_leader_rebalance_enable: bool = _key("auto.leader.rebalance.enable", "BOOLEAN", True)
    leader_imbalance_per_broker_percentage: int = _key("leader.imbalance.per.broker.percentage", "INT", 10)
    leader_imbalance_check_interval_seconds: int = _key("leader.imbalance.check.interval.seconds", "LONG", 300)
    controlled_shutdown_enable: bool = _key("controlled.shutdown.enable", "BOOLEAN", True)
    controlled_shutdown_max_retries: int = _key("controlled.shutdown.max.retries", "INT", 3)
    controlled_shutdown_retry_backoff_ms: int = _key("controlled.shutdown.retry.backoff.ms", "LONG", 5000)
    max_incremental_fetch_session_cache_slots: int = _key(
        "max.incremental.fetch.session.cache.slots", "INT", 1000, at_least=0
    )
    fetch_max_bytes: int = _key("fetch.max.bytes", "INT", 57671680, at_least=1024)

    # ------------------------------------------------------------ group coordinator, __consumer_offsets
    group_min_session_timeout_ms: int = _key("group.min.session.timeout.ms", "INT", 6000)
    group_max_session_timeout_ms: int = _key("group.max.session.timeout.ms", "INT", 1800000)
    group_initial_rebalance_delay_ms: int = _key("group.initial.rebalance.delay.ms", "INT", 3000)
    group_max_size: int = _key("group.max.size", "INT", INT_MAX, at_least=1)
    offset_metadata_max_bytes: int = _key("offset.metadata.max.bytes", "INT", 4096)
    offsets_load_buffer_size: int = _key("offsets.load.buffer.size", "INT", 5242880, at_least=1)
    offsets_topic_replication_factor: int = _key("offsets.topic.replication.factor", "SHORT", 3, at_least=1)
    offsets_topic_num_partitions: int = _key("offsets.topic.num.partitions", "INT", 50, at_least=1)
    offsets_topic_segment_bytes: int = _key("offsets.topic.segment.bytes", "INT", 104857600, at_least=1)
    offsets_topic_compression_codec: int = _key("offsets.topic.compression.codec", "INT", 0)
    offsets_retention_minutes: int = _key("offsets.retention.minutes", "INT", 10080, at_least=1)
    offsets_retention_check_interval_ms: int = _key(
        "offsets.retention.check.interval.ms", "LONG", 600000, at_least=1
    )
    offsets_commit_timeout_ms: int = _key("offsets.commit.timeout.ms", "INT", 5000, at_least=1)
    offsets_commit_required_acks: int = _key("offsets.commit.required.acks", "SHORT", -1)

    # ------------------------------------------------------------ transactions, __transaction_state
    transactional_id_expiration_ms: int = _key("transactional.id.expiration.ms", "INT", 604800000, at_least=1)
    transaction_max_timeout_ms: int = _key("transaction.max.timeout.ms", "INT", 900000, at_least=1)
    transaction_state_log_min_isr: int = _key("transaction.state.log.min.isr", "INT", 2, at_least=1)
    transaction_state_log_load_buffer_size: int = _key(
        "transaction.state.log.load.buffer.size", "INT", 5242880, at_least=1
    )
    transaction_state_log_replication_factor: int = _key(
        "transaction.state.log.replication.factor", "SHORT", 3, at_least=1
    )
    transaction_state_log_num_partitions: int = _key("transaction.state.log.num.partitions", "INT", 50, at_least=1)
    transaction_state_log_segment_bytes: int = _key(
        "transaction.state.log.segment.bytes", "INT", 104857600, at_least=1
    )
    transaction_abort_timed_out_transaction_cleanup_interval_ms: int = _key(
        "transaction.abort.timed.out.transaction.cleanup.interval.ms", "INT", 10000, at_least=1
    )
    transaction_remove_expired_transaction_cleanup_interval_ms: int = _key(
        "transaction.remove.expired.transaction.cleanup.interval.ms", "INT", 3600000, at_least=1
    )

    # ------------------------------------------------------------ metrics
    metric_reporters: tuple[str, ...] = _key("metric.reporters", "LIST", ())
    metrics_num_samples: int = _key("metrics.num.samples", "INT", 2, at_least=1)
    metrics_sample_window_ms: int = _key("metrics.sample.window.ms", "LONG", 30000, at_least=1)
    metrics_recording_level: str = _key("metrics.recording.level", "STRING", "INFO")
    #: Mafka: the Prometheus /metrics and /health port (mafka.broker.metrics); -1 serves none
    mafka_metrics_port: int = _key("mafka.metrics.port", "INT", -1, at_least=-1)
    #: Mafka: a broker whose Produce TP99 (last minute) is above this flags itself slow
    mafka_slow_node_threshold_ms: int = _key("mafka.slow.node.threshold.ms", "LONG", 300, at_least=1)
    #: Mafka: how often each broker writes its /mafka/monitor/<id> report (mafka.broker.monitor)
    mafka_monitor_interval_ms: int = _key("mafka.monitor.interval.ms", "LONG", 10000, at_least=100)
    #: Mafka: a log dir's capacity for the monitor and rebalancer (used = the logs in it); -1: the file system's
    mafka_disk_capacity_bytes: int = _key("mafka.disk.capacity.bytes", "LONG", -1, at_least=-1)
    # ------------------------------------------------------------ Mafka: the rebalancer (mafka.rebalancer)
    #: the controller plans and runs moves by itself (manual plans run either way)
    mafka_rebalancer_enable: bool = _key("mafka.rebalancer.enable", "BOOLEAN", False)
    #: how often the controller plans when enabled
    mafka_rebalancer_interval_ms: int = _key("mafka.rebalancer.interval.ms", "LONG", 300000, at_least=100)
    #: a broker above this used/capacity fraction of its disk sheds replicas
    mafka_rebalancer_disk_usage_threshold: float = _key("mafka.rebalancer.disk.usage.threshold", "DOUBLE", 0.85)
    #: partitions moving at once
    mafka_rebalancer_max_concurrent_moves: int = _key("mafka.rebalancer.max.concurrent.moves", "INT", 2, at_least=1)
    #: start the next move as soon as one finishes (false: batches of max.concurrent.moves)
    mafka_rebalancer_pipelined: bool = _key("mafka.rebalancer.pipelined", "BOOLEAN", True)
    #: replication throttle (bytes/s) on the brokers and replicas of moves in flight; -1: none
    mafka_rebalancer_throttle_bytes_per_sec: int = _key("mafka.rebalancer.throttle.bytes.per.sec", "LONG", -1,
                                                        at_least=-1)
    # ------------------------------------------------------------ Mafka: hybrid (hot/cold) storage
    #: fast devices; partitions live here (instead of log.dirs) when set
    mafka_hot_log_dirs: str | None = _key("mafka.hot.log.dirs", "STRING")
    #: slow devices; old segments are moved here (mafka.log.tiering); unset: no cold tier
    mafka_cold_log_dirs: str | None = _key("mafka.cold.log.dirs", "STRING")
    #: segments whose newest record is older than this move cold; -1: never by age
    mafka_hot_retention_ms: int = _key("mafka.hot.retention.ms", "LONG", 3600000, at_least=-1)
    #: segments further than this from the log end move cold; -1: never by size
    mafka_hot_retention_bytes: int = _key("mafka.hot.retention.bytes", "LONG", -1, at_least=-1)
    #: how often the mover looks for segments to move
    mafka_cold_mover_interval_ms: int = _key("mafka.cold.mover.interval.ms", "LONG", 30000, at_least=100)
    #: threads reading cold segments for fetches (mafka.broker.cold_reads)
    mafka_cold_read_threads: int = _key("mafka.cold.read.threads", "INT", 2, at_least=1)
    #: read cold records in those threads (true) or send them by sendfile on the network thread as Kafka (false)
    mafka_cold_read_isolation: bool = _key("mafka.cold.read.isolation", "BOOLEAN", True)
    #: test/benchmark hook: extra time per cold read, standing in for a slow device
    mafka_cold_read_delay_ms: int = _key("mafka.cold.read.delay.ms", "LONG", 0, at_least=0)
    kafka_metrics_reporters: tuple[str, ...] = _key("kafka.metrics.reporters", "LIST", ())
    kafka_metrics_polling_interval_secs: int = _key("kafka.metrics.polling.interval.secs", "INT", 10, at_least=1)

    # ------------------------------------------------------------ bookkeeping (not Kafka keys)
    #: Keys not defined above, kept verbatim (passthrough families included).
    unknown: Mapping[str, str] = field(default_factory=dict, hash=False)
    #: The keys that were set explicitly (file, environment or override), not defaulted.
    explicit_keys: frozenset[str] = field(default=frozenset(), compare=False)
    #: Where each explicit key was set: a file path, ``environment variable X`` or ``--set override``.
    sources: Mapping[str, str] = field(default_factory=dict, compare=False, hash=False)

    # ================================================================ construction

    def __post_init__(self) -> None:
        for spec in CONFIG_KEYS.values():
            spec.check(getattr(self, spec.attr), self.sources.get(spec.name))
        self._cross_check()

    @classmethod
    def from_properties(
        cls,
        props: Mapping[str, Any],
        *,
        sources: Mapping[str, str] | None = None,
        require_zookeeper: bool = True,
    ) -> BrokerConfig:
        """A config from Kafka-named properties (``{"broker.id": "1", …}``).

        Args:
            props: Kafka key → raw value (string, or a Python value of the key's kind).
            sources: key → where it was set, for error messages and logs.
            require_zookeeper: refuse a config without ``zookeeper.connect``, as Kafka does.

        Raises:
            ConfigError: a value of the wrong type or out of range, a failed
                cross-check, or (``require_zookeeper``) no ``zookeeper.connect``.
        """
        sources = dict(sources or {})
        values: dict[str, Any] = {}
        unknown: dict[str, str] = {}
        for key, raw in props.items():
            spec = CONFIG_KEYS.get(key)
            if spec is None:
                _warn_unknown(key, sources.get(key))
                unknown[key] = raw if isinstance(raw, str) else str(raw)
                continue
            values[spec.attr] = spec.parse(raw, sources.get(key))
        explicit = frozenset(k for k in props if k in CONFIG_KEYS)
        config = cls(**values, unknown=unknown, explicit_keys=explicit, sources=sources)
        if require_zookeeper and not config.zookeeper_connect:
            raise ConfigError.for_key(
                "zookeeper.connect", 'Missing required configuration "zookeeper.connect" which has no default value.'
            )
        return config

    @classmethod
    def from_file(
        cls,
        path: str | os.PathLike[str] | None,
        env: Mapping[str, str] | None = os.environ,
        overrides: Mapping[str, Any] | Iterable[str] | None = None,
        *,
        require_zookeeper: bool = True,
    ) -> BrokerConfig:
        """Load ``server.properties``, then ``KAFKA_*`` variables of ``env``, then ``overrides``.

        Args:
            path: the properties file; ``None`` starts from Kafka's defaults.
            env: environment variables (default :data:`os.environ`; ``None``
                or ``{}`` ignores the environment).
            overrides: ``{key: value}`` or ``["key=value", …]`` (``--set``), applied last.
            require_zookeeper: as in :meth:`from_properties`.

        Raises:
            OSError: the file cannot be read.
            ConfigError: see :meth:`from_properties`; also a malformed file or override.
        """
        merged: dict[str, Any] = {}
        sources: dict[str, str] = {}
        if path is not None:
            for key, value in load_properties(path).items():
                merged[key], sources[key] = value, str(path)
        for key, (value, var) in env_overrides(env or {}).items():
            merged[key], sources[key] = value, f"environment variable {var}"
        if overrides is not None:
            pairs = overrides.items() if isinstance(overrides, Mapping) else map(parse_override, overrides)
            for key, value in pairs:
                merged[key], sources[key] = value, "--set override"
        return cls.from_properties(merged, sources=sources, require_zookeeper=require_zookeeper)

    # ================================================================ derived values (Kafka's fallbacks)

    @property
    def effective_zookeeper_connection_timeout_ms(self) -> int:
        """``zookeeper.connection.timeout.ms``, defaulting to the session timeout."""
        if self.zookeeper_connection_timeout_ms is None:
            return self.zookeeper_session_timeout_ms
        return self.zookeeper_connection_timeout_ms

    @property
    def effective_log_dirs(self) -> tuple[str, ...]:
        """``mafka.hot.log.dirs`` if set, else ``log.dirs``, else ``log.dir``, split on commas (``CoreUtils.parseCsvList``)."""
        if self.mafka_hot_log_dirs:
            text: str | None = self.mafka_hot_log_dirs
        else:
            text = self.log_dirs if self.log_dirs is not None else self.log_dir
        return tuple(s for s in _LIST_SPLIT.split(text) if s) if text else ()

    @property
    def effective_cold_log_dirs(self) -> tuple[str, ...]:
        """``mafka.cold.log.dirs`` split on commas (empty: no cold tier)."""
        text = self.mafka_cold_log_dirs
        return tuple(s for s in _LIST_SPLIT.split(text) if s) if text else ()

    @property
    def effective_log_retention_ms(self) -> int:
        """``log.retention.ms`` > ``log.retention.minutes`` > ``log.retention.hours``; any negative → -1 (forever)."""
        if self.log_retention_ms is not None:
            ms = self.log_retention_ms
        elif self.log_retention_minutes is not None:
            ms = self.log_retention_minutes * 60_000
        else:
            ms = self.log_retention_hours * 3_600_000
        return -1 if ms < 0 else ms

    @property
    def effective_log_roll_ms(self) -> int:
        """``log.roll.ms``, else ``log.roll.hours`` in milliseconds."""
        return self.log_roll_ms if self.log_roll_ms is not None else self.log_roll_hours * 3_600_000

    @property
    def effective_log_roll_jitter_ms(self) -> int:
        """``log.roll.jitter.ms``, else ``log.roll.jitter.hours`` in milliseconds."""
        if self.log_roll_jitter_ms is not None:
            return self.log_roll_jitter_ms
        return self.log_roll_jitter_hours * 3_600_000

    @property
    def effective_log_flush_interval_ms(self) -> int:
        """``log.flush.interval.ms``, else ``log.flush.scheduler.interval.ms`` (Long.MAX: never)."""
        if self.log_flush_interval_ms is not None:
            return self.log_flush_interval_ms
        return self.log_flush_scheduler_interval_ms

    @property
    def effective_max_connections_per_ip_overrides(self) -> dict[str, int]:
        """``max.connections.per.ip.overrides`` as ``{host or IP: limit}``."""
        try:
            return {k: int(v) for k, v in _parse_csv_map(self.max_connections_per_ip_overrides).items()}
        except ValueError as exc:
            raise ConfigError.for_key(
                "max.connections.per.ip.overrides",
                str(exc),
                value=self.max_connections_per_ip_overrides,
                source=self.sources.get("max.connections.per.ip.overrides"),
            ) from None

    @property
    def security_protocol_map(self) -> dict[str, str]:
        """``listener.security.protocol.map`` as ``{LISTENER_NAME: PROTOCOL}`` (names upper-cased)."""
        key = "listener.security.protocol.map"
        try:
            raw = _parse_csv_map(self.listener_security_protocol_map)
        except ValueError as exc:
            raise ConfigError.for_key(
                key, str(exc), value=self.listener_security_protocol_map, source=self.sources.get(key)
            ) from None
        out = {}
        for name, protocol in raw.items():
            if protocol.upper() not in SECURITY_PROTOCOLS:
                raise ConfigError.for_key(
                    key, f"Invalid security protocol `{protocol}` defined in {key}", source=self.sources.get(key)
                )
            out[name.upper()] = protocol.upper()
        return out

    @property
    def listener_endpoints(self) -> tuple[Endpoint, ...]:
        """The endpoints to bind: ``listeners``, else ``PLAINTEXT://{host.name}:{port}`` (``PLAINTEXT://:9092``)."""
        if self.listeners is not None:
            key, text = "listeners", self.listeners
        else:
            key, text = "port", f"PLAINTEXT://{self.host_name}:{self.port}"
        try:
            return parse_listeners(text, self.security_protocol_map)
        except ValueError as exc:
            raise ConfigError.for_key(key, str(exc), source=self.sources.get(key)) from None

    @property
    def advertised_endpoints(self) -> tuple[Endpoint, ...]:
        """The endpoints registered in ZooKeeper and returned in Metadata.

        ``advertised.listeners``, else (deprecated) ``advertised.host.name`` /
        ``advertised.port``, else :attr:`listener_endpoints`; an empty host is
        replaced by :data:`DEFAULT_ADVERTISED_HOST`.
        """
        if self.advertised_listeners is not None:
            key, text = "advertised.listeners", self.advertised_listeners
            try:
                endpoints = parse_listeners(text, self.security_protocol_map, require_distinct_ports=False)
            except ValueError as exc:
                raise ConfigError.for_key(key, str(exc), source=self.sources.get(key)) from None
        elif self.advertised_host_name is not None or self.advertised_port is not None:
            host = self.advertised_host_name if self.advertised_host_name is not None else self.host_name
            port = self.advertised_port if self.advertised_port is not None else self.port
            try:
                endpoints = parse_listeners(
                    f"PLAINTEXT://{host}:{port}", self.security_protocol_map, require_distinct_ports=False
                )
            except ValueError as exc:
                raise ConfigError.for_key("advertised.host.name", str(exc)) from None
        else:
            endpoints = self.listener_endpoints
        return tuple(e._replace(host=DEFAULT_ADVERTISED_HOST) if not e.host else e for e in endpoints)

    @property
    def inter_broker_listener(self) -> str:
        """The listener name brokers use to reach each other.

        ``inter.broker.listener.name`` (upper-cased) if set, else the listener
        named after ``security.inter.broker.protocol`` (``PLAINTEXT``).
        """
        if self.inter_broker_listener_name is not None:
            return self.inter_broker_listener_name.upper()
        return self.security_inter_broker_protocol.upper()

    @property
    def inter_broker_endpoint(self) -> Endpoint:
        """The advertised endpoint of :attr:`inter_broker_listener`."""
        name = self.inter_broker_listener
        for endpoint in self.advertised_endpoints:
            if endpoint.name == name:
                return endpoint
        raise ConfigError.for_key("inter.broker.listener.name", f"no advertised listener named {name}")

    def get(self, key: str) -> Any:
        """The value of a Kafka key (typed for known keys, the raw string for kept unknown ones).

        Raises:
            KeyError: the key is neither defined nor was supplied.
        """
        spec = CONFIG_KEYS.get(key)
        if spec is not None:
            return getattr(self, spec.attr)
        return self.unknown[key]

    # ================================================================ log config

    def log_config(self) -> LogConfig:
        """The :class:`LogConfig` of topics without overrides, from the broker's ``log.*`` synonyms.

        Follows Kafka's ``LogConfig.extractLogConfigMap`` (``segment.ms`` from
        ``log.roll.ms``/``log.roll.hours``, ``retention.ms`` from the retention
        precedence, ``flush.ms`` from ``log.flush.interval.ms`` or the scheduler
        interval …).  Topic overrides are applied on top with
        ``LogConfig.from_properties(overrides, base=config.log_config())``.

        Raises:
            ConfigError: :class:`LogConfig` refuses a value (named by its broker key).
        """
        candidates = {
            "segment.bytes": self.log_segment_bytes,
            "segment.ms": self.effective_log_roll_ms,
            "segment.jitter.ms": self.effective_log_roll_jitter_ms,
            "segment.index.bytes": self.log_index_size_max_bytes,
            "flush.messages": self.log_flush_interval_messages,
            "flush.ms": self.effective_log_flush_interval_ms,
            "retention.bytes": self.log_retention_bytes,
            "retention.ms": self.effective_log_retention_ms,
            "max.message.bytes": self.message_max_bytes,
            "index.interval.bytes": self.log_index_interval_bytes,
            "delete.retention.ms": self.log_cleaner_delete_retention_ms,
            "min.compaction.lag.ms": self.log_cleaner_min_compaction_lag_ms,
            "max.compaction.lag.ms": self.log_cleaner_max_compaction_lag_ms,
            "file.delete.delay.ms": self.log_segment_delete_delay_ms,
            "min.cleanable.dirty.ratio": self.log_cleaner_min_cleanable_ratio,
            "cleanup.policy": ",".join(self.log_cleanup_policy),
            "min.insync.replicas": self.min_insync_replicas,
            "compression.type": self.compression_type,
            "unclean.leader.election.enable": self.unclean_leader_election_enable,
            "preallocate": self.log_preallocate,
            "message.format.version": self.log_message_format_version,
            "message.timestamp.type": self.log_message_timestamp_type,
            "message.timestamp.difference.max.ms": self.log_message_timestamp_difference_max_ms,
            "message.downconversion.enable": self.log_message_downconversion_enable,
            "mafka.delay.ms": self.mafka_delay_ms,
            "mafka.delay.max.ms": self.mafka_delay_max_ms,
            "mafka.txn.check.interval.ms": self.mafka_txn_check_interval_ms,
            "mafka.txn.check.max.times": self.mafka_txn_check_max_times,
            "mafka.txn.check.default.action": self.mafka_txn_check_default_action,
        }
        # Only the topic configs LogConfig models (it may grow; the rest belong to other layers).
        props = {k: v for k, v in candidates.items() if k in TOPIC_CONFIG_NAMES}
        try:
            return LogConfig.from_properties(props)
        except ConfigError as exc:
            culprit = next((LOG_CONFIG_SYNONYMS[k] for k in props if k in str(exc)), None)
            raise ConfigError.for_key(culprit, f"not a valid log default: {exc}") from None

    # ================================================================ display

    def to_properties(self, *, include_defaults: bool = True) -> dict[str, str]:
        """Kafka-named string values, sorted by key, for display (``--describe``-style).

        Null values are left out; kept unknown keys are included, and any
        value whose key mentions ``password`` is shown as ``[hidden]``.

        Args:
            include_defaults: ``False`` shows only the explicitly set keys.
        """
        out: dict[str, str] = {}
        for spec in CONFIG_KEYS.values():
            if not include_defaults and spec.name not in self.explicit_keys:
                continue
            text = spec.render(getattr(self, spec.attr))
            if text is not None:
                out[spec.name] = text
        for key, value in self.unknown.items():
            out[key] = "[hidden]" if "password" in key.lower() else value
        return dict(sorted(out.items()))

    def __repr__(self) -> str:
        shown = ", ".join(f"{k}={v!r}" for k, v in self.to_properties(include_defaults=False).items())
        return f"BrokerConfig({shown})"

    # ================================================================ Kafka's validateValues

    def _fail(self, key: str, reason: str, value: Any = None) -> ConfigError:
        return ConfigError.for_key(key, reason, value=value, source=self.sources.get(key))

    def _cross_check(self) -> None:
        if self.broker_id_generation_enable:
            if not -1 <= self.broker_id <= self.reserved_broker_max_id:
                raise self._fail(
                    "broker.id",
                    "broker.id must be greater than or equal to -1 and not greater than reserved.broker.max.id",
                    self.broker_id,
                )
        elif self.broker_id < 0:
            raise self._fail("broker.id", "broker.id must be greater than or equal to 0", self.broker_id)
        if self.effective_log_roll_ms < 1:
            raise self._fail("log.roll.ms", "log.roll.ms must be greater than or equal to 1", self.effective_log_roll_ms)
        if self.effective_log_roll_jitter_ms < 0:
            raise self._fail("log.roll.jitter.ms", "log.roll.jitter.ms must be greater than or equal to 0")
        retention = self.effective_log_retention_ms
        if retention != -1 and retention < 1:
            key = next(
                (k for k in ("log.retention.ms", "log.retention.minutes") if getattr(self, k.replace(".", "_")) is not None),
                "log.retention.hours",
            )
            raise self._fail(key, "log.retention.ms must be unlimited (-1) or, greater than or equal to 1", 0)
        if not self.effective_log_dirs:
            raise self._fail("log.dirs", "At least one log directory must be defined via log.dirs or log.dir.")
        if not self.log_cleanup_policy:
            raise self._fail("log.cleanup.policy", "log.cleanup.policy must name delete and/or compact")
        try:
            replica_selector_for(self.replica_selector_class)
        except UnknownReplicaSelectorError as exc:
            # Kafka fails later, instantiating the class at ReplicaManager start; the broker
            # does not start either way, so say so while reading the config.
            raise self._fail("replica.selector.class", str(exc), self.replica_selector_class) from None
        if self.log_cleaner_threads > 0 and self.log_cleaner_dedupe_buffer_size / self.log_cleaner_threads <= 1024 * 1024:
            raise self._fail(
                "log.cleaner.dedupe.buffer.size", "log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread."
            )
        if self.replica_fetch_wait_max_ms > self.replica_socket_timeout_ms:
            raise self._fail(
                "replica.fetch.wait.max.ms",
                "replica.socket.timeout.ms should always be at least replica.fetch.wait.max.ms"
                " to prevent unnecessary socket timeouts",
            )
        if self.replica_fetch_wait_max_ms > self.replica_lag_time_max_ms:
            raise self._fail(
                "replica.fetch.wait.max.ms",
                "replica.fetch.wait.max.ms should always be less than or equal to replica.lag.time.max.ms"
                " to prevent frequent changes in ISR",
            )
        if not -1 <= self.offsets_commit_required_acks <= self.offsets_topic_replication_factor:
            raise self._fail(
                "offsets.commit.required.acks",
                "offsets.commit.required.acks must be greater or equal -1 and less or equal to"
                " offsets.topic.replication.factor",
            )
        if 0 < self.queued_max_request_bytes < self.socket_request_max_bytes:
            raise self._fail(
                "queued.max.request.bytes", "queued.max.request.bytes must be larger or equal to socket.request.max.bytes"
            )
        if self.max_connections_per_ip == 0 and not self.effective_max_connections_per_ip_overrides:
            raise self._fail(
                "max.connections.per.ip",
                "max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set.",
            )
        if self.connections_max_idle_ms >= 0 and self.connection_failed_authentication_delay_ms >= self.connections_max_idle_ms:
            raise self._fail(
                "connection.failed.authentication.delay.ms",
                "connection.failed.authentication.delay.ms should always be less than connections.max.idle.ms"
                " to prevent failed authentication responses from timing out",
            )
        self._check_listeners()

    def _check_listeners(self) -> None:
        protocols = self.security_protocol_map
        listeners = self.listener_endpoints
        advertised = self.advertised_endpoints
        names = {e.name for e in listeners}
        advertised_names = {e.name for e in advertised}
        if self.inter_broker_listener_name is not None:
            if "security.inter.broker.protocol" in self.explicit_keys:
                raise self._fail(
                    "inter.broker.listener.name",
                    "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.",
                )
            if self.inter_broker_listener not in protocols:
                raise self._fail(
                    "inter.broker.listener.name",
                    f"Listener with name {self.inter_broker_listener} defined in inter.broker.listener.name"
                    " not found in listener.security.protocol.map.",
                )
        if self.inter_broker_listener not in advertised_names:
            key = "inter.broker.listener.name" if self.inter_broker_listener_name else "security.inter.broker.protocol"
            raise self._fail(
                key,
                "inter.broker.listener.name must be a listener name defined in advertised.listeners. The valid"
                f" options based on currently configured listeners are {','.join(sorted(advertised_names))}",
            )
        if not advertised_names <= names:
            raise self._fail(
                "advertised.listeners",
                "advertised.listeners listener names must be equal to or a subset of the ones defined in listeners."
                f" Found {','.join(sorted(advertised_names))}. The valid options based on the current configuration"
                f" are {','.join(sorted(names))}",
            )
        if any(e.host in ("0.0.0.0", "::") for e in advertised):
            raise self._fail(
                "advertised.listeners",
                "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address.",
            )
        if self.control_plane_listener_name is not None:
            name = self.control_plane_listener_name.upper()
            if name not in protocols or name not in advertised_names:
                raise self._fail(
                    "control.plane.listener.name",
                    "control.plane.listener.name must be a listener name defined in advertised.listeners.",
                )
            if name == self.inter_broker_listener:
                raise self._fail(
                    "control.plane.listener.name",
                    "control.plane.listener.name, when defined, should have a different value from the inter broker"
                    f" listener name. Currently they both have the value {name}",
                )


def _collect_keys() -> dict[str, ConfigKey]:
    keys: dict[str, ConfigKey] = {}
    for f in fields(BrokerConfig):
        meta = f.metadata.get("kafka")
        if meta is None:
            continue
        name, kind, default, at_least, one_of = meta
        keys[name] = ConfigKey(name, f.name, kind, default, at_least, one_of)
    return keys


#: Every Kafka key :class:`BrokerConfig` defines, in declaration order.
CONFIG_KEYS: Final[Mapping[str, ConfigKey]] = MappingProxyType(_collect_keys())

#: Topic config → the broker config that supplies its default (Kafka's ``LogConfig.TopicConfigSynonyms``).
LOG_CONFIG_SYNONYMS: Final[Mapping[str, str]] = MappingProxyType(
    {
        "segment.bytes": "log.segment.bytes",
        "segment.ms": "log.roll.ms",
        "segment.jitter.ms": "log.roll.jitter.ms",
        "segment.index.bytes": "log.index.size.max.bytes",
        "flush.messages": "log.flush.interval.messages",
        "flush.ms": "log.flush.interval.ms",
        "retention.bytes": "log.retention.bytes",
        "retention.ms": "log.retention.ms",
        "max.message.bytes": "message.max.bytes",
        "index.interval.bytes": "log.index.interval.bytes",
        "delete.retention.ms": "log.cleaner.delete.retention.ms",
        "min.compaction.lag.ms": "log.cleaner.min.compaction.lag.ms",
        "max.compaction.lag.ms": "log.cleaner.max.compaction.lag.ms",
        "file.delete.delay.ms": "log.segment.delete.delay.ms",
        "min.cleanable.dirty.ratio": "log.cleaner.min.cleanable.ratio",
        "cleanup.policy": "log.cleanup.policy",
        "unclean.leader.election.enable": "unclean.leader.election.enable",
        "min.insync.replicas": "min.insync.replicas",
        "compression.type": "compression.type",
        "preallocate": "log.preallocate",
        "message.format.version": "log.message.format.version",
        "message.timestamp.type": "log.message.timestamp.type",
        "message.timestamp.difference.max.ms": "log.message.timestamp.difference.max.ms",
        "message.downconversion.enable": "log.message.downconversion.enable",
        "mafka.delay.ms": "mafka.delay.ms",
        "mafka.delay.max.ms": "mafka.delay.max.ms",
        "mafka.txn.check.interval.ms": "mafka.txn.check.interval.ms",
        "mafka.txn.check.max.times": "mafka.txn.check.max.times",
        "mafka.txn.check.default.action": "mafka.txn.check.default.action",
    }
)
