"""mafka.client against a real 3-broker Mafka cluster, judged by third-party clients.

* round trips through the synchronous and asyncio faces (keys, values,
  headers, timestamps, per-partition order, delivery-report offsets equal
  to consumed offsets), every compression codec;
* interop both ways: records produced by mafka.client are read unchanged by
  confluent-kafka, kafka-python and aiokafka, and land on the partitions
  kafka-python's (Java-compatible murmur2) partitioner chooses; records
  produced by those three are read unchanged by mafka.client;
* one consumer group shared by a mafka.client, a confluent-kafka and a
  kafka-python member (range assignor): disjoint assignments covering every
  partition, every record consumed, commits visible to the others;
* bad configuration raises naming the key; a record over message.max.bytes
  fails alone; seek/pause/watermarks/offsets_for_times/committed/position;
* closing leaves no thread and no socket behind.
"""

from __future__ import annotations

import asyncio
import os
import threading
import time
import uuid
from collections import defaultdict

import pytest

from tests.harness.cluster import ClusterSpec
from tests.harness.group_clients import close_quietly

from .test_clients import wait_for_leaders

pytestmark = pytest.mark.integration

PARTITIONS = 6


#: shared (group.initial.rebalance.delay.ms is 0 already: `mafka cluster up` sets it)
CLUSTER = ClusterSpec()


def new_topic(cluster, partitions=PARTITIONS, rf=1, config=None) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    name = f"mc-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for future in admin.create_topics([NewTopic(name, partitions, rf, config=config or {})]).values():
        future.result(30)
    wait_for_leaders(cluster, name, partitions)
    return name


def records(tag: str, n: int):
    """(key, value, headers, timestamp ms) with distinct values."""
    base = int(time.time() * 1000) - 10_000
    return [(f"key-{i % 53}".encode(), f"{tag}-{i}".encode(), [("h", f"{i}".encode()), ("t", tag.encode())], base + i)
            for i in range(n)]


def produce_mafka(cluster, topic, batch, **conf):
    from mafka.client import Producer

    reports = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 5, **conf})
    for k, v, h, ts in batch:
        producer.produce(topic, value=v, key=k, headers=h, timestamp=ts,
                         on_delivery=lambda err, msg: reports.append((err, msg)))
    assert producer.flush(60) == 0
    producer.close()
    assert len(reports) == len(batch)
    assert [e for e, _ in reports if e is not None] == []
    return {m.value(): (m.partition(), m.offset()) for _, m in reports}


def consume_mafka(cluster, topic, expected, partitions=PARTITIONS, **conf):
    from mafka.client import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "unused-" + topic,
                         "enable.auto.commit": False, **conf})
    consumer.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
    out = []
    deadline = time.monotonic() + 60
    while len(out) < expected and time.monotonic() < deadline:
        for m in consumer.consume(1000, 1.0):
            assert m.error() is None, m.error()
            out.append((m.key(), m.value(), m.headers(), m.timestamp()[1], m.partition(), m.offset()))
    consumer.close()
    return out


def check_same(sent, received, acked=None):
    """Every record once, identical key/value/headers/timestamp, per-partition send order."""
    assert len(received) == len(sent)
    index = {v: (i, k, h, ts) for i, (k, v, h, ts) in enumerate(sent)}
    per_partition = defaultdict(list)
    for k, v, h, ts, partition, offset in received:
        i, key, headers, timestamp = index[v]
        assert (k, [(hk, bytes(hv)) for hk, hv in h or []], ts) == (key, headers, timestamp)
        if acked is not None:
            assert acked[v] == (partition, offset)
        per_partition[partition].append(i)
    assert len(per_partition) > 1
    for indices in per_partition.values():
        assert indices == sorted(indices)


@pytest.mark.parametrize("codec", ["none", "gzip", "snappy", "lz4", "zstd"])
def test_round_trip_every_codec(cluster, codec):
    topic = new_topic(cluster)
    sent = records(f"rt-{codec}", 3000)
    acked = produce_mafka(cluster, topic, sent, **{"compression.type": codec})
    check_same(sent, consume_mafka(cluster, topic, len(sent)), acked)


