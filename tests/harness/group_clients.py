"""Consumer-group members as separate processes, for the group integration tests.

* :class:`Member` — one member process: a real client driven by
  ``group_member.py`` (confluent-kafka, kafka-python, aiokafka), or
  :class:`KcatMember`, ``kcat -G`` (librdkafka through kcat's own balanced
  consumer, auto-commit).  Every member turns what its process prints into
  events (dicts with ``event`` and ``t`` = ``time.monotonic()`` of the
  process, comparable between processes on one host):
  ``assigned``/``revoked``/``lost`` (partitions), ``generation``,
  ``consumed`` (partition, offset, value), ``committed``/``commit_failed``
  (offsets), ``error``, ``closed``, and ``exited`` (return code) added here.
  For kcat, ``consumed`` comes from stdout (``-f '%p %o %s\\n'``) and
  ``assigned``/``revoked`` from the rebalance lines kcat prints on stderr
  (``% Group g rebalanced (memberid …): assigned: t [0], t [3]``).
  :meth:`~Member.stop` sends SIGTERM (the client closes: LeaveGroup for a
  dynamic member), :meth:`~Member.kill` SIGKILL.
* :class:`Group` — the members of one group: their current assignments, the
  union of what they consumed, the offsets they committed, and bounded waits on
  all of these.

Every wait is bounded and raises :class:`TimeoutError` with what each member
last reported (and where its log is).
"""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import threading
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TypeVar

from .waits import wait_until

T = TypeVar("T")

DRIVER = Path(__file__).with_name("group_member.py")
PYTHON_CLIENTS = ("confluent", "kafka-python", "aiokafka", "mafka")
ALL_CLIENTS = (*PYTHON_CLIENTS, "kcat")

Event = dict[str, Any]


