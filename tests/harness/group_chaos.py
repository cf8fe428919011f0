"""A consumer group kept alive through a chaos run, and the checks of what it did (``scripts/chaos_run.py``).

:class:`GroupUnderChaos` runs ``members`` group members (:mod:`.group_clients`:
``group_member.py --commit`` over confluent-kafka, kafka-python or aiokafka;
synchronous commit of offset+1 after each message printed: at-least-once) on
the chaos topic.  A supervisor thread keeps ``members`` processes alive: a
member whose process exited is started again, and so is a *stuck* one — one
that holds a partition on which a value acknowledged more than ``stuck_s``
seconds ago is still unconsumed while nobody consumed on it for ``stuck_s``
(if no live member holds such a partition, the member silent the longest is
restarted).  Every restart is recorded with its reason; they are part of the
figures, not hidden.

:func:`check_group` checks the events every member process printed (all
restarts included) against the producer's acknowledgements, the partition
contents read back after the run and the committed offsets read back at the end:

* **at-least-once** — every acknowledged (partition, offset, value) was consumed
  by some member at that offset with that value; a value consumed at an offset
  must be the value acknowledged there (or read back there after the run);
* **commit floor** — per partition, a successful commit reported by member M
  must not be below the highest commit any member reported successful *before*
  M was assigned that partition.  Commits may go backwards in time order only
  across a rebalance: a new owner restarts from the committed offset it
  fetched, which is at least that floor, and may re-commit offsets an old
  owner committed after the assignment, but never below the floor.  Precisely:
  a commit of offset o by M belongs to the message at o - 1 that M printed
  before it; "assigned" is M's last ``assigned`` event (listing the partition)
  before that message, in M's own event stream; "acknowledged before" means
  another member's ``committed`` event is earlier (it is printed after the
  commit returned).  A commit of a message M never printed, or printed before
  M was ever assigned the partition, is a violation too.  (One printed after
  M's revoke callback is counted, not failed: aiokafka goes on fetching until
  it rejoined, and its commit carries the old generation, still valid);
* **final offsets** — the committed offsets read back with a fresh consumer
  (OffsetFetch through confluent-kafka ``committed()``) equal the end offset
  (high watermark) of every partition.

Figures: rebalances (distinct generations seen in ``assigned`` events, minus
the first), the longest time a partition was held by no member (by the
members' own ``assigned``/``revoked``/``lost``/exit events), redeliveries,
commit failures by error, member restarts by reason.
"""

from __future__ import annotations

import bisect
import re
import threading
import time
import uuid
from collections import Counter, defaultdict
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from .checker import ACKED, Attempt, Consumed
from .group_clients import Event, Group, Member

NO_OFFSET = -1001


def read_committed(bootstrap: str, group: str, topic: str, partitions: int, timeout: float = 60.0) -> dict[int, int]:
    """The group's committed offsets (a fresh confluent-kafka consumer's ``committed()``: OffsetFetch,
    without joining), retried until every partition answers without error; -1001 for none."""
    from confluent_kafka import Consumer, KafkaException, TopicPartition

    deadline = time.monotonic() + timeout
    last: object = None
    while True:
        consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group, "enable.auto.commit": False})
        try:
            result = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], timeout=10)
            if all(tp.error is None for tp in result):
                return {tp.partition: tp.offset for tp in result}
            last = [str(tp.error) for tp in result]
        except KafkaException as exc:
            last = exc
        finally:
            consumer.close()
        if time.monotonic() >= deadline:
            raise TimeoutError(f"no OffsetFetch answer for group {group} within {timeout:.0f} s (last: {last})")
        time.sleep(0.5)


def error_kind(text: str) -> str:
    """A short name for a commit error: librdkafka's code name, or the exception class."""
    m = re.search(r"code=([A-Z_]+)", text)
    if m:
        return m.group(1)
    m = re.match(r"([A-Za-z_][A-Za-z0-9_]*)\(", text)
    if m:
        return m.group(1)
    m = re.search(r"\b([A-Z][A-Z_]{5,})\b", text)
    return m.group(1) if m else text[:80]


