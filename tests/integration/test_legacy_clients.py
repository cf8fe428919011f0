"""Old-protocol clients against a real 3-broker Mafka cluster: magic 0/1 produced and consumed.

* librdkafka (confluent-kafka) with ``api.version.request=false`` and
  ``broker.version.fallback=0.9.0`` sends Metadata v0, Produce v1 with magic-0
  message sets and Fetch v1 — checked in its ``debug=protocol,msg`` log.
  librdkafka has no magic-1 mode to force: any fallback ≥ 0.10 turns
  ApiVersion requests back on (its docs; checked below), so magic 1 comes
  from kafka-python:
* kafka-python with ``api_version=(0, 10, 0)`` sends Produce v2 (magic 1) and
  Fetch v2, with ``(0, 10, 1)`` Fetch v3, with ``(0, 9)`` Produce v1 / Fetch v1
  (magic 0); consumers use manual assignment and an explicit position.
* Modern clients read what the old producers wrote (stored as v2 batches).

Every record's key, value and order is checked, and for magic 1 its timestamp.
"""

from __future__ import annotations

import logging
import time
import uuid
from collections import defaultdict

import pytest

from tests.harness.cluster import ClusterSpec

from .test_clients import wait_for_leaders

pytestmark = pytest.mark.integration

PARTITIONS = 3
MESSAGES = 400  # per producer run
TS = 1_600_000_000_000
OLD_RDKAFKA = {"api.version.request": False, "broker.version.fallback": "0.9.0"}


CLUSTER = ClusterSpec()  # shared: uuid topic names, every broker stays up


def new_topic(cluster, configs=None) -> str:
    from kafka.admin import KafkaAdminClient, NewTopic

    name = f"old-{uuid.uuid4().hex[:8]}"
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000)
    try:
        admin.create_topics([NewTopic(name, PARTITIONS, 1, topic_configs=configs or {})], timeout_ms=30000)
    finally:
        admin.close()
    wait_for_leaders(cluster, name, PARTITIONS)
    return name


class DebugLog(logging.Handler):
    """librdkafka's debug lines, as confluent-kafka hands them to a Python logger."""

    def __init__(self, name: str) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.logger = logging.getLogger(f"legacy.{name}.{uuid.uuid4().hex[:6]}")
        self.logger.setLevel(logging.DEBUG)
        self.logger.propagate = False
        self.logger.addHandler(self)

    def emit(self, record: logging.LogRecord) -> None:
        self.lines.append(record.getMessage())

    def saw(self, text: str) -> bool:
        return any(text in line for line in self.lines)


def batch_of(tag: str, n: int = MESSAGES):
    """(key, value, timestamp) triples; every 7th key is null."""
    return [(None if i % 7 == 0 else f"key-{i % 13}".encode(), f"{tag}-{i}".encode(), TS + i) for i in range(n)]


def check(sent, received, *, timestamps: bool):
    """Each sent record came back once, with its key (and timestamp), in send order within its partition."""
    assert sorted(v for _, v, _ in sent) == sorted(v for _, v, _, _ in received)
    index = {v: (i, k, ts) for i, (k, v, ts) in enumerate(sent)}
    per_partition = defaultdict(list)
    for k, v, ts, partition in received:
        i, key, sent_ts = index[v]
        assert k == key, v
        if timestamps:
            assert ts == sent_ts, v
        per_partition[partition].append(i)
    assert len(per_partition) > 1
    for indices in per_partition.values():
        assert indices == sorted(indices)


def rdkafka_produce(cluster, topic, batch, conf):
    from confluent_kafka import Producer

    debug = DebugLog("producer")
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 5, "debug": "protocol,msg", **conf},
                        logger=debug.logger)
    failures = []
    for k, v, _ in batch:
        producer.produce(topic, key=k, value=v, on_delivery=lambda err, msg: err and failures.append(err))
        producer.poll(0)
    assert producer.flush(60) == 0
    assert failures == []
    return debug


def rdkafka_consume(cluster, topic, count, conf):
    from confluent_kafka import Consumer, TopicPartition

    debug = DebugLog("consumer")
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                         "enable.auto.commit": False, "debug": "protocol", **conf}, logger=debug.logger)
    consumer.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    received = []
    deadline = time.monotonic() + 90
    try:
        while len(received) < count and time.monotonic() < deadline:
            for m in consumer.consume(500, timeout=1.0):
                assert m.error() is None, m.error()
                received.append((m.key(), m.value(), m.timestamp(), m.partition()))
    finally:
        consumer.close()
    return received, debug


