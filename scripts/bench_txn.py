"""Transactional vs plain producer throughput on a durable 3-broker Mafka cluster (``make bench-txn``).

    python scripts/bench_txn.py [--seconds 10] [--rounds 3] [--commit-ms 100]

One 3-broker cluster (``mafka cluster up``), a 6-partition topic with
replication factor 3 and ``min.insync.replicas=2``.  Each round runs, in a
fresh process each and interleaved:

* ``plain``: an idempotent confluent-kafka producer (acks=all, linger 5 ms)
  sending 100-byte records as fast as it can for ``--seconds``, then flushing;
* ``transactional``: the same producer with a ``transactional.id``, in
  transactions of ``--commit-ms`` (begin, produce for 100 ms, commit).

Records/s = records acknowledged (plain) or committed (transactional) ÷ the
wall time up to the last flush / commit.  Broker CPU-seconds per million
records come from ``/proc`` over all three brokers.  Medians over the rounds
and the transactional ÷ plain ratio are printed (the issue's target: ≥ 0.8×);
``--chart PATH.png`` also draws them, the ratio above each pair.
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_chart import Panel, add_chart_argument, draw
from bench_peers import Mafka, cpu_total, create_topic

PARTITIONS = 6


def produce_worker(bootstrap: str, topic: str, seconds: float, txn_id: str | None, commit_ms: int) -> None:
    """Produces for *seconds*; prints {"records": n, "elapsed": s, "transactions": k} as JSON."""
    from confluent_kafka import Producer

    conf = {"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True, "linger.ms": 5}
    if txn_id:
        conf["transactional.id"] = txn_id
    p = Producer(conf)
    value = b"x" * 100
    if txn_id:
        p.init_transactions(60)
    records = transactions = 0
    t0 = time.perf_counter()
    end = t0 + seconds
    while time.perf_counter() < end:
        if txn_id:
            p.begin_transaction()
        window_end = min(end, time.perf_counter() + commit_ms / 1000) if txn_id else end
        sent = 0
        while time.perf_counter() < window_end:
            for _ in range(1000):
                try:
                    p.produce(topic, value)
                    sent += 1
                except BufferError:
                    p.poll(0.005)
            p.poll(0)
        if txn_id:
            p.commit_transaction(60)
            transactions += 1
        records += sent
    p.flush(60)
    elapsed = time.perf_counter() - t0
    print(json.dumps({"records": records, "elapsed": elapsed, "transactions": transactions}))


def run_once(cluster: Mafka, topic: str, seconds: float, txn_id: str | None, commit_ms: int) -> dict:
    cpu0 = cpu_total(cluster.pids)
    out = subprocess.run(
        [sys.executable, __file__, "--worker", cluster.bootstrap, topic, str(seconds), txn_id or "", str(commit_ms)],
        capture_output=True, text=True, check=True, timeout=seconds + 180,
    )
    result = json.loads(out.stdout.strip().splitlines()[-1])
    result["broker_cpu"] = cpu_total(cluster.pids) - cpu0
    return result


def chart(path: Path, title: str, rate: dict[str, float], cpu: dict[str, float]) -> Path:
    """The medians side by side: producer kind → records/s, → broker CPU-s per million."""
    kinds = ("transactional", "plain")
    return draw(path, title, [
        Panel("records/s", ["records/s"], {k: [rate[k]] for k in kinds}, ratio=kinds),
        Panel("broker CPU-seconds per million records", ["broker CPU-s / M"], {k: [cpu[k]] for k in kinds},
              ratio=kinds),
    ], note="transactional ÷ plain above each pair")


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        _, _, bootstrap, topic, seconds, txn_id, commit_ms = sys.argv
        produce_worker(bootstrap, topic, float(seconds), txn_id or None, int(commit_ms))
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--commit-ms", type=int, default=100)
    ap.add_argument("--port", type=int, default=19392, help="first of the 3 broker ports")
    ap.add_argument("--zookeeper-port", type=int, default=19391)
    add_chart_argument(ap)
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-txn-"))
    cluster = Mafka(work, args.port, args.zookeeper_port, "txn", brokers=3)
    rows: dict[str, list[dict]] = {"plain": [], "transactional": []}
    try:
        for r in range(args.rounds):
            for kind in ("plain", "transactional") if r % 2 == 0 else ("transactional", "plain"):
                topic = f"bench-txn-{kind}-{r}"
                create_topic(cluster.bootstrap, topic, PARTITIONS, 3, {"min.insync.replicas": "2"})
                txn_id = f"bench-{r}" if kind == "transactional" else None
                res = run_once(cluster, topic, args.seconds, txn_id, args.commit_ms)
                rows[kind].append(res)
                print(f"round {r + 1} {kind:<13} {res['records'] / res['elapsed']:>12,.0f} rec/s  "
                      f"{res['broker_cpu'] / res['records'] * 1e6:6.2f} broker CPU-s/M  "
                      f"{res['transactions']} transactions", flush=True)
    finally:
        cluster.stop()
    med = {k: statistics.median(x["records"] / x["elapsed"] for x in v) for k, v in rows.items()}
    cpu = {k: statistics.median(x["broker_cpu"] / x["records"] * 1e6 for x in v) for k, v in rows.items()}
    title = (f"3 brokers, RF 3, min.insync.replicas=2, acks=all, 100 B records, {args.rounds} rounds of "
             f"{args.seconds:.0f} s, transactions of {args.commit_ms} ms (medians)")
    print(f"\n{title}")
    print(f"{'producer':<14} {'rec/s':>12} {'broker CPU-s / M':>17}")
    for k in ("plain", "transactional"):
        print(f"{k:<14} {med[k]:>12,.0f} {cpu[k]:>17.2f}")
    print(f"transactional / plain = {med['transactional'] / med['plain']:.2f}x (target >= 0.8x)")
    if args.chart:
        print(f"chart: {chart(args.chart, title, med, cpu)}", file=sys.stderr)


if __name__ == "__main__":
    main()