@dataclass
class Restart:
    t: float
    name: str
    reason: str


class GroupUnderChaos:
    """``members`` members of a fresh group on ``topic``, restarted when they exit or get stuck."""

    def __init__(self, client: str, bootstrap: str, topic: str, partitions: int, log_dir: Path, *,
                 members: int = 3, session_timeout_ms: int = 6000, stuck_s: float = 45.0,
                 acks: Callable[[], list[tuple[float, int, int]]] | None = None,
                 say: Callable[[str], None] = print) -> None:
        self.group = Group(client, bootstrap, f"chaos-group-{uuid.uuid4().hex[:8]}", topic, partitions, log_dir,
                           session_timeout_ms=session_timeout_ms, commit=True)
        self.names = [f"m{i}" for i in range(members)]
        self.partitions = partitions
        self.stuck_s = stuck_s
        self.acks = acks or (lambda: [])
        self.say = say
        self.restarts: list[Restart] = []
        self.started_at = 0.0
        #: when the first balanced assignment was seen (set by wait_balanced)
        self.balanced_at: float | None = None
        self._generation = dict.fromkeys(self.names, 0)
        self._stop = threading.Event()
        self._lock = threading.Lock()
        self._thread = threading.Thread(target=self._supervise, name="group-supervisor", daemon=True)
        self._last_stuck_restart = 0.0
        # incremental view of the events: member object id -> cursor; partition -> highest consumed offset
        self._cursor: dict[int, int] = {}
        self._consumed_max: dict[int, int] = {}
        self._consumed_at: dict[int, float] = {}
        self._last_event: dict[int, float] = {}

    @property
    def name(self) -> str:
        return self.group.group

    # -- life cycle ---------------------------------------------------------------------------

    def start(self) -> GroupUnderChaos:
        self.started_at = time.monotonic()
        for name in self.names:
            self.group.add(name)
        self._thread.start()
        return self

    def stop(self) -> None:
        """Stops supervising, then SIGTERMs every member (SIGKILL if one does not close in 20 s)."""
        self._stop.set()
        self._thread.join(30)
        for m in self.group.live():
            try:
                m.stop(20)
            except TimeoutError:
                m.kill()

    def close(self) -> None:
        self._stop.set()
        self.group.close()

    def wait_balanced(self, timeout: float) -> dict[str, list[int]]:
        out = self.group.wait_balanced(timeout)
        self.balanced_at = time.monotonic()
        return out

    def _restart(self, name: str, reason: str) -> None:
        with self._lock:
            old = self.group.members.get(name)
            if old is not None and old.alive():
                try:
                    old.stop(10)
                except TimeoutError:
                    old.kill()
            self._generation[name] += 1
            self.restarts.append(Restart(time.monotonic(), name, reason))
            self.say(f"group: restarting member {name} ({reason})")
            if not self._stop.is_set():
                self.group.add(name)

    # -- supervision --------------------------------------------------------------------------

    def _scan(self) -> None:
        for m in list(self.group.history):
            key = id(m)
            with m._cond:
                new = m.events[self._cursor.get(key, 0):]
                self._cursor[key] = len(m.events)
            for e in new:
                self._last_event[key] = max(self._last_event.get(key, 0.0), e["t"])
                if e["event"] == "consumed":
                    p = e["partition"]
                    if e["offset"] > self._consumed_max.get(p, -1):
                        self._consumed_max[p] = e["offset"]
                    self._consumed_at[p] = max(self._consumed_at.get(p, 0.0), e["t"])

    def _stuck_partitions(self, now: float) -> list[int]:
        """Partitions with a value acknowledged more than stuck_s ago still unconsumed, on which
        nothing was consumed for stuck_s."""
        old_acks: dict[int, int] = {}
        for t, p, o in self.acks():
            if t < now - self.stuck_s and o > old_acks.get(p, -1):
                old_acks[p] = o
        out = []
        for p, o in old_acks.items():
            if o > self._consumed_max.get(p, -1) and self._consumed_at.get(p, self.started_at) < now - self.stuck_s:
                out.append(p)
        return out

    def _supervise(self) -> None:
        while not self._stop.wait(0.5):
            try:
                self._supervise_once()
            except Exception as exc:  # noqa: BLE001 - keep supervising
                self.say(f"group supervisor error: {exc!r}")

    def _supervise_once(self) -> None:
        for name in self.names:
            m = self.group.members.get(name)
            if m is not None and not m.alive() and not self._stop.is_set():
                code = m.proc.poll() if m.proc is not None else None
                self._restart(name, f"exited with code {code}")
        self._scan()
        now = time.monotonic()
        if now - max(self._last_stuck_restart, self.started_at) < self.stuck_s:
            return
        stuck = self._stuck_partitions(now)
        if not stuck:
            return
        holders = [(name, m) for name, m in self.group.members.items()
                   if m.alive() and set(m.assignment() or []) & set(stuck)]
        if holders:
            for name, m in holders:
                self._restart(name, f"stuck: holds {sorted(set(m.assignment() or []) & set(stuck))} with "
                                    f"acknowledged values unconsumed for {self.stuck_s:.0f} s")
        else:
            name, m = min(self.group.members.items(), key=lambda nm: self._last_event.get(id(nm[1]), 0.0))
            self._restart(name, f"stuck: partitions {stuck} held by no member for {self.stuck_s:.0f} s; "
                                f"this member was silent the longest")
        self._last_stuck_restart = time.monotonic()

    # -- the end ------------------------------------------------------------------------------

    def wait_done(self, acked: Mapping[tuple[int, int], bytes], ends: Mapping[int, int], timeout: float) -> bool:
        """Waits until every acknowledged value was consumed and the reported commits reached ``ends``."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            if not self.missing(acked) and all(self.last_committed().get(p, NO_OFFSET) >= end
                                               for p, end in ends.items() if end > 0):
                return True
            time.sleep(0.5)
        return False

    def missing(self, acked: Mapping[tuple[int, int], bytes]) -> list[tuple[int, int]]:
        """The acknowledged positions not consumed yet; one acknowledged without an offset (-1) counts as
        consumed once its value was, in its partition."""
        consumed = self.group.consumed()
        seen = {(e["partition"], e["offset"]) for e in consumed}
        values = {(e["partition"], e["value"]) for e in consumed}
        def consumed_yet(position: tuple[int, int], value: bytes) -> bool:
            partition, offset = position
            return position in seen if offset >= 0 else (partition, value.decode()) in values

        return sorted(k for k, v in acked.items() if not consumed_yet(k, v))

    def last_committed(self) -> dict[int, int]:
        out: dict[int, int] = {}
        for _, p, o, _ in self.group.committed():
            out[p] = max(out.get(p, NO_OFFSET), o)
        return out


# ----------------------------------------------------------------------------------------------
# Checks


@dataclass
class GroupReport:
    client: str = ""
    group: str = ""
    acked: int = 0
    consumed: int = 0
    #: (partition, offset, acknowledged value) never consumed at that offset with that value
    not_consumed: list[tuple[int, int, str]] = field(default_factory=list)
    #: (partition, offset) -> the distinct values consumed there, when one differs from the acknowledged
    #: value or the value read back after the run
    wrong_value: dict[tuple[int, int], list[str]] = field(default_factory=dict)
    #: (partition, offset, member, t, floor, assigned at) of commits below the floor
    commit_regressions: list[tuple[int, int, str, float, int, float]] = field(default_factory=list)
    #: (partition, offset, member, t) of commits of a message the member did not print while holding the
    #: partition
    commit_unassigned: list[tuple[int, int, str, float]] = field(default_factory=list)
    #: information only: successful commits of messages printed after the member's revoke callback
    commit_after_revoke: int = 0
    #: commits below an earlier one in time order (a new owner's re-commits, or regressions)
    allowed_backwards: int = 0
    commits: int = 0
    commit_failures: Counter = field(default_factory=Counter)
    final_committed: dict[int, int] = field(default_factory=dict)
    ends: dict[int, int] = field(default_factory=dict)
    final_error: str | None = None
    done: bool = False
    rebalances: int = 0
    generations: list[int] = field(default_factory=list)
    #: partition -> (longest unowned seconds, starting at (relative seconds))
    unowned: dict[int, tuple[float, float]] = field(default_factory=dict)
    duplicates: int = 0
    consumed_unassigned: int = 0
    restarts: Counter = field(default_factory=Counter)
    members_run: int = 0
    errors: Counter = field(default_factory=Counter)

    @property
    def final_ok(self) -> bool:
        return self.final_error is None and self.final_committed == self.ends

    @property
    def ok(self) -> bool:
        return not (self.not_consumed or self.wrong_value or self.commit_regressions or self.commit_unassigned) \
            and self.final_ok and self.acked > 0

    def summary(self, t0: float = 0.0, examples: int = 5) -> str:
        lines = [f"group {self.group} ({self.client}): {self.members_run} member processes ran "
                 f"(restarts: {dict(self.restarts) or 'none'}); consumed {self.consumed} messages "
                 f"for {self.acked} acknowledged; caught up: {self.done}"]
        ok = "OK" if not (self.not_consumed or self.wrong_value) else "FAIL"
        lines.append(f"at-least-once: {ok} — {len(self.not_consumed)} acknowledged (partition, offset, value) "
                     f"never consumed{': e.g. ' + str(self.not_consumed[:examples]) if self.not_consumed else ''}; "
                     f"{len(self.wrong_value)} offsets consumed with another value"
                     f"{': e.g. ' + str(list(self.wrong_value.items())[:examples]) if self.wrong_value else ''}")
        ok = "OK" if not (self.commit_regressions or self.commit_unassigned) else "FAIL"
        lines.append(f"commit floor: {ok} — {self.commits} successful commits; "
                     f"{len(self.commit_regressions)} below the highest commit acknowledged before the "
                     f"committer was assigned the partition"
                     + (f" (partition, offset, member, t, floor, assigned at): "
                        f"{[(p, o, m, round(t - t0, 1), f, round(a - t0, 1)) for p, o, m, t, f, a in self.commit_regressions[:examples]]}"
                        if self.commit_regressions else "")
                     + f"; {len(self.commit_unassigned)} of a message the member did not print after an assignment"
                     + (f": {self.commit_unassigned[:examples]}" if self.commit_unassigned else "")
                     + f"; {self.allowed_backwards} commits below an earlier one in time order "
                       f"(re-commits after a rebalance; those not listed above are within the floor)")
        ok = "OK" if self.final_ok else "FAIL"
        lines.append(f"final committed offsets: {ok} — OffsetFetch {self.final_committed or self.final_error}, "
                     f"partition ends {self.ends}")
        longest = max(self.unowned.items(), key=lambda kv: kv[1][0], default=(None, (0.0, 0.0)))
        lines.append(f"rebalances: {self.rebalances} after the first balanced assignment (generations "
                     f"{self.generations[:1]}..{self.generations[-1:]}, {len(self.generations)} distinct)")
        lines.append(f"longest time with a partition unowned: {longest[1][0]:.1f} s (partition {longest[0]}, "
                     f"from {longest[1][1]:.1f} s); per partition "
                     f"{ {p: round(v[0], 1) for p, v in sorted(self.unowned.items())} }")
        lines.append(f"duplicates consumed (re-deliveries): {self.duplicates}; consumed while not holding the "
                     f"partition (client view): {self.consumed_unassigned}; successful commits of such "
                     f"messages: {self.commit_after_revoke}")
        lines.append(f"commit failures by error: {dict(self.commit_failures.most_common()) or 'none'}")
        if self.errors:
            lines.append(f"client errors reported: {dict(self.errors.most_common(8))}")
        return "\n".join(lines)


def _ownership(members: Iterable[Member], partitions: int, start: float, end: float) -> dict[int, tuple[float, float]]:
    """Per partition, the longest time in [start, end] no member held it (by its own events)."""
    intervals: dict[int, list[tuple[float, float]]] = defaultdict(list)
    for m in members:
        held: dict[int, float] = {}
        last_t = m.spawned_at
        for e in m.snapshot():
            last_t = max(last_t, e["t"])
            if e["event"] == "assigned":
                for p in list(held):  # eager: the new set replaces the old one
                    if p not in e["partitions"]:
                        intervals[p].append((held.pop(p), e["t"]))
                for p in e["partitions"]:
                    held.setdefault(p, e["t"])
            elif e["event"] in ("revoked", "lost"):
                for p in e["partitions"]:
                    if p in held:
                        intervals[p].append((held.pop(p), e["t"]))
            elif e["event"] in ("exited", "closing"):
                for p in list(held):
                    intervals[p].append((held.pop(p), e["t"]))
        stop = end if m.alive() else last_t
        for p, since in held.items():
            intervals[p].append((since, stop))
    out = {}
    for p in range(partitions):
        points = sorted(intervals.get(p, []))
        best, at, covered = 0.0, start, start
        for a, b in points:
            if a > covered and min(a, end) - covered > best:
                best, at = min(a, end) - covered, covered
            covered = max(covered, b)
        if end - covered > best:
            best, at = end - covered, covered
        out[p] = (max(0.0, best), at)
    return out


def check_group(runner: GroupUnderChaos, attempts: Iterable[Attempt], read_back: Iterable[Consumed],
                ends: Mapping[int, int], final: dict[int, int] | None, final_error: str | None,
                done: bool, t0: float, end: float) -> GroupReport:
    g = runner.group
    r = GroupReport(client=g.client, group=g.group, done=done, ends=dict(ends),
                    final_committed=dict(final or {}), final_error=final_error)
    r.members_run = len(g.history)
    r.restarts = Counter(x.reason.split(":")[0].split(" with")[0] for x in runner.restarts)
    attempts = list(attempts)
    # An acknowledgement without an offset (-1: librdkafka reports some retried batches so) is
    # looked for by its value in its partition, as the delivery checker does in its lost check.
    acked = {(a.partition, a.offset): a.value.decode() for a in attempts if a.status == ACKED and a.offset >= 0}
    offsetless = [(a.partition, a.value.decode()) for a in attempts if a.status == ACKED and a.offset < 0]
    r.acked = len(acked) + len(offsetless)
    log = {(c.partition, c.offset): c.value.decode() for c in read_back}

    # at-least-once, values at offsets
    consumed = g.consumed()
    r.consumed = len(consumed)
    seen: dict[tuple[int, int], set[str]] = defaultdict(set)
    for e in consumed:
        seen[(e["partition"], e["offset"])].add(e["value"])
    r.duplicates = len(consumed) - len(seen)
    for (p, o), value in sorted(acked.items()):
        if value not in seen.get((p, o), set()):
            r.not_consumed.append((p, o, value))
    consumed_values = {(e["partition"], e["value"]) for e in consumed}
    for p, value in offsetless:
        if (p, value) not in consumed_values:
            r.not_consumed.append((p, -1, value))
    for key, values in sorted(seen.items()):
        expected = {x for x in (acked.get(key), log.get(key)) if x is not None}
        if len(values | expected) > 1:
            r.wrong_value[key] = sorted(values | expected)

    # commits: floor rule
    all_commits = g.committed()  # (t, partition, offset, member name), time order
    r.commits = len(all_commits)
    by_partition: dict[int, list[tuple[float, int]]] = defaultdict(list)
    for t, p, o, _ in all_commits:
        by_partition[p].append((t, o))

    # The highest offset committed for a partition before a time: prefix maxima over the commits in
    # time order, found by bisection (a scan per commit was quadratic: minutes for a long run).
    times = {p: [t for t, _ in commits] for p, commits in by_partition.items()}
    highest: dict[int, list[int]] = {}
    for p, commits in by_partition.items():
        running: list[int] = []
        for _, o in commits:
            running.append(o if not running else max(running[-1], o))
        highest[p] = running

    def floor(p: int, before: float) -> int | None:
        n = bisect.bisect_left(times.get(p, []), before)  # commits with t < before
        return highest[p][n - 1] if n else None

    for m in g.history:
        assigned_at: dict[int, float] = {}  # partition -> its last assigned event (kept after a revoke)
        held: set[int] = set()
        # (partition, offset) -> (when the member was last assigned the partition as it printed that
        # message, whether it still held it then).  A commit of offset o belongs to the message at
        # o - 1 the member printed just before; that message's assignment is the commit's.
        consumed_under: dict[tuple[int, int], tuple[float | None, bool]] = {}
        for e in m.snapshot():
            if e["event"] == "assigned":
                # eager protocol: a new assignment event is a new (re)assignment of each partition
                assigned_at.update(dict.fromkeys(e["partitions"], e["t"]))
                held = set(e["partitions"])
            elif e["event"] in ("revoked", "lost"):
                held -= set(e["partitions"])
            elif e["event"] == "consumed":
                p = e["partition"]
                consumed_under[(p, e["offset"])] = (assigned_at.get(p), p in held)
            elif e["event"] == "committed":
                for p, o in e["offsets"].items():
                    since, holding = consumed_under.get((p, o - 1), (None, False))
                    if since is None:  # never assigned, or a message it never printed
                        r.commit_unassigned.append((p, o, m.name, e["t"]))
                        continue
                    if not holding:
                        # aiokafka goes on fetching between its revoke callback and the rejoin; the
                        # commit still carries the old generation, which the coordinator may accept
                        r.commit_after_revoke += 1
                    f = floor(p, since)
                    if f is not None and o < f:
                        r.commit_regressions.append((p, o, m.name, e["t"], f, since))
            elif e["event"] == "commit_failed":
                r.commit_failures[error_kind(str(e.get("error", "")))] += 1
            elif e["event"] == "error":
                r.errors[error_kind(str(e.get("error", "")))] += 1
        r.consumed_unassigned += len(m.consumed_unassigned())
    for _p, commits in by_partition.items():
        high = NO_OFFSET
        for _, o in commits:
            if o < high:
                r.allowed_backwards += 1
            high = max(high, o)

    generations = sorted({e["generation"] for m in g.history for e in m.snapshot("assigned")
                          if isinstance(e.get("generation"), int) and e["generation"] >= 0})
    r.generations = generations
    first_full = runner.balanced_at or _first_fully_owned(g.history, g.partitions) or runner.started_at
    first_seen: dict[int, float] = {}
    for m in g.history:
        for e in m.snapshot("assigned"):
            if isinstance(e.get("generation"), int):
                first_seen[e["generation"]] = min(first_seen.get(e["generation"], e["t"]), e["t"])
    r.rebalances = sum(1 for t in first_seen.values() if first_full < t <= end)  # not the members' stop

    r.unowned = {p: (secs, at - t0) for p, (secs, at) in _ownership(g.history, g.partitions, first_full, end).items()}
    return r


def _first_fully_owned(members: Iterable[Member], partitions: int) -> float | None:
    """The first time every partition was held by some member (by their ``assigned`` events)."""
    events: list[tuple[float, str, Event]] = sorted(
        ((e["t"], m.name + str(id(m)), e) for m in members for e in m.snapshot()
         if e["event"] in ("assigned", "revoked", "lost", "exited")), key=lambda x: x[0])
    held: dict[str, set[int]] = {}
    for t, who, e in events:
        if e["event"] == "assigned":
            held[who] = set(e["partitions"])
        elif e["event"] == "exited":
            held.pop(who, None)
        else:
            held[who] = held.get(who, set()) - set(e["partitions"])
        if set().union(*held.values()) >= set(range(partitions)):
            return t
    return None

