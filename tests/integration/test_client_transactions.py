"""mafka.client's transactions (KIP-98/KIP-447) on a 3-broker cluster, judged by confluent-kafka too.

* commit, abort, commit with mafka.client's producer: mafka.client's consumer
  under read_committed sees exactly the committed records, under
  read_uncommitted every data record (never a marker), and confluent-kafka's
  read_committed consumer agrees; read_committed watermarks are the LSO;
* abort fails the records still queued (``_PURGE_QUEUE``);
* an open transaction holds mafka.client's read_committed consumer at the
  last stable offset (its end of partition) until it commits;
* consume-transform-produce with ``send_offsets_to_transaction`` and
  mafka.client's ``consumer_group_metadata()``: output and input offsets
  commit together, an aborted round is read again;
* a second instance with the same ``transactional.id`` fences the first
  (fatal ``_FENCED``);
* confluent-kafka's transactional producer read back by mafka.client, and the
  asyncio producer's ``transaction()``.
"""

from __future__ import annotations

import asyncio
import time
import uuid

import pytest
from confluent_kafka import Consumer as CKConsumer
from confluent_kafka import Producer as CKProducer
from confluent_kafka import TopicPartition as CKTopicPartition

from mafka.client import Consumer, KafkaError, KafkaException, Producer, TopicPartition
from tests.harness.cluster import ClusterSpec, LocalCluster

from .test_transactions import SETTINGS, new_topic

pytestmark = pytest.mark.integration

CLUSTER = ClusterSpec(settings=SETTINGS)  # shared with test_transactions and test_transaction_tools


def txn_producer(cluster: LocalCluster, txn_id: str | None = None, **extra) -> Producer:
    p = Producer({"bootstrap.servers": cluster.bootstrap, "transactional.id": txn_id or f"mt-{uuid.uuid4().hex[:6]}",
                  "linger.ms": 5, **extra})
    p.init_transactions(60)
    return p


def read_all(cluster: LocalCluster, topic: str, partitions: int, isolation: str, timeout: float = 20.0) -> list[bytes]:
    """Every value mafka.client's consumer with ``isolation.level`` reads from the start to the end of ``topic``."""
    c = Consumer({
        "bootstrap.servers": cluster.bootstrap, "group.id": f"r-{uuid.uuid4().hex[:6]}",
        "isolation.level": isolation, "enable.auto.commit": False, "enable.partition.eof": True,
        "auto.offset.reset": "earliest",
    })
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        values, eof = [], set()
        deadline = time.monotonic() + timeout
        while len(eof) < partitions and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == KafkaError._PARTITION_EOF:
                    eof.add(m.partition())
                    continue
                raise KafkaException(m.error())
            eof.discard(m.partition())
            values.append(m.value())
        assert len(eof) == partitions, f"did not reach the end of {topic} ({isolation})"
        return values
    finally:
        c.close()


def read_all_confluent(cluster: LocalCluster, topic: str, partitions: int, timeout: float = 20.0) -> list[bytes]:
    """The same with confluent-kafka's consumer, read_committed."""
    c = CKConsumer({
        "bootstrap.servers": cluster.bootstrap, "group.id": f"ck-{uuid.uuid4().hex[:6]}",
        "isolation.level": "read_committed", "enable.auto.commit": False, "enable.partition.eof": True,
        "auto.offset.reset": "earliest",
    })
    try:
        c.assign([CKTopicPartition(topic, p, 0) for p in range(partitions)])
        values, eof = [], set()
        deadline = time.monotonic() + timeout
        while len(eof) < partitions and time.monotonic() < deadline:
            m = c.poll(0.5)
            if m is None:
                continue
            if m.error():
                if m.error().code() == -191:  # _PARTITION_EOF
                    eof.add(m.partition())
                    continue
                raise RuntimeError(m.error())
            eof.discard(m.partition())
            values.append(m.value())
        assert len(eof) == partitions, f"confluent-kafka did not reach the end of {topic}"
        return values
    finally:
        c.close()


def watermarks(cluster: LocalCluster, topic: str, partition: int, isolation: str) -> tuple[int, int]:
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "w", "isolation.level": isolation})
    try:
        return c.get_watermark_offsets(TopicPartition(topic, partition), timeout=10)
    finally:
        c.close()


def values(prefix: str, n: int) -> list[bytes]:
    return [f"{prefix}-{i}".encode() for i in range(n)]


