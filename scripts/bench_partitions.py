"""Partition scale on one local 3-broker cluster (ZooKeeper + ``mafka cluster up``), RF 3.

    .venv/bin/python scripts/bench_partitions.py [--partitions 10000] [--partitions-per-topic 10]
                                                 [--keep] [--skip-failover]

A benchmark that prints figures (it asserts only phase 6's safety check).  With N partitions in topics of
``--partitions-per-topic`` each, replication factor 3, it measures, in order:

1. creation: CreateTopics with confluent-kafka's AdminClient, 100 topics a request, one request
   at a time (``operation_timeout=0``: the broker answers once the topics are in ZooKeeper), and
   the time from the first request until every partition state znode
   (``/brokers/topics/<t>/partitions/<p>/state``) names a leader and a full ISR, then until every
   broker's Metadata lists every partition (the brokers have applied it all);
2. idle cost per broker (after 30 s of settling, over 20 s): CPU % of one core
   (``/proc/<pid>/stat`` utime+stime), RSS (VmRSS) and open file descriptors;
3. Metadata for all topics: the median of 5 ``AdminClient.list_topics()`` calls (after one
   warm-up call), and the partition count they saw;
4. controlled shutdown of a broker that is not the controller (SIGTERM): the time until no
   partition state names it leader, until no ISR names it, and until its process exited; then
   it is restarted and the time until it is back in the ISR of every partition it has a
   replica of;
5. controller failover (unless ``--skip-failover``): the controller is SIGKILLed; the time until
   ``/controller`` names another live broker, and until every partition state names a live
   leader; then it is restarted and waited back into every ISR;
6. controller SIGKILL while creating (unless ``--skip-failover``): ``--create-failover-partitions``
   more partitions (default 10,000) are created and the controller is SIGKILLed when 40 % of the
   CreateTopics are answered; the topics refused meanwhile are created again, as an application
   would.  Checked (exit status 1 otherwise): every acknowledged topic is in ZooKeeper, every topic
   there is whole (all its partitions, each led by a live broker: no half-created topic); the time
   from the SIGKILL until they are all led is printed.

ZooKeeper is read with kazoo's async API (every znode's ``get_async`` first, then the results),
and once a partition meets a condition it is not read again, so the polling keeps up.  Times are
taken when the poll that saw the condition met returned (a poll's length is its resolution; it
is printed).

A broker may hold 3 file descriptors per partition replica: this process raises its
RLIMIT_NOFILE soft limit to the hard limit before starting the cluster (the brokers inherit it)
and warns when N plainly needs more.  The cluster runs in a fresh directory under /tmp, removed at
the end unless ``--keep`` (or a phase failed or timed out: then the exit status is 1), and is
always stopped.  ``--chart PATH.png`` also draws the summary's figures: the durations as lying
bars, and each broker's idle CPU, RSS and open files.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import resource
import shutil
import signal
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Iterable
from datetime import datetime
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(HERE))

from bench_chart import Panel, add_chart_argument, draw  # noqa: E402

from tests.harness.cluster import LocalCluster  # noqa: E402
from tests.harness.waits import process_state  # noqa: E402

RF = 3
BROKERS = 3
TOPICS_PER_REQUEST = 100
#: file descriptors a broker holds per partition replica today (log, index, time index), and
#: besides its partitions (sockets, ZooKeeper, the Python runtime)
FDS_PER_REPLICA = 3
FDS_BASE = 300
#: what a scale test needs beside `mafka cluster up`'s own defaults (which already set
#: zookeeper.session.timeout.ms=6000, as the integration tests use): no leader movement the
#: benchmark did not cause (the auto rebalance check would otherwise fire at a random moment),
#: and a small __consumer_offsets should anything create it
SETTINGS = {
    "zookeeper.session.timeout.ms": "6000",
    "auto.leader.rebalance.enable": "false",
    "offsets.topic.num.partitions": "4",
}
IDLE_SETTLE_S = 30.0
IDLE_SAMPLE_S = 20.0
METADATA_CALLS = 5

Key = tuple[str, int]


def say(line: str = "") -> None:
    print(line, flush=True)


class PhaseFailed(Exception):
    """A phase cannot go on (a broker died that should not have, ...): the remaining phases are skipped."""


# ------------------------------------------------------------------ /proc


def alive(pid: int) -> bool:
    return process_state(pid) not in (None, "Z", "X")


def cpu_seconds(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
    except (FileNotFoundError, ProcessLookupError):
        return None
    # after the ")": state is field 3, so utime (14) and stime (15) are at 11 and 12
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def rss_mb(pid: int) -> float | None:
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1]) / 1024
    except (FileNotFoundError, ProcessLookupError):
        return None
    return None


def open_fds(pid: int) -> int | None:
    try:
        return len(os.listdir(f"/proc/{pid}/fd"))
    except (FileNotFoundError, ProcessLookupError, PermissionError):
        return None


def raise_fd_limit() -> int:
    """Raises RLIMIT_NOFILE's soft limit to the hard one (children inherit it); returns the limit now."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    target = hard
    if hard == resource.RLIM_INFINITY:
        try:
            target = int(Path("/proc/sys/fs/nr_open").read_text())
        except (OSError, ValueError):
            target = 1 << 20
    if target > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
        except (ValueError, OSError) as e:
            say(f"could not raise RLIMIT_NOFILE from {soft} to {target}: {e}")
    return resource.getrlimit(resource.RLIMIT_NOFILE)[0]


# ------------------------------------------------------------------ ZooKeeper


