"""A broker's log dir fails under load (Kafka's JBOD failure handling): leadership and ISR membership
leave that dir's replicas, nothing acknowledged is lost, and the broker keeps serving its other dir.

Three brokers with two log dirs each, a six-partition RF 3 topic with tiny segments, an idempotent
acks=all producer.  The directories of broker 1's replicas in its first log dir are renamed away,
as a dying disk takes them: the next segment roll there fails, the broker takes that dir offline
(its partitions answer KAFKA_STORAGE_ERROR) and posts ``/log_dir_event_notification``; the
controller sends LeaderAndIsr for broker 1's replicas, marks those answered KAFKA_STORAGE_ERROR
offline, elects other leaders and shrinks the ISRs.  The delivery checker then finds nothing lost
or duplicated, and broker 1, still running, is in the ISR of every partition of its other dir.
"""

from __future__ import annotations

import time
import uuid
from pathlib import Path

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.harness.chaos import ContinuousProducer, drain
from tests.harness.checker import check_delivery
from tests.harness.cluster import DURABLE_SETTINGS, LocalCluster

pytestmark = pytest.mark.integration

PARTITIONS = 6


def partitions(admin: AdminClient, topic: str) -> dict:
    return admin.list_topics(topic, timeout=10).topics[topic].partitions


def test_a_failed_log_dir_moves_leadership_away_and_loses_nothing(tmp_path: Path) -> None:
    cluster = LocalCluster(tmp_path / "cluster", settings=DURABLE_SETTINGS, log_dirs_per_broker=2).start()
    try:
        admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
        topic = f"dirs-{uuid.uuid4().hex[:6]}"
        admin.create_topics([NewTopic(topic, PARTITIONS, 3, config={"segment.bytes": "4096"})])[topic].result(30)
        deadline = time.monotonic() + 30
        while not all(len(p.isrs) == 3 for p in partitions(admin, topic).values()):
            assert time.monotonic() < deadline, "ISRs not full"
            time.sleep(0.2)

        victim = Path(cluster.broker(1)["log_dirs"][0])
        failed = sorted(int(d.name.rsplit("-", 1)[1]) for d in victim.iterdir() if d.name.startswith(f"{topic}-"))
        kept = [p for p in range(PARTITIONS) if p not in failed]
        assert failed and kept, f"broker 1's replicas are spread over both dirs: {failed} in {victim}"

        producer = ContinuousProducer(cluster.bootstrap, topic, partitions=PARTITIONS, rate=300.0).start()
        try:
            time.sleep(2)
            for p in failed:  # the disk loses them: the next roll in that dir fails
                (victim / f"{topic}-{p}").rename(tmp_path / f"gone-{topic}-{p}")
            deadline = time.monotonic() + 60
            while True:
                meta = partitions(admin, topic)
                if all(meta[p].leader != 1 and 1 not in meta[p].isrs for p in failed):
                    break
                assert time.monotonic() < deadline, {p: (meta[p].leader, meta[p].isrs) for p in failed}
                time.sleep(0.3)
            time.sleep(2)  # writes go on with the new leaders
        finally:
            attempts = producer.stop()

        meta = partitions(admin, topic)
        assert all(1 in meta[p].isrs and len(meta[p].isrs) == 3 for p in kept), \
            {p: meta[p].isrs for p in kept}  # broker 1 still serves its other dir
        assert all(len(meta[p].isrs) == 2 for p in failed)
        got = drain(cluster.bootstrap, topic, PARTITIONS, timeout=60)
        report = check_delivery(attempts, got.records)
        assert got.complete and report.ok, report.summary()
        assert not report.lost and not report.duplicates
        acked = [a for a in attempts if a.status == "acked"]
        assert len(acked) > 500 and {a.partition for a in acked} >= set(failed)
        log_text = Path(cluster.broker(1)["log_file"]).read_text(errors="replace")
        assert "offline (log dir failure)" in log_text
    finally:
        cluster.stop()
