"""A plan being carried out, pipelined (plain Python, time injected); stored as ``/mafka/rebalancer/state``.

Each :class:`~mafka.rebalancer.plan.Move` is ``pending``, ``running``,
``done``, ``failed`` or ``cancelled``.  :meth:`Execution.step` is called
with what the controller knows now (the partitions being reassigned and
every partition's replicas) and answers the moves to start:

* **pipelined** (default): up to ``max_concurrent`` moves run at once and a
  new one starts as soon as any finishes;
* **batch** (``pipelined`` false, for comparison): the next
  ``max_concurrent`` start only when the whole previous batch is done, so a
  batch waits for its slowest member.

A running move is done when its partition is no longer being reassigned
and has the planned replicas; failed if it ended with other replicas
(cancelled or replaced by someone else's reassignment).  Cancelling lets
running moves finish and starts no more.  The execution is JSON (version 1)
so that a new controller resumes it where the last one stopped.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mafka.topics import TopicPartitionTuple

from .plan import Move

__all__ = ["Execution", "MoveState"]

_LOG_LIMIT = 300


@dataclass
class MoveState:
    move: Move
    state: str = "pending"
    started_ms: int | None = None
    finished_ms: int | None = None
    note: str = ""

    @property
    def tp(self) -> TopicPartitionTuple:
        return self.move.topic, self.move.partition


@dataclass
class Execution:
    """One plan's execution (see the module docstring)."""

    id: str
    created_ms: int
    moves: list[MoveState]
    max_concurrent: int = 2
    pipelined: bool = True
    status: str = "running"  # running | cancelling | done | cancelled
    origin: str = "auto"  # auto | manual
    log: list[list[Any]] = field(default_factory=list)  # [ms, text]

    @classmethod
    def start(cls, plan_id: str, moves: Sequence[Move], now_ms: int, *, max_concurrent: int, pipelined: bool,
              origin: str, decisions: Sequence[str] = ()) -> Execution:
        ex = cls(plan_id, now_ms, [MoveState(m) for m in moves], max(1, max_concurrent), pipelined, origin=origin)
        for d in decisions:
            ex.note(now_ms, d)
        ex.note(now_ms, f"plan {plan_id} ({origin}): {len(moves)} move(s), {sum(m.size for m in moves)} bytes, "
                        f"{'pipelined' if pipelined else 'in batches'} of {ex.max_concurrent}")
        return ex

    @property
    def finished(self) -> bool:
        return self.status in ("done", "cancelled")

    def note(self, now_ms: int, text: str) -> None:
        self.log.append([now_ms, text])
        del self.log[:-_LOG_LIMIT]

    def counts(self) -> dict[str, int]:
        out: dict[str, int] = {}
        for m in self.moves:
            out[m.state] = out.get(m.state, 0) + 1
        return out

    def step(self, reassigning: set[TopicPartitionTuple], replicas_now: Mapping[TopicPartitionTuple, Sequence[int]],
             now_ms: int, dirs_now: Mapping[tuple[TopicPartitionTuple, int], str] | None = None) -> list[Move]:
        """Settles finished moves; returns the moves to start now (marked running at *now_ms*).

        *dirs_now* gives each replica's log dir as the brokers report it ((partition, broker) → dir):
        a move between dirs is done once its broker reports the replica in the new dir.
        """
        for m in self.moves:
            if m.state != "running":
                continue
            if m.move.between_dirs:
                self._settle_dir_move(m, replicas_now, dirs_now or {}, now_ms)
                continue
            if m.tp in reassigning:
                continue
            now = tuple(replicas_now.get(m.tp, ()))
            m.finished_ms = now_ms
            if now == m.move.replicas:
                m.state = "done"
                self.note(now_ms, f"{m.tp[0]}-{m.tp[1]} moved from broker {m.move.source} to broker {m.move.target} "
                                  f"in {(now_ms - (m.started_ms or now_ms)) / 1000:.1f} s")
            else:
                m.state = "failed"
                m.note = f"ended with replicas {list(now)}, not {list(m.move.replicas)}"
                self.note(now_ms, f"{m.tp[0]}-{m.tp[1]}: {m.note}")
        running = sum(1 for m in self.moves if m.state == "running")
        if self.status == "cancelling":
            for m in self.moves:
                if m.state == "pending":
                    m.state = "cancelled"
            if running == 0:
                self.status = "cancelled"
                self.note(now_ms, f"plan {self.id} cancelled")
            return []
        pending = [m for m in self.moves if m.state == "pending"]
        if not pending and running == 0:
            if self.status == "running":
                self.status = "done"
                c = self.counts()
                self.note(now_ms, f"plan {self.id} done: {c.get('done', 0)} moved, {c.get('failed', 0)} failed")
            return []
        if self.pipelined:
            slots = self.max_concurrent - running
        else:
            slots = self.max_concurrent if running == 0 else 0
        starting = pending[: max(0, slots)]
        for m in starting:
            m.state = "running"
            m.started_ms = now_ms
            self.note(now_ms, f"start {m.tp[0]}-{m.tp[1]}: broker {m.move.source} -> {m.move.target} "
                              f"({m.move.size} bytes): {m.move.reason}")
        return [m.move for m in starting]

    def _settle_dir_move(self, m: MoveState, replicas_now: Mapping[TopicPartitionTuple, Sequence[int]],
                         dirs_now: Mapping[tuple[TopicPartitionTuple, int], str], now_ms: int) -> None:
        broker = m.move.source
        if dirs_now.get((m.tp, broker)) == m.move.to_dir:
            m.state, m.finished_ms = "done", now_ms
            self.note(now_ms, f"{m.tp[0]}-{m.tp[1]} moved on broker {broker} from {m.move.from_dir} to "
                              f"{m.move.to_dir} in {(now_ms - (m.started_ms or now_ms)) / 1000:.1f} s")
        elif m.tp in replicas_now and broker not in replicas_now[m.tp]:
            m.state, m.finished_ms = "failed", now_ms
            m.note = f"broker {broker} no longer hosts a replica"
            self.note(now_ms, f"{m.tp[0]}-{m.tp[1]}: {m.note}")

    def running_dir_moves(self, broker: int) -> list[Move]:
        """The moves between log dirs that *broker* is to carry out now."""
        return [m.move for m in self.moves if m.state == "running" and m.move.between_dirs and m.move.source == broker]

    def fail(self, tp: TopicPartitionTuple, now_ms: int, why: str) -> None:
        """A move that could not be submitted."""
        for m in self.moves:
            if m.tp == tp and m.state == "running":
                m.state, m.finished_ms, m.note = "failed", now_ms, why
                self.note(now_ms, f"{tp[0]}-{tp[1]}: not started: {why}")

    def defer(self, tp: TopicPartitionTuple, now_ms: int, why: str, *, say: bool = True) -> None:
        """A move just marked running goes back to pending, in its place (its target cannot take it yet)."""
        for m in self.moves:
            if m.tp == tp and m.state == "running":
                m.state, m.started_ms = "pending", None
                if say:
                    self.note(now_ms, f"{tp[0]}-{tp[1]}: waiting: {why}")

    def cancel(self, now_ms: int) -> None:
        if not self.finished:
            self.status = "cancelling"
            self.note(now_ms, f"plan {self.id}: cancel requested; running moves finish, no new ones start")

    # ------------------------------------------------------------------ JSON

    def to_json(self) -> dict[str, Any]:
        return {
            "version": 1, "id": self.id, "createdMs": self.created_ms, "status": self.status, "origin": self.origin,
            "maxConcurrent": self.max_concurrent, "pipelined": self.pipelined,
            "moves": [{**m.move.to_json(), "state": m.state, "startedMs": m.started_ms, "finishedMs": m.finished_ms,
                       "note": m.note} for m in self.moves],
            "log": self.log,
        }

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Execution:
        if d.get("version") != 1:
            raise ValueError(f"unknown rebalancer state version {d.get('version')!r}")
        moves = [MoveState(Move.from_json(m), str(m.get("state", "pending")), m.get("startedMs"), m.get("finishedMs"),
                           str(m.get("note", ""))) for m in d.get("moves", ())]
        return cls(str(d["id"]), int(d["createdMs"]), moves, int(d.get("maxConcurrent", 2)),
                   bool(d.get("pipelined", True)), str(d.get("status", "running")), str(d.get("origin", "auto")),
                   [list(e) for e in d.get("log", ())])
