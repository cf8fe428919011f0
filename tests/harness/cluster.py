"""A real local cluster for integration tests: ``mafka cluster up`` as a child process.

:class:`LocalCluster` starts ZooKeeper and N broker processes on free
loopback ports, waits for ``cluster.json``, and can kill, stop and restart
single brokers (by pid and by the ``argv`` recorded in ``cluster.json``).
Every wait is bounded.

:class:`ClusterSpec` says which cluster a test module runs on (its module-level
``CLUSTER``), and :class:`ClusterFactory` starts them: one shared cluster per spec
for the modules that leave it as they found it, a fresh one for each of the others
(``tests/integration/conftest.py``'s ``cluster`` and ``cluster_factory`` fixtures).
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
import warnings
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
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


def free_ports(n: int) -> list[int]:
    """*n* free loopback ports, below the ephemeral range (see ``free_loopback_ports``)."""
    return free_loopback_ports(n)


def consecutive_free_ports(n: int) -> int:
    """A base port with *n* free ports after it."""
    return free_loopback_ports(n, consecutive=True)[0]


class LocalCluster:
    """ZooKeeper + brokers 1..N via ``mafka cluster up``."""

    def __init__(
        self, directory: Path, brokers: int = 3, settings: dict[str, str] | None = None, *, log_dirs_per_broker: int = 1,
        listeners: tuple[str, ...] = (), console: bool = False,
    ) -> None:
        self.directory = directory
        #: the web console's port when ``console`` (``mafka cluster up`` starts it), else -1 (none)
        self.console_port = free_ports(1)[0] if console else -1
        self.brokers = brokers
        #: more listeners than PLAINTEXT, as ``mafka cluster up --listener NAME[:PROTOCOL]``
        self.listeners = listeners
        self.settings = settings or {}
        self.log_dirs_per_broker = log_dirs_per_broker
        self.proc: subprocess.Popen | None = None
        self.info: dict[str, Any] = {}
        self.zookeeper_port = free_ports(1)[0]
        self.base_port = consecutive_free_ports(brokers * (1 + len(listeners)))
        #: broker i's Prometheus /metrics port is metrics_base_port + i-1
        self.metrics_base_port = consecutive_free_ports(brokers)
        #: set while :class:`ClusterFactory` lends this cluster to modules that share it: then
        #: :meth:`kill`, :meth:`restart` and :meth:`stop` refuse (a module that needs them
        #: declares ``ClusterSpec(..., shared=False)``)
        self.shared = False

    def start(self, timeout: float = 90.0) -> LocalCluster:
        argv = [
            sys.executable, "-m", "mafka.cli.main", "cluster", "up",
            "--brokers", str(self.brokers), "--dir", str(self.directory),
            "--base-port", str(self.base_port), "--zookeeper-port", str(self.zookeeper_port),
            "--metrics-base-port", str(self.metrics_base_port), "--console-port", str(self.console_port),
            "--timeout", str(timeout), "--log-dirs-per-broker", str(self.log_dirs_per_broker),
        ]
        for key, value in self.settings.items():
            argv += ["--set", f"{key}={value}"]
        for listener in self.listeners:
            argv += ["--listener", listener]
        self.log = open(self.directory.parent / f"{self.directory.name}-cluster.log", "wb")
        self.proc = subprocess.Popen(argv, stdout=self.log, stderr=subprocess.STDOUT, start_new_session=True)
        deadline = time.monotonic() + timeout + 10
        state = self.directory / "cluster.json"
        while not state.exists():
            if self.proc.poll() is not None:
                raise RuntimeError(f"mafka cluster up exited with {self.proc.returncode}; see {self.log.name}; "
                                   f"it ends:\n{self._start_failure_tail()}")
            if time.monotonic() > deadline:
                self.stop()
                raise TimeoutError("the cluster did not come up")
            time.sleep(0.2)
        self.info = json.loads(state.read_text())
        return self

    @property
    def bootstrap(self) -> str:
        return self.info["bootstrap"]

    def bootstrap_for(self, listener: str) -> str:
        """The bootstrap servers of one listener (``PLAINTEXT``, or one of :attr:`listeners`)."""
        return ",".join(f"{b['host']}:{b['listeners'][listener.upper()]}" for b in self.info["brokers"])

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

    def refuse_if_shared(self, what: str) -> None:
        if self.shared:
            raise RuntimeError(f"{what} on a shared cluster: a module whose tests kill, freeze, restart or stop "
                               "brokers declares CLUSTER = ClusterSpec(..., shared=False)")

    def _start_failure_tail(self, lines: int = 30) -> str:
        """The end of ``mafka cluster up``'s output and of each broker's server.log (pytest removes old
        temporary dirs, so a failed start explains itself in the test's report)."""
        parts = []
        paths = [Path(self.log.name)] + sorted(self.directory.glob("broker-*/server.log"))
        for path in paths:
            try:
                tail = path.read_text(errors="replace").splitlines()[-lines:]
            except OSError as exc:
                tail = [f"(unreadable: {exc})"]
            parts.append(f"--- {path}\n" + "\n".join(tail))
        return "\n".join(parts)

    def kill(self, broker_id: int, sig: int = signal.SIGKILL) -> None:
        self.refuse_if_shared(f"signal {sig} to broker {broker_id}")
        os.kill(self.broker(broker_id)["pid"], sig)

    def restart(self, broker_id: int) -> None:
        self.refuse_if_shared(f"a restart of broker {broker_id}")
        b = self.broker(broker_id)
        with open(b["log_file"], "ab") as out:
            proc = subprocess.Popen(b["argv"], stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
        b["pid"] = proc.pid

    def wait_serving(self, broker_id: int, timeout: float = 60.0) -> None:
        """Waits until a (re)started broker serves: it answers Metadata itself and lists itself, and
        every other broker that answers lists it too.  A test that restarts a broker last calls this,
        so the next test's clients find no registered broker that refuses connections (kafka-python's
        admin client gives up when the node it picks refuses)."""
        deadline = time.monotonic() + timeout
        while True:
            own = metadata_snapshot(self.broker(broker_id)["host"], self.broker(broker_id)["port"])
            others = [metadata_snapshot(b["host"], b["port"]) for b in self.info["brokers"] if b["id"] != broker_id]
            if own is not None and broker_id in own[0] and all(broker_id in s[0] for s in others if s is not None):
                return
            if time.monotonic() >= deadline:
                raise TimeoutError(f"broker {broker_id} does not serve {timeout:.0f} s after its start: "
                                   f"it lists {own}, the others {others}")
            time.sleep(0.3)

    def stop(self) -> None:
        """Stops everything, fast: the brokers are SIGKILLed first, then ``cluster up`` stops ZooKeeper.

        A teardown needs no controlled shutdown (three brokers stopping together
        spend seconds moving leadership between each other); tests of graceful
        stops send their brokers SIGTERM themselves.
        """
        self.refuse_if_shared("stop()")
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


@dataclass(frozen=True)
class ClusterSpec:
    """The cluster a test module runs on: its module-level ``CLUSTER`` (see ``tests/integration/README.md``).

    ``shared=True`` (the default) lends the module the session's cluster for the same brokers,
    log dirs and settings, started by the first module asking for it and stopped after the last
    (``conftest.py`` runs such modules one after another).  Only for a module whose tests leave
    every broker running, change no broker config (static or dynamic), name their topics,
    groups, transactional ids and users so no other module's collide (a uuid, or a name no
    other module uses), and assert nothing about what else is in the cluster.

    ``shared=False``: a cluster of its own, started for the module and stopped after it: for
    modules that kill, freeze, restart or stop brokers, alter broker configs, or look at the
    whole cluster's state.
    """

    settings: Mapping[str, str] = field(default_factory=dict)
    brokers: int = 3
    log_dirs_per_broker: int = 1
    shared: bool = True
    #: more listeners than PLAINTEXT (``NAME[:PROTOCOL]``, see ``mafka cluster up --listener``)
    listeners: tuple[str, ...] = ()

    @property
    def key(self) -> tuple[Any, ...]:
        """What two modules must agree on to share a cluster."""
        return self.brokers, self.log_dirs_per_broker, tuple(sorted(self.settings.items())), self.listeners

    def describe(self) -> str:
        settings = ", ".join(f"{k}={v}" for k, v in sorted(self.settings.items())) or "default settings"
        dirs = f", {self.log_dirs_per_broker} log dirs each" if self.log_dirs_per_broker != 1 else ""
        return f"{self.brokers} broker(s){dirs}, {settings}"


def cluster_problem(cluster: LocalCluster, timeout: float = 15.0) -> str | None:
    """Why ``cluster`` is not fit to lend to the next module (None: it is).

    Fit: ``mafka cluster up`` and its ZooKeeper alive, every broker process running (not
    stopped, not a zombie), and every broker answering Metadata with all the brokers and a
    controller (a broker still settling after a test gets ``timeout`` seconds for that).
    """
    from .waits import process_state

    if cluster.proc is None or cluster.proc.poll() is not None:
        return "`mafka cluster up` is not running"
    zk_pid = cluster.info.get("zookeeper", {}).get("pid")
    if zk_pid is not None and process_state(zk_pid) in (None, "Z", "X", "T"):
        return "its ZooKeeper is not running"
    wanted = sorted(b["id"] for b in cluster.info["brokers"])
    deadline = time.monotonic() + timeout
    while True:
        problem = None
        for b in cluster.info["brokers"]:
            state = process_state(b["pid"])
            if state in (None, "Z", "X", "T"):
                return f"broker {b['id']} (pid {b['pid']}) is {'stopped' if state == 'T' else 'gone'}"
            snap = metadata_snapshot(b["host"], b["port"], timeout=2.0)
            if snap is None:
                problem = f"broker {b['id']} does not answer Metadata"
            elif snap[0] != wanted or snap[1] < 0:
                problem = f"broker {b['id']} reports brokers {snap[0]} and controller {snap[1]}"
            if problem:
                break
        if problem is None or time.monotonic() > deadline:
            return problem
        time.sleep(0.3)


class ClusterFactory:
    """Starts the clusters of one pytest process (one per lane of ``make test``); :meth:`close` stops them all.

    :meth:`lend` / :meth:`give_back`: the shared cluster for a spec, checked on every loan
    (:func:`cluster_problem`; a broken one is replaced, with a warning naming the module that
    had it last).  :meth:`own`: a fresh cluster for one module (or class, or test), stopped after it.
    """

    def __init__(self, tmp_path_factory: Any, start_timeout: float = 90.0) -> None:
        self.tmp_path_factory = tmp_path_factory
        self.start_timeout = start_timeout
        self.shared: dict[tuple[Any, ...], tuple[LocalCluster, str]] = {}  # key → (cluster, last borrower)
        self.running: list[LocalCluster] = []
        self.started: list[str] = []  # the name of every cluster started, in order

    def start(self, spec: ClusterSpec, name: str) -> LocalCluster:
        """A started cluster for ``spec`` in a fresh directory named after ``name``; :meth:`stop` stops it."""
        c = LocalCluster(self.tmp_path_factory.mktemp(name) / "cluster", brokers=spec.brokers,
                         settings=dict(spec.settings), log_dirs_per_broker=spec.log_dirs_per_broker,
                         listeners=spec.listeners)
        self.started.append(name)
        self.running.append(c)
        try:
            c.start(timeout=self.start_timeout)
        except BaseException:
            self.stop(c)
            raise
        return c

    def stop(self, cluster: LocalCluster) -> None:
        cluster.shared = False
        if cluster in self.running:
            self.running.remove(cluster)
        cluster.stop()

    @contextmanager
    def own(self, spec: ClusterSpec | None = None, name: str = "cluster", **spec_fields: Any) -> Iterator[LocalCluster]:
        """A cluster for the ``with`` block only: for ``spec``, or ``ClusterSpec(**spec_fields)``."""
        c = self.start(spec if spec is not None else ClusterSpec(shared=False, **spec_fields), name)
        try:
            yield c
        finally:
            self.stop(c)

    def lend(self, spec: ClusterSpec, borrower: str) -> LocalCluster:
        """The shared cluster for ``spec``: started now if there is none yet, or if the one there is broken."""
        held = self.shared.get(spec.key)
        if held is not None:
            c, last = held
            problem = cluster_problem(c)
            if problem is None:
                self.shared[spec.key] = (c, borrower)
                return c
            warnings.warn(f"the shared cluster ({spec.describe()}) was broken after {last}: {problem}; "
                          f"starting a new one for {borrower}", stacklevel=2)
            del self.shared[spec.key]
            self.stop(c)
        c = self.start(spec, "shared-cluster")
        c.shared = True
        self.shared[spec.key] = (c, borrower)
        return c

    def give_back(self, spec: ClusterSpec, last_user: bool) -> None:
        """Ends a loan; after the session's last module on a spec's shared cluster, it is stopped."""
        if last_user and spec.key in self.shared:
            c, _ = self.shared.pop(spec.key)
            self.stop(c)

    def close(self) -> None:
        """Stops every cluster still running: the shared ones, and any that a failed fixture left."""
        self.shared.clear()
        while self.running:
            self.stop(self.running[-1])