class Member:
    """One group member process; see the module docstring."""

    def __init__(self, name: str, argv: list[str], log_path: Path, client: str,
                 env: dict[str, str] | None = None) -> None:
        self.name = name
        self.argv = argv
        self.log_path = log_path
        self.client = client
        self.env = env
        self.events: list[Event] = []
        self.proc: subprocess.Popen | None = None
        self.spawned_at = 0.0
        self._cond = threading.Condition()
        self._threads: list[threading.Thread] = []

    # -- life cycle ---------------------------------------------------------------------------

    def start(self) -> Member:
        self.log = open(self.log_path, "ab")
        self.log.write(f"--- {' '.join(self.argv)}\n".encode())
        self.log.flush()
        env = dict(os.environ, **(self.env or {}))
        self.spawned_at = time.monotonic()
        self.proc = subprocess.Popen(self.argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, env=env, start_new_session=True)
        self._add(event="spawned", pid=self.proc.pid, t=self.spawned_at)
        out = threading.Thread(target=self._read_stdout, name=f"{self.name}-out", daemon=True)
        err = threading.Thread(target=self._read_stderr, name=f"{self.name}-err", daemon=True)
        self._threads = [out, err]
        out.start()
        err.start()
        return self

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def alive(self) -> bool:
        return self.proc is not None and self.proc.poll() is None

    def stop(self, timeout: float = 30.0) -> int:
        """SIGTERM (the client closes the consumer); waits until the process exited; returns its code."""
        if self.alive():
            self.proc.send_signal(signal.SIGTERM)
        return self.wait_exit(timeout)

    def kill(self) -> float:
        """SIGKILL; returns the monotonic time it was sent (after waiting for the process to be gone)."""
        at = time.monotonic()
        if self.alive():
            self.proc.send_signal(signal.SIGKILL)
        self.wait_exit(10)
        return at

    def wait_exit(self, timeout: float) -> int:
        assert self.proc is not None
        try:
            code = self.proc.wait(timeout)
        except subprocess.TimeoutExpired:
            raise TimeoutError(f"{self} did not exit within {timeout:.0f} s") from None
        for thread in self._threads:
            thread.join(5)
        with self._cond:
            if not any(e["event"] == "exited" for e in self.events):
                self._add(event="exited", code=code, t=time.monotonic())
        return code

    def close(self) -> None:
        """Teardown: kill the process if it still runs, close the log."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            try:
                self.proc.wait(10)
            except subprocess.TimeoutExpired:
                pass
        for thread in self._threads:
            thread.join(2)
        if hasattr(self, "log") and not self.log.closed:
            self.log.close()

    def __repr__(self) -> str:
        pid = self.proc.pid if self.proc else None
        return f"<{self.client} member {self.name} pid {pid}>"

    # -- reading ------------------------------------------------------------------------------

    def _add(self, **event: Any) -> None:
        with self._cond:
            self.events.append(event)
            self._cond.notify_all()

    def _log(self, line: bytes) -> None:
        try:
            self.log.write(line if line.endswith(b"\n") else line + b"\n")
            self.log.flush()
        except ValueError:  # closed at teardown
            pass

    def _read_stdout(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        for line in self.proc.stdout:
            self._on_stdout(line)

    def _read_stderr(self) -> None:
        assert self.proc is not None and self.proc.stderr is not None
        for line in self.proc.stderr:
            self._log(line)
            self._on_stderr(line)

    def _on_stdout(self, line: bytes) -> None:
        try:
            event = json.loads(line)
        except ValueError:
            self._log(b"stdout (not JSON): " + line)
            return
        if event.get("event") not in ("consumed", "committed"):
            self._log(line)
        if "offsets" in event:
            event["offsets"] = {int(p): int(o) for p, o in event["offsets"].items()}
        self._add(**event)

    def _on_stderr(self, line: bytes) -> None:
        pass

    # -- observations -------------------------------------------------------------------------

    def snapshot(self, kind: str | None = None, after: float | None = None) -> list[Event]:
        with self._cond:
            return [e for e in self.events
                    if (kind is None or e["event"] == kind) and (after is None or e["t"] > after)]

    def wait_event(self, kind: str, timeout: float, predicate: Callable[[Event], bool] | None = None,
                   after: float | None = None) -> Event:
        """The first ``kind`` event (after ``after``, satisfying ``predicate``), waiting up to ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while True:
                for e in self.events:
                    if e["event"] == kind and (after is None or e["t"] > after) and (predicate is None or predicate(e)):
                        return e
                if e_exited := next((e for e in self.events if e["event"] == "exited"), None):
                    raise TimeoutError(f"{self} exited ({e_exited['code']}) before a {kind!r} event\n{self.tail()}")
                remaining = deadline - time.monotonic()
                if remaining <= 0:
                    raise TimeoutError(f"{self}: no {kind!r} event within {timeout:.1f} s\n{self.tail()}")
                self._cond.wait(min(remaining, 0.5))

    def assignment(self) -> list[int] | None:
        """The partitions held now (eager protocol: an ``assigned`` event gives the whole set, a
        revoke or loss empties it); None before the first assignment."""
        current: list[int] | None = None
        for e in self.snapshot():
            if e["event"] == "assigned":
                current = list(e["partitions"])
            elif e["event"] in ("revoked", "lost") and current is not None:
                current = [p for p in current if p not in e["partitions"]]
        return current

    def consumed_unassigned(self) -> list[Event]:
        """Messages this member printed from a partition it did not hold at that moment (by the
        order of its events; only meaningful where one stream carries both, not for kcat)."""
        current: set[int] = set()
        out = []
        for e in self.snapshot():
            if e["event"] == "assigned":
                current = set(e["partitions"])
            elif e["event"] in ("revoked", "lost"):
                current -= set(e["partitions"])
            elif e["event"] == "consumed" and e["partition"] not in current:
                out.append(e)
        return out

    def last_assigned(self) -> Event | None:
        events = self.snapshot("assigned")
        return events[-1] if events else None

    def consumed(self, after: float | None = None) -> list[Event]:
        return self.snapshot("consumed", after)

    def committed(self) -> list[tuple[float, int, int]]:
        """(t, partition, offset) of every successful commit this member reported."""
        return [(e["t"], p, o) for e in self.snapshot("committed") for p, o in e["offsets"].items()]

    def tail(self, n: int = 12) -> str:
        interesting = [e for e in self.snapshot() if e["event"] not in ("consumed", "committed")]
        lines = [f"  {self.name} ({self.client}, pid {self.proc.pid if self.proc else None}, log {self.log_path}):"]
        lines += [f"    {json.dumps(e)}" for e in interesting[-n:]]
        consumed, commits = self.consumed(), self.snapshot("committed")
        lines.append(f"    consumed {len(consumed)} messages, {len(commits)} commits"
                     + (f"; last consumed {consumed[-1]}" if consumed else ""))
        return "\n".join(lines)


