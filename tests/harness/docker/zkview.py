"""Partition states read from ZooKeeper, where the ISR lives, from a probe container on the compose network.

Metadata is the wrong place to time ISR changes: as in Kafka 2.8, a leader
writes its ISR to ``/brokers/topics/T/partitions/P/state`` and brokers learn it
through the controller's UpdateMetadata seconds later (ISR change
notifications are batched), and a broker cut from the controller keeps an old
view.  :class:`ZkView` starts a container of the mafka image on the project's
network that is no part of any fault (the iptables rules name the peers they
cut, never the probe) and keeps one kazoo client in it, asked over its stdin.
"""

from __future__ import annotations

import json
import queue
import subprocess
import threading

from .compose import ZOOKEEPERS, ComposeCluster

__all__ = ["ZkView"]

_SCRIPT = r"""
import json, sys
from kazoo.client import KazooClient
zk = KazooClient(hosts=sys.argv[1], timeout=6)
zk.start(timeout=60)
for line in sys.stdin:
    topic = line.strip()
    try:
        out = {}
        base = "/brokers/topics/%s/partitions" % topic
        for p in zk.get_children(base):
            state = json.loads(zk.get("%s/%s/state" % (base, p))[0])
            out[p] = [state["leader"], state["isr"]]
        print(json.dumps(out), flush=True)
    except Exception as exc:
        print(json.dumps({"error": repr(exc)}), flush=True)
"""


class ZkView:
    """``states(topic)`` → partition → (leader, ISR) as ZooKeeper holds them; {} when ZooKeeper does not answer."""

    def __init__(self, cluster: ComposeCluster, timeout: float = 8.0) -> None:
        self.cluster = cluster
        self.timeout = timeout
        self.name = f"{cluster.project}-zkview"
        self._proc: subprocess.Popen[str] | None = None
        self._lines: queue.Queue[str] = queue.Queue()
        self._lock = threading.Lock()

    def start(self) -> ZkView:
        network = f"{self.cluster.project}_mafka"
        self.cluster.docker("run", "-d", "--rm", "--name", self.name, "--network", network,
                            "--entrypoint", "sleep", "mafka:latest", "infinity", timeout=60)
        self._spawn()
        return self

    def _spawn(self) -> None:
        hosts = ",".join(f"{z}:2181" for z in ZOOKEEPERS)
        self._proc = subprocess.Popen(["docker", "exec", "-i", self.name, "python3", "-u", "-c", _SCRIPT, hosts],
                                      stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                      text=True, bufsize=1)
        lines = self._lines = queue.Queue()
        proc = self._proc

        def pump() -> None:
            assert proc.stdout is not None
            for line in proc.stdout:
                lines.put(line)
        threading.Thread(target=pump, name="zkview", daemon=True).start()

    def states(self, topic: str) -> dict[int, tuple[int, list[int]]]:
        with self._lock:
            proc = self._proc
            if proc is None or proc.poll() is not None:
                self._spawn()
                proc = self._proc
            assert proc is not None and proc.stdin is not None
            try:
                proc.stdin.write(topic + "\n")
                proc.stdin.flush()
                line = self._lines.get(timeout=self.timeout)
            except (BrokenPipeError, queue.Empty):
                proc.kill()  # stuck or gone: the next call starts another
                return {}
        answer = json.loads(line)
        if "error" in answer:
            return {}
        return {int(p): (leader, list(isr)) for p, (leader, isr) in answer.items()}

    def close(self) -> None:
        if self._proc is not None and self._proc.poll() is None:
            self._proc.kill()
        self.cluster.docker("rm", "-f", self.name, timeout=60)
