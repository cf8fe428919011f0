"""How long the rebalancer takes to bring a 90 %-full broker under the threshold, pipelined and in batches.

    python scripts/bench_rebalance.py [--rounds 2] [--max-concurrent 2] [--partitions 24]

Each run is a fresh 3-broker cluster whose log dirs count as 25 MB
(``mafka.disk.capacity.bytes``), with ``--partitions`` single-replica
partitions on broker 1 of 0.25, 0.5, 1 and 2 MB in turn (broker 1 at about
90 %, brokers 2 and 3 empty), then ``mafka rebalance --execute`` (threshold
50 %, ``--max-concurrent`` moves at once) either pipelined or ``--batches``.  The
time is from the plan's start to its last move's end, as the controller
recorded them in ``/mafka/rebalancer/state``; runs of the two modes
alternate.  Prints each run and the medians (``--chart PATH.png`` also draws
them side by side, pipelined ÷ batches above).
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

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_chart import Panel, add_chart_argument, draw  # noqa: E402
from bench_peers import Mafka  # noqa: E402

from mafka.coordination.zookeeper import free_loopback_ports  # noqa: E402

MB = 1 << 20
SIZES = (MB // 4, MB // 2, MB, 2 * MB)


def fill(bootstrap: str, topic: str, partitions: int) -> int:
    from confluent_kafka import Producer
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(topic, num_partitions=partitions, replica_assignment=[[1]] * partitions)])[topic].result(30)
    time.sleep(1.0)
    p = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 20})
    total = 0
    for partition in range(partitions):
        for _ in range(SIZES[partition % len(SIZES)] // 1000):
            while True:
                try:
                    p.produce(topic, b"r" * 1000, partition=partition)
                    break
                except BufferError:
                    p.poll(0.05)
            total += 1000
    assert p.flush(120) == 0
    return total


def state(zk_port: int) -> dict | None:
    from kazoo.client import KazooClient
    from kazoo.exceptions import NoNodeError

    zk = KazooClient(hosts=f"127.0.0.1:{zk_port}")
    zk.start(timeout=30)
    try:
        return json.loads(zk.get("/mafka/rebalancer/state")[0])
    except NoNodeError:
        return None
    finally:
        zk.stop()
        zk.close()


def one_run(work: Path, tag: str, pipelined: bool, args: argparse.Namespace) -> tuple[float, int]:
    zk, base = free_loopback_ports(1)[0], free_loopback_ports(3, consecutive=True)[0]
    settings = {"mafka.disk.capacity.bytes": str(25 * MB), "mafka.monitor.interval.ms": "500"}
    m = Mafka(work, base, zk, tag, brokers=3, settings=settings)
    try:
        fill(m.bootstrap, "skewed", args.partitions)
        time.sleep(2.0)  # the monitor reports see it all
        cmd = [str(HERE.parent / ".venv" / "bin" / "mafka"), "rebalance", "--zookeeper", f"127.0.0.1:{zk}",
               "--execute", "--threshold", "0.5", "--max-concurrent", str(args.max_concurrent)]
        subprocess.run(cmd + ([] if pipelined else ["--batches"]), check=True, stdout=subprocess.DEVNULL)
        deadline = time.monotonic() + 300
        while True:
            s = state(zk)
            if s is not None and s["status"] == "done":
                break
            if time.monotonic() > deadline:
                raise RuntimeError(f"the plan did not finish: {json.dumps(s)[:1000]}")
            time.sleep(0.5)
        finished = [mv["finishedMs"] for mv in s["moves"] if mv["state"] == "done"]
        return (max(finished) - s["createdMs"]) / 1000.0, len(finished)
    finally:
        m.stop()


def chart(path: Path, title: str, pipelined: float, batches: float) -> Path:
    """The two medians side by side (seconds), pipelined ÷ batches above them."""
    return draw(path, title, [
        Panel("seconds until broker 1 is under the threshold", ["rebalance"],
              {"pipelined": [pipelined], "batches": [batches]}, ratio=("pipelined", "batches")),
    ])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--max-concurrent", type=int, default=2)
    ap.add_argument("--partitions", type=int, default=24)
    add_chart_argument(ap)
    args = ap.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-rebalance-"))
    times: dict[str, list[float]] = {"pipelined": [], "batches": []}
    for r in range(args.rounds):
        for mode in ("pipelined", "batches"):
            seconds, moves = one_run(work, f"{mode}-{r}", mode == "pipelined", args)
            times[mode].append(seconds)
            print(f"round {r + 1} {mode}: {moves} moves, broker 1 under 50 % after {seconds:.1f} s", flush=True)
    p, b = statistics.median(times["pipelined"]), statistics.median(times["batches"])
    print()
    title = (f"rebalancing a 90 %-full broker to under 50 %, {args.max_concurrent} moves at once, "
             f"medians of {args.rounds} runs")
    print(title)
    print("| mode | seconds |")
    print("|---|---|")
    print(f"| pipelined | {p:.1f} |")
    print(f"| batches | {b:.1f} |")
    print(f"pipelined / batches = {p / b:.2f}")
    if args.chart:
        print(f"chart: {chart(args.chart, title, p, b)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
