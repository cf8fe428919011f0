"""Consumer-group timings on a local Mafka cluster, optionally beside a peer broker.

Prints, per broker and round (rounds interleaved between brokers):

* **join-to-first-message**: a fresh one-member confluent-kafka group on a topic
  that already holds data, with librdkafka's default ``session.timeout.ms``
  (45 s); from the subscribe call to the first message.
  Mafka runs with ``group.initial.rebalance.delay.ms`` at Kafka's broker
  default, 3000 ms, unless ``--initial-delay-ms`` says otherwise (``make run``
  uses 0, as Kafka's shipped ``server.properties`` does);
* **rebalance-after-kill**: three members on a 6-partition topic
  (``session.timeout.ms=6000``, roundrobin); one is SIGKILLed; from the kill to
  the two survivors owning all six partitions;

then the medians and the Mafka/peer ratios.  Usage::

    python scripts/bench_groups.py [--rounds 3] [--initial-delay-ms 3000] [--peer 127.0.0.1:29092]

The peer (e.g. Tansu from ``../shared/bench/peer-tansu.sh``) must already be
running; without ``--peer`` only Mafka is measured.  ``--chart PATH.png`` also
draws the medians (Mafka beside the peer, the ratio above each pair).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench_chart import Panel, add_chart_argument, draw  # noqa: E402
from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from tests.harness.cluster import LocalCluster  # noqa: E402
from tests.harness.group_clients import Group  # noqa: E402

SESSION_TIMEOUT_MS = 6000
#: librdkafka's default session.timeout.ms (the join measurement uses the client's default).
CLIENT_DEFAULT_SESSION_TIMEOUT_MS = 45000


def _topic(bootstrap: str, partitions: int, rf: int, messages: int) -> str:
    name = f"bench-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})  # kept: a dropped handle cancels its futures
    admin.create_topics([NewTopic(name, partitions, rf)])[name].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all"})
    deadline = time.monotonic() + 30
    for i in range(messages):
        producer.produce(name, str(i).encode(), partition=i % partitions)
    while producer.flush(1) and time.monotonic() < deadline:
        pass
    return name


def join_to_first_message(bootstrap: str, rf: int, log_dir: Path) -> float:
    topic = _topic(bootstrap, 1, rf, 10)
    group = Group("confluent", bootstrap, f"g-{uuid.uuid4().hex[:8]}", topic, 1, log_dir,
                  session_timeout_ms=CLIENT_DEFAULT_SESSION_TIMEOUT_MS, commit=False)
    try:
        member = group.add("solo")
        subscribing = member.wait_event("subscribing", 30)
        first = member.wait_event("consumed", 60)
        return first["t"] - subscribing["t"]
    finally:
        group.close()


def rebalance_after_kill(bootstrap: str, rf: int, log_dir: Path) -> float:
    topic = _topic(bootstrap, 6, rf, 60)
    group = Group("confluent", bootstrap, f"g-{uuid.uuid4().hex[:8]}", topic, 6, log_dir,
                  session_timeout_ms=SESSION_TIMEOUT_MS, commit=False)
    try:
        members = [group.add(f"m{i}") for i in range(3)]
        group.wait_balanced(60, members)
        killed_at = members[0].kill()
        survivors = members[1:]
        group.wait_balanced(SESSION_TIMEOUT_MS / 1000 + 30, survivors, after=killed_at)
        return max(m.last_assigned()["t"] for m in survivors) - killed_at
    finally:
        group.close()


def chart(path: Path, title: str, medians: dict[tuple[str, str], float]) -> Path:
    """The medians as bars, per timing: (broker, timing) → seconds; mafka ÷ peer above a pair."""
    timings = list(dict.fromkeys(what for _, what in medians))
    brokers = list(dict.fromkeys(name for name, _ in medians))
    return draw(path, title, [
        Panel("seconds (median)", timings, {b: [medians.get((b, w)) for w in timings] for b in brokers},
              ratio=("mafka", "peer") if "peer" in brokers else None),
    ])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--peer", help="bootstrap of an already running peer broker (e.g. Tansu)")
    parser.add_argument("--initial-delay-ms", type=int, default=3000, help="Mafka's group.initial.rebalance.delay.ms")
    add_chart_argument(parser)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-groups-"))
    cluster = LocalCluster(work / "cluster", brokers=3, settings={
        "zookeeper.session.timeout.ms": "6000",
        "group.initial.rebalance.delay.ms": str(args.initial_delay_ms),
    }).start()
    targets = [("mafka", cluster.bootstrap, 3)] + ([("peer", args.peer, 1)] if args.peer else [])
    results: dict[tuple[str, str], list[float]] = {}
    try:
        for r in range(args.rounds):
            for name, bootstrap, rf in targets:
                for what, measure in (("join-to-first-message", join_to_first_message),
                                      ("rebalance-after-kill", rebalance_after_kill)):
                    seconds = measure(bootstrap, rf, work)
                    results.setdefault((name, what), []).append(seconds)
                    print(f"round {r + 1} {name:6} {what:22} {seconds:6.2f} s", flush=True)
    finally:
        cluster.stop()
    print()
    every: dict[tuple[str, str], float] = {}
    for what in ("join-to-first-message", "rebalance-after-kill"):
        line = f"{what:22}"
        medians = {}
        for name, _, _ in targets:
            medians[name] = every[(name, what)] = statistics.median(results[(name, what)])
            line += f"  {name} median {medians[name]:.2f} s"
        if "peer" in medians and medians["peer"] > 0:
            line += f"  ratio mafka/peer {medians['mafka'] / medians['peer']:.2f}"
        print(line)
    if args.chart:
        title = f"consumer-group timings, medians of {args.rounds} rounds"
        print(f"chart: {chart(args.chart, title, every)}", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
