"""Runs a real ZooKeeper server (standalone or an ensemble member) as a child process.

The server is started the way ``zkServer.sh`` does it, without its scripts,
``/etc/zookeeper`` or system services, as the current user::

    java -cp <classpath> -Dzookeeper.admin.enableServer=false \\
         org.apache.zookeeper.server.quorum.QuorumPeerMain <data_dir>/zoo.cfg

``zoo.cfg`` is written from the templates in the repository's ``zk/`` directory
(``zoo-single.cfg``, ``zoo-ensemble.cfg``); ZooKeeper's data goes to
``<data_dir>/data`` and its output to ``<data_dir>/zookeeper.log``.

The classpath comes from ``zookeeper_home`` / ``$ZOOKEEPER_HOME`` (an Apache
tarball: ``lib/*.jar`` and ``conf/``) or else from Debian's ``zookeeper``
package: ``/usr/share/java/zookeeper.jar`` (its manifest lists its
dependencies) plus ``slf4j-simple.jar`` so the server logs somewhere.

``python -m mafka.coordination.zookeeper --data-dir D --port P`` runs one in the
foreground until Ctrl-C.

This module blocks (it manages a process); do not call it on the reactor thread.
"""

from __future__ import annotations

import argparse
import atexit
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import time
import weakref
from collections.abc import Sequence
from pathlib import Path

__all__ = [
    "ZooKeeperServer",
    "ZooKeeperError",
    "LOOPBACK_ENSEMBLE",
    "TEMPLATE_DIR",
    "DEBIAN_JAVA_DIR",
    "find_classpath",
    "find_java",
    "four_letter_word",
    "free_loopback_ports",
    "start_ensemble",
    "main",
]

#: The repository's ``zk/`` directory (configuration templates).
TEMPLATE_DIR = Path(__file__).resolve().parents[2] / "zk"

#: Where Debian's ``libzookeeper-java`` puts ``zookeeper.jar`` and its dependencies.
DEBIAN_JAVA_DIR = Path("/usr/share/java")

#: Three members on loopback: (host, quorum port, election port, client port);
#: member *i* (from 1) is ``LOOPBACK_ENSEMBLE[i - 1]``.
LOOPBACK_ENSEMBLE: list[tuple[str, int, int, int]] = [
    ("127.0.0.1", 2888, 3888, 2181),
    ("127.0.0.1", 2889, 3889, 2182),
    ("127.0.0.1", 2890, 3890, 2183),
]

MAIN_CLASS = "org.apache.zookeeper.server.quorum.QuorumPeerMain"

DEFAULT_JVM_OPTS: tuple[str, ...] = (
    "-Xms32m",
    "-Xmx512m",
    "-XX:+UseSerialGC",
    "-Djava.net.preferIPv4Stack=true",
    "-Dzookeeper.admin.enableServer=false",
    "-Dorg.slf4j.simpleLogger.showDateTime=true",
    "-Dorg.slf4j.simpleLogger.dateTimeFormat=yyyy-MM-dd HH:mm:ss,SSS",
)

_running: weakref.WeakSet[ZooKeeperServer] = weakref.WeakSet()


class ZooKeeperError(RuntimeError):
    """ZooKeeper could not be found, started or stopped."""


def find_java() -> str:
    """``$JAVA_HOME/bin/java`` or ``java`` on PATH."""
    java_home = os.environ.get("JAVA_HOME")
    if java_home and (Path(java_home) / "bin" / "java").is_file():
        return str(Path(java_home) / "bin" / "java")
    java = shutil.which("java")
    if java is None:
        raise ZooKeeperError("no java found (install a Java runtime, e.g. Debian's default-jre-headless)")
    return java


def find_classpath(zookeeper_home: Path | None = None) -> str:
    """The server's classpath: *zookeeper_home*, else ``$ZOOKEEPER_HOME``, else Debian's jars."""
    home = zookeeper_home or (Path(os.environ["ZOOKEEPER_HOME"]) if os.environ.get("ZOOKEEPER_HOME") else None)
    if home is not None:
        home = Path(home)
        jars = sorted(home.glob("*.jar")) + sorted((home / "lib").glob("*.jar"))
        if not any(j.name.startswith("zookeeper") for j in jars):
            raise ZooKeeperError(f"no zookeeper*.jar in {home} or {home / 'lib'}")
        entries = ([home / "conf"] if (home / "conf").is_dir() else []) + jars
        return os.pathsep.join(str(e) for e in entries)
    main_jar = DEBIAN_JAVA_DIR / "zookeeper.jar"
    if main_jar.is_file():
        entries = [main_jar]
        # zookeeper.jar's manifest pulls in slf4j-api; give it a binding that logs to stderr.
        logging_jar = DEBIAN_JAVA_DIR / "slf4j-simple.jar"
        if logging_jar.is_file():
            entries.append(logging_jar)
        return os.pathsep.join(str(e) for e in entries)
    legacy = sorted(Path("/usr/share/zookeeper/lib").glob("*.jar"))  # older Debian layout
    if any(j.name.startswith("zookeeper") for j in legacy):
        return os.pathsep.join(str(j) for j in legacy)
    raise ZooKeeperError(
        "ZooKeeper not found: install Debian's 'zookeeper' package (scripts/install-system-deps.sh) "
        "or set ZOOKEEPER_HOME to an Apache ZooKeeper directory"
    )


