#!/usr/bin/env python3
"""End-to-end latency at a fixed rate, message by message, against any bootstrap address.

shared/bench's ``kbench.py e2e`` reads with ``consume(num_messages=1000,
timeout=0.1)``, which at 2,000 msgs/s returns every 100 ms: its latencies
cannot go below that window whatever the broker does.  This script measures
each message instead: a consumer process (confluent-kafka, partitions
assigned at their end offsets) polls one message at a time and stamps its
arrival; a producer in this process sends messages stamped with
``CLOCK_MONOTONIC`` at ``--rate`` for ``--seconds`` (acks=1, linger 0).
Prints one line of percentiles (ms).

Usage: ``bench_e2e.py -b 127.0.0.1:9092 -t topic [--rate 2000] [--seconds 10] [--label X]``
(the topic must exist; ``scripts/bench_broker.sh`` shows the side-by-side use).
"""

from __future__ import annotations

import argparse
import multiprocessing as mp
import struct
import time

STAMP = struct.Struct(">8sq")
MAGIC = b"mafkae2e"


def consumer(bootstrap: str, topic: str, ready, result_q, expected: int, timeout_s: float) -> None:
    from confluent_kafka import Consumer, TopicPartition

    c = Consumer({"bootstrap.servers": bootstrap, "group.id": "bench-e2e-unused", "enable.auto.commit": False})
    parts = sorted(c.list_topics(topic, timeout=15).topics[topic].partitions)
    tps = []
    for p in parts:
        _, hi = c.get_watermark_offsets(TopicPartition(topic, p), timeout=15, cached=False)
        tps.append(TopicPartition(topic, p, hi))
    c.assign(tps)
    c.poll(0.2)
    ready.set()
    lat = []
    deadline = time.monotonic() + timeout_s
    while len(lat) < expected and time.monotonic() < deadline:
        m = c.poll(0.05)
        now = time.monotonic_ns()
        if m is None or m.error():
            continue
        v = m.value()
        if len(v) >= STAMP.size and v[:8] == MAGIC:
            lat.append((now - STAMP.unpack_from(v)[1]) / 1e6)
    c.close()
    result_q.put(lat)


def percentile(sorted_values: list[float], q: float) -> float:
    if not sorted_values:
        return float("nan")
    return sorted_values[min(len(sorted_values) - 1, int(q * len(sorted_values)))]


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("-b", "--bootstrap", required=True)
    ap.add_argument("-t", "--topic", required=True)
    ap.add_argument("--rate", type=int, default=2000)
    ap.add_argument("--seconds", type=float, default=10.0)
    ap.add_argument("--size", type=int, default=100)
    ap.add_argument("--label", default="broker")
    args = ap.parse_args()

    from confluent_kafka import Producer

    n = int(args.rate * args.seconds)
    ctx = mp.get_context("spawn")
    ready, result_q = ctx.Event(), ctx.Queue()
    child = ctx.Process(target=consumer, args=(args.bootstrap, args.topic, ready, result_q, n, args.seconds + 30))
    child.start()
    if not ready.wait(30):
        raise SystemExit("consumer did not start")
    producer = Producer({"bootstrap.servers": args.bootstrap, "acks": 1, "linger.ms": 0})
    pad = b"x" * max(0, args.size - STAMP.size)
    interval = 1.0 / args.rate
    start = time.monotonic()
    for i in range(n):
        target = start + i * interval
        while (now := time.monotonic()) < target:
            if target - now > 0.002:
                time.sleep(target - now - 0.001)
        producer.produce(args.topic, STAMP.pack(MAGIC, time.monotonic_ns()) + pad)
        producer.poll(0)
    producer.flush(30)
    lat = sorted(result_q.get(timeout=args.seconds + 60))
    child.join(10)
    print(
        f"{args.label}: e2e at {args.rate} msgs/s, {len(lat)}/{n} received: "
        f"p50 {percentile(lat, 0.5):.2f} ms, p90 {percentile(lat, 0.9):.2f}, p99 {percentile(lat, 0.99):.2f}, "
        f"p99.9 {percentile(lat, 0.999):.2f}, max {lat[-1] if lat else float('nan'):.2f}"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
