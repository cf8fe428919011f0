"""Replication figures on one local 3-broker cluster (ZooKeeper + ``mafka cluster up``).

    .venv/bin/python scripts/bench_replication.py [--rounds 3] [--messages 1000000] [--failovers 3]

Prints, as medians over interleaved rounds:

* produce throughput with kcat (``-P -l``, N × 100 B, linger 5 ms) to an RF 1
  topic with acks=1 and to an RF 3 topic (``min.insync.replicas=2``) with
  acks=all, alternating, and their ratio;
* failover: an idempotent acks=all producer sends continuously to an RF 3
  partition; its leader is SIGKILLed; the time from the kill to the first
  acknowledgement after it (necessarily from the successor), with
  ``zookeeper.session.timeout.ms=6000`` (the fast path for a refused port
  makes it independent of the session); the broker is restarted and waited
  back into the ISR before the next round; then a leader is frozen
  (SIGSTOP) past its session, where only the session expiry may move it;
  at the end every acknowledged value must be read back (printed);
* controlled shutdown: the same producer, the leader gets SIGTERM; the longest
  gap between two acknowledgements around it (the no-ack window).
"""

from __future__ import annotations

import argparse
import json
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))

from tests.harness.chaos import process_state  # noqa: E402
from tests.harness.cluster import LocalCluster  # noqa: E402


def wait_for(predicate, timeout: float, what: str):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise TimeoutError(what)


class Cluster(LocalCluster):
    """The integration tests' :class:`LocalCluster`, plus ZooKeeper reads and waiting for a process to exit."""

    def __init__(self, work: Path, settings: dict[str, str]) -> None:
        super().__init__(work / "cluster", brokers=3, settings=settings)
        self.start(timeout=120)
        from kazoo.client import KazooClient

        self.zk = KazooClient(f"127.0.0.1:{self.zookeeper_port}")
        self.zk.start(timeout=15)

    def state(self, topic: str, partition: int) -> dict:
        return json.loads(self.zk.get(f"/brokers/topics/{topic}/partitions/{partition}/state")[0])

    def wait_exit(self, broker_id: int, timeout: float = 60) -> None:
        pid = self.broker(broker_id)["pid"]
        wait_for(lambda: process_state(pid) in (None, "Z", "X"), timeout, f"broker {broker_id} to exit")

    def stop(self) -> None:
        self.zk.stop()
        super().stop()


def create_topic(cluster: Cluster, name: str, rf: int, partitions: int = 1, configs: dict | None = None) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    for f in admin.create_topics([NewTopic(name, partitions, rf, config=configs or {})]).values():
        f.result()
    wait_for(lambda: all(cluster.state(name, p)["leader"] >= 0 for p in range(partitions)), 30, f"{name} leaders")
    time.sleep(0.5)


def kcat_produce(cluster: Cluster, topic: str, acks: str, data: Path, n: int) -> float:
    argv = ["kcat", "-P", "-b", cluster.bootstrap, "-t", topic, "-p", "0", "-X", f"acks={acks}", "-X", "linger.ms=5",
            "-X", "queue.buffering.max.messages=1000000", "-l", str(data)]
    t0 = time.monotonic()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return n / (time.monotonic() - t0)


