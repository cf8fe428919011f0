"""Per-log configuration under Kafka's topic-config names and 2.8 defaults.

:class:`LogConfig` holds the topic-level settings the log layer obeys
(``segment.bytes``, ``retention.ms``, ``cleanup.policy`` …).  Build one from
Kafka-named properties with :meth:`LogConfig.from_properties`; values are
validated and converted, unknown names are refused (callers decide whether
to warn), and every attribute is the snake_case of its Kafka name.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

from mafka.errors import ConfigError

__all__ = ["LogConfig", "LONG_MAX", "TOPIC_CONFIG_NAMES"]

#: Java's Long.MAX_VALUE, Kafka's "never" for flush.messages and flush.ms.
LONG_MAX = 9223372036854775807


@dataclass(frozen=True, slots=True)
class LogConfig:
    """Topic-level log settings (attribute = Kafka name with ``.`` → ``_``)."""

    segment_bytes: int = 1073741824
    segment_ms: int = 604800000
    segment_jitter_ms: int = 0
    segment_index_bytes: int = 10485760
    index_interval_bytes: int = 4096
    retention_ms: int = 604800000
    retention_bytes: int = -1
    cleanup_policy: tuple[str, ...] = ("delete",)
    delete_retention_ms: int = 86400000
    min_cleanable_dirty_ratio: float = 0.5
    min_compaction_lag_ms: int = 0
    max_compaction_lag_ms: int = LONG_MAX
    flush_messages: int = LONG_MAX
    flush_ms: int = LONG_MAX
    file_delete_delay_ms: int = 60000
    max_message_bytes: int = 1048588
    message_timestamp_type: str = "CreateTime"
    message_timestamp_difference_max_ms: int = LONG_MAX
    preallocate: bool = False
    #: Mafka: the delay of a record that asks for none (``mafka.delayed``); 0 = none
    mafka_delay_ms: int = 0
    #: Mafka: the longest delay a record may ask for (7 days)
    mafka_delay_max_ms: int = 604800000
    #: Mafka: how long an unresolved half message waits before its producer group is asked (and between asks)
    mafka_txn_check_interval_ms: int = 60000
    #: Mafka: how many check-backs a half message gets before the default action
    mafka_txn_check_max_times: int = 15
    #: Mafka: what happens to a half message after the last check-back: rollback or commit
    mafka_txn_check_default_action: str = "rollback"

    @property
    def compact(self) -> bool:
        return "compact" in self.cleanup_policy

    @property
    def delete(self) -> bool:
        return "delete" in self.cleanup_policy

    @property
    def log_append_time(self) -> bool:
        return self.message_timestamp_type == "LogAppendTime"

    @property
    def max_index_entries(self) -> int:
        """Entries an offset index may hold before the segment must roll."""
        return self.segment_index_bytes // 8

    @classmethod
    def from_properties(cls, props: Mapping[str, Any], base: LogConfig | None = None) -> LogConfig:
        """A config from Kafka-named properties (``{"segment.bytes": "1048576"}``).

        Args:
            props: Kafka topic config names to values (strings or numbers).
            base: the config to override (the broker's defaults); Kafka's
                defaults when None.

        Raises:
            ConfigError: an unknown name or a value Kafka would refuse.
        """
        changes: dict[str, Any] = {}
        for name, raw in props.items():
            attr = TOPIC_CONFIG_NAMES.get(name)
            if attr is None:
                raise ConfigError(f"unknown topic config {name!r}")
            changes[attr] = _convert(name, attr, raw)
        config = replace(base or cls(), **changes)
        config._validate()
        return config

    def to_properties(self) -> dict[str, str]:
        """Kafka-named string values (as DescribeConfigs shows them)."""
        out = {}
        for name, attr in TOPIC_CONFIG_NAMES.items():
            value = getattr(self, attr)
            if isinstance(value, tuple):
                value = ",".join(value)
            elif isinstance(value, bool):
                value = str(value).lower()
            out[name] = str(value)
        return out

    def _validate(self) -> None:
        if self.segment_bytes < 14:
            raise ConfigError("segment.bytes must be at least 14")
        if self.segment_ms < 1 or self.segment_index_bytes < 8 or self.index_interval_bytes < 0:
            raise ConfigError("segment.ms, segment.index.bytes or index.interval.bytes out of range")
        if not 0.0 <= self.min_cleanable_dirty_ratio <= 1.0:
            raise ConfigError("min.cleanable.dirty.ratio must be within [0, 1]")
        # An empty list is valid, as in Kafka 2.8 (ValidList): neither deleted nor compacted.
        if not set(self.cleanup_policy) <= {"delete", "compact"}:
            raise ConfigError(f"cleanup.policy {','.join(self.cleanup_policy)!r} is not delete and/or compact")
        if self.message_timestamp_type not in ("CreateTime", "LogAppendTime"):
            raise ConfigError("message.timestamp.type must be CreateTime or LogAppendTime")
        if self.retention_ms < -1 or self.retention_bytes < -1:
            raise ConfigError("retention.ms and retention.bytes must be -1 or more")
        if self.flush_messages < 1 or self.flush_ms < 0 or self.max_message_bytes < 0:
            raise ConfigError("flush.messages, flush.ms or max.message.bytes out of range")
        if self.mafka_txn_check_interval_ms < 1 or self.mafka_txn_check_max_times < 0:
            raise ConfigError("mafka.txn.check.interval.ms must be positive, mafka.txn.check.max.times 0 or more")
        if self.mafka_txn_check_default_action not in ("rollback", "commit"):
            raise ConfigError("mafka.txn.check.default.action must be rollback or commit")
        if self.mafka_delay_ms < 0 or self.mafka_delay_max_ms < 0 or self.mafka_delay_ms > self.mafka_delay_max_ms:
            raise ConfigError("mafka.delay.ms and mafka.delay.max.ms must be 0 or more, "
                                "mafka.delay.ms at most mafka.delay.max.ms")


#: Kafka topic config name → LogConfig attribute.
TOPIC_CONFIG_NAMES: dict[str, str] = {f.name.replace("_", "."): f.name for f in fields(LogConfig)}


def _convert(name: str, attr: str, raw: Any) -> Any:
    kind = type(getattr(LogConfig(), attr))
    try:
        if kind is tuple:
            parts = raw if isinstance(raw, (list, tuple)) else str(raw).split(",")
            return tuple(sorted(p.strip() for p in parts if p.strip()))
        if kind is bool:
            text = str(raw).strip().lower()
            if text not in ("true", "false"):
                raise ValueError(raw)
            return text == "true"
        if kind is float:
            return float(raw)
        if kind is int:
            return int(str(raw).strip())
        return str(raw).strip()
    except ValueError:
        raise ConfigError(f"invalid value {raw!r} for {name}") from None