class Cluster(LocalCluster):
    """:class:`LocalCluster` plus a kazoo client and bulk reads of partition state znodes."""

    def __init__(self, work: Path, settings: dict[str, str]) -> None:
        super().__init__(work / "cluster", brokers=BROKERS, settings=settings)
        self.zk: Any = None

    def start_all(self, timeout: float) -> None:
        from kazoo.client import KazooClient

        self.start(timeout=timeout)
        self.zk = KazooClient(f"127.0.0.1:{self.zookeeper_port}", timeout=30)
        self.zk.start(timeout=30)

    def stop(self) -> None:
        if self.zk is not None:
            try:
                self.zk.stop()
                self.zk.close()
            except Exception:  # noqa: BLE001 - best effort at teardown
                pass
        super().stop()

    @property
    def ids(self) -> list[int]:
        return [b["id"] for b in self.info["brokers"]]

    def pid(self, broker_id: int) -> int:
        return self.broker(broker_id)["pid"]

    def states(self, keys: Iterable[Key]) -> dict[Key, dict | None]:
        """The state znode of every partition in *keys* (None: no such znode yet), read in bulk."""
        from kazoo.exceptions import NoNodeError

        pending = [(k, self.zk.get_async(f"/brokers/topics/{k[0]}/partitions/{k[1]}/state")) for k in keys]
        out: dict[Key, dict | None] = {}
        for k, result in pending:
            try:
                out[k] = json.loads(result.get(timeout=120)[0])
            except NoNodeError:
                out[k] = None
        return out

    def assignment(self) -> dict[Key, list[int]]:
        """Every partition in ZooKeeper (any topic) → its replicas, from the ``/brokers/topics/<t>`` znodes."""
        from kazoo.exceptions import NoNodeError

        topics = self.zk.get_children("/brokers/topics")
        pending = [(t, self.zk.get_async(f"/brokers/topics/{t}")) for t in topics]
        out: dict[Key, list[int]] = {}
        for t, result in pending:
            try:
                data = json.loads(result.get(timeout=120)[0])
            except NoNodeError:
                continue
            for p, replicas in data.get("partitions", {}).items():
                out[(t, int(p))] = list(replicas)
        return out

    def controller(self) -> int | None:
        from kazoo.exceptions import NoNodeError

        try:
            return int(json.loads(self.zk.get("/controller")[0])["brokerid"])
        except NoNodeError:
            return None

    def server_log(self, broker_id: int) -> Path:
        return Path(self.broker(broker_id)["log_file"])


def log_tail(path: Path, lines: int = 15) -> str:
    try:
        return "\n".join("    " + line for line in path.read_text(errors="replace").splitlines()[-lines:])
    except OSError as e:
        return f"    ({e})"


class Waiter:
    """Polls partition states until a condition holds for all of them, watching the brokers meant to be alive."""

    def __init__(self, cluster: Cluster) -> None:
        self.cluster = cluster

    def check_alive(self, expected: Iterable[int]) -> None:
        for b in expected:
            if not alive(self.cluster.pid(b)):
                raise PhaseFailed(f"broker {b} (pid {self.cluster.pid(b)}) died; the end of its server.log:\n"
                                  + log_tail(self.cluster.server_log(b)))

    def partitions(self, keys: Iterable[Key], ok: Callable[[dict | None], bool], start: float, timeout: float,
                   what: str, expected_alive: Iterable[int], interval: float = 0.05) -> float | None:
        """Seconds from *start* until ``ok(state)`` held for every partition in *keys*; None on timeout.

        A partition that met the condition is not read again.
        """
        expected = list(expected_alive)
        pending = set(keys)
        total = len(pending)
        last_report = time.monotonic()
        poll = 0.0
        while True:
            t0 = time.monotonic()
            states = self.cluster.states(pending)
            now = time.monotonic()
            poll = now - t0
            pending = {k for k in pending if not ok(states[k])}
            if not pending:
                say(f"    ({what}: last poll took {poll * 1000:.0f} ms)")
                return now - start
            if now - start > timeout:
                sample = sorted(pending)[:3]
                say(f"  TIMEOUT after {timeout:.0f} s waiting for {what}: {len(pending):,} of {total:,} "
                    f"partitions not there yet, e.g. " + "; ".join(f"{t}/{p}: {states[(t, p)]}" for t, p in sample))
                return None
            if now - last_report > 30:
                say(f"    ... still waiting for {what}: {len(pending):,} of {total:,} partitions pending "
                    f"({now - start:.0f} s; a poll takes {poll * 1000:.0f} ms)")
                last_report = now
            self.check_alive(expected)
            time.sleep(interval)

    def until(self, predicate: Callable[[], bool], start: float, timeout: float, what: str,
              interval: float = 0.02) -> float | None:
        while True:
            if predicate():
                return time.monotonic() - start
            if time.monotonic() - start > timeout:
                say(f"  TIMEOUT after {timeout:.0f} s waiting for {what}")
                return None
            time.sleep(interval)


# ------------------------------------------------------------------ phases


def fmt_s(value: float | None, timeout: float | None = None) -> str:
    if value is None:
        return f"timed out (> {timeout:.0f} s)" if timeout is not None else "not measured"
    return f"{value:.2f} s"


def topic_plan(partitions: int, per_topic: int) -> list[tuple[str, int]]:
    plan, left, i = [], partitions, 0
    while left > 0:
        n = min(per_topic, left)
        plan.append((f"bench-{i:05d}", n))
        left -= n
        i += 1
    return plan


def full(state: dict | None, replicas: int = RF) -> bool:
    return state is not None and state.get("leader", -1) >= 0 and len(state.get("isr", [])) >= replicas


