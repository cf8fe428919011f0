"""The free-disk-first migration plan (plain Python: reports and assignments in, moves out).

Input: each broker's disk usage (from its ``/mafka/monitor/<id>`` report),
each replica's size, the current assignment and the brokers' racks.  Output:
a :class:`Plan` of :class:`Move` s, each moving one replica of one partition
from a broker above ``threshold`` (used / capacity) to another broker, and
the reasons for every decision, taken or not.

Rules, in order:

* only brokers with a usable report take part (a missing, stale or malformed
  report is never acted on: such a broker is neither a source nor a target);
* a partition already being reassigned, or already moved by this plan, is
  not touched;
* a target never already holds a replica of the partition, never gets two
  replicas of it, and, when every broker has a ``broker.rack``, is not in the
  rack of another of its replicas;
* a move never makes its target exceed the threshold (never overfills it);
* the replica takes the moved one's place in the replica list, so the
  partition's preferred leader changes only if the moved replica was it;
  candidates that are not the preferred leader go first among equals, which
  keeps preferred leaderships spread;
* bytes moved are kept small: for the fullest broker, the smallest partition
  that alone brings it under the threshold, else the largest (fewest moves),
  repeated until it is under or nothing more can move; the target is the
  eligible broker with the most free bytes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from mafka.topics import TopicPartitionTuple

__all__ = ["BrokerDisk", "Move", "Plan", "disks_from_reports", "plan_dir_moves", "plan_moves", "replica_sizes"]


@dataclass(frozen=True, slots=True)
class BrokerDisk:
    """A broker's disk as its report gives it: bytes of capacity and used (summed over its log dirs)."""

    broker: int
    capacity: int
    used: int

    @property
    def usage(self) -> float:
        return self.used / self.capacity if self.capacity > 0 else 1.0


@dataclass(frozen=True, slots=True)
class Move:
    """One replica of ``topic``-``partition`` moving from broker ``source`` to ``target`` (``replicas`` is the
    new list); or, when ``to_dir`` is set, between two log dirs of one broker (``source == target``), done
    by that broker as AlterReplicaLogDirs does (a future log that catches up and swaps in)."""

    topic: str
    partition: int
    source: int
    target: int
    size: int
    replicas: tuple[int, ...]
    reason: str
    from_dir: str | None = None
    to_dir: str | None = None

    @property
    def between_dirs(self) -> bool:
        return self.to_dir is not None

    def to_json(self) -> dict[str, Any]:
        out = {"topic": self.topic, "partition": self.partition, "source": self.source, "target": self.target,
               "sizeBytes": self.size, "replicas": list(self.replicas), "reason": self.reason}
        if self.to_dir is not None:
            out.update(fromDir=self.from_dir, toDir=self.to_dir)
        return out

    @classmethod
    def from_json(cls, d: Mapping[str, Any]) -> Move:
        return cls(str(d["topic"]), int(d["partition"]), int(d["source"]), int(d["target"]), int(d["sizeBytes"]),
                   tuple(int(r) for r in d["replicas"]), str(d.get("reason", "")), d.get("fromDir"), d.get("toDir"))


@dataclass
class Plan:
    """The moves and, in order, every decision with its reason."""

    moves: list[Move] = field(default_factory=list)
    decisions: list[str] = field(default_factory=list)
    #: broker → usage (0..1) before and after the plan
    usage_before: dict[int, float] = field(default_factory=dict)
    usage_after: dict[int, float] = field(default_factory=dict)

    @property
    def bytes_moved(self) -> int:
        return sum(m.size for m in self.moves)


def disks_from_reports(reports: Mapping[int, Mapping[str, Any]]) -> dict[int, BrokerDisk]:
    """Each reporting broker's hot-tier disk: its online log dirs' capacity and used bytes, summed."""
    out = {}
    for broker, report in reports.items():
        capacity = used = 0
        for d in report.get("logDirs", ()):
            if d.get("offline") or d.get("tier", "hot") != "hot":
                continue
            capacity += int(d.get("capacityBytes", 0))
            used += int(d.get("usedBytes", 0))
        if capacity > 0:
            out[broker] = BrokerDisk(broker, capacity, used)
    return out


