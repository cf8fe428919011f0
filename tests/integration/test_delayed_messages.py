"""Delayed messages with unchanged Kafka clients on a 3-broker cluster (RF 3, acks=all).

A record asks for delay with the ``mafka.delay.ms`` / ``mafka.deliver.at`` header
(or the topic's ``mafka.delay.ms``); it is acknowledged at once, invisible until
due, then appears once, with ``mafka.delayed.offset`` and
``mafka.original.timestamp``.  Consumers are confluent-kafka (librdkafka),
kafka-python and kcat: each must skip the envelope that holds a record until due.
"""

from __future__ import annotations

import json
import shutil
import signal
import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.harness.cluster import DURABLE_SETTINGS, ClusterSpec, LocalCluster

pytestmark = pytest.mark.integration

SESSION_S = 6.0
MAFKA = str(Path(sys.executable).with_name("mafka"))


CLUSTER = ClusterSpec(settings=DURABLE_SETTINGS, shared=False)  # kills and freezes a leader


def new_topic(cluster: LocalCluster, partitions: int = 1, **config: str) -> str:
    """An RF 3 topic, once all three brokers are registered (a test before may have restarted one)."""
    wait_brokers(cluster)
    name = f"delayed-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 3, config=config)])[name].result(30)
    return name


def produce(cluster: LocalCluster, topic: str, records: list[tuple[bytes, list[tuple[str, bytes]]]],
            partition: int = 0, **conf) -> list[int]:
    """Produces ``(value, headers)`` records (acks=all, idempotent); returns their acknowledged offsets."""
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True,
                  "linger.ms": 20, **conf})
    offsets: list[int] = []
    errors: list[str] = []

    def report(err, msg):
        if err is not None:
            errors.append(str(err))
        else:
            offsets.append(msg.offset())

    for value, headers in records:
        p.produce(topic, value, key=b"k", partition=partition, headers=headers, on_delivery=report)
    assert p.flush(30) == 0
    assert not errors, errors
    return sorted(offsets)


def consume_for(cluster: LocalCluster, topic: str, seconds: float, partitions: int = 1) -> list[tuple[float, object]]:
    """Everything a confluent-kafka consumer reads from the start within ``seconds``: (arrival, message)."""
    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                  "enable.auto.commit": False, "auto.offset.reset": "earliest", "fetch.wait.max.ms": 50})
    out = []
    try:
        c.assign([TopicPartition(topic, p, 0) for p in range(partitions)])
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            m = c.poll(0.05)
            if m is None:
                continue
            if m.error():
                raise KafkaException(m.error())
            out.append((time.time(), m))
    finally:
        c.close()
    return out


def test_a_delayed_record_is_acknowledged_at_once_and_appears_once_when_due(cluster):
    topic = new_topic(cluster)
    start = time.time()
    offsets = produce(cluster, topic, [(b"now", []), (b"later", [("mafka.delay.ms", b"6000"), ("trace", b"t1")]),
                                       (b"also-now", [])])
    acked_in = time.time() - start
    assert acked_in < 5.0, f"acknowledged after {acked_in:.1f} s: the producer must not wait for the delay"
    got = consume_for(cluster, topic, 6.0 + 3.0 - (time.time() - start))
    values = [m.value() for _, m in got]
    assert values.count(b"later") == 1, values
    assert set(values) == {b"now", b"later", b"also-now"}
    (arrived, later) = next((t, m) for t, m in got if m.value() == b"later")
    assert arrived - start >= 6.0 - 0.05, f"visible after {arrived - start:.2f} s, asked for 6 s"
    assert arrived - start < 6.0 + 2.5
    headers = dict(later.headers())
    assert headers["trace"] == b"t1" and "mafka.delay.ms" not in headers
    # the offset the producer was acknowledged with, and the time it was produced
    assert int(headers["mafka.delayed.offset"]) in offsets
    assert abs(int(headers["mafka.original.timestamp"]) / 1000 - start) < 5.0
    assert later.key() == b"k"


def test_records_due_at_the_same_time_keep_their_order_and_deliver_at_is_absolute(cluster):
    topic = new_topic(cluster)
    due = int(time.time() * 1000) + 2500
    produce(cluster, topic, [(f"r{i}".encode(), [("mafka.deliver.at", str(due).encode())]) for i in range(50)])
    got = consume_for(cluster, topic, 5.0)
    assert [m.value() for _, m in got] == [f"r{i}".encode() for i in range(50)]
    assert min(t for t, _ in got) * 1000 >= due - 50


