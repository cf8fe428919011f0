"""A 10-member group through a member leaving and a member joining, under each group protocol.

For the classic protocol with an eager assignor (``roundrobin``), the classic protocol with
``cooperative-sticky`` (KIP-429) and Kafka 4's consumer protocol (KIP-848, the broker's
``uniform`` assignor), on a local 3-broker Mafka cluster (RF 3), this prints per round:

* **settle**: from the change to the group holding every partition again, each exactly once
  (a leave: from the SIGTERM of one member, which closes its consumer and leaves the group;
  a join: from the new member's ``subscribe`` call);
* **throughput kept**: the records per second consumed by the *untouched* members (those
  holding the same partitions before and after, or more) while the group settles (at least
  1 s), as a share of what they consumed in the 5 s before the change ("n/a" when no member
  was untouched, as with an eager assignor that moves everything); and the same for every
  member that stayed; and the longest time any member that stayed went without a record
  from the change until the group settled (the eager protocol's stop-the-world shows here).  Members are confluent-kafka processes
  (``tests/harness/group_member.py``) that spend ``--work-ms`` (1 ms) per record on a 20-partition
  topic holding a backlog, so each consumes as fast as its work allows.

then the medians per protocol.  The issue's goal: the untouched members keep >= 90 % of their
throughput with the consumer protocol, where the eager classic protocol stops them.

Usage::

    python scripts/bench_group_change.py [--rounds 3] [--members 10] [--work-ms 1]
"""

from __future__ import annotations

import argparse
import signal
import statistics
import sys
import tempfile
import time
import uuid
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from confluent_kafka import Producer  # noqa: E402
from confluent_kafka.admin import AdminClient, NewTopic  # noqa: E402

from tests.harness.cluster import LocalCluster  # noqa: E402
from tests.harness.group_clients import Group, Member, wait_until  # noqa: E402

PARTITIONS = 20
#: (label, group.protocol, assignor)
PROTOCOLS = (
    ("classic eager", "classic", "roundrobin"),
    ("classic cooperative", "classic", "cooperative-sticky"),
    ("consumer (KIP-848)", "consumer", ""),
)
SETTINGS = {
    "zookeeper.session.timeout.ms": "6000",
    "group.initial.rebalance.delay.ms": "0",
    "group.consumer.min.heartbeat.interval.ms": "500",
    "group.consumer.heartbeat.interval.ms": "1000",  # as the classic members' heartbeat.interval.ms
}
BEFORE_S = 5.0


def make_topic(bootstrap: str, records: int) -> str:
    name = f"change-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, PARTITIONS, 3)])[name].result(30)
    producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "linger.ms": 20,
                         "batch.num.messages": 5000})
    for i in range(records):
        while True:
            try:
                # Every partition the same backlog (the sticky partitioner would leave most of them
                # empty, and the members holding those idle: the measure would rest on one or two).
                producer.produce(name, str(i).encode(), partition=i % PARTITIONS)
                break
            except BufferError:
                producer.poll(0.05)
    if producer.flush(60):
        raise RuntimeError("the backlog was not written")
    return name


def covered(members: list[Member]) -> dict[str, set[int]] | None:
    out = {}
    for m in members:
        current = m.assignment()
        if not current:
            return None
        out[m.name] = set(current)
    held = sorted(p for ps in out.values() for p in ps)
    return out if held == list(range(PARTITIONS)) else None


def wait_stable(group: Group, members: list[Member]) -> None:
    """Until the members have held one full assignment, unchanged, for BEFORE_S + 1 seconds."""
    deadline = time.monotonic() + 120
    since, last = time.monotonic(), covered(members)
    while time.monotonic() < deadline:
        time.sleep(0.25)
        now = covered(members)
        if now != last or now is None:
            since, last = time.monotonic(), now
        elif time.monotonic() - since >= BEFORE_S + 1:
            return
    raise TimeoutError(f"no stable assignment: {group.assignments(members)}")


def consumed_between(m: Member, start: float, end: float) -> int:
    return sum(1 for e in m.consumed() if start <= e["t"] < end)