def kafka_python_produce(cluster, topic, batch, api_version, codec):
    from kafka import KafkaProducer

    producer = KafkaProducer(bootstrap_servers=cluster.bootstrap, api_version=api_version, compression_type=codec,
                             linger_ms=5, request_timeout_ms=30000)
    try:
        futures = [producer.send(topic, key=k, value=v, timestamp_ms=ts) for k, v, ts in batch]
        for f in futures:
            f.get(timeout=60)
    finally:
        producer.close()


def kafka_python_consume(cluster, topic, count, api_version=None):
    from kafka import KafkaConsumer, TopicPartition

    kw = {"api_version": api_version} if api_version else {}
    consumer = KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id=None, enable_auto_commit=False,
                             request_timeout_ms=30000, **kw)
    tps = [TopicPartition(topic, p) for p in range(PARTITIONS)]
    consumer.assign(tps)
    for tp in tps:
        consumer.seek(tp, 0)  # no ListOffsets: old versions of it are not in this task's scope
    received = []
    deadline = time.monotonic() + 90
    try:
        while len(received) < count and time.monotonic() < deadline:
            for tp, msgs in consumer.poll(timeout_ms=1000).items():
                received += [(m.key, m.value, (m.timestamp, m.timestamp_type), tp.partition) for m in msgs]
    finally:
        consumer.close()
    return received


# -- (a) librdkafka speaking 0.9: Produce v1 with magic 0, Fetch v1 -----------------------------------


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4"])
def test_rdkafka_0_9_protocol_produces_and_consumes_magic_0(cluster, codec):
    topic = new_topic(cluster)
    sent = batch_of(f"rd09-{codec}")
    debug = rdkafka_produce(cluster, topic, sent, {**OLD_RDKAFKA, "compression.type": codec})
    assert debug.saw("Sent ProduceRequest (v1,") and debug.saw("MsgVersion 0")
    assert not debug.saw("Sent ApiVersionRequest")
    received, debug = rdkafka_consume(cluster, topic, len(sent), OLD_RDKAFKA)
    assert debug.saw("Sent FetchRequest (v1,")
    check(sent, [(k, v, None, p) for k, v, _, p in received], timestamps=False)
    from confluent_kafka import TIMESTAMP_NOT_AVAILABLE

    assert {ts[0] for _, _, ts, _ in received} == {TIMESTAMP_NOT_AVAILABLE}  # magic 0 has no timestamps


def test_rdkafka_0_9_protocol_resolves_logical_offsets_with_list_offsets_v0(cluster):
    """An old consumer's OFFSET_BEGINNING / OFFSET_END go through ListOffsets v0 (old-style offset lists)."""
    from confluent_kafka import OFFSET_BEGINNING, OFFSET_END, Consumer, TopicPartition

    topic = new_topic(cluster)
    sent = batch_of("rd09-lo", 30)
    rdkafka_produce(cluster, topic, sent, OLD_RDKAFKA)

    def consume(logical: int, want: int, seconds: float, while_waiting=None) -> tuple[list[bytes], DebugLog]:
        debug = DebugLog("consumer")
        consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                             "enable.auto.commit": False, "debug": "protocol", **OLD_RDKAFKA}, logger=debug.logger)
        consumer.assign([TopicPartition(topic, p, logical) for p in range(PARTITIONS)])
        received: list[bytes] = []
        deadline = time.monotonic() + seconds
        try:
            while time.monotonic() < deadline and len(received) < want:
                for m in consumer.consume(500, timeout=0.5):
                    assert m.error() is None, m.error()
                    received.append(m.value())
                if while_waiting is not None and debug.saw("Sent FetchRequest"):
                    while_waiting()
                    while_waiting = None
        finally:
            consumer.close()
        return received, debug

    received, debug = consume(OFFSET_BEGINNING, len(sent), 60)
    assert debug.saw("ListOffsetsRequest (v0") or debug.saw("OffsetRequest (v0"), "no ListOffsets v0 was sent"
    assert sorted(received) == sorted(v for _, v, _ in sent)

    later = batch_of("rd09-later", 5)
    received, _ = consume(OFFSET_END, len(later), 60, lambda: rdkafka_produce(cluster, topic, later, {}))
    assert sorted(received) == sorted(v for _, v, _ in later)  # only what came after the end was resolved