def replica_sizes(reports: Mapping[int, Mapping[str, Any]]) -> dict[tuple[TopicPartitionTuple, int], int]:
    """(partition, broker) → that replica's bytes, from the reports."""
    return {((p["topic"], int(p["partition"])), broker): int(p.get("sizeBytes", 0))
            for broker, report in reports.items() for p in report.get("partitions", ())}


def plan_moves(
    assignment: Mapping[TopicPartitionTuple, Sequence[int]],
    disks: Mapping[int, BrokerDisk],
    sizes: Mapping[tuple[TopicPartitionTuple, int], int],
    threshold: float,
    *,
    racks: Mapping[int, str | None] | None = None,
    busy: frozenset[TopicPartitionTuple] | set[TopicPartitionTuple] = frozenset(),
    max_moves: int = 1000,
) -> Plan:
    """The plan (see the module docstring); *busy* are partitions already being reassigned."""
    plan = Plan()
    used = {b: d.used for b, d in disks.items()}
    capacity = {b: d.capacity for b, d in disks.items()}
    plan.usage_before = {b: round(disks[b].usage, 4) for b in sorted(disks)}
    current = {tp: list(replicas) for tp, replicas in assignment.items()}
    rack_of = dict(racks or {})
    use_racks = bool(disks) and all(rack_of.get(b) for b in disks)
    moved: set[TopicPartitionTuple] = set()

    def ratio(b: int) -> float:
        return used[b] / capacity[b] if capacity[b] > 0 else 1.0

    def size_of(tp: TopicPartitionTuple, b: int) -> int:
        if (tp, b) in sizes:
            return sizes[(tp, b)]
        known = [sizes[(tp, r)] for r in current[tp] if (tp, r) in sizes]
        return max(known, default=0)

    for source in sorted(disks, key=lambda b: (-ratio(b), b)):
        if ratio(source) <= threshold:
            continue
        plan.decisions.append(f"broker {source} is at {ratio(source):.1%} of its disk, above {threshold:.0%}")
        while ratio(source) > threshold and len(plan.moves) < max_moves:
            excess = used[source] - threshold * capacity[source]
            candidates = []
            for tp, replicas in current.items():
                if source not in replicas or tp in moved:
                    continue
                if tp in busy:
                    continue
                candidates.append((tp, size_of(tp, source), replicas.index(source) == 0))
            if not candidates:
                plan.decisions.append(f"broker {source}: no partition left to move")
                break
            enough = sorted((c for c in candidates if c[1] >= excess), key=lambda c: (c[1], c[2], c[0]))
            rest = sorted((c for c in candidates if c[1] < excess), key=lambda c: (-c[1], c[2], c[0]))
            chosen = None
            for tp, size, _leader in enough + rest:
                if size <= 0:
                    continue
                target = _best_target(tp, source, size, current[tp], used, capacity, threshold, rack_of, use_racks)
                if target is None:
                    plan.decisions.append(
                        f"{tp[0]}-{tp[1]} ({size} bytes) cannot leave broker {source}: no broker would stay under "
                        f"{threshold:.0%} with it{' in another rack' if use_racks else ''}")
                    moved.add(tp)  # not tried again
                    continue
                chosen = (tp, size, target)
                break
            if chosen is None:
                plan.decisions.append(f"broker {source} stays at {ratio(source):.1%}: nothing more fits elsewhere")
                break
            tp, size, target = chosen
            new_replicas = tuple(target if r == source else r for r in current[tp])
            reason = (f"broker {source} at {ratio(source):.1%} > {threshold:.0%}; broker {target} has the most free "
                      f"bytes ({capacity[target] - used[target]}) among those that can take {size} bytes")
            plan.moves.append(Move(tp[0], tp[1], source, target, size, new_replicas, reason))
            plan.decisions.append(f"move {tp[0]}-{tp[1]} ({size} bytes) from broker {source} to broker {target}")
            current[tp] = list(new_replicas)
            used[source] -= size
            used[target] += size
            moved.add(tp)
    plan.usage_after = {b: round(ratio(b), 4) for b in sorted(disks)}
    if not plan.moves and not plan.decisions:
        plan.decisions.append(f"every reporting broker is at or below {threshold:.0%}: nothing to do")
    return plan


