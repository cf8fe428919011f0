"""Delayed and local-transaction messages under Kafka 4's group types, on a real 3-broker cluster.

Mafka holds a delayed record, and a local-transaction half message, in an *envelope*: a control
batch at the offsets the producer was acknowledged with, which consumers skip (a share-partition
archives its offsets as gaps).  When the record falls due (or the half message is committed) the
leader appends it again as an ordinary batch; a rolled-back half message gets a control record
and is never appended.  Both new group types must keep these guarantees:

* a share group (KIP-932; confluent-kafka 2.16's ``ShareConsumer``, explicit acknowledgement,
  the group set to ``share.auto.offset.reset=earliest``), with ``share.isolation.level``
  read_uncommitted (Kafka's default) and read_committed, and
* a consumer group of the KIP-848 protocol (``group.protocol=consumer``; librdkafka reads
  read_committed by default).

One timeline for each, on its own topic, with a reader thread recording the arrival time of
every record:

1. ``before``, ``delay-ms`` (``mafka.delay.ms`` 4 s), ``mid``, ``deliver-at``
   (``mafka.deliver.at``, 5 s ahead) and ``after``, in one produce (usually one batch: its
   plain records are then held in the envelope too, due at once, and appended at once).
2. Three half messages (``TransactionalMessageProducer.send_half``): ``half-commit``,
   ``half-rollback`` (rolled back at once) and ``half-pending`` (resolved only at the end), then
   ``after-half``.  ``half-commit`` is committed 1.5 s after ``after-half`` was acknowledged.
3. Once everything due has arrived, ``tail`` is produced; then ``half-pending`` is rolled back
   and the reader keeps polling for another second.

The checkers: each of ``before mid after after-half tail delay-ms deliver-at half-commit`` is
delivered exactly once (a share group: with delivery count 1, and each acceptance confirmed
by ``commit_sync``); ``half-pending`` and ``half-rollback`` never; a delayed record's due time (its
timestamp as delivered) is what it asked for, and it arrives never before it and within 3 s of it; the immediate records before the first due time (the
share-partition does not wait behind a held envelope); ``after-half`` before ``half-commit``'s
commit (nor behind an unresolved half message); ``half-commit`` only after its commit.  For the
share group, finally, its share-partition start offset reaches the log end offset: every offset,
envelopes included, is acknowledged or archived, and nothing stays in flight to be redelivered.
"""

from __future__ import annotations

import subprocess
import sys
import threading
import time
import uuid
from collections import Counter
from dataclasses import dataclass
from typing import Any

import pytest

from mafka.client import TransactionalMessageProducer
from mafka.client.local_transactions import UNKNOWN
from tests.harness.chaos import create_topic
from tests.harness.cluster import ClusterSpec, LocalCluster
from tests.harness.raw_client import BlockingClient
from tests.harness.waits import wait_until

pytestmark = pytest.mark.integration

CLUSTER = ClusterSpec()  # shared: uuid topic and group names, no broker config changed, every broker stays up

DELAY_MS = 4000  # mafka.delay.ms of ``delay-ms``
DELIVER_AT_MS = 5000  # ``deliver-at`` is due this long after the produce starts
COMMIT_AFTER_S = 1.5  # ``half-commit`` is committed this long after ``after-half`` was acknowledged
LATE_S = 3.0  # a due record arrives within this of its due time
EARLY_SLACK_S = 0.05  # clock granularity between the broker's due check and the reader's clock

ONCE = ("before", "mid", "after", "after-half", "tail", "delay-ms", "deliver-at", "half-commit")
NEVER = ("half-pending", "half-rollback")

DESCRIBE_CONFIGS = 32
GROUP_RESOURCE = 32  # ConfigResource.Type.GROUP on the wire
GROUP_CONFIG_SOURCE = 8


@dataclass(frozen=True)
class Arrival:
    at: float  # time.time() when poll returned it
    key: str
    offset: int
    timestamp_ms: int  # a delivered delayed record's timestamp is its due time
    delivery_count: int | None  # share groups only
    headers: dict[str, bytes]