def create(cluster: Cluster, waiter: Waiter, plan: list[tuple[str, int]], timeout: float,
           results: dict[str, Any]) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    n = sum(p for _, p in plan)
    say(f"== 1. creation: {len(plan):,} topics, {n:,} partitions, RF {RF}, "
        f"{TOPICS_PER_REQUEST} topics per CreateTopics request")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap, "socket.timeout.ms": 300000})
    errors: list[str] = []
    results["create_timeout"] = timeout
    start = time.monotonic()
    for i in range(0, len(plan), TOPICS_PER_REQUEST):
        batch = [NewTopic(t, p, RF) for t, p in plan[i:i + TOPICS_PER_REQUEST]]
        t0 = time.monotonic()
        futures = admin.create_topics(batch, operation_timeout=0, request_timeout=300)
        for topic, fut in futures.items():
            try:
                fut.result()
            except Exception as e:  # noqa: BLE001 - counted and shown
                errors.append(f"{topic}: {e}")
        took = time.monotonic() - t0
        if took > 10:
            say(f"    (CreateTopics of topics {i}..{i + len(batch) - 1} took {took:.1f} s)")
        waiter.check_alive(cluster.ids)
        if time.monotonic() - start > timeout:
            say(f"  TIMEOUT after {timeout:.0f} s sending CreateTopics ({i + len(batch)} of {len(plan)} topics sent)")
            results["create_acked"] = None
            return
    acked = time.monotonic() - start
    results["create_acked"] = acked
    say(f"create: every CreateTopics answered after {acked:.2f} s ({n / acked:,.0f} partitions/s)")
    if errors:
        say(f"  {len(errors)} topic(s) failed to be created, e.g. " + "; ".join(errors[:3]))
    keys = [(t, p) for t, count in plan for p in range(count)]
    done = waiter.partitions(keys, full, start, timeout, "every partition to have a leader and a full ISR",
                             cluster.ids)
    results["create_ready"] = done
    if done is not None:
        say(f"create: every partition has a leader and a full ISR after {done:.2f} s ({n / done:,.0f} partitions/s)")
    # ZooKeeper has it all once the controller wrote it; the brokers apply LeaderAndIsr and
    # UpdateMetadata after that. Created, for a client, is every broker answering with every partition.
    visible = None
    while time.monotonic() - start < timeout:
        seen = []
        for b in cluster.info["brokers"]:
            one = AdminClient({"bootstrap.servers": f"{b['host']}:{b['port']}"})
            try:
                md = one.list_topics(timeout=60)
                seen.append(sum(len(t.partitions) for name, t in md.topics.items() if not name.startswith("__")))
            except Exception:  # noqa: BLE001 - a busy broker: ask again
                seen.append(-1)
        if all(x >= n for x in seen):
            visible = time.monotonic() - start
            break
        time.sleep(1.0)
    results["create_visible"] = visible
    if visible is not None:
        say(f"create: every broker's Metadata lists all {n:,} partitions after {visible:.2f} s "
            f"({n / visible:,.0f} partitions/s)")


def idle(cluster: Cluster, fd_limit: int, results: dict[str, Any]) -> None:
    say(f"== 2. idle cost: settling {IDLE_SETTLE_S:.0f} s, then sampling {IDLE_SAMPLE_S:.0f} s")
    time.sleep(IDLE_SETTLE_S)
    pids = {b: cluster.pid(b) for b in cluster.ids}
    zk_pid = cluster.info.get("zookeeper", {}).get("pid")
    if zk_pid is not None:
        pids["zookeeper"] = zk_pid
    before = {k: cpu_seconds(pid) for k, pid in pids.items()}
    t0 = time.monotonic()
    time.sleep(IDLE_SAMPLE_S)
    wall = time.monotonic() - t0
    after = {k: cpu_seconds(pid) for k, pid in pids.items()}
    per_broker: dict[Any, dict[str, float | int | None]] = {}
    for k, pid in pids.items():
        b, a = before[k], after[k]
        cpu = None if a is None or b is None else (a - b) / wall * 100
        row = {"cpu": cpu, "rss": rss_mb(pid), "fds": open_fds(pid)}
        per_broker[k] = row
        name = f"broker {k}" if k != "zookeeper" else "zookeeper (JVM)"
        cpu_s = "gone" if cpu is None else f"{cpu:.1f} % of a core"
        rss_s = "?" if row["rss"] is None else f"{row['rss']:,.0f} MB"
        fds = "?" if row["fds"] is None else f"{row['fds']:,} open fds ({row['fds'] / fd_limit:.0%} of the limit)"
        say(f"idle {name}: CPU {cpu_s}, RSS {rss_s}, {fds}")
    results["idle"] = per_broker


def scrapes(cluster: Cluster, results: dict[str, Any]) -> None:
    """Phase 3b: each broker's /metrics, scraped METADATA_CALLS times one after another, under the reactor probe."""
    import urllib.request

    urls = [b["metrics"] for b in cluster.info["brokers"] if "metrics" in b]
    if not urls:
        return
    say(f"== 3b. /metrics: {METADATA_CALLS} scrapes of each broker, one at a time")
    addresses = [(b["host"], b["port"]) for b in cluster.info["brokers"]]
    times, sizes, steps = [], [], []
    started = time.monotonic()
    with ReactorProbe(addresses) as probe:
        for _ in range(METADATA_CALLS):
            for url in urls:
                t0 = time.monotonic()
                body = urllib.request.urlopen(url, timeout=60).read()
                times.append(time.monotonic() - t0)
                sizes.append(len(body))
                for name, ms in re.findall(rb'^mafka_metrics_snapshot_longest_step_ms\{step="(\w+)"\} (\S+)$', body, re.M):
                    steps.append((name.decode(), float(ms)))
    took = time.monotonic() - started
    # The same length of time without scrapes: the broker's own periodic passes block the reactor too
    with ReactorProbe(addresses) as quiet:
        time.sleep(took)
    med = statistics.median(times)
    by_step: dict[str, float] = {}
    for name, ms in steps:
        by_step[name] = max(by_step.get(name, 0.0), ms)
    step_text = ", ".join(f"{name} {ms:.1f} ms" for name, ms in sorted(by_step.items())) or "?"
    results["scrape"] = (med, max(times), statistics.median(sizes), probe.worst_ms(), quiet.worst_ms(), step_text)
    say(f"scrape: median {med * 1000:.0f} ms, longest {max(times) * 1000:.0f} ms, {statistics.median(sizes) / 1e6:.1f} MB "
        f"of text; the longest ApiVersions round trip on any broker meanwhile {probe.worst_ms():.0f} ms "
        f"(per broker {probe.describe()}); over as long without scrapes {quiet.worst_ms():.0f} ms; the longest "
        f"reactor turn of a scrape's snapshot, per step (the brokers' own measure): {step_text}")