def test_records_read_by_confluent_kafka_python_and_aiokafka(cluster):
    import confluent_kafka
    import kafka
    from aiokafka import AIOKafkaConsumer
    from aiokafka.structs import TopicPartition as AioTP
    from kafka.partitioner.default import murmur2 as kafka_python_murmur2

    topic = new_topic(cluster)
    sent = records("interop-out", 4000)
    acked = produce_mafka(cluster, topic, sent)
    # Keyed records land where the Java client (and kafka-python) would put them.
    for k, v, _, _ in sent:
        assert acked[v][0] == (kafka_python_murmur2(k) & 0x7FFFFFFF) % PARTITIONS

    ck = confluent_kafka.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "x",
                                   "enable.auto.commit": False})
    ck.assign([confluent_kafka.TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
    got = []
    deadline = time.monotonic() + 60
    while len(got) < len(sent) and time.monotonic() < deadline:
        for m in ck.consume(1000, 1.0):
            assert m.error() is None
            got.append((m.key(), m.value(), m.headers(), m.timestamp()[1], m.partition(), m.offset()))
    ck.close()
    check_same(sent, got, acked)

    kp = kafka.KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id=None, enable_auto_commit=False)
    tps = [kafka.TopicPartition(topic, p) for p in range(PARTITIONS)]
    kp.assign(tps)
    kp.seek_to_beginning()
    got = []
    deadline = time.monotonic() + 60
    while len(got) < len(sent) and time.monotonic() < deadline:
        for tp, msgs in kp.poll(timeout_ms=1000).items():
            got += [(m.key, m.value, list(m.headers), m.timestamp, tp.partition, m.offset) for m in msgs]
    kp.close()
    check_same(sent, got, acked)

    async def aio():
        consumer = AIOKafkaConsumer(bootstrap_servers=cluster.bootstrap, enable_auto_commit=False,
                                    auto_offset_reset="earliest")
        await consumer.start()
        out = []
        try:
            consumer.assign([AioTP(topic, p) for p in range(PARTITIONS)])
            deadline = time.monotonic() + 60
            while len(out) < len(sent) and time.monotonic() < deadline:
                for tp, msgs in (await consumer.getmany(timeout_ms=1000)).items():
                    out += [(m.key, m.value, list(m.headers), m.timestamp, tp.partition, m.offset) for m in msgs]
        finally:
            await consumer.stop()
        return out

    check_same(sent, asyncio.run(aio()), acked)


def test_records_from_confluent_kafka_python_and_aiokafka_read_by_mafka(cluster):
    import confluent_kafka
    import kafka
    from aiokafka import AIOKafkaProducer

    topic = new_topic(cluster)
    ck_sent = records("ck", 2000)
    producer = confluent_kafka.Producer({"bootstrap.servers": cluster.bootstrap, "linger.ms": 5,
                                         "compression.type": "lz4"})
    for k, v, h, ts in ck_sent:
        producer.produce(topic, value=v, key=k, headers=h, timestamp=ts)
    assert producer.flush(30) == 0

    kp_sent = records("kp", 2000)
    kp = kafka.KafkaProducer(bootstrap_servers=cluster.bootstrap, compression_type="gzip")
    for f in [kp.send(topic, value=v, key=k, headers=h, timestamp_ms=ts) for k, v, h, ts in kp_sent]:
        f.get(timeout=30)
    kp.close()

    aio_sent = records("aio", 2000)

    async def aio():
        p = AIOKafkaProducer(bootstrap_servers=cluster.bootstrap)
        await p.start()
        try:
            futures = [await p.send(topic, value=v, key=k, headers=h, timestamp_ms=ts) for k, v, h, ts in aio_sent]
            await asyncio.gather(*futures)
        finally:
            await p.stop()

    asyncio.run(aio())
    sent = ck_sent + kp_sent + aio_sent
    received = consume_mafka(cluster, topic, len(sent))
    # Per-partition order holds within each producer; check each producer's records on their own.
    for tag, part in (("ck", ck_sent), ("kp", kp_sent), ("aio", aio_sent)):
        check_same(part, [r for r in received if r[1].startswith(tag.encode() + b"-")])


def test_asyncio_producer_and_group_consumer(cluster):
    from mafka.client.aio import AIOConsumer, AIOProducer

    topic = new_topic(cluster)
    sent = records("aio-face", 3000)

    async def run():
        async with AIOProducer(bootstrap_servers=cluster.bootstrap, compression_type="zstd") as producer:
            futures = [await producer.send(topic, v, key=k, headers=h, timestamp_ms=ts) for k, v, h, ts in sent]
            metas = await asyncio.gather(*futures)
            one = await producer.send_and_wait(topic, b"last", key=b"k")
        acked = {v: (m.partition, m.offset) for (_, v, _, _), m in zip(sent, metas, strict=True)}
        consumer = AIOConsumer(topic, bootstrap_servers=cluster.bootstrap, group_id="aio-" + topic,
                               auto_offset_reset="earliest", enable_auto_commit=False)
        await consumer.start()
        got = []
        try:
            deadline = time.monotonic() + 60
            while len(got) < len(sent) + 1 and time.monotonic() < deadline:
                for _, msgs in (await consumer.getmany(timeout_ms=1000)).items():
                    got += msgs
            await consumer.commit()
        finally:
            await consumer.stop()
        return acked, one, got

    acked, one, got = asyncio.run(run())
    assert one.offset >= 0 and one.topic == topic
    last = [m for m in got if m.value() == b"last"]
    assert [(m.partition(), m.offset()) for m in last] == [(one.partition, one.offset)]
    rest = [m for m in got if m.value() != b"last"]
    check_same(sent, [(m.key(), m.value(), m.headers(), m.timestamp()[1], m.partition(), m.offset()) for m in rest],
               acked)
    # The commit is visible to another client library.
    import confluent_kafka

    ck = confluent_kafka.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "aio-" + topic})
    committed = ck.committed([confluent_kafka.TopicPartition(topic, p) for p in range(PARTITIONS)], timeout=30)
    ck.close()
    ends = defaultdict(int)
    for m in got:
        ends[m.partition()] = max(ends[m.partition()], m.offset() + 1)
    assert {tp.partition: tp.offset for tp in committed if tp.offset >= 0} == dict(ends)


