"""LogConfig: Kafka's topic-config names, defaults and validation."""

from __future__ import annotations

import pytest

from mafka.errors import ConfigError
from mafka.log.config import LONG_MAX, TOPIC_CONFIG_NAMES, LogConfig


def test_kafka_defaults():
    c = LogConfig()
    assert (c.segment_bytes, c.segment_ms, c.index_interval_bytes, c.segment_index_bytes) == (1073741824, 604800000, 4096, 10485760)
    assert (c.retention_ms, c.retention_bytes, c.cleanup_policy) == (604800000, -1, ("delete",))
    assert (c.flush_messages, c.flush_ms) == (LONG_MAX, LONG_MAX)
    assert (c.min_cleanable_dirty_ratio, c.delete_retention_ms, c.max_message_bytes) == (0.5, 86400000, 1048588)


def test_names_are_kafkas():
    for name in ("segment.bytes", "retention.ms", "cleanup.policy", "min.cleanable.dirty.ratio", "flush.messages",
                 "message.timestamp.type", "max.message.bytes", "min.compaction.lag.ms", "index.interval.bytes"):
        assert name in TOPIC_CONFIG_NAMES


def test_from_properties_converts_and_overrides_a_base():
    base = LogConfig(retention_ms=1000)
    c = LogConfig.from_properties({"segment.bytes": "2048", "cleanup.policy": "delete,compact", "preallocate": "true"}, base)
    assert c.segment_bytes == 2048 and c.retention_ms == 1000 and c.preallocate
    assert c.compact and c.delete
    assert LogConfig.from_properties(c.to_properties()) == c


@pytest.mark.parametrize(
    "props",
    [
        {"segment.bytes": "ten"},
        {"segment.bytes": "10"},
        {"cleanup.policy": "shred"},
        {"min.cleanable.dirty.ratio": "1.5"},
        {"message.timestamp.type": "Wallclock"},
        {"retention.ms": "-5"},
        {"no.such.config": "1"},
        {"preallocate": "yes"},
    ],
)
def test_invalid_values_are_refused(props):
    with pytest.raises(ConfigError):
        LogConfig.from_properties(props)


def test_an_empty_cleanup_policy_keeps_everything_as_kafka_2_8():
    c = LogConfig.from_properties({"cleanup.policy": ""}, LogConfig())
    assert c.cleanup_policy == () and not c.compact and not c.delete