class KcatMember(Member):
    """``kcat -G group topic -f '%p %o %s\\n' -X auto.offset.reset=earliest`` (auto-commit) as a member."""

    REBALANCE = re.compile(rb"^% Group (\S+) rebalanced \(memberid ([^)]*)\): (assigned|revoked): ?(.*)$")
    PARTITION = re.compile(rb"\[(\d+)\]")

    def _on_stdout(self, line: bytes) -> None:
        now = time.monotonic()
        text = line.rstrip(b"\n")
        parts = text.split(b" ", 2)
        if len(parts) < 2 or not parts[0].isdigit() or not parts[1].isdigit():
            self._log(b"stdout (unexpected): " + line)
            return
        value = parts[2].decode("utf-8", "replace") if len(parts) == 3 else ""
        self._add(event="consumed", partition=int(parts[0]), offset=int(parts[1]), value=value, t=now)

    def _on_stderr(self, line: bytes) -> None:
        m = self.REBALANCE.match(line.rstrip(b"\n"))
        if m is None:
            return
        partitions = sorted(int(p) for p in self.PARTITION.findall(m.group(4)))
        self._add(event=m.group(3).decode(), partitions=partitions, member_id=m.group(2).decode(),
                  generation=None, t=time.monotonic())


# ----------------------------------------------------------------------------------------------


def kcat_library_path() -> str | None:
    """``KCAT_LD`` from the environment: a directory with another ``librdkafka.so.1`` for kcat
    (the tests use Debian's kcat with its own librdkafka unless this is set)."""
    return os.environ.get("KCAT_LD") or None


def make_member(client: str, name: str, bootstrap: str, group: str, topic: str, log_dir: Path, *,
                instance_id: str | None = None, session_timeout_ms: int = 6000,
                heartbeat_interval_ms: int = 1000, commit: bool = True, assignor: str = "roundrobin",
                group_protocol: str = "classic", work_ms: float = 0.0) -> Member:
    """A member (not started) of ``group`` on ``topic`` through ``client`` (one of :data:`ALL_CLIENTS`)."""
    log_path = log_dir / f"{name}.log"
    if client == "kcat":
        if instance_id:
            raise ValueError("kcat members are dynamic here")
        # No "-o beginning": in -G mode kcat 1.7 sets every assigned partition's start offset to
        # the -o value in its rebalance callback, so each rebalance would re-read from the start
        # and ignore the committed offsets.  auto.offset.reset=earliest is for a fresh group.
        argv = ["kcat", "-b", bootstrap, "-G", group, topic, "-u",
                "-f", "%p %o %s\n",
                "-X", "auto.offset.reset=earliest",
                "-X", f"session.timeout.ms={session_timeout_ms}",
                "-X", f"heartbeat.interval.ms={heartbeat_interval_ms}",
                "-X", f"partition.assignment.strategy={assignor}",
                "-X", "auto.commit.interval.ms=500",
                "-X", "fetch.wait.max.ms=100",
                "-X", "topic.metadata.refresh.interval.ms=2000",
                "-d", "cgrp"]  # librdkafka's group log, into the member's log file
        env = {"LD_LIBRARY_PATH": kcat_library_path()} if kcat_library_path() else None
        return KcatMember(name, argv, log_path, client, env=env)
    if client not in PYTHON_CLIENTS:
        raise ValueError(f"unknown client {client!r}")
    argv = [sys.executable, str(DRIVER), "--client", client, "--bootstrap", bootstrap, "--group", group,
            "--topic", topic, "--session-timeout-ms", str(session_timeout_ms),
            "--heartbeat-interval-ms", str(heartbeat_interval_ms), "--assignor", assignor, "--debug"]
    if instance_id:
        argv += ["--group-instance-id", instance_id]
    if group_protocol != "classic":
        argv += ["--group-protocol", group_protocol]
    if work_ms:
        argv += ["--work-ms", str(work_ms)]
    if commit:
        argv.append("--commit")
    return Member(name, argv, log_path, client)


