"""KazooStore on a real ZooKeeper, and the ZooKeeper launcher.

The ``test_store_*`` behaviour suite from ``tests/unit/coordination/test_memory_store.py``
runs here again, unchanged, against KazooStore (through the ``h`` fixture
below), so MemoryStore and the real thing are held to the same behaviour.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from kazoo.client import KazooClient

from mafka.coordination.kazoo_store import KazooStore
from mafka.coordination.store import ConnectionLossError, CreateOp, NoNodeError, SetOp
from mafka.coordination.zookeeper import (
    LOOPBACK_ENSEMBLE,
    ZooKeeperError,
    ZooKeeperServer,
    four_letter_word,
    free_loopback_ports,
    start_ensemble,
)
from tests.conftest import in_reactor
from tests.harness.waits import wait_until
from tests.unit.coordination import test_memory_store as suite
from tests.unit.coordination.test_memory_store import Recorder

pytestmark = pytest.mark.integration

# The shared behaviour suite, collected here with this module's ``h``.
globals().update({name: getattr(suite, name) for name in dir(suite) if name.startswith("test_store_")})

WAIT_S = 10.0


def wait_for(predicate: Callable[[], bool], what: str = "condition", timeout: float = WAIT_S) -> None:
    """:func:`~tests.harness.waits.wait_until` in this module's argument order, polling every 10 ms."""
    wait_until(predicate, timeout, what, interval=0.01)


def expire_session(connect_string: str, store: KazooStore) -> int:
    """The classic trick: a second client joins the session (same id and password)
    and closes it; the server then expires it for the first client.  Returns the
    old session id."""
    session_id, password = in_reactor(lambda: store._client.client_id)
    intruder = KazooClient(hosts=connect_string, client_id=(session_id, password))
    intruder.start(timeout=WAIT_S)
    intruder.stop()
    intruder.close()
    return session_id