def metadata(cluster: Cluster, results: dict[str, Any]) -> None:
    from confluent_kafka.admin import AdminClient

    say(f"== 3. Metadata for all topics: median of {METADATA_CALLS} list_topics() calls after a warm-up one")
    admin = AdminClient({"bootstrap.servers": cluster.bootstrap})
    admin.list_topics(timeout=120)
    addresses = [(b["host"], b["port"]) for b in cluster.info["brokers"]]
    with ReactorProbe(addresses) as quiet:
        time.sleep(3.0)
    times, topics, partitions = [], 0, 0
    with ReactorProbe(addresses) as probe:
        for _ in range(METADATA_CALLS):
            t0 = time.monotonic()
            md = admin.list_topics(timeout=120)
            times.append(time.monotonic() - t0)
            topics = len(md.topics)
            partitions = sum(len(t.partitions) for t in md.topics.values())
    med = statistics.median(times)
    results["metadata"] = (med, topics, partitions)
    results["metadata_blocking"] = (probe.worst_ms(), quiet.worst_ms())
    say(f"metadata: all-topics list_topics median {med * 1000:.0f} ms "
        f"({', '.join(f'{t * 1000:.0f}' for t in times)} ms), {topics:,} topics, {partitions:,} partitions seen")
    say(f"metadata: the longest ApiVersions round trip on any broker while they ran {probe.worst_ms():.0f} ms "
        f"(per broker {probe.describe()}); over 3 s before them {quiet.worst_ms():.0f} ms")