def test_commit_abort_commit_read_back_by_both_isolation_levels_and_confluent_kafka(cluster):
    topic = new_topic(cluster)
    p = txn_producer(cluster)
    reports: list[tuple[KafkaError | None, bytes]] = []

    def on_delivery(err, msg):
        reports.append((err, msg.value()))

    try:
        p.begin_transaction()
        for i, v in enumerate(values("c1", 10)):
            p.produce(topic, v, partition=i % 2, on_delivery=on_delivery)
        p.commit_transaction(30)
        assert len(reports) == 10 and all(err is None for err, _ in reports)  # served by the commit's flush
        p.begin_transaction()
        for i, v in enumerate(values("a", 5)):
            p.produce(topic, v, partition=i % 2, on_delivery=on_delivery)
        assert p.flush(30) == 0  # written to the log, then aborted
        p.abort_transaction(30)
        p.begin_transaction()
        for i, v in enumerate(values("c2", 3)):
            p.produce(topic, v, partition=i % 2, on_delivery=on_delivery)
        p.commit_transaction(30)
    finally:
        p.close()
    assert [err for err, _ in reports if err is not None] == []

    committed = values("c1", 10) + values("c2", 3)
    assert sorted(read_all(cluster, topic, 2, "read_committed")) == sorted(committed)
    assert sorted(read_all(cluster, topic, 2, "read_uncommitted")) == sorted(committed + values("a", 5))
    assert sorted(read_all_confluent(cluster, topic, 2)) == sorted(committed)
    # 5 + 3 + 2 data records and three markers on partition 0; nothing open: LSO = HWM
    assert watermarks(cluster, topic, 0, "read_committed") == (0, 13)
    assert watermarks(cluster, topic, 0, "read_uncommitted") == (0, 13)


def test_abort_fails_the_records_still_queued(cluster):
    topic = new_topic(cluster, partitions=1)
    p = txn_producer(cluster, **{"linger.ms": 30000})
    reports: list[KafkaError | None] = []
    try:
        p.begin_transaction()
        for v in values("q", 50):
            p.produce(topic, v, partition=0, on_delivery=lambda err, msg: reports.append(err))
        p.abort_transaction(30)
        assert len(reports) == 50
        assert {err.code() for err in reports if err is not None} == {KafkaError._PURGE_QUEUE}
        # the producer goes on with the next transaction
        p.begin_transaction()
        p.produce(topic, b"after", partition=0)
        p.commit_transaction(30)
    finally:
        p.close()
    assert read_all(cluster, topic, 1, "read_committed") == [b"after"]


def test_an_open_transaction_holds_read_committed_at_the_last_stable_offset(cluster):
    topic = new_topic(cluster, partitions=1)
    plain = Producer({"bootstrap.servers": cluster.bootstrap})
    plain.produce(topic, b"before", partition=0)
    assert plain.flush(30) == 0
    p = txn_producer(cluster)
    try:
        p.begin_transaction()
        for v in values("open", 4):
            p.produce(topic, v, partition=0)
        assert p.flush(30) == 0
        plain.produce(topic, b"after", partition=0)  # behind the open transaction
        assert plain.flush(30) == 0

        assert watermarks(cluster, topic, 0, "read_uncommitted")[1] == 6
        assert watermarks(cluster, topic, 0, "read_committed")[1] == 1  # the LSO
        assert read_all(cluster, topic, 1, "read_committed") == [b"before"]  # its end: the LSO
        assert read_all(cluster, topic, 1, "read_uncommitted") == [b"before"] + values("open", 4) + [b"after"]
        p.commit_transaction(30)
    finally:
        p.close()
        plain.close()
    assert read_all(cluster, topic, 1, "read_committed") == [b"before"] + values("open", 4) + [b"after"]
    assert watermarks(cluster, topic, 0, "read_committed")[1] == 7


