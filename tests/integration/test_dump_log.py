"""``kafka-dump-log.sh`` on a segment a real broker wrote for a real client (confluent-kafka).

The records are produced in several batches (one codec each), the partition's ``.log`` is
found in its broker's log dir, and the script's ``--print-data-log`` output must show every
record at the offset the producer was acknowledged with; a copy cut in the middle of its
last batch shows every whole batch, then Kafka's ``Found N invalid bytes`` line.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pytest
from confluent_kafka import Producer
from confluent_kafka.admin import AdminClient, NewTopic

from tests.harness.cluster import ClusterSpec, LocalCluster

pytestmark = pytest.mark.integration

#: shared: every broker stays up, and the topic name carries a uuid
CLUSTER = ClusterSpec()

SCRIPT = Path(sys.executable).parent / "kafka-dump-log.sh"
SEGMENT = "00000000000000000000.log"
RECORD = re.compile(r"^\| offset: (\d+) CreateTime: \d+ keySize: \d+ valueSize: \d+ sequence: -?\d+ "
                    r"headerKeys: \[([^\]]*)\] key: (\S+) payload: (\S+)$")
BATCH = re.compile(r"^baseOffset: (\d+) lastOffset: (\d+) .* position: (\d+) CreateTime: \d+ size: (\d+) "
                   r"magic: 2 compresscodec: (\w+) crc: \d+ isvalid: true$")


def dump(*argv: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(SCRIPT), *argv], capture_output=True, text=True, timeout=120)


def produce(cluster: LocalCluster, topic: str) -> dict[int, tuple[str, str]]:
    """offset → (key, value) of what was acknowledged: 4 batches, each with another codec."""
    acked: dict[int, tuple[str, str]] = {}
    errors: list[object] = []

    def on_delivery(err: object, msg: object) -> None:
        if err is not None:
            errors.append(err)
        else:
            acked[msg.offset()] = (msg.key().decode(), msg.value().decode())  # type: ignore[attr-defined]

    # Values long and repetitive enough that every codec shrinks even a one-record batch: librdkafka
    # sends a batch uncompressed when compression would not make it smaller, and under load it may
    # split a producer's five records into more than one batch.
    for n, codec in enumerate(("none", "gzip", "lz4", "zstd")):
        producer = Producer({"bootstrap.servers": cluster.bootstrap, "compression.type": codec,
                             "linger.ms": 50, "acks": "all", "enable.idempotence": False})
        for i in range(5):
            producer.produce(topic, f"value-{n}-{i}-" + "x" * 300, key=f"key-{n}-{i}", partition=0,
                             headers=[("batch", str(n).encode())], on_delivery=on_delivery)
        assert producer.flush(60) == 0
    assert errors == [] and len(acked) == 20, (errors, acked)
    return acked


def test_dump_log_shows_what_a_real_client_produced_and_a_cut_copy(cluster: LocalCluster, tmp_path: Path) -> None:
    topic = f"dump-log-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.create_topics([NewTopic(topic, 1, 1)])[topic].result(30)
    acked = produce(cluster, topic)
    leader = admin.list_topics(topic, timeout=30).topics[topic].partitions[0].leader
    segment = Path(cluster.broker(leader)["log_dirs"][0]) / f"{topic}-0" / SEGMENT

    result = dump("--files", str(segment), "--print-data-log")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    assert lines[:2] == [f"Dumping {segment}", "Log starting offset: 0"]
    records = {int(m[1]): (m[3], m[4], m[2]) for m in map(RECORD.match, lines) if m}
    assert {o: (k, v) for o, (k, v, _) in records.items()} == acked
    assert all(headers == "batch" for _, _, headers in records.values())
    batches = [m for m in map(BATCH.match, lines) if m]
    codecs = [b[5] for b in batches]
    assert [c for i, c in enumerate(codecs) if i == 0 or codecs[i - 1] != c] == ["none", "gzip", "lz4", "zstd"]
    assert not any(line.startswith("Found ") for line in lines) and result.stderr == ""

    # A copy cut in the middle of its last batch: the whole batches, then the invalid bytes.
    last = batches[-1]
    position, size = int(last[3]), int(last[4])
    cut = tmp_path / SEGMENT
    shutil.copyfile(segment, cut)
    with open(cut, "r+b") as f:
        f.truncate(position + size // 2)
    result = dump("--files", str(cut), "--print-data-log")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    kept = {int(m[1]): (m[3], m[4]) for m in map(RECORD.match, lines) if m}
    assert kept == {o: kv for o, kv in acked.items() if o < int(last[1])}
    assert lines[-1] == f"Found {size // 2} invalid bytes at the end of {SEGMENT}"
