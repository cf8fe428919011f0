"""Python client throughput on one local Mafka cluster: mafka.client beside the others.

For each client — ``mafka`` (sync), ``mafka-aio``, ``kafka-python``, ``aiokafka`` (with
the Cython record codec its wheel ships), ``aiokafka-pure`` (the same with
``AIOKAFKA_NO_EXTENSIONS=1``: its pure-Python codec), ``confluent-kafka``
(librdkafka, C) — and each durability setting (RF 1 acks=1, then
RF 3 acks=all), produce N × 100-byte records (no key) to a fresh 6-partition topic,
then consume them all back from the beginning (manual assignment, no group).  Each
run is a separate process, so its CPU seconds (user + system, from ``wait4``) are its
own; rounds are interleaved across clients.  Prints every run, then the medians,
records/s, client CPU-seconds per million records, and the ratios of mafka.client
to each other client (``--chart PATH.png`` also draws the medians as bars).  Usage::

    python scripts/bench_client.py [--records 1000000] [--rounds 3] [--clients mafka,kafka-python,...]
    python scripts/bench_client.py --bootstrap HOST:PORT ...   # an already running cluster

``make bench-client`` runs it with the defaults (about 15 minutes here).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from bench_chart import Panel, add_chart_argument, draw  # noqa: E402

CLIENTS = ["mafka", "mafka-aio", "kafka-python", "aiokafka", "aiokafka-pure", "confluent-kafka"]
PARTITIONS = 6
VALUE = b"x" * 100
SETTINGS = [("RF1 acks=1", 1, 1), ("RF3 acks=all", 3, -1)]


# -- workers (run in a child process) --------------------------------------------------------


def produce(client: str, bootstrap: str, topic: str, n: int, acks: int) -> None:
    if client == "mafka":
        from mafka.client import Producer

        p = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5,
                      "enable.idempotence": acks == -1})
        produce_ = p.produce
        for _ in range(n):
            try:
                produce_(topic, VALUE)
            except BufferError:
                p.poll(0.01)
                produce_(topic, VALUE)
        assert p.flush(120) == 0
        p.close()
    elif client == "confluent-kafka":
        from confluent_kafka import Producer

        p = Producer({"bootstrap.servers": bootstrap, "acks": acks, "linger.ms": 5})
        for _ in range(n):
            while True:
                try:
                    p.produce(topic, VALUE)
                    break
                except BufferError:
                    p.poll(0.01)
        assert p.flush(120) == 0
    elif client == "kafka-python":
        from kafka import KafkaProducer

        p = KafkaProducer(bootstrap_servers=bootstrap, acks="all" if acks == -1 else acks, linger_ms=5,
                          batch_size=1_000_000, enable_idempotence=acks == -1)
        for _ in range(n):
            p.send(topic, VALUE)
        p.flush(120)
        p.close()
    else:
        import asyncio

        async def run() -> None:
            if client == "mafka-aio":
                from mafka.client.aio import AIOProducer as P

                p = P(bootstrap_servers=bootstrap, acks=acks, linger_ms=5, enable_idempotence=acks == -1)
            else:
                from aiokafka import AIOKafkaProducer as P

                p = P(bootstrap_servers=bootstrap, acks="all" if acks == -1 else acks, linger_ms=5,
                      max_batch_size=1_000_000, enable_idempotence=acks == -1)
            await p.start()
            last = None
            for _ in range(n):
                last = await p.send(topic, VALUE)
            await last
            if client == "mafka-aio":
                await p.flush()
            await p.stop()

        asyncio.run(run())


def consume(client: str, bootstrap: str, topic: str, n: int) -> None:
    got = 0
    if client == "mafka" or client == "confluent-kafka":
        if client == "mafka":
            from mafka.client import Consumer, TopicPartition
        else:
            from confluent_kafka import Consumer, TopicPartition
        c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench", "enable.auto.commit": False})
        c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
        while got < n:
            # Counted without touching each record, as the other clients' batches are: both
            # consumers return an error event alone, never inside a batch of records.
            msgs = c.consume(10000, 1.0)
            if len(msgs) == 1 and msgs[0].error() is not None:
                raise RuntimeError(msgs[0].error())
            got += len(msgs)
        c.close()
    elif client == "kafka-python":
        import kafka

        c = kafka.KafkaConsumer(bootstrap_servers=bootstrap, group_id=None, enable_auto_commit=False,
                                max_poll_records=10000)
        c.assign([kafka.TopicPartition(topic, p) for p in range(PARTITIONS)])
        c.seek_to_beginning()
        while got < n:
            got += sum(len(v) for v in c.poll(timeout_ms=1000).values())
        c.close()
    else:
        import asyncio

        async def run() -> int:
            count = 0
            if client == "mafka-aio":
                from mafka.client import TopicPartition
                from mafka.client.aio import AIOConsumer

                c = AIOConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False)
                await c.start()
                c.assign([TopicPartition(topic, p, 0) for p in range(PARTITIONS)])
            else:
                from aiokafka import AIOKafkaConsumer
                from aiokafka.structs import TopicPartition

                c = AIOKafkaConsumer(bootstrap_servers=bootstrap, enable_auto_commit=False,
                                     auto_offset_reset="earliest")
                await c.start()
                c.assign([TopicPartition(topic, p) for p in range(PARTITIONS)])
            while count < n:
                got = await c.getmany(timeout_ms=1000, max_records=10000)
                count += sum(len(v) for v in got.values())
            await c.stop()
            return count

        got = asyncio.run(run())
    assert got >= n, got


# -- driver ------------------------------------------------------------------------------------


def run_worker(args: list[str]) -> tuple[float, float]:
    """Runs one worker process; returns (wall seconds, CPU seconds)."""
    env = dict(os.environ)
    if args[1] == "aiokafka-pure":
        env["AIOKAFKA_NO_EXTENSIONS"] = "1"
    started = time.monotonic()
    proc = subprocess.Popen([sys.executable, __file__, "--worker", *args], env=env)
    _, status, usage = os.wait4(proc.pid, 0)
    wall = time.monotonic() - started
    if os.waitstatus_to_exitcode(status) != 0:
        raise RuntimeError(f"worker {args} failed")
    return wall, usage.ru_utime + usage.ru_stime


def create_topic(bootstrap: str, rf: int) -> str:
    from confluent_kafka.admin import AdminClient, NewTopic

    name = f"bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    config = {"min.insync.replicas": "2"} if rf == 3 else {}
    admin.create_topics([NewTopic(name, PARTITIONS, rf, config=config)])[name].result(30)
    time.sleep(1.0)  # every broker learns the leaders
    return name


def chart(path: Path, title: str, med: dict[tuple[str, str, str], tuple[float, float]]) -> Path:
    """The medians as bars, clients side by side per setting: (setting, client, mode) → (rec/s, CPU-s/M)."""
    settings = list(dict.fromkeys(label for label, _, _ in med))
    clients = list(dict.fromkeys(client for _, client, _ in med))

    def panel(title: str, mode: str, i: int) -> Panel:
        return Panel(title, settings, {c: [med[(s, c, mode)][i] if (s, c, mode) in med else None for s in settings]
                                       for c in clients})

    return draw(path, title, [
        panel("produce records/s", "produce", 0),
        panel("consume records/s", "consume", 0),
        panel("produce: client CPU-seconds per million records", "produce", 1),
        panel("consume: client CPU-seconds per million records", "consume", 1),
    ])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--clients", default=",".join(CLIENTS))
    parser.add_argument("--bootstrap", help="an already running cluster (default: start one)")
    parser.add_argument("--worker", nargs=argparse.REMAINDER)
    add_chart_argument(parser)
    args = parser.parse_args()
    if args.worker:
        mode, client, bootstrap, topic, n, *rest = args.worker
        if client == "aiokafka-pure":
            from aiokafka.record.default_records import DefaultRecordBatch

            assert "_crecords" not in DefaultRecordBatch.__module__, "AIOKAFKA_NO_EXTENSIONS was not honoured"
            client = "aiokafka"
        if mode == "produce":
            produce(client, bootstrap, topic, int(n), int(rest[0]))
        else:
            consume(client, bootstrap, topic, int(n))
        return 0

    clients = args.clients.split(",")
    cluster = None
    bootstrap = args.bootstrap
    if bootstrap is None:
        from tests.harness.cluster import LocalCluster

        cluster = LocalCluster(Path(tempfile.mkdtemp(prefix="bench-client-")) / "cluster", brokers=3)
        cluster.start()
        bootstrap = cluster.bootstrap
    results: dict[tuple[str, str, str], list[tuple[float, float]]] = {}
    try:
        for label, rf, acks in SETTINGS:
            for r in range(args.rounds):
                for client in clients:
                    topic = create_topic(bootstrap, rf)
                    for mode in ("produce", "consume"):
                        extra = [str(acks)] if mode == "produce" else []
                        wall, cpu = run_worker([mode, client, bootstrap, topic, str(args.records), *extra])
                        results.setdefault((label, client, mode), []).append((wall, cpu))
                        print(json.dumps({"setting": label, "round": r + 1, "client": client, "mode": mode,
                                          "seconds": round(wall, 3), "cpu_seconds": round(cpu, 3)}), flush=True)
    finally:
        if cluster is not None:
            cluster.stop()
    n = args.records
    title = f"{n:,} × 100-byte records, {PARTITIONS} partitions, medians of {args.rounds} interleaved rounds"
    print(f"\n{title}\n")
    print("| setting | client | produce rec/s | produce CPU-s/M | consume rec/s | consume CPU-s/M |")
    print("|---|---|---|---|---|---|")
    med: dict[tuple[str, str, str], tuple[float, float]] = {}
    for label, _, _ in SETTINGS:
        for client in clients:
            row = [label, client]
            for mode in ("produce", "consume"):
                runs = results[(label, client, mode)]
                wall = statistics.median(w for w, _ in runs)
                cpu = statistics.median(c for _, c in runs)
                med[(label, client, mode)] = (n / wall, cpu * 1_000_000 / n)
                row += [f"{n / wall:,.0f}", f"{cpu * 1_000_000 / n:.2f}"]
            print("| " + " | ".join(row) + " |")
    print("\nmafka.client (sync / asyncio) throughput ÷ other client's:\n")
    print("| setting | other | produce (sync) | produce (aio) | consume (sync) | consume (aio) |")
    print("|---|---|---|---|---|---|")
    for label, _, _ in SETTINGS:
        for other in [c for c in clients if not c.startswith("mafka")]:
            row = [label, other]
            for mode in ("produce", "consume"):
                for ours in ("mafka", "mafka-aio"):
                    if (label, ours, mode) in med:
                        row.append(f"{med[(label, ours, mode)][0] / med[(label, other, mode)][0]:.2f}×")
                    else:
                        row.append("-")
            row = row[:2] + [row[2], row[3], row[4], row[5]] if len(row) == 6 else row
            print("| " + " | ".join(row) + " |")
    if args.chart:
        print(f"chart: {chart(args.chart, title, med)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
