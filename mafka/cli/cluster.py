"""``mafka cluster up --brokers N --dir DIR [--set key=value …]``: ZooKeeper + N brokers on loopback.

Starts a local ZooKeeper and brokers 1..N as child processes (ports
``--base-port``, +1, …), waits until every broker answers Metadata listing
all N brokers and a controller, writes ``DIR/cluster.json`` and prints the
bootstrap servers.  Ctrl-C / SIGTERM stops the brokers (gracefully) and then
ZooKeeper.  Brokers that die are not restarted (tests kill them on purpose;
``cluster.json`` holds each broker's ``argv`` to restart it alone).  Brokers stop one
after another, the controller last, so each controlled shutdown finds a live controller.

``cluster.json``::

    {"bootstrap": "127.0.0.1:9092,…",
     "zookeeper": {"connect": "127.0.0.1:2181", "pid": …},
     "brokers": [{"id", "host", "port", "pid", "config", "log_dirs", "log_file", "argv", "metrics"}, …],
     "console": "http://127.0.0.1:9021/"}

Each broker serves Prometheus ``/metrics`` (``--metrics-base-port``) and the web console
(``mafka console``, ``--console-port``) runs beside them, stopped first.
"""

from __future__ import annotations

import argparse
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

__all__ = ["add_parser", "run", "broker_properties", "metadata_snapshot", "stop_brokers", "stop_order"]

HOST = "127.0.0.1"


def add_parser(sub: Any) -> None:
    p = sub.add_parser("cluster", help="run a local cluster: ZooKeeper and N brokers")
    actions = p.add_subparsers(dest="action", required=True)
    up = actions.add_parser("up", help="start ZooKeeper and the brokers; stop them on Ctrl-C")
    up.add_argument("--brokers", type=int, default=3)
    up.add_argument("--dir", type=Path, default=Path(".mafka/cluster"))
    up.add_argument("--set", action="append", default=[], metavar="KEY=VALUE", help="a server property for every broker; ${broker.id} in VALUE becomes the broker's id")
    up.add_argument("--base-port", type=int, default=9092)
    up.add_argument("--listener", action="append", default=[], metavar="NAME[:PROTOCOL]",
                    help="one more listener on every broker besides PLAINTEXT (ports after the PLAINTEXT ones: "
                         "the k-th extra listener of broker i is on base-port + k*brokers + i-1); PROTOCOL "
                         "defaults to NAME (SSL, SASL_PLAINTEXT, SASL_SSL)")
    up.add_argument("--zookeeper-port", type=int, default=2181)
    up.add_argument("--console-port", type=int, default=9021,
                    help="the web console (mafka console) on this port, its URL in cluster.json (-1: none)")
    up.add_argument("--metrics-base-port", type=int, default=9404,
                    help="broker i serves Prometheus /metrics on this port + i-1 (mafka.metrics.port; "
                         "a --set mafka.metrics.port=… wins; -1: none)")
    up.add_argument("--tick-time-ms", type=int, default=500)
    up.add_argument("--log-dirs-per-broker", type=int, default=1, metavar="N",
                    help="log.dirs entries per broker (logs-1 … logs-N; one: logs)")
    up.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for the cluster to form")
    up.set_defaults(func=run)


def broker_properties(
    broker_id: int, port: int, log_dir: Path | str, zookeeper: str, brokers: int, extra: dict[str, str],
    listeners: dict[str, tuple[str, int]] | None = None,
) -> str:
    """The ``server.properties`` of one local broker; *listeners*: more listeners, name → (protocol, port)."""
    listeners = listeners or {}
    urls = ",".join([f"PLAINTEXT://{HOST}:{port}"] + [f"{n}://{HOST}:{p}" for n, (_, p) in listeners.items()])
    props = {
        "broker.id": str(broker_id),
        "listeners": urls,
        "advertised.listeners": urls,
        "log.dirs": str(log_dir),
        "zookeeper.connect": zookeeper,
        "zookeeper.session.timeout.ms": "6000",
        "offsets.topic.replication.factor": str(min(3, brokers)),
        "transaction.state.log.replication.factor": str(min(3, brokers)),
        "transaction.state.log.min.isr": str(min(2, brokers)),
        "group.initial.rebalance.delay.ms": "0",
    }
    if any(protocol != name for name, (protocol, _) in listeners.items()):
        props["listener.security.protocol.map"] = ",".join(
            ["PLAINTEXT:PLAINTEXT"] + [f"{n}:{protocol}" for n, (protocol, _) in listeners.items()]
        )
    props.update(extra)
    return "".join(f"{k}={v}\n" for k, v in props.items())