class KazooHarness:
    """The behaviour suite's harness (see test_memory_store) on a real ZooKeeper."""

    def __init__(self, connect_string: str, base: str) -> None:
        self.connect_string = connect_string
        self.base = base
        self.stores: list[KazooStore] = []
        self.store = self.new_store()

    def p(self, path: str) -> str:
        return self.base + path

    def new_store(self, listener: Any = None) -> KazooStore:
        store = KazooStore(self.connect_string, session_timeout_ms=6000)
        if listener is not None:
            store.add_session_listener(listener)
        self.stores.append(store)
        self.call(store.start)
        return store

    def call(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        return in_reactor(fn, *args, timeout=WAIT_S, **kwargs)

    def settle(self) -> None:
        time.sleep(0.2)  # room for a stray event to arrive…
        in_reactor(lambda: None, timeout=WAIT_S)  # …and be run on the reactor

    def wait_for(self, predicate: Callable[[], bool], what: str = "condition") -> None:
        wait_for(predicate, what)

    def expire(self, store: KazooStore) -> None:
        old = expire_session(self.connect_string, store)
        wait_for(lambda: store.connected and store.session_id not in (0, old), "a new session after expiry")

    def close(self) -> None:
        for store in self.stores:
            self.call(store.stop)


@pytest.fixture
def h(zookeeper: ZooKeeperServer, zk_base: str) -> Iterator[KazooHarness]:
    harness = KazooHarness(zookeeper.connect_string, zk_base)
    try:
        yield harness
    finally:
        harness.close()


# --------------------------------------------------------------------------- KazooStore only


def test_everything_runs_on_the_reactor_thread(h: KazooHarness) -> None:
    reactor_thread = in_reactor(threading.current_thread)
    assert reactor_thread is not threading.current_thread()
    seen: dict[str, threading.Thread] = {}

    class Listener:
        def session_lost(self) -> None:
            seen["lost"] = threading.current_thread()

        def session_expired(self) -> None:
            seen["expired"] = threading.current_thread()

        def session_established(self) -> None:
            seen["established"] = threading.current_thread()

    store = h.new_store(Listener())
    path = h.p("/threads")

    def record(name: str) -> Callable[[Any], Any]:
        def callback(value: Any) -> Any:
            seen[name] = threading.current_thread()
            return value

        return callback

    def start_ops() -> None:
        store.watch_data(path, lambda: seen.setdefault("data-watch", threading.current_thread()))
        store.watch_children(h.p(""), lambda: seen.setdefault("child-watch", threading.current_thread()))
        store.create(path, b"x").addCallback(record("create"))
        store.get(h.p("/absent")).addErrback(record("errback")).addErrback(lambda _f: None)
        store.get_many([h.p("/absent"), h.p("")]).addCallback(record("get_many"))
        store.transactions([[CreateOp(h.p("/batched"))], [CreateOp(h.p("/batched"))]]).addCallback(
            record("transactions")
        )

    in_reactor(start_ops)
    batched = {"get_many", "transactions"}
    wait_for(lambda: {"create", "errback", "data-watch", "child-watch"} | batched <= seen.keys(), "callbacks")
    h.expire(store)
    wait_for(lambda: {"lost", "expired", "established"} <= seen.keys(), "session events")
    assert {name: thread for name, thread in seen.items() if thread is not reactor_thread} == {}


def test_errors_are_translated_and_name_the_path(h: KazooHarness) -> None:
    with pytest.raises(NoNodeError, match="/absent") as info:
        h.call(h.store.get, h.p("/absent"))
    assert type(info.value.__cause__).__module__.startswith("kazoo")


def test_session_expiry_deletes_ephemerals_and_rearms_watches(h: KazooHarness) -> None:
    listener = Recorder()
    owner = h.new_store(listener)
    observer = h.store
    ids = h.p("/brokers/ids")
    h.call(observer.ensure_path, ids)
    h.call(owner.create, ids + "/1", b"{}", ephemeral=True)
    owner_watch, observer_watch = Recorder(), Recorder()
    h.call(owner.watch_children, ids, owner_watch)
    h.call(observer.watch_children, ids, observer_watch)
    first = owner.session_id

    h.expire(owner)

    wait_for(lambda: [e for e in listener.events if e != "lost"] == ["established", "expired", "established"])
    assert h.call(observer.get_children, ids) == []
    wait_for(lambda: observer_watch.calls >= 1, "the observer's watch saw the ephemeral go")
    assert owner.session_id not in (0, first)
    # The owner's watch survived the new session: it is armed again and still fires.
    before = owner_watch.calls
    h.call(observer.create, ids + "/2")
    wait_for(lambda: owner_watch.calls > before, "owner's watch after the new session")
    # And the new session owns new ephemerals.
    h.call(owner.create, ids + "/1", b"{}", ephemeral=True)
    assert h.call(observer.get, ids + "/1")[1].ephemeral_owner == owner.session_id


def test_connection_loss_keeps_the_session_and_watches(
    tmp_path: Path, reactor_thread: object
) -> None:
    """A server restart within the session timeout: session_lost, the same session
    comes back (ephemerals kept, no session_established), watches re-armed."""
    port = free_loopback_ports(1)[0]
    # A 30 s session (tickTime 2 s allows up to 40 s): the restart below must stay within it,
    # and a JVM restart on a loaded machine has been seen to take more than 10 s.
    server = ZooKeeperServer(tmp_path / "zk", client_port=port, tick_time_ms=2000)
    server.start(timeout=30)
    # kazoo waits up to session timeout / number of hosts for a connection attempt's handshake.
    # A reconnection that reaches the restarted server before it is ready can get no answer at
    # all and use up that whole wait. With one host that is the whole session, and the server
    # expires the session (seen once in ~20 runs). Naming the server twice halves the wait, so a
    # second attempt fits inside the session.
    twice = f"{server.connect_string},{server.connect_string}"
    store = KazooStore(twice, session_timeout_ms=30000, operation_timeout_s=60)
    impatient = KazooStore(twice, session_timeout_ms=30000, operation_timeout_s=0.5)
    listener, watch = Recorder(), Recorder()
    store.add_session_listener(listener)
    try:
        in_reactor(store.start, timeout=WAIT_S)
        in_reactor(impatient.start, timeout=WAIT_S)
        session = store.session_id
        in_reactor(store.create, "/eph", b"", ephemeral=True, timeout=WAIT_S)
        in_reactor(store.create, "/dir", timeout=WAIT_S)
        in_reactor(store.watch_children, "/dir", watch)

        server.kill()
        wait_for(lambda: listener.events == ["established", "lost"], "session_lost")
        # Each store has its own connection thread: kazoo fails the requests queued when that
        # thread notices the drop with a plain ConnectionLoss (seen once, under two suites at once,
        # when the impatient store noticed after the get below was queued).  Once it has noticed
        # (it reports the loss after failing what was queued), a request waits.
        wait_for(lambda: not impatient.connected, "the impatient store's session_lost")
        # While it is down, operations wait for it, up to the operation timeout.
        with pytest.raises(ConnectionLossError, match="no answer within 0.5 s"):
            in_reactor(impatient.get, "/eph", timeout=WAIT_S)
        # A batch gives up after the operation timeout without any answer; its transactions'
        # outcomes are unknown (queued in kazoo, they may still be applied after the reconnection).
        with pytest.raises(ConnectionLossError, match="no answer within 0.5 s"):
            in_reactor(impatient.get_many, ["/eph", "/dir"], timeout=WAIT_S)
        outcomes = in_reactor(impatient.transactions, [[CreateOp("/maybe")], [SetOp("/dir", b"")]], timeout=WAIT_S)
        assert [type(o) for o in outcomes] == [ConnectionLossError, ConnectionLossError]
        queued = threading.Event()
        in_reactor(lambda: store.create("/queued").addCallback(lambda _: queued.set()) and None)
        server.start(timeout=30)
        # Each attempt may take up to 15 s (see above): allow several.
        wait_for(lambda: store.connected, "reconnection", 75)
        assert store.session_id == session
        assert listener.events == ["established", "lost"]
        assert in_reactor(store.exists, "/eph", timeout=WAIT_S) is not None
        assert queued.wait(WAIT_S), "an operation issued while disconnected ran after reconnection"

        before = watch.calls
        in_reactor(store.create, "/dir/after-restart", timeout=WAIT_S)
        wait_for(lambda: watch.calls > before, "the watch after reconnection")
        # Stopping a kazoo client blocks (in a worker thread) until its connection thread ends,
        # and one still inside a reconnection attempt ends only when that attempt times out:
        # let the impatient store reconnect too before it is stopped.
        wait_for(lambda: impatient.connected, "the impatient store's reconnection", 75)
    finally:
        in_reactor(store.stop, timeout=60)
        in_reactor(impatient.stop, timeout=60)
        server.stop()


def test_start_times_out_without_a_server(reactor_thread: object) -> None:
    port = free_loopback_ports(1)[0]
    store = KazooStore(f"127.0.0.1:{port}", connect_timeout_s=1.0)
    started = time.monotonic()
    with pytest.raises(ConnectionLossError, match="within 1 s"):
        in_reactor(store.start, timeout=WAIT_S)
    assert time.monotonic() - started < 5
    assert store.session_id == 0
    in_reactor(store.stop, timeout=WAIT_S)


# --------------------------------------------------------------------------- the launcher


def test_launcher_files_and_four_letter_words(zookeeper: ZooKeeperServer) -> None:
    assert zookeeper.running and zookeeper.pid and zookeeper.pid > 0
    assert four_letter_word("127.0.0.1", zookeeper.client_port, "ruok") == "imok"
    assert zookeeper.mode() == "standalone"
    cfg = zookeeper.config_path.read_text()
    assert f"clientPort={zookeeper.client_port}\n" in cfg
    assert f"tickTime={zookeeper.tick_time_ms}\n" in cfg
    assert f"dataDir={zookeeper.zk_data_dir}\n" in cfg
    assert "admin.enableServer=false" in cfg
    assert not [line for line in cfg.splitlines() if "{" in line and not line.startswith("#")]
    assert zookeeper.log_path.stat().st_size > 0
    assert (zookeeper.zk_data_dir / "version-2").is_dir()
    # Its port is taken: a second server there refuses to start.
    with pytest.raises(ZooKeeperError, match="in use"):
        ZooKeeperServer(zookeeper.data_dir.parent / "other", client_port=zookeeper.client_port).start()


def test_launcher_validates_ensemble_arguments(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match="server_id"):
        ZooKeeperServer(tmp_path, client_port=2181, ensemble=LOOPBACK_ENSEMBLE)
    with pytest.raises(ValueError, match="differs"):
        ZooKeeperServer(tmp_path, client_port=2181, server_id=2, ensemble=LOOPBACK_ENSEMBLE)
    member = ZooKeeperServer(tmp_path, client_port=2183, server_id=3, ensemble=LOOPBACK_ENSEMBLE)
    assert member.connect_string == "127.0.0.1:2181,127.0.0.1:2182,127.0.0.1:2183"
    lines = [line for line in member.render_config().splitlines() if line and not line.startswith("#")]
    assert lines[-3:] == [
        "server.1=127.0.0.1:2888:3888",
        "server.2=127.0.0.1:2889:3889",
        "server.3=127.0.0.1:2890:3890",
    ]
    assert "clientPort=2183" in lines and "tickTime=500" in lines
    assert member.pid is None and not member.running


def test_three_node_ensemble_serves(tmp_path: Path, reactor_thread: object) -> None:
    ports = free_loopback_ports(9)
    members = [("127.0.0.1", ports[i], ports[i + 3], ports[i + 6]) for i in range(3)]
    servers = start_ensemble(tmp_path, ensemble=members, tick_time_ms=200, timeout=45)
    stores: list[KazooStore] = []
    try:
        modes = sorted(s.mode() or "" for s in servers)
        assert modes == ["follower", "follower", "leader"]
        assert (tmp_path / "zk2" / "data" / "myid").read_text().strip() == "2"
        assert f"server.3=127.0.0.1:{ports[2]}:{ports[5]}" in servers[0].config_path.read_text()
        assert servers[0].connect_string == ",".join(f"127.0.0.1:{p}" for p in ports[6:])
        # Write through member 1, read through member 3 (after a sync-like round trip).
        for port in (ports[6], ports[8]):
            store = KazooStore(f"127.0.0.1:{port}", session_timeout_ms=6000)
            stores.append(store)
            in_reactor(store.start, timeout=WAIT_S)
        in_reactor(stores[0].create, "/ensemble/hello", b"world", makepath=True, timeout=WAIT_S)
        wait_for(lambda: in_reactor(stores[1].exists, "/ensemble/hello", timeout=WAIT_S) is not None, "replication")
        assert in_reactor(stores[1].get, "/ensemble/hello", timeout=WAIT_S)[0] == b"world"
        # The quorum survives one member's crash.
        leader = next(s for s in servers if s.mode() == "leader")
        survivors = [s for s in servers if s is not leader]
        leader.kill()
        wait_for(lambda: sorted(s.mode() or "" for s in survivors) == ["follower", "leader"], "a new leader", 30)
    finally:
        for store in stores:
            in_reactor(store.stop, timeout=WAIT_S)
        for server in servers:
            server.stop()
    assert all(not s.running for s in servers)


def test_module_main_runs_in_the_foreground_until_interrupted(tmp_path: Path) -> None:
    port = free_loopback_ports(1)[0]
    # Started with SIGINT ignored, as a background job of a non-interactive shell is (and
    # everything under it inherits): the launcher must still stop on Ctrl-C.
    proc = subprocess.Popen(
        [sys.executable, "-m", "mafka.coordination.zookeeper", "--data-dir", str(tmp_path), "--port", str(port)],
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_IGN),
    )
    jvm = None
    try:
        line = _readline(proc, 30)
        assert f"serving on 127.0.0.1:{port}" in line, line
        match = re.search(r"pid (\d+)", line)
        assert match, line
        jvm = int(match.group(1))
        assert four_letter_word("127.0.0.1", port, "ruok") == "imok"
        proc.send_signal(signal.SIGINT)
        # The launcher gives the JVM 15 s after SIGTERM, then SIGKILLs it and waits up to 10 s.
        assert proc.wait(40) == 0
        wait_for(lambda: not _alive(jvm), "the JVM to exit", 15)
        with pytest.raises(OSError):
            four_letter_word("127.0.0.1", port, "ruok", timeout=1)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(10)
        if jvm is not None and _alive(jvm):  # the JVM runs in its own session: not killed with the launcher
            os.kill(jvm, signal.SIGKILL)


def _readline(proc: subprocess.Popen[str], timeout: float) -> str:
    out: list[str] = []
    reader = threading.Thread(target=lambda: out.append(proc.stdout.readline() if proc.stdout else ""), daemon=True)
    reader.start()
    reader.join(timeout)
    assert out and out[0], f"no output from the launcher within {timeout} s"
    return out[0]


def _alive(pid: int) -> bool:
    """Whether *pid* runs (a zombie awaiting its parent counts as gone)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] != "Z"
    except OSError:
        return False