class Reader(threading.Thread):
    """Polls one consumer in its own thread, recording every record's arrival (and, for a share
    consumer, acknowledging each with ACCEPT and committing them at once)."""

    def __init__(self, consumer: Any, share: bool) -> None:
        super().__init__(name="group-types-reader", daemon=True)
        self.consumer = consumer
        self.share = share
        self.arrivals: list[Arrival] = []
        self.errors: list[str] = []
        self._halt = threading.Event()

    def run(self) -> None:
        try:
            while not self._halt.is_set():
                self._poll_once()
        except Exception as exc:  # noqa: BLE001 - reported by the test
            self.errors.append(f"reader failed: {exc!r}")

    def _poll_once(self) -> None:
        from confluent_kafka import AcknowledgeType

        if self.share:
            messages = list(self.consumer.poll(timeout=0.2) or [])
        else:
            messages = self.consumer.consume(num_messages=100, timeout=0.2)
        now = time.time()
        for m in messages:
            if m.error() is not None:
                if m.error().fatal():
                    self.errors.append(f"fatal: {m.error()}")
                continue
            key = (m.key() or b"").decode()
            headers = {k: bytes(v or b"") for k, v in (m.headers() or [])}
            self.arrivals.append(Arrival(now, key, m.offset(), m.timestamp()[1],
                                         m.delivery_count() if self.share else None, headers))
            if self.share:
                self.consumer.acknowledge(m, AcknowledgeType.ACCEPT)
        if self.share and messages:
            results = self.consumer.commit_sync(30.0)
            failed = {f"{tp.topic}-{tp.partition}": str(e) for tp, e in (results or {}).items() if e is not None}
            if failed:
                self.errors.append(f"acknowledgement refused: {failed}")

    def keys(self) -> Counter[str]:
        return Counter(a.key for a in list(self.arrivals))

    def stop(self) -> None:
        self._halt.set()
        self.join(30)


# ------------------------------------------------------------------------------------ helpers


def set_share_group_configs(cluster: LocalCluster, group: str, configs: dict[str, str]) -> None:
    """Sets group configs on *group* (IncrementalAlterConfigs), then waits until every broker applies them."""
    from confluent_kafka.admin import (
        AdminClient,
        AlterConfigOpType,
        ConfigEntry,
        ConfigResource,
        ResourceType,
    )

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    resource = ConfigResource(ResourceType.GROUP, group, incremental_configs=[
        ConfigEntry(k, v, incremental_operation=AlterConfigOpType.SET) for k, v in configs.items()])
    for future in admin.incremental_alter_configs([resource]).values():
        future.result(timeout=30)
    body = {"resources": [{"resource_type": GROUP_RESOURCE, "resource_name": group,
                           "configuration_keys": sorted(configs)}], "include_synonyms": False}

    def every_broker_applies() -> bool:
        # a broker describes what it applies (its cache of the group's configs)
        with BlockingClient(cluster.bootstrap, client_id="group-types-probe", timeout_s=10) as client:
            for broker in cluster.info["brokers"]:
                (result,) = client.call(DESCRIBE_CONFIGS, 1, body, broker_id=broker["id"]).results
                applied = {e.name: (e.value, e.config_source) for e in result.configs}
                if result.error_code != 0 or applied != {k: (v, GROUP_CONFIG_SOURCE) for k, v in configs.items()}:
                    return False
        return True

    wait_until(every_broker_applies, 30, f"every broker applies {configs}", interval=0.2)


def produce(cluster: LocalCluster, topic: str, records: list[tuple[str, list[tuple[str, str | bytes | None]]]]) -> None:
    """``(key, headers)`` records to partition 0, acks=all, in one flush."""
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": cluster.bootstrap, "acks": "all", "enable.idempotence": True,
                  "linger.ms": 5})
    errors: list[str] = []

    def report(err: Any, _msg: Any) -> None:
        if err is not None:
            errors.append(str(err))

    for key, headers in records:
        p.produce(topic, b"v-" + key.encode(), key=key.encode(), partition=0, headers=headers, on_delivery=report)
    assert p.flush(30) == 0
    assert not errors, errors


def log_end_offset(cluster: LocalCluster, topic: str) -> int:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"leo-{uuid.uuid4().hex[:6]}"})
    try:
        _low, high = c.get_watermark_offsets(TopicPartition(topic, 0), timeout=10)
    finally:
        c.close()
    return int(high)