def test_the_topics_default_delay_applies_to_records_without_the_header(cluster):
    topic = new_topic(cluster, **{"mafka.delay.ms": "3000"})
    start = time.time()
    produce(cluster, topic, [(b"a", []), (b"b", [("mafka.delay.ms", b"0")])])
    got = consume_for(cluster, topic, 3.0 + 3.0 - (time.time() - start))
    arrival = {m.value(): t - start for t, m in got}
    assert arrival[b"a"] >= 3.0 - 0.05 and arrival[b"b"] < arrival[b"a"] - 1.0, arrival


def test_a_malformed_delay_header_is_refused_with_invalid_record(cluster):
    topic = new_topic(cluster)
    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "retries": 0})
    errors = []
    p.produce(topic, b"x", headers=[("mafka.delay.ms", b"soon")], on_delivery=lambda e, m: errors.append(e))
    p.flush(30)
    assert len(errors) == 1 and errors[0] is not None and errors[0].name() == "INVALID_RECORD", errors
    # the partition serves on: a good record right after
    assert produce(cluster, topic, [(b"ok", [])]) == [0]  # the refused record took no offset
    assert [m.value() for _, m in consume_for(cluster, topic, 2.0)] == [b"ok"]


def test_other_clients_skip_the_envelope_until_due(cluster):
    topic = new_topic(cluster)
    due = time.time() + 10.0
    produce(cluster, topic, [(b"held", [("mafka.deliver.at", str(int(due * 1000)).encode())]), (b"plain", [])])
    # kafka-python: reads the plain record, not the held one
    from kafka import KafkaConsumer
    kc = KafkaConsumer(topic, bootstrap_servers=cluster.bootstrap, auto_offset_reset="earliest",
                       consumer_timeout_ms=1500, enable_auto_commit=False)
    try:
        early = [r.value for r in kc]
    finally:
        kc.close()
    assert early == [b"plain"], early
    kcat = shutil.which("kcat")
    assert kcat is not None, "kcat is installed by make system-deps"
    out = subprocess.run([kcat, "-C", "-b", cluster.bootstrap, "-t", topic, "-e", "-J", "-o", "beginning"],
                         capture_output=True, text=True, timeout=30)
    assert [json.loads(line)["payload"] for line in out.stdout.splitlines() if line.strip()] == ["plain"], out
    assert time.time() < due, "too slow to show the record held: the checks above saw it before its due time"
    time.sleep(due + 0.5 - time.time())
    out = subprocess.run([kcat, "-C", "-b", cluster.bootstrap, "-t", topic, "-e", "-J", "-o", "beginning"],
                         capture_output=True, text=True, timeout=30)
    assert [json.loads(line)["payload"] for line in out.stdout.splitlines() if line.strip()] == ["plain", "held"]


def leader_of(cluster: LocalCluster, topic: str, partition: int = 0, timeout: float = 30.0) -> int:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        t = admin.list_topics(topic, timeout=5).topics.get(topic)
        if t is not None and t.error is None and partition in t.partitions and t.partitions[partition].leader >= 0:
            return t.partitions[partition].leader
        time.sleep(0.2)
    raise TimeoutError(f"no leader for {topic}-{partition}")


def wait_brokers(cluster: LocalCluster, n: int = 3, timeout: float = 60.0) -> None:
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    deadline = time.monotonic() + timeout
    while len(admin.list_topics(timeout=5).brokers) < n:
        assert time.monotonic() < deadline, "a restarted broker did not register again"
        time.sleep(0.5)


