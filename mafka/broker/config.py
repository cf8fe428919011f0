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

This module owns the record itself: its field table (one field per Kafka
key, declared with :func:`~mafka.broker.config_keys.kafka_field`),
construction and loading, the ``effective_*`` fallbacks and display.  The
rest is split by concern, and every public name below is re-exported here:

* :mod:`mafka.broker.config_keys` — one key's ``ConfigDef`` type, default,
  validator and Java value syntax (:class:`ConfigKey`);
* :mod:`mafka.broker.config_sources` — the properties file, ``KAFKA_*``
  variables, ``--set`` overrides and the unknown-key warning;
* :mod:`mafka.broker.config_listeners` — listener parsing and the bound,
  advertised and inter-broker endpoints;
* :mod:`mafka.broker.config_validation` — Kafka's cross-key checks
  (``validateValues``);
* :mod:`mafka.broker.config_log_defaults` — the broker keys that default
  topic configs (:data:`LOG_CONFIG_SYNONYMS`, :meth:`BrokerConfig.log_config`).

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

import os
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Final

from mafka.endpoint import SECURITY_PROTOCOLS, Endpoint
from mafka.errors import ConfigError
from mafka.log.config import LONG_MAX, LogConfig

from . import config_listeners, config_log_defaults
from .config_keys import DOUBLE_MAX, INT_MAX, LIST_SPLIT, ConfigKey, collect_keys, parse_csv_map
from .config_keys import kafka_field as _key
from .config_listeners import (
    DEFAULT_ADVERTISED_HOST,
    DEFAULT_LISTENER_SECURITY_PROTOCOL_MAP,
    parse_listeners,
)
from .config_log_defaults import LOG_CONFIG_SYNONYMS
from .config_sources import (
    NON_CONFIG_ENV_VARS,
    PASSTHROUGH_PREFIXES,
    collect_properties,
    env_overrides,
    env_var_to_key,
    key_to_env_var,
    load_properties,
    parse_override,
    parse_properties,
    warn_unknown,
)
from .config_validation import cross_check