def test_one_group_across_three_client_libraries(cluster):
    import confluent_kafka
    import kafka

    from mafka.client import Consumer

    topic = new_topic(cluster)
    sent = records("mixed", 6000)
    group = "mixed-" + topic
    stop = threading.Event()
    seen: dict[str, list[tuple[int, int]]] = defaultdict(list)
    owned: dict[str, set[int]] = {}

    def mafka_member():
        c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                      "partition.assignment.strategy": "range", "session.timeout.ms": 10000})

        def on_assign(consumer, parts):
            owned["mafka"] = {p.partition for p in parts}

        c.subscribe([topic], on_assign=on_assign)
        while not stop.is_set():
            for m in c.consume(500, 0.2):
                assert m.error() is None, m.error()
                seen["mafka"].append((m.partition(), m.offset()))
        c.close()

    def confluent_member():
        c = confluent_kafka.Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                                      "auto.offset.reset": "earliest", "partition.assignment.strategy": "range",
                                      "session.timeout.ms": 10000})

        def on_assign(consumer, parts):
            owned["confluent"] = {p.partition for p in parts}

        c.subscribe([topic], on_assign=on_assign)
        while not stop.is_set():
            for m in c.consume(500, 0.2):
                if m.error() is None:
                    seen["confluent"].append((m.partition(), m.offset()))
        close_quietly(c)  # the other members leave as this one stops

    def kafka_python_member():
        c = kafka.KafkaConsumer(bootstrap_servers=cluster.bootstrap, group_id=group, auto_offset_reset="earliest",
                                session_timeout_ms=10000)
        c.subscribe([topic])
        while not stop.is_set():
            for tp, msgs in c.poll(timeout_ms=200).items():
                seen["kafka-python"] += [(tp.partition, m.offset) for m in msgs]
            owned["kafka-python"] = {tp.partition for tp in c.assignment()}
        c.close()

    threads = [threading.Thread(target=f, daemon=True) for f in (mafka_member, confluent_member, kafka_python_member)]
    for t in threads:
        t.start()
    try:
        deadline = time.monotonic() + 90
        balanced = False
        while not balanced and time.monotonic() < deadline:
            parts = [owned.get(n, set()) for n in ("mafka", "confluent", "kafka-python")]
            balanced = all(len(p) == 2 for p in parts) and set().union(*parts) == set(range(PARTITIONS))
            time.sleep(0.2)
        assert balanced, owned
        final = {n: set(p) for n, p in owned.items()}
        produce_mafka(cluster, topic, sent)
        while time.monotonic() < deadline:
            if len({(p, o) for s in seen.values() for p, o in s}) >= len(sent):
                break
            time.sleep(0.2)
    finally:
        stop.set()
        for t in threads:
            t.join(30)
    assert owned == final  # no rebalance while the records were consumed
    assert len({(p, o) for s in seen.values() for p, o in s}) == len(sent)
    for name, partitions in final.items():
        assert {p for p, _ in seen[name]} == partitions, name


def test_bad_configuration_raises_naming_the_key(cluster):
    from mafka.client import Consumer, Producer
    from mafka.client.config import ConfigError

    with pytest.raises(ConfigError, match="no.such.key"):
        Producer({"bootstrap.servers": cluster.bootstrap, "no.such.key": 1})
    with pytest.raises(ConfigError, match="acks"):
        Producer({"bootstrap.servers": cluster.bootstrap, "acks": 2})
    with pytest.raises(ConfigError, match="session.timeout.ms"):
        Consumer({"bootstrap.servers": cluster.bootstrap, "session.timeout.ms": "soon"})
    assert not [t for t in threading.enumerate() if t.name.startswith("mafka-")]


