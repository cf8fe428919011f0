"""The broker's defaults for topic configs: Kafka's ``LogConfig.TopicConfigSynonyms``.

Owns which broker key supplies the default of which topic config
(:data:`LOG_CONFIG_SYNONYMS`: ``segment.bytes`` from ``log.segment.bytes``,
``retention.ms`` from ``log.retention.ms`` …) and building the
:class:`~mafka.log.config.LogConfig` of topics without overrides from a
:class:`~mafka.broker.config.BrokerConfig` (:func:`log_config`, Kafka's
``LogConfig.extractLogConfigMap``), the broker's fallbacks applied (its
``effective_*`` values).  Topic overrides are layered on top elsewhere
(:mod:`mafka.broker.topic_configs`).
"""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Final

from mafka.errors import ConfigError
from mafka.log.config import TOPIC_CONFIG_NAMES, LogConfig

if TYPE_CHECKING:
    from .config import BrokerConfig

__all__ = ["LOG_CONFIG_SYNONYMS", "log_config"]

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


def log_config(config: BrokerConfig) -> LogConfig:
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
        "segment.bytes": config.log_segment_bytes,
        "segment.ms": config.effective_log_roll_ms,
        "segment.jitter.ms": config.effective_log_roll_jitter_ms,
        "segment.index.bytes": config.log_index_size_max_bytes,
        "flush.messages": config.log_flush_interval_messages,
        "flush.ms": config.effective_log_flush_interval_ms,
        "retention.bytes": config.log_retention_bytes,
        "retention.ms": config.effective_log_retention_ms,
        "max.message.bytes": config.message_max_bytes,
        "index.interval.bytes": config.log_index_interval_bytes,
        "delete.retention.ms": config.log_cleaner_delete_retention_ms,
        "min.compaction.lag.ms": config.log_cleaner_min_compaction_lag_ms,
        "max.compaction.lag.ms": config.log_cleaner_max_compaction_lag_ms,
        "file.delete.delay.ms": config.log_segment_delete_delay_ms,
        "min.cleanable.dirty.ratio": config.log_cleaner_min_cleanable_ratio,
        "cleanup.policy": ",".join(config.log_cleanup_policy),
        "min.insync.replicas": config.min_insync_replicas,
        "compression.type": config.compression_type,
        "unclean.leader.election.enable": config.unclean_leader_election_enable,
        "preallocate": config.log_preallocate,
        "message.format.version": config.log_message_format_version,
        "message.timestamp.type": config.log_message_timestamp_type,
        "message.timestamp.difference.max.ms": config.log_message_timestamp_difference_max_ms,
        "message.downconversion.enable": config.log_message_downconversion_enable,
        "mafka.delay.ms": config.mafka_delay_ms,
        "mafka.delay.max.ms": config.mafka_delay_max_ms,
        "mafka.txn.check.interval.ms": config.mafka_txn_check_interval_ms,
        "mafka.txn.check.max.times": config.mafka_txn_check_max_times,
        "mafka.txn.check.default.action": config.mafka_txn_check_default_action,
    }
    # Only the topic configs LogConfig models (it may grow; the rest belong to other layers).
    props = {k: v for k, v in candidates.items() if k in TOPIC_CONFIG_NAMES}
    try:
        return LogConfig.from_properties(props)
    except ConfigError as exc:
        culprit = next((LOG_CONFIG_SYNONYMS[k] for k in props if k in str(exc)), None)
        raise ConfigError.for_key(culprit, f"not a valid log default: {exc}") from None
