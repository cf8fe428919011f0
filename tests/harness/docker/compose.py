"""The ``docker/docker-compose.yml`` cluster driven from tests: build, up, faults, down.

:class:`ComposeCluster` runs the compose file under its own project name (so
several runs, or a developer's ``make docker-up``, never share containers,
networks or volumes) with free host ports for the brokers' EXTERNAL
listeners, and offers what tests need: health, the host bootstrap string,
kill / start / restart / pause / unpause, a command run inside a container,
and ``down -v`` at the end.

Containers are driven through the Docker SDK for Python (``docker`` on PyPI),
found by the labels docker-compose puts on them (``com.docker.compose.project``
and ``com.docker.compose.service``).  Only ``up`` and ``down`` go through
``docker-compose``, which the SDK cannot replace (it reads no compose file),
and the images are made by ``docker/build.sh`` (``make docker-build``).

:func:`docker_available` says whether a Docker engine, the SDK and
docker-compose answer; tests skip with that reason when not (the suite must
pass on a machine without Docker; on the project's machines it runs).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import time
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

try:
    import docker  # docker.errors comes with it
except ImportError:  # the test extras install it; without it the docker tests skip
    docker = None  # type: ignore[assignment]

from ..cluster import free_ports

REPO = Path(__file__).resolve().parents[3]
COMPOSE_FILE = REPO / "docker" / "docker-compose.yml"
BUILD_SCRIPT = REPO / "docker" / "build.sh"
BROKERS = ("kafka1", "kafka2", "kafka3")
ZOOKEEPERS = ("zk1", "zk2", "zk3")
#: the compose file's only network, ``<project>_mafka``
NETWORK = "mafka"


@functools.cache
def client(timeout: float = 60.0) -> Any:
    """A Docker SDK client on the engine of the environment (``DOCKER_HOST`` …), one per timeout.

    ``timeout`` bounds each API call as the ``docker`` command's subprocess
    timeout did: no answer (or no output from an exec) for that long raises.
    """
    if docker is None:
        raise RuntimeError("no Docker SDK for Python (pip install 'docker>=7.1,<8')")
    return docker.from_env(timeout=max(1, round(timeout)))


@functools.cache
def docker_available() -> str | None:
    """None when Docker, its SDK and docker-compose work here, else why not."""
    if shutil.which("docker") is None:
        return "no docker command"  # docker/build.sh and make docker-up use it
    if shutil.which("docker-compose") is None:
        return "no docker-compose command"
    if docker is None:
        return "no Docker SDK for Python (pip install 'docker>=7.1,<8')"
    try:
        client().ping()
    except Exception as exc:  # noqa: BLE001 - DockerException, a refused or missing socket …
        return f"no Docker engine answers: {str(exc).strip()[:200]}"
    return None


def build_images(timeout: float = 1200.0) -> None:
    """``docker/build.sh``: quick when the images are current (it checks tags only)."""
    r = subprocess.run(["bash", str(BUILD_SCRIPT)], cwd=REPO, capture_output=True, text=True, timeout=timeout)
    if r.returncode != 0:
        raise RuntimeError(f"docker/build.sh failed ({r.returncode}):\n{r.stdout[-2000:]}\n{r.stderr[-2000:]}")


@dataclass
class ExecResult:
    """A command run in a container: what ``subprocess.run`` of ``docker exec`` gave (text output)."""

    returncode: int
    stdout: str
    stderr: str


def compose_labels(project: str, service: str | None = None) -> list[str]:
    """The label filters that find what docker-compose made for ``project`` (one service's container)."""
    labels = [f"com.docker.compose.project={project}"]
    if service is not None:
        labels += [f"com.docker.compose.service={service}", "com.docker.compose.oneoff=False"]
    return labels


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
            try:
                c = self.container(service, timeout=60)
                text = (c.logs(stdout=True, stderr=False).decode(errors="replace")
                        + c.logs(stdout=False, stderr=True).decode(errors="replace"))
            except Exception as exc:  # noqa: BLE001 - a missing container: say so in its file, as docker logs did
                text = f"{type(exc).__name__}: {exc}\n"
            (directory / f"{service}.log").write_text(text)

    # ------------------------------------------------------------------ containers

    def find(self, service: str, timeout: float = 60.0) -> Any | None:
        """The service's only container (found by its compose labels), or None when there is none."""
        found = client(timeout).containers.list(all=True, filters={"label": compose_labels(self.project, service)},
                                                ignore_removed=True)
        if len(found) > 1:
            raise RuntimeError(f"{len(found)} containers for {self.project}/{service}; expected one")
        return found[0] if found else None

    def container(self, service: str, timeout: float = 60.0) -> Any:
        """The service's container (a ``docker.models.containers.Container``, freshly inspected)."""
        c = self.find(service, timeout)
        if c is None:
            raise RuntimeError(f"no container for service {service} of project {self.project}")
        return c

    @property
    def network_name(self) -> str:
        """The name docker-compose 1.x gives the project's network."""
        return f"{self.project}_{NETWORK}"

    def network(self, timeout: float = 60.0) -> Any:
        """The project's network (``<project>_mafka``), found by its compose labels."""
        found = client(timeout).networks.list(
            filters={"label": [*compose_labels(self.project), f"com.docker.compose.network={NETWORK}"]})
        if len(found) != 1:
            raise RuntimeError(f"{len(found)} networks {NETWORK!r} for project {self.project}; expected one")
        return found[0]

    def state(self, service: str) -> tuple[str, str]:
        """(status, health) of a service's container: ("running", "healthy") …"""
        c = self.find(service, timeout=30)
        if c is None:
            return "missing", "none"
        st = c.attrs["State"]
        health = st.get("Health")
        return st["Status"], health["Status"] if health else "none"

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

    def kill(self, service: str) -> None:
        """SIGKILL the container (docker kill: not restarted by the policy until :meth:`start`)."""
        self.container(service).kill()

    def start(self, service: str) -> None:
        self.container(service).start()

    def restart(self, service: str, stop_timeout: int = 10, timeout: float = 120.0) -> None:
        """``docker restart -t stop_timeout``: SIGTERM, SIGKILL after ``stop_timeout`` s, then start."""
        self.container(service, timeout).restart(timeout=stop_timeout)

    def pause(self, service: str) -> None:
        self.container(service).pause()

    def unpause(self, service: str) -> None:
        self.container(service).unpause()

    def exec(self, service: str, *argv: str, timeout: float = 60.0) -> ExecResult:
        """``argv`` run in the service's container; its exit code and output, as ``docker exec`` gives them.

        An exec killed with its container (SIGKILL to the PID namespace) exits 137, as with the CLI;
        a container that is missing, stopped or paused gives exit code 1 and the engine's error, as the
        CLI did, rather than an exception.
        """
        api = client(timeout).api
        try:
            exec_id = api.exec_create(self.container(service, timeout).id, list(argv), stdout=True, stderr=True)["Id"]
        except (RuntimeError, docker.errors.APIError) as exc:
            # no such container, or it is not running / paused: `docker exec` said so and exited 1
            return ExecResult(1, "", f"Error response from daemon: {getattr(exc, 'explanation', None) or exc}")
        out, err = api.exec_start(exec_id, demux=True)
        deadline = time.monotonic() + timeout
        while (info := api.exec_inspect(exec_id))["Running"] and time.monotonic() < deadline:
            time.sleep(0.05)  # the output ended a moment before the engine saw the process exit
        if info["ExitCode"] is None:
            raise RuntimeError(f"exec {list(argv)} in {service}: no exit code within {timeout:.0f} s")
        return ExecResult(info["ExitCode"], (out or b"").decode(errors="replace"), (err or b"").decode(errors="replace"))

    def restart_count(self, service: str) -> int:
        return int(self.container(service).attrs["RestartCount"])

    # ------------------------------------------------------------------ clients

    @property
    def bootstrap(self) -> str:
        """The brokers' EXTERNAL listeners, for clients on the host."""
        return ",".join(f"localhost:{p}" for p in self.ports)

    def broker_bootstrap(self, broker_id: int) -> str:
        return f"localhost:{self.ports[broker_id - 1]}"