class ReactorProbe:
    """Measures how long a broker's reactor is blocked: ApiVersions v0 every 20 ms to each broker, on
    its own connection and thread; the longest round trip bounds the longest block while it ran.

    The probes run in a process of their own: in this one, the client under test (confluent-kafka
    building Python objects for 100,000 partitions) holds the GIL for most of a second, and a probe
    thread here measured that, not the broker."""

    def __init__(self, addresses: list[tuple[str, int]], every_s: float = 0.02) -> None:
        import multiprocessing

        self._addresses = addresses
        ctx = multiprocessing.get_context("spawn")  # no fork of a process running librdkafka's threads
        self._conn, child = ctx.Pipe()
        self._process = ctx.Process(target=_probe_process, args=(addresses, every_s, child), daemon=True)
        self.worst: dict[tuple[str, int], float] = {a: 0.0 for a in addresses}

    def __enter__(self) -> ReactorProbe:
        self._process.start()
        if not self._conn.poll(60) or self._conn.recv() != "ready":
            raise RuntimeError("the reactor probe did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self._conn.send("stop")
        if self._conn.poll(60):
            self.worst.update(self._conn.recv())
        self._process.join(timeout=30)

    def worst_ms(self) -> float:
        return max(self.worst.values()) * 1000

    def describe(self) -> str:
        return ", ".join(f"{port}: {w * 1000:.0f} ms" for (_, port), w in self.worst.items())


def _probe_process(addresses: list[tuple[str, int]], every_s: float, conn: Any) -> None:
    """The probe process: a thread per broker until told to stop; sends back the worst round trips."""
    import threading

    stop = threading.Event()
    worst: dict[tuple[str, int], float] = {tuple(a): 0.0 for a in addresses}  # type: ignore[misc]
    connected = threading.Barrier(len(addresses) + 1)

    def run(address: tuple[str, int]) -> None:
        import socket
        import struct

        client_id = b"reactor-probe"
        with socket.create_connection(address, timeout=60) as sock:
            connected.wait()
            correlation = 0
            while not stop.is_set():
                correlation += 1
                body = struct.pack(">hhih", 18, 0, correlation, len(client_id)) + client_id
                t0 = time.monotonic()
                sock.sendall(struct.pack(">i", len(body)) + body)
                size = struct.unpack(">i", _read_exactly(sock, 4))[0]
                _read_exactly(sock, size)
                worst[address] = max(worst[address], time.monotonic() - t0)
                stop.wait(every_s)

    threads = [threading.Thread(target=run, args=(tuple(a),), daemon=True) for a in addresses]
    for t in threads:
        t.start()
    connected.wait(timeout=60)
    conn.send("ready")
    conn.recv()
    stop.set()
    for t in threads:
        t.join(timeout=30)
    conn.send(worst)


def _read_exactly(sock: Any, n: int) -> bytes:
    chunks, left = [], n
    while left:
        chunk = sock.recv(left)
        if not chunk:
            raise ConnectionError("the broker closed the probe's connection")
        chunks.append(chunk)
        left -= len(chunk)
    return b"".join(chunks)


def rejoin(cluster: Cluster, waiter: Waiter, broker_id: int, timeout: float, key: str, label: str,
           results: dict[str, Any]) -> None:
    """Restarts *broker_id* and waits until it is in the ISR of every partition it has a replica of."""
    assignment = cluster.assignment()
    keys = [k for k, replicas in assignment.items() if broker_id in replicas]
    t0 = time.monotonic()
    cluster.restart(broker_id)
    took = waiter.partitions(keys, lambda s: s is not None and broker_id in s.get("isr", []), t0, timeout,
                             f"broker {broker_id} back in the ISR of its {len(keys):,} partitions", cluster.ids)
    results[f"{key}_rejoin"] = took
    say(f"{label}: restarted broker {broker_id} back in every ISR after {fmt_s(took, timeout)}")


#: the broker's own log lines of a graceful stop (mafka.broker.server, the log manager)
SHUTDOWN_STEPS = ("shutting down broker", "controlled shutdown", "controller requests still queued",
                  "shutdown complete", "stopped")


def shutdown_steps(server_log: Path, offset: int) -> None:
    """Where a graceful stop spent its time, from the broker's server.log after *offset* (best effort)."""
    try:
        with open(server_log, "rb") as f:
            f.seek(offset)
            text = f.read().decode(errors="replace")
    except OSError:
        return
    steps = []
    for line in text.splitlines():
        m = re.match(r"\[(\d{4}-\d\d-\d\d \d\d:\d\d:\d\d,\d{3})\] \w+ ([\w.]+): (.*)", line)
        if m and any(step in m.group(3) for step in SHUTDOWN_STEPS):
            at = datetime.strptime(m.group(1), "%Y-%m-%d %H:%M:%S,%f")
            steps.append((at, f"{m.group(2)}: {m.group(3)[:100]}"))
        if m and "starting broker" in m.group(3):
            break
    if steps:
        first = steps[0][0]
        say("    its server.log: " + "; ".join(f"+{(at - first).total_seconds():.1f} s {what}" for at, what in steps[:8]))


def controlled_shutdown(cluster: Cluster, waiter: Waiter, timeout: float, results: dict[str, Any]) -> None:
    controller = cluster.controller()
    victim = max(b for b in cluster.ids if b != controller)
    assignment = cluster.assignment()
    states = cluster.states(assignment)
    led = [k for k, s in states.items() if s is not None and s.get("leader") == victim]
    say(f"== 4. controlled shutdown: SIGTERM to broker {victim} (controller is {controller}); "
        f"it leads {len(led):,} of {len(assignment):,} partitions")
    results["cs_broker"], results["cs_led"] = victim, len(led)
    pid = cluster.pid(victim)
    others = [b for b in cluster.ids if b != victim]
    log_size = cluster.server_log(victim).stat().st_size
    t0 = time.monotonic()
    cluster.kill(victim, signal.SIGTERM)
    moved = waiter.partitions(led, lambda s: s is not None and s.get("leader") != victim, t0, timeout,
                              f"no partition led by broker {victim}", others)
    say(f"controlled shutdown: leadership off broker {victim} after {fmt_s(moved, timeout)}")
    # Kafka's controlled shutdown also takes the broker out of the ISR of the partitions it
    # follows before it answers, which can take longer than moving the leadership
    replica_of = [k for k, replicas in assignment.items() if victim in replicas]
    out_of_isr = waiter.partitions(replica_of, lambda s: s is not None and victim not in s.get("isr", []), t0,
                                   timeout, f"broker {victim} out of every ISR", others)
    say(f"controlled shutdown: broker {victim} out of the ISR of its {len(replica_of):,} partitions after "
        f"{fmt_s(out_of_isr, timeout)}")
    exited = waiter.until(lambda: not alive(pid), t0, timeout, f"broker {victim} to exit")
    results["cs_moved"], results["cs_isr"], results["cs_exited"], results["cs_timeout"] = (
        moved, out_of_isr, exited, timeout)
    say(f"controlled shutdown: process exited after {fmt_s(exited, timeout)} from the SIGTERM")
    shutdown_steps(cluster.server_log(victim), log_size)
    if exited is None:
        say(f"  broker {victim} did not exit: SIGKILL")
        cluster.kill(victim, signal.SIGKILL)
        waiter.until(lambda: not alive(pid), time.monotonic(), 30, f"broker {victim} to exit after SIGKILL")
    rejoin(cluster, waiter, victim, timeout, "cs", "controlled shutdown", results)


def failover(cluster: Cluster, waiter: Waiter, timeout: float, results: dict[str, Any]) -> None:
    controller = cluster.controller()
    if controller is None:
        raise PhaseFailed("no /controller znode before the failover")
    assignment = cluster.assignment()
    states = cluster.states(assignment)
    led = [k for k, s in states.items() if s is not None and s.get("leader") == controller]
    live = [b for b in cluster.ids if b != controller]
    say(f"== 5. controller failover: SIGKILL to the controller, broker {controller}; "
        f"it leads {len(led):,} of {len(assignment):,} partitions")
    results["fo_broker"], results["fo_led"] = controller, len(led)
    pid = cluster.pid(controller)
    t0 = time.monotonic()
    cluster.kill(controller, signal.SIGKILL)

    def new_controller() -> bool:
        now = cluster.controller()
        return now is not None and now != controller and now in live and alive(cluster.pid(now))

    elected = waiter.until(new_controller, t0, timeout, "/controller to name a live broker other than "
                           f"{controller}")
    successor = cluster.controller()
    say(f"failover: /controller names broker {successor} after {fmt_s(elected, timeout)} "
        f"(includes ZooKeeper noticing the dead session, zookeeper.session.timeout.ms="
        f"{SETTINGS['zookeeper.session.timeout.ms']})")
    leaders = waiter.partitions(
        led, lambda s: s is not None and s.get("leader", -1) >= 0 and s.get("leader") in live, t0, timeout,
        f"every partition led by a live broker (not {controller})", live)
    results["fo_elected"], results["fo_leaders"], results["fo_timeout"] = elected, leaders, timeout
    say(f"failover: every partition has a live leader after {fmt_s(leaders, timeout)} from the SIGKILL")
    waiter.until(lambda: not alive(pid), time.monotonic(), 30, f"broker {controller} to be reaped")
    rejoin(cluster, waiter, controller, timeout, "fo", "failover", results)


def failover_while_creating(cluster: Cluster, waiter: Waiter, plan: list[tuple[str, int]], timeout: float,
                            results: dict[str, Any]) -> None:
    """Creates *plan*'s topics and SIGKILLs the controller when 40 % of the CreateTopics are answered.

    A check, not only a figure: afterwards every topic acknowledged to the client must be in
    ZooKeeper, and every topic in ZooKeeper (acknowledged or not) must be whole: its planned
    partition count, each partition with a state naming a live leader (no half-created topic,
    no partition without a leader).  A failure raises :class:`PhaseFailed`.
    """
    import threading

    from confluent_kafka.admin import AdminClient, NewTopic

    n = sum(p for _, p in plan)
    controller = cluster.controller()
    live = [b for b in cluster.ids if b != controller]
    say(f"== 6. controller SIGKILL while creating: {len(plan):,} more topics, {n:,} partitions; "
        f"the controller, broker {controller}, is killed when 40 % of the CreateTopics are answered")
    admin = AdminClient({"bootstrap.servers": ",".join(f"{b['host']}:{b['port']}" for b in cluster.info["brokers"]
                                                       if b["id"] != controller),
                         "socket.timeout.ms": 60000})
    acked: list[str] = []
    refused: list[str] = []
    requests = (len(plan) + TOPICS_PER_REQUEST - 1) // TOPICS_PER_REQUEST
    half_way = threading.Event()
    start = time.monotonic()

    def send() -> None:
        for r, i in enumerate(range(0, len(plan), TOPICS_PER_REQUEST)):
            batch = [NewTopic(t, p, RF) for t, p in plan[i:i + TOPICS_PER_REQUEST]]
            for topic, fut in admin.create_topics(batch, operation_timeout=0, request_timeout=60).items():
                try:
                    fut.result()
                    acked.append(topic)
                except Exception as e:  # noqa: BLE001 - a create the failover refused: the client's to retry
                    refused.append(f"{topic}: {e}")
            if r + 1 >= 0.4 * requests:
                half_way.set()
        half_way.set()

    sender = threading.Thread(target=send, daemon=True)
    sender.start()
    if not half_way.wait(timeout):
        raise PhaseFailed("the creation did not reach 40 % before the phase timeout")
    t_kill = time.monotonic()
    cluster.kill(controller, signal.SIGKILL)
    say(f"while creating: controller {controller} SIGKILLed after {t_kill - start:.1f} s "
        f"({len(acked):,} topics acknowledged)")
    sender.join(timeout)
    if sender.is_alive():
        raise PhaseFailed("CreateTopics requests still unanswered at the phase timeout")
    say(f"while creating: every CreateTopics answered after {time.monotonic() - start:.1f} s: "
        f"{len(acked):,} topics acknowledged, {len(refused):,} refused"
        + (f" (e.g. {refused[0]})" if refused else ""))
    planned = dict(plan)

    def whole_in_zookeeper(expected: list[str]) -> list[str]:
        """The planned topics in ZooKeeper; PhaseFailed if one of *expected* is missing or one is partial."""
        in_zk = [t for t in cluster.zk.get_children("/brokers/topics") if t in planned]
        lost = sorted(set(expected) - set(in_zk))
        if lost:
            raise PhaseFailed(f"{len(lost)} acknowledged topic(s) are not in ZooKeeper, e.g. {lost[:3]}")
        assignment = cluster.assignment()
        partial = [t for t in in_zk if sorted(p for (tt, p) in assignment if tt == t) != list(range(planned[t]))]
        if partial:
            raise PhaseFailed(f"{len(partial)} topic(s) in ZooKeeper without their {planned[partial[0]]} partitions, "
                              f"e.g. {partial[:3]}")
        return in_zk

    in_zk = whole_in_zookeeper(acked)
    keys = [(t, p) for t in in_zk for p in range(planned[t])]
    led = waiter.partitions(keys, lambda st: st is not None and st.get("leader", -1) in live, t_kill, timeout,
                            f"every partition of the {len(in_zk):,} topics in ZooKeeper led by a live broker", live)
    results["cc_topics"], results["cc_acked"], results["cc_refused"] = len(in_zk), len(acked), len(refused)
    results["cc_led"], results["cc_timeout"], results["cc_broker"] = led, timeout, controller
    if led is None:
        raise PhaseFailed("a partition created around the controller's death has no live leader")
    say(f"while creating: all {len(keys):,} partitions of the {len(in_zk):,} topics in ZooKeeper "
        f"({len(acked):,} acknowledged) have a live leader {led:.2f} s after the SIGKILL; none is half-created")
    waiter.until(lambda: not alive(cluster.pid(controller)), time.monotonic(), 30, f"broker {controller} to be reaped")
    # Back to three brokers first: a topic of RF 3 cannot be created on two (Kafka refuses it too).
    rejoin(cluster, waiter, controller, timeout, "cc", "while creating", results)
    if refused:
        # What an application does: create the refused ones again (TOPIC_ALREADY_EXISTS: the
        # controller had it), with a new client (librdkafka's admin client kept the dead
        # controller's address until its request timeout).
        retry = AdminClient({"bootstrap.servers": cluster.bootstrap})
        names = [r.split(":", 1)[0] for r in refused]
        again = 0
        for i in range(0, len(names), TOPICS_PER_REQUEST):
            batch = [NewTopic(t, planned[t], RF) for t in names[i:i + TOPICS_PER_REQUEST]]
            for topic, fut in retry.create_topics(batch, operation_timeout=0, request_timeout=120).items():
                try:
                    fut.result()
                    acked.append(topic)
                    again += 1
                except Exception as e:  # noqa: BLE001 - TOPIC_ALREADY_EXISTS is a success here
                    if "TOPIC_ALREADY_EXISTS" in str(e) or "already exists" in str(e):
                        acked.append(topic)
                        again += 1
                    else:
                        raise PhaseFailed(f"creating {topic} again failed: {e}") from e
        whole_in_zookeeper(acked)
        say(f"while creating: the {len(names):,} refused topics created again ({again:,} acknowledged or "
            f"already there) after {time.monotonic() - start:.1f} s; every topic in ZooKeeper whole")
        results["cc_retried"] = len(names)


# ------------------------------------------------------------------ the report


def summary(args: argparse.Namespace, plan: list[tuple[str, int]], fd_limit: int, results: dict[str, Any]) -> None:
    n = sum(p for _, p in plan)
    rows: list[tuple[str, str]] = []

    def per_broker(metric: str, fmt: Callable[[Any], str]) -> str:
        idle_rows = results.get("idle", {})
        return ", ".join(f"{k}: {fmt(v[metric]) if v.get(metric) is not None else '?'}"
                         for k, v in idle_rows.items() if k != "zookeeper") or "not measured"

    rows.append(("partitions (RF 3, 3 brokers)", f"{n:,} in {len(plan):,} topics of {args.partitions_per_topic}"))
    rows.append(("RLIMIT_NOFILE of the brokers", f"{fd_limit:,}"))
    if "create_acked" in results:
        rows.append(("create: all CreateTopics answered", fmt_s(results["create_acked"], results["create_timeout"])))
    if "create_ready" in results:
        ready = results["create_ready"]
        rate = f" ({n / ready:,.0f} partitions/s)" if ready else ""
        rows.append(("create: every leader + full ISR", fmt_s(ready, results["create_timeout"]) + rate))
        visible = results.get("create_visible")
        rows.append(("create: every broker's Metadata lists every partition",
                     fmt_s(visible, results["create_timeout"])
                     + ("" if not visible else f" ({n / visible:,.0f} partitions/s)")))
    if "idle" in results:
        rows.append(("idle CPU per broker", per_broker("cpu", lambda v: f"{v:.1f} %")))
        rows.append(("idle RSS per broker", per_broker("rss", lambda v: f"{v:,.0f} MB")))
        rows.append(("open fds per broker", per_broker("fds", lambda v: f"{v:,}")))
        zk = results["idle"].get("zookeeper")
        if zk:
            rows.append(("ZooKeeper idle CPU / RSS",
                         f"{zk['cpu']:.1f} % / {zk['rss']:,.0f} MB" if zk["cpu"] is not None and zk["rss"] else "?"))
    if "metadata" in results:
        med, topics, parts = results["metadata"]
        rows.append(("Metadata, all topics (median of 5)", f"{med * 1000:.0f} ms ({topics:,} topics, {parts:,} partitions)"))
        during, before = results["metadata_blocking"]
        rows.append(("longest ApiVersions round trip during them (3 s before them)", f"{during:.0f} ms ({before:.0f} ms)"))
    if "scrape" in results:
        med, longest, size, during, quiet, step = results["scrape"]
        rows.append(("/metrics scrape: median / longest / size", f"{med * 1000:.0f} ms / {longest * 1000:.0f} ms / "
                                                                 f"{size / 1e6:.1f} MB"))
        rows.append(("longest ApiVersions round trip during scrapes (as long without)", f"{during:.0f} ms ({quiet:.0f} ms)"))
        rows.append(("longest reactor turn of a scrape, per step (the brokers' own measure)", step))
    if "cs_moved" in results:
        rows.append((f"controlled shutdown: leaders off ({results['cs_led']:,} partitions)",
                     fmt_s(results["cs_moved"], results["cs_timeout"])))
        rows.append(("controlled shutdown: out of every ISR", fmt_s(results["cs_isr"], results["cs_timeout"])))
        rows.append(("controlled shutdown: process exited", fmt_s(results["cs_exited"], results["cs_timeout"])))
    if "cs_rejoin" in results:
        rows.append((f"broker {results['cs_broker']} restarted: back in every ISR",
                     fmt_s(results["cs_rejoin"], results["cs_timeout"])))
    if "fo_elected" in results:
        rows.append(("controller SIGKILL: new /controller", fmt_s(results["fo_elected"], results["fo_timeout"])))
        rows.append((f"controller SIGKILL: live leaders ({results['fo_led']:,} partitions)",
                     fmt_s(results["fo_leaders"], results["fo_timeout"])))
    if "cc_led" in results:
        rows.append((f"controller SIGKILL while creating: topics in ZooKeeper, all whole "
                     f"({results['cc_refused']:,} refused at first, created again)",
                     f"{results['cc_topics']:,}"))
        rows.append(("controller SIGKILL while creating: every partition led by a live broker",
                     fmt_s(results["cc_led"], results["cc_timeout"])))
    if "fo_rejoin" in results:
        rows.append((f"broker {results['fo_broker']} restarted: back in every ISR",
                     fmt_s(results["fo_rejoin"], results["fo_timeout"])))
    say()
    say(f"## Partition scale: {n:,} partitions, RF 3, 3 brokers ({os.cpu_count()} cores)")
    say()
    say("| figure | value |")
    say("|---|---|")
    for name, value in rows:
        say(f"| {name} | {value} |")


#: The summary's durations, in its order: results key → what it measures.
DURATIONS = [
    ("create_acked", "create: all CreateTopics answered"),
    ("create_ready", "create: every leader + full ISR"),
    ("create_visible", "create: every broker's Metadata lists every partition"),
    ("cs_moved", "controlled shutdown: leaders off"),
    ("cs_isr", "controlled shutdown: out of every ISR"),
    ("cs_exited", "controlled shutdown: process exited"),
    ("cs_rejoin", "controlled shutdown: restarted broker back in every ISR"),
    ("fo_elected", "controller SIGKILL: new /controller"),
    ("fo_leaders", "controller SIGKILL: every partition led by a live broker"),
    ("cc_led", "controller SIGKILL while creating: every partition led"),
    ("fo_rejoin", "controller SIGKILL: restarted broker back in every ISR"),
]


def chart(path: Path, title: str, results: dict[str, Any]) -> Path:
    """The summary's figures as bars: the durations measured (a timed-out one has no bar), idle cost per process."""
    measured = [(key, label) for key, label in DURATIONS if key in results]
    panels = []
    if measured:
        panels.append(Panel("seconds", [label for _, label in measured],
                            {"seconds": [results[key] for key, _ in measured]}, kind="hbars"))
    idle_rows = results.get("idle", {})
    if idle_rows:
        names = [f"broker {k}" if k != "zookeeper" else "ZooKeeper" for k in idle_rows]
        for metric, what in (("cpu", "idle CPU, % of a core"), ("rss", "idle RSS, MB"), ("fds", "open file descriptors")):
            panels.append(Panel(what, names, {what: [row.get(metric) for row in idle_rows.values()]}))
    return draw(path, title, panels)


def log_problems(cluster: Cluster) -> None:
    """Per broker: how many ERROR and WARNING lines (and tracebacks) its server.log has, by kind."""
    for b in cluster.ids:
        path = cluster.server_log(b)
        try:
            lines = path.read_text(errors="replace").splitlines()
        except OSError:
            continue
        kinds: dict[str, list[Any]] = {}  # the message with its numbers blanked → [count, first line]
        errors = warnings = 0
        for line in lines:
            if "] ERROR " in line or "] CRITICAL " in line or line.startswith("Traceback") or "Unhandled" in line:
                errors += 1
            elif "] WARNING " in line:
                warnings += 1
            else:
                continue
            kind = re.sub(r"\d+", "N", line.split("] ", 1)[-1])[:90]
            kinds.setdefault(kind, [0, line])[0] += 1
        say(f"broker {b} server.log: {len(lines):,} lines, {errors} error lines, {warnings} warning lines")
        for count, first in sorted(kinds.values(), key=lambda v: -v[0])[:6]:
            say(f"    {count:>5} x {first[:220]}")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--partitions", type=int, default=10_000, help="partitions in all (default 10000)")
    ap.add_argument("--partitions-per-topic", type=int, default=10)
    ap.add_argument("--keep", action="store_true", help="leave the cluster directory for inspection")
    ap.add_argument("--skip-failover", action="store_true", help="skip the two controller failover phases")
    ap.add_argument("--create-failover-partitions", type=int, default=10_000,
                    help="partitions created in phase 6, around the controller's SIGKILL (default 10000)")
    add_chart_argument(ap)
    args = ap.parse_args()
    if args.partitions < 1 or args.partitions_per_topic < 1:
        ap.error("--partitions and --partitions-per-topic must be positive")
    plan = topic_plan(args.partitions, args.partitions_per_topic)
    n = args.partitions

    fd_limit = raise_fd_limit()
    needed = n * RF // BROKERS * FDS_PER_REPLICA + FDS_BASE
    say(f"RLIMIT_NOFILE soft limit for the brokers: {fd_limit:,} (hard {resource.getrlimit(resource.RLIMIT_NOFILE)[1]:,})")
    if needed > fd_limit:
        say(f"WARNING: {n:,} partitions at RF {RF} put {n * RF // BROKERS:,} replicas on each broker: about "
            f"{needed:,} file descriptors if a broker keeps {FDS_PER_REPLICA} open per replica (log, index, time "
            f"index), more than the limit of {fd_limit:,}; the brokers may run out (running anyway; the idle "
            "phase shows how many they hold)")

    # generous, and growing with N: the slowest phases are proportional to the partition count
    timeout = max(300.0, n * 0.1)
    work = Path(tempfile.mkdtemp(prefix="mafka-bench-partitions-", dir="/tmp"))
    settings = dict(SETTINGS)
    say(f"cluster: {BROKERS} brokers in {work}, settings "
        + ", ".join(f"{k}={v}" for k, v in settings.items()) + f"; phase timeout {timeout:.0f} s")
    cluster = Cluster(work, settings)
    waiter = Waiter(cluster)
    results: dict[str, Any] = {}
    failed = False
    try:
        cluster.start_all(timeout=120)
        say(f"cluster up: {cluster.bootstrap}, ZooKeeper 127.0.0.1:{cluster.zookeeper_port}, "
            f"controller {cluster.controller()}")
        create(cluster, waiter, plan, timeout, results)
        if results.get("create_ready") is None:
            say("(creation did not complete: the following figures are of a cluster still creating)")
        idle(cluster, fd_limit, results)
        metadata(cluster, results)
        scrapes(cluster, results)
        controlled_shutdown(cluster, waiter, timeout, results)
        if args.skip_failover:
            say("== 5. controller failover: skipped (--skip-failover)")
            say("== 6. controller SIGKILL while creating: skipped (--skip-failover)")
        else:
            failover(cluster, waiter, timeout, results)
            more = [(f"during-{t}", p) for t, p in topic_plan(args.create_failover_partitions,
                                                               args.partitions_per_topic)]
            failover_while_creating(cluster, waiter, more, timeout, results)
    except PhaseFailed as e:
        failed = True
        say(f"ABORTED: {e}")
    except KeyboardInterrupt:
        failed = True
        say("ABORTED: interrupted")
    except Exception as e:  # noqa: BLE001 - reported, then the cluster is stopped
        failed = True
        say(f"ABORTED: {type(e).__name__}: {e}")
        import traceback

        traceback.print_exc()
    finally:
        try:
            if cluster.info:
                say()
                log_problems(cluster)
        finally:
            cluster.stop()
    summary(args, plan, fd_limit, results)
    if args.chart and (any(key in results for key, _ in DURATIONS) or results.get("idle")):
        title = f"Partition scale: {sum(p for _, p in plan):,} partitions, RF 3, 3 brokers ({os.cpu_count()} cores)"
        print(f"chart: {chart(args.chart, title, results)}", file=sys.stderr)
    timed_out = [k for k, v in results.items() if v is None]
    if timed_out:
        say(f"\n{len(timed_out)} figure(s) timed out: {', '.join(timed_out)}")
    if args.keep or failed or timed_out:
        say(f"\ncluster directory kept: {work} (server.log of each broker in broker-<id>/)")
    else:
        shutil.rmtree(work, ignore_errors=True)
    return 1 if failed or timed_out else 0


if __name__ == "__main__":
    sys.exit(main())
