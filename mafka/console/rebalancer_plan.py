"""The rebalancer's plan and its progress for the console, read from ZooKeeper (``--zookeeper``).

Mafka's free-disk-first rebalancer keeps the plan it carries out (or carried out
last) in its own znode, ``/mafka/rebalancer/state`` — no Kafka API reaches it,
so the console reads it from ZooKeeper when it is given ``--zookeeper`` (``mafka
cluster up`` and the compose file give it).  Read-only, with kazoo's blocking
client in the WSGI worker threads (the console's reactor serves HTTP; nothing
here runs on it); one client, opened on first use and kept.
"""

from __future__ import annotations

import json
import threading
import time
from dataclasses import dataclass
from typing import Any

from mafka.coordination.znodes.mafka_nodes import REBALANCER_STATE_PATH
from mafka.rebalancer.execution import Execution

__all__ = ["MoveRow", "PlanReader", "PlanView", "plan_view"]

_FINISHED = ("done", "failed", "cancelled")


@dataclass(frozen=True)
class MoveRow:
    partition: str
    where: str
    size: int
    state: str
    took_s: float | None
    note: str


@dataclass(frozen=True)
class PlanView:
    id: str
    origin: str
    status: str
    pipelined: bool
    max_concurrent: int
    created_ms: int
    total: int
    finished: int
    counts: dict[str, int]
    moves: list[MoveRow]
    log: list[tuple[int, str]]


def plan_view(ex: Execution, log_lines: int = 30) -> PlanView:
    """What the rebalancer page shows of one execution (plain values)."""
    rows = []
    for m in ex.moves:
        mv = m.move
        where = (f"broker {mv.source} log dir {mv.from_dir} → {mv.to_dir}" if mv.between_dirs
                 else f"broker {mv.source} → {mv.target}")
        took = (m.finished_ms - m.started_ms) / 1000 if m.started_ms is not None and m.finished_ms is not None else None
        rows.append(MoveRow(f"{mv.topic}-{mv.partition}", where, mv.size, m.state, took, m.note))
    counts = ex.counts()
    return PlanView(ex.id, ex.origin, ex.status, ex.pipelined, ex.max_concurrent, ex.created_ms, len(ex.moves),
                    sum(counts.get(s, 0) for s in _FINISHED), counts, rows,
                    [(int(ms), str(text)) for ms, text in ex.log[-log_lines:]])


class PlanReader:
    """Reads ``/mafka/rebalancer/state`` from ZooKeeper at *connect* (any thread)."""

    def __init__(self, connect: str, timeout: float = 10.0, client_factory: Any = None) -> None:
        self.connect = connect
        self.timeout = timeout
        self._factory = client_factory
        self._client: Any = None
        self._lock = threading.Lock()

    def _zk(self) -> Any:
        with self._lock:
            if self._client is None:
                if self._factory is not None:
                    client = self._factory(self.connect)
                else:
                    from kazoo.client import KazooClient

                    client = KazooClient(hosts=self.connect, timeout=self.timeout, read_only=True)
                client.start(timeout=self.timeout)
                self._client = client
            return self._client

    def current(self) -> PlanView | None:
        """The plan being carried out or the last one; None if no plan has run.

        Raises:
            Exception: ZooKeeper did not answer, or the znode does not hold a plan (the page says so).
        """
        from kazoo.exceptions import NoNodeError

        zk = self._zk()
        try:
            data, _ = zk.get(REBALANCER_STATE_PATH)
        except NoNodeError:
            return None
        except Exception:
            self.close()  # a fresh session next time
            raise
        return plan_view(Execution.from_json(json.loads(data)))

    def close(self) -> None:
        with self._lock:
            client, self._client = self._client, None
        if client is not None:
            try:
                client.stop()
                client.close()
            except Exception:  # noqa: BLE001 - closing a broken session: nothing to do
                pass


def age(ms: int) -> str:
    """``HH:MM:SS`` of an epoch-ms time (the page's clock times)."""
    return time.strftime("%H:%M:%S", time.localtime(ms / 1000))