def test_consume_transform_produce_with_send_offsets_to_transaction(cluster):
    source, sink = new_topic(cluster, partitions=1), new_topic(cluster, partitions=1)
    plain = Producer({"bootstrap.servers": cluster.bootstrap})
    for v in values("in", 20):
        plain.produce(source, v, partition=0)
    assert plain.flush(30) == 0
    plain.close()
    group = f"g-{uuid.uuid4().hex[:6]}"
    consumer = Consumer({
        "bootstrap.servers": cluster.bootstrap, "group.id": group, "enable.auto.commit": False,
        "auto.offset.reset": "earliest", "isolation.level": "read_committed",
    })
    consumer.subscribe([source])
    p = txn_producer(cluster)
    try:
        done = 0
        rounds = 0
        deadline = time.monotonic() + 60
        while done < 20 and time.monotonic() < deadline:
            batch = [m for m in consumer.consume(5, 1.0) if not m.error()]
            if not batch:
                continue
            p.begin_transaction()
            for m in batch:
                p.produce(sink, m.value().replace(b"in", b"out"), partition=0)
            metadata = consumer.consumer_group_metadata()
            assert metadata.group_id == group and metadata.generation_id >= 1 and metadata.member_id
            p.send_offsets_to_transaction(consumer.position(consumer.assignment()), metadata, 30)
            if rounds == 1:
                p.abort_transaction(30)  # the second round is aborted: its input is read again
                consumer.seek(TopicPartition(source, 0, batch[0].offset()))
                rounds += 1
                continue
            p.commit_transaction(30)
            rounds += 1
            done = batch[-1].offset() + 1
        assert done == 20
        assert consumer.committed([TopicPartition(source, 0)], timeout=10)[0].offset == 20
    finally:
        consumer.close()
        p.close()
    expected = values("out", 20)
    assert read_all(cluster, sink, 1, "read_committed") == expected
    assert read_all_confluent(cluster, sink, 1) == expected


def test_a_second_instance_fences_the_first(cluster):
    topic = new_topic(cluster, partitions=1)
    txn_id = f"mt-{uuid.uuid4().hex[:6]}"
    first = txn_producer(cluster, txn_id)
    second = None
    try:
        first.begin_transaction()
        first.produce(topic, b"zombie", partition=0)
        assert first.flush(30) == 0
        second = txn_producer(cluster, txn_id)  # fences `first`, aborting its transaction
        second.begin_transaction()
        second.produce(topic, b"live", partition=0)
        second.commit_transaction(30)
        with pytest.raises(KafkaException) as exc:
            first.produce(topic, b"zombie-2", partition=0)
            first.commit_transaction(30)
        err = exc.value.args[0]
        assert err.fatal() and err.code() == KafkaError._FENCED, err
    finally:
        first.close()
        if second is not None:
            second.close()
    assert read_all(cluster, topic, 1, "read_committed") == [b"live"]


def test_confluent_kafka_transactions_read_by_mafka_client(cluster):
    topic = new_topic(cluster, partitions=2)
    p = CKProducer({"bootstrap.servers": cluster.bootstrap, "transactional.id": f"ck-{uuid.uuid4().hex[:6]}",
                    "linger.ms": 5})
    p.init_transactions(60)
    p.begin_transaction()
    for i, v in enumerate(values("ck", 6)):
        p.produce(topic, v, partition=i % 2)
    p.commit_transaction(30)
    p.begin_transaction()
    for i, v in enumerate(values("ck-aborted", 4)):
        p.produce(topic, v, partition=i % 2)
    p.flush(30)
    p.abort_transaction(30)
    p.begin_transaction()
    p.produce(topic, b"ck-last", partition=0)
    p.commit_transaction(30)
    assert sorted(read_all(cluster, topic, 2, "read_committed")) == sorted(values("ck", 6) + [b"ck-last"])
    assert sorted(read_all(cluster, topic, 2, "read_uncommitted")) == sorted(
        values("ck", 6) + values("ck-aborted", 4) + [b"ck-last"])


def test_aio_producer_transaction(cluster):
    from mafka.client.aio import AIOProducer

    topic = new_topic(cluster, partitions=1)

    async def main() -> None:
        p = AIOProducer(bootstrap_servers=cluster.bootstrap, transactional_id=f"aio-{uuid.uuid4().hex[:6]}")
        await p.start()
        try:
            await p.init_transactions(60)
            async with p.transaction():
                for v in values("aio", 3):
                    await p.send(topic, v, partition=0)
            with pytest.raises(RuntimeError):
                async with p.transaction():
                    fut = await p.send(topic, b"aio-aborted", partition=0)
                    await fut
                    raise RuntimeError("undo")
        finally:
            await p.stop(10)

    asyncio.run(main())
    assert read_all(cluster, topic, 1, "read_committed") == values("aio", 3)
    assert read_all(cluster, topic, 1, "read_uncommitted") == values("aio", 3) + [b"aio-aborted"]