__all__ = [
    "BrokerConfig",
    "CONFIG_KEYS",
    "ConfigKey",
    "DEFAULT_ADVERTISED_HOST",
    "DEFAULT_LISTENER_SECURITY_PROTOCOL_MAP",
    "INT_MAX",
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

#: ``compression.type`` values a broker accepts (``BrokerCompressionCodec``).
_BROKER_COMPRESSION: Final = ("uncompressed", "zstd", "lz4", "snappy", "gzip", "producer")


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
    log_cleaner_io_max_bytes_per_second: float = _key("log.cleaner.io.max.bytes.per.second", "DOUBLE", DOUBLE_MAX)
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
    # KIP-932's share groups (Kafka 4.2's defaults)
    group_share_session_timeout_ms: int = _key("group.share.session.timeout.ms", "INT", 45000, at_least=1)
    group_share_heartbeat_interval_ms: int = _key("group.share.heartbeat.interval.ms", "INT", 5000, at_least=1)
    group_share_max_size: int = _key("group.share.max.size", "INT", 200, at_least=1)
    group_share_record_lock_duration_ms: int = _key("group.share.record.lock.duration.ms", "INT", 30000, at_least=1000)
    # the bounds of a group's share.record.lock.duration.ms (librdkafka's share-consumer CI sets min=1000)
    group_share_min_record_lock_duration_ms: int = _key(
        "group.share.min.record.lock.duration.ms", "INT", 15000, at_least=1000
    )
    group_share_max_record_lock_duration_ms: int = _key(
        "group.share.max.record.lock.duration.ms", "INT", 60000, at_least=30000
    )
    group_share_delivery_count_limit: int = _key("group.share.delivery.count.limit", "INT", 5, at_least=2)
    group_share_partition_max_record_locks: int = _key(
        "group.share.partition.max.record.locks", "INT", 2000, at_least=100
    )
    group_share_max_share_sessions: int = _key("group.share.max.share.sessions", "INT", 2000, at_least=1)
    # KIP-848's consumer groups (Kafka 4's defaults and bounds)
    group_coordinator_rebalance_protocols: tuple[str, ...] = _key(
        "group.coordinator.rebalance.protocols", "LIST", ("classic", "consumer", "share"),
        one_of=("classic", "consumer", "share"),
    )
    group_consumer_session_timeout_ms: int = _key("group.consumer.session.timeout.ms", "INT", 45000, at_least=1)
    group_consumer_min_session_timeout_ms: int = _key(
        "group.consumer.min.session.timeout.ms", "INT", 45000, at_least=1
    )
    group_consumer_max_session_timeout_ms: int = _key(
        "group.consumer.max.session.timeout.ms", "INT", 60000, at_least=1
    )
    group_consumer_heartbeat_interval_ms: int = _key("group.consumer.heartbeat.interval.ms", "INT", 5000, at_least=1)
    group_consumer_min_heartbeat_interval_ms: int = _key(
        "group.consumer.min.heartbeat.interval.ms", "INT", 5000, at_least=1
    )
    group_consumer_max_heartbeat_interval_ms: int = _key(
        "group.consumer.max.heartbeat.interval.ms", "INT", 15000, at_least=1
    )
    group_consumer_max_size: int = _key("group.consumer.max.size", "INT", INT_MAX, at_least=1)
    group_consumer_assignors: tuple[str, ...] = _key(
        "group.consumer.assignors", "LIST", ("uniform", "range"), one_of=("uniform", "range")
    )
    group_consumer_migration_policy: str = _key(
        "group.consumer.migration.policy", "STRING", "bidirectional",
        one_of=("disabled", "upgrade", "downgrade", "bidirectional"),
    )
    # KIP-932's share coordinator and __share_group_state (Kafka 4.4's ShareCoordinatorConfig);
    # snapshot.update.records.per.snapshot's upper bound (500) is checked by the share coordinator service
    share_coordinator_state_topic_num_partitions: int = _key(
        "share.coordinator.state.topic.num.partitions", "INT", 50, at_least=1
    )
    share_coordinator_state_topic_replication_factor: int = _key(
        "share.coordinator.state.topic.replication.factor", "SHORT", 3, at_least=1
    )
    share_coordinator_state_topic_min_isr: int = _key("share.coordinator.state.topic.min.isr", "SHORT", 2, at_least=1)
    share_coordinator_state_topic_segment_bytes: int = _key(
        "share.coordinator.state.topic.segment.bytes", "INT", 104857600, at_least=1
    )
    share_coordinator_state_topic_compression_codec: int = _key(
        "share.coordinator.state.topic.compression.codec", "INT", 0
    )
    share_coordinator_snapshot_update_records_per_snapshot: int = _key(
        "share.coordinator.snapshot.update.records.per.snapshot", "INT", 500, at_least=0
    )
    share_coordinator_write_timeout_ms: int = _key("share.coordinator.write.timeout.ms", "INT", 5000, at_least=1)
    share_coordinator_load_buffer_size: int = _key("share.coordinator.load.buffer.size", "INT", 5242880, at_least=1)
    share_coordinator_state_topic_prune_interval_ms: int = _key(
        "share.coordinator.state.topic.prune.interval.ms", "INT", 300000, at_least=1
    )
    share_coordinator_cold_partition_snapshot_interval_ms: int = _key(
        "share.coordinator.cold.partition.snapshot.interval.ms", "INT", 300000, at_least=1
    )
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
    #: Mafka: the Prometheus /metrics and /health port (mafka.broker.metrics), on by default; -1 serves none
    mafka_metrics_port: int = _key("mafka.metrics.port", "INT", 9404, at_least=-1)
    #: Mafka: a broker whose Produce TP99 (last minute) is above this flags itself slow
    mafka_slow_node_threshold_ms: int = _key("mafka.slow.node.threshold.ms", "LONG", 300, at_least=1)
    #: Mafka: how often each broker writes its /mafka/monitor/<id> report (mafka.broker.monitor)
    mafka_monitor_interval_ms: int = _key("mafka.monitor.interval.ms", "LONG", 10000, at_least=100)
    #: Mafka: a log dir's capacity for the monitor and rebalancer (used = the logs in it); -1: the file system's
    mafka_disk_capacity_bytes: int = _key("mafka.disk.capacity.bytes", "LONG", -1, at_least=-1)
    #: Mafka: a broker whose listener refuses connections (its process is gone) is failed over at
    #: once rather than at its ZooKeeper session expiry (mafka.controller.fast_failover)
    mafka_fast_failover_enable: bool = _key("mafka.fast.failover.enable", "BOOLEAN", True)
    #: Mafka: the broker process freezes its heap after each full garbage collection and collects
    #: everything when it grew by half, and at least this often (mafka.heap_freezer); -1 (or 0) leaves
    #: Python's own collector alone
    mafka_gc_full_collection_interval_ms: int = _key("mafka.gc.full.collection.interval.ms", "LONG", 3600000,
                                                    at_least=-1)
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
        cross_check(self)

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
                warn_unknown(key, sources.get(key))
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
        merged, sources = collect_properties(path, env, overrides)
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
        return tuple(s for s in LIST_SPLIT.split(text) if s) if text else ()

    @property
    def effective_cold_log_dirs(self) -> tuple[str, ...]:
        """``mafka.cold.log.dirs`` split on commas (empty: no cold tier)."""
        text = self.mafka_cold_log_dirs
        return tuple(s for s in LIST_SPLIT.split(text) if s) if text else ()

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
            return {k: int(v) for k, v in parse_csv_map(self.max_connections_per_ip_overrides).items()}
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
        return config_listeners.security_protocol_map(self)

    @property
    def listener_endpoints(self) -> tuple[Endpoint, ...]:
        """The endpoints to bind: ``listeners``, else ``PLAINTEXT://{host.name}:{port}`` (``PLAINTEXT://:9092``)."""
        return config_listeners.listener_endpoints(self)

    @property
    def advertised_endpoints(self) -> tuple[Endpoint, ...]:
        """The endpoints registered in ZooKeeper and returned in Metadata.

        ``advertised.listeners``, else (deprecated) ``advertised.host.name`` /
        ``advertised.port``, else :attr:`listener_endpoints`; an empty host is
        replaced by :data:`DEFAULT_ADVERTISED_HOST`.
        """
        return config_listeners.advertised_endpoints(self)

    @property
    def inter_broker_listener(self) -> str:
        """The listener name brokers use to reach each other.

        ``inter.broker.listener.name`` (upper-cased) if set, else the listener
        named after ``security.inter.broker.protocol`` (``PLAINTEXT``).
        """
        return config_listeners.inter_broker_listener(self)

    @property
    def inter_broker_endpoint(self) -> Endpoint:
        """The advertised endpoint of :attr:`inter_broker_listener`."""
        return config_listeners.inter_broker_endpoint(self)

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

        See :func:`mafka.broker.config_log_defaults.log_config`.  Topic
        overrides are applied on top with
        ``LogConfig.from_properties(overrides, base=config.log_config())``.

        Raises:
            ConfigError: :class:`LogConfig` refuses a value (named by its broker key).
        """
        return config_log_defaults.log_config(self)

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


#: Every Kafka key :class:`BrokerConfig` defines, in declaration order.
CONFIG_KEYS: Final[Mapping[str, ConfigKey]] = MappingProxyType(collect_keys(BrokerConfig))
