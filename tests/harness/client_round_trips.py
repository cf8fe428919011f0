"""Real-client round trips for the security integration tests: the one copy of "a client can
create, write, read in a group and commit" that the SASL, TLS and ACL tests run over their
listeners.

The callers own the security: every function takes the client configuration (listener's
bootstrap servers, ``security.protocol``, SASL mechanism and credentials, certificates) as a
dict and adds only what a round trip needs (``acks=all``, the group, offset reset, manual
commit).  Every wait is bounded; every check is an ``assert`` with what the clients saw.

* :func:`new_topic`: a topic with a fresh name, created with kafka-python's admin client;
* :func:`numbered_values`: the record values the round trips write and expect back;
* :func:`produce_all`: writes values with confluent-kafka (or mafka.client), all delivered;
* :func:`poll_values`: the values a subscribed confluent-kafka-API consumer reads, up to a count;
* :func:`produce_consume_commit`: confluent-kafka or mafka.client (one API): produce with
  ``acks=all``, consume in a group, commit, check the committed offsets and the error callbacks;
* :func:`kafka_python_round_trip`: the same with kafka-python's producer and consumer;
* :func:`aiokafka_round_trip`: the same with aiokafka's producer and consumer;
* :func:`replicate_to_full_isr`: ``acks=all`` writes to a replicated topic, then every
  partition's ISR must hold every replica (how the tests show that the brokers' own,
  authenticated, inter-broker listener carries replication).
"""

from __future__ import annotations

import asyncio
import importlib
import time
import uuid
from typing import Any

__all__ = [
    "aiokafka_round_trip",
    "kafka_python_round_trip",
    "new_topic",
    "numbered_values",
    "poll_values",
    "produce_all",
    "produce_consume_commit",
    "replicate_to_full_isr",
]


def new_topic(cluster, prefix: str, partitions: int = 3, rf: int = 3) -> str:
    """Creates ``<prefix>-<8 hex digits>`` with *partitions* partitions and replication factor
    *rf* through kafka-python's admin client on the cluster's PLAINTEXT bootstrap; returns its
    name.  Asserts nothing beyond the admin call succeeding (it raises otherwise)."""
    from kafka.admin import KafkaAdminClient, NewTopic

    name = f"{prefix}-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000)
    try:
        admin.create_topics([NewTopic(name, partitions, rf)], timeout_ms=30000)
    finally:
        admin.close()
    return name


def numbered_values(count: int, size: int = 0) -> list[bytes]:
    """``b"v0"``, ``b"v1"``, … ``b"v<count-1>"``, each padded with ``x`` to *size* bytes when
    *size* is larger (large records: fetch responses of several MB).  All distinct."""
    return [(b"v%d" % i).ljust(size, b"x") for i in range(count)]


def produce_all(conf: dict[str, Any], topic: str, values: list[bytes], *, keyed: bool = False,
                partitions: int | None = None, timeout: float = 30, client: str = "confluent_kafka") -> None:
    """Writes *values* (the i-th with key ``b"k<i>"`` if *keyed*, to partition ``i % partitions``
    if *partitions* is given) with a ``Producer`` of *client* (``confluent_kafka`` or
    ``mafka.client``) built from *conf* as it is.  Asserts that ``flush(timeout)`` leaves no
    message undelivered."""
    producer = importlib.import_module(client).Producer(conf)
    for i, value in enumerate(values):
        extra: dict[str, Any] = {}
        if keyed:
            extra["key"] = b"k%d" % i
        if partitions is not None:
            extra["partition"] = i % partitions
        producer.produce(topic, value=value, **extra)
    assert producer.flush(timeout) == 0


def poll_values(consumer, count: int, timeout: float) -> list[bytes]:
    """Polls a subscribed confluent-kafka-API consumer (confluent-kafka or mafka.client) until it
    has read *count* values or *timeout* seconds passed; returns the values of the messages read
    without error, in the order read.  Asserts nothing: the caller judges what came back."""
    got: list[bytes] = []
    deadline = time.monotonic() + timeout
    while len(got) < count and time.monotonic() < deadline:
        msg = consumer.poll(0.5)
        if msg is not None and msg.error() is None:
            got.append(msg.value())
    return got


