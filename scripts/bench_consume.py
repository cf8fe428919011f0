"""kcat consume throughput and broker CPU: Mafka beside the Tansu peer, interleaved.

    python scripts/bench_consume.py [--records 1000000] [--rounds 3] [--reps 2]

Each round starts a fresh Tansu (``../shared/bench/peer-tansu.sh``, memory
storage) and a fresh single-broker Mafka (ZooKeeper + broker 1), alternating
which goes first; creates a 1-partition topic on it; writes N × 100-byte
records with ``kcat -P``; then reads them back with ``kcat -C -o beginning
-c N -e`` under several fetch sizes (``fetch.message.max.bytes``), each
``--reps`` times.  kcat runs on the librdkafka bundled in the confluent-kafka
wheel for both brokers (Debian's older one cannot talk to Tansu).  The
broker's CPU is read from ``/proc/PID/stat`` around each read.

Prints, per broker and fetch size, the median records/s and broker
CPU-seconds per million records, and Mafka ÷ Tansu; ``--chart PATH.png`` also
draws that table (bars side by side, the ratio over each pair).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from bench_chart import Panel, add_chart_argument, draw
from bench_peers import Mafka, Tansu, cpu_s, create_topic, kcat_env, write_records

MiB = 1 << 20
SETTINGS = [
    ("1 MiB (default)", []),
    ("4 MiB", ["-X", f"fetch.message.max.bytes={4 * MiB}"]),
    ("8 MiB", ["-X", f"fetch.message.max.bytes={8 * MiB}"]),
    ("16 MiB", ["-X", f"fetch.message.max.bytes={16 * MiB}"]),
    ("16 MiB, queued.min.messages=1M", ["-X", f"fetch.message.max.bytes={16 * MiB}", "-X", "queued.min.messages=1000000"]),
    ("16 MiB, fetch.queue.backoff.ms=10", ["-X", f"fetch.message.max.bytes={16 * MiB}", "-X", "fetch.queue.backoff.ms=10"]),
]


def measure(broker, env, work: Path, data: Path, n: int, reps: int, results: dict) -> None:
    create_topic(broker.bootstrap, "T", 1, 1)
    subprocess.run(["kcat", "-P", "-b", broker.bootstrap, "-t", "T", "-X", "acks=1", "-X", "linger.ms=5", "-l", str(data)],
                   env=env, check=True, timeout=300)
    for _ in range(reps):
        for label, extra in SETTINGS:
            # Offsets only, into a file: a pipe read by a slower process would hold kcat back, fill
            # librdkafka's queue and trip its 1 s fetch backoff, measuring the reader instead.
            sink = work / "kcat-out.txt"
            before = cpu_s(broker.pid)
            t0 = time.perf_counter()
            with open(sink, "wb") as out:
                subprocess.run(["kcat", "-C", "-b", broker.bootstrap, "-t", "T", "-o", "beginning", "-c", str(n), "-e", "-q",
                                "-f", "%o\n", *extra], env=env, stdout=out, stderr=subprocess.DEVNULL, timeout=300)
            elapsed = time.perf_counter() - t0
            cpu = cpu_s(broker.pid) - before
            got = sink.read_bytes().count(b"\n")
            if got != n:
                print(f"  {type(broker).__name__} {label}: read {got} of {n} records", file=sys.stderr)
                continue
            results.setdefault((type(broker).__name__, label), []).append((n / elapsed, cpu * 1e6 / n))


def chart(path: Path, title: str, rows: list[tuple[str, float | None, float | None, float | None, float | None]]) -> Path:
    """The table as bars: rows of (fetch size, Mafka rec/s, Tansu rec/s, Mafka CPU-s/M, Tansu CPU-s/M)."""
    labels = [r[0] for r in rows]
    return draw(path, title, [
        Panel("consume records/s (median)", labels, {"Mafka": [r[1] for r in rows], "Tansu": [r[2] for r in rows]},
              ratio=("Mafka", "Tansu")),
        Panel("broker CPU-seconds per million records", labels,
              {"Mafka": [r[3] for r in rows], "Tansu": [r[4] for r in rows]}, ratio=("Mafka", "Tansu")),
    ], note="Mafka ÷ Tansu over each pair")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--reps", type=int, default=2, help="reads per fetch size per round")
    ap.add_argument("--port", type=int, default=39092)
    ap.add_argument("--zookeeper-port", type=int, default=32181)
    ap.add_argument("--tansu-port", type=int, default=29092)
    add_chart_argument(ap)
    args = ap.parse_args()
    if shutil.which("kcat") is None:
        sys.exit("kcat is not installed (make system-deps)")
    work = Path(tempfile.mkdtemp(prefix="mafka-bench-consume-"))
    print(f"work dir {work}", file=sys.stderr)
    env = kcat_env(work)
    data = write_records(work / "records.txt", args.records)
    results: dict = {}
    for r in range(1, args.rounds + 1):
        order = ["tansu", "mafka"] if r % 2 else ["mafka", "tansu"]
        for which in order:
            print(f"round {r}: {which}", file=sys.stderr)
            broker = Tansu(work, args.tansu_port, str(r)) if which == "tansu" else Mafka(work, args.port, args.zookeeper_port, str(r))
            try:
                measure(broker, env, work, data, args.records, args.reps, results)
            finally:
                broker.stop()
            time.sleep(1.0)
    title = f"kcat -C of {args.records:,} x 100 B, 1 partition, medians of {args.rounds} rounds x {args.reps} reads"
    print(f"\n{title}\n")
    print("| fetch size | Mafka rec/s | Tansu rec/s | Mafka ÷ Tansu | Mafka broker CPU-s / M | Tansu broker CPU-s / M |")
    print("|---|---|---|---|---|---|")
    rows: list[tuple[str, float | None, float | None, float | None, float | None]] = []
    for label, _ in SETTINGS:
        m = results.get(("Mafka", label), [])
        t = results.get(("Tansu", label), [])
        if not m or not t:
            print(f"| {label} | {len(m)} runs | {len(t)} runs | – | – | – |")
            rows.append((label, None, None, None, None))
            continue
        mr, tr = statistics.median(x for x, _ in m), statistics.median(x for x, _ in t)
        mc, tc = statistics.median(c for _, c in m), statistics.median(c for _, c in t)
        print(f"| {label} | {mr:,.0f} | {tr:,.0f} | {mr / tr:.2f}× | {mc:.3f} | {tc:.3f} |")
        rows.append((label, mr, tr, mc, tc))
    print("\nall runs (rec/s):")
    for (name, label), runs in sorted(results.items()):
        print(f"  {name:5} {label:32} " + " ".join(f"{x:,.0f}" for x, _ in runs))
    if args.chart:
        print(f"chart: {chart(args.chart, title, rows)}", file=sys.stderr)


if __name__ == "__main__":
    main()
