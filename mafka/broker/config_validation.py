"""Kafka's ``KafkaConfig.validateValues``: the checks across keys, run on every construction.

Owns the rules that relate one broker config key to another (``broker.id``
against ``reserved.broker.max.id``, the log roll/retention fallbacks, the
replica fetch timeouts, ``queued.max.request.bytes`` against
``socket.request.max.bytes`` …) and the listener checks
(:func:`check_listeners`: the inter-broker and control-plane listeners among
the advertised ones, advertised names a subset of the bound ones, no
``0.0.0.0`` advertised).  :meth:`BrokerConfig.__post_init__
<mafka.broker.config.BrokerConfig>` runs :func:`cross_check` after each
key's own range check (:meth:`~mafka.broker.config_keys.ConfigKey.check`).
Each failure is a :class:`~mafka.errors.ConfigError` naming the key and
where it was set.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from mafka.errors import ConfigError

from .replica_selector import UnknownReplicaSelectorError, replica_selector_for

if TYPE_CHECKING:
    from .config import BrokerConfig

__all__ = ["check_listeners", "cross_check"]


def _fail(config: BrokerConfig, key: str, reason: str, value: Any = None) -> ConfigError:
    return ConfigError.for_key(key, reason, value=value, source=config.sources.get(key))


def cross_check(config: BrokerConfig) -> None:
    """Every cross-key check of ``validateValues``, the listener checks last.

    Raises:
        ConfigError: the first check that fails.
    """
    if config.broker_id_generation_enable:
        if not -1 <= config.broker_id <= config.reserved_broker_max_id:
            raise _fail(
                config,
                "broker.id",
                "broker.id must be greater than or equal to -1 and not greater than reserved.broker.max.id",
                config.broker_id,
            )
    elif config.broker_id < 0:
        raise _fail(config, "broker.id", "broker.id must be greater than or equal to 0", config.broker_id)
    if config.effective_log_roll_ms < 1:
        raise _fail(config, "log.roll.ms", "log.roll.ms must be greater than or equal to 1", config.effective_log_roll_ms)
    if config.effective_log_roll_jitter_ms < 0:
        raise _fail(config, "log.roll.jitter.ms", "log.roll.jitter.ms must be greater than or equal to 0")
    retention = config.effective_log_retention_ms
    if retention != -1 and retention < 1:
        key = next(
            (k for k in ("log.retention.ms", "log.retention.minutes") if getattr(config, k.replace(".", "_")) is not None),
            "log.retention.hours",
        )
        raise _fail(config, key, "log.retention.ms must be unlimited (-1) or, greater than or equal to 1", 0)
    if not config.effective_log_dirs:
        raise _fail(config, "log.dirs", "At least one log directory must be defined via log.dirs or log.dir.")
    if not config.log_cleanup_policy:
        raise _fail(config, "log.cleanup.policy", "log.cleanup.policy must name delete and/or compact")
    try:
        replica_selector_for(config.replica_selector_class)
    except UnknownReplicaSelectorError as exc:
        # Kafka fails later, instantiating the class at ReplicaManager start; the broker
        # does not start either way, so say so while reading the config.
        raise _fail(config, "replica.selector.class", str(exc), config.replica_selector_class) from None
    if config.log_cleaner_threads > 0 and config.log_cleaner_dedupe_buffer_size / config.log_cleaner_threads <= 1024 * 1024:
        raise _fail(
            config,
            "log.cleaner.dedupe.buffer.size", "log.cleaner.dedupe.buffer.size must be at least 1MB per cleaner thread."
        )
    if config.replica_fetch_wait_max_ms > config.replica_socket_timeout_ms:
        raise _fail(
            config,
            "replica.fetch.wait.max.ms",
            "replica.socket.timeout.ms should always be at least replica.fetch.wait.max.ms"
            " to prevent unnecessary socket timeouts",
        )
    if config.replica_fetch_wait_max_ms > config.replica_lag_time_max_ms:
        raise _fail(
            config,
            "replica.fetch.wait.max.ms",
            "replica.fetch.wait.max.ms should always be less than or equal to replica.lag.time.max.ms"
            " to prevent frequent changes in ISR",
        )
    if not -1 <= config.offsets_commit_required_acks <= config.offsets_topic_replication_factor:
        raise _fail(
            config,
            "offsets.commit.required.acks",
            "offsets.commit.required.acks must be greater or equal -1 and less or equal to"
            " offsets.topic.replication.factor",
        )
    if 0 < config.queued_max_request_bytes < config.socket_request_max_bytes:
        raise _fail(
            config,
            "queued.max.request.bytes", "queued.max.request.bytes must be larger or equal to socket.request.max.bytes"
        )
    if config.max_connections_per_ip == 0 and not config.effective_max_connections_per_ip_overrides:
        raise _fail(
            config,
            "max.connections.per.ip",
            "max.connections.per.ip can be set to zero only if max.connections.per.ip.overrides property is set.",
        )
    if config.connections_max_idle_ms >= 0 and config.connection_failed_authentication_delay_ms >= config.connections_max_idle_ms:
        raise _fail(
            config,
            "connection.failed.authentication.delay.ms",
            "connection.failed.authentication.delay.ms should always be less than connections.max.idle.ms"
            " to prevent failed authentication responses from timing out",
        )
    _check_consumer_group_timeouts(config)
    check_listeners(config)


def _check_consumer_group_timeouts(config: BrokerConfig) -> None:
    """Kafka 4's ``GroupCoordinatorConfig`` checks of the KIP-848 session and heartbeat bounds."""
    c = config
    for key, value, low, high in (
        ("group.consumer.session.timeout.ms", c.group_consumer_session_timeout_ms,
         c.group_consumer_min_session_timeout_ms, c.group_consumer_max_session_timeout_ms),
        ("group.consumer.heartbeat.interval.ms", c.group_consumer_heartbeat_interval_ms,
         c.group_consumer_min_heartbeat_interval_ms, c.group_consumer_max_heartbeat_interval_ms),
    ):
        min_key, max_key = key.replace("consumer.", "consumer.min."), key.replace("consumer.", "consumer.max.")
        if value < low:
            raise _fail(config, key, f"{key} must be greater than or equal to {min_key}", value)
        if value > high:
            raise _fail(config, key, f"{key} must be less than or equal to {max_key}", value)
    if c.group_consumer_heartbeat_interval_ms >= c.group_consumer_session_timeout_ms:
        raise _fail(config, "group.consumer.heartbeat.interval.ms",
                    "group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms",
                    c.group_consumer_heartbeat_interval_ms)