def test_rdkafka_fallback_0_10_is_not_a_legacy_mode(cluster):
    """Documents why (b) uses kafka-python: librdkafka asks ApiVersions for any fallback ≥ 0.10."""
    topic = new_topic(cluster)
    debug = rdkafka_produce(cluster, topic, batch_of("rd010", 20),
                            {"api.version.request": False, "broker.version.fallback": "0.10.0"})
    assert debug.saw("Sent ApiVersionRequest") and not debug.saw("MsgVersion 1")


# -- (b, c) kafka-python speaking 0.9 / 0.10: magic 0 and 1 -------------------------------------------------


@pytest.mark.parametrize(
    ("api_version", "timestamps"),
    [((0, 9), False), ((0, 10, 0), True), ((0, 10, 1), True)],
    ids=["0.9-magic0-fetch1", "0.10.0-magic1-fetch2", "0.10.1-magic1-fetch3"],
)
def test_kafka_python_old_api_versions_produce_and_consume(cluster, api_version, timestamps):
    topic = new_topic(cluster)
    sent = []
    for codec in (None, "gzip", "snappy", "lz4"):
        batch = batch_of(f"kp{api_version}-{codec}")
        kafka_python_produce(cluster, topic, batch, api_version, codec)
        sent += batch
    received = kafka_python_consume(cluster, topic, len(sent), api_version)
    if timestamps:
        assert {ts[1] for _, _, ts, _ in received} == {0}  # CreateTime
        check(sent, [(k, v, ts[0], p) for k, v, ts, p in received], timestamps=True)
    else:
        assert {ts for _, _, ts, _ in received} == {(None, None)}
        check(sent, received, timestamps=False)


# -- (d) modern consumers read what old producers wrote ---------------------------------------------------------


def test_modern_consumers_read_old_producers_records(cluster):
    topic = new_topic(cluster)
    magic0 = batch_of("m0-rd")
    rdkafka_produce(cluster, topic, magic0, {**OLD_RDKAFKA, "compression.type": "gzip"})
    magic1 = batch_of("m1-kp")
    kafka_python_produce(cluster, topic, magic1, (0, 10, 0), "lz4")
    total = len(magic0) + len(magic1)
    # kafka-python negotiating its newest versions (Fetch v11+, record batch v2).
    received = kafka_python_consume(cluster, topic, total)
    by_value = {v: (k, ts) for k, v, ts, _ in received}
    check(magic0 + magic1, [(k, v, None, p) for k, v, _, p in received], timestamps=False)
    assert all(by_value[v][1] == (ts, 0) for _, v, ts in magic1)  # magic-1 timestamps kept
    assert all(by_value[v][1][0] == -1 for _, v, _ in magic0)  # magic 0 had none
    # librdkafka negotiating its newest versions.
    received, debug = rdkafka_consume(cluster, topic, total, {})
    assert debug.saw("Sent ApiVersionRequest") and not debug.saw("Sent FetchRequest (v1,")
    check(magic0 + magic1, [(k, v, None, p) for k, v, _, p in received], timestamps=False)
    stamps = {v: ts for _, v, ts, _ in received}
    assert all(stamps[v][1] == ts for _, v, ts in magic1)


# -- message.format.version: accepted, ignored for writing (KIP-724) -------------------------------------------------


def test_message_format_version_is_accepted_and_ignored_for_writing(cluster):
    from kafka.admin import KafkaAdminClient, NewTopic
    from kafka.errors import InvalidConfigurationError

    topic = new_topic(cluster, {"message.format.version": "0.10.0"})
    sent = batch_of("mfv", 50)
    kafka_python_produce(cluster, topic, sent, None, None)
    received = kafka_python_consume(cluster, topic, len(sent), (0, 10, 1))
    check(sent, [(k, v, ts[0], p) for k, v, ts, p in received], timestamps=True)
    admin = KafkaAdminClient(bootstrap_servers=cluster.bootstrap, request_timeout_ms=30000)
    try:
        with pytest.raises(InvalidConfigurationError):
            admin.create_topics([NewTopic(f"bad-{uuid.uuid4().hex[:6]}", 1, 1,
                                          topic_configs={"message.format.version": "0.7.0"})], timeout_ms=30000)
    finally:
        admin.close()