def measure(group: Group, before: dict[str, set[int]], before_members: list[Member], after_members: list[Member],
            change_at: float, timeout: float) -> tuple[float, float | None, float, float]:
    """(settle seconds, the untouched members' throughput while the group settles as a share of
    theirs before (None if no member was untouched), the same for every member that stayed, and
    the longest any member that stayed went without a record from the change until it settled)."""
    after = wait_until(lambda: covered(after_members), timeout,
                       lambda: f"no full assignment over {[m.name for m in after_members]}: "
                               f"{group.assignments(after_members)}")
    settled_at = time.monotonic()
    settle = settled_at - change_at
    stayed = [m for m in before_members if m in after_members]
    untouched = [m for m in stayed if before[m.name] <= after[m.name]]
    window = max(settle, 1.0)
    # The window may reach past the moment it settled: count only once it has passed (and the
    # members have printed what they consumed in it), or the records of its unlived end are missing.
    time.sleep(max(0.0, change_at + window + 0.3 - time.monotonic()))

    def share(members: list[Member]) -> float | None:
        rate_before = sum(consumed_between(m, change_at - BEFORE_S, change_at) for m in members) / BEFORE_S
        rate_during = sum(consumed_between(m, change_at, change_at + window) for m in members) / window
        return rate_during / rate_before if rate_before else None

    every = share(stayed)
    return settle, share(untouched), every if every is not None else 0.0, max(
        longest_pause(m, change_at, change_at + window) for m in stayed)


def longest_pause(m: Member, start: float, end: float) -> float:
    """The longest stretch of [start, end] in which *m* consumed nothing."""
    times = [start] + sorted(e["t"] for e in m.consumed() if start <= e["t"] < end) + [end]
    return max(b - a for a, b in zip(times, times[1:], strict=False))


def run_once(bootstrap: str, protocol: str, assignor: str, members: int, work_ms: float,
             log_dir: Path) -> dict[str, tuple[float, float]]:
    # enough backlog for every member to stay busy through both changes
    topic = make_topic(bootstrap, int(members * 1000 / max(work_ms, 0.1) * 40))
    options: dict = {"commit": False, "work_ms": work_ms, "group_protocol": protocol}
    if assignor:
        options["assignor"] = assignor
    group = Group("confluent", bootstrap, f"g-{uuid.uuid4().hex[:8]}", topic, PARTITIONS, log_dir, **options)
    try:
        ms = [group.add(f"m{i}") for i in range(members)]
        wait_stable(group, ms)
        out = {}
        leaver = ms[-1]
        before = covered(ms)
        assert before is not None
        left_at = time.monotonic()
        leaver.proc.send_signal(signal.SIGTERM)
        out["leave"] = measure(group, before, ms, ms[:-1], left_at, 60)
        wait_stable(group, ms[:-1])
        before = covered(ms[:-1])
        assert before is not None
        newcomer = group.add("new")
        joined_at = newcomer.wait_event("subscribing", 30)["t"]
        out["join"] = measure(group, before, ms[:-1], ms[:-1] + [newcomer], joined_at, 60)
        return out
    finally:
        group.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--members", type=int, default=10)
    parser.add_argument("--work-ms", type=float, default=1.0)
    args = parser.parse_args()
    work = Path(tempfile.mkdtemp(prefix="bench-group-change-"))
    cluster = LocalCluster(work / "cluster", brokers=3, settings=SETTINGS).start()
    results: dict[tuple[str, str], list[tuple[float, float | None, float, float]]] = {}
    try:
        for r in range(args.rounds):
            for label, protocol, assignor in PROTOCOLS:
                got = run_once(cluster.bootstrap, protocol, assignor, args.members, args.work_ms, work)
                for change, (settle, untouched, stayed, pause) in got.items():
                    results.setdefault((label, change), []).append((settle, untouched, stayed, pause))
                    print(f"round {r + 1} {label:20} {change:5} settle {settle:6.2f} s  throughput kept: "
                          f"untouched members {_pct(untouched)}, every member that stayed {_pct(stayed)}; "
                          f"longest pause {pause:.2f} s", flush=True)
    finally:
        cluster.stop()
    print(f"\n{args.members} members, {PARTITIONS} partitions, {args.work_ms:g} ms per record, "
          f"medians of {args.rounds} rounds:")
    print(f"{'protocol':20} {'change':6} {'settle s':>9} {'untouched kept':>15} {'stayed kept':>12} {'pause s':>8}")
    for label, _, _ in PROTOCOLS:
        for change in ("leave", "join"):
            runs = results[(label, change)]
            untouched = [u for _, u, _, _ in runs if u is not None]
            print(f"{label:20} {change:6} {statistics.median(s for s, _, _, _ in runs):9.2f} "
                  f"{_pct(statistics.median(untouched) if untouched else None):>15} "
                  f"{_pct(statistics.median(x for _, _, x, _ in runs)):>12} "
                  f"{statistics.median(p for _, _, _, p in runs):8.2f}")
    return 0


def _pct(share: float | None) -> str:
    return "n/a (none)" if share is None else f"{share * 100:.1f} %"


if __name__ == "__main__":
    sys.exit(main())