# The frozen (zombie) leader runs in `make chaos` (and in test_delayed_chaos.py there), to keep `make test` short.
@pytest.mark.parametrize("fault", ["kill", pytest.param("freeze", marks=pytest.mark.chaos)])
def test_a_leader_lost_before_its_records_are_due_neither_loses_nor_repeats_one(cluster, fault):
    """Three groups due at +3, +7 and +10 s; the leader is SIGKILLed (or SIGSTOPped past the ZooKeeper
    session) at +4.5 s and back at +14 s.  Every record appears exactly once; the groups due while
    no leader delivered appear within the session timeout + 2 s of the election, as the issue asks."""
    wait_brokers(cluster)
    topic = new_topic(cluster)
    leader = leader_of(cluster, topic)
    t0 = time.time()
    due = {g: int((t0 + d) * 1000) for g, d in (("a", 3.0), ("b", 7.0), ("c", 10.0))}
    records = [(f"{g}{i}".encode(), [("mafka.deliver.at", str(due[g]).encode())]) for g in "abc" for i in range(100)]
    produce(cluster, topic, records)
    got: list[tuple[float, object]] = []
    reader = threading.Thread(target=lambda: got.extend(consume_for(cluster, topic, 20.0)))
    reader.start()
    time.sleep(max(0.0, t0 + 4.5 - time.time()))
    cluster.kill(leader, signal.SIGKILL if fault == "kill" else signal.SIGSTOP)
    lost_at = time.time()
    time.sleep(max(0.0, t0 + 14.0 - time.time()))
    if fault == "kill":
        cluster.restart(leader)
    else:
        cluster.kill(leader, signal.SIGCONT)
    reader.join(60)
    counts = Counter(m.value() for _, m in got)
    assert set(counts) == {v for v, _ in records}, f"missing: {sorted({v for v, _ in records} - set(counts))[:10]}"
    assert [v for v, n in counts.items() if n > 1] == [], "delivered twice"
    first_seen = {}
    for t, m in got:
        first_seen.setdefault(m.value()[:1].decode(), t)
    assert first_seen["a"] * 1000 >= due["a"] - 50 and first_seen["a"] - t0 < 3.0 + 2.0
    for g in "bc":
        assert first_seen[g] * 1000 >= due[g] - 50
        # delivered by the new leader: at most the session timeout + 2 s after it was due, or after the loss
        late = first_seen[g] - max(due[g] / 1000, lost_at)
        assert late <= SESSION_S + 2.0 + 1.0, f"group {g} appeared {late:.1f} s late"
    # the order within each group holds
    for g in "abc":
        assert [m.value() for _, m in got if m.value()[:1] == g.encode()] == [f"{g}{i}".encode() for i in range(100)]


def test_mafka_clients_producer_asks_for_delay_and_its_consumer_skips_the_envelope(cluster):
    from mafka.client import Consumer as MafkaConsumer
    from mafka.client import Producer as MafkaProducer
    from mafka.client import TopicPartition as MafkaTopicPartition

    topic = new_topic(cluster)
    p = MafkaProducer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "linger.ms": 5})
    start = time.time()
    p.produce(topic, b"in-2s", partition=0, delay_ms=2000)
    p.produce(topic, b"at", partition=0, deliver_at=int(start * 1000) + 1000)
    p.produce(topic, b"now", partition=0)
    with pytest.raises(ValueError):
        p.produce(topic, b"x", partition=0, delay_ms=1, deliver_at=2)
    with pytest.raises(ValueError):
        p.produce(topic, b"x", partition=0, delay_ms=-1)
    assert p.flush(30) == 0
    c = MafkaConsumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"g-{uuid.uuid4().hex[:6]}",
                       "enable.auto.commit": False, "fetch.wait.max.ms": 50})
    seen: dict[bytes, float] = {}
    try:
        c.assign([MafkaTopicPartition(topic, 0, 0)])
        deadline = time.monotonic() + 5
        while time.monotonic() < deadline:
            m = c.poll(0.05)
            if m is not None and m.error() is None:
                assert m.value() not in seen, "read twice"
                seen[m.value()] = time.time() - start
    finally:
        c.close()
    assert set(seen) == {b"in-2s", b"at", b"now"}, seen
    assert 1.0 - 0.05 <= seen[b"at"] < 4.0 and 2.0 - 0.05 <= seen[b"in-2s"] < 5.0, seen