def four_letter_word(host: str, port: int, word: str, timeout: float = 2.0) -> str:
    """Sends a four-letter word (``ruok``, ``srvr``, ``mntr``…) and returns the answer."""
    with socket.create_connection((host, port), timeout=timeout) as sock:
        sock.settimeout(timeout)
        sock.sendall(word.encode("ascii"))
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks).decode("utf-8", "replace")


def _ephemeral_low() -> int:
    """The first port of the kernel's ephemeral range (outgoing connections and ``bind(0)``)."""
    try:
        with open("/proc/sys/net/ipv4/ip_local_port_range") as f:
            return int(f.read().split()[0])
    except (OSError, ValueError, IndexError):
        return 32768


def _port_range() -> tuple[int, int]:
    """[low, high) to pick from: ``MAFKA_PORT_RANGE`` if set, else 10000 up to the ephemeral range."""
    configured = os.environ.get("MAFKA_PORT_RANGE", "")
    if configured:
        try:
            low, high = (int(part) for part in configured.split("-"))
        except ValueError:
            raise ValueError(f"MAFKA_PORT_RANGE must be LOW-HIGH, not {configured!r}") from None
        return low, high
    high = _ephemeral_low()
    if high - 10000 < 1000:  # an unusual range: fall back to the kernel's choice
        return 0, 0
    return 10000, high


def free_loopback_ports(count: int = 1, *, consecutive: bool = False) -> list[int]:
    """*count* distinct free ports on 127.0.0.1 for a server to listen on later.

    They are picked at random below the kernel's ephemeral range and checked
    by binding them: a port from ``bind(0)`` could be taken by any outgoing
    connection before the server binds it (seen as "Address already in use"
    under load), while ports below the range are only ever taken by
    explicit listeners.  With *consecutive*, the ports follow each other.
    ``MAFKA_PORT_RANGE=LOW-HIGH`` narrows the choice, so that processes
    picking ports at once (``make test``'s two lanes) cannot pick the same.
    """
    low, high = _port_range()
    rng = random.SystemRandom()
    for _ in range(200):
        if high:
            if consecutive:
                start = rng.randrange(low, high - count)
                candidates = list(range(start, start + count))
            else:
                candidates = rng.sample(range(low, high), count)
        else:
            candidates = [0] * count
        sockets: list[socket.socket] = []
        try:
            for port in candidates:
                sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
                sockets.append(sock)
                sock.bind(("127.0.0.1", port))
            ports = [sock.getsockname()[1] for sock in sockets]
            if not consecutive or ports == list(range(ports[0], ports[0] + count)):
                return ports
        except OSError:
            continue
        finally:
            for sock in sockets:
                sock.close()
    raise RuntimeError(f"no {count} free loopback ports")


def _port_open(host: str, port: int) -> bool:
    try:
        with socket.create_connection((host, port), timeout=0.3):
            return True
    except OSError:
        return False