def produce_consume_commit(bootstrap: str, topic: str, conf: dict[str, Any], count: int = 100, size: int = 0,
                           client: str = "confluent_kafka") -> None:
    """Produce with acks=all, consume in a group, commit: with confluent-kafka or mafka.client (same API).

    ``numbered_values(count, size)`` go out keyed (``b"k<i>"``) with ``acks=all``; a consumer of
    group ``g-<topic>`` (``auto.offset.reset=earliest``, no auto-commit) reads them back for up
    to 60 s, commits synchronously and asks for its committed offsets.  Both clients get
    ``bootstrap.servers`` = *bootstrap*, an ``error_cb`` and every key of *conf*.  Asserts: every
    message was delivered (``flush(30) == 0``); exactly those values came back (as a multiset,
    so each at its full *size*; the message names the errors reported); the committed offsets
    of the assigned partitions sum to *count*; no error whose name contains ``AUTH`` reached
    ``error_cb``.
    """
    module = importlib.import_module(client)
    values = numbered_values(count, size)
    errors: list = []
    produce_all({"bootstrap.servers": bootstrap, "acks": "all", "error_cb": errors.append, **conf},
                topic, values, keyed=True, client=client)
    consumer = module.Consumer({"bootstrap.servers": bootstrap, "group.id": f"g-{topic}",
                                "auto.offset.reset": "earliest", "enable.auto.commit": False,
                                "error_cb": errors.append, **conf})
    consumer.subscribe([topic])
    got = poll_values(consumer, len(values), timeout=60)
    consumer.commit(asynchronous=False)
    committed = consumer.committed(consumer.assignment(), timeout=10)
    consumer.close()
    assert sorted(got) == sorted(values), f"{len(got)} of {len(values)} records read back; errors: {errors}"
    assert sum(tp.offset for tp in committed) == count
    assert not [e for e in errors if "AUTH" in e.name()], errors


def kafka_python_round_trip(conf: dict[str, Any], topic: str, count: int = 100, keyed: bool = False) -> None:
    """kafka-python's producer (``acks=all``) writes ``numbered_values(count)`` (keyed
    ``b"k<i>"`` if *keyed*); a ``KafkaConsumer`` of group ``g-<topic>`` (earliest, no
    auto-commit, 20 s consumer timeout) reads until it has *count* values and commits.  Both
    are built with every key of *conf* (``bootstrap_servers`` and the security settings, in
    kafka-python's spelling).  Asserts: exactly those values came back (as a multiset); the
    offsets committed for the topic's partitions sum to *count*."""
    from kafka import KafkaConsumer, KafkaProducer, TopicPartition

    values = numbered_values(count)
    producer = KafkaProducer(acks="all", **conf)
    for i, value in enumerate(values):
        producer.send(topic, key=b"k%d" % i if keyed else None, value=value)
    producer.flush(30)
    producer.close()
    consumer = KafkaConsumer(topic, group_id=f"g-{topic}", auto_offset_reset="earliest", enable_auto_commit=False,
                             consumer_timeout_ms=20000, **conf)
    got = []
    for msg in consumer:
        got.append(msg.value)
        if len(got) == count:
            break
    consumer.commit()
    partitions = consumer.partitions_for_topic(topic) or set()
    committed = sum(consumer.committed(TopicPartition(topic, p)) or 0 for p in partitions)
    consumer.close()
    assert sorted(got) == sorted(values)
    assert committed == count


def aiokafka_round_trip(conf: dict[str, Any], topic: str, count: int = 100) -> None:
    """aiokafka's producer (``acks=all``) writes ``numbered_values(count)`` and flushes; an
    ``AIOKafkaConsumer`` of group ``g-<topic>`` (earliest, no auto-commit) reads until it has
    *count* values (60 s at most) and commits.  Both are built with every key of *conf*
    (``bootstrap_servers``, ``security_protocol``, SASL settings or an ``ssl_context``).
    Asserts that exactly those values came back (as a multiset)."""
    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer

    values = numbered_values(count)

    async def run() -> list[bytes]:
        producer = AIOKafkaProducer(acks="all", **conf)
        await producer.start()
        try:
            for value in values:
                await producer.send(topic, value=value)
            await producer.flush()
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(topic, group_id=f"g-{topic}", auto_offset_reset="earliest",
                                    enable_auto_commit=False, **conf)
        await consumer.start()
        got: list[bytes] = []
        try:
            async with asyncio.timeout(60):
                async for msg in consumer:
                    got.append(msg.value)
                    if len(got) == count:
                        break
            await consumer.commit()
        finally:
            await consumer.stop()
        return got

    assert sorted(asyncio.run(run())) == sorted(values)


def replicate_to_full_isr(bootstrap: str, topic: str, records: int = 200, replicas: int = 3,
                          timeout: float = 30) -> None:
    """Writes *records* values to *topic* with confluent-kafka and ``acks=all`` over *bootstrap*,
    then polls the topic's metadata until every partition's ISR has *replicas* members.  With
    the brokers replicating over an authenticated inter-broker listener, a whole ISR shows the
    followers fetched over it.  Asserts: every record delivered (``flush(30) == 0``); the ISRs
    whole within *timeout* seconds (the message names each partition's ISR)."""
    from confluent_kafka.admin import AdminClient

    produce_all({"bootstrap.servers": bootstrap, "acks": "all"}, topic, [b"x%d" % i for i in range(records)])
    admin = AdminClient({"bootstrap.servers": bootstrap})
    deadline = time.monotonic() + timeout
    while True:
        meta = admin.list_topics(topic, timeout=10).topics[topic]
        if all(len(p.isrs) == replicas for p in meta.partitions.values()):
            break
        assert time.monotonic() < deadline, {p.id: p.isrs for p in meta.partitions.values()}
        time.sleep(0.2)