class Group:
    """The members of one consumer group (started and stopped by the test)."""

    def __init__(self, client: str, bootstrap: str, group: str, topic: str, partitions: int, log_dir: Path,
                 **member_options: Any) -> None:
        self.client = client
        self.bootstrap = bootstrap
        self.group = group
        self.topic = topic
        self.partitions = partitions
        self.log_dir = log_dir
        self.member_options = member_options
        self.members: dict[str, Member] = {}
        #: every member that ever ran (restarts keep the old process's events under "name#n")
        self.history: list[Member] = []

    def add(self, name: str, client: str | None = None, **options: Any) -> Member:
        member = make_member(client or self.client, name, self.bootstrap, self.group, self.topic, self.log_dir,
                             **{**self.member_options, **options})
        if name in self.members:
            self.members[name].close()
        self.members[name] = member
        self.history.append(member)
        return member.start()

    def live(self) -> list[Member]:
        return [m for m in self.members.values() if m.alive()]

    def close(self) -> None:
        for m in self.history:
            m.close()

    # -- assignments --------------------------------------------------------------------------

    def assignments(self, members: Iterable[Member] | None = None) -> dict[str, list[int] | None]:
        return {m.name: m.assignment() for m in (self.live() if members is None else members)}

    def balanced(self, members: Iterable[Member] | None = None, after: float | None = None) -> dict[str, list[int]] | None:
        """The assignments if every given member holds a nonempty set (assigned after ``after``),
        the sets are disjoint, cover every partition, their sizes differ by at most one, and the
        members that report a generation report the same one; else None."""
        members = list(self.live() if members is None else members)
        out: dict[str, list[int]] = {}
        generations = set()
        for m in members:
            current = m.assignment()
            last = m.last_assigned()
            if not current or last is None or (after is not None and last["t"] <= after):
                return None
            if last.get("generation") is not None:
                generations.add(last["generation"])
            out[m.name] = current
        held = [p for ps in out.values() for p in ps]
        sizes = [len(ps) for ps in out.values()]
        if sorted(held) != list(range(self.partitions)) or max(sizes) - min(sizes) > 1 or len(generations) > 1:
            return None
        return out

    def wait_balanced(self, timeout: float, members: Iterable[Member] | None = None,
                      after: float | None = None) -> dict[str, list[int]]:
        members = list(self.live() if members is None else members)
        return wait_until(lambda: self.balanced(members, after), timeout,
                          lambda: f"no balanced assignment of {self.partitions} partitions over "
                                  f"{[m.name for m in members]}: {self.assignments(members)}\n{self.explain()}")

    # -- consumption and commits ----------------------------------------------------------------

    def consumed(self, after: float | None = None) -> list[Event]:
        return [e for m in self.history for e in m.consumed(after)]

    def consumed_values(self) -> set[str]:
        return {e["value"] for e in self.consumed()}

    def wait_consumed(self, values: Iterable[str], timeout: float) -> None:
        wanted = set(values)

        def missing() -> set[str]:
            return wanted - self.consumed_values()

        wait_until(lambda: not missing(), timeout,
                   lambda: f"{len(missing())} of {len(wanted)} produced values never consumed "
                           f"(e.g. {sorted(missing())[:5]})\n{self.explain()}")

    def committed(self) -> list[tuple[float, int, int, str]]:
        """(t, partition, offset, member) of every commit any member reported, in time order."""
        return sorted((t, p, o, m.name) for m in self.history for t, p, o in m.committed())

    def last_committed(self) -> dict[int, int]:
        out: dict[int, int] = {}
        for _, p, o, _ in self.committed():
            out[p] = o
        return out

    def explain(self) -> str:
        return "\n".join(m.tail() for m in self.history)


def kcat_version() -> str:
    out = subprocess.run(["kcat", "-V"], capture_output=True, text=True, timeout=10,
                         env=dict(os.environ, **({"LD_LIBRARY_PATH": kcat_library_path()} if kcat_library_path() else {})))
    text = out.stdout + out.stderr
    return next((line.strip() for line in text.splitlines() if line.startswith("Version")), text.strip()[:200])


def close_quietly(c: Any, timeout: float = 20.0) -> None:
    """Closes a confluent-kafka consumer of a group: unsubscribes and serves the rebalance events
    through poll() first. librdkafka serving a pending assign inside close() can hang in
    rd_kafka_assign forever (librdkafka #4884); a member removed by an admin call rejoins with just
    such an assign, and a member stopping while another leaves can be handed one."""
    c.unsubscribe()
    deadline = time.monotonic() + timeout
    while c.assignment() and time.monotonic() < deadline:
        c.poll(0.2)
    c.poll(0.5)
    c.close()
