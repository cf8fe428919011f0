"""The log: Kafka-format segments, indexes, retention, compaction and crash recovery (no network code)."""
