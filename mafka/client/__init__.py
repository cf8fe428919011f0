"""Mafka's own Kafka client library: producer, consumer and admin (later issues)."""
