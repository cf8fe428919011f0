"""Mafka's Python client library: ``Producer``, ``Consumer``, ``AdminClient`` (confluent-kafka's
API) and, in :mod:`mafka.client.aio`, ``AIOProducer`` / ``AIOConsumer`` for asyncio.

Pure Python on :mod:`mafka.wire`; works against Mafka and Apache Kafka alike.  Names
are loaded lazily, so importing :mod:`mafka.client` alone loads nothing heavy.  (The broker's
own inter-broker connection lives in :mod:`mafka.interbroker`.)

Example::

    from mafka.client import Consumer, Producer

    p = Producer({"bootstrap.servers": "127.0.0.1:9092"})
    p.produce("demo", key=b"k", value=b"hello")
    p.flush()
    c = Consumer({"bootstrap.servers": "127.0.0.1:9092", "group.id": "g",
                  "auto.offset.reset": "earliest"})
    c.subscribe(["demo"])
    msg = c.poll(10.0)
    print(msg.key(), msg.value())
    c.close()
"""

from __future__ import annotations

import importlib
from typing import Any

_EXPORTS = {
    "Producer": "mafka.client.producer",
    "TransactionalMessageProducer": "mafka.client.local_transactions",
    "HalfMessage": "mafka.client.local_transactions",
    "Consumer": "mafka.client.consumer",
    "ShareConsumer": "mafka.client.share_consumer",
    "AcknowledgeType": "mafka.client.share_acknowledgements",
    "IllegalStateException": "mafka.client.share_acknowledgements",
    "AdminClient": "mafka.client.admin",
    "NewTopic": "mafka.client.admin",
    "NewPartitions": "mafka.client.admin",
    "ConfigResource": "mafka.client.admin",
    "TopicPartition": "mafka.client.message",
    "Message": "mafka.client.message",
    "OFFSET_BEGINNING": "mafka.client.message",
    "OFFSET_END": "mafka.client.message",
    "OFFSET_STORED": "mafka.client.message",
    "OFFSET_INVALID": "mafka.client.message",
    "TIMESTAMP_NOT_AVAILABLE": "mafka.client.message",
    "TIMESTAMP_CREATE_TIME": "mafka.client.message",
    "TIMESTAMP_LOG_APPEND_TIME": "mafka.client.message",
    "KafkaError": "mafka.client.kafka_error",
    "KafkaException": "mafka.client.kafka_error",
    "ConfigError": "mafka.client.config",
    "ConsumerGroupMetadata": "mafka.client.group_metadata",
}

__all__ = sorted(_EXPORTS)


def __getattr__(name: str) -> Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError(f"module 'mafka.client' has no attribute {name!r}")
    return getattr(importlib.import_module(module), name)