def test_mafka_delayed_describe_shows_pending_records_per_due_bucket(cluster):
    topic = new_topic(cluster, partitions=2)
    now_ms = int(time.time() * 1000)
    in_3_min = now_ms + 180_000
    produce(cluster, topic, [(f"x{i}".encode(), [("mafka.deliver.at", str(in_3_min).encode())]) for i in range(7)])
    produce(cluster, topic, [(b"soon", [("mafka.delay.ms", b"1000")])], partition=1)
    time.sleep(2.5)
    out = subprocess.run([MAFKA, "delayed", "--describe", "--topic", topic,
                          "--bootstrap-server", cluster.bootstrap], capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    lines = out.stdout.splitlines()
    assert f"Topic: {topic}\tPartition: 0" in lines[0] and lines[0].endswith("Pending: 7"), out.stdout
    bucket = time.strftime("%Y-%m-%dT%H:%M:00Z", time.gmtime(in_3_min / 1000))
    assert f"\tDue from {bucket}\tpending 7\tdelivered 0" in lines, out.stdout
    p1 = next(line for line in lines if "Partition: 1" in line)
    assert p1.endswith("Pending: 0"), out.stdout  # delivered (its bucket goes once below the HW)
    assert lines[-1].startswith("Delivered by the leaders asked: ") and "p99" in lines[-1], out.stdout
    missing = subprocess.run([MAFKA, "delayed", "--describe", "--topic", "no-such-topic",
                              "--bootstrap-server", cluster.bootstrap], capture_output=True, text=True, timeout=60)
    assert missing.returncode == 1 and "does not exist" in missing.stderr


def test_the_delayed_messages_page_example_runs_as_written_and_holds_the_record(cluster):
    readme = (Path(__file__).resolve().parents[2] / "docs" / "delayed-messages.md").read_text()
    section = readme[readme.index("## Delayed messages"):]
    start = section.index("```python") + len("```python")
    code = section[start:section.index("```\n", start)]
    topic = new_topic(cluster)
    exec(compile(code.replace("127.0.0.1:9092", cluster.bootstrap).replace('"reminders"', repr(topic)),  # noqa: S102
                 "docs/delayed-messages.md (delayed example)", "exec"), {})
    assert consume_for(cluster, topic, 2.0) == []
    out = subprocess.run([MAFKA, "delayed", "--describe", "--topic", topic, "--bootstrap-server", cluster.bootstrap],
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0 and out.stdout.splitlines()[0].endswith("Pending: 1"), out.stdout + out.stderr


def test_the_metrics_endpoint_shows_pending_and_delivered_delayed_records(tmp_path_factory):
    import re
    import urllib.request

    from tests.harness.cluster import free_ports

    ports = free_ports(2)
    c = LocalCluster(tmp_path_factory.mktemp("delayed-metrics") / "cluster", brokers=1,
                     settings={"mafka.metrics.port": str(ports[0])})
    c.start()
    try:
        topic = new_topic_rf1(c)
        produce(c, topic, [(b"later", [("mafka.delay.ms", b"600000")]), (b"soon", [("mafka.delay.ms", b"500")])])
        time.sleep(2.0)
        base = f"http://127.0.0.1:{ports[0]}"
        assert urllib.request.urlopen(base + "/health", timeout=10).read() == b"ok\n"
        text = urllib.request.urlopen(base + "/metrics", timeout=10).read().decode()
        assert re.search(rf'^mafka_delayed_pending_messages{{partition="0",topic="{topic}"}} 1\.0$', text, re.M), text
        assert re.search(r"^mafka_delayed_delivered_total 1\.0$", text, re.M), text
        assert re.search(r'^mafka_delayed_delivery_lag_ms{quantile="0.99"} \d', text, re.M), text
        assert re.search(r"^kafka_controller_kafkacontroller_activecontrollercount 1\.0$", text, re.M), text
        assert re.search(r"^kafka_server_replicamanager_leadercount [1-9]", text, re.M), text
        assert re.search(r'^kafka_network_requestmetrics_totaltimems{quantile="0.99",request="Produce"} \d', text,
                         re.M), text
        assert re.search(r'^kafka_network_requestmetrics_requests_total{request="Produce",version="\d+"} [1-9]', text, re.M), text
        assert re.search(r"^mafka_broker_slow 0\.0$", text, re.M), text
    finally:
        c.stop()


def new_topic_rf1(cluster: LocalCluster) -> str:
    name = f"delayed-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(name, 1, 1)])[name].result(30)
    return name


def test_a_pending_delayed_message_can_be_cancelled_and_a_delivered_one_cannot(cluster):
    topic = new_topic(cluster)
    held, soon = produce(cluster, topic, [(b"held", [("mafka.delay.ms", b"60000")])]) + \
        produce(cluster, topic, [(b"soon", [("mafka.delay.ms", b"100")])])
    assert [m.value() for _, m in consume_for(cluster, topic, 2.0)] == [b"soon"]  # delivered before its cancel

    def cancel(offset: int) -> subprocess.CompletedProcess:
        return subprocess.run([MAFKA, "delayed", "--cancel", "--topic", topic, "--partition", "0", "--offset",
                               str(offset), "--bootstrap-server", cluster.bootstrap], capture_output=True, text=True,
                              timeout=60)

    ok = cancel(held)
    assert ok.returncode == 0 and "Cancelled" in ok.stdout, ok.stderr
    assert cancel(held).returncode == 0  # a retry: already cancelled
    late = cancel(soon)
    assert late.returncode == 1 and "INVALID_TXN_STATE" in late.stderr, late.stdout + late.stderr
    assert [m.value() for _, m in consume_for(cluster, topic, 4.0)] == [b"soon"]