class AckRecorder:
    """An idempotent acks=all producer sending ~2,000 msgs/s of unique values; records the time of every
    acknowledgement and the values acknowledged (for the loss check)."""

    _runs = 0

    def __init__(self, bootstrap: str, topic: str, **config: object) -> None:
        from confluent_kafka import Producer

        self.producer = Producer({"bootstrap.servers": bootstrap, "acks": "all", "enable.idempotence": True,
                                  "linger.ms": 1, "message.timeout.ms": 120000, **config})
        self.topic = topic
        AckRecorder._runs += 1
        self.tag = f"r{AckRecorder._runs}"
        self.acks: list[float] = []
        self.acked_sent: list[tuple[float, float]] = []  # (sent, acknowledged)
        self.acked_values: set[bytes] = set()
        self.errors = 0
        self.running = True
        self.thread = threading.Thread(target=self._run, daemon=True)
        self.thread.start()

    def _cb(self, err, msg, sent: float = 0.0) -> None:
        if err is None:
            now = time.monotonic()
            self.acks.append(now)
            self.acked_sent.append((sent, now))
            self.acked_values.add(msg.value())
        else:
            self.errors += 1

    def _run(self) -> None:
        i = 0
        while self.running:
            sent = time.monotonic()
            value = f"{self.tag}-{i}".encode().ljust(100, b"x")
            try:
                self.producer.produce(self.topic, value=value, partition=0,
                                      on_delivery=lambda e, m, s=sent: self._cb(e, m, s))
            except BufferError:  # the local queue is full while no leader answers: wait, keep serving callbacks
                self.producer.poll(0.1)
                continue
            self.producer.poll(0)
            i += 1
            time.sleep(0.0005)
        self.producer.flush(60)

    def stop(self) -> None:
        self.running = False
        self.thread.join()


