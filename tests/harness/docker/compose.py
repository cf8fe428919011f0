"""The ``docker/docker-compose.yml`` cluster driven from tests: build, up, faults, down.

:class:`ComposeCluster` runs the compose file under its own project name (so
several runs, or a developer's ``make docker-up``, never share containers,
networks or volumes) with free host ports for the brokers' EXTERNAL
listeners, and offers what tests need: health, the host bootstrap string,
``docker kill`` / ``start`` / ``pause`` / ``unpause``, a command run inside a
container, and ``down -v`` at the end.

:func:`docker_available` says whether a Docker engine and docker-compose
answer; tests skip with that reason when not (the suite must pass on a
machine without Docker; on the project's machines it runs).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import time
import uuid
from pathlib import Path

from ..cluster import free_ports

REPO = Path(__file__).resolve().parents[3]
COMPOSE_FILE = REPO / "docker" / "docker-compose.yml"
BUILD_SCRIPT = REPO / "docker" / "build.sh"
BROKERS = ("kafka1", "kafka2", "kafka3")
ZOOKEEPERS = ("zk1", "zk2", "zk3")


@functools.cache
def docker_available() -> str | None:
    """None when Docker and docker-compose work here, else why not."""
    if shutil.which("docker") is None:
        return "no docker command"
    if shutil.which("docker-compose") is None:
        return "no docker-compose command"
    r = subprocess.run(["docker", "info", "--format", "{{.ServerVersion}}"], capture_output=True, text=True, timeout=60)
    if r.returncode != 0:
        return f"no Docker engine answers: {r.stderr.strip()[:200]}"
    return None


def build_images(timeout: float = 1200.0) -> None:
    """``docker/build.sh``: quick when the images are current (it checks tags only)."""
    r = subprocess.run(["bash", str(BUILD_SCRIPT)], cwd=REPO, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"docker/build.sh failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")


class ComposeCluster:
    """One project of the compose file: 3 ZooKeeper members, 3 brokers."""

    def __init__(self, name: str | None = None, log_dir: Path | None = None,
                 variables: dict[str, str] | None = None) -> None:
        """``variables``: the compose file's own (``MAFKA_REPLICA_LAG_TIME_MAX_MS`` …)."""
        self.project = name or f"mafkatest{uuid.uuid4().hex[:8]}"
        self.ports = free_ports(3)
        self.log_dir = log_dir
        self.env = {
            **os.environ,
            "COMPOSE_PROJECT_NAME": self.project,
            **{f"MAFKA_PORT_{i}": str(p) for i, p in enumerate(self.ports, start=1)},
            **(variables or {}),
        }

    # ------------------------------------------------------------------ compose

    def compose(self, *args: str, timeout: float = 180.0, check: bool = True) -> subprocess.CompletedProcess:
        r = subprocess.run(["docker-compose", "-f", str(COMPOSE_FILE), "-p", self.project, *args],
                           env=self.env, capture_output=True, text=True, timeout=timeout)
        if check and r.returncode != 0:
            raise RuntimeError(f"docker-compose {' '.join(args)} failed ({r.returncode}):\n{r.stderr[-3000:]}")
        return r

    def up(self, timeout: float = 180.0) -> ComposeCluster:
        self.compose("up", "-d", timeout=timeout)
        self.wait_healthy(timeout=timeout)
        return self

    def down(self) -> None:
        if self.log_dir is not None:
            self.save_logs(self.log_dir)
        self.compose("down", "-v", "--remove-orphans", "-t", "5", check=False, timeout=180)

    def save_logs(self, directory: Path) -> None:
        directory.mkdir(parents=True, exist_ok=True)
        for service in (*ZOOKEEPERS, *BROKERS):
            r = subprocess.run(["docker", "logs", self.container(service)], capture_output=True, text=True,
                               timeout=60, check=False)
            (directory / f"{service}.log").write_text(r.stdout + r.stderr)

    # ------------------------------------------------------------------ containers

    def container(self, service: str) -> str:
        """The container name docker-compose 1.x gives a service's only replica."""
        return f"{self.project}_{service}_1"

    def state(self, service: str) -> tuple[str, str]:
        """(status, health) of a service's container: ("running", "healthy") …"""
        r = subprocess.run(["docker", "inspect", "-f", "{{.State.Status}} {{if .State.Health}}{{.State.Health.Status}}"
                            "{{else}}none{{end}}", self.container(service)], capture_output=True, text=True, timeout=30)
        if r.returncode != 0:
            return "missing", "none"
        status, health = r.stdout.split()
        return status, health

    def wait_healthy(self, services: tuple[str, ...] = (*ZOOKEEPERS, *BROKERS), timeout: float = 180.0) -> float:
        """Waits until every service is healthy; returns the seconds it took."""
        started = time.monotonic()
        deadline = started + timeout
        while True:
            states = {s: self.state(s) for s in services}
            if all(h == "healthy" for _, h in states.values()):
                return time.monotonic() - started
            if time.monotonic() > deadline:
                raise TimeoutError(f"not healthy within {timeout:.0f} s: {states}")
            time.sleep(1.0)

    def docker(self, *args: str, timeout: float = 60.0) -> str:
        r = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout)
        if r.returncode != 0:
            raise RuntimeError(f"docker {' '.join(args)} failed: {r.stderr.strip()}")
        return r.stdout

    def kill(self, service: str) -> None:
        """SIGKILL the container (docker kill: not restarted by the policy until :meth:`start`)."""
        self.docker("kill", self.container(service))

    def start(self, service: str) -> None:
        self.docker("start", self.container(service))

    def pause(self, service: str) -> None:
        self.docker("pause", self.container(service))

    def unpause(self, service: str) -> None:
        self.docker("unpause", self.container(service))

    def exec(self, service: str, *argv: str, timeout: float = 60.0) -> subprocess.CompletedProcess:
        return subprocess.run(["docker", "exec", self.container(service), *argv], capture_output=True, text=True,
                              timeout=timeout)

    def restart_count(self, service: str) -> int:
        return int(self.docker("inspect", "-f", "{{.RestartCount}}", self.container(service)).strip())

    # ------------------------------------------------------------------ clients

    @property
    def bootstrap(self) -> str:
        """The brokers' EXTERNAL listeners, for clients on the host."""
        return ",".join(f"localhost:{p}" for p in self.ports)

    def broker_bootstrap(self, broker_id: int) -> str:
        return f"localhost:{self.ports[broker_id - 1]}"