def test_record_over_message_max_bytes_fails_alone(cluster):
    from mafka.client import KafkaError, KafkaException, Producer

    topic = new_topic(cluster, partitions=1, config={"max.message.bytes": "20000"})
    reports = []
    producer = Producer({"bootstrap.servers": cluster.bootstrap, "message.max.bytes": 100000, "linger.ms": 50})
    with pytest.raises(KafkaException) as info:
        producer.produce(topic, value=b"x" * 200_000)
    assert info.value.args[0].code() == KafkaError.MSG_SIZE_TOO_LARGE
    # Over the topic's max.message.bytes but under the client's limit: the broker refuses
    # the batch; only the large record fails, its neighbours are delivered.
    for value in (b"small-1", b"y" * 30_000, b"small-2"):
        producer.produce(topic, value=value, on_delivery=lambda e, m: reports.append((e, m.value())))
    assert producer.flush(30) == 0
    producer.close()
    outcome = {v[:7]: (None if e is None else e.code()) for e, v in reports}
    assert outcome == {b"small-1": None, b"yyyyyyy": KafkaError.MSG_SIZE_TOO_LARGE, b"small-2": None}


def test_seek_pause_watermarks_offsets_for_times_committed(cluster):
    from mafka.client import OFFSET_BEGINNING, Consumer, TopicPartition

    topic = new_topic(cluster, partitions=2)
    sent = records("positions", 200)
    acked = produce_mafka(cluster, topic, sent, partitioner="random")
    counts = defaultdict(int)
    for p, _ in acked.values():
        counts[p] += 1
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "pos-" + topic, "enable.auto.commit": False})
    assert c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10) == (0, counts[0])
    tp0, tp1 = TopicPartition(topic, 0, 5), TopicPartition(topic, 1, OFFSET_BEGINNING)
    c.assign([tp0, tp1])
    c.pause([TopicPartition(topic, 1)])
    got = []
    deadline = time.monotonic() + 20
    while len(got) < counts[0] - 5 and time.monotonic() < deadline:
        got += [m for m in c.consume(100, 0.5) if m.error() is None]
    assert {m.partition() for m in got} == {0} and got[0].offset() == 5
    c.resume([TopicPartition(topic, 1)])
    c.seek(TopicPartition(topic, 0, 1))
    more = []
    deadline = time.monotonic() + 20
    while len(more) < counts[0] - 1 + counts[1] and time.monotonic() < deadline:
        more += [m for m in c.consume(100, 0.5) if m.error() is None]
    assert sorted((m.partition(), m.offset()) for m in more) == sorted(
        [(0, o) for o in range(1, counts[0])] + [(1, o) for o in range(counts[1])])
    assert [p.offset for p in c.position([TopicPartition(topic, 0), TopicPartition(topic, 1)])] == [counts[0], counts[1]]
    ts = sorted(sent, key=lambda r: r[3])[100][3]
    found = c.offsets_for_times([TopicPartition(topic, 0, ts), TopicPartition(topic, 1, ts)], timeout=10)
    for tp in found:
        first_at_or_after = min((o for v, (p, o) in acked.items() if p == tp.partition
                                 and next(r[3] for r in sent if r[1] == v) >= ts), default=counts[tp.partition])
        assert tp.offset == first_at_or_after
    c.commit(offsets=[TopicPartition(topic, 0, 7)], asynchronous=False)
    assert [p.offset for p in c.committed([TopicPartition(topic, 0)], timeout=10)] == [7]
    c.close()


def _socket_count() -> int:
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if os.readlink(f"/proc/self/fd/{fd}").startswith("socket:"):
                n += 1
        except OSError:
            pass
    return n


def test_close_leaves_no_thread_or_socket(cluster):
    from mafka.client import Consumer, Producer
    from mafka.client.admin import AdminClient

    topic = new_topic(cluster, partitions=3)
    before_sockets = _socket_count()
    p = Producer({"bootstrap.servers": cluster.bootstrap})
    p.produce(topic, b"v")
    p.flush(10)
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": "close-" + topic,
                  "auto.offset.reset": "earliest"})
    c.subscribe([topic])
    deadline = time.monotonic() + 30
    while c.poll(0.5) is None and time.monotonic() < deadline:
        pass
    a = AdminClient({"bootstrap.servers": cluster.bootstrap})
    a.list_topics(timeout=10)
    assert _socket_count() > before_sockets
    started = time.monotonic()
    p.close()
    c.close()
    a.close()
    assert time.monotonic() - started < 15
    assert not [t.name for t in threading.enumerate() if t.name.startswith("mafka-")]
    assert _socket_count() == before_sockets


