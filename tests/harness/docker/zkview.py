"""Partition states read from ZooKeeper, where the ISR lives, from a probe container on the compose network.

Metadata is the wrong place to time ISR changes: as in Kafka 2.8, a leader
writes its ISR to ``/brokers/topics/T/partitions/P/state`` and brokers learn it
through the controller's UpdateMetadata seconds later (ISR change
notifications are batched), and a broker cut from the controller keeps an old
view.  :class:`ZkView` starts a container of the mafka image on the project's
network that is no part of any fault (the iptables rules name the peers they
cut, never the probe) and keeps one kazoo client in it, asked over its stdin:
a Docker SDK exec whose attached socket carries the questions in and the
answers out.
"""

from __future__ import annotations

import json
import queue
import socket
import threading
from typing import Any

from .compose import ZOOKEEPERS, ComposeCluster, client

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


class _Session:
    """One exec of the script: its stdin written to, its stdout read line by line by a thread."""

    def __init__(self, sock: Any) -> None:
        self.sock = sock
        #: the socket under the SDK's wrapper (socket.SocketIO for the engine's unix socket)
        self.raw: socket.socket = getattr(sock, "_sock", sock)
        self.raw.settimeout(None)  # the client's read timeout would end a quiet session
        self.lines: queue.Queue[str] = queue.Queue()
        self.done = threading.Event()
        threading.Thread(target=self._pump, name="zkview", daemon=True).start()

    def _pump(self) -> None:
        # imported here: the module imports (and the docker tests skip) without the SDK
        from docker.utils.socket import STDOUT, frames_iter

        buffered = b""
        try:
            for stream, data in frames_iter(self.sock, tty=False):
                if stream != STDOUT:
                    continue
                buffered += data
                while b"\n" in buffered:
                    line, buffered = buffered.split(b"\n", 1)
                    self.lines.put(line.decode(errors="replace") + "\n")
        except (OSError, ValueError):  # the socket closed under us
            pass
        finally:
            self.done.set()

    def alive(self) -> bool:
        return not self.done.is_set()

    def send(self, text: str) -> None:
        self.raw.sendall(text.encode())

    def close(self) -> None:
        """Hangs up: the script reads the end of its stdin and exits, as when ``docker exec -i`` was killed."""
        self.done.set()
        try:
            self.raw.shutdown(socket.SHUT_RDWR)  # wakes the pump
        except OSError:
            pass
        self.raw.close()


class ZkView:
    """``states(topic)`` → partition → (leader, ISR) as ZooKeeper holds them; {} when ZooKeeper does not answer."""

    def __init__(self, cluster: ComposeCluster, timeout: float = 8.0) -> None:
        self.cluster = cluster
        self.timeout = timeout
        self.name = f"{cluster.project}-zkview"
        self._session: _Session | None = None
        self._lock = threading.Lock()

    def start(self) -> ZkView:
        client(60).containers.run("mafka:latest", ["infinity"], entrypoint=["sleep"], name=self.name,
                                  network=self.cluster.network_name, detach=True, remove=True)
        self._spawn()
        return self

    def _spawn(self) -> _Session:
        hosts = ",".join(f"{z}:2181" for z in ZOOKEEPERS)
        api = client(60).api
        exec_id = api.exec_create(self.name, ["python3", "-u", "-c", _SCRIPT, hosts],
                                  stdin=True, stdout=True, stderr=False)["Id"]
        self._session = _Session(api.exec_start(exec_id, socket=True))
        return self._session

    def states(self, topic: str) -> dict[int, tuple[int, list[int]]]:
        with self._lock:
            session = self._session
            try:
                if session is None or not session.alive():
                    session = self._spawn()
                session.send(topic + "\n")
                line = session.lines.get(timeout=self.timeout)
            except (OSError, queue.Empty):
                if session is not None:
                    session.close()  # stuck or gone: the next call starts another
                return {}
            except Exception:  # noqa: BLE001 - the engine refused the exec (probe gone …): no answer
                return {}
        answer = json.loads(line)
        if "error" in answer:
            return {}
        return {int(p): (leader, list(isr)) for p, (leader, isr) in answer.items()}

    def close(self) -> None:
        if self._session is not None and self._session.alive():
            self._session.close()
        client(60).containers.get(self.name).remove(force=True)
