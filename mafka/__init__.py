"""Mafka: a ZooKeeper-coordinated, Kafka-compatible broker cluster."""

__version__ = "0.1.0"