def test_the_python_client_page_example_runs_as_written(cluster, capsys):
    """The Python client page's first example (docs/python-client.md), with the cluster's address in place of 127.0.0.1:9092."""
    import re
    from pathlib import Path

    readme = (Path(__file__).resolve().parents[2] / "docs" / "python-client.md").read_text()
    section = readme[readme.index("# Python client"):]
    code = re.search(r"```python\n(.*?)```", section, re.S).group(1)
    assert len(code.strip().splitlines()) <= 12
    first = cluster.bootstrap.split(",")[0]
    exec(compile(code.replace("127.0.0.1:9092", first), "docs/python-client.md", "exec"), {})
    assert "b'user-1' b'hello' [('source', b'readme')]" in capsys.readouterr().out


def test_cooperative_sticky_rebalances_incrementally_beside_librdkafka(cluster):
    """A mafka member and a confluent-kafka member, both cooperative-sticky (KIP-429): when the
    second joins, the first gives up only the partitions that move, and keeps consuming the rest
    throughout — no partition is ever owned by both."""
    import confluent_kafka

    from mafka.client import Consumer

    topic = new_topic(cluster)
    group = "coop-" + topic
    events: list[tuple[str, str, frozenset[int]]] = []
    lock = threading.Lock()
    owned: dict[str, set[int]] = {"mafka": set(), "confluent": set()}
    overlap: list[set[int]] = []
    stop = threading.Event()

    def note(name, kind, parts):
        with lock:
            ps = {p.partition for p in parts}
            events.append((name, kind, frozenset(ps)))
            if kind == "assign":
                owned[name] |= ps
            else:
                owned[name] -= ps
            both = owned["mafka"] & owned["confluent"]
            if both:
                overlap.append(both)

    def member(name, factory):
        c = factory({"bootstrap.servers": cluster.bootstrap, "group.id": group, "auto.offset.reset": "earliest",
                     "partition.assignment.strategy": "cooperative-sticky", "session.timeout.ms": 10000})
        c.subscribe([topic], on_assign=lambda c, ps: note(name, "assign", ps),
                    on_revoke=lambda c, ps: note(name, "revoke", ps))
        while not stop.is_set():
            c.poll(0.1)
        if factory is confluent_kafka.Consumer:
            close_quietly(c)  # the mafka member's leave can hand this one partitions as it stops
        else:
            c.close()

    first = threading.Thread(target=member, args=("mafka", Consumer), daemon=True)
    first.start()
    try:
        deadline = time.monotonic() + 60
        while len(owned["mafka"]) < PARTITIONS and time.monotonic() < deadline:
            time.sleep(0.1)
        assert owned["mafka"] == set(range(PARTITIONS)), events
        second = threading.Thread(target=member, args=("confluent", confluent_kafka.Consumer), daemon=True)
        second.start()
        while time.monotonic() < deadline:
            with lock:
                if len(owned["mafka"]) == 3 and len(owned["confluent"]) == 3:
                    break
            time.sleep(0.1)
    finally:
        with lock:
            settled = list(events)  # what closing the members does is not part of the rebalance
        stop.set()
    first.join(30)
    second.join(30)
    assert not overlap, (overlap, events)
    events = settled
    revokes = [parts for name, kind, parts in events if name == "mafka" and kind == "revoke"]
    # Incremental: the first member gave up exactly the three partitions that moved, never all six.
    assert revokes and all(len(r) < PARTITIONS for r in revokes), events
    moved = {p for name, kind, parts in events if name == "confluent" and kind == "assign" for p in parts}
    assert moved == set().union(*revokes) and len(moved) == 3, events


def test_close_is_bounded_when_the_broker_never_answers():
    """A listener that accepts connections and never answers: every client still closes promptly."""
    import socket

    from mafka.client import Consumer, Producer
    from mafka.client.admin import AdminClient

    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(16)
    bootstrap = f"127.0.0.1:{listener.getsockname()[1]}"
    try:
        p = Producer({"bootstrap.servers": bootstrap})
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "silent", "enable.auto.commit": True})
        c.subscribe(["nowhere"])
        assert c.poll(1.0) is None
        a = AdminClient({"bootstrap.servers": bootstrap})
        started = time.monotonic()
        p.close()
        c.close()
        a.close()
        assert time.monotonic() - started < 20
        assert not [t.name for t in threading.enumerate() if t.name.startswith("mafka-")]
    finally:
        listener.close()
