"""Throughput and broker CPU as clients are added: 1, 2 and 4 producers, then consumers.

    python scripts/bench_scale.py [--records 1000000] [--rounds 2] [--clients 1,2,4]

Setups, each fresh per round and interleaved with the others:

* ``mafka RF3 acks=all``: a 3-broker Mafka cluster, a 12-partition topic with
  replication factor 3 and ``min.insync.replicas=2``, producers with acks=all;
* ``mafka RF1 acks=1``: the same cluster shape, replication factor 1;
* ``tansu RF1 acks=1``: the Tansu peer (one broker, memory storage) — it has
  no replication, so it applies to the RF 1 rows only.

For each client count N, a fresh topic gets ``--records`` records of 100 B
from N concurrent ``kcat -P`` (each sends records/N, linger 5 ms), then N
concurrent consumers (confluent-kafka with ``fetch.queue.backoff.ms=10``, each
``assign()``-ed an equal share of the 12 partitions) read them all back.  Aggregate records/s is records ÷
the wall time of the slowest client (for consumers: to its last record; the
broker CPU of a consume phase includes 2 s of idle long polls at the end); broker CPU is summed over every broker
process from ``/proc``.  Medians over the rounds are printed; ``--chart PATH.png`` also draws
them (one line per setup over the client count).
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
from pathlib import Path

from bench_chart import Panel, add_chart_argument, draw
from bench_peers import Mafka, Tansu, cpu_total, create_topic, kcat_env, write_records

PARTITIONS = 12
SETUPS = ("mafka RF3 acks=all", "mafka RF1 acks=1", "tansu RF1 acks=1")


def consume_worker(bootstrap: str, topic: str, partitions: list[int], timeout: float) -> None:
    """Reads *partitions* of *topic* from the beginning until 2 s pass with nothing new; prints JSON.

    The elapsed time runs to the last record received.  (Watermarks are not
    used to know when to stop: the Tansu peer under-reports them.)
    """
    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    # fetch.queue.backoff.ms: librdkafka's default (1 s) stalls a partition's fetching whenever
    # the application is behind by queued.min.messages — it punishes a broker for being faster
    # than the Python loop here (167k rec/s against 614k-944k with 10 ms, on Mafka).
    c = Consumer({"bootstrap.servers": bootstrap, "group.id": f"scale-{os.getpid()}", "enable.auto.commit": False,
                  "fetch.queue.backoff.ms": 10})
    t0 = time.perf_counter()
    last = t0
    c.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in partitions])
    got = 0
    while time.perf_counter() - t0 < timeout:
        n = sum(1 for m in c.consume(num_messages=10000, timeout=0.2) if m.error() is None)
        now = time.perf_counter()
        if n:
            got += n
            last = now
        elif got and now - last > 2.0:
            break
    c.close()
    print(json.dumps({"got": got, "elapsed": last - t0}))


def run_clients(commands: list[list[str]], env: dict[str, str], pids: list[int], timeout: float) -> tuple[float, float, list[str]]:
    """Starts *commands* together; (wall seconds of the slowest, broker CPU-s used, their stdouts)."""
    before = cpu_total(pids)
    t0 = time.perf_counter()
    procs = [subprocess.Popen(cmd, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE) for cmd in commands]
    outs = []
    for p in procs:
        out, err = p.communicate(timeout=timeout)
        if p.returncode != 0:
            raise RuntimeError(f"{' '.join(commands[0][:3])}… failed: {err.decode()[-500:]}")
        outs.append(out.decode())
    return time.perf_counter() - t0, cpu_total(pids) - before, outs


def one_setup(setup: str, broker, work: Path, env: dict[str, str], args, results: dict) -> None:
    rf = 3 if "RF3" in setup else 1
    acks = "all" if rf == 3 else "1"
    configs = {"min.insync.replicas": "2"} if rf == 3 else {}
    for n in args.clients:
        topic = f"scale-{n}-{int(time.time() * 1000) % 100000}"
        create_topic(broker.bootstrap, topic, PARTITIONS, rf, configs)
        data = work / f"records-{n}.txt"
        if not data.exists():
            write_records(data, args.records // n)
        total = (args.records // n) * n
        produce = [["kcat", "-P", "-b", broker.bootstrap, "-t", topic, "-X", f"acks={acks}", "-X", "linger.ms=5", "-l", str(data)]
                   for _ in range(n)]
        wall, cpu, _ = run_clients(produce, env, broker.pids, timeout=600)
        results.setdefault((setup, "produce", n), []).append((total / wall, cpu * 1e6 / total))
        share = [list(range(i, PARTITIONS, n)) for i in range(n)]
        consume = [[sys.executable, __file__, "--worker", broker.bootstrap, topic, ",".join(map(str, ps))] for ps in share]
        _, cpu, outs = run_clients(consume, os.environ.copy(), broker.pids, timeout=600)
        reports = [json.loads(o.strip().splitlines()[-1]) for o in outs]
        got = sum(r["got"] for r in reports)
        wall = max(r["elapsed"] for r in reports)
        if got != total:
            print(f"  {setup} {n} consumers read {got} of {total}", file=sys.stderr)
            continue
        results.setdefault((setup, "consume", n), []).append((total / wall, cpu * 1e6 / total))


def chart(path: Path, title: str, clients: list[int],
          medians: dict[tuple[str, str, int], tuple[float, float]]) -> Path:
    """The table as lines over the client count, one per setup: (setup, phase, clients) → (rec/s, CPU-s/M)."""
    setups = list(dict.fromkeys(setup for setup, _, _ in medians))

    def series(phase: str, i: int) -> dict[str, list[float | None]]:
        return {setup: [medians[(setup, phase, n)][i] if (setup, phase, n) in medians else None for n in clients]
                for setup in setups}

    return draw(path, title, [
        Panel("produce records/s (aggregate)", clients, series("produce", 0), kind="lines", xlabel="clients"),
        Panel("consume records/s (aggregate)", clients, series("consume", 0), kind="lines", xlabel="clients"),
        Panel("broker CPU-seconds per million produced", clients, series("produce", 1), kind="lines",
              xlabel="clients"),
        Panel("broker CPU-seconds per million consumed", clients, series("consume", 1), kind="lines",
              xlabel="clients"),
    ])


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--worker":
        consume_worker(sys.argv[2], sys.argv[3], [int(p) for p in sys.argv[4].split(",")], timeout=300)
        return
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--clients", default="1,2,4")
    ap.add_argument("--setups", default=",".join(SETUPS))
    ap.add_argument("--port", type=int, default=39092)
    ap.add_argument("--zookeeper-port", type=int, default=32181)
    ap.add_argument("--tansu-port", type=int, default=29092)
    add_chart_argument(ap)
    args = ap.parse_args()
    args.clients = [int(c) for c in args.clients.split(",")]
    setups = [s for s in SETUPS if s in args.setups.split(",")]
    work = Path(tempfile.mkdtemp(prefix="mafka-bench-scale-"))
    print(f"work dir {work}", file=sys.stderr)
    env = kcat_env(work)
    results: dict = {}
    for r in range(1, args.rounds + 1):
        order = setups if r % 2 else list(reversed(setups))
        for setup in order:
            print(f"round {r}: {setup}", file=sys.stderr)
            if setup.startswith("tansu"):
                broker = Tansu(work, args.tansu_port, f"{r}")
            else:
                broker = Mafka(work, args.port, args.zookeeper_port, f"{r}-{setup.split()[1]}", brokers=3)
            try:
                one_setup(setup, broker, work, env, args, results)
            finally:
                broker.stop()
            time.sleep(1.0)
    title = f"{args.records:,} x 100 B over {PARTITIONS} partitions, medians of {args.rounds} rounds"
    print(f"\n{title}\n")
    print("| setup | clients | produce rec/s | broker CPU-s / M produced | consume rec/s | broker CPU-s / M consumed |")
    print("|---|---|---|---|---|---|")
    medians: dict[tuple[str, str, int], tuple[float, float]] = {}
    for setup in setups:
        for n in args.clients:
            p = results.get((setup, "produce", n), [])
            c = results.get((setup, "consume", n), [])
            cells = []
            for phase, runs in (("produce", p), ("consume", c)):
                if runs:
                    medians[(setup, phase, n)] = (statistics.median(x for x, _ in runs),
                                                  statistics.median(y for _, y in runs))
                    cells += [f"{medians[(setup, phase, n)][0]:,.0f}", f"{medians[(setup, phase, n)][1]:.2f}"]
                else:
                    cells += ["–", "–"]
            print(f"| {setup} | {n} | " + " | ".join(cells) + " |")
    print("\nall runs (rec/s, CPU-s/M):")
    for key, runs in sorted(results.items()):
        print(f"  {key}: " + "; ".join(f"{x:,.0f} {y:.2f}" for x, y in runs))
    if args.chart and medians:
        print(f"chart: {chart(args.chart, title, args.clients, medians)}", file=sys.stderr)


if __name__ == "__main__":
    main()