def plan_dir_moves(reports: Mapping[int, Mapping[str, Any]], threshold: float,
                   busy: frozenset[TopicPartitionTuple] | set[TopicPartitionTuple] = frozenset()) -> Plan:
    """Moves between the log dirs of one broker: a dir above *threshold* sheds replicas to the broker's
    dir with the most free bytes that stays under it (the same choice rules as :func:`plan_moves`)."""
    plan = Plan()
    for broker in sorted(reports):
        report = reports[broker]
        dirs = {d["path"]: [int(d["capacityBytes"]), int(d["usedBytes"])] for d in report.get("logDirs", ())
                if d.get("tier", "hot") == "hot" and not d.get("offline") and int(d.get("capacityBytes", 0)) > 0}
        if len(dirs) < 2:
            continue
        where = {(p["topic"], int(p["partition"])): (p.get("logDir"), int(p.get("sizeBytes", 0)))
                 for p in report.get("partitions", ())}
        done: set[TopicPartitionTuple] = set()
        for path in sorted(dirs, key=lambda d: -dirs[d][1] / dirs[d][0]):
            cap, _ = dirs[path]
            if dirs[path][1] <= threshold * cap:
                continue
            plan.decisions.append(f"broker {broker}: log dir {path} is at {dirs[path][1] / cap:.1%}, above "
                                  f"{threshold:.0%}")
            while dirs[path][1] > threshold * cap:
                excess = dirs[path][1] - threshold * cap
                here = [(tp, size) for tp, (d, size) in where.items()
                        if d == path and tp not in done and tp not in busy and size > 0]
                if not here:
                    plan.decisions.append(f"broker {broker}: nothing more can leave {path}")
                    break
                enough = sorted((c for c in here if c[1] >= excess), key=lambda c: (c[1], c[0]))
                rest = sorted((c for c in here if c[1] < excess), key=lambda c: (-c[1], c[0]))
                chosen = None
                for tp, size in enough + rest:
                    room = [(dirs[o][0] - dirs[o][1], o) for o in dirs
                            if o != path and dirs[o][1] + size <= threshold * dirs[o][0]]
                    if room:
                        chosen = (tp, size, max(room)[1])
                        break
                    done.add(tp)
                if chosen is None:
                    plan.decisions.append(f"broker {broker}: {path} stays at {dirs[path][1] / cap:.1%}: no other "
                                          f"dir can take more")
                    break
                tp, size, to = chosen
                reason = f"log dir {path} of broker {broker} above {threshold:.0%}; {to} has the most free bytes"
                plan.moves.append(Move(tp[0], tp[1], broker, broker, size, (), reason, path, to))
                plan.decisions.append(f"move {tp[0]}-{tp[1]} ({size} bytes) on broker {broker} from {path} to {to}")
                dirs[path][1] -= size
                dirs[to][1] += size
                done.add(tp)
    return plan


def _best_target(tp: TopicPartitionTuple, source: int, size: int, replicas: Sequence[int], used: Mapping[int, int],
                 capacity: Mapping[int, int], threshold: float, rack_of: Mapping[int, str | None],
                 use_racks: bool) -> int | None:
    other_racks = {rack_of.get(r) for r in replicas if r != source}
    best = None
    for b in sorted(used):
        if b == source or b in replicas:
            continue
        if use_racks and rack_of.get(b) in other_racks:
            continue
        if (used[b] + size) > threshold * capacity[b]:
            continue
        free = capacity[b] - used[b]
        if best is None or free > best[0]:
            best = (free, b)
    return None if best is None else best[1]