def check_listeners(config: BrokerConfig) -> None:
    """The listener checks of ``validateValues`` (see the module docstring).

    Raises:
        ConfigError: the first check that fails.
    """
    protocols = config.security_protocol_map
    listeners = config.listener_endpoints
    advertised = config.advertised_endpoints
    names = {e.name for e in listeners}
    advertised_names = {e.name for e in advertised}
    if config.inter_broker_listener_name is not None:
        if "security.inter.broker.protocol" in config.explicit_keys:
            raise _fail(
                config,
                "inter.broker.listener.name",
                "Only one of inter.broker.listener.name and security.inter.broker.protocol should be set.",
            )
        if config.inter_broker_listener not in protocols:
            raise _fail(
                config,
                "inter.broker.listener.name",
                f"Listener with name {config.inter_broker_listener} defined in inter.broker.listener.name"
                " not found in listener.security.protocol.map.",
            )
    if config.inter_broker_listener not in advertised_names:
        key = "inter.broker.listener.name" if config.inter_broker_listener_name else "security.inter.broker.protocol"
        raise _fail(
            config,
            key,
            "inter.broker.listener.name must be a listener name defined in advertised.listeners. The valid"
            f" options based on currently configured listeners are {','.join(sorted(advertised_names))}",
        )
    if not advertised_names <= names:
        raise _fail(
            config,
            "advertised.listeners",
            "advertised.listeners listener names must be equal to or a subset of the ones defined in listeners."
            f" Found {','.join(sorted(advertised_names))}. The valid options based on the current configuration"
            f" are {','.join(sorted(names))}",
        )
    if any(e.host in ("0.0.0.0", "::") for e in advertised):
        raise _fail(
            config,
            "advertised.listeners",
            "advertised.listeners cannot use the nonroutable meta-address 0.0.0.0. Use a routable IP address.",
        )
    if config.control_plane_listener_name is not None:
        name = config.control_plane_listener_name.upper()
        if name not in protocols or name not in advertised_names:
            raise _fail(
                config,
                "control.plane.listener.name",
                "control.plane.listener.name must be a listener name defined in advertised.listeners.",
            )
        if name == config.inter_broker_listener:
            raise _fail(
                config,
                "control.plane.listener.name",
                "control.plane.listener.name, when defined, should have a different value from the inter broker"
                f" listener name. Currently they both have the value {name}",
            )