def metadata_snapshot(host: str, port: int, timeout: float = 2.0) -> tuple[list[int], int] | None:
    """(broker ids, controller id) from a Metadata v1 request, or None if the broker does not answer."""
    from mafka.wire.codec import decode_response, encode_request

    try:
        with socket.create_connection((host, port), timeout=timeout) as sock:
            sock.sendall(encode_request(3, 1, 1, "mafka-cluster", {"topics": []}))
            size = struct.unpack(">i", _recv(sock, 4))[0]
            _, body = decode_response(3, 1, _recv(sock, size))
            return sorted(b.node_id for b in body.brokers), body.controller_id
    except (OSError, ValueError):
        return None


def _recv(sock: socket.socket, n: int) -> bytes:
    out = bytearray()
    while len(out) < n:
        chunk = sock.recv(n - len(out))
        if not chunk:
            raise OSError("connection closed")
        out += chunk
    return bytes(out)


def stop_order(brokers: list[dict[str, Any]], controller_id: int | None) -> list[int]:
    """Indexes of *brokers* in the order to stop them: the controller last.

    Stopping brokers together makes those that are not the controller ask a
    controller that is itself going for their controlled shutdown; one after
    another, the controller last, each finds a controller that answers, and the
    controller moves only once.
    """
    order = [i for i, b in enumerate(brokers) if b["id"] != controller_id]
    return order + [i for i, b in enumerate(brokers) if b["id"] == controller_id]


def stop_brokers(brokers: list[dict[str, Any]], procs: list[subprocess.Popen], timeout_s: float = 30.0) -> None:
    """Stops the brokers gracefully (SIGTERM), one after another with the controller last;
    a broker not gone within *timeout_s* is killed."""
    controller_id = None
    for b, proc in zip(brokers, procs, strict=True):
        if proc.poll() is None:
            snapshot = metadata_snapshot(b["host"], b["port"], timeout=1.0)
            if snapshot is not None and snapshot[1] >= 0:
                controller_id = snapshot[1]
                break
    for i in stop_order(brokers, controller_id):
        proc = procs[i]
        if proc.poll() is not None:
            continue
        started = time.monotonic()
        print(f"stopping broker {brokers[i]['id']}" + (" (the controller)" if brokers[i]["id"] == controller_id else ""),
              end="", flush=True)
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(timeout=timeout_s)
            print(f": stopped in {time.monotonic() - started:.1f} s", flush=True)
        except subprocess.TimeoutExpired:
            print(f": not stopped in {timeout_s:.0f} s, killed", flush=True)
            proc.kill()
            proc.wait()


def start_console(base: Path, bootstrap: str, brokers: list[dict[str, Any]], port: int,
                  procs: list[subprocess.Popen], zookeeper: str) -> str | None:
    """Starts ``mafka console`` for the cluster (its output in ``DIR/console.log``) and appends its
    process to *procs*; its URL once it accepts connections, or None (said on stderr) if it did not
    within 30 s — the cluster runs on without it."""
    argv = [sys.executable, "-m", "mafka.cli.main", "console", "--bootstrap-server", bootstrap,
            "--host", HOST, "--port", str(port), "--zookeeper", zookeeper]
    for b in brokers:
        if "metrics" in b:
            argv += ["--metrics", f"{b['id']}={b['metrics']}"]
    with open(base / "console.log", "ab") as out:
        proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
    procs.append(proc)
    deadline = time.monotonic() + 30
    while time.monotonic() < deadline and proc.poll() is None:
        try:
            with socket.create_connection((HOST, port), timeout=1.0):
                return f"http://{HOST}:{port}/"
        except OSError:
            time.sleep(0.2)
    print(f"mafka cluster up: the console did not start (see {base / 'console.log'}); the cluster runs without it",
          file=sys.stderr)
    return None


