"""A real local cluster for integration tests: ``mafka cluster up`` as a child process.

:class:`LocalCluster` starts ZooKeeper and N broker processes on free
loopback ports, waits for ``cluster.json``, and can kill, stop and restart
single brokers (by pid and by the ``argv`` recorded in ``cluster.json``).
Every wait is bounded.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from mafka.cli.cluster import metadata_snapshot
from mafka.coordination.zookeeper import free_loopback_ports

#: the durable profile (RF 3, min ISR 2, unclean election off) with quick failure detection:
#: what the delayed- and transaction-message tests run on
DURABLE_SETTINGS = {
    "zookeeper.session.timeout.ms": "6000",
    "replica.lag.time.max.ms": "4000",
    "min.insync.replicas": "2",
    "default.replication.factor": "3",
    "unclean.leader.election.enable": "false",
    "auto.leader.rebalance.enable": "false",
    "offsets.topic.num.partitions": "4",
}


def running_cluster(tmp_path_factory: Any, name: str, settings: dict[str, str] | None = None,
                    brokers: int = 3) -> Any:
    """A module fixture's body: a started :class:`LocalCluster`, stopped after the module's tests."""
    c = LocalCluster(tmp_path_factory.mktemp(name) / "cluster", brokers=brokers,
                     settings=DURABLE_SETTINGS if settings is None else settings)
    c.start()
    try:
        yield c
    finally:
        c.stop()


def free_ports(n: int) -> list[int]:
    """*n* free loopback ports, below the ephemeral range (see ``free_loopback_ports``)."""
    return free_loopback_ports(n)


def consecutive_free_ports(n: int) -> int:
    """A base port with *n* free ports after it."""
    return free_loopback_ports(n, consecutive=True)[0]


class LocalCluster:
    """ZooKeeper + brokers 1..N via ``mafka cluster up``."""

    def __init__(
        self, directory: Path, brokers: int = 3, settings: dict[str, str] | None = None, *, log_dirs_per_broker: int = 1
    ) -> None:
        self.directory = directory
        self.brokers = brokers
        self.settings = settings or {}
        self.log_dirs_per_broker = log_dirs_per_broker
        self.proc: subprocess.Popen | None = None
        self.info: dict[str, Any] = {}
        self.zookeeper_port = free_ports(1)[0]
        self.base_port = consecutive_free_ports(brokers)

    def start(self, timeout: float = 90.0) -> LocalCluster:
        argv = [
            sys.executable, "-m", "mafka.cli.main", "cluster", "up",
            "--brokers", str(self.brokers), "--dir", str(self.directory),
            "--base-port", str(self.base_port), "--zookeeper-port", str(self.zookeeper_port),
            "--timeout", str(timeout), "--log-dirs-per-broker", str(self.log_dirs_per_broker),
        ]
        for key, value in self.settings.items():
            argv += ["--set", f"{key}={value}"]
        self.log = open(self.directory.parent / f"{self.directory.name}-cluster.log", "wb")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout + 10
        state = self.directory / "cluster.json"
        while not state.exists():
            if self.proc.poll() is not None:
                raise RuntimeError(f"mafka cluster up exited with {self.proc.returncode}; see {self.log.name}")
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError("the cluster did not come up")
            time.sleep(0.2)
        self.info = json.loads(state.read_text())
        return self

    @property
    def bootstrap(self) -> str:
        return self.info["bootstrap"]

    def broker(self, broker_id: int) -> dict[str, Any]:
        return next(b for b in self.info["brokers"] if b["id"] == broker_id)

    def controller_id(self, via: int | None = None, timeout: float = 30.0) -> int:
        """The controller id as a live broker reports it (waiting until one does)."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            for b in self.info["brokers"]:
                if via is not None and b["id"] != via:
                    continue
                snap = metadata_snapshot(b["host"], b["port"], timeout=1.0)
                if snap is not None and snap[1] >= 0:
                    return snap[1]
            time.sleep(0.2)
        raise TimeoutError("no controller reported")

    def _kill_brokers(self) -> None:
        for pid in [b["pid"] for b in self.info.get("brokers", [])]:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass

    def kill(self, broker_id: int, sig: int = signal.SIGKILL) -> None:
        os.kill(self.broker(broker_id)["pid"], sig)

    def restart(self, broker_id: int) -> None:
        b = self.broker(broker_id)
        with open(b["log_file"], "ab") as out:
            proc = subprocess.Popen(b["argv"], stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        b["pid"] = proc.pid

    def stop(self) -> None:
        """Stops everything, fast: the brokers are SIGKILLed first, then ``cluster up`` stops ZooKeeper.

        A teardown needs no controlled shutdown (three brokers stopping together
        spend seconds moving leadership between each other); tests of graceful
        stops send their brokers SIGTERM themselves.
        """
        self._kill_brokers()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=60)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                # `cluster up` was killed before it stopped its ZooKeeper: do it here.
                zk_pid = self.info.get("zookeeper", {}).get("pid")
                if zk_pid is not None:
                    try:
                        os.kill(zk_pid, signal.SIGKILL)
                    except ProcessLookupError:
                        pass
        self._kill_brokers()
        if hasattr(self, "log"):
            self.log.close()
