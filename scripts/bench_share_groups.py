"""Share-group throughput on one partition: records/s with 1, 4 and 16 members, 1 ms of work per record.

A classic or consumer group can feed one partition to one member only; a share group (KIP-932)
hands each record of a partition to one member at a time, so members beyond the partition count
still add throughput.  On a local 3-broker Mafka cluster (RF 3) this starts N ``ShareConsumer``
processes (confluent-kafka's, librdkafka's preview share consumer, and ``mafka.client``'s:
``--clients``) in one share group on a one-partition topic (implicit
acknowledgement, ``--work-ms`` of sleep per record), makes sure the share-partition is live (share
groups start at ``latest``), writes ``--records`` records and times how long the group takes to
consume them all; every record must be received (redeliveries are counted, not double-counted).
Prints records/s per member count and the speed-up over one member.

Usage::

    python scripts/bench_share_groups.py [--members 1,4,16] [--records 4000] [--work-ms 1] [--rounds 1]
        [--clients confluent,mafka]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import threading
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from tests.harness.cluster import LocalCluster  # noqa: E402

SETTINGS = {
    "zookeeper.session.timeout.ms": "6000",
    "group.share.heartbeat.interval.ms": "1000",
    "group.share.record.lock.duration.ms": "15000",
}

#: One member: consume, sleep per record, print one JSON line per second and per record batch.
MEMBER = r"""
import json, sys, time
bootstrap, group, topic, work_ms, client = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5]
if client == "mafka":
    from mafka.client import ShareConsumer
else:
    from confluent_kafka import ShareConsumer
c = ShareConsumer({"bootstrap.servers": bootstrap, "group.id": group})
c.subscribe([topic])
print(json.dumps({"event": "ready"}), flush=True)
try:
    while True:
        got = []
        for m in c.poll(timeout=0.2) or []:
            if m.error() is None:
                if work_ms:
                    time.sleep(work_ms / 1000)
                got.append(m.value().decode())
        if got:
            print(json.dumps({"event": "records", "values": got, "t": time.monotonic()}), flush=True)
except KeyboardInterrupt:
    pass
finally:
    c.close()
"""


class Member:
    def __init__(self, bootstrap: str, group: str, topic: str, work_ms: float, client: str) -> None:
        self.proc = subprocess.Popen([sys.executable, "-c", MEMBER, bootstrap, group, topic, str(work_ms), client],
                                     stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True,
                                     cwd=Path(__file__).resolve().parent.parent)
        self.values: list[tuple[float, str]] = []
        self.lock = threading.Lock()
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        assert self.proc.stdout is not None
        for line in self.proc.stdout:
            event = json.loads(line)
            if event["event"] == "records":
                with self.lock:
                    self.values.extend((event["t"], v) for v in event["values"])

    def received(self) -> list[tuple[float, str]]:
        with self.lock:
            return list(self.values)

    def stop(self) -> None:
        self.proc.send_signal(2)
        try:
            self.proc.wait(20)
        except subprocess.TimeoutExpired:
            self.proc.kill()


def produce(bootstrap: str, topic: str, values: list[str]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 5})
    for v in values:
        producer.produce(topic, v.encode(), partition=0)
    if producer.flush(60):
        raise RuntimeError("records not written")


def run(bootstrap: str, members: int, records: int, work_ms: float, client: str) -> tuple[float, int]:
    """(records/s, redeliveries) for one share group of *members* on a fresh one-partition topic."""
    topic = f"share-bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, 1, 3)])[topic].result(30)
    group = f"sg-{uuid.uuid4().hex[:8]}"
    ms = [Member(bootstrap, group, topic, work_ms, client) for _ in range(members)]
    try:
        # Share groups start at latest: probe until a member receives a record.
        deadline = time.monotonic() + 120
        probes = 0
        while not any(m.received() for m in ms):
            if time.monotonic() > deadline:
                raise TimeoutError("the share group never received a record")
            produce(bootstrap, topic, [f"probe-{probes}"])
            probes += 1
            time.sleep(0.5)
        time.sleep(2)  # let every member join and open its session
        values = [f"r{i}" for i in range(records)]
        start = time.monotonic()
        produce(bootstrap, topic, values)
        wanted = set(values)
        deadline = start + 600
        while True:
            got = [v for m in ms for _, v in m.received() if v in wanted]
            if len(set(got)) >= records:
                break
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(set(got))} of {records} records received")
            time.sleep(0.05)
        end = max(t for m in ms for t, v in m.received() if v in wanted)
        return records / (end - start), len(got) - len(set(got))
    finally:
        for m in ms:
            m.stop()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--members", default="1,4,16")
    parser.add_argument("--records", type=int, default=4000)
    parser.add_argument("--work-ms", type=float, default=1.0)
    parser.add_argument("--rounds", type=int, default=1)
    parser.add_argument("--clients", default="confluent,mafka", help="confluent and/or mafka")
    args = parser.parse_args()
    clients = args.clients.split(",")
    counts = [int(n) for n in args.members.split(",")]
    work = Path(tempfile.mkdtemp(prefix="bench-share-"))
    cluster = LocalCluster(work / "cluster", brokers=3, settings=SETTINGS).start()
    results: dict[tuple[str, int], list[float]] = {}
    try:
        for r in range(args.rounds):  # interleaved: each round measures every client and size
            for n in counts:
                for client in clients:
                    rate, redelivered = run(cluster.bootstrap, n, args.records, args.work_ms, client)
                    results.setdefault((client, n), []).append(rate)
                    print(f"round {r + 1} {client:9} members {n:3} {rate:8.0f} records/s  redelivered {redelivered}",
                          flush=True)
    finally:
        cluster.stop()
    print(f"\none partition, {args.work_ms:g} ms per record, {args.records} records, medians of {args.rounds}:")
    for client in clients:
        base = statistics.median(results[(client, counts[0])])
        for n in counts:
            rate = statistics.median(results[(client, n)])
            print(f"  {client:9} {n:3} members  {rate:8.0f} records/s  x{rate / base:.2f} of {counts[0]} member(s)")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("PYTHONUNBUFFERED", "1")
    sys.exit(main())