class ZooKeeperServer:
    """One ZooKeeper server process.

    Args:
        data_dir: everything goes here: ``zoo.cfg``, ``data/`` (+ ``myid``), ``zookeeper.log``.
        client_port: the client port (on 127.0.0.1, or the member's host in an ensemble).
        tick_time_ms: ZooKeeper's tickTime; session timeouts are clamped to
            [2, 20] ticks by default (the templates raise the maximum to 60 s).
        server_id: this member's id (1-based index into *ensemble*).
        ensemble: all members as (host, quorum port, election port, client port);
            ``None`` for a standalone server.
        zookeeper_home: an Apache ZooKeeper directory; default ``$ZOOKEEPER_HOME``
            or Debian's install.
        jvm_opts: JVM options.
    """

    def __init__(
        self,
        data_dir: Path,
        *,
        client_port: int,
        tick_time_ms: int = 500,
        server_id: int | None = None,
        ensemble: list[tuple[str, int, int, int]] | None = None,
        zookeeper_home: Path | None = None,
        jvm_opts: Sequence[str] = DEFAULT_JVM_OPTS,
    ) -> None:
        self.data_dir = Path(data_dir)
        self.client_port = int(client_port)
        self.tick_time_ms = int(tick_time_ms)
        self.server_id = server_id
        self.ensemble = [tuple(m) for m in ensemble] if ensemble else None
        self.zookeeper_home = zookeeper_home
        self.jvm_opts = list(jvm_opts)
        self._proc: subprocess.Popen[bytes] | None = None
        if self.ensemble is not None:
            if server_id is None or not 1 <= server_id <= len(self.ensemble):
                raise ValueError(f"server_id must be 1..{len(self.ensemble)} for this ensemble, not {server_id}")
            host, _quorum, _election, member_client_port = self.ensemble[server_id - 1]
            if member_client_port != self.client_port:
                raise ValueError(
                    f"client_port {self.client_port} differs from member {server_id}'s {member_client_port}"
                )
            self.host = str(host)
        else:
            self.host = "127.0.0.1"

    # ------------------------------------------------------------------ paths and config

    @property
    def config_path(self) -> Path:
        return self.data_dir / "zoo.cfg"

    @property
    def log_path(self) -> Path:
        return self.data_dir / "zookeeper.log"

    @property
    def zk_data_dir(self) -> Path:
        return self.data_dir / "data"

    @property
    def connect_string(self) -> str:
        """For clients: this server, or all members of its ensemble."""
        if self.ensemble is None:
            return f"{self.host}:{self.client_port}"
        return ",".join(f"{host}:{client}" for host, _q, _e, client in self.ensemble)

    @property
    def pid(self) -> int | None:
        """The Java process id while it runs."""
        return self._proc.pid if self.running else None  # type: ignore[union-attr]

    @property
    def running(self) -> bool:
        return self._proc is not None and self._proc.poll() is None

    def render_config(self) -> str:
        """The zoo.cfg text for this server."""
        values = {
            "tick_time_ms": self.tick_time_ms,
            "data_dir": self.zk_data_dir,
            "client_port": self.client_port,
            "client_host": self.host,
        }
        if self.ensemble is None:
            template = "zoo-single.cfg"
        else:
            template = "zoo-ensemble.cfg"
            values["servers"] = "\n".join(
                f"server.{i}={host}:{quorum}:{election}"
                for i, (host, quorum, election, _client) in enumerate(self.ensemble, start=1)
            )
        path = TEMPLATE_DIR / template
        try:
            text = path.read_text()
        except FileNotFoundError as exc:
            raise ZooKeeperError(f"ZooKeeper config template missing: {path}") from exc
        # Comment lines are copied verbatim (they may name the placeholders).
        return "".join(
            line if line.lstrip().startswith("#") else line.format(**values)
            for line in text.splitlines(keepends=True)
        )

    def command(self) -> list[str]:
        """The java command line."""
        return [
            find_java(),
            *self.jvm_opts,
            f"-Dzookeeper.log.dir={self.data_dir}",
            "-cp",
            find_classpath(self.zookeeper_home),
            MAIN_CLASS,
            str(self.config_path),
        ]

    # ------------------------------------------------------------------ lifecycle

    def start(self, *, timeout: float = 30.0, wait: bool = True) -> None:
        """Writes zoo.cfg (and myid) and starts the server; with *wait*, returns once it
        serves clients (an ensemble member serves only once a quorum is up: start all
        members with ``wait=False``, then :meth:`wait_until_serving`; see
        :func:`start_ensemble`)."""
        if self.running:
            raise ZooKeeperError(f"ZooKeeper on port {self.client_port} already running (pid {self.pid})")
        if _port_open(self.host, self.client_port):
            raise ZooKeeperError(f"port {self.host}:{self.client_port} is already in use")
        command = self.command()
        self.zk_data_dir.mkdir(parents=True, exist_ok=True)
        self.config_path.write_text(self.render_config())
        if self.ensemble is not None:
            (self.zk_data_dir / "myid").write_text(f"{self.server_id}\n")
        with open(self.log_path, "ab") as log:
            log.write(f"\n=== {time.strftime('%Y-%m-%d %H:%M:%S')} {' '.join(command)}\n".encode())
            log.flush()
            self._proc = subprocess.Popen(
                command,
                cwd=self.data_dir,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=subprocess.STDOUT,
                start_new_session=True,  # a terminal's Ctrl-C goes to us; we stop it
            )
        _running.add(self)
        if wait:
            try:
                self.wait_until_serving(timeout)
            except BaseException:
                self.kill()
                raise

    def wait_until_serving(self, timeout: float = 30.0) -> str:
        """Waits until ``srvr`` reports a mode (standalone/leader/follower); returns it."""
        deadline = time.monotonic() + timeout
        while True:
            if self._proc is None:
                raise ZooKeeperError("ZooKeeper was not started")
            if self._proc.poll() is not None:
                raise ZooKeeperError(
                    f"ZooKeeper on port {self.client_port} exited with {self._proc.returncode}; "
                    f"log {self.log_path}:\n{self.log_tail()}"
                )
            mode = self.mode()
            if mode is not None:
                return mode
            if time.monotonic() >= deadline:
                raise ZooKeeperError(
                    f"ZooKeeper on port {self.client_port} not serving after {timeout:g} s; "
                    f"log {self.log_path}:\n{self.log_tail()}"
                )
            time.sleep(0.1)

    def mode(self) -> str | None:
        """``standalone``, ``leader``, ``follower``… or None when not serving."""
        try:
            answer = four_letter_word(self.host, self.client_port, "srvr", timeout=1.0)
        except OSError:
            return None
        for line in answer.splitlines():
            if line.startswith("Mode:"):
                return line.split(":", 1)[1].strip()
        return None

    def stop(self, timeout: float = 15.0) -> None:
        """SIGTERM, then SIGKILL after *timeout* seconds."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        proc.terminate()
        try:
            proc.wait(timeout)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(10)
        _running.discard(self)

    def kill(self) -> None:
        """SIGKILL (a crash: no clean shutdown)."""
        proc = self._proc
        if proc is None or proc.poll() is not None:
            return
        proc.kill()
        proc.wait(10)
        _running.discard(self)

    def log_tail(self, lines: int = 40) -> str:
        try:
            return "\n".join(self.log_path.read_text(errors="replace").splitlines()[-lines:])
        except OSError:
            return "(no log)"

    def __enter__(self) -> ZooKeeperServer:
        if not self.running:
            self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def __repr__(self) -> str:
        return f"ZooKeeperServer({str(self.data_dir)!r}, client_port={self.client_port}, pid={self.pid})"


def start_ensemble(
    base_dir: Path,
    *,
    ensemble: list[tuple[str, int, int, int]] | None = None,
    tick_time_ms: int = 500,
    timeout: float = 60.0,
    zookeeper_home: Path | None = None,
) -> list[ZooKeeperServer]:
    """Starts every member (``base_dir/zk<id>``) and waits until all serve."""
    members = ensemble or LOOPBACK_ENSEMBLE
    servers = [
        ZooKeeperServer(
            Path(base_dir) / f"zk{i}",
            client_port=member[3],
            tick_time_ms=tick_time_ms,
            server_id=i,
            ensemble=members,
            zookeeper_home=zookeeper_home,
        )
        for i, member in enumerate(members, start=1)
    ]
    deadline = time.monotonic() + timeout
    try:
        for server in servers:
            server.start(wait=False)
        for server in servers:
            server.wait_until_serving(max(0.1, deadline - time.monotonic()))
    except BaseException:
        for server in servers:
            server.kill()
        raise
    return servers


@atexit.register
def _kill_leftovers() -> None:
    for server in list(_running):
        try:
            server.kill()
        except Exception:  # noqa: BLE001 - best effort at exit
            pass


def main(argv: Sequence[str] | None = None) -> int:
    """Runs one standalone ZooKeeper in the foreground until Ctrl-C (or SIGTERM)."""
    parser = argparse.ArgumentParser(prog="python -m mafka.coordination.zookeeper", description=main.__doc__)
    parser.add_argument("--data-dir", type=Path, required=True, help="config, data and zookeeper.log go here")
    parser.add_argument("--port", type=int, default=2181, help="client port on 127.0.0.1 (default 2181)")
    parser.add_argument("--tick-time-ms", type=int, default=500, help="tickTime (default 500)")
    parser.add_argument("--zookeeper-home", type=Path, default=None, help="an Apache ZooKeeper directory")
    parser.add_argument("--timeout", type=float, default=60.0, help="seconds to wait for it to serve")
    args = parser.parse_args(argv)

    server = ZooKeeperServer(
        args.data_dir, client_port=args.port, tick_time_ms=args.tick_time_ms, zookeeper_home=args.zookeeper_home
    )

    def on_term(_signum: int, _frame: object) -> None:
        raise KeyboardInterrupt

    previous = signal.signal(signal.SIGTERM, on_term)
    # Ctrl-C must stop it even when started from a background job or a harness that
    # ignores SIGINT (an ignored SIGINT is inherited, and Python then leaves it ignored).
    previous_int = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        try:
            server.start(timeout=args.timeout)
        except ZooKeeperError as exc:
            print(f"error: {exc}", file=sys.stderr)
            return 1
        print(
            f"ZooKeeper serving on {server.connect_string} (pid {server.pid}; log {server.log_path}); Ctrl-C stops it",
            flush=True,
        )
        assert server._proc is not None
        code = server._proc.wait()
        print(f"ZooKeeper exited with {code}; log {server.log_path}", file=sys.stderr)
        return 1
    except KeyboardInterrupt:
        server.stop()
        return 0
    finally:
        signal.signal(signal.SIGTERM, previous)
        signal.signal(signal.SIGINT, previous_int)
        server.stop()


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