def share_start_offset(cluster: LocalCluster, group: str, topic: str) -> int | None:
    """START-OFFSET of the share-partition ``topic``-0 (``mafka share-groups --describe --offsets``)."""
    r = subprocess.run([sys.executable, "-m", "mafka.cli.main", "share-groups", "--bootstrap-server",
                        cluster.bootstrap, "--timeout", "15000", "--describe", "--group", group, "--offsets"],
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r
    for row in (line.split() for line in r.stdout.splitlines() if line.strip()):
        if row[:3] == [group, topic, "0"] and row[3].isdigit():
            return int(row[3])
    return None


# ------------------------------------------------------------------------------------ the timeline


@dataclass
class Timeline:
    produced_at: float = 0.0  # the first produce started
    acked_at: float = 0.0  # ... and was acknowledged
    deliver_at: float = 0.0  # ``deliver-at``'s due time
    committed_at: float = 0.0  # ``half-commit``'s commit was sent
    pending_rolled_back_at: float = 0.0


def run_timeline(cluster: LocalCluster, topic: str, reader: Reader) -> Timeline:
    """Steps 1–3 of the module docstring while *reader* (already receiving) polls."""
    t = Timeline()
    txn = TransactionalMessageProducer({"bootstrap.servers": cluster.bootstrap,
                                        "mafka.txn.producer.group": f"gt-{uuid.uuid4().hex[:8]}",
                                        "mafka.txn.check.poll.ms": 200, "linger.ms": 1},
                                       lambda half: UNKNOWN)  # check-backs (none are due this soon) decide nothing
    try:
        t.produced_at = time.time()
        t.deliver_at = t.produced_at + DELIVER_AT_MS / 1000
        produce(cluster, topic, [
            ("before", []),
            ("delay-ms", [("mafka.delay.ms", str(DELAY_MS).encode())]),
            ("mid", []),
            ("deliver-at", [("mafka.deliver.at", str(int(t.deliver_at * 1000)).encode())]),
            ("after", []),
        ])
        t.acked_at = time.time()
        to_commit = txn.send_half(topic, b"v-half-commit", b"half-commit", partition=0)
        to_roll_back = txn.send_half(topic, b"v-half-rollback", b"half-rollback", partition=0)
        pending = txn.send_half(topic, b"v-half-pending", b"half-pending", partition=0)
        produce(cluster, topic, [("after-half", [])])
        after_half_acked = time.time()
        txn.end(to_roll_back, commit=False)
        time.sleep(max(0.0, after_half_acked + COMMIT_AFTER_S - time.time()))
        t.committed_at = time.time()
        txn.end(to_commit, commit=True)

        due = {"before", "mid", "after", "after-half", "delay-ms", "deliver-at", "half-commit"}
        wait_until(lambda: due <= set(reader.keys()), DELIVER_AT_MS / 1000 + LATE_S + 5,
                   lambda: f"everything due delivered, got {sorted(reader.keys())}", interval=0.1)
        produce(cluster, topic, [("tail", [])])
        wait_until(lambda: "tail" in reader.keys(), 10, "a record produced after the rest", interval=0.1)
        t.pending_rolled_back_at = time.time()
        txn.end(pending, commit=False)
        time.sleep(1.0)  # anything still to come (a redelivery, a half message leaking) would show now
    finally:
        txn.close()
    return t


def check_timeline(reader: Reader, t: Timeline) -> None:
    """The checkers of the module docstring (both group types)."""
    assert not reader.errors, reader.errors
    counts = reader.keys()
    arrivals = {a.key: a for a in reader.arrivals}
    for key in ONCE:
        assert counts[key] == 1, f"{key} delivered {counts[key]} times: {sorted(counts.items())}"
    for key in NEVER:
        assert counts[key] == 0, f"{key} (a half message never committed) was delivered"
    unexpected = set(counts) - set(ONCE) - set(NEVER) - {"probe"}
    assert not unexpected, unexpected

    first_due = t.produced_at + DELAY_MS / 1000  # the earliest either delayed record can be due
    # mafka.delay.ms counts from the broker's acceptance, between the produce and its acknowledgement
    for key, earliest, latest in (("delay-ms", first_due, t.acked_at + DELAY_MS / 1000),
                                  ("deliver-at", t.deliver_at, t.deliver_at)):
        a = arrivals[key]
        due = a.timestamp_ms / 1000
        assert earliest - 0.002 <= due <= latest + 0.002, \
            f"{key}: due at {due - t.produced_at:.3f} s, asked for {earliest - t.produced_at:.3f}..{latest - t.produced_at:.3f} s"
        assert a.at >= due - EARLY_SLACK_S, f"{key} visible {due - a.at:.3f} s before it was due"
        assert a.at <= due + LATE_S, f"{key} visible {a.at - due:.3f} s after it was due"
        assert "mafka.delay.ms" not in a.headers and "mafka.deliver.at" not in a.headers, a.headers
        assert "mafka.delayed.offset" in a.headers, a.headers
    for key in ("before", "mid", "after", "after-half"):
        assert arrivals[key].at < first_due, \
            f"{key}, not delayed, arrived {arrivals[key].at - t.produced_at:.2f} s after the produce (behind a held record)"
    assert arrivals["after-half"].at < t.committed_at, "a record produced after half messages waited for their outcome"
    assert arrivals["half-commit"].at >= t.committed_at, "a half message was delivered before its commit"
    assert arrivals["tail"].at < t.pending_rolled_back_at, "the record after a pending half message waited for it"
    # each delayed record arrives after the plain ones around it were read (they are appended later)
    assert arrivals["delay-ms"].offset > arrivals["after-half"].offset
    assert arrivals["half-commit"].offset > arrivals["after-half"].offset


def wait_live(cluster: LocalCluster, topic: str, reader: Reader) -> None:
    """Produces probes until the reader receives one (the member joined and was assigned the partition)."""
    def live() -> bool:
        produce(cluster, topic, [("probe", [])])
        return "probe" in reader.keys()

    wait_until(live, 90, "the consumer receives a record", interval=0.3)


# ------------------------------------------------------------------------------------ the tests


@pytest.mark.parametrize("isolation", ["read_uncommitted", "read_committed"])
def test_a_share_group_sees_delayed_records_when_due_and_half_messages_only_when_committed(cluster, isolation):
    from confluent_kafka import ShareConsumer

    topic = create_topic(cluster, partitions=1, rf=3)
    group = f"gt-share-{uuid.uuid4().hex[:8]}"
    set_share_group_configs(cluster, group, {"share.auto.offset.reset": "earliest", "share.isolation.level": isolation})
    consumer = ShareConsumer({"bootstrap.servers": cluster.bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "explicit"})
    consumer.subscribe([topic])
    reader = Reader(consumer, share=True)
    reader.start()
    try:
        wait_live(cluster, topic, reader)
        t = run_timeline(cluster, topic, reader)
        end = log_end_offset(cluster, topic)

        # every offset, the envelopes' included, acknowledged or archived: nothing left to redeliver
        wait_until(lambda: share_start_offset(cluster, group, topic) == end, 20,
                   lambda: f"share-partition start offset {end} (got {share_start_offset(cluster, group, topic)})",
                   interval=0.5)
    finally:
        reader.stop()
        consumer.close()
    check_timeline(reader, t)
    bad_counts = [(a.key, a.delivery_count) for a in reader.arrivals if a.delivery_count != 1]
    assert not bad_counts, f"records delivered more than once: {bad_counts}"


def test_a_consumer_protocol_group_sees_delayed_records_when_due_and_half_messages_only_when_committed(cluster):
    from confluent_kafka import Consumer

    topic = create_topic(cluster, partitions=1, rf=3)
    consumer = Consumer({"bootstrap.servers": cluster.bootstrap, "group.id": f"gt-cg-{uuid.uuid4().hex[:8]}",
                         "group.protocol": "consumer", "auto.offset.reset": "earliest",
                         "fetch.wait.max.ms": 100})
    consumer.subscribe([topic])
    reader = Reader(consumer, share=False)
    reader.start()
    try:
        wait_live(cluster, topic, reader)
        t = run_timeline(cluster, topic, reader)
    finally:
        reader.stop()
        consumer.close()
    check_timeline(reader, t)