def run(args: argparse.Namespace) -> int:
    from mafka.broker.config import parse_override
    from mafka.coordination.zookeeper import ZooKeeperServer

    base: Path = args.dir.resolve()
    base.mkdir(parents=True, exist_ok=True)
    extra = dict(parse_override(s) for s in args.set)
    zk = ZooKeeperServer(base / "zookeeper", client_port=args.zookeeper_port, tick_time_ms=args.tick_time_ms)
    zk.start(timeout=max(30.0, args.timeout))  # a JVM on a loaded machine may take its time
    connect = f"{HOST}:{args.zookeeper_port}"
    brokers: list[dict[str, Any]] = []
    procs: list[subprocess.Popen] = []
    #: processes beside the brokers (the console): stopped first
    helpers: list[subprocess.Popen] = []
    stopping = {"now": False}

    def stop_all(*_: Any) -> None:
        stopping["now"] = True

    signal.signal(signal.SIGTERM, stop_all)
    signal.signal(signal.SIGINT, stop_all)
    try:
        for broker_id in range(1, args.brokers + 1):
            port = args.base_port + broker_id - 1
            home = base / f"broker-{broker_id}"
            home.mkdir(exist_ok=True)
            config = home / "server.properties"
            n_dirs = max(1, args.log_dirs_per_broker)
            log_dirs = [home / "logs"] if n_dirs == 1 else [home / f"logs-{i}" for i in range(1, n_dirs + 1)]
            log_dir = ",".join(str(d) for d in log_dirs)
            own = {k: v.replace("${broker.id}", str(broker_id)) for k, v in extra.items()}
            if "mafka.metrics.port" not in own:
                own["mafka.metrics.port"] = str(-1 if args.metrics_base_port < 0 else args.metrics_base_port + broker_id - 1)
            metrics_port = int(own["mafka.metrics.port"])
            listeners = {}
            for k, spec in enumerate(args.listener, start=1):
                name, _, protocol = spec.upper().partition(":")
                listeners[name] = (protocol or name, args.base_port + k * args.brokers + broker_id - 1)
            config.write_text(broker_properties(broker_id, port, log_dir, connect, args.brokers, own, listeners))
            argv = [sys.executable, "-m", "mafka.cli.main", "server-start", str(config)]
            log_file = home / "server.log"
            with open(log_file, "ab") as out:
                proc = subprocess.Popen(argv, stdout=out, stderr=subprocess.STDOUT, start_new_session=True)
            procs.append(proc)
            brokers.append(
                {"id": broker_id, "host": HOST, "port": port, "pid": proc.pid, "config": str(config),
                 "listeners": {"PLAINTEXT": port, **{n: p for n, (_, p) in listeners.items()}},
                 "log_dirs": [str(d) for d in log_dirs], "log_file": str(log_file), "argv": argv,
                 **({"metrics": f"http://{HOST}:{metrics_port}/metrics"} if metrics_port > 0 else {})}
            )
        deadline = time.monotonic() + args.timeout
        wanted = [b["id"] for b in brokers]
        controller = -1
        while True:
            snapshots = [metadata_snapshot(b["host"], b["port"]) for b in brokers]
            if all(s is not None and s[0] == wanted and s[1] >= 0 for s in snapshots):
                first = snapshots[0]
                assert first is not None  # as the all() above says
                controller = first[1]
                break
            dead = [b["id"] for b, p in zip(brokers, procs, strict=True) if p.poll() is not None]
            if dead or time.monotonic() > deadline or stopping["now"]:
                why = f"broker(s) {dead} exited (see their server.log)" if dead else "the cluster did not form in time"
                print(f"mafka cluster up: {why}", file=sys.stderr)
                return 1
            time.sleep(0.2)
        bootstrap = ",".join(f"{b['host']}:{b['port']}" for b in brokers)
        state: dict[str, Any] = {"bootstrap": bootstrap, "zookeeper": {"connect": connect, "pid": zk.pid},
                                 "brokers": brokers}
        if args.console_port >= 0:
            console = start_console(base, bootstrap, brokers, args.console_port, helpers, connect)
            if console is not None:
                state["console"] = console
        # Written whole and renamed into place: scripts and tests poll for this file and
        # must never read it half-written.
        partial = base / "cluster.json.tmp"
        partial.write_text(json.dumps(state, indent=2) + "\n")
        os.replace(partial, base / "cluster.json")
        print(f"mafka cluster is up: {args.brokers} broker(s), controller {controller}")
        print(f"bootstrap servers: {bootstrap}")
        for b in brokers:
            if "metrics" in b:
                print(f"broker {b['id']} metrics: {b['metrics']}")
        if "console" in state:
            print(f"console: {state['console']}")
        print(f"zookeeper: {connect}   state: {base}/cluster.json   Ctrl-C stops everything")
        sys.stdout.flush()
        while not stopping["now"]:
            time.sleep(0.2)
        return 0
    finally:
        for proc in helpers:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
        stop_brokers(brokers, procs)
        zk.stop()
        try:
            os.unlink(base / "cluster.json")
        except FileNotFoundError:
            pass
