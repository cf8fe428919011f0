"""Catch-up reads against tailing reads on one broker with a slow cold tier (``make bench-slow-node``).

    python scripts/bench_slow_node.py [--rounds 3] [--seconds 10] [--delay-ms 20] [--backlog-mb 40] [--rate 500]

Two single-broker Mafka clusters run side by side, both with a cold tier
(``mafka.cold.log.dirs``) that is made slow by the test hook
``mafka.cold.read.delay.ms`` (every cold read takes that much longer, in the
thread doing it — standing in for an HDD): one with
``mafka.cold.read.isolation=true`` (Mafka: cold reads in their own thread
pool), one with ``false`` (Kafka's single path: the record bytes go out with
sendfile from the network thread, which pays the slow read).

On each: a backlog topic of ``--backlog-mb`` MB in 1 MB segments, all but the
last 2 MB moved cold; a tailing producer/consumer pair (confluent-kafka,
``--rate`` records/s of 100 bytes, acks=1) measuring produce→consume latency.
Phases, interleaved over ``--rounds`` rounds:

* (a) idle: tailing only;
* (b) isolation on, with a catch-up reader (``kcat -C`` reading the backlog
  from the beginning over and over);
* (c) isolation off, the same catch-up reader.

Prints tailing p50/p99 per phase (medians over the rounds), the ratios, and
the issue's targets: (b) p99 ≤ 1.5 × (a) p99, (c) visibly worse.  ``--chart
PATH.png`` also draws the table (p50 and p99 per phase, p99 ÷ idle above each).
"""

from __future__ import annotations

import argparse
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(HERE.parent))

from bench_chart import Panel, add_chart_argument, draw  # noqa: E402
from bench_peers import Mafka, create_topic  # noqa: E402

from mafka.coordination.zookeeper import free_loopback_ports  # noqa: E402

_STAMP = struct.Struct(">d")


def pct(data: list[float], q: float) -> float:
    s = sorted(data)
    return s[min(len(s) - 1, int(len(s) * q))] if s else float("nan")


def load_backlog(bootstrap: str, topic: str, megabytes: int) -> int:
    from confluent_kafka import Producer

    p = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 20, "batch.size": 256 * 1024})
    value = b"b" * 1000
    n = megabytes * 1000
    for i in range(n):
        while True:
            try:
                p.produce(topic, value, key=b"%d" % i, partition=0)
                break
            except BufferError:
                p.poll(0.05)
    assert p.flush(120) == 0
    return n


def wait_cold(cold_dir: Path, topic: str, segments: int, timeout: float = 180.0) -> int:
    deadline = time.monotonic() + timeout
    d = cold_dir / f"{topic}-0"
    while True:
        n = len(list(d.glob("*.log"))) if d.is_dir() else 0
        if n >= segments or time.monotonic() > deadline:
            return n
        time.sleep(0.5)


def tailing(bootstrap: str, topic: str, rate: float, seconds: float) -> list[float]:
    """Produce→consume latencies (ms) of ``rate`` records/s for ``seconds``."""
    from confluent_kafka import Consumer, Producer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "tail", "enable.auto.commit": False,
                  "fetch.wait.max.ms": 100, "fetch.min.bytes": 1})
    c.assign([TopicPartition(topic, 0, -1)])  # the end
    c.poll(0.5)
    p = Producer({"bootstrap.servers": bootstrap, "acks": "1", "linger.ms": 0})
    latencies: list[float] = []
    stop = threading.Event()

    def consume() -> None:
        while not stop.is_set():
            m = c.poll(0.05)
            if m is not None and m.error() is None and m.value():
                latencies.append((time.time() - _STAMP.unpack_from(m.value())[0]) * 1000.0)

    reader = threading.Thread(target=consume)
    reader.start()
    time.sleep(0.5)
    start = time.monotonic()
    sent = 0
    pad = b"t" * (100 - _STAMP.size)
    while time.monotonic() - start < seconds:
        due = start + sent / rate
        wait = due - time.monotonic()
        if wait > 0:
            time.sleep(wait)
        p.produce(topic, _STAMP.pack(time.time()) + pad, partition=0)
        p.poll(0)
        sent += 1
    p.flush(10)
    time.sleep(1.0)
    stop.set()
    reader.join()
    c.close()
    return latencies


