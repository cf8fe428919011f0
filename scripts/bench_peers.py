"""Shared parts of the side-by-side benchmarks: the Tansu peer, a local Mafka cluster, kcat, /proc.

Used by ``bench_consume.py`` and ``bench_scale.py`` (run from the repository
root; ``scripts/`` is on ``sys.path`` when they run).
"""

from __future__ import annotations

import glob
import json
import os
import random
import signal
import string
import subprocess
import sys
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent.parent
BENCH = Path(os.environ.get("BENCH", HERE.parent / "shared" / "bench"))
MAFKA = HERE / ".venv" / "bin" / "mafka"
TICK = os.sysconf("SC_CLK_TCK")


def cpu_total(pids: list[int]) -> float:
    """CPU-seconds used so far by all of *pids*."""
    return sum(cpu_s(p) for p in pids)


def kcat_env(work: Path) -> dict[str, str]:
    import confluent_kafka

    libs = sorted(glob.glob(os.path.join(os.path.dirname(os.path.dirname(confluent_kafka.__file__)), "confluent_kafka.libs", "librdkafka*.so*")))
    if not libs:
        sys.exit("no librdkafka in the confluent-kafka wheel")
    d = work / "kcat-ld"
    d.mkdir(exist_ok=True)
    link = d / "librdkafka.so.1"
    if not link.exists():
        link.symlink_to(libs[0])
    return {**os.environ, "LD_LIBRARY_PATH": str(d)}


def cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / TICK


def wait_port(port: int, timeout: float = 60.0) -> None:
    import socket

    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            time.sleep(0.2)
    raise TimeoutError(f"nothing listens on {port}")


def create_topic(bootstrap: str, name: str, partitions: int, rf: int, configs: dict[str, str] | None = None) -> None:
    from confluent_kafka.admin import AdminClient, NewTopic

    admin = AdminClient({"bootstrap.servers": bootstrap})
    topic = NewTopic(name, num_partitions=partitions, replication_factor=rf, config=configs or {})
    for f in admin.create_topics([topic], operation_timeout=30).values():
        f.result(timeout=60)
    time.sleep(1.0)


def write_records(path: Path, n: int, size: int = 100, seed: int = 7) -> Path:
    """*n* lines of *size* random letters (kcat -P input)."""
    rng = random.Random(seed)
    with open(path, "w") as f:
        for _ in range(n):
            f.write("".join(rng.choices(string.ascii_letters, k=size)) + "\n")
    return path


class Tansu:
    def __init__(self, work: Path, port: int, tag: str) -> None:
        env = {**os.environ, "PORT": str(port), "LOG": str(work / f"tansu-{tag}.log"), "VENV": str(work / "venv-tansu")}
        out = subprocess.run([str(BENCH / "peer-tansu.sh")], env=env, capture_output=True, text=True, check=True)
        self.pid = int(out.stdout.strip().splitlines()[-1])
        self.pids = [self.pid]
        self.bootstrap = f"127.0.0.1:{port}"
        wait_port(port)

    def stop(self) -> None:
        os.kill(self.pid, signal.SIGTERM)


class Mafka:
    """``mafka cluster up``: ZooKeeper and *brokers* brokers on consecutive ports from *port*."""

    def __init__(self, work: Path, port: int, zk_port: int, tag: str, brokers: int = 1,
                 settings: dict[str, str] | None = None) -> None:
        d = work / f"mafka-{tag}"
        extra = [arg for key, value in (settings or {}).items() for arg in ("--set", f"{key}={value}")]
        self.proc = subprocess.Popen(
            [str(MAFKA), "cluster", "up", "--brokers", str(brokers), "--dir", str(d), "--base-port", str(port),
             "--zookeeper-port", str(zk_port), *extra],
            stdout=open(work / f"mafka-{tag}.log", "w"), stderr=subprocess.STDOUT,
        )
        deadline = time.monotonic() + 120
        while not (d / "cluster.json").exists() or not (d / "cluster.json").read_text().strip():
            if time.monotonic() > deadline or self.proc.poll() is not None:
                raise RuntimeError(f"mafka did not start; see {work}/mafka-{tag}.log")
            time.sleep(0.2)
        info = json.loads((d / "cluster.json").read_text())
        self.pids = [b["pid"] for b in info["brokers"]]
        self.pid = self.pids[0]
        self.bootstrap = info["bootstrap"]
        for b in info["brokers"]:
            wait_port(b["port"])

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGTERM)
        try:
            self.proc.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.proc.kill()