def consume_all(bootstrap: str, topic: str) -> set[bytes]:
    """Every value of partition 0 up to its high watermark."""
    from confluent_kafka import Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": f"check-{time.time()}",
                         "enable.auto.commit": False, "auto.offset.reset": "earliest"})
    try:
        _, high = consumer.get_watermark_offsets(TopicPartition(topic, 0), timeout=30)
        consumer.assign([TopicPartition(topic, 0, 0)])
        values: set[bytes] = set()
        position, deadline = 0, time.monotonic() + 120
        while position < high and time.monotonic() < deadline:
            for msg in consumer.consume(10000, timeout=1.0):
                if msg.error() is None:
                    values.add(msg.value())
                    position = msg.offset() + 1
        return values
    finally:
        consumer.close()


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--messages", type=int, default=1_000_000)
    ap.add_argument("--failovers", type=int, default=5)
    args = ap.parse_args()
    if shutil.which("kcat") is None:
        raise SystemExit("kcat is needed (make test installs it)")
    work = Path(tempfile.mkdtemp(prefix="mafka-bench-repl-"))
    data = work / "data.txt"
    with open(data, "wb") as f:
        line = b"m" * 99 + b"\n"
        for _ in range(args.messages):
            f.write(line)
    cluster = Cluster(work, {"min.insync.replicas": "2", "zookeeper.session.timeout.ms": "6000",
                             "replica.lag.time.max.ms": "10000"})
    try:
        rf1, rf3 = [], []
        for r in range(args.rounds):
            create_topic(cluster, f"rf1-{r}", 1)
            create_topic(cluster, f"rf3-{r}", 3)
            order = [("rf1", "1"), ("rf3", "all")] if r % 2 == 0 else [("rf3", "all"), ("rf1", "1")]
            for kind, acks in order:
                rate = kcat_produce(cluster, f"{kind}-{r}", acks, data, args.messages)
                (rf1 if kind == "rf1" else rf3).append(rate)
                print(f"round {r + 1}: {kind} acks={acks}: {rate:,.0f} msgs/s", flush=True)
        if rf1 and rf3:
            m1, m3 = statistics.median(rf1), statistics.median(rf3)
            print(f"produce RF1 acks=1 median {m1:,.0f} msgs/s; RF3 acks=all median {m3:,.0f} msgs/s; ratio {m3 / m1:.2f}")

        create_topic(cluster, "failover", 3)
        failover, windows = [], []
        recorders: list[AckRecorder] = []
        moved: list[float] = []
        for r in range(args.failovers):
            rec = AckRecorder(cluster.bootstrap, "failover")
            recorders.append(rec)
            time.sleep(2)
            leader = cluster.state("failover", 0)["leader"]
            t_kill = time.monotonic()
            cluster.kill(leader, signal.SIGKILL)
            wait_for(lambda leader=leader: cluster.state("failover", 0)["leader"] not in (-1, leader), 60, "a new leader")
            moved.append(time.monotonic() - t_kill)
            # Only a message sent after the kill is surely acknowledged by the successor.
            wait_for(lambda rec=rec, t_kill=t_kill: any(s > t_kill for s, _ in rec.acked_sent), 60, "an ack after the kill")
            first = min(a for s, a in rec.acked_sent if s > t_kill)
            failover.append(first - t_kill)
            print(f"failover {r + 1}: SIGKILL of leader {leader} -> new leader in ZooKeeper after {moved[-1]:.2f} s, "
                  f"first ack after {first - t_kill:.2f} s", flush=True)
            time.sleep(1)
            rec.stop()
            cluster.wait_exit(leader)
            cluster.restart(leader)
            wait_for(lambda: len(cluster.state("failover", 0)["isr"]) == 3, 60, "the ISR to recover")

            rec = AckRecorder(cluster.bootstrap, "failover")
            recorders.append(rec)
            time.sleep(2)
            leader = cluster.state("failover", 0)["leader"]
            t_term = time.monotonic()
            cluster.kill(leader, signal.SIGTERM)
            cluster.wait_exit(leader)
            time.sleep(2)
            rec.stop()
            around = [t for t in rec.acks if t_term - 1 <= t]
            gaps = [(b - a, a - t_term) for a, b in zip(around, around[1:], strict=False)]
            gap, at = max(gaps) if gaps else (float("inf"), 0.0)
            print(f"  (the longest gap starts {at * 1000:+.0f} ms after the SIGTERM; {rec.errors} delivery errors)")
            windows.append(gap)
            print(f"controlled shutdown {r + 1}: SIGTERM of leader {leader} -> longest gap between acks {gap * 1000:.0f} ms", flush=True)
            cluster.restart(leader)
            wait_for(lambda: len(cluster.state("failover", 0)["isr"]) == 3, 60, "the ISR to recover")
        # A leader frozen past its session: the fast path must not fire; its successor takes over at expiry.
        # (The client learns of it only when its request to the frozen broker times out: request.timeout.ms.)
        rec = AckRecorder(cluster.bootstrap, "failover", **{"request.timeout.ms": 8000, "socket.timeout.ms": 12000})
        recorders.append(rec)
        time.sleep(2)
        leader = cluster.state("failover", 0)["leader"]
        t_stop = time.monotonic()
        cluster.kill(leader, signal.SIGSTOP)
        wait_for(lambda: cluster.state("failover", 0)["leader"] not in (-1, leader), 60, "a leader after the SIGSTOP")
        frozen_moved = time.monotonic() - t_stop
        wait_for(lambda: any(s > t_stop for s, _ in rec.acked_sent), 120, "an ack after the SIGSTOP")
        frozen = min(a for s, a in rec.acked_sent if s > t_stop) - t_stop
        print(f"SIGSTOP of leader {leader} -> another leader after {frozen_moved:.2f} s, first ack after {frozen:.2f} s "
              "(zookeeper.session.timeout.ms=6000; the producer's request.timeout.ms=8000, socket.timeout.ms=12000)", flush=True)
        cluster.kill(leader, signal.SIGCONT)
        wait_for(lambda: len(cluster.state("failover", 0)["isr"]) == 3, 60, "the ISR to recover")
        rec.stop()
        acked = set().union(*(r.acked_values for r in recorders))
        read = consume_all(cluster.bootstrap, "failover")
        lost = acked - read
        print(f"failover: new leader in ZooKeeper, median {statistics.median(moved):.2f} s "
              f"{[round(x, 2) for x in moved]}; first ack, median {statistics.median(failover):.2f} s "
              f"{[round(x, 2) for x in failover]}")
        print(f"loss check: {len(acked):,} acknowledged, {len(lost)} not read back")
        print(f"controlled-shutdown no-ack window median {statistics.median(windows) * 1000:.0f} ms "
              f"{[round(x * 1000) for x in windows]}")
    except BaseException:
        print(f"failed; logs kept in {work}", file=sys.stderr)
        raise
    else:
        shutil.rmtree(work, ignore_errors=True)
    finally:
        cluster.stop()
    return 0


if __name__ == "__main__":
    sys.exit(main())