class CatchUp:
    """``kcat -C`` reading the backlog from the beginning, again and again, until stopped."""

    def __init__(self, bootstrap: str, topic: str) -> None:
        self.bootstrap, self.topic = bootstrap, topic
        self.stop_flag = threading.Event()
        self.passes = 0
        self.thread = threading.Thread(target=self._run)

    def _run(self) -> None:
        while not self.stop_flag.is_set():
            proc = subprocess.Popen(["kcat", "-C", "-b", self.bootstrap, "-t", self.topic, "-p", "0", "-o", "beginning",
                                     "-e", "-q", "-X", "fetch.wait.max.ms=10"],
                                    stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            while proc.poll() is None:
                if self.stop_flag.wait(0.1):
                    proc.kill()
                    proc.wait()
                    return
            self.passes += 1

    def __enter__(self) -> CatchUp:
        self.thread.start()
        time.sleep(1.0)  # reading before the tailing measurement starts
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop_flag.set()
        self.thread.join()


def chart(path: Path, title: str, rows: list[tuple[str, float, float]]) -> Path:
    """The table as bars: rows of (phase, p50 ms, p99 ms), the first the idle baseline."""
    phases = [r[0] for r in rows]
    return draw(path, title, [
        Panel("tailing produce→consume latency, ms", phases,
              {"p50": [r[1] for r in rows], "p99": [r[2] for r in rows]}, baseline=("p99", phases[0])),
    ], note="p99 ÷ idle p99 above each phase")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--delay-ms", type=int, default=20)
    ap.add_argument("--backlog-mb", type=int, default=40)
    ap.add_argument("--rate", type=float, default=500.0)
    add_chart_argument(ap)
    args = ap.parse_args()

    work = Path(tempfile.mkdtemp(prefix="bench-slow-node-"))
    clusters = {}
    for tag, isolate in (("isolated", "true"), ("kafka-like", "false")):
        zk, base = free_loopback_ports(1)[0], free_loopback_ports(1, consecutive=True)[0]
        settings = {"mafka.cold.log.dirs": str(work / f"cold-{tag}"), "mafka.hot.retention.bytes": str(2 << 20),
                    "mafka.hot.retention.ms": "-1", "mafka.cold.mover.interval.ms": "500",
                    "mafka.cold.read.isolation": isolate, "mafka.cold.read.delay.ms": str(args.delay_ms),
                    "log.segment.bytes": str(1 << 20)}
        clusters[tag] = Mafka(work, base, zk, tag, brokers=1, settings=settings)
    try:
        for tag, m in clusters.items():
            create_topic(m.bootstrap, "backlog", 1, 1)
            create_topic(m.bootstrap, "live", 1, 1)
            n = load_backlog(m.bootstrap, "backlog", args.backlog_mb)
            cold = wait_cold(work / f"cold-{tag}", "backlog", args.backlog_mb - 4)
            print(f"{tag}: backlog {n} records ({args.backlog_mb} MB), {cold} segments cold", flush=True)
        phases: dict[str, list[tuple[float, float, int]]] = {"a-isolated": [], "a-kafka-like": [], "b": [], "c": []}
        for r in range(args.rounds):
            for tag, m in clusters.items():
                lat = tailing(m.bootstrap, "live", args.rate, args.seconds)
                phases[f"a-{tag}"].append((pct(lat, 0.5), pct(lat, 0.99), len(lat)))
                with CatchUp(m.bootstrap, "backlog") as reader:
                    lat = tailing(m.bootstrap, "live", args.rate, args.seconds)
                phase = "b" if tag == "isolated" else "c"
                phases[phase].append((pct(lat, 0.5), pct(lat, 0.99), len(lat)))
                print(f"round {r + 1} {tag}: idle p50/p99 {phases[f'a-{tag}'][-1][0]:.1f}/{phases[f'a-{tag}'][-1][1]:.1f} ms, "
                      f"with catch-up {phases[phase][-1][0]:.1f}/{phases[phase][-1][1]:.1f} ms "
                      f"({reader.passes} full backlog passes)", flush=True)
    finally:
        for m in clusters.values():
            m.stop()

    def med(phase: str, i: int) -> float:
        return statistics.median(x[i] for x in phases[phase])

    idle = statistics.median([x[1] for x in phases["a-isolated"] + phases["a-kafka-like"]])
    idle50 = statistics.median([x[0] for x in phases["a-isolated"] + phases["a-kafka-like"]])
    b50, b99, c50, c99 = med("b", 0), med("b", 1), med("c", 0), med("c", 1)
    print()
    title = (f"tailing produce→consume latency, {args.rate:.0f} records/s, cold reads +{args.delay_ms} ms each, "
             f"medians of {args.rounds} rounds")
    print(title)
    print("| phase | p50 ms | p99 ms | p99 / idle |")
    print("|---|---|---|---|")
    print(f"| (a) idle | {idle50:.1f} | {idle:.1f} | 1.00 |")
    print(f"| (b) catch-up reader, isolation on | {b50:.1f} | {b99:.1f} | {b99 / idle:.2f} |")
    print(f"| (c) catch-up reader, isolation off (Kafka's path) | {c50:.1f} | {c99:.1f} | {c99 / idle:.2f} |")
    if args.chart:
        rows = [("(a) idle", idle50, idle), ("(b) catch-up reader, isolation on", b50, b99),
                ("(c) catch-up reader, isolation off (Kafka's path)", c50, c99)]
        print(f"chart: {chart(args.chart, title, rows)}", file=sys.stderr)
    ok_b = b99 <= 1.5 * idle
    ok_c = c99 > 2 * b99
    print(f"target (b) p99 <= 1.5 x (a): {'met' if ok_b else 'NOT met'}; (c) visibly worse than (b): "
          f"{'yes' if ok_c else 'no'} ({c99 / b99:.1f}x)")
    return 0 if ok_b and ok_c else 1


if __name__ == "__main__":
    sys.exit(main())
